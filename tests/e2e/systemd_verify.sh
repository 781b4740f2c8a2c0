#!/usr/bin/env bash
# The shipped units pass `systemd-analyze verify`, and the service's
# `systemd-analyze security` exposure is 2.0 or lower (with ExecStart pointed
# at the binary just built, since it is not installed here).
# Usage: systemd_verify.sh SOURCE_DIR SECCHECKD_BINARY
set -euo pipefail
src=${1:?usage: systemd_verify.sh SOURCE_DIR SECCHECKD_BINARY}
bin=${2:?usage: systemd_verify.sh SOURCE_DIR SECCHECKD_BINARY}
command -v systemd-analyze >/dev/null || { echo "FAIL: systemd-analyze missing (apt-get install -y systemd)"; exit 1; }
dir=$(mktemp -d /tmp/seccheckd-systemd-XXXXXX)
trap 'rm -rf "$dir"' EXIT
sed "s#/usr/local/bin/seccheckd#$bin#" "$src/systemd/seccheckd.service" >"$dir/seccheckd.service"
cp "$src/systemd/seccheckd.socket" "$dir/"
grep -q "^ExecStart=$bin " "$dir/seccheckd.service"

out=$(cd "$dir" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify seccheckd.socket seccheckd.service 2>&1 |
      grep -v -e 'containerd.service' -e 'docker.service' || true)
if [ -n "$out" ]; then
    echo "FAIL: systemd-analyze verify:"
    echo "$out"
    exit 1
fi
echo "ok   - seccheckd.socket and seccheckd.service verify"

score=$(systemd-analyze security --offline=yes "$dir/seccheckd.service" 2>&1 |
        sed -n 's/.*Overall exposure level for seccheckd.service: \([0-9.]*\).*/\1/p')
[ -n "$score" ] || { echo "FAIL: no exposure score"; exit 1; }
if awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }'; then
    echo "ok   - systemd-analyze security: exposure $score (<= 2.0)"
else
    echo "FAIL - systemd-analyze security: exposure $score, above 2.0"
    exit 1
fi
# The alerts-delivery drop-in (systemd/seccheckd.service.d/): with it the
# unit verifies and opens only IPv4/IPv6 to the allowed address (the deny
# list stays), its exposure stays at 2.0 or lower; the plain unit keeps no
# network at all, at its lower score.
check_alerts_delivery_dropin() {
    local d=$dir/with-dropin plain=$1 unit=$src/systemd/seccheckd.service out
    mkdir -p "$d/seccheckd.service.d"
    cp "$dir/seccheckd.service" "$dir/seccheckd.socket" "$d/"
    cp "$src/systemd/seccheckd.service.d/alerts-delivery.conf" "$d/seccheckd.service.d/"
    out=$(cd "$d" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify seccheckd.socket seccheckd.service 2>&1 |
          grep -v -e 'containerd.service' -e 'docker.service' || true)
    [ -z "$out" ] || { echo "FAIL: systemd-analyze verify with the alerts-delivery drop-in:"; echo "$out"; exit 1; }
    local report dscore
    report=$(systemd-analyze security --offline=yes "$d/seccheckd.service" 2>&1)
    # The drop-in was read: the network is open, to an allow list only.
    grep -q 'PrivateNetwork=.*Service has access to the host' <<<"$report" ||
        { echo "FAIL: the alerts-delivery drop-in was not applied"; exit 1; }
    grep -q '^IPAddressDeny=any' "$unit" && grep -q '^IPAddressAllow=' "$d/seccheckd.service.d/alerts-delivery.conf" &&
        ! grep -qi '^IPAddressAllow=any' "$d/seccheckd.service.d/alerts-delivery.conf" &&
        ! grep -q '^IPAddressDeny=' "$d/seccheckd.service.d/alerts-delivery.conf" ||
        { echo "FAIL: the drop-in must allow listed addresses only, under the unit's IPAddressDeny=any"; exit 1; }
    grep -q '^PrivateNetwork=yes' "$unit" && grep -q '^RestrictAddressFamilies=AF_UNIX$' "$unit" ||
        { echo "FAIL: the plain unit must keep no network (PrivateNetwork=yes, AF_UNIX only)"; exit 1; }
    dscore=$(sed -n 's/.*Overall exposure level for seccheckd.service: \([0-9.]*\).*/\1/p' <<<"$report")
    if [ -n "$dscore" ] && awk -v s="$dscore" -v p="$plain" 'BEGIN { exit !(s <= 2.0 && p < s) }'; then
        echo "ok   - with the alerts-delivery drop-in: verifies, exposure $dscore (<= 2.0; the plain unit $plain)"
    else
        echo "FAIL - with the alerts-delivery drop-in: exposure '$dscore' (want <= 2.0, above the plain unit's $plain)"
        exit 1
    fi
}
check_alerts_delivery_dropin "$score"
# The forwarder's unit (seccheckd forward) beside the daemon's.
sed "s#/usr/local/bin/seccheckd#$bin#" "$src/systemd/seccheckd-forward.service" >"$dir/seccheckd-forward.service"
out=$(cd "$dir" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify seccheckd-forward.service 2>&1 || true)
if [ -n "$out" ]; then
    echo "FAIL: systemd-analyze verify seccheckd-forward.service:"
    echo "$out"
    exit 1
fi
fscore=$(systemd-analyze security --offline=yes "$dir/seccheckd-forward.service" 2>&1 |
         sed -n 's/.*Overall exposure level for seccheckd-forward.service: \([0-9.]*\).*/\1/p')
if [ -n "$fscore" ] && awk -v s="$fscore" 'BEGIN { exit !(s <= 2.0) }'; then
    echo "ok   - seccheckd-forward.service verifies, exposure $fscore (<= 2.0)"
else
    echo "FAIL - seccheckd-forward.service: exposure '${fscore}', above 2.0 or missing"
    exit 1
fi
grep -q '^ListenSequentialPacket=' "$src/systemd/seccheckd.socket"
grep -q '^Type=notify' "$src/systemd/seccheckd.service"
grep -q '^WatchdogSec=' "$src/systemd/seccheckd.service"
echo "systemd: all checks passed"
