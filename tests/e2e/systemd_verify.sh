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
