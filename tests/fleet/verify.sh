#!/usr/bin/env bash
# seccheckd verify --to against a real PostgreSQL 15 started here (issue 19
# items 6 and 11): hosts forwarded from a new database, from one schema
# version 1 wrote and no daemon upgraded, from an upgraded one (rows of both
# versions), and one without --host-id (the machine-id default) all verify,
# the decoded columns included; then central edits of the columns people
# query (process_name, detail as jsonb, a version 1 row's whole detail, a
# newer column set on a version 1 row) are named by host, event id, batch
# and column, exit 1, while --hash-only still passes; --all-hosts checks
# every host; verify without --host-id finds forward's default host. The
# alerts (issue 31 item 7): the chain covers them centrally too, a deleted
# alert named by its id, an altered one by its columns (output as text,
# tags as jsonb), the version 1 host's older batches said not to cover any.
# Usage: verify.sh BIN_DIR TRACES_DIR
set -uo pipefail
bin=${1:?usage: verify.sh BIN_DIR TRACES_DIR}
traces=${2:?usage: verify.sh BIN_DIR TRACES_DIR}
here=$(cd "$(dirname "$0")" && pwd)
fixture_v1="$here/../fixtures/db/schema-v1.db"
. "$here/pg.sh"
. "$here/lib.sh"

fleet_setup fleet-verify
pg_start "$dir" || exit 1

fill() {   # fill NAME TRACE MESSAGES: a daemon stores them, then stops
    local pid
    rm -f "$dir/$1.sock"
    spawn pid "$bin/seccheckd" --socket "$dir/$1.sock" --db "$dir/$1.db" --batch-size 256 "${own_names[@]}"
    wait_for 20 test -S "$dir/$1.sock" || return 1
    "$bin/seccheck-loadgen" --socket "$dir/$1.sock" --trace "$traces/$2.trace" --mode block --messages "$3" \
        >>"$dir/load.log" 2>&1
    local rc=$?
    stop "$pid"
    return $rc
}
ship() {   # ship NAME [--host-id HOST]: forwards NAME.db until caught up
    local name=$1 pid host=${3:-}
    shift
    spawn "f_$name" "$bin/seccheckd" forward --db "$dir/$name.db" --to "$PG_URL" --poll-ms 50 "$@"
    eval "pid=\$f_$name"
    if [ -z "$host" ]; then   # the default: the forwarder names it
        wait_for 10 grep -q " as host " "$dir/f_$name.log" || return 1
        host=$(sed -n 's/.* as host //p' "$dir/f_$name.log")
    fi
    wait_for 60 caught_up "$dir/$name.db" "$host"
    local rc=$?
    stop "$pid"
    return $rc
}
verify() {   # verify ARGS...: its output in $out, its status in $status
    out=$("$bin/seccheckd" verify --to "$PG_URL" "$@" 2>&1)
    status=$?
    echo "$out" | sed 's/^/     | /' | head -30
}
batch_of() {   # batch_of HOST EVENT
    psql_c "SELECT id FROM batches WHERE host_id = '$1' AND $2 BETWEEN first_event_id AND last_event_id"
}
named() {   # named HOST EVENT COLUMNS: verify's line for that event is in $out
    local verb=is
    [[ $3 == *,* ]] && verb=are
    grep -qxF "host $1: event $2 (batch $(batch_of "$1" "$2")): altered: $3 $verb not what its raw decodes to" <<<"$out"
}

# ---------------------------------------------------------------- four hosts
check "a: stored" fill a mixed_syscalls 3000
check "a: more stored" fill a exec_loop 2000
cp "$fixture_v1" "$dir/v1raw.db"
cp "$fixture_v1" "$dir/v1.db"
check "v1: the version 1 fixture upgraded and appended to" fill v1 mixed_syscalls 1235
sqlite_c "$dir/a.db" ".backup '$dir/m.db'"
check "host-a shipped" ship a --host-id host-a
check "host-v1raw (never upgraded) shipped" ship v1raw --host-id host-v1raw
check "host-v1 (both versions) shipped" ship v1 --host-id host-v1
check "m shipped without --host-id" ship m
default_host=$(psql_c "SELECT host_id FROM hosts WHERE host_id NOT LIKE 'host-%'")
check "forward's default host id is /etc/machine-id or the hostname ($default_host)" \
    [ "$default_host" = "$(cat /etc/machine-id 2>/dev/null || hostname)" ]

for h in host-a host-v1raw host-v1; do
    verify --host-id "$h"
    check "$h verifies, decoded columns included" \
        [ $status = 0 -a "$(grep -c "^ok: host $h: [0-9]* batches, [0-9]* events, [0-9]* alerts verified$" <<<"$out")" = 1 ]
done
verify
check "verify without --host-id checks forward's default host" \
    bash -c "[ $status = 0 ] && grep -q '^ok: host $default_host: ' <<<'$out'"
verify --all-hosts
check "--all-hosts verifies every host" [ $status = 0 -a "$(grep -c '^ok: host ' <<<"$out")" = 4 ]
check "... and says so" grep -qx "ok: 4 hosts verified" <<<"$out"
verify --all-hosts --host-id host-a
check "--all-hosts with --host-id is a usage error" [ $status = 2 ]

# ---------------------------------------------------------------- central edits
# Outside the chain: raw and the hash stay, the columns people query change.
a_proc=$(psql_c "SELECT id FROM events WHERE host_id = 'host-a' AND process_name IS NOT NULL ORDER BY id LIMIT 1 OFFSET 100")
a_detail=$(psql_c "SELECT id FROM events WHERE host_id = 'host-a' AND detail IS NOT NULL ORDER BY id LIMIT 1 OFFSET 2000")
a_both=$((a_detail + 1))
psql_c "UPDATE events SET process_name = 'evil' WHERE host_id = 'host-a' AND id IN ($a_proc, $a_both);
        UPDATE events SET detail = detail || '{\"x\": 1}' WHERE host_id = 'host-a' AND id IN ($a_detail, $a_both);
        UPDATE events SET detail = detail - 'context_data' WHERE host_id = 'host-v1raw' AND id = 5;
        UPDATE events SET is_exec_session = 1 WHERE host_id = 'host-v1raw' AND id = 6;
        UPDATE events SET cwd = cwd || '/x' WHERE host_id = 'host-v1' AND id = 1240;
        UPDATE events SET detail = detail || '{\"context_data\": {}}' WHERE host_id = 'host-v1' AND id = 1241" >/dev/null
verify --host-id host-a
check "host-a: exit 1" [ $status = 1 ]
check "host-a: the renamed process is named" named host-a "$a_proc" process_name
check "host-a: the edited detail (jsonb) is named" named host-a "$a_detail" detail
check "host-a: both in one event" named host-a "$a_both" "process_name, detail"
check "host-a: counted" grep -q "^host host-a: altered: 3 events with decoded columns" <<<"$out"
verify --host-id host-v1raw
check "host-v1raw: a version 1 row's whole detail and newer column are named" \
    bash -c "[ $status = 1 ] && grep -q 'event 5 (batch 1): altered: detail is' <<<'$out' &&
        grep -q 'event 6 (batch 1): altered: is_exec_session is' <<<'$out'"
verify --host-id host-v1
check "host-v1: edits of both versions' rows are named" \
    bash -c "[ $status = 1 ] && grep -q 'event 1240 (batch [0-9]*): altered: cwd is' <<<'$out' &&
        grep -q 'event 1241 (batch [0-9]*): altered: detail is' <<<'$out' && grep -q 'altered: 2 events' <<<'$out'"
verify --host-id host-a --hash-only
check "--hash-only: the chain still verifies, and it says what it skipped" \
    bash -c "[ $status = 0 ] && grep -q 'hash-only: the decoded columns and detail not compared' <<<'$out'"
verify --all-hosts
check "--all-hosts: exit 1, three of four hosts named" [ $status = 1 ]
check "... and summed up" grep -qx "3 of 4 hosts did not verify (above)" <<<"$out"
check "... the clean host still verifies among them" grep -q "^ok: host $default_host: " <<<"$out"

# Many edits: 20 named, the rest counted.
psql_c "UPDATE events SET cwd = '/elsewhere' WHERE host_id = '$default_host' AND cwd IS NOT NULL" >/dev/null
edited=$(psql_c "SELECT count(*) FROM events WHERE host_id = '$default_host' AND cwd = '/elsewhere'")
verify
check "$edited edited events: 20 named, the rest counted" \
    bash -c "[ $status = 1 ] && [ \$(grep -c ': event ' <<<'$out') = 20 ] &&
        grep -q 'and $((edited - 20)) more altered events' <<<'$out' && grep -q 'altered: $edited events' <<<'$out'"

# ---------------------------------------------------------------- alerts
cat >"$dir/r.yaml" <<'RULES'
- rule: opens
  desc: d
  condition: evt.type in (open, openat)
  output: "%proc.name opened %fd.name"
  priority: WARNING
  tags: [t]
RULES
fill_alerts() {   # fill_alerts NAME: mixed_syscalls' opens, each an alert
    local pid
    rm -f "$dir/$1.sock"
    spawn pid "$bin/seccheckd" --socket "$dir/$1.sock" --db "$dir/$1.db" --batch-size 256 --rules "$dir/r.yaml" \
        --alerts-out none "${own_names[@]}"
    wait_for 20 test -S "$dir/$1.sock" || return 1
    "$bin/seccheck-loadgen" --socket "$dir/$1.sock" --trace "$traces/mixed_syscalls.trace" --mode block \
        --messages 3000 >>"$dir/load.log" 2>&1
    local rc=$?
    stop "$pid"
    return $rc
}
check "al: stored with its alerts" fill_alerts al
cp "$dir/al.db" "$dir/al2.db"
check "host-al shipped" ship al --host-id host-al
check "host-al2 shipped" ship al2 --host-id host-al2
al_alerts=$(psql_c "SELECT count(*) FROM alerts WHERE host_id = 'host-al'")
verify --host-id host-al
check "host-al: its $al_alerts alerts verify" \
    bash -c "[ $status = 0 ] && [ $al_alerts -gt 10 ] && grep -q '^ok: host host-al: [0-9]* batches, [0-9]* events, $al_alerts alerts verified$' <<<'$out'"
verify --host-id host-v1
check "host-v1: its batches written before alerts were chained are said" \
    grep -q "^host host-v1: note: [0-9]* batches were written before alerts were chained" <<<"$out"
al_batch=$(psql_c "SELECT id FROM batches WHERE host_id = 'host-al' AND 1 BETWEEN first_alert_id AND first_alert_id + alerts - 1")
psql_c "DELETE FROM alerts WHERE host_id = 'host-al' AND id = 1;
        UPDATE alerts SET output = 'nothing to see' WHERE host_id = 'host-al' AND id = 2;
        UPDATE alerts SET output = 'nothing to see' WHERE host_id = 'host-al2' AND id = 2;
        UPDATE alerts SET tags = '[\"x\"]' WHERE host_id = 'host-al2' AND id = 3" >/dev/null
verify --host-id host-al
check "host-al: the deleted alert is named by its id" \
    bash -c "[ $status = 1 ] && grep -q '^host host-al: batch $al_batch: deleted alerts: [0-9]* of [0-9]* sealed alerts present; missing: alert 1$' <<<'$out'"
verify --host-id host-al2
check "host-al2: the altered alerts are named, output and tags (jsonb)" \
    bash -c "[ $status = 1 ] && grep -q '^host host-al2: alert 2 (batch $al_batch): altered: output is not what was sealed$' <<<'$out' &&
        grep -q '^host host-al2: alert 3 (batch [0-9]*): altered: tags is not what was sealed$' <<<'$out' &&
        grep -q 'altered: 2 alerts with columns that differ' <<<'$out'"
verify --host-id host-al2 --hash-only
check "host-al2: --hash-only: the chain verifies" [ $status = 0 ]

if [ $failures != 0 ]; then
    for f in "$dir"/*.log; do echo "---- $f"; tail -15 "$f"; done
    echo "$failures failed"
    exit 1
fi
echo "all passed"
