#!/usr/bin/env bash
# A tampered trunk.json tensor table is refused when the trunk is opened,
# before any id: exit 3 naming trunk.json (and the tensor, for the edits
# below), nothing on stdout, no --logits file, never a crash, a hang or
# other ids. The edits: a tensor's offset moved by 4 bytes, a tensor aliased
# to another's bytes, two same-shape tensors' names swapped (raw trunk, at
# every budget); a head tensor's offset set to another's in a compressed
# trunk (--preset min, all streaming, --preset max); a layer tensor moved to
# the end of its section with small row blocks (--block-mb); then a seeded
# loop of random table edits on both trunks. The intact trunks give the
# resident run's ids.
set -u
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
m=$TINY
prompt=$(cat "$m/prompt_ids.txt")
"$BIN/k3-pack" "$m" "$work/raw" 2> /dev/null || { echo "FAIL pack"; exit 1; }
"$BIN/k3-pack" --compress "$m" "$work/z" 2> /dev/null || { echo "FAIL pack --compress"; exit 1; }
want=$(echo "$prompt" | "$BIN/k3-forward" "$m" --gen 3 2> /dev/null)
budgets=("--preset min" "--trunk-gb 0 --cache-gb 0" "--preset max" "--trunk-gb 0 --cache-gb 0 --block-mb 0.002")
for t in raw z; do
  for b in "${budgets[@]}"; do
    got=$(echo "$prompt" | "$BIN/k3-forward" "$m" --trunk "$work/$t" $b --gen 3 2> /dev/null)
    check "intact $t trunk at $b: same ids" "$want" "$got"
  done
done

# variant SRC NAME PYTHON: a copy of trunk SRC (trunk.bin linked) whose
# trunk.json the python code edits (`t` is the parsed file, `sec(name)` a
# section); prints the name of the tensor it names in `named`, if any.
variant() {
  rm -rf "$work/$2"
  mkdir "$work/$2"
  ln "$work/$1/trunk.bin" "$work/$2/trunk.bin"
  python3 - "$work/$1/trunk.json" "$work/$2/trunk.json" "$3" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
sec = lambda name: [s for s in t["sections"] if s["name"] == name][0]
named = ""
exec(sys.argv[3])
json.dump(t, open(sys.argv[2], "w"), indent=1)
print(named)
PY
}
# refused NAME TRUNK NEEDLE BUDGET...: k3-forward exits 3 naming trunk.json and NEEDLE.
refused() {
  local name=$1 trunk=$2 needle=$3; shift 3
  rm -f "$work/l.st"
  timeout 60 "$BIN/k3-forward" "$m" --trunk "$work/$trunk" "$@" --gen 3 --logits "$work/l.st" \
    <<< "$prompt" > "$work/out" 2> "$work/err"; local rc=$?
  check "$name: exit" 3 "$rc"
  contains "$name: names trunk.json" "$trunk/trunk.json" "$(tail -1 "$work/err")"
  contains "$name: names $needle" "$needle" "$(tail -1 "$work/err")"
  check "$name: no ids" 0 "$(stat -c %s "$work/out")"
  holds "$name: no logits file" '[ ! -e "$work/l.st" ]'
}

n=$(variant raw moved 'x = sec("layer.2")["tensors"][1]; x["offset"] += 4; named = x["name"]')
for b in "${budgets[@]}"; do refused "offset moved by 4 at $b" moved "'$n'" $b; done
n=$(variant raw alias 'a, x = sec("layer.3")["tensors"][0:2]; x["offset"] = a["offset"]; named = x["name"]')
for b in "${budgets[@]}"; do refused "aliased tensor at $b" alias "'$n'" $b; done
n=$(variant raw swap '
ts = sec("layer.1")["tensors"]
a, x = [(a, x) for i, a in enumerate(ts) for x in ts[i + 1:] if a["shape"] == x["shape"] and a["dtype"] == x["dtype"]][0]
a["name"], x["name"] = x["name"], a["name"]
named = x["name"]')
for b in "${budgets[@]}"; do refused "same-shape names swapped at $b" swap "'$n'" $b; done
n=$(variant z headalias '
ts = sec("head")["tensors"]
lm = [x for x in ts if x["name"].endswith("lm_head.weight")][0]
lm["offset"] = [x for x in ts if x is not lm][0]["offset"]
named = lm["name"]')
for b in "--preset min" "--trunk-gb 0 --cache-gb 0" "--preset max"; do
  refused "compressed head offset set to another's at $b" headalias "'$n'" $b
done
for t in raw z; do
  n=$(variant $t "toend$t" '
s = sec("layer.4"); x = s["tensors"][0]
x["offset"] = s["offset"] + s["length"] - x["nbytes"]
named = x["name"]')
  for bm in 0.001 0.002 0.01; do
    refused "$t: layer tensor moved to its section's end, --block-mb $bm" "toend$t" "'$n'" --trunk-gb 0 --cache-gb 0 --block-mb $bm
  done
done

# Random edits of the table: each variant is refused (exit 3), never run.
for seed in $(seq 1 ${K3_TABLE_VARIANTS:-40}); do
  for t in raw z; do
    variant $t rand 'import random
r = random.Random('"$seed"')
secs = t["sections"]
while True:
    before = json.dumps(t, sort_keys=True)
    s = r.choice(secs); ts = s["tensors"]; x = r.choice(ts)
    k = r.randrange(12)
    if k == 0: x["offset"] += r.choice([-4096, -8, -4, -2, 2, 4, 8, 4096])
    elif k == 1: x["offset"] = r.choice([y for z in secs for y in z["tensors"]])["offset"]
    elif k == 2:
        y = r.choice(ts); x["name"], y["name"] = y["name"], x["name"]
    elif k == 3:
        i, j = r.randrange(len(ts)), r.randrange(len(ts)); ts[i], ts[j] = ts[j], ts[i]
    elif k == 4: x["shape"] = x["shape"][::-1]
    elif k == 5:
        y = r.choice([y for z in secs for y in z["tensors"]]); x["name"], y["name"] = y["name"], x["name"]
    elif k == 6: s["offset"] += r.choice([-4096, 4096])
    elif k == 7: s["stored_offset"] += r.choice([-4096, 4096])
    elif k == 8:
        i, j = r.randrange(len(secs)), r.randrange(len(secs)); secs[i], secs[j] = secs[j], secs[i]
    elif k == 9 and s.get("compressed") and len(s["blocks"]) > 1:
        i = r.randrange(len(s["blocks"]) - 1); d = r.choice([1, 8, 100])
        s["blocks"][i][0] += d; s["blocks"][i + 1][0] -= d
    elif k == 10: ts.insert(r.randrange(len(ts) + 1), dict(r.choice(ts)))
    elif k == 11 and len(ts) > 1: ts.remove(x)
    if json.dumps(t, sort_keys=True) != before and r.random() < 0.6: break' > /dev/null
    b=${budgets[$((seed % ${#budgets[@]}))]}
    timeout 60 "$BIN/k3-forward" "$m" --trunk "$work/rand" $b --gen 3 <<< "$prompt" > "$work/out" 2> "$work/err"
    rc=$?
    check "random edit $seed of $t at $b: exit (stderr: $(tail -1 "$work/err"))" 3 "$rc"
    check "random edit $seed of $t: no ids" 0 "$(stat -c %s "$work/out")"
    contains "random edit $seed of $t: names trunk.json" "trunk.json" "$(tail -1 "$work/err")"
  done
done
finish trunk_table_test
