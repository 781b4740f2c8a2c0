#!/usr/bin/env bash
# End-to-end: a container's mounts, in real gVisor. An OCI bundle with a
# read-only bind mount of a host directory (/data), a writable one
# (/scratch), a tmpfs with a mode, the host's /etc read-only at /host/etc,
# run with `runsc --root ROOT run --bundle B ID`; seccheckd --runsc-root ROOT
# reads runsc's own state file (its spec's mounts). A rule on
# container.mount.dest[PATH] and container.mount.rdwr fires and its output
# shows the values, container.mounts included; falcosecurity/rules'
# falco-sandbox_rules.yaml (tests/fixtures/falco_rules, unchanged, beside
# falco_rules.yaml) raises "Launch Sensitive Mount Container" for the
# container's first exec, its mounts= listing the bind mounts. The
# container itself shows the mounts are what the spec says (it writes to
# /scratch, cannot write to /data).
# Usage: mounts_e2e.sh SECCHECKD_BINARY SOURCE_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/stop_jobs.sh"

seccheckd=${1:?usage: mounts_e2e.sh SECCHECKD_BINARY SOURCE_DIR}
src=${2:?usage: mounts_e2e.sh SECCHECKD_BINARY SOURCE_DIR}
command -v runsc >/dev/null || { echo "FAIL: runsc not installed (apt-get install -y runsc)"; exit 1; }
command -v sqlite3 >/dev/null || { echo "FAIL: sqlite3 not installed (apt-get install -y sqlite3)"; exit 1; }
upstream=$src/tests/fixtures/falco_rules

e2e_scratch mounts
root=$dir/runsc-root
cleanup_more() {
    runsc --root "$root" delete -force mnt1 >/dev/null 2>&1 || true
}
failures=0
ok() { echo "ok   - $1"; }
fail() { echo "FAIL - $1"; failures=$((failures + 1)); }

# A root filesystem of a few host binaries and their libraries.
rootfs=$dir/rootfs
mkdir -p "$rootfs"/{bin,etc,proc,tmp,dev,data,scratch,host/etc} "$root" "$dir/hostdata" "$dir/scratch"
for b in /bin/dash /bin/cat /bin/sleep; do cp "$b" "$rootfs/bin/"; done
mv "$rootfs/bin/dash" "$rootfs/bin/sh"
for lib in $(ldd /bin/dash /bin/cat /bin/sleep | grep -o '/lib[^ ]*' | sort -u); do
    mkdir -p "$rootfs$(dirname "$lib")"
    cp -L "$lib" "$rootfs$lib"
done
echo "host secret" >"$dir/hostdata/secret.txt"

# The container writes to /scratch, tries /data, then its shell (pid 1)
# execs another shell: Falco's container_started (spawned_process and
# proc.vpid=1). It lives a second: runsc deletes its state file when it
# ends, and seccheckd looks the container up when its first batch comes
# (--flush-ms, 100 ms).
mkdir -p "$dir/bundle"
ln -s "$rootfs" "$dir/bundle/rootfs"
cat >"$dir/bundle/config.json" <<JSON
{"ociVersion": "1.0.0",
 "process": {"user": {"uid": 0, "gid": 0}, "env": ["PATH=/bin"], "cwd": "/",
             "args": ["/bin/sh", "-c",
                      "echo written >/scratch/out; if echo x >/data/x 2>/dev/null; then echo data-rw; else echo data-ro; fi; exec /bin/sh -c 'cat /data/secret.txt; sleep 1'"]},
 "root": {"path": "rootfs", "readonly": true},
 "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/data", "type": "bind", "source": "$dir/hostdata", "options": ["rbind", "ro", "rprivate"]},
            {"destination": "/scratch", "type": "bind", "source": "$dir/scratch", "options": ["rbind", "rw"]},
            {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=1777"]},
            {"destination": "/host/etc", "type": "bind", "source": "/etc", "options": ["rbind", "ro"]}],
 "linux": {"namespaces": [{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}]}}
JSON

sock=$dir/s.sock
db=$dir/events.db
cat >"$dir/rules.yaml" <<'YAML'
- rule: Host data mounted read-only
  desc: a program run in a container that has the test's host directory at /data, read-only
  condition: >-
    evt.type = execve and container.mount.dest[*/hostdata] = /data and container.mount.rdwr[*/hostdata] = false
    and container.mounts contains ":/host/etc::false:"
  output: >-
    host data at %container.mount.dest[*/hostdata] (source=%container.mount.source[/data]
    rdwr=%container.mount.rdwr[*/hostdata] propagation=%container.mount.propagation[*/hostdata]
    scratch=%container.mount[2] tmp_mode=%container.mount.mode[*/tmpfs] none=%container.mount[9]
    cmd=%proc.cmdline)
  priority: WARNING
YAML
rules=(--rules "$upstream/falco_rules.yaml" --rules "$upstream/falco-sandbox_rules.yaml" --rules "$dir/rules.yaml")
"$seccheckd" gvisor-config --rules "$upstream/falco_rules.yaml" "$upstream/falco-sandbox_rules.yaml" \
    "$dir/rules.yaml" "${lossless_sandbox[@]}" --socket "$sock" >"$dir/pod-init.json" 2>"$dir/config.err" ||
    { cat "$dir/config.err"; echo "FAIL: gvisor-config --rules failed"; exit 1; }
# --rule-matching all: both rules hold for pid 1's exec (Falco's default,
# first, would raise only the first of them)
"$seccheckd" --socket "$sock" --db "$db" "${rules[@]}" --alerts-out "$dir/alerts.json" \
    --rule-matching all --runsc-root "$root" --docker-socket none 2>"$dir/daemon.log" &
daemon=$!
for _ in $(seq 500); do grep -q "info: listening on" "$dir/daemon.log" && break; sleep 0.01; done
grep -q "info: listening on" "$dir/daemon.log" || { cat "$dir/daemon.log"; echo "FAIL: seccheckd did not start"; exit 1; }

if timeout 60 runsc --root "$root" --network=none --pod-init-config="$dir/pod-init.json" \
    run --bundle "$dir/bundle" mnt1 </dev/null >"$dir/run.out" 2>"$dir/run.err"; then
    ok "the container ran"
else
    cat "$dir/run.err"
    fail "the container failed"
fi
[ "$(cat "$dir/run.out")" = "$(printf 'data-ro\nhost secret')" ] &&
    ok "in the sandbox /data is the host directory, read-only" || fail "container output: $(cat "$dir/run.out")"
[ "$(cat "$dir/scratch/out" 2>/dev/null)" = written ] && ok "/scratch is the writable host directory" ||
    fail "/scratch/out not written"

for _ in $(seq 200); do grep -q 'closed (eof)' "$dir/daemon.log" && break; sleep 0.01; done
sleep 0.3
check() {   # check DESCRIPTION EXPECTED SQL
    local got
    got=$(sqlite3 "$db" "$3")
    if [ "$got" = "$2" ]; then ok "$1"; else fail "$1: expected '$2', got '$got'"; fi
}
check "runsc's state file was read" "found" "SELECT state FROM container_info WHERE container_id = 'mnt1'"
check "the rule on container.mount.dest and .rdwr fired for the execs (sh, cat, sleep)" 3 \
    "SELECT count(*) FROM alerts WHERE rule = 'Host data mounted read-only' AND container_id = 'mnt1'"
want="host data at /data (source=$dir/hostdata rdwr=false propagation=rprivate scratch=$dir/scratch:/scratch::true: tmp_mode=1777 none=<NA> cmd=sh -c cat /data/secret.txt; sleep 1)"
check "its output shows the values" 1 \
    "SELECT count(*) FROM alerts WHERE rule = 'Host data mounted read-only' AND output LIKE '%: Warning $want container_id=mnt1 %'"
# runsc keeps a relative source joined to the bundle (release-20221219.0
# runsc/specutils/specutils.go:190-195): proc's "proc" is BUNDLE/proc
mounts="$dir/bundle/proc:/proc::true:,$dir/hostdata:/data::false:rprivate,$dir/scratch:/scratch::true:"
mounts="$mounts,$dir/bundle/tmpfs:/tmp:1777:true:,/etc:/host/etc::false:"
check "upstream's Launch Sensitive Mount Container fired for the container's first exec" 1 \
    "SELECT count(*) FROM alerts WHERE rule = 'Launch Sensitive Mount Container' AND container_id = 'mnt1'"
check "its mounts= is container.mounts: the mounts runsc keeps, as Falco writes them" 1 \
    "SELECT count(*) FROM alerts WHERE rule = 'Launch Sensitive Mount Container'
       AND output LIKE '%Container with sensitive mount started | mounts=$mounts evt_type=execve %process=sh %'"
check "output_fields carry them by name" "/data|false|$mounts" \
    "SELECT json_extract(output_fields, '\$.\"container.mount.dest[*/hostdata]\"'),
            json_extract(output_fields, '\$.\"container.mount.rdwr[*/hostdata]\"'),
            (SELECT json_extract(output_fields, '\$.\"container.mounts\"') FROM alerts
               WHERE rule = 'Launch Sensitive Mount Container')
     FROM alerts WHERE rule = 'Host data mounted read-only' AND output LIKE '%cmd=sh %'"
grep -q '"container.mount.dest\[\*/hostdata\]":"/data"' "$dir/alerts.json" &&
    ok "the JSON lines carry container.mount.dest[*/hostdata]" || fail "no container.mount.dest in the JSON lines"

e2e_stop_daemon
e2e_verdict "mounts e2e"
