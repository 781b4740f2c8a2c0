/* arena.h - bump allocator reset per batch.
 *
 * Every byte a batch holds (copied packets, protobuf-c unpacked messages)
 * lives in one arena. Reset keeps the chunks, so once a batch has seen its
 * largest load, refilling it allocates nothing. A hard byte limit makes a
 * hostile packet that inflates on unpack fail cleanly instead of growing
 * memory without bound.
 */
#ifndef SECCHECKD_ARENA_H
#define SECCHECKD_ARENA_H

#include <stddef.h>
#include <protobuf-c/protobuf-c.h>

struct arena_chunk;

struct arena {
    struct arena_chunk *head;     /* chunk being filled */
    struct arena_chunk *chunks;   /* every chunk owned, for reset and free */
    size_t chunk_size;            /* size of a normal chunk */
    size_t limit;                 /* most bytes this arena may hold */
    size_t used;                  /* bytes handed out since last reset */
    size_t reserved;              /* bytes of chunks owned */
    ProtobufCAllocator pb;        /* protobuf-c allocator backed by this arena */
};

/* chunk_size: granularity of growth; limit: hard cap on bytes handed out. */
void arena_init(struct arena *a, size_t chunk_size, size_t limit);
void arena_free(struct arena *a);

/* Returns 8-byte aligned memory, or NULL when the limit would be passed. */
void *arena_alloc(struct arena *a, size_t size);
void *arena_memdup(struct arena *a, const void *src, size_t size);
/* len bytes of s and a NUL: a C string, or NULL past the limit. */
char *arena_strndup(struct arena *a, const char *s, size_t len);

/* Forget every allocation; keeps chunks for reuse. */
void arena_reset(struct arena *a);

/* Bytes handed out since the last reset. */
static inline size_t arena_used(const struct arena *a) { return a->used; }

/* Bytes still allowed before the limit. */
static inline size_t arena_remaining(const struct arena *a)
{
    return a->used < a->limit ? a->limit - a->used : 0;
}

#endif
