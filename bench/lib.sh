# shellcheck shell=bash
# shellcheck disable=SC2034  # variables used by the scripts that source this file
# Shared helpers of the bench scripts (bench/ipc.sh, bench/zero_drop.sh,
# bench/macro.sh). Sourced, not run. Every receiver started through
# recv_start is killed on exit by the trap that bench_init installs, and every
# socket lives in a private temporary directory (BENCH_TMP).

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(dirname "$BENCH_DIR")
SUMMARIZE=("python3" "$BENCH_DIR/summarize.py")

# Defaults the scripts' options override.
BIN_DIR=${SECCHECKD_BIN_DIR:-$REPO_DIR/build/bin}
# --alt NAME=DIR (and --base-bin DIR, which is --alt base=DIR): a receiver
# named KIND@NAME runs DIR's binaries, so another build (an older release, a
# variant) is measured in the same interleaved invocation as this one.
declare -A ALT_BIN=()
alt_add() {   # alt_add NAME=DIR
    [[ $1 =~ ^([A-Za-z0-9_-]+)=(.+)$ ]] || die "--alt wants NAME=DIR, got '$1'"
    ALT_BIN[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
}
TRACES_DIR=${SECCHECKD_TRACES:-$REPO_DIR/tests/fixtures/traces}

BENCH_TMP=
RECV_PID=
RECV_KIND=
RECV_LOG=
RECV_DB=
RECV_DB_BYTES=
RECV_DB_ROWS=
RECV_DB_INDEXES=
RECV_ERROR=
declare -a BENCH_PIDS=()

die() { echo "${0##*/}: $*" >&2; exit 1; }
say() { echo "[$(date +%H:%M:%S)] $*" >&2; }

# The positive-number checks of option values.
need_uint() { [[ $2 =~ ^[0-9]+$ && $2 -gt 0 ]] || die "$1 wants a positive integer, got '$2'"; }
need_num() { [[ $2 =~ ^[0-9]*\.?[0-9]+$ ]] || die "$1 wants a positive number, got '$2'"; }

bench_cleanup() {
    local pid
    for pid in "${BENCH_PIDS[@]}"; do
        kill -0 "$pid" 2>/dev/null || continue
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in "${BENCH_PIDS[@]}"; do
        for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
    done
    [ -n "$BENCH_TMP" ] && rm -rf "$BENCH_TMP"
    return 0
}

# bench_init OUT_DIR: checks the tools, makes OUT_DIR and the private temp dir,
# installs the cleanup trap, sets own_names.
#
# own_names: the options of every seccheckd daemon a bench starts
# ("$bin/seccheckd" --socket ... "${own_names[@]}", recv_start's included): an
# empty runsc root in the private temp dir and no Docker socket, so a daemon
# reads none of the machine's runsc roots (/var/run/runsc, ...) and asks no
# /var/run/docker.sock (the tests' rule; tests/lint/hermetic_tests.py checks
# it). `runsc do` (macro.sh, alert_peaks.sh --runsc) keeps its state where it
# likes whatever --root says; the daemon finds the sandbox through the
# connection's peer. A bench whose containers run in a root of its own sets
# own_names to that root and its own socket after bench_init (docker_redis.sh).
bench_init() {
    local out=$1
    command -v python3 >/dev/null || die "python3 is needed"
    mkdir -p "$out/logs" || die "cannot create $out"
    BENCH_TMP=$(mktemp -d "${TMPDIR:-/tmp}/seccheck-bench-XXXXXX")
    chmod 700 "$BENCH_TMP"
    mkdir "$BENCH_TMP/runsc-root"
    own_names=(--runsc-root "$BENCH_TMP/runsc-root" --docker-socket none)
    trap bench_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

default_out() { echo "$REPO_DIR/bench/results/$(date +%Y%m%d-%H%M%S)-$1"; }

need_bins() {
    local b
    for b in "$@"; do
        [ -x "$BIN_DIR/$b" ] || die "$BIN_DIR/$b missing: build first (cmake -S $REPO_DIR -B $REPO_DIR/build -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build $REPO_DIR/build -j2), or pass --bin DIR"
    done
}

# The binaries directory of receiver KIND or KIND@NAME.
recv_bin_dir() {
    case $1 in
        *@*)
            local name=${1#*@}
            [ -n "${ALT_BIN[$name]:-}" ] || die "receiver $1 needs --alt $name=DIR (or --base-bin DIR for @base)"
            echo "${ALT_BIN[$name]}"
            ;;
        *) echo "$BIN_DIR" ;;
    esac
}

# Which binaries a receiver needs (for need_bins).
recv_bins() {
    case ${1%@*} in
        ref) echo ref-recvmmsg ;;
        dummy) echo seccheck-dummy ;;
        discard | sqlite | sqlite-all | sqlite+forward | sqlite+rules20 | sqlite+rules20regex | sqlite+rules500 | sqlite+falco | \
            sqlite+defaults | sqlite+defaults-noseq) echo seccheckd ;;
        sqlite+rules20+deliver) echo seccheckd bench-http-sink ;;
        python) ;;
        *) die "unknown receiver '$1' (ref, dummy, discard, sqlite, sqlite-all, sqlite+forward, sqlite+rules20, sqlite+rules20regex, sqlite+rules500, sqlite+falco, sqlite+defaults, sqlite+defaults-noseq, sqlite+rules20+deliver, python)" ;;
    esac
}

check_receivers() {   # check_receivers LIST(comma separated) -> validates, needs binaries
    local r
    IFS=, read -r -a _rs <<<"$1"
    [ ${#_rs[@]} -gt 0 ] || die "no receivers given"
    local dir saved=$BIN_DIR
    for r in "${_rs[@]}"; do
        dir=$(recv_bin_dir "$r") || exit 1
        BIN_DIR=$dir
        # shellcheck disable=SC2046
        need_bins $(recv_bins "$r")
        BIN_DIR=$saved
    done
    [ -f "$REPO_DIR/dummy/dummy_uds_server.py" ] || die "$REPO_DIR/dummy/dummy_uds_server.py missing"
}

# utime + stime of a process (all its threads), in clock ticks.
cpu_ticks() {
    local s
    s=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return 0; }
    local -a f
    read -r -a f <<<"${s##*) }"
    echo $((f[11] + f[12]))
}
CLK_TCK=$(getconf CLK_TCK)

# recv_start KIND SOCKET LOG: starts a fresh receiver and waits until it
# says "listening on". Sets RECV_PID, RECV_KIND, RECV_LOG (and RECV_DB for sqlite).
recv_start() {
    local kind=$1 sock=$2 log=$3 bin
    RECV_KIND=$kind RECV_LOG=$log RECV_DB= RECV_DB_BYTES= RECV_DB_ROWS= RECV_DB_INDEXES=
    bin=$(recv_bin_dir "$kind") || exit 1
    rm -f "$sock"
    case ${kind%@*} in
        ref) "$bin/ref-recvmmsg" "$sock" </dev/null >"$log" 2>&1 & ;;
        dummy) "$bin/seccheck-dummy" "$sock" </dev/null >"$log" 2>&1 & ;;
        # --log-level debug: the exit summary's loop-turn line (the longest
        # stall) is printed at debug only.
        discard) "$bin/seccheckd" --socket "$sock" --sink discard --log-level debug "${own_names[@]}" </dev/null >"$log" 2>&1 & ;;
        sqlite | sqlite-all | sqlite+forward | sqlite+rules20 | sqlite+rules20regex | sqlite+rules500 | sqlite+falco | \
            sqlite+defaults | sqlite+defaults-noseq | sqlite+rules20+deliver)
            RECV_DB=$BENCH_TMP/events.db
            rm -f "$RECV_DB" "$RECV_DB-wal" "$RECV_DB-shm"
            local indexes=type
            [ "${kind%@*}" = sqlite-all ] && indexes=all
            local -a rules=()
            # --alerts-out none: the alerts are stored (and delivered), not
            # also printed on stdout, as before that became the default.
            case ${kind%@*} in
                sqlite+rules20) rules=(--rules "$BENCH_DIR/rules/usual-20.yaml" --alerts-out none) ;;
                sqlite+rules20regex) rules=(--rules "$BENCH_DIR/rules/usual-20-regex.yaml" --alerts-out none) ;;
                sqlite+rules20+deliver)
                    deliver_sink_start "$bin" "$log.http"
                    rules=(--rules "$BENCH_DIR/rules/usual-20.yaml" --alerts-url "$DELIVER_URL" --alerts-out none)
                    ;;
                sqlite+rules500) rules=(--rules "$(many_rules_file 500)" --alerts-out none) ;;
                # falcosecurity/rules' stable file as upstream ships it: the
                # rules that run on gVisor (the others load disabled)
                sqlite+falco) rules=(--rules "$REPO_DIR/tests/fixtures/falco_rules/falco_rules.yaml" --alerts-out none) ;;
                # the default rules as shipped, and the same without their sequences
                sqlite+defaults) rules=(--rules "$REPO_DIR/configs/rules/gvisor_rules.yaml" --alerts-out none) ;;
                sqlite+defaults-noseq) rules=(--rules "$(rules_without_sequences)" --alerts-out none) ;;
            esac
            "$bin/seccheckd" --socket "$sock" --sink sqlite --db "$RECV_DB" --indexes "$indexes" "${rules[@]}" \
                --log-level debug "${own_names[@]}" ${RULES_ARGS:-} </dev/null >"$log" 2>&1 &
            ;;
        python) python3 -u "$REPO_DIR/dummy/dummy_uds_server.py" "$sock" </dev/null >"$log" 2>&1 & ;;
        *) die "unknown receiver $kind" ;;
    esac
    RECV_PID=$!
    BENCH_PIDS+=("$RECV_PID")
    local deadline=$((SECONDS + 15))
    while [ $SECONDS -lt $deadline ]; do
        if grep -q "listening on" "$log" 2>/dev/null && [ -S "$sock" ]; then
            [ "${kind%@*}" = sqlite+forward ] && forward_start "$bin" "$log.forward"
            return 0
        fi
        kill -0 "$RECV_PID" 2>/dev/null || break
        sleep 0.01
    done
    cat "$log" >&2
    die "receiver $kind did not start (log above)"
}

# rules_without_sequences: configs/rules/gvisor_rules.yaml without its
# `- sequence:` items (bench/rules/strip_sequences.py), made once.
rules_without_sequences() {
    local f=$BENCH_TMP/defaults-noseq.yaml
    [ -s "$f" ] || python3 "$BENCH_DIR/rules/strip_sequences.py" "$REPO_DIR/configs/rules/gvisor_rules.yaml" >"$f" ||
        die "cannot strip the sequences of the default rules"
    echo "$f"
}

# many_rules_file N: N generated rules (bench/rules/gen_many.py) in the
# private temp dir, made once.
many_rules_file() {
    local f=$BENCH_TMP/rules-$1.yaml
    [ -s "$f" ] || python3 "$BENCH_DIR/rules/gen_many.py" "$1" >"$f" || die "cannot generate $1 rules"
    echo "$f"
}

# sqlite+rules20+deliver: the daemon POSTs its alerts (--alerts-url) to a
# local bench-http-sink, started first; at the end deliver_finish records
# how many arrived and how many were still waiting.
DELIVER_PID=
DELIVER_URL=
DELIVER_LOG=
DELIVER_FIELDS=
deliver_sink_start() {   # deliver_sink_start BIN_DIR LOG
    local port_file=$BENCH_TMP/http-sink.port
    rm -f "$port_file"
    DELIVER_LOG=$2
    "$1/bench-http-sink" "$port_file" </dev/null >"$DELIVER_LOG" 2>&1 &
    DELIVER_PID=$!
    BENCH_PIDS+=("$DELIVER_PID")
    local deadline=$((SECONDS + 10))
    until [ -s "$port_file" ]; do
        kill -0 "$DELIVER_PID" 2>/dev/null && [ $SECONDS -lt $deadline ] || die "bench-http-sink did not start"
        sleep 0.01
    done
    DELIVER_URL=http://127.0.0.1:$(cat "$port_file")/
}
deliver_finish() {   # after the daemon stopped: DELIVER_FIELDS from both logs
    kill -TERM "$DELIVER_PID" 2>/dev/null || true
    wait "$DELIVER_PID" 2>/dev/null || true
    local got waiting
    got=$(sed -n 's/^requests \([0-9]*\).*/\1/p' "$DELIVER_LOG")
    waiting=$(sed -n 's/.*alerts: delivery to .* stopped: .* \([0-9]*\) alerts waiting.*/\1/p' "$RECV_LOG" | tail -1)
    DELIVER_FIELDS="alerts_received=${got:-0} alerts_waiting=${waiting:-?}"
}

# sqlite+forward: `seccheckd forward` beside the daemon, shipping its database
# to BENCH_PG_URL (bench/forward.sh starts that server), a new host id per
# receiver, at the CPU priority and policy its systemd unit gives it
# (FORWARD_NICE overrides the priority; FORWARD_ARGS adds options). The load
# starts once it is connected, as a forwarder that runs all the time would
# be; at the end it must have shipped every batch (forward_finish).
FORWARD_PID=
FORWARD_HOST=
FORWARD_FIELDS=
FORWARD_SEQ=0
FORWARD_UNIT=$REPO_DIR/systemd/seccheckd-forward.service
FORWARD_NICE=${FORWARD_NICE:-$(sed -n 's/^Nice=//p' "$FORWARD_UNIT")}
FORWARD_POLICY=(chrt --other 0)
grep -qx 'CPUSchedulingPolicy=batch' "$FORWARD_UNIT" && FORWARD_POLICY=(chrt --batch 0)
forward_start() {   # forward_start BIN_DIR LOG
    [ -n "${BENCH_PG_URL:-}" ] || die "receiver sqlite+forward needs a central server in BENCH_PG_URL (bench/forward.sh --zero-drop sets one up)"
    FORWARD_SEQ=$((FORWARD_SEQ + 1))
    FORWARD_HOST=bench-$$-$FORWARD_SEQ
    "${FORWARD_POLICY[@]}" nice -n "${FORWARD_NICE:-0}" "$1/seccheckd" forward --db "$RECV_DB" --to "$BENCH_PG_URL" \
        --host-id "$FORWARD_HOST" ${FORWARD_ARGS:-} </dev/null >"$2" 2>&1 &
    FORWARD_PID=$!
    BENCH_PIDS+=("$FORWARD_PID")
    local deadline=$((SECONDS + 15))
    until grep -q "forward: connected to the central server" "$2"; do
        kill -0 "$FORWARD_PID" 2>/dev/null && [ $SECONDS -lt $deadline ] ||
            { cat "$2" >&2; die "seccheckd forward did not connect to $BENCH_PG_URL (log above)"; }
        sleep 0.01
    done
}

# forward_finish: after the daemon stopped, waits (30 s at most) until the
# central copy holds the daemon's last batch, then stops the forwarder. Sets
# FORWARD_FIELDS for the probe record: forward_behind (batches it had not
# shipped, 0 when it caught up) and forward_catchup_s (from the daemon's exit);
# returns 1, with RECV_ERROR saying why, when it did not catch up.
forward_finish() {
    local newest shipped=0 start deadline=$((SECONDS + 30))
    start=$(date +%s.%N)
    newest=$(sqlite3 "$RECV_DB" "SELECT coalesce(max(id), 0) FROM batches" 2>/dev/null) || newest=-1
    while :; do
        shipped=$(psql "$BENCH_PG_URL" -X -A -t -c \
            "SELECT coalesce(max(id), 0) FROM batches WHERE host_id = '$FORWARD_HOST'" 2>/dev/null) || shipped=0
        [ "$shipped" -ge "$newest" ] || [ $SECONDS -ge $deadline ] && break
        sleep 0.1
    done
    FORWARD_FIELDS="forward_behind=$((newest > shipped ? newest - shipped : 0))"
    FORWARD_FIELDS+=" forward_catchup_s=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')"
    kill -TERM "$FORWARD_PID" 2>/dev/null || true
    wait "$FORWARD_PID" 2>/dev/null || true
    [ "$newest" -ge 0 ] && [ "$shipped" -ge "$newest" ] && return 0
    RECV_ERROR=${RECV_ERROR:-"seccheckd forward had shipped batch $shipped of $newest 30 s after the daemon stopped"}
    return 1
}

# recv_wait_drained CONNECTIONS: after the senders closed, waits until the
# receiver has read everything: every connection reported closed (receivers
# that log it) and the receiver's CPU time no longer moves.
recv_wait_drained() {
    local conns=$1 closed prev cur deadline=$((SECONDS + 30))
    if [ "$RECV_KIND" != ref ]; then
        while [ $SECONDS -lt $deadline ]; do
            closed=$(grep -cE 'connection [0-9]+ closed' "$RECV_LOG" || true)
            [ "$closed" -ge "$conns" ] && break
            kill -0 "$RECV_PID" 2>/dev/null || break
            sleep 0.02
        done
    fi
    prev=$(cpu_ticks "$RECV_PID")
    deadline=$((SECONDS + 10))
    while [ $SECONDS -lt $deadline ]; do
        sleep 0.1
        cur=$(cpu_ticks "$RECV_PID")
        [ "$cur" = "$prev" ] && break
        prev=$cur
    done
}

# recv_stop: SIGTERM, wait for the summary (KILL after 20 s). Returns non-zero,
# with RECV_ERROR saying why, when the receiver exited with an error or its
# forwarder (sqlite+forward) had not shipped everything.
recv_stop() {
    local pid=$RECV_PID rc=0 i
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + 20))
    while [ $SECONDS -lt $deadline ]; do kill -0 "$pid" 2>/dev/null || break; sleep 0.02; done
    if kill -0 "$pid" 2>/dev/null; then
        echo "${0##*/}: receiver $RECV_KIND ignored SIGTERM for 20 s, killing it" >&2
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || rc=$?
    RECV_ERROR= FORWARD_FIELDS= DELIVER_FIELDS=
    [ "$rc" = 0 ] || RECV_ERROR="receiver exit $rc"
    if [ -n "$FORWARD_PID" ]; then   # after the daemon, which may still commit at exit
        forward_finish || [ "$rc" != 0 ] || rc=1
    fi
    [ -n "$DELIVER_PID" ] && deliver_finish
    local -a keep=()
    for i in "${BENCH_PIDS[@]}"; do
        [ "$i" = "$pid" ] || [ "$i" = "$FORWARD_PID" ] || [ "$i" = "$DELIVER_PID" ] || keep+=("$i")
    done
    FORWARD_PID= DELIVER_PID=
    BENCH_PIDS=("${keep[@]}")
    RECV_PID=
    if [ -n "$RECV_DB" ]; then
        db_size "$RECV_DB"
        rm -f "$RECV_DB" "$RECV_DB-wal" "$RECV_DB-shm"
    fi
    return "$rc"
}

# db_size DB: the database's bytes on disk after a TRUNCATE checkpoint (the
# WAL folded in and emptied) and its events rows, into RECV_DB_BYTES and
# RECV_DB_ROWS (empty when it cannot be read).
db_size() {
    local r
    r=$(python3 - "$1" <<'PY' 2>/dev/null
import os, sqlite3, sys
c = sqlite3.connect(sys.argv[1], timeout=30)
c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
rows = c.execute("SELECT count(*) FROM events").fetchone()[0]
indexes = [n for (n,) in c.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events'"
                                    " AND sql IS NOT NULL ORDER BY name")]
c.close()
print(os.path.getsize(sys.argv[1]), rows, ",".join(indexes) or "none")
PY
    ) || r=
    read -r RECV_DB_BYTES RECV_DB_ROWS RECV_DB_INDEXES <<<"$r" || true
}

# The key=value words for summarize.py record of the last sqlite receiver.
db_size_fields() {
    [ -n "$RECV_DB_BYTES" ] && echo "db_bytes=$RECV_DB_BYTES db_rows=$RECV_DB_ROWS db_indexes=$RECV_DB_INDEXES"
    [ -n "$FORWARD_FIELDS" ] && echo "$FORWARD_FIELDS"
    [ -n "$DELIVER_FIELDS" ] && echo "$DELIVER_FIELDS"
    return 0
}

# rotate N ITEMS...: prints the items rotated left by N (one per line), so each
# repetition starts the round-robin at another configuration.
rotate() {
    local n=$1
    shift
    local -a a=("$@")
    local k=${#a[@]} i
    for ((i = 0; i < k; i++)); do echo "${a[$(((i + n) % k))]}"; done
}

machine_info() {   # one line per fact, "key: value"
    echo "host: $(uname -n)"
    echo "date: $(date -Iseconds)"
    echo "nproc: $(nproc)"
    echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
    echo "kernel: $(uname -sr)"
    echo "load average at start (1/5/15 min): $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "net.core.wmem_default: $(cat /proc/sys/net/core/wmem_default 2>/dev/null || echo '?')"
    echo "source: $REPO_DIR (git $(git -C "$REPO_DIR" describe --always --dirty 2>/dev/null || echo '?'))"
    echo "binaries: $BIN_DIR ($("$BIN_DIR/seccheckd" --version 2>/dev/null | head -1 || echo 'seccheckd ?'))"
    local name
    for name in "${!ALT_BIN[@]}"; do
        echo "binaries of receivers KIND@$name: ${ALT_BIN[$name]} ($("${ALT_BIN[$name]}/seccheckd" --version 2>/dev/null | head -1 || echo 'seccheckd ?'))"
    done
}
