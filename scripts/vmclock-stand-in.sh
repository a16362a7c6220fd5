#!/usr/bin/env bash
# Writes a stand-in for the VMClock device page (one 4 KiB page with the layout of the
# kernel's include/uapi/linux/vmclock-abi.h: magic "VCLK", size 4096, version 1, seq_count 0,
# flags with VMCLOCK_FLAG_VM_GEN_COUNTER_PRESENT, vm_generation_counter 42) to the file
# given, normally on tmpfs. Builds with the test hooks (`--cfg fkrng_test_hooks`, from
# `--config .cargo/test-hooks.toml`) map it in place of /dev/vmclock0 when
# FKRNG_TEST_VMCLOCK_PATH names it (see .ci/run).
#
# Usage: scripts/vmclock-stand-in.sh FILE
set -euo pipefail
out=${1:?usage: scripts/vmclock-stand-in.sh FILE}
{
    printf 'VCLK\x00\x10\x00\x00\x01\x00\x00\x00' # magic, size, version, counter_id, time_type
    head -c 12 /dev/zero                           # seq_count, disruption_marker
    printf '\x00\x01\x00\x00\x00\x00\x00\x00'     # flags: bit 8
    head -c 72 /dev/zero                           # clock fields, offsets 32 to 103
    printf '\x2a\x00\x00\x00\x00\x00\x00\x00'     # vm_generation_counter at 104
} >"$out"
truncate -s 4096 "$out"
