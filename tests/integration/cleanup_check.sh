#!/usr/bin/env bash
# integration.cleanup: a test that fails leaves nothing behind. Runs
# cleanup_probe, which starts a real daemon and then fails an assertion (or
# aborts), and checks that the probe exits promptly, that the daemon is gone
# within a bound, and that no scratch directory remains.
# Usage: cleanup_check.sh CLEANUP_PROBE
set -euo pipefail
probe=${1:?usage: cleanup_check.sh CLEANUP_PROBE}
work=$(mktemp -d /tmp/seccheckd-cleanup-check-XXXXXX)
leftover_pid=
remove_scratch() { case $1 in /tmp/seccheckd-?*) rm -rf "$1" ;; esac; }
cleanup() {
    # This test must not leak what it checks for, even when it fails.
    if [ -n "$leftover_pid" ]; then kill -9 "$leftover_pid" 2>/dev/null || true; fi
    if [ -s "$work/state" ]; then remove_scratch "$(cut -d' ' -f2 "$work/state")"; fi
    rm -rf "$work"
}
trap cleanup EXIT

failures=0
fail() { echo "FAIL - $*"; failures=$((failures + 1)); }

# True when pid is gone (or a zombie nobody reaps) within ms milliseconds.
gone_within() {
    local pid=$1 ms=$2 waited=0
    while [ "$waited" -le "$ms" ]; do
        [ -e "/proc/$pid" ] || return 0
        [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && return 0
        sleep 0.1
        waited=$((waited + 100))
    done
    return 1
}

check_mode() {
    local mode=$1 expect_rc=$2
    rm -f "$work/state"
    local rc=0
    # The probe's output goes to a file, not a pipe: a leaked daemon holding
    # a pipe would hang this script instead of failing it.
    timeout 60 "$probe" "$mode" "$work/state" >"$work/$mode.out" 2>&1 || rc=$?
    if [ ! -s "$work/state" ]; then
        fail "$mode: the probe did not start its daemon (rc $rc)"
        cat "$work/$mode.out"
        return
    fi
    local pid dir
    read -r pid dir <"$work/state"
    leftover_pid=$pid
    [ "$rc" -eq "$expect_rc" ] || { fail "$mode: probe exited $rc, expected $expect_rc"; cat "$work/$mode.out"; }
    if gone_within "$pid" 5000; then
        echo "ok   - $mode: daemon $pid gone"
    else
        fail "$mode: daemon $pid still running 5 s after its test failed"
    fi
    # The abort path cleans up from outside the dead process: allow it a moment.
    local waited=0
    while [ -e "$dir" ] && [ "$waited" -lt 50 ]; do sleep 0.1; waited=$((waited + 1)); done
    if [ -e "$dir" ]; then fail "$mode: scratch directory $dir left behind"; else echo "ok   - $mode: $dir removed"; fi
    # Whatever the verdict, leave nothing behind ourselves.
    kill -9 "$pid" 2>/dev/null || true
    remove_scratch "$dir"
    rm -f "$work/state"
    leftover_pid=
}

check_mode assert 1      # one failed test: the deliberate one
check_mode abort 134     # 128 + SIGABRT
[ "$failures" -eq 0 ] || { echo "cleanup: $failures check(s) failed"; exit 1; }
echo "cleanup: all checks passed"
