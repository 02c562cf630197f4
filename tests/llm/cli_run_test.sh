#!/usr/bin/env bash
# switchyard run on a tiny synthetic model: text and timings come out; greedy decoding gives the
# same 32 tokens in every attention mode (F32 weights and cache); --logits-out writes a .npy of
# every evaluated position; bad input is a clear error with a non-zero exit.
set -u
sy=$1
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# run's "generation time" line in FILE: its parts add up to 100% and their sum of copies,
# synchronization and host is the printed one; each CHECK (copies=0, staging>0, ...) holds.
gen_time() {
  python3 - "$@" <<'PY' || fail "generation time in $1: $(grep '^generation time' "$1")"
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"^generation time: backend ops ([0-9.]+)%, waiting in synchronize ([0-9.]+)%, "
              r"copies between backends ([0-9.]+)%, staging on devices ([0-9.]+)%, host ([0-9.]+)% "
              r"\(copies \+ synchronization \+ host: ([0-9.]+)%\)"
              r"(; [0-9.]+ nodes per step ran beside the split before them)?$", text, re.M)
assert m, "no generation time line"
ops, sync, copies, staging, host, overhead = map(float, m.groups()[:6])
assert abs(ops + sync + copies + staging + host - 100) < 0.3, m.group(0)
assert abs(sync + copies + host - overhead) < 0.2, m.group(0)
parts = {"ops": ops, "sync": sync, "copies": copies, "staging": staging, "host": host}
for check in sys.argv[2:]:
    name, op, value = re.fullmatch(r"(\w+)([=>])([0-9.]+)", check).groups()
    assert parts[name] == float(value) if op == "=" else parts[name] > float(value), (check, m.group(0))
PY
}
# The simulated device computes with the CPU plugin variant the host loads for the cpu backend
# (the best for this CPU), so that hybrid runs can give the cpu's tokens bit for bit.
SWITCHYARD_SIM_CPU_PLUGIN=$("$sy" plugins 2>/dev/null | awk '$1 == "cpu" { print $NF; exit }')
export SWITCHYARD_SIM_CPU_PLUGIN

"$sy" make-model --preset tiny --type f32 -o "$tmp/tiny.gguf" >/dev/null 2>&1 || fail "make-model"
prompt="The quick brown fox jumps over the lazy dog."
for mla in 0 1 2 3; do
  "$sy" run -m "$tmp/tiny.gguf" -p "$prompt" -n 32 --temp 0 --ignore-eos -mla $mla -ctk f32 -ctv f32 \
      --tokens >"$tmp/out$mla" 2>"$tmp/err$mla" || fail "run -mla $mla: $(cat "$tmp/err$mla")"
  grep -q "KV cache" "$tmp/err$mla" || fail "no KV cache size printed (mla $mla)"
  grep -q "generation: *32 tokens" "$tmp/err$mla" || fail "no generation timing (mla $mla): $(cat "$tmp/err$mla")"
  [ "$(grep -o '\[[0-9]*\]' "$tmp/out$mla" | wc -l)" -eq 32 ] || fail "not 32 tokens (mla $mla)"
done
for mla in 1 2 3; do
  cmp -s "$tmp/out0" "$tmp/out$mla" || fail "-mla $mla generated other tokens than -mla 0"
done
grep -q "flash attention" "$tmp/err0" || fail "flash attention not used by default on the CPU"
gen_time "$tmp/err0" ops\>10 copies=0 staging=0
# Without flash attention (materialized K.Q): the same tokens.
for mla in 0 2; do
  "$sy" run -m "$tmp/tiny.gguf" -p "$prompt" -n 32 --temp 0 --ignore-eos -mla $mla -ctk f32 -ctv f32 \
      -fa off --tokens >"$tmp/nofa$mla" 2>"$tmp/e" || fail "run -fa off: $(cat "$tmp/e")"
  grep -q "flash attention" "$tmp/e" && fail "-fa off still used flash attention"
  cmp -s "$tmp/out0" "$tmp/nofa$mla" || fail "-fa off -mla $mla generated other tokens"
done
# -amb 1: attention one head per step; the same tokens, and the split reported.
"$sy" run -m "$tmp/tiny.gguf" -p "$prompt" -n 32 --temp 0 --ignore-eos -mla 2 -ctk f32 -ctv f32 \
    -fa off -amb 1 --tokens >"$tmp/amb" 2>"$tmp/e" || fail "run -amb 1: $(cat "$tmp/e")"
cmp -s "$tmp/out0" "$tmp/amb" || fail "-amb 1 generated other tokens"
grep -q "compute buffer: .*-amb 1)" "$tmp/e" || fail "-amb not in the compute buffer line: $(cat "$tmp/e")"
"$sy" run -m "$tmp/tiny.gguf" -p hi -amb -3 >"$tmp/o" 2>"$tmp/e" && fail "-amb -3 accepted"
"$sy" run -m "$tmp/tiny.gguf" -p hi -fa maybe >"$tmp/o" 2>"$tmp/e" && fail "-fa maybe accepted"
# Placement across backends: with the simulated accelerator (the CPU's kernels behind memory
# the host cannot read) as the default backend and the routed experts on the cpu (--cpu-moe and
# the offload switches, or the same from a config file), the same greedy tokens as the CPU alone;
# the weight totals per backend are printed; a rule naming a backend that is not loaded is refused.
sim=${2:-}
if [ -n "$sim" ]; then
  # The cpu's cost rates fixed (as measured on a quiet 2-core VM): the cpu plugin otherwise measures
  # them when it starts, a loaded machine (the other tests) measures less, and the plan then puts
  # other ops on sim, which can change the last bits of results (a copy to sim makes a strided
  # operand contiguous: another summation order) and, over 32 greedy tokens, a token.
  cpu_rates='[plugins.cpu]\nmemory_gbps = "55"\nlaunch_us = "0.2"\n'
  printf "$cpu_rates" >"$tmp/rates.toml"
  # The tiny model's 32 greedy tokens with the sim plugin loaded (and the arguments given).
  on_sim() {
    "$sy" run -m "$tmp/tiny.gguf" -p "$prompt" -n 32 --temp 0 --ignore-eos -mla 2 -ctk f32 -ctv f32 \
        --tokens --plugin "$sim" "$@"
  }
  staging_mib() { sed -n 's/^staging buffer: \([0-9.]*\) MiB.*/\1/p' "$tmp/e"; }
  on_sim --backend sim --cpu-moe --offload-policy mul_mat_id=0,moe.fused_up_gate=0 \
      --config "$tmp/rates.toml" \
      >"$tmp/hybrid" 2>"$tmp/e" || fail "run on cpu + sim: $(cat "$tmp/e")"
  cmp -s "$tmp/out0" "$tmp/hybrid" || fail "cpu + sim generated other tokens than the cpu alone"
  grep -q "weights: sim .* MiB (.* tensors), cpu .* MiB" "$tmp/e" || fail "no weight totals: $(cat "$tmp/e")"
  grep -Eq "copied to and between backends: prompt [0-9.]+ MiB, generation [0-9.]+ MiB per token" "$tmp/e" \
      || fail "no copy totals: $(cat "$tmp/e")"
  gen_time "$tmp/e" copies\>0 staging=0
  # The routed experts and their weighted sum on the cpu (a per-node cost of 2 us, a thread
  # pool's), the rest on sim, as with a GPU: the shared experts run beside the routed ones (on by
  # default), with the same tokens as the cpu alone; with [offload] overlap = false, one after the
  # other, the same tokens.
  for overlap in true false; do
    printf '[offload]\noverlap = %s\n[offload.ops]\nmul_mat_id = false\n"moe.fused_up_gate" = false\n[plugins.cpu]\nmemory_gbps = "55"\nlaunch_us = "2"\n' \
        $overlap >"$tmp/overlap.toml"
    on_sim --backend sim --cpu-moe --config "$tmp/overlap.toml" >"$tmp/overlap" 2>"$tmp/e" \
        || fail "run on cpu + sim, overlap = $overlap: $(cat "$tmp/e")"
    cmp -s "$tmp/out0" "$tmp/overlap" || fail "overlap = $overlap changed the tokens"
    gen_time "$tmp/e"
    if [ $overlap = true ]; then
      grep -Eq "; [1-9][0-9.]* nodes per step ran beside the split before them$" "$tmp/e" \
          || fail "nothing overlapped: $(grep '^generation time' "$tmp/e")"
      # plan names them beforehand: as many per decode step as run counted.
      per_step=$(sed -n 's/.*; \([0-9.]*\) nodes per step ran beside.*/\1/p' "$tmp/e")
      "$sy" plan -m "$tmp/tiny.gguf" -mla 2 -ctk f32 -ctv f32 --plugin "$sim" --backend sim --cpu-moe \
          --config "$tmp/overlap.toml" --json >"$tmp/plan.json" 2>"$tmp/pe" || fail "plan --json, overlap: $(cat "$tmp/pe")"
      python3 - "$tmp/plan.json" "$per_step" <<'PY' || fail "plan's overlap differs from run's $per_step nodes per step"
import json, sys
graphs = json.load(open(sys.argv[1]))["graphs"]
decode = [g for g in graphs if g["phase"] == "decode"][0]
assert decode["overlap"], decode["splits"]
assert sum(o["nodes"] for o in decode["overlap"]) == float(sys.argv[2]), decode["overlap"]
for o in decode["overlap"]:
    a, b = decode["splits"][o["split"]], decode["splits"][o["split"] + 1]
    assert {a["backend"], b["backend"]} == {"cpu", "sim"} and 0 < o["nodes"] <= b["end"] - b["first"], o
PY
    else
      grep -q "ran beside" "$tmp/e" && fail "overlap = false overlapped: $(grep '^generation time' "$tmp/e")"
    fi
  done
  # The command line wins over the config: --overlap off with overlap = true in the file.
  sed -i 's/^overlap = false/overlap = true/' "$tmp/overlap.toml"
  on_sim --backend sim --cpu-moe --config "$tmp/overlap.toml" --overlap off >"$tmp/overlap" 2>"$tmp/e" \
      || fail "run --overlap off: $(cat "$tmp/e")"
  cmp -s "$tmp/out0" "$tmp/overlap" || fail "--overlap off changed the tokens"
  grep -q "ran beside" "$tmp/e" && fail "--overlap off overlapped: $(grep '^generation time' "$tmp/e")"
  on_sim --overlap maybe >"$tmp/o" 2>"$tmp/e" && fail "--overlap maybe accepted"
  grep -q -- "--overlap: maybe not in {on,off}" "$tmp/e" || fail "--overlap maybe: $(cat "$tmp/e")"
  # Without flash attention the decode graphs' attention scores are as long as the keys they
  # read; a decode graph is kept for the steps after (its keys rounded up to 256): the warm-up's,
  # so only the prompt's graph is built, and the warm-up's placement of it serves every step (its
  # shapes are those of 256 keys whatever the cache holds below); the tokens are the cpu's.
  "$sy" run -m "$tmp/tiny.gguf" -p "$prompt" -n 32 --temp 0 --ignore-eos -mla 2 -ctk f32 -ctv f32 \
      --tokens --flash-attn off >"$tmp/fa-off" 2>"$tmp/e" || fail "run --flash-attn off: $(cat "$tmp/e")"
  on_sim --backend sim --cpu-moe --config "$tmp/overlap.toml" --flash-attn off >"$tmp/fa-off-sim" 2>"$tmp/e" \
      || fail "run on cpu + sim --flash-attn off: $(cat "$tmp/e")"
  cmp -s "$tmp/fa-off" "$tmp/fa-off-sim" || fail "cpu + sim --flash-attn off generated other tokens than the cpu"
  grep -Eq "op placement [0-9.]+% \(0 placed anew\), .*; 32 graphs, 1 built;" "$tmp/e" \
      || fail "decode steps placed or built anew: $(grep '^host overhead' "$tmp/e")"
  # -ngl 2 of the tiny model's 3 layers (llama.cpp's partial offload): layers 1-2, weights and
  # KV cache, on sim; layer 0, the embeddings and the output on the cpu; the cpu's tokens.
  on_sim --backend sim -ngl 2 --config "$tmp/rates.toml" >"$tmp/ngl" 2>"$tmp/e" ||
      fail "run -ngl 2: $(cat "$tmp/e")"
  cmp -s "$tmp/out0" "$tmp/ngl" || fail "-ngl 2 generated other tokens than the cpu alone"
  grep -q "^-ngl 2: layers 1-2 (weights and KV cache) on sim, the rest on cpu" "$tmp/e" || fail "-ngl 2: $(cat "$tmp/e")"
  "$sy" plan -m "$tmp/tiny.gguf" -mla 2 -ctk f32 -ctv f32 -c 256 -ub 16 --plugin "$sim" --backend sim -ngl 2 \
      --json >"$tmp/ngl.json" 2>"$tmp/e" || fail "plan -ngl 2: $(cat "$tmp/e")"
  python3 - "$tmp/ngl.json" <<'PY' || fail "plan -ngl 2: $(head -c 2000 "$tmp/ngl.json")"
import json, sys
p = json.load(open(sys.argv[1]))
for w in p["weights"]:
    on_sim = w["name"].startswith(("blk.1.", "blk.2."))
    assert w["backend"] == ("sim" if on_sim else "cpu"), w
kv = {m["backend"]: m["kv_cache_bytes"] for m in p["memory"]}
assert kv["sim"] == 2 * kv["cpu"] > 0, kv
PY
  printf '[plugins.sim]\nmemory_mib = "15"\n' >"$tmp/s15.toml"
  "$sy" run -m "$tmp/tiny.gguf" -p hi -n 2 -mla 2 -ctk f32 -ctv f32 -c 4096 --plugin "$sim" --backend sim -ngl 2 \
      --config "$tmp/s15.toml" >"$tmp/o" 2>"$tmp/e" && fail "-ngl 2 ran without room for its KV cache"
  grep -q "sim: the weights placed there (14 MiB) and the KV cache of its layers (2 MiB) do not fit in its 15 MiB free: lower -c or offload fewer layers (-ngl)" "$tmp/e" \
      || fail "-ngl 2 without room: $(cat "$tmp/e")"
  # Two simulated devices (sim, sim:1), the whole model (-ngl 4) split 1:2 by layers
  # (--tensor-split): layer 0 with its KV cache on sim, layers 1-2 on sim:1, the embeddings and
  # the output on sim (the default); the cpu's tokens. More proportions than devices: refused.
  printf '[plugins.sim]\ndevices = "2"\n' >"$tmp/two.toml"
  printf "$cpu_rates" >>"$tmp/two.toml"
  on_sim --backend sim --config "$tmp/two.toml" -ngl 4 -ts 1,2 >"$tmp/ts" 2>"$tmp/e" \
      || fail "run -ts 1,2: $(cat "$tmp/e")"
  cmp -s "$tmp/out0" "$tmp/ts" || fail "-ts 1,2 on two devices generated other tokens than the cpu alone"
  "$sy" plan -m "$tmp/tiny.gguf" -mla 2 -ctk f32 -ctv f32 -c 256 -ub 16 --plugin "$sim" --backend sim \
      --config "$tmp/two.toml" -ngl 4 -ts 1,2 --json >"$tmp/ts.json" 2>"$tmp/e" || fail "plan -ts: $(cat "$tmp/e")"
  python3 - "$tmp/ts.json" <<'PY' || fail "plan -ts 1,2: $(head -c 2000 "$tmp/ts.json")"
import json, sys
p = json.load(open(sys.argv[1]))
for w in p["weights"]:
    want = "sim:1" if w["name"].startswith(("blk.1.", "blk.2.")) else "sim"
    assert w["backend"] == want, w
    if w["name"].startswith("blk."):
        assert w["reason"] == "default backend, --tensor-split", w
kv = {m["backend"]: m["kv_cache_bytes"] for m in p["memory"]}
assert kv["sim:1"] == 2 * kv["sim"] > 0 and kv["cpu"] == 0, kv
PY
  "$sy" run -m "$tmp/tiny.gguf" -p hi -n 1 --plugin "$sim" --backend sim --config "$tmp/two.toml" -ngl 4 \
      -ts 1,1,1 >"$tmp/o" 2>"$tmp/e" && fail "-ts with 3 proportions for 2 devices ran"
  grep -q -- "--tensor-split: 3 proportions for 2 device backends loaded" "$tmp/e" || fail "-ts 1,1,1: $(cat "$tmp/e")"
  # Every product offloaded: the host-resident experts go to sim as the batches route to them
  # (the executor uploads only those), and the tokens stay the cpu's.
  printf '[offload]\nmode = "always"\n' >"$tmp/always.toml"
  printf "$cpu_rates" >>"$tmp/always.toml"
  on_sim --backend sim --cpu-moe --config "$tmp/always.toml" \
      >"$tmp/hybrid3" 2>"$tmp/e" || fail "run on cpu + sim, offload always: $(cat "$tmp/e")"
  cmp -s "$tmp/out0" "$tmp/hybrid3" || fail "offloading every product changed the tokens"
  grep -q "^staging buffer: " "$tmp/e" || fail "offload always: no staging buffer line: $(cat "$tmp/e")"
  full_staging=$(staging_mib)
  # Over a 1 MiB staging limit the host-resident experts share the device's room by when they
  # are read: a smaller staging buffer (plan says so beforehand), the same tokens.
  printf '[offload]\nmode = "always"\nstaging_mib = 1\n' >"$tmp/per-use.toml"
  printf "$cpu_rates" >>"$tmp/per-use.toml"
  on_sim --backend sim --cpu-moe --config "$tmp/per-use.toml" \
      >"$tmp/hybrid4" 2>"$tmp/e" || fail "run with staging_mib = 1: $(cat "$tmp/e")"
  cmp -s "$tmp/out0" "$tmp/hybrid4" || fail "staging per use changed the tokens"
  gen_time "$tmp/e" staging\>0
  per_use=$(staging_mib)
  # --offload-mode and --offload-min-batch, the twins of [offload] mode and min_batch: every
  # prompt node on sim; with a minimum batch above the prompt's, the experts back on the cpu.
  plan_splits() {
    "$sy" plan -m "$tmp/tiny.gguf" -mla 2 -ctk f32 -ctv f32 --plugin "$sim" --backend sim --cpu-moe \
        --config "$tmp/rates.toml" "$@" 2>"$tmp/pe" | grep -m1 "splits:" || fail "plan $*: $(cat "$tmp/pe")"
  }
  plan_splits --offload-mode always | grep -Eq "splits: sim \[0, [0-9]+\)$" \
      || fail "--offload-mode always: $(plan_splits --offload-mode always)"
  plan_splits --offload-mode always --offload-min-batch 100000 | grep -q "cpu \[" \
      || fail "--offload-min-batch: $(plan_splits --offload-mode always --offload-min-batch 100000)"
  # --staging-mib, the config key's twin: the same per-use buffer.
  on_sim --backend sim --cpu-moe --config "$tmp/always.toml" --staging-mib 1 >"$tmp/o" 2>"$tmp/e" \
      || fail "run --staging-mib 1: $(cat "$tmp/e")"
  [ "$(staging_mib)" = "$per_use" ] || fail "--staging-mib 1: staging buffer $(staging_mib) MiB, not $per_use"
  python3 -c "import sys; f, p = float(sys.argv[1]), float(sys.argv[2]); assert 0 < p < f * 0.75, (f, p)" \
      "$full_staging" "$per_use" || fail "staging per use: $per_use MiB, all kept: $full_staging MiB"
  "$sy" plan -m "$tmp/tiny.gguf" -mla 2 -ctk f32 -ctv f32 --plugin "$sim" --backend sim --cpu-moe \
      --config "$tmp/per-use.toml" >"$tmp/plan" 2>"$tmp/e" || fail "plan, staging_mib = 1: $(cat "$tmp/e")"
  grep -Eq "^    sim: .*staging buffer prompt $per_use MiB \(weights staged per use\)" "$tmp/plan" \
      || fail "plan does not show the $per_use MiB staging buffer: $(grep -A2 'memory per' "$tmp/plan")"
  # --fit on a 272 MiB device (256 of them the device reserve): the non-expert weights and
  # some experts fit, the other experts stay on the cpu; the tokens stay the cpu's.
  printf '[plugins.sim]\nmemory_mib = "272"\n' >"$tmp/small.toml"
  printf "$cpu_rates" >>"$tmp/small.toml"
  on_sim --backend sim --fit --fit-margin 0 --config "$tmp/small.toml" \
      >"$tmp/fit" 2>"$tmp/e" || fail "run --fit: $(cat "$tmp/e")"
  cmp -s "$tmp/out0" "$tmp/fit" || fail "--fit changed the tokens"
  grep -Eq "weights: sim [1-9][0-9.]* MiB \([0-9]+ tensors\), cpu [1-9][0-9.]* MiB" "$tmp/e" \
      || fail "--fit: expected weights on both backends: $(cat "$tmp/e")"
  "$sy" plan -m "$tmp/tiny.gguf" -mla 2 -ctk f32 -ctv f32 --plugin "$sim" --backend sim --fit \
      --fit-margin 0 --config "$tmp/small.toml" >"$tmp/plan" 2>"$tmp/e" || fail "plan --fit: $(cat "$tmp/e")"
  grep -Eq "cpu \(--fit: no device had room\): ffn_[a-z]+_exps" "$tmp/plan" \
      || fail "plan --fit: no spilled experts: $(cat "$tmp/plan")"
  grep -Eq "sim \(--fit\): attn_norm" "$tmp/plan" || fail "plan --fit: no fitted weights: $(cat "$tmp/plan")"
  "$sy" run -m "$tmp/tiny.gguf" -p "$prompt" -n 1 --fit-margin 10 >/dev/null 2>"$tmp/e" \
      && fail "--fit-margin without --fit was accepted"
  grep -q "without --fit" "$tmp/e" || fail "--fit-margin alone: $(cat "$tmp/e")"
  printf '[plugins]\nload = ["cpu"]\n[placement]\ndefault = "sim"\n[[placement.rules]]\nmatch = '"'"'_exps\\.'"'"'\nbackend = "cpu"\n[offload.ops]\nmul_mat_id = false\n"moe.fused_up_gate" = false\n' >"$tmp/policy.toml"
  on_sim --config "$tmp/policy.toml" >"$tmp/hybrid2" 2>"$tmp/e" \
      || fail "run with a placement config: $(cat "$tmp/e")"
  cmp -s "$tmp/out0" "$tmp/hybrid2" || fail "the placement config generated other tokens"
  # --profile: the same tokens; per backend its ops (the routed experts' mul_mat_id on the cpu,
  # one per MoE layer and step), the copies between the backends.
  on_sim --config "$tmp/policy.toml" --profile >"$tmp/prof" 2>"$tmp/e" \
      || fail "run --profile: $(cat "$tmp/e")"
  cmp -s "$tmp/out0" "$tmp/prof" || fail "--profile generated other tokens"
  grep -q "profile, decode steps: 31 graphs, 31 tokens" "$tmp/e" || fail "no decode profile: $(cat "$tmp/e")"
  grep -q "profile, prompt batches: 1 graphs" "$tmp/e" || fail "no prompt profile: $(cat "$tmp/e")"
  sed -n '/decode steps/,$p' "$tmp/e" | sed -n '/backend cpu:/,/backend sim:/p' \
      | grep -Eq "^ +ffn_up_exps\+ffn_gate_exps +62 " || fail "no routed expert products on the cpu: $(cat "$tmp/e")"
  grep -Eq "copies between backends: [0-9.]+ ms \([0-9.]+%\), [0-9.]+ KiB" "$tmp/e" \
      || fail "no copies in the profile: $(cat "$tmp/e")"
  # switchyard plan: the routed experts' weights on the cpu by the rule, the rest on sim by
  # default; every node with its backend, reason and candidates; --json parses and agrees. The
  # simulated link is slow (1 GB/s) so that copying a decode step's experts costs several times
  # what the cpu's hint says for reading them; the cpu's rates are fixed (a loaded machine once
  # measured a bandwidth at which the cpu's hint was the dearer).
  printf '[plugins.sim]\nlink_gbps = "1"\n' >"$tmp/slow.toml"
  printf "$cpu_rates" >>"$tmp/slow.toml"
  "$sy" plan -m "$tmp/tiny.gguf" -mla 2 -ctk f32 -ctv f32 -ub 16 --plugin "$sim" --backend sim \
      --config "$tmp/slow.toml" -ot '\.ffn_.*_exps\.=cpu' >"$tmp/plan" 2>"$tmp/e" || fail "plan: $(cat "$tmp/e")"
  grep -qF "(-ot #1)): ffn_up_exps, ffn_gate_exps, ffn_down_exps" "$tmp/plan" \
      || fail "plan: no expert homes by the rule: $(cat "$tmp/plan")"
  grep -q "sim (default backend): attn_norm" "$tmp/plan" || fail "plan: no default homes: $(cat "$tmp/plan")"
  grep -q "prompt ubatch of 16 tokens after 0 cached" "$tmp/plan" || fail "plan: no prompt graph"
  grep -q "decode step of 1 token after 16 cached" "$tmp/plan" || fail "plan: no decode graph"
  grep -Eq "mul_mat_id +blk\.1\.ffn_down_exps\.weight +cpu +cheapest of 2: sim [0-9.]+ us .*cpu [0-9.]+ us" "$tmp/plan" \
      || fail "plan: the decode step's expert product is not on the cpu with both costs: $(cat "$tmp/plan")"
  grep -q "memory per backend:" "$tmp/plan" || fail "plan: no memory"
  "$sy" plan -m "$tmp/tiny.gguf" -mla 2 -ctk f32 -ctv f32 -ub 16 --plugin "$sim" --backend sim \
      --config "$tmp/slow.toml" -ot '\.ffn_.*_exps\.=cpu' --json >"$tmp/plan.json" 2>"$tmp/e" || fail "plan --json: $(cat "$tmp/e")"
  python3 - "$tmp/plan.json" <<'PY' || fail "plan --json: $(head -c 2000 "$tmp/plan.json")"
import json, sys
p = json.load(open(sys.argv[1]))
homes = {w["name"]: w["backend"] for w in p["weights"]}
assert all(b == "cpu" for n, b in homes.items() if "_exps" in n), homes
assert all(b == "sim" for n, b in homes.items() if "_exps" not in n), homes
assert [g["phase"] for g in p["graphs"]] == ["prompt", "decode"]
decode = p["graphs"][1]
moe = [n for n in decode["nodes"] if "ffn_down_exps" in n["subject"]]
assert moe and all(n["backend"] == "cpu" for n in moe), moe
assert all(len(n["candidates"]) == 2 for n in moe)
assert decode["copy_bytes"] == sum(c["bytes"] for c in decode["copies"])
assert {m["backend"] for m in p["memory"]} == {"sim", "cpu"}
PY
fi
"$sy" run -m "$tmp/tiny.gguf" -p hi -n 1 -ot 'exps=nowhere' >"$tmp/o" 2>"$tmp/e" \
    && fail "a rule naming an unloaded backend ran"
grep -q "placement rule 'exps=nowhere' (-ot #1): backend 'nowhere' did not load: plugin 'nowhere' not found" "$tmp/e" \
    || fail "no message for the rule: $(cat "$tmp/e")"
# Gate and up of the dense FFN and the shared experts in different types: the fused MoE op
# (one type for both) is used for the routed experts only, and the file runs.
"$sy" quantize "$tmp/tiny.gguf" "$tmp/mixed.gguf" f32 --rule 'ffn_up(_shexp)?\.weight=f16' \
    >/dev/null 2>"$tmp/e" || fail "quantize with a rule: $(cat "$tmp/e")"
"$sy" run -m "$tmp/mixed.gguf" -p "$prompt" -n 8 --temp 0 --ignore-eos -fmoe 1 >"$tmp/o" 2>"$tmp/e" ||
  fail "gate f32 / up f16 with --fused-moe 1: $(cat "$tmp/e")"
# --no-mmap: the weights read into memory give the same tokens.
"$sy" run -m "$tmp/tiny.gguf" -p "$prompt" -n 32 --temp 0 --ignore-eos -mla 0 -ctk f32 -ctv f32 \
    --no-mmap --tokens >"$tmp/nommap" 2>"$tmp/e" || fail "run --no-mmap: $(cat "$tmp/e")"
cmp -s "$tmp/out0" "$tmp/nommap" || fail "--no-mmap generated other tokens"
# -ser Kmin,t: a threshold runs (experts dropped per token); Kmin = the model's 2 drops nothing.
"$sy" run -m "$tmp/tiny.gguf" -p "$prompt" -n 32 --temp 0 --ignore-eos -ser 1,0.9 --tokens \
    >"$tmp/ser" 2>"$tmp/e" || fail "run -ser 1,0.9: $(cat "$tmp/e")"
[ "$(grep -ao '\[[0-9]*\]' "$tmp/ser" | wc -l)" -eq 32 ] || fail "-ser 1,0.9: not 32 tokens"
"$sy" run -m "$tmp/tiny.gguf" -p "$prompt" -n 32 --temp 0 --ignore-eos -mla 0 -ctk f32 -ctv f32 \
    -ser 2,0.5 --tokens >"$tmp/ser2" 2>"$tmp/e" || fail "run -ser 2,0.5: $(cat "$tmp/e")"
cmp -s "$tmp/out0" "$tmp/ser2" || fail "-ser 2,0.5 (all experts kept) generated other tokens"
for bad in 1,x 1,0.5x 0,0.5 3,0.5 1,-1; do
  "$sy" run -m "$tmp/tiny.gguf" -p hi -ser $bad >"$tmp/o" 2>"$tmp/e" && fail "-ser $bad accepted"
  grep -q "ser" "$tmp/e" || fail "-ser $bad: message does not name it: $(cat "$tmp/e")"
done
# -ngl: a GPU count with a backend that computes on host memory is refused; -ngl 0 is the CPU;
# with 4 or more (tiny: 3 layers + output) the cuda backend runs all of it, with 1-3 the last
# layers (sim above; on a machine without a GPU: a clear error naming the missing device or plugin).
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  "$sy" run -m "$tmp/tiny.gguf" -p hi -n 1 -ngl 2 >"$tmp/o" 2>"$tmp/e" && fail "-ngl 2 ran without a GPU"
  grep -q -E "backend 'cuda' (has no device|is not loaded)" "$tmp/e" || fail "-ngl 2: $(cat "$tmp/e")"
fi
"$sy" run -m "$tmp/tiny.gguf" -p hi -n 1 -ngl 99 --backend cpu >"$tmp/o" 2>"$tmp/e" && fail "-ngl 99 --backend cpu accepted"
grep -q "computes on host memory" "$tmp/e" || fail "-ngl 99 --backend cpu: $(cat "$tmp/e")"
"$sy" run -m "$tmp/tiny.gguf" -p "$prompt" -n 32 --temp 0 --ignore-eos -ngl 0 -ctk f32 -ctv f32 \
    --tokens >"$tmp/ngl0" 2>"$tmp/e" || fail "run -ngl 0: $(cat "$tmp/e")"
cmp -s "$tmp/out3" "$tmp/ngl0" || fail "-ngl 0 generated other tokens than the CPU default"
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  "$sy" run -m "$tmp/tiny.gguf" -p hi -n 1 -ngl 99 >"$tmp/o" 2>"$tmp/e" && fail "-ngl 99 ran without a GPU"
  grep -q -E "backend 'cuda' (has no device|is not loaded)" "$tmp/e" || fail "-ngl 99 without a GPU: $(cat "$tmp/e")"
fi
# KV bytes per token printed equal the formulas (tiny: 3 layers, 4 heads, K 32+16, V 32,
# kv_lora 32, rope 16, 4-byte elements): mla 0 3*(4*48+4*32)*4, mla 1 3*(48+32)*4, mla 2/3 3*48*4.
grep -q "mla 0, KV cache f32/f32: 3840 B" "$tmp/err0" || fail "mla 0 KV size: $(head -1 "$tmp/err0")"
grep -q "mla 1, KV cache f32/f32: 960 B" "$tmp/err1" || fail "mla 1 KV size: $(head -1 "$tmp/err1")"
grep -q "mla 2, KV cache f32/f32: 576 B" "$tmp/err2" || fail "mla 2 KV size: $(head -1 "$tmp/err2")"
grep -q "mla 3, KV cache f32/f32: 576 B" "$tmp/err3" || fail "mla 3 KV size: $(head -1 "$tmp/err3")"

# Same seed, same text; logits of prompt + generated positions in the .npy.
"$sy" run -m "$tmp/tiny.gguf" -p "$prompt" -n 8 --seed 5 --temp 0.9 --ignore-eos \
    --logits-out "$tmp/l.npy" >"$tmp/s1" 2>/dev/null || fail "sampled run"
"$sy" run -m "$tmp/tiny.gguf" -p "$prompt" -n 8 --seed 5 --temp 0.9 --ignore-eos >"$tmp/s2" 2>/dev/null
cmp -s "$tmp/s1" "$tmp/s2" || fail "two runs with one seed differ"
python3 - "$tmp/l.npy" <<'PY' || fail ".npy content"
import struct, sys
b = open(sys.argv[1], "rb").read()
assert b[:6] == b"\x93NUMPY", "magic"
hl = struct.unpack("<H", b[8:10])[0]
header = b[10:10 + hl].decode()
assert "'descr': '<f4'" in header and (10 + hl) % 64 == 0, header
shape = eval(header)["shape"]
n_prompt = shape[0] - 7  # 8 generated tokens, 7 of them evaluated
assert n_prompt > 5 and shape[1] == 512, shape
assert len(b) - 10 - hl == shape[0] * shape[1] * 4, "data size"
PY

# --chat: the prompt as a user message laid out by the file's chat template, with -sys.
"$sy" run -m "$tmp/tiny.gguf" -p "Hi" -n 4 --temp 0 --chat -sys "Be brief." --tokens \
    >"$tmp/o" 2>"$tmp/e" || fail "run --chat: $(cat "$tmp/e")"
grep -q "chat template: the file's template, with a system prompt" "$tmp/e" || fail "chat line: $(cat "$tmp/e")"
"$sy" run -m "$tmp/tiny.gguf" -p "Hi" -n 1 --temp 0 --tokens >"$tmp/o" 2>"$tmp/e2" || fail "plain run"
[ "$(grep "prompt tokens" "$tmp/e" | wc -w)" -gt "$(grep "prompt tokens" "$tmp/e2" | wc -w)" ] ||
  fail "--chat did not add the layout's tokens"
"$sy" run -m "$tmp/tiny.gguf" -p hi --chat-template chatml >"$tmp/o" 2>"$tmp/e" && fail "--chat-template chatml accepted"
grep -q "chatml" "$tmp/e" || fail "bad template not named: $(cat "$tmp/e")"
"$sy" run -m "$tmp/tiny.gguf" -p hi --chat --no-special >"$tmp/o" 2>"$tmp/e" && fail "--chat --no-special accepted"

# Errors: clear message, non-zero exit.
"$sy" run -m "$tmp/missing.gguf" -p hi >"$tmp/o" 2>"$tmp/e" && fail "missing model accepted"
grep -q "missing.gguf" "$tmp/e" || fail "missing model not named: $(cat "$tmp/e")"
"$sy" run -m "$tmp/tiny.gguf" -p hi -ctk q4_0 >"$tmp/o" 2>"$tmp/e" && fail "q4_0 cache accepted"
grep -q -- "-ctk" "$tmp/e" || fail "bad -ctk not named: $(cat "$tmp/e")"
# tiny's 16 rope dimensions are not a whole q8_0 block: refused, naming the width.
"$sy" run -m "$tmp/tiny.gguf" -p hi -ctk q8_0 >"$tmp/o" 2>"$tmp/e" && fail "q8_0 cache on rope 16 accepted"
grep -q "qk_rope_head_dim (16)" "$tmp/e" || fail "q8_0 cache width message: $(cat "$tmp/e")"
# ik_llama.cpp's q8_KV, typed as its guides do: a K cache of whole latent rows (tiny's are 48).
"$sy" run -m "$tmp/tiny.gguf" -p hi -ctk q8_KV >"$tmp/o" 2>"$tmp/e" && fail "q8_KV cache on 48-wide rows accepted"
grep -q "kv_lora_rank + qk_rope_head_dim = 48" "$tmp/e" || fail "q8_KV width message: $(cat "$tmp/e")"
"$sy" run -m "$tmp/tiny.gguf" -p hi -ctv q8_KV >"$tmp/o" 2>"$tmp/e" && fail "-ctv q8_KV accepted"
grep -q "q8_KV is a K cache type" "$tmp/e" || fail "-ctv q8_KV message: $(cat "$tmp/e")"
"$sy" run -m "$tmp/tiny.gguf" -p "$prompt" -c 4 >"$tmp/o" 2>"$tmp/e" && fail "prompt longer than -c accepted"
grep -q "raise -c" "$tmp/e" || fail "context overflow message: $(cat "$tmp/e")"
"$sy" run -m "$tmp/tiny.gguf" -p "$prompt" -c 40 -n 100 --ignore-eos >"$tmp/o" 2>"$tmp/e" || fail "full context aborted: $(cat "$tmp/e")"
grep -q "context of 40 tokens is full" "$tmp/e" || fail "no context-full stop message: $(cat "$tmp/e")"
# --context-shift: the oldest tokens go, the rest is re-processed, generation goes on to -n.
"$sy" run -m "$tmp/tiny.gguf" -p "$prompt" -c 40 -n 100 --ignore-eos --context-shift --keep 2 --tokens \
    >"$tmp/o" 2>"$tmp/e" || fail "--context-shift: $(cat "$tmp/e")"
[ "$(grep -o '\[[0-9]*\]' "$tmp/o" | wc -l)" -eq 100 ] || fail "--context-shift: not 100 tokens"
grep -q "context full: dropped [0-9]* tokens after the first 3" "$tmp/e" || fail "no shift message: $(cat "$tmp/e")"
grep -q "context shifts: [2-9]" "$tmp/e" || fail "shift count: $(cat "$tmp/e")"
"$sy" run -m "$tmp/tiny.gguf" -p "$prompt" -c 40 -n 100 --ignore-eos --context-shift --keep -1 >"$tmp/o" 2>"$tmp/e" ||
  fail "--keep -1: $(cat "$tmp/e")"
"$sy" run -m "$tmp/tiny.gguf" >"$tmp/o" 2>"$tmp/e" && fail "no prompt accepted"
grep -q -- "-p TEXT or -f FILE" "$tmp/e" || fail "no-prompt message: $(cat "$tmp/e")"
# perplexity: llama.cpp's output lines; every attention mode gives the same value (F32).
python3 -c "
import random
random.seed(1)
w='the quick brown fox jumps over a lazy dog while tired engineers debug kernels'.split()
print(' '.join(random.choice(w) for _ in range(1500)))" >"$tmp/text.txt"
for mla in 0 1 2 3; do
  "$sy" perplexity -m "$tmp/tiny.gguf" -f "$tmp/text.txt" -c 128 --chunks 3 -mla $mla -ctk f32 -ctv f32 \
      >"$tmp/ppl$mla" 2>"$tmp/pe$mla" || fail "perplexity -mla $mla: $(cat "$tmp/pe$mla")"
  grep -q '^\[1\][0-9.]*,\[2\][0-9.]*,\[3\][0-9.]*,$' "$tmp/ppl$mla" || fail "chunk line: $(cat "$tmp/ppl$mla")"
  grep -q "^Final estimate: PPL = [0-9.]* +/- [0-9.]*$" "$tmp/ppl$mla" || fail "final line: $(cat "$tmp/ppl$mla")"
  grep -q "scored 189 tokens in 3 chunks" "$tmp/pe$mla" || fail "scored count: $(cat "$tmp/pe$mla")"
done
python3 - "$tmp"/ppl0 "$tmp"/ppl1 "$tmp"/ppl2 "$tmp"/ppl3 <<'PY' || fail "perplexity differs between modes"
import sys
v = [float(open(f).read().split("PPL = ")[1].split()[0]) for f in sys.argv[1:]]
assert all(abs(x / v[0] - 1) < 1e-3 for x in v), v
PY
head -c 300 "$tmp/text.txt" >"$tmp/short.txt"
"$sy" perplexity -m "$tmp/tiny.gguf" -f "$tmp/short.txt" -c 128 >"$tmp/o" 2>"$tmp/e" && fail "short text accepted"
grep -q "needs at least 256" "$tmp/e" || fail "short-text message: $(cat "$tmp/e")"
"$sy" perplexity -m "$tmp/tiny.gguf" -f "$tmp/nothing.txt" >"$tmp/o" 2>"$tmp/e" && fail "missing text accepted"
grep -q "nothing.txt" "$tmp/e" || fail "missing text not named: $(cat "$tmp/e")"
mkdir -p "$tmp/a_folder"
for cmd in run perplexity; do
  "$sy" $cmd -m "$tmp/tiny.gguf" -f "$tmp/a_folder" >"$tmp/o" 2>"$tmp/e" &&
    fail "$cmd -f with a folder accepted"
  grep -q "a_folder: a folder, not a text file" "$tmp/e" || fail "$cmd -f folder: $(cat "$tmp/e")"
done
echo PASS
