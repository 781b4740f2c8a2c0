#!/usr/bin/env bash
# fuzz.sh - a bounded libFuzzer session over the decoder (tests/fuzz).
#
# usage: scripts/fuzz.sh [--update-corpus] [SECONDS]   (default 60; CI runs scripts/fuzz.sh 60)
#
# 1. Builds tests/fuzz's seccheck_fuzz with clang, libFuzzer, ASan and UBSan
#    in its own build directory (build-fuzz/).
# 2. Seeds: splits every tests/fixtures/traces/*.trace into one file per packet
#    (tests/fuzz/fuzz_seeds.c), plus the head of each trace as a trace file.
# 3. Fuzzes for SECONDS, starting from a work corpus kept in build-fuzz/ (it
#    grows from run to run), the committed corpus and the seeds.
# 4. Merges (-merge=1) whatever adds coverage beyond tests/fuzz/corpus, the
#    regression set every normal build replays (ctest fuzz.regression), into a
#    copy of it in build-fuzz/ and says how many inputs that is; with
#    --update-corpus into tests/fuzz/corpus itself, to be committed. A run
#    without it (scripts/test.sh's) leaves the clone as it was.
# 5. The same for the rules loader (seccheck_fuzz_rules, tests/fuzz/corpus_rules,
#    ctest fuzz.rules_regression) and for the fleet stream's messages
#    (seccheck_fuzz_jetstream, tests/fuzz/corpus_jetstream, seeds from
#    tests/fuzz/jetstream_seeds.c; ctest fuzz.jetstream_regression), each for
#    as long again.
# Exits non-zero on any crash, leak, timeout or out-of-memory (the input is
# left in build-fuzz/fuzz/artifacts/, and how to minimize it is printed), and
# prints the number of executions and the coverage reached.
#
# Environment: FUZZ_BUILD_DIR (build-fuzz), FUZZ_TRACES (tests/fixtures/traces),
# FUZZ_MAX_LEN (300000), FUZZ_TIMEOUT (per input, seconds: 10), CC (clang), CXX (clang++:
# filter/regex_re2.cc takes the same -fsanitize=fuzzer-no-link, which g++ lacks).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { echo "usage: $0 [--update-corpus] [SECONDS]" >&2; exit 2; }
update=0
if [ "${1:-}" = --update-corpus ]; then
    update=1
    shift
fi
[ $# -le 1 ] || usage
secs=${1:-60}
[[ "$secs" =~ ^[1-9][0-9]*$ ]] || usage

build=${FUZZ_BUILD_DIR:-build-fuzz}
traces=${FUZZ_TRACES:-tests/fixtures/traces}
max_len=${FUZZ_MAX_LEN:-300000}
timeout=${FUZZ_TIMEOUT:-10}
cc=${CC:-clang}
cxx=${CXX:-clang++}
corpus=tests/fuzz/corpus
state=$build/fuzz
work=$state/work
seeds=$state/seeds
artifacts=$state/artifacts
log=$state/fuzz.log

die() { echo "fuzz.sh: $*" >&2; exit 1; }
for compiler in "$cc" "$cxx"; do
    command -v "$compiler" >/dev/null || die "$compiler not found: apt-get install -y clang libclang-rt-14-dev"
done
grep -q '^add_subdirectory(fuzz)' tests/CMakeLists.txt ||
    die "tests/CMakeLists.txt does not add_subdirectory(fuzz)"

# ---- build ----
echo "== building seccheck_fuzz ($cc, libFuzzer + ASan + UBSan) in $build/"
cmake -S . -B "$build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSECCHECKD_SANITIZE=ON -DSECCHECKD_FUZZ=ON -DSECCHECKD_WERROR=ON >/dev/null ||
    die "configure failed (a $build/ from another compiler? remove it)"
targets=(seccheck_fuzz seccheck_fuzz_rules seccheck_fuzz_jetstream fuzz_seeds jetstream_seeds)
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >/dev/null ||
    die "build failed: cmake --build $build --target ${targets[*]}"
fuzzer=$build/bin/seccheck_fuzz
[ -x "$fuzzer" ] || die "no libFuzzer binary at $fuzzer (libclang-rt-14-dev missing?)"

# ---- seeds ----
mkdir -p "$work" "$artifacts" "$corpus"
rm -rf "$seeds"
mkdir -p "$seeds"
shopt -s nullglob
trace_files=("$traces"/*.trace)
if [ ${#trace_files[@]} -gt 0 ]; then
    "$build/bin/fuzz_seeds" "$seeds" "${trace_files[@]}"
else
    echo "fuzz.sh: warning: no traces in $traces, starting from the committed corpus only" >&2
fi

count_files() { find "$1" -maxdepth 1 -type f | wc -l; }
count_bytes() { find "$1" -maxdepth 1 -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}'; }
corpus_before=$(count_files "$corpus")

# merge_target CORPUS NAME: where inputs that add coverage beyond CORPUS go,
# printed: CORPUS itself with --update-corpus, else a copy of it in $state.
merge_target() {
    if [ $update = 1 ]; then
        echo "$1"
        return
    fi
    rm -rf "${state:?}/$2"
    cp -r "$1" "$state/$2"
    echo "$state/$2"
}
# report_new CORPUS TARGET BEFORE: how many inputs the merge added to TARGET
# (BEFORE files in CORPUS before it: with --update-corpus TARGET is CORPUS).
report_new() {
    local added=$(( $(count_files "$2") - $3 ))
    if [ $update = 1 ]; then
        echo "fuzz.sh: $added new inputs in $1: commit them"
    elif [ $added -gt 0 ]; then
        echo "fuzz.sh: $added inputs add coverage beyond $1 (kept in $2); scripts/fuzz.sh --update-corpus puts them there, to commit"
    fi
}

# ---- fuzz ----
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
echo "== fuzzing for ${secs}s (max_len $max_len, timeout ${timeout}s per input)"
started=$(date +%s)
touch "$state/.started"
set +e
"$fuzzer" -max_total_time="$secs" -max_len="$max_len" -timeout="$timeout" -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$work" "$corpus" "$seeds" >"$log" 2>&1
fuzz_rc=$?
set -e
grep -E '^#[0-9]+[[:space:]]+(INITED|DONE|NEW|REDUCE|pulse)' "$log" | tail -n 3 || true

# ---- merge what adds coverage beyond the committed corpus ----
merged=$(merge_target "$corpus" merged)
echo "== merging into $merged"
set +e
"$fuzzer" -merge=1 -max_len="$max_len" -timeout="$timeout" "$merged" "$work" "$seeds" >"$state/merge.log" 2>&1
merge_rc=$?
set -e
[ $merge_rc -eq 0 ] || echo "fuzz.sh: merge failed (rc $merge_rc), see $state/merge.log" >&2

# ---- report ----
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
last=$(grep -E '^#[0-9]+[[:space:]].*cov: [0-9]+ ft: [0-9]+' "$log" | tail -n 1 || true)
cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")
ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$last")
corpus_after=$(count_files "$merged")
bytes=$(count_bytes "$merged")
echo "fuzz.sh: ${execs:-?} executions in $(( $(date +%s) - started ))s, cov: ${cov:-?} ft: ${ft:-?}"
echo "fuzz.sh: corpus $corpus: $corpus_before files; with what adds coverage $corpus_after, $bytes bytes"
report_new "$corpus" "$merged" "$corpus_before"
[ "$bytes" -le 1000000 ] || echo "fuzz.sh: warning: corpus above 1 MB, re-minimize it (see tests/fuzz/README.md)" >&2

# ---- the other targets: each its own corpus, for as long again ----
# fuzz_target LABEL NAME CORPUS MAX_LEN [SEEDS]: fuzzes $build/bin/NAME from
# CORPUS (and SEEDS), merges what adds coverage as above; a crash sets
# fuzz_rc and names the input, a failed merge merge_rc.
fuzz_target() {
    local label=$1 name=$2 target_corpus=$3 target_max_len=$4 target_seeds=()
    [ -z "${5:-}" ] || target_seeds=("$5")
    local target_fuzzer=$build/bin/$name target_work=$state/$name-work target_log=$state/$name.log
    local target_before target_merged target_execs rc merge
    mkdir -p "$target_work" "$target_corpus"
    echo "== fuzzing the $label for ${secs}s"
    set +e
    "$target_fuzzer" -max_total_time="$secs" -max_len="$target_max_len" -timeout="$timeout" -print_final_stats=1 \
        -artifact_prefix="$artifacts/$name-" "$target_work" "$target_corpus" "${target_seeds[@]}" >"$target_log" 2>&1
    rc=$?
    target_before=$(count_files "$target_corpus")
    target_merged=$(merge_target "$target_corpus" "$name-merged")
    "$target_fuzzer" -merge=1 -max_len="$target_max_len" -timeout="$timeout" -artifact_prefix="$artifacts/$name-" \
        "$target_merged" "$target_work" "${target_seeds[@]}" >"$state/$name-merge.log" 2>&1
    merge=$?
    set -e
    target_execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$target_log" | tail -n 1)
    echo "fuzz.sh: $label: ${target_execs:-?} executions, corpus $target_corpus: $target_before files"
    report_new "$target_corpus" "$target_merged" "$target_before"
    if [ $rc -ne 0 ]; then
        echo "fuzz.sh: FAILED ($label, libFuzzer exit $rc); log: $target_log" >&2
        grep -E '^(==[0-9]+==ERROR|SUMMARY|fuzz invariant|.*runtime error)' "$target_log" | head -n 5 >&2 || true
        for a in $(find "$artifacts" -maxdepth 1 -type f -name "$name-*" -newer "$state/.started"); do
            echo "fuzz.sh: input: $a (reproduce: $target_fuzzer $a; keep it in $target_corpus/)" >&2
        done
        fuzz_rc=$rc
    fi
    [ $merge -eq 0 ] || { echo "fuzz.sh: $label merge failed (rc $merge)" >&2; merge_rc=$merge; }
}

# The rules loader (rules/).
fuzz_target "rules loader" seccheck_fuzz_rules tests/fuzz/corpus_rules 65536
# The fleet stream's messages (jetstream/): seeds the publisher's encoder
# makes from the first trace's packets.
js_seeds=$state/jetstream-seeds
rm -rf "$js_seeds"
mkdir -p "$js_seeds"
if [ ${#trace_files[@]} -gt 0 ]; then
    "$build/bin/jetstream_seeds" "$js_seeds" "${trace_files[0]}"
fi
fuzz_target "fleet stream's messages" seccheck_fuzz_jetstream tests/fuzz/corpus_jetstream 65536 "$js_seeds"

if [ $fuzz_rc -ne 0 ]; then
    echo "fuzz.sh: FAILED (libFuzzer exit $fuzz_rc): crash, leak, timeout or OOM; log: $log" >&2
    grep -E '^(==[0-9]+==ERROR|SUMMARY|fuzz invariant|.*runtime error)' "$log" | head -n 5 >&2 || true
    for a in $(find "$artifacts" -maxdepth 1 -type f -newer "$state/.started"); do
        echo "fuzz.sh: input: $a" >&2
        echo "  reproduce: $fuzzer $a" >&2
        echo "  minimize:  $fuzzer -minimize_crash=1 -max_total_time=60 -exact_artifact_path=$a.min $a" >&2
        echo "  then keep the minimized input: cp $a.min $corpus/crash-\$(sha1sum <$a.min | cut -c1-40)" >&2
    done
    exit 1
fi
[ $merge_rc -eq 0 ] || exit 1
exit 0
