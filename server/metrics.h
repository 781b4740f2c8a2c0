/* metrics.h - the Prometheus scrape endpoint (--metrics-listen).
 *
 * A deliberately tiny HTTP/1.x server on the daemon's loop: one request per
 * connection, `GET /metrics` answers 200 with whatever the render callback
 * writes, anything else 404, then the connection closes. What it knows about
 * the daemon comes only through that callback.
 *
 * Any local user can connect to a loopback port, and a stuck or hostile
 * client must neither stall the loop nor grow memory, so everything is
 * bounded: at most METRICS_MAX_CLIENTS connections at once (their buffers
 * allocated once at start), requests of at most METRICS_REQUEST_MAX bytes,
 * and METRICS_TIMEOUT_MS for the whole exchange. When every slot is taken
 * the newcomer waits in the kernel's backlog and the oldest connection that
 * has not finished its request is closed to make room, so idle connections
 * cannot lock a scraper out. Nothing here blocks the loop.
 *
 * Addresses: HOST:PORT on a loopback address only (127.0.0.0/8, [::1],
 * localhost): the metrics reveal what the sandboxes do. unix:PATH listens on
 * a stream socket; an existing file there is replaced only when it is a
 * socket nobody listens on, and is removed again at stop if still ours.
 */
#ifndef SECCHECKD_METRICS_H
#define SECCHECKD_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/un.h>
#include <uv.h>

#include "strbuf.h"

#define METRICS_MAX_CLIENTS 16
#define METRICS_REQUEST_MAX 8192
#define METRICS_TIMEOUT_MS 3000

/* Appends the whole exposition text to out (on the loop thread). */
typedef void (*metrics_render_cb)(struct strbuf *out, void *data);

struct metrics_client;

struct metrics {
    uv_loop_t *loop;
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } listener;
    bool listening;                   /* listener handle open */
    bool stopping;
    bool pending;                     /* a connection waits for a free slot */
    bool unix_socket;                 /* unix:PATH, else TCP */
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    dev_t dev;                        /* unix: the file we bound, so we */
    ino_t ino;                        /* only ever remove our own */
    struct metrics_client *clients;   /* METRICS_MAX_CLIENTS slots */
    unsigned busy;                    /* slots not free (open or closing) */
    uint64_t next_seq;                /* accept order, to find the oldest */
    uint64_t accept_failures;         /* logged 1st, 1001st...: may repeat fast */
    metrics_render_cb render;
    void *render_data;
};

/* Checks addr as metrics_start parses it, without listening, so the daemon
 * refuses a bad address before it opens anything. 0, or -1 with err. */
int metrics_check_address(const char *addr, char *err, size_t errlen);

/* Listens on addr ("HOST:PORT" or "unix:PATH"). 0, or -1 with a message
 * naming the problem in err (nothing left open). m must be zeroed or
 * stopped before. */
int metrics_start(struct metrics *m, uv_loop_t *loop, const char *addr, metrics_render_cb render, void *data,
                  char *err, size_t errlen);

/* Closes the listener and every client; the memory goes once the loop has
 * run their close callbacks. Idempotent; a no-op on a zeroed struct. */
void metrics_stop(struct metrics *m);

#endif
