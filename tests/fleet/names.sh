#!/usr/bin/env bash
# Container names in the fleet's central views (issue 27 item 4), against a
# real PostgreSQL 15 started here. Two hosts run the same recorded trace, so
# the same container id, with different names in their runsc roots (a
# container id is only unique per host); host B's names are hostile (escape
# sequences, a C1 CSI, a bidirectional override). Checked: the names reach
# container_info, container_names, alerts_full and the event views after
# seccheckd forward; alerts --to and containers --to filter by container
# name, pod and namespace on the right host only, and show the names beside
# the id, escaped; events --to prints what events --db does, with the same
# filters; a changed passwd (the row replaced on the host, a higher
# id) is shipped; a forwarder restarted ships nothing twice; names the
# central copy lacks (a host that forwarded before they were shipped) are
# sent once caught up; verify --to prints a hostile host id escaped.
# Usage: names.sh BIN_DIR TRACES_DIR
set -uo pipefail
bin=${1:?usage: names.sh BIN_DIR TRACES_DIR}
traces=${2:?usage: names.sh BIN_DIR TRACES_DIR}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/pg.sh"
. "$here/lib.sh"

fleet_setup fleet-names
pg_start "$dir" || exit 1
cid=runsc-236711   # mixed_syscalls.trace's container

cat >"$dir/rules.yaml" <<'YAML'
- rule: Openat exit
  desc: mixed_syscalls' openat exits
  condition: evt.type = openat and evt.dir = <
  output: "%proc.name opened %fd.name"
  priority: WARNING
YAML
# state HOST NAME POD NAMESPACE: host HOST's runsc root and bundle (lib.sh).
state() { runsc_state "$dir/$1/root" "$dir/$1/bundle" "$2" "$3" "$4"; }
state a app web-1 shop
state b 'ev\u001b]0;owned\u0007il' 'pod\u009b2J' 'kube\u202esys'

daemon() {   # daemon NAME
    rm -f "$dir/$1.sock"
    spawn "d_$1" "$bin/seccheckd" --socket "$dir/$1.sock" --db "$dir/$1.db" --batch-size 256 \
        --rules "$dir/rules.yaml" --alerts-rate 0 --runsc-root "$dir/$1/root" --docker-socket none
    wait_for 20 test -S "$dir/$1.sock"
}
forwarder() {   # forwarder NAME HOST
    spawn "f_$1" "$bin/seccheckd" forward --db "$dir/$1.db" --to "$PG_URL" --host-id "$2" --poll-ms 50 \
        --retry-min-ms 100 --retry-max-ms 500
}
load() {   # load NAME
    "$bin/seccheck-loadgen" --socket "$dir/$1.sock" --trace "$traces/mixed_syscalls.trace" --mode block \
        >>"$dir/load.log" 2>&1
}
local_alerts() { sqlite_c "$dir/$1.db" "SELECT count(*) FROM alerts"; }
central_info_rows() { psql_c "SELECT count(*) FROM container_info WHERE host_id = '$1'"; }
shipped() {   # shipped NAME HOST: caught up, with its alerts and names
    caught_up "$dir/$1.db" "$2" &&
        [ "$(psql_c "SELECT count(*) FROM alerts WHERE host_id = '$2'")" = "$(local_alerts "$1")" ] &&
        [ "$(central_info_rows "$2")" -ge 1 ]
}
no_control() {   # no_control FILE: no C0 control but \n, no DEL, no C1 control or bidi override raw
    LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' "$1" && return 1
    LC_ALL=C grep -q $'\xc2[\x80-\x9f]' "$1" && return 1
    LC_ALL=C grep -q $'\xe2\x80[\xaa-\xae]' "$1" && return 1
    return 0
}

for h in a b; do
    daemon $h || exit 1
    forwarder $h host-$h
    load $h
done
for h in a b; do
    check "host $h: events, alerts and names shipped" wait_for 60 shipped $h host-$h
done
check "host a: its alerts are of the named container" [ "$(sqlite_c "$dir/a.db" \
    "SELECT count(*) FROM alerts WHERE container_id = '$cid'")" = "$(local_alerts a)" -a "$(local_alerts a)" -gt 0 ]
n_alerts=$(local_alerts a)

# ---------------------------------------------------------------- the central views
row_cols="id || '|' || container_id || '|' || state || '|' || name || '|' || image || '|' || image_repository || '|'
          || image_tag || '|' || pod_name || '|' || pod_namespace || '|' || user_name"
check "container_info: each host's row as the host wrote it" [ \
    "$(sqlite_c "$dir/a.db" "SELECT $row_cols FROM container_info")" = \
    "$(psql_c "SELECT $row_cols FROM container_info WHERE host_id = 'host-a'")" -a \
    "$(sqlite_c "$dir/b.db" "SELECT $row_cols FROM container_info")" = \
    "$(psql_c "SELECT $row_cols FROM container_info WHERE host_id = 'host-b'")" -a \
    "$(sqlite_c "$dir/a.db" "SELECT $row_cols FROM container_info")" = \
    "1|$cid|found|app|registry:5000/team/app:v2|registry:5000/team/app|v2|web-1|shop|root" ]
check "container_names: one container id, its own names on each host" [ \
    "$(psql_c "SELECT string_agg(host_id || ':' || container_name, ',' ORDER BY host_id) FROM container_names
               WHERE container_id = '$cid'")" = "host-a:app,host-b:"$'ev\e]0;owned\ail' ]
check "alerts_full: every alert of host a with its container, pod, namespace and image" [ \
    "$(psql_c "SELECT count(*) FROM alerts_full WHERE host_id = 'host-a' AND container_id = '$cid'
               AND container_name = 'app' AND pod_name = 'web-1' AND pod_namespace = 'shop'
               AND image = 'registry:5000/team/app:v2'")" = "$n_alerts" ]
check "alerts_full: host b's alerts carry host b's names, not host a's" [ \
    "$(psql_c "SELECT count(*) FROM alerts_full WHERE host_id = 'host-b' AND container_name = 'app'")" = 0 -a \
    "$(psql_c "SELECT count(*) FROM alerts_full WHERE host_id = 'host-b' AND pod_name = 'pod'||chr(155)||'2J'")" = \
    "$(local_alerts b)" ]
for v in execs files_opened failed_syscalls network processes_per_container; do
    check "$v: host a's rows of the container carry its names" [ \
        "$(psql_c "SELECT count(*) FROM $v WHERE host_id = 'host-a' AND container_id = '$cid'")" -gt 0 -a \
        "$(psql_c "SELECT count(*) FROM $v WHERE host_id = 'host-a' AND container_id = '$cid'
                   AND (container_name, pod_name, pod_namespace) IS DISTINCT FROM ('app', 'web-1', 'shop')")" = 0 ]
done

# ---------------------------------------------------------------- alerts --to, containers --to
alerts() { "$bin/seccheckd" alerts --to "$PG_URL" "$@"; }
count_json() { "$@" --json 2>/dev/null | grep -c '"rule":'; }
check "alerts --to --container NAME: host a's alerts" \
    [ "$(count_json alerts --host-id host-a --container app)" = "$n_alerts" ]
check "alerts --to --container ID still matches" \
    [ "$(count_json alerts --host-id host-a --container "$cid")" = "$n_alerts" ]
check "alerts --to --pod, --namespace: as alerts --db gives them" [ \
    "$(count_json alerts --host-id host-a --pod web-1 --namespace shop)" = \
    "$(count_json "$bin/seccheckd" alerts --db "$dir/a.db" --pod web-1 --namespace shop)" -a \
    "$(count_json alerts --host-id host-a --pod web-1)" = "$n_alerts" ]
check "alerts --to --all-hosts --pod web-1: host a's only (the same id on host b is another container)" [ \
    "$(alerts --all-hosts --pod web-1 --json | grep -c '"hostname"')" = "$n_alerts" -a \
    "$(count_json alerts --host-id host-b --container app)" = 0 ]
alerts --host-id host-a --namespace nothing >"$dir/miss.out" 2>"$dir/miss.err"
check "alerts --to --namespace with no match: said, nothing printed" \
    [ ! -s "$dir/miss.out" -a "$(grep -c "namespace 'nothing': no alert of that container" "$dir/miss.err")" = 1 ]
alerts --host-id host-a >"$dir/a.table"
"$bin/seccheckd" alerts --db "$dir/a.db" >"$dir/a.local.table"
check "alerts --to: the names beside the id, as alerts --db shows them" [ \
    "$(grep -c "NAMESPACE/POD/NAME" "$dir/a.table")" = 1 -a \
    "$(grep -c " $cid  *shop/web-1/app  " "$dir/a.table")" = "$n_alerts" -a \
    "$(grep -c " $cid  *shop/web-1/app  " "$dir/a.local.table")" = "$n_alerts" ]
alerts --host-id host-b --wide >"$dir/b.table"
check "alerts --to: host b's hostile names escaped" no_control "$dir/b.table"
check "... and shown" grep -qF 'kube\u{202e}sys/pod\u{009b}2J/ev\x1b]0;owned\x07il' "$dir/b.table"
"$bin/seccheckd" containers --to "$PG_URL" --all-hosts >"$dir/containers.out" 2>&1
check "containers --to --all-hosts: the container on each host, with its names" [ \
    "$(grep -c "^host-a  *$cid  *app  *web-1  *shop  *registry:5000/team/app:v2  " "$dir/containers.out")" = 1 -a \
    "$(grep -c "^host-b  *$cid  " "$dir/containers.out")" = 1 ]
check "containers --to: escaped" no_control "$dir/containers.out"
"$bin/seccheckd" containers --to "$PG_URL" --host-id host-b --json >"$dir/containers.json" 2>&1
check "containers --to --json: escaped, and still JSON with the names" python3 -c "
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 1 and rows[0]['pod_namespace'] == 'kube\u202esys' and rows[0]['name'] == 'ev\x1b]0;owned\x07il', rows
" "$dir/containers.json"
check "containers --to --json: no raw control characters" no_control "$dir/containers.json"
check "containers --to --pod: per host" [ \
    "$("$bin/seccheckd" containers --to "$PG_URL" --all-hosts --pod web-1 --json | grep -c '"host_id" *: *"host-a"')" = 1 -a \
    "$("$bin/seccheckd" containers --to "$PG_URL" --all-hosts --pod web-1 --json | wc -l)" = 1 ]

# ---------------------------------------------------------------- events --to
events_to() { "$bin/seccheckd" events --to "$PG_URL" --color never "$@"; }
events_db() { "$bin/seccheckd" events --db "$dir/a.db" --color never "$@"; }
same_events() {   # same_events ARGS...: events --to --host-id host-a ARGS prints what events --db a.db ARGS does
    events_to --host-id host-a "$@" >"$dir/ev.central" 2>/dev/null
    events_db "$@" >"$dir/ev.local" 2>/dev/null
    [ -s "$dir/ev.local" ] && cmp -s "$dir/ev.local" "$dir/ev.central"
}
check "events --to: the host's lines, byte for byte" same_events
check "... the container's names beside its id, on both" grep -q " $cid(shop/web-1/app) " "$dir/ev.central"
check "events --to --container NAME, --pod, --namespace: as --db" same_events --container app --pod web-1 --namespace shop
check "events --to --process, --type, -n: as --db" same_events --process cat --type 7 -n 5
check "events --to --container NAME: every event of the container" [ \
    "$(events_to --host-id host-a --container app | wc -l)" = \
    "$(sqlite_c "$dir/a.db" "SELECT count(*) FROM events WHERE container_id = '$cid'")" ]
events_to --host-id host-b --container app >"$dir/evb.out" 2>"$dir/evb.err"
check "events --to: host a's names do not match host b's container" \
    [ ! -s "$dir/evb.out" -a "$(grep -c 'no event of host host-b in the central copy passes the filters' "$dir/evb.err")" = 1 ]
events_to --host-id host-a -o json >"$dir/ev.central.json"
events_db -o json >"$dir/ev.local.json"
check "events --to -o json: events_full's rows, as --db gives them" python3 -c "
import json, sys
l = [json.loads(x) for x in open(sys.argv[1])]
c = [json.loads(x) for x in open(sys.argv[2])]
assert len(l) == len(c) > 0 and l == c, (len(l), len(c))
" "$dir/ev.local.json" "$dir/ev.central.json"

# ---------------------------------------------------------------- an update is shipped
# The container's passwd changes (another size): the daemon reads it again
# when next asked after 10 s, replaces the row (a higher id), and the
# forwarder ships the new one beside the old.
echo 'admin:x:0:0:admin:/root:/bin/sh' >"$dir/a/bundle/rootfs/etc/passwd"
sleep 10.5
load a
local_user() { [ "$(sqlite_c "$dir/a.db" "SELECT user_name FROM container_info")" = "$1" ]; }
central_user() { [ "$(psql_c "SELECT user_name FROM containers WHERE host_id = 'host-a'")" = "$1" ]; }
check "the host replaced its row: the user's new name" wait_for 30 local_user admin
check "... shipped: the central containers view names it" wait_for 30 central_user admin
check "... beside the old row, under the host's new id" [ "$(central_info_rows host-a)" = 2 -a \
    "$(psql_c "SELECT max(id) FROM container_info WHERE host_id = 'host-a'")" = \
    "$(sqlite_c "$dir/a.db" "SELECT id FROM container_info")" ]
check "host a caught up again" wait_for 60 shipped a host-a

# ---------------------------------------------------------------- restart: nothing twice
stop "$f_a"
catch_ups=$(grep -c 'caught up' "$dir/f_a.log")
more_catch_ups() { [ "$(grep -c 'caught up' "$dir/f_a.log")" -gt "$catch_ups" ]; }
before=$(psql_c "SELECT (SELECT count(*) FROM container_info) || ' ' || (SELECT count(*) FROM events) || ' ' ||
                        (SELECT count(*) FROM alerts) || ' ' || (SELECT sum(batches) FROM hosts)")
forwarder a host-a
check "the forwarder restarted and caught up" wait_for 30 more_catch_ups
sleep 0.5
after=$(psql_c "SELECT (SELECT count(*) FROM container_info) || ' ' || (SELECT count(*) FROM events) || ' ' ||
                       (SELECT count(*) FROM alerts) || ' ' || (SELECT sum(batches) FROM hosts)")
check "a restarted forwarder ships nothing twice ($before)" [ "$before" = "$after" ]
check "... names, events and alerts are the host's" same_rows "$dir/a.db" host-a

# A host that forwarded before names were shipped: the central copy has
# every batch but no names. Caught up, the forwarder sends them anyway.
stop "$f_a"
psql_c "DELETE FROM container_info WHERE host_id = 'host-a'" >/dev/null
forwarder a host-a
central_names_back() { [ "$(central_info_rows host-a)" = 1 ] && central_user admin; }
check "names the central copy lacks are shipped with no new batch" wait_for 30 central_names_back
check "... and nothing else again" [ "$(psql_c "SELECT sum(batches) FROM hosts WHERE host_id = 'host-a'")" = \
    "$(sqlite_c "$dir/a.db" "SELECT count(*) FROM batches")" ]
stop "$f_a"

# ---------------------------------------------------------------- verify --to: a hostile host id
hostile=$'host-\xc2\x9b2J\xe2\x80\xae-evil'
stop "$f_b"
spawn f_hostile "$bin/seccheckd" forward --db "$dir/b.db" --to "$PG_URL" --host-id "$hostile" --poll-ms 50
check "a host id with a C1 CSI and a bidi override ships" wait_for 60 caught_up "$dir/b.db" "$hostile"
stop "$f_hostile"
"$bin/seccheckd" verify --to "$PG_URL" --all-hosts >"$dir/verify.out" 2>&1
verify_rc=$?
check "verify --to --all-hosts: every host verifies (exit $verify_rc)" [ $verify_rc = 0 ]
check "verify --to: the hostile host id escaped" no_control "$dir/verify.out"
check "... and named" grep -qF 'ok: host host-\u{009b}2J\u{202e}-evil: ' "$dir/verify.out"
"$bin/seccheckd" verify --to "$PG_URL" --host-id "$hostile" >"$dir/verify1.out" 2>&1
check "verify --to --host-id HOSTILE: escaped too" [ $? = 0 ] && check "... no raw character" no_control "$dir/verify1.out"

stop "$d_a"
stop "$d_b"
if [ $failures != 0 ]; then
    for f in "$dir"/*.log "$dir"/*.out "$dir"/*.err "$dir"/*.table; do echo "---- $f"; tail -8 "$f"; done
    echo "$failures failed"
    exit 1
fi
echo "all passed"
