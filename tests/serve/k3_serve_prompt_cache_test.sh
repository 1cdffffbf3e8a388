#!/usr/bin/env bash
# k3-serve --prompt-cache DIR: states kept on disk across restarts, through
# the HTTP API on the tiny model.
#  1. A server keeps its first request's state in DIR and is killed (-9: the
#     file was written when the state was kept, not at exit); a second server
#     on DIR continues the conversation's next request from it: cached_tokens
#     = the first request's prompt and reply, counted from k3-forward's ids;
#     the same reply as a server without the cache (cached 0); fewer prompt
#     ids evaluated (/metrics); the prompt cache's counters and bytes.
#  2. --prompt-cache-mb: past it the least recently used file goes.
#  3. A directory that is a link or writable by others is refused (exit 2).
#  4. Files that are not this model's states are left alone with a log line
#     and never continued from; one damaged past its header is read whole,
#     refused, and the request evaluated from scratch.
#  5. A full disk while writing (ulimit -f): the request is answered, no
#     file, partial or temporary, is left.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/serve/serve_lib.sh"
TOOL=k3-serve

m=5
tr -s ' \n' '\n' < "$TINY/prompt_ids.txt" | sed '/^$/d' > "$work/p.txt"
gen() { "$BIN/k3-forward" "$TINY" --quiet --gen "$m" --ids "$1" | tr -s ' \n' '\n' | sed '/^$/d' > "$2"; }
gen "$work/p.txt" "$work/g1.txt"
printf '7\n8\n9\n' > "$work/x.txt"
cat "$work/p.txt" "$work/g1.txt" "$work/x.txt" > "$work/r2.txt"
s1=$(($(wc -l < "$work/p.txt") + m))
csv() { paste -sd, "$1"; }
complete() { post body /v1/completions "{\"prompt\":[$(csv "$1")],\"max_tokens\":$m,\"temperature\":0}"; }
cached() { jget "$body" 'j["usage"]["prompt_tokens_details"]["cached_tokens"]'; }
metric() { curl -s --max-time 10 "$url/metrics" | awk -v n="$1" '$1 == n { print $2 }'; }
files() { find "$1" -maxdepth 1 -name 'prompt-*.k3state' | wc -l; }
# wait_files DIR N: until DIR holds N state files (they are written beside the engine thread).
wait_files() { for _ in $(seq 1 100); do [ "$(files "$1")" -ge "$2" ] && return 0; sleep 0.1; done; }

# 1. Across a restart.
pc="$work/pc"
start_server "$work/a.log" --slots 1 --prompt-cache "$pc" || exit 1
check "the directory is created for this user alone" 700 "$(stat -c %a "$pc")"
complete "$work/p.txt"
check "first server, first request" "200 0" "$status $(cached)"
wait_files "$pc" 1
check "its state is a file in the prompt cache" 1 "$(files "$pc")"
check "bytes on disk: the file's" "$(stat -c %s "$pc"/prompt-*.k3state)" "$(metric k3_kept_bytes_disk)"
state=$(ls "$pc"/prompt-*.k3state)  # the state of P and its reply: r2 continues from it
kill -9 "$pid"
wait "$pid" 2> /dev/null

start_server "$work/plain.log" --slots 1 || exit 1
complete "$work/r2.txt"
check "without the cache: evaluated from scratch" "200 0" "$status $(cached)"
plain=$(jget "$body" 'j["choices"][0]["text"]')
plain_evaluated=$(($(metric k3_prompt_tokens_total) - $(metric k3_cached_tokens_total)))

start_server "$work/b.log" --slots 1 --prompt-cache "$pc" || exit 1
contains "the second server indexed the first one's state" "1 states of this model" "$(cat "$work/b.log")"
complete "$work/r2.txt"
check "second server's first request continues the first server's state" "200 $s1" "$status $(cached)"
check "the same reply as without the cache" "$plain" "$(jget "$body" 'j["choices"][0]["text"]')"
evaluated=$(($(metric k3_prompt_tokens_total) - $(metric k3_cached_tokens_total)))
check "prompt ids evaluated: fewer by the state's" "$((plain_evaluated - s1))" "$evaluated"
check "prompt cache hits" 1 "$(metric k3_prompt_cache_hits_total)"
check "prompt cache ids" "$s1" "$(metric k3_prompt_cache_tokens_total)"
chat='{"messages":[{"role":"user","content":"Hi"}],"max_tokens":2}'
msg='{"model":"k3-tiny","max_tokens":2,"messages":[{"role":"user","content":"Hello"}],"thinking":{"type":"disabled"}}'
resp='{"model":"k3-tiny","input":"Good day","max_output_tokens":16}'
# Each API's first request here, then the same again after a restart.
api_requests() {
  post body /v1/chat/completions "$chat"
  chat_cached="$status $(jget "$body" 'j["usage"]["prompt_tokens_details"]["cached_tokens"]')"
  post body /v1/messages "$msg"
  msg_cached="$status $(jget "$body" 'j["usage"]["cache_read_input_tokens"]')"
  post body /v1/responses "$resp"
  resp_cached="$status $(jget "$body" 'j["usage"]["input_tokens_details"]["cached_tokens"]')"
}
api_requests
check "chat, messages, responses: nothing cached yet" "200 0 200 0 200 0" "$chat_cached $msg_cached $resp_cached"
wait_files "$pc" 8
kill -9 "$pid"
wait "$pid" 2> /dev/null
start_server "$work/c.log" --slots 1 --prompt-cache "$pc" || exit 1
api_requests
holds "chat after a restart: cached_tokens > 0 ($chat_cached)" "[ '${chat_cached% *}' = 200 ] && [ ${chat_cached#* } -gt 0 ]"
holds "Messages after a restart: cache_read_input_tokens > 0 ($msg_cached)" "[ '${msg_cached% *}' = 200 ] && [ ${msg_cached#* } -gt 0 ]"
holds "Responses after a restart: input_tokens_details.cached_tokens > 0 ($resp_cached)" "[ '${resp_cached% *}' = 200 ] && [ ${resp_cached#* } -gt 0 ]"
kill -9 "$pid"
wait "$pid" 2> /dev/null

# 2. The size limit: three states of one size, room for two: the oldest goes.
# q1..q3: P with another first id; qNx: qN, its reply (k3-forward's ids), X.
for v in 1 2 3; do
  { echo "$v"; tail -n +2 "$work/p.txt"; } > "$work/q$v.txt"
  gen "$work/q$v.txt" "$work/gq$v.txt"
  check "q$v's reply: $m ids (no stop id)" "$m" "$(wc -l < "$work/gq$v.txt")"
  cat "$work/q$v.txt" "$work/gq$v.txt" "$work/x.txt" > "$work/q${v}x.txt"
done
lim="$work/lim"
start_server "$work/l1.log" --slots 1 --prompt-cache "$lim" || exit 1
complete "$work/q1.txt"
wait_files "$lim" 1
size=$(stat -c %s "$lim"/prompt-*.k3state)
kill -9 "$pid"
wait "$pid" 2> /dev/null
mb=$(python3 -c "print($size * 2.5 / 1e6)")
start_server "$work/l2.log" --slots 1 --prompt-cache "$lim" --prompt-cache-mb "$mb" || exit 1
sleep 0.05
complete "$work/q2.txt"
wait_files "$lim" 2
sleep 0.05
complete "$work/q3.txt"
sleep 0.5
check "past the limit: two files stay" 2 "$(files "$lim")"
holds "bytes on disk within the limit" "[ $(metric k3_kept_bytes_disk) -le $((size * 5 / 2)) ]"
kill -9 "$pid"
wait "$pid" 2> /dev/null
# Restarted with room for one: the older of the two goes at start-up.
one=$(python3 -c "print($size * 1.5 / 1e6)")
start_server "$work/l3.log" --slots 1 --prompt-cache "$lim" --prompt-cache-mb "$one" || exit 1
check "a smaller limit at start-up: one file stays" 1 "$(files "$lim")"
complete "$work/q3x.txt"
check "the newest state stayed" "200 $s1" "$status $(cached)"
complete "$work/q2x.txt"
check "the one before it went at start-up" "200 0" "$status $(cached)"
complete "$work/q1x.txt"
check "the oldest went when the third was kept" "200 0" "$status $(cached)"
kill -9 "$pid"
wait "$pid" 2> /dev/null

# 3. Unsafe directories: refused before anything is loaded (a server that
#    starts instead is stopped after 30 s and fails the checks).
mkdir -m 700 "$work/real"
ln -s "$work/real" "$work/link"
bad "a symlink" 2 "--prompt-cache $work/link: is a symbolic link" -- timeout 30 "$BIN/k3-serve" "$TINY" --port 0 --prompt-cache "$work/link"
mkdir "$work/open" && chmod 0777 "$work/open"
bad "mode 0777" 2 "writable by others (mode 0777)" -- timeout 30 "$BIN/k3-serve" "$TINY" --port 0 --prompt-cache "$work/open"
mkdir "$work/group" && chmod 0770 "$work/group"
bad "mode 0770" 2 "writable by its group" -- timeout 30 "$BIN/k3-serve" "$TINY" --port 0 --prompt-cache "$work/group"
touch "$work/plainfile"
bad "a file" 2 "not a directory" -- timeout 30 "$BIN/k3-serve" "$TINY" --port 0 --prompt-cache "$work/plainfile"
bad "with --cache-dir" 2 "--cache-dir" -- timeout 30 "$BIN/k3-serve" "$TINY" --port 0 --prompt-cache "$pc" --cache-dir "$work/real"

# 4. What is not one of this model's states is left alone, and never continued from.
odd="$work/odd"
mkdir -m 700 "$odd"
name=$(basename "$state")
fake="prompt-0123456789abcdef0123456789abcdef.k3state"
echo "my notes" > "$odd/notes.txt"
cp "$state" "$odd/$fake"                              # a real state under another state's name
head -c 100 "$state" > "$odd/prompt-11111111111111111111111111111111.k3state"  # truncated
cp "$state" "$odd/prompt-22222222222222222222222222222222.k3state"
printf '\xff' | dd of="$odd/prompt-22222222222222222222222222222222.k3state" bs=1 seek=48 conv=notrunc 2> /dev/null  # another model's fingerprint
printf 'x%.0s' $(seq 1 100) > "$odd/prompt-33333333333333333333333333333333.k3state"  # not a state file
ln -s "$state" "$odd/prompt-44444444444444444444444444444444.k3state"
cp "$state" "$odd/$name"                               # this one, damaged past its header
printf '\x5a' | dd of="$odd/$name" bs=1 seek=$(($(stat -c %s "$state") - 20)) conv=notrunc 2> /dev/null
ls -l "$odd" > "$work/odd.before"
start_server "$work/odd.log" --slots 1 --prompt-cache "$odd" || exit 1
log=$(cat "$work/odd.log")
contains "foreign name" "ignoring $odd/notes.txt: not a prompt cache file" "$log"
contains "named for other ids" "ignoring $odd/$fake: its name is not that of the ids it holds" "$log"
contains "truncated" "prompt-11111111111111111111111111111111.k3state: truncated state file" "$log"
contains "another model" "prompt-22222222222222222222222222222222.k3state: another model's state" "$log"
contains "not a state file" "prompt-33333333333333333333333333333333.k3state: not a k3 state file" "$log"
contains "a link" "prompt-44444444444444444444444444444444.k3state: not a regular file" "$log"
contains "one state indexed (by its header)" "1 states of this model" "$log"
complete "$work/r2.txt"
check "the damaged state is not continued from" "200 0" "$status $(cached)"
check "its reply is the uncached one" "$plain" "$(jget "$body" 'j["choices"][0]["text"]')"
contains "it is refused with a log line" "ignoring $odd/$name: not the state it names" "$(cat "$work/odd.log")"
kill -9 "$pid"
wait "$pid" 2> /dev/null
for f in notes.txt "$fake" prompt-11111111111111111111111111111111.k3state prompt-22222222222222222222222222222222.k3state \
  prompt-33333333333333333333333333333333.k3state prompt-44444444444444444444444444444444.k3state; do
  holds "left alone: $f" "grep -q ' $f' '$work/odd.before' && [ -e '$odd/$f' -o -L '$odd/$f' ]"
done

# 5. A full disk while a state is written: the reply comes, nothing is left.
full="$work/full"
mkdir -p "$work/bin"
printf '#!/usr/bin/env bash\ntrap "" XFSZ\nulimit -f 40\nexec "%s/k3-serve" "$@"\n' "$BIN" > "$work/bin/k3-serve"
chmod +x "$work/bin/k3-serve"
realbin=$BIN
BIN="$work/bin"
start_server "$work/full.log" --slots 1 --prompt-cache "$full" || exit 1
BIN=$realbin
complete "$work/p.txt"
check "the request is answered" 200 "$status"
for _ in $(seq 1 50); do grep -q "could not keep" "$work/full.log" && break; sleep 0.1; done
contains "the write failed" "could not keep a conversation state in $full/prompt-" "$(cat "$work/full.log")"
check "no file left, partial or temporary" "" "$(ls -A "$full")"
complete "$work/p.txt"
check "the server goes on" "200 0" "$status $(cached)"
finish k3_serve_prompt_cache_test
