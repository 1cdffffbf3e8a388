#!/usr/bin/env bash
# Regenerates chunk_cases.jsonl with the reference (npm tiktoken@1.0.22, the
# tiktoken core, driven by bench/tokenizer/kimi_reference.mjs). Needs node and
# npm; installs the package into a scratch directory.
#   tests/data/tokenizer/make_chunk_cases.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/k3-chunkcases.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
npm install --silent --no-audit --no-fund tiktoken@1.0.22 > /dev/null
node "$here/make_chunk_cases.mjs" "$here/../k3-tiny" > "$work/chunk_cases.jsonl"
mv "$work/chunk_cases.jsonl" "$here/chunk_cases.jsonl"
echo "wrote $here/chunk_cases.jsonl ($(wc -l < "$here/chunk_cases.jsonl") cases)"
