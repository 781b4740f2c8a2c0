#include "queue.h"

#include <stdlib.h>
#include <string.h>

int queue_init(struct alert_queue *q, size_t max_alerts, size_t max_bytes)
{
    memset(q, 0, sizeof(*q));
    q->ring = calloc(max_alerts ? max_alerts : 1, sizeof(*q->ring));
    if (!q->ring)
        return -1;
    q->cap = max_alerts ? max_alerts : 1;
    q->max_bytes = max_bytes;
    atomic_init(&q->count, 0);
    pthread_mutex_init(&q->lock, NULL);
    return 0;
}

void queue_free(struct alert_queue *q)
{
    if (!q->ring)
        return;
    while (queue_count(q))
        queue_pop(q);
    free(q->ring);
    q->ring = NULL;
    pthread_mutex_destroy(&q->lock);
}

static char *copy_alert(const struct alert *a, struct queued_alert *out)
{
    size_t rule_len = strlen(a->rule);
    char *p = malloc(a->json_len + 1 + rule_len + 1);
    if (!p)
        return NULL;
    memcpy(p, a->json, a->json_len);
    p[a->json_len] = '\0';
    memcpy(p + a->json_len + 1, a->rule, rule_len + 1);
    *out = (struct queued_alert){.line = p, .len = a->json_len, .rule = p + a->json_len + 1};
    return p;
}

uint64_t queue_push(struct alert_queue *q, const struct alert_list *l)
{
    uint64_t dropped = 0;
    pthread_mutex_lock(&q->lock);
    for (size_t i = 0; i < l->count; i++) {
        const struct alert *a = &l->items[i];
        size_t n = atomic_load(&q->count);
        struct queued_alert item;
        if (dropped || n == q->cap || q->bytes + a->json_len > q->max_bytes || !copy_alert(a, &item)) {
            dropped++;   /* and every later one: no gap in what is queued */
            continue;
        }
        q->ring[(q->head + n) % q->cap] = item;
        q->bytes += item.len;
        atomic_store(&q->count, n + 1);
    }
    pthread_mutex_unlock(&q->lock);
    return dropped;
}

bool queue_front(struct alert_queue *q, struct queued_alert *out)
{
    pthread_mutex_lock(&q->lock);
    bool any = atomic_load(&q->count) > 0;
    if (any)
        *out = q->ring[q->head];
    pthread_mutex_unlock(&q->lock);
    return any;
}

void queue_pop(struct alert_queue *q)
{
    pthread_mutex_lock(&q->lock);
    size_t n = atomic_load(&q->count);
    if (n) {
        struct queued_alert *item = &q->ring[q->head];
        q->bytes -= item->len;
        free(item->line);
        item->line = NULL;
        q->head = (q->head + 1) % q->cap;
        atomic_store(&q->count, n - 1);
    }
    pthread_mutex_unlock(&q->lock);
}
