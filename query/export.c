/* export.c - `seccheckd export --db PATH --format ndjson|trace ...`.
 *
 * Reads one snapshot of the database (a read transaction, so a daemon may
 * keep writing) and steps through the events table with prepared
 * statements, one row at a time: a database of any size exports in
 * constant memory. NDJSON decodes each raw packet again with the daemon's
 * decoder and renders it with event_json.h, so it writes the very lines the
 * live ndjson sink wrote. Trace writes each connection's raw packets in id
 * order with tracefile.h, the writer the record sink uses.
 */
#include "export.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sqlite3.h>

#include "cli.h"
#include "db_file.h"
#include "event_json.h"
#include "event_redecode.h"
#include "sqlutil.h"
#include "strbuf.h"
#include "tracefile.h"
#include "wire.h"

#define PROG "seccheckd export"

enum { EXPORT_OK = 0, EXPORT_FAILED = 1, EXPORT_USAGE = 2 };

struct export_options {
    const char *db_path;
    const char *format;
    const char *out;              /* ndjson: a file (NULL or "-": stdout); trace: a directory */
    bool has_conn;
    int64_t conn_id;
};

struct exporter {
    const struct export_options *o;
    sqlite3 *db;
    struct event_redecoder redecoder;   /* one row's decoded message at a time */
    struct strbuf line;
    uint64_t events, conns, skipped;
    bool warned_header;
};

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: seccheckd export --db PATH --format ndjson|trace [--out PATH|DIR] [--conn ID]\n"
            "Writes the events of a seccheckd database out again.\n"
            "\n"
            "  --db PATH        the database (opened read-only; the daemon may be running)\n"
            "  --format ndjson  one JSON object per event, in id order: the objects --sink ndjson\n"
            "                   writes (common columns, \"detail\", or \"raw\" hex when undecoded)\n"
            "  --format trace   one gVisor tracereplay file per connection, DIR/client-NNNN\n"
            "                   (NNNN: connection id), byte-identical to what --sink record writes\n"
            "  --out PATH|DIR   ndjson: the file to write [standard output]; trace: the directory\n"
            "                   (created if missing; existing client files are never overwritten)\n"
            "  --conn ID        only the events of connection ID\n"
            "  --help, -h       this text\n"
            "\n"
            "Exit status: 0 written, 1 a runtime error (printed), 2 usage error.\n");
}

/* 0, EXPORT_USAGE, or -1 after --help. */
static int parse_options(int argc, char **argv, struct export_options *o)
{
    static const struct option options[] = {
        {"db", required_argument, NULL, 'd'},   {"format", required_argument, NULL, 'f'},
        {"out", required_argument, NULL, 'o'},  {"conn", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof(*o));
    uint64_t conn;
    int ch;
    optind = 0;   /* a fresh getopt scan, whatever ran before */
    opterr = 0;
    while ((ch = getopt_long(argc, argv, CLI_GETOPT_QUIET "h", options, NULL)) != -1) {
        switch (ch) {
        case 'd': o->db_path = optarg; break;
        case 'f': o->format = optarg; break;
        case 'o': o->out = optarg; break;
        case 'c':
            if (cli_parse_uint(PROG, "conn", optarg, 1, INT64_MAX, &conn) != 0)
                return EXPORT_USAGE;
            o->has_conn = true;
            o->conn_id = (int64_t)conn;
            break;
        case 'h': usage(stdout); return -1;
        default: cli_report_getopt_error(PROG, ch, argv); return EXPORT_USAGE;
        }
    }
    const char *problem = NULL;
    if (optind < argc)
        problem = "unexpected argument";
    else if (!o->db_path)
        problem = "--db PATH is required";
    else if (!o->format)
        problem = "--format ndjson|trace is required";
    else if (strcmp(o->format, "ndjson") != 0 && strcmp(o->format, "trace") != 0)
        problem = "--format: expected ndjson or trace";
    else if (strcmp(o->format, "trace") == 0 && !o->out)
        problem = "--format trace needs --out DIR";
    if (!problem)
        return 0;
    fprintf(stderr, PROG ": %s", problem);
    if (optind < argc)
        fprintf(stderr, " '%s'", argv[optind]);
    else if (o->format && strstr(problem, "expected"))
        fprintf(stderr, ", got '%s'", o->format);
    fprintf(stderr, " (try --help)\n");
    return EXPORT_USAGE;
}

static sqlite3_stmt *prepare(struct exporter *x, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(x->db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, PROG ": %s: %s\n", x->o->db_path, sqlite3_errmsg(x->db));
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

/* ---- ndjson ---- */

/* The event of one events row (conn_id, recv_ns, msg_type, dropped_count,
 * raw), decoded again from raw the way the daemon decoded it on arrival. */
static void decode_row(struct exporter *x, sqlite3_stmt *st, struct event *ev)
{
    const uint8_t *raw = sqlite3_column_blob(st, 4);
    size_t len = (size_t)sqlite3_column_bytes(st, 4);
    if (!event_redecode_event(&x->redecoder, raw, len, ev)) {
        /* The daemon never stores such a packet, so the row was edited:
         * exported anyway, undecoded, with the header from its columns. */
        if (!x->warned_header)
            fprintf(stderr, PROG ": warning: an event's raw column has no valid packet header; exported as "
                    "\"raw\" with decode_error bad_payload\n");
        x->warned_header = true;
        ev->raw = raw;
        ev->raw_len = (uint32_t)len;
        ev->header.message_type = (uint16_t)sqlite3_column_int(st, 2);
        ev->header.dropped_count = (uint32_t)sqlite3_column_int64(st, 3);
        ev->status = DECODE_BAD_PAYLOAD;
    }
    ev->conn_id = (uint64_t)sqlite3_column_int64(st, 0);
    ev->recv_ns = sqlite3_column_int64(st, 1);
}

/* Every row of the statement as a line on out; 0 or EXPORT_FAILED. */
static int write_ndjson_rows(struct exporter *x, sqlite3_stmt *st, FILE *out, const char *out_name)
{
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        struct event ev;
        decode_row(x, st, &ev);
        strbuf_reset(&x->line);
        if (event_json_render(&x->line, &ev) != 0) {
            fprintf(stderr, PROG ": out of memory rendering an event\n");
            return EXPORT_FAILED;
        }
        if (fwrite(x->line.data, 1, x->line.len, out) != x->line.len) {
            fprintf(stderr, PROG ": writing %s: %s\n", out_name, strerror(errno));
            return EXPORT_FAILED;
        }
        x->events++;
    }
    if (step != SQLITE_DONE) {
        fprintf(stderr, PROG ": reading events: %s\n", sqlite3_errmsg(x->db));
        return EXPORT_FAILED;
    }
    return 0;
}

/* A new file, mode 0640 like the ndjson sink's (it holds argv and
 * environments), never an existing one (refused, as --format trace refuses
 * existing client files); or an existing FIFO or character device (a pipe
 * to a shipper, /dev/null). NULL with errno. */
static FILE *open_output(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0640);
    if (fd < 0 && errno == EEXIST) {
        /* Opened without O_TRUNC, so a regular file is left as it was. */
        struct stat st;
        fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd >= 0 && (fstat(fd, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)))) {
            close(fd);
            fd = -1;
        }
        if (fd < 0)
            errno = EEXIST;
    }
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (fd >= 0 && !f)
        close(fd);
    return f;
}

static int export_ndjson(struct exporter *x)
{
    bool to_stdout = !x->o->out || strcmp(x->o->out, "-") == 0;
    const char *out_name = to_stdout ? "standard output" : x->o->out;
    sqlite3_stmt *st = prepare(x, x->o->has_conn ? "SELECT conn_id, recv_ns, msg_type, dropped_count, raw FROM events"
                                                   " WHERE conn_id = ?1 ORDER BY id"
                                                 : "SELECT conn_id, recv_ns, msg_type, dropped_count, raw FROM events"
                                                   " ORDER BY id");
    if (!st)
        return EXPORT_FAILED;
    if (x->o->has_conn)
        sqlite3_bind_int64(st, 1, x->o->conn_id);
    FILE *out = to_stdout ? stdout : open_output(x->o->out);
    if (!out) {
        fprintf(stderr, PROG ": cannot create %s: %s%s\n", x->o->out, strerror(errno),
                errno == EEXIST ? " (an export never overwrites a file: remove it, or pick another --out)" : "");
        sqlite3_finalize(st);
        return EXPORT_FAILED;
    }
    setvbuf(out, NULL, _IOFBF, 1 << 20);
    int rc = write_ndjson_rows(x, st, out, out_name);
    sqlite3_finalize(st);
    bool flushed = to_stdout ? fflush(out) == 0 && !ferror(out) : fclose(out) == 0;
    if (!flushed && rc == 0) {
        fprintf(stderr, PROG ": writing %s: %s\n", out_name, strerror(errno));
        rc = EXPORT_FAILED;
    }
    return rc;
}

/* ---- trace ---- */

/* Every event of the exported connections, grouped by connection and in id
 * order within one: a single pass over the table (an index walk with
 * events_by_conn, one sort without it), not a scan per connection. */
struct trace_rows {
    sqlite3_stmt *st;
    int step;                     /* of the row st is on */
};

static bool trace_rows_at(const struct trace_rows *r, int64_t conn_id)
{
    return r->step == SQLITE_ROW && sqlite3_column_int64(r->st, 0) == conn_id;
}

/* The packets of one connection, in id order, as DIR/client-NNNN. */
static int write_trace_file(struct exporter *x, struct trace_rows *rows, int64_t conn_id, uint32_t version)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/client-%04" PRId64, x->o->out, conn_id);
    struct tracefile tf;
    if (tracefile_create(&tf, path, version) != TRACEFILE_OK) {
        fprintf(stderr, PROG ": cannot create %s: %s%s\n", path, strerror(errno),
                errno == EEXIST ? " (export into an empty directory)" : "");
        return EXPORT_FAILED;
    }
    int rc = 0;
    for (; trace_rows_at(rows, conn_id); rows->step = sqlite3_step(rows->st)) {
        const uint8_t *raw = sqlite3_column_blob(rows->st, 1);
        size_t len = (size_t)sqlite3_column_bytes(rows->st, 1);
        enum tracefile_status ts = tracefile_append(&tf, raw ? raw : (const uint8_t *)"", len);
        if (ts == TRACEFILE_RECORD_TOO_LARGE) {
            fprintf(stderr, PROG ": %s: skipped a %zu-byte packet: tracereplay records are at most %u bytes\n",
                    path, len, TRACEFILE_RECORD_MAX);
            x->skipped++;
        } else if (ts != TRACEFILE_OK) {
            fprintf(stderr, PROG ": writing %s: %s\n", path, strerror(errno));
            rc = EXPORT_FAILED;
            break;
        } else {
            x->events++;
        }
    }
    if (rc == 0 && rows->step != SQLITE_ROW && rows->step != SQLITE_DONE) {
        fprintf(stderr, PROG ": reading events: %s\n", sqlite3_errmsg(x->db));
        rc = EXPORT_FAILED;
    }
    if (tracefile_close(&tf) != TRACEFILE_OK && rc == 0) {
        fprintf(stderr, PROG ": writing %s: %s\n", path, strerror(errno));
        rc = EXPORT_FAILED;
    }
    x->conns++;
    return rc;
}

/* Connections that handshook (the record sink starts their file then, even
 * before any event) and any connection with events; the handshake version. */
static const char conns_sql[] =
    "SELECT ids.conn_id, c.client_version FROM"
    " (SELECT id AS conn_id FROM connections WHERE client_version IS NOT NULL"
    "  UNION SELECT conn_id FROM events) AS ids"
    " LEFT JOIN connections c ON c.id = ids.conn_id"
    " WHERE ?1 IS NULL OR ids.conn_id = ?1 ORDER BY ids.conn_id";

static int export_trace(struct exporter *x)
{
    if (mkdir(x->o->out, 0750) != 0 && errno != EEXIST) {
        fprintf(stderr, PROG ": cannot create %s: %s\n", x->o->out, strerror(errno));
        return EXPORT_FAILED;
    }
    sqlite3_stmt *conns = prepare(x, conns_sql);
    struct trace_rows rows = {
        .st = conns ? prepare(x, x->o->has_conn ? "SELECT conn_id, raw FROM events WHERE conn_id = ?1 ORDER BY id"
                                                : "SELECT conn_id, raw FROM events ORDER BY conn_id, id")
                    : NULL};
    int rc = conns && rows.st ? 0 : EXPORT_FAILED, step = SQLITE_DONE;
    if (rc == 0 && x->o->has_conn) {
        sqlite3_bind_int64(conns, 1, x->o->conn_id);
        sqlite3_bind_int64(rows.st, 1, x->o->conn_id);
    }
    if (rc == 0)
        rows.step = sqlite3_step(rows.st);
    /* Both ordered by connection, and conns holds every conn_id of events. */
    while (rc == 0 && (step = sqlite3_step(conns)) == SQLITE_ROW) {
        int64_t version = sqlite3_column_int64(conns, 1);
        /* No recorded handshake: the record sink's default, wire version 1. */
        if (version < 1 || version > UINT32_MAX)
            version = WIRE_VERSION;
        rc = write_trace_file(x, &rows, sqlite3_column_int64(conns, 0), (uint32_t)version);
    }
    if (rc == 0 && step != SQLITE_DONE) {
        fprintf(stderr, PROG ": reading connections: %s\n", sqlite3_errmsg(x->db));
        rc = EXPORT_FAILED;
    }
    sqlite3_finalize(rows.st);
    sqlite3_finalize(conns);
    return rc;
}

/* ---- the command ---- */

/* A connection that sent messages of which no event is left: retention
 * deleted them (the oldest event kept came after it connected), or none was
 * stored (filters, --sink discard). Exporting nothing would look like a
 * quiet connection: 0, or EXPORT_FAILED said. */
static int check_conn_events(struct exporter *x)
{
    char sql[400];
    int64_t id = x->o->conn_id;
    snprintf(sql, sizeof(sql), "SELECT coalesce((SELECT messages FROM connections WHERE id = %" PRId64 "), 0)", id);
    int64_t messages = sqlutil_int(x->db, sql, 0);
    snprintf(sql, sizeof(sql), "SELECT EXISTS(SELECT 1 FROM events WHERE conn_id = %" PRId64 ")", id);
    if (messages <= 0 || sqlutil_int(x->db, sql, 0))
        return 0;
    snprintf(sql, sizeof(sql), "SELECT (SELECT recv_ns FROM events ORDER BY id LIMIT 1) >"
             " (SELECT connect_ns FROM connections WHERE id = %" PRId64 ")", id);
    if (sqlutil_int(x->db, sql, 0)) {
        struct strbuf when = {0};
        strbuf_put_utc(&when, sqlutil_int(x->db, "SELECT recv_ns FROM events ORDER BY id LIMIT 1", 0), 3);
        fprintf(stderr, PROG ": --conn %" PRId64 ": retention deleted its events (%" PRId64 " message%s; the oldest "
                "event %s keeps was received %s, after it connected): nothing to export\n", id, messages,
                cli_plural((uint64_t)messages), x->o->db_path, when.data ? when.data : "?");
        strbuf_free(&when);
    } else {
        fprintf(stderr, PROG ": --conn %" PRId64 ": none of its %" PRId64 " message%s was stored (filtered, or "
                "--sink discard): nothing to export\n", id, messages, cli_plural((uint64_t)messages));
    }
    return EXPORT_FAILED;
}

/* --conn names a connection the database has (a row, or events): an
 * empty export of a mistyped id would look like a quiet connection. */
static int check_conn(struct exporter *x)
{
    char sql[200];
    snprintf(sql, sizeof(sql), "SELECT EXISTS(SELECT 1 FROM connections WHERE id = %" PRId64 ")"
             " OR EXISTS(SELECT 1 FROM events WHERE conn_id = %" PRId64 ")", x->o->conn_id, x->o->conn_id);
    if (sqlutil_int(x->db, sql, 0))
        return check_conn_events(x);
    int64_t n = sqlutil_int(x->db, "SELECT count(*) FROM connections", 0);
    fprintf(stderr, PROG ": --conn %" PRId64 ": %s has no such connection", x->o->conn_id, x->o->db_path);
    if (n > 0)
        fprintf(stderr, " (its %" PRId64 " connection%s: ids %" PRId64 " to %" PRId64 ")", n, cli_plural((uint64_t)n),
                sqlutil_int(x->db, "SELECT min(id) FROM connections", 0),
                sqlutil_int(x->db, "SELECT max(id) FROM connections", 0));
    fprintf(stderr, "\n");
    return EXPORT_FAILED;
}

static int open_db(struct exporter *x)
{
    const char *path = x->o->db_path;
    char err[512];
    if (db_file_check_readable(path, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s\n", err);
        return EXPORT_FAILED;
    }
    if (sqlutil_open_reader(path, &x->db) != SQLITE_OK) {
        fprintf(stderr, PROG ": cannot open %s: %s\n", path, x->db ? sqlite3_errmsg(x->db) : "out of memory");
        return EXPORT_FAILED;
    }
    sqlite3_busy_timeout(x->db, 5000);
    /* One snapshot for the whole export, even while a daemon appends. */
    if (sqlite3_exec(x->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
        fprintf(stderr, PROG ": %s: %s\n", path, sqlite3_errmsg(x->db));
        return EXPORT_FAILED;
    }
    if (!sqlutil_has(x->db, "table", "events") || !sqlutil_has(x->db, "table", "connections")) {
        fprintf(stderr, PROG ": %s is not a seccheckd database (no events or connections table)\n", path);
        return EXPORT_FAILED;
    }
    return x->o->has_conn ? check_conn(x) : 0;
}

int export_main(int argc, char **argv)
{
    struct export_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? EXPORT_OK : rc;
    struct exporter x = {.o = &o};
    char err[256];
    if (event_redecoder_init(&x.redecoder, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s\n", err);
        return EXPORT_FAILED;
    }
    rc = open_db(&x);
    if (rc == 0)
        rc = strcmp(o.format, "ndjson") == 0 ? export_ndjson(&x) : export_trace(&x);
    if (x.db) {
        sqlite3_exec(x.db, "COMMIT", NULL, NULL, NULL);
        sqlite3_close(x.db);
    }
    event_redecoder_free(&x.redecoder);
    strbuf_free(&x.line);
    if (rc == 0 && x.skipped) {
        fprintf(stderr, PROG ": %" PRIu64 " packet%s could not be exported (above)\n", x.skipped,
                cli_plural(x.skipped));
        rc = EXPORT_FAILED;
    }
    if (rc == 0 && strcmp(o.format, "trace") == 0)
        fprintf(stderr, PROG ": %" PRIu64 " event%s of %" PRIu64 " connection%s written to %s\n", x.events,
                cli_plural(x.events), x.conns, cli_plural(x.conns), o.out);
    else if (rc == 0)
        fprintf(stderr, PROG ": %" PRIu64 " event%s written\n", x.events, cli_plural(x.events));
    return rc;
}
