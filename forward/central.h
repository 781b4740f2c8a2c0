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

/* Where a host's central chain ends. */
struct central_head {
    int64_t last_batch_id;          /* 0: nothing yet */
    uint8_t last_hash[CHAIN_HASH_LEN];   /* zeros when nothing yet */
};

/* BEGIN, the hosts row created if new (its hostname, the machine's name
 * shown beside the id, set or updated; "" leaves it), then read FOR UPDATE. */
int central_begin(PGconn *pg, const char *host_id, const char *hostname, struct central_head *head, char *err,
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

/* Ships b[0..n) (consecutive, chained, read in l's current snapshot) into
 * the open transaction and moves the hosts row to the last one. *events,
 * *alerts: rows shipped. 0; -1 central error; -2 local error (rows missing
 * or a read failure); err says which. */
int central_ship(PGconn *pg, struct local *l, const char *host_id, const struct local_batch *b, int n,
                 int64_t *events, int64_t *alerts, char *err, size_t errlen);

/* Runs and connections change after their last batch (a connection's
 * close, a run's stop, counters): re-sends the rows from runs_from and
 * conns_from on (the oldest ones still open last time) into the open
 * transaction, and the container_info rows past the central copy's newest
 * (central_ship sends them with their batches). 0, -1 central error, -2
 * local error. */
int central_sync_open_rows(PGconn *pg, struct local *l, const char *host_id, int64_t runs_from, int64_t conns_from,
                           char *err, size_t errlen);

/* `seccheckd verify --to URL --host-id ID [--key-file PATH]`: the chain of a
 * host's central copy, with the same checks and exit codes as verify.h. */
int central_verify_main(int argc, char **argv);

#endif
