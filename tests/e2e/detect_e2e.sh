#!/usr/bin/env bash
# End-to-end detection: real gVisor sandboxes (runsc, ptrace platform) stream
# into seccheckd running Falco-style rules. `cat /etc/passwd` must raise a
# rule on fd.name, and `sh -c 'cat /etc/hostname; true'` (sh forks cat) a
# rule on proc.pname = sh; each alert in the alerts table and as a Falco JSON
# line, committed within 2 s of its event.
# Usage: detect_e2e.sh SECCHECKD_BINARY
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/stop_jobs.sh"

seccheckd=${1:?usage: detect_e2e.sh SECCHECKD_BINARY}
command -v runsc >/dev/null || { echo "FAIL: runsc not installed (apt-get install -y runsc)"; exit 1; }
command -v sqlite3 >/dev/null || { echo "FAIL: sqlite3 not installed (apt-get install -y sqlite3)"; exit 1; }

e2e_scratch detect-e2e

sock=$dir/s.sock
db=$dir/events.db
alerts=$dir/alerts.json
ctx='"context_fields": ["container_id", "time", "thread_id", "task_start_time", "group_id", "thread_group_start_time", "credentials", "cwd", "process_name"]'
# "retries": the sandbox waits for a busy daemon rather than dropping events
# the checks need (lossless_sandbox in stop_jobs.sh)
cat > "$dir/cfg.json" <<JSON
{"trace_session": {
  "name": "Default",
  "points": [
    {"name": "container/start", $ctx},
    {"name": "sentry/clone", $ctx},
    {"name": "sentry/execve", "optional_fields": ["binary_info"], $ctx},
    {"name": "sentry/task_exit", $ctx},
    {"name": "syscall/openat/exit", "optional_fields": ["fd_path"], $ctx},
    {"name": "syscall/execve/exit", $ctx}
  ],
  "sinks": [{"name": "remote", "config": {"endpoint": "$sock", "retries": 1000}}]
}}
JSON
cat > "$dir/rules.yaml" <<'YAML'
- list: password_files
  items: [/etc/passwd, /etc/shadow]
- macro: opened_for_reading
  condition: evt.type in (open, openat) and evt.dir = < and evt.is_open_read = true and fd.num >= 0
- rule: Password file read
  desc: a program read the password database
  condition: opened_for_reading and fd.name in (password_files)
  output: "%proc.name read %fd.name (pid=%proc.pid parent=%proc.pname container=%container.id)"
  priority: WARNING
  tags: [e2e, filesystem]
- rule: Program run by sh
  desc: sh started a program that reads the hostname
  condition: evt.type = execve and proc.pname = sh and proc.name = cat and proc.args = /etc/hostname
  output: "%proc.name started by %proc.pname (cmdline=%proc.cmdline exe=%proc.exepath)"
  priority: NOTICE
  tags: [e2e, process]
YAML

"$seccheckd" --socket "$sock" --db "$db" --rules "$dir/rules.yaml" --alerts-out "$alerts" "${own_names[@]}" \
    2>"$dir/daemon.log" &
daemon=$!
for _ in $(seq 500); do grep -q "info: listening on" "$dir/daemon.log" && break; sleep 0.01; done
grep -q "info: listening on" "$dir/daemon.log" || { cat "$dir/daemon.log"; echo "FAIL: seccheckd did not start"; exit 1; }

sandbox() {   # sandbox NAME COMMAND
    (cd /tmp && exec timeout 120 env -i PATH=/usr/bin:/bin HOME=/root \
        runsc --rootless --network=none --pod-init-config="$dir/cfg.json" do /bin/sh -c "$2" \
        </dev/null >"$dir/$1.out" 2>"$dir/$1.err") || { cat "$dir/$1.err"; echo "FAIL: sandbox $1 failed"; exit 1; }
}
sandbox passwd 'cat /etc/passwd'
sandbox hostname 'cat /etc/hostname; true'
grep -q root: "$dir/passwd.out" || { echo "FAIL: sandbox output missing"; exit 1; }

failures=0
fail() { echo "FAIL - $*"; failures=$((failures + 1)); }
ok() { echo "ok   - $*"; }

# Each alert appears (table and JSON line) while the daemon runs: polled for
# at most 2 s after its sandbox ended.
wait_alert() {   # wait_alert RULE
    local deadline=$((SECONDS + 3))
    while [ $SECONDS -lt $deadline ]; do
        if [ "$(sqlite3 "$db" "SELECT count(*) FROM alerts WHERE rule='$1'" 2>/dev/null)" -ge 1 ] &&
            grep -q "\"rule\":\"$1\"" "$alerts" 2>/dev/null; then
            ok "$1: in the alerts table and the JSON lines"
            return
        fi
        sleep 0.05
    done
    fail "$1: no alert within 2 s"
}
wait_alert "Password file read"
wait_alert "Program run by sh"

check() {   # check DESCRIPTION EXPECTED SQL
    local got
    got=$(sqlite3 "$db" "$3")
    if [ "$got" = "$2" ]; then ok "$1"; else fail "$1: expected '$2', got '$got'"; fi
}
check "passwd: one alert, on cat's openat exit of /etc/passwd" "1|cat|SYSCALL_OPEN" \
    "SELECT count(*), e.process_name, e.type_name FROM alerts a JOIN events e ON e.id = a.event_id
     WHERE a.rule = 'Password file read' AND json_extract(e.detail, '\$.pathname') = '/etc/passwd'"
check "passwd: output names the file, the process and the container" 1 \
    "SELECT count(*) FROM alerts WHERE rule = 'Password file read' AND priority = 'Warning'
       AND output LIKE '%: Warning cat read /etc/passwd (pid=% parent=sh container=runsc-%) container_id=runsc-%'
       AND json_extract(output_fields, '\$.\"fd.name\"') = '/etc/passwd' AND tags = '[\"e2e\",\"filesystem\"]'"
check "sh: one alert for cat, naming sh as its parent and the exec'd path" 1 \
    "SELECT count(*) FROM alerts WHERE rule = 'Program run by sh' AND priority = 'Notice'
       AND json_extract(output_fields, '\$.\"proc.pname\"') = 'sh'
       AND json_extract(output_fields, '\$.\"proc.cmdline\"') = 'cat /etc/hostname'
       AND json_extract(output_fields, '\$.\"proc.exepath\"') = '/usr/bin/cat'"
check "each alert's batch committed within 2 s of its event" 0 \
    "SELECT count(*) FROM alerts a JOIN batches b ON a.event_id BETWEEN b.first_event_id AND b.last_event_id
     WHERE b.committed_ns - a.time_ns > 2000000000 OR b.committed_ns < a.time_ns - 1000000000"
check "no other alert" 2 "SELECT count(*) FROM alerts"

# The JSON lines are Falco's: the fields falcosidekick requires.
lines=$(wc -l <"$alerts")
[ "$lines" -eq 2 ] && ok "two JSON lines" || fail "expected 2 JSON lines, got $lines"
python3 - "$alerts" <<'PY' && ok "JSON lines in Falco's format" || fail "JSON lines not in Falco's format"
import json, re, sys
for line in open(sys.argv[1]):
    a = json.loads(line)
    assert list(a) == sorted(a), a.keys()
    assert set(a) == {"hostname", "output", "output_fields", "priority", "rule", "source", "tags", "time"}, a.keys()
    assert a["source"] == "syscall" and a["priority"] in ("Warning", "Notice")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z", a["time"]), a["time"]
    assert re.match(r"\d\d:\d\d:\d\d\.\d{9}: " + a["priority"] + " ", a["output"]), a["output"]
    assert isinstance(a["output_fields"]["evt.time"], int) and a["tags"] == sorted(a["tags"])
PY

e2e_stop_daemon
grep -q "summary: alerts 2: Warning 1, Notice 1" "$dir/daemon.log" && ok "summary counts the alerts by priority" ||
    fail "summary: $(grep 'summary: alerts' "$dir/daemon.log")"

e2e_verdict "detect e2e"
