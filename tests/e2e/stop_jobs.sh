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
