#!/usr/bin/env bash
# The README's blocks run as written, in order, in one directory, the way a
# new user would: every ```sh block (readme_blocks.py says how a daemon in
# the foreground, `&` and --follow are run), every ```sql block in `sqlite3
# -box seccheck.db`. They run as root in private namespaces (mount, network,
# pid), so that /tmp/seccheck.sock, /etc/seccheckd, /var/lib/seccheckd,
# /run, the port 9464 and Debian's PostgreSQL cluster 15/main are the test's
# own: /etc, /var/lib and /var/log are overlays whose writes vanish with
# the test, /tmp and /run fresh tmpfs, and every process ends with the pid
# namespace. Not run here: the quick start's build (the test runs the built
# programs) and the lines that need systemd (said, one by one).
#
# Then what the blocks were meant to show is checked: a sandbox's events
# stored and printed, the containers view in -box with times in Z, the
# default rules' alerts in the daemon's terminal (Falco's text line) and in
# `seccheckd alerts`, the tuning file checked with the defaults first, the
# fleet: PostgreSQL started without systemd, the host's batches through a
# 3-node nats-server cluster into it, the direct forwarder caught up, the
# nc query finding Debian's nc.openbsd, verify --to passing.
# Usage: readme_e2e.sh SOURCE_DIR BIN_DIR
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [ "${1:-}" != --inside ]; then
    src=${1:?usage: readme_e2e.sh SOURCE_DIR BIN_DIR}
    bin=${2:?usage: readme_e2e.sh SOURCE_DIR BIN_DIR}
    [ "$(id -u)" = 0 ] || { echo "FAIL: needs root (private namespaces, runsc, PostgreSQL's cluster)"; exit 1; }
    command -v runsc >/dev/null || { echo "FAIL: runsc not installed (apt-get install -y runsc)"; exit 1; }
    [ -d /etc/postgresql/15/main ] || { echo "FAIL: no PostgreSQL 15 cluster main (apt-get install -y postgresql)"; exit 1; }
    # Not under /tmp: a tmpfs covers it inside.
    work=$(mktemp -d /var/tmp/seccheckd-readme-XXXXXX)
    trap 'rm -rf "$work"' EXIT
    mkdir -p "$work/blocks"
    python3 "$here/readme_blocks.py" "$src/README.md" "$work/blocks" || { echo "FAIL: cannot read the README's blocks"; exit 1; }
    timeout 280 unshare --mount --net --pid --fork --mount-proc bash "$0" --inside "$src" "$bin" "$work"
    exit $?
fi

# ---- inside the namespaces ----
src=$2 bin=$3 work=$4
set -e
mount --make-rprivate /
for d in etc var/lib var/log; do
    n=${d//\//_}
    mkdir -p "$work/$n.upper" "$work/$n.work"
    mount -t overlay overlay -o "lowerdir=/$d,upperdir=$work/$n.upper,workdir=$work/$n.work" "/$d"
done
# The tree and the programs may be under /tmp (a clone there): seen
# through $work from here on.
mkdir -p "$work/src" "$work/bin"
mount --bind "$src" "$work/src"
mount --bind "$bin" "$work/bin"
src=$work/src bin=$work/bin here=$work/src/tests/e2e
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
ip link set lo up
set +e

home=/tmp/readme
mkdir -p "$home" "$work/logs"
cd "$home"
ln -s "$src/configs" configs
ln -s "$src/systemd" systemd
export PATH="$bin:$PATH" README_PRELUDE="$here/readme_prelude.sh" README_LOGS="$work/logs"

failures=0
ok() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; failures=$((failures + 1)); }
check() {   # check DESC CMD...
    local what=$1
    shift
    if "$@"; then ok "$what"; else fail "$what"; fi
}
has() { grep -q -- "$2" "$1"; }
has_e() { grep -Eq -- "$2" "$1"; }

# The test's own step before a block (what a reader has by then).
before_block() {
    case $1 in
        "pg_ctlcluster 15 main start"*)
            # The fleet forwards the service's database: the one the blocks
            # above filled (sandboxes that ran nc, read /etc/shadow...).
            cp seccheck.db /var/lib/seccheckd/seccheck.db ;;
        "PGPASSFILE=/etc/seccheckd/pgpass seccheckd forward"*)
            # The README's two ways are alternatives: the direct one starts
            # from a central copy the NATS block did not fill.
            runuser -u postgres -- psql -q fleet -c "DROP SCHEMA public CASCADE; CREATE SCHEMA public AUTHORIZATION seccheck" ;;
    esac
}

# What a block was meant to show, by its first line; $1 its output.
after_block() {
    local out=$1 first=$2 bg
    bg=$(cat "$README_LOGS/last-background" 2>/dev/null || echo /dev/null)
    case $first in
        "seccheckd &"*)
            check "the sandbox's events are stored" \
                [ "$(sqlite3 seccheck.db 'SELECT count(*) FROM events WHERE container_id LIKE "runsc-%"')" -gt 0 ]
            check "... from a connection that closed at its end" has "$bg" "connection 1 closed (eof)" ;;
        "seccheckd events --db seccheck.db --follow"*)
            check "seccheckd events prints the sandbox's execs" has_e "$out" " exec /usr/bin/(cat|sh) " ;;
        "sqlite3 -box"*)
            check "the containers view as a box, its times in UTC with Z" \
                has_e "$out" "│ runsc-[0-9]+ +│ [0-9-]{10}T[0-9:.]{12}Z │" ;;
        "seccheckd --rules configs/rules/gvisor_rules.yaml &"*)
            grep -a ': [A-Z][a-z]* ' "$bg" | sed 's/^/    the daemon printed: /'
            check "the daemon's terminal shows Falco's text line for /etc/shadow" \
                has_e "$bg" "^[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{9}: Warning Sensitive file read \(file=/etc/shadow "
            check "... for the program run from /tmp" has "$bg" ": Warning Program run from a temporary directory ("
            check "... for nc" has "$bg" ": Warning Network tool run ("
            check "seccheckd alerts lists them" bash -c "grep -q 'Sensitive file read' '$out' &&
                grep -q 'Program run from a temporary' '$out' && grep -q 'Network tool run' '$out'"
            # issue 31 item 9: the samples came from other rules and outputs
            check "the README's alert lines are the daemon's (but for the time and the container id)" \
                diff <(readme_sample "The daemon prints each alert as Falco does" | normalized) \
                <(grep -aE '^[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{9}: ' "$bg" | normalized)
            local shown
            shown=$(readme_sample "Why did that alert fire" | sed -n 's/^Alert [0-9]*  \(.*\)  [A-Z][a-z]*$/\1/p')
            check "... and its alerts show sample is of a default rule's alert ($shown)" \
                grep -qx -- "- rule: $shown" configs/rules/gvisor_rules.yaml ;;
        "install -d /run/seccheckd"*)
            # issue 31 item 4: the shipped config detected nothing (no rules line)
            check "the shipped config loads the default rules" has "$README_LOGS/$n-fg-1.log" "rules enabled of"
            check "... and its log does not say detection off" bash -c "! grep -q 'detection off' '$README_LOGS/$n-fg-1.log'"
            check "a daemon started without rules says detection off" has "$README_LOGS/$n-fg-2.log" "detection off" ;;
        "seccheckd rules check configs/rules/gvisor_rules.yaml my_rules.yaml"*)
            check "the tuning file checks with the defaults first" has "$out" "Outbound connection"
            # issue 31 item 9: the reload example said 19 of 19
            local counts
            counts=$(sed -n 's/.* \([0-9]*\) rules (\([0-9]*\) enabled) in 2 files$/\2 of \1 rules enabled/p' "$out")
            check "the README's reload example counts what rules check counts ($counts)" \
                bash -c "[ -n '$counts' ] && tr '\n' ' ' <'$src/README.md' | grep -q '); $counts'" ;;
        "seccheckd --metrics-listen 127.0.0.1:9464"*)
            check "the metrics answer" has "$out" "seccheckd_messages_received_total" ;;
        "pg_ctlcluster 15 main start"*)
            check "PostgreSQL started without systemd, the role and database made" \
                bash -c "echo 'SELECT 1' | runuser -u postgres -- psql -q -At fleet | grep -qx 1" ;;
        "install -d -m 700 /etc/seccheckd/nats"*)
            check "the host's batches reached PostgreSQL through the 3-node JetStream cluster" \
                bash -c "[ \"\$(echo 'SELECT last_batch_id FROM hosts' | runuser -u postgres -- psql -q -At fleet)\" = \
                          \"\$(sqlite3 /var/lib/seccheckd/seccheck.db 'SELECT max(id) FROM batches')\" ]"
            check "... the forwarder said so" has "$(cat "$README_LOGS/last-foreground")" "the central copy has every batch" ;;
        "PGPASSFILE=/etc/seccheckd/pgpass seccheckd forward"*)
            check "the forwarder caught up" has_e "$(cat "$README_LOGS/last-foreground")" \
                "caught up at batch [0-9]+: shipped [0-9]+ batches" ;;
        "export PGPASSFILE=/etc/seccheckd/pgpass"*)
            check "the fleet query finds the container that ran Debian's nc" has "$out" "nc.openbsd"
            check "seccheckd alerts --to lists the host's alerts" has "$out" "Network tool run"
            check "verify --to passes" has_e "$out" "ok: .*batch" ;;
    esac
}

# The first ``` block after the README's paragraph that starts with $1.
readme_sample() {
    awk -v start="$1" 'index($0, start) == 1 || index($0, "**" start) == 1 {on = 1}
        on && /^```/ {if (inside) exit; inside = 1; next} inside' "$src/README.md"
}
# Alert lines without what differs from run to run: the time, the container id.
normalized() { sed -E 's/^[0-9]{2}:[0-9]{2}:[0-9.]{12}: //; s/runsc-[0-9]+/runsc-N/g'; }

# my_rules.yaml is the file the tuning block shows (```yaml), saved as its
# first line says.
awk '/^```yaml/{on=1; next} /^```/{if(on) exit} on' "$src/README.md" >my_rules.yaml

ran_blocks=0
while read -r n kind first; do
    file="$work/blocks/$n.$kind"
    case $first in
        "scripts/setup.sh"*) echo "--- block $n: $first"; echo "    - not run here: it builds the tree"; continue ;;
    esac
    if grep -q -- '--docker-runtime' "$file"; then
        echo "--- block $n: $first"
        echo "    - not run here: it needs a dockerd (docker.runtime runs this flow against a dockerd of its own)"
        continue
    fi
    echo "--- block $n ($kind): $first"
    before_block "$first"
    out="$work/logs/block-$n.out"
    rm -f "$README_LOGS/last-background" "$README_LOGS/last-foreground"
    if [ "$kind" = sql ]; then
        sqlite3 -box -bail seccheck.db <"$file" >"$out" 2>&1
    else
        README_BLOCK=$n bash "$file" >"$out" 2>&1
    fi
    rc=$?
    sed 's/^/    /' "$out" | head -40
    ran_blocks=$((ran_blocks + 1))
    if [ $rc != 0 ]; then
        fail "block $n ($first) exited $rc"
        for f in "$README_LOGS/$n"-*.log; do [ -f "$f" ] && { echo "---- $f"; tail -${SECCHECKD_README_LOG_LINES:-20} "$f"; }; done
        continue
    fi
    ok "block $n ran as written"
    after_block "$out" "$first"
done <"$work/blocks/index"

check "the README's blocks were found ($ran_blocks run)" [ "$ran_blocks" -ge 15 ]
[ $failures -eq 0 ] || { echo "readme: $failures failure(s)"; exit 1; }
echo "readme: every block ran as written"
