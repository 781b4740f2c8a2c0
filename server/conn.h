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
#include "ingest.h"
#include "recv_ring.h"

struct conn;

struct conn_env {
    uv_loop_t *loop;
    struct recv_ring *ring;
    struct ingest *ingest;
    unsigned read_budget;           /* packets per connection per loop turn */
    unsigned handshake_timeout_ms;
    /* May reading go on? False while the pipeline is saturated. */
    bool (*can_read)(void *data);
    /* The connection is closing: its record is final. */
    void (*on_close)(struct conn *c, void *data);
    /* A connection stopped reading because can_read said no. */
    void (*on_blocked)(struct conn *c, void *data);
    int64_t *read_ns;               /* time spent reading is added here */
    void *data;
};

enum conn_state { CONN_HANDSHAKE, CONN_STREAMING, CONN_CLOSED };

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
    bool detached;              /* handed to a new image: keep the fd open */
    uv_poll_t poll;
    uv_timer_t handshake_timer;
    int open_handles;
    int64_t rejections_logged_ns;   /* last rejection log line (rate limit) */
    uint64_t rejections_logged;     /* rec.rejected at that line */
    struct conn *prev, *next;   /* owner's list */
    void *owner_data;
};

/* Takes ownership of an accepted non-blocking fd; NULL (fd closed) on failure. */
struct conn *conn_new(const struct conn_env *env, int fd, uint64_t id);

/* Takes over a connection inherited across a restart (handoff.h): its fd,
 * record and state as they were. NULL (fd closed) on failure. */
struct conn *conn_adopt(const struct conn_env *env, int fd, const struct conn_record *rec, enum conn_state state);

/* Lets go of the connection for a restart: handles close and the conn is
 * freed, the socket stays open for the next image. No on_close. */
void conn_detach(struct conn *c);

/* Reads up to budget packets (streaming connections only). */
enum conn_read_result conn_read(struct conn *c, unsigned budget);

/* Stops or restarts watching the socket (backpressure). */
void conn_pause(struct conn *c);
void conn_resume(struct conn *c);

/* Closes the connection: the record gets close time and reason, on_close
 * runs, handles close and the conn is freed from the loop. Idempotent. */
void conn_close(struct conn *c, const char *reason);

#endif
