/* Integration: the loop under pressure it cannot read its way out of. Each
 * case runs the real binary and checks the loop stays idle (its CPU time
 * from /proc) and the log stays short while the pressure lasts, that what
 * was refused is counted, and that service resumes once the pressure goes:
 *   - out of file descriptors (RLIMIT_NOFILE set in the child before exec):
 *     a level-triggered listener with a connection it cannot accept would
 *     wake the loop every turn and log each failed accept;
 *   - a connection that finishes its handshake while reading is paused (the
 *     writer cannot keep up) and then sends: its poll would fire every turn;
 *   - connections over --max-connections, refused flat out: logged once,
 *     not once each.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon.h"
#include "replay.h"

#define MAX_HELD 200

/* One test's daemon and everything it holds: the teardown releases it all,
 * a failed assertion included. */
struct fixture {
    struct daemon d;
    int held[MAX_HELD];
    int nheld;
    int fifo_fd;                /* read end of the sink's FIFO, or -1 */
    pthread_t fifo_reader;
    bool fifo_draining;
    struct replay_trace trace;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    f->fifo_fd = -1;
    if (trace_load_named(&f->trace, "mixed_syscalls") != 0) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static void close_held(struct fixture *f)
{
    for (int i = 0; i < f->nheld; i++)
        close(f->held[i]);
    f->nheld = 0;
}

static void *drain_fifo(void *arg)
{
    struct fixture *f = arg;
    char buf[65536];
    int flags = fcntl(f->fifo_fd, F_GETFL);
    fcntl(f->fifo_fd, F_SETFL, flags & ~O_NONBLOCK);
    while (read(f->fifo_fd, buf, sizeof(buf)) > 0)
        ;   /* until the daemon closes its end (it exits) */
    return NULL;
}

/* Reads the sink's FIFO from now on, so the writer (and shutdown) go on. */
static void start_draining_fifo(struct fixture *f)
{
    if (f->fifo_fd >= 0 && !f->fifo_draining)
        f->fifo_draining = pthread_create(&f->fifo_reader, NULL, drain_fifo, f) == 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    close_held(f);
    start_draining_fifo(f);
    daemon_cleanup(&f->d);   /* stops the daemon if the test did not */
    if (f->fifo_draining)
        pthread_join(f->fifo_reader, NULL);
    if (f->fifo_fd >= 0)
        close(f->fifo_fd);
    replay_trace_free(&f->trace);
    free(f);
    return 0;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Stops the daemon, asserts a clean exit and a summary that adds up;
 * returns the log (free it). */
static char *stop_cleanly(struct fixture *f)
{
    start_draining_fifo(f);
    int status = daemon_stop_within(&f->d, 15000);
    char *log = daemon_read_log(&f->d);
    if (status != 0)
        fprintf(stderr, "daemon exited %d; log tail:\n%s\n", status, log + (strlen(log) > 4000 ? strlen(log) - 4000 : 0));
    assert_int_equal(status, 0);
    assert_non_null(strstr(log, "seccheckd: summary: "));
    assert_null(strstr(log, "MISMATCH"));
    return log;
}

/* Connections that handshake, held open, until the daemon stops answering
 * (none left to accept: three attempts in a row fail) or max; returns how
 * many it holds. One failure is not enough: the daemon's other threads
 * open descriptors for a moment (a container lookup, SQLite's files), so
 * the slot a refused connection lacked may be free again the next moment. */
static int hold_until_refused(struct fixture *f, int max)
{
    char err[256];
    for (int failed_in_a_row = 0; failed_in_a_row < 3 && f->nheld < max;) {
        int fd = replay_connect(f->d.socket, 1, 1000, err, sizeof(err));
        if (fd < 0) {
            failed_in_a_row++;
            continue;
        }
        failed_in_a_row = 0;
        f->held[f->nheld++] = fd;
    }
    return f->nheld;
}

/* Out of descriptors, with connections arriving for a second: the loop
 * neither spins on the listener nor logs each failed accept; each one is
 * refused at once (the peer sees EOF) and counted; closing connections frees
 * descriptors and new ones are served again. */
static void test_out_of_descriptors(void **state)
{
    struct fixture *f = *state;
    daemon_prepare(&f->d);
    const char *args[] = {NULL};
    assert_true(daemon_start_nofile(&f->d, SECCHECKD_BIN, args, 48));
    int held = hold_until_refused(f, MAX_HELD);
    assert_true(held > 5);          /* the daemon served some first */
    assert_true(held < MAX_HELD);   /* and ran out of descriptors */
    sleep_ms(200);

    long cpu0 = cpu_time_ms(f->d.pid, 0);
    int log0 = daemon_log_count(&f->d, "accept: ");
    int64_t t0 = now_ms();
    int attempts = 0, served = 0;
    char err[256];
    while (now_ms() - t0 < 1000) {
        int fd = replay_connect(f->d.socket, 1, 20, err, sizeof(err));
        if (fd >= 0) {   /* a slot came free: held, so the daemon is out of them again */
            served++;
            if (f->nheld < MAX_HELD)
                f->held[f->nheld++] = fd;
            else
                close(fd);
        }
        attempts++;
        sleep_ms(5);
    }
    long cpu_ms = cpu_time_ms(f->d.pid, 0) - cpu0;
    int lines = daemon_log_count(&f->d, "accept: ") - log0;
    fprintf(stderr, "out of descriptors: %d attempts (%d served) in 1 s: daemon CPU %ld ms, %d accept log lines\n",
            attempts, served, cpu_ms, lines);
    assert_true(cpu_ms < 250);   /* a spinning loop takes the whole second */
    assert_true(lines <= 1);     /* rate-limited: one line per 10 s */

    close_held(f);
    assert_true(daemon_wait_log(&f->d, "closed (eof)", held, 5000));
    int fd = replay_connect(f->d.socket, 1, 2000, err, sizeof(err));
    if (fd < 0)
        fail_msg("no connection served once descriptors were free: %s", err);
    assert_int_equal(replay_send(fd, f->trace.packets[0], f->trace.lengths[0]), 0);
    close(fd);

    char *log = stop_cleanly(f);
    long long refused = summary_number(log, "summary: connections", "(refused ");
    fprintf(stderr, "refused %lld\n", refused);
    assert_true(refused >= attempts - served - 5);   /* every refusal counted (a few may be in flight) */
    assert_true(refused > 0);
    free(log);
    assert_true(db_query_int(f->d.db, "SELECT count(*) FROM events") >= 1);
}

/* Sends trace packets without blocking until the daemon stops reading (the
 * socket buffer stays full). */
static void send_until_full(int fd, const struct replay_trace *t)
{
    size_t i = 0;
    for (int stuck_ms = 0; stuck_ms < 300;) {
        ssize_t n = send(fd, t->packets[i % t->count], t->lengths[i % t->count], MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n >= 0) {
            i++;
            stuck_ms = 0;
            continue;
        }
        assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
        sleep_ms(10);
        stuck_ms += 10;
    }
}

/* The writer cannot go on (its NDJSON FIFO is not read), the queue fills,
 * reading pauses. Then a sandbox connects, handshakes and sends: it must
 * start paused too, not wake the loop every turn with its readable socket. */
static void test_handshake_while_paused(void **state)
{
    struct fixture *f = *state;
    daemon_prepare(&f->d);
    char fifo[320];
    snprintf(fifo, sizeof(fifo), "%s/events.fifo", f->d.dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    f->fifo_fd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    assert_true(f->fifo_fd >= 0);
    const char *args[] = {"--sink", "ndjson", "--ndjson-path", fifo, "--queue-max", "1", "--flush-ms", "10",
                          "--log-level", "debug", NULL};
    assert_true(daemon_start(&f->d, SECCHECKD_BIN, args));

    char err[256];
    int flood = replay_connect(f->d.socket, 1, 2000, err, sizeof(err));
    assert_true(flood >= 0);
    f->held[f->nheld++] = flood;
    send_until_full(flood, &f->trace);   /* full for 300 ms: the daemon stopped reading */

    int late = replay_connect(f->d.socket, 1, 2000, err, sizeof(err));
    if (late < 0)
        fail_msg("a handshake while paused was not answered: %s", err);
    f->held[f->nheld++] = late;
    assert_int_equal(replay_send(late, f->trace.packets[0], f->trace.lengths[0]), 0);
    sleep_ms(100);

    long cpu0 = cpu_time_ms(f->d.pid, f->d.pid);   /* the loop thread */
    sleep_ms(1000);
    long cpu_ms = cpu_time_ms(f->d.pid, f->d.pid) - cpu0;
    fprintf(stderr, "paused with a new connection's packet waiting: loop thread CPU %ld ms in 1 s\n", cpu_ms);
    assert_true(cpu_ms < 200);   /* a spinning loop takes the whole second */

    close_held(f);
    char *log = stop_cleanly(f);   /* drains the FIFO first: everything is written */
    assert_true(summary_number(log, "summary: ", "received = ") > 0);
    free(log);
}

/* Refusals over --max-connections flat out: counted each, logged once. */
static void test_refusals_logged_rate_limited(void **state)
{
    struct fixture *f = *state;
    daemon_prepare(&f->d);
    const char *args[] = {"--max-connections", "2", NULL};
    assert_true(daemon_start(&f->d, SECCHECKD_BIN, args));
    assert_int_equal(hold_until_refused(f, 2), 2);
    char err[256];
    const int attempts = 1000;
    int64_t t0 = now_ms();
    for (int i = 0; i < attempts; i++) {
        int fd = replay_connect(f->d.socket, 1, 2000, err, sizeof(err));
        if (fd >= 0)
            fail_msg("connection %d over --max-connections 2 was served", i);
    }
    int lines = daemon_log_count(&f->d, "refused a connection");
    int64_t took_ms = now_ms() - t0;
    fprintf(stderr, "%d refusals in %lld ms: %d log lines\n", attempts, (long long)took_ms, lines);
    /* The first; then at most one per 10 s (a busy machine may take longer
     * than 10 s over the 1000). */
    assert_true(lines >= 1);
    assert_true(lines <= 1 + (took_ms + 1000) / 10000);   /* a second of slack for the last ones in flight */
    close_held(f);
    char *log = stop_cleanly(f);
    assert_int_equal(summary_number(log, "summary: connections", "(refused "), attempts);
    free(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_out_of_descriptors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handshake_while_paused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals_logged_rate_limited, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
