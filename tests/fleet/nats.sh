# nats.sh - a throwaway 3-node NATS JetStream cluster for the fleet tests
# and the bench (sourced after lib.sh, which gives $dir and spawn).
#
#   nats_user NAME PASSWORD [host|central|admin]
#                  a user for nats_start, with the permissions
#                  configs/nats/accounts.sh gives (central and admin are
#                  named so): a host may publish only its own subjects, read
#                  its own last message and position and the stream's info;
#                  central may only consume and publish positions; admin may
#                  do anything in the account. Writes $dir/nats/NAME.auth
#                  (USER:PASSWORD, mode 600) for --nats-auth.
#   nats_start [TLS_DIR]
#                  starts nodes n1 n2 n3 on free 127.0.0.1 ports, each with
#                  a cluster {} block routing to the other two, JetStream
#                  (file store under $dir/nats/nI), the account FLEET with the
#                  users above and a system account (accounts.sh's
#                  accounts.conf, included); waits until each node's
#                  /healthz?js-enabled-only=true answers and its /jsz names a
#                  meta leader. NATS_MAX_PAYLOAD=N sets the servers' max_payload
#                  (a smaller one makes large batches go in chunks). With TLS_DIR (its
#                  server.pem, server.key), clients need TLS. Sets NATS_URLS
#                  (the three client URLs, comma-separated), NATS_PORT[1..3],
#                  NATS_MON[1..3], and the pids nats_n1.. (spawned: ended by
#                  fleet_cleanup).
#   nats_kill I    kill -9 node I (its pid stays in spawned; harmless)
#   nats_stop      every node killed and its store removed
#   nats_restart I starts node I again on the same ports and store
#   nats_leader STREAM   the server name of the stream's leader ("" if none)
#   nats_node_of NAME    the index (1-3) of the server called NAME
#   nats_jsz I ARGS      GET /jsz?ARGS on node I's monitor port
#
# Host users are named by the host id's subject token (the ids these tests
# use need no escaping: letters, digits and '-').

NATS_SERVER=${NATS_SERVER:-$(command -v nats-server)}

# N free 127.0.0.1 ports, distinct: all held open until each is chosen.
free_ports() {
    python3 -c '
import socket, sys
held = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in held:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in held))' "$1"
}

NATS_ACCOUNTS=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../configs/nats" && pwd)/accounts.sh
nats_hosts=()

nats_user() {   # nats_user NAME PASSWORD ROLE
    local name=$1 pw=$2 role=${3:-host}
    [ "$role" = host ] && nats_hosts+=("$name")
    mkdir -p "$dir/nats"
    (umask 077; echo "$name:$pw" >"$dir/nats/$name.auth")   # accounts.sh keeps it
}

nats_conf() {   # nats_conf I TLS_DIR
    local i=$1 tls=$2 j routes=()
    for j in 1 2 3; do
        [ "$j" = "$i" ] || routes+=("nats-route://127.0.0.1:${NATS_CLUSTER[$j]}")
    done
    {
        echo "server_name: n$i"
        echo "listen: 127.0.0.1:${NATS_PORT[$i]}"
        echo "http: 127.0.0.1:${NATS_MON[$i]}"
        [ -n "${NATS_MAX_PAYLOAD:-}" ] && echo "max_payload: $NATS_MAX_PAYLOAD"
        echo "jetstream { store_dir: \"$dir/nats/n$i\", max_memory_store: 64MB, max_file_store: 4GB }"
        echo "cluster { name: seccheck, listen: 127.0.0.1:${NATS_CLUSTER[$i]}, routes: [$(IFS=,; echo "${routes[*]}")] }"
        [ -n "$tls" ] && echo "tls { cert_file: \"$tls/server.pem\", key_file: \"$tls/server.key\" }"
        echo "include \"accounts.conf\""
    } >"$dir/nats/n$i.conf"
}

nats_start() {
    local tls=${1:-} i
    if [ ! -x "$NATS_SERVER" ]; then
        echo "nats-server not found: apt-get install -y nats-server (or run scripts/setup.sh)" >&2
        return 1
    fi
    mkdir -p "$dir/nats"
    "$NATS_ACCOUNTS" "$dir/nats" "${nats_hosts[@]}" >/dev/null || return 1
    local attempt ports
    # Other tests on the machine take ports too: a port taken between its
    # choice and the server's bind makes that node exit; then new ports.
    for attempt in 1 2 3; do
        read -ra ports < <(free_ports 9)
        NATS_PORT=([1]=${ports[0]} [2]=${ports[1]} [3]=${ports[2]})
        NATS_MON=([1]=${ports[3]} [2]=${ports[4]} [3]=${ports[5]})
        NATS_CLUSTER=([1]=${ports[6]} [2]=${ports[7]} [3]=${ports[8]})
        local scheme=nats
        [ -n "$tls" ] && scheme=tls
        NATS_URLS="$scheme://127.0.0.1:${NATS_PORT[1]},$scheme://127.0.0.1:${NATS_PORT[2]},$scheme://127.0.0.1:${NATS_PORT[3]}"
        for i in 1 2 3; do
            nats_conf "$i" "$tls"
            : >"$dir/nats_n$i.log"
            nats_restart "$i" || return 1
        done
        local up=1
        for i in 1 2 3; do
            wait_for 30 nats_settled "$i"
            nats_healthy "$i" && continue
            up=0
            grep -q "address already in use" "$dir/nats_n$i.log" && break
            echo "nats node n$i did not come up:" >&2
            tail -5 "$dir/nats_n$i.log" >&2
            return 1
        done
        [ $up = 1 ] && return 0
        echo "nats: a port was taken meanwhile; new ports (attempt $attempt)" >&2
        nats_stop
    done
    return 1
}

nats_restart() {   # nats_restart I
    spawn "nats_n$1" "$NATS_SERVER" -c "$dir/nats/n$1.conf"
}

# Healthy, or its process gone (a port taken): no use waiting longer.
nats_settled() {
    local var="nats_n$1"
    nats_healthy "$1" || ! kill -0 "${!var}" 2>/dev/null
}

# Up, and JetStream's meta group has a leader (until then the API times out).
nats_healthy() {
    curl -fs "http://127.0.0.1:${NATS_MON[$1]}/healthz?js-enabled-only=true" >/dev/null &&
        nats_jsz "$1" "" | python3 -c 'import json, sys; sys.exit(0 if (json.load(sys.stdin).get("meta_cluster") or {}).get("leader") else 1)'
}

nats_kill() {   # nats_kill I
    local var="nats_n$1"
    kill -KILL "${!var}" 2>/dev/null
    wait "${!var}" 2>/dev/null
}

# Every node ended and its store removed (nats_start makes a new cluster).
nats_stop() {
    local i
    for i in 1 2 3; do nats_kill "$i"; done
    rm -rf "$dir/nats/n1" "$dir/nats/n2" "$dir/nats/n3"
}

nats_jsz() { curl -fs "http://127.0.0.1:${NATS_MON[$1]}/jsz?$2"; }

# The stream's leader, as the first node that answers knows it.
nats_leader() {
    local i out
    for i in 1 2 3; do
        out=$(nats_jsz "$i" "acc=FLEET&streams=true" 2>/dev/null) || continue
        python3 -c '
import json, sys
d = json.load(sys.stdin)
for a in d.get("account_details", []):
    for s in a.get("stream_detail", []):
        if s["name"] == sys.argv[1]:
            print((s.get("cluster") or {}).get("leader", ""))
            sys.exit(0)
' "$1" <<<"$out" && return 0
    done
    return 1
}

nats_node_of() { echo "${1#n}"; }

# nats_tls DIR: a CA and a server certificate for 127.0.0.1 in DIR
# (ca.pem, server.pem, server.key), for nats_start DIR.
nats_tls() {
    mkdir -p "$1"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=seccheckd test CA" \
        -keyout "$1/ca.key" -out "$1/ca.pem" >/dev/null 2>&1 &&
    openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$1/server.key" -out "$1/server.csr" \
        >/dev/null 2>&1 &&
    printf 'subjectAltName = IP:127.0.0.1\n' >"$1/san.ext" &&
    openssl x509 -req -in "$1/server.csr" -CA "$1/ca.pem" -CAkey "$1/ca.key" -CAcreateserial -days 2 \
        -extfile "$1/san.ext" -out "$1/server.pem" >/dev/null 2>&1
}
