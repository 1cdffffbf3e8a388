#!/usr/bin/env bash
# The expert cache's eviction policy changes what is read, never the output:
# ids and logits are byte-identical with every --expert-cache-policy at a
# small cache budget on the fixture. k3-forward --expert-trace records the run's
# expert requests (one call per MoE layer per weight pass, experts distinct,
# pairs inside the model), created exclusively (a symlink is refused), and
# k3-bench-expert-cache replays the file. A bad policy name is exit 2.
set -uo pipefail
B=${K3_BIN_DIR:?}
TINY=${K3_TEST_DATA:?}/k3-tiny
W=$(mktemp -d "${TMPDIR:-/tmp}/k3-cache-policy-test.XXXXXX")
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

echo "1 2 3 4 5 6 7 8" >"$W/ids"
run() {  # run NAME flags...: ids to $W/NAME.ids, logits to $W/NAME.st
  local name=$1; shift
  "$B/k3-forward" "$TINY" --ids "$W/ids" --gen 8 --ignore-eos --logits "$W/$name.st" "$@" >"$W/$name.ids" 2>"$W/$name.err" \
    || { cat "$W/$name.err" >&2; fail "k3-forward $name: $*"; }
}
run resident
# 0.0002 GB: 16 slots for the fixture's 192 experts, so every policy evicts.
for p in lru layer layer-lfu lfu; do
  run "$p" --cache-gb 0.0002 --expert-cache-policy "$p" --threads $((1 + ${#p} % 2))
  cmp -s "$W/resident.st" "$W/$p.st" || fail "logits differ: resident vs $p"
  cmp -s "$W/resident.ids" "$W/$p.ids" || fail "ids differ: resident vs $p"
done
[ "$(wc -l <"$W/resident.ids")" -eq 8 ] || fail "expected 8 generated ids"
# The flag reaches the cache: a token's 48 experts cycle through 16 slots, so
# LRU finds none resident while each layer's share keeps some.
grep -qE "decode: .*hit rate 0\.0%" "$W/lru.err" || { cat "$W/lru.err"; fail "lru should hit nothing here"; }
grep -qE "decode: .*hit rate 0\.0%" "$W/layer.err" && { cat "$W/layer.err"; fail "layer shares should keep some experts"; }

# A bad policy: usage error naming the flag and the choices.
"$B/k3-forward" "$TINY" --ids "$W/ids" --cache-gb 0.0001 --expert-cache-policy mru >/dev/null 2>"$W/err" </dev/null
rc=$?
[ "$rc" -eq 2 ] || fail "unknown policy: exit $rc, expected 2"
grep -q -- "--expert-cache-policy" "$W/err" && grep -q "layer-lfu" "$W/err" || { cat "$W/err"; fail "unknown policy message"; }
"$B/k3-forward" --help > "$W/help" 2>&1
grep -q -- "--expert-cache-policy" "$W/help" || fail "--help lacks --expert-cache-policy"
grep -q -- "--expert-trace" "$W/help" || fail "--help lacks --expert-trace"

# --- --expert-trace ----------------------------------------------------------
# One prompt id, 6 generated: 6 weight passes of one position each (the last
# id is not fed back), streaming and resident alike.
echo "7" >"$W/one"
for mode in stream resident; do
  flags=()
  [ $mode = stream ] && flags=(--cache-gb 0.0001)
  "$B/k3-forward" "$TINY" --ids "$W/one" --gen 6 --ignore-eos --expert-trace "$W/$mode.trace" "${flags[@]}" \
    >"$W/$mode.tids" 2>"$W/err" || { cat "$W/err"; fail "--expert-trace $mode"; }
  python3 - "$W/$mode.trace" "$TINY/config.json" <<'PY' || fail "$mode trace contents"
import json, struct, sys
data = open(sys.argv[1], "rb").read()
c = json.load(open(sys.argv[2]))
c = c.get("text_config", c)
L, first, E, k = c["num_hidden_layers"], c["first_k_dense_replace"], c["num_experts"], c["num_experts_per_token"]
pairs = list(struct.iter_unpack("<ii", data))
passes = 6
assert len(pairs) == passes * (L - first) * k, (len(pairs), passes, L - first, k)
for p in range(passes):
    for i, l in enumerate(range(first, L)):
        call = pairs[(p * (L - first) + i) * k:][:k]
        assert all(layer == l for layer, _ in call), (p, l, call)
        experts = [e for _, e in call]
        assert len(set(experts)) == k and all(0 <= e < E for e in experts), (p, l, experts)
        assert experts == sorted(experts), experts  # the engine asks in ascending id
PY
done
cmp -s "$W/stream.trace" "$W/resident.trace" || fail "the routing recorded differs between streaming and resident runs"
cmp -s "$W/stream.tids" "$W/resident.tids" || fail "ids differ with --expert-trace"
# Replayed by the bench, with the fixture's geometry.
"$B/k3-bench-expert-cache" --trace "$W/stream.trace" --model "$TINY" --cache-gb 0.0001 --expert-bytes 8192 --json \
  >"$W/replay.json" 2>"$W/err" || { cat "$W/err"; fail "replay of the recorded trace"; }
python3 - "$W/replay.json" <<'PY' || fail "replay json"
import json, sys
r = json.loads(open(sys.argv[1]).read())
assert r["policy"] == "layer-lfu" and r["order"] == "recorded" and r["slots"] == 12, r
assert 0 <= r["hit_rate"] <= 1 and r["bytes_per_token"] > 0, r
PY
# Never written through a symlink; a missing directory is refused before the run.
ln -s "$W/victim" "$W/link"
"$B/k3-forward" "$TINY" --ids "$W/one" --gen 2 --expert-trace "$W/link" >/dev/null 2>"$W/err" </dev/null
rc=$?
[ "$rc" -eq 5 ] || { cat "$W/err"; fail "--expert-trace to a symlink: exit $rc, expected 5"; }
[ ! -e "$W/victim" ] || fail "written through a symlink"
grep -q "$W/link" "$W/err" || { cat "$W/err"; fail "symlink refusal does not name the path"; }
"$B/k3-forward" "$TINY" --ids "$W/one" --gen 2 --expert-trace "$W/nodir/t.bin" >/dev/null 2>"$W/err" </dev/null
[ $? -eq 5 ] || fail "--expert-trace into a missing directory"
ls "$W" | grep -q "\.tmp\." && fail "a temporary was left behind"
exit 0
