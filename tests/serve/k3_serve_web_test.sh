#!/usr/bin/env bash
# k3-serve's chat page (GET /, lib/serve/web/chat.html) on the tiny model,
# started with --api-key: the page is served without the key, byte for byte
# as in the source tree, with a Content-Security-Policy naming the SHA-256 of
# its own script and style; a streamed reply carries the prefill progress
# comments the page shows; then Debian's chromium, headless and driven by the
# pinned playwright-core of tests/clients, runs the page
# (tests/clients/web_page_checks.mjs) and writes screenshots to
# $K3_BUILD_DIR/web-screenshots/.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/serve/serve_lib.sh"
chromium=${K3_CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
  echo "FAIL no $chromium: scripts/install-deps.sh --tests installs Debian's chromium"
  exit 1
fi
browser_group=""
trap '[ -n "$browser_group" ] && kill -9 -- "-$browser_group" 2> /dev/null; stop_servers' EXIT
install_clients || exit 1
key=k3-web-test-key
start_server "$work/server.log" --api-key "$key" --slots 2 || exit 1

# The page: no key needed, the source file's bytes, its headers.
code=$(curl -s --max-time 10 -D "$work/head.txt" -o "$work/page.html" -w '%{http_code}' "$url/")
check "GET / without a key" 200 "$code"
cmp -s "$work/page.html" "$K3_SOURCE_DIR/lib/serve/web/chat.html"
check "GET / is lib/serve/web/chat.html byte for byte" 0 "$?"
header() { sed -nE "s/^$1: (.*)\r$/\1/Ip" "$work/head.txt"; }
check "page content type" "text/html; charset=utf-8" "$(header Content-Type)"
expected_csp=$(python3 - "$K3_SOURCE_DIR/lib/serve/web/chat.html" << 'PY'
import base64, hashlib, re, sys
page = open(sys.argv[1], "rb").read()
h = lambda tag: base64.b64encode(hashlib.sha256(re.search(rb"<%s>(.*?)</%s>" % (tag, tag), page, re.S).group(1)).digest()).decode()
print(f"default-src 'none'; script-src 'sha256-{h(b'script')}'; style-src 'sha256-{h(b'style')}'; "
      "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
PY
)
check "page policy: only its own script and style, requests only to k3-serve" "$expected_csp" "$(header Content-Security-Policy)"
check "page nosniff" "nosniff" "$(header X-Content-Type-Options)"
check "the API still needs the key" 401 "$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' "$url/v1/models")"
grep -Eq '^k3_requests_total\{endpoint="/",status="200"\} 1$' <<< "$(curl -s --max-time 10 -H "Authorization: Bearer $key" "$url/metrics")"
check "/metrics counts the page" 0 "$?"

# Prefill progress: ": prefill DONE/TOTAL" comments, non-decreasing, the last
# one TOTAL/TOTAL before the first token, TOTAL the prompt's ids.
curl -sN --max-time 60 -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
  -d '{"messages":[{"role":"user","content":"Hello there, how are you today?"}],"max_tokens":4,"stream":true,"stream_options":{"include_usage":true},"chat_template_kwargs":{"thinking":false}}' \
  "$url/v1/chat/completions" > "$work/stream.txt"
progress=$(python3 - "$work/stream.txt" << 'PY'
import json, re, sys
notes, first_token, usage = [], None, None
for i, line in enumerate(open(sys.argv[1]).read().split("\n")):
    m = re.fullmatch(r": prefill (\d+)/(\d+)", line)
    if m:
        notes.append((i, int(m[1]), int(m[2])))
    elif line.startswith("data: {"):
        j = json.loads(line[6:])
        if j.get("usage"): usage = j["usage"]
        if j["choices"] and (j["choices"][0]["delta"].get("content") or j["choices"][0]["delta"].get("reasoning_content")):
            first_token = i if first_token is None else first_token
ok = bool(notes) and usage and first_token is not None
ok = ok and all(a[1] <= b[1] for a, b in zip(notes, notes[1:])) and notes[-1][0] < first_token
ok = ok and notes[-1][1] == notes[-1][2] == usage["prompt_tokens"]
print("ok" if ok else f"notes {notes} first token at line {first_token} usage {usage}")
PY
)
check "prefill progress comments before the first token" ok "$progress"

# The page in the browser. setsid: node and its chromium in a process group
# of their own, killed whole if the checks hang or the test ends early.
shots="$K3_BUILD_DIR/web-screenshots"
mkdir -p "$shots"
rm -f "$shots"/k3-web-*.png
cp "$K3_SOURCE_DIR/tests/clients/web_page_checks.mjs" "$clients/"
K3_CHROMIUM=$chromium setsid node "$clients/web_page_checks.mjs" "$url" "$key" "$shots" &
browser_group=$!
for _ in $(seq 1 1500); do  # 150 s at most
  kill -0 "$browser_group" 2> /dev/null || break
  sleep 0.1
done
kill -0 "$browser_group" 2> /dev/null && echo "FAIL the browser checks took over 150 s"
kill -9 -- "-$browser_group" 2> /dev/null  # and any browser process left behind
wait "$browser_group"
check "browser checks" 0 "$?"
for f in desktop-light desktop-dark phone-light phone-dark; do
  [ -s "$shots/k3-web-$f.png" ]
  check "screenshot $f" 0 "$?"
done
finish k3_serve_web_test
