#!/usr/bin/env bash
# End-to-end: Falco's own rules files, loaded unchanged (issue 25's tests).
# falcosecurity/rules' falco_rules.yaml and falco-incubating_rules.yaml
# (tests/fixtures/falco_rules/, in Falco's rules_files order) run in the
# daemon with the pod-init config `seccheckd gvisor-config --rules` makes for
# them, against one real runsc 2022-12 sandbox doing what twelve of their
# rules catch: reading /etc/shadow and /proc/self/environ, netcat with -e,
# find for id_rsa, grep for AWS keys, a program run from /dev/shm, a TCP
# socket dup2'd onto stdout, a log truncated, GLIBC_TUNABLES, a setuid bit, a
# file created below /dev, ~/.bashrc written. Each alert must be exactly the
# text Falco's template gives (falco_rules_expect.py builds it from the
# rule's output and the workload's values), and no other alert is raised
# (rule_matching: first, as Falco's default).
# Then a falco_rules.local.yaml of the usual kind, loaded last over the same
# events (`seccheckd rules test --db`): a list appended to inside a macro
# (sensitive_file_names: a new alert), a known_* list appended to, a
# user_known_* macro overridden, a rule disabled, an exception added (four
# alerts gone), as in Falco.
# Usage: falco_rules_e2e.sh SECCHECKD_BINARY SOURCE_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/stop_jobs.sh"

seccheckd=${1:?usage: falco_rules_e2e.sh SECCHECKD_BINARY SOURCE_DIR}
src=${2:?usage: falco_rules_e2e.sh SECCHECKD_BINARY SOURCE_DIR}
fixtures=$src/tests/fixtures/falco_rules
expect=$src/tests/e2e/falco_rules_expect.py
for tool in runsc python3; do
    command -v $tool >/dev/null || { echo "FAIL: $tool not installed (scripts/setup.sh installs what the tests need)"; exit 1; }
done
python3 -c 'import yaml' 2>/dev/null || { echo "FAIL: python3-yaml not installed"; exit 1; }
# Falco's rules_files order: the stable file first, then incubating (the
# sandbox file would be one more --rules here).
upstream=("$fixtures/falco_rules.yaml" "$fixtures/falco-incubating_rules.yaml")

e2e_scratch falcorules

port=5555
cat >"$dir/redirect.py" <<'PY'
import os, socket, sys
srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.bind(("127.0.0.1", int(sys.argv[1])))
srv.listen(1)
c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
c.connect(("127.0.0.1", int(sys.argv[1])))
conn, _ = srv.accept()
os.dup2(c.fileno(), 1)
PY
echo "open('/root/.bashrc', 'a').close()" >"$dir/bashrc.py"
# Every command runs from runsc do's shell (its cwd /tmp): the expected
# values in falco_rules_expect.py are these commands'.
cat >"$dir/work.sh" <<SH
cat /etc/shadow >/dev/null
echo s >/etc/probe-secret; cat /etc/probe-secret >/dev/null
cp /bin/true $dir/nc && $dir/nc -e /bin/sh 127.0.0.1 9
find $dir -name id_rsa
echo x >$dir/keys; grep aws_secret_access_key $dir/keys
cp /bin/true /dev/shm/probe && /dev/shm/probe
python3 $dir/redirect.py $port
mkdir -p /var/log && echo x >/var/log/probe.log
cat /proc/self/environ >/dev/null
GLIBC_TUNABLES=glibc.malloc.check=0 /bin/true
chmod 4755 $dir/keys
touch /dev/probe
python3 $dir/bashrc.py
SH
cat >"$dir/falco_rules.local.yaml" <<'YAML'
# falco_rules.local.yaml: a Falco user's tuning, loaded after upstream's files.
- list: sensitive_file_names                  # used inside the macro sensitive_files
  items: [/etc/probe-secret]
  override: {items: append}
- list: known_binaries_to_read_environment_variables_from_proc_files
  items: [cat]
  override: {items: append}
- macro: user_known_shell_config_modifiers    # upstream's (never_true), used by Modify Shell Configuration File
  condition: (proc.name = python3)
  override: {condition: replace}
- rule: Create files below dev
  enabled: false
  override: {enabled: replace}
- rule: Read sensitive file untrusted
  exceptions:
    - name: cat_reads_shadow
      fields: [proc.name, fd.name]
      comps: [=, =]
      values:
        - [cat, /etc/shadow]
  override: {exceptions: append}
YAML

rules=()
for f in "${upstream[@]}"; do rules+=(--rules "$f"); done
sock=$dir/s.sock db=$dir/e.db alerts=$dir/alerts.jsonl
"$seccheckd" gvisor-config "${rules[@]}" "${lossless_sandbox[@]}" --socket "$sock" >"$dir/cfg.json" 2>"$dir/gvisor-config.err" ||
    { cat "$dir/gvisor-config.err"; echo "FAIL: gvisor-config --rules failed"; exit 1; }
"$seccheckd" --socket "$sock" --db "$db" "${rules[@]}" --alerts-out "$alerts" "${own_names[@]}" 2>"$dir/daemon.log" &
daemon=$!
for _ in $(seq 1000); do grep -q "info: listening on" "$dir/daemon.log" && break; sleep 0.01; done
grep -q "info: listening on" "$dir/daemon.log" || { cat "$dir/daemon.log"; echo "FAIL: seccheckd did not start"; exit 1; }

(cd /tmp && exec timeout 120 env -i PATH=/usr/bin:/bin HOME=/root \
    runsc --rootless --network=none --pod-init-config="$dir/cfg.json" do /bin/sh "$dir/work.sh" \
    </dev/null >"$dir/sandbox.out" 2>"$dir/sandbox.err") ||
    { cat "$dir/sandbox.err"; echo "FAIL: the sandbox failed"; exit 1; }

e2e_stop_daemon

failures=0
# Every stored event says its container, time and process (issue 31 item 6:
# the close exits, task exits and clones the process table needs were 77% of
# the rows, without a container or a time)
placeless=$(sqlite3 "$db" "SELECT count(*) || ' of ' || (SELECT count(*) FROM events) || ' (' ||
    coalesce(group_concat(DISTINCT type_name), '') || ')' FROM events
    WHERE container_id IS NULL OR time_ns IS NULL OR process_name IS NULL OR thread_group_id IS NULL")
case $placeless in
    "0 of "*) echo "ok   - every stored event has its container, time and process ($placeless without)" ;;
    *) echo "FAIL - stored events without a container, time or process: $placeless"; failures=$((failures + 1)) ;;
esac
e2e_no_sandbox_drops "$db" || failures=$((failures + 1))
python3 "$expect" "$fixtures" "$dir" "$port" "$alerts" upstream || failures=$((failures + 1))
"$seccheckd" rules test "${upstream[@]}" "$dir/falco_rules.local.yaml" --db "$db" >"$dir/local.jsonl" \
    2>"$dir/local.err" || { cat "$dir/local.err"; echo "FAIL: rules test with the local file"; exit 1; }
python3 "$expect" "$fixtures" "$dir" "$port" "$dir/local.jsonl" local || failures=$((failures + 1))

if [ "$failures" -ne 0 ]; then
    echo "falco rules e2e: failed; daemon log:"
    cat "$dir/daemon.log"
    exit 1
fi
echo "falco rules e2e: all checks passed"
