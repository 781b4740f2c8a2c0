/* conn.h - one sandbox connection: handshake, then reading packets.
 *
 * States: HANDSHAKE (one packet in, one answer out, under a timer) ->
 * STREAMING (recvmmsg into the shared receive slots, each packet handed to
 * ingest) -> CLOSED (handles closing, then freed). A connection knows its
 * socket and its record; what it needs from its owner comes in conn_env.
 */
#ifndef SECCHECKD_CONN_H
#define SECCHECKD_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "batch.h"
#include "fair_share.h"
#include "ingest.h"
#include "recv_ring.h"

struct conn;

/* What a connection may do with what it reads (server.c's backpressure). */
enum conn_go {
    CONN_GO,     /* read and keep */
    CONN_STOP,   /* stop reading (paused until resumed) */
    CONN_DROP,   /* read and drop, counted (--on-full drop, over its share) */
};

struct conn_env {
    uv_loop_t *loop;
    struct recv_ring *ring;
    struct ingest *ingest;
    struct fair_share *share_pool;  /* each connection's share account is in it */
    unsigned read_budget;           /* packets per connection per loop turn */
    unsigned handshake_timeout_ms;
    /* May c read on? Asked before each receive. */
    enum conn_go (*may_read)(struct conn *c, void *data);
    /* The next connection id: taken once a connection is more than a
     * probe (its handshake, or anything it sent, or its timeout). */
    uint64_t (*take_id)(void *data);
    /* The client's handshake was answered: it streams from now on. */
    void (*on_handshake)(struct conn *c, void *data);
    /* The connection is closing: its record is final. */
    void (*on_close)(struct conn *c, void *data);
    /* A connection stopped reading because may_read said stop. */
    void (*on_blocked)(struct conn *c, void *data);
    int64_t *read_ns;               /* time spent reading is added here */
    void *data;
};

enum conn_state { CONN_HANDSHAKE, CONN_STREAMING, CONN_CLOSED };

/* The close reason of a connection that closed before sending a byte: a
 * check that the socket is served (a second daemon's), not a sandbox. It
 * is counted apart and never recorded. */
#define CONN_CLOSE_PROBE "probe"

enum conn_read_result {
    CONN_READ_DRAINED,   /* socket empty for now */
    CONN_READ_BUDGET,    /* budget used up, more may be waiting */
    CONN_READ_BLOCKED,   /* stopped: no batch space */
    CONN_READ_CLOSED,    /* EOF or error: the connection is closing */
};

struct conn {
    struct conn_record rec;
    const struct conn_env *env;
    int fd;
    enum conn_state state;
    bool dirty;                 /* record changed since the last snapshot */
    bool paused;
    bool held;                  /* paused for shutdown, not backpressure: not counted */
    int64_t paused_since_ns;    /* monotonic, while paused by backpressure */
    struct share_account *share;   /* its part of what the writer has not committed */
    bool detached;              /* handed to a new image: keep the fd open */
    bool relayed;               /* the restart relay reads the socket for now (relay.h) */
    uint32_t relay_index;       /* then: its index in the handoff state, which the relay's records name */
    uv_poll_t poll;
    uv_timer_t handshake_timer;
    int open_handles;
    int64_t rejections_logged_ns;   /* last rejection log line (rate limit) */
    uint64_t rejections_logged;     /* rec.rejected at that line */
    struct conn *prev, *next;   /* owner's list */
    void *owner_data;
};

/* Takes ownership of an accepted non-blocking fd; NULL (fd closed) on
 * failure. Its id (rec.id) is 0 until conn_id gives it one. */
struct conn *conn_new(const struct conn_env *env, int fd);

/* c's id, taken from env->take_id the first time: a probe (closed without a
 * byte) never takes one, so ids have no gaps. */
uint64_t conn_id(struct conn *c);

/* Takes over a connection inherited across a restart (handoff.h): its fd,
 * record and state as they were. NULL (fd closed) on failure. */
struct conn *conn_adopt(const struct conn_env *env, int fd, const struct conn_record *rec, enum conn_state state);

/* Right after conn_adopt, for a streaming connection the restart relay
 * reads (relay.h): the socket is not watched until conn_take_back; what
 * the relay read comes in through conn_ingest_relayed, in order. */
void conn_leave_to_relay(struct conn *c, uint32_t index);

/* A packet the relay read for c, kept (or, drop, counted and dropped) as
 * conn_read would have kept it, with the time the relay read it. */
void conn_ingest_relayed(struct conn *c, const uint8_t *pkt, size_t len, bool truncated, int64_t recv_ns, bool drop);

/* The relay read c's socket empty at ns (CLOCK_REALTIME). */
void conn_relayed_emptied(struct conn *c, int64_t ns);

/* The relay stopped and everything it read for c is in: c reads its socket
 * again. */
void conn_take_back(struct conn *c);

/* Lets go of the connection for a restart: handles close and the conn is
 * freed, the socket stays open for the next image. No on_close. */
void conn_detach(struct conn *c);

/* Reads up to budget packets (streaming connections only). */
enum conn_read_result conn_read(struct conn *c, unsigned budget);

/* Stops or restarts watching the socket (backpressure): counted in the
 * record's paused_count and paused_ns. */
void conn_pause(struct conn *c);
void conn_resume(struct conn *c);

/* Stops watching the socket for good (shutdown drains it directly): not a
 * pause, not counted. */
void conn_hold(struct conn *c);

/* Adds the time paused so far to the record (before it is snapshot). */
void conn_fold_pause(struct conn *c);

/* Closes the connection: the record gets close time and reason, on_close
 * runs, handles close and the conn is freed from the loop. Idempotent. */
void conn_close(struct conn *c, const char *reason);

#endif
