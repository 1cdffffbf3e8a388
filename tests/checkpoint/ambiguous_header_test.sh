#!/usr/bin/env bash
# A shard header that lists a tensor twice, one whose data_offsets overlap,
# and an index that lists a tensor twice are refused by every tool that reads
# them: k3-forward and k3-pack with exit 3 naming the file and the tensor,
# k3-doctor with its checkpoint check failing, and k3-fetch-verify verify
# reporting the file (exit 8, its "verification found a problem").
set -u
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"

# damage.py KIND DIR: rewrites one shard header (or the index) of DIR.
cat > "$work/damage.py" <<'PY'
import json, struct, sys
kind, d = sys.argv[1], sys.argv[2]
shard = d + "/model-00002-of-00005.safetensors"
if kind == "index-dup":
    text = open(d + "/model.safetensors.index.json").read()
    i = text.index('"weight_map": {') + len('"weight_map": {')
    j = json.loads(text)
    name, where = next(iter(j["weight_map"].items()))
    text = text[:i] + '"%s": "%s", ' % (name, where) + text[i:]
    open(d + "/model.safetensors.index.json", "w").write(text)
    print(name)
    sys.exit(0)
raw = open(shard, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head, data = raw[8:8 + n].decode().rstrip(), raw[8 + n:]
items = json.loads(head)
names = [k for k in items if k != "__metadata__"]
if kind == "dup":
    # The first tensor again at the end of the object, same bytes.
    first = names[0]
    text = head[:-1] + ', "%s": %s}' % (first, json.dumps(items[first]))
    print(first)
else:
    # Two tensors of equal size pointed at the same bytes.
    by_size = {}
    for k in names:
        o = items[k]["data_offsets"]
        by_size.setdefault(o[1] - o[0], []).append(k)
    a, b = next(v for s, v in by_size.items() if s > 0 and len(v) >= 2)[:2]
    items[b]["data_offsets"] = list(items[a]["data_offsets"])
    text = json.dumps(items)
    print(b)
text += " " * (-len(text) % 8)
open(shard, "wb").write(struct.pack("<Q", len(text)) + text.encode() + data)
PY

prompt=$(cat "$K3_TEST_DATA/k3-tiny/prompt_ids.txt")
for kind in dup overlap index-dup; do
  m="$work/$kind"
  cp -r "$K3_TEST_DATA/k3-tiny" "$m"
  chmod -R u+w "$m"
  tensor=$(python3 "$work/damage.py" "$kind" "$m")
  case $kind in
    dup) needle="'$tensor' is listed twice" file=model-00002-of-00005.safetensors ;;
    overlap) needle="overlap in data_offsets" file=model-00002-of-00005.safetensors ;;
    index-dup) needle="'$tensor' is listed twice in weight_map" file=model.safetensors.index.json ;;
  esac
  TOOL=k3-forward bad "$kind: k3-forward" 3 "$needle" -- \
    bash -c 'echo "$1" | "$2" "$3" --gen 2' _ "$prompt" "$BIN/k3-forward" "$m"
  contains "$kind: k3-forward names the file" "$file" "$(cat "$work/err")"
  TOOL=k3-pack bad "$kind: k3-pack" 3 "$needle" -- "$BIN/k3-pack" "$m" "$work/trunk-$kind"
  holds "$kind: k3-pack wrote no trunk" '[ ! -e "$work/trunk-$kind/trunk.json" ]'
  "$BIN/k3-doctor" --no-probe --model "$m" > "$work/doc" 2>&1; rc=$?
  holds "$kind: k3-doctor does not pass the checkpoint (exit $rc)" '[ $rc -ne 0 ]'
  contains "$kind: k3-doctor says why" "$needle" "$(cat "$work/doc")"
  "$BIN/k3-fetch-verify" verify "$m" --no-manifest > "$work/ver" 2>&1; rc=$?
  check "$kind: verify exit" 8 "$rc"
  contains "$kind: verify says why" "$needle" "$(cat "$work/ver")"
done
finish ambiguous_header_test
