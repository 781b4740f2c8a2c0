# readme_prelude.sh - what a README block, made a script by readme_blocks.py,
# runs with (sourced first). README_LOGS is where the daemons' output goes,
# README_BLOCK the block's number (in the logs' names). A command started
# in the background is exec'd (through env, for a line that starts with
# VAR=value), so its pid is the daemon's own and stopping it stops it.
set -euo pipefail

_bg_pids=()
_fg_pid=
_n=0

say() { echo "    | $*"; }
ran() { say "$1"; }
skipped() { echo "    - skipped here (needs systemd or installs into the system): $1"; }

# Waits until LOG holds PATTERN (15 s), or the process PID is gone.
_wait_ready() {
    local pid=$1 log=$2 pattern=$3
    for _ in $(seq 1500); do
        grep -q "$pattern" "$log" 2>/dev/null && return 0
        kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; echo "FAIL: '$4' exited before '$pattern'" >&2; return 1; }
        sleep 0.01
    done
    cat "$log" >&2
    echo "FAIL: '$4' did not say '$pattern' within 15 s" >&2
    return 1
}

_stop() {
    kill -TERM "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

# CMD &: in the background, its output in a log, until the block's end.
background() {
    say "$1 &"
    _n=$((_n + 1))
    local log="$README_LOGS/$README_BLOCK-bg-$_n.log"
    eval "exec env $1" >"$log" 2>&1 &
    local pid=$!
    _bg_pids+=("$pid")
    case $1 in seccheckd*) _wait_ready "$pid" "$log" "listening on" "$1" ;; esac
    echo "$log" >"$README_LOGS/last-background"
}

# A daemon in the foreground: until it is ready; stopped (Ctrl-C) when the
# next one starts or the block ends.
foreground() {
    local pattern=$1
    say "$2"
    [ -z "$_fg_pid" ] || _stop "$_fg_pid"
    _n=$((_n + 1))
    local log="$README_LOGS/$README_BLOCK-fg-$_n.log"
    eval "exec env $2" >"$log" 2>&1 &
    _fg_pid=$!
    _wait_ready "$_fg_pid" "$log" "$pattern" "$2"
    echo "$log" >"$README_LOGS/last-foreground"
}

# --follow: a person watches, then presses Ctrl-C.
for_a_while() {
    say "$1   (for 3 s)"
    local rc=0
    eval "timeout -s INT 3 $1" || rc=$?
    [ $rc = 0 ] || [ $rc = 124 ] || [ $rc = 130 ] || { echo "FAIL: '$1' exited $rc" >&2; return 1; }
}

# Connections whose close ./seccheck.db holds (0 without the file).
closed_connections() {
    [ -f seccheck.db ] || { echo 0; return; }
    sqlite3 seccheck.db 'SELECT count(*) FROM connections WHERE close_ns IS NOT NULL' 2>/dev/null || echo 0
}

# After a sandbox: by the time a person types the next command the daemon
# has committed what the sandbox sent (a batch waits up to --flush-ms);
# its connection's close is stored after its events. $1: closed before it.
sandbox_settled() {
    [ -f seccheck.db ] || return 0
    for _ in $(seq 1500); do
        [ "$(closed_connections)" -gt "$1" ] && return 0
        sleep 0.01
    done
    echo "FAIL: the sandbox's connection was not stored as closed within 15 s" >&2
    return 1
}

# True while PID runs (a zombie does not).
_running() { kill -0 "$1" 2>/dev/null && [ "$(ps -o stat= -p "$1" 2>/dev/null)" != Z ]; }

# A daemon a block started with & and did not stop is still running at a
# person's next block: the next daemon would find its socket taken (issue
# 31 item 9). Given 5 s to finish stopping, then it fails the block.
end_of_block() {
    [ -z "$_fg_pid" ] || _stop "$_fg_pid"
    local p left=0
    for p in "${_bg_pids[@]}"; do
        for _ in $(seq 500); do _running "$p" || break; sleep 0.01; done
        if _running "$p"; then left=$((left + 1)); fi
        _stop "$p"
    done
    _fg_pid= _bg_pids=()
    [ $left = 0 ] || { echo "FAIL: the block left $left daemon(s) running in the background" >&2; return 1; }
}
