# shellcheck shell=bash
# tests/docker/lib.sh - sourced by the docker.* tests (and bench/docker_redis.sh):
# a dockerd of the test's own, images made without a registry, private
# namespaces to run it in, and the teardown that leaves nothing behind on
# any path.
#
# dockerd_start writes $dir/daemon.json (its own data-root, exec-root,
# pidfile, socket, trust key, "iptables": false, "bridge": "none", the
# runtimes given) and starts `dockerd --config-file` on it; it never touches
# /var/run/docker.sock, /var/lib/docker or /etc/docker. dk runs the docker
# CLI of Debian's docker.io against that socket only. docker_teardown (the
# EXIT trap of docker_scratch) removes the containers, stops dockerd (which
# stops its containerd), kills what is left that names $dir (containerd-shim,
# runsc), unmounts every mount under $dir (overlay2 layers, the data-root's
# own bind mount, network namespaces) and removes $dir.
#
# image_rootfs KEY CACHE [OPTIONS] -- PACKAGES... builds a root filesystem
# tarball with mmdebstrap from Debian's packages, cached in CACHE under a
# name made of its inputs (the packages and options, the apt sources,
# mmdebstrap's version and image_rootfs itself), so a rerun imports in
# seconds; workload_rootfs is the tests' and the bench's image.

DOCKER_CLI=${DOCKER_CLI:-/usr/bin/docker}   # docker.io's CLI (a newer one elsewhere in PATH negotiates too)
DOCKERD=${DOCKERD:-/usr/sbin/dockerd}

docker_need() {
    local t
    [ "$(id -u)" = 0 ] || { echo "FAIL: needs root (dockerd, runsc)"; exit 1; }
    for t in "$DOCKERD" "$DOCKER_CLI" runsc mmdebstrap sqlite3 python3; do
        command -v "$t" >/dev/null ||
            { echo "FAIL: $t not installed (apt-get install -y docker.io runsc mmdebstrap sqlite3 python3, or scripts/setup.sh)"; exit 1; }
    done
}

# docker_test NAME SCRIPT ARGS...: a docker.* test's start. Its arguments
# (BIN_DIR SOURCE_DIR CACHE_DIR into bin, src, cache), the tools checked,
# the workload image's root filesystem built or taken from the cache
# ($rootfs), then the script runs again in private mount, network and pid
# namespaces (a node of its own: a fresh /run for containerd's shims, only
# loopback, and every process it starts ends with it, even when the test is
# SIGKILLed), where $dir, the EXIT trap and ok/fail counting into $failures
# are made; docker_verdict ends it.
docker_test() {
    local name=$1 script=$2
    shift 2
    bin=${1:?usage: $name.sh SECCHECKD_BIN_DIR SOURCE_DIR CACHE_DIR}
    src=${2:?usage: $name.sh SECCHECKD_BIN_DIR SOURCE_DIR CACHE_DIR}
    cache=${3:?usage: $name.sh SECCHECKD_BIN_DIR SOURCE_DIR CACHE_DIR}
    if [ -z "${SECCHECKD_DOCKER_NODE:-}" ]; then
        docker_need
        command -v unshare >/dev/null || { echo "FAIL: unshare (util-linux) not installed"; exit 1; }
        rootfs=$(workload_rootfs "$cache") || exit 1
        SECCHECKD_DOCKER_NODE=1 DOCKER_TEST_ROOTFS=$rootfs \
            exec unshare --mount --net --pid --fork --kill-child --mount-proc bash "$script" "$@"
    fi
    rootfs=$DOCKER_TEST_ROOTFS
    mount --make-rprivate /
    mount -t tmpfs tmpfs /run
    ip link set lo up
    docker_scratch "$name"
    failures=0
}
ok() { echo "ok   - $1"; }
fail() { echo "FAIL - $1"; failures=$((failures + 1)); }

# seccheckd_start ARGS...: the test's seccheckd ($bin) in the background,
# $daemon its pid (killed by the teardown), its log $dir/daemon.log; returns
# once it listens.
seccheckd_start() {
    "$bin/seccheckd" "$@" 2>"$dir/daemon.log" &
    daemon=$!
    for _ in $(seq 500); do grep -q "info: listening on" "$dir/daemon.log" && return 0; sleep 0.01; done
    cat "$dir/daemon.log"
    echo "FAIL: seccheckd did not start"
    exit 1
}

# docker_verdict NAME LOG: exit 1 with LOG shown when a check failed.
docker_verdict() {
    if [ "$failures" -ne 0 ]; then
        echo "docker.$1: $failures check(s) failed; the daemon's log:"
        cat "$2"
        exit 1
    fi
    echo "docker.$1: all checks passed"
}

# docker_scratch NAME: $dir (/tmp/seccheckd-docker-NAME-XXXXXX) and the EXIT
# trap. The test may define cleanup_more (run first: its own processes).
docker_scratch() {
    dir=$(mktemp -d "/tmp/seccheckd-docker-$1-XXXXXX")
    chmod 755 "$dir"
    DOCKER_SOCK=$dir/docker.sock
    DOCKERD_PID=
    trap docker_teardown EXIT
    trap 'exit 143' TERM
    trap 'exit 130' INT
}

dk() { "$DOCKER_CLI" -H "unix://$DOCKER_SOCK" "$@"; }

# dockerd_start RUNTIMES_JSON: e.g. '{"runsc-seccheck": {"path": "/usr/bin/runsc", "runtimeArgs": [...]}}'.
dockerd_start() {
    local runtimes=${1:-'{}'}
    python3 - "$dir" "$runtimes" <<'PY'
import json, os, sys
d, runtimes = sys.argv[1], json.loads(sys.argv[2])
json.dump({"data-root": d + "/data", "exec-root": os.environ.get("DOCKER_EXEC_ROOT") or d + "/exec",
           "pidfile": d + "/docker.pid",
           "hosts": ["unix://" + d + "/docker.sock"], "deprecated-key-path": d + "/key.json",
           "iptables": False, "ip6tables": False, "bridge": "none", "log-level": "warn",
           "runtimes": runtimes}, open(d + "/daemon.json", "w"), indent=2)
PY
    "$DOCKERD" --config-file "$dir/daemon.json" </dev/null >"$dir/dockerd.log" 2>&1 &
    DOCKERD_PID=$!
    local i
    for i in $(seq 300); do
        [ -S "$DOCKER_SOCK" ] && dk version >/dev/null 2>&1 && return 0
        kill -0 "$DOCKERD_PID" 2>/dev/null || break
        sleep 0.1
    done
    tail -20 "$dir/dockerd.log"
    echo "FAIL: dockerd did not start (log above)"
    exit 1
}

# The processes whose command line names $dir (containerd, its shims, runsc's sandbox and gofer), by pid.
docker_leftovers() {
    local p
    for p in /proc/[0-9]*; do
        [ "${p#/proc/}" = "$$" ] && continue
        tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -qF -- "$dir/" && echo "${p#/proc/}"
    done
    return 0
}

docker_teardown() {
    local rc=$? pids m
    trap - EXIT
    [ -z "${daemon:-}" ] || kill -9 "$daemon" 2>/dev/null || true
    if declare -F cleanup_more >/dev/null; then cleanup_more || true; fi
    if [ -n "${DOCKERD_PID:-}" ] && kill -0 "$DOCKERD_PID" 2>/dev/null; then
        # shellcheck disable=SC2046
        timeout 60 "$DOCKER_CLI" -H "unix://$DOCKER_SOCK" rm -f $(timeout 10 "$DOCKER_CLI" -H "unix://$DOCKER_SOCK" ps -aq 2>/dev/null) \
            >/dev/null 2>&1 || true
        kill -TERM "$DOCKERD_PID" 2>/dev/null || true
        for _ in $(seq 200); do kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$DOCKERD_PID" 2>/dev/null || true
        wait "$DOCKERD_PID" 2>/dev/null || true
    fi
    pids=$(docker_leftovers)
    if [ -n "$pids" ]; then
        # shellcheck disable=SC2086
        kill -KILL $pids 2>/dev/null || true
        sleep 0.3
    fi
    # Deepest first: layers, then the data-root's own bind mount.
    for m in $(awk -v d="$dir/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
    [ -n "$(docker_leftovers)" ] && echo "WARN: processes naming $dir outlived the teardown: $(docker_leftovers)"
    rm -rf "$dir"
    exit "$rc"
}

# image_rootfs KEY CACHE_DIR [mmdebstrap options...] -- PACKAGES...: prints the cached tarball's path.
image_rootfs() {
    local key=$1 cache=$2
    shift 2
    local -a opts=() pkgs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
    [ "${1:-}" = -- ] && shift
    pkgs=("$@")
    mkdir -p "$cache"
    local sum
    sum=$( { printf '%s\n' "${opts[@]}" "${pkgs[@]}"; mmdebstrap --version; cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources 2>/dev/null
             declare -f image_rootfs; } | sha256sum | cut -c1-16)
    local tar=$cache/$key-$sum.tar
    (
        flock 9   # two tests building the same image wait for one build
        if [ ! -s "$tar" ]; then
            local inc
            inc=$(IFS=,; echo "${pkgs[*]}")
            echo "building $tar with mmdebstrap (cached for the next runs)" >&2
            mmdebstrap --quiet --mode=root --variant=essential --include="$inc" "${opts[@]}" bookworm "${tar%.tar}.part.tar" >&2 ||
                { rm -rf "${tar%.tar}.part.tar"; exit 1; }
            mv "${tar%.tar}.part.tar" "$tar"
            find "$cache" -name "$key-*.tar" ! -name "${tar##*/}" -delete   # older inputs' builds
        fi
    ) 9>"$cache/$key.lock" || { echo "FAIL: mmdebstrap could not build $key" >&2; return 1; }
    echo "$tar"
}

# The test workload's image: Debian's essential packages, Redis (the
# benchmark's workload) and an /etc/shadow to read. Prints the tarball.
workload_rootfs() {
    image_rootfs workload "$1" \
        --customize-hook='printf "root:*:19000:0:99999:7:::\n" >"$1/etc/shadow" && chmod 640 "$1/etc/shadow"' \
        -- redis-server redis-tools
}
