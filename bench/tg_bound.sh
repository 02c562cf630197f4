#!/usr/bin/env bash
# Token generation against the memory-bandwidth bound (>= 70% of the bound is the target).
#   bench/tg_bound.sh [-r ROUNDS] [-n TOKENS] [-t THREADS] [-a "RUN FLAGS"] MODEL.gguf [MODEL.gguf ...]
# Each round runs, per model, bench/membw.sh (or $MEMBW), then
# `switchyard run -n TOKENS --no-mmap` on the cpu plugin alone; the machine's bandwidth is taken
# as the mean of the membw readings just before and just after the run (it moves from minute to
# minute on shared machines), and the share is the weight bytes the run read per token (run's
# own "weights read per generated token" line) times its t/s over that bandwidth. Prints one line
# per run and the median share per model. With -a, each round runs every model twice, as it is
# and with those flags added (e.g. -a -rtr), so that both see the same minutes of the machine.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
sy=${SWITCHYARD:-$here/build/bin/switchyard}
membw=${MEMBW:-$here/bench/membw.sh}
rounds=5 tokens=200 threads=$(nproc) alt=""
while getopts "r:n:t:a:" opt; do
  case $opt in
    r) rounds=$OPTARG ;;
    n) tokens=$OPTARG ;;
    t) threads=$OPTARG ;;
    a) alt=$OPTARG ;;
    *) echo "usage: $0 [-r ROUNDS] [-n TOKENS] [-t THREADS] [-a \"RUN FLAGS\"] MODEL.gguf ..." >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-r ROUNDS] [-n TOKENS] [-t THREADS] [-a \"RUN FLAGS\"] MODEL.gguf ..." >&2; exit 2; }
flag_sets=("")
[ -z "$alt" ] || flag_sets+=("$alt")
for m in "$@"; do [ -f "$m" ] || { echo "$0: no model file '$m'" >&2; exit 2; }; done
[ -x "$sy" ] || { echo "$0: $sy not built" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '[plugins]\nload = ["cpu"]\n' >"$tmp/cpu.toml"
gbps() { "$membw" "$threads" | sed -n 's/^read bandwidth: \([0-9.]*\) GB\/s.*/\1/p'; }

echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores, $threads threads; $("$sy" --version)"
before=$(gbps)
for ((r = 1; r <= rounds; r++)); do
  for m in "$@"; do
    for flags in "${flag_sets[@]}"; do
      # shellcheck disable=SC2086 # the flags are words to split
      "$sy" run -m "$m" -p "The quick brown fox" -n "$tokens" --temp 0 --ignore-eos --no-mmap \
          -t "$threads" --config "$tmp/cpu.toml" $flags >/dev/null 2>"$tmp/e" \
          || { echo "$0: run failed on $m $flags: $(tail -3 "$tmp/e")" >&2; exit 1; }
      after=$(gbps)
      line=$(grep '^weights read per generated token' "$tmp/e")
      mib=$(sed -n 's/.*token: \([0-9.]*\) MiB.*/\1/p' <<<"$line")
      ts=$(sed -n 's/.* at \([0-9.]*\) t\/s).*/\1/p' <<<"$line")
      python3 - "$m" "$flags" "$mib" "$ts" "$before" "$after" <<'PY' | tee -a "$tmp/rows"
import os, sys
m, flags, (mib, ts, before, after) = sys.argv[1], sys.argv[2], map(float, sys.argv[3:])
m = os.path.basename(m) + (" " + flags if flags else "")
read = mib * 1048576 * ts / 1e9
bound = (before + after) / 2
print(f"{m}\t{ts:.1f} t/s\t{read:.1f} GB/s of weights\tmembw {before:.1f} / {after:.1f}\tshare {read / bound:.3f}")
PY
      before=$after
    done
  done
done
python3 - "$tmp/rows" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    rows.setdefault(f[0], []).append(float(f[4].split()[1]))
for m, shares in rows.items():
    print(f"median share {m}: {statistics.median(shares):.3f} (min {min(shares):.3f}, max {max(shares):.3f}, {len(shares)} runs)")
PY
