#!/usr/bin/env bash
# The conventions every tool keeps: "-" is stdin where a file is taken, pipes
# and FIFOs are read to the end, flag errors name the flag and the valid range
# in plain numbers and suggest the flag meant, positional arguments have
# names that say what they are, the benchmarks' --help is a normal --help, and
# a tokenizer of another model is refused next to the model.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
text='The capital of France is'

# k3-tokenize: stdin, --prompt-file -, a file, <(...), a FIFO: the same ids.
printf '%s' "$text" > "$work/prompt.txt"
ids=$(printf '%s' "$text" | "$BIN/k3-tokenize" --tok "$TINY")
differs "stdin gives ids" "" "$ids"
check "--prompt-file - = stdin" "$ids" "$(printf '%s' "$text" | "$BIN/k3-tokenize" --tok "$TINY" --prompt-file -)"
check "--prompt-file FILE = stdin" "$ids" "$("$BIN/k3-tokenize" --tok "$TINY" --prompt-file "$work/prompt.txt" < /dev/null)"
check "--prompt-file <(...) = stdin" "$ids" \
  "$("$BIN/k3-tokenize" --tok "$TINY" --prompt-file <(printf '%s' "$text") < /dev/null)"
mkfifo "$work/fifo"
(printf '%s' "$text" > "$work/fifo") &
check "--prompt-file FIFO = stdin" "$ids" "$("$BIN/k3-tokenize" --tok "$TINY" --prompt-file "$work/fifo" < /dev/null)"
wait
TOOL=k3-tokenize bad "--prompt-file missing" 4 "$work/none.txt: prompt file not found" \
  -- "$BIN/k3-tokenize" --tok "$TINY" --prompt-file "$work/none.txt"
TOOL=k3-tokenize bad "--prompt-file directory" 4 "is a directory" -- "$BIN/k3-tokenize" --tok "$TINY" --prompt-file "$work"

# k3-forward --ids: -, a file, <(...) give the same generated ids as stdin.
printf '%s\n' "$ids" > "$work/ids.txt"
gen=$("$BIN/k3-forward" "$TINY" --gen 4 < "$work/ids.txt" 2> /dev/null)
differs "k3-forward generates" "" "$gen"
check "--ids - = stdin" "$gen" "$("$BIN/k3-forward" "$TINY" --gen 4 --ids - < "$work/ids.txt" 2> /dev/null)"
check "--ids <(...) = stdin" "$gen" "$("$BIN/k3-forward" "$TINY" --gen 4 --ids <(cat "$work/ids.txt") < /dev/null 2> /dev/null)"
TOOL=k3-forward bad "--ids missing" 4 "$work/none: ids file not found" -- "$BIN/k3-forward" "$TINY" --ids "$work/none"

# k3-detok FILE and k3-detok - = stdin.
detok=$(printf '%s\n' "$ids" | "$BIN/k3-detok" --tok "$TINY")
check "detok gives the text back" "$text" "$detok"
check "k3-detok FILE = stdin" "$detok" "$("$BIN/k3-detok" --tok "$TINY" "$work/ids.txt" < /dev/null)"
check "k3-detok - = stdin" "$detok" "$("$BIN/k3-detok" --tok "$TINY" - < "$work/ids.txt")"
check "k3-detok <(...) = stdin" "$detok" "$("$BIN/k3-detok" --tok "$TINY" <(cat "$work/ids.txt") < /dev/null)"
TOOL=k3-detok bad "k3-detok missing file" 4 "$work/none: ids file not found" -- "$BIN/k3-detok" --tok "$TINY" "$work/none"

# Flag errors: the flag, the value and the range in plain numbers.
TOOL=k3-forward bad "--gen -3" 2 "--gen: -3 is out of range (valid: 0 or more)" -- "$BIN/k3-forward" "$TINY" --gen -3
TOOL=k3-forward bad "--io-threads 0" 2 "--io-threads: 0 is out of range (valid: from 1 to 256)" \
  -- "$BIN/k3-forward" "$TINY" --io-threads 0
TOOL=k3-forward bad "--gen 1.5" 2 "--gen: '1.5' is not a whole number" -- "$BIN/k3-forward" "$TINY" --gen 1.5
TOOL=k3-forward bad "--temp abc" 2 "--temp: 'abc' is not a number" -- "$BIN/k3-forward" "$TINY" --temp abc
TOOL=k3-doctor bad "k3-doctor range" 2 "0 is out of range (valid: from 0.05 to 120)" \
  -- "$BIN/k3-doctor" --probe-seconds 0
holds "no 300-digit limits anywhere" "! grep -q 1797693 '$work/err'"
# Typos: the nearest flag is suggested; nothing near, nothing suggested.
TOOL=k3-forward bad "--gem" 2 "unknown flag --gem; did you mean --gen?" -- "$BIN/k3-forward" "$TINY" --gem 3
TOOL=k3-forward bad "--trunk-gib" 2 "did you mean --trunk-gb?" -- "$BIN/k3-forward" "$TINY" --trunk-gib 3
TOOL=k3-tokenize bad "--prompt-fil=x" 2 "did you mean --prompt-file?" -- "$BIN/k3-tokenize" --tok "$TINY" --prompt-fil=x
TOOL=k3-forward bad "--temprature" 2 "unknown flag --temprature; did you mean --temp?" -- "$BIN/k3-forward" "$TINY" --temprature 0.5
TOOL=k3-chat bad "--temperature" 2 "unknown flag --temperature; did you mean --temp?" -- "$BIN/k3-chat" "$TINY" --temperature 0.5
TOOL=k3-fetch-verify bad "subcommand flag typo" 2 "did you mean --include?" \
  -- "$BIN/k3-fetch-verify" download a/b "$work/dl" --inclde x
TOOL=k3-forward bad "unrelated flag" 2 "unknown flag --colour (see" -- "$BIN/k3-forward" "$TINY" --colour

# k3-pack names its arguments.
help=$("$BIN/k3-pack" --help)
contains "k3-pack usage names MODEL_DIR TRUNK_DIR" "MODEL_DIR TRUNK_DIR" "$(grep '^Usage' <<< "$help")"
holds "k3-pack help has no FIRST/SECOND" "! grep -qE 'FIRST|SECOND' <<< \"\$help\""
TOOL=k3-pack bad "k3-pack without TRUNK_DIR" 2 "TRUNK_DIR is required" -- "$BIN/k3-pack" "$TINY"

# Benchmarks: --help on stdout, exit 0; a bad argument: usage on stderr, exit 2.
for b in k3-bench-kernels k3-bench-state k3-bench-index; do
  "$BIN/$b" --help > "$work/out" 2> "$work/err"
  check "$b --help exit" 0 "$?"
  contains "$b --help on stdout" "usage: $b" "$(cat "$work/out")"
  check "$b --help: nothing on stderr" 0 "$(stat -c %s "$work/err")"
  "$BIN/$b" --no-such-flag > "$work/out" 2> "$work/err"
  check "$b bad flag exit" 2 "$?"
  contains "$b bad flag: usage on stderr" "usage: $b" "$(cat "$work/err")"
done

# k3-bench-kernels --target: the target this CPU picks by itself (named by
# --version) is taken and named in the output; a name that is no target is
# refused with the list of those it could run (exit 2).
native=$("$BIN/k3-bench-kernels" --version | sed -n 's/^kernel target: //p')
out=$("$BIN/k3-bench-kernels" --target "$native" --quick --reps 1 --threads 1 --only no-such-matrix 2>&1)
check "k3-bench-kernels --target $native exit" 0 "$?"
contains "k3-bench-kernels --target $native runs it" "kernel target: $native" "$out"
"$BIN/k3-bench-kernels" --target NOPE > "$work/out" 2> "$work/err"
check "k3-bench-kernels --target NOPE exit" 2 "$?"
contains "k3-bench-kernels --target NOPE: named, with the choices" "--target NOPE: not a target this build has and this CPU runs ($native" "$(sed 's/, .*//' "$work/err")"
# The next best of those (every x86-64 CPU runs at least two, SCALAR among
# them): its code runs instead of the native one.
other=$(sed -n 's/.*(\([^)]*\)).*/\1/p' "$work/err" | cut -d, -f2 | tr -d ' ')
holds "k3-bench-kernels names a second target" "[ -n '$other' ] && [ '$other' != '$native' ]"
out=$("$BIN/k3-bench-kernels" --target "$other" --quick --reps 1 --threads 1 --only no-such-matrix 2>&1)
contains "k3-bench-kernels --target $other runs it" "kernel target: $other" "$out"

# A tokenizer that is not the model's: refused by k3-forward --tok and
# k3-tokenize --model; the model's own is accepted.
check "k3-forward --tok (own tokenizer)" "$gen" "$("$BIN/k3-forward" "$TINY" --tok "$TINY" --gen 4 < "$work/ids.txt" 2> /dev/null)"
check "k3-chat --tok (own tokenizer) exit" 0 "$(printf 'hi\n' | "$BIN/k3-chat" "$TINY" --tok "$TINY" --max-tokens 2 > /dev/null 2>&1; echo $?)"
check "k3-tokenize --model (own model)" "$ids" "$(printf '%s' "$text" | "$BIN/k3-tokenize" --tok "$TINY" --model "$TINY")"
mkdir -p "$work/small" "$work/swapped"
# A smaller vocabulary that is a valid tokenizer of its own: 8000 ranks, the
# same 256 specials after them.
head -n 8000 "$TINY/tiktoken.model" > "$work/small/tiktoken.model"
python3 - "$TINY/tokenizer_config.json" "$work/small/tokenizer_config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["added_tokens_decoder"] = {str(int(k) - 192): v for k, v in c["added_tokens_decoder"].items()}
json.dump(c, open(sys.argv[2], "w"))
PY
TOOL=k3-forward bad "--tok of another vocabulary" 3 "its vocabulary has 8256 ids (8000 ranks + 256 specials), the model's config says vocab_size 8448" \
  -- "$BIN/k3-forward" "$TINY" --tok "$work/small" --gen 1 --ids "$work/ids.txt"
TOOL=k3-chat bad "k3-chat --tok of another vocabulary" 3 "its vocabulary has 8256 ids (8000 ranks + 256 specials), the model's config says vocab_size 8448" \
  -- "$BIN/k3-chat" "$TINY" --tok "$work/small" < /dev/null
TOOL=k3-tokenize bad "--model of another vocabulary" 3 "does not belong to the model in $TINY" \
  -- "$BIN/k3-tokenize" --tok "$work/small" --model "$TINY" --text hi
cp "$TINY/tiktoken.model" "$work/swapped/"
python3 - "$TINY/tokenizer_config.json" "$work/swapped/tokenizer_config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
d = c["added_tokens_decoder"]
a, b = d["8192"]["content"], d["8193"]["content"]
d["8192"]["content"], d["8193"]["content"] = b, a
json.dump(c, open(sys.argv[2], "w"))
PY
TOOL=k3-forward bad "--tok with other special tokens" 3 "does not belong to the model" \
  -- "$BIN/k3-forward" "$TINY" --tok "$work/swapped" --gen 1 --ids "$work/ids.txt"

finish conventions_test
