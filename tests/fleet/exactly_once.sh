#!/usr/bin/env bash
# Two hosts forward to one PostgreSQL 15 started here, while everything that
# can go wrong mid-stream does: the central server restarts (immediate), one
# forwarder is killed with SIGKILL inside a central transaction and started
# again, one daemon restarts in place (SIGUSR2). At the end, per host, the
# central rows are the local rows: same batches and hashes, same events (id
# and raw), same alerts (the daemons run rules), no duplicates, and both
# chains verify.
# Usage: exactly_once.sh BIN_DIR TRACES_DIR
set -uo pipefail
bin=${1:?usage: exactly_once.sh BIN_DIR TRACES_DIR}
traces=${2:?usage: exactly_once.sh BIN_DIR TRACES_DIR}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/pg.sh"
. "$here/lib.sh"

fleet_setup fleet-once
pg_start "$dir" || exit 1

# Rules that match a part of each host's events: their alerts travel with
# their batches.
cat >"$dir/rules.yaml" <<'YAML'
- rule: Openat exit
  desc: mixed_syscalls' openat exits
  condition: evt.type = openat and evt.dir = <
  output: "%proc.name opened %fd.name"
  priority: NOTICE
  tags: [fleet]
- rule: Write enter
  desc: redis_rw's writes
  condition: evt.type = write and evt.dir = >
  output: "%proc.name wrote to fd %fd.num"
  priority: INFO
YAML
daemon() {   # daemon NAME
    spawn "d_$1" "$bin/seccheckd" --socket "$dir/$1.sock" --db "$dir/$1.db" --batch-size 512 \
        --rules "$dir/rules.yaml" --alerts-rate 0 "${own_names[@]}"
    wait_for 20 test -S "$dir/$1.sock"
}
forwarder() {   # forwarder NAME HOST: application_name tells the backends apart
    spawn "f_$1" "$bin/seccheckd" forward --db "$dir/$1.db" --to "$PG_URL&application_name=fwd-$1" \
        --host-id "$2" --poll-ms 50 --retry-min-ms 100 --retry-max-ms 1000 --txn-events 8192 --stats-interval 1
}
in_transaction() {   # a backend of forwarder NAME inside a transaction
    [ "$(psql_c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'fwd-$1'
                 AND xact_start IS NOT NULL AND pid <> pg_backend_pid()")" != 0 ]
}

# Follows the central alerts from before anything is shipped: at the end it
# printed every host's alerts once (seccheckd alerts --to --follow).
spawn follow_alerts "$bin/seccheckd" alerts --to "$PG_URL&application_name=follower" --all-hosts --follow --json
# The daemons first: a forwarder whose --db does not exist exits (it cannot
# heal by retrying; fleet.errors).
daemon a
daemon b
forwarder a host-a
forwarder b host-b
spawn load_a "$bin/seccheck-loadgen" --socket "$dir/a.sock" --trace "$traces/mixed_syscalls.trace" \
    --mode block --duration 12 --rate 6000
spawn load_b "$bin/seccheck-loadgen" --socket "$dir/b.sock" --trace "$traces/redis_rw.trace" \
    --mode block --duration 12 --rate 6000

# 1. Daemon b restarts in place, keeping its sandbox connection.
wait_for 20 grep -q "connection 1 opened" "$dir/d_b.log"
sleep 0.5
kill -USR2 "$d_b"
check "daemon b restarted in place (SIGUSR2) with its sandbox connection" \
    wait_for 20 grep -q "restart: adopted 1 connections" "$dir/d_b.log"

# 2. The central server restarts mid-stream.
shipped_some() { [ "$(psql_c "SELECT coalesce(max(last_batch_id), 0) FROM hosts WHERE host_id = '$1'")" -gt 0 ]; }
check "host a shipping before the central restart" wait_for 20 shipped_some host-a
check "host b shipping before the central restart" wait_for 20 shipped_some host-b
pg_ctl_do restart -m immediate -w -t 60 >/dev/null
check "central server back after an immediate restart" psql_c "SELECT 1"

# 3. Forwarder a is frozen inside a central transaction, seen there, and
# killed with SIGKILL; then started again.
killed=0
for _ in $(seq 1 400); do
    kill -STOP "$f_a"
    if in_transaction a; then
        kill -KILL "$f_a"
        kill -CONT "$f_a"
        wait "$f_a" 2>/dev/null
        killed=1
        break
    fi
    kill -CONT "$f_a"
    sleep 0.02
done
check "forwarder a killed (SIGKILL) inside a central transaction" [ $killed = 1 ]
forwarder a host-a

wait "$load_a"
check "load a replayed without error" [ $? = 0 ]
wait "$load_b"
check "load b replayed without error" [ $? = 0 ]
# Caught up while the daemons run; their stop (runs.stopped_ns) comes after
# the last batch and must arrive too.
check "host a caught up" wait_for 60 caught_up "$dir/a.db" host-a
check "host b caught up" wait_for 60 caught_up "$dir/b.db" host-b
sleep 0.5
stop "$d_a"
check "daemon a stopped cleanly" [ "$stop_status" = 0 ]
stop "$d_b"
check "daemon b stopped cleanly" [ "$stop_status" = 0 ]
# Runs stopped and connections closed after their last batch arrive too.
check "host a: central runs and connections = local (closes, stops, counters)" \
    wait_for 10 same_side_rows "$dir/a.db" host-a
check "host b: central runs and connections = local (closes, stops, counters)" \
    wait_for 10 same_side_rows "$dir/b.db" host-b
stop "$f_a"
check "forwarder a exits 0 on SIGTERM" [ "$stop_status" = 0 ]
stop "$f_b"
check "forwarder b exits 0 on SIGTERM" [ "$stop_status" = 0 ]

for h in a b; do
    n=$(sqlite_c "$dir/$h.db" "SELECT count(*) FROM events")
    check "host $h stored events ($n)" [ "$n" -gt 10000 ]
    check "host $h: central count = local count" \
        [ "$(psql_c "SELECT count(*) FROM events WHERE host_id = 'host-$h'")" = "$n" ]
    check "host $h: no duplicate events centrally" \
        [ "$(psql_c "SELECT count(DISTINCT raw) FILTER (WHERE true) >= 0 AND count(*) = count(DISTINCT id)
                     FROM events WHERE host_id = 'host-$h'")" = t ]
    check "host $h: central batches and events (every column) = local" same_rows "$dir/$h.db" "host-$h"
    check "host $h: hosts row counts every event, batch and alert" \
        [ "$(psql_c "SELECT events || ' ' || batches || ' ' || alerts FROM hosts WHERE host_id = 'host-$h'")" = \
          "$n $(sqlite_c "$dir/$h.db" "SELECT count(*) FROM batches") $(sqlite_c "$dir/$h.db" "SELECT count(*) FROM alerts")" ]
    check "host $h: central alerts = local alerts, each once" same_alerts "$dir/$h.db" "host-$h" 1000
    check "host $h: central alerts_full names each alert's event" \
        [ "$(psql_c "SELECT count(*) FROM alerts_full WHERE host_id = 'host-$h' AND message IS NOT NULL")" = \
          "$(sqlite_c "$dir/$h.db" "SELECT count(*) FROM alerts")" ]
    check "host $h: central chain verifies" "$bin/seccheckd" verify --to "$PG_URL" --host-id "host-$h"
    check "host $h: local chain verifies" "$bin/seccheckd" verify --db "$dir/$h.db"
done
total=$(( $(sqlite_c "$dir/a.db" "SELECT count(*) FROM alerts") + $(sqlite_c "$dir/b.db" "SELECT count(*) FROM alerts") ))
followed() { [ "$(grep -c '"rule":' "$dir/follow_alerts.log")" -ge "$total" ]; }
# Each once: as many lines as alerts (alerts of replayed traces can be
# byte-identical, so the lines themselves are not unique).
followed_once() {
    wait_for 30 followed
    local n
    n=$(grep -c '"rule":' "$dir/follow_alerts.log")
    [ "$n" = "$total" ] && return 0
    echo "     printed $n alert lines of $total; $(grep -v '"rule":' "$dir/follow_alerts.log" | head -3)"
    return 1
}
check "seccheckd alerts --to --follow printed every host's alerts ($total), each once" followed_once
stop "$follow_alerts"
check "... and exits 0 on SIGTERM" [ "$stop_status" = 0 ]
for h in a b; do   # Falco's hostname: the host's name its forwarder gave (both run here)
    check "seccheckd alerts --to --host-id host-$h: the host's alerts" \
        [ "$("$bin/seccheckd" alerts --to "$PG_URL" --host-id "host-$h" --json |
             grep -c "\"hostname\":\"$(hostname)\"")" = "$(sqlite_c "$dir/$h.db" "SELECT count(*) FROM alerts")" ]
done
check "seccheckd alerts --to --all-hosts --priority notice: a table of host a's Notice alerts" \
    [ "$("$bin/seccheckd" alerts --to "$PG_URL" --all-hosts --priority notice |
         grep -cE '  host-a +[0-9]+ +[0-9T:.-]+Z .* Notice ')" = \
      "$(sqlite_c "$dir/a.db" "SELECT count(*) FROM alerts WHERE priority = 'Notice'")" ]
check "a forwarder saw the central server go away and retried" \
    grep -q "retrying in" "$dir/f_a.log" "$dir/f_b.log"
# The last retry of each forwarder is followed by the line saying it is back.
reconnected() {
    local f
    for f in "$dir/f_a.log" "$dir/f_b.log"; do
        awk '/retrying in/ { back = 0 } /forward: connected to the central server/ { back = 1 } END { exit !back }' "$f" ||
            return 1
    done
}
check "... and logged when it was connected again" reconnected
check "host b's events span two daemon runs (SIGUSR2)" \
    [ "$(psql_c "SELECT count(*) FROM runs WHERE host_id = 'host-b'")" -ge 2 ]
check "no refusals nor gaps" [ "$(psql_c "SELECT (SELECT count(*) FROM refusals) + (SELECT count(*) FROM gaps)")" = 0 ]

if [ $failures != 0 ]; then
    for f in f_a f_b d_a d_b; do echo "---- $f.log"; tail -20 "$dir/$f.log"; done
    echo "$failures failed"
    exit 1
fi
echo "all passed"
