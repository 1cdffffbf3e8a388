// The Kimi pipeline around the tiktoken core, shared by the tokenizer
// benchmark (tiktoken_encode.mjs) and the generator of the chunk-rule vectors
// (tests/data/tokenizer/make_chunk_cases.mjs): the pre-split pattern, Python's
// str.isspace, and the 400,000-code-point chunks each cut at 25,000-long
// same-class runs, as Kimi's TikTokenTokenizer.encode makes them.

export const KIMI_PATTERN = [
  "[\\p{Han}]+",
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
  "\\p{N}{1,3}",
  " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*",
  "\\s*[\\r\\n]+",
  "\\s+(?!\\S)",
  "\\s+",
].join("|");

export const CHUNK_CODE_POINTS = 400000;
export const MAX_RUN = 25000;

export const isPySpace = (c) =>
  (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c === 0x85 || c === 0xa0 || c === 0x1680 ||
  (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000;

// Kimi's pieces: 400k-code-point chunks, each cut at 25,000-long runs; the
// run counter restarts at every chunk.
export function* kimiPieces(text) {
  let pieceStart = 0, chunkCp = 0, run = 0, runIsSpace = false;
  for (let i = 0; i < text.length; ) {
    const c = text.codePointAt(i);
    const len = c > 0xffff ? 2 : 1;
    if (chunkCp === CHUNK_CODE_POINTS) {
      yield text.slice(pieceStart, i);
      pieceStart = i;
      chunkCp = 0;
    }
    const space = isPySpace(c);
    if (chunkCp === 0 || space !== runIsSpace) {
      runIsSpace = space;
      run = 1;
    } else if (++run > MAX_RUN) {
      yield text.slice(pieceStart, i);
      pieceStart = i;
      run = 1;
    }
    ++chunkCp;
    i += len;
  }
  if (pieceStart < text.length) yield text.slice(pieceStart);
}
