#include "retention.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "clock.h"
#include "log.h"
#include "sqlutil.h"

#define NS_PER_S 1000000000LL

void retention_init(struct retention *r, const char *db_path, uint64_t retain_s, uint64_t max_db_bytes,
                    int busy_timeout_ms)
{
    memset(r, 0, sizeof(*r));
    r->busy_timeout_ms = busy_timeout_ms;
    atomic_store(&r->retain_s, retain_s);
    atomic_store(&r->max_db_bytes, max_db_bytes);
    r->alerts_delivered = INT64_MAX;
    snprintf(r->wal_path, sizeof(r->wal_path), "%s-wal", db_path);
}

int retention_setup(sqlite3 *db, char *err, size_t errlen)
{
    char sql[96];
    snprintf(sql, sizeof(sql), "PRAGMA journal_size_limit=%u", RETENTION_WAL_LIMIT);
    return sqlutil_exec(db, sql, err, errlen) == 0 ? 0 : -1;
}

uint64_t retention_db_bytes(sqlite3 *db)
{
    int64_t pages = sqlutil_int(db, "PRAGMA page_count", 0) - sqlutil_int(db, "PRAGMA freelist_count", 0);
    return pages > 0 ? (uint64_t)(pages * sqlutil_int(db, "PRAGMA page_size", 0)) : 0;
}

struct oldest_batch {
    int64_t id, first, last, committed_ns;
    const void *hash;
    int hash_len;
};

/* The alerts of a batch's events go with them (alerts.sql.h), through
 * alerts_by_event. */
static int delete_alerts(sqlite3 *db, int64_t first, int64_t last)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, "DELETE FROM alerts WHERE event_id BETWEEN ?1 AND ?2", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, first);
        sqlite3_bind_int64(st, 2, last);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    sqlite3_finalize(st);
    return rc;
}

/* Deletes one batch (its events, their alerts and its row) and makes it the
 * anchor. */
static int delete_batch(sqlite3 *db, const struct oldest_batch *b, uint64_t *events)
{
    sqlite3_stmt *st;
    int rc = delete_alerts(db, b->first, b->last);
    if (rc != SQLITE_OK)
        return rc;
    rc = sqlite3_prepare_v2(db, "DELETE FROM events WHERE id BETWEEN ?1 AND ?2", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, b->first);
        sqlite3_bind_int64(st, 2, b->last);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
        *events += (uint64_t)sqlite3_changes(db);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK)
        return rc;
    rc = sqlite3_prepare_v2(db,
                            "INSERT OR REPLACE INTO meta(key, value) VALUES ('chain_anchor_batch', ?1),"
                            " ('chain_anchor_last_event', ?2), ('chain_anchor_hash', hex(?3))",
                            -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, b->id);
        sqlite3_bind_int64(st, 2, b->last);
        sqlite3_bind_blob(st, 3, b->hash, b->hash_len, SQLITE_TRANSIENT);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK)
        return rc;
    char sql[64];
    snprintf(sql, sizeof(sql), "DELETE FROM batches WHERE id=%" PRId64, b->id);
    return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

/* Was a batch committed more than retain_s before now? Computed without
 * overflow for any retain_s: a retention reaching back before the epoch
 * keeps everything (retain_s * NS_PER_S alone overflows from 106,752 days,
 * and a wrapped cut-off would delete all but the newest batch). */
static bool older_than(int64_t committed_ns, int64_t now_ns, uint64_t retain_s)
{
    if (now_ns <= 0 || retain_s >= (uint64_t)now_ns / NS_PER_S)
        return false;
    return committed_ns < now_ns - (int64_t)retain_s * NS_PER_S;
}

enum due { NOT_DUE, DUE_BY_AGE, DUE_BY_SIZE };

/* Is the oldest batch due for deletion, and by which bound? */
static enum due due(struct retention *r, sqlite3 *db, const struct oldest_batch *b, int64_t now_ns)
{
    uint64_t retain = atomic_load(&r->retain_s), max = atomic_load(&r->max_db_bytes);
    if (retain && older_than(b->committed_ns, now_ns, retain))
        return DUE_BY_AGE;
    return max && retention_db_bytes(db) > max ? DUE_BY_SIZE : NOT_DUE;
}

/* A deleted batch, for the log line. */
static void note_deleted(struct retention_unlogged *u, const struct oldest_batch *b, enum due why)
{
    if (u->batches++ == 0)
        u->first_committed_ns = b->committed_ns;
    u->last_committed_ns = b->committed_ns;
    u->by_age += why == DUE_BY_AGE;
    u->by_size += why == DUE_BY_SIZE;
}

/* "2026-11-30T02:33:11Z" */
static const char *utc(int64_t ns, char *out, size_t len)
{
    time_t t = (time_t)(ns / NS_PER_S);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(out, len, "@%" PRId64 "ns", ns);
    return out;
}

void retention_log_deleted(struct retention *r)
{
    struct retention_unlogged *u = &r->unlogged;
    if (!u->batches)
        return;
    char from[40], to[40], passes[48] = "";
    if (u->passes > 1)
        snprintf(passes, sizeof(passes), " in %" PRIu64 " passes", u->passes);
    const char *why = u->by_age && u->by_size ? "older than --retain, and over --max-db-size"
                      : u->by_age            ? "older than --retain"
                                             : "over --max-db-size";
    log_info("retention: deleted %" PRIu64 " event%s in %" PRIu64 " batch%s%s, committed %s to %s (%s)", u->events,
             cli_plural(u->events), u->batches, u->batches == 1 ? "" : "es", passes,
             utc(u->first_committed_ns, from, sizeof(from)), utc(u->last_committed_ns, to, sizeof(to)), why);
    memset(u, 0, sizeof(*u));
}

/* The last batch a forwarder (`seccheckd forward`) has shipped, from the
 * forward_progress table it keeps here; INT64_MAX when no forwarder ever ran.
 * With several targets, the one furthest behind. */
static int64_t forwarded_up_to(sqlite3 *db)
{
    if (!sqlutil_has(db, "table", "forward_progress"))
        return INT64_MAX;
    return sqlutil_int(db, "SELECT min(batch_id) FROM forward_progress", INT64_MAX);
}

/* Are all of a batch's alerts delivered (--alerts-url)? Through
 * alerts_by_event, the batch's alerts only. */
static bool alerts_delivered(const struct retention *r, sqlite3 *db, const struct oldest_batch *b)
{
    if (r->alerts_delivered == INT64_MAX)
        return true;
    sqlite3_stmt *st;
    bool delivered = false;
    if (sqlite3_prepare_v2(db, "SELECT NOT EXISTS(SELECT 1 FROM alerts WHERE event_id BETWEEN ?1 AND ?2 AND id > ?3)",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, b->first);
        sqlite3_bind_int64(st, 2, b->last);
        sqlite3_bind_int64(st, 3, r->alerts_delivered);
        delivered = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0);
    }
    sqlite3_finalize(st);
    return delivered;
}

static void fold_pass(struct retention_unlogged *into, const struct retention_unlogged *pass, uint64_t events)
{
    if (!into->batches)
        into->first_committed_ns = pass->first_committed_ns;
    into->last_committed_ns = pass->last_committed_ns;
    into->passes += pass->passes;
    into->batches += pass->batches;
    into->events += events;
    into->by_age += pass->by_age;
    into->by_size += pass->by_size;
}

static void prune(struct retention *r, sqlite3 *db, int64_t now_ns)
{
    if (!atomic_load(&r->retain_s) && !atomic_load(&r->max_db_bytes))
        return;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return;   /* busy: the next step tries again */
    sqlite3_stmt *st;
    /* The newest batch always stays: the chain continues from it, and an
     * emptied events table would hand out its ids from 1 again. */
    int rc = sqlite3_prepare_v2(db, "SELECT id, first_event_id, last_event_id, committed_ns, hash FROM batches"
                                    " WHERE id < (SELECT max(id) FROM batches) ORDER BY id LIMIT 1", -1, &st, NULL);
    uint64_t batches = 0, events = 0, unshipped = 0;
    struct retention_unlogged pass = {.passes = 1};
    int64_t deadline = now_ns + RETENTION_STEP_NS;
    int64_t forwarded = forwarded_up_to(db);
    uint64_t max = atomic_load(&r->max_db_bytes);
    while (rc == SQLITE_OK && realtime_ns() < deadline) {
        sqlite3_reset(st);
        if (sqlite3_step(st) != SQLITE_ROW)
            break;
        struct oldest_batch b = {
            .id = sqlite3_column_int64(st, 0),
            .first = sqlite3_column_int64(st, 1),
            .last = sqlite3_column_int64(st, 2),
            .committed_ns = sqlite3_column_int64(st, 3),
            .hash = sqlite3_column_blob(st, 4),
            .hash_len = sqlite3_column_bytes(st, 4),
        };
        enum due why = due(r, db, &b, now_ns);
        if (why == NOT_DUE)
            break;
        /* Not shipped yet, or alerts not delivered yet: only the size
         * limit may delete it (the forwarder then records the gap
         * centrally, delivery counts the alerts as dropped). */
        bool shipped = b.id <= forwarded && alerts_delivered(r, db, &b);
        if (!shipped && !(max && retention_db_bytes(db) > max))
            break;
        rc = delete_batch(db, &b, &events);
        note_deleted(&pass, &b, shipped ? why : DUE_BY_SIZE);
        batches++;
        unshipped += !shipped;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK || sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        log_error("retention: could not delete old events: %s", sqlite3_errmsg(db));
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return;
    }
    r->batches_deleted += batches;
    atomic_fetch_add(&r->events_deleted, events);
    r->batches_deleted_unshipped += unshipped;
    if (unshipped)
        log_warn("retention: --max-db-size deleted %" PRIu64 " batches the forwarder has not shipped (it records "
                 "them as a gap in the central copy) or with alerts not delivered yet (counted as dropped)",
                 unshipped);
    if (batches)
        fold_pass(&r->unlogged, &pass, events);
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* TRUNCATE resets the WAL when no reader needs its frames; a reader holding
 * an old snapshot blocks that, and the WAL keeps growing until it ends.
 * While batches are being written it waits for the WAL to pass the limit:
 * SQLite's own checkpoint after a commit already lets the next one start
 * the WAL over in place, and truncating it every 2 s made each new WAL
 * grow the file again (~10% of the daemon's CPU on the mixed trace,
 * bench/ipc.sh). Idle, it shrinks the file. */
static void checkpoint(struct retention *r, sqlite3 *db, int64_t now_ns, bool idle)
{
    bool large = file_size(r->wal_path) > RETENTION_WAL_LIMIT;
    if (!large && (!idle || now_ns - r->last_checkpoint_ns < 2 * NS_PER_S))
        return;
    r->last_checkpoint_ns = now_ns;
    /* Under load this runs after every commit while the WAL is large, which
     * is when a reader (the forwarder) holds a snapshot: waiting for it
     * stalled each batch 50 ms, the queue filled and the sandboxes dropped
     * (bench/forward.sh --zero-drop). Idle, a short wait costs nobody. */
    sqlite3_busy_timeout(db, idle ? 50 : 0);
    sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    sqlite3_busy_timeout(db, r->busy_timeout_ms);
    /* What counts is whether the WAL is short now: a reader holding an old
     * snapshot is the one thing that keeps TRUNCATE from resetting it. */
    if (file_size(r->wal_path) > RETENTION_WAL_HELD && now_ns - r->last_blocked_log_ns > 60 * NS_PER_S) {
        r->last_blocked_log_ns = now_ns;
        log_warn("WAL checkpoint held back by a reader's open snapshot: the WAL is %" PRIu64 " MiB; it shrinks "
                 "once that reader ends its transaction", file_size(r->wal_path) >> 20);
    }
}

void retention_step(struct retention *r, sqlite3 *db, int64_t now_ns, bool idle)
{
    uint64_t max = atomic_load(&r->max_db_bytes);
    bool over_size = max && retention_db_bytes(db) > max;
    if (over_size || now_ns - r->last_step_ns >= NS_PER_S) {
        r->last_step_ns = now_ns;
        prune(r, db, now_ns);
    }
    if (r->unlogged.batches && now_ns - r->last_log_ns >= RETENTION_LOG_INTERVAL_NS) {
        r->last_log_ns = now_ns;
        retention_log_deleted(r);
    }
    checkpoint(r, db, now_ns, idle);
}
