#!/usr/bin/env bash
# Smoke run of bench/nats.sh with tiny sizes: every part finishes and prints
# its figures (the direct path, end to end through the 3-node stream,
# publishing alone with bytes per event, applying with K = 1 and 2, the
# forwarder beside a daemon for both paths).
# Usage: nats_bench_smoke.sh SOURCE_DIR BIN_DIR TRACES_DIR
set -uo pipefail
src=${1:?usage: nats_bench_smoke.sh SOURCE_DIR BIN_DIR TRACES_DIR}
bin=${2:?usage: nats_bench_smoke.sh SOURCE_DIR BIN_DIR TRACES_DIR}
traces=${3:?usage: nats_bench_smoke.sh SOURCE_DIR BIN_DIR TRACES_DIR}
. "$src/tests/fleet/pg.sh"
. "$src/tests/fleet/lib.sh"

fleet_setup nats-bench-smoke
rc=0
timeout 280 bash "$src/bench/nats.sh" --events 3000 --hosts 2 --live 2 --live-rate 4000 --pairs 2 --bin "$bin" \
    --traces "$traces" >"$dir/out.txt" 2>&1 || rc=$?
cat "$dir/out.txt"
check "nats.sh exits 0" [ $rc = 0 ]
check "the database line" grep -qE '^database: 3000 events of mixed_syscalls' "$dir/out.txt"
check "1. direct prints events/s" grep -qE '^1\. direct: +[0-9]+ events/s' "$dir/out.txt"
check "2. end to end prints events/s and the ratio" grep -qE '^2\. end to end: +[0-9]+ events/s .*: [0-9.]+x the direct' "$dir/out.txt"
check "--pairs 2: parts 1 and 2 twice, then the median of the two ratios" \
    bash -c "[ \$(grep -cE '^2\. end to end: ' '$dir/out.txt') = 2 ] &&
             grep -qE '^   end to end / direct over 2 pairs: median [0-9.]+x \(each: [0-9.]+ [0-9.]+\)' '$dir/out.txt'"
check "3. publish prints events/s and the ratio" grep -qE '^3\. publish: +[0-9]+ events/s .*: [0-9.]+x the direct' "$dir/out.txt"
check "... bytes per event against the raw packets" grep -qE '^   bytes: +[0-9.]+ per event .* [0-9.]+x the raw' "$dir/out.txt"
check "4. apply for K=1 and K=2" \
    bash -c "grep -qE '^4\. apply K=1: +[0-9]+ events/s' '$dir/out.txt' && grep -qE '^4\. apply K=2: +[0-9]+ events/s' '$dir/out.txt'"
check "5. beside a daemon, both paths, every event forwarded" \
    bash -c "[ \$(grep -cE '^5\. beside a daemon .*: [1-9][0-9]* events stored and forwarded' '$dir/out.txt') = 2 ]"
check "... and the CPU ratio" grep -qE 'JetStream / direct forwarder CPU per event: [0-9.]+x' "$dir/out.txt"
[ $failures = 0 ] || { echo "$failures failed"; exit 1; }
echo "all passed"
