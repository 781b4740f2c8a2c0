#!/usr/bin/env bash
# End-to-end: a Kubernetes-style pod in real gVisor, as containerd's CRI
# would start it: the pod's sandbox (pause) container, then the app
# container in the same sandbox, each `runsc --root ROOT run --bundle B ID`
# with the CRI annotations in its config.json. seccheckd --runsc-root ROOT
# reads runsc's own state files (ROOT/<id>_sandbox:<sandbox>.state): the
# app's events and alerts carry the pod, namespace, container name, image
# repository and tag, and user.name from the bundle's own /etc/passwd (a
# user of this test's making); a rule on k8s.ns.name and one on user.name
# fire. One sandbox in all.
# Usage: containers_e2e.sh SECCHECKD_BINARY
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/stop_jobs.sh"

seccheckd=${1:?usage: containers_e2e.sh SECCHECKD_BINARY}
command -v runsc >/dev/null || { echo "FAIL: runsc not installed (apt-get install -y runsc)"; exit 1; }
command -v sqlite3 >/dev/null || { echo "FAIL: sqlite3 not installed (apt-get install -y sqlite3)"; exit 1; }

e2e_scratch e2e
root=$dir/runsc-root
cleanup_more() {
    for id in app1 pod1; do runsc --root "$root" delete -force "$id" >/dev/null 2>&1 || true; done
}
failures=0
ok() { echo "ok   - $1"; }
fail() { echo "FAIL - $1"; failures=$((failures + 1)); }

# A root filesystem of a few host binaries and their libraries, with a
# passwd and group of its own: uid 1000 is alice here, whoever it is on the host.
rootfs=$dir/rootfs
mkdir -p "$rootfs"/{bin,etc,proc,tmp,dev} "$root"
for b in /bin/dash /bin/sleep /usr/bin/id /bin/cat; do cp "$b" "$rootfs/bin/"; done
mv "$rootfs/bin/dash" "$rootfs/bin/sh"
for lib in $(ldd /bin/dash /bin/sleep /usr/bin/id /bin/cat | grep -o '/lib[^ ]*' | sort -u); do
    mkdir -p "$rootfs$(dirname "$lib")"
    cp -L "$lib" "$rootfs$lib"
done
printf 'root:x:0:0:root:/root:/bin/sh\nalice:x:1000:1000:Alice:/home/alice:/bin/sh\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\nstaff:x:1000:alice\n' >"$rootfs/etc/group"
echo pod-e2e >"$rootfs/etc/hostname"

# bundle NAME KIND IMAGE ARGS_JSON [CONTAINER_NAME]
bundle() {
    mkdir -p "$dir/$1"
    ln -s "$rootfs" "$dir/$1/rootfs"
    local cname=
    [ -z "${5:-}" ] || cname="\"io.kubernetes.cri.container-name\": \"$5\","
    cat >"$dir/$1/config.json" <<JSON
{"ociVersion": "1.0.0",
 "process": {"user": {"uid": 1000, "gid": 1000}, "args": $4, "env": ["PATH=/bin"], "cwd": "/",
             "capabilities": {"bounding": ["CAP_KILL"], "effective": ["CAP_KILL"], "permitted": ["CAP_KILL"]}},
 "root": {"path": "rootfs", "readonly": true},
 "hostname": "pod-e2e",
 "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}],
 "annotations": {"io.kubernetes.cri.container-type": "$2", $cname
                 "io.kubernetes.cri.sandbox-id": "pod1", "io.kubernetes.cri.sandbox-name": "web-7f9c",
                 "io.kubernetes.cri.sandbox-namespace": "shop", "io.kubernetes.cri.sandbox-uid": "0b6e-4d2f",
                 "io.kubernetes.cri.image-name": "$3"},
 "linux": {"namespaces": [{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}]}}
JSON
}
bundle pause sandbox registry.k8s.io/pause:3.9 '["/bin/sleep", "6"]'
bundle app container registry.example.com:5000/shop/web:v1.2 \
    '["/bin/sh", "-c", "id; cat /etc/hostname; sleep 0.3; /bin/id -u"]' web

sock=$dir/s.sock
db=$dir/events.db
cat >"$dir/rules.yaml" <<'YAML'
- rule: Exec in shop
  desc: a program run in the shop namespace
  condition: evt.type = execve and k8s.ns.name = shop and not container.name = ""
  output: >-
    exec in %k8s.ns.name (pod=%k8s.pod.name container=%container.name image=%container.image.repository
    tag=%container.image.tag user=%user.name cmd=%proc.cmdline)
  priority: WARNING
- rule: Alice runs id
  desc: the container's own user alice
  condition: evt.type = execve and user.name = alice and proc.name = id
  output: alice ran id (user=%user.name home=%user.homedir group=%group.name loginuid=%user.loginuid)
  priority: NOTICE
YAML
"$seccheckd" gvisor-config --rules "$dir/rules.yaml" "${lossless_sandbox[@]}" --socket "$sock" >"$dir/pod-init.json"
# --rule-matching all: both rules hold for id's exec (Falco's default, first,
# would raise only the first of them)
"$seccheckd" --socket "$sock" --db "$db" --rules "$dir/rules.yaml" --alerts-out "$dir/alerts.json" \
    --rule-matching all --runsc-root "$root" --docker-socket none 2>"$dir/daemon.log" &
daemon=$!
for _ in $(seq 500); do grep -q "info: listening on" "$dir/daemon.log" && break; sleep 0.01; done
grep -q "info: listening on" "$dir/daemon.log" || { cat "$dir/daemon.log"; echo "FAIL: seccheckd did not start"; exit 1; }

# The pod's sandbox first (it makes the sandbox and its connection), then the app in it.
(timeout 60 runsc --root "$root" --network=none --pod-init-config="$dir/pod-init.json" \
    run --bundle "$dir/pause" pod1 </dev/null >"$dir/pause.out" 2>"$dir/pause.err") &
pause=$!
for _ in $(seq 500); do [ -e "$root/pod1_sandbox:pod1.state" ] && break; sleep 0.01; done
[ -e "$root/pod1_sandbox:pod1.state" ] && ok "runsc wrote ROOT/<id>_sandbox:<sandbox>.state" ||
    { cat "$dir/pause.err"; fail "no state file for the pause container"; }
sleep 0.5
if timeout 60 runsc --root "$root" --network=none run --bundle "$dir/app" app1 </dev/null >"$dir/app.out" \
    2>"$dir/app.err"; then
    ok "the app container ran in the pod's sandbox"
else
    cat "$dir/app.err"
    fail "the app container failed"
fi
grep -q 'uid=1000(alice) gid=1000(staff)' "$dir/app.out" && ok "the container's passwd names uid 1000 alice" ||
    fail "app output: $(cat "$dir/app.out")"
wait "$pause" || true

# Both containers' events within 2 s of the sandbox's end.
for _ in $(seq 200); do grep -q 'closed (eof)' "$dir/daemon.log" && break; sleep 0.01; done
sleep 0.3
check() {   # check DESCRIPTION EXPECTED SQL
    local got
    got=$(sqlite3 "$db" "$3")
    if [ "$got" = "$2" ]; then ok "$1"; else fail "$1: expected '$2', got '$got'"; fi
}
check "the app's state: names, image split as Falco splits it, the process user and alice" \
    "found|web|web-7f9c|shop|0b6e-4d2f|pod1|registry.example.com:5000/shop/web|v1.2|0|1000|alice|2" \
    "SELECT state, name, pod_name, pod_namespace, pod_uid, sandbox_id, image_repository, image_tag, is_sandbox,
            user_uid, user_name, users FROM container_info WHERE container_id = 'app1'"
check "the pause container: the pod's sandbox" "found|1|registry.k8s.io/pause|3.9" \
    "SELECT state, is_sandbox, image_repository, image_tag FROM container_info WHERE container_id = 'pod1'"
check "the rule on k8s.ns.name fired for the app's execs (id, cat, sleep, id: sh is its start)" 4 \
    "SELECT count(*) FROM alerts WHERE rule = 'Exec in shop' AND container_id = 'app1'"
# then what Falco's suggested_output (--append-output's default) adds: the
# container, its image and pod, whatever the rule's output names
check "its output names pod, container, image, tag and user" 1 \
    "SELECT count(*) FROM alerts WHERE rule = 'Exec in shop' AND output LIKE
       '%: Warning exec in shop (pod=web-7f9c container=web image=registry.example.com:5000/shop/web tag=v1.2 user=alice cmd=cat /etc/hostname) container_id=app1 container_name=web container_image_repository=registry.example.com:5000/shop/web container_image_tag=v1.2 k8s_pod_name=web-7f9c k8s_ns_name=shop'"
check "the rule on user.name fired for both runs of id" 2 \
    "SELECT count(*) FROM alerts WHERE rule = 'Alice runs id' AND output LIKE
       '%alice ran id (user=alice home=/home/alice group=staff loginuid=-1) container_id=app1 container_name=web %'"
check "output_fields carry the names" "shop|web-7f9c|web|alice" \
    "SELECT DISTINCT json_extract(output_fields, '\$.\"k8s.ns.name\"'), json_extract(output_fields, '\$.\"k8s.pod.name\"'),
            json_extract(output_fields, '\$.\"container.name\"'), json_extract(output_fields, '\$.\"user.name\"')
     FROM alerts WHERE rule = 'Exec in shop'"
grep -q '"k8s.ns.name":"shop"' "$dir/alerts.json" && ok "the JSON lines carry k8s.ns.name" ||
    fail "no k8s.ns.name in the JSON lines"
out=$("$seccheckd" containers --db "$db" --namespace shop)
echo "$out" | grep -q '^app1 .* web .* web-7f9c .* shop .* registry.example.com:5000/shop/web:v1.2 ' &&
    ok "seccheckd containers lists the app with its names" || fail "seccheckd containers: $out"
n=$("$seccheckd" events --db "$db" --container web | grep -c ' app1(shop/web-7f9c/web) ' || true)
[ "$n" -ge 4 ] && ok "seccheckd events --container web: the app's events, its names beside its id ($n)" ||
    fail "events by name: $n"

e2e_stop_daemon
e2e_verdict "containers e2e"
