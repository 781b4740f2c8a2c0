/* Integration: memory stays bounded. 1000 idle handshaken connections cost
 * the daemon little, and a flood against a slow sink does not grow it
 * without bound (the writer queue is bounded; reading pauses instead). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon.h"
#include "replay.h"

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_thousand_idle_connections(void **state)
{
    (void)state;
    struct rlimit rl = {.rlim_cur = 4096, .rlim_max = 4096};
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_max < 1100)
        skip();
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    struct daemon d;
    daemon_prepare(&d);
    assert_true(daemon_start(&d, SECCHECKD_BIN, NULL));
    long before = rss_kib(d.pid);
    enum { N = 1000 };
    static int fds[N];
    char err[256];
    for (int i = 0; i < N; i++) {
        fds[i] = replay_connect(d.socket, 1, 5000, err, sizeof(err));
        if (fds[i] < 0)
            fail_msg("connection %d: %s", i, err);
    }
    usleep(300000);   /* let a flush pass over every connection's record */
    long with = rss_kib(d.pid);
    printf("daemon RSS: %ld KiB at start, %ld KiB with %d idle handshaken connections\n", before, with, N);
    /* Their cost, not the daemon's start (libraries, the rules, SQLite's
     * cache): at most 32 KiB a connection. Not under AddressSanitizer, whose
     * redzones and quarantine are not the daemon's (61 KiB a connection). */
#ifndef SECCHECKD_SANITIZED
    assert_true(with - before <= 32 * 1024);
#endif
    for (int i = 0; i < N; i++)
        close(fds[i]);
    assert_int_equal(daemon_stop(&d), 0);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM connections WHERE client_version=1"), N);
    daemon_cleanup(&d);
}

struct flood {
    const char *socket;
    const struct replay_trace *trace;
    volatile int stop;
    uint64_t sent;
};

static void *flood_main(void *arg)
{
    struct flood *f = arg;
    char err[256];
    int fd = replay_connect(f->socket, 1, 5000, err, sizeof(err));
    if (fd < 0)
        return NULL;
    for (size_t i = 0; !f->stop; i = (i + 1) % f->trace->count) {
        if (replay_send(fd, f->trace->packets[i], f->trace->lengths[i]) != 0)
            break;
        f->sent++;
    }
    close(fd);
    return NULL;
}

static void test_flood_memory_is_bounded(void **state)
{
    (void)state;
    struct replay_trace trace;
    char err[512];
    assert_int_equal(replay_trace_load(&trace, TRACES_DIR "/mixed_syscalls.trace", err, sizeof(err)), 0);
    struct daemon d;
    daemon_prepare(&d);
    const char *args[] = {"--queue-max", "2", NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    enum { SENDERS = 4 };
    struct flood floods[SENDERS];
    pthread_t threads[SENDERS];
    for (int i = 0; i < SENDERS; i++) {
        floods[i] = (struct flood){.socket = d.socket, .trace = &trace};
        pthread_create(&threads[i], NULL, flood_main, &floods[i]);
    }
    /* RSS when half the flood was sent and at its end: how many messages,
     * not how many seconds, so that a slow or busy machine (fewer messages
     * a second, a slower ramp to the queue's bound) measures the same. */
    enum { FLOOD = 400000, FLOOD_MAX_S = 60 };
    long at_half = 0, peak = 0;
    int64_t started = now_ms();
    uint64_t sent = 0;
    while (sent < FLOOD && now_ms() - started < FLOOD_MAX_S * 1000) {
        usleep(100000);
        sent = 0;
        for (int i = 0; i < SENDERS; i++)
            sent += floods[i].sent;
        long rss = rss_kib(d.pid);
        peak = rss > peak ? rss : peak;
        if (!at_half && sent >= FLOOD / 2)
            at_half = rss;
    }
    for (int i = 0; i < SENDERS; i++)
        floods[i].stop = 1;
    for (int i = 0; i < SENDERS; i++)
        pthread_join(threads[i], NULL);
    sent = 0;
    for (int i = 0; i < SENDERS; i++)
        sent += floods[i].sent;
    long at_end = rss_kib(d.pid);
    printf("flood: %llu messages in %.1f s; daemon RSS KiB: %ld at half, %ld at the end, %ld at most\n",
           (unsigned long long)sent, (double)(now_ms() - started) / 1000, at_half, at_end, peak);
    if (sent < FLOOD)
        fail_msg("the flood sent %llu messages in %d s, not %d: nothing to judge", (unsigned long long)sent,
                 FLOOD_MAX_S, FLOOD);
    /* Bounded: the second half of the flood (200,000 messages, ~25 MB on the
     * wire) does not grow it, and it stays far below what storing the flood
     * in memory would take. (Not under AddressSanitizer, whose quarantine
     * holds freed memory on purpose.) */
#ifndef SECCHECKD_SANITIZED
    assert_true(at_end <= at_half + 16 * 1024);
    assert_true(peak <= 128 * 1024);
#endif
    assert_int_equal(daemon_stop(&d), 0);
    assert_int_equal(db_query_int(d.db, "SELECT received - stored FROM runs"), 0);
    assert_int_equal(db_query_int(d.db, "SELECT received FROM runs"), (long long)sent);
    daemon_cleanup(&d);
    replay_trace_free(&trace);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thousand_idle_connections),
        cmocka_unit_test(test_flood_memory_is_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
