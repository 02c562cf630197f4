#!/usr/bin/env bash
# Builds and runs every test: the Release build with the whole suite, then an ASan+UBSan build
# running the suites labelled "sanitize" (core, plugin host, CPU plugin, conformance).
#
# A failing test's full output is printed again at the very end, so it is what a truncated CI log
# still shows. A test that fails is run once more: if it then passes, the run still passes but the
# log says FLAKY and keeps the first failure's output (ASan's LeakSanitizer can fail to stop the
# world on a loaded machine); a test that fails twice fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

run_suite() {
  local dir=$1
  shift
  local log="$dir/ctest-first-run.log"
  if ctest --test-dir "$dir" --output-on-failure -j"$jobs" "$@" 2>&1 | tee "$log"; then
    return 0
  fi
  echo "==== $dir: failed tests, run once more, one at a time ===="
  if ctest --test-dir "$dir" --rerun-failed --output-on-failure -V "$@"; then
    echo "==== FLAKY in $dir: these failed once and passed on a second run; the first failure:"
    sed -n '/\*\*\*Failed\|\*\*\*Exception\|\*\*\*Timeout/,/^ *Start\|^[0-9]*% tests passed/p' "$log" | head -200
    return 0
  fi
  echo "==== $dir: the tests above failed twice"
  return 1
}

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSWITCHYARD_BUILD_TESTS=ON
cmake --build build -j"$jobs"
run_suite build

cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSWITCHYARD_SANITIZE=ON -DSWITCHYARD_BUILD_TESTS=ON
cmake --build build-asan -j"$jobs"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run_suite build-asan -L sanitize
