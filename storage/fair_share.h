/* fair_share.h - who holds what the writer has not committed yet.
 *
 * Every connection has a share account. What it reads is charged to its
 * account and to the batch it went into (the batch keeps one share entry
 * per account); when the sink is done with the batch, the loop thread
 * releases the batch and each account gets its events and bytes back. So
 * at any time an account says how much of the uncommitted queue is that
 * connection's, and the totals say how much is queued in all.
 *
 * Under backpressure the server asks share_over_fair: more than the queued
 * total divided among the connections holding any. Those pause (block mode)
 * or have their packets dropped (drop mode); the others keep reading.
 *
 * Loop thread only: the writer thread never touches shares. An account
 * lives until its connection closed and every batch charged to it came
 * back (a reference count), so a late release never sees freed memory.
 */
#ifndef SECCHECKD_FAIR_SHARE_H
#define SECCHECKD_FAIR_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "batch.h"

struct fair_share {
    uint64_t events;        /* charged and not yet released, all accounts */
    uint64_t bytes;
    unsigned holders;       /* accounts holding at least one event */
};

struct share_account {
    struct fair_share *pool;
    uint64_t events;        /* this connection's part of the queue */
    uint64_t bytes;
    unsigned refs;          /* the connection, plus each batch with an entry */
    size_t hint;            /* index of its entry in the batch it was last charged to */
};

/* A fresh account in pool; NULL when out of memory. */
struct share_account *share_account_new(struct fair_share *pool);

/* The connection is done with it; freed once no batch refers to it. */
void share_account_drop(struct share_account *a);

/* One packet of len bytes went into batch b for account a. -1 (nothing
 * charged) only when out of memory for the batch's share entry. */
int share_charge(struct share_account *a, struct batch *b, size_t len);

/* The sink is done with b: every account charged in it gets its part back.
 * Call before b is reset or freed. */
void share_release(struct batch *b);

/* Does a hold more than the queued total divided among the accounts
 * holding any? An account holding nothing never does. */
bool share_over_fair(const struct share_account *a);

#endif
