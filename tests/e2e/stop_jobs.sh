# shellcheck shell=bash
# stop_jobs.sh - sourced by the e2e scripts for their scratch directory and
# their EXIT traps (which bash also runs on SIGTERM/SIGINT and after a
# `set -e` failure).
#
# stop_jobs: ends every background job the script still has: SIGTERM first
# (timeout(1), which wraps each sandbox, passes it on to runsc), SIGKILL to
# what is left after 2 s. A job left behind would outlive the test and keep
# ctest's stdout open, so ctest would wait for it until its timeout.
stop_jobs() {
    local pids p alive
    pids=$(jobs -p)
    [ -n "$pids" ] || return 0
    kill -TERM $pids 2>/dev/null || true
    for _ in $(seq 20); do
        alive=
        for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
        [ -n "$alive" ] || return 0
        sleep 0.1
    done
    kill -KILL $pids 2>/dev/null || true
}

# e2e_scratch NAME: a scratch directory $dir (/tmp/seccheckd-NAME-XXXXXX)
# and an EXIT trap that kills $daemon (the script sets it to the daemon it
# starts, empty once it stopped it), runs the script's cleanup_more if it
# defines one (runsc containers to delete), stops every job, removes $dir.
# Sets own_names, the options of every seccheckd daemon the script starts
# ("$seccheckd" --socket ... "${own_names[@]}"): an empty runsc root of the
# test's own, $dir/runsc-root, and no Docker socket, so the daemon reads none
# of the machine's (its runsc roots, /var/run/docker.sock). `runsc do` needs
# no root: whatever --root says, it keeps its state in a directory it makes,
# $TMPDIR/runsc-doNNN (gVisor's runsc/cmd/do.go sets conf.RootDir to it),
# which the daemon finds through the connection's peer.
# A script that runs containers in a root of its own (runsc --root ROOT run)
# gives its daemon --runsc-root ROOT --docker-socket none instead.
e2e_scratch() {
    dir=$(mktemp -d "/tmp/seccheckd-$1-XXXXXX")
    daemon=
    trap e2e_cleanup EXIT
    mkdir "$dir/runsc-root"
    own_names=(--runsc-root "$dir/runsc-root" --docker-socket none)
}

# lossless_sandbox: the `seccheckd gvisor-config` options of a sandbox whose
# every event a test judges (a hand-written pod-init config says the same as
# "retries": 1000 in its remote sink). gVisor drops a point when the
# collector's socket is full and retries is 0, its default (google/gvisor
# pkg/sentry/seccheck/sinks/remote/remote.go, write); an ASan daemon on a
# loaded machine reads slower than runsc writes a burst: at load 6,
# e2e.falco_rules' sandbox dropped 88 of its 406 events and five of the
# twelve alerts were never raised. With retries the sandbox waits instead
# (25 us doubling to 10 ms: up to about 10 s for one point). A sandbox that
# must drop (default_rules_e2e.sh's flood) leaves it out.
lossless_sandbox=(--retries 1000)

# e2e_no_sandbox_drops DB: ok when no connection in DB (a seccheckd SQLite
# database) reported drops, else says how many, so a test's missing events
# are told as lost ones rather than as wrong rules.
e2e_no_sandbox_drops() {
    local dropped
    dropped=$(sqlite3 "$1" "SELECT coalesce(sum(sandbox_dropped), 0) FROM connections")
    if [ "$dropped" = 0 ]; then
        echo "ok   - the sandboxes dropped no event"
    else
        echo "FAIL - the sandboxes dropped $dropped events (a pod-init config without \"retries\"?)"
        return 1
    fi
}

e2e_cleanup() {
    [ -z "${daemon:-}" ] || kill -9 "$daemon" 2>/dev/null || true
    if declare -F cleanup_more >/dev/null; then cleanup_more; fi
    stop_jobs
    rm -rf "$dir"
}

# e2e_stop_daemon: SIGTERM to $daemon, which must exit 0 (else its log,
# $dir/daemon.log, is shown and the script fails).
e2e_stop_daemon() {
    kill -TERM "$daemon"
    wait "$daemon" || { cat "$dir/daemon.log"; echo "FAIL: seccheckd exited non-zero"; exit 1; }
    daemon=
}

# e2e_verdict NAME: with a failed check (the scripts count them in
# $failures), the daemon's log and exit 1; else NAME: all checks passed.
e2e_verdict() {
    if [ "$failures" -ne 0 ]; then
        echo "$1: $failures check(s) failed; daemon log:"
        cat "$dir/daemon.log"
        exit 1
    fi
    echo "$1: all checks passed"
}
