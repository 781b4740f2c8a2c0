#include "filter.h"

#include <stdio.h>
#include <string.h>

static const char *const extra_names[EVTYPE_COUNT - EVTYPE_UNKNOWN] = {
    [EVTYPE_UNKNOWN - EVTYPE_UNKNOWN] = "unknown",
    [EVTYPE_PROCEXIT - EVTYPE_UNKNOWN] = "procexit",
    [EVTYPE_CONTAINER - EVTYPE_UNKNOWN] = "container",
    [EVTYPE_EXIT_NOTIFY_PARENT - EVTYPE_UNKNOWN] = "exit_notify_parent",
    [EVTYPE_SENTRY_MMAP - EVTYPE_UNKNOWN] = "sentry_mmap",
};

/* Falco's names for syscalls whose kernel name carries the ABI's suffix. */
static const struct {
    const char *falco;
    unsigned sysno;
} aliases[] = {{"pread", 17}, {"pwrite", 18}, {"prlimit", 302}};

const char *evtype_name(unsigned t)
{
    if (t < EVTYPE_SYSCALL_LIMIT)
        return evtype_syscall_names[t];
    if (t < EVTYPE_COUNT)
        return extra_names[t - EVTYPE_UNKNOWN];
    return NULL;
}

int evtype_lookup(const char *name, size_t len)
{
    for (unsigned t = 0; t < EVTYPE_COUNT; t++) {
        const char *n = evtype_name(t);
        if (n && strlen(n) == len && memcmp(n, name, len) == 0)
            return (int)t;
    }
    for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
        if (strlen(aliases[i].falco) == len && memcmp(aliases[i].falco, name, len) == 0)
            return (int)aliases[i].sysno;
    return -1;
}

void evtype_set_all(struct evtype_set *s)
{
    memset(s, 0, sizeof(*s));
    for (unsigned t = 0; t < EVTYPE_COUNT; t++)
        if (evtype_name(t))
            evtype_set_add(s, t);
}

bool evtype_set_is_empty(const struct evtype_set *s)
{
    for (int i = 0; i < EVTYPE_WORDS; i++)
        if (s->w[i])
            return false;
    return true;
}

bool evtype_set_is_all(const struct evtype_set *s)
{
    struct evtype_set all;
    evtype_set_all(&all);
    return memcmp(&all, s, sizeof(all)) == 0;
}

void evtype_set_and(struct evtype_set *s, const struct evtype_set *o)
{
    for (int i = 0; i < EVTYPE_WORDS; i++)
        s->w[i] &= o->w[i];
}

void evtype_set_or(struct evtype_set *s, const struct evtype_set *o)
{
    for (int i = 0; i < EVTYPE_WORDS; i++)
        s->w[i] |= o->w[i];
}

void evtype_set_invert(struct evtype_set *s)
{
    struct evtype_set all;
    evtype_set_all(&all);
    for (int i = 0; i < EVTYPE_WORDS; i++)
        s->w[i] = ~s->w[i] & all.w[i];
}

static uint16_t syscall_type(uint64_t sysno)
{
    return sysno < EVTYPE_SYSCALL_LIMIT && evtype_syscall_names[sysno] ? (uint16_t)sysno : EVTYPE_UNKNOWN;
}

bool evtype_classify(const struct event *ev, struct evclass *out)
{
    if (ev->status != DECODE_OK || !ev->msg)
        return false;
    *out = (struct evclass){.dir = '<'};
    switch (ev->header.message_type) {
    case 1: out->type = EVTYPE_CONTAINER; out->dir = '>'; return true;
    /* the process-level view of a successful clone or execve: its exit */
    case 2: out->type = SYS_CLONE; out->has_result = true; return true;
    case 3: out->type = SYS_EXECVE; out->has_result = true; return true;
    case 4: out->type = EVTYPE_EXIT_NOTIFY_PARENT; out->dir = '>'; return true;
    case 5: out->type = EVTYPE_PROCEXIT; out->dir = '>'; return true;
    case 35: out->type = EVTYPE_SENTRY_MMAP; return true;
    default:
        break;
    }
    if (!ev->has_sysno)
        return false;
    out->type = syscall_type(ev->sysno);
    out->dir = ev->is_exit ? '<' : '>';
    out->syscall_enter = !ev->is_exit;
    out->has_result = ev->is_exit;
    return true;
}

size_t evtype_point(const struct event *ev, const struct evclass *c, char *buf)
{
    static const char *const sentry[] = {
        [1] = "container/start", [2] = "sentry/clone", [3] = "sentry/execve",
        [4] = "sentry/exit_notify_parent", [5] = "sentry/task_exit",
    };
    uint16_t t = ev->header.message_type;
    int n;
    if (t < sizeof(sentry) / sizeof(sentry[0]) && sentry[t])
        n = snprintf(buf, EVTYPE_POINT_MAX, "%s", sentry[t]);
    else if (t == 35)
        n = snprintf(buf, EVTYPE_POINT_MAX, "sentry/mmap");
    else if (t == 6 || c->type == EVTYPE_UNKNOWN)
        n = snprintf(buf, EVTYPE_POINT_MAX, "syscall/sysno/%llu/%s", (unsigned long long)ev->sysno,
                     c->syscall_enter ? "enter" : "exit");
    else
        n = snprintf(buf, EVTYPE_POINT_MAX, "syscall/%s/%s", evtype_name(c->type), c->syscall_enter ? "enter" : "exit");
    return n < 0 ? 0 : (size_t)n < EVTYPE_POINT_MAX ? (size_t)n : EVTYPE_POINT_MAX - 1;
}
