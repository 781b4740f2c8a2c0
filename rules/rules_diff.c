/* rules_diff.c - rule fingerprints and what changed between two sets
 * (rules_diff.h).
 *
 * A fingerprint is FNV-1a over the compiled rule, not its YAML text: an
 * append to a list or a macro shows in every rule that uses it, and moving
 * a rule within a file changes nothing. A macro's compiled body is shared
 * by every use, so its fingerprint is computed once per set (memo), which
 * keeps the walk linear in the compiled nodes, not in the expanded ones.
 */
#include "rules_diff.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "ruleset.h"

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull
#define NAMES_SHOWN 3   /* names listed per kind of change, then "and N more" */

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * FNV_PRIME;
    return h;
}

static uint64_t mix_u64(uint64_t h, uint64_t v) { return mix(h, &v, sizeof(v)); }

/* A string with its length, so "ab","c" and "a","bc" differ. */
static uint64_t mix_str(uint64_t h, const char *s, size_t n)
{
    h = mix_u64(h, n);
    return s ? mix(h, s, n) : h;
}

static uint64_t mix_cstr(uint64_t h, const char *s) { return mix_str(h, s, s ? strlen(s) : 0); }

/* ---- the memo: a macro body's fingerprint by its address ---- */

struct memo_slot {
    const struct cnode *node;
    uint64_t hash;
};

struct memo {
    struct memo_slot *slots;
    size_t cap, used;   /* cap a power of two, at most half full */
    bool failed;
};

static size_t memo_index(const struct memo *m, const struct cnode *n)
{
    uint64_t k = (uint64_t)(uintptr_t)n * 0x9e3779b97f4a7c15ull;
    return (size_t)(k >> 16) & (m->cap - 1);
}

static bool memo_get(const struct memo *m, const struct cnode *n, uint64_t *h)
{
    if (!m->cap)
        return false;
    for (size_t i = memo_index(m, n);; i = (i + 1) & (m->cap - 1)) {
        if (!m->slots[i].node)
            return false;
        if (m->slots[i].node == n) {
            *h = m->slots[i].hash;
            return true;
        }
    }
}

static void memo_put(struct memo *m, const struct cnode *n, uint64_t h)
{
    if (m->failed)
        return;
    if ((m->used + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        struct memo_slot *slots = calloc(cap, sizeof(*slots));
        if (!slots) {
            m->failed = true;   /* still correct: the body is walked at every use */
            return;
        }
        struct memo old = *m;
        m->slots = slots;
        m->cap = cap;
        for (size_t i = 0; i < old.cap; i++)
            if (old.slots[i].node) {
                size_t j = memo_index(m, old.slots[i].node);
                while (m->slots[j].node)
                    j = (j + 1) & (cap - 1);
                m->slots[j] = old.slots[i];
            }
        free(old.slots);
    }
    size_t i = memo_index(m, n);
    while (m->slots[i].node)
        i = (i + 1) & (m->cap - 1);
    m->slots[i] = (struct memo_slot){n, h};
    m->used++;
}

/* ---- fingerprints ---- */

static uint64_t mix_field(uint64_t h, const struct fieldref *f)
{
    h = mix_u64(h, f->id);
    h = mix_u64(h, (uint64_t)(int64_t)f->index);
    h = mix_u64(h, f->any_ancestor);
    if (f->arg)   /* evt.arg.NAME: the message field it resolved to, per type */
        for (unsigned t = 0; t <= DECODE_TYPE_MAX; t++)
            if (f->arg[t])
                h = mix_cstr(mix_u64(h, t), f->arg[t]->name);
    return h;
}

static uint64_t mix_check(uint64_t h, const struct check *c)
{
    h = mix_field(h, &c->field);
    h = mix_u64(h, (uint64_t)c->op);
    h = mix_u64(h, c->dirs);
    h = mix_u64(h, c->nvals);
    for (uint32_t i = 0; i < c->nvals; i++)
        h = mix_str(h, c->vals[i].s, c->vals[i].len);
    return h;
}

static uint64_t mix_node(uint64_t h, const struct cnode *n, struct memo *m);

static uint64_t macro_hash(const struct cnode *body, struct memo *m)
{
    uint64_t h;
    if (memo_get(m, body, &h))
        return h;
    h = mix_node(FNV_OFFSET, body, m);
    memo_put(m, body, h);
    return h;
}

static uint64_t mix_node(uint64_t h, const struct cnode *n, struct memo *m)
{
    if (!n)
        return mix_u64(h, UINT64_MAX);
    h = mix_u64(h, (uint64_t)n->kind);
    switch (n->kind) {
    case CN_AND:
    case CN_OR:
    case CN_NOT:
        h = mix_u64(h, n->n);
        for (uint32_t i = 0; i < n->n; i++)
            h = mix_node(h, n->kids[i], m);
        return h;
    case CN_CHECK:
        return n->chk ? mix_check(h, n->chk) : h;
    case CN_TYPES:
        return n->types ? mix(h, n->types->w, sizeof(n->types->w)) : h;
    case CN_MACRO:
        return mix_u64(h, macro_hash(n->body, m));
    case CN_CONST:
        return mix_u64(h, n->const_val);
    }
    return h;
}

static uint64_t rule_hash(const struct rule *r, struct memo *m)
{
    uint64_t h = mix_cstr(FNV_OFFSET, r->desc);
    h = mix_u64(h, (uint64_t)r->priority);
    h = mix_u64(h, r->ntags);
    for (size_t i = 0; i < r->ntags; i++)
        h = mix_cstr(h, r->tags[i]);
    h = mix_u64(h, r->output.nparts);
    for (size_t i = 0; i < r->output.nparts; i++) {
        const struct tmpl_part *p = &r->output.parts[i];
        h = mix_str(h, p->text, p->len);
        h = p->has_field ? mix_field(mix_u64(h, 1), &p->field) : mix_u64(h, 0);
    }
    return mix_node(h, r->cond, m);
}

/* ---- the digest ---- */

struct rule_print {
    char *name;
    bool enabled;
    uint64_t hash;
};

struct rules_digest {
    struct rule_print *rules;   /* sorted by name (names are unique in a set) */
    size_t n, enabled;
};

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct rule_print *)a)->name, ((const struct rule_print *)b)->name);
}

void rules_digest_free(struct rules_digest *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++)
        free(d->rules[i].name);
    free(d->rules);
    free(d);
}

struct rules_digest *rules_digest_of(const struct rule_set *rs)
{
    struct rules_digest *d = calloc(1, sizeof(*d));
    if (!d)
        return NULL;
    if (rs->nrules && !(d->rules = calloc(rs->nrules, sizeof(*d->rules)))) {
        free(d);
        return NULL;
    }
    struct memo m = {0};
    for (size_t i = 0; i < rs->nrules; i++, d->n++) {
        const struct rule *r = &rs->rules[i];
        if (!(d->rules[i].name = strdup(r->name))) {
            free(m.slots);
            rules_digest_free(d);
            return NULL;
        }
        d->rules[i].enabled = r->enabled;
        d->rules[i].hash = rule_hash(r, &m);
        d->enabled += r->enabled;
    }
    free(m.slots);
    qsort(d->rules, d->n, sizeof(*d->rules), by_name);
    return d;
}

/* ---- describing the change ---- */

enum change { ADDED, REMOVED, CHANGED, ENABLED, DISABLED, CHANGE_KINDS };
static const char *const change_names[CHANGE_KINDS] = {"added", "removed", "changed", "enabled", "disabled"};

struct change_list {
    size_t count;
    const char *shown[NAMES_SHOWN];
};

static void note(struct change_list *l, const char *name)
{
    if (l->count < NAMES_SHOWN)
        l->shown[l->count] = name;
    l->count++;
}

/* Appends printf text to out at *len, never past outlen. */
__attribute__((format(printf, 4, 5))) static void put(char *out, size_t outlen, size_t *len, const char *fmt, ...)
{
    if (*len + 1 >= outlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out + *len, outlen - *len, fmt, ap);
    va_end(ap);
    if (n > 0)
        *len = *len + (size_t)n < outlen ? *len + (size_t)n : outlen - 1;
}

/* Merge of the two name-sorted lists. */
static void compare(const struct rules_digest *a, const struct rules_digest *b, struct change_list *c)
{
    size_t i = 0, j = 0;
    while (i < a->n || j < b->n) {
        int cmp = i == a->n ? 1 : j == b->n ? -1 : strcmp(a->rules[i].name, b->rules[j].name);
        if (cmp < 0) {
            note(&c[REMOVED], a->rules[i++].name);
            continue;
        }
        if (cmp > 0) {
            note(&c[ADDED], b->rules[j++].name);
            continue;
        }
        const struct rule_print *x = &a->rules[i++], *y = &b->rules[j++];
        if (x->hash != y->hash)
            note(&c[CHANGED], y->name);
        if (x->enabled != y->enabled)
            note(&c[y->enabled ? ENABLED : DISABLED], y->name);
    }
}

size_t rules_digest_describe(const struct rules_digest *before, const struct rules_digest *after, char *out,
                             size_t outlen)
{
    struct change_list c[CHANGE_KINDS] = {{0}};
    compare(before, after, c);
    size_t len = 0, total = 0;
    if (outlen)
        out[0] = '\0';
    for (int k = 0; k < CHANGE_KINDS; k++) {
        if (!c[k].count)
            continue;
        put(out, outlen, &len, "%s%zu %s%s (", total ? ", " : "", c[k].count,
            total ? "" : (c[k].count == 1 ? "rule " : "rules "), change_names[k]);
        size_t shown = c[k].count < NAMES_SHOWN ? c[k].count : NAMES_SHOWN;
        for (size_t i = 0; i < shown; i++)
            put(out, outlen, &len, "%s%s", i ? ", " : "", c[k].shown[i]);
        if (c[k].count > shown)
            put(out, outlen, &len, " and %zu more", c[k].count - shown);
        put(out, outlen, &len, ")");
        total += c[k].count;
    }
    if (!total)
        put(out, outlen, &len, "no rule changed");
    put(out, outlen, &len, "; %zu of %zu rules enabled", after->enabled, after->n);
    if (after->enabled != before->enabled || after->n != before->n)
        put(out, outlen, &len, " (was %zu of %zu)", before->enabled, before->n);
    return total;
}
