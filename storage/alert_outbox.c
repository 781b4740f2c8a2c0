#include "alert_outbox.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "json.h"
#include "log.h"
#include "sqlutil.h"

void alert_outbox_init(struct alert_outbox *o)
{
    memset(o, 0, sizeof(*o));
    pthread_mutex_init(&o->lock, NULL);
    atomic_init(&o->newest, 0);
    atomic_init(&o->lost, 0);
    atomic_init(&o->generation, 0);
    atomic_init(&o->reopen_newest, 0);
}

void alert_outbox_destroy(struct alert_outbox *o)
{
    pthread_mutex_destroy(&o->lock);
}

void alert_outbox_set(struct alert_outbox *o, const char *target, int64_t position, uint64_t generation)
{
    pthread_mutex_lock(&o->lock);
    struct alert_outbox_position *c = &o->current;
    if (strcmp(c->target, target) != 0) {
        if (c->version) {   /* the target left: its last position is written too */
            uint64_t retired_version = o->retired.version;
            o->retired = *c;
            o->retired.version = retired_version + 1;
        }
        snprintf(c->target, sizeof(c->target), "%s", target);
    }
    c->position = position;
    c->generation = generation;
    c->version++;
    pthread_mutex_unlock(&o->lock);
}

bool alert_outbox_held_position(struct alert_outbox *o, const char *target, uint64_t generation, int64_t *position)
{
    pthread_mutex_lock(&o->lock);
    const struct alert_outbox_position *p = NULL;
    if (o->current.version && strcmp(o->current.target, target) == 0)
        p = &o->current;
    else if (o->retired.version && strcmp(o->retired.target, target) == 0)
        p = &o->retired;
    bool held = p && p->generation == generation;
    if (held)
        *position = p->position;
    pthread_mutex_unlock(&o->lock);
    return held;
}

/* The newest alert id ever inserted into db: the sequence remembers ids of
 * alerts retention deleted since. */
static int64_t newest_alert(sqlite3 *db)
{
    int64_t seq = sqlutil_int(db, "SELECT seq FROM sqlite_sequence WHERE name = 'alerts'", 0);
    int64_t max = sqlutil_int(db, "SELECT max(id) FROM alerts", 0);
    return seq > max ? seq : max;
}

/* INSERT OR REPLACE of one target's position: SQLITE_OK or the error. */
static int write_position(sqlite3 *db, const struct alert_outbox_position *p)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO alert_delivery VALUES(?1, ?2, ?3)", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, p->target, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, p->position);
        sqlite3_bind_int64(st, 3, realtime_ns());
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    sqlite3_finalize(st);
    return rc;
}

void alert_outbox_save(struct alert_outbox *o, sqlite3 *db)
{
    if (!o)
        return;
    struct alert_outbox_position current, retired;
    uint64_t generation = atomic_load(&o->generation);
    pthread_mutex_lock(&o->lock);
    /* Only a position counted in the file open now is written there. */
    bool changed = o->current.version != 0 && o->current.version != o->written_version &&
                   o->current.generation == generation;
    bool retire = o->retired.version != 0 && o->retired.version != o->retired_written_version &&
                  o->retired.generation == generation;
    if (changed)
        current = o->current;
    if (retire)
        retired = o->retired;
    pthread_mutex_unlock(&o->lock);
    int rc = SQLITE_OK;
    if (retire && (rc = write_position(db, &retired)) == SQLITE_OK)
        o->retired_written_version = retired.version;
    if (rc == SQLITE_OK && changed && (rc = write_position(db, &current)) == SQLITE_OK) {
        o->written_version = current.version;
        o->written_position = current.position;
    }
    if (rc != SQLITE_OK && !o->save_failed_logged) {
        log_error("alerts: cannot record the delivery position in the database: %s; alerts delivered since the "
                  "last record are sent again after a restart", sqlite3_errmsg(db));
        o->save_failed_logged = true;
    }
}

void alert_outbox_commit(struct alert_outbox *o, int64_t newest)
{
    if (!o)
        return;
    o->saved_version = o->written_version;
    o->saved_position = o->written_position;
    o->retired_saved_version = o->retired_written_version;
    if (newest <= 0 || newest <= atomic_load(&o->newest))
        return;
    atomic_store(&o->newest, newest);
    if (o->on_commit)
        o->on_commit(o->on_commit_data);
}

void alert_outbox_rollback(struct alert_outbox *o)
{
    if (!o)
        return;
    o->written_version = o->saved_version;
    o->written_position = o->saved_position;
    o->retired_written_version = o->retired_saved_version;
}

void alert_outbox_lost(struct alert_outbox *o, uint64_t alerts)
{
    if (o && alerts)
        atomic_fetch_add(&o->lost, alerts);
}

void alert_outbox_reopened(struct alert_outbox *o, sqlite3 *db)
{
    if (!o)
        return;
    /* The generation first: delivery that sees the new file's newest sees
     * the new generation too, and does not take it for its old file's. */
    int64_t newest = newest_alert(db);
    atomic_store(&o->reopen_newest, newest);
    atomic_fetch_add(&o->generation, 1);
    atomic_store(&o->newest, newest);
    o->saved_version = o->written_version = 0;
    o->saved_position = o->written_position = 0;   /* retention keeps every alert there until delivery saves */
    o->retired_saved_version = o->retired_written_version = 0;
    if (o->on_commit)
        o->on_commit(o->on_commit_data);
}

int64_t alert_outbox_saved_position(const struct alert_outbox *o)
{
    return o ? o->saved_position : INT64_MAX;
}

/* ---- reading ---- */

int alert_outbox_reader_open(struct alert_outbox_reader *r, const char *path, char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    /* One thread uses it (NOMUTEX); read-only, so it can never take the
     * write lock from the daemon's writer. */
    if (sqlite3_open_v2(path, &r->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ||
        sqlite3_busy_timeout(r->db, 1000) != SQLITE_OK ||
        sqlite3_prepare_v3(r->db,
                           "SELECT id, rule, priority, time_ns, output, " ALERT_OUTBOX_OBJECT_SQL("output_fields")
                           ", " ALERT_OUTBOX_ARRAY_SQL("tags") ", suppressed, evicted, " ALERT_OUTBOX_OBJECT_SQL("sequence")
                           " FROM alerts WHERE id > ?1 ORDER BY id"
                           " LIMIT ?2",
                           -1, SQLITE_PREPARE_PERSISTENT, &r->after, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot read the alerts of %s: %s", path, r->db ? sqlite3_errmsg(r->db) : "out of memory");
        alert_outbox_reader_close(r);
        return -1;
    }
    return 0;
}

void alert_outbox_reader_close(struct alert_outbox_reader *r)
{
    sqlite3_finalize(r->after);
    if (r->db)
        sqlite3_close(r->db);
    memset(r, 0, sizeof(*r));
}

/* The position of target in alert_delivery (SQLITE_ROW), or SQLITE_DONE
 * when it has none; with target NULL, the target updated last's, its name
 * in name. */
static int saved_position(sqlite3 *db, const char *target, int64_t *position, char *name, size_t namelen)
{
    sqlite3_stmt *st;
    /* INSERT OR REPLACE gives a written row a new rowid: the tie-break. */
    const char *sql = target ? "SELECT alert_id, target FROM alert_delivery WHERE target = ?1"
                             : "SELECT alert_id, target FROM alert_delivery ORDER BY updated_ns DESC, rowid DESC LIMIT 1";
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    if (target)
        sqlite3_bind_text(st, 1, target, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *position = sqlite3_column_int64(st, 0);
        if (name) {
            const char *t = (const char *)sqlite3_column_text(st, 1);
            snprintf(name, namelen, "%s", t ? t : "");
        }
    }
    sqlite3_finalize(st);
    return rc;
}

int alert_outbox_start(struct alert_outbox_reader *r, const char *target, int64_t take_over,
                       struct alert_outbox_start *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (sqlutil_exec(r->db, "BEGIN", err, errlen) != 0)
        return -1;
    out->newest = newest_alert(r->db);
    int rc = saved_position(r->db, target, &out->position, NULL, 0);
    if (rc == SQLITE_ROW) {
        out->from = OUTBOX_FROM_OWN;
    } else if (rc == SQLITE_DONE && take_over >= 0) {
        out->from = OUTBOX_FROM_TAKEN;
        out->position = take_over;
    } else if (rc == SQLITE_DONE &&
               (rc = saved_position(r->db, NULL, &out->position, out->from_target, sizeof(out->from_target))) ==
                   SQLITE_ROW) {
        out->from = OUTBOX_FROM_LATEST;
    } else if (rc == SQLITE_DONE) {
        out->from = OUTBOX_FROM_NEWEST;
        out->position = out->newest;
        out->history = sqlutil_int(r->db, "SELECT count(*) FROM alerts", 0);
    }
    if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
        rc = SQLITE_OK;
        if (out->position > out->newest) {   /* the sequence was reset by hand: the next alert would be skipped */
            log_warn("alerts: the delivery position (alert %lld) is past the newest alert (%lld): delivering from "
                     "the next alert on", (long long)out->position, (long long)out->newest);
            out->position = out->newest;
        }
    } else {
        snprintf(err, errlen, "reading the delivery position: %s", sqlite3_errmsg(r->db));
    }
    char ignored[64];
    sqlutil_exec(r->db, "COMMIT", ignored, sizeof(ignored));
    return rc == SQLITE_OK ? 0 : -1;
}

static const char *text_or_empty(sqlite3_stmt *st, int col)
{
    const char *s = (const char *)sqlite3_column_text(st, col);
    return s ? s : "";
}

const char *alert_outbox_json_column(const char *text, size_t len, const char *fallback, bool *replaced)
{
    if (text && strlen(text) == len && utf8_valid(text, len))
        return text;
    *replaced = true;
    return fallback;
}

int alert_outbox_read(struct alert_outbox_reader *r, int64_t after, int max_rows, alert_outbox_row_cb each,
                      void *data, char *err, size_t errlen)
{
    sqlite3_stmt *st = r->after;
    sqlite3_bind_int64(st, 1, after);
    sqlite3_bind_int(st, 2, max_rows);
    int taken = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct alert_outbox_row row = {
            .id = sqlite3_column_int64(st, 0),
            .rule = text_or_empty(st, 1),
            .priority = text_or_empty(st, 2),
            .time_ns = sqlite3_column_int64(st, 3),
            .output = text_or_empty(st, 4),
            .output_len = (size_t)sqlite3_column_bytes(st, 4),
            .suppressed = (uint64_t)sqlite3_column_int64(st, 7),
            .evicted = (uint64_t)sqlite3_column_int64(st, 8),
            .sequence = (const char *)sqlite3_column_text(st, 9),
        };
        row.output_fields = alert_outbox_json_column((const char *)sqlite3_column_text(st, 5),
                                                     (size_t)sqlite3_column_bytes(st, 5), "{}", &row.replaced);
        row.tags = alert_outbox_json_column((const char *)sqlite3_column_text(st, 6), (size_t)sqlite3_column_bytes(st, 6),
                                            "[]", &row.replaced);
        if (!each(&row, data))
            break;
        taken++;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        snprintf(err, errlen, "reading alerts: %s", sqlite3_errmsg(r->db));
        taken = -1;
    }
    sqlite3_reset(st);   /* ends the read: no snapshot holds the WAL back */
    return taken;
}
