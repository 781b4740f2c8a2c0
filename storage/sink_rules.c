/* sink_rules.c - the rules in front of the sinks.
 *
 * Runs on the writer thread, never the socket thread: each batch's events
 * are evaluated in order (rules.h), the alerts travel in the batch to the
 * sink, which stores them in the transaction of their events, and once the
 * sink is done they are written as Falco's JSON or text lines (--alerts-out,
 * standard output: alert_line.h), so a reader of those lines finds the
 * event already committed. A new rule set
 * (SIGHUP) waits in `pending` and is installed between two batches.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "line_writer.h"
#include "log.h"
#include "process_history.h"
#include "sink.h"

struct rules_sink {
    struct sink base;
    struct sink *inner;
    struct rules_engine *engine;
    _Atomic(struct rule_set *) pending;   /* installed before the next batch */
    bool has_lines;
    struct alert_line_style style;
    struct line_writer lines;
    struct strbuf line;
    char *history_db;                     /* rebuilt from before the first batch, then NULL */
    struct process_history history;
    void (*on_alerts)(const struct alert_list *alerts, void *data);
    void *on_alerts_data;
    atomic_uint_fast64_t processes, evictions;   /* the engine's, after each batch (metrics) */
    atomic_uint_fast64_t seq[7];                  /* struct sink_sequences, field by field */
};

static void take_pending_rules(struct rules_sink *s)
{
    struct rule_set *rs = atomic_exchange(&s->pending, NULL);
    if (!rs)
        return;
    rules_engine_set_rules(s->engine, rs);
    struct rule_set_stats st;
    rule_set_get_stats(rs, &st);
    log_info("rules: %zu of %zu rules enabled from the next batch on", st.rules_enabled, st.rules);
}

static void rebuild_process_tables(struct rules_sink *s)
{
    if (!s->history_db)
        return;
    char err[256];
    struct process_history_stats st;
    if (process_history_load(&s->history, s->history_db, s->engine, &st, err, sizeof(err)) != 0)
        log_warn("rules: the process tables start empty: %s", err);
    else if (st.events)
        log_info("rules: process tables rebuilt from %llu recent process events of %llu connections",
                 (unsigned long long)st.events, (unsigned long long)st.connections);
    free(s->history_db);
    s->history_db = NULL;
}

static void evaluate(struct rules_sink *s, struct batch *b)
{
    alert_list_reset(&b->alerts);
    for (size_t i = 0; i < b->count; i++) {
        const struct event *ev = &b->events[i];
        if (ev->status != DECODE_OK)
            continue;
        uint64_t table = process_history_table(&s->history, ev, b->conns, b->nconns);
        if (table == ev->conn_id) {
            rules_engine_eval(s->engine, ev, i, &b->alerts);
        } else {
            struct event taken_over = *ev;   /* a reconnected sandbox: its earlier connection's processes */
            taken_over.conn_id = table;
            rules_engine_eval(s->engine, &taken_over, i, &b->alerts);
        }
    }
}

/* After the sink: a reader of these lines finds the events committed. */
static void write_alert_lines(struct rules_sink *s, struct batch *b)
{
    if (!s->has_lines || b->alerts.count == 0)
        return;
    struct batch_result r = {0};
    for (size_t i = 0; i < b->alerts.count; i++) {
        const struct alert *a = &b->alerts.items[i];
        strbuf_reset(&s->line);
        alert_line_render(&s->line, a, &s->style);
        if (s->line.failed)
            line_writer_lost(&s->lines, &r, "out of memory");
        else
            line_writer_add(&s->lines, s->line.data, s->line.len, &r);
    }
    line_writer_flush(&s->lines, &r);
    b->result.alert_lines_failed += r.failed;
}

static void publish_process_table(struct rules_sink *s)
{
    struct rules_engine_stats st;
    rules_engine_get_stats(s->engine, &st);
    atomic_store_explicit(&s->processes, st.processes, memory_order_relaxed);
    atomic_store_explicit(&s->evictions, st.process_evictions, memory_order_relaxed);
    const uint64_t seq[7] = {st.sequence_partials, st.sequence_bytes, st.sequence_started, st.sequence_evicted,
                             st.sequence_expired, st.sequence_cancelled, st.sequence_dropped};
    for (size_t i = 0; i < 7; i++)
        atomic_store_explicit(&s->seq[i], seq[i], memory_order_relaxed);
}

static void rules_sequences(struct sink *base, struct sink_sequences *out)
{
    struct rules_sink *s = (struct rules_sink *)base;
    uint64_t v[7];
    for (size_t i = 0; i < 7; i++)
        v[i] = atomic_load_explicit(&s->seq[i], memory_order_relaxed);
    *out = (struct sink_sequences){.partials = v[0], .bytes = v[1], .started = v[2], .evicted = v[3],
                                   .expired = v[4], .cancelled = v[5], .dropped = v[6]};
}

static void rules_process_table(struct sink *base, uint64_t *processes, uint64_t *evictions)
{
    struct rules_sink *s = (struct rules_sink *)base;
    *processes = atomic_load_explicit(&s->processes, memory_order_relaxed);
    *evictions = atomic_load_explicit(&s->evictions, memory_order_relaxed);
}

static void forget_closed_connections(struct rules_sink *s, const struct batch *b)
{
    for (size_t i = 0; i < b->nconns; i++)
        if (b->conns[i].close_ns)
            rules_engine_conn_closed(s->engine, process_history_forget(&s->history, b->conns[i].id));
}

static void rules_write_batch(struct sink *base, struct batch *b)
{
    struct rules_sink *s = (struct rules_sink *)base;
    take_pending_rules(s);
    rebuild_process_tables(s);
    evaluate(s, b);
    sink_write_batch(s->inner, b);
    /* the events have ids now: sequences' alerts and chains name their steps by them */
    rules_engine_batch_stored(s->engine, &b->alerts, b->result.first_event_id);
    write_alert_lines(s, b);
    if (s->on_alerts && b->alerts.count)
        s->on_alerts(&b->alerts, s->on_alerts_data);
    forget_closed_connections(s, b);
    publish_process_table(s);
}

/* The shutdown flags reach the sink inside, also one blocked in a write. */
static void rules_stopping(struct sink *base)
{
    struct rules_sink *s = (struct rules_sink *)base;
    if (atomic_load(&base->giving_up))
        sink_give_up(s->inner);
    if (atomic_load(&base->cut_off))
        sink_cut_off(s->inner);
}

static void rules_set_rules(struct sink *base, struct rule_set *rs)
{
    struct rules_sink *s = (struct rules_sink *)base;
    rule_set_free(atomic_exchange(&s->pending, rs));   /* one the writer never took */
}

static void rules_finish(struct sink *base, int64_t stopped_ns)
{
    struct rules_sink *s = (struct rules_sink *)base;
    sink_finish(s->inner, stopped_ns);
}

static void rules_idle(struct sink *base)
{
    struct rules_sink *s = (struct rules_sink *)base;
    sink_idle(s->inner);
}

static void rules_set_retention(struct sink *base, uint64_t retain_s, uint64_t max_db_bytes)
{
    struct rules_sink *s = (struct rules_sink *)base;
    sink_set_retention(s->inner, retain_s, max_db_bytes);
}

static void rules_handoff_soon(struct sink *base)
{
    struct rules_sink *s = (struct rules_sink *)base;
    sink_handoff_soon(s->inner);
}

static void rules_checking(struct sink *base, bool on)
{
    struct rules_sink *s = (struct rules_sink *)base;
    sink_checking(s->inner, on);
}

static void rules_handoff(struct sink *base)
{
    struct rules_sink *s = (struct rules_sink *)base;
    /* Sequences' partial matches live in this image's memory only: the
     * new one starts with none (docs/reference.md), said here. */
    uint64_t partials = atomic_load_explicit(&s->seq[0], memory_order_relaxed);
    if (partials)
        log_info("rules: %llu partial matches of sequences end with this image (a restart keeps none): chains "
                 "begun before it do not complete after it", (unsigned long long)partials);
    sink_handoff(s->inner);
}

static uint64_t rules_retention_deleted(struct sink *base)
{
    struct rules_sink *s = (struct rules_sink *)base;
    return sink_retention_deleted(s->inner);
}

static void rules_close(struct sink *base)
{
    struct rules_sink *s = (struct rules_sink *)base;
    if (s->inner)
        sink_close(s->inner);
    rules_engine_free(s->engine);
    rule_set_free(atomic_load(&s->pending));
    if (s->has_lines)
        line_writer_close(&s->lines);
    strbuf_free(&s->line);
    free(s->history_db);
    process_history_free(&s->history);
    free(s);
}

/* Always on the writer thread, whatever the sink inside: evaluating rules on
 * the socket thread would hold up reading. */
static const struct sink_ops rules_ops = {
    .name = "rules",
    .needs_writer_thread = true,
    .write_batch = rules_write_batch,
    .idle = rules_idle,
    .set_retention = rules_set_retention,
    .retention_deleted = rules_retention_deleted,
    .process_table = rules_process_table,
    .sequences = rules_sequences,
    .handoff_soon = rules_handoff_soon,
    .checking = rules_checking,
    .handoff = rules_handoff,
    .finish = rules_finish,
    .close = rules_close,
    .stopping = rules_stopping,
    .set_rules = rules_set_rules,
};

struct sink *sink_rules_open(struct sink *inner, struct rule_set *rules, const struct sink_rules_options *o,
                             char *err, size_t errlen)
{
    struct rules_sink *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        sink_close(inner);
        rule_set_free(rules);
        return NULL;
    }
    s->base.ops = &rules_ops;
    s->base.first_conn_id = inner->first_conn_id;
    s->inner = inner;
    s->on_alerts = o->on_alerts;
    s->on_alerts_data = o->on_alerts_data;
    atomic_init(&s->pending, NULL);
    s->engine = rules_engine_new(&o->engine);
    if (!s->engine || (o->history_db && !(s->history_db = strdup(o->history_db)))) {
        snprintf(err, errlen, "out of memory");
        rule_set_free(rules);
        rules_close(&s->base);
        return NULL;
    }
    rules_engine_set_rules(s->engine, rules);   /* no writer thread yet */
    if (o->alerts_path) {
        if (line_writer_open(&s->lines, "alerts", o->alerts_path, o->alerts_max_bytes, o->alerts_keep,
                             &s->base.cut_off, err, errlen) != 0) {
            rules_close(&s->base);
            return NULL;
        }
        s->has_lines = true;
        s->style = o->alerts_style;
    }
    return &s->base;
}

void sink_set_rules(struct sink *s, struct rule_set *rs)
{
    if (s->ops->set_rules)
        s->ops->set_rules(s, rs);
    else
        rule_set_free(rs);
}
