#!/usr/bin/env bash
# Every runsc pod-init config in configs/ runs with Debian's runsc (remote
# sinks deliver events to seccheck-dummy), and the configs that need current
# gVisor are refused by it, as configs/bench/README.md says.
# Usage: configs_e2e.sh SOURCE_DIR SECCHECK_DUMMY_BINARY
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/stop_jobs.sh"

src=${1:?usage: configs_e2e.sh SOURCE_DIR SECCHECK_DUMMY_BINARY}
dummy=${2:?usage: configs_e2e.sh SOURCE_DIR SECCHECK_DUMMY_BINARY}
command -v runsc >/dev/null || { echo "FAIL: runsc not installed (apt-get install -y runsc)"; exit 1; }

dir=$(mktemp -d /tmp/seccheckd-configs-XXXXXX)
listener=
cleanup() {
    [ -z "$listener" ] || kill -9 "$listener" 2>/dev/null || true
    stop_jobs
    rm -rf "$dir"
}
trap cleanup EXIT
sock=$dir/s.sock
failures=0

# The workload execs, reads and writes, so every config's points fire.
run_sandbox() {   # run_sandbox CONFIG -> exit code of runsc
    (cd /tmp && exec timeout 120 env -i PATH=/usr/bin:/bin runsc --rootless --network=none \
        --pod-init-config="$1" do /bin/sh -c '/bin/true; cat /etc/hostname >/dev/null' \
        </dev/null >"$dir/out" 2>"$dir/err")
}

for cfg in "$src"/configs/*.json "$src"/configs/bench/*.json; do
    name=${cfg#"$src"/}
    sed "s#/tmp/seccheck.sock#$sock#" "$cfg" >"$dir/cfg.json"
    remote=0
    grep -q '"remote"' "$cfg" && remote=1
    if [ $remote = 1 ]; then
        "$dummy" "$sock" >"$dir/dummy.log" 2>&1 &
        listener=$!
        for _ in $(seq 300); do grep -q "listening on" "$dir/dummy.log" && break; sleep 0.01; done
    fi
    if ! run_sandbox "$dir/cfg.json"; then
        echo "FAIL - $name: runsc refused it: $(tail -1 "$dir/err")"
        failures=$((failures + 1))
    elif [ $remote = 1 ]; then
        for _ in $(seq 300); do grep -q "closed" "$dir/dummy.log" && break; sleep 0.01; done
        kill -TERM "$listener"; wait "$listener" || true; listener=
        messages=$(sed -n 's/^total: [0-9]* connections\{0,1\}, \([0-9]*\) messages.*/\1/p' "$dir/dummy.log")
        if [ "${messages:-0}" -gt 0 ]; then
            echo "ok   - $name: runs, $messages events delivered to the remote sink"
        else
            echo "FAIL - $name: no events reached the remote sink"; cat "$dir/dummy.log"
            failures=$((failures + 1))
        fi
    else
        echo "ok   - $name: runs"
    fi
    if [ -n "$listener" ]; then kill -TERM "$listener"; wait "$listener" || true; listener=; fi
done

for cfg in "$src"/configs/bench/current-gvisor/*.json; do
    name=${cfg#"$src"/}
    sed "s#/tmp/seccheck.sock#$sock#" "$cfg" >"$dir/cfg.json"
    if run_sandbox "$dir/cfg.json"; then
        echo "FAIL - $name: Debian's runsc accepted it; update configs/bench/README.md"
        failures=$((failures + 1))
    elif grep -q 'unknown field "options"' "$dir/err"; then
        echo "ok   - $name: refused by runsc 2022-12 as documented (needs current gVisor)"
    else
        echo "FAIL - $name: refused for another reason: $(tail -1 "$dir/err")"
        failures=$((failures + 1))
    fi
done

[ $failures -eq 0 ] || { echo "configs: $failures failure(s)"; exit 1; }
echo "configs: all checks passed"
