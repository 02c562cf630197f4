#!/usr/bin/env bash
# The i-quants' speed on this machine, next to its memory bandwidth measured in the same run:
#   bench/iquants.sh [-t THREADS] [--models DIR] [-o report.md]
# 1. bench/membw.sh, then switchyard-gemv-bench over every i-quant and the reference types
#    (Q4_0, Q2_K, IQ4_XS): a dense GEMV of K = 2048 (the mini preset's hidden size) x 16384 rows,
#    and the routed-expert products of one token on the mini's expert shape (64 experts of
#    2048 x 1408, 6 used), both streaming their weights from memory; then membw again.
# 2. Token generation (tg128) and prompt processing (pp512) of a mini-preset file of each type
#    (make-model --type T: every matrix in T, except ffn_down_exps whose rows of 1408 fall back
#    to IQ4_NL) next to Q4_0, with switchyard bench (interleaved repetitions).
# 3. bench/tg_bound.sh on the same files: generation's weight bytes per token x t/s over membw.
# The mini files are made once in --models (default build/iquant-models, ~0.5-0.9 GB each).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
threads=$(nproc) models=$root/build/iquant-models out=""
while [ $# -gt 0 ]; do
  case $1 in
    -t) threads=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    -o) out=$2; shift 2 ;;
    *) echo "usage: bench/iquants.sh [-t THREADS] [--models DIR] [-o FILE]" >&2; exit 2 ;;
  esac
done
sy=$root/build/bin/switchyard gemv=$root/build/bin/switchyard-gemv-bench
[ -x "$sy" ] && [ -x "$gemv" ] || { echo "bench/iquants.sh: build first (cmake --build build)" >&2; exit 1; }
types="q4_0 iq4_xs iq3_s iq3_xxs iq2_s iq2_xs iq2_xxs iq1_m iq1_s"
mkdir -p "$models"
for t in $types; do
  [ -f "$models/mini-$t.gguf" ] ||
    "$sy" make-model --preset mini --type "$t" -o "$models/mini-$t.gguf" >/dev/null 2>&1
done
membw() { "$root/bench/membw.sh" "$threads" | sed -n 's/^read bandwidth: \([0-9.]*\) GB\/s.*/\1/p'; }

report() {
  echo "# The i-quants' speed: $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $threads threads, $(date -u +%Y-%m-%d)"
  echo
  echo "\`bench/iquants.sh -t $threads\` ($("$sy" --version))"
  echo
  local bw
  bw=$(membw)
  echo "## GEMV, weights streamed from memory (membw before: $bw GB/s)"
  echo
  echo '```'
  "$gemv" -t "$threads" --bandwidth "$bw" -k 2048 -n 16384 --reps 30 --gemm-rows 512 \
    --types q4_0,q2_K,iq4_xs,iq3_s,iq3_xxs,iq2_s,iq2_xs,iq2_xxs,iq1_m,iq1_s 2>&1 | tail -n +3
  echo
  "$gemv" -t "$threads" --bandwidth "$bw" -k 2048 -n 1408 --experts 64:6 --reps 300 \
    --types q4_0,q2_K,iq4_xs,iq3_s,iq3_xxs,iq2_s,iq2_xs,iq2_xxs,iq1_m,iq1_s 2>&1 | tail -n +3
  echo '```'
  echo
  echo "membw after: $(membw) GB/s"
  echo
  echo "## Mini preset: pp512 and tg128 (switchyard bench -r 3 --interleave)"
  echo
  local list=""
  for t in $types; do list+="${list:+,}$models/mini-$t.gguf"; done
  "$sy" bench -m "$list" -p 512 -n 128 -r 3 --interleave -t "$threads" 2>/dev/null
  echo
  echo "## Generation against the bandwidth bound (bench/tg_bound.sh -r 1 -n 100)"
  echo
  echo '```'
  local files=()
  for t in $types; do files+=("$models/mini-$t.gguf"); done
  "$root/bench/tg_bound.sh" -r 1 -n 100 -t "$threads" "${files[@]}"
  echo '```'
}
if [ -n "$out" ]; then report | tee "$out"; else report; fi
