#!/usr/bin/env bash
# The BLAS plugin from the command line: `plugins` lists it with its ops, types and measured cost
# parameters; `plan` on a bf16 model puts the prompt's matrix products on blas and the one-token
# step's on cpu by the cost hints alone; a run with blas gives the same text as cpu alone; the
# engine is chosen in the config; without oneDNN it falls back to OpenBLAS, without both it is
# reported and the run goes on without it; bad options are clear errors.
# Arguments: the switchyard binary, the blas plugin file, and "on" or "off": whether to check the
# placements that the measured rates decide (off in the sanitizer build, whose instrumented
# packing is not this machine's speed).
set -u
sy=$1
blas_so=$(realpath "$2")
placement=${3:-on}
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$sy" make-model --preset tiny --type bf16 -o "$tmp/tiny.gguf" >/dev/null 2>&1 || fail "make-model"
m=$tmp/tiny.gguf

# plugins: blas with its three ops, bf16 among the weight types, and the measured rates.
"$sy" plugins --plugin "$blas_so" >"$tmp/p" 2>&1 || fail "plugins: $(cat "$tmp/p")"
blas=$(sed -n '/^blas /,/^[a-z]/p' "$tmp/p")
for want in "engine onednn" "mul_mat " "mul_mat_id" "moe.fused_up_gate v1" \
            "cost gemm_f32_m256" "cost overhead" "computes on host memory"; do
    grep -qF -- "$want" <<<"$blas" || fail "plugins: '$want' missing from blas: $blas"
done
grep -E '^ +mul_mat +f32 <- \{f32,f16,bf16,q4_0,' <<<"$blas" >/dev/null ||
    fail "plugins: blas mul_mat weight types: $blas"

# plan: every product of the bf16 model goes where its hints say, with both candidates and their
# estimates in the plan. blas's hints are its GEMM rates measured at load, the cpu's come from
# its clock: on a VM whose cores are throttled (another tenant on them) blas measures far less
# than its usual rate and honestly loses the prompt products it wins otherwise, so each node is
# checked against its own estimates where one backend is clearly (1.25x) cheaper; the prompt's
# dense products on blas and every decode product on cpu are the usual outcome, not asserted.
# (The tiny model's experts are too small for a GEMM library to pay.) A ubatch of 1024: at 512
# blas's lead on the tiny model's attn_q_b product is about as large as the spread of its
# per-product cost (waking its passive OpenMP workers) from one process to the next
# (docs/design-measurements.md#blas-test-ubatch).
"$sy" plan -m "$m" --plugin "$blas_so" -ub 1024 -c 1024 --json >"$tmp/plan.json" 2>"$tmp/e" ||
    fail "plan: $(cat "$tmp/e")"
python3 - "$tmp/plan.json" "$placement" <<'PY' || fail "plan placement"
import json, sys
plan = json.load(open(sys.argv[1]))
check_placement = sys.argv[2] == "on"
graphs = {g["phase"]: g for g in plan["graphs"]}
products = ("mul_mat", "mul_mat_id", "moe.fused_up_gate")
checked = 0
for phase in ("prompt", "decode"):
    nodes = [n for n in graphs[phase]["nodes"] if n["op"] in products and n["subject"].startswith("blk.")]
    assert nodes, phase
    for n in nodes:
        cost = {c["backend"]: c["total_ns"] for c in n["candidates"]}
        assert sorted(cost) == ["blas", "cpu"], n
        assert all(c["source"] == "hint" and c["total_ns"] > 0 for c in n["candidates"]), n
        cheap = min(cost, key=cost.get)
        other = max(cost, key=cost.get)
        if check_placement and cost[other] >= 1.25 * cost[cheap]:
            assert n["backend"] == cheap, (phase, n["subject"], n["backend"], cost)
            checked += 1
assert not check_placement or checked > 0, "no node with a clear winner"
PY

# The same text with and without blas (greedy), with a prompt long enough (~400 tokens in one
# ubatch) that blas really runs its products (the prompt's dense products pinned to it, whatever
# this machine's rates): --profile must show it.
prompt=$(for i in $(seq 1 40); do printf 'one two three four five six seven eight nine ten '; done)
"$sy" run -m "$m" -p "$prompt" -n 12 --temp 0 -ub 512 >"$tmp/cpu.txt" 2>"$tmp/e" ||
    fail "run cpu: $(cat "$tmp/e")"
printf '[[offload.pins]]\nop = "mul_mat"\nbackend = "blas"\nphase = "prompt"\n' >"$tmp/pin.toml"
"$sy" run -m "$m" -p "$prompt" -n 12 --temp 0 -ub 512 --plugin "$blas_so" --config "$tmp/pin.toml" \
    --profile >"$tmp/blas.txt" 2>"$tmp/e" || fail "run blas: $(cat "$tmp/e")"
[ "$placement" = off ] || grep -q "backend blas:" "$tmp/e" || fail "blas ran nothing: $(cat "$tmp/e")"
cmp -s "$tmp/cpu.txt" "$tmp/blas.txt" || fail "run with blas differs: $(cat "$tmp/cpu.txt") / $(cat "$tmp/blas.txt")"

# Converted weights kept between calls: a q8_0 model's products convert their weights to the
# operand type; with the cache (default) the second ubatch reuses the first one's copies, and the
# logits are those of converting on every call (weight_cache_mib = 0; every product
# pinned to blas in both runs, since the costs differ with and without kept copies); run reports
# the memory the copies take.
"$sy" make-model --preset tiny --type q8_0 -o "$tmp/q8.gguf" >/dev/null 2>&1 || fail "make-model q8_0"
pins=''
for op in mul_mat mul_mat_id moe.fused_up_gate; do
    pins="$pins[[offload.pins]]\nop = \"$op\"\nbackend = \"blas\"\n"
done
printf "[plugins]\nload = [\"cpu\", \"%s\"]\n$pins" "$blas_so" >"$tmp/cache.toml"
printf "[plugins]\nload = [\"cpu\", \"%s\"]\n[plugins.blas]\nweight_cache_mib = 0\n$pins" "$blas_so" >"$tmp/nocache.toml"
"$sy" run -m "$tmp/q8.gguf" -p "$prompt" -n 4 --temp 0 -ub 256 --config "$tmp/cache.toml" \
    --logits-out "$tmp/kept.npy" >"$tmp/kept.txt" 2>"$tmp/e" || fail "run q8_0 blas: $(cat "$tmp/e")"
cp "$tmp/e" "$tmp/kept.err"
"$sy" run -m "$tmp/q8.gguf" -p "$prompt" -n 4 --temp 0 -ub 256 --config "$tmp/nocache.toml" \
    --logits-out "$tmp/converted.npy" >"$tmp/converted.txt" 2>"$tmp/e" ||
    fail "run q8_0 blas without the cache: $(cat "$tmp/e")"
# Packed and plain weights may take different oneDNN kernels (other summation orders): the
# logits agree to float rounding, not necessarily bit for bit.
python3 - "$tmp/kept.npy" "$tmp/converted.npy" <<'PY' || fail "kept weights give other logits than converted ones"
import array, sys
def load(path):
    raw = open(path, "rb").read()
    assert raw[:6] == b"\x93NUMPY", path
    n = int.from_bytes(raw[8:10], "little") if raw[6] == 1 else int.from_bytes(raw[8:12], "little")
    start = (10 if raw[6] == 1 else 12) + n
    a = array.array("f")
    a.frombytes(raw[start:])
    return a
a, b = load(sys.argv[1]), load(sys.argv[2])
assert len(a) == len(b) and len(a) > 0, (len(a), len(b))
scale = max(abs(x) for x in b)
worst = max(abs(x - y) for x, y in zip(a, b))
assert worst <= 1e-3 * scale, (worst, scale)
PY
cmp -s "$tmp/kept.txt" "$tmp/converted.txt" || fail "kept weights give another text"
if grep -q "plugin memory beyond" "$tmp/e"; then fail "weight_cache_mib = 0 kept memory: $(cat "$tmp/e")"; fi
if [ "$placement" = on ]; then
    grep -qE "plugin memory beyond the buffers above: blas [0-9.]+ MiB" "$tmp/kept.err" ||
        fail "kept weights not reported: $(cat "$tmp/kept.err")"
fi
"$sy" plugins --plugin "$blas_so" >"$tmp/p" 2>&1 || fail "plugins: $(cat "$tmp/p")"
grep -qE "converted weights kept up to [0-9]+ MiB" "$tmp/p" || fail "cache budget not shown: $(cat "$tmp/p")"
grep -q "cost extra_memory" "$tmp/p" || fail "extra_memory row missing: $(cat "$tmp/p")"
printf '[plugins]\nload = ["cpu", "%s"]\n[plugins.blas]\nweight_cache_mib = "lots"\n' "$blas_so" >"$tmp/bad4.toml"
if "$sy" plugins --config "$tmp/bad4.toml" >"$tmp/p" 2>&1; then fail "weight_cache_mib = lots accepted"; fi
grep -q "weight_cache_mib = 'lots'; expected auto or a whole number of MiB" "$tmp/p" ||
    fail "weight_cache_mib = lots: $(cat "$tmp/p")"

# Engine in the config; bad values name the key.
printf '[plugins]\nload = ["cpu", "%s"]\n[plugins.blas]\nengine = "openblas"\n' "$blas_so" >"$tmp/ob.toml"
"$sy" plugins --config "$tmp/ob.toml" >"$tmp/p" 2>&1 || fail "plugins openblas: $(cat "$tmp/p")"
grep -q "build: engine openblas" "$tmp/p" || fail "engine = openblas not applied: $(cat "$tmp/p")"
printf '[plugins]\nload = ["cpu", "%s"]\n[plugins.blas]\nengine = "mkl"\n' "$blas_so" >"$tmp/bad.toml"
if "$sy" plugins --config "$tmp/bad.toml" >"$tmp/p" 2>&1; then fail "engine = mkl accepted"; fi
grep -q "engine" "$tmp/p" && grep -q "bad.toml" "$tmp/p" || fail "engine = mkl message: $(cat "$tmp/p")"
# f16 weights: widened to f32 (exact) unless f16_weights = "bf16" asks for bf16's speed (on an
# engine with bf16 products, as the block types' dequantize_to).
"$sy" plugins --plugin "$blas_so" >"$tmp/p" 2>&1 || fail "plugins: $(cat "$tmp/p")"
grep -q "f16 weights to f32" "$tmp/p" || fail "f16 weights not f32 by default: $(cat "$tmp/p")"
printf '[plugins]\nload = ["cpu", "%s"]\n[plugins.blas]\nf16_weights = "bf16"\n' "$blas_so" >"$tmp/f16.toml"
"$sy" plugins --config "$tmp/f16.toml" >"$tmp/p" 2>&1 || fail "plugins f16_weights: $(cat "$tmp/p")"
if grep -q "block weights to bf16" "$tmp/p"; then
    grep -q "f16 weights to bf16" "$tmp/p" || fail "f16_weights = bf16 not applied: $(cat "$tmp/p")"
fi
printf '[plugins]\nload = ["cpu", "%s"]\n[plugins.blas]\nf16_weights = "fp8"\n' "$blas_so" >"$tmp/bad3.toml"
if "$sy" plugins --config "$tmp/bad3.toml" >"$tmp/p" 2>&1; then fail "f16_weights = fp8 accepted"; fi
grep -q "f16_weights = 'fp8'; expected f32 (exact) or bf16" "$tmp/p" || fail "f16_weights = fp8: $(cat "$tmp/p")"
printf '[plugins]\nload = ["cpu", "%s"]\n[plugins.blas]\nthreads = "many"\n' "$blas_so" >"$tmp/bad2.toml"
if "$sy" plugins --config "$tmp/bad2.toml" >"$tmp/p" 2>&1; then fail "threads = many accepted"; fi
grep -q "threads" "$tmp/p" || fail "threads = many message: $(cat "$tmp/p")"

# Without oneDNN: OpenBLAS, with a warning that says why.
SWITCHYARD_BLAS_ONEDNN_LIB=/nonexistent/libdnnl.so.2 "$sy" plugins --plugin "$blas_so" >"$tmp/p" 2>&1 ||
    fail "plugins without oneDNN: $(cat "$tmp/p")"
grep -q "build: engine openblas" "$tmp/p" || fail "no OpenBLAS fallback: $(cat "$tmp/p")"
grep -q "oneDNN is unavailable (cannot load /nonexistent/libdnnl.so.2" "$tmp/p" ||
    fail "fallback not explained: $(cat "$tmp/p")"

# Without either library: blas is reported with the reason, the run goes on on cpu.
export SWITCHYARD_BLAS_ONEDNN_LIB=/nonexistent/libdnnl.so.2
export SWITCHYARD_BLAS_OPENBLAS_LIB=/nonexistent/libopenblas.so.0
"$sy" run -m "$m" -p "$prompt" -n 12 --temp 0 -ub 512 --plugin "$blas_so" >"$tmp/none.txt" 2>"$tmp/e" ||
    fail "run without engines: $(cat "$tmp/e")"
grep -q "libswitchyard-blas.so did not load, continuing without it: .*no GEMM engine could be loaded" "$tmp/e" ||
    fail "missing engines not reported: $(cat "$tmp/e")"
cmp -s "$tmp/cpu.txt" "$tmp/none.txt" || fail "run without blas differs"
echo "ok"
