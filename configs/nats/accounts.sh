#!/usr/bin/env bash
# configs/nats/accounts.sh - the fleet's NATS account for every nats-server
# node's config (`include "accounts.conf"`): who may publish what.
#
#   - one user per host, named by its host id as a subject token, that may
#     publish its own subjects only (seccheck.<k>.<host>.batch and
#     seccheck.alerts.<host>), read its own last message and the central
#     copy's position of it (direct gets), and the stream's info; replies
#     come to its own inbox prefix (_INBOX_<host>), which seccheckd forward
#     uses. A compromised host can write neither another host's batches nor
#     read another's.
#   - central, for seccheckd central: its durable consumers, their messages
#     and acks, and the hosts' positions (seccheck.applied.*); it publishes
#     no batch.
#   - admin, for seccheckd nats-setup (and nothing else).
#   - sys, the system account's user (a config whose only account is the
#     system account is GHSA-fr2g-9hjm-wr23's shape).
#
# Passwords: DIR/<user>.auth (USER:PASSWORD, mode 600: what --nats-auth
# reads) is kept when it exists, else made with a random password. The
# servers' config holds them in clear (mode 600); nats-server also takes
# bcrypt hashes there.
#
# Usage: accounts.sh [--stream NAME] [--durable PREFIX] DIR HOST_ID...
set -euo pipefail
stream=SECCHECK durable=seccheck-central
while [ $# -gt 0 ]; do
    case $1 in
        --stream) stream=${2:?}; shift 2 ;;
        --durable) durable=${2:?}; shift 2 ;;
        --help | -h) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) break ;;
    esac
done
dir=${1:?usage: accounts.sh [--stream NAME] [--durable PREFIX] DIR HOST_ID...}
shift

# A host id as seccheckd writes it in subjects: bytes outside
# [A-Za-z0-9_-] as %XX (jetstream.h, js_subject_token).
token() {
    local LC_ALL=C s=$1 out="" c i
    for ((i = 0; i < ${#s}; i++)); do
        c=${s:i:1}
        case $c in
            [A-Za-z0-9_-]) out+=$c ;;
            *) out+=$(printf '%%%02X' "'$c") ;;
        esac
    done
    echo "$out"
}

# The password of user: its .auth file's, or a new one written there.
password() {
    local f="$dir/$1.auth"
    if [ ! -s "$f" ]; then
        (umask 077; echo "$1:$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')" >"$f")
    fi
    cut -d: -f2- "$f" | head -1
}

mkdir -p "$dir"
{
    echo "# made by configs/nats/accounts.sh for stream $stream: users, passwords and permissions"
    echo "accounts {"
    echo "  FLEET {"
    echo "    jetstream: enabled"
    echo "    users: ["
    echo "      { user: \"admin\", password: \"$(password admin)\" }"
    echo "      { user: \"central\", password: \"$(password central)\", permissions: {"
    echo "          publish: { allow: [\"\$JS.API.STREAM.INFO.$stream\", \"\$JS.API.CONSUMER.CREATE.$stream.>\","
    echo "                             \"\$JS.API.CONSUMER.DURABLE.CREATE.$stream.>\", \"\$JS.API.CONSUMER.INFO.$stream.>\","
    echo "                             \"\$JS.API.CONSUMER.MSG.NEXT.$stream.>\", \"\$JS.ACK.$stream.>\", \"seccheck.applied.*\"] }"
    echo "          subscribe: { allow: [\"_INBOX_$durable.>\"] } } }"
    for host in "$@"; do
        t=$(token "$host")
        echo "      { user: \"$t\", password: \"$(password "$t")\", permissions: {"
        echo "          publish: { allow: [\"seccheck.*.$t.batch\", \"seccheck.alerts.$t\","
        echo "                             \"\$JS.API.DIRECT.GET.$stream.seccheck.*.$t.batch\","
        echo "                             \"\$JS.API.DIRECT.GET.${stream}_APPLIED.seccheck.applied.$t\","
        echo "                             \"\$JS.API.STREAM.INFO.$stream\"] }"
        echo "          subscribe: { allow: [\"_INBOX_$t.>\"] } } }"
    done
    echo "    ]"
    echo "  }"
    echo "  SYS { users: [ { user: \"sys\", password: \"$(password sys)\" } ] }"
    echo "}"
    echo "system_account: SYS"
} >"$dir/accounts.conf.new"
chmod 600 "$dir/accounts.conf.new"
mv "$dir/accounts.conf.new" "$dir/accounts.conf"
echo "accounts.sh: $dir/accounts.conf: admin, central and $# host user(s); passwords in $dir/<user>.auth"
