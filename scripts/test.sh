#!/usr/bin/env bash
# Builds and runs every test: the Release build with the whole suite, then an ASan+UBSan build
# running the suites labelled "sanitize" (core, plugin host, CPU plugin, conformance).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSWITCHYARD_BUILD_TESTS=ON
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSWITCHYARD_SANITIZE=ON -DSWITCHYARD_BUILD_TESTS=ON
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -L sanitize
