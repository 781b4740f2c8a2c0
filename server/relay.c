#include "relay.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "recv_ring.h"

#define RUNNING_IMAGE "/proc/self/exe"   /* in the child, a fork: the same file as ours */
#define RELAY_CTL_FD 3
#define RELAY_LOG_FD 4
#define RELAY_EVENT_FD 5
#define FDS_PER_MSG 250                   /* under the kernel's SCM_MAX_FD (253) */
#define RELAY_SLOTS 32                    /* packets per recvmmsg, as the daemon's --recv-batch default */
#define RELAY_READ_BUDGET 256             /* packets per connection per turn, as --read-budget */
#define REAP_EVERY_MS 20
#define REAP_KILL_AFTER_MS 5000

/* ---- the control messages (SOCK_SEQPACKET, one struct each) ---- */

enum relay_msg_type {
    MSG_READY = 1,   /* relay -> running image: mapped, listening */
    MSG_CONNS,       /* running image -> relay: up to FDS_PER_MSG sockets (SCM_RIGHTS) and their indexes */
    MSG_GO,          /* running image -> relay: it stopped reading at handed_ns; count sockets in all */
    MSG_STOP,        /* new image -> relay: stop reading */
    MSG_STOPPED,     /* relay -> new image: stopped, every record published */
};

struct relay_msg {
    uint32_t type;
    uint32_t count;
    int64_t handed_ns, started_ns, stopped_ns;
    uint64_t packets, bytes;
    uint32_t full;
    uint32_t index[FDS_PER_MSG];
};

static int send_msg(int fd, const struct relay_msg *m, const int *fds, size_t nfds)
{
    struct iovec iov = {.iov_base = (void *)m, .iov_len = sizeof(*m)};
    union {
        char buf[CMSG_SPACE(sizeof(int) * FDS_PER_MSG)];
        struct cmsghdr align;
    } control;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfds) {
        mh.msg_control = control.buf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
    }
    ssize_t n;
    do
        n = sendmsg(fd, &mh, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof(*m) ? 0 : -1;
}

/* One message, its descriptors (up to FDS_PER_MSG) in fds and *nfds. 1, 0
 * at EOF, -1 with errno (EAGAIN: none yet on a non-blocking socket). */
static int recv_msg(int fd, struct relay_msg *m, int *fds, size_t *nfds, bool dontwait)
{
    struct iovec iov = {.iov_base = m, .iov_len = sizeof(*m)};
    union {
        char buf[CMSG_SPACE(sizeof(int) * FDS_PER_MSG)];
        struct cmsghdr align;
    } control;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                        .msg_controllen = sizeof(control.buf)};
    ssize_t n;
    do
        n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | (dontwait ? MSG_DONTWAIT : 0));
    while (n < 0 && errno == EINTR);
    size_t got = 0;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); n > 0 && cm; cm = CMSG_NXTHDR(&mh, cm))
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
            size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            memcpy(fds + got, CMSG_DATA(cm), sizeof(int) * k);
            got += k;
        }
    if (nfds)
        *nfds = got;
    else
        while (got)
            close(fds[--got]);
    if (n < 0)
        return -1;
    if (n == 0)
        return 0;
    if (n != (ssize_t)sizeof(*m) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
        errno = EPROTO;
        return -1;
    }
    return 1;
}

/* ---- the running image's side ---- */

struct relay_launch {
    uv_process_t process;
    uv_poll_t ctl_poll;
    int open_handles;
    int ctl_fd, log_fd, event_fd;
    pid_t pid;
    bool ready, exited, cancelled, released;
    relay_ready_cb ready_cb;
    void *data;
    char failure[160];
};

static void launch_closed(uv_handle_t *h)
{
    struct relay_launch *r = h->data;
    if (--r->open_handles > 0)
        return;
    if (!r->released) {   /* cancelled or failed: the descriptors go with it */
        close(r->ctl_fd);
        close(r->log_fd);
        close(r->event_fd);
    }
    free(r);
}

static void launch_close_handles(struct relay_launch *r)
{
    if (!uv_is_closing((uv_handle_t *)&r->ctl_poll))
        uv_close((uv_handle_t *)&r->ctl_poll, launch_closed);
    if (!uv_is_closing((uv_handle_t *)&r->process))
        uv_close((uv_handle_t *)&r->process, launch_closed);
}

static void launch_failed(struct relay_launch *r, const char *why)
{
    if (!uv_is_closing((uv_handle_t *)&r->ctl_poll))
        uv_poll_stop(&r->ctl_poll);
    if (!r->cancelled && !r->ready) {
        snprintf(r->failure, sizeof(r->failure), "%s", why);
        r->ready = true;   /* answered */
        r->ready_cb(r->failure, r->data);
    }
}

static void on_relay_exit(uv_process_t *p, int64_t status, int signum)
{
    struct relay_launch *r = p->data;
    char why[96];
    r->exited = true;
    if (signum)
        snprintf(why, sizeof(why), "the relay died of signal %d", signum);
    else
        snprintf(why, sizeof(why), "the relay exited with status %lld", (long long)status);
    launch_failed(r, why);
    if (r->cancelled)
        launch_close_handles(r);
}

static void on_relay_ctl(uv_poll_t *h, int status, int events)
{
    struct relay_launch *r = h->data;
    (void)events;
    struct relay_msg m;
    int rc = status < 0 ? -1 : recv_msg(r->ctl_fd, &m, NULL, NULL, true);
    if (rc < 0 && errno == EAGAIN)
        return;
    uv_poll_stop(h);
    if (rc == 1 && m.type == MSG_READY && !r->ready) {
        r->ready = true;
        r->ready_cb(NULL, r->data);
    } else {
        launch_failed(r, "the relay did not say it was ready");
    }
}

static int spawn_relay(struct relay_launch *r, uv_loop_t *loop, int child_ctl, uint64_t max_packets,
                       size_t max_message)
{
    char packets[24], message[24], parent[24];
    snprintf(packets, sizeof(packets), "%" PRIu64, max_packets);
    snprintf(message, sizeof(message), "%zu", max_message);
    snprintf(parent, sizeof(parent), "%d", (int)getpid());
    char *args[] = {"seccheckd", RELAY_SUBCOMMAND, packets, message, parent, NULL};
    uv_stdio_container_t stdio[6] = {
        {.flags = UV_IGNORE}, {.flags = UV_IGNORE}, {.flags = UV_INHERIT_FD, .data.fd = STDERR_FILENO},
        {.flags = UV_INHERIT_FD, .data.fd = child_ctl}, {.flags = UV_INHERIT_FD, .data.fd = r->log_fd},
        {.flags = UV_INHERIT_FD, .data.fd = r->event_fd}};
    uv_process_options_t o = {.exit_cb = on_relay_exit, .file = RUNNING_IMAGE, .args = args, .stdio_count = 6,
                              .stdio = stdio};
    return uv_spawn(loop, &r->process, &o);
}

struct relay_launch *relay_launch(uv_loop_t *loop, const struct relay_limits *limits, relay_ready_cb ready,
                                  void *data, char *err, size_t errlen)
{
    struct relay_launch *r = calloc(1, sizeof(*r));
    int sv[2] = {-1, -1};
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    *r = (struct relay_launch){.ready_cb = ready, .data = data, .ctl_fd = -1, .log_fd = -1, .event_fd = -1};
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0 ||
        (r->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
        snprintf(err, errlen, "cannot make the relay's channels: %s", strerror(errno));
        goto fail;
    }
    r->ctl_fd = sv[0];
    if ((r->log_fd = relay_log_create(limits->log_bytes, err, errlen)) < 0)
        goto fail;
    int rc = spawn_relay(r, loop, sv[1], limits->max_packets, limits->max_message);
    close(sv[1]);
    sv[1] = -1;
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the relay: %s", uv_strerror(rc));
        close(r->ctl_fd);
        close(r->log_fd);
        close(r->event_fd);
        /* uv_spawn initialized the handle: r goes once the loop let go of it. */
        r->released = true;
        r->open_handles = 1;
        r->process.data = r;
        uv_close((uv_handle_t *)&r->process, launch_closed);
        return NULL;
    }
    r->pid = r->process.pid;
    r->process.data = r->ctl_poll.data = r;
    r->open_handles = 2;
    uv_poll_init(loop, &r->ctl_poll, r->ctl_fd);
    uv_poll_start(&r->ctl_poll, UV_READABLE, on_relay_ctl);
    return r;
fail:
    for (int i = 0; i < 2; i++)
        if (sv[i] >= 0)
            close(sv[i]);
    if (r->event_fd >= 0)
        close(r->event_fd);
    if (r->log_fd >= 0)
        close(r->log_fd);
    free(r);
    return NULL;
}

int relay_hand_over(struct relay_launch *r, const struct relay_conn *conns, size_t n, int64_t stopped_ns, char *err,
                    size_t errlen)
{
    if (r->exited || !r->ready || r->failure[0]) {
        snprintf(err, errlen, "the relay is gone");
        return -1;
    }
    struct relay_msg m = {.type = MSG_CONNS};
    int fds[FDS_PER_MSG];
    for (size_t at = 0; at < n; at += m.count) {
        m.count = (uint32_t)(n - at < FDS_PER_MSG ? n - at : FDS_PER_MSG);
        for (uint32_t i = 0; i < m.count; i++) {
            fds[i] = conns[at + i].fd;
            m.index[i] = conns[at + i].index;
        }
        if (send_msg(r->ctl_fd, &m, fds, m.count) != 0) {
            snprintf(err, errlen, "cannot pass the connections to the relay: %s", strerror(errno));
            return -1;
        }
    }
    struct relay_msg go = {.type = MSG_GO, .count = (uint32_t)n, .handed_ns = stopped_ns};
    if (send_msg(r->ctl_fd, &go, NULL, 0) != 0) {
        snprintf(err, errlen, "cannot start the relay: %s", strerror(errno));
        return -1;
    }
    return 0;
}

struct relay_fds relay_launch_fds(const struct relay_launch *r)
{
    return (struct relay_fds){.pid = r->pid, .ctl_fd = r->ctl_fd, .log_fd = r->log_fd, .event_fd = r->event_fd};
}

void relay_launch_free(struct relay_launch *r, bool kill_relay)
{
    if (!r)
        return;
    r->cancelled = true;
    uv_poll_stop(&r->ctl_poll);
    if (kill_relay && !r->exited) {
        uv_process_kill(&r->process, SIGKILL);   /* on_relay_exit closes the handles once it is reaped */
        uv_close((uv_handle_t *)&r->ctl_poll, launch_closed);
        return;
    }
    r->released = !kill_relay;
    launch_close_handles(r);
}

/* ---- the relay process ---- */

struct relay_proc {
    struct relay_log log;
    struct recv_ring ring;
    int epoll_fd;
    int *fds;                /* by slot; -1 once done */
    uint32_t *index;         /* the connection's index in the handoff state, by slot */
    uint64_t *held;          /* log bytes each slot's records take */
    uint32_t nconns;
    uint32_t open;           /* slots not at EOF or an error */
    uint64_t packets, bytes;
    uint64_t max_packets;    /* what the daemon's queue holds: it reads no further ahead */
    bool full;
    uint64_t per_packet;     /* log bytes one packet can take at most */
};

#define RELAY_NOTES (2 * sizeof(struct relay_record))   /* kept for a read's EMPTIED or EOF note */

static void relay_note(struct relay_proc *p, uint32_t slot, uint32_t type, uint32_t flags, int64_t ns)
{
    struct relay_record r = {.type = type, .conn = p->index[slot], .flags = flags, .ns = ns};
    relay_log_append(&p->log, &r, NULL);   /* room was kept (RELAY_NOTES) */
    p->held[slot] += sizeof(r);
}

static void relay_drop_conn(struct relay_proc *p, uint32_t slot)
{
    epoll_ctl(p->epoll_fd, EPOLL_CTL_DEL, p->fds[slot], NULL);
    close(p->fds[slot]);
    p->fds[slot] = -1;
    p->open--;
}

/* Packets the next read may take, up to want: each must fit whole, with a
 * note after them. 0: the log is full. */
static unsigned relay_room(const struct relay_proc *p, unsigned want)
{
    uint64_t left = p->log.capacity - p->log.pos;
    if (left < RELAY_NOTES + p->per_packet || p->packets >= p->max_packets)
        return 0;
    uint64_t fits = (left - RELAY_NOTES) / p->per_packet;
    if (fits > p->max_packets - p->packets)
        fits = p->max_packets - p->packets;
    return fits < want ? (unsigned)fits : want;
}

/* The log is full: stop reading everything. The sandboxes buffer, then
 * drop and count it, as with a daemon that stalls. */
static void relay_stop_reading(struct relay_proc *p)
{
    p->full = true;
    for (uint32_t i = 0; i < p->nconns; i++)
        if (p->fds[i] >= 0)
            epoll_ctl(p->epoll_fd, EPOLL_CTL_DEL, p->fds[i], NULL);
}

/* One sandbox never fills the log for the others: past half full, a
 * connection holding more than its share of what is used (as the daemon's
 * fair shares of its queue) is not read any more; the quiet ones are. */
static void relay_share(struct relay_proc *p, uint32_t slot)
{
    if (p->fds[slot] < 0 || p->log.pos < p->log.capacity / 2 || p->open == 0 ||
        p->held[slot] <= p->log.pos / p->open)
        return;
    epoll_ctl(p->epoll_fd, EPOLL_CTL_DEL, p->fds[slot], NULL);
}

/* conn_read's reading, into the log: the same packets, the same EOF and
 * error rules, the same emptied times. */
static void relay_read(struct relay_proc *p, uint32_t slot)
{
    bool reset_seen = false;
    unsigned budget = RELAY_READ_BUDGET;
    while (budget > 0 && p->fds[slot] >= 0) {
        unsigned want = relay_room(p, budget < p->ring.nslots ? budget : p->ring.nslots);
        if (want == 0) {
            relay_stop_reading(p);
            return;
        }
        int64_t before = realtime_ns();
        int n = recv_ring_fill(&p->ring, p->fds[slot], want);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                relay_note(p, slot, RELAY_EMPTIED, 0, before);
                return;
            }
            if (errno == ECONNRESET && !reset_seen) {
                reset_seen = true;
                continue;
            }
            relay_note(p, slot, RELAY_ERROR, (uint32_t)errno, 0);
            relay_drop_conn(p, slot);
            return;
        }
        int64_t now = realtime_ns();
        for (int i = 0; i < n; i++) {
            size_t len;
            bool truncated;
            const uint8_t *pkt = recv_ring_packet(&p->ring, (unsigned)i, &len, &truncated);
            if (len == 0 && !truncated) {
                relay_note(p, slot, RELAY_EOF, 0, now);
                relay_drop_conn(p, slot);
                return;
            }
            struct relay_record r = {.type = RELAY_PACKET, .conn = p->index[slot], .len = (uint32_t)len,
                                     .flags = truncated ? RELAY_TRUNCATED : 0, .ns = now};
            relay_log_append(&p->log, &r, pkt);
            p->held[slot] += sizeof(r) + ((len + 7) & ~(size_t)7);
            p->packets++;
            p->bytes += len;
        }
        if ((unsigned)n < want) {
            relay_note(p, slot, RELAY_EMPTIED, 0, before);
            return;
        }
        budget -= (unsigned)n;
    }
}

/* The connections, until MSG_GO; the slots' fds and indexes. 0, or -1. */
static int relay_take_conns(struct relay_proc *p, int64_t *handed_ns)
{
    size_t cap = 0;
    for (;;) {
        struct relay_msg m;
        int fds[FDS_PER_MSG];
        size_t nfds = 0;
        if (recv_msg(RELAY_CTL_FD, &m, fds, &nfds, false) != 1)
            return -1;   /* the daemon went away, or refused the restart */
        if (m.type == MSG_GO) {
            *handed_ns = m.handed_ns;
            return m.count == p->nconns ? 0 : -1;
        }
        if (m.type != MSG_CONNS || m.count != nfds || nfds > FDS_PER_MSG) {
            while (nfds)
                close(fds[--nfds]);
            return -1;
        }
        if (p->nconns + nfds > cap) {
            size_t more = (p->nconns + nfds) * 2;
            int *f = realloc(p->fds, more * sizeof(*f));
            if (f)
                p->fds = f;
            uint32_t *ix = f ? realloc(p->index, more * sizeof(*ix)) : NULL;
            if (ix)
                p->index = ix;
            uint64_t *held = ix ? realloc(p->held, more * sizeof(*held)) : NULL;
            if (!held) {
                while (nfds)
                    close(fds[--nfds]);
                return -1;
            }
            p->held = held;
            cap = more;
        }
        for (size_t i = 0; i < nfds; i++) {
            p->fds[p->nconns] = fds[i];
            p->held[p->nconns] = 0;
            p->index[p->nconns++] = m.index[i];
        }
        p->open = p->nconns;
    }
}

/* Reads until told to stop (or the other side is gone); the time it did. */
static int64_t relay_run(struct relay_proc *p)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = UINT32_MAX};
    epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, RELAY_CTL_FD, &ev);
    for (uint32_t i = 0; i < p->nconns; i++) {
        ev = (struct epoll_event){.events = EPOLLIN, .data.u32 = i};
        if (epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, p->fds[i], &ev) != 0) {
            relay_note(p, i, RELAY_ERROR, (uint32_t)errno, 0);
            close(p->fds[i]);
            p->fds[i] = -1;
            p->open--;
        }
    }
    struct epoll_event evs[64];
    for (;;) {
        int n = epoll_wait(p->epoll_fd, evs, 64, -1);
        if (n < 0 && errno != EINTR)
            return monotonic_ns();
        uint64_t before = p->log.pos;
        bool stop = false;
        for (int i = 0; i < n; i++) {
            uint32_t slot = evs[i].data.u32;
            if (slot == UINT32_MAX) {
                /* MSG_STOP, or the other side is gone: either way, stop. Read
                 * it: closing with a message unread would reset the other
                 * end, and the answer waiting there with it. */
                struct relay_msg m;
                stop = recv_msg(RELAY_CTL_FD, &m, NULL, NULL, true) != -1 || errno != EAGAIN;
            }
            else if (slot < p->nconns && p->fds[slot] >= 0 && !p->full) {
                relay_read(p, slot);
                relay_share(p, slot);
            }
        }
        int64_t now = monotonic_ns();
        if (p->log.pos != before) {
            relay_log_publish(&p->log);
            uint64_t one = 1;
            if (write(RELAY_EVENT_FD, &one, sizeof(one)) < 0)
                (void)0;   /* the counter is at its maximum: the reader is awake anyway */
        }
        if (stop)
            return now;
    }
}

static bool is_fd(int fd, mode_t type)
{
    struct stat st;
    return fstat(fd, &st) == 0 && (type == 0 || (st.st_mode & S_IFMT) == type);
}

int relay_main(int argc, char **argv)
{
    unsigned long long max_packets = argc == 4 ? strtoull(argv[1], NULL, 10) : 0;
    unsigned long long max_message = argc == 4 ? strtoull(argv[2], NULL, 10) : 0;
    long parent = argc == 4 ? strtol(argv[3], NULL, 10) : 0;
    if (argc != 4 || max_packets == 0 || max_message == 0 || max_message > (1u << 30) || parent <= 1 || getppid() != (pid_t)parent ||
        !is_fd(RELAY_CTL_FD, S_IFSOCK) || !is_fd(RELAY_LOG_FD, S_IFREG) || !is_fd(RELAY_EVENT_FD, 0)) {
        fprintf(stderr, "seccheckd " RELAY_SUBCOMMAND ": started by the daemon during a restart (SIGUSR2), not by "
                        "hand\n");
        return 2;
    }
    /* Only SIGKILL ends it: a stop signal sent to the whole service during a
     * restart is the new image's to handle, after the relay handed over. */
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != (pid_t)parent)
        return 1;   /* the daemon is already gone */
    close_range(RELAY_EVENT_FD + 1, ~0U, 0);
    struct relay_proc p = {.epoll_fd = epoll_create1(EPOLL_CLOEXEC), .max_packets = max_packets};
    char err[256];
    int rc = 1;
    int64_t handed_ns = 0;
    if (p.epoll_fd < 0 || relay_log_map(&p.log, RELAY_LOG_FD, true, err, sizeof(err)) != 0 ||
        recv_ring_init(&p.ring, RELAY_SLOTS, (size_t)max_message) != 0) {
        log_error("restart relay: %s", p.epoll_fd < 0 || p.log.fd >= 0 ? "out of memory" : err);
        goto out;
    }
    p.per_packet = sizeof(struct relay_record) + ((max_message + 7) & ~7ull);
    struct relay_msg m = {.type = MSG_READY};
    if (send_msg(RELAY_CTL_FD, &m, NULL, 0) != 0 || relay_take_conns(&p, &handed_ns) != 0) {
        rc = 0;   /* the restart did not hand over (refused, or abandoned) */
        goto out;
    }
    int64_t started_ns = monotonic_ns();
    int64_t stopped_ns = relay_run(&p);
    relay_log_publish(&p.log);
    m = (struct relay_msg){.type = MSG_STOPPED, .handed_ns = handed_ns, .started_ns = started_ns,
                           .stopped_ns = stopped_ns, .packets = p.packets, .bytes = p.bytes, .full = p.full};
    rc = send_msg(RELAY_CTL_FD, &m, NULL, 0) == 0 ? 0 : 1;
out:
    for (uint32_t i = 0; i < p.nconns; i++)
        if (p.fds[i] >= 0)
            close(p.fds[i]);
    free(p.fds);
    free(p.index);
    free(p.held);
    recv_ring_free(&p.ring);
    relay_log_unmap(&p.log);
    if (p.epoll_fd >= 0)
        close(p.epoll_fd);
    return rc;
}

/* ---- the new image's side ---- */

struct relay_feed {
    uv_poll_t event_poll, ctl_poll;
    uv_timer_t reap_timer;
    int open_handles;
    int reap_ms;
    struct relay_log log;
    int ctl_fd, event_fd;
    pid_t pid;
    uint32_t nconns;
    bool stop_sent, stopped, malformed, reaped;
    uint64_t end;            /* once stopped: where its records end */
    struct relay_summary summary;
    relay_wake_cb wake;
    void *data;
};

static void feed_closed(uv_handle_t *h)
{
    struct relay_feed *f = h->data;
    if (--f->open_handles > 0)
        return;
    relay_log_unmap(&f->log);
    close(f->ctl_fd);
    close(f->event_fd);
    free(f);
}

/* It stopped (answer or not): its records end where it published last. */
static void feed_stopped(struct relay_feed *f, bool died)
{
    if (f->stopped)
        return;
    f->stopped = true;
    f->summary.died = died;
    f->end = relay_log_written(&f->log);
    uv_poll_stop(&f->ctl_poll);
    f->wake(f->data);
}

static void on_feed_ctl(uv_poll_t *h, int status, int events)
{
    struct relay_feed *f = h->data;
    (void)events;
    struct relay_msg m;
    int rc = recv_msg(f->ctl_fd, &m, NULL, NULL, true);   /* an error status may come with the answer queued */
    if (rc < 0 && errno == EAGAIN && status >= 0)
        return;
    if (rc == 1 && m.type == MSG_STOPPED) {
        f->summary = (struct relay_summary){.handed_ns = m.handed_ns, .started_ns = m.started_ns,
                                            .stopped_ns = m.stopped_ns, .packets = m.packets, .bytes = m.bytes,
                                            .full = m.full != 0};
        feed_stopped(f, false);
        return;
    }
    char why[96];
    if (rc == 0)
        snprintf(why, sizeof(why), "it closed its end");
    else if (status < 0)
        snprintf(why, sizeof(why), "poll: %s", uv_strerror(status));
    else if (rc < 0)
        snprintf(why, sizeof(why), "%s", strerror(errno));
    else
        snprintf(why, sizeof(why), "message type %u", m.type);
    log_error("restart: the relay went away without handing over (%s); the connections are read from where it "
              "stopped", why);
    f->summary.stopped_ns = monotonic_ns();
    feed_stopped(f, true);
}

static void on_feed_event(uv_poll_t *h, int status, int events)
{
    struct relay_feed *f = h->data;
    (void)status;
    (void)events;
    uint64_t n;
    if (read(f->event_fd, &n, sizeof(n)) < 0 && errno == EAGAIN)
        return;
    f->wake(f->data);
}

struct relay_feed *relay_feed_open(uv_loop_t *loop, const struct relay_fds *fds, uint32_t nconns, relay_wake_cb wake,
                                   void *data, char *err, size_t errlen)
{
    struct relay_feed *f = calloc(1, sizeof(*f));
    if (!f) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    *f = (struct relay_feed){.ctl_fd = fds->ctl_fd, .event_fd = fds->event_fd, .pid = fds->pid, .nconns = nconns,
                             .wake = wake, .data = data};
    int rc = relay_log_map(&f->log, fds->log_fd, false, err, errlen);
    close(fds->log_fd);   /* the log keeps its own */
    if (rc != 0) {
        kill(f->pid, SIGKILL);
        waitpid(f->pid, NULL, 0);
        close(f->ctl_fd);
        close(f->event_fd);
        free(f);
        return NULL;
    }
    f->event_poll.data = f->ctl_poll.data = f->reap_timer.data = f;
    uv_poll_init(loop, &f->event_poll, f->event_fd);
    uv_poll_init(loop, &f->ctl_poll, f->ctl_fd);
    uv_timer_init(loop, &f->reap_timer);
    f->open_handles = 3;
    uv_poll_start(&f->event_poll, UV_READABLE, on_feed_event);
    uv_poll_start(&f->ctl_poll, UV_READABLE, on_feed_ctl);
    return f;
}

int relay_feed_peek(struct relay_feed *f, struct relay_record *r, const uint8_t **payload)
{
    if (f->malformed)
        return -1;
    uint64_t end = f->stopped ? f->end : relay_log_written(&f->log);
    int rc = relay_log_peek(&f->log, end, f->nconns, r, payload);
    if (rc < 0) {
        f->malformed = true;
        log_error("restart: the relay's log has a record that does not fit at byte %" PRIu64 "; what follows it "
                  "is lost", f->log.pos);
    }
    return rc;
}

void relay_feed_take(struct relay_feed *f, const struct relay_record *r)
{
    relay_log_take(&f->log, r);
}

void relay_feed_stop(struct relay_feed *f)
{
    if (f->stop_sent || f->stopped)
        return;
    f->stop_sent = true;
    struct relay_msg m = {.type = MSG_STOP};
    if (send_msg(f->ctl_fd, &m, NULL, 0) != 0) {
        log_error("restart: cannot tell the relay to stop (%s)", strerror(errno));
        f->summary.stopped_ns = monotonic_ns();
        feed_stopped(f, true);
    }
}

bool relay_feed_done(struct relay_feed *f, struct relay_summary *s)
{
    relay_log_release(&f->log);
    if (!f->stopped || (!f->malformed && f->log.pos < f->end))
        return false;
    *s = f->summary;
    return true;
}

static void on_reap(uv_timer_t *t)
{
    struct relay_feed *f = t->data;
    int status;
    pid_t got = waitpid(f->pid, &status, WNOHANG);
    if (got == 0 && (f->reap_ms += REAP_EVERY_MS) < REAP_KILL_AFTER_MS)
        return;
    if (got == 0) {
        log_warn("restart: the relay (pid %d) did not exit; killing it", (int)f->pid);
        kill(f->pid, SIGKILL);
        waitpid(f->pid, &status, 0);
    } else if (got > 0 && (WIFSIGNALED(status) || WEXITSTATUS(status) != 0)) {
        log_warn("restart: the relay (pid %d) ended with %s %d", (int)f->pid,
                 WIFSIGNALED(status) ? "signal" : "status", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    }
    uv_timer_stop(t);
    uv_close((uv_handle_t *)&f->reap_timer, feed_closed);
}

void relay_feed_close(struct relay_feed *f)
{
    if (!f)
        return;
    if (!f->stopped)
        kill(f->pid, SIGKILL);   /* closing before it stopped: a shutdown that could not wait */
    uv_close((uv_handle_t *)&f->event_poll, feed_closed);
    uv_close((uv_handle_t *)&f->ctl_poll, feed_closed);
    uv_timer_start(&f->reap_timer, on_reap, 0, REAP_EVERY_MS);
}
