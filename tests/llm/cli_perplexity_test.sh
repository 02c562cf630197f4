#!/usr/bin/env bash
# switchyard perplexity on tiny synthetic models: several chunks per pass (-b) give the figures
# of one chunk per pass; --kl-divergence-base writes llama-perplexity's file (header, tokens,
# sizes checked here, the records in perplexity_test); --kl-divergence against the same model
# gives KLD ~0 and the same top token everywhere, against another model KLD > 0, with
# llama-perplexity's lines; bad files and mismatches are clear errors naming the file.
set -u
sy=$1
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

"$sy" make-model --preset tiny --type f32 -o "$tmp/tiny.gguf" >/dev/null 2>&1 || fail "make-model"
"$sy" make-model --preset tiny --type f32 --seed 99 -o "$tmp/other.gguf" >/dev/null 2>&1 ||
  fail "make-model --seed 99"
python3 -c "
import random
random.seed(2)
w='the quick brown fox jumps over a lazy dog while tired engineers debug kernels'.split()
print(' '.join(random.choice(w) for _ in range(1500)))" >"$tmp/text.txt"
ppl() { "$sy" perplexity -m "$tmp/tiny.gguf" -f "$tmp/text.txt" -c 128 --chunks 5 -ctk f32 -ctv f32 "$@"; }

# One chunk per pass (-b 128), then 2 and 4 per pass (-b 256 with -ub 256: two chunks in
# each graph; -b 512: the default -ub 512 holds 4 x 64 tokens): the same running values.
ppl -b 128 >"$tmp/b128" 2>"$tmp/e128" || fail "perplexity -b 128: $(cat "$tmp/e128")"
grep -q "n_seq=1," "$tmp/e128" || fail "-b 128 is not one chunk per pass: $(cat "$tmp/e128")"
for b in 256 512; do
  ppl -b $b -ub $b >"$tmp/b$b" 2>"$tmp/e$b" || fail "perplexity -b $b: $(cat "$tmp/e$b")"
  grep -q "n_seq=$((b / 128))," "$tmp/e$b" || fail "-b $b: not $((b / 128)) per pass: $(cat "$tmp/e$b")"
  grep -q "seconds per pass - ETA" "$tmp/e$b" || fail "no pass time line: $(cat "$tmp/e$b")"
  grep -q "scored 315 tokens in 5 chunks; $((b / 128)) chunks per pass" "$tmp/e$b" ||
    fail "summary line: $(cat "$tmp/e$b")"
done
python3 - "$tmp"/b128 "$tmp"/b256 "$tmp"/b512 <<'PY' || fail "several chunks per pass changed the figures"
import re, sys
runs = [[float(x) for x in re.findall(r"\[\d+\]([0-9.]+),", open(f).read())] for f in sys.argv[1:]]
assert len(runs[0]) == 5, runs
for r in runs[1:]:
    assert len(r) == 5 and all(abs(a / b - 1) < 1e-5 for a, b in zip(r, runs[0])), (runs[0], r)
PY

# The base file: llama-perplexity's header, the text's tokens, 5 chunks x 63 records of
# 2 * 256 + 4 uint16 (n_vocab 512).
ppl -b 256 --kl-divergence-base "$tmp/base.kld" >"$tmp/base.out" 2>"$tmp/e" ||
  fail "--kl-divergence-base: $(cat "$tmp/e")"
grep -q "saving the log-probabilities to $tmp/base.kld" "$tmp/e" || fail "no saving line: $(cat "$tmp/e")"
cmp -s "$tmp/base.out" "$tmp/b256" || fail "writing the base changed the perplexity output"
python3 - "$tmp/base.kld" <<'PY' || fail "base file layout"
import struct, sys
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"_logits_", b[:8]
n_ctx, n_vocab, n_chunk = struct.unpack_from("<3i", b, 8)
assert (n_ctx, n_vocab, n_chunk) == (128, 512, 5), (n_ctx, n_vocab, n_chunk)
nv = 2 * ((n_vocab + 1) // 2) + 4
assert len(b) == 20 + 4 * n_chunk * n_ctx + n_chunk * (n_ctx - 1 - n_ctx // 2) * nv * 2, len(b)
tokens = struct.unpack_from("<%di" % (n_chunk * n_ctx), b, 20)
assert all(0 <= t < n_vocab for t in tokens) and len(set(tokens)) > 10
# The first record: scale > 0, every log-probability <= 0, the largest ~0 minus log(sum).
scale, min_lp = struct.unpack_from("<2f", b, 20 + 4 * n_chunk * n_ctx)
q = struct.unpack_from("<%dH" % n_vocab, b, 20 + 4 * n_chunk * n_ctx + 8)
assert scale > 0 and min_lp < 0 and max(q) == 65535, (scale, min_lp, max(q))
assert min_lp + scale * max(q) < 0
PY

# The same model against its own base: KLD ~0, the same top token everywhere, PPL(Q) the base
# run's PPL; the text is not needed (the tokens come from the file).
"$sy" perplexity -m "$tmp/tiny.gguf" --kl-divergence-base "$tmp/base.kld" --kl-divergence \
    -ctk f32 -ctv f32 -b 256 -ub 256 >"$tmp/self" 2>"$tmp/e" || fail "--kl-divergence (same model): $(cat "$tmp/e")"
grep -q "kl_divergence: .* seconds per pass - ETA" "$tmp/e" || fail "no pass time: $(cat "$tmp/e")"
grep -q "^chunk  *PPL  *ln(PPL(Q)/PPL(base))  *KL Divergence  *Δp RMS  *Same top p$" "$tmp/self" ||
  fail "no table header: $(cat "$tmp/self")"
[ "$(grep -c '^   [1-5]  ' "$tmp/self")" -eq 5 ] || fail "not 5 chunk rows: $(cat "$tmp/self")"
for line in "Mean PPL(Q)  " "Mean PPL(base)  " "Cor(ln(PPL(Q)), ln(PPL(base))):" \
    "Mean ln(PPL(Q)/PPL(base))  " "Mean PPL(Q)/PPL(base)  " "Mean PPL(Q)-PPL(base)  " \
    "Mean    KLD:" "Maximum KLD:" "99.9%   KLD:" "99.0%   KLD:" "95.0%   KLD:" "90.0%   KLD:" \
    "Median  KLD:" "10.0%   KLD:" " 5.0%   KLD:" " 1.0%   KLD:" " 0.1%   KLD:" "Minimum KLD:" \
    "Mean    Δp:" "Maximum Δp:" "99.9%   Δp:" "75.0%   Δp:" "Median  Δp:" "25.0%   Δp:" \
    " 0.1%   Δp:" "Minimum Δp:" "RMS Δp    :" "Same top p:"; do
  grep -q -F "$line" "$tmp/self" || fail "no '$line' line: $(cat "$tmp/self")"
done
python3 - "$tmp/self" "$tmp/base.out" <<'PY' || fail "same model: $(cat "$tmp/self")"
import re, sys
t = open(sys.argv[1]).read()
val = lambda label: float(re.search(re.escape(label) + r"\s*:\s*(-?[0-9.]+)", t).group(1))
assert abs(val("Mean    KLD")) < 1e-4, val("Mean    KLD")
assert abs(val("Maximum KLD")) < 1e-3, val("Maximum KLD")
assert val("Same top p") == 100.0, val("Same top p")
ppl = float(re.search(r"PPL = ([0-9.]+)", open(sys.argv[2]).read()).group(1))
assert abs(val("Mean PPL(Q)") / ppl - 1) < 1e-5, (val("Mean PPL(Q)"), ppl)
assert abs(val("Mean PPL(base)") / ppl - 1) < 1e-3, (val("Mean PPL(base)"), ppl)
assert abs(val("Mean ln(PPL(Q)/PPL(base))")) < 1e-3
PY
# One chunk per pass reads the same file to the same figures.
"$sy" perplexity -m "$tmp/tiny.gguf" --kl-divergence-base "$tmp/base.kld" --kl-divergence \
    -ctk f32 -ctv f32 -b 128 >"$tmp/self1" 2>"$tmp/e" || fail "--kl-divergence -b 128: $(cat "$tmp/e")"
python3 - "$tmp/self" "$tmp/self1" <<'PY' || fail "-b 128 and -b 256 differ"
import re, sys
nums = [[float(x) for x in re.findall(r"-?\d+\.\d+", open(f).read())] for f in sys.argv[1:]]
assert len(nums[0]) == len(nums[1]) > 50
assert all(abs(a - b) <= 2e-6 + 1e-5 * abs(a) for a, b in zip(*nums)), "differ"
PY

# Another model (another seed): KLD > 0, another top token somewhere.
"$sy" perplexity -m "$tmp/other.gguf" --kl-divergence-base "$tmp/base.kld" --kl-divergence \
    -f "$tmp/text.txt" >"$tmp/other" 2>"$tmp/e" || fail "--kl-divergence (other model): $(cat "$tmp/e")"
grep -q "warning" "$tmp/e" && fail "the same text warned: $(cat "$tmp/e")"
python3 - "$tmp/other" <<'PY' || fail "other model: $(cat "$tmp/other")"
import re, sys
t = open(sys.argv[1]).read()
val = lambda label: float(re.search(re.escape(label) + r"\s*:\s*(-?[0-9.]+)", t).group(1))
assert val("Mean    KLD") > 0.01, val("Mean    KLD")
assert val("Maximum KLD") >= val("99.0%   KLD") >= val("Median  KLD") >= val("Minimum KLD") >= 0
assert val("Same top p") < 100.0
assert val("RMS Δp    ") > 0
PY

# Refusals: a clear message naming the file, a non-zero exit.
kld() { "$sy" perplexity -m "$tmp/tiny.gguf" --kl-divergence "$@" >"$tmp/o" 2>"$tmp/e"; }
kld --kl-divergence-base "$tmp/missing.kld" && fail "missing file accepted"
grep -q "missing.kld: cannot read" "$tmp/e" || fail "missing file message: $(cat "$tmp/e")"
head -c 5000 "$tmp/base.kld" >"$tmp/cut.kld"
kld --kl-divergence-base "$tmp/cut.kld" && fail "truncated file accepted"
grep -q "cut.kld: 5000 bytes, but its header .* implies .* (truncated?)" "$tmp/e" ||
  fail "truncated message: $(cat "$tmp/e")"
{ printf 'GGUF0000'; tail -c +9 "$tmp/base.kld"; } >"$tmp/magic.kld"
kld --kl-divergence-base "$tmp/magic.kld" && fail "wrong magic accepted"
grep -q "magic.kld does not look like a file of log-probabilities" "$tmp/e" ||
  fail "magic message: $(cat "$tmp/e")"
kld --kl-divergence-base "$tmp/base.kld" -c 64 && fail "-c 64 accepted for a file of 128"
grep -q "base.kld was computed with a context of 128 tokens, not -c 64" "$tmp/e" ||
  fail "n_ctx message: $(cat "$tmp/e")"
python3 - "$tmp/base.kld" "$tmp/vocab.kld" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
n_ctx, n_vocab, n_chunk = struct.unpack_from("<3i", b, 8)
struct.pack_into("<i", b, 12, 600)  # a vocabulary of 600: records of 604 values
rec = (n_ctx - 1 - n_ctx // 2) * n_chunk
out = b[:20 + 4 * n_ctx * n_chunk] + bytes(rec * 604 * 2)
open(sys.argv[2], "wb").write(out)
PY
kld --kl-divergence-base "$tmp/vocab.kld" && fail "another vocabulary accepted"
grep -q "vocab.kld holds log-probabilities over 600 tokens; this model's vocabulary has 512" "$tmp/e" ||
  fail "vocabulary message: $(cat "$tmp/e")"
"$sy" perplexity -m "$tmp/tiny.gguf" -f "$tmp/text.txt" --kl-divergence >"$tmp/o" 2>"$tmp/e" &&
  fail "--kl-divergence without a base accepted"
grep -q "kl-divergence-base FILE" "$tmp/e" || fail "no-base message: $(cat "$tmp/e")"
"$sy" perplexity -m "$tmp/tiny.gguf" >"$tmp/o" 2>"$tmp/e" && fail "no text accepted"
grep -q -- "-f FILE" "$tmp/e" || fail "no-text message: $(cat "$tmp/e")"
"$sy" perplexity -m "$tmp/tiny.gguf" -f "$tmp/text.txt" -c 128 --chunks 2 \
    --kl-divergence-base "$tmp/no/such/dir/x.kld" >"$tmp/o" 2>"$tmp/e" && fail "unwritable base accepted"
grep -q "x.kld: cannot create it" "$tmp/e" || fail "unwritable message: $(cat "$tmp/e")"
echo PASS
