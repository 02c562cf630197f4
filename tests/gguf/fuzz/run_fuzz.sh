#!/usr/bin/env bash
# Fuzzes the GGUF reader with libFuzzer for SECONDS (default 60): builds the reader sources and
# the target with clang++ (-fsanitize=fuzzer,address,undefined) in WORKDIR (default: a temp
# folder), seeds it with corpus/, and fails on any crash, leak, timeout or sanitizer report.
# Usage: run_fuzz.sh [SECONDS] [WORKDIR]
set -euo pipefail
seconds=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
work=${2:-$(mktemp -d)}
mkdir -p "$work/corpus"
cxx=${CXX:-}
if [ -z "$cxx" ] || ! "$cxx" --version 2>/dev/null | grep -q clang; then
  cxx=$(command -v clang++ || command -v clang++-14)
fi

"$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$root/llm/include" -I"$root/llm/src" -I"$root/core/include" -I"$root/sdk/include" \
  -I"$root/sdk/quants/include" \
  "$root"/sdk/quants/src/interleaved.cpp "$root"/sdk/quants/src/interleaved_layouts.cpp \
  "$root"/llm/src/gguf_layout.cpp "$root"/llm/src/gguf_value.cpp \
  "$root"/llm/src/gguf_parser.cpp "$root"/llm/src/gguf_reader.cpp "$root"/llm/src/host_memory.cpp \
  "$here/gguf_reader_fuzz.cpp" -o "$work/gguf_reader_fuzz"

# New inputs go to the work corpus; the committed seeds are read only. SY_FUZZ_FLAGS adds
# libFuzzer flags (tests/fuzz/run_all.sh).
read -r -a extra <<<"${SY_FUZZ_FLAGS:-}"
"$work/gguf_reader_fuzz" "$work/corpus" "$here/corpus" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 \
  -max_len=4096 -print_final_stats=1 -artifact_prefix="$work/" "${extra[@]}" 2>&1 | tail -n 25
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  echo "run_fuzz.sh: the fuzzer found a problem (exit $status); reproducer in $work/" >&2
  exit 1
fi
