#!/usr/bin/env bash
# bench/docker_redis.sh - gVisor's seccheck Redis pass through Docker, as
# gVisor's own benchmarks run it (test/benchmarks/seccheck/README.md: a
# Docker runtime whose runtimeArgs carry --pod-init-config, workloads run
# with docker run --runtime=...): redis-server and redis-benchmark (SET and
# GET) in one container, per pass, interleaved and repeated. See bench/README.md.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/docker/lib.sh
source "$REPO_DIR/tests/docker/lib.sh"

usage() {
    cat <<EOF
Usage: bench/docker_redis.sh [OPTIONS]
Starts a dockerd of its own (tests/docker/lib.sh: its own data-root,
exec-root and socket, in private mount, network and pid namespaces) with
three runsc runtimes, imports an image with
redis-server and redis-benchmark built offline by mmdebstrap from Debian's
packages, and runs redis-benchmark -t set,get in a container per pass,
--runs times, interleaved (round-robin, rotating start). Reports SET and GET
requests/s, their ratios to the baseline, and what each receiver got and the
sandbox dropped.

  --out DIR          results directory [bench/results/<timestamp>-docker-redis]
  --runs N           repetitions [5]
  --passes LIST      baseline,null,sqlite,discard,python [all of them]
  --requests N       redis-benchmark -n N [20000]
  --clients N        redis-benchmark -c N [50]
  --timeout SECS     limit per container run [300]
  --cache DIR        where the image's root filesystem is kept [build/docker-cache]
  --bin DIR          built binaries [$BIN_DIR]
  --help             this text

Passes (runtimes of the bench's dockerd; configs/bench/):
  baseline  runtime runsc-plain: runsc --network=none, no seccheck config
  null      runtime runsc-null: redis-null.json (read/write enter, sink null)
  sqlite    runtime runsc-remote: redis-remote.json -> seccheckd --sink sqlite (fresh DB per run)
  discard   runtime runsc-remote -> seccheckd --sink discard
  python    runtime runsc-remote -> dummy/dummy_uds_server.py (gVisor's receiver)

Writes in DIR: runs.jsonl, logs/, summary.txt and summary.md.
EOF
}

out='' runs=5 passes=baseline,null,sqlite,discard,python requests=20000 clients=50 run_timeout=300
cache=$REPO_DIR/build/docker-cache
cmdline=$0
args=("$@")
[ $# -eq 0 ] || cmdline+=$(printf ' %q' "$@")
while [ $# -gt 0 ]; do
    case $1 in
        --help | -h) usage; exit 0 ;;
        --out) out=${2:?--out DIR}; shift 2 ;;
        --runs) need_uint "$1" "${2:-}"; runs=$2; shift 2 ;;
        --passes) passes=${2:?--passes LIST}; shift 2 ;;
        --requests) need_uint "$1" "${2:-}"; requests=$2; shift 2 ;;
        --clients) need_uint "$1" "${2:-}"; clients=$2; shift 2 ;;
        --timeout) need_uint "$1" "${2:-}"; run_timeout=$2; shift 2 ;;
        --cache) cache=${2:?--cache DIR}; shift 2 ;;
        --bin) BIN_DIR=${2:?--bin DIR}; shift 2 ;;
        *) usage >&2; die "unknown option '$1'" ;;
    esac
done
IFS=, read -r -a pass_list <<<"$passes"
for p in "${pass_list[@]}"; do
    case $p in
        baseline | null | python) ;;
        sqlite | discard) need_bins seccheckd ;;
        *) die "pass '$p': baseline, null, sqlite, discard or python" ;;
    esac
done
[[ " ${pass_list[*]} " == *" baseline "* ]] || die "--passes needs baseline (the ratios' denominator)"
configs=$REPO_DIR/configs/bench
for f in redis-null.json redis-remote.json; do [ -f "$configs/$f" ] || die "$configs/$f missing"; done
docker_need

out=${out:-$(default_out docker-redis)}
# The image first (mmdebstrap needs the network), then the bench again in private mount, network and pid
# namespaces: containerd's shims get a /run of their own and nothing the bench starts outlives it.
if [ -z "${SECCHECKD_DOCKER_NODE:-}" ]; then
    rootfs=$(workload_rootfs "$cache") || die "could not build the workload image (mmdebstrap)"
    command -v unshare >/dev/null || die "unshare (util-linux) is needed"
    SECCHECKD_DOCKER_NODE=1 DOCKER_TEST_ROOTFS=$rootfs exec unshare --mount --net --pid --fork --kill-child \
        --mount-proc bash "$0" "${args[@]}" --out "$out"
fi
rootfs=$DOCKER_TEST_ROOTFS
mount --make-rprivate /
mount -t tmpfs tmpfs /run
ip link set lo up
bench_init "$out"
out=$(cd "$out" && pwd)
echo "$cmdline" >"$out/command.txt"
docker_scratch bench
trap 'bench_cleanup; docker_teardown' EXIT

sock=$BENCH_TMP/redis.sock
sed "s#/tmp/seccheck.sock#$sock#" "$configs/redis-remote.json" >"$BENCH_TMP/redis-remote.json"
grep -q "$sock" "$BENCH_TMP/redis-remote.json" || die "could not rewrite the endpoint of $configs/redis-remote.json"
runsc=$(command -v runsc)
dockerd_start "{\"runsc-plain\": {\"path\": \"$runsc\", \"runtimeArgs\": [\"--network=none\"]},
  \"runsc-null\": {\"path\": \"$runsc\", \"runtimeArgs\": [\"--network=none\", \"--pod-init-config=$configs/redis-null.json\"]},
  \"runsc-remote\": {\"path\": \"$runsc\", \"runtimeArgs\": [\"--network=none\", \"--pod-init-config=$BENCH_TMP/redis-remote.json\"]}}"
dk import "$rootfs" seccheckd-bench/redis:latest >/dev/null
# The receiving daemons read this dockerd's runsc root and ask its socket, as a node's daemon reads
# Docker's (tests/docker/names.sh), never the machine's (bench/lib.sh's own_names).
own_names=(--runsc-root "$dir/exec/runtime-runc/moby" --docker-socket "$DOCKER_SOCK")
{
    machine_info
    echo "runsc: $(runsc --version 2>/dev/null | head -1)"
    echo "docker: $(dk version --format '{{.Server.Version}}' 2>/dev/null)"
    echo "redis (in the image): $(dk run --rm seccheckd-bench/redis:latest redis-server --version 2>/dev/null)"
} >"$out/machine.txt"

# In the container: a server, its benchmark, each request a read and a write in the sandbox.
script="redis-server --save '' --appendonly no --daemonize yes --logfile /dev/null >/dev/null
for i in \$(seq 50); do redis-cli ping >/dev/null 2>&1 && break; sleep 0.2; done
redis-benchmark -t set,get -n $requests -c $clients -q --csv
redis-cli shutdown nosave >/dev/null 2>&1 || true"

runtime_of() {
    case $1 in baseline) echo runsc-plain ;; null) echo runsc-null ;; *) echo runsc-remote ;; esac
}

# run_pass PASS REP: one container, one runs.jsonl line.
run_pass() {
    local p=$1 rep=$2 kind='' err='' set_rps get_rps
    local tag="redis-$p-rep$rep"
    local cout=$out/logs/$tag.out rlog=$out/logs/$tag.receiver.log
    case $p in sqlite | discard | python) kind=$p ;; esac
    [ -n "$kind" ] && recv_start "$kind" "$sock" "$rlog"
    local t0 t1 rc=0
    t0=$(date +%s%N)
    timeout -k 10 "$run_timeout" "$DOCKER_CLI" -H "unix://$DOCKER_SOCK" run --rm --runtime="$(runtime_of "$p")" \
        seccheckd-bench/redis:latest sh -c "$script" </dev/null >"$cout" 2>&1 || rc=$?
    t1=$(date +%s%N)
    [ $rc = 0 ] || err="docker run exit $rc: $(tail -1 "$cout" | cut -c1-200)"
    if [ -n "$kind" ]; then
        [ $rc = 0 ] && recv_wait_drained 1
        recv_stop || err=${err:-$RECV_ERROR}
    fi
    set_rps=$(sed -n 's/^"SET","\([0-9.]*\)".*/\1/p' "$cout" | head -1)
    get_rps=$(sed -n 's/^"GET","\([0-9.]*\)".*/\1/p' "$cout" | head -1)
    [ -n "$set_rps" ] && [ -n "$get_rps" ] || err=${err:-"no SET/GET result in the container's output ($cout)"}
    local -a extra=() recv=()
    [ -n "$set_rps" ] && extra+=("set=$set_rps")
    [ -n "$get_rps" ] && extra+=("get=$get_rps")
    [ -n "$err" ] && extra+=("error=$err")
    [ -n "$kind" ] && recv=(--recv-kind "$kind" --recv-log "$rlog")
    "${SUMMARIZE[@]}" record "$out/runs.jsonl" "${recv[@]}" pass="$p" rep="$rep" n="$requests" clients="$clients" \
        wall_s="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')" "${extra[@]}"
}

say "docker-redis: passes ${pass_list[*]}, $runs runs (redis-benchmark -t set,get -n $requests -c $clients) -> $out"
for ((rep = 0; rep < runs; rep++)); do
    say "repetition $((rep + 1))/$runs"
    while read -r p; do
        run_pass "$p" "$rep"
    done < <(rotate "$rep" "${pass_list[@]}")
done

echo "load average at end (1/5/15 min): $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
"${SUMMARIZE[@]}" docker-redis "$out" | tee "$out/summary.txt"
echo
echo "results: $out (summary.md, runs.jsonl, logs/)"
