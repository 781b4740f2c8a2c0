#!/usr/bin/env bash
# bench/nats.sh - the fleet on a replicated NATS JetStream stream against
# the direct path, on one machine: a 3-node nats-server cluster (R3 stream)
# and a PostgreSQL 15 (fsync on), both started here on 127.0.0.1.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
. "$repo/tests/fleet/pg.sh"
. "$repo/tests/fleet/lib.sh"
. "$repo/tests/fleet/nats.sh"

usage() {
    cat <<'USAGE'
Usage: bench/nats.sh [OPTIONS]
Fills a daemon's database with --events events of --trace (loadgen block
mode), then, each into fresh tables or a fresh stream:
  1. direct        seccheckd forward --to postgresql://...: events/s until the
                   central copy has every batch (bench/forward.sh's part 1)
  2. end to end    seccheckd forward --to nats://... (R3) with seccheckd central
                   running: events/s until the central copy has every batch
  3. publish       seccheckd forward --to nats://... alone: events/s until the
                   stream has every batch; bytes per event in the stream
                   against the raw packets'; the forwarder's peak RSS
  4. apply         --hosts copies of the database published under as many host
                   ids, then seccheckd central started over the full stream,
                   with K = 1 and K = 2 partitions (the stream made again for
                   each): events/s until every host is in; the consumer's peak
                   RSS
  5. beside a daemon (--live S, 0 to skip): the daemon at --live-rate events/s
                   (loadgen sentry mode) for S seconds with its forwarder
                   beside it, direct (PostgreSQL on this machine) then
                   JetStream (the 3 nodes on this machine, no consumer: in a
                   fleet neither runs on the host): the forwarder's CPU
                   seconds per million events forwarded
Ratios are from this one run (2 noisy cores: the servers, the consumer and the
forwarder share them).

  --events N        events in the database [300000]
  --trace NAME      trace in the traces directory [mixed_syscalls]
  --hosts N         part 4: hosts [4]
  --live S          part 5: seconds of load [20]
  --live-rate R     part 5: loadgen's rate, events/s [50000]
  --compress LEVEL  the forwarder's zstd level [its default]
  --parts LIST      which parts, comma-separated [1,2,3,4,5] (part 1 gives the
                    ratios' base: without it they are not printed)
  --pairs N         parts 1 and 2 in turn N times, then the median of their
                    ratios [1]
  --bin DIR         built binaries [build/bin]
  --traces DIR      recorded traces [tests/fixtures/traces]
  --help            this text
USAGE
}

events=300000 trace=mixed_syscalls nhosts=4 live_s=20 live_rate=50000 compress=() parts=1,2,3,4,5 pairs=1
bin=$repo/build/bin traces=$repo/tests/fixtures/traces
while [ $# -gt 0 ]; do
    case $1 in
        --help | -h) usage; exit 0 ;;
        --events) events=${2:?}; shift 2 ;;
        --trace) trace=${2:?}; shift 2 ;;
        --hosts) nhosts=${2:?}; shift 2 ;;
        --live) live_s=${2:?}; shift 2 ;;
        --live-rate) live_rate=${2:?}; shift 2 ;;
        --compress) compress=(--compress "${2:?}"); shift 2 ;;
        --parts) parts=${2:?}; shift 2 ;;
        --pairs) pairs=${2:?}; shift 2 ;;
        --bin) bin=${2:?}; shift 2 ;;
        --traces) traces=${2:?}; shift 2 ;;
        *) echo "bench/nats.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
    esac
done
for v in "$events" "$nhosts" "$live_rate" "$pairs"; do
    [[ $v =~ ^[0-9]+$ && $v -gt 0 ]] || { echo "bench/nats.sh: expected a positive integer, got '$v'" >&2; exit 2; }
done
[[ $live_s =~ ^[0-9]+$ ]] || { echo "bench/nats.sh: --live: expected seconds, got '$live_s'" >&2; exit 2; }
[[ $parts =~ ^[1-5](,[1-5])*$ ]] || { echo "bench/nats.sh: --parts: expected numbers 1 to 5, got '$parts'" >&2; exit 2; }
part() { [[ ,$parts, == *,$1,* ]]; }
direct=0

fleet_setup bench-nats
nats_user admin admin-pw admin
nats_user central pw-c central
for i in $(seq 0 "$nhosts"); do nats_user "bench-$i" "pw-$i" host; done
nats_start || exit 1
PG_FSYNC=on PG_SHARED_BUFFERS=128MB pg_start "$dir" || exit 1
admin=(--nats-auth "$dir/nats/admin.auth")

now() { date +%s.%N; }
cpu_s() { awk -v t="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%.2f", ($12 + $13) / t }' "/proc/$1/stat" 2>/dev/null || echo 0; }
peak_mib() { awk '/^VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status" 2>/dev/null || echo 0; }
rate() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.0f", n / (b - a) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b) printf "%.2f", a / b; else printf "-" }'; }
metric() { curl -s --unix-socket "$1" http://localhost/metrics | awk -v n="$2" '$1 == n { print $2 }'; }
fresh_tables() {
    psql_c "SET client_min_messages = warning; DROP TABLE IF EXISTS events, batches, runs, connections, hosts, gaps,
            refusals, alerts, container_info, nats_positions CASCADE" >/dev/null
    psql_c "CHECKPOINT" >/dev/null
}
fresh_stream() {   # fresh_stream K: a new cluster, its stream of K partitions
    nats_stop
    nats_start || exit 1
    "$bin/seccheckd" nats-setup --to "$NATS_URLS" "${admin[@]}" --partitions "$1" --max-bytes 3G >/dev/null ||
        { echo "bench/nats.sh: nats-setup failed" >&2; exit 1; }
}
stream_has() {   # stream_has DB HOST SOCKET: the forwarder's stream position is the database's last batch
    [ "$(metric "$3" seccheckd_forward_shipped_batch_id)" = "$(sqlite3 "$1" "SELECT max(id) FROM batches")" ]
}
publisher() {   # publisher VAR DB HOST: seccheckd forward --to nats:// as HOST
    spawn "$1" "$bin/seccheckd" forward --db "$2" --to "$NATS_URLS" --nats-auth "$dir/nats/$3.auth" --host-id "$3" \
        --poll-ms 20 --stats-interval 0 --metrics-listen "unix:$dir/$1.metrics" "${compress[@]}"
}
consumer() {   # consumer VAR
    spawn "$1" "$bin/seccheckd" central --from "$NATS_URLS" --to "$PG_URL" --nats-auth "$dir/nats/central.auth" \
        --stats-interval 0
}

# ---------------------------------------------------------------- the host's database
spawn d "$bin/seccheckd" --socket "$dir/s.sock" --db "$dir/t.db" "${own_names[@]}"
wait_for 20 test -S "$dir/s.sock"
"$bin/seccheck-loadgen" --socket "$dir/s.sock" --trace "$traces/$trace.trace" --mode block \
    --messages "$events" >"$dir/fill.log" 2>&1 || { cat "$dir/fill.log"; exit 1; }
stop "$d"
stored=$(sqlite3 "$dir/t.db" "SELECT count(*) FROM events")
raw_bytes=$(sqlite3 "$dir/t.db" "SELECT sum(length(raw)) FROM events")
echo "database: $stored events of $trace, $(sqlite3 "$dir/t.db" "SELECT count(*) FROM batches") batches," \
     "raw packets $(awk -v b="$raw_bytes" -v n="$stored" 'BEGIN { printf "%.1f", b / n }') bytes per event;" \
     "$(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"

# ---------------------------------------------------------------- 1. direct
run_direct() {
    fresh_tables
    local t0 t1 cpu
    t0=$(now)
    spawn f "$bin/seccheckd" forward --db "$dir/t.db" --to "$PG_URL" --host-id bench-0 --poll-ms 20
    wait_for 600 caught_up "$dir/t.db" bench-0 || { echo "the direct forwarder did not catch up"; exit 1; }
    t1=$(now)
    cpu=$(cpu_s "$f")
    stop "$f"
    direct=$(rate "$stored" "$t0" "$t1")
    echo "1. direct:      $direct events/s into PostgreSQL (forwarder CPU $(awk -v c="$cpu" -v n="$stored" 'BEGIN { printf "%.2f", c * 1e6 / n }') s per million events)"
}

# ---------------------------------------------------------------- 2. end to end
run_e2e() {
    fresh_tables
    fresh_stream 1
    consumer c
    local t0 t1 c_peak
    t0=$(now)
    publisher f "$dir/t.db" bench-0
    wait_for 600 caught_up "$dir/t.db" bench-0 || { echo "the stream's copy did not reach PostgreSQL"; tail "$dir/c.log"; exit 1; }
    t1=$(now)
    c_peak=$(peak_mib "$c")
    stop "$f"
    stop "$c"
    e2e=$(rate "$stored" "$t0" "$t1")
    echo "2. end to end:  $e2e events/s host database -> JetStream (R3) -> PostgreSQL: $(ratio "$e2e" "$direct")x the direct path (>= 0.8x wanted); consumer peak RSS $c_peak MiB"
}

# --pairs N: parts 1 and 2 taken in turn N times (each ratio against the
# direct run just before it), then the median ratio: one pair of 3-second
# runs is at the mercy of whatever else the 2 cores do meanwhile.
ratios=()
for ((pair = 1; pair <= pairs; pair++)); do
    part 1 && run_direct
    part 2 && { run_e2e; ratios+=("$(ratio "$e2e" "$direct")"); }
done
if part 1 && part 2 && [ "$pairs" -gt 1 ]; then
    echo "   end to end / direct over $pairs pairs: median $(printf '%s\n' "${ratios[@]}" | sort -g |
        awk '{ v[NR] = $1 } END { printf "%.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')x" \
         "(each: ${ratios[*]})"
fi

# ---------------------------------------------------------------- 3. publish alone
if part 3; then
fresh_stream 1
t0=$(now)
publisher f "$dir/t.db" bench-0
wait_for 600 stream_has "$dir/t.db" bench-0 "$dir/f.metrics" || { echo "the publisher did not finish"; tail "$dir/f.log"; exit 1; }
t1=$(now)
pub_cpu=$(cpu_s "$f")
f_peak=$(peak_mib "$f")
bytes=$(metric "$dir/f.metrics" seccheckd_forward_bytes_total)
rendered=$(metric "$dir/f.metrics" seccheckd_forward_raw_bytes_total)
msgs=$(metric "$dir/f.metrics" seccheckd_forward_messages_total)
stop "$f"
pub=$(rate "$stored" "$t0" "$t1")
echo "3. publish:     $pub events/s host database -> JetStream (R3): $(ratio "$pub" "$direct")x the direct path (>= 3x wanted);" \
     "forwarder CPU $(awk -v c="$pub_cpu" -v n="$stored" 'BEGIN { printf "%.2f", c * 1e6 / n }') s per million events, peak RSS $f_peak MiB"
echo "   bytes:       $(awk -v b="$bytes" -v n="$stored" 'BEGIN { printf "%.1f", b / n }') per event in the stream" \
     "($msgs messages; rendered $(awk -v b="$rendered" -v n="$stored" 'BEGIN { printf "%.1f", b / n }') before zstd)," \
     "$(ratio "$bytes" "$raw_bytes")x the raw packets' bytes (<= 1.2x wanted)"
fi

# ---------------------------------------------------------------- 4. apply, K = 1 and 2
apply_1=0 apply_2=0
part 4 && for k in 1 2; do
    fresh_tables
    fresh_stream "$k"
    for i in $(seq 1 "$nhosts"); do
        publisher "p$i" "$dir/t.db" "bench-$i"
    done
    for i in $(seq 1 "$nhosts"); do
        var=p$i
        wait_for 600 stream_has "$dir/t.db" "bench-$i" "$dir/$var.metrics" || { echo "host $i was not published"; exit 1; }
        stop "${!var}"
    done
    hashed=""
    for i in $(seq 1 "$nhosts"); do hashed+=" $(python3 -c '
import sys
h = 0xcbf29ce484222325
for b in sys.argv[1].encode():
    h = ((h ^ b) * 0x100000001b3) & (2**64 - 1)
print(h % int(sys.argv[2]))' "bench-$i" "$k")"; done
    all_in() {
        local i
        for i in $(seq 1 "$nhosts"); do caught_up "$dir/t.db" "bench-$i" || return 1; done
    }
    t0=$(now)
    consumer c
    wait_for 900 all_in || { echo "the consumer did not apply every host"; tail "$dir/c.log"; exit 1; }
    t1=$(now)
    c_peak=$(peak_mib "$c")
    c_cpu=$(cpu_s "$c")
    stop "$c"
    applied=$(rate "$((stored * nhosts))" "$t0" "$t1")
    eval "apply_$k=$applied"
    echo "4. apply K=$k:   $applied events/s, $nhosts hosts (partitions:$hashed) from a full stream into PostgreSQL;" \
         "consumer CPU $(awk -v c="$c_cpu" -v n="$((stored * nhosts))" 'BEGIN { printf "%.2f", c * 1e6 / n }') s per million events, peak RSS $c_peak MiB"
done
part 4 && echo "   K=2 / K=1:   $(ratio "$apply_2" "$apply_1")x"

[ "$live_s" -gt 0 ] && part 5 || exit 0

# ---------------------------------------------------------------- 5. beside a daemon at --live-rate
for path in direct nats; do
    rm -f "$dir/l.db" "$dir/l.db-wal" "$dir/l.db-shm"
    spawn d "$bin/seccheckd" --socket "$dir/l.sock" --db "$dir/l.db" "${own_names[@]}"
    wait_for 20 test -S "$dir/l.sock"
    fresh_tables
    if [ $path = direct ]; then
        spawn f "$bin/seccheckd" forward --db "$dir/l.db" --to "$PG_URL" --host-id live --poll-ms 200
    else
        fresh_stream 1
        publisher f "$dir/l.db" bench-0
    fi
    "$bin/seccheck-loadgen" --socket "$dir/l.sock" --trace "$traces/$trace.trace" --mode sentry --connections 4 \
        --rate "$((live_rate / 4))" --duration "$live_s" >"$dir/live-$path.log" 2>&1
    if [ $path = direct ]; then
        wait_for 120 caught_up "$dir/l.db" live || echo "   (direct: the central copy did not catch up)"
    else
        wait_for 120 stream_has "$dir/l.db" bench-0 "$dir/f.metrics" || echo "   (nats: the stream did not catch up)"
    fi
    fcpu=$(cpu_s "$f")
    n=$(sqlite3 "$dir/l.db" "SELECT count(*) FROM events")
    stop "$f"
    stop "$d"
    per=$(awk -v c="$fcpu" -v n="$n" 'BEGIN { printf "%.2f", n ? c * 1e6 / n : 0 }')
    eval "live_$path=$per"
    echo "5. beside a daemon at $live_rate events/s for ${live_s}s ($path): $n events stored and forwarded;" \
         "forwarder CPU $per s per million events"
done
echo "   JetStream / direct forwarder CPU per event: $(ratio "$live_nats" "$live_direct")x"
exit 0
