#include "sender.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "wire.h"

/* Longest a sender sleeps or blocks before looking at the stop flag again:
 * bounds how long SIGINT or the end of --duration takes to stop it. */
#define STOP_CHECK_NS 100000000LL

/* ---- start gate ---- */

int gate_init(struct start_gate *g)
{
    memset(g, 0, sizeof(*g));
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0)
        return -1;
    /* Main waits with deadlines from monotonic_ns(), immune to clock steps. */
    int rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (rc == 0)
        rc = pthread_cond_init(&g->to_main, &attr);
    pthread_condattr_destroy(&attr);
    if (rc != 0)
        return -1;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->to_senders, NULL);
    return 0;
}

void gate_destroy(struct start_gate *g)
{
    pthread_cond_destroy(&g->to_main);
    pthread_cond_destroy(&g->to_senders);
    pthread_mutex_destroy(&g->mu);
}

int64_t gate_open_when_parked(struct start_gate *g, unsigned n)
{
    pthread_mutex_lock(&g->mu);
    while (g->parked < n)
        pthread_cond_wait(&g->to_main, &g->mu);
    g->start_ns = monotonic_ns();
    g->open = true;
    g->running = n;
    pthread_cond_broadcast(&g->to_senders);
    pthread_mutex_unlock(&g->mu);
    return g->start_ns;
}

void gate_abort(struct start_gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->aborted = true;
    pthread_cond_broadcast(&g->to_senders);
    pthread_mutex_unlock(&g->mu);
}

unsigned gate_wait_finished(struct start_gate *g, int64_t until_ns)
{
    struct timespec ts = {.tv_sec = until_ns / 1000000000, .tv_nsec = until_ns % 1000000000};
    pthread_mutex_lock(&g->mu);
    while (g->running > 0 && pthread_cond_timedwait(&g->to_main, &g->mu, &ts) != ETIMEDOUT)
        ;
    unsigned running = g->running;
    pthread_mutex_unlock(&g->mu);
    return running;
}

/* Sender: park at the gate; false if the run was aborted instead. */
static bool gate_pass(struct start_gate *g, int64_t *start_ns)
{
    pthread_mutex_lock(&g->mu);
    g->parked++;
    pthread_cond_signal(&g->to_main);
    while (!g->open && !g->aborted)
        pthread_cond_wait(&g->to_senders, &g->mu);
    bool go = g->open;
    *start_ns = g->start_ns;
    pthread_mutex_unlock(&g->mu);
    return go;
}

static void gate_leave(struct start_gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->running--;
    pthread_cond_signal(&g->to_main);
    pthread_mutex_unlock(&g->mu);
}

/* ---- one connection ---- */

int sender_init(struct sender *s, unsigned index, int fd, const struct replay_trace *trace, size_t max_header,
                uint64_t limit, const struct sender_config *cfg)
{
    memset(s, 0, sizeof(*s));
    atomic_init(&s->sent, 0);
    atomic_init(&s->dropped, 0);
    s->index = index;
    s->fd = fd;
    s->trace = trace;
    s->limit = limit;
    s->cfg = cfg;
    s->header = malloc(max_header ? max_header : 1);
    return s->header ? 0 : -1;
}

void sender_free(struct sender *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    free(s->header);
    s->header = NULL;
}

int sender_prepare_socket(int fd, enum loadgen_mode mode)
{
    if (mode == MODE_SENTRY) {
        int flags = fcntl(fd, F_GETFL);
        return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    }
    struct timeval tv = {.tv_sec = 0, .tv_usec = STOP_CHECK_NS / 1000};
    return setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static bool stopping(const struct sender *s)
{
    return atomic_load_explicit(s->cfg->stop, memory_order_relaxed);
}

static void sleep_until(int64_t ns)
{
    struct timespec ts = {.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* Message k is due at start + k/rate. The schedule is absolute, so a late
 * message does not push back the ones after it and the rate cannot drift.
 * false when asked to stop while waiting. */
static bool wait_turn(const struct sender *s, int64_t start_ns, uint64_t k)
{
    int64_t due = start_ns + (int64_t)((double)k * 1e9 / s->cfg->rate);
    for (;;) {
        if (stopping(s))
            return false;
        int64_t now = monotonic_ns();
        if (now >= due)
            return true;
        sleep_until(due - now > STOP_CHECK_NS ? now + STOP_CHECK_NS : due);
    }
}

/* Header and payload as gVisor's sink passes them to writev, the header a
 * copy whose dropped_count says how many this connection has dropped so far.
 * The recorded count must not go out: it describes another run, and it would
 * go backwards each time the trace loops, which a collector reads as a wrap
 * of 2^32 drops. A packet without a valid header (a trace made to test a
 * collector's checks) goes out unchanged. */
static void build_iov(struct sender *s, const uint8_t *pkt, size_t len, struct iovec iov[2])
{
    struct wire_header h;
    if (wire_header_parse(pkt, len, &h) != WIRE_OK) {
        iov[0] = (struct iovec){.iov_base = s->header, .iov_len = 0};
        iov[1] = (struct iovec){.iov_base = (void *)pkt, .iov_len = len};
        return;
    }
    memcpy(s->header, pkt, h.header_size);
    uint32_t d = s->dropped_count;
    s->header[4] = (uint8_t)d;
    s->header[5] = (uint8_t)(d >> 8);
    s->header[6] = (uint8_t)(d >> 16);
    s->header[7] = (uint8_t)(d >> 24);
    iov[0] = (struct iovec){.iov_base = s->header, .iov_len = h.header_size};
    iov[1] = (struct iovec){.iov_base = (void *)(pkt + h.header_size), .iov_len = len - h.header_size};
}

enum outcome { SENT, DROPPED, STOPPED, FAILED };

/* gVisor's remote sink: on EAGAIN retry up to `retries` times, sleeping
 * backoff, 2x backoff, ... capped at backoff_max, then drop the point. */
static enum outcome send_sentry(const struct sender *s, const struct iovec iov[2])
{
    int64_t sleep_ns = s->cfg->backoff_ns;
    unsigned retried = 0;
    for (;;) {
        if (writev(s->fd, iov, 2) >= 0)
            return SENT;
        if (errno == EINTR)
            continue;   /* a signal is not the collector's fault: no retry used */
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return FAILED;
        if (retried == s->cfg->retries)
            return DROPPED;
        if (stopping(s))
            return STOPPED;
        sleep_until(monotonic_ns() + sleep_ns);
        retried++;
        sleep_ns = sleep_ns * 2 > s->cfg->backoff_max_ns ? s->cfg->backoff_max_ns : sleep_ns * 2;
    }
}

/* Waits for room however long the collector takes; the socket's send
 * timeout only wakes us to look at the stop flag. */
static enum outcome send_blocking(const struct sender *s, const struct iovec iov[2])
{
    for (;;) {
        if (writev(s->fd, iov, 2) >= 0)
            return SENT;
        if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
            return FAILED;
        if (stopping(s))
            return STOPPED;
    }
}

static enum outcome send_message(struct sender *s, const uint8_t *pkt, size_t len)
{
    struct iovec iov[2];
    build_iov(s, pkt, len, iov);
    return s->cfg->mode == MODE_SENTRY ? send_sentry(s, iov) : send_blocking(s, iov);
}

/* Cycles through the trace from its first packet (a sandbox's session starts
 * with its container start) until the limit or a stop request. The counts
 * are kept in locals and published with plain relaxed stores: the progress
 * line only needs a recent value, and an atomic increment would cost a
 * locked instruction per message. */
static void stream(struct sender *s, int64_t start_ns)
{
    const struct replay_trace *t = s->trace;
    uint64_t sent = 0, dropped = 0;
    size_t pos = 0;
    for (uint64_t k = 0; k < s->limit && !stopping(s); k++) {
        if (s->cfg->rate > 0 && !wait_turn(s, start_ns, k))
            break;
        enum outcome r = send_message(s, t->packets[pos], t->lengths[pos]);
        if (r == FAILED) {
            s->error = errno;
            s->error_after = sent;
        }
        if (r == FAILED || r == STOPPED)
            break;
        if (r == SENT) {
            s->dropped_reported = dropped;   /* its header carried every drop so far */
            s->bytes += t->lengths[pos];
            atomic_store_explicit(&s->sent, ++sent, memory_order_relaxed);
        } else {
            s->dropped_count++;   /* uint32_t: wraps at 2^32 as the wire field does */
            atomic_store_explicit(&s->dropped, ++dropped, memory_order_relaxed);
        }
        if (++pos == t->count)
            pos = 0;
    }
}

void *sender_run(void *arg)
{
    struct sender *s = arg;
    int64_t start_ns;
    if (!gate_pass(s->cfg->gate, &start_ns))
        return NULL;
    stream(s, start_ns);
    s->end_ns = monotonic_ns();
    gate_leave(s->cfg->gate);
    return NULL;
}
