#!/usr/bin/env bash
# A reader of the central copy (seccheckd alerts --to --follow, a psql) is
# never made to wait on the locks a forwarder's schema DDL takes, and never
# deadlocks with it: fleet.exactly_once's follower got "ERROR: deadlock
# detected" and printed 0 of 36,130 alerts. The DDL (ALTER TABLE ... ADD
# COLUMN IF NOT EXISTS, DROP/CREATE VIEW: ACCESS EXCLUSIVE, even when it
# changes nothing) ran in a forwarder that had found the schema not current,
# then waited on the schema lock while another forwarder made it current;
# holding hosts, it waited for the alerts table a reader's statement held,
# which then waited for hosts.
#  1. A forwarder that finds the schema current once it holds the schema
#     lock takes no table lock: it ships while a reader holds alerts.
#  2. A forwarder that must change the schema gives way to readers (a lock
#     wait of 200 ms at most, then it lets go of everything and tries
#     again): a reader holding alerts and then reading hosts completes
#     without "deadlock detected", and the forwarder ships after it.
#  3. alerts --to --follow reads again after a transient refusal (a lock
#     not available, a deadlock's victim) instead of exiting: it prints
#     every alert once.
# Usage: schema_locks.sh BIN_DIR TRACES_DIR
set -uo pipefail
bin=${1:?usage: schema_locks.sh BIN_DIR TRACES_DIR}
traces=${2:?usage: schema_locks.sh BIN_DIR TRACES_DIR}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/pg.sh"
. "$here/lib.sh"

fleet_setup fleet-locks
pg_start "$dir" || exit 1
# The checks' own queries never wait long for a lock: one the DDL holds
# would otherwise hold up the check that looks for it.
psql_c() { PGOPTIONS="-c lock_timeout=2000" psql "$PG_URL" -v ON_ERROR_STOP=1 -X -q -A -t -c "$1"; }

# A host database with events and alerts; two copies for two more hosts.
cat >"$dir/rules.yaml" <<'YAML'
- rule: Openat exit
  desc: mixed_syscalls' openat exits
  condition: evt.type = openat and evt.dir = <
  output: "%proc.name opened %fd.name"
  priority: NOTICE
YAML
spawn d "$bin/seccheckd" --socket "$dir/d.sock" --db "$dir/a.db" --rules "$dir/rules.yaml" --alerts-rate 0 \
    "${own_names[@]}"
wait_for 20 test -S "$dir/d.sock"
"$bin/seccheck-loadgen" --socket "$dir/d.sock" --trace "$traces/mixed_syscalls.trace" --mode block >>"$dir/load.log" 2>&1
wait_for 20 [ "$(sqlite_c "$dir/a.db" "SELECT count(*) FROM alerts")" -gt 0 ]
stop "$d"
cp "$dir/a.db" "$dir/b.db"
cp "$dir/a.db" "$dir/c.db"
forwarder() {   # forwarder NAME: host-NAME from NAME.db, application_name fwd-NAME
    spawn "f_$1" "$bin/seccheckd" forward --db "$dir/$1.db" --to "$PG_URL&application_name=fwd-$1" \
        --host-id "host-$1" --poll-ms 50 --retry-min-ms 100 --retry-max-ms 500
}
backend_waits() {   # backend_waits APP: a backend of APP waits for a lock
    [ "$(psql_c "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
                 WHERE a.application_name = '$1' AND NOT l.granted")" != 0 ]
}
holds() {   # holds APP LOCKTYPE: a backend of APP holds such a lock
    [ "$(psql_c "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
                 WHERE a.application_name = '$1' AND l.locktype = '$2' AND l.granted")" != 0 ]
}
ended() { ! kill -0 "$1" 2>/dev/null; }

forwarder a
check "host a shipped: the central schema is made" wait_for 60 caught_up "$dir/a.db" host-a
stop "$f_a"
mark=$(psql_c "SELECT obj_description('events_full'::regclass, 'pg_class')")
check "the views carry this build's schema mark ($mark)" [ -n "$mark" ]

# 1. Forwarder b finds the schema old, waits for the schema lock; meanwhile
# the schema becomes current and a reader opens alerts (and keeps it open
# until it is ended here: the forwarder must ship before).
psql_c "COMMENT ON VIEW events_full IS 'an older build''s schema'"
spawn holder psql "$PG_URL&application_name=holder" -X -q -c "SELECT pg_advisory_lock(7061746), pg_sleep(600)"
check "the schema lock is held" wait_for 10 holds holder advisory
forwarder b
check "forwarder b waits for the schema lock" wait_for 20 backend_waits fwd-b
psql_c "COMMENT ON VIEW events_full IS '$mark'"
spawn reader psql "$PG_URL&application_name=reader" -X -q -v ON_ERROR_STOP=1 \
    -c "BEGIN" -c "SELECT count(*) FROM alerts" -c "SELECT pg_sleep(600)" -c "COMMIT"
check "a reader holds the alerts table" wait_for 10 holds reader relation
psql_c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'holder'" >/dev/null
check "forwarder b ships while the reader holds alerts (no DDL on a current schema)" \
    wait_for 20 caught_up "$dir/b.db" host-b
b_free() { ! backend_waits fwd-b; }
check "forwarder b's backend waits for no lock" b_free
psql_c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'reader'" >/dev/null
stop "$f_b"

# 2. The schema is old for real: forwarder c must change it while a reader
# holds alerts, then reads hosts in the same transaction.
psql_c "COMMENT ON VIEW events_full IS 'an older build''s schema'"
psql "$PG_URL&application_name=reader2" -X -q -v ON_ERROR_STOP=1 -c "BEGIN" -c "SELECT count(*) FROM alerts" \
    -c "SELECT pg_sleep(3)" -c "SELECT count(*) FROM hosts" -c "COMMIT" >"$dir/reader2.log" 2>&1 &
reader2=$!
spawned+=("$reader2")
wait_for 10 holds reader2 relation
forwarder c
wait "$reader2"
reader2_status=$?
check "the reader's transaction completes without an error (exit $reader2_status)" [ "$reader2_status" = 0 ]
check "... no deadlock reported to the reader" bash -c "! grep -i deadlock '$dir/reader2.log'"
check "forwarder c made the schema current and shipped after the reader" wait_for 30 caught_up "$dir/c.db" host-c
check "... its schema mark is this build's" [ "$(psql_c "SELECT obj_description('events_full'::regclass, 'pg_class')")" = "$mark" ]
check "... no deadlock in the forwarder's log" bash -c "! grep -i deadlock '$dir/f_c.log'"
stop "$f_c"
check "forwarder c exits 0" [ "$stop_status" = 0 ]

# 3. The follower's first reads are refused (another session holds alerts
# ACCESS EXCLUSIVE for 3 s; the follower waits 100 ms for a lock).
total=$(psql_c "SELECT count(*) FROM alerts")
spawn locker psql "$PG_URL&application_name=locker" -X -q -c "BEGIN" -c "LOCK TABLE alerts IN ACCESS EXCLUSIVE MODE" \
    -c "SELECT pg_sleep(3)" -c "COMMIT"
wait_for 10 holds locker relation
PGOPTIONS="-c lock_timeout=100" spawn follow "$bin/seccheckd" alerts --to "$PG_URL&application_name=follower" \
    --all-hosts --since 1d --follow --json
printed() { [ "$(grep -c '"rule":' "$dir/follow.log")" -ge "$total" ]; }
check "alerts --follow was refused a read and read again" \
    wait_for 20 grep -q "lock timeout.*; reading again" "$dir/follow.log"
check "... then printed every alert ($total)" wait_for 30 printed
sleep 1
check "... each once" [ "$(grep -c '"rule":' "$dir/follow.log")" = "$total" ]
check "... and follows on" kill -0 "$follow"
check "no deadlock in the server's log" bash -c "! grep -i 'deadlock detected' '$PG_DIR/server.log'"

if [ $failures != 0 ]; then
    for f in f_b.log f_c.log reader2.log; do echo "---- $f"; tail -15 "$dir/$f"; done
    echo "---- follow.log"
    grep -v '"rule":' "$dir/follow.log" | tail -5
    echo "---- server.log"
    grep -i -A3 "deadlock detected" "$PG_DIR/server.log" | cut -c1-300 | tail -12
    echo "$failures failed"
    exit 1
fi
echo "all passed"
