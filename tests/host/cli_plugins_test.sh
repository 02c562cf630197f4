#!/usr/bin/env bash
# switchyard plugins: JSON is valid and lists the cpu plugin; each broken plugin gives one line;
# the exit status is non-zero only when a plugin the user asked for failed.
set -u
sy=$1 broken=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

"$sy" plugins --json >"$tmp/out.json" 2>"$tmp/err" || fail "plain 'plugins --json' exited non-zero: $(cat "$tmp/err")"
python3 - "$tmp/out.json" <<'PY' || fail "JSON content"
import json, sys
d = json.load(open(sys.argv[1]))
cpu = [p for p in d["plugins"] if p["name"] == "cpu"]
assert cpu, "cpu plugin not listed"
cpu = cpu[0]
ops = {o["op"]: o["types"] for o in cpu["ops"]}
for op in ["add", "mul", "scale", "rms_norm", "mul_mat", "mul_mat_id", "get_rows", "rope",
           "softmax", "silu", "gelu", "sigmoid", "argsort", "top_k", "sum_rows", "concat", "cpy", "cont"]:
    assert op in ops, "op missing: " + op
assert any(t["src"][0] == "bf16" for t in ops["mul_mat"]), "mul_mat lacks bf16 weights"
dev = cpu["devices"][0]
assert dev["kind"] == "cpu" and dev["memory_bandwidth"] > 0 and dev["peak_flops_f32"] > 0, dev
assert dev["cost_params"], "no cost parameters"
assert d["failed"] == [], d["failed"]
PY

# Each broken plugin asked for by path: exit 1, one line on stderr naming it.
for name in noentry wrongabi refuses probezero missingdep notelf; do
  f="$broken/libswitchyard-$name.so"
  "$sy" plugins --json --plugin "$f" >"$tmp/out" 2>"$tmp/err"; rc=$?
  [ $rc -eq 1 ] || fail "$name: exit $rc, expected 1"
  [ "$(grep -c "libswitchyard-$name.so" "$tmp/err")" -eq 1 ] || fail "$name: not exactly one line: $(cat "$tmp/err")"
  python3 -c "import json,sys; d=json.load(open('$tmp/out')); assert any(p['name']=='cpu' for p in d['plugins']); assert len(d['failed'])==1" \
    || fail "$name: others did not load or JSON wrong"
done

# Plugins whose returned rows are wrong fail to load: one line naming the plugin and the call,
# exit 1 when asked for (and listed as failed, exit 0, when only found by the search below).
for name in hugecount rowsize; do
  f="$broken/libswitchyard-$name.so"
  "$sy" plugins --json --plugin "$f" >"$tmp/out" 2>"$tmp/err"; rc=$?
  [ $rc -eq 1 ] || fail "$name: exit $rc, expected 1: $(cat "$tmp/err")"
  [ "$(grep -c "libswitchyard-$name.so" "$tmp/err")" -eq 1 ] || fail "$name: not one line: $(cat "$tmp/err")"
  grep -q "libswitchyard-$name.so: $name.capabilities: " "$tmp/err" || fail "$name: $(cat "$tmp/err")"
done
# Rows of a newer minor ABI (larger struct_size) are read field by field.
"$sy" plugins --json --plugin "$broken/libswitchyard-widerows.so" >"$tmp/out" 2>"$tmp/err" ||
  fail "widerows: $(cat "$tmp/err")"
python3 -c "import json; d=json.load(open('$tmp/out')); p=[p for p in d['plugins'] if p['name']=='widerows'][0]; ops=sorted(o['op'] for o in p['ops']); assert len(ops)==3, ops" ||
  fail "widerows: $(cat "$tmp/out")"

# Found by searching, not asked for: listed as failed, exit 0.
printf '[plugins]\nsearch = ["%s"]\n' "$broken" >"$tmp/c.toml"
"$sy" plugins --config "$tmp/c.toml" >"$tmp/out" 2>&1 || fail "search-only config exited non-zero: $(cat "$tmp/out")"
grep -q "^cpu " "$tmp/out" || fail "cpu not listed with broken search path"
grep -q "^nothing " "$tmp/out" || fail "the plugin that supports nothing is not listed"
# noentry wrongabi refuses probezero missingdep notelf hugecount rowsize badnamedop
[ "$(grep -c '^failed: ' "$tmp/out")" -eq 9 ] || fail "expected 9 failed lines: $(cat "$tmp/out")"

# Asked for in the config: exit 1.
printf '[plugins]\nsearch = ["%s"]\nload = ["cpu", "refuses"]\n' "$broken" >"$tmp/c2.toml"
"$sy" plugins --config "$tmp/c2.toml" >"$tmp/out" 2>&1 && fail "requested broken plugin did not fail the command"
grep -q "refused: no compatible device found" "$tmp/out" || fail "refusal reason missing"

# Config errors: clear message, exit 1.
printf '[plugins]\nlaod = ["cpu"]\n' >"$tmp/bad.toml"
"$sy" plugins --config "$tmp/bad.toml" >"$tmp/out" 2>&1 && fail "bad config accepted"
grep -q "bad.toml:2:8: unknown key 'plugins.laod'" "$tmp/out" || fail "bad config message: $(cat "$tmp/out")"
"$sy" plugins --config "$tmp/missing.toml" >"$tmp/out" 2>&1 && fail "missing config accepted"
grep -q "missing.toml: configuration file not found" "$tmp/out" || fail "missing config message"
echo PASS
