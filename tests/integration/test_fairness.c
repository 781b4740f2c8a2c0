/* Integration: one noisy sandbox must not make a quiet one drop. A flood
 * (seccheck-loadgen, 4 connections in block mode, flat out) keeps the
 * writer queue full; beside it, quiet sandboxes send at a steady rate the
 * way gVisor does (sentry mode: a full socket buffer means a dropped event).
 * Batches are large, so one commit takes long enough that a pause of every
 * connection at once would overflow the quiet sandboxes' socket buffers.
 *   - block: the quiet ones drop nothing and are never paused; the flood is
 *     paused, and counted (connections table, metrics), and stored whole;
 *   - drop: the quiet ones lose nothing; what is dropped (queue_full) is the
 *     flood's.
 * FAIRNESS_SECCHECKD_BIN runs another binary (e.g. a build before the fix,
 * to see the test fail).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon.h"

#define FLOOD_CONNS 4
#define QUIET_CONNS 3
#define QUIET_RATE "1000"       /* events/s each: ~280 fit in a socket buffer, ~0.28 s */
#define QUIET_MESSAGES 2500     /* 2.5 s at that rate */

struct loadgen {
    pid_t pid;
    char out[320];
};

/* One test's daemon and load generators: the teardown stops them all, a
 * failed assertion included. */
struct fixture {
    struct daemon d;
    struct loadgen flood, quiet;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    *state = f;
    return 0;
}

static void loadgen_kill(struct loadgen *g)
{
    if (g->pid > 0) {
        kill(g->pid, SIGKILL);
        reaper_wait(g->pid);
        g->pid = 0;
    }
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    loadgen_kill(&f->flood);
    loadgen_kill(&f->quiet);
    daemon_cleanup(&f->d);
    free(f);
    reaper_clear();   /* anything else the test started */
    return 0;
}

/* Starts seccheck-loadgen --json on the daemon's socket with args
 * (NULL-terminated); its output goes to DIR/name.json. */
static void loadgen_start(struct fixture *f, struct loadgen *g, const char *name, const char *const *args)
{
    snprintf(g->out, sizeof(g->out), "%s/%s.json", f->d.dir, name);
    const char *argv[32] = {LOADGEN_BIN, "--socket", f->d.socket, "--json"};
    int n = 4;
    for (int i = 0; args[i] && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    int fd = open(g->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    g->pid = reaper_fork();   /* stopped by the reaper if an assertion fails */
    if (g->pid == 0) {
        dup2(fd, 1);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(fd);
    assert_true(g->pid > 0);
}

/* Waits for it (up to timeout_ms); it must exit 0. */
static void loadgen_wait(struct loadgen *g, int timeout_ms)
{
    int code;
    for (int waited = 0; (code = reaper_poll(g->pid)) < 0; waited += 10) {
        if (waited >= timeout_ms)
            fail_msg("seccheck-loadgen (%s) still running after %d ms", g->out, timeout_ms);
        sleep_ms(10);
    }
    g->pid = 0;
    assert_int_equal(code, 0);
}

/* GET /metrics from the daemon's unix:DIR/metrics.sock endpoint: the whole
 * answer (malloc'd), or NULL. */
static char *scrape(const struct daemon *d)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    char path[300];
    snprintf(path, sizeof(path), "%s/metrics.sock", d->dir);
    if (strlen(path) >= sizeof(a.sun_path))
        return NULL;
    memcpy(a.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    const char get[] = "GET /metrics HTTP/1.0\r\n\r\n";
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    if (buf && send(fd, get, sizeof(get) - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof(get) - 1)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t n = 1;
        while (n > 0 && poll(&p, 1, 5000) > 0) {
            if (len + 4096 > cap && !(buf = realloc(buf, cap *= 2)))
                break;
            n = recv(fd, buf + len, cap - len - 1, 0);
            len += n > 0 ? (size_t)n : 0;
        }
    }
    close(fd);
    if (buf)
        buf[len] = '\0';
    return buf;
}

/* While the quiet connections (ids 5 to 7: the flood's are 1 to 4) stream:
 * the metrics show the flood's connections paused, the quiet ones not. */
static void check_pause_metrics(const struct daemon *d)
{
    char *text = NULL;
    double flood = 0;
    for (int tries = 0; tries < 100 && flood <= 0; tries++, sleep_ms(20)) {
        free(text);
        text = scrape(d);
        flood = 0;
        for (int id = 1; text && id <= FLOOD_CONNS; id++) {
            char series[96];
            snprintf(series, sizeof(series), "seccheckd_connection_pauses_total{conn=\"%d\"}", id);
            flood += metric(text, series) > 0 ? metric(text, series) : 0;
        }
    }
    assert_non_null(text);
    assert_true(flood > 0);
    assert_true(metric(text, "seccheckd_pauses_total") >= flood);
    assert_true(metric(text, "seccheckd_paused_seconds_total") > 0);
    for (int id = FLOOD_CONNS + 1; id <= FLOOD_CONNS + QUIET_CONNS; id++) {
        char series[96];
        snprintf(series, sizeof(series), "seccheckd_connection_pauses_total{conn=\"%d\"}", id);
        assert_true(metric(text, series) == 0);   /* present (open), never paused */
    }
    free(text);
}

/* The daemon with large batches (a commit takes a while) and a short queue,
 * then the flood, and once its connections are open, the quiet ones. */
static void flood_and_quiet(struct fixture *f, const char *on_full)
{
    daemon_prepare(&f->d);
    char metrics[320];
    snprintf(metrics, sizeof(metrics), "unix:%s/metrics.sock", f->d.dir);
    /* A smaller --read-budget keeps loop turns short under sanitizers and
     * on a loaded machine (the quiet ones wait a turn at most). */
    const char *args[] = {"--on-full", on_full, "--batch-size", "16384", "--queue-max", "2", "--read-budget", "64",
                          "--metrics-listen", metrics, NULL};
    const char *bin = getenv("FAIRNESS_SECCHECKD_BIN");
    assert_true(daemon_start(&f->d, bin ? bin : SECCHECKD_BIN, args));
    const char *flood[] = {"--trace", TRACES_DIR "/mixed_syscalls.trace", "--connections", "4", "--mode", "block",
                           "--duration", "4", NULL};
    loadgen_start(f, &f->flood, "flood", flood);
    assert_true(daemon_wait_log(&f->d, " opened: ", FLOOD_CONNS, 5000));
    sleep_ms(500);   /* the queue fills */
    char messages[16];
    snprintf(messages, sizeof(messages), "%d", QUIET_MESSAGES);
    const char *quiet[] = {"--trace", TRACES_DIR "/redis_rw.trace", "--connections", "3", "--mode", "sentry",
                           "--rate", QUIET_RATE, "--messages", messages, NULL};
    loadgen_start(f, &f->quiet, "quiet", quiet);
}

/* Stops the daemon: a clean exit and a summary that adds up. */
static void stop_cleanly(struct fixture *f)
{
    int status = daemon_stop_within(&f->d, 15000);
    char *log = daemon_read_log(&f->d);
    if (status != 0)
        fprintf(stderr, "daemon exited %d; log:\n%s\n", status, log);
    assert_int_equal(status, 0);
    assert_null(strstr(log, "MISMATCH"));
    free(log);
    assert_int_equal(
        dbq(&f->d, "SELECT received - stored - discarded - rejected - store_failed FROM runs"), 0);
}

/* Quiet connections are those opened after the flood's. */
#define QUIET_WHERE "id > (SELECT min(id) FROM connections) + 3"
#define FLOOD_WHERE "id <= (SELECT min(id) FROM connections) + 3"

static void test_block_pauses_only_the_flood(void **state)
{
    struct fixture *f = *state;
    flood_and_quiet(f, "block");
    assert_true(daemon_wait_log(&f->d, " opened: ", FLOOD_CONNS + QUIET_CONNS, 5000));
    check_pause_metrics(&f->d);
    loadgen_wait(&f->quiet, 30000);
    loadgen_wait(&f->flood, 30000);
    long long quiet_dropped = json_file_number(f->quiet.out, "dropped");
    long long quiet_sent = json_file_number(f->quiet.out, "sent");
    long long flood_sent = json_file_number(f->flood.out, "sent");
    stop_cleanly(f);
    long long flood_paused = dbq(&f->d, "SELECT sum(paused_count) FROM connections WHERE " FLOOD_WHERE);
    long long quiet_paused = dbq(&f->d, "SELECT sum(paused_count) FROM connections WHERE " QUIET_WHERE);
    fprintf(stderr, "block: quiet sent %lld dropped %lld paused %lld; flood sent %lld paused %lld times (%lld ms)\n",
            quiet_sent, quiet_dropped, quiet_paused, flood_sent, flood_paused,
            dbq(&f->d, "SELECT sum(paused_ns) / 1000000 FROM connections WHERE " FLOOD_WHERE));
    assert_int_equal(quiet_dropped, 0);
    assert_int_equal(dbq(&f->d, "SELECT sum(sandbox_dropped) FROM connections WHERE " QUIET_WHERE), 0);
    assert_int_equal(quiet_paused, 0);
    assert_int_equal(dbq(&f->d, "SELECT count(*) FROM connections WHERE " QUIET_WHERE), QUIET_CONNS);
    assert_true(flood_paused > 0);
    assert_true(dbq(&f->d, "SELECT sum(paused_ns) FROM connections WHERE " FLOOD_WHERE) > 0);
    /* Nothing lost in block mode: every event sent is stored. */
    assert_int_equal(dbq(&f->d, "SELECT stored FROM runs"), quiet_sent + flood_sent);
}

static void test_drop_lands_on_the_flood(void **state)
{
    struct fixture *f = *state;
    flood_and_quiet(f, "drop");
    loadgen_wait(&f->quiet, 30000);
    loadgen_wait(&f->flood, 30000);
    long long quiet_dropped = json_file_number(f->quiet.out, "dropped");
    stop_cleanly(f);
    long long quiet_rejected = dbq(&f->d, "SELECT sum(rejected) FROM connections WHERE " QUIET_WHERE);
    long long flood_rejected = dbq(&f->d, "SELECT sum(rejected) FROM connections WHERE " FLOOD_WHERE);
    fprintf(stderr, "drop: quiet dropped %lld (sandbox) + %lld (queue_full); flood queue_full %lld\n", quiet_dropped,
            quiet_rejected, flood_rejected);
    assert_int_equal(quiet_dropped, 0);
#ifdef SECCHECKD_SANITIZED
    /* A sanitized writer commits a 16k-event batch so slowly that a quiet
     * connection's own uncommitted backlog can pass the share, shrunk to a
     * sliver once the reserve is in flight: a few of its packets are then
     * dropped (56-235 of 7,500 seen under ASan). The old policy dropped
     * ~5,800; the plain build holds the line at 0. */
    assert_true(quiet_rejected * 20 <= QUIET_CONNS * QUIET_MESSAGES);
#else
    assert_int_equal(quiet_rejected, 0);
#endif
    assert_int_equal(dbq(&f->d, "SELECT sum(messages) FROM connections WHERE " QUIET_WHERE),
                     QUIET_CONNS * QUIET_MESSAGES);
    assert_true(flood_rejected > 0);
    /* The run counts every connection's, the quiet ones' too (under sanitizers). */
    assert_int_equal(dbq(&f->d, "SELECT rejected_queue_full FROM runs"), flood_rejected + quiet_rejected);
    assert_int_equal(dbq(&f->d, "SELECT sum(paused_count) FROM connections"), 0);   /* drop never pauses */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_block_pauses_only_the_flood, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drop_lands_on_the_flood, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
