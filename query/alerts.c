/* alerts.c - `seccheckd alerts`: the alerts table, read back for people.
 *
 * One shape for both places alerts live: a host's database (--db, read as
 * `seccheckd events` reads it, follow.h) and the central copy (--to, where
 * `seccheckd forward` ships them with host_id). Rows come in id order, a
 * few hundred per statement, each host's after the last one shown (a
 * cursor per host), so --follow prints each alert once, in the order it
 * committed, however late a host's batches arrive centrally.
 */
#include "alerts.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include "central.h"
#include "cli.h"
#include "clock.h"
#include "event_line.h"
#include "follow.h"
#include "host_id.h"
#include "json.h"
#include "rules.h"
#include "sqlutil.h"
#include "strbuf.h"

#define PROG "seccheckd alerts"
#define ROWS_PER_READ 512
#define CENTRAL_POLL_MS 1000            /* --follow --to: how often to ask the central server */
#define SINCE_MAX_S (36500ull * 86400)
#define RULE_WIDTH 32                   /* table columns, cut beyond */
#define CONTAINER_WIDTH 14
#define HOST_WIDTH 20
#define OUTPUT_MAX 400

enum { ALERTS_OK = 0, ALERTS_FAILED = 1, ALERTS_USAGE = 2, ALERTS_OUTPUT_GONE = 3 };

struct alerts_options {
    const char *db_path;
    const char *to_url;
    const char *host_id;            /* --to: one host (default: this host's id) */
    bool all_hosts;
    bool has_since;
    uint64_t since_s;
    bool has_priority;
    enum rules_priority priority;   /* that and above */
    const char *rule;
    const char *container;
    bool follow;
    bool json;
};

/* One alert as read back, from either place. */
struct alert_row {
    const char *host;               /* central only */
    int64_t id, time_ns;
    const char *rule, *priority, *container, *output, *output_fields, *tags;
    size_t output_len;
    uint64_t suppressed;            /* held back before it */
};

struct printer {
    const struct alerts_options *o;
    char hostname[256];             /* --db --json: the line's hostname */
    struct strbuf line, scratch;
    bool header_done;
    uint64_t printed;
};

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: seccheckd alerts (--db PATH | --to URL [--host-id ID | --all-hosts])\n"
            "                        [--since DURATION] [--priority LEVEL] [--rule NAME] [--container ID]\n"
            "                        [--follow] [--json]\n"
            "Prints the alerts the rules raised (seccheckd --rules), oldest first.\n"
            "\n"
            "  --db PATH          a host's database (only read; the daemon may be running)\n"
            "  --to URL           the central PostgreSQL that seccheckd forward ships to\n"
            "  --host-id ID       --to: this host's alerts [the id forward ships as: /etc/machine-id]\n"
            "  --all-hosts        --to: every host's, host by host\n"
            "  --since DURATION   only alerts raised in the last DURATION: 90, 90s, 15m, 12h, 7d\n"
            "  --priority LEVEL   only alerts of this priority and above: emergency, alert,\n"
            "                     critical, error, warning, notice, info(rmational), debug\n"
            "  --rule NAME        only this rule's alerts\n"
            "  --container ID     only this container's alerts\n"
            "  --follow, -f       then print new alerts as they commit, until interrupted;\n"
            "                     without --since, only new ones\n"
            "  --json             one line of Falco's JSON per alert (what --alerts-out wrote),\n"
            "                     for falcosidekick and other tools [an aligned table: time,\n"
            "                     priority, rule, container, output]\n"
            "  --help, -h         this text\n"
            "\n"
            "Exit status: 0 done (or --follow interrupted), 1 a runtime error (printed), 2 usage error.\n");
}

static int usage_error(const char *problem, const char *value)
{
    return cli_usage_error(PROG, problem, value);
}

/* 0, ALERTS_USAGE, or -1 after --help. */
static int parse_options(int argc, char **argv, struct alerts_options *o)
{
    static const struct option options[] = {
        {"db", required_argument, NULL, 'd'},        {"to", required_argument, NULL, 'T'},
        {"host-id", required_argument, NULL, 'H'},   {"all-hosts", no_argument, NULL, 'A'},
        {"since", required_argument, NULL, 's'},     {"priority", required_argument, NULL, 'p'},
        {"rule", required_argument, NULL, 'r'},      {"container", required_argument, NULL, 'c'},
        {"follow", no_argument, NULL, 'f'},          {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},            {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof(*o));
    int ch;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, CLI_GETOPT_QUIET "fh", options, NULL)) != -1) {
        switch (ch) {
        case 'd': o->db_path = optarg; break;
        case 'T': o->to_url = optarg; break;
        case 'H': o->host_id = optarg; break;
        case 'A': o->all_hosts = true; break;
        case 's':
            if (cli_parse_duration_s(optarg, SINCE_MAX_S, &o->since_s) != 0)
                return usage_error("--since: expected a duration like 90, 90s, 15m, 12h or 7d", optarg);
            o->has_since = true;
            break;
        case 'p':
            if (rules_priority_parse(optarg, &o->priority) != 0)
                return usage_error("--priority: expected emergency, alert, critical, error, warning, notice, "
                                   "info or debug", optarg);
            o->has_priority = true;
            break;
        case 'r': o->rule = optarg; break;
        case 'c': o->container = optarg; break;
        case 'f': o->follow = true; break;
        case 'j': o->json = true; break;
        case 'h': usage(stdout); return -1;
        default: cli_report_getopt_error(PROG, ch, argv); return ALERTS_USAGE;
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument", argv[optind]);
    if (!o->db_path == !o->to_url)
        return usage_error("give --db PATH (a host's database) or --to URL (the central copy)", NULL);
    if (o->db_path && (o->host_id || o->all_hosts))
        return usage_error("--host-id and --all-hosts go with --to", NULL);
    if (o->host_id && o->all_hosts)
        return usage_error("give --host-id or --all-hosts, not both", NULL);
    return 0;
}

/* " AND priority IN ('Emergency', ..., LEVEL)": the priority and above. */
static void priority_filter(struct strbuf *sql, const struct alerts_options *o)
{
    if (!o->has_priority)
        return;
    strbuf_puts(sql, " AND priority IN (");
    for (int p = 0; p <= (int)o->priority; p++)
        strbuf_printf(sql, "%s'%s'", p ? ", " : "", rules_priority_name((enum rules_priority)p));
    strbuf_putc(sql, ')');
}

/* ---- printing ---- */

/* The rendered text without the "HH:MM:SS.nnnnnnnnn: Priority " that the
 * table's columns already show. */
static void output_text(const struct alert_row *a, const char **text, size_t *len)
{
    *text = a->output;
    *len = a->output_len;
    size_t prefix = 20 + strlen(a->priority) + 1;
    if (*len > prefix && a->output[18] == ':' && a->output[19] == ' ' &&
        strncmp(a->output + 20, a->priority, strlen(a->priority)) == 0 && a->output[prefix - 1] == ' ') {
        *text += prefix;
        *len -= prefix;
    }
}

/* Characters a terminal shows for UTF-8 text (a cell's width). */
static size_t shown_width(const char *s, size_t len)
{
    size_t w = 0;
    for (size_t i = 0; i < len; i++)
        w += ((unsigned char)s[i] & 0xc0) != 0x80;
    return w;
}

/* Bytes of the longest start of s that shows at most width characters. */
static size_t fitting(const char *s, size_t len, size_t width)
{
    size_t i = 0;
    for (size_t w = 0; i < len; i++) {
        if (((unsigned char)s[i] & 0xc0) != 0x80 && w++ == width)
            break;
    }
    return i;
}

/* One column: escaped, cut to width with "..." when longer, padded. */
static void cell(struct printer *p, const char *text, size_t width)
{
    const char *t = text ? text : "-";
    strbuf_reset(&p->scratch);
    event_line_plain(&p->scratch, t, strlen(t), 4 * width);   /* escaped, and more than fits */
    size_t len = p->scratch.len;
    if (shown_width(p->scratch.data, len) > width) {
        strbuf_append(&p->line, p->scratch.data, fitting(p->scratch.data, len, width - 3));
        strbuf_puts(&p->line, "...  ");
        return;
    }
    strbuf_append(&p->line, p->scratch.data, len);
    for (size_t w = shown_width(p->scratch.data, len); w < width + 2; w++)
        strbuf_putc(&p->line, ' ');
}

static void table_header(struct printer *p)
{
    if (p->o->to_url && p->o->all_hosts)
        strbuf_printf(&p->line, "%-*s  ", HOST_WIDTH, "HOST");
    strbuf_printf(&p->line, "%-24s  %-13s  %-*s  %-*s  %s\n", "TIME (UTC)", "PRIORITY", RULE_WIDTH, "RULE",
                  CONTAINER_WIDTH, "CONTAINER", "OUTPUT");
}

static void table_row(struct printer *p, const struct alert_row *a)
{
    if (!p->header_done)
        table_header(p);
    p->header_done = true;
    if (p->o->to_url && p->o->all_hosts)
        cell(p, a->host, HOST_WIDTH);
    strbuf_put_utc(&p->line, a->time_ns, 3);
    strbuf_puts(&p->line, "  ");
    strbuf_printf(&p->line, "%-13s  ", a->priority);
    cell(p, a->rule, RULE_WIDTH);
    cell(p, a->container, CONTAINER_WIDTH);
    const char *text;
    size_t len;
    output_text(a, &text, &len);
    event_line_plain(&p->line, text, len, OUTPUT_MAX);
    if (a->suppressed)
        strbuf_printf(&p->line, " (and %" PRIu64 " held back before it)", a->suppressed);
    strbuf_putc(&p->line, '\n');
}

/* Falco's line, as --alerts-out wrote it; what a terminal would act on
 * written as \uNNNN (the same JSON). */
static void json_row(struct printer *p, const struct alert_row *a)
{
    strbuf_reset(&p->scratch);
    rules_alert_json(&p->scratch, a->host ? a->host : p->hostname, a->rule, a->priority, a->time_ns, a->output,
                     a->output_len, a->output_fields, a->tags, a->suppressed);
    event_line_json(&p->line, p->scratch.data ? p->scratch.data : "{}", p->scratch.len);
    strbuf_putc(&p->line, '\n');
}

/* 0, or ALERTS_FAILED / ALERTS_OUTPUT_GONE. */
static int print_row(struct printer *p, const struct alert_row *a)
{
    strbuf_reset(&p->line);
    if (p->o->json)
        json_row(p, a);
    else
        table_row(p, a);
    if (p->line.failed || p->scratch.failed) {
        fprintf(stderr, PROG ": out of memory rendering alert %" PRId64 "\n", a->id);
        return ALERTS_FAILED;
    }
    if (fwrite(p->line.data, 1, p->line.len, stdout) != p->line.len)
        return errno == EPIPE ? ALERTS_OUTPUT_GONE : ALERTS_FAILED;
    p->printed++;
    return 0;
}

static int flush_output(void)
{
    if (fflush(stdout) == 0)
        return 0;
    if (errno == EPIPE)
        return ALERTS_OUTPUT_GONE;
    fprintf(stderr, PROG ": writing to standard output: %s\n", strerror(errno));
    return ALERTS_FAILED;
}

/* ---- a host's database ---- */

struct local_reader {
    const struct alerts_options *o;
    sqlite3 *db;
    sqlite3_stmt *rows;
    struct follow follow;
    int64_t after;
};

static int local_prepare(struct local_reader *r)
{
    const struct alerts_options *o = r->o;
    struct strbuf sql = {0};
    strbuf_puts(&sql, "SELECT id, time_ns, rule, priority, container_id, output, output_fields, tags, suppressed"
                      " FROM alerts"
                      " WHERE id > ?1");
    if (o->has_since)
        strbuf_puts(&sql, " AND time_ns >= ?2");
    if (o->rule)
        strbuf_puts(&sql, " AND rule = ?3");
    if (o->container)
        strbuf_puts(&sql, " AND container_id = ?4");
    priority_filter(&sql, o);
    strbuf_printf(&sql, " ORDER BY id LIMIT %d", ROWS_PER_READ);
    int rc = sql.failed ? SQLITE_NOMEM : sqlite3_prepare_v2(r->db, sql.data, -1, &r->rows, NULL);
    strbuf_free(&sql);
    if (rc != SQLITE_OK) {
        fprintf(stderr, PROG ": %s: %s\n", o->db_path, sqlite3_errmsg(r->db));
        return ALERTS_FAILED;
    }
    if (o->has_since)
        sqlite3_bind_int64(r->rows, 2, realtime_ns() - (int64_t)o->since_s * 1000000000);
    if (o->rule)
        sqlite3_bind_text(r->rows, 3, o->rule, -1, SQLITE_STATIC);
    if (o->container)
        sqlite3_bind_text(r->rows, 4, o->container, -1, SQLITE_STATIC);
    return 0;
}

static const char *column_text(sqlite3_stmt *st, int col)
{
    return (const char *)sqlite3_column_text(st, col);
}

/* The next rows; *n says how many. */
static int local_print_next(struct local_reader *r, struct printer *p, int *n)
{
    sqlite3_bind_int64(r->rows, 1, r->after);
    int step, rc = 0;
    *n = 0;
    while (rc == 0 && (step = sqlite3_step(r->rows)) == SQLITE_ROW) {
        struct alert_row a = {
            .id = sqlite3_column_int64(r->rows, 0), .time_ns = sqlite3_column_int64(r->rows, 1),
            .rule = column_text(r->rows, 2), .priority = column_text(r->rows, 3),
            .container = column_text(r->rows, 4), .output = column_text(r->rows, 5),
            .output_len = (size_t)sqlite3_column_bytes(r->rows, 5), .output_fields = column_text(r->rows, 6),
            .tags = column_text(r->rows, 7), .suppressed = (uint64_t)sqlite3_column_int64(r->rows, 8)};
        r->after = a.id;
        if (!a.rule || !a.priority || !a.output || !a.output_fields || !a.tags) {
            fprintf(stderr, PROG ": alert %" PRId64 " has an empty column: not a row the daemon wrote\n", a.id);
            rc = ALERTS_FAILED;
        } else {
            rc = print_row(p, &a);
        }
        (*n)++;
    }
    if (rc == 0 && step != SQLITE_DONE) {
        fprintf(stderr, PROG ": reading alerts: %s\n", sqlite3_errmsg(r->db));
        rc = ALERTS_FAILED;
    }
    sqlite3_reset(r->rows);   /* ends the read transaction */
    return rc ? rc : flush_output();
}

static int run_local(const struct alerts_options *o, struct printer *p)
{
    struct local_reader r = {.o = o};
    int rc = follow_open_db(PROG, o->db_path, &r.db) != 0 ? ALERTS_FAILED : 0;
    if (rc == 0 && !sqlutil_has(r.db, "table", "alerts")) {
        fprintf(stderr, PROG ": %s has no alerts table: it was written by a seccheckd without rules (start this "
                "one on it, with --rules PATH, e.g. configs/rules/gvisor_rules.yaml)\n", o->db_path);
        rc = ALERTS_FAILED;
    }
    if (rc == 0 && o->follow && !o->has_since)
        r.after = sqlutil_int(r.db, "SELECT coalesce(max(id), 0) FROM alerts", 0);
    if (rc == 0)
        rc = local_prepare(&r);
    if (rc == 0 && follow_start(&r.follow, r.db, PROG) != 0)
        rc = ALERTS_FAILED;
    while (rc == 0 && !follow_stopped()) {
        int n;
        rc = local_print_next(&r, p, &n);
        if (rc != 0 || n == ROWS_PER_READ)
            continue;
        if (!o->follow)
            break;
        follow_wait(&r.follow);
    }
    sqlite3_finalize(r.rows);
    follow_end(&r.follow);
    sqlite3_close(r.db);
    return rc;
}

/* ---- the central copy ---- */

/* Where each host's alerts were read up to: a JSON object for the query
 * ({"host": last id}), grown as hosts appear. */
struct cursors {
    char **hosts;
    int64_t *last;
    size_t n, cap;
};

static int cursor_set(struct cursors *c, const char *host, int64_t id)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->hosts[i], host) == 0) {
            c->last[i] = id;
            return 0;
        }
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        char **h = realloc(c->hosts, cap * sizeof(*h));
        if (h)
            c->hosts = h;
        int64_t *l = h ? realloc(c->last, cap * sizeof(*l)) : NULL;
        if (!l)
            return -1;
        c->last = l;
        c->cap = cap;
    }
    if (!(c->hosts[c->n] = strdup(host)))
        return -1;
    c->last[c->n++] = id;
    return 0;
}

static void cursors_json(const struct cursors *c, struct strbuf *out)
{
    strbuf_reset(out);
    strbuf_putc(out, '{');
    for (size_t i = 0; i < c->n; i++) {
        if (i)
            strbuf_putc(out, ',');
        json_render_string(out, c->hosts[i], strlen(c->hosts[i]));
        strbuf_putc(out, ':');
        strbuf_put_i64(out, c->last[i]);
    }
    strbuf_putc(out, '}');
}

static void cursors_free(struct cursors *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->hosts[i]);
    free(c->hosts);
    free(c->last);
}

struct central_reader {
    const struct alerts_options *o;
    PGconn *pg;
    char host[HOST_ID_MAX + 1];     /* one host, or "" for all */
    struct cursors cursors;
    struct strbuf sql, cursor_json;
    char since[24];
};

/* $1 the cursors, $2 the host ("" every one), $3 since, $4 rule, $5 container. */
static void central_sql(struct central_reader *r)
{
    const struct alerts_options *o = r->o;
    struct strbuf *sql = &r->sql;
    strbuf_puts(sql, "SELECT a.host_id, a.id, a.time_ns, a.rule, a.priority, a.container_id, a.output,"
                     " a.output_fields::text, a.tags::text, a.suppressed FROM alerts a"
                     " LEFT JOIN jsonb_each_text($1::jsonb) c ON c.key = a.host_id"
                     " WHERE a.id > coalesce(c.value::bigint, 0) AND ($2 = '' OR a.host_id = $2)"
                     " AND ($3::bigint IS NULL OR a.time_ns >= $3::bigint)"
                     " AND ($4::text IS NULL OR a.rule = $4) AND ($5::text IS NULL OR a.container_id = $5)");
    priority_filter(sql, o);
    strbuf_printf(sql, " ORDER BY a.host_id, a.id LIMIT %d", ROWS_PER_READ);
}

/* Without --since, --follow starts after what is there now. */
static int central_start_at_end(struct central_reader *r)
{
    const char *v[] = {r->host};
    PGresult *res = PQexecParams(r->pg, "SELECT host_id, max(id) FROM alerts WHERE $1 = '' OR host_id = $1"
                                        " GROUP BY host_id", 1, NULL, v, NULL, NULL, 0);
    int rc = PQresultStatus(res) == PGRES_TUPLES_OK ? 0 : ALERTS_FAILED;
    for (int i = 0; rc == 0 && i < PQntuples(res); i++)
        if (cursor_set(&r->cursors, PQgetvalue(res, i, 0), strtoll(PQgetvalue(res, i, 1), NULL, 10)) != 0)
            rc = ALERTS_FAILED;
    if (rc != 0) {
        char line[512];
        central_message_line(PQerrorMessage(r->pg), line, sizeof(line));
        fprintf(stderr, PROG ": reading the central alerts: %s\n", line);
    }
    PQclear(res);
    return rc;
}

static int central_print_next(struct central_reader *r, struct printer *p, int *n)
{
    const struct alerts_options *o = r->o;
    cursors_json(&r->cursors, &r->cursor_json);
    if (r->cursor_json.failed)
        return ALERTS_FAILED;
    const char *v[] = {r->cursor_json.data, r->host, o->has_since ? r->since : NULL, o->rule, o->container};
    PGresult *res = PQexecParams(r->pg, r->sql.data, 5, NULL, v, NULL, NULL, 0);
    *n = 0;
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        char line[512];
        central_message_line(PQresultErrorMessage(res), line, sizeof(line));
        fprintf(stderr, PROG ": reading the central alerts: %s\n", line);
        PQclear(res);
        return ALERTS_FAILED;
    }
    int rc = 0;
    for (int i = 0; rc == 0 && i < PQntuples(res); i++) {
        struct alert_row a = {
            .host = PQgetvalue(res, i, 0), .id = strtoll(PQgetvalue(res, i, 1), NULL, 10),
            .time_ns = strtoll(PQgetvalue(res, i, 2), NULL, 10), .rule = PQgetvalue(res, i, 3),
            .priority = PQgetvalue(res, i, 4), .container = PQgetisnull(res, i, 5) ? NULL : PQgetvalue(res, i, 5),
            .output = PQgetvalue(res, i, 6), .output_len = (size_t)PQgetlength(res, i, 6),
            .output_fields = PQgetvalue(res, i, 7), .tags = PQgetvalue(res, i, 8),
            .suppressed = strtoull(PQgetvalue(res, i, 9), NULL, 10)};
        rc = cursor_set(&r->cursors, a.host, a.id) != 0 ? ALERTS_FAILED : print_row(p, &a);
        (*n)++;
    }
    PQclear(res);
    return rc ? rc : flush_output();
}

/* The settings --to takes: 0, or ALERTS_USAGE after saying why. */
static int central_settings(struct central_reader *r)
{
    char err[512];
    if (!r->o->all_hosts && host_id_resolve(r->o->host_id, r->host, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": --host-id: %s\n", err);
        return ALERTS_USAGE;
    }
    if (central_check_url(r->o->to_url, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": --to: %s\n", err);
        return ALERTS_USAGE;
    }
    return 0;
}

/* Connected, with the alerts table there: 0; else why in err, and
 * *lasting when waiting cannot help (a refused password...). */
static int central_ready(struct central_reader *r, bool *lasting, char *err, size_t errlen)
{
    *lasting = false;
    if (!r->pg && !(r->pg = central_connect(r->o->to_url, lasting, err, errlen)))
        return -1;
    PGresult *res = PQexec(r->pg, "SELECT to_regclass('alerts') IS NOT NULL");
    bool ok = PQresultStatus(res) == PGRES_TUPLES_OK, has = ok && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    PQclear(res);
    if (has)
        return 0;
    if (ok)
        snprintf(err, errlen, "the central database has no alerts table: no seccheckd forward of this version has "
                 "shipped to it yet");
    else
        central_message_line(PQerrorMessage(r->pg), err, errlen);
    return -1;
}

/* --follow outlives the central server's outages: a lost connection or a
 * table not made yet is waited out, said once each time. */
static void central_wait(struct central_reader *r, const char *why, bool *said)
{
    if (!*said)
        fprintf(stderr, PROG ": %s; waiting (--follow)\n", why);
    *said = true;
    if (r->pg && PQstatus(r->pg) != CONNECTION_OK) {
        PQfinish(r->pg);
        r->pg = NULL;
    }
    follow_sleep_ms(CENTRAL_POLL_MS);
}

static int run_central(const struct alerts_options *o, struct printer *p)
{
    struct central_reader r = {.o = o};
    if (o->has_since)
        snprintf(r.since, sizeof(r.since), "%" PRId64, realtime_ns() - (int64_t)o->since_s * 1000000000);
    int rc = central_settings(&r);
    if (rc == 0) {
        central_sql(&r);
        rc = r.sql.failed ? ALERTS_FAILED : 0;
    }
    bool started = false, waiting = false, lasting;
    char err[512];
    while (rc == 0 && !follow_stopped()) {
        if (central_ready(&r, &lasting, err, sizeof(err)) != 0) {
            if (!o->follow || lasting) {
                fprintf(stderr, PROG ": %s\n", err);
                rc = ALERTS_FAILED;
            } else {
                central_wait(&r, err, &waiting);
            }
            started = true;   /* nothing was there when it started: every alert that comes is new */
            continue;
        }
        if (waiting)
            fprintf(stderr, PROG ": reading the central alerts again\n");
        waiting = false;
        if (!started && o->follow && !o->has_since && (rc = central_start_at_end(&r)) != 0)
            break;
        started = true;
        int n;
        rc = central_print_next(&r, p, &n);
        if (rc == ALERTS_FAILED && o->follow && PQstatus(r.pg) != CONNECTION_OK) {
            central_wait(&r, "lost the connection to the central server", &waiting);
            rc = 0;
            continue;
        }
        if (rc != 0 || n == ROWS_PER_READ)
            continue;
        if (!o->follow)
            break;
        follow_sleep_ms(CENTRAL_POLL_MS);
    }
    if (r.pg)
        PQfinish(r.pg);
    cursors_free(&r.cursors);
    strbuf_free(&r.sql);
    strbuf_free(&r.cursor_json);
    return rc;
}

/* ---- the command ---- */

int alerts_main(int argc, char **argv)
{
    struct alerts_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? ALERTS_OK : rc;
    struct printer p = {.o = &o};
    if (gethostname(p.hostname, sizeof(p.hostname) - 1) != 0)
        snprintf(p.hostname, sizeof(p.hostname), "unknown");
    struct follow_signals signals;
    follow_catch_signals(&signals);
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    rc = o.db_path ? run_local(&o, &p) : run_central(&o, &p);
    if (rc == 0 && !p.printed && !o.follow)   /* say why, on stderr: the output stays empty */
        fprintf(stderr, PROG ": no alerts in %s%s (alerts come from rules: seccheckd --rules PATH, e.g. "
                "configs/rules/gvisor_rules.yaml)\n", o.db_path ? o.db_path : "the central copy",
                o.has_since || o.has_priority || o.rule || o.container ? " that pass the filters" : "");
    strbuf_free(&p.line);
    strbuf_free(&p.scratch);
    follow_restore_signals(&signals);
    return rc == ALERTS_OUTPUT_GONE ? ALERTS_OK : rc;
}
