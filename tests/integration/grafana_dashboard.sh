#!/usr/bin/env bash
# configs/grafana/seccheckd.json against a running daemon: it is scraped with
# rules raising (and throttling) alerts, delivery to a receiver that is not
# there (failures counted), the SQLite sink, and a sandbox connection open;
# check_dashboard.py then checks that every metric every panel queries is
# in that scrape, with the labels it groups by, and that the file is a
# dashboard Grafana imports.
# Usage: grafana_dashboard.sh SOURCE_DIR BIN_DIR TRACES_DIR
set -euo pipefail
src=${1:?usage: grafana_dashboard.sh SOURCE_DIR BIN_DIR TRACES_DIR}
bin=${2:?usage: grafana_dashboard.sh SOURCE_DIR BIN_DIR TRACES_DIR}
traces=${3:?usage: grafana_dashboard.sh SOURCE_DIR BIN_DIR TRACES_DIR}

dir=$(mktemp -d /tmp/seccheckd-grafana-XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    rm -rf "$dir"
}
trap cleanup EXIT

cat >"$dir/rules.yaml" <<'YAML'
- rule: Program run
  desc: every exec
  condition: evt.type = execve and evt.dir = <
  output: "%proc.name ran (parent %proc.pname)"
  priority: NOTICE
- rule: File opened
  desc: every open (mixed_syscalls has many)
  condition: evt.type in (open, openat)
  output: "%proc.name opened %fd.name"
  priority: INFO
- rule: File read
  desc: every read
  condition: evt.type = read
  output: "%proc.name read %fd.name"
  priority: DEBUG
YAML
"$bin/seccheckd" --socket "$dir/s.sock" --db "$dir/t.db" --rules "$dir/rules.yaml" --alerts-out none \
    --alerts-url http://127.0.0.1:9/ --alerts-rate 0.001 --alerts-burst 20 --alerts-ceiling 0.001 \
    --alerts-ceiling-burst 30 --metrics-listen "unix:$dir/m.sock" >"$dir/d.log" 2>&1 &
pids+=($!)
for _ in $(seq 500); do grep -q "listening on" "$dir/d.log" && break; sleep 0.01; done
grep -q "listening on" "$dir/d.log" || { cat "$dir/d.log"; echo "FAIL: the daemon did not start"; exit 1; }

# Alerts, some held back: on the first connection the rule's limit after 20
# of its 200 execs; on the second, two rules of 20 each meet the ceiling of 30.
"$bin/seccheck-loadgen" --socket "$dir/s.sock" --trace "$traces/exec_loop.trace" >"$dir/l1.log" 2>&1
# A sandbox still connected while the scrape runs: its per-connection series.
"$bin/seccheck-loadgen" --socket "$dir/s.sock" --trace "$traces/mixed_syscalls.trace" --rate 200 --duration 20 \
    >"$dir/l2.log" 2>&1 &
pids+=($!)
for _ in $(seq 500); do grep -q "connection 2 opened" "$dir/d.log" && break; sleep 0.01; done
for _ in $(seq 200); do
    curl -sf --unix-socket "$dir/m.sock" http://localhost/metrics >"$dir/scrape.txt" || true
    grep -q '^seccheckd_alerts_suppressed_total{' "$dir/scrape.txt" &&
        grep -q '^seccheckd_alerts_over_ceiling_total{' "$dir/scrape.txt" && break
    sleep 0.05
done
python3 "$src/tests/integration/check_dashboard.py" "$src/configs/grafana/seccheckd.json" "$dir/scrape.txt"

# A daemon just started (rules, no delivery, no sandbox yet): every metric
# the dashboard plots is there already, at 0 where nothing moved (issue 32:
# five panels said "No data" until their counters moved).
"$bin/seccheckd" --socket "$dir/f.sock" --db "$dir/f.db" --rules "$dir/rules.yaml" --alerts-out none \
    --metrics-listen "unix:$dir/f-m.sock" >"$dir/f.log" 2>&1 &
pids+=($!)
for _ in $(seq 500); do grep -q "listening on" "$dir/f.log" && break; sleep 0.01; done
grep -q "listening on" "$dir/f.log" || { cat "$dir/f.log"; echo "FAIL: the fresh daemon did not start"; exit 1; }
curl -sf --unix-socket "$dir/f-m.sock" http://localhost/metrics >"$dir/fresh.txt"
echo "a fresh daemon's scrape:"
python3 "$src/tests/integration/check_dashboard.py" "$src/configs/grafana/seccheckd.json" "$dir/fresh.txt"
