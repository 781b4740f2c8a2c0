#!/usr/bin/env bash
# docker.names: a Docker container's names come from Docker's API. A dockerd
# of the test's own runs runsc as the runtime runsc-seccheck (runtimeArgs
# with the pod-init config, as gVisor's seccheck benchmarks set it up) and an
# image imported from a root filesystem tarball (mmdebstrap, no registry).
# seccheckd reads runsc's state in <exec-root>/runtime-runc/moby (dockerd
# gives every runtime that root: moby daemon/runtime_unix.go,
# defaultV2ShimConfig) and asks the test's dockerd (--docker-socket).
#   - web-1 reads /etc/shadow: the alert carries container.name=web-1, the
#     image's repository and tag, its image id and a label, and a rule on
#     container.name fires; container_info and `seccheckd containers` name it.
#   - a container named with web-1's full id reads it too: its alert names
#     it by its own name, never web-1's, and the rule on web-1's name does
#     not fire for it.
#   - a label holding escape sequences is printed escaped: no raw ESC in the
#     alert lines, `seccheckd alerts` or the daemon's log.
# Usage: names.sh SECCHECKD_BIN_DIR SOURCE_DIR CACHE_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"
docker_test names "$0" "$@"


sock=$dir/seccheck.sock db=$dir/events.db
cat >"$dir/rules.yaml" <<'YAML'
- rule: Shadow read by web-1
  desc: a rule on Docker's container name
  condition: evt.type in (open, openat) and fd.name = /etc/shadow and container.name = web-1
  output: >-
    web-1 read the shadow file (name=%container.name repo=%container.image.repository tag=%container.image.tag
    image=%container.image image_id=%container.image.id team=%container.label[team])
  priority: WARNING
- rule: Shadow read
  desc: any container
  condition: evt.type in (open, openat) and fd.name = /etc/shadow
  output: shadow read (name=%container.name id=%container.id note=%container.label[note] labels=%container.labels)
  priority: NOTICE
YAML
"$bin/seccheckd" rules check "$dir/rules.yaml" >/dev/null
printf -- '- rule: x\n  desc: x\n  condition: container.label = a\n  output: x\n  priority: INFO\n' >"$dir/nokey.yaml"
if "$bin/seccheckd" rules check "$dir/nokey.yaml" >"$dir/nokey.out" 2>&1; then
    fail "container.label without [KEY] was accepted"
else
    grep -q "needs \[KEY\]" "$dir/nokey.out" && ok "container.label without [KEY] refused: $(grep -o "'container.label' needs[^;]*" "$dir/nokey.out" | head -1)" ||
        fail "container.label without a key: $(cat "$dir/nokey.out")"
fi
# --retries: the sandbox waits for a busy daemon rather than dropping events
# the checks need (lossless_sandbox in tests/e2e/stop_jobs.sh tells why)
"$bin/seccheckd" gvisor-config --rules "$dir/rules.yaml" --retries 1000 --socket "$sock" >"$dir/pod-init.json" 2>/dev/null
dockerd_start "{\"runsc-seccheck\": {\"path\": \"$(command -v runsc)\", \"runtimeArgs\": [\"--network=none\", \"--pod-init-config=$dir/pod-init.json\"]}}"
dk import "$rootfs" registry.example.com:5000/shop/web:v1.2 >/dev/null

seccheckd_start --socket "$sock" --db "$db" --rules "$dir/rules.yaml" --rule-matching all --alerts-out "$dir/alerts.json" \
    --runsc-root "$dir/exec/runtime-runc/moby" --docker-socket "$DOCKER_SOCK"
grep -q "asking Docker's API on $DOCKER_SOCK" "$dir/daemon.log" && ok "the daemon asks the test's dockerd" ||
    fail "no Docker socket in the daemon's log"

esc=$'\033[31mred\033[0m'
run_reader() {   # run_reader NAME LABEL...
    local name=$1
    shift
    timeout 120 "$DOCKER_CLI" -H "unix://$DOCKER_SOCK" run --runtime=runsc-seccheck --name "$name" \
        --cidfile "$dir/$name.cid" "$@" \
        registry.example.com:5000/shop/web:v1.2 sh -c 'cat /etc/shadow >/dev/null' \
        >"$dir/$name.out" 2>&1 || { cat "$dir/$name.out"; fail "container $name did not run"; }
}
run_reader web-1 --label team=blue --label "note=$esc"
web1=$(cat "$dir/web-1.cid")
run_reader "$web1" --label note=impostor   # named with web-1's full id
impostor=$(cat "$dir/$web1.cid")
[ "$impostor" != "$web1" ] && ok "a second container is named with web-1's id (${web1:0:12})" ||
    fail "the impostor has web-1's id"

# A container that lives well under a second (`docker run --rm`, the read at once): its names are
# asked for when its sandbox connects, before Docker forgets it (issue 32 item 4, for Docker).
timeout 120 "$DOCKER_CLI" -H "unix://$DOCKER_SOCK" run --rm --runtime=runsc-seccheck --name quick-1 \
    --cidfile "$dir/quick-1.cid" registry.example.com:5000/shop/web:v1.2 sh -c 'cat /etc/shadow >/dev/null' \
    >"$dir/quick-1.out" 2>&1 || { cat "$dir/quick-1.out"; fail "container quick-1 did not run"; }
quick=$(cat "$dir/quick-1.cid" 2>/dev/null || echo none)
for _ in $(seq 300); do [ "$(grep -c 'closed (eof)' "$dir/daemon.log")" -ge 3 ] && break; sleep 0.02; done
sleep 0.3
kill -TERM "$daemon" 2>/dev/null || fail "seccheckd was gone before its stop"
wait "$daemon" || fail "seccheckd exited non-zero"
daemon=

check() {   # check DESCRIPTION EXPECTED SQL
    local got
    got=$(sqlite3 "$db" "$3")
    if [ "$got" = "$2" ]; then ok "$1"; else fail "$1: expected '$2', got '$got'"; fi
}
image_id=$(dk inspect -f '{{.Image}}' web-1)
check "the rule on container.name fired for web-1, with Docker's names, image, image id and label" \
    "1|web-1 read the shadow file (name=web-1 repo=registry.example.com:5000/shop/web tag=v1.2 image=registry.example.com:5000/shop/web:v1.2 image_id=${image_id#sha256:} team=blue)\
 container_id=${web1:0:12} container_name=web-1 container_image_repository=registry.example.com:5000/shop/web\
 container_image_tag=v1.2 k8s_pod_name=<NA> k8s_ns_name=<NA>" \
    "SELECT count(*), substr(output, instr(output, 'web-1 read')) FROM alerts
     WHERE rule = 'Shadow read by web-1' AND container_id = '$web1'"
check "... and never for the container named like web-1's id" 0 \
    "SELECT count(*) FROM alerts WHERE rule = 'Shadow read by web-1' AND container_id != '$web1'"
check "the impostor's alert names it by its own name" \
    "shadow read (name=$web1 id=${impostor:0:12} note=impostor labels=note:impostor) container_id=${impostor:0:12}\
 container_name=$web1 container_image_repository=registry.example.com:5000/shop/web container_image_tag=v1.2\
 k8s_pod_name=<NA> k8s_ns_name=<NA>" \
    "SELECT substr(output, instr(output, 'shadow read')) FROM alerts WHERE rule = 'Shadow read' AND container_id = '$impostor'"
check "container_info: web-1's names are Docker's" "found|web-1|registry.example.com:5000/shop/web|v1.2" \
    "SELECT state, name, image_repository, image_tag FROM container_info WHERE container_id = '$web1'"
check "container_info: the impostor keeps its own" "$web1" \
    "SELECT name FROM container_info WHERE container_id = '$impostor'"
check "a --rm container gone within a second keeps Docker's names" "found|quick-1|registry.example.com:5000/shop/web|v1.2" \
    "SELECT state, name, image_repository, image_tag FROM container_info WHERE container_id = '$quick'"
check "... in its alert too" 1 \
    "SELECT count(*) FROM alerts WHERE rule = 'Shadow read' AND container_id = '$quick' AND output LIKE '%container_name=quick-1 %'"
out=$("$bin/seccheckd" containers --db "$db")
echo "$out" | grep -q "^${web1:0:17}\.\.\.  *web-1 .*registry.example.com:5000/shop/web:v1.2" &&
    ok "seccheckd containers lists web-1 by name" || fail "seccheckd containers: $out"

# (Falco's append_output names the container after each output: Docker's names there too.)

# The label's escape sequence: stored as Docker has it, printed escaped everywhere.
"$bin/seccheckd" alerts --db "$db" -o wide >"$dir/alerts.txt" 2>&1 || true
for f in alerts.json alerts.txt daemon.log; do
    if grep -q $'\033' "$dir/$f"; then fail "$f holds a raw ESC"; else ok "$f: no raw ESC"; fi
done
grep -q 'note=\\u001b\[31mred' "$dir/alerts.json" && ok "the JSON alert line shows the label escaped (\\u001b)" ||
    fail "no escaped label in alerts.json: $(grep -o 'note=[^ ]*' "$dir/alerts.json" | head -2)"

docker_verdict names "$dir/daemon.log"
