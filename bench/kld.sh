#!/usr/bin/env bash
# Quant quality the way llama.cpp users measure it: every llama-quantize mix and every i-quant,
# written by `switchyard quantize --imatrix`, against the F16 model, by KL divergence of the
# token distributions (perplexity --kl-divergence) over a text.
#
#   bench/kld.sh [--preset tiny|mini] [--chunks N] [-c CTX] [--types "IQ2_XXS Q2_K ..."]
#                [--pure "iq2_k q2_K ..."] [-o report.md]
#
# Writes the F16 model (make-model --seed 7), an importance matrix over the first half of the
# text, the F16 model's log-probabilities over the second half (--kl-divergence-base), then for
# each mix or type: quantize --imatrix, perplexity --kl-divergence, one table row (file size, bits
# per weight, PPL ratio, mean and 99th-percentile KLD, same top token). The text is the
# repository's own documentation (a fixed, reproducible text). Synthetic models have random
# weights: the figures compare quantizers, they do not predict a real model's quality.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
preset=tiny chunks=8 ctx=256 out=""
mixes="Q2_K Q3_K_M Q4_K_M Q5_K_M Q6_K IQ1_S IQ1_M IQ2_XXS IQ2_XS IQ2_S IQ2_M IQ3_XXS IQ3_S IQ3_M IQ4_XS"
pures="iq1_s iq1_m iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s q2_K q3_K"
while [ $# -gt 0 ]; do
  case $1 in
    --preset) preset=$2; shift 2 ;;
    --chunks) chunks=$2; shift 2 ;;
    -c) ctx=$2; shift 2 ;;
    --types) mixes=$2; pures=""; shift 2 ;;
    --pure) pures=$2; mixes=""; shift 2 ;;  # types given to every tensor (--rule ".=TYPE")
    -o) out=$2; shift 2 ;;
    *) echo "usage: bench/kld.sh [--preset tiny|mini] [--chunks N] [-c CTX] [--types LIST] [--pure LIST] [-o FILE]" >&2; exit 2 ;;
  esac
done
sy=$root/build/bin/switchyard
[ -x "$sy" ] || { echo "bench/kld.sh: build first (cmake --build build)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/switchyard-kld.XXXXXX"); trap 'rm -rf "$work"' EXIT

cat "$root"/README.md "$root"/docs/*.md "$root"/llm/README.md "$root"/plugins/*/README.md >"$work/all.txt"
half=$(($(wc -l <"$work/all.txt") / 2))
head -n "$half" "$work/all.txt" >"$work/calib.txt"
tail -n +"$((half + 1))" "$work/all.txt" >"$work/eval.txt"

"$sy" make-model --preset "$preset" --type f16 --seed 7 -o "$work/f16.gguf" >/dev/null 2>&1
"$sy" imatrix -m "$work/f16.gguf" -f "$work/calib.txt" -c "$ctx" --chunks "$chunks" --no-ppl \
  -o "$work/imatrix.gguf" >/dev/null 2>"$work/err" || { cat "$work/err"; exit 1; }
"$sy" perplexity -m "$work/f16.gguf" -f "$work/eval.txt" -c "$ctx" --chunks "$chunks" \
  --kl-divergence-base "$work/base.kld" >"$work/f16.out" 2>&1 || { cat "$work/f16.out"; exit 1; }

report() {
  echo "# Quant quality: KL divergence against F16 ($preset preset, synthetic weights)"
  echo
  echo "- $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); $(date -u +%Y-%m-%d)"
  echo "- text: the repository's documentation; imatrix over the first half, $chunks chunks of $ctx"
  echo "  tokens of the second half scored; \`bench/kld.sh --preset $preset --chunks $chunks -c $ctx\`"
  echo
  echo "| file | MiB | bpw | PPL(Q)/PPL(base) | mean KLD | 99% KLD | same top |"
  echo "|---|--:|--:|--:|--:|--:|--:|"
  for name in $mixes $pures; do
    if [ -n "$pures" ] && [[ " $pures " == *" $name "* ]]; then
      label="$name (every tensor)"
      args=(q8_0 --rule ".=$name")
    else
      label="$name mix"
      args=("$name")
    fi
    "$sy" quantize "$work/f16.gguf" "$work/q.gguf" "${args[@]}" --imatrix "$work/imatrix.gguf" \
      >"$work/q.out" 2>&1 || { echo "| $label | quantize failed: $(tail -1 "$work/q.out") |"; continue; }
    "$sy" perplexity -m "$work/q.gguf" --kl-divergence-base "$work/base.kld" --kl-divergence \
      >"$work/k.out" 2>&1 || { echo "| $label | perplexity failed: $(tail -1 "$work/k.out") |"; continue; }
    bytes=$(stat -c %s "$work/q.gguf")
    python3 - "$work/k.out" "$label" "$bytes" "$work/f16.gguf" <<'PY'
import os, re, sys
text = open(sys.argv[1]).read()
def grab(pattern):
    m = re.search(pattern, text, re.M)
    return m.group(1) if m else "?"
ratio = grab(r"^Mean\s+PPL\(Q\)/PPL\(base\)\s*:\s*([0-9.]+)")
kld = grab(r"^Mean\s+KLD:\s*([0-9.e+-]+)")
k99 = grab(r"^99\.0%\s+KLD:\s*([0-9.e+-]+)")
top = grab(r"^Same top p:\s*([0-9.]+\s*±\s*[0-9.]+\s*%)")
size = int(sys.argv[3])
f16 = os.path.getsize(sys.argv[4])
bpw = 16.0 * size / f16  # same tensors; the F16 file's bytes are 16 bits per weight (plus metadata)
print(f"| {sys.argv[2]} | {size / 2**20:.2f} | {bpw:.2f} | {ratio} | {kld} | {k99} | {top} |")
PY
  done
}
if [ -n "$out" ]; then report | tee "$out"; else report; fi
