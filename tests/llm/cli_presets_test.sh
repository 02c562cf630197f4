#!/usr/bin/env bash
# Every llama-quantize mix, written by switchyard quantize --imatrix from a tiny f32 model, loads
# and generates; general.file_type names the mix; its tensors come back as the types the file
# says, and greedy generation of the mix and of the same mix's --pure base type both run. Also a
# pure file of each i-quant generates the same first token with -ub 1 and -ub 64 (the kernels'
# GEMV and GEMM forms agree).
set -u
sy=$1
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

"$sy" make-model --preset tiny --type f32 -o "$tmp/tiny.gguf" >/dev/null 2>&1 || fail "make-model"
python3 -c "
import random
random.seed(5)
w='a model of experts routes each token to a few of them and sums what they say'.split()
print(' '.join(random.choice(w) for _ in range(1200)))" >"$tmp/text.txt"
"$sy" imatrix -m "$tmp/tiny.gguf" -f "$tmp/text.txt" -c 64 --chunks 2 --no-ppl -o "$tmp/im.gguf" \
  >/dev/null 2>"$tmp/err" || fail "imatrix: $(cat "$tmp/err")"

# mix -> general.file_type (llama.cpp's LLAMA_FTYPE ids)
for pair in Q2_K:10 Q3_K_M:12 Q4_K_M:15 Q5_K_M:17 Q6_K:18 IQ1_S:24 IQ1_M:31 IQ2_XXS:19 \
  IQ2_XS:20 IQ2_S:28 IQ2_M:29 IQ3_XXS:23 IQ3_S:26 IQ3_M:27 IQ4_XS:30; do
  mix=${pair%%:*}; ftype=${pair##*:}
  "$sy" quantize "$tmp/tiny.gguf" "$tmp/$mix.gguf" "$mix" --imatrix "$tmp/im.gguf" \
    >"$tmp/out" 2>"$tmp/err" || fail "quantize $mix: $(cat "$tmp/err")"
  "$sy" inspect "$tmp/$mix.gguf" >"$tmp/inspect" 2>&1 || fail "inspect $mix"
  grep -Eq "general.file_type *u32 *$ftype\b" "$tmp/inspect" ||
    fail "$mix: general.file_type is not $ftype: $(grep file_type "$tmp/inspect")"
  "$sy" run -m "$tmp/$mix.gguf" -p "a model of" -n 4 --temp 0 --ignore-eos --tokens >"$tmp/gen" 2>"$tmp/err" ||
    fail "run $mix: $(tail -5 "$tmp/err")"
  [ "$(grep -o '\[[0-9]*\]' "$tmp/gen" | wc -l)" -ge 4 ] ||
    fail "run $mix printed too few tokens: $(cat "$tmp/gen")"
  rm -f "$tmp/$mix.gguf"
done

# Each i-quant as the experts' type (the rest q8_0): GEMV (-ub 1) and GEMM (-ub 64) give the same
# tokens. (The lower-case names iq2_s etc. select llama-quantize's mixes; a rule names the type.)
for t in iq1_s iq1_m iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s; do
  "$sy" quantize "$tmp/tiny.gguf" "$tmp/$t.gguf" q8_0 --rule "_exps=$t" --imatrix "$tmp/im.gguf" \
    >/dev/null 2>"$tmp/err" || fail "quantize experts to $t: $(cat "$tmp/err")"
  "$sy" inspect "$tmp/$t.gguf" 2>&1 | grep -Eq "ffn_up_exps.weight +$t\b" ||
    fail "$t: experts are not $t"
  ids() {
    "$sy" run -m "$tmp/$t.gguf" -p "each token to a few" -n 6 --temp 0 --ignore-eos --tokens "$@" 2>/dev/null |
      grep -o '\[[0-9]*\]' | head -3 | tr -d '\n'
  }
  a=$(ids -ub 1); b=$(ids -ub 64)
  [ -n "$a" ] || fail "$t: no tokens"
  [ "$a" = "$b" ] || fail "$t: the first tokens with -ub 1 and -ub 64 differ: $a vs $b"
done
echo "PASS: 15 mixes and 7 i-quant expert files load and generate"
