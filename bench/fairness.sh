#!/usr/bin/env bash
# bench/fairness.sh - one noisy sandbox must not make a quiet one drop.
# A flood (loadgen --mode block, 4 connections, mixed_syscalls, default
# seccheckd options: SQLite, the writer queue full) beside quiet sandboxes
# (loadgen --mode sentry: gVisor's drop-on-EAGAIN sender, small redis_rw
# events, paced):
#   1. one quiet sandbox at --quiet-rate for --seconds, --runs times: its
#      drops per run, and the flood's drain rate beside it vs alone (each run
#      also runs the flood alone, interleaved, so drift hits both alike);
#   2. --many quiet sandboxes at --many-rate beside the flood: total drops,
#      pauses, and the commit latency of their events.
# Commit latency, per quiet event: batches.committed_ns of the batch that
# holds it minus, (a) its recv_ns (read from the socket, to committed), and
# (b) its scheduled send time: loadgen sends message k of a connection at
# t0 + k / rate (an absolute schedule), taking t0 = the connection's first
# event's recv_ns (so (b) leaves out that first event's own wait, ~1 ms).
#   bench/fairness.sh [--runs 5] [--seconds 5] [--quiet-rate 2000]
#                     [--many 64] [--many-rate 500] [--bin DIR] [--out DIR]
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

runs=5 seconds=5 quiet_rate=2000 many=64 many_rate=500 out=
while [ $# -gt 0 ]; do
    case $1 in
        --runs) need_uint "$1" "${2:-}"; runs=$2; shift 2 ;;
        --seconds) need_uint "$1" "${2:-}"; seconds=$2; shift 2 ;;
        --quiet-rate) need_uint "$1" "${2:-}"; quiet_rate=$2; shift 2 ;;
        --many) need_uint "$1" "${2:-}"; many=$2; shift 2 ;;
        --many-rate) need_uint "$1" "${2:-}"; many_rate=$2; shift 2 ;;
        --bin) BIN_DIR=${2:?--bin DIR}; shift 2 ;;
        --traces) TRACES_DIR=${2:?--traces DIR}; shift 2 ;;
        --out) out=${2:?--out DIR}; shift 2 ;;
        -h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option $1 (try --help)" ;;
    esac
done
need_bins seccheckd seccheck-loadgen
command -v sqlite3 >/dev/null || die "sqlite3 (the command-line shell) is needed for the latency query"
out=${out:-$(default_out fairness)}
bench_init "$out"
out=$(cd "$out" && pwd)
machine_info >"$out/machine.txt"
sock=$BENCH_TMP/s.sock
flood_seconds=$((seconds + 1))   # the flood runs around the quiet ones

# loadgen NAME ARGS...: in the background, JSON to $out/logs/NAME.json; sets LG_PID.
loadgen() {
    local name=$1
    shift
    "$BIN_DIR/seccheck-loadgen" --socket "$sock" --json "$@" </dev/null >"$out/logs/$name.json" \
        2>"$out/logs/$name.err" &
    LG_PID=$!
    BENCH_PIDS+=("$LG_PID")
}

start_flood() {   # start_flood NAME
    loadgen "$1" --trace "$TRACES_DIR/mixed_syscalls.trace" --connections 4 --mode block \
        --duration "$flood_seconds"
    FLOOD_PID=$LG_PID
    local deadline=$((SECONDS + 10))
    until [ "$(grep -c ' opened: ' "$RECV_LOG" || true)" -ge 4 ]; do
        [ $SECONDS -lt $deadline ] || die "the flood did not connect (see $RECV_LOG)"
        sleep 0.02
    done
    sleep 0.5   # the writer queue fills
}

# Queries the running daemon's database once it is drained: quiet
# connections are those opened after the flood's four.
quiet_sql() {
    local rate=$1
    sqlite3 -separator ' ' "$RECV_DB" "
        WITH q AS (SELECT id FROM connections WHERE id > (SELECT min(id) FROM connections) + 3),
        e AS (SELECT id, recv_ns,
                     recv_ns - first_value(recv_ns) OVER w AS since_first,
                     (row_number() OVER w - 1) * 1000000000 / $rate AS scheduled
              FROM events WHERE conn_id IN q WINDOW w AS (PARTITION BY conn_id ORDER BY id)),
        l AS (SELECT b.committed_ns - e.recv_ns AS read_to_commit,
                     b.committed_ns - e.recv_ns + e.since_first - e.scheduled AS send_to_commit
              FROM e JOIN batches b ON e.id BETWEEN b.first_event_id AND b.last_event_id)
        SELECT count(*), max(read_to_commit) / 1000000, max(send_to_commit) / 1000000,
               (SELECT sum(paused_count) FROM connections WHERE id IN q),
               (SELECT sum(sandbox_dropped) FROM connections WHERE id IN q),
               (SELECT sum(paused_count) FROM connections WHERE id NOT IN q),
               (SELECT max(paused_ns) / 1000000 FROM connections WHERE id IN q)
        FROM l"
}

json() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$@"; }

: >"$out/runs.txt"
for run in $(seq "$runs"); do
    say "run $run/$runs: the flood alone"
    recv_start sqlite "$sock" "$out/logs/alone-$run.log"
    start_flood "alone-$run"
    wait "$FLOOD_PID" || die "loadgen failed (logs/alone-$run.err)"
    recv_wait_drained 4
    recv_stop
    say "run $run/$runs: the flood beside one quiet sandbox at $quiet_rate/s"
    recv_start sqlite "$sock" "$out/logs/beside-$run.log"
    start_flood "flood-$run"
    loadgen "quiet-$run" --trace "$TRACES_DIR/redis_rw.trace" --connections 1 --mode sentry \
        --rate "$quiet_rate" --duration "$seconds"
    wait "$LG_PID" || die "loadgen failed (logs/quiet-$run.err)"
    wait "$FLOOD_PID" || die "loadgen failed (logs/flood-$run.err)"
    recv_wait_drained 5
    read -r _ _ _ qpaused _ fpaused _ <<<"$(quiet_sql "$quiet_rate")"
    recv_stop
    echo "$run $(json "$out/logs/quiet-$run.json" sent) $(json "$out/logs/quiet-$run.json" dropped)" \
        "$(json "$out/logs/alone-$run.json" msgs_per_s) $(json "$out/logs/flood-$run.json" msgs_per_s)" \
        "$qpaused $fpaused" >>"$out/runs.txt"
done

say "$many quiet sandboxes at $many_rate/s beside the flood"
recv_start sqlite "$sock" "$out/logs/many.log"
start_flood flood-many
loadgen many --trace "$TRACES_DIR/redis_rw.trace" --connections "$many" --mode sentry --rate "$many_rate" \
    --duration "$seconds"
wait "$LG_PID" || die "loadgen failed (logs/many.err)"
wait "$FLOOD_PID" || die "loadgen failed (logs/flood-many.err)"
recv_wait_drained $((many + 4))
quiet_sql "$many_rate" >"$out/many.txt"
recv_stop

python3 - "$out" "$quiet_rate" "$many" "$many_rate" "$seconds" <<'PY' | tee "$out/summary.md"
import json, sys
out, quiet_rate, many, many_rate, seconds = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
rows = [l.split() for l in open(f"{out}/runs.txt") if l.strip()]
print(f"| run | quiet sent | quiet drops | quiet paused | flood alone (ev/s) | flood beside quiet (ev/s) | ratio | flood paused |")
print("|---|---|---|---|---|---|---|---|")
alone = beside = 0.0
for run, sent, dropped, a, b, qp, fp in rows:
    alone += float(a); beside += float(b)
    print(f"| {run} | {int(sent):,} | {dropped} ({100 * int(dropped) / max(int(sent), 1):.2f}%) | {qp} | "
          f"{float(a):,.0f} | {float(b):,.0f} | {float(b) / float(a):.2f} | {fp} |")
print(f"\nquiet sandbox ({quiet_rate}/s, {seconds} s, sentry mode) beside the flood: drops per run "
      f"{', '.join(r[2] for r in rows)}; flood drain rate beside it / alone: {beside / alone:.2f}x "
      f"(means {beside / len(rows):,.0f} / {alone / len(rows):,.0f} events/s)")
events, read_commit, send_commit, qpaused, qdropped, fpaused, qpaused_ms = open(f"{out}/many.txt").read().split()
lg = json.load(open(f"{out}/logs/many.json"))
print(f"{many} quiet sandboxes at {many_rate}/s beside the flood: {lg['sent']:,} sent, {lg['dropped']} dropped "
      f"at the sender ({qdropped} reported), {events} stored, paused {qpaused} times (at most {qpaused_ms} ms in all "
      f"for one; the flood {fpaused}); "
      f"worst commit latency {send_commit} ms from the scheduled send ({read_commit} ms from the read)")
PY
