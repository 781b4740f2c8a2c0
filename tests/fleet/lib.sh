# lib.sh - what the fleet tests share (sourced after pg.sh): a private
# directory, processes started by pid and always ended, checks that count.
#
#   fleet_setup NAME   mktemp /tmp/seccheckd-NAME-XXXXXX into $dir; EXIT trap
#                      ends every process started with spawn, stops PostgreSQL
#                      and removes $dir, on every path; sets $own_names
#   own_names          the options every seccheckd daemon a test starts gets
#                      (spawn d "$bin/seccheckd" --socket ... "${own_names[@]}"):
#                      an empty runsc root of the test's own and no Docker
#                      socket, so it reads none of the machine's (its runsc
#                      roots, /var/run/docker.sock). A daemon that names its
#                      own --runsc-root takes --docker-socket none alone.
#   spawn VAR CMD...   starts CMD in the background (output to $dir/VAR.log),
#                      its pid in $VAR
#   check DESC CMD...  ok / FAIL line; failures counted in $failures
#   wait_for SECONDS CMD...   polls CMD every 0.1 s until it succeeds
#   metric SOCKET SERIES      a series' value from a --metrics-listen unix:SOCKET

failures=0
spawned=()

fleet_setup() {
    dir=$(mktemp -d "/tmp/seccheckd-$1-XXXXXX")
    trap fleet_cleanup EXIT
    trap 'exit 130' INT TERM
    fleet_janitor
    mkdir "$dir/runsc-root"
    own_names=(--runsc-root "$dir/runsc-root" --docker-socket none)
}

# A test killed outright (ctest's timeout kills its process tree) runs no
# EXIT trap, and the PostgreSQL server pg_ctl started has left that tree.
# So a janitor in a session of its own, and no longer this shell's child
# (started from a subshell that exits at once: ctest kills descendants too),
# waits for this shell to go, then stops the server, ends the nats-server
# nodes of tests/fleet/nats.sh (their configs are under $dir) and removes
# $dir; after a normal exit it finds all of it gone already.
fleet_janitor() {
    local ctl=("$PG_BIN/pg_ctl")
    [ "$(id -u)" = 0 ] && ctl=(runuser -u nobody -- "$PG_BIN/pg_ctl")
    (setsid bash -c '
        owner=$1 top=$2
        shift 2
        while kill -0 "$owner" 2>/dev/null; do sleep 1; done
        [ -f "$top/pg/data/postmaster.pid" ] && "$@" -D "$top/pg/data" stop -m immediate -w -t 30
        for p in /proc/[0-9]*; do
            grep -qsF "$top/nats/n" "$p/cmdline" && kill -KILL "${p#/proc/}" 2>/dev/null
        done
        rm -rf "$top"' fleet-janitor "$$" "$dir" "${ctl[@]}" </dev/null >/dev/null 2>&1 &)
}

fleet_cleanup() {
    local p
    for p in "${spawned[@]}"; do
        kill -CONT "$p" 2>/dev/null
        kill -KILL "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    pg_stop
    rm -rf "$dir"
}

spawn() {
    local var=$1
    shift
    "$@" >>"$dir/$var.log" 2>&1 &
    printf -v "$var" '%s' $!
    spawned+=($!)
}

ok() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; failures=$((failures + 1)); }
check() {
    local what=$1
    shift
    if "$@"; then ok "$what"; else fail "$what"; fi
}

wait_for() {
    local limit=$1 i=0
    shift
    while ! "$@" 2>/dev/null; do
        i=$((i + 1))
        [ $i -ge $((limit * 10)) ] && return 1
        sleep 0.1
    done
}

# stop PID [SECONDS]: SIGTERM, wait for the exit; its status in $stop_status
# (124 when it had to be killed).
stop() {
    local pid=$1 limit=${2:-20} i=0
    kill -TERM "$pid" 2>/dev/null
    while kill -0 "$pid" 2>/dev/null && [ "$(ps -o stat= -p "$pid" 2>/dev/null)" != "Z" ]; do
        i=$((i + 1))
        if [ $i -ge $((limit * 10)) ]; then
            kill -KILL "$pid" 2>/dev/null
            wait "$pid" 2>/dev/null
            stop_status=124
            return
        fi
        sleep 0.1
    done
    wait "$pid" 2>/dev/null
    stop_status=$?
}

sqlite_c() { sqlite3 -cmd '.timeout 5000' "$1" "$2"; }

# The daemon's db and the central copy agree for a host: same batches
# (ids and hashes), same events, every column of the local table (the
# decoded ones and detail too, whichever path made the central copy:
# JetStream's version 2 messages carry raw alone and central decodes the
# rest), no duplicates. Values compared as the forwarder ships them: text
# as UTF-8 with NUL and invalid bytes as U+FFFD, detail as JSON.
same_rows() {
    local db=$1 host=$2 cols
    sqlite_c "$db" "SELECT id || ' ' || lower(hex(hash)) FROM batches ORDER BY id" >"$dir/local.batches"
    psql_c "SELECT id || ' ' || encode(hash, 'hex') FROM batches WHERE host_id = '$host' ORDER BY id" \
        >"$dir/central.batches"
    cmp -s "$dir/local.batches" "$dir/central.batches" || { echo "batches differ"; return 1; }
    cols=$(sqlite_c "$db" "SELECT group_concat(name, ', ') FROM pragma_table_xinfo('events') WHERE name <> 'raw'")
    psql_c "SELECT row_to_json(t) FROM (SELECT $cols, encode(raw, 'hex') AS raw FROM events
            WHERE host_id = '$host' ORDER BY id) t" >"$dir/central.events" || return 1
    python3 - "$db" "$cols" "$dir/central.events" <<'PY'
import json, sqlite3, sys
def text(b):   # copy_binary.c's put_clean: NUL and each byte of no valid sequence become U+FFFD
    out, i = [], 0
    while i < len(b):
        c = b[i]
        n = 1 if c < 0x80 else 2 if 0xc2 <= c <= 0xdf else 3 if 0xe0 <= c <= 0xef else 4 if 0xf0 <= c <= 0xf4 else 0
        try:
            ch = b[i:i + n].decode("utf-8") if n and i + n <= len(b) else None
        except UnicodeDecodeError:
            ch = None
        out.append("\ufffd" if ch is None or ch == "\0" else ch)
        i += len(b[i:i + n]) if ch is not None else 1
    return "".join(out)
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True, timeout=5)
db.text_factory = text
cols = sys.argv[2].split(", ") + ["raw"]
def clean(v):   # what jsonb holds of a local detail's strings
    if isinstance(v, str): return v.replace("\0", "\ufffd")
    if isinstance(v, list): return [clean(x) for x in v]
    if isinstance(v, dict): return {clean(k): clean(x) for k, x in v.items()}
    return v
rows = db.execute("SELECT %s, lower(hex(raw)) FROM events ORDER BY id" % ", ".join(cols[:-1]))
central = open(sys.argv[3], encoding="utf-8")
n = 0
for local in rows:
    line = central.readline()
    if not line:
        print("events: central has %d rows, local more" % n); sys.exit(1)
    c = json.loads(line)
    want = {k: text(v) if isinstance(v, bytes) else v for k, v in zip(cols, local)}   # a blob where text is
    if want.get("detail") is not None:
        want["detail"] = clean(json.loads(want["detail"]))
    if c != want:
        diff = [k for k in cols if c.get(k) != want.get(k)]
        print("event id %s: columns %s differ (central %r, local %r)" % (
            want["id"], ", ".join(diff), {k: c.get(k) for k in diff[:3]}, {k: want.get(k) for k in diff[:3]}))
        sys.exit(1)
    n += 1
if central.readline():
    print("events: central has more rows than local's %d" % n); sys.exit(1)
PY
}

# The alerts rows are the local ones, every column; output_fields and tags
# compared as JSON (jsonb writes them its own way). At least min of them.
same_alerts() {   # same_alerts DB HOST MIN
    local cols="id, event_id, rule, priority, time_ns, coalesce(container_id, '-'), output, suppressed"
    sqlite3 -json -cmd '.timeout 5000' "$1" "SELECT $cols AS k, output_fields, tags FROM alerts ORDER BY id" \
        >"$dir/local.alerts"
    psql_c "SELECT coalesce(json_agg(json_build_object('k', concat_ws('|', $cols), 'output_fields', output_fields,
                                                       'tags', tags) ORDER BY id), '[]')
            FROM alerts WHERE host_id = '$2'" >"$dir/central.alerts"
    python3 - "$dir/local.alerts" "$dir/central.alerts" "$3" <<'PY'
import json, sys
local = json.load(open(sys.argv[1])) if open(sys.argv[1]).read().strip() else []
central = json.load(open(sys.argv[2]))
key = lambda r: "|".join(str(v) for v in [r[k] for k in r if k not in ("output_fields", "tags")])
ok = len(local) == len(central) >= int(sys.argv[3])
for l, c in zip(local, central):
    ok = ok and key(l) == c["k"] and json.loads(l["output_fields"]) == c["output_fields"] and \
        json.loads(l["tags"]) == c["tags"]
if not ok:
    print("alerts: %d local, %d central" % (len(local), len(central)))
sys.exit(0 if ok else 1)
PY
}

# The runs and connections rows are the local ones, every column.
same_side_rows() {   # same_side_rows DB HOST
    local t lcols ccols
    for t in runs connections; do
        lcols=$(sqlite_c "$1" "SELECT group_concat('coalesce(' || name || ', ''-'')', ' || ''|'' || ')
                               FROM pragma_table_info('$t')")
        ccols=$(sqlite_c "$1" "SELECT group_concat('coalesce(' || name || '::text, ''-'')', ' || ''|'' || ')
                               FROM pragma_table_info('$t')")
        sqlite_c "$1" "SELECT $lcols FROM $t ORDER BY id" >"$dir/local.$t"
        psql_c "SELECT $ccols FROM $t WHERE host_id = '$2' ORDER BY id" >"$dir/central.$t"
        cmp -s "$dir/local.$t" "$dir/central.$t" || { diff "$dir/local.$t" "$dir/central.$t" | head -6; return 1; }
    done
}

metric() {   # metric SOCKET SERIES: its value on the metrics endpoint at unix:SOCKET
    curl -s --unix-socket "$1" http://localhost/metrics | awk -v n="$2" '$1 == n { print $2 }'
}

caught_up() {   # caught_up DB HOST
    local want got
    want=$(sqlite_c "$1" "SELECT coalesce(max(id), 0) FROM batches")
    got=$(psql_c "SELECT last_batch_id FROM hosts WHERE host_id = '$2'")
    [ -n "$got" ] && [ "$want" = "$got" ] && [ "$want" != 0 ]
}

# runsc_state ROOT BUNDLE NAME POD NAMESPACE: in the runsc root ROOT, the
# state file of mixed_syscalls.trace's container (runsc-236711) with those
# CRI names (JSON strings: \u escapes become the raw characters), and its
# bundle BUNDLE, whose rootfs passwd names root.
runsc_state() {
    mkdir -p "$1" "$2/rootfs/etc"
    echo 'root:x:0:0:root:/root:/bin/sh' >"$2/rootfs/etc/passwd"
    cat >"$1/runsc-236711_sandbox:runsc-236711.state" <<JSON
{"id": "runsc-236711", "bundleDir": "$2", "spec": {"root": {"path": "rootfs"},
 "process": {"user": {"uid": 0, "gid": 0}}, "annotations": {"io.kubernetes.cri.container-name": "$3",
 "io.kubernetes.cri.sandbox-name": "$4", "io.kubernetes.cri.sandbox-namespace": "$5",
 "io.kubernetes.cri.image-name": "registry:5000/team/app:v2"}}}
JSON
}
