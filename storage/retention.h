/* retention.h - keep the database within age and size bounds, and its WAL
 * short, without stalling ingestion.
 *
 * Runs on the writer thread after each committed batch (and when idle),
 * doing a bounded amount of work per step (RETENTION_STEP_NS; age checks at
 * most once a second, size checks whenever over the limit): deletes the oldest whole batches
 * (their events and their chain row, recording the last deleted batch as the
 * chain's anchor so `seccheckd verify` checks from there; the newest batch
 * always stays, so the chain and the event ids continue) while they are
 * older than --retain or the database is larger than --max-db-size, and
 * checkpoints the WAL (TRUNCATE: when idle, or past its limit) so it stays
 * short. When `seccheckd forward` runs (its forward_progress table exists),
 * batches it has not shipped are kept whatever their age; only --max-db-size
 * deletes them, and they are counted (batches_deleted_unshipped). So are
 * batches holding alerts that delivery (--alerts-url) has not delivered
 * yet. A reader holding a snapshot can hold the WAL back; that is logged.
 *
 * What it deletes is said: an info line per pass that deleted (events,
 * batches, when they were committed, which bound), passes less than
 * RETENTION_LOG_INTERVAL_NS after the last line folded into the next one;
 * and counted in events_deleted, which any thread may read (the metrics).
 */
#ifndef SECCHECKD_RETENTION_H
#define SECCHECKD_RETENTION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#define RETENTION_STEP_NS 20000000         /* one step deletes for at most 20 ms */
#define RETENTION_WAL_LIMIT (64u << 20)    /* journal_size_limit and checkpoint trigger */
#define RETENTION_WAL_HELD (4u << 20)      /* WAL still this large after TRUNCATE: a reader holds it */
#define RETENTION_LOG_INTERVAL_NS (10 * 1000000000LL)

/* Deleted and not logged yet. */
struct retention_unlogged {
    uint64_t passes, batches, events;
    uint64_t by_age, by_size;              /* batches, by the bound that made them due */
    int64_t first_committed_ns, last_committed_ns;
};

struct retention {
    atomic_uint_fast64_t retain_s;         /* 0: keep forever; set live on SIGHUP */
    atomic_uint_fast64_t max_db_bytes;     /* 0: no limit */
    char wal_path[4200];
    int64_t last_step_ns;
    int64_t last_checkpoint_ns;
    int64_t last_blocked_log_ns;
    uint64_t batches_deleted;
    atomic_uint_fast64_t events_deleted;   /* written by the writer thread only */
    uint64_t batches_deleted_unshipped;    /* by --max-db-size, before they were shipped or their alerts delivered */
    struct retention_unlogged unlogged;
    int64_t last_log_ns;
    int busy_timeout_ms;                   /* restored after a checkpoint */
    /* Alerts up to this id are delivered (alert_outbox.h); INT64_MAX: no
     * delivery. Set by the sink before each step. */
    int64_t alerts_delivered;
};

void retention_init(struct retention *r, const char *db_path, uint64_t retain_s, uint64_t max_db_bytes,
                    int busy_timeout_ms);

/* Pragmas to apply once on a newly opened database. */
int retention_setup(sqlite3 *db, char *err, size_t errlen);

/* One bounded step, if one is due; its own transaction. idle: no batch is
 * being written (the sink's idle upkeep), the time to shrink the WAL. */
void retention_step(struct retention *r, sqlite3 *db, int64_t now_ns, bool idle);

/* Logs what was deleted since the last line (the end of a run). */
void retention_log_deleted(struct retention *r);

/* Bytes of the database in use (pages minus the free list). */
uint64_t retention_db_bytes(sqlite3 *db);

#endif
