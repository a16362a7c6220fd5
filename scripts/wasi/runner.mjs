// Cargo runner for wasm32-wasip1 (CARGO_TARGET_WASM32_WASIP1_RUNNER="node scripts/wasi/runner.mjs"):
// runs a WASI module under Node's node:wasi with its arguments and this environment, and
// exits with the module's status (a trap, such as a panic, is a failure).
// Usage: node scripts/wasi/runner.mjs MODULE.wasm [ARG...]
import { readFile } from "node:fs/promises";
import { WASI } from "node:wasi";
import { argv, env, exit } from "node:process";

const [path, ...args] = argv.slice(2);
const wasi = new WASI({ version: "preview1", args: [path, ...args], env, returnOnExit: true });
const module = await WebAssembly.compile(await readFile(path));
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
exit(wasi.start(instance));
