#!/usr/bin/env bash
# Partitions: a stream of 2 (nats-setup --partitions 2) on a 3-node
# nats-server cluster started here, four hosts hashing to both, and two
# consumers, seccheckd central --partition 0 and --partition 1, each into a
# PostgreSQL database of its own (one server started here); a third,
# seccheckd central with a thread per partition, reads the same stream into
# a third database. The servers' max_payload is small (64 KiB), so a host
# with large batches sends them in chunks, and one host sends its messages
# uncompressed. Each host lands in its partition's database only, its rows
# the local ones; the readers given both partitions' databases (several
# --to) print what they print over the one database that holds every host,
# and verify --to passes over both.
# Usage: nats_partitions.sh BIN_DIR TRACES_DIR
set -uo pipefail
bin=${1:?usage: nats_partitions.sh BIN_DIR TRACES_DIR}
traces=${2:?usage: nats_partitions.sh BIN_DIR TRACES_DIR}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/pg.sh"
. "$here/lib.sh"
. "$here/nats.sh"

fleet_setup fleet-nats-parts
hosts=(host-a host-b host-c host-d)   # FNV-1a: a and c hash to partition 1, b and d to 0
nats_user admin admin-pw admin
nats_user central pw-c central
for h in "${hosts[@]}"; do nats_user "$h" "pw-$h" host; done
NATS_MAX_PAYLOAD=65536 nats_start || exit 1
pg_start "$dir" || exit 1
for db in p0 p1 pall; do psql_c "CREATE DATABASE $db" >/dev/null; done
url() { echo "${PG_URL/\/postgres\?//$1?}"; }   # the server's database $1
check "nats-setup --partitions 2" "$bin/seccheckd" nats-setup --to "$NATS_URLS" \
    --nats-auth "$dir/nats/admin.auth" --partitions 2 --max-bytes 512M

cat >"$dir/rules.yaml" <<'YAML'
- rule: Openat exit
  desc: openat exits
  condition: evt.type = openat and evt.dir = <
  output: "%proc.name opened %fd.name"
  priority: WARNING
YAML
# host-a: batches of up to 8192 events, far more than 64 KiB even compressed.
batch_size() { case $1 in host-a) echo 8192 ;; *) echo 256 ;; esac; }
extra() { case $1 in host-b) echo "--compress 0" ;; *) echo "" ;; esac; }
for h in "${hosts[@]}"; do
    spawn "d_${h#host-}" "$bin/seccheckd" --socket "$dir/$h.sock" --db "$dir/$h.db" --batch-size "$(batch_size "$h")" \
        --rules "$dir/rules.yaml" --alerts-rate 0 "${own_names[@]}"
done
for h in "${hosts[@]}"; do
    wait_for 20 test -S "$dir/$h.sock"
    # shellcheck disable=SC2046
    spawn "f_${h#host-}" "$bin/seccheckd" forward --db "$dir/$h.db" --to "$NATS_URLS" \
        --nats-auth "$dir/nats/$h.auth" --host-id "$h" --poll-ms 50 --retry-min-ms 100 --stats-interval 2 \
        --metrics-listen "unix:$dir/$h.metrics" $(extra "$h")
done
for k in 0 1; do
    spawn "c$k" "$bin/seccheckd" central --from "$NATS_URLS" --to "$(url "p$k")" --nats-auth "$dir/nats/central.auth" \
        --partition "$k" --retry-min-ms 100 --stats-interval 2
done
# Consumers of their own (another durable name; the central user's
# permissions name seccheck-central only, so admin's).
spawn c_all "$bin/seccheckd" central --from "$NATS_URLS" --to "$(url pall)" --nats-auth "$dir/nats/admin.auth" \
    --durable every-partition --retry-min-ms 100 --stats-interval 2
for h in "${hosts[@]}"; do
    trace=mixed_syscalls
    [ "$h" = host-d ] && trace=redis_rw
    spawn "load_${h#host-}" "$bin/seccheck-loadgen" --socket "$dir/$h.sock" --trace "$traces/$trace.trace" \
        --mode block --messages 20000
done
for h in "${hosts[@]}"; do
    var="load_${h#host-}"
    wait "${!var}"
done

part_of() { case $1 in host-a | host-c) echo 1 ;; *) echo 0 ;; esac; }
for h in "${hosts[@]}"; do
    k=$(part_of "$h")
    check "$h caught up in its partition's database (p$k)" \
        wait_for 60 env PG_URL="$(url "p$k")" bash -c ". '$here/pg.sh'; . '$here/lib.sh'; caught_up '$dir/$h.db' $h"
    check "$h: its rows there are the local ones" env PG_URL="$(url "p$k")" \
        bash -c ". '$here/pg.sh'; . '$here/lib.sh'; dir='$dir'; same_rows '$dir/$h.db' $h && same_alerts '$dir/$h.db' $h 0"
    check "$h: nothing of it in the other partition's database" \
        [ "$(PG_URL=$(url "p$((1 - k))") psql_c "SELECT count(*) FROM events WHERE host_id = '$h'")" = 0 ]
    check "$h: in the database of every partition too" \
        wait_for 60 env PG_URL="$(url pall)" bash -c ". '$here/pg.sh'; . '$here/lib.sh'; dir='$dir'; caught_up '$dir/$h.db' $h && same_rows '$dir/$h.db' $h"
done
chunks=$(curl -s --unix-socket "$dir/host-a.metrics" http://localhost/metrics | awk '$1 == "seccheckd_forward_chunks_total" { print $2 }')
check "host-a's batches went in chunks ($chunks messages), each under the servers' 64 KiB" [ "${chunks:-0}" -gt 2 ]
check "host-a: a batch of thousands of events whole centrally" \
    [ "$(PG_URL=$(url p1) psql_c "SELECT max(events) FROM batches WHERE host_id = 'host-a'")" -gt 1000 ]

# The readers over both partitions' databases: one history, as one database holds it.
both=(--to "$(url p0)" --to "$(url p1)")
"$bin/seccheckd" alerts "${both[@]}" --all-hosts --json >"$dir/alerts.both"
"$bin/seccheckd" alerts --to "$(url pall)" --all-hosts --json >"$dir/alerts.all"
check "alerts --all-hosts over both: every host's, as one database lists them ($(wc -l <"$dir/alerts.all"))" \
    bash -c "[ -s '$dir/alerts.all' ] && cmp -s '$dir/alerts.both' '$dir/alerts.all'"
"$bin/seccheckd" alerts "${both[@]}" --all-hosts --wide --color never >"$dir/alerts_table.both"
"$bin/seccheckd" alerts --to "$(url pall)" --all-hosts --wide --color never >"$dir/alerts_table.all"
check "... and the table" cmp -s "$dir/alerts_table.both" "$dir/alerts_table.all"
check "alerts --host-id over both: the host's, read where it is" \
    cmp -s <("$bin/seccheckd" alerts "${both[@]}" --host-id host-c --json) \
           <("$bin/seccheckd" alerts --to "$(url pall)" --host-id host-c --json)
for h in host-a host-d; do
    check "events --host-id $h over both = over one" \
        cmp -s <("$bin/seccheckd" events "${both[@]}" --host-id "$h" -n 100000) \
               <("$bin/seccheckd" events --to "$(url pall)" --host-id "$h" -n 100000)
done
check "containers --all-hosts over both = over one" \
    cmp -s <("$bin/seccheckd" containers "${both[@]}" --all-hosts) \
           <("$bin/seccheckd" containers --to "$(url pall)" --all-hosts)
for h in "${hosts[@]}"; do
    check "verify --to both --host-id $h" "$bin/seccheckd" verify "${both[@]}" --host-id "$h"
done
check "verify --to both --all-hosts" "$bin/seccheckd" verify "${both[@]}" --all-hosts --hash-only
"$bin/seccheckd" events "${both[@]}" --host-id nobody >/dev/null 2>"$dir/nobody.err"
check "a host in neither: said" grep -q "holds no events of host nobody" "$dir/nobody.err"

for p in f_a f_b f_c f_d c0 c1 c_all; do
    stop "${!p}"
    check "$p exits 0 on SIGTERM" [ "$stop_status" = 0 ]
done
if [ $failures != 0 ]; then
    for f in f_a c0 c1 c_all; do echo "---- $f.log"; tail -15 "$dir/$f.log"; done
    echo "$failures failed"
    exit 1
fi
echo "all passed"
