#!/usr/bin/env bash
# End-to-end `seccheckd alerts show` on a real gVisor sandbox (runsc, ptrace
# platform), one sandbox for all of it: its shell runs a shell whose child
# reads /etc/shadow, twice, a SIGUSR2 restart of the daemon in between. For
# each alert the ancestry shows cat, the shell that forked it and that
# shell's parent, the container's first process (container/start); the
# window shows cat's exec and, marked, its open of /etc/shadow; the first
# alert's story is the same after the restart as before it, and --json is
# one document saying the same.
# Usage: alert_show_e2e.sh SECCHECKD_BINARY
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/stop_jobs.sh"

seccheckd=${1:?usage: alert_show_e2e.sh SECCHECKD_BINARY}
command -v runsc >/dev/null || { echo "FAIL: runsc not installed (apt-get install -y runsc)"; exit 1; }
command -v sqlite3 >/dev/null || { echo "FAIL: sqlite3 not installed (apt-get install -y sqlite3)"; exit 1; }

e2e_scratch show-e2e

sock=$dir/s.sock
db=$dir/events.db
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
    {"name": "syscall/openat/exit", "optional_fields": ["fd_path"], $ctx}
  ],
  "sinks": [{"name": "remote", "config": {"endpoint": "$sock", "retries": 1000}}]
}}
JSON
cat > "$dir/rules.yaml" <<'YAML'
- rule: Shadow read
  desc: a program read /etc/shadow
  condition: evt.type in (open, openat) and evt.dir = < and evt.is_open_read = true and fd.name = /etc/shadow
  output: "%proc.name read %fd.name (parent=%proc.pname)"
  priority: WARNING
YAML

"$seccheckd" --socket "$sock" --db "$db" --rules "$dir/rules.yaml" "${own_names[@]}" 2>"$dir/daemon.log" &
daemon=$!
for _ in $(seq 500); do grep -q "info: listening on" "$dir/daemon.log" && break; sleep 0.01; done
grep -q "info: listening on" "$dir/daemon.log" || { cat "$dir/daemon.log"; echo "FAIL: seccheckd did not start"; exit 1; }

failures=0
fail() { echo "FAIL - $*"; failures=$((failures + 1)); }
ok() { echo "ok   - $*"; }
alerts() { sqlite3 -cmd '.timeout 5000' "$db" "SELECT count(*) FROM alerts" 2>/dev/null || echo 0; }
wait_alerts() {   # wait_alerts N SECONDS
    local deadline=$((SECONDS + $2))
    while [ "$(alerts)" -lt "$1" ] && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
    [ "$(alerts)" -ge "$1" ]
}

# "; true": the shell forks cat rather than exec it.
(cd /tmp && exec timeout 120 env -i PATH=/usr/bin:/bin HOME=/root \
    runsc --rootless --network=none --pod-init-config="$dir/cfg.json" do /bin/sh -c \
    'sh -c "cat /etc/shadow >/dev/null; true"; sleep 8; sh -c "cat /etc/shadow >/dev/null; true"' \
    </dev/null >"$dir/sandbox.out" 2>"$dir/sandbox.err") &
sandbox=$!
wait_alerts 1 30 || { cat "$dir/sandbox.err"; fail "no alert for the first read"; }

show() {   # show ID OUT [ARGS...]
    local id=$1 out=$2
    shift 2
    "$seccheckd" alerts show "$id" --db "$db" "$@" >"$out" 2>&1 || fail "alerts show $id: exit $?"
}
story() {   # story FILE WHAT: the ancestry and the window of one alert's show
    local f=$1 what=$2
    # The ancestry, first process first: sh[1] from container/start, then
    # the inner sh (exec'd by its parent's fork), then cat.
    if awk '/^Process ancestry/ { a = 1; next } /^$/ { a = 0 } a' "$f" >"$f.ancestry" &&
        sed -n 1p "$f.ancestry" | grep -q '^  sh\[1\] .* start .*/bin/sh' &&
        sed -n 2p "$f.ancestry" | grep -q '^  sh\[[0-9]*\] .* exec .*sh -c "cat /etc/shadow >/dev/null; true"' &&
        sed -n 3p "$f.ancestry" | grep -q '^  cat\[[0-9]*\] .* exec .*cat /etc/shadow  cwd /tmp  uid 0' &&
        [ "$(wc -l <"$f.ancestry")" = 3 ]; then
        ok "$what: the ancestry is sh[1] (the container's first), the sh it forked, cat"
    else
        fail "$what: ancestry"; cat "$f"
    fi
    if grep -q '^  .* sh\[[0-9]*\] exec /usr/bin/cat cat /etc/shadow$' "$f" &&
        grep -q '^> .* cat\[[0-9]*\] openat /etc/shadow O_RDONLY.* = 3$' "$f"; then
        ok "$what: the window shows cat's exec and, marked, its open of /etc/shadow"
    else
        fail "$what: window"; cat "$f"
    fi
}

show 1 "$dir/first.before"
story "$dir/first.before" "alert 1"

kill -USR2 "$daemon"
for _ in $(seq 300); do grep -q "restart: adopted" "$dir/daemon.log" && break; sleep 0.1; done
grep -q "restart: adopted" "$dir/daemon.log" && ok "SIGUSR2: the daemon restarted in place" ||
    fail "no restart in the log"
wait_alerts 2 30 || fail "no alert for the second read (after the restart)"
wait "$sandbox" || { cat "$dir/sandbox.err"; fail "the sandbox failed"; }
check_run=$(sqlite3 "$db" "SELECT (SELECT recv_ns FROM events WHERE id = (SELECT event_id FROM alerts WHERE id = 2))
                           > (SELECT max(started_ns) FROM runs)")
[ "$check_run" = 1 ] && ok "the second read came after the restart" || fail "the second read came before the restart"

show 1 "$dir/first.after"
cmp -s "$dir/first.before" "$dir/first.after" && ok "alert 1: the same story after the restart" ||
    { fail "alert 1 told otherwise after the restart"; diff "$dir/first.before" "$dir/first.after"; }
show 2 "$dir/second"
story "$dir/second" "alert 2 (raised after the restart)"

show 2 "$dir/second.json" --json
python3 - "$dir/second.json" <<'PY' && ok "--json: one document, the same story" || fail "--json"
import json, sys
d = json.load(open(sys.argv[1]))
a = d["ancestry"]
assert [p["name"] for p in a] == ["sh", "sh", "cat"], a
assert a[0]["pid"] == 1 and a[0]["program_from"] == "container_start", a[0]
assert a[2]["argv"] == ["cat", "/etc/shadow"] and a[2]["uid"] == 0 and a[2]["cwd"] == "/tmp", a[2]
assert d["event"]["message"]["pathname"] == "/etc/shadow", d["event"]
marked = [e for e in d["window"]["events"] if e["alert_event"]]
assert len(marked) == 1 and "openat /etc/shadow" in marked[0]["line"], marked
assert any("exec /usr/bin/cat" in e["line"] for e in d["window"]["events"]), d["window"]
assert d["ancestry_notes"] == [], d["ancestry_notes"]
PY

e2e_stop_daemon

e2e_verdict "alert show e2e"
