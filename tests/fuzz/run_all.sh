#!/usr/bin/env bash
# Every libFuzzer target, each for SECONDS (default 60), built with clang++
# (-fsanitize=fuzzer,address,undefined) in WORKDIR (default: a temporary folder) and seeded with
# the committed corpora; fails on any crash, leak, timeout or sanitizer report and prints the
# executions of each target:
#   tokenizer     any bytes through the DeepSeek-LLM vocabulary: encode (with or without
#                 special tokens, and as a chat turn: the first byte picks), decode of the ids
#                 and of the bytes as ids; 2 s per input
#   config        any text as a configuration file (SY_FUZZ_CONFIG_REPLAY=1: replay its corpus only)
#   cost_table    any text as a cost table, and what parses written back and read again
#   model         any bytes as a DeepSeek2 model file, loaded short of computing (seeded with two
#                 micro models the target writes)
#   gguf_reader   any bytes as a GGUF file (tests/gguf/fuzz)
# SY_FUZZ_TARGETS="a b" runs only those; SY_FUZZ_FLAGS adds libFuzzer flags to every run (a long
# run: SY_FUZZ_FLAGS="-runs=10000000 -max_total_time=0"); SY_FUZZ_JOBS=N runs N processes per
# target (with -runs, each makes that many).
# Usage: tests/fuzz/run_all.sh [SECONDS] [WORKDIR]
set -euo pipefail
seconds=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${2:-$(mktemp -d)}
mkdir -p "$work"
targets=${SY_FUZZ_TARGETS:-tokenizer config cost_table model gguf_reader}
read -r -a extra <<<"${SY_FUZZ_FLAGS:-}"
cxx=${CXX:-}
if [ -z "$cxx" ] || ! "$cxx" --version 2>/dev/null | grep -q clang; then
  cxx=$(command -v clang++ || command -v clang++-14)
fi
# NDEBUG as in every build the project makes: toml++ 3.3's debug assertions fire on some
# malformed keys that its release code reports as parse errors (seen by the config target).
flags=(-std=c++20 -O1 -g -DNDEBUG -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=undefined -I"$root/llm/include" -I"$root/llm/src"
       -I"$root/core/include" -I"$root/sdk/include" -I"$root/sdk/quants/include")
gguf=("$root"/llm/src/{gguf_layout,gguf_value,gguf_parser,gguf_reader,host_memory}.cpp)
# The GGUF layer sizes ik_llama.cpp's row-interleaved types by their descriptions.
interleaved=("$root"/sdk/quants/src/{interleaved,interleaved_layouts}.cpp)
# The version header CMake configures, for the plugin host the model target links (a model
# chooses its named ops by asking a plugin).
mkdir -p "$work/include/switchyard"
sed -e 's/@PROJECT_VERSION@/fuzz/' -e 's/@SWITCHYARD_GIT_COMMIT@/fuzz/' \
    -e 's/@SWITCHYARD_BUILD_NUMBER@/0/' "$root/core/include/switchyard/version.hpp.in" \
    >"$work/include/switchyard/version.hpp"
flags+=(-I"$work/include")
wants() { [[ " $targets " == *" $1 "* ]]; }

# Each source is compiled once into an object (the targets share the GGUF and core sources), one
# clang per core, then each target is linked from its objects; a failed build stops the script.
# plugin_host.cpp (in the model target) takes the plugin folder's place as a define.
flags+=(-DSWITCHYARD_PLUGIN_RELATIVE_DIR='"lib/switchyard"')
mkdir -p "$work/obj"
declare -A object_of=()
sources=()
target_names=()
build() {  # NAME SOURCES-AND-LIBS... (arguments that start with - are passed to the link)
  local name=$1 arg
  shift
  local -n link=link_$name
  link=()
  for arg in "$@"; do
    if [[ $arg == -* ]]; then
      link+=("$arg")
      continue
    fi
    if [ -z "${object_of[$arg]+set}" ]; then
      local rel=${arg#"$root"/}
      object_of[$arg]="$work/obj/${rel//\//_}.o"
      sources+=("$arg")
    fi
    link=("${object_of[$arg]}" "${link[@]}")
  done
  target_names+=("$name")
}
wants tokenizer && build tokenizer "$here/tokenizer_fuzz.cpp" \
  "$root"/llm/src/{tokenizer,added_tokens,bpe_vocab,chat_template}.cpp "${gguf[@]}" \
  "${interleaved[@]}" -licuuc
wants config && build config "$here/config_fuzz.cpp" \
  "$root"/core/src/{config,toml_text,policy,text_file,error}.cpp -lfmt
wants cost_table && build cost_table "$here/cost_table_fuzz.cpp" \
  "$root"/core/src/{cost_table,toml_text,error,text_file,graph,node_abi,tensor}.cpp -lfmt
wants model && build model "$here/model_fuzz.cpp" "${gguf[@]}" \
  "$root"/llm/models/{deepseek2_load,deepseek2,deepseek2_cache}.cpp \
  "$root"/llm/src/{kv_cache,fused_ops,gguf_writer,tokenizer,added_tokens,bpe_vocab}.cpp \
  "$root"/llm/src/{synthetic_model,chat_template,tensor_types,file_type,interleaved_tensors}.cpp \
  "$root"/sdk/quants/src/*.cpp "$root"/core/src/{error,tensor,graph,graph_ops,plugin_host}.cpp \
  -licuuc -lfmt -ldl
cores=$(nproc)
compile_failed=""
declare -A compiling=()
finish_one() {  # waits for one compile; remembers a failure
  local pid
  wait -n -p pid || compile_failed=${compiling[$pid]}
  unset "compiling[$pid]"
}
for src in "${sources[@]}"; do
  [ -n "$compile_failed" ] && break
  "$cxx" "${flags[@]}" -c "$src" -o "${object_of[$src]}" >"${object_of[$src]}.log" 2>&1 &
  compiling[$!]=$src
  [ "${#compiling[@]}" -lt "$cores" ] || finish_one
done
while [ "${#compiling[@]}" -gt 0 ]; do finish_one; done
if [ -n "$compile_failed" ]; then
  echo "$compile_failed: the build FAILED; its log:"
  tail -n 40 "${object_of[$compile_failed]}.log"
  exit 1
fi
for name in "${target_names[@]}"; do
  declare -n link=link_$name
  if ! "$cxx" "${flags[@]}" "${link[@]}" -o "$work/$name" >"$work/$name.build.log" 2>&1; then
    echo "$name: the link FAILED; its log:"
    tail -n 40 "$work/$name.build.log"
    exit 1
  fi
  unset -n link
done

failed=0
# SY_FUZZ_JOBS=N runs N libFuzzer processes per target on one corpus (libFuzzer's -jobs and
# -workers; each picks up what the others find); the executions reported are their sum.
jobs=${SY_FUZZ_JOBS:-1}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "run_all.sh: SY_FUZZ_JOBS must be a positive count"; exit 2; }
run() {  # NAME TIMEOUT MAX_LEN MALLOC_LIMIT_MB CORPUS...
  local name=$1 timeout=$2 max_len=$3 malloc_limit=$4
  shift 4
  mkdir -p "$work/$name-corpus"
  local log="$work/$name.log" logs=("$work/$name.log") parallel=() start
  if [ "$jobs" -gt 1 ]; then
    rm -rf "$work/$name-jobs" && mkdir -p "$work/$name-jobs"
    parallel=(-jobs="$jobs" -workers="$jobs")
    logs=()
    for ((k = 0; k < jobs; ++k)); do logs+=("$work/$name-jobs/fuzz-$k.log"); done
  fi
  start=$(date +%s)
  if (cd "$work/$name-jobs" 2>/dev/null || cd "$work"
      "$work/$name" "$work/$name-corpus" "$@" -max_total_time="$seconds" -timeout="$timeout" \
        -rss_limit_mb=2048 -malloc_limit_mb="$malloc_limit" -max_len="$max_len" \
        -print_final_stats=1 -artifact_prefix="$work/$name-" "${extra[@]}" "${parallel[@]}") \
      >"$log" 2>&1; then
    local runs
    runs=$(cat "${logs[@]}" | sed -n 's/^stat::number_of_executed_units: *//p' |
           awk '{s += $1} END {print s}')
    echo "$name: $runs executions in $(($(date +%s) - start)) s$([ "$jobs" -gt 1 ] &&
         echo " ($jobs processes)"), no failure"
  else
    echo "$name: FAILED (log: $log$([ "$jobs" -gt 1 ] && echo " and $work/$name-jobs/");" \
         "reproducer in $work/)"
    tail -n 30 "${logs[@]}"
    failed=1
  fi
}
export SY_FUZZ_VOCAB="$root/tests/data/vocab/ggml-vocab-deepseek-llm.gguf"
wants tokenizer && run tokenizer 2 65536 1024 "$here/corpus/tokenizer"
# The config target's findings so far are all one toml++ 3.3 fault (see
# docs/untrusted-inputs.md), worked around by toml_text.cpp; CI (SY_FUZZ_CONFIG_REPLAY=1)
# replays its corpus, which holds each finding, instead of mutating for new ones.
if wants config && [ "${SY_FUZZ_CONFIG_REPLAY:-0}" = 1 ]; then
  if "$work/config" "$here"/corpus/config/* >"$work/config.log" 2>&1; then
    echo "config: $(ls "$here"/corpus/config | wc -l) corpus inputs replayed, no failure"
  else
    echo "config: FAILED replaying the corpus (log: $work/config.log)"
    tail -n 30 "$work/config.log"
    failed=1
  fi
elif wants config; then
  run config 5 8192 1024 "$here/corpus/config"
fi
wants cost_table && run cost_table 5 8192 1024 "$here/corpus/cost_table"
if wants model; then
  SY_FUZZ_MODEL_SEEDS="$work/model-seeds" "$work/model"
  # Inputs of at most 256 KiB: no allocation may pass 128 MiB (the metadata budget is 64 MiB
  # plus 4 bytes per byte of the file; everything else is sized by tensors the file holds).
  run model 10 262144 128 "$work/model-seeds"
fi
if wants gguf_reader; then
  if "$root/tests/gguf/fuzz/run_fuzz.sh" "$seconds" "$work/gguf" >"$work/gguf_reader.log" 2>&1; then
    echo "gguf_reader: $(sed -n 's/^stat::number_of_executed_units: *//p' "$work/gguf_reader.log")" \
      "executions in $(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$work/gguf_reader.log") s, no failure"
  else
    echo "gguf_reader: FAILED (log: $work/gguf_reader.log)"
    tail -n 30 "$work/gguf_reader.log"
    failed=1
  fi
fi
exit $failed
