#include "conn.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "wire.h"

static void on_handle_closed(uv_handle_t *h)
{
    struct conn *c = h->data;
    if (--c->open_handles == 0) {
        if (!c->detached)
            close(c->fd);
        share_account_drop(c->share);   /* lives on while batches still hold its events */
        free(c);
    }
}

void conn_close(struct conn *c, const char *reason)
{
    if (c->state == CONN_CLOSED)
        return;
    conn_fold_pause(c);
    c->state = CONN_CLOSED;
    c->rec.close_ns = realtime_ns();
    snprintf(c->rec.close_reason, sizeof(c->rec.close_reason), "%s", reason);
    c->env->on_close(c, c->env->data);
    uv_poll_stop(&c->poll);
    uv_close((uv_handle_t *)&c->poll, on_handle_closed);
    uv_close((uv_handle_t *)&c->handshake_timer, on_handle_closed);
}

static void on_handshake_timeout(uv_timer_t *t)
{
    struct conn *c = t->data;
    log_warn("connection %llu: no handshake within %u ms, closing", (unsigned long long)conn_id(c),
             c->env->handshake_timeout_ms);
    conn_close(c, "handshake_timeout");
}

/* A connection that starts streaming while reading is paused starts paused:
 * its poll would otherwise fire every turn, each read refused. */
static void pause_unless_readable(struct conn *c)
{
    if (c->env->may_read(c, c->env->data) == CONN_STOP)
        conn_pause(c);
}

/* After a read of 0 bytes: the peer closed (EOF again), or it sent an
 * empty packet (nothing more to read yet). */
static bool peer_closed(int fd)
{
    char b;
    return recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/* What came instead of a handshake, for the log: its size and first bytes,
 * in hex and as text ("12 bytes: 47 45 54 20 ... \"GET / HTTP/1.1\"..."). */
static void describe_packet(const uint8_t *pkt, size_t len, bool truncated, char *out, size_t outlen)
{
    enum { SHOWN = 16 };
    size_t shown = len < SHOWN ? len : SHOWN, at = 0;
    at += (size_t)snprintf(out, outlen, "%s%zu bytes:", truncated ? "more than " : "", len);
    for (size_t i = 0; i < shown && at < outlen; i++)
        at += (size_t)snprintf(out + at, outlen - at, " %02x", pkt[i]);
    if (at + 4 < outlen) {
        at += (size_t)snprintf(out + at, outlen - at, " \"");
        for (size_t i = 0; i < shown && at + 2 < outlen; i++)
            out[at++] = pkt[i] >= 0x20 && pkt[i] < 0x7f && pkt[i] != '"' ? (char)pkt[i] : '.';
        snprintf(out + at, outlen - at, "\"%s", shown < len || truncated ? "..." : "");
    }
}

/* The first packet was not a gVisor handshake: say what was expected and
 * what came (a hostile or confused peer; one line per connection, as its
 * open and close). */
static void refuse_handshake(struct conn *c, const uint8_t *pkt, size_t len, bool truncated)
{
    char got[200], bytes[140];
    uint32_t version;
    describe_packet(pkt, len, truncated, bytes, sizeof(bytes));
    if (len == 0 && !truncated)
        snprintf(got, sizeof(got), "an empty packet");
    else if (!truncated && wire_handshake_version(pkt, len, &version) == 0)
        snprintf(got, sizeof(got), "a Handshake of version %u (%s)", version, bytes);
    else
        snprintf(got, sizeof(got), "%s", bytes);
    log_warn("connection %llu: not a gVisor seccheck client: expected a Handshake message of version %d or later "
             "(runsc's remote sink), got %s; closing",
             (unsigned long long)conn_id(c), WIRE_VERSION, got);
    conn_close(c, "bad_handshake");
}

static void conn_handshake(struct conn *c)
{
    struct recv_ring *ring = c->env->ring;
    int n = recv_ring_fill(ring, c->fd, 1);
    if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            conn_close(c, "recv_error");
        return;
    }
    size_t len;
    bool truncated;
    const uint8_t *pkt = recv_ring_packet(ring, 0, &len, &truncated);
    uint32_t version;
    if (len == 0 && !truncated && peer_closed(c->fd)) {
        /* Closed without a byte: someone checking that the socket is
         * served (a second daemon refusing to start), not a sandbox. */
        conn_close(c, CONN_CLOSE_PROBE);
        return;
    }
    if (truncated || wire_handshake_parse(pkt, len, &version) != 0) {
        refuse_handshake(c, pkt, len, truncated);
        return;
    }
    uint8_t answer[8];
    size_t alen = wire_handshake_encode(WIRE_VERSION, answer);
    if (send(c->fd, answer, alen, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)alen) {
        conn_close(c, "handshake_send_failed");
        return;
    }
    uv_timer_stop(&c->handshake_timer);
    conn_id(c);
    c->rec.client_version = version;
    c->state = CONN_STREAMING;
    c->dirty = true;
    pause_unless_readable(c);
    if (c->env->on_handshake)
        c->env->on_handshake(c, c->env->data);
}

/* A hostile sandbox can send bad packets flat out: the first rejection of a
 * connection is logged, then at most one line per 10 s with the count. */
static void log_rejections(struct conn *c, int64_t now)
{
    if (c->rec.rejected == c->rejections_logged || now - c->rejections_logged_ns < 10000000000LL)
        return;
    log_warn("connection %llu: %llu packets rejected so far (bad header, too large...; see the runs table)",
             (unsigned long long)c->rec.id, (unsigned long long)c->rec.rejected);
    c->rejections_logged = c->rec.rejected;
    c->rejections_logged_ns = now;
}

/* One packet to ingest; what became an event is charged to c's share of
 * the batch it went into (ingest may have sealed the one before), by the
 * arena bytes it took there (its copy and what decoding it allocated). */
static void ingest_charged(struct conn *c, const uint8_t *pkt, size_t len, bool truncated, int64_t now)
{
    struct pipeline *p = c->env->ingest->pipeline;
    struct batch *before = pipeline_current(p);
    size_t count_before = before->count, used_before = arena_used(&before->arena);
    ingest_packet(c->env->ingest, &c->rec, pkt, len, truncated, now);
    struct batch *b = pipeline_current(p);
    bool same = b == before;
    if (b->count > (same ? count_before : 0) &&
        share_charge(c->share, b, arena_used(&b->arena) - (same ? used_before : 0)) != 0)
        log_debug("connection %llu: out of memory for its share entry; not charged", (unsigned long long)c->rec.id);
}

/* Hands n received packets to ingest (or drops them, counted); true if one
 * of them was EOF. */
static bool conn_ingest(struct conn *c, unsigned n, bool drop)
{
    struct recv_ring *ring = c->env->ring;
    int64_t now = realtime_ns();
    bool eof = false;
    for (unsigned i = 0; i < n && !eof; i++) {
        size_t len;
        bool truncated;
        const uint8_t *pkt = recv_ring_packet(ring, i, &len, &truncated);
        eof = len == 0 && !truncated;
        if (eof)
            break;
        if (drop)
            ingest_drop(c->env->ingest, &c->rec, len);
        else
            ingest_charged(c, pkt, len, truncated, now);
    }
    log_rejections(c, now);
    return eof;
}

enum conn_read_result conn_read(struct conn *c, unsigned budget)
{
    const struct conn_env *env = c->env;
    bool reset_seen = false;
    while (budget > 0) {
        enum conn_go go = env->may_read(c, env->data);
        if (go == CONN_STOP)
            return CONN_READ_BLOCKED;
        unsigned want = budget < env->ring->nslots ? budget : env->ring->nslots;
        int64_t before = realtime_ns();   /* an empty read: anything later was sent after this */
        int n = recv_ring_fill(env->ring, c->fd, want);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                c->rec.emptied_ns = before;
                return CONN_READ_DRAINED;
            }
            if (errno == ECONNRESET && !reset_seen) {
                reset_seen = true;   /* the peer left our data unread; what it queued follows */
                continue;
            }
            log_warn("connection %llu: recv: %s", (unsigned long long)conn_id(c), strerror(errno));
            conn_close(c, "recv_error");
            return CONN_READ_CLOSED;
        }
        c->dirty = true;
        if (conn_ingest(c, (unsigned)n, go == CONN_DROP)) {
            conn_close(c, "eof");
            return CONN_READ_CLOSED;
        }
        if ((unsigned)n < want) {   /* the socket had less than we asked for */
            c->rec.emptied_ns = before;   /* set after ingesting: those packets were sent before */
            return CONN_READ_DRAINED;
        }
        budget -= (unsigned)n;
    }
    return CONN_READ_BUDGET;
}

static void on_readable(uv_poll_t *h, int status, int events)
{
    struct conn *c = h->data;
    (void)events;
    if (status < 0) {
        /* POLLERR: on a unix socket, the peer closed with data of ours
         * unread. What it sent first is still queued: read on to EOF. */
        if (c->state != CONN_STREAMING) {
            conn_close(c, "poll_error");
            return;
        }
        uv_poll_start(&c->poll, UV_READABLE | UV_DISCONNECT, on_readable);   /* libuv stopped it */
    }
    if (c->state == CONN_HANDSHAKE) {
        conn_handshake(c);
        return;
    }
    if (c->state != CONN_STREAMING)
        return;
    int64_t started = monotonic_ns();
    enum conn_read_result r = conn_read(c, c->env->read_budget);
    *c->env->read_ns += monotonic_ns() - started;
    if (r == CONN_READ_BLOCKED)
        c->env->on_blocked(c, c->env->data);
}

void conn_pause(struct conn *c)
{
    if (c->state == CONN_STREAMING && !c->paused) {
        uv_poll_stop(&c->poll);
        c->paused = true;
        c->paused_since_ns = monotonic_ns();
        c->rec.paused_count++;
        c->dirty = true;
    }
}

void conn_fold_pause(struct conn *c)
{
    if (!c->paused || c->held)
        return;
    int64_t now = monotonic_ns();
    c->rec.paused_ns += now - c->paused_since_ns;
    c->paused_since_ns = now;
    c->dirty = true;
}

void conn_resume(struct conn *c)
{
    if (c->state == CONN_STREAMING && c->paused && !c->held) {
        conn_fold_pause(c);
        uv_poll_start(&c->poll, UV_READABLE | UV_DISCONNECT, on_readable);
        c->paused = false;
    }
}

void conn_hold(struct conn *c)
{
    conn_fold_pause(c);
    uv_poll_stop(&c->poll);
    c->paused = c->held = true;
}

static void read_peer_credentials(struct conn *c)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    c->rec.peer_pid = c->rec.peer_uid = c->rec.peer_gid = -1;
    if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
        c->rec.peer_pid = cred.pid;
        c->rec.peer_uid = cred.uid;
        c->rec.peer_gid = cred.gid;
    }
}

/* The parts of a new and an adopted connection that are the same. */
static struct conn *conn_create(const struct conn_env *env, int fd)
{
    struct conn *c = calloc(1, sizeof(*c));
    if (c && !(c->share = share_account_new(env->share_pool))) {
        free(c);
        c = NULL;
    }
    if (!c) {
        close(fd);
        return NULL;
    }
    c->env = env;
    c->fd = fd;
    if (uv_poll_init(env->loop, &c->poll, fd) != 0) {
        close(fd);
        share_account_drop(c->share);
        free(c);
        return NULL;
    }
    c->poll.data = c;
    uv_timer_init(env->loop, &c->handshake_timer);
    c->handshake_timer.data = c;
    c->open_handles = 2;
    return c;
}

static void conn_watch(struct conn *c)
{
    uv_poll_start(&c->poll, UV_READABLE | UV_DISCONNECT, on_readable);
    if (c->state == CONN_HANDSHAKE)
        uv_timer_start(&c->handshake_timer, on_handshake_timeout, c->env->handshake_timeout_ms, 0);
    else
        pause_unless_readable(c);
}

uint64_t conn_id(struct conn *c)
{
    if (c->rec.id == 0)
        c->rec.id = c->env->take_id(c->env->data);
    return c->rec.id;
}

struct conn *conn_new(const struct conn_env *env, int fd)
{
    struct conn *c = conn_create(env, fd);
    if (!c)
        return NULL;
    c->state = CONN_HANDSHAKE;
    c->rec.connect_ns = realtime_ns();
    read_peer_credentials(c);
    conn_watch(c);
    return c;
}

struct conn *conn_adopt(const struct conn_env *env, int fd, const struct conn_record *rec, enum conn_state state)
{
    struct conn *c = conn_create(env, fd);
    if (!c)
        return NULL;
    c->rec = *rec;
    c->state = state;
    c->dirty = true;
    conn_watch(c);
    return c;
}

void conn_leave_to_relay(struct conn *c, uint32_t index)
{
    uv_poll_stop(&c->poll);
    c->relayed = true;
    c->relay_index = index;
}

void conn_ingest_relayed(struct conn *c, const uint8_t *pkt, size_t len, bool truncated, int64_t recv_ns, bool drop)
{
    c->dirty = true;
    if (drop)
        ingest_drop(c->env->ingest, &c->rec, len);
    else
        ingest_charged(c, pkt, len, truncated, recv_ns);
    log_rejections(c, recv_ns);
}

void conn_relayed_emptied(struct conn *c, int64_t ns)
{
    c->rec.emptied_ns = ns;
}

void conn_take_back(struct conn *c)
{
    if (!c->relayed || c->state != CONN_STREAMING)
        return;
    c->relayed = false;
    uv_poll_start(&c->poll, UV_READABLE | UV_DISCONNECT, on_readable);
    pause_unless_readable(c);
}

void conn_detach(struct conn *c)
{
    if (c->state == CONN_CLOSED)
        return;
    c->state = CONN_CLOSED;
    c->detached = true;
    uv_poll_stop(&c->poll);
    uv_close((uv_handle_t *)&c->poll, on_handle_closed);
    uv_close((uv_handle_t *)&c->handshake_timer, on_handle_closed);
}
