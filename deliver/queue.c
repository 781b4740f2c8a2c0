/* queue.c - the in-memory delivery queue, shared by connection (queue.h). */
#include "queue.h"

#include <stdlib.h>
#include <string.h>

struct queue_holder {
    struct queue_holder *next;
    uint64_t conn_id;
    size_t queued;
};

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

static struct queue_holder **holder_link(struct alert_queue *q, uint64_t conn_id)
{
    struct queue_holder **p = &q->holders[(conn_id * 0x9e3779b97f4a7c15ull >> 40) % QUEUE_HOLDER_BUCKETS];
    while (*p && (*p)->conn_id != conn_id)
        p = &(*p)->next;
    return p;
}

static size_t held_by(struct alert_queue *q, uint64_t conn_id)
{
    struct queue_holder *h = *holder_link(q, conn_id);
    return h ? h->queued : 0;
}

/* One more (+1) or one less (-1) alert of conn_id queued; -1 out of memory. */
static int hold(struct alert_queue *q, uint64_t conn_id, int delta)
{
    struct queue_holder **p = holder_link(q, conn_id);
    if (!*p) {
        if (delta < 0 || !(*p = calloc(1, sizeof(**p))))
            return -1;
        (*p)->conn_id = conn_id;
        q->nholders++;
    }
    (*p)->queued += (size_t)delta;
    if ((*p)->queued == 0) {
        struct queue_holder *gone = *p;
        *p = gone->next;
        free(gone);
        q->nholders--;
    }
    return 0;
}

/* The connection holding the most, other than the one at the head (whose
 * oldest alert delivery may be sending). */
static struct queue_holder *largest(struct alert_queue *q)
{
    struct queue_holder *best = NULL;
    for (size_t b = 0; b < QUEUE_HOLDER_BUCKETS; b++)
        for (struct queue_holder *h = q->holders[b]; h; h = h->next)
            if (!best || h->queued > best->queued)
                best = h;
    return best;
}

/* Drops the newest queued alert of conn_id, never the head (position 0:
 * delivery may hold it); the alerts after it move up one. true when one went. */
static bool drop_newest_of(struct alert_queue *q, uint64_t conn_id)
{
    size_t n = atomic_load(&q->count);
    for (size_t k = n; k-- > 1;) {
        struct queued_alert *item = &q->ring[(q->head + k) % q->cap];
        if (item->conn_id != conn_id)
            continue;
        q->bytes -= item->len;
        free(item->line);
        for (size_t j = k; j + 1 < n; j++)
            q->ring[(q->head + j) % q->cap] = q->ring[(q->head + j + 1) % q->cap];
        q->ring[(q->head + n - 1) % q->cap] = (struct queued_alert){0};
        atomic_store(&q->count, n - 1);
        hold(q, conn_id, -1);
        return true;
    }
    return false;
}

static bool full(const struct alert_queue *q, size_t n, size_t len)
{
    return n == q->cap || q->bytes + len > q->max_bytes;
}

/* Room for one alert of len bytes of conn_id: made by dropping the newest
 * alerts of the connection holding the most while conn_id holds less than
 * its share. Returns how many were dropped for it, or -1 when it gets none. */
static long make_room(struct alert_queue *q, uint64_t conn_id, size_t len)
{
    long dropped = 0;
    while (full(q, atomic_load(&q->count), len)) {
        size_t mine = held_by(q, conn_id);
        size_t holders = q->nholders + (mine == 0);
        struct queue_holder *big = largest(q);
        if (!big || big->conn_id == conn_id || mine + 1 > q->cap / holders || big->queued <= mine + 1 ||
            !drop_newest_of(q, big->conn_id))
            return -1;
        dropped++;
    }
    return dropped;
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
    *out = (struct queued_alert){.line = p, .len = a->json_len, .rule = p + a->json_len + 1, .conn_id = a->conn_id};
    return p;
}

/* Connections one push dropped an alert of: their later alerts in it go
 * too, so what each connection has queued has no gap. */
struct refused {
    uint64_t *ids;
    size_t n, cap;
    bool all;            /* out of memory: every later alert goes */
};

static bool was_refused(const struct refused *r, uint64_t conn_id)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->ids[i] == conn_id)
            return true;
    return r->all;
}

static void refuse(struct refused *r, uint64_t conn_id)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 8;
        uint64_t *ids = realloc(r->ids, cap * sizeof(*ids));
        if (!ids) {
            r->all = true;
            return;
        }
        r->ids = ids;
        r->cap = cap;
    }
    r->ids[r->n++] = conn_id;
}

uint64_t queue_push(struct alert_queue *q, const struct alert_list *l)
{
    uint64_t dropped = 0;
    struct refused refused = {0};
    pthread_mutex_lock(&q->lock);
    for (size_t i = 0; i < l->count; i++) {
        const struct alert *a = &l->items[i];
        long made = a->json_len > q->max_bytes || was_refused(&refused, a->conn_id)
                        ? -1
                        : make_room(q, a->conn_id, a->json_len);
        struct queued_alert item;
        if (made < 0 || hold(q, a->conn_id, +1) != 0) {
            dropped += (uint64_t)(made > 0 ? made : 0) + 1;
            refuse(&refused, a->conn_id);
            continue;
        }
        dropped += (uint64_t)made;
        if (!copy_alert(a, &item)) {
            hold(q, a->conn_id, -1);
            dropped++;
            refuse(&refused, a->conn_id);
            continue;
        }
        size_t n = atomic_load(&q->count);
        q->ring[(q->head + n) % q->cap] = item;
        q->bytes += item.len;
        atomic_store(&q->count, n + 1);
    }
    pthread_mutex_unlock(&q->lock);
    free(refused.ids);
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
        hold(q, item->conn_id, -1);
        free(item->line);
        item->line = NULL;
        q->head = (q->head + 1) % q->cap;
        atomic_store(&q->count, n - 1);
    }
    pthread_mutex_unlock(&q->lock);
}
