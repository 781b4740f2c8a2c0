#!/usr/bin/env bash
# `seccheckd gvisor-config` output is valid JSON that Debian's runsc accepts,
# and each point group delivers its events from a real sandbox to seccheckd.
# Usage: gvisor_config_e2e.sh SECCHECKD_BINARY
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/stop_jobs.sh"
seccheckd=${1:?usage: gvisor_config_e2e.sh SECCHECKD_BINARY}
command -v runsc >/dev/null || { echo "FAIL: runsc not installed (apt-get install -y runsc)"; exit 1; }
e2e_scratch gvcfg
failures=0

# group, the type names its workload must produce
cases=(
    "exec:CONTAINER_START SENTRY_EXEC SYSCALL_EXECVE SENTRY_TASK_EXIT"
    "files:SYSCALL_OPEN SYSCALL_CLOSE"
    "net:SYSCALL_SOCKET SYSCALL_CONNECT"
    "all:SENTRY_EXEC SYSCALL_OPEN SYSCALL_CONNECT"
)
workload='/bin/true; cat /etc/hostname >/dev/null; python3 -c "import socket; socket.socket().connect_ex((\"127.0.0.1\", 9))"'

for case in "${cases[@]}"; do
    group=${case%%:*}
    want=${case#*:}
    sock=$dir/$group.sock
    db=$dir/$group.db
    "$seccheckd" gvisor-config --points "$group" --socket "$sock" >"$dir/$group.json"
    python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$dir/$group.json" ||
        { echo "FAIL - $group: not valid JSON"; failures=$((failures + 1)); continue; }
    "$seccheckd" --socket "$sock" --db "$db" "${own_names[@]}" 2>"$dir/$group.log" &
    daemon=$!
    for _ in $(seq 300); do grep -q "info: listening on" "$dir/$group.log" && break; sleep 0.01; done
    if ! (cd /tmp && exec timeout 120 runsc --rootless --network=none --pod-init-config="$dir/$group.json" \
            do /bin/sh -c "$workload" </dev/null >"$dir/out" 2>"$dir/err"); then
        echo "FAIL - $group: runsc refused the config: $(tail -1 "$dir/err")"
        failures=$((failures + 1))
    fi
    for _ in $(seq 300); do grep -q "closed (eof)" "$dir/$group.log" && break; sleep 0.01; done
    kill -TERM "$daemon"; wait "$daemon" || true; daemon=
    missing=
    for type in $want; do
        n=$(sqlite3 "$db" "SELECT count(*) FROM events WHERE type_name='$type'" 2>/dev/null || echo 0)
        [ "${n:-0}" -gt 0 ] || missing="$missing $type"
    done
    if [ -n "$missing" ]; then
        echo "FAIL - $group: no events of$missing"
        failures=$((failures + 1))
    else
        echo "ok   - $group: runsc accepts it; events of $want arrived"
    fi
done

if "$seccheckd" gvisor-config --points bogus >/dev/null 2>"$dir/err"; then
    echo "FAIL - an unknown group was accepted"; failures=$((failures + 1))
else
    grep -q "expected exec, files, net or all" "$dir/err" && echo "ok   - unknown group refused"
fi
# Where the config goes instead of stdout: usage errors, and --runsc-toml through the command line
# (unit.runsc_toml has the merging's cases; docker.runtime and docker.daemonset the real runtimes).
usage_case() {   # usage_case EXPECTED-TEXT ARGS...
    local want=$1
    shift
    if "$seccheckd" gvisor-config "$@" >/dev/null 2>"$dir/err"; then
        echo "FAIL - gvisor-config $* was accepted"; failures=$((failures + 1))
    elif [ $? -ne 2 ] || ! grep -q -- "$want" "$dir/err"; then
        echo "FAIL - gvisor-config $*: $(cat "$dir/err")"; failures=$((failures + 1))
    else
        echo "ok   - gvisor-config $*: refused ($want)"
    fi
}
usage_case "give one" --docker-runtime x --runsc-toml "$dir/runsc.toml"
usage_case "give --docker-runtime too" --docker-config "$dir/daemon.json"
usage_case "needs an absolute path" --runsc-toml "$dir/runsc.toml" --socket rel.sock
printf '[runsc_config]\n  platform = "ptrace"\n' >"$dir/runsc.toml"
if "$seccheckd" gvisor-config --runsc-toml "$dir/runsc.toml" --socket /run/seccheckd/seccheck.sock >"$dir/out" 2>&1 &&
    grep -qx "  pod-init-config = \"$dir/seccheckd-pod-init.json\"" "$dir/runsc.toml" &&
    grep -qx '  platform = "ptrace"' "$dir/runsc.toml" && python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$dir/seccheckd-pod-init.json"; then
    echo "ok   - --runsc-toml: pod-init-config added beside the platform, the config written as JSON"
else
    echo "FAIL - --runsc-toml: $(cat "$dir/out") / $(cat "$dir/runsc.toml")"; failures=$((failures + 1))
fi
printf '[runsc_config]\n  pod-init-config = "/etc/falco/pod-init.json"\n' >"$dir/other.toml"
cp "$dir/other.toml" "$dir/other.copy"
if "$seccheckd" gvisor-config --runsc-toml "$dir/other.toml" >"$dir/out" 2>&1; then
    echo "FAIL - another tool's pod-init-config was clobbered"; failures=$((failures + 1))
elif [ $? -eq 1 ] && grep -q "already sets pod-init-config" "$dir/out" && cmp -s "$dir/other.toml" "$dir/other.copy"; then
    echo "ok   - --runsc-toml refuses another tool's pod-init-config (exit 1), the file unchanged"
else
    echo "FAIL - refusal: $(cat "$dir/out")"; failures=$((failures + 1))
fi

[ $failures -eq 0 ] || { echo "gvisor-config: $failures failure(s)"; exit 1; }
echo "gvisor-config: all checks passed"
