/* queue.h - alerts waiting in memory when there is no database to be the
 * outbox: a bounded ring of copies, filled by the writer thread, emptied by
 * delivery. Internal to deliver/. */
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
};

struct alert_queue {
    pthread_mutex_t lock;
    struct queued_alert *ring;
    size_t cap, head;
    atomic_size_t count;           /* read without the lock (the lag metric) */
    size_t bytes, max_bytes;
};

/* 0, or -1 when out of memory. */
int queue_init(struct alert_queue *q, size_t max_alerts, size_t max_bytes);
void queue_free(struct alert_queue *q);

/* Copies the alerts that fit, in order; returns how many did not (the
 * newest: what is queued keeps its order and nothing in it is skipped). */
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
