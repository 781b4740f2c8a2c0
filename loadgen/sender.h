/* sender.h - one connection's sender thread. It replays its trace the way a
 * gVisor sandbox's remote sink sends events (or, in block mode, without ever
 * dropping), paced or flat out, and counts what it sent and dropped.
 *
 * Threads start through a gate: main connects every socket, waits until
 * every sender is parked at the gate, then opens it, so the measured interval
 * holds streaming only (no connects, handshakes or thread start-up). */
#ifndef SECCHECKD_LOADGEN_SENDER_H
#define SECCHECKD_LOADGEN_SENDER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "options.h"
#include "replay.h"

struct start_gate {
    pthread_mutex_t mu;
    pthread_cond_t to_main;      /* a sender parked or finished (CLOCK_MONOTONIC) */
    pthread_cond_t to_senders;   /* the gate opened or the run was aborted */
    unsigned parked, running;
    bool open, aborted;
    int64_t start_ns;            /* CLOCK_MONOTONIC when the gate opened */
};

int gate_init(struct start_gate *g);
void gate_destroy(struct start_gate *g);
/* Main: wait until n senders are parked, then release them together;
 * returns the start time (CLOCK_MONOTONIC ns). */
int64_t gate_open_when_parked(struct start_gate *g, unsigned n);
/* Main: release parked senders without running (setup failed). */
void gate_abort(struct start_gate *g);
/* Main: wait until no sender runs or until_ns (CLOCK_MONOTONIC) passes;
 * returns how many still run. */
unsigned gate_wait_finished(struct start_gate *g, int64_t until_ns);

/* What every sender of a run shares; read-only once threads start. */
struct sender_config {
    enum loadgen_mode mode;
    double rate;                 /* messages/s, 0 = flat out */
    unsigned retries;
    int64_t backoff_ns, backoff_max_ns;
    const atomic_bool *stop;     /* set by signals and by the --duration timer */
    struct start_gate *gate;
};

/* One connection. Aligned so the counters that the progress line reads do not
 * share a cache line with another sender's. */
struct sender {
    _Alignas(64) atomic_uint_fast64_t sent;   /* written by the sender, read by progress */
    atomic_uint_fast64_t dropped;
    uint64_t bytes;                 /* of packets sent */
    uint64_t limit;                 /* messages to attempt (sent + dropped) */
    int64_t end_ns;                 /* when this sender stopped */
    uint32_t dropped_count;         /* what the next header carries: wraps as gVisor's */
    uint64_t dropped_reported;      /* what the last header sent carried: the drops a collector can know */
    int fd;
    unsigned index;
    int error;                      /* errno that ended the connection, 0 if none */
    uint64_t error_after;           /* messages sent before it */
    const struct replay_trace *trace;
    const struct sender_config *cfg;
    uint8_t *header;                /* scratch: the header being rewritten */
};

/* Sets up s for connection index over fd (owned by s from now on); the
 * header scratch holds max_header bytes. -1 if out of memory. */
int sender_init(struct sender *s, unsigned index, int fd, const struct replay_trace *trace, size_t max_header,
                uint64_t limit, const struct sender_config *cfg);
void sender_free(struct sender *s);

/* Puts the socket in the mode's state: non-blocking for sentry mode (as
 * gVisor does after the handshake), blocking with a short send timeout for
 * block mode (so a stop request is seen even when the collector stalls);
 * -1 with errno. */
int sender_prepare_socket(int fd, enum loadgen_mode mode);

/* pthread entry point: arg is a struct sender. */
void *sender_run(void *arg);

#endif
