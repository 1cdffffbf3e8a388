#!/usr/bin/env bash
# `cmake --install` into a scratch prefix gives working tools, man pages and
# completions made from the tools' own --help, and a CMake package another
# C++ program builds against: the installed tools and a small consumer of
# k3::k3 give the same bytes as the build tree's tools. Only the public
# headers are installed (the front door's and what they include), and a
# program embedding k3 through them alone generates the golden ids.
set -uo pipefail
BUILD=${K3_BUILD_DIR:?}
DATA=${K3_TEST_DATA:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
prefix=$work/prefix

cmake --install "$BUILD" --prefix "$prefix" > "$work/install.log" 2>&1
check "cmake --install exit" 0 "$?"
tools=(k3-chat k3-detok k3-doctor k3-fetch-verify k3-forward k3-pack k3-serve k3-synth k3-tokenize)
for t in "${tools[@]}"; do
  holds "$t installed and executable" "[ -x '$prefix/bin/$t' ]"
  "$prefix/bin/$t" --help > "$work/help" 2> "$work/help.err"
  check "$t --help exit" 0 "$?"
  check "$t --help on stdout only" 0 "$(stat -c %s "$work/help.err")"
  "$prefix/bin/$t" --version > "$work/version" 2>&1
  check "$t --version exit" 0 "$?"
  contains "$t --version names the tool" "$t " "$(head -1 "$work/version")"

  man=$prefix/share/man/man1/$t.1
  holds "$t man page installed" "[ -s '$man' ]"
  # Every long flag of the help is in the page (as roff's \-\-flag).
  missing=""
  for flag in $(grep -o -- '--[a-z][a-z0-9-]*' "$work/help" | sort -u); do
    grep -qF -- "${flag//-/\\-}" "$man" || missing="$missing $flag"
  done
  check "$t man page has every flag of --help" "" "$missing"
  # groff and col come from scripts/install-deps.sh (groff-base,
  # bsdextrautils); a missing one fails here instead of skipping the check.
  groff -man -Tutf8 "$man" > "$work/man.txt" 2> "$work/groff.err"
  check "$t man page renders (groff exit)" 0 "$?"
  rendered=$(col -b < "$work/man.txt")
  contains "$t man page renders with its NAME" "$t" "$rendered"
  check "$t man page renders without warnings" "" "$(cat "$work/groff.err")"

  completion=$prefix/share/bash-completion/completions/$t
  holds "$t completion installed" "[ -s '$completion' ]"
  first_flag=$(grep -o -- '^  \(-.,\)\?--[a-z][a-z0-9-]*' "$work/help" | sed 's/.*--/--/' | grep -v -- '--help' | head -1)
  reply=$(bash -c 'source "$1"; fn=$(complete -p "$2" | grep -o -- "-F [^ ]*" | cut -c4-)
                   COMP_WORDS=("$2" "${3:0:4}"); COMP_CWORD=1; "$fn"; printf "%s\n" "${COMPREPLY[@]}"' \
            _ "$completion" "$t" "$first_flag")
  contains "$t completion offers ${first_flag} for ${first_flag:0:4}" "$first_flag" "$reply"
  # The page's text is written as is (.nf): wrapped to fit a terminal.
  check "$t man page: no line of its text over 100 columns" "" \
    "$(sed -n '/^\.nf/,/^\.fi/p' "$man" | sed 's/\\-/-/g; s/\\e/\\/g' | awk 'length($0) > 100')"
done

# complete_words TOOL WORD...: what completion offers for the last WORD.
complete_words() {
  local t=$1; shift
  bash -c 'source "$1"; t=$2; shift 2; fn=$(complete -p "$t" | grep -o -- "-F [^ ]*" | cut -c4-)
           COMP_WORDS=("$t" "$@"); COMP_CWORD=$#; "$fn"; printf "%s\n" "${COMPREPLY[@]}"' \
    _ "$prefix/share/bash-completion/completions/$t" "$t" "$@" | sort | tr '\n' ' '
}
check "completion: --preset values" "laptop " "$(complete_words k3-forward --preset la)"
contains "completion: --preset auto" "auto" "$(complete_words k3-forward --preset '')"
check "completion: k3-fetch-verify subcommands" "download verify " "$(complete_words k3-fetch-verify '')"
check "completion: k3-fetch-verify verify's flags" "--full " "$(complete_words k3-fetch-verify verify --fu)"
check "completion: k3-fetch-verify download's flags" "--include " "$(complete_words k3-fetch-verify download --inc)"

# The tiny-model pipeline through the installed tools, byte for byte as the
# build tree's.
pipeline() {  # pipeline BIN_DIR
  printf 'The capital of France is' | "$1/k3-tokenize" --tok "$DATA/k3-tiny" |
    "$1/k3-forward" "$DATA/k3-tiny" --gen 8 2> /dev/null | "$1/k3-detok" --tok "$DATA/k3-tiny"
}
# Each pipeline's status is taken directly (pipefail: any failing stage),
# not from inside a command substitution, where it would always read 0.
pipeline "$prefix/bin" > "$work/installed.out"
check "installed pipeline exit" 0 "$?"
pipeline "$BUILD/bin" > "$work/built.out"
check "build tree pipeline exit" 0 "$?"
installed=$(od -An -tx1 < "$work/installed.out")
built=$(od -An -tx1 < "$work/built.out")
differs "pipeline produced text" "" "$installed"
check "installed pipeline = build tree pipeline" "$built" "$installed"

# A program of its own built against the installed package.
holds "package config installed" "[ -f '$prefix/lib/cmake/k3/k3Config.cmake' ]"
holds "headers installed under include/k3" "[ -f '$prefix/include/k3/tokenizer/tokenizer.h' ]"
mkdir -p "$work/consumer"
cat > "$work/consumer/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.22)
project(k3_consumer LANGUAGES CXX C)
set(CMAKE_CXX_STANDARD 20)
find_package(k3 REQUIRED)
add_executable(consumer main.cpp)
target_link_libraries(consumer PRIVATE k3::k3)
CMAKE
cat > "$work/consumer/main.cpp" <<'CPP'
#include <cstdio>
#include "tokenizer/tokenizer.h"
int main(int argc, char** argv) {
  const k3::Tokenizer tok = k3::Tokenizer::load(argv[1]);
  for (auto id : tok.encode(argv[2])) std::printf("%u\n", static_cast<unsigned>(id));
}
CPP
launcher=()
if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S "$work/consumer" -B "$work/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" > "$work/consumer.log" 2>&1 &&
  cmake --build "$work/consumer/build" >> "$work/consumer.log" 2>&1
rc=$?
check "consumer configures and builds against k3::k3" 0 "$rc"
[ "$rc" -eq 0 ] || tail -20 "$work/consumer.log"
check "consumer's ids = k3-tokenize's" \
  "$(printf 'The capital of France is' | "$BUILD/bin/k3-tokenize" --tok "$DATA/k3-tiny" | tr -s ' \n' '\n')" \
  "$("$work/consumer/build/consumer" "$DATA/k3-tiny" 'The capital of France is')"

# The public header set: the front door's headers and what they include,
# nothing else. Each installed header's includes are installed (none names a
# private header), and each is reached from the roots (none is extra).
inc=$prefix/include/k3
roots=(engine/model.h engine/session.h common/error.h tokenizer/tokenizer.h)
for h in "${roots[@]}"; do holds "public header $h installed" "[ -f '$inc/$h' ]"; done
installed_headers=$(cd "$inc" && find . -type f -name '*.h' | sed 's#^\./##' | sort)
reached=$(cd "$inc" && python3 -c '
import os, re, sys
todo, seen = list(sys.argv[1:]), set()
while todo:
    h = todo.pop()
    if h in seen: continue
    seen.add(h)
    if not os.path.isfile(h): print("MISSING " + h); continue
    for line in open(h, errors="replace"):
        m = re.match(r"\s*#\s*include\s*\"([^\"]+)\"", line)
        if m: todo.append(m.group(1))
print("\n".join(sorted(h for h in seen if os.path.isfile(h))))
' "${roots[@]}")
check "every include of an installed header is installed" "" "$(grep '^MISSING' <<<"$reached")"
check "installed headers = the public set (the roots and their includes)" \
  "$(grep -v '^MISSING' <<<"$reached")" "$installed_headers"
for private in generate/generation_session.h model/forward_pass.h cli/model_run.h serve/slot_scheduler.h; do
  holds "private header $private not installed" "[ ! -e '$inc/$private' ] && [ -f '$K3_SOURCE_DIR/lib/$private' ]"
done

# A program embedding the library through the public set alone (its only
# include path is the installed one): the tiny model's greedy ids from the
# golden prompt are the golden ids.
mkdir -p "$work/embed"
cat > "$work/embed/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.22)
project(k3_embed LANGUAGES CXX C)
set(CMAKE_CXX_STANDARD 20)
find_package(k3 REQUIRED)
add_executable(embed main.cpp)
target_link_libraries(embed PRIVATE k3::k3)
CMAKE
cat > "$work/embed/main.cpp" <<'CPP'
// embed MODEL_DIR STEPS PROMPT_ID...: the greedy ids after the prompt, one a line.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "common/error.h"
#include "engine/model.h"
#include "engine/session.h"
int main(int argc, char** argv) {
  try {
    k3::ModelParams params;
    params.threads = 2;
    std::unique_ptr<k3::Model> model = k3::Model::open(argv[1], params);
    std::vector<int32_t> prompt;
    for (int i = 3; i < argc; ++i) prompt.push_back(std::atoi(argv[i]));
    k3::GenerationOptions options;
    options.stop = k3::StopConditions(model->config().eos_token_ids, {}, /*ignore_eos=*/true);
    k3::Session s = model->session(options);
    s.prefill(prompt);
    s.generate(std::atoi(argv[2]), [](int32_t id) { std::printf("%d\n", id); });
  } catch (const k3::Error& e) {
    std::fprintf(stderr, "embed: %s\n", e.what());
    return static_cast<int>(e.code());
  }
}
CPP
cmake -S "$work/embed" -B "$work/embed/build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" > "$work/embed.log" 2>&1 &&
  cmake --build "$work/embed/build" >> "$work/embed.log" 2>&1
rc=$?
check "embedding program builds against the public headers" 0 "$rc"
[ "$rc" -eq 0 ] || tail -20 "$work/embed.log"
golden() {  # golden KEY: the greedy case's value, a list as space-separated numbers
  python3 -c 'import json, sys; v = json.load(open(sys.argv[1]))["greedy"][sys.argv[2]]
print(*(v if isinstance(v, list) else [v]))' "$DATA/k3-tiny/golden.json" "$1"
}
read -ra prompt_ids <<<"$(golden prompt_ids)"
embedded=$("$work/embed/build/embed" "$DATA/k3-tiny" "$(golden steps)" "${prompt_ids[@]}" 2> "$work/embed.err" | paste -sd' ')
check "embedding program's greedy ids = the golden ids" "$(golden ids)" "$embedded"
[ -s "$work/embed.err" ] && cat "$work/embed.err"

finish install_test
