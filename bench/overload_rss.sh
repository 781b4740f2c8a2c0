#!/usr/bin/env bash
# bench/overload_rss.sh - memory under sustained overload: loadgen floods
# seccheckd (SQLite sink, block mode: faster than SQLite can store) for
# --seconds; the daemon's RSS is sampled every second. Bounded memory means a
# flat line: the writer queue is capped (--queue-max) and reading pauses.
#   bench/overload_rss.sh [--seconds 60] [--connections 8] [--bin DIR] [--out DIR]
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

seconds=60 conns=8 out=
while [ $# -gt 0 ]; do
    case $1 in
        --seconds) need_uint "$1" "$2"; seconds=$2; shift 2 ;;
        --connections) need_uint "$1" "$2"; conns=$2; shift 2 ;;
        --bin) BIN_DIR=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h | --help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option $1 (try --help)" ;;
    esac
done
out=${out:-$(default_out overload-rss)}
need_bins seccheckd seccheck-loadgen
bench_init "$out"
machine_info >"$out/machine.txt"
sock=$BENCH_TMP/s.sock
recv_start sqlite "$sock" "$out/logs/seccheckd.log"
"$BIN_DIR/seccheck-loadgen" --socket "$sock" --trace "$TRACES_DIR/mixed_syscalls.trace" \
    --connections "$conns" --mode block --duration "$seconds" --json >"$out/loadgen.json" &
lg=$!
BENCH_PIDS+=("$lg")
for t in $(seq "$seconds"); do
    sleep 1
    echo "$t $(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$RECV_PID/status")" >>"$out/rss.txt"
done
wait "$lg" || true
recv_wait_drained "$conns"
recv_stop
python3 - "$out/rss.txt" "$out/loadgen.json" "$out/logs/seccheckd.log" <<'PY' | tee "$out/summary.md"
import json, re, sys
rss = [int(l.split()[1]) for l in open(sys.argv[1]) if len(l.split()) == 2]
lg = json.load(open(sys.argv[2]))
log = open(sys.argv[3]).read()
stall = re.search(r"longest stall \(not reading\) ([0-9.]+) ms", log)
tail = rss[len(rss) // 6:]   # after the first sixth: warm-up done
print(f"overload {len(rss)} s, {lg['connections']} connections, {lg['sent']:,} messages stored ({lg['msgs_per_s']:,.0f}/s)")
print(f"RSS KiB: start {rss[0]}, min {min(tail)}, max {max(tail)}, end {rss[-1]}; "
      f"growth after warm-up {max(tail) - min(tail)} KiB")
print(f"longest loop stall: {stall.group(1) if stall else '?'} ms")
print("samples (s KiB): " + " ".join(f"{i+1}:{v}" for i, v in enumerate(rss) if i % 5 == 4))
PY
