#!/usr/bin/env bash
# `k3-fetch-verify verify` checks the small files every tool reads first,
# with or without a download manifest: config.json (and the generation
# config, tokenizer config and tiktoken.model when present) must be regular
# files, and config.json must parse. `verify --no-manifest` used to say ok
# for a config.json linked to /dev/zero (or a FIFO) that every tool refuses.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
VERIFY() { timeout 60 "$BIN/k3-fetch-verify" verify "$@" > "$work/out" 2> "$work/err"; }
fresh() {  # fresh NAME: a copy of the tiny checkpoint (no manifest)
  rm -rf "$work/$1"; mkdir -p "$work/$1"
  cp "$TINY"/{config.json,generation_config.json,model.safetensors.index.json,tiktoken.model,tokenizer_config.json} \
     "$TINY"/model-0000?-of-00005.safetensors "$work/$1/"
  echo "$work/$1"
}

D=$(fresh good)
VERIFY "$D" --no-manifest
check "an intact copy: exit" 0 "$?"

for what in zero fifo dir garbage array missing; do
  D=$(fresh "$what")
  case $what in
    zero) ln -sf /dev/zero "$D/config.json" ;;
    fifo) rm "$D/config.json"; mkfifo "$D/config.json" ;;
    dir) rm "$D/config.json"; mkdir "$D/config.json" ;;
    garbage) echo "not json {" > "$D/config.json" ;;
    array) echo "[1, 2]" > "$D/config.json" ;;
    missing) rm "$D/config.json" ;;
  esac
  start=$(date +%s)
  VERIFY "$D" --no-manifest; rc=$?
  check "config.json $what: exit 8" 8 "$rc"
  contains "config.json $what: named" "config.json" "$(cat "$work/out")"
  holds "config.json $what: not ok" "! grep -q '^ok' '$work/out'"
  holds "config.json $what: at once" "[ $(($(date +%s) - start)) -lt 20 ]"
done
for f in generation_config.json tokenizer_config.json tiktoken.model; do
  D=$(fresh "link-$f")
  ln -sf /dev/zero "$D/$f"
  VERIFY "$D" --no-manifest
  check "$f -> /dev/zero: exit 8" 8 "$?"
  contains "$f -> /dev/zero: named" "$f: not a regular file" "$(cat "$work/out")"
done
finish verify_small_files_test
