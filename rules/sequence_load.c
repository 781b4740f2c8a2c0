/* sequence_load.c - `- sequence:` items of a rules file, read and compiled
 * (sequence.h; the syntax: rules/README.md "Sequences").
 *
 * Read as Falco's reader reads a rule (rule_loader_reader.cpp): required
 * keys, "Unknown key" warnings, a definition of an existing name replacing
 * it where it stands, `override: {KEY: replace}` (and `tags: append`)
 * changing an existing one, every key of such an item named under override.
 * Falco's own reader skips the item: "Unknown top level item"
 * (falcosecurity/falco userspace/engine/rule_loader_reader.cpp:959-963 at
 * 130747499b, a warning, LOAD_UNKNOWN_ITEM), and its JSON schema
 * (rule_json_schema.h:33, additionalProperties false) says the file does
 * not validate, which is a status, not an error: the file loads in Falco
 * with everything else in it.
 *
 * Compiled after the rules, seeing every list and macro as a rule does. A
 * step's condition may hold comparisons with an earlier step's field,
 * `FIELD = %STEP.FIELD` or `FIELD != %STEP.FIELD`, each joined to the rest
 * by `and` at the condition's top level: they are taken out of the text
 * (with their `and`) before the rest is compiled, and become the join the
 * matcher looks partial matches up by (sequence_match.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "append_output.h"
#include "availability.h"
#include "diag.h"
#include "loader.h"
#include "sequence.h"

/* One item's keys where they were last given (an override may take them
 * from another file). */
struct lkey {
    const struct lfile *file;
    const struct ynode *node;     /* NULL: not given */
};

struct lseq {
    const char *name;
    struct lpos pos;
    struct lkey desc, by, within, steps, unless, output, priority;
    struct lkey *tags;            /* each a sequence of tags (appends add one) */
    size_t ntags, captags;
    bool enabled;
};

struct seq_collector {
    struct lseq **v;
    size_t n, cap;
    struct lmap names;
};

static struct seq_collector *collector(struct loader *L)
{
    if (!L->seqc && !(L->seqc = calloc(1, sizeof(*L->seqc))))
        L->oom = true;
    return L->seqc;
}

void sequence_loader_free(struct loader *L)
{
    struct seq_collector *c = L->seqc;
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        free(c->v[i]->tags);
    free(c->v);
    lmap_free(&c->names);
    free(c);
    L->seqc = NULL;
}

/* ---- reading ---- */

static const char *const seq_keys[] = {"desc", "by", "within", "steps", "unless", "output", "priority", "tags",
                                       "enabled", NULL};

static struct lkey *key_of(struct lseq *s, const char *key)
{
    if (strcmp(key, "desc") == 0)
        return &s->desc;
    if (strcmp(key, "by") == 0)
        return &s->by;
    if (strcmp(key, "within") == 0)
        return &s->within;
    if (strcmp(key, "steps") == 0)
        return &s->steps;
    if (strcmp(key, "unless") == 0)
        return &s->unless;
    if (strcmp(key, "output") == 0)
        return &s->output;
    if (strcmp(key, "priority") == 0)
        return &s->priority;
    return NULL;
}

static int add_tags(struct loader *L, struct lseq *s, const struct lfile *f, const struct ynode *tags)
{
    if (tags->kind != YN_SEQ) {
        error_at(L, at_node(f, tags), "Value for key 'tags' is not a sequence");
        return -1;
    }
    for (size_t i = 0; i < tags->count; i++)
        if (tags->items[i]->kind != YN_SCALAR || ytree_is_null(tags->items[i])) {
            error_at(L, at_node(f, tags->items[i]), "sequence value is not scalar");
            return -1;
        }
    if (vec_grow(L, &s->tags, &s->captags, s->ntags, sizeof(*s->tags)) != 0)
        return -1;
    s->tags[s->ntags++] = (struct lkey){f, tags};
    return 0;
}

/* `override: {KEY: replace|append}` of an existing sequence: every other
 * key of the item must be named there. */
static void read_override(struct loader *L, const struct lfile *f, const struct ynode *item, struct lseq *s,
                          const struct ynode *ov)
{
    if (ov->kind != YN_MAP) {
        error_at(L, at_node(f, ov), "'override' must be a mapping of keys to append or replace");
        return;
    }
    for (size_t i = 0; i + 1 < item->count; i += 2) {
        const char *k = item->items[i]->value;
        if (strcmp(k, "sequence") == 0 || strcmp(k, "override") == 0)
            continue;
        if (!ytree_get(ov, k))
            error_at(L, at_node(f, item->items[i]), "sequence '%s': Unexpected key '%s': no corresponding entry "
                     "under 'override' is defined.", s->name, k);
    }
    for (size_t i = 0; i + 1 < ov->count; i += 2) {
        const struct ynode *k = ov->items[i], *v = ov->items[i + 1];
        if (k->kind != YN_SCALAR || v->kind != YN_SCALAR) {
            error_at(L, at_node(f, k), "'override' maps keys to append or replace");
            return;
        }
        bool append = strcmp(v->value, "append") == 0, replace = strcmp(v->value, "replace") == 0;
        bool known = false;
        for (size_t j = 0; seq_keys[j]; j++)
            known |= strcmp(seq_keys[j], k->value) == 0;
        if (!known || (!append && !replace) || (append && strcmp(k->value, "tags") != 0)) {
            error_at(L, at_node(f, v), "sequence '%s': cannot %s '%s' (a sequence's keys are replaced; tags may be "
                     "appended to)", s->name, v->value, k->value);
            return;
        }
        const struct ynode *val = ytree_get(item, k->value);
        if (!val) {
            error_at(L, at_node(f, k), "sequence '%s': An %s override for '%s' was specified but '%s' is not defined",
                     s->name, v->value, k->value, k->value);
            return;
        }
        if (strcmp(k->value, "enabled") == 0) {
            if (loader_bool(L, f, item, "enabled", &s->enabled, NULL) != 0)
                return;
        } else if (strcmp(k->value, "tags") == 0) {
            if (replace)
                s->ntags = 0;
            if (add_tags(L, s, f, val) != 0)
                return;
        } else {
            *key_of(s, k->value) = (struct lkey){f, val};
        }
    }
}

static struct lseq *define(struct loader *L, struct seq_collector *c, const char *name, size_t len)
{
    long i = lmap_get(&c->names, NULL, name, len);
    if (i >= 0) {   /* a definition replaces it where it stands */
        struct lseq *s = c->v[i];
        free(s->tags);
        memset(s, 0, sizeof(*s));
        return s;
    }
    if (c->n == SEQ_MAX_SEQUENCES)
        return NULL;
    struct lseq *s = tmp_alloc(L, sizeof(*s));
    if (!s || vec_grow(L, &c->v, &c->cap, c->n, sizeof(*c->v)) != 0 ||
        lmap_put(&c->names, NULL, name, len, (uint32_t)c->n) != 0) {
        L->oom = true;
        return NULL;
    }
    memset(s, 0, sizeof(*s));
    c->v[c->n++] = s;
    return s;
}

void sequence_read(struct loader *L, const struct lfile *f, const struct ynode *item)
{
    static const char *const known[] = {"sequence", "desc", "by", "within", "steps", "unless", "output", "priority",
                                        "tags", "enabled", "override", NULL};
    struct seq_collector *c = collector(L);
    const struct ynode *namen;
    if (!c || loader_scalar(L, f, item, item, "sequence", false, &namen) != 0)
        return;
    const struct ynode *ov = ytree_get(item, "override");
    long idx = lmap_get(&c->names, NULL, namen->value, namen->len);
    if (ov) {
        if (idx < 0) {
            error_at(L, at_node(f, namen), "sequence '%s': override of a sequence that is not defined before",
                     namen->value);
            return;
        }
        read_override(L, f, item, c->v[idx], ov);
        loader_warn_unknown_keys(L, f, item, known);
        return;
    }
    /* a definition: what Falco requires of a rule, and the steps and window */
    const struct ynode *v[7];
    static const char *const required[] = {"desc", "within", "steps", "output", "priority"};
    for (size_t i = 0; i < 5; i++)
        if (!ytree_get(item, required[i])) {
            error_at(L, at_node(f, namen), "sequence '%s': Item has no mapping for key '%s'", namen->value,
                     required[i]);
            return;
        }
    bool enabled = true;
    if (loader_bool(L, f, item, "enabled", &enabled, NULL) != 0)
        return;
    struct lseq *s = define(L, c, namen->value, namen->len);
    if (!s) {
        if (!L->oom)
            error_at(L, at_node(f, namen), "more than %d sequences", SEQ_MAX_SEQUENCES);
        return;
    }
    s->name = namen->value;
    s->pos = at_node(f, namen);
    s->enabled = enabled;
    static const char *const keys[] = {"desc", "by", "within", "steps", "unless", "output", "priority"};
    for (size_t i = 0; i < 7; i++) {
        v[i] = ytree_get(item, keys[i]);
        if (v[i])
            *key_of(s, keys[i]) = (struct lkey){f, v[i]};
    }
    const struct ynode *tags = ytree_get(item, "tags");
    if (tags && !ytree_is_null(tags))
        add_tags(L, s, f, tags);
    loader_warn_unknown_keys(L, f, item, known);
}

/* ---- compiling: small parts ---- */

/* What compiling one sequence keeps at hand. */
struct sc {
    struct loader *L;
    const struct lseq *ls;
    struct sequence *s;
    char owner[200];              /* "sequence 'X', step 'y'": messages */
    uint16_t cur_step;            /* the step whose output or condition is read */
    bool failed;
};

static void owner_of(struct sc *c, const char *what)
{
    snprintf(c->owner, sizeof(c->owner), "sequence '%.120s'%s%.60s", c->ls->name, what[0] ? ", " : "", what);
}

static void fail_at(struct sc *c, struct lkey at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail_at(struct sc *c, struct lkey at, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    error_at(c->L, at_node(at.file, at.node), "sequence '%s': %s", c->ls->name, msg);
    c->failed = true;
}

/* An error at byte off of a built text. */
static void fail_in_text(struct sc *c, const struct tbuild *t, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fail_in_text(struct sc *c, const struct tbuild *t, size_t off, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    const char *file;
    unsigned line, col;
    tb_where(t, off, &file, &line, &col);
    diag_add(c->L->diag, true, file, line, col, "%s: %s", c->owner, msg);
    c->failed = true;
}

static char *rs_strndup(struct loader *L, const char *s, size_t n)
{
    char *d = arena_strndup(&L->rs->arena, s, n);
    if (!d)
        L->oom = true;
    return d;
}

/* Whether `name.` begins some field's name: such a step name would make
 * %name.x read as either. */
static bool field_prefix(const char *name, size_t n)
{
    for (size_t i = 0; i < fields_count(); i++) {
        const char *f = fields_info(i)->name;
        if (strncmp(f, name, n) == 0 && f[n] == '.')
            return true;
    }
    return false;
}

/* "10m", "30s", "500ms", "2h", "1d": nanoseconds, or -1. */
static int64_t parse_duration(const char *s)
{
    char *end;
    if (s[0] < '0' || s[0] > '9')
        return -1;
    unsigned long long n = strtoull(s, &end, 10);
    if (n > 10000000)
        return -1;
    int64_t unit = strcmp(end, "ms") == 0 ? 1000000ll
                 : strcmp(end, "s") == 0  ? 1000000000ll
                 : strcmp(end, "m") == 0  ? 60ll * 1000000000ll
                 : strcmp(end, "h") == 0  ? 3600ll * 1000000000ll
                 : strcmp(end, "d") == 0  ? 86400ll * 1000000000ll
                                          : -1;
    if (unit < 0)
        return -1;
    return (int64_t)n * unit;
}

/* Resolves "fd.name" or "proc.aname[2]" of text[0, len). */
static int resolve_field(struct sc *c, const char *text, size_t len, struct fieldref *out, char *err, size_t errlen)
{
    const char *br = memchr(text, '[', len);
    size_t base = len, arglen = 0;
    const char *arg = NULL;
    if (br) {
        if (text[len - 1] != ']') {
            snprintf(err, errlen, "'%.*s' is not a field", (int)(len > 80 ? 80 : len), text);
            return -1;
        }
        base = (size_t)(br - text);
        arg = br + 1;
        arglen = len - base - 2;
    }
    if (fields_resolve(text, base, arg, arglen, br != NULL, &c->L->rs->arena, out, err, errlen) != 0)
        return -1;
    struct tmpl_env env = loader_tmpl_env(c->L);
    out->slot = env.slot(env.ctx, out);
    return 0;
}

/* The capture of step's field (kept once per step and field). */
static int capture_of(struct sc *c, uint16_t step, const struct fieldref *f, const char *spelled, size_t len)
{
    struct sequence *s = c->s;
    for (uint16_t i = 0; i < s->ncaptures; i++)
        if (s->captures[i].step == step && fields_same(&s->captures[i].field, f))
            return i;
    if (s->ncaptures == SEQ_MAX_CAPTURES)
        return -1;
    struct seq_capture *cap = &s->captures[s->ncaptures];
    cap->step = step;
    cap->field = *f;
    size_t nlen = strlen(s->steps[step].name);
    char *key = arena_alloc(&c->L->rs->arena, nlen + 1 + len + 1);
    if (!key) {
        c->L->oom = true;
        return -1;
    }
    memcpy(key, s->steps[step].name, nlen);
    key[nlen] = '.';
    memcpy(key + nlen + 1, spelled, len);
    key[nlen + 1 + len] = '\0';
    cap->key = key;
    return s->ncaptures++;
}

static int step_named(const struct sequence *s, const char *name, size_t len, uint16_t before)
{
    for (uint16_t i = 0; i < before && i < s->nsteps; i++)
        if (strlen(s->steps[i].name) == len && memcmp(s->steps[i].name, name, len) == 0)
            return i;
    return -1;
}

/* ---- %STEP.FIELD in conditions ---- */

static bool blank(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v'; }
static bool field_char(char ch)
{
    return ((ch | 32) >= 'a' && (ch | 32) <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '.';
}

/* After a quote at s[i]: the index past its closing quote (backslash
 * escapes), or len. */
static size_t skip_quoted(const char *s, size_t len, size_t i)
{
    char q = s[i++];
    while (i < len && s[i] != q)
        i += s[i] == '\\' && i + 1 < len ? 2 : 1;
    return i < len ? i + 1 : len;
}

/* A %STEP.FIELD at s[i] naming one of the steps before `before`: its
 * length (up to a field argument's ']'), and the step; 0 when it is not. */
static size_t ref_at(const struct sequence *s, uint16_t before, const char *t, size_t len, size_t i, int *step)
{
    if (t[i] != '%')
        return 0;
    size_t j = i + 1;
    while (j < len && field_char(t[j]) && t[j] != '.')
        j++;
    if (j >= len || t[j] != '.' || j == i + 1)
        return 0;
    *step = step_named(s, t + i + 1, j - i - 1, before);
    if (*step < 0)
        return 0;
    j++;
    while (j < len && field_char(t[j]))
        j++;
    if (j < len && t[j] == '[') {
        const char *close = memchr(t + j, ']', len - j);
        if (close)
            j = (size_t)(close - t) + 1;
    }
    return j - i;
}

/* A `word` at the top level of the text: the keyword and/or/not. */
static bool keyword_at(const char *t, size_t len, size_t i, const char *kw)
{
    size_t n = strlen(kw);
    if (i + n > len || memcmp(t + i, kw, n) != 0)
        return false;
    bool before = i == 0 || blank(t[i - 1]) || t[i - 1] == ')' || t[i - 1] == '(';
    bool after = i + n == len || blank(t[i + n]) || t[i + n] == '(' || t[i + n] == ')';
    return before && after;
}

struct span {
    size_t a, b;
};

/* One `FIELD op %STEP.FIELD` conjunct [a, b) parsed. 0, or -1 said. */
static int parse_ref(struct sc *c, const struct tbuild *t, struct span sp, uint16_t before, struct seq_cond *out)
{
    const char *s = t->buf;
    size_t i = sp.a;
    while (i < sp.b && blank(s[i]))
        i++;
    size_t lhs = i;
    while (i < sp.b && field_char(s[i]))
        i++;
    if (i < sp.b && s[i] == '[') {
        const char *close = memchr(s + i, ']', sp.b - i);
        i = close ? (size_t)(close - s) + 1 : sp.b;
    }
    size_t lhs_end = i;
    while (i < sp.b && blank(s[i]))
        i++;
    enum filter_op op;
    if (i + 1 < sp.b && s[i] == '!' && s[i + 1] == '=') {
        op = OP_NE;
        i += 2;
    } else if (i + 1 < sp.b && s[i] == '=' && s[i + 1] == '=') {
        op = OP_EQ;
        i += 2;
    } else if (i < sp.b && s[i] == '=') {
        op = OP_EQ;
        i++;
    } else {
        fail_in_text(c, t, lhs, "an earlier step's field compares as FIELD = %%STEP.FIELD or FIELD != %%STEP.FIELD, "
                     "joined to the rest of the condition by 'and'");
        return -1;
    }
    while (i < sp.b && blank(s[i]))
        i++;
    int step;
    size_t rlen = i < sp.b ? ref_at(c->s, before, s, sp.b, i, &step) : 0;
    size_t end = i + rlen;
    while (end < sp.b && blank(s[end]))
        end++;
    if (!rlen || end != sp.b || lhs_end == lhs) {
        fail_in_text(c, t, lhs, "an earlier step's field compares as FIELD = %%STEP.FIELD or FIELD != %%STEP.FIELD, "
                     "joined to the rest of the condition by 'and'");
        return -1;
    }
    if (out->nrefs == SEQ_MAX_REFS) {
        fail_in_text(c, t, lhs, "more than %d comparisons with earlier steps", SEQ_MAX_REFS);
        return -1;
    }
    char err[300];
    struct seq_ref r = {.op = op};
    if (resolve_field(c, s + lhs, lhs_end - lhs, &r.lhs, err, sizeof(err)) != 0) {
        fail_in_text(c, t, lhs, "%s", err);
        return -1;
    }
    if (r.lhs.any_ancestor && op != OP_EQ) {
        fail_in_text(c, t, lhs, "'%.*s' without an index (any ancestor) compares with = only", (int)(lhs_end - lhs),
                     s + lhs);
        return -1;
    }
    const char *fname = memchr(s + i, '.', rlen) + 1;
    size_t flen = (size_t)(s + i + rlen - fname);
    struct fieldref rf;
    if (resolve_field(c, fname, flen, &rf, err, sizeof(err)) != 0) {
        fail_in_text(c, t, i, "%s", err);
        return -1;
    }
    if (rf.any_ancestor) {
        fail_in_text(c, t, i, "'%.*s' needs an index here (%.*s[1] is the parent)", (int)flen, fname, (int)flen, fname);
        return -1;
    }
    enum ftype a = fields_type(&r.lhs), b = fields_type(&rf);
    bool num_a = a == FT_INT || a == FT_UINT, num_b = b == FT_INT || b == FT_UINT;
    if (a != FT_DYN && b != FT_DYN && a != b && !(num_a && num_b)) {
        fail_in_text(c, t, lhs, "'%.*s' and '%.*s' hold different kinds of values: they can never be equal",
                     (int)(lhs_end - lhs), s + lhs, (int)rlen, s + i);
        return -1;
    }
    int cap = capture_of(c, (uint16_t)step, &rf, fname, flen);
    if (cap < 0) {
        fail_in_text(c, t, i, "more than %d fields of its steps kept", SEQ_MAX_CAPTURES);
        return -1;
    }
    r.capture = (uint16_t)cap;
    /* the join (=) first, then the != checks */
    if (op == OP_EQ) {
        memmove(&out->refs[out->njoins + 1], &out->refs[out->njoins], (out->nrefs - out->njoins) * sizeof(r));
        out->refs[out->njoins++] = r;
    } else {
        out->refs[out->nrefs] = r;
    }
    out->nrefs++;
    return 0;
}

/* in without its top-level `... and FIELD op %STEP.FIELD` conjuncts (into
 * out, positions kept), those parsed into cond's refs. 0, or -1 said. */
static int take_refs(struct sc *c, const struct tbuild *in, uint16_t before, struct seq_cond *cond, struct tbuild *out,
                     bool *taken)
{
    const char *s = in->buf ? in->buf : "";
    size_t len = in->len;
    struct span conj[256];
    size_t n = 0, start = 0;
    int depth = 0;
    bool has_or = false, any = false;
    size_t first_ref = SIZE_MAX, nested_ref = SIZE_MAX;
    for (size_t i = 0; i < len;) {
        int step;
        if (s[i] == '"' || s[i] == '\'') {
            i = skip_quoted(s, len, i);
            continue;
        }
        if (s[i] == '(' || s[i] == ')') {
            depth += s[i] == '(' ? 1 : -1;
            i++;
            continue;
        }
        size_t r = ref_at(c->s, SEQ_MAX_STEPS, s, len, i, &step);
        if (r) {
            if (step >= before) {
                fail_in_text(c, in, i, "'%.*s' names step '%s', which is not before this one", (int)r, s + i,
                             c->s->steps[step].name);
                return -1;
            }
            any = true;
            if (depth > 0 && nested_ref == SIZE_MAX)
                nested_ref = i;
            if (first_ref == SIZE_MAX)
                first_ref = i;
            i += r;
            continue;
        }
        if (depth == 0 && keyword_at(s, len, i, "and")) {
            if (n == sizeof(conj) / sizeof(conj[0])) {
                fail_in_text(c, in, i, "more than %zu conditions joined by 'and'", n);
                return -1;
            }
            conj[n++] = (struct span){start, i};
            start = i += 3;
            continue;
        }
        if (depth == 0 && keyword_at(s, len, i, "or"))
            has_or = true;
        i++;
    }
    *taken = any;
    if (!any)
        return 0;
    if (nested_ref != SIZE_MAX || has_or) {
        fail_in_text(c, in, nested_ref != SIZE_MAX ? nested_ref : first_ref,
                     "a comparison with an earlier step's field goes at the top level of the condition, joined to the "
                     "rest by 'and' (not inside parentheses, nor beside an 'or')");
        return -1;
    }
    if (n == sizeof(conj) / sizeof(conj[0])) {
        fail_in_text(c, in, start, "more than %zu conditions joined by 'and'", n);
        return -1;
    }
    conj[n++] = (struct span){start, len};
    bool first = true;
    for (size_t k = 0; k < n; k++) {
        bool ref = false;
        for (size_t i = conj[k].a; i < conj[k].b && !ref;) {
            int step;
            if (s[i] == '"' || s[i] == '\'') {
                i = skip_quoted(s, len, i);
                continue;
            }
            ref = ref_at(c->s, before, s, len, i, &step) > 0;
            i++;
        }
        if (ref) {
            if (parse_ref(c, in, conj[k], before, cond) != 0)
                return -1;
            continue;
        }
        if (!first)
            tb_gen(out, in->p[0].file, in->p[0].node, " and ", 5);
        tb_copy_range(out, in, conj[k].a, conj[k].b);
        first = false;
    }
    if (first) {
        fail_in_text(c, in, first_ref, "a step needs a condition besides its comparisons with earlier steps (evt.type "
                     "= ..., a macro)");
        return -1;
    }
    return 0;
}

/* ---- compiling: conditions ---- */

/* The text of a condition node, lists spliced in. */
static void condition_text(struct loader *L, struct lkey k, struct tbuild *out)
{
    struct ftext ft = {0};
    struct frag g = {.file = k.file, .node = k.node, .off = 0, .len = k.node->len};
    ft.head = ft.tail = &g;
    ft.has = true;
    struct tbuild raw = {0};
    tb_join(&raw, &ft);
    splice_lists(L, &raw, out);
    if (raw.oom || out->oom)
        L->oom = true;
    tb_free(&raw);
}

/* A step's or unless's condition: refs taken out, the rest compiled. */
static int compile_cond(struct sc *c, struct lkey k, uint16_t before, struct seq_cond *cond)
{
    if (k.node->kind != YN_SCALAR || ytree_is_null(k.node) || !k.node->len) {
        fail_at(c, k, "%s: the condition must be a non-empty string", c->owner);
        return -1;
    }
    struct tbuild spliced = {0}, rest = {0};
    condition_text(c->L, k, &spliced);
    bool taken = false;
    int rc = c->L->oom ? -1 : take_refs(c, &spliced, before, cond, &rest, &taken);
    if (rc == 0)
        rc = compile_condition(c->L, taken ? &rest : &spliced, at_node(k.file, k.node), c->owner, true, &cond->rule);
    tb_free(&spliced);
    tb_free(&rest);
    if (rc != 0)
        c->failed = true;
    return rc;
}

static int read_steps(struct sc *c)
{
    struct sequence *s = c->s;
    struct lkey k = c->ls->steps;
    const struct ynode *steps = k.node;
    if (steps->kind != YN_SEQ || steps->count == 0) {
        fail_at(c, k, "'steps' is a sequence of one step or more (- name: ..., condition: ...)");
        return -1;
    }
    if (steps->count > SEQ_MAX_STEPS) {
        fail_at(c, k, "%zu steps: at most %d", steps->count, SEQ_MAX_STEPS);
        return -1;
    }
    static const char *const known[] = {"name", "condition", "at_least", "distinct", NULL};
    /* names first: a condition names the steps before it */
    for (size_t i = 0; i < steps->count; i++) {
        const struct ynode *st = steps->items[i];
        struct lkey sk = {k.file, st};
        const struct ynode *name = st->kind == YN_MAP ? ytree_get(st, "name") : NULL;
        if (!name || name->kind != YN_SCALAR || !loader_identifier(name->value, name->len)) {
            fail_at(c, name ? (struct lkey){k.file, name} : sk, "step %zu needs a name, a word ([a-zA-Z][a-zA-Z0-9_]*) "
                    "that %%NAME.FIELD refers to", i + 1);
            return -1;
        }
        if (step_named(s, name->value, name->len, (uint16_t)i) >= 0 || strcmp(name->value, "unless") == 0) {
            fail_at(c, (struct lkey){k.file, name}, "two steps named '%s'", name->value);
            return -1;
        }
        if (field_prefix(name->value, name->len)) {
            fail_at(c, (struct lkey){k.file, name}, "a step named '%s' would read as a field ('%s.name'): name it "
                    "otherwise", name->value, name->value);
            return -1;
        }
        s->steps[i].name = rs_strndup(c->L, name->value, name->len);
        s->nsteps = (uint16_t)(i + 1);
    }
    for (size_t i = 0; i < steps->count; i++) {
        const struct ynode *st = steps->items[i];
        struct seq_step *step = &s->steps[i];
        loader_warn_unknown_keys(c->L, k.file, st, known);
        owner_of(c, "");
        snprintf(c->owner + strlen(c->owner), sizeof(c->owner) - strlen(c->owner), ", step '%s'", step->name);
        const struct ynode *cond = ytree_get(st, "condition");
        if (!cond) {
            fail_at(c, (struct lkey){k.file, st}, "step '%s' has no condition", step->name);
            return -1;
        }
        step->c.rule.name = s->name;
        if (compile_cond(c, (struct lkey){k.file, cond}, (uint16_t)i, &step->c) != 0)
            return -1;
        step->at_least = 1;
        const struct ynode *al = ytree_get(st, "at_least"), *di = ytree_get(st, "distinct");
        if (al) {
            char *end;
            unsigned long long n = al->kind == YN_SCALAR ? strtoull(al->value, &end, 10) : 0;
            if (al->kind != YN_SCALAR || al->value[0] < '0' || al->value[0] > '9' || *end || n < 1 ||
                n > SEQ_MAX_AT_LEAST) {
                fail_at(c, (struct lkey){k.file, al}, "step '%s': at_least is a count from 1 to %d", step->name,
                        SEQ_MAX_AT_LEAST);
                return -1;
            }
            step->at_least = (uint32_t)n;
        }
        if (di) {
            char err[300];
            if (di->kind != YN_SCALAR || resolve_field(c, di->value, di->len, &step->distinct, err, sizeof(err)) != 0) {
                fail_at(c, (struct lkey){k.file, di}, "step '%s': distinct: %s", step->name,
                        di->kind == YN_SCALAR ? err : "a field");
                return -1;
            }
            if (step->distinct.any_ancestor || step->at_least < 2) {
                fail_at(c, (struct lkey){k.file, di}, "step '%s': distinct counts the values of one field (with an "
                        "index) over at_least: 2 or more events", step->name);
                return -1;
            }
            step->has_distinct = true;
        }
        if (step->at_least > 1 && s->count_slots < step->at_least)
            s->count_slots = step->at_least;
    }
    return 0;
}

static int read_by(struct sc *c)
{
    struct lkey k = c->ls->by;
    if (!k.node || ytree_is_null(k.node)) {
        c->s->by_text = "";
        return 0;
    }
    const struct ynode *const *items = &k.node;
    size_t n = 1;
    if (k.node->kind == YN_SEQ) {
        items = (const struct ynode *const *)k.node->items;
        n = k.node->count;
    }
    if (n > SEQ_MAX_BY) {
        fail_at(c, k, "at most %d fields in 'by'", SEQ_MAX_BY);
        return -1;
    }
    struct strbuf text = {0};
    for (size_t i = 0; i < n; i++) {
        char err[300];
        struct fieldref *f = &c->s->by[i];
        if (items[i]->kind != YN_SCALAR || resolve_field(c, items[i]->value, items[i]->len, f, err, sizeof(err)) != 0) {
            fail_at(c, (struct lkey){k.file, items[i]}, "by: %s", items[i]->kind == YN_SCALAR ? err : "a field");
            strbuf_free(&text);
            return -1;
        }
        if (f->any_ancestor) {
            fail_at(c, (struct lkey){k.file, items[i]}, "by: '%s' needs an index", items[i]->value);
            strbuf_free(&text);
            return -1;
        }
        strbuf_printf(&text, "%s%s", i ? ", " : "", items[i]->value);
    }
    c->s->nby = (uint16_t)n;
    c->s->by_text = rs_strndup(c->L, text.data ? text.data : "", text.len);
    strbuf_free(&text);
    return 0;
}

/* ---- the output ---- */

/* The template's callbacks: the loader's, through the sequence's context. */
static uint32_t sc_slot(void *ctx, const struct fieldref *f)
{
    struct sc *c = ctx;
    struct tmpl_env e = loader_tmpl_env(c->L);
    return e.slot(e.ctx, f);
}

static void sc_error(void *ctx, size_t pos, const char *msg)
{
    struct sc *c = ctx;
    struct tmpl_env e = loader_tmpl_env(c->L);
    e.error(e.ctx, pos, msg);
    c->failed = true;
}

/* %STEP.FIELD in the output: the step's captured field. */
static int step_field(void *ctx, const char *ref, size_t reflen, size_t name_len, size_t pos, struct fieldref *out,
                      uint16_t *capture1)
{
    struct sc *c = ctx;
    const char *dot = memchr(ref, '.', name_len);
    int step = dot ? step_named(c->s, ref, (size_t)(dot - ref), c->s->nsteps) : -1;
    if (step < 0)
        return 0;
    char err[300];
    const char *f = dot + 1;
    size_t flen = (size_t)(ref + reflen - f);
    int cap = -1;
    if (resolve_field(c, f, flen, out, err, sizeof(err)) != 0)
        ;
    else if (out->any_ancestor)
        snprintf(err, sizeof(err), "'%.*s' needs an index in an output (%.*s[1] is the parent)", (int)flen, f,
                 (int)flen, f);
    else if ((cap = capture_of(c, (uint16_t)step, out, f, flen)) < 0)
        snprintf(err, sizeof(err), "more than %d fields of its steps kept", SEQ_MAX_CAPTURES);
    if (cap < 0) {
        sc_error(c, pos, err);
        return -1;
    }
    *capture1 = (uint16_t)(cap + 1);
    return 1;
}

static int compile_output(struct sc *c)
{
    struct lkey k = c->ls->output;
    if (k.node->kind != YN_SCALAR || !k.node->len) {
        fail_at(c, k, "'output' is a non-empty string");
        return -1;
    }
    size_t off = 0, len = k.node->len;   /* trimmed, as Falco trims a rule's */
    while (off < len && blank(k.node->value[off]))
        off++;
    while (len > off && blank(k.node->value[len - 1]))
        len--;
    struct frag g = {.file = k.file, .node = k.node, .off = off, .len = len - off};
    struct ftext ft = {.head = &g, .tail = &g, .has = true};
    struct tbuild text = {0};
    tb_join(&text, &ft);
    struct tmpl_env env = {.ctx = c, .arena = &c->L->rs->arena, .slot = sc_slot, .error = sc_error,
                           .step_field = step_field};
    struct loader *L = c->L;
    /* Falco's append_output, as on a rule's (a sequence matches an entry by
     * its name and tags; its source is syscall's) */
    struct ao_target target = {.name = c->s->name, .source = "", .tags = c->s->tags, .ntags = c->s->ntags,
                               .output = &g, .pos = &c->ls->pos};
    append_output_text(L, &target, &text);
    L->cur_text = &text;
    int rc = template_compile(&env, text.buf ? text.buf : "", text.len, &c->s->output);
    if (rc == 0)
        rc = append_output_fields(L, &target, &env, &c->s->output);
    L->cur_text = NULL;
    if (text.oom)
        L->oom = true;
    tb_free(&text);
    if (rc != 0)
        c->failed = true;
    return rc;
}

/* ---- what each condition reads beside itself (for needs.c) ---- */

struct fields_acc {
    struct tmpl_part *parts;
    size_t n, cap;
};

static void acc_add(struct loader *L, struct fields_acc *a, const struct fieldref *f)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 16;
        struct tmpl_part *p = arena_alloc(&L->rs->arena, cap * sizeof(*p));
        if (!p) {
            L->oom = true;
            return;
        }
        if (a->n)
            memcpy(p, a->parts, a->n * sizeof(*p));
        a->parts = p;
        a->cap = cap;
    }
    a->parts[a->n++] = (struct tmpl_part){.text = "", .has_field = true, .field = *f};
}

/* The pseudo-rule's "output": every field read at cond's events besides
 * its condition. */
static void reads_beside(struct sc *c, struct seq_cond *cond, int step, bool last)
{
    struct sequence *s = c->s;
    struct fields_acc a = {0};
    for (uint16_t i = 0; i < s->nby; i++)
        acc_add(c->L, &a, &s->by[i]);
    for (uint16_t i = 0; i < cond->nrefs; i++)
        acc_add(c->L, &a, &cond->refs[i].lhs);
    if (step >= 0) {
        if (s->steps[step].has_distinct)
            acc_add(c->L, &a, &s->steps[step].distinct);
        for (uint16_t i = 0; i < s->ncaptures; i++)
            if (s->captures[i].step == step)
                acc_add(c->L, &a, &s->captures[i].field);
    }
    if (last)
        for (size_t i = 0; i < s->output.nparts; i++)
            if (s->output.parts[i].has_field && !s->output.parts[i].capture1)
                acc_add(c->L, &a, &s->output.parts[i].field);
    cond->rule.output = (struct template){.parts = a.parts, .nparts = a.n};
    cond->rule.enabled = s->enabled;
    cond->rule.name = s->name;
}

/* ---- one sequence ---- */

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static void tags_of(struct sc *c)
{
    const struct lseq *ls = c->ls;
    size_t n = 0;
    for (size_t i = 0; i < ls->ntags; i++)
        n += ls->tags[i].node->count;
    const char **tags = arena_alloc(&c->L->rs->arena, (n ? n : 1) * sizeof(*tags));
    if (!tags) {
        c->L->oom = true;
        return;
    }
    n = 0;
    for (size_t i = 0; i < ls->ntags; i++)
        for (size_t k = 0; k < ls->tags[i].node->count; k++)
            tags[n++] = ls->tags[i].node->items[k]->value;
    qsort(tags, n, sizeof(*tags), cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (!u || strcmp(tags[u - 1], tags[i]) != 0)
            tags[u++] = rs_strndup(c->L, tags[i], strlen(tags[i]));
    c->s->tags = tags;
    c->s->ntags = u;
    struct strbuf tj = {0};
    render_tags_json(&tj, tags, u);
    c->s->tags_json = tj.failed ? NULL : rs_strndup(c->L, tj.data ? tj.data : "[]", tj.data ? tj.len : 2);
    strbuf_free(&tj);
    if (!c->s->tags_json)
        c->L->oom = true;
}

/* A condition reading a field gVisor never reports disables the sequence,
 * as it does a rule (availability.h). */
static void check_absent(struct sc *c, struct seq_cond *cond, const char *what)
{
    char ignored[64];
    bool enabled = cond->rule.enabled;
    cond->rule.enabled = true;
    bool was_absent = availability_apply(c->L->rs, &cond->rule, ignored, sizeof(ignored));
    if (cond->rule.absent_disabled)
        c->L->rs->stats.rules_absent--;   /* counted for rules only */
    cond->rule.enabled = enabled;
    if (!was_absent || !cond->rule.absent_fields)
        return;
    if (rules_get_absent_mode() == RULES_ABSENT_RUN) {
        warn_at(c->L, c->ls->pos, "sequence '%s': %s needs fields gVisor never reports: %s; it runs "
                "(--rules-absent-fields run), though comparisons on them are always false", c->ls->name, what,
                cond->rule.absent_fields);
        return;
    }
    if (c->s->enabled)
        warn_at(c->L, c->ls->pos, "sequence '%s' is disabled: %s needs fields gVisor never reports: %s "
                "(--rules-absent-fields run runs it anyway)", c->ls->name, what, cond->rule.absent_fields);
    c->s->enabled = false;
}

static void compile_sequence(struct loader *L, const struct lseq *ls, struct sequence *s)
{
    struct sc c = {.L = L, .ls = ls, .s = s};
    owner_of(&c, "");
    memset(s, 0, sizeof(*s));
    s->name = rs_strndup(L, ls->name, strlen(ls->name));
    s->file = rs_strndup(L, ls->pos.file->name, strlen(ls->pos.file->name));
    s->line = ls->pos.node->line;
    s->enabled = ls->enabled;
    if (lmap_get(&L->rule_names, NULL, ls->name, strlen(ls->name)) >= 0) {
        error_at(L, ls->pos, "sequence '%s': a rule has this name: alerts name one or the other", ls->name);
        return;
    }
    const struct ynode *d = ls->desc.node;
    if (!d || d->kind != YN_SCALAR || !d->len)
        fail_at(&c, ls->desc.node ? ls->desc : (struct lkey){ls->pos.file, ls->pos.node},
                "'desc' is a non-empty string");
    else
        s->desc = rs_strndup(L, d->value, d->len);
    const struct ynode *p = ls->priority.node;
    if (!p || p->kind != YN_SCALAR || rules_priority_parse(p->value, &s->priority) != 0)
        fail_at(&c, ls->priority, "Invalid priority '%s': one of Emergency, Alert, Critical, Error, Warning, Notice, "
                "Informational (or Info), Debug", p && p->kind == YN_SCALAR ? p->value : "");
    const struct ynode *w = ls->within.node;
    s->within_ns = w && w->kind == YN_SCALAR ? parse_duration(w->value) : -1;
    if (s->within_ns <= 0 || s->within_ns > SEQ_MAX_WITHIN_NS)
        fail_at(&c, ls->within, "'within' is how long the whole chain may take, in the daemon's clock: a number and "
                "a unit (500ms, 30s, 10m, 2h, 1d), at most 7d");
    if (c.failed || read_by(&c) != 0 || read_steps(&c) != 0)
        return;
    if (ls->unless.node) {
        owner_of(&c, "unless");
        s->has_unless = true;
        s->unless.rule.name = s->name;
        if (compile_cond(&c, ls->unless, s->nsteps, &s->unless) != 0)
            return;
    }
    tags_of(&c);   /* before the output: append_output matches the tags */
    owner_of(&c, "output");
    if (compile_output(&c) != 0)
        return;
    for (uint16_t i = 0; i < s->nsteps; i++)
        reads_beside(&c, &s->steps[i].c, i, i + 1 == s->nsteps);
    if (s->has_unless)
        reads_beside(&c, &s->unless, -1, false);
    for (uint16_t i = 0; i < s->nsteps; i++) {
        char what[100];
        snprintf(what, sizeof(what), "step '%s'", s->steps[i].name);
        check_absent(&c, &s->steps[i].c, what);
    }
    if (s->has_unless)
        check_absent(&c, &s->unless, "unless");
    for (uint16_t i = 0; i < s->nsteps; i++)
        s->steps[i].c.rule.enabled = s->enabled;
    s->unless.rule.enabled = s->enabled && s->has_unless;
    s->record_size = seq_record_size(s);
}

/* ---- the index by event type ---- */

static bool cond_has(const struct seq_cond *c, unsigned t, bool enters)
{
    if (enters && (!c->rule.sees_enter || t > EVTYPE_UNKNOWN))
        return false;
    return evtype_set_has(&c->rule.types, t);
}

static int build_index(struct rule_set *rs, struct seq_set *set, struct seq_index *ix, bool enters)
{
    size_t total = 0;
    uint32_t counts[EVTYPE_COUNT] = {0};
    for (int pass = 0; pass < 2; pass++) {
        uint32_t fill[EVTYPE_COUNT];
        if (pass == 1) {
            ix->entries = arena_alloc(&rs->arena, (total ? total : 1) * sizeof(*ix->entries));
            if (!ix->entries)
                return -1;
            ix->off[0] = 0;
            for (unsigned t = 0; t < EVTYPE_COUNT; t++)
                ix->off[t + 1] = ix->off[t] + counts[t];
            memcpy(fill, ix->off, sizeof(fill));
        }
        for (size_t i = 0; i < set->n; i++) {
            const struct sequence *s = &set->v[i];
            if (!s->enabled)
                continue;
            /* the last step first: an event completes a chain before it starts another */
            for (int k = s->nsteps; k >= 0; k--) {
                const struct seq_cond *c = k == s->nsteps ? (s->has_unless ? &s->unless : NULL) : &s->steps[k].c;
                if (!c)
                    continue;
                for (unsigned t = 0; t < EVTYPE_COUNT; t++) {
                    if (!cond_has(c, t, enters))
                        continue;
                    if (pass == 0) {
                        counts[t]++;
                        total++;
                    } else {
                        ix->entries[fill[t]++] =
                            (struct seq_entry){.seq = (uint32_t)i, .step = k == s->nsteps ? SEQ_UNLESS : (uint16_t)k};
                    }
                }
            }
        }
    }
    return 0;
}

void sequence_compile_all(struct loader *L)
{
    struct seq_collector *c = L->seqc;
    if (!c || !c->n)
        return;
    struct rule_set *rs = L->rs;
    struct seq_set *set = arena_alloc(&rs->arena, sizeof(*set));
    struct sequence *v = set ? arena_alloc(&rs->arena, c->n * sizeof(*v)) : NULL;
    if (!v) {
        L->oom = true;
        return;
    }
    memset(set, 0, sizeof(*set));
    set->v = v;
    size_t errors = L->diag->errors;
    for (size_t i = 0; i < c->n && !L->oom; i++) {
        compile_sequence(L, c->v[i], &v[set->n]);
        set->n++;
        set->enabled += v[set->n - 1].enabled;
    }
    if (L->diag->errors > errors || L->oom)
        return;
    if (build_index(rs, set, &set->exits, false) != 0 || build_index(rs, set, &set->enters, true) != 0) {
        L->oom = true;
        return;
    }
    rs->seq = set;
}

/* ---- the rule set's sequences (rules.h) ---- */

size_t rule_set_sequence_count(const struct rule_set *rs) { return rs->seq ? rs->seq->n : 0; }

void rule_set_sequence_info(const struct rule_set *rs, size_t i, struct sequence_info *out)
{
    const struct sequence *s = &rs->seq->v[i];
    *out = (struct sequence_info){.name = s->name, .desc = s->desc, .priority = s->priority, .enabled = s->enabled,
                                  .tags = s->tags, .ntags = s->ntags, .file = s->file, .line = s->line,
                                  .within_ns = s->within_ns, .by = s->by_text, .nsteps = s->nsteps,
                                  .has_unless = s->has_unless};
}

void rule_set_sequence_step(const struct rule_set *rs, size_t i, size_t k, struct sequence_step_info *out)
{
    const struct sequence *s = &rs->seq->v[i];
    if (k >= s->nsteps) {
        *out = (struct sequence_step_info){.name = "unless", .at_least = 1};
        return;
    }
    const struct seq_step *st = &s->steps[k];
    *out = (struct sequence_step_info){.name = st->name, .at_least = st->at_least,
                                       .distinct = st->has_distinct ? fields_name(&st->distinct) : NULL};
}

void rule_set_sequence_step_types(const struct rule_set *rs, size_t i, size_t k, char *buf, size_t buflen)
{
    const struct sequence *s = &rs->seq->v[i];
    rule_types_text(k < s->nsteps ? &s->steps[k].c.rule : &s->unless.rule, buf, buflen);
}
