#include "pipeline.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"

#define PIPELINE_IDLE_NS 1000000000ull   /* sink upkeep after a second without batches */

static void collect(struct pipeline *p, struct batch *b)
{
    batch_counts_add(&p->counts, &b->counts);
    p->result.stored += b->result.stored;
    p->result.discarded += b->result.discarded;
    p->result.failed += b->result.failed;
    if (b->result.write_ns > 0)
        histogram_observe(&p->write_latency, b->result.write_ns);
    p->batches_written++;
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
    uv_mutex_lock(&p->lock);
    struct batch *done = p->done;
    p->done = NULL;
    uv_mutex_unlock(&p->lock);
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
    uint64_t count;
    /* Cleared before the list is taken: a batch pushed after that writes again. */
    while (read(p->done_fd, &count, sizeof(count)) < 0 && errno == EINTR)
        ;
    if (collect_done(p) && p->on_space)
        p->on_space(p->cb_data);
}

/* Writer thread, after pushing to the done list. */
static void wake_loop(struct pipeline *p)
{
    const uint64_t one = 1;
    while (write(p->done_fd, &one, sizeof(one)) < 0 && errno == EINTR)
        ;
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

static void writer_main(void *arg)
{
    struct pipeline *p = arg;
    uv_mutex_lock(&p->lock);
    for (;;) {
        while (!p->todo_head && !p->stopping) {
            if (uv_cond_timedwait(&p->wake, &p->lock, PIPELINE_IDLE_NS) == UV_ETIMEDOUT) {
                uv_mutex_unlock(&p->lock);
                sink_idle(p->sink);
                uv_mutex_lock(&p->lock);
            }
        }
        struct batch *b = p->todo_head;
        if (!b)
            break;   /* stopping and nothing left */
        p->todo_head = b->next;
        if (!p->todo_head)
            p->todo_tail = NULL;
        uv_mutex_unlock(&p->lock);

        timed_write(p->sink, b);

        uv_mutex_lock(&p->lock);
        b->next = p->done;
        p->done = b;
        p->in_flight--;
        uv_mutex_unlock(&p->lock);
        wake_loop(p);
        uv_mutex_lock(&p->lock);
    }
    uv_mutex_unlock(&p->lock);
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
                           .cb_data = cb_data, .done_fd = -1};
    if (p->cfg.queue_max < 1)
        p->cfg.queue_max = 1;
    p->current = take_free_batch(p);
    if (!p->current)
        return -1;
    if (uv_mutex_init(&p->lock) || uv_cond_init(&p->wake))
        return -1;
    p->done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (p->done_fd < 0 || uv_poll_init(loop, &p->done_poll, p->done_fd) ||
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
    uv_mutex_lock(&p->lock);
    b->next = NULL;
    if (p->todo_tail)
        p->todo_tail->next = b;
    else
        p->todo_head = b;
    p->todo_tail = b;
    p->in_flight++;
    uv_cond_signal(&p->wake);
    uv_mutex_unlock(&p->lock);
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

size_t pipeline_in_flight(struct pipeline *p)
{
    uv_mutex_lock(&p->lock);
    size_t n = p->in_flight;
    uv_mutex_unlock(&p->lock);
    return n;
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
        atomic_store(&p->sink->giving_up, true);
        uv_mutex_lock(&p->lock);
        p->stopping = true;
        uv_cond_signal(&p->wake);
        uv_mutex_unlock(&p->lock);
        uv_thread_join(&p->writer);
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
    uv_mutex_destroy(&p->lock);
    uv_cond_destroy(&p->wake);
    if (p->done_fd >= 0)
        close(p->done_fd);
    p->done_fd = -1;
}
