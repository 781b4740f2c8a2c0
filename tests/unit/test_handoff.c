/* test_handoff.c - the restart state (server/handoff.h): every connection
 * counter survives a save and load, a state written by the previous build
 * (no dropped_count_regressions) still loads, a damaged one is refused. */
#include "unit_util.h"

#include <sys/mman.h>
#include <sys/socket.h>

#include "handoff.h"

/* Loads the state in fd as the new image would. */
static int load(int fd, struct handoff *h, char *err, size_t errlen)
{
    char value[16];
    snprintf(value, sizeof(value), "%d", fd);
    setenv(HANDOFF_ENV, value, 1);
    return handoff_load_from_env(h, err, errlen);
}

/* A memfd holding text, as an older build would have written it. */
static int state_file(const char *text)
{
    int fd = memfd_create("test-handoff", 0);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
    return fd;
}

static void test_round_trip_keeps_every_counter(void **state)
{
    (void)state;
    int pair[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair), 0);
    struct handoff_conn conn = {
        .fd = pair[0],
        .state = CONN_STREAMING,
        .rec = {.id = 7, .peer_pid = 123, .peer_uid = 0, .peer_gid = 0, .connect_ns = 42, .client_version = 1,
                .messages = 1000, .bytes = 90000, .last_dropped_count = 4000000000u, .sandbox_dropped = 5000000000ull,
                .dropped_count_regressions = 3, .rejected = 2, .decode_errors = 1},
    };
    struct handoff out = {.listener = {.fd = pair[1], .dev = 1, .ino = 2}, .conns = &conn, .nconns = 1};
    snprintf(out.listener.path, sizeof(out.listener.path), "/tmp/some.sock");
    char err[256] = "";
    int fd = handoff_save(&out, err, sizeof(err));
    assert_true(fd >= 0);

    struct handoff in;
    assert_int_equal(load(fd, &in, err, sizeof(err)), 1);
    assert_int_equal(in.nconns, 1);
    const struct conn_record *r = &in.conns[0].rec;
    assert_int_equal(in.conns[0].fd, pair[0]);
    assert_int_equal(in.conns[0].state, CONN_STREAMING);
    assert_int_equal(r->id, 7);
    assert_int_equal(r->messages, 1000);
    assert_int_equal(r->bytes, 90000);
    assert_int_equal(r->last_dropped_count, 4000000000u);
    assert_int_equal(r->sandbox_dropped, 5000000000ull);
    assert_int_equal(r->dropped_count_regressions, 3);
    assert_int_equal(r->rejected, 2);
    assert_int_equal(r->decode_errors, 1);
    assert_string_equal(in.listener.path, "/tmp/some.sock");
    handoff_free(&in);
    close(pair[0]);
    close(pair[1]);
}

static void test_state_of_the_previous_build_loads(void **state)
{
    (void)state;
    int pair[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair), 0);
    char text[256];
    /* 14 fields per connection: no dropped_count_regressions yet. */
    snprintf(text, sizeof(text),
             "seccheckd-handoff 1\nlistener %d 1 2 /tmp/x.sock\nconn %d 1 9 5 0 0 11 1 20 300 7 7 0 0\n", pair[1],
             pair[0]);
    struct handoff in;
    char err[256] = "";
    assert_int_equal(load(state_file(text), &in, err, sizeof(err)), 1);
    assert_int_equal(in.nconns, 1);
    assert_int_equal(in.conns[0].rec.id, 9);
    assert_int_equal(in.conns[0].rec.messages, 20);
    assert_int_equal(in.conns[0].rec.last_dropped_count, 7);
    assert_int_equal(in.conns[0].rec.dropped_count_regressions, 0);
    handoff_free(&in);
    close(pair[0]);
    close(pair[1]);
}

static void test_damaged_state_is_refused(void **state)
{
    (void)state;
    int pair[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair), 0);
    char text[256];
    snprintf(text, sizeof(text), "seccheckd-handoff 1\nlistener %d 1 2 /tmp/x.sock\nconn %d 1 9 5 0 0 11 1 20\n",
             pair[1], pair[0]);
    struct handoff in;
    char err[256] = "";
    assert_int_equal(load(state_file(text), &in, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "bad connection line 1"));
    handoff_free(&in);
    close(pair[0]);
    close(pair[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_keeps_every_counter),
        cmocka_unit_test(test_state_of_the_previous_build_loads),
        cmocka_unit_test(test_damaged_state_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
