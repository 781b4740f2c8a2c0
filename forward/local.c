/* local.c - reading the daemon's database for the forwarder (local.h). */
#include "local.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "copy_binary.h"
#include "db_file.h"
#include "sqlutil.h"

#define BATCH_COLUMNS "id, run_id, first_event_id, last_event_id, events, committed_ns, prev_hash, hash, keyed"

void local_name_tables(struct local *l)
{
    l->events.name = "events";
    l->alerts.name = "alerts";
    l->container_info.name = "container_info";
    l->batches.name = "batches";
    l->runs.name = "runs";
    l->connections.name = "connections";
}

int local_open(struct local *l, const char *path, bool *lasting, char *err, size_t errlen)
{
    memset(l, 0, sizeof(*l));
    local_name_tables(l);
    /* Missing, a directory, unreadable: retrying does not change that. */
    *lasting = db_file_check_readable(path, err, errlen) != 0;
    if (*lasting) {
        size_t n = strlen(err);
        if (access(path, F_OK) != 0 && errno == ENOENT && n < errlen)
            snprintf(err + n, errlen - n, " (the daemon creates it: start it first, or fix --db)");
        return -1;
    }
    /* One thread uses the connection: SQLite's per-call mutex was ~12% of
     * the forwarder's CPU (perf, bench/forward.sh). */
    if (sqlite3_open_v2(path, &l->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot open %s: %s", path, l->db ? sqlite3_errmsg(l->db) : "out of memory");
        *lasting = l->db && sqlite3_errcode(l->db) != SQLITE_BUSY;
        local_close(l);
        return -1;
    }
    /* The daemon holds the write lock for one batch at a time. */
    sqlite3_busy_timeout(l->db, 5000);
    /* forward_progress is written under the daemon's write lock: with the
     * default FULL each such commit synced the WAL, the daemon's unsynced
     * frames too, while the daemon's writer waited (its busy handler slept
     * 138 times in 8 s at 48k events/s). A progress row a power cut loses
     * only makes retention keep more. */
    char why2[256];
    int rc = sqlutil_exec(l->db, "PRAGMA synchronous=NORMAL;"
                                 " CREATE TEMP TABLE sync_open(id INTEGER PRIMARY KEY);"
                                 " CREATE TEMP TABLE sync_open_next(id INTEGER PRIMARY KEY)",
                          why2, sizeof(why2));
    if (rc != 0) {
        snprintf(err, errlen, "cannot use %s: %s", path, why2);
        *lasting = (rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT;
        local_close(l);
        return -1;
    }
    return 0;
}

void local_close(struct local *l)
{
    local_end(l);
    sqlite3_finalize(l->batches_after);
    sqlite3_finalize(l->batch_by_id);
    if (l->db)
        sqlite3_close(l->db);
    l->db = NULL;
    l->batches_after = l->batch_by_id = NULL;
}

int local_begin(struct local *l, char *err, size_t errlen)
{
    if (sqlutil_exec(l->db, "BEGIN", err, errlen) != 0)
        return -1;
    l->in_snapshot = true;
    return 0;
}

void local_end(struct local *l)
{
    if (l->in_snapshot)
        sqlite3_exec(l->db, "COMMIT", NULL, NULL, NULL);
    l->in_snapshot = false;
}

static bool valid_name(const char *s)
{
    if (!*s || strlen(s) >= LOCAL_NAME_MAX)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

/* SQLite's affinity rules, simplified to the types the daemon declares;
 * detail, and an alert's output_fields and tags, are JSON text by the
 * daemon's contract. */
static enum local_kind kind_of(const char *name, const char *decl)
{
    if (strcmp(name, "detail") == 0 || strcmp(name, "output_fields") == 0 || strcmp(name, "tags") == 0)
        return LOCAL_JSON;
    if (strcasestr(decl, "INT"))
        return LOCAL_INT;
    if (strcasestr(decl, "CHAR") || strcasestr(decl, "TEXT") || strcasestr(decl, "CLOB"))
        return LOCAL_TEXT;
    if (strcasestr(decl, "REAL") || strcasestr(decl, "FLOA") || strcasestr(decl, "DOUB"))
        return LOCAL_REAL;
    return LOCAL_BLOB;
}

static int load_table(sqlite3 *db, struct local_table *t, bool *changed, char *err, size_t errlen)
{
    char sql[128];
    snprintf(sql, sizeof(sql), "PRAGMA table_xinfo(%s)", t->name);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", t->name, sqlite3_errmsg(db));
        return -1;
    }
    struct local_table fresh = {.name = t->name};
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 1);
        const char *decl = (const char *)sqlite3_column_text(st, 2);
        if (!name || !valid_name(name) || fresh.ncols == LOCAL_MAX_COLUMNS) {
            snprintf(err, errlen, "table %s: column '%s' is not one a seccheckd database has", t->name,
                     name ? name : "");
            rc = -1;
            break;
        }
        struct local_column *c = &fresh.cols[fresh.ncols++];
        snprintf(c->name, sizeof(c->name), "%s", name);
        c->kind = kind_of(name, decl ? decl : "");
    }
    sqlite3_finalize(st);
    if (rc == 0 && (fresh.ncols == 0 || strcmp(fresh.cols[0].name, "id") != 0)) {
        snprintf(err, errlen, "no table %s with an id column yet: not a seccheckd database, or the daemon "
                 "has not created it", t->name);
        rc = -1;
    }
    if (rc == 0) {
        *changed |= fresh.ncols != t->ncols || memcmp(fresh.cols, t->cols, sizeof(fresh.cols)) != 0;
        *t = fresh;
    }
    return rc;
}

/* After a table of ours was not found: will this database never have it?
 * Not a database, or one with tables of its own: yes. No table at all (but
 * the forwarder's own): a daemon creating it (one transaction), or busy: no. */
static bool never_ours(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE name <> 'forward_progress'", -1, &st,
                                NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    bool never = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) > 0
                                  : (rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT;
    sqlite3_finalize(st);
    return never;
}

/* The alerts table, when the daemon that wrote the database had rules. */
static int load_alerts(struct local *l, bool *changed, char *err, size_t errlen)
{
    bool has = sqlite3_table_column_metadata(l->db, NULL, "alerts", "event_id", NULL, NULL, NULL, NULL, NULL) ==
               SQLITE_OK;
    *changed |= has != l->has_alerts;
    l->has_alerts = has;
    if (!has) {
        l->alerts.ncols = 0;
        return 0;
    }
    return load_table(l->db, &l->alerts, changed, err, errlen);
}

/* The container_info table, when the daemon looked container names up. */
static int load_container_info(struct local *l, bool *changed, char *err, size_t errlen)
{
    bool has = sqlite3_table_column_metadata(l->db, NULL, "container_info", "container_id", NULL, NULL, NULL, NULL,
                                             NULL) == SQLITE_OK;
    *changed |= has != l->has_container_info;
    l->has_container_info = has;
    if (!has) {
        l->container_info.ncols = 0;
        return 0;
    }
    return load_table(l->db, &l->container_info, changed, err, errlen);
}

int local_load_columns(struct local *l, bool *changed, bool *lasting, char *err, size_t errlen)
{
    *changed = *lasting = false;
    if (load_table(l->db, &l->runs, changed, err, errlen) == 0 &&
        load_table(l->db, &l->connections, changed, err, errlen) == 0 &&
        load_table(l->db, &l->events, changed, err, errlen) == 0 &&
        load_table(l->db, &l->batches, changed, err, errlen) == 0 && load_alerts(l, changed, err, errlen) == 0)
        return load_container_info(l, changed, err, errlen);
    *lasting = never_ours(l->db);
    if (*lasting && sqlite3_errcode(l->db) != SQLITE_NOTADB)
        snprintf(err, errlen, "not a seccheckd database: it has tables of its own and not the daemon's (check --db)");
    return -1;
}

static void read_hash(sqlite3_stmt *st, int col, uint8_t out[CHAIN_HASH_LEN])
{
    memset(out, 0, CHAIN_HASH_LEN);
    if (sqlite3_column_bytes(st, col) == CHAIN_HASH_LEN)
        memcpy(out, sqlite3_column_blob(st, col), CHAIN_HASH_LEN);
}

static void read_batch(sqlite3_stmt *st, struct local_batch *b)
{
    b->id = sqlite3_column_int64(st, 0);
    b->run_id = sqlite3_column_int64(st, 1);
    b->has_range = sqlite3_column_type(st, 2) == SQLITE_INTEGER && sqlite3_column_type(st, 3) == SQLITE_INTEGER;
    b->first = sqlite3_column_int64(st, 2);
    b->last = sqlite3_column_int64(st, 3);
    b->events = sqlite3_column_int64(st, 4);
    b->committed_ns = sqlite3_column_int64(st, 5);
    read_hash(st, 6, b->prev);
    read_hash(st, 7, b->hash);
    b->keyed = sqlite3_column_int64(st, 8);
}

static int prepare(struct local *l, sqlite3_stmt **st, const char *sql, char *err, size_t errlen)
{
    if (*st)
        return 0;
    if (sqlite3_prepare_v3(l->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s", sqlite3_errmsg(l->db));
        return -1;
    }
    return 0;
}

int local_batches_after(struct local *l, int64_t after, int max, int64_t max_events, struct local_batch *out,
                        char *err, size_t errlen)
{
    if (prepare(l, &l->batches_after, "SELECT " BATCH_COLUMNS " FROM batches WHERE id > ?1 ORDER BY id LIMIT ?2",
                err, errlen) != 0)
        return -1;
    sqlite3_stmt *st = l->batches_after;
    sqlite3_bind_int64(st, 1, after);
    sqlite3_bind_int(st, 2, max);
    int n = 0, step = SQLITE_DONE;
    int64_t events = 0;
    while (n < max && events < max_events && (step = sqlite3_step(st)) == SQLITE_ROW) {
        read_batch(st, &out[n]);
        events += out[n++].events;
    }
    if (step != SQLITE_ROW && step != SQLITE_DONE) {
        snprintf(err, errlen, "reading batches: %s", sqlite3_errmsg(l->db));
        sqlite3_reset(st);
        return -1;
    }
    sqlite3_reset(st);
    return n;
}

int local_batch_by_id(struct local *l, int64_t id, struct local_batch *out)
{
    char err[256];
    if (prepare(l, &l->batch_by_id, "SELECT " BATCH_COLUMNS " FROM batches WHERE id = ?1", err, sizeof(err)) != 0)
        return -1;
    sqlite3_stmt *st = l->batch_by_id;
    sqlite3_bind_int64(st, 1, id);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW)
        read_batch(st, out);
    sqlite3_reset(st);
    return step == SQLITE_ROW ? 1 : step == SQLITE_DONE ? 0 : -1;
}

int local_lag_after(struct local *l, int64_t after, struct local_lag *lag)
{
    memset(lag, 0, sizeof(*lag));
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db,
                           "SELECT count(*), coalesce(sum(events), 0), coalesce(min(committed_ns), 0),"
                           " (SELECT coalesce(max(id), 0) FROM batches) FROM batches WHERE id > ?1",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, after);
    int rc = -1;
    if (sqlite3_step(st) == SQLITE_ROW) {
        lag->batches = sqlite3_column_int64(st, 0);
        lag->events = sqlite3_column_int64(st, 1);
        lag->oldest_committed_ns = sqlite3_column_int64(st, 2);
        lag->newest_id = sqlite3_column_int64(st, 3);
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

int64_t local_data_version(struct local *l) { return sqlutil_int(l->db, "PRAGMA data_version", -1); }

void local_open_marks(struct local *l, int64_t *runs_from, int64_t *conns_from)
{
    *runs_from = sqlutil_int(l->db, "SELECT coalesce((SELECT min(id) FROM runs WHERE stopped_ns IS NULL),"
                                    " (SELECT coalesce(max(id), 0) + 1 FROM runs))", 0);
    *conns_from = sqlutil_int(l->db, "SELECT coalesce((SELECT min(id) FROM connections WHERE close_ns IS NULL),"
                                     " (SELECT coalesce(max(id), 0) + 1 FROM connections))", 0);
}

int64_t local_last_connection_id(struct local *l)
{
    return sqlutil_int(l->db, "SELECT coalesce(max(id), 0) FROM connections", 0);
}

int64_t local_sync_since(const struct local *l, int64_t from)
{
    return l->sync_known ? l->sync_seen : from - 1;
}

int local_sync_note(struct local *l, int64_t from, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (sqlutil_exec(l->db, "DELETE FROM temp.sync_open_next", err, errlen) != 0)
        return -1;
    if (sqlite3_prepare_v2(l->db, "INSERT INTO temp.sync_open_next SELECT id FROM connections"
                                  " WHERE id >= ?1 AND close_ns IS NULL", -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "noting the open connections: %s", sqlite3_errmsg(l->db));
        return -1;
    }
    sqlite3_bind_int64(st, 1, from);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    if (rc != 0)
        snprintf(err, errlen, "noting the open connections: %s", sqlite3_errmsg(l->db));
    sqlite3_finalize(st);
    l->sync_noted_seen = local_last_connection_id(l);
    return rc;
}

int local_sync_taken(struct local *l, char *err, size_t errlen)
{
    l->sync_known = false;
    if (sqlutil_exec(l->db, "DELETE FROM temp.sync_open;"
                            " INSERT INTO temp.sync_open SELECT id FROM temp.sync_open_next", err, errlen) != 0)
        return -1;
    l->sync_seen = l->sync_noted_seen;
    l->sync_known = true;
    return 0;
}

void local_sync_forget(struct local *l) { l->sync_known = false; }

void local_column_list(const struct local_table *t, struct strbuf *out)
{
    for (int i = 0; i < t->ncols; i++) {
        if (i)
            strbuf_putc(out, ',');
        strbuf_puts(out, t->cols[i].name);
    }
}

int local_column_index(const struct local_table *t, const char *name)
{
    for (int i = 0; i < t->ncols; i++)
        if (strcmp(t->cols[i].name, name) == 0)
            return i;
    return -1;
}

/* A text value as a whole decimal integer or number, as the server's own
 * input functions would take it; false if it is not one. */
static bool parse_int(const char *s, int64_t *v)
{
    char *end;
    errno = 0;
    long long n = strtoll(s, &end, 10);
    *v = n;
    return end != s && !*end && errno == 0;
}

static bool parse_real(const char *s, double *v)
{
    char *end;
    *v = strtod(s, &end);
    return end != s && !*end;
}

/* One value in its column's binary form. The daemon stores each column's
 * declared type; a value of another storage class (SQLite allows it) is
 * converted where that loses nothing, and refused otherwise, as the server
 * would refuse its text. */
int local_render_value(struct strbuf *out, sqlite3_stmt *st, int col, enum local_kind kind)
{
    int type = sqlite3_column_type(st, col);
    int64_t i;
    double d;
    if (type == SQLITE_NULL) {
        copy_binary_null(out);
        return 0;
    }
    switch (kind) {
    case LOCAL_INT:
        if (type == SQLITE_INTEGER)
            i = sqlite3_column_int64(st, col);
        else if (type == SQLITE_FLOAT) {
            d = sqlite3_column_double(st, col);
            if (!(d >= -0x1p63 && d < 0x1p63) || (double)(int64_t)d != d)   /* NaN fails the first */
                return -1;
            i = (int64_t)d;
        } else if (type != SQLITE_TEXT || !parse_int((const char *)sqlite3_column_text(st, col), &i))
            return -1;
        copy_binary_int8(out, i);
        return 0;
    case LOCAL_REAL:
        if (type == SQLITE_INTEGER || type == SQLITE_FLOAT)
            d = sqlite3_column_double(st, col);
        else if (type != SQLITE_TEXT || !parse_real((const char *)sqlite3_column_text(st, col), &d))
            return -1;
        copy_binary_float8(out, d);
        return 0;
    default:
        break;
    }
    /* Text, JSON and bytes: numbers as their text (SQLite's rendering),
     * text and blobs as their bytes. */
    const void *p = type == SQLITE_BLOB ? sqlite3_column_blob(st, col) : (const void *)sqlite3_column_text(st, col);
    size_t n = (size_t)sqlite3_column_bytes(st, col);
    if (kind == LOCAL_JSON)
        copy_binary_jsonb(out, p, n);
    else if (kind == LOCAL_BLOB)
        copy_binary_bytea(out, p, n);
    else
        copy_binary_text(out, p, n);
    return 0;
}

int64_t local_copy_rows(struct local *l, const struct local_table *t, const char *where, int64_t lo, int64_t hi,
                        const char *host_id, struct strbuf *out, size_t flush_at, local_flush_cb flush, void *data,
                        struct local_span *span, char *err, size_t errlen)
{
    struct strbuf sql = {0};
    strbuf_puts(&sql, "SELECT ");
    local_column_list(t, &sql);
    strbuf_printf(&sql, " FROM %s %s", t->name, where);
    sqlite3_stmt *st = NULL;
    if (sql.failed || sqlite3_prepare_v2(l->db, sql.data, -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", t->name, sql.failed ? "out of memory" : sqlite3_errmsg(l->db));
        strbuf_free(&sql);
        return -1;
    }
    strbuf_free(&sql);
    sqlite3_bind_int64(st, 1, lo);
    sqlite3_bind_int64(st, 2, hi);
    int64_t rows = 0;
    int step;
    if (span) {
        span->min = INT64_MAX;
        span->max = INT64_MIN;
    }
    copy_binary_header(out);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        copy_binary_row(out, (host_id ? 1 : 0) + t->ncols);
        if (host_id)
            copy_binary_text(out, host_id, strlen(host_id));
        for (int i = 0; i < t->ncols; i++)
            if (local_render_value(out, st, i, t->cols[i].kind) != 0) {
                snprintf(err, errlen, "%s row id %lld: column %s holds '%.40s', not a value of its declared type",
                         t->name, sqlite3_column_int64(st, 0), t->cols[i].name, sqlite3_column_text(st, i));
                sqlite3_finalize(st);
                return -1;
            }
        if (span && span->col >= 0 && sqlite3_column_type(st, span->col) == SQLITE_INTEGER) {
            int64_t v = sqlite3_column_int64(st, span->col);
            span->min = v < span->min ? v : span->min;
            span->max = v > span->max ? v : span->max;
        }
        rows++;
        if (out->len >= flush_at && flush(out, data) != 0) {
            sqlite3_finalize(st);
            return -2;
        }
    }
    if (step != SQLITE_DONE) {
        snprintf(err, errlen, "reading %s: %s", t->name, sqlite3_errmsg(l->db));
        sqlite3_finalize(st);
        return -1;
    }
    sqlite3_finalize(st);
    copy_binary_trailer(out);
    if (flush(out, data) != 0)
        return -2;
    return rows;
}

const struct local_table *local_part_table(const struct local *l, enum local_part part)
{
    switch (part) {
    case LOCAL_PART_EVENTS: return &l->events;
    case LOCAL_PART_ALERTS: return l->has_alerts ? &l->alerts : NULL;
    case LOCAL_PART_NAMES: return l->has_container_info ? &l->container_info : NULL;
    case LOCAL_PART_BATCHES: return &l->batches;
    case LOCAL_PART_RUNS:
    case LOCAL_PART_OPEN_RUNS: return &l->runs;
    case LOCAL_PART_CONNECTIONS:
    case LOCAL_PART_OPEN_CONNECTIONS: return &l->connections;
    case LOCAL_PARTS: break;
    }
    return NULL;
}

/* The connections a sync sends (local_sync_since): ?2 the newest id the
 * last sync saw. */
static const char open_connections_where[] = "WHERE id >= ?1 AND (id > ?2 OR close_ns IS NULL OR"
                                             " id IN (SELECT id FROM temp.sync_open))";

/* Each part's selection; ?1 = lo, ?2 = hi (bound whether used or not). */
static const char *const part_where[LOCAL_PARTS] = {
    [LOCAL_PART_EVENTS] = "WHERE id BETWEEN ?1 AND ?2 ORDER BY id",
    [LOCAL_PART_ALERTS] = "WHERE event_id BETWEEN ?1 AND ?2 ORDER BY id",
    [LOCAL_PART_NAMES] = "WHERE id > ?1 AND ?2 = ?2 ORDER BY id",
    [LOCAL_PART_BATCHES] = "WHERE id BETWEEN ?1 AND ?2",
    [LOCAL_PART_RUNS] = "WHERE id IN (SELECT run_id FROM batches WHERE id BETWEEN ?1 AND ?2)",
    [LOCAL_PART_CONNECTIONS] = "WHERE id BETWEEN ?1 AND ?2",
    [LOCAL_PART_OPEN_RUNS] = "WHERE id >= ?1 AND ?2 = ?2",
    [LOCAL_PART_OPEN_CONNECTIONS] = open_connections_where,
};

int64_t local_copy_part(struct local *l, enum local_part part, int64_t lo, int64_t hi, const char *host_id,
                        struct strbuf *out, size_t flush_at, local_flush_cb flush, void *data,
                        struct local_span *span, char *err, size_t errlen)
{
    return local_copy_part_columns(l, part, NULL, lo, hi, host_id, out, flush_at, flush, data, span, err, errlen);
}

int64_t local_copy_part_columns(struct local *l, enum local_part part, const struct local_table *cols, int64_t lo,
                                int64_t hi, const char *host_id, struct strbuf *out, size_t flush_at,
                                local_flush_cb flush, void *data, struct local_span *span, char *err, size_t errlen)
{
    const struct local_table *t = (unsigned)part < LOCAL_PARTS ? local_part_table(l, part) : NULL;
    if (t && cols && strcmp(cols->name, t->name) == 0)
        t = cols;
    else if (cols)
        t = NULL;
    if (!t) {
        if (span) {
            span->min = INT64_MAX;
            span->max = INT64_MIN;
        }
        return 0;
    }
    return local_copy_rows(l, t, part_where[part], lo, hi, host_id, out, flush_at, flush, data, span, err, errlen);
}

int local_save_progress(struct local *l, const char *target, const char *host_id, int64_t batch_id, char *err,
                        size_t errlen)
{
    /* Not in another program's database, which --db may name by mistake. */
    if (!l->progress_ready && sqlutil_int(l->db, "SELECT count(*) FROM meta WHERE key='schema_version'", 0) == 0) {
        snprintf(err, errlen, "not a seccheckd database (no schema_version in a meta table)");
        return -1;
    }
    if (!l->progress_ready && sqlutil_exec(l->db,
                                           "CREATE TABLE IF NOT EXISTS forward_progress("
                                           "  target TEXT PRIMARY KEY,"
                                           "  host_id TEXT NOT NULL,"
                                           "  batch_id INTEGER NOT NULL,"
                                           "  updated_ns INTEGER NOT NULL)",
                                           err, errlen) != 0)
        return -1;
    l->progress_ready = true;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db, "INSERT OR REPLACE INTO forward_progress VALUES(?1, ?2, ?3, ?4)", -1, &st,
                           NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s", sqlite3_errmsg(l->db));
        return -1;
    }
    sqlite3_bind_text(st, 1, target, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, host_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, batch_id);
    sqlite3_bind_int64(st, 4, realtime_ns());
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    if (rc != 0)
        snprintf(err, errlen, "%s", sqlite3_errmsg(l->db));
    sqlite3_finalize(st);
    return rc;
}
