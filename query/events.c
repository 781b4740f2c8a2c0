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
#include <unistd.h>
#include <sqlite3.h>

#include "arena.h"
#include "cli.h"
#include "clock.h"
#include "container_filter.h"
#include "decode.h"
#include "event_line.h"
#include "events_central.h"
#include "events_options.h"
#include "ingest_filter.h"
#include "follow.h"
#include "sqlutil.h"
#include "strbuf.h"
#include "term_color.h"
#include "wire.h"

#define PROG "seccheckd events"
#define ROWS_PER_READ 512   /* rows per statement: its read transaction stays short */
#define SINCE_MAX_S (36500ull * 86400)


struct reader {
    const struct events_options *o;
    sqlite3 *db;
    sqlite3_stmt *rows;
    struct follow follow;
    struct decoder decoder;
    struct arena arena;           /* one row's decoded message at a time */
    struct strbuf line;
    int64_t after;                /* the last id read */
    int64_t until;                /* without --follow: the last id when it started */
    int64_t since_ns;             /* --since: received at or after this */
    uint64_t printed;
    bool color;                   /* compact lines to a terminal: exec, connect, open coloured */
};

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: seccheckd events (--db PATH | --to URL [--host-id ID]) [--follow] [-n N] [--container ID]\n"
            "                        [--type NAME] [--process NAME]\n"
            "                        [--pod NAME] [--namespace NAME] [--since DURATION] [-o compact|json]\n"
            "                        [--color auto|always|never]\n"
            "Prints the events of a seccheckd database, one line each, oldest first.\n"
            "\n"
            "  --db PATH          the database (only read; the daemon may be running)\n"
            "  --to URL           the central PostgreSQL that seccheckd forward ships to (again for\n"
            "                     each partition's database: the host is read where it is)\n"
            "  --host-id ID       --to: this host's events [the id forward ships as: /etc/machine-id]\n"
            "  --follow, -f       then print new events as the daemon commits them, until\n"
            "                     interrupted (the last 10 stored first, as tail -f does)\n"
            "  -n, --lines N      the last N stored events that pass the filters [all;\n"
            "                     --follow: 10; 0: none, only new ones]\n"
            "  --container ID     only this container's events, by id or name (seccheckd containers)\n"
            "  --pod NAME         only the events of this pod's containers\n"
            "  --namespace NAME   only the events of this namespace's containers\n"
            "  --type NAME        only these message types, names or numbers, comma-separated\n"
            "                     (seccheckd types lists them)\n"
            "  --process NAME     only events of processes of this name\n"
            "  --since DURATION   only events received in the last DURATION: 90, 90s, 15m, 12h, 7d\n"
            "  -o compact         one line per event: time, container, process[pid], what\n"
            "                     happened, = result on a syscall's exit [default]\n"
            "  -o json            one JSON object per event: events_full's row, the whole\n"
            "                     message included\n"
            "  --color WHEN       colour exec, connect and open in compact lines: auto (when\n"
            "                     standard output is a terminal and NO_COLOR is not set),\n"
            "                     always, never [auto]\n"
            "  --help, -h         this text\n"
            "\n"
            "Exit status: 0 done (or --follow interrupted), 1 a runtime error (printed), 2 usage error.\n");
}

static int usage_error(const char *problem, const char *value)
{
    return cli_usage_error(PROG, problem, value);
}

/* 0, EVENTS_USAGE, or -1 after --help. */
static int parse_options(int argc, char **argv, struct events_options *o)
{
    static const struct option options[] = {
        {"db", required_argument, NULL, 'd'},        {"follow", no_argument, NULL, 'f'},
        {"container", required_argument, NULL, 'c'}, {"type", required_argument, NULL, 't'},
        {"process", required_argument, NULL, 'p'},   {"since", required_argument, NULL, 's'},
        {"output", required_argument, NULL, 'o'},    {"help", no_argument, NULL, 'h'},
        {"pod", required_argument, NULL, 'P'},       {"namespace", required_argument, NULL, 'N'},
        {"lines", required_argument, NULL, 'n'},      {"color", required_argument, NULL, 'C'},
        {"to", required_argument, NULL, 'T'},        {"host-id", required_argument, NULL, 'H'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof(*o));
    char err[256];
    int ch;
    optind = 0;   /* a fresh getopt scan, whatever ran before */
    opterr = 0;
    while ((ch = getopt_long(argc, argv, CLI_GETOPT_QUIET "fo:n:h", options, NULL)) != -1) {
        switch (ch) {
        case 'd': o->db_path = optarg; break;
        case 'T':
            if (central_urls_add(&o->to, optarg, PROG) != 0)
                return EVENTS_USAGE;
            o->to_url = o->to.url[0];
            break;
        case 'H': o->host_id = optarg; break;
        case 'f': o->follow = true; break;
        case 'c': o->container = optarg; break;
        case 'P': o->pod = optarg; break;
        case 'N': o->ns = optarg; break;
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
        case 'n':
            if (cli_parse_uint(PROG, "lines", optarg, 0, 1000000000, &o->lines) != 0)
                return EVENTS_USAGE;
            o->has_lines = true;
            break;
        case 'C':
            if (term_color_parse(optarg, &o->color) != 0)
                return usage_error("--color: expected auto, always or never", optarg);
            break;
        case 'h': usage(stdout); return -1;
        default: cli_report_getopt_error(PROG, ch, argv); return EVENTS_USAGE;
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument", argv[optind]);
    if (!o->db_path && !o->to_url)
        return usage_error("--db PATH is required (or --to URL, the central copy)", NULL);
    if (o->db_path && o->to_url)
        return usage_error("give --db PATH or --to URL, not both", NULL);
    if (o->db_path && o->host_id)
        return usage_error("--host-id goes with --to", NULL);
    return 0;
}

/* ---- the database ---- */

static int open_db(struct reader *r)
{
    if (follow_open_db(PROG, r->o->db_path, &r->db) != 0)
        return EVENTS_FAILED;
    if (r->o->json && !sqlutil_has(r->db, "view", "events_full")) {
        fprintf(stderr, PROG ": %s has no events_full view (schema version 1): start seccheckd on it once to "
                "upgrade it, or use -o compact\n", r->o->db_path);
        return EVENTS_FAILED;
    }
    return 0;
}

/* A statement over events e: head, "WHERE e.id > ?1 AND e.id <= ?2", the
 * filters of o (?4 process, ?5 since, ?6 to ?8 container, pod, namespace,
 * the types inline), tail; ?9 and up are the tail's.
 * 0, or EVENTS_FAILED said. */
static int filtered_statement(struct reader *r, const struct events_options *o, const char *head, const char *tail,
                              sqlite3_stmt **st)
{
    struct strbuf sql = {0};
    strbuf_puts(&sql, head);
    strbuf_puts(&sql, " WHERE e.id > ?1 AND e.id <= ?2");
    struct container_filter cf = {.container = o->container, .pod = o->pod, .ns = o->ns};
    struct container_names names;
    container_names_probe(r->db, &names);
    container_filter_sql(&sql, &cf, &names, "e.container_id", "e.conn_id", 6);
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
        strbuf_puts(&sql, *sep == ' ' ? " AND 0" : ")");   /* no type passes */
    }
    strbuf_puts(&sql, tail);
    int rc = sql.failed ? SQLITE_NOMEM : sqlite3_prepare_v2(r->db, sql.data, -1, st, NULL);
    strbuf_free(&sql);
    if (rc != SQLITE_OK) {
        fprintf(stderr, PROG ": %s: %s\n", r->o->db_path, sqlite3_errmsg(r->db));
        return EVENTS_FAILED;
    }
    container_filter_bind(*st, &cf, 6);
    if (o->process)
        sqlite3_bind_text(*st, 4, o->process, -1, SQLITE_STATIC);
    if (o->has_since)
        sqlite3_bind_int64(*st, 5, r->since_ns);
    return 0;
}

#define JSON_HEAD                                                                                                \
    "SELECT e.id, json_object('id', f.id, 'conn_id', f.conn_id, 'recv_ns', f.recv_ns, 'msg_type', f.msg_type,"  \
    " 'type_name', f.type_name, 'dropped_count', f.dropped_count, 'decode_error', f.decode_error, 'message',"   \
    " json(f.message)) FROM events e JOIN events_full f ON f.id = e.id"
/* The statement that reads the next rows after ?1 up to ?2, filtered:
 * JSON, or the compact line's columns with the container's names (or its
 * foreign label) last (container_filter.h; NULL without container_info). */
static int prepare_rows(struct reader *r)
{
    char tail[64];
    snprintf(tail, sizeof(tail), " ORDER BY e.id LIMIT %d", ROWS_PER_READ);
    if (r->o->json)
        return filtered_statement(r, r->o, JSON_HEAD, tail, &r->rows);
    struct container_names names;
    container_names_probe(r->db, &names);
    struct strbuf head = {0};
    strbuf_puts(&head, "SELECT e.id, e.recv_ns, e.msg_type, e.raw, ");
    container_names_label(&head, &names, "e.container_id");
    strbuf_puts(&head, " FROM events e");
    container_names_join(&head, &names, "e.container_id", "e.conn_id");
    int rc = head.failed ? EVENTS_FAILED : filtered_statement(r, r->o, head.data, tail, &r->rows);
    if (head.failed)
        fprintf(stderr, PROG ": out of memory\n");
    strbuf_free(&head);
    return rc;
}

/* -n N: the id before the last N rows that pass the filters between
 * r->after and r->until (r->after when there are fewer). */
static int64_t before_last(struct reader *r, uint64_t n)
{
    if (n == 0)
        return r->until;
    sqlite3_stmt *st;
    int64_t id = r->after;
    /* ?9: after the filters' own (the container filter's are ?6 to ?8:
     * an offset bound at ?6 made --container match nothing here, and -n
     * and --follow printed every stored event) */
    if (filtered_statement(r, r->o, "SELECT e.id FROM events e", " ORDER BY e.id DESC LIMIT 1 OFFSET ?9", &st) != 0)
        return id;
    sqlite3_bind_int64(st, 1, r->after);
    sqlite3_bind_int64(st, 2, r->until);
    sqlite3_bind_int64(st, 9, (int64_t)(n - 1));
    if (sqlite3_step(st) == SQLITE_ROW)
        id = sqlite3_column_int64(st, 0) - 1;
    sqlite3_finalize(st);
    return id;
}

/* Whether any event between r->after and r->until passes f's filters. */
static bool any_passes(struct reader *r, const struct events_options *f)
{
    sqlite3_stmt *st;
    if (filtered_statement(r, f, "SELECT 1 FROM events e", " LIMIT 1", &st) != 0)
        return true;
    sqlite3_bind_int64(st, 1, INT64_MIN);
    sqlite3_bind_int64(st, 2, INT64_MAX);
    bool yes = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return yes;
}

/* Nothing was printed: says why on stderr (the output stays empty), each
 * filter that alone matches no stored event named. */
static void explain_nothing(struct reader *r)
{
    const struct events_options *o = r->o;
    struct events_options none = *o;
    none.container = none.pod = none.ns = none.process = none.types = NULL;
    none.has_since = false;
    bool filtered = o->container || o->pod || o->ns || o->process || o->types || o->has_since;
    if (!any_passes(r, &none)) {
        fprintf(stderr, PROG ": %s holds no events yet%s\n", o->db_path, o->follow ? "; waiting for them" : "");
        return;
    }
    if (!filtered)
        return;
    fprintf(stderr, PROG ": no stored event passes the filters%s\n", o->follow ? "; waiting for new ones" : "");
    struct events_options f = none;
    f.container = o->container;
    if (o->container && !any_passes(r, &f))
        event_line_say_option("--container", o->container,
                              "no event of that container (seccheckd containers lists them)");
    f = none;
    f.pod = o->pod;
    if (o->pod && !any_passes(r, &f))
        event_line_say_option("--pod", o->pod, "no event of that pod's containers (seccheckd containers lists them)");
    f = none;
    f.ns = o->ns;
    if (o->ns && !any_passes(r, &f))
        event_line_say_option("--namespace", o->ns,
                              "no event of that namespace's containers (seccheckd containers lists them)");
    f = none;
    f.process = o->process;
    if (o->process && !any_passes(r, &f))
        event_line_say_option("--process", o->process, "no event of a process of that name");
    f = none;
    f.types = o->types;
    f.type_filter = o->type_filter;
    if (o->types && !any_passes(r, &f))
        event_line_say_option("--type", o->types, "no event of those types");
    f = none;
    f.has_since = o->has_since;
    if (o->has_since && !any_passes(r, &f))
        fprintf(stderr, "  --since: no event received in that time\n");
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
    const char *names = (const char *)sqlite3_column_text(r->rows, 4);
    event_line_render_named(&r->line, &ev, r->color, names, names ? (size_t)sqlite3_column_bytes(r->rows, 4) : 0);
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
        r->printed++;
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

/* The newest receive time in the database open: where following the file
 * that replaces it goes on from. */
static int64_t newest_received(sqlite3 *db)
{
    return sqlutil_int(db, "SELECT coalesce(max(recv_ns), -9223372036854775807) FROM events", INT64_MIN + 1);
}

/* The file at the path was deleted or replaced: what the old one still
 * holds is printed, then the new one is read from the events received
 * after the last of those (a restored copy's older ones are history, and
 * the batch the daemon writes again into the new file is not shown twice). */
static int follow_moved(struct reader *r)
{
    int n, rc;
    while ((rc = print_next(r, &n)) == 0 && n == ROWS_PER_READ)
        ;
    if (rc != 0)
        return rc;
    int64_t newest = newest_received(r->db);
    sqlite3_finalize(r->rows);
    r->rows = NULL;
    if (follow_reopen(&r->follow, &r->db) != 0)
        return 0;   /* stopped */
    r->after = follow_last_id_before(r->db, newest < INT64_MAX ? newest + 1 : newest);
    return prepare_rows(r);
}

static int run(struct reader *r)
{
    const struct events_options *o = r->o;
    r->after = o->has_since ? follow_last_id_before(r->db, r->since_ns) : 0;
    r->until = sqlutil_int(r->db, "SELECT max(id) FROM events", 0);
    uint64_t lines = o->has_lines ? o->lines : 10;
    if (o->follow || o->has_lines)   /* the last N first, as tail does */
        r->after = before_last(r, lines);
    if (o->follow)
        r->until = INT64_MAX;
    int rc = prepare_rows(r);
    if (rc == 0 && follow_start(&r->follow, r->db, PROG, o->db_path) != 0)
        rc = EVENTS_FAILED;
    bool stored_done = false;
    while (rc == 0 && !follow_stopped()) {
        int n;
        rc = print_next(r, &n);
        if (rc != 0 || n == ROWS_PER_READ)
            continue;
        if (!stored_done && r->printed == 0 && lines > 0)
            explain_nothing(r);
        stored_done = true;
        if (!o->follow)
            break;
        if (follow_wait(&r->follow) == FOLLOW_MOVED)
            rc = follow_moved(r);
    }
    return rc == EVENTS_OUTPUT_GONE ? 0 : rc;
}

/* ---- the command ---- */

int events_main(int argc, char **argv)
{
    struct events_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != 0) {
        filter_free(&o.type_filter);
        return rc < 0 ? EVENTS_OK : rc;
    }
    struct reader r = {.o = &o, .color = !o.json && term_color_wanted(o.color, STDOUT_FILENO)};
    if (o.has_since)
        r.since_ns = realtime_ns() - (int64_t)o.since_s * 1000000000;
    decoder_init(&r.decoder);
    /* No limit of its own: decode_event caps each unpack by the packet's
     * size, exactly as it did in the daemon. */
    arena_init(&r.arena, 64 * 1024, SIZE_MAX);
    struct follow_signals signals;
    follow_catch_signals(&signals);
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    if (o.to_url) {
        rc = events_central_run(&o, r.since_ns, r.color);
        goto out;
    }
    rc = open_db(&r);
    if (rc == 0)
        rc = run(&r);
out:
    sqlite3_finalize(r.rows);
    follow_end(&r.follow);
    sqlite3_close(r.db);
    arena_free(&r.arena);
    strbuf_free(&r.line);
    filter_free(&o.type_filter);
    follow_restore_signals(&signals);
    return rc;
}
