#!/usr/bin/env bash
# Every libFuzzer target, each for SECONDS (default 60), built with clang++
# (-fsanitize=fuzzer,address,undefined) in WORKDIR (default: a temporary folder) and seeded with
# the committed corpora; fails on any crash, leak, timeout or sanitizer report and prints the
# executions of each target:
#   gguf_reader   any bytes as a GGUF file (tests/gguf/fuzz)
#   tokenizer     any bytes through the DeepSeek-LLM vocabulary: encode (with and without
#                 special tokens), decode of the ids and of the bytes as ids; 2 s per input
#   config        any text as a configuration file (SY_FUZZ_CONFIG_REPLAY=1: replay its corpus only)
# Usage: tests/fuzz/run_all.sh [SECONDS] [WORKDIR]
set -euo pipefail
seconds=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${2:-$(mktemp -d)}
mkdir -p "$work"
cxx=${CXX:-}
if [ -z "$cxx" ] || ! "$cxx" --version 2>/dev/null | grep -q clang; then
  cxx=$(command -v clang++ || command -v clang++-14)
fi
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -I"$root/llm/include" -I"$root/llm/src" -I"$root/core/include" -I"$root/sdk/include")
gguf=("$root"/llm/src/gguf_layout.cpp "$root"/llm/src/gguf_value.cpp "$root"/llm/src/gguf_parser.cpp
      "$root"/llm/src/gguf_reader.cpp "$root"/llm/src/host_memory.cpp)

build() {  # NAME SOURCES-AND-LIBS...
  local name=$1
  shift
  "$cxx" "${flags[@]}" "$@" -o "$work/$name"
}
build tokenizer "$here/tokenizer_fuzz.cpp" "$root"/llm/src/tokenizer.cpp "$root"/llm/src/added_tokens.cpp \
  "$root"/llm/src/bpe_vocab.cpp "${gguf[@]}" -licuuc
# NDEBUG as in every build the project makes: toml++ 3.3's debug assertions fire on some
# malformed keys that its release code reports as parse errors (seen by this target).
build config -DNDEBUG "$here/config_fuzz.cpp" "$root"/core/src/config.cpp "$root"/core/src/policy.cpp \
  "$root"/core/src/text_file.cpp "$root"/core/src/error.cpp -lfmt

failed=0
run() {  # NAME CORPUS TIMEOUT MAX_LEN
  local name=$1 corpus=$2 timeout=$3 max_len=$4
  mkdir -p "$work/$name-corpus"
  local log="$work/$name.log"
  if "$work/$name" "$work/$name-corpus" "$corpus" -max_total_time="$seconds" -timeout="$timeout" \
      -rss_limit_mb=2048 -malloc_limit_mb=1024 -max_len="$max_len" -print_final_stats=1 \
      -artifact_prefix="$work/$name-" >"$log" 2>&1; then
    echo "$name: $(sed -n 's/^stat::number_of_executed_units: *//p' "$log") executions in $seconds s, no failure"
  else
    echo "$name: FAILED (log: $log; reproducer in $work/)"
    tail -n 30 "$log"
    failed=1
  fi
}
export SY_FUZZ_VOCAB="$root/tests/data/vocab/ggml-vocab-deepseek-llm.gguf"
run tokenizer "$here/corpus/tokenizer" 2 65536
# The config target's findings so far are all one toml++ 3.3 fault (see
# docs/untrusted-inputs.md), worked around by config.cpp's check; CI (SY_FUZZ_CONFIG_REPLAY=1)
# replays its corpus, which holds each finding, instead of mutating for new ones.
if [ "${SY_FUZZ_CONFIG_REPLAY:-0}" = 1 ]; then
  if "$work/config" "$here"/corpus/config/* >"$work/config.log" 2>&1; then
    echo "config: $(ls "$here"/corpus/config | wc -l) corpus inputs replayed, no failure"
  else
    echo "config: FAILED replaying the corpus (log: $work/config.log)"
    tail -n 30 "$work/config.log"
    failed=1
  fi
else
  run config "$here/corpus/config" 5 8192
fi
if "$root/tests/gguf/fuzz/run_fuzz.sh" "$seconds" "$work/gguf" >"$work/gguf_reader.log" 2>&1; then
  echo "gguf_reader: $(sed -n 's/^stat::number_of_executed_units: *//p' "$work/gguf_reader.log") executions in $seconds s, no failure"
else
  echo "gguf_reader: FAILED (log: $work/gguf_reader.log)"
  tail -n 30 "$work/gguf_reader.log"
  failed=1
fi
exit $failed
