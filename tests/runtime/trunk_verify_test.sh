#!/usr/bin/env bash
# Every block of a packed trunk is verified the first time a run reads it,
# at every budget: one flipped mantissa bit (never a NaN) in the embedding, in
# a decoder layer or in lm_head of trunk.bin makes k3-forward exit 3 naming
# the section and the block, with no id that depends on it and no --logits file,
# whether the section is pinned, streamed whole or in row blocks (laptop,
# min, the default), or (embedding, head) read piecemeal; the intact trunk
# gives the same ids at the same budgets. No hashing pass runs before the
# first token: with nothing pinned, the bytes read at load are the head's
# small tensors alone. A trunk.json older than version 4 (no block hashes)
# is refused naming the k3-pack --refresh command, which upgrades it to the
# trunk.json a fresh pack writes.
set -u
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
m=$K3_TEST_DATA/k3-tiny
prompt=$(cat "$m/prompt_ids.txt")
"$BIN/k3-pack" "$m" "$work/good" 2> /dev/null || { echo "FAIL pack"; exit 1; }

budgets=("--trunk-gb 0 --cache-gb 0" "--trunk-gb 0 --block-mb 0" "--trunk-gb 0.002 --cache-gb 0" "--preset laptop" "--preset min")
want=$(echo "$prompt" | "$BIN/k3-forward" "$m" --gen 3 2> /dev/null)
for b in "${budgets[@]}"; do
  got=$(echo "$prompt" | "$BIN/k3-forward" "$m" --trunk "$work/good" $b --gen 3 2> /dev/null)
  check "intact trunk at $b: same ids" "$want" "$got"
done

# corrupt SECTION TENSOR-INDEX [ROW]: a copy of the trunk with bit 0 of one
# element's low byte flipped, deep inside the section's TENSOR-INDEX-th
# tensor (or in row ROW of it); prints the index of the block holding it.
corrupt() {
  rm -rf "$work/bad"
  cp -r "$work/good" "$work/bad"
  python3 - "$work/bad" "$@" <<'PY'
import json, sys
d, name, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
t = json.load(open(d + "/trunk.json"))
x = [s for s in t["sections"] if s["name"] == name][0]["tensors"][k]
at = x["offset"] + (x["nbytes"] // 2 // 4) * 4  # an element's low byte, mid-tensor
if len(sys.argv) > 4:  # an element of row ROW
    at = x["offset"] + int(sys.argv[4]) * x["shape"][1] * 2 + 6
with open(d + "/trunk.bin", "r+b") as f:
    f.seek(at); b = f.read(1); f.seek(at); f.write(bytes([b[0] ^ 1]))
s = [s for s in t["sections"] if s["name"] == name][0]
bb = t["block_bytes"]
print(sum(-(-y["nbytes"] // bb) for y in s["tensors"][:k]) + (at - x["offset"]) // bb)
PY
}
head_lm=$(python3 -c "
import json; t=json.load(open('$work/good/trunk.json'))
print([i for i, x in enumerate([s for s in t['sections'] if s['name']=='head'][0]['tensors']) if x['name'].endswith('lm_head.weight')][0])")
# The embedding row of the first prompt id: damaged before any id. (A row
# read later, as the mid-tensor one may be, stops the run when it is read:
# ids already written never depended on it.)
first_id=$(echo $prompt | cut -d' ' -f1)
for target in "embedding 0 $first_id" "embedding 0" "layer.12 0" "layer.3 1" "head $head_lm"; do
  read -r section index row <<< "$target"
  block=$(corrupt "$section" "$index" $row)
  for b in "${budgets[@]}"; do
    rm -f "$work/l.st"
    echo "$prompt" | "$BIN/k3-forward" "$m" --trunk "$work/bad" $b --gen 3 --logits "$work/l.st" \
      > "$work/out" 2> "$work/err"; rc=$?
    check "$section at $b: exit" 3 "$rc"
    contains "$section at $b: names the section and block" "section $section block $block (bytes" "$(tail -1 "$work/err")"
    contains "$section at $b: says it is damaged" "does not match its hash in trunk.json (damaged" "$(tail -1 "$work/err")"
    if [ "$section $index" != "embedding 0" ] || [ -n "$row" ]; then
      check "$section at $b: no ids" 0 "$(stat -c %s "$work/out")"
    else
      holds "$section at $b: the ids written are the intact run's, before the damaged row" \
        "[ \$(wc -l < '$work/out') -lt 3 ] && [[ '$want' == \"\$(cat '$work/out')\"* ]]"
    fi
    holds "$section at $b: no logits file" '[ ! -e "$work/l.st" ]'
  done
done
# No hashing pass at start: all streaming, the bytes read before the first
# token are the head's small tensors (norms), far less than the embedding
# and head sections a whole-section pass would read.
for b in "--trunk-gb 0 --cache-gb 0" "--preset min"; do
  echo "$prompt" | "$BIN/k3-forward" "$m" --trunk "$work/good" $b --gen 1 --stats-json "$work/s.json" > /dev/null 2>&1
  python3 - "$work/s.json" "$work/good/trunk.json" "$b" <<'PY' || fails=$((fails + 1))
import json, sys
load = json.load(open(sys.argv[1]))["load_bytes"]
t = json.load(open(sys.argv[2]))
sec = {s["name"]: s for s in t["sections"]}
lm = [x for x in sec["head"]["tensors"] if x["name"].endswith("lm_head.weight")][0]
small = sum(-(-x["nbytes"] // 4096) * 4096 for x in sec["head"]["tensors"] if x is not lm)
if load > small:
    print(f"FAIL no start-up pass at {sys.argv[3]}: {load} bytes read at load, more than the head's small tensors ({small})")
    sys.exit(1)
PY
done

# An older trunk.json (version 3: no block hashes for raw sections).
rm -rf "$work/old"; cp -r "$work/good" "$work/old"
python3 - "$work/old/trunk.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["version"] = 3
for s in t["sections"]:
    del s["blocks"]
json.dump(t, open(sys.argv[1], "w"), indent=1)
PY
echo "$prompt" | "$BIN/k3-forward" "$m" --trunk "$work/old" --gen 3 > "$work/out" 2> "$work/err"; rc=$?
check "old format: exit" 3 "$rc"
contains "old format: names the command" "upgrade it in place with: k3-pack --refresh $work/old $m" "$(tail -1 "$work/err")"
contains "old format: or the repack" "or rewrite it with: k3-pack $m $work/old" "$(tail -1 "$work/err")"
check "old format: no ids" 0 "$(stat -c %s "$work/out")"
"$BIN/k3-pack" --refresh "$work/old" "$m" 2> "$work/err"; rc=$?
check "old format: --refresh exit" 0 "$rc"
contains "old format: --refresh says so" "upgraded from format version 3 to 4" "$(cat "$work/err")"
holds "old format: upgraded trunk.json is a fresh pack's" "cmp -s '$work/old/trunk.json' '$work/good/trunk.json'"
got=$(echo "$prompt" | "$BIN/k3-forward" "$m" --trunk "$work/old" --preset min --gen 3 2> /dev/null)
check "old format: upgraded trunk runs" "$want" "$got"
finish trunk_verify_test
