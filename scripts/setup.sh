#!/usr/bin/env bash
# Installs the Debian packages seccheckd needs, then builds its programs
# into build/ (not the tests: scripts/test.sh builds and runs those).
# Usage: scripts/setup.sh [--deps-only]
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
    build-essential cmake pkg-config       # toolchain
    libuv1-dev                             # event loop
    libprotobuf-c-dev protobuf-c-compiler  # schema -> C at build time
    libsqlite3-dev sqlite3                 # storage, and the CLI to query it
    libssl-dev                             # hashing (tamper-evidence chain)
    libpq-dev                              # seccheckd forward: the central PostgreSQL client
    libnats-dev libzstd-dev                # the fleet's NATS JetStream stream (forward --to nats://, central)
    nats-server                            # a real 3-node JetStream cluster for the fleet.nats tests and bench
    libyaml-dev                            # rules files (Falco's YAML format)
    libre2-dev                             # the rules' regex operator (RE2, as libsinsp)
    libcurl4-openssl-dev                   # alerts to falcosidekick / webhooks (--alerts-url)
    libjansson-dev                         # runsc's state files (container names, pods: --runsc-root)
    postgresql                             # a real server (15) for the forward tests and bench
    libcmocka-dev                          # unit tests
    runsc                                  # real gVisor for the end-to-end test
    netcat-openbsd redis-server            # what the default rules' e2e runs in sandboxes (nc; ordinary work)
    python3                                # baseline listener in bench/
    python3-protobuf protobuf-compiler     # the tests' own gVisor packets (tests/support/gvisor_packets.py)
    python3-yaml                           # e2e.falco_rules reads the upstream rules files' templates
    systemd                                # systemd-analyze, to verify the unit files
    clang libclang-rt-14-dev               # libFuzzer for scripts/fuzz.sh
    docker.io mmdebstrap                   # tests/docker: a dockerd of the tests' own, images from Debian's packages (scripts/image.sh)
)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    echo "setup: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

[ "${1:-}" = "--deps-only" ] && exit 0
# The programs only (the daemon and its two tools): the tests, 60 programs
# more, are built by scripts/test.sh, which configures the same tree with
# -DSECCHECKD_TESTS=ON.
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSECCHECKD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target seccheckd seccheck-loadgen seccheck-dummy
echo "setup: built build/bin/seccheckd, seccheck-loadgen and seccheck-dummy (tests: scripts/test.sh)"
