/* show_store_pg.c - show_store.h over the central copy: one host's rows
 * (host_id = $1 in every question), read in PostgreSQL's dialect. */
#include "show_store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include <libpq-fe.h>

#include "alert_outbox.h"
#include "central.h"
#include "host_id.h"

struct pg_store {
    PGconn *pg;
    char host[HOST_ID_MAX + 1];
    char where[HOST_ID_MAX + 64];
    bool has_start;                      /* events.thread_group_start_time_ns (hosts of schema 2) */
    bool has_sequence;                   /* alerts.sequence (forwarders since sequence rules) */
    char error[512];
};

#define EVENT_COLUMNS "SELECT id, conn_id, recv_ns, raw FROM events WHERE host_id = $1"
/* START: the condition on the process's start time ($4), or none without
 * the column. */
#define START "START"
static const char same_start[] = "($4::bigint IS NULL OR thread_group_start_time_ns = $4)";
static const char any_start[] = "($4::bigint IS NULL OR TRUE)";

static const char *const event_sql[] = {
    [SHOW_EVENT] = EVENT_COLUMNS " AND id = $2 LIMIT $3",
    [SHOW_LAST_EXEC] = EVENT_COLUMNS " AND msg_type = 3 AND conn_id = $2 AND thread_group_id = $3 AND " START
                       " AND id <= $5 ORDER BY id DESC LIMIT $6",
    [SHOW_CLONE] = EVENT_COLUMNS " AND msg_type = 2 AND conn_id = $2 AND id <= $5 AND thread_group_id <> $3"
                   " AND detail -> 'created_thread_group_id' = to_jsonb($3::bigint)"
                   " AND ($4::bigint IS NULL OR detail -> 'created_thread_start_time_ns' = to_jsonb($4::bigint))"
                   " ORDER BY id DESC LIMIT $6",
    [SHOW_START] = EVENT_COLUMNS " AND msg_type = 1 AND conn_id = $2 AND id <= $3 ORDER BY id DESC LIMIT $4",
    [SHOW_BEFORE] = EVENT_COLUMNS " AND conn_id = $2 AND thread_group_id = $3 AND " START " AND id < $5 AND id >= $6"
                    " ORDER BY id DESC LIMIT $7",
    [SHOW_AFTER] = EVENT_COLUMNS " AND conn_id = $2 AND thread_group_id = $3 AND " START " AND id > $5 AND id <= $6"
                   " ORDER BY id LIMIT $7",
};
static const int event_args[] = {[SHOW_EVENT] = 1, [SHOW_LAST_EXEC] = 4, [SHOW_CLONE] = 4, [SHOW_START] = 2,
                                 [SHOW_BEFORE] = 5, [SHOW_AFTER] = 5};

static const char clone_exit_sql[] =
    EVENT_COLUMNS " AND msg_type IN (23, 29) AND is_exit = 1 AND conn_id = $2 AND result = $3"
    " AND thread_group_id <> $3 AND id <= $5 AND ($4::bigint IS NULL OR TRUE) ORDER BY id DESC LIMIT $6";

#define ALERT_COLUMNS \
    "SELECT a.id, a.event_id, a.time_ns, a.suppressed, e.recv_ns, a.rule, a.priority, a.container_id, a.output," \
    " CASE WHEN jsonb_typeof(a.output_fields) = 'object' THEN a.output_fields::text END," \
    " CASE WHEN jsonb_typeof(a.tags) = 'array' THEN a.tags::text END," \
    " (SELECT to_jsonb(h) ->> 'hostname' FROM hosts h WHERE h.host_id = a.host_id)" \
    " FROM alerts a LEFT JOIN events e ON e.host_id = a.host_id AND e.id = a.event_id WHERE a.host_id = $1"

static struct pg_store *impl(struct show_store *s)
{
    return s->impl;
}

/* The query, $1 the host and the int64 arguments after it (SHOW_UNKNOWN:
 * NULL); NULL with the error kept. */
static PGresult *query(struct pg_store *x, const char *sql, const int64_t *args, int nargs)
{
    char values[8][24];
    const char *v[9] = {x->host};
    for (int i = 0; i < nargs && i < 8; i++) {
        snprintf(values[i], sizeof(values[i]), "%" PRId64, args[i]);
        v[i + 1] = args[i] == SHOW_UNKNOWN ? NULL : values[i];
    }
    PGresult *res = PQexecParams(x->pg, sql, nargs + 1, NULL, v, NULL, NULL, 0);
    if (PQresultStatus(res) == PGRES_TUPLES_OK)
        return res;
    central_message_line(PQresultErrorMessage(res), x->error, sizeof(x->error));
    PQclear(res);
    return NULL;
}

static int run_events(struct pg_store *x, const char *sql, int nargs, const int64_t *args, int limit, show_row_cb cb,
                      void *data)
{
    int64_t all[8];
    memcpy(all, args, (size_t)nargs * sizeof(*all));
    all[nargs] = limit;
    PGresult *res = query(x, sql, all, nargs + 1);
    if (!res)
        return -1;
    int n = 0;
    for (int i = 0; i < PQntuples(res); i++) {
        size_t len = 0;
        unsigned char *raw = PQunescapeBytea((const unsigned char *)PQgetvalue(res, i, 3), &len);
        struct show_row row = {.id = strtoll(PQgetvalue(res, i, 0), NULL, 10),
                               .conn_id = strtoll(PQgetvalue(res, i, 1), NULL, 10),
                               .recv_ns = strtoll(PQgetvalue(res, i, 2), NULL, 10), .raw = raw, .raw_len = len};
        n++;
        bool more = cb(&row, data);
        PQfreemem(raw);
        if (!more)
            break;
    }
    PQclear(res);
    return n;
}

static int store_events(struct show_store *s, enum show_query q, const int64_t *args, int limit, show_row_cb cb,
                        void *data)
{
    struct pg_store *x = impl(s);
    /* Without the start column, a process is its pid: the condition holds. */
    char sql[1024];
    const char *mark = strstr(event_sql[q], START);
    if (mark)
        snprintf(sql, sizeof(sql), "%.*s%s%s", (int)(mark - event_sql[q]), event_sql[q],
                 x->has_start ? same_start : any_start, mark + strlen(START));
    else
        snprintf(sql, sizeof(sql), "%s", event_sql[q]);
    int n = run_events(x, sql, event_args[q], args, limit, cb, data);
    if (q == SHOW_CLONE && n == 0)
        n = run_events(x, clone_exit_sql, 4, args, limit, cb, data);
    return n;
}

static int64_t store_scalar(struct show_store *s, enum show_scalar q, const int64_t *args)
{
    static const char *const sql[] = {
        [SHOW_MIN_ID] = "SELECT min(id) FROM events WHERE host_id = $1",
        [SHOW_MAX_ID] = "SELECT max(id) FROM events WHERE host_id = $1",
        [SHOW_CONN_HAS] = ("SELECT EXISTS(SELECT 1 FROM events WHERE host_id = $1 AND conn_id = $2 AND msg_type = $3)"
                           "::int"),
    };
    PGresult *res = query(impl(s), sql[q], args, q == SHOW_CONN_HAS ? 2 : 0);
    int64_t v = SHOW_UNKNOWN;
    if (res && PQntuples(res) == 1 && !PQgetisnull(res, 0, 0))
        v = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return v;
}

static const char *value(PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

static int each_alert(PGresult *res, show_alert_cb cb, void *data)
{
    int n = PQntuples(res);
    for (int i = 0; i < n; i++) {
        bool replaced = false;
        const char *recv = value(res, i, 4);
        struct show_alert a = {
            .id = strtoll(PQgetvalue(res, i, 0), NULL, 10), .event_id = strtoll(PQgetvalue(res, i, 1), NULL, 10),
            .time_ns = strtoll(PQgetvalue(res, i, 2), NULL, 10), .suppressed = strtoll(PQgetvalue(res, i, 3), NULL, 10),
            .recv_ns = recv ? strtoll(recv, NULL, 10) : SHOW_UNKNOWN, .rule = PQgetvalue(res, i, 5),
            .priority = PQgetvalue(res, i, 6), .container = value(res, i, 7), .output = PQgetvalue(res, i, 8),
            .output_len = (size_t)PQgetlength(res, i, 8), .host_name = value(res, i, 11)};
        a.output_fields = alert_outbox_json_column(value(res, i, 9), (size_t)PQgetlength(res, i, 9), "{}", &replaced);
        a.tags = alert_outbox_json_column(value(res, i, 10), (size_t)PQgetlength(res, i, 10), "[]", &replaced);
        cb(&a, data);
    }
    PQclear(res);
    return n;
}

static int store_alert(struct show_store *s, int64_t id, show_alert_cb cb, void *data)
{
    PGresult *res = query(impl(s), ALERT_COLUMNS " AND a.id = $2", &id, 1);
    return res ? each_alert(res, cb, data) : -1;
}

static int store_alerts_between(struct show_store *s, const char *container, int64_t from, int64_t to, int64_t skip,
                                show_alert_cb cb, void *data)
{
    struct pg_store *x = impl(s);
    char values[3][24];
    snprintf(values[0], sizeof(values[0]), "%" PRId64, from);
    snprintf(values[1], sizeof(values[1]), "%" PRId64, to);
    snprintf(values[2], sizeof(values[2]), "%" PRId64, skip);
    const char *v[] = {x->host, values[0], values[1], values[2], container};
    PGresult *res = PQexecParams(x->pg,
                                 ALERT_COLUMNS " AND a.event_id BETWEEN $2 AND $3 AND a.id <> $4"
                                 " AND a.container_id IS NOT DISTINCT FROM $5 ORDER BY a.id LIMIT 50",
                                 5, NULL, v, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        central_message_line(PQresultErrorMessage(res), x->error, sizeof(x->error));
        PQclear(res);
        return -1;
    }
    return each_alert(res, cb, data);
}

static int store_message(struct show_store *s, int64_t id, void (*cb)(const char *json, size_t len, void *data),
                         void *data)
{
    PGresult *res = query(impl(s), "SELECT message::text FROM events_full WHERE host_id = $1 AND id = $2", &id, 1);
    if (!res)
        return -1;
    int found = PQntuples(res) == 1 && !PQgetisnull(res, 0, 0);
    if (found)
        cb(PQgetvalue(res, 0, 0), (size_t)PQgetlength(res, 0, 0), data);
    PQclear(res);
    return found;
}

#define SHOW_STEPS_MAX 64   /* as show_store_sqlite.c: a sequence has at most 16; a row may claim more */
#define SHOW_SEQUENCE_MAX_TEXT "1048576"   /* 16 steps take ~4 KB: a larger column is a host's forgery, not read */

static const char *json_text(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static int64_t json_int_or(const json_t *o, const char *key, int64_t otherwise)
{
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : otherwise;
}

/* The alert's sequence column, as the host wrote it (text: a compromised
 * host's may be anything), read as show_store_sqlite.c reads its own: the
 * steps of a "steps" array, at most SHOW_STEPS_MAX, what is missing shown
 * as unknown. */
static int store_steps(struct show_store *s, int64_t alert_id, show_step_cb cb, void *data)
{
    struct pg_store *x = impl(s);
    if (!x->has_sequence)
        return 0;   /* shipped before sequences */
    PGresult *res = query(x, "SELECT sequence::text FROM alerts WHERE host_id = $1 AND id = $2"
                             " AND octet_length(sequence::text) <= " SHOW_SEQUENCE_MAX_TEXT, &alert_id, 1);
    if (!res)
        return -1;
    json_t *seq = PQntuples(res) == 1 && !PQgetisnull(res, 0, 0)
                      ? json_loadb(PQgetvalue(res, 0, 0), (size_t)PQgetlength(res, 0, 0), 0, NULL)
                      : NULL;
    PQclear(res);
    const json_t *steps = json_is_object(seq) ? json_object_get(seq, "steps") : NULL;
    int n = 0;
    for (size_t i = 0; json_is_array(steps) && i < json_array_size(steps) && n < SHOW_STEPS_MAX; i++, n++) {
        const json_t *o = json_array_get(steps, i);
        struct show_step step = {.name = json_text(o, "name") ? json_text(o, "name") : "?",
                                 .event_id = json_int_or(o, "event_id", SHOW_UNKNOWN),
                                 .time = json_text(o, "time") ? json_text(o, "time") : "",
                                 .first_time = json_text(o, "first_time"),
                                 .count = json_int_or(o, "count", 1),
                                 .sandbox_dropped = json_int_or(seq, "sandbox_dropped", 0)};
        cb(&step, data);
    }
    json_decref(seq);
    return n;
}

static const char *store_error(struct show_store *s)
{
    return impl(s)->error;
}

static void store_close(struct show_store *s)
{
    struct pg_store *x = impl(s);
    if (!x)
        return;
    if (x->pg)
        PQfinish(x->pg);
    free(x);
    s->impl = NULL;
}

int show_store_open_pg(struct show_store *s, const char *prog, const char *url, const char *host_id)
{
    memset(s, 0, sizeof(*s));
    char err[512];
    if (central_check_url(url, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s: --to: %s\n", prog, err);
        return -1;
    }
    struct pg_store *x = calloc(1, sizeof(*x));
    if (!x || host_id_resolve(host_id, x->host, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s: --host-id: %s\n", prog, x ? err : "out of memory");
        free(x);
        return -1;
    }
    if (!(x->pg = central_connect(url, NULL, err, sizeof(err)))) {
        fprintf(stderr, "%s: %s\n", prog, err);
        free(x);
        return -1;
    }
    PGresult *res = PQexec(x->pg, "SELECT to_regclass('alerts') IS NOT NULL, EXISTS(SELECT 1 FROM"
                                  " information_schema.columns WHERE table_schema = current_schema()"
                                  " AND table_name = 'events' AND column_name = 'thread_group_start_time_ns'),"
                                  " EXISTS(SELECT 1 FROM information_schema.columns WHERE table_schema ="
                                  " current_schema() AND table_name = 'alerts' AND column_name = 'sequence')");
    bool ok = PQresultStatus(res) == PGRES_TUPLES_OK && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    x->has_start = ok && strcmp(PQgetvalue(res, 0, 1), "t") == 0;
    x->has_sequence = ok && strcmp(PQgetvalue(res, 0, 2), "t") == 0;
    PQclear(res);
    if (!ok) {
        fprintf(stderr, "%s: the central database has no alerts table: no seccheckd forward of this version has "
                "shipped to it yet\n", prog);
        PQfinish(x->pg);
        free(x);
        return -1;
    }
    snprintf(x->where, sizeof(x->where), "the central copy (host %s)", x->host);
    *s = (struct show_store){.impl = x, .where = x->where, .alert = store_alert, .events = store_events,
                             .scalar = store_scalar, .alerts_between = store_alerts_between,
                             .message = store_message, .steps = store_steps, .error = store_error,
                             .close = store_close};
    return 0;
}
