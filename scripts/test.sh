#!/usr/bin/env bash
# Builds and runs every test once: the Release build (of the targets they need) runs the tests
# that are not labelled "sanitize" (fuzzing, the CUDA plugin's host tests, the Release-only CLI
# checks), then an ASan+UBSan build (of everything) runs the tests labelled "sanitize" (core,
# plugin host, CPU plugin, conformance, the CLI and server tests; the CUDA plugin, built in the
# Release tree when nvcc is present, is left out of it), then a ThreadSanitizer build runs the
# tests labelled "tsan" (thread pool, scheduler, executor). A test runs in one tree only: the
# sanitizer tree runs the same code with the same NDEBUG and stricter checks, so a second,
# uninstrumented run of it would add time, not checking. SY_TEST_RELEASE_ALL=1 builds the whole
# Release tree and runs the whole suite there as well (e.g. after changing optimisation flags).
#
# The output is kept short so that a CI log shows what matters: each step's full output goes to
# a log file in its build directory, and only a summary is printed, or, on failure, the failing
# tests' own output. A test that fails is run once more, alone and verbose: if it then passes,
# the run passes but says FLAKY and prints the first failure; a test that fails twice fails the
# run, and both failures are printed.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

echo "machine: $(nproc) usable of $(getconf _NPROCESSORS_ONLN) online CPUs;" \
  "$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//');" \
  "avx512: $(grep -o -w -E 'avx512(f|bw|vl|dq|_vnni|vbmi)' /proc/cpuinfo | sort -u | tr '\n' ' ')"

# Runs a command with its output in a log; on failure prints the log's end and stops the script.
step() {
  local what=$1 log=$2
  shift 2
  mkdir -p "$(dirname "$log")"
  local start=$SECONDS
  if "$@" >"$log" 2>&1; then
    echo "== $what: done in $((SECONDS - start)) s (log: $log)"
    return 0
  fi
  echo "== $what FAILED (log: $log); its last 150 lines:"
  tail -n 150 "$log"
  exit 1
}

# The blocks of a ctest log that belong to failed tests: the status line and the output that
# --output-on-failure prints under it, up to the next test's line.
failed_blocks() {
  awk '
    /^ *[0-9]+\/[0-9]+ Test +#[0-9]+:/ { show = ($0 ~ /\*\*\*|Failed|Not Run|Exception|Timeout/) }
    /^ *Start +[0-9]+:/ { show = 0 }
    /^The following tests FAILED:/ { show = 1 }
    show { print }
  ' "$1" | head -n 400
}

run_suite() {
  local dir=$1
  shift
  local log="$dir/ctest.log" rerun_log="$dir/ctest-rerun.log"
  local start=$SECONDS
  if ctest --test-dir "$dir" --output-on-failure -j"$jobs" "$@" >"$log" 2>&1; then
    echo "== tests in $dir: $(grep -E 'tests passed' "$log") in $((SECONDS - start)) s (log: $log)"
    return 0
  fi
  echo "== tests in $dir: the first run failed (log: $log); the failures:"
  failed_blocks "$log"
  echo "== $dir: the failed tests once more, one at a time, verbose (log: $rerun_log)"
  if ctest --test-dir "$dir" --rerun-failed --output-on-failure -V "$@" >"$rerun_log" 2>&1; then
    echo "== FLAKY in $dir: the tests above failed once and passed on a second run"
    return 0
  fi
  echo "== $dir: the tests failed twice; the second run's last 250 lines:"
  tail -n 250 "$rerun_log"
  return 1
}

# Ninja where the tree is new or already Ninja's (a tree configured with another generator keeps
# it: CMake cannot switch one).
generator() {
  local cache=$1/CMakeCache.txt
  if [ -f "$cache" ] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$cache"; then
    return 0
  fi
  command -v ninja >/dev/null && echo "-GNinja"
  return 0
}

step "configure Release" build/configure.log \
  cmake $(generator build) -S . -B build -DCMAKE_BUILD_TYPE=Release -DSWITCHYARD_BUILD_TESTS=ON
if [ "${SY_TEST_RELEASE_ALL:-0}" = 1 ]; then
  step "build Release" build/build.log cmake --build build -j"$jobs"
  run_suite build
else
  # Only what those tests need (tests/CMakeLists.txt, release_test_targets); the test
  # executables it leaves unbuilt are placeholders named *_NOT_BUILT to ctest.
  step "build Release" build/build.log cmake --build build -j"$jobs" --target release_test_targets
  run_suite build -LE sanitize -E '_NOT_BUILT$'
fi

# The sanitizer trees build the cpu plugin's avx512 variant only where it can run.
if grep -q -w avx512f /proc/cpuinfo; then
  cpu_variants="generic;avx2;avx512"
else
  cpu_variants="generic;avx2"
fi
step "configure ASan+UBSan" build-asan/configure.log \
  cmake $(generator build-asan) -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSWITCHYARD_SANITIZE=ON "-DSWITCHYARD_CPU_VARIANTS=$cpu_variants" \
  -DSWITCHYARD_BUILD_TESTS=ON -DSWITCHYARD_CUDA=OFF
step "build ASan+UBSan" build-asan/build.log cmake --build build-asan -j"$jobs"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
asan_ok=1
run_suite build-asan -L sanitize || asan_ok=0

# ThreadSanitizer: only the targets of the tests labelled tsan (the CPU plugin's thread pool, the
# scheduler with overlapped lanes, the executor, the serving engine) and what they load.
tsan_targets=(cpu_thread_pool_test switchyard_scheduler_tests switchyard_executor_tests engine_test)
step "configure TSan" build-tsan/configure.log \
  cmake $(generator build-tsan) -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSWITCHYARD_TSAN=ON -DSWITCHYARD_BUILD_TESTS=ON -DSWITCHYARD_CUDA=OFF \
  "-DSWITCHYARD_CPU_VARIANTS=$cpu_variants"
step "build TSan" build-tsan/build.log \
  cmake --build build-tsan -j"$jobs" --target "${tsan_targets[@]}"
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
run_suite build-tsan -L tsan
[ "$asan_ok" = 1 ]
