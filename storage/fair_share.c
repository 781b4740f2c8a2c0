#include "fair_share.h"

#include <stdlib.h>

struct share_account *share_account_new(struct fair_share *pool)
{
    struct share_account *a = calloc(1, sizeof(*a));
    if (a) {
        a->pool = pool;
        a->refs = 1;
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
    if (a->events == 0)
        a->pool->holders++;
    e->events++;
    e->bytes += len;
    a->events++;
    a->bytes += len;
    a->pool->events++;
    a->pool->bytes += len;
    return 0;
}

void share_release(struct batch *b)
{
    for (size_t i = 0; i < b->nshares; i++) {
        struct batch_share *e = &b->shares[i];
        struct share_account *a = e->owner;
        a->events -= e->events;
        a->bytes -= e->bytes;
        a->pool->events -= e->events;
        a->pool->bytes -= e->bytes;
        if (a->events == 0 && e->events > 0)
            a->pool->holders--;
        unref(a);
    }
    b->nshares = 0;
}

bool share_over_fair(const struct share_account *a)
{
    const struct fair_share *p = a->pool;
    if (a->events == 0 || p->holders == 0)
        return false;
    /* a > total / holders, on events or on bytes, without dividing. */
    return a->events * p->holders > p->events || a->bytes * p->holders > p->bytes;
}
