// The reference: the tiktoken core (npm `tiktoken`, openai/tiktoken's Rust
// CoreBPE in WASM) driven like Kimi's TikTokenTokenizer.encode: 400,000-code-
// point chunks, 25,000-run cuts (Python str.isspace), all specials allowed,
// the Kimi pattern. Only the CoreBPE encode calls are timed (the JS chunking
// is not), which favours tiktoken.
// Usage: node tiktoken_encode.mjs TEXT OUT_IDS   (prints JSON timings)
import { createRequire } from "module";
import { readFileSync, writeFileSync } from "fs";
import { KIMI_PATTERN, kimiPieces } from "./kimi_reference.mjs";

const require = createRequire(process.cwd() + "/");
const { Tiktoken } = require("tiktoken/lite");
const model = require("tiktoken/encoders/o200k_base.json");

const [textPath, outPath] = process.argv.slice(2);
const n = model.bpe_ranks.split("\n")[0].split(" ").length - 2;
const specials = {};
for (let i = 0; i < 256; ++i) specials[i === 0 ? "[BOS]" : i === 1 ? "[EOS]" : `<|reserved_token_${n + i}|>`] = n + i;

let t = process.hrtime.bigint();
const enc = new Tiktoken(model.bpe_ranks, specials, KIMI_PATTERN);
const loadMs = Number(process.hrtime.bigint() - t) / 1e6;

const text = readFileSync(textPath, "utf8");
const pieces = [...kimiPieces(text)];
const parts = [];
let total = 0;
t = process.hrtime.bigint();
const cpu0 = process.cpuUsage();
for (const p of pieces) {
  const ids = enc.encode(p, "all");
  parts.push(ids);
  total += ids.length;
}
const encodeS = Number(process.hrtime.bigint() - t) / 1e9;
const cpu = process.cpuUsage(cpu0);  // whole process: includes node's helper threads, if busy
const encodeCpuS = (cpu.user + cpu.system) / 1e6;
enc.free();

const all = new Uint32Array(total);
let at = 0;
for (const p of parts) {
  all.set(p, at);
  at += p.length;
}
writeFileSync(outPath, all.join("\n") + "\n");
console.log(JSON.stringify({ load_ms: loadMs, encode_s: encodeS, encode_cpu_s: encodeCpuS, tokens: total,
                              bytes: Buffer.byteLength(text) }));
