/* sink_containers.c - container records in front of every other stage.
 *
 * On the writer thread, before the rules see a batch: each (connection,
 * container id) the batch names for the first time waits for that
 * container's first lookup (container_view_wait), at most
 * CONTAINERS_BATCH_WAIT_NS for the whole batch, so the rules evaluate a
 * container's first events with its names in the normal case, and a slow
 * file system holds the writer up by that much at most (the lookup goes on
 * on the cache's thread; later events get the record). The socket thread
 * never waits for any of it. The records the cache published since the
 * previous batch go with the batch, and the SQLite sink writes them as
 * container_info rows in its transaction; a batch that could not be stored
 * hands them to the next one. Each connection snapshot of a batch gets
 * the connection's sandbox (container_cache_binding), which the SQLite sink
 * stores with it: the readers give a container's names to the events of
 * its own sandbox's connections only. At start, after a restart, the
 * connections still open keep the sandbox the database says they had.
 */
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "gvisor/container.pb-c.h"
#include "log.h"
#include "sink.h"

#define CONTAINERS_BATCH_WAIT_NS 100000000LL  /* 100 ms per batch, at most */
#define CONTAINERS_PUBLISHED_MAX 256          /* records taken per batch (the rest with the next) */

struct containers_sink {
    struct sink base;
    struct sink_ops ops;             /* containers_ops, less what inner does not do */
    struct sink *inner;
    struct container_cache *cache;
    struct container_view *view;
    const struct container_record **carry;   /* records of batches that failed */
    size_t ncarry;
    atomic_uint_fast64_t foreign, over_limit;   /* the view's, after each batch (metrics) */
};

/* The container an event names: container/start's id, else its context's. */
static const char *container_of(const struct event *ev)
{
    if (ev->status != DECODE_OK)
        return NULL;
    if (ev->header.message_type == 1) {
        const char *id = ((const Gvisor__Container__Start *)ev->msg)->id;
        if (id && id[0])
            return id;
    }
    return ev->context && ev->context->container_id && ev->context->container_id[0] ? ev->context->container_id
                                                                                     : NULL;
}

static void wait_for_new_containers(struct containers_sink *s, const struct batch *b)
{
    int64_t started = monotonic_ns(), left = CONTAINERS_BATCH_WAIT_NS;
    for (size_t i = 0; i < b->count; i++) {
        const char *id = container_of(&b->events[i]);
        if (!id)
            continue;
        container_view_wait(s->view, b->events[i].conn_id, id, left > 0 ? left : 0);
        left = CONTAINERS_BATCH_WAIT_NS - (monotonic_ns() - started);
    }
}

static void attach_records(struct containers_sink *s, struct batch *b)
{
    for (size_t i = 0; i < s->ncarry; i++) {
        if (batch_add_container(b, s->carry[i]) != 0)
            log_warn("containers: out of memory: a container's row waits for a later batch");
        container_record_release(s->carry[i]);
    }
    s->ncarry = 0;
    const struct container_record *fresh[CONTAINERS_PUBLISHED_MAX];
    size_t n = container_cache_take_published(s->cache, fresh, CONTAINERS_PUBLISHED_MAX);
    for (size_t i = 0; i < n; i++) {
        batch_add_container(b, fresh[i]);
        container_record_release(fresh[i]);
    }
}

/* Nothing of the batch was stored: its records go with the next one. */
static void keep_unstored(struct containers_sink *s, struct batch *b)
{
    if (!b->ncontainers || b->result.stored || !b->result.failed)
        return;
    const struct container_record **n = realloc(s->carry, b->ncontainers * sizeof(*n));
    if (!n)
        return;
    s->carry = n;
    for (size_t i = 0; i < b->ncontainers; i++) {
        container_record_ref(b->containers[i]);
        s->carry[s->ncarry++] = b->containers[i];
    }
}

/* Each snapshot gets its connection's sandbox, when known. */
static void note_sandboxes(struct containers_sink *s, struct batch *b)
{
    for (size_t i = 0; i < b->nconns; i++) {
        struct conn_record *rec = &b->conns[i];
        struct container_binding bd;
        if (rec->sandbox[0] || !container_cache_binding(s->cache, rec->id, NULL, &bd))
            continue;
        memcpy(rec->sandbox, bd.sandbox, sizeof(rec->sandbox));
        rec->sandbox_bound_by = (uint8_t)bd.by;
    }
}

static void containers_write_batch(struct sink *base, struct batch *b)
{
    struct containers_sink *s = (struct containers_sink *)base;
    wait_for_new_containers(s, b);
    attach_records(s, b);
    note_sandboxes(s, b);
    sink_write_batch(s->inner, b);
    keep_unstored(s, b);
    for (size_t i = 0; i < b->nconns; i++)
        if (b->conns[i].close_ns) {
            container_view_conn_closed(s->view, b->conns[i].id);
            container_cache_conn_closed(s->cache, b->conns[i].id);
        }
    atomic_store_explicit(&s->foreign, container_view_foreign(s->view), memory_order_relaxed);
    atomic_store_explicit(&s->over_limit, container_view_over_limit(s->view), memory_order_relaxed);
}

static void containers_stats(struct sink *base, struct container_cache_stats *st, uint64_t *foreign,
                             uint64_t *over_limit)
{
    struct containers_sink *s = (struct containers_sink *)base;
    container_cache_get_stats(s->cache, st);
    *foreign = atomic_load_explicit(&s->foreign, memory_order_relaxed);
    *over_limit = atomic_load_explicit(&s->over_limit, memory_order_relaxed);
}

static void containers_stopping(struct sink *base)
{
    struct containers_sink *s = (struct containers_sink *)base;
    if (atomic_load(&base->giving_up))
        sink_give_up(s->inner);
    if (atomic_load(&base->cut_off))
        sink_cut_off(s->inner);
}

static void containers_idle(struct sink *base) { sink_idle(((struct containers_sink *)base)->inner); }

static void containers_handoff_soon(struct sink *base)
{
    sink_handoff_soon(((struct containers_sink *)base)->inner);
}

static void containers_checking(struct sink *base, bool on)
{
    sink_checking(((struct containers_sink *)base)->inner, on);
}

static void containers_handoff(struct sink *base) { sink_handoff(((struct containers_sink *)base)->inner); }

static void containers_finish(struct sink *base, int64_t stopped_ns)
{
    sink_finish(((struct containers_sink *)base)->inner, stopped_ns);
}

static void containers_set_retention(struct sink *base, uint64_t retain_s, uint64_t max_db_bytes)
{
    sink_set_retention(((struct containers_sink *)base)->inner, retain_s, max_db_bytes);
}

static uint64_t containers_retention_deleted(struct sink *base)
{
    return sink_retention_deleted(((struct containers_sink *)base)->inner);
}

static void containers_process_table(struct sink *base, uint64_t *processes, uint64_t *evictions)
{
    sink_process_table(((struct containers_sink *)base)->inner, processes, evictions);
}

static void containers_sequences(struct sink *base, struct sink_sequences *out)
{
    sink_sequences(((struct containers_sink *)base)->inner, out);
}

static void containers_set_rules(struct sink *base, struct rule_set *rs)
{
    sink_set_rules(((struct containers_sink *)base)->inner, rs);
}

/* The rules inside use the view: they close first, then the cache. */
static void containers_close(struct sink *base)
{
    struct containers_sink *s = (struct containers_sink *)base;
    if (s->inner)
        sink_close(s->inner);
    for (size_t i = 0; i < s->ncarry; i++)
        container_record_release(s->carry[i]);
    free(s->carry);
    container_view_free(s->view);
    container_cache_close(s->cache);
    free(s);
}

static const struct sink_ops containers_ops = {
    .name = "containers",
    .needs_writer_thread = true,   /* it may wait for a lookup: never on the socket thread */
    .write_batch = containers_write_batch,
    .idle = containers_idle,
    .set_retention = containers_set_retention,
    .retention_deleted = containers_retention_deleted,
    .process_table = containers_process_table,
    .sequences = containers_sequences,
    .handoff_soon = containers_handoff_soon,
    .checking = containers_checking,
    .handoff = containers_handoff,
    .finish = containers_finish,
    .close = containers_close,
    .stopping = containers_stopping,
    .set_rules = containers_set_rules,
    .container_stats = containers_stats,
};

/* After a restart: the connections the database says are open keep the
 * sandbox it says they had (a sandbox's first event in this image may be
 * anything its workload sends: it binds nothing). */
static void restore_bindings(struct container_cache *cache, const char *db_path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT id, sandbox FROM connections WHERE close_ns IS NULL AND sandbox IS NOT NULL",
                           -1, &st, NULL) == SQLITE_OK) {
        unsigned n = 0;
        while (sqlite3_step(st) == SQLITE_ROW) {
            container_cache_conn_restored(cache, (uint64_t)sqlite3_column_int64(st, 0),
                                          (const char *)sqlite3_column_text(st, 1));
            n++;
        }
        if (n)
            log_info("containers: %u connection%s still open keep%s the sandbox %s had", n, n == 1 ? "" : "s",
                     n == 1 ? "s" : "", n == 1 ? "it" : "they");
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
}

struct sink *sink_containers_open(struct sink *inner, struct container_cache *cache, struct container_view *view,
                                  const char *history_db, char *err, size_t errlen)
{
    struct containers_sink *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        sink_close(inner);
        container_view_free(view);
        container_cache_close(cache);
        return NULL;
    }
    s->ops = containers_ops;
    if (!inner->ops->process_table)
        s->ops.process_table = NULL;   /* no rules inside: no process tables to report */
    if (!inner->ops->sequences)
        s->ops.sequences = NULL;       /* ... nor sequences */
    s->base.ops = &s->ops;
    s->base.first_conn_id = inner->first_conn_id;
    s->inner = inner;
    s->cache = cache;
    s->view = view;
    if (history_db)
        restore_bindings(cache, history_db);
    return &s->base;
}
