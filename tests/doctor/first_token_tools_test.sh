#!/usr/bin/env bash
# The time-to-first-token forecast where it is printed: k3-doctor's
# forecast/first_token check, --list-presets' rows and --plan's line. Each is
# checked against the formula written out here:
#   seconds = bytes read / read rate + tokens x flops per token / flops a second
# with the rates each says it used (k3-doctor --no-probe: 2 GB/s and 50
# GFLOP/s a core, both labelled assumed; the list and --plan: --read-gbps and
# the CPU measured here), and labelled as a forecast.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
export K3_AVAILABLE_MEMORY=30000000000

# k3-doctor --json, the real K3 (no --model), nothing measured.
"$BIN/k3-doctor" --no-probe --json --prompt-tokens 4000 > "$work/doctor.json" 2> /dev/null
read -r ok why < <(python3 - "$work/doctor.json" "$(nproc)" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c = next(c for c in d["sections"]["forecast"] if c["name"] == "first_token")
x = c["details"]
cores = int(sys.argv[2])
def close(a, b): return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1)
checks = [
  ("tokens", x["prompt_tokens"] == 4000),
  ("assumed rate", x["flops_measured"] is False),
  ("read rate 2 GB/s", close(x["read_bytes_per_s"], 2e9)),
  ("reading = bytes / rate", close(x["read_seconds"], x["read_bytes"] / 2e9)),
  ("compute = tokens x flops / rate", close(x["compute_seconds"], 4000 * x["flops_per_token"] / x["flops_per_s"])),
  ("sum", close(x["seconds"], x["read_seconds"] + x["compute_seconds"])),
  ("labelled", "forecast" in c["summary"]),
  ("said to be assumed", "--no-probe" in c["advice"]),
]
bad = [n for n, ok in checks if not ok]
print(1 if not bad else 0, ",".join(bad) or "-")
PY
)
check "doctor: the first-token arithmetic ($why)" 1 "$ok"
"$BIN/k3-doctor" --no-probe > "$work/doctor.txt" 2> /dev/null
contains "doctor: the arithmetic lines" "time to first token with --preset" "$(cat "$work/doctor.txt")"
contains "doctor: the compute rate said to be assumed" "ASSUMED (--no-probe)" "$(cat "$work/doctor.txt")"

# --list-presets: a row per preset after the table, for --prompt-tokens.
"$BIN/k3-forward" --list-presets --read-gbps 3 --prompt-tokens 8192 > "$work/list" 2> /dev/null
check "list: exit" 0 "$?"
header=$(grep '^# time to first token' "$work/list")
contains "list: labelled a forecast for the prompt" "time to first token (forecast), a prompt of 8192 tokens" "$header"
contains "list: the read rate given" "reads at 3.00 GB/s (--read-gbps)" "$header"
contains "list: the CPU measured" "measured here" "$header"
# "# ... compute at G GFLOP/s (...), F GFLOP a token"; rows "#   laptop  8192
# tokens: B UNIT read (...), R s at 3.00 GB/s + C s of compute at T tokens/s = S s"
# (T has two decimals: C is checked against the header's GFLOP figures).
gflops=$(sed -n 's/.*compute at \([0-9.]*\) GFLOP\/s.*/\1/p' <<< "$header")
per_token=$(sed -n 's/.*, \([0-9.]*\) GFLOP a token.*/\1/p' <<< "$header")
rows=$(grep -E '^#   [a-z]+ ' "$work/list")
check "list: a row per preset" "min laptop desktop workstation server max" "$(awk '{print $2}' <<< "$rows" | xargs)"
arith=$(awk -v g="$gflops" -v f="$per_token" '
  function unit(u) { return u == "TB" ? 1e12 : u == "GB" ? 1e9 : u == "MB" ? 1e6 : u == "kB" ? 1e3 : 1 }
  {
    bytes = $5 * unit($6)
    for (i = 1; i <= NF; ++i) {
      if ($i == "s" && $(i + 1) == "at" && r == "") r = $(i - 1)
      if ($i == "compute") c = $(i - 3)
      if ($i == "tokens/s") t = $(i - 1)
      if ($i == "=") s = $(i + 1)
    }
    rel = 0.006  # the bytes are printed with three digits
    if ((r - bytes / 3e9) ^ 2 > (rel * r + 0.06) ^ 2) { print $2 ": reading " r " != " bytes " / 3 GB/s"; bad = 1 }
    if ((t - g / f) ^ 2 > (0.002 * t + 0.006) ^ 2) { print $2 ": rate " t " != " g " / " f; bad = 1 }
    if ((c - 8192 * f / g) ^ 2 > (0.002 * c + 0.06) ^ 2) { print $2 ": compute " c " != 8192 x " f " / " g; bad = 1 }
    if ((s - r - c) ^ 2 > 0.15 ^ 2) { print $2 ": " s " != " r " + " c; bad = 1 }
    r = ""
  }
  END { if (!bad) print "ok" }' <<< "$rows")
check "list: seconds = bytes / 3 GB/s + 8192 x flops / rate, every preset" ok "$arith"

# --plan: the line for the run these flags would make (the tiny model).
"$BIN/k3-pack" "$TINY" "$work/trunk" 2> "$work/pack.err" || { cat "$work/pack.err"; exit 1; }
"$BIN/k3-forward" "$TINY" --trunk "$work/trunk" --trunk-gb 0 --cache-gb 0 --plan --ctx 4096 --read-gbps 2 \
  --prompt-tokens 3000 < /dev/null > /dev/null 2> "$work/plan.err"
check "plan: exit" 0 "$?"
line=$(grep 'time to first token' "$work/plan.err")
contains "plan: labelled a forecast for the prompt" "k3-forward: time to first token (forecast), a prompt of 3000 tokens: " "$line"
contains "plan: one read for the prompt" "1 read of the weights per 4096 tokens" "$line"
contains "plan: the read rate given" "at 2.00 GB/s (--read-gbps)" "$line"
"$BIN/k3-forward" "$TINY" --trunk "$work/trunk" --trunk-gb 0 --cache-gb 0 --plan --ctx 1000 \
  --prompt-tokens 3000 < /dev/null > /dev/null 2> "$work/plan2.err"
contains "plan: a prompt the context holds" "a prompt of 1000 tokens" "$(grep 'time to first token' "$work/plan2.err")"
finish first_token_tools_test
