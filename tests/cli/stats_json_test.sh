#!/usr/bin/env bash
# --stats-json is valid JSON whatever it holds, and is written for every run:
# 1. a --batch run whose sequences stop one after the other runs passes of
#    many sizes; every one is in passes_by_rows, and their passes add up to
#    the generation's weight passes (the file was once cut at a fixed buffer
#    size, leaving invalid JSON);
# 2. a fully resident run (no budget flags) writes it too, marked
#    "streaming": false, with the generation and run figures; so does
#    k3-chat, which once accepted the flag and wrote nothing.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
"$BIN/k3-pack" "$TINY" "$work/trunk" 2> /dev/null || { echo "FAIL pack"; exit 1; }
prompt="$TINY/prompt_ids.txt"
json() {  # json FILE EXPR: python expression over j = the parsed file ("invalid: ..." when it does not parse)
  python3 -c "
import json, sys
try:
    j = json.load(open('$1'))
except Exception as e:
    print('invalid:', e); sys.exit(0)
print($2)"
}

# Twelve prompts decoded together, each stopped by its own stop id at its own
# step: passes of 12, 11, ..., 1 rows.
python3 -c "
import random
r = random.Random(5)
for _ in range(12): print(' '.join(str(r.randrange(8448)) for _ in range(4)))" > "$work/batch.txt"
"$BIN/k3-forward" "$TINY" --batch "$work/batch.txt" --gen 40 --ignore-eos > "$work/free.txt" 2> /dev/null
check "free batch exit" 0 "$?"
stops=$(python3 - "$work/free.txt" <<'PY'
import sys
lines = [l.split() for l in open(sys.argv[1])]
# Sequence i stops at step 2 + 3 i, on an id nobody generates before then.
chosen = []
for i, ids in enumerate(lines):
    for step in range(2 + 3 * i, len(ids)):
        cand = ids[step]
        if all(cand not in other[:min(len(other), 2 + 3 * j + 1)] or j == i for j, other in enumerate(lines)) \
           and cand not in ids[:step] and cand not in chosen:
            chosen.append(cand)
            break
print(' '.join('--stop-id ' + c for c in chosen))
PY
)
"$BIN/k3-forward" "$TINY" --batch "$work/batch.txt" --gen 40 --ignore-eos $stops \
  --trunk "$work/trunk" --trunk-gb 0 --cache-gb 0 --stats-json "$work/many.json" > /dev/null 2> "$work/err"
check "batch with stops exit" 0 "$?"
check "many pass sizes: valid JSON" ok "$(json "$work/many.json" "'ok'")"
sizes=$(json "$work/many.json" "len(j['generation']['passes_by_rows'])")
holds "many pass sizes ($sizes) are all written" "[ '$sizes' -ge 10 ] 2> /dev/null"
check "passes by size add up to the weight passes" True \
  "$(json "$work/many.json" "sum(p['passes'] for p in j['generation']['passes_by_rows']) == j['generation']['weight_passes']")"
check "streamed run is marked streaming" True "$(json "$work/many.json" "j['streaming']")"
check "the run object follows" 4 "$(json "$work/many.json" "len(j['run']['wall_seconds'])")"

"$BIN/k3-forward" "$TINY" --gen 5 --ignore-eos --threads 2 --stats-json "$work/resident.json" < "$prompt" > /dev/null 2> "$work/err"
check "resident run exit" 0 "$?"
holds "resident run writes --stats-json" "[ -s '$work/resident.json' ]"
check "resident: valid JSON" ok "$(json "$work/resident.json" "'ok'")"
check "resident: marked not streaming" False "$(json "$work/resident.json" "j['streaming']")"
check "resident: generated tokens" 5 "$(json "$work/resident.json" "j['generation']['generated_tokens']")"
check "resident: prompt tokens" "$(wc -w < "$prompt")" "$(json "$work/resident.json" "j['prompt_tokens']")"
check "resident: threads" 2 "$(json "$work/resident.json" "j['run']['threads']")"
check "resident: no streaming counters" False "$(json "$work/resident.json" "'trunk_bytes_per_token' in j['decode']")"
check "resident: loaded bytes counted" True "$(json "$work/resident.json" "j['load_bytes'] > 0")"
# k3-chat writes it when the conversation ends, over all its turns.
printf 'Hello\n/reset\nAgain\n' | "$BIN/k3-chat" "$TINY" --max-tokens 4 --stats-json "$work/chat.json" > /dev/null 2> /dev/null
check "k3-chat run exit" 0 "$?"
check "k3-chat: valid JSON" ok "$(json "$work/chat.json" "'ok'")"
check "k3-chat: both replies counted" True "$(json "$work/chat.json" "j['generation']['generated_tokens'] >= 2")"

# The summary's peak RSS is in MB (10^6 bytes), as its unit says. It is read
# after the stats file was written and a peak only grows, so it is at least
# peak_rss_bytes / 1e6 (less 0.05 for the rounding); it was once MiB
# labelled MB, 4.6% below that.
summary_mb=$(sed -n 's/.*peak RSS \([0-9.]*\) MB.*/\1/p' "$work/err" | tail -1)
check "summary peak RSS (${summary_mb:-none} MB) >= peak_rss_bytes / 1e6" True \
  "$(json "$work/resident.json" "float('${summary_mb:-0}') >= j['peak_rss_bytes'] / 1e6 - 0.05 and float('${summary_mb:-0}') < 2 * j['peak_rss_bytes'] / 1e6")"
finish stats_json_test
