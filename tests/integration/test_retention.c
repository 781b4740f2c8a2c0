/* Integration: retention. --max-db-size keeps the database bounded under a
 * long replay, --retain deletes old events even when no new ones arrive,
 * SIGHUP changes retention live, the chain still verifies after pruning,
 * the WAL shrinks back once a reader holding a snapshot lets go, and it is
 * reused in place, not truncated, while events keep coming. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "daemon.h"
#include "replay.h"

static struct replay_trace mixed;

static void replay_times(const char *socket, int times)
{
    char err[256];
    int fd = replay_connect(socket, 1, 5000, err, sizeof(err));
    assert_true(fd >= 0);
    for (int r = 0; r < times; r++)
        for (size_t i = 0; i < mixed.count; i++)
            assert_int_equal(replay_send(fd, mixed.packets[i], mixed.lengths[i]), 0);
    close(fd);
}

static long long file_bytes(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

static void test_max_db_size_bounds_the_database(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    const char *args[] = {"--max-db-size", "4M", "--batch-size", "512", NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    replay_times(d.socket, 60);   /* 74100 events, ~45 MB stored unbounded */
    usleep(2500000);              /* the last retention steps */
    assert_int_equal(daemon_stop(&d), 0);
    long long db = file_bytes(d.db);
    long long rows = db_query_int(d.db, "SELECT count(*) FROM events");
    printf("database file %lld bytes, %lld of %zu events kept\n", db, rows, 60 * mixed.count);
    assert_true(db <= 8 * 1024 * 1024);     /* 4M + what a step is behind under load */
    assert_true(rows > 1000 && rows < (long long)(60 * mixed.count));
    assert_int_equal(db_query_int(d.db, "SELECT stored FROM runs"), (long long)(60 * mixed.count));
    assert_true(verify_ok(SECCHECKD_BIN, d.db));
    daemon_cleanup(&d);
}

static void test_retain_by_age_and_sighup(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    char conf[400];
    snprintf(conf, sizeof(conf), "%s/seccheckd.conf", d.dir);
    FILE *f = fopen(conf, "w");
    fputs("retain = 0\n", f);
    fclose(f);
    const char *args[] = {"--config", conf, "--batch-size", "256", NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    replay_times(d.socket, 2);
    usleep(2500000);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM events"), (long long)(2 * mixed.count));
    f = fopen(conf, "w");
    fputs("retain = 1s\n", f);   /* events older than a second go, with nothing new arriving */
    fclose(f);
    kill(d.pid, SIGHUP);
    /* All but the newest batch (which stays so the chain continues). */
    long long newest = db_query_int(d.db, "SELECT events FROM batches ORDER BY id DESC LIMIT 1");
    long long left = -1;
    for (int i = 0; i < 60 && left != newest; i++) {
        usleep(100000);
        left = db_query_int(d.db, "SELECT count(*) FROM events");
    }
    assert_int_equal(left, newest);
    assert_true(newest <= 256);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM batches"), 1);
    assert_int_equal(daemon_stop(&d), 0);
    char *log = daemon_read_log(&d);
    assert_non_null(strstr(log, "reload: applied retain"));
    free(log);
    assert_true(verify_ok(SECCHECKD_BIN, d.db));   /* the newest batch verifies from its anchor */
    daemon_cleanup(&d);
}

static void test_wal_shrinks_after_a_reader_lets_go(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    assert_true(daemon_start(&d, SECCHECKD_BIN, NULL));
    replay_times(d.socket, 1);
    usleep(300000);
    /* A reader holds a snapshot while a lot is written. */
    sqlite3 *reader;
    assert_int_equal(sqlite3_open(d.db, &reader), SQLITE_OK);
    assert_int_equal(sqlite3_exec(reader, "BEGIN; SELECT count(*) FROM events;", NULL, NULL, NULL), SQLITE_OK);
    replay_times(d.socket, 20);
    usleep(4500000);   /* at least two checkpoint attempts while the reader holds on */
    char wal[400];
    snprintf(wal, sizeof(wal), "%s-wal", d.db);
    long long held = file_bytes(wal);
    sqlite3_exec(reader, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(reader);
    long long after = held;
    for (int i = 0; i < 50 && after > 1024 * 1024; i++) {
        usleep(100000);
        after = file_bytes(wal);
    }
    printf("WAL: %lld bytes while a reader held a snapshot, %lld after it ended\n", held, after);
    assert_true(held > 4 * 1024 * 1024);   /* the reader really held it back */
    assert_true(after <= 1024 * 1024);     /* and the next checkpoint truncated it */
    assert_int_equal(daemon_stop(&d), 0);
    char *log = daemon_read_log(&d);
    assert_non_null(strstr(log, "WAL checkpoint held back by a reader"));
    free(log);
    daemon_cleanup(&d);
}

/* While events keep coming the WAL is reused in place, not truncated: a
 * truncated WAL has to grow its file again with the next batches, which
 * cost the writer ~10% of its time. The periodic TRUNCATE waits for idle. */
static void test_wal_not_truncated_while_writing(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    assert_true(daemon_start(&d, SECCHECKD_BIN, NULL));
    pid_t gen = fork();
    if (gen == 0) {
        execl(LOADGEN_BIN, LOADGEN_BIN, "--socket", d.socket, "--trace", TRACES_DIR "/mixed_syscalls.trace",
              "--connections", "1", "--mode", "block", "--rate", "3000", "--duration", "5", (char *)NULL);
        _exit(127);
    }
    char wal[400];
    snprintf(wal, sizeof(wal), "%s-wal", d.db);
    long long peak = 0, shrinks = 0;
    int status = 0;
    while (waitpid(gen, &status, WNOHANG) == 0) {
        long long now = file_bytes(wal);
        if (peak > 1024 * 1024 && now < 256 * 1024)
            shrinks++;
        if (now > peak)
            peak = now;
        usleep(20000);
    }
    printf("WAL: peak %lld bytes, truncated %lld times while writing\n", peak, shrinks);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_true(peak > 1024 * 1024);   /* the WAL did grow: the check could see a truncation */
    assert_int_equal(shrinks, 0);
    assert_int_equal(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}

/* The start log states what decides which events are kept. */
static void test_start_log_states_the_settings(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    const char *args[] = {"--retain", "7d", "--max-db-size", "20G", "--drop-types", "SYSCALL_READ",
                          "--max-connections", "10", "--on-full", "drop", NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    assert_int_equal(daemon_stop(&d), 0);
    char *log = daemon_read_log(&d), sink[700];
    snprintf(sink, sizeof(sink), "listening on %s, sink sqlite -> %s\n", d.socket, d.db);
    bool says_sink = strstr(log, sink) != NULL;
    bool says_settings = strstr(log, "seccheckd: info: settings: retain 7d, max-db-size 20G; keep-types all, "
                                     "drop-types SYSCALL_READ, keep-containers all, drop-containers none; "
                                     "max-connections 10, max-message 262144, batch-size 4096, flush-ms 100, "
                                     "queue-max 8, on-full drop\n") != NULL;
    if (!says_settings)
        printf("%s", log);
    free(log);
    daemon_cleanup(&d);
    assert_true(says_sink);
    assert_true(says_settings);
}

static int setup(void **state)
{
    (void)state;
    return trace_load_named(&mixed, "mixed_syscalls");
}

static int teardown(void **state)
{
    (void)state;
    traces_free(&mixed, 1);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_max_db_size_bounds_the_database),
        cmocka_unit_test(test_retain_by_age_and_sighup),
        cmocka_unit_test(test_wal_shrinks_after_a_reader_lets_go),
        cmocka_unit_test(test_wal_not_truncated_while_writing),
        cmocka_unit_test(test_start_log_states_the_settings),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
