#!/usr/bin/env bash
# Files named on the command line are read only when they are regular files of a bounded size
# (or "-", standard input, for -f): a device, a FIFO or a folder is a one-line message and a
# non-zero exit, not a read until memory runs out. Also: BPE on a long piece without a space,
# metadata that would size the model past its tensors, user patterns, and an allocation that fails.
# Argument: the switchyard binary.
set -u
sy=$1
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$sy" make-model --preset tiny --type q8_0 -o "$tmp/tiny.gguf" >/dev/null 2>&1 || fail "make-model"
m=$tmp/tiny.gguf

# Bounded memory for the refusals of devices: 1 GiB of address space (the reads used to grow
# until memory ran out).
limited() { (ulimit -v 1048576; "$@"); }

limited "$sy" run -m "$m" --config /dev/zero -p hi >"$tmp/o" 2>"$tmp/e" && fail "--config /dev/zero accepted"
grep -q "/dev/zero: not a regular file" "$tmp/e" || fail "--config /dev/zero: $(cat "$tmp/e")"
[ "$(wc -l <"$tmp/e")" -le 2 ] || fail "--config /dev/zero: more than a line: $(cat "$tmp/e")"

limited "$sy" run -m "$m" -f /dev/zero -n 1 >"$tmp/o" 2>"$tmp/e" && fail "-f /dev/zero accepted"
grep -q -- "-f /dev/zero: not a regular file (a device, pipe or socket is not read; use - for standard input)" "$tmp/e" ||
  fail "-f /dev/zero: $(cat "$tmp/e")"

mkfifo "$tmp/fifo"
limited "$sy" tokenize -m "$m" -f "$tmp/fifo" >"$tmp/o" 2>"$tmp/e" && fail "-f FIFO accepted"
grep -q -- "-f $tmp/fifo: not a regular file" "$tmp/e" || fail "-f FIFO: $(cat "$tmp/e")"

"$sy" tokenize -m "$m" -f "$tmp" >"$tmp/o" 2>"$tmp/e" && fail "-f folder accepted"
grep -q -- "-f $tmp: a folder, not a text file" "$tmp/e" || fail "-f folder: $(cat "$tmp/e")"

"$sy" tokenize -m "$m" -f "$tmp/missing.txt" >"$tmp/o" 2>"$tmp/e" && fail "-f missing accepted"
grep -q -- "-f $tmp/missing.txt: no such file" "$tmp/e" || fail "-f missing: $(cat "$tmp/e")"

"$sy" perplexity -m "$m" -f /dev/zero >"$tmp/o" 2>"$tmp/e" && fail "perplexity -f /dev/zero accepted"
grep -q -- "-f /dev/zero: not a regular file" "$tmp/e" || fail "perplexity -f /dev/zero: $(cat "$tmp/e")"

# "-" reads standard input: the same tokens as the file.
printf 'Hello world, twice: hello world.' >"$tmp/p.txt"
"$sy" tokenize -m "$m" -f "$tmp/p.txt" --ids >"$tmp/file_ids" 2>"$tmp/e" || fail "tokenize -f: $(cat "$tmp/e")"
"$sy" tokenize -m "$m" -f - --ids <"$tmp/p.txt" >"$tmp/stdin_ids" 2>"$tmp/e" || fail "tokenize -f -: $(cat "$tmp/e")"
cmp -s "$tmp/file_ids" "$tmp/stdin_ids" || fail "-f - gave $(cat "$tmp/stdin_ids"), the file $(cat "$tmp/file_ids")"
[ -s "$tmp/file_ids" ] || fail "no ids printed"

# A long piece without a space tokenizes in O(n log n): 200,000 letters, well within the test's
# timeout (the pairwise rescan took about 3 minutes for this).
python3 -c "import random; random.seed(3); print(''.join(random.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(200000)), end='')" >"$tmp/letters.txt"
timeout 60 "$sy" tokenize -m "$m" -f "$tmp/letters.txt" --ids --no-bos >"$tmp/o" 2>"$tmp/e" ||
  fail "200,000 letters: $(tail -1 "$tmp/e") (exit $?)"
[ -s "$tmp/o" ] || fail "200,000 letters: no ids"

# Metadata that would size the model beyond what the file backs is refused before anything is
# allocated for it: block_count 2^18 on a file with a few blocks (which took about 1 GiB before
# naming a missing tensor), expert_count 2^32 - 1 (16 GiB asked, then std::bad_alloc). The peak
# resident memory of a refusal stays within 50 MiB of a good run's.
patch_u32() {  # FILE KEY VALUE: the u32 value of a scalar metadata key, in place
  python3 - "$@" <<'PY'
import struct, sys
path, key, value = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3])
data = bytearray(open(path, "rb").read())
at = data.find(struct.pack("<Q", len(key)) + key)
assert at >= 0, key
at += 8 + len(key)
assert struct.unpack_from("<I", data, at)[0] == 4, "not a u32"
struct.pack_into("<I", data, at + 4, value)
open(path, "wb").write(data)
PY
}
# Runs the command, prints its peak RSS in KiB to $tmp/rss; its exit status is returned.
peak_rss() {
  python3 - "$tmp/rss" "$@" <<'PY'
import resource, subprocess, sys
r = subprocess.run(sys.argv[2:])
open(sys.argv[1], "w").write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(r.returncode)
PY
}
# The process's own footprint (binary, shared libraries, plugins) comes first: a good run.
peak_rss "$sy" run -m "$m" -p hi -n 1 >"$tmp/o" 2>"$tmp/e" || fail "tiny run: $(cat "$tmp/e")"
base=$(cat "$tmp/rss")
cp "$m" "$tmp/layers.gguf"
patch_u32 "$tmp/layers.gguf" deepseek2.block_count 262144
peak_rss "$sy" run -m "$tmp/layers.gguf" -p hi -n 1 >"$tmp/o" 2>"$tmp/e" && fail "block_count 2^18 accepted"
grep -q "metadata key 'deepseek2.block_count' is 262144 (262144 to run), but the file's tensors describe blocks 0-[0-9]* only" "$tmp/e" ||
  fail "block_count 2^18: $(cat "$tmp/e")"
[ "$(cat "$tmp/rss")" -lt $((base + 51200)) ] || fail "block_count 2^18: peak RSS $(cat "$tmp/rss") KiB (good run: $base)"
cp "$m" "$tmp/experts.gguf"
patch_u32 "$tmp/experts.gguf" deepseek2.expert_count 4294967295
peak_rss "$sy" run -m "$tmp/experts.gguf" -p hi -n 1 >"$tmp/o" 2>"$tmp/e" && fail "expert_count 2^32-1 accepted"
grep -q "metadata key 'deepseek2.expert_count' is 4294967295, more than the 1048576 any deepseek2 model could use" "$tmp/e" ||
  fail "expert_count: $(cat "$tmp/e")"
[ "$(cat "$tmp/rss")" -lt $((base + 51200)) ] || fail "expert_count: peak RSS $(cat "$tmp/rss") KiB (good run: $base)"
if grep -q "bad_alloc\|internal error" "$tmp/e"; then fail "expert_count: $(cat "$tmp/e")"; fi

# inspect shows strings from the file with control characters escaped: a terminal escape in
# general.name prints as \x1b, never as the raw byte.
cp "$m" "$tmp/name.gguf"
python3 - "$tmp/name.gguf" <<'PY'
import struct, sys
path = sys.argv[1]
key = b"general.name"
data = bytearray(open(path, "rb").read())
at = data.find(struct.pack("<Q", len(key)) + key)
assert at >= 0
at += 8 + len(key)
assert struct.unpack_from("<I", data, at)[0] == 8, "not a string"
n = struct.unpack_from("<Q", data, at + 4)[0]
evil = b"\x1b[2J\x07\xc2\x9b"
assert n >= len(evil), n
data[at + 12:at + 12 + len(evil)] = evil
open(path, "wb").write(data)
PY
"$sy" inspect "$tmp/name.gguf" >"$tmp/o" 2>"$tmp/e" || fail "inspect: $(cat "$tmp/e")"
grep -q 'general.name.*"\\x1b\[2J\\x07\\u009b' "$tmp/o" || fail "inspect escapes: $(grep general.name "$tmp/o")"
if LC_ALL=C grep -q "$(printf '\x1b')" "$tmp/o"; then fail "inspect printed a raw ESC"; fi

# User regular expressions run in linear time (RE2): 20,000 nested parentheses compile and match
# (std::regex overflowed its stack), a pattern over 64 KiB is refused; a pattern that backtracks exponentially in
# ECMAScript engines finishes at once; backreferences are refused by name; --n-cpu-moe of a
# million layers is a range, not a regex of a million alternatives. The same from a config.
deep=$(python3 -c "print('(' * 20000 + 'x' + ')' * 20000, end='')")
timeout 60 "$sy" run -m "$m" -p hi -n 1 -ot "$deep=cpu" >"$tmp/o" 2>"$tmp/e" ||
  fail "-ot 20,000 nested parentheses: exit $?: $(tail -c 300 "$tmp/e")"
deeper=$(python3 -c "print('(' * 40000 + 'x' + ')' * 40000, end='')")
timeout 60 "$sy" run -m "$m" -p hi -n 1 -ot "$deeper=cpu" >"$tmp/o" 2>"$tmp/e"; st=$?
[ $st -ne 0 ] && [ $st -lt 124 ] || fail "-ot 80,001 characters: exit $st: $(tail -c 300 "$tmp/e")"
grep -q "80001 characters, more than 65536" "$tmp/e" || fail "-ot 80,001 characters: $(tail -c 300 "$tmp/e")"
timeout 60 "$sy" run -m "$m" -p hi -n 1 -ot '(((((.*)*)*)*)*)*x=cpu' >"$tmp/o" 2>"$tmp/e" ||
  fail "-ot nested stars: exit $?: $(cat "$tmp/e")"
"$sy" run -m "$m" -p hi -n 1 -ot '(exps)\1=cpu' >"$tmp/o" 2>"$tmp/e" && fail "-ot backreference accepted"
grep -q "invalid regex '(exps)\\\\1': backreferences (\\\\1) are not supported" "$tmp/e" ||
  fail "-ot backreference: $(cat "$tmp/e")"
"$sy" run -m "$m" -p hi -n 1 -ot 'ffn_(?=up)=cpu' >"$tmp/o" 2>"$tmp/e" && fail "-ot lookahead accepted"
grep -q "lookahead and lookbehind are not supported" "$tmp/e" || fail "-ot lookahead: $(cat "$tmp/e")"
timeout 60 "$sy" run -m "$m" -p hi -n 1 --n-cpu-moe 1048576 >"$tmp/o" 2>"$tmp/e" ||
  fail "--n-cpu-moe 1048576: exit $?: $(cat "$tmp/e")"
printf '[[placement.rules]]\nmatch = "(((((.*)*)*)*)*)*x"\nbackend = "cpu"\n[[placement.rules]]\nmatch = "(a)\\\\2"\nbackend = "cpu"\n' >"$tmp/bad.toml"
timeout 60 "$sy" run -m "$m" -p hi -n 1 --config "$tmp/bad.toml" >"$tmp/o" 2>"$tmp/e" && fail "config backreference accepted"
grep -q "placement rule 2 ($tmp/bad.toml:4:1): invalid regex '(a)\\\\2': backreferences" "$tmp/e" ||
  fail "config backreference: $(cat "$tmp/e")"

# An allocation the machine cannot serve names what it was for and how much: a KV cache of
# 600,000 tokens (1.1 GiB with mla 0) in 1 GiB of address space. The memory check before it
# reads MemAvailable, which the address-space limit does not lower, so the allocation itself fails.
limited "$sy" run -m "$m" -p hi -n 1 --mla 0 -c 600000 >"$tmp/o" 2>"$tmp/e" && fail "-c 600000 in 1 GiB ran"
grep -q "^switchyard: error: out of memory: the KV cache of 600000 tokens (-c) needs 1.1 GiB (1152000000 bytes)$" "$tmp/e" ||
  fail "-c 600000 in 1 GiB: $(tail -3 "$tmp/e")"
echo "PASS"
