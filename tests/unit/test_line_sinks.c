/* test_line_sinks.c - the sinks that write lines (storage/sink.h:
 * sink_ndjson_open, sink_text_open; storage/line_writer.h): what reaches
 * the file, rotation, accounting of failed writes, and the text format. */
#include "unit_util.h"

#include <sys/stat.h>
#include <openssl/evp.h>

#include "batch.h"
#include "decode.h"
#include "event_json.h"
#include "sink.h"
#include "strbuf.h"
#include "gvisor/syscall.pb-c.h"

static struct decoder dec;

/* test_text_unchanged_on_traces */
#define EXEC_LOOP_TEXT_SHA256 "fc7a8c580dcc86704bed18ca82208d15a8e2acee31ad00d74480184e6b4b3f7d"
#define MIXED_SYSCALLS_TEXT_SHA256 "307d7c6cbcfe97f62687f8e6d77efc0184db2dbbd214407dc8e1d042001c4453"
#define REDIS_RW_TEXT_SHA256 "1a567fba6cb2fc24d65ccbf2c13e78e5f652a015648c01c54ad0fe1ba068a643"
#define DROPS_TEXT_SHA256 "efd0fc7f3b933e2186f8b203642abbb4f359dc2345f1f59d58a837eacfb48187"

static int setup(void **state)
{
    (void)state;
    decoder_init(&dec);
    return 0;
}

static struct batch *new_batch(size_t max_events)
{
    struct batch_limits lim = {.max_events = max_events, .max_bytes = 64u << 20};
    struct batch *b = batch_new(&lim);
    assert_non_null(b);
    return b;
}

static void push(struct batch *b, const uint8_t *pkt, size_t len, uint64_t conn_id)
{
    struct wire_header h;
    assert_int_equal(wire_header_parse(pkt, len, &h), WIRE_OK);
    struct event *ev = batch_push(b, pkt, len);
    assert_non_null(ev);
    decode_event(&dec, &b->arena, &h, ev->raw, len, ev);
    ev->conn_id = conn_id;
    ev->recv_ns = 1764469991123456789 + (int64_t)b->count;
}

/* Packets [from, to) of t as one batch. */
static void fill(struct batch *b, const struct trace_pkts *t, size_t from, size_t to)
{
    batch_reset(b);
    for (size_t i = from; i < to && i < t->n; i++)
        push(b, t->pkt[i], t->len[i], 7);
}

static size_t count_lines(const uint8_t *data, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += data[i] == '\n';
    return n;
}

static struct sink *open_ndjson(const char *path, uint64_t max_bytes, unsigned keep)
{
    struct sink_ndjson_options o = {.path = path, .max_bytes = max_bytes, .keep = keep};
    char err[512] = "";
    struct sink *s = sink_ndjson_open(&o, err, sizeof(err));
    if (!s)
        fail_msg("sink_ndjson_open(%s): %s", path, err);
    assert_string_equal(s->ops->name, "ndjson");
    assert_true(s->ops->needs_writer_thread);
    assert_int_equal(s->first_conn_id, 1);
    return s;
}

/* What the sink should have written for b: event_json.h's lines. */
static void expected_lines(struct strbuf *out, const struct batch *b)
{
    for (size_t i = 0; i < b->count; i++)
        assert_int_equal(event_json_render(out, &b->events[i]), 0);
}

static void test_ndjson_appends_batches(void **state)
{
    (void)state;
    struct trace_pkts t;
    trace_load("exec_loop.trace", &t);
    char dir[64], path[128];
    scratch_dir(dir);
    snprintf(path, sizeof(path), "%s/events.ndjson", dir);
    struct batch *b = new_batch(512);
    struct strbuf want = {0};

    struct sink *s = open_ndjson(path, 0, 5);
    fill(b, &t, 0, 300);
    sink_write_batch(s, b);
    assert_int_equal(b->result.stored, 300);
    assert_int_equal(b->result.failed, 0);
    expected_lines(&want, b);
    /* Written at the end of the batch, not at close. */
    size_t len;
    uint8_t *got = slurp(path, &len);
    assert_int_equal(len, want.len);
    assert_memory_equal(got, want.data, len);
    free(got);
    sink_close(s);

    /* A restart appends to the file. */
    s = open_ndjson(path, 0, 5);
    fill(b, &t, 300, 500);
    sink_write_batch(s, b);
    assert_int_equal(b->result.stored, 200);
    expected_lines(&want, b);
    sink_close(s);
    got = slurp(path, &len);
    assert_int_equal(len, want.len);
    assert_memory_equal(got, want.data, len);
    assert_int_equal(count_lines(got, len), 500);
    free(got);

    strbuf_free(&want);
    batch_free(b);
    trace_free(&t);
    scratch_dir_remove(dir);
}

/* Small files, two kept: PATH.2, PATH.1, PATH read in that order are the
 * tail of the stream, cut only between lines, each file within the limit. */
static void test_ndjson_rotates(void **state)
{
    (void)state;
    struct trace_pkts t;
    trace_load("mixed_syscalls.trace", &t);
    char dir[64], path[128], name[160];
    scratch_dir(dir);
    snprintf(path, sizeof(path), "%s/events.ndjson", dir);
    const uint64_t max = 16 * 1024;
    struct sink *s = open_ndjson(path, max, 2);
    struct batch *b = new_batch(256);
    struct strbuf want = {0};
    for (size_t from = 0; from < t.n; from += 100) {
        fill(b, &t, from, from + 100);
        sink_write_batch(s, b);
        assert_int_equal(b->result.stored, b->count);
        expected_lines(&want, b);
    }
    sink_close(s);
    assert_true(want.len > 4 * max);   /* enough to rotate several times */

    struct strbuf kept = {0};
    for (int i = 2; i >= 0; i--) {
        if (i)
            snprintf(name, sizeof(name), "%s.%d", path, i);
        else
            snprintf(name, sizeof(name), "%s", path);
        size_t len;
        uint8_t *data = slurp(name, &len);
        assert_true(len > 0);
        assert_true(len <= max);
        assert_int_equal(data[len - 1], '\n');
        strbuf_append(&kept, data, len);
        free(data);
    }
    snprintf(name, sizeof(name), "%s.3", path);
    assert_int_not_equal(access(name, F_OK), 0);
    assert_true(kept.len < want.len);
    assert_memory_equal(want.data + want.len - kept.len, kept.data, kept.len);
    assert_int_equal(want.data[want.len - kept.len - 1], '\n');

    strbuf_free(&kept);
    strbuf_free(&want);
    batch_free(b);
    trace_free(&t);
    scratch_dir_remove(dir);
}

/* A full disk: every event of the batch counted as failed, none stored. */
static void test_ndjson_write_failure_counted(void **state)
{
    (void)state;
    if (access("/dev/full", W_OK) != 0)
        skip();
    struct trace_pkts t;
    trace_load("exec_loop.trace", &t);
    struct sink *s = open_ndjson("/dev/full", 1024, 2);   /* not a regular file: never rotated */
    struct batch *b = new_batch(64);
    for (int round = 0; round < 2; round++) {
        fill(b, &t, 0, 50);
        sink_write_batch(s, b);
        assert_int_equal(b->result.stored, 0);
        assert_int_equal(b->result.failed, 50);
    }
    sink_close(s);
    batch_free(b);
    trace_free(&t);
}

static void test_open_failures_name_the_path(void **state)
{
    (void)state;
    char err[512] = "";
    struct sink_ndjson_options o = {.path = "/nonexistent-dir/x.ndjson", .max_bytes = 0, .keep = 1};
    assert_null(sink_ndjson_open(&o, err, sizeof(err)));
    assert_non_null(strstr(err, "/nonexistent-dir/x.ndjson"));
    err[0] = '\0';
    assert_null(sink_text_open("/nonexistent-dir/x.txt", err, sizeof(err)));
    assert_non_null(strstr(err, "/nonexistent-dir/x.txt"));
}

/* ---- text ---- */

static bool all_printable_lines(const uint8_t *data, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (data[i] != '\n' && (data[i] < 0x20 || data[i] >= 0x7f))
            return false;
    return true;
}

/* Packs msg as a packet of type into b. */
static void push_message(struct batch *b, uint16_t type, const ProtobufCMessage *msg)
{
    static uint8_t payload[8192], pkt[8300];
    size_t plen = protobuf_c_message_get_packed_size(msg);
    assert_true(plen <= sizeof(payload));
    protobuf_c_message_pack(msg, payload);
    push(b, pkt, make_packet(pkt, type, 0, payload, plen), 3);
}

static void test_text_lines(void **state)
{
    (void)state;
    struct trace_pkts t;
    trace_load("mixed_syscalls.trace", &t);
    char dir[64], path[128];
    scratch_dir(dir);
    snprintf(path, sizeof(path), "%s/events.txt", dir);
    char err[512];
    struct sink *s = sink_text_open(path, err, sizeof(err));
    if (!s)
        fail_msg("%s", err);
    assert_string_equal(s->ops->name, "text");
    assert_true(s->ops->needs_writer_thread);
    struct batch *b = new_batch(2048);
    fill(b, &t, 0, t.n);
    size_t n = b->count;
    sink_write_batch(s, b);
    assert_int_equal(b->result.stored, n);

    /* A hostile one: escape sequences, a long value, a time, an exit. */
    batch_reset(b);
    static char long_path[5000];
    memset(long_path, 'a', sizeof(long_path) - 1);
    Gvisor__Common__ContextData ctx = GVISOR__COMMON__CONTEXT_DATA__INIT;
    ctx.container_id = "evil\x1b[2J\r\xff";
    ctx.process_name = "sh";
    ctx.thread_id = 12;
    ctx.thread_group_id = 11;
    ctx.time_ns = 1764469991123456789;
    Gvisor__Syscall__Exit ex = GVISOR__SYSCALL__EXIT__INIT;
    ex.result = 3;
    Gvisor__Syscall__Open open = GVISOR__SYSCALL__OPEN__INIT;
    open.context_data = &ctx;
    open.exit = &ex;
    open.sysno = 2;
    open.pathname = long_path;
    push_message(b, 7, &open.base);
    uint8_t unknown[16];
    push(b, unknown, make_packet(unknown, 999, 0, "\x01\x02", 2), 4);
    sink_write_batch(s, b);
    assert_int_equal(b->result.stored, 2);
    sink_close(s);

    size_t len;
    uint8_t *data = slurp(path, &len);
    char *text = malloc(len + 1);
    memcpy(text, data, len);
    text[len] = '\0';
    assert_int_equal(count_lines(data, len), n + 2);
    assert_true(all_printable_lines(data, len));
    assert_memory_equal(text, "[conn 7] 20", 11);
    assert_non_null(strstr(text, " CONTAINER_START "));
    assert_non_null(strstr(text, " SYSCALL_OPEN exit "));
    assert_non_null(strstr(text, " SYSCALL_OPEN enter "));
    assert_non_null(strstr(text, " runsc-"));
    char *hostile = strstr(text, "[conn 3] 2025-11-30T02:33:11.123456Z evil\\x1b[2J\\r\\xff sh[12/11] SYSCALL_OPEN exit sysno=2 ");
    if (!hostile)
        fail_msg("hostile line not found in the expected form");
    char *end = strchr(hostile, '\n');
    assert_true(end - hostile < 4200);                   /* the long value was cut */
    assert_non_null(strstr(hostile, "...(4999 bytes)"));
    assert_non_null(strstr(hostile, " result=3 errno=0\n"));
    assert_non_null(strstr(text, "[conn 4] "));
    assert_non_null(strstr(text, " type=999 decode_error=unknown_type raw=08"));
    free(text);
    free(data);
    batch_free(b);
    trace_free(&t);
    scratch_dir_remove(dir);
}

/* The text sink's output of every recorded trace, byte for byte, as the
 * release before schema 2 wrote it: the SHA-256 of each file, taken with
 * this same test built on that release (commit e82976e). Storing each
 * event once changed the table and the NDJSON lines, not this. */
static void test_text_unchanged_on_traces(void **state)
{
    (void)state;
    static const struct {
        const char *trace;
        const char *sha256;
    } want[] = {
        {"exec_loop.trace", EXEC_LOOP_TEXT_SHA256},
        {"mixed_syscalls.trace", MIXED_SYSCALLS_TEXT_SHA256},
        {"redis_rw.trace", REDIS_RW_TEXT_SHA256},
        {"drops.trace", DROPS_TEXT_SHA256},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        struct trace_pkts t;
        trace_load(want[i].trace, &t);
        char dir[64], path[128], err[512];
        scratch_dir(dir);
        snprintf(path, sizeof(path), "%s/events.txt", dir);
        struct sink *s = sink_text_open(path, err, sizeof(err));
        if (!s)
            fail_msg("%s", err);
        struct batch *b = new_batch(t.n);
        fill(b, &t, 0, t.n);
        sink_write_batch(s, b);
        assert_int_equal(b->result.stored, t.n);
        sink_close(s);
        size_t len;
        uint8_t *data = slurp(path, &len);
        uint8_t md[EVP_MAX_MD_SIZE];
        unsigned mdlen = 0;
        assert_int_equal(EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL), 1);
        char hex[2 * EVP_MAX_MD_SIZE + 1];
        for (unsigned k = 0; k < mdlen; k++)
            snprintf(hex + 2 * k, 3, "%02x", md[k]);
        print_message("%s: %zu bytes of text, sha256 %s\n", want[i].trace, len, hex);
        if (strcmp(hex, want[i].sha256) != 0)
            fail_msg("%s: the text sink's output changed (sha256 %s, was %s)", want[i].trace, hex, want[i].sha256);
        free(data);
        batch_free(b);
        trace_free(&t);
        scratch_dir_remove(dir);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ndjson_appends_batches),
        cmocka_unit_test(test_ndjson_rotates),
        cmocka_unit_test(test_ndjson_write_failure_counted),
        cmocka_unit_test(test_open_failures_name_the_path),
        cmocka_unit_test(test_text_lines),
        cmocka_unit_test(test_text_unchanged_on_traces),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
