/* engine.c - the rules engine: the process table, the rules indexed by
 * event type, the alert limits and alert lists (rules.h). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "filter.h"
#include "gvisor/container.pb-c.h"
#include "render.h"
#include "ruleset.h"
#include "rules.h"
#include "throttle.h"

struct rules_engine {
    struct rules_engine_config cfg;
    char *hostname;
    struct rule_set *rs;
    struct proctab *pt;
    struct throttle throttle;
    struct field_slot *slots;
    size_t nslots;
    uint32_t gen;
    uint64_t num;
    struct fdinfo fd;
    struct strbuf fdname, text, fields, json;
    struct rules_engine_stats stats;
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
                                        .output_field_max = RULES_DEFAULT_OUTPUT_FIELD_MAX};
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
    if (!e->hostname || !e->pt ||
        throttle_init(&e->throttle, cfg->rate, cfg->burst, cfg->ceiling, cfg->ceiling_burst) != 0) {
        rules_engine_free(e);
        return NULL;
    }
    e->cfg.hostname = e->hostname;
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
    throttle_free(&e->throttle);
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

static void raise_alert(struct rules_engine *e, struct evctx *x, const struct rule *r, size_t index,
                        struct alert_list *out)
{
    const char *container = container_of(x->ev);
    uint64_t suppressed;
    enum throttle_verdict v =
        throttle_take(&e->throttle, r->name, x->ev->conn_id, e->cfg.clock_ns(e->cfg.clock_data), &suppressed);
    if (v != THROTTLE_RAISE) {
        if (v == THROTTLE_CEILING)
            e->stats.over_ceiling++;
        else
            e->stats.suppressed++;
        count_held_back(out, r->name, v);
        return;
    }
    struct render_rule rr = {.name = r->name, .priority = r->priority, .output = &r->output, .tags_json = r->tags_json};
    struct render_out ro = {.text = &e->text, .fields = &e->fields, .json = &e->json};
    render_alert(x, &rr, e->cfg.hostname, e->cfg.output_field_max, suppressed, &ro);
    struct arena *a = store_of(out);
    if (!a || e->text.failed || e->fields.failed || e->json.failed) {
        out->dropped++;
        return;
    }
    if (out->count == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 16;
        struct alert *n = realloc(out->items, cap * sizeof(*n));
        if (!n) {
            out->dropped++;
            return;
        }
        out->items = n;
        out->cap = cap;
    }
    struct alert al = {.event_index = index, .conn_id = x->ev->conn_id, .priority = r->priority, .time_ns = x->time_ns,
                       .suppressed = suppressed};
    al.rule = arena_strndup(a, r->name, strlen(r->name));
    al.container_id = container ? arena_strndup(a, container, strlen(container)) : NULL;
    al.output = arena_strndup(a, e->text.data, e->text.len);
    al.output_len = e->text.len;
    al.output_fields = arena_strndup(a, e->fields.data, e->fields.len);
    al.tags = arena_strndup(a, r->tags_json, strlen(r->tags_json));
    al.json = arena_strndup(a, e->json.data, e->json.len);
    al.json_len = e->json.len;
    if (!al.rule || (container && !al.container_id) || !al.output || !al.output_fields || !al.tags || !al.json) {
        out->dropped++;
        return;
    }
    out->items[out->count++] = al;
    e->stats.alerts++;
}

static void evaluate(struct rules_engine *e, const struct event *ev, const struct evclass *c, struct proc *p,
                     const struct proc_effect *fx, uint64_t dropped_new, size_t index, struct alert_list *out)
{
    const struct rule_set *rs = e->rs;
    const struct rule_index *ix = c->syscall_enter ? &rs->enters : &rs->exits;
    uint32_t from = ix->off[c->type], to = ix->off[c->type + 1];
    if (from == to)
        return;
    if (++e->gen == 0) {   /* wrapped: no slot may look current */
        for (size_t i = 0; i < e->nslots; i++)
            e->slots[i].gen = 0;
        e->gen = 1;
    }
    struct evctx x = {.ev = ev, .cls = *c, .num = e->num, .pt = e->pt, .proc = p, .slots = e->slots, .gen = e->gen,
                      .fd = &e->fd, .fdname = &e->fdname, .dropped_new = dropped_new,
                      .containers = e->cfg.containers};
    x.time_ns = ev->context && ev->context->time_ns ? ev->context->time_ns : ev->recv_ns;
    for (uint32_t i = from; i < to; i++) {
        const struct rule *r = &rs->rules[ix->ids[i]];
        /* one exec reaches the rules once: as sentry/execve */
        if (fx->exec_repeat && !r->names_point)
            continue;
        if (filter_eval(&x, r->cond)) {
            raise_alert(e, &x, r, index, out);
            if (e->cfg.matching == RULES_MATCH_FIRST)
                return;   /* Falco's default: the first rule in load order that matches */
        }
    }
}

void rules_engine_eval(struct rules_engine *e, const struct event *ev, size_t index, struct alert_list *out)
{
    e->stats.events++;
    e->num++;
    uint64_t dropped_new = proctab_dropped_growth(e->pt, ev->conn_id, ev->header.dropped_count);
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
}

void rules_engine_get_stats(const struct rules_engine *e, struct rules_engine_stats *out)
{
    *out = e->stats;
    struct proctab_stats ps;
    proctab_get_stats(e->pt, &ps);
    out->processes = ps.processes;
    out->process_evictions = ps.evictions;
}
