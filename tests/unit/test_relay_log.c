/* test_relay_log.c - the log a restart's relay writes and the new image
 * reads (server/relay_log.h): records come out as they went in, payloads
 * byte for byte, only once published; the writer never writes past its
 * capacity; a record the reader cannot trust (a connection it does not
 * know, a length past the end, an unknown type) ends the log; a file that
 * is not a log of this version is refused. */
#include "unit_util.h"

#include <sys/mman.h>

#include "relay_log.h"

static void map_both(int fd, struct relay_log *w, struct relay_log *r)
{
    char err[256] = "";
    if (relay_log_map(w, fd, true, err, sizeof(err)) != 0 || relay_log_map(r, fd, false, err, sizeof(err)) != 0)
        fail_msg("%s", err);
}

static struct relay_record packet(uint32_t conn, uint32_t len, int64_t ns)
{
    return (struct relay_record){.type = RELAY_PACKET, .conn = conn, .len = len, .ns = ns};
}

static void test_records_come_out_as_they_went_in(void **state)
{
    (void)state;
    char err[256] = "";
    int fd = relay_log_create(4096, err, sizeof(err));
    assert_true(fd >= 0);
    struct relay_log w, r;
    map_both(fd, &w, &r);
    close(fd);   /* each mapping keeps its own */
    const char hello[] = "hello, sandbox";   /* 15 bytes: padded */
    struct relay_record a = packet(1, sizeof(hello), 11), b = {.type = RELAY_EMPTIED, .conn = 0, .ns = 22};
    struct relay_record c = {.type = RELAY_EOF, .conn = 1}, got;
    const uint8_t *payload;
    assert_true(relay_log_append(&w, &a, hello));
    assert_true(relay_log_append(&w, &b, NULL));
    assert_int_equal(relay_log_peek(&r, relay_log_written(&r), 2, &got, &payload), 0);   /* not published yet */
    relay_log_publish(&w);
    assert_true(relay_log_append(&w, &c, NULL));   /* after the publish: not seen yet */
    uint64_t end = relay_log_written(&r);
    assert_int_equal(relay_log_peek(&r, end, 2, &got, &payload), 1);
    assert_int_equal(got.type, RELAY_PACKET);
    assert_int_equal(got.conn, 1);
    assert_int_equal(got.len, sizeof(hello));
    assert_int_equal(got.ns, 11);
    assert_memory_equal(payload, hello, sizeof(hello));
    assert_int_equal(relay_log_peek(&r, end, 2, &got, &payload), 1);   /* peeking twice: the same record */
    assert_int_equal(got.type, RELAY_PACKET);
    relay_log_take(&r, &got);
    assert_int_equal(relay_log_peek(&r, end, 2, &got, &payload), 1);
    assert_int_equal(got.type, RELAY_EMPTIED);
    assert_int_equal(got.ns, 22);
    relay_log_take(&r, &got);
    assert_int_equal(relay_log_peek(&r, end, 2, &got, &payload), 0);
    relay_log_publish(&w);
    assert_int_equal(relay_log_peek(&r, relay_log_written(&r), 2, &got, &payload), 1);
    assert_int_equal(got.type, RELAY_EOF);
    relay_log_release(&r);
    relay_log_unmap(&w);
    relay_log_unmap(&r);
}

/* Full: a record that does not fit is not written, and nothing after it;
 * what was written stays readable. */
static void test_the_writer_stops_at_capacity(void **state)
{
    (void)state;
    char err[256] = "";
    int fd = relay_log_create(256, err, sizeof(err));
    assert_true(fd >= 0);
    struct relay_log w, r;
    map_both(fd, &w, &r);
    close(fd);
    uint8_t body[100];
    memset(body, 0xab, sizeof(body));
    struct relay_record p = packet(0, sizeof(body), 1);
    int appended = 0;
    while (relay_log_append(&w, &p, body))
        appended++;
    assert_int_equal(appended, 2);   /* 2 x (24 + 104) = 256 */
    struct relay_record small = {.type = RELAY_EOF, .conn = 0};
    assert_false(relay_log_append(&w, &small, NULL));
    relay_log_publish(&w);
    struct relay_record got;
    const uint8_t *payload;
    for (int i = 0; i < appended; i++) {
        assert_int_equal(relay_log_peek(&r, relay_log_written(&r), 1, &got, &payload), 1);
        assert_memory_equal(payload, body, sizeof(body));
        relay_log_take(&r, &got);
    }
    assert_int_equal(relay_log_peek(&r, relay_log_written(&r), 1, &got, &payload), 0);
    relay_log_unmap(&w);
    relay_log_unmap(&r);
}

/* Records the reader cannot trust end the log: -1, and the reader stays
 * where it was. */
static void test_untrusted_records_end_the_log(void **state)
{
    (void)state;
    const struct relay_record bad[] = {
        packet(5, 4, 1),                                   /* a connection past nconns (2) */
        {.type = 99, .conn = 0},                           /* an unknown type */
        {.type = RELAY_EOF, .conn = 0, .len = 8},          /* a payload on a record that has none */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char err[256] = "";
        int fd = relay_log_create(1024, err, sizeof(err));
        assert_true(fd >= 0);
        struct relay_log w, r;
        map_both(fd, &w, &r);
        close(fd);
        uint8_t body[8] = {0};
        assert_true(relay_log_append(&w, &bad[i], body));
        relay_log_publish(&w);
        struct relay_record got;
        const uint8_t *payload;
        assert_int_equal(relay_log_peek(&r, relay_log_written(&r), 2, &got, &payload), -1);
        relay_log_unmap(&w);
        relay_log_unmap(&r);
    }
    /* A length that runs past what was published. */
    char err[256] = "";
    int fd = relay_log_create(1024, err, sizeof(err));
    struct relay_log w, r;
    map_both(fd, &w, &r);
    close(fd);
    struct relay_record p = packet(0, 600, 1);
    uint8_t body[600] = {0};
    assert_true(relay_log_append(&w, &p, body));
    relay_log_publish(&w);
    struct relay_record got;
    const uint8_t *payload;
    assert_int_equal(relay_log_peek(&r, 100, 1, &got, &payload), -1);   /* the reader's end cuts it */
    relay_log_unmap(&w);
    relay_log_unmap(&r);
}

static void test_a_file_that_is_not_a_log_is_refused(void **state)
{
    (void)state;
    int fd = memfd_create("not-a-log", MFD_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "seccheckd-handoff 2\nlistener 3 1 2 /x\n", 38), 38);
    struct relay_log l;
    char err[256] = "";
    assert_int_equal(relay_log_map(&l, fd, false, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "not a version"));
    assert_int_equal(l.fd, -1);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_records_come_out_as_they_went_in),
        cmocka_unit_test(test_the_writer_stops_at_capacity),
        cmocka_unit_test(test_untrusted_records_end_the_log),
        cmocka_unit_test(test_a_file_that_is_not_a_log_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
