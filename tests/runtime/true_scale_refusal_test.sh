#!/usr/bin/env bash
# The context refusal at K3's true scale, through the real binaries: a
# headers-only checkpoint with the real geometry (96 shards, 497,057 tensors,
# 1,560,936,091,448 bytes, every tensor a hole: ~130 MB on disk) and
# k3-forward --plan. 10M positions need 553 GB of MLA latent cache and are
# refused before anything is allocated, with the plan's numbers; the same
# flags with 100,000 positions give exactly 5.53 GB of latent cache; the
# min preset forecasts at most 4.0 GB (--list-presets).
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"

"$BIN/k3-synth" "$work/k3" --preset k3 --headers-only > "$work/synth.log" 2>&1
check "k3-synth --headers-only exit" 0 "$?"
check "apparent size of the shards" 1560936091448 \
  "$(stat -c %s "$work"/k3/model-*-of-00096.safetensors | awk '{s += $1} END {printf "%.0f", s}')"

plan() {  # plan CTX [env...]: k3-forward --plan's stderr to $work/plan.err, exit status to rc
  local ctx=$1; shift
  env "$@" "$BIN/k3-forward" "$work/k3" --preset laptop --plan --ctx "$ctx" < /dev/null > "$work/out" 2> "$work/plan.err"
  rc=$?
}

plan 10000000
check "10M positions: refused (exit 6)" 6 "$rc"
err=$(cat "$work/plan.err")
contains "10M positions: the latent cache in the plan" "MLA latent cache  24 layers x 10000000 positions  552.96 GB" "$err"
contains "10M positions: one-line reason" "k3-forward: the memory plan needs" "$err"
contains "10M positions: what to do" "even then no preset fits" "$err"
contains "10M positions: lower --ctx" "lower --ctx" "$err"
check "10M positions: nothing on stdout" 0 "$(stat -c %s "$work/out")"

# 100,000 positions on a machine said to have 1 TB available: accepted.
plan 100000 K3_AVAILABLE_MEMORY=1000000000000
check "100k positions with 1 TB available: accepted" 0 "$rc"
contains "100k positions: latent cache 5.53 GB" "MLA latent cache  24 layers x 100000 positions  5.53 GB" \
  "$(cat "$work/plan.err")"
contains "100k positions: accepted message" "the plan fits" "$(cat "$work/plan.err")"

# The same plan where only 8 GB is available: refused, naming both figures.
plan 100000 K3_AVAILABLE_MEMORY=8000000000
check "100k positions with 8 GB available: refused" 6 "$rc"
contains "100k positions, 8 GB: names the limit exceeded" "over the 7.20 GB limit (90% of 8.00 GB available: K3_AVAILABLE_MEMORY" "$(cat "$work/plan.err")"
contains "100k positions, 8 GB: pack and pass --trunk" "pack it once (k3-pack MODEL_DIR TRUNK_DIR) and pass --trunk TRUNK_DIR" "$(cat "$work/plan.err")"

# The floor at true scale: --list-presets plans each preset as it would run
# with a packed trunk; min (nothing pinned, 32 MB row blocks, the top-16
# expert arena, prefill batches of 32) needs at most 4.0 GB at 4096 positions.
"$BIN/k3-forward" "$work/k3" --list-presets --ctx 4096 > "$work/presets" 2> "$work/presets.err"
check "--list-presets exit" 0 "$?"
min_gb=$(awk '$1 == "min" {print $4}' "$work/presets")
min_unit=$(awk '$1 == "min" {print $5}' "$work/presets")
check "min forecast in GB" GB "$min_unit"
holds "min forecast ($min_gb GB) at most 4.0 GB" "awk -v x='$min_gb' 'BEGIN {exit !(x > 0 && x <= 4.0)}'"

finish "true_scale_refusal_test"
