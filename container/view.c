/* view.c - a reader's per-connection view of the cache (container.h).
 *
 * A fixed table of slots, each (connection, container id) -> the record the
 * cache gave and the generation it was asked at. An event asks its slot: the
 * same id again costs a compare, and the cache's mutex is taken only when
 * the cache published something since (a container found, given up on, or
 * its users re-read). Two pairs hashing to one slot take turns (a miss is
 * one more cache ask, never a wrong answer). Per connection, kept until it
 * closes: the sandbox its first found record named (another sandbox's
 * records are withheld from it) and the ids it named, at most
 * CONTAINER_VIEW_IDS_PER_CONN.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define VIEW_SLOTS 1024
#define VIEW_CONN_BUCKETS 1024

struct view_slot {
    uint64_t conn_id;
    bool used;
    char id[CONTAINER_ID_MAX];
    const struct container_record *rec;   /* a reference, or NULL */
    uint64_t generation;
};

struct view_conn {
    struct view_conn *next;
    uint64_t conn_id;
    char sandbox[CONTAINER_ID_MAX];   /* "" until its first found record */
    uint64_t ids[CONTAINER_VIEW_IDS_PER_CONN];   /* hashes of the ids it named */
    unsigned nids;
};

struct container_view {
    struct container_cache *cache;
    struct view_slot slots[VIEW_SLOTS];
    struct view_conn *conns[VIEW_CONN_BUCKETS];
    uint64_t foreign, over_limit;
};

struct container_view *container_view_new(struct container_cache *c)
{
    struct container_view *v = calloc(1, sizeof(*v));
    if (v)
        v->cache = c;
    return v;
}

void container_view_free(struct container_view *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < VIEW_SLOTS; i++)
        container_record_release(v->slots[i].rec);
    for (size_t b = 0; b < VIEW_CONN_BUCKETS; b++)
        while (v->conns[b]) {
            struct view_conn *c = v->conns[b];
            v->conns[b] = c->next;
            free(c);
        }
    free(v);
}

static uint64_t id_hash(const char *id)
{
    uint64_t h = 14695981039346656037ull;
    for (; *id; id++)
        h = (h ^ (unsigned char)*id) * 1099511628211ull;
    return h;
}

static struct view_conn **conn_link(struct container_view *v, uint64_t conn_id)
{
    struct view_conn **p = &v->conns[(conn_id * 0x9e3779b97f4a7c15ull >> 40) % VIEW_CONN_BUCKETS];
    while (*p && (*p)->conn_id != conn_id)
        p = &(*p)->next;
    return p;
}

/* conn_id's state; NULL out of memory. */
static struct view_conn *conn_of(struct container_view *v, uint64_t conn_id)
{
    struct view_conn **p = conn_link(v, conn_id);
    if (!*p && (*p = calloc(1, sizeof(**p))) != NULL)
        (*p)->conn_id = conn_id;
    return *p;
}

/* May the connection name this id (one more distinct id, within the cap)? */
static bool admit_id(struct container_view *v, struct view_conn *c, uint64_t h)
{
    for (unsigned i = 0; i < c->nids; i++)
        if (c->ids[i] == h)
            return true;
    if (c->nids == CONTAINER_VIEW_IDS_PER_CONN) {
        v->over_limit++;
        return false;
    }
    c->ids[c->nids++] = h;
    return true;
}

/* r may go to the connection: it is of the sandbox the connection's first
 * found record named (which r's becomes when it is the first). */
static bool same_sandbox(struct view_conn *c, const struct container_record *r)
{
    if (r->state != CONTAINER_FOUND || !r->sandbox_id)
        return true;   /* no names to give away */
    if (!c->sandbox[0]) {
        snprintf(c->sandbox, sizeof(c->sandbox), "%s", r->sandbox_id);
        return true;
    }
    return strcmp(c->sandbox, r->sandbox_id) == 0;
}

static const struct container_record *ask(struct container_view *v, uint64_t conn_id, const char *id, bool wait,
                                          int64_t timeout_ns)
{
    if (!v || !v->cache || !id || !id[0] || strlen(id) >= CONTAINER_ID_MAX)
        return NULL;
    uint64_t h = id_hash(id);
    struct view_slot *s = &v->slots[(h ^ (conn_id * 0x9e3779b97f4a7c15ull)) % VIEW_SLOTS];
    uint64_t gen = container_cache_generation(v->cache);
    bool same = s->used && s->conn_id == conn_id && strcmp(s->id, id) == 0;
    if (same && s->generation == gen)
        return s->rec;
    container_record_release(s->rec);
    *s = (struct view_slot){.conn_id = conn_id, .used = true, .generation = gen};
    snprintf(s->id, sizeof(s->id), "%s", id);
    struct view_conn *c = conn_of(v, conn_id);
    if (!c || !admit_id(v, c, h))
        return NULL;
    const struct container_record *r = wait && !same ? container_cache_wait(v->cache, id, timeout_ns)
                                                     : container_cache_get(v->cache, id);
    if (r && !same_sandbox(c, r)) {
        v->foreign++;
        container_record_release(r);
        r = NULL;
    }
    s->rec = r;
    return r;
}

const struct container_record *container_view_get(struct container_view *v, uint64_t conn_id, const char *id)
{
    return ask(v, conn_id, id, false, 0);
}

const struct container_record *container_view_wait(struct container_view *v, uint64_t conn_id, const char *id,
                                                   int64_t timeout_ns)
{
    return ask(v, conn_id, id, true, timeout_ns);
}

void container_view_conn_closed(struct container_view *v, uint64_t conn_id)
{
    if (!v)
        return;
    for (size_t i = 0; i < VIEW_SLOTS; i++)
        if (v->slots[i].used && v->slots[i].conn_id == conn_id) {
            container_record_release(v->slots[i].rec);
            v->slots[i] = (struct view_slot){0};
        }
    struct view_conn **p = conn_link(v, conn_id);
    if (*p) {
        struct view_conn *c = *p;
        *p = c->next;
        free(c);
    }
}

uint64_t container_view_foreign(const struct container_view *v) { return v ? v->foreign : 0; }
uint64_t container_view_over_limit(const struct container_view *v) { return v ? v->over_limit : 0; }
