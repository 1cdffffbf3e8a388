#!/usr/bin/env bash
# k3-forward --state-out/--state-in remember each shard's digest in
# $XDG_CACHE_HOME/k3/shard-digests (else ~/.cache/k3/shard-digests), so a
# checkpoint without a download manifest is not read whole on every run
# (shard_digest_cache_test counts the bytes). Through the real tool: the file
# appears where documented with one entry per shard, a second run leaves it
# as it is and saves the same state bit for bit; a cache whose digests were
# edited while the shards were touched, one that is a link, and a place that
# cannot be written all give the same state, exit 0 and nothing on stderr;
# the link's target is never written.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
prompt=$(cat "$TINY/prompt_ids.txt")
mkdir -p "$work/m" && cp "$TINY"/* "$work/m/" && chmod u+w "$work/m"/*
# save TAG [env...]: --state-out $work/TAG.k3s (--quiet: errors alone on stderr) with the environment given
save() {
  local tag=$1; shift
  echo "$prompt" | env "$@" "$BIN/k3-forward" "$work/m" --quiet --gen 2 --state-out "$work/$tag.k3s" > /dev/null 2> "$work/$tag.err"
  check "$tag: exit" 0 "$?"
  check "$tag: nothing on stderr" "" "$(cat "$work/$tag.err")"
}
cache="$work/xdg/k3/shard-digests"

save first XDG_CACHE_HOME="$work/xdg"
holds "the cache is at \$XDG_CACHE_HOME/k3/shard-digests" '[ -f "$cache" ] && [ ! -L "$cache" ]'
check "one entry per shard" 5 "$(grep -Ec '^[0-9]+ [0-9]+ [0-9]+ -?[0-9]+ -?[0-9]+ [0-9a-f]{32}$' "$cache")"
holds "not writable by group or others" '[ $((0$(stat -c %a "$cache") & 022)) -eq 0 ]'
before=$(stat -c %Y.%i "$cache")
save second XDG_CACHE_HOME="$work/xdg"
holds "second run: the same state, bit for bit" 'cmp -s "$work/first.k3s" "$work/second.k3s"'
check "second run: the cache is left as it was" "$before" "$(stat -c %Y.%i "$cache")"

# Every remembered digest replaced while the shards are touched: read again, the right state.
sed -i -E 's/ [0-9a-f]{32}$/ 0123456789abcdef0123456789abcdef/' "$cache"
sleep 0.05
touch "$work/m"/*.safetensors
save edited XDG_CACHE_HOME="$work/xdg"
holds "edited cache, touched shards: the same state" 'cmp -s "$work/first.k3s" "$work/edited.k3s"'
holds "edited cache: rewritten with the right digests" '! grep -q 0123456789abcdef0123456789abcdef "$cache"'
echo "5 6" | XDG_CACHE_HOME="$work/xdg" "$BIN/k3-forward" "$work/m" --gen 2 --state-in "$work/edited.k3s" > /dev/null 2>&1
check "the state saved then continues" 0 "$?"

# A link at the cache's name: not followed, not replaced, its target untouched.
mkdir -p "$work/linked/k3" && echo "keep" > "$work/target"
ln -s "$work/target" "$work/linked/k3/shard-digests"
save linked XDG_CACHE_HOME="$work/linked"
holds "link: the same state" 'cmp -s "$work/first.k3s" "$work/linked.k3s"'
check "link: its target untouched" keep "$(cat "$work/target")"
holds "link: still a link" '[ -L "$work/linked/k3/shard-digests" ]'

# A place that cannot be written (under a regular file): only the read is lost.
echo x > "$work/afile"
save unwritable XDG_CACHE_HOME="$work/afile"
holds "unwritable place: the same state" 'cmp -s "$work/first.k3s" "$work/unwritable.k3s"'

# A relative XDG_CACHE_HOME is ignored (the XDG rule): ~/.cache/k3 is used.
mkdir -p "$work/home"
save home XDG_CACHE_HOME=relative HOME="$work/home"
holds "relative XDG_CACHE_HOME: the cache is in ~/.cache/k3" '[ -f "$work/home/.cache/k3/shard-digests" ]'
holds "relative XDG_CACHE_HOME: nothing made under it" '[ ! -e relative ]'
finish state_digest_cache_test
