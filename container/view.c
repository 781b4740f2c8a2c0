/* view.c - a reader's per-connection view of the cache (container.h).
 *
 * A fixed table of slots, each (connection, container id) -> the record the
 * cache gave and the generation it was asked at. An event asks its slot: the
 * same id again costs a compare, and the cache's mutex is taken only when
 * the cache published something since (a container found, given up on, or
 * its users re-read). Two pairs hashing to one slot take turns (a miss is
 * one more cache ask, never a wrong answer). Per connection, the first
 * record found names its sandbox; another sandbox's records are withheld
 * from it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define VIEW_SLOTS 1024
#define VIEW_CONNS 256   /* connections whose sandbox is remembered */

struct view_slot {
    uint64_t conn_id;
    bool used;
    char id[CONTAINER_ID_MAX];
    const struct container_record *rec;   /* a reference, or NULL */
    uint64_t generation;
};

struct view_conn {
    uint64_t conn_id;
    bool used;
    char sandbox[CONTAINER_ID_MAX];
};

struct container_view {
    struct container_cache *cache;
    struct view_slot slots[VIEW_SLOTS];
    struct view_conn conns[VIEW_CONNS];
    uint64_t foreign;
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
    free(v);
}

static uint32_t slot_hash(uint64_t conn_id, const char *id)
{
    uint32_t h = 2166136261u ^ (uint32_t)(conn_id * 0x9e3779b97f4a7c15ull >> 32);
    for (; *id; id++)
        h = (h ^ (unsigned char)*id) * 16777619u;
    return h;
}

static struct view_conn *conn_of(struct container_view *v, uint64_t conn_id)
{
    struct view_conn *c = &v->conns[conn_id % VIEW_CONNS];
    if (!c->used || c->conn_id != conn_id) {
        /* A connection taking another's place: that one's binding is forgotten (it is asked again). */
        *c = (struct view_conn){.conn_id = conn_id, .used = true};
    }
    return c;
}

/* r may go to conn_id: it is of the sandbox the connection's first found
 * record named (which this one becomes when it is the first). */
static bool same_sandbox(struct container_view *v, uint64_t conn_id, const struct container_record *r)
{
    if (r->state != CONTAINER_FOUND || !r->sandbox_id)
        return true;   /* no names to give away */
    struct view_conn *c = conn_of(v, conn_id);
    if (!c->sandbox[0]) {
        snprintf(c->sandbox, sizeof(c->sandbox), "%s", r->sandbox_id);
        return true;
    }
    return strcmp(c->sandbox, r->sandbox_id) == 0;
}

const struct container_record *container_view_get(struct container_view *v, uint64_t conn_id, const char *id)
{
    if (!v || !v->cache || !id || !id[0] || strlen(id) >= CONTAINER_ID_MAX)
        return NULL;
    struct view_slot *s = &v->slots[slot_hash(conn_id, id) % VIEW_SLOTS];
    uint64_t gen = container_cache_generation(v->cache);
    bool same = s->used && s->conn_id == conn_id && strcmp(s->id, id) == 0;
    if (same && s->generation == gen)
        return s->rec;
    container_record_release(s->rec);
    *s = (struct view_slot){.conn_id = conn_id, .used = true, .generation = gen};
    snprintf(s->id, sizeof(s->id), "%s", id);
    const struct container_record *r = container_cache_get(v->cache, id);
    if (r && !same_sandbox(v, conn_id, r)) {
        v->foreign++;
        container_record_release(r);
        r = NULL;
    }
    s->rec = r;
    return r;
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
    struct view_conn *c = &v->conns[conn_id % VIEW_CONNS];
    if (c->used && c->conn_id == conn_id)
        *c = (struct view_conn){0};
}

uint64_t container_view_foreign(const struct container_view *v) { return v ? v->foreign : 0; }
