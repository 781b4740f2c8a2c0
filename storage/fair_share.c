#include "fair_share.h"

#include <stdlib.h>

void fair_share_init(struct fair_share *pool, size_t queue_max, const struct batch_limits *limits)
{
    *pool = (struct fair_share){.room = (uint64_t)queue_max * limits->max_events, .level = UINT64_MAX};
    pool->unit_bytes = limits->max_events ? limits->max_bytes / limits->max_events : limits->max_bytes;
    if (pool->unit_bytes == 0)
        pool->unit_bytes = 1;
}

void fair_share_free(struct fair_share *pool)
{
    free(pool->scratch);
    pool->scratch = NULL;
    pool->scratch_cap = 0;
}

static int ascending(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void fair_share_rebalance(struct fair_share *pool)
{
    pool->level = UINT64_MAX;
    if (pool->holders > pool->scratch_cap) {
        uint64_t *p = realloc(pool->scratch, pool->holders * sizeof(*p));
        if (!p)
            return;   /* no level: nobody is singled out, the reserve still bounds memory */
        pool->scratch = p;
        pool->scratch_cap = pool->holders;
    }
    size_t n = 0;
    for (struct share_account *a = pool->accounts; a && n < pool->holders; a = a->next)
        if (a->units > 0)
            pool->scratch[n++] = a->units;
    qsort(pool->scratch, n, sizeof(*pool->scratch), ascending);
    /* Water-filling: the smallest holdings are granted whole while what is
     * left of the room, divided among the rest, is at least as large. */
    uint64_t left = pool->room;
    for (size_t i = 0; i < n; i++) {
        uint64_t each = left / (n - i);
        if (pool->scratch[i] > each) {
            pool->level = each;
            return;
        }
        left -= pool->scratch[i];
    }
}

struct share_account *share_account_new(struct fair_share *pool)
{
    struct share_account *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->pool = pool;
    a->refs = 1;
    a->next = pool->accounts;
    if (pool->accounts)
        pool->accounts->prev = a;
    pool->accounts = a;
    return a;
}

static void unref(struct share_account *a)
{
    if (--a->refs > 0)
        return;
    if (a->prev)
        a->prev->next = a->next;
    else
        a->pool->accounts = a->next;
    if (a->next)
        a->next->prev = a->prev;
    free(a);
}

void share_account_drop(struct share_account *a)
{
    if (a)
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

int share_charge(struct share_account *a, struct batch *b, size_t len)
{
    struct batch_share *e = entry_for(a, b);
    if (!e)
        return -1;
    struct fair_share *pool = a->pool;
    uint64_t units = len / pool->unit_bytes ? len / pool->unit_bytes : 1;
    if (a->units == 0)
        pool->holders++;
    e->units += units;
    e->events++;
    a->units += units;
    a->events++;
    pool->units += units;
    pool->events++;
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
        pool->events -= e->events;
        if (a->units == 0 && e->units > 0)
            pool->holders--;
        unref(a);
    }
    b->nshares = 0;
}

bool share_over_fair(const struct share_account *a)
{
    return a->units > a->pool->level;
}
