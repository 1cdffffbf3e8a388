#!/usr/bin/env bash
# Limits through the real tools: endless input without whitespace, files
# that are links to /dev/zero or FIFOs, absurd config sizes, thread counts,
# contexts and budgets are refused promptly (every command runs under a
# timeout) with one line naming the thing and the documented exit code.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
T=20  # seconds: every refusal here takes well under one
IDS="$TINY/prompt_ids.txt"

# A model directory of links to the fixture, where one file can be replaced.
model() {  # model NAME: $work/NAME linking every fixture file
  rm -rf "$work/$1"
  mkdir "$work/$1"
  local f
  for f in "$TINY"/*; do ln -s "$f" "$work/$1/"; done
}

# 1. Input without whitespace.
TOOL=k3-detok
bad "detok < /dev/zero" 4 "is not a token id" -- timeout $T "$BIN/k3-detok" --tok "$TINY" < /dev/zero
bad "detok: long digit run" 4 "is not a token id" -- timeout $T \
  bash -c "yes 1 | tr -d '\n' | head -c 100000 | '$BIN/k3-detok' --tok '$TINY'"
TOOL=k3-forward
bad "forward < /dev/zero" 4 "stdin holds more than 256 MiB" -- timeout $T "$BIN/k3-forward" "$TINY" < /dev/zero
bad "forward --ids /dev/zero" 4 "/dev/zero: is not a regular file" -- timeout $T "$BIN/k3-forward" "$TINY" --ids /dev/zero
mkfifo "$work/fifo"
# A FIFO is a pipe: read to its end (the convention for - and <(...)).
(printf '1 2 3' > "$work/fifo" &)
timeout $T "$BIN/k3-forward" "$TINY" --ids "$work/fifo" > /dev/null 2>&1
check "forward --ids FIFO with a writer is read" 0 $?
(printf '1 2 3\n4 5\n' > "$work/fifo" &)
timeout $T "$BIN/k3-forward" "$TINY" --batch "$work/fifo" --gen 1 > "$work/batch.out" 2>/dev/null
check "forward --batch FIFO with a writer is read" 0 $?
check "forward --batch FIFO: one line per prompt" 2 "$(wc -l < "$work/batch.out")"
check "forward --batch - reads stdin" "$(cat "$work/batch.out")" \
  "$(printf '1 2 3\n4 5\n' | timeout $T "$BIN/k3-forward" "$TINY" --batch - --gen 1 2>/dev/null)"
bad "forward --batch /dev/zero" 4 "/dev/zero: is not a regular file" -- \
  timeout $T "$BIN/k3-forward" "$TINY" --batch /dev/zero --gen 1
bad "forward --batch directory" 4 "is a directory" -- timeout $T "$BIN/k3-forward" "$TINY" --batch "$work" --gen 1
TOOL=k3-tokenize
bad "tokenize --prompt-file /dev/zero" 4 "/dev/zero: is not a regular file" -- \
  timeout $T "$BIN/k3-tokenize" --tok "$TINY" --prompt-file /dev/zero
TOOL=k3-forward

# 2. Model files that are links to /dev/zero, or FIFOs.
for f in config.json generation_config.json model.safetensors.index.json model-00002-of-00005.safetensors; do
  model zeroed
  ln -sf /dev/zero "$work/zeroed/$f"
  bad "$f -> /dev/zero" 3 "$work/zeroed/$f: is not a regular file" -- \
    timeout $T "$BIN/k3-forward" "$work/zeroed" --ids "$IDS" --gen 1
  model fifo
  rm "$work/fifo/$f"
  mkfifo "$work/fifo/$f"
  bad "$f FIFO" 3 "$work/fifo/$f: is not a regular file" -- timeout $T "$BIN/k3-forward" "$work/fifo" --ids "$IDS" --gen 1
done
TOOL=k3-pack
model fifo
rm "$work/fifo/model-00003-of-00005.safetensors"
mkfifo "$work/fifo/model-00003-of-00005.safetensors"
bad "pack: FIFO shard" 3 "is not a regular file" -- timeout $T "$BIN/k3-pack" "$work/fifo" "$work/trunk"
TOOL=k3-forward

# 3. Absurd config sizes are refused before anything of that size is built.
for kv in num_hidden_layers=1000000000 hidden_size=100000000 vocab_size=2000000000 num_experts=10000000 \
          num_attention_heads=100000 kv_lora_rank=1000000000; do
  model absurd
  rm "$work/absurd/config.json"
  python3 - "$TINY/config.json" "$work/absurd/config.json" "${kv%%=*}" "${kv#*=}" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
(c.get("text_config") or c)[sys.argv[3]] = int(sys.argv[4])
json.dump(c, open(sys.argv[2], "w"))
PY
  bad "config ${kv%%=*} ${kv#*=}" 3 "${kv%%=*}' is ${kv#*=}, more than" -- \
    timeout $T "$BIN/k3-forward" "$work/absurd" --ids "$IDS" --gen 1
done

# 4. Thread counts, contexts and budgets: usage errors naming the range.
bad "--io-threads 100000" 2 "is out of range (valid: from 1 to 256)" -- "$BIN/k3-forward" "$TINY" --io-threads 100000 --preset laptop
bad "--io-threads 0" 2 "is out of range (valid: from 1 to 256)" -- "$BIN/k3-forward" "$TINY" --io-threads 0 --preset laptop
bad "--threads 1000000" 2 "is out of range (valid: from 0 to 1024)" -- "$BIN/k3-forward" "$TINY" --threads 1000000
bad "--threads 10000" 2 "is out of range (valid: from 0 to 1024)" -- "$BIN/k3-forward" "$TINY" --threads 10000
bad "--threads -1" 2 "--threads" -- "$BIN/k3-forward" "$TINY" --threads -1
bad "--ctx 2^63" 2 "is out of range (valid: from 0 to 1099511627776)" -- "$BIN/k3-forward" "$TINY" --ctx 9223372036854775807 --preset laptop --plan
bad "--ctx -5" 2 "--ctx" -- "$BIN/k3-forward" "$TINY" --ctx -5 --preset laptop --plan
for v in 1e300 nan inf -inf -1 1e7; do
  bad "--cache-gb $v" 2 "(valid: from 0 to 1000000)" -- "$BIN/k3-forward" "$TINY" --cache-gb "$v" --plan
  bad "--trunk-gb $v" 2 "(valid: from 0 to 1000000)" -- "$BIN/k3-forward" "$TINY" --trunk-gb "$v" --plan
done
# The largest context accepted is planned with exact arithmetic: refused for
# memory (exit 6), not wrapped into a small forecast.
"$BIN/k3-pack" "$TINY" "$work/trunk" 2> /dev/null
"$BIN/k3-forward" "$TINY" --trunk "$work/trunk" --ctx 1099511627776 --preset laptop --plan > /dev/null 2> "$work/err"
check "--ctx 2^40 is planned and refused" 6 $?
bad "--ctx 2^40+1" 2 "--ctx: 1099511627777 is out of range (valid: from 0 to 1099511627776)" -- "$BIN/k3-forward" "$TINY" --ctx 1099511627777 --preset laptop --plan
TOOL=k3-fetch-verify
bad "--jobs 100000" 2 "--jobs: 100000 is out of range (valid: from 1 to 64)" -- "$BIN/k3-fetch-verify" download "$work/dl" --jobs 100000
bad "verify --threads 1000000" 2 "is out of range (valid: from 0 to 1024)" -- "$BIN/k3-fetch-verify" verify "$work" --threads 1000000
bad "--retry-wait nan" 2 "--retry-wait: 'nan' is not a number (valid: from 0 to 60)" -- "$BIN/k3-fetch-verify" download "$work/dl" --retry-wait nan
finish k3_limits_test
