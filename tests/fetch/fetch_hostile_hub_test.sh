#!/usr/bin/env bash
# k3-fetch-verify download against a hub that lies about what it holds and a
# token that is not one: a commit that is not 40 hex digits ("../..",
# "main"), a listing naming one file twice, file names with CR/LF, escape or
# bidirectional-text characters or a .git/ part, a resolve redirected to a
# non-HTTP scheme, and a Hub token that is several lines, holds control
# characters, or is a device, FIFO or oversized file. Each is refused before
# anything is written (exit 7 for the hub, 2 for --token/$HF_TOKEN, 4 for a
# token file), naming the thing and never printing the token.
source "$K3_SOURCE_DIR/tests/fetch/fake_hub_lib.sh"
work=$WORK
source "$K3_SOURCE_DIR/tests/lib/check.sh"
nothing_written() {  # nothing_written NAME DIR: no repository file, no .part, no manifest
  holds "$1: nothing written" "[ -z \"\$(find '$2' -type f 2>/dev/null)\" ]"
}
# The error lines (the note saying where the token came from is not one).
error_lines() { grep -vc "using the Hub token from" <<< "$ERR"; }
no_token_printed() { case "$ERR$OUT" in *"$TOKEN"*|*hf_SeCrEt*) check "$1: token not printed" no yes ;; esac; }

# 1. The commit the hub names for a revision goes into every later URL.
for commit in "../.." "main" "3f2a9c1e0b7d4a65e8f1c2b3a4d5e6f70819" "3F2A9C1E0B7D4A65E8F1C2B3A4D5E6F708192A3B" \
              "3f2a9c1e0b7d4a65e8f1c2b3a4d5e6f708192a3g"; do
  start_hub "commit $commit" --commit "$commit"
  fetch "$WORK/commit" --include config.json
  check "commit '$commit': exit" 7 "$RC"
  contains "commit '$commit': says why" "not a 40-hex-digit commit id" "$ERR"
  check "commit '$commit': one error line" 1 "$(error_lines)"
  check "commit '$commit': no tree or file request" 0 "$(grep -c '/tree/\|/resolve/' "$LOG")"
  nothing_written "commit '$commit'" "$WORK/commit"
done

# 2. A listing that names a file twice (two transfers would race on one .part).
faults "$WORK/dup.json" '[{"path": "tree", "kind": "duplicate", "where": "duplicate", "times": -1}]'
start_hub duplicate --faults "$WORK/dup.json"
fetch "$WORK/dup"
check "duplicate listing: exit" 7 "$RC"
contains "duplicate listing: names it" "twice" "$ERR"
check "duplicate listing: no file requested" 0 "$(grep -c '/resolve/' "$LOG")"
nothing_written "duplicate listing" "$WORK/dup"

# 3. A redirect to a scheme other than http(s) is not followed.
for url in "ftp://127.0.0.1:1/x" "file:///etc/passwd" "gopher://127.0.0.1:1/x" "dict://127.0.0.1:1/x"; do
  faults "$WORK/redir.json" "[{\"path\": \"config.json\", \"kind\": \"redirect\", \"where\": \"resolve\", \"url\": \"$url\", \"times\": -1}]"
  start_hub redirect --faults "$WORK/redir.json"
  fetch "$WORK/redir" --include config.json --retries 2
  check "redirect to $url: exit" 7 "$RC"
  contains "redirect to $url: says why" "scheme other than http/https" "$ERR"
  holds "redirect to $url: nothing in place" "[ ! -e '$WORK/redir/config.json' ]"
done

# 4. The token, from each source.
: > "$LOG"
HF_TOKEN_OVERRIDE=$'hf_SeCrEt\nX-Injected: 1' fetch "$WORK/tok" --include config.json
check "HF_TOKEN with two lines: exit" 2 "$RC"
contains "HF_TOKEN with two lines: names the source" "the Hub token from \$HF_TOKEN has several lines" "$ERR"
no_token_printed "HF_TOKEN with two lines"
check "HF_TOKEN with two lines: no request" 0 "$(wc -l < "$LOG")"
HF_TOKEN_OVERRIDE= fetch "$WORK/tok" --include config.json --token $'hf_SeCrEt\x1b[2J'
check "--token with ESC: exit" 2 "$RC"
contains "--token with ESC: names the source" "the Hub token from --token holds a control character" "$ERR"
no_token_printed "--token with ESC"
printf 'hf_SeCrEt\nhf_other\n' > "$WORK/two-lines"
mkfifo "$WORK/fifo"
head -c 5000 /dev/zero | tr '\0' a > "$WORK/big"
for f in "$WORK/two-lines" /dev/zero "$WORK/fifo" "$WORK/big"; do
  start=$(date +%s)
  HF_TOKEN_OVERRIDE= HF_TOKEN_PATH=$f fetch "$WORK/tok" --include config.json
  check "token file $f: exit" 4 "$RC"
  contains "token file $f: names it" "$f" "$ERR"
  check "token file $f: one line" 1 "$(error_lines)"
  holds "token file $f: at once" "[ $(($(date +%s) - start)) -lt 20 ]"
  no_token_printed "token file $f"
  nothing_written "token file $f" "$WORK/tok"
done
stop_hub

# 5. Names that could forge terminal lines or reach into .git/: refused up front.
for name in $'evil\rconfig.json' $'evil\nname' $'esc\x1b[1Aname' $'bidi\u202Etxt.json' '.git/config' 'sub/.GIT/hooks'; do
  rm -rf "$REPO/.git" "$REPO/sub/.GIT"
  find "$REPO" -name 'evil*' -o -name 'esc*' -o -name 'bidi*' | xargs -r rm -f
  mkdir -p "$(dirname "$REPO/$name")"
  echo x > "$REPO/$name"
  start_hub "name $name"
  fetch "$WORK/names"
  check "name $(printf %q "$name"): exit" 7 "$RC"
  contains "name $(printf %q "$name"): refused as unsafe" "unsafe path" "$ERR"
  check "name $(printf %q "$name"): one error line" 1 "$(error_lines)"
  holds "name $(printf %q "$name"): no raw CR or ESC in the message" "! grep -q \$'[\\r\\x1b]' '$WORK/err.txt'"
  nothing_written "name $(printf %q "$name")" "$WORK/names"
  stop_hub
done
finish fetch_hostile_hub_test
