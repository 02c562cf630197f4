#!/usr/bin/env bash
# switchyard batched-bench on a tiny synthetic model: llama-batched-bench's table, one row per
# (PP, TG, B) with N_KV = B (PP + TG) and speeds that agree with the times; a context too small
# for the largest test and bad lists are clear errors with a non-zero exit.
# Argument: the switchyard binary.
set -u
sy=$1
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$sy" make-model --preset tiny --type q8_0 -o "$tmp/tiny.gguf" >/dev/null 2>&1 || fail "make-model"
m=$tmp/tiny.gguf

"$sy" batched-bench -m "$m" -npp 64,96 -ntg 16 -npl 1,3 >"$tmp/out" 2>"$tmp/err" ||
  fail "batched-bench: $(cat "$tmp/err")"
grep -q "^main: n_kv_max = 336, " "$tmp/out" || fail "header: $(cat "$tmp/out")"
python3 - "$tmp/out" <<'PY' || fail "table: $(cat "$tmp/out")"
import sys
rows = [l for l in open(sys.argv[1]) if l.startswith("|")]
head = [c.strip() for c in rows[0].strip("|\n").split("|")]
assert head == ["PP", "TG", "B", "N_KV", "T_PP s", "S_PP t/s", "T_TG s", "S_TG t/s", "T s",
                "S t/s"], head
body = [[float(c) for c in r.strip("|\n").split("|")] for r in rows[2:]]
assert [(r[0], r[1], r[2]) for r in body] == [(64, 16, 1), (64, 16, 3), (96, 16, 1), (96, 16, 3)], body
for pp, tg, b, n_kv, t_pp, s_pp, t_tg, s_tg, t, s in body:
    assert n_kv == b * (pp + tg)
    assert abs(t - (t_pp + t_tg)) <= 0.0015, (t, t_pp, t_tg)
    # The times are printed to 1 ms: each speed times its time gives the tokens within that.
    assert abs(s_pp * t_pp - b * pp) <= s_pp * 0.0005 + 0.01, (s_pp, t_pp, b, pp)
    assert abs(s_tg * t_tg - b * tg) <= s_tg * 0.0005 + 0.01, (s_tg, t_tg, b, tg)
    assert abs(s * t - n_kv) <= s * 0.0015 + 0.01, (s, t, n_kv)
PY

# -c below the largest B (PP + TG) is refused naming -c; lists of nonsense are refused.
"$sy" batched-bench -m "$m" -npp 16 -ntg 4 -npl 1,3 -c 40 >"$tmp/o" 2>"$tmp/e" &&
  fail "-c 40 accepted"
grep -q "^switchyard: error: -c 40: the largest test needs 60 cells" "$tmp/e" || fail "-c: $(cat "$tmp/e")"
"$sy" batched-bench -m "$m" -npl 0 >"$tmp/o" 2>"$tmp/e" && fail "-npl 0 accepted"
grep -q "n-parallel" "$tmp/e" || fail "-npl 0: $(cat "$tmp/e")"
"$sy" batched-bench -m "$m" -npp x >"$tmp/o" 2>"$tmp/e" && fail "-npp x accepted"
grep -q "n-prompt" "$tmp/e" || fail "-npp x: $(cat "$tmp/e")"
echo "cli_batched_bench: ok"
