#!/usr/bin/env bash
# k3-tokenize and k3-detok driven through pipes: stdin/stdout, flags, exit
# codes and error messages, and k3-detok's streaming (text appears while its
# stdin is still open; a split UTF-8 character waits for its last byte).
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
TOK="$BIN/k3-tokenize"
DET="$BIN/k3-detok"


# --- k3-tokenize ---------------------------------------------------------
# Expected ids come from the reference vectors (tests/data/tokenizer/cases.jsonl).
out=$(printf 'Hello world' | "$TOK" --tok "$TINY"); check "stdin ids one per line" $'39\n6053\n2375' "$out"
out=$(printf 'Hello world' | "$TOK" --tok "$TINY" --format=line); check "--format=line" "39 6053 2375" "$out"
out=$("$TOK" --tok "$TINY" --text 'Hello world' --format=line); check "--text" "39 6053 2375" "$out"
printf '[BOS]Hello world[EOS]' > "$work/prompt.txt"
out=$("$TOK" --tok "$TINY" --prompt-file "$work/prompt.txt" --format=line); check "--prompt-file with specials" "8192 39 6053 2375 8193" "$out"
out=$("$TOK" --tok "$TINY" --text '[EOS]' --no-specials --format=line); check "--no-specials" "58 36 3360 60" "$out"
out=$("$TOK" --tok "$TINY" --text 'Hello world' --bos --format=line); check "--bos" "8192 39 6053 2375" "$out"
out=$(printf 'Hello world' | "$TOK" --tok "$TINY" --count); check "--count" "3" "$out"
out=$(printf '' | "$TOK" --tok "$TINY"); check "empty input -> no ids" "" "$out"
out=$(printf '' | "$TOK" --tok "$TINY" --count); check "empty input count" "0" "$out"

# Invalid UTF-8: exit 4, the byte offset, nothing on stdout.
printf 'ab\xff\xfecd' > "$work/bad.txt"
"$TOK" --tok "$TINY" < "$work/bad.txt" > "$work/out" 2> "$work/err"; rc=$?
check "invalid utf-8 exit" 4 "$rc"
check "invalid utf-8 stdout empty" 0 "$(stat -c %s "$work/out")"
contains "invalid utf-8 names offset" "byte offset 2" "$(cat "$work/err")"
check "one-line error" 1 "$(wc -l < "$work/err")"
contains "error prefix" "k3-tokenize: " "$(cat "$work/err")"
printf 'ok \xe4\xb8' | "$TOK" --tok "$TINY" > /dev/null 2> "$work/err"; rc=$?
check "truncated utf-8 at end exit" 4 "$rc"
contains "truncated utf-8 offset" "byte offset 3" "$(cat "$work/err")"
# --lossy: each maximal invalid subpart becomes one U+FFFD.
out=$("$TOK" --tok "$TINY" --lossy < "$work/bad.txt" | "$DET" --tok "$TINY"); check "--lossy round trip" $'ab\xef\xbf\xbd\xef\xbf\xbdcd' "$out"

# Errors: missing tokenizer dir (3), usage (2), missing prompt file (4).
printf 'x' | "$TOK" --tok "$work/nope" > "$work/out" 2> "$work/err"; rc=$?
check "missing --tok dir exit" 3 "$rc"
contains "missing --tok dir message" "$work/nope" "$(cat "$work/err")"
check "missing --tok dir stdout empty" 0 "$(stat -c %s "$work/out")"
mkdir -p "$work/halftok" && cp "$TINY/tiktoken.model" "$work/halftok/"
printf 'x' | "$TOK" --tok "$work/halftok" > /dev/null 2> "$work/err"; rc=$?
check "missing tokenizer_config.json exit" 3 "$rc"
contains "missing config named" "tokenizer_config.json" "$(cat "$work/err")"
printf 'x' | "$TOK" > /dev/null 2> "$work/err"; rc=$?
check "no --tok is a usage error" 2 "$rc"
"$TOK" --tok "$TINY" --format=columns --text x > /dev/null 2>&1; rc=$?
check "bad --format is a usage error" 2 "$rc"
"$TOK" --tok "$TINY" --text x --prompt-file "$work/prompt.txt" > /dev/null 2>&1; rc=$?
check "--text with --prompt-file is a usage error" 2 "$rc"
"$TOK" --tok "$TINY" --prompt-file "$work/absent.txt" > /dev/null 2> "$work/err"; rc=$?
check "missing prompt file exit" 4 "$rc"
"$TOK" --help > "$work/help"; rc=$?
check "--help exit" 0 "$rc"
contains "--help lists exit codes" "Exit codes" "$(cat "$work/help")"
# A malformed vocabulary names its line.
mkdir -p "$work/badvocab" && cp "$TINY/tokenizer_config.json" "$work/badvocab/"
{ head -n 99 "$TINY/tiktoken.model"; echo "not base64!"; tail -n +101 "$TINY/tiktoken.model"; } > "$work/badvocab/tiktoken.model"
printf 'x' | "$TOK" --tok "$work/badvocab" > /dev/null 2> "$work/err"; rc=$?
check "malformed tiktoken.model exit" 3 "$rc"
contains "malformed line named" "line 100" "$(cat "$work/err")"

# --- round trips through both tools --------------------------------------
text=$'Grüße, 世界! 🌍🏳️‍🌈 naïve café\r\n\tit\'s [EOS] <|end_of_msg|> x   \n\n'
out=$(printf '%s' "$text" | "$TOK" --tok "$TINY" | "$DET" --tok "$TINY"; printf '.')
check "multilingual round trip" "$text." "$out"
out=$(printf '%s' "$text" | "$TOK" --tok "$TINY" --format=line | "$DET" --tok "$TINY"; printf '.')
check "round trip, space-separated ids" "$text." "$out"

# --- k3-detok ------------------------------------------------------------
out=$(printf '39 6053\n2375' | "$DET" --tok "$TINY"); check "mixed separators, no final newline" "Hello world" "$out"
out=$(printf '8192 39 6053 8193\n' | "$DET" --tok "$TINY"); check "specials print as names" "[BOS]Hello[EOS]" "$out"
out=$(printf '8192 39 6053 8193\n' | "$DET" --tok "$TINY" --skip-special); check "--skip-special" "Hello" "$out"
out=$(printf '160 8192 116 255\n' | "$DET" --tok "$TINY"); check "replacement per maximal subpart" $'\xef\xbf\xbd[BOS]\xef\xbf\xbd\xef\xbf\xbd' "$out"
out=$(printf '160 116\n' | "$DET" --tok "$TINY" --raw | od -An -tx1 | tr -d ' \n'); check "--raw bytes unchanged" "e4b8" "$out"
out=$(printf '160 116\n' | "$DET" --tok "$TINY" | od -An -tx1 | tr -d ' \n'); check "truncated character at end" "efbfbd" "$out"
printf '39 6053 99999 2375\n' | "$DET" --tok "$TINY" > "$work/out" 2> "$work/err"; rc=$?
check "out-of-range id exit" 4 "$rc"
contains "out-of-range id named with position" "stdin: token 3 is id 99999, outside the vocabulary" "$(cat "$work/err")"
check "text before the bad id was written" "Hello" "$(cat "$work/out")"
printf '39 x7\n' | "$DET" --tok "$TINY" > /dev/null 2> "$work/err"; rc=$?
check "non-numeric id exit" 4 "$rc"
contains "non-numeric id named" "stdin: token 2 'x7' is not a token id" "$(cat "$work/err")"
printf '39\n' | "$DET" --tok "$work/nope" > /dev/null 2> "$work/err"; rc=$?
check "detok missing --tok dir exit" 3 "$rc"
"$DET" --tok "$TINY" --bogus < /dev/null > /dev/null 2>&1; rc=$?
check "detok unknown flag exit" 2 "$rc"

# Streaming: ids written one at a time into an open pipe come out at once.
coproc DT { LC_ALL=C "$DET" --tok "$TINY"; }
dt_pid=$DT_PID  # bash unsets DT_PID as soon as the coprocess ends
printf '39\n' >&"${DT[1]}"
LC_ALL=C IFS= read -r -t 10 -N 1 got <&"${DT[0]}"; check "streams first token" "H" "${got:-}"
printf '6053\n' >&"${DT[1]}"
LC_ALL=C IFS= read -r -t 10 -N 4 got <&"${DT[0]}"; check "streams second token" "ello" "${got:-}"
# 世 = ids 624 244: the first holds an incomplete sequence, nothing may appear.
printf '624\n' >&"${DT[1]}"
got=""; LC_ALL=C IFS= read -r -t 0.5 -N 1 got <&"${DT[0]}"; check "holds back a partial character" "" "$got"
printf '244\n' >&"${DT[1]}"
LC_ALL=C IFS= read -r -t 10 -N 3 got <&"${DT[0]}"; check "completes the character" "世" "${got:-}"
exec {DT[1]}>&-
wait "$dt_pid"; rc=$?
check "streaming detok exit" 0 "$rc"

finish "k3-tokenize/k3-detok"
