#!/usr/bin/env bash
# seccheckd forward against a real PostgreSQL 15 started here (issue 19 item
# 10): what retrying cannot heal ends the forwarder with exit status 1 and
# the reason (a --db that does not exist or is not a database, no password
# for a role that needs one, a wrong password in the pgpass file, a role or
# database the server does not have); what can heal (the server down) is
# retried until it is back. The role has a password and pg_hba.conf asks
# for it (scram-sha-256) on the Unix socket.
# Usage: errors.sh BIN_DIR TRACES_DIR
set -uo pipefail
bin=${1:?usage: errors.sh BIN_DIR TRACES_DIR}
traces=${2:?usage: errors.sh BIN_DIR TRACES_DIR}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/pg.sh"
. "$here/lib.sh"

fleet_setup fleet-errors
pg_start "$dir" || exit 1

# A role with a password, its own database, and pg_hba.conf asking for the
# password on the socket (first line wins; everyone else stays trusted).
psql_c "CREATE ROLE fwd LOGIN PASSWORD 'right-password'" >/dev/null
psql_c "CREATE DATABASE fleet OWNER fwd" >/dev/null
hba=$PG_DIR/data/pg_hba.conf
{ echo "local all fwd scram-sha-256"; cat "$hba"; } >"$dir/hba.new" && cat "$dir/hba.new" >"$hba"
pg_ctl_do reload >/dev/null
url="postgresql:///fleet?host=$PG_SOCKDIR&user=fwd"
printf '*:*:*:fwd:right-password\n' >"$dir/right.pgpass"
printf '*:*:*:fwd:wrong-password\n' >"$dir/wrong.pgpass"
chmod 600 "$dir/right.pgpass" "$dir/wrong.pgpass"
check "the role needs its password (psql without one fails)" \
    bash -c "! PGPASSFILE=/nonexistent psql '$url' -X -w -c 'SELECT 1' >/dev/null 2>&1"
check "... and connects with it" bash -c "PGPASSFILE='$dir/right.pgpass' psql '$url' -X -w -A -t -c 'SELECT 1' >/dev/null"

spawn d "$bin/seccheckd" --socket "$dir/d.sock" --db "$dir/d.db" --batch-size 256 "${own_names[@]}"
wait_for 20 test -S "$dir/d.sock"
"$bin/seccheck-loadgen" --socket "$dir/d.sock" --trace "$traces/exec_loop.trace" --mode block --messages 3000 \
    >>"$dir/load.log" 2>&1
check "the daemon stored the load" wait_for 10 bash -c "[ \$(sqlite3 '$dir/d.db' 'SELECT count(*) FROM events') = 3000 ]"

n=0
# gives_up NAME REASON PGPASSFILE DB URL: the forwarder exits 1 within 15 s
# (retries are 100 ms apart: it would have retried ~100 times), logging
# REASON once and that it does not retry.
gives_up() {
    local name=$1 reason=$2 pgpass=$3 db=$4 to=$5 pid status
    n=$((n + 1))
    spawn "g$n" env PGPASSFILE="$pgpass" PGPASSWORD= "$bin/seccheckd" forward --db "$db" --to "$to" \
        --host-id h --retry-min-ms 100 --retry-max-ms 100
    eval "pid=\$g$n"
    if ! wait_for 15 bash -c "[ \"\$(ps -o stat= -p $pid)\" = Z ] || ! kill -0 $pid"; then
        echo "     $name: still running after 15 s:"; tail -3 "$dir/g$n.log"
        return 1
    fi
    wait "$pid"
    status=$?
    echo "     $name: exit $status: $(grep -m1 'error: forward' "$dir/g$n.log")"
    [ $status = 1 ] && [ "$(grep -c "$reason" "$dir/g$n.log")" = 1 ] &&
        grep -q "retrying cannot heal this: exiting" "$dir/g$n.log" && ! grep -q "retrying in" "$dir/g$n.log"
}

# ---------------------------------------------------------------- cannot heal
check "a wrong password in the pgpass file: exit 1" \
    gives_up wrong-password "password authentication failed for user \"fwd\"" "$dir/wrong.pgpass" "$dir/d.db" "$url"
check "no password for a role that needs one: exit 1" \
    gives_up no-password "asks for a password and none was found" /nonexistent "$dir/d.db" "$url"
check "a role the server does not have: exit 1" \
    gives_up no-role 'role "ghost" does not exist' /nonexistent "$dir/d.db" "postgresql:///fleet?host=$PG_SOCKDIR&user=ghost"
check "a database the server does not have: exit 1" \
    gives_up no-database 'database "nosuchdb" does not exist' "$dir/right.pgpass" "$dir/d.db" \
    "postgresql:///nosuchdb?host=$PG_SOCKDIR&user=fwd"
check "a --db that does not exist: exit 1, and it is not created" \
    gives_up no-db "missing.db: No such file or directory (the daemon creates it: start it first" "$dir/right.pgpass" \
    "$dir/missing.db" "$url"
check "... not created" [ ! -e "$dir/missing.db" ]
echo "not a database, not at all" >"$dir/junk.db"
check "a --db that is not a database: exit 1" \
    gives_up junk "junk.db: file is not a database" "$dir/right.pgpass" "$dir/junk.db" "$url"
sqlite_c "$dir/other.db" "CREATE TABLE mine(x)"
check "a --db with tables of its own, not the daemon's: exit 1" \
    gives_up other "not a seccheckd database: it has tables of its own" "$dir/right.pgpass" "$dir/other.db" "$url"
check "none of them shipped anything (no central tables)" [ "$(psql "postgresql:///fleet?host=$PG_SOCKDIR&user=$(pg_user)" \
    -X -A -t -c "SELECT count(*) FROM pg_tables WHERE tablename = 'events'")" = 0 ]

# ---------------------------------------------------------------- heals
# The server down: retried (it stays up, logging each retry), and it ships
# once the server is back.
pg_ctl_do stop -m fast -w >/dev/null
spawn f env PGPASSFILE="$dir/right.pgpass" "$bin/seccheckd" forward --db "$dir/d.db" --to "$url" --host-id h \
    --retry-min-ms 100 --retry-max-ms 200
check "the server down: the forwarder retries" wait_for 15 bash -c "[ \$(grep -c 'unreachable.*retrying in' '$dir/f.log') -ge 5 ]"
check "... and keeps running" kill -0 "$f"
pg_ctl_do start -w -t 60 -l "$PG_DIR/server.log" >/dev/null
caught_up_fwd() { [ "$(PGPASSFILE="$dir/right.pgpass" psql "$url" -X -w -A -t -c \
    "SELECT last_batch_id FROM hosts WHERE host_id = 'h'" 2>/dev/null)" = "$(sqlite_c "$dir/d.db" "SELECT max(id) FROM batches")" ]; }
check "the server back: it ships everything with the password from the pgpass file" wait_for 30 caught_up_fwd
check "... as the role with the password" [ "$(PGPASSFILE="$dir/right.pgpass" psql "$url" -X -w -A -t -c \
    "SELECT tableowner FROM pg_tables WHERE tablename = 'events'")" = fwd ]
stop "$f"
check "forwarder exits 0 on SIGTERM" [ "$stop_status" = 0 ]
stop "$d"

if [ $failures != 0 ]; then
    for f in "$dir"/*.log; do echo "---- $f"; tail -8 "$f"; done
    echo "$failures failed"
    exit 1
fi
echo "all passed"
