#!/usr/bin/env bash
# The shipped unit file passes `systemd-analyze verify` (with ExecStart
# pointed at the binary just built, since it is not installed here).
# Usage: systemd_verify.sh SOURCE_DIR SECCHECKD_BINARY
set -euo pipefail
src=${1:?usage: systemd_verify.sh SOURCE_DIR SECCHECKD_BINARY}
bin=${2:?usage: systemd_verify.sh SOURCE_DIR SECCHECKD_BINARY}
command -v systemd-analyze >/dev/null || { echo "FAIL: systemd-analyze missing (apt-get install -y systemd)"; exit 1; }
dir=$(mktemp -d /tmp/seccheckd-systemd-XXXXXX)
trap 'rm -rf "$dir"' EXIT
sed "s#/usr/local/bin/seccheckd#$bin#" "$src/systemd/seccheckd.service" >"$dir/seccheckd.service"
out=$(SYSTEMD_LOG_LEVEL=warning systemd-analyze verify "$dir/seccheckd.service" 2>&1 | grep -v -e 'containerd.service' -e 'docker.service' || true)
if [ -n "$out" ]; then
    echo "FAIL: systemd-analyze verify:"
    echo "$out"
    exit 1
fi
grep -q "^ExecStart=$bin --socket /run/seccheckd/seccheck.sock --db /var/lib/seccheckd/seccheck.db" "$dir/seccheckd.service"
echo "systemd: seccheckd.service verifies"
