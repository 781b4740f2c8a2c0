/* central.h - the central PostgreSQL copy of every host's events.
 *
 * Schema (created on first use, central_ensure_schema): the local tables
 * runs, connections, events, batches, alerts and container_info with
 * host_id added to every key,
 * their columns taken from the local database (INTEGER -> bigint, TEXT ->
 * text, BLOB -> bytea, detail -> jsonb) and added when a newer daemon has
 * more; hosts (one row per host: how far its chain got, totals, times),
 * gaps (batches a host lost to --max-db-size before they were shipped) and
 * refusals (batches refused because their chain did not follow); and the
 * local database's views written for PostgreSQL, with host_id.
 *
 * Exactly once: one central transaction holds whole batches, their events,
 * their batches rows, the runs and connections they touch, and the hosts
 * row's new position, which is read FOR UPDATE at the start. So the central
 * copy is always a prefix of each host's chain, a forwarder restarting
 * anywhere asks where it ends, and two writers for one host serialize.
 */
#ifndef SECCHECKD_FORWARD_CENTRAL_H
#define SECCHECKD_FORWARD_CENTRAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libpq-fe.h>

#include "local.h"

/* Refuses a URL with a password in it (other users see command lines), or
 * one libpq cannot parse. 0, or -1 with why in err. */
int central_check_url(const char *url, char *err, size_t errlen);

/* libpq's message (PQerrorMessage, PQresultErrorMessage) as one line for
 * a log: its lines (ERROR, DETAIL, HINT, LINE n, a connection failure's
 * indented hint) joined by "; ", a caret line pointing into LINE n and the
 * trailing newline left out. Cut to outlen. */
void central_message_line(const char *msg, char *out, size_t outlen);

/* Connects (connect_timeout 10 s unless the URL sets one). NULL with err,
 * and *lasting (may be NULL) when retrying cannot help: no password was
 * found for a server that wants one, or the server refused the password,
 * the role (pg_hba.conf), the database or the permission to connect
 * (SQLSTATE 28P01, 28000, 3D000, 42501). A server down, starting up or
 * full, or a network failure, can heal. */
PGconn *central_connect(const char *url, bool *lasting, char *err, size_t errlen);

/* Creates or extends the schema for l's tables; serialized between
 * forwarders by an advisory lock. 0, or -1 with err. */
int central_ensure_schema(PGconn *pg, const struct local *l, char *err, size_t errlen);

/* Whether this thread's last statement that failed was refused for the
 * data it held (SQLSTATE class 22, 23 or 42), not for the server's state:
 * a message that makes the server refuse it will never be taken. */
bool central_error_is_data(void);

/* Where a host's central chain ends. */
struct central_head {
    int64_t last_batch_id;          /* 0: nothing yet */
    uint8_t last_hash[CHAIN_HASH_LEN];   /* zeros when nothing yet */
    int64_t partial_chunks;         /* chunks of batch last_batch_id + 1 in (a batch sent in chunks) */
};

/* BEGIN, the hosts row created if new (its hostname, the machine's name
 * shown beside the id, set or updated; "" leaves it), then read FOR UPDATE. */
int central_begin(PGconn *pg, const char *host_id, const char *hostname, struct central_head *head, char *err,
                  size_t errlen);
/* The same for another host inside the open transaction (several hosts'
 * batches in one, rows locked in the order they come). */
int central_begin_host(PGconn *pg, const char *host_id, const char *hostname, struct central_head *head, char *err,
                       size_t errlen);
int central_commit(PGconn *pg, char *err, size_t errlen);
void central_rollback(PGconn *pg);

/* The central hash of one batch: 1 found, 0 not, -1 error. */
int central_batch_hash(PGconn *pg, const char *host_id, int64_t id, uint8_t out[CHAIN_HASH_LEN], char *err,
                       size_t errlen);

/* Records that batches first..last of host are lost; the chain resumes
 * at resume_hash. Inside the transaction; moves the hosts row on. */
int central_record_gap(PGconn *pg, const char *host_id, int64_t first, int64_t last,
                       const uint8_t resume_hash[CHAIN_HASH_LEN], char *err, size_t errlen);

/* Records (or counts again) a refused batch; inside the transaction. */
int central_record_refusal(PGconn *pg, const char *host_id, int64_t batch_id, const char *reason, char *err,
                           size_t errlen);

/* Where the rows central_ship copies come from: the daemon's database
 * (the direct path, central_local_source) or a message (jetstream/). copy
 * renders part's rows, selected by lo..hi as local.h says, as a binary
 * COPY stream of host_id and then the table's columns, through flush, and
 * sets span as local_copy_rows does. Rows, -1 a source error (err), -2
 * flush failed. */
struct central_source {
    const struct local *tables;     /* the tables' columns, and which the host has */
    int64_t (*copy)(void *ctx, enum local_part part, int64_t lo, int64_t hi, const char *host_id,
                    struct strbuf *out, size_t flush_at, local_flush_cb flush, void *flush_data,
                    struct local_span *span, char *err, size_t errlen);
    void *ctx;
};

void central_local_source(struct central_source *src, struct local *l);

/* One batch sent in parts (a JetStream message holds at most max_payload):
 * which one, from 1, and whether it is the last. */
struct central_chunk {
    int64_t index;
    bool final;
};

/* Ships b[0..n) (consecutive, chained) from src into the open transaction
 * and moves the hosts row to the last one; with chunk (n is 1), that part
 * of the batch: the batches and runs rows and the position's move come with
 * the final one. *events, *alerts: rows shipped. 0; -1 central error; -2
 * source error (rows missing or a read failure); err says which. */
int central_ship(PGconn *pg, const struct central_source *src, const char *host_id, const struct local_batch *b,
                 int n, const struct central_chunk *chunk, int64_t *events, int64_t *alerts, char *err,
                 size_t errlen);

/* Runs and connections change after their last batch (a connection's
 * close, a run's stop, counters): re-sends the rows from runs_from and
 * conns_from on (the oldest ones still open last time) into the open
 * transaction, of the connections those that may have changed since the
 * sync that saw up to conns_since (local_sync_since: conns_from - 1 for
 * all), and the container_info rows past the central copy's newest
 * (central_ship sends them with their batches). A message's source holds
 * the rows its publisher chose: conns_since is not used. *conns_rows (if
 * not NULL): the connections rows sent. 0, -1 central error, -2 source
 * error. */
int central_sync_open_rows(PGconn *pg, const struct central_source *src, const char *host_id, int64_t runs_from,
                           int64_t conns_from, int64_t conns_since, int64_t *conns_rows, char *err, size_t errlen);

/* Records a refused batch (central_record_refusal), the reason why and
 * what it means; reason gets the text recorded. */
int central_refuse(PGconn *pg, const char *host_id, int64_t batch_id, const char *why, char *reason,
                   size_t reasonlen, char *err, size_t errlen);

/* What central_apply did. */
enum central_applied {
    CENTRAL_SHIPPED,                /* shipped (the prefix that chains on, unless CENTRAL_WHOLE) */
    CENTRAL_ALREADY,                /* the central copy has them: nothing to do */
    CENTRAL_WAITING,                /* batches (or chunks) before them are missing: nothing done */
    CENTRAL_REFUSED,                /* their chain does not follow: recorded in refusals */
};

struct central_outcome {
    enum central_applied what;
    int shipped;                    /* whole batches shipped */
    int64_t events, alerts;         /* rows shipped */
    int64_t gap_first, gap_last;    /* a gap recorded before them, when first <= last */
    int64_t refused_id;
    char reason[640];               /* CENTRAL_REFUSED: as recorded */
};

#define CENTRAL_GAP_KNOWN 1u        /* batches before b[0] are lost for good (the host knows): record the gap */
#define CENTRAL_WHOLE 2u            /* all of b[0..n) or nothing (a message cannot be split) */

/* The one way batches enter the central copy, whichever path brought
 * them. In the transaction central_begin opened, head its position (moved
 * on here): b[0..n) (with chunk, one batch's part) already there are
 * skipped; batches after a hole wait, unless CENTRAL_GAP_KNOWN, which
 * records the hole in gaps; a batch whose prev_hash does not follow is
 * refused (recorded; the caller commits that); what chains on is shipped.
 * A batch left half-way by chunks and coming whole replaces its rows.
 * 0 with out, -1 central error, -2 source error (err). */
int central_apply(PGconn *pg, const struct central_source *src, const char *host_id, struct central_head *head,
                  const struct local_batch *b, int n, const struct central_chunk *chunk, unsigned flags,
                  struct central_outcome *out, char *err, size_t errlen);

/* `seccheckd verify --to URL --host-id ID [--key-file PATH]`: the chain of a
 * host's central copy, with the same checks and exit codes as verify.h. */
int central_verify_main(int argc, char **argv);

#endif
