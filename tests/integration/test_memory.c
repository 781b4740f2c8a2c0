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
#include <unistd.h>
#include <cmocka.h>

#include "daemon.h"
#include "replay.h"

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
    assert_true(with <= 64 * 1024);
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
    long samples[8];
    for (int s = 0; s < 8; s++) {
        usleep(500000);
        samples[s] = rss_kib(d.pid);
    }
    for (int i = 0; i < SENDERS; i++)
        floods[i].stop = 1;
    for (int i = 0; i < SENDERS; i++)
        pthread_join(threads[i], NULL);
    uint64_t sent = 0;
    for (int i = 0; i < SENDERS; i++)
        sent += floods[i].sent;
    printf("flood: %llu messages in 4 s; daemon RSS KiB:", (unsigned long long)sent);
    for (int s = 0; s < 8; s++)
        printf(" %ld", samples[s]);
    printf("\n");
    /* Bounded: after the first second it does not keep growing, and stays
     * far below what storing the flood in memory would take. (Not under
     * AddressSanitizer, whose quarantine holds freed memory on purpose.) */
#ifndef SECCHECKD_SANITIZED
    long peak = 0;
    for (int s = 2; s < 8; s++)
        peak = samples[s] > peak ? samples[s] : peak;
    assert_true(peak <= samples[1] + 16 * 1024);
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
