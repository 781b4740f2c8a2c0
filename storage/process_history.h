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
 * across SIGUSR2 keeps its id, so its table is simply there; a new
 * connection whose first event names a container one of those connections
 * served takes over that connection's table.
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

#include "event.h"
#include "rules.h"

#define PROCESS_HISTORY_WINDOW_S (24 * 3600)
#define PROCESS_HISTORY_MAX_EVENTS 262144
#define PROCESS_HISTORY_MAX_CONNS 4096   /* connections whose tables can be taken over */

struct process_history_stats {
    uint64_t events;         /* replayed */
    uint64_t connections;    /* whose tables were rebuilt */
};

/* A connection that was open when the last image stopped, and the
 * container it last served. */
struct process_history_conn {
    uint64_t conn_id;
    char container_id[96];
    bool claimed;            /* its events came back, or a new connection took its table */
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
};

/* Replays db's recent process events into e (rules_engine_observe) and
 * remembers which connections they belonged to. -1 with err when the
 * database cannot be read (the tables then start empty). */
int process_history_load(struct process_history *h, const char *db_path, struct rules_engine *e,
                         struct process_history_stats *st, char *err, size_t errlen);

/* The process table ev belongs to (what to pass as the event's conn_id to
 * the engine): an earlier connection's when ev is the first event of a new
 * connection of a container that one served, else ev->conn_id. */
uint64_t process_history_table(struct process_history *h, const struct event *ev);

/* conn_id closed: returns the table it used (for rules_engine_conn_closed). */
uint64_t process_history_forget(struct process_history *h, uint64_t conn_id);

void process_history_free(struct process_history *h);

#endif
