#!/usr/bin/env bash
# bench/rules_load.sh - what loading a rules file costs (issue 24 items 8-10):
# `seccheckd rules check` on generated files, its wall time and peak RSS
# (GNU time), for
#   exc10k, exc40k      one rule with 10,000 / 40,000 exceptions (distinct names)
#   exc40k-append       the same 40,000 exceptions, one override append each
#   macro-appends6k     6,000 override appends to one macro's condition
#   rule-appends6k      6,000 override appends to one rule's condition
#   output-appends6k    6,000 override appends to one rule's output
#   nested-lists        21 levels of lists of two lists each, in order (the
#                       audit's file: 2^21 items when each level is expanded;
#                       Falco takes a list's items one level deep, so it loads small)
#   nested-lists-reverse the same lists defined last first, which Falco's
#                       substitution expands level after level: refused, and how fast
#   doubling30k         the audit's 30 KB file (issue 32 item 7): macros m0..m14, each
#                       m(i-1) or m(i-1), and ~300 rules on m14 (98,305 nodes each once
#                       expanded): refused past RULES_MAX_EXPANDED_SET, and how fast
#   doubling-bound      the same macros, two such rules: the largest set that loads
# Runs each case --runs times (interleaved with --alt builds) and prints the
# median per case and build; for a case that loads, also what it costs per
# event (bench-rules-eval over mixed_syscalls.trace, best of 3 rounds, from
# the same build's directory). See bench/README.md.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    cat <<EOF
Usage: bench/rules_load.sh [OPTIONS]
  --out DIR          results directory [bench/results/<timestamp>-rules_load]
  --runs N           repetitions of each case [3]
  --cases LIST       comma separated [exc10k,exc40k,exc40k-append,macro-appends6k,
                     rule-appends6k,output-appends6k,nested-lists,nested-lists-reverse,
                     doubling30k,doubling-bound]
  --traces DIR       the recorded traces, for the cost per event [tests/fixtures/traces]
  --timeout SECS     limit per run [120]
  --bin DIR          built binaries [$BIN_DIR]
  --alt NAME=DIR     also measure DIR's seccheckd (e.g. the build before a change),
                     interleaved; repeatable
  --help             this text
Prints one line per case and build: seconds and peak RSS (MiB), medians, the
exit status of rules check (0 loaded, 2 refused) and, when it loaded, ns per
event of mixed_syscalls.trace; writes results.tsv and summary.txt in DIR.
EOF
}

out='' runs=3 timeout_s=120 traces=$REPO_DIR/tests/fixtures/traces
cases=exc10k,exc40k,exc40k-append,macro-appends6k,rule-appends6k,output-appends6k,nested-lists,nested-lists-reverse
cases=$cases,doubling30k,doubling-bound
while [ $# -gt 0 ]; do
    case $1 in
        --help | -h) usage; exit 0 ;;
        --out) out=${2:?--out DIR}; shift 2 ;;
        --runs) need_uint "$1" "${2:-}"; runs=$2; shift 2 ;;
        --cases) cases=${2:?--cases LIST}; shift 2 ;;
        --timeout) need_uint "$1" "${2:-}"; timeout_s=$2; shift 2 ;;
        --traces) traces=${2:?--traces DIR}; shift 2 ;;
        --bin) BIN_DIR=${2:?--bin DIR}; shift 2 ;;
        --alt) alt_add "${2:?--alt NAME=DIR}"; shift 2 ;;
        *) usage >&2; die "unknown option '$1'" ;;
    esac
done
[ -x /usr/bin/time ] || die "GNU time is needed (apt-get install time)"
need_bins seccheckd
out=${out:-$BENCH_DIR/results/$(date +%Y%m%d-%H%M%S)-rules_load}
bench_init "$out"

RULE_HEAD='- rule: r
  desc: d
  condition: evt.type = execve
  output: "%proc.name"
  priority: Notice'

gen_exceptions() {   # N [append]: one rule, N exceptions of one value each
    local n=$1 mode=${2:-}
    if [ -z "$mode" ]; then
        echo "$RULE_HEAD"
        echo "  exceptions:"
        awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++)
            printf "    - name: e%d\n      fields: proc.name\n      values: [p%d]\n", i, i }'
    else
        echo "$RULE_HEAD"
        awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++)
            printf "- rule: r\n  exceptions:\n    - name: e%d\n      fields: proc.name\n      values: [p%d]\n  override:\n    exceptions: append\n", i, i }'
    fi
}

gen_appends() {   # KIND N
    local kind=$1 n=$2
    case $kind in
        macro)
            printf -- '- macro: m\n  condition: proc.name = p\n'
            awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++)
                printf "- macro: m\n  condition: or proc.name = p%d\n  override: {condition: append}\n", i }'
            printf -- '- rule: r\n  desc: d\n  condition: evt.type = execve and m\n  output: o\n  priority: Notice\n' ;;
        rule)
            printf -- '- rule: r\n  desc: d\n  condition: evt.type = execve and (proc.name = p\n  output: o\n  priority: Notice\n'
            awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++)
                printf "- rule: r\n  condition: or proc.name = p%d\n  override: {condition: append}\n", i }'
            printf -- '- rule: r\n  condition: )\n  override: {condition: append}\n' ;;
        output)
            echo "$RULE_HEAD"
            awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++)
                printf "- rule: r\n  output: \"p%d=%%proc.pid\"\n  override: {output: append}\n", i }' ;;
    esac
}

gen_nested() {   # [reverse]: 21 levels, l0 holds two items, each next list two of the one before
    if [ -z "${1:-}" ]; then
        printf -- '- list: l0\n  items: [a, b]\n'
        for i in $(seq 1 20); do printf -- '- list: l%d\n  items: [l%d, l%d]\n' "$i" $((i - 1)) $((i - 1)); done
    else
        for i in $(seq 20 -1 1); do printf -- '- list: l%d\n  items: [l%d, l%d]\n' "$i" $((i - 1)) $((i - 1)); done
        printf -- '- list: l0\n  items: [a, b]\n'
    fi
    printf -- '- rule: r\n  desc: d\n  condition: evt.type = execve and proc.name in (l20)\n  output: o\n  priority: Notice\n'
}

gen_doubling() {   # BYTES: macros m0..m14 doubling, then rules on m14 up to BYTES of text (0: two rules)
    local bytes=$1
    printf -- '- macro: m0\n  condition: (evt.type = openat and fd.name = /etc/shadow)\n'
    for i in $(seq 1 14); do printf -- '- macro: m%d\n  condition: (m%d or m%d)\n' "$i" $((i - 1)) $((i - 1)); done
    awk -v bytes="$bytes" 'BEGIN { n = 0; i = 0
        do { r = sprintf("- rule: r%d\n  desc: d\n  condition: m14 and not proc.name = p%d\n  output: \"%%proc.name\"\n  priority: Warning\n", i, i)
             printf "%s", r; n += length(r); i++ } while ((bytes > 0 && n < bytes - 800) || (bytes == 0 && i < 2)) }'
}

IFS=, read -r -a case_list <<<"$cases"
for c in "${case_list[@]}"; do
    f=$BENCH_TMP/$c.yaml
    case $c in
        exc10k) gen_exceptions 10000 >"$f" ;;
        exc40k) gen_exceptions 40000 >"$f" ;;
        exc40k-append) gen_exceptions 40000 append >"$f" ;;
        macro-appends6k) gen_appends macro 6000 >"$f" ;;
        rule-appends6k) gen_appends rule 6000 >"$f" ;;
        output-appends6k) gen_appends output 6000 >"$f" ;;
        nested-lists) gen_nested >"$f" ;;
        nested-lists-reverse) gen_nested reverse >"$f" ;;
        doubling30k) gen_doubling 30000 >"$f" ;;
        doubling-bound) gen_doubling 0 >"$f" ;;
        *) die "unknown case '$c'" ;;
    esac
    say "$c: $(wc -c <"$f") bytes"
done

builds=(this)
declare -A build_dir=([this]=$BIN_DIR)
for name in "${!ALT_BIN[@]}"; do builds+=("$name"); build_dir[$name]=${ALT_BIN[$name]}; done

results=$out/results.tsv
printf 'case\tbuild\trun\tseconds\tmax_rss_kib\texit\tns_per_event\n' >"$results"
for run in $(seq 1 "$runs"); do
    for c in "${case_list[@]}"; do
        for b in "${builds[@]}"; do
            tf=$BENCH_TMP/time.txt
            set +e
            /usr/bin/time -o "$tf" -f '%e %M' timeout "$timeout_s" \
                "${build_dir[$b]}/seccheckd" rules check "$BENCH_TMP/$c.yaml" >/dev/null 2>"$BENCH_TMP/err.txt"
            rc=$?
            set -e
            read -r secs rss < <(tail -n 1 "$tf")
            # What it costs per event, when it loaded (the same build's bench-rules-eval).
            ns=-
            if [ "$rc" = 0 ] && [ -x "${build_dir[$b]}/bench-rules-eval" ]; then
                ns=$(timeout "$timeout_s" "${build_dir[$b]}/bench-rules-eval" "$traces" 3 "$BENCH_TMP/$c.yaml" |
                     awk -v f="$c.yaml" '$1 == f && $2 == "mixed_syscalls.trace" { print $4 }')
                ns=${ns:--}
            fi
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$b" "$run" "$secs" "$rss" "$rc" "$ns" >>"$results"
            say "$c $b run $run: ${secs}s, $((rss / 1024)) MiB, exit $rc, $ns ns/event"
        done
    done
done

python3 - "$results" <<'EOF' | tee "$out/summary.txt"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter='\t'))
seen = []
for r in rows:
    k = (r['case'], r['build'])
    if k not in seen:
        seen.append(k)
print('%-20s %-8s %10s %12s %6s %14s' % ('case', 'build', 'seconds', 'peak MiB', 'exit', 'ns/event'))
for c, b in seen:
    rs = [r for r in rows if r['case'] == c and r['build'] == b]
    secs = statistics.median(float(r['seconds']) for r in rs)
    rss = statistics.median(int(r['max_rss_kib']) for r in rs) / 1024
    codes = ','.join(sorted({r['exit'] for r in rs}))
    ns = [float(r['ns_per_event']) for r in rs if r['ns_per_event'] not in ('-', '')]
    print('%-20s %-8s %10.2f %12.1f %6s %14s' % (c, b, secs, rss, codes,
                                                 '%.0f' % statistics.median(ns) if ns else '-'))
EOF
