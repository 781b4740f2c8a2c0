/* Integration: the seccheck-loadgen binary. Bad input is refused with a
 * message naming the problem; against a real seccheckd every message
 * arrives; against an in-test collector that stalls, sentry mode drops and
 * carries the running drop count in each header, and retries prevent drops;
 * JSON and Go benchmark output parse; --rate paces. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "daemon.h"
#include "replay.h"
#include "wire.h"

#define EXEC_LOOP TRACES_DIR "/exec_loop.trace"
#define DROPS TRACES_DIR "/drops.trace"

/* ---- running the binary ---- */

/* Runs seccheck-loadgen with the NULL-terminated args; its stdout (and
 * stderr too when merge_stderr) lands in out. Returns the exit code. */
static int run_loadgen(char *out, size_t outlen, int merge_stderr, ...)
{
    const char *argv[64] = {LOADGEN_BIN};
    int argc = 1;
    va_list ap;
    va_start(ap, merge_stderr);
    const char *arg;
    while ((arg = va_arg(ap, const char *)) != NULL && argc < 63)
        argv[argc++] = arg;
    va_end(ap);
    argv[argc] = NULL;

    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    pid_t pid = reaper_fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(pipefd[1], STDOUT_FILENO);
        if (merge_stderr)
            dup2(pipefd[1], STDERR_FILENO);
        close(pipefd[0]);
        close(pipefd[1]);
        execv(LOADGEN_BIN, (char *const *)argv);
        _exit(127);
    }
    close(pipefd[1]);
    size_t len = 0;
    ssize_t n;
    while ((n = read(pipefd[0], out + len, outlen - 1 - len)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0)
            len += (size_t)n;
    out[len] = '\0';
    close(pipefd[0]);
    int code = reaper_wait(pid);
    if (merge_stderr || code != 0)
        fprintf(stderr, "loadgen said:\n%s", out);
    return code;
}

/* ---- JSON, parsed by SQLite's JSON functions ---- */

static sqlite3_stmt *json_query(sqlite3 **db, const char *sql, const char *json)
{
    assert_int_equal(sqlite3_open(":memory:", db), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(*db, sql, -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_text(st, 1, json, -1, SQLITE_TRANSIENT);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    return st;
}

static double json_number(const char *json, const char *key)
{
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT json_valid(?1), json_type(?1, '$.%s'), json_extract(?1, '$.%s')", key, key);
    sqlite3 *db;
    sqlite3_stmt *st = json_query(&db, sql, json);
    assert_int_equal(sqlite3_column_int(st, 0), 1);
    const char *type = (const char *)sqlite3_column_text(st, 1);
    if (!type || (strcmp(type, "integer") != 0 && strcmp(type, "real") != 0))
        fail_msg("JSON key %s: expected a number, got %s in %s", key, type ? type : "nothing", json);
    double v = sqlite3_column_double(st, 2);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static char *json_text(const char *json, const char *key)
{
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT json_extract(?1, '$.%s')", key);
    sqlite3 *db;
    sqlite3_stmt *st = json_query(&db, sql, json);
    const unsigned char *t = sqlite3_column_text(st, 0);
    char *copy = strdup(t ? (const char *)t : "");
    sqlite3_finalize(st);
    sqlite3_close(db);
    return copy;
}

#define JSON_INT(json, key) ((long long)json_number(json, key))

/* ---- a temporary directory for malformed traces and fake collectors ---- */

static void make_dir(char *dir, size_t len)
{
    snprintf(dir, len, "/tmp/seccheckd-loadgen-XXXXXX");
    assert_non_null(reaper_mkdtemp(dir));
}

static void remove_dir(const char *dir)
{
    assert_int_equal(reaper_remove(dir), 0);
}

static void put_u64(FILE *f, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    assert_int_equal(fwrite(b, 1, 8, f), 8);
}

/* A trace file: magic, config, then one record that declares record_len
 * bytes but holds only data_len of them. */
static void write_trace(const char *path, const char *magic, uint64_t record_len, size_t data_len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    const char *config = "{\"version\":1}";
    fwrite(magic, 1, 16, f);
    put_u64(f, strlen(config));
    fputs(config, f);
    if (record_len) {
        put_u64(f, record_len);
        uint8_t pkt[64] = {8, 0, 7, 0};
        assert_true(data_len <= sizeof(pkt));
        fwrite(pkt, 1, data_len, f);
    }
    assert_int_equal(fclose(f), 0);
}

/* ---- an in-test collector: one connection, a scripted behaviour ---- */

enum fake_behaviour {
    CLOSE_AT_ONCE,           /* accept and close: handshake refused */
    ANSWER_GARBAGE,          /* answer the handshake with bytes that are not one */
    STALL_THEN_READ,         /* answer, read nothing for stall_ms, then read to EOF */
    READ_SLOWLY,             /* answer, then sleep 1 ms every 20 packets */
    CLOSE_AFTER_100,         /* answer, read 100 packets, close */
};

struct fake_collector {
    char dir[64];
    char path[96];           /* fits sun_path */
    int lfd;
    enum fake_behaviour how;
    int stall_ms;
    pthread_t thread;
    /* results, valid after fake_join */
    bool handshake_ok;
    uint64_t received;
    uint32_t last_dropped;
    bool dropped_monotonic;
    bool headers_valid;
};

/* Reads packets until EOF (or `limit`), checking each header. */
static void read_packets(struct fake_collector *f, int fd, uint64_t limit)
{
    static uint8_t buf[65536];   /* one fake collector runs at a time */
    ssize_t n;
    while (f->received < limit && (n = recv(fd, buf, sizeof(buf), 0)) != 0) {
        if (n < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        struct wire_header h;
        f->received++;
        if (wire_header_parse(buf, (size_t)n, &h) != WIRE_OK) {
            f->headers_valid = false;
            continue;
        }
        if (h.dropped_count < f->last_dropped)
            f->dropped_monotonic = false;
        f->last_dropped = h.dropped_count;
        if (f->how == READ_SLOWLY && f->received % 20 == 0)
            sleep_ms(1);
    }
}

static bool answer_handshake(struct fake_collector *f, int fd)
{
    uint8_t buf[64];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    uint32_t version;
    f->handshake_ok = n > 0 && wire_handshake_parse(buf, (size_t)n, &version) == 0 && version == 1;
    return send(fd, "\x08\x01", 2, MSG_NOSIGNAL) == 2;
}

static void *fake_main(void *arg)
{
    struct fake_collector *f = arg;
    struct pollfd pfd = {.fd = f->lfd, .events = POLLIN};
    if (poll(&pfd, 1, 10000) != 1)   /* loadgen never came: the test fails on its own asserts */
        return NULL;
    int fd = accept(f->lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    switch (f->how) {
    case CLOSE_AT_ONCE:
        break;
    case ANSWER_GARBAGE: {
        uint8_t buf[64];
        if (recv(fd, buf, sizeof(buf), 0) > 0)
            send(fd, "\xff\xff\xff", 3, MSG_NOSIGNAL);
        while (recv(fd, buf, sizeof(buf), 0) > 0)   /* until loadgen gives up */
            ;
        break;
    }
    case STALL_THEN_READ:
    case READ_SLOWLY:
        if (answer_handshake(f, fd)) {
            sleep_ms(f->stall_ms);
            read_packets(f, fd, UINT64_MAX);
        }
        break;
    case CLOSE_AFTER_100:
        if (answer_handshake(f, fd))
            read_packets(f, fd, 100);
        break;
    }
    close(fd);
    return NULL;
}

static void fake_start(struct fake_collector *f, enum fake_behaviour how, int stall_ms)
{
    memset(f, 0, sizeof(*f));
    f->how = how;
    f->stall_ms = stall_ms;
    f->dropped_monotonic = f->headers_valid = true;
    make_dir(f->dir, sizeof(f->dir));
    snprintf(f->path, sizeof(f->path), "%s/fake.sock", f->dir);
    f->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    assert_true(f->lfd >= 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", f->path);
    assert_int_equal(bind(f->lfd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    assert_int_equal(listen(f->lfd, 8), 0);
    assert_int_equal(pthread_create(&f->thread, NULL, fake_main, f), 0);
}

static void fake_join(struct fake_collector *f)
{
    pthread_join(f->thread, NULL);
    close(f->lfd);
    remove_dir(f->dir);
}

/* ---- 1. bad input ---- */

static void assert_refused(int want_status, const char *want1, const char *want2, int status, const char *out)
{
    assert_int_equal(status, want_status);
    if (!strstr(out, want1) || (want2 && !strstr(out, want2)))
        fail_msg("expected '%s'%s%s in: %s", want1, want2 ? " and " : "", want2 ? want2 : "", out);
}

static void test_usage_errors(void **state)
{
    (void)state;
    char out[8192];
    int st = run_loadgen(out, sizeof(out), true, "--trace", EXEC_LOOP, NULL);
    assert_refused(2, "--socket PATH is required", NULL, st, out);
    st = run_loadgen(out, sizeof(out), true, "--socket", "/tmp/x.sock", NULL);
    assert_refused(2, "--trace FILE is required", NULL, st, out);
    st = run_loadgen(out, sizeof(out), true, "--socket", "/tmp/x.sock", "--trace", EXEC_LOOP, "--connections", "many",
                     NULL);
    assert_refused(2, "--connections: expected a whole number", "'many'", st, out);
    st = run_loadgen(out, sizeof(out), true, "--socket", "/tmp/x.sock", "--trace", EXEC_LOOP, "--connections", "5000",
                     NULL);
    assert_refused(2, "--connections: 5000 is more than 4096", NULL, st, out);
    st = run_loadgen(out, sizeof(out), true, "--socket", "/tmp/x.sock", "--trace", EXEC_LOOP, "--backoff", "5parsecs",
                     NULL);
    assert_refused(2, "--backoff: expected a duration", "'5parsecs'", st, out);
    st = run_loadgen(out, sizeof(out), true, "--socket", "/tmp/x.sock", "--trace", EXEC_LOOP, "--rate", "-5", NULL);
    assert_refused(2, "--rate: expected a number", NULL, st, out);
    st = run_loadgen(out, sizeof(out), true, "--socket", "/tmp/x.sock", "--trace", EXEC_LOOP, "--messages", "1e3",
                     NULL);
    assert_refused(2, "--messages: expected a whole number", NULL, st, out);
    st = run_loadgen(out, sizeof(out), true, "--socket", "/tmp/x.sock", "--trace", EXEC_LOOP, "--mode", "fast", NULL);
    assert_refused(2, "--mode: expected sentry or block", NULL, st, out);
    st = run_loadgen(out, sizeof(out), true, "--socket", "/tmp/x.sock", "--trace", EXEC_LOOP, "--backoff", "20ms",
                     NULL);
    assert_refused(2, "--backoff (0.02 s) is longer than --backoff-max", NULL, st, out);
}

static void test_help_documents_every_option(void **state)
{
    (void)state;
    char out[16384];
    assert_int_equal(run_loadgen(out, sizeof(out), false, "--help", NULL), 0);
    const char *expected[] = {"--socket PATH", "--trace FILE", "--connections N", "[1]", "--mode sentry|block",
                              "[sentry]", "--messages N", "--duration SECONDS", "--rate R", "--retries N", "[0]",
                              "--backoff DURATION", "[25us]", "--backoff-max DURATION", "[10ms]",
                              "--handshake-timeout DURATION", "[5s]", "--bench-name NAME", "--json", "4096"};
    for (size_t i = 0; i < sizeof(expected) / sizeof(expected[0]); i++)
        if (!strstr(out, expected[i]))
            fail_msg("--help lacks '%s'", expected[i]);
}

static void test_bad_traces_are_named(void **state)
{
    (void)state;
    char dir[64], path[128], out[8192];
    make_dir(dir, sizeof(dir));
    const struct {
        const char *name, *magic;
        uint64_t record_len;
        size_t data_len;
        const char *problem;
    } cases[] = {
        {"magic.trace", "tracereplay fil3", 12, 12, "not a tracereplay file"},
        {"truncated.trace", "tracereplay file", 40, 10, "truncated"},
        {"huge.trace", "tracereplay file", (1u << 20) + 1, 8, "record longer than 1 MiB"},
        {"empty.trace", "tracereplay file", 0, 0, "holds no messages"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, cases[i].name);
        write_trace(path, cases[i].magic, cases[i].record_len, cases[i].data_len);
        /* A good trace first: the bad one must be found whatever its position. */
        int st = run_loadgen(out, sizeof(out), true, "--socket", "/tmp/x.sock", "--trace", EXEC_LOOP, "--trace", path,
                             NULL);
        assert_refused(1, path, cases[i].problem, st, out);
    }
    snprintf(path, sizeof(path), "%s/missing.trace", dir);
    int st = run_loadgen(out, sizeof(out), true, "--socket", "/tmp/x.sock", "--trace", path, NULL);
    assert_refused(1, path, "No such file or directory", st, out);
    remove_dir(dir);
}

static void test_missing_socket_asks_for_the_collector(void **state)
{
    (void)state;
    char out[8192];
    int st = run_loadgen(out, sizeof(out), true, "--socket", "/tmp/no-such-dir-loadgen/s.sock", "--trace", EXEC_LOOP,
                         NULL);
    assert_refused(1, "/tmp/no-such-dir-loadgen/s.sock", "is the collector running?", st, out);
    /* A socket file nobody listens on: ECONNREFUSED, same advice. */
    char dir[64], path[96];
    make_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/stale.sock", dir);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
    assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    close(fd);
    st = run_loadgen(out, sizeof(out), true, "--socket", path, "--trace", EXEC_LOOP, NULL);
    assert_refused(1, path, "is the collector running?", st, out);
    remove_dir(dir);
}

static void test_refused_handshakes(void **state)
{
    (void)state;
    char out[8192];
    struct fake_collector f;
    fake_start(&f, CLOSE_AT_ONCE, 0);
    int st = run_loadgen(out, sizeof(out), true, "--socket", f.path, "--trace", EXEC_LOOP, NULL);
    fake_join(&f);
    assert_refused(1, f.path, "refused the handshake", st, out);

    fake_start(&f, ANSWER_GARBAGE, 0);
    st = run_loadgen(out, sizeof(out), true, "--socket", f.path, "--trace", EXEC_LOOP, NULL);
    fake_join(&f);
    assert_refused(1, f.path, "refused the handshake (bad answer)", st, out);
}

static void test_collector_closing_is_an_error(void **state)
{
    (void)state;
    char out[8192];
    struct fake_collector f;
    fake_start(&f, CLOSE_AFTER_100, 0);
    int st = run_loadgen(out, sizeof(out), true, "--socket", f.path, "--trace", EXEC_LOOP, "--mode", "block",
                         "--messages", "1000000", NULL);
    fake_join(&f);
    assert_int_equal(f.received, 100);
    assert_refused(1, "connection 1 (" EXEC_LOOP "): send failed", "the collector closed the connection", st, out);
    assert_non_null(strstr(out, "Errors      1 connection ended early"));
}

/* ---- 2. against a real seccheckd ---- */

/* 4 block-mode connections, alternating exec_loop and drops, 5000 each. */
static void run_block_5000x4(const char *socket)
{
    char out[8192];
    int st = run_loadgen(out, sizeof(out), false, "--socket", socket, "--mode", "block", "--connections", "4",
                         "--trace", EXEC_LOOP, "--trace", DROPS, "--messages", "5000", "--json", NULL);
    assert_int_equal(st, 0);
    assert_int_equal(JSON_INT(out, "sent"), 20000);
    assert_int_equal(JSON_INT(out, "dropped"), 0);
    assert_int_equal(JSON_INT(out, "errors"), 0);
    assert_int_equal(JSON_INT(out, "connections"), 4);
}

static void test_discard_daemon_receives_everything(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    const char *args[] = {"--sink", "discard", NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    run_block_5000x4(d.socket);
    assert_int_equal(daemon_stop(&d), 0);
    char *log = daemon_read_log(&d);
    if (!strstr(log, "20000 received = 0 stored + 20000 discarded + 0 rejected + 0 store_failed"))
        fail_msg("daemon summary: %s", log);
    /* Headers carry loadgen's own drop count (0 here), not drops.trace's
     * recorded ones, which would also go backwards on every loop. */
    assert_non_null(strstr(log, "sandbox-reported drops 0"));
    free(log);
    daemon_cleanup(&d);
}

static void test_sqlite_daemon_stores_everything(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    assert_true(daemon_start(&d, SECCHECKD_BIN, NULL));
    run_block_5000x4(d.socket);
    assert_int_equal(daemon_stop(&d), 0);
    assert_int_equal(db_query_int(d.db, "SELECT received FROM runs"), 20000);
    assert_int_equal(db_query_int(d.db, "SELECT stored FROM runs"), 20000);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM events"), 20000);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM connections WHERE messages = 5000 "
                                        "AND close_reason = 'eof' AND client_version = 1"), 4);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM connections"), 4);
    assert_int_equal(db_query_int(d.db, "SELECT max(dropped_count) FROM events"), 0);
    assert_int_equal(db_query_int(d.db, "SELECT sum(sandbox_dropped) FROM connections"), 0);
    /* Both traces were replayed: exec_loop has execs, drops has writes. */
    assert_true(db_query_int(d.db, "SELECT count(*) FROM events WHERE type_name = 'SENTRY_EXEC'") > 0);
    assert_true(db_query_int(d.db, "SELECT count(*) FROM events WHERE type_name = 'SYSCALL_WRITE'") > 0);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM events WHERE decode_error IS NOT NULL"), 0);
    daemon_cleanup(&d);
}

/* ---- 3. sentry mode: drops, and the count in every header ---- */

static void test_sentry_drops_and_reports_them(void **state)
{
    (void)state;
    char out[8192];
    struct fake_collector f;
    /* Paced over ~1 s so streaming goes on after the 300 ms stall: the
     * headers after it must carry the drops made during it. */
    fake_start(&f, STALL_THEN_READ, 300);
    int st = run_loadgen(out, sizeof(out), false, "--socket", f.path, "--trace", EXEC_LOOP, "--mode", "sentry",
                         "--messages", "20000", "--rate", "20000", "--json", NULL);
    fake_join(&f);
    assert_int_equal(st, 0);
    long long sent = JSON_INT(out, "sent"), dropped = JSON_INT(out, "dropped");
    assert_true(f.handshake_ok);
    assert_true(dropped > 0);
    assert_int_equal(sent + dropped, 20000);
    assert_int_equal(f.received, sent);
    assert_true(f.headers_valid);
    assert_true(f.dropped_monotonic);
    assert_true(f.last_dropped > 0);
    /* The last packet said how many were dropped before it; all sent. */
    assert_int_equal((long long)f.last_dropped + (long long)f.received, 20000);
    assert_int_equal(f.last_dropped, dropped);
    /* What the collector can know: the count the last header sent carried. */
    assert_int_equal(JSON_INT(out, "dropped_reported"), f.last_dropped);
}

static void test_retries_prevent_drops(void **state)
{
    (void)state;
    char out[8192];
    struct fake_collector f;
    /* Control: the same slow reader without retries makes loadgen drop. */
    fake_start(&f, READ_SLOWLY, 0);
    int st = run_loadgen(out, sizeof(out), false, "--socket", f.path, "--trace", EXEC_LOOP, "--messages", "3000",
                         "--json", NULL);
    fake_join(&f);
    assert_int_equal(st, 0);
    assert_true(JSON_INT(out, "dropped") > 0);
    assert_int_equal(f.received, JSON_INT(out, "sent"));

    fake_start(&f, READ_SLOWLY, 0);
    st = run_loadgen(out, sizeof(out), false, "--socket", f.path, "--trace", EXEC_LOOP, "--messages", "3000",
                     "--retries", "1000", "--backoff", "10us", "--backoff-max", "1ms", "--json", NULL);
    fake_join(&f);
    assert_int_equal(st, 0);
    assert_int_equal(JSON_INT(out, "dropped"), 0);
    assert_int_equal(JSON_INT(out, "sent"), 3000);
    assert_int_equal(f.received, 3000);
    assert_int_equal(f.last_dropped, 0);
}

/* ---- 4. output formats ---- */

static void test_json_output(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    const char *args[] = {"--sink", "discard", NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    char out[8192];
    int st = run_loadgen(out, sizeof(out), false, "--socket", d.socket, "--trace", EXEC_LOOP, "--connections", "3",
                         "--mode", "block", "--json", NULL);
    assert_int_equal(st, 0);
    assert_int_equal(JSON_INT(out, "connections"), 3);
    assert_int_equal(JSON_INT(out, "sent"), 3 * 1219);   /* default: one pass of exec_loop's 1219 */
    assert_int_equal(JSON_INT(out, "dropped"), 0);
    struct replay_trace t;
    char err[512];
    assert_int_equal(replay_trace_load(&t, EXEC_LOOP, err, sizeof(err)), 0);
    assert_int_equal(JSON_INT(out, "bytes"), 3 * (long long)t.bytes);   /* packets only */
    replay_trace_free(&t);
    assert_true(json_number(out, "seconds") > 0);
    assert_true(json_number(out, "msgs_per_s") > 0);
    assert_true(json_number(out, "mb_per_s") > 0);
    assert_true(json_number(out, "drop_pct") == 0);
    assert_int_equal(JSON_INT(out, "errors"), 0);
    char *mode = json_text(out, "mode");
    assert_string_equal(mode, "block");
    free(mode);
    /* JSON replaces the text output: one object, one line. */
    assert_int_equal(out[0], '{');
    assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);
    assert_null(strstr(out, "Sent "));
    assert_int_equal(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}

static void test_benchmark_line(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    const char *args[] = {"--sink", "discard", NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    char out[8192];
    int st = run_loadgen(out, sizeof(out), false, "--socket", d.socket, "--trace", EXEC_LOOP, "--connections", "2",
                         "--messages", "500", "--mode", "block", NULL);
    assert_int_equal(st, 0);
    regex_t re;
    assert_int_equal(regcomp(&re, "^Benchmark[^[:space:]]+[[:space:]]+([0-9]+)[[:space:]]+[0-9.]+ ns/op"
                                  "[[:space:]]+[0-9.]+ msgs/s[[:space:]]+[0-9.]+ MB/s[[:space:]]+[0-9.]+ drop%$",
                             REG_EXTENDED | REG_NEWLINE), 0);
    regmatch_t m[2];
    if (regexec(&re, out, 2, m, 0) != 0)
        fail_msg("no benchmark line in: %s", out);
    assert_int_equal(strtoll(out + m[1].rm_so, NULL, 10), 1000);   /* iterations = messages sent */
    assert_non_null(strstr(out, "BenchmarkLoadgen/mode=block/conns=2/trace=exec_loop"));
    assert_non_null(strstr(out, "Sent        1000 messages"));
    assert_non_null(strstr(out, "Dropped     0 (0.000%)"));

    st = run_loadgen(out, sizeof(out), false, "--socket", d.socket, "--trace", EXEC_LOOP, "--messages", "10",
                     "--bench-name", "myRun/x=1", NULL);
    assert_int_equal(st, 0);
    /* Go's format: "Benchmark" then a capital, or benchstat skips the line. */
    if (regexec(&re, out, 2, m, 0) != 0 || strncmp(out + m[0].rm_so, "BenchmarkMyRun/x=1", 18) != 0)
        fail_msg("no BenchmarkMyRun/x=1 line in: %s", out);
    regfree(&re);
    assert_int_equal(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}

/* ---- 5. pacing and duration ---- */

static void test_rate_paces_and_duration_stops(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    const char *args[] = {"--sink", "discard", NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    char out[8192];
    int st = run_loadgen(out, sizeof(out), false, "--socket", d.socket, "--trace", EXEC_LOOP, "--duration", "0.5",
                         "--rate", "1000", "--connections", "2", "--json", NULL);
    assert_int_equal(st, 0);
    long long sent = JSON_INT(out, "sent");
    if (sent < 700 || sent > 1300)
        fail_msg("2 connections x 1000/s x 0.5 s sent %lld", sent);
    double seconds = json_number(out, "seconds");
    assert_true(seconds >= 0.45 && seconds < 1.0);

    /* Without a message limit, only --duration ends the run. */
    st = run_loadgen(out, sizeof(out), false, "--socket", d.socket, "--trace", EXEC_LOOP, "--duration", "300ms",
                     "--mode", "block", "--json", NULL);
    assert_int_equal(st, 0);
    assert_true(JSON_INT(out, "sent") > 1219);   /* it looped past one pass */
    seconds = json_number(out, "seconds");
    assert_true(seconds >= 0.29 && seconds < 1.0);
    assert_int_equal(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_help_documents_every_option),
        cmocka_unit_test(test_bad_traces_are_named),
        cmocka_unit_test(test_missing_socket_asks_for_the_collector),
        cmocka_unit_test(test_refused_handshakes),
        cmocka_unit_test(test_collector_closing_is_an_error),
        cmocka_unit_test(test_discard_daemon_receives_everything),
        cmocka_unit_test(test_sqlite_daemon_stores_everything),
        cmocka_unit_test(test_sentry_drops_and_reports_them),
        cmocka_unit_test(test_retries_prevent_drops),
        cmocka_unit_test(test_json_output),
        cmocka_unit_test(test_benchmark_line),
        cmocka_unit_test(test_rate_paces_and_duration_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
