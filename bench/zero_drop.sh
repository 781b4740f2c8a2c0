#!/usr/bin/env bash
# bench/zero_drop.sh - the highest paced rate each receiver takes with zero
# drops, in seccheck-loadgen's sentry mode (gVisor's non-blocking sender).
# See bench/README.md.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    cat <<EOF
Usage: bench/zero_drop.sh [OPTIONS]
Highest paced total rate with zero drops, loadgen --mode sentry, per receiver:
start at --start-rate per connection, double until a probe drops, then bisect
between the best good rate and the lowest failing one down to --resolution.
A rate counts as good after --confirm consecutive probes with zero drops, the
receiver counting every message sent, and loadgen really offering the rate; it
fails when --max-fails probes at it did not (a failed probe restarts the count
of consecutive good ones, so one hiccup of a busy machine does not end the search).
The receivers' searches are interleaved (one probe each per round), a fresh
receiver per probe.

  --out DIR            results directory [bench/results/<timestamp>-zero-drop]
  --receivers LIST     from ref,dummy,discard,sqlite,sqlite-all,sqlite+forward,
                       sqlite+rules20,sqlite+rules500,sqlite+rules20+deliver,python
                       [ref,dummy,discard,sqlite,python]; sqlite-all: --indexes all;
                       sqlite+forward: with `seccheckd forward` beside it, shipping to
                       the PostgreSQL in BENCH_PG_URL (bench/forward.sh --zero-drop);
                       sqlite+rules20: bench/rules/usual-20.yaml; +deliver: its alerts
                       POSTed to a local bench-http-sink (bench/deliver.sh --zero-drop)
  --conns N            connections [8]
  --trace T            trace name in the traces directory, or a file [redis_rw]
  --probe-seconds S    length of each probe [2]
  --confirm N          consecutive zero-drop probes that make a rate good [2]
  --max-fails N        failed probes that make a rate bad [2]; 1 = strict, any drop fails it
  --resolution PCT     stop when the failing rate is within PCT% of the good one [5]
  --start-rate R       first rate tried, messages/s per connection [2000]
  --max-rate R         stop doubling above this per-connection rate [2000000]
  --max-probes N       probes per receiver at most [40]
  --retries N          loadgen --retries (gVisor's sink default: 0) [0]
  --bin DIR            built binaries [$BIN_DIR]
  --base-bin DIR       the binaries of receivers named KIND@base (e.g. sqlite@base:
                       an older build, measured interleaved with this one)
  --alt NAME=DIR       the same for receivers KIND@NAME; repeat for more
  --traces DIR         recorded traces [$TRACES_DIR]
  --help               this text

Writes in DIR: probes.jsonl (every probe), search.jsonl (result per receiver),
logs/, summary.txt and summary.md. For seccheckd (discard, sqlite) the table
also shows the daemon's "longest stall (not reading)" figure.
EOF
}

out='' receivers=ref,dummy,discard,sqlite,python conns=8 trace=redis_rw probe_s=2 confirm=2 max_fails=2 res=5
start_rate=2000 max_rate=2000000 max_probes=40 retries=0
cmdline=$0
[ $# -eq 0 ] || cmdline+=$(printf ' %q' "$@")
while [ $# -gt 0 ]; do
    case $1 in
        --help | -h) usage; exit 0 ;;
        --out) out=${2:?--out DIR}; shift 2 ;;
        --receivers) receivers=${2:?--receivers LIST}; shift 2 ;;
        --conns) need_uint "$1" "${2:-}"; conns=$2; shift 2 ;;
        --trace) trace=${2:?--trace NAME|FILE}; shift 2 ;;
        --probe-seconds) need_num "$1" "${2:-}"; probe_s=$2; shift 2 ;;
        --confirm) need_uint "$1" "${2:-}"; confirm=$2; shift 2 ;;
        --max-fails) need_uint "$1" "${2:-}"; max_fails=$2; shift 2 ;;
        --resolution) need_uint "$1" "${2:-}"; res=$2; shift 2 ;;
        --start-rate) need_uint "$1" "${2:-}"; start_rate=$2; shift 2 ;;
        --max-rate) need_uint "$1" "${2:-}"; max_rate=$2; shift 2 ;;
        --max-probes) need_uint "$1" "${2:-}"; max_probes=$2; shift 2 ;;
        --retries) [[ ${2:-} =~ ^[0-9]+$ ]] || die "--retries wants an integer"; retries=$2; shift 2 ;;
        --bin) BIN_DIR=${2:?--bin DIR}; shift 2 ;;
        --base-bin) alt_add "base=${2:?--base-bin DIR}"; shift 2 ;;
        --alt) alt_add "${2:?--alt NAME=DIR}"; shift 2 ;;
        --traces) TRACES_DIR=${2:?--traces DIR}; shift 2 ;;
        *) usage >&2; die "unknown option '$1'" ;;
    esac
done
case $trace in */* | *.trace) tf=$trace ;; *) tf=$TRACES_DIR/$trace.trace ;; esac
[ -f "$tf" ] || die "trace $tf not found (--traces DIR?)"
tname=$(basename "$tf" .trace)
IFS=, read -r -a recv_list <<<"$receivers"
check_receivers "$receivers"
need_bins seccheck-loadgen

out=${out:-$(default_out zero-drop)}
bench_init "$out"
out=$(cd "$out" && pwd)
echo "$cmdline" >"$out/command.txt"
machine_info >"$out/machine.txt"
: >"$out/probes.jsonl"
: >"$out/search.jsonl"

# Search state per receiver, rates per connection.
declare -A lo=() hi=() cur=() passes=() fails=() fin=() nprobes=() hi_reason=()
for r in "${recv_list[@]}"; do
    lo[$r]=0 hi[$r]=0 cur[$r]=$start_rate passes[$r]=0 fails[$r]=0 fin[$r]=0 nprobes[$r]=0 hi_reason[$r]=
done

# probe RECEIVER RATE -> sets VERDICT ("ok" or "fail") and REASON
probe() {
    local r=$1 rate=$2 n=${nprobes[$1]}
    local tag="$r-rate$rate-p$n" err=''
    local log=$out/logs/$tag.log sock=$BENCH_TMP/zd.sock
    recv_start "$r" "$sock" "$log"
    timeout 300 "$BIN_DIR/seccheck-loadgen" --socket "$sock" --trace "$tf" --connections "$conns" \
        --mode sentry --rate "$rate" --duration "$probe_s" --retries "$retries" --json \
        </dev/null >"$out/logs/$tag.loadgen.json" 2>"$out/logs/$tag.loadgen.err" ||
        err="loadgen exit $?: $(tail -1 "$out/logs/$tag.loadgen.err")"
    recv_wait_drained "$conns"
    recv_stop || err=${err:-$RECV_ERROR}
    "${SUMMARIZE[@]}" record "$out/probes.jsonl" --loadgen-json "$out/logs/$tag.loadgen.json" \
        --recv-kind "$r" --recv-log "$log" --check-zero-drop \
        receiver="$r" trace="$tname" conns="$conns" rate="$rate" probe="$n" $(db_size_fields) ${err:+"error=$err"} \
        >"$BENCH_TMP/verdict"
    VERDICT=fail REASON="no result"
    read -r VERDICT REASON <"$BENCH_TMP/verdict" || true
}

# update RECEIVER VERDICT...: one step of doubling, then bisection.
update() {
    local r=$1 verdict=$2 reason=${3:-}
    nprobes[$r]=$((nprobes[$r] + 1))
    if [ "$verdict" = ok ]; then
        passes[$r]=$((passes[$r] + 1))
        if [ "${passes[$r]}" -lt "$confirm" ]; then   # probe the same rate again
            [ "${nprobes[$r]}" -ge "$max_probes" ] && fin[$r]=1
            return 0
        fi
        lo[$r]=${cur[$r]}
        if [ "${hi[$r]}" -eq 0 ]; then
            cur[$r]=$((cur[$r] * 2))
        fi
    else
        passes[$r]=0
        fails[$r]=$((fails[$r] + 1))
        if [ "${fails[$r]}" -lt "$max_fails" ]; then   # probe the same rate again
            [ "${nprobes[$r]}" -ge "$max_probes" ] && fin[$r]=1
            return 0
        fi
        hi[$r]=${cur[$r]}
        hi_reason[$r]=$reason
        if [ "${lo[$r]}" -eq 0 ]; then
            cur[$r]=$((cur[$r] / 2))
        fi
    fi
    passes[$r]=0 fails[$r]=0
    if [ "${lo[$r]}" -gt 0 ] && [ "${hi[$r]}" -gt 0 ]; then
        if [ $(((hi[$r] - lo[$r]) * 100)) -le $((lo[$r] * res)) ]; then fin[$r]=1; return 0; fi
        cur[$r]=$(((lo[$r] + hi[$r]) / 2))
        [ "${cur[$r]}" -le "${lo[$r]}" ] && fin[$r]=1
    fi
    [ "${hi[$r]}" -eq 0 ] && [ "${cur[$r]}" -gt "$max_rate" ] && fin[$r]=1
    [ "${lo[$r]}" -eq 0 ] && [ "${cur[$r]}" -lt 1 ] && fin[$r]=1
    [ "${nprobes[$r]}" -ge "$max_probes" ] && fin[$r]=1
    return 0
}

say "zero-drop: receivers ${recv_list[*]}, $conns connections, ${probe_s}s probes, confirm $confirm, max fails $max_fails, resolution $res% -> $out"
round=0
while :; do
    active=0
    while read -r r; do
        [ "${fin[$r]}" = 1 ] && continue
        active=1
        probe "$r" "${cur[$r]}"
        update "$r" "$VERDICT" "$REASON"
    done < <(rotate "$round" "${recv_list[@]}")
    [ $active = 1 ] || break
    round=$((round + 1))
done

for r in "${recv_list[@]}"; do
    printf '{"receiver":"%s","trace":"%s","conns":%d,"best_rate":%d,"best_total":%d,"fail_rate":%d,"fail_total":%d,"fail_reason":"%s","probes":%d,"confirm":%d,"max_fails":%d,"probe_seconds":%s,"resolution_pct":%d}\n' \
        "$r" "$tname" "$conns" "${lo[$r]}" $((lo[$r] * conns)) "${hi[$r]}" $((hi[$r] * conns)) \
        "${hi_reason[$r]}" "${nprobes[$r]}" "$confirm" "$max_fails" "$probe_s" "$res" >>"$out/search.jsonl"
done

echo "load average at end (1/5/15 min): $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
"${SUMMARIZE[@]}" zero-drop "$out" | tee "$out/summary.txt"
echo
echo "results: $out (summary.md, probes.jsonl, search.jsonl)"
