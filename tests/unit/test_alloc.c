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
#include "rules.h"
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

/* The rules engine on the writer thread: decoding, the process table,
 * every rule indexed for the event, alerts rendered into a list that is
 * reset per batch. After warm-up (slot buffers, process entries and their
 * strings, the alert arena reach their sizes) nothing is allocated, though
 * every pass ends its connections and builds their tables again. */
static const char *const alloc_rules =
    "- list: shells\n  items: [sh, bash, dash]\n"
    "- macro: spawned\n  condition: evt.type in (execve, execveat) and evt.dir = <\n"
    "- rule: spawn\n  desc: d\n  condition: spawned and not proc.name in (shells)\n"
    "  output: '%proc.name %proc.cmdline %proc.pname %proc.aname[2] %proc.exepath %container.id %evt.res'\n"
    "  priority: Notice\n  tags: [process]\n"
    "- rule: open\n  desc: d\n  condition: evt.type in (open, openat) and evt.dir = < and fd.name pmatch (/etc, /usr)\n"
    "  output: '%fd.name %fd.directory %fd.filename %proc.cwd %evt.time %user.uid %evt.arg.flags %gvisor.point'\n"
    "  priority: Warning\n"
    "- rule: io\n  desc: d\n  condition: evt.type in (read, write) and fd.name icontains 'NULL' or fd.num > 100\n"
    "  output: '%fd.name %fd.num %evt.arg.count'\n  priority: Debug\n"
    "- rule: net\n  desc: d\n  condition: evt.type in (connect, bind, accept4) and fd.typechar in (4, 6, u)\n"
    "  output: '%fd.name %fd.sip %fd.sport %fd.cip'\n  priority: Notice\n"
    "- rule: exits\n  desc: d\n  condition: evt.type = procexit and proc.aname = sh\n  output: '%proc.name %proc.duration'\n"
    "  priority: Info\n"
    /* Falco's fields (issue 25): the process's argv[0], environment,
     * session; the sockets it holds; evt.arg by Falco's names */
    "- rule: falco\n  desc: d\n  condition: evt.type in (execve, openat, connect, dup2, close, socket) and "
    "(proc.env contains PATH or proc.aexe endswith sh or fd.l4proto = tcp or evt.arg.flags contains O_CREAT)\n"
    "  output: '%proc.exe %proc.pexe %proc.aexe[2] %proc.env[PATH] %proc.sname %proc.vpgid %fd.type %fd.ip "
    "%fd.connected %fd.nameraw %evt.arg.fd %evt.args'\n  priority: Notice\n"
    /* libs' newer language: regex (RE2's DFA warm), transformers building
     * values in scratch slots, modifiers, a field on the right */
    "- rule: regex\n  desc: d\n  condition: evt.type in (open, openat, read) and (fd.name regex '/(etc|usr|proc)/[a-z_./-]+' "
    "or proc.name regex 'redis.*' or fd.name regex oneof ('.*[.]rdb', '/dev/.*'))\n  output: '%fd.name'\n  priority: Debug\n"
    "- rule: transformers\n  desc: d\n  condition: evt.type in (open, openat, read, write, execve) and "
    "(tolower(basename(fd.name)) startswith anyof (redis, dump, null) or len(fd.name) > 3000 or "
    "concat(proc.name, \"-\", fd.filename) = x or fd.directory = val(proc.cwd) or "
    "join(\",\", (proc.name, toupper(fd.filename), evt.num)) contains REDIS or "
    "getopt((proc.name, \"-x\", fd.name), \"x:\") intersects (\"/dev/null\"))\n"
    "  output: '%fd.name %proc.name'\n  priority: Debug\n";

static void replay_rules(struct rules_engine *e, struct replay_trace *traces, struct arena *a, struct decoder *d,
                         struct alert_list *l, uint64_t *alerts)
{
    for (int t = 0; t < 3; t++) {
        for (size_t i = 0; i < traces[t].count; i++) {
            struct wire_header h;
            assert_int_equal(wire_header_parse(traces[t].packets[i], traces[t].lengths[i], &h), WIRE_OK);
            arena_reset(a);
            const uint8_t *raw = arena_memdup(a, traces[t].packets[i], traces[t].lengths[i]);
            struct event ev;
            memset(&ev, 0, sizeof(ev));
            decode_event(d, a, &h, raw, traces[t].lengths[i], &ev);
            ev.conn_id = (uint64_t)t + 1;
            rules_engine_eval(e, &ev, i, l);
            if (l->count > 900 || i + 1 == traces[t].count) {
                *alerts += l->count;
                alert_list_reset(l);
            }
        }
        rules_engine_conn_closed(e, (uint64_t)t + 1);
    }
}

static void test_rules_engine_no_allocation(void **state)
{
    (void)state;
    static struct replay_trace traces[3];
    static const char *const names[] = {"mixed_syscalls", "exec_loop", "redis_rw"};
    char err[512], path[512];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s/%s.trace", TRACES_DIR, names[i]);
        assert_int_equal(replay_trace_load(&traces[i], path, err, sizeof(err)), 0);
    }
    struct rules_diag diag = {0};
    struct rule_set *rs = rule_set_load_buffer("alloc.yaml", alloc_rules, strlen(alloc_rules), &diag);
    if (!rs)
        rules_diag_print(&diag, stderr);
    assert_non_null(rs);
    rules_diag_free(&diag);
    struct rules_engine_config cfg;
    rules_engine_config_defaults(&cfg);
    cfg.rate = 1e9;    /* throttling on (its table is allocated at start), letting all through */
    cfg.burst = 1e9;
    struct rules_engine *e = rules_engine_new(&cfg);
    assert_non_null(e);
    rules_engine_set_rules(e, rs);
    struct decoder d;
    decoder_init(&d);
    struct arena a;
    arena_init(&a, 64 * 1024, 16 << 20);
    struct alert_list l = {0};
    uint64_t alerts = 0;
    for (int round = 0; round < 5; round++)
        replay_rules(e, traces, &a, &d, &l, &alerts);
    unsigned long before = atomic_load(&allocations);
    uint64_t alerts_before = alerts;
    struct rules_engine_stats st0, st1;
    rules_engine_get_stats(e, &st0);
    replay_rules(e, traces, &a, &d, &l, &alerts);
    unsigned long during = atomic_load(&allocations) - before;
    rules_engine_get_stats(e, &st1);
    printf("rules engine: %lu allocations over %llu events after warm-up; %llu alerts\n", during,
           (unsigned long long)(st1.events - st0.events), (unsigned long long)(alerts - alerts_before));
    assert_int_equal(during, 0);
    assert_true(alerts - alerts_before > 300);   /* the work really happened */
    alert_list_free(&l);
    rules_engine_free(e);
    arena_free(&a);
    for (int i = 0; i < 3; i++)
        replay_trace_free(&traces[i]);
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
        cmocka_unit_test(test_rules_engine_no_allocation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
