#!/usr/bin/env bash
# End-to-end: sequence rules and the rules for sandboxes that run untrusted code
# (configs/rules/gvisor_rules.yaml's sequences, configs/rules/untrusted_code_rules.yaml)
# on real gVisor sandboxes: Debian's runsc 0.0~20221219 (ptrace), under the pod-init config
# `seccheckd gvisor-config --rules` makes for it (runsc do keeps its state in a
# $TMPDIR/runsc-doNNN of its own whatever --root says, runsc/cmd/do.go; the daemon finds it
# through the connection, and watches this test's own root, never the machine's).
#  1. Each sequence and each rule of the untrusted-code file, one sandbox doing the thing and
#     one doing its benign twin (the same steps in another order or combination): the attack
#     raises it (its fields checked), the twin does not. A sequence's alert names each step's
#     stored event (the alerts table, the --alerts-out line, `seccheckd alerts show`).
#     "Dropped file loaded as code" reads sentry/mmap, which this runsc does not have:
#     gvisor-config and rules check say so (integration.gvisor2026 sends it in packets of
#     python3-protobuf's making).
#  2. The bounds on a real flood: a sandbox that begins 3000 chains against
#     --sequence-partials 200 is evicted from (counted, said in its next alert, in the
#     metrics) while a quiet sandbox beside it completes its chain.
# Usage: sequences_e2e.sh SECCHECKD_BINARY SOURCE_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/stop_jobs.sh"

seccheckd=${1:?usage: sequences_e2e.sh SECCHECKD_BINARY SOURCE_DIR}
src=${2:?usage: sequences_e2e.sh SECCHECKD_BINARY SOURCE_DIR}
for tool in runsc sqlite3 gcc curl python3; do
    command -v $tool >/dev/null || { echo "FAIL: $tool not installed (scripts/setup.sh installs what the tests need)"; exit 1; }
done
runsc_bin=$(command -v runsc)
rules=(--rules "$src/configs/rules/gvisor_rules.yaml" --rules "$src/configs/rules/untrusted_code_rules.yaml")

e2e_scratch sequences
root=$dir/runsc-root   # the daemon's --runsc-root: this test's own, never the machine's
mkdir -p "$root"
w=$dir/w               # what the sandboxes write (an overlay: nothing reaches the host)

failures=0
fail() { echo "FAIL - $*"; failures=$((failures + 1)); }
ok() { echo "ok   - $*"; }

gcc -static -O2 -o "$dir/attack" "$(dirname "${BASH_SOURCE[0]}")/attack.c" ||
    { echo "FAIL: cannot build attack.c statically (libc6-dev provides libc.a)"; exit 1; }

# The test's own tuning, as a user's: egress on, with nothing allowed but DNS.
cat >"$dir/tuning.yaml" <<'YAML'
- rule: "Untrusted code: egress outside the allowed destinations"
  enabled: true
  override: {enabled: replace}
YAML

cleanup_more() { [ -d "$root" ] && runsc --root "$root" list -q 2>/dev/null | xargs -r -n1 runsc --root "$root" delete -force 2>/dev/null || true; }

# start_daemon NAME ARGS...: a daemon with the rules, the tuning and ARGS; the pod-init config
# generated from the same files for this runsc in $cfg.
start_daemon() {
    local name=$1
    shift
    sock=$dir/$name.sock db=$dir/$name.db alerts=$dir/$name.alerts cfg=$dir/$name.json
    "$seccheckd" gvisor-config --runsc "$runsc_bin" --rules "$src/configs/rules/gvisor_rules.yaml" \
        "$src/configs/rules/untrusted_code_rules.yaml" "$dir/tuning.yaml" "${lossless_sandbox[@]}" --socket "$sock" >"$cfg" \
        2>"$dir/$name.config.err" || { cat "$dir/$name.config.err"; echo "FAIL: gvisor-config --rules failed"; exit 1; }
    "$seccheckd" --socket "$sock" --db "$db" "${rules[@]}" --rules "$dir/tuning.yaml" --alerts-out "$alerts" \
        --runsc-root "$root" --docker-socket none "$@" 2>"$dir/daemon.log" &
    daemon=$!
    for _ in $(seq 500); do grep -q "info: listening on" "$dir/daemon.log" && break; sleep 0.01; done
    grep -q "info: listening on" "$dir/daemon.log" || { cat "$dir/daemon.log"; echo "FAIL: seccheckd did not start"; exit 1; }
}

q() { sqlite3 "$db" "$1"; }

closed() { q "SELECT count(*) FROM connections WHERE close_ns IS NOT NULL" 2>/dev/null || echo 0; }

# sandbox NAME SCRIPT: runs SCRIPT in a sandbox of its own and waits until the daemon stored its
# connection's close (its events are committed before it); $conn is that connection.
sandbox() {
    local before
    before=$(closed)
    (cd /tmp && exec timeout 120 env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin HOME=/root \
        runsc --root "$root" --rootless --network=none --pod-init-config="$cfg" do /bin/sh -c "mkdir -p $w; $2" \
        </dev/null >"$dir/$1.out" 2>"$dir/$1.err") || { cat "$dir/$1.err"; echo "FAIL: sandbox $1 failed"; exit 1; }
    for _ in $(seq 300); do [ "$(closed)" -gt "$before" ] && break; sleep 0.02; done
    [ "$(closed)" -gt "$before" ] || { fail "$1: the daemon did not store its connection's close"; conn=0; return; }
    conn=$(q "SELECT max(id) FROM connections WHERE close_ns IS NOT NULL")
}

# alerts_of RULE [SQL_CONDITION]: alerts of RULE on $conn (matching the condition).
alerts_of() {
    q "SELECT count(*) FROM alerts a JOIN events e ON e.id = a.event_id WHERE e.conn_id = $conn AND a.rule = '$1'${2:+ AND ($2)}"
}

f() { printf "json_extract(a.output_fields, '\$.\"%s\"')" "$1"; }

# attack NAME RULE SQL_CONDITION SCRIPT and twin NAME RULE SCRIPT: the attack raises RULE (its
# alert matching the condition), the twin does not.
attack() {
    sandbox "$1" "$4"
    if [ "$(alerts_of "$2" "$3")" -ge 1 ]; then ok "$2: $1"; else
        fail "$2: $1 raised no alert where $3 (its alerts: $(q "SELECT group_concat(rule, ', ') FROM alerts a JOIN events e ON e.id = a.event_id WHERE e.conn_id = $conn"))"
    fi
}
twin() {
    sandbox "$1" "$3"
    local n
    n=$(alerts_of "$2")
    [ "$n" -eq 0 ] && ok "$2: quiet on its twin, $1" || fail "$2: its twin $1 raised it $n times"
}

# ---- 1. each sequence and each rule, and its twin ----

start_daemon attacks
if grep -qF "warning: sequence 'Dropped file loaded as code' needs a newer runsc than $runsc_bin (runsc version 0.0~20221219.0): the point sentry/mmap" \
    "$dir/attacks.config.err"; then
    ok "gvisor-config: 'Dropped file loaded as code' needs sentry/mmap, a newer runsc than this one"
else
    fail "gvisor-config did not say that 'Dropped file loaded as code' needs a newer runsc: $(cat "$dir/attacks.config.err")"
fi
"$seccheckd" rules check "$src/configs/rules/gvisor_rules.yaml" "$src/configs/rules/untrusted_code_rules.yaml" \
    >"$dir/check.out" 2>"$dir/check.err"
if grep -qE "^[0-9]+ sequences \([0-9]+ enabled\)$" "$dir/check.out" &&
    grep -qF "  Reverse shell [Critical]: 3 steps within 1m by container.id" "$dir/check.out" &&
    grep -qF "    2. dup: dup,dup2,dup3" "$dir/check.out" && grep -qF "    unless: procexit" "$dir/check.out" &&
    grep -qF "    1. clones: clone,fork,vfork,clone3 (at least 500)" "$dir/check.out"; then
    ok "rules check lists the sequences with their steps' event types"
else
    fail "rules check: $(cat "$dir/check.out")"
fi

creds='mkdir -p '$w'/home/.aws && echo key >'$w'/home/.aws/credentials && chmod 755 '$dir' '$w' '$w'/home '$w'/home/.aws && chmod 644 '$w'/home/.aws/credentials'
connect() {   # connect HOST PORT...: a python3 that tries each (a refusal or no route is fine)
    local host=$1
    shift
    printf "python3 -c \"import socket\nfor p in [%s]:\n    s = socket.socket(socket.AF_INET6 if ':' in '%s' else socket.AF_INET)\n    try: s.connect(('%s', p))\n    except OSError: pass\n    s.close()\"" \
        "$(IFS=,; echo "$*")" "$host" "$host"
}

attack download-exec "Downloaded file executed" \
    "$(f download.fd.name) = '$w/dl' AND $(f proc.cmdline) = 'dl' AND $(f download.proc.cmdline) LIKE 'curl -s -o $w/dl %'" \
    "curl -s -o $w/dl file:///bin/true && chmod +x $w/dl && $w/dl"
twin download-interpreted "Downloaded file executed" \
    "printf 'true\n' >$w/x.txt && curl -s -o $w/dl.sh file://$w/x.txt && sh $w/dl.sh && /bin/true"
attack drop-exec "Dropped file executed" "$(f drop.fd.name) = '$w/drop' AND $(f drop.proc.cmdline) = 'cp /bin/true $w/drop'" \
    "cp /bin/true $w/drop && $w/drop"
twin compile-and-run "Dropped file executed" \
    "printf 'int main(void){return 0;}\n' >$w/m.c && cd $w && gcc -o $w/m m.c && $w/m"
attack credential-out "Credential read then connection out" \
    "$(f read.fd.name) = '$w/home/.aws/credentials' AND $(f fd.name) = '0.0.0.0:0->10.1.2.3:443'" \
    "$creds && cat $w/home/.aws/credentials >/dev/null && $(connect 10.1.2.3 443)"
twin connection-then-credential "Credential read then connection out" \
    "$creds && $(connect 10.1.2.3 443) && cat $w/home/.aws/credentials >/dev/null && $(connect 10.1.2.3 53)"
attack reverse-shell "Reverse shell" \
    "$(f proc.name) = 'sh' AND $(f connect.fd.name) LIKE '0.0.0.0:0->127.0.0.1:%' AND $(f dup.fd.name) LIKE 'socket:[%]'" \
    "$dir/attack revshell-sh"
twin shell-on-a-file "Reverse shell" "$dir/attack listen dup-file"
guess() {   # guess N: uid 1000 is refused /etc/shadow N times, then reads a credential it may read
    printf "python3 -c \"import os\nos.setgid(1000); os.setuid(1000)\nfor i in range(%s):\n    try: open('/etc/shadow')\n    except OSError: pass\nopen('%s/home/.aws/credentials').read()\"" "$1" "$w"
}
attack credential-guessing "Credential guessing" \
    "$(f denied.fd.name) = '/etc/shadow' AND $(f fd.name) = '$w/home/.aws/credentials' AND $(f user.uid) = 1000" \
    "$creds && $(guess 12)"
twin few-refusals "Credential guessing" "$creds && $(guess 5)"
attack port-scan "Port scan" "$(f fd.name) LIKE '0.0.0.0:0->127.0.0.1:%' AND $(f proc.name) = 'python3'" \
    "$(connect 127.0.0.1 $(seq -s ' ' 41000 41029))"
twin one-port-retried "Port scan" "$(connect 127.0.0.1 $(for _ in $(seq 30); do printf '41000 '; done))"

attack metadata "Untrusted code: cloud metadata endpoint" "$(f fd.name) = '0.0.0.0:0->169.254.169.254:80'" \
    "$(connect 169.254.169.254 80)"
twin near-metadata "Untrusted code: cloud metadata endpoint" "$(connect 169.254.169.253 80)"
attack metadata-v6 "Untrusted code: cloud metadata endpoint" "$(f fd.name) LIKE '%->fd00:ec2::254:80'" \
    "$(connect fd00:ec2::254 80)"
twin near-metadata-v6 "Untrusted code: cloud metadata endpoint" "$(connect fd00:ec2::253 80)"
attack metadata-named "Untrusted code: metadata endpoint named" "$(f proc.cmdline) LIKE 'curl % http://metadata.google.internal/%'" \
    "curl -s --max-time 2 http://metadata.google.internal/computeMetadata/v1/ || true"
twin other-name "Untrusted code: metadata endpoint named" "curl -s --max-time 2 http://localhost:1/ || true"
attack kubernetes "Untrusted code: Kubernetes API or kubelet" "$(f fd.name) = '0.0.0.0:0->10.1.2.3:10250'" \
    "$(connect 10.1.2.3 10250)"
twin not-kubernetes "Untrusted code: Kubernetes API or kubelet" "$(connect 127.0.0.1 10250) && $(connect 10.1.2.3 8080)"
attack kubernetes-api "Untrusted code: Kubernetes API or kubelet" "$(f fd.name) = '0.0.0.0:0->10.1.2.3:6443'" \
    "$(connect 10.1.2.3 6443)"
attack kubernetes-service "Untrusted code: Kubernetes API or kubelet" "$(f fd.name) = '0.0.0.0:0->10.96.0.1:443'" \
    "$(connect 10.96.0.1 443)"
token=/var/run/secrets/kubernetes.io/serviceaccount
attack token "Untrusted code: service-account token or kubeconfig read" "$(f fd.name) = '$token/token'" \
    "mkdir -p $token && echo t >$token/token && echo ns >$token/namespace && cat $token/token >/dev/null"
twin token-namespace "Untrusted code: service-account token or kubeconfig read" \
    "mkdir -p $token && echo t >$token/token && echo ns >$token/namespace && cat $token/namespace >/dev/null"
attack listen "Untrusted code: listening socket" "$(f proc.name) = 'attack'" "$dir/attack listen"
twin bind-only "Untrusted code: listening socket" \
    "python3 -c \"import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('127.0.0.1', 0))\""
attack vmwrite "Untrusted code: ptrace or process memory access" "$(f evt.type) = 'process_vm_writev'" "$dir/attack vmwrite"
# An attach is the default rules' "Process attached with ptrace" (loaded first: Falco's
# `rule_matching: first`, falcosecurity/falco falco.yaml:726 at 130747499b, gives an event to
# the first rule that matches); any other request is this rule's.
attack ptrace-peek "Untrusted code: ptrace or process memory access" "$(f evt.type) = 'ptrace'" "$dir/attack peek"
attack ptrace-attach "Process attached with ptrace" "$(f proc.name) = 'attack'" "$dir/attack ptrace"
twin own-memory "Untrusted code: ptrace or process memory access" "cat /proc/self/status >/dev/null && $dir/attack forks 2"
attack escape "Untrusted code: escape primitive attempted" "$(f evt.type) IN ('perf_event_open', 'keyctl', 'kexec_load', 'open_by_handle_at', 'userfaultfd')" \
    "$dir/attack escape"
if [ "$(alerts_of "Untrusted code: escape primitive attempted")" -eq 10 ]; then ok "escape: one alert per system call (10)"; else
    fail "escape: $(alerts_of "Untrusted code: escape primitive attempted") alerts for 10 calls"; fi
twin namespaces "Untrusted code: escape primitive attempted" "$dir/attack unshare setns"
attack miner-name "Untrusted code: crypto miner" "$(f proc.name) = 'xmrig'" "cp /bin/true $w/xmrig && $w/xmrig"
attack miner-port "Untrusted code: crypto miner" "$(f fd.name) = '0.0.0.0:0->10.1.2.3:3333'" "$(connect 10.1.2.3 3333)"
twin miner-notes "Untrusted code: crypto miner" "echo xmrig >$w/notes && cat $w/notes >/dev/null && $(connect 10.1.2.3 3000)"
attack fork-storm "Untrusted code: fork storm" "$(f proc.name) = 'attack'" "$dir/attack forks 600"
twin few-forks "Untrusted code: fork storm" "$dir/attack forks 200 && sleep 5.5 && $dir/attack forks 200"
attack egress "Untrusted code: egress outside the allowed destinations" "$(f fd.name) = '0.0.0.0:0->10.1.2.4:80'" \
    "$(connect 10.1.2.4 80)"
twin dns-only "Untrusted code: egress outside the allowed destinations" "$(connect 10.1.2.4 53)"

n=$(q "SELECT count(*) FROM alerts WHERE rule = 'Dropped file loaded as code'")
[ "$n" -eq 0 ] && ok "'Dropped file loaded as code' raised nothing on runsc 2022-12 (no sentry/mmap)" ||
    fail "'Dropped file loaded as code' raised $n alerts without sentry/mmap"
# Every step of every sequence alert names a stored event of the alert's connection, in order,
# the last one the alert's own; the --alerts-out line says the same as the table.
bad=$(q "SELECT a.id FROM alerts a JOIN events e ON e.id = a.event_id, json_each(a.sequence, '\$.steps') s
         LEFT JOIN events se ON se.id = json_extract(s.value, '\$.event_id')
         WHERE a.sequence IS NOT NULL AND (se.id IS NULL OR se.conn_id != e.conn_id OR se.id > a.event_id
               OR (s.key = json_array_length(a.sequence, '\$.steps') - 1 AND se.id != a.event_id))")
steps=$(q "SELECT count(*) FROM alerts WHERE sequence IS NOT NULL")
[ -z "$bad" ] && [ "$steps" -ge 7 ] && ok "the $steps sequence alerts name each step's stored event" ||
    fail "sequence alerts whose steps are not their events: $bad ($steps alerts)"
python3 - "$alerts" "$db" <<'PY' && ok "the JSON lines are Falco's with the steps in seccheckd_sequence, as the table" || fail "JSON lines differ from the table"
import json, sqlite3, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
rows = sqlite3.connect(sys.argv[2]).execute("SELECT rule, output_fields, sequence FROM alerts ORDER BY id").fetchall()
assert len(lines) == len(rows), (len(lines), len(rows))
for a, (rule, fields, seq) in zip(lines, rows):
    assert a["rule"] == rule and a["output_fields"] == json.loads(fields), a
    assert set(a) <= {"hostname", "output", "output_fields", "priority", "rule", "source", "tags", "time",
                      "seccheckd_sequence", "seccheckd_evicted", "seccheckd_suppressed"}, a
    assert a.get("seccheckd_sequence") == (json.loads(seq) if seq else None), a
    assert list(a) == sorted(a), list(a)
PY
id=$(q "SELECT id FROM alerts WHERE rule = 'Reverse shell' LIMIT 1")
"$seccheckd" alerts show "$id" --db "$db" --color never >"$dir/show.out" 2>&1 || true
if grep -qF "Sequence of 3 steps" "$dir/show.out" && grep -qE "^  1\. connect  event [0-9]+" "$dir/show.out" &&
    grep -qE "^  2\. dup  event [0-9]+" "$dir/show.out" && grep -qE "^  3\. shell  event [0-9]+ .*\(the alert's event\)" "$dir/show.out" &&
    grep -qE "^     .* attack\[[0-9]+\] connect 127\.0\.0\.1:" "$dir/show.out" &&
    grep -qE "^     attack\[[0-9]+\] +exec " "$dir/show.out"; then
    ok "alerts show tells the reverse shell step by step, each step's event and ancestry"
else
    fail "alerts show: $(cat "$dir/show.out")"
fi
e2e_stop_daemon

# ---- 2. a flood of chains beside a quiet sandbox ----

start_daemon bounds --sequence-partials 200 --metrics-listen 127.0.0.1:0
flood="for i in \$(seq 3000); do : >$w/f\$i; done; sleep 1; cp /bin/true $w/last && $w/last"
quiet="sleep 0.5; cp /bin/true $w/quiet && sleep 2 && $w/quiet"
pids=()
for name in flood quiet; do
    (cd /tmp && exec timeout 120 env -i PATH=/usr/bin:/bin runsc --root "$root" --rootless --network=none \
        --pod-init-config="$cfg" do /bin/sh -c "mkdir -p $w; ${!name}" </dev/null >"$dir/$name.out" 2>"$dir/$name.err") &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || { cat "$dir/flood.err" "$dir/quiet.err"; fail "bounds: a sandbox failed"; }; done
for _ in $(seq 500); do [ "$(closed)" -ge 2 ] && break; sleep 0.02; done
alert_conn() {   # alert_conn FILE: the connection whose "Dropped file executed" ran FILE
    q "SELECT e.conn_id FROM alerts a JOIN events e ON e.id = a.event_id WHERE a.rule = 'Dropped file executed'
       AND $(f drop.fd.name) = '$1'"
}
quiet_conn=$(alert_conn "$w/quiet")
flood_conn=$(alert_conn "$w/last")
if [ -n "$quiet_conn" ] && [ -n "$flood_conn" ] && [ "$quiet_conn" != "$flood_conn" ]; then
    ok "bounds: the quiet sandbox's chain and the flood's newest both completed"
else
    fail "bounds: alerts: $(q "SELECT rule || ' ' || output FROM alerts")"
fi
[ "$(q "SELECT count(*) FROM alerts a JOIN events e ON e.id = a.event_id WHERE e.conn_id = '$quiet_conn' AND a.evicted > 0")" -eq 0 ] &&
    ok "bounds: the quiet sandbox lost nothing" || fail "bounds: the quiet sandbox's alerts say evictions"
ev=$(q "SELECT coalesce(sum(a.evicted), 0) FROM alerts a JOIN events e ON e.id = a.event_id WHERE e.conn_id = '$flood_conn'")
dropped=$(q "SELECT coalesce(max(sandbox_dropped), 0) FROM connections WHERE id = '$flood_conn'")
if [ "$ev" -ge 2500 ] || { [ "$dropped" -gt 0 ] && [ "$ev" -ge 1000 ]; }; then
    ok "bounds: the flood's next alert says $ev chains evicted (per (sequence, connection) 200; the sandbox dropped $dropped events)"
else
    fail "bounds: the flood's alerts say $ev evicted (dropped $dropped): $(q "SELECT rule || ' evicted=' || evicted FROM alerts a JOIN events e ON e.id = a.event_id WHERE e.conn_id = '$flood_conn'")"
fi
port=$(grep -oE "metrics: serving http://127\.0\.0\.1:[0-9]+" "$dir/daemon.log" | grep -oE "[0-9]+$" | head -1)
metrics=$(curl -s "http://127.0.0.1:$port/metrics" || true)
if grep -qE "^seccheckd_rules_sequence_evictions_total [0-9]+" <<<"$metrics" &&
    [ "$(grep -E "^seccheckd_rules_sequence_evictions_total" <<<"$metrics" | awk '{print $2}')" -ge "$ev" ]; then
    ok "bounds: the metrics count the evictions"
else
    fail "bounds: metrics: $(grep seccheckd_rules_sequence <<<"$metrics")"
fi
e2e_stop_daemon

e2e_verdict "sequences e2e"
