#!/usr/bin/env bash
# k3-forward's sampling controls through the real tool, checked against the
# --logits rows of the same run with independent arithmetic (Python):
# penalties (each greedy id is the argmax of its row after llama.cpp's
# penalties over the ids before it), --logprobs (log-softmax of the row),
# --stop (the ids wholly before the stop text are written, no more), greedy
# unchanged when no penalty is given, and bad values refused before stdin is
# read.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
TOOL=k3-forward
run=("$BIN/k3-forward" "$TINY" --ids "$TINY/prompt_ids.txt" --gen 16 --ignore-eos --threads 2)

# Flags are checked before stdin is read: an empty stdin is not the complaint.
bad "--top-p 2" 2 "--top-p must be in (0, 1]" -- "$BIN/k3-forward" "$TINY" --top-p 2 < /dev/null
bad "--repeat-penalty 0" 2 "--repeat-penalty must be" -- "$BIN/k3-forward" "$TINY" --repeat-penalty 0 < /dev/null
bad "--presence-penalty 3" 2 "--presence-penalty must be in [-2, 2]" -- "$BIN/k3-forward" "$TINY" --presence-penalty 3 < /dev/null
bad "--logprobs without a file" 2 "add --logprobs-file" -- "${run[@]}" --logprobs 2
bad "--stop ''" 2 "--stop needs a non-empty text" -- "${run[@]}" --stop ''
printf '1 2 3\n4 5\n' > "$work/batch"
bad "--stop with --batch" 2 "apply to one prompt" -- "$BIN/k3-forward" "$TINY" --batch "$work/batch" --gen 2 --stop x

"${run[@]}" --logits "$work/plain.st" > "$work/plain" 2> /dev/null
check "plain run" 0 "$?"
"${run[@]}" --repeat-penalty 1 --frequency-penalty 0 --presence-penalty 0 > "$work/neutral" 2> /dev/null
check "neutral penalties: the same ids" "$(cat "$work/plain")" "$(cat "$work/neutral")"

# rows.py: rows(FILE), the logits rows of a --logits file (safetensors, F32);
# case(WORK, PROMPT, IDS, LOGITS), a run's prompt ids, generated ids and rows.
cat > "$work/rows.py" <<'PY'
import json, struct, sys
def rows(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])["logits"]
    r, v = h["shape"]
    s, e = h["data_offsets"]
    f = struct.unpack("<%df" % (r * v), b[8 + n + s:8 + n + e])
    return [list(f[i * v:(i + 1) * v]) for i in range(r)]
def case(w, prompt_path, ids, logits):
    prompt = [int(x) for x in open(prompt_path).read().split()]
    gen = [int(x) for x in open(w + "/" + ids).read().split()]
    return prompt, gen, rows(w + "/" + logits)
PY

# Penalties that favour earlier ids (negative, and a repeat penalty below 1), so the ids change.
"${run[@]}" --presence-penalty -2 --frequency-penalty -0.5 --repeat-penalty 0.8 --repeat-last-n -1 \
  --logits "$work/pen.st" > "$work/pen" 2> /dev/null
check "penalised run" 0 "$?"
differs "penalties change the ids" "$(cat "$work/plain")" "$(cat "$work/pen")"
check "each penalised id is the argmax of its penalised row" ok "$(python3 - "$work" "$TINY/prompt_ids.txt" <<'PY'
import sys; sys.path.insert(0, sys.argv[1])
from rows import case
prompt, gen, R = case(sys.argv[1], sys.argv[2], "pen", "pen.st")
seq = list(prompt)
for k, want in enumerate(gen):
    row = list(R[len(prompt) - 1 + k])
    win = seq
    for i in set(win):
        c = win.count(i)
        x = row[i] / 0.8 if row[i] > 0 else row[i] * 0.8
        row[i] = x - c * -0.5 - -2
    best = max(range(len(row)), key=lambda i: (row[i], -i))
    if best != want:
        print("id %d: want %d got %d" % (k, best, want)); sys.exit()
    seq.append(want)
print("ok")
PY
)"

"${run[@]}" --logprobs 3 --logprobs-file "$work/lp.jsonl" > "$work/lp" 2> /dev/null
check "logprobs run" 0 "$?"
check "logprobs: the ids as without" "$(cat "$work/plain")" "$(cat "$work/lp")"
check "logprobs: one line per generated id, log-softmax of its row" ok "$(python3 - "$work" "$TINY/prompt_ids.txt" <<'PY'
import json, math, sys; sys.path.insert(0, sys.argv[1])
from rows import case
w = sys.argv[1]
prompt, gen, R = case(w, sys.argv[2], "plain", "plain.st")
lines = [json.loads(l) for l in open(w + "/lp.jsonl")]
if len(lines) != len(gen): print("lines", len(lines)); sys.exit()
for k, (l, want) in enumerate(zip(lines, gen)):
    row = R[len(prompt) - 1 + k]
    m = max(row); lse = m + math.log(sum(math.exp(x - m) for x in row))
    top = sorted(range(len(row)), key=lambda i: (-row[i], i))[:3]
    if l["id"] != want or l["position"] != len(prompt) + k: print("line", k, l); sys.exit()
    if abs(l["logprob"] - (row[want] - lse)) > 1e-9: print("logprob", k); sys.exit()
    if [t["id"] for t in l["top"]] != top: print("top", k); sys.exit()
    if any(abs(t["logprob"] - (row[t["id"]] - lse)) > 1e-9 for t in l["top"]): print("top logprob", k); sys.exit()
print("ok")
PY
)"

# --stop: a text of two characters, the last of one id's text and the first
# of the next one's (found in Python from each id's bytes), so it crosses a
# token boundary; the expected ids are those whose text ends before the
# first place the stop text occurs in the whole text.
python3 - "$BIN/k3-detok" "$TINY" "$work/plain" > "$work/stop_case" <<'PY'
import subprocess, sys
detok, tiny, path = sys.argv[1:4]
ids = open(path).read().split()
texts = [subprocess.run([detok, "--tok", tiny, "--raw"], input=i.encode(), capture_output=True).stdout for i in ids]
ok = lambda b: 0x21 <= b < 0x7f
for k in range(2, len(ids) - 1):
    if texts[k] and texts[k + 1] and ok(texts[k][-1]) and ok(texts[k + 1][0]):
        stop = bytes([texts[k][-1], texts[k + 1][0]])
        break
else:
    sys.exit("no boundary between two printable ASCII characters")
at = b"".join(texts).find(stop)
out, end = [], 0
for i, t in zip(ids, texts):
    end += len(t)
    if end > at:
        break
    out.append(i)
print(stop.decode())
print("\n".join(out))
PY
check "--stop: a boundary-crossing stop text found" 0 "$?"
stop=$(head -1 "$work/stop_case")
expect=$(tail -n +2 "$work/stop_case")
"${run[@]}" --stop "$stop" > "$work/stopped" 2> "$work/err"
check "--stop exit" 0 "$?"
check "--stop: the ids wholly before the stop text" "$expect" "$(cat "$work/stopped")"
holds "--stop: fewer ids than --gen" "[ $(wc -l < "$work/stopped") -lt 16 ]"
"${run[@]}" --stop "no such text in this output @@" > "$work/nostop" 2> /dev/null
check "--stop that never matches: every id" "$(cat "$work/plain")" "$(cat "$work/nostop")"

finish k3_forward_sampling_flags_test
