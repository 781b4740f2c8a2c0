/* pipeline.h - batches from the loop thread to the sink and back.
 *
 * The loop fills the current batch and seals it; a sealed batch goes to the
 * writer thread (sinks that do I/O), or is written inline (discard).
 * Sealing always succeeds, so packets already read from a socket are never
 * lost; once queue_max batches are in flight the pipeline reports itself
 * saturated and the connections holding more than their fair share stop
 * reading until on_space says a batch is free again; the others may fill
 * up to reserve batches more, then the pipeline is exhausted and everyone
 * stops: backpressure instead of unbounded memory. A batch's share entries
 * are released when it comes back, on the loop thread.
 *
 * The loop thread never waits for the writer: batches travel both ways on
 * lock-free lists, each with an eventfd to wake the other side (a lock held
 * by a preempted writer, or libuv's uv_async_send, which before 1.45 makes
 * the loop spin until a preempted sender finishes, would stall reading for a
 * scheduler tick).
 */
#ifndef SECCHECKD_PIPELINE_H
#define SECCHECKD_PIPELINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "alert_tally.h"
#include "batch.h"
#include "fair_share.h"
#include "histogram.h"
#include "sink.h"

struct pipeline_config {
    struct batch_limits limits;
    size_t queue_max;             /* sealed batches waiting or being written */
    size_t reserve;               /* more, sealed from connections under their fair share */
};

typedef void (*pipeline_space_cb)(void *data);
/* Called on the loop thread just before a batch is handed to the sink. */
typedef void (*pipeline_seal_cb)(struct batch *b, void *data);

struct pipeline {
    uv_loop_t *loop;
    struct sink *sink;
    struct pipeline_config cfg;
    struct batch *current;
    struct batch *free_list;
    size_t batches;               /* allocated so far, at most queue_max + 1 */
    pipeline_space_cb on_space;
    pipeline_seal_cb on_seal;
    void *cb_data;

    /* Totals of every batch that came back, loop thread only. */
    struct batch_counts counts;
    struct batch_result result;
    /* Batches that stored at least one event: with the SQLite sink, the
     * rows the batches table gained (a write holding only connection
     * updates adds none). */
    uint64_t batches_stored;
    /* Counts of every batch handed to the sink, added at submit (loop
     * thread): with the current batch's, what was received up to now,
     * before the writer is done with it (metrics). */
    struct batch_counts submitted;
    struct histogram write_latency;   /* sink_write_batch time per batch */
    struct alert_tally alerts;        /* alerts of every batch that came back */

    /* Shared with the writer thread. */
    uv_thread_t writer;
    bool writer_running;
    _Atomic(struct batch *) todo;   /* sealed, newest first */
    _Atomic(struct batch *) done;   /* written, any order */
    atomic_size_t in_flight;
    atomic_bool stopping;
    int todo_fd;                    /* eventfd: wakes the writer */
    int done_fd;                    /* eventfd: wakes the loop */
    uv_poll_t done_poll;
};

int pipeline_init(struct pipeline *p, uv_loop_t *loop, struct sink *sink, const struct pipeline_config *cfg,
                  pipeline_space_cb on_space, pipeline_seal_cb on_seal, void *cb_data);

/* The batch being filled; always valid between init and finish. */
static inline struct batch *pipeline_current(struct pipeline *p) { return p->current; }

/* True when nothing was added to the current batch since it was sealed. */
bool pipeline_current_empty(const struct pipeline *p);

/* Hands the current batch to the sink and opens a fresh one, past the
 * queue limit if it must. -1 (current batch kept) only when out of memory. */
int pipeline_seal(struct pipeline *p);

/* True when queue_max batches are in flight: connections over their fair
 * share (fair_share.h) stop reading until on_space. */
bool pipeline_saturated(const struct pipeline *p);

/* True when the reserve is in flight too: every connection stops. */
bool pipeline_exhausted(const struct pipeline *p);

/* Reserve batches not in flight: cfg.reserve until saturated, 0 once
 * exhausted. */
size_t pipeline_reserve_left(const struct pipeline *p);

/* Sealed batches not yet returned. */
size_t pipeline_in_flight(struct pipeline *p);

/* Seals what is left, waits for the writer to finish everything, stops it
 * and folds all results into the totals. Blocks: only for shutdown. A
 * writer still busy after a grace of 2 s has its sink cut off (sink.h) and
 * a write that blocks interrupted, so a reader that stopped reading cannot
 * hold shutdown up; what it did not take is counted as failed. */
void pipeline_finish(struct pipeline *p);

/* Frees every batch; after finish, once the loop has closed its handles. */
void pipeline_free(struct pipeline *p);

#endif
