/* Integration: the Prometheus endpoint (--metrics-listen). The real daemon
 * gets recorded traces and malformed packets over several connections;
 * once it is idle, a plain-socket scrape must show exactly what was sent
 * (received, stored = rows in the database, rejected by reason, received
 * by type as counted from the trace headers, sandbox drops), and the
 * endpoint must stay bounded against idle, oversized and wrong requests,
 * refuse non-loopback addresses, serve on a unix socket, and come back
 * after a SIGUSR2 restart. */
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon.h"
#include "decode.h"
#include "metrics.h"
#include "replay.h"
#include "wire.h"

#define SCRAPE "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
#define N_SHORT 3
#define N_BAD_HEADER 2

static const char *const trace_names[] = {"exec_loop", "mixed_syscalls", "drops"};
#define NTRACES 3

/* ---- small helpers ---- */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A port nobody listens on now: bind port 0 and let it go. */
static int free_tcp_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static int connect_tcp(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static struct sockaddr_un unix_address(const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    assert_true(strlen(path) < sizeof(a.sun_path));
    memcpy(a.sun_path, path, strlen(path) + 1);
    return a;
}

static int connect_unix(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = unix_address(path);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Writes request, reads to EOF (at most timeout_ms in all); the whole
 * answer, malloc'd, or NULL if the connection failed or timed out. */
static char *exchange(int fd, const char *request, size_t request_len, int timeout_ms)
{
    if (fd < 0)
        return NULL;
    size_t off = 0;
    while (off < request_len) {
        ssize_t n = send(fd, request + off, request_len - off, MSG_NOSIGNAL);
        if (n <= 0)
            break;   /* the server may close early (e.g. on an oversized request): read what it said */
        off += (size_t)n;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int left = (int)(deadline - now_ms());
        if (left <= 0 || poll(&p, 1, left) <= 0) {
            free(buf);
            buf = NULL;
            break;
        }
        if (len + 4096 > cap)
            buf = realloc(buf, cap *= 2);
        ssize_t n = recv(fd, buf + len, cap - len - 1, 0);
        if (n <= 0)
            break;   /* EOF, or reset after the answer */
        len += (size_t)n;
    }
    close(fd);
    if (buf)
        buf[len] = '\0';
    return buf;
}

static char *scrape_tcp(int port)
{
    return exchange(connect_tcp(port), SCRAPE, strlen(SCRAPE), 10000);
}

static int http_status(const char *answer)
{
    int status = -1;
    if (!answer || sscanf(answer, "HTTP/1.%*d %d", &status) != 1)
        return -1;
    return status;
}

__attribute__((format(printf, 2, 3))) static double metricf(const char *text, const char *fmt, ...)
{
    char series[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(series, sizeof(series), fmt, ap);
    va_end(ap);
    return metric(text, series);
}

static long long sum_series(const char *text, const char *prefix)
{
    long long sum = 0;
    size_t n = strlen(prefix);
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (strncmp(line, prefix, n) == 0)
            sum += atoll(strchr(line, ' ') + 1);
    return sum;
}

/* Scrapes until the daemon is idle: no connection open, nothing in flight,
 * every received packet accounted for. The text, or a failure. */
static char *scrape_when_idle(int port)
{
    for (int64_t deadline = now_ms() + 15000; now_ms() < deadline; sleep_ms(50)) {
        char *text = scrape_tcp(port);
        if (!text)
            continue;
        double received = metric(text, "seccheckd_messages_received_total");
        double settled = metric(text, "seccheckd_messages_stored_total") +
                         metric(text, "seccheckd_messages_discarded_total") +
                         metric(text, "seccheckd_messages_store_failed_total") +
                         sum_series(text, "seccheckd_messages_rejected_total{");
        if (metric(text, "seccheckd_connections_open") == 0 && metric(text, "seccheckd_writer_queue_depth") == 0 &&
            received > 0 && received == settled)
            return text;
        free(text);
    }
    fail_msg("the daemon did not become idle");
    return NULL;
}

static void start_with_metrics(struct daemon *d, const char *addr)
{
    const char *args[] = {"--metrics-listen", addr, "--flush-ms", "20", NULL};
    daemon_prepare(d);
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
}

static void start_on_port(struct daemon *d, int *port)
{
    char addr[64];
    *port = free_tcp_port();
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", *port);
    start_with_metrics(d, addr);
    assert_true(daemon_log_count(d, "metrics: serving http://127.0.0.1:") > 0);
}

/* ---- sending ---- */

struct sender {
    const char *socket;
    const struct replay_trace *trace;
    bool malformed;   /* then N_SHORT short packets and N_BAD_HEADER bad header_size ones */
    bool ok;
};

static bool send_malformed(int fd)
{
    static const uint8_t short_pkt[4] = {1, 2, 3, 4};
    uint8_t bad[16];
    wire_header_write(bad, 7, 0);
    memset(bad + 8, 0, 8);
    bad[0] = 4;   /* header_size below the minimum of 8 */
    for (int i = 0; i < N_SHORT; i++)
        if (replay_send(fd, short_pkt, sizeof(short_pkt)) != 0)
            return false;
    for (int i = 0; i < N_BAD_HEADER; i++)
        if (replay_send(fd, bad, sizeof(bad)) != 0)
            return false;
    return true;
}

static void *send_trace(void *arg)
{
    struct sender *s = arg;
    int fd = replay_open(s->socket, s->trace->version);
    if (fd < 0)
        return NULL;
    bool ok = replay_packets(fd, s->trace) == 0;
    if (ok && s->malformed)
        ok = send_malformed(fd);
    close(fd);
    s->ok = ok;
    return NULL;
}

/* Each trace over its own connection, all at once; the last one is
 * followed by the malformed packets. */
static void replay_all(const char *socket, const struct trace_fixture *f)
{
    pthread_t threads[NTRACES];
    struct sender senders[NTRACES];
    for (int i = 0; i < NTRACES; i++) {
        senders[i] = (struct sender){.socket = socket, .trace = &f->traces[i], .malformed = i == NTRACES - 1};
        assert_int_equal(pthread_create(&threads[i], NULL, send_trace, &senders[i]), 0);
    }
    for (int i = 0; i < NTRACES; i++) {
        pthread_join(threads[i], NULL);
        assert_true(senders[i].ok);
    }
}

/* ---- what the traces hold, from their headers ---- */

struct expected {
    long long packets;                       /* sent, malformed included */
    long long events;                        /* with a valid header */
    long long by_type[DECODE_TYPE_MAX + 2];  /* as the daemon counts them: last slot, larger types */
    long long sandbox_dropped;
};

static void expect_trace(struct expected *e, const struct replay_trace *t)
{
    uint32_t last = 0;
    for (size_t i = 0; i < t->count; i++) {
        struct wire_header h;
        assert_int_equal(wire_header_parse(t->packets[i], t->lengths[i], &h), WIRE_OK);
        e->by_type[h.message_type <= DECODE_TYPE_MAX ? h.message_type : DECODE_TYPE_MAX + 1]++;
        e->sandbox_dropped += wire_dropped_delta(last, h.dropped_count);
        last = h.dropped_count;
    }
    e->packets += (long long)t->count;
    e->events += (long long)t->count;
}

static void expect_all(struct expected *e, const struct trace_fixture *f)
{
    memset(e, 0, sizeof(*e));
    for (int i = 0; i < NTRACES; i++)
        expect_trace(e, &f->traces[i]);
    e->packets += N_SHORT + N_BAD_HEADER;
}

/* ---- checks ---- */

static void assert_by_type(const char *text, const struct expected *e)
{
    long long unknown = e->by_type[DECODE_TYPE_MAX + 1];
    for (uint16_t t = 0; t <= DECODE_TYPE_MAX; t++) {
        const char *name = decode_type_name(t);
        if (!name) {
            unknown += e->by_type[t];
            continue;
        }
        double got = metricf(text, "seccheckd_messages_received_by_type_total{type=\"%s\"}", name);
        if (e->by_type[t] == 0 ? got != -1 : got != (double)e->by_type[t])
            fail_msg("type %s: scraped %.0f, the traces hold %lld", name, got, e->by_type[t]);
    }
    assert_true(metric(text, "seccheckd_messages_received_by_type_total{type=\"unknown\"}") ==
                (unknown ? (double)unknown : -1));
    assert_int_equal(sum_series(text, "seccheckd_messages_received_by_type_total{"), e->events);
}

/* Cumulative, non-decreasing buckets; +Inf == _count > 0; a sane sum. */
static void assert_histogram(const char *text)
{
    const char *prefix = "seccheckd_batch_commit_seconds_bucket{le=\"";
    double prev = 0, count = metric(text, "seccheckd_batch_commit_seconds_count");
    int buckets = 0;
    for (const char *line = strstr(text, prefix); line; line = strstr(line + 1, prefix)) {
        double v = strtod(strchr(line, ' ') + 1, NULL);
        assert_true(v >= prev);
        prev = v;
        buckets++;
    }
    assert_true(buckets >= 5);
    assert_true(count > 0);
    assert_true(metric(text, "seccheckd_batch_commit_seconds_bucket{le=\"+Inf\"}") == count);
    assert_true(prev == count);
    assert_true(metric(text, "seccheckd_batch_commit_seconds_sum") > 0);
}

static void assert_type_lines(const char *text)
{
    static const char *const counters[] = {"connections_total", "messages_received_total",
                                           "messages_stored_total", "messages_rejected_total",
                                           "sandbox_dropped_total"};
    for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
        char want[128];
        snprintf(want, sizeof(want), "# TYPE seccheckd_%s counter\n", counters[i]);
        assert_non_null(strstr(text, want));
    }
    assert_non_null(strstr(text, "# TYPE seccheckd_connections_open gauge\n"));
    assert_non_null(strstr(text, "# TYPE seccheckd_batch_commit_seconds histogram\n"));
    assert_non_null(strstr(text, "# HELP seccheckd_messages_received_total "));
}

/* ---- tests ---- */

static int setup(void **state)
{
    return trace_fixture_setup(state, trace_names, NTRACES);
}

/* The counts after a replay, against the traces, the database and the
 * exit summary. */
static void test_counts_match_replay(void **state)
{
    const struct trace_fixture *f = *state;
    struct daemon d;
    int port;
    start_on_port(&d, &port);
    replay_all(d.socket, f);
    struct expected e;
    expect_all(&e, f);

    free(scrape_when_idle(port));
    sleep_ms(200);   /* and let the last commit settle */
    char *text = scrape_when_idle(port);
    long long rows = db_query_int(d.db, "SELECT count(*) FROM events");
    assert_true(metric(text, "seccheckd_messages_received_total") == (double)e.packets);
    assert_int_equal(rows, e.events);
    assert_true(metric(text, "seccheckd_messages_stored_total") == (double)rows);
    assert_true(metric(text, "seccheckd_messages_rejected_total{reason=\"short_packet\"}") == N_SHORT);
    assert_true(metric(text, "seccheckd_messages_rejected_total{reason=\"bad_header\"}") == N_BAD_HEADER);
    assert_true(metric(text, "seccheckd_messages_rejected_total{reason=\"oversize\"}") == 0);
    assert_true(metric(text, "seccheckd_messages_rejected_total{reason=\"queue_full\"}") == 0);
    assert_true(metric(text, "seccheckd_messages_discarded_total") == 0);
    assert_true(metric(text, "seccheckd_messages_store_failed_total") == 0);
    assert_true(metric(text, "seccheckd_messages_undecoded_total{reason=\"unknown_type\"}") == 0);
    assert_by_type(text, &e);
    assert_true(e.sandbox_dropped > 0);   /* drops.trace reports some */
    assert_true(metric(text, "seccheckd_sandbox_dropped_total") == (double)e.sandbox_dropped);
    assert_true(metric(text, "seccheckd_connections_total") == NTRACES);
    assert_true(metric(text, "seccheckd_connections_open") == 0);
    assert_true(metric(text, "seccheckd_handshake_failures_total") == 0);
    assert_histogram(text);
    assert_true(metric(text, "seccheckd_db_bytes") > 0);
    assert_true(metric(text, "seccheckd_db_wal_bytes") >= 0);
    double stall = metric(text, "seccheckd_loop_longest_stall_seconds");
    double own = metric(text, "seccheckd_loop_longest_own_stall_seconds");
    assert_true(stall >= 0 && own >= 0 && own <= stall);   /* its own work is part of all stalls */
    assert_type_lines(text);
    free(text);

    assert_int_equal(daemon_stop(&d), 0);
    char *log = daemon_read_log(&d), want[128];
    snprintf(want, sizeof(want), "summary: %lld received = %lld stored", e.packets, rows);
    assert_non_null(strstr(log, want));
    free(log);
    daemon_cleanup(&d);
}

/* A packet counts as received when it is read, before its batch is
 * committed: with a flush interval longer than the test, everything stays
 * in the open batch, and received says so while stored is still 0. */
static void test_received_before_commit(void **state)
{
    const struct trace_fixture *f = *state;
    struct replay_trace part = f->traces[0];
    part.count = 50;   /* far from filling a batch */
    int port = free_tcp_port();
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    const char *args[] = {"--metrics-listen", addr, "--flush-ms", "60000", "--batch-size", "10000", NULL};
    struct daemon d;
    daemon_prepare(&d);
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    assert_int_equal(replay_connection(d.socket, &part, part.version), 0);
    char *text = NULL;
    for (int64_t deadline = now_ms() + 10000; now_ms() < deadline; sleep_ms(50)) {
        free(text);
        text = scrape_tcp(port);
        if (text && metric(text, "seccheckd_messages_received_total") == 50)
            break;
    }
    assert_true(metric(text, "seccheckd_messages_received_total") == 50);
    assert_true(metric(text, "seccheckd_messages_stored_total") == 0);
    assert_true(metric(text, "seccheckd_batch_commit_seconds_count") == 0);
    free(text);
    assert_int_equal(daemon_stop(&d), 0);   /* and at exit everything is committed */
    char *log = daemon_read_log(&d);
    assert_non_null(strstr(log, "summary: 50 received = 50 stored"));
    free(log);
    daemon_cleanup(&d);
}

/* Status line and headers of a scrape; other paths and methods 404;
 * a request line that is not HTTP, 400. */
static void test_http(void **state)
{
    (void)state;
    struct daemon d;
    int port;
    start_on_port(&d, &port);
    char *ok = scrape_tcp(port);
    assert_int_equal(http_status(ok), 200);
    assert_non_null(strstr(ok, "\r\nContent-Type: text/plain; version=0.0.4"));
    assert_non_null(strstr(ok, "\r\nConnection: close\r\n"));
    const char *body = strstr(ok, "\r\n\r\n") + 4;
    char want[64];
    snprintf(want, sizeof(want), "\r\nContent-Length: %zu\r\n", strlen(body));
    assert_non_null(strstr(ok, want));
    free(ok);

    static const char *const not_found[] = {"GET / HTTP/1.1\r\n\r\n", "GET /metricsx HTTP/1.0\r\n\r\n",
                                            "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
                                            "GET /other HTTP/1.1\nHost: x\n\n"};
    for (size_t i = 0; i < sizeof(not_found) / sizeof(not_found[0]); i++) {
        char *a = exchange(connect_tcp(port), not_found[i], strlen(not_found[i]), 10000);
        assert_int_equal(http_status(a), 404);
        assert_null(strstr(a, "seccheckd_"));
        free(a);
    }
    const char *query = "GET /metrics?x=1 HTTP/1.0\r\n\r\n";
    char *q = exchange(connect_tcp(port), query, strlen(query), 10000);
    assert_int_equal(http_status(q), 200);
    free(q);
    char *bad = exchange(connect_tcp(port), "hello\r\n\r\n", strlen("hello\r\n\r\n"), 10000);
    assert_int_equal(http_status(bad), 400);
    free(bad);
    assert_int_equal(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}

/* Only loopback: anything else is refused before the daemon opens its
 * socket or database, with a message that says why. */
static void test_refuses_non_loopback(void **state)
{
    (void)state;
    static const char *const refused[] = {"0.0.0.0:9464", "192.0.2.1:9464", "[::]:9464", "example.com:9464",
                                          "127.0.0.1:99999", "9464", "unix:"};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        struct daemon d;
        daemon_prepare(&d);
        const char *args[] = {"--metrics-listen", refused[i], NULL};
        assert_false(daemon_start(&d, SECCHECKD_BIN, args));
        assert_int_equal(d.exit_status, 2);   /* a usage error */
        char *log = daemon_read_log(&d);
        assert_non_null(strstr(log, "--metrics-listen"));
        if (i < 3)
            assert_non_null(strstr(log, "is not a loopback address"));
        free(log);
        assert_int_not_equal(access(d.db, F_OK), 0);
        assert_int_not_equal(access(d.socket, F_OK), 0);
        daemon_cleanup(&d);
    }
}

/* A request that fills the 8 KiB buffer without ending gets 431 at once
 * (not at the idle timeout); a larger one is cut off as fast; a request
 * arriving a byte at a time is still read whole; the endpoint carries on. */
static void test_oversized_request(void **state)
{
    (void)state;
    struct daemon d;
    int port;
    start_on_port(&d, &port);
    size_t len = 3 * METRICS_REQUEST_MAX;
    char *req = malloc(len);
    memset(req, 'a', len);
    memcpy(req, "GET /metrics HTTP/1.1\r\nX-Long: ", 31);

    int64_t start = now_ms();
    char *a = exchange(connect_tcp(port), req, METRICS_REQUEST_MAX, METRICS_TIMEOUT_MS - 1000);
    assert_int_equal(http_status(a), 431);
    free(a);
    a = exchange(connect_tcp(port), req, len, METRICS_TIMEOUT_MS - 1000);
    assert_non_null(a);   /* closed well before the timeout; the 431 may be lost to a reset */
    if (a[0])
        assert_int_equal(http_status(a), 431);
    free(a);
    assert_true(now_ms() - start < METRICS_TIMEOUT_MS - 1000);
    free(req);

    int fd = connect_tcp(port);
    const char *scrape = SCRAPE;
    for (size_t i = 0; i < strlen(scrape); i++) {   /* one byte at a time */
        assert_int_equal(send(fd, &scrape[i], 1, MSG_NOSIGNAL), 1);
        sleep_ms(1);
    }
    char *ok = exchange(fd, "", 0, 10000);
    assert_int_equal(http_status(ok), 200);
    free(ok);
    assert_int_equal(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}

/* More idle connections than slots: a scrape still gets through well
 * before the idle timeout, the daemon holds a bounded number of
 * descriptors, and the idle connections are all closed in the end. */
static void test_idle_connections_bounded(void **state)
{
    (void)state;
    struct daemon d;
    int port;
    start_on_port(&d, &port);
    int before = open_fd_count(d.pid);
    enum { IDLE = METRICS_MAX_CLIENTS + 4 };
    int idle[IDLE];
    for (int i = 0; i < IDLE; i++) {
        idle[i] = connect_tcp(port);
        assert_true(idle[i] >= 0);
        if (i % 2)
            send(idle[i], "GET /met", 8, MSG_NOSIGNAL);   /* half a request, never finished */
    }
    sleep_ms(200);
    assert_true(open_fd_count(d.pid) <= before + METRICS_MAX_CLIENTS + 1);
    int64_t start = now_ms();
    char *text = exchange(connect_tcp(port), SCRAPE, strlen(SCRAPE), METRICS_TIMEOUT_MS - 1000);
    assert_int_equal(http_status(text), 200);
    assert_true(now_ms() - start < METRICS_TIMEOUT_MS - 1000);
    free(text);
    for (int i = 0; i < IDLE; i++) {
        struct pollfd p = {.fd = idle[i], .events = POLLIN};
        assert_int_equal(poll(&p, 1, 4 * METRICS_TIMEOUT_MS), 1);
        char c;
        assert_true(recv(idle[i], &c, 1, 0) <= 0);   /* closed by the daemon, no answer */
        close(idle[i]);
    }
    sleep_ms(100);
    assert_true(open_fd_count(d.pid) <= before);
    assert_int_equal(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}

/* unix:PATH: served, a stale socket replaced, a regular file never. */
static void test_unix_socket(void **state)
{
    const struct trace_fixture *f = *state;
    struct daemon d;
    daemon_prepare(&d);
    char path[320], addr[330];
    snprintf(path, sizeof(path), "%s/metrics.sock", d.dir);
    snprintf(addr, sizeof(addr), "unix:%s", path);
    const char *args[] = {"--metrics-listen", addr, NULL};

    FILE *file = fopen(path, "w");   /* a regular file: refused, kept */
    fclose(file);
    assert_false(daemon_start(&d, SECCHECKD_BIN, args));
    assert_int_equal(d.exit_status, 1);
    assert_true(daemon_log_count(&d, "is not a socket; refusing to replace it") > 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    unlink(path);

    int stale = socket(AF_UNIX, SOCK_STREAM, 0);   /* bound, never listening: stale */
    struct sockaddr_un a = unix_address(path);
    assert_int_equal(bind(stale, (struct sockaddr *)&a, sizeof(a)), 0);
    close(stale);
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));

    assert_int_equal(replay_connection(d.socket, &f->traces[0], f->traces[0].version), 0);
    char *text = NULL;
    for (int64_t deadline = now_ms() + 10000; now_ms() < deadline; sleep_ms(50)) {
        free(text);
        text = exchange(connect_unix(path), SCRAPE, strlen(SCRAPE), 10000);
        if (text && metric(text, "seccheckd_messages_stored_total") == (double)f->traces[0].count)
            break;
    }
    assert_int_equal(http_status(text), 200);
    assert_true(metric(text, "seccheckd_messages_received_total") == (double)f->traces[0].count);
    assert_true(metric(text, "seccheckd_messages_stored_total") == (double)f->traces[0].count);
    free(text);
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0660);
    assert_int_equal(daemon_stop(&d), 0);
    assert_int_not_equal(access(path, F_OK), 0);   /* removed at exit */
    daemon_cleanup(&d);
}

/* SIGUSR2 re-executes the daemon: the new image listens on the same port
 * again, and its counters start from zero. */
static void test_restart_reopens(void **state)
{
    (void)state;
    struct daemon d;
    int port;
    start_on_port(&d, &port);
    char *before = scrape_tcp(port);
    assert_int_equal(http_status(before), 200);
    free(before);
    kill(d.pid, SIGUSR2);
    char *text = NULL;
    for (int64_t deadline = now_ms() + 10000; now_ms() < deadline && !text; sleep_ms(50))
        if (daemon_log_count(&d, "metrics: serving") >= 2)
            text = scrape_tcp(port);
    assert_int_equal(http_status(text), 200);
    assert_true(metric(text, "seccheckd_messages_received_total") == 0);
    free(text);
    assert_int_equal(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}

/* The events and batches the log's retention lines say were deleted. */
static void retention_logged(const char *log, long long *events, long long *batches)
{
    *events = *batches = 0;
    for (const char *p = log; (p = strstr(p, "retention: deleted ")) != NULL; p++) {
        long long e = 0, b = 0;
        if (sscanf(p, "retention: deleted %lld event%*s in %lld batch", &e, &b) == 2) {
            *events += e;
            *batches += b;
        }
    }
}

static void write_config(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Retention deletes while no event arrives (the writer's idle upkeep:
 * no batch comes back to carry a count): the counter has it at once, and
 * the log says what went and why. */
/* with_rules: the rules' stage wraps the sink and passes the count on, and
 * the alerts of deleted events go with them. */
static void retention_deletions_counted(void **state, bool with_rules)
{
    const struct trace_fixture *f = *state;
    const struct replay_trace *t = &f->traces[1];
    struct daemon d;
    daemon_prepare(&d);
    char conf[320], addr[64], rules[320], settings[400] = "", text0[600];
    snprintf(conf, sizeof(conf), "%s/seccheckd.conf", d.dir);
    if (with_rules) {
        snprintf(rules, sizeof(rules), "%s/r.yaml", d.dir);
        write_config(rules, "- rule: Every exit\n  desc: d\n  condition: evt.type != container\n  output: o\n"
                            "  priority: Debug\n  warn_evttypes: false\n");
        snprintf(settings, sizeof(settings), "rules = %s\nalerts-rate = 0\n", rules);
    }
    snprintf(text0, sizeof(text0), "retain = 0\n%s", settings);
    write_config(conf, text0);
    int port = free_tcp_port();
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    const char *args[] = {"--config", conf, "--metrics-listen", addr, "--batch-size", "256", NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    assert_int_equal(replay_connection(d.socket, t, t->version), 0);
    assert_int_equal(replay_connection(d.socket, t, t->version), 0);
    char *text = scrape_when_idle(port);
    double before = metric(text, "seccheckd_retention_deleted_events_total");
    free(text);
    long long batches = dbq(&d, "SELECT count(*) FROM batches");

    char text1[600];
    snprintf(text1, sizeof(text1), "retain = 1s\n%s", settings);
    write_config(conf, text1);
    kill(d.pid, SIGHUP);
    for (int i = 0; i < 100 && dbq(&d, "SELECT count(*) FROM batches") != 1; i++)
        sleep_ms(100);
    long long deleted = (long long)(2 * t->count) - dbq(&d, "SELECT count(*) FROM events");
    long long orphans = with_rules ? dbq(&d, "SELECT count(*) FROM alerts WHERE event_id NOT IN (SELECT id FROM events)")
                                   : 0;
    long long alerts_left = with_rules ? dbq(&d, "SELECT count(*) FROM alerts") : 0;
    text = scrape_tcp(port);
    double counted = metric(text, "seccheckd_retention_deleted_events_total");
    free(text);
    bool logged_at_once = daemon_wait_log(&d, "retention: deleted", 1, 5000);   /* not only at the end */
    assert_int_equal(daemon_stop(&d), 0);
    char *log = daemon_read_log(&d);
    long long logged_events, logged_batches;
    retention_logged(log, &logged_events, &logged_batches);
    bool why = strstr(log, "(older than --retain)") != NULL;
    free(log);
    daemon_cleanup(&d);
    printf("retention deleted %lld events of %lld batches: metric %.0f, logged %lld events in %lld batches\n",
           deleted, batches - 1, counted, logged_events, logged_batches);
    assert_true(before == 0);
    assert_true(batches > 2);
    assert_true(deleted > 0);
    assert_true(counted == (double)deleted);
    assert_true(logged_at_once);
    assert_int_equal(logged_events, deleted);
    assert_int_equal(logged_batches, batches - 1);
    assert_true(why);
    assert_int_equal(orphans, 0);
    if (with_rules)
        assert_true(alerts_left > 0 && alerts_left <= 256);   /* the newest batch's */
}

static void test_retention_deletions_counted(void **state) { retention_deletions_counted(state, false); }
static void test_retention_deletions_counted_with_rules(void **state) { retention_deletions_counted(state, true); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_match_replay),
        cmocka_unit_test(test_received_before_commit),
        cmocka_unit_test(test_http),
        cmocka_unit_test(test_refuses_non_loopback),
        cmocka_unit_test(test_oversized_request),
        cmocka_unit_test(test_idle_connections_bounded),
        cmocka_unit_test(test_unix_socket),
        cmocka_unit_test(test_restart_reopens),
        cmocka_unit_test(test_retention_deletions_counted),
        cmocka_unit_test(test_retention_deletions_counted_with_rules),
    };
    return cmocka_run_group_tests(tests, setup, trace_fixture_teardown);
}
