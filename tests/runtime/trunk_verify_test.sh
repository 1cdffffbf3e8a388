#!/usr/bin/env bash
# Every section of a packed trunk is verified the first time a run reads it,
# at every budget: one flipped mantissa bit (never a NaN) in the embedding, in
# a decoder layer or in lm_head of trunk.bin makes k3-forward exit 3 naming
# the section, with nothing on stdout and no --logits file, whether the
# section is pinned, streamed whole or in row blocks (laptop, min, the
# default), or (embedding, head) read piecemeal; the
# intact trunk gives the same ids at the same budgets.
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

# corrupt SECTION TENSOR-INDEX: a copy of the trunk with bit 0 of one
# element's low byte flipped, deep inside the section's TENSOR-INDEX-th tensor.
corrupt() {
  rm -rf "$work/bad"
  cp -r "$work/good" "$work/bad"
  python3 - "$work/bad" "$1" "$2" <<'PY'
import json, sys
d, name, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
t = json.load(open(d + "/trunk.json"))
x = [s for s in t["sections"] if s["name"] == name][0]["tensors"][k]
at = x["offset"] + (x["nbytes"] // 2 // 4) * 4  # an element's low byte, mid-tensor
with open(d + "/trunk.bin", "r+b") as f:
    f.seek(at); b = f.read(1); f.seek(at); f.write(bytes([b[0] ^ 1]))
PY
}
head_lm=$(python3 -c "
import json; t=json.load(open('$work/good/trunk.json'))
print([i for i, x in enumerate([s for s in t['sections'] if s['name']=='head'][0]['tensors']) if x['name'].endswith('lm_head.weight')][0])")
for target in "embedding 0" "layer.12 0" "layer.3 1" "head $head_lm"; do
  read -r section index <<< "$target"
  corrupt "$section" "$index"
  for b in "${budgets[@]}"; do
    rm -f "$work/l.st"
    echo "$prompt" | "$BIN/k3-forward" "$m" --trunk "$work/bad" $b --gen 3 --logits "$work/l.st" \
      > "$work/out" 2> "$work/err"; rc=$?
    check "$section at $b: exit" 3 "$rc"
    contains "$section at $b: names the section" "section $section does not match its hash" "$(tail -1 "$work/err")"
    check "$section at $b: no ids" 0 "$(stat -c %s "$work/out")"
    holds "$section at $b: no logits file" '[ ! -e "$work/l.st" ]'
  done
done
finish trunk_verify_test
