#!/usr/bin/env bash
# The headline table (bench/results/headline.md), reproducible: builds switchyard (Release) if
# needed, writes the synthetic mini model in Q8_0 and Q4_0, and runs `switchyard bench` for pp512, tg128 and
# tg128 @ d2048 in every attention mode (--mla 0-3) with the fused MoE op on and off, the
# repetitions interleaved over the combinations (bench --interleave). Prints a
# markdown report: the machine (CPU, cores, memory bandwidth measured before and after, as it
# moves on shared machines), the table (t/s, mean ± sd of -r repetitions), and the commands.
#
#   bench/headline.sh [-r N] [-o report.md] [--models DIR] [--compare OLD.md]
#
# --compare: then compares the new table with an earlier report (bench/headline_compare.py:
# cell by cell, new/old and whether within twice the two runs' combined sd; per test the
# median ratio), e.g. with the committed bench/results/headline.md.
#
# Memory bandwidth is measured with bench/membw.sh when it is
# there, or with the program MEMBW names; otherwise the report says it was not measured.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
reps=3
report=""
models="$root/build/bench-models"
compare=""
while [ $# -gt 0 ]; do
  case $1 in
    -r) reps=$2; shift 2 ;;
    -o) report=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --compare) compare=$2; shift 2 ;;
    *) echo "usage: bench/headline.sh [-r N] [-o report.md] [--models DIR] [--compare OLD.md]" >&2; exit 2 ;;
  esac
done
sy=$root/build/bin/switchyard
if [ -n "$compare" ] && [ ! -f "$compare" ]; then
  echo "bench/headline.sh: --compare $compare: no such report" >&2
  exit 2
fi
# Up to date with the checkout (an incremental build when one is there).
[ -f "$root/build/CMakeCache.txt" ] || cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build" -j"$(nproc)" --target switchyard >/dev/null
mkdir -p "$models"
for type in q8_0 q4_0; do
  [ -s "$models/mini-$type.gguf" ] ||
    "$sy" make-model --preset mini --type $type -o "$models/mini-$type.gguf" >/dev/null
done
membw=${MEMBW:-$root/bench/membw.sh}
bandwidth() { if [ -x "$membw" ]; then "$membw" 2>/dev/null | grep -o '[0-9.]* GB/s' | head -1; else echo "not measured"; fi; }

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
bw_before=$(bandwidth)
# Interleaved: repetition k of every combination runs in round k, so each cell's mean and sd
# cover the whole run's machine states (shared machines' memory bandwidth moves from minute to
# minute) instead of one stretch of it.
common=(-m "$models/mini-q8_0.gguf,$models/mini-q4_0.gguf" -mla 0,1,2,3 -fmoe 0,1 -r "$reps" --interleave -o jsonl)
"$sy" bench "${common[@]}" -p 512 -n 128 >"$work/b.jsonl"
"$sy" bench "${common[@]}" -p 0 -n 128 -d 2048 >>"$work/b.jsonl"
bw_after=$(bandwidth)

{
  echo "# switchyard headline benchmark"
  echo
  echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ), $("$sy" --version)"
  echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores"
  echo "- memory read bandwidth (membw.sh, all cores): $bw_before before, $bw_after after"
  echo "- models: synthetic mini preset (DeepSeek-V2-Lite layer widths, 4 layers), make-model --preset mini"
  echo "- command: bench/headline.sh -r $reps (switchyard bench --interleave: one repetition of every combination per round)"
  echo
  python3 "$root/bench/headline_table.py" "$work/b.jsonl"
} | if [ -n "$report" ]; then tee "$report"; else cat; fi
if [ -n "$compare" ]; then
  echo
  echo "## Compared with $compare"
  echo
  python3 "$root/bench/headline_table.py" "$work/b.jsonl" >"$work/new.md"
  python3 "$root/bench/headline_compare.py" "$compare" <(echo "- memory read bandwidth (membw.sh, all cores): $bw_before before, $bw_after after"; cat "$work/new.md")
fi
