/* conns.c - the sandbox each connection streams from (container.h), worked
 * out on the cache's lookup thread: from the runsc command that connected
 * (peer.c), else from the first container the connection names (the
 * sandbox its state file's name gives), or as the image before a restart
 * had it. A connection bound by its peer has its sandbox's own state file
 * looked for from then on, before any event names it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cache_int.h"
#include "clock.h"
#include "log.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77   /* Linux 6.5 (asm-generic/socket.h) */
#endif

const char *container_bound_by_name(enum container_bound_by by)
{
    switch (by) {
    case CONTAINER_BOUND_BY_PEER: return "peer";
    case CONTAINER_BOUND_BY_CONTAINER: return "container";
    case CONTAINER_BOUND_BY_RESTART: return "restart";
    case CONTAINER_UNBOUND: break;
    }
    return NULL;
}

static struct conn_entry **link_of(struct container_cache *c, uint64_t conn_id)
{
    struct conn_entry **p = &c->conns[(conn_id * 0x9e3779b97f4a7c15ull >> 40) % CONN_BUCKETS];
    while (*p && (*p)->conn_id != conn_id)
        p = &(*p)->next;
    return p;
}

struct conn_entry *conns_find(struct container_cache *c, uint64_t conn_id)
{
    return *link_of(c, conn_id);
}

/* A new entry for conn_id (none yet); NULL past CONTAINER_CONNS_MAX or out of memory. */
static struct conn_entry *conn_new(struct container_cache *c, uint64_t conn_id)
{
    if (c->nconns >= CONTAINER_CONNS_MAX) {
        c->stats.unbound++;
        return NULL;
    }
    struct conn_entry *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->conn_id = conn_id;
    e->peer.pidfd = e->watch = -1;
    struct conn_entry **p = link_of(c, conn_id);
    *p = e;
    c->nconns++;
    return e;
}

static void conn_free(struct container_cache *c, struct conn_entry *e)
{
    if (e->peer.pidfd >= 0)
        close(e->peer.pidfd);
    if (e->watch >= 0)
        watch_remove(c, e->watch);
    if (e->b.by == CONTAINER_UNBOUND)
        c->stats.unbound++;
    free(e->root);
    free(e->lock);
    free(e);
}

static void unlink_conn(struct container_cache *c, struct conn_entry *e)
{
    struct conn_entry **p = link_of(c, e->conn_id);
    if (*p == e) {
        *p = e->next;
        c->nconns--;
    }
}

void container_cache_conn_opened(struct container_cache *c, uint64_t conn_id, int fd)
{
    if (!c)
        return;
    struct ucred cred = {0};
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
        cred = (struct ucred){0};
    int pidfd = -1;
    len = sizeof(pidfd);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) != 0 || pidfd < 0)
        pidfd = cred.pid > 0 ? (int)syscall(SYS_pidfd_open, cred.pid, 0) : -1;   /* before Linux 6.5 */
    /* Now, while the peer waits for the handshake's answer with its lock held. */
    char lock[4096];
    char *held = pidfd >= 0 && peer_lock_path(cred.pid, pidfd, lock, sizeof(lock)) ? strdup(lock) : NULL;
    pthread_mutex_lock(&c->mu);
    struct conn_entry *e = conns_find(c, conn_id) ? NULL : conn_new(c, conn_id);
    if (e) {
        e->phase = CONN_PEER;
        e->peer = (struct peer){.pidfd = pidfd, .pid = cred.pid, .uid = cred.uid};
        e->lock = held;
        e->due_ns = monotonic_ns();
        pidfd = -1;
        held = NULL;
        pthread_cond_signal(&c->work);
    }
    pthread_mutex_unlock(&c->mu);
    free(held);
    if (pidfd >= 0)
        close(pidfd);
}

/* Under the mutex: e is bound (its pidfd is no longer needed). */
static void bind_conn(struct container_cache *c, struct conn_entry *e, enum container_bound_by by, const char *sandbox,
                      char *root, char *bundle)
{
    e->phase = CONN_BOUND;
    e->b.by = by;
    snprintf(e->b.sandbox, sizeof(e->b.sandbox), "%s", sandbox);
    e->b.scope = root ? ++c->next_scope : 0;   /* an own root's scope: never 0 */
    free(e->root);
    e->root = root;
    if (root)
        e->watch = watch_add(c, root, e->b.scope);
    if (e->peer.pidfd >= 0)
        close(e->peer.pidfd);
    e->peer.pidfd = -1;
    if (by == CONTAINER_BOUND_BY_PEER) {
        c->stats.bound_peer++;
        /* Its own sandbox, looked for from now on (the state file comes as runsc makes the sandbox). */
        int64_t now = monotonic_ns();
        struct entry *own = cache_entry(c, e->b.scope, e->b.sandbox, e->b.sandbox, now);
        if (own && !own->rec) {
            own->open_until_ns = now + CONTAINER_OPEN_WINDOW_NS;
            own->due_ns = now;
            if (bundle && !own->bundle) {
                own->bundle = bundle;   /* read when its state file is not there (yet) */
                bundle = NULL;
            }
            pthread_cond_signal(&c->work);
        }
        log_debug("containers: connection %llu is sandbox %s (its peer, runsc, pid %lld%s%s)",
                  (unsigned long long)e->conn_id, e->b.sandbox, (long long)e->peer.pid, root ? ", state in " : "",
                  root ? root : "");
    } else if (by == CONTAINER_BOUND_BY_CONTAINER) {
        c->stats.bound_container++;
    } else {
        c->stats.bound_restart++;
    }
    free(bundle);
    cache_signal(c);
}

void container_cache_conn_restored(struct container_cache *c, uint64_t conn_id, const char *sandbox)
{
    if (!c || !container_id_valid(sandbox))
        return;
    pthread_mutex_lock(&c->mu);
    struct conn_entry *e = conns_find(c, conn_id);
    if (!e)
        e = conn_new(c, conn_id);
    if (e && e->phase != CONN_BOUND && !e->in_flight)
        bind_conn(c, e, CONTAINER_BOUND_BY_RESTART, sandbox, NULL, NULL);
    pthread_mutex_unlock(&c->mu);
}

void container_cache_conn_closed(struct container_cache *c, uint64_t conn_id)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    struct conn_entry *e = conns_find(c, conn_id);
    if (e) {
        unlink_conn(c, e);
        if (e->in_flight)
            e->closed = true;   /* the thread frees it */
        else
            conn_free(c, e);
    }
    pthread_mutex_unlock(&c->mu);
}

/* Under the mutex: the first container id the connection named. */
static void note_claim(struct container_cache *c, struct conn_entry *e, const char *claim)
{
    if (!claim || e->claim[0] || !container_id_valid(claim))
        return;
    snprintf(e->claim, sizeof(e->claim), "%s", claim);
    if (e->phase == CONN_AWAIT_CLAIM) {
        e->phase = CONN_CLAIMED;
        e->due_ns = monotonic_ns();
        pthread_cond_signal(&c->work);
    }
}

/* Under the mutex: conn_id's entry, made (to be bound by claim) when it has none. */
static struct conn_entry *entry_claiming(struct container_cache *c, uint64_t conn_id, const char *claim)
{
    struct conn_entry *e = conns_find(c, conn_id);
    if (!e && claim && container_id_valid(claim) && (e = conn_new(c, conn_id)) != NULL)
        e->phase = CONN_AWAIT_CLAIM;
    if (e)
        note_claim(c, e, claim);
    return e;
}

bool container_cache_binding(struct container_cache *c, uint64_t conn_id, const char *claim,
                             struct container_binding *out)
{
    if (!c)
        return false;
    pthread_mutex_lock(&c->mu);
    struct conn_entry *e = entry_claiming(c, conn_id, claim);
    bool bound = e && e->phase == CONN_BOUND;
    if (bound)
        *out = e->b;
    pthread_mutex_unlock(&c->mu);
    return bound;
}

bool container_cache_wait_binding(struct container_cache *c, uint64_t conn_id, const char *claim,
                                  int64_t timeout_ns, struct container_binding *out)
{
    if (!c)
        return false;
    int64_t deadline = monotonic_ns() + timeout_ns;
    pthread_mutex_lock(&c->mu);
    struct conn_entry *e = entry_claiming(c, conn_id, claim);
    /* Waits while there is something to wait for: its peer read, its claim looked up. */
    while (e && (e->phase == CONN_PEER || e->phase == CONN_CLAIMED) && !c->stopping) {
        struct timespec until = {.tv_sec = (time_t)(deadline / 1000000000), .tv_nsec = (long)(deadline % 1000000000)};
        if (pthread_cond_timedwait(&c->published_cv, &c->mu, &until) != 0) {
            c->stats.wait_timeouts++;
            break;
        }
        e = conns_find(c, conn_id);
    }
    bool bound = e && e->phase == CONN_BOUND;
    if (bound)
        *out = e->b;
    pthread_mutex_unlock(&c->mu);
    return bound;
}

struct conn_entry *conns_due(struct container_cache *c, int64_t now, int64_t *soonest)
{
    if (!c->nconns)
        return NULL;
    for (size_t b = 0; b < CONN_BUCKETS; b++)
        for (struct conn_entry *e = c->conns[b]; e; e = e->next) {
            if (e->in_flight || (e->phase != CONN_PEER && e->phase != CONN_CLAIMED))
                continue;
            if (e->due_ns <= now)
                return e;
            if (!*soonest || e->due_ns < *soonest)
                *soonest = e->due_ns;
        }
    return NULL;
}

void conns_run(struct container_cache *c, struct conn_entry *e)
{
    enum conn_phase phase = e->phase;
    struct peer peer = e->peer;
    const char *lock = e->lock;   /* this entry's until it is freed, which waits for in_flight */
    char claim[CONTAINER_ID_MAX], sandbox[CONTAINER_ID_MAX];
    memcpy(claim, e->claim, sizeof(claim));
    e->in_flight = true;
    pthread_mutex_unlock(&c->mu);

    /* The daemon's roots are fixed for the cache's life; the pidfd is this
     * entry's until it is freed, which waits for in_flight. */
    struct peer_answer answer = {0};
    enum peer_outcome outcome = PEER_NONE;
    bool named = false;
    if (phase == CONN_PEER)
        outcome = peer_sandbox(&peer, lock, (const char *const *)c->roots, c->nroots, &answer);
    else
        named = container_sandbox_of(claim, (const char *const *)c->roots, c->nroots, sandbox) == 1;
    int64_t now = monotonic_ns();

    pthread_mutex_lock(&c->mu);
    e->in_flight = false;
    if (e->closed) {
        free(answer.root);
        free(answer.bundle);
        conn_free(c, e);
        return;
    }
    if (phase == CONN_CLAIMED) {
        bind_conn(c, e, CONTAINER_BOUND_BY_CONTAINER, named ? sandbox : e->claim, NULL, NULL);
        return;
    }
    if (outcome == PEER_BOUND) {
        bind_conn(c, e, CONTAINER_BOUND_BY_PEER, answer.sandbox, answer.root, answer.bundle);
        return;
    }
    /* Its peer names nothing: the first container it names binds it. */
    log_debug("containers: connection %llu: its peer, pid %lld, names no sandbox (%s): the first container it "
              "names binds it", (unsigned long long)e->conn_id, (long long)e->peer.pid, answer.why);
    if (e->peer.pidfd >= 0)
        close(e->peer.pidfd);
    e->peer.pidfd = -1;
    e->phase = e->claim[0] ? CONN_CLAIMED : CONN_AWAIT_CLAIM;
    e->due_ns = now;
    cache_signal(c);   /* a waiter for the binding: nothing more comes from the peer */
}

const char *conns_root_of(struct container_cache *c, uint32_t scope)
{
    for (size_t b = 0; scope && b < CONN_BUCKETS; b++)
        for (struct conn_entry *e = c->conns[b]; e; e = e->next)
            if (e->phase == CONN_BOUND && e->b.scope == scope && e->root)
                return e->root;
    return NULL;
}

bool conns_sandbox_open(struct container_cache *c, uint32_t scope, const char *sandbox)
{
    for (size_t b = 0; b < CONN_BUCKETS; b++)
        for (struct conn_entry *e = c->conns[b]; e; e = e->next)
            if (e->phase == CONN_BOUND && e->b.scope == scope && strcmp(e->b.sandbox, sandbox) == 0)
                return true;
    return false;
}

void conns_free_all(struct container_cache *c)
{
    for (size_t b = 0; b < CONN_BUCKETS; b++)
        while (c->conns[b]) {
            struct conn_entry *e = c->conns[b];
            c->conns[b] = e->next;
            c->nconns--;
            conn_free(c, e);
        }
}
