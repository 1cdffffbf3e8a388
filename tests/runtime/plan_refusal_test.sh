#!/usr/bin/env bash
# A refused memory plan says which limit it exceeds (never "needs X but only
# Y is available" where Y > X) and what fits instead, and every suggestion it
# makes is run here and must start: budgets with a packed trunk, packing and
# --trunk (with the preset that then fits) without one, and the floor's
# needs when nothing fits. Memory is injected with K3_AVAILABLE_MEMORY.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
"$BIN/k3-pack" "$TINY" "$work/trunk" 2> /dev/null || { echo "FAIL pack"; exit 1; }

plan() {  # plan AVAILABLE FLAGS...: k3-forward --plan; stderr's last line in $last, status in rc
  local avail=$1; shift
  K3_AVAILABLE_MEMORY=$avail "$BIN/k3-forward" "$TINY" --plan "$@" < /dev/null > "$work/out" 2> "$work/err"
  rc=$?
  last=$(tail -1 "$work/err")
}
# The forecast of FLAGS in bytes at a prefill batch of 1 (where a plan that
# does not fit ends up: the batch is halved down to 1 before refusing).
forecast() {
  K3_AVAILABLE_MEMORY=1 "$BIN/k3-forward" "$TINY" --plan "$@" < /dev/null 2>&1 |
    awk '/forecast peak RSS/ {v = $4; u = $5; m = (u == "GB") ? 1e9 : (u == "MB") ? 1e6 : (u == "kB") ? 1e3 : 1;
                              printf "%.0f", v * m}'
}

# 1. A packed trunk, budgets too large: between the floor's and the preset's
#    forecasts, so budgets fit but not these.
full=$(forecast --trunk "$work/trunk" --preset max)
floor=$(forecast --trunk "$work/trunk" --preset max --trunk-gb 0 --cache-gb 0)
holds "the floor ($floor) is below the preset ($full)" "[ '$floor' -lt '$full' ]"
avail=$(( (floor + full) / 2 * 10 / 9 ))
plan "$avail" --trunk "$work/trunk" --preset max
check "too large budgets: exit 6" 6 "$rc"
contains "names the plan's need" "k3-forward: the memory plan needs" "$last"
contains "names the limit exceeded and its source" "limit (90% of" "$last"
contains "names where available came from" "available: K3_AVAILABLE_MEMORY)" "$last"
holds "no 'but only' contradiction" "[[ '$last' != *'but only'* ]]"
flags=$(sed -n 's/.*with \(--trunk-gb [0-9.e-]* --cache-gb [0-9.e-]*\) it fits.*/\1/p' <<< "$last")
differs "suggests --trunk-gb X --cache-gb Y" "" "$flags"
plan "$avail" --trunk "$work/trunk" --preset max $flags
check "the suggested budgets ($flags) start" 0 "$rc"
contains "and say so" "the plan fits" "$last"

# 2. No --trunk: pack it and pass --trunk, with the largest preset that then
#    fits (as --list-presets' "fits here" column says for the packed trunk),
#    or that even then none does.
resident=$(forecast --preset laptop)
avail=$(( (resident - 100000) * 10 / 9 ))  # the printed forecast is rounded to 0.1 MB
plan "$avail" --preset laptop
check "no --trunk: exit 6" 6 "$rc"
contains "no --trunk: the whole trunk is held" "without --trunk the whole trunk" "$last"
contains "no --trunk: pack and pass --trunk" "pack it once (k3-pack MODEL_DIR TRUNK_DIR) and pass --trunk TRUNK_DIR" "$last"
fitting=$(K3_AVAILABLE_MEMORY=$avail "$BIN/k3-forward" "$TINY" --trunk "$work/trunk" --list-presets |
          awk '$11 == "yes" {p = $1} END {print p}')
if [ -n "$fitting" ]; then
  contains "no --trunk: names the preset that fits packed" "with which --preset $fitting fits" "$last"
  plan "$avail" --trunk "$work/trunk" --preset "$fitting"
  check "the named preset ($fitting) with --trunk starts" 0 "$rc"
else
  min=$(K3_AVAILABLE_MEMORY=$avail "$BIN/k3-forward" "$TINY" --trunk "$work/trunk" --list-presets |
        awk '$1 == "min" {print $4, $5}')
  contains "no --trunk: no preset fits packed either" "even then no preset fits (the smallest needs $min)" "$last"
fi

# 3. Nothing fits: the floor's needs, and its state part.
avail=$(( floor * 10 / 9 / 2 ))
plan "$avail" --trunk "$work/trunk" --preset laptop
check "below the floor: exit 6" 6 "$rc"
contains "below the floor: says so" "even --trunk-gb 0 --cache-gb 0 needs" "$last"
contains "below the floor: the state's part" "KDA state and MLA latent cache for 4096 positions are" "$last"
contains "below the floor: what to do" "free memory, or lower --ctx" "$last"

# 4. The whole model resident (no budget flag) on too little memory: the
#    same advice, with --preset auto.
K3_AVAILABLE_MEMORY=1000000 "$BIN/k3-forward" "$TINY" --gen 1 < "$TINY/prompt_ids.txt" > "$work/out" 2> "$work/err"
check "resident model too large: exit 6" 6 "$?"
contains "resident: pack and stream" "run with --trunk TRUNK_DIR --preset auto" "$(tail -1 "$work/err")"
holds "resident: no 'but only'" "! grep -q 'but only' '$work/err'"

finish plan_refusal_test
