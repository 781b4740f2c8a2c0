#!/usr/bin/env bash
# seccheckd alerts --to against a real PostgreSQL 15 started here, the
# central copy of a host whose daemon ran rules over a recorded trace: the
# host's name beside its id, every column escaped (a row with an escape
# sequence for a priority, shipped as the host wrote it), --since on the
# daemon's receive time (the trace's own times are days old), --rule as a
# part of the name in any case, a miss that says what did not match, and
# alerts show --to telling the story the host's database tells.
# Usage: readers.sh BIN_DIR TRACES_DIR
set -uo pipefail
bin=${1:?usage: readers.sh BIN_DIR TRACES_DIR}
traces=${2:?usage: readers.sh BIN_DIR TRACES_DIR}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/pg.sh"
. "$here/lib.sh"

fleet_setup fleet-readers
pg_start "$dir" || exit 1

cat >"$dir/rules.yaml" <<'YAML'
- rule: Openat exit
  desc: mixed_syscalls' openat exits
  condition: evt.type = openat and evt.dir = <
  output: "%proc.name opened %fd.name"
  priority: WARNING
- rule: Cat opens
  desc: cat's openat exits
  condition: evt.type = openat and evt.dir = < and proc.name = cat
  output: "cat opened %fd.name"
  priority: CRITICAL
YAML
# --rule-matching all: "Cat opens" holds for events "Openat exit" holds for first
spawn d_r "$bin/seccheckd" --socket "$dir/r.sock" --db "$dir/r.db" --rules "$dir/rules.yaml" --alerts-rate 0 \
    --rule-matching all "${own_names[@]}"
wait_for 20 test -S "$dir/r.sock"
"$bin/seccheck-loadgen" --socket "$dir/r.sock" --trace "$traces/mixed_syscalls.trace" --mode block \
    >>"$dir/load.log" 2>&1
wait_for 20 [ "$(sqlite_c "$dir/r.db" "SELECT count(*) FROM alerts")" -gt 0 ]
stop "$d_r"
# A row the host wrote itself (a compromised host's): an OSC sequence and a
# screen clear for a priority, shipped with the last batch.
sqlite_c "$dir/r.db" "INSERT INTO alerts(event_id, rule, priority, time_ns, container_id, output, output_fields, tags)
    SELECT max(id), 'Hostile row', char(27) || ']0;owned' || char(7) || char(27) || '[2J', 1, 'c1', 'x', '{}', '[]'
    FROM events"
local_alerts=$(sqlite_c "$dir/r.db" "SELECT count(*) FROM alerts")
local_openat=$(sqlite_c "$dir/r.db" "SELECT count(*) FROM alerts WHERE rule = 'Openat exit'")
spawn f_r "$bin/seccheckd" forward --db "$dir/r.db" --to "$PG_URL" --host-id host-r --poll-ms 50
check "the host shipped" wait_for 30 caught_up "$dir/r.db" host-r
check "... its alerts too" wait_for 10 [ "$(psql_c "SELECT count(*) FROM alerts")" = "$local_alerts" ]
stop "$f_r"
name=$(hostname)
check "the central hosts table holds the host's name" [ "$(psql_c "SELECT hostname FROM hosts")" = "$name" ]

alerts() { "$bin/seccheckd" alerts --to "$PG_URL" "$@"; }
alerts --all-hosts >"$dir/table.out" 2>"$dir/table.err"
check "the table's HOST column is the host's name, beside its id" \
    grep -q "^HOST              HOST ID         ID  " "$dir/table.out"
check "... each row: name, then id" \
    [ "$(grep -c "^$(printf %-16s "$name")  host-r          " "$dir/table.out")" = "$local_alerts" ]
check "every column escaped: no control character reaches the terminal" \
    bash -c "! LC_ALL=C grep -q \$'[\x01-\x09\x0b-\x1f\x7f]' '$dir/table.out'"
check "... the priority shown escaped" grep -q '\\x1b]0;own\.\.\.' "$dir/table.out"
check "the sandbox's days-old time in a column of its own" grep -q "SANDBOX TIME" "$dir/table.out"
check "--since 1h: the daemon's receive time, not the trace's" \
    [ "$(alerts --all-hosts --json --since 1h | grep -c '"rule":')" = "$local_alerts" ]
check "--rule OPENAT: a part of the name, in any case" \
    [ "$(alerts --host-id host-r --json --rule OPENAT | grep -c '"rule":')" = "$local_openat" ]
check "--json: Falco's hostname is the host's name" \
    [ "$(alerts --host-id host-r --json | grep -c "\"hostname\":\"$name\"")" = "$local_alerts" ]
alerts --host-id host-r --rule nothing >"$dir/miss.out" 2>"$dir/miss.err"
check "a miss says what did not match, and what rules there are" \
    grep -q "no rule's name contains it (the rules that raised alerts: Openat exit" "$dir/miss.err"
# --follow says so too once the stored alerts are read (issue 31 item 8:
# it printed nothing at all, as if waiting on alerts that could never pass)
spawn follow_miss "$bin/seccheckd" alerts --to "$PG_URL" --host-id host-r --follow --rule nothing
check "--follow with a filter nothing passes says so, and waits" wait_for 20 \
    grep -q "none of the $local_alerts alerts in the central copy (host host-r) pass the filters (waiting for new ones)" \
    "$dir/follow_miss.log"
check "... naming the filter" grep -q "  --rule 'nothing': no rule's name contains it" "$dir/follow_miss.log"
stop "$follow_miss"
check "... and goes on following until stopped" [ "$stop_status" = 0 ]
spawn follow_empty "$bin/seccheckd" alerts --to "$PG_URL" --host-id host-none --follow
check "--follow where the host has no alert yet says it waits for them" wait_for 20 \
    grep -q "no alerts in the central copy (host host-none) yet; waiting for them" "$dir/follow_empty.log"
stop "$follow_empty"
spawn follow_quiet "$bin/seccheckd" alerts --to "$PG_URL" --host-id host-r --follow
sleep 1.5
stop "$follow_quiet"
check "--follow with alerts that pass (printed as new ones come): nothing to explain" \
    [ ! -s "$dir/follow_quiet.log" ]

# alerts show from the central copy tells what the host's database tells.
id=$(sqlite_c "$dir/r.db" "SELECT min(id) FROM alerts WHERE rule = 'Cat opens'")
"$bin/seccheckd" alerts show "$id" --db "$dir/r.db" >"$dir/show.local" 2>&1
"$bin/seccheckd" alerts show "$id" --to "$PG_URL" --host-id host-r >"$dir/show.central" 2>"$dir/show.err"
check "alerts show --to: the ancestry from the container's first process (sh[1]) to cat" \
    bash -c "grep -q '^  sh\[1\] .* start ' '$dir/show.central' && grep -q '^  cat\[[0-9]*\] .* exec .*/usr/bin/cat cat ' '$dir/show.central'"
check "... the host named, by name and id" grep -q "^  host       $name (the central copy (host host-r))" "$dir/show.central"
check "... the event, its ancestry, window and nearby alerts as the host's database tells them" \
    cmp <(sed -n '/^The event/,$p' "$dir/show.local") <(sed -n '/^The event/,$p' "$dir/show.central")
"$bin/seccheckd" alerts show "$id" --db "$dir/r.db" --json >"$dir/show.local.json"
"$bin/seccheckd" alerts show "$id" --to "$PG_URL" --host-id host-r --json >"$dir/show.central.json"
check "... and --json: one document, the same story, the whole message" python3 - "$dir/show.local.json" \
    "$dir/show.central.json" <<'PY'
import json, sys
l, c = (json.load(open(p)) for p in sys.argv[1:])
assert l["ancestry"] == c["ancestry"] and l["window"] == c["window"] and l["alerts_nearby"] == c["alerts_nearby"]
assert l["event"]["message"] == c["event"]["message"] and c["event"]["message"]["pathname"]
assert c["alert"]["hostname"] and [p["pid"] for p in c["ancestry"]][0] == 1
PY
"$bin/seccheckd" alerts show 999999 --to "$PG_URL" --host-id host-r >/dev/null 2>"$dir/show.none"
check "... an alert the central copy lacks: exit 1, said" grep -q "has no alert 999999" "$dir/show.none"

if [ $failures != 0 ]; then
    for f in table.err miss.err show.err show.central f_r.log; do echo "---- $f"; tail -20 "$dir/$f"; done
    echo "$failures failed"
    exit 1
fi
echo "all passed"
