#!/usr/bin/env bash
# A k3-pack killed midway (SIGKILL: no destructor runs) leaves a
# trunk.bin.tmp.<random> as large as a trunk that no later run used to
# remove. The next k3-pack into the same directory removes the temporaries
# of its own outputs that no live k3-pack holds, says so, and leaves links,
# other names and a running pack's temporary alone.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
T="$work/trunk"

# A real kill: a pack stopped (SIGSTOP) once its temporary exists, then killed.
"$BIN/k3-synth" "$work/m" --seed 3 --vocab 2048 --hidden 512 --intermediate 1024 --layers 6 --kda-heads 4 \
  --kda-head-dim 64 --mla-heads 4 --q-lora 64 --kv-lora 32 --experts 8 --top-k 2 --moe-inter 128 --latent 128 \
  --shards 2 > /dev/null 2>&1 || { echo "k3-synth failed"; exit 1; }
mkdir -p "$T"
"$BIN/k3-pack" "$work/m" "$T" > /dev/null 2>&1 &
pid=$!
for _ in $(seq 400); do
  ls "$T"/trunk.bin.tmp.* > /dev/null 2>&1 && break
  sleep 0.01
done
kill -STOP "$pid" 2> /dev/null
left=$(ls "$T"/trunk.bin.tmp.* 2> /dev/null | head -1)
kill -KILL "$pid" 2> /dev/null
wait "$pid" 2> /dev/null
if [ -z "$left" ]; then
  # The pack finished before it could be stopped: leave what a kill would have left.
  left="$T/trunk.bin.tmp.00112233445566aa"
  head -c 300000 /dev/urandom > "$left"
fi
holds "a killed pack left its temporary" "[ -f '$left' ]"

# Planted next to it: a link at a temporary's name, other names, and a
# temporary a running pack holds (flock, as k3-pack's writer does).
echo "keep me" > "$work/victim"
ln -s "$work/victim" "$T/trunk.bin.tmp.aaaaaaaaaaaaaaaa"
echo keep > "$T/trunk.bin.tmp.not-a-temp"
echo keep > "$T/notes.txt"
echo held > "$T/trunk.json.tmp.bbbbbbbbbbbbbbbb"
# Its output goes nowhere: a sleep left holding the test's pipe would keep
# ctest waiting for it.
flock -x -o "$T/trunk.json.tmp.bbbbbbbbbbbbbbbb" sleep 60 > /dev/null 2>&1 &
holder=$!
sleep 0.2

"$BIN/k3-pack" "$work/m" "$T" > /dev/null 2> "$work/err"
check "the next pack: exit" 0 "$?"
holds "the killed pack's temporary is gone" "[ ! -e '$left' ]"
contains "the next pack says so" "k3-pack: removed 1 temporary file(s) of $T/trunk.bin that a stopped run left" "$(cat "$work/err")"
holds "the link is left alone" "[ -L '$T/trunk.bin.tmp.aaaaaaaaaaaaaaaa' ]"
check "the link's target is untouched" "keep me" "$(cat "$work/victim")"
holds "other names are left alone" "[ -f '$T/trunk.bin.tmp.not-a-temp' ] && [ -f '$T/notes.txt' ]"
holds "a held temporary is left alone" "[ -f '$T/trunk.json.tmp.bbbbbbbbbbbbbbbb' ]"
pkill -P "$holder" 2> /dev/null  # the sleep under flock, then flock itself
kill "$holder" 2> /dev/null
wait "$holder" 2> /dev/null
"$BIN/k3-pack" --check "$T" "$work/m" > /dev/null 2>&1
check "the new trunk checks" 0 "$?"
# Once released, it is stale too.
"$BIN/k3-pack" "$work/m" "$T" > /dev/null 2> "$work/err"
holds "a released temporary is removed by the next pack" "[ ! -e '$T/trunk.json.tmp.bbbbbbbbbbbbbbbb' ]"
finish stale_temporaries_test
