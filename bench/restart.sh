#!/usr/bin/env bash
# bench/restart.sh - what SIGUSR2 restarts cost the sandboxes.
# gVisor's client drops an event when its socket buffer is full, so the time
# a restart does not read is events lost: with a relay (server/relay.h) the
# longer of its two hand-overs, before it the previous image's last read to
# the new one's first. Each run starts seccheckd (SQLite, defaults), puts
# --connections gVisor-like sandboxes on it (seccheck-loadgen --mode sentry,
# redis_rw, --rate events/s each), restarts it --restarts times (SIGUSR2,
# waiting for each to complete, then --interval-ms), and reports the events
# the sandboxes dropped (loadgen's count) and each restart's reading pause
# (the daemon's "restart: reading again" log line; a build too old to log it
# shows none). With --base-bin DIR every run is repeated with DIR's
# seccheckd, interleaved, to compare two builds under the same load.
#   bench/restart.sh [--restarts 30] [--connections 4] [--rate 5000]
#                    [--interval-ms 300] [--runs 1] [--base-bin DIR]
#                    [--bin DIR] [--out DIR]
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

restarts=30 connections=4 rate=5000 interval_ms=300 runs=1 out=
while [ $# -gt 0 ]; do
    case $1 in
        --restarts) need_uint "$1" "${2:-}"; restarts=$2; shift 2 ;;
        --connections) need_uint "$1" "${2:-}"; connections=$2; shift 2 ;;
        --rate) need_uint "$1" "${2:-}"; rate=$2; shift 2 ;;
        --interval-ms) need_uint "$1" "${2:-}"; interval_ms=$2; shift 2 ;;
        --runs) need_uint "$1" "${2:-}"; runs=$2; shift 2 ;;
        --base-bin) alt_add "base=${2:?--base-bin DIR}"; shift 2 ;;
        --bin) BIN_DIR=${2:?--bin DIR}; shift 2 ;;
        --traces) TRACES_DIR=${2:?--traces DIR}; shift 2 ;;
        --out) out=${2:?--out DIR}; shift 2 ;;
        -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option $1 (try --help)" ;;
    esac
done
need_bins seccheckd seccheck-loadgen
builds=(sqlite)
if [ -n "${ALT_BIN[base]:-}" ]; then
    [ -x "${ALT_BIN[base]}/seccheckd" ] || die "${ALT_BIN[base]}/seccheckd missing"
    builds+=(sqlite@base)
fi
out=${out:-$(default_out restart)}
bench_init "$out"
out=$(cd "$out" && pwd)
machine_info >"$out/machine.txt"
echo "$0 $*" >"$out/command.txt"
sock=$BENCH_TMP/s.sock

# One run of build KIND; appends a JSON line to runs.jsonl and prints a row.
run_once() {
    local kind=$1 run=$2 name="$1-$2" lg i deadline
    recv_start "$kind" "$sock" "$out/logs/$name.log"
    "$BIN_DIR/seccheck-loadgen" --socket "$sock" --trace "$TRACES_DIR/redis_rw.trace" --connections "$connections" \
        --mode sentry --rate "$rate" --duration 3600 --json </dev/null >"$out/logs/$name.json" \
        2>"$out/logs/$name.err" &
    lg=$!
    BENCH_PIDS+=("$lg")
    deadline=$((SECONDS + 10))
    until [ "$(grep -c ' opened: ' "$RECV_LOG" || true)" -ge "$connections" ]; do
        [ $SECONDS -lt $deadline ] || die "the sandboxes did not connect (see $RECV_LOG)"
        sleep 0.02
    done
    sleep 0.5
    for i in $(seq "$restarts"); do
        kill -USR2 "$RECV_PID"
        deadline=$((SECONDS + 30))
        until [ "$(grep -c 'restart: adopted' "$RECV_LOG" || true)" -ge "$i" ]; do
            kill -0 "$RECV_PID" 2>/dev/null || die "$kind died at restart $i (see $RECV_LOG)"
            [ $SECONDS -lt $deadline ] || die "restart $i of $kind did not complete (see $RECV_LOG)"
            sleep 0.01
        done
        sleep "$(awk -v ms="$interval_ms" 'BEGIN { print ms / 1000 }')"
    done
    kill -TERM "$lg"
    wait "$lg" || die "seccheck-loadgen failed (see $out/logs/$name.err)"
    kill -TERM "$RECV_PID"
    wait "$RECV_PID" || die "$kind exited with an error (see $RECV_LOG)"
    python3 - "$out/logs/$name.json" "$RECV_LOG" "$kind" "$run" "$restarts" "$rate" "$connections" \
        >>"$out/runs.jsonl" <<'EOF'
import json, re, sys
lg_path, log_path, kind, run, restarts, rate, conns = sys.argv[1:]
lg = json.load(open(lg_path))
# With a relay, "reading again X ms after the relay's last read (the relay
# took over Y ms after the previous image's last read)": the sockets went
# unread for X, then Y; the pause is the longer. A build before the relay
# logs X only.
pauses = [max(float(x), float(y or 0)) for x, y in re.findall(
    r"restart: reading again ([0-9.]+) ms after[^\n(]*(?:\(the relay took over ([0-9.]+) ms)?",
    open(log_path).read())]
sent, dropped = lg["sent"], lg["dropped"]
print(json.dumps({"receiver": kind, "run": int(run), "restarts": int(restarts), "rate": int(rate),
                  "connections": int(conns), "sent": sent, "dropped": dropped,
                  "dropped_pct": 100.0 * dropped / (sent + dropped) if sent + dropped else 0.0,
                  "dropped_per_restart": dropped / int(restarts), "pauses_ms": pauses}))
EOF
    tail -1 "$out/runs.jsonl" | python3 -c '
import json, statistics, sys
r = json.loads(sys.stdin.read())
p = r["pauses_ms"]
pauses = "pause ms: median %.1f, max %.1f; each: %s" % (statistics.median(p), max(p), " ".join("%.1f" % x for x in p)) \
    if p else "pause: not logged by this build"
print("%-12s run %d: %d restarts, sent %d, dropped %d (%.3f%%, %.0f per restart); %s" % (
    r["receiver"], r["run"], r["restarts"], r["sent"], r["dropped"], r["dropped_pct"], r["dropped_per_restart"],
    pauses))' | tee -a "$out/summary.txt"
}

say "restart.sh: ${#builds[@]} build(s) x $runs run(s): $restarts restarts, $connections sandboxes at $rate events/s"
for run in $(seq "$runs"); do
    for kind in "${builds[@]}"; do
        run_once "$kind" "$run"
    done
done
echo "load average at end (1/5/15 min): $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
{
    echo "# Restarts: sandbox drops and reading pauses"
    echo
    echo "Command: \`$(cat "$out/command.txt")\`"
    echo
    sed 's/^/- /' "$out/machine.txt"
    echo
    echo '```'
    cat "$out/summary.txt"
    echo '```'
} >"$out/summary.md"
say "results in $out"
