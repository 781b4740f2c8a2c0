/* sink.h - where batches go. One small interface; each sink is one file.
 *
 * write_batch is called on the writer thread for sinks that do I/O and on the
 * loop thread for the others; it must fill batch->result so that every event
 * is counted as stored, discarded or failed. Nothing else in the daemon knows
 * which sink is running.
 */
#ifndef SECCHECKD_SINK_H
#define SECCHECKD_SINK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alert_line.h"
#include "alert_outbox.h"
#include "batch.h"
#include "container.h"
#include "rules.h"

struct sink;

/* The rules' sequences, for the metrics (rules.h struct rules_engine_stats). */
struct sink_sequences {
    uint64_t partials, bytes;          /* held now */
    uint64_t started, evicted, expired, cancelled, dropped;
};

struct sink_ops {
    const char *name;
    bool needs_writer_thread;
    /* Writes (or discards) every event and connection snapshot of b. */
    void (*write_batch)(struct sink *s, struct batch *b);
    /* Optional: called on the writer thread when no batch came for a while,
     * for upkeep (retention) that must not wait for the next event. */
    void (*idle)(struct sink *s);
    /* Optional: new retention bounds (SIGHUP); any thread. */
    void (*set_retention)(struct sink *s, uint64_t retain_s, uint64_t max_db_bytes);
    /* Optional: a restart will hand over soon (any thread): upkeep that
     * would otherwise wait for the handover or the new image is done now,
     * on the writer thread, while the daemon still reads (SQLite:
     * checkpoint the WAL after the next batch). */
    void (*handoff_soon)(struct sink *s);
    /* Optional: a restart's check (server/restart_check.h) opens the same
     * files from another process and writes (on), or is done (off); any
     * thread. The writer leaves it room: SQLite, a gap after each
     * transaction, so the check's own gets the write lock even while this
     * writer is busy the whole time. */
    void (*checking)(struct sink *s, bool on);
    /* Optional: a restart hands over to a new image of the daemon right
     * after this run: finish and close must skip what only a last stop
     * needs (query statistics, a WAL checkpoint), for the new image starts
     * reading when they are done. Called just before finish. */
    void (*handoff)(struct sink *s);
    /* Optional: events retention deleted so far; any thread. Read when
     * asked, not carried back on batches: retention also deletes when no
     * batch comes (sink idle). A sink that drives others sums theirs. */
    uint64_t (*retention_deleted)(struct sink *s);
    /* Optional (the rules' stage): the processes its tables hold and those
     * evicted to stay under --max-processes, as of the last batch; any
     * thread. */
    void (*process_table)(struct sink *s, uint64_t *processes, uint64_t *evictions);
    /* Optional (the rules' stage): its sequences' partial matches, as of
     * the last batch; any thread. */
    void (*sequences)(struct sink *s, struct sink_sequences *out);
    /* Marks the end of this daemon run; last call before close. */
    void (*finish)(struct sink *s, int64_t stopped_ns);
    void (*close)(struct sink *s);
    /* Optional: shutdown just set a flag of s (any thread, while the writer
     * may be in write_batch); a sink that drives others passes it on. */
    void (*stopping)(struct sink *s);
    /* Optional: a new rule set (SIGHUP) for the batches written from now
     * on; takes ownership of rs. Any thread. */
    void (*set_rules)(struct sink *s, struct rule_set *rs);
    /* Optional (the containers' stage): what its cache and view did; any
     * thread. */
    void (*container_stats)(struct sink *s, struct container_cache_stats *st, uint64_t *foreign,
                            uint64_t *over_limit);
};

struct sink {
    const struct sink_ops *ops;
    atomic_bool giving_up;    /* shutdown: stop retrying transient failures */
    /* Shutdown's grace for the writer is over: a write that blocks (a reader
     * that stopped reading) fails, and every later one fails at once, each
     * event counted as failed. The pipeline interrupts a blocked write. */
    atomic_bool cut_off;
    uint64_t first_conn_id;   /* ids below this were used by earlier runs */
    char error[256];          /* last error, for the log */
};

struct sink_sqlite_options {
    const char *path;
    int busy_timeout_ms;
    const char *key_file;     /* HMAC key for the batch chain; NULL: plain SHA-256 */
    uint64_t retain_s;        /* delete events older than this; 0: never */
    uint64_t max_db_bytes;    /* delete the oldest past this size; 0: no limit */
    unsigned indexes;         /* enum event_index bits: the events indexes kept */
    bool probe;               /* `seccheckd check`: open as a start would, committing meta's
                                 last_check_ns instead of a runs row (a full disk fails it alike) */
    /* Delivery's position, kept in the batch transactions, and the newest
     * alert published after each (alert_outbox.h); NULL: no --alerts-url.
     * Retention keeps the batches of alerts not yet delivered. */
    struct alert_outbox *outbox;
};

/* Opening failures write a message naming the problem into err. */
struct sink *sink_sqlite_open(const struct sink_sqlite_options *opts, char *err, size_t errlen);
struct sink *sink_discard_open(void);
/* One gVisor tracereplay file per connection in dir (client-NNNN, numbered
 * on from the files already there). */
struct sink *sink_record_open(const char *dir, char *err, size_t errlen);

struct sink_ndjson_options {
    const char *path;         /* "-": standard output */
    uint64_t max_bytes;       /* rotate past this size; 0: never */
    unsigned keep;            /* rotated files kept: PATH.1 .. PATH.keep */
};
/* One JSON object per event, for log shippers (Fluent Bit, Vector, OTel). */
struct sink *sink_ndjson_open(const struct sink_ndjson_options *opts, char *err, size_t errlen);
/* One human-readable line per event, for debugging ("-": stdout). */
struct sink *sink_text_open(const char *path, char *err, size_t errlen);

/* Every batch to each sink in turn (takes ownership of them). The first
 * sink's result is the batch's result (what the counts report); a later
 * sink that fails logs it and counts it in its own way. */
struct sink *sink_tee_open(struct sink **sinks, size_t n, char *err, size_t errlen);

struct sink_rules_options {
    struct rules_engine_config engine;
    const char *alerts_path;      /* one line per alert ("-": stdout); NULL: none */
    struct alert_line_style alerts_style;   /* Falco's JSON or text line (alert_line.h) */
    uint64_t alerts_max_bytes;    /* rotate past this size; 0: never */
    unsigned alerts_keep;         /* rotated files kept */
    /* A seccheckd database whose recent process events rebuild the process
     * tables at start (after a restart); NULL: start with empty tables. */
    const char *history_db;
    /* Optional: each batch's alerts once the sink is done with it, on the
     * writer thread (delivery without a database: deliver.h). */
    void (*on_alerts)(const struct alert_list *alerts, void *data);
    void *on_alerts_data;
};
/* Detection in front of a sink: evaluates rules (rules.h) over every event
 * of a batch on the writer thread, so the batch reaches inner with its
 * alerts (which the SQLite sink stores in the same transaction), then
 * writes the alert lines. Takes ownership of inner and rules (NULL: none
 * yet); on failure closes both. */
struct sink *sink_rules_open(struct sink *inner, struct rule_set *rules, const struct sink_rules_options *o,
                             char *err, size_t errlen);

/* Container records from runsc's state (container.h) in front of inner:
 * on the writer thread, a container's first events wait (bounded) for its
 * first lookup, the records go with the batches to the SQLite sink
 * (container_info rows), and connection snapshots get their sandbox. view
 * is the one the rules read (the engine's config holds it too). history_db
 * (NULL: none): the database whose open connections keep their sandbox
 * after a restart. Takes ownership of inner, cache and view; on failure
 * closes them. */
struct sink *sink_containers_open(struct sink *inner, struct container_cache *cache, struct container_view *view,
                                  const char *history_db, char *err, size_t errlen);

/* False for a sink without the containers' stage. */
static inline bool sink_container_stats(struct sink *s, struct container_cache_stats *st, uint64_t *foreign,
                                        uint64_t *over_limit)
{
    if (!s->ops->container_stats)
        return false;
    s->ops->container_stats(s, st, foreign, over_limit);
    return true;
}

static inline void sink_write_batch(struct sink *s, struct batch *b) { s->ops->write_batch(s, b); }
static inline void sink_finish(struct sink *s, int64_t stopped_ns)
{
    if (s->ops->finish)
        s->ops->finish(s, stopped_ns);
}
static inline void sink_handoff_soon(struct sink *s)
{
    if (s->ops->handoff_soon)
        s->ops->handoff_soon(s);
}
static inline void sink_checking(struct sink *s, bool on)
{
    if (s->ops->checking)
        s->ops->checking(s, on);
}
static inline void sink_handoff(struct sink *s)
{
    if (s->ops->handoff)
        s->ops->handoff(s);
}
static inline void sink_close(struct sink *s) { s->ops->close(s); }
static inline void sink_give_up(struct sink *s)
{
    atomic_store(&s->giving_up, true);
    if (s->ops->stopping)
        s->ops->stopping(s);
}
static inline void sink_cut_off(struct sink *s)
{
    atomic_store(&s->cut_off, true);
    if (s->ops->stopping)
        s->ops->stopping(s);
}
static inline void sink_idle(struct sink *s)
{
    if (s->ops->idle)
        s->ops->idle(s);
}
/* False for a sink without rules. */
static inline bool sink_sequences(struct sink *s, struct sink_sequences *out)
{
    if (!s->ops->sequences)
        return false;
    s->ops->sequences(s, out);
    return true;
}
/* False for a sink without rules. */
static inline bool sink_process_table(struct sink *s, uint64_t *processes, uint64_t *evictions)
{
    if (!s->ops->process_table)
        return false;
    s->ops->process_table(s, processes, evictions);
    return true;
}
static inline uint64_t sink_retention_deleted(struct sink *s)
{
    return s->ops->retention_deleted ? s->ops->retention_deleted(s) : 0;
}
/* A sink without rules frees rs. */
void sink_set_rules(struct sink *s, struct rule_set *rs);
static inline void sink_set_retention(struct sink *s, uint64_t retain_s, uint64_t max_db_bytes)
{
    if (s->ops->set_retention)
        s->ops->set_retention(s, retain_s, max_db_bytes);
}

#endif
