#!/usr/bin/env bash
# docker.daemonset: deploy/kubernetes/seccheckd.yaml's pod, read from the
# manifest by the test itself (tests/docker/pod_run.py), run as Docker runs
# containers: scripts/image.sh's image loaded into a dockerd of the test's
# own, each container with the manifest's user, command and arguments,
# capabilities, read-only root, resources, host network, its hostPath
# volumes as bind mounts and its ConfigMap and Secret written as kubelet
# writes them. The node is the test's: private mount, network and pid
# namespaces where /run and /var/lib are fresh (the manifest's host paths,
# GKE Sandbox's: /run/containerd/runsc holds runsc.toml and, as k8s.io, the
# runsc root of the test's dockerd; /run/seccheckd; /var/lib/seccheckd).
#   - the init container adds pod-init-config to runsc.toml, keeping its own
#     lines;
#   - the test's dockerd then runs runsc as containerd's shim would with that
#     runsc.toml ([runsc_config] keys as --KEY=VALUE);
#   - a container of that runtime reading /etc/shadow at once and ending
#     streams into the pod's seccheckd: the image's default rules and the
#     ConfigMap's rule alert, the alerts reach the Secret's URL, the state
#     file is read (by root with CAP_SYS_PTRACE alone) and the connection
#     bound by its peer (the node's pids: hostPID), the liveness probe
#     answers.
# The test fails if the manifest names a volume, a field or an argument it
# does not run and check.
# Usage: daemonset.sh SECCHECKD_BIN_DIR SOURCE_DIR CACHE_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"

if [ "${1:-}" != --inside ]; then
    bin=${1:?usage: daemonset.sh BIN_DIR SOURCE_DIR CACHE_DIR}
    src=${2:?usage: daemonset.sh BIN_DIR SOURCE_DIR CACHE_DIR}
    cache=${3:?usage: daemonset.sh BIN_DIR SOURCE_DIR CACHE_DIR}
    docker_need
    for t in unshare ip; do command -v $t >/dev/null || { echo "FAIL: $t not installed"; exit 1; }; done
    python3 -c 'import yaml, tomllib' || { echo "FAIL: needs python3 >= 3.11 with yaml (apt-get install -y python3-yaml)"; exit 1; }
    dir=$(mktemp -d /tmp/seccheckd-docker-daemonset-XXXXXX)
    chmod 755 "$dir"
    trap 'rm -rf "$dir"' EXIT
    workload_rootfs "$cache" >"$dir/workload.path" || exit 1
    "$src/scripts/image.sh" "$dir/seccheckd-image.tar" --bin "$bin" --cache "$cache" || { echo "FAIL: scripts/image.sh"; exit 1; }
    # Everything the node holds dies with the pid namespace; its mounts with the mount namespace.
    timeout 500 unshare --mount --net --pid --fork --mount-proc bash "$0" --inside "$bin" "$src" "$dir"
    exit $?
fi

# ---- inside: the node ----
bin=$2 src=$3 dir=$4
DOCKER_SOCK=$dir/docker.sock DOCKERD_PID=
trap docker_teardown EXIT
mount --make-rprivate /
ip link set lo up
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /var/lib
# dockerd's exec-root under the hostPath the pod mounts at the same path, and k8s.io its runsc
# root: the path runsc holds its lock files by is one the daemon's container sees as it is, as
# on a node where containerd's shim keeps runsc's root at /run/containerd/runsc/k8s.io.
export DOCKER_EXEC_ROOT=/run/containerd/runsc/exec
mkdir -p "$DOCKER_EXEC_ROOT/runtime-runc/moby"
ln -s exec/runtime-runc/moby /run/containerd/runsc/k8s.io
printf '# the node'"'"'s own\nlog_level = "info"\n\n[runsc_config]\n  network = "none"\n' >/run/containerd/runsc/config.toml
manifest=$src/deploy/kubernetes/seccheckd.yaml

failures=0
cleanup_more() { [ -z "${receiver:-}" ] || kill "$receiver" 2>/dev/null || true; }

dockerd_start '{}'
dk load -i "$dir/seccheckd-image.tar" >/dev/null
dk import "$(cat "$dir/workload.path")" shop/web:v1 >/dev/null
version=$("$bin/seccheckd" --version | awk '{ print $2; exit }')

# The image as scripts/image.sh promises it (issue 33 item 5): both tags, the OCI labels, its own
# user by default (the manifest runs it as root; a plain `docker run` of it does not).
inspect() { dk image inspect -f "$2" "$1" 2>&1; }
[ "$(inspect "seccheckd:$version" '{{.Id}}')" = "$(inspect seccheckd:latest '{{.Id}}')" ] &&
    ok "the image is tagged seccheckd:$version and seccheckd:latest" || fail "tags: $(dk images seccheckd 2>&1 | tr '\n' ' ')"
labels=$(inspect "seccheckd:$version" '{{index .Config.Labels "org.opencontainers.image.version"}} {{index .Config.Labels "org.opencontainers.image.revision"}}')
revision=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)   # as image.sh tells it
[ -z "$(git -C "$src" status --porcelain --untracked-files=no 2>/dev/null)" ] || revision+="-dirty"
[ "$labels" = "$version $revision" ] && ok "its OCI labels: version $version, revision $revision" ||
    fail "labels: '$labels', expected '$version $revision'"
plain=$(dk run --rm --network none "seccheckd:$version" --version 2>&1 | head -1)
[ "$(inspect "seccheckd:$version" '{{.Config.User}}')" = 65532:65532 ] && [ "$plain" = "seccheckd $version" ] &&
    ok "its default user is seccheckd (65532:65532), which runs it" ||
    fail "default user: $(inspect "seccheckd:$version" '{{.Config.User}}'); docker run of it printed '$plain'"

# The Secret's URL: a receiver on the node's loopback (hostNetwork), in place of falcosidekick.
python3 "$here/../integration/alert_receiver.py" --port-file "$dir/port" --log "$dir/received.jsonl" >"$dir/receiver.log" 2>&1 &
receiver=$!
for _ in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.05; done
mkdir -p "$dir/volumes/alerts"
echo "http://127.0.0.1:$(cat "$dir/port")/" >"$dir/volumes/alerts/url"

# pod NAME: the container's spec as docker run arguments (pod_run.py), into $dir/NAME.json and argv.
pod() {
    python3 "$here/pod_run.py" "$manifest" "$1" "$dir/volumes" >"$dir/$1.json" || { fail "pod_run.py $1"; return 1; }
    mapfile -d '' -t argv < <(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.stdout.write("\0".join(d["args"] + [d["image"]] + d["command"]) + "\0")' "$dir/$1.json")
    local image
    image=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["image"])' "$dir/$1.json")
    [ "$image" = "seccheckd:$version" ] || fail "container $1 runs $image, the image scripts/image.sh makes is seccheckd:$version"
}
volumes_used=()
for init in $(python3 -c 'import yaml, sys
d = [x for x in yaml.safe_load_all(open(sys.argv[1])) if x and x["kind"] == "DaemonSet"][0]
print(" ".join(c["name"] for c in d["spec"]["template"]["spec"].get("initContainers", [])))' "$manifest"); do
    pod "$init" || continue
    if dk run --rm "${argv[@]}" >"$dir/$init.out" 2>&1; then
        ok "init container $init ran: $(tr '\n' ' ' <"$dir/$init.out" | cut -c1-160)"
    else
        fail "init container $init: $(cat "$dir/$init.out")"
    fi
    mapfile -t -O ${#volumes_used[@]} volumes_used < <(python3 -c 'import json, sys; print("\n".join(json.load(open(sys.argv[1]))["volumes"]))' "$dir/$init.json")
done
pod_init=/run/containerd/runsc/seccheckd-pod-init.json
grep -qx "  pod-init-config = \"$pod_init\"" /run/containerd/runsc/config.toml && grep -qx '  network = "none"' /run/containerd/runsc/config.toml &&
    grep -qx 'log_level = "info"' /run/containerd/runsc/config.toml &&
    ok "runsc-config: pod-init-config added to runsc.toml, its own lines kept" || fail "runsc.toml: $(cat /run/containerd/runsc/config.toml)"

# runsc as containerd's runsc shim runs it: [runsc_config]'s keys as --KEY=VALUE.
python3 - "$dir/daemon.json" /run/containerd/runsc/config.toml "$(command -v runsc)" <<'PY'
import json, sys, tomllib
daemon, toml, runsc = sys.argv[1:]
flags = ["--%s=%s" % kv for kv in tomllib.load(open(toml, "rb")).get("runsc_config", {}).items()]
d = json.load(open(daemon))
d["runtimes"] = {"runsc": {"path": runsc, "runtimeArgs": flags}}
json.dump(d, open(daemon, "w"), indent=2)
PY
kill -HUP "$DOCKERD_PID"
for _ in $(seq 100); do dk info --format '{{json .Runtimes}}' | grep -q "pod-init-config=$pod_init" && break; sleep 0.1; done

pod seccheckd
dk run -d "${argv[@]}" >/dev/null || fail "the seccheckd container did not start"
mapfile -t -O ${#volumes_used[@]} volumes_used < <(python3 -c 'import json, sys; print("\n".join(json.load(open(sys.argv[1]))["volumes"]))' "$dir/seccheckd.json")
for _ in $(seq 200); do [ -S /run/seccheckd/seccheck.sock ] && break; sleep 0.05; done
[ -S /run/seccheckd/seccheck.sock ] && ok "the daemon listens on the hostPath socket" || fail "no socket; logs: $(dk logs pod-seccheckd 2>&1 | tail -5)"

if timeout 120 "$DOCKER_CLI" -H "unix://$DOCKER_SOCK" run --rm --runtime=runsc --cidfile "$dir/app.cid" shop/web:v1 \
    sh -c 'cat /etc/shadow >/dev/null; sh -c true' >"$dir/app.out" 2>&1; then
    ok "a runsc container of the same dockerd ran"
else
    fail "the runsc container: $(cat "$dir/app.out")"
fi
app=$(cat "$dir/app.cid" 2>/dev/null || echo none)
for _ in $(seq 150); do dk logs pod-seccheckd 2>&1 | grep -q 'closed (eof)' && break; sleep 0.1; done

# The liveness probe, as kubelet sends it.
probe=$(python3 -c 'import json, sys; p = json.load(open(sys.argv[1]))["probe"]["httpGet"]; print("http://%s:%s%s" % (p.get("host", "127.0.0.1"), p["port"], p["path"]))' "$dir/seccheckd.json")
if python3 -c 'import sys, urllib.request; r = urllib.request.urlopen(sys.argv[1], timeout=5); b = r.read().decode(); sys.exit(0 if r.status == 200 and "seccheckd_messages_received_total" in b else 1)' "$probe"; then
    ok "the liveness probe ($probe) answers 200 with the metrics"
else
    fail "the liveness probe $probe"
fi
pid=$(dk inspect -f '{{.State.Pid}}' pod-seccheckd)
# CAP_SYS_PTRACE is bit 19: the daemon's one capability, in its effective and bounding sets alike.
[ "$(awk '/^CapEff:/ { print $2 }' "/proc/$pid/status")" = 0000000000080000 ] &&
    [ "$(awk '/^CapBnd:/ { print $2 }' "/proc/$pid/status")" = 0000000000080000 ] &&
    grep -q '^NoNewPrivs:[[:space:]]*1' "/proc/$pid/status" &&
    ok "the daemon runs with CAP_SYS_PTRACE alone, no new privileges" || fail "the daemon's process: $(grep -E '^(Uid|Cap|NoNew)' "/proc/$pid/status" | tr '\n' ' ')"
for _ in $(seq 100); do [ "$(wc -l <"$dir/received.jsonl" 2>/dev/null || echo 0)" -ge 2 ] && break; sleep 0.1; done
dk stop -t 20 pod-seccheckd >/dev/null
dk logs pod-seccheckd >"$dir/daemon.log" 2>&1

db=/var/lib/seccheckd/seccheck.db
check() {   # check DESCRIPTION EXPECTED SQL
    local got
    got=$(sqlite3 "$db" "$3" 2>&1)
    if [ "$got" = "$2" ]; then ok "$1"; else fail "$1: expected '$2', got '$got'"; fi
}
check "the database is on the hostPath: the image's default rules alerted on /etc/shadow" 1 \
    "SELECT count(*) > 0 FROM alerts WHERE rule = 'Sensitive file read' AND container_id = '$app'"
check "the ConfigMap's rule alerted on the shell the container started" 1 \
    "SELECT count(*) > 0 FROM alerts WHERE rule = 'Shell in a sandbox' AND container_id = '$app'"
check "the runsc root (read-only) was read: the container's state found" found \
    "SELECT state FROM container_info WHERE container_id = '$app'"
# Issue 32 item 2 in the pod: the connection bound to its sandbox by the runsc command that made it
# (its peer, seen through the node's /proc), not by the first container its events name.
check "the sandbox's connection bound by its peer, the runsc command (hostPID, CAP_SYS_PTRACE)" peer \
    "SELECT sandbox_bound_by FROM connections WHERE sandbox = '$app'"
python3 -c 'import json, sys
rules = [json.loads(json.loads(l)["body"])["rule"] for l in open(sys.argv[1])]
sys.exit(0 if "Sensitive file read" in rules else 1)' "$dir/received.jsonl" && ok "the alerts reached the Secret's URL" ||
    fail "the receiver got: $(head -c 300 "$dir/received.jsonl" 2>/dev/null)"
grep -q "retain 7d, max-db-size 2G" "$dir/daemon.log" && ok "--retain and --max-db-size in force" ||
    fail "settings: $(grep settings "$dir/daemon.log")"
grep -q -- "--docker-socket none" "$dir/daemon.log" && ok "--docker-socket none: Docker not asked" || fail "docker socket: $(grep -i docker "$dir/daemon.log")"
grep -q "connection 1 opened" "$dir/daemon.log" && ok "the sandbox connected to --socket" || fail "no connection in the daemon's log"

# Every argument of the daemon is one of those checked above; every volume was mounted.
checked="socket db retain max-db-size runsc-root docker-socket rules alerts-url-file metrics-listen"
for a in $(python3 -c 'import json, sys; print(" ".join(json.load(open(sys.argv[1]))["command"]))' "$dir/seccheckd.json"); do
    name=${a%%=*}
    name=${name#--}
    [[ " $checked " == *" $name "* ]] || fail "the manifest passes $a, which this test does not check"
done
all=$(python3 -c 'import json, sys; print(" ".join(json.load(open(sys.argv[1]))["all_volumes"]))' "$dir/seccheckd.json")
for v in $all; do
    [[ " ${volumes_used[*]} " == *" $v "* ]] || fail "volume $v is mounted by no container"
done
ok "every daemon argument checked, every volume mounted ($all); not run here: $(python3 -c 'import json, sys; print(", ".join(json.load(open(sys.argv[1]))["not_run"]))' "$dir/seccheckd.json") (scheduling)"

docker_verdict daemonset "$dir/daemon.log"
