/* conn_snapshots.h - the latest snapshot of each connection, kept until a
 * committed transaction holds it.
 *
 * The SQLite sink writes a batch's connection snapshots in the batch's
 * transaction. When that transaction fails (a full disk) the snapshots must
 * not go with it: the connections would stay "open" with stale counts, and
 * those opened and closed meanwhile would get no row. So every snapshot is
 * noted here first, a newer one replacing the older one of its connection,
 * and each transaction writes every snapshot not committed yet. Once one
 * commits, the closed connections are forgotten; the open ones stay, so
 * that a new database file (the old one deleted under the daemon) can be
 * given their rows again (conn_snapshots_uncommit_all).
 *
 * One record per connection: the open ones are bounded by
 * --max-connections, the closed ones waiting for a commit by
 * CONN_SNAPSHOTS_MAX_CLOSED; past that the oldest closed one is dropped and
 * counted in lost. Kept sorted by id (binary search; new connections have
 * the highest ids, so inserting is appending).
 */
#ifndef SECCHECKD_CONN_SNAPSHOTS_H
#define SECCHECKD_CONN_SNAPSHOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "batch.h"

#define CONN_SNAPSHOTS_MAX_CLOSED 65536

struct conn_snapshot {
    struct conn_record rec;
    bool committed;                /* a committed transaction holds this snapshot */
};

struct conn_snapshots {
    struct conn_snapshot *items;   /* sorted by rec.id */
    size_t n, cap;
    size_t closed_uncommitted;
    uint64_t lost;                 /* closed connections' rows given up (CONN_SNAPSHOTS_MAX_CLOSED) */
};

/* rec replaces the snapshot of its connection, uncommitted. 0; 1 when a
 * closed connection's row had to be given up to stay within bounds (lost
 * counts it); -1 out of memory (rec is not kept). */
int conn_snapshots_note(struct conn_snapshots *cs, const struct conn_record *rec);

/* Snapshots no committed transaction holds yet. */
size_t conn_snapshots_uncommitted(const struct conn_snapshots *cs);

/* The transaction that wrote every uncommitted snapshot committed. */
void conn_snapshots_committed(struct conn_snapshots *cs);

/* Every snapshot is to be written again (a new database file). */
void conn_snapshots_uncommit_all(struct conn_snapshots *cs);

void conn_snapshots_free(struct conn_snapshots *cs);

#endif
