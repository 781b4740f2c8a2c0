#!/usr/bin/env bash
# seccheckd forward against a real PostgreSQL 15 started here: a URL with a
# password refused; a chain that does not follow the central copy refused
# (two hosts sharing an id, both ways), counted, never merged; retention
# keeping what is not shipped, and --max-db-size's forced deletion recorded
# centrally as a gap; hostile text and a newer schema's extra column
# forwarded; the metrics endpoint; a forwarder starting on a current
# central schema changes nothing (no DDL, so no lock behind other hosts);
# the progress lines (each catch-up, each --stats-interval).
# Usage: cases.sh BIN_DIR TRACES_DIR
set -uo pipefail
bin=${1:?usage: cases.sh BIN_DIR TRACES_DIR}
traces=${2:?usage: cases.sh BIN_DIR TRACES_DIR}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/pg.sh"
. "$here/lib.sh"

fleet_setup fleet-cases

# ---------------------------------------------------------------- password
for url in "postgresql://u:secret@localhost/db" "host=/tmp dbname=x password=secret"; do
    out=$("$bin/seccheckd" forward --db "$dir/none.db" --to "$url" --host-id h 2>&1)
    rc=$?
    check "forward refuses a password in '$url' (exit 2)" [ $rc = 2 ]
    check "... and says why and where the password goes" \
        bash -c "grep -q 'holds a password' <<<'$out' && grep -q pgpass <<<'$out'"
done
"$bin/seccheckd" verify --to "postgresql://u:secret@localhost/db" --host-id h >/dev/null 2>&1
check "verify --to refuses a password too (exit 2)" [ $? = 2 ]

pg_start "$dir" || exit 1

daemon() {   # daemon NAME ARGS...
    local name=$1
    shift
    rm -f "$dir/$name.sock"
    spawn "d_$name" "$bin/seccheckd" --socket "$dir/$name.sock" --db "$dir/$name.db" --batch-size 256 \
        "${own_names[@]}" "$@"
    wait_for 20 test -S "$dir/$name.sock"
}
forwarder() {   # forwarder NAME HOST ARGS...
    local name=$1 host=$2
    shift 2
    spawn "f_$name" "$bin/seccheckd" forward --db "$dir/$name.db" --to "$PG_URL" --host-id "$host" \
        --poll-ms 50 --retry-min-ms 100 --retry-max-ms 500 "$@"
}
load() {   # load NAME TRACE MESSAGES
    "$bin/seccheck-loadgen" --socket "$dir/$1.sock" --trace "$traces/$2.trace" --mode block --messages "$3" \
        >>"$dir/load.log" 2>&1
}

# ---------------------------------------------------------------- refused chains
# Host x1 owns id host-x; x2 (more batches) and x3 (fewer) claim it too.
daemon x1
load x1 exec_loop 6000
forwarder x1 host-x
check "x1 shipped" wait_for 30 caught_up "$dir/x1.db" host-x
stop "$f_x1"
before=$(psql_c "SELECT last_batch_id || ' ' || events || ' ' || encode(last_hash, 'hex') FROM hosts WHERE host_id = 'host-x'")
daemon x2
load x2 mixed_syscalls 12000
daemon x3
load x3 mixed_syscalls 600
forwarder x2 host-x --metrics-listen "unix:$dir/x2.metrics"
forwarder x3 host-x
check "x2 (ahead of the central copy) refused by prev_hash" \
    wait_for 20 grep -q "batch [0-9]* refused: its prev_hash .* does not follow the central copy" "$dir/f_x2.log"
check "x3 (behind the central copy) refused by its batch's hash" \
    wait_for 20 grep -q "batch [0-9]* refused: the central copy is ahead of this database" "$dir/f_x3.log"
check "the refusal names the host id" grep -q "another host forwards under host id 'host-x'" "$dir/f_x2.log"
check "refusals counted in the metrics" \
    wait_for 10 bash -c "[ \"\$(curl -s --unix-socket '$dir/x2.metrics' http://localhost/metrics |
        awk '/errors_total{kind=\"chain_refused\"}/ { print \$2 }')\" -ge 1 ]"
# One row per refused batch: x2's first past the central copy; x3's newest,
# which may be refused twice when its daemon commits one more batch (its
# connection's close) between two tries.
check "refusals recorded centrally: x2's batch" \
    [ "$(psql_c "SELECT count(*) FROM refusals WHERE host_id = 'host-x' AND reason LIKE 'its prev_hash %'")" = 1 ]
check "... and x3's" [ "$(psql_c "SELECT count(*) FROM refusals WHERE host_id = 'host-x'
    AND reason LIKE 'the central copy is ahead of this database%'")" -ge 1 -a \
    "$(psql_c "SELECT count(*) FROM refusals WHERE host_id = 'host-x'")" = \
    "$(psql_c "SELECT count(*) FROM refusals WHERE host_id = 'host-x' AND (reason LIKE 'its prev_hash %'
        OR reason LIKE 'the central copy is ahead of this database%')")" ]
check "nothing merged: host-x's central position and counts unchanged" \
    [ "$(psql_c "SELECT last_batch_id || ' ' || events || ' ' || encode(last_hash, 'hex') FROM hosts WHERE host_id = 'host-x'")" = "$before" ]
check "host-x's central rows are still x1's" same_rows "$dir/x1.db" host-x
check "host-x's central chain verifies" "$bin/seccheckd" verify --to "$PG_URL" --host-id host-x
stop "$f_x2"
check "forwarder x2 exits 0 on SIGTERM" [ "$stop_status" = 0 ]
stop "$f_x3"; stop "$d_x1"; stop "$d_x2"; stop "$d_x3"

# ---------------------------------------------------------------- retention
# Shipped batches age out; unshipped ones stay however old.
daemon r --retain 2s
forwarder r host-r
load r exec_loop 3000
check "r's first load shipped" wait_for 30 caught_up "$dir/r.db" host-r
stop "$f_r"
shipped=$(sqlite_c "$dir/r.db" "SELECT batch_id FROM forward_progress")
load r exec_loop 3000
newest=$(sqlite_c "$dir/r.db" "SELECT max(id) FROM batches")
check "forward_progress holds the shipped position ($shipped) below the newest batch ($newest)" \
    test "$shipped" -gt 0 -a "$newest" -gt "$shipped"
sleep 4   # past --retain: retention runs when idle
check "retention deleted the shipped batches" \
    wait_for 10 bash -c "[ \$(sqlite3 '$dir/r.db' 'SELECT min(id) FROM batches') = $((shipped + 1)) ]"
check "retention kept every unshipped batch" \
    [ "$(sqlite_c "$dir/r.db" "SELECT count(*) = max(id) - $shipped AND max(id) >= $newest FROM batches
                               WHERE id > $shipped")" = 1 ]

# --max-db-size forces it: the lost batches become a central gap.
stop "$d_r"
daemon r --retain 2s --max-db-size 1M
load r mixed_syscalls 40000
check "the daemon logs deleting unshipped batches" \
    wait_for 10 grep -q "max-db-size deleted [0-9]* batches the forwarder has not shipped" "$dir/d_r.log"
first_left=$(sqlite_c "$dir/r.db" "SELECT min(id) FROM batches")
check "unshipped batches were deleted (first left $first_left)" [ "$first_left" -gt $((shipped + 1)) ]
forwarder r host-r --metrics-listen "unix:$dir/r.metrics"
check "r caught up after the gap" wait_for 60 caught_up "$dir/r.db" host-r
gap=$(psql_c "SELECT first_batch || '..' || last_batch FROM gaps WHERE host_id = 'host-r'")
lost_to=$(psql_c "SELECT last_batch FROM gaps WHERE host_id = 'host-r'")
resumed=$(psql_c "SELECT min(id) FROM batches WHERE host_id = 'host-r' AND id > $shipped")
check "the gap is recorded centrally (batches $gap), the central chain resumes after it ($resumed)" \
    test "${gap%%..*}" = $((shipped + 1)) -a "$lost_to" -ge "$((shipped + 1))" -a "$resumed" = $((lost_to + 1))
check "the forwarder logs the gap" grep -q "were deleted locally before they were shipped" "$dir/f_r.log"
check "the gap is counted in the metrics" [ "$(metric "$dir/r.metrics" seccheckd_forward_gaps_total)" = 1 ]
check "metrics: nothing left to ship" [ "$(metric "$dir/r.metrics" seccheckd_forward_lag_batches)" = 0 ]
check "metrics: events forwarded" [ "$(metric "$dir/r.metrics" seccheckd_forward_events_total)" -gt 0 ]
out=$("$bin/seccheckd" verify --to "$PG_URL" --host-id host-r)
check "host-r's central chain verifies across the gap" [ $? = 0 ]
check "... and names the gap" grep -q "were lost on the host before they were shipped" <<<"$out"
# One statement, one snapshot: retention (--retain 2s) keeps deleting shipped batches.
IFS='|' read -r lo local_n <<<"$(sqlite_c "$dir/r.db" "SELECT min(first_event_id), (SELECT count(*) FROM events) FROM batches")"
central_n=$(psql_c "SELECT count(*) FROM events WHERE host_id = 'host-r' AND id >= $lo")
check "every event still local is central (local $local_n, central $central_n from event $lo)" [ "$central_n" = "$local_n" ]
stop "$f_r"
check "forwarder r exits 0 on SIGTERM" [ "$stop_status" = 0 ]
stop "$d_r"

# ---------------------------------------------------------------- hostile text, newer schema
daemon h
load h mixed_syscalls 2000
stop "$d_h"
# Columns outside the chain: NUL and invalid UTF-8 in text, \u0000 in JSON,
# and a column this build does not know.
sqlite_c "$dir/h.db" "UPDATE events SET process_name = X'41004280FF', cwd = 'tab	back\\slash',
    detail = '{\"p\":\"a\\u0000b\",\"q\":\"\\\\u0000\"}' WHERE id = 5;
    ALTER TABLE events ADD COLUMN newer_col INTEGER; UPDATE events SET newer_col = id * 2"
forwarder h host-h
check "host-h caught up" wait_for 30 caught_up "$dir/h.db" host-h
check "NUL and invalid UTF-8 became U+FFFD" \
    [ "$(psql_c "SELECT process_name = E'A\uFFFDB\uFFFD\uFFFD' FROM events WHERE host_id = 'host-h' AND id = 5")" = t ]
check "tab and backslash arrive as they were" \
    [ "$(psql_c "SELECT cwd = E'tab\tback\\\\slash' FROM events WHERE host_id = 'host-h' AND id = 5")" = t ]
check "JSON \\u0000 became U+FFFD, an escaped backslash stayed" \
    [ "$(psql_c "SELECT (detail->>'p') = E'a\uFFFDb' AND (detail->>'q') = E'\\\\u0000' FROM events WHERE host_id = 'host-h' AND id = 5")" = t ]
check "a column the local database gained is added and forwarded" \
    [ "$(psql_c "SELECT count(*) FILTER (WHERE newer_col = id * 2) = count(*) FROM events WHERE host_id = 'host-h'")" = t ]
check "host-h's central rows = local" same_rows "$dir/h.db" host-h
stop "$f_h"
check "forwarder h exits 0 on SIGTERM" [ "$stop_status" = 0 ]

# A value SQLite stored in a column of another type (text in an INTEGER
# column): refused with its row and column named, nothing of it shipped.
sqlite_c "$dir/h.db" ".backup '$dir/h2.db'"
sqlite_c "$dir/h2.db" "UPDATE events SET newer_col = 'abc' WHERE id = 7"
forwarder h2 host-h2
check "a value not of its column's type is named in the log" \
    wait_for 20 grep -q "events row id 7: column newer_col holds 'abc', not a value of its declared type" "$dir/f_h2.log"
check "... and nothing of its transaction was shipped" \
    [ "$(psql_c "SELECT count(*) FROM events WHERE host_id = 'host-h2' AND id <= 7")" = 0 ]
stop "$f_h2"

# ---------------------------------------------------------------- a current schema is left alone
# Its DDL would lock events ACCESS EXCLUSIVE, behind every other host's
# transaction: here one holding events for 8 s.
check "the central schema carries this build's mark" \
    [ "$(psql_c "SELECT obj_description('events_full'::regclass, 'pg_class')")" = "seccheckd central schema 7" ]
daemon s
load s exec_loop 600
spawn hold psql "$PG_URL" -X -q -c "BEGIN; LOCK TABLE events IN ROW EXCLUSIVE MODE; SELECT pg_sleep(8); COMMIT"
check "another host's transaction holds events" wait_for 5 bash -c "[ \"\$(psql \"$PG_URL\" -X -A -t -c \"SELECT count(*)
    FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'events' AND l.granted
    AND l.pid <> pg_backend_pid()\")\" -ge 1 ]"
forwarder s host-s
check "a new host's forwarder ships meanwhile: no schema change, no lock wait" wait_for 4 caught_up "$dir/s.db" host-s
check "... while that transaction still runs" kill -0 "$hold"
stop "$f_s"; stop "$d_s"; stop "$hold"

# ---------------------------------------------------------------- libpq's errors on one line
# A central error with a DETAIL line (a key the central copy already has:
# a row planted for a new host) is logged on one line, its lines joined by
# "; "; once the row is gone the forwarder ships. verify --to against a
# database without the schema: LINE 1 and its caret, one line too.
daemon e
load e exec_loop 600
psql_c "CREATE TEMP TABLE planted AS SELECT * FROM events WHERE host_id = 'host-x' AND id = 1;
        UPDATE planted SET host_id = 'host-e'; INSERT INTO events SELECT * FROM planted" >/dev/null
forwarder e host-e
check "a central error with a DETAIL line is logged on one line" wait_for 20 grep -q \
    'duplicate key value violates unique constraint.*; DETAIL:  Key (host_id, id)=(host-e, 1) already exists' \
    "$dir/f_e.log"
check "... and no line of the log is libpq's continuation" bash -c "! grep -Eq '^(DETAIL|CONTEXT|HINT|LINE [0-9])' '$dir/f_e.log'"
psql_c "DELETE FROM events WHERE host_id = 'host-e'" >/dev/null
check "... the forwarder ships once the row is gone" wait_for 30 caught_up "$dir/e.db" host-e
check "host-e's central rows = local" same_rows "$dir/e.db" host-e
stop "$f_e"; stop "$d_e"
psql_c "CREATE DATABASE noschema" >/dev/null
out=$("$bin/seccheckd" verify --to "postgresql:///noschema?host=$PG_SOCKDIR&user=$(pg_user)" --host-id h 2>&1)
rc=$?
one_line_error() {
    [ $rc = 2 ] && [ "$(wc -l <<<"$out")" = 1 ] && grep -q 'relation "gaps" does not exist; LINE 1: SELECT' <<<"$out"
}
check "verify --to without a central schema: exit 2, its error on one line" one_line_error

# ---------------------------------------------------------------- progress in the log
# One line at each catch-up (events and alerts shipped, behind by 0) and
# one every --stats-interval, idle or not, saying how far behind.
cat >"$dir/every_exec.yaml" <<'YAML'
- rule: Every exec
  desc: every exec exit
  condition: evt.type = execve and evt.dir = <
  output: "%proc.name ran"
  priority: NOTICE
YAML
daemon p --rules "$dir/every_exec.yaml" --alerts-rate 0 --alerts-out none
load p exec_loop 600
check "the daemon committed the 600 events" wait_for 10 bash -c "[ \"\$(sqlite3 '$dir/p.db' 'SELECT count(*) FROM events')\" = 600 ]"
p_alerts=$(sqlite_c "$dir/p.db" "SELECT count(*) FROM alerts")
p_events=$(sqlite_c "$dir/p.db" "SELECT count(*) FROM events")
forwarder p host-p --stats-interval 1 --metrics-listen "unix:$dir/p.metrics"
check "host-p caught up" wait_for 30 caught_up "$dir/p.db" host-p
check "the catch-up is logged with the events and alerts shipped" wait_for 5 grep -Eq \
    "forward: host host-p: caught up at batch [0-9]+: shipped [0-9]+ batches, $p_events events, $p_alerts alerts in [0-9.]+ s; behind the daemon by 0" \
    "$dir/f_p.log"
check "... with alerts among them ($p_alerts)" [ "$p_alerts" -ge 50 ]
check "an idle interval still logs a line, caught up" wait_for 5 grep -Eq \
    "forward: host host-p: shipped 0 batches, 0 events, 0 alerts in the last 1 s \\($p_events events, $p_alerts alerts in all\\); behind the daemon by 0 \\(caught up at batch [0-9]+\\)" \
    "$dir/f_p.log"
load p exec_loop 600
check "more events: a second catch-up line" wait_for 20 bash -c "[ \"\$(grep -c 'host host-p: caught up at batch' '$dir/f_p.log')\" -ge 2 ]"
check "host-p caught up again" wait_for 30 caught_up "$dir/p.db" host-p
check "seccheckd_forward_alerts_total counts every alert shipped" wait_for 5 bash -c \
    "[ \"\$(curl -s --unix-socket '$dir/p.metrics' http://localhost/metrics |
        awk '\$1 == \"seccheckd_forward_alerts_total\" { print \$2 }')\" = \"\$(sqlite3 '$dir/p.db' 'SELECT count(*) FROM alerts')\" ]"
stop "$f_p"; stop "$d_p"

if [ $failures != 0 ]; then
    for f in "$dir"/*.log; do echo "---- $f"; tail -15 "$f"; done
    echo "$failures failed"
    exit 1
fi
echo "all passed"
