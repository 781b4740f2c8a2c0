#!/usr/bin/env bash
# The whole test suite: unit, integration and end-to-end (real runsc), once in
# a normal build and once under AddressSanitizer + UndefinedBehaviorSanitizer;
# the threaded part once more under ThreadSanitizer; Release builds with gcc
# and with clang (their optimizers and warnings differ), the unit tests run
# in the clang one; then a bounded fuzz run. Warnings are errors in every
# build here (-DSECCHECKD_WERROR=ON).
#
# Every stage runs even when an earlier one fails (a failing test in the
# normal build still lets the sanitizer stages run); the end prints one line
# per stage and the script exits non-zero if any stage failed.
#
# Environment: SECCHECKD_FUZZ_SECONDS (60).
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --deps-only || { echo "test.sh: scripts/setup.sh --deps-only failed: nothing can be built" >&2; exit 1; }

jobs=$(nproc)
werror=-DSECCHECKD_WERROR=ON

# configure DIR [cmake args...] (quiet unless it fails)
configure() {
    local dir=$1
    shift
    local out
    # The tests on: scripts/setup.sh configures build/ without them.
    out=$(cmake -S . -B "$dir" "$werror" -DSECCHECKD_TESTS=ON "$@" 2>&1) || { echo "$out" >&2; return 1; }
}

stage_normal() {
    configure build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSECCHECKD_SANITIZE=OFF
    cmake --build build -j"$jobs"
    # In parallel but for the tests that measure time (RUN_SERIAL in the
    # CMake lists: they run alone, after the rest).
    (cd build && ctest -j"$jobs" --output-on-failure)
}

stage_asan() {
    configure build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSECCHECKD_SANITIZE=ON
    cmake --build build-asan -j"$jobs"
    (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
        ctest -j"$jobs" --output-on-failure)
}

# ThreadSanitizer over what crosses threads: the loop/writer handoff (lock-
# free lists, pipeline.c) under the unit pipeline tests and a full replay of
# every trace over 8 connections, restarts under load, and fair shares
# (batches released to their connections' accounts as they come back).
stage_tsan() {
    configure build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSECCHECKD_TSAN=ON
    cmake --build build-tsan -j"$jobs" --target seccheckd seccheck-loadgen test_sink_sqlite test_replay test_restart \
        test_fairness
    (cd build-tsan && TSAN_OPTIONS=halt_on_error=1:abort_on_error=1:allocator_may_return_null=1:suppressions=$PWD/../tests/tsan.supp \
        ctest --output-on-failure -R '^(unit\.sink_sqlite|integration\.(replay|restart|fairness))$')
}

# What a packager builds: Release, every target, gcc's -O2/-O3-only warnings.
stage_release_gcc() {
    configure build-release-gcc -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++
    cmake --build build-release-gcc -j"$jobs"
}

# clang's warnings differ from gcc's, at Release's -O3 too (the fuzz stage
# builds clang at -O2); the unit tests show its code runs.
stage_clang() {
    configure build-clang -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
    cmake --build build-clang -j"$jobs"
    (cd build-clang && ctest --output-on-failure -R '^unit\.')
}

# Files in the clone git neither tracks nor ignores (none outside a git
# clone): a stage must leave the clone as it found it.
untracked() {
    git ls-files --others --exclude-standard 2>/dev/null | sort
}

# Fuzzing (clang + libFuzzer), bounded. What adds coverage is kept in
# build-fuzz/ and counted; `scripts/fuzz.sh --update-corpus` puts it in
# tests/fuzz/corpus (which fuzz.regression replays in the builds above) for a
# developer to commit. The stage checks it left no file in the clone.
stage_fuzz() {
    local before after
    before=$(untracked)
    scripts/fuzz.sh "${SECCHECKD_FUZZ_SECONDS:-60}"
    after=$(untracked)
    if [ "$before" != "$after" ]; then
        echo "test.sh: the fuzz stage left files in the clone:" >&2
        comm -13 <(echo "$before") <(echo "$after") | head -5 >&2
        return 1
    fi
}

names=()
verdicts=()
failed=()
# run NAME FUNCTION: the function in a subshell with set -e (so its first
# failing command fails the stage), never stopping this script.
run() {
    local name=$1 fn=$2 started=$SECONDS rc
    echo "== $name"
    (set -e; "$fn")
    rc=$?
    local took=$((SECONDS - started))
    names+=("$name")
    if [ $rc -eq 0 ]; then
        verdicts+=("pass  $name (${took}s)")
    else
        verdicts+=("FAIL  $name (${took}s, exit $rc)")
        failed+=("$name")
        echo "== $name FAILED (exit $rc)" >&2
    fi
}

run "build (RelWithDebInfo): ctest" stage_normal
run "build-asan (ASan+UBSan): ctest" stage_asan
run "build-tsan (TSan): threaded subset" stage_tsan
run "build-release-gcc (Release, gcc): build" stage_release_gcc
run "build-clang (Release, clang): build + unit tests" stage_clang
run "fuzz (${SECCHECKD_FUZZ_SECONDS:-60} s)" stage_fuzz

echo
echo "== summary"
printf '%s\n' "${verdicts[@]}"
if [ ${#failed[@]} -gt 0 ]; then
    printf -v list '%s; ' "${failed[@]}"
    echo "test.sh: ${#failed[@]} of ${#names[@]} stages FAILED: ${list%; }"
    exit 1
fi
echo "test.sh: all ${#names[@]} stages passed"
