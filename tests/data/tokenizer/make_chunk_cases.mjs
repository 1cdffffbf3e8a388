// Writes chunk_cases.jsonl: vectors for the cuts Kimi's encode makes before
// the regex (400,000-code-point chunks, 25,000-long same-class runs, the run
// counter restarting at each chunk, Python str.isspace as the class), made by
// the tiktoken core with the k3-tiny vocabulary. Each case's text is
// described by its generator (parts repeated and concatenated), so the file
// stays small; the ids are pinned by count, sha256, head, tail and a window
// around every piece boundary.
//
// Usage (needs the npm package tiktoken@1.0.22 resolvable from the current
// directory; make_chunk_cases.sh sets that up):
//   node make_chunk_cases.mjs K3_TINY_DIR > chunk_cases.jsonl
import { createRequire } from "module";
import { createHash } from "crypto";
import { readFileSync } from "fs";
import { KIMI_PATTERN, kimiPieces, CHUNK_CODE_POINTS as C, MAX_RUN as R } from "../../../bench/tokenizer/kimi_reference.mjs";

const require = createRequire(process.cwd() + "/");
const { Tiktoken } = require("tiktoken/lite");

const tiny = process.argv[2];
// tiktoken.model is "base64 rank" lines with ranks 0..n-1 in order; the core
// takes them as one "name first-rank base64..." line.
const b64 = [];
for (const line of readFileSync(`${tiny}/tiktoken.model`, "utf8").split("\n")) {
  if (!line) continue;
  const [tok, rank] = line.split(" ");
  if (Number(rank) !== b64.length) throw new Error(`rank ${rank} out of order`);
  b64.push(tok);
}
const n = b64.length;
const named = JSON.parse(readFileSync(`${tiny}/tokenizer_config.json`, "utf8")).added_tokens_decoder;
const specials = {};
for (let id = n; id < n + 256; ++id) specials[named[id] ? named[id].content : `<|reserved_token_${id}|>`] = id;
const enc = new Tiktoken(`! 0 ${b64.join(" ")}`, specials, KIMI_PATTERN);

// Filler that never makes a run longer than 1: "a " repeated.
const fill = (cps) => {
  if (cps % 2) throw new Error("odd filler");
  return { s: "a ", n: cps / 2 };
};
const CASES = [
  // Runs around the first chunk boundary. A 30,001-long run crossing it is
  // cut by no rule (15,000 + 15,001); without the restart it is cut at 25,001.
  ["chunk/run_30001_crosses_boundary", "run counter restarts at a chunk",
   [fill(C - 15000), { s: "x", n: 30001 }, { s: " end", n: 1 }]],
  ["chunk/run_50000_split_evenly_by_boundary", "run counter restarts at a chunk; a run of exactly 25,000 is not cut",
   [fill(C - R), { s: "x", n: 2 * R }, { s: " end", n: 1 }]],
  ["chunk/run_25001_ends_at_boundary", "a run of 25,001 ending exactly at the boundary is cut at its last code point",
   [fill(C - R - 2), { s: " ", n: 1 }, { s: "y", n: 1 }, { s: "x", n: R }, { s: " next", n: 1 }]],
  ["chunk/run_25001_ends_before_boundary", "a run ending one code point before the boundary",
   [fill(C - R - 2), { s: "x", n: R + 1 }, { s: " ", n: 1 }, { s: "x", n: R + 1 }]],
  ["chunk/run_25001_ends_after_boundary", "a run ending one code point after the boundary is not cut",
   [fill(C - R), { s: "x", n: R + 1 }, { s: " tail", n: 1 }]],
  ["chunk/spaces_30001_cross_boundary", "whitespace runs restart at a chunk too",
   [fill(C - 15000), { s: "b", n: 1 }, { s: " ", n: 30001 }, { s: "end", n: 1 }]],
  ["chunk/second_boundary_run_crosses", "every chunk restarts the counter, not only the first",
   [fill(2 * C - 12000), { s: "x", n: 26000 }, { s: " end", n: 1 }]],
  ["chunk/word_cut_by_boundary", "the chunk is 400,000 code points: the boundary falls inside a word",
   [fill(C - 4), { s: "abcdefgh", n: 1 }, { s: " ", n: 1 }]],
  ["chunk/astral_counts_one_code_point", "an astral character is one code point (not two UTF-16 units, not four bytes)",
   [{ s: "\u{1F600} ", n: (C - 4) / 2 }, { s: "abcdefgh", n: 1 }, { s: " ", n: 1 }]],
  ["chunk/special_straddles_boundary", "a special token cut by the chunk boundary is plain text",
   [fill(C - 2), { s: "[EOS]", n: 1 }, { s: " z", n: 1 }]],
  ["chunk/special_ends_at_boundary", "a special token ending exactly at the boundary is recognised",
   [fill(C - 6), { s: " ", n: 1 }, { s: "[EOS]", n: 1 }, { s: " z", n: 1 }]],
  // Runs within one chunk.
  ["run/class_change_restarts_run", "a change between whitespace and non-whitespace restarts the run",
   [{ s: "x", n: 20000 }, { s: " ", n: 1 }, { s: "x", n: 20000 }, { s: "\t", n: 1 }, { s: "x", n: 20000 }]],
  ["run/cut_piece_counts_its_first", "after a cut the new piece's first code point counts: a 50,001 run is cut twice",
   [{ s: "x", n: 2 * R + 1 }]],
  // A whitespace run of 24,996 then a word: were these characters not
  // whitespace, the one run would be cut inside the word (its ids change;
  // a cut inside a run of unmerged bytes would not show).
  ["run/info_separators_are_space", "U+001C..U+001F are whitespace to the run rule (not to the regex)",
   [{ s: "\u001c\u001d\u001e\u001f", n: 6249 }, { s: "abcdefghij", n: 1 }]],
  ["run/nbsp_is_space", "U+00A0 (a space separator, not bidi whitespace) is whitespace to the run rule",
   [{ s: "\u00a0", n: 24996 }, { s: "abcdefghij", n: 1 }]],
  ["run/zwsp_is_not_space", "U+200B is not whitespace: it joins a non-whitespace run",
   [{ s: "w\u200b", n: 12501 }]],
];

const sha256 = (buf) => createHash("sha256").update(buf).digest("hex");
const idsSha = (ids) => sha256(Buffer.from(new Uint32Array(ids).buffer));
const W = 8;  // ids each side of a piece boundary

for (const [name, rule, parts] of CASES) {
  const text = parts.map((p) => p.s.repeat(p.n)).join("");
  const ids = [];
  const starts = [];
  const piecesCp = [];
  for (const piece of kimiPieces(text)) {
    starts.push(ids.length);
    piecesCp.push([...piece].length);
    for (const id of enc.encode(piece, "all")) ids.push(id);
  }
  const windows = starts.slice(1).map((at) => ({ at: Math.max(0, at - W), ids: ids.slice(Math.max(0, at - W), at + W) }));
  const bytes = Buffer.from(text, "utf8");
  console.log(JSON.stringify({
    name, rule, generator: { type: "concat_repeat", parts }, text_sha256: sha256(bytes),
    n_codepoints: [...text].length, n_utf8_bytes: bytes.length, n_ids: ids.length, ids_sha256: idsSha(ids),
    ids_head: ids.slice(0, 16), ids_tail: ids.slice(-16), kimi_pieces_cp: piecesCp, windows,
  }));
}
enc.free();
