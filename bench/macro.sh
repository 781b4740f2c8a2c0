#!/usr/bin/env bash
# bench/macro.sh - the passes of gVisor's seccheck benchmark on real runsc
# workloads (Redis SET, an execve loop): baseline, null sink, and remote sinks
# to seccheck-dummy, seccheckd (SQLite) and the Python baseline.
# See bench/README.md.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    cat <<EOF
Usage: bench/macro.sh [OPTIONS]
Runs each workload inside a gVisor sandbox (runsc --rootless --network=none
do) once per pass, --runs times, interleaved (round-robin over the passes
inside each repetition), and reports the workload's throughput, its ratio to
the baseline pass, and for the remote passes what the receiver got and what
the sandbox reported dropping. A fresh receiver per remote run.

  --out DIR            results directory [bench/results/<timestamp>-macro]
  --runs N             repetitions [3]
  --workloads LIST     redis,execve [redis,execve]
  --passes LIST        baseline,null,dummy,seccheckd,python [all of them]
  --redis-requests N   redis-benchmark -t set -n N [15000]
  --redis-clients N    redis-benchmark -c N [50, redis-benchmark's default]
  --execs N            /bin/true executions in the execve loop [800]
  --timeout SECS       limit per sandbox run [300]
  --no-install         fail (with the apt-get command) instead of installing
                       redis-server and redis-tools when they are missing
  --bin DIR            built binaries [$BIN_DIR]
  --help               this text

Passes and configs (configs/bench/):
  baseline   empty.json                      empty trace session
  null       redis-null.json / execve-null.json      points on, sink null
  dummy      redis-remote.json / execve-remote.json  remote sink -> seccheck-dummy
  seccheckd  same, remote sink -> seccheckd --sink sqlite (fresh DB per run)
  python     same, remote sink -> dummy/dummy_uds_server.py
(remote configs are copied with the endpoint rewritten to a private socket).

Writes in DIR: runs.jsonl, logs/ (sandbox output, receiver logs),
summary.txt and summary.md.
EOF
}

out='' runs=3 workloads=redis,execve passes=baseline,null,dummy,seccheckd,python
redis_n=15000 redis_c=50 execs=800 sandbox_timeout=300 install=1
cmdline=$0
[ $# -eq 0 ] || cmdline+=$(printf ' %q' "$@")
while [ $# -gt 0 ]; do
    case $1 in
        --help | -h) usage; exit 0 ;;
        --out) out=${2:?--out DIR}; shift 2 ;;
        --runs) need_uint "$1" "${2:-}"; runs=$2; shift 2 ;;
        --workloads) workloads=${2:?--workloads LIST}; shift 2 ;;
        --passes) passes=${2:?--passes LIST}; shift 2 ;;
        --redis-requests) need_uint "$1" "${2:-}"; redis_n=$2; shift 2 ;;
        --redis-clients) need_uint "$1" "${2:-}"; redis_c=$2; shift 2 ;;
        --execs) need_uint "$1" "${2:-}"; execs=$2; shift 2 ;;
        --timeout) need_uint "$1" "${2:-}"; sandbox_timeout=$2; shift 2 ;;
        --no-install) install=0; shift ;;
        --bin) BIN_DIR=${2:?--bin DIR}; shift 2 ;;
        *) usage >&2; die "unknown option '$1'" ;;
    esac
done
IFS=, read -r -a wl_list <<<"$workloads"
IFS=, read -r -a pass_list <<<"$passes"
for w in "${wl_list[@]}"; do [[ $w == redis || $w == execve ]] || die "workload '$w': redis or execve"; done
for p in "${pass_list[@]}"; do
    case $p in
        baseline | null | python) ;;
        dummy) need_bins seccheck-dummy ;;
        seccheckd) need_bins seccheckd ;;
        *) die "pass '$p': baseline, null, dummy, seccheckd or python" ;;
    esac
done
configs=$REPO_DIR/configs/bench
for f in empty.json redis-null.json redis-remote.json execve-null.json execve-remote.json; do
    [ -f "$configs/$f" ] || die "$configs/$f missing"
done
command -v runsc >/dev/null || die "runsc not installed (apt-get install -y runsc)"
command -v timeout >/dev/null || die "timeout (coreutils) is needed"

ensure_redis() {
    local cmd="apt-get install -y redis-server redis-tools"
    command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null &&
        command -v redis-cli >/dev/null && return 0
    [ $install = 1 ] || die "redis-server/redis-benchmark missing; install them: $cmd"
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
        die "redis-server/redis-benchmark missing; install them as root: $cmd"
    fi
    say "installing redis-server and redis-tools ($cmd)"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server redis-tools >"$out/logs/apt.log" 2>&1; then
        DEBIAN_FRONTEND=noninteractive apt-get update >>"$out/logs/apt.log" 2>&1 || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server redis-tools >>"$out/logs/apt.log" 2>&1 ||
            die "could not install redis (see $out/logs/apt.log); run: $cmd"
    fi
    command -v redis-benchmark >/dev/null || die "redis-benchmark still missing; run: $cmd"
}

out=${out:-$(default_out macro)}
bench_init "$out"
out=$(cd "$out" && pwd)
echo "$cmdline" >"$out/command.txt"
for w in "${wl_list[@]}"; do [ "$w" = redis ] && ensure_redis; done
{
    machine_info
    echo "runsc: $(runsc --version 2>/dev/null | head -1)"
    if command -v redis-server >/dev/null; then echo "redis: $(redis-server --version)"; fi
} >"$out/machine.txt"

sock=$BENCH_TMP/macro.sock
for w in redis execve; do
    sed "s#/tmp/seccheck.sock#$sock#" "$configs/$w-remote.json" >"$BENCH_TMP/$w-remote.json"
    grep -q "$sock" "$BENCH_TMP/$w-remote.json" || die "could not rewrite the endpoint of $configs/$w-remote.json"
done

# The workloads, run by /bin/sh inside the sandbox; each prints one RESULT line.
redis_script="redis-server --save '' --appendonly no --daemonize yes --logfile /dev/null >/dev/null
for i in \$(seq 50); do redis-cli ping >/dev/null 2>&1 && break; sleep 0.2; done
redis-benchmark -t set -n $redis_n -c $redis_c -q --csv
redis-cli shutdown nosave >/dev/null 2>&1 || true"
execve_script="l=\$(seq $execs); s=\$(date +%s%N); for i in \$l; do /bin/true; done; e=\$(date +%s%N)
echo \"EXECS $execs \$((e - s))\""

config_of() {   # config_of WORKLOAD PASS
    case $2 in
        baseline) echo "$configs/empty.json" ;;
        null) echo "$configs/$1-null.json" ;;
        *) echo "$BENCH_TMP/$1-remote.json" ;;
    esac
}

# run_sandbox WORKLOAD PASS REP: one sandbox run, one runs.jsonl line.
run_sandbox() {
    local w=$1 p=$2 rep=$3 kind='' err='' value='' unit script n
    local tag="$w-$p-rep$rep"
    local sout=$out/logs/$tag.out serr=$out/logs/$tag.err rlog=$out/logs/$tag.receiver.log
    case $p in dummy) kind=dummy ;; seccheckd) kind=sqlite ;; python) kind=python ;; esac
    if [ "$w" = redis ]; then script=$redis_script unit="SET/s" n=$redis_n; else script=$execve_script unit="execs/s" n=$execs; fi
    [ -n "$kind" ] && recv_start "$kind" "$sock" "$rlog"
    local t0 t1 rc=0
    t0=$(date +%s%N)
    (cd /tmp && timeout -k 10 "$sandbox_timeout" env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 \
        runsc --rootless --network=none --pod-init-config="$(config_of "$w" "$p")" "do" /bin/sh -c "$script" \
        </dev/null >"$sout" 2>"$serr") || rc=$?
    t1=$(date +%s%N)
    [ $rc = 0 ] || err="runsc exit $rc: $(tail -1 "$serr" | cut -c1-200)"
    if [ -n "$kind" ]; then
        [ $rc = 0 ] && recv_wait_drained 1
        recv_stop || err=${err:-$RECV_ERROR}
    fi
    if [ "$w" = redis ]; then
        value=$(sed -n 's/^"SET","\([0-9.]*\)".*/\1/p' "$sout" | head -1)
    else
        value=$(awk '$1 == "EXECS" && $3 > 0 { printf "%.2f", $2 * 1e9 / $3 }' "$sout")
    fi
    [ -n "$value" ] || err=${err:-"no result in the sandbox output ($sout)"}
    local -a extra=()
    [ -n "$value" ] && extra+=("value=$value")
    [ -n "$err" ] && extra+=("error=$err")
    local -a recv=()
    [ -n "$kind" ] && recv=(--recv-kind "$kind" --recv-log "$rlog")
    "${SUMMARIZE[@]}" record "$out/runs.jsonl" "${recv[@]}" workload="$w" pass="$p" rep="$rep" unit="$unit" \
        n="$n" wall_s="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')" "${extra[@]}"
}

say "macro: workloads ${wl_list[*]}, passes ${pass_list[*]}, $runs runs (redis -n $redis_n, $execs execs) -> $out"
for ((rep = 0; rep < runs; rep++)); do
    say "repetition $((rep + 1))/$runs"
    for w in "${wl_list[@]}"; do
        while read -r p; do
            run_sandbox "$w" "$p" "$rep"
        done < <(rotate "$rep" "${pass_list[@]}")
    done
done

echo "load average at end (1/5/15 min): $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
"${SUMMARIZE[@]}" macro "$out" | tee "$out/summary.txt"
echo
echo "results: $out (summary.md, runs.jsonl, logs/)"
