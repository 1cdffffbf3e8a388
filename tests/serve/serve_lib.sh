# What the k3-serve tests share (source after tests/lib/check.sh):
# start_server LOG ARGS... starts k3-serve on the tiny model on a free
# loopback port (--port 0; the port is read from its "listening on" line),
# waits until GET /health answers 200 (60 s at most) and sets $port, $pid and
# $url. Every server started is killed when the test exits.
# shellcheck shell=bash
server_pids=()
stop_servers() {
  for p in "${server_pids[@]}"; do kill -9 "$p" 2> /dev/null; done
  rm -rf "$work"
}
trap stop_servers EXIT

start_server() {  # start_server LOG ARGS...
  local log=$1
  shift
  "$BIN/k3-serve" "$TINY" --host 127.0.0.1 --port 0 "$@" 2> "$log" &
  pid=$!
  server_pids+=("$pid")
  port=""
  for _ in $(seq 1 600); do
    port=$(sed -nE 's|.*listening on http://127\.0\.0\.1:([0-9]+)/v1.*|\1|p' "$log" | head -1)
    if [ -n "$port" ] && [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$port/health")" = 200 ]; then
      url="http://127.0.0.1:$port"
      return 0
    fi
    kill -0 "$pid" 2> /dev/null || break
    sleep 0.1
  done
  echo "FAIL k3-serve did not become ready:"
  cat "$log"
  return 1
}

# post VAR PATH JSON [curl args...]: the response body in VAR, the status in $status.
post() {
  local _var=$1 _path=$2 _data=$3
  shift 3
  local _out
  _out=$(curl -s --max-time 120 -w '\n%{http_code}' -H 'Content-Type: application/json' "$@" -d "$_data" "$url$_path")
  status=${_out##*$'\n'}
  printf -v "$_var" '%s' "${_out%$'\n'*}"
}

# snippet NAME: the code block after <!-- serve-doc-test: NAME --> in docs/serve.md.
snippet() {
  awk -v tag="<!-- serve-doc-test: $1 -->" '$0 == tag {on = 1; next} on && /^```/ && !inside {inside = 1; next}
       inside && /^```/ {exit} inside {print}' "$K3_SOURCE_DIR/docs/serve.md"
}

# jget JSON EXPR: a python expression over j = the parsed JSON.
jget() { python3 -c "import json,sys; j=json.loads(sys.argv[1]); print($2)" "$1"; }

# install_clients: the pinned npm packages of tests/clients (npm ci) in
# $clients (the build directory's clients/), again only when the lockfile
# changed, and the checks the client scripts share (tests/clients/checks.mjs).
# The client tests run side by side under ctest -j and share that directory:
# one installs while the others wait on a lock (an npm ci under another one's
# feet fails with ENOTEMPTY), then they find it installed.
install_clients() {
  clients="${K3_BUILD_DIR:?}/clients"
  mkdir -p "$clients"
  local lock rc=0
  exec {lock}> "$clients/.install.lock"
  flock "$lock"
  cp "$K3_SOURCE_DIR/tests/clients/package.json" "$K3_SOURCE_DIR/tests/clients/package-lock.json" "$clients/"
  if ! cmp -s "$clients/package-lock.json" "$clients/node_modules/.k3-installed-lock" 2> /dev/null; then
    if (cd "$clients" && timeout 300 npm ci --ignore-scripts --no-audit --no-fund > npm.log 2>&1); then
      cp "$clients/package-lock.json" "$clients/node_modules/.k3-installed-lock"
    else
      echo "FAIL npm ci (tests/clients): $(tail -5 "$clients/npm.log")"
      rc=1
    fi
  fi
  exec {lock}>&-
  cp "$K3_SOURCE_DIR/tests/clients/checks.mjs" "$clients/"  # the checks every client script imports
  return $rc
}
