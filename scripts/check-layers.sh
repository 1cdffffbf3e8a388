#!/usr/bin/env bash
# Checks that lib/ imports downward only: a file in lib/A may include
# "B/..." only when layer B sits below layer A in the order declared here
# (or B is A). The leaves share one rank and may not include each other,
# except for the edges listed in ALLOWED. Exits 1 naming file:line and both
# layers for every include that breaks the order, when a lib/ folder is
# missing from the order, and when no header of a folder opens with
# "// Layer FOLDER: ..." (its main header saying what the layer is for).
#
#   scripts/check-layers.sh [REPO_DIR]    (default: this script's repository)
#   scripts/check-layers.sh --order       prints the order as the docs write it:
#                                         "common -> platform -> ... -> cli"
#
# LAYERS below is the one place the order is written; scripts/check-house.sh
# fails when a document's copy of it (CONTRIBUTING.md, docs/architecture.md,
# lib/CMakeLists.txt) differs from what --order prints.
set -euo pipefail

# Bottom first. Folders on one line share a rank.
LAYERS=(
  "common"      # errors, files, atomic writes, progress, small text helpers
  "platform"    # /proc, /sys, cgroups, meminfo, block devices, cpu features
  "io"          # O_DIRECT reads, aligned buffers, the read engine, file digests
  "checkpoint"  # safetensors, the index, dtypes
  "tokenizer"   # vocabulary, pre-split, byte-pair merges, stream decoding
  "kernels"     # matmul, MXFP4, attention scores, short conv, KDA step, SiTU, norms
  "gpu"         # Vulkan devices running the batch's matrix products with the CPU kernels' bits
  "model"       # the graph: config, manifest, layers, engine, K3 reference geometry
  "trunk"       # the trunk format end to end: layout, codec, blocks, placement, writer, reader checks
  "sampling"    # sampler, stop conditions, the portable exp
  "constrain"   # structured output: JSON schema -> byte recognizer -> masks over the vocabulary
  "state"       # state files and continuations
  "expert_cache"  # the routed-expert cache: arena, slots, eviction policy, lookahead, routing traces
  "planning"    # the memory plan: the run request, presets, forecasts
  "trunk_stream"  # the packed trunk at run time: pinned sections, stream buffers, read-ahead
  "runtime"     # weight sources (resident, streaming) composed from the three above
  "generate"    # the generation session
  "draft"       # the DSpark draft model: checkpoint, context fusion, draft pass, heads, its draft source
  "engine"      # the model object front ends run on: open, plan, load, sessions, counters
  "chat"        # chat renderer/parser and session
  "synth fetch verify doctor serve"  # leaves over what they use (serve: k3-serve's OpenAI-compatible HTTP server)
  "cli"         # the command-line layer the tools share
)
# Same-rank edges that are allowed, as "from->to".
ALLOWED=(
  "verify->fetch"  # the verifier reads the download manifest and reports progress as fetch does
)

if [ "${1:-}" = "--order" ]; then
  chain=""
  for line in "${LAYERS[@]}"; do
    read -ra folders <<<"$line"
    if [ "${#folders[@]}" -gt 1 ]; then
      list=$(printf '%s, ' "${folders[@]}")
      step="leaves (${list%, })"
    else
      step=${folders[0]}
    fi
    chain+="${chain:+ -> }$step"
  done
  echo "$chain"
  exit 0
fi

root=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
lib="$root/lib"
[ -d "$lib" ] || { echo "check-layers: $lib: not a directory (give the repository as the argument)" >&2; exit 2; }

declare -A rank=()
r=0
for line in "${LAYERS[@]}"; do
  for folder in $line; do rank[$folder]=$r; done
  r=$((r + 1))
done
declare -A allowed=()
for edge in "${ALLOWED[@]}"; do allowed[$edge]=1; done

bad=0
for dir in "$lib"/*/; do
  folder=$(basename "$dir")
  if [ -z "${rank[$folder]+x}" ]; then
    echo "lib/$folder: folder is not in the declared layer order; add it to LAYERS in scripts/check-layers.sh" >&2
    bad=1
  fi
  # Its main header opens with "// Layer FOLDER: what the layer is for."
  if ! head -qn1 "$dir"*.h 2>/dev/null | grep -q "^// Layer $folder\b"; then
    echo "lib/$folder: no header opens with \"// Layer $folder: <what the layer is for>\"; add that line to its main header" >&2
    bad=1
  fi
done

# Every quoted include whose first path component is a declared layer, as
# "FILE LINE INCLUDE" (one grep and one sed for the whole tree).
while read -r file line inc; do
  from=${file#"$lib"/}
  from=${from%%/*}
  to=${inc%%/*}
  [ "$to" != "$inc" ] || continue          # "file.h": same folder
  [ -n "${rank[$to]+x}" ] || continue       # not a lib/ layer (e.g. "hwy/highway.h")
  [ -n "${rank[$from]+x}" ] || continue     # reported above
  [ "$from" != "$to" ] || continue
  rf=${rank[$from]} rt=${rank[$to]}
  if [ "$rt" -lt "$rf" ] || [ -n "${allowed[$from->$to]+x}" ]; then continue; fi
  if [ "$rt" -eq "$rf" ]; then
    why="leaf layers may not include each other (allow the edge in ALLOWED if it is meant)"
  else
    why="a layer may include only layers below it"
  fi
  echo "${file#"$root"/}:$line: layer '$from' (rank $rf) includes \"$inc\" from layer '$to' (rank $rt): $why" >&2
  bad=1
done < <(grep -rnE --include='*.h' --include='*.cc' --include='*.cpp' \
           '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$lib" |
         sed -E 's/^([^:]+):([0-9]+):[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]*)".*/\1 \2 \3/' | sort)

if [ "$bad" -ne 0 ]; then
  echo "check-layers: lib/ includes break the declared layer order (see scripts/check-layers.sh)" >&2
  exit 1
fi
echo "check-layers: lib/ imports downward only (${#rank[@]} folders in ${#LAYERS[@]} ranks)"
