#!/usr/bin/env bash
# Names follow the sandbox in the central copy too (issue 32 item 1), against
# a real PostgreSQL 15 started here. One host, two sandboxes (packets of
# tests/support/gvisor_packets.py): the victim's reads /etc/shadow in its
# own container (payments/payments-db-0/db in its runsc state file), a
# tenant's reads it in the name of the victim's container id. After
# seccheckd forward: alerts_full and the event views give the victim's names
# to the victim's rows only; alerts --to labels the forged alert !foreign,
# alerts --to --pod and events --to --namespace list the victim's own;
# the containers view and containers --to show the forged event as a row of
# its own, lookup foreign.
# Usage: owners.sh BIN_DIR TRACES_DIR
set -uo pipefail
bin=${1:?usage: owners.sh BIN_DIR TRACES_DIR}
here=$(cd "$(dirname "$0")" && pwd)
packets="$here/../support/gvisor_packets.py"
. "$here/pg.sh"
. "$here/lib.sh"

fleet_setup fleet-owners
pg_start "$dir" || exit 1

cat >"$dir/rules.yaml" <<'YAML'
- rule: Shadow read
  desc: /etc/shadow opened
  condition: evt.type in (open, openat) and fd.name = /etc/shadow
  output: "shadow read (ns=%k8s.ns.name container=%container.id)"
  priority: WARNING
YAML
mkdir -p "$dir/root"
state() {   # state ID NAMESPACE POD NAME: ID's state file, its own sandbox's root container
    cat >"$dir/root/$1_sandbox:$1.state" <<JSON
{"id": "$1", "spec": {"root": {"path": "/nonexistent"}, "annotations": {"io.kubernetes.cri.container-name": "$4",
 "io.kubernetes.cri.sandbox-name": "$3", "io.kubernetes.cri.sandbox-namespace": "$2"}}}
JSON
}
state victim-ctr payments payments-db-0 db
state tenant-ctr team-b job-7 worker

spawn d "$bin/seccheckd" --socket "$dir/s.sock" --db "$dir/h.db" --rules "$dir/rules.yaml" --alerts-rate 0 \
    --alerts-out none --runsc-root "$dir/root" --docker-socket none
wait_for 20 test -S "$dir/s.sock" || { cat "$dir/d.log"; exit 1; }
for story in shadow_victim shadow_forger; do
    /usr/bin/python3 "$packets" send "$dir/s.sock" "$story" || { echo "FAIL: gvisor_packets.py send $story"; exit 1; }
done
closed() { [ "$(sqlite_c "$dir/h.db" "SELECT count(*) FROM connections WHERE close_ns IS NOT NULL")" = 2 ]; }
check "both sandboxes stored" wait_for 20 closed
stop "$d"
spawn f "$bin/seccheckd" forward --db "$dir/h.db" --to "$PG_URL" --host-id host-a --poll-ms 50
shipped() { caught_up "$dir/h.db" host-a && [ "$(psql_c "SELECT count(*) FROM container_info")" -ge 2 ]; }
check "shipped" wait_for 60 shipped
stop "$f"

q() { psql_c "$1"; }
check "alerts_full: the victim's names on its own alert only" [ \
    "$(q "SELECT count(*) FROM alerts_full WHERE pod_name = 'payments-db-0'")" = 1 -a \
    "$(q "SELECT count(*) FROM alerts_full WHERE container_id = 'victim-ctr' AND pod_name IS NULL")" = 1 ]
check "files_opened: the same" [ \
    "$(q "SELECT count(*) FROM files_opened WHERE pathname = '/etc/shadow' AND pod_namespace = 'payments'")" = 1 -a \
    "$(q "SELECT count(*) FROM files_opened WHERE pathname = '/etc/shadow'")" = 2 ]
check "containers view: the forged event a row of its own, lookup foreign" [ \
    "$(q "SELECT events || '|' || alerts FROM containers WHERE container_id = 'victim-ctr' AND lookup = 'found'
          AND pod_name = 'payments-db-0'")" = "2|1" -a \
    "$(q "SELECT events || '|' || alerts || '|' || sandbox FROM containers WHERE container_id = 'victim-ctr'
          AND lookup = 'foreign' AND name IS NULL")" = "1|1|tenant-ctr" ]

to() { "$bin/seccheckd" "$@" --to "$PG_URL" --host-id host-a 2>&1; }
to alerts >"$dir/alerts.out"
check "alerts --to: the victim's names once, the forged alert labelled" [ \
    "$(grep -c 'payments/payments-db-0/db' "$dir/alerts.out")" = 1 -a \
    "$(grep -c '!foreign.*shadow read (ns=<NA> container=victim-ctr)' "$dir/alerts.out")" = 1 ]
check "alerts --to --pod: the victim's own alert" [ "$(to alerts --pod payments-db-0 --json | grep -c '"rule":')" = 1 ]
check "events --to --namespace: the victim's own events" [ "$(to events --namespace payments | wc -l)" = 2 ]
check "events --to --container ID: every event naming it, the forged one labelled" [ \
    "$(to events --container victim-ctr | grep -c 'victim-ctr(!foreign)')" = 1 ]
to containers >"$dir/containers.out"
check "containers --to: two rows of the id, one foreign" [ \
    "$(grep -c '^victim-ctr ' "$dir/containers.out")" = 2 -a "$(grep -c ' foreign$' "$dir/containers.out")" = 1 ]

if [ $failures != 0 ]; then
    for f in "$dir"/*.log "$dir"/*.out; do echo "---- $f"; tail -8 "$f"; done
    echo "$failures failed"
    exit 1
fi
echo "all passed"
