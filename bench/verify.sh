#!/usr/bin/env bash
# bench/verify.sh - how fast `seccheckd verify` checks a database, in events/s:
# the chain and every decoded column (the default) and the chain alone
# (--hash-only), on the daemon's SQLite database and on its central copy
# (`verify --to`, after `seccheckd forward` shipped it to a local PostgreSQL).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
. "$repo/tests/fleet/pg.sh"
. "$repo/tests/fleet/lib.sh"

usage() {
    cat <<'USAGE'
Usage: bench/verify.sh [OPTIONS]
Fills a daemon's database with --events events of --trace (loadgen block
mode), times `seccheckd verify --db` with and without --hash-only, forwards it
to a fresh local PostgreSQL (Unix socket) and times `seccheckd verify --to`
the same two ways. Each figure is the best of --repeat runs.

  --events N    events [300000]
  --trace NAME  trace in the traces directory [mixed_syscalls]
  --repeat N    runs of each verify [3]
  --bin DIR     built binaries [build/bin]
  --traces DIR  recorded traces [tests/fixtures/traces]
  --help        this text
USAGE
}

events=300000 trace=mixed_syscalls repeat=3 bin=$repo/build/bin traces=$repo/tests/fixtures/traces
while [ $# -gt 0 ]; do
    case $1 in
        --help|-h) usage; exit 0 ;;
        --events) events=${2:?}; shift 2 ;;
        --trace) trace=${2:?}; shift 2 ;;
        --repeat) repeat=${2:?}; shift 2 ;;
        --bin) bin=${2:?}; shift 2 ;;
        --traces) traces=${2:?}; shift 2 ;;
        *) echo "bench/verify.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
    esac
done
for v in "$events" "$repeat"; do
    [[ $v =~ ^[0-9]+$ && $v -gt 0 ]] || { echo "bench/verify.sh: expected a positive integer, got '$v'" >&2; exit 2; }
done

fleet_setup bench-verify
pg_start "$dir" || exit 1

spawn d "$bin/seccheckd" --socket "$dir/s.sock" --db "$dir/t.db" "${own_names[@]}"
wait_for 20 test -S "$dir/s.sock"
"$bin/seccheck-loadgen" --socket "$dir/s.sock" --trace "$traces/$trace.trace" --mode block \
    --messages "$events" >"$dir/fill.log" 2>&1 || { cat "$dir/fill.log"; exit 1; }
stop "$d"
stored=$(sqlite3 "$dir/t.db" "SELECT count(*) FROM events")
spawn f "$bin/seccheckd" forward --db "$dir/t.db" --to "$PG_URL" --host-id bench --poll-ms 20
wait_for 600 caught_up "$dir/t.db" bench || { echo "forwarder did not catch up"; tail "$dir/f.log"; exit 1; }
stop "$f"

now() { date +%s.%N; }
# best WHAT ARGS...: the shortest of --repeat runs of `seccheckd verify ARGS`
# (each must exit 0), as "S s = N events/s", and every run's seconds.
best() {
    local what=$1 t0 t1 s min= all=
    shift
    for _ in $(seq "$repeat"); do
        t0=$(now)
        "$bin/seccheckd" verify "$@" >"$dir/verify.out" 2>&1 || { echo "$what failed:"; cat "$dir/verify.out"; exit 1; }
        t1=$(now)
        s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
        all="$all $s"
        [ -z "$min" ] || awk -v a="$s" -v b="$min" 'BEGIN { exit !(a < b) }' && min=$s
    done
    awk -v s="$min" -v n="$stored" -v w="$what" -v all="$all" \
        'BEGIN { printf "%-34s %8.2f s = %7.0f events/s (runs:%s s)\n", w, s, n / s, all }'
}
echo "verify speed: $stored events ($trace, local db $(($(stat -c %s "$dir/t.db") >> 20)) MiB, load $(cut -d' ' -f1 /proc/loadavg))"
best "verify --db (chain + columns)" --db "$dir/t.db"
best "verify --db --hash-only" --db "$dir/t.db" --hash-only
best "verify --to (chain + columns)" --to "$PG_URL" --host-id bench
best "verify --to --hash-only" --to "$PG_URL" --host-id bench --hash-only
