#!/usr/bin/env bash
# JetStream's version 2 messages carry each event's chained columns alone (id,
# conn_id, recv_ns, msg_type, raw) and seccheckd central decodes the rest: the
# central copy made through the stream must be, column for column, the one
# the direct forwarder (forward --to postgresql://) makes from the same host
# database. One daemon stores mixed_syscalls, the agent traces, every newer
# field once (gvisor_packets.py "fields", "exec_session") and packets a
# hostile sandbox sends (a valid header, payloads no decoder reads; a longer
# header; an unknown type); the direct forwarder ships it into one database,
# forward --to nats:// and central into another (3 nats-server nodes, R3);
# every events column of the two copies is compared, each copy with the
# local rows too, and verify --to passes on the stream's copy.
# Usage: nats_decoded.sh BIN_DIR TRACES_DIR
set -uo pipefail
bin=${1:?usage: nats_decoded.sh BIN_DIR TRACES_DIR}
traces=${2:?usage: nats_decoded.sh BIN_DIR TRACES_DIR}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/pg.sh"
. "$here/lib.sh"
. "$here/nats.sh"

fleet_setup fleet-nats-decoded
nats_user admin admin-pw admin
nats_user host-h pw-h host
nats_user central pw-c central
nats_start || exit 1
pg_start "$dir" || exit 1
psql_c "CREATE DATABASE direct" >/dev/null
direct_url=${PG_URL/\/postgres\?//direct?}
check "nats-setup creates the stream (R3)" \
    "$bin/seccheckd" nats-setup --to "$NATS_URLS" --nats-auth "$dir/nats/admin.auth" --max-bytes 256M

# ---------------------------------------------------------------- the host's database
spawn d "$bin/seccheckd" --socket "$dir/h.sock" --db "$dir/h.db" --batch-size 256 "${own_names[@]}"
wait_for 20 test -S "$dir/h.sock"
for t in mixed_syscalls agent_build agent_code agent_install; do
    "$bin/seccheck-loadgen" --socket "$dir/h.sock" --trace "$traces/$t.trace" --mode block --messages 2000 \
        >>"$dir/load.log" 2>&1 || fail "loadgen $t"
done
/usr/bin/python3 "$here/../support/gvisor_packets.py" send "$dir/h.sock" fields exec_session >>"$dir/load.log" 2>&1 ||
    fail "gvisor_packets.py send"
# A hostile sandbox: the handshake, then packets whose payloads no decoder
# reads (stored with decode_error), a header longer than 8 bytes, an
# unknown message type, bytes that are neither UTF-8 nor free of NUL.
/usr/bin/python3 - "$dir/h.sock" <<'PY' >>"$dir/load.log" 2>&1 || fail "hostile packets"
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.settimeout(10)
s.connect(sys.argv[1])
s.send(b"\x08\x01")   # Handshake{version: 1}
s.recv(64)
hdr = lambda size, t, dropped: struct.pack("<HHI", size, t, dropped)
for t in (1, 2, 3, 4, 5, 9, 17):
    s.send(hdr(8, t, 7) + b"\xff\xff\xff\xff\x0f\x12\x00\xc3(")
s.send(hdr(12, 3, 8) + b"more" + b"\x0a\x03\xc3\x28\x00")
s.send(hdr(8, 0xfff0, 9) + b"\x00unknown\xfe")
s.close()
PY
sleep 1
stop "$d"
check "the daemon stopped cleanly" [ "$stop_status" = 0 ]
events=$(sqlite_c "$dir/h.db" "SELECT count(*) FROM events")
undecoded=$(sqlite_c "$dir/h.db" "SELECT count(*) FROM events WHERE decode_error IS NOT NULL")
newer=$(sqlite_c "$dir/h.db" "SELECT count(*) FROM events WHERE is_exec_session IS NOT NULL")
check "the host stored the traces ($events events), hostile packets with decode_error ($undecoded)" \
    [ "$events" -gt 8000 ] && [ "$undecoded" -ge 8 ]
check "... and rows with version 2's columns set ($newer)" [ "$newer" -gt 0 ]

# ---------------------------------------------------------------- both paths
spawn fd "$bin/seccheckd" forward --db "$dir/h.db" --to "$direct_url" --host-id host-h --poll-ms 50 \
    --retry-min-ms 100
check "the direct forwarder ships every batch" wait_for 60 env PG_URL="$direct_url" bash -c \
    ". '$here/pg.sh'; . '$here/lib.sh'; caught_up '$dir/h.db' host-h"
stop "$fd"
spawn fn "$bin/seccheckd" forward --db "$dir/h.db" --to "$NATS_URLS" --nats-auth "$dir/nats/host-h.auth" \
    --host-id host-h --poll-ms 50 --retry-min-ms 100 --message-events 1000 --metrics-listen "unix:$dir/fn.metrics"
spawn c "$bin/seccheckd" central --from "$NATS_URLS" --to "$PG_URL" --nats-auth "$dir/nats/central.auth" \
    --retry-min-ms 100
check "the stream's copy has every batch" wait_for 60 caught_up "$dir/h.db" host-h
raw=$(metric "$dir/fn.metrics" seccheckd_forward_raw_bytes_total)
shipped=$(metric "$dir/fn.metrics" seccheckd_forward_events_total)
packets=$(sqlite_c "$dir/h.db" "SELECT sum(length(raw)) FROM events")
# A chained row is raw and 54 bytes (5 fields' lengths, 4 integers, the
# count); the stored row adds the decoded columns and detail (~400 bytes).
check "the messages carry the chained columns, not the rows ($raw bytes for $shipped events, $packets of packets)" \
    [ -n "$raw" ] && [ "${shipped:-0}" = "$events" ] && [ "$raw" -lt "$((packets + shipped * 80))" ]
stop "$fn"

# ---------------------------------------------------------------- the two copies
cols=$(sqlite_c "$dir/h.db" "SELECT group_concat(name, ', ') FROM pragma_table_xinfo('events')")
dump() {   # dump URL FILE: every events column of host-h, one JSON line a row
    psql "$1" -v ON_ERROR_STOP=1 -X -q -A -t -c \
        "SELECT row_to_json(t) FROM (SELECT $cols FROM events WHERE host_id = 'host-h' ORDER BY id) t" >"$2"
}
dump "$direct_url" "$dir/direct.events"
dump "$PG_URL" "$dir/stream.events"
check "both copies hold $events events" \
    [ "$(wc -l <"$dir/direct.events")" = "$events" ] && [ "$(wc -l <"$dir/stream.events")" = "$events" ]
check "every column of every event: the stream's copy = the direct forwarder's" \
    cmp "$dir/direct.events" "$dir/stream.events"
cmp -s "$dir/direct.events" "$dir/stream.events" || diff "$dir/direct.events" "$dir/stream.events" | head -4
hostile_rows() {   # the undecodable rows of a copy, as JSON lines
    psql "$1" -X -q -A -t -c "SELECT row_to_json(t) FROM (SELECT $cols FROM events WHERE host_id = 'host-h'
                              AND decode_error IS NOT NULL ORDER BY id) t"
}
check "... the hostile packets among them ($undecoded), decode_error and all" \
    bash -c "[ \"\$1\" = \"\$2\" ] && [ \$(printf '%s\n' \"\$1\" | wc -l) = $undecoded ]" _ \
    "$(hostile_rows "$direct_url")" "$(hostile_rows "$PG_URL")"
check "the stream's copy = the host's rows, every column" same_rows "$dir/h.db" host-h
check "... and the direct one's" env PG_URL="$direct_url" bash -c \
    ". '$here/pg.sh'; . '$here/lib.sh'; dir='$dir'; same_rows '$dir/h.db' host-h"
check "verify --to passes on the stream's copy (chain and decoded columns)" \
    "$bin/seccheckd" verify --to "$PG_URL" --host-id host-h

[ "$failures" = 0 ] && echo "all passed" || echo "$failures failed"
exit $((failures > 0))
