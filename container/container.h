/* container.h - who a container is, from runsc's own state: the module's
 * whole interface.
 *
 * gVisor's trace points carry only a container id. runsc keeps the rest on
 * the host: for each container it writes `<root>/<id>_sandbox:<sandbox>.state`
 * (JSON, google/gvisor runsc/container/state_file.go), holding the OCI spec
 * with Kubernetes' CRI annotations (pod, namespace, container name, image),
 * the process user, the root filesystem and the bundle directory. From it
 * and the container's own /etc/passwd and /etc/group a container_record is
 * made: the names people and Falco's rules use (container.name,
 * k8s.ns.name, user.name).
 *
 * Everything read here is written by parties seccheckd does not trust (a
 * compromised sandbox owns its /etc/passwd): sizes are bounded, JSON goes
 * through a real parser (jansson) and only strings and small numbers are
 * taken from it, the container's files are opened beneath its root with no
 * symlink leading out (openat2 RESOLVE_IN_ROOT), and every file refused is
 * counted.
 *
 * Docker's OCI specs carry no CRI annotations: for a container whose state
 * file names none, the cache asks Docker's Engine API (docker.c) for the
 * name, image and labels Docker keeps, when given its socket. Docker's
 * answer is the Docker daemon's, not the sandbox's; the id asked about is
 * still one a sandbox named, so it is only asked about a container whose
 * runsc state file was found (and the view's binding to the sandbox holds),
 * and an answer about another container (Docker also resolves names and id
 * prefixes) is refused. Docker's own files are not read.
 *
 * A container_cache looks records up on a thread of its own, so no caller
 * ever waits on a file system unless it asks to (container_cache_wait, with
 * a deadline). A container whose state file is not there (yet) is looked up
 * again a bounded number of times, then recorded as unknown. Records are
 * immutable and reference counted: one handed out stays valid until its
 * holder releases it, even after the cache replaced or dropped it.
 *
 * Names follow the sandbox, never the id a sandbox claims: each connection
 * is bound to one sandbox (by the runsc command that connected, else by the
 * state file of the first container it named), a container is looked up as
 * that sandbox's (`<id>_sandbox:<sandbox>.state`, the name runsc itself
 * gives), and a record is handed to a connection only when its `sandbox` is
 * the connection's. The rule does not depend on where a record came from:
 * a source of names (runsc's state files here) sets `sandbox` only from what
 * the runtime itself says runs the container, never from the spec a tenant
 * wrote.
 */
#ifndef SECCHECKD_CONTAINER_H
#define SECCHECKD_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- limits ---- */

#define CONTAINER_ID_MAX 128              /* bytes of a container or sandbox id (runsc: [\w+.-]+) */
#define CONTAINER_STATE_MAX_BYTES (4u << 20)   /* a state file (its spec, env included) */
#define CONTAINER_STRING_MAX 1024         /* one value kept from it (longer ones are cut) */
#define CONTAINER_USERS_MAX_BYTES (1u << 20)   /* the container's /etc/passwd, /etc/group */
#define CONTAINER_USERS_MAX_ENTRIES 10000 /* lines kept from each */
#define CONTAINER_USER_FIELD_MAX 256      /* a name, home or shell (longer: the line is skipped) */
#define CONTAINER_ROOTS_MAX 16            /* --runsc-root directories */
#define CONTAINER_ROOT_ENTRIES_MAX 100000 /* directory entries scanned per root and lookup */
#define CONTAINER_CACHE_MAX 4096          /* records kept (the least recently asked for goes) */
#define CONTAINER_CACHE_MAX_BYTES (256u << 20)   /* and at most this much of them (users, mounts, strings) */
#define CONTAINER_ATTEMPTS 5              /* state file looked for, 100 ms apart doubling (1.5 s) */
#define CONTAINER_OPEN_RETRY_NS 10000000LL      /* a connection's own sandbox: looked for every 10 ms ... */
#define CONTAINER_OPEN_WINDOW_NS 10000000000LL  /* ... for 10 s from its open (then as any container) */
#define CONTAINER_CONNS_MAX 65536         /* connections whose sandbox is kept (past it: unbound, counted) */
#define CONTAINER_USERS_RECHECK_NS 10000000000LL   /* passwd/group changed? at most every 10 s */
#define CONTAINER_MOUNTS_MAX 256          /* spec.mounts entries kept (the rest: counted, not kept) */
#define CONTAINER_MOUNTS_TEXT_MAX (64u << 10)   /* container.mounts' text: a mount past it is not kept */
#define CONTAINER_DOCKER_ANSWER_MAX (1u << 20)  /* Docker's answer about one container */
#define CONTAINER_DOCKER_TIMEOUT_MS 2000        /* one question to Docker, connecting included */
#define CONTAINER_LABELS_MAX 256                /* labels kept (the rest: counted, not kept) */
#define CONTAINER_LABEL_KEY_MAX 256             /* a longer key: the label is not kept */
#define CONTAINER_LABEL_VALUE_MAX 100           /* a longer value: not kept, as Falco's container plugin's
                                                   label_max_len (default 100) */
#define CONTAINER_LABELS_BYTES_MAX (16u << 10)  /* keys and values kept per container (past it: not kept) */

/* runsc's usual roots: containerd's runsc shim (Kubernetes, then Docker's
 * containerd namespace), Docker's runtime directory, plain runsc. Used,
 * those that exist, when no --runsc-root is given. */
extern const char *const container_default_roots[];
#define CONTAINER_DEFAULT_ROOTS_TEXT \
    "/run/containerd/runsc/k8s.io, /run/containerd/runsc/moby, /var/run/docker/runtime-runsc/moby, " \
    "/var/run/docker/runtime-runc/moby, /var/run/runsc"

/* ---- the record ---- */

enum container_state {
    CONTAINER_FOUND = 0,   /* its state file was read */
    CONTAINER_UNKNOWN,     /* no state file after every attempt (or no root to look in) */
    CONTAINER_REFUSED,     /* a state file was there but refused (too large, malformed, another id) */
    CONTAINER_FOREIGN,     /* its state file is another sandbox's: not this sandbox's container */
};

/* "found", "unknown", "refused", "foreign". */
const char *container_state_name(enum container_state s);

struct container_user {
    uint32_t uid, gid;
    const char *name, *home, *shell;
};
struct container_group {
    uint32_t gid;
    const char *name;
};

/* One entry of the OCI spec's `mounts`, as Falco's container plugin makes
 * its mount info from an OCI spec (falcosecurity/plugins
 * plugins/container/go-worker/pkg/container/containerd.go:91-111; what each
 * value is, and what gVisor cannot tell: container/mounts.c). Strings are
 * never NULL, kept as the spec has them (cut at CONTAINER_STRING_MAX) and
 * escaped wherever shown. */
struct container_mount {
    const char *source;       /* as runsc keeps it (a relative one joined to the bundle), "" when none */
    const char *dest;         /* destination */
    const char *mode;         /* the last "mode=" option's value (tmpfs' "1777"), "" when none */
    const char *propagation;  /* the last propagation option, else linux.rootfsPropagation, else "" */
    bool rdwr;                /* no "ro" option */
    const char *text;         /* container.mount: "source:dest:mode:rdwr:propagation" (as mounts_text) */
};

/* A container label (Docker's Config.Labels); never NULL, escaped wherever shown. */
struct container_label {
    const char *key, *value;
};

/* Strings are NULL when the state file (or Docker) does not say (Falco's <NA>). */
struct container_record {
    const char *id;                 /* as the trace points name it */
    enum container_state state;
    const char *why;                /* refused or unknown: why, for the log and the table */
    const char *name;               /* io.kubernetes.cri.container-name */
    const char *image;              /* io.kubernetes.cri.image-name */
    const char *image_repository;   /* image split as Falco's container plugin splits it */
    const char *image_tag;
    const char *pod_name;           /* io.kubernetes.cri.sandbox-name */
    const char *pod_namespace;      /* io.kubernetes.cri.sandbox-namespace */
    const char *pod_uid;            /* io.kubernetes.cri.sandbox-uid */
    const char *sandbox_id;         /* io.kubernetes.cri.sandbox-id, else the state file name's */
    /* The sandbox it was looked up for: the only one whose connections are
     * given these names. From what the runtime itself wrote (runsc: the
     * state file's name, `<id>_sandbox:<sandbox>.state`), never from the
     * spec (a tenant writes its annotations). Never NULL. */
    const char *sandbox;
    bool is_sandbox;                /* the pod's sandbox (pause) container: container-type "sandbox" */
    bool privileged;                /* the spec grants every capability (Docker's and CRI's --privileged) */
    bool terminal;                  /* process.terminal */
    bool has_user;
    uint32_t user_uid, user_gid;    /* process.user */
    const char *rootfs;             /* root.path, joined to bundleDir when relative */
    const char *bundle;             /* bundleDir */
    const char *state_file;         /* the file read, for the table */
    int64_t created_ns;             /* createdAt (RFC 3339, UTC), ns since the epoch; 0: not given */
    /* From the container's /etc/passwd and /etc/group, sorted by id (the
     * first line of an id wins, as with getpwuid). Empty when missing. */
    const struct container_user *users;
    size_t nusers;
    const struct container_group *groups;
    size_t ngroups;
    bool users_read;                /* /etc/passwd was read (else: missing or refused) */
    /* spec.mounts in the spec's order, at most CONTAINER_MOUNTS_MAX;
     * mounts_text is container.mounts: each "source:dest:mode:rdwr:propagation"
     * joined by ',' (the values' ':' ',' '\' escaped there), "" when none. */
    const struct container_mount *mounts;
    size_t nmounts;
    const char *mounts_text;
    /* From Docker's Engine API (names_from_docker): the name is Docker's
     * without its leading '/', image its Config.Image split as above;
     * image_id the hex of Docker's image id (as Falco's container plugin,
     * go-worker/pkg/container/docker.go); labels sorted by key, labels_text
     * container.labels ("k:v, k2" as the plugin joins them, without
     * io.kubernetes.* and annotation.* keys), "" when none. */
    bool names_from_docker;
    const char *image_id;
    const struct container_label *labels;
    size_t nlabels;
    const char *labels_text;
    uint32_t labels_dropped;        /* past CONTAINER_LABELS_MAX or _BYTES_MAX, or a key or value too long */
    /* Entries of spec.mounts refused (not an object, no string destination,
     * past the limits) or malformed (a value cut or holding a control
     * character, an option that is not a string). */
    uint32_t mounts_malformed;
    int64_t resolved_ns;            /* CLOCK_REALTIME when made */
};

/* The value of label key, NULL when the container has none of that name. */
const char *container_label(const struct container_record *r, const char *key);

/* The user or group of an id, NULL when the container's files do not name it. */
const struct container_user *container_user_by_uid(const struct container_record *r, uint32_t uid);
const struct container_group *container_group_by_gid(const struct container_record *r, uint32_t gid);

void container_record_ref(const struct container_record *r);
void container_record_release(const struct container_record *r);   /* NULL: nothing */

/* ---- reading (synchronous; the cache calls these on its thread) ---- */

/* Splits an image reference as Falco's container plugin does
 * (go-worker/pkg/container/engine.go parseImageRepoTag): a digest ("@...")
 * goes first, then the tag is what follows the last ':' after the last '/'.
 * repo and tag get [start, len) of image; tag_len 0 when there is none. */
void container_image_split(const char *image, size_t len, size_t *repo_len, size_t *tag_start, size_t *tag_len);

/* True when id can name a runsc container ([A-Za-z0-9_+.-], 1 to
 * CONTAINER_ID_MAX - 1 bytes): anything else is never looked up. */
bool container_id_valid(const char *id);

/* Reads the state file of container id in sandbox (the file
 * `<id>_sandbox:<sandbox>.state`) from the roots (directories, each opened
 * when asked) and, when found, the container's passwd and group. Returns a
 * new record (one reference), with state FOUND, REFUSED (why says what),
 * FOREIGN when no root holds that file but one holds id's state file for
 * another sandbox, or UNKNOWN; NULL out of memory. */
struct container_record *container_read(const char *sandbox, const char *id, const char *const *roots,
                                        size_t nroots);

/* The sandbox whose state file names container id in the roots (the
 * `<sandbox>` of `<id>_sandbox:<sandbox>.state`, as runsc named it: how a
 * connection whose peer said nothing is bound by the first container it
 * names, whatever that file holds). 1 found (into out), 0 none. */
int container_sandbox_of(const char *id, const char *const *roots, size_t nroots, char out[CONTAINER_ID_MAX]);

/* Bytes of records alive now, and how many (every record, any holder). */
uint64_t container_records_alive(uint64_t *bytes);

/* A record like r with the container's passwd and group read again;
 * NULL when they did not change since r (same size and mtime) or out of
 * memory. */
struct container_record *container_reread_users(const struct container_record *r);

/* ---- the cache and its lookup thread ---- */

struct container_cache_config {
    const char *const *roots;       /* copied; none: only the roots connections' peers name */
    size_t nroots;
    unsigned attempts;              /* 0: CONTAINER_ATTEMPTS */
    int64_t retry_ns;               /* first retry after this, doubling; 0: 100 ms */
    size_t max_records;             /* 0: CONTAINER_CACHE_MAX */
    const char *docker_socket;      /* Docker's Engine API (a Unix socket); NULL: not asked */
    size_t max_bytes;               /* 0: CONTAINER_CACHE_MAX_BYTES */
    int64_t users_recheck_ns;       /* 0: CONTAINER_USERS_RECHECK_NS */
    bool no_watch;                  /* no inotify on the roots (tests: lookups by asking only) */
};

/* What the cache did (monotonic counts; any thread). */
struct container_cache_stats {
    uint64_t lookups;               /* state file searches (each attempt) */
    uint64_t found;                 /* containers whose state file was read */
    uint64_t unknown;               /* given up on after every attempt */
    uint64_t refused;               /* state files refused (too large, malformed, another id) */
    uint64_t foreign;               /* ids a connection named whose state file is another sandbox's */
    uint64_t users_refused;         /* passwd or group files refused (not regular, too large, a symlink out) */
    uint64_t mounts_malformed;      /* spec.mounts entries refused or malformed (container_record.mounts_malformed) */
    uint64_t invalid_ids;           /* ids never looked up (not a runsc id) */
    uint64_t evicted;               /* records dropped to stay under max_records and max_bytes */
    uint64_t wait_timeouts;         /* container_cache_wait deadlines that passed */
    uint64_t docker_lookups;        /* questions to Docker's API */
    uint64_t docker_found;          /* ... answered with the container's names */
    uint64_t docker_not_found;      /* ... answered 404: not Docker's container */
    uint64_t docker_failed;         /* ... unanswered: no socket, refused, timed out, an HTTP error */
    uint64_t docker_refused;        /* answers refused: too large, not JSON, about another container */
    uint64_t labels_dropped;        /* labels not kept (container_record.labels_dropped) */
    uint64_t bound_peer;            /* connections bound by the runsc command that connected */
    uint64_t bound_container;       /* by the first container they named */
    uint64_t bound_restart;         /* as the image before this one had bound them */
    uint64_t unbound;               /* closed unbound, or past CONTAINER_CONNS_MAX */
    uint64_t records;               /* records held now (a gauge) */
    uint64_t record_bytes;          /* their bytes (a gauge) */
};

struct container_cache;

/* Starts the lookup thread (and the watch of the roots). NULL with a
 * message in err. */
struct container_cache *container_cache_open(const struct container_cache_config *cfg, char *err, size_t errlen);
void container_cache_close(struct container_cache *c);   /* NULL: nothing */

/* ---- connections: the sandbox each one streams from ----
 *
 * runsc connects to the sink itself and hands the socket to the sandbox it
 * makes (gVisor pkg/sentry/seccheck/config.go SetupSinks, called by `runsc
 * create`, `run`, `do`, `trace create`): a connection's peer is that runsc
 * command on the host, waiting for the handshake's answer, not the sandbox
 * (which a compromised workload owns). The container lock file it holds
 * open then, `<root>/<id>_sandbox:<sandbox>.lock`, names the sandbox and
 * the root (else its command line: container/peer.c): a connection is
 * bound to it from its open, whatever becomes of the sandbox's state file,
 * and its sandbox's own state file is looked for from then on (every
 * CONTAINER_OPEN_RETRY_NS, for at most CONTAINER_OPEN_WINDOW_NS; its bundle's
 * config.json read meanwhile) and kept when runsc deletes it. A peer that is
 * not runsc (or gone, or in another pid namespace) binds nothing; then the
 * first container the connection names binds it: the sandbox its state
 * file's name gives (a sandbox's first event is its root container's,
 * sent before any of its code runs), that id itself when it has none. */

enum container_bound_by {
    CONTAINER_UNBOUND = 0,
    CONTAINER_BOUND_BY_PEER,        /* the runsc command that connected named it */
    CONTAINER_BOUND_BY_CONTAINER,   /* the first container it named (its state file's name) */
    CONTAINER_BOUND_BY_RESTART,     /* as the image before this one bound it (its database) */
};

/* "peer", "container", "restart"; NULL when unbound. */
const char *container_bound_by_name(enum container_bound_by by);

struct container_binding {
    enum container_bound_by by;
    char sandbox[CONTAINER_ID_MAX];   /* "" when unbound */
    uint32_t scope;                   /* where its state files are: 0 the roots, else the root its peer named */
};

/* A connection was handshaken (the loop thread; never blocks: two
 * getsockopt on fd, the peer's credentials and pidfd): its peer is read
 * and its sandbox looked for on the lookup thread. */
void container_cache_conn_opened(struct container_cache *c, uint64_t conn_id, int fd);

/* A connection carried over a restart, bound as the image before bound it
 * (the database's connections.sandbox): not bound again by what it names. */
void container_cache_conn_restored(struct container_cache *c, uint64_t conn_id, const char *sandbox);

/* The connection closed: its binding goes (the records found stay). */
void container_cache_conn_closed(struct container_cache *c, uint64_t conn_id);

/* Never blocks on I/O. The connection's binding into out: true when bound.
 * claim (NULL: none) is the first container id it named, which binds it
 * when its peer binds nothing (looked up on the thread: false until then). */
bool container_cache_binding(struct container_cache *c, uint64_t conn_id, const char *claim,
                             struct container_binding *out);

/* container_cache_binding, waiting up to timeout_ns while the binding is
 * being worked out. */
bool container_cache_wait_binding(struct container_cache *c, uint64_t conn_id, const char *claim,
                                  int64_t timeout_ns, struct container_binding *out);

/* ---- records of a bound sandbox ---- */

/* Never blocks on I/O (a mutex only). The record of container id as the
 * sandbox of b sees it, one reference for the caller, or NULL while it is
 * being looked up: then a lookup is queued if none is. An id that cannot be
 * a runsc id gives NULL for ever (counted in invalid_ids at each ask). */
const struct container_record *container_cache_get(struct container_cache *c, const struct container_binding *b,
                                                   const char *id);

/* container_cache_get, but waits until id's first lookup has ended (a
 * connection's own sandbox in its open window: until found) or timeout_ns
 * passed (counted): for the first events of a container. */
const struct container_record *container_cache_wait(struct container_cache *c, const struct container_binding *b,
                                                    const char *id, int64_t timeout_ns);

/* Grows each time a record is published (found, unknown, refused, foreign,
 * its users re-read) or a connection bound: a caller holding NULL or an
 * older record asks again. */
uint64_t container_cache_generation(const struct container_cache *c);

/* The records published since the previous call (one consumer: storage
 * writes each as a row), oldest first, at most max, each with a reference
 * for the caller. A container published again before being taken is taken
 * once, as it is now: the cache keeps no record it replaced. */
size_t container_cache_take_published(struct container_cache *c, const struct container_record **out, size_t max);

void container_cache_get_stats(struct container_cache *c, struct container_cache_stats *out);

/* ---- a reader's view: per connection, no lock per event ----
 *
 * The rules engine asks for the record of each event's container. A view
 * remembers per (connection, container id) what the cache answered and asks
 * again only when the cache published something since. A connection is
 * given only records of its own sandbox (container_cache_binding): a
 * compromised sandbox naming another pod's container id gets no names
 * (counted), whoever's the record. One thread at a time. */

struct container_view;

struct container_view *container_view_new(struct container_cache *c);
void container_view_free(struct container_view *v);   /* NULL: nothing */

/* The record for conn_id's container id, valid until the next call for
 * that connection or until container_view_conn_closed; NULL when unknown
 * (not found yet, no cache, or not its sandbox's). */
const struct container_record *container_view_get(struct container_view *v, uint64_t conn_id, const char *id);

/* container_view_get, but a (connection, id) pair the view has not seen
 * yet waits up to timeout_ns for the connection's binding and the id's
 * first lookup (container_cache_wait): the writer asks before the rules
 * evaluate a container's first events. */
const struct container_record *container_view_wait(struct container_view *v, uint64_t conn_id, const char *id,
                                                   int64_t timeout_ns);

/* The connection's binding as the view holds it (false: unbound so far). */
bool container_view_binding(struct container_view *v, uint64_t conn_id, struct container_binding *out);

/* Distinct container ids one connection may name; past it the view gives
 * NULL without asking the cache (a sandbox inventing ids cannot make the
 * lookup thread work for it; counted). */
#define CONTAINER_VIEW_IDS_PER_CONN 64

void container_view_conn_closed(struct container_view *v, uint64_t conn_id);

/* Records withheld from a connection because they are another sandbox's. */
uint64_t container_view_foreign(const struct container_view *v);
/* Ids not looked up because their connection named too many. */
uint64_t container_view_over_limit(const struct container_view *v);

#endif
