#!/usr/bin/env bash
# End-to-end: the fields Falco's own rules use (issue 25 items 3, 4), from
# what a real runsc 2022-12 sends, with the pod-init config `seccheckd
# gvisor-config --rules` makes for them. One sandbox: a shell with an
# environment variable runs id; python3 connects a TCP socket on loopback
# and dup2s it onto stdout (upstream "Redirect STDOUT/STDIN to Network
# Connection"), makes itself a process group leader and execs; the shell
# creates a file and sets its setuid bit (fchmodat, a raw point). Checked:
# proc.exe/pexe, proc.env[NAME], proc.sid/vpgid/is_vpgid_leader/sname,
# fd.type/l4proto/sip on the dup2, fd.connected and fd.name_changed on the
# connect, evt.arg.flags as Falco's names, evt.arg.mode of the raw chmod, and
# a rule needing evt.buffer loaded disabled with its warning.
# Usage: falco_fields_e2e.sh SECCHECKD_BINARY
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/stop_jobs.sh"

seccheckd=${1:?usage: falco_fields_e2e.sh SECCHECKD_BINARY}
for tool in runsc sqlite3 python3; do
    command -v $tool >/dev/null || { echo "FAIL: $tool not installed (scripts/setup.sh installs what the tests need)"; exit 1; }
done

e2e_scratch falcofields

cat >"$dir/rules.yaml" <<'EOF'
- rule: Exec
  desc: an exec of id or of a program python3 runs
  condition: evt.type = execve and evt.dir = < and proc.name in (id, true)
  output: 'exe=%proc.exe pexe=%proc.pexe env=%proc.env[PROBE] sid=%proc.sid sname=%proc.sname vpgid=%proc.vpgid leader=%proc.is_vpgid_leader'
  priority: Notice
- rule: Redirect
  desc: upstream's Redirect STDOUT/STDIN to Network Connection, without the container macro
  condition: evt.type in (dup, dup2, dup3) and evt.rawres in (0, 1, 2) and fd.type in ("ipv4", "ipv6")
  output: 'type=%fd.type proto=%fd.l4proto sip=%fd.sip sport=%fd.sport rawres=%evt.rawres'
  priority: Warning
- rule: Connect
  desc: a TCP connect to loopback
  condition: evt.type = connect and fd.l4proto = tcp and fd.net = 127.0.0.0/8 and fd.ip != "0.0.0.0"
  output: 'connected=%fd.connected changed=%fd.name_changed name=%fd.name'
  priority: Notice
- rule: Create
  desc: upstream's Create files below dev, under /tmp
  condition: evt.type in (open, openat) and evt.arg.flags contains O_CREAT and fd.name = /tmp/probe_file
  output: 'flags=%evt.arg.flags nameraw=%fd.nameraw'
  priority: Notice
- rule: Setuid bit
  desc: incubating's Set Setuid or Setgid bit
  condition: evt.type in (chmod, fchmod, fchmodat) and evt.arg.mode contains S_ISUID
  output: 'mode=%evt.arg.mode dirfd=%evt.arg.dirfd'
  priority: Notice
- rule: Java class download
  desc: sandbox's, on read data gVisor never sends
  condition: evt.type = read and evt.buffer bcontains cafebabe
  output: 'x'
  priority: Critical
EOF
sock=$dir/s.sock db=$dir/e.db alerts=$dir/alerts.jsonl
"$seccheckd" gvisor-config --rules "$dir/rules.yaml" "${lossless_sandbox[@]}" --socket "$sock" >"$dir/cfg.json" 2>"$dir/gvisor-config.err" ||
    { cat "$dir/gvisor-config.err"; echo "FAIL: gvisor-config --rules failed"; exit 1; }
"$seccheckd" --socket "$sock" --db "$db" --rules "$dir/rules.yaml" --alerts-out "$alerts" --alerts-rate 0 \
    "${own_names[@]}" 2>"$dir/daemon.log" &
daemon=$!
for _ in $(seq 500); do grep -q "info: listening on" "$dir/daemon.log" && break; sleep 0.01; done
grep -q "info: listening on" "$dir/daemon.log" || { cat "$dir/daemon.log"; echo "FAIL: seccheckd did not start"; exit 1; }

cat >"$dir/work.py" <<'PY'
import os, socket
srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.bind(("127.0.0.1", 0))
srv.listen(1)
port = srv.getsockname()[1]
c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
c.connect(("127.0.0.1", port))
conn, _ = srv.accept()
os.dup2(c.fileno(), 1)
os.setpgid(0, 0)
os.execv("/bin/true", ["true"])
PY
(cd /tmp && exec timeout 120 env -i PATH=/usr/bin:/bin HOME=/root \
    runsc --rootless --network=none --pod-init-config="$dir/cfg.json" do /bin/sh -c \
    "PROBE=hello-probe id >/dev/null && PROBE=py /usr/bin/python3 $dir/work.py && echo x > /tmp/probe_file &&
     chmod 4755 /tmp/probe_file" </dev/null >"$dir/sandbox.out" 2>"$dir/sandbox.err") ||
    { cat "$dir/sandbox.err"; echo "FAIL: the sandbox failed"; exit 1; }

failures=0
fail() { echo "FAIL - $*"; failures=$((failures + 1)); }
ok() { echo "ok   - $*"; }

e2e_stop_daemon

check() {   # check DESCRIPTION EXPECTED SQL
    local got
    got=$(sqlite3 "$db" "$3")
    if [ "$got" = "$2" ]; then ok "$1"; else fail "$1: expected '$2', got '$got'"; fi
}
field() { echo "json_extract(output_fields, '\$.\"$1\"')"; }
check "id: argv[0], the shell's, the environment variable, the init's session and group" \
    "id|/bin/sh|hello-probe|1|sh|1|0" \
    "SELECT $(field proc.exe), $(field proc.pexe), $(field 'proc.env[PROBE]'), $(field proc.sid), $(field proc.sname),
            $(field proc.vpgid), $(field proc.is_vpgid_leader) FROM alerts WHERE rule = 'Exec' AND
            $(field proc.exe) = 'id'"
check "true: exec'd by python3 after setpgid(0, 0): its own group, leader; the session still the init's" \
    "true|1|1" \
    "SELECT $(field proc.exe), $(field proc.is_vpgid_leader), $(field proc.sid) FROM alerts
     WHERE rule = 'Exec' AND $(field proc.exe) = 'true' AND $(field proc.vpgid) != 1"
check "dup2 of the connected socket onto stdout: ipv4, tcp, the server it connected to" "ipv4|tcp|127.0.0.1|1" \
    "SELECT $(field fd.type), $(field fd.l4proto), $(field fd.sip), $(field evt.rawres) FROM alerts
     WHERE rule = 'Redirect'"
check "connect: connected, named" "1|1" \
    "SELECT $(field fd.connected), $(field fd.name_changed) FROM alerts WHERE rule = 'Connect'"
check "the file's open: Falco's flag names" "O_TRUNC|O_CREAT|O_WRONLY|/tmp/probe_file" \
    "SELECT $(field evt.arg.flags), $(field fd.nameraw) FROM alerts WHERE rule = 'Create'"
check "chmod 4755 (fchmodat, a raw point): the mode by name, AT_FDCWD" \
    "S_IXOTH|S_IROTH|S_IXGRP|S_IRGRP|S_IXUSR|S_IWUSR|S_IRUSR|S_ISUID|AT_FDCWD" \
    "SELECT $(field evt.arg.mode), $(field evt.arg.dirfd) FROM alerts WHERE rule = 'Setuid bit'"
check "the evt.buffer rule raised nothing" 0 "SELECT count(*) FROM alerts WHERE rule = 'Java class download'"
grep -q "rule 'Java class download' is disabled: its condition needs fields gVisor never reports: evt.buffer" \
    "$dir/daemon.log" && ok "the evt.buffer rule: disabled, one warning" || fail "no warning for the evt.buffer rule"
grep -q "rule 'Java class download' is disabled" "$dir/gvisor-config.err" &&
    ! grep -q '"syscall/read/exit"' "$dir/cfg.json" && ok "gvisor-config enables nothing for it" ||
    fail "gvisor-config: $(cat "$dir/gvisor-config.err")"

e2e_verdict "falco fields e2e"
