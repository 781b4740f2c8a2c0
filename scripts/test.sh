#!/usr/bin/env bash
# The whole test suite: unit, integration and end-to-end (real runsc), once in
# a normal build and once under AddressSanitizer + UndefinedBehaviorSanitizer;
# the threaded part once more under ThreadSanitizer; then a bounded fuzz run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --deps-only

jobs=$(nproc)
for variant in build build-asan; do
    sanitize=OFF
    [ "$variant" = build-asan ] && sanitize=ON
    echo "== $variant (sanitizers $sanitize)"
    cmake -S . -B "$variant" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSECCHECKD_SANITIZE=$sanitize >/dev/null
    cmake --build "$variant" -j"$jobs"
    (cd "$variant" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
        ctest --output-on-failure)
done

# ThreadSanitizer over what crosses threads: the loop/writer handoff (lock-
# free lists, pipeline.c) under the unit pipeline tests and a full replay of
# every trace over 8 connections, and restarts under load.
echo "== build-tsan (ThreadSanitizer)"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSECCHECKD_TSAN=ON >/dev/null
cmake --build build-tsan -j"$jobs" --target seccheckd seccheck-loadgen test_sink_sqlite test_replay test_restart
(cd build-tsan && TSAN_OPTIONS=halt_on_error=1:abort_on_error=1:allocator_may_return_null=1 \
    ctest --output-on-failure -R '^(unit\.sink_sqlite|integration\.replay|integration\.restart)$')

# Fuzzing (clang + libFuzzer), bounded; new finds merge into tests/fuzz/corpus,
# which fuzz.regression replays in both builds above.
echo "== fuzz (60 s)"
scripts/fuzz.sh "${SECCHECKD_FUZZ_SECONDS:-60}"
