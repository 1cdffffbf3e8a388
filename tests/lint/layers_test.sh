#!/usr/bin/env bash
# scripts/check-layers.sh: the repository's lib/ imports downward only, and
# the check itself fails, naming file:line and both layers, on a copy of lib/
# with an upward include, a same-rank leaf include, an undeclared folder or
# a folder without its "// Layer" line planted in it, while the documented
# verify->fetch edge passes.
set -uo pipefail
SRC=${K3_SOURCE_DIR:?}
CHECK="$SRC/scripts/check-layers.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/k3-layers-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
# shellcheck source=../lib/check.sh
. "$SRC/tests/lib/check.sh"

# run NAME DIR: exit code in $rc, stderr+stdout in $out.
run() { out=$(bash "$CHECK" "$2" 2>&1); rc=$?; }

run "repository" "$SRC"
check "repository passes" 0 "$rc"
[ "$rc" -eq 0 ] || echo "$out"

fresh() {  # a scratch copy of lib/ to plant includes in
  rm -rf "$work/repo"
  mkdir -p "$work/repo"
  cp -r "$SRC/lib" "$work/repo/lib"
}

fresh
run "copy" "$work/repo"
check "unchanged copy passes" 0 "$rc"

# model (the graph) reaching up into planning.
fresh
printf '// planted\n#include "planning/memory_plan.h"\n' >"$work/repo/lib/model/planted.h"
run "upward" "$work/repo"
check "upward include fails" 1 "$rc"
contains "names file:line" "lib/model/planted.h:2:" "$out"
contains "names both layers" "layer 'model' (rank 7) includes \"planning/memory_plan.h\" from layer 'planning' (rank 13)" "$out"

# An include into a layer declared but not yet present fails just the same.
fresh
printf '#include "generate/session.h"\n' >>"$work/repo/lib/state/state_file.cpp"
run "upward to a future layer" "$work/repo"
check "include of a higher, absent layer fails" 1 "$rc"
contains "names the future layer" "from layer 'generate'" "$out"

# Two leaves at one rank.
fresh
printf '#include "synth/synth_geometry.h"\n' >"$work/repo/lib/doctor/planted.cpp"
run "leaf" "$work/repo"
check "same-rank leaf include fails" 1 "$rc"
contains "leaf message" "lib/doctor/planted.cpp:1: layer 'doctor'" "$out"
contains "leaf reason" "leaf layers may not include each other" "$out"

# The one allowed leaf edge passes; the reverse does not.
fresh
printf '#include "fetch/fetch_manifest.h"\n' >"$work/repo/lib/verify/planted.cpp"
run "allowed edge" "$work/repo"
check "verify->fetch is allowed" 0 "$rc"
printf '#include "verify/checkpoint_verifier.h"\n' >"$work/repo/lib/fetch/planted.cpp"
run "reverse edge" "$work/repo"
check "fetch->verify fails" 1 "$rc"
contains "reverse edge named" "lib/fetch/planted.cpp:1: layer 'fetch'" "$out"

# A folder outside the declared order.
fresh
mkdir "$work/repo/lib/misc"
printf '#include "common/error.h"\n' >"$work/repo/lib/misc/x.cpp"
run "undeclared" "$work/repo"
check "undeclared folder fails" 1 "$rc"
contains "undeclared folder named" "lib/misc: folder is not in the declared layer order" "$out"
contains "missing layer comment named" "lib/misc: no header opens with \"// Layer misc:" "$out"

# A folder whose main header lost its opening line.
fresh
sed -i 1d "$work/repo/lib/kernels/matmul.h"
run "layer comment" "$work/repo"
check "folder without a layer comment fails" 1 "$rc"
contains "folder without a layer comment named" "lib/kernels: no header opens with" "$out"

# Spacing variants and same-folder includes.
fresh
printf '  #  include   "kernels/matmul.h"\n#include "config.h"\n#include "hwy/highway.h"\n' \
  >"$work/repo/lib/io/planted.cpp"
run "spacing" "$work/repo"
check "spaced upward include fails" 1 "$rc"
contains "spaced include named" "lib/io/planted.cpp:1: layer 'io'" "$out"
check "only the one finding" 1 "$(grep -c 'planted.cpp' <<<"$out")"

run "missing" "$work/nothing"
check "missing repository is a usage error" 2 "$rc"

finish layers_test
