# Shared by tests/fetch/*_test.sh: a fixture repository served by fake_hub.py
# on 127.0.0.1, and small assertion helpers. Source it; it sets WORK, BIN,
# REPO and a trap that stops the hub and removes WORK.
set -euo pipefail

BIN="${K3_BIN_DIR:?}/k3-fetch-verify"
HUB_PY="${K3_SOURCE_DIR:?}/tests/fetch/fake_hub.py"
TINY="${K3_TEST_DATA:?}/k3-tiny"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/k3-fetch-test.XXXXXX")"
REPO="$WORK/repo"
HUB_PID=""
TOKEN="hf_test_token_123"
# The repository name the hub serves REPO under (set it before the first start_hub).
HUB_REPO_NAME="moonshotai/Kimi-K3"
# The distribution's interpreter starts fastest (a version manager's shim can take seconds).
PYTHON=python3
[ -x /usr/bin/python3 ] && PYTHON=/usr/bin/python3

cleanup() {
  stop_hub
  rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# The fixture repository: the tiny checkpoint in the real layout (without
# the test goldens) plus one file in a subfolder, as hub repos may have.
mkdir -p "$REPO/sub"
cp "$TINY"/{config.json,generation_config.json,model.safetensors.index.json,tiktoken.model,tokenizer_config.json} \
   "$TINY"/model-0000?-of-00005.safetensors "$REPO/"
echo "notes kept in a subfolder" > "$REPO/sub/notes.txt"

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# start_hub LOGNAME [--faults FILE] [--commit SHA]: a hub serving the
# fixture with these faults; sets ENDPOINT and LOG (emptied). A running hub is
# reset through its control URL instead of restarted (starting Python is the
# slowest part of these tests on a busy machine).
start_hub() {
  local name="$1" faults_file="" commit=""
  shift
  while [ $# -gt 0 ]; do
    case "$1" in
      --faults) faults_file="$2"; shift 2 ;;
      --commit) commit="$2"; shift 2 ;;
      *) fail "start_hub: unknown argument $1" ;;
    esac
  done
  LOG="$WORK/hub.log"
  if [ -z "$HUB_PID" ]; then
    : > "$LOG"
    rm -f "$WORK/port"
    "$PYTHON" "$HUB_PY" --repo-dir "$REPO" --repo "$HUB_REPO_NAME" --token "$TOKEN" --log "$LOG" \
      --port-file "$WORK/port" &
    HUB_PID=$!
    for _ in $(seq 200); do
      [ -s "$WORK/port" ] && break
      kill -0 "$HUB_PID" 2>/dev/null || fail "fake hub did not start"
      sleep 0.05
    done
    [ -s "$WORK/port" ] || fail "fake hub did not report its port within 10 s"
  fi
  local port
  port="$(cat "$WORK/port")"
  ENDPOINT="http://127.0.0.1:$port"
  local query="faults=$faults_file"
  [ -n "$commit" ] && query="$query&commit=$commit"
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  printf 'GET /_control/reset?%s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$query" >&3
  grep -q '"ok": true' <&3 || fail "fake hub did not accept the reset for $name"
  exec 3<&-
  : > "$LOG"
}

stop_hub() {
  if [ -n "$HUB_PID" ]; then
    kill "$HUB_PID" 2>/dev/null || true
    wait "$HUB_PID" 2>/dev/null || true
    HUB_PID=""
  fi
}

# faults FILE JSON: writes a fault list for --faults.
faults() { printf '%s\n' "$2" > "$1"; }

# fetch DIR [flags...]: download from the fake hub with short waits; sets RC,
# OUT (stdout) and ERR (stderr) instead of failing.
fetch() {
  local dir="$1"
  shift
  set +e
  HF_ENDPOINT="$ENDPOINT" HF_TOKEN="${HF_TOKEN_OVERRIDE-$TOKEN}" timeout 60 "$BIN" download "$dir" \
    --retry-wait 0.05 --stall-timeout 2 --progress-interval 1 "$@" > "$WORK/out.txt" 2> "$WORK/err.txt"
  RC=$?
  set -e
  OUT="$(cat "$WORK/out.txt")"
  ERR="$(cat "$WORK/err.txt")"
}

# verify DIR [flags...]: sets RC, OUT, ERR.
verify() {
  set +e
  timeout 60 "$BIN" verify "$@" > "$WORK/out.txt" 2> "$WORK/err.txt"
  RC=$?
  set -e
  OUT="$(cat "$WORK/out.txt")"
  ERR="$(cat "$WORK/err.txt")"
}

expect_rc() {
  [ "$RC" = "$1" ] || fail "$2: exit code $RC, expected $1; stderr: $ERR; stdout: $OUT"
}

expect_in() {  # expect_in HAYSTACK NEEDLE WHAT
  case "$1" in *"$2"*) ;; *) fail "$3: '$2' not found in: $1" ;; esac
}

same_as_repo() {  # same_as_repo DIR: every repository file byte-identical
  local f
  for f in $(cd "$REPO" && find . -type f | sort); do
    cmp -s "$REPO/$f" "$1/$f" || fail "$1/$f differs from the hub's file"
  done
}

# Requests in LOG for the content of a repository file (resolve or CDN).
content_requests() {
  local sha
  sha="$(sha256_of "$REPO/$1")"
  grep -E "^GET (/[^ ]*/resolve/[^ ]*/$1|/cdn/$sha) " "$LOG" | grep -v 'status=302' || true
}
