#!/bin/sh
# cpu_conformance.sh <switchyard-conformance> <plugin dir>
# Runs the conformance kit on the best CPU plugin variant this machine can run (highest probe
# score) and expects exit 0 (no FAIL).
set -eu
kit=$1
dir=$2
best= best_score=0
for so in "$dir"/libswitchyard-cpu*.so; do
    [ -e "$so" ] || continue
    score=$("$kit" "$so" --probe | awk '{print $NF}')
    echo "probe $so: score $score"
    if [ "$score" -gt "$best_score" ]; then best=$so; best_score=$score; fi
done
if [ -z "$best" ]; then
    echo "no runnable CPU plugin (libswitchyard-cpu*.so with probe score > 0) in $dir" >&2
    exit 1
fi
echo "checking $best"
"$kit" "$best"
