#!/usr/bin/env bash
# End-to-end: the default rules (configs/rules/gvisor_rules.yaml) against real
# gVisor sandboxes (runsc, ptrace platform), with the pod-init config that
# `seccheckd gvisor-config --runsc $(command -v runsc) --rules` generates from
# them for this runsc (it must accept it). Debian's runsc is 0.0~20221219: the
# rules of gVisor's 2026 fields load, gvisor-config and rules check say they
# need a newer runsc, and they raise nothing, attacks or not.
#  1. One sandbox does what every rule is about (tools of the userland, and
#     tests/e2e/attack.c built static for the system calls it has no tool
#     for); each rule's alert appears, with the fields that name what was
#     done, in the alerts table and the --alerts-out JSON lines, committed
#     within 2 s of its event. A second sandbox floods while seccheckd is
#     stopped, so it drops events: "Sandbox dropped events".
#  2. Ordinary work (coreutils in a shell script, python3 -c, redis-server
#     with redis-benchmark) under the default rules, the outbound rule enabled
#     too: no alert at all.
# Usage: default_rules_e2e.sh SECCHECKD_BINARY SOURCE_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/stop_jobs.sh"

seccheckd=${1:?usage: default_rules_e2e.sh SECCHECKD_BINARY SOURCE_DIR}
src=${2:?usage: default_rules_e2e.sh SECCHECKD_BINARY SOURCE_DIR}
for tool in runsc sqlite3 gcc nc redis-server redis-benchmark apt-get chroot; do
    command -v $tool >/dev/null || { echo "FAIL: $tool not installed (scripts/setup.sh installs what the tests need)"; exit 1; }
done
rules=$src/configs/rules/gvisor_rules.yaml
runsc_bin=$(command -v runsc)
newer_rules=("Drop and execute new binary in container" "Fileless execution via memfd_create"
    "Shell with a network connection as a standard stream" "Download piped into a shell" "Shell in an exec session"
    "Executable mapped from the writable layer or a memfd")

e2e_scratch defrules

failures=0
fail() { echo "FAIL - $*"; failures=$((failures + 1)); }
ok() { echo "ok   - $*"; }

gcc -static -O2 -o "$dir/attack" "$(dirname "${BASH_SOURCE[0]}")/attack.c" ||
    { echo "FAIL: cannot build attack.c statically (libc6-dev provides libc.a)"; exit 1; }

# start_daemon NAME RULES_FILE...: a daemon with those rules, and the pod-init
# config generated from the same files in $dir/NAME.json.
start_daemon() {
    local name=$1
    shift
    local args=()
    for f in "$@"; do args+=(--rules "$f"); done
    sock=$dir/$name.sock db=$dir/$name.db alerts=$dir/$name.alerts log=$dir/$name.log
    "$seccheckd" gvisor-config --runsc "$runsc_bin" --rules "$@" "${lossless_sandbox[@]}" --socket "$sock" \
        >"$dir/$name.json" 2>"$dir/$name.config.err" || { cat "$dir/$name.config.err"; echo "FAIL: gvisor-config --rules failed"; exit 1; }
    # threshold 0: any drop raises Falco's "Falco internal: syscall event drop"
    "$seccheckd" --socket "$sock" --db "$db" "${args[@]}" --alerts-out "$alerts" --syscall-event-drops-threshold 0 \
        "${own_names[@]}" 2>"$log" &
    daemon=$!
    for _ in $(seq 500); do grep -q "info: listening on" "$log" && break; sleep 0.01; done
    grep -q "info: listening on" "$log" || { cat "$log"; echo "FAIL: seccheckd did not start"; exit 1; }
}

stop_daemon() {
    kill -TERM "$daemon"
    wait "$daemon" || { cat "$log"; echo "FAIL: seccheckd exited non-zero"; exit 1; }
    daemon=
}

sandbox() {   # sandbox NAME CONFIG COMMAND: runs it, fails the test if runsc does
    (cd /tmp && exec timeout 120 env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin HOME=/root \
        runsc --rootless --network=none --pod-init-config="$2" do /bin/sh -c "$3" \
        </dev/null >"$dir/$1.out" 2>"$dir/$1.err") || { cat "$dir/$1.err"; echo "FAIL: sandbox $1 failed"; exit 1; }
}

q() { sqlite3 "$db" "$1"; }

# Waits until the daemon has stored the close of N connections (their last
# events are committed before it).
wait_closed() {
    for _ in $(seq 300); do
        [ "$(q "SELECT count(*) FROM connections WHERE close_ns IS NOT NULL" 2>/dev/null || echo 0)" -ge "$1" ] && return
        sleep 0.02
    done
    fail "the daemon did not store the close of $1 connection(s)"
}

# wait_alert RULE [SQL_CONDITION]: an alert of RULE (matching the condition on
# the alerts row) is in the table and the JSON lines within 2 s.
wait_alert() {
    local where="rule = '$1'${2:+ AND ($2)}" deadline=$((SECONDS + 3))
    while [ $SECONDS -lt $deadline ]; do
        if [ "$(q "SELECT count(*) FROM alerts WHERE $where" 2>/dev/null || echo 0)" -ge 1 ] &&
            grep -qF "\"rule\":\"$1\"" "$alerts" 2>/dev/null; then
            return 0
        fi
        sleep 0.05
    done
    return 1
}

# expect RULE WHAT SQL_CONDITION: one check per rule (fields from output_fields).
expect() {
    if wait_alert "$1" "$3"; then ok "$1: $2"; else fail "$1: no alert where $3 within 2 s"; fi
}

f() { printf "json_extract(output_fields, '\$.\"%s\"')" "$1"; }

# ---- 1. every rule fires ----

# The test's own tuning, as a user's: the outbound rule on, loopback not
# allowed (a sandbox without a network has nowhere else to connect), and the
# attack program allowed to run from its temporary directory.
cat >"$dir/tuning.yaml" <<YAML
- rule: Outbound connection
  enabled: true
  override: {enabled: replace}
- list: allowed_outbound_networks
  items: []
  override: {items: replace}
- list: allowed_temp_programs
  items: [$dir/attack]
  override: {items: append}
YAML
start_daemon attacks "$rules" "$dir/tuning.yaml"
cfg=$dir/attacks.json
for r in "${newer_rules[@]}"; do
    if grep -qF "warning: rule '$r' needs a newer runsc than $runsc_bin (runsc version 0.0~20221219" \
        "$dir/attacks.config.err"; then
        ok "gvisor-config: '$r' needs a newer runsc than this one"
    else
        fail "gvisor-config did not say that '$r' needs a newer runsc: $(cat "$dir/attacks.config.err")"
    fi
done
"$seccheckd" rules check "$rules" >"$dir/check.out" 2>"$dir/check.err"
# (the six rules, and the sequence "Dropped file loaded as code": sequences_e2e.sh)
if grep -qF "7 rules need more than $runsc_bin (runsc version 0.0~20221219.0) sends: they load" "$dir/check.out" &&
    [ "$(grep -c 'needs a newer runsc' "$dir/check.err")" -ge 7 ]; then
    ok "rules check: the six 2026 rules load and need a newer runsc"
else
    fail "rules check did not say which rules need a newer runsc: $(cat "$dir/check.out" "$dir/check.err")"
fi

# (runsc do shows the sandbox the host's /tmp: names no other test uses)
sandbox attacks "$cfg" "
cat /etc/shadow >/dev/null
mkdir -p /root/.ssh && echo key >/root/.ssh/id_ed25519 && cat /root/.ssh/id_ed25519 >/dev/null
cp /bin/true /tmp/seccheckd-e2e-x && /tmp/seccheckd-e2e-x
cp /bin/true /usr/bin/seccheckd-e2e
echo x >/etc/seccheckd-e2e
nc -h 2>/dev/null
apt-get --version >/dev/null
chroot / /bin/true
$dir/attack shell unshare setns mount ptrace bpf module revshell setuid
"
grep -q "revshell: ok" "$dir/attacks.out" || { cat "$dir/attacks.out" "$dir/attacks.err"; fail "attack did not run"; }

expect "Sensitive file read" "cat reading /etc/shadow" \
    "$(f fd.name) = '/etc/shadow' AND $(f proc.name) = 'cat' AND $(f proc.pname) = 'sh' AND priority = 'Warning'"
expect "SSH private key read" "cat reading /root/.ssh/id_ed25519" \
    "$(f fd.name) = '/root/.ssh/id_ed25519' AND $(f proc.name) = 'cat'"
expect "Program run from a temporary directory" "/tmp/seccheckd-e2e-x" "$(f proc.exepath) = '/tmp/seccheckd-e2e-x' AND $(f proc.pname) = 'sh'"
expect "Write below a binary directory" "cp writing /usr/bin/seccheckd-e2e" \
    "$(f fd.name) = '/usr/bin/seccheckd-e2e' AND $(f proc.name) = 'cp' AND priority = 'Error'"
expect "Write below /etc" "sh writing /etc/seccheckd-e2e" "$(f fd.name) = '/etc/seccheckd-e2e' AND $(f proc.name) = 'sh'"
expect "Network tool run" "nc" "$(f proc.name) = 'nc' AND $(f proc.cmdline) = 'nc -h'"
expect "Package manager run" "apt-get" "$(f proc.cmdline) = 'apt-get --version' AND priority = 'Notice'"
expect "Chroot" "chroot to /" "$(f evt.arg.pathname) = '/' AND $(f proc.name) = 'chroot'"
expect "Shell started by a non-shell program" "sh under attack" \
    "$(f proc.name) = 'sh' AND $(f proc.pname) = 'attack' AND $(f proc.cmdline) = 'sh -c true'"
for fd in 0 1 2; do
    expect "Standard streams redirected to a socket" "socket onto fd $fd" \
        "$(f evt.rawres) = $fd AND $(f fd.name) LIKE 'socket:[%]' AND $(f proc.name) = 'attack' AND priority = 'Critical'"
done
expect "Outbound connection" "attack connecting to 127.0.0.1" \
    "$(f fd.name) LIKE '0.0.0.0:0->127.0.0.1:%' AND $(f proc.name) = 'attack'"
expect "Non-root process setting uid 0" "setuid(0) by uid 1000" \
    "$(f evt.type) = 'setuid' AND $(f user.uid) = 1000 AND $(f proc.name) = 'attack'"
expect "Namespace changed" "unshare" "$(f evt.type) = 'unshare' AND $(f evt.res) = 'SUCCESS'"
expect "Namespace changed" "setns (refused)" "$(f evt.type) = 'setns'"
expect "Filesystem mounted" "mount" "$(f evt.type) = 'mount' AND $(f evt.res) = 'SUCCESS' AND $(f proc.name) = 'attack'"
expect "Process attached with ptrace" "PTRACE_ATTACH" "$(f evt.res) = 'SUCCESS' AND $(f proc.name) = 'attack'"
expect "BPF program loaded" "bpf (refused)" "$(f evt.arg.arg1) = 5 AND $(f evt.res) = 'ENOSYS'"
expect "Kernel module loaded" "init_module (refused)" "$(f evt.type) = 'init_module'"
expect "Kernel module loaded" "finit_module (refused)" "$(f evt.type) = 'finit_module'"
wait_closed 1

# Flood: seccheckd stops reading for 1 s while python3 opens files as fast as
# it can, so the sandbox's socket fills and it drops; the events after that
# carry the grown count.
# Its config is the same without retries (lossless_sandbox in stop_jobs.sh):
# a full socket drops at once.
"$seccheckd" gvisor-config --runsc "$runsc_bin" --rules "$rules" "$dir/tuning.yaml" --socket "$sock" \
    >"$dir/flood.json" 2>/dev/null || { echo "FAIL: gvisor-config for the flood failed"; exit 1; }
sandbox flood "$dir/flood.json" "python3 -c '
import os, time
end = time.time() + 3
while time.time() < end:
    os.close(os.open(\"/etc/hostname\", os.O_RDONLY))
'" &
flood=$!
for _ in $(seq 1000); do
    [ "$(q "SELECT count(*) FROM events WHERE process_name = 'python3'" 2>/dev/null || echo 0)" -gt 0 ] && break
    sleep 0.01
done
kill -STOP "$daemon"
sleep 1
kill -CONT "$daemon"
wait "$flood"
expect "Sandbox dropped events" "python3's sandbox dropped events" "$(f evt.dropped_new) > 0"
wait_closed 2
# Falco's own alert for it (issue 31 item 3), on the flood's container, with Falco's fields
check_drop=$(q "SELECT count(*) FROM alerts a WHERE rule = 'Falco internal: syscall event drop' AND priority = 'Debug'
    AND CAST(json_extract(output_fields, '\$.n_drops') AS INTEGER) > 0
    AND container_id = (SELECT container_id FROM alerts WHERE rule = 'Sandbox dropped events' LIMIT 1)")
[ "$check_drop" -ge 1 ] && ok "Falco internal: syscall event drop: the flood's sandbox" ||
    fail "no 'Falco internal: syscall event drop' alert for the flood's sandbox"

# (and the sequence of /tmp/seccheckd-e2e-x, copied then run: sequences_e2e.sh tests them all)
expected="BPF program loaded|Chroot|Dropped file executed|Falco internal: syscall event drop|Filesystem mounted|\
Kernel module loaded|Namespace changed|Network tool run|\
Non-root process setting uid 0|Outbound connection|Package manager run|Process attached with ptrace|\
Program run from a temporary directory|SSH private key read|Sandbox dropped events|Sensitive file read|\
Shell started by a non-shell program|Standard streams redirected to a socket|Write below /etc|\
Write below a binary directory"
got=$(q "SELECT group_concat(rule, '|') FROM (SELECT DISTINCT rule FROM alerts ORDER BY rule)")
[ "$got" = "$expected" ] && ok "every default rule runsc 2022-12 can feed fired, and no other" ||
    fail "rules that fired: $got"
# /tmp/seccheckd-e2e-x was dropped and run, sh ran on a socket's descriptors: runsc 2022-12 says neither
n=0
for r in "${newer_rules[@]}"; do n=$((n + $(q "SELECT count(*) FROM alerts WHERE rule = '$r'"))); done
[ "$n" -eq 0 ] && ok "the 2026 rules raised nothing on runsc 2022-12" || fail "the 2026 rules raised $n alerts"
drop_rule="Falco internal: syscall event drop"
check_exact() {   # check_exact WHAT EXPECTED SQL
    local got
    got=$(q "$3")
    if [ "$got" = "$2" ]; then ok "$1"; else fail "$1: expected '$2', got '$got'"; fi
}
check_exact "sandbox 1's alerts in one container, the flood's in another" "1|1" \
    "SELECT count(DISTINCT container_id) FILTER (WHERE rule NOT IN ('Sandbox dropped events', '$drop_rule')),
            count(DISTINCT container_id) FILTER (WHERE rule IN ('Sandbox dropped events', '$drop_rule')) FROM alerts"
check_exact "no rule fired twice for one act (one alert each, three redirections, two namespaces and two modules)" \
    "" "SELECT rule || ': ' || count(*) FROM alerts WHERE rule NOT IN ('Sandbox dropped events', '$drop_rule')
        GROUP BY rule
        HAVING count(*) != CASE rule WHEN 'Standard streams redirected to a socket' THEN 3
                                     WHEN 'Namespace changed' THEN 2 WHEN 'Kernel module loaded' THEN 2 ELSE 1 END"
check_exact "each alert's batch committed within 2 s of its event" 0 \
    "SELECT count(*) FROM alerts a JOIN batches b ON a.event_id BETWEEN b.first_event_id AND b.last_event_id
     WHERE b.committed_ns - a.time_ns > 2000000000"
n=$(q "SELECT count(*) FROM alerts")
lines=$(wc -l <"$alerts")
[ "$lines" -eq "$n" ] && ok "one JSON line per alert ($n)" || fail "$lines JSON lines for $n alerts"
python3 - "$alerts" "$db" <<'PY' && ok "JSON lines equal the table's alerts, with MITRE tags" || fail "JSON lines differ from the table"
import json, re, sqlite3, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
rows = sqlite3.connect(sys.argv[2]).execute("SELECT rule, output, output_fields, tags FROM alerts ORDER BY id").fetchall()
assert len(lines) == len(rows)
for a, (rule, output, fields, tags) in zip(lines, rows):
    if rule == "Falco internal: syscall event drop":   # Falco's internal message: its text alone, no tags
        assert a["source"] == "internal" and "tags" not in a and a["output_fields"] == json.loads(fields), a
        assert a["output"] in output and a["output"].startswith("Falco internal: syscall event drop. "), a
        continue
    assert (a["rule"], a["output"], a["output_fields"], a["tags"]) == (rule, output, json.loads(fields), json.loads(tags)), a
    assert any(re.fullmatch(r"T\d{4}(\.\d{3})?", t) for t in a["tags"]), a["tags"]
PY
stop_daemon

# ---- 2. ordinary work raises nothing ----

cat >"$dir/outbound.yaml" <<'YAML'
- rule: Outbound connection
  enabled: true
  override: {enabled: replace}
YAML
start_daemon benign "$rules" "$dir/outbound.yaml"
sandbox benign "$dir/benign.json" '
set -e
mkdir -p /tmp/work && cd /tmp/work
seq 1 5000 >n.txt
sort -rn n.txt | head -3 >top.txt
cut -c1-2 n.txt | sort | uniq -c | wc -l >/dev/null
grep -c 7 n.txt >/dev/null
sed s/1/one/ n.txt | tr a-z A-Z | md5sum >sum.txt
cp n.txt m.txt && mv m.txt k.txt && rm k.txt
tar cf a.tar n.txt top.txt && gzip -f a.tar && gzip -dc a.tar.gz | tar tf - >/dev/null
date >/dev/null; id >/dev/null; hostname >/dev/null; cat /etc/os-release >/dev/null; env >/dev/null
for i in 1 2 3; do echo "$i" >>loop.txt; done
python3 -c "
import hashlib, json, os, sqlite3, subprocess, tempfile
db = sqlite3.connect(\":memory:\")
db.execute(\"CREATE TABLE t(x)\")
db.executemany(\"INSERT INTO t VALUES (?)\", [(i,) for i in range(1000)])
s = db.execute(\"SELECT sum(x) FROM t\").fetchone()[0]
with tempfile.NamedTemporaryFile(\"w\", delete=False) as f:
    json.dump({\"sum\": s}, f)
print(hashlib.sha256(open(f.name, \"rb\").read()).hexdigest(), subprocess.run([\"/bin/true\"]).returncode)
os.unlink(f.name)
"
redis-server --save "" --appendonly no --daemonize yes --logfile /dev/null >/dev/null
for i in 1 2 3 4 5 6 7 8 9 10; do redis-cli ping >/dev/null 2>&1 && break; sleep 0.2; done
redis-benchmark -t set,get -n 2000 -q >/dev/null
redis-cli shutdown nosave >/dev/null 2>&1 || true
echo done
'
grep -q done "$dir/benign.out" || { cat "$dir/benign.out" "$dir/benign.err"; fail "the ordinary work did not finish"; }
wait_closed 1
sleep 0.2
check_exact "ordinary work: events stored" 1 "SELECT count(*) > 100 FROM events"
# A dropped event is a real finding, not a false alarm: only with drops recorded.
check_exact "ordinary work: no alert (the drop rule only where the sandbox dropped)" "" \
    "SELECT rule || ': ' || output FROM alerts WHERE rule NOT IN ('Sandbox dropped events', '$drop_rule')
     OR NOT EXISTS (SELECT 1 FROM events WHERE dropped_count > 0)"
stop_daemon

if [ "$failures" -ne 0 ]; then
    echo "default rules e2e: $failures check(s) failed; alerts:"
    cat "$dir"/*.alerts 2>/dev/null | head -50
    exit 1
fi
echo "default rules e2e: all checks passed"
