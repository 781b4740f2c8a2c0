#include "stall_meter.h"

#include <inttypes.h>
#include <sys/resource.h>

#define STALL_REPORT_NS 1000000   /* "over 1 ms": the sandbox buffers ~3 ms at 100k events/s */

/* The thread's involuntary context switches so far (its CPU times from
 * getrusage are not precise enough per turn). */
static long thread_preemptions(long fallback)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nivcsw : fallback;
}

static void record_turn(struct stall_meter *m, int64_t busy, bool preempted)
{
    int64_t stall = busy > m->read_ns ? busy - m->read_ns : 0;
    m->turns++;
    if (busy > m->longest_turn_ns)
        m->longest_turn_ns = busy;
    if (stall > m->longest_stall_ns)
        m->longest_stall_ns = stall;
    if (stall > STALL_REPORT_NS)
        m->stalls_over_1ms++;
    if (preempted) {
        m->preempted_turns++;
        return;
    }
    if (stall > m->longest_own_stall_ns)
        m->longest_own_stall_ns = stall;
    if (stall > STALL_REPORT_NS)
        m->own_stalls_over_1ms++;
}

static void on_turn_start(uv_prepare_t *h)
{
    struct stall_meter *m = h->data;
    uint64_t now = uv_hrtime(), idle = uv_metrics_idle_time(m->loop);
    long preemptions = thread_preemptions(m->turn_preemptions);
    if (m->turn_hr)
        record_turn(m, (int64_t)(now - m->turn_hr - (idle - m->turn_idle)), preemptions != m->turn_preemptions);
    m->turn_hr = now;
    m->turn_idle = idle;
    m->turn_preemptions = preemptions;
    m->read_ns = 0;
}

int stall_meter_start(struct stall_meter *m, uv_loop_t *loop)
{
    *m = (struct stall_meter){.loop = loop};
    int rc = uv_loop_configure(loop, UV_METRICS_IDLE_TIME);
    if (rc == 0)
        rc = uv_prepare_init(loop, &m->turn_start);
    if (rc != 0)
        return rc;
    m->turn_start.data = m;
    uv_prepare_start(&m->turn_start, on_turn_start);
    uv_unref((uv_handle_t *)&m->turn_start);
    return 0;
}

void stall_meter_close(struct stall_meter *m)
{
    uv_handle_t *h = (uv_handle_t *)&m->turn_start;
    if (h->type != UV_UNKNOWN_HANDLE && !uv_is_closing(h))
        uv_close(h, NULL);
}

void stall_meter_print(const struct stall_meter *m, FILE *out)
{
    fprintf(out,
            "seccheckd: summary: loop turns %" PRIu64 ", longest %.3f ms, longest stall (not reading) %.3f ms, "
            "stalls over 1 ms: %" PRIu64 "; in turns not preempted (%" PRIu64 " were) longest stall %.3f ms, "
            "over 1 ms: %" PRIu64 "\n",
            m->turns, (double)m->longest_turn_ns / 1e6, (double)m->longest_stall_ns / 1e6, m->stalls_over_1ms,
            m->preempted_turns, (double)m->longest_own_stall_ns / 1e6, m->own_stalls_over_1ms);
}
