#!/usr/bin/env bash
# Peak RSS against the memory plan's forecast at the largest contexts the
# tiny and bench geometries allow (the tiny config names no
# max_position_embeddings: 262,144 positions here, K3's; the bench geometry's
# own limit), and with a prompt that fills a 4,096-position context: the
# process never holds more than the plan said (+3%), the rule the presets
# and k3-doctor rely on. memory_plan_test checks each term's formula at
# 32K-256K positions; this checks the sum against a real run.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"

# within NAME STATS_JSON: peak_rss_bytes <= 1.03 x forecast_peak_rss_bytes.
within() {
  local line
  line=$(python3 - "$2" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
peak, forecast = s["peak_rss_bytes"], s["forecast_peak_rss_bytes"]
print("ok" if 0 < peak <= forecast * 1.03 else "over", peak, forecast)
PY
  )
  check "$1: peak RSS within the forecast (ok peak forecast)" ok "${line%% *}"
  echo "  $1: $line"
}

"$BIN/k3-pack" "$TINY" "$work/trunk" > /dev/null 2> "$work/err" || { cat "$work/err"; check "k3-pack tiny" 0 1; }
stream=(--trunk "$work/trunk" --trunk-gb 0 --cache-gb 0)
printf '%s\n' 1 2 3 4 5 6 7 8 > "$work/short.ids"
"$BIN/k3-forward" "$TINY" "${stream[@]}" --ids "$work/short.ids" --gen 4 --ctx 262144 --stats-json "$work/tiny_max.json" \
  > /dev/null 2> "$work/err" || { cat "$work/err"; check "tiny at 262144 positions runs" 0 1; }
within "tiny, --ctx 262144" "$work/tiny_max.json"
# The forecast grows with the context (the MLA cache, the scores): a plan at
# the largest context is larger than at the smallest.
small=$("$BIN/k3-forward" "$TINY" "${stream[@]}" --ctx 64 --plan 2>&1 | sed -nE 's/.*forecast peak RSS +([0-9.]+ [KMG]?B).*/\1/p')
large=$("$BIN/k3-forward" "$TINY" "${stream[@]}" --ctx 262144 --plan 2>&1 | sed -nE 's/.*forecast peak RSS +([0-9.]+ [KMG]?B).*/\1/p')
differs "the plan's forecast depends on --ctx ($small, $large)" "$small" "$large"

# A prompt that fills the context: 4,000 ids, then 8 more.
python3 -c "print('\n'.join(str(5 + i % 4000) for i in range(4000)))" > "$work/long.ids"
"$BIN/k3-forward" "$TINY" "${stream[@]}" --ids "$work/long.ids" --gen 8 --ctx 4096 --stats-json "$work/tiny_full.json" \
  > /dev/null 2> "$work/err" || { cat "$work/err"; check "tiny with a 4,000-id prompt runs" 0 1; }
within "tiny, 4,000 of 4,096 positions filled" "$work/tiny_full.json"

# The bench geometry (hidden 1536 and its head counts), few layers and
# experts and a small vocabulary so it is quick to make (sparse: the weights
# are holes, read as zeros), at its own limit.
"$BIN/k3-synth" "$work/bench" --preset bench --layers 2 --experts 16 --top-k 4 --vocab 1280 --sparse \
  > /dev/null 2> "$work/err" || { cat "$work/err"; check "k3-synth bench" 0 1; }
"$BIN/k3-pack" "$work/bench" "$work/bench-trunk" > /dev/null 2> "$work/err" || { cat "$work/err"; check "k3-pack bench" 0 1; }
limit=$(python3 -c "import json; print(json.load(open('$work/bench/config.json')).get('max_position_embeddings', 262144))")
printf '%s\n' 1 2 3 4 > "$work/bench.ids"
"$BIN/k3-forward" "$work/bench" --trunk "$work/bench-trunk" --trunk-gb 0 --cache-gb 0 --ids "$work/bench.ids" --gen 2 \
  --ctx "$limit" --stats-json "$work/bench_max.json" \
  > /dev/null 2> "$work/err" || { cat "$work/err"; check "bench at its limit runs" 0 1; }
within "bench geometry, --ctx $limit" "$work/bench_max.json"
finish long_context_rss_test
