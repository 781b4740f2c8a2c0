/* batch.h - the unit that travels from the loop thread to a sink.
 *
 * A batch owns its events, the arena that holds their bytes, snapshots of
 * the connections that changed while it was open, and the counters of what
 * was received and rejected meanwhile. A sink writes it and reports how many
 * events it stored, discarded or failed to store; then the batch is reset and
 * reused, so steady state allocates nothing.
 */
#ifndef SECCHECKD_BATCH_H
#define SECCHECKD_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "container.h"
#include "event.h"
#include "rules.h"

/* Why a packet was not turned into an event. */
enum reject_reason {
    REJECT_SHORT_PACKET = 0,   /* fewer than 8 bytes */
    REJECT_BAD_HEADER,         /* header_size < 8 or past the packet */
    REJECT_OVERSIZE,           /* larger than --max-message (MSG_TRUNC) */
    REJECT_NO_MEMORY,          /* no memory left to hold it */
    REJECT_QUEUE_FULL,         /* writer queue full and --on-full drop */
    REJECT_REASON_COUNT
};

const char *reject_reason_name(enum reject_reason r);

/* One sandbox connection as the connections table shows it. */
struct conn_record {
    uint64_t id;
    int64_t peer_pid;
    int64_t peer_uid;
    int64_t peer_gid;
    int64_t connect_ns;
    int64_t close_ns;              /* 0 while open */
    uint32_t client_version;       /* 0 until handshaken */
    uint64_t messages;             /* packets received after the handshake */
    uint64_t bytes;
    uint32_t last_dropped_count;   /* as last reported in a header */
    uint64_t sandbox_dropped;      /* wrap-safe total of the sandbox's drops */
    uint64_t dropped_count_regressions;   /* headers whose count went backwards or jumped
                                           * past what the sandbox could drop (ingest.h) */
    uint64_t rejected;
    uint64_t decode_errors;        /* unknown types + bad payloads (stored raw) */
    uint64_t paused_count;         /* times reading paused (backpressure, over its fair share) */
    int64_t paused_ns;             /* time spent paused */
    char close_reason[32];         /* "" while open */
    /* For the bound on drops (ingest.h); neither stored nor handed to a
     * new image (0 there: the bound counts from connect_ns). */
    int64_t emptied_ns;            /* the socket was last read empty: what came later was sent later */
    int64_t drops_since_ns;        /* emptied_ns when the last counted header was read */
    /* The drops' warning in the log (ingest.c), at most every
     * INGEST_DROP_LOG_NS per connection: when it was last said, and the
     * total then. */
    int64_t drops_logged_ns;
    uint64_t drops_logged;
    /* The sandbox it streams from (container.h), "" while not known: the
     * containers' stage fills it in the batch's copy, on the writer thread. */
    char sandbox[CONTAINER_ID_MAX];
    uint8_t sandbox_bound_by;      /* enum container_bound_by */
};

/* Counts of what the loop saw while the batch was open. */
struct batch_counts {
    uint64_t received;
    uint64_t discarded;            /* by policy before becoming events */
    uint64_t rejected[REJECT_REASON_COUNT];
    uint64_t decode[DECODE_STATUS_COUNT];
};

/* What the sink did with the batch's events. */
struct batch_result {
    uint64_t stored;
    uint64_t discarded;
    uint64_t failed;               /* could not be stored (disk, DB error) */
    int64_t write_ns;              /* sink_write_batch took this long; 0: not written */
    uint64_t alert_lines_failed;   /* alerts that could not be written to --alerts-out */
    /* The SQLite sink stored events[i] as id first_event_id + i (0: the
     * events have no ids: another sink, or the batch was not stored);
     * sequences' alerts name their steps by these (rules.h). */
    int64_t first_event_id;
};

/* What one connection's share account (fair_share.h) put into a batch. */
struct share_account;
struct batch_share {
    struct share_account *owner;
    uint64_t units;                /* of batch room (fair_share.h) */
    uint64_t events;
};

struct batch_limits {
    size_t max_events;
    size_t max_bytes;              /* arena limit */
};

struct batch {
    struct batch *next;            /* queue and free-list link */
    struct event *events;
    size_t count;
    size_t max_events;
    struct arena arena;
    struct conn_record *conns;
    size_t nconns;
    size_t conns_cap;
    struct batch_counts counts;
    struct batch_result result;
    struct batch_share *shares;    /* fair_share.c fills and releases these */
    size_t nshares;
    size_t shares_cap;
    /* Raised by the rules (sink_rules.c) on the writer thread, in event
     * order; the sink stores them with their events, the loop thread counts
     * them when the batch comes back. */
    struct alert_list alerts;
    /* Container records looked up since the previous batch (container.h),
     * one reference each: the SQLite sink writes them as container_info
     * rows in this batch's transaction (sink_containers.c fills them). */
    const struct container_record **containers;
    size_t ncontainers, containers_cap;
};

struct batch *batch_new(const struct batch_limits *limits);
void batch_free(struct batch *b);
void batch_reset(struct batch *b);

/* Room for one more packet of len bytes (event slot and arena budget)? */
bool batch_has_room(const struct batch *b, size_t len);

/* Next event slot, its raw bytes copied into the arena; NULL when full. */
struct event *batch_push(struct batch *b, const uint8_t *pkt, size_t len);

/* Appends a container record (a new reference of it); -1 if memory ran out. */
int batch_add_container(struct batch *b, const struct container_record *r);

/* Appends a connection snapshot; -1 if memory ran out. */
int batch_add_conn(struct batch *b, const struct conn_record *rec);

void batch_counts_add(struct batch_counts *into, const struct batch_counts *from);
/* Discarded in all: by policy at ingest, and by the sink. */
static inline uint64_t batch_discarded(const struct batch_counts *c, const struct batch_result *r)
{
    return c->discarded + r->discarded;
}
uint64_t batch_counts_rejected(const struct batch_counts *c);

#endif
