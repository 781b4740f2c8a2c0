/* show_store.h - what `seccheckd alerts show` reads, from either place
 * alerts live: a host's database (SQLite) or the central copy (PostgreSQL,
 * one host's rows). The same few questions in two dialects, so the story
 * of an alert is told the same way from both.
 *
 * Events come back as their stored packet (raw) with their id, connection
 * and receive time: everything else about them (process, cwd, uid, argv,
 * the clone's child) is decoded from raw again, as `seccheckd events` does.
 * A row is valid only until the callback returns.
 *
 * Every question about a process is asked within one connection (one
 * sandbox: pids are the sandbox's), and, when the thread group's start time
 * is known, of that process only (a pid used again later is another).
 * Searches that scan are bounded by an id range the caller gives.
 */
#ifndef SECCHECKD_SHOW_STORE_H
#define SECCHECKD_SHOW_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHOW_UNKNOWN INT64_MIN   /* a value the question leaves open */

struct show_row {
    int64_t id, conn_id, recv_ns;
    const uint8_t *raw;
    size_t raw_len;
};

struct show_alert {
    int64_t id, event_id, time_ns, suppressed;
    int64_t recv_ns;                     /* its event's; SHOW_UNKNOWN when the event is gone */
    const char *rule, *priority, *container, *output, *output_fields, *tags;
    size_t output_len;
    const char *host_name;               /* central: the host's name, or NULL */
};

/* Questions that return events (newest first for the "last" ones). */
enum show_query {
    SHOW_EVENT,        /* [id]: that event */
    SHOW_LAST_EXEC,    /* [conn, pid, start, at]: its latest sentry/execve at or before at */
    SHOW_CLONE,        /* [conn, child, child start, at]: the latest clone at or before at that made child
                        * (sentry/clone, else a clone or fork exit returning it) */
    SHOW_START,        /* [conn, at]: the latest container/start at or before at */
    SHOW_BEFORE,       /* [conn, pid, start, at, from]: its events before at, not before from, newest first */
    SHOW_AFTER,        /* [conn, pid, start, at, to]: its events after at, not after to */
};

/* Questions that return a number (SHOW_UNKNOWN: none). */
enum show_scalar {
    SHOW_MIN_ID,       /* []: the oldest event kept */
    SHOW_MAX_ID,       /* []: the newest */
    SHOW_CONN_HAS,     /* [conn, msg_type]: 1 if the connection sent any such event, else 0 */
};

/* One step of a sequence's alert, as its sequence column keeps it (rules.h
 * RULES_SEQUENCE_KEY); strings as stored (the caller escapes them). */
struct show_step {
    const char *name;
    int64_t event_id;                    /* SHOW_UNKNOWN: not known */
    const char *time, *first_time;       /* RFC 3339; first_time NULL but for a count step */
    int64_t count;                       /* a count step's events; 1 otherwise */
    int64_t sandbox_dropped;             /* the alert's: events the sandbox dropped while the chain was open */
};

typedef bool (*show_row_cb)(const struct show_row *row, void *data);   /* false: stop */
typedef void (*show_step_cb)(const struct show_step *s, void *data);
typedef void (*show_alert_cb)(const struct show_alert *a, void *data);

struct show_store {
    void *impl;
    const char *where;                   /* "seccheck.db", "the central copy (host H)" */
    /* 1 found (cb called), 0 not found, -1 error (show_store_error). */
    int (*alert)(struct show_store *s, int64_t id, show_alert_cb cb, void *data);
    /* Rows found, or -1. */
    int (*events)(struct show_store *s, enum show_query q, const int64_t *args, int limit, show_row_cb cb,
                  void *data);
    int64_t (*scalar)(struct show_store *s, enum show_scalar q, const int64_t *args);
    /* Alerts of the container (NULL: of none) whose event ids are in [from, to], except skip. */
    int (*alerts_between)(struct show_store *s, const char *container, int64_t from, int64_t to, int64_t skip,
                          show_alert_cb cb, void *data);
    /* The event's whole message as JSON (events_full.message), or 0 when there is none. */
    int (*message)(struct show_store *s, int64_t id, void (*cb)(const char *json, size_t len, void *data),
                   void *data);
    const char *(*error)(struct show_store *s);
    void (*close)(struct show_store *s);
    /* A sequence alert's steps, in order (none for a rule's, nor in a
     * store written before sequences). Steps found, or -1. */
    int (*steps)(struct show_store *s, int64_t alert_id, show_step_cb cb, void *data);
};

/* A host's database, read as `seccheckd alerts` reads it. 0, or -1 with
 * "PROBLEM" printed under prog. */
int show_store_open_sqlite(struct show_store *s, const char *prog, const char *path);

/* The central copy at url, one host's rows (host_id). 0, or -1 printed. */
int show_store_open_pg(struct show_store *s, const char *prog, const char *url, const char *host_id);

#endif
