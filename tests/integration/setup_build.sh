#!/usr/bin/env bash
# scripts/setup.sh builds the programs, not the tests (issue 28 item 5):
# the tree it configures (-DSECCHECKD_TESTS=OFF, as -DBUILD_TESTING=OFF)
# has no test target, the targets it builds are the three programs and
# compile nothing from tests/ (make's dry run); scripts/test.sh turns the
# tests on in every tree it configures, setup.sh's build/ included.
# Usage: setup_build.sh SOURCE_DIR
set -uo pipefail
src=${1:?usage: setup_build.sh SOURCE_DIR}
dir=$(mktemp -d /tmp/seccheckd-setup-XXXXXX)
trap 'rm -rf "$dir"' EXIT
failures=0
check() {
    local what=$1
    shift
    if "$@"; then echo "ok   - $what"; else echo "FAIL - $what"; failures=$((failures + 1)); fi
}

# The configure and build lines of setup.sh, as it runs them.
configure_line=$(grep -E '^cmake -S \. -B build' "$src/scripts/setup.sh")
build_line=$(grep -E '^cmake --build build' "$src/scripts/setup.sh")
check "setup.sh configures build/ without the tests" grep -q -- "-DSECCHECKD_TESTS=OFF" <<<"$configure_line"
read -r -a targets <<<"$(sed -n 's/.*--target \(.*\)$/\1/p' <<<"$build_line")"
check "setup.sh builds named targets (${targets[*]})" [ "${#targets[@]}" -ge 1 ]

targets_of() {   # targets_of TREE: every target the tree's build offers
    cmake --build "$1" --target help 2>/dev/null | sed -n 's/^\.\.\. \([^ ]*\).*/\1/p'
}

for switch in -DSECCHECKD_TESTS=OFF -DBUILD_TESTING=OFF; do
    tree="$dir/tree${switch%%=*}"
    check "configures with $switch" bash -c "cmake -S '$src' -B '$tree' $switch >'$tree.log' 2>&1"
    targets_of "$tree" >"$tree.targets"
    check "$switch: no test target" bash -c "! grep -Eq '^(test_|fuzz_)' '$tree.targets'"
    check "$switch: the daemon and its tools are targets" \
        bash -c "grep -qx seccheckd '$tree.targets' && grep -qx seccheck-loadgen '$tree.targets' &&
            grep -qx seccheck-dummy '$tree.targets'"
done
tree="$dir/tree-DSECCHECKD_TESTS"
for t in "${targets[@]}"; do
    check "setup.sh's target $t exists" grep -qx -- "$t" "$tree.targets"
done
check "setup.sh's targets are the three programs" \
    [ "$(printf '%s\n' "${targets[@]}" | sort | tr '\n' ' ')" = "seccheck-dummy seccheck-loadgen seccheckd " ]
# What building them would compile: nothing from tests/.
(cd "$tree" && make -n "${targets[@]}") >"$dir/dry-run" 2>&1
check "building them compiles the daemon" grep -q "server/main.c" "$dir/dry-run"
check "... and nothing from tests/" bash -c "! grep -q '$src/tests/' '$dir/dry-run'"

# test.sh configures every tree with the tests on (build/ included).
check "test.sh turns the tests on" grep -q -- '-DSECCHECKD_TESTS=ON' "$src/scripts/test.sh"

[ $failures -eq 0 ] || { echo "setup_build: $failures failure(s)"; exit 1; }
echo "setup_build: all checks passed"
