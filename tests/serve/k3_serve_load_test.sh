#!/usr/bin/env bash
# k3-serve before it serves: the memory plan counts the slots and --keep-mb
# (a budget that does not fit is refused before the server listens, exit 6,
# naming --keep-mb), it is made once and said before the server listens,
# and the server listens before the weights load, GET
# /health answering 503 with the load's step and bytes until it is ready
# (a slow load forced with K3_SERVE_LOAD_DELAY_MS on the tiny model's
# packed trunk), then 200.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/serve/serve_lib.sh"
TOOL=k3-serve

# 8 GB available: the tiny model fits, 100 GB of kept states do not.
export K3_AVAILABLE_MEMORY=8000000000
bad "resident: --keep-mb over the memory" 6 "for kept conversation states (lower --keep-mb)" -- \
  timeout 30 "$BIN/k3-serve" "$TINY" --port 0 --keep-mb 100000
holds "resident: refused before listening" "! grep -q 'listening' '$work/err'"
"$BIN/k3-pack" "$TINY" "$work/trunk" 2> /dev/null || { echo "FAIL k3-pack"; exit 1; }
bad "streaming: --keep-mb over the memory" 6 "and 100000 MB of kept states needs 100.16 GB" -- \
  timeout 30 "$BIN/k3-serve" "$TINY" --trunk "$work/trunk" --preset laptop --port 0 --keep-mb 100000
contains "streaming: the refusal names the --keep-mb that fits" "; it fits with --keep-mb 6250 (forecast" \
  "$(cat "$work/err")"
out=$(timeout 30 "$BIN/k3-serve" "$TINY" --trunk "$work/trunk" --preset laptop --keep-mb 300 --plan 2>&1)
contains "--plan shows the kept states" "kept states       conversations between requests (--keep-mb)  300.0 MB" "$out"
# A prompt pass may be stopped with every slot's sequence put back: a KDA
# state per slot more, by its formula from config.json (heads x key dim x
# value dim floats per KDA layer plus the short conv's K - 1 rows of q, k and
# v). --prompt-cache writes each kept state from the state itself (no copy):
# the kept states' line is --keep-mb's bytes, nothing beside them.
kda=$(python3 - "$TINY/config.json" << 'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c = c.get("text_config", c)
layers, lin = c["num_hidden_layers"], c["linear_attn_config"]
mla = len(lin["full_attn_layers"])
H, D, K = lin["num_heads"], lin["head_dim"], lin["short_conv_kernel_size"]
print((layers - mla) * (H * D * D + 3 * (K - 1) * H * D) * 4)
EOF
)
mb() { python3 -c "import sys; b = int(sys.argv[1]); print('%.1f MB' % (b / 1e6) if b >= 1e6 else '%.1f kB' % (b / 1e3))" "$1"; }
mkdir -m 700 "$work/prompt-cache"
plan=$(timeout 30 "$BIN/k3-serve" "$TINY" --trunk "$work/trunk" --preset laptop --slots 3 --ctx 1024 --keep-mb 300 \
  --prompt-cache "$work/prompt-cache" --plan 2>&1)
contains "--plan: a KDA state per slot to put back a stopped pass" \
  "x (3 sequences + 3 copies to put back a stopped pass)  $(mb $((kda * 6)))" "$plan"
contains "--plan: the prompt cache's kept states are --keep-mb's, no copies beside them" \
  "kept states       conversations between requests (--keep-mb)  300.0 MB" "$plan"
holds "--plan: no copies on their way to disk" "! grep -q 'on their way to disk' <<< \"\$plan\""
unset K3_AVAILABLE_MEMORY

# A slow load (each progress report waits 400 ms): /health reports it.
K3_SERVE_LOAD_DELAY_MS=400 "$BIN/k3-serve" "$TINY" --trunk "$work/trunk" --preset laptop --port 0 \
  2> "$work/load.log" &
pid=$!
server_pids+=("$pid")
port=""
for _ in $(seq 1 1200); do  # 60 s at most
  port=$(sed -nE 's|.*listening on http://127\.0\.0\.1:([0-9]+)/v1.*|\1|p' "$work/load.log" | head -1)
  [ -n "$port" ] && break
  kill -0 "$pid" 2> /dev/null || break
  sleep 0.05
done
[ -n "$port" ] || { echo "FAIL k3-serve did not start listening: $(cat "$work/load.log")"; exit 1; }
holds "listening before loading" "! grep -q 'ready' '$work/load.log'"
# Planned once: the plan is said before listening (and not again by the load).
check "the memory plan is said once" 1 "$(grep -c ': memory plan' "$work/load.log")"
holds "the memory plan comes before listening" \
  "[ \$(grep -n ': memory plan' '$work/load.log' | cut -d: -f1) -lt \$(grep -n 'listening on' '$work/load.log' | cut -d: -f1) ]"
loading="" ready=""
for _ in $(seq 1 600); do
  b=$(curl -s --max-time 5 -w '\n%{http_code}' "http://127.0.0.1:$port/health")
  case "${b##*$'\n'}" in
    503) [[ "${b%$'\n'*}" == *'"bytes_done": '[1-9]* ]] && loading=${b%$'\n'*} ;;
    200) ready=${b%$'\n'*}; break ;;
  esac
  sleep 0.05
done
check "503 while loading: status and step" "loading pinning trunk" "$(jget "$loading" 'j["status"] + " " + j["step"]')"
check "503 while loading: bytes within the total" True \
  "$(jget "$loading" '0 < j["bytes_done"] <= j["bytes_total"] and abs(j["fraction"] - j["bytes_done"] / j["bytes_total"]) < 1e-3')"
check "200 when ready" '{"status": "ok"}' "$ready"
kill -TERM "$pid"
wait "$pid"
check "exit after SIGTERM" 130 "$?"
finish k3_serve_load_test
