#!/usr/bin/env bash
# switchyard run with constrained output (--grammar, --grammar-file, -j, -jf) on a tiny random
# model, which by itself writes neither JSON nor the words asked for: the output is a sentence
# of the grammar, generation stops when it is whole, and mistakes are errors naming the flag.
set -u
sy=$1
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$sy" make-model --preset tiny --type f32 -o "$tmp/tiny.gguf" >/dev/null 2>&1 || fail "make-model"
run() { "$sy" run -m "$tmp/tiny.gguf" -p "Answer:" -n 200 --temp 1 "$@"; }

for seed in 1 2 3; do
  run -s $seed --grammar 'root ::= ("yes" | "no" | "maybe") "!"' >"$tmp/o" 2>"$tmp/e" ||
    fail "--grammar: $(cat "$tmp/e")"
  grep -qx "yes!\|no!\|maybe!" "$tmp/o" || fail "--grammar output: $(cat "$tmp/o")"
  grep -q "stopped: the grammar's text is whole" "$tmp/e" || fail "stop reason: $(cat "$tmp/e")"
done

cat >"$tmp/schema.json" <<'JSON'
{"type": "object",
 "properties": {"city": {"enum": ["Paris", "Lima"]}, "days": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}, "maxItems": 2}},
 "required": ["city", "days"]}
JSON
for seed in 1 2 3; do
  run -s $seed -jf "$tmp/schema.json" >"$tmp/o$seed" 2>"$tmp/e" || fail "-jf: $(cat "$tmp/e")"
  python3 - "$tmp/o$seed" <<'PY' || fail "-jf output: $(cat "$tmp/o$seed")"
import json, sys
v = json.loads(open(sys.argv[1]).read())
assert v["city"] in ("Paris", "Lima") and isinstance(v["days"], int), v
assert set(v) <= {"city", "days", "tags"} and len(v.get("tags", [])) <= 2, v
assert all(len(t) <= 5 for t in v.get("tags", [])), v
PY
done
cmp -s "$tmp/o1" "$tmp/o2" && cmp -s "$tmp/o2" "$tmp/o3" && fail "every seed gave the same JSON"
run -s 1 -j "$(cat "$tmp/schema.json")" >"$tmp/o" 2>"$tmp/e" || fail "-j: $(cat "$tmp/e")"
cmp -s "$tmp/o" "$tmp/o1" || fail "-j and -jf with one schema and seed differ"
echo 'root ::= [a-c]{3} "."' >"$tmp/g.gbnf"
run -s 4 --grammar-file "$tmp/g.gbnf" >"$tmp/o" 2>"$tmp/e" || fail "--grammar-file: $(cat "$tmp/e")"
grep -qx "[a-c][a-c][a-c]\." "$tmp/o" || fail "--grammar-file output: $(cat "$tmp/o")"

expect_error() {  # WORDS ARGS...: run fails and says WORDS
  local words=$1; shift
  run "$@" >"$tmp/o" 2>"$tmp/e" && fail "accepted: $*"
  grep -qF -- "$words" "$tmp/e" || fail "$*: $(cat "$tmp/e")"
}
expect_error "--grammar: grammar: line 1, column 10: rule 'x' is not defined" --grammar 'root ::= x'
expect_error "--grammar and --json-schema both constrain the output" --grammar 'root ::= "a"' -j '{}'
expect_error "--json-schema: JSON schema: type: unknown type 'objekt'" -j '{"type": "objekt"}'
expect_error "--json-schema: not valid JSON" -j '{bad'
expect_error "--grammar-file $tmp/none.gbnf" --grammar-file "$tmp/none.gbnf"
expect_error "left-recursive" --grammar 'root ::= root "a" | "b"'
echo PASS
