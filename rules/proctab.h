/* proctab.h - the process table behind proc.ppid, proc.pname, proc.aname[N],
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
 * keyed with a secret drawn at creation (siphash.h), so no one can compute
 * ids that share a bucket.
 * Entries and their buffers are recycled, so a steady workload allocates
 * nothing.
 */
#ifndef SECCHECKD_RULES_PROCTAB_H
#define SECCHECKD_RULES_PROCTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "evtype.h"

#define PROC_NAME_MAX 15        /* the kernel's comm: TASK_COMM_LEN - 1 */
#define PROC_EXEPATH_MAX 1024
#define PROC_ARGS_MAX 1024      /* argv[1..] joined by spaces */
#define PROC_CWD_MAX 1024
#define PROC_ANCESTORS_MAX 64   /* proc.aname[N] and the any-ancestor walk stop there */

struct pstr {
    char *data;                 /* NUL-terminated when len > 0 */
    uint32_t len, cap;
};

struct proc {
    uint64_t conn_id;
    int32_t tgid;
    int32_t parent_tgid;        /* 0: unknown */
    int64_t start_ns;           /* thread group start; 0: unknown */
    int64_t parent_start_ns;    /* 0: unknown (matches any start) */
    bool has_creds;
    uint32_t uid, gid;          /* effective */
    int32_t exec_tid;           /* thread whose sentry/execve awaits its syscall exit; 0: none */
    char name[PROC_NAME_MAX + 1];
    struct pstr exepath, args, cwd;
    struct pstr exec_file;      /* the pending execve's pathname (its enter point), for comm */
    /* table bookkeeping */
    uint32_t self, hnext, lru_prev, lru_next, conn;
    bool live;
};

/* What one event did to the table, for its evaluation. */
struct proc_effect {
    bool exec_repeat;           /* a syscall execve exit after its sentry/execve: seen once already */
    bool remove_after;          /* sentry/task_exit of the group leader: goes after evaluation */
};

struct proctab_stats {
    uint64_t processes, evictions;
    uint64_t bytes;             /* entries plus their string buffers */
};

struct proctab;

struct proctab *proctab_new(size_t max_processes);
void proctab_free(struct proctab *pt);

/* Applies ev to its connection's table; returns the event's process (NULL
 * when the event names none) and what the evaluation must know. */
struct proc *proctab_apply(struct proctab *pt, const struct event *ev, struct proc_effect *fx);
/* After evaluation: removes what the event ended. */
void proctab_finish(struct proctab *pt, struct proc *p, const struct proc_effect *fx);

/* The parent of p when it is still in the table (the same process: its
 * start time matches when both are known), else NULL. */
struct proc *proctab_parent(struct proctab *pt, const struct proc *p);

/* How many more events conn_id's sandbox says it dropped than its previous
 * event said (a header's dropped_count is cumulative per connection); 0
 * when the count did not grow. Kept per connection, with its processes. */
uint64_t proctab_dropped_growth(struct proctab *pt, uint64_t conn_id, uint32_t dropped);

void proctab_conn_closed(struct proctab *pt, uint64_t conn_id);
void proctab_get_stats(const struct proctab *pt, struct proctab_stats *out);

/* The most entries one bucket holds (a walk of the whole table: for tests
 * and benchmarks, not for every event). */
size_t proctab_longest_chain(const struct proctab *pt);

/* Cuts s to the kernel's comm length without splitting a UTF-8 sequence. */
size_t proc_comm_len(const char *s, size_t len);

#endif
