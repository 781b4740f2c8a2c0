/* show_store_sqlite.c - show_store.h over a host's database: read as
 * `seccheckd alerts` reads it (follow.h), never written, no transaction
 * held between questions. */
#include "show_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>

#include "alert_outbox.h"
#include "follow.h"
#include "sqlutil.h"

struct sqlite_store {
    sqlite3 *db;
    char error[512];
};

#define EVENT_COLUMNS "SELECT id, conn_id, recv_ns, raw FROM events"

/* The SQL of each question; its arguments are ?1.. in order, the limit
 * after them. */
static const char *const event_sql[] = {
    [SHOW_EVENT] = EVENT_COLUMNS " WHERE id = ?1 LIMIT ?2",
    [SHOW_LAST_EXEC] = EVENT_COLUMNS " WHERE msg_type = 3 AND conn_id = ?1 AND thread_group_id = ?2"
                       " AND (?3 IS NULL OR thread_group_start_time_ns = ?3) AND id <= ?4 ORDER BY id DESC LIMIT ?5",
    /* The first terms are the partial indexes' (storage/event_indexes.c), as they are written there. */
    [SHOW_CLONE] = EVENT_COLUMNS " WHERE msg_type = 2 AND conn_id = ?1"
                   " AND json_extract(detail, '$.created_thread_group_id') = ?2 AND id <= ?4 AND thread_group_id != ?2"
                   " AND (?3 IS NULL OR json_extract(detail, '$.created_thread_start_time_ns') = ?3)"
                   " ORDER BY id DESC LIMIT ?5",
    [SHOW_START] = EVENT_COLUMNS " WHERE msg_type = 1 AND conn_id = ?1 AND id <= ?2 ORDER BY id DESC LIMIT ?3",
    [SHOW_BEFORE] = EVENT_COLUMNS " WHERE conn_id = ?1 AND thread_group_id = ?2"
                    " AND (?3 IS NULL OR thread_group_start_time_ns = ?3) AND id < ?4 AND id >= ?5"
                    " ORDER BY id DESC LIMIT ?6",
    [SHOW_AFTER] = EVENT_COLUMNS " WHERE conn_id = ?1 AND thread_group_id = ?2"
                   " AND (?3 IS NULL OR thread_group_start_time_ns = ?3) AND id > ?4 AND id <= ?5"
                   " ORDER BY id LIMIT ?6",
};
static const int event_args[] = {[SHOW_EVENT] = 1, [SHOW_LAST_EXEC] = 4, [SHOW_CLONE] = 4, [SHOW_START] = 2,
                                 [SHOW_BEFORE] = 5, [SHOW_AFTER] = 5};

/* A clone or fork exit returning the child, for sandboxes without
 * sentry/clone (the syscall points only). A thread's clone, made in its own
 * group, is not a parent's. (?3, the start time, is not known there.) */
static const char clone_exit_sql[] =
    EVENT_COLUMNS " WHERE msg_type IN (23, 29) AND is_exit = 1 AND conn_id = ?1 AND result = ?2"
    " AND thread_group_id != ?2 AND id <= ?4 ORDER BY id DESC LIMIT ?5";

#define ALERT_COLUMNS \
    "SELECT a.id, a.event_id, a.time_ns, a.suppressed, e.recv_ns, a.rule, a.priority, a.container_id, a.output, " \
    ALERT_OUTBOX_OBJECT_SQL("a.output_fields") ", " ALERT_OUTBOX_ARRAY_SQL("a.tags") \
    " FROM alerts a LEFT JOIN events e ON e.id = a.event_id"

static struct sqlite_store *impl(struct show_store *s)
{
    return s->impl;
}

static void bind_value(sqlite3_stmt *st, int i, int64_t v)
{
    if (v == SHOW_UNKNOWN)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_int64(st, i, v);
}

static int prepare(struct sqlite_store *x, const char *sql, sqlite3_stmt **st)
{
    if (sqlite3_prepare_v2(x->db, sql, -1, st, NULL) == SQLITE_OK)
        return 0;
    snprintf(x->error, sizeof(x->error), "%s", sqlite3_errmsg(x->db));
    return -1;
}

/* Steps st, each row to cb; rows, or -1. */
static int each_row(struct sqlite_store *x, sqlite3_stmt *st, show_row_cb cb, void *data)
{
    int n = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct show_row row = {.id = sqlite3_column_int64(st, 0), .conn_id = sqlite3_column_int64(st, 1),
                               .recv_ns = sqlite3_column_int64(st, 2), .raw = sqlite3_column_blob(st, 3),
                               .raw_len = (size_t)sqlite3_column_bytes(st, 3)};
        n++;
        if (!cb(&row, data))
            break;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        snprintf(x->error, sizeof(x->error), "%s", sqlite3_errmsg(x->db));
        n = -1;
    }
    sqlite3_finalize(st);
    return n;
}

static int run_events(struct sqlite_store *x, const char *sql, int nargs, const int64_t *args, int limit,
                      show_row_cb cb, void *data)
{
    sqlite3_stmt *st;
    if (prepare(x, sql, &st) != 0)
        return -1;
    for (int i = 0; i < nargs; i++)
        bind_value(st, i + 1, args[i]);
    sqlite3_bind_int(st, nargs + 1, limit);
    return each_row(x, st, cb, data);
}

static int store_events(struct show_store *s, enum show_query q, const int64_t *args, int limit, show_row_cb cb,
                        void *data)
{
    struct sqlite_store *x = impl(s);
    int n = run_events(x, event_sql[q], event_args[q], args, limit, cb, data);
    if (q == SHOW_CLONE && n == 0)
        n = run_events(x, clone_exit_sql, 4, args, limit, cb, data);
    return n;
}

static int64_t store_scalar(struct show_store *s, enum show_scalar q, const int64_t *args)
{
    static const char *const sql[] = {
        [SHOW_MIN_ID] = "SELECT min(id) FROM events",
        [SHOW_MAX_ID] = "SELECT max(id) FROM events",
        [SHOW_CONN_HAS] = "SELECT EXISTS(SELECT 1 FROM events WHERE msg_type = ?2 AND conn_id = ?1)",
    };
    struct sqlite_store *x = impl(s);
    sqlite3_stmt *st;
    if (prepare(x, sql[q], &st) != 0)
        return SHOW_UNKNOWN;
    if (q == SHOW_CONN_HAS) {
        sqlite3_bind_int64(st, 1, args[0]);
        sqlite3_bind_int64(st, 2, args[1]);
    }
    int64_t v = SHOW_UNKNOWN;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static const char *text(sqlite3_stmt *st, int col)
{
    return (const char *)sqlite3_column_text(st, col);
}

/* Each alert row of st (ALERT_COLUMNS) to cb; rows, or -1. */
static int each_alert(struct sqlite_store *x, sqlite3_stmt *st, show_alert_cb cb, void *data)
{
    int n = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        bool replaced = false;
        struct show_alert a = {
            .id = sqlite3_column_int64(st, 0), .event_id = sqlite3_column_int64(st, 1),
            .time_ns = sqlite3_column_int64(st, 2), .suppressed = sqlite3_column_int64(st, 3),
            .recv_ns = sqlite3_column_type(st, 4) == SQLITE_NULL ? SHOW_UNKNOWN : sqlite3_column_int64(st, 4),
            .rule = text(st, 5), .priority = text(st, 6), .container = text(st, 7), .output = text(st, 8),
            .output_len = (size_t)sqlite3_column_bytes(st, 8)};
        a.output_fields = alert_outbox_json_column(text(st, 9), (size_t)sqlite3_column_bytes(st, 9), "{}", &replaced);
        a.tags = alert_outbox_json_column(text(st, 10), (size_t)sqlite3_column_bytes(st, 10), "[]", &replaced);
        if (!a.rule)
            a.rule = "";
        if (!a.priority)
            a.priority = "";
        if (!a.output)
            a.output = "";
        n++;
        cb(&a, data);
    }
    if (rc != SQLITE_DONE) {
        snprintf(x->error, sizeof(x->error), "%s", sqlite3_errmsg(x->db));
        n = -1;
    }
    sqlite3_finalize(st);
    return n;
}

static int store_alert(struct show_store *s, int64_t id, show_alert_cb cb, void *data)
{
    struct sqlite_store *x = impl(s);
    sqlite3_stmt *st;
    if (prepare(x, ALERT_COLUMNS " WHERE a.id = ?1", &st) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, id);
    return each_alert(x, st, cb, data);
}

#define NEARBY_MAX 50   /* other alerts listed at most */

static int store_alerts_between(struct show_store *s, const char *container, int64_t from, int64_t to, int64_t skip,
                                show_alert_cb cb, void *data)
{
    struct sqlite_store *x = impl(s);
    sqlite3_stmt *st;
    char sql[1024];
    snprintf(sql, sizeof(sql), "%s WHERE a.event_id BETWEEN ?1 AND ?2 AND a.id != ?3 AND a.container_id IS ?4"
             " ORDER BY a.id LIMIT %d", ALERT_COLUMNS, NEARBY_MAX);
    if (prepare(x, sql, &st) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, from);
    sqlite3_bind_int64(st, 2, to);
    sqlite3_bind_int64(st, 3, skip);
    if (container)
        sqlite3_bind_text(st, 4, container, -1, SQLITE_TRANSIENT);
    return each_alert(x, st, cb, data);
}

static int store_message(struct show_store *s, int64_t id, void (*cb)(const char *json, size_t len, void *data),
                         void *data)
{
    struct sqlite_store *x = impl(s);
    sqlite3_stmt *st;
    if (!sqlutil_has(x->db, "view", "events_full")) {
        snprintf(x->error, sizeof(x->error), "no events_full view (schema version 1: start seccheckd on it once)");
        return -1;
    }
    if (prepare(x, "SELECT json(message) FROM events_full WHERE id = ?1", &st) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, id);
    int found = 0;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        cb(text(st, 0), (size_t)sqlite3_column_bytes(st, 0), data);
        found = 1;
    }
    sqlite3_finalize(st);
    return found;
}

#define SHOW_STEPS_MAX 64   /* a sequence has at most 16; a row someone else wrote may claim more */

static int store_steps(struct show_store *s, int64_t alert_id, show_step_cb cb, void *data)
{
    struct sqlite_store *x = impl(s);
    if (sqlutil_int(x->db, "SELECT count(*) FROM pragma_table_info('alerts') WHERE name = 'sequence'", 0) == 0)
        return 0;   /* written before sequences */
    sqlite3_stmt *st;
    char sql[768];
    snprintf(sql, sizeof(sql),
             "SELECT json_extract(j.value, '$.name'), json_extract(j.value, '$.event_id'), "
             "json_extract(j.value, '$.time'), json_extract(j.value, '$.first_time'), json_extract(j.value, '$.count'), "
             "json_extract(a.sequence, '$.sandbox_dropped') "
             "FROM alerts a, json_each(CASE WHEN json_valid(a.sequence) AND json_type(a.sequence, '$.steps') = 'array' "
             "THEN a.sequence ELSE '{\"steps\":[]}' END, '$.steps') j WHERE a.id = ?1 ORDER BY j.key LIMIT %d",
             SHOW_STEPS_MAX);
    if (prepare(x, sql, &st) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, alert_id);
    int n = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct show_step step = {
            .name = text(st, 0) ? text(st, 0) : "?",
            .event_id = sqlite3_column_type(st, 1) == SQLITE_INTEGER ? sqlite3_column_int64(st, 1) : SHOW_UNKNOWN,
            .time = text(st, 2) ? text(st, 2) : "", .first_time = text(st, 3),
            .count = sqlite3_column_type(st, 4) == SQLITE_INTEGER ? sqlite3_column_int64(st, 4) : 1,
            .sandbox_dropped = sqlite3_column_int64(st, 5)};
        n++;
        cb(&step, data);
    }
    if (rc != SQLITE_DONE) {
        snprintf(x->error, sizeof(x->error), "%s", sqlite3_errmsg(x->db));
        n = -1;
    }
    sqlite3_finalize(st);
    return n;
}

static const char *store_error(struct show_store *s)
{
    return impl(s)->error;
}

static void store_close(struct show_store *s)
{
    struct sqlite_store *x = impl(s);
    if (!x)
        return;
    sqlite3_close(x->db);
    free(x);
    s->impl = NULL;
}

int show_store_open_sqlite(struct show_store *s, const char *prog, const char *path)
{
    memset(s, 0, sizeof(*s));
    struct sqlite_store *x = calloc(1, sizeof(*x));
    if (!x) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return -1;
    }
    if (follow_open_db(prog, path, &x->db) != 0) {
        sqlite3_close(x->db);
        free(x);
        return -1;
    }
    if (!sqlutil_has(x->db, "table", "alerts")) {
        fprintf(stderr, "%s: %s has no alerts table: it was written by a seccheckd without rules\n", prog, path);
        sqlite3_close(x->db);
        free(x);
        return -1;
    }
    *s = (struct show_store){.impl = x, .where = path, .alert = store_alert, .events = store_events,
                             .scalar = store_scalar, .alerts_between = store_alerts_between,
                             .message = store_message, .error = store_error, .close = store_close};
    s->steps = store_steps;
    return 0;
}
