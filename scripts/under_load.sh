#!/usr/bin/env bash
# under_load.sh N COMMAND [ARGS...] - runs COMMAND with N busy loops beside
# it (a `stress --cpu N` without the package), niced as a neighbour's work
# would not be, and stops them whatever COMMAND's end. Prints the load
# average before and after; exits with COMMAND's status.
#   scripts/under_load.sh 4 scripts/test.sh     # issue 31: the suite at load 4
set -uo pipefail
n=${1:?usage: under_load.sh N COMMAND [ARGS...]}
shift
[ $# -gt 0 ] || { echo "usage: under_load.sh N COMMAND [ARGS...]" >&2; exit 2; }
[[ $n =~ ^[0-9]+$ ]] || { echo "under_load.sh: N must be a number of busy loops, not '$n'" >&2; exit 2; }
pids=()
stop_loops() { [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null; pids=(); }
trap stop_loops EXIT
trap 'exit 130' INT TERM
for ((i = 0; i < n; i++)); do
    bash -c 'while :; do :; done' &
    pids+=($!)
done
echo "under_load.sh: $n busy loops; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
started=$SECONDS
"$@"
rc=$?
echo "under_load.sh: '$*' exited $rc after $((SECONDS - started)) s; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
exit $rc
