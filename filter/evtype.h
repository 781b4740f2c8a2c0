/* evtype.h - what kind of event a decoded gVisor message is, in Falco's
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
#ifndef SECCHECKD_RULES_EVTYPE_H
#define SECCHECKD_RULES_EVTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event.h"

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

#endif
