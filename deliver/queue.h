/* queue.h - alerts waiting in memory when there is no database to be the
 * outbox: a bounded ring of copies, filled by the writer thread, emptied by
 * delivery. Internal to deliver/.
 *
 * The room is shared by the connections whose alerts wait in it: while it
 * has room every alert goes in; when it is full, a connection holding less
 * than its share (the room over the connections waiting, itself included)
 * takes the place of the newest alert of the connection holding the most,
 * and one holding its share or more has its new alert dropped. So one
 * sandbox's burst cannot take the whole queue from another's: the flooder's
 * alerts go first (the audit's: one connection's 10,000 filled a queue of
 * 10,000 and the victim's one alert was dropped). Each connection's alerts
 * keep their order; the one delivery is working on is never taken away. */
#ifndef SECCHECKD_DELIVER_QUEUE_H
#define SECCHECKD_DELIVER_QUEUE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rules.h"

struct queued_alert {
    char *line;          /* the Falco JSON line (no newline) */
    size_t len;
    const char *rule;    /* in the same allocation */
    uint64_t conn_id;    /* the connection whose event raised it */
};

struct queue_holder;     /* a connection's count of queued alerts (queue.c) */

#define QUEUE_HOLDER_BUCKETS 1024

struct alert_queue {
    pthread_mutex_t lock;
    struct queued_alert *ring;
    size_t cap, head;
    atomic_size_t count;           /* read without the lock (the lag metric) */
    size_t bytes, max_bytes;
    struct queue_holder *holders[QUEUE_HOLDER_BUCKETS];
    size_t nholders;               /* connections with alerts queued */
};

/* 0, or -1 when out of memory. */
int queue_init(struct alert_queue *q, size_t max_alerts, size_t max_bytes);
void queue_free(struct alert_queue *q);

/* Copies the alerts, in order, sharing the room as above; returns how many
 * were dropped (new ones that did not fit, and queued ones that gave up
 * their place). */
uint64_t queue_push(struct alert_queue *q, const struct alert_list *l);

/* The oldest alert, left in place (only the consumer pops it, so it stays
 * valid until queue_pop). false when empty. */
bool queue_front(struct alert_queue *q, struct queued_alert *out);
void queue_pop(struct alert_queue *q);

static inline size_t queue_count(struct alert_queue *q)
{
    return atomic_load(&q->count);
}

#endif
