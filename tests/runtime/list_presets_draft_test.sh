#!/usr/bin/env bash
# --list-presets counts the draft model (--draft) as --preset auto and each
# preset's own --plan do: on the tiny model's packed trunk with the tiny
# DSpark draft, every row's forecast is that preset's --plan --draft peak,
# and it exceeds the row with the same rollback copies but no draft (--spec)
# by the plan's draft-model bytes; the header says the draft is counted;
# k3-chat and k3-serve list with it too. k3-doctor --draft's preset table
# counts it and its rollback copies in every row, as the list does (memory =
# the plan's peak, the draft a part). k3-serve lists and plans at the context
# it holds (--ctx, default 8192), not the list's standard 4096 positions.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
DRAFT=${K3_TEST_DATA:?}/k3-tiny-dspark
export K3_AVAILABLE_MEMORY=1000000000000
"$BIN/k3-pack" "$TINY" "$work/trunk" > /dev/null 2>&1 || { echo "FAIL k3-pack"; exit 1; }
presets="min laptop desktop workstation server max"
# The draft's rollback copies (its drafts per pass), as its plan counts them.
"$BIN/k3-forward" "$TINY" --trunk "$work/trunk" --preset min --plan --draft "$DRAFT" < /dev/null 2> "$work/plan.err"
block=$(sed -n 's/^  KDA state .* + \([0-9]*\) rollback copies.*/\1/p' "$work/plan.err")
differs "the draft's plan holds rollback copies" "" "$block"

list() {  # list TOOL ARGS...: "preset forecast" rows of TOOL's --list-presets
  "$BIN/$1" "$TINY" --trunk "$work/trunk" --list-presets "${@:2}" > "$work/list.out" 2> "$work/list.err"
  awk '!/^#/ && $1 != "preset" {print $1, $4, $5}' "$work/list.out"
}
bytes() {  # bytes "N UNIT" -> bytes
  awk '{m = $2 == "GB" ? 1e9 : $2 == "MB" ? 1e6 : $2 == "kB" ? 1e3 : 1; printf "%.0f\n", $1 * m}' <<< "$1"
}
spec=$(list k3-forward --spec "$block")
with=$(list k3-forward --draft "$DRAFT")
check "k3-forward --list-presets --draft exit" 0 "$(wc -c < "$work/list.err")"
contains "the header says the draft is counted" "counting the draft model (--draft)" "$(head -1 "$work/list.out")"
for p in $presets; do
  # A preset's row counts the prefill at its smallest chunk (one batch, nothing
  # carried between layers); a run's own plan takes a larger chunk where the
  # memory allows it, so the plan compared here is at that chunk.
  K3_PREFILL_CHUNK=1 K3_AVAILABLE_MEMORY=1000000000000 "$BIN/k3-forward" "$TINY" --trunk "$work/trunk" --preset "$p" \
    --plan --draft "$DRAFT" < /dev/null > /dev/null 2> "$work/plan.err"
  plan=$(sed -n 's/^  forecast peak RSS \([0-9.]* [kMG]*B\).*/\1/p' "$work/plan.err")
  draft=$(bytes "$(sed -n 's/^  draft model .*  \([0-9.]* [kMG]*B\)$/\1/p' "$work/plan.err")")
  row=$(awk -v p="$p" '$1 == p {print $2, $3}' <<< "$with")
  check "$p: the row is the preset's --plan --draft" "$plan" "$row"
  without=$(awk -v p="$p" '$1 == p {print $2, $3}' <<< "$spec")
  diff=$(($(bytes "$row") - $(bytes "$without")))
  holds "$p: the draft adds its $draft bytes to the row (got $diff; printed to 0.1 MB)" \
    "[ $((diff - draft)) -le 100000 ] && [ $((draft - diff)) -le 100000 ] && [ $draft -gt 0 ]"
done
check "k3-chat --list-presets --draft: the same rows" "$with" "$(list k3-chat --draft "$DRAFT")"
serve_plain=$(list k3-serve)
serve_with=$(list k3-serve --draft "$DRAFT")
contains "k3-serve's header counts its slots and --keep-mb" "4 sequences" "$(head -1 "$work/list.out")"
contains "k3-serve's header counts its draft" "counting the draft model (--draft)" "$(head -1 "$work/list.out")"
holds "k3-serve --draft: every row grows" "paste -d' ' <(echo \"$serve_plain\") <(echo \"$serve_with\") |
  awk '{ if (\$2 \$3 == \$5 \$6) bad = 1 } END { exit bad }'"
serve_4096=$(list k3-serve --ctx 4096)
check "k3-serve --list-presets: the rows of its default context, 8192" "$(list k3-serve --ctx 8192)" "$serve_plain"
differs "k3-serve --list-presets: not the rows of 4096 positions" "$serve_4096" "$serve_plain"
serve_peak() {  # serve_peak ARGS...: the forecast of k3-serve --preset min --plan ARGS
  "$BIN/k3-serve" "$TINY" --trunk "$work/trunk" --preset min --plan "$@" 2>&1 > /dev/null |
    sed -n 's/^  forecast peak RSS \([0-9.]* [kMG]*B\).*/\1/p'
}
# Without --ctx a server preset takes the largest context that fits, and says which.
serve_ctx=$("$BIN/k3-serve" "$TINY" --trunk "$work/trunk" --preset min --plan 2>&1 > /dev/null |
  sed -n 's/.*--preset min: context \([0-9]*\) positions, the largest that fits.*/\1/p')
differs "k3-serve --plan says the context it chose" "" "$serve_ctx"
check "k3-serve --plan: the plan of the context it chose (${serve_ctx:-?})" "$(serve_peak --ctx "${serve_ctx:-0}")" \
  "$(serve_peak)"
differs "k3-serve --plan: not at 4096 positions" "$(serve_peak --ctx 4096)" "$(serve_peak)"

for d in "" "--draft $DRAFT"; do
  # shellcheck disable=SC2086
  "$BIN/k3-doctor" --model "$TINY" --trunk "$work/trunk" --no-probe --json $d > "$work/doctor${d:+d}.json" 2> /dev/null
done
# Its totals are the k3-forward --draft rows (the draft and its rollback copies).
check "k3-doctor --draft: each row's total = k3-forward --list-presets --draft's" "$(awk '{print $1, $2, $3}' <<< "$with")" \
  "$("$BIN/k3-doctor" --model "$TINY" --trunk "$work/trunk" --no-probe --draft "$DRAFT" 2> /dev/null |
    sed -n 's/^ *\([a-z]*\) .* pinned trunk + .* = \([0-9.]* [kMG]*B\)  .*/\1 \2/p')"
check "k3-doctor --draft: every row counts the draft; memory = the plan's peak" ok "$(python3 -c "
import json
rows = lambda f: [c for c in json.load(open(f))['sections']['forecast'] if c['name'] == 'preset'][0]['details']['presets']
for a, b in zip(rows('$work/doctor.json'), rows('$work/doctord.json')):
    assert a['draft_bytes'] == 0 and b['draft_bytes'] > 0, (a, b)
    assert b['memory_bytes'] == b['peak_rss_bytes'] and a['memory_bytes'] == a['peak_rss_bytes'], b
    assert b['memory_bytes'] - a['memory_bytes'] > b['draft_bytes'], (a, b)  # and its rollback copies
print('ok')")"
finish list_presets_draft_test
