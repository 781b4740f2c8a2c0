#!/usr/bin/env bash
# The shipped units pass `systemd-analyze verify`, and the service's
# `systemd-analyze security` exposure is 2.0 or lower (with ExecStart pointed
# at the binary just built, since it is not installed here). The service's
# own commands, run as the unit gives them: ExecStart reads the config file
# when there is one and starts without it, the database lands in the
# working directory, ExecReload re-reads the file (SIGHUP, not a restart);
# the metrics relay units carry a Prometheus scrape over TCP to the daemon's
# metrics socket (systemd-socket-activate stands in for the socket unit).
# The default rules: `cmake --install` of the build puts them in
# /etc/seccheckd/rules.d (under a DESTDIR here), ExecStart loads them from
# there (--default-rules), the shipped config too (rules =), and without
# them the log says "detection off".
# Usage: systemd_verify.sh SOURCE_DIR SECCHECKD_BINARY BUILD_DIR
set -euo pipefail
src=${1:?usage: systemd_verify.sh SOURCE_DIR SECCHECKD_BINARY BUILD_DIR}
bin=${2:?usage: systemd_verify.sh SOURCE_DIR SECCHECKD_BINARY BUILD_DIR}
build=${3:?usage: systemd_verify.sh SOURCE_DIR SECCHECKD_BINARY BUILD_DIR}
command -v systemd-analyze >/dev/null || { echo "FAIL: systemd-analyze missing (apt-get install -y systemd)"; exit 1; }
dir=$(mktemp -d /tmp/seccheckd-systemd-XXXXXX)
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do
        kill -KILL "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    rm -rf "$dir"
}
trap cleanup EXIT
# Every unit, with ExecStart pointed at the build.
for unit in seccheckd.socket seccheckd.service seccheckd-forward.service seccheckd-central.service \
            seccheckd-metrics.socket seccheckd-metrics.service; do
    sed "s#/usr/local/bin/seccheckd#$bin#" "$src/systemd/$unit" >"$dir/$unit"
done
grep -q "^ExecStart=$bin " "$dir/seccheckd.service"

# check_units SERVICE [UNIT...]: systemd-analyze verify passes on them all,
# and SERVICE's systemd-analyze security exposure is 2.0 or lower.
check_units() {
    local service=$1 out score
    out=$(cd "$dir" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify "$@" 2>&1 |
          grep -v -e 'containerd.service' -e 'docker.service' || true)
    [ -z "$out" ] || { echo "FAIL - systemd-analyze verify $*:"; echo "$out"; exit 1; }
    score=$(systemd-analyze security --offline=yes "$dir/$service" 2>&1 |
            sed -n "s/.*Overall exposure level for $service: \\([0-9.]*\\).*/\\1/p")
    if [ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }'; then
        echo "ok   - $* verify; $service exposure $score (<= 2.0)"
    else
        echo "FAIL - $service: exposure '$score', above 2.0 or missing"
        exit 1
    fi
}
check_units seccheckd.service seccheckd.socket
check_units seccheckd-forward.service   # seccheckd forward, beside the daemon
check_units seccheckd-central.service   # seccheckd central, the stream into PostgreSQL
check_units seccheckd-metrics.service seccheckd-metrics.socket   # the metrics relay

# The alerts-delivery drop-in (systemd/seccheckd.service.d/): with it the
# daemon's unit verifies and reaches IPv4/IPv6 at the allowed addresses
# only (the unit's IPAddressDeny=any stays), exposure 2.0 or lower; the
# plain unit keeps no network at all, at its lower exposure.
check_alerts_delivery_dropin() {
    local d=$dir/with-dropin unit=$src/systemd/seccheckd.service conf=$src/systemd/seccheckd.service.d/alerts-delivery.conf
    local out report plain dropin
    mkdir -p "$d/seccheckd.service.d"
    cp "$dir/seccheckd.service" "$dir/seccheckd.socket" "$d/"
    cp "$conf" "$d/seccheckd.service.d/"
    out=$(cd "$d" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify seccheckd.socket seccheckd.service 2>&1 |
          grep -v -e 'containerd.service' -e 'docker.service' || true)
    [ -z "$out" ] || { echo "FAIL - systemd-analyze verify with the alerts-delivery drop-in:"; echo "$out"; exit 1; }
    report=$(systemd-analyze security --offline=yes "$d/seccheckd.service" 2>&1)
    grep -q 'PrivateNetwork=.*Service has access to the host' <<<"$report" ||
        { echo "FAIL - the alerts-delivery drop-in was not applied"; exit 1; }
    grep -q '^IPAddressDeny=any' "$unit" && grep -q '^IPAddressAllow=' "$conf" && ! grep -qi '^IPAddressAllow=any' "$conf" &&
        ! grep -q '^IPAddressDeny=' "$conf" ||
        { echo "FAIL - the drop-in must allow listed addresses only, under the unit's IPAddressDeny=any"; exit 1; }
    grep -q '^PrivateNetwork=yes' "$unit" && grep -q '^RestrictAddressFamilies=AF_UNIX$' "$unit" ||
        { echo "FAIL - the plain unit must keep no network (PrivateNetwork=yes, AF_UNIX only)"; exit 1; }
    dropin=$(sed -n 's/.*Overall exposure level for seccheckd.service: \([0-9.]*\).*/\1/p' <<<"$report")
    plain=$(systemd-analyze security --offline=yes "$dir/seccheckd.service" 2>&1 |
            sed -n 's/.*Overall exposure level for seccheckd.service: \([0-9.]*\).*/\1/p')
    if [ -n "$dropin" ] && [ -n "$plain" ] && awk -v s="$dropin" -v p="$plain" 'BEGIN { exit !(s <= 2.0 && p < s) }'; then
        echo "ok   - seccheckd.service with the alerts-delivery drop-in verifies; exposure $dropin (<= 2.0; without it $plain)"
    else
        echo "FAIL - with the alerts-delivery drop-in: exposure '$dropin' (want <= 2.0, above the plain unit's '$plain')"
        exit 1
    fi
}
check_alerts_delivery_dropin
grep -q '^ListenSequentialPacket=' "$src/systemd/seccheckd.socket"
grep -q '^Type=notify' "$src/systemd/seccheckd.service"
grep -q '^WatchdogSec=' "$src/systemd/seccheckd.service"

# ---- the service's commands, as the unit gives them
unit_value() { sed -n "s/^$1=//p" "$2"; }
wait_log() {   # wait_log FILE TEXT: up to 10 s
    local i
    for i in $(seq 100); do grep -qF -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
    echo "FAIL - '$2' not in $1:"; cat "$1"; exit 1
}
start() {   # start LOG ARGS...: the daemon in $dir/state (the unit's WorkingDirectory), its pid in $pid
    local log=$1
    shift
    (cd "$dir/state" && exec "$@") >"$log" 2>&1 &
    pid=$!
    pids+=("$pid")
}
stop_daemon() { kill -TERM "$pid"; wait "$pid" || { echo "FAIL - the daemon exited $? on SIGTERM"; exit 1; }; }

execstart=$(unit_value ExecStart "$dir/seccheckd.service")
case "$execstart" in
*" --config-if-exists /etc/seccheckd/seccheckd.conf"*) ;;
*) echo "FAIL - ExecStart does not read /etc/seccheckd/seccheckd.conf when present: $execstart"; exit 1 ;;
esac
[ "$(unit_value WorkingDirectory "$dir/seccheckd.service")" = /var/lib/seccheckd ] &&
    grep -qx 'StateDirectory=seccheckd' "$dir/seccheckd.service" ||
    { echo "FAIL - the working directory is not the state directory /var/lib/seccheckd"; exit 1; }
reload=$(unit_value ExecReload "$dir/seccheckd.service")
[ "$reload" = '/bin/kill -HUP $MAINPID' ] || { echo "FAIL - ExecReload is '$reload', not a SIGHUP"; exit 1; }
case "$execstart" in
*" --default-rules /etc/seccheckd/rules.d"*) ;;
*) echo "FAIL - ExecStart does not load the default rules from /etc/seccheckd/rules.d: $execstart"; exit 1 ;;
esac
# cmake --install, into a DESTDIR: the programs and the default rules
DESTDIR="$dir/root" cmake --install "$build" >"$dir/install.log" 2>&1 ||
    { echo "FAIL - cmake --install:"; cat "$dir/install.log"; exit 1; }
rules_d=$dir/root/etc/seccheckd/rules.d
cmp -s "$rules_d/gvisor_rules.yaml" "$src/configs/rules/gvisor_rules.yaml" && [ -x "$dir/root/usr/local/bin/seccheckd" ] ||
    { echo "FAIL - cmake --install did not put the default rules in /etc/seccheckd/rules.d:"; cat "$dir/install.log"; exit 1; }
echo "ok   - cmake --install puts the programs in /usr/local/bin, the default rules in /etc/seccheckd/rules.d"
mkdir "$dir/state"
conf=$dir/seccheckd.conf
execstart=${execstart//\/etc\/seccheckd\/rules.d/$rules_d}
read -ra cmd <<<"${execstart//\/etc\/seccheckd\/seccheckd.conf/$conf}"
# Not the machine's runsc roots and Docker socket: an empty root of the test's own, no socket.
mkdir "$dir/runsc-root"
cmd+=(--runsc-root "$dir/runsc-root" --docker-socket none)

cat >"$conf" <<CONF
socket = $dir/s.sock
metrics-listen = unix:$dir/metrics.sock
drop-types = SYSCALL_READ
CONF
start "$dir/d1.log" "${cmd[@]}"
wait_log "$dir/d1.log" "listening on $dir/s.sock"
[ -f "$dir/state/seccheck.db" ] || { echo "FAIL - no database in the working directory"; exit 1; }
echo "ok   - ExecStart reads the config file; the database is ./seccheck.db in the state directory"
grep -q "rules enabled of .* from 1 file" "$dir/d1.log" && ! grep -q "detection off" "$dir/d1.log" ||
    { echo "FAIL - ExecStart did not load the default rules:"; cat "$dir/d1.log"; exit 1; }
echo "ok   - ExecStart loads the default rules from /etc/seccheckd/rules.d"
sed -i 's/^drop-types = .*/drop-types = SYSCALL_WRITE/' "$conf"
${reload//\$MAINPID/$pid}
wait_log "$dir/d1.log" "reload: applied drop-types"
if grep -qE 'info: restart(ing)?:' "$dir/d1.log" || ! kill -0 "$pid"; then
    echo "FAIL - ExecReload restarted the daemon instead of re-reading its config:"; cat "$dir/d1.log"; exit 1
fi
echo "ok   - ExecReload re-reads the config file (SIGHUP), no restart"

# Prometheus over TCP, relayed to the metrics socket by the relay unit's ExecStart.
command -v systemd-socket-activate >/dev/null || { echo "FAIL: systemd-socket-activate missing (apt-get install -y systemd)"; exit 1; }
relay=$(unit_value ExecStart "$dir/seccheckd-metrics.service")
[ "$(unit_value ListenStream "$dir/seccheckd-metrics.socket")" = 127.0.0.1:9464 ] &&
    [ "${relay##* }" = /run/seccheckd/metrics.sock ] ||
    { echo "FAIL - the relay does not join 127.0.0.1:9464 to /run/seccheckd/metrics.sock"; exit 1; }
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
read -ra relay_cmd <<<"${relay//\/run\/seccheckd\/metrics.sock/$dir/metrics.sock}"
systemd-socket-activate -l "127.0.0.1:$port" "${relay_cmd[@]}" >"$dir/relay.log" 2>&1 &
pids+=($!)
wait_log "$dir/relay.log" "Listening on"
scrape=$(curl -sS --max-time 5 "http://127.0.0.1:$port/metrics" 2>&1 || true)   # whole: grep -q would cut it short
if grep -q '^seccheckd_messages_received_total ' <<<"$scrape"; then
    echo "ok   - the relay units serve the daemon's metrics socket on TCP"
else
    echo "FAIL - no metrics through the relay: ${scrape:0:300}"; cat "$dir/relay.log"; exit 1
fi
stop_daemon

rm "$conf"
start "$dir/d2.log" "${cmd[@]}" --socket "$dir/s2.sock"
wait_log "$dir/d2.log" "listening on $dir/s2.sock"
wait_log "$dir/d2.log" "no config file $conf (--config-if-exists)"
stop_daemon
echo "ok   - without the config file ExecStart starts on the defaults"

mv "$rules_d" "$rules_d.gone"
start "$dir/d3.log" "${cmd[@]}" --socket "$dir/s3.sock"
wait_log "$dir/d3.log" "listening on $dir/s3.sock"
wait_log "$dir/d3.log" "warn: detection off: no rules loaded: --default-rules $rules_d does not exist"
stop_daemon
mv "$rules_d.gone" "$rules_d"
echo "ok   - without the default rules installed, the log says detection off"

# The shipped config, its paths made the test's: it loads the rules
sed -e "s#/run/seccheckd/seccheck.sock#$dir/s4.sock#" -e "s#/var/lib/seccheckd/seccheck.db#$dir/shipped.db#" \
    -e "s#/etc/seccheckd/rules.d#$rules_d#" "$src/configs/seccheckd.conf" >"$dir/shipped.conf"
grep -q "^rules = $rules_d\$" "$dir/shipped.conf" || { echo "FAIL - the shipped config loads no rules"; exit 1; }
"$bin" check --config "$dir/shipped.conf" >"$dir/check.log" 2>&1 && grep -q "rules enabled of" "$dir/check.log" ||
    { echo "FAIL - the shipped config does not check with its rules:"; cat "$dir/check.log"; exit 1; }
echo "ok   - the shipped config loads the default rules (rules = /etc/seccheckd/rules.d)"
echo "systemd: all checks passed"
