#!/usr/bin/env bash
# The mpi plugin on this machine's loopback: rank 0 runs the model, `switchyard worker` ranks
# compute the routed experts placed on them (-ot ...=rankN), reading those weights from their own
# copy of the model file (checked to be rank 0's). Greedy tokens and perplexity are the
# single process's exactly (the workers compute with the same cpu plugin); a worker of another
# version, a worker without rank 0, rank 0 without workers and a worker killed mid-run are each a
# clear error and a non-zero exit, never a hang.
set -u
sy=$1
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Loopback only, and as many ranks as asked on two cores.
mpi=(mpirun --oversubscribe --mca btl self,vader -x SWITCHYARD_MPI_TIMEOUT=60)
export SWITCHYARD_MPI_TIMEOUT=60
worker=(-np 1 "$sy" worker -m "$tmp/tiny.gguf")

"$sy" make-model --preset tiny --type q8_0 -o "$tmp/tiny.gguf" >/dev/null 2>&1 || fail "make-model"
text="The quick brown fox jumps over the lazy dog. $(printf 'Tokens for a perplexity run %s. ' $(seq 1 60))"
printf '%s' "$text" >"$tmp/text.txt"
gen=(-m "$tmp/tiny.gguf" -p "The quick brown fox" -n 24 --temp 0 --tokens)

# Single process.
"$sy" run "${gen[@]}" >"$tmp/one.out" 2>"$tmp/one.err" || fail "single run: $(cat "$tmp/one.err")"
grep -o '\[[0-9]*\]' "$tmp/one.out" >"$tmp/one.tok"
[ "$(wc -l <"$tmp/one.tok")" -eq 24 ] || fail "single run: not 24 tokens"

# Two ranks: every layer's routed experts on rank 1.
timeout 120 "${mpi[@]}" -np 1 "$sy" run "${gen[@]}" -ot exps=rank1 : "${worker[@]}" \
    >"$tmp/two.out" 2>"$tmp/two.err" || fail "2 ranks: $(tail -5 "$tmp/two.err")"
grep -q "mpi 3.19 MiB" "$tmp/two.err" || fail "2 ranks: experts not on rank 1: $(grep weights "$tmp/two.err")"
grep -o '\[[0-9]*\]' "$tmp/two.out" | cmp -s - "$tmp/one.tok" || fail "2 ranks: other tokens"

# Three ranks: layer 1's experts on rank 1, layer 2's on rank 2 (-ot as llama.cpp lists rules).
timeout 120 "${mpi[@]}" -np 1 "$sy" run "${gen[@]}" -ot 'blk\.1\..*exps=rank1,blk\.2\..*exps=rank2' \
    : "${worker[@]}" : "${worker[@]}" >"$tmp/three.out" 2>"$tmp/three.err" ||
    fail "3 ranks: $(tail -5 "$tmp/three.err")"
grep -q "mpi 1.59 MiB (3 tensors), mpi:1 1.59 MiB (3 tensors)" "$tmp/three.err" || fail "3 ranks: $(grep weights "$tmp/three.err")"
grep -o '\[[0-9]*\]' "$tmp/three.out" | cmp -s - "$tmp/one.tok" || fail "3 ranks: other tokens"

# The same command line on every rank (mpirun -np 3 switchyard run ...): ranks 1 and 2 serve.
timeout 120 "${mpi[@]}" -np 3 "$sy" run "${gen[@]}" -ot 'blk\.1\..*exps=rank1,blk\.2\..*exps=rank2' \
    >"$tmp/spmd.out" 2>"$tmp/spmd.err" || fail "3 ranks, one command line: $(tail -5 "$tmp/spmd.err")"
grep -a -o '\[[0-9]*\]' "$tmp/spmd.out" | cmp -s - "$tmp/one.tok" || fail "3 ranks, one command line: other tokens"

# Expert parallelism (--expert-parallel N, the same command line on every rank): each MoE
# layer's routed experts in N parts, part r on rank r. The single process's greedy tokens; the
# tokens routed to none of a rank's experts are not sent there (zero rows stay behind).
for n in 2 3; do
  timeout 120 "${mpi[@]}" -x SWITCHYARD_MPI_STATS=1 -np $n "$sy" run "${gen[@]}" --expert-parallel $n \
      >"$tmp/ep$n.out" 2>"$tmp/ep$n.err" || fail "--expert-parallel $n: $(tail -5 "$tmp/ep$n.err")"
  grep -a -o '\[[0-9]*\]' "$tmp/ep$n.out" | cmp -s - "$tmp/one.tok" || fail "--expert-parallel $n: other tokens"
  grep -q "^mpi: rank $((n - 1)): [0-9]* messages; sent " "$tmp/ep$n.err" || fail "--expert-parallel $n: no traffic"
done
grep -q "mpi 1.20 MiB (6 tensors), mpi:1 1.20 MiB (6 tensors)" "$tmp/ep3.err" ||
    fail "--expert-parallel 3: $(grep weights "$tmp/ep3.err")"
python3 - "$tmp/ep3.err" <<'PY' || fail "--expert-parallel 3: every token's rows sent: $(grep '^mpi:' "$tmp/ep3.err")"
import re, sys
for sent, asked in re.findall(r"sent ([0-9.]+) KiB of ([0-9.]+) KiB set", open(sys.argv[1]).read()):
    assert float(sent) < float(asked), (sent, asked)
PY
# One message each way per rank and MoE layer in a decode step: the inputs go with the compute
# request, the partial sum comes back with its answer (tiny: 2 MoE layers, so one more step is 4).
msgs() {
  timeout 60 "${mpi[@]}" -x SWITCHYARD_MPI_STATS=1 -np 2 "$sy" run -m "$tmp/tiny.gguf" -p "The quick brown fox" \
      -n "$1" --ignore-eos --expert-parallel 2 2>&1 >/dev/null | grep -o '^mpi: rank 1: [0-9]* messages' | grep -o '[0-9]* messages'
}
m16=$(msgs 16); m17=$(msgs 17)
[ -n "$m16" ] && [ $(( ${m17% *} - ${m16% *} )) -eq 4 ] || fail "messages per decode step: $m16 for 16 tokens, $m17 for 17"
# A prompt's logits (batches through the workers): the single process's within float rounding
# (the parts' sums add in another order).
npy_diff() {
  python3 - "$1" "$2" <<'PY'
import array, sys
def load(path):
    b = open(path, "rb").read()
    n = int.from_bytes(b[8:10], "little")
    a = array.array("f")
    a.frombytes(b[10 + n:])
    return a
a, b = load(sys.argv[1]), load(sys.argv[2])
assert len(a) == len(b) and len(a) > 1000, (len(a), len(b))
scale = max(abs(x) for x in a)
worst = max(abs(x - y) for x, y in zip(a, b))
print(f"{worst / scale:.2e}")
sys.exit(0 if worst <= 1e-4 * scale else 1)
PY
}

# Logits of a prompt (batches through the workers) and perplexity: the same bytes and figures.
# The cpu plugin's interleaved weight copies (repack) are off on every rank: whether a rank makes
# them for a tensor depends on what else it holds, and they sum in another order.
printf '[plugins.cpu]\nrepack = "off"\n' >"$tmp/exact.toml"
exact=(--config "$tmp/exact.toml")
wexact=(-np 1 "$sy" worker -m "$tmp/tiny.gguf" "${exact[@]}")
"$sy" run -m "$tmp/tiny.gguf" -f "$tmp/text.txt" -n 1 --temp 0 "${exact[@]}" \
    --logits-out "$tmp/l1.npy" >/dev/null 2>"$tmp/l1.err" || fail "logits: $(tail -3 "$tmp/l1.err")"
timeout 120 "${mpi[@]}" -np 1 "$sy" run -m "$tmp/tiny.gguf" -f "$tmp/text.txt" -n 1 --temp 0 \
    "${exact[@]}" --logits-out "$tmp/l2.npy" -ot exps=rank1 : "${wexact[@]}" >/dev/null \
    2>"$tmp/l2.err" || fail "logits on 2 ranks: $(tail -5 "$tmp/l2.err")"
[ "$(stat -c %s "$tmp/l1.npy")" -gt 100000 ] || fail "logits: a short file"
cmp -s "$tmp/l1.npy" "$tmp/l2.npy" || fail "logits on 2 ranks differ from one process's"
for n in 2 3; do
  timeout 120 "${mpi[@]}" -np $n "$sy" run -m "$tmp/tiny.gguf" -f "$tmp/text.txt" -n 1 --temp 0 \
      "${exact[@]}" --logits-out "$tmp/lep$n.npy" --expert-parallel $n >/dev/null 2>"$tmp/lep.err" ||
      fail "logits, --expert-parallel $n: $(tail -5 "$tmp/lep.err")"
  d=$(npy_diff "$tmp/l1.npy" "$tmp/lep$n.npy") || fail "logits, --expert-parallel $n: off by $d of the largest"
done
# --expert-parallel-exact: the ranks' weighted outputs per expert, summed on rank 0 as one process
# does: the same bytes.
timeout 120 "${mpi[@]}" -np 3 "$sy" run -m "$tmp/tiny.gguf" -f "$tmp/text.txt" -n 1 --temp 0 "${exact[@]}" \
    --logits-out "$tmp/lx.npy" --expert-parallel 3 --expert-parallel-exact >/dev/null 2>"$tmp/lx.err" ||
    fail "logits, --expert-parallel-exact: $(tail -5 "$tmp/lx.err")"
cmp -s "$tmp/l1.npy" "$tmp/lx.npy" || fail "logits, --expert-parallel-exact: not the single process's bytes"
"$sy" run "${gen[@]}" --expert-parallel-exact >"$tmp/x.out" 2>"$tmp/x.err" && fail "--expert-parallel-exact alone ran"
grep -q "expert-parallel-exact without --expert-parallel N" "$tmp/x.err" || fail "exact alone: $(cat "$tmp/x.err")"
ppl=(perplexity -m "$tmp/tiny.gguf" -f "$tmp/text.txt" -c 128 "${exact[@]}")
"$sy" "${ppl[@]}" >"$tmp/ppl1" 2>&1 || fail "perplexity: $(tail -3 "$tmp/ppl1")"
timeout 180 "${mpi[@]}" -np 1 "$sy" "${ppl[@]}" -ot exps=rank1 : "${wexact[@]}" >"$tmp/ppl2" 2>&1 ||
    fail "perplexity on 2 ranks: $(tail -5 "$tmp/ppl2")"
a=$(grep -o 'Final estimate: PPL = [0-9.]*' "$tmp/ppl1"); b=$(grep -o 'Final estimate: PPL = [0-9.]*' "$tmp/ppl2")
[ -n "$a" ] && [ "$a" = "$b" ] || fail "perplexity: '$a' alone, '$b' on 2 ranks"

# The bytes a decode step sends, as plan predicts them and as run counts them, with the link
# fixed ([plugins.mpi] link_*: placement then does not follow a loaded machine's timings).
printf '[plugins.mpi]\nlink_latency_us = 40\nlink_gbps = 3\n' >"$tmp/link.toml"
timeout 60 "${mpi[@]}" -np 1 "$sy" plan -m "$tmp/tiny.gguf" -ot exps=rank1 --config "$tmp/link.toml" \
    : "${worker[@]}" >"$tmp/plan" 2>&1 || fail "plan on 2 ranks: $(tail -5 "$tmp/plan")"
grep -q "link 3.0 GB/s + 40.0 us" "$tmp/plan" || fail "plan: the configured link: $(grep mpi: "$tmp/plan")"
want=$(grep -o 'decode step of 1 token .* copies ([0-9.]* KiB)' "$tmp/plan" | grep -o '[0-9.]* KiB')
timeout 60 "${mpi[@]}" -np 1 "$sy" run -m "$tmp/tiny.gguf" -p "The quick brown fox" -n 16 --ignore-eos \
    -ot exps=rank1 --config "$tmp/link.toml" : "${worker[@]}" >/dev/null 2>"$tmp/bytes.err" ||
    fail "run for the bytes: $(tail -5 "$tmp/bytes.err")"
got=$(grep -o 'per token ([0-9.]* KiB' "$tmp/bytes.err" | grep -o '[0-9.]* KiB')
[ -n "$want" ] && [ "$want" = "$got" ] || fail "bytes per decode step: plan $want, run $got"

# The same with the experts split over two ranks.
timeout 60 "${mpi[@]}" -np 2 "$sy" plan -m "$tmp/tiny.gguf" --expert-parallel 2 --config "$tmp/link.toml" \
    >"$tmp/plan-ep" 2>&1 || fail "plan, --expert-parallel 2: $(tail -5 "$tmp/plan-ep")"
want=$(grep -o 'decode step of 1 token .* copies ([0-9.]* KiB)' "$tmp/plan-ep" | grep -o '[0-9.]* KiB')
timeout 60 "${mpi[@]}" -np 2 "$sy" run -m "$tmp/tiny.gguf" -p "The quick brown fox" -n 16 --ignore-eos \
    --expert-parallel 2 --config "$tmp/link.toml" >/dev/null 2>"$tmp/bytes-ep.err" ||
    fail "run for the bytes, --expert-parallel 2: $(tail -5 "$tmp/bytes-ep.err")"
got=$(grep -o 'per token ([0-9.]* KiB' "$tmp/bytes-ep.err" | grep -o '[0-9.]* KiB')
[ -n "$want" ] && [ "$want" = "$got" ] || fail "bytes per decode step, --expert-parallel 2: plan $want, run $got"

# bench loads the backends for each combination: the mpi backend again in the same process (MPI
# stays initialized; the worker serves the next session), and the job ends when rank 0 does.
timeout 120 "${mpi[@]}" -np 1 "$sy" bench -m "$tmp/tiny.gguf" -p 32 -n 4 -r 1 -ub 16,32 -ot exps=rank1 \
    : "${worker[@]}" >"$tmp/bench" 2>&1 || fail "bench on 2 ranks: $(tail -5 "$tmp/bench")"
[ "$(grep -c '| cpu,mpi .* pp32 ' "$tmp/bench")" -eq 2 ] || fail "bench rows: $(grep '^|' "$tmp/bench")"

# The device and its measured link, as `plugins` shows them.
timeout 60 "${mpi[@]}" -np 1 "$sy" plugins --plugin mpi : -np 1 "$sy" worker >"$tmp/plugins" 2>&1 ||
    fail "plugins on 2 ranks: $(tail -5 "$tmp/plugins")"
grep -q "device 0: rank 1: " "$tmp/plugins" || fail "no rank 1 device: $(grep -A2 '^mpi' "$tmp/plugins")"
grep -E -q "link [0-9.]+ GB/s \+ [0-9]+ ns" "$tmp/plugins" || fail "no measured link"

# A worker of another version: refused at load, naming the rank and both versions.
timeout 60 "${mpi[@]}" -np 1 "$sy" run "${gen[@]}" -ot exps=rank1 : \
    -np 1 -x SWITCHYARD_WORKER_VERSION_FOR_TESTS=9.9.9 "$sy" worker -m "$tmp/tiny.gguf" \
    >"$tmp/v.out" 2>"$tmp/v.err"
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "version mismatch: exit $rc"
grep -q "rank 1: it runs switchyard 9.9.9" "$tmp/v.err" || fail "version message: $(cat "$tmp/v.err")"

# A worker whose model file is another (same size, other weights): refused, naming both.
"$sy" make-model --preset tiny --type q8_0 --seed 9 -o "$tmp/other.gguf" >/dev/null 2>&1 || fail "make-model 9"
timeout 60 "${mpi[@]}" -np 1 "$sy" run "${gen[@]}" -ot exps=rank1 : -np 1 "$sy" worker -m "$tmp/other.gguf" \
    >"$tmp/f.out" 2>"$tmp/f.err" && fail "a worker with another model file was used"
grep -q "rank 1: its model file $tmp/other.gguf ([0-9]* bytes) is not rank 0's" "$tmp/f.err" ||
    fail "other model file: $(cat "$tmp/f.err")"

# A worker without rank 0, and rank 0 without workers.
timeout 30 "$sy" worker -m "$tmp/tiny.gguf" >"$tmp/w.out" 2>"$tmp/w.err" && fail "lone worker started"
grep -q "the only rank of its job" "$tmp/w.err" || fail "lone worker message: $(cat "$tmp/w.err")"
# Two workers and no rank 0: rank 0 refuses to be a worker, rank 1 stops waiting after --wait.
timeout 60 "${mpi[@]}" -np 2 "$sy" worker --wait 2 >"$tmp/w0.out" 2>"$tmp/w0.err" && fail "workers alone started"
grep -q "this is rank 0" "$tmp/w0.err" || fail "worker as rank 0: $(cat "$tmp/w0.err")"
timeout 30 "$sy" run "${gen[@]}" -ot exps=rank1 >"$tmp/r.out" 2>"$tmp/r.err" && fail "rank 0 without workers ran"
grep -q "backend .mpi. has 0 device(s) (.*not started by mpirun" "$tmp/r.err" || fail "rank 0 alone: $(cat "$tmp/r.err")"

# --expert-parallel with too few ranks, or outside mpirun: an error naming the missing rank.
timeout 60 "${mpi[@]}" -np 2 "$sy" run "${gen[@]}" --expert-parallel 3 >"$tmp/e3.out" 2>"$tmp/e3.err" &&
    fail "--expert-parallel 3 ran on 2 ranks"
grep -q "expert-parallel 3: part 2 of the experts goes to rank 2, but the job has 2 ranks: start 3" "$tmp/e3.err" ||
    fail "--expert-parallel 3 on 2 ranks: $(tail -3 "$tmp/e3.err")"
timeout 30 "$sy" run "${gen[@]}" --expert-parallel 2 >"$tmp/e2.out" 2>"$tmp/e2.err" && fail "--expert-parallel 2 ran alone"
grep -q "expert-parallel 2: part 1 of the experts goes to rank 1, but the mpi backend has no ranks: .*not started by mpirun" \
    "$tmp/e2.err" || fail "--expert-parallel 2 alone: $(cat "$tmp/e2.err")"

# An unreachable host: mpirun stops at launch, with its error (ssh's, or that it has no ssh), non-zero.
timeout 60 "${mpi[@]}" -np 1 "$sy" run "${gen[@]}" --expert-parallel 2 : \
    -np 1 --host nosuchhost.invalid:1 "$sy" worker -m "$tmp/tiny.gguf" >"$tmp/h.out" 2>"$tmp/h.err"
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "unreachable host: exit $rc"
grep -q -i "nosuchhost\|ssh\|rsh\|unable to" "$tmp/h.err" || fail "unreachable host: $(head -5 "$tmp/h.err")"

# A worker killed mid-run: the job ends with an error naming rank 1, well before any timeout.
( timeout 120 "${mpi[@]}" -np 1 "$sy" run -m "$tmp/tiny.gguf" -p hi -n 100000 -c 32768 --ignore-eos \
    -ot exps=rank1 : "${worker[@]}" >"$tmp/k.out" 2>"$tmp/k.err"; echo $? >"$tmp/k.rc" ) &
job=$!
# Once rank 0 generates (its output grows), the worker goes.
for _ in $(seq 1 150); do [ -s "$tmp/k.out" ] && break; sleep 0.2; done
sleep 1
pkill -9 -f "^$sy worker -m $tmp/tiny.gguf" || fail "no worker to kill"
wait $job
rc=$(cat "$tmp/k.rc")
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "killed worker: exit $rc"
# mpirun names the rank that died, or rank 0 does first (its next request to rank 1 failed).
grep -E -q "rank 1.*exited on signal 9|mpi: rank 1: " "$tmp/k.err" ||
    fail "killed worker message: $(tail -8 "$tmp/k.err")"
echo "mpi: ok"
