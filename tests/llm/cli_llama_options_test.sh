#!/usr/bin/env bash
# llama.cpp and ik_llama.cpp command lines as typed: their spellings map to switchyard's options,
# an option switchyard does not have is refused by its own name, values are never rewritten,
# backend names in llama.cpp's form, -ot comma lists, -n -1, -c 0, escape processing, -b, -tb,
# --mlock, --numa, -no-fa/-no-fmoe, -ger, bench's -mmp/-ot/-ger and its file-type column.
# Argument: the switchyard binary.
set -u
sy=$1
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$sy" make-model --preset tiny --type q8_0 -o "$tmp/tiny.gguf" >/dev/null 2>&1 || fail "make-model"
m=$tmp/tiny.gguf
run() { "$sy" run -m "$m" "$@"; }

# An unknown single-dash option is named as typed, not split into -c ml (llama.cpp's -cml).
run -cml -p hi >"$tmp/o" 2>"$tmp/e" && fail "-cml accepted"
grep -qx "unknown option -cml" "$tmp/e" || fail "-cml: $(cat "$tmp/e")"
run -p hi -c4096 >"$tmp/o" 2>"$tmp/e" && fail "-c4096 accepted"
grep -qx "unknown option -c4096" "$tmp/e" || fail "-c4096: $(cat "$tmp/e")"
run -p hi --no-such-thing >"$tmp/o" 2>"$tmp/e" && fail "--no-such-thing accepted"
grep -qx "unknown option --no-such-thing" "$tmp/e" || fail "--no-such-thing: $(cat "$tmp/e")"
# A llama.cpp spelling of an option this command does not have: named as typed.
"$sy" inspect -ngl 9 "$m" >"$tmp/o" 2>"$tmp/e" && fail "inspect -ngl accepted"
grep -qx "unknown option -ngl" "$tmp/e" || fail "inspect -ngl: $(cat "$tmp/e")"

# Values are never rewritten: a prompt of "-ngl" or "-cnv" is that text.
run -p "-ngl" -n 1 --tokens >"$tmp/o" 2>"$tmp/e" || fail "-p -ngl: $(cat "$tmp/e")"
run -p "x-ngl" -n 1 --tokens >/dev/null 2>"$tmp/e2" || fail "-p x-ngl"
# BOS, then the same tokens as "x-ngl" after its "x".
a=$(grep '^prompt tokens' "$tmp/e" | cut -d' ' -f4-)
b=$(grep '^prompt tokens' "$tmp/e2" | cut -d' ' -f5-)
[ -n "$a" ] && [ "$a" = "$b" ] || fail "-p -ngl tokens '$a' vs x-ngl '$b'"
run -p -cnv -n 1 >/dev/null 2>"$tmp/e" || fail "-p -cnv: $(cat "$tmp/e")"

# --help lists the llama.cpp spellings next to the options.
"$sy" run --help >"$tmp/help"
for f in -ngl,--n-gpu-layers -fa,--flash-attn -no-fa,--no-flash-attn -ctk,--cache-type-k \
         -ctv,--cache-type-v -ub,--ubatch-size -mla,--mla -amb,--attention-max-batch \
         -fmoe,--fused-moe -no-fmoe,--no-fused-moe -ot,--override-tensor -rtr,--run-time-repack \
         -ger,--grouped-expert-routing -tb,--threads-batch -b,--batch-size; do
  grep -qF -- "$f" "$tmp/help" || fail "run --help lacks $f"
done
"$sy" bench --help | grep -qF -- "-mmp,--mmap" || fail "bench --help lacks -mmp"

# -n -1: until the end of the text or a full context (here: the context of 48 tokens).
run -p hi -n -1 -c 48 >/dev/null 2>"$tmp/e" || fail "-n -1: $(cat "$tmp/e")"
grep -q "^stopped: \(the context of 48 tokens is full\|end of generation token\)" "$tmp/e" ||
  fail "-n -1 stop: $(grep stopped "$tmp/e")"
run -p hi -n -2 -c 40 --ignore-eos --context-shift >/dev/null 2>"$tmp/e" || fail "-n -2: $(cat "$tmp/e")"
grep -q "^stopped: the context of 40 tokens is full (-n -2)" "$tmp/e" || fail "-n -2: $(grep stopped "$tmp/e")"
# The prompt's tokens and the evaluated generated ones fill the 40 positions.
p=$(sed -n 's/^prompt: *\([0-9]*\) tokens.*/\1/p' "$tmp/e")
g=$(sed -n 's/^generation:.*(\([0-9]*\) evaluated.*/\1/p' "$tmp/e")
[ -n "$p" ] && [ -n "$g" ] && [ $((p + g)) = 40 ] || fail "-n -2 count: $(grep '^prompt:\|^generation' "$tmp/e")"
run -p hi -n -3 >/dev/null 2>"$tmp/e" && fail "-n -3 accepted"
grep -q -- "-n -3: expected a count >= 0, -1" "$tmp/e" || fail "-n -3: $(cat "$tmp/e")"

# -c 0: the trained context (deepseek2.context_length); refused with the memory it needs when
# it does not fit.
run -p hi -n 1 -c 0 >/dev/null 2>"$tmp/e" || fail "-c 0: $(cat "$tmp/e")"
grep -q "^-c 0: the trained context of 163840 tokens (deepseek2.context_length)" "$tmp/e" ||
  fail "-c 0 note: $(cat "$tmp/e")"
grep -q "45.00 MiB for 163840 tokens" "$tmp/e" || fail "-c 0 KV: $(grep '^model' "$tmp/e")"
"$sy" make-model --preset tiny --type q8_0 --context-length 4000000000 -o "$tmp/long.gguf" \
  >/dev/null 2>&1 || fail "make-model --context-length"
"$sy" run -m "$tmp/long.gguf" -p hi -n 1 -c 0 >/dev/null 2>"$tmp/e" && fail "-c 0 of 4e9 tokens ran"
grep -q "error: the KV cache ([0-9]* MiB) does not fit in the [0-9]* MiB of available memory: lower -c (now 4000000000, from -c 0: the trained context)" "$tmp/e" ||
  fail "-c 0 refusal: $(cat "$tmp/e")"

# Escapes in -p (on by default, --no-escape off, -e accepted): \n is a newline.
run -p 'a\nb' -n 1 --tokens >/dev/null 2>"$tmp/e1" || fail "-p a\\nb"
run -p "$(printf 'a\nb')" -n 1 --tokens -e >/dev/null 2>"$tmp/e2" || fail "-p newline -e"
run -p 'a\nb' -n 1 --tokens --no-escape >/dev/null 2>"$tmp/e3" || fail "--no-escape"
run -p 'a\x41\t\\' -n 1 --tokens >/dev/null 2>"$tmp/e4" || fail "-p hex"
run -p "$(printf 'aA\t\\')" -n 1 --tokens >/dev/null 2>"$tmp/e5" || fail "-p hex literal"
t() { grep '^prompt tokens' "$1"; }
[ "$(t "$tmp/e1")" = "$(t "$tmp/e2")" ] || fail "escape: $(t "$tmp/e1") vs $(t "$tmp/e2")"
[ "$(t "$tmp/e1")" != "$(t "$tmp/e3")" ] || fail "--no-escape changed nothing"
[ "$(t "$tmp/e4")" = "$(t "$tmp/e5")" ] || fail "\\x41\\t\\\\: $(t "$tmp/e4") vs $(t "$tmp/e5")"

# -b: the logical batch; -ub is cut to it (the compute buffer's ubatch), the prompt the same.
run -p 'one two three four five six' -n 4 -b 2 -ctk f32 >"$tmp/b2" 2>"$tmp/e" || fail "-b 2: $(cat "$tmp/e")"
grep -q "ubatch 2 at context" "$tmp/e" || fail "-b 2 ubatch: $(grep 'compute buffer' "$tmp/e")"
run -p 'one two three four five six' -n 4 -ctk f32 >"$tmp/b0" 2>/dev/null || fail "no -b"
cmp -s "$tmp/b0" "$tmp/b2" || fail "-b 2 changed the text: $(cat "$tmp/b0") / $(cat "$tmp/b2")"

# -tb: the prompt's threads, -t's for generation.
run -p hi -n 2 -t 2 -tb 1 >/dev/null 2>"$tmp/e" || fail "-tb: $(cat "$tmp/e")"
grep -q "^threads: 1 for the prompt (-tb), 2 for generation" "$tmp/e" || fail "-tb: $(cat "$tmp/e")"

# --mlock: locked, or a warning naming the limit; --numa: one node here, a note says so.
run -p hi -n 1 --mlock >/dev/null 2>"$tmp/e" || fail "--mlock: $(cat "$tmp/e")"
grep -q "^--mlock: [0-9.]* MiB of weights locked in memory\|^warning: --mlock: could not lock .* the limit of locked memory is" "$tmp/e" ||
  fail "--mlock: $(cat "$tmp/e")"
if [ "$(id -u)" != 0 ]; then
  (ulimit -l 0; "$sy" run -m "$m" -p hi -n 1 --mlock) >/dev/null 2>"$tmp/e" || fail "--mlock at 0"
  grep -q "warning: --mlock: could not lock .*the limit of locked memory is 0 KiB" "$tmp/e" ||
    fail "--mlock limit 0: $(cat "$tmp/e")"
fi
nodes=$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)
for mode in distribute isolate numactl; do
  run -p hi -n 1 --numa $mode >/dev/null 2>"$tmp/e" || fail "--numa $mode: $(cat "$tmp/e")"
  if [ "$nodes" -le 1 ]; then
    grep -q "^--numa $mode: this machine has one NUMA node, so there is nothing to place" "$tmp/e" ||
      fail "--numa $mode note: $(cat "$tmp/e")"
  else
    grep -q "^--numa $mode: .*NUMA nodes" "$tmp/e" || fail "--numa $mode: $(cat "$tmp/e")"
  fi
done
run -p hi -n 1 --numa everywhere >/dev/null 2>"$tmp/e" && fail "--numa everywhere accepted"

# -no-fa / -no-fmoe: the session says what ran; -ger and --no-group-routing contradict.
run -p hi -n 1 -no-fa -no-fmoe >/dev/null 2>"$tmp/e" || fail "-no-fa: $(cat "$tmp/e")"
grep "^compute buffer" "$tmp/e" | grep -q "flash attention\|fused MoE" && fail "-no-fa -no-fmoe: $(grep '^compute' "$tmp/e")"
run -p hi -n 1 -fa on -fmoe 1 2>&1 | grep "^compute buffer" | grep -q "fused MoE, flash attention" ||
  fail "-fa on -fmoe 1 not used"
run -p hi -n 2 -ger >"$tmp/g1" 2>/dev/null || fail "-ger"
run -p hi -n 2 >"$tmp/g0" 2>/dev/null || fail "no -ger"
cmp -s "$tmp/g0" "$tmp/g1" || fail "-ger is not the default"
run -p hi -n 1 -ger --no-group-routing >/dev/null 2>"$tmp/e" && fail "-ger --no-group-routing accepted"
grep -q "contradict" "$tmp/e" || fail "-ger --no-group-routing: $(cat "$tmp/e")"

# Backend names: any case, llama.cpp's device names; -ot comma lists; a rule matching nothing and
# a regex comma glued back are warnings naming them.
run -p hi -n 2 --backend CPU -ot 'exps=CPU,attn_q=cpu:0,blk\.[0-9]{1,2}\.ffn_norm=Cpu,nothing=CPU' \
  >/dev/null 2>"$tmp/e" || fail "-ot list: $(cat "$tmp/e")"
grep -q "^warning: placement rule 4 'nothing' (-ot #4) matches no tensor" "$tmp/e" || fail "no-match warning: $(cat "$tmp/e")"
grep -qF "warning: -ot 'exps=CPU,attn_q=cpu:0,blk\.[0-9]{1,2}\.ffn_norm=Cpu,nothing=CPU': 'blk\.[0-9]{1' has no '=', so the comma after it was read as part of the regex of rule 'blk\.[0-9]{1,2}\.ffn_norm=Cpu' (-ot #3)" "$tmp/e" ||
  fail "comma warning: $(cat "$tmp/e")"
grep -q "placement rule [123] .*matches no tensor" "$tmp/e" && fail "a rule that matches was reported: $(cat "$tmp/e")"
run -p hi -n 1 -ot 'exps=CUDA1' >/dev/null 2>"$tmp/e" && fail "-ot CUDA1 without cuda accepted"
# The rule loads the cuda plugin: without a GPU it has no devices (or is not built here).
grep -E -q "placement rule 'exps=cuda:1' \(-ot #1\): backend 'cuda' (has 0 device\(s\)|did not load: plugin 'cuda' not found)" "$tmp/e" ||
  fail "CUDA1: $(cat "$tmp/e")"
run -p hi -n 1 -ot 'exps=CPU,attn' >/dev/null 2>"$tmp/e" && fail "-ot piece without = accepted"
grep -q "error: -ot #2: 'attn' is not REGEX=BACKEND" "$tmp/e" || fail "-ot no '=': $(cat "$tmp/e")"
cat >"$tmp/p.toml" <<'TOML'
[placement]
default = "CPU"
[[placement.rules]]
match = 'exps'
backend = "CPU"
TOML
run -p hi -n 1 --config "$tmp/p.toml" >/dev/null 2>"$tmp/e" || fail "config CPU: $(cat "$tmp/e")"
"$sy" plan -m "$m" -ot 'exps=CPU,output=cpu' >"$tmp/plan" 2>"$tmp/e" || fail "plan -ot: $(cat "$tmp/e")"
grep -q "(-ot #2)" "$tmp/plan" || fail "plan -ot #2: $(cat "$tmp/plan")"
printf 'The quick brown fox jumps over the lazy dog. %.0s' $(seq 40) >"$tmp/text.txt"
"$sy" perplexity -m "$m" -f "$tmp/text.txt" -c 64 --chunks 1 -ot 'exps=CPU,nothing=CPU' \
  >/dev/null 2>"$tmp/e" || fail "perplexity -ot: $(cat "$tmp/e")"
grep -q "placement rule 2 'nothing' (-ot #2) matches no tensor" "$tmp/e" || fail "perplexity -ot: $(cat "$tmp/e")"

# bench: -ot as ik_llama.cpp's llama-bench (one placement, rules by ',' or ';', repeated -ot add
# rules), -mmp 0,1, -ger, -no-fa; the model column names the file type.
"$sy" bench -m "$m" -p 8 -n 0 -r 1 -ot 'exps=CPU,attn_q=CPU' -ot 'output=cpu;nothing=cpu' \
  -mmp 0,1 -ger 0 -no-fa -o json >"$tmp/b.json" 2>"$tmp/e" || fail "bench: $(cat "$tmp/e")"
python3 - "$tmp/b.json" <<'PY' || fail "bench json: $(cat "$tmp/b.json")"
import json, sys
rows = json.load(open(sys.argv[1]))
assert len(rows) == 2, rows
assert [r["use_mmap"] for r in rows] == [False, True], rows
for r in rows:
    assert r["override_tensor"] == "exps=CPU,attn_q=CPU,output=cpu,nothing=cpu", r["override_tensor"]
    assert r["grouped_er"] is False and r["flash_attn"] is False, r
    assert r["model_type"].startswith("deepseek2 ") and r["model_type"].endswith("M Q8_0"), r["model_type"]
    assert any("rule 4 'nothing' (-ot #4) matches no tensor" in w for w in r["warnings"]), r["warnings"]
PY
"$sy" bench -m "$m" -p 8 -n 0 -r 1 -fa 1 -no-fa >/dev/null 2>"$tmp/e" && fail "bench -fa -no-fa accepted"
"$sy" make-model --preset tiny --type q4_K -o "$tmp/q4k.gguf" >/dev/null 2>&1 || fail "make-model q4_K"
"$sy" bench -m "$tmp/q4k.gguf" -p 8 -n 0 -r 1 >"$tmp/b.md" 2>"$tmp/e" || fail "bench q4_K: $(cat "$tmp/e")"
grep -q "| deepseek2 [0-9.]*M Q4_K - Small |" "$tmp/b.md" || fail "bench model column: $(cat "$tmp/b.md")"
"$sy" inspect "$tmp/q4k.gguf" | grep -q "general.file_type  *u32  *14 (Q4_K - Small)$" ||
  fail "inspect file type: $("$sy" inspect "$tmp/q4k.gguf" | grep file_type)"
# sweep takes -b (the ubatch is cut to it).
"$sy" sweep -m "$m" -c 32 -ub 16 -b 8 -n 2 -o jsonl >"$tmp/s.jsonl" 2>"$tmp/e" || fail "sweep -b: $(cat "$tmp/e")"
grep -q '"n_ubatch":8' "$tmp/s.jsonl" || fail "sweep -b 8: $(head -2 "$tmp/s.jsonl")"
# A file with an MTP (NextN) block: loaded without it, with a note, and the same text as the
# file without it (the same seed gives the other blocks the same weights).
"$sy" make-model --preset tiny --type q8_0 --nextn 1 -o "$tmp/mtp.gguf" >/dev/null 2>&1 || fail "make-model --nextn"
"$sy" run -m "$tmp/mtp.gguf" -p hello -n 8 >"$tmp/mtp.out" 2>"$tmp/e" || fail "run MTP file: $(cat "$tmp/e")"
grep -q "^the file's last 1 of 4 blocks are MTP (NextN) layers (nextn_predict_layers; blk.3.nextn.\*...): left out, as llama.cpp does; the model runs 3 layers" "$tmp/e" ||
  fail "MTP note: $(cat "$tmp/e")"
grep -q "^model: .*, 3 layers," "$tmp/e" || fail "MTP layers: $(grep '^model' "$tmp/e")"
run -p hello -n 8 >"$tmp/plain.out" 2>/dev/null || fail "run plain"
cmp -s "$tmp/mtp.out" "$tmp/plain.out" || fail "MTP file's text differs: $(cat "$tmp/mtp.out") / $(cat "$tmp/plain.out")"
echo "cli_llama_options: all checks passed"
