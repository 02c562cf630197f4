#!/usr/bin/env bash
# Installs what switchyard needs to build and test on Debian 12 (apt).
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git python3
  libboost-dev            # Boost.DLL: plugin loading
  libtomlplusplus-dev     # toml++: configuration
  libcli11-dev            # CLI11: the command line
  libfmt-dev nlohmann-json3-dev
  libcpp-httplib-dev      # cpp-httplib: switchyard serve
  libicu-dev              # ICU: Unicode categories for the tokenizer's pre-tokenizer
  libre2-dev              # RE2: user regular expressions (-ot, placement rules) in linear time
  libcairo2-dev libfontconfig-dev fonts-dejavu-core # cairo: sweep charts (SVG, PNG)
  libdnnl-dev libopenblas-dev # the blas plugin's engines: oneDNN (default) and OpenBLAS
  libgtest-dev googletest # GoogleTest
  libopenmpi-dev openmpi-bin # the mpi plugin, and mpirun for its tests
  python3-jinja2          # test-time only: chat templates compared with Python's jinja2
  tmux                    # test-time only: run -cnv in a real terminal
  clang libclang-rt-14-dev # libFuzzer for tests/gguf/fuzz
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all installed"
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
# apt's output goes to a log, printed only when it fails, to keep CI logs short.
log=$(mktemp "${TMPDIR:-/tmp}/switchyard-deps.XXXXXX.log")
echo "deps: installing ${missing[*]} (log: $log)"
if ! { $sudo apt-get update -qq && \
       $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  echo "deps: apt-get failed; the last 60 lines of $log:"
  tail -n 60 "$log"
  exit 1
fi
echo "deps: installed"
