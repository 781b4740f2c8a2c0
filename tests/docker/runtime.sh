#!/usr/bin/env bash
# docker.runtime: `seccheckd gvisor-config --docker-runtime NAME --docker-config
# FILE` on a real dockerd's daemon.json. The test's dockerd already has a
# runsc runtime with an argument of its own (--network=none) and its other
# keys (data-root, exec-root, hosts...); after the command those keys and
# that argument are as they were, the entry runs runsc with the pod-init
# config written beside the file, dockerd takes it on SIGHUP (no restart),
# and a container run with --runtime=NAME streams into seccheckd, where the
# default rules alert on /etc/shadow. A broken daemon.json is refused with
# the reason and left byte for byte, no config written beside it. The same
# image runs under Docker's runc too.
# Usage: runtime.sh SECCHECKD_BIN_DIR SOURCE_DIR CACHE_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"
docker_test runtime "$0" "$@"

runsc=$(command -v runsc)
dockerd_start "{\"runsc-seccheck\": {\"path\": \"$runsc\", \"runtimeArgs\": [\"--network=none\"]}}"
dk import "$rootfs" shop/web:v1 >/dev/null
cp "$dir/daemon.json" "$dir/daemon.json.before"

sock=$dir/seccheck.sock db=$dir/events.db rules=$src/configs/rules/gvisor_rules.yaml
seccheckd_start --socket "$sock" --db "$db" --rules "$rules" --alerts-out none \
    --runsc-root "$dir/exec/runtime-runc/moby" --docker-socket "$DOCKER_SOCK"

"$bin/seccheckd" gvisor-config --docker-runtime runsc-seccheck --docker-config "$dir/daemon.json" --rules "$rules" \
    --socket "$sock" >"$dir/gvcfg.out" 2>"$dir/gvcfg.err" || { cat "$dir/gvcfg.err"; fail "--docker-runtime failed"; }
pod_init=$dir/runsc-seccheck-pod-init.json
grep -q "wrote $pod_init" "$dir/gvcfg.out" && ok "the pod-init config is written beside daemon.json" ||
    fail "gvisor-config said: $(cat "$dir/gvcfg.out")"
grep -q "runtime-runc/moby" "$dir/gvcfg.out" && grep -q "$dir/exec/runtime-runc/moby" "$dir/gvcfg.out" &&
    ok "... and says where runsc's state of Docker's containers is (the file's exec-root)" ||
    fail "no runsc root in: $(cat "$dir/gvcfg.out")"
python3 - "$dir/daemon.json.before" "$dir/daemon.json" "$pod_init" "$runsc" <<'PY' && ok "daemon.json: the other keys and the entry's --network=none kept, --pod-init-config added" || fail "daemon.json not as expected"
import json, sys
before, after = (json.load(open(p)) for p in sys.argv[1:3])
want = dict(before)
want["runtimes"] = {"runsc-seccheck": {"path": sys.argv[4], "runtimeArgs": ["--network=none", "--pod-init-config=" + sys.argv[3]]}}
if after != want or list(after) != list(before):
    print("before:", json.dumps(before), "\nafter: ", json.dumps(after))
    sys.exit(1)
PY
python3 -c "import json,sys; json.load(open(sys.argv[1]))['trace_session']['sinks'][0]['config']['endpoint'] == sys.argv[2] or sys.exit(1)" \
    "$pod_init" "$sock" && ok "the pod-init config streams to seccheckd's socket" || fail "pod-init config: $(head -c 300 "$pod_init")"

# dockerd reads its runtimes again on SIGHUP.
kill -HUP "$DOCKERD_PID"
for _ in $(seq 100); do dk info --format '{{json .Runtimes}}' | grep -q -- "--pod-init-config=$pod_init" && break; sleep 0.1; done
dk info --format '{{json .Runtimes}}' | grep -q -- "--pod-init-config=$pod_init" && ok "dockerd took the runtime on SIGHUP" ||
    fail "dockerd's runtimes after SIGHUP: $(dk info --format '{{json .Runtimes}}')"
if timeout 120 "$DOCKER_CLI" -H "unix://$DOCKER_SOCK" run --rm --runtime=runsc-seccheck --cidfile "$dir/cid" shop/web:v1 \
    sh -c 'sleep 1; cat /etc/shadow >/dev/null; sleep 0.5' >"$dir/run.out" 2>&1; then
    ok "docker run --runtime=runsc-seccheck ran"
else
    cat "$dir/run.out"
    fail "docker run --runtime=runsc-seccheck failed"
fi
cid=$(cat "$dir/cid" 2>/dev/null || true)
for _ in $(seq 300); do grep -q 'closed (eof)' "$dir/daemon.log" && break; sleep 0.02; done
sleep 0.3
kill -TERM "$daemon" 2>/dev/null || fail "seccheckd was gone before its stop"
wait "$daemon" || fail "seccheckd exited non-zero"
daemon=
n=$(sqlite3 "$db" "SELECT count(*) FROM alerts WHERE rule = 'Sensitive file read' AND container_id = '$cid'")
[ "$n" -ge 1 ] && ok "the default rules alert on the container's read of /etc/shadow ($n)" ||
    fail "no 'Sensitive file read' alert for $cid: $(sqlite3 "$db" 'SELECT rule, container_id FROM alerts')"

# The same image under Docker's own runc.
dk run --rm shop/web:v1 cat /etc/debian_version >"$dir/runc.out" 2>&1 && ok "the image runs under runc too ($(cat "$dir/runc.out"))" ||
    fail "runc: $(cat "$dir/runc.out")"

# A daemon.json that does not parse: refused, left as it was, nothing written beside it.
mkdir "$dir/broken"
printf '{"log-level": "warn",\n "runtimes": {"kata": {"path": "/usr/bin/kata"},}\n}\n' >"$dir/broken/daemon.json"
cp "$dir/broken/daemon.json" "$dir/broken.copy"
if "$bin/seccheckd" gvisor-config --docker-runtime runsc-seccheck --docker-config "$dir/broken/daemon.json" \
    --socket "$sock" >"$dir/broken.out" 2>&1; then
    fail "a broken daemon.json was accepted"
else
    grep -q "not valid JSON (line 2" "$dir/broken.out" && grep -q "nothing changed" "$dir/broken.out" &&
        ok "a broken daemon.json is refused with the reason: $(head -1 "$dir/broken.out")" || fail "refusal: $(cat "$dir/broken.out")"
fi
cmp -s "$dir/broken/daemon.json" "$dir/broken.copy" && [ "$(ls "$dir/broken")" = daemon.json ] &&
    ok "... left byte for byte, no pod-init config written beside it" || fail "the broken file's directory: $(ls "$dir/broken")"

docker_verdict runtime "$dir/daemon.log"
