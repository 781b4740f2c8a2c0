/* sink_tee.c - several sinks at once ("--sink sqlite,ndjson"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sink.h"

#define TEE_MAX 8

struct tee_sink {
    struct sink base;
    struct sink *sinks[TEE_MAX];
    size_t n;
};

static void tee_write_batch(struct sink *base, struct batch *b)
{
    struct tee_sink *t = (struct tee_sink *)base;
    bool giving_up = atomic_load(&base->giving_up);
    for (size_t i = 0; i < t->n; i++)
        atomic_store(&t->sinks[i]->giving_up, giving_up);
    sink_write_batch(t->sinks[0], b);
    struct batch_result primary = b->result;
    for (size_t i = 1; i < t->n; i++) {
        memset(&b->result, 0, sizeof(b->result));
        sink_write_batch(t->sinks[i], b);
        if (b->result.failed)
            log_error("%s sink: %llu events of a batch not written (the %s sink has them)", t->sinks[i]->ops->name,
                      (unsigned long long)b->result.failed, t->sinks[0]->ops->name);
    }
    b->result = primary;
}

static void tee_finish(struct sink *base, int64_t stopped_ns)
{
    struct tee_sink *t = (struct tee_sink *)base;
    for (size_t i = 0; i < t->n; i++)
        sink_finish(t->sinks[i], stopped_ns);
}

static void tee_set_retention(struct sink *base, uint64_t retain_s, uint64_t max_db_bytes)
{
    struct tee_sink *t = (struct tee_sink *)base;
    for (size_t i = 0; i < t->n; i++)
        sink_set_retention(t->sinks[i], retain_s, max_db_bytes);
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

/* The writer thread's flag must reach every sink it drives. */
static const struct sink_ops tee_ops_threaded = {
    .name = "tee", .needs_writer_thread = true, .write_batch = tee_write_batch, .finish = tee_finish,
    .set_retention = tee_set_retention, .idle = tee_idle, .close = tee_close};
static const struct sink_ops tee_ops_inline = {
    .name = "tee", .needs_writer_thread = false, .write_batch = tee_write_batch, .finish = tee_finish,
    .set_retention = tee_set_retention, .idle = tee_idle, .close = tee_close};

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
