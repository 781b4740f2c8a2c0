#!/usr/bin/env bash
# The whole test suite: unit, integration and end-to-end (real runsc), once in
# a normal build and once under AddressSanitizer + UndefinedBehaviorSanitizer.
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

# Fuzzing (clang + libFuzzer), bounded; new finds merge into tests/fuzz/corpus,
# which fuzz.regression replays in both builds above.
echo "== fuzz (60 s)"
scripts/fuzz.sh "${SECCHECKD_FUZZ_SECONDS:-60}"
