/* process_history.h - a restarted daemon's process tables, rebuilt from
 * the process events its database already holds.
 *
 * The rules name a process's parent and ancestors (proc.pname, proc.aname)
 * from a table the engine builds as events arrive. A new image (SIGUSR2, or
 * a plain restart after which a sandbox connects again with `runsc trace
 * create --force`) would otherwise know no process that started before it.
 * At start the recent container/start and sentry clone, exec and exit events
 * of every connection that was still open when the last image stopped are
 * replayed into the engine (observed, never evaluated). A connection kept
 * across SIGUSR2 keeps its id, so its table is simply there. After a plain
 * restart a new connection takes over an earlier connection's table only
 * when the daemon can tie the two itself: the kernel's peer credentials
 * (SO_PEERCRED) name the same process, one still running that started
 * before the earlier connection was made (so not a reused pid), and its
 * first event names the container the earlier one served. A container id
 * alone is the sandbox's claim and never enough: when in doubt the table
 * starts empty, counted and logged.
 *
 * Bounded: at most PROCESS_HISTORY_MAX_EVENTS events received in the
 * PROCESS_HISTORY_WINDOW_S seconds before the newest event stored (the
 * daemon's receive times: a sandbox's own clock moves no window), read
 * through the events_by_type index; the engine's own process limit applies
 * as always.
 */
#ifndef SECCHECKD_PROCESS_HISTORY_H
#define SECCHECKD_PROCESS_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "event.h"
#include "rules.h"

#define PROCESS_HISTORY_WINDOW_S (24 * 3600)
#define PROCESS_HISTORY_MAX_EVENTS 262144
#define PROCESS_HISTORY_MAX_CONNS 4096   /* connections whose tables can be taken over */

struct process_history_stats {
    uint64_t events;         /* replayed */
    uint64_t connections;    /* whose tables were rebuilt */
};

/* A connection that was open when the last image stopped, who made it (as
 * the kernel said) and the container it last served. */
struct process_history_conn {
    uint64_t conn_id;
    int64_t peer_pid, peer_uid, peer_gid;   /* -1: unknown */
    int64_t connect_ns;
    char container_id[96];
    bool claimed;            /* its events came back, or a new connection took its table */
    bool refusal_logged;     /* a connection that could not be tied to it named its container */
};

struct process_history_slot {
    uint64_t conn_id;        /* 0: free */
    uint64_t table_id;
};

/* Which table each live connection uses: its own id, or the one of an
 * earlier connection of the same container. */
struct process_history {
    struct process_history_conn *old;
    size_t nold;
    struct process_history_slot *map;   /* open addressing on conn_id */
    size_t map_cap, map_count;
    uint64_t untied;         /* new connections that named an earlier one's container, not tied to it: started empty */
};

/* Replays db's recent process events into e (rules_engine_observe) and
 * remembers which connections they belonged to. -1 with err when the
 * database cannot be read (the tables then start empty). */
int process_history_load(struct process_history *h, const char *db_path, struct rules_engine *e,
                         struct process_history_stats *st, char *err, size_t errlen);

/* The process table ev belongs to (what to pass as the event's conn_id to
 * the engine): an earlier connection's when ev is the first event of a new
 * connection the daemon ties to it (above), else ev->conn_id. conns: the
 * connection records of ev's batch, where a new connection's credentials
 * are (none found: not tied). */
uint64_t process_history_table(struct process_history *h, const struct event *ev, const struct conn_record *conns,
                               size_t nconns);

/* conn_id closed: returns the table it used (for rules_engine_conn_closed). */
uint64_t process_history_forget(struct process_history *h, uint64_t conn_id);

void process_history_free(struct process_history *h);

#endif
