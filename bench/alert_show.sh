#!/usr/bin/env bash
# bench/alert_show.sh - what `seccheckd alerts show` costs on a forged
# ancestry (issue 32 item 9): a sandbox's sentry/clone events chain 64
# processes, each naming the next as its parent, then EVENTS events of
# ordinary work (clones, execs, opens), then the chain's bottom opens
# /etc/shadow (tests/support/gvisor_packets.py forged-chain). Each build
# (this one, and each --alt) stores the trace with its own daemon
# (--rules: one alert), then its own `alerts show` tells the alert's story,
# --runs times; wall and CPU seconds, medians. Every generation of the walk
# asks for its process's exec and clone before the one it came from: the
# question is whether that costs what a real ancestry does or grows with
# the events stored in between. See bench/README.md.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    cat <<EOF
Usage: bench/alert_show.sh [OPTIONS]
  --out DIR          results directory [bench/results/<timestamp>-alert_show]
  --events N         events of ordinary work between the chain and the alert [400000]
  --runs N           alerts show runs per build [5]
  --bin DIR          built binaries [$BIN_DIR]
  --alt NAME=DIR     also measure DIR's seccheckd (e.g. the build before a change); repeatable
  --help             this text
Prints one line per build: stored events, processes told, alerts show's
wall and CPU seconds (medians); writes results.tsv and summary.txt in DIR.
EOF
}

out='' events=400000 runs=5
while [ $# -gt 0 ]; do
    case $1 in
        --help | -h) usage; exit 0 ;;
        --out) out=${2:?--out DIR}; shift 2 ;;
        --events) need_uint "$1" "${2:-}"; events=$2; shift 2 ;;
        --runs) need_uint "$1" "${2:-}"; runs=$2; shift 2 ;;
        --bin) BIN_DIR=${2:?--bin DIR}; shift 2 ;;
        --alt) alt_add "${2:?--alt NAME=DIR}"; shift 2 ;;
        *) usage >&2; die "unknown option '$1'" ;;
    esac
done
[ -x /usr/bin/time ] || die "GNU time is needed (apt-get install time)"
command -v sqlite3 >/dev/null || die "sqlite3 is needed (apt-get install sqlite3)"
need_bins seccheckd seccheck-loadgen
out=${out:-$(default_out alert_show)}
bench_init "$out"

trace=$BENCH_TMP/chain.trace
say "making the trace: a forged chain of 64, $events events, the alert"
/usr/bin/python3 "$REPO_DIR/tests/support/gvisor_packets.py" forged-chain "$trace" "$events" ||
    die "tests/support/gvisor_packets.py needs /usr/bin/python3 with python3-protobuf"
cat >"$BENCH_TMP/rules.yaml" <<'YAML'
- rule: Shadow read
  desc: /etc/shadow opened
  condition: evt.type in (open, openat) and fd.name = /etc/shadow
  output: "%proc.name read /etc/shadow"
  priority: WARNING
YAML

builds=(this)
declare -A build_dir=([this]=$BIN_DIR)
for name in "${!ALT_BIN[@]}"; do builds+=("$name"); build_dir[$name]=${ALT_BIN[$name]}; done

results=$out/results.tsv
printf 'build\trun\tevents\tprocesses\twall_s\tcpu_s\n' >"$results"
for b in "${builds[@]}"; do
    bin=${build_dir[$b]}
    db=$BENCH_TMP/$b.db sock=$BENCH_TMP/$b.sock
    "$bin/seccheckd" --socket "$sock" --db "$db" --rules "$BENCH_TMP/rules.yaml" --alerts-out none \
        "${own_names[@]}" 2>"$out/logs/$b-daemon.log" &
    pid=$!
    BENCH_PIDS+=("$pid")
    for _ in $(seq 200); do [ -S "$sock" ] && break; sleep 0.05; done
    [ -S "$sock" ] || die "$b: seccheckd did not start (log: $out/logs/$b-daemon.log)"
    "$BIN_DIR/seccheck-loadgen" --socket "$sock" --trace "$trace" --mode block >"$out/logs/$b-load.log" 2>&1 ||
        die "$b: loadgen failed (log: $out/logs/$b-load.log)"
    for _ in $(seq 600); do grep -q 'closed (eof)' "$out/logs/$b-daemon.log" && break; sleep 0.1; done
    kill -TERM "$pid"
    wait "$pid" || die "$b: seccheckd exited non-zero (log: $out/logs/$b-daemon.log)"
    stored=$(sqlite3 "$db" 'SELECT count(*) FROM events')
    say "$b: $stored events stored"
    for run in $(seq 1 "$runs"); do
        tf=$BENCH_TMP/time.txt
        /usr/bin/time -o "$tf" -f '%e %U %S' "$bin/seccheckd" alerts show --db "$db" 1 >"$BENCH_TMP/show.txt" 2>&1 ||
            die "$b: alerts show failed: $(cat "$BENCH_TMP/show.txt")"
        read -r wall user sys < <(tail -n 1 "$tf")
        procs=$(grep -c '\[10[0-9][0-9][0-9][0-9]\]' "$BENCH_TMP/show.txt" || true)
        cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$b" "$run" "$stored" "$procs" "$wall" "$cpu" >>"$results"
        say "$b run $run: ${wall}s wall, ${cpu}s CPU, $procs processes told"
    done
done

python3 - "$results" <<'PY' | tee "$out/summary.txt"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter='\t'))
print('%-8s %10s %12s %10s %10s' % ('build', 'events', 'processes', 'wall s', 'CPU s'))
for b in dict.fromkeys(r['build'] for r in rows):
    rs = [r for r in rows if r['build'] == b]
    print('%-8s %10s %12s %10.2f %10.2f' % (b, rs[0]['events'], rs[0]['processes'],
                                             statistics.median(float(r['wall_s']) for r in rs),
                                             statistics.median(float(r['cpu_s']) for r in rs)))
PY
