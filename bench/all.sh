#!/usr/bin/env bash
# bench/all.sh - every figure of the performance targets from one command:
# IPC drain rates and CPU per million events (ipc.sh), highest zero-drop
# paced rates and the longest loop stall (zero_drop.sh), the SQLite sink
# against a bare INSERT loop (sqlite_ref.sh), memory under a 60 s overload
# (overload_rss.sh), what SIGUSR2 restarts cost the sandboxes (restart.sh),
# and with --macro the real-runsc passes (macro.sh) and gVisor's Redis pass
# through Docker (docker_redis.sh).
# --base-bin DIR adds the sqlite receiver of another build (sqlite@base) to
# the ipc, zero-drop and restart runs, interleaved.
#   bench/all.sh [--bin DIR] [--base-bin DIR] [--out DIR] [--macro]     (also: cmake --build build --target bench)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$here/../build/bin out=$here/results/$(date +%Y%m%d-%H%M%S)-all macro=0 base=
while [ $# -gt 0 ]; do
    case $1 in
        --bin) bin=$2; shift 2 ;;
        --base-bin) base=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --macro) macro=1; shift ;;
        -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench/all.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
done
mkdir -p "$out"
run() {   # run NAME SCRIPT ARGS...: one benchmark into its own directory
    local name=$1 script=$2
    shift 2
    echo "== $name"
    "$here/$script" --bin "$bin" --out "$out/$name" "$@"
}
declare -a with_base=()
[ -z "$base" ] || with_base=(--base-bin "$base")
plus_base() { [ -z "$base" ] && echo "$1" || echo "$1,sqlite@base"; }
run ipc ipc.sh --trace more --receivers "$(plus_base ref,dummy,discard,sqlite,python)" "${with_base[@]}"
run zero-drop zero_drop.sh --receivers "$(plus_base ref,dummy,discard,sqlite,sqlite-all,python)" "${with_base[@]}"
run zero-drop-mixed zero_drop.sh --trace mixed_syscalls --start-rate 12500 \
    --receivers "$(plus_base ref,discard,sqlite)" "${with_base[@]}"
run sqlite-ref sqlite_ref.sh
run overload-rss overload_rss.sh
run restart restart.sh "${with_base[@]}"
if [ $macro = 1 ]; then
    run macro macro.sh
    run docker-redis docker_redis.sh
fi
echo "== summaries in $out/*/summary.md"
cat "$out"/*/summary.md
