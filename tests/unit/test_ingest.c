/* test_ingest.c - the sandbox's drop count through ingest_packet
 * (server/ingest.h): the wrap at 2^32, and the bound on what one header may
 * claim, on both sides of it. */
#include "unit_util.h"

#include <uv.h>

#include "decode.h"
#include "ingest.h"
#include "pipeline.h"
#include "sink.h"

#define SEC 1000000000LL
#define T0 (1700000000 * SEC)

struct fixture {
    uv_loop_t loop;
    struct sink *sink;
    struct pipeline pipeline;
    struct decoder dec;
    struct ingest in;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    f->sink = sink_discard_open();
    assert_non_null(f->sink);
    struct pipeline_config cfg = {.limits = {.max_events = 64, .max_bytes = 1u << 20}, .queue_max = 2};
    assert_int_equal(pipeline_init(&f->pipeline, &f->loop, f->sink, &cfg, NULL, NULL, NULL), 0);
    decoder_init(&f->dec);
    f->in = (struct ingest){.decoder = &f->dec, .pipeline = &f->pipeline};
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    pipeline_finish(&f->pipeline);
    uv_run(&f->loop, UV_RUN_DEFAULT);   /* let the pipeline's handle close */
    pipeline_free(&f->pipeline);
    sink_close(f->sink);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    free(f);
    return 0;
}

/* A header (an empty SYSCALL_WRITE) with this count, read at recv_ns. */
static void header(struct fixture *f, struct conn_record *rec, uint32_t dropped, int64_t recv_ns)
{
    uint8_t pkt[8];
    size_t len = make_packet(pkt, 34, dropped, NULL, 0);
    assert_int_equal(ingest_packet(&f->in, rec, pkt, len, false, recv_ns), 0);
    assert_int_equal(rec->last_dropped_count, dropped);
}

/* 2^32-1, then a small count: the counter wrapped, and the total goes on
 * past 2^32. */
static void test_wrap(void **state)
{
    struct fixture *f = *state;
    struct conn_record rec = {.id = 1, .connect_ns = T0};
    header(f, &rec, 0xffffffffu, T0 + 60 * SEC);   /* 60 s allow 6e9 */
    assert_int_equal(rec.sandbox_dropped, 0xffffffffu);
    header(f, &rec, 5, T0 + 60 * SEC + 1000);
    assert_int_equal(rec.sandbox_dropped, (1ull << 32) + 5);
    header(f, &rec, 0xfffffff0u, T0 + 120 * SEC);
    header(f, &rec, 0x10, T0 + 120 * SEC + 1000);
    assert_int_equal(rec.sandbox_dropped, (2ull << 32) + 0x10);
    assert_int_equal(rec.dropped_count_regressions, 0);
}

/* One second after connecting a sandbox may have dropped 10^8 points: so
 * many are drops, one more is a regression (not added; the count goes on
 * from what the header said). */
static void test_allowance_since_connect(void **state)
{
    struct fixture *f = *state;
    const uint32_t most = SEC / INGEST_DROP_NS_EACH;
    struct conn_record rec = {.id = 1, .connect_ns = T0};
    assert_int_equal(ingest_drop_allowance(&rec, T0 + SEC), most);
    assert_int_equal(ingest_drop_allowance(&rec, T0 - SEC), 0);   /* a clock step back: nothing */
    struct conn_record at = rec;
    header(f, &at, most, T0 + SEC);
    assert_int_equal(at.sandbox_dropped, most);
    assert_int_equal(at.dropped_count_regressions, 0);

    struct conn_record past = rec;
    header(f, &past, most + 1, T0 + SEC);
    assert_int_equal(past.sandbox_dropped, 0);
    assert_int_equal(past.dropped_count_regressions, 1);
    header(f, &past, most + 11, T0 + SEC + 100);   /* 10 more, 100 ns later: drops */
    assert_int_equal(past.sandbox_dropped, 10);
    assert_int_equal(past.dropped_count_regressions, 1);

    /* a jump to just under 2^31 (what the half-range rule took for
     * growth) right after connecting */
    struct conn_record jump = rec;
    header(f, &jump, 0x7fffffffu, T0 + 1000);
    assert_int_equal(jump.sandbox_dropped, 0);
    assert_int_equal(jump.dropped_count_regressions, 1);
}

/* A long-open connection: the allowance counts from when the socket was
 * last read empty before the previous header, less the staleness gVisor's
 * retries allow, not from the connect. */
static void test_allowance_since_the_socket_was_empty(void **state)
{
    struct fixture *f = *state;
    struct conn_record rec = {.id = 1, .connect_ns = T0};
    rec.emptied_ns = T0 + 100 * SEC;
    header(f, &rec, 0, T0 + 100 * SEC + 1000);
    assert_int_equal(rec.drops_since_ns, T0 + 100 * SEC);
    /* read 1 s after the socket was empty: 1 s + the 10 s of staleness */
    const uint32_t most = (SEC + INGEST_DROP_STALE_NS) / INGEST_DROP_NS_EACH;
    assert_int_equal(ingest_drop_allowance(&rec, T0 + 101 * SEC), most);
    struct conn_record at = rec, past = rec;
    header(f, &at, most, T0 + 101 * SEC);
    assert_int_equal(at.sandbox_dropped, most);
    header(f, &past, most + 1, T0 + 101 * SEC);
    assert_int_equal(past.sandbox_dropped, 0);
    assert_int_equal(past.dropped_count_regressions, 1);
}

/* A count that goes back is a regression however long the window (more
 * than 2^31 back is a wrap, and growth). */
static void test_backwards(void **state)
{
    struct fixture *f = *state;
    struct conn_record rec = {.id = 1, .connect_ns = T0};
    header(f, &rec, 1000, T0 + 1000 * SEC);
    header(f, &rec, 900, T0 + 1000 * SEC + 1);
    assert_int_equal(rec.sandbox_dropped, 1000);
    assert_int_equal(rec.dropped_count_regressions, 1);
    header(f, &rec, 950, T0 + 1000 * SEC + 2);   /* on from what the sandbox said */
    assert_int_equal(rec.sandbox_dropped, 1050);
    assert_int_equal(rec.dropped_count_regressions, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_wrap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_allowance_since_connect, setup, teardown),
        cmocka_unit_test_setup_teardown(test_allowance_since_the_socket_was_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backwards, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
