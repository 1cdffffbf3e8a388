#!/usr/bin/env bash
# k3-fetch-verify finds the Hub token as the Hub's client does when HF_TOKEN
# is unset ($HF_TOKEN_PATH, then $HF_HOME/token, ~/.cache/huggingface/token by
# default), says where it came from and never prints the token itself.
source "${K3_SOURCE_DIR:?}/tests/fetch/fake_hub_lib.sh"
start_hub token-file

run() {  # run NAME ENV...: download config.json with that environment (HF_TOKEN unset)
  local name=$1; shift
  set +e
  env -u HF_TOKEN -u HF_TOKEN_PATH -u HF_HOME -u XDG_CACHE_HOME HOME="$WORK/nohome" HF_ENDPOINT="$ENDPOINT" "$@" \
    timeout 60 "$BIN" download "$WORK/dl-$name" --include config.json --retry-wait 0.05 \
    > "$WORK/out.txt" 2> "$WORK/err.txt"
  RC=$?
  set -e
  ERR="$(cat "$WORK/err.txt")"
  case "$ERR$(cat "$WORK/out.txt")" in *"$TOKEN"*) fail "$name: the token was printed: $ERR" ;; esac
}

mkdir -p "$WORK/hfhome" "$WORK/home/.cache/huggingface" "$WORK/elsewhere"
printf '%s\n' "$TOKEN" > "$WORK/hfhome/token"
run hf-home HF_HOME="$WORK/hfhome"
expect_rc 0 "token from \$HF_HOME/token"
expect_in "$ERR" "using the Hub token from $WORK/hfhome/token" "origin of the token named"

printf 'hf_wrong\n' > "$WORK/hfhome/token"
printf '%s' "$TOKEN" > "$WORK/elsewhere/tok"
run token-path HF_HOME="$WORK/hfhome" HF_TOKEN_PATH="$WORK/elsewhere/tok"
expect_rc 0 "\$HF_TOKEN_PATH comes before \$HF_HOME/token"
expect_in "$ERR" "from $WORK/elsewhere/tok" "origin is \$HF_TOKEN_PATH"

printf '%s\n' "$TOKEN" > "$WORK/home/.cache/huggingface/token"
run default HOME="$WORK/home"
expect_rc 0 "default ~/.cache/huggingface/token"
expect_in "$ERR" "from $WORK/home/.cache/huggingface/token" "origin is the default file"

run wrong-file HF_HOME="$WORK/hfhome"
[ "$RC" != 0 ] || fail "a wrong token from the file is refused by the hub"
run env-wins HF_HOME="$WORK/home/.cache/huggingface" HF_TOKEN=hf_wrong
[ "$RC" != 0 ] || fail "\$HF_TOKEN comes before the token files"
echo "fetch_token_file_test: ok"
