#!/usr/bin/env bash
# Smoke run of bench/forward.sh and bench/verify.sh with tiny sizes: both
# parts of forward.sh finish and print their figures, verify.sh its four,
# and the zero-drop comparison compares like with like: the daemon beside
# its forwarder has the same indexes as the daemon alone, the load starts
# once the forwarder is connected, and every probe's forwarder shipped every
# batch (a forwarder that ships nothing would cost nothing).
# Usage: bench_smoke.sh SOURCE_DIR BIN_DIR TRACES_DIR
set -uo pipefail
src=${1:?usage: bench_smoke.sh SOURCE_DIR BIN_DIR TRACES_DIR}
bin=${2:?usage: bench_smoke.sh SOURCE_DIR BIN_DIR TRACES_DIR}
traces=${3:?usage: bench_smoke.sh SOURCE_DIR BIN_DIR TRACES_DIR}

. "$src/tests/fleet/pg.sh"
. "$src/tests/fleet/lib.sh"

fleet_setup forward-smoke
mkdir "$dir/tmp"
export TMPDIR=$dir/tmp   # zero_drop.sh's private directory goes here

rc=0
timeout 600 bash "$src/bench/forward.sh" --events 3000 --zero-drop --probe-seconds 0.5 --max-probes 3 \
    --out "$dir/zd" --bin "$bin" --traces "$traces" >"$dir/out.txt" 2>&1 || rc=$?
cat "$dir/out.txt"
check "forward.sh exits 0" [ $rc = 0 ]
check "part 1 prints the throughput" grep -qE '^forward throughput: 3000 events .* = [0-9]+ events/s' "$dir/out.txt"
check "part 2 prints the ratio" grep -qE '^zero-drop rate .* alone [0-9]+ msgs/s, with forward running [0-9]+ msgs/s: [0-9.]+x' "$dir/out.txt"

# probes FIELD RECEIVER: that field of each probe of that receiver, one per line.
probes() {
    python3 - "$1" "$2" "$dir"/zd-1/probes.jsonl <<'PY'
import json, sys
for line in open(sys.argv[3]):
    r = json.loads(line)
    if r.get("receiver") == sys.argv[2]:
        print(r.get(sys.argv[1]))
PY
}
check "each receiver ran 3 probes" \
    [ "$(probes rate sqlite | wc -l)" = 3 ] && [ "$(probes rate sqlite+forward | wc -l)" = 3 ]
check "the daemon alone and beside its forwarder have the same indexes" \
    [ "$(probes db_indexes sqlite | sort -u)" = "$(probes db_indexes sqlite+forward | sort -u)" ]
check "... the default ones (events_by_type, and alerts show's ancestry indexes)" \
    [ "$(probes db_indexes sqlite | sort -u)" = events_by_type,events_clones,events_execs,events_fork_exits ]
check "every probe's forwarder shipped every batch" [ "$(probes forward_behind sqlite+forward | sort -u)" = 0 ]
check "... and was connected before the load" \
    bash -c "for f in '$dir'/zd-1/logs/sqlite+forward-*.log.forward; do grep -q 'connected to the central server' \"\$f\" || exit 1; done"
no_leftovers() {   # no process but this one with $dir in its command line
    local p
    for p in /proc/[0-9]*; do
        [ "${p#/proc/}" = $$ ] && continue
        tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -q -- "$dir/" && { echo "  left running: ${p#/proc/}"; return 1; }
    done
    return 0
}
# bench/verify.sh: its four figures.
rc=0
timeout 300 bash "$src/bench/verify.sh" --events 2000 --repeat 1 --bin "$bin" --traces "$traces" \
    >"$dir/verify.txt" 2>&1 || rc=$?
cat "$dir/verify.txt"
check "verify.sh exits 0" [ $rc = 0 ]
check "verify.sh prints verify's speed, local and central, with and without --hash-only" \
    [ "$(grep -cE '^verify --(db|to)( --hash-only| \(chain \+ columns\)) +[0-9.]+ s = +[0-9]+ events/s' \
        "$dir/verify.txt")" = 4 ]
check "no process left with the bench's directory" no_leftovers
check "zero_drop.sh's private directory is gone" [ -z "$(ls -A "$dir/tmp")" ]

if [ $failures != 0 ]; then
    echo "$failures failed"
    exit 1
fi
echo "all passed"
