#!/usr/bin/env bash
# The official `openai` npm package (installed from the npm registry into WORK_DIR on first use)
# against `switchyard serve` on a free loopback port.
# usage: openai_client_test.sh SWITCHYARD WORK_DIR
set -euo pipefail
bin=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
if [ ! -d "$work/node_modules/openai" ]; then
  npm install --prefix "$work" --no-audit --no-fund --silent openai@4.104.0 >/dev/null
fi
"$bin" make-model --preset tiny --type f32 -o "$work/tiny.gguf" >/dev/null 2>&1
"$bin" serve -m "$work/tiny.gguf" --port 0 -np 2 -c 2048 --api-key k -a tiny 2>"$work/serve.log" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
port=
for _ in $(seq 1 600); do
  port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/serve.log")
  [ -n "$port" ] && break
  kill -0 $pid 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "serve did not start" >&2; exit 1; }
# The test script next to the installed package, so that `import "openai"` finds it.
cp "$here/openai_client_test.mjs" "$work/"
node "$work/openai_client_test.mjs" "$port" k
kill -TERM $pid
wait $pid
