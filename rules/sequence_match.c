/* sequence_match.c - sequences' partial matches (sequence.h): started,
 * advanced, completed, cancelled, expired and evicted, in bounded memory.
 *
 * A partial match is one record of its sequence's size (its steps' events,
 * the fields later steps and the output read, a count step's counted
 * events), in three lists and one hash chain:
 *   - its group, (sequence, connection), oldest start first: expiry from
 *     the front, the per-group bound evicts the front, unless scans it;
 *   - its connection's, least recently changed first: the byte bound
 *     evicts the front of the connection holding the most bytes, so a
 *     sandbox that opens chains by the million pushes out its own first;
 *   - the index, keyed (connection, sequence, step waited for, by values,
 *     join values) with a secret SipHash key: an event finds the partial
 *     matches it continues by one lookup per join key, however many there
 *     are and whatever values the sandbox chose. Open addressing over
 *     8-byte entries (the key's low 32 bits and the record's slot), at most
 *     half full: a key that is not there costs a probe of a cache line or
 *     two, never a record's memory.
 * Windows are in the daemon's clock (now_ns), never an event's time.
 * Records are recycled per sequence; every byte, cached ones included, is
 * under max_bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "sequence.h"
#include "siphash.h"

#define PENDING_MAX 65536         /* steps whose event id comes with their batch, per batch */
#define SEQ_ANCESTOR_LEVELS 64    /* an any-ancestor join looks this far up (fields_ancestor stops there too) */

/* One event of a count step. */
struct seq_count {
    uint64_t hash;                /* the distinct field's value */
    int64_t at_ns;                /* the daemon's clock */
    int64_t time_ns;              /* evt.time */
};

struct seq_conn;

struct seq_partial {
    struct seq_partial *gprev, *gnext;
    struct seq_partial *cprev, *cnext;
    struct seq_partial *hnext;    /* the cache of its sequence's free records */
    struct seq_conn *conn;
    const struct sequence *seq;
    uint32_t seqi;
    uint32_t slot;
    uint64_t key, by_hash;
    uint64_t ident;               /* its first step's values: the same again refreshes it */
    int64_t start_ns;
    size_t size;
    uint32_t dropped_at_start;    /* the connection's dropped_count then */
    uint32_t counted;             /* entries of the count area */
    uint16_t stage;               /* the step it waits for */
    bool filed;                   /* in the index, under key */
};

#define HDR_SIZE ((sizeof(struct seq_partial) + 7) & ~(size_t)7)

static struct seq_stamp *stamps_of(struct seq_partial *p) { return (struct seq_stamp *)((char *)p + HDR_SIZE); }
static struct seq_value *values_of(struct seq_partial *p)
{
    return (struct seq_value *)(stamps_of(p) + p->seq->nsteps);
}
static struct seq_count *counts_of(struct seq_partial *p)
{
    return (struct seq_count *)(values_of(p) + p->seq->ncaptures);
}

size_t seq_record_size(const struct sequence *s)
{
    return HDR_SIZE + s->nsteps * sizeof(struct seq_stamp) + s->ncaptures * sizeof(struct seq_value) +
           s->count_slots * sizeof(struct seq_count);
}

struct seq_group {
    struct seq_partial *head, *tail;
    uint32_t count;
};

struct seq_conn {
    uint64_t id;
    struct seq_conn *next;        /* hash chain */
    struct seq_group *groups;     /* one per sequence of the set */
    struct seq_partial *chead, *ctail;
    uint64_t bytes, count;
    uint64_t evicted_pending;     /* for its next alert */
};

struct seq_slot {
    struct seq_partial *p;        /* NULL: free */
    uint32_t gen;
    uint32_t next_free;           /* + 1; 0: none */
};

/* An index entry: the low half of the record's key (its home position and
 * a fingerprint), and its slot; IX_EMPTY: a free entry. */
struct ix_entry {
    uint32_t key_lo;
    uint32_t slot;
};
#define IX_EMPTY UINT32_MAX
#define IX_MIN 1024
#define IX_MAX (1u << 22)         /* 32 MiB of entries: beyond it a chain is not begun (counted) */

struct pending {
    uint32_t slot, gen;
    uint16_t step;
};

struct free_list {
    struct seq_partial *head;     /* through hnext */
};

struct seq_state {
    struct seq_limits lim;
    struct siphash_key key;
    const struct seq_set *set;    /* the one the partial matches belong to */
    size_t nseq;
    /* connections */
    struct seq_conn **cbuckets;
    size_t ncbuckets, nconns;
    /* the index */
    struct ix_entry *ix;
    size_t ixcap, ixcount;        /* ixcap: a power of two, at least twice ixcount */
    /* records */
    struct seq_slot *slots;
    size_t nslots, capslots;
    uint32_t free_slot;           /* + 1 */
    struct free_list *cache;      /* per sequence */
    uint64_t bytes, cached_bytes;
    struct pending *pending;
    size_t npending, cappending;
    struct seq_stats stats;
    char *scratch;                /* a one-step sequence completes in it */
    size_t scratch_size;
};

/* ---- hashing ---- */

/* SipHash-2-4 of tag then bytes (filter/siphash.h's rounds). */
static uint64_t sip_bytes(const struct siphash_key *k, uint64_t tag, const void *data, size_t len)
{
    uint64_t v0 = k->k0 ^ 0x736f6d6570736575ull, v1 = k->k1 ^ 0x646f72616e646f6dull;
    uint64_t v2 = k->k0 ^ 0x6c7967656e657261ull, v3 = k->k1 ^ 0x7465646279746573ull;
    const uint8_t *b = data;
    uint64_t m = tag;
    size_t i = 0;
    for (;;) {
        v3 ^= m;
        SIPHASH_ROUND(v0, v1, v2, v3);
        SIPHASH_ROUND(v0, v1, v2, v3);
        v0 ^= m;
        if (i + 8 > len)
            break;
        memcpy(&m, b + i, 8);
        i += 8;
    }
    m = (uint64_t)(len & 0xff) << 56;
    for (size_t j = 0; i + j < len; j++)
        m |= (uint64_t)b[i + j] << (8 * j);
    v3 ^= m;
    SIPHASH_ROUND(v0, v1, v2, v3);
    SIPHASH_ROUND(v0, v1, v2, v3);
    v0 ^= m;
    v2 ^= 0xff;
    for (int r = 0; r < 4; r++)
        SIPHASH_ROUND(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}

/* A value's hash: numbers by value (int or uint alike), strings by bytes;
 * 0 for an absent value (never equal to anything). */
static uint64_t value_hash(const struct siphash_key *k, const struct fval *v)
{
    uint64_t h;
    switch (v->kind) {
    case FV_ABSENT: return 0;
    case FV_STR: h = sip_bytes(k, 1, v->s, v->len); break;
    case FV_INT: h = v->i < 0 ? siphash_2u64(k, 2, (uint64_t)v->i) : siphash_2u64(k, 3, (uint64_t)v->i); break;
    case FV_UINT: h = siphash_2u64(k, 3, v->u); break;
    case FV_BOOL: h = siphash_2u64(k, 4, v->b); break;
    case FV_IP: h = sip_bytes(k, 5, v->ip, v->len > 16 ? 16 : v->len); break;
    default: return 0;
    }
    return h ? h : 1;
}

static uint64_t mix(const struct siphash_key *k, uint64_t a, uint64_t b) { return siphash_2u64(k, a, b); }

static uint64_t index_key(const struct seq_state *st, uint64_t conn, uint32_t seqi, uint16_t stage, uint64_t by,
                          uint64_t join)
{
    return mix(&st->key, mix(&st->key, conn, (uint64_t)seqi << 16 | stage) ^ by, join);
}

/* ---- connections ---- */

static size_t conn_bucket(const struct seq_state *st, uint64_t id)
{
    return (size_t)(siphash_2u64(&st->key, id, 0) & (st->ncbuckets - 1));
}

static struct seq_conn *conn_find(const struct seq_state *st, uint64_t id)
{
    if (!st->ncbuckets)
        return NULL;
    for (struct seq_conn *c = st->cbuckets[conn_bucket(st, id)]; c; c = c->next)
        if (c->id == id)
            return c;
    return NULL;
}

static int conn_rehash(struct seq_state *st, size_t n)
{
    struct seq_conn **b = calloc(n, sizeof(*b));
    if (!b)
        return -1;
    struct seq_conn **old = st->cbuckets;
    size_t nold = st->ncbuckets;
    st->cbuckets = b;
    st->ncbuckets = n;
    for (size_t i = 0; i < nold; i++)
        for (struct seq_conn *c = old[i], *next; c; c = next) {
            next = c->next;
            size_t k = conn_bucket(st, c->id);
            c->next = b[k];
            b[k] = c;
        }
    free(old);
    return 0;
}

static struct seq_conn *conn_get(struct seq_state *st, uint64_t id)
{
    struct seq_conn *c = conn_find(st, id);
    if (c)
        return c;
    if ((st->nconns + 1 > st->ncbuckets) && conn_rehash(st, st->ncbuckets ? st->ncbuckets * 2 : 64) != 0)
        return NULL;
    c = calloc(1, sizeof(*c));
    if (c && !(c->groups = calloc(st->nseq ? st->nseq : 1, sizeof(*c->groups)))) {
        free(c);
        c = NULL;
    }
    if (!c)
        return NULL;
    c->id = id;
    size_t k = conn_bucket(st, id);
    c->next = st->cbuckets[k];
    st->cbuckets[k] = c;
    st->nconns++;
    return c;
}

static void conn_remove(struct seq_state *st, struct seq_conn *c)
{
    for (struct seq_conn **pp = &st->cbuckets[conn_bucket(st, c->id)]; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    st->nconns--;
    free(c->groups);
    free(c);
}

/* ---- the index ---- */

static void ix_clear(struct ix_entry *ix, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ix[i] = (struct ix_entry){0, IX_EMPTY};
}

static void ix_put(struct ix_entry *ix, size_t cap, uint32_t key_lo, uint32_t slot)
{
    size_t i = key_lo & (cap - 1);
    while (ix[i].slot != IX_EMPTY)
        i = (i + 1) & (cap - 1);
    ix[i] = (struct ix_entry){key_lo, slot};
}

/* Room for one more entry, at most half full: false when none can be made. */
static bool ix_room(struct seq_state *st)
{
    if ((st->ixcount + 1) * 2 <= st->ixcap)
        return true;
    if (st->ixcap >= IX_MAX)
        return st->ixcount + 1 < st->ixcap;   /* fuller, never full */
    size_t cap = st->ixcap * 2;
    struct ix_entry *n = malloc(cap * sizeof(*n));
    if (!n)
        return st->ixcount + 1 < st->ixcap;
    ix_clear(n, cap);
    for (size_t i = 0; i < st->ixcap; i++)
        if (st->ix[i].slot != IX_EMPTY)
            ix_put(n, cap, st->ix[i].key_lo, st->ix[i].slot);
    free(st->ix);
    st->ix = n;
    st->ixcap = cap;
    return true;
}

/* Files p under p->key; false when the index has no room (p is not filed). */
static bool index_link(struct seq_state *st, struct seq_partial *p)
{
    if (!ix_room(st))
        return false;
    ix_put(st->ix, st->ixcap, (uint32_t)p->key, p->slot);
    st->ixcount++;
    p->filed = true;
    return true;
}

/* Whether the entry at j, whose home is k, stays where it is when i empties:
 * k lies cyclically in (i, j]. */
static bool stays(size_t i, size_t j, size_t k)
{
    return i <= j ? (i < k && k <= j) : (i < k || k <= j);
}

static void index_unlink(struct seq_state *st, struct seq_partial *p)
{
    if (!p->filed)
        return;
    size_t mask = st->ixcap - 1, i = p->key & mask;
    while (st->ix[i].slot != p->slot)
        i = (i + 1) & mask;
    /* backward shift (linear probing's deletion): no tombstones */
    for (size_t j = i;;) {
        j = (j + 1) & mask;
        if (st->ix[j].slot == IX_EMPTY)
            break;
        if (stays(i, j, st->ix[j].key_lo & mask))
            continue;
        st->ix[i] = st->ix[j];
        i = j;
    }
    st->ix[i] = (struct ix_entry){0, IX_EMPTY};
    st->ixcount--;
    p->filed = false;
}

/* ---- records ---- */

static void list_unlink(struct seq_partial **head, struct seq_partial **tail, struct seq_partial *p, bool conn_list)
{
    struct seq_partial *prev = conn_list ? p->cprev : p->gprev, *next = conn_list ? p->cnext : p->gnext;
    if (prev)
        *(conn_list ? &prev->cnext : &prev->gnext) = next;
    else
        *head = next;
    if (next)
        *(conn_list ? &next->cprev : &next->gprev) = prev;
    else
        *tail = prev;
}

static void list_append(struct seq_partial **head, struct seq_partial **tail, struct seq_partial *p, bool conn_list)
{
    if (conn_list) {
        p->cprev = *tail;
        p->cnext = NULL;
    } else {
        p->gprev = *tail;
        p->gnext = NULL;
    }
    if (*tail)
        *(conn_list ? &(*tail)->cnext : &(*tail)->gnext) = p;
    else
        *head = p;
    *tail = p;
}

/* To the back of its lists: it changed now. */
static void touch(struct seq_partial *p, bool restarted)
{
    struct seq_conn *c = p->conn;
    list_unlink(&c->chead, &c->ctail, p, true);
    list_append(&c->chead, &c->ctail, p, true);
    if (restarted) {
        struct seq_group *g = &c->groups[p->seqi];
        list_unlink(&g->head, &g->tail, p, false);
        list_append(&g->head, &g->tail, p, false);
    }
}

/* Releases the cached records (memory for a new one of another size). */
static void drop_cache(struct seq_state *st)
{
    for (size_t i = 0; i < st->nseq; i++)
        for (struct seq_partial *p = st->cache[i].head, *next; p; p = next) {
            next = p->hnext;
            st->cached_bytes -= p->size;
            free(p);
        }
    for (size_t i = 0; i < st->nseq; i++)
        st->cache[i].head = NULL;
}

enum why { WHY_COMPLETED, WHY_EVICTED, WHY_EXPIRED, WHY_CANCELLED, WHY_DROPPED, WHY_USELESS };

static bool expired(const struct seq_partial *p, int64_t now_ns) { return now_ns - p->start_ns > p->seq->within_ns; }

static void release(struct seq_state *st, struct seq_partial *p, enum why why)
{
    struct seq_conn *c = p->conn;
    struct seq_group *g = &c->groups[p->seqi];
    list_unlink(&g->head, &g->tail, p, false);
    g->count--;
    list_unlink(&c->chead, &c->ctail, p, true);
    index_unlink(st, p);
    c->bytes -= p->size;
    c->count--;
    st->bytes -= p->size;
    st->stats.partials--;
    switch (why) {
    case WHY_COMPLETED: st->stats.completed++; break;
    case WHY_EVICTED:
        st->stats.evicted++;
        c->evicted_pending++;
        break;
    case WHY_EXPIRED: st->stats.expired++; break;
    case WHY_CANCELLED: st->stats.cancelled++; break;
    case WHY_DROPPED: st->stats.dropped++; break;
    case WHY_USELESS: break;
    }
    struct seq_slot *s = &st->slots[p->slot];
    s->p = NULL;
    s->gen++;
    s->next_free = st->free_slot;
    st->free_slot = p->slot + 1;
    if (st->bytes + st->cached_bytes <= st->lim.max_bytes) {
        p->hnext = st->cache[p->seqi].head;   /* kept for the next of its sequence */
        st->cache[p->seqi].head = p;
        st->cached_bytes += p->size;
    } else {
        free(p);
    }
}

/* An eviction: expired ones are only expired. */
static void evict(struct seq_state *st, struct seq_partial *p, int64_t now_ns)
{
    release(st, p, expired(p, now_ns) ? WHY_EXPIRED : WHY_EVICTED);
}

/* The oldest record of the connection holding the most bytes, never keep. */
static struct seq_partial *victim(struct seq_state *st, const struct seq_partial *keep)
{
    struct seq_partial *best = NULL;
    uint64_t most = 0;
    for (size_t b = 0; b < st->ncbuckets; b++)
        for (struct seq_conn *c = st->cbuckets[b]; c; c = c->next) {
            if (c->bytes <= most)
                continue;
            struct seq_partial *p = c->chead == keep ? (keep ? keep->cnext : NULL) : c->chead;
            if (p) {
                best = p;
                most = c->bytes;
            }
        }
    return best;
}

static uint32_t slot_take(struct seq_state *st)
{
    if (st->free_slot) {
        uint32_t i = st->free_slot - 1;
        st->free_slot = st->slots[i].next_free;
        return i;
    }
    if (st->nslots == st->capslots) {
        size_t cap = st->capslots ? st->capslots * 2 : 256;
        struct seq_slot *s = cap < UINT32_MAX ? realloc(st->slots, cap * sizeof(*s)) : NULL;
        if (!s)
            return UINT32_MAX;
        st->slots = s;
        st->capslots = cap;
    }
    st->slots[st->nslots] = (struct seq_slot){0};
    return (uint32_t)st->nslots++;
}

/* A new partial match of sequence seqi on c, after making room: NULL when
 * there is none to make (counted as evicted: the chain is lost). */
static struct seq_partial *partial_new(struct seq_state *st, struct seq_conn *c, uint32_t seqi, int64_t now_ns)
{
    const struct sequence *seq = &st->set->v[seqi];
    size_t size = seq->record_size;
    struct seq_group *g = &c->groups[seqi];
    while (g->count >= st->lim.max_per_group && g->head)
        evict(st, g->head, now_ns);
    struct seq_partial *p = st->cache[seqi].head;
    if (p) {
        st->cache[seqi].head = p->hnext;
        st->cached_bytes -= size;
    } else {
        if (st->bytes + st->cached_bytes + size > st->lim.max_bytes)
            drop_cache(st);
        while (st->bytes + size > st->lim.max_bytes) {
            struct seq_partial *v = victim(st, NULL);
            if (!v)
                break;
            evict(st, v, now_ns);
            drop_cache(st);
        }
        p = st->bytes + size <= st->lim.max_bytes ? malloc(size) : NULL;
    }
    uint32_t slot = p ? slot_take(st) : UINT32_MAX;
    if (slot == UINT32_MAX) {
        free(p);
        st->stats.evicted++;
        c->evicted_pending++;
        return NULL;
    }
    memset(p, 0, size);
    p->seq = seq;
    p->seqi = seqi;
    p->size = size;
    p->conn = c;
    p->slot = slot;
    p->start_ns = now_ns;
    st->slots[slot].p = p;
    list_append(&g->head, &g->tail, p, false);
    g->count++;
    list_append(&c->chead, &c->ctail, p, true);
    c->bytes += size;
    c->count++;
    st->bytes += size;
    st->stats.partials++;
    st->stats.started++;
    return p;
}

static void expire_group(struct seq_state *st, struct seq_group *g, int64_t now_ns)
{
    while (g->head && expired(g->head, now_ns))
        release(st, g->head, WHY_EXPIRED);
}

/* ---- the state ---- */

struct seq_state *seq_state_new(const struct seq_limits *limits)
{
    struct seq_state *st = calloc(1, sizeof(*st));
    if (!st)
        return NULL;
    st->lim = *limits;
    if (!st->lim.max_per_group)
        st->lim.max_per_group = 1;
    siphash_key_random(&st->key);
    st->ixcap = IX_MIN;
    st->ix = malloc(st->ixcap * sizeof(*st->ix));
    if (!st->ix) {
        free(st);
        return NULL;
    }
    ix_clear(st->ix, st->ixcap);
    return st;
}

static void free_all(struct seq_state *st, bool count)
{
    for (size_t b = 0; b < st->ncbuckets; b++)
        for (struct seq_conn *c = st->cbuckets[b], *next; c; c = next) {
            next = c->next;
            while (c->chead)
                release(st, c->chead, count ? WHY_DROPPED : WHY_USELESS);
            free(c->groups);
            free(c);
        }
    free(st->cbuckets);
    st->cbuckets = NULL;
    st->ncbuckets = st->nconns = 0;
    if (st->cache)
        drop_cache(st);
    free(st->cache);
    st->cache = NULL;
    st->npending = 0;
}

void seq_state_free(struct seq_state *st)
{
    if (!st)
        return;
    free_all(st, false);
    free(st->ix);
    free(st->slots);
    free(st->pending);
    free(st->scratch);
    free(st);
}

void seq_state_reset(struct seq_state *st, const struct seq_set *set)
{
    free_all(st, true);
    st->set = set;
    st->nseq = set ? set->n : 0;
    st->cache = st->nseq ? calloc(st->nseq, sizeof(*st->cache)) : NULL;
    size_t most = 0;
    for (size_t i = 0; i < st->nseq; i++)
        if (set->v[i].record_size > most)
            most = set->v[i].record_size;
    free(st->scratch);
    st->scratch = most ? malloc(most) : NULL;
    st->scratch_size = st->scratch ? most : 0;
    if (st->nseq && !st->cache)
        st->nseq = 0, st->set = NULL;   /* out of memory: no sequences rather than a crash */
}

void seq_get_stats(const struct seq_state *st, struct seq_stats *out)
{
    *out = st->stats;
    out->bytes = st->bytes;
}

uint64_t seq_take_evicted(struct seq_state *st, uint64_t conn_id)
{
    struct seq_conn *c = conn_find(st, conn_id);
    if (!c)
        return 0;
    uint64_t n = c->evicted_pending;
    c->evicted_pending = 0;
    return n;
}

void seq_conn_closed(struct seq_state *st, uint64_t conn_id)
{
    struct seq_conn *c = conn_find(st, conn_id);
    if (!c)
        return;
    while (c->chead)
        release(st, c->chead, WHY_DROPPED);
    conn_remove(st, c);
}

void seq_batch_stored(struct seq_state *st, int64_t first_id)
{
    for (size_t i = 0; i < st->npending; i++) {
        const struct pending *q = &st->pending[i];
        const struct seq_slot *s = &st->slots[q->slot];
        if (!s->p || s->gen != q->gen)
            continue;
        struct seq_stamp *t = &stamps_of(s->p)[q->step];
        if (!t->pending)
            continue;
        t->event_id = first_id ? first_id + (int64_t)t->batch_index : 0;
        t->pending = false;
    }
    st->npending = 0;
}

/* ---- one event ---- */

/* What one event evaluates against one sequence (cached across its steps). */
struct ev {
    struct seq_state *st;
    struct evctx *x;
    int64_t now;
    size_t index;
    struct seq_conn *conn;
    uint32_t by_seq;              /* the sequence by_hash belongs to; UINT32_MAX: none */
    uint64_t by_hash;
    bool by_absent;
    uint32_t advanced_seq;        /* a partial of this sequence advanced already */
};

static bool compute_by(struct ev *e, uint32_t seqi, const struct sequence *s)
{
    if (e->by_seq == seqi)
        return !e->by_absent;
    e->by_seq = seqi;
    e->by_hash = 0;
    e->by_absent = false;
    for (uint16_t i = 0; i < s->nby && !e->by_absent; i++) {
        uint64_t h = value_hash(&e->st->key, fields_get(e->x, &s->by[i]));
        e->by_absent = h == 0;
        e->by_hash = mix(&e->st->key, e->by_hash, h);
    }
    return !e->by_absent;
}

static void set_value(const struct siphash_key *k, const struct fval *v, struct seq_value *out)
{
    out->hash = value_hash(k, v);
    out->v = *v;
    out->full_len = v->kind == FV_STR ? v->len : 0;
    if (v->kind != FV_STR)
        return;
    size_t n = v->len;
    if (n > SEQ_TEXT_MAX) {
        n = SEQ_TEXT_MAX;
        while (n > 0 && ((unsigned char)v->s[n] & 0xc0) == 0x80)   /* not inside a UTF-8 character */
            n--;
        memcpy(out->text, v->s, n);
        memcpy(out->text + n, "...", 3);
        n += 3;
    } else {
        memcpy(out->text, v->s, n);
    }
    out->text[n] = '\0';
    out->v.s = out->text;
    out->v.len = (uint32_t)n;
}

/* The step's captures from the event. */
static void capture_step(struct ev *e, const struct sequence *s, struct seq_value *values, uint16_t step)
{
    for (uint16_t i = 0; i < s->ncaptures; i++)
        if (s->captures[i].step == step)
            set_value(&e->st->key, fields_get(e->x, &s->captures[i].field), &values[i]);
}

/* The step's event into its stamp; its id pending until its batch is stored. */
static void stamp_step(struct ev *e, struct seq_partial *p, uint16_t step, uint32_t count, int64_t first_time)
{
    struct seq_stamp *t = &stamps_of(p)[step];
    *t = (struct seq_stamp){.time_ns = e->x->time_ns, .first_time_ns = first_time, .count = count,
                            .batch_index = (uint32_t)(e->index > UINT32_MAX ? UINT32_MAX : e->index),
                            .pending = true};
    struct seq_state *st = e->st;
    if (st->npending == st->cappending) {
        size_t cap = st->cappending ? st->cappending * 2 : 256;
        struct pending *q = cap <= PENDING_MAX ? realloc(st->pending, cap * sizeof(*q)) : NULL;
        if (!q) {
            t->pending = false;   /* its id stays unknown */
            return;
        }
        st->pending = q;
        st->cappending = cap;
    }
    st->pending[st->npending++] = (struct pending){.slot = p->slot, .gen = st->slots[p->slot].gen, .step = step};
}

/* The join key a partial waiting at stage has (its captured values). */
static bool join_of(const struct seq_state *st, struct seq_partial *p, uint16_t stage, uint64_t *out)
{
    const struct seq_cond *c = &p->seq->steps[stage].c;
    struct seq_value *v = values_of(p);
    uint64_t h = 0;
    for (uint16_t i = 0; i < c->njoins; i++) {
        if (!v[c->refs[i].capture].hash)
            return false;   /* absent: it can never be equal */
        h = mix(&st->key, h, v[c->refs[i].capture].hash);
    }
    *out = h;
    return true;
}

/* The join keys of the event for cond's `=` refs: one per combination of
 * its values (an any-ancestor field has one per ancestor). How many. */
static size_t event_joins(struct ev *e, const struct seq_cond *cond, uint64_t *keys)
{
    size_t n = 1;
    keys[0] = 0;
    for (uint16_t r = 0; r < cond->njoins; r++) {
        const struct fieldref *f = &cond->refs[r].lhs;
        uint64_t vals[SEQ_MAX_JOIN_KEYS];
        size_t nv = 0;
        if (f->any_ancestor) {
            for (unsigned level = 1; level <= SEQ_ANCESTOR_LEVELS && nv < SEQ_MAX_JOIN_KEYS; level++) {
                struct fval v;
                fields_ancestor(e->x, f, level, &v);
                if (v.kind == FV_ABSENT)
                    break;
                vals[nv++] = value_hash(&e->st->key, &v);
            }
        } else {
            uint64_t h = value_hash(&e->st->key, fields_get(e->x, f));
            if (h)
                vals[nv++] = h;
        }
        if (!nv)
            return 0;
        size_t m = 0;
        uint64_t next[SEQ_MAX_JOIN_KEYS];
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < nv && m < SEQ_MAX_JOIN_KEYS; j++)
                next[m++] = mix(&e->st->key, keys[i], vals[j]);
        memcpy(keys, next, m * sizeof(*keys));
        n = m;
    }
    return n;
}

/* cond's `!=` refs hold for p (and, with joins_too, its `=` ones). */
static bool refs_hold(struct ev *e, const struct seq_cond *cond, struct seq_partial *p, bool joins_too)
{
    const struct seq_value *v = values_of(p);
    for (uint16_t r = joins_too ? 0 : cond->njoins; r < cond->nrefs; r++) {
        const struct seq_ref *ref = &cond->refs[r];
        uint16_t step = p->seq->captures[ref->capture].step;
        uint64_t want = step < p->stage ? v[ref->capture].hash : 0;
        if (!want)
            return false;
        if (ref->lhs.any_ancestor) {
            bool any = false;
            for (unsigned level = 1; level <= SEQ_ANCESTOR_LEVELS && !any; level++) {
                struct fval a;
                fields_ancestor(e->x, &ref->lhs, level, &a);
                if (a.kind == FV_ABSENT)
                    break;
                any = value_hash(&e->st->key, &a) == want;
            }
            if (!any)
                return false;
            continue;
        }
        uint64_t h = value_hash(&e->st->key, fields_get(e->x, &ref->lhs));
        if (!h || (ref->op == OP_EQ) != (h == want))
            return false;
    }
    return true;
}

/* p files under its stage's join key; false when it can never advance
 * (or, the index full, cannot be found). */
static bool refile(struct ev *e, struct seq_partial *p)
{
    uint64_t join;
    index_unlink(e->st, p);
    if (!join_of(e->st, p, p->stage, &join))
        return false;
    p->key = index_key(e->st, p->conn->id, p->seqi, p->stage, p->by_hash, join);
    return index_link(e->st, p);
}

/* One more counted event of a count step: true once there are at_least.
 * sliding: the chain's first step, whose start moves with its oldest. */
static bool count_event(struct ev *e, struct seq_partial *p, const struct seq_step *step, bool sliding)
{
    struct seq_count *c = counts_of(p);
    uint32_t n = p->counted;
    if (sliding) {   /* forget what fell out of the window */
        uint32_t k = 0;
        for (uint32_t i = 0; i < n; i++)
            if (e->now - c[i].at_ns <= p->seq->within_ns)
                c[k++] = c[i];
        n = k;
    }
    uint64_t h = 1;
    if (step->has_distinct) {
        h = value_hash(&e->st->key, fields_get(e->x, &step->distinct));
        if (!h) {
            p->counted = n;
            return false;   /* no value to count */
        }
    }
    uint32_t i = 0;
    if (step->has_distinct)
        while (i < n && c[i].hash != h)
            i++;
    else
        i = n;
    if (i < n) {   /* a value seen: it counts from now */
        struct seq_count again = c[i];
        memmove(&c[i], &c[i + 1], (n - i - 1) * sizeof(*c));
        again.at_ns = e->now;
        again.time_ns = e->x->time_ns;
        c[n - 1] = again;
    } else if (n < p->seq->count_slots) {
        c[n++] = (struct seq_count){.hash = h, .at_ns = e->now, .time_ns = e->x->time_ns};
    }
    p->counted = n;
    if (sliding && n) {
        int64_t oldest = c[0].at_ns;
        if (oldest != p->start_ns) {
            p->start_ns = oldest;
            touch(p, true);
        }
    }
    return n >= step->at_least;
}

static int64_t first_counted_time(struct seq_partial *p)
{
    const struct seq_count *c = counts_of(p);
    int64_t t = p->counted ? c[0].time_ns : 0;
    for (uint32_t i = 1; i < p->counted; i++)
        if (c[i].time_ns < t)
            t = c[i].time_ns;
    return t;
}

static void complete(struct ev *e, struct seq_partial *p, seq_raise_fn raise, void *ctx)
{
    /* cumulative and wrapping; a count that went back (a forged header) says nothing */
    uint32_t dropped = e->x->ev->header.dropped_count - p->dropped_at_start;
    struct seq_raise r = {.seq = p->seq, .stamps = stamps_of(p), .values = values_of(p),
                          .sandbox_dropped = dropped < (1u << 31) ? dropped : 0};
    raise(ctx, e->x, &r);
}

/* Step k of p is satisfied by the event: its stamp and values, then the
 * next step, or the alert. */
static void step_done(struct ev *e, struct seq_partial *p, uint16_t k, uint32_t count, seq_raise_fn raise, void *ctx)
{
    int64_t first = count > 1 ? first_counted_time(p) : e->x->time_ns;
    stamp_step(e, p, k, count, first);
    capture_step(e, p->seq, values_of(p), k);
    p->counted = 0;
    p->stage = (uint16_t)(k + 1);
    if (p->stage == p->seq->nsteps) {
        complete(e, p, raise, ctx);
        release(e->st, p, WHY_COMPLETED);
        return;
    }
    touch(p, false);
    if (!refile(e, p))
        release(e->st, p, WHY_USELESS);
}

/* A partial waiting at stage whose by and join keys match, of the oldest
 * start, within its window, whose != refs hold. */
static struct seq_partial *find_waiting(struct ev *e, uint32_t seqi, uint16_t stage, const uint64_t *keys,
                                        size_t nkeys, const struct seq_cond *cond)
{
    struct seq_state *st = e->st;
    struct seq_partial *best = NULL;
    size_t mask = st->ixcap - 1;
    for (size_t i = 0; i < nkeys; i++) {
        uint64_t key = index_key(st, e->conn->id, seqi, stage, e->by_hash, keys[i]);
        for (size_t k = key & mask; st->ix[k].slot != IX_EMPTY; k = (k + 1) & mask) {
            if (st->ix[k].key_lo != (uint32_t)key)
                continue;
            struct seq_partial *p = st->slots[st->ix[k].slot].p;
            if (p->key != key || p->conn != e->conn || p->seqi != seqi || p->stage != stage ||
                p->by_hash != e->by_hash || expired(p, e->now))
                continue;   /* an expired one goes with its group's expiry or the sweep */
            if ((!best || p->start_ns < best->start_ns) && (!cond || refs_hold(e, cond, p, false)))
                best = p;
        }
    }
    return best;
}

static void step_first(struct ev *e, uint32_t seqi, const struct sequence *s, seq_raise_fn raise, void *ctx)
{
    struct seq_state *st = e->st;
    const struct seq_step *step = &s->steps[0];
    struct seq_group *g = &e->conn->groups[seqi];
    expire_group(st, g, e->now);
    if (step->at_least > 1) {   /* one counting chain per by */
        uint64_t key = index_key(st, e->conn->id, seqi, 0, e->by_hash, 0);
        struct seq_partial *p = find_waiting(e, seqi, 0, (uint64_t[]){0}, 1, NULL);
        if (!p) {
            if (!(p = partial_new(st, e->conn, seqi, e->now)))
                return;
            p->by_hash = e->by_hash;
            p->key = key;
            p->dropped_at_start = e->x->ev->header.dropped_count;
            if (!index_link(st, p)) {
                release(st, p, WHY_EVICTED);
                return;
            }
        }
        if (count_event(e, p, step, true))
            step_done(e, p, 0, p->counted, raise, ctx);
        return;
    }
    /* the values this event gives the chain: the same again refreshes it */
    struct seq_value *vals = (struct seq_value *)(st->scratch + HDR_SIZE + s->nsteps * sizeof(struct seq_stamp));
    capture_step(e, s, vals, 0);
    uint64_t ident = 1;
    for (uint16_t i = 0; i < s->ncaptures; i++)
        if (s->captures[i].step == 0)
            ident = mix(&st->key, ident, vals[i].hash);
    if (s->nsteps == 1) {   /* a chain of one event */
        struct seq_partial *p = (struct seq_partial *)st->scratch;
        memset(p, 0, HDR_SIZE + s->nsteps * sizeof(struct seq_stamp));
        p->seq = s;
        stamps_of(p)[0] = (struct seq_stamp){.time_ns = e->x->time_ns, .first_time_ns = e->x->time_ns, .count = 1,
                                             .batch_index = (uint32_t)e->index, .pending = true};
        p->dropped_at_start = e->x->ev->header.dropped_count;
        complete(e, p, raise, ctx);
        st->stats.started++;
        st->stats.completed++;
        return;
    }
    const struct seq_cond *next = &s->steps[1].c;
    uint64_t join = 0;
    for (uint16_t i = 0; i < next->njoins; i++) {
        if (!vals[next->refs[i].capture].hash)
            return;   /* a value the next step joins on is absent: no chain */
        join = mix(&st->key, join, vals[next->refs[i].capture].hash);
    }
    uint64_t key = index_key(st, e->conn->id, seqi, 1, e->by_hash, join);
    size_t mask = st->ixcap - 1;
    for (size_t k = key & mask; st->ix[k].slot != IX_EMPTY; k = (k + 1) & mask) {
        if (st->ix[k].key_lo != (uint32_t)key)
            continue;
        struct seq_partial *p = st->slots[st->ix[k].slot].p;
        if (p->key == key && p->conn == e->conn && p->seqi == seqi && p->stage == 1 && p->by_hash == e->by_hash &&
            p->ident == ident) {
            p->start_ns = e->now;   /* the same chain begun again: it starts now */
            p->dropped_at_start = e->x->ev->header.dropped_count;
            stamp_step(e, p, 0, 1, e->x->time_ns);
            memcpy(values_of(p), vals, s->ncaptures * sizeof(*vals));
            for (uint16_t i = 0; i < s->ncaptures; i++)
                if (values_of(p)[i].v.kind == FV_STR)
                    values_of(p)[i].v.s = values_of(p)[i].text;
            touch(p, true);
            return;
        }
    }
    struct seq_partial *p = partial_new(st, e->conn, seqi, e->now);
    if (!p)
        return;
    p->by_hash = e->by_hash;
    p->ident = ident;
    p->dropped_at_start = e->x->ev->header.dropped_count;
    stamp_step(e, p, 0, 1, e->x->time_ns);
    struct seq_value *pv = values_of(p);
    for (uint16_t i = 0; i < s->ncaptures; i++)
        if (s->captures[i].step == 0) {
            pv[i] = vals[i];
            if (pv[i].v.kind == FV_STR)
                pv[i].v.s = pv[i].text;
        }
    p->stage = 1;
    p->key = key;
    if (!index_link(st, p))
        release(st, p, WHY_EVICTED);
}

static void step_later(struct ev *e, uint32_t seqi, const struct sequence *s, uint16_t k, seq_raise_fn raise,
                       void *ctx)
{
    struct seq_group *g = &e->conn->groups[seqi];
    expire_group(e->st, g, e->now);
    if (!g->count)
        return;
    const struct seq_step *step = &s->steps[k];
    uint64_t keys[SEQ_MAX_JOIN_KEYS];
    size_t nkeys = event_joins(e, &step->c, keys);
    struct seq_partial *p = nkeys ? find_waiting(e, seqi, k, keys, nkeys, &step->c) : NULL;
    if (!p)
        return;
    e->advanced_seq = seqi;
    if (step->at_least > 1 && !count_event(e, p, step, false)) {
        touch(p, false);
        return;
    }
    step_done(e, p, k, step->at_least > 1 ? p->counted : 1, raise, ctx);
}

static void unless(struct ev *e, uint32_t seqi, const struct sequence *s)
{
    struct seq_group *g = &e->conn->groups[seqi];
    for (struct seq_partial *p = g->head, *next; p; p = next) {
        next = p->gnext;
        if (p->by_hash == e->by_hash && refs_hold(e, &s->unless, p, true))
            release(e->st, p, WHY_CANCELLED);
    }
}

void seq_eval(struct seq_state *st, const struct seq_set *set, struct evctx *x, bool exec_repeat, int64_t now_ns,
              size_t index, seq_raise_fn raise, void *ctx)
{
    if (!set || set != st->set)
        return;
    const struct seq_index *ix = x->cls.syscall_enter ? &set->enters : &set->exits;
    uint32_t from = ix->off[x->cls.type], to = ix->off[x->cls.type + 1];
    if (from == to)
        return;
    struct ev e = {.st = st, .x = x, .now = now_ns, .index = index, .by_seq = UINT32_MAX,
                   .advanced_seq = UINT32_MAX};
    for (uint32_t i = from; i < to; i++) {
        const struct seq_entry *en = &ix->entries[i];
        const struct sequence *s = &set->v[en->seq];
        bool is_unless = en->step == SEQ_UNLESS;
        const struct seq_cond *c = is_unless ? &s->unless : &s->steps[en->step].c;
        if (exec_repeat && !c->rule.names_point)
            continue;   /* one exec is seen once: as sentry/execve */
        if (!is_unless && en->step > 0 && e.advanced_seq == en->seq)
            continue;   /* one event advances one chain of a sequence */
        if (!filter_eval(x, c->rule.cond) || !compute_by(&e, en->seq, s))
            continue;
        if (!e.conn && !(e.conn = en->step == 0 ? conn_get(st, x->ev->conn_id) : conn_find(st, x->ev->conn_id)))
            continue;
        if (is_unless)
            unless(&e, en->seq, s);
        else if (en->step == 0)
            step_first(&e, en->seq, s, raise, ctx);
        else
            step_later(&e, en->seq, s, en->step, raise, ctx);
    }
}

bool seq_state_consistent(const struct seq_state *st)
{
    uint64_t filed = 0, listed = 0, bytes = 0;
    size_t mask = st->ixcap - 1;
    for (size_t i = 0; i < st->ixcap; i++) {
        const struct ix_entry *x = &st->ix[i];
        if (x->slot == IX_EMPTY)
            continue;
        const struct seq_partial *p = x->slot < st->nslots ? st->slots[x->slot].p : NULL;
        if (!p || !p->filed || (uint32_t)p->key != x->key_lo)
            return false;
        for (size_t k = x->key_lo & mask; k != i; k = (k + 1) & mask)   /* reachable from its home */
            if (st->ix[k].slot == IX_EMPTY)
                return false;
        filed++;
    }
    if (filed != st->ixcount || st->ixcount * 2 > st->ixcap)
        return false;
    for (size_t b = 0; b < st->ncbuckets; b++)
        for (const struct seq_conn *c = st->cbuckets[b]; c; c = c->next) {
            uint64_t n = 0, by = 0, in_groups = 0;
            for (const struct seq_partial *p = c->chead; p && n <= c->count; p = p->cnext) {
                if (p->conn != c || !p->filed || (p->cnext ? p->cnext->cprev != p : c->ctail != p))
                    return false;
                n++;
                by += p->size;
            }
            for (size_t i = 0; i < st->nseq; i++)
                in_groups += c->groups[i].count;
            if (n != c->count || by != c->bytes || in_groups != c->count)
                return false;
            listed += n;
            bytes += by;
        }
    return filed == st->stats.partials && listed == st->stats.partials && bytes == st->bytes;
}

void seq_sweep(struct seq_state *st, int64_t now_ns)
{
    for (size_t b = 0; b < st->ncbuckets; b++)
        for (struct seq_conn *c = st->cbuckets[b]; c; c = c->next)
            for (size_t i = 0; i < st->nseq; i++)
                expire_group(st, &c->groups[i], now_ns);
}
