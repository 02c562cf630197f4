#!/usr/bin/env bash
# ik_llama.cpp's types through the command line on a tiny model: `quantize` writes each (alone,
# and by ik's --custom-q rules), `inspect` names it, `run` generates from it, and `bench` names
# the file type as llama-bench does.
set -u
sy=$1
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# The log-probabilities of $tmp/A.gguf and $tmp/B.gguf over the test text are identical.
same_logprobs() {  # same_logprobs A B MESSAGE
  for f in "$1" "$2"; do
    "$sy" perplexity -m "$tmp/$f.gguf" -f "$tmp/text.txt" -c 64 --kl-divergence-base "$tmp/$f.kld" \
      >"$tmp/p.out" 2>&1 || fail "perplexity $f: $(tail -3 "$tmp/p.out")"
  done
  cmp -s "$tmp/$1.kld" "$tmp/$2.kld" || fail "$3"
}
# Each NAME:TYPE names a tensor that inspect's listing ($tmp/i.out) shows in that type.
expect_types() {  # expect_types WHAT NAME:TYPE ...
  local what=$1 pair
  shift
  for pair in "$@"; do
    grep -q "${pair%%:*}.weight *${pair##*:} " "$tmp/i.out" ||
      fail "$what: ${pair%%:*} not ${pair##*:}: $(grep "${pair%%:*}" "$tmp/i.out" | head -2)"
  done
}
"$sy" make-model --preset tiny --type f16 -o "$tmp/f16.gguf" >/dev/null 2>&1 || fail "make-model"

# Three of the six types here (the --custom-q file below takes iq2_k and iq5_k; every type's
# arithmetic is checked by the unit tests): quantizing is the slow part of this test.
for t in q6_0 iq4_k iq6_k; do
  "$sy" quantize "$tmp/f16.gguf" "$tmp/$t.gguf" "$t" >"$tmp/q.out" 2>&1 || fail "quantize $t: $(cat "$tmp/q.out")"
  "$sy" inspect "$tmp/$t.gguf" >"$tmp/i.out" 2>&1 || fail "inspect $t"
  grep -q "ffn_up_exps.weight *$t " "$tmp/i.out" || fail "$t: experts not in $t: $(grep exps "$tmp/i.out" | head -2)"
  "$sy" run -m "$tmp/$t.gguf" -p "Hello" -n 8 --temp 0 --ignore-eos >"$tmp/r.out" 2>"$tmp/r.err" ||
    fail "run $t: $(cat "$tmp/r.err")"
  grep -q "generation: *8 tokens" "$tmp/r.err" || fail "run $t: $(cat "$tmp/r.err")"
done
# Q8_KV (ik's 8-bit rows: a row scale and sum, then int8): written, named, run.
"$sy" quantize "$tmp/f16.gguf" "$tmp/q8_kv.gguf" q8_kv >"$tmp/q.out" 2>&1 || fail "quantize q8_kv: $(cat "$tmp/q.out")"
"$sy" inspect "$tmp/q8_kv.gguf" >"$tmp/i.out" 2>&1 || fail "inspect q8_kv"
grep -q "ffn_up_exps.weight *q8_kv " "$tmp/i.out" || fail "q8_kv: $(grep exps "$tmp/i.out" | head -2)"
grep -q "general.file_type .* 149 (Q8_KV)" "$tmp/i.out" || fail "q8_kv file type: $(grep file_type "$tmp/i.out")"
"$sy" run -m "$tmp/q8_kv.gguf" -p "Hello" -n 8 --temp 0 --ignore-eos >"$tmp/r.out" 2>"$tmp/r.err" ||
  fail "run q8_kv: $(cat "$tmp/r.err")"
"$sy" bench -m "$tmp/iq4_k.gguf" -p 16 -n 4 -r 1 >"$tmp/b.out" 2>&1 || fail "bench: $(cat "$tmp/b.out")"
grep -q "IQ4_K - 4.5 bpw" "$tmp/b.out" || fail "bench model column: $(cat "$tmp/b.out")"

# --custom-q as ik_llama.cpp writes it: comma-separated REGEX=TYPE, first match wins.
"$sy" quantize "$tmp/f16.gguf" "$tmp/c.gguf" q8_0 --custom-q "ffn_down_exps=IQ2_K,ffn_.*_exps=iq5_k" \
  >"$tmp/q.out" 2>&1 || fail "--custom-q: $(cat "$tmp/q.out")"
"$sy" inspect "$tmp/c.gguf" >"$tmp/i.out" 2>&1
grep -q "ffn_down_exps.weight *iq2_k " "$tmp/i.out" || fail "--custom-q first rule: $(grep exps "$tmp/i.out" | head -3)"
grep -q "ffn_up_exps.weight *iq5_k " "$tmp/i.out" || fail "--custom-q second rule: $(grep exps "$tmp/i.out" | head -3)"
"$sy" quantize "$tmp/f16.gguf" "$tmp/x.gguf" q8_0 --custom-q "ffn=iq9_k" >"$tmp/q.out" 2>&1 &&
  fail "an unknown type in --custom-q accepted"
grep -q "rule 'ffn=iq9_k': unknown type 'iq9_k'" "$tmp/q.out" || fail "--custom-q error: $(cat "$tmp/q.out")"

"$sy" run -m "$tmp/c.gguf" -p "Hello" -n 8 --temp 0 --ignore-eos >"$tmp/r.out" 2>"$tmp/r.err" ||
  fail "run the --custom-q file: $(cat "$tmp/r.err")"

# The row-scaled types (a scale in front of every row): all six in one file, iq4_ks the base type
# (so the file type and bench's model column are IQ4_KS's), then inspect, run and bench it.
"$sy" quantize "$tmp/f16.gguf" "$tmp/ks.gguf" iq4_ks \
  --custom-q "ffn_down_exps=iq2_ks,ffn_(gate|up)_exps=iq3_ks,ffn_up_shexp=iq2_kl,_shexp=iq5_ks,attn_kv_a_mqa=iq4_kss" \
  >"$tmp/q.out" 2>&1 || fail "quantize the row-scaled types: $(cat "$tmp/q.out")"
"$sy" inspect "$tmp/ks.gguf" >"$tmp/i.out" 2>&1 || fail "inspect the row-scaled file"
for pair in ffn_down_exps:iq2_ks ffn_gate_exps:iq3_ks ffn_up_exps:iq3_ks ffn_up_shexp:iq2_kl ffn_down_shexp:iq5_ks \
            attn_kv_a_mqa:iq4_kss attn_q_a:iq4_ks; do
  grep -q "${pair%%:*}.weight *${pair##*:} " "$tmp/i.out" ||
    fail "${pair%%:*} not ${pair##*:}: $(grep "${pair%%:*}" "$tmp/i.out" | head -2)"
done
"$sy" run -m "$tmp/ks.gguf" -p "Hello" -n 8 --temp 0 --ignore-eos >"$tmp/r.out" 2>"$tmp/r.err" ||
  fail "run the row-scaled file: $(cat "$tmp/r.err")"
grep -q "generation: *8 tokens" "$tmp/r.err" || fail "run the row-scaled file: $(cat "$tmp/r.err")"
"$sy" bench -m "$tmp/ks.gguf" -p 16 -n 4 -r 1 >"$tmp/b.out" 2>&1 || fail "bench: $(cat "$tmp/b.out")"
grep -q "IQ4_KS - 4.25 bpw" "$tmp/b.out" || fail "bench model column: $(cat "$tmp/b.out")"

# Row-interleaved storage: the iq4_k file (ik's IQ4_K mix) requantized as ik's IQ4_K_R4 mix
# (the same types, so every tensor is copied; the IQ4_K ones interleaved, token_embd left plain)
# gives the plain file's log-probabilities, byte for byte.
"$sy" quantize "$tmp/iq4_k.gguf" "$tmp/r4.gguf" iq4_k_r4 >"$tmp/q.out" 2>&1 ||
  fail "quantize iq4_k_r4: $(cat "$tmp/q.out")"
"$sy" inspect "$tmp/r4.gguf" >"$tmp/i.out" 2>&1 || fail "inspect the _r4 file"
# ik's rules: with 8 experts the "attn_k" tensors are q8_0, attn_output q5_K (q6_0 on its rows of
# 128), the output q6_K; ik's file type id.
expect_types "IQ4_K_R4 mix" ffn_up_exps:iq4_k_r4 ffn_down_shexp:iq4_k_r4 attn_kv_b:q8_0 attn_kv_a_mqa:q8_0 \
            attn_output:q6_0 token_embd:iq4_k output:q6_K
grep -q "general.file_type .* 340 (IQ4_K_R4 - 4.5 bpw)" "$tmp/i.out" ||
  fail "IQ4_K_R4 mix file type: $(grep file_type "$tmp/i.out")"
for i in $(seq 1 40); do echo "The quick brown fox $i jumps over the lazy dog number $((i * 7))."; done >"$tmp/text.txt"
same_logprobs iq4_k r4 "the _r4 file's log-probabilities differ from the plain file's"

# The codebook types' layouts (the sign indices of iq3_xxs_r4 stored scrambled, iq3_s_r4's sign
# bits transposed): a file with them, and the same tensors copied and repacked, give the same
# log-probabilities.
rules="ffn_down_exps=iq3_xxs,ffn_(gate|up)_exps=iq3_s,_shexp=iq3_xxs"
"$sy" quantize "$tmp/f16.gguf" "$tmp/cb.gguf" q8_0 --custom-q "$rules" >"$tmp/q.out" 2>&1 ||
  fail "quantize the codebook file: $(cat "$tmp/q.out")"
"$sy" quantize "$tmp/cb.gguf" "$tmp/cb_r4.gguf" q8_0 --repack --custom-q "$rules" >"$tmp/q.out" 2>&1 ||
  fail "repack the codebook file: $(cat "$tmp/q.out")"
"$sy" inspect "$tmp/cb_r4.gguf" >"$tmp/i.out" 2>&1 || fail "inspect the codebook _r4 file"
expect_types "repacked" ffn_down_exps:iq3_xxs_r4 ffn_up_exps:iq3_s_r4 ffn_gate_shexp:iq3_xxs_r4
same_logprobs cb cb_r4 "the codebook _r4 file's log-probabilities differ from the plain file's"

# IQ1_S_R4 (one scale per row, read as IQ1_S rows in fresh memory): written by --custom-q with an
# importance matrix, it generates, and its rows copied out as plain iq1_s give the same
# log-probabilities. iq1_s rows with a scale per block cannot be repacked into it.
"$sy" imatrix -m "$tmp/f16.gguf" -f "$tmp/text.txt" -c 64 -o "$tmp/imat.gguf" >"$tmp/q.out" 2>&1 ||
  fail "imatrix: $(tail -3 "$tmp/q.out")"
"$sy" quantize "$tmp/f16.gguf" "$tmp/s_r4.gguf" q8_0 --imatrix "$tmp/imat.gguf" \
  --custom-q "ffn_(gate|up)_exps=iq1_s_r4,blk\.0\.ffn_down=iq1_s_r4" >"$tmp/q.out" 2>&1 ||
  fail "quantize iq1_s_r4: $(cat "$tmp/q.out")"
"$sy" inspect "$tmp/s_r4.gguf" >"$tmp/i.out" 2>&1 || fail "inspect the iq1_s_r4 file"
for n in ffn_up_exps blk.0.ffn_down; do  # rows of one block and of two
  grep -q "$n.weight *iq1_s_r4 " "$tmp/i.out" || fail "iq1_s_r4: $(grep "$n" "$tmp/i.out" | head -2)"
done
"$sy" run -m "$tmp/s_r4.gguf" -p "Hello" -n 8 --temp 0 --ignore-eos >"$tmp/r.out" 2>"$tmp/r.err" ||
  fail "run the iq1_s_r4 file: $(cat "$tmp/r.err")"
"$sy" quantize "$tmp/s_r4.gguf" "$tmp/s.gguf" q8_0 --custom-q "ffn_(gate|up)_exps=iq1_s,blk\.0\.ffn_down=iq1_s" >"$tmp/q.out" 2>&1 ||
  fail "copy iq1_s_r4 out as iq1_s: $(cat "$tmp/q.out")"
grep -q "ffn_up_exps.weight *iq1_s " <("$sy" inspect "$tmp/s.gguf" 2>&1) || fail "the copy is not iq1_s"
same_logprobs s_r4 s "the iq1_s_r4 file's log-probabilities differ from its iq1_s copy's"
"$sy" quantize "$tmp/f16.gguf" "$tmp/s1.gguf" q8_0 --imatrix "$tmp/imat.gguf" --custom-q "blk\.0\.ffn_down=iq1_s" \
  >"$tmp/q.out" 2>&1 || fail "quantize iq1_s: $(cat "$tmp/q.out")"
"$sy" quantize "$tmp/s1.gguf" "$tmp/x.gguf" q8_0 --custom-q "blk\.0\.ffn_down=iq1_s_r4" >"$tmp/q.out" 2>&1 &&
  fail "iq1_s rows with a scale per block repacked as iq1_s_r4"
grep -q "ffn_down.weight: interleaved iq1_s_r4: row .* has blocks with different scales" "$tmp/q.out" ||
  fail "iq1_s_r4 refusal: $(cat "$tmp/q.out")"
# IQ1_M_R4 (one f16 scale per row, a 4-bit scale per 16 values: no plain type has its values):
# ik's IQ1_M_R4 mix (file type 231; with 8 experts attn_q/attn_k* q4_k_r4, layer 0's FFN
# iq3_k_r4, the shared experts iq4_k_r4, the routed ones iq1_m_r4), read and run; a token_embd
# asked for in iq1_m_r4 falls back to iq1_m with a note. Experts in iq1_m_r4 read and written
# back give the same log-probabilities.
"$sy" quantize "$tmp/f16.gguf" "$tmp/m_r4.gguf" iq1_m_r4 --imatrix "$tmp/imat.gguf" \
  --custom-q "token_embd=iq1_m_r4" >"$tmp/q.out" 2>&1 || fail "quantize iq1_m_r4: $(cat "$tmp/q.out")"
grep -q "token_embd.weight: iq1_m_r4 -> iq1_m (token_embd is not interleaved)" "$tmp/q.out" ||
  fail "iq1_m_r4 token_embd note: $(cat "$tmp/q.out")"
"$sy" inspect "$tmp/m_r4.gguf" >"$tmp/i.out" 2>&1 || fail "inspect the iq1_m_r4 file"
expect_types "IQ1_M_R4 mix" ffn_up_exps:iq1_m_r4 ffn_down_exps:iq1_m_r4 ffn_up_shexp:iq4_k_r4 blk.0.ffn_up:iq3_k_r4 \
            attn_q_a:q4_k_r4 token_embd:iq1_m output:q5_K
grep -q "general.file_type .* 231 (IQ1_M_R4 - 1.75 bpw)" "$tmp/i.out" ||
  fail "iq1_m_r4 file type: $(grep file_type "$tmp/i.out")"
"$sy" run -m "$tmp/m_r4.gguf" -p "Hello" -n 8 --temp 0 --ignore-eos >"$tmp/r.out" 2>"$tmp/r.err" ||
  fail "run the iq1_m_r4 file: $(cat "$tmp/r.err")"
"$sy" quantize "$tmp/f16.gguf" "$tmp/x.gguf" iq1_m_r4 >"$tmp/q.out" 2>&1 &&
  fail "the IQ1_M_R4 mix accepted without an importance matrix"
grep -q "IQ1_M_R4 needs an importance matrix" "$tmp/q.out" || fail "IQ1_M_R4 refusal: $(cat "$tmp/q.out")"
"$sy" quantize "$tmp/f16.gguf" "$tmp/m_e.gguf" q8_0 --imatrix "$tmp/imat.gguf" --custom-q "_exps=iq1_m_r4" \
  >"$tmp/q.out" 2>&1 || fail "quantize the experts to iq1_m_r4: $(cat "$tmp/q.out")"
"$sy" quantize "$tmp/m_e.gguf" "$tmp/m_eb.gguf" q8_0 --custom-q "_exps=iq1_m_r4" >"$tmp/q.out" 2>&1 ||
  fail "copy the iq1_m_r4 experts: $(cat "$tmp/q.out")"
same_logprobs m_e m_eb "the iq1_m_r4 copy's log-probabilities differ"
echo PASS
