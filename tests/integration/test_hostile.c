/* Integration: hostile input. gVisor treats the sandbox as compromised, so
 * every byte seccheckd reads may be crafted. Each case runs the real binary
 * on a temp socket, does one hostile thing, and checks four things:
 *   - the daemon survives (exits 0 at SIGTERM; ASan/UBSan builds abort on
 *     any memory error, which fails the test through the exit status);
 *   - the bad connection is closed, or the bad message rejected/kept raw;
 *   - the reason is counted (runs table and the exit summary in the log);
 *   - every other connection is unaffected: a "bystander" connection streams
 *     a recorded trace before, during and after the hostile case, and all
 *     of its packets must be stored, byte for byte, in order.
 *
 * Hooks, to check that each test can fail: HOSTILE_EXTRA_ARGS
 * (space-separated) is appended to every daemon command line, so it
 * overrides the test's own options; HOSTILE_SECCHECKD_BIN runs another
 * binary (e.g. a deliberately broken build) instead of SECCHECKD_BIN.
 * HOSTILE_ONLY=pattern runs a subset (cmocka filter); HOSTILE_VERBOSE=1
 * prints the slow quiet messages and the daemon's summary in flood tests.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "daemon.h"
#include "gvisor/container.pb-c.h"
#include "gvisor/sentry.pb-c.h"
#include "gvisor/syscall.pb-c.h"
#include "listener.h"
#include "replay.h"
#include "wire.h"

#define FFFD "\xef\xbf\xbd"   /* U+FFFD in UTF-8 */

/* ------------------------------------------------------------------ */
/* small helpers                                                        */
/* ------------------------------------------------------------------ */

static int64_t clock_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Starts the daemon with the test's args, then HOSTILE_EXTRA_ARGS. */
static void start_daemon(struct daemon *d, const char *const *args)
{
    static char extra[1024];
    const char *argv[64];
    int n = 0;
    for (int i = 0; args && args[i]; i++)
        argv[n++] = args[i];
    const char *env = getenv("HOSTILE_EXTRA_ARGS");
    if (env) {
        snprintf(extra, sizeof(extra), "%s", env);
        for (char *save = NULL, *tok = strtok_r(extra, " ", &save); tok && n < 60; tok = strtok_r(NULL, " ", &save))
            argv[n++] = tok;
    }
    argv[n] = NULL;
    const char *bin = getenv("HOSTILE_SECCHECKD_BIN");
    daemon_prepare(d);
    assert_true(daemon_start(d, bin ? bin : SECCHECKD_BIN, argv));
}

/* Stops the daemon (SIGTERM; one that does not stop within 15 s is killed
 * and fails the test instead of hanging it), asserts a clean exit and the
 * accounting identity; returns the log (free it). */
static char *stop_daemon(struct daemon *d)
{
    int status = daemon_stop_within(d, 15000);
    char *log = daemon_read_log(d);
    if (status != 0)
        fprintf(stderr, "daemon exited %d; log:\n%s\n", status, log);
    assert_int_equal(status, 0);
    assert_non_null(strstr(log, "seccheckd: summary: "));
    assert_null(strstr(log, "MISMATCH"));
    assert_int_equal(db_query_int(d->db, "SELECT received - stored - discarded - rejected - store_failed FROM runs"),
                     0);
    return log;
}

/* Bytes of column 0 of the first row of sql (TEXT or BLOB) into a malloc'd
 * buffer; NULL when there is no row or the value is NULL. */
static uint8_t *db_bytes(const struct daemon *d, const char *sql, size_t *len)
{
    sqlite3 *h;
    uint8_t *out = NULL;
    *len = 0;
    assert_int_equal(sqlite3_open_v2(d->db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        const void *p = sqlite3_column_blob(st, 0);
        *len = (size_t)sqlite3_column_bytes(st, 0);
        out = malloc(*len + 1);
        memcpy(out, p, *len);
        out[*len] = 0;
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    return out;
}

static void assert_db_bytes(const struct daemon *d, const char *sql, const void *want, size_t want_len)
{
    size_t len;
    uint8_t *got = db_bytes(d, sql, &len);
    if (!got || len != want_len || memcmp(got, want, len) != 0)
        fail_msg("%s: got %zu bytes%s, want %zu", sql, len, got ? "" : " (NULL)", want_len);
    free(got);
}

/* A rejection reason counted n times, in the runs row and in the summary. */
static void assert_rejected(const struct daemon *d, const char *log, const char *reason, long long n)
{
    assert_int_equal(dbq(d, "SELECT rejected_%s FROM runs", reason), n);
    char key[64];
    snprintf(key, sizeof(key), " %s ", reason);
    assert_int_equal(summary_number(log, "rejected by reason:", key), n);
}

static long long failed_handshakes(const char *log)
{
    return summary_number(log, "summary: connections", "failed handshakes ");
}

/* Strict UTF-8 (RFC 3629: no overlong forms, no surrogates, <= U+10FFFF).
 * SQLite's json_valid() does not check this, and JSON requires it. */
static bool utf8_valid(const uint8_t *s, size_t len)
{
    for (size_t i = 0; i < len;) {
        uint8_t c = s[i];
        size_t n;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            n = 2;
            cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            n = 3;
            cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            n = 4;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (i + n > len)
            return false;
        for (size_t k = 1; k < n; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += n;
    }
    return true;
}

/* Every decoded row matching where has a detail that is JSON and UTF-8. */
static void assert_details_valid(const struct daemon *d, const char *where)
{
    char sql[512];
    snprintf(sql, sizeof(sql), "SELECT id, detail, json_valid(detail) FROM events WHERE (%s) AND decode_error IS NULL",
             where);
    sqlite3 *h;
    assert_int_equal(sqlite3_open_v2(d->db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
    size_t rows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const uint8_t *detail = sqlite3_column_blob(st, 1);
        size_t len = (size_t)sqlite3_column_bytes(st, 1);
        if (!detail || !sqlite3_column_int(st, 2) || !utf8_valid(detail, len))
            fail_msg("event %lld: detail is %s", sqlite3_column_int64(st, 0),
                     !detail ? "NULL" : !sqlite3_column_int(st, 2) ? "not JSON" : "not UTF-8");
        rows++;
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    assert_true(rows > 0);
}

/* ---- packets ---- */

struct pkt {
    uint8_t *data;
    size_t len;
};

static struct pkt pkt_raw(uint16_t type, uint32_t dropped, const void *payload, size_t n)
{
    struct pkt p = {.data = malloc(WIRE_HEADER_MIN + n + 1), .len = WIRE_HEADER_MIN + n};
    assert_non_null(p.data);
    wire_header_write(p.data, type, dropped);
    if (n)
        memcpy(p.data + WIRE_HEADER_MIN, payload, n);
    return p;
}

static struct pkt pkt_msg(uint16_t type, uint32_t dropped, const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    struct pkt p = pkt_raw(type, dropped, NULL, 0);
    p.data = realloc(p.data, WIRE_HEADER_MIN + n + 1);
    assert_non_null(p.data);
    assert_int_equal(protobuf_c_message_pack(m, p.data + WIRE_HEADER_MIN), n);
    p.len = WIRE_HEADER_MIN + n;
    return p;
}

/* An Open (type 7) whose pathname tags it, so rows can be found again. */
static struct pkt pkt_open(const char *pathname, uint32_t dropped)
{
    Gvisor__Syscall__Open o = GVISOR__SYSCALL__OPEN__INIT;
    o.sysno = 257;
    o.pathname = (char *)pathname;
    return pkt_msg(7, dropped, &o.base);
}

static void send_pkt(int fd, struct pkt p)
{
    send_bytes(fd, p.data, p.len);
    free(p.data);
}

static void send_marker(int fd, const char *marker)
{
    send_pkt(fd, pkt_open(marker, 0));
}

static long long marker_rows(const struct daemon *d, const char *marker)
{
    return dbq(d, "SELECT count(*) FROM events WHERE msg_type=7 AND json_extract(detail,'$.pathname')='%s'",
                        marker);
}

/* The connection that sent the marker. */
static long long marker_conn(const struct daemon *d, const char *marker)
{
    return dbq(d, "SELECT conn_id FROM events WHERE msg_type=7 AND json_extract(detail,'$.pathname')='%s'",
                        marker);
}

static size_t put_varint(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

static size_t varint_len(uint64_t v)
{
    uint8_t tmp[10];
    return put_varint(tmp, v);
}

/* An Open of exactly len bytes: its pathname fills the packet. */
static struct pkt pkt_open_of_size(size_t len, uint32_t dropped)
{
    size_t plen = 0;
    for (size_t vl = 1; vl <= 4; vl++)
        if (len >= WIRE_HEADER_MIN + 1 + vl && varint_len(len - WIRE_HEADER_MIN - 1 - vl) == vl)
            plen = len - WIRE_HEADER_MIN - 1 - vl;
    struct pkt p = {.data = malloc(len), .len = len};
    assert_non_null(p.data);
    wire_header_write(p.data, 7, dropped);
    p.data[8] = 0x32;
    size_t at = 9 + put_varint(p.data + 9, plen);
    assert_int_equal(at + plen, len);
    memset(p.data + at, 'p', plen);
    return p;
}

/* ---- connections ---- */

static int connect_handshaken(const char *socket)
{
    char err[512];
    int fd = replay_connect(socket, 1, 5000, err, sizeof(err));
    if (fd < 0)
        fail_msg("%s", err);
    return fd;
}

/* Nothing arrives on fd (no answer, no EOF) within ms. */
static bool silent_for(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms) == 0;
}

/* Still open: nothing to read and no EOF. */
static bool still_open(int fd)
{
    char buf[64];
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

/* ------------------------------------------------------------------ */
/* the bystander: a well-behaved sandbox streaming a recorded trace      */
/* ------------------------------------------------------------------ */

struct bystander {
    const struct replay_trace *trace;
    pthread_t thread;
    int fd;
    atomic_bool stop;
    atomic_size_t sent;
    int error;             /* errno of a failed send, 0 if none */
};

static void *bystander_main(void *arg)
{
    struct bystander *b = arg;
    size_t sent = 0;
    /* At least one whole pass, then on until told to stop; ~16k msgs/s. */
    while (!atomic_load(&b->stop) || sent < b->trace->count) {
        size_t i = sent % b->trace->count;
        if (replay_send(b->fd, b->trace->packets[i], b->trace->lengths[i]) != 0) {
            b->error = errno ? errno : -1;
            break;
        }
        atomic_store(&b->sent, ++sent);
        if (sent % 16 == 0)
            sleep_ms(1);
    }
    return NULL;
}

/* Connects (so its connection is accepted before any hostile one) and
 * streams until bystander_finish; returns once it is well under way. */
static void bystander_start(struct bystander *b, const char *socket, const struct replay_trace *t)
{
    memset(b, 0, sizeof(*b));
    b->trace = t;
    b->fd = connect_handshaken(socket);
    /* A starved bystander fails the test instead of hanging it. */
    struct timeval tv = {.tv_sec = 20};
    setsockopt(b->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    assert_int_equal(pthread_create(&b->thread, NULL, bystander_main, b), 0);
    while (atomic_load(&b->sent) < 64)
        sleep_ms(1);
}

static void bystander_finish(struct bystander *b)
{
    atomic_store(&b->stop, true);
    pthread_join(b->thread, NULL);
    close(b->fd);
    if (b->error)
        fail_msg("bystander send failed after %zu packets: %s", atomic_load(&b->sent), strerror(b->error));
}

/* After the daemon stopped: every packet the bystander sent is a row of its
 * connection, byte for byte and in order, decoded, and its connection
 * closed normally with nothing rejected. */
static void bystander_check(const struct daemon *d, const struct bystander *b)
{
    const struct replay_trace *t = b->trace;
    size_t sent = atomic_load(&b->sent);
    sqlite3 *h;
    assert_int_equal(sqlite3_open_v2(d->db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(h, "SELECT conn_id FROM events WHERE raw=?1 ORDER BY id LIMIT 1", -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_blob(st, 1, t->packets[0], (int)t->lengths[0], SQLITE_STATIC);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    long long conn = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    assert_int_equal(sqlite3_prepare_v2(h, "SELECT raw, decode_error IS NULL FROM events WHERE conn_id=?1 ORDER BY id",
                                        -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_int64(st, 1, conn);
    size_t i = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        size_t k = i % t->count;
        if (i >= sent || (size_t)sqlite3_column_bytes(st, 0) != t->lengths[k] ||
            memcmp(sqlite3_column_blob(st, 0), t->packets[k], t->lengths[k]) != 0 || !sqlite3_column_int(st, 1))
            fail_msg("bystander row %zu differs from the packet it sent", i);
        i++;
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    if (i != sent)
        fail_msg("bystander: sent %zu packets, %zu stored", sent, i);
    assert_int_equal(dbq(d, "SELECT count(*) FROM connections WHERE id=%lld AND close_reason='eof' AND messages=%zu "
                            "AND rejected=0 AND decode_errors=0 AND client_version=1", conn, sent), 1);
}

/* ------------------------------------------------------------------ */
/* fixture                                                              */
/* ------------------------------------------------------------------ */

struct fixture {
    struct replay_trace calm;    /* the bystander's trace */
    struct replay_trace busy;    /* the flood's trace */
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (trace_load_named(&f->calm, "exec_loop") != 0 || trace_load_named(&f->busy, "mixed_syscalls") != 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    replay_trace_free(&f->calm);
    replay_trace_free(&f->busy);
    free(f);
    return 0;
}

/* Every test: a daemon with args, the bystander streaming around body. */
#define HOSTILE_BEGIN(args)                                                                                          \
    struct fixture *fx = *state;                                                                                     \
    struct daemon d;                                                                                                 \
    start_daemon(&d, args);                                                                                          \
    struct bystander by;                                                                                             \
    bystander_start(&by, d.socket, &fx->calm)

#define HOSTILE_END_STREAM()                                                                                         \
    bystander_finish(&by);                                                                                           \
    char *log = stop_daemon(&d);                                                                                     \
    bystander_check(&d, &by)

#define HOSTILE_CLEANUP()                                                                                            \
    free(log);                                                                                                       \
    daemon_cleanup(&d)

/* ------------------------------------------------------------------ */
/* packets after the handshake                                          */
/* ------------------------------------------------------------------ */

/* Packets of 1..7 bytes: each rejected as short_packet; the connection
 * stays (a good packet after them is stored). */
static void test_short_packets(void **state)
{
    HOSTILE_BEGIN(NULL);
    int fd = connect_handshaken(d.socket);
    static const uint8_t junk[8] = {8, 0, 7, 0, 0, 0, 0, 0};
    for (size_t len = 1; len < WIRE_HEADER_MIN; len++)
        send_bytes(fd, junk, len);
    send_marker(fd, "after-short");
    close(fd);
    HOSTILE_END_STREAM();
    assert_rejected(&d, log, "short_packet", 7);
    assert_int_equal(marker_rows(&d, "after-short"), 1);
    assert_int_equal(dbq(&d, "SELECT rejected FROM connections WHERE id=%lld AND close_reason='eof' AND messages=8",
                         marker_conn(&d, "after-short")), 7);
    HOSTILE_CLEANUP();
}

/* A zero-length packet after the handshake. recv() returns 0 for it exactly
 * as at EOF. Either the daemon counts it (short_packet) and goes on, or it
 * takes it for EOF and closes the connection (what conn.c does today, the
 * packet then counted nowhere); either way nothing before it is lost and
 * nobody else is affected. */
static void test_zero_length_packet(void **state)
{
    HOSTILE_BEGIN(NULL);
    int fd = connect_handshaken(d.socket);
    send_marker(fd, "before-empty");
    send_bytes(fd, "", 0);
    sleep_ms(100);
    /* Either the daemon closed the connection, or it is still serving it. */
    bool closed = closed_by_peer(fd, 200);
    if (!closed)
        send_marker(fd, "after-empty");
    close(fd);
    HOSTILE_END_STREAM();
    assert_int_equal(marker_rows(&d, "before-empty"), 1);
    long long conn = marker_conn(&d, "before-empty");
    if (closed) {
        printf("zero-length packet: connection closed (%s)\n", "counted as EOF, not as a packet");
        assert_int_equal(dbq(&d, "SELECT count(*) FROM connections WHERE id=%lld AND close_ns > 0", conn), 1);
    } else {
        assert_int_equal(marker_rows(&d, "after-empty"), 1);
        assert_rejected(&d, log, "short_packet", 1);
    }
    HOSTILE_CLEANUP();
}

/* header_size 0, 7, past the packet, 65535 (in a shorter packet): rejected
 * as bad_header. header_size 12 and 65535 in packets long enough are legal
 * (future headers may grow): stored, decoded from the right offset. */
static void test_bad_header_size(void **state)
{
    HOSTILE_BEGIN(NULL);
    int fd = connect_handshaken(d.socket);
    static uint8_t buf[70000];
    const struct {
        uint16_t header_size;
        size_t len;
    } bad[] = {{0, 8}, {0, 64}, {7, 8}, {7, 32}, {100, 16}, {9, 8}, {65535, 20000}, {65535, 65534}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(buf, 0, bad[i].len);
        wire_header_write(buf, 7, 0);
        buf[0] = (uint8_t)bad[i].header_size;
        buf[1] = (uint8_t)(bad[i].header_size >> 8);
        send_bytes(fd, buf, bad[i].len);
    }
    /* Legal, longer headers: unknown header bytes skipped. */
    struct pkt open = pkt_open("long-header", 5);
    size_t payload = open.len - WIRE_HEADER_MIN;
    const uint16_t sizes[] = {12, 65535};
    for (size_t i = 0; i < 2; i++) {
        memset(buf, 0xee, sizes[i]);
        wire_header_write(buf, 7, 5);
        buf[0] = (uint8_t)sizes[i];
        buf[1] = (uint8_t)(sizes[i] >> 8);
        memcpy(buf + sizes[i], open.data + WIRE_HEADER_MIN, payload);
        send_bytes(fd, buf, sizes[i] + payload);
    }
    free(open.data);
    send_marker(fd, "after-bad-header");
    close(fd);
    HOSTILE_END_STREAM();
    assert_rejected(&d, log, "bad_header", 8);
    assert_int_equal(marker_rows(&d, "long-header"), 2);
    assert_int_equal(dbq(&d, "SELECT count(*) FROM events WHERE json_extract(detail,'$.pathname')='long-header' "
                             "AND length(raw) IN (%zu, %zu) AND decode_error IS NULL AND dropped_count=5",
                         12 + payload, 65535 + payload), 2);
    assert_int_equal(marker_rows(&d, "after-bad-header"), 1);
    assert_int_equal(dbq(&d, "SELECT rejected FROM connections WHERE id=%lld AND close_reason='eof'",
                         marker_conn(&d, "after-bad-header")), 8);
    HOSTILE_CLEANUP();
}

/* message_type 0, 39, 1000, 65535: stored raw, decode_error='unknown_type',
 * no type_name, no detail; the connection goes on. */
static void test_unknown_types(void **state)
{
    HOSTILE_BEGIN(NULL);
    int fd = connect_handshaken(d.socket);
    const uint16_t types[] = {0, 39, 1000, 65535};
    static const uint8_t payload[] = {0x08, 0x01, 0x12, 0x03, 'a', 'b', 'c', 0xff};
    for (size_t i = 0; i < 4; i++)
        send_pkt(fd, pkt_raw(types[i], (uint32_t)i, payload, sizeof(payload)));
    send_pkt(fd, pkt_raw(39, 9, NULL, 0));   /* unknown and empty */
    send_marker(fd, "after-unknown");
    close(fd);
    HOSTILE_END_STREAM();
    assert_int_equal(dbq(&d, "SELECT unknown_type FROM runs"), 5);
    assert_int_equal(summary_number(log, "kept raw, not decoded:", "unknown_type "), 5);
    for (size_t i = 0; i < 4; i++) {
        char sql[256];
        snprintf(sql, sizeof(sql), "SELECT raw FROM events WHERE msg_type=%u AND dropped_count=%zu "
                 "AND decode_error='unknown_type' AND type_name IS NULL AND detail IS NULL", types[i], i);
        struct pkt want = pkt_raw(types[i], (uint32_t)i, payload, sizeof(payload));
        assert_db_bytes(&d, sql, want.data, want.len);
        free(want.data);
    }
    assert_int_equal(dbq(&d, "SELECT count(*) FROM events WHERE msg_type=39 AND length(raw)=8 "
                             "AND decode_error='unknown_type'"), 1);
    assert_int_equal(marker_rows(&d, "after-unknown"), 1);
    assert_int_equal(dbq(&d, "SELECT decode_errors FROM connections WHERE id=%lld", marker_conn(&d, "after-unknown")),
                     5);
    HOSTILE_CLEANUP();
}

/* Payloads protobuf cannot unpack: truncated in a string, in a varint and
 * in a sub-message; an over-long varint; a length past the end; wire type
 * 7; a known field with the wrong wire type; field number 0. Each stored
 * raw with decode_error='bad_payload'. */
static void test_bad_payloads(void **state)
{
    HOSTILE_BEGIN(NULL);
    int fd = connect_handshaken(d.socket);
    Gvisor__Common__ContextData ctx = GVISOR__COMMON__CONTEXT_DATA__INIT;
    ctx.container_id = "truncated-container";
    ctx.time_ns = 1234567890123;
    Gvisor__Syscall__Open o = GVISOR__SYSCALL__OPEN__INIT;
    o.context_data = &ctx;
    o.pathname = "/etc/passwd";
    o.sysno = 257;
    struct pkt good = pkt_msg(7, 0, &o.base);
    const uint8_t *p = good.data + WIRE_HEADER_MIN;
    size_t n = good.len - WIRE_HEADER_MIN;
    struct {
        const uint8_t *bytes;
        size_t len;
    } bad[] = {
        {p, n - 3},                                                 /* cut inside the pathname */
        {p, 3},                                                     /* cut inside context_data */
        {(const uint8_t *)"\x18\x81", 2},                           /* cut inside a varint */
        {(const uint8_t *)"\x18\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 12}, /* varint > 10 bytes */
        {(const uint8_t *)"\x32\xff\xff\xff\xff\x0f" "abc", 9},     /* length 4 GiB, 3 bytes there */
        {(const uint8_t *)"\x32\x10" "abc", 5},                     /* length 16, 3 there */
        {(const uint8_t *)"\x0f\x00\x00\x00", 4},                   /* wire type 7 */
        {(const uint8_t *)"\x30\x05", 2},                           /* pathname (string) as varint */
        {(const uint8_t *)"\x00\x01", 2},                           /* field number 0 */
        {(const uint8_t *)"\x0a\x05\x30\xff\xff\xff\xff", 7},       /* context_data holding garbage */
    };
    const size_t nbad = sizeof(bad) / sizeof(bad[0]);
    for (size_t i = 0; i < nbad; i++)
        send_pkt(fd, pkt_raw(7, 100 + (uint32_t)i, bad[i].bytes, bad[i].len));
    send_bytes(fd, good.data, good.len);
    close(fd);
    HOSTILE_END_STREAM();
    for (size_t i = 0; i < nbad; i++) {
        char sql[256];
        snprintf(sql, sizeof(sql), "SELECT raw FROM events WHERE dropped_count=%zu AND decode_error='bad_payload' "
                 "AND type_name='SYSCALL_OPEN' AND detail IS NULL", 100 + i);
        struct pkt want = pkt_raw(7, 100 + (uint32_t)i, bad[i].bytes, bad[i].len);
        assert_db_bytes(&d, sql, want.data, want.len);
        free(want.data);
    }
    assert_int_equal(dbq(&d, "SELECT bad_payload FROM runs"), (long long)nbad);
    assert_int_equal(summary_number(log, "kept raw, not decoded:", "bad_payload "), (long long)nbad);
    assert_int_equal(marker_rows(&d, "/etc/passwd"), 1);
    free(good.data);
    HOSTILE_CLEANUP();
}

/* Small deterministic PRNG for the mutation test. */
static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* 3000 real packets with their payloads mutated (bit flips, byte
 * overwrites, cuts, random type): every one is stored (decoded or kept raw
 * with a reason), every detail is valid JSON. The sanitizer build turns
 * any out-of-bounds read in the decoder or renderer into a failure. */
static void test_mutated_payloads(void **state)
{
    HOSTILE_BEGIN(NULL);
    int fd = connect_handshaken(d.socket);
    const struct replay_trace *t = &fx->busy;
    uint64_t seed = 0x5eccec0dULL;
    enum { N = 3000 };
    static uint8_t buf[70000];
    for (size_t i = 0; i < N; i++) {
        size_t k = xorshift(&seed) % t->count;
        size_t len = t->lengths[k];
        memcpy(buf, t->packets[k], len);
        if (len > WIRE_HEADER_MIN) {
            size_t payload = len - WIRE_HEADER_MIN;
            unsigned edits = 1 + (unsigned)(xorshift(&seed) % 4);
            for (unsigned e = 0; e < edits; e++) {
                size_t at = WIRE_HEADER_MIN + xorshift(&seed) % payload;
                switch (xorshift(&seed) % 3) {
                case 0: buf[at] ^= (uint8_t)(1u << (xorshift(&seed) % 8)); break;
                case 1: buf[at] = (uint8_t)xorshift(&seed); break;
                default: len = at + 1; break;   /* cut */
                }
                if (len <= at)
                    break;
            }
        }
        if (xorshift(&seed) % 8 == 0) {   /* decode it as another type */
            uint16_t type = (uint16_t)(1 + xorshift(&seed) % 38);
            buf[2] = (uint8_t)type;
            buf[3] = 0;
        }
        send_bytes(fd, buf, len);
    }
    send_marker(fd, "after-mutations");
    close(fd);
    HOSTILE_END_STREAM();
    long long conn = marker_conn(&d, "after-mutations");
    assert_int_equal(dbq(&d, "SELECT count(*) FROM events WHERE conn_id=%lld", conn), N + 1);
    char where[64];
    snprintf(where, sizeof(where), "conn_id=%lld", conn);
    assert_details_valid(&d, where);
    assert_int_equal(dbq(&d, "SELECT count(*) FROM events WHERE conn_id=%lld AND decode_error IS NOT NULL "
                             "AND decode_error NOT IN ('bad_payload','unknown_type')", conn), 0);
    printf("mutated payloads: %lld of %d kept raw as bad_payload\n",
           dbq(&d, "SELECT count(*) FROM events WHERE conn_id=%lld AND decode_error='bad_payload'", conn), N);
    assert_int_equal(dbq(&d, "SELECT rejected FROM runs"), 0);
    HOSTILE_CLEANUP();
}

/* ---- strings that are not UTF-8 ---- */

static const struct {
    const char *in;
    const char *want;   /* what detail must hold: one U+FFFD per bad byte */
} utf8_cases[] = {
    {"\xff\xfe", FFFD FFFD},                                   /* never valid in UTF-8 */
    {"a\xc0\xaf" "b", "a" FFFD FFFD "b"},                      /* overlong '/' (2 bytes) */
    {"\xe0\x80\xaf", FFFD FFFD FFFD},                          /* overlong '/' (3 bytes) */
    {"\xf0\x80\x80\xaf", FFFD FFFD FFFD FFFD},                 /* overlong '/' (4 bytes) */
    {"\xed\xa0\x80", FFFD FFFD FFFD},                          /* lone high surrogate */
    {"x\xed\xbf\xbfy", "x" FFFD FFFD FFFD "y"},                /* lone low surrogate */
    {"\xed\xa0\xbd\xed\xb8\x80", FFFD FFFD FFFD FFFD FFFD FFFD}, /* CESU-8 surrogate pair */
    {"\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD},                 /* past U+10FFFF */
    {"\xf8\x88\x80\x80\x80", FFFD FFFD FFFD FFFD FFFD},        /* 5-byte form */
    {"tail\xe2\x82", "tail" FFFD FFFD},                        /* cut sequence at the end */
    {"\x80\xbf", FFFD FFFD},                                   /* lone continuation bytes */
    {"q\"b\\s\x01\x1f\n\x7f", "q\"b\\s\x01\x1f\n\x7f"},        /* JSON metacharacters: escaped, kept */
    {"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"}, /* valid: kept */
};
#define N_UTF8 (sizeof(utf8_cases) / sizeof(utf8_cases[0]))

/* The JSON value at path of the row selected by where, as bytes, == want. */
static void assert_detail_string(const struct daemon *d, const char *where, const char *path, const char *want)
{
    char sql[512];
    snprintf(sql, sizeof(sql), "SELECT CAST(json_extract(detail,'%s') AS BLOB) FROM events WHERE %s", path, where);
    assert_db_bytes(d, sql, want, strlen(want));
}

/* The same through events_full, whose message holds context_data again. */
static void assert_full_string(const struct daemon *d, const char *where, const char *path, const char *want)
{
    char sql[512];
    snprintf(sql, sizeof(sql), "SELECT CAST(json_extract(message,'%s') AS BLOB) FROM events_full WHERE %s", path,
             where);
    assert_db_bytes(d, sql, want, strlen(want));
}

/* Invalid UTF-8 in an Open's pathname and fd_path, and in every string of
 * a container/start (id, cwd, args, env, context container_id, cwd,
 * process_name): stored decoded, detail valid JSON with U+FFFD for each
 * bad byte, raw the original bytes. */
static void test_invalid_utf8_strings(void **state)
{
    HOSTILE_BEGIN(NULL);
    int fd = connect_handshaken(d.socket);
    struct pkt sent[2 * N_UTF8 + 1];
    for (size_t i = 0; i < N_UTF8; i++) {
        Gvisor__Syscall__Open o = GVISOR__SYSCALL__OPEN__INIT;
        o.sysno = 257;
        o.pathname = (char *)utf8_cases[i].in;
        o.fd_path = (char *)utf8_cases[i].in;
        sent[i] = pkt_msg(7, 1000 + (uint32_t)i, &o.base);

        Gvisor__Common__ContextData ctx = GVISOR__COMMON__CONTEXT_DATA__INIT;
        ctx.container_id = ctx.cwd = ctx.process_name = (char *)utf8_cases[i].in;
        char *strs[3] = {(char *)utf8_cases[i].in, "plain", (char *)utf8_cases[i].in};
        Gvisor__Container__Start s = GVISOR__CONTAINER__START__INIT;
        s.context_data = &ctx;
        s.id = s.cwd = (char *)utf8_cases[i].in;
        s.n_args = s.n_env = 3;
        s.args = s.env = strs;
        sent[N_UTF8 + i] = pkt_msg(1, 2000 + (uint32_t)i, &s.base);
    }
    /* A NUL inside a string (protobuf allows it): hand-encoded pathname. */
    static const uint8_t nul_open[] = {0x18, 0x81, 0x02, 0x32, 0x0e, 'h', 'i', 'd', 'e', 0, '/', 'e', 't', 'c', '/',
                                       's', 'h', 'a', 'd'};
    sent[2 * N_UTF8] = pkt_raw(7, 3000, nul_open, sizeof(nul_open));
    for (size_t i = 0; i < 2 * N_UTF8 + 1; i++)
        send_bytes(fd, sent[i].data, sent[i].len);
    close(fd);
    HOSTILE_END_STREAM();
    assert_int_equal(dbq(&d, "SELECT count(*) FROM events WHERE dropped_count >= 1000 AND decode_error IS NULL "
                             "AND json_valid(detail)"), 2 * N_UTF8 + 1);
    assert_details_valid(&d, "dropped_count >= 1000");
    for (size_t i = 0; i < N_UTF8; i++) {
        char where[128], sql[256];
        const char *want = utf8_cases[i].want;
        snprintf(where, sizeof(where), "dropped_count=%zu", 1000 + i);
        assert_detail_string(&d, where, "$.pathname", want);
        assert_detail_string(&d, where, "$.fd_path", want);
        snprintf(sql, sizeof(sql), "SELECT raw FROM events WHERE %s", where);
        assert_db_bytes(&d, sql, sent[i].data, sent[i].len);

        snprintf(where, sizeof(where), "dropped_count=%zu AND type_name='CONTAINER_START'", 2000 + i);
        assert_detail_string(&d, where, "$.id", want);
        assert_detail_string(&d, where, "$.cwd", want);
        assert_detail_string(&d, where, "$.args[0]", want);
        assert_detail_string(&d, where, "$.args[1]", "plain");
        assert_detail_string(&d, where, "$.env[2]", want);
        assert_full_string(&d, where, "$.context_data.container_id", want);
        assert_full_string(&d, where, "$.context_data.process_name", want);
        assert_full_string(&d, where, "$.context_data.cwd", want);
        snprintf(sql, sizeof(sql), "SELECT raw FROM events WHERE %s", where);
        assert_db_bytes(&d, sql, sent[N_UTF8 + i].data, sent[N_UTF8 + i].len);
        /* The copied columns are there (bytes as sent; see the report). */
        assert_int_equal(dbq(&d, "SELECT count(*) FROM events WHERE %s AND container_id IS NOT NULL "
                                 "AND process_name IS NOT NULL AND cwd IS NOT NULL", where), 1);
    }
    assert_db_bytes(&d, "SELECT raw FROM events WHERE dropped_count=3000", sent[2 * N_UTF8].data,
                    sent[2 * N_UTF8].len);
    size_t len;
    uint8_t *shown = db_bytes(&d, "SELECT json_extract(detail,'$.pathname') FROM events WHERE dropped_count=3000", &len);
    assert_non_null(shown);
    assert_true(len >= 4 && memcmp(shown, "hide", 4) == 0);
    if (len == 4)
        printf("NOTE: pathname \"hide\\0/etc/shad\" shows as \"hide\" in detail (raw keeps all bytes)\n");
    free(shown);
    for (size_t i = 0; i < 2 * N_UTF8 + 1; i++)
        free(sent[i].data);
    HOSTILE_CLEANUP();
}

/* ---- repeated fields with huge counts ---- */

/* count repeated empty strings of field `field` (wire type 2): 2 bytes each. */
static struct pkt pkt_many_empty(uint16_t type, uint32_t dropped, unsigned field, size_t count)
{
    size_t n = 2 * count;
    uint8_t *payload = malloc(n);
    assert_non_null(payload);
    for (size_t i = 0; i < count; i++) {
        payload[2 * i] = (uint8_t)(field << 3 | 2);
        payload[2 * i + 1] = 0;
    }
    struct pkt p = pkt_raw(type, dropped, payload, n);
    free(payload);
    return p;
}

/* Execve argv with 50k empty strings, container/start env with 100k, and an
 * Open with 100k unknown fields (each ~100-200 KB), 100 times each: every one
 * stored (decoded, or raw as bad_payload when unpacking needs more than the
 * per-message budget of 16x its size), the bystander untouched, and the
 * daemon's memory bounded: the unpack attempts ask for ~1 GB of arena in
 * all, the daemon stays under 160 MiB. With --queue-max 2 that is up to
 * ~5 batches (queue + current + the ones sealed while saturated) of an
 * 8 MiB arena (+ <= 2 MiB of kept chunks) and 4096 event slots each, 32
 * receive slots of 256 KiB, SQLite, malloc slack: 88-114 MiB seen, flat
 * over 300 rounds. */
static void test_huge_repeated_counts(void **state)
{
    const char *args[] = {"--queue-max", "2", NULL};
    HOSTILE_BEGIN(args);
    int fd = connect_handshaken(d.socket);
    struct pkt argv50k = pkt_many_empty(11, 1, 7, 50000);             /* Execve.argv */
    struct pkt env100k = pkt_many_empty(1, 2, 5, 100000);             /* Start.env */
    uint8_t *unk = malloc(200000);
    for (size_t i = 0; i < 100000; i++) {                             /* field 15 varint 0 */
        unk[2 * i] = 15 << 3;
        unk[2 * i + 1] = 0;
    }
    struct pkt unknown100k = pkt_raw(7, 3, unk, 200000);
    free(unk);
    enum { ROUNDS = 100 };
    long rss[ROUNDS / 10 + 1], peak = 0;
    rss[0] = rss_kib(d.pid);
    for (int r = 1; r <= ROUNDS; r++) {
        send_bytes(fd, argv50k.data, argv50k.len);
        send_bytes(fd, env100k.data, env100k.len);
        send_bytes(fd, unknown100k.data, unknown100k.len);
        if (r % 10 == 0) {
            rss[r / 10] = rss_kib(d.pid);
            peak = rss[r / 10] > peak ? rss[r / 10] : peak;
        }
    }
    send_marker(fd, "after-huge");
    close(fd);
    printf("huge repeated: daemon RSS KiB at start %ld, every 10 rounds:", rss[0]);
    for (int i = 1; i <= ROUNDS / 10; i++)
        printf(" %ld", rss[i]);
    printf("\n");
    HOSTILE_END_STREAM();
    /* Not dropped_count: the bystander's trace sets it too. */
    const struct {
        int type;
        uint32_t dropped;
        const char *path;
        long long count;
        size_t len;
    } kinds[] = {{11, 1, "$.argv", 50000, argv50k.len}, {1, 2, "$.env", 100000, env100k.len},
                 {7, 3, NULL, 0, unknown100k.len}};
    for (int k = 0; k < 3; k++) {
        char w[128];
        snprintf(w, sizeof(w), "msg_type=%d AND length(raw)=%zu", kinds[k].type, kinds[k].len);
        assert_int_equal(dbq(&d, "SELECT count(*) FROM events WHERE %s", w), ROUNDS);
        long long ok = dbq(&d, "SELECT count(*) FROM events WHERE %s AND decode_error IS NULL", w);
        long long bad = dbq(&d, "SELECT count(*) FROM events WHERE %s AND decode_error='bad_payload'", w);
        assert_int_equal(ok + bad, ROUNDS);
        if (ok && kinds[k].path)
            assert_int_equal(dbq(&d, "SELECT min(json_array_length(detail,'%s')) FROM events WHERE %s AND "
                                     "decode_error IS NULL", kinds[k].path, w), kinds[k].count);
        printf("huge repeated: type %d: %lld decoded, %lld kept raw as bad_payload\n", kinds[k].type, ok, bad);
    }
    assert_int_equal(marker_rows(&d, "after-huge"), 1);
#ifndef SECCHECKD_SANITIZED
    /* (Not under ASan, whose quarantine holds freed memory on purpose.) */
    assert_true(peak <= 160 * 1024);
#else
    (void)peak;
#endif
    free(argv50k.data);
    free(env100k.data);
    free(unknown100k.data);
    HOSTILE_CLEANUP();
}

/* ---- sizes ---- */

/* --max-message 10240: 10240 bytes stored whole, 10241 and 20000 rejected
 * as oversize; the connection goes on. */
static void test_oversize_packets(void **state)
{
    const char *args[] = {"--max-message", "10240", NULL};
    HOSTILE_BEGIN(args);
    int fd = connect_handshaken(d.socket);
    const size_t sizes[] = {10240, 10241, 20000};
    for (size_t i = 0; i < 3; i++)
        send_pkt(fd, pkt_open_of_size(sizes[i], 70 + (uint32_t)i));
    send_marker(fd, "after-oversize");
    close(fd);
    HOSTILE_END_STREAM();
    assert_rejected(&d, log, "oversize", 2);
    assert_int_equal(dbq(&d, "SELECT count(*) FROM events WHERE dropped_count=70 AND length(raw)=10240 AND "
                             "decode_error IS NULL AND length(json_extract(detail,'$.pathname'))=10229"), 1);
    assert_int_equal(dbq(&d, "SELECT count(*) FROM events WHERE dropped_count IN (71, 72)"), 0);
    assert_int_equal(marker_rows(&d, "after-oversize"), 1);
    assert_int_equal(dbq(&d, "SELECT rejected FROM connections WHERE id=%lld AND close_reason='eof'",
                         marker_conn(&d, "after-oversize")), 2);
    HOSTILE_CLEANUP();
}

/* Largest packet send() accepts on fd: binary search on a socketpair with
 * the same send buffer (a too-large send fails with EMSGSIZE at once). */
static size_t largest_seqpacket(int sndbuf)
{
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
    if (sndbuf)
        setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    size_t cap = 4u << 20;
    uint8_t *buf = calloc(1, cap);
    size_t lo = 8, hi = cap;
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        if (send(sv[0], buf, mid, MSG_DONTWAIT) == (ssize_t)mid) {
            lo = mid;
            assert_int_equal(recv(sv[1], buf, cap, 0), (ssize_t)mid);
        } else {
            assert_int_equal(errno, EMSGSIZE);
            hi = mid - 1;
        }
    }
    free(buf);
    close(sv[0]);
    close(sv[1]);
    return lo;
}

/* The largest packet the kernel allows with the default send buffer (found
 * at run time: 212960 with wmem_default 212992) is stored whole with the
 * default --max-message; one byte more is refused by the kernel itself.
 * A client that raises SO_SNDBUF (unprivileged, up to wmem_max) can send
 * more: exactly --max-message is stored, one byte more is oversize. */
static void test_largest_packets(void **state)
{
    HOSTILE_BEGIN(NULL);
    size_t max = largest_seqpacket(0);
    printf("largest SEQPACKET with the default send buffer: %zu bytes\n", max);
    int fd = connect_handshaken(d.socket);
    struct pkt p = pkt_open_of_size(max + 1, 80);
    errno = 0;
    assert_int_equal(send(fd, p.data, p.len, MSG_NOSIGNAL), -1);
    assert_int_equal(errno, EMSGSIZE);
    free(p.data);
    send_pkt(fd, pkt_open_of_size(max, 81));

    int big = 1 << 20;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
    socklen_t sl = sizeof(big);
    getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, &sl);
    bool raised = big > 300000;
    if (raised) {
        send_pkt(fd, pkt_open_of_size(262144, 82));
        send_pkt(fd, pkt_open_of_size(262145, 83));
        send_pkt(fd, pkt_open_of_size(1u << 20, 84));
    } else {
        printf("SO_SNDBUF stays at %d (net.core.wmem_max): larger-than-default part skipped\n", big);
    }
    send_marker(fd, "after-largest");
    close(fd);
    HOSTILE_END_STREAM();
    assert_int_equal(dbq(&d, "SELECT count(*) FROM events WHERE dropped_count=81 AND length(raw)=%zu AND "
                             "decode_error IS NULL AND length(json_extract(detail,'$.pathname'))=%zu",
                         max, max - 12), 1);
    p = pkt_open_of_size(max, 81);
    assert_db_bytes(&d, "SELECT raw FROM events WHERE dropped_count=81", p.data, p.len);
    free(p.data);
    assert_int_equal(dbq(&d, "SELECT count(*) FROM events WHERE dropped_count=80"), 0);
    if (raised) {
        assert_int_equal(dbq(&d, "SELECT count(*) FROM events WHERE dropped_count=82 AND length(raw)=262144 AND "
                                 "decode_error IS NULL"), 1);
        assert_int_equal(dbq(&d, "SELECT count(*) FROM events WHERE dropped_count IN (83, 84)"), 0);
        assert_rejected(&d, log, "oversize", 2);
    } else {
        assert_rejected(&d, log, "oversize", 0);
    }
    assert_int_equal(marker_rows(&d, "after-largest"), 1);
    HOSTILE_CLEANUP();
}

/* ------------------------------------------------------------------ */
/* handshake                                                            */
/* ------------------------------------------------------------------ */

/* Connects each of n raw handshakes, asserts each is closed without an
 * answer. */
static void assert_handshakes_refused(const char *socket, const char *const *hs, const size_t *len, size_t n)
{
    int fds[16];
    assert_true(n <= 16);
    for (size_t i = 0; i < n; i++)
        fds[i] = connect_raw(socket, hs[i], len[i]);
    for (size_t i = 0; i < n; i++) {
        if (!closed_by_peer(fds[i], 3000))
            fail_msg("handshake %zu (%zu bytes) was not refused", i, len[i]);
        close(fds[i]);
    }
}

/* Garbage handshakes: closed at once without an answer, counted as
 * bad_handshake. */
static void test_handshake_garbage(void **state)
{
    HOSTILE_BEGIN(NULL);
    const char *hs[] = {
        "\xff\xff\xff",                                        /* wire type 7 */
        "\x08",                                                /* varint cut */
        "\x0a\x01\x01",                                        /* version as length-delimited */
        "\x08\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01",    /* varint of 12 bytes */
        "GET / HTTP/1.1\r\n\r\n",                              /* another protocol */
        "\x08\x01\x12\x7f",                                    /* good version, then a cut field */
    };
    const size_t len[] = {3, 1, 3, 12, 18, 4};
    assert_handshakes_refused(d.socket, hs, len, 6);
    HOSTILE_END_STREAM();
    assert_int_equal(dbq(&d, "SELECT count(*) FROM connections WHERE close_reason='bad_handshake' AND "
                             "client_version IS NOT 1 AND messages=0"), 6);
    assert_int_equal(failed_handshakes(log), 6);
    HOSTILE_CLEANUP();
}

/* Version 0 (explicit, or a later 0 overriding 1) is refused; versions 2
 * and 2^32-1 are accepted and recorded (the newer peer keeps
 * compatibility), as is a version 1 with an unknown extra field. */
static void test_handshake_versions(void **state)
{
    HOSTILE_BEGIN(NULL);
    const char *zero[] = {"\x08\x00", "\x08\x01\x08\x00"};
    const size_t zlen[] = {2, 4};
    assert_handshakes_refused(d.socket, zero, zlen, 2);
    const struct {
        const char *hs;
        size_t len;
        const char *marker;
    } ok[] = {{"\x08\x02", 2, "v2"}, {"\x08\xff\xff\xff\xff\x0f", 6, "vmax"}, {"\x08\x01\x10\x05", 4, "v1x"}};
    for (size_t i = 0; i < 3; i++) {
        int fd = connect_raw(d.socket, ok[i].hs, ok[i].len);
        uint8_t answer[WIRE_HANDSHAKE_MAX];
        ssize_t n = recv(fd, answer, sizeof(answer), 0);
        uint32_t version = 0;
        assert_true(n > 0);
        assert_int_equal(wire_handshake_parse(answer, (size_t)n, &version), 0);
        assert_int_equal(version, 1);
        send_marker(fd, ok[i].marker);
        close(fd);
    }
    HOSTILE_END_STREAM();
    assert_int_equal(dbq(&d, "SELECT count(*) FROM connections WHERE close_reason='bad_handshake'"), 2);
    assert_int_equal(failed_handshakes(log), 2);
    assert_int_equal(dbq(&d, "SELECT client_version FROM connections WHERE id=%lld", marker_conn(&d, "v2")), 2);
    assert_int_equal(dbq(&d, "SELECT client_version FROM connections WHERE id=%lld", marker_conn(&d, "vmax")),
                     4294967295LL);
    assert_int_equal(dbq(&d, "SELECT client_version FROM connections WHERE id=%lld", marker_conn(&d, "v1x")), 1);
    HOSTILE_CLEANUP();
}

/* A zero-length packet as the handshake: closed without an answer. */
static void test_handshake_empty_packet(void **state)
{
    HOSTILE_BEGIN(NULL);
    int fd = connect_raw(d.socket, "", 0);
    assert_true(closed_by_peer(fd, 3000));
    close(fd);
    HOSTILE_END_STREAM();
    assert_int_equal(dbq(&d, "SELECT count(*) FROM connections WHERE client_version IS NOT 1 AND close_ns > 0 AND "
                             "close_reason IN ('eof_in_handshake', 'bad_handshake')"), 1);
    assert_int_equal(failed_handshakes(log), 1);
    HOSTILE_CLEANUP();
}

/* A well-formed Handshake{version 1} padded with an unknown field: 100
 * bytes is accepted (control); 10241 and 20000 bytes (over the 10240 the
 * protocol allows) are refused. */
static void test_handshake_oversized(void **state)
{
    HOSTILE_BEGIN(NULL);
    static uint8_t hs[3][20000];
    const size_t len[3] = {100, 10241, 20000};
    for (int i = 0; i < 3; i++) {   /* 08 01 12 <varint pad> <pad bytes> */
        size_t pad = 0;
        for (size_t vl = 1; vl <= 3; vl++)
            if (varint_len(len[i] - 3 - vl) == vl)
                pad = len[i] - 3 - vl;
        hs[i][0] = 0x08;
        hs[i][1] = 0x01;
        hs[i][2] = 0x12;
        size_t at = 3 + put_varint(hs[i] + 3, pad);
        assert_int_equal(at + pad, len[i]);
        memset(hs[i] + at, 'z', pad);
    }
    int ok = connect_raw(d.socket, hs[0], len[0]);
    uint8_t answer[64];
    assert_true(recv(ok, answer, sizeof(answer), 0) > 0);
    send_marker(ok, "padded-handshake");
    close(ok);
    const char *big[] = {(const char *)hs[1], (const char *)hs[2]};
    assert_handshakes_refused(d.socket, big, len + 1, 2);
    HOSTILE_END_STREAM();
    assert_int_equal(marker_rows(&d, "padded-handshake"), 1);
    assert_int_equal(dbq(&d, "SELECT count(*) FROM connections WHERE close_reason='bad_handshake'"), 2);
    assert_int_equal(failed_handshakes(log), 2);
    HOSTILE_CLEANUP();
}

/* `08 01` again after a good handshake is a 2-byte packet: short_packet,
 * the connection stays. */
static void test_second_handshake(void **state)
{
    HOSTILE_BEGIN(NULL);
    int fd = connect_handshaken(d.socket);
    send_marker(fd, "before-second");
    send_bytes(fd, "\x08\x01", 2);
    send_marker(fd, "after-second");
    assert_true(silent_for(fd, 300));   /* no second answer, not closed */
    close(fd);
    HOSTILE_END_STREAM();
    assert_rejected(&d, log, "short_packet", 1);
    long long conn = marker_conn(&d, "after-second");
    assert_int_equal(conn, marker_conn(&d, "before-second"));
    assert_int_equal(dbq(&d, "SELECT count(*) FROM connections WHERE id=%lld AND close_reason='eof' AND "
                             "client_version=1 AND messages=3 AND rejected=1", conn), 1);
    HOSTILE_CLEANUP();
}

/* 20 clients that connect and never handshake, --handshake-timeout-ms 300:
 * each closed after ~300 ms (handshake_timeout), and none delays a client
 * that handshakes meanwhile (answered within 100 ms). */
static void test_no_handshake_timeout(void **state)
{
    const char *args[] = {"--handshake-timeout-ms", "300", NULL};
    HOSTILE_BEGIN(args);
    enum { SILENT = 20 };
    int fds[SILENT];
    int64_t t0 = clock_ns(CLOCK_MONOTONIC);
    for (int i = 0; i < SILENT; i++)
        fds[i] = connect_raw(d.socket, NULL, 0);
    int64_t h0 = clock_ns(CLOCK_MONOTONIC);
    int good = connect_handshaken(d.socket);
    int64_t answered_ms = (clock_ns(CLOCK_MONOTONIC) - h0) / 1000000;
    send_marker(good, "beside-silent");
    close(good);
    for (int i = 0; i < SILENT; i++)
        assert_true(closed_by_peer(fds[i], 5000));
    int64_t closed_ms = (clock_ns(CLOCK_MONOTONIC) - t0) / 1000000;
    for (int i = 0; i < SILENT; i++)
        close(fds[i]);
    printf("no handshake: good client answered in %" PRId64 " ms; %d silent ones closed after %" PRId64 " ms\n",
           answered_ms, SILENT, closed_ms);
    assert_true(answered_ms < 100);
    assert_true(closed_ms >= 290 && closed_ms < 3000);
    HOSTILE_END_STREAM();
    assert_int_equal(dbq(&d, "SELECT count(*) FROM connections WHERE close_reason='handshake_timeout'"), SILENT);
    assert_int_equal(dbq(&d, "SELECT min(close_ns - connect_ns) >= 290000000 FROM connections "
                             "WHERE close_reason='handshake_timeout'"), 1);
    assert_int_equal(failed_handshakes(log), SILENT);
    assert_int_equal(marker_rows(&d, "beside-silent"), 1);
    HOSTILE_CLEANUP();
}

/* A client that handshakes and then never sends: still open long after the
 * handshake timeout and many flushes; at SIGTERM the daemon stops at once
 * (no drain wait for an idle socket) and closes it with reason shutdown. */
static void test_handshake_then_silence(void **state)
{
    const char *args[] = {"--handshake-timeout-ms", "300", NULL};
    HOSTILE_BEGIN(args);
    int idle = connect_handshaken(d.socket);
    sleep_ms(1000);
    assert_true(still_open(idle));
    bystander_finish(&by);
    int64_t t0 = clock_ns(CLOCK_MONOTONIC);
    char *log = stop_daemon(&d);
    int64_t stop_ms = (clock_ns(CLOCK_MONOTONIC) - t0) / 1000000;
    printf("idle client: daemon stopped in %" PRId64 " ms\n", stop_ms);
    assert_true(stop_ms < 1500);   /* the default drain timeout is 2000 */
    assert_true(closed_by_peer(idle, 1000));
    close(idle);
    bystander_check(&d, &by);
    assert_int_equal(dbq(&d, "SELECT count(*) FROM connections WHERE close_reason='shutdown' AND client_version=1 "
                             "AND messages=0 AND rejected=0"), 1);
    assert_int_equal(failed_handshakes(log), 0);
    HOSTILE_CLEANUP();
}

/* Waits until fd has something to read (the handshake answer), without
 * reading it. */
static void wait_readable(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 5000), 1);
}

/* A client that never reads the handshake answer: everything it sends is
 * stored, also when it closes with packets still queued in the daemon's
 * socket. (Closing a unix socket with unread data - the answer - makes the
 * peer's socket report ECONNRESET/POLLERR before the queued packets.) The
 * daemon is stopped (SIGSTOP) while the client sends and closes, so the
 * packets are certainly still queued then; a client that did read its
 * answer is the control. Also: one that shut its read side before the
 * answer (it cannot be sent) and one that closes right after its handshake
 * are closed without harm. */
static void test_handshake_answer_unread(void **state)
{
    HOSTILE_BEGIN(NULL);
    int deaf = connect_raw(d.socket, "\x08\x01", 2);
    wait_readable(deaf);
    int hearing = connect_handshaken(d.socket);
    for (uint32_t i = 0; i < 50; i++)
        send_pkt(deaf, pkt_open("deaf-early", i));
    sleep_ms(100);
    assert_int_equal(kill(d.pid, SIGSTOP), 0);
    for (uint32_t i = 0; i < 100; i++) {
        send_pkt(deaf, pkt_open("deaf", i));
        send_pkt(hearing, pkt_open("hearing", i));
    }
    close(deaf);
    close(hearing);
    assert_int_equal(kill(d.pid, SIGCONT), 0);

    int shut = listener_connect(d.socket);
    assert_true(shut >= 0);
    assert_int_equal(shutdown(shut, SHUT_RD), 0);
    send_bytes(shut, "\x08\x01", 2);
    int gone = connect_raw(d.socket, "\x08\x01", 2);
    close(gone);
    sleep_ms(200);
    close(shut);
    HOSTILE_END_STREAM();
    assert_int_equal(marker_rows(&d, "hearing"), 100);
    assert_int_equal(marker_rows(&d, "deaf-early"), 50);
    long long deaf_conn = marker_conn(&d, "deaf-early");
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT close_reason FROM connections WHERE id=%lld", deaf_conn);
    size_t rlen;
    uint8_t *reason = db_bytes(&d, sql, &rlen);
    printf("unread answer: deaf client sent 150, %lld stored, closed as %s\n",
           dbq(&d, "SELECT count(*) FROM events WHERE conn_id=%lld", deaf_conn), reason ? (char *)reason : "?");
    free(reason);
    assert_int_equal(marker_rows(&d, "deaf"), 100);
    assert_int_equal(dbq(&d, "SELECT count(*) FROM connections WHERE id=%lld AND client_version=1 AND "
                             "messages=150", deaf_conn), 1);
    assert_int_equal(dbq(&d, "SELECT count(*) FROM connections WHERE close_reason IS NOT NULL AND messages=0"), 2);
    HOSTILE_CLEANUP();
}

/* ------------------------------------------------------------------ */
/* floods                                                               */
/* ------------------------------------------------------------------ */

/* --max-connections 3 (the bystander and two idle clients): five more are
 * closed at once and counted ("refused 5"); the allowed ones are served,
 * and once one leaves a new client gets its place. */
static void test_connection_limit(void **state)
{
    const char *args[] = {"--max-connections", "3", NULL};
    HOSTILE_BEGIN(args);
    int a = connect_handshaken(d.socket);
    int b = connect_handshaken(d.socket);
    char err[256];
    for (int i = 0; i < 5; i++) {
        int fd = replay_connect(d.socket, 1, 2000, err, sizeof(err));
        if (fd >= 0)
            fail_msg("connection %d over the limit was accepted", i);
    }
    send_marker(a, "allowed-a");
    close(a);
    /* Wait for the daemon to record a's close before taking its place. */
    for (int i = 0; i < 300 && dbq(&d, "SELECT count(*) FROM connections WHERE close_reason='eof'") < 1; i++)
        sleep_ms(10);
    int c = connect_handshaken(d.socket);
    send_marker(c, "replacement");
    send_marker(b, "allowed-b");
    close(b);
    close(c);
    HOSTILE_END_STREAM();
    assert_int_equal(summary_number(log, "summary: connections", "(refused "), 5);
    assert_int_equal(dbq(&d, "SELECT count(*) FROM connections"), 4);
    assert_int_equal(marker_rows(&d, "allowed-a"), 1);
    assert_int_equal(marker_rows(&d, "allowed-b"), 1);
    assert_int_equal(marker_rows(&d, "replacement"), 1);
    HOSTILE_CLEANUP();
}

/* A connection sending flat out: the trace's packets in a loop, or one
 * packet (big) again and again. */
struct flooder {
    const struct replay_trace *trace;
    const struct pkt *big;
    atomic_bool *stop;
    pthread_t thread;
    int fd;
    uint64_t sent;
};

static void *flooder_main(void *arg)
{
    struct flooder *f = arg;
    for (size_t i = 0; !atomic_load(f->stop); i++) {
        const uint8_t *p = f->big ? f->big->data : f->trace->packets[i % f->trace->count];
        size_t len = f->big ? f->big->len : f->trace->lengths[i % f->trace->count];
        if (replay_send(f->fd, p, len) != 0)
            break;
        f->sent++;
    }
    return NULL;
}

/* sndbuf: 0 for the default, else SO_SNDBUF to ask for (unprivileged). */
static void flooders_start(struct flooder *f, int n, const char *socket, const struct replay_trace *t,
                           const struct pkt *big, int sndbuf, atomic_bool *stop)
{
    for (int i = 0; i < n; i++) {
        f[i] = (struct flooder){.trace = t, .big = big, .stop = stop};
        f[i].fd = connect_handshaken(socket);
        if (sndbuf)
            setsockopt(f[i].fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
        assert_int_equal(pthread_create(&f[i].thread, NULL, flooder_main, &f[i]), 0);
    }
}

static uint64_t flooders_finish(struct flooder *f, int n, atomic_bool *stop)
{
    atomic_store(stop, true);
    uint64_t sent = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(f[i].thread, NULL);
        close(f[i].fd);
        sent += f[i].sent;
    }
    return sent;
}

/* Time the thread tid has spent runnable but waiting for a CPU. */
static long long run_delay_ns(pid_t tid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)tid, (int)tid);
    FILE *f = fopen(path, "r");
    long long run = 0, delay = 0;
    if (f) {
        if (fscanf(f, "%lld %lld", &run, &delay) != 2)
            delay = 0;
        fclose(f);
    }
    return delay;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Latency bounds for the quiet connection (p50 and max of events.recv_ns
 * minus CLOCK_REALTIME at send). In the default block mode, once the
 * writer queue is full, reading pauses for EVERY connection until the
 * writer hands a batch back, so a quiet message can wait one batch commit
 * (4096 events: 75-135 ms at the 30-55k events/s SQLite sustains here),
 * plus a loop turn (<= 2 x 256 flood packets, a few ms), plus the time the
 * loop thread waits for a CPU (150-550 ms over the 2 s, measured below).
 * Seen on 2 cores shared with other sessions' fuzzers and benchmarks:
 * p50 37-100 ms, max 140-480 ms; ASan p50 85-143, max 290-510. So a
 * 200 ms max does not hold with the default --batch-size (with
 * --batch-size 512 the max is 52-85 ms). The bounds hold there with room,
 * and still catch starvation, where a quiet connection is read only when
 * the flood lets go and waits for the whole 2 s (p50 ~1 s): measured with
 * a flooder that raised its SO_SNDBUF (test_big_packet_flood_...), and
 * with --batch-size 64 --queue-max 1 in the test above (p50 450 ms, max
 * 1.3 s). */
#ifdef SECCHECKD_SANITIZED
#define QUIET_P50_MS 400
#define QUIET_MAX_LATENCY_MS 1500
#else
#define QUIET_P50_MS 250
#define QUIET_MAX_LATENCY_MS 1000
#endif

/* The quiet sandbox: one Open every 10 ms (dropped_count = sequence
 * number), sent like gVisor does: non-blocking, a full socket buffer is a
 * drop. */
enum { QUIET_MAX = 256 };

struct quiet {
    int fd;
    int n;
    int64_t sent_at[QUIET_MAX];   /* CLOCK_REALTIME at send */
    bool sent[QUIET_MAX];
    int dropped;
    long long run_delay_ns;       /* the daemon loop waiting for a CPU meanwhile */
};

static void quiet_run(struct quiet *q, pid_t daemon_pid)
{
    long long delay0 = run_delay_ns(daemon_pid);
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (int seq = 0; seq < q->n; seq++) {
        next.tv_nsec += 10 * 1000000;
        if (next.tv_nsec >= 1000000000) {
            next.tv_nsec -= 1000000000;
            next.tv_sec++;
        }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
            ;
        struct pkt p = pkt_open("quiet", (uint32_t)seq);
        q->sent_at[seq] = clock_ns(CLOCK_REALTIME);
        if (send(q->fd, p.data, p.len, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)p.len)
            q->sent[seq] = true;
        else
            q->dropped++;
        free(p.data);
    }
    q->run_delay_ns = run_delay_ns(daemon_pid) - delay0;
}

/* After the daemon stopped: every quiet message sent is stored once; its
 * latency (events.recv_ns - sent_at) has p50 and max under the bounds. */
static void quiet_check(const struct daemon *d, const struct quiet *q, const char *what)
{
    long long conn = marker_conn(d, "quiet");
    sqlite3 *h;
    assert_int_equal(sqlite3_open_v2(d->db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(h, "SELECT dropped_count, recv_ns FROM events WHERE conn_id=?1 ORDER BY id",
                                        -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_int64(st, 1, conn);
    int64_t latency[QUIET_MAX];
    bool seen[QUIET_MAX] = {false};
    int rows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        long long seq = sqlite3_column_int64(st, 0);
        assert_true(seq >= 0 && seq < q->n && q->sent[seq] && !seen[seq]);
        seen[seq] = true;
        latency[rows++] = sqlite3_column_int64(st, 1) - q->sent_at[seq];
        if (getenv("HOSTILE_VERBOSE") && latency[rows - 1] > 50000000)
            printf("  quiet #%lld sent at +%.0f ms: %.1f ms\n", seq, (double)(q->sent_at[seq] - q->sent_at[0]) / 1e6,
                   (double)latency[rows - 1] / 1e6);
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    assert_true(rows > 0);
    qsort(latency, (size_t)rows, sizeof(latency[0]), cmp_i64);
    double p50 = (double)latency[rows / 2] / 1e6, p99 = (double)latency[rows * 99 / 100] / 1e6,
           worst = (double)latency[rows - 1] / 1e6;
    printf("%s: quiet latency p50 %.2f ms, p99 %.2f ms, max %.2f ms (bounds %d / %d ms), %d of %d dropped at the "
           "sender; daemon loop waited %.0f ms for a CPU\n", what, p50, p99, worst, QUIET_P50_MS,
           QUIET_MAX_LATENCY_MS, q->dropped, q->n, (double)q->run_delay_ns / 1e6);
    assert_int_equal(q->dropped, 0);
    assert_int_equal(rows, q->n);
    assert_true(latency[0] >= 0);
    assert_true(p50 < QUIET_P50_MS);
    assert_true(worst < QUIET_MAX_LATENCY_MS);
}

/* Two connections flood flat out (blocking sends of recorded packets in
 * tight loops) while a quiet one sends one message every 10 ms for 2 s:
 * every quiet message is stored, none dropped at the sender, latency under
 * the bounds; every flood message is stored too. */
static void test_flood_does_not_starve_quiet(void **state)
{
    struct fixture *fx = *state;
    struct daemon d;
    start_daemon(&d, NULL);
    /* The quiet one connects first: the oldest connection is re-armed last
     * after a pause, the worst place to be. */
    static struct quiet q;
    memset(&q, 0, sizeof(q));
    q.fd = connect_handshaken(d.socket);
    q.n = 200;
    atomic_bool stop = false;
    struct flooder floods[2];
    flooders_start(floods, 2, d.socket, &fx->busy, NULL, 0, &stop);
    sleep_ms(200);   /* flood at full pressure first */
    quiet_run(&q, d.pid);
    close(q.fd);
    uint64_t flooded = flooders_finish(floods, 2, &stop);
    char *log = stop_daemon(&d);
    if (getenv("HOSTILE_VERBOSE"))
        printf("%s", strstr(log, "seccheckd: summary: "));
    printf("flood: %" PRIu64 " flood messages (%.0f/s)\n", flooded, (double)flooded / 2.2);
    quiet_check(&d, &q, "flood");
    assert_true(flooded > 20000);   /* it really was a flood */
    assert_int_equal(dbq(&d, "SELECT count(*) FROM events WHERE conn_id != %lld", marker_conn(&d, "quiet")),
                     (long long)flooded);
    free(log);
    daemon_cleanup(&d);
}

/* One connection floods 100 KB packets flat out after raising its
 * SO_SNDBUF (any unprivileged process may, up to net.core.wmem_max), so
 * it always has more than a batch queued; a quiet, older connection sends
 * one message every 10 ms for 2 s. Same checks as above. */
static void test_big_packet_flood_does_not_starve_quiet(void **state)
{
    (void)state;
    struct daemon d;
    start_daemon(&d, NULL);
    static struct quiet q;
    memset(&q, 0, sizeof(q));
    q.fd = connect_handshaken(d.socket);
    q.n = 200;
    struct pkt big = pkt_open_of_size(100000, 0);
    atomic_bool stop = false;
    struct flooder flood;
    flooders_start(&flood, 1, d.socket, NULL, &big, 4 << 20, &stop);
    int sndbuf = 0;
    socklen_t sl = sizeof(sndbuf);
    getsockopt(flood.fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &sl);
    sleep_ms(200);
    quiet_run(&q, d.pid);
    close(q.fd);
    uint64_t flooded = flooders_finish(&flood, 1, &stop);
    char *log = stop_daemon(&d);
    printf("big-packet flood: %" PRIu64 " packets of 100 KB, flooder SO_SNDBUF %d\n", flooded, sndbuf);
    quiet_check(&d, &q, "big-packet flood");
    assert_int_equal(dbq(&d, "SELECT count(*) FROM events WHERE length(raw)=100000"), (long long)flooded);
    free(big.data);
    free(log);
    daemon_cleanup(&d);
}

/* SIGTERM while two connections flood flat out: the daemon stops within
 * --drain-timeout-ms plus the time to write what is queued (up to 8
 * batches of 4096 events: ~1.5 s under ASan on a busy box), closes them
 * (shutdown), and every packet it read is accounted for; the bystander's
 * are all stored. A daemon that drains until its clients stop never
 * stops (the 15 s deadline in stop_daemon fails it). */
#ifdef SECCHECKD_SANITIZED
#define SHUTDOWN_MAX_MS 6000
#else
#define SHUTDOWN_MAX_MS 3000
#endif
static void test_flood_at_shutdown(void **state)
{
    const char *args[] = {"--drain-timeout-ms", "500", NULL};
    HOSTILE_BEGIN(args);
    atomic_bool stop = false;
    struct flooder floods[2];
    flooders_start(floods, 2, d.socket, &fx->busy, NULL, 0, &stop);
    sleep_ms(300);
    bystander_finish(&by);
    int64_t t0 = clock_ns(CLOCK_MONOTONIC);
    char *log = stop_daemon(&d);
    int64_t stop_ms = (clock_ns(CLOCK_MONOTONIC) - t0) / 1000000;
    uint64_t flooded = flooders_finish(floods, 2, &stop);
    printf("flood at shutdown: stopped in %" PRId64 " ms, %" PRIu64 " flood messages sent\n", stop_ms, flooded);
    assert_true(stop_ms < SHUTDOWN_MAX_MS);
    bystander_check(&d, &by);
    assert_int_equal(dbq(&d, "SELECT count(*) FROM connections WHERE close_reason='shutdown'"), 2);
    assert_int_equal(dbq(&d, "SELECT received - stored FROM runs"), 0);
    assert_true(dbq(&d, "SELECT stored FROM runs") >= 10000);
    HOSTILE_CLEANUP();
}

/* ------------------------------------------------------------------ */
/* ancillary data                                                       */
/* ------------------------------------------------------------------ */

/* Packets carrying SCM_RIGHTS descriptors (a sandbox passing fds to the
 * collector): stored as plain packets, and no descriptor stays open in the
 * daemon. */
static void test_passed_fds_not_kept(void **state)
{
    HOSTILE_BEGIN(NULL);
    int fd = connect_handshaken(d.socket);
    send_marker(fd, "fds-warmup");
    sleep_ms(200);
    int before = open_fd_count(d.pid);
    enum { NFD = 64, PACKETS = 50 };
    int fds[NFD];
    for (int i = 0; i < NFD; i++)
        fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
    for (uint32_t k = 0; k < PACKETS; k++) {
        struct pkt p = pkt_open("with-fds", k);
        union {
            char buf[CMSG_SPACE(sizeof(fds))];
            struct cmsghdr align;
        } ctl;
        memset(&ctl, 0, sizeof(ctl));
        struct iovec iov = {.iov_base = p.data, .iov_len = p.len};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf)};
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(fds));
        memcpy(CMSG_DATA(c), fds, sizeof(fds));
        assert_int_equal(sendmsg(fd, &mh, MSG_NOSIGNAL), (ssize_t)p.len);
        free(p.data);
    }
    sleep_ms(300);
    int after = open_fd_count(d.pid);
    printf("passed fds: daemon has %d descriptors before, %d after %d packets x %d fds\n", before, after, PACKETS, NFD);
    assert_true(after <= before + 2);
    for (int i = 0; i < NFD; i++)
        close(fds[i]);
    close(fd);
    HOSTILE_END_STREAM();
    assert_int_equal(marker_rows(&d, "with-fds"), PACKETS);
    HOSTILE_CLEANUP();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_short_packets),
        cmocka_unit_test(test_zero_length_packet),
        cmocka_unit_test(test_bad_header_size),
        cmocka_unit_test(test_unknown_types),
        cmocka_unit_test(test_bad_payloads),
        cmocka_unit_test(test_mutated_payloads),
        cmocka_unit_test(test_invalid_utf8_strings),
        cmocka_unit_test(test_huge_repeated_counts),
        cmocka_unit_test(test_oversize_packets),
        cmocka_unit_test(test_largest_packets),
        cmocka_unit_test(test_handshake_garbage),
        cmocka_unit_test(test_handshake_versions),
        cmocka_unit_test(test_handshake_empty_packet),
        cmocka_unit_test(test_handshake_oversized),
        cmocka_unit_test(test_second_handshake),
        cmocka_unit_test(test_no_handshake_timeout),
        cmocka_unit_test(test_handshake_then_silence),
        cmocka_unit_test(test_handshake_answer_unread),
        cmocka_unit_test(test_connection_limit),
        cmocka_unit_test(test_flood_does_not_starve_quiet),
        cmocka_unit_test(test_big_packet_flood_does_not_starve_quiet),
        cmocka_unit_test(test_flood_at_shutdown),
        cmocka_unit_test(test_passed_fds_not_kept),
    };
    /* HOSTILE_ONLY=test_name (cmocka pattern) runs a subset. */
    if (getenv("HOSTILE_ONLY"))
        cmocka_set_test_filter(getenv("HOSTILE_ONLY"));
    return cmocka_run_group_tests(tests, setup, teardown);
}
