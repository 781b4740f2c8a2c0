#include "pipeline.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"

#define PIPELINE_IDLE_MS 1000   /* sink upkeep after a second without batches */
/* Shutdown: how long the writer may take over what is queued before the
 * writes that block are given up (sink_cut_off), and how often a blocked
 * write is then interrupted (one signal can land just before the write()). */
#define PIPELINE_FINISH_GRACE_MS 2000
#define PIPELINE_INTERRUPT_EVERY_MS 20

/* ---- lock-free lists and their wake-ups ---- */

static void list_push(_Atomic(struct batch *) *head, struct batch *b)
{
    struct batch *old = atomic_load_explicit(head, memory_order_relaxed);
    do
        b->next = old;
    while (!atomic_compare_exchange_weak_explicit(head, &old, b, memory_order_release, memory_order_relaxed));
}

static struct batch *list_take_all(_Atomic(struct batch *) *head)
{
    return atomic_exchange_explicit(head, NULL, memory_order_acquire);
}

static struct batch *list_reverse(struct batch *b)
{
    struct batch *out = NULL;
    while (b) {
        struct batch *next = b->next;
        b->next = out;
        out = b;
        b = next;
    }
    return out;
}

/* Pushed first, then signalled; the waiter clears the signal, then takes
 * the list: a push it missed signals again, so no wake-up is lost. */
static void signal_fd(int fd)
{
    const uint64_t one = 1;
    while (write(fd, &one, sizeof(one)) < 0 && errno == EINTR)
        ;
}

static void clear_fd(int fd)
{
    uint64_t count;
    while (read(fd, &count, sizeof(count)) < 0 && errno == EINTR)
        ;
}

static void collect(struct pipeline *p, struct batch *b)
{
    share_release(b);
    batch_counts_add(&p->counts, &b->counts);
    p->result.stored += b->result.stored;
    p->result.discarded += b->result.discarded;
    p->result.failed += b->result.failed;
    alert_tally_add(&p->alerts, &b->alerts);
    p->alerts.lines_failed += b->result.alert_lines_failed;
    if (b->result.write_ns > 0)
        histogram_observe(&p->write_latency, b->result.write_ns);
    if (b->result.stored > 0)
        p->batches_stored++;
    if (p->batches > p->cfg.queue_max + 1) {
        /* An extra batch sealed past the limit: give its memory back. */
        batch_free(b);
        p->batches--;
        return;
    }
    batch_reset(b);
    b->next = p->free_list;
    p->free_list = b;
}

/* Loop thread: take back what the writer finished. */
static size_t collect_done(struct pipeline *p)
{
    struct batch *done = list_take_all(&p->done);
    size_t n = 0;
    while (done) {
        struct batch *next = done->next;
        collect(p, done);
        done = next;
        n++;
    }
    return n;
}

static void on_done_readable(uv_poll_t *h, int status, int events)
{
    struct pipeline *p = h->data;
    (void)status;
    (void)events;
    clear_fd(p->done_fd);
    if (collect_done(p) && p->on_space)
        p->on_space(p->cb_data);
}

/* The time is kept in the batch, not in shared totals: the loop thread adds
 * it to the histogram when the batch comes back, so no lock is needed. */
static void timed_write(struct sink *sink, struct batch *b)
{
    int64_t start = monotonic_ns();
    sink_write_batch(sink, b);
    int64_t took = monotonic_ns() - start;
    b->result.write_ns = took > 0 ? took : 1;
}

/* Writer thread: sleeps until batches come, or a second passes (upkeep). */
static void wait_for_batches(struct pipeline *p)
{
    struct pollfd pfd = {.fd = p->todo_fd, .events = POLLIN};
    int n = poll(&pfd, 1, PIPELINE_IDLE_MS);
    if (n == 0)
        sink_idle(p->sink);
    else if (n > 0)
        clear_fd(p->todo_fd);
}

/* The signal that interrupts the writer's blocked write at shutdown: a
 * real-time one nothing else uses, handled without SA_RESTART so the
 * write() returns (EINTR or a short count) instead of resuming. */
static int interrupt_signal(void)
{
    return SIGRTMIN;
}

static void on_interrupt(int sig)
{
    (void)sig;
}

static void writer_main(void *arg)
{
    struct pipeline *p = arg;
    pthread_setname_np(pthread_self(), "writer");   /* top -H, bench/rules.sh's writer CPU */
    /* A restarted image starts with signals blocked (handoff.c). */
    sigset_t interrupt;
    sigemptyset(&interrupt);
    sigaddset(&interrupt, interrupt_signal());
    pthread_sigmask(SIG_UNBLOCK, &interrupt, NULL);
    for (;;) {
        /* stopping is read before the list: what was submitted before it
         * was set is in the list then. */
        bool stopping = atomic_load(&p->stopping);
        struct batch *b = list_reverse(list_take_all(&p->todo));   /* oldest first: ids and the chain */
        if (!b) {
            if (stopping)
                break;
            wait_for_batches(p);
            continue;
        }
        while (b) {
            struct batch *next = b->next;
            timed_write(p->sink, b);
            list_push(&p->done, b);
            atomic_fetch_sub(&p->in_flight, 1);
            signal_fd(p->done_fd);
            b = next;
        }
    }
}

static struct batch *take_free_batch(struct pipeline *p)
{
    struct batch *b = p->free_list;
    if (b) {
        p->free_list = b->next;
        b->next = NULL;
        return b;
    }
    b = batch_new(&p->cfg.limits);
    if (b)
        p->batches++;
    return b;
}

int pipeline_init(struct pipeline *p, uv_loop_t *loop, struct sink *sink, const struct pipeline_config *cfg,
                  pipeline_space_cb on_space, pipeline_seal_cb on_seal, void *cb_data)
{
    *p = (struct pipeline){.loop = loop, .sink = sink, .cfg = *cfg, .on_space = on_space, .on_seal = on_seal,
                           .cb_data = cb_data, .todo_fd = -1, .done_fd = -1};
    if (p->cfg.queue_max < 1)
        p->cfg.queue_max = 1;
    p->current = take_free_batch(p);
    if (!p->current)
        return -1;
    p->todo_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    p->done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (p->todo_fd < 0 || p->done_fd < 0 || uv_poll_init(loop, &p->done_poll, p->done_fd) ||
        uv_poll_start(&p->done_poll, UV_READABLE, on_done_readable))
        return -1;
    p->done_poll.data = p;
    if (sink->ops->needs_writer_thread) {
        if (uv_thread_create(&p->writer, writer_main, p))
            return -1;
        p->writer_running = true;
    }
    return 0;
}

bool pipeline_current_empty(const struct pipeline *p)
{
    const struct batch *b = p->current;
    return b->count == 0 && b->nconns == 0 && b->counts.received == 0;
}

static void submit(struct pipeline *p, struct batch *b)
{
    batch_counts_add(&p->submitted, &b->counts);
    if (!p->writer_running) {
        timed_write(p->sink, b);
        collect(p, b);
        return;
    }
    atomic_fetch_add(&p->in_flight, 1);
    list_push(&p->todo, b);
    signal_fd(p->todo_fd);
}

int pipeline_seal(struct pipeline *p)
{
    if (p->on_seal)
        p->on_seal(p->current, p->cb_data);
    if (pipeline_current_empty(p))
        return 0;
    struct batch *next = take_free_batch(p);
    if (!next)
        return -1;
    submit(p, p->current);
    p->current = next;
    return 0;
}

bool pipeline_saturated(const struct pipeline *p)
{
    return !p->free_list && p->batches > p->cfg.queue_max;
}

bool pipeline_exhausted(const struct pipeline *p)
{
    return !p->free_list && p->batches > p->cfg.queue_max + p->cfg.reserve;
}

size_t pipeline_reserve_left(const struct pipeline *p)
{
    if (!pipeline_saturated(p))
        return p->cfg.reserve;
    size_t used = p->batches - 1 - p->cfg.queue_max;   /* sealed past queue_max (all but the open one) */
    return used < p->cfg.reserve ? p->cfg.reserve - used : 0;
}

size_t pipeline_in_flight(struct pipeline *p)
{
    return atomic_load(&p->in_flight);
}

/* Waits for the writer to write what is queued and stop. A sink whose
 * reader stopped reading would keep it in write() for ever: after the
 * grace the sink is cut off and the blocked write interrupted until the
 * writer is out, its remaining events counted as failed. */
static void join_writer(struct pipeline *p)
{
    struct timespec deadline = realtime_in_ms(PIPELINE_FINISH_GRACE_MS);
    if (pthread_timedjoin_np(p->writer, NULL, &deadline) != ETIMEDOUT)
        return;
    log_warn("shutdown: the %s sink is still writing after %d ms (a reader that stopped reading?); giving up "
             "writes that block, their events counted as failed", p->sink->ops->name, PIPELINE_FINISH_GRACE_MS);
    struct sigaction sa = {.sa_handler = on_interrupt};   /* no SA_RESTART */
    sigemptyset(&sa.sa_mask);
    sigaction(interrupt_signal(), &sa, NULL);
    sink_cut_off(p->sink);
    do {
        pthread_kill(p->writer, interrupt_signal());
        deadline = realtime_in_ms(PIPELINE_INTERRUPT_EVERY_MS);
    } while (pthread_timedjoin_np(p->writer, NULL, &deadline) == ETIMEDOUT);
}

void pipeline_finish(struct pipeline *p)
{
    if (p->on_seal)
        p->on_seal(p->current, p->cb_data);   /* last connection snapshots */
    if (!pipeline_current_empty(p)) {
        submit(p, p->current);
        p->current = NULL;
    }
    if (p->writer_running) {
        sink_give_up(p->sink);
        atomic_store(&p->stopping, true);
        signal_fd(p->todo_fd);
        join_writer(p);
        p->writer_running = false;
    }
    collect_done(p);
    if (p->current) {
        /* Never sealed (nothing in it): back to the free list, not counted. */
        p->current->next = p->free_list;
        p->free_list = p->current;
        p->current = NULL;
    }
    uv_close((uv_handle_t *)&p->done_poll, NULL);
}

void pipeline_free(struct pipeline *p)
{
    while (p->free_list) {
        struct batch *b = p->free_list;
        p->free_list = b->next;
        batch_free(b);
    }
    alert_tally_free(&p->alerts);
    if (p->todo_fd >= 0)
        close(p->todo_fd);
    if (p->done_fd >= 0)
        close(p->done_fd);
    p->todo_fd = p->done_fd = -1;
}
