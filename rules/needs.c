/* needs.c - what a rule needs from runsc (rules.h): the points whose events
 * it can match, the points that keep the process table for the proc.*
 * fields it reads, and the optional and context fields of each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "availability.h"
#include "filter.h"
#include "ruleset.h"
#include "rules.h"
#include "runsc_target.h"
#include "sequence.h"

static const char *const optional_names[RULES_OPT_COUNT] = {
    "fd_path", "envv", "env", "binary_info", "binary_sha256", "binary_sha1", "fd_info", "pipe_proc_info"};
static const char *const context_names[RULES_CTX_COUNT] = {
    "time", "thread_id", "task_start_time", "group_id", "thread_group_start_time", "container_id", "credentials",
    "cwd", "process_name", "parent_thread_group_id", "is_exec_session"};

const char *rules_optional_name(unsigned i) { return i < RULES_OPT_COUNT ? optional_names[i] : NULL; }
const char *rules_context_name(unsigned i) { return i < RULES_CTX_COUNT ? context_names[i] : NULL; }

static unsigned bit_of(const char *const *names, unsigned n, const char *name)
{
    for (unsigned i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return 1u << i;
    return 0;
}

unsigned rules_optional_parse(const char *name) { return bit_of(optional_names, RULES_OPT_COUNT, name); }
unsigned rules_context_parse(const char *name) { return bit_of(context_names, RULES_CTX_COUNT, name); }

/* The syscalls runsc has schematized points for (`runsc trace metadata`),
 * with their message type and optional fields: runsc 2022-12's, then the
 * three of 2026 (their release says since when). Every other syscall has
 * only its raw point, syscall/sysno/N, and so have these three on a runsc
 * without their point. */
static const struct {
    const char *name;
    uint16_t msg;
    unsigned optional;
} typed[] = {
    {"accept", 25, RULES_OPT_FD_PATH}, {"accept4", 25, RULES_OPT_FD_PATH}, {"bind", 24, RULES_OPT_FD_PATH},
    {"chdir", 13, 0}, {"chroot", 21, 0}, {"clone", 23, 0}, {"close", 8, RULES_OPT_FD_PATH},
    {"connect", 10, RULES_OPT_FD_PATH}, {"creat", 7, RULES_OPT_FD_PATH}, {"dup", 19, RULES_OPT_FD_PATH},
    {"dup2", 19, RULES_OPT_FD_PATH}, {"dup3", 19, RULES_OPT_FD_PATH}, {"eventfd", 22, 0}, {"eventfd2", 22, 0},
    {"execve", 11, RULES_OPT_ENVV}, {"execveat", 11, RULES_OPT_FD_PATH | RULES_OPT_ENVV},
    {"fchdir", 13, RULES_OPT_FD_PATH}, {"fcntl", 18, RULES_OPT_FD_PATH}, {"fork", 29, 0},
    {"inotify_add_watch", 31, RULES_OPT_FD_PATH}, {"inotify_init", 30, 0}, {"inotify_init1", 30, 0},
    {"inotify_rm_watch", 32, RULES_OPT_FD_PATH}, {"open", 7, 0}, {"openat", 7, RULES_OPT_FD_PATH},
    {"pipe", 17, 0}, {"pipe2", 17, 0}, {"pread64", 9, RULES_OPT_FD_PATH}, {"preadv", 9, RULES_OPT_FD_PATH},
    {"preadv2", 9, RULES_OPT_FD_PATH}, {"prlimit64", 16, 0}, {"pwrite64", 34, RULES_OPT_FD_PATH},
    {"pwritev", 34, RULES_OPT_FD_PATH}, {"pwritev2", 34, RULES_OPT_FD_PATH}, {"read", 9, RULES_OPT_FD_PATH},
    {"readv", 9, RULES_OPT_FD_PATH}, {"setgid", 14, 0}, {"setresgid", 15, 0}, {"setresuid", 15, 0},
    {"setsid", 14, 0}, {"setuid", 14, 0}, {"signalfd", 20, RULES_OPT_FD_PATH}, {"signalfd4", 20, RULES_OPT_FD_PATH},
    {"socket", 12, 0}, {"socketpair", 33, 0}, {"timerfd_create", 26, 0}, {"timerfd_gettime", 28, RULES_OPT_FD_PATH},
    {"timerfd_settime", 27, RULES_OPT_FD_PATH}, {"vfork", 29, 0}, {"write", 34, RULES_OPT_FD_PATH},
    {"writev", 34, RULES_OPT_FD_PATH},
    /* 2026 (typed_release) */
    {"mmap", 36, RULES_OPT_FD_PATH}, {"listen", 37, RULES_OPT_FD_PATH}, {"ptrace", 38, 0},
};

/* The release that brought typed[k]'s point. */
static unsigned typed_release(size_t k)
{
    switch (typed[k].msg) {
    case 36: return RULES_RUNSC_20260721;
    case 37:
    case 38: return RULES_RUNSC_20260727;
    default: return RULES_RUNSC_2022_12;
    }
}

/* The points that are not syscalls, with the type and direction they give. */
static const struct {
    const char *name;
    uint16_t msg;
    unsigned type;
    char dir;
    unsigned optional;
} sentry_points[] = {
    {"container/start", 1, EVTYPE_CONTAINER, '>', RULES_OPT_ENV},
    {"sentry/clone", 2, SYS_CLONE, '<', 0},
    {"sentry/execve", 3, SYS_EXECVE, '<', RULES_OPT_BINARY_INFO | RULES_OPT_BINARY_SHA256 | RULES_OPT_BINARY_SHA1 |
                                               RULES_OPT_FD_INFO | RULES_OPT_PIPE_PROC_INFO},
    {"sentry/exit_notify_parent", 4, EVTYPE_EXIT_NOTIFY_PARENT, '>', 0},
    {"sentry/task_exit", 5, EVTYPE_PROCEXIT, '>', 0},
    {"sentry/mmap", 35, EVTYPE_SENTRY_MMAP, '<', 0},
};

#define NTYPED (sizeof(typed) / sizeof(typed[0]))
#define NSENTRY (sizeof(sentry_points) / sizeof(sentry_points[0]))

bool rules_typed_syscall(size_t i, const char **name, unsigned *optional, unsigned *release)
{
    if (i >= NTYPED)
        return false;
    *name = typed[i].name;
    *optional = typed[i].optional;
    *release = typed_release(i);
    return true;
}

static int typed_index(const char *syscall, size_t len)
{
    for (size_t i = 0; i < NTYPED; i++)
        if (strlen(typed[i].name) == len && memcmp(typed[i].name, syscall, len) == 0)
            return (int)i;
    return -1;
}

unsigned rules_point_optional(const char *point)
{
    for (size_t i = 0; i < NSENTRY; i++)
        if (strcmp(sentry_points[i].name, point) == 0)
            return sentry_points[i].optional;
    static const char prefix[] = "syscall/";
    const char *slash = strrchr(point, '/');
    if (strncmp(point, prefix, sizeof(prefix) - 1) != 0 || !slash || slash < point + sizeof(prefix) - 1 ||
        (strcmp(slash, "/enter") != 0 && strcmp(slash, "/exit") != 0))
        return 0;
    int k = typed_index(point + sizeof(prefix) - 1, (size_t)(slash - point) - (sizeof(prefix) - 1));
    return k < 0 ? 0 : typed[k].optional;
}

unsigned runsc_release_of_point(const char *point)
{
    if (strcmp(point, "sentry/mmap") == 0)
        return RULES_RUNSC_20260714;
    for (size_t i = 0; i < NSENTRY; i++)
        if (strcmp(sentry_points[i].name, point) == 0)
            return RULES_RUNSC_2022_12;
    unsigned n;
    char way[8];
    if (sscanf(point, "syscall/sysno/%u/%7s", &n, way) == 2)
        return n <= 441 ? RULES_RUNSC_2022_12 : RULES_RUNSC_RELEASE_COUNT;
    static const char prefix[] = "syscall/";
    const char *slash = strrchr(point, '/');
    if (strncmp(point, prefix, sizeof(prefix) - 1) == 0 && slash && slash > point + sizeof(prefix) - 1) {
        int k = typed_index(point + sizeof(prefix) - 1, (size_t)(slash - point) - (sizeof(prefix) - 1));
        if (k >= 0)
            return typed_release((size_t)k);
    }
    return RULES_RUNSC_RELEASE_COUNT;
}

/* ---- the list of points ---- */

int rules_needs_add(struct rules_needs *n, const char *point, unsigned optional, unsigned context, unsigned why)
{
    return rules_needs_add_since(n, point, optional, context, why, 0, NULL);
}

int rules_needs_add_since(struct rules_needs *n, const char *point, unsigned optional, unsigned context, unsigned why,
                          unsigned release, const char *field)
{
    if (strlen(point) >= RULES_POINT_MAX)
        return -1;
    size_t lo = 0, hi = n->count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(n->items[mid].point, point);
        if (c == 0) {
            n->items[mid].optional |= optional;
            n->items[mid].context |= context;
            n->items[mid].why |= why;
            if (release > n->items[mid].release) {
                n->items[mid].release = release;
                n->items[mid].release_field = field;
            }
            return 0;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (n->count == n->cap) {
        size_t cap = n->cap ? n->cap * 2 : 16;
        struct rules_need *items = realloc(n->items, cap * sizeof(*items));
        if (!items)
            return -1;
        n->items = items;
        n->cap = cap;
    }
    memmove(n->items + lo + 1, n->items + lo, (n->count - lo) * sizeof(*n->items));
    struct rules_need *it = &n->items[lo];
    memset(it, 0, sizeof(*it));
    snprintf(it->point, sizeof(it->point), "%s", point);
    it->optional = optional;
    it->context = context;
    it->why = why;
    it->release = release;
    it->release_field = release ? field : NULL;
    n->count++;
    return 0;
}

const struct rules_need *rules_needs_find(const struct rules_needs *n, const char *point)
{
    for (size_t i = 0; i < n->count; i++)
        if (strcmp(n->items[i].point, point) == 0)
            return &n->items[i];
    return NULL;
}

void rules_needs_free(struct rules_needs *n)
{
    free(n->items);
    memset(n, 0, sizeof(*n));
}

/* ---- what a rule reads ---- */

#define MAX_ARGS 32   /* evt.arg fields told apart per rule; more only repeat what these need */

/* What the fields a rule reads need (fields_needs, filter.h). */
struct reads {
    unsigned context, optional, process;
    unsigned release;                       /* the newest runsc release a field needs */
    const char *release_field;
    const struct fieldref *args[MAX_ARGS];  /* evt.arg.NAME, evt.arg[N] */
    size_t nargs;
};

static void note_field(void *ctx, const struct fieldref *f)
{
    struct reads *r = ctx;
    struct field_needs need;
    fields_needs(f, &need);
    r->context |= need.context;
    r->optional |= need.optional;
    r->process |= need.process;
    if (need.release > r->release) {
        r->release = need.release;
        r->release_field = fields_name(f);
    }
    if (f->id == F_EVT_ARG && r->nargs < MAX_ARGS)
        r->args[r->nargs++] = f;
}

/* Context fields a rule reads at the points it matches: the alert's time
 * and container always; the parent's id where runsc sends it, for the
 * parent fields (best effort: the process table has it too). */
static unsigned context_read(const struct reads *r)
{
    unsigned ctx = RULES_CTX_TIME | RULES_CTX_CONTAINER_ID | r->context;
    if (r->process & FIELD_PROC_PARENTS)
        ctx |= RULES_CTX_PARENT_THREAD_GROUP_ID;
    return ctx;
}

/* The optional fields evt.arg.NAME of a message field needs. */
static unsigned optional_of_arg(const char *name)
{
    static const struct {
        const char *name;
        unsigned bits;
    } args[] = {
        /* runsc 2022-12 sends the hash with binary_info, later ones alone */
        {"binary_sha256", RULES_OPT_BINARY_INFO | RULES_OPT_BINARY_SHA256}, {"binary_sha1", RULES_OPT_BINARY_SHA1},
        {"stdin", RULES_OPT_FD_INFO}, {"stdout", RULES_OPT_FD_INFO}, {"stderr", RULES_OPT_FD_INFO},
        {"pipe_input_proc", RULES_OPT_PIPE_PROC_INFO}, {"pipe_output_proc", RULES_OPT_PIPE_PROC_INFO},
    };
    for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++)
        if (strcmp(args[i].name, name) == 0)
            return args[i].bits;
    if (strncmp(name, "binary_", 7) == 0)
        return RULES_OPT_BINARY_INFO;
    return rules_optional_parse(name);
}

/* Falco's arguments at a point: the process they name, relative paths. */
static unsigned falco_args_context(const struct reads *r, uint16_t msg, unsigned t)
{
    for (size_t i = 0; i < r->nargs; i++) {
        const struct fieldref *f = r->args[i];
        int list = f->falco ? fields_args_list(msg, t) : -1;
        if (list >= 0 && f->falco[list])
            return FIELD_CTX_PROCESS | RULES_CTX_CWD;
    }
    return 0;
}

/* Optional fields a rule reads at a point sending message type msg for
 * events of type t. */
static unsigned optional_read(const struct reads *r, uint16_t msg, unsigned t, unsigned offered)
{
    unsigned o = r->optional;
    for (size_t i = 0; i < r->nargs; i++) {
        const struct fieldref *f = r->args[i];
        int list = f->falco ? fields_args_list(msg, t) : -1;
        if (list >= 0 && f->falco[list]) {
            o |= fields_args_optional(list, f->falco[list] - 1);
            continue;
        }
        const ProtobufCFieldDescriptor *d = msg <= DECODE_TYPE_MAX ? f->arg[msg] : NULL;
        if (!d)
            continue;
        o |= optional_of_arg(d->name);
    }
    return o & offered;
}

/* ---- the points a rule matches ---- */

struct adder {
    const struct rule *rule;
    const struct reads *reads;
    const struct runsc_target *target;   /* NULL: runsc 2022-12 */
    struct rules_needs *out;
    bool execs;           /* the rule matches execs: proc.name there needs the path given to execve */
    int err;
};

/* Adds point if the rule can match its events. */
static void consider(struct adder *a, const char *point, unsigned type, char dir, uint16_t msg, unsigned offered)
{
    if (!filter_may_match(a->rule->cond, type, dir, point))
        return;
    if (type == SYS_EXECVE || type == SYS_EXECVEAT)
        a->execs = true;
    unsigned ctx = context_read(a->reads) | falco_args_context(a->reads, msg, type);
    int rc = rules_needs_add_since(a->out, point, optional_read(a->reads, msg, type, offered), ctx, RULES_WHY_MATCHES,
                                   a->reads->release, a->reads->release_field);
    if (msg == 6 && dir == '<') {
        /* runsc 2022-12 gives a raw exit the context fields of its enter
         * point, none when that is not enabled */
        char enter[RULES_POINT_MAX];
        snprintf(enter, sizeof(enter), "syscall/sysno/%u/enter", type);
        rc |= rules_needs_add(a->out, enter, 0, ctx, RULES_WHY_RAW_CONTEXT);
    }
    if (rc != 0)
        a->err = -1;
}

/* Whether the target has the schematized point of typed[k] (runsc
 * 2022-12: those of its release). */
static bool has_typed(const struct adder *a, int k)
{
    if (!a->target)
        return typed_release((size_t)k) == RULES_RUNSC_2022_12;
    char point[RULES_POINT_MAX];
    snprintf(point, sizeof(point), "syscall/%s/exit", typed[k].name);
    return runsc_target_point(a->target, point) != NULL;
}

/* Whether the rule reads a Falco argument of events of type t that only
 * the schematized message msg carries, and nothing the raw message carries
 * (a rule that reads the raw arguments too has them as its alternative).
 * Without that point the rule never sees it (upstream's PTRACE rules:
 * evt.arg.request, which runsc 2022-12's raw ptrace point lacks). */
static bool typed_only_arg(const struct reads *r, uint16_t msg, unsigned t)
{
    bool only = false;
    int schematized = fields_args_list(msg, t), raw = fields_args_list(6, t);
    for (size_t i = 0; i < r->nargs; i++) {
        const struct fieldref *f = r->args[i];
        bool in_raw = f->arg[6] || (raw >= 0 && f->falco && f->falco[raw] &&
                                    fields_args_reported(raw, f->falco[raw] - 1));
        if (in_raw)
            return false;
        if ((schematized >= 0 && f->falco && f->falco[schematized] &&
             fields_args_reported(schematized, f->falco[schematized] - 1)) ||
            (msg <= DECODE_TYPE_MAX && f->arg[msg]))
            only = true;
    }
    return only;
}

static void consider_syscall(struct adder *a, unsigned t)
{
    const char *name = evtype_name(t);
    char point[RULES_POINT_MAX];
    int k = name ? typed_index(name, strlen(name)) : -1;
    /* Falco's named argument only the newer point sends: its release */
    bool newer_arg = k >= 0 && !has_typed(a, k) && typed_only_arg(a->reads, typed[k].msg, t);
    unsigned newer_release = newer_arg ? typed_release((size_t)k) : 0;
    if (k >= 0 && !has_typed(a, k))
        k = -1;   /* its raw point, as on runsc 2022-12 */
    for (int enter = 0; enter < 2; enter++) {
        if (enter && !a->rule->sees_enter)
            break;
        const char *way = enter ? "enter" : "exit";
        if (k >= 0)
            snprintf(point, sizeof(point), "syscall/%s/%s", name, way);
        else
            snprintf(point, sizeof(point), "syscall/sysno/%u/%s", t, way);
        /* The process-level view stands for an execve or clone exit; the
         * syscall's own exit only where gvisor.point names it. */
        bool has_sentry_view = !enter && (t == SYS_EXECVE || t == SYS_CLONE);
        if (!has_sentry_view || a->rule->names_point)
            consider(a, point, t, enter ? '>' : '<', k >= 0 ? typed[k].msg : 6, k >= 0 ? typed[k].optional : 0);
        if (newer_arg && rules_needs_find(a->out, point) &&
            rules_needs_add_since(a->out, point, 0, 0, RULES_WHY_MATCHES, newer_release,
                                  "Falco's arguments by name, which its raw point lacks") != 0)
            a->err = -1;
    }
}

/* The optional fields of sentry/execve the process table keeps for what
 * the rule reads of a process's image (FIELD_PROC_*, filter.h). */
static unsigned exec_optional(unsigned process)
{
    return (process & FIELD_PROC_BINARY ? RULES_OPT_BINARY_INFO : 0) |
           (process & FIELD_PROC_STDIO ? RULES_OPT_FD_INFO : 0) |
           (process & FIELD_PROC_PIPES ? RULES_OPT_PIPE_PROC_INFO : 0);
}

/* The points that keep the process table for what the rule reads of it. */
static int add_process_points(const struct adder *a)
{
    const struct reads *r = a->reads;
    unsigned ctx = FIELD_CTX_PROCESS | RULES_CTX_THREAD_ID | RULES_CTX_PROCESS_NAME;
    if (r->process & FIELD_PROC_CWD)
        ctx |= RULES_CTX_CWD;
    bool image = r->process & FIELD_PROC_IMAGE;
    bool parents = r->process & FIELD_PROC_PARENTS;
    bool track_all = image || parents || (r->process & (FIELD_PROC_SESSION | FIELD_PROC_ENV | FIELD_PROC_SOCKETS));
    unsigned exec_opt = exec_optional(r->process);
    if (parents)
        ctx |= RULES_CTX_PARENT_THREAD_GROUP_ID;
    int rc = 0;
    if (track_all || exec_opt) {
        /* the first process; each child, in its parent's context; each
         * exec; each exit (a reused id is a new process). Facts of an
         * exec pass to the children (fork copies them). The environment
         * comes with sentry/execve always, with container/start when asked. */
        static const char *const track[] = {"container/start", "sentry/clone", "sentry/execve", "sentry/task_exit"};
        for (size_t i = 0; i < sizeof(track) / sizeof(track[0]); i++) {
            bool exec = strcmp(track[i], "sentry/execve") == 0;
            bool start = i == 0;
            /* is_exe_writable compares the binary's owner with the exec's credentials */
            unsigned c = ctx | (exec && (r->process & FIELD_PROC_BINARY) ? RULES_CTX_CREDENTIALS : 0);
            unsigned opt = exec ? exec_opt : start && (r->process & FIELD_PROC_ENV) ? RULES_OPT_ENV : 0;
            rc |= rules_needs_add_since(a->out, track[i], opt, c, RULES_WHY_PROCESS, exec ? r->release : 0,
                                        exec ? r->release_field : NULL);
        }
    }
    if (r->process & FIELD_PROC_SESSION) {
        /* setsid is schematized; setpgid is a raw point, whose context
         * comes only with its enter point (runsc 2022-12) */
        rc |= rules_needs_add(a->out, "syscall/setsid/exit", 0, FIELD_CTX_PROCESS, RULES_WHY_PROCESS);
        rc |= rules_needs_add(a->out, "syscall/sysno/109/exit", 0, FIELD_CTX_PROCESS, RULES_WHY_PROCESS);
        rc |= rules_needs_add(a->out, "syscall/sysno/109/enter", 0, FIELD_CTX_PROCESS, RULES_WHY_RAW_CONTEXT);
    }
    if (r->process & FIELD_PROC_SOCKETS) {
        static const char *const sockets[] = {"syscall/socket/exit", "syscall/socketpair/exit",
                                              "syscall/accept/exit", "syscall/accept4/exit", "syscall/connect/exit",
                                              "syscall/bind/exit", "syscall/dup/exit", "syscall/dup2/exit",
                                              "syscall/dup3/exit", "syscall/close/exit"};
        for (size_t i = 0; i < sizeof(sockets) / sizeof(sockets[0]); i++)
            rc |= rules_needs_add(a->out, sockets[i], 0, FIELD_CTX_PROCESS, RULES_WHY_PROCESS);
    }
    /* comm after an exec is the basename of the path given to execve
     * (python3, not python3.11): runsc 2022-12 sends it only at the
     * syscall's enter point */
    if (a->execs && (r->process & FIELD_PROC_COMM)) {
        rc |= rules_needs_add(a->out, "syscall/execve/enter", 0, FIELD_CTX_PROCESS, RULES_WHY_PROCESS);
        rc |= rules_needs_add(a->out, "syscall/execveat/enter", 0, FIELD_CTX_PROCESS, RULES_WHY_PROCESS);
    }
    return rc ? -1 : 0;
}

int rule_set_rule_needs(const struct rule_set *rs, size_t i, struct rules_needs *out)
{
    return rule_set_rule_needs_on(rs, i, NULL, RULES_NEED_ALL, out);
}

static int rule_needs(const struct rule *r, const struct runsc_target *target, unsigned parts,
                      struct rules_needs *out);

int rule_set_rule_needs_on(const struct rule_set *rs, size_t i, const struct runsc_target *target, unsigned parts,
                           struct rules_needs *out)
{
    return rule_needs(&rs->rules[i], target, parts, out);
}

/* A sequence's steps and unless are rules to runsc: each reads its
 * condition, and beside it the by fields, the fields compared with or kept
 * for later steps, and (the last step) the output's. */
int rule_set_sequence_needs_on(const struct rule_set *rs, size_t i, const struct runsc_target *target,
                               unsigned parts, struct rules_needs *out)
{
    const struct sequence *s = &rs->seq->v[i];
    (void)parts;   /* what a step reads beside its condition decides whether it continues a chain */
    for (uint16_t k = 0; k < s->nsteps; k++)
        if (rule_needs(&s->steps[k].c.rule, target, RULES_NEED_ALL, out) != 0)
            return -1;
    return s->has_unless ? rule_needs(&s->unless.rule, target, RULES_NEED_ALL, out) : 0;
}

static int rule_needs(const struct rule *r, const struct runsc_target *target, unsigned parts,
                      struct rules_needs *out)
{
    if (!r->enabled || r->all_types)
        return 0;
    struct reads reads = {0};
    filter_fields(r->cond, note_field, &reads);
    for (size_t k = 0; k < r->output.nparts && (parts & RULES_NEED_OUTPUT); k++)
        if (r->output.parts[k].has_field)
            note_field(&reads, &r->output.parts[k].field);
    struct adder a = {.rule = r, .reads = &reads, .target = target, .out = out};
    for (unsigned t = 0; t < EVTYPE_SYSCALL_LIMIT; t++)
        if (evtype_set_has(&r->types, t))
            consider_syscall(&a, t);
    for (size_t k = 0; k < NSENTRY; k++)
        if (evtype_set_has(&r->types, sentry_points[k].type))
            consider(&a, sentry_points[k].name, sentry_points[k].type, sentry_points[k].dir, sentry_points[k].msg,
                     sentry_points[k].optional);
    if (a.err || add_process_points(&a) != 0)
        return -1;
    if (!target)   /* runsc 2022-12: the fields it has (it refuses others) */
        for (size_t k = 0; k < out->count; k++) {
            out->items[k].optional &= RULES_OPT_2022;
            out->items[k].context &= RULES_CTX_2022;
        }
    return 0;
}

/* ---- for availability.c and the engine ---- */

size_t needs_type_messages(unsigned type, uint16_t *out, size_t max)
{
    size_t n = 0;
#define PUT(m)                  \
    do {                        \
        if (n < max)            \
            out[n++] = (m);     \
    } while (0)
    for (size_t k = 0; k < NSENTRY; k++)
        if (sentry_points[k].type == type)
            PUT(sentry_points[k].msg);
    const char *name = type < EVTYPE_SYSCALL_LIMIT ? evtype_name(type) : NULL;
    int t = name ? typed_index(name, strlen(name)) : -1;
    if (t >= 0)
        PUT(typed[t].msg);
    /* a syscall without a point of its own, or one whose point came after
     * runsc 2022-12 (which sends it as the raw point) */
    if ((t < 0 || typed_release((size_t)t) != RULES_RUNSC_2022_12) && type <= EVTYPE_UNKNOWN)
        PUT(6);
#undef PUT
    return n;
}

unsigned rule_set_process_keep(const struct rule_set *rs)
{
    unsigned process = 0;
    for (size_t i = 0; rs && i < rs->nrules; i++) {
        const struct rule *r = &rs->rules[i];
        if (!r->enabled || !r->cond)
            continue;
        struct reads reads = {0};
        filter_fields(r->cond, note_field, &reads);
        for (size_t k = 0; k < r->output.nparts; k++)
            if (r->output.parts[k].has_field)
                note_field(&reads, &r->output.parts[k].field);
        process |= reads.process;
    }
    for (size_t i = 0; rs && rs->seq && i < rs->seq->n; i++) {
        const struct sequence *sq = &rs->seq->v[i];
        for (uint16_t k = 0; sq->enabled && k <= sq->nsteps; k++) {
            const struct rule *r = k < sq->nsteps ? &sq->steps[k].c.rule : sq->has_unless ? &sq->unless.rule : NULL;
            if (!r || !r->cond)
                continue;
            struct reads reads = {0};
            filter_fields(r->cond, note_field, &reads);
            for (size_t j = 0; j < r->output.nparts; j++)
                note_field(&reads, &r->output.parts[j].field);
            process |= reads.process;
        }
    }
    return (process & FIELD_PROC_ENV ? PROC_KEEP_ENV : 0) | (process & FIELD_PROC_SOCKETS ? PROC_KEEP_SOCKETS : 0);
}
