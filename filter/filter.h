/* filter.h - the condition language and what it reads: libsinsp's side of
 * Falco's stack (falcosecurity/libs userspace/libsinsp/filter/, its
 * filterchecks and its thread table), the module's whole interface.
 *
 * A condition (a rule's, a macro's, a step's) is parsed with libsinsp's
 * grammar and compiled once against the field table: every field name is
 * resolved, every value converted to the field's type, every regex, glob
 * and list compiled. It is then evaluated on one decoded event at a time,
 * reading Falco's fields (evt.*, proc.*, fd.*, container.*, k8s.*,
 * user.*, gvisor.*) from the gVisor message, from a process table the
 * events keep per sandbox connection, and from the container's record
 * (container/container.h). It knows nothing of rules files, alerts or
 * sinks: rules/ (Falco's engine) loads the files, keeps the rule set and
 * raises alerts on top of this.
 *
 * In the order a reader needs them: event types (what kind of event a
 * message is), the process table, fields (names, values, the evaluation
 * context of one event, what a field needs from runsc), conditions
 * (compile, evaluate, what they can match).
 *
 * Threads: a compiled condition is immutable and may be read by any
 * thread; an evaluation context, its value slots and a process table
 * belong to one thread at a time (the daemon's writer thread). Nothing
 * here blocks or does I/O.
 *
 * Trust: every byte of an event comes from a sandbox that may be hostile,
 * and so do its container's files: lengths, counts, pids and strings are
 * checked, every string kept is capped, the process table is bounded and
 * keyed with a secret, and no value makes one evaluation cost more than
 * the condition's compiled size. A condition comes from a rules file, which
 * the operator trusts but may get wrong: it is bounded too
 * (FILTER_MAX_EXPANDED, FILTER_MAX_MACRO_NESTING, regex limits).
 */
#ifndef SECCHECKD_FILTER_H
#define SECCHECKD_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <protobuf-c/protobuf-c.h>

#include "arena.h"
#include "decode.h"
#include "event.h"
#include "runsc_fields.h"
#include "strbuf.h"

/* ---- event types: evt.type, evt.dir, gvisor.point ---- */

/* What kind of event a decoded gVisor message is, in Falco's
 * terms: its evt.type (an index into one space of syscall numbers plus a few
 * types of our own), its evt.dir, and its gvisor.point.
 *
 * Syscall points (raw or schematized) take the name of their sysno from the
 * x86_64 table; sentry/clone is a clone exit and sentry/execve an execve exit
 * (the process-level view of the same thing); sentry/task_exit is Falco's
 * procexit (direction '>', as in Falco); container/start is `container`
 * ('>', as Falco's container event); sentry/exit_notify_parent and
 * sentry/mmap have no Falco counterpart and keep their own names
 * (`exit_notify_parent` '>', `sentry_mmap` '<'). A sysno outside the table
 * is `unknown`.
 */
#define EVTYPE_SYSCALL_LIMIT 471          /* x86_64 numbers 0..470 */

enum {
    EVTYPE_UNKNOWN = EVTYPE_SYSCALL_LIMIT, /* a sysno the table does not name */
    EVTYPE_PROCEXIT,
    EVTYPE_CONTAINER,
    EVTYPE_EXIT_NOTIFY_PARENT,
    EVTYPE_SENTRY_MMAP,
    EVTYPE_COUNT
};

/* Syscall numbers the table knows: open, openat, ... (evt.type's values). */
enum {
    SYS_READ = 0, SYS_OPEN = 2, SYS_CLOSE = 3, SYS_CLONE = 56, SYS_FORK = 57, SYS_VFORK = 58,
    SYS_EXECVE = 59, SYS_CHDIR = 80, SYS_FCHDIR = 81, SYS_CREAT = 85, SYS_OPENAT = 257,
    SYS_OPEN_BY_HANDLE_AT = 304, SYS_EXECVEAT = 322, SYS_CLONE3 = 435, SYS_OPENAT2 = 437,
};

extern const char *const evtype_syscall_names[EVTYPE_SYSCALL_LIMIT];

#define EVTYPE_WORDS ((EVTYPE_COUNT + 63) / 64)

/* A set of event types (a rule's, a condition's). */
struct evtype_set {
    uint64_t w[EVTYPE_WORDS];
};

static inline void evtype_set_add(struct evtype_set *s, unsigned t) { s->w[t / 64] |= 1ull << (t % 64); }
static inline bool evtype_set_has(const struct evtype_set *s, unsigned t) { return s->w[t / 64] >> (t % 64) & 1; }
void evtype_set_all(struct evtype_set *s);        /* every type that has a name */
bool evtype_set_is_empty(const struct evtype_set *s);
bool evtype_set_is_all(const struct evtype_set *s);
void evtype_set_and(struct evtype_set *s, const struct evtype_set *o);
void evtype_set_or(struct evtype_set *s, const struct evtype_set *o);
void evtype_set_invert(struct evtype_set *s);     /* within the named types */

/* "openat", "procexit"; NULL for a number the table leaves out. */
const char *evtype_name(unsigned t);
/* The type a name means in a condition, or -1. Falco's spellings of three
 * syscalls (pread, pwrite, prlimit) mean pread64, pwrite64, prlimit64. */
int evtype_lookup(const char *name, size_t len);

struct evclass {
    uint16_t type;
    char dir;              /* '<' or '>' */
    bool syscall_enter;    /* a syscall /enter point: seen only by rules that test evt.dir */
    bool has_result;       /* a syscall exit: evt.res, evt.rawres, evt.failed have values */
};

/* False for an event with no message (unknown type, bad payload). */
bool evtype_classify(const struct event *ev, struct evclass *out);

/* gvisor.point: "syscall/openat/exit", "syscall/sysno/39/enter",
 * "sentry/clone". Written into buf (at least EVTYPE_POINT_MAX bytes);
 * returns its length. */
#define EVTYPE_POINT_MAX 64
size_t evtype_point(const struct event *ev, const struct evclass *c, char *buf);

/* ---- the process table, per sandbox connection ---- */

/* The process table behind proc.ppid, proc.pname, proc.aname[N],
 * proc.cmdline: one per sandbox connection, all under one bound.
 *
 * A process is keyed by its thread group id and that group's start time
 * (ids are reused: a known id with another start time is a new process).
 * Entries come from container/start, sentry/clone (sent in the parent's
 * context, naming the child), sentry/execve, the syscall clone/fork/vfork
 * and execve/execveat exits, sentry/task_exit, and every event's context
 * (name, cwd, credentials, parent_thread_group_id when sent).
 *
 * Bounded: at most max entries over every connection; past it the
 * connection holding the most entries loses its least recently used one
 * (counted in evictions), so one sandbox's flood of forks cannot push
 * another's processes out. Each string is capped (PROC_*_MAX bytes, cut).
 * Lookups are a hash table's whatever pids a sandbox picks: the hash is
 * keyed with a secret drawn at creation (filter/siphash.h), so no one can compute
 * ids that share a bucket.
 * Entries and their buffers are recycled, so a steady workload allocates
 * nothing.
 */
/* The entries themselves (struct proc: ids, names, paths, the image, the
 * sockets) are the field classes' business: filter/proctab.h. */
struct proc;

/* What one event did to the table, for its evaluation. */
struct proc_effect {
    bool exec_repeat;           /* a syscall execve exit after its sentry/execve: seen once already */
    bool remove_after;          /* sentry/task_exit of the group leader: goes after evaluation */
    int64_t closed_fd;          /* a close exit: its socket is forgotten after evaluation; -1: none */
};

struct proctab_stats {
    uint64_t processes, evictions;
    uint64_t bytes;             /* entries plus their string buffers */
};

struct proctab;

struct proctab *proctab_new(size_t max_processes);
void proctab_free(struct proctab *pt);

/* What the table keeps beyond names, paths and parents, as the rules read
 * it (rule_set_process_keep): every process's environment costs up to
 * PROC_ENV_MAX bytes, sockets PROC_SOCKETS_MAX slots. Applies to what
 * comes next. */
enum { PROC_KEEP_ENV = 1u << 0, PROC_KEEP_SOCKETS = 1u << 1 };
void proctab_keep(struct proctab *pt, unsigned what);

/* Applies ev to its connection's table; returns the event's process (NULL
 * when the event names none) and what the evaluation must know. */
struct proc *proctab_apply(struct proctab *pt, const struct event *ev, struct proc_effect *fx);
/* After evaluation: removes what the event ended. */
void proctab_finish(struct proctab *pt, struct proc *p, const struct proc_effect *fx);

/* How many more events conn_id's sandbox says it dropped than its previous
 * event said (a header's dropped_count is cumulative per connection); 0
 * when the count did not grow. Kept per connection, with its processes. */
uint64_t proctab_dropped_growth(struct proctab *pt, uint64_t conn_id, uint32_t dropped);

void proctab_conn_closed(struct proctab *pt, uint64_t conn_id);
void proctab_get_stats(const struct proctab *pt, struct proctab_stats *out);

/* ---- fields ---- */

/* Falco's field names over a decoded gVisor event: the table of
 * fields, their resolution when a rules file is compiled, and extraction
 * when an event is evaluated (lazy: only what a condition or an output
 * reads, each value computed once per event and cached in its slot).
 *
 * A field the event does not carry is absent (FV_ABSENT): every comparison
 * on it is false, `<NA>` in text, null in JSON. Values point into the
 * event's message, the process table or the slot's own buffer, all valid
 * until the next event; nothing is allocated once the slot buffers have
 * grown to the workload's sizes.
 */
/* The event's own fields (fields_evt.c); the compiler, the renderer and
 * rules_needs test these ids. Other classes number theirs from their own
 * base (fields_class.h), so an id names one field over every class. */
enum field_id {
    F_EVT_TYPE, F_EVT_DIR, F_EVT_TIME, F_EVT_NUM, F_EVT_RES, F_EVT_RAWRES, F_EVT_FAILED,
    F_EVT_IS_OPEN_READ, F_EVT_IS_OPEN_WRITE, F_EVT_IS_OPEN_EXEC, F_EVT_ARG, F_EVT_DROPPED, F_EVT_DROPPED_NEW,
    F_GVISOR_POINT, F_EVT_ARGS, F_EVT_BUFFER,
    F_EVT_COUNT
};

/* Whether gVisor can give a field a value. */
enum field_avail {
    FIELD_REPORTED = 0,           /* runsc sends what it needs (2022-12 on) */
    FIELD_NEWER_RUNSC,            /* only runsc releases after 2022-12 send it: absent with older ones */
    FIELD_NEVER,                  /* gVisor never reports it: known to the loader, always absent */
};

enum ftype { FT_STR, FT_INT, FT_UINT, FT_BOOL, FT_IP, FT_DYN /* evt.arg: the message field's own type */ };

enum fval_kind { FV_ABSENT = 0, FV_STR, FV_INT, FV_UINT, FV_BOOL, FV_IP };

struct fval {
    enum fval_kind kind;
    uint32_t len;                 /* FV_STR: bytes (NUL-terminated as well); FV_IP: 4 or 16 */
    union {
        const char *s;
        int64_t i;
        uint64_t u;
        bool b;
        uint8_t ip[16];
    };
};

struct field_def;

/* A field as a condition or an output names it. */
struct fieldref {
    uint16_t id;                  /* unique over every class (F_EVT_* for the event's own) */
    const struct field_def *def;  /* its definition: name, type, class, what runsc must send */
    int32_t index;                /* proc.aname[N], proc.apid[N], evt.arg[N]; -1: none */
    const char *argname;          /* proc.env[NAME], evt.arg.NAME: NAME (in the rule set's arena); NULL: none */
    uint32_t argname_len;
    bool any_ancestor;            /* proc.aname / proc.apid without an index (conditions only) */
    /* evt.arg: the message field per message type, resolved once at load
     * (DECODE_TYPE_MAX + 1 entries, NULL where the type has none). */
    const ProtobufCFieldDescriptor *const *arg;
    /* evt.arg.NAME under Falco's name: per parameter list (fields_args.c),
     * the parameter's index + 1, 0 where the list has no such name; NULL
     * for evt.arg[N] */
    const uint8_t *falco;
    uint32_t slot;                /* value cache slot, per rule set */
};

enum ftype fields_type(const struct fieldref *f);
/* Whether a and b read the same value (they may share a cache slot). */
bool fields_same(const struct fieldref *a, const struct fieldref *b);
enum field_avail fields_avail(const struct fieldref *f);
const char *fields_name(const struct fieldref *f);

/* The shared decoder's message layouts (descriptors per message type). */
const struct decoder *fields_decoder(void);

/* Resolves "proc.aname" with its optional [arg] ("evt.arg.NAME" carries its
 * name in the field name); evt.arg's descriptor table goes in arena a (the
 * rule set's). 0, or -1 with a message naming the problem. */
int fields_resolve(const char *name, size_t len, const char *arg, size_t arglen, bool has_arg, struct arena *a,
                   struct fieldref *out, char *err, size_t errlen);

/* ---- evaluation context: one event ---- */

struct field_slot {
    uint32_t gen;                 /* the event the value belongs to */
    struct fval v;
    struct strbuf buf;            /* backs computed strings */
};

struct fdinfo;
struct container_view;
struct container_record;

struct evctx {
    const struct event *ev;
    struct evclass cls;
    int64_t time_ns;              /* context time_ns, else receive time */
    uint64_t num;                 /* evt.num */
    uint64_t dropped_new;         /* evt.dropped_new: the connection's dropped count grew by this */
    struct proctab *pt;
    struct proc *proc;            /* NULL: the event names no process */
    struct field_slot *slots;
    uint32_t gen;
    bool have_point, have_fd;
    char point[EVTYPE_POINT_MAX];
    struct fdinfo *fd;            /* lazily filled, owned by the engine */
    struct strbuf *fdname;        /* backs fd.name when it is built (joined path, address) */
    /* container.name, k8s.*, user.name: the event's container record,
     * asked of the view once per event (fields_container.c); NULL view:
     * absent. */
    struct container_view *containers;
    const struct container_record *container;
    bool have_container;
    const char *hostname;         /* evt.hostname: the engine's (the alerts' "hostname"); NULL: absent */
};

/* The value of f for the context's event (cached in f's slot). */
const struct fval *fields_get(struct evctx *x, const struct fieldref *f);

/* proc.aname / proc.apid of the level-th ancestor (1: parent), for the
 * any-ancestor walk; FV_ABSENT past the known chain. */
void fields_ancestor(struct evctx *x, const struct fieldref *f, unsigned level, struct fval *out);

/* Whether f is one of the event's time forms (evt.time, evt.datetime...),
 * which Falco's output_fields give as the integer of nanoseconds. */
bool fields_json_time(const struct fieldref *f);

/* Text of a value as Falco prints it (`<NA>` when absent): appended to out. */
void fields_render_text(struct strbuf *out, const struct fval *v);

/* "HH:MM:SS.nnnnnnnnn" (UTC) and "YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ". */
void fields_format_time(struct strbuf *out, int64_t ns, bool iso);

/* The field table, for documentation and `rules check`. */
struct field_info {
    const char *name;
    enum ftype type;
    const char *arg;              /* "[N]", ".NAME or [N]", or NULL */
    enum field_avail avail;
};
size_t fields_count(void);
const struct field_info *fields_info(size_t i);

/* The fields Falco appends to every rule's output when falco.yaml's
 * append_output has `suggested_output: true` (its default): those its
 * container plugin flags as suggested output (falcosecurity/plugins
 * plugins/container/src/caps/extract/extract.cpp, addOutput), in that
 * plugin's field order. The i-th name ("container.id"), NULL past the last. */
const char *fields_suggested(size_t i);

/* Internal state of fd.* extraction, exposed for its size only. */
struct fdinfo {
    uint32_t gen;
    bool has_num, has_name, is_socket;
    char typechar;                /* 0: absent */
    int64_t num;
    const char *name;
    uint32_t name_len;
    uint8_t role;                 /* which side of a socket the address is (fields_fd.c) */
    uint8_t family;               /* 4, 6 or 0 */
    uint16_t port;
    uint8_t ip[16];
    /* the socket as the process table knows it, and as the event itself
     * says: domain, type, protocol (domain 0: not known) */
    const struct psock *sock;
    uint8_t domain, type;
    uint16_t protocol;
    int8_t connected;             /* -1: not known */
    bool name_changed;
};

/* ---- what a field needs from runsc ----
 *
 * For `seccheckd gvisor-config --rules` and `rules check --pod-init`
 * (rules/needs.c): which context and optional fields a field reads at the
 * points a rule matches, what the process table must have been told, and
 * the release that first sends it. */

/* What the process table must have been told for a field to have a value:
 * which points rules_needs adds for it. */
enum {
    FIELD_PROC_IMAGE = 1u << 0,    /* exepath, args: container/start, sentry/clone, sentry/execve */
    FIELD_PROC_PARENTS = 1u << 1,  /* the parent chain: the same points, with the child's context */
    FIELD_PROC_COMM = 1u << 2,     /* comm after an exec: the execve enter point's pathname */
    FIELD_PROC_CWD = 1u << 3,      /* a relative exec path is joined to the cwd */
    /* What sentry/execve tells of the new image, kept per process and
     * passed to its children (fields_exec.c): */
    FIELD_PROC_BINARY = 1u << 4,   /* binary_info: the binary's mode, owner, layer, inode, ctime, memfd */
    FIELD_PROC_STDIO = 1u << 5,    /* fd_info: the standard streams */
    FIELD_PROC_PIPES = 1u << 6,    /* pipe_proc_info: the processes at the other ends of stdin/stdout pipes */
    FIELD_PROC_SESSION = 1u << 7,  /* session and process group: setsid, setpgid, inherited at clone */
    FIELD_PROC_ENV = 1u << 8,      /* the environment: kept only for rules that read it */
    FIELD_PROC_SOCKETS = 1u << 9,  /* the sockets a process holds: socket, accept, connect, bind, dup, close */
};

/* Context fields that identify the event's process entry. */
#define FIELD_CTX_PROCESS (RULES_CTX_GROUP_ID | RULES_CTX_THREAD_GROUP_START_TIME)

struct field_needs {
    unsigned context;             /* RULES_CTX_* */
    unsigned optional;            /* RULES_OPT_* */
    unsigned process;             /* FIELD_PROC_* */
    unsigned release;             /* FIELD_NEWER_RUNSC: the release that sends it (RULES_RUNSC_*); else 0 */
};
void fields_needs(const struct fieldref *f, struct field_needs *out);

/* Falco's event parameters (evt.arg.NAME under Falco's names): a list is
 * the parameters of one event type as one message type reports it. */
int fields_args_list(uint16_t message_type, unsigned evtype);          /* -1: none */
bool fields_args_reported(int list, int param);                        /* gVisor sends its value */
unsigned fields_args_optional(int list, int param);                    /* RULES_OPT_* it needs */

/* ---- conditions ---- */

/* Falco's condition language as current falcosecurity/libs has
 * it: parsing (filter_parse.c, libsinsp's grammar), compiling every value
 * once (numbers, IP networks, glob patterns, regular expressions, lowercased
 * icontains needles, pmatch path parts, sorted in-sets; the types of
 * transformers and of both sides of a check, refused as libsinsp's compiler
 * refuses them), and evaluating the tree on an event without allocating
 * (filter_eval.c).
 *
 * `not` binds tighter than `and`, `and` tighter than `or`; a bare
 * identifier is a macro; values are bare words, '...' or "..." with Falco's
 * escapes (\xHH included); `in`, `intersects` and `pmatch` take a
 * parenthesized list (list names inside it expand to their items) or a list
 * name; string operators take a modifier (`startswith oneof (...)`,
 * `anyof`, `allof`); either side may be a transformer (tolower, toupper,
 * b64, basename, len, join, concat, getopt) and the right side a field in
 * val(...). `<`, `<=`, `>`, `>=` take a number.
 */
/* Beyond this many nodes after macro expansion a condition is refused: a
 * rules file must not make one event cost unbounded work. */
#define FILTER_MAX_EXPANDED 100000
/* Macros inside macros (rules.h's RULES_MAX_NESTING: Falco's parser depth;
 * parentheses have their own, filter_ast.h). */
#define FILTER_MAX_MACRO_NESTING 1000

enum filter_op {
    OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_CONTAINS, OP_ICONTAINS, OP_BCONTAINS, OP_STARTSWITH,
    OP_BSTARTSWITH, OP_ENDSWITH, OP_GLOB, OP_IGLOB, OP_IN, OP_INTERSECTS, OP_PMATCH, OP_EXISTS, OP_REGEX, OP_COUNT
};

/* A string operator's modifier over a list of values: true when exactly
 * one, at least one, or every value satisfies the operator. */
enum filter_mod { MOD_NONE, MOD_ONEOF, MOD_ANYOF, MOD_ALLOF };

const char *filter_op_name(enum filter_op op);
const char *filter_mod_name(enum filter_mod mod);

/* A number as compared: sign and magnitude cover int64 and uint64 alike. */
struct fnum {
    bool neg;
    uint64_t mag;
};

struct regex;

/* One compiled constant. */
struct operand {
    const char *s;            /* the text, unescaped, NUL-terminated */
    uint32_t len;
    bool has_num, has_bool, has_ip;
    struct fnum num;
    bool b;
    uint8_t ipfam;            /* 4 or 6 */
    uint8_t prefix;           /* network bits; 32 or 128 for a single address */
    uint8_t ip[16];
    const char *lower;        /* icontains, iglob: the value lowercased */
    const uint8_t *bytes;     /* bcontains, bstartswith: the hex decoded */
    uint32_t nbytes;
    const struct regex *re;   /* regex: compiled at load */
    /* pmatch: the value's path parts */
    const char *const *parts;
    const uint32_t *part_lens;
    const bool *part_glob;
    uint32_t nparts;
};

/* A value expression: one side of a check when it is more than a plain
 * field (a transformer, a list of values, val(field)), evaluated into
 * scratch slots of the engine's value cache (filter_eval.c). */
enum fexpr_kind {
    FX_FIELD, FX_CONST, FX_LIST, FX_TOLOWER, FX_TOUPPER, FX_B64, FX_BASENAME, FX_LEN, FX_JOIN, FX_CONCAT, FX_GETOPT
};

struct getopt_spec;

struct fexpr {
    uint8_t kind;             /* enum fexpr_kind */
    uint8_t type;             /* enum ftype of its values */
    bool is_list;
    char selector;            /* getopt(...)[c]: the option whose value it yields; 0: the whole list */
    struct fieldref field;    /* FX_FIELD */
    struct fval value;        /* FX_CONST: the text */
    struct fexpr **args;
    uint32_t nargs;
    uint32_t vals_slot, bytes_slot;   /* scratch slots its results are built in */
    const struct getopt_spec *opts;   /* FX_GETOPT with a constant optstring */
};

struct check {
    struct fieldref field;    /* the left side when it is a plain field */
    const struct fexpr *lhs;  /* else the left side: a transformer */
    const struct fexpr *rhs;  /* the right side when a field or transformer; NULL: the constants below */
    enum filter_op op;
    enum filter_mod mod;
    uint8_t type;             /* the left side's enum ftype */
    bool lhs_list;            /* the left side yields a list (getopt) */
    struct operand *vals;     /* one for binary operators; the list for in/intersects/pmatch and modifiers */
    uint32_t nvals;
    /* in/intersects, and == anyof / != allof: the values sorted, for binary search */
    const struct operand **by_str;
    const struct operand **by_num;
    uint32_t nby_num;
    uint8_t dirs;             /* evt.dir checks: the FILTER_DIR_* bits it is true for */
    int8_t known;             /* evt.num's invariant (it starts at 1): +1 always true, -1 never, 0 depends */
    uint32_t utf8_slot;       /* regex: where a value that is not valid UTF-8 is sanitized */
};

enum cnode_kind { CN_AND, CN_OR, CN_NOT, CN_CHECK, CN_TYPES, CN_MACRO, CN_CONST };

struct cnode {
    enum cnode_kind kind;
    bool const_val;               /* CN_CONST */
    uint32_t n;
    struct cnode **kids;          /* AND, OR: n children; NOT: one */
    struct check *chk;            /* CN_CHECK */
    struct evtype_set *types;     /* CN_TYPES: evt.type is one of these */
    const struct cnode *body;     /* CN_MACRO: the macro's compiled condition (shared) */
    /* what the expanded condition is, computed bottom-up at compile */
    uint64_t size;                /* nodes after macro expansion (saturates) */
    uint32_t macro_depth;
    bool uses_dir, uses_point;
};

/* A list's items as a condition sees them. */
struct filter_list {
    const char *const *items;
    const uint32_t *lens;
    size_t n;
};

/* What a compiled condition owns outside its arena (compiled regular
 * expressions): chained from the rule set, released by filter_owned_free
 * when the rule set goes. */
struct filter_owned;
void filter_owned_free(struct filter_owned *list);

/* What the parser asks of the loader. pos arguments are byte offsets in the
 * text being parsed. */
struct filter_env {
    void *ctx;
    struct arena *arena;          /* the rule set's: compiled nodes live there */
    /* A visible macro by name: its compiled condition; NULL and *failed
     * when it exists but did not compile (already reported); NULL, !*failed
     * when undefined (the callback reports it: it knows why). */
    const struct cnode *(*macro)(void *ctx, const char *name, size_t len, size_t pos, bool *failed);
    const struct filter_list *(*list)(void *ctx, const char *name, size_t len);
    uint32_t (*slot)(void *ctx, const struct fieldref *f);
    void (*error)(void *ctx, size_t pos, const char *message);
    /* Where compiled regular expressions are chained (the rule set's list
     * head); NULL: `regex` is refused. */
    struct filter_owned **owned;
    /* Optional: libsinsp's compilation warnings (a regex a simpler operator
     * would do, a field name used as a string value). */
    void (*warn)(void *ctx, size_t pos, const char *message);
};

/* The compiled condition, or NULL after reporting every error found. */
struct cnode *filter_parse(const struct filter_env *env, const char *text, size_t len);

/* Whether text parses (libsinsp's grammar alone: no field, macro or value
 * is looked up); 0, or -1 with the message and its byte offset. */
int filter_syntax_check(const char *text, size_t len, char *err, size_t errlen, size_t *err_pos);

/* Falco's unescaping of a quoted token tok[0..n) (both quotes included)
 * into out (at least n bytes): \b \f \n \r \t \\ \/ \xHH, the token's own
 * quote, and "\ " giving a backslash (libsinsp's legacy). 0, or -1 with a
 * message and the offset in tok of the bad escape. */
int filter_unescape(const char *tok, size_t n, char *out, size_t *outlen, size_t *bad, char *err, size_t errlen);

/* Builds `field op (values)` directly (exceptions); same checks as parsing.
 * pos is where to report a problem. */
struct cnode *filter_make_check(const struct filter_env *env, const char *field, size_t flen, enum filter_op op,
                                const char *const *values, const uint32_t *lens, size_t nvalues, size_t pos);
/* The same with a modifier (`startswith oneof` in an exception's comps):
 * the values are the list the modifier ranges over. */
struct cnode *filter_make_check_mod(const struct filter_env *env, const char *field, size_t flen, enum filter_op op,
                                    enum filter_mod mod, const char *const *values, const uint32_t *lens,
                                    size_t nvalues, size_t pos);
/* AND / OR / NOT over nodes (NULL kids make the result NULL). */
struct cnode *filter_make_node(struct arena *a, enum cnode_kind kind, struct cnode **kids, uint32_t n);
/* The operator named s (exceptions' comps), or -1. */
int filter_op_parse(const char *s);
/* An exceptions' comp as Falco reads one: an operator, or a string operator
 * and a modifier after one space ("startswith oneof"). 0, or -1 (not one). */
int filter_cmp_parse(const char *s, enum filter_op *op, enum filter_mod *mod);

/* Where a node may be true, or false: the event types, and the directions
 * (FILTER_DIR_* bits). A rule is indexed by the types it may be true for,
 * and goes into the index of syscall enter points only if it may be true
 * for one. */
#define FILTER_DIR_ENTER 1u   /* evt.dir = > */
#define FILTER_DIR_EXIT 2u    /* evt.dir = < */
#define FILTER_DIR_ALL (FILTER_DIR_ENTER | FILTER_DIR_EXIT)
struct filter_reach {
    struct evtype_set types;
    unsigned dirs;
};
void filter_reach(const struct cnode *n, struct filter_reach *may_true, struct filter_reach *may_false);

bool filter_eval(struct evctx *x, const struct cnode *n);

/* Whether n can be true on an event of type t and direction dir ('<' or
 * '>') sent by point `point` (gvisor.point's value), every other field
 * unknown: false only when evt.type, evt.dir and gvisor.point alone rule
 * the event out. What a rule needs from runsc (rules_needs) asks it. */
bool filter_may_match(const struct cnode *n, unsigned t, char dir, const char *point);

/* Calls fn for every field n reads, through its macros and transformers. */
void filter_fields(const struct cnode *n, void (*fn)(void *ctx, const struct fieldref *f), void *ctx);

#endif
