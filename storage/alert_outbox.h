/* alert_outbox.h - the alerts table as the outbox of delivery
 * (--alerts-url): the delivered position, and reading what comes after it.
 *
 * Delivery (deliver/) posts the committed alerts in id order from a thread
 * of its own, reading them through its own read-only connection (WAL: it
 * never waits for the writer, nor the writer for it). How far it got (the
 * last alert id delivered or given up on, for its URL) it reports here; the
 * writer thread, which owns the database's only writing connection, writes
 * that position into alert_delivery in its next batch transaction, or when
 * idle, so SQLite keeps one writer. After each commit the writer publishes
 * the newest alert id, which wakes delivery. A restart reads the position
 * back: what was delivered after the last save (at most a second's worth,
 * or the one request in flight after a clean stop) is sent again: at least
 * once, in order. When the writer opens another file at the path (the
 * database was deleted or replaced under it), it bumps the generation:
 * delivery opens that file too and goes on from the position kept there.
 *
 * Threads: alert_outbox_set, _newest and _generation from delivery; _save,
 * _commit, _rollback, _lost, _reopened and _saved_position from the writer
 * (or, once the writer stopped, the thread closing the sink). A reader
 * belongs to one thread.
 */
#ifndef SECCHECKD_ALERT_OUTBOX_H
#define SECCHECKD_ALERT_OUTBOX_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#define ALERT_OUTBOX_TARGET_MAX 2048   /* a URL, with its NUL */

/* A target's position, as delivery set it. */
struct alert_outbox_position {
    char target[ALERT_OUTBOX_TARGET_MAX];
    int64_t position;
    uint64_t version;                /* bumped by each change */
    uint64_t generation;             /* the file generation the position counts in */
};

struct alert_outbox {
    pthread_mutex_t lock;            /* current, retired */
    struct alert_outbox_position current;
    /* The target delivery left (a SIGHUP to another URL) with its last
     * position, until the writer wrote it: switching back resumes there. */
    struct alert_outbox_position retired;
    atomic_uint_fast64_t generation; /* bumped when the writer opened another file at the path */
    atomic_int_fast64_t reopen_newest; /* that file's newest alert when the writer opened it */
    /* The writer's own: the version the database holds, the one written in
     * the open transaction, and the position retention may rely on. */
    uint64_t saved_version, written_version;
    int64_t saved_position, written_position;
    uint64_t retired_saved_version, retired_written_version;
    bool save_failed_logged;
    atomic_int_fast64_t newest;      /* the newest alert id committed */
    atomic_uint_fast64_t lost;       /* alerts of batches the database could not store */
    void (*on_commit)(void *data);   /* wakes delivery; set before the writer starts */
    void *on_commit_data;
};

void alert_outbox_init(struct alert_outbox *o);
void alert_outbox_destroy(struct alert_outbox *o);

/* ---- delivery's side ---- */

/* Every alert up to position was delivered to target, or given up on; the
 * position counts in the file of that generation (a position of another
 * file is never saved). target is the receiver's origin (scheme://host:port:
 * never a path or query, which may hold a token); a new target keeps the
 * previous one's last position to be written too. */
void alert_outbox_set(struct alert_outbox *o, const char *target, int64_t position, uint64_t generation);

/* The position delivery last set for target in this file generation,
 * written to the database or not yet (the writer writes it with its next
 * transaction, and a target that left keeps one slot): true with
 * *position, false when this run set none. A receiver delivery comes back
 * to starts from here rather than from an older saved row. */
bool alert_outbox_held_position(struct alert_outbox *o, const char *target, uint64_t generation, int64_t *position);

static inline int64_t alert_outbox_newest(struct alert_outbox *o)
{
    return atomic_load(&o->newest);
}

static inline uint64_t alert_outbox_generation(struct alert_outbox *o)
{
    return atomic_load(&o->generation);
}

/* After a new generation: the alerts after this id in the file were raised
 * since the daemon opened it (a URL the file does not know starts there). */
static inline int64_t alert_outbox_reopen_newest(struct alert_outbox *o)
{
    return atomic_load(&o->reopen_newest);
}

/* ---- the writer's side (every call a no-op for o NULL) ---- */

/* In the writer's transaction (or on its own, autocommit): writes the
 * position when it changed since the last one written. A failure is logged
 * once and costs only alerts sent again after a restart; the statement's
 * failure does not abort the transaction. */
void alert_outbox_save(struct alert_outbox *o, sqlite3 *db);

/* The transaction committed: what _save wrote holds; newest (> 0) is the
 * newest alert id it inserted, published and delivery woken. */
void alert_outbox_commit(struct alert_outbox *o, int64_t newest);

/* The transaction rolled back: what _save wrote is gone. */
void alert_outbox_rollback(struct alert_outbox *o);

/* A batch whose alerts never reached the table (store_failed). */
void alert_outbox_lost(struct alert_outbox *o, uint64_t alerts);

/* The writer opened another file at the path (db): a new generation, its
 * newest alert published, nothing saved there yet; delivery woken. */
void alert_outbox_reopened(struct alert_outbox *o, sqlite3 *db);

/* The position the database holds (0 before the first save), for
 * retention: a batch with a later alert is not yet delivered. INT64_MAX for
 * o NULL. */
int64_t alert_outbox_saved_position(const struct alert_outbox *o);

/* ---- reading the outbox (delivery's own read-only connection) ---- */

struct alert_outbox_reader {
    sqlite3 *db;
    sqlite3_stmt *after;
};

/* Opens path read-only (the daemon created it). 0, or -1 with err. */
int alert_outbox_reader_open(struct alert_outbox_reader *r, const char *path, char *err, size_t errlen);
void alert_outbox_reader_close(struct alert_outbox_reader *r);

/* Where delivery to a target starts, and why there. */
enum alert_outbox_from {
    OUTBOX_FROM_OWN,        /* the target's own saved position */
    OUTBOX_FROM_TAKEN,      /* a target the database does not know: take_over */
    OUTBOX_FROM_LATEST,     /* ... the target delivered to last: from_target's position */
    OUTBOX_FROM_NEWEST,     /* ... no target ever: the next alert on (history is not sent) */
};

struct alert_outbox_start {
    enum alert_outbox_from from;
    int64_t position;       /* every alert up to it counts as done */
    int64_t newest;         /* the newest alert id ever inserted */
    int64_t history;        /* OUTBOX_FROM_NEWEST: alerts stored up to position, not sent */
    char from_target[ALERT_OUTBOX_TARGET_MAX];   /* OUTBOX_FROM_LATEST */
};

/* Where delivery to target starts: its saved position; for a target the
 * database has never seen, take_over when >= 0 (the position of the URL it
 * replaces, on SIGHUP), else the position of the target delivered to last
 * (a URL changed across a restart goes on where the old one stopped), else
 * the newest alert (the first receiver gets the alerts raised from now on,
 * not the history). Never past the newest alert. 0, or -1 with err. */
int alert_outbox_start(struct alert_outbox_reader *r, const char *target, int64_t take_over,
                       struct alert_outbox_start *out, char *err, size_t errlen);

/* One alert row, valid until the next row or the end of the read.
 * output_fields and tags are spliced into the alert's JSON line as they
 * are, so a row written by something else whose text is not a JSON object
 * (array), or not UTF-8, comes as {} ([]), with replaced set. */
struct alert_outbox_row {
    int64_t id;
    const char *rule, *priority, *output, *output_fields, *tags;
    size_t output_len;
    int64_t time_ns;
    bool replaced;
    uint64_t suppressed;        /* held back before it (rules.h struct alert) */
    uint64_t evicted;           /* its connection's sequences' partial matches evicted before it */
    const char *sequence;       /* a sequence's alert: its steps (a JSON object), else NULL */
};

/* SQL of a column that is a valid JSON object (array), else NULL: the
 * readers of the alerts table select output_fields and tags through it. */
#define ALERT_OUTBOX_OBJECT_SQL(col) "CASE WHEN json_valid(" col ") AND json_type(" col ") = 'object' THEN " col " END"
#define ALERT_OUTBOX_ARRAY_SQL(col) "CASE WHEN json_valid(" col ") AND json_type(" col ") = 'array' THEN " col " END"

/* Such a column's text as a line can splice it: text when it is there and
 * UTF-8, else fallback ("{}" or "[]") and *replaced set. */
const char *alert_outbox_json_column(const char *text, size_t len, const char *fallback, bool *replaced);

/* Calls each for the alerts with id > after in id order, at most max_rows,
 * until each returns false (that row is not taken). The read ends before
 * returning (no snapshot is held). Returns the rows taken, -1 on a SQLite
 * error (err). */
typedef bool (*alert_outbox_row_cb)(const struct alert_outbox_row *row, void *data);
int alert_outbox_read(struct alert_outbox_reader *r, int64_t after, int max_rows, alert_outbox_row_cb each,
                      void *data, char *err, size_t errlen);

#endif
