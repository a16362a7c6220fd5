// Runs the smoke module built with getrandom's custom backend: the module imports
// env.host_random, served here by crypto.getRandomValues, and exports smoke().
// Usage: node wasm-smoke.mjs MODULE.wasm
import { readFileSync } from "node:fs";
import { webcrypto } from "node:crypto";

const path = process.argv[2];
let memory;
let calls = 0;
const imports = {
  env: {
    host_random(ptr, len) {
      calls += 1;
      const bytes = new Uint8Array(memory.buffer, ptr, len);
      for (let i = 0; i < len; i += 65536) {
        webcrypto.getRandomValues(bytes.subarray(i, Math.min(len, i + 65536)));
      }
      return 0;
    },
  },
};
const { instance } = await WebAssembly.instantiate(readFileSync(path), imports);
memory = instance.exports.memory;
const failed = instance.exports.smoke();
// The first read seeds (one call); 3 MiB of output exceeds every reseed budget, so at least
// one reseed reads the source again. Two calls at least; a clock-driven reseed cannot add
// any (the module has no clock).
console.log(`wasm smoke: check result ${failed}, OS source read ${calls} times`);
if (failed !== 0) {
  console.error(`wasm smoke: check ${failed} failed`);
  process.exit(1);
}
if (calls < 2) {
  console.error(`wasm smoke: ${calls} reads of the OS source; a reseed should have read it again`);
  process.exit(1);
}
