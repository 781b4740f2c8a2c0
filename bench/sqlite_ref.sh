#!/usr/bin/env bash
# bench/sqlite_ref.sh - the SQLite sink's sustained drain against the bare
# prepared-statement INSERT loop (bench/ref_sqlite_insert.c) writing the same
# rows with the same schema and batch size. Runs interleaved, medians.
#   bench/sqlite_ref.sh [--runs N] [--messages N] [--connections N] [--bin DIR] [--out DIR]
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

runs=3 messages=60000 conns=8 out=
while [ $# -gt 0 ]; do
    case $1 in
        --runs) need_uint "$1" "$2"; runs=$2; shift 2 ;;
        --messages) need_uint "$1" "$2"; messages=$2; shift 2 ;;
        --connections) need_uint "$1" "$2"; conns=$2; shift 2 ;;
        --bin) BIN_DIR=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h | --help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option $1 (try --help)" ;;
    esac
done
out=${out:-$(default_out sqlite-ref)}
need_bins seccheckd seccheck-loadgen ref-sqlite-insert
bench_init "$out"
machine_info >"$out/machine.txt"
traces=("$TRACES_DIR/redis_rw.trace" "$TRACES_DIR/mixed_syscalls.trace")
total=$((messages * conns))

for r in $(seq "$runs"); do
    for what in $(rotate "$r" sqlite ref); do
        if [ "$what" = ref ]; then
            rm -f "$BENCH_TMP/ref.db"*
            rate=$("$BIN_DIR/ref-sqlite-insert" "$BENCH_TMP/ref.db" "$total" 4096 "${traces[@]}" |
                   sed -n 's/.*: \([0-9]*\) rows\/s.*/\1/p')
        else
            sock=$BENCH_TMP/s.sock
            recv_start sqlite "$sock" "$out/logs/sqlite-$r.log"
            start=$(date +%s%N)
            "$BIN_DIR/seccheck-loadgen" --socket "$sock" --trace "${traces[0]}" --trace "${traces[1]}" \
                --connections "$conns" --mode block --messages "$messages" --json >"$out/logs/loadgen-$r.json"
            recv_wait_drained "$conns"
            recv_stop
            end=$(date +%s%N)
            # Stored rows per second from the first send to the last commit.
            rate=$(python3 -c "print(round($total / (($end - $start) / 1e9)))")
        fi
        echo "$what $r $rate" | tee -a "$out/rates.txt" >&2
    done
done

python3 - "$out/rates.txt" <<'PY' | tee "$out/summary.md"
import statistics, sys
rates = {}
for line in open(sys.argv[1]):
    what, _, rate = line.split()
    rates.setdefault(what, []).append(float(rate))
s, r = statistics.median(rates["sqlite"]), statistics.median(rates["ref"])
print("| | median rows/s | runs |")
print("|---|---|---|")
print(f"| seccheckd --sink sqlite (block, 8 connections, redis+mixed) | {s:,.0f} | {' '.join(f'{x:,.0f}' for x in rates['sqlite'])} |")
print(f"| bare INSERT loop, same rows and batch size | {r:,.0f} | {' '.join(f'{x:,.0f}' for x in rates['ref'])} |")
print(f"\nratio seccheckd / bare INSERT loop: {s / r:.2f}x (target >= 0.8x)")
PY
