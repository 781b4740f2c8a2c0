/* needs.c - what a rule needs from runsc (rules.h): the points whose events
 * it can match, the points that keep the process table for the proc.*
 * fields it reads, and the optional and context fields of each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fields_class.h"
#include "filter.h"
#include "ruleset.h"
#include "rules.h"

static const char *const optional_names[RULES_OPT_COUNT] = {"fd_path", "envv", "env", "binary_info"};
static const char *const context_names[RULES_CTX_COUNT] = {
    "time", "thread_id", "task_start_time", "group_id", "thread_group_start_time", "container_id", "credentials",
    "cwd", "process_name"};

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

/* The syscalls runsc 2022-12 has schematized points for (`runsc trace
 * metadata`), with their message type and optional fields. Every other
 * syscall has only its raw point, syscall/sysno/N. */
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
};

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
    {"sentry/execve", 3, SYS_EXECVE, '<', RULES_OPT_BINARY_INFO},
    {"sentry/exit_notify_parent", 4, EVTYPE_EXIT_NOTIFY_PARENT, '>', 0},
    {"sentry/task_exit", 5, EVTYPE_PROCEXIT, '>', 0},
    {"sentry/mmap", 35, EVTYPE_SENTRY_MMAP, '<', 0},
};

#define NTYPED (sizeof(typed) / sizeof(typed[0]))
#define NSENTRY (sizeof(sentry_points) / sizeof(sentry_points[0]))

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

/* ---- the list of points ---- */

int rules_needs_add(struct rules_needs *n, const char *point, unsigned optional, unsigned context, unsigned why)
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

/* What the fields a rule reads need (their definitions say: fields_class.h). */
struct reads {
    unsigned context, optional, process;
    const struct fieldref *args[MAX_ARGS];  /* evt.arg.NAME, evt.arg[N] */
    size_t nargs;
};

static void note_field(void *ctx, const struct fieldref *f)
{
    struct reads *r = ctx;
    r->context |= f->def->context;
    r->optional |= f->def->optional;
    r->process |= f->def->process;
    if (f->id == F_EVT_ARG && r->nargs < MAX_ARGS)
        r->args[r->nargs++] = f;
}

/* Context fields a rule reads at the points it matches: the alert's time
 * and container always. */
static unsigned context_read(const struct reads *r)
{
    return RULES_CTX_TIME | RULES_CTX_CONTAINER_ID | r->context;
}

/* Optional fields a rule reads at a point sending message type msg. */
static unsigned optional_read(const struct reads *r, uint16_t msg, unsigned offered)
{
    unsigned o = r->optional;
    for (size_t i = 0; i < r->nargs; i++) {
        const ProtobufCFieldDescriptor *d = msg <= DECODE_TYPE_MAX ? r->args[i]->arg[msg] : NULL;
        if (!d)
            continue;
        if (strncmp(d->name, "binary_", 7) == 0)
            o |= RULES_OPT_BINARY_INFO;
        else
            o |= rules_optional_parse(d->name);
    }
    return o & offered;
}

/* ---- the points a rule matches ---- */

struct adder {
    const struct rule *rule;
    const struct reads *reads;
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
    unsigned ctx = context_read(a->reads);
    int rc = rules_needs_add(a->out, point, optional_read(a->reads, msg, offered), ctx, RULES_WHY_MATCHES);
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

static void consider_syscall(struct adder *a, unsigned t)
{
    const char *name = evtype_name(t);
    char point[RULES_POINT_MAX];
    int k = name ? typed_index(name, strlen(name)) : -1;
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
    }
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
    int rc = 0;
    if (image || parents) {
        /* the first process; each child, in its parent's context; each
         * exec; each exit (a reused id is a new process) */
        static const char *const track[] = {"container/start", "sentry/clone", "sentry/execve", "sentry/task_exit"};
        for (size_t i = 0; i < sizeof(track) / sizeof(track[0]); i++)
            rc |= rules_needs_add(a->out, track[i], 0, ctx, RULES_WHY_PROCESS);
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
    const struct rule *r = &rs->rules[i];
    if (!r->enabled || r->all_types)
        return 0;
    struct reads reads = {0};
    filter_fields(r->cond, note_field, &reads);
    for (size_t k = 0; k < r->output.nparts; k++)
        if (r->output.parts[k].has_field)
            note_field(&reads, &r->output.parts[k].field);
    struct adder a = {.rule = r, .reads = &reads, .out = out};
    for (unsigned t = 0; t < EVTYPE_SYSCALL_LIMIT; t++)
        if (evtype_set_has(&r->types, t))
            consider_syscall(&a, t);
    for (size_t k = 0; k < NSENTRY; k++)
        if (evtype_set_has(&r->types, sentry_points[k].type))
            consider(&a, sentry_points[k].name, sentry_points[k].type, sentry_points[k].dir, sentry_points[k].msg,
                     sentry_points[k].optional);
    if (a.err || add_process_points(&a) != 0)
        return -1;
    return 0;
}
