/* cache_int.h - what the cache's files share (cache.c: records and the
 * lookup thread; conns.c: connections and their sandboxes; peer.c: the
 * runsc command behind a connection; watch.c: the roots watched for new
 * state files). Not part of container/'s interface (container.h is). */
#ifndef SECCHECKD_CONTAINER_CACHE_INT_H
#define SECCHECKD_CONTAINER_CACHE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "internal.h"

#define CACHE_BUCKETS 1024
#define CONN_BUCKETS 1024
#define WATCHES_MAX (CONTAINER_ROOTS_MAX + 256)   /* roots watched: the daemon's, and peers' own */

/* One container as one sandbox sees it. */
struct entry {
    struct entry *next;              /* bucket chain */
    struct entry *dirty_next;        /* published and not taken yet (the dirty list) */
    uint32_t scope;                  /* where: 0 the roots, else a connection's own root */
    char sandbox[CONTAINER_ID_MAX];
    char id[CONTAINER_ID_MAX];
    const struct container_record *rec;   /* NULL until the first lookup ends */
    unsigned attempts;               /* state file searches made */
    int64_t due_ns;                  /* monotonic: the next lookup; 0 none */
    int64_t open_until_ns;           /* a connection's own sandbox: every CONTAINER_OPEN_RETRY_NS until then */
    bool in_flight;                  /* the thread works on it (not evicted meanwhile) */
    bool recheck_users;              /* passwd/group to be compared with the files */
    bool dirty;                      /* on the dirty list */
    bool again;                      /* written while in flight (a watch): looked up again after */
    char *bundle;                    /* a connection's own sandbox: the bundle its peer named (malloc'd) */
    int held_fd;                     /* the state file as the watch opened it when written, or -1 */
    char *held_path;                 /* its path (malloc'd) */
    int64_t users_checked_ns;
    int64_t asked_ns;                /* last get, for eviction */
};

/* The runsc command that connected (peer.c). */
struct peer {
    int pidfd;                       /* -1: none */
    int64_t pid;                     /* <= 0: not known */
    uid_t uid;
};

enum peer_outcome {
    PEER_BOUND,                      /* the sandbox (and maybe its own root) */
    PEER_NONE,                       /* not runsc, gone, or nothing readable */
};

#define PEER_FDS_MAX 256             /* a peer's open files looked at for its lock file */

/* On the loop thread, at the handshake (procfs only, no file system): the
 * path of the container lock file the peer holds open, `<root>/<id>_sandbox:<sandbox>.lock`,
 * into out. 1 found, 0 not. */
int peer_lock_path(int64_t pid, int pidfd, char *out, size_t len);

struct peer_answer {
    char sandbox[CONTAINER_ID_MAX];
    char *root;                      /* malloc'd: a root not among the daemon's; NULL: the daemon's */
    char *bundle;                    /* malloc'd: the OCI bundle it makes the sandbox from; NULL: not known */
    const char *why;                 /* PEER_NONE, PEER_RETRY: why not (a fixed text, for the log) */
};

/* The sandbox its lock file (NULL: none) or else its command line names. */
enum peer_outcome peer_sandbox(const struct peer *p, const char *lock, const char *const *roots, size_t nroots,
                               struct peer_answer *out);

enum conn_phase {
    CONN_PEER,                       /* its peer is being read */
    CONN_AWAIT_CLAIM,                /* its peer said nothing: the first container it names binds it */
    CONN_CLAIMED,                    /* that container's state file is looked for */
    CONN_BOUND,
};

struct conn_entry {
    struct conn_entry *next;
    uint64_t conn_id;
    enum conn_phase phase;
    struct container_binding b;
    struct peer peer;
    char *lock;                      /* the lock file its peer held at the handshake (malloc'd), or NULL */
    char claim[CONTAINER_ID_MAX];
    char *root;                      /* b.scope's directory when its own (malloc'd) */
    int watch;                       /* inotify watch of root, -1 none */
    int64_t due_ns;                  /* monotonic: the next look at the peer */
    bool in_flight;
    bool closed;                     /* closed while in flight: the thread frees it */
};

struct container_cache {
    pthread_mutex_t mu;
    pthread_cond_t work;             /* the thread: something is due, or stop */
    pthread_cond_t published_cv;     /* waiters: a record was published or a connection bound */
    pthread_t thread;
    bool started, stopping;
    char **roots;
    size_t nroots;
    unsigned attempts;
    int64_t retry_ns, users_recheck_ns;
    size_t max_records, max_bytes;
    struct docker_source *docker;    /* Docker's API, a source of names besides the state file; NULL: none */
    struct entry *buckets[CACHE_BUCKETS];
    size_t nentries, bytes;
    struct entry *dirty_head, **dirty_tail;
    struct conn_entry *conns[CONN_BUCKETS];
    size_t nconns;
    uint32_t next_scope;
    _Atomic uint64_t generation;     /* publications and bindings so far */
    struct container_cache_stats stats;
    bool warned_refused, warned_users, warned_mounts;
    /* watch.c */
    int inotify_fd, stop_fd;
    pthread_t watcher;
    bool watching;
    struct { int wd; uint32_t scope; char *root; } watches[WATCHES_MAX];
    size_t nwatches;
};

/* cache.c, under the mutex */
struct entry *cache_entry(struct container_cache *c, uint32_t scope, const char *sandbox, const char *id, int64_t now);
void cache_signal(struct container_cache *c);   /* the generation moves on, waiters wake */
/* conns.c, under the mutex */
struct conn_entry *conns_find(struct container_cache *c, uint64_t conn_id);
struct conn_entry *conns_due(struct container_cache *c, int64_t now, int64_t *soonest);
void conns_run(struct container_cache *c, struct conn_entry *e);   /* unlocks around the I/O */
const char *conns_root_of(struct container_cache *c, uint32_t scope);   /* NULL: gone */
bool conns_sandbox_open(struct container_cache *c, uint32_t scope, const char *sandbox);
void conns_free_all(struct container_cache *c);
/* watch.c */
void watch_start(struct container_cache *c);   /* under no lock, at open */
void watch_stop(struct container_cache *c);
int watch_add(struct container_cache *c, const char *root, uint32_t scope);   /* under the mutex; wd or -1 */
void watch_remove(struct container_cache *c, int wd);

#endif
