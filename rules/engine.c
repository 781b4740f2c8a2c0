/* engine.c - the rules engine: the process table, the rules indexed by
 * event type, the alert limits and alert lists (rules.h). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "container.h"
#include "drops.h"
#include "filter.h"
#include "gvisor/container.pb-c.h"
#include "json.h"
#include "render.h"
#include "ruleset.h"
#include "rules.h"
#include "sequence.h"
#include "throttle.h"

struct rules_engine {
    struct rules_engine_config cfg;
    char *hostname;
    struct rule_set *rs;
    struct proctab *pt;
    struct throttle throttle;
    struct drop_monitor drops;    /* RULES_DROP_RULE, when cfg.drop_alerts */
    struct field_slot *slots;
    size_t nslots;
    uint32_t gen;
    uint64_t num;
    struct fdinfo fd;
    struct strbuf fdname, text, fields, json;
    struct rules_engine_stats stats;
    struct seq_state *seq;        /* sequences' partial matches (sequence_match.c) */
    struct strbuf seq_json;
};

/* The alert_list's strings: an arena, so reset keeps the memory. */
struct alert_store {
    struct arena arena;
};

void rules_engine_config_defaults(struct rules_engine_config *cfg)
{
    *cfg = (struct rules_engine_config){.hostname = "localhost", .max_processes = RULES_DEFAULT_MAX_PROCESSES,
                                        .matching = RULES_DEFAULT_MATCHING, .rate = RULES_DEFAULT_RATE,
                                        .burst = RULES_DEFAULT_BURST, .ceiling = RULES_DEFAULT_CEILING,
                                        .ceiling_burst = RULES_DEFAULT_CEILING_BURST,
                                        .output_field_max = RULES_DEFAULT_OUTPUT_FIELD_MAX,
                                        .sequence_max_bytes = RULES_DEFAULT_SEQUENCE_BYTES,
                                        .sequence_max_per_group = RULES_DEFAULT_SEQUENCE_PER_GROUP, .drop_alerts = true,
                                        .drop_threshold = RULES_DEFAULT_DROP_THRESHOLD,
                                        .drop_rate = RULES_DEFAULT_DROP_RATE, .drop_burst = RULES_DEFAULT_DROP_BURST};
}

int rules_matching_parse(const char *s, enum rules_matching *out)
{
    if (strcasecmp(s, "first") == 0)
        *out = RULES_MATCH_FIRST;
    else if (strcasecmp(s, "all") == 0)
        *out = RULES_MATCH_ALL;
    else
        return -1;
    return 0;
}

const char *rules_matching_name(enum rules_matching m) { return m == RULES_MATCH_ALL ? "all" : "first"; }

static int64_t monotonic_clock(void *data)
{
    (void)data;
    return monotonic_ns();
}

struct rules_engine *rules_engine_new(const struct rules_engine_config *cfg)
{
    struct rules_engine *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->cfg = *cfg;
    e->hostname = strdup(cfg->hostname ? cfg->hostname : "");
    e->pt = proctab_new(cfg->max_processes);
    struct seq_limits lim = {
        .max_bytes = cfg->sequence_max_bytes ? cfg->sequence_max_bytes : RULES_DEFAULT_SEQUENCE_BYTES,
        .max_per_group = cfg->sequence_max_per_group ? cfg->sequence_max_per_group : RULES_DEFAULT_SEQUENCE_PER_GROUP};
    e->seq = seq_state_new(&lim);
    if (!e->hostname || !e->pt || !e->seq ||
        throttle_init(&e->throttle, cfg->rate, cfg->burst, cfg->ceiling, cfg->ceiling_burst) != 0) {
        rules_engine_free(e);
        return NULL;
    }
    e->cfg.hostname = e->hostname;
    drop_monitor_init(&e->drops, cfg->drop_threshold, cfg->drop_rate, cfg->drop_burst);
    if (!e->cfg.clock_ns)
        e->cfg.clock_ns = monotonic_clock;
    if (!e->cfg.output_field_max)
        e->cfg.output_field_max = RULES_DEFAULT_OUTPUT_FIELD_MAX;
    return e;
}

void rules_engine_free(struct rules_engine *e)
{
    if (!e)
        return;
    rule_set_free(e->rs);
    proctab_free(e->pt);
    seq_state_free(e->seq);
    strbuf_free(&e->seq_json);
    throttle_free(&e->throttle);
    drop_monitor_free(&e->drops);
    for (size_t i = 0; i < e->nslots; i++)
        strbuf_free(&e->slots[i].buf);
    free(e->slots);
    strbuf_free(&e->fdname);
    strbuf_free(&e->text);
    strbuf_free(&e->fields);
    strbuf_free(&e->json);
    free(e->hostname);
    free(e);
}

void rules_engine_set_rules(struct rules_engine *e, struct rule_set *rs)
{
    if (rs && rs->nslots > e->nslots) {
        struct field_slot *n = realloc(e->slots, rs->nslots * sizeof(*n));
        if (!n) {
            /* Cannot evaluate this set: keep none rather than crash. */
            rule_set_free(rs);
            rs = NULL;
        } else {
            memset(n + e->nslots, 0, (rs->nslots - e->nslots) * sizeof(*n));
            e->slots = n;
            e->nslots = rs->nslots;
        }
    }
    seq_state_reset(e->seq, rs ? rs->seq : NULL);   /* partial matches of the old set go (counted) */
    rule_set_free(e->rs);
    e->rs = rs;
    proctab_keep(e->pt, rule_set_process_keep(rs));
}

const struct rule_set *rules_engine_rules(const struct rules_engine *e) { return e->rs; }

/* ---- alert lists ---- */

void alert_list_reset(struct alert_list *l)
{
    l->count = 0;
    l->nsuppressed = 0;
    l->dropped = 0;
    if (l->storage)
        arena_reset(&((struct alert_store *)l->storage)->arena);
}

void alert_list_free(struct alert_list *l)
{
    if (l->storage) {
        arena_free(&((struct alert_store *)l->storage)->arena);
        free(l->storage);
    }
    free(l->items);
    free(l->suppressed);
    memset(l, 0, sizeof(*l));
}

static struct arena *store_of(struct alert_list *l)
{
    if (!l->storage) {
        struct alert_store *s = malloc(sizeof(*s));
        if (!s)
            return NULL;
        arena_init(&s->arena, 64 * 1024, SIZE_MAX);
        l->storage = s;
    }
    return &((struct alert_store *)l->storage)->arena;
}

static void count_held_back(struct alert_list *l, const char *rule, enum throttle_verdict why)
{
    struct alert_suppressed *s = NULL;
    for (size_t i = 0; i < l->nsuppressed && !s; i++)
        if (strcmp(l->suppressed[i].rule, rule) == 0)
            s = &l->suppressed[i];
    if (!s) {
        struct arena *a = store_of(l);
        const char *name = a ? arena_strndup(a, rule, strlen(rule)) : NULL;
        if (!name)
            return;
        if (l->nsuppressed == l->suppressed_cap) {
            size_t cap = l->suppressed_cap ? l->suppressed_cap * 2 : 8;
            struct alert_suppressed *n = realloc(l->suppressed, cap * sizeof(*n));
            if (!n)
                return;
            l->suppressed = n;
            l->suppressed_cap = cap;
        }
        s = &l->suppressed[l->nsuppressed++];
        *s = (struct alert_suppressed){.rule = name};
    }
    if (why == THROTTLE_CEILING)
        s->over_ceiling++;
    else
        s->count++;
}

/* ---- evaluation ---- */

static const char *container_of(const struct event *ev)
{
    if (ev->header.message_type == 1) {
        const char *id = ((const Gvisor__Container__Start *)ev->msg)->id;
        if (id && id[0])
            return id;
    }
    return ev->context && ev->context->container_id && ev->context->container_id[0] ? ev->context->container_id
                                                                                     : NULL;
}

/* What an alert is raised for: a rule, or a sequence that completed. */
struct raise_what {
    const char *name;
    enum rules_priority priority;
    const struct template *output;
    const char *tags_json;
    const struct seq_raise *seq;  /* a sequence's: its steps and their values */
};

static const struct fval *captured(void *ctx, unsigned i)
{
    const struct seq_value *v = ctx;
    return &v[i].v;
}

/* A sequence alert's steps, in the list's arena: 0, or -1 out of memory. */
static int alert_steps(struct arena *a, const struct seq_raise *r, struct alert *al)
{
    const struct sequence *s = r->seq;
    struct alert_step *steps = arena_alloc(a, s->nsteps * sizeof(*steps));
    if (!steps)
        return -1;
    for (uint16_t k = 0; k < s->nsteps; k++) {
        const struct seq_stamp *t = &r->stamps[k];
        steps[k] = (struct alert_step){.name = arena_strndup(a, s->steps[k].name, strlen(s->steps[k].name)),
                                       .time_ns = t->time_ns, .first_time_ns = t->first_time_ns,
                                       .count = t->count ? t->count : 1, .event_id = t->pending ? 0 : t->event_id,
                                       .event_index = t->pending ? t->batch_index : SIZE_MAX};
        if (!steps[k].name)
            return -1;
    }
    al->steps = steps;
    al->nsteps = s->nsteps;
    al->sandbox_dropped = r->sandbox_dropped;
    return 0;
}

static bool push_alert(struct rules_engine *e, struct alert_list *out, const struct alert *proto, const char *tags);

static void raise_alert(struct rules_engine *e, struct evctx *x, const struct raise_what *w, size_t index,
                        struct alert_list *out)
{
    uint64_t suppressed;
    enum throttle_verdict v =
        throttle_take(&e->throttle, w->name, x->ev->conn_id, e->cfg.clock_ns(e->cfg.clock_data), &suppressed);
    if (v != THROTTLE_RAISE) {
        if (v == THROTTLE_CEILING)
            e->stats.over_ceiling++;
        else
            e->stats.suppressed++;
        count_held_back(out, w->name, v);
        return;
    }
    struct arena *a = store_of(out);
    struct alert al = {.event_index = index, .conn_id = x->ev->conn_id, .rule = w->name, .priority = w->priority,
                       .time_ns = x->time_ns, .suppressed = suppressed, .container_id = container_of(x->ev),
                       .evicted = seq_take_evicted(e->seq, x->ev->conn_id)};
    struct render_rule rr = {.name = w->name, .priority = w->priority, .output = w->output, .tags_json = w->tags_json,
                             .evicted = al.evicted};
    if (w->seq) {
        if (!a || alert_steps(a, w->seq, &al) != 0) {
            out->dropped++;
            return;
        }
        strbuf_reset(&e->seq_json);
        rules_alert_sequence_json(&e->seq_json, &al, 0);
        if (e->seq_json.failed) {
            out->dropped++;
            return;
        }
        rr.capture = captured;
        rr.capture_ctx = (void *)w->seq->values;
        rr.sequence_json = e->seq_json.data;
    }
    struct render_out ro = {.text = &e->text, .fields = &e->fields, .json = &e->json};
    render_alert(x, &rr, e->cfg.hostname, e->cfg.output_field_max, suppressed, &ro);
    if (push_alert(e, out, &al, w->tags_json))
        e->stats.sequence_alerts += w->seq != NULL;
}

/* ---- the built-in syscall event drop alert (drops.h) ---- */

/* Appends an alert made of proto and the engine's text, fields and json
 * buffers (a rule's or a sequence's, rendered by raise_alert, or the drop
 * alert's); false when memory ran out (counted in the list). */
static bool push_alert(struct rules_engine *e, struct alert_list *out, const struct alert *proto, const char *tags)
{
    struct arena *a = store_of(out);
    if (!a || e->text.failed || e->fields.failed || e->json.failed) {
        out->dropped++;
        return false;
    }
    if (out->count == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 16;
        struct alert *n = realloc(out->items, cap * sizeof(*n));
        if (!n) {
            out->dropped++;
            return false;
        }
        out->items = n;
        out->cap = cap;
    }
    struct alert al = *proto;
    al.rule = arena_strndup(a, proto->rule, strlen(proto->rule));
    al.container_id = proto->container_id ? arena_strndup(a, proto->container_id, strlen(proto->container_id)) : NULL;
    al.output = arena_strndup(a, e->text.data, e->text.len);
    al.output_len = e->text.len;
    al.output_fields = arena_strndup(a, e->fields.data, e->fields.len);
    al.tags = arena_strndup(a, tags, strlen(tags));
    al.json = arena_strndup(a, e->json.data, e->json.len);
    al.json_len = e->json.len;
    if (!al.rule || (proto->container_id && !al.container_id) || !al.output || !al.output_fields || !al.tags ||
        !al.json) {
        out->dropped++;
        return false;
    }
    out->items[out->count++] = al;
    e->stats.alerts++;
    return true;
}

/* A sequence completed on the event (sequence_match.c calls it). */
struct seq_ctx {
    struct rules_engine *e;
    size_t index;
    struct alert_list *out;
};

static void raise_sequence(void *ctx, struct evctx *x, const struct seq_raise *r)
{
    struct seq_ctx *c = ctx;
    const struct sequence *s = r->seq;
    struct raise_what w = {.name = s->name, .priority = s->priority, .output = &s->output, .tags_json = s->tags_json,
                           .seq = r};
    raise_alert(c->e, x, &w, c->index, c->out);
}

/* Whether any sequence step (or unless) can match events of class c. */
static bool sequences_for(const struct rule_set *rs, const struct evclass *c)
{
    if (!rs->seq)
        return false;
    const struct seq_index *ix = c->syscall_enter ? &rs->seq->enters : &rs->seq->exits;
    return ix->off[c->type] != ix->off[c->type + 1];
}

static void raise_drop_alert(struct rules_engine *e, const struct event *ev, size_t index,
                             const struct drop_window *w, struct alert_list *out)
{
    const char *container = container_of(ev);
    const struct container_record *r =
        container && e->cfg.containers ? container_view_get(e->cfg.containers, ev->conn_id, container) : NULL;
    int64_t time_ns = ev->context && ev->context->time_ns ? ev->context->time_ns : ev->recv_ns;
    drop_alert_render(w, time_ns, container, r && r->state == CONTAINER_FOUND ? r : NULL, e->cfg.hostname, &e->text,
                      &e->fields, &e->json);
    struct alert proto = {.event_index = index, .conn_id = ev->conn_id, .rule = RULES_DROP_RULE,
                          .priority = RULES_DEBUG, .time_ns = time_ns, .container_id = container};
    push_alert(e, out, &proto, "[]");
    e->stats.drop_alerts++;
}

static void evaluate(struct rules_engine *e, const struct event *ev, const struct evclass *c, struct proc *p,
                     const struct proc_effect *fx, uint64_t dropped_new, size_t index, struct alert_list *out)
{
    const struct rule_set *rs = e->rs;
    const struct rule_index *ix = c->syscall_enter ? &rs->enters : &rs->exits;
    uint32_t from = ix->off[c->type], to = ix->off[c->type + 1];
    bool sequences = sequences_for(rs, c);
    if (from == to && !sequences)
        return;
    if (++e->gen == 0) {   /* wrapped: no slot may look current */
        for (size_t i = 0; i < e->nslots; i++)
            e->slots[i].gen = 0;
        e->gen = 1;
    }
    struct evctx x = {.ev = ev, .cls = *c, .num = e->num, .pt = e->pt, .proc = p, .slots = e->slots, .gen = e->gen,
                      .fd = &e->fd, .fdname = &e->fdname, .dropped_new = dropped_new,
                      .containers = e->cfg.containers, .hostname = e->cfg.hostname};
    x.time_ns = ev->context && ev->context->time_ns ? ev->context->time_ns : ev->recv_ns;
    for (uint32_t i = from; i < to; i++) {
        const struct rule *r = &rs->rules[ix->ids[i]];
        /* one exec reaches the rules once: as sentry/execve */
        if (fx->exec_repeat && !r->names_point)
            continue;
        if (filter_eval(&x, r->cond)) {
            struct raise_what w = {.name = r->name, .priority = r->priority, .output = &r->output,
                                   .tags_json = r->tags_json};
            raise_alert(e, &x, &w, index, out);
            if (e->cfg.matching == RULES_MATCH_FIRST)
                break;   /* Falco's default: the first rule in load order that matches */
        }
    }
    /* Sequences are not rules: whichever rule matched, each sees the event. */
    if (sequences) {
        struct seq_ctx sc = {.e = e, .index = index, .out = out};
        seq_eval(e->seq, rs->seq, &x, fx->exec_repeat, e->cfg.clock_ns(e->cfg.clock_data), index, raise_sequence,
                 &sc);
    }
}

void rules_engine_eval(struct rules_engine *e, const struct event *ev, size_t index, struct alert_list *out)
{
    e->stats.events++;
    e->num++;
    uint64_t dropped_new = proctab_dropped_growth(e->pt, ev->conn_id, ev->header.dropped_count);
    struct drop_window w;
    if (e->cfg.drop_alerts &&
        drop_monitor_event(&e->drops, ev->conn_id, dropped_new, e->cfg.clock_ns(e->cfg.clock_data), &w))
        raise_drop_alert(e, ev, index, &w, out);
    struct evclass c;
    if (!evtype_classify(ev, &c))
        return;
    struct proc_effect fx;
    struct proc *p = proctab_apply(e->pt, ev, &fx);
    if (e->rs)
        evaluate(e, ev, &c, p, &fx, dropped_new, index, out);
    proctab_finish(e->pt, p, &fx);
}

void rules_engine_observe(struct rules_engine *e, const struct event *ev)
{
    proctab_dropped_growth(e->pt, ev->conn_id, ev->header.dropped_count);
    struct evclass c;
    if (!evtype_classify(ev, &c))
        return;
    struct proc_effect fx;
    struct proc *p = proctab_apply(e->pt, ev, &fx);
    proctab_finish(e->pt, p, &fx);
}

void rules_engine_conn_closed(struct rules_engine *e, uint64_t conn_id)
{
    proctab_conn_closed(e->pt, conn_id);
    throttle_conn_closed(&e->throttle, conn_id);
    seq_conn_closed(e->seq, conn_id);   /* its partial matches go (counted as dropped) */
    drop_monitor_conn_closed(&e->drops, conn_id);
}

void rules_engine_batch_stored(struct rules_engine *e, struct alert_list *l, int64_t first_id)
{
    seq_batch_stored(e->seq, first_id);
    seq_sweep(e->seq, e->cfg.clock_ns(e->cfg.clock_data));
    struct arena *a = l->count ? store_of(l) : NULL;
    for (size_t i = 0; a && i < l->count; i++) {
        struct alert *al = &l->items[i];
        bool in_batch = false;
        for (size_t k = 0; k < al->nsteps; k++)
            in_batch |= al->steps[k].event_index != SIZE_MAX;
        if (!in_batch || !first_id)
            continue;
        /* the steps' ids are known now: the line says them */
        struct alert_step *steps = (struct alert_step *)al->steps;
        for (size_t k = 0; k < al->nsteps; k++)
            if (steps[k].event_index != SIZE_MAX) {
                steps[k].event_id = first_id + (int64_t)steps[k].event_index;
                steps[k].event_index = SIZE_MAX;
            }
        strbuf_reset(&e->seq_json);
        rules_alert_sequence_json(&e->seq_json, al, 0);
        strbuf_reset(&e->json);
        struct rules_alert_extras x = {.suppressed = al->suppressed, .evicted = al->evicted,
                                       .sequence = e->seq_json.data};
        rules_alert_json_ex(&e->json, e->cfg.hostname, al->rule, rules_priority_name(al->priority), al->time_ns,
                            al->output, al->output_len, al->output_fields, al->tags, &x);
        const char *json = e->json.failed || e->seq_json.failed ? NULL : arena_strndup(a, e->json.data, e->json.len);
        if (json) {
            al->json = json;
            al->json_len = e->json.len;
        }
    }
}

void rules_alert_sequence_json(struct strbuf *out, const struct alert *a, int64_t first_id)
{
    if (!a->nsteps)
        return;
    strbuf_puts(out, "{\"steps\":[");
    for (size_t k = 0; k < a->nsteps; k++) {
        const struct alert_step *t = &a->steps[k];
        int64_t id = t->event_index != SIZE_MAX ? (first_id ? first_id + (int64_t)t->event_index : 0) : t->event_id;
        strbuf_puts(out, k ? ",{\"name\":" : "{\"name\":");
        json_render_string(out, t->name, strlen(t->name));
        strbuf_puts(out, ",\"event_id\":");
        if (id > 0)
            strbuf_put_i64(out, id);
        else
            strbuf_puts(out, "null");
        strbuf_puts(out, ",\"time\":\"");
        fields_format_time(out, t->time_ns, true);
        strbuf_putc(out, '"');
        if (t->count > 1) {
            strbuf_puts(out, ",\"count\":");
            strbuf_put_u64(out, t->count);
            strbuf_puts(out, ",\"first_time\":\"");
            fields_format_time(out, t->first_time_ns, true);
            strbuf_putc(out, '"');
        }
        strbuf_putc(out, '}');
    }
    strbuf_putc(out, ']');
    if (a->sandbox_dropped) {
        strbuf_puts(out, ",\"sandbox_dropped\":");
        strbuf_put_u64(out, a->sandbox_dropped);
    }
    strbuf_putc(out, '}');
}

bool rules_engine_consistent(const struct rules_engine *e) { return seq_state_consistent(e->seq); }

void rules_engine_get_stats(const struct rules_engine *e, struct rules_engine_stats *out)
{
    *out = e->stats;
    struct proctab_stats ps;
    proctab_get_stats(e->pt, &ps);
    out->processes = ps.processes;
    out->process_evictions = ps.evictions;
    struct seq_stats ss;
    seq_get_stats(e->seq, &ss);
    out->sequence_partials = ss.partials;
    out->sequence_bytes = ss.bytes;
    out->sequence_started = ss.started;
    out->sequence_evicted = ss.evicted;
    out->sequence_expired = ss.expired;
    out->sequence_cancelled = ss.cancelled;
    out->sequence_dropped = ss.dropped;
}
