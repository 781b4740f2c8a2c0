/* events.c - `seccheckd events --db PATH [--follow] [filters] [-o compact|json]`.
 *
 * Steps through the events table by id, a few hundred rows per statement;
 * between statements no read transaction is open. --follow then waits for
 * PRAGMA data_version to change (another connection committed: a read of
 * the WAL index, not of the tables) and reads on from the last id. Compact
 * lines decode each row's raw packet again, as export does; JSON lines are
 * events_full's rows.
 */
#include "events.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <sqlite3.h>

#include "arena.h"
#include "cli.h"
#include "clock.h"
#include "decode.h"
#include "event_line.h"
#include "filter.h"
#include "sqlutil.h"
#include "strbuf.h"
#include "wire.h"

#define PROG "seccheckd events"
#define ROWS_PER_READ 512   /* rows per statement: its read transaction stays short */
#define POLL_MS 200         /* --follow: how often to look for a commit */
#define SINCE_MAX_S (36500ull * 86400)

enum { EVENTS_OK = 0, EVENTS_FAILED = 1, EVENTS_USAGE = 2, EVENTS_OUTPUT_GONE = 3 };

struct events_options {
    const char *db_path;
    bool follow;
    const char *container;
    const char *process;
    const char *types;            /* as given: filter.h parses it */
    struct filter type_filter;
    bool has_since;
    uint64_t since_s;
    bool json;
};

struct reader {
    const struct events_options *o;
    sqlite3 *db;
    sqlite3_stmt *rows;
    sqlite3_stmt *data_version;
    struct decoder decoder;
    struct arena arena;           /* one row's decoded message at a time */
    struct strbuf line;
    int64_t after;                /* the last id read */
    int64_t until;                /* without --follow: the last id when it started */
    int64_t since_ns;             /* --since: received at or after this */
};

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig) { stop_signal = sig; }

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: seccheckd events --db PATH [--follow] [--container ID] [--type NAME] [--process NAME]\n"
            "                        [--since DURATION] [-o compact|json]\n"
            "Prints the events of a seccheckd database, one line each, oldest first.\n"
            "\n"
            "  --db PATH          the database (only read; the daemon may be running)\n"
            "  --follow, -f       then print new events as the daemon commits them, until\n"
            "                     interrupted; without --since, only new ones\n"
            "  --container ID     only this container's events (see the containers view)\n"
            "  --type NAME        only these message types, names or numbers, comma-separated\n"
            "                     (seccheckd types lists them)\n"
            "  --process NAME     only events of processes of this name\n"
            "  --since DURATION   only events received in the last DURATION: 90, 90s, 15m, 12h, 7d\n"
            "  -o compact         one line per event: time, container, process[pid], what\n"
            "                     happened, = result on a syscall's exit [default]\n"
            "  -o json            one JSON object per event: events_full's row, the whole\n"
            "                     message included\n"
            "  --help, -h         this text\n"
            "\n"
            "Exit status: 0 done (or --follow interrupted), 1 a runtime error (printed), 2 usage error.\n");
}

static int usage_error(const char *problem, const char *value)
{
    fprintf(stderr, PROG ": %s", problem);
    if (value)
        fprintf(stderr, ", got '%s'", value);
    fprintf(stderr, " (try --help)\n");
    return EVENTS_USAGE;
}

/* 0, EVENTS_USAGE, or -1 after --help. */
static int parse_options(int argc, char **argv, struct events_options *o)
{
    static const struct option options[] = {
        {"db", required_argument, NULL, 'd'},        {"follow", no_argument, NULL, 'f'},
        {"container", required_argument, NULL, 'c'}, {"type", required_argument, NULL, 't'},
        {"process", required_argument, NULL, 'p'},   {"since", required_argument, NULL, 's'},
        {"output", required_argument, NULL, 'o'},    {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof(*o));
    char err[256];
    int ch;
    optind = 0;   /* a fresh getopt scan, whatever ran before */
    opterr = 0;
    while ((ch = getopt_long(argc, argv, CLI_GETOPT_QUIET "fo:h", options, NULL)) != -1) {
        switch (ch) {
        case 'd': o->db_path = optarg; break;
        case 'f': o->follow = true; break;
        case 'c': o->container = optarg; break;
        case 'p': o->process = optarg; break;
        case 't':
            o->types = optarg;
            if (filter_set_types(&o->type_filter, FILTER_KEEP, optarg, err, sizeof(err)) != 0) {
                fprintf(stderr, PROG ": --type: %s; seccheckd types lists them\n", err);
                return EVENTS_USAGE;
            }
            break;
        case 's':
            if (cli_parse_duration_s(optarg, SINCE_MAX_S, &o->since_s) != 0)
                return usage_error("--since: expected a duration like 90, 90s, 15m, 12h or 7d", optarg);
            o->has_since = true;
            break;
        case 'o':
            if (strcmp(optarg, "compact") != 0 && strcmp(optarg, "json") != 0)
                return usage_error("-o: expected compact or json", optarg);
            o->json = strcmp(optarg, "json") == 0;
            break;
        case 'h': usage(stdout); return -1;
        default: cli_report_getopt_error(PROG, ch, argv); return EVENTS_USAGE;
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument", argv[optind]);
    if (!o->db_path)
        return usage_error("--db PATH is required", NULL);
    return 0;
}

/* ---- the database ---- */

/* Opened read-write only so that, closing as its last connection, SQLite
 * checkpoints and removes the -wal and -shm files reading made (a read-only
 * connection leaves them); query_only keeps it from writing anything else.
 * Without write access, read-only: then those files may stay. */
static int open_db(struct reader *r)
{
    const char *path = r->o->db_path;
    struct stat st;
    const char *problem = stat(path, &st) != 0 ? (errno == ENOENT ? "no such database (check --db)" : strerror(errno))
                          : S_ISDIR(st.st_mode) ? "is a directory, not a database"
                          : !S_ISREG(st.st_mode) ? "is not a regular file, not a database"
                                                 : NULL;
    if (problem) {
        fprintf(stderr, PROG ": %s: %s\n", path, problem);
        return EVENTS_FAILED;
    }
    int rc = sqlite3_open_v2(path, &r->db, SQLITE_OPEN_READWRITE, NULL);
    if (rc == SQLITE_READONLY || rc == SQLITE_CANTOPEN || rc == SQLITE_PERM) {
        sqlite3_close(r->db);
        r->db = NULL;
        rc = sqlite3_open_v2(path, &r->db, SQLITE_OPEN_READONLY, NULL);
    }
    if (rc != SQLITE_OK) {
        fprintf(stderr, PROG ": cannot open %s: %s\n", path, r->db ? sqlite3_errmsg(r->db) : "out of memory");
        return EVENTS_FAILED;
    }
    char err[256];
    sqlite3_busy_timeout(r->db, 5000);
    if (sqlutil_exec(r->db, "PRAGMA query_only=ON", err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s: %s\n", path, err);
        return EVENTS_FAILED;
    }
    /* The first read: a file that is not a database fails here. */
    if (sqlutil_exec(r->db, "SELECT 1 FROM sqlite_master LIMIT 1", err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s: %s\n", path, err);
        return EVENTS_FAILED;
    }
    if (!sqlutil_has(r->db, "table", "events")) {
        fprintf(stderr, PROG ": %s is not a seccheckd database (no events table)\n", path);
        return EVENTS_FAILED;
    }
    if (r->o->json && !sqlutil_has(r->db, "view", "events_full")) {
        fprintf(stderr, PROG ": %s has no events_full view (schema version 1): start seccheckd on it once to "
                "upgrade it, or use -o compact\n", path);
        return EVENTS_FAILED;
    }
    return 0;
}

/* The first id of a row received at or after since_ns, less one: ids
 * grow with the time they were received, so a binary search over ids (a
 * rowid lookup each) finds it; rows before it that were received later
 * (a clock step back) are not looked at. */
static int64_t last_id_before(sqlite3 *db, int64_t since_ns)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT recv_ns FROM events WHERE id >= ?1 ORDER BY id LIMIT 1", -1, &st, NULL) !=
        SQLITE_OK)
        return 0;
    int64_t lo = sqlutil_int(db, "SELECT min(id) FROM events", 1), hi = sqlutil_int(db, "SELECT max(id) FROM events", 0) + 1;
    while (lo < hi) {   /* the least x whose first row at or after it is recent enough (or none) */
        int64_t mid = lo + (hi - lo) / 2;
        sqlite3_bind_int64(st, 1, mid);
        bool recent = sqlite3_step(st) != SQLITE_ROW || sqlite3_column_int64(st, 0) >= since_ns;
        sqlite3_reset(st);
        if (recent)
            hi = mid;
        else
            lo = mid + 1;
    }
    sqlite3_finalize(st);
    return lo - 1;
}

/* The statement that reads the next rows after ?1 up to ?2, filtered. */
static int prepare_rows(struct reader *r)
{
    const struct events_options *o = r->o;
    struct strbuf sql = {0};
    if (o->json)
        strbuf_puts(&sql, "SELECT e.id, json_object('id', f.id, 'conn_id', f.conn_id, 'recv_ns', f.recv_ns,"
                          " 'msg_type', f.msg_type, 'type_name', f.type_name, 'dropped_count', f.dropped_count,"
                          " 'decode_error', f.decode_error, 'message', json(f.message))"
                          " FROM events e JOIN events_full f ON f.id = e.id");
    else
        strbuf_puts(&sql, "SELECT e.id, e.recv_ns, e.msg_type, e.raw FROM events e");
    strbuf_puts(&sql, " WHERE e.id > ?1 AND e.id <= ?2");
    if (o->container)
        strbuf_puts(&sql, " AND e.container_id = ?3");
    if (o->process)
        strbuf_puts(&sql, " AND e.process_name = ?4");
    if (o->has_since)
        strbuf_puts(&sql, " AND e.recv_ns >= ?5");
    if (o->types) {
        const char *sep = " AND e.msg_type IN (";
        for (unsigned t = 0; t < 65536; t++)
            if (filter_type_passes(&o->type_filter, (uint16_t)t)) {
                strbuf_printf(&sql, "%s%u", sep, t);
                sep = ",";
            }
        strbuf_puts(&sql, ")");
    }
    strbuf_printf(&sql, " ORDER BY e.id LIMIT %d", ROWS_PER_READ);
    int rc = sql.failed ? SQLITE_NOMEM : sqlite3_prepare_v2(r->db, sql.data, -1, &r->rows, NULL);
    strbuf_free(&sql);
    if (rc != SQLITE_OK) {
        fprintf(stderr, PROG ": %s: %s\n", o->db_path, sqlite3_errmsg(r->db));
        return EVENTS_FAILED;
    }
    if (o->container)
        sqlite3_bind_text(r->rows, 3, o->container, -1, SQLITE_STATIC);
    if (o->process)
        sqlite3_bind_text(r->rows, 4, o->process, -1, SQLITE_STATIC);
    if (o->has_since)
        sqlite3_bind_int64(r->rows, 5, r->since_ns);
    return 0;
}

/* ---- lines ---- */

/* The event of a row (id, recv_ns, msg_type, raw), decoded again from raw
 * the way the daemon decoded it on arrival. */
static void decode_row(struct reader *r, struct event *ev)
{
    const uint8_t *raw = sqlite3_column_blob(r->rows, 3);
    size_t len = (size_t)sqlite3_column_bytes(r->rows, 3);
    struct wire_header h;
    arena_reset(&r->arena);
    memset(ev, 0, sizeof(*ev));
    if (raw && wire_header_parse(raw, len, &h) == WIRE_OK) {
        decode_event(&r->decoder, &r->arena, &h, raw, len, ev);
    } else {   /* never stored by the daemon: an edited row */
        ev->raw_len = (uint32_t)len;
        ev->header.message_type = (uint16_t)sqlite3_column_int(r->rows, 2);
        ev->status = DECODE_BAD_PAYLOAD;
    }
    ev->recv_ns = sqlite3_column_int64(r->rows, 1);
}

static void render_row(struct reader *r)
{
    strbuf_reset(&r->line);
    if (r->o->json) {
        const char *json = (const char *)sqlite3_column_text(r->rows, 1);
        event_line_json(&r->line, json ? json : "null", json ? (size_t)sqlite3_column_bytes(r->rows, 1) : 4);
        strbuf_putc(&r->line, '\n');
        return;
    }
    struct event ev;
    decode_row(r, &ev);
    event_line_render(&r->line, &ev);
}

/* Prints the next rows (at most ROWS_PER_READ) in one statement; *n says
 * how many. 0, EVENTS_FAILED or EVENTS_OUTPUT_GONE. */
static int print_next(struct reader *r, int *n)
{
    sqlite3_bind_int64(r->rows, 1, r->after);
    sqlite3_bind_int64(r->rows, 2, r->until);
    int step, rc = 0;
    *n = 0;
    while (rc == 0 && (step = sqlite3_step(r->rows)) == SQLITE_ROW) {
        r->after = sqlite3_column_int64(r->rows, 0);
        render_row(r);
        if (r->line.failed) {
            fprintf(stderr, PROG ": out of memory rendering event %" PRId64 "\n", r->after);
            rc = EVENTS_FAILED;
        } else if (fwrite(r->line.data, 1, r->line.len, stdout) != r->line.len) {
            rc = errno == EPIPE ? EVENTS_OUTPUT_GONE : EVENTS_FAILED;
        }
        (*n)++;
    }
    if (rc == 0 && step != SQLITE_DONE) {
        fprintf(stderr, PROG ": reading events: %s\n", sqlite3_errmsg(r->db));
        rc = EVENTS_FAILED;
    }
    sqlite3_reset(r->rows);   /* ends the read transaction */
    if (rc == 0 && fflush(stdout) != 0)
        rc = errno == EPIPE ? EVENTS_OUTPUT_GONE : EVENTS_FAILED;
    if (rc == EVENTS_FAILED && ferror(stdout))
        fprintf(stderr, PROG ": writing to standard output: %s\n", strerror(errno));
    return rc;
}

/* PRAGMA data_version: changes when another connection commits. */
static int64_t data_version(struct reader *r)
{
    int64_t v = -1;
    if (sqlite3_step(r->data_version) == SQLITE_ROW)
        v = sqlite3_column_int64(r->data_version, 0);
    sqlite3_reset(r->data_version);
    return v;
}

/* --follow: sleeps until something was committed (or a stop signal). */
static void wait_for_commit(struct reader *r, int64_t *version)
{
    while (!stop_signal) {
        struct timespec ts = {.tv_sec = 0, .tv_nsec = POLL_MS * 1000000L};
        nanosleep(&ts, NULL);   /* a signal cuts it short */
        int64_t v = data_version(r);
        if (v != *version) {
            *version = v;
            return;
        }
    }
}

static int run(struct reader *r)
{
    if (r->o->has_since)
        r->after = last_id_before(r->db, r->since_ns);
    else if (r->o->follow)
        r->after = sqlutil_int(r->db, "SELECT max(id) FROM events", 0);
    r->until = r->o->follow ? INT64_MAX : sqlutil_int(r->db, "SELECT max(id) FROM events", 0);
    int rc = prepare_rows(r);
    if (rc == 0 && sqlite3_prepare_v2(r->db, "PRAGMA data_version", -1, &r->data_version, NULL) != SQLITE_OK) {
        fprintf(stderr, PROG ": %s: %s\n", r->o->db_path, sqlite3_errmsg(r->db));
        rc = EVENTS_FAILED;
    }
    int64_t version = rc == 0 ? data_version(r) : 0;
    while (rc == 0 && !stop_signal) {
        int n;
        rc = print_next(r, &n);
        if (rc != 0 || n == ROWS_PER_READ)
            continue;
        if (!r->o->follow)
            break;
        wait_for_commit(r, &version);
    }
    return rc == EVENTS_OUTPUT_GONE ? 0 : rc;
}

/* ---- the command ---- */

/* Stop signals end --follow cleanly (the database closed, so its -wal and
 * -shm go); a reader that goes away is an EPIPE, not a death. */
static void handle_signals(struct sigaction *old_int, struct sigaction *old_term, struct sigaction *old_pipe)
{
    struct sigaction sa = {.sa_handler = on_stop};   /* no SA_RESTART: the sleep ends */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, old_int);
    sigaction(SIGTERM, &sa, old_term);
    struct sigaction ignore = {.sa_handler = SIG_IGN};
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, old_pipe);
}

int events_main(int argc, char **argv)
{
    struct events_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != 0) {
        filter_free(&o.type_filter);
        return rc < 0 ? EVENTS_OK : rc;
    }
    struct reader r = {.o = &o};
    if (o.has_since)
        r.since_ns = realtime_ns() - (int64_t)o.since_s * 1000000000;
    decoder_init(&r.decoder);
    /* No limit of its own: decode_event caps each unpack by the packet's
     * size, exactly as it did in the daemon. */
    arena_init(&r.arena, 64 * 1024, SIZE_MAX);
    struct sigaction old_int, old_term, old_pipe;
    handle_signals(&old_int, &old_term, &old_pipe);
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    rc = open_db(&r);
    if (rc == 0)
        rc = run(&r);
    sqlite3_finalize(r.rows);
    sqlite3_finalize(r.data_version);
    sqlite3_close(r.db);
    arena_free(&r.arena);
    strbuf_free(&r.line);
    filter_free(&o.type_filter);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGPIPE, &old_pipe, NULL);
    return rc;
}
