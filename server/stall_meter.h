/* stall_meter.h - how long the loop thread went without reading sockets.
 *
 * A sandbox drops events once its socket buffer is full (~277 small
 * messages by default), so what matters is the longest stretch in which the
 * loop was neither reading sockets nor idle in epoll. Each turn (from one
 * prepare callback to the next) is split into idle time, reading time
 * (conn.c adds to read_ns) and the rest: the stall (sealing batches, timers,
 * closing connections, waiting for a lock).
 *
 * Wall clock also counts time the thread was runnable but preempted: another
 * thread had the CPU (the scheduler, not the design). So the thread's count
 * of involuntary context switches, read once a turn (getrusage, ~0.3 us),
 * splits the turns: in one without such a switch the stall is the loop's own
 * doing (its work, or a wait it chose). Both figures are reported.
 */
#ifndef SECCHECKD_STALL_METER_H
#define SECCHECKD_STALL_METER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <uv.h>

struct stall_meter {
    int64_t read_ns;                /* conn.c: time spent reading during this turn */

    uint64_t turns;
    uint64_t preempted_turns;       /* with an involuntary context switch */
    int64_t longest_turn_ns;        /* busy (not idle) time of the longest turn */
    int64_t longest_stall_ns;       /* wall clock, not reading, not idle */
    uint64_t stalls_over_1ms;
    int64_t longest_own_stall_ns;   /* in turns not preempted: the loop's own work */
    uint64_t own_stalls_over_1ms;

    /* Internal. */
    uv_loop_t *loop;
    uv_prepare_t turn_start;        /* right before epoll */
    uint64_t turn_hr, turn_idle;    /* at the last turn start */
    long turn_preemptions;
};

/* Before the loop runs (it sets UV_METRICS_IDLE_TIME). The handle does not
 * keep the loop alive. 0 or a libuv error. */
int stall_meter_start(struct stall_meter *m, uv_loop_t *loop);

/* Closes its handle (the struct must live until it is closed). */
void stall_meter_close(struct stall_meter *m);

/* The summary line: turns, the longest turn, the longest stall on the wall
 * clock and of the loop's own, the counts over 1 ms. */
void stall_meter_print(const struct stall_meter *m, FILE *out);

#endif
