#!/usr/bin/env bash
# bench/alert_peaks.sh - how many alerts honest workloads raise on one
# connection, the figures behind the default --alerts-ceiling (1,000/s after
# 10,000; docs/detection.md):
#  1. seccheckd rules test over each recorded trace (one connection each,
#     its events' own times: the workload's real pace), no ceiling, with the
#     default rules (Outbound connection on), bench/rules/usual-20.yaml and
#     500 rules of bench/rules/gen_many.py, under --rule-matching first and all;
#  2. with --runsc, the e2e workloads in real runsc sandboxes (every default
#     rule's attack as tests/e2e/default_rules_e2e.sh does it, a python loop
#     opening files for 3 s while the daemon stops 1 s, the same for 10 s,
#     redis-benchmark with loopback not allowed), the daemon's receive times.
# For each: the alerts, and the most in any 10 ms, 100 ms, 1 s and 10 s.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    cat <<EOF
Usage: bench/alert_peaks.sh [--runsc] [--out DIR] [--bin DIR]
  --runsc     part 2 too (root, runsc, gcc, python3, redis-server; ~1 min)
  --out DIR   results directory [bench/results/<timestamp>-alert-peaks]
  --bin DIR   built binaries [$BIN_DIR]
Prints one line per workload; writes summary.txt in DIR.
EOF
}

out='' runsc=
while [ $# -gt 0 ]; do
    case $1 in
        --help | -h) usage; exit 0 ;;
        --runsc) runsc=1; shift ;;
        --out) out=${2:?--out DIR}; shift 2 ;;
        --bin) BIN_DIR=${2:?--bin DIR}; shift 2 ;;
        *) usage >&2; exit 2 ;;
    esac
done
out=${out:-$(default_out alert-peaks)}
bench_init "$out"
seccheckd=$BIN_DIR/seccheckd
[ -x "$seccheckd" ] || die "no $seccheckd (build first)"
default_rules=$REPO_DIR/configs/rules/gvisor_rules.yaml

# peaks: the alerts' times in ns, one per line, on stdin -> the figures.
peaks() {
    python3 -c '
import sys
t = sorted(int(x) for x in sys.stdin if x.strip())
out = []
for w in (10**7, 10**8, 10**9, 10**10):
    best = j = 0
    for i in range(len(t)):
        while t[i] - t[j] >= w:
            j += 1
        best = max(best, i - j + 1)
    out.append(best)
print("alerts %d, most in 10 ms %d, 100 ms %d, 1 s %d, 10 s %d" % (len(t), *out))'
}

# JSON lines of `rules test` on stdin -> their output_fields' evt.time.
times_of() { python3 -c 'import json, sys
for l in sys.stdin:
    print(json.loads(l)["output_fields"]["evt.time"])'; }

printf -- '- rule: Outbound connection\n  enabled: true\n  override: {enabled: replace}\n' >"$BENCH_TMP/on.yaml"
python3 "$BENCH_DIR/rules/gen_many.py" 500 >"$BENCH_TMP/gen500.yaml"
{
    for matching in first all; do
        for trace in exec_loop mixed_syscalls redis_rw drops; do
            for set in default usual-20 gen-500; do
                case $set in
                    default) files=("$default_rules" "$BENCH_TMP/on.yaml") ;;
                    usual-20) files=("$BENCH_DIR/rules/usual-20.yaml") ;;
                    gen-500) files=("$BENCH_TMP/gen500.yaml") ;;
                esac
                "$seccheckd" rules test "${files[@]}" --trace "$TRACES_DIR/$trace.trace" --rule-matching $matching \
                    --alerts-ceiling 0 2>/dev/null | times_of | peaks | sed "s/^/$trace, $set rules, $matching: /"
            done
        done
    done
} | tee "$out/summary.txt"

[ -n "$runsc" ] || exit 0
for tool in runsc gcc python3 redis-server redis-benchmark sqlite3; do
    command -v $tool >/dev/null || die "$tool not installed"
done
dir=$BENCH_TMP/e2e
mkdir -p "$dir"
gcc -static -O2 -o "$dir/attack" "$REPO_DIR/tests/e2e/attack.c"
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
"$seccheckd" gvisor-config --rules "$default_rules" "$dir/tuning.yaml" --socket "$dir/s.sock" >"$dir/cfg.json"
"$seccheckd" --socket "$dir/s.sock" --db "$dir/e.db" --rules "$default_rules" --rules "$dir/tuning.yaml" \
    --alerts-ceiling 0 "${own_names[@]}" </dev/null 2>"$out/daemon.log" &
daemon=$!
BENCH_PIDS+=("$daemon")
for _ in $(seq 500); do grep -q "listening on" "$out/daemon.log" && break; sleep 0.01; done
sandbox() {   # sandbox NAME COMMAND
    (cd /tmp && timeout 120 env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin HOME=/root \
        runsc --rootless --network=none --pod-init-config="$dir/cfg.json" "do" /bin/sh -c "$2" \
        </dev/null >"$dir/$1.out" 2>"$dir/$1.err") || say "sandbox $1 failed (see $dir/$1.err)"
}
opens() { echo "python3 -c 'import os, time
end = time.time() + $1
while time.time() < end:
    os.close(os.open(\"/etc/hostname\", os.O_RDONLY))'"; }
sandbox attacks "
cat /etc/shadow >/dev/null
mkdir -p /root/.ssh && echo key >/root/.ssh/id_ed25519 && cat /root/.ssh/id_ed25519 >/dev/null
cp /bin/true /tmp/x && /tmp/x
cp /bin/true /usr/bin/seccheckd-e2e
echo x >/etc/seccheckd-e2e
nc -h 2>/dev/null
apt-get --version >/dev/null
chroot / /bin/true
$dir/attack shell unshare setns mount ptrace bpf module revshell setuid"
sandbox flood-stopped "$(opens 3)" &
flood=$!
sleep 1.5
kill -STOP "$daemon"; sleep 1; kill -CONT "$daemon"
wait "$flood"
sandbox flood-10s "$(opens 10)"
sandbox redis "redis-server --port 6390 --save '' --daemonize yes >/dev/null; sleep 0.5
redis-benchmark -p 6390 -q -n 20000 -t set,get >/dev/null; redis-cli -p 6390 shutdown nosave >/dev/null 2>&1 || true"
sleep 0.5
kill -TERM "$daemon"; wait "$daemon" || true
names=(attacks flood-stopped flood-10s redis)
for c in $(sqlite3 "$dir/e.db" "SELECT id FROM connections ORDER BY id"); do
    sqlite3 "$dir/e.db" "SELECT e.recv_ns FROM alerts a JOIN events e ON e.id = a.event_id WHERE e.conn_id = $c" |
        peaks | sed "s/^/e2e ${names[$((c - 1))]:-connection $c}: /"
done | tee -a "$out/summary.txt"
