#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "exposition.h"
#include "log.h"
#include "notify.h"

#define ACCEPTS_PER_TURN 64
#define LOG_EVERY_NS (10 * 1000000000LL)   /* repeated warnings: at most one line per 10 s */
#define ACCEPT_BACKOFF_MS 100              /* accept failing for lack of resources: wait this long */

void server_config_defaults(struct server_config *cfg)
{
    *cfg = (struct server_config){
        .socket_path = "/tmp/seccheck.sock",
        .socket_mode = 0660,
        .socket_gid = -1,
        .max_message = 256 * 1024,   /* above the kernel's default SEQPACKET limit */
        .max_connections = 1024,
        .handshake_timeout_ms = 5000,
        .read_budget = 256,
        .recv_batch = 32,
        .flush_ms = 100,
        .drain_timeout_ms = 2000,
        .pipeline = {.limits = {.max_events = 4096, .max_bytes = 8u << 20}, .queue_max = 8, .reserve = 2},
    };
}

static void seal_current(struct server *s);

/* ---- backpressure: fair shares of the writer queue ----
 *
 * Below --queue-max batches in flight everyone reads. At --queue-max, a
 * connection holding more than its fair share of what the writer has not
 * committed (fair_share.h) stops (block) or has what it sends dropped and
 * counted (drop); the others read on, into up to --queue-reserve batches
 * more. The share shrinks as the reserve fills (to half with one of two
 * reserve batches left), so connections that dropped just under it (their
 * batches came back) do not use up the room the quiet ones need. With the
 * reserve in flight too, every connection stops (block), or what does not
 * fit is dropped (drop, in ingest). */

static void note_first_read(struct server *s);

static enum conn_go may_read(struct conn *c, void *data)
{
    struct server *s = data;
    if (s->resume_stopped_ns)
        note_first_read(s);
    const struct pipeline *p = &s->pipeline;
    if (!pipeline_saturated(p))
        return CONN_GO;
    size_t left = pipeline_reserve_left(p);
    if (s->cfg.drop_when_full) {
        /* Exhausted: the ones under (a sliver of) their share go on, and
         * ingest drops what does not fit in the open batch. */
        size_t num = left ? left : 1, den = p->cfg.reserve ? p->cfg.reserve : 1;
        return share_over_fair(c->share, num, den) ? CONN_DROP : CONN_GO;
    }
    if (left == 0 || share_over_fair(c->share, left, p->cfg.reserve))
        return CONN_STOP;
    return CONN_GO;
}

static void drain_step(struct server *s);
static void hand_over(struct server *s);
static bool ready_to_hand_over(struct server *s);
static void abandon_restart(struct server *s);
static void intake_pump(struct server *s);

/* c was told to stop: it pauses, and goes to the tail of the list, so the
 * others are re-armed, and read, before it. */
static void on_blocked(struct conn *c, void *data)
{
    struct server *s = data;
    if (c->next) {
        if (c->prev)
            c->prev->next = c->next;
        else
            s->conns = c->next;
        c->next->prev = c->prev;
        struct conn *tail = c->next;
        while (tail->next)
            tail = tail->next;
        tail->next = c;
        c->prev = tail;
        c->next = NULL;
    }
    conn_pause(c);
    log_debug("connection %" PRIu64 " paused: %" PRIu64 " of %" PRIu64 " queued units among %u connections, %zu "
              "batches in flight",
              c->rec.id, c->share->units, s->shares.units, s->shares.holders, pipeline_in_flight(&s->pipeline));
}

/* A batch came back: the paused connections that may read now resume. */
static void on_space(void *data)
{
    struct server *s = data;
    if (s->stopping) {
        if (!pipeline_saturated(&s->pipeline))
            drain_step(s);
        return;
    }
    if (s->restart == RESTART_DRAINING && ready_to_hand_over(s)) {
        hand_over(s);
        return;
    }
    if (s->intake.blocked) {
        intake_pump(s);   /* the relay's log waited for this batch */
        if (s->stopping)
            return;   /* it was the last, and a stop waiting for it began */
    }
    if (s->flush_pending && !pipeline_saturated(&s->pipeline))
        seal_current(s);   /* the flush the full queue put off */
    for (struct conn *c = s->conns; c; c = c->next)
        if (c->paused && may_read(c, s) == CONN_GO)
            conn_resume(c);
}

/* ---- connection bookkeeping ---- */

static void snapshot_dirty_conns(struct batch *b, void *data)
{
    struct server *s = data;
    for (struct conn *c = s->conns; c; c = c->next) {
        conn_fold_pause(c);
        if (c->dirty && batch_add_conn(b, &c->rec) == 0)
            c->dirty = false;
    }
}

static void unlink_conn(struct server *s, struct conn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nconns--;
}

/* A connection that closed without a byte: not a sandbox. Counted, never
 * recorded, and it took no id. */
static void forget_probe(struct server *s, struct conn *c)
{
    s->stats.probes++;
    unlink_conn(s, c);
    log_debug("a connection closed without sending anything (a probe, peer pid %" PRId64 "): not counted as a "
              "sandbox", c->rec.peer_pid);
}

/* A sandbox: counted once, when it handshakes (or at its close, if it never
 * did), so that a probe never is. */
static void count_connection(struct server *s, const struct conn *c)
{
    s->stats.connections_total++;
    if (c->rec.client_version != 0)
        log_info("connection %" PRIu64 " opened: peer pid %" PRId64 " uid %" PRId64 ", client version %u",
                 c->rec.id, c->rec.peer_pid, c->rec.peer_uid, c->rec.client_version);
}

static uint64_t take_conn_id(void *data)
{
    struct server *s = data;
    return s->next_conn_id++;
}

static void on_handshake(struct conn *c, void *data)
{
    struct server *s = data;
    count_connection(s, c);
    if (s->cfg.on_conn_ready)
        s->cfg.on_conn_ready(c->rec.id, c->fd, s->cfg.conn_ready_data);
}

static void on_conn_close(struct conn *c, void *data)
{
    struct server *s = data;
    if (strcmp(c->rec.close_reason, CONN_CLOSE_PROBE) == 0) {
        forget_probe(s, c);
        return;
    }
    conn_id(c);   /* one that never handshook gets its id now */
    if (c->relayed && c->relay_index < s->intake.nconns)
        s->intake.conns[c->relay_index] = NULL;   /* later records of its relay's log go nowhere */
    if (batch_add_conn(pipeline_current(&s->pipeline), &c->rec) != 0)
        log_error("connection %" PRIu64 ": out of memory recording its close", c->rec.id);
    if (c->rec.client_version == 0)
        count_connection(s, c);
    if (c->rec.client_version == 0 && strcmp(c->rec.close_reason, "shutdown") != 0)
        s->stats.handshake_failures++;
    s->stats.sandbox_dropped += c->rec.sandbox_dropped;
    s->stats.pauses += c->rec.paused_count;
    s->stats.paused_ns += c->rec.paused_ns;
    unlink_conn(s, c);
    log_info("connection %" PRIu64 " closed (%s): %" PRIu64 " messages, %" PRIu64 " bytes, %" PRIu64
             " sandbox drops, %" PRIu64 " rejected",
             c->rec.id, c->rec.close_reason, c->rec.messages, c->rec.bytes, c->rec.sandbox_dropped,
             c->rec.rejected);
    if (s->cfg.on_conn_closed)
        s->cfg.on_conn_closed(&c->rec, s->cfg.hook_data);
}

static void link_conn(struct server *s, struct conn *c)
{
    s->nconns++;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
}

static bool peer_allowed(const struct server *s, int fd, struct ucred *cred)
{
    socklen_t len = sizeof(*cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &len) != 0)
        return s->cfg.allowed_uids_count == 0;
    if (s->cfg.allowed_uids_count == 0)
        return true;
    for (unsigned i = 0; i < s->cfg.allowed_uids_count; i++)
        if (s->cfg.allowed_uids[i] == cred->uid)
            return true;
    return false;
}

/* A hostile peer may connect flat out: the first of a kind is logged, then
 * at most one line per 10 s (the line carries the running count). */
static bool log_due(int64_t *last_ns)
{
    int64_t now = monotonic_ns();
    if (*last_ns != 0 && now - *last_ns < LOG_EVERY_NS)
        return false;
    *last_ns = now;
    return true;
}

static void accept_one(struct server *s, int fd)
{
    struct ucred cred = {0};
    if (!peer_allowed(s, fd, &cred)) {
        close(fd);
        s->stats.connections_denied++;
        if (log_due(&s->denied_logged_ns))
            log_warn("denied a connection from pid %d uid %d: not in --allow-uid (%" PRIu64 " denied so far)",
                     (int)cred.pid, (int)cred.uid, s->stats.connections_denied);
        return;
    }
    if (s->nconns >= s->cfg.max_connections) {
        close(fd);
        s->stats.connections_refused++;
        if (log_due(&s->refused_logged_ns))
            log_warn("refused a connection: already %u open (raise --max-connections; %" PRIu64
                     " refused so far)", s->nconns, s->stats.connections_refused);
        return;
    }
    struct conn *c = conn_new(&s->conn_env, fd);
    if (!c) {
        log_error("could not set up a new connection (out of memory?)");
        return;
    }
    link_conn(s, c);
    log_debug("accepted a connection: peer pid %" PRId64 " uid %" PRId64 "; waiting for its handshake",
              c->rec.peer_pid, c->rec.peer_uid);
}

/* A descriptor held back for the moment accept fails with EMFILE. */
static int open_reserve_fd(void)
{
    return open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* Out of descriptors (libuv's uv__emfile_trick, nginx does the same): the
 * listener is level-triggered, so a connection left in the backlog would
 * wake the loop every turn. Free the reserve, accept and close what is
 * pending (the peers see EOF at once), take the reserve back. Returns the
 * connections refused, or -1 when the trick cannot work now. */
static int refuse_pending_for_lack_of_fds(struct server *s)
{
    if (s->reserve_fd < 0 && (s->reserve_fd = open_reserve_fd()) < 0)
        return -1;
    close(s->reserve_fd);
    s->reserve_fd = -1;
    int refused = 0;
    for (int i = 0; i < ACCEPTS_PER_TURN; i++) {
        int fd = accept4(s->listener.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                refused = -1;
            break;
        }
        close(fd);
        refused++;
    }
    s->reserve_fd = open_reserve_fd();   /* a slot another thread took is tried again next time */
    return refused;
}

static void on_listener_readable(uv_poll_t *h, int status, int events);

static void on_accept_backoff_over(uv_timer_t *t)
{
    struct server *s = t->data;
    if (!s->stopping)
        uv_poll_start(&s->listen_poll, UV_READABLE, on_listener_readable);
}

/* accept failed for a reason other than an empty backlog: count and say so
 * (rate-limited), and never leave the loop spinning on the listener. */
static void accept_failed(struct server *s, int err)
{
    int refused = -1;
    if (err == EMFILE || err == ENFILE)
        refused = refuse_pending_for_lack_of_fds(s);
    if (refused > 0) {
        s->stats.connections_refused += (uint64_t)refused;
        s->stats.connections_refused_no_fd += (uint64_t)refused;
    }
    if (log_due(&s->accept_failed_logged_ns))
        log_error("accept: %s: %s (%" PRIu64 " connections refused for lack of descriptors so far; raise the "
                  "open-file limit, ulimit -n or LimitNOFILE=, or lower --max-connections)",
                  strerror(err), refused >= 0 ? "closing pending connections" : "pausing accept for 100 ms",
                  s->stats.connections_refused_no_fd);
    if (refused < 0) {
        /* No reserve, or another error (ENOBUFS, ENOMEM): stop watching the
         * listener for a while; the backlog waits in the kernel. */
        uv_poll_stop(&s->listen_poll);
        uv_timer_start(&s->accept_backoff_timer, on_accept_backoff_over, ACCEPT_BACKOFF_MS, 0);
    }
}

static void on_listener_readable(uv_poll_t *h, int status, int events)
{
    struct server *s = h->data;
    (void)events;
    if (status < 0) {
        log_error("listener poll: %s", uv_strerror(status));
        return;
    }
    /* The reserve before any new connection: had another thread taken its
     * slot (SQLite's temporary files while it builds an index), the
     * connections would take every slot freed since, and out of
     * descriptors again the daemon could neither serve nor refuse. */
    if (s->reserve_fd < 0)
        s->reserve_fd = open_reserve_fd();
    for (int i = 0; i < ACCEPTS_PER_TURN; i++) {
        int fd = accept4(s->listener.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            accept_one(s, fd);
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            accept_failed(s, errno);
        break;
    }
}

/* ---- flushing and stopping ---- */

static void seal_current(struct server *s)
{
    /* With the queue full, a batch sealed now would only wait behind the
     * full ones, and a small one sealed at every flush would use up the
     * reserve meant for the connections under their share: the open batch
     * stays open (ingest seals it once full) until a batch comes back. */
    if (pipeline_saturated(&s->pipeline)) {
        s->flush_pending = true;
        return;
    }
    s->flush_pending = false;
    if (pipeline_seal(&s->pipeline) != 0)
        log_error("out of memory sealing a batch; it stays open");
}

static void on_flush_timer(uv_timer_t *t)
{
    seal_current(t->data);
}

static void close_handle(uv_handle_t *h)
{
    if (h->type != UV_UNKNOWN_HANDLE && !uv_is_closing(h))
        uv_close(h, NULL);
}

/* The handles the server itself owns (not connections, not the listener),
 * but for the signal handles. */
static void close_loop_handles(struct server *s)
{
    close_handle((uv_handle_t *)&s->flush_timer);
    close_handle((uv_handle_t *)&s->accept_backoff_timer);
    close_handle((uv_handle_t *)&s->drain_timer);
    close_handle((uv_handle_t *)&s->watchdog_timer);
    close_handle((uv_handle_t *)&s->restart_timer);
    close_handle((uv_handle_t *)&s->intake.more);
    stall_meter_close(&s->stalls);
    metrics_stop(&s->metrics);   /* a restarted image listens again */
}

static void close_signal_handles(struct server *s)
{
    close_handle((uv_handle_t *)&s->sigint);
    close_handle((uv_handle_t *)&s->sigterm);
    close_handle((uv_handle_t *)&s->sigusr2);
    close_handle((uv_handle_t *)&s->sighup);
    close_handle((uv_handle_t *)&s->settle);
}

static void finish(struct server *s)
{
    if (s->finished)
        return;
    s->finished = true;
    relay_launch_free(s->relay, true);
    s->relay = NULL;
    relay_feed_close(s->intake.feed);   /* only when a start failed half-way: a stop waits for the relay */
    s->intake.feed = NULL;
    while (s->conns)
        conn_close(s->conns, "shutdown");
    pipeline_finish(&s->pipeline);
    sink_finish(s->sink, realtime_ns());
    close_loop_handles(s);
    close_signal_handles(s);
}

static void on_drain_timeout(uv_timer_t *t)
{
    struct server *s = t->data;
    log_warn("shutdown: connections still sending after %u ms; closing them", s->cfg.drain_timeout_ms);
    finish(s);
}

/* Reads every streaming connection dry; finishes once all are drained. */
static void drain_step(struct server *s)
{
    for (struct conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        if (c->state != CONN_STREAMING)
            continue;
        enum conn_read_result r;
        do
            r = conn_read(c, s->cfg.read_budget);
        while (r == CONN_READ_BUDGET && monotonic_ns() < s->drain_deadline_ns);
        if (r == CONN_READ_BLOCKED)
            return;   /* on_space calls again once a batch is back */
        if (r == CONN_READ_BUDGET) {
            on_drain_timeout(&s->drain_timer);
            return;
        }
    }
    finish(s);
}

void server_stop(struct server *s)
{
    if (s->stopping)
        return;
    if (s->intake.feed) {
        /* What the relay read is stored first; then the sockets drain. */
        if (!s->intake.then_stop)
            log_info("stopping once the restart's relay has handed over");
        s->intake.then_stop = true;
        relay_feed_stop(s->intake.feed);
        return;
    }
    abandon_restart(s);
    s->stopping = true;
    notify_send("STOPPING=1");
    log_info("stopping: no new connections; draining %u open", s->nconns);
    uv_poll_stop(&s->listen_poll);
    close_handle((uv_handle_t *)&s->listen_poll);
    close_handle((uv_handle_t *)&s->accept_backoff_timer);
    listener_close(&s->listener);
    for (struct conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        if (c->state == CONN_HANDSHAKE)
            conn_close(c, "shutdown");
        else
            conn_hold(c);   /* drain_step reads them directly */
    }
    s->drain_deadline_ns = monotonic_ns() + (int64_t)s->cfg.drain_timeout_ms * 1000000;
    uv_timer_start(&s->drain_timer, on_drain_timeout, s->cfg.drain_timeout_ms, 0);
    drain_step(s);
}

/* ---- restart: hand every connection to a new image of ourselves ----
 *
 * SIGUSR2 checks the build to run (restart_check.h) and lets the writer
 * commit what is queued, checkpointing the WAL, while reading goes on and
 * a relay starts (relay.h); only then does this image stop reading, and
 * the relay reads from that instant until the new image has opened its
 * sink, loaded its rules and taken in what the relay read. What is left to
 * commit here is the open batch, and the new image opens a short WAL. From
 * the hand-over the signals a restart holds are blocked: one arriving then
 * is handled by the new image (handoff.h). A build that cannot read the
 * relay's log, or a relay that does not start, makes a restart without
 * one: the sockets then wait unread until the new image reads them. */

#define RESTART_DRAIN_MS 1000        /* the writer still behind after this: hand over anyway */
#define RESTART_RELAY_WAIT_MS 10000  /* and a relay not started after this more: without it */

static void close_signal_handles(struct server *s);

/* The relay reads no further ahead than this image would queue before it
 * paused reading: as many packets as the writer's queue and its reserve
 * hold, in a log of 32 MiB (about 200,000 small events) and one largest
 * packet more. Sparse: only what the relay writes takes memory, and the
 * new image gives back what it took in. */
#define RELAY_LOG_BYTES (32u << 20)

static uint64_t relay_log_bytes(const struct server *s)
{
    return RELAY_LOG_BYTES + s->cfg.max_message;
}

static struct relay_limits relay_limits(const struct server *s)
{
    const struct pipeline_config *p = &s->cfg.pipeline;
    return (struct relay_limits){.log_bytes = relay_log_bytes(s),
                                 .max_packets = (uint64_t)(p->queue_max + p->reserve) * p->limits.max_events,
                                 .max_message = s->cfg.max_message};
}

static bool relay_pending(const struct server *s)
{
    return s->relay && !s->relay_ready;
}

/* The writer caught up, the relay (if any) is ready, and the last
 * restart's relay handed over. */
static bool ready_to_hand_over(struct server *s)
{
    return pipeline_in_flight(&s->pipeline) == 0 && !relay_pending(s) && !s->intake.feed;
}

static void drop_relay(struct server *s)
{
    relay_launch_free(s->relay, true);
    s->relay = NULL;
    s->relay_ready = false;
}

static void on_relay_ready(const char *failure, void *data)
{
    struct server *s = data;
    if (failure) {
        log_warn("restart: no relay (%s): the sockets wait unread while the new image starts", failure);
        drop_relay(s);
    } else {
        s->relay_ready = true;
        log_debug("restart: the relay is ready");
    }
    if (s->restart == RESTART_DRAINING && ready_to_hand_over(s))
        hand_over(s);
}

static void launch_relay(struct server *s)
{
    if (!s->checked.reads_relay_log) {
        log_info("restart: %s does not take over a relay (an older build): the sockets wait unread while it "
                 "starts", s->cfg.restart_binary);
        return;
    }
    char err[256];
    s->relay_ready = s->relay_waited = false;
    struct relay_limits limits = relay_limits(s);
    s->relay = relay_launch(s->loop, &limits, on_relay_ready, s, err, sizeof(err));
    if (!s->relay)
        log_warn("restart: %s; the sockets wait unread while the new image starts", err);
}

/* The relay reads every streaming connection from now: indexes as in the
 * state save_handoff writes (the list's order). 0, or -1 (relay gone). */
static int pass_to_relay(struct server *s, int64_t stopped_ns)
{
    struct relay_conn *rc = calloc(s->nconns ? s->nconns : 1, sizeof(*rc));
    size_t n = 0;
    uint32_t index = 0;
    for (struct conn *c = s->conns; rc && c; c = c->next, index++)
        if (c->state == CONN_STREAMING)
            rc[n++] = (struct relay_conn){.fd = c->fd, .index = index};
    char err[256];
    int ret = rc ? relay_hand_over(s->relay, rc, n, stopped_ns, err, sizeof(err)) : -1;
    if (ret != 0)
        log_warn("restart: %s; the sockets wait unread while the new image starts", rc ? err : "out of memory");
    free(rc);
    return ret;
}

static void restart_refused(struct server *s, const char *why)
{
    drop_relay(s);
    s->restart = RESTART_NONE;
    s->stats.restarts.refused++;
    log_error("restart refused: %s; this image carries on with every connection", why);
    notify_send("READY=1");
    if (s->restart_again) {
        s->restart_again = false;
        server_restart(s);
    }
}

/* A stop while the restart is still checking or draining: nothing was
 * handed over yet. */
static void abandon_restart(struct server *s)
{
    if (s->restart == RESTART_NONE)
        return;
    if (s->check) {
        restart_check_cancel(s->check);
        sink_checking(s->sink, false);
    }
    s->check = NULL;
    drop_relay(s);
    uv_timer_stop(&s->restart_timer);
    s->restart = RESTART_NONE;
    s->restart_again = false;
    log_info("restart abandoned: stopping");
}

/* The state the new image adopts; fd, or -1 with err. */
static int save_handoff(struct server *s, int64_t stopped_ns, char *err, size_t errlen)
{
    struct handoff h;
    handoff_init(&h);
    h.listener = s->listener;
    h.next_conn_id = s->next_conn_id;
    h.stopped_reading_ns = stopped_ns;
    h.restarts = s->stats.restarts;
    h.fallback_fd = s->fallback_fd;
    h.fallback_argv = (char **)s->cfg.restart_argv;
    if (s->relay)
        h.relay = relay_launch_fds(s->relay);
    /* A build that takes a relay reads this too; an older one is sent the
     * signal again (held across exec, hand_over). */
    h.restart_again = s->restart_again && s->checked.reads_relay_log;
    h.conns = calloc(s->nconns ? s->nconns : 1, sizeof(*h.conns));
    if (!h.conns) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (struct conn *c = s->conns; c; c = c->next)
        h.conns[h.nconns++] = (struct handoff_conn){.fd = c->fd, .state = c->state, .rec = c->rec};
    int fd = handoff_save(&h, err, errlen);
    free(h.conns);
    return fd;
}

static void hold_signals(bool hold)
{
    sigset_t held;
    handoff_held_signals(&held);
    pthread_sigmask(hold ? SIG_BLOCK : SIG_UNBLOCK, &held, NULL);
}

/* Two more loop turns, the signal handles still open: a signal libuv
 * caught just before they were blocked is dispatched (and held), not lost
 * with its handle. Then the loop ends. */
static void on_settle(uv_idle_t *h)
{
    struct server *s = h->data;
    if (++s->settle_turns >= 2)
        close_signal_handles(s);
}

static void close_loop_handles(struct server *s);

/* Stops reading for good, commits, saves the state; the loop then ends and
 * main executes the new image. */
static void hand_over(struct server *s)
{
    const char *binary = s->cfg.restart_binary;
    uv_timer_stop(&s->restart_timer);
    if (!s->checked.runs_current_image && !restart_check_same_binary(binary, &s->checked.checked)) {
        log_info("restart: %s changed since its check; checking it again", binary);
        drop_relay(s);
        s->restart = RESTART_NONE;
        server_restart(s);
        return;
    }
    hold_signals(true);
    int64_t stopped_ns = monotonic_ns();   /* nothing is read after this: the records saved stay exact */
    s->fallback_fd = open("/proc/self/exe", O_PATH | O_CLOEXEC);
    if (s->fallback_fd < 0)
        log_warn("restart: cannot open this image (/proc/self/exe: %s): a new image that cannot start has no "
                 "build to come back to", strerror(errno));
    char err[256];
    int fd = save_handoff(s, stopped_ns, err, sizeof(err));
    if (fd >= 0 && s->relay && pass_to_relay(s, stopped_ns) != 0) {
        drop_relay(s);   /* the state must not name it */
        close(fd);
        fd = save_handoff(s, stopped_ns, err, sizeof(err));
    }
    if (fd < 0) {
        if (s->fallback_fd >= 0)
            close(s->fallback_fd);
        s->fallback_fd = -1;
        hold_signals(false);
        restart_refused(s, err);
        return;
    }
    if (s->restart_again && !s->checked.reads_relay_log)
        kill(getpid(), SIGUSR2);   /* held: the new image restarts once more */
    s->restart = RESTART_HANDING_OVER;
    log_info("restart: handing %u connections and the socket to %s%s", s->nconns,
             s->checked.runs_current_image ? "the running image again" : binary,
             s->relay ? "; the relay reads them meanwhile" : "");
    relay_launch_free(s->relay, false);   /* it lives on, for the new image */
    s->relay = NULL;
    s->stopping = s->finished = true;
    uv_poll_stop(&s->listen_poll);
    uv_timer_stop(&s->accept_backoff_timer);
    for (struct conn *c = s->conns; c; c = c->next)
        c->dirty = true;   /* their rows show the counts at the handoff */
    pipeline_finish(&s->pipeline);
    sink_handoff(s->sink);
    sink_finish(s->sink, realtime_ns());
    while (s->conns) {
        struct conn *c = s->conns;
        s->conns = c->next;
        conn_detach(c);
    }
    s->nconns = 0;
    close_handle((uv_handle_t *)&s->listen_poll);
    s->listener.fd = -1;   /* the new image owns it: do not close or unlink */
    s->handoff_fd = fd;
    close_loop_handles(s);
    uv_idle_start(&s->settle, on_settle);
}

#define RESTART_INTAKE_POLL_MS 100

static void on_drain_deadline(uv_timer_t *t)
{
    struct server *s = t->data;
    if (s->intake.feed) {   /* the last restart's relay first: intake_finish hands over */
        uv_timer_start(&s->restart_timer, on_drain_deadline, RESTART_INTAKE_POLL_MS, 0);
        return;
    }
    if (relay_pending(s) && !s->relay_waited) {
        s->relay_waited = true;
        log_warn("restart: the relay has not started after %d ms; waiting up to %d ms more", RESTART_DRAIN_MS,
                 RESTART_RELAY_WAIT_MS);
        uv_timer_start(&s->restart_timer, on_drain_deadline, RESTART_RELAY_WAIT_MS, 0);
        return;
    }
    if (relay_pending(s)) {
        log_warn("restart: the relay did not start; handing over without it");
        drop_relay(s);
    }
    if (pipeline_in_flight(&s->pipeline))
        log_warn("restart: the writer still has %zu batches after %d ms; handing over, they are committed first",
                 pipeline_in_flight(&s->pipeline), RESTART_DRAIN_MS);
    hand_over(s);
}

/* The check passed: the writer catches up, the WAL is checkpointed (the
 * new image opens a short one), while reading goes on; on_space hands
 * over once nothing is in flight. */
static void on_checked(const struct restart_check_result *r, void *data)
{
    struct server *s = data;
    s->check = NULL;
    sink_checking(s->sink, false);
    if (r->failure) {
        restart_refused(s, r->failure);
        return;
    }
    s->checked = *r;
    s->checked.failure = NULL;
    s->restart = RESTART_DRAINING;
    launch_relay(s);
    sink_handoff_soon(s->sink);
    seal_current(s);
    if (ready_to_hand_over(s))
        hand_over(s);
    else
        uv_timer_start(&s->restart_timer, on_drain_deadline, RESTART_DRAIN_MS, 0);
}

void server_restart(struct server *s)
{
    if (s->stopping)
        return;
    if (s->restart != RESTART_NONE) {
        s->restart_again = true;
        log_info("restart: one is under way; another follows it");
        return;
    }
    notify_send("RELOADING=1");
    char err[512];
    if (!s->cfg.restart_binary) {
        restart_refused(s, "no binary to run");
        return;
    }
    s->check = restart_check_start(s->loop, s->cfg.restart_binary, s->cfg.restart_argv, on_checked, s, err,
                                   sizeof(err));
    if (!s->check) {
        restart_refused(s, err);
        return;
    }
    s->restart = RESTART_CHECKING;
    sink_checking(s->sink, true);   /* the check writes the database too: the writer leaves it room */
    log_info("restart: checking the settings with %s", s->cfg.restart_binary);
}

static void on_signal(uv_signal_t *h, int signum)
{
    struct server *s = h->data;
    if (s->restart == RESTART_HANDING_OVER) {
        log_info("received %s: held for the new image", strsignal(signum));
        kill(getpid(), signum);   /* blocked now: pending across exec */
        return;
    }
    log_info("received %s", strsignal(signum));
    if (signum == SIGUSR2)
        server_restart(s);
    else if (signum == SIGHUP)
        s->cfg.on_reload ? s->cfg.on_reload(s, s->cfg.reload_data) : log_info("nothing to reload");
    else
        server_stop(s);
}

/* ---- setup ---- */

/* Pinged from the loop thread, so a stuck loop stops the pings and systemd
 * restarts the service. */
static void on_watchdog(uv_timer_t *t)
{
    (void)t;
    notify_send("WATCHDOG=1");
}

static void start_watchdog(struct server *s)
{
    uint64_t usec = notify_watchdog_usec();
    uv_timer_init(s->loop, &s->watchdog_timer);
    if (usec == 0)
        return;
    uint64_t every_ms = usec / 2000 ? usec / 2000 : 1;
    uv_timer_start(&s->watchdog_timer, on_watchdog, every_ms, every_ms);
    uv_unref((uv_handle_t *)&s->watchdog_timer);
    log_info("systemd watchdog: pinging every %llu ms", (unsigned long long)every_ms);
}

static int start_handles(struct server *s, char *err, size_t errlen)
{
    uv_loop_t *loop = s->loop;
    start_watchdog(s);
    uv_timer_init(loop, &s->flush_timer);
    uv_timer_init(loop, &s->drain_timer);
    uv_timer_init(loop, &s->accept_backoff_timer);
    uv_timer_init(loop, &s->restart_timer);
    uv_idle_init(loop, &s->settle);
    uv_idle_init(loop, &s->intake.more);
    s->intake.more.data = s;
    s->flush_timer.data = s->drain_timer.data = s->accept_backoff_timer.data = s->restart_timer.data = s;
    s->settle.data = s;
    uv_timer_start(&s->flush_timer, on_flush_timer, s->cfg.flush_ms, s->cfg.flush_ms);
    uv_signal_init(loop, &s->sigint);
    uv_signal_init(loop, &s->sigterm);
    s->sigint.data = s->sigterm.data = s;
    uv_signal_start(&s->sigint, on_signal, SIGINT);
    uv_signal_start(&s->sigterm, on_signal, SIGTERM);
    uv_signal_init(loop, &s->sigusr2);
    s->sigusr2.data = s;
    uv_signal_start(&s->sigusr2, on_signal, SIGUSR2);
    uv_signal_init(loop, &s->sighup);
    s->sighup.data = s;
    uv_signal_start(&s->sighup, on_signal, SIGHUP);
    /* Blocked since server_start (and across a restart's exec): handled
     * from here on, on this thread only. */
    hold_signals(false);
    int rc = stall_meter_start(&s->stalls, loop);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the loop's stall meter: %s", uv_strerror(rc));
        return -1;
    }
    rc = uv_poll_init(loop, &s->listen_poll, s->listener.fd);
    if (rc == 0) {
        s->listen_poll.data = s;
        rc = uv_poll_start(&s->listen_poll, UV_READABLE, on_listener_readable);
    }
    if (rc != 0) {
        snprintf(err, errlen, "cannot watch the listening socket: %s", uv_strerror(rc));
        return -1;
    }
    return 0;
}

static void render_metrics(struct strbuf *out, void *data)
{
    exposition_render(out, data);
}

/* A fresh start fails without its endpoint; a restart carries on without it
 * rather than lose the connections it inherits. */
static int start_metrics(struct server *s, char *err, size_t errlen)
{
    if (!s->cfg.metrics_listen)
        return 0;
    if (metrics_start(&s->metrics, s->loop, s->cfg.metrics_listen, render_metrics, s, err, errlen) == 0)
        return 0;
    if (!s->inherited)
        return -1;
    log_error("restart: %s; carrying on without metrics", err);
    return 0;
}

/* Each connection is a descriptor: take the hard limit, and say so when even
 * that cannot hold --max-connections. */
static void raise_fd_limit(unsigned max_connections)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    const rlim_t spare = 64;   /* listener, database, loop, logs */
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)max_connections + spare)
        log_warn("open-file limit %llu allows about %llu connections, below --max-connections %u; raise it "
                 "(ulimit -n, or LimitNOFILE= under systemd)",
                 (unsigned long long)rl.rlim_cur, (unsigned long long)(rl.rlim_cur > spare ? rl.rlim_cur - spare : 0),
                 max_connections);
}

/* The restart that started this image: counted, and said how it went. */
static void note_restart(struct server *s, const struct handoff *h)
{
    s->stats.restarts = h->restarts;
    if (h->failure[0])
        log_error("restart failed: the new image could not start (%s); the build that ran before carries on "
                  "with every connection", h->failure);
    else
        s->stats.restarts.ok++;
    if (h->relay.pid <= 0)   /* with a relay: its last read, once it handed over (intake_finish) */
        s->resume_stopped_ns = h->stopped_reading_ns;
    s->resume_exec_ns = h->exec_ns;
    if (h->next_conn_id > s->next_conn_id)
        s->next_conn_id = h->next_conn_id;   /* ids of connections closed before the restart stay taken */
    s->restart_again = h->restart_again;   /* server_start restarts once it is up */
}

/* The previous reader's last read to this image's first: what the
 * sandboxes had to buffer (loaded into the metrics too, with a relay the
 * longer of its two hand-overs). */
static void note_first_read(struct server *s)
{
    int64_t now = monotonic_ns(), stopped = s->resume_stopped_ns, exec = s->resume_exec_ns;
    int64_t to_relay = s->intake.handover_ns;
    s->resume_stopped_ns = 0;
    s->stats.restart_pause_ns = now - stopped > to_relay ? now - stopped : to_relay;
    if (to_relay > 0)
        log_info("restart: reading again %.2f ms after the relay's last read (the relay took over %.2f ms after "
                 "the previous image's last read)", (double)(now - stopped) / 1e6, (double)to_relay / 1e6);
    else if (exec > stopped && exec < now)
        log_info("restart: reading again %.1f ms after the previous image's last read (%.1f ms until its exec, "
                 "%.1f ms from there)", (double)(now - stopped) / 1e6, (double)(exec - stopped) / 1e6,
                 (double)(now - exec) / 1e6);
    else
        log_info("restart: reading again %.1f ms after the previous image's last read", (double)(now - stopped) / 1e6);
}

/* ---- after a restart with a relay: its log first, then the sockets ----
 *
 * The relay read the streaming connections while this image started. Its
 * records go in as the packets would have been read, in order, under the
 * same backpressure (a record waits for batch space, the relay reads on);
 * a turn takes a share of them, so the loop serves the rest meanwhile.
 * Caught up, the relay is told to stop; once its last records are in,
 * each connection reads its socket again. */

#define INTAKE_RECORDS_PER_TURN 4096
#define INTAKE_CATCH_UP_MS 10000   /* not caught up by then (a writer too slow): stop the relay anyway */

static void intake_finish(struct server *s, const struct relay_summary *sum)
{
    struct relay_intake *in = &s->intake;
    in->handover_ns = sum->started_ns > sum->handed_ns ? sum->started_ns - sum->handed_ns : 1;
    s->resume_stopped_ns = sum->stopped_ns;   /* note_first_read: its last read to ours */
    log_info("restart: the relay read %" PRIu64 " packets (%" PRIu64 " bytes) in %.1f ms while this image "
             "started; taking the sockets back", sum->packets, sum->bytes,
             (double)(sum->stopped_ns - sum->started_ns) / 1e6);
    if (sum->full)
        log_warn("restart: the relay's log filled (%" PRIu64 " packets): it stopped reading before this image "
                 "took them in; the sandboxes buffered what they could, their drops are counted", sum->packets);
    for (uint32_t i = 0; i < in->nconns; i++)
        if (in->conns[i])
            conn_take_back(in->conns[i]);
    free(in->conns);
    in->conns = NULL;
    in->nconns = 0;
    relay_feed_close(in->feed);
    in->feed = NULL;
    if (in->then_stop)
        server_stop(s);
    else if (s->restart == RESTART_DRAINING && ready_to_hand_over(s))
        hand_over(s);   /* a restart that came meanwhile waited for this one's relay */
}

/* One record into its connection; false when it must wait for batch space. */
static bool intake_record(struct server *s, const struct relay_record *r, const uint8_t *payload)
{
    struct conn *c = s->intake.conns[r->conn];
    if (!c)
        return true;   /* closed already (its EOF came before), or it could not be adopted */
    enum conn_go go;
    switch (r->type) {
    case RELAY_PACKET:
        if ((go = may_read(c, s)) == CONN_STOP)
            return false;
        conn_ingest_relayed(c, payload, r->len, (r->flags & RELAY_TRUNCATED) != 0, r->ns, go == CONN_DROP);
        break;
    case RELAY_EMPTIED:
        conn_relayed_emptied(c, r->ns);
        break;
    case RELAY_EOF:
        conn_close(c, "eof");
        break;
    default:
        log_warn("connection %" PRIu64 ": recv: %s", c->rec.id, strerror((int)r->flags));
        conn_close(c, "recv_error");
        break;
    }
    return true;
}

static void on_intake_more(uv_idle_t *h)
{
    intake_pump(h->data);
}

static void intake_pump(struct server *s)
{
    struct relay_intake *in = &s->intake;
    if (!in->feed)
        return;
    in->blocked = false;
    struct relay_record r;
    const uint8_t *payload;
    int rc = 0;
    for (int n = 0; n < INTAKE_RECORDS_PER_TURN && (rc = relay_feed_peek(in->feed, &r, &payload)) == 1; n++) {
        if (!intake_record(s, &r, payload)) {
            in->blocked = true;
            break;
        }
        relay_feed_take(in->feed, &r);
    }
    if (rc == 1 && !in->blocked) {
        uv_idle_start(&in->more, on_intake_more);   /* the rest next turn */
        return;
    }
    uv_idle_stop(&in->more);
    /* Caught up (or its log ends here): the sockets are ours next. Waiting
     * for the writer: reading would pause here too, so the relay stops
     * reading ahead (the rest of its log goes in as batches come back). */
    if (rc <= 0 || in->blocked) {
        relay_feed_stop(in->feed);
    } else if (monotonic_ns() > in->deadline_ns && !in->deadline_passed) {
        in->deadline_passed = true;
        log_warn("restart: not caught up with the relay after %d ms; stopping it", INTAKE_CATCH_UP_MS);
        relay_feed_stop(in->feed);
    }
    struct relay_summary sum;
    if (relay_feed_done(in->feed, &sum))
        intake_finish(s, &sum);
}

static void intake_wake(void *data)
{
    struct server *s = data;
    if (!s->intake.blocked)
        intake_pump(s);
}

/* The relay of h (handoff.h) reads the connections relayed[0..n) marks:
 * its log comes first. Without a readable log, they read at once. */
static void intake_start(struct server *s, const struct handoff *h)
{
    struct relay_intake *in = &s->intake;
    char err[256];
    in->feed = relay_feed_open(s->loop, &h->relay, in->nconns, intake_wake, s, err, sizeof(err));
    if (!in->feed) {
        log_error("restart: %s; the relay is stopped, what it read is lost, the sockets are read from here", err);
        struct relay_summary none = {.handed_ns = h->stopped_reading_ns, .started_ns = h->stopped_reading_ns,
                                     .stopped_ns = h->stopped_reading_ns};
        in->then_stop = false;
        intake_finish(s, &none);
        return;
    }
    in->deadline_ns = monotonic_ns() + (int64_t)INTAKE_CATCH_UP_MS * 1000000;
    intake_pump(s);
}

/* Connections handed over by the image we replaced carry on here. */
static void adopt_inherited(struct server *s)
{
    const struct handoff *h = s->inherited;
    if (!h)
        return;   /* a fresh start, not a restart */
    bool relayed = h->relay.pid > 0;
    struct relay_intake *in = &s->intake;
    if (relayed && (in->conns = calloc(h->nconns ? h->nconns : 1, sizeof(*in->conns))) != NULL)
        in->nconns = (uint32_t)h->nconns;
    for (size_t i = 0; i < h->nconns; i++) {
        struct conn *c = conn_adopt(&s->conn_env, h->conns[i].fd, &h->conns[i].rec, h->conns[i].state);
        if (!c) {
            log_error("restart: could not adopt connection %" PRIu64, h->conns[i].rec.id);
            continue;
        }
        link_conn(s, c);
        if (c->rec.id >= s->next_conn_id)
            s->next_conn_id = c->rec.id + 1;
        if (in->conns && c->state == CONN_STREAMING) {
            conn_leave_to_relay(c, (uint32_t)i);
            in->conns[i] = c;
        }
    }
    log_info("restart: adopted %u connections", s->nconns);
    note_restart(s, h);
    s->inherited = NULL;   /* the caller's, freed once we return */
    if (relayed)
        intake_start(s, h);
}

int server_listen(struct server *s, const struct server_config *cfg, const struct handoff *inherited, char *err,
                  size_t errlen)
{
    memset(s, 0, sizeof(*s));
    s->cfg = *cfg;
    s->listener.fd = -1;
    s->handoff_fd = -1;
    s->fallback_fd = -1;
    s->reserve_fd = -1;
    raise_fd_limit(cfg->max_connections);
    if (inherited && inherited->listener.fd >= 0) {
        s->inherited = inherited;
        s->listener = inherited->listener;
        if (strcmp(s->listener.path, cfg->socket_path) != 0)
            log_warn("restart: keeping the inherited socket %s (--socket %s applies after a full stop)",
                     s->listener.path, cfg->socket_path);
        return 0;
    }
    int activated = notify_listen_fd();
    if (activated >= 0) {
        if (listener_adopt(&s->listener, activated, err, errlen) != 0)
            return -1;
        log_info("using the socket systemd passed: %s", s->listener.path);
        return 0;
    }
    if (listener_open(&s->listener, cfg->socket_path, SOMAXCONN, cfg->socket_mode, err, errlen) != 0)
        return -1;
    /* lchown: a symlink planted at the path is not followed. */
    if (cfg->socket_gid >= 0 && lchown(cfg->socket_path, (uid_t)-1, (gid_t)cfg->socket_gid) != 0) {
        snprintf(err, errlen, "cannot give %s to group %lld: %s", cfg->socket_path, cfg->socket_gid,
                 strerror(errno));
        return -1;
    }
    return 0;
}

int server_start(struct server *s, uv_loop_t *loop, struct sink *sink, char *err, size_t errlen)
{
    const struct server_config *cfg = &s->cfg;
    s->loop = loop;
    s->sink = sink;
    s->next_conn_id = sink->first_conn_id;
    /* The writer thread (pipeline_init) must never take them: a restart
     * blocks them on this thread only (start_handles unblocks them here). */
    hold_signals(true);
    /* A batch must be able to hold the largest packet we accept. */
    size_t need = decode_arena_need(cfg->max_message);
    if (s->cfg.pipeline.limits.max_bytes < need)
        s->cfg.pipeline.limits.max_bytes = need;
    decoder_init(&s->decoder);
    if (recv_ring_init(&s->ring, cfg->recv_batch, cfg->max_message) != 0) {
        snprintf(err, errlen, "out of memory for %u receive slots of %zu bytes", cfg->recv_batch, cfg->max_message);
        return -1;
    }
    fair_share_init(&s->shares, s->cfg.pipeline.queue_max, &s->cfg.pipeline.limits);
    if (pipeline_init(&s->pipeline, loop, sink, &s->cfg.pipeline, on_space, snapshot_dirty_conns, s) != 0) {
        snprintf(err, errlen, "cannot start the %s sink's pipeline (out of memory or threads)", sink->ops->name);
        return -1;
    }
    s->started = true;
    s->reserve_fd = open_reserve_fd();   /* none is no error: accept_failed pauses instead */
    s->ingest = (struct ingest){.decoder = &s->decoder, .pipeline = &s->pipeline, .count_only = cfg->count_only,
                               .drop_when_full = cfg->drop_when_full, .filter = &s->filter,
                               .by_type = s->stats.received_by_type};
    s->conn_env = (struct conn_env){
        .loop = loop,
        .ring = &s->ring,
        .ingest = &s->ingest,
        .read_budget = cfg->read_budget,
        .handshake_timeout_ms = cfg->handshake_timeout_ms,
        .may_read = may_read,
        .share_pool = &s->shares,
        .take_id = take_conn_id,
        .on_handshake = on_handshake,
        .on_close = on_conn_close,
        .on_blocked = on_blocked,
        .read_ns = &s->stalls.read_ns,
        .data = s,
    };
    if (start_handles(s, err, errlen) != 0 || start_metrics(s, err, errlen) != 0)
        return -1;
    adopt_inherited(s);
    if (s->restart_again) {
        s->restart_again = false;
        log_info("restart: another was asked for during the last one; restarting");
        server_restart(s);
    }
    return 0;
}

void server_set_filter(struct server *s, struct filter *f)
{
    filter_free(&s->filter);
    s->filter = *f;
    memset(f, 0, sizeof(*f));
}

void server_free(struct server *s)
{
    filter_free(&s->filter);
    if (s->inherited)
        s->listener.fd = -1;   /* not adopted: main hands it back (handoff_come_back) */
    listener_close(&s->listener);
    if (s->started && !s->finished) {
        /* Start failed half-way: stop the writer and close our handles. */
        finish(s);
        close_handle((uv_handle_t *)&s->listen_poll);
        uv_run(s->loop, UV_RUN_DEFAULT);
    }
    if (s->started)
        pipeline_free(&s->pipeline);
    if (s->reserve_fd >= 0)
        close(s->reserve_fd);
    s->reserve_fd = -1;
    recv_ring_free(&s->ring);
}

/* "alerts 7: Critical 1, Warning 6; suppressed by --alerts-rate 40; over
 * --alerts-ceiling 0" */
static void print_alerts_summary(const struct alert_tally *t, FILE *out)
{
    uint64_t total = alert_tally_total(t);
    if (!total && !t->suppressed && !t->over_ceiling && !t->lost)
        return;
    fprintf(out, "seccheckd: summary: alerts %" PRIu64, total);
    const char *sep = ": ";
    for (int p = 0; p < RULES_PRIORITY_COUNT; p++)
        if (t->by_priority[p]) {
            fprintf(out, "%s%s %" PRIu64, sep, rules_priority_name(p), t->by_priority[p]);
            sep = ", ";
        }
    fprintf(out, "; suppressed by --alerts-rate %" PRIu64 "; over --alerts-ceiling %" PRIu64, t->suppressed,
            t->over_ceiling);
    if (t->lost)
        fprintf(out, "; lost for lack of memory %" PRIu64, t->lost);
    if (t->lines_failed)
        fprintf(out, "; not written to --alerts-out %" PRIu64, t->lines_failed);
    fputc('\n', out);
}

void server_print_summary(const struct server *s, FILE *out, bool loop_turns)
{
    const struct batch_counts *c = &s->pipeline.counts;
    const struct batch_result *r = &s->pipeline.result;
    uint64_t rejected = batch_counts_rejected(c);
    fprintf(out,
            "seccheckd: summary: %" PRIu64 " received = %" PRIu64 " stored + %" PRIu64 " discarded + %" PRIu64
            " rejected + %" PRIu64 " store_failed%s\n",
            c->received, r->stored, batch_discarded(c, r), rejected, r->failed,
            c->received == r->stored + batch_discarded(c, r) + rejected + r->failed ? "" : " (MISMATCH: please report)");
    fprintf(out, "seccheckd: summary: rejected by reason:");
    for (int i = 0; i < REJECT_REASON_COUNT; i++)
        fprintf(out, " %s %" PRIu64, reject_reason_name(i), c->rejected[i]);
    fprintf(out, "; kept raw, not decoded: unknown_type %" PRIu64 " bad_payload %" PRIu64 "\n",
            c->decode[DECODE_UNKNOWN_TYPE], c->decode[DECODE_BAD_PAYLOAD]);
    fprintf(out,
            "seccheckd: summary: connections %" PRIu64 " (refused %" PRIu64 ", denied %" PRIu64
            ", failed handshakes %" PRIu64 "), sandbox-reported drops %" PRIu64 ", batches %" PRIu64 "\n",
            s->stats.connections_total, s->stats.connections_refused, s->stats.connections_denied,
            s->stats.handshake_failures,
            s->stats.sandbox_dropped, s->pipeline.batches_stored);
    print_alerts_summary(&s->pipeline.alerts, out);
    if (loop_turns)
        stall_meter_print(&s->stalls, out);
}
