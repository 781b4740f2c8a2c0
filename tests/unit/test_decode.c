/* test_decode.c - packets to events (decoder/decode.h) over the recorded
 * fixtures and crafted hostile payloads. */
#include "unit_util.h"

#include "decode.h"
#include "gvisor/container.pb-c.h"
#include "gvisor/sentry.pb-c.h"
#include "gvisor/syscall.pb-c.h"

static struct decoder dec;

static int setup(void **state)
{
    (void)state;
    decoder_init(&dec);
    return 0;
}

typedef void (*event_check)(const struct event *ev, void *ctx);

/* Decodes every packet of a fixture as ingest does (raw copied into the
 * arena first, arena reset when the next packet might not fit), checks that
 * each one decodes and stays within its arena budget, counts per type and
 * hands each event to check while its memory is still valid. */
static void decode_trace(const char *name, uint64_t counts[DECODE_TYPE_MAX + 1], uint64_t *total,
                         event_check check, void *ctx)
{
    struct trace_pkts t;
    trace_load(name, &t);
    struct arena a;
    arena_init(&a, 64 * 1024, 1 << 20);
    memset(counts, 0, sizeof(uint64_t) * (DECODE_TYPE_MAX + 1));
    for (size_t i = 0; i < t.n; i++) {
        size_t len = t.len[i];
        if (arena_remaining(&a) < decode_arena_need(len))
            arena_reset(&a);
        struct wire_header h;
        assert_int_equal(wire_header_parse(t.pkt[i], len, &h), WIRE_OK);
        size_t before = arena_used(&a);
        const uint8_t *raw = arena_memdup(&a, t.pkt[i], len);
        assert_non_null(raw);
        struct event ev;
        memset(&ev, 0, sizeof(ev));
        decode_event(&dec, &a, &h, raw, len, &ev);
        if (ev.status != DECODE_OK)
            fail_msg("%s packet %zu (type %u, %zu bytes): status %d", name, i, h.message_type, len, ev.status);
        assert_non_null(ev.msg);
        assert_ptr_equal(ev.msg->descriptor, dec.types[h.message_type].desc);
        assert_ptr_equal(ev.raw, raw);
        assert_int_equal(ev.raw_len, len);
        assert_int_equal(ev.header.message_type, h.message_type);
        assert_int_equal(ev.header.dropped_count, h.dropped_count);
        assert_true(arena_used(&a) - before <= decode_arena_need(len));
        assert_in_range(h.message_type, 1, DECODE_TYPE_MAX);
        counts[h.message_type]++;
        if (check)
            check(&ev, ctx);
    }
    *total = t.n;
    arena_free(&a);
    trace_free(&t);
}

static void expect_counts(const uint64_t got[DECODE_TYPE_MAX + 1], const uint64_t want[DECODE_TYPE_MAX + 1])
{
    for (int type = 0; type <= DECODE_TYPE_MAX; type++)
        if (got[type] != want[type])
            fail_msg("type %d (%s): %llu events, README says %llu", type,
                     decode_type_name((uint16_t)type) ? decode_type_name((uint16_t)type) : "?",
                     (unsigned long long)got[type], (unsigned long long)want[type]);
}

static bool starts_with(const char *s, const char *prefix)
{
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* ---- exec_loop.trace ---- */

struct exec_loop_seen {
    int start;
    int exec_true;            /* SENTRY_EXEC of /bin/true */
    int execve_enoent_exit;
    int execve_nonexistent_enter;
    int execve_enter, execve_exit;
    int no_context;
};

static void check_exec_loop(const struct event *ev, void *ctx)
{
    struct exec_loop_seen *s = ctx;
    if (!ev->context) {
        s->no_context++;
        return;
    }
    /* every point was configured with all 9 context fields */
    assert_true(starts_with(ev->context->container_id, "runsc-"));
    assert_non_null(ev->context->credentials);
    assert_true(ev->context->time_ns > 0);
    assert_true(ev->context->thread_id > 0);

    switch (ev->header.message_type) {
    case 1: {
        const Gvisor__Container__Start *st = (const Gvisor__Container__Start *)ev->msg;
        s->start++;
        assert_false(ev->has_sysno);
        assert_false(ev->is_exit);
        assert_int_equal(st->n_args, 3);
        assert_string_equal(st->args[0], "/bin/sh");
        assert_string_equal(st->args[1], "-c");
        assert_non_null(strstr(st->args[2], "for i in $(seq 200)"));
        assert_non_null(strstr(st->args[2], "/nonexistent"));
        assert_string_equal(st->id, ev->context->container_id);
        assert_string_equal(st->cwd, "/tmp");
        assert_string_equal(ev->context->process_name, "sh");
        break;
    }
    case 3: {
        const Gvisor__Sentry__ExecveInfo *x = (const Gvisor__Sentry__ExecveInfo *)ev->msg;
        assert_false(ev->has_sysno);
        if (strcmp(x->binary_path, "/usr/bin/true") == 0) {
            assert_true(x->n_argv >= 1);
            assert_string_equal(x->argv[0], "/bin/true");
            s->exec_true++;
        }
        break;
    }
    case 11: {
        const Gvisor__Syscall__Execve *x = (const Gvisor__Syscall__Execve *)ev->msg;
        assert_true(ev->has_sysno);
        assert_int_equal(ev->sysno, 59);   /* execve */
        assert_int_equal(x->sysno, 59);
        if (ev->is_exit) {
            s->execve_exit++;
            assert_non_null(x->exit);
            assert_int_equal(ev->errorno, x->exit->errorno);
            if (ev->errorno == 2) {
                s->execve_enoent_exit++;
                assert_string_equal(x->pathname, "/nonexistent");
            }
        } else {
            s->execve_enter++;
            assert_null(x->exit);
            assert_int_equal(ev->errorno, 0);
            assert_int_equal(ev->result, 0);
            if (strcmp(x->pathname, "/nonexistent") == 0)
                s->execve_nonexistent_enter++;
        }
        break;
    }
    default:
        assert_false(ev->has_sysno);   /* sentry points carry no sysno */
        assert_false(ev->is_exit);
    }
}

static void test_exec_loop(void **state)
{
    (void)state;
    uint64_t counts[DECODE_TYPE_MAX + 1], total;
    struct exec_loop_seen seen = {0};
    decode_trace("exec_loop.trace", counts, &total, check_exec_loop, &seen);
    assert_int_equal(total, 1219);
    const uint64_t want[DECODE_TYPE_MAX + 1] = {[1] = 1, [2] = 203, [3] = 202, [4] = 203, [5] = 204, [11] = 406};
    expect_counts(counts, want);
    assert_int_equal(seen.no_context, 0);
    assert_int_equal(seen.start, 1);
    assert_int_equal(seen.exec_true, 200);
    assert_int_equal(seen.execve_enoent_exit, 1);
    assert_int_equal(seen.execve_nonexistent_enter, 1);
    assert_int_equal(seen.execve_enter, 203);
    assert_int_equal(seen.execve_exit, 203);
}

/* ---- mixed_syscalls.trace ---- */

struct mixed_seen {
    int raw_getpid, raw_uname, raw_other;
    int read_sysno0;
    int open_enter, open_exit, open_enoent;
    int setid_eperm;
    int connect_with_address;
    int af_unix, af_inet, af_inet6;
    int exit_with_errno;
};

static void check_mixed(const struct event *ev, void *ctx)
{
    struct mixed_seen *s = ctx;
    uint16_t type = ev->header.message_type;
    assert_non_null(ev->context);
    assert_true(starts_with(ev->context->container_id, "runsc-"));
    if (type >= 6) {
        assert_true(ev->has_sysno);
    } else {
        assert_false(ev->has_sysno);
        assert_false(ev->is_exit);
    }
    if (ev->is_exit && ev->errorno != 0)
        s->exit_with_errno++;

    switch (type) {
    case 6: {
        const Gvisor__Syscall__Syscall *r = (const Gvisor__Syscall__Syscall *)ev->msg;
        assert_int_equal(r->sysno, ev->sysno);
        if (ev->sysno == 39)
            s->raw_getpid++;
        else if (ev->sysno == 63)
            s->raw_uname++;
        else
            s->raw_other++;
        break;
    }
    case 7: {
        const Gvisor__Syscall__Open *o = (const Gvisor__Syscall__Open *)ev->msg;
        assert_true(ev->sysno == 257 || ev->sysno == 2 || ev->sysno == 85);   /* openat, open, creat */
        if (ev->is_exit) {
            s->open_exit++;
            assert_non_null(o->exit);
            assert_int_equal(ev->result, o->exit->result);
            if (ev->errorno == 2)
                s->open_enoent++;
        } else {
            s->open_enter++;
            assert_null(o->exit);
        }
        break;
    }
    case 9: {
        const Gvisor__Syscall__Read *r = (const Gvisor__Syscall__Read *)ev->msg;
        if (ev->sysno == 0) {   /* read: the field is absent on the wire */
            s->read_sysno0++;
            assert_int_equal(r->sysno, 0);
        }
        break;
    }
    case 10: {
        const Gvisor__Syscall__Connect *c = (const Gvisor__Syscall__Connect *)ev->msg;
        assert_int_equal(ev->sysno, 42);
        if (c->address.len >= 2) {
            s->connect_with_address++;
            uint16_t family = (uint16_t)(c->address.data[0] | c->address.data[1] << 8);
            if (family == 1)
                s->af_unix++;
            else if (family == 2)
                s->af_inet++;
            else if (family == 10)
                s->af_inet6++;
        }
        break;
    }
    case 14:
        if (ev->is_exit && ev->errorno == 1) {
            assert_int_equal(ev->sysno, 105);   /* setuid(0) as uid 1000 */
            assert_true(ev->result != 0 || ev->errorno == 1);
            s->setid_eperm++;
        }
        break;
    default:
        break;
    }
}

static void test_mixed_syscalls(void **state)
{
    (void)state;
    uint64_t counts[DECODE_TYPE_MAX + 1], total;
    struct mixed_seen seen = {0};
    decode_trace("mixed_syscalls.trace", counts, &total, check_mixed, &seen);
    assert_int_equal(total, 1235);
    const uint64_t want[DECODE_TYPE_MAX + 1] = {
        [1] = 1,    [2] = 9,   [3] = 6,   [4] = 9,   [5] = 10,  [6] = 6,   [7] = 356, [8] = 358, [9] = 260,
        [10] = 10,  [11] = 14, [12] = 14, [13] = 10, [14] = 8,  [15] = 4,  [16] = 20, [17] = 10, [18] = 22,
        [19] = 16,  [20] = 4,  [21] = 2,  [22] = 4,  [23] = 10, [24] = 4,  [25] = 6,  [26] = 2,  [27] = 4,
        [28] = 2,   [29] = 8,  [30] = 4,  [31] = 2,  [32] = 2,  [33] = 2,  [34] = 36,
    };
    expect_counts(counts, want);
    int present = 0;
    for (int type = 1; type <= DECODE_TYPE_MAX; type++)
        present += counts[type] != 0;
    assert_int_equal(present, 34);

    assert_int_equal(seen.raw_getpid, 4);
    assert_int_equal(seen.raw_uname, 2);
    assert_int_equal(seen.raw_other, 0);
    assert_true(seen.read_sysno0 > 0);
    assert_int_equal(seen.read_sysno0, 222);   /* README: read 222 */
    assert_int_equal(seen.open_enter, 178);
    assert_int_equal(seen.open_exit, 178);
    assert_true(seen.open_enoent > 0);
    assert_int_equal(seen.setid_eperm, 1);
    assert_true(seen.connect_with_address > 0);
    assert_true(seen.af_unix > 0);
    assert_true(seen.af_inet > 0);
    assert_true(seen.af_inet6 > 0);
    assert_true(seen.exit_with_errno > 0);
}

/* ---- redis_rw.trace and drops.trace ---- */

struct redis_seen {
    uint64_t with_context;
    uint32_t last_dropped;
    uint32_t max_dropped;
    uint64_t nonzero_dropped;
    uint64_t decreased;
};

static void check_redis(const struct event *ev, void *ctx)
{
    struct redis_seen *s = ctx;
    if (ev->context)
        s->with_context++;
    assert_true(ev->has_sysno);
    assert_false(ev->is_exit);   /* only enter points */
    if (ev->header.dropped_count < s->last_dropped)
        s->decreased++;
    s->last_dropped = ev->header.dropped_count;
    if (ev->header.dropped_count > s->max_dropped)
        s->max_dropped = ev->header.dropped_count;
    if (ev->header.dropped_count)
        s->nonzero_dropped++;
}

static void test_redis_rw(void **state)
{
    (void)state;
    uint64_t counts[DECODE_TYPE_MAX + 1], total;
    struct redis_seen seen = {0};
    decode_trace("redis_rw.trace", counts, &total, check_redis, &seen);
    assert_int_equal(total, 39388);
    const uint64_t want[DECODE_TYPE_MAX + 1] = {[9] = 19804, [34] = 19584};
    expect_counts(counts, want);
    assert_int_equal(seen.with_context, 0);   /* no context fields configured */
    assert_int_equal(seen.max_dropped, 865);
    assert_int_equal(seen.nonzero_dropped, 36600);
    assert_int_equal(seen.decreased, 0);
}

static void check_drops(const struct event *ev, void *ctx)
{
    struct redis_seen *s = ctx;
    /* context fields time, thread_id, container_id were configured */
    assert_non_null(ev->context);
    assert_true(starts_with(ev->context->container_id, "runsc-"));
    if (ev->header.dropped_count < s->last_dropped)
        s->decreased++;
    s->last_dropped = ev->header.dropped_count;
    if (ev->header.dropped_count > s->max_dropped)
        s->max_dropped = ev->header.dropped_count;
    if (ev->header.dropped_count)
        s->nonzero_dropped++;
}

static void test_drops(void **state)
{
    (void)state;
    uint64_t counts[DECODE_TYPE_MAX + 1], total;
    struct redis_seen seen = {0};
    decode_trace("drops.trace", counts, &total, check_drops, &seen);
    assert_int_equal(total, 1692);
    const uint64_t want[DECODE_TYPE_MAX + 1] = {[1] = 1, [5] = 2, [34] = 1689};
    expect_counts(counts, want);
    assert_int_equal(seen.max_dropped, 18311);
    assert_int_equal(counts[34] + seen.max_dropped, 20000);
    assert_int_equal(seen.nonzero_dropped, 1404);
    assert_int_equal(seen.decreased, 0);
}

/* ---- names and layout ---- */

static void test_type_names(void **state)
{
    (void)state;
    assert_string_equal(decode_type_name(7), "SYSCALL_OPEN");
    assert_string_equal(decode_type_name(1), "CONTAINER_START");
    assert_string_equal(decode_type_name(3), "SENTRY_EXEC");
    assert_string_equal(decode_type_name(6), "SYSCALL_RAW");
    assert_string_equal(decode_type_name(16), "SYSCALL_PRLIMIT64");
    assert_string_equal(decode_type_name(34), "SYSCALL_WRITE");
    assert_string_equal(decode_type_name(35), "SENTRY_MMAP");
    assert_string_equal(decode_type_name(38), "SYSCALL_PTRACE");
    assert_null(decode_type_name(0));
    assert_null(decode_type_name(39));
    assert_null(decode_type_name(1000));
    assert_null(decode_type_name(0xffff));
    /* the whole enum, as docs/wire-format.md lists it */
    static const char *const names[DECODE_TYPE_MAX + 1] = {
        NULL, "CONTAINER_START", "SENTRY_CLONE", "SENTRY_EXEC", "SENTRY_EXIT_NOTIFY_PARENT", "SENTRY_TASK_EXIT",
        "SYSCALL_RAW", "SYSCALL_OPEN", "SYSCALL_CLOSE", "SYSCALL_READ", "SYSCALL_CONNECT", "SYSCALL_EXECVE",
        "SYSCALL_SOCKET", "SYSCALL_CHDIR", "SYSCALL_SETID", "SYSCALL_SETRESID", "SYSCALL_PRLIMIT64",
        "SYSCALL_PIPE", "SYSCALL_FCNTL", "SYSCALL_DUP", "SYSCALL_SIGNALFD", "SYSCALL_CHROOT", "SYSCALL_EVENTFD",
        "SYSCALL_CLONE", "SYSCALL_BIND", "SYSCALL_ACCEPT", "SYSCALL_TIMERFD_CREATE", "SYSCALL_TIMERFD_SETTIME",
        "SYSCALL_TIMERFD_GETTIME", "SYSCALL_FORK", "SYSCALL_INOTIFY_INIT", "SYSCALL_INOTIFY_ADD_WATCH",
        "SYSCALL_INOTIFY_RM_WATCH", "SYSCALL_SOCKETPAIR", "SYSCALL_WRITE", "SENTRY_MMAP", "SYSCALL_MMAP",
        "SYSCALL_LISTEN", "SYSCALL_PTRACE",
    };
    for (uint16_t t = 1; t <= DECODE_TYPE_MAX; t++) {
        assert_string_equal(decode_type_name(t), names[t]);
    }
    for (uint16_t t = 1; t <= DECODE_TYPE_MAX; t++) {
        const char *n = decode_type_name(t);
        assert_non_null(n);
        assert_false(starts_with(n, "MESSAGE_"));
        assert_true(starts_with(n, "SYSCALL_") || starts_with(n, "SENTRY_") || starts_with(n, "CONTAINER_"));
    }
}

static void test_decoder_layout(void **state)
{
    (void)state;
    assert_null(dec.types[0].desc);
    for (int t = 1; t <= DECODE_TYPE_MAX; t++) {
        const struct decode_layout *l = &dec.types[t];
        assert_non_null(l->desc);
        assert_non_null(l->context);   /* every payload has context_data = 1 */
        assert_int_equal(l->context->id, 1);
        bool syscall = t >= 6 && t != 35;
        if (syscall) {
            assert_non_null(l->sysno);
            assert_non_null(l->exit);
            assert_int_equal(l->exit->id, 2);
            assert_int_equal(l->sysno->id, t == 6 ? 4 : 3);
        } else {
            assert_null(l->sysno);
            assert_null(l->exit);
        }
    }
}

/* ---- crafted packets ---- */

/* Decodes header+payload in a fresh arena; returns the event. */
static void decode_bytes(struct arena *a, uint16_t type, const void *payload, size_t plen, struct event *ev)
{
    uint8_t pkt[16384];
    assert_true(plen + 8 <= sizeof(pkt));
    size_t len = make_packet(pkt, type, 3, payload, plen);
    struct wire_header h;
    assert_int_equal(wire_header_parse(pkt, len, &h), WIRE_OK);
    const uint8_t *raw = arena_memdup(a, pkt, len);
    assert_non_null(raw);
    memset(ev, 0xab, sizeof(*ev));   /* decode must set every field */
    decode_event(&dec, a, &h, raw, len, ev);
    assert_ptr_equal(ev->raw, raw);
    assert_int_equal(ev->raw_len, len);
    assert_int_equal(ev->header.dropped_count, 3);
}

static void test_unknown_type(void **state)
{
    (void)state;
    struct arena a;
    arena_init(&a, 4096, 1 << 20);
    const uint8_t payload[] = {0x18, 0x02};
    const uint16_t types[] = {0, 39, 1000, 0xffff};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        struct event ev;
        decode_bytes(&a, types[i], payload, sizeof(payload), &ev);
        assert_int_equal(ev.status, DECODE_UNKNOWN_TYPE);
        assert_null(ev.msg);
        assert_null(ev.context);
        assert_false(ev.has_sysno);
        assert_false(ev.is_exit);
        assert_int_equal(ev.header.message_type, types[i]);
    }
    arena_free(&a);
}

static void test_bad_payload(void **state)
{
    (void)state;
    struct arena a;
    arena_init(&a, 4096, 1 << 20);
    struct event ev;

    const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0xff};
    decode_bytes(&a, 7, garbage, sizeof(garbage), &ev);
    assert_int_equal(ev.status, DECODE_BAD_PAYLOAD);
    assert_null(ev.msg);
    assert_null(ev.context);
    assert_false(ev.is_exit);

    /* pathname (field 6) claims 16 bytes, 2 follow */
    const uint8_t overrun[] = {0x32, 0x10, 'a', 'b'};
    decode_bytes(&a, 7, overrun, sizeof(overrun), &ev);
    assert_int_equal(ev.status, DECODE_BAD_PAYLOAD);
    assert_null(ev.msg);

    /* a sub-message length past the end */
    const uint8_t sub_overrun[] = {0x0a, 0x7f, 0x08, 0x01};
    decode_bytes(&a, 9, sub_overrun, sizeof(sub_overrun), &ev);
    assert_int_equal(ev.status, DECODE_BAD_PAYLOAD);

    /* a huge string length (2^63) must not wrap a bounds check */
    const uint8_t huge_len[] = {0x32, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 'x'};
    decode_bytes(&a, 7, huge_len, sizeof(huge_len), &ev);
    assert_int_equal(ev.status, DECODE_BAD_PAYLOAD);

    /* wrong wire type for a scalar (sysno sent as length-delimited) */
    const uint8_t wrong_wt[] = {0x1a, 0x01, 0x00};
    decode_bytes(&a, 7, wrong_wt, sizeof(wrong_wt), &ev);
    assert_int_equal(ev.status, DECODE_BAD_PAYLOAD);
    arena_free(&a);
}

static void test_empty_payload(void **state)
{
    (void)state;
    struct arena a;
    arena_init(&a, 4096, 1 << 20);
    struct event ev;
    decode_bytes(&a, 7, NULL, 0, &ev);
    assert_int_equal(ev.status, DECODE_OK);
    assert_non_null(ev.msg);
    assert_ptr_equal(ev.msg->descriptor, &gvisor__syscall__open__descriptor);
    assert_false(ev.is_exit);
    assert_null(ev.context);
    assert_true(ev.has_sysno);
    assert_int_equal(ev.sysno, 0);
    assert_int_equal(ev.result, 0);
    assert_int_equal(ev.errorno, 0);

    /* an empty exit sub-message: a successful exit */
    const uint8_t empty_exit[] = {0x12, 0x00};
    decode_bytes(&a, 7, empty_exit, sizeof(empty_exit), &ev);
    assert_int_equal(ev.status, DECODE_OK);
    assert_true(ev.is_exit);
    assert_int_equal(ev.result, 0);
    assert_int_equal(ev.errorno, 0);

    /* exit with result -1 (zigzag is not used: int64 is plain varint) and errno 13 */
    const uint8_t failing_exit[] = {0x12, 0x0d, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
                                    0x10, 0x0d, 0x18, 0x02};
    decode_bytes(&a, 7, failing_exit, sizeof(failing_exit), &ev);
    assert_int_equal(ev.status, DECODE_OK);
    assert_true(ev.is_exit);
    assert_int_equal(ev.result, -1);
    assert_int_equal(ev.errorno, 13);
    assert_int_equal(ev.sysno, 2);

    /* empty payload for a sentry type: no sysno, no exit */
    decode_bytes(&a, 5, NULL, 0, &ev);
    assert_int_equal(ev.status, DECODE_OK);
    assert_false(ev.has_sysno);
    assert_false(ev.is_exit);
    assert_null(ev.context);

    /* raw syscall: sysno is field 4 */
    const uint8_t raw_sys[] = {0x20, 0x27, 0x28, 0x05};
    decode_bytes(&a, 6, raw_sys, sizeof(raw_sys), &ev);
    assert_int_equal(ev.status, DECODE_OK);
    assert_true(ev.has_sysno);
    assert_int_equal(ev.sysno, 39);
    assert_int_equal(((const Gvisor__Syscall__Syscall *)ev.msg)->arg1, 5);
    arena_free(&a);
}

static void test_grown_header(void **state)
{
    (void)state;
    /* header_size 12: four unknown header bytes that are not protobuf */
    const uint8_t pkt[] = {0x0c, 0x00, 0x07, 0x00, 0x01, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x18, 0x02};
    struct arena a;
    arena_init(&a, 4096, 1 << 20);
    struct wire_header h;
    assert_int_equal(wire_header_parse(pkt, sizeof(pkt), &h), WIRE_OK);
    const uint8_t *raw = arena_memdup(&a, pkt, sizeof(pkt));
    struct event ev;
    decode_event(&dec, &a, &h, raw, sizeof(pkt), &ev);
    assert_int_equal(ev.status, DECODE_OK);
    assert_int_equal(ev.sysno, 2);
    assert_int_equal(ev.raw_len, sizeof(pkt));
    assert_int_equal(ev.header.header_size, 12);
    arena_free(&a);
}

/* The largest packet of a fixture, copied out. */
static size_t largest_packet(const char *name, uint8_t *out, size_t cap)
{
    struct trace_pkts t;
    trace_load(name, &t);
    size_t best = 0;
    for (size_t i = 1; i < t.n; i++)
        if (t.len[i] > t.len[best])
            best = i;
    size_t len = t.len[best];
    assert_true(len <= cap);
    memcpy(out, t.pkt[best], len);
    trace_free(&t);
    return len;
}

static void test_tiny_arena(void **state)
{
    (void)state;
    uint8_t pkts[2][1024];
    size_t lens[2];
    lens[0] = largest_packet("exec_loop.trace", pkts[0], sizeof(pkts[0]));
    lens[1] = largest_packet("mixed_syscalls.trace", pkts[1], sizeof(pkts[1]));

    for (int k = 0; k < 2; k++) {
        struct wire_header h;
        assert_int_equal(wire_header_parse(pkts[k], lens[k], &h), WIRE_OK);
        int ok = 0, bad = 0;
        for (size_t room = 0; room <= 4096; room += 8) {
            struct arena a;
            arena_init(&a, 64, 1 << 20);
            const uint8_t *raw = arena_memdup(&a, pkts[k], lens[k]);
            assert_non_null(raw);
            size_t limit = arena_used(&a) + room;   /* only `room` bytes left */
            a.limit = limit;
            struct event ev;
            decode_event(&dec, &a, &h, raw, lens[k], &ev);
            assert_int_equal(a.limit, limit);   /* the temporary cap is undone */
            assert_true(arena_used(&a) <= limit);
            if (ev.status == DECODE_OK) {
                ok++;
                assert_non_null(ev.msg);
            } else {
                bad++;
                assert_int_equal(ev.status, DECODE_BAD_PAYLOAD);
                assert_null(ev.msg);
                assert_null(ev.context);
            }
            if (room < 64)
                assert_int_equal(ev.status, DECODE_BAD_PAYLOAD);
            arena_free(&a);
        }
        assert_true(ok > 0);   /* enough room decodes */
        assert_true(bad > 0);  /* too little fails cleanly */
    }

    /* an arena whose total limit is tiny from the start */
    struct arena a;
    arena_init(&a, 64, 512);
    struct wire_header h;
    assert_int_equal(wire_header_parse(pkts[1], lens[1], &h), WIRE_OK);
    const uint8_t *raw = arena_memdup(&a, pkts[1], lens[1]);
    assert_non_null(raw);
    struct event ev;
    decode_event(&dec, &a, &h, raw, lens[1], &ev);
    assert_int_equal(ev.status, DECODE_BAD_PAYLOAD);
    assert_int_equal(a.limit, 512);
    arena_free(&a);
}

/* Payloads that inflate on unpack: decode must stay within its budget. */
static void check_inflation(uint16_t type, const uint8_t *unit, size_t unit_len, size_t repeat, const char *what)
{
    size_t plen = unit_len * repeat;
    uint8_t *pkt = malloc(8 + plen);
    assert_non_null(pkt);
    for (size_t i = 0; i < repeat; i++)
        memcpy(pkt + 8 + i * unit_len, unit, unit_len);
    size_t len = make_packet(pkt, type, 0, NULL, 0) + plen;
    struct wire_header h;
    assert_int_equal(wire_header_parse(pkt, len, &h), WIRE_OK);

    /* plenty of room in the arena: the decoder's own cap must hold */
    struct arena a;
    arena_init(&a, 64 * 1024, 64u << 20);
    const uint8_t *raw = arena_memdup(&a, pkt, len);
    assert_non_null(raw);
    struct event ev;
    decode_event(&dec, &a, &h, raw, len, &ev);
    assert_true(ev.status == DECODE_OK || ev.status == DECODE_BAD_PAYLOAD);
    if (arena_used(&a) > decode_arena_need(len))
        fail_msg("%s: %zu-byte packet used %zu arena bytes, budget %zu", what, len, arena_used(&a),
                 decode_arena_need(len));
    if (ev.status == DECODE_OK)
        assert_non_null(ev.msg);
    else
        assert_null(ev.msg);
    assert_int_equal(a.limit, 64u << 20);
    arena_free(&a);
    free(pkt);
}

static void test_many_unknown_fields(void **state)
{
    (void)state;
    const uint8_t unknown_varint[] = {0x78, 0x00};              /* field 15 = 0 */
    check_inflation(7, unknown_varint, sizeof(unknown_varint), 2000, "2000 unknown varints");
    const uint8_t unknown_big[] = {0xf8, 0xff, 0x03, 0x01};     /* field 8191 = 1 */
    check_inflation(9, unknown_big, sizeof(unknown_big), 2000, "2000 unknown high fields");
    const uint8_t empty_arg[] = {0x22, 0x00};                   /* Start.args += "" */
    check_inflation(1, empty_arg, sizeof(empty_arg), 2000, "2000 empty repeated strings");
    const uint8_t empty_ctx[] = {0x0a, 0x00};                   /* context_data = {} again */
    check_inflation(7, empty_ctx, sizeof(empty_ctx), 2000, "2000 repeated empty sub-messages");
    const uint8_t empty_exit[] = {0x12, 0x00};
    check_inflation(34, empty_exit, sizeof(empty_exit), 4000, "4000 repeated exits");

    /* 2000 unknown fields that do fit: they are kept and counted */
    uint8_t payload[4000];
    for (size_t i = 0; i < sizeof(payload); i += 2) {
        payload[i] = 0x78;
        payload[i + 1] = 0x00;
    }
    struct arena a;
    arena_init(&a, 64 * 1024, 64u << 20);
    struct event ev;
    decode_bytes(&a, 7, payload, 20, &ev);   /* 10 unknown fields */
    assert_int_equal(ev.status, DECODE_OK);
    assert_int_equal(ev.msg->n_unknown_fields, 10);
    arena_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exec_loop),
        cmocka_unit_test(test_mixed_syscalls),
        cmocka_unit_test(test_redis_rw),
        cmocka_unit_test(test_drops),
        cmocka_unit_test(test_type_names),
        cmocka_unit_test(test_decoder_layout),
        cmocka_unit_test(test_unknown_type),
        cmocka_unit_test(test_bad_payload),
        cmocka_unit_test(test_empty_payload),
        cmocka_unit_test(test_grown_header),
        cmocka_unit_test(test_tiny_arena),
        cmocka_unit_test(test_many_unknown_fields),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
