/* Integration: faults. SIGTERM and kill -9 under load, a full disk, a
 * database locked by another process: the daemon keeps draining sockets,
 * counts what it could not store, resumes, and its accounting adds up. */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "daemon.h"
#include "replay.h"

static struct replay_trace mixed;

struct streamer {
    const char *socket;
    atomic_bool stop;
    atomic_ullong sent;
    pthread_t thread;
};

/* Sends the mixed trace in a loop until told to stop or the socket dies. */
static void *stream_main(void *arg)
{
    struct streamer *s = arg;
    char err[256];
    int fd = replay_connect(s->socket, 1, 5000, err, sizeof(err));
    if (fd < 0)
        return NULL;
    struct timeval tv = {.tv_sec = 0, .tv_usec = 200000};   /* never hang on a dead daemon */
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    for (size_t i = 0; !atomic_load(&s->stop); i = (i + 1) % mixed.count) {
        if (replay_send(fd, mixed.packets[i], mixed.lengths[i]) != 0) {
            if (errno == EAGAIN)
                continue;
            break;
        }
        atomic_fetch_add(&s->sent, 1);
    }
    close(fd);
    return NULL;
}

static void start_streamers(struct streamer *s, int n, const char *socket)
{
    for (int i = 0; i < n; i++) {
        s[i].socket = socket;
        atomic_store(&s[i].stop, false);
        atomic_store(&s[i].sent, 0);
        pthread_create(&s[i].thread, NULL, stream_main, &s[i]);
    }
}

static unsigned long long stop_streamers(struct streamer *s, int n)
{
    unsigned long long sent = 0;
    for (int i = 0; i < n; i++)
        atomic_store(&s[i].stop, true);
    for (int i = 0; i < n; i++) {
        pthread_join(s[i].thread, NULL);
        sent += atomic_load(&s[i].sent);
    }
    return sent;
}

static void assert_runs_add_up(const char *db)
{
    assert_int_equal(db_query_int(db, "SELECT count(*) FROM runs WHERE received = stored + discarded + rejected + "
                                      "store_failed"),
                     db_query_int(db, "SELECT count(*) FROM runs"));
}

/* Opened read-write: recovers a WAL a killed writer left. */
static void assert_integrity_ok(const char *path)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void test_sigterm_under_load_loses_nothing_received(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    assert_true(daemon_start(&d, SECCHECKD_BIN, NULL));
    struct streamer s[8];
    start_streamers(s, 8, d.socket);
    usleep(1500000);
    assert_int_equal(daemon_stop(&d), 0);   /* SIGTERM while all 8 stream flat out */
    unsigned long long sent = stop_streamers(s, 8);
    long long received = db_query_int(d.db, "SELECT received FROM runs");
    long long stored = db_query_int(d.db, "SELECT stored FROM runs");
    printf("sent %llu, daemon received %lld, stored %lld\n", sent, received, stored);
    assert_true(received > 10000);
    assert_int_equal(stored, received);   /* everything read was committed */
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM events"), stored);
    assert_int_equal(db_query_int(d.db, "SELECT sum(messages) FROM connections"), received);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM connections WHERE close_reason IS NULL"), 0);
    assert_true((unsigned long long)received <= sent);
    assert_runs_add_up(d.db);
    daemon_cleanup(&d);
}

static void test_kill9_under_load_leaves_a_sound_database(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    const char *args[] = {"--batch-size", "1024", "--queue-max", "2", NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    struct streamer s[4];
    start_streamers(s, 4, d.socket);
    usleep(1500000);
    kill(d.pid, SIGKILL);
    reaper_wait(d.pid);
    d.pid = 0;
    unsigned long long sent = stop_streamers(s, 4);
    assert_integrity_ok(d.db);
    long long stored = db_query_int(d.db, "SELECT stored FROM runs");
    long long rows = db_query_int(d.db, "SELECT count(*) FROM events");
    printf("sent %llu, stored %lld before kill -9\n", sent, stored);
    assert_int_equal(rows, stored);   /* the runs row commits with its batch */
    assert_true(stored > 0);
    /* What was lost is what was in memory and not yet committed: the open
     * batch and the queued ones (--queue-max 2 + 1, 1024 events each), plus
     * what sat in the 4 sockets' kernel buffers (~300 messages each). */
    assert_true(sent - (unsigned long long)stored <= 3 * 1024 + 4 * 400);
    daemon_cleanup(&d);
}

/* Waits up to 10 s for needle in d's log. */
static bool log_says(const struct daemon *d, const char *needle)
{
    return daemon_wait_log(d, needle, 1, 10000);
}

/* A daemon with its database on a 3 MiB tmpfs mounted at mnt in its
 * directory, two streamers flooding it until the disk is full; skips the
 * test when this user may not mount (CI and the dev machines run as root).
 * Whether batches started failing. */
static bool flood_small_disk(struct daemon *d, char *mnt, size_t mntlen, struct streamer s[2])
{
    daemon_prepare(d);
    snprintf(mnt, mntlen, "%.200s/fs", d->dir);
    mkdir(mnt, 0700);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=3m") != 0) {
        daemon_cleanup(d);
        skip();
    }
    snprintf(d->db, sizeof(d->db), "%s/events.db", mnt);
    bool started = daemon_start(d, SECCHECKD_BIN, NULL);
    start_streamers(s, 2, d->socket);   /* to a dead socket they stop at once */
    return started && log_says(d, "could not store a batch");
}

static void test_disk_full_counts_and_resumes(void **state)
{
    (void)state;
    struct daemon d;
    char mnt[260];
    struct streamer s[2];
    /* Fill the 3 MiB disk: batches start failing, reading goes on. The
     * tmpfs stays mounted until every number is read: asserted after. */
    bool full = flood_small_disk(&d, mnt, sizeof(mnt), s);
    unsigned long long before = 0;
    for (int i = 0; i < 2; i++)
        before += atomic_load(&s[i].sent);
    usleep(300000);
    unsigned long long after = 0;
    for (int i = 0; i < 2; i++)
        after += atomic_load(&s[i].sent);
    /* Space returns: storing resumes. */
    int remounted = mount("tmpfs", mnt, "tmpfs", MS_REMOUNT, "size=512m");
    log_says(&d, "storing again");
    unsigned long long sent = stop_streamers(s, 2);
    int status = daemon_stop(&d);
    bool resumed = daemon_log_count(&d, "storing again") > 0;
    long long failed = db_query_int(d.db, "SELECT store_failed FROM runs");
    long long stored = db_query_int(d.db, "SELECT stored FROM runs");
    long long rows = db_query_int(d.db, "SELECT count(*) FROM events");
    long long received = db_query_int(d.db, "SELECT received FROM runs");
    long long add_up = db_query_int(d.db, "SELECT count(*) FROM runs WHERE received = stored + discarded + "
                                          "rejected + store_failed");
    umount(mnt);
    daemon_cleanup(&d);
    printf("sent %llu: stored %lld, store_failed %lld\n", sent, stored, failed);
    assert_true(full);
    assert_true(after > before);   /* still draining: the sandboxes are not stalled */
    assert_int_equal(remounted, 0);
    assert_int_equal(status, 0);
    assert_true(resumed);
    assert_true(failed > 0);
    assert_int_equal(rows, stored);
    assert_int_equal(add_up, 1);
    assert_int_equal(received, (long long)sent);
}

/* While the disk is full, connections close (one that streamed before,
 * several opened and closed during the outage): once space returns, every
 * connection has its row, closed, with its final counts; none is left
 * "open" with stale counts or missing. */
static void test_disk_full_keeps_connection_rows(void **state)
{
    (void)state;
    struct daemon d;
    char mnt[260];
    struct streamer s[2];
    bool full = flood_small_disk(&d, mnt, sizeof(mnt), s);
    unsigned long long first = stop_streamers(s, 1);   /* its close is in a batch that fails */
    enum { SHORT = 5 };
    int replayed = 0;
    for (int i = 0; i < SHORT; i++)
        replayed += replay_connection(d.socket, &mixed, mixed.version) == 0;
    unsigned long long second = stop_streamers(s + 1, 1);
    /* Every close is written (and fails) before space returns: the writer
     * drains its queue in well under a second. */
    usleep(1500000);
    int remounted = mount("tmpfs", mnt, "tmpfs", MS_REMOUNT, "size=512m");
    int status = daemon_stop(&d);
    bool resumed = daemon_log_count(&d, "storing again") > 0;
    long long rows = db_query_int(d.db, "SELECT count(*) FROM connections");
    long long open = db_query_int(d.db, "SELECT count(*) FROM connections WHERE close_ns IS NULL");
    long long short_ok = dbq(&d, "SELECT count(*) FROM connections WHERE messages = %zu AND close_reason = 'eof'",
                             mixed.count);
    long long messages = db_query_int(d.db, "SELECT sum(messages) FROM connections");
    long long received = db_query_int(d.db, "SELECT received FROM runs");
    long long failed = db_query_int(d.db, "SELECT store_failed FROM runs");
    umount(mnt);
    daemon_cleanup(&d);
    printf("streamed %llu + %llu, %d short connections during the outage: %lld connection rows (%lld open), "
           "store_failed %lld\n", first, second, replayed, rows, open, failed);
    assert_true(full);
    assert_int_equal(remounted, 0);
    assert_true(resumed);
    assert_int_equal(status, 0);
    assert_int_equal(replayed, SHORT);
    assert_true(failed > 0);
    assert_int_equal(rows, 2 + SHORT);
    assert_int_equal(open, 0);
    assert_int_equal(short_ok, SHORT);
    assert_int_equal(messages, received);
    assert_int_equal(received, (long long)(first + second + SHORT * mixed.count));
}

/* The exit summary's identity: 0 when found. */
struct summary {
    unsigned long long received, stored, discarded, rejected, failed;
};

static int parse_summary(const char *log, struct summary *out)
{
    const char *line = strstr(log, "summary: ");
    if (!line)
        return -1;
    return sscanf(line, "summary: %llu received = %llu stored + %llu discarded + %llu rejected + %llu store_failed",
                  &out->received, &out->stored, &out->discarded, &out->rejected, &out->failed) == 5
               ? 0
               : -1;
}

/* Sends packets [from, to) of the mixed trace on fd. */
static void send_range(int fd, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        send_bytes(fd, mixed.packets[i], mixed.lengths[i]);
}

/* Waits up to 10 s until the database at path holds n events. */
static bool stored_events(const char *path, long long n)
{
    for (int i = 0; i < 200; i++) {
        if (db_query_int(path, "SELECT count(*) FROM events") == n)
            return true;
        usleep(50000);
    }
    return false;
}

enum file_fault { FILE_DELETED, FILE_RESTORED };

/* The database file goes away under a running daemon, deleted or replaced
 * by a copy made earlier (a restore, moved into place). What is sent
 * afterwards is in the file at the path, which passes integrity_check and
 * verify, and the exit summary adds up. */
static void file_goes_away(enum file_fault fault)
{
    struct daemon d;
    daemon_prepare(&d);
    assert_true(daemon_start(&d, SECCHECKD_BIN, NULL));
    size_t half = mixed.count / 2;
    int fd = replay_open(d.socket, mixed.version);
    assert_true(fd >= 0);
    send_range(fd, 0, half);
    assert_true(stored_events(d.db, (long long)half));
    char copy[400];
    snprintf(copy, sizeof(copy), "%s/restore.db", d.dir);
    long long kept = 0;   /* events in the file at the path before the fault */
    if (fault == FILE_RESTORED) {
        sqlite3 *db;
        assert_int_equal(sqlite3_open(d.db, &db), SQLITE_OK);
        char sql[512];
        snprintf(sql, sizeof(sql), "VACUUM INTO '%s'", copy);
        assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
        kept = (long long)half;
        send_range(fd, half, half + 100);   /* stored after the copy: the restore loses them */
        assert_true(stored_events(d.db, (long long)half + 100));
        assert_int_equal(rename(copy, d.db), 0);
    } else {
        assert_int_equal(unlink(d.db), 0);   /* its -wal and -shm stay */
    }
    size_t from = fault == FILE_RESTORED ? half + 100 : half;
    send_range(fd, from, mixed.count);                                         /* the open connection */
    assert_int_equal(replay_connection(d.socket, &mixed, mixed.version), 0);   /* and a new one */
    close(fd);
    bool reopened = log_says(&d, "opened the database now at");
    assert_int_equal(daemon_stop(&d), 0);
    long long after = (long long)(mixed.count - from + mixed.count);

    char *log = daemon_read_log(&d);
    struct summary sum = {0};
    int parsed = parse_summary(log, &sum);
    bool said = strstr(log, fault == FILE_RESTORED ? "was replaced by another file (a restored copy?) while in use"
                                                   : "was deleted while in use") != NULL;
    free(log);
    long long events = db_query_int(d.db, "SELECT count(*) FROM events");
    long long new_run = dbq(&d, "SELECT received FROM runs WHERE reopen_reason = '%s'",
                            fault == FILE_RESTORED ? "replaced" : "deleted");
    long long conns = db_query_int(d.db, "SELECT count(*) FROM connections WHERE close_ns IS NOT NULL");
    printf("%s: %lld events in the file at the path (%lld sent after), summary %llu received = %llu stored + %llu "
           "store_failed\n", fault == FILE_RESTORED ? "restored" : "deleted", events, after, sum.received, sum.stored,
           sum.failed);
    assert_int_equal(parsed, 0);
    assert_int_equal(events, kept + after);
    assert_true(said);
    assert_true(reopened);
    assert_int_equal(new_run, after);
    assert_int_equal(conns, 2);
    assert_int_equal(sum.received, 2 * mixed.count);
    assert_int_equal(sum.received, sum.stored + sum.discarded + sum.rejected + sum.failed);
    assert_int_equal(sum.stored, 2 * mixed.count);   /* each event went to the file at the path when written */
    assert_integrity_ok(d.db);
    assert_true(verify_ok(SECCHECKD_BIN, d.db));
    daemon_cleanup(&d);
}

static void test_database_deleted_under_the_daemon(void **state)
{
    (void)state;
    file_goes_away(FILE_DELETED);
}

static void test_database_restored_under_the_daemon(void **state)
{
    (void)state;
    file_goes_away(FILE_RESTORED);
}

struct locker {
    const char *db;
    atomic_int state;     /* 0 waiting for the lock, 1 holding it, -1 could not take it */
    atomic_bool release;  /* let it go */
};

/* Takes the write lock (waiting while the daemon has it: a busy machine
 * may find it writing its first rows), holds it until told, lets it go. */
static void *hold_lock(void *arg)
{
    struct locker *l = arg;
    sqlite3 *db;
    sqlite3_open(l->db, &db);
    sqlite3_busy_timeout(db, 10000);
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        atomic_store(&l->state, -1);
        sqlite3_close(db);
        return NULL;
    }
    atomic_store(&l->state, 1);
    while (!atomic_load(&l->release))
        usleep(10000);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(db);
    return NULL;
}

/* Another process holds the database: with --on-full block nothing is lost
 * (reading pauses, the clients wait); with drop, the overflow is counted. */
static void locked_database(const char *policy, long long *sent_out, const char *db_out_copy)
{
    (void)db_out_copy;
    struct daemon d;
    daemon_prepare(&d);
    const char *args[] = {"--busy-timeout-ms", "100", "--queue-max", "2", "--batch-size", "512", "--on-full", policy,
                          NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    struct locker l = {.db = d.db};
    pthread_t th;
    pthread_create(&th, NULL, hold_lock, &l);
    for (int i = 0; i < 1000 && atomic_load(&l.state) == 0; i++)
        usleep(10000);
    assert_int_equal(atomic_load(&l.state), 1);   /* the streams start once the lock is held */
    struct streamer s[2];
    start_streamers(s, 2, d.socket);
    /* Held until the writer has met it, then 1.5 s more (the queue fills):
     * a busy machine's slow start shortens nothing. */
    bool met = daemon_wait_log(&d, "locked by another process", 1, 30000);
    usleep(1500000);
    atomic_store(&l.release, true);
    pthread_join(th, NULL);
    assert_true(met);
    usleep(300000);
    unsigned long long sent = stop_streamers(s, 2);
    assert_int_equal(daemon_stop(&d), 0);
    long long received = db_query_int(d.db, "SELECT received FROM runs");
    long long stored = db_query_int(d.db, "SELECT stored FROM runs");
    long long dropped = db_query_int(d.db, "SELECT rejected_queue_full FROM runs");
    printf("--on-full %s: sent %llu, received %lld, stored %lld, dropped queue_full %lld, store_failed %lld\n",
           policy, sent, received, stored, dropped, db_query_int(d.db, "SELECT store_failed FROM runs"));
    assert_int_equal(received, (long long)sent);
    assert_int_equal(db_query_int(d.db, "SELECT store_failed FROM runs"), 0);
    assert_runs_add_up(d.db);
    if (strcmp(policy, "block") == 0)
        assert_int_equal(dropped, 0);
    else
        assert_true(dropped > 0);
    assert_int_equal(stored + dropped, received);
    *sent_out = (long long)sent;
    daemon_cleanup(&d);
}

static void test_locked_database_block(void **state)
{
    (void)state;
    long long sent;
    locked_database("block", &sent, NULL);
}

static void test_locked_database_drop(void **state)
{
    (void)state;
    long long sent;
    locked_database("drop", &sent, NULL);
}

static long long elapsed_ms(const struct timespec *since)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)(now.tv_sec - since->tv_sec) * 1000 + (now.tv_nsec - since->tv_nsec) / 1000000;
}

/* A line sink whose reader never reads (a log shipper that hung) blocks the
 * writer in write(). SIGTERM must still end the daemon within
 * --drain-timeout-ms plus the pipeline's grace for the writer, counting what
 * it could not write as store_failed. The reader here holds a FIFO open and
 * never reads it: a pipe nobody reads. */
static void blocked_line_sink_stops(const char *sink, const char *path_option)
{
    struct daemon d;
    daemon_prepare(&d);
    char fifo[300];
    snprintf(fifo, sizeof(fifo), "%.250s/out.fifo", d.dir);
    int made = mkfifo(fifo, 0600);
    int reader = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    const char *args[] = {"--sink", sink, path_option, fifo, "--drain-timeout-ms", "300", "--batch-size", "256",
                          "--queue-max", "2", NULL};
    bool started = made == 0 && reader >= 0 && daemon_start(&d, SECCHECKD_BIN, args);
    struct streamer s[2];
    int status = -1;
    long long took_ms = -1;
    if (started) {
        start_streamers(s, 2, d.socket);
        usleep(1000000);   /* the pipe is full and the writer blocked long before this */
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        status = daemon_stop_within(&d, 10000);
        took_ms = elapsed_ms(&t0);
        stop_streamers(s, 2);
    }
    char *log = daemon_read_log(&d);
    struct summary sum = {0};
    int parsed = parse_summary(log, &sum);
    bool cut_logged = strstr(log, "giving up") != NULL;
    free(log);
    if (reader >= 0)
        close(reader);
    daemon_cleanup(&d);

    printf("--sink %s to a FIFO nobody reads: exit %d after SIGTERM in %lld ms; %llu received = %llu stored + "
           "%llu store_failed\n", sink, status, took_ms, sum.received, sum.stored, sum.failed);
    assert_true(started);
    assert_int_equal(status, 0);
    assert_true(took_ms < 5000);   /* 300 ms drain + 2 s grace, with room for sanitizers */
    assert_int_equal(parsed, 0);
    assert_true(sum.failed > 0);   /* what was queued for the stuck reader is counted */
    assert_int_equal(sum.received, sum.stored + sum.discarded + sum.rejected + sum.failed);
    assert_true(cut_logged);
}

static void test_blocked_text_sink_sigterm(void **state)
{
    (void)state;
    blocked_line_sink_stops("text", "--text-path");
}

static void test_blocked_ndjson_sink_sigterm(void **state)
{
    (void)state;
    blocked_line_sink_stops("ndjson", "--ndjson-path");
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
        cmocka_unit_test(test_sigterm_under_load_loses_nothing_received),
        cmocka_unit_test(test_kill9_under_load_leaves_a_sound_database),
        cmocka_unit_test(test_disk_full_counts_and_resumes),
        cmocka_unit_test(test_disk_full_keeps_connection_rows),
        cmocka_unit_test(test_database_deleted_under_the_daemon),
        cmocka_unit_test(test_database_restored_under_the_daemon),
        cmocka_unit_test(test_locked_database_block),
        cmocka_unit_test(test_locked_database_drop),
        cmocka_unit_test(test_blocked_text_sink_sigterm),
        cmocka_unit_test(test_blocked_ndjson_sink_sigterm),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
