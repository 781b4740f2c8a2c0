/* events_central.c - `seccheckd events --to` (events_central.h).
 *
 * The same steps as the local reader: a few hundred rows per statement in
 * id order, each compact line decoded again from the row's raw packet as
 * the daemon decoded it, so the central copy prints the host's lines byte
 * for byte. Results come in binary (integers and bytea as they are stored:
 * no hex to undo).
 */
#include "events_central.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libpq-fe.h>

#include "arena.h"
#include "central.h"
#include "decode.h"
#include "container_filter.h"
#include "event_line.h"
#include "follow.h"
#include "host_id.h"
#include "strbuf.h"
#include "wire.h"

#define PROG "seccheckd events"
#define ROWS_PER_READ 512
#define POLL_MS 1000              /* --follow: how often to ask the central server */
#define NPARAMS 8

struct central_events {
    const struct events_options *o;
    PGconn *pg;
    char host[HOST_ID_MAX + 1];
    char since[24];
    bool has_names;               /* the central schema has container_names */
    bool color;
    struct decoder decoder;
    struct arena arena;
    struct strbuf line;
    int64_t after, until;
    uint64_t printed;
};

static void say_pg_error(const char *what, const char *msg)
{
    char line[512];
    central_message_line(msg, line, sizeof(line));
    fprintf(stderr, PROG ": %s: %s\n", what, line);
}

/* The statement over events e of one host: head, "e.id > $2 AND e.id <=
 * $3", the filters ($4 container id or name, $5 pod, $6 namespace, $7
 * process, $8 since; the types inline), tail. */
static void filtered_sql(const struct central_events *c, struct strbuf *sql, const char *head, const char *tail)
{
    const struct events_options *o = c->o;
    strbuf_puts(sql, head);
    if (c->has_names)   /* the names of the event's own sandbox's container (container_filter.h) */
        central_names_join(sql, "e.host_id", "e.container_id", "e.conn_id");
    strbuf_puts(sql, " WHERE e.host_id = $1 AND e.id > $2::bigint AND e.id <= $3::bigint"
                     " AND ($7::text IS NULL OR e.process_name = $7) AND ($8::bigint IS NULL OR e.recv_ns >= $8::bigint)");
    /* names are this host's only: a container id is unique per host */
    if (c->has_names)
        strbuf_puts(sql, " AND ($4::text IS NULL OR e.container_id = $4 OR n.container_name = $4)"
                         " AND ($5::text IS NULL OR n.pod_name = $5) AND ($6::text IS NULL OR n.pod_namespace = $6)");
    else
        strbuf_puts(sql, " AND ($4::text IS NULL OR e.container_id = $4) AND $5::text IS NULL AND $6::text IS NULL");
    if (o->types) {
        const char *sep = " AND e.msg_type IN (";
        for (unsigned t = 0; t < 65536; t++)
            if (filter_type_passes(&o->type_filter, (uint16_t)t)) {
                strbuf_printf(sql, "%s%u", sep, t);
                sep = ",";
            }
        strbuf_puts(sql, *sep == ' ' ? " AND false" : ")");
    }
    strbuf_puts(sql, tail);
}

/* Runs a filtered statement over (after, until]; binary results. */
static PGresult *filtered_query(struct central_events *c, const char *head, const char *tail, int64_t after,
                                int64_t until)
{
    const struct events_options *o = c->o;
    struct strbuf sql = {0};
    filtered_sql(c, &sql, head, tail);
    char lo[24], hi[24];
    snprintf(lo, sizeof(lo), "%" PRId64, after);
    snprintf(hi, sizeof(hi), "%" PRId64, until);
    const char *v[NPARAMS] = {c->host, lo, hi, o->container, o->pod, o->ns, o->process, o->has_since ? c->since : NULL};
    PGresult *res = sql.failed ? NULL : PQexecParams(c->pg, sql.data, NPARAMS, NULL, v, NULL, NULL, 1);
    strbuf_free(&sql);
    return res;
}

static int64_t int8_at(PGresult *res, int row, int col)
{
    if (PQgetisnull(res, row, col) || PQgetlength(res, row, col) != 8)
        return 0;
    const unsigned char *p = (const unsigned char *)PQgetvalue(res, row, col);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return (int64_t)v;
}

/* One value of the host: "SELECT max(id) ..." and the like; fallback when none. */
static int64_t host_scalar(struct central_events *c, const char *sql, int64_t fallback)
{
    const char *v[] = {c->host};
    PGresult *res = PQexecParams(c->pg, sql, 1, NULL, v, NULL, NULL, 1);
    int64_t n = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 && !PQgetisnull(res, 0, 0)
                    ? int8_at(res, 0, 0)
                    : fallback;
    PQclear(res);
    return n;
}

/* The compact line of a row (id, recv_ns, msg_type, raw), decoded again. */
static void render_compact(struct central_events *c, PGresult *res, int row)
{
    const uint8_t *raw = (const uint8_t *)PQgetvalue(res, row, 3);
    size_t len = (size_t)PQgetlength(res, row, 3);
    struct wire_header h;
    struct event ev;
    arena_reset(&c->arena);
    memset(&ev, 0, sizeof(ev));
    if (!PQgetisnull(res, row, 3) && wire_header_parse(raw, len, &h) == WIRE_OK) {
        decode_event(&c->decoder, &c->arena, &h, raw, len, &ev);
    } else {   /* never stored by a daemon: an edited row */
        ev.raw_len = (uint32_t)len;
        ev.header.message_type = (uint16_t)int8_at(res, row, 2);
        ev.status = DECODE_BAD_PAYLOAD;
    }
    ev.recv_ns = int8_at(res, row, 1);
    bool named = !PQgetisnull(res, row, 4);
    event_line_render_named(&c->line, &ev, c->color, named ? PQgetvalue(res, row, 4) : NULL,
                            named ? (size_t)PQgetlength(res, row, 4) : 0);
}

/* The names as --db prints them, where the central schema has them
 * (filtered_sql joins container_names n then). */
#define COMPACT_HEAD "SELECT e.id, e.recv_ns, e.msg_type, e.raw, NULL FROM events e"
#define COMPACT_NAMED_HEAD                                                                                       \
    "SELECT e.id, e.recv_ns, e.msg_type, e.raw, " CENTRAL_NAMES_LABEL_SQL("e.host_id", "e.container_id")          \
    " FROM events e"
#define JSON_HEAD                                                                                                \
    "SELECT e.id, json_build_object('id', f.id, 'conn_id', f.conn_id, 'recv_ns', f.recv_ns, 'msg_type',"        \
    " f.msg_type, 'type_name', f.type_name, 'dropped_count', f.dropped_count, 'decode_error', f.decode_error,"  \
    " 'message', f.message)::text FROM events e JOIN events_full f ON f.host_id = e.host_id AND f.id = e.id"

/* The next rows; *n says how many. */
static int print_next(struct central_events *c, int *n)
{
    char tail[64];
    snprintf(tail, sizeof(tail), " ORDER BY e.id LIMIT %d", ROWS_PER_READ);
    const char *head = c->o->json ? JSON_HEAD : c->has_names ? COMPACT_NAMED_HEAD : COMPACT_HEAD;
    PGresult *res = filtered_query(c, head, tail, c->after, c->until);
    *n = 0;
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        say_pg_error("reading the central events", res ? PQresultErrorMessage(res) : "out of memory");
        PQclear(res);
        return EVENTS_FAILED;
    }
    int rc = 0;
    for (int i = 0; rc == 0 && i < PQntuples(res); i++) {
        c->after = int8_at(res, i, 0);
        strbuf_reset(&c->line);
        if (c->o->json) {
            event_line_json(&c->line, PQgetvalue(res, i, 1), (size_t)PQgetlength(res, i, 1));
            strbuf_putc(&c->line, '\n');
        } else {
            render_compact(c, res, i);
        }
        if (c->line.failed) {
            fprintf(stderr, PROG ": out of memory rendering event %" PRId64 "\n", c->after);
            rc = EVENTS_FAILED;
        } else if (fwrite(c->line.data, 1, c->line.len, stdout) != c->line.len) {
            rc = errno == EPIPE ? EVENTS_OUTPUT_GONE : EVENTS_FAILED;
        }
        c->printed++;
        (*n)++;
    }
    PQclear(res);
    if (rc == 0 && fflush(stdout) != 0)
        rc = errno == EPIPE ? EVENTS_OUTPUT_GONE : EVENTS_FAILED;
    return rc;
}

/* -n N: the id before the last N rows that pass the filters (after when fewer). */
static int64_t before_last(struct central_events *c, uint64_t n)
{
    if (n == 0)
        return c->until;
    char tail[64];
    snprintf(tail, sizeof(tail), " ORDER BY e.id DESC LIMIT 1 OFFSET %" PRIu64, n - 1);
    PGresult *res = filtered_query(c, "SELECT e.id FROM events e", tail, c->after, c->until);
    int64_t id = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 ? int8_at(res, 0, 0) - 1 : c->after;
    PQclear(res);
    return id;
}

/* Nothing printed: why, on stderr (the output stays empty). */
static void explain_nothing(struct central_events *c)
{
    struct strbuf shown = {0};
    event_line_plain(&shown, c->host, strlen(c->host), 2 * HOST_ID_MAX);
    const char *host = shown.data && !shown.failed ? shown.data : "?";
    if (host_scalar(c, "SELECT count(*) FROM events WHERE host_id = $1", 0) == 0)
        fprintf(stderr, PROG ": the central copy holds no events of host %s%s\n", host,
                c->o->follow ? "; waiting for them" : " (seccheckd forward ships them; --host-id names another)");
    else
        fprintf(stderr, PROG ": no event of host %s in the central copy passes the filters%s\n", host,
                c->o->follow ? "; waiting for new ones" : "");
    strbuf_free(&shown);
}

/* The database of the host: with several --to, the one that holds it. */
static int connect_host_database(struct central_events *c)
{
    const struct central_urls *u = &c->o->to;
    PGconn *pg[CENTRAL_URLS_MAX] = {NULL};
    char err[512];
    int rc = 0;
    for (int i = 0; i < u->n && rc == 0; i++)
        if (!(pg[i] = central_connect(u->url[i], NULL, err, sizeof(err)))) {
            fprintf(stderr, PROG ": %s%s\n", u->n > 1 ? "--to: " : "", err);
            rc = EVENTS_FAILED;
        }
    int at = rc == 0 ? central_urls_find_host(pg, u, c->host, err, sizeof(err)) : 0;
    if (at < -1) {
        fprintf(stderr, PROG ": %s\n", err);
        rc = EVENTS_FAILED;
    }
    at = at < 0 ? 0 : at;   /* none holds it: the first says so below */
    for (int i = 0; i < u->n; i++)
        if (i != at && pg[i])
            PQfinish(pg[i]);
    c->pg = pg[at];
    return rc;
}

static int connect_central(struct central_events *c)
{
    char err[512];
    if (host_id_resolve(c->o->host_id, c->host, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s\n", err);
        return EVENTS_USAGE;
    }
    int rc = connect_host_database(c);
    if (rc != 0)
        return rc;
    PGresult *res = PQexec(c->pg, "SELECT to_regclass('events') IS NOT NULL, " CENTRAL_NAMES_READY_SQL ","
                                  " to_regclass('events_full') IS NOT NULL");
    bool ok = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1;
    bool has_events = ok && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    c->has_names = ok && strcmp(PQgetvalue(res, 0, 1), "t") == 0;
    bool has_full = ok && strcmp(PQgetvalue(res, 0, 2), "t") == 0;
    PQclear(res);
    if (!has_events || (c->o->json && !has_full)) {
        fprintf(stderr, PROG ": the central database has no events%s: seccheckd forward has not shipped to it yet\n",
                has_events ? "_full view" : " table");
        return EVENTS_FAILED;
    }
    return 0;
}

int events_central_run(const struct events_options *o, int64_t since_ns, bool color)
{
    struct central_events c = {.o = o, .color = color};
    snprintf(c.since, sizeof(c.since), "%" PRId64, since_ns);
    decoder_init(&c.decoder);
    arena_init(&c.arena, 64 * 1024, SIZE_MAX);   /* decode_event caps each unpack by the packet's size */
    int rc = connect_central(&c);
    if (rc == 0) {
        c.until = host_scalar(&c, "SELECT max(id) FROM events WHERE host_id = $1", 0);
        uint64_t lines = o->has_lines ? o->lines : 10;
        if (o->follow || o->has_lines)   /* the last N first, as tail does */
            c.after = before_last(&c, lines);
        if (o->follow)
            c.until = INT64_MAX;
    }
    bool stored_done = false;
    while (rc == 0 && !follow_stopped()) {
        int n;
        rc = print_next(&c, &n);
        if (rc != 0 || n == ROWS_PER_READ)
            continue;
        if (!stored_done && c.printed == 0 && (o->has_lines ? o->lines : 10) > 0)
            explain_nothing(&c);
        stored_done = true;
        if (!o->follow)
            break;
        follow_sleep_ms(POLL_MS);
    }
    if (c.pg)
        PQfinish(c.pg);
    arena_free(&c.arena);
    strbuf_free(&c.line);
    return rc == EVENTS_OUTPUT_GONE ? EVENTS_OK : rc;
}
