#!/usr/bin/env bash
# Installs everything k3 needs to build and test, from Debian's packages.
# Usage: scripts/install-deps.sh [--llamacpp]   (as root, or with sudo available)
#   --llamacpp  also what bench/llamacpp/e2e.sh needs to build llama.cpp and
#               run its converter (not needed to build or test k3)
set -euo pipefail
packages=(
  cmake g++ make pkg-config python3
  libcli11-dev libsimdjson-dev libxxhash-dev libzstd-dev libgtest-dev libhwy-dev
  libpcre2-dev libicu-dev libcurl4-openssl-dev libssl-dev libcpp-httplib-dev libedit-dev
  fio
  groff-base bsdextrautils
  python3-pyte  # the screen tests render the terminal as a person sees it
  clang libclang-rt-14-dev clang-format  # clang-format: scripts/format.sh
  chromium fonts-dejavu-core  # the chat page's test runs it in a real headless browser (k3_serve_web_test)
)
case "${1:-}" in
  --llamacpp) packages+=(git ninja-build python3-torch python3-numpy python3-yaml python3-tqdm) ;;
  "") ;;
  *) echo "install-deps: unknown option '$1' (--llamacpp)" >&2; exit 2 ;;
esac
missing=()
# k3-serve's client tests drive it with the `openai` npm package: Debian's
# node and npm only where no node/npm is on the PATH already (Debian's npm
# conflicts with a Node that ships its own).
command -v node > /dev/null || packages+=(nodejs)
command -v npm > /dev/null || packages+=(npm)
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
