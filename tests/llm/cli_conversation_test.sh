#!/usr/bin/env bash
# `switchyard run -cnv` in a real terminal (tmux): two turns, the second evaluated past the
# cached history; Ctrl-C stops a long answer and not the program; --multiline-input; /exit
# leaves with status 0. Prints the panes' transcript.
# usage: cli_conversation_test.sh SWITCHYARD
set -euo pipefail
bin=$1
tmp=$(mktemp -d)
sock="$tmp/tmux.sock"
tmux_() { tmux -S "$sock" "$@"; }
trap 'tmux_ kill-server 2>/dev/null || true; rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*" >&2
  echo "--- pane:" >&2
  tmux_ capture-pane -p -J -t cnv -S - | tail -n 60 | cut -c1-200 >&2 || true
  exit 1
}
pane() { tmux_ capture-pane -p -J -t cnv -S -; }
# Waits until the pane shows `pattern` (an extended regex) `count` times.
wait_for() {
  local pattern=$1 count=${2:-1}
  for _ in $(seq 1 600); do
    [ "$(pane | grep -c -E -- "$pattern" || true)" -ge "$count" ] && return 0
    sleep 0.1
  done
  fail "the pane never showed '$pattern' ($count times)"
}

"$bin" make-model --preset tiny --type f32 -o "$tmp/tiny.gguf" >/dev/null 2>&1
# Long answers scroll: keep all of a pane's lines.
tmux_ start-server \; set-option -g history-limit 200000

# Two short turns.
tmux_ new-session -d -s cnv -x 220 -y 60 \
  "'$bin' run -m '$tmp/tiny.gguf' -cnv --temp 0 -n 8 --ignore-eos -c 2048 -sys 'Be brief.'; echo EXIT=\$? > '$tmp/exit'; sleep 30"
wait_for '^conversation: type a message'
wait_for '^>'
tmux_ send-keys -t cnv 'Hello there' Enter
wait_for '^\[length limit; prompt: [0-9]+ tokens \(0 from the cache\)'
tmux_ send-keys -t cnv 'Tell me more' Enter
wait_for '^\[length limit; prompt: [0-9]+ tokens \([1-9][0-9]* from the cache\)'
tmux_ send-keys -t cnv '/exit' Enter
for _ in $(seq 1 100); do [ -f "$tmp/exit" ] && break; sleep 0.1; done
[ "$(cat "$tmp/exit" 2>/dev/null)" = "EXIT=0" ] || fail "/exit did not end the program with 0"
echo "--- two turns:"
pane | grep -v '^$' | sed -n '1,40p'
tmux_ kill-session -t cnv

# A long answer stopped with Ctrl-C; the conversation goes on; multi-line input.
rm -f "$tmp/exit"
tmux_ new-session -d -s cnv -x 220 -y 60 \
  "'$bin' run -m '$tmp/tiny.gguf' -cnv --temp 0 -n -1 --ignore-eos -c 65536 --multiline-input; echo EXIT=\$? > '$tmp/exit'; sleep 30"
wait_for '^>'
tmux_ send-keys -t cnv 'Write a very long story' Enter Enter
sleep 0.3
tmux_ send-keys -t cnv C-c
wait_for '^\[stopped \(Ctrl-C\)'
wait_for '^>' 2
tmux_ send-keys -t cnv 'line one' Enter 'line two' Enter Enter
sleep 0.3
tmux_ send-keys -t cnv C-c
wait_for '^\[stopped \(Ctrl-C\); prompt: [0-9]+ tokens \([1-9][0-9]* from the cache\)'
wait_for '^\[stopped \(Ctrl-C\)' 2
wait_for '^>' 3
tmux_ send-keys -t cnv C-d
for _ in $(seq 1 100); do [ -f "$tmp/exit" ] && break; sleep 0.1; done
[ "$(cat "$tmp/exit" 2>/dev/null)" = "EXIT=0" ] || fail "end of input did not end the program with 0"
echo "--- Ctrl-C and multi-line input:"
pane | grep -v '^$' | cut -c1-160 | grep -E '^(>|\[|conversation|line)' 
echo "cli_conversation: all checks passed"
