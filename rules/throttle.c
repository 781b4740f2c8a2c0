#include "throttle.h"

#include <stdlib.h>
#include <string.h>

#define PROBE 8

static uint64_t hash_str(uint64_t h, const char *s)
{
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

int throttle_init(struct throttle *t, double rule_rate, double rule_burst, double conn_rate, double conn_burst)
{
    memset(t, 0, sizeof(*t));
    t->rule_rate = rule_rate > 0 ? rule_rate : 0;
    t->rule_burst = rule_burst < 1 ? 1 : rule_burst;
    t->conn_rate = conn_rate > 0 ? conn_rate : 0;
    t->conn_burst = conn_burst < 1 ? 1 : conn_burst;
    if (t->rule_rate > 0 && !(t->rules = calloc(THROTTLE_ENTRIES, sizeof(*t->rules))))
        return -1;
    return 0;
}

void throttle_free(struct throttle *t)
{
    free(t->rules);
    free(t->conns);
    memset(t, 0, sizeof(*t));
}

/* The daemon's clock only moves forward; a step back refills nothing. */
static void refill(struct throttle_bucket *b, double rate, double burst, int64_t now)
{
    if (now > b->last_ns) {
        b->tokens += (double)(now - b->last_ns) * rate / 1e9;
        if (b->tokens > burst)
            b->tokens = burst;
        b->last_ns = now;
    }
}

static struct throttle_bucket *rule_bucket(struct throttle *t, const char *rule, uint64_t conn_id, int64_t now)
{
    /* 0 is the free key */
    uint64_t key = (hash_str(1469598103934665603ull, rule) ^ conn_id * 0x9e3779b97f4a7c15ull) | 1;
    size_t base = (size_t)(key * 0x9e3779b97f4a7c15ull >> 52) & (THROTTLE_ENTRIES - 1);
    struct throttle_rule_entry *spare = NULL;
    for (size_t i = 0; i < PROBE; i++) {
        struct throttle_rule_entry *c = &t->rules[(base + i) & (THROTTLE_ENTRIES - 1)];
        if (c->key == key)
            return &c->b;
        if (!spare && !c->key)
            spare = c;
    }
    if (!spare) {
        /* a bucket that refilled is as good as none; else the stalest */
        for (size_t i = 0; i < PROBE; i++) {
            struct throttle_rule_entry *c = &t->rules[(base + i) & (THROTTLE_ENTRIES - 1)];
            refill(&c->b, t->rule_rate, t->rule_burst, now);
            if (c->b.tokens >= t->rule_burst && c->b.suppressed == 0) {
                spare = c;
                break;
            }
            if (!spare || c->b.last_ns < spare->b.last_ns)
                spare = c;
        }
    }
    *spare = (struct throttle_rule_entry){.key = key, .b = {.tokens = t->rule_burst, .last_ns = now}};
    return &spare->b;
}

/* ---- the ceiling's entries, one per connection ---- */

static size_t conn_slot(const struct throttle *t, uint64_t conn_id)
{
    size_t mask = t->conns_cap - 1;
    size_t i = (size_t)(conn_id * 0x9e3779b97f4a7c15ull >> 32) & mask;
    while (t->conns[i].conn_id && t->conns[i].conn_id != conn_id)
        i = (i + 1) & mask;
    return i;
}

static int grow_conns(struct throttle *t)
{
    size_t old_cap = t->conns_cap;
    struct throttle_conn_entry *old = t->conns;
    size_t cap = old_cap ? old_cap * 2 : 16;
    struct throttle_conn_entry *n = calloc(cap, sizeof(*n));
    if (!n)
        return -1;
    t->conns = n;
    t->conns_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].conn_id)
            t->conns[conn_slot(t, old[i].conn_id)] = old[i];
    free(old);
    return 0;
}

/* conn_id 0 (an event no connection sent: tests, tools) is kept as id ~0. */
static uint64_t conn_key(uint64_t conn_id) { return conn_id ? conn_id : UINT64_MAX; }

static struct throttle_bucket *conn_bucket(struct throttle *t, uint64_t conn_id, int64_t now)
{
    uint64_t key = conn_key(conn_id);
    if (t->conns_cap) {
        size_t i = conn_slot(t, key);
        if (t->conns[i].conn_id)
            return &t->conns[i].b;
    }
    if ((t->conns_count + 1) * 2 > t->conns_cap && grow_conns(t) != 0)
        return NULL;
    struct throttle_conn_entry *e = &t->conns[conn_slot(t, key)];
    *e = (struct throttle_conn_entry){.conn_id = key, .b = {.tokens = t->conn_burst, .last_ns = now}};
    t->conns_count++;
    return &e->b;
}

void throttle_conn_closed(struct throttle *t, uint64_t conn_id)
{
    if (!t->conns_cap)
        return;
    uint64_t key = conn_key(conn_id);
    size_t mask = t->conns_cap - 1, hole = conn_slot(t, key);
    if (!t->conns[hole].conn_id)
        return;
    t->conns[hole].conn_id = 0;
    t->conns_count--;
    /* Backward-shift deletion keeps every other entry reachable. */
    for (size_t j = (hole + 1) & mask; t->conns[j].conn_id; j = (j + 1) & mask) {
        size_t home = (size_t)(t->conns[j].conn_id * 0x9e3779b97f4a7c15ull >> 32) & mask;
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            t->conns[hole] = t->conns[j];
            t->conns[j].conn_id = 0;
            hole = j;
        }
    }
}

enum throttle_verdict throttle_take(struct throttle *t, const char *rule, uint64_t conn_id, int64_t now_ns,
                                    uint64_t *suppressed)
{
    *suppressed = 0;
    struct throttle_bucket *rb = t->rules ? rule_bucket(t, rule, conn_id, now_ns) : NULL;
    struct throttle_bucket *cb = t->conn_rate > 0 ? conn_bucket(t, conn_id, now_ns) : NULL;
    if (rb) {
        refill(rb, t->rule_rate, t->rule_burst, now_ns);
        if (rb->tokens < 1) {
            rb->suppressed++;
            return THROTTLE_RULE;
        }
    }
    if (cb) {
        refill(cb, t->conn_rate, t->conn_burst, now_ns);
        if (cb->tokens < 1) {
            cb->suppressed++;
            return THROTTLE_CEILING;
        }
        cb->tokens -= 1;
        *suppressed += cb->suppressed;
        cb->suppressed = 0;
    }
    if (rb) {
        rb->tokens -= 1;
        *suppressed += rb->suppressed;
        rb->suppressed = 0;
    }
    return THROTTLE_RAISE;
}
