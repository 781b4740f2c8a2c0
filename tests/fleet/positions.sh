#!/usr/bin/env bash
# The central position changes under a running forwarder, and retention
# against two forward targets, with a real PostgreSQL 15 started here.
#
# Issue 19 item 20: a forwarder must read where the central copy ends at
# every transaction, never keep the position of its last ship. So, while
# one runs: the central copy is rolled back (a restore from an older
# backup: the host's last batches, their events and its hosts row go back)
# and it must ship them again; then a second forwarder with the same host
# id (a copy of the database that went on differently) moves the central
# copy ahead, and the first must refuse its next batches (logged, counted,
# recorded), never merge them nor fail on the rows the other shipped.
#
# Issue 19 item 23: one database forwarded to two central databases, the
# second forwarder stopped, retention due (--retain): the batches the
# lagging target has not shipped stay (retention goes by the smallest
# position in forward_progress), and it catches up without a gap.
# Usage: positions.sh BIN_DIR TRACES_DIR
set -uo pipefail
bin=${1:?usage: positions.sh BIN_DIR TRACES_DIR}
traces=${2:?usage: positions.sh BIN_DIR TRACES_DIR}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/pg.sh"
. "$here/lib.sh"

fleet_setup fleet-positions
pg_start "$dir" || exit 1

daemon() {   # daemon NAME ARGS...
    local name=$1
    shift
    spawn "d_$name" "$bin/seccheckd" --socket "$dir/$name.sock" --db "$dir/$name.db" --batch-size 256 \
        "${own_names[@]}" "$@"
    wait_for 20 test -S "$dir/$name.sock"
}
forwarder() {   # forwarder NAME DB URL HOST ARGS...
    local name=$1 db=$2 url=$3 host=$4
    shift 4
    spawn "f_$name" "$bin/seccheckd" forward --db "$dir/$db.db" --to "$url" --host-id "$host" \
        --poll-ms 50 --retry-min-ms 100 --retry-max-ms 500 "$@"
}
load() {   # load NAME TRACE MESSAGES: sent, and committed
    local before
    before=$(sqlite_c "$dir/$1.db" "SELECT count(*) FROM events")
    "$bin/seccheck-loadgen" --socket "$dir/$1.sock" --trace "$traces/$2.trace" --mode block --messages "$3" \
        >>"$dir/load.log" 2>&1 &&
        wait_for 10 bash -c "[ \$(sqlite3 '$dir/$1.db' 'SELECT count(*) FROM events') = $((before + $3)) ]"
}
central_last() { psql_c "SELECT last_batch_id FROM hosts WHERE host_id = '$1'"; }
caught_up2() { local PG_URL=$url2; caught_up "$@"; }   # on the second central database

# ---------------------------------------------------------------- rolled back under it
daemon p
forwarder p p "$PG_URL" host-p --metrics-listen "unix:$dir/p.metrics"
check "p: loaded" load p exec_loop 3000
check "p: shipped" wait_for 30 caught_up "$dir/p.db" host-p
n=$(central_last host-p)
m=$((n - 3))
# A restore from an older backup: batches after m gone, with their events
# and the hosts row's position and counts.
psql_c "BEGIN;
  DELETE FROM events WHERE host_id = 'host-p'
    AND id > (SELECT last_event_id FROM batches WHERE host_id = 'host-p' AND id = $m);
  DELETE FROM batches WHERE host_id = 'host-p' AND id > $m;
  UPDATE hosts SET last_batch_id = $m,
    last_hash = (SELECT hash FROM batches WHERE host_id = 'host-p' AND id = $m),
    batches = $m, events = (SELECT count(*) FROM events WHERE host_id = 'host-p') WHERE host_id = 'host-p';
  COMMIT" >/dev/null
check "the running forwarder ships batches $((m + 1))..$n again (rolled back from $n to $m)" \
    wait_for 20 bash -c "[ \"\$(curl -s --unix-socket '$dir/p.metrics' http://localhost/metrics |
        awk '\$1 == \"seccheckd_forward_batches_total\" { print \$2 }')\" = $((n + n - m)) ]"
check "... up to the end" wait_for 20 caught_up "$dir/p.db" host-p
check "... the central rows are the local ones again" same_rows "$dir/p.db" host-p
check "... the hosts row counts them once" \
    [ "$(psql_c "SELECT events || ' ' || batches FROM hosts WHERE host_id = 'host-p'")" = \
      "$(sqlite_c "$dir/p.db" "SELECT count(*) FROM events") $n" ]
check "... and nothing was refused" [ "$(psql_c "SELECT count(*) FROM refusals")" = 0 ]

# ---------------------------------------------------------------- another forwarder, same host id
# q: a copy of p's database that goes on differently, shipped as host-p too.
sqlite_c "$dir/p.db" ".backup '$dir/q.db'"
daemon q
check "q: loaded (its own batches after $n)" load q mixed_syscalls 2000
forwarder q q "$PG_URL" host-p
check "q's batches extend the central copy of host-p" wait_for 30 caught_up "$dir/q.db" host-p
stop "$f_q"
ahead=$(central_last host-p)
check "p: loaded (other batches after $n)" load p exec_loop 1500
check "the running forwarder p refuses its next batches: logged" \
    wait_for 20 grep -q "host host-p: batch [0-9]* refused: .*another host forwards under host id 'host-p'" \
    "$dir/f_p.log"
check "... counted" \
    wait_for 10 bash -c "[ \"\$(curl -s --unix-socket '$dir/p.metrics' http://localhost/metrics |
        awk '\$1 == \"seccheckd_forward_errors_total{kind=\\\"chain_refused\\\"}\" { print \$2 }')\" -ge 1 ]"
check "... recorded centrally" [ "$(psql_c "SELECT count(*) FROM refusals WHERE host_id = 'host-p'")" -ge 1 ]
check "... never merged: the central copy is still q's, at batch $ahead" \
    bash -c "[ \"\$(psql '$PG_URL' -X -A -t -c \"SELECT last_batch_id FROM hosts WHERE host_id = 'host-p'\")\" = $ahead ]"
check "... row for row" same_rows "$dir/q.db" host-p
check "... and it did not fail on q's rows (no duplicate-key error)" bash -c "! grep -q 'duplicate key' '$dir/f_p.log'"
check "host-p's central chain verifies" "$bin/seccheckd" verify --to "$PG_URL" --host-id host-p
stop "$f_p"
check "forwarder p exits 0 on SIGTERM" [ "$stop_status" = 0 ]
stop "$d_p"; stop "$d_q"

# ---------------------------------------------------------------- two targets, one lagging
psql_c "CREATE DATABASE second" >/dev/null
url2="postgresql:///second?host=$PG_SOCKDIR&user=$(pg_user)"
daemon r --retain 2s
forwarder r1 r "$PG_URL" host-r
forwarder r2 r "$url2" host-r
check "r: loaded" load r exec_loop 3000
check "target 1 shipped" wait_for 30 caught_up "$dir/r.db" host-r
check "target 2 shipped" wait_for 30 caught_up2 "$dir/r.db" host-r
stop "$f_r2"
lagging=$(sqlite_c "$dir/r.db" "SELECT batch_id FROM forward_progress WHERE target = '$url2'")
check "r: loaded while target 2 is stopped" load r mixed_syscalls 3000
check "target 1 shipped that too" wait_for 30 caught_up "$dir/r.db" host-r
newest=$(sqlite_c "$dir/r.db" "SELECT max(id) FROM batches")
progress() { sqlite_c "$dir/r.db" "SELECT batch_id FROM forward_progress WHERE target = '$1'"; }
check "forward_progress: target 1 at the newest batch ($newest)" \
    wait_for 5 bash -c "[ \"\$(sqlite3 '$dir/r.db' \"SELECT batch_id FROM forward_progress WHERE target = '$PG_URL'\")\" = $newest ]"
check "... target 2 behind, at $lagging" test "$(progress "$url2")" = "$lagging" -a "$lagging" -gt 0 -a "$lagging" -lt $((newest - 5))
sleep 3   # past --retain: every batch is due
check "retention deleted what both targets have (batches up to $lagging)" \
    wait_for 10 bash -c "[ \$(sqlite3 '$dir/r.db' 'SELECT min(id) FROM batches') = $((lagging + 1)) ]"
check "... and kept every batch target 2 lacks ($((lagging + 1))..$newest)" \
    [ "$(sqlite_c "$dir/r.db" "SELECT count(*) FROM batches WHERE id > $lagging")" = $((newest - lagging)) ]
forwarder r2b r "$url2" host-r
check "target 2 catches up" wait_for 30 caught_up2 "$dir/r.db" host-r
check "... without a gap" [ "$(psql "$url2" -X -A -t -c "SELECT count(*) FROM gaps")" = 0 ]
check "... its chain verifies" "$bin/seccheckd" verify --to "$url2" --host-id host-r
stop "$f_r1"; stop "$f_r2b"; stop "$d_r"

if [ $failures != 0 ]; then
    for f in "$dir"/f_*.log "$dir"/d_*.log; do echo "---- $f"; tail -12 "$f"; done
    echo "$failures failed"
    exit 1
fi
echo "all passed"
