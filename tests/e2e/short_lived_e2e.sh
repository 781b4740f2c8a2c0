#!/usr/bin/env bash
# End-to-end: containers that live a second keep their names (issue 32
# item 4), and `runsc do` sandboxes get theirs (issue 31 item 5), in real
# gVisor sandboxes on a busy machine: two busy loops run beside them the
# whole time (the audit saw 3 of 10 such containers lose their names).
#  1. Ten times, `runsc --root ROOT run --bundle B ID` of a container that
#     reads /etc/shadow and exits (a Job's, an agent's one-shot sandbox):
#     each alert names its namespace, pod and user (the bundle's own
#     passwd), each container_info row is found, each connection bound to
#     its sandbox by its peer (the runsc command that connected).
#  2. `runsc do` (its state in a directory of its own, $TMPDIR/runsc-doNNN,
#     which no --runsc-root names): the container is found there (LOOKUP
#     found, user.name from the host's passwd, the rootfs `do` runs).
# Usage: short_lived_e2e.sh SECCHECKD_BINARY
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/stop_jobs.sh"

seccheckd=${1:?usage: short_lived_e2e.sh SECCHECKD_BINARY}
command -v runsc >/dev/null || { echo "FAIL: runsc not installed (apt-get install -y runsc)"; exit 1; }
command -v sqlite3 >/dev/null || { echo "FAIL: sqlite3 not installed (apt-get install -y sqlite3)"; exit 1; }
runs=${SHORT_LIVED_RUNS:-10}

e2e_scratch shortlived
root=$dir/runsc-root
cleanup_more() {
    for i in $(seq "$runs"); do runsc --root "$root" delete -force "shadow$i" >/dev/null 2>&1 || true; done
}
failures=0
ok() { echo "ok   - $1"; }
fail() { echo "FAIL - $1"; failures=$((failures + 1)); }

# Two busy loops for the test's whole life (stop_jobs ends them on every path).
for _ in 1 2; do (while :; do :; done) & done

rootfs=$dir/rootfs
mkdir -p "$rootfs"/{bin,etc,proc,tmp,dev} "$root"
cp /bin/cat "$rootfs/bin/"
for lib in $(ldd /bin/cat | grep -o '/lib[^ ]*' | sort -u); do
    mkdir -p "$rootfs$(dirname "$lib")"
    cp -L "$lib" "$rootfs$lib"
done
printf 'root:x:0:0:root:/root:/bin/sh\nsvc:x:1001:1001:Service:/home/svc:/bin/sh\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\nsvc:x:1001:\n' >"$rootfs/etc/group"
printf 'root:*:19000:0:99999:7:::\n' >"$rootfs/etc/shadow"

bundle() {   # bundle N: a Job's pod of one container reading /etc/shadow as svc
    mkdir -p "$dir/b$1"
    ln -s "$rootfs" "$dir/b$1/rootfs"
    cat >"$dir/b$1/config.json" <<JSON
{"ociVersion": "1.0.0",
 "process": {"user": {"uid": 1001, "gid": 1001}, "args": ["/bin/cat", "/etc/shadow"], "env": ["PATH=/bin"],
             "cwd": "/"},
 "root": {"path": "rootfs", "readonly": true},
 "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}],
 "annotations": {"io.kubernetes.cri.container-name": "reader",
                 "io.kubernetes.cri.sandbox-name": "job-$1", "io.kubernetes.cri.sandbox-namespace": "batch",
                 "io.kubernetes.cri.image-name": "registry.example.com/reader:1"},
 "linux": {"namespaces": [{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}]}}
JSON
}

cat >"$dir/rules.yaml" <<'YAML'
- rule: Shadow read
  desc: /etc/shadow opened
  condition: evt.type in (open, openat) and fd.name = /etc/shadow
  output: shadow read (ns=%k8s.ns.name pod=%k8s.pod.name user=%user.name container=%container.id)
  priority: WARNING
YAML
sock=$dir/s.sock
db=$dir/events.db
"$seccheckd" gvisor-config --rules "$dir/rules.yaml" "${lossless_sandbox[@]}" --socket "$sock" >"$dir/pod-init.json"
"$seccheckd" --socket "$sock" --db "$db" --rules "$dir/rules.yaml" --alerts-out none --runsc-root "$root" \
    --docker-socket none 2>"$dir/daemon.log" &
daemon=$!
for _ in $(seq 500); do grep -q "info: listening on" "$dir/daemon.log" && break; sleep 0.01; done
grep -q "info: listening on" "$dir/daemon.log" || { cat "$dir/daemon.log"; echo "FAIL: seccheckd did not start"; exit 1; }
q() { sqlite3 -cmd '.timeout 5000' "$db" "$1"; }
wait_closed() {   # wait_closed N: the close of N connections stored
    for _ in $(seq 500); do
        [ "$(q "SELECT count(*) FROM connections WHERE close_ns IS NOT NULL" 2>/dev/null || echo 0)" -ge "$1" ] && return
        sleep 0.02
    done
    fail "the daemon did not store the close of $1 connection(s)"
}

# ---- 1. short-lived containers, one sandbox each
for i in $(seq "$runs"); do
    bundle "$i"
    timeout 60 runsc --root "$root" --network=none --pod-init-config="$dir/pod-init.json" \
        run --bundle "$dir/b$i" "shadow$i" </dev/null >"$dir/run$i.out" 2>"$dir/run$i.err" ||
        { cat "$dir/run$i.err"; fail "runsc run shadow$i"; }
    [ ! -e "$root/shadow${i}_sandbox:shadow$i.state" ] || fail "runsc left shadow$i's state file"
done
wait_closed "$runs"
named=0
for i in $(seq "$runs"); do
    got=$(q "SELECT output FROM alerts WHERE container_id = 'shadow$i'")
    if [ "$got" = "$(q "SELECT output FROM alerts WHERE container_id = 'shadow$i' AND output LIKE
                        '%shadow read (ns=batch pod=job-$i user=svc container=shadow$i)%'")" ] && [ -n "$got" ]; then
        named=$((named + 1))
    else
        echo "     shadow$i: ${got:-no alert}"
    fi
done
[ "$named" = "$runs" ] && ok "$named of $runs containers that read /etc/shadow and exit: their alert names them" ||
    fail "$named of $runs containers named in their alert"
check() {   # check DESCRIPTION EXPECTED SQL
    local got
    got=$(q "$3")
    if [ "$got" = "$2" ]; then ok "$1"; else fail "$1: expected '$2', got '$got'"; fi
}
check "each container_info row found, with its pod" "$runs" \
    "SELECT count(*) FROM container_info WHERE state = 'found' AND pod_namespace = 'batch' AND container_id = sandbox"
check "each connection bound to its sandbox by its peer (runsc run)" "$runs" \
    "SELECT count(*) FROM connections WHERE sandbox_bound_by = 'peer' AND sandbox LIKE 'shadow%'"
out=$("$seccheckd" containers --db "$db" --namespace batch)
[ "$(echo "$out" | grep -c ' found$')" = "$runs" ] && ok "seccheckd containers: each found" ||
    fail "seccheckd containers: $out"

# ---- 2. runsc do: its own root, found through its peer
(cd /tmp && exec timeout 60 env -i PATH=/usr/bin:/bin HOME=/root runsc --rootless --network=none \
    --pod-init-config="$dir/pod-init.json" do /bin/cat /etc/shadow </dev/null >"$dir/do.out" 2>"$dir/do.err") ||
    { cat "$dir/do.err"; fail "runsc do"; }
wait_closed $((runs + 1))
do_ctr=$(q "SELECT sandbox FROM connections WHERE sandbox_bound_by = 'peer' AND sandbox LIKE 'runsc-%'")
[ -n "$do_ctr" ] && ok "runsc do: its connection bound to its sandbox ($do_ctr) by its peer" ||
    fail "runsc do: its connection is not bound: $(q "SELECT id, sandbox, sandbox_bound_by FROM connections")"
check "runsc do: its container found in runsc do's own root" "found|root" \
    "SELECT state, user_name FROM container_info WHERE container_id = '$do_ctr' AND state_file LIKE '%/runsc-do%'"
check "runsc do: its alert names its user from the host's passwd" 1 \
    "SELECT count(*) FROM alerts WHERE container_id = '$do_ctr' AND output LIKE '%user=root container=$do_ctr)%'"
out=$("$seccheckd" containers --db "$db" --container "$do_ctr")
echo "$out" | grep -q "^$do_ctr .* found$" && ok "seccheckd containers: LOOKUP found for runsc do" ||
    fail "seccheckd containers for runsc do: $out"

e2e_stop_daemon
e2e_verdict "short-lived containers e2e"
