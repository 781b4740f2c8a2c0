# pg.sh - a throwaway PostgreSQL 15 for the fleet tests and bench (sourced).
#
#   pg_start DIR   initdb into DIR/pg and start it: Unix socket in DIR/pg only
#                  (listen_addresses=''), as user nobody when run as root
#                  (DIR is made traversable and DIR/pg handed to nobody).
#                  Sets PG_URL (database postgres) and PG_SOCKDIR.
#   pg_ctl_do ARGS pg_ctl on that cluster, as its owner (e.g. restart -m immediate)
#   pg_stop        stop it (immediate) and remove DIR/pg; safe to call twice
#   psql_c SQL     run SQL, print unaligned tuples only
# PG_FSYNC=on for a durable server (the bench); the tests run with fsync off.
# PG_SHARED_BUFFERS: the tests' small server takes 64MB (the bench gives it
# PostgreSQL's own default, 128MB).
# PG_NICE=N runs the server at that CPU priority (the bench's stand-in for a
# central server on another machine).
# The caller's EXIT trap must call pg_stop.

PG_BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
PG_DIR=
PG_AS=()

pg_start() {
    local dir=$1
    if [ ! -x "$PG_BIN/initdb" ]; then
        echo "PostgreSQL server binaries not found in /usr/lib/postgresql/*/bin: apt-get install -y postgresql (or run scripts/setup.sh)" >&2
        return 1
    fi
    PG_DIR=$dir/pg
    mkdir -p "$PG_DIR"
    if [ "$(id -u)" = 0 ]; then
        chmod 755 "$dir"
        chown nobody: "$PG_DIR"
        PG_AS=(runuser -u nobody --)
    fi
    chmod 700 "$PG_DIR"
    "${PG_AS[@]}" "$PG_BIN/initdb" -D "$PG_DIR/data" -A trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 || {
        cat "$dir/initdb.log" >&2
        return 1
    }
    cat >>"$PG_DIR/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$PG_DIR'
fsync = ${PG_FSYNC:-off}
synchronous_commit = on
max_connections = 30
shared_buffers = ${PG_SHARED_BUFFERS:-64MB}
CONF
    PG_SOCKDIR=$PG_DIR
    PG_URL="postgresql:///postgres?host=$PG_SOCKDIR&user=$(pg_user)"
    pg_ctl_do start -w -t 60 -l "$PG_DIR/server.log" >/dev/null
}

pg_user() { if [ "$(id -u)" = 0 ]; then echo nobody; else id -un; fi; }

pg_ctl_do() {
    local priority=(chrt --other 0 nice -n "${PG_NICE:-0}")
    [ "${PG_NICE:-0}" = idle ] && priority=(chrt --idle 0 nice -n 19)
    "${priority[@]}" "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" "$@"
}

pg_stop() {
    [ -n "$PG_DIR" ] || return 0
    if [ -f "$PG_DIR/data/postmaster.pid" ]; then
        pg_ctl_do stop -m immediate -w -t 30 >/dev/null 2>&1 || true
    fi
    rm -rf "$PG_DIR"
    PG_DIR=
}

psql_c() { psql "$PG_URL" -v ON_ERROR_STOP=1 -X -q -A -t -c "$1"; }
