/* test_handoff.c - the restart state (server/handoff.h): every connection
 * counter survives a save and load, and so does what spans images (next
 * connection id, restart counts, when reading stopped, the build to come
 * back to and its arguments, byte for byte); states written by earlier
 * builds (version 1, without dropped_count_regressions) still load, a
 * later build's unknown lines are skipped, a damaged state is refused. A
 * restart's relay (relay.h) and a restart asked for during it cross too. */
#include "unit_util.h"

#include <fcntl.h>
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

/* Everything but the connections, with arguments no line format would
 * carry as they are. */
static void test_round_trip_keeps_what_spans_images(void **state)
{
    (void)state;
    int pair[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair), 0);
    int self = open("/proc/self/exe", O_PATH | O_CLOEXEC);
    assert_true(self >= 0);
    char *argv[] = {"/usr/bin/seccheckd", "--db", "/var/lib/a b/events.db", "--config", "line\nbreak \xc3\xa9#%", NULL};
    struct handoff out;
    handoff_init(&out);
    out.listener = (struct listener){.fd = pair[1], .dev = 1, .ino = 2};
    snprintf(out.listener.path, sizeof(out.listener.path), "/tmp/some.sock");
    out.next_conn_id = 42;
    out.stopped_reading_ns = 123456789012345;
    out.restarts = (struct handoff_restarts){.ok = 7, .refused = 2, .failed = 1};
    out.fallback_fd = self;
    out.fallback_argv = argv;
    snprintf(out.failure, sizeof(out.failure), "cannot open\nits sink");
    char err[256] = "";
    int fd = handoff_save(&out, err, sizeof(err));
    assert_true(fd >= 0);
    assert_int_equal(fcntl(self, F_GETFD) & FD_CLOEXEC, 0);   /* passed on across exec */

    struct handoff in;
    assert_int_equal(load(fd, &in, err, sizeof(err)), 1);
    assert_int_equal(in.nconns, 0);
    assert_int_equal(in.next_conn_id, 42);
    assert_int_equal(in.stopped_reading_ns, 123456789012345);
    assert_int_equal(in.exec_ns, 0);
    assert_int_equal(in.restarts.ok, 7);
    assert_int_equal(in.restarts.refused, 2);
    assert_int_equal(in.restarts.failed, 1);
    assert_int_equal(in.fallback_fd, self);
    assert_int_equal(fcntl(self, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);   /* not leaked to children */
    for (int i = 0; argv[i]; i++)
        assert_string_equal(in.fallback_argv[i], argv[i]);
    assert_null(in.fallback_argv[5]);
    assert_string_equal(in.failure, "cannot open its sink");
    handoff_free(&in);   /* closes the fallback descriptor */
    assert_int_equal(fcntl(self, F_GETFD), -1);
    close(pair[0]);
    close(pair[1]);
}

/* A later build's keyword lines are skipped; the exec line stamped just
 * before exec (handoff_exec) is read. */
static void test_unknown_lines_are_skipped(void **state)
{
    (void)state;
    int pair[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair), 0);
    char text[512];
    snprintf(text, sizeof(text),
             "seccheckd-handoff 2\nlistener %d 1 2 /tmp/x.sock\nnext_conn_id 5\nsomething_new 1 2 3\n"
             "conn %d 1 4 5 0 0 11 1 20 300 7 7 0 0 0 0 0\nexec 99\n", pair[1], pair[0]);
    struct handoff in;
    char err[256] = "";
    assert_int_equal(load(state_file(text), &in, err, sizeof(err)), 1);
    assert_int_equal(in.next_conn_id, 5);
    assert_int_equal(in.exec_ns, 99);
    assert_int_equal(in.nconns, 1);
    assert_int_equal(in.conns[0].rec.id, 4);
    assert_int_equal(in.fallback_fd, -1);
    handoff_free(&in);
    close(pair[0]);
    close(pair[1]);
}

/* The relay reading the connections: its pid and descriptors, passed on
 * across exec (not close-on-exec while saved, close-on-exec once loaded);
 * and a SIGUSR2 that came during the restart. A state without them has
 * neither. */
static void test_relay_and_a_restart_again_cross(void **state)
{
    (void)state;
    int pair[2], ctl[2], log = memfd_create("test-relay-log", MFD_CLOEXEC), ev = memfd_create("test-ev", MFD_CLOEXEC);
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair), 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl), 0);
    struct handoff out;
    handoff_init(&out);
    assert_int_equal(out.relay.pid, 0);
    out.listener = (struct listener){.fd = pair[1], .dev = 1, .ino = 2};
    snprintf(out.listener.path, sizeof(out.listener.path), "/tmp/some.sock");
    out.relay = (struct relay_fds){.pid = 4242, .ctl_fd = ctl[0], .log_fd = log, .event_fd = ev};
    out.restart_again = true;
    char err[256] = "";
    int fd = handoff_save(&out, err, sizeof(err));
    assert_true(fd >= 0);
    assert_int_equal(fcntl(ctl[0], F_GETFD) & FD_CLOEXEC, 0);
    assert_int_equal(fcntl(log, F_GETFD) & FD_CLOEXEC, 0);
    assert_int_equal(fcntl(ev, F_GETFD) & FD_CLOEXEC, 0);
    struct handoff in;
    assert_int_equal(load(fd, &in, err, sizeof(err)), 1);
    assert_int_equal(in.relay.pid, 4242);
    assert_int_equal(in.relay.ctl_fd, ctl[0]);
    assert_int_equal(in.relay.log_fd, log);
    assert_int_equal(in.relay.event_fd, ev);
    assert_true(in.restart_again);
    assert_int_equal(fcntl(ctl[0], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    assert_int_equal(fcntl(log, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    handoff_free(&in);

    out.relay = (struct relay_fds){.ctl_fd = -1, .log_fd = -1, .event_fd = -1};
    out.restart_again = false;
    assert_true((fd = handoff_save(&out, err, sizeof(err))) >= 0);
    assert_int_equal(load(fd, &in, err, sizeof(err)), 1);
    assert_int_equal(in.relay.pid, 0);
    assert_int_equal(in.relay.ctl_fd, -1);
    assert_false(in.restart_again);
    handoff_free(&in);

    /* A relay line naming a descriptor that is not open: refused. */
    char text[256];
    snprintf(text, sizeof(text), "seccheckd-handoff 2\nlistener %d 1 2 /tmp/x.sock\nrelay 4242 %d 999 998\n", pair[1],
             ctl[0]);
    assert_int_equal(load(state_file(text), &in, err, sizeof(err)), -1);
    handoff_free(&in);
    for (int i = 0; i < 2; i++) {
        close(pair[i]);
        close(ctl[i]);
    }
    close(log);
    close(ev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_keeps_every_counter),
        cmocka_unit_test(test_state_of_the_previous_build_loads),
        cmocka_unit_test(test_damaged_state_is_refused),
        cmocka_unit_test(test_round_trip_keeps_what_spans_images),
        cmocka_unit_test(test_unknown_lines_are_skipped),
        cmocka_unit_test(test_relay_and_a_restart_again_cross),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
