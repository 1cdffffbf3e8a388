#!/usr/bin/env bash
# --list-presets without a model directory shows the real Kimi-K3 (its
# reference geometry): every preset's forecast peak RSS, bytes read and
# seconds per generated token at the assumed bandwidth or --read-gbps, and
# whether it fits here; the figures are k3-doctor's for the same machine
# (its recommendation's bytes and seconds per token), and k3-chat lists the
# same, and k3-doctor draws them as a chart. Without --list-presets,
# MODEL_DIR is required.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
export K3_AVAILABLE_MEMORY=30000000000

"$BIN/k3-forward" --list-presets > "$work/list" 2> "$work/err"
check "no model dir: exit 0" 0 "$?"
check "no model dir: nothing on stderr" 0 "$(stat -c %s "$work/err")"
contains "says it is the real K3" "the real Kimi-K3 (reference geometry" "$(head -1 "$work/list")"
contains "says the bandwidth is assumed" "reads at 2.00 GB/s (assumed" "$(head -1 "$work/list")"
rows() { awk '!/^#/ && $1 != "preset"' "$1"; }
check "one row per preset" "min laptop desktop workstation server max" "$(rows "$work/list" | awk '{print $1}' | xargs)"
# s/token = read per token / bandwidth, in every row (read/token is "136.97 GB").
holds "s/token = read/token / 2 GB/s" \
  "rows '$work/list' | awk '{ if (\$9 != \"GB\" || (\$8 / 2 - \$10) ^ 2 > 0.0001) bad = 1 } END { exit bad }'"
"$BIN/k3-forward" --list-presets --read-gbps 8 > "$work/list8"
contains "--read-gbps is used" "reads at 8.00 GB/s (--read-gbps)" "$(head -1 "$work/list8")"
holds "s/token = read/token / 8 GB/s" \
  "rows '$work/list8' | awk '{ if ((\$8 / 8 - \$10) ^ 2 > 0.0001) bad = 1 } END { exit bad }'"
check "the bandwidth changes only s/token" "$(rows "$work/list" | awk '{print $1, $4, $5, $8, $9, $11}')" \
  "$(rows "$work/list8" | awk '{print $1, $4, $5, $8, $9, $11}')"
# Larger presets read less per token.
holds "read/token falls from min to max" "rows '$work/list' | awk 'NR > 1 && \$8 >= last { bad = 1 } { last = \$8 } END { exit bad }'"

# k3-doctor (no --model: the real K3, the same memory figure) recommends the
# largest preset the list marks as fitting, and forecasts its bytes and
# seconds per token as the list does.
"$BIN/k3-doctor" --no-probe --json > "$work/doctor.json" 2> /dev/null
read -r rec bytes spt < <(python3 -c "
import json
f = json.load(open('$work/doctor.json'))['sections']['forecast']
d = [c for c in f if c['name'] == 'seconds_per_token'][0]['details']
print(d['preset'], '%.2f' % (d['bytes_per_token'] / 1e9), '%.2f' % d['seconds_per_token'])")
check "doctor recommends the largest fitting preset" "$(rows "$work/list" | awk '$11 == "yes" {p = $1} END {print p}')" "$rec"
check "doctor's bytes and s/token for $rec = the list's" "$bytes GB $spt" \
  "$(rows "$work/list" | awk -v p="$rec" '$1 == p {print $8, $9, $10}')"

# k3-doctor draws the same ladder as a chart: a row per preset with a memory
# bar and an s/token bar, the s/token figure the list's.
"$BIN/k3-doctor" --no-probe > "$work/doctor.txt" 2> /dev/null
contains "doctor: the memory ladder chart" "memory ladder (reads at 2.00 GB/s):" "$(cat "$work/doctor.txt")"
for p in min laptop desktop workstation server max; do
  row=$(grep -E "^ +$p +[#|]" "$work/doctor.txt")
  spt=$(rows "$work/list" | awk -v p="$p" '$1 == p {printf "%.1f", $10}')
  check "doctor chart: $p's s/token" "$spt" "$(awk '{print $NF}' <<< "$row")"
  holds "doctor chart: $p has both bars" "[[ '$row' == *'#'* && '$row' == *'='* ]]"
done

"$BIN/k3-chat" --list-presets > "$work/chat" 2> /dev/null
check "k3-chat --list-presets: the same table" "$(rows "$work/list")" "$(rows "$work/chat")"

TOOL=k3-forward
bad "no MODEL_DIR" 2 "MODEL_DIR is required" -- "$BIN/k3-forward" --gen 1
bad "--read-gbps 0" 2 "--read-gbps" -- "$BIN/k3-forward" --list-presets --read-gbps 0

finish list_presets_test
