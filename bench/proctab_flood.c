/* proctab_flood.c - the writer's CPU per event when a sandbox picks its
 * pids to collide in the rules' process table (issue 24 item 4).
 *
 * The table's hash was linear over XOR in the thread-group id, so a sandbox
 * could compute ids sharing one bucket at every table size: here, the
 * 16,381 ids below 2^31 whose unkeyed hash agrees in its low 17 bits with
 * the first one's (every size up to 131,072 buckets, past what the default
 * --max-processes reaches). Each run: a fresh engine (its own table key),
 * one sandbox's shell cloning those children, then every child opening a
 * file, `rounds` times; the same for as many random distinct ids. The
 * figure is the evaluating thread's CPU time (CLOCK_THREAD_CPUTIME_ID) per
 * event, the events decoded beforehand, as the writer gets them. Runs
 * alternate random and adversarial; medians are printed, and their ratio
 * within this invocation.
 *
 * Usage: bench-proctab-flood [--runs N] [--rounds N] [--rules FILE]
 *   (default 5 runs, 4 rounds, no rules: the table alone; the daemon's
 *   default rules: --rules configs/rules/gvisor_rules.yaml) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arena.h"
#include "decode.h"
#include "gvisor/sentry.pb-c.h"
#include "gvisor/syscall.pb-c.h"
#include "rules.h"
#include "wire.h"

#define FLOOD_IDS 16381
#define COLLIDE_BITS 17

/* The table's hash before the fix (rules/proctab.c at 5539b86, now filter/proctab.c). */
static uint64_t unkeyed_hash(uint64_t conn_id, int32_t tgid)
{
    uint64_t h = conn_id * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uint32_t)tgid * 0xc2b2ae3d27d4eb4full;
    return h ^ h >> 29;
}

static size_t adversarial_ids(int32_t *ids, size_t max)
{
    const uint64_t mask = (1u << COLLIDE_BITS) - 1;
    uint64_t target = unkeyed_hash(1, 2) & mask;
    size_t n = 0;
    for (int64_t t = 2; t < INT32_MAX && n < max; t++)
        if ((unkeyed_hash(1, (int32_t)t) & mask) == target)
            ids[n++] = (int32_t)t;
    return n;
}

static uint64_t rng = 0x853c49e6748fea9bull;
static uint32_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)rng;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* n distinct random ids in [2, 2^31). */
static void random_ids(int32_t *ids, size_t n)
{
    for (;;) {
        for (size_t i = 0; i < n; i++)
            ids[i] = (int32_t)(2 + next_random() % (INT32_MAX - 2));
        qsort(ids, n, sizeof(*ids), cmp_i32);
        size_t dup = 0;
        for (size_t i = 1; i < n; i++)
            dup += ids[i] == ids[i - 1];
        if (!dup)
            break;
    }
    for (size_t i = n - 1; i > 0; i--) {   /* not in order: the table sees them as a sandbox sends them */
        size_t j = next_random() % (i + 1);
        int32_t t = ids[i];
        ids[i] = ids[j];
        ids[j] = t;
    }
}

struct events {
    struct event *clones, *opens;   /* one each per id */
    size_t n;
};

static void decode_into(struct decoder *d, struct arena *a, uint16_t type, const ProtobufCMessage *m,
                        struct event *ev)
{
    uint8_t pkt[1024];
    size_t len = protobuf_c_message_get_packed_size(m);
    if (len + WIRE_HEADER_MIN > sizeof(pkt))
        abort();
    wire_header_write(pkt, type, 0);
    protobuf_c_message_pack(m, pkt + WIRE_HEADER_MIN);
    len += WIRE_HEADER_MIN;
    struct wire_header h;
    if (wire_header_parse(pkt, len, &h) != WIRE_OK)
        abort();
    memset(ev, 0, sizeof(*ev));
    decode_event(d, a, &h, arena_memdup(a, pkt, len), len, ev);
    if (ev->status != DECODE_OK)
        abort();
    ev->conn_id = 1;
    ev->recv_ns = 1;
}

/* sh (tgid 1) clones each id; each child opens /etc/hosts. */
static void build(struct events *out, const int32_t *ids, size_t n, struct arena *a)
{
    struct decoder d;
    decoder_init(&d);
    out->n = n;
    out->clones = calloc(n, sizeof(*out->clones));
    out->opens = calloc(n, sizeof(*out->opens));
    if (!out->clones || !out->opens)
        abort();
    for (size_t i = 0; i < n; i++) {
        Gvisor__Common__ContextData ctx = GVISOR__COMMON__CONTEXT_DATA__INIT;
        ctx.container_id = (char *)"flood";
        ctx.time_ns = 1700000000000000000 + (int64_t)i;
        ctx.thread_id = ctx.thread_group_id = 1;
        ctx.thread_group_start_time_ns = 1000;
        ctx.process_name = (char *)"sh";
        Gvisor__Sentry__CloneInfo clone = GVISOR__SENTRY__CLONE_INFO__INIT;
        clone.context_data = &ctx;
        clone.created_thread_id = clone.created_thread_group_id = ids[i];
        clone.created_thread_start_time_ns = 2000 + (int64_t)i;
        decode_into(&d, a, 2, &clone.base, &out->clones[i]);
        ctx.thread_id = ctx.thread_group_id = ids[i];
        ctx.thread_group_start_time_ns = 2000 + (int64_t)i;
        ctx.process_name = (char *)"cat";
        Gvisor__Syscall__Exit x = GVISOR__SYSCALL__EXIT__INIT;
        x.result = 3;
        Gvisor__Syscall__Open open = GVISOR__SYSCALL__OPEN__INIT;
        open.context_data = &ctx;
        open.exit = &x;
        open.sysno = 257;
        open.fd = -100;
        open.pathname = (char *)"/etc/hosts";
        decode_into(&d, a, 7, &open.base, &out->opens[i]);
    }
}

static double thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static struct rule_set *load_rules(const char *path)
{
    if (!path)
        return NULL;
    struct rules_diag diag = {0};
    struct rule_set *rs = rule_set_load(&path, 1, &diag);
    if (!rs) {
        rules_diag_print(&diag, stderr);
        exit(1);
    }
    rules_diag_free(&diag);
    return rs;
}

/* CPU per event of one run: a fresh engine, the clones, then the opens
 * `rounds` times. */
static double run(const struct events *ev, int rounds, const char *rules_path, uint64_t *alerts)
{
    struct rules_engine_config cfg;
    rules_engine_config_defaults(&cfg);
    struct rules_engine *e = rules_engine_new(&cfg);
    if (!e)
        abort();
    rules_engine_set_rules(e, load_rules(rules_path));
    struct alert_list l = {0};
    double t0 = thread_cpu_ns();
    size_t events = 0;
    for (size_t i = 0; i < ev->n; i++, events++)
        rules_engine_eval(e, &ev->clones[i], i, &l);
    for (int r = 0; r < rounds; r++)
        for (size_t i = 0; i < ev->n; i++, events++) {
            rules_engine_eval(e, &ev->opens[i], i, &l);
            if (l.count > 512) {
                *alerts += l.count;
                alert_list_reset(&l);
            }
        }
    double per_event = (thread_cpu_ns() - t0) / (double)events;
    *alerts += l.count;
    alert_list_free(&l);
    rules_engine_free(e);
    return per_event;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int runs = 5, rounds = 4;
    const char *rules_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--rules") == 0 && i + 1 < argc)
            rules_path = argv[++i];
        else {
            fprintf(stderr, "usage: bench-proctab-flood [--runs N] [--rounds N] [--rules FILE]\n");
            return 2;
        }
    }
    if (runs < 1 || runs > 100 || rounds < 1 || rounds > 1000) {
        fprintf(stderr, "bench-proctab-flood: --runs 1..100, --rounds 1..1000\n");
        return 2;
    }
    static int32_t bad[FLOOD_IDS], good[FLOOD_IDS];
    size_t n = adversarial_ids(bad, FLOOD_IDS);
    random_ids(good, n);
    struct arena a;
    arena_init(&a, 1 << 20, SIZE_MAX);
    struct events adversarial, random;
    build(&adversarial, bad, n, &a);
    build(&random, good, n, &a);
    printf("bench-proctab-flood: %zu thread-group ids sharing one bucket of the unkeyed hash at every size up to "
           "2^%d, against %zu random ones; %d runs each, %d rounds of opens; rules: %s\n",
           n, COLLIDE_BITS, n, runs, rounds, rules_path ? rules_path : "none");
    double *t_random = calloc((size_t)runs, sizeof(double)), *t_bad = calloc((size_t)runs, sizeof(double));
    uint64_t alerts_random = 0, alerts_bad = 0;
    for (int r = 0; r < runs; r++) {
        t_random[r] = run(&random, rounds, rules_path, &alerts_random);
        t_bad[r] = run(&adversarial, rounds, rules_path, &alerts_bad);
        printf("run %d: random %.0f ns/event, adversarial %.0f ns/event\n", r + 1, t_random[r], t_bad[r]);
    }
    qsort(t_random, (size_t)runs, sizeof(double), cmp_double);
    qsort(t_bad, (size_t)runs, sizeof(double), cmp_double);
    double m_random = t_random[runs / 2], m_bad = t_bad[runs / 2];
    printf("%-12s %14s %10s %10s %10s\n", "pids", "ns/event", "min", "max", "alerts");
    printf("%-12s %14.0f %10.0f %10.0f %10" PRIu64 "\n", "random", m_random, t_random[0], t_random[runs - 1],
           alerts_random / (uint64_t)runs);
    printf("%-12s %14.0f %10.0f %10.0f %10" PRIu64 "\n", "adversarial", m_bad, t_bad[0], t_bad[runs - 1],
           alerts_bad / (uint64_t)runs);
    printf("adversarial / random: %.2fx\n", m_bad / m_random);
    free(t_random);
    free(t_bad);
    free(adversarial.clones);
    free(adversarial.opens);
    free(random.clones);
    free(random.opens);
    arena_free(&a);
    return 0;
}
