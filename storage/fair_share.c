#include "fair_share.h"

#include <stdlib.h>

void fair_share_init(struct fair_share *pool, size_t queue_max, const struct batch_limits *limits)
{
    *pool = (struct fair_share){.room = (uint64_t)queue_max * limits->max_events};
    pool->unit_bytes = limits->max_events ? limits->max_bytes / limits->max_events : limits->max_bytes;
    if (pool->unit_bytes == 0)
        pool->unit_bytes = 1;
}

struct share_account *share_account_new(struct fair_share *pool)
{
    struct share_account *a = calloc(1, sizeof(*a));
    if (a) {
        a->pool = pool;
        a->refs = 1;
        pool->open++;
    }
    return a;
}

static void unref(struct share_account *a)
{
    if (--a->refs == 0)
        free(a);
}

void share_account_drop(struct share_account *a)
{
    if (!a)
        return;
    a->pool->open--;
    unref(a);
}

/* The entry of a in b: at the hint when a was charged to b last, else new. */
static struct batch_share *entry_for(struct share_account *a, struct batch *b)
{
    if (a->hint < b->nshares && b->shares[a->hint].owner == a)
        return &b->shares[a->hint];
    if (b->nshares == b->shares_cap) {
        size_t cap = b->shares_cap ? b->shares_cap * 2 : 16;
        struct batch_share *p = realloc(b->shares, cap * sizeof(*p));
        if (!p)
            return NULL;
        b->shares = p;
        b->shares_cap = cap;
    }
    a->hint = b->nshares++;
    a->refs++;
    struct batch_share *e = &b->shares[a->hint];
    *e = (struct batch_share){.owner = a};
    return e;
}

int share_charge(struct share_account *a, struct batch *b, size_t bytes)
{
    struct batch_share *e = entry_for(a, b);
    if (!e)
        return -1;
    struct fair_share *pool = a->pool;
    uint64_t units = bytes / pool->unit_bytes ? bytes / pool->unit_bytes : 1;
    if (a->units == 0)
        pool->holders++;
    e->units += units;
    e->events++;
    a->units += units;
    a->events++;
    pool->units += units;
    return 0;
}

void share_release(struct batch *b)
{
    for (size_t i = 0; i < b->nshares; i++) {
        struct batch_share *e = &b->shares[i];
        struct share_account *a = e->owner;
        struct fair_share *pool = a->pool;
        a->units -= e->units;
        a->events -= e->events;
        pool->units -= e->units;
        if (a->units == 0 && e->units > 0)
            pool->holders--;
        unref(a);
    }
    b->nshares = 0;
}

bool share_over_fair(const struct share_account *a, uint64_t num, uint64_t den)
{
    const struct fair_share *pool = a->pool;
    uint64_t queued = pool->units > pool->room ? pool->units : pool->room;
    /* a > queued / open * num / den, without dividing. */
    return a->units * pool->open * den > queued * num;
}
