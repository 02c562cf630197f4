#!/usr/bin/env bash
# switchyard calibrate on the cpu and a simulated device whose hints say it is fast but whose
# matrix products really take 10 ms each (product_delay_us): the table measures that, plan then
# puts the products on the cpu with [measured] costs (the hints alone put them on the device),
# bench measures the plan with the table faster, and the tokens stay the same. Bad tables, batch
# lists and output paths are clear errors that leave nothing behind.
set -u
sy=$1
sim=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# The simulated device computes with the CPU plugin variant the host loads for the cpu backend
# (the best for this CPU), so that hybrid runs can give the cpu's tokens bit for bit.
SWITCHYARD_SIM_CPU_PLUGIN=$("$sy" plugins 2>/dev/null | awk '$1 == "cpu" { print $NF; exit }')
export SWITCHYARD_SIM_CPU_PLUGIN

"$sy" make-model --preset tiny --type f32 -o "$tmp/tiny.gguf" >/dev/null 2>&1 || fail "make-model"
# Products may leave the device that holds their weights when the table says so.
printf '[placement]\ndefault = "sim"\n[plugins.sim]\nproduct_delay_us = "10000"\n[offload]\ndevice_weights_stay = false\n' >"$tmp/slow.toml"
common=(-m "$tmp/tiny.gguf" --plugin "$sim" --config "$tmp/slow.toml" -ub 32 -mla 2 -ctk f32 -ctv f32)

"$sy" calibrate "${common[@]}" --batches 1,32 -r 2 -o "$tmp/costs.toml" >"$tmp/out" 2>"$tmp/e" \
    || fail "calibrate: $(cat "$tmp/e")"
grep -q "wrote [0-9]* measured node shapes to $tmp/costs.toml" "$tmp/out" || fail "no summary: $(cat "$tmp/out")"
grep -Eq '^\| 32 \| sim \| 31 \|' "$tmp/out" || fail "no sim row for batch 32: $(cat "$tmp/out")"
grep -Eq '^\| 1 \| cpu \| 31 \|' "$tmp/out" || fail "no cpu row for batch 1: $(cat "$tmp/out")"
grep -q 'backend = "sim"' "$tmp/costs.toml" || fail "no sim entries"
grep -q 'backend = "cpu"' "$tmp/costs.toml" || fail "no cpu entries"
# The sim's products measured at 10 ms or more each, the cpu's far below.
python3 - "$tmp/costs.toml" <<'PY' || fail "the table's times: $(head -c 3000 "$tmp/costs.toml")"
import sys, tomllib
t = tomllib.load(open(sys.argv[1], "rb"))
products = [o for o in t["op"] if o["op"] in ("mul_mat", "mul_mat_id") or o["op"].startswith("moe.")]
sim = [o["ns"] for o in products if o["backend"] == "sim"]
cpu = [o["ns"] for o in products if o["backend"] == "cpu"]
assert sim and cpu
assert min(sim) >= 10e6, min(sim)
assert max(cpu) < 10e6, max(cpu)
assert t["calibration"]["batches"] == "1, 32"
PY

# plan: by the hints every product is on sim; with the table, on the cpu, costs marked measured.
"$sy" plan "${common[@]}" -c 64 >"$tmp/hints" 2>"$tmp/e" || fail "plan: $(cat "$tmp/e")"
"$sy" plan "${common[@]}" -c 64 --cost-table "$tmp/costs.toml" >"$tmp/measured" 2>"$tmp/e" \
    || fail "plan --cost-table: $(cat "$tmp/e")"
products() { grep -E '^ +[0-9]+ (mul_mat|mul_mat_id|moe\.[a-z_]+) ' "$1" | sed 's/(derived)//' | awk '{print $4}' | sort | uniq -c; }
[ "$(products "$tmp/hints" | awk '$2 == "cpu"' | wc -l)" -eq 0 ] || fail "hints put products on the cpu: $(products "$tmp/hints")"
[ "$(products "$tmp/measured" | awk '$2 == "sim"' | wc -l)" -eq 0 ] \
    || fail "with the table, products stayed on sim: $(products "$tmp/measured")"
grep -q "cost table: $tmp/costs.toml (--cost-table)" "$tmp/measured" || fail "plan does not name the table"
grep -Eq "mul_mat +blk\.0\.attn_q_a\.weight +cpu +cheapest of 2: .*sim [0-9.]+ us .*\[measured\]" "$tmp/measured" \
    || fail "no measured costs: $(grep attn_q_a "$tmp/measured")"
# The same from the config file: [offload] cost_table, relative to the file.
cp "$tmp/slow.toml" "$tmp/with-table.toml"
printf 'cost_table = "costs.toml"\n' >>"$tmp/with-table.toml"
"$sy" plan -m "$tmp/tiny.gguf" --plugin "$sim" --config "$tmp/with-table.toml" -ub 32 -mla 2 -ctk f32 -ctv f32 -c 64 \
    >"$tmp/measured2" 2>"$tmp/e" || fail "plan with offload.cost_table: $(cat "$tmp/e")"
grep -q "with-table.toml:7:14): measured times" "$tmp/measured2" || fail "config's table not named: $(grep 'cost table' "$tmp/measured2")"

# Measured: the prompt with the table's plan is faster (products 10 ms each on sim otherwise;
# the margin holds on a loaded machine, where the cpu's own work slows down and sleeps do not).
"$sy" bench "${common[@]}" -p 32 -n 0 -r 2 -o json --cost-table ",$tmp/costs.toml" >"$tmp/b.json" 2>"$tmp/e" \
    || fail "bench: $(cat "$tmp/e")"
python3 - "$tmp/b.json" <<'PY' || fail "bench: $(cat "$tmp/b.json")"
import json, sys
hints, table = json.load(open(sys.argv[1]))
assert "cost_table" not in hints["offload_policy"] and "cost_table=" in table["offload_policy"]
assert table["avg_ts"] > 2 * hints["avg_ts"], (hints["avg_ts"], table["avg_ts"])
PY
# Placement changes where nodes run, not what they compute.
for t in "" "$tmp/costs.toml"; do
  "$sy" run "${common[@]}" -p "The quick brown fox" -n 4 --temp 0 --ignore-eos --tokens \
      ${t:+--cost-table "$t"} >"$tmp/tokens${t:+-table}" 2>"$tmp/e" || fail "run ${t:+with the table}: $(cat "$tmp/e")"
done
cmp -s "$tmp/tokens" "$tmp/tokens-table" || fail "the table changed the tokens"

# Bad input.
"$sy" plan "${common[@]}" --cost-table "$tmp/nope.toml" >"$tmp/o" 2>"$tmp/e" && fail "a missing table was accepted"
grep -q "nope.toml: cost table not found" "$tmp/e" || fail "missing table: $(cat "$tmp/e")"
sed 's/^ns = .*/ns = -1/' "$tmp/costs.toml" >"$tmp/bad.toml"
"$sy" plan "${common[@]}" --cost-table "$tmp/bad.toml" >"$tmp/o" 2>"$tmp/e" && fail "a negative time was accepted"
grep -Eq "bad.toml:[0-9]+:6: 'op.ns' must be a time in nanoseconds.*\(the cost table of --cost-table\)" "$tmp/e" \
    || fail "bad time: $(cat "$tmp/e")"
"$sy" calibrate "${common[@]}" --batches 1,64 -o "$tmp/c2.toml" >"$tmp/o" 2>"$tmp/e" && fail "a batch above -ub ran"
grep -q "batch 64 is outside 1..32 (the ubatch, -ub)" "$tmp/e" || fail "batch above -ub: $(cat "$tmp/e")"
[ -e "$tmp/c2.toml" ] && fail "a failed calibration wrote a file"
"$sy" calibrate "${common[@]}" --batches 0 -o "$tmp/c2.toml" >"$tmp/o" 2>"$tmp/e" && fail "batch 0 ran"
"$sy" calibrate "${common[@]}" --batches 1 -o "$tmp/no/such/dir/c.toml" >"$tmp/o" 2>"$tmp/e" \
    && fail "an unwritable output was accepted"
grep -q "cannot write there" "$tmp/e" || fail "unwritable output: $(cat "$tmp/e")"
"$sy" calibrate "${common[@]}" --batches 1 -o "$tmp" >"$tmp/o" 2>"$tmp/e" && fail "a directory as output"
grep -q "is a directory" "$tmp/e" || fail "directory output: $(cat "$tmp/e")"
echo "cli_calibrate: ok"
