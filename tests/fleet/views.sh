#!/usr/bin/env bash
# The central views (forward/central_views.sql.h) give, for each host, the
# rows the local database's views (storage/views.sql.h) give: one daemon
# database per recorded trace, one made by schema version 1 and upgraded,
# and a copy holding rows the traces lack, each forwarded as its own host to
# a real PostgreSQL 15; before them, the schema version 1 fixture never
# upgraded, whose messages must be the upgraded copy's.
#
# Each local view is dumped as CSV and loaded into a table centrally, typed
# so that what must differ is compared as the same thing: JSON as jsonb (so
# events_full's message is jsonb equality with the local json_patch text),
# numbers as numbers, times as UTC seconds (local ISO text, central
# timestamptz; time_ns, where a view has it, is compared exactly). Then
# EXCEPT ALL both ways must be empty, and the row counts equal.
# Usage: views.sh BIN_DIR TRACES_DIR
set -uo pipefail
bin=${1:?usage: views.sh BIN_DIR TRACES_DIR}
traces=${2:?usage: views.sh BIN_DIR TRACES_DIR}
here=$(cd "$(dirname "$0")" && pwd)
fixture_v1="$here/../fixtures/db/schema-v1.db"
. "$here/pg.sh"
. "$here/lib.sh"

fleet_setup fleet-views
pg_start "$dir" || exit 1

# Rules matching every exit of every type, with fields some events lack
# (null in output_fields): alerts_full's rows on every host.
cat >"$dir/rules.yaml" <<'YAML'
- rule: Every exit
  desc: every exit and sentry point
  condition: evt.dir = < or evt.type in (procexit, container)
  output: "%evt.type by %proc.name (%proc.pname) fd=%fd.name res=%evt.res"
  priority: INFO
  tags: [views, fleet]
  warn_evttypes: false
YAML
# runsc's state of mixed_syscalls.trace's container, so its host has names
# (container_info) for the containers view; the other containers have none.
runsc_state "$dir/runsc-root" "$dir/bundle" app web-1 shop
daemon() {   # daemon NAME: a daemon on $dir/NAME.db
    rm -f "$dir/$1.sock"
    spawn "d_$1" "$bin/seccheckd" --socket "$dir/$1.sock" --db "$dir/$1.db" --batch-size 256 \
        --rules "$dir/rules.yaml" --alerts-rate 0 --runsc-root "$dir/runsc-root" --docker-socket none
    wait_for 20 test -S "$dir/$1.sock"
}
load() {   # load NAME TRACE_FILE MESSAGES
    "$bin/seccheck-loadgen" --socket "$dir/$1.sock" --trace "$2" --mode block --messages "$3" >>"$dir/load.log" 2>&1
}
fill() {   # fill NAME TRACE_FILE MESSAGES: the daemon stopped after, so the database holds still
    local pid
    daemon "$1" || return 1
    eval "pid=\$d_$1"
    load "$1" "$2" "$3"
    local rc=$?
    stop "$pid"
    return $rc
}

# ---------------------------------------------------------------- the hosts' databases
hosts=()
for t in "$traces"/*.trace; do
    name=$(basename "$t" .trace)
    check "$name: 3000 messages stored" fill "$name" "$t" 3000
    hosts+=("$name")
done
# What gVisor's 2026 releases send (the execs view's layer, memfd, exec session and pipe peers),
# in packets from tests/support/gvisor_packets.py, several stories in one trace.
stories="fields curl_pipe_sh drop_exec_benign exec_session"
/usr/bin/python3 "$here/../support/gvisor_packets.py" trace-one "$dir/gvisor2026.trace" $stories
n=$(/usr/bin/python3 -c "import sys; sys.path.insert(0, '$here/../support'); import gvisor_packets as g
print(sum(len(g.story_packets(s)) for s in '$stories'.split()))")
check "gvisor2026: its $n messages stored" fill gvisor2026 "$dir/gvisor2026.trace" "$n"
hosts+=(gvisor2026)
# Version 1 rows (detail whole) and, after the daemon's upgrade, version 2
# rows of the same trace in one database.
cp "$fixture_v1" "$dir/v1.db"
check "v1: the fixture upgraded and appended to" fill v1 "$traces/mixed_syscalls.trace" 1235
check "v1: now schema version 2" [ "$(sqlite_c "$dir/v1.db" "SELECT value FROM meta WHERE key = 'schema_version'")" = 2 ]
hosts+=(v1)

# What the traces lack, written into a copy of mixed_syscalls' rows (detail
# and the context columns are outside the chain, so it still forwards):
# addresses cut short, a Unix path with bytes after its NUL or not ASCII;
# nulls in detail (json_patch drops them from objects, not from arrays), a
# number past int64, a decimal, an exponent; sysno, exit or context_data
# kept in detail (or context_data null there); a detail that is not an
# object; the context columns NULL (the proto's defaults come back),
# is_exec_session 0, credentials in part. Open flags in detail written
# other ways (5.0, 1e3), or not a uint32 (an array, -3, 2^32, 1e20, 5.5). Execs whose parent the rules
# decide: reparented (parent_thread_group_id another process) or not,
# without thread_group_start_time (the 10 s window, where an older clone of
# the same pid is passed over), a time too early for a window, a clone whose
# created_thread_group_id is a string (no match, in either database).
edges_sql="
CREATE TEMP TABLE edge(k INTEGER PRIMARY KEY, a TEXT);
INSERT INTO edge VALUES (1, ''), (2, '02'), (3, '0200'), (4, '02001f90c0a8'), (5, '0a001f90000000002001'),
    (6, '0100'), (7, '01002f746d702f7300ffee'), (8, '01002f746d702fc3a9'), (9, '0100006162630000616263'),
    (10, '010000'), (11, '01'), (12, '0a00');
UPDATE events SET detail = json_set(detail, '\$.address', e.a)
  FROM (SELECT n.id, edge.a FROM (SELECT id, row_number() OVER (ORDER BY id) AS k FROM events
        WHERE msg_type IN (10, 24, 25, 37) AND detail IS NOT NULL) AS n JOIN edge USING (k)) AS e
  WHERE events.id = e.id;
CREATE TEMP TABLE pick AS SELECT id, row_number() OVER (ORDER BY id) AS k FROM events
  WHERE is_exit = 1 AND sysno IS NOT NULL AND is_exec_session IS NOT NULL AND real_uid IS NOT NULL;
UPDATE events SET detail = json_set(detail, '\$.gone', json('null'), '\$.sub', json('{\"a\":null,\"b\":[1,null,{\"c\":1}]}'),
    '\$.big', json('18446744073709551615'), '\$.f', json('1.50'), '\$.e', json('1e3'), '\$.neg', json('-0'))
  WHERE id = (SELECT id FROM pick WHERE k = 1);
UPDATE events SET detail = json_set(detail, '\$.sysno', json('18446744073709551615')) WHERE id = (SELECT id FROM pick WHERE k = 2);
UPDATE events SET detail = json_set(detail, '\$.exit', json('{\"result\":7,\"new_field\":1}')) WHERE id = (SELECT id FROM pick WHERE k = 3);
UPDATE events SET detail = json_set(detail, '\$.context_data', json('{\"time_ns\":5,\"new_field\":1}'))
  WHERE id = (SELECT id FROM pick WHERE k = 4);
UPDATE events SET detail = json_set(detail, '\$.context_data', json('null')) WHERE id = (SELECT id FROM pick WHERE k = 5);
UPDATE events SET detail = '[1,{\"n\":null}]' WHERE id = (SELECT id FROM pick WHERE k = 6);
UPDATE events SET time_ns = NULL, container_id = NULL, thread_id = NULL, process_name = NULL, cwd = NULL,
    parent_thread_group_id = NULL, thread_start_time_ns = NULL WHERE id = (SELECT id FROM pick WHERE k = 7);
UPDATE events SET is_exec_session = 0, effective_uid = NULL, saved_gid = NULL WHERE id = (SELECT id FROM pick WHERE k = 8);
UPDATE events SET real_uid = NULL, result = NULL WHERE id = (SELECT id FROM pick WHERE k = 9);
UPDATE events SET is_exec_session = NULL WHERE id = (SELECT id FROM pick WHERE k = 10);
CREATE TEMP TABLE opens AS SELECT id, row_number() OVER (ORDER BY id) AS k FROM events
  WHERE msg_type = 7 AND is_exit = 1 AND id NOT IN (SELECT id FROM pick WHERE k <= 10);
UPDATE events SET detail = json_set(detail, '\$.flags', json(CASE o.k WHEN 1 THEN '5.0' WHEN 2 THEN '1e3' WHEN 3 THEN '[12]'
    WHEN 4 THEN '-3' WHEN 5 THEN '4294967296' WHEN 6 THEN '1e20' WHEN 7 THEN '4294967295' WHEN 8 THEN '5.5' END))
  FROM opens o WHERE events.id = o.id AND o.k <= 8;
CREATE TEMP TABLE ex AS SELECT id, thread_group_id AS tg, row_number() OVER (ORDER BY id) AS k FROM events WHERE msg_type = 3;
UPDATE events SET parent_thread_group_id = 99 WHERE id = (SELECT id FROM ex WHERE k = 1);
UPDATE events SET parent_thread_group_id = 1 WHERE id = (SELECT id FROM ex WHERE k = 2);
UPDATE events SET thread_group_start_time_ns = NULL WHERE id IN (SELECT id FROM ex WHERE k IN (3, 4, 6));
UPDATE events SET time_ns = 5000000000 WHERE id = (SELECT id FROM ex WHERE k = 4);
UPDATE events SET detail = json_set(detail, '\$.created_thread_group_id', (SELECT tg || '' FROM ex WHERE k = 5))
  WHERE msg_type = 2 AND json_extract(detail, '\$.created_thread_group_id') = (SELECT tg FROM ex WHERE k = 5);
UPDATE events SET detail = json_set(detail, '\$.created_thread_group_id', (SELECT tg FROM ex WHERE k = 6)),
    thread_group_id = 77, process_name = 'older'
  WHERE msg_type = 2 AND json_extract(detail, '\$.created_thread_group_id') = (SELECT tg - 3 FROM ex WHERE k = 6);
SELECT count(*) FROM pick WHERE k <= 10;"
sqlite_c "$dir/mixed_syscalls.db" ".backup '$dir/edges.db'"
check "edges: the rows the traces lack written" [ "$(sqlite_c "$dir/edges.db" "$edges_sql")" = 10 ]
hosts+=(edges)

# First of all, alone: the fixture as schema version 1 left it, never
# upgraded, so the central events table starts without version 2's columns
# (events_full names them; central_views.sql.h adds them).
cp "$fixture_v1" "$dir/v1raw.db"
spawn f_v1raw "$bin/seccheckd" forward --db "$dir/v1raw.db" --to "$PG_URL" --host-id v1raw --poll-ms 50
check "v1raw (never upgraded) caught up as the first host" wait_for 60 caught_up "$dir/v1raw.db" v1raw
stop "$f_v1raw"

for h in "${hosts[@]}"; do
    spawn "f_$h" "$bin/seccheckd" forward --db "$dir/$h.db" --to "$PG_URL" --host-id "$h" --poll-ms 50 \
        --retry-min-ms 100 --retry-max-ms 500
done
for h in "${hosts[@]}"; do
    check "$h caught up" wait_for 60 caught_up "$dir/$h.db" "$h"
done
for h in "${hosts[@]}"; do
    eval "stop \$f_$h"
done

# ---------------------------------------------------------------- the views
# One line per view: name | local columns (SQLite) | their types centrally
# | the central view's columns, in the same order, made comparable.
# group_concat's order is SQLite's, string_agg's sorted: compared sorted.
sorted_list() { echo "(SELECT string_agg(x, ',' ORDER BY x) FROM unnest(string_to_array($1, ',')) x)"; }
as_loaded() { echo "${1/containers/$(sorted_list containers)}"; }

# Local times are text, "2026-12-01T15:13:10.123Z"; central ones timestamptz
# from time_ns / 1e9 (microseconds, rounded): compared to the second, the
# local text cut there (time_ns itself is compared exactly where a view has it).
utc="AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS')"
sec() { echo "substr($1, 1, 19) AS $1"; }
views=(
"events_full|id, conn_id, recv_ns, msg_type, type_name, dropped_count, decode_error, message
|id bigint, conn_id bigint, recv_ns bigint, msg_type bigint, type_name text, dropped_count bigint,
 decode_error text, message jsonb
|id, conn_id, recv_ns, msg_type, type_name, dropped_count, decode_error, message"
"execs|id, conn_id, time_ns, $(sec time), container_id, thread_group_id, parent_thread_group_id, parent_name, binary_path,
 argv, cwd, real_uid, layer, in_memfd, exec_session, pipe_input_pid, pipe_input_name, pipe_output_pid,
 pipe_output_name
|id bigint, conn_id bigint, time_ns bigint, time text, container_id text, thread_group_id bigint,
 parent_thread_group_id bigint, parent_name text, binary_path text, argv jsonb, cwd text, real_uid bigint,
 layer text, in_memfd bigint, exec_session bigint, pipe_input_pid bigint, pipe_input_name text,
 pipe_output_pid bigint, pipe_output_name text
|id, conn_id, time_ns, to_char(time $utc, container_id, thread_group_id, parent_thread_group_id, parent_name,
 binary_path, argv, cwd, real_uid, layer, in_memfd, exec_session, pipe_input_pid, pipe_input_name,
 pipe_output_pid, pipe_output_name"
"processes_per_container|container_id, binary_path, execs, $(sec first), $(sec last)
|container_id text, binary_path text, execs bigint, first text, last text
|container_id, binary_path, execs, to_char(first $utc, to_char(last $utc"
"files_opened|id, conn_id, time_ns, $(sec time), container_id, process_name, thread_group_id, call, pathname, dir,
 flags, flags_text, mode, fd, errno, errno_name
|id bigint, conn_id bigint, time_ns bigint, time text, container_id text, process_name text,
 thread_group_id bigint, call text, pathname text, dir text, flags jsonb, flags_text text, mode jsonb, fd bigint,
 errno bigint, errno_name text
|id, conn_id, time_ns, to_char(time $utc, container_id, process_name, thread_group_id, call, pathname, dir,
 flags, flags_text, mode, fd, errno, errno_name"
"failed_syscalls|id, conn_id, time_ns, $(sec time), container_id, process_name, type_name, sysno, errno, errno_name, result,
 pathname
|id bigint, conn_id bigint, time_ns bigint, time text, container_id text, process_name text, type_name text,
 sysno bigint, errno bigint, errno_name text, result bigint, pathname text
|id, conn_id, time_ns, to_char(time $utc, container_id, process_name, type_name, sysno, errno, errno_name, result,
 pathname"
"sandbox_drops|conn_id, peer_pid, $(sec connected), $(sec closed), close_reason, messages, sandbox_dropped, drop_pct,
 containers
|conn_id bigint, peer_pid bigint, connected text, closed text, close_reason text, messages bigint,
 sandbox_dropped bigint, drop_pct numeric, containers text
|conn_id, peer_pid, to_char(connected $utc, to_char(closed $utc, close_reason, messages, sandbox_dropped,
 drop_pct, $(sorted_list containers)"
"network|id, conn_id, time_ns, $(sec time), container_id, process_name, thread_group_id, call, is_exit, fd, family,
 family_name, address, address_hex, result, errno, errno_name
|id bigint, conn_id bigint, time_ns bigint, time text, container_id text, process_name text,
 thread_group_id bigint, call text, is_exit bigint, fd jsonb, family bigint, family_name text, address text,
 address_hex text, result bigint, errno bigint, errno_name text
|id, conn_id, time_ns, to_char(time $utc, container_id, process_name, thread_group_id, call, is_exit, fd,
 family, family_name, address, address_hex, result, errno, errno_name"
"containers|container_id, name, pod_name, pod_namespace, image, image_repository, image_tag, is_sandbox, user_name,
 lookup, lookup_why, $(sec first_seen), $(sec last_seen), events, execs, alerts, sandbox_dropped
|container_id text, name text, pod_name text, pod_namespace text, image text, image_repository text, image_tag text,
 is_sandbox bigint, user_name text, lookup text, lookup_why text, first_seen text, last_seen text, events bigint,
 execs bigint, alerts bigint, sandbox_dropped bigint
|container_id, name, pod_name, pod_namespace, image, image_repository, image_tag, is_sandbox, user_name, lookup,
 lookup_why, to_char(first_seen $utc, to_char(last_seen $utc, events, execs, alerts, sandbox_dropped"
"alerts_full|id, event_id, rule, priority, time_ns, container_id, output, output_fields, tags, suppressed, conn_id,
 type_name, thread_id, thread_group_id, process_name, cwd, effective_uid, message
|id bigint, event_id bigint, rule text, priority text, time_ns bigint, container_id text, output text,
 output_fields jsonb, tags jsonb, suppressed bigint, conn_id bigint, type_name text, thread_id bigint,
 thread_group_id bigint, process_name text, cwd text, effective_uid bigint, message jsonb
|id, event_id, rule, priority, time_ns, container_id, output, output_fields, tags, suppressed, conn_id, type_name,
 thread_id, thread_group_id, process_name, cwd, effective_uid, message"
)

# Loads HOST's rows of a local view into local_VIEW centrally.
load_local_view() {   # load_local_view HOST VIEW LOCAL_COLUMNS COLUMN_TYPES
    local csv="$dir/$1.$2.csv"
    sqlite3 -csv "$dir/$1.db" "SELECT '$1', $3 FROM $2" >"$csv" || return 1
    psql "$PG_URL" -v ON_ERROR_STOP=1 -X -q <<SQL
SET client_min_messages = warning;
CREATE TABLE IF NOT EXISTS local_$2(host text NOT NULL, $4);
\copy local_$2 FROM '$csv' (FORMAT csv)
SQL
}

# The rows that differ (either way) and the counts, for HOST and VIEW.
differing() {   # differing HOST VIEW LOCAL_COLUMNS CENTRAL_COLUMNS
    psql_c "SELECT count(*) FROM (
              (SELECT $3 FROM local_$2 WHERE host = '$1' EXCEPT ALL SELECT $4 FROM $2 WHERE host_id = '$1')
              UNION ALL
              (SELECT $4 FROM $2 WHERE host_id = '$1' EXCEPT ALL SELECT $3 FROM local_$2 WHERE host = '$1')) d"
}
show_differences() {   # the first few, to say what differs
    psql_c "(SELECT 'local  ', $3 FROM local_$2 WHERE host = '$1' EXCEPT ALL SELECT 'local  ', $4 FROM $2 WHERE host_id = '$1')
            UNION ALL
            (SELECT 'central', $4 FROM $2 WHERE host_id = '$1' EXCEPT ALL SELECT 'central', $3 FROM local_$2 WHERE host = '$1')
            ORDER BY 2 LIMIT 6" | cut -c1-400
}

same_view() {   # same_view HOST VIEW LOCAL_COLUMNS COLUMN_TYPES CENTRAL_COLUMNS
    local n_local n_central diff
    load_local_view "$1" "$2" "$3" "$4" || return 1
    n_local=$(sqlite_c "$dir/$1.db" "SELECT count(*) FROM $2")
    n_central=$(psql_c "SELECT count(*) FROM $2 WHERE host_id = '$1'")
    diff=$(differing "$1" "$2" "$(as_loaded "$3")" "$5")
    echo "     $1 $2: $n_local local rows, $n_central central, $diff differ"
    if [ "$n_local" != "$n_central" ] || [ "$diff" != 0 ]; then
        show_differences "$1" "$2" "$(as_loaded "$3")" "$5"
        return 1
    fi
}

for v in "${views[@]}"; do
    IFS='|' read -r -d '' view lcols types ccols <<<"$v"
    view=${view//$'\n'/ } lcols=${lcols//$'\n'/ } types=${types//$'\n'/ } ccols=${ccols//$'\n'/ }
    psql_c "SELECT 1 FROM $view LIMIT 0" >/dev/null
    check "the central view $view exists" [ $? = 0 ]
    for h in "${hosts[@]}"; do
        check "$h: central $view = local $view" same_view "$h" "$view" "$lcols" "$types" "$ccols"
    done
done

# events_full holds every event, each with a message unless undecoded.
for h in "${hosts[@]}"; do
    IFS='|' read -r events messages <<<"$(sqlite_c "$dir/$h.db" "SELECT count(*), count(message) FROM events_full")"
    check "$h: events_full has every event ($events), $messages with a message, all compared" \
        [ "$events" = "$(sqlite_c "$dir/$h.db" "SELECT count(*) FROM events")" -a \
          "$(psql_c "SELECT count(*) FROM local_events_full l JOIN events_full c ON c.host_id = l.host AND c.id = l.id
                     WHERE l.host = '$h' AND l.message = c.message")" = "$messages" ]
done

# The never-upgraded database has no events_full; its rows are the
# upgraded one's first rows, whose messages were compared above.
v1_rows="SELECT id, message FROM events_full WHERE host_id = 'v1' AND id <= 1235"
v1raw_rows="SELECT id, message FROM events_full WHERE host_id = 'v1raw'"
check "v1raw: every event's central message is the upgraded database's" \
    [ "$(psql_c "SELECT count(*) FROM ($v1raw_rows) r")" = 1235 -a \
      "$(psql_c "SELECT count(*) FROM (($v1_rows EXCEPT ALL $v1raw_rows) UNION ALL ($v1raw_rows EXCEPT ALL $v1_rows)) d")" = 0 ]

# The comparisons cover what the traces hold: execs, opens, failed calls,
# and connect/bind/accept with IPv4, IPv6 and Unix addresses.
covered=$(psql_c "SELECT (SELECT count(*) FROM execs) || ' ' || (SELECT count(*) FROM files_opened) || ' ' ||
                         (SELECT count(*) FROM failed_syscalls) || ' ' ||
                         (SELECT count(*) FILTER (WHERE family = 2) || ' ' || count(*) FILTER (WHERE family = 10)
                                 || ' ' || count(*) FILTER (WHERE family = 1) FROM network) || ' ' ||
                         (SELECT count(*) FROM events WHERE host_id = 'v1' AND detail ? 'context_data') || ' ' ||
                         (SELECT count(*) FROM events WHERE is_exec_session IS NOT NULL)")
read -r n_execs n_opens n_failed n_ipv4 n_ipv6 n_unix n_v1 n_v2 <<<"$covered"
echo "     central rows: execs $n_execs, files_opened $n_opens, failed_syscalls $n_failed," \
    "network IPv4 $n_ipv4 IPv6 $n_ipv6 Unix $n_unix; version 1 rows $n_v1, version 2 rows with context $n_v2"
for n in n_execs n_opens n_failed n_ipv4 n_ipv6 n_unix n_v1 n_v2; do
    check "compared some ${n#n_} rows (${!n})" [ "${!n:-0}" -gt 0 ]
done
named=$(psql_c "SELECT (SELECT count(parent_name) FROM execs) || ' ' || (SELECT count(flags_text) FROM files_opened)
                || ' ' || (SELECT count(errno_name) FROM failed_syscalls) || ' ' || (SELECT count(family_name) FROM network)
                || ' ' || (SELECT count(*) FROM containers)
                || ' ' || (SELECT count(*) FROM containers WHERE name = 'app' AND pod_namespace = 'shop'
                                  AND image_tag = 'v2' AND user_name = 'root' AND lookup = 'found')")
read -r n_parents n_flags n_errnos n_families n_containers n_container_names <<<"$named"
echo "     named: parents $n_parents, flags $n_flags, errnos $n_errnos, families $n_families; containers $n_containers" \
    "($n_container_names by runsc's state)"
for n in n_parents n_flags n_errnos n_families n_containers n_container_names; do
    check "compared some ${n#n_} (${!n})" [ "${!n:-0}" -gt 0 ]
done
# What the edges' rules decide (equal centrally, as compared above).
check "edges: parents as the rules say" [ "$(psql_c "SELECT string_agg(coalesce(parent_thread_group_id::text, '-') || ':' ||
    coalesce(parent_name, '-'), ' ' ORDER BY id) FROM (SELECT * FROM execs WHERE host_id = 'edges' ORDER BY id LIMIT 6) e")" = \
    "99:- 1:sh 1:sh -:- -:- 4:python3" ]
edge_flags() {   # edge_flags JSONB_TEXT EXPECTED: the flags_text of the edges' open with that flags value
    psql_c "SELECT coalesce(flags_text, '-') FROM files_opened WHERE host_id = 'edges' AND flags::text = '$1'"
}
for pair in '5.0 O_WRONLY|0x4' '1000 O_RDONLY|0x8|0x20|O_CREAT|O_EXCL|O_NOCTTY|O_TRUNC' '[12] -' '-3 -' '4294967296 -' \
    '100000000000000000000 -' '5.5 -' \
    '4294967295 O_ACCMODE|0x4|0x8|0x10|0x20|O_CREAT|O_EXCL|O_NOCTTY|O_TRUNC|O_APPEND|O_NONBLOCK|O_SYNC|O_ASYNC|O_DIRECT|O_LARGEFILE|O_TMPFILE|O_NOFOLLOW|O_NOATIME|O_CLOEXEC|O_PATH|0x800000|0x1000000|0x2000000|0x4000000|0x8000000|0x10000000|0x20000000|0x40000000|0x80000000'; do
    check "edges: flags ${pair%% *} named ${pair#* }" [ "$(edge_flags "${pair%% *}")" = "${pair#* }" ]
done

if [ $failures != 0 ]; then
    for f in "$dir"/*.log; do echo "---- $f"; tail -15 "$f"; done
    echo "$failures failed"
    exit 1
fi
echo "all passed"
