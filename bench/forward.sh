#!/usr/bin/env bash
# bench/forward.sh - seccheckd forward's throughput into a local PostgreSQL,
# and what running it costs the daemon's zero-drop rate.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
. "$repo/tests/fleet/pg.sh"
. "$repo/tests/fleet/lib.sh"

usage() {
    cat <<'USAGE'
Usage: bench/forward.sh [OPTIONS]
1. Throughput: fills a daemon's database with --events events of --trace
   (loadgen block mode), then times `seccheckd forward` shipping all of it into
   a fresh local PostgreSQL (fsync on, Unix socket): forwarded events/s.
2. With --zero-drop: the highest paced loadgen rate (sentry mode, --conns
   connections, probes of --probe-seconds) the daemon takes with zero drops,
   alone and with its forwarder running beside it; prints the ratio.

  --events N           events to forward [300000]
  --trace NAME         trace in the traces directory [mixed_syscalls]
  --txn-events N       forward --txn-events [65536]
  --repeat N           part 1: forward the same database N times, each into
                       emptied central tables (a range, not one figure) [1]
  --zero-drop          also run part 2 (a few minutes)
  --conns N            part 2: loadgen connections [4]
  --probe-seconds S    part 2: length of each probe [2]
  --zero-drop-runs N   part 2: searches, each giving a ratio [1]
  --max-probes N       part 2: probes per receiver and search at most [40]
  --out DIR            part 2: search N's files go to DIR-N
                       [bench/results/<timestamp>-forward-zero-drop]
  --central-nice N     part 2: the central server's CPU priority, nice 0-19 or
                       idle (SCHED_IDLE) [0]. A fleet's central server runs on
                       another machine; here it shares the 2 cores. Lower
                       priorities did not help the daemon: at idle the server
                       held up the forwarder's transaction, and its snapshot,
                       while it waited for a CPU
  --bin DIR            built binaries [build/bin]
  --traces DIR         recorded traces [tests/fixtures/traces]
  --help               this text
USAGE
}

events=300000 trace=mixed_syscalls txn=65536 zero=0 conns=4 probe_s=2 repeat=1 zd_runs=1 central_nice=0
max_probes=40 results=
bin=$repo/build/bin traces=$repo/tests/fixtures/traces
while [ $# -gt 0 ]; do
    case $1 in
        --help | -h) usage; exit 0 ;;
        --events) events=${2:?}; shift 2 ;;
        --trace) trace=${2:?}; shift 2 ;;
        --txn-events) txn=${2:?}; shift 2 ;;
        --repeat) repeat=${2:?}; shift 2 ;;
        --zero-drop) zero=1; shift ;;
        --conns) conns=${2:?}; shift 2 ;;
        --probe-seconds) probe_s=${2:?}; shift 2 ;;
        --zero-drop-runs) zd_runs=${2:?}; shift 2 ;;
        --central-nice) central_nice=${2:?}; shift 2 ;;
        --max-probes) max_probes=${2:?}; shift 2 ;;
        --out) results=${2:?}; shift 2 ;;
        --bin) bin=${2:?}; shift 2 ;;
        --traces) traces=${2:?}; shift 2 ;;
        *) echo "bench/forward.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
    esac
done
[[ $central_nice = idle || ($central_nice =~ ^[0-9]+$ && $central_nice -le 19) ]] ||
    { echo "bench/forward.sh: --central-nice: expected 0 to 19 or idle, got '$central_nice'" >&2; exit 2; }
for v in "$events" "$txn" "$conns" "$repeat" "$zd_runs" "$max_probes"; do
    [[ $v =~ ^[0-9]+$ && $v -gt 0 ]] || { echo "bench/forward.sh: expected a positive integer, got '$v'" >&2; exit 2; }
done

fleet_setup bench-forward
# Part 1 measures forwarding alone: the server at the normal priority.
PG_FSYNC=on PG_SHARED_BUFFERS=128MB PG_NICE=0 pg_start "$dir" || exit 1

now() { date +%s.%N; }

# ---------------------------------------------------------------- 1. throughput
spawn d "$bin/seccheckd" --socket "$dir/s.sock" --db "$dir/t.db" "${own_names[@]}"
wait_for 20 test -S "$dir/s.sock"
"$bin/seccheck-loadgen" --socket "$dir/s.sock" --trace "$traces/$trace.trace" --mode block \
    --messages "$events" >"$dir/fill.log" 2>&1 || { cat "$dir/fill.log"; exit 1; }
stop "$d"
stored=$(sqlite3 "$dir/t.db" "SELECT count(*) FROM events")
bytes=$(stat -c %s "$dir/t.db")
# CPU seconds a process has used (user + system), and its children's.
cpu_s() { awk -v t="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%.2f", ($12 + $13) / t }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# The whole server's CPU: the postmaster, its live children, the ones it reaped.
pg_cpu_s() {
    local pm p total
    pm=$(head -1 "$PG_DIR/data/postmaster.pid")
    total=$(awk -v t="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%.2f", ($12 + $13 + $14 + $15) / t }' "/proc/$pm/stat")
    for p in $(pgrep -P "$pm"); do total=$(awk -v a="$total" -v b="$(cpu_s "$p")" 'BEGIN { printf "%.2f", a + b }'); done
    echo "$total"
}
per_m() { awk -v s="$1" -v n="$stored" 'BEGIN { printf "%.1f", s * 1e6 / n }'; }

for run in $(seq "$repeat"); do
    psql_c "SET client_min_messages = warning; DROP TABLE IF EXISTS events, batches, runs, connections, hosts, gaps, refusals CASCADE" >/dev/null
    psql_c "CHECKPOINT" >/dev/null
    load=$(cut -d' ' -f1 /proc/loadavg)
    pg0=$(pg_cpu_s)
    t0=$(now)
    spawn f "$bin/seccheckd" forward --db "$dir/t.db" --to "$PG_URL" --host-id bench --txn-events "$txn" --poll-ms 20
    wait_for 600 caught_up "$dir/t.db" bench || { echo "forwarder did not catch up"; tail "$dir/f.log"; exit 1; }
    t1=$(now)
    fcpu=$(cpu_s "$f")
    bpid=$(psql_c "SELECT pid FROM pg_stat_activity WHERE application_name = 'seccheckd-forward'")
    bcpu=$(cpu_s "${bpid:-0}")
    pg1=$(pg_cpu_s)
    stop "$f"
    central=$(psql_c "SELECT count(*) FROM events WHERE host_id = 'bench'")
    [ "$central" = "$stored" ] || { echo "central has $central events, local $stored"; exit 1; }
    rate=$(awk -v n="$stored" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }')
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
    pgall=$(awk -v a="$pg0" -v b="$pg1" 'BEGIN { printf "%.2f", b - a }')
    echo "forward throughput: $stored events ($trace, local db $((bytes >> 20)) MiB) in $secs s = $rate events/s" \
         "(txn-events $txn, PostgreSQL 15 local, fsync on, shared_buffers 128MB, $(nproc) CPUs, load $load)"
    echo "  CPU s per million events: forwarder $(per_m "$fcpu"), its PostgreSQL backend $(per_m "$bcpu")," \
         "whole server $(per_m "$pgall")"
done

[ $zero = 1 ] || exit 0

# ---------------------------------------------------------------- 2. zero-drop rate, alone and with the forwarder
# bench/zero_drop.sh's search (interleaved probes, each rate confirmed), the
# daemon alone (sqlite) and with its forwarder beside it (sqlite+forward),
# the central server restarted at --central-nice.
if [ "$central_nice" != 0 ]; then
    PG_NICE=$central_nice pg_ctl_do restart -w -t 60 -l "$PG_DIR/server.log" >/dev/null ||
        { echo "bench/forward.sh: the central server did not restart" >&2; exit 1; }
fi
ratios=()
results=${results:-$repo/bench/results/$(date +%Y%m%d-%H%M%S)-forward-zero-drop}
fwd_nice=${FORWARD_NICE:-$(sed -n 's/^Nice=//p' "$repo/systemd/seccheckd-forward.service")}
for run in $(seq "$zd_runs"); do
    zd_out=$results-$run
    BENCH_PG_URL=$PG_URL "$here/zero_drop.sh" --receivers sqlite,sqlite+forward --trace "$trace" --conns "$conns" \
        --probe-seconds "$probe_s" --max-probes "$max_probes" --bin "$bin" --traces "$traces" --out "$zd_out" \
        >"$dir/zero-drop-$run.log" 2>&1 ||
        { tail -20 "$dir/zero-drop-$run.log"; exit 1; }
    read -r alone with < <(python3 -c '
import json, sys
best = {json.loads(l)["receiver"]: json.loads(l)["best_total"] for l in open(sys.argv[1])}
print(best.get("sqlite", 0), best.get("sqlite+forward", 0))' "$zd_out/search.jsonl")
    ratio=$(awk -v a="$alone" -v w="$with" 'BEGIN { printf "%.2f", a ? w / a : 0 }')
    ratios+=("$ratio")
    echo "zero-drop rate ($trace, sentry mode, $conns connections, ${probe_s}s probes, load $(cut -d' ' -f1 /proc/loadavg)):" \
         "alone $alone msgs/s, with forward running $with msgs/s: ${ratio}x" \
         "(forwarder at nice ${fwd_nice:-0}, central server at nice $central_nice; probes in $zd_out)"
done
[ "$zd_runs" -gt 1 ] && echo "zero-drop ratios: ${ratios[*]}; median $(printf '%s\n' "${ratios[@]}" | sort -n |
    awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')x"
exit 0
