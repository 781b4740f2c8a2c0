#include "alert_tally.h"

#include <stdlib.h>
#include <string.h>

/* FNV-1a: rule names are short and come from the operator's rules files. */
static size_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

static struct alert_tally_rule *slot_for(struct alert_tally_rule *rules, size_t cap, const char *name)
{
    for (size_t i = name_hash(name) & (cap - 1);; i = (i + 1) & (cap - 1))
        if (!rules[i].name || strcmp(rules[i].name, name) == 0)
            return &rules[i];
}

static int grow(struct alert_tally *t)
{
    size_t cap = t->cap ? t->cap * 2 : 64;
    struct alert_tally_rule *rules = calloc(cap, sizeof(*rules));
    if (!rules)
        return -1;
    for (size_t i = 0; i < t->cap; i++)
        if (t->rules[i].name)
            *slot_for(rules, cap, t->rules[i].name) = t->rules[i];
    free(t->rules);
    t->rules = rules;
    t->cap = cap;
    return 0;
}

/* The rule's entry, made on first sight; NULL without memory. */
static struct alert_tally_rule *entry(struct alert_tally *t, const char *name)
{
    if ((t->count + 1) * 2 > t->cap && grow(t) != 0)
        return NULL;
    struct alert_tally_rule *r = slot_for(t->rules, t->cap, name);
    if (!r->name) {
        if (!(r->name = strdup(name)))
            return NULL;
        t->count++;
    }
    return r;
}

void alert_tally_add(struct alert_tally *t, const struct alert_list *l)
{
    for (size_t i = 0; i < l->count; i++) {
        const struct alert *a = &l->items[i];
        unsigned p = a->priority < RULES_PRIORITY_COUNT ? a->priority : RULES_DEBUG;
        t->by_priority[p]++;
        struct alert_tally_rule *r = entry(t, a->rule);
        if (r)
            r->by_priority[p]++;
        else
            t->untallied++;
    }
    for (size_t i = 0; i < l->nsuppressed; i++) {
        const struct alert_suppressed *s = &l->suppressed[i];
        t->suppressed += s->count;
        t->over_ceiling += s->over_ceiling;
        struct alert_tally_rule *r = entry(t, s->rule);
        if (r) {
            r->suppressed += s->count;
            r->over_ceiling += s->over_ceiling;
        } else {
            t->untallied += s->count + s->over_ceiling;
        }
    }
    t->lost += l->dropped;
}

uint64_t alert_tally_total(const struct alert_tally *t)
{
    uint64_t n = 0;
    for (int p = 0; p < RULES_PRIORITY_COUNT; p++)
        n += t->by_priority[p];
    return n;
}

void alert_tally_free(struct alert_tally *t)
{
    for (size_t i = 0; i < t->cap; i++)
        free(t->rules[i].name);
    free(t->rules);
    memset(t, 0, sizeof(*t));
}
