/* sink_sqlite.c - every event as a row, one transaction per batch.
 *
 * Runs on the writer thread. Statements are prepared once; text and blobs
 * are bound SQLITE_STATIC because they live in the batch's arena (or in the
 * reused JSON buffer) until the step is done.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sqlite3.h>

#include "alerts.sql.h"
#include "chain.h"
#include "clock.h"
#include "conn_snapshots.h"
#include "container_rows.h"
#include "db_file.h"
#include "decode.h"
#include "event_indexes.h"
#include "event_json.h"
#include "event_row.h"
#include "linux_names.h"
#include "log.h"
#include "schema.sql.h"
#include "sqlutil.h"
#include "views.sql.h"
#include "retention.h"
#include "sink.h"

struct sqlite_sink {
    struct sink base;
    struct sink_sqlite_options opts;   /* its strings owned: the database is opened again */
    sqlite3 *db;                  /* NULL: the file at the path could not be opened */
    struct db_file_sidecars sidecars;
    const char *reopen_reason;    /* why the open database is not the first: "deleted", "replaced" */
    bool open_failing;            /* logged; counted as store_failed until it opens */
    struct retention retention;
    sqlite3_stmt *insert_event;
    bool stores_type_name;        /* an upgraded version 1 table: type_name is not computed */
    sqlite3_stmt *upsert_conn;
    sqlite3_stmt *update_run;
    sqlite3_stmt *insert_alert;
    sqlite3_stmt *upsert_container;   /* container_rows.h */
    int64_t newest_alert;         /* the newest alert id of the transaction being written */
    int64_t run_id;
    struct strbuf json;
    /* Counts of batches whose transaction failed, written with the next
     * transaction that succeeds so the runs row still adds up. */
    struct batch_counts pending;
    uint64_t pending_failed;
    /* And the connection snapshots not committed yet. */
    struct conn_snapshots conns;
    uint64_t failed_batches;      /* in a row, for the recovery log line */
    bool warned_busy;
    /* The planner's statistics, refreshed each time the table doubles. */
    int64_t rows_estimate;
    int64_t rows_analyzed;
    /* Tamper evidence: the chain_* helpers below. */
    struct chain *chain;
    sqlite3_stmt *chain_last;
    sqlite3_stmt *chain_insert;
    struct chain_batch chain_cur; /* the batch being written */
    bool ids_contiguous;          /* its events' ids so far are first_event_id + their index */
    struct strbuf sealed;         /* its alerts' sealed records, back to back... */
    size_t *sealed_ends;          /* ...each ending here */
    size_t sealed_cap;
    uint8_t chain_prev[CHAIN_HASH_LEN];
    char chain_key_id[CHAIN_KEY_ID_HEX]; /* keyed: names the key in meta */
    bool chain_warned;
    atomic_bool checkpoint_soon;  /* a restart is near: checkpoint after the next batch */
    atomic_bool checking;         /* a restart's check writes too: a gap after each transaction */
    int64_t probe_deadline_ns;    /* a check's (o->probe): when it stops waiting for the lock */
    bool handing_off;             /* a restart: finish and close skip ANALYZE and the checkpoint */
};

static void maybe_analyze(struct sqlite_sink *s, bool final);

/* ---- tamper evidence (chain.h): a batches row per batch of events ---- */

/* Before sqlite3_open: the key file (if any) and the hashing context. */
static int chain_open(struct sqlite_sink *s, const char *key_file, char *err, size_t errlen)
{
    struct chain_key key = {.bytes = NULL};
    if (key_file) {
        if (chain_key_load(key_file, &key, err, errlen) != 0)
            return -1;
        if (key.mode & 077)
            log_warn("sqlite: key file %s can be read by other users (mode %04o); chmod 600 it", key_file,
                     (unsigned)key.mode);
    }
    s->chain = chain_new(key_file ? &key : NULL, err, errlen);
    int id_rc = key_file && s->chain ? chain_key_id(&key, s->chain_key_id) : 0;
    if (key_file)
        chain_key_free(&key);
    if (id_rc != 0)
        snprintf(err, errlen, "key file %s: OpenSSL cannot compute its key id", key_file);
    return s->chain && id_rc == 0 ? 0 : -1;
}

/* In the batch's transaction, before its events: the chain goes on from
 * the last committed batches row, so a rolled-back attempt leaves nothing
 * to undo. */
static int chain_start(struct sqlite_sink *s, const struct batch *b)
{
    memset(&s->chain_cur, 0, sizeof(s->chain_cur));
    s->ids_contiguous = true;
    if (b->count == 0)
        return 0;   /* connection and run updates only: nothing to seal */
    memset(s->chain_prev, 0, sizeof(s->chain_prev));
    sqlite3_stmt *st = s->chain_last;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        s->chain_cur.id = sqlite3_column_int64(st, 0);
        const void *h = sqlite3_column_blob(st, 1);
        if (h && sqlite3_column_bytes(st, 1) == CHAIN_HASH_LEN) {
            memcpy(s->chain_prev, h, CHAIN_HASH_LEN);
        } else if (!s->chain_warned) {
            /* Only tampering does this; `seccheckd verify` names that batch. */
            log_error("sqlite: batch %lld has a malformed hash; chaining on from zeros",
                      (long long)s->chain_cur.id);
            s->chain_warned = true;
        }
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return -1;
    s->chain_cur.id = (int64_t)((uint64_t)s->chain_cur.id + 1);
    s->chain_cur.run_id = s->run_id;
    s->chain_cur.covers_alerts = true;
    strbuf_reset(&s->sealed);
    chain_begin(s->chain, s->chain_prev);   /* a failure makes chain_seal fail */
    return 0;
}

/* An alert's sealed record (chain.h), kept for chain_seal, which hashes
 * them after the events; the alert's row stores it too. NULL out of memory. */
static const char *chain_seal_alert(struct sqlite_sink *s, const struct alert *a, int64_t event_id,
                                    const char *sequence, size_t sequence_len, size_t *len)
{
    size_t n = (size_t)s->chain_cur.alerts;
    if (n == s->sealed_cap) {
        size_t cap = s->sealed_cap ? s->sealed_cap * 2 : 16;
        size_t *ends = realloc(s->sealed_ends, cap * sizeof(*ends));
        if (!ends)
            return NULL;
        s->sealed_ends = ends;
        s->sealed_cap = cap;
    }
    const char *priority = rules_priority_name(a->priority);
    struct chain_alert ca = {
        .event_id = event_id, .time_ns = a->time_ns, .suppressed = (int64_t)a->suppressed,
        .rule = a->rule, .rule_len = strlen(a->rule), .priority = priority, .priority_len = strlen(priority),
        .container_id = a->container_id, .container_id_len = a->container_id ? strlen(a->container_id) : 0,
        .output = a->output, .output_len = a->output_len,
        .output_fields = a->output_fields, .output_fields_len = strlen(a->output_fields),
        .tags = a->tags, .tags_len = strlen(a->tags),
        .evicted = (int64_t)a->evicted, .sequence = sequence, .sequence_len = sequence_len,
    };
    size_t start = s->sealed.len;
    *len = chain_alert_encode(&ca, &s->sealed);
    if (!*len)
        return NULL;
    s->sealed_ends[n] = s->sealed.len;
    return s->sealed.data + start;
}

/* The alert just inserted as id: the batch's next (ids are consecutive in
 * one transaction; the batches row keeps the first and the count). */
static int chain_add_alert_id(struct sqlite_sink *s, int64_t id)
{
    struct chain_batch *c = &s->chain_cur;
    if (c->alerts == 0)
        c->first_alert_id = id;
    else if (id != c->first_alert_id + c->alerts) {
        log_error("sqlite: alert %lld follows alert %lld in one batch: the chain cannot seal it", (long long)id,
                  (long long)(c->first_alert_id + c->alerts - 1));
        return -1;
    }
    c->alerts++;
    return 0;
}

/* After each events row is inserted. */
static void chain_add_event(struct sqlite_sink *s, const struct event *ev)
{
    int64_t id = sqlite3_last_insert_rowid(s->db);
    struct chain_row r = {.id = id, .conn_id = (int64_t)ev->conn_id, .recv_ns = ev->recv_ns,
                          .msg_type = ev->header.message_type, .raw = ev->raw, .raw_len = ev->raw_len};
    chain_add_row(s->chain, &r);
    if (s->chain_cur.events && id != s->chain_cur.last_event_id + 1)
        s->ids_contiguous = false;   /* then sequences' steps have no ids: first + index would be wrong */
    if (s->chain_cur.events++ == 0)
        s->chain_cur.first_event_id = id;
    s->chain_cur.last_event_id = id;
}

/* After the batch's events, in its transaction: the batches row. */
static int chain_seal(struct sqlite_sink *s)
{
    struct chain_batch *c = &s->chain_cur;
    if (c->events == 0)
        return 0;
    c->committed_ns = realtime_ns();
    for (int64_t i = 0, start = 0; i < c->alerts; i++) {
        chain_add_alert(s->chain, s->sealed.data + start, s->sealed_ends[i] - (size_t)start);
        start = (int64_t)s->sealed_ends[i];
    }
    uint8_t hash[CHAIN_HASH_LEN];
    bool hashed = chain_finish(s->chain, c, hash) == 0;
    if (!hashed) {
        char why[256];
        log_error("sqlite: cannot hash batch %lld: %s", (long long)c->id, chain_openssl_error(why, sizeof(why)));
    }
    sqlite3_stmt *st = s->chain_insert;
    sqlite3_bind_int64(st, 1, c->id);
    sqlite3_bind_int64(st, 2, c->run_id);
    sqlite3_bind_int64(st, 3, c->first_event_id);
    sqlite3_bind_int64(st, 4, c->last_event_id);
    sqlite3_bind_int64(st, 5, c->events);
    sqlite3_bind_int64(st, 6, c->committed_ns);
    sqlite3_bind_blob(st, 7, s->chain_prev, CHAIN_HASH_LEN, SQLITE_STATIC);
    /* Unhashed: NULL fails the NOT NULL constraint, so the transaction
     * fails with a SQLite error and the batch is counted store_failed. */
    if (hashed)
        sqlite3_bind_blob(st, 8, hash, CHAIN_HASH_LEN, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 8);
    sqlite3_bind_int(st, 9, chain_keyed(s->chain));
    sqlite3_bind_int64(st, 10, c->alerts);
    sqlutil_bind_nonzero(st, 11, c->first_alert_id);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

static int insert_event(struct sqlite_sink *s, const struct event *ev)
{
    sqlite3_stmt *st = s->insert_event;
    bool detail = false;
    if (ev->msg) {
        strbuf_reset(&s->json);
        detail = event_detail_render(&s->json, ev) == 0;
    }
    event_row_bind(st, ev, detail ? s->json.data : NULL, s->json.len, s->stores_type_name);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return -1;
    chain_add_event(s, ev);
    return 0;
}

/* Alerts of the event just inserted (the batch's alerts are in event
 * order; *next is the first not written yet). */
static int insert_alerts(struct sqlite_sink *s, const struct batch *b, size_t event_index, size_t *next)
{
    int64_t event_id = sqlite3_last_insert_rowid(s->db);
    sqlite3_stmt *st = s->insert_alert;
    for (; *next < b->alerts.count && b->alerts.items[*next].event_index == event_index; (*next)++) {
        const struct alert *a = &b->alerts.items[*next];
        sqlite3_bind_int64(st, 1, event_id);
        sqlite3_bind_text(st, 2, a->rule, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, rules_priority_name(a->priority), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, a->time_ns);
        sqlutil_bind_text(st, 5, a->container_id);
        sqlite3_bind_text(st, 6, a->output, (int)a->output_len, SQLITE_STATIC);   /* NUL bytes and all */
        sqlite3_bind_text(st, 7, a->output_fields, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 8, a->tags, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 9, (sqlite3_int64)a->suppressed);
        sqlite3_bind_int64(st, 10, (sqlite3_int64)a->evicted);
        const char *sequence = NULL;
        size_t sequence_len = 0;
        if (a->nsteps) {   /* the steps in this batch have ids now */
            strbuf_reset(&s->json);
            rules_alert_sequence_json(&s->json, a, s->ids_contiguous ? s->chain_cur.first_event_id : 0);
            sequence = s->json.data ? s->json.data : "";
            sequence_len = s->json.len;
            sqlite3_bind_text(st, 11, sequence, (int)sequence_len, SQLITE_STATIC);
        } else {
            sqlite3_bind_null(st, 11);
        }
        size_t sealed_len;
        const char *sealed = chain_seal_alert(s, a, event_id, sequence, sequence_len, &sealed_len);
        if (!sealed) {
            sqlite3_reset(st);
            return -1;
        }
        sqlite3_bind_blob(st, 12, sealed, (int)sealed_len, SQLITE_TRANSIENT);
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE)
            return -1;
        s->newest_alert = sqlite3_last_insert_rowid(s->db);
        if (chain_add_alert_id(s, s->newest_alert) != 0)
            return -1;
    }
    return 0;
}

static int upsert_conn(struct sqlite_sink *s, const struct conn_record *c)
{
    sqlite3_stmt *st = s->upsert_conn;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)c->id);
    sqlite3_bind_int64(st, 2, s->run_id);
    sqlite3_bind_int64(st, 3, c->peer_pid);
    sqlite3_bind_int64(st, 4, c->peer_uid);
    sqlite3_bind_int64(st, 5, c->peer_gid);
    sqlite3_bind_int64(st, 6, c->connect_ns);
    sqlutil_bind_nonzero(st, 7, c->close_ns);
    sqlutil_bind_nonzero(st, 8, c->client_version);
    sqlite3_bind_int64(st, 9, (sqlite3_int64)c->messages);
    sqlite3_bind_int64(st, 10, (sqlite3_int64)c->bytes);
    sqlite3_bind_int64(st, 11, c->last_dropped_count);
    sqlite3_bind_int64(st, 12, (sqlite3_int64)c->sandbox_dropped);
    sqlite3_bind_int64(st, 13, (sqlite3_int64)c->rejected);
    sqlite3_bind_int64(st, 14, (sqlite3_int64)c->decode_errors);
    sqlutil_bind_text(st, 15, c->close_reason);
    sqlite3_bind_int64(st, 16, (sqlite3_int64)c->dropped_count_regressions);
    sqlite3_bind_int64(st, 17, (sqlite3_int64)c->paused_count);
    sqlite3_bind_int64(st, 18, c->paused_ns);
    sqlutil_bind_text(st, 19, c->sandbox);
    sqlutil_bind_text(st, 20, container_bound_by_name((enum container_bound_by)c->sandbox_bound_by));
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

static int update_run(struct sqlite_sink *s, const struct batch_counts *c, const struct batch_result *r)
{
    sqlite3_stmt *st = s->update_run;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)c->received);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)r->stored);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)batch_discarded(c, r));
    sqlite3_bind_int64(st, 4, (sqlite3_int64)batch_counts_rejected(c));
    sqlite3_bind_int64(st, 5, (sqlite3_int64)r->failed);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)c->rejected[REJECT_SHORT_PACKET]);
    sqlite3_bind_int64(st, 7, (sqlite3_int64)c->rejected[REJECT_BAD_HEADER]);
    sqlite3_bind_int64(st, 8, (sqlite3_int64)c->rejected[REJECT_OVERSIZE]);
    sqlite3_bind_int64(st, 9, (sqlite3_int64)c->decode[DECODE_UNKNOWN_TYPE]);
    sqlite3_bind_int64(st, 10, (sqlite3_int64)c->decode[DECODE_BAD_PAYLOAD]);
    sqlite3_bind_int64(st, 11, s->run_id);
    sqlite3_bind_int64(st, 12, (sqlite3_int64)c->rejected[REJECT_NO_MEMORY]);
    sqlite3_bind_int64(st, 13, (sqlite3_int64)c->rejected[REJECT_QUEUE_FULL]);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* Every connection snapshot not committed yet: the batch's, and those of
 * batches whose transaction failed. */
static int write_conns(struct sqlite_sink *s)
{
    for (size_t i = 0; i < s->conns.n; i++)
        if (!s->conns.items[i].committed && upsert_conn(s, &s->conns.items[i].rec) != 0)
            return -1;
    return 0;
}

static int write_rows(struct sqlite_sink *s, struct batch *b)
{
    if (chain_start(s, b) != 0)
        return -1;
    size_t next_alert = 0;
    for (size_t i = 0; i < b->count; i++)
        if (insert_event(s, &b->events[i]) != 0 || insert_alerts(s, b, i, &next_alert) != 0)
            return -1;
    if (chain_seal(s) != 0 || write_conns(s) != 0 || container_rows_write(s->upsert_container, b) != 0)
        return -1;
    alert_outbox_save(s->opts.outbox, s->db);
    struct batch_counts counts = b->counts;
    batch_counts_add(&counts, &s->pending);
    struct batch_result result = {.stored = b->count, .failed = s->pending_failed};
    return update_run(s, &counts, &result);
}

/* One transaction for the whole batch: SQLITE_OK, or why it failed.
 * IMMEDIATE takes the write lock up front, waiting --busy-timeout-ms in
 * SQLite's busy handler. A deferred BEGIN would read first (chain_start)
 * and then have to upgrade that read to a write, which SQLite refuses at
 * once, without the busy handler, while another connection writes: the
 * retry loop below would spin on a core. */
static int try_write(struct sqlite_sink *s, struct batch *b, char *err, size_t errlen)
{
    int rc = sqlutil_exec(s->db, "BEGIN IMMEDIATE", err, errlen);
    if (rc != SQLITE_OK)
        return rc;
    s->newest_alert = 0;
    if (write_rows(s, b) != 0) {
        rc = sqlite3_extended_errcode(s->db);
        snprintf(err, errlen, "%s", sqlite3_errmsg(s->db));
    } else {
        rc = sqlutil_exec(s->db, "COMMIT", err, errlen);
    }
    if (rc != SQLITE_OK) {
        char ignored[64];
        sqlutil_exec(s->db, "ROLLBACK", ignored, sizeof(ignored));
        alert_outbox_rollback(s->opts.outbox);
    }
    return rc;
}

static bool is_busy(int rc)
{
    return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
}

static void note_success(struct sqlite_sink *s)
{
    if (s->failed_batches)
        log_info("sqlite: storing again after %llu failed batches", (unsigned long long)s->failed_batches);
    s->failed_batches = 0;
    s->warned_busy = false;
    memset(&s->pending, 0, sizeof(s->pending));
    s->pending_failed = 0;
    conn_snapshots_committed(&s->conns);
}

/* The batch cannot be stored (disk full, I/O error, ...): count it, so the
 * next transaction that works records it in the runs row, and move on so
 * the loop keeps draining sockets. */
static void note_failure(struct sqlite_sink *s, struct batch *b, const char *err)
{
    snprintf(s->base.error, sizeof(s->base.error), "%.*s", (int)sizeof(s->base.error) - 1, err);
    if (s->failed_batches++ == 0 || s->failed_batches % 100 == 0)
        log_error("sqlite: could not store a batch of %zu events (%llu batches failed so far): %s; the events are "
                  "counted as store_failed, and storing resumes when the database can be written again",
                  b->count, (unsigned long long)s->failed_batches, err);
    b->result.failed = b->count;
    alert_outbox_lost(s->opts.outbox, b->alerts.count);
    batch_counts_add(&s->pending, &b->counts);
    s->pending_failed += b->count;
}

/* The batch's connection snapshots wait here until a transaction commits
 * them, this batch's or a later one's (conn_snapshots.h). */
static void note_conns(struct sqlite_sink *s, const struct batch *b)
{
    for (size_t i = 0; i < b->nconns; i++) {
        int rc = conn_snapshots_note(&s->conns, &b->conns[i]);
        if (rc < 0)
            log_error("sqlite: out of memory keeping connection %llu's snapshot; its row may stay stale",
                      (unsigned long long)b->conns[i].id);
        else if (rc > 0 && (s->conns.lost == 1 || s->conns.lost % 1000 == 0))
            log_error("sqlite: %llu closed connections' rows given up while nothing could be stored (at most %d "
                      "wait for the database)", (unsigned long long)s->conns.lost, CONN_SNAPSHOTS_MAX_CLOSED);
    }
}

static int open_db(struct sqlite_sink *s, char *err, size_t errlen);
static void close_db(struct sqlite_sink *s, bool moved);

/* After the file at the path was deleted or replaced: a database is opened
 * there when it can be (0), or -1 with why in err, logged once until it
 * opens. */
static int ensure_open(struct sqlite_sink *s, char *err, size_t errlen)
{
    if (s->db)
        return 0;
    if (open_db(s, err, errlen) != 0) {
        if (!s->open_failing)
            log_error("sqlite: cannot open a database at %s: %s; events are counted as store_failed until it "
                      "can be", s->opts.path, err);
        s->open_failing = true;
        return -1;
    }
    s->open_failing = false;
    alert_outbox_reopened(s->opts.outbox, s->db);   /* delivery goes on from this file's position */
    int64_t batches = sqlutil_int(s->db, "SELECT count(*) FROM batches", 0);
    log_warn("sqlite: opened the database now at %s: run %lld there (runs.reopen_reason '%s'); %s", s->opts.path,
             (long long)s->run_id, s->reopen_reason,
             batches ? "the batch chain goes on from its last batch" : "a new batch chain starts there");
    return 0;
}

/* Is the file the connection has open still the one at the path? If not
 * (deleted, or another file put there such as a restored copy), it is
 * closed, so nothing more is written to it; ensure_open opens the file at
 * the path. One stat. */
static bool lost_file(struct sqlite_sink *s)
{
    if (!s->db || !db_file_moved(s->db))
        return false;
    bool replaced = access(s->opts.path, F_OK) == 0;
    s->reopen_reason = replaced ? "replaced" : "deleted";
    if (replaced)
        log_error("sqlite: the database file %s was replaced by another file (a restored copy?) while in use: "
                  "nothing more is written to the old one, storing goes on in the file now at the path", s->opts.path);
    else
        log_error("sqlite: the database file %s was deleted while in use: nothing more is written to it, a new "
                  "database is made at the path", s->opts.path);
    close_db(s, true);
    db_file_drop_stale_sidecars(&s->sidecars, s->opts.path);
    conn_snapshots_uncommit_all(&s->conns);   /* every open connection gets its row there */
    return true;
}

/* A batch that committed into a file deleted or replaced meanwhile is
 * written again into the one at the path; a file that keeps going away
 * fails the batch after this many. */
#define SQLITE_REWRITES_MAX 3

/* While the daemon still reads: the new image opens the WAL as it is, and
 * rebuilds its index from every frame (5-16 ms for a WAL of up to 1000
 * pages, at 20k events/s), so it had better be short. PASSIVE waits for
 * nobody; a reader's snapshot leaves the frames it needs. */
static void checkpoint_before_handoff(struct sqlite_sink *s)
{
    atomic_store(&s->checkpoint_soon, false);
    sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
}

/* While a restart's check writes the same database (sink_checking), each
 * transaction is followed by this gap: the check tries for the lock every
 * PROBE_RETRY_MS, and a writer busy without a pause would otherwise keep
 * it out until its busy timeout (a restart refused with "database is
 * locked", seen under ThreadSanitizer with both cores busy). */
#define CHECK_GAP_MS 3
#define PROBE_RETRY_MS 1

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* The check's busy handler: every PROBE_RETRY_MS until --busy-timeout-ms
 * (SQLite's own backs off to 100 ms between tries and misses the gaps). */
static int probe_busy(void *data, int tries)
{
    const struct sqlite_sink *s = data;
    (void)tries;
    if (monotonic_ns() >= s->probe_deadline_ns)
        return 0;
    sleep_ms(PROBE_RETRY_MS);
    return 1;
}

static void sqlite_write_batch(struct sink *base, struct batch *b)
{
    struct sqlite_sink *s = (struct sqlite_sink *)base;
    char err[512];
    note_conns(s, b);
    for (int rewrites = 0;;) {
        int rc = ensure_open(s, err, sizeof(err)) == 0 ? try_write(s, b, err, sizeof(err)) : SQLITE_CANTOPEN;
        if (rc == SQLITE_OK && lost_file(s)) {
            if (++rewrites <= SQLITE_REWRITES_MAX)
                continue;
            snprintf(err, sizeof(err), "the database file keeps being deleted or replaced");
            break;
        }
        if (rc == SQLITE_OK) {
            b->result.stored = b->count;
            b->result.first_event_id = s->ids_contiguous && (size_t)s->chain_cur.events == b->count ? s->chain_cur.first_event_id
                                                                                           : 0;
            note_success(s);
            alert_outbox_commit(s->opts.outbox, s->newest_alert);
            s->rows_estimate += (int64_t)b->count;
            maybe_analyze(s, false);
            s->retention.alerts_delivered = alert_outbox_saved_position(s->opts.outbox);
            retention_step(&s->retention, s->db, realtime_ns(), false);
            if (atomic_load_explicit(&s->checkpoint_soon, memory_order_relaxed))
                checkpoint_before_handoff(s);
            if (atomic_load_explicit(&s->checking, memory_order_relaxed))
                sleep_ms(CHECK_GAP_MS);
            return;
        }
        /* Another process holds the database: each attempt already waited
         * --busy-timeout-ms. Keep the batch and wait again, so the queue
         * fills and --on-full decides; only shutdown gives up on it. */
        if (!is_busy(rc))
            break;
        if (atomic_load(&base->giving_up)) {
            sqlite3_busy_timeout(s->db, 0);   /* the rest of the queue fails fast */
            break;
        }
        if (!s->warned_busy)
            log_warn("sqlite: the database is locked by another process (%s); retrying", err);
        s->warned_busy = true;
    }
    note_failure(s, b, err);
}

static void sqlite_finish(struct sink *base, int64_t stopped_ns)
{
    struct sqlite_sink *s = (struct sqlite_sink *)base;
    char err[512];
    retention_log_deleted(&s->retention);
    lost_file(s);
    if (ensure_open(s, err, sizeof(err)) != 0) {
        log_error("sqlite: could not record the end of the run (%llu unstored events) in %s: %s",
                  (unsigned long long)s->pending_failed, s->opts.path, err);
        return;
    }
    if (s->pending.received || s->pending_failed || conn_snapshots_uncommitted(&s->conns)) {
        /* The last batches failed: record their counts, or the run would
         * not add up, and their connection rows, or they would stay open. */
        struct batch nothing = {0};
        if (try_write(s, &nothing, err, sizeof(err)) == SQLITE_OK)
            note_success(s);
        else
            log_error("sqlite: could not record %llu unstored events in the runs table: %s",
                      (unsigned long long)s->pending_failed, err);
    }
    if (!s->handing_off)
        maybe_analyze(s, true);
    char sql[128];
    snprintf(sql, sizeof(sql), "UPDATE runs SET stopped_ns=%lld WHERE id=%lld", (long long)stopped_ns,
             (long long)s->run_id);
    if (sqlutil_exec(s->db, sql, base->error, sizeof(base->error)) != 0)
        log_error("sqlite: could not mark the run finished: %s", base->error);
}

/* The statements and the connection. No checkpoint on the way out when
 * its file moved (no longer at the path: it would write a file nobody
 * reads, then delete the -wal and -shm by name, whosever they are now), or
 * when handing off to a restarted image (7-17 ms at 20k events/s while the
 * sandboxes wait: the new image opens the WAL as it is). */
static void close_db(struct sqlite_sink *s, bool moved)
{
    sqlite3_stmt **stmts[] = {&s->insert_event, &s->upsert_conn, &s->update_run, &s->insert_alert, &s->chain_last,
                              &s->chain_insert, &s->upsert_container};
    for (size_t i = 0; i < sizeof(stmts) / sizeof(stmts[0]); i++) {
        sqlite3_finalize(*stmts[i]);
        *stmts[i] = NULL;
    }
    if (!s->db)
        return;
    if (moved)
        sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
    if (sqlite3_close(s->db) != SQLITE_OK)
        log_error("sqlite: close: %s", sqlite3_errmsg(s->db));
    s->db = NULL;
}

/* Outside a batch transaction: the position alone, autocommit. */
static void save_delivery_position(struct sqlite_sink *s)
{
    alert_outbox_save(s->opts.outbox, s->db);
    alert_outbox_commit(s->opts.outbox, 0);
}

static void sqlite_close(struct sink *base)
{
    struct sqlite_sink *s = (struct sqlite_sink *)base;
    if (s->db)
        save_delivery_position(s);   /* delivery stopped first (main.c): its last position */
    close_db(s, s->handing_off);
    chain_free(s->chain);
    conn_snapshots_free(&s->conns);
    strbuf_free(&s->json);
    strbuf_free(&s->sealed);
    free(s->sealed_ends);
    free((char *)s->opts.path);
    free((char *)s->opts.key_file);
    free(s);
}

static void sqlite_idle(struct sink *base)
{
    struct sqlite_sink *s = (struct sqlite_sink *)base;
    char err[512];
    lost_file(s);
    if (ensure_open(s, err, sizeof(err)) != 0)
        return;
    save_delivery_position(s);
    s->retention.alerts_delivered = alert_outbox_saved_position(s->opts.outbox);
    retention_step(&s->retention, s->db, realtime_ns(), true);
}

static void sqlite_set_retention(struct sink *base, uint64_t retain_s, uint64_t max_db_bytes)
{
    struct sqlite_sink *s = (struct sqlite_sink *)base;
    atomic_store(&s->retention.retain_s, retain_s);
    atomic_store(&s->retention.max_db_bytes, max_db_bytes);
}

static void sqlite_handoff_soon(struct sink *base)
{
    atomic_store(&((struct sqlite_sink *)base)->checkpoint_soon, true);
}

static void sqlite_checking(struct sink *base, bool on)
{
    atomic_store(&((struct sqlite_sink *)base)->checking, on);
}

static void sqlite_handoff(struct sink *base)
{
    ((struct sqlite_sink *)base)->handing_off = true;
}

static uint64_t sqlite_retention_deleted(struct sink *base)
{
    struct sqlite_sink *s = (struct sqlite_sink *)base;
    return atomic_load(&s->retention.events_deleted);
}

static const struct sink_ops sqlite_ops = {
    .name = "sqlite",
    .needs_writer_thread = true,
    .write_batch = sqlite_write_batch,
    .set_retention = sqlite_set_retention,
    .retention_deleted = sqlite_retention_deleted,
    .idle = sqlite_idle,
    .handoff_soon = sqlite_handoff_soon,
    .checking = sqlite_checking,
    .handoff = sqlite_handoff,
    .finish = sqlite_finish,
    .close = sqlite_close,
};

/* "CASE msg_type WHEN 1 THEN 'CONTAINER_START' ... END": the decoder's
 * names, so the column and decode_type_name cannot disagree. */
static int append_type_name_sql(struct strbuf *sql)
{
    strbuf_puts(sql, "CASE msg_type");
    for (int t = 1; t <= DECODE_TYPE_MAX; t++) {
        const char *name = decode_type_name((uint16_t)t);
        if (name)
            strbuf_printf(sql, " WHEN %d THEN '%s'", t, name);
    }
    strbuf_puts(sql, " END");
    return sql->failed ? -1 : 0;
}

static int create_events_table(sqlite3 *db, char *err, size_t errlen)
{
    struct strbuf sql = {0};
    strbuf_puts(&sql, events_table_head_sql);
    append_type_name_sql(&sql);
    strbuf_puts(&sql, events_table_tail_sql);
    int rc = sql.failed ? -1 : sqlutil_exec(db, sql.data, err, errlen);
    if (sql.failed)
        snprintf(err, errlen, "out of memory");
    strbuf_free(&sql);
    return rc;
}

/* The names the views give numbers (linux_names.h), refilled each start. */
static int create_lookup_tables(sqlite3 *db, char *err, size_t errlen)
{
    struct strbuf sql = {0};
    linux_names_sql(&sql);
    int rc = sql.failed ? -1 : sqlutil_exec(db, sql.data, err, errlen);
    if (sql.failed)
        snprintf(err, errlen, "out of memory");
    strbuf_free(&sql);
    return rc;
}

/* The version the database was written with: 0 for a new one. */
static int schema_version(sqlite3 *db)
{
    return (int)sqlutil_int(db, "SELECT coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key='schema_version'), 0)", -1);
}

/* Before anything could change the file (journal_mode=WAL rewrites its
 * header): an empty database, or one this program wrote in a version it
 * writes. An SQLite database of another program is refused untouched,
 * instead of silently gaining our tables. */
static int check_is_ours(sqlite3 *db, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int64_t objects = -1;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        objects = sqlite3_column_int64(st, 0);
    else
        db_file_describe_error(db, err, errlen);   /* not a database, or unreadable */
    sqlite3_finalize(st);
    if (objects <= 0)
        return objects < 0 ? -1 : 0;
    int version = schema_version(db);
    if (version <= 0) {
        char tables[160] = "";
        if (sqlite3_prepare_v2(db, "SELECT group_concat(name, ', ') FROM (SELECT name FROM sqlite_master"
                                   " WHERE type='table' ORDER BY name LIMIT 6)", -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            snprintf(tables, sizeof(tables), "%s", (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        snprintf(err, errlen, "it is an SQLite database of another program (tables: %s; no seccheckd meta "
                 "schema_version); it is left untouched (pick another path with --db)", tables[0] ? tables : "none");
        return -1;
    }
    if (version != 1 && version != SQLITE_SCHEMA_VERSION) {
        snprintf(err, errlen, "database has schema version %d, this seccheckd writes %d; use a new --db path",
                 version, SQLITE_SCHEMA_VERSION);
        return -1;
    }
    return 0;
}

/* Brings a version 1 database to this one (schema.sql.h: upgrade_v1_sql);
 * check_is_ours refused the versions this one does not write. */
static int check_schema_version(struct sqlite_sink *s, char *err, size_t errlen)
{
    if (schema_version(s->db) == 1) {
        log_info("sqlite: upgrading the database from schema version 1 to %d; its rows stay as they are",
                 SQLITE_SCHEMA_VERSION);
        if (sqlutil_exec(s->db, upgrade_v1_sql, err, errlen) != 0)
            return -1;
    }
    /* hidden 0: an ordinary column; a computed one is 2 or 3. */
    s->stores_type_name =
        sqlutil_int(s->db, "SELECT count(*) FROM pragma_table_xinfo('events') WHERE name='type_name' AND hidden=0", 0) != 0;
    return 0;
}

/* ---- query statistics ---- */

#define ANALYZE_MIN_ROWS 10000

/* Until the first ANALYZE a time-range query reads the whole table; after,
 * it skip-scans events_by_type (event_indexes.h). */
static void maybe_analyze(struct sqlite_sink *s, bool final)
{
    if (s->rows_estimate < ANALYZE_MIN_ROWS || s->rows_estimate == s->rows_analyzed)
        return;
    if (!final && s->rows_estimate < 2 * s->rows_analyzed)
        return;
    event_indexes_analyze(s->db);
    s->rows_analyzed = s->rows_estimate;
}

static void start_statistics(struct sqlite_sink *s)
{
    /* Two subqueries: max(id) - min(id) in one scans the whole index (7-13
     * ms at 120k rows, at every start) instead of reading its two ends. */
    s->rows_estimate =
        sqlutil_int(s->db, "SELECT coalesce((SELECT max(id) FROM events) - (SELECT min(id) FROM events) + 1, 0)", 0);
    if (sqlutil_has(s->db, "table", "sqlite_stat1") &&
        sqlutil_int(s->db, "SELECT count(*) FROM sqlite_stat1 WHERE tbl='events'", 0))
        s->rows_analyzed = s->rows_estimate;
    maybe_analyze(s, false);
}

/* ---- tamper evidence, continued ---- */

/* Inside setup_schema's transaction: a chain is keyed from its first batch
 * to its last, with one key (meta chain_key_id). Refuses to mix, so a
 * restart without --key-file cannot extend a keyed chain with plain hashes. */
static int chain_check_db(struct sqlite_sink *s, const struct sink_sqlite_options *o, char *err, size_t errlen)
{
    /* 0: no batches yet, 1: plain, more: keyed. */
    int64_t last = sqlutil_int(s->db, "SELECT keyed + 1 FROM batches ORDER BY id DESC LIMIT 1", 0);
    char stored[CHAIN_KEY_ID_HEX] = "";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT value FROM meta WHERE key='chain_key_id'", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(stored, sizeof(stored), "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (!chain_keyed(s->chain)) {
        if (last >= 2 || stored[0]) {
            snprintf(err, errlen, "its batch chain is keyed: pass the --key-file it was written with");
            return -1;
        }
        return 0;
    }
    if (stored[0]) {
        if (strcmp(stored, s->chain_key_id) != 0) {
            snprintf(err, errlen, "key file %s is not the key its batch chain was written with", o->key_file);
            return -1;
        }
        return 0;
    }
    if (last == 1) {
        snprintf(err, errlen, "its batch chain is plain SHA-256, not keyed: drop --key-file %s, or use a new --db",
                 o->key_file);
        return -1;
    }
    if (last >= 2)
        log_warn("sqlite: the keyed batch chain has no key id in meta; recording the one of %s", o->key_file);
    char sql[160];
    snprintf(sql, sizeof(sql), "INSERT INTO meta VALUES('chain_key_id','%s')", s->chain_key_id);
    return sqlutil_exec(s->db, sql, err, errlen) == 0 ? 0 : -1;
}

/* The chain's alert columns, after the alerts table is made (chain.h). */
static int add_alert_chain_columns(sqlite3 *db, char *err, size_t errlen)
{
    if (sqlutil_int(db, "SELECT count(*) FROM pragma_table_info('batches') WHERE name='first_alert_id'", 1) == 0 &&
        sqlutil_exec(db, batches_alerts_columns_sql, err, errlen) != 0)
        return -1;
    if (sqlutil_int(db, "SELECT count(*) FROM pragma_table_info('alerts') WHERE name='sealed'", 1) == 0 &&
        sqlutil_exec(db, alerts_sealed_column_sql, err, errlen) != 0)
        return -1;
    return 0;
}

/* Columns added since the tables were first made. */
/* After alerts_sql: the columns sequences added to the alerts table. */
static int add_alert_columns(sqlite3 *db, char *err, size_t errlen)
{
    if (sqlutil_int(db, "SELECT count(*) FROM pragma_table_info('alerts') WHERE name='sequence'", 1) == 0 &&
        sqlutil_exec(db, alerts_sequence_columns_sql, err, errlen) != 0)
        return -1;
    return 0;
}

static int add_missing_columns(sqlite3 *db, char *err, size_t errlen)
{
    if (sqlutil_int(db, "SELECT count(*) FROM pragma_table_info('connections') WHERE name='paused_count'", 1) == 0 &&
        sqlutil_exec(db, conn_pause_columns_sql, err, errlen) != 0)
        return -1;
    if (sqlutil_int(db, "SELECT count(*) FROM pragma_table_info('connections') WHERE name='sandbox'", 1) == 0 &&
        sqlutil_exec(db, conn_sandbox_columns_sql, err, errlen) != 0)
        return -1;
    if (sqlutil_int(db, "SELECT count(*) FROM pragma_table_info('runs') WHERE name='reopen_reason'", 1) == 0 &&
        sqlutil_exec(db, runs_reopen_column_sql, err, errlen) != 0)
        return -1;
    return 0;
}

static int setup_schema(struct sqlite_sink *s, const struct sink_sqlite_options *o, char *err, size_t errlen)
{
    char sql[256];
    snprintf(sql, sizeof(sql), "PRAGMA busy_timeout=%d", o->busy_timeout_ms);
    if (sqlutil_exec(s->db, sql, err, errlen) != 0)
        return -1;
    if (o->probe) {
        s->probe_deadline_ns = monotonic_ns() + (int64_t)o->busy_timeout_ms * 1000000;
        sqlite3_busy_handler(s->db, probe_busy, s);
    }
    if (check_is_ours(s->db, err, errlen) != 0)
        return -1;
    /* 16 KiB pages for a new database (an existing one keeps its own): the
     * writer's SQLite CPU per event drops by a quarter against 4 KiB (fewer
     * pages to balance, cache and frame into the WAL, bench/ref-sqlite-insert)
     * and rows pack ~3% tighter; larger pages gain nothing more. */
    if (sqlutil_exec(s->db, "PRAGMA page_size=16384", err, errlen) != 0 ||
        sqlutil_exec(s->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-32768", err,
                     errlen) != 0 ||
        retention_setup(s->db, err, errlen) != 0 ||
        sqlutil_exec(s->db, "BEGIN IMMEDIATE", err, errlen) != 0)
        return -1;
    snprintf(sql, sizeof(sql),
             "INSERT OR IGNORE INTO meta VALUES('schema_version','%d');"
             "INSERT OR IGNORE INTO meta VALUES('schema_v2_first_event_id','1')", SQLITE_SCHEMA_VERSION);
    if (sqlutil_exec(s->db, schema_sql, err, errlen) != 0 || add_missing_columns(s->db, err, errlen) != 0 ||
        create_events_table(s->db, err, errlen) != 0 ||
        check_schema_version(s, err, errlen) != 0 || create_lookup_tables(s->db, err, errlen) != 0 ||
        sqlutil_exec(s->db, views_sql, err, errlen) != 0 ||
        sqlutil_exec(s->db, alerts_sql, err, errlen) != 0 || add_alert_columns(s->db, err, errlen) != 0 ||
        add_alert_chain_columns(s->db, err, errlen) != 0 || container_rows_setup(s->db, err, errlen) != 0 ||
        event_indexes_apply(s->db, o->indexes, err, errlen) != 0 || event_indexes_ancestry(s->db, err, errlen) != 0 ||
        sqlutil_exec(s->db, sql, err, errlen) != 0 || chain_check_db(s, o, err, errlen) != 0) {
        sqlutil_exec(s->db, "ROLLBACK", sql, sizeof(sql));
        return -1;
    }
    /* reopen_reason: NULL at a daemon start (lost_file: "deleted" or "replaced").
     * A probe writes as much as a start (a full disk fails it), but no run:
     * killed half-way, it leaves nothing behind. */
    if (o->probe)
        snprintf(sql, sizeof(sql), "INSERT OR REPLACE INTO meta VALUES('last_check_ns', '%lld')",
                 (long long)realtime_ns());
    else
        sqlite3_snprintf((int)sizeof(sql), sql,
                         "INSERT INTO runs(started_ns, pid, reopen_reason) VALUES(%lld, %d, %Q)",
                         (long long)realtime_ns(), (int)getpid(), s->reopen_reason);
    if (sqlutil_exec(s->db, sql, err, errlen) != 0 || sqlutil_exec(s->db, "COMMIT", err, errlen) != 0)
        return -1;
    s->run_id = sqlite3_last_insert_rowid(s->db);
    return 0;
}

static int prepare_statements(struct sqlite_sink *s, char *err, size_t errlen)
{
    const char *insert_sql = s->stores_type_name ? insert_event_v1_sql : insert_event_sql;
    if (sqlite3_prepare_v3(s->db, insert_sql, -1, SQLITE_PREPARE_PERSISTENT, &s->insert_event, NULL) ||
        sqlite3_prepare_v3(s->db, upsert_conn_sql, -1, SQLITE_PREPARE_PERSISTENT, &s->upsert_conn, NULL) ||
        sqlite3_prepare_v3(s->db, update_run_sql, -1, SQLITE_PREPARE_PERSISTENT, &s->update_run, NULL) ||
        sqlite3_prepare_v3(s->db, insert_alert_sql, -1, SQLITE_PREPARE_PERSISTENT, &s->insert_alert, NULL) ||
        container_rows_prepare(s->db, &s->upsert_container) ||
        sqlite3_prepare_v3(s->db, chain_last_sql, -1, SQLITE_PREPARE_PERSISTENT, &s->chain_last, NULL) ||
        sqlite3_prepare_v3(s->db, chain_insert_sql, -1, SQLITE_PREPARE_PERSISTENT, &s->chain_insert, NULL)) {
        snprintf(err, errlen, "%s", sqlite3_errmsg(s->db));
        return -1;
    }
    return 0;
}

/* SQLite's memory statistics cost a mutex per allocation (~6% of the
 * writer's inserts, bench/ref_sqlite_insert) and nothing here reads them.
 * Only possible before SQLite initializes; later it fails, harmlessly. */
static void skip_memory_statistics(void)
{
    static bool done;
    if (!done)
        sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    done = true;
}

/* Opens the database at the path (creating it DB_FILE_MODE) and starts a
 * runs row there. 0, or -1 with why in err and nothing left open. */
static int open_db(struct sqlite_sink *s, char *err, size_t errlen)
{
    if (db_file_prepare(s->opts.path, err, errlen) != 0)
        return -1;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(s->opts.path, &s->db, flags, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s", s->db ? sqlite3_errmsg(s->db) : "out of memory");
        close_db(s, false);
        return -1;
    }
    sqlite3_extended_result_codes(s->db, 1);
    if (setup_schema(s, &s->opts, err, errlen) != 0 || prepare_statements(s, err, errlen) != 0) {
        close_db(s, false);
        return -1;
    }
    db_file_remember_sidecars(&s->sidecars, s->opts.path);
    if (!s->opts.probe)
        start_statistics(s);
    return 0;
}

struct sink *sink_sqlite_open(const struct sink_sqlite_options *o, char *err, size_t errlen)
{
    skip_memory_statistics();
    struct sqlite_sink *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->base.ops = &sqlite_ops;
    s->opts = *o;
    s->opts.path = strdup(o->path);
    s->opts.key_file = o->key_file ? strdup(o->key_file) : NULL;
    if (!s->opts.path || (o->key_file && !s->opts.key_file)) {
        snprintf(err, errlen, "out of memory");
        sqlite_close(&s->base);
        return NULL;
    }
    if (chain_open(s, o->key_file, err, errlen) != 0) {
        sqlite_close(&s->base);
        return NULL;
    }
    retention_init(&s->retention, o->path, o->retain_s, o->max_db_bytes, o->busy_timeout_ms);
    char why[512] = "";
    if (open_db(s, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "cannot use database %s: %s", o->path, why);
        sqlite_close(&s->base);
        return NULL;
    }
    s->base.first_conn_id = (uint64_t)sqlutil_int(s->db, "SELECT max(id) + 1 FROM connections", 1);
    return &s->base;
}
