/* local.h - the forwarder's side of the daemon's SQLite database: what the
 * daemon has committed, read in snapshots while it keeps writing (WAL), and
 * the forward_progress table the forwarder keeps there for retention.
 *
 * Tables are described by their columns as the database declares them
 * (PRAGMA table_xinfo, so generated columns such as schema 2's type_name are
 * shipped as plain values), never by a list compiled in: a database written by an
 * older or newer daemon forwards the columns it has.
 */
#ifndef SECCHECKD_FORWARD_LOCAL_H
#define SECCHECKD_FORWARD_LOCAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#include "chain.h"
#include "strbuf.h"

#define LOCAL_MAX_COLUMNS 96
#define LOCAL_NAME_MAX 64

enum local_kind { LOCAL_INT, LOCAL_REAL, LOCAL_TEXT, LOCAL_BLOB, LOCAL_JSON };

struct local_column {
    char name[LOCAL_NAME_MAX];      /* [a-z0-9_] only: checked, then used in SQL */
    enum local_kind kind;
};

struct local_table {
    const char *name;
    struct local_column cols[LOCAL_MAX_COLUMNS];
    int ncols;
};

/* A batches row (chain.h). */
struct local_batch {
    int64_t id, run_id, first, last, events, committed_ns, keyed;
    bool has_range;                 /* first/last not NULL */
    uint8_t prev[CHAIN_HASH_LEN], hash[CHAIN_HASH_LEN];
};

struct local {
    sqlite3 *db;
    struct local_table events, batches, runs, connections;
    struct local_table alerts;      /* the rules' alerts, shipped with their events' batches */
    bool has_alerts;                /* a database written before the alerts table has none */
    struct local_table container_info;   /* container names (--runsc-root), shipped as they change */
    bool has_container_info;
    sqlite3_stmt *batches_after;
    sqlite3_stmt *batch_by_id;
    bool in_snapshot;
    bool progress_ready;            /* forward_progress exists */
    /* What the last sync the target took left it knowing (local_sync_*). */
    bool sync_known;
    int64_t sync_seen, sync_noted_seen;
};

/* Names l's tables (events, alerts, ...): their columns are read later. */
void local_name_tables(struct local *l);

/* Opens path read-write without creating it (the daemon creates it).
 * 0, or -1 with err, and *lasting when retrying cannot help (path does not
 * exist, is not a file, cannot be opened). */
int local_open(struct local *l, const char *path, bool *lasting, char *err, size_t errlen);
void local_close(struct local *l);

/* Starts / ends one read snapshot; everything between sees one state. */
int local_begin(struct local *l, char *err, size_t errlen);
void local_end(struct local *l);

/* Re-reads the tables' columns (alerts when the database has them);
 * *changed: they differ from before.
 * 0, or -1 with err (a table missing: not a seccheckd database yet), and
 * *lasting when it is not one and will not become one (not a database, or
 * tables of its own without ours). */
int local_load_columns(struct local *l, bool *changed, bool *lasting, char *err, size_t errlen);

/* Up to max batches with id > after, in id order, stopping once their
 * events reach max_events (at least one batch). Returns how many, -1 on error. */
int local_batches_after(struct local *l, int64_t after, int max, int64_t max_events, struct local_batch *out,
                        char *err, size_t errlen);
/* 1 found, 0 not, -1 error. */
int local_batch_by_id(struct local *l, int64_t id, struct local_batch *out);

/* Batches after id: how many, their events, the oldest one's commit time
 * (0 if none); and the newest batch id. */
struct local_lag {
    int64_t batches, events, oldest_committed_ns, newest_id;
};
int local_lag_after(struct local *l, int64_t after, struct local_lag *lag);

/* Renders rows of t as a binary COPY stream (copy_binary.h) of the fields
 * host_id (unless NULL), then t's columns, from
 *   SELECT <t's columns> FROM t <where> (bound ?1 = lo, ?2 = hi)
 * calling flush whenever out passes flush_at bytes and at the end.
 * Returns rows rendered, -1 on a SQLite error or a value that does not fit
 * its column's type, -2 if flush failed. */
typedef int (*local_flush_cb)(struct strbuf *out, void *data);
/* Seen while rendering: the smallest and largest integer value of one
 * column (col -1: none tracked; min > max when no row had one). */
struct local_span {
    int col;
    int64_t min, max;
};
int64_t local_copy_rows(struct local *l, const struct local_table *t, const char *where, int64_t lo, int64_t hi,
                        const char *host_id, struct strbuf *out, size_t flush_at, local_flush_cb flush, void *data,
                        struct local_span *span, char *err, size_t errlen);

/* The rows of each table that go with a run of batches, wherever they go
 * (a central transaction, a JetStream message), each selected by lo..hi: */
enum local_part {
    LOCAL_PART_EVENTS,              /* events lo..hi (ids), in id order */
    LOCAL_PART_ALERTS,              /* the alerts of the events lo..hi, in id order */
    LOCAL_PART_NAMES,               /* container_info rows with id > lo, in id order */
    LOCAL_PART_BATCHES,             /* batches lo..hi */
    LOCAL_PART_RUNS,                /* the runs of the batches lo..hi */
    LOCAL_PART_CONNECTIONS,         /* connections lo..hi */
    LOCAL_PART_OPEN_RUNS,           /* runs from id lo on (local_open_marks) */
    LOCAL_PART_OPEN_CONNECTIONS,    /* connections from id lo on that may have changed: local_sync_since */
    LOCAL_PARTS
};

/* The table of a part's rows; NULL when the database has none (no alerts
 * or container_info table). */
const struct local_table *local_part_table(const struct local *l, enum local_part part);

/* local_copy_rows for a part (host_id NULL: rows without it). A part whose
 * table the database lacks renders nothing and returns 0 (flush not called). */
int64_t local_copy_part(struct local *l, enum local_part part, int64_t lo, int64_t hi, const char *host_id,
                        struct strbuf *out, size_t flush_at, local_flush_cb flush, void *data,
                        struct local_span *span, char *err, size_t errlen);

/* local_copy_part with only cols' columns (cols->name: the part's table,
 * its columns some of that table's): a part whose table is not cols->name
 * renders nothing and returns 0. */
int64_t local_copy_part_columns(struct local *l, enum local_part part, const struct local_table *cols, int64_t lo,
                                int64_t hi, const char *host_id, struct strbuf *out, size_t flush_at,
                                local_flush_cb flush, void *data, struct local_span *span, char *err, size_t errlen);

/* One value of st's column col as a field of a binary COPY row, in its
 * column's binary form (kind): a value of another storage class is
 * converted where that loses nothing, as the server would take its text;
 * text and JSON made acceptable to the server (copy_binary.h). 0, or -1
 * for a value its kind cannot hold. */
int local_render_value(struct strbuf *out, sqlite3_stmt *st, int col, enum local_kind kind);

/* The index of t's column name, -1 if it has none. */
int local_column_index(const struct local_table *t, const char *name);

/* PRAGMA data_version: changes when another connection (the daemon)
 * commits. */
int64_t local_data_version(struct local *l);

/* The oldest runs and connections rows still open (stopped_ns / close_ns
 * NULL), or one past the newest when none is: from there on, rows may still
 * change. */
void local_open_marks(struct local *l, int64_t *runs_from, int64_t *conns_from);
/* The highest connection id (0: none). */
int64_t local_last_connection_id(struct local *l);

/* Syncs send the connections that may have changed since the last sync
 * the target took, not every row from the oldest still open: with one
 * long-lived sandbox and many short ones after it, that grew with every
 * connection (an agent host: a row per sandbox, every second). Those that
 * may have changed are the ones open then (kept in a TEMP table of this
 * connection), those opened since, and those open now.
 *
 * local_sync_since: the hi to give LOCAL_PART_OPEN_CONNECTIONS with from:
 * the newest id the last taken sync saw, or from - 1 (every row from from
 * on) when there is none: a new connection to the database, or after
 * local_sync_forget. local_sync_note, in the snapshot the sync is read in:
 * which of the rows from from on are open, and the newest id.
 * local_sync_taken: the target committed (or the stream stored) the sync
 * noted last. 0, or -1 with err (the next sync is then a whole one). */
int64_t local_sync_since(const struct local *l, int64_t from);
int local_sync_note(struct local *l, int64_t from, char *err, size_t errlen);
int local_sync_taken(struct local *l, char *err, size_t errlen);
void local_sync_forget(struct local *l);
/* How often a whole sync goes all the same: a target that lost a sync
 * (restored, or a message it set aside) gets every row again. */
#define LOCAL_SYNC_WHOLE_EVERY_S 600

/* The comma list of t's column names, for COPY and SELECT. */
void local_column_list(const struct local_table *t, struct strbuf *out);

/* How far the central server has every batch, for retention. Its own short
 * write transaction. 0, or -1 with err. */
int local_save_progress(struct local *l, const char *target, const char *host_id, int64_t batch_id, char *err,
                        size_t errlen);

#endif
