#!/usr/bin/env bash
# The NATS link's callbacks never outlive it: tests/fleet/link_probe.c
# connects and closes 100 times on a stack frame that returns, against a
# real 3-node cluster started here (the sanitizer builds catch a callback
# that writes into the dead frame: detect_stack_use_after_return).
# Usage: nats_link.sh BIN_DIR TRACES_DIR
set -uo pipefail
bin=${1:?usage: nats_link.sh BIN_DIR TRACES_DIR}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/pg.sh"
. "$here/lib.sh"
. "$here/nats.sh"

fleet_setup fleet-nats-link
nats_user admin admin-pw admin
nats_start || exit 1
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_stack_use_after_return=1"
check "100 connections closed on frames that returned: no callback came after" \
    "$bin/link_probe" "$NATS_URLS" "$dir/nats/admin.auth" 100
if [ $failures != 0 ]; then
    echo "$failures failed"
    exit 1
fi
