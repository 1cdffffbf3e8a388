#!/usr/bin/env bash
# k3-forward --json-schema on the tiny model (random weights, so unconstrained
# text is gibberish): seeded and greedy runs write one JSON value the schema
# accepts, then the stop id; the ids are the same with --spec and --predict
# (a drafted id outside the mask is rejected, never kept); --stats-json
# reports the masks' cost; a schema keyword that is not enforced, a schema
# over 1 MiB and --batch are refused with one line naming them.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
TOOL=k3-forward
cat > "$work/schema.json" << 'JSON'
{"type": "object",
 "properties": {"a": {"type": "integer"},
                "b": {"type": "array", "items": {"type": "string", "enum": ["x", "yz"]}, "maxItems": 3},
                "c": {"type": ["boolean", "null"]},
                "d": {"type": "string", "maxLength": 6}},
 "required": ["a", "b", "c", "d"], "additionalProperties": false}
JSON
printf 'The capital of France is' | "$BIN/k3-tokenize" --tok "$TINY" > "$work/prompt.txt"

# valid FILE: the ids end with the stop id and the text before it validates.
valid() {
  python3 - "$1" << 'PY'
import json, subprocess, sys, os
ids = open(sys.argv[1]).read().split()
if not ids or ids[-1] != "8193":
    sys.exit(f"not ended by the stop id: {ids[-5:]}")
text = subprocess.run([os.environ["BIN"] + "/k3-detok", "--tok", os.environ["TINY"]], input=" ".join(ids[:-1]),
                      capture_output=True, text=True, check=True).stdout
v = json.loads(text)
ok = (list(v) == ["a", "b", "c", "d"] and type(v["a"]) is int and isinstance(v["b"], list) and len(v["b"]) <= 3
      and all(x in ("x", "yz") for x in v["b"]) and (v["c"] is None or type(v["c"]) is bool)
      and isinstance(v["d"], str) and len(v["d"]) <= 6)
if not ok:
    sys.exit(f"does not validate: {text}")
PY
}
export BIN TINY
for seed in 1 2 3 4 5 6; do
  "$BIN/k3-forward" "$TINY" --gen 300 --temp 1.0 --seed "$seed" --json-schema "$work/schema.json" \
    < "$work/prompt.txt" > "$work/ids.$seed" 2> "$work/err"
  check "seed $seed exit" 0 "$?"
  valid "$work/ids.$seed"
  check "seed $seed validates" 0 "$?"
done
"$BIN/k3-forward" "$TINY" --gen 300 --json-schema "$work/schema.json" --stats-json "$work/stats.json" \
  < "$work/prompt.txt" > "$work/greedy" 2> /dev/null
valid "$work/greedy"
check "greedy validates" 0 "$?"
holds "stats-json reports the masks" \
  "python3 -c 'import json,sys; g=json.load(open(\"$work/stats.json\"))[\"generation\"]; sys.exit(0 if g[\"constraint_masks\"] > 5 and g[\"constraint_mask_ms_mean\"] > 0 else 1)'"

# Unconstrained, the same run is no such value.
"$BIN/k3-forward" "$TINY" --gen 40 --seed 1 --temp 1.0 < "$work/prompt.txt" > "$work/free" 2> /dev/null
holds "unconstrained text is not JSON" "! valid '$work/free' 2> /dev/null"

# Speculation stays exact: prompt lookup and a prediction (the unconstrained ids, mostly outside the mask).
for seed in 0 3; do
  temp=1.0
  [ "$seed" = 0 ] && temp=0
  "$BIN/k3-forward" "$TINY" --gen 300 --temp $temp --seed "$seed" --json-schema "$work/schema.json" \
    < "$work/prompt.txt" > "$work/plain.$seed" 2> /dev/null
  "$BIN/k3-forward" "$TINY" --gen 300 --temp $temp --seed "$seed" --json-schema "$work/schema.json" --spec 4 \
    < "$work/prompt.txt" > "$work/spec.$seed" 2> /dev/null
  check "seed $seed: --spec gives the same ids" "$(cat "$work/plain.$seed")" "$(cat "$work/spec.$seed")"
  cat "$work/free" "$work/plain.$seed" > "$work/prediction"
  "$BIN/k3-forward" "$TINY" --gen 300 --temp $temp --seed "$seed" --json-schema "$work/schema.json" \
    --predict "$work/prediction" --stats-json "$work/pstats.json" < "$work/prompt.txt" > "$work/pred.$seed" 2> /dev/null
  check "seed $seed: --predict gives the same ids" "$(cat "$work/plain.$seed")" "$(cat "$work/pred.$seed")"
  holds "seed $seed: drafts were verified" \
    "python3 -c 'import json,sys; g=json.load(open(\"$work/pstats.json\"))[\"generation\"]; sys.exit(0 if g[\"drafts_proposed\"] > 0 else 1)'"
done

# Fails closed.
echo '{"type":"object","properties":{"a":{"type":"string","pattern":"^x"}}}' > "$work/pattern.json"
bad "unsupported keyword" 4 'keyword "pattern" is not supported' -- \
  "$BIN/k3-forward" "$TINY" --gen 5 --json-schema "$work/pattern.json" < "$work/prompt.txt"
echo '{"$ref":"#"}' > "$work/loop.json"
bad "a \$ref loop" 4 "refers back to itself" -- "$BIN/k3-forward" "$TINY" --gen 5 --json-schema "$work/loop.json" < "$work/prompt.txt"
python3 -c 'print("{\"enum\":[" + ",".join(["\"%08d\"" % i for i in range(1000000)]) + "]}")' > "$work/big.json"
bad "a 10 MB schema" 4 "big.json" -- "$BIN/k3-forward" "$TINY" --gen 5 --json-schema "$work/big.json" < "$work/prompt.txt"
bad "--batch" 2 "--json-schema" -- "$BIN/k3-forward" "$TINY" --gen 5 --json-schema "$work/schema.json" --batch "$work/prompt.txt"
finish k3_forward_json_schema_test
