/* sink_tee.c - several sinks at once ("--sink sqlite,ndjson"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "sink.h"

#define TEE_MAX 8

/* A later sink that fails fails every batch (a full disk): one log line
 * per this interval says how many events it lost meanwhile. */
#define TEE_LOG_INTERVAL_NS (10 * 1000000000LL)

/* What a later sink could not write: the first sink has those events. */
struct tee_losses {
    uint64_t total;
    uint64_t unlogged;
    int64_t last_log_ns;
    bool logged;
};

struct tee_sink {
    struct sink base;
    struct sink *sinks[TEE_MAX];
    struct tee_losses lost[TEE_MAX];   /* [0] unused: the first sink's are the batch's counts */
    size_t n;
};

static void log_losses(const struct tee_sink *t, size_t i, const char *when)
{
    const struct tee_losses *l = &t->lost[i];
    log_error("%s sink: %llu events not written%s (%llu in all; the %s sink has them; logged at most every %lld s)",
              t->sinks[i]->ops->name, (unsigned long long)l->unlogged, when, (unsigned long long)l->total,
              t->sinks[0]->ops->name, TEE_LOG_INTERVAL_NS / 1000000000LL);
}

static void note_losses(struct tee_sink *t, size_t i, uint64_t failed)
{
    struct tee_losses *l = &t->lost[i];
    l->total += failed;
    l->unlogged += failed;
    int64_t now = monotonic_ns();
    if (l->logged && now - l->last_log_ns < TEE_LOG_INTERVAL_NS)
        return;
    log_losses(t, i, "");
    l->logged = true;
    l->last_log_ns = now;
    l->unlogged = 0;
}

/* The shutdown flags reach every sink, also one blocked in a write. */
static void tee_stopping(struct sink *base)
{
    struct tee_sink *t = (struct tee_sink *)base;
    bool giving_up = atomic_load(&base->giving_up), cut_off = atomic_load(&base->cut_off);
    for (size_t i = 0; i < t->n; i++) {
        if (giving_up)
            sink_give_up(t->sinks[i]);
        if (cut_off)
            sink_cut_off(t->sinks[i]);
    }
}

static void tee_write_batch(struct sink *base, struct batch *b)
{
    struct tee_sink *t = (struct tee_sink *)base;
    tee_stopping(base);   /* a flag set directly, not through sink_give_up */
    sink_write_batch(t->sinks[0], b);
    struct batch_result primary = b->result;
    for (size_t i = 1; i < t->n; i++) {
        memset(&b->result, 0, sizeof(b->result));
        sink_write_batch(t->sinks[i], b);
        if (b->result.failed)
            note_losses(t, i, b->result.failed);
    }
    b->result = primary;
}

static void tee_finish(struct sink *base, int64_t stopped_ns)
{
    struct tee_sink *t = (struct tee_sink *)base;
    for (size_t i = 0; i < t->n; i++) {
        sink_finish(t->sinks[i], stopped_ns);
        if (t->lost[i].unlogged)
            log_losses(t, i, " since the last report, at the end of this run");
    }
}

static void tee_handoff_soon(struct sink *base)
{
    struct tee_sink *t = (struct tee_sink *)base;
    for (size_t i = 0; i < t->n; i++)
        sink_handoff_soon(t->sinks[i]);
}

static void tee_checking(struct sink *base, bool on)
{
    struct tee_sink *t = (struct tee_sink *)base;
    for (size_t i = 0; i < t->n; i++)
        sink_checking(t->sinks[i], on);
}

static void tee_handoff(struct sink *base)
{
    struct tee_sink *t = (struct tee_sink *)base;
    for (size_t i = 0; i < t->n; i++)
        sink_handoff(t->sinks[i]);
}

static void tee_set_retention(struct sink *base, uint64_t retain_s, uint64_t max_db_bytes)
{
    struct tee_sink *t = (struct tee_sink *)base;
    for (size_t i = 0; i < t->n; i++)
        sink_set_retention(t->sinks[i], retain_s, max_db_bytes);
}

static uint64_t tee_retention_deleted(struct sink *base)
{
    struct tee_sink *t = (struct tee_sink *)base;
    uint64_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += sink_retention_deleted(t->sinks[i]);
    return n;
}

static void tee_idle(struct sink *base)
{
    struct tee_sink *t = (struct tee_sink *)base;
    for (size_t i = 0; i < t->n; i++)
        sink_idle(t->sinks[i]);
}

static void tee_close(struct sink *base)
{
    struct tee_sink *t = (struct tee_sink *)base;
    for (size_t i = 0; i < t->n; i++)
        sink_close(t->sinks[i]);
    free(t);
}

static const struct sink_ops tee_ops_threaded = {
    .name = "tee", .needs_writer_thread = true, .write_batch = tee_write_batch,
    .handoff_soon = tee_handoff_soon, .checking = tee_checking, .handoff = tee_handoff, .finish = tee_finish,
    .set_retention = tee_set_retention, .retention_deleted = tee_retention_deleted, .idle = tee_idle,
    .close = tee_close, .stopping = tee_stopping};
static const struct sink_ops tee_ops_inline = {
    .name = "tee", .needs_writer_thread = false, .write_batch = tee_write_batch,
    .handoff_soon = tee_handoff_soon, .checking = tee_checking, .handoff = tee_handoff, .finish = tee_finish,
    .set_retention = tee_set_retention, .retention_deleted = tee_retention_deleted, .idle = tee_idle,
    .close = tee_close, .stopping = tee_stopping};

struct sink *sink_tee_open(struct sink **sinks, size_t n, char *err, size_t errlen)
{
    if (n == 0) {
        snprintf(err, errlen, "no sink given");
        return NULL;
    }
    if (n == 1)
        return sinks[0];
    struct tee_sink *t = calloc(1, sizeof(*t));
    if (!t || n > TEE_MAX) {
        snprintf(err, errlen, n > TEE_MAX ? "at most %d sinks at once" : "out of memory", TEE_MAX);
        free(t);
        for (size_t i = 0; i < n; i++)
            sink_close(sinks[i]);
        return NULL;
    }
    bool threaded = false;
    t->base.first_conn_id = 1;
    for (size_t i = 0; i < n; i++) {
        t->sinks[i] = sinks[i];
        threaded |= sinks[i]->ops->needs_writer_thread;
        if (sinks[i]->first_conn_id > t->base.first_conn_id)
            t->base.first_conn_id = sinks[i]->first_conn_id;
    }
    t->n = n;
    t->base.ops = threaded ? &tee_ops_threaded : &tee_ops_inline;
    return &t->base;
}
