#!/usr/bin/env bash
# End-to-end: real gVisor sandboxes (runsc, ptrace platform) stream seccheck
# events into a real seccheckd; the database must hold the right rows.
# Usage: runsc_e2e.sh SECCHECKD_BINARY
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/stop_jobs.sh"

seccheckd=${1:?usage: runsc_e2e.sh SECCHECKD_BINARY}
command -v runsc >/dev/null || { echo "FAIL: runsc not installed (apt-get install -y runsc)"; exit 1; }
command -v sqlite3 >/dev/null || { echo "FAIL: sqlite3 not installed (apt-get install -y sqlite3)"; exit 1; }

e2e_scratch e2e

sock=$dir/s.sock
db=$dir/events.db
ctx='"context_fields": ["container_id", "time", "thread_id", "group_id", "credentials", "cwd", "process_name"]'
# "retries": the sandbox waits for a busy daemon rather than dropping events
# the checks need (lossless_sandbox in stop_jobs.sh)
cat > "$dir/cfg.json" <<JSON
{"trace_session": {
  "name": "Default",
  "points": [
    {"name": "container/start", "optional_fields": ["env"], $ctx},
    {"name": "sentry/clone", $ctx},
    {"name": "sentry/execve", "optional_fields": ["binary_info"], $ctx},
    {"name": "sentry/task_exit", $ctx},
    {"name": "syscall/openat/enter", "optional_fields": ["fd_path"], $ctx},
    {"name": "syscall/openat/exit", "optional_fields": ["fd_path"], $ctx},
    {"name": "syscall/execve/enter", $ctx},
    {"name": "syscall/execve/exit", $ctx}
  ],
  "sinks": [{"name": "remote", "config": {"endpoint": "$sock", "retries": 1000}}]
}}
JSON

"$seccheckd" --socket "$sock" --db "$db" "${own_names[@]}" 2>"$dir/daemon.log" &
daemon=$!
for _ in $(seq 500); do grep -q "info: listening on" "$dir/daemon.log" && break; sleep 0.01; done
grep -q "info: listening on" "$dir/daemon.log" || { cat "$dir/daemon.log"; echo "FAIL: seccheckd did not start"; exit 1; }

# Two sandboxes at once: two connections on one socket.
workload='/bin/echo hello-e2e; cat /etc/hostname >/dev/null; /bin/true marker-arg; /nonexistent-e2e 2>/dev/null; /usr/bin/env /bin/true env-arg; exit 0'
pids=()
for i in 1 2; do
    (cd /tmp && exec timeout 120 env -i PATH=/usr/bin:/bin HOME=/root \
        runsc --rootless --network=none --pod-init-config="$dir/cfg.json" do /bin/sh -c "$workload" \
        </dev/null >"$dir/sandbox$i.out" 2>"$dir/sandbox$i.err") &
    pids+=($!)
done
for i in 0 1; do
    if ! wait "${pids[$i]}"; then
        cat "$dir/sandbox$((i + 1)).err"
        echo "FAIL: sandbox $((i + 1)) failed"
        exit 1
    fi
done
grep -q hello-e2e "$dir/sandbox1.out" || { echo "FAIL: sandbox output missing"; exit 1; }

# Both connections closed (EOF) before we stop the daemon.
for _ in $(seq 300); do [ "$(grep -c 'closed (eof)' "$dir/daemon.log")" -ge 2 ] && break; sleep 0.01; done
e2e_stop_daemon

failures=0
check() {   # check DESCRIPTION EXPECTED SQL
    local got
    got=$(sqlite3 "$db" "$3")
    if [ "$got" = "$2" ]; then
        echo "ok   - $1"
    else
        echo "FAIL - $1: expected '$2', got '$got'"
        failures=$((failures + 1))
    fi
}

check "two sandbox connections, handshaken at version 1, closed by EOF" 2 \
    "SELECT count(*) FROM connections WHERE client_version=1 AND close_reason='eof'"
check "every message received was stored" 1 \
    "SELECT received = stored AND rejected = 0 AND store_failed = 0 AND received > 0 FROM runs"
check "connection message counts match the rows" 1 \
    "SELECT (SELECT sum(messages) FROM connections) = (SELECT count(*) FROM events)"
check "nothing failed to decode" 0 "SELECT count(*) FROM events WHERE decode_error IS NOT NULL"
check "one container start per sandbox, distinct runsc container ids" 2 \
    "SELECT count(DISTINCT container_id) FROM events WHERE type_name='CONTAINER_START' AND container_id LIKE 'runsc-%'"
check "container start carries the sh -c command line" 2 \
    "SELECT count(*) FROM events WHERE type_name='CONTAINER_START'
       AND json_extract(detail,'\$.args[0]')='/bin/sh' AND json_extract(detail,'\$.args[1]')='-c'
       AND json_extract(detail,'\$.args[2]') LIKE '%/bin/true marker-arg%'
       AND json_extract(detail,'\$.id') = container_id"
check "container start: cwd and root credentials" 2 \
    "SELECT count(*) FROM events WHERE type_name='CONTAINER_START' AND cwd='/tmp' AND real_uid=0 AND process_name='sh'"
check "sentry exec of /usr/bin/true with its argv" 2 \
    "SELECT count(*) FROM events WHERE type_name='SENTRY_EXEC'
       AND json_extract(detail,'\$.binary_path')='/usr/bin/true'
       AND json_extract(detail,'\$.argv[0]')='/bin/true' AND json_extract(detail,'\$.argv[1]')='marker-arg'"
check "execve enter rows carry pathname and argv" 2 \
    "SELECT count(*) FROM events WHERE type_name='SYSCALL_EXECVE' AND is_exit=0 AND sysno=59
       AND json_extract(detail,'\$.pathname')='/bin/true' AND json_extract(detail,'\$.argv[1]')='marker-arg'"
check "execve exit rows: success for /bin/echo" 2 \
    "SELECT count(*) FROM events e WHERE type_name='SYSCALL_EXECVE' AND is_exit=1 AND result=0
       AND json_extract(detail,'\$.pathname')='/bin/echo'"
check "failed execve of /nonexistent-e2e has errno ENOENT" 2 \
    "SELECT count(*) FROM events WHERE type_name='SYSCALL_EXECVE' AND is_exit=1 AND errno=2
       AND json_extract(detail,'\$.pathname')='/nonexistent-e2e'"
check "cat's openat of /etc/hostname, enter and exit" 4 \
    "SELECT count(*) FROM events WHERE type_name='SYSCALL_OPEN' AND process_name='cat'
       AND json_extract(detail,'\$.pathname')='/etc/hostname'"
check "events carry time and thread ids" 0 \
    "SELECT count(*) FROM events WHERE time_ns IS NULL OR thread_id IS NULL"
# env, forked by sh, runs true: true's parent is sh, not env (the name
# before the exec); found without thread_group_start_time (not collected)
check "execs: the parent of env's true is sh" 2 \
    "SELECT count(*) FROM execs WHERE binary_path = '/usr/bin/true' AND json_extract(argv, '\$[1]') = 'env-arg'
       AND parent_name = 'sh' AND parent_thread_group_id = 1"
check "execs: every exec's parent found" 0 "SELECT count(*) FROM execs WHERE parent_name IS NULL"
check "containers: the two sandboxes' containers, with their execs" 2 \
    "SELECT count(*) FROM containers WHERE container_id LIKE 'runsc-%'
       AND execs = (SELECT count(*) FROM execs e WHERE e.container_id = containers.container_id) AND execs >= 5"
got=$("$seccheckd" events --db "$db" --type SENTRY_EXEC | grep -c ' sh\[[0-9]*\] exec /usr/bin/env /usr/bin/env /bin/true env-arg$')
if [ "$got" = 2 ]; then echo "ok   - seccheckd events: the exec of env"; else
    echo "FAIL - seccheckd events: the exec of env: $got lines"; failures=$((failures + 1)); fi

e2e_verdict "e2e"
