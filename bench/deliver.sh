#!/usr/bin/env bash
# bench/deliver.sh - alert delivery (--alerts-url, issue 21's targets):
#  1. drain: how fast a backlog of alerts in the database (the outbox)
#     reaches a local receiver, and the CPU it costs the delivery thread and
#     the receiver per alert, to bench-http-sink (C, epoll) and to the tests'
#     Python receiver (http.server): which side limits;
#  2. live: a paced load of --live-rate events/s where every event raises
#     an alert: alerts raised and delivered per second, the largest lag
#     seen, and how long after the load the lag is 0;
#  3. --zero-drop: bench/zero_drop.sh's highest zero-drop rate of a daemon
#     with the 20 usual rules, without and with delivery to a local
#     receiver (sqlite+rules20, sqlite+rules20+deliver), every alert raised
#     (--alerts-ceiling 0), over --zero-drop-trace; --zero-drop-searches
#     searches, the ratio of each and their median.
# See bench/README.md.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    cat <<EOF
Usage: bench/deliver.sh [OPTIONS]
  --out DIR             results directory [bench/results/<timestamp>-deliver]
  --alerts N            part 1: alerts in the backlog [50000]
  --runs N              part 1: runs per receiver [3]
  --live-rate N         part 2: events (each an alert) per second, all connections [8000]
  --live-seconds S      part 2: length of the load [10]
  --zero-drop           part 3 too (several minutes a search)
  --zero-drop-trace T   part 3's trace [mixed_syscalls]
  --zero-drop-searches N  part 3's searches [3]
  --bin DIR             built binaries [$BIN_DIR]
  --traces DIR          recorded traces [$TRACES_DIR]
  --help                this text
Prints the figures and writes summary.txt in DIR.
EOF
}

out='' alerts=50000 runs=3 live_rate=8000 live_s=10 zero_drop='' zd_trace=mixed_syscalls zd_searches=3
while [ $# -gt 0 ]; do
    case $1 in
        --help | -h) usage; exit 0 ;;
        --out) out=${2:?--out DIR}; shift 2 ;;
        --alerts) need_uint "$1" "${2:-}"; alerts=$2; shift 2 ;;
        --runs) need_uint "$1" "${2:-}"; runs=$2; shift 2 ;;
        --live-rate) need_uint "$1" "${2:-}"; live_rate=$2; shift 2 ;;
        --live-seconds) need_uint "$1" "${2:-}"; live_s=$2; shift 2 ;;
        --zero-drop) zero_drop=1; shift ;;
        --zero-drop-trace) zd_trace=${2:?--zero-drop-trace NAME}; shift 2 ;;
        --zero-drop-searches) need_uint "$1" "${2:-}"; zd_searches=$2; shift 2 ;;
        --bin) BIN_DIR=${2:?--bin DIR}; shift 2 ;;
        --traces) TRACES_DIR=${2:?--traces DIR}; shift 2 ;;
        *) usage >&2; die "unknown option '$1'" ;;
    esac
done
need_bins seccheckd seccheck-loadgen bench-http-sink
command -v sqlite3 >/dev/null || die "sqlite3 is needed"
command -v curl >/dev/null || die "curl is needed (to read the metrics)"
trace=$TRACES_DIR/mixed_syscalls.trace   # 175 openat exits in 1235 events
py_receiver=$REPO_DIR/tests/integration/alert_receiver.py

out=${out:-$(default_out deliver)}
bench_init "$out"
out=$(cd "$out" && pwd)
machine_info >"$out/machine.txt"
summary=$out/summary.txt
: >"$summary"

rules=$BENCH_TMP/every-openat.yaml
cat >"$rules" <<'YAML'
- rule: Every openat
  desc: matches every openat exit, so every one raises an alert
  condition: evt.type = openat and evt.dir = <
  output: "%proc.name opened %fd.name (flags=%evt.arg.flags)"
  priority: NOTICE
  tags: [bench]
YAML
every_event=$BENCH_TMP/every-event.yaml
cat >"$every_event" <<'YAML'
- rule: Every event
  desc: matches every event (enter points too), so every one raises an alert
  condition: evt.num > 0 and evt.dir in (<, >) and gvisor.point exists
  output: "%evt.type by %proc.name"
  priority: DEBUG
YAML

metric_value() {   # metric_value SOCKET SERIES
    curl -s --unix-socket "$1" http://x/metrics 2>/dev/null | awk -v s="$2" '$1 == s { print $2 }'
}
thread_ticks() {   # CPU ticks of the delivery thread of PID
    local comm
    for comm in /proc/"$1"/task/*/comm; do
        [ "$(cat "$comm" 2>/dev/null)" = alert-delivery ] || continue
        comm=${comm%/comm}
        cpu_ticks "$1/task/${comm##*/}"
        return
    done
    echo 0
}
wait_log() {   # wait_log FILE TEXT
    for _ in $(seq 1000); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.01; done
    die "'$2' never appeared in $1"
}
start_daemon() {   # start_daemon DB LOG RULES ARGS...: sets DPID, DSOCK, MSOCK
    local db=$1 log=$2 rules_file=$3
    shift 3
    DSOCK=$BENCH_TMP/d.sock MSOCK=$BENCH_TMP/m.sock
    rm -f "$DSOCK" "$MSOCK"
    "$BIN_DIR/seccheckd" --socket "$DSOCK" --db "$db" --rules "$rules_file" --alerts-ceiling 0 --alerts-out none \
        --metrics-listen "unix:$MSOCK" "${own_names[@]}" "$@" </dev/null >"$log" 2>&1 &
    DPID=$!
    BENCH_PIDS+=("$DPID")
    wait_log "$log" "listening on"
}
stop_pid() { kill -TERM "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
start_receiver() {   # start_receiver c|python LOG: sets RPID, URL
    local port=$BENCH_TMP/recv.port
    rm -f "$port"
    case $1 in
        c) "$BIN_DIR/bench-http-sink" "$port" </dev/null >"$2" 2>&1 & ;;
        python) python3 "$py_receiver" --port-file "$port" --log "$BENCH_TMP/py.log" </dev/null >"$2" 2>&1 & ;;
    esac
    RPID=$!
    BENCH_PIDS+=("$RPID")
    for _ in $(seq 1000); do [ -s "$port" ] && break; sleep 0.01; done
    [ -s "$port" ] || die "the $1 receiver did not start (log: $2)"
    URL=http://127.0.0.1:$(cat "$port")/
}

# ---- part 1: draining a backlog ----
backlog=$BENCH_TMP/backlog.db
messages=$(((alerts * 1235 + 174) / 175 / 2))   # per connection, 2 connections
say "part 1: a backlog of about $alerts alerts ($((messages * 2)) events)"
start_daemon "$backlog" "$out/backlog-daemon.log" "$rules"
"$BIN_DIR/seccheck-loadgen" --socket "$DSOCK" --trace "$trace" --connections 2 --mode block \
    --messages "$messages" </dev/null >/dev/null 2>&1
stop_pid "$DPID"
n_alerts=$(sqlite3 "$backlog" "SELECT count(*) FROM alerts")
: >"$out/drain.jsonl"
for run in $(seq "$runs"); do
    for kind in c python; do
        db=$BENCH_TMP/drain.db
        rm -f "$db" "$db-wal" "$db-shm"
        cp "$backlog" "$db"
        start_receiver "$kind" "$out/drain-$kind-$run.receiver.log"
        sqlite3 "$db" "INSERT INTO alert_delivery VALUES('$URL', 0, 0)"   # this URL starts at the first alert
        t0=$(date +%s.%N) r0=$(cpu_ticks "$RPID")   # from before the daemon starts, which delivers at once
        start_daemon "$db" "$out/drain-$kind-$run.daemon.log" "$rules" --alerts-url "$URL"
        lag=$n_alerts
        while [ "${lag:-1}" != 0 ]; do sleep 0.02; lag=$(metric_value "$MSOCK" seccheckd_alert_delivery_lag); done
        t1=$(date +%s.%N) r1=$(cpu_ticks "$RPID") d1=$(thread_ticks "$DPID")
        delivered=$(metric_value "$MSOCK" 'seccheckd_alert_deliveries_total{result="delivered"}')
        stop_pid "$DPID"
        stop_pid "$RPID"
        python3 -c 'import json, sys; a = sys.argv[1:]; print(json.dumps({"receiver": a[0], "run": int(a[1]),
            "alerts": int(a[2]), "seconds": float(a[4]) - float(a[3]), "thread_ticks": int(a[5]),
            "receiver_ticks": int(a[6]), "clk_tck": int(a[7])}))' \
            "$kind" "$run" "$delivered" "$t0" "$t1" "$d1" $((r1 - r0)) "$CLK_TCK" >>"$out/drain.jsonl"
    done
done
python3 - "$out/drain.jsonl" <<'PY' | tee -a "$summary"
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    runs.setdefault(r["receiver"], []).append(r)
print("part 1, draining the outbox (one request per alert, one at a time, kept-alive connection; median of %d runs):"
      % len(runs["c"]))
for name, label in (("c", "bench-http-sink (C)"), ("python", "Python http.server")):
    rs = runs[name]
    rate = statistics.median(r["alerts"] / r["seconds"] for r in rs)
    thread = statistics.median(r["thread_ticks"] / r["clk_tck"] / r["alerts"] * 1e6 for r in rs)
    recv = statistics.median(r["receiver_ticks"] / r["clk_tck"] / r["alerts"] * 1e6 for r in rs)
    busy = statistics.median(r["receiver_ticks"] / r["clk_tck"] / r["seconds"] * 100 for r in rs)
    target = "  (target >= 5000/s: %s)" % ("met" if rate >= 5000 else "NOT met") if name == "c" else ""
    print("  %-20s %7.0f alerts/s [%s]  CPU per alert: delivery thread %.0f us, receiver %.0f us (receiver busy %.0f%%)%s"
          % (label, rate, ", ".join("%.0f" % (r["alerts"] / r["seconds"]) for r in rs), thread, recv, busy, target))
PY

# ---- part 2: live ----
say "part 2: $live_rate events/s for $live_s s, every event an alert"
start_receiver c "$out/live.receiver.log"
db=$BENCH_TMP/live.db
rm -f "$db" "$db-wal" "$db-shm"
start_daemon "$db" "$out/live-daemon.log" "$every_event" --alerts-url "$URL"
"$BIN_DIR/seccheck-loadgen" --socket "$DSOCK" --trace "$trace" --connections 2 --mode block \
    --rate $((live_rate / 2)) --duration "$live_s" --json </dev/null >"$out/live-loadgen.json" 2>/dev/null &
lg=$!
max_lag=0
while kill -0 "$lg" 2>/dev/null; do
    lag=$(metric_value "$MSOCK" seccheckd_alert_delivery_lag)
    [ "${lag:-0}" -gt "$max_lag" ] && max_lag=$lag
    sleep 0.1
done
wait "$lg" || die "loadgen failed"
t_end=$(date +%s.%N)
delivered_at_end=$(metric_value "$MSOCK" 'seccheckd_alert_deliveries_total{result="delivered"}')
lag_at_end=$(metric_value "$MSOCK" seccheckd_alert_delivery_lag)
sleep 0.3   # the last batch committed (--flush-ms 100)
raised=$(sqlite3 "$db" "SELECT count(*) FROM alerts")
delivered=$delivered_at_end
while [ "${delivered:-0}" -lt "$raised" ]; do
    sleep 0.02
    delivered=$(metric_value "$MSOCK" 'seccheckd_alert_deliveries_total{result="delivered"}')
done
t_caught=$(date +%s.%N)
stop_pid "$DPID"
stop_pid "$RPID"
got=$(sed -n 's/^requests \([0-9]*\).*/\1/p' "$out/live.receiver.log")
python3 - "$out/live-loadgen.json" "$raised" "$delivered_at_end" "$lag_at_end" "$max_lag" "$t_end" "$t_caught" \
    "$got" "$live_rate" <<'PY' | tee -a "$summary"
import json, sys
lg = json.load(open(sys.argv[1]))
raised, at_end, lag_end, max_lag = (int(x) for x in sys.argv[2:6])
behind = float(sys.argv[7]) - float(sys.argv[6])
secs = lg["seconds"]
print("part 2, live at %s events/s (%d sent in %.1f s): %d alerts raised (%.0f/s), %d delivered during the load "
      "(%.0f/s); largest lag seen %d alerts, %d at the end of the load, all delivered %.2f s after it (checked from 0.3 s on); the receiver counted %s"
      % (sys.argv[9], lg["sent"], secs, raised, raised / secs, at_end, at_end / secs, max_lag, lag_end, behind,
         sys.argv[8]))
PY

# ---- part 3: the zero-drop rate with and without delivery ----
if [ -n "$zero_drop" ]; then
    for i in $(seq "$zd_searches"); do
        say "part 3: search $i of $zd_searches, zero-drop rate of sqlite+rules20 without and with delivery ($zd_trace, --alerts-ceiling 0)"
        RULES_ARGS="--alerts-ceiling 0" "$BENCH_DIR/zero_drop.sh" --out "$out/zero-drop-$i" --bin "$BIN_DIR" --traces "$TRACES_DIR" \
            --receivers sqlite+rules20,sqlite+rules20+deliver --trace "$zd_trace" >/dev/null
    done
    python3 - "$out" "$zd_searches" <<'PY' | tee -a "$summary"
import json, statistics, sys
ratios, lines, waiting, alerts = [], [], 0, 0
for i in range(1, int(sys.argv[2]) + 1):
    d = "%s/zero-drop-%d" % (sys.argv[1], i)
    best = {r["receiver"]: r["best_total"] for r in map(json.loads, open(d + "/search.jsonl"))}
    base, with_delivery = best["sqlite+rules20"], best["sqlite+rules20+deliver"]
    ratios.append(with_delivery / base if base else 0)
    lines.append("%d vs %d (%.2fx)" % (with_delivery, base, ratios[-1]))
    for p in map(json.loads, open(d + "/probes.jsonl")):
        if p.get("receiver") == "sqlite+rules20+deliver":
            waiting = max(waiting, int(p.get("alerts_waiting", 0) or 0))
            alerts = max(alerts, int(p.get("alerts_received", 0) or 0))
m = statistics.median(ratios)
print("part 3, zero-drop rate with delivery vs without (events/s, all connections; sqlite+rules20+deliver vs "
      "sqlite+rules20): %s; median ratio %.2fx (target >= 0.95x: %s); alerts per probe up to %d, left undelivered "
      "at a probe's end: at most %d" % (", ".join(lines), m, "met" if m >= 0.95 else "NOT met", alerts, waiting))
PY
fi
echo "results: $out"
