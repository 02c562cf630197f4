#!/usr/bin/env bash
# ik_llama.cpp's types through the command line on a tiny model: `quantize` writes each (alone,
# and by ik's --custom-q rules), `inspect` names it, `run` generates from it, and `bench` names
# the file type as llama-bench does.
set -u
sy=$1
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
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
echo PASS
