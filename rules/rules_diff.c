/* rules_diff.c - rule fingerprints and what changed between two sets
 * (rules_diff.h).
 *
 * A fingerprint is FNV-1a over the compiled rule, not its YAML text: an
 * append to a list or a macro shows in every rule that uses it, and moving
 * a rule within a file changes nothing. A macro's compiled body is shared
 * by every use, so its fingerprint is computed once per set (memo), which
 * keeps the walk linear in the compiled nodes, not in the expanded ones.
 * A sequence's fingerprint is its steps' (each compiled condition, its
 * comparisons with earlier steps, count and distinct field), its unless,
 * by, within, the fields it keeps, output, priority, desc and tags.
 */
#include "rules_diff.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "ruleset.h"
#include "sequence.h"

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

/* What a rule or a sequence says: desc, priority, tags, output. */
static uint64_t mix_said(uint64_t h, const char *desc, enum rules_priority priority, const char *const *tags,
                         size_t ntags, const struct template *output)
{
    h = mix_cstr(h, desc);
    h = mix_u64(h, (uint64_t)priority);
    h = mix_u64(h, ntags);
    for (size_t i = 0; i < ntags; i++)
        h = mix_cstr(h, tags[i]);
    h = mix_u64(h, output->nparts);
    for (size_t i = 0; i < output->nparts; i++) {
        const struct tmpl_part *p = &output->parts[i];
        h = mix_str(h, p->text, p->len);
        h = p->has_field ? mix_field(mix_u64(h, 1), &p->field) : mix_u64(h, 0);
        h = mix_u64(h, p->capture1);   /* a sequence's %STEP.FIELD */
    }
    return h;
}

static uint64_t rule_hash(const struct rule *r, struct memo *m)
{
    uint64_t h = mix_said(FNV_OFFSET, r->desc, r->priority, r->tags, r->ntags, &r->output);
    return mix_node(h, r->cond, m);
}

/* A step's (or unless's) condition and its comparisons with earlier steps. */
static uint64_t mix_seq_cond(uint64_t h, const struct seq_cond *c, struct memo *m)
{
    h = mix_node(h, c->rule.cond, m);
    h = mix_u64(mix_u64(h, c->nrefs), c->njoins);
    for (uint16_t i = 0; i < c->nrefs; i++) {
        h = mix_field(h, &c->refs[i].lhs);
        h = mix_u64(mix_u64(h, (uint64_t)c->refs[i].op), c->refs[i].capture);
    }
    return h;
}

static uint64_t sequence_hash(const struct sequence *s, struct memo *m)
{
    uint64_t h = mix_said(FNV_OFFSET, s->desc, s->priority, s->tags, s->ntags, &s->output);
    h = mix_u64(h, (uint64_t)s->within_ns);
    h = mix_u64(h, s->nby);
    for (uint16_t i = 0; i < s->nby; i++)
        h = mix_field(h, &s->by[i]);
    h = mix_u64(h, s->nsteps);
    for (uint16_t i = 0; i < s->nsteps; i++) {
        const struct seq_step *st = &s->steps[i];
        h = mix_seq_cond(mix_cstr(h, st->name), &st->c, m);
        h = mix_u64(mix_u64(h, st->at_least), st->has_distinct);
        if (st->has_distinct)
            h = mix_field(h, &st->distinct);
    }
    h = mix_u64(h, s->has_unless);
    if (s->has_unless)
        h = mix_seq_cond(h, &s->unless, m);
    h = mix_u64(h, s->ncaptures);
    for (uint16_t i = 0; i < s->ncaptures; i++)
        h = mix_field(mix_u64(h, s->captures[i].step), &s->captures[i].field);
    return h;
}

/* ---- the digest ---- */

struct item_print {
    char *name;
    bool enabled;
    uint64_t hash;
};

/* The rules, or the sequences, of a set. */
struct print_list {
    struct item_print *v;       /* sorted by name (names are unique in a set) */
    size_t n, enabled;
};

struct rules_digest {
    struct print_list rules, sequences;
};

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct item_print *)a)->name, ((const struct item_print *)b)->name);
}

static void print_list_free(struct print_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].name);
    free(l->v);
}

void rules_digest_free(struct rules_digest *d)
{
    if (!d)
        return;
    print_list_free(&d->rules);
    print_list_free(&d->sequences);
    free(d);
}

/* Room for n prints: false when out of memory. */
static bool print_list_alloc(struct print_list *l, size_t n)
{
    return !n || (l->v = calloc(n, sizeof(*l->v)));
}

/* Appends one print (the name copied): false when out of memory. */
static bool print_list_add(struct print_list *l, const char *name, bool enabled, uint64_t hash)
{
    char *copy = strdup(name);
    if (!copy)
        return false;
    l->v[l->n++] = (struct item_print){copy, enabled, hash};
    l->enabled += enabled;
    return true;
}

struct rules_digest *rules_digest_of(const struct rule_set *rs)
{
    struct rules_digest *d = calloc(1, sizeof(*d));
    size_t nseq = rs->seq ? rs->seq->n : 0;
    if (!d || !print_list_alloc(&d->rules, rs->nrules) || !print_list_alloc(&d->sequences, nseq)) {
        rules_digest_free(d);
        return NULL;
    }
    struct memo m = {0};
    bool ok = true;
    for (size_t i = 0; ok && i < rs->nrules; i++)
        ok = print_list_add(&d->rules, rs->rules[i].name, rs->rules[i].enabled, rule_hash(&rs->rules[i], &m));
    for (size_t i = 0; ok && i < nseq; i++) {
        const struct sequence *s = &rs->seq->v[i];
        ok = print_list_add(&d->sequences, s->name, s->enabled, sequence_hash(s, &m));
    }
    free(m.slots);
    if (!ok) {
        rules_digest_free(d);
        return NULL;
    }
    if (d->rules.n > 1)   /* an empty list has no array: qsort's pointer must not be NULL */
        qsort(d->rules.v, d->rules.n, sizeof(*d->rules.v), by_name);
    if (d->sequences.n > 1)
        qsort(d->sequences.v, d->sequences.n, sizeof(*d->sequences.v), by_name);
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
static void compare(const struct print_list *a, const struct print_list *b, struct change_list *c)
{
    size_t i = 0, j = 0;
    while (i < a->n || j < b->n) {
        int cmp = i == a->n ? 1 : j == b->n ? -1 : strcmp(a->v[i].name, b->v[j].name);
        if (cmp < 0) {
            note(&c[REMOVED], a->v[i++].name);
            continue;
        }
        if (cmp > 0) {
            note(&c[ADDED], b->v[j++].name);
            continue;
        }
        const struct item_print *x = &a->v[i++], *y = &b->v[j++];
        if (x->hash != y->hash)
            note(&c[CHANGED], y->name);
        if (x->enabled != y->enabled)
            note(&c[y->enabled ? ENABLED : DISABLED], y->name);
    }
}

/* What changed in one list (the rules, or the sequences). */
struct changes {
    struct change_list kinds[CHANGE_KINDS];
    size_t total;
};

static void changes_of(const struct print_list *before, const struct print_list *after, struct changes *ch)
{
    *ch = (struct changes){0};
    compare(before, after, ch->kinds);
    for (int k = 0; k < CHANGE_KINDS; k++)
        ch->total += ch->kinds[k].count;
}

/* "2 rules added (A, B), 1 removed (C)": noun "rule" or "sequence". */
static void describe_changes(const struct changes *ch, const char *noun, char *out, size_t outlen, size_t *len)
{
    bool first = true;
    for (int k = 0; k < CHANGE_KINDS; k++) {
        const struct change_list *c = &ch->kinds[k];
        if (!c->count)
            continue;
        if (first)
            put(out, outlen, len, "%zu %s%s %s (", c->count, noun, c->count == 1 ? "" : "s", change_names[k]);
        else
            put(out, outlen, len, ", %zu %s (", c->count, change_names[k]);
        first = false;
        size_t shown = c->count < NAMES_SHOWN ? c->count : NAMES_SHOWN;
        for (size_t i = 0; i < shown; i++)
            put(out, outlen, len, "%s%s", i ? ", " : "", c->shown[i]);
        if (c->count > shown)
            put(out, outlen, len, " and %zu more", c->count - shown);
        put(out, outlen, len, ")");
    }
}

/* "19 of 20 rules enabled (was 18 of 19)" */
static void describe_enabled(const struct print_list *before, const struct print_list *after, const char *noun,
                             char *out, size_t outlen, size_t *len)
{
    put(out, outlen, len, "%zu of %zu %ss enabled", after->enabled, after->n, noun);
    if (after->enabled != before->enabled || after->n != before->n)
        put(out, outlen, len, " (was %zu of %zu)", before->enabled, before->n);
}

size_t rules_digest_describe(const struct rules_digest *before, const struct rules_digest *after, char *out,
                             size_t outlen)
{
    struct changes rules, seqs;
    changes_of(&before->rules, &after->rules, &rules);
    changes_of(&before->sequences, &after->sequences, &seqs);
    /* sets without sequences, on either side, are described as before there were any */
    bool sequences = before->sequences.n || after->sequences.n;
    size_t len = 0;
    if (outlen)
        out[0] = '\0';
    describe_changes(&rules, "rule", out, outlen, &len);
    if (rules.total && seqs.total)
        put(out, outlen, &len, "; ");
    describe_changes(&seqs, "sequence", out, outlen, &len);
    if (!rules.total && !seqs.total)
        put(out, outlen, &len, sequences ? "no rule or sequence changed" : "no rule changed");
    put(out, outlen, &len, "; ");
    describe_enabled(&before->rules, &after->rules, "rule", out, outlen, &len);
    if (sequences) {
        put(out, outlen, &len, ", ");
        describe_enabled(&before->sequences, &after->sequences, "sequence", out, outlen, &len);
    }
    return rules.total + seqs.total;
}
