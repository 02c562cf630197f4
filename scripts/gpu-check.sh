#!/usr/bin/env bash
# The CUDA plugin's checks and benchmarks on a GPU machine, from a Release build made elsewhere.
#
#   scripts/gpu-check.sh STAGE OUT [PART...]
#
# STAGE holds bin/ (switchyard, cuda_plugin_test, switchyard-conformance, switchyard-gemv-bench),
# lib/switchyard/ (the plugins) and syslib/ (shared libraries the GPU machine may lack); make it
# with `scripts/gpu-check.sh --stage build STAGE`. OUT receives the logs. PARTs (default: all):
#   tests   cuda_plugin_test and the conformance kit on every capability row
#   models  greedy tokens and logits of the tiny and mini presets, CPU against CUDA (-ngl 99),
#           for several weight types, attention modes, cache types and -ser
#   speed   generation (tg128) and prompt (pp512) on mini and lite fully on the GPU, and the
#           GEMV/GEMM bench, with a device-to-device copy for the bandwidth ceiling
#   ab      GEMV of several builds of the cuda plugin, interleaved: AB_PLUGINS="label=path ..."
#           (default: the staged plugin alone), AB_ROUNDS rounds (default 2) over GEMV_TYPES, and
#           the conformance kit's get_rows, mul_mat and mul_mat_id rows on the builds in AB_CHECK
#           (labels; default all), with cuda_plugin_test; AB_MODEL=preset:type adds generation
#           on the GPU with each build
#   cli     llama.cpp spellings on a device: --backend CUDA0, -ot exps=CPU with -ngl 99, and
#           perplexity over 32 chunks of 512 tokens one chunk per pass (-b 512) and four (-b 2048)
#   hybrid  lite Q4_0 (or $HYBRID_PRESET) with the routed experts in host RAM on the CPU and the rest on the GPU
#           (--cpu-moe -ngl 99; the target: at most 5% of generation lost to copies,
#           synchronization and host work): pp512 and tg128 against the CPU alone, with [offload]
#           overlap on and off, run's "generation time" line (copies + synchronization + host),
#           a --profile of the decode steps, plan's placement of the expert products, bench's
#           table with the overhead share, and mini's greedy tokens hybrid against the CPU's
set -u

if [[ ${1:-} == --stage ]]; then
  build=$2 stage=$3
  mkdir -p "$stage/bin" "$stage/lib/switchyard" "$stage/syslib"
  cp "$build"/bin/{switchyard,cuda_plugin_test,switchyard-conformance,switchyard-gemv-bench} "$stage/bin/"
  cp "$build"/lib/switchyard/*.so "$stage/lib/switchyard/"
  # Every shared library the programs and plugins use from this machine's system (cairo and its
  # dependencies among them), except the C and C++ runtimes and CUDA's, which the GPU machine has.
  for f in "$stage"/bin/* "$stage"/lib/switchyard/*.so; do ldd "$f"; done |
    awk '$3 ~ /^\/(usr\/)?lib\// && $1 !~ /^(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux.*)\.so/ {print $3}' |
    sort -u | xargs -r cp -L -t "$stage/syslib"
  exit 0
fi

stage=$(realpath "$1") out=$2
shift 2
parts=${*:-tests models speed hybrid}
mkdir -p "$out"
export LD_LIBRARY_PATH="$stage/syslib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SWITCHYARD_CUDA_PLUGIN="$stage/lib/switchyard/libswitchyard-cuda.so"
sy="$stage/bin/switchyard"
models=/tmp/sy-gpu-models
mkdir -p "$models"
summary="$out/summary.txt"
say() { echo "$*" | tee -a "$summary"; }

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv | tee -a "$summary"
say "cpu: $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) threads"

# A model file, written once per run.
model() {  # preset type
  local f="$models/$1-$2.gguf"
  [[ -f $f ]] || "$sy" make-model --preset "$1" --type "$2" -o "$f" >/dev/null 2>&1 || { echo "make-model $1 $2 failed" >&2; return 1; }
  echo "$f"
}

if [[ $parts == *tests* ]]; then
  # The conformance kit once, through its own tool (cuda_plugin_test's conformance test runs the
  # same cases); its failures, by type, go to the summary.
  timeout 240 "$stage/bin/cuda_plugin_test" --gtest_filter=-CudaConformance.* >"$out/cuda_plugin_test.log" 2>&1
  say "cuda_plugin_test: exit $? — $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/cuda_plugin_test.log" | tr '\n' ' ')"
  timeout 300 "$stage/bin/switchyard-conformance" "$SWITCHYARD_CUDA_PLUGIN" >"$out/conformance.log" 2>&1
  say "conformance: exit $? — $(tail -n 2 "$out/conformance.log" | tr '\n' ' ')"
  grep -E '^FAIL' "$out/conformance.log" | awk '{print $2, $3}' | sort | uniq -c | head -n 40 | tee -a "$summary"
  grep -E '^FAIL' "$out/conformance.log" | head -n 8 | cut -c 1-300 | tee -a "$summary"
fi

if [[ $parts == *models* ]]; then
  # The same tokens through both backends (teacher forcing): a 40-token prompt and -n 1, the
  # CPU in one ubatch, the GPU once in one ubatch (its prompt graph) and once with -ub 1 (every
  # position through its one-token generation graph). Greedy continuations of these random
  # models hinge on near ties, so tokens are compared too but the logits decide.
  head -c 200 README.md >"$models/short.txt"
  compare() {  # label model extra-args...
    local label=$1 m=$2
    shift 2
    local c="$out/cmp-$label" rc=0
    timeout 150 "$sy" run -m "$m" -f "$models/short.txt" -n 1 --temp 0 --logits-out "$c-cpu.npy" --backend cpu "$@" >/dev/null 2>"$c-cpu.err" || rc=1
    timeout 150 "$sy" run -m "$m" -f "$models/short.txt" -n 1 --temp 0 --logits-out "$c-gpu.npy" -ngl 99 "$@" >/dev/null 2>"$c-gpu.err" || rc=1
    timeout 150 "$sy" run -m "$m" -f "$models/short.txt" -n 1 --temp 0 --logits-out "$c-gpu1.npy" -ngl 99 --ubatch-size 1 "$@" >/dev/null 2>"$c-gpu1.err" || rc=1
    if ((rc != 0)); then
      say "$label: FAILED to run: $(tail -q -n 1 "$c-cpu.err" "$c-gpu.err" "$c-gpu1.err" | tr '\n' ' ')"
      return
    fi
    say "$label: $(env -u LD_LIBRARY_PATH python3 - "$c-cpu.npy" "$c-gpu.npy" "$c-gpu1.npy" <<'EOF2'
import sys, numpy as np
a = np.load(sys.argv[1]).astype(np.float64)
out = []
for name, f in (("prompt graph", sys.argv[2]), ("1-token graphs", sys.argv[3])):
    b = np.load(f).astype(np.float64)
    if a.shape != b.shape:
        out.append(f"{name}: shapes differ {a.shape} {b.shape}"); continue
    rel = np.linalg.norm(a - b, axis=1) / np.maximum(np.linalg.norm(a, axis=1), 1e-30)
    agree = (a.argmax(1) == b.argmax(1)).mean()
    out.append(f"{name}: rel err median {np.median(rel):.1e} max {rel.max():.1e}, argmax {agree*100:.0f}%"
               f"{', NaN' if np.isnan(b).any() else ''}")
print(f"{a.shape[0]} positions; " + "; ".join(out))
EOF2
)"
  }
  # One weight type per model, several at a time (each run with 4 threads).
  types=${MODEL_TYPES:-f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_K q3_K q4_K q5_K q6_K iq4_nl iq4_xs
    iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m q6_0 iq2_k iq3_k iq4_k iq5_k iq6_k iq2_ks iq3_ks
    iq4_ks iq5_ks iq4_kss iq2_kl iq1_kt iq2_kt iq3_kt iq4_kt}
  for t in $types; do
    (compare "tiny-$t" "$(model tiny $t)" -t 4) &
    (($(jobs -rp | wc -l) >= 4)) && wait -n
  done
  wait
fi
# The attention modes, cache types, -ser, -amb, the split layout, mini and perplexity (MODELS_EXTRA=0
# leaves them out: the weight types alone).
if [[ $parts == *models* && ${MODELS_EXTRA:-1} != 0 ]]; then
  tq8=$(model tiny q8_0)
  tf=$(model tiny f32)
  for mla in 0 1 2; do compare "tiny-f32-mla$mla" "$tf" --mla "$mla"; done
  for ct in f32 bf16; do compare "tiny-f32-ctk-$ct" "$tf" --cache-type-k "$ct" --cache-type-v "$ct"; done
  compare "tiny-f32-mla0-ctk-f32" "$tf" --mla 0 --cache-type-k f32 --cache-type-v f32
  compare "tiny-f32-ser" "$tf" --smart-expert-reduction 1,0.5
  compare "tiny-q8_0-ser" "$tq8" --smart-expert-reduction 1,0.5
  compare "tiny-f32-amb" "$tf" --attention-max-batch 1
  split="$models/tiny-f32-split.gguf"
  "$sy" make-model --preset tiny --type f32 --kv-layout split -o "$split" >/dev/null 2>&1
  compare "tiny-f32-split" "$split"
  compare "tiny-f32-split-mla0" "$split" --mla 0
  for t in bf16 q8_0 q4_0 q4_K; do compare "mini-$t" "$(model mini $t)"; done
  # Perplexity over README text: a bug shows as a different figure, rounding does not.
  head -c 6000 README.md >"$models/ppl.txt"
  for t in f32 q8_0; do
    for be in cpu gpu; do
      ngl=0; [[ $be == gpu ]] && ngl=99
      timeout 200 "$sy" perplexity -m "$(model mini $t)" -f "$models/ppl.txt" -c 256 -ngl $ngl >"$out/ppl-$t-$be.log" 2>&1
      say "perplexity mini $t on $be (exit $?): $(grep -i -E 'final|perplexity[: =]' "$out/ppl-$t-$be.log" | tail -n 1)"
    done
  done
fi

if [[ $parts == *speed* ]]; then
  env -u LD_LIBRARY_PATH python3 - <<'EOF' 2>&1 | tee -a "$summary"
import torch
x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda"); y = torch.empty_like(x)
for _ in range(3): y.copy_(x)
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
ts = []
for _ in range(20):
    s.record(); y.copy_(x); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
ts.sort()
print(f"device-to-device copy 1 GiB: best {2 * (1 << 30) / ts[0] / 1e6:.0f} GB/s, "
      f"median {2 * (1 << 30) / ts[len(ts) // 2] / 1e6:.0f} GB/s (read + write)")
EOF
  "$stage/bin/switchyard-gemv-bench" --plugin "$SWITCHYARD_CUDA_PLUGIN" --reps 20 \
    --types ${GEMV_TYPES:-f32,bf16,f16,q8_0,q4_0,q4_K,q5_K,q6_K,iq4_nl,iq4_xs,iq2_xxs,iq1_s,iq3_xxs,iq2_k,iq4_ks,iq2_kt} >"$out/gemv.log" 2>&1
  say "gemv-bench (4096 x 16384, exit $?):"; grep -v '^#' "$out/gemv.log" | tail -n 45 | tee -a "$summary"
  "$stage/bin/switchyard-gemv-bench" --plugin "$SWITCHYARD_CUDA_PLUGIN" --reps 20 \
    --types q8_0,q4_0,q4_K --experts 64:6 -k 2048 -n 1408 >"$out/gemv-experts.log" 2>&1
  say "gemv-bench experts 64:6 (2048 x 1408, exit $?):"; tail -n 6 "$out/gemv-experts.log" | tee -a "$summary"
  head -c 880 README.md >"$models/prompt.txt"  # about 512 tokens of the synthetic vocabulary
  for spec in ${SPEED_MODELS:-mini:q4_0:cuda mini:q4_0:cpu mini:q8_0:cuda lite:q4_0:cuda}; do
    IFS=: read -r preset type be <<<"$spec"
    m=$(model "$preset" "$type") || continue
    {
      log="$out/speed-$preset-$type-$be.log"
      ngl=0
      [[ $be == cuda ]] && ngl=99
      timeout 200 "$sy" run -m "$m" -f "$models/prompt.txt" -n 128 --temp 0 --ignore-eos -ngl $ngl -c 1024 >/dev/null 2>"$log"
      say "$preset $type on $be (exit $?): $(grep -E '^(prompt|generation|host overhead|on )' "$log" | tr -s ' ' | tr '\n' ';')"
    }
  done
  # Where the device time goes: generation (short prompt, 32 tokens) and a 512-token prompt.
  for spec in ${PROFILE_MODELS:-mini:q4_0 lite:q4_0}; do
    IFS=: read -r preset type <<<"$spec"
    m=$(model "$preset" "$type") || continue
    SWITCHYARD_CUDA_PROFILE=1 timeout 200 "$sy" run -m "$m" -p "Once upon a time" -n 32 --temp 0 --ignore-eos -ngl 99 >/dev/null 2>"$out/profile-tg-$preset-$type.log"
    say "profile tg32 $preset $type:"; grep -A 14 '^cuda profile' "$out/profile-tg-$preset-$type.log" | tee -a "$summary"
    SWITCHYARD_CUDA_PROFILE=1 timeout 200 "$sy" run -m "$m" -f "$models/prompt.txt" -n 1 --temp 0 -ngl 99 -c 1024 >/dev/null 2>"$out/profile-pp-$preset-$type.log"
    say "profile pp $preset $type:"; grep -A 10 '^cuda profile' "$out/profile-pp-$preset-$type.log" | tee -a "$summary"
  done
fi
if [[ $parts == *ab* ]]; then
  read -r -a builds <<<"${AB_PLUGINS:-staged=$SWITCHYARD_CUDA_PLUGIN}"
  for b in "${builds[@]}"; do
    label=${b%%=*} so=${b#*=}
    [[ " ${AB_CHECK:-$label} " == *" $label "* ]] || continue
    for op in get_rows mul_mat mul_mat_id; do
      timeout 120 "$stage/bin/switchyard-conformance" "$so" --op $op >"$out/ab-conformance-$label-$op.log" 2>&1
      say "conformance $op $label: exit $? — $(tail -n 1 "$out/ab-conformance-$label-$op.log")"
    done
  done
  for b in "${builds[@]}"; do
    label=${b%%=*} so=${b#*=}
    [[ " ${AB_CHECK:-$label} " == *" $label "* ]] || continue
    SWITCHYARD_CUDA_PLUGIN=$so timeout 240 "$stage/bin/cuda_plugin_test" --gtest_filter=-CudaConformance.* >"$out/ab-cuda_plugin_test-$label.log" 2>&1
    say "cuda_plugin_test $label: exit $? — $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/ab-cuda_plugin_test-$label.log" | tr '\n' ' ')"
  done
  # AB_MODEL=preset:type: generation (tg128 after a short prompt) on the GPU with each build.
  [[ -n ${AB_MODEL:-} ]] && abm=$(model "${AB_MODEL%%:*}" "${AB_MODEL#*:}")
  for round in $(seq "${AB_ROUNDS:-2}"); do
    for b in "${builds[@]}"; do
      label=${b%%=*} so=${b#*=}
      timeout 120 "$stage/bin/switchyard-gemv-bench" --plugin "$so" --reps 20 --gemm-rows 0 \
        --types "${GEMV_TYPES:-q8_0,q4_0,q4_K,iq4_xs}" >"$out/ab-gemv-$label-$round.log" 2>&1
      say "gemv $label round $round (exit $?)"
      if [[ -n ${abm:-} ]]; then
        printf '[plugins]\nload = ["cpu", "%s"]\n' "$so" >"$models/ab-$label.toml"
        timeout 120 "$sy" run -m "$abm" -p "Once upon a time" -n 128 --temp 0 --ignore-eos -ngl 99 \
          --config "$models/ab-$label.toml" >/dev/null 2>"$out/ab-run-$label-$round.log"
        say "$AB_MODEL tg128 $label round $round (exit $?): $(grep -E '^generation:' "$out/ab-run-$label-$round.log" | tr -s ' ')"
      fi
    done
  done
  # One table: GB/s per type (rows) and build (columns), every round.
  env -u LD_LIBRARY_PATH python3 - "$out" "${builds[@]}" <<'EOF2' | tee -a "$summary"
import sys, glob, re, os
out, builds = sys.argv[1], [b.split("=", 1)[0] for b in sys.argv[2:]]
table, types = {}, []
for b in builds:
    for f in sorted(glob.glob(os.path.join(out, f"ab-gemv-{b}-*.log"))):
        for line in open(f):
            m = re.match(r"^(\S+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+(\S+)", line)
            if m:
                if m.group(1) not in types: types.append(m.group(1))
                table.setdefault((m.group(1), b), []).append(f"{float(m.group(2)):.0f}")
print("GB/s per round    " + "".join(f"{b:>16}" for b in builds))
for t in types:
    print(f"{t:<17}" + "".join(f"{'/'.join(table.get((t, b), ['-'])):>16}" for b in builds))
EOF2
fi

if [[ $parts == *cli* ]]; then
  tq=$(model tiny q4_0)
  timeout 100 "$sy" run -m "$tq" -p "Once upon a time" -n 8 --temp 0 --backend CUDA0 -ngl 99 >"$out/cli-backend.out" 2>"$out/cli-backend.err"
  say "--backend CUDA0 -ngl 99 (exit $?): $(grep -E '^(on |generation)' "$out/cli-backend.err" | tr '\n' ';')"
  timeout 100 "$sy" run -m "$tq" -p "Once upon a time" -n 8 --temp 0 --backend CUDA1 -ngl 99 >/dev/null 2>"$out/cli-backend1.err"
  say "--backend CUDA1 on one GPU (exit $?): $(tail -n 1 "$out/cli-backend1.err")"
  mq=$(model mini q4_0)
  timeout 150 "$sy" run -m "$mq" -p "Once upon a time" -n 32 --temp 0 --ignore-eos -ngl 99 -ot exps=CPU >"$out/cli-ot.out" 2>"$out/cli-ot.err"
  say "-ngl 99 -ot exps=CPU (exit $?): $(grep -E '^(weights|on |generation)' "$out/cli-ot.err" | tr -s ' ' | tr '\n' ';')"
  timeout 150 "$sy" plan -m "$mq" -ngl 99 -ot exps=CPU >"$out/cli-ot-plan.log" 2>&1
  say "plan -ngl 99 -ot exps=CPU (exit $?): expert nodes per backend: $(awk '$3 ~ /_exps/ {n[$4]++} END {for (b in n) printf "%s %d; ", b, n[b]}' "$out/cli-ot-plan.log"); other nodes: $(awk '$1 ~ /^[0-9]+$/ && $3 !~ /_exps/ {n[$4]++} END {for (b in n) printf "%s %d; ", b, n[b]}' "$out/cli-ot-plan.log")"
  cat docs/*.md plugins/*/README.md >"$models/long.txt"
  for b in 512 2048; do
    start=$EPOCHREALTIME
    timeout 200 "$sy" perplexity -m "$mq" -f "$models/long.txt" -c 512 --chunks 32 -b $b -ngl 99 >"$out/cli-ppl-b$b.log" 2>&1
    rc=$?
    say "perplexity mini q4_0 on the GPU, 32 x 512, -b $b (exit $rc): $(awk "BEGIN{printf \"%.2f s\", $EPOCHREALTIME - $start}"); $(grep -iE 'final estimate|per pass|seconds' "$out/cli-ppl-b$b.log" | tr '\n' ' ')"
  done
fi

if [[ $parts == *hybrid* ]]; then
  head -c 880 README.md >"$models/prompt.txt"
  printf '[plugins]\nload = ["cpu"]\n' >"$models/cpu-only.toml"
  printf '[offload]\noverlap = false\n' >"$models/no-overlap.toml"
  preset=${HYBRID_PRESET:-lite}
  if m=$(model "$preset" q4_0); then
    for label in cpu hybrid hybrid-no-overlap; do
      case $label in
        cpu) args=(-ngl 0 --config "$models/cpu-only.toml") ;;
        hybrid) args=(-ngl 99 --cpu-moe) ;;
        *) args=(-ngl 99 --cpu-moe --config "$models/no-overlap.toml") ;;
      esac
      log="$out/hybrid-$preset-q4_0-$label.log"
      timeout 300 "$sy" run -m "$m" -f "$models/prompt.txt" -n 128 --temp 0 --ignore-eos -c 1024 \
          "${args[@]}" >/dev/null 2>"$log"
      rc=$?
      say "$preset q4_0 $label (exit $rc): $(grep -E '^(prompt|generation|host overhead|weights:)' "$log" | tr -s ' ' | tr '\n' ';')$( ((rc)) && tail -n 1 "$log")"
    done
    timeout 300 "$sy" run -m "$m" -p "Once upon a time" -n 32 --temp 0 --ignore-eos -ngl 99 --cpu-moe \
        --profile >/dev/null 2>"$out/hybrid-profile.log"
    say "hybrid --profile (exit $?):"; grep -E '^(profile|  backend|  copies|  host)' "$out/hybrid-profile.log" | tee -a "$summary"
    timeout 300 "$sy" plan -m "$m" -ngl 99 --cpu-moe -c 1024 >"$out/hybrid-plan.log" 2>&1
    say "hybrid plan (exit $?): $(grep -cE 'ffn_(up|down)_exps.* cuda ' "$out/hybrid-plan.log") expert products on cuda"
    grep -E '(prompt ubatch|decode step)|_exps' "$out/hybrid-plan.log" | head -n 12 | tee -a "$summary"
    # bench's table: the CPU alone (the cpu plugin only) and the hybrid run, the overhead share
    # a column of the hybrid's.
    timeout 200 "$sy" bench -m "$m" -p 512 -n 128 -r 2 --config "$models/cpu-only.toml" \
        >"$out/hybrid-bench-cpu.md" 2>"$out/hybrid-bench-cpu.log"
    say "cpu-only bench (exit $?):"; grep -E '^\|' "$out/hybrid-bench-cpu.md" | tee -a "$summary"
    timeout 200 "$sy" bench -m "$m" -p 512 -n 128 -r 2 -ngl 99 --cpu-moe \
        >"$out/hybrid-bench.md" 2>"$out/hybrid-bench.log"
    say "hybrid bench (exit $?):"; grep -E '^\|' "$out/hybrid-bench.md" | tee -a "$summary"
  fi
  # Greedy tokens of the hybrid placement against the CPU alone's (mini q4_0): where they part.
  if m=$(model mini q4_0); then
    for label in cpu hybrid; do
      case $label in
        cpu) args=(-ngl 0 --config "$models/cpu-only.toml") ;;
        *) args=(-ngl 99 --cpu-moe) ;;
      esac
      timeout 120 "$sy" run -m "$m" -p "The quick brown fox" -n 64 --temp 0 --ignore-eos --tokens \
          "${args[@]}" >"$out/hybrid-tokens-$label.txt" 2>/dev/null
    done
    say "hybrid tokens on mini q4_0: $(python3 - "$out/hybrid-tokens-cpu.txt" "$out/hybrid-tokens-hybrid.txt" <<'PY'
import re, sys
a, b = (re.findall(r"\[(\d+)\]", open(f, errors="replace").read()) for f in sys.argv[1:3])
diff = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
print(f"{len(a)} and {len(b)} ids, " + ("identical" if diff is None and len(a) == len(b) else f"first difference at {diff}"))
PY
)"
  fi
fi
tar -C "$out" --exclude='*.npy' -czf /tmp/gpu-check-logs.tgz . && mv /tmp/gpu-check-logs.tgz "$out/"
find "$out" -maxdepth 1 -type f ! -name summary.txt ! -name gpu-check-logs.tgz -delete
echo "== summary"; cat "$summary"
