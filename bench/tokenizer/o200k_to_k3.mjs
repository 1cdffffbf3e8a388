// Writes the o200k_base ranks shipped by the npm package `tiktoken` as a k3
// tokenizer directory: tiktoken.model ("base64 rank" lines) and a
// tokenizer_config.json naming [BOS] and [EOS] in the Kimi layout (the 256
// special ids right after the last rank). Usage: node o200k_to_k3.mjs OUTDIR
import { createRequire } from "module";
import { mkdirSync, writeFileSync } from "fs";

const require = createRequire(process.cwd() + "/");
const model = require("tiktoken/encoders/o200k_base.json");
const out = process.argv[2];
mkdirSync(out, { recursive: true });

// bpe_ranks: "<name> <first rank> <base64> <base64> ..." lines.
const lines = [];
let next = 0;
for (const line of model.bpe_ranks.split("\n")) {
  if (!line) continue;
  const fields = line.split(" ");
  let rank = Number(fields[1]);
  if (rank !== next) throw new Error(`ranks jump from ${next} to ${rank}`);
  for (const b64 of fields.slice(2)) lines.push(`${b64} ${rank++}`);
  next = rank;
}
writeFileSync(`${out}/tiktoken.model`, lines.join("\n") + "\n");
const n = lines.length;
const added = { [n]: { content: "[BOS]", special: true }, [n + 1]: { content: "[EOS]", special: true } };
writeFileSync(`${out}/tokenizer_config.json`,
  JSON.stringify({ added_tokens_decoder: added, bos_token: "[BOS]", eos_token: "[EOS]" }, null, 1));
console.error(`o200k_base: ${n} ranks written to ${out}`);
