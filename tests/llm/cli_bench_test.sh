#!/usr/bin/env bash
# switchyard bench and sweep on a tiny synthetic model: every output format parses and holds
# llama-bench's / sweep-bench's fields with numbers that agree with each other; the parameter
# lists run every combination; warnings raised while loading reach the results; sweep charts are
# real SVG/PNG files; bad input is a clear error with a non-zero exit.
# Arguments: the switchyard binary, the plugin without named ops and the simulated device
# (both optional).
set -u
sy=$1
plain=${2:-}
sim=${3:-}
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$sy" make-model --preset tiny --type q8_0 -o "$tmp/tiny.gguf" >/dev/null 2>&1 || fail "make-model"
m=$tmp/tiny.gguf

# JSON: one object per test with llama-bench's fields; t/s agree with the samples.
"$sy" bench -m "$m" -p 32 -n 8 -r 3 -o json >"$tmp/b.json" 2>"$tmp/e" || fail "bench -o json: $(cat "$tmp/e")"
python3 - "$tmp/b.json" <<'PY' || fail "bench json: $(cat "$tmp/b.json")"
import json, statistics, sys
rows = json.load(open(sys.argv[1]))
assert [r["test"] for r in rows] == ["pp32", "tg8"], rows
for r in rows:
    for k in ("build_commit", "build_number", "cpu_info", "model_filename", "model_type",
              "model_size", "model_n_params", "n_batch", "n_ubatch", "n_threads", "type_k",
              "type_v", "n_gpu_layers", "flash_attn", "mla_attn", "fused_moe", "n_prompt",
              "n_gen", "n_depth", "test_time", "avg_ns", "stddev_ns", "avg_ts", "stddev_ts",
              "samples_ns", "samples_ts", "backends", "placement", "warnings", "split_mode",
              "main_gpu", "no_kv_offload", "tensor_split", "embeddings", "overhead_share",
              "sync_share", "copy_share", "staging_share", "host_share"):
        assert k in r, k
    assert len(r["samples_ns"]) == 3 and len(r["samples_ts"]) == 3
    n = r["n_prompt"] + r["n_gen"]
    for ns, ts in zip(r["samples_ns"], r["samples_ts"]):
        assert abs(ts - n * 1e9 / ns) < 1e-3 * ts, (ns, ts)
    assert abs(r["avg_ts"] - statistics.mean(r["samples_ts"])) < 1e-6 * r["avg_ts"]
    assert abs(r["stddev_ts"] - statistics.stdev(r["samples_ts"])) < 1e-6 * r["avg_ts"] + 1e-9
    assert abs(r["avg_ns"] - statistics.mean(r["samples_ns"])) <= 1
    assert r["model_size"] > 0 and r["model_n_params"] > 0 and r["avg_ts"] > 0
    assert r["fused_moe"] is True and r["flash_attn"] is True and r["mla_attn"] == 3
    assert r["test_time"].endswith("Z") and "T" in r["test_time"]
assert rows[0]["n_prompt"] == 32 and rows[1]["n_gen"] == 8
PY

# Lists: every combination, in order; -d, -pg and -gp labelled as llama-bench / ik do.
"$sy" bench -m "$m" -p 16 -n 4 -r 1 -mla 2,3 -fmoe 0,1 -o jsonl >"$tmp/b.jsonl" 2>"$tmp/e" ||
  fail "bench lists: $(cat "$tmp/e")"
python3 - "$tmp/b.jsonl" <<'PY' || fail "bench jsonl: $(cat "$tmp/b.jsonl")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
got = [(r["mla_attn"], r["fused_moe"], r["test"]) for r in rows]
want = [(m, f, t) for m in (2, 3) for f in (False, True) for t in ("pp16", "tg4")]
assert got == want, got
PY
"$sy" bench -m "$m" -p 16 -n 0 -d 0,24 -pg 8,4 -gp 8,4 -r 1 -o jsonl >"$tmp/d.jsonl" 2>"$tmp/e" ||
  fail "bench -d -pg -gp: $(cat "$tmp/e")"
python3 - "$tmp/d.jsonl" <<'PY' || fail "bench depth labels: $(cat "$tmp/d.jsonl")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["test"] for r in rows] == ["pp16", "pp8+tg4", "tg4@pp8", "pp16 @ d24",
                                     "pp8+tg4 @ d24", "tg4@pp8 @ d24"], [r["test"] for r in rows]
assert [r["n_depth"] for r in rows] == [0, 0, 0, 24, 24, 24]
gp = rows[2]
assert abs(gp["avg_ts"] - 4e9 / gp["avg_ns"]) < 0.05 * gp["avg_ts"]  # only the generated tokens
PY

# Markdown: llama-bench's columns, non-default parameters shown, the build line.
"$sy" bench -m "$m" -p 16 -n 4 -r 2 -mla 2 -ub 8 >"$tmp/b.md" 2>"$tmp/e" || fail "bench md: $(cat "$tmp/e")"
head -1 "$tmp/b.md" | grep -Eq '^\| model +\| +size \| +params \| backend \| threads \| n_ubatch \| mla \| +test \| +t/s \|$' ||
  fail "md header: $(head -1 "$tmp/b.md")"
grep -Eq '^\| deepseek2 .* \| +pp16 \| +[0-9.]+ ± [0-9.]+ \|$' "$tmp/b.md" || fail "md pp row: $(cat "$tmp/b.md")"
grep -Eq '^\| deepseek2 .* \| +tg4 \| +[0-9.]+ ± [0-9.]+ \|$' "$tmp/b.md" || fail "md tg row: $(cat "$tmp/b.md")"
grep -Eq '^build: [0-9a-f]+ \([0-9]+\)$' "$tmp/b.md" || fail "md build line: $(cat "$tmp/b.md")"
grep -q "bench: 100%" "$tmp/e" || fail "no progress on stderr: $(cat "$tmp/e")"
grep -q "bench" "$tmp/b.md" && fail "progress went to stdout"

# A '|' in a value (an -ot regex) is escaped in the table; placement shows the rule's backend.
"$sy" bench -m "$m" -p 8 -n 0 -r 1 -ot 'blk\.(0|1)\.ffn_.*_exps\.=cpu' >"$tmp/ot.md" 2>"$tmp/e" ||
  fail "bench -ot: $(cat "$tmp/e")"
grep -qF '| blk\.(0\|1)\.ffn_.*_exps\.=cpu |' "$tmp/ot.md" || fail "-ot cell not escaped: $(cat "$tmp/ot.md")"
[ "$(head -2 "$tmp/ot.md" | tail -1 | tr -cd '|' | wc -c)" -eq "$(head -1 "$tmp/ot.md" | tr -cd '|' | wc -c)" ] ||
  fail "md separator has other columns than the header"

# --profile: the op breakdown of the timed repetitions on stderr, the table still on stdout.
"$sy" bench -m "$m" -p 16 -n 4 -r 1 --profile >"$tmp/p.md" 2>"$tmp/e" || fail "bench --profile: $(cat "$tmp/e")"
grep -q "^profile of combination 1/1" "$tmp/e" || fail "no profile: $(cat "$tmp/e")"
grep -q "matrix products by weight" "$tmp/e" || fail "no products in the profile: $(cat "$tmp/e")"
grep -q "profile" "$tmp/p.md" && fail "the profile went to stdout"
[ "$(grep -c '^| deepseek2' "$tmp/p.md")" -eq 2 ] || fail "--profile table: $(cat "$tmp/p.md")"

# CSV (a header and quoted values) and SQL (loads into SQLite) carry the same fields.
"$sy" bench -m "$m" -p 16 -n 4 -r 1 -o csv >"$tmp/b.csv" 2>"$tmp/e" || fail "bench csv: $(cat "$tmp/e")"
"$sy" bench -m "$m" -p 16 -n 4 -r 1 -o sql >"$tmp/b.sql" 2>"$tmp/e" || fail "bench sql: $(cat "$tmp/e")"
python3 - "$tmp/b.csv" "$tmp/b.sql" <<'PY' || fail "csv/sql: $(cat "$tmp/b.csv" "$tmp/b.sql")"
import csv, sqlite3, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["test"] for r in rows] == ["pp16", "tg4"], rows
assert float(rows[0]["avg_ts"]) > 0 and rows[0]["model_filename"].endswith("tiny.gguf")
assert rows[0]["fused_moe"] == "1" and rows[0]["use_mmap"] == "1", rows[0]  # as llama-bench's csv
db = sqlite3.connect(":memory:")
db.executescript(open(sys.argv[2]).read())
got = db.execute("SELECT test, n_prompt, n_gen, avg_ts > 0 FROM llama_bench").fetchall()
assert got == [("pp16", 16, 0, 1), ("tg4", 0, 4, 1)], got
cols = [d[1] for d in db.execute("PRAGMA table_info(llama_bench)")]
assert cols == list(rows[0].keys()), (cols, list(rows[0].keys()))
PY

# A backend without the fused MoE op: the fallback is a warning shown with the results.
if [ -n "$plain" ]; then
  "$sy" bench -m "$m" -p 16 -n 4 -r 1 --plugin "$plain" --backend cpu-plain >"$tmp/w.md" 2>"$tmp/e" ||
    fail "bench on cpu-plain: $(cat "$tmp/e")"
  grep -q "^- fused MoE: backend 'cpu-plain' does not provide moe.fused_up_gate.* (rows 1-2)$" "$tmp/w.md" ||
    fail "fallback warning not with the results: $(cat "$tmp/w.md")"
  grep -Eq '\| fmoe \|' "$tmp/w.md" || fail "fmoe column not shown for the fallback: $(cat "$tmp/w.md")"
  "$sy" bench -m "$m" -p 16 -n 0 -r 1 --plugin "$plain" --backend cpu-plain -o json >"$tmp/w.json" 2>"$tmp/e" ||
    fail "bench json on cpu-plain"
  python3 -c "import json,sys; r=json.load(open(sys.argv[1]))[0]; assert r['fused_moe'] is False and any('fused MoE' in w for w in r['warnings']), r" "$tmp/w.json" ||
    fail "json warnings: $(cat "$tmp/w.json")"
fi

# --interleave: the repetitions in rounds over the combinations; the same rows in the same order,
# each with all its samples.
"$sy" bench -m "$m" -p 16 -n 4 -r 2 -mla 2,3 --interleave -o json >"$tmp/il.json" 2>"$tmp/e" \
    || fail "bench --interleave: $(cat "$tmp/e")"
python3 - "$tmp/il.json" <<'PY' || fail "bench --interleave rows: $(cat "$tmp/il.json")"
import json, sys
rows = json.load(open(sys.argv[1]))
assert [(r["mla_attn"], r["n_prompt"], r["n_gen"]) for r in rows] == [(2, 16, 0), (2, 0, 4), (3, 16, 0), (3, 0, 4)], rows
for r in rows:
    assert len(r["samples_ns"]) == 2 and len(r["samples_ts"]) == 2, r
    assert all(t > 0 for t in r["samples_ts"]), r
PY

# Sweep: a row per ubatch with sweep-bench's fields; the table form; charts.
"$sy" sweep -m "$m" -c 256 -ub 64 -n 8 -o jsonl >"$tmp/s.jsonl" 2>"$tmp/e" || fail "sweep jsonl: $(cat "$tmp/e")"
python3 - "$tmp/s.jsonl" <<'PY' || fail "sweep jsonl: $(cat "$tmp/s.jsonl")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["n_kv"] for r in rows] == [0, 64, 128, 192], rows
for r in rows:
    for k in ("n_kv_max", "n_batch", "n_ubatch", "flash_attn", "n_gpu_layers", "n_threads",
              "n_threads_batch", "pp", "tg", "n_kv", "t_pp", "speed_pp", "t_tg", "speed_tg",
              "rss_hwm_mib"):
        assert k in r, k
    assert r["pp"] == 64 and r["tg"] == 8 and r["n_kv_max"] == 256
    assert abs(r["speed_pp"] - 64 / r["t_pp"]) < 1e-6 * r["speed_pp"]
    assert abs(r["speed_tg"] - 8 / r["t_tg"]) < 1e-6 * r["speed_tg"]
    assert r["rss_hwm_mib"] > 0
PY
"$sy" sweep -m "$m" -c 128 -ub 32 --mla 2,3 --plot "$tmp/s.svg" >"$tmp/s.md" 2>"$tmp/e" || fail "sweep md: $(cat "$tmp/e")"
[ "$(grep -c '^main: n_kv_max = 128, n_batch = 32, n_ubatch = 32, flash_attn = 1' "$tmp/s.md")" -eq 2 ] ||
  fail "sweep header: $(cat "$tmp/s.md")"
grep -q '^|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |' "$tmp/s.md" || fail "sweep table header"
[ "$(grep -Ec '^\|    32 \|      8 \| +(0|32|64|96) \|' "$tmp/s.md")" -eq 8 ] || fail "sweep rows: $(cat "$tmp/s.md")"
head -c 200 "$tmp/s.svg" | grep -q "<svg" || fail "--plot .svg is not SVG"
[ "$(grep -c '<path' "$tmp/s.svg")" -gt 10 ] || fail "the SVG chart has no lines"
"$sy" sweep --from "$tmp/s.jsonl" --from "$tmp/s.jsonl" --plot "$tmp/s.png" >/dev/null 2>"$tmp/e" ||
  fail "sweep --from: $(cat "$tmp/e")"
python3 -c "import sys; b=open(sys.argv[1],'rb').read(); assert b[:8]==b'\x89PNG\r\n\x1a\n' and len(b)>5000" "$tmp/s.png" ||
  fail "--plot .png is not a PNG chart"
# Ranges, as llama-bench writes them: first-last, +step, *mult.
"$sy" bench -m "$m" -p 8-24+8,4-16*2 -n 0 -d 0-16+16 -r 1 -o jsonl >"$tmp/r.jsonl" 2>"$tmp/e" ||
  fail "bench ranges: $(cat "$tmp/e")"
python3 - "$tmp/r.jsonl" <<'PY' || fail "bench ranges: $(cat "$tmp/r.jsonl")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
got = [(r["n_prompt"], r["n_depth"]) for r in rows]
assert got == [(p, d) for d in (0, 16) for p in (8, 16, 24, 4, 8, 16)], got
PY
for bad in "16-8" "0-64*2" "1-9+0" "1-20000"; do
  "$sy" bench -m "$m" -p "$bad" -n 0 >"$tmp/o" 2>"$tmp/e" && fail "-p $bad accepted"
  grep -qF -- "-p '$bad'" "$tmp/e" || fail "-p $bad not named: $(cat "$tmp/e")"
done

# Errors: clear message, non-zero exit, no partial chart.
"$sy" bench -m "$m" -o xml >"$tmp/o" 2>"$tmp/e" && fail "-o xml accepted"
grep -q "xml" "$tmp/e" || fail "-o xml not named: $(cat "$tmp/e")"
"$sy" bench -m "$m" -mla 2,5 >"$tmp/o" 2>"$tmp/e" && fail "-mla 5 accepted"
grep -q -- "-mla 5" "$tmp/e" || fail "-mla 5 not named: $(cat "$tmp/e")"
"$sy" bench -m "$m" -p 1x >"$tmp/o" 2>"$tmp/e" && fail "-p 1x accepted"
grep -q -- "-p '1x'" "$tmp/e" || fail "-p 1x not named: $(cat "$tmp/e")"
"$sy" bench -m "$m" -pg 8 >"$tmp/o" 2>"$tmp/e" && fail "-pg 8 accepted"
grep -q "P,N" "$tmp/e" || fail "-pg 8 not explained: $(cat "$tmp/e")"
"$sy" bench -m "$m" -p 0 -n 0 >"$tmp/o" 2>"$tmp/e" && fail "nothing to run accepted"
"$sy" bench -m "$tmp/missing.gguf" -p 8 -n 0 -r 1 >"$tmp/o" 2>"$tmp/e" && fail "missing model accepted"
grep -q "missing.gguf" "$tmp/e" || fail "missing model not named: $(cat "$tmp/e")"
"$sy" bench -m "$m,$tmp/missing.gguf" -p 8 -n 0 -r 1 -o jsonl >"$tmp/o" 2>"$tmp/e" && fail "second model missing accepted"
[ "$(wc -l <"$tmp/o")" -eq 1 ] || fail "the first model's result was not printed before the error"
"$sy" bench -m "$m,$tmp/missing.gguf" -p 8 -n 0 -r 2 --interleave -o jsonl >"$tmp/o" 2>"$tmp/e" \
    && fail "second model missing accepted (--interleave)"
python3 - "$tmp/o" <<'PY' || fail "--interleave: the first round's result was not printed before the error: $(cat "$tmp/o")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 1 and len(rows[0]["samples_ns"]) == 1, rows
PY
# A context of exactly one ubatch: one row (the warm-up fits too).
"$sy" sweep -m "$m" -c 64 -ub 64 -n 8 -o jsonl >"$tmp/one.jsonl" 2>"$tmp/e" || fail "sweep -c 64 -ub 64: $(cat "$tmp/e")"
[ "$(wc -l <"$tmp/one.jsonl")" -eq 1 ] || fail "sweep of one ubatch: $(cat "$tmp/one.jsonl")"
"$sy" sweep -m "$m" -c 16 -ub 64 >"$tmp/o" 2>"$tmp/e" && fail "sweep without room accepted"
grep -q -- "-c 16" "$tmp/e" || fail "sweep room error: $(cat "$tmp/e")"
"$sy" sweep -m "$m" -c 64 -ub 32 --plot "$tmp/x.gif" >"$tmp/o" 2>"$tmp/e" && fail "--plot .gif accepted"
grep -q "svg or .png" "$tmp/e" || fail "--plot .gif: $(cat "$tmp/e")"
"$sy" bench -m "$m," -p 8 >"$tmp/o" 2>"$tmp/e" && fail "-m with an empty item accepted"
grep -q -- "-m .*empty item" "$tmp/e" || fail "-m empty item: $(cat "$tmp/e")"
"$sy" bench -m "$m" -p 8 -n 0 -r 1 -ctk f16,q9 -o jsonl >"$tmp/o" 2>"$tmp/e" && fail "-ctk q9 accepted"
grep -q "q9" "$tmp/e" || fail "-ctk q9 not named: $(cat "$tmp/e")"
[ -s "$tmp/o" ] && fail "-ctk q9: combinations ran before the bad value was refused"
"$sy" bench -m "$m" -ub "$(seq -s, 1 101)" -amb "$(seq -s, 1 100)" >"$tmp/o" 2>"$tmp/e" && fail "10100 combinations accepted"
grep -q "more than 10000 combinations" "$tmp/e" || fail "combination cap: $(cat "$tmp/e")"
"$sy" sweep -m "$m" -c 64 -ub 32 --plot "$tmp/nodir/x.svg" >"$tmp/o" 2>"$tmp/e" && fail "--plot into a missing folder accepted"
[ -s "$tmp/o" ] && fail "the sweep ran before the chart's folder was checked"
echo '{"n_kv": 0, "speed_pp": 1e300, "speed_tg": 1}' >"$tmp/huge.jsonl"
"$sy" sweep --from "$tmp/huge.jsonl" --plot "$tmp/h.svg" >"$tmp/o" 2>"$tmp/e" && fail "absurd speed accepted"
grep -q "huge.jsonl:1" "$tmp/e" || fail "absurd speed not named: $(cat "$tmp/e")"
"$sy" sweep --from /dev/zero --plot "$tmp/z.svg" >"$tmp/o" 2>"$tmp/e" && fail "--from /dev/zero accepted"
echo '{"n_kv": 0}' >"$tmp/bad.jsonl"
"$sy" sweep --from "$tmp/bad.jsonl" --plot "$tmp/bad.svg" >"$tmp/o" 2>"$tmp/e" && fail "bad --from accepted"
grep -q "bad.jsonl:1" "$tmp/e" || fail "bad --from not named: $(cat "$tmp/e")"
[ -e "$tmp/bad.svg" ] && fail "a chart was written for bad input"
"$sy" sweep --plot "$tmp/x.svg" >"$tmp/o" 2>"$tmp/e" && fail "sweep with nothing accepted"
"$sy" sweep -m "$m" -c 64 -ub 32 --plot "$tmp/no/such/dir/x.svg" >"$tmp/o" 2>"$tmp/e" && fail "unwritable --plot accepted"
grep -q "cannot write" "$tmp/e" || fail "unwritable --plot: $(cat "$tmp/e")"
# -ts as llama-bench: '/' inside an item, ',' between items; the json field in llama-bench's form;
# a bad proportion names the item.
"$sy" bench -m "$m" -p 8 -n 0 -r 1 -ts 1/x >"$tmp/o" 2>"$tmp/e" && fail "-ts 1/x accepted"
grep -q -- "-ts '1/x'" "$tmp/e" || fail "-ts 1/x: $(cat "$tmp/e")"
if [ -n "$sim" ]; then
    printf '[plugins.sim]\ndevices = "2"\n' >"$tmp/two.toml"
    "$sy" bench -m "$m" -p 16 -n 0 -r 1 --plugin "$sim" --backend sim --config "$tmp/two.toml" -ngl 4 \
        -ts 1/2,3/1 -o jsonl >"$tmp/ts.jsonl" 2>"$tmp/e" || fail "bench -ts: $(cat "$tmp/e")"
    python3 - "$tmp/ts.jsonl" <<'PY' || fail "bench -ts rows: $(cat "$tmp/ts.jsonl")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["tensor_split"] for r in rows] == ["1.00/2.00", "3.00/1.00"], rows
assert all(r["avg_ts"] > 0 and "sim:1" in r["placement"] for r in rows), rows
PY
    # Hybrid (routed experts on the cpu, the rest on sim): the overhead share in every format, a
    # column of the table where weights or ops were split (the cpu-only table has none, above).
    # The cpu's cost rates fixed (as cli_run does): measured on a loaded machine, they can send
    # the routed experts to sim (staged there) instead of copying activations to the cpu.
    printf '[plugins.cpu]\nmemory_gbps = "55"\nlaunch_us = "0.2"\n' >"$tmp/rates.toml"
    "$sy" bench -m "$m" -p 16 -n 4 -r 2 --plugin "$sim" --backend sim -ngl 99 --cpu-moe \
        --config "$tmp/rates.toml" -o jsonl >"$tmp/hy.jsonl" 2>"$tmp/e" ||
        fail "bench hybrid jsonl: $(cat "$tmp/e")"
    python3 - "$tmp/hy.jsonl" <<'PY' || fail "bench hybrid shares: $(cat "$tmp/hy.jsonl")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["test"] for r in rows] == ["pp16", "tg4"], rows
for r in rows:
    assert r["backends"] == "sim,cpu", r["backends"]
    parts = [r[k] for k in ("sync_share", "copy_share", "host_share")]
    assert all(0 <= p <= 1 for p in parts + [r["staging_share"]]), r
    assert abs(r["overhead_share"] - sum(parts)) < 1e-9, r
    assert r["copy_share"] + r["staging_share"] > 0, r  # something crossed the link
assert rows[1]["copy_share"] > 0, rows[1]  # decode: the experts' inputs and sums, every layer
PY
    "$sy" bench -m "$m" -p 16 -n 4 -r 1 --plugin "$sim" --backend sim -ngl 99 --cpu-moe \
        --config "$tmp/rates.toml" >"$tmp/hy.md" 2>"$tmp/e" || fail "bench hybrid md: $(cat "$tmp/e")"
    head -1 "$tmp/hy.md" | grep -Eq '\| overhead \| +test \| +t/s \|$' ||
        fail "hybrid md header: $(head -1 "$tmp/hy.md")"
    [ "$(grep -Ec '^\| deepseek2 .* \| +[0-9]+\.[0-9]% \| +(pp16|tg4) \| ' "$tmp/hy.md")" -eq 2 ] ||
        fail "hybrid md rows: $(cat "$tmp/hy.md")"
    # Sweep on a device: the memory in use there, per row (it only grows), in both forms.
    "$sy" sweep -m "$m" -c 128 -ub 32 -n 4 --plugin "$sim" --backend sim -o jsonl >"$tmp/dev.jsonl" \
        2>"$tmp/e" || fail "sweep on sim: $(cat "$tmp/e")"
    python3 - "$tmp/dev.jsonl" <<'PY' || fail "sweep device memory: $(cat "$tmp/dev.jsonl")"
import json, sys
used = [json.loads(l)["device_used_mib"]["sim"] for l in open(sys.argv[1])]
assert len(used) == 4 and used[0] > 0 and used == sorted(used), used
PY
    "$sy" sweep -m "$m" -c 64 -ub 32 -n 4 --plugin "$sim" --backend sim --cpu-moe >"$tmp/dev.md" 2>"$tmp/e" \
        || fail "sweep md on cpu + sim: $(cat "$tmp/e")"
    grep -q '| RSS HWM MiB |     sim MiB |$' "$tmp/dev.md" || fail "sweep md device column: $(cat "$tmp/dev.md")"
    [ "$(grep -Ec '^\|    32 \|      4 \| +(0|32) \| .* \| +[0-9]+\.[0-9] \| +[1-9][0-9]*\.[0-9] \|$' "$tmp/dev.md")" -eq 2 ] \
        || fail "sweep md device rows: $(cat "$tmp/dev.md")"
fi
echo "cli_bench: ok"
