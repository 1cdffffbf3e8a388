#!/usr/bin/env bash
# Installs what k3 needs from Debian's packages, and says what and why.
# Usage: scripts/install-deps.sh [--tests] [--llamacpp]   (as root, or with sudo available)
#   (none)      what building and running the tools needs (the README's first command)
#   --tests     also what the test suite needs (scripts/test.sh and CI pass it):
#               GoogleTest, clang and its sanitizer runtime, clang-format, the
#               screen tests' terminal emulator, a headless browser for the chat
#               page, node and npm for the OpenAI client tests, man page renderers
#   --list      print the packages (one a line) instead of installing them
#   --llamacpp  also what bench/llamacpp/e2e.sh needs to build llama.cpp and
#               run its converter (not needed to build or test k3)
set -euo pipefail
packages=(
  cmake g++ make pkg-config python3
  libcli11-dev libsimdjson-dev libxxhash-dev libzstd-dev libhwy-dev
  libpcre2-dev libicu-dev libcurl4-openssl-dev libssl-dev libcpp-httplib-dev libedit-dev
  libvulkan-dev glslc  # the Vulkan compute path (--gpu); k3 builds without them, refusing --gpu
)
test_packages=(
  libgtest-dev                           # the GoogleTest programs
  fio                                    # bench/stream_bench.sh's reference reads
  groff-base bsdextrautils               # install_test renders the man pages (groff, col)
  python3-pyte                           # the screen tests render the terminal as a person sees it
  tmux                                   # k3_chat_exit_test types into k3-chat in a real terminal
  clang libclang-rt-14-dev clang-format  # the sanitizer build; scripts/format.sh
  chromium fonts-dejavu-core             # the chat page's test runs it in a real headless browser (k3_serve_web_test)
  mesa-vulkan-drivers vulkan-validationlayers  # tests/gpu: lavapipe (Vulkan on the CPU), validation on
)
what="building and running k3"
list=0
for option in "$@"; do
  case "$option" in
    --list) list=1 ;;
    --tests)
      what="building, running and testing k3"
      packages+=("${test_packages[@]}")
      # k3-serve's client tests drive it with the `openai` npm package: Debian's
      # node and npm only where no node/npm is on the PATH already (Debian's npm
      # conflicts with a Node that ships its own).
      command -v node > /dev/null || packages+=(nodejs)
      command -v npm > /dev/null || packages+=(npm)
      ;;
    --llamacpp) packages+=(git ninja-build python3-torch python3-numpy python3-yaml python3-tqdm) ;;
    *) echo "install-deps: unknown option '$option' (--tests, --list, --llamacpp)" >&2; exit 2 ;;
  esac
done
if [ $list = 1 ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages for $what present"
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${#missing[@]} Debian packages for $what: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
