#!/usr/bin/env bash
# The README's first command installs and builds only what the main job
# needs: scripts/install-deps.sh without --tests (none of the test-only
# packages), a build without the test programs, and as targets exactly the
# tools its pipeline runs. The second command (scripts/test.sh, as CI) asks
# for the test packages. The README says how long each takes.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
SRC=$K3_SOURCE_DIR
block=$(awk '/<!-- quick-start/ {on = 1; next} on && /^```sh/ {inside = 1; next}
             inside && /^```/ {exit} inside && !/^#/ && NF {print}' "$SRC/README.md")
first=$(head -1 <<< "$block")
check "the quick start has two commands" 2 "$(grep -c . <<< "$block")"
contains "the first installs with install-deps" "scripts/install-deps.sh && " "$first"
holds "the first does not install the test packages" "! grep -q -- 'install-deps.sh --tests' <<< \"\$first\""
contains "the first leaves the test programs out" "-DK3_BUILD_TESTS=OFF" "$first"
targets=$(sed -nE 's/.*--target ([a-z0-9 -]+) &&.*/\1/p' <<< "$first" | tr ' ' '\n' | grep . | sort | xargs)
used=$(grep -oE 'build/bin/k3-[a-z-]+' <<< "$first" | sed 's|build/bin/||' | sort -u | xargs)
differs "the first names its targets" "" "$targets"
check "its targets are the tools its pipeline runs" "$used" "$targets"
check "the second is scripts/test.sh" "scripts/test.sh" "$(sed -n 2p <<< "$block")"
contains "scripts/test.sh installs the test packages" "scripts/install-deps.sh --tests" "$(cat "$SRC/scripts/test.sh")"
contains "CI installs the test packages" "scripts/install-deps.sh --tests" "$(cat "$SRC/.ci/run")"

# The paragraph after the block says how long each of the two commands takes.
timing=$(awk '/^How long they take/ {on = 1} on && !NF {exit} on' "$SRC/README.md" | tr '\n' ' ')
holds "the README says how long the first command takes [$timing]" \
  "grep -qE 'the first, [0-9]+ min( [0-9]+ s)?' <<< \"\$timing\""
holds "the README says how long the second command takes [$timing]" \
  "grep -qE 'The second .* [0-9]+ min \\([0-9,]+ s\\)' <<< \"\$timing\""

run=$("$SRC/scripts/install-deps.sh" --list)
tests=$("$SRC/scripts/install-deps.sh" --tests --list)
for p in chromium clang clang-format python3-pyte libgtest-dev fio; do
  holds "install-deps leaves $p to --tests" "! grep -qx '$p' <<< '$run'"
  holds "install-deps --tests installs $p" "grep -qx '$p' <<< '$tests'"
done
for p in cmake g++ libhwy-dev libsimdjson-dev libcpp-httplib-dev; do
  holds "install-deps installs $p" "grep -qx '$p' <<< '$run'"
done
finish readme_quick_start_test
