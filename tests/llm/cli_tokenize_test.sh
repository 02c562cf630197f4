#!/usr/bin/env bash
# switchyard tokenize on a vocabulary-only GGUF (the real DeepSeek-LLM vocabulary): llama-tokenize's
# output formats, BOS as the vocabulary asks, user-defined tokens ("ü") matched with or without
# special-token parsing, control tokens only with it, escapes, -f; bad input is a clear error
# with exit status 1.
set -u
sy=$1
vocab=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

"$sy" tokenize -m "$vocab" -p "Führer" >"$tmp/out" 2>"$tmp/err" || fail "tokenize: $(cat "$tmp/err")"
printf "%s\n" "100000 -> '<｜begin▁of▁sentence｜>'" "    37 -> 'F'" "100014 -> 'ü'" \
  "    71 -> 'h'" "  6245 -> 'rer'" >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || fail "pieces: $(cat "$tmp/out")"

ids() { "$sy" tokenize -m "$vocab" --ids "$@" 2>"$tmp/err" || fail "tokenize --ids $*: $(cat "$tmp/err")"; }
[ "$(ids -p "Führer")" = "[100000, 37, 100014, 71, 6245]" ] || fail "--ids: $(ids -p "Führer")"
[ "$(ids -p "Führer" --no-bos)" = "[37, 100014, 71, 6245]" ] || fail "--no-bos: $(ids -p "Führer" --no-bos)"
[ "$(ids -p "Führer" --no-bos --no-parse-special)" = "[37, 100014, 71, 6245]" ] ||
  fail "user-defined token not matched with --no-parse-special"
[ "$(ids -p "" )" = "[100000]" ] || fail "empty text: $(ids -p "")"

bos="<｜begin▁of▁sentence｜>"
[ "$(ids -p "${bos}Hello" --no-bos)" = "[100000, 17464]" ] || fail "BOS text not parsed: $(ids -p "${bos}Hello" --no-bos)"
case "$(ids -p "${bos}Hello" --no-bos --no-parse-special)" in
  "[100000"*|*" 100000"*) fail "--no-parse-special still parsed the BOS text" ;;
esac

"$sy" tokenize -m "$vocab" -p "Führer" --show-count >"$tmp/out" 2>&1 || fail "--show-count"
[ "$(tail -n 1 "$tmp/out")" = "Total number of tokens: 5" ] || fail "--show-count: $(tail -n 1 "$tmp/out")"

# Escapes as llama-tokenize: \n in -p is a newline unless --no-escape; -f reads the file as is.
printf 'Hello\nworld' >"$tmp/text"
[ "$(ids -p 'Hello\nworld')" = "$(ids -f "$tmp/text")" ] || fail "-p with \\n differs from -f"
[ "$(ids -p 'Hello\nworld')" = "[100000, 17464, 185, 11123]" ] || fail "escapes: $(ids -p 'Hello\nworld')"
[ "$(ids -p 'Hello\nworld' --no-escape)" != "$(ids -p 'Hello\nworld')" ] || fail "--no-escape"
[ "$(ids -p '\x46\xc3\xbchrer')" = "[100000, 37, 100014, 71, 6245]" ] || fail "\\xHH: $(ids -p '\x46\xc3\xbchrer')"
[ "$(ids -p 'a\qb\x4')" = "$(ids -p 'a\qb\x4' --no-escape)" ] || fail "unknown escapes are not kept as written"

# Bad input: exit status 1 (no crash) and a message that names what is wrong.
expect_error() {  # PATTERN ARGS...
  local pattern=$1; shift
  "$sy" tokenize "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc -eq 1 ] || fail "tokenize $* exited with $rc: $(cat "$tmp/err")"
  grep -q -- "$pattern" "$tmp/err" || fail "tokenize $*: no '$pattern' in: $(cat "$tmp/err")"
}
expect_error "$tmp/missing.gguf" -m "$tmp/missing.gguf" -p hi
expect_error "not a GGUF file" -m "$tmp/text" -p hi
python3 - "$tmp/novocab.gguf" <<'PY' || fail "writing a GGUF without a vocabulary"
import struct, sys
key, value = b"general.architecture", b"deepseek2"
with open(sys.argv[1], "wb") as f:  # GGUF v3, no tensors, one string key
    f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", len(key)) + key +
            struct.pack("<IQ", 8, len(value)) + value)
PY
expect_error "no vocabulary" -m "$tmp/novocab.gguf" -p hi
expect_error "$tmp/nothing.txt: no such file" -m "$vocab" -f "$tmp/nothing.txt"
expect_error "a folder, not a text file" -m "$vocab" -f "$tmp"
expect_error "both given" -m "$vocab" -p hi -f "$tmp/text"
expect_error "no text" -m "$vocab"
echo "cli_tokenize: ok"
