#!/usr/bin/env bash
# A connection's close and a run's stop that come after their last batch
# went out reach the central copy through JetStream, even when the next
# thing the forwarder sees is more batches rather than a quiet moment.
# The forwarder is held (SIGSTOP) while, first, sandbox a closes and
# sandbox b's events are stored, then the daemon restarts (its run stops,
# b's connection closes) and sandbox c's events are stored in the new run;
# each time it goes on with batches to send. Then, with nothing open, z
# connects and closes without an event before e's events are stored.
# A clean-clone run at load 4 found the first two (fleet.nats_exactly_once:
# the central copy of host a's first connection stayed open): a batch
# message moved the host's marks past rows it did not carry, and the sync
# that follows sends rows from the mark on. z's was the same, for a
# connection no message had seen yet.
# Usage: nats_closes.sh BIN_DIR TRACES_DIR
set -uo pipefail
bin=${1:?usage: nats_closes.sh BIN_DIR TRACES_DIR}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/pg.sh"
. "$here/lib.sh"
. "$here/nats.sh"
. "$here/sandboxes.sh"

fleet_setup fleet-nats-closes
nats_user admin admin-pw admin
nats_user host-h pw-h host
nats_user central pw-c central
nats_start || exit 1
pg_start "$dir" || exit 1
check "nats-setup creates the stream (R3)" \
    "$bin/seccheckd" nats-setup --to "$NATS_URLS" --nats-auth "$dir/nats/admin.auth" --max-bytes 64M

daemon() { spawn d "$bin/seccheckd" --socket "$dir/h.sock" --db "$dir/h.db" "${own_names[@]}"; }
daemon
wait_for 20 test -S "$dir/h.sock"
spawn fn "$bin/seccheckd" forward --db "$dir/h.db" --to "$NATS_URLS" --nats-auth "$dir/nats/host-h.auth" \
    --host-id host-h --poll-ms 50 --retry-min-ms 100
spawn c "$bin/seccheckd" central --from "$NATS_URLS" --to "$PG_URL" --nats-auth "$dir/nats/central.auth" \
    --retry-min-ms 100

sandboxes_start
conn_closed() { [ "$(sqlite_c "$dir/h.db" "SELECT close_ns IS NOT NULL FROM connections WHERE id = $1")" = 1 ]; }
batches_after() { [ "$(sqlite_c "$dir/h.db" "SELECT coalesce(max(id), 0) FROM batches")" -gt "$1" ]; }
stored() { [ "$(sqlite_c "$dir/h.db" "SELECT count(*) FROM events")" -ge "$1" ]; }
closed_and_after() { conn_closed "$1" && batches_after "$2"; }
last_batch() { sqlite_c "$dir/h.db" "SELECT coalesce(max(id), 0) FROM batches"; }
central_closed() {   # central_closed connections|runs ID: its close or stop is in the central copy
    local col=close_ns
    [ "$1" = runs ] && col=stopped_ns
    [ "$(psql_c "SELECT $col IS NOT NULL FROM $1 WHERE host_id = 'host-h' AND id = $2")" = t ]
}
central_open() {   # central_open ID: the central copy has connection ID, still open
    [ "$(psql_c "SELECT close_ns IS NULL FROM connections WHERE host_id = 'host-h' AND id = $1")" = t ]
}

say open a "$dir/h.sock" && say send a 20
check "the host stored a's events" wait_for 10 stored 20
check "a's events are in the central copy" wait_for 30 caught_up "$dir/h.db" host-h
check "... a open there" central_open 1
say open b "$dir/h.sock" && say send b 20
check "the host stored b's events" wait_for 10 stored 40
check "b's events are in the central copy too" wait_for 30 caught_up "$dir/h.db" host-h
check "... b open there" central_open 2

# a closes and b sends more while the forwarder is held: it sees batches next
kill -STOP "$fn"
before=$(last_batch)
say send b 20 && say close a
check "the host stored a's close and b's new batch" wait_for 10 closed_and_after 1 "$before"
kill -CONT "$fn"
check "the central copy has b's new batch" wait_for 30 caught_up "$dir/h.db" host-h
check "... and a's close with it" central_closed connections 1

# the daemon restarts (run 1 stops, b closes) and c's events are stored in
# run 2 while the forwarder is held
kill -STOP "$fn"
stop "$d"
check "the daemon stopped cleanly" [ "$stop_status" = 0 ]
check "... closing b" conn_closed 2
before=$(last_batch)
daemon
wait_for 20 test -S "$dir/h.sock"
say open c "$dir/h.sock" && say send c 20
check "run 2 stored c's events" wait_for 10 batches_after "$before"
kill -CONT "$fn"
check "the central copy has run 2's batch" wait_for 30 caught_up "$dir/h.db" host-h
check "... and b's close with it" central_closed connections 2
check "run 1's stop reaches the central copy (with the next sync)" wait_for 10 central_closed runs 1

# nothing open (c closes, and a sync says so); then, while the forwarder is
# held, z connects and closes without an event and e's events are stored:
# the message with e's batch must not move the mark past z, which it does
# not carry and the sync that follows sends from the mark on
say close c
check "c's close reaches the central copy (nothing open now)" wait_for 10 central_closed connections 3
kill -STOP "$fn"
before=$(last_batch)
say open z "$dir/h.sock" && say close z
check "the host stored z's close (connection 4, no events)" wait_for 10 conn_closed 4
say open e "$dir/h.sock" && say send e 20
check "the host stored e's events" wait_for 10 batches_after "$before"
kill -CONT "$fn"
check "the central copy has e's batch" wait_for 30 caught_up "$dir/h.db" host-h
check "z, closed without events, reaches it too" wait_for 10 central_closed connections 4

say close e
stop "$d"
check "the daemon stopped cleanly again" [ "$stop_status" = 0 ]
check "central runs and connections = local: every close, run 1's stop" \
    wait_for 30 same_side_rows "$dir/h.db" host-h
check "central batches and events = local" same_rows "$dir/h.db" host-h
stop "$fn"
check "the forwarder exits 0 on SIGTERM" [ "$stop_status" = 0 ]
stop "$c"
check "central exits 0 on SIGTERM" [ "$stop_status" = 0 ]
sandboxes_end

[ "$failures" = 0 ] && echo "all passed" || echo "$failures failed"
exit $((failures > 0))
