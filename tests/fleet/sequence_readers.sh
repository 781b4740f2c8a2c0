#!/usr/bin/env bash
# seccheckd alerts --to --json against a real PostgreSQL 15 started here:
# a sequence's alert and an alert after evicted partial matches, shipped by
# seccheckd forward, give the lines the host's database gives (alerts --db
# --json, the lines --alerts-out wrote), seccheckd_evicted and
# seccheckd_sequence included, and alerts show --to tells the sequence's
# steps as alerts show --db does (a host's forged sequence column refused
# gracefully); a central copy whose alerts lack the two columns (a
# forwarder before sequences) still reads, without the keys and steps.
# The packets: tests/support/gvisor_packets.py, with Debian's python3-protobuf.
# Usage: sequence_readers.sh BIN_DIR TRACES_DIR
set -uo pipefail
bin=${1:?usage: sequence_readers.sh BIN_DIR TRACES_DIR}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/pg.sh"
. "$here/lib.sh"

fleet_setup fleet-sequence-readers
pg_start "$dir" || exit 1

cat >"$dir/rules.yaml" <<'YAML'
- sequence: Written then run
  desc: a file written, then run as a program
  within: 1h
  steps:
    - name: write
      condition: evt.type in (open, openat) and evt.is_open_write = true
    - name: run
      condition: evt.type = execve and evt.res = SUCCESS and proc.exepath = %write.fd.name
  output: "%write.fd.name run as %proc.cmdline"
  priority: CRITICAL
- rule: Any exec
  desc: every program run
  condition: evt.type = execve and evt.res = SUCCESS
  output: "ran %proc.exepath"
  priority: NOTICE
YAML
# one partial match per connection: curl's second write evicts its first
spawn d_r "$bin/seccheckd" --socket "$dir/r.sock" --db "$dir/r.db" --rules "$dir/rules.yaml" \
    --sequence-partials 1 --alerts-out "$dir/alerts.out" "${own_names[@]}"
wait_for 20 test -S "$dir/r.sock"
for story in download_exec_benign download_exec; do
    /usr/bin/python3 "$here/../support/gvisor_packets.py" trace "$dir" "$story" >>"$dir/load.log" 2>&1
    "$bin/seccheck-loadgen" --socket "$dir/r.sock" --trace "$dir/$story.trace" --mode block >>"$dir/load.log" 2>&1
done
sequence_alerted() { [ "$(sqlite_c "$dir/r.db" "SELECT count(*) FROM alerts WHERE sequence IS NOT NULL")" = 1 ]; }
check "the daemon raised the sequence's alert" wait_for 20 sequence_alerted
stop "$d_r"
check "... and said an eviction in an alert" [ "$(sqlite_c "$dir/r.db" "SELECT count(*) FROM alerts WHERE evicted = 1")" = 1 ]

spawn f_r "$bin/seccheckd" forward --db "$dir/r.db" --to "$PG_URL" --host-id host-r --poll-ms 50
check "the host shipped" wait_for 30 caught_up "$dir/r.db" host-r
stop "$f_r"
check "the central copy keeps both columns" \
    [ "$(psql_c "SELECT count(*) FROM alerts WHERE sequence IS NOT NULL OR evicted > 0")" = 2 ]

"$bin/seccheckd" alerts --db "$dir/r.db" --json >"$dir/local.json" 2>"$dir/local.err"
"$bin/seccheckd" alerts --to "$PG_URL" --host-id host-r --json >"$dir/central.json" 2>"$dir/central.err"
check "the lines carry the keys where the live line has them" \
    grep -q '"rule":"Written then run","seccheckd_sequence":{"steps":\[{"name":"write","event_id":[0-9]' \
    "$dir/central.json"
check "... seccheckd_evicted" grep -q '"rule":"Any exec","seccheckd_evicted":1,"source":' "$dir/central.json"
check "alerts --db --json gives the lines --alerts-out wrote" cmp "$dir/alerts.out" "$dir/local.json"
# jsonb keeps output_fields its own way (key order, spaces): the same JSON,
# the line's own keys in the same order
same_lines() {
    /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (open(p).read().splitlines() for p in sys.argv[1:])
keys = lambda line: [k for k, _ in json.loads(line, object_pairs_hook=lambda kv: kv)]
sys.exit(0 if len(a) == len(b) > 0 and all(json.loads(x) == json.loads(y) and keys(x) == keys(y)
                                           for x, y in zip(a, b)) else 1)
PY
}
check "alerts --to --json gives the same lines" same_lines "$dir/local.json" "$dir/central.json"

# alerts show from the central copy tells the sequence's steps as the host's database does.
seq_id=$(sqlite_c "$dir/r.db" "SELECT id FROM alerts WHERE sequence IS NOT NULL")
"$bin/seccheckd" alerts show "$seq_id" --db "$dir/r.db" >"$dir/show.local" 2>&1
"$bin/seccheckd" alerts show "$seq_id" --to "$PG_URL" --host-id host-r >"$dir/show.central" 2>"$dir/show.err"
check "alerts show --to: the sequence's steps, write then run" \
    bash -c "grep -q '^Sequence of 2 steps' '$dir/show.central' && grep -q '^  1\. write  event [0-9]' '$dir/show.central' &&
             grep -q '^  2\. run  event [0-9]* .*(the alert.s event)' '$dir/show.central'"
check "... the story the host's database tells, from the steps on" \
    cmp <(sed -n '/^Sequence of/,$p' "$dir/show.local") <(sed -n '/^Sequence of/,$p' "$dir/show.central")
"$bin/seccheckd" alerts show "$seq_id" --db "$dir/r.db" --json >"$dir/show.local.json" 2>&1
"$bin/seccheckd" alerts show "$seq_id" --to "$PG_URL" --host-id host-r --json >"$dir/show.central.json" 2>&1
check "... and --json: the same steps" /usr/bin/python3 - "$dir/show.local.json" "$dir/show.central.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
sys.exit(0 if a.get("sequence") and len(a["sequence"]["steps"]) == 2 and a["sequence"] == b.get("sequence") else 1)
PY

# A compromised host's own rows: a sequence column that is not JSON, or steps of the wrong types.
other_id=$(sqlite_c "$dir/r.db" "SELECT min(id) FROM alerts WHERE sequence IS NULL")
psql_c "UPDATE alerts SET sequence = 'not json {' WHERE host_id = 'host-r' AND id = $other_id" >/dev/null
"$bin/seccheckd" alerts show "$other_id" --to "$PG_URL" --host-id host-r >"$dir/show.bad" 2>&1
rc=$?
check "a sequence column that is not JSON: shown without steps, exit 0" \
    bash -c "[ $rc = 0 ] && grep -q '^The event' '$dir/show.bad' && ! grep -q '^Sequence of' '$dir/show.bad'"
psql_c "UPDATE alerts SET sequence = '{\"steps\": [{\"name\": 5, \"event_id\": \"x\"}, 7, null], \"sandbox_dropped\": \"y\"}'
        WHERE host_id = 'host-r' AND id = $other_id" >/dev/null
"$bin/seccheckd" alerts show "$other_id" --to "$PG_URL" --host-id host-r >"$dir/show.bad" 2>&1
rc=$?
check "steps of the wrong types: each shown as unknown, exit 0" \
    bash -c "[ $rc = 0 ] && grep -q '^Sequence of 3 steps' '$dir/show.bad' && grep -q '^  1\. ?' '$dir/show.bad'"

# A central copy from a forwarder before sequences: no such columns.
psql_c "ALTER TABLE alerts DROP COLUMN sequence; ALTER TABLE alerts DROP COLUMN evicted"
"$bin/seccheckd" alerts --to "$PG_URL" --host-id host-r --json >"$dir/old.json" 2>"$dir/old.err"
check "without the columns: every alert, without the keys" \
    [ "$(grep -c '"rule":' "$dir/old.json")" = "$(grep -c . "$dir/local.json")" ] && ! grep -q seccheckd_ "$dir/old.json"
"$bin/seccheckd" alerts show "$seq_id" --to "$PG_URL" --host-id host-r >"$dir/show.old" 2>&1
check "... and alerts show tells the story without its steps" \
    bash -c "grep -q '^The event' '$dir/show.old' && ! grep -q '^Sequence of' '$dir/show.old'"

if [ $failures != 0 ]; then
    for f in local.err central.err old.err show.err show.local show.central f_r.log d_r.log load.log; do echo "---- $f"; tail -20 "$dir/$f"; done
    diff "$dir/local.json" "$dir/central.json" | head -10
    echo "$failures failed"
    exit 1
fi
echo "all passed"
