#include "arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct arena_chunk {
    struct arena_chunk *next;
    size_t size;   /* usable bytes in data */
    size_t fill;   /* bytes used in data */
    _Alignas(16) unsigned char data[];
};

#define ARENA_ALIGN 8

static void *pb_alloc(void *data, size_t size) { return arena_alloc(data, size); }
static void pb_free(void *data, void *ptr) { (void)data; (void)ptr; /* freed by reset */ }

void arena_init(struct arena *a, size_t chunk_size, size_t limit)
{
    memset(a, 0, sizeof(*a));
    a->chunk_size = chunk_size;
    a->limit = limit;
    a->pb.alloc = pb_alloc;
    a->pb.free = pb_free;
    a->pb.allocator_data = a;
}

void arena_free(struct arena *a)
{
    struct arena_chunk *c = a->chunks;
    while (c) {
        struct arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->chunks = a->head = NULL;
    a->used = a->reserved = 0;
}

/* Finds a kept chunk with room, or allocates one; chunks stay in list order
 * so reset can walk them again from the start. */
static struct arena_chunk *arena_next_chunk(struct arena *a, size_t size)
{
    struct arena_chunk *c = a->head ? a->head->next : a->chunks;
    for (; c; c = c->next) {
        if (c->size >= size) {
            c->fill = 0;
            return c;
        }
    }
    size_t want = size > a->chunk_size ? size : a->chunk_size;
    c = malloc(sizeof(*c) + want);
    if (!c)
        return NULL;
    c->size = want;
    c->fill = 0;
    /* Insert after head so unvisited kept chunks stay reachable. */
    if (a->head) {
        c->next = a->head->next;
        a->head->next = c;
    } else {
        c->next = a->chunks;
        a->chunks = c;
    }
    a->reserved += want;
    return c;
}

void *arena_alloc(struct arena *a, size_t size)
{
    size_t rounded = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (rounded < size || rounded > a->limit - a->used || a->used > a->limit)
        return NULL;
    struct arena_chunk *c = a->head;
    if (!c || c->size - c->fill < rounded) {
        c = arena_next_chunk(a, rounded);
        if (!c)
            return NULL;
        a->head = c;
    }
    void *p = c->data + c->fill;
    c->fill += rounded;
    a->used += rounded;
    return p;
}

void *arena_memdup(struct arena *a, const void *src, size_t size)
{
    void *p = arena_alloc(a, size ? size : 1);
    if (p && size)
        memcpy(p, src, size);
    return p;
}

char *arena_strndup(struct arena *a, const char *s, size_t len)
{
    char *d = arena_alloc(a, len + 1);
    if (d) {
        memcpy(d, s, len);
        d[len] = '\0';
    }
    return d;
}

void arena_reset(struct arena *a)
{
    if (a->chunks)
        a->chunks->fill = 0;
    a->head = a->chunks;
    a->used = 0;
}
