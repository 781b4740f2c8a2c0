#!/usr/bin/env bash
# A sync sends the connections that may have changed since the last one,
# not every row from the oldest connection still open: with one sandbox
# connected for long and many short ones after it (an agent host), each
# sync grew by a row per sandbox, on every host, every second, and through
# JetStream it stopped fitting a message at last. Both paths: host d with
# the direct forwarder (--to PostgreSQL), host n through JetStream. Each
# keeps a connection L (id 1) open while 40 short ones (2..41) connect,
# send an event and close; then one more, t (42), closes: the syncs after it hold a few rows (L,
# t), where each held all 42 from L on before. The central copy has every
# close all the same. A forwarder started again sends every row once (a
# whole sync: what it knew is gone), then only changes again.
# Usage: sync_changed.sh BIN_DIR TRACES_DIR
set -uo pipefail
bin=${1:?usage: sync_changed.sh BIN_DIR TRACES_DIR}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/pg.sh"
. "$here/lib.sh"
. "$here/nats.sh"
. "$here/sandboxes.sh"

fleet_setup fleet-sync-changed
nats_user admin admin-pw admin
nats_user host-n pw-n host
nats_user central pw-c central
nats_start || exit 1
pg_start "$dir" || exit 1
check "nats-setup creates the stream (R3)" \
    "$bin/seccheckd" nats-setup --to "$NATS_URLS" --nats-auth "$dir/nats/admin.auth" --max-bytes 64M

for h in d n; do
    spawn "daemon_$h" "$bin/seccheckd" --socket "$dir/$h.sock" --db "$dir/$h.db" "${own_names[@]}"
    wait_for 20 test -S "$dir/$h.sock"
done
forwarder() {   # forwarder d|n
    local to=("$PG_URL")
    [ "$1" = n ] && to=("$NATS_URLS" --nats-auth "$dir/nats/host-n.auth")
    spawn "f_$1" "$bin/seccheckd" forward --db "$dir/$1.db" --to "${to[@]}" --host-id "host-$1" --poll-ms 50 \
        --retry-min-ms 100 --metrics-listen "unix:$dir/f_$1.metrics"
}
forwarder d
forwarder n
spawn c "$bin/seccheckd" central --from "$NATS_URLS" --to "$PG_URL" --nats-auth "$dir/nats/central.auth" \
    --retry-min-ms 100
sandboxes_start

synced() { metric "$dir/f_$1.metrics" seccheckd_forward_synced_connections_total; }
central_closed() {   # central_closed HOST ID: its close is in the central copy
    [ "$(psql_c "SELECT close_ns IS NOT NULL FROM connections WHERE host_id = 'host-$1' AND id = $2")" = t ]
}
between() { [ "$3" -ge "$1" ] && [ "$3" -le "$2" ]; }   # between LO HI N
# A quiet moment: no sync for a second (one goes every second at most).
settled() {   # settled HOST
    local before
    before=$(synced "$1")
    sleep 1.5
    [ -n "$before" ] && [ "$(synced "$1")" = "$before" ]
}

for h in d n; do
    say open "L$h" "$dir/$h.sock" && say send "L$h" 1
done
for i in $(seq 1 40); do
    for h in d n; do
        say open "s$h$i" "$dir/$h.sock" && say send "s$h$i" 1 && say close "s$h$i"
    done
done
for h in d n; do
    check "host $h: the central copy has the 40 short connections' closes, L open" \
        wait_for 60 same_side_rows "$dir/$h.db" "host-$h"
    check "host $h: the syncs settle" wait_for 30 settled "$h"
done

for h in d n; do
    before=$(synced "$h")
    say open "t$h" "$dir/$h.sock" && say send "t$h" 1 && say close "t$h"
    check "host $h: t's close reaches the central copy" wait_for 30 central_closed "$h" 42
    wait_for 30 settled "$h"
    sent=$(($(synced "$h") - before))
    check "host $h: the syncs since held fewer connections rows ($sent) than one sync of all from L on (42)" \
        between 1 41 "$sent"
done

# A forwarder started again knows nothing of the syncs before: one whole
# sync, then changes only.
for h in d n; do
    stop "$(eval echo "\$f_$h")"
    check "host $h: the forwarder exits 0 on SIGTERM" [ "$stop_status" = 0 ]
    forwarder "$h"
    say open "u$h" "$dir/$h.sock" && say send "u$h" 1 && say close "u$h"
    check "host $h: started again, u's close reaches the central copy" wait_for 30 central_closed "$h" 43
    wait_for 30 settled "$h"
    whole=$(synced "$h")
    check "host $h: ... its first sync was whole (every row from L on: $whole)" [ "${whole:-0}" -ge 43 ]
    say open "v$h" "$dir/$h.sock" && say send "v$h" 1 && say close "v$h"
    check "host $h: ... then v's close" wait_for 30 central_closed "$h" 44
    wait_for 30 settled "$h"
    sent=$(($(synced "$h") - whole))
    check "host $h: ... in syncs of what changed again ($sent rows, fewer than 44)" between 1 43 "$sent"
done

say close Ld && say close Ln
for h in d n; do
    check "host $h: central runs and connections = local, every close" \
        wait_for 30 same_side_rows "$dir/$h.db" "host-$h"
done
sandboxes_end
[ "$failures" = 0 ] && echo "all passed" || echo "$failures failed"
exit $((failures > 0))
