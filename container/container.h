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
#define CONTAINER_ATTEMPTS 5              /* state file looked for, 100 ms apart doubling (1.5 s) */
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
};

/* "found", "unknown", "refused". */
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

/* Reads id's state file from the roots (directories, each opened when
 * asked) and, when found, the container's passwd and group. Returns a new
 * record (one reference), with state FOUND, REFUSED (why says what), or
 * UNKNOWN when no root holds a state file for id; NULL out of memory. */
struct container_record *container_read(const char *id, const char *const *roots, size_t nroots);

/* A record like r with the container's passwd and group read again;
 * NULL when they did not change since r (same size and mtime) or out of
 * memory. */
struct container_record *container_reread_users(const struct container_record *r);

/* ---- the cache and its lookup thread ---- */

struct container_cache_config {
    const char *const *roots;       /* copied; none: every lookup ends unknown at once */
    size_t nroots;
    unsigned attempts;              /* 0: CONTAINER_ATTEMPTS */
    int64_t retry_ns;               /* first retry after this, doubling; 0: 100 ms */
    size_t max_records;             /* 0: CONTAINER_CACHE_MAX */
    const char *docker_socket;      /* Docker's Engine API (a Unix socket); NULL: not asked */
};

/* What the cache did (monotonic counts; any thread). */
struct container_cache_stats {
    uint64_t lookups;               /* state file searches (each attempt) */
    uint64_t found;                 /* containers whose state file was read */
    uint64_t unknown;               /* given up on after every attempt */
    uint64_t refused;               /* state files refused (too large, malformed, another id) */
    uint64_t users_refused;         /* passwd or group files refused (not regular, too large, a symlink out) */
    uint64_t mounts_malformed;      /* spec.mounts entries refused or malformed (container_record.mounts_malformed) */
    uint64_t invalid_ids;           /* ids never looked up (not a runsc id) */
    uint64_t evicted;               /* records dropped to stay under max_records */
    uint64_t wait_timeouts;         /* container_cache_wait deadlines that passed */
    uint64_t docker_lookups;        /* questions to Docker's API */
    uint64_t docker_found;          /* ... answered with the container's names */
    uint64_t docker_not_found;      /* ... answered 404: not Docker's container */
    uint64_t docker_failed;         /* ... unanswered: no socket, refused, timed out, an HTTP error */
    uint64_t docker_refused;        /* answers refused: too large, not JSON, about another container */
    uint64_t labels_dropped;        /* labels not kept (container_record.labels_dropped) */
};

struct container_cache;

/* Starts the lookup thread. NULL with a message in err. */
struct container_cache *container_cache_open(const struct container_cache_config *cfg, char *err, size_t errlen);
void container_cache_close(struct container_cache *c);   /* NULL: nothing */

/* Never blocks on I/O (a mutex only). The record for id, one reference for
 * the caller, or NULL while it is being looked up: then a lookup is queued
 * if none is. An id that cannot be a runsc id gives NULL for ever
 * (counted in invalid_ids at each ask). */
const struct container_record *container_cache_get(struct container_cache *c, const char *id);

/* container_cache_get, but waits until id's first lookup has ended or
 * timeout_ns passed (counted): for the first events of a container. */
const struct container_record *container_cache_wait(struct container_cache *c, const char *id, int64_t timeout_ns);

/* Grows each time a record is published (found, unknown, refused, or its
 * users re-read): a caller holding NULL or an older record asks again. */
uint64_t container_cache_generation(const struct container_cache *c);

/* Records published since *cursor (0 at first), oldest first, at most max
 * of them, each with a reference for the caller; *cursor moves past them.
 * For storage: each one becomes a row. */
size_t container_cache_published(struct container_cache *c, uint64_t *cursor, const struct container_record **out,
                                 size_t max);

void container_cache_get_stats(struct container_cache *c, struct container_cache_stats *out);

/* ---- a reader's view: per connection, no lock per event ----
 *
 * The rules engine asks for the record of each event's container. A view
 * remembers per (connection, container id) what the cache answered and asks
 * again only when the cache published something since. It also binds a
 * connection to one sandbox: the first record found for a connection names
 * its sandbox (a sandbox's first event is its root container's start, sent
 * by runsc before any of its code runs), and a record of another sandbox is
 * not given to that connection (a compromised sandbox naming another pod's
 * container id gets no names; counted). One thread at a time. */

struct container_view;

struct container_view *container_view_new(struct container_cache *c);
void container_view_free(struct container_view *v);   /* NULL: nothing */

/* The record for conn_id's container id, valid until the next call for
 * that connection or until container_view_conn_closed; NULL when unknown
 * (not found yet, no cache, or another sandbox's). */
const struct container_record *container_view_get(struct container_view *v, uint64_t conn_id, const char *id);

/* container_view_get, but a (connection, id) pair the view has not seen
 * yet waits up to timeout_ns for the id's first lookup (container_cache_wait):
 * the writer asks before the rules evaluate a container's first events. */
const struct container_record *container_view_wait(struct container_view *v, uint64_t conn_id, const char *id,
                                                   int64_t timeout_ns);

/* Distinct container ids one connection may name; past it the view gives
 * NULL without asking the cache (a sandbox inventing ids cannot make the
 * lookup thread work for it; counted). */
#define CONTAINER_VIEW_IDS_PER_CONN 64

void container_view_conn_closed(struct container_view *v, uint64_t conn_id);

/* Records withheld from a connection because they named another sandbox. */
uint64_t container_view_foreign(const struct container_view *v);
/* Ids not looked up because their connection named too many. */
uint64_t container_view_over_limit(const struct container_view *v);

#endif
