/* Zero heap allocations per message in steady state.
 *
 * This program replaces malloc and friends (forwarding to glibc's own) to
 * count every call in the process, shared libraries included. It replays
 * the recorded traces through the daemon's real path (ingest: header check,
 * copy into the batch arena, protobuf-c unpack into it; the pipeline; a sink
 * that renders every event's JSON as the SQLite sink does), warms up, then
 * counts allocations over 100k more messages: the count must be 0.
 * Not built with sanitizers, which own malloc themselves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <uv.h>

#include "ingest.h"
#include "json.h"
#include "pipeline.h"
#include "replay.h"
#include "sink.h"

/* ---- counting allocator ---- */

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static atomic_ulong allocations;

void *malloc(size_t n)
{
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_malloc(n);
}
void *calloc(size_t n, size_t size)
{
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_calloc(n, size);
}
void *realloc(void *p, size_t n)
{
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_realloc(p, n);
}
int posix_memalign(void **out, size_t align, size_t n)
{
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    *out = __libc_memalign(align, n);
    return *out ? 0 : 12;
}
void *aligned_alloc(size_t align, size_t n)
{
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_memalign(align, n);
}
void free(void *p) { __libc_free(p); }

/* ---- a sink that does the SQLite sink's per-event work minus SQLite ---- */

struct render_sink {
    struct sink base;
    struct strbuf json;
    uint64_t rendered;
};

static void render_write_batch(struct sink *base, struct batch *b)
{
    struct render_sink *s = (struct render_sink *)base;
    for (size_t i = 0; i < b->count; i++) {
        if (!b->events[i].msg)
            continue;
        strbuf_reset(&s->json);
        assert_int_equal(json_render_message(&s->json, b->events[i].msg), 0);
        s->rendered++;
    }
    b->result.stored = b->count;
}

static void render_close(struct sink *base) { (void)base; }

static const struct sink_ops render_ops = {
    .name = "render", .needs_writer_thread = true, .write_batch = render_write_batch, .close = render_close};

/* ---- the replay ---- */

struct bench {
    uv_loop_t loop;
    struct decoder decoder;
    struct pipeline pipeline;
    struct ingest ingest;
    struct conn_record conn;
    struct replay_trace traces[3];
};

/* Feeds n messages, cycling through the traces; seals every 1000 messages
 * as the flush timer would, and lets written batches come back. */
static void feed(struct bench *b, size_t n)
{
    size_t t = 0, i = 0;
    for (size_t sent = 0; sent < n; sent++) {
        const struct replay_trace *tr = &b->traces[t];
        ingest_packet(&b->ingest, &b->conn, tr->packets[i], tr->lengths[i], false, (int64_t)sent);
        if (++i == tr->count) {
            i = 0;
            t = (t + 1) % 3;
        }
        if (sent % 1000 == 999) {
            assert_int_equal(pipeline_seal(&b->pipeline), 0);
            while (pipeline_saturated(&b->pipeline))
                uv_run(&b->loop, UV_RUN_ONCE);
        }
    }
}

static void test_no_allocation_per_message(void **state)
{
    (void)state;
    static struct bench b;
    static const char *const names[] = {"mixed_syscalls", "exec_loop", "redis_rw"};
    char err[512], path[512];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s/%s.trace", TRACES_DIR, names[i]);
        assert_int_equal(replay_trace_load(&b.traces[i], path, err, sizeof(err)), 0);
    }
    static struct render_sink sink = {.base = {.ops = &render_ops, .first_conn_id = 1}};
    assert_int_equal(uv_loop_init(&b.loop), 0);
    decoder_init(&b.decoder);
    struct pipeline_config cfg = {.limits = {.max_events = 4096, .max_bytes = 8u << 20}, .queue_max = 4};
    assert_int_equal(pipeline_init(&b.pipeline, &b.loop, &sink.base, &cfg, NULL, NULL, NULL), 0);
    b.ingest = (struct ingest){.decoder = &b.decoder, .pipeline = &b.pipeline};
    b.conn.id = 1;

    feed(&b, 200000);   /* warm-up: every batch, chunk and buffer reaches its size */
    unsigned long before = atomic_load(&allocations);
    uint64_t rendered_before = sink.rendered;
    feed(&b, 100000);
    unsigned long during = atomic_load(&allocations) - before;
    printf("allocations over 100000 messages after warm-up: %lu (%.6f per message); %llu JSON details rendered\n",
           during, during / 100000.0, (unsigned long long)(sink.rendered - rendered_before));
    assert_int_equal(during, 0);
    assert_true(sink.rendered - rendered_before > 90000);   /* the work really happened */

    pipeline_finish(&b.pipeline);
    uv_run(&b.loop, UV_RUN_DEFAULT);
    pipeline_free(&b.pipeline);
    uv_loop_close(&b.loop);
    strbuf_free(&sink.json);
    for (int i = 0; i < 3; i++)
        replay_trace_free(&b.traces[i]);
}

/* The counter itself works: otherwise a 0 above would prove nothing. */
static void test_counter_counts(void **state)
{
    (void)state;
    unsigned long before = atomic_load(&allocations);
    void *volatile p = malloc(16);
    free(p);
    assert_int_equal(atomic_load(&allocations) - before, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counter_counts),
        cmocka_unit_test(test_no_allocation_per_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
