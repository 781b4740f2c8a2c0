#include "batch.h"

#include <stdlib.h>
#include <string.h>

#include "decode.h"

#define BATCH_ARENA_CHUNK (1u << 20)

const char *reject_reason_name(enum reject_reason r)
{
    static const char *const names[REJECT_REASON_COUNT] = {
        [REJECT_SHORT_PACKET] = "short_packet",
        [REJECT_BAD_HEADER] = "bad_header",
        [REJECT_OVERSIZE] = "oversize",
        [REJECT_NO_MEMORY] = "no_memory",
        [REJECT_QUEUE_FULL] = "queue_full",
    };
    return (unsigned)r < REJECT_REASON_COUNT ? names[r] : "unknown";
}

struct batch *batch_new(const struct batch_limits *limits)
{
    struct batch *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    b->events = calloc(limits->max_events, sizeof(*b->events));
    if (!b->events) {
        free(b);
        return NULL;
    }
    b->max_events = limits->max_events;
    arena_init(&b->arena, BATCH_ARENA_CHUNK, limits->max_bytes);
    return b;
}

void batch_free(struct batch *b)
{
    if (!b)
        return;
    arena_free(&b->arena);
    free(b->events);
    free(b->conns);
    free(b->shares);
    alert_list_free(&b->alerts);
    for (size_t i = 0; i < b->ncontainers; i++)
        container_record_release(b->containers[i]);
    free(b->containers);
    free(b);
}

void batch_reset(struct batch *b)
{
    arena_reset(&b->arena);
    b->count = 0;
    b->nconns = 0;
    memset(&b->counts, 0, sizeof(b->counts));
    memset(&b->result, 0, sizeof(b->result));
    alert_list_reset(&b->alerts);
    for (size_t i = 0; i < b->ncontainers; i++)
        container_record_release(b->containers[i]);
    b->ncontainers = 0;
    b->next = NULL;
}

bool batch_has_room(const struct batch *b, size_t len)
{
    return b->count < b->max_events && arena_remaining(&b->arena) >= decode_arena_need(len);
}

struct event *batch_push(struct batch *b, const uint8_t *pkt, size_t len)
{
    if (!batch_has_room(b, len))
        return NULL;
    struct event *ev = &b->events[b->count];
    ev->raw = arena_memdup(&b->arena, pkt, len);
    if (!ev->raw)
        return NULL;
    ev->raw_len = (uint32_t)len;
    b->count++;
    return ev;
}

int batch_add_conn(struct batch *b, const struct conn_record *rec)
{
    if (b->nconns == b->conns_cap) {
        size_t cap = b->conns_cap ? b->conns_cap * 2 : 16;
        struct conn_record *p = realloc(b->conns, cap * sizeof(*p));
        if (!p)
            return -1;
        b->conns = p;
        b->conns_cap = cap;
    }
    b->conns[b->nconns++] = *rec;
    return 0;
}

void batch_counts_add(struct batch_counts *into, const struct batch_counts *from)
{
    into->received += from->received;
    into->discarded += from->discarded;
    for (int r = 0; r < REJECT_REASON_COUNT; r++)
        into->rejected[r] += from->rejected[r];
    for (int s = 0; s < DECODE_STATUS_COUNT; s++)
        into->decode[s] += from->decode[s];
}

uint64_t batch_counts_rejected(const struct batch_counts *c)
{
    uint64_t n = 0;
    for (int r = 0; r < REJECT_REASON_COUNT; r++)
        n += c->rejected[r];
    return n;
}

int batch_add_container(struct batch *b, const struct container_record *r)
{
    if (b->ncontainers == b->containers_cap) {
        size_t cap = b->containers_cap ? b->containers_cap * 2 : 8;
        const struct container_record **n = realloc(b->containers, cap * sizeof(*n));
        if (!n)
            return -1;
        b->containers = n;
        b->containers_cap = cap;
    }
    container_record_ref(r);
    b->containers[b->ncontainers++] = r;
    return 0;
}
