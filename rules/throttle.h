/* throttle.h - how many alerts one sandbox connection may raise, in the
 * daemon's own time, with bounded state.
 *
 * Two token buckets, both refilled by a clock the daemon reads (monotonic),
 * never by a time an event carries: a sandbox chooses its events' times, so
 * a bucket refilled by them could be emptied for good (a time far in the
 * future) or never emptied (a time one second later on every event).
 *
 * - The ceiling: per connection, every rule together. On by default; what
 *   it holds back is counted and handed to the connection's next alert.
 *   One entry per connection, removed when it closes: a connection cannot
 *   push another's entry out.
 * - Per rule: per (rule, connection), off unless asked for (Falco has no
 *   rate limit: every match is an alert). A fixed table of
 *   THROTTLE_ENTRIES; a new key takes a free entry, else a full bucket
 *   (one that would allow a whole burst: forgetting it loses nothing),
 *   else the least recently used in its probe window. Keys are the rule's
 *   name and the daemon's connection id: nothing a sandbox chooses.
 *
 * Connections are the engine's: two connections share buckets only when the
 * daemon itself tied them to one process table (process_history.h), never
 * because their events name the same container.
 */
#ifndef SECCHECKD_RULES_THROTTLE_H
#define SECCHECKD_RULES_THROTTLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define THROTTLE_ENTRIES 4096   /* rule x connection pairs tracked at once (per-rule throttling) */

struct throttle_bucket {
    double tokens;
    int64_t last_ns;            /* the clock at the last refill */
    uint64_t suppressed;        /* held back since the last alert let through */
};

struct throttle_rule_entry {
    uint64_t key;               /* 0: free */
    struct throttle_bucket b;
};

struct throttle_conn_entry {
    uint64_t conn_id;           /* 0: free */
    struct throttle_bucket b;
};

struct throttle {
    double rule_rate, rule_burst;   /* rule_rate 0: no per-rule throttling */
    double conn_rate, conn_burst;   /* conn_rate 0: no ceiling */
    struct throttle_rule_entry *rules;
    struct throttle_conn_entry *conns;   /* open addressing on conn_id */
    size_t conns_cap, conns_count;
};

/* rate 0 turns a limit off; a burst below 1 is 1. 0, or -1 out of memory. */
int throttle_init(struct throttle *t, double rule_rate, double rule_burst, double conn_rate, double conn_burst);
void throttle_free(struct throttle *t);

enum throttle_verdict {
    THROTTLE_RAISE,             /* raise it (*suppressed: how many alerts it stands for) */
    THROTTLE_RULE,              /* held back by the per-rule limit (counted) */
    THROTTLE_CEILING,           /* held back by the connection's ceiling (counted) */
};

/* One alert of rule on conn_id at now_ns (the daemon's monotonic clock).
 * *suppressed, when raised: the alerts held back before it, of its rule on
 * its connection by the per-rule limit plus of its connection by the
 * ceiling. Out of memory for a new connection's entry, the alert is raised
 * (the ceiling cannot hold what it cannot count). */
enum throttle_verdict throttle_take(struct throttle *t, const char *rule, uint64_t conn_id, int64_t now_ns,
                                    uint64_t *suppressed);

/* The connection closed: its ceiling entry goes (per-rule entries age out). */
void throttle_conn_closed(struct throttle *t, uint64_t conn_id);

#endif
