#!/usr/bin/env bash
# Who may publish what into the fleet's stream, on a 3-node nats-server
# cluster started here with TLS (a CA made here) and one user per host:
# credentials from a file only, TLS against the given CA; a host's user may
# not publish on another host's subject (the server denies it); a message
# whose host id is not its subject's is refused by the consumer (recorded);
# a second forwarder under a host id already in the stream is refused
# (counted); a stream of another shape is named difference by difference by
# nats-setup, forward and central; each alert also arrives live on
# seccheck.alerts.<host> as the Falco JSON line falcosidekick takes.
# Usage: nats_auth.sh BIN_DIR TRACES_DIR
set -uo pipefail
bin=${1:?usage: nats_auth.sh BIN_DIR TRACES_DIR}
traces=${2:?usage: nats_auth.sh BIN_DIR TRACES_DIR}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/pg.sh"
. "$here/lib.sh"
. "$here/nats.sh"

fleet_setup fleet-nats-auth
check "a CA and a server certificate for 127.0.0.1" nats_tls "$dir/tls"
nats_user admin admin-pw admin
nats_user host-a pw-a host
nats_user host-b pw-b host
nats_user central pw-c central
nats_start "$dir/tls" || exit 1
pg_start "$dir" || exit 1
export NATS_TOOL_CA=$dir/tls/ca.pem
ca=(--nats-ca "$dir/tls/ca.pem")
tool() { "$bin/nats_tool" "$NATS_URLS" "$@"; }

# ---------------------------------------------------------------- TLS and credentials
"$bin/seccheckd" nats-setup --to "$NATS_URLS" --nats-auth "$dir/nats/admin.auth" >"$dir/notrust.out" 2>&1
check "tls:// without --nats-ca: the system's CAs do not know this one, refused" \
    grep -qiE "certificate|SSL|TLS" "$dir/notrust.out"
check "nats-setup over TLS with --nats-ca creates the stream" \
    "$bin/seccheckd" nats-setup --to "$NATS_URLS" --nats-auth "$dir/nats/admin.auth" "${ca[@]}" --max-bytes 256M
"$bin/seccheckd" forward --to "tls://host-a:pw-a@127.0.0.1:${NATS_PORT[1]}" --db "$dir/a.db" >/dev/null 2>"$dir/url.err"
check "credentials in a URL: usage error naming --nats-auth" \
    bash -c "[ $? = 2 ] && grep -q 'holds credentials.*--nats-auth' '$dir/url.err'"
echo "host-a:wrong" >"$dir/wrong.auth"
chmod 600 "$dir/wrong.auth"

cat >"$dir/rules.yaml" <<'YAML'
- rule: Openat exit
  desc: mixed_syscalls' openat exits
  condition: evt.type = openat and evt.dir = <
  output: "%proc.name opened %fd.name"
  priority: NOTICE
YAML
spawn d_a "$bin/seccheckd" --socket "$dir/a.sock" --db "$dir/a.db" --batch-size 256 --rules "$dir/rules.yaml" \
    --alerts-rate 0 "${own_names[@]}"
wait_for 20 test -S "$dir/a.sock"
"$bin/seccheck-loadgen" --socket "$dir/a.sock" --trace "$traces/mixed_syscalls.trace" --mode block \
    --messages 3000 >>"$dir/load.log" 2>&1
# loadgen returns once it has sent; the daemon may still be committing, and
# the alerts counted below must be all there will be (the live subscriber
# stops at that count).
stored() { [ "$(sqlite_c "$dir/a.db" "SELECT count(*) FROM events")" -ge "$1" ]; }
check "host a stored the 3000 events" wait_for 30 stored 3000
timeout 20 "$bin/seccheckd" forward --db "$dir/a.db" --to "$NATS_URLS" "${ca[@]}" --nats-auth "$dir/wrong.auth" \
    --host-id host-a >"$dir/wrong.out" 2>&1
check "a wrong password: forward exits 1 naming the credentials" \
    bash -c "[ $? = 1 ] && grep -q 'check the user and password in --nats-auth' '$dir/wrong.out'"

# ---------------------------------------------------------------- a host, its alerts live
alerts_wanted=$(sqlite_c "$dir/a.db" "SELECT count(*) FROM alerts")
spawn live "$bin/nats_tool" "$NATS_URLS" "$dir/nats/admin.auth" sub seccheck.alerts.host-a "$alerts_wanted" 60
wait_for 10 grep -q subscribed "$dir/live.log"
spawn f_a "$bin/seccheckd" forward --db "$dir/a.db" --to "$NATS_URLS" "${ca[@]}" --nats-auth "$dir/nats/host-a.auth" \
    --host-id host-a --poll-ms 50 --retry-min-ms 100 --metrics-listen "unix:$dir/f_a.metrics"
spawn c "$bin/seccheckd" central --from "$NATS_URLS" --to "$PG_URL" "${ca[@]}" --nats-auth "$dir/nats/central.auth" \
    --retry-min-ms 100 --metrics-listen "unix:$dir/c.metrics"
check "host a reaches the central copy through TLS, its own user" wait_for 30 caught_up "$dir/a.db" host-a
check "host a: central batches and events = local" same_rows "$dir/a.db" host-a
check "host a's alerts arrived on seccheck.alerts.host-a ($alerts_wanted)" wait "$live"
grep -v '^subscribed$' "$dir/live.log" >"$dir/live.json"
"$bin/seccheckd" alerts --db "$dir/a.db" --json >"$dir/alerts.json"
check "... each the Falco JSON line seccheckd alerts --json (and --alerts-url) gives, in order" \
    cmp "$dir/live.json" "$dir/alerts.json"

# ---------------------------------------------------------------- another host's subject
tool "$dir/nats/admin.auth" last SECCHECK seccheck.0.host-a.batch "$dir/a.msg" >"$dir/last.out"
check "admin reads host a's last message" grep -q '^seq ' "$dir/last.out"
tool "$dir/nats/host-a.auth" pub seccheck.0.host-b.batch "$dir/a.msg" >"$dir/deny.out" 2>&1
check "host a's user publishing on host b's subject: denied by the server" \
    grep -qi "permissions violation for publish to \"seccheck.0.host-b.batch\"" "$dir/deny.out"
timeout 20 "$bin/seccheckd" forward --db "$dir/a.db" --to "$NATS_URLS" "${ca[@]}" --nats-auth "$dir/nats/host-a.auth" \
    --host-id host-b >"$dir/deny_fwd.out" 2>&1
check "forward as host b with host a's user: exits 1, the denial and --host-id named" \
    bash -c "[ $? = 1 ] && grep -qi 'permissions violation.*is --host-id host-b the host this user is for' '$dir/deny_fwd.out'"
# A message that names host a, published (by admin) on host b's subject.
tool "$dir/nats/admin.auth" pub seccheck.0.host-b.batch "$dir/a.msg" >"$dir/forged.out"
check "admin publishes host a's message on host b's subject" grep -q '^seq ' "$dir/forged.out"
refusal() { psql_c "SELECT reason FROM refusals WHERE host_id = 'host-b'" 2>/dev/null; }
check "the consumer refuses it: recorded for host b, naming host a" \
    wait_for 20 bash -c "$(declare -f refusal psql_c); PG_URL='$PG_URL'; refusal | grep -q \"names host 'host-a'\""
check "... nothing of it in host b's copy" \
    [ "$(psql_c "SELECT count(*) FROM events WHERE host_id = 'host-b'")" = 0 ]
check "... host a's copy untouched" same_rows "$dir/a.db" host-a

# ---------------------------------------------------------------- a second forwarder under host a's id
spawn d_x "$bin/seccheckd" --socket "$dir/x.sock" --db "$dir/x.db" --batch-size 256 "${own_names[@]}"
wait_for 20 test -S "$dir/x.sock"
"$bin/seccheck-loadgen" --socket "$dir/x.sock" --trace "$traces/redis_rw.trace" --mode block --messages 5000 \
    >>"$dir/load.log" 2>&1
before=$(tool "$dir/nats/admin.auth" last SECCHECK seccheck.0.host-a.batch "$dir/before.msg")
spawn f_x "$bin/seccheckd" forward --db "$dir/x.db" --to "$NATS_URLS" "${ca[@]}" --nats-auth "$dir/nats/host-a.auth" \
    --host-id host-a --retry-min-ms 100 --retry-max-ms 300 --metrics-listen "unix:$dir/f_x.metrics"
refused_count() { curl -s --unix-socket "$dir/f_x.metrics" http://localhost/metrics |
    awk '$1 == "seccheckd_forward_refused_total" { print $2 }'; }
check "a second forwarder under host id host-a is refused, counted" \
    wait_for 20 bash -c "$(declare -f refused_count); dir='$dir'; [ \"\$(refused_count)\" -ge 2 ]"
check "... and says why" grep -q "another host publishes under host id 'host-a'" "$dir/f_x.log"
check "... it published nothing: host a's last message is the same" \
    [ "$(tool "$dir/nats/admin.auth" last SECCHECK seccheck.0.host-a.batch "$dir/after.msg")" = "$before" ]
stop "$f_x"
# Host a goes on, and its copy stays its own.
"$bin/seccheck-loadgen" --socket "$dir/a.sock" --trace "$traces/mixed_syscalls.trace" --mode block \
    --messages 2000 >>"$dir/load.log" 2>&1
check "host a stored the 2000 more" wait_for 30 stored 5000
check "host a goes on after all of it" wait_for 30 caught_up "$dir/a.db" host-a
check "host a: central batches and events = local" same_rows "$dir/a.db" host-a
check "host a: verify --to passes" "$bin/seccheckd" verify --to "$PG_URL" --host-id host-a
check "the refusals: host b's forged message only" \
    [ "$(psql_c "SELECT string_agg(host_id, ',') FROM refusals")" = host-b ]

# ---------------------------------------------------------------- a stream of another shape
tool "$dir/nats/admin.auth" req '$JS.API.STREAM.CREATE.OTHER' \
    '{"name":"OTHER","subjects":["other.>"],"retention":"limits","storage":"memory","discard":"old","num_replicas":1}' \
    >"$dir/other.out"
check "admin makes a stream OTHER of another shape" grep -q '"config"' "$dir/other.out"
"$bin/seccheckd" nats-setup --to "$NATS_URLS" "${ca[@]}" --nats-auth "$dir/nats/admin.auth" --stream OTHER \
    >"$dir/setup_other.out" 2>&1
rc=$?
check "nats-setup: exit 1, each difference named" \
    bash -c "[ $rc = 1 ] && grep -q 'stream OTHER exists and differs: subjects other.>, expected seccheck.\*.\*.batch alone' '$dir/setup_other.out' &&
             grep -q 'discard old, expected new' '$dir/setup_other.out' && grep -q 'memory storage, expected file' '$dir/setup_other.out' &&
             grep -q 'replicas 1, expected 3' '$dir/setup_other.out' && grep -q 'no partitions in its description' '$dir/setup_other.out'"
timeout 20 "$bin/seccheckd" forward --db "$dir/a.db" --to "$NATS_URLS" "${ca[@]}" --nats-auth "$dir/nats/admin.auth" \
    --host-id host-a --stream OTHER >"$dir/fwd_other.out" 2>&1
rc=$?
check "forward: exit 1, the differences named" \
    bash -c "[ $rc = 1 ] && grep -q 'stream OTHER does not fit: subjects other.>' '$dir/fwd_other.out' &&
             grep -q 'discard old, expected new' '$dir/fwd_other.out' && grep -q 'retrying cannot heal this' '$dir/fwd_other.out'"
timeout 20 "$bin/seccheckd" central --from "$NATS_URLS" --to "$PG_URL" "${ca[@]}" --nats-auth "$dir/nats/admin.auth" \
    --partitions 2 >"$dir/central_parts.out" 2>&1
rc=$?
check "central --partitions 2 against a stream of 1: exit 1, named" \
    bash -c "[ $rc = 1 ] && grep -q 'partitions 1, expected 2' '$dir/central_parts.out'"

for p in f_a c d_a d_x; do
    stop "${!p}"
    check "$p exits 0 on SIGTERM" [ "$stop_status" = 0 ]
done
if [ $failures != 0 ]; then
    for f in f_a.log c.log f_x.log notrust.out wrong.out deny.out deny_fwd.out; do echo "---- $f"; tail -8 "$dir/$f"; done
    echo "$failures failed"
    exit 1
fi
echo "all passed"
