/* drops.h - Falco's syscall event drop monitor (falcosecurity/falco
 * 130747499b userspace/falco/event_drops.cpp:53-125), per sandbox
 * connection: once a second of the daemon's clock, the events a connection
 * delivered and its sandbox dropped in that second (n_evts counts both, as
 * Falco's "always contains the n_drops"); drops over `threshold` of n_evts
 * raise "Falco internal: syscall event drop" when the connection's token
 * bucket (`rate` a second, `burst`) has a token.
 *
 * Bounded: one entry per open connection (the engine removes it at close),
 * every count saturating. The clock is the daemon's: a sandbox chooses its
 * events' times, never when the window ends or the bucket refills.
 */
#ifndef SECCHECKD_RULES_DROPS_H
#define SECCHECKD_RULES_DROPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct drop_entry {
    uint64_t conn_id;             /* 0: free */
    int64_t next_check_ns;        /* the window ends then */
    uint64_t events, drops;       /* in the window */
    double tokens;
    int64_t refilled_ns;
};

struct drop_monitor {
    double threshold, rate, burst;
    struct drop_entry *entries;   /* open addressing on conn_id */
    size_t cap, count;
};

/* A window that raises the alert. */
struct drop_window {
    uint64_t n_evts, n_drops;
};

void drop_monitor_init(struct drop_monitor *m, double threshold, double rate, double burst);
void drop_monitor_free(struct drop_monitor *m);

/* One event of conn_id whose sandbox dropped `dropped` events just before
 * it, at now_ns: true when it closes a window that raises the alert (*out
 * says its counts). Out of memory for a new connection: false. */
bool drop_monitor_event(struct drop_monitor *m, uint64_t conn_id, uint64_t dropped, int64_t now_ns,
                        struct drop_window *out);

void drop_monitor_conn_closed(struct drop_monitor *m, uint64_t conn_id);

/* The alert's three forms into text, fields and json (reset first):
 * event_drops.cpp:133-200 perform_actions, Debug, "Falco internal: syscall
 * event drop. N system calls dropped in last second.", Falco's
 * output_fields as strings, and the container's id (NULL: none) and, from
 * its record (NULL: not known), name, image and pod; the text line as
 * falco_outputs.cpp:211-230 writes an internal message, the JSON line as
 * rules_alert_json does for RULES_DROP_RULE. */
struct container_record;
struct strbuf;
void drop_alert_render(const struct drop_window *w, int64_t time_ns, const char *container,
                       const struct container_record *r, const char *hostname, struct strbuf *text,
                       struct strbuf *fields, struct strbuf *json);

#endif
