// The reference: the tiktoken core (npm `tiktoken`, openai/tiktoken's Rust
// CoreBPE in WASM) driven like Kimi's TikTokenTokenizer.encode: 400,000-code-
// point chunks, 25,000-run cuts (Python str.isspace), all specials allowed,
// the Kimi pattern. Only the CoreBPE encode calls are timed (the JS chunking
// is not), which favours tiktoken.
// Usage: node tiktoken_encode.mjs TEXT OUT_IDS   (prints JSON timings)
import { createRequire } from "module";
import { readFileSync, writeFileSync } from "fs";

const require = createRequire(process.cwd() + "/");
const { Tiktoken } = require("tiktoken/lite");
const model = require("tiktoken/encoders/o200k_base.json");

const KIMI_PATTERN = [
  "[\\p{Han}]+",
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
  "\\p{N}{1,3}",
  " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*",
  "\\s*[\\r\\n]+",
  "\\s+(?!\\S)",
  "\\s+",
].join("|");

const isPySpace = (c) =>
  (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c === 0x85 || c === 0xa0 || c === 0x1680 ||
  (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000;

// Kimi's pieces: 400k-code-point chunks, each cut at 25,000-long runs.
function* kimiPieces(text) {
  let pieceStart = 0, chunkCp = 0, run = 0, runIsSpace = false;
  for (let i = 0; i < text.length; ) {
    const c = text.codePointAt(i);
    const len = c > 0xffff ? 2 : 1;
    if (chunkCp === 400000) {
      yield text.slice(pieceStart, i);
      pieceStart = i;
      chunkCp = 0;
    }
    const space = isPySpace(c);
    if (chunkCp === 0 || space !== runIsSpace) {
      runIsSpace = space;
      run = 1;
    } else if (++run > 25000) {
      yield text.slice(pieceStart, i);
      pieceStart = i;
      run = 1;
    }
    ++chunkCp;
    i += len;
  }
  if (pieceStart < text.length) yield text.slice(pieceStart);
}

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
