#!/usr/bin/env bash
# Smoke run of the bench scripts (bench/ipc.sh, bench/zero_drop.sh,
# bench/deliver.sh, bench/rules.sh's sequences, bench/alert_show.sh,
# bench/rules_load.sh, bench/macro.sh) with tiny sizes: each must finish, print its table with a
# row per receiver/pass, write its files, and leave no receiver running nor
# temporary directory behind (also when interrupted).
# Usage: bench_smoke.sh SOURCE_DIR BIN_DIR [TRACES_DIR]
# macro.sh runs only when runsc is installed (the execve workload always, the
# Redis one when redis-server and redis-benchmark are installed).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/stop_jobs.sh"

src=${1:?usage: bench_smoke.sh SOURCE_DIR BIN_DIR [TRACES_DIR]}
bin=${2:?usage: bench_smoke.sh SOURCE_DIR BIN_DIR [TRACES_DIR]}
traces=${3:-$src/tests/fixtures/traces}
src=$(cd "$src" && pwd)
bin=$(cd "$bin" && pwd)

dir=$(mktemp -d /tmp/seccheckd-bench-smoke-XXXXXX)
cleanup() {
    stop_jobs   # the interrupted ipc.sh run, if a check failed before it was reaped
    rm -rf "$dir"
}
trap cleanup EXIT
mkdir "$dir/tmp"
export TMPDIR=$dir/tmp   # the scripts' private temp dirs (sockets, DBs) go here

failures=0
ok() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; failures=$((failures + 1)); }
check() {   # check DESCRIPTION COMMAND...
    local what=$1
    shift
    if "$@"; then ok "$what"; else fail "$what"; fi
}

# No process may still run with our temp dir in its command line, and the
# scripts' temp dirs must be gone.
no_leftovers() {
    local p found=0
    for p in /proc/[0-9]*; do
        [ "${p#/proc/}" = $$ ] && continue
        if tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -q "$dir/tmp/"; then
            echo "  left running: ${p#/proc/}: $(tr '\0' ' ' <"$p/cmdline")"
            found=1
        fi
    done
    [ $found = 0 ] && [ -z "$(ls -A "$dir/tmp")" ]
}

run_script() {   # run_script NAME ARGS... -> output in $dir/NAME.out, status in $rc
    local name=$1
    shift
    rc=0
    timeout 600 bash "$src/bench/$name.sh" "$@" >"$dir/$name.out" 2>&1 || rc=$?
    if [ $rc != 0 ]; then
        echo "---- $name.sh output (exit $rc) ----"
        tail -40 "$dir/$name.out"
    fi
    return 0
}

receivers=(ref dummy discard sqlite python)

# ---------------------------------------------------------------- usage
for s in ipc zero_drop macro; do
    check "$s.sh --help" bash -c "bash '$src/bench/$s.sh' --help | grep '^Usage: bench/$s.sh' >/dev/null"
    check "$s.sh rejects an unknown option" bash -c "! bash '$src/bench/$s.sh' --bogus >/dev/null 2>&1"
done
check "summarize.py --help" bash -c "python3 '$src/bench/summarize.py' --help | grep 'summarize.py ipc OUT' >/dev/null"

# ---------------------------------------------------------------- ipc.sh
run_script ipc --runs 1 --duration 0.2 --conns 1,2 --out "$dir/ipc" --bin "$bin" --traces "$traces"
check "ipc.sh exits 0" [ "$rc" = 0 ]
for m in block sentry; do
    for c in 1 2; do
        for r in "${receivers[@]}"; do
            check "ipc table row $m conns=$c $r (every message received)" \
                grep -qE "^$m +$c +$r +[0-9,]+ .* all +" "$dir/ipc/summary.txt"
        done
    done
done
check "ipc sqlite rows show DB bytes/event" \
    grep -qE "^block +1 +sqlite +[0-9,]+ .* [0-9]+\.[0-9]{3} +[0-9,]+ +1$" "$dir/ipc/summary.txt"
check "ipc headline table" grep -q "^Headline ratios, trace redis_rw" "$dir/ipc/summary.txt"
check "ipc runs.jsonl has 20 runs, none failed" \
    bash -c "[ \$(wc -l <'$dir/ipc/runs.jsonl') = 20 ] && ! grep -q '\"error\"' '$dir/ipc/runs.jsonl'"
for r in "${receivers[@]}"; do
    check "ipc $r.txt has 4 benchmark lines with receiver CPU" \
        bash -c "[ \$(grep -cE '^BenchmarkIPC/trace=redis_rw/mode=(block|sentry)/conns=[12](-[0-9]+)?\s+[0-9]+\s+[0-9.]+ ns/op\s+[0-9]+ msgs/s.* drop%\s+[0-9.]+ recv-cpu-s/Mmsg$' '$dir/ipc/$r.txt') = 4 ]"
done
check "ipc summary.md with machine info" grep -q "^- nproc: " "$dir/ipc/summary.md"
check "ipc.sh left no receiver or temp dir" no_leftovers

# ---------------------------------------------------------------- zero_drop.sh
run_script zero_drop --conns 2 --probe-seconds 0.2 --confirm 1 --max-fails 1 --resolution 50 --start-rate 500 \
    --max-probes 3 --out "$dir/zd" --bin "$bin" --traces "$traces"
check "zero_drop.sh exits 0" [ "$rc" = 0 ]
check "zero_drop table title" grep -q "^Highest paced total rate with zero drops" "$dir/zd/summary.txt"
for r in "${receivers[@]}"; do
    check "zero_drop table row $r" grep -qE "^$r +([0-9,]+|none) " "$dir/zd/summary.txt"
done
check "zero_drop seccheckd rows show the longest stall and the loop's own" \
    grep -qE "^(discard|sqlite) .* [0-9]+\.[0-9]{2} +([0-9]+\.[0-9]{2}|-) +[0-9]+\.[0-9]{2} +([0-9,]+|-)$" "$dir/zd/summary.txt"
check "zero_drop search.jsonl has one result per receiver" [ "$(wc -l <"$dir/zd/search.jsonl")" = 5 ]
check "zero_drop.sh left no receiver or temp dir" no_leftovers

# ---------------------------------------------------------------- deliver.sh
check "deliver.sh --help" bash -c "bash '$src/bench/deliver.sh' --help | grep '^Usage: bench/deliver.sh' >/dev/null"
run_script deliver --alerts 300 --runs 1 --live-rate 1000 --live-seconds 1 --out "$dir/deliver" --bin "$bin" \
    --traces "$traces"
check "deliver.sh exits 0" [ "$rc" = 0 ]
check "deliver part 1: the C and the Python receiver" \
    bash -c "grep -qE '^  bench-http-sink \(C\) +[0-9]+ alerts/s' '$dir/deliver/summary.txt' &&
             grep -qE '^  Python http.server +[0-9]+ alerts/s' '$dir/deliver/summary.txt'"
check "deliver part 2: every alert raised reached the receiver" \
    grep -qE "^part 2, live .* ([0-9]+) alerts raised .* the receiver counted \1$" "$dir/deliver/summary.txt"
check "deliver.sh left no receiver or temp dir" no_leftovers
run_script zero_drop --receivers sqlite+rules20+deliver --conns 2 --probe-seconds 0.2 --confirm 1 --max-fails 1 \
    --resolution 50 --start-rate 500 --max-probes 2 --trace mixed_syscalls --out "$dir/zdd" --bin "$bin" --traces "$traces"
check "zero_drop.sh with sqlite+rules20+deliver exits 0" [ "$rc" = 0 ]
check "its probes record the alerts received and left waiting" \
    bash -c "grep -q '\"alerts_received\"' '$dir/zdd/probes.jsonl' && grep -q '\"alerts_waiting\": *\"\?0' '$dir/zdd/probes.jsonl'"
check "zero_drop.sh with delivery left no receiver or temp dir" no_leftovers

# ---------------------------------------------------------------- rules.sh, its sequences' part
run_script rules --skip-cpu --skip-latency --runs 1 --messages 500 --hostile 500 --conns 2 --out "$dir/rules" \
    --bin "$bin"
check "rules.sh (sequences) exits 0" [ "$rc" = 0 ]
check "rules.sh: the default rules with and without their sequences, on both traces" \
    bash -c "grep -qE '^  mixed_syscalls +without [0-9.]+ s .* ratio ([0-9.]+x|-)' '$dir/rules/summary.txt' &&
             grep -qE '^  exec_loop +without [0-9.]+ s .* ratio ([0-9.]+x|-)' '$dir/rules/summary.txt'"
check "rules.sh: the hostile flood's writer CPU and peak RSS" \
    bash -c "grep -q '^sequences, hostile flood: writer CPU per million stored events without' '$dir/rules/summary.txt' &&
             grep -qE '^sequences, hostile flood: peak RSS without [0-9]+ MiB, with [0-9]+ MiB' '$dir/rules/summary.txt'"
check "rules.sh left no receiver or temp dir" no_leftovers

# ---------------------------------------------------------------- alert_show.sh, rules_load.sh (issue 32 items 7, 9)
run_script alert_show --events 2000 --runs 1 --out "$dir/alert_show" --bin "$bin"
check "alert_show.sh exits 0" [ "$rc" = 0 ]
check "alert_show.sh: the forged 64-deep chain told, with its wall and CPU time" \
    grep -qE '^this +[0-9]+ +6[0-9] +[0-9.]+ +[0-9.]+$' "$dir/alert_show/summary.txt"
run_script rules_load --cases doubling30k,doubling-bound --runs 1 --out "$dir/rules_load" --bin "$bin" --traces "$traces"
check "rules_load.sh exits 0" [ "$rc" = 0 ]
check "rules_load.sh: the 30 KB doubling file refused (exit 2), the one under the bound loaded with its cost per event" \
    bash -c "grep -qE '^doubling30k +this +[0-9.]+ +[0-9.]+ +2 +- *$' '$dir/rules_load/summary.txt' &&
             grep -qE '^doubling-bound +this +[0-9.]+ +[0-9.]+ +0 +[0-9]+ *$' '$dir/rules_load/summary.txt'"
check "alert_show.sh and rules_load.sh left no receiver or temp dir" no_leftovers

# ---------------------------------------------------------------- interrupted run
rc=0
bash "$src/bench/ipc.sh" --runs 1 --duration 1 --receivers python,sqlite --modes block --conns 2 \
    --out "$dir/int" --bin "$bin" --traces "$traces" >"$dir/int.out" 2>&1 &
pid=$!
for _ in $(seq 500); do
    ls "$dir/int/logs/"*.loadgen.json >/dev/null 2>&1 && break
    sleep 0.02
done
kill -TERM $pid
wait $pid || rc=$?
check "ipc.sh stops on SIGTERM with status 143" [ "$rc" = 143 ]
check "interrupted ipc.sh left no receiver or temp dir" no_leftovers

# ---------------------------------------------------------------- macro.sh
if command -v runsc >/dev/null; then
    workloads=execve
    if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
        workloads=redis,execve
    else
        echo "note: redis not installed, macro.sh smoke runs the execve workload only"
    fi
    run_script macro --runs 1 --workloads "$workloads" --execs 5 --redis-requests 100 --no-install \
        --out "$dir/macro" --bin "$bin"
    check "macro.sh exits 0" [ "$rc" = 0 ]
    for w in ${workloads//,/ }; do
        t="execve loop in runsc"
        [ "$w" = redis ] && t="Redis SET in runsc"
        check "macro $w table" grep -q "^$t" "$dir/macro/summary.txt"
    done
    for p in baseline null; do
        check "macro row $p" grep -qE "^$p +.* [0-9,]+ +[0-9,]+-[0-9,]+ +[0-9.]+ +- +- +- " "$dir/macro/summary.txt"
    done
    for p in dummy seccheckd python; do
        check "macro row $p with events received" \
            grep -qE "^$p +.* [0-9,]+ +[0-9,]+-[0-9,]+ +[0-9.]+ +[1-9][0-9,]* +[0-9,]+ / [0-9,]+ " "$dir/macro/summary.txt"
    done
    check "macro: no failed sandbox run" bash -c "! grep -q 'Failed runs' '$dir/macro/summary.txt'"
    check "macro.sh left no receiver or temp dir" no_leftovers
else
    echo "skip - macro.sh: runsc not installed (apt-get install -y runsc)"
fi

if [ $failures -ne 0 ]; then
    echo "bench smoke: $failures check(s) failed"
    for f in "$dir"/*.out; do echo "---- $f"; tail -30 "$f"; done
    exit 1
fi
echo "bench smoke: all checks passed"
