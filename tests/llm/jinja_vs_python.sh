#!/bin/sh
# jinja_vs_python.sh TEMPLATE_DIR RENDER_BINARY: every chat template in TEMPLATE_DIR rendered
# with a set of conversations by Python's jinja2 (as HF's apply_chat_template renders) and by
# switchyard-jinja-render must give the same bytes; see jinja_cases.py.
set -eu
if [ $# -ne 2 ]; then
  echo "usage: $0 TEMPLATE_DIR RENDER_BINARY" >&2
  exit 2
fi
if ! python3 -c 'import jinja2' 2>/dev/null; then
  echo "jinja_vs_python: python3-jinja2 is not installed (scripts/deps.sh installs it)" >&2
  exit 1
fi
exec python3 "$(dirname "$0")/jinja_cases.py" "$1" "$2"
