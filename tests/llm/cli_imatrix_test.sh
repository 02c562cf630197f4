#!/usr/bin/env bash
# switchyard imatrix and quantize --imatrix on a tiny synthetic model: the GGUF and legacy .dat
# files are written (llama.cpp's keys and tensor names, the .dat's header read back here), a
# quantize with either changes an i-quant's bytes and records the imatrix; mixes set
# general.file_type and their tensors' types; IQ2_XXS without an imatrix, a truncated imatrix and
# one of another model are refused with messages naming why.
set -u
sy=$1
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

"$sy" make-model --preset tiny --type f32 -o "$tmp/tiny.gguf" >/dev/null 2>&1 || fail "make-model"
python3 -c "
import random
random.seed(3)
w='the quick brown fox jumps over a lazy dog while seven wizards hex jolly zebras'.split()
print(' '.join(random.choice(w) for _ in range(1500)))" >"$tmp/text.txt"

"$sy" imatrix -m "$tmp/tiny.gguf" -f "$tmp/text.txt" -c 64 --chunks 3 -o "$tmp/im.gguf" \
  >"$tmp/out" 2>"$tmp/err" || fail "imatrix: $(cat "$tmp/err")"
grep -q "chunk 3/3, .* s, ETA" "$tmp/err" || fail "no progress lines: $(cat "$tmp/err")"
grep -Eq '^\[1\][0-9.]+,\[2\][0-9.]+,\[3\][0-9.]+,' "$tmp/out" || fail "ppl line: $(cat "$tmp/out")"
grep -q "Final estimate: PPL = " "$tmp/out" || fail "no final estimate: $(cat "$tmp/out")"
"$sy" inspect "$tmp/im.gguf" >"$tmp/inspect" 2>&1 || fail "inspect im.gguf"
for want in 'general.type *string *"imatrix"' 'imatrix.chunk_count *u32 *3' \
  'imatrix.chunk_size *u32 *64' 'blk.1.ffn_up_exps.weight.in_sum2 *f32 *{256, 8}' \
  'blk.1.ffn_up_exps.weight.counts *f32 *{1, 8}' 'blk.0.attn_q_a.weight.counts *f32 *{1, 1}'; do
  grep -Eq "$want" "$tmp/inspect" || fail "im.gguf lacks '$want': $(head -30 "$tmp/inspect")"
done

# The legacy format, chosen by the suffix; its header: entries (32: 15 attention, 3 dense FFN,
# 7 per MoE layer), then the first entry (names in order) with ncall = 3 chunks.
"$sy" imatrix -m "$tmp/tiny.gguf" -f "$tmp/text.txt" -c 64 --chunks 3 --no-ppl -o "$tmp/im.dat" \
  >"$tmp/out" 2>"$tmp/err" || fail "imatrix .dat: $(cat "$tmp/err")"
grep -q "PPL" "$tmp/out" && fail "--no-ppl printed a perplexity"
python3 - "$tmp/im.dat" <<'PY' || fail "im.dat layout"
import struct, sys
b = open(sys.argv[1], "rb").read()
n, ln = struct.unpack_from("<ii", b, 0)
name = b[8:8 + ln].decode()
ncall, nval = struct.unpack_from("<ii", b, 8 + ln)
assert (n, name, ncall, nval) == (32, "blk.0.attn_kv_a_mqa.weight", 3, 256), (n, name, ncall, nval)
assert b.endswith(b"text.txt"), b[-20:]
PY

# Quantizing with either file: an i-quant's bytes change and the file records the imatrix.
"$sy" quantize "$tmp/tiny.gguf" "$tmp/plain.gguf" iq4_nl >/dev/null 2>"$tmp/err" ||
  fail "quantize iq4_nl: $(cat "$tmp/err")"
for f in im.gguf im.dat; do
  "$sy" quantize "$tmp/tiny.gguf" "$tmp/w.gguf" iq4_nl --imatrix "$tmp/$f" >"$tmp/out" \
    2>"$tmp/err" || fail "quantize --imatrix $f: $(cat "$tmp/err")"
  grep -q "with importance" "$tmp/out" || fail "summary: $(cat "$tmp/out")"
  grep -q "output.weight has no importance matrix entry" "$tmp/err" ||
    fail "no warning for output.weight: $(cat "$tmp/err")"
  "$sy" inspect "$tmp/w.gguf" 2>&1 | grep -q "quantize.imatrix.entries_count *u32 *32" ||
    fail "$f: no quantize.imatrix.entries_count"
done
if "$sy" quantize --help 2>&1 | grep -q "iq3_xxs"; then
  "$sy" quantize "$tmp/tiny.gguf" "$tmp/a.gguf" iq3_xxs --pure >/dev/null 2>&1 || fail "iq3_xxs"
  "$sy" quantize "$tmp/tiny.gguf" "$tmp/b.gguf" iq3_xxs --pure --imatrix "$tmp/im.gguf" \
    >/dev/null 2>&1 || fail "iq3_xxs --imatrix"
  cmp -s "$tmp/a.gguf" "$tmp/b.gguf" && fail "the importance matrix changed nothing in iq3_xxs"
fi

# Mixes: general.file_type and per-tensor types (tiny has 8 experts: attn_kv_b q8_0).
"$sy" quantize "$tmp/tiny.gguf" "$tmp/m.gguf" q4_k_m >"$tmp/out" 2>"$tmp/err" ||
  fail "quantize Q4_K_M: $(cat "$tmp/err")"
grep -q "Q4_K_M" "$tmp/out" || fail "summary names the mix: $(cat "$tmp/out")"
"$sy" inspect "$tmp/m.gguf" >"$tmp/inspect" 2>&1
for want in 'general.file_type *u32 *15' 'output.weight *q6_K' 'blk.1.attn_kv_b.weight *q8_0' \
  'blk.1.ffn_up_exps.weight *q4_K' 'blk.2.ffn_down_exps.weight *q6_K'; do
  grep -Eq "$want" "$tmp/inspect" || fail "Q4_K_M file lacks '$want'"
done

# Refusals.
"$sy" quantize "$tmp/tiny.gguf" "$tmp/x.gguf" IQ2_XXS >/dev/null 2>"$tmp/err" &&
  fail "IQ2_XXS without an imatrix was accepted"
grep -q "IQ2_XXS needs an importance matrix for acceptable quality" "$tmp/err" ||
  fail "IQ2_XXS refusal: $(cat "$tmp/err")"
[ -e "$tmp/x.gguf" ] && fail "a refused quantize left a file"
head -c 100 "$tmp/im.dat" >"$tmp/cut.dat"
"$sy" quantize "$tmp/tiny.gguf" "$tmp/x.gguf" q4_K --imatrix "$tmp/cut.dat" >/dev/null \
  2>"$tmp/err" && fail "a truncated imatrix was accepted"
grep -q "cut.dat: truncated" "$tmp/err" || fail "truncated imatrix message: $(cat "$tmp/err")"
# An entry of another size (another model's): refused before anything is written.
python3 - "$tmp/other.dat" <<'PY'
import struct, sys
name = b"blk.0.attn_q_a.weight"
open(sys.argv[1], "wb").write(struct.pack("<ii", 1, len(name)) + name +
                              struct.pack("<ii", 1, 100) + struct.pack("<100f", *[1.0] * 100))
PY
"$sy" quantize "$tmp/tiny.gguf" "$tmp/x.gguf" q4_K --imatrix "$tmp/other.dat" >/dev/null \
  2>"$tmp/err" && fail "another model's imatrix was accepted"
grep -q "other.dat: entry 'blk.0.attn_q_a.weight' has 100 values; the tensor needs 256" "$tmp/err" ||
  fail "wrong-size entry message: $(cat "$tmp/err")"
[ -e "$tmp/x.gguf" ] && fail "a refused quantize left a file"
"$sy" imatrix -m "$tmp/tiny.gguf" -f "$tmp/text.txt" -c 64 -o "$tmp/y.gguf" \
  --output-format xyz >/dev/null 2>"$tmp/err" && fail "--output-format xyz accepted"
grep -q "expected gguf or dat" "$tmp/err" || fail "format message: $(cat "$tmp/err")"
echo "cli_imatrix: ok"
