#!/usr/bin/env bash
# bench/ipc.sh - IPC export overhead: seccheck-loadgen replays recorded traces
# into each receiver, interleaved, and reports drain rates, drops, and the
# receiver's CPU per million events. See bench/README.md.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    cat <<EOF
Usage: bench/ipc.sh [OPTIONS]
IPC export overhead with seccheck-loadgen: for every receiver x mode x
connections (x trace), --runs runs, interleaved (round-robin over the
configurations inside each repetition). A fresh receiver per run, stopped with
SIGTERM after loadgen exits and the receiver has drained.

  --out DIR          results directory [bench/results/<timestamp>-ipc]
  --runs N           repetitions of every configuration [3]
  --duration SECS    length of each loadgen run [1.5]
  --messages N       messages per connection instead of --duration (a run then
                     lasts as long as the slowest receiver needs)
  --receivers LIST   comma separated, from ref,dummy,discard,sqlite,sqlite-all,python
                     [ref,dummy,discard,sqlite,python]
  --modes LIST       block,sentry [block,sentry] (sentry unpaced)
  --conns LIST       connection counts [1,8]
  --trace T          trace to replay: a name in the traces directory
                     (redis_rw, mixed_syscalls, exec_loop, drops) or a file;
                     repeat for more; "more" = redis_rw and mixed_syscalls
                     [redis_rw: ~14-byte packets, the realistic hot case]
  --bin DIR          built binaries [$BIN_DIR]
  --base-bin DIR     the binaries of receivers named KIND@base (e.g. sqlite@base:
                     an older build, measured interleaved with this one)
  --alt NAME=DIR     the same for receivers KIND@NAME; repeat for more
  --traces DIR       recorded traces [$TRACES_DIR]
  --help             this text

Receivers: ref = ref-recvmmsg (plain recvmmsg discard loop, the physical
limit), dummy = seccheck-dummy, discard = seccheckd --sink discard, sqlite =
seccheckd --sink sqlite (fresh DB per run, in the private temp dir), python =
dummy/dummy_uds_server.py (gVisor's baseline).

Writes in DIR: <receiver>.txt (Go benchmark lines for benchstat, e.g.
"benchstat DIR/python.txt DIR/dummy.txt"), runs.jsonl (every run), logs/,
summary.txt (the table printed at the end), summary.md (table + machine info).
EOF
}

out='' runs=3 duration=1.5 messages='' receivers=ref,dummy,discard,sqlite,python modes=block,sentry conns=1,8
declare -a trace_args=()
cmdline=$0
[ $# -eq 0 ] || cmdline+=$(printf ' %q' "$@")
while [ $# -gt 0 ]; do
    case $1 in
        --help | -h) usage; exit 0 ;;
        --out) out=${2:?--out DIR}; shift 2 ;;
        --runs) need_uint "$1" "${2:-}"; runs=$2; shift 2 ;;
        --duration) need_num "$1" "${2:-}"; duration=$2; messages=; shift 2 ;;
        --messages) need_uint "$1" "${2:-}"; messages=$2; shift 2 ;;
        --receivers) receivers=${2:?--receivers LIST}; shift 2 ;;
        --modes) modes=${2:?--modes LIST}; shift 2 ;;
        --conns) conns=${2:?--conns LIST}; shift 2 ;;
        --trace) trace_args+=("${2:?--trace NAME|FILE}"); shift 2 ;;
        --bin) BIN_DIR=${2:?--bin DIR}; shift 2 ;;
        --base-bin) alt_add "base=${2:?--base-bin DIR}"; shift 2 ;;
        --alt) alt_add "${2:?--alt NAME=DIR}"; shift 2 ;;
        --traces) TRACES_DIR=${2:?--traces DIR}; shift 2 ;;
        *) usage >&2; die "unknown option '$1'" ;;
    esac
done
[ ${#trace_args[@]} -gt 0 ] || trace_args=(redis_rw)

declare -a trace_files=()
for t in "${trace_args[@]}"; do
    case $t in
        more) trace_files+=("$TRACES_DIR/redis_rw.trace" "$TRACES_DIR/mixed_syscalls.trace") ;;
        */* | *.trace) trace_files+=("$t") ;;
        *) trace_files+=("$TRACES_DIR/$t.trace") ;;
    esac
done
declare -A seen=()
declare -a traces=()
for f in "${trace_files[@]}"; do
    [ -f "$f" ] || die "trace $f not found (--traces DIR?)"
    [ -n "${seen[$f]:-}" ] && continue
    seen[$f]=1
    traces+=("$f")
done

IFS=, read -r -a recv_list <<<"$receivers"
IFS=, read -r -a mode_list <<<"$modes"
IFS=, read -r -a conn_list <<<"$conns"
for m in "${mode_list[@]}"; do [[ $m == block || $m == sentry ]] || die "mode '$m': block or sentry"; done
for c in "${conn_list[@]}"; do need_uint --conns "$c"; done
check_receivers "$receivers"
need_bins seccheck-loadgen

out=${out:-$(default_out ipc)}
bench_init "$out"
out=$(cd "$out" && pwd)
echo "$cmdline" >"$out/command.txt"
machine_info >"$out/machine.txt"
for r in "${recv_list[@]}"; do
    {
        echo "goos: linux"
        echo "goarch: $(uname -m | sed 's/x86_64/amd64/;s/aarch64/arm64/')"
        echo "pkg: seccheckd/bench/ipc"
        echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
    } >"$out/$r.txt"
done

if [ -n "$messages" ]; then length=(--messages "$messages"); else length=(--duration "$duration"); fi

# Every configuration, in round-robin order.
declare -a configs=()
for tf in "${traces[@]}"; do
    for m in "${mode_list[@]}"; do
        for c in "${conn_list[@]}"; do
            for r in "${recv_list[@]}"; do configs+=("$tf|$m|$c|$r"); done
        done
    done
done
say "ipc: ${#configs[@]} configurations x $runs runs, ${length[*]} each -> $out"

sock=$BENCH_TMP/ipc.sock
for ((rep = 0; rep < runs; rep++)); do
    say "repetition $((rep + 1))/$runs"
    while IFS='|' read -r tf m c r; do
        tname=$(basename "$tf" .trace)
        tag="$r-$tname-$m-c$c-rep$rep"
        log=$out/logs/$tag.log
        started=$SECONDS
        recv_start "$r" "$sock" "$log"
        t0=$(cpu_ticks "$RECV_PID")
        err=
        timeout 300 "$BIN_DIR/seccheck-loadgen" --socket "$sock" --trace "$tf" --connections "$c" --mode "$m" \
            "${length[@]}" --bench-name "IPC/trace=$tname/mode=$m/conns=$c" --json \
            </dev/null >"$out/logs/$tag.loadgen.json" 2>"$out/logs/$tag.loadgen.err" || err="loadgen exit $?: $(tail -1 "$out/logs/$tag.loadgen.err")"
        recv_wait_drained "$c"
        t1=$(cpu_ticks "$RECV_PID")
        recv_stop || err=${err:-$RECV_ERROR}
        "${SUMMARIZE[@]}" record "$out/runs.jsonl" --loadgen-json "$out/logs/$tag.loadgen.json" \
            --recv-kind "$r" --recv-log "$log" --bench-txt "$out/$r.txt" \
            receiver="$r" trace="$tname" mode="$m" conns="$c" rep="$rep" \
            cpu_ticks=$((t1 - t0)) clk_tck="$CLK_TCK" run_wall_s=$((SECONDS - started)) $(db_size_fields) \
            ${err:+"error=$err"}
    done < <(rotate "$rep" "${configs[@]}")
done

echo "load average at end (1/5/15 min): $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
"${SUMMARIZE[@]}" ipc "$out" | tee "$out/summary.txt"
echo
echo "results: $out (summary.md, runs.jsonl, <receiver>.txt for benchstat)"
