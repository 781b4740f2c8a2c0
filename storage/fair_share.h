/* fair_share.h - who holds what the writer has not committed yet, and who
 * holds more than their fair share of it.
 *
 * Every connection has a share account. What it reads is charged to its
 * account and to the batch it went into (the batch keeps one share entry
 * per account); when the sink is done with the batch, the loop thread
 * releases the batch and each account gets its part back. So at any time an
 * account says how much of the uncommitted queue is that connection's.
 *
 * Parts are counted in units of batch room: one event, or more for a large
 * one (one unit per max_bytes / max_events arena bytes it took: its copy and
 * its decoded fields), so a batch holds about max_events units whichever
 * limit fills it first.
 *
 * An account is over its fair share when it holds more than what is queued
 * divided among the open accounts (connections), and more than the queue's
 * room (queue_max batches) divided so: a quiet connection holds little, so
 * the floods are over; a lone flood is over once another connection is open
 * and it holds half the room; when little is queued (a stalled writer) the
 * quiet ones are not singled out for what they hold meanwhile.
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

struct share_account;

struct fair_share {
    uint64_t room;          /* units the queue holds: queue_max * max_events */
    size_t unit_bytes;      /* a packet costs one unit per this many bytes, at least one */
    uint64_t units;         /* charged and not yet released, all accounts */
    unsigned holders;       /* accounts holding at least one unit */
    unsigned open;          /* accounts whose connection is open */
};

struct share_account {
    struct fair_share *pool;
    uint64_t units;         /* this connection's part of the queue */
    uint64_t events;
    unsigned refs;          /* the connection, plus each batch with an entry */
    size_t hint;            /* index of its entry in the batch it was last charged to */
};

/* An empty pool for a queue of queue_max batches of limits. */
void fair_share_init(struct fair_share *pool, size_t queue_max, const struct batch_limits *limits);

/* A fresh account in pool; NULL when out of memory. */
struct share_account *share_account_new(struct fair_share *pool);

/* The connection is done with it; freed once no batch refers to it. */
void share_account_drop(struct share_account *a);

/* One event taking bytes of b's arena went into batch b for account a. -1
 * (nothing charged) only when out of memory for the batch's share entry. */
int share_charge(struct share_account *a, struct batch *b, size_t bytes);

/* The sink is done with b: every account charged in it gets its part back.
 * Call before b is reset or freed. */
void share_release(struct batch *b);

/* Does a hold more than num/den of its fair share (see above)? The server
 * shrinks the share as the reserve fills, so the floods that dropped under
 * it do not use up the room the quiet ones read into. */
bool share_over_fair(const struct share_account *a, uint64_t num, uint64_t den);

#endif
