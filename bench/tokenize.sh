#!/usr/bin/env bash
# Tokenizer speed on adversarial prompts, with the DeepSeek-LLM vocabulary in tests/data/vocab:
#   bench/tokenize.sh [-o report.md] [SWITCHYARD ...]
# Each input is tokenized by `switchyard tokenize -f FILE --ids` (best of 3 wall times, 60 s at
# most); with
# several switchyard binaries (e.g. an older build) the rows come side by side, interleaved.
# Inputs (written to a temporary folder):
#   letters-80k   80,000 ASCII letters without a space (one pre-token piece)
#   letters-1m    1 MiB of letters without a space
#   cjk-1m        1 MiB of one run of CJK ideographs
#   emoji-1m      1 MiB of emoji
#   invalid-1m    1 MiB of bytes that are not UTF-8
#   prose-1m      1 MiB of English-like words and punctuation
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=""
bins=()
while [ $# -gt 0 ]; do
  case $1 in
    -o) out=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) bins+=("$1"); shift ;;
  esac
done
[ ${#bins[@]} -gt 0 ] || bins=("$root/build/bin/switchyard")
for b in "${bins[@]}"; do
  [ -x "$b" ] || { echo "bench/tokenize.sh: $b is not an executable (build first)" >&2; exit 1; }
done
vocab=$root/tests/data/vocab/ggml-vocab-deepseek-llm.gguf
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

python3 - "$dir" <<'EOF'
import random, sys
d = sys.argv[1]
random.seed(1)
mib = 1 << 20
def write(name, data):
    with open(f"{d}/{name}", "wb") as f:
        f.write(data)
letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
write("letters-80k", "".join(random.choice(letters) for _ in range(80000)).encode())
write("letters-1m", "".join(random.choice(letters) for _ in range(mib)).encode())
write("cjk-1m", "".join(chr(random.randint(0x4E00, 0x9FFF)) for _ in range(mib // 3)).encode())
write("emoji-1m", "".join(chr(random.randint(0x1F300, 0x1F64F)) for _ in range(mib // 4)).encode())
write("invalid-1m", bytes(random.choice([0x80, 0xBF, 0xC0, 0xFE, 0xFF, 0xED]) for _ in range(mib)))
words = ["the", "model", "of", "experts", "routes", "each", "token", "to", "a", "few", "and",
         "weights", "memory", "bandwidth", "is", "what", "limits", "generation", "speed"]
text, n = [], 0
while n < mib:
    w = random.choice(words) + random.choice([" ", " ", " ", ", ", ". ", "\n"])
    text.append(w)
    n += len(w)
write("prose-1m", "".join(text)[:mib].encode())
EOF

# Best wall time of 3 runs, in seconds, and the token count; a run over $limit s is stopped
# (the quadratic tokenizer of older builds needs about an hour for 1 MiB without a space).
limit=60
run() {
  local bin=$1 file=$2 best="" t tokens
  for _ in 1 2 3; do
    local start end
    start=$(date +%s.%N)
    if ! tokens=$(timeout "$limit" "$bin" tokenize -m "$vocab" -f "$file" --ids --no-bos 2>/dev/null |
                  tr ',' '\n' | grep -c '[0-9]'); then
      printf '> %s s' "$limit"
      return
    fi
    end=$(date +%s.%N)
    t=$(echo "$end - $start" | bc)
    if [ -z "$best" ] || [ "$(echo "$t < $best" | bc)" = 1 ]; then best=$t; fi
  done
  printf '%.3f s (%s tokens)' "$best" "$tokens"
}

report() {
  echo "# Tokenizer speed: $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(date -u +%Y-%m-%d)"
  echo
  echo "\`bench/tokenize.sh\`, DeepSeek-LLM vocabulary, \`switchyard tokenize -f FILE --ids\`, best of 3"
  echo
  local header="| input | bytes |" rule="|---|--:|"
  for b in "${bins[@]}"; do
    header+=" $("$b" --version 2>/dev/null | head -1) |"
    rule+="--:|"
  done
  echo "$header"
  echo "$rule"
  for f in letters-80k letters-1m cjk-1m emoji-1m invalid-1m prose-1m; do
    local row
    row="| $f | $(stat -c %s "$dir/$f") |"
    for b in "${bins[@]}"; do row+=" $(run "$b" "$dir/$f") |"; done
    echo "$row"
  done
}
if [ -n "$out" ]; then report | tee "$out"; else report; fi
