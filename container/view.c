/* view.c - a reader's per-connection view of the cache (container.h).
 *
 * A fixed table of slots, each (connection, container id) -> the record the
 * cache gave and the generation it was asked at. An event asks its slot: the
 * same id again costs a compare, and the cache's mutex is taken only when
 * the cache published something since (a container found, given up on, its
 * users re-read, a connection bound). Two pairs hashing to one slot take
 * turns (a miss is one more cache ask, never a wrong answer). Per
 * connection, kept until it closes: its binding (the sandbox whose records
 * it is given), the first container id it named (which binds it when its
 * peer does not), the ids it named, at most CONTAINER_VIEW_IDS_PER_CONN.
 *
 * The rule that keeps a sandbox's names its own is here, whatever source a
 * record came from: a found record goes to a connection only when its
 * `sandbox` is the connection's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
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
    bool bound;
    struct container_binding binding;
    char claim[CONTAINER_ID_MAX];     /* the first container id it named */
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

/* Is the connection bound now (asking the cache, waiting up to timeout_ns)? */
static bool bound(struct container_view *v, struct view_conn *c, const char *id, bool wait, int64_t timeout_ns)
{
    if (c->bound)
        return true;
    if (!c->claim[0])
        snprintf(c->claim, sizeof(c->claim), "%s", id);
    c->bound = wait ? container_cache_wait_binding(v->cache, c->conn_id, c->claim, timeout_ns, &c->binding)
                    : container_cache_binding(v->cache, c->conn_id, c->claim, &c->binding);
    return c->bound;
}

/* Withheld: another sandbox's (counted). */
static const struct container_record *own_only(struct container_view *v, const struct view_conn *c,
                                               const struct container_record *r)
{
    bool foreign = r && (r->state == CONTAINER_FOREIGN ||
                         (r->state == CONTAINER_FOUND && (!r->sandbox || strcmp(r->sandbox, c->binding.sandbox) != 0)));
    if (!foreign)
        return r;
    v->foreign++;
    container_record_release(r);
    return NULL;
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
    wait = wait && !same;
    int64_t deadline = monotonic_ns() + timeout_ns;
    if (!bound(v, c, id, wait, timeout_ns))
        return NULL;
    int64_t left = deadline - monotonic_ns();
    const struct container_record *r = wait ? container_cache_wait(v->cache, &c->binding, id, left > 0 ? left : 0)
                                            : container_cache_get(v->cache, &c->binding, id);
    s->rec = own_only(v, c, r);
    return s->rec;
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

bool container_view_binding(struct container_view *v, uint64_t conn_id, struct container_binding *out)
{
    struct view_conn *c = v ? *conn_link(v, conn_id) : NULL;
    if (!c || !c->bound)
        return false;
    *out = c->binding;
    return true;
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
