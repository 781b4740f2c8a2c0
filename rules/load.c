/* load.c - rules files (Falco's YAML format) to a compiled rule_set: the
 * files read, and every item applied as Falco's rule loader applies it.
 *
 * Each item is read as falcosecurity/falco's rule_loader_reader.cpp reads it
 * (the same keys required, the same answers for append, override and the
 * standalone enabled, the same warnings: unknown keys, deprecated append,
 * invalid names) and applied as rule_loader_collector.cpp does: a
 * definition of an existing name replaces it where it stands, appends and
 * selective replaces change it, every definition and change numbered
 * (index: the first definition; visibility: the last change), which decides
 * what a list or macro sees when load_compile.c compiles everything. Errors
 * and warnings carry FILE:LINE:COLUMN; unlike Falco, reading goes on past an
 * error, so one run names every problem.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "append_output.h"
#include "diag.h"
#include "json.h"
#include "loader.h"
#include "rules.h"
#include "sequence.h"

/* Falco's messages (userspace/engine/rule_loading_messages.h). */
#define WARNING_APPEND                                                                                                \
    "'append' key is deprecated. Add an 'append' entry (e.g. 'condition: append') under 'override' instead."
#define WARNING_ENABLED                                                                                               \
    "The standalone 'enabled' key usage is deprecated. The correct approach requires also a 'replace' entry under "  \
    "the 'override' key (i.e. 'enabled: replace')."
#define ERROR_OVERRIDE_APPEND                                                                                         \
    "Keys 'override' and 'append: true' cannot be used together. Add an 'append' entry (e.g. 'condition: append') "  \
    "under 'override' instead."
#define ERROR_NO_PREVIOUS_MACRO                                                                                       \
    "Macro uses 'append' or 'override.condition: append' but no macro by that name already exists"
#define ERROR_NO_PREVIOUS_LIST                                                                                        \
    "List uses 'append' or 'override.items: append' but no list by that name already exists"
#define ERROR_NO_PREVIOUS_RULE_APPEND                                                                                 \
    "Rule uses 'append' or 'override.<key>: append' but no rule by that name already exists"
#define ERROR_NO_PREVIOUS_RULE_REPLACE                                                                                \
    "An 'override.<key>: replace' to a rule was requested but no rule by that name already exists"

/* Said once per load, after Falco's message for the first change to an
 * item no earlier file defines: the usual cause is a falco_rules.local.yaml
 * checked (or loaded) without the files it changes, which Falco's
 * rules_files would have loaded before it. */
#define HINT_LOAD_ORDER                                                                                               \
    " (no file loaded before this one defines it: name the file that does first, in Falco's rules_files order, "   \
    "e.g. seccheckd rules check falco_rules.yaml falco-incubating_rules.yaml falco_rules.local.yaml)"

static const char *order_hint(struct loader *L)
{
    if (L->order_hinted)
        return "";
    L->order_hinted = true;
    return HINT_LOAD_ORDER;
}

/* ---- small utilities ---- */

void *tmp_alloc(struct loader *L, size_t n)
{
    void *p = arena_alloc(&L->tmp, n ? n : 1);
    if (!p)
        L->oom = true;
    return p;
}

int vec_grow(struct loader *L, void *arrp, size_t *cap, size_t n, size_t elem)
{
    void **arr = arrp;
    if (n < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 8;
    void *p = ncap <= SIZE_MAX / elem ? realloc(*arr, ncap * elem) : NULL;
    if (!p) {
        L->oom = true;
        return -1;
    }
    *arr = p;
    *cap = ncap;
    return 0;
}

int ivec_push(struct loader *L, struct ivec *v, const struct lfile *f, const struct ynode *n)
{
    if (vec_grow(L, &v->v, &v->cap, v->n, sizeof(*v->v)) != 0)
        return -1;
    v->v[v->n++] = (struct litem){.file = f, .node = n};
    return 0;
}

static void report(struct loader *L, bool is_error, struct lpos at, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));
static void report(struct loader *L, bool is_error, struct lpos at, const char *fmt, va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    unsigned line = 0, col = 0;
    if (at.node) {
        line = at.node->line;
        col = at.node->column;
    }
    diag_add(L->diag, is_error, at.file ? at.file->name : "rules", line, col, "%s", msg);
}

void error_at(struct loader *L, struct lpos at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(L, true, at, fmt, ap);
    va_end(ap);
}

void warn_at(struct loader *L, struct lpos at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(L, false, at, fmt, ap);
    va_end(ap);
}

static struct frag *frag_new(struct loader *L, const struct lfile *f, const struct ynode *n, size_t off, size_t len)
{
    struct frag *g = tmp_alloc(L, sizeof(*g));
    if (g)
        *g = (struct frag){.file = f, .node = n, .off = off, .len = len};
    return g;
}

static void ftext_set(struct loader *L, struct ftext *t, const struct lfile *f, const struct ynode *n)
{
    struct frag *g = frag_new(L, f, n, 0, n->len);
    t->head = t->tail = g;
    t->has = g != NULL;
}

/* " " and the scalar at the end: O(1), joined once when compiled. */
static void ftext_append(struct loader *L, struct ftext *t, const struct lfile *f, const struct ynode *n)
{
    if (!t->has) {
        ftext_set(L, t, f, n);
        return;
    }
    struct frag *g = frag_new(L, f, n, 0, n->len);
    if (!g)
        return;
    t->tail->next = g;
    t->tail = g;
}

static bool is_blank_char(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/* ---- YAML values as yaml-cpp decodes them ---- */

static bool is_null(const struct ynode *n) { return ytree_is_null(n); }

/* yaml-cpp's convert<bool>: y/yes/true/on and n/no/false/off, all lower
 * case, all upper case, or capitalized. */
static bool yaml_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"y", "yes", "true", "on"}, *const no[] = {"n", "no", "false", "off"};
    size_t n = strlen(s);
    if (!n)
        return false;
    bool upper = true, lower = true;
    for (size_t i = 0; i < n; i++) {
        upper &= !(s[i] >= 'a' && s[i] <= 'z');
        lower &= !(s[i] >= 'A' && s[i] <= 'Z');
    }
    bool capital = s[0] >= 'A' && s[0] <= 'Z';
    for (size_t i = 1; capital && i < n; i++)
        capital = !(s[i] >= 'A' && s[i] <= 'Z');
    if (!upper && !lower && !capital)
        return false;
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = true;
            return true;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = false;
            return true;
        }
    }
    return false;
}

/* yaml-cpp's convert<uint32_t>: a C++ stream read with the base taken from
 * the prefix (0x hex, 0 octal), no sign but '+', trailing blanks allowed. */
static bool yaml_uint32(const char *s, uint32_t *out)
{
    const char *p = s;
    if (*p == '-')
        return false;
    if (*p == '+')
        p++;
    unsigned base = 10;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
    } else if (p[0] == '0') {
        base = 8;
    }
    uint64_t v = 0;
    const char *digits = p;
    for (;; p++) {
        int d = *p >= '0' && *p <= '9' ? *p - '0'
              : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
              : *p >= 'A' && *p <= 'F' ? *p - 'A' + 10
                                       : 99;
        if (d >= (int)base)
            break;
        v = v * base + (unsigned)d;
        if (v > UINT32_MAX)
            return false;
    }
    if (p == digits)
        return false;
    while (is_blank_char(*p))
        p++;
    if (*p)
        return false;
    *out = (uint32_t)v;
    return true;
}

enum { DV_OPTIONAL = 1, DV_CAN_BE_EMPTY = 2 };

/* Falco's decode_val: the scalar under key. 0 with *out (NULL when absent
 * and optional, or empty and allowed), or -1 after the error. */
static int dval(struct loader *L, const struct lfile *f, const struct ynode *item, const struct ynode *at,
                const char *key, int flags, const struct ynode **out)
{
    *out = NULL;
    const struct ynode *v = ytree_get(item, key);
    if (!v) {
        if (flags & DV_OPTIONAL)
            return 0;
        error_at(L, at_node(f, at), "Item has no mapping for key '%s'", key);
        return -1;
    }
    if (is_null(v)) {
        if (flags & DV_CAN_BE_EMPTY)
            return 0;
        error_at(L, at_node(f, v), "Mapping for key '%s' is empty", key);
        return -1;
    }
    if (v->kind != YN_SCALAR) {
        error_at(L, at_node(f, v), "Value for key '%s' is not a scalar value", key);
        return -1;
    }
    if (v->len == 0) {
        if (flags & DV_CAN_BE_EMPTY)
            return 0;
        error_at(L, at_node(f, v), "Value for key '%s' must be non-empty", key);
        return -1;
    }
    *out = v;
    return 0;
}

/* An optional bool. 0 (*present says whether it was given), or -1. */
static int dbool(struct loader *L, const struct lfile *f, const struct ynode *item, const char *key, bool required,
                 bool *out, bool *present)
{
    const struct ynode *v;
    if (present)
        *present = false;
    if (dval(L, f, item, item, key, required ? 0 : DV_OPTIONAL, &v) != 0)
        return -1;
    if (!v)
        return 0;
    if (!yaml_bool(v->value, out)) {
        error_at(L, at_node(f, v), "Can't decode YAML scalar value of '%s' ('%s'): true or false", key, v->value);
        return -1;
    }
    if (present)
        *present = true;
    return 0;
}

static int duint32(struct loader *L, const struct lfile *f, const struct ynode *item, const char *key, uint32_t *out,
                   bool *present)
{
    const struct ynode *v;
    *present = false;
    if (dval(L, f, item, item, key, DV_OPTIONAL, &v) != 0)
        return -1;
    if (!v)
        return 0;
    if (!yaml_uint32(v->value, out)) {
        error_at(L, at_node(f, v), "Can't decode YAML scalar value of '%s' ('%.40s'): a number from 0 to %u", key,
                 v->value, UINT32_MAX);
        return -1;
    }
    *present = true;
    return 0;
}

/* Falco's warn_unknown_keys. */
static void warn_unknown_keys(struct loader *L, const struct lfile *f, const struct ynode *item,
                              const char *const *known)
{
    for (size_t i = 0; i + 1 < item->count; i += 2) {
        const struct ynode *k = item->items[i];
        if (k->kind != YN_SCALAR)
            continue;
        bool ok = false;
        for (size_t j = 0; !ok && known[j]; j++)
            ok = strcmp(known[j], k->value) == 0;
        if (!ok)
            warn_at(L, at_node(f, k), "Unknown key '%s'. The key will be ignored.", k->value);
    }
}

/* Keys must be strings (a YAML complex key cannot name anything). */
static int check_key_kinds(struct loader *L, const struct lfile *f, const struct ynode *item)
{
    for (size_t i = 0; i + 1 < item->count; i += 2)
        if (item->items[i]->kind != YN_SCALAR) {
            error_at(L, at_node(f, item->items[i]), "a key must be a string");
            return -1;
        }
    return 0;
}

/* ---- what sequence_load.c reads items with (loader.h) ---- */

int loader_scalar(struct loader *L, const struct lfile *f, const struct ynode *item, const struct ynode *at,
                  const char *key, bool optional, const struct ynode **out)
{
    return dval(L, f, item, at, key, optional ? DV_OPTIONAL : 0, out);
}

int loader_bool(struct loader *L, const struct lfile *f, const struct ynode *item, const char *key, bool *out,
                bool *present)
{
    return dbool(L, f, item, key, false, out, present);
}

void loader_warn_unknown_keys(struct loader *L, const struct lfile *f, const struct ynode *item,
                              const char *const *known)
{
    warn_unknown_keys(L, f, item, known);
}

/* ---- override: {key: append|replace} ---- */

struct overrides {
    const char *append[16], *replace[16];
    size_t nappend, nreplace;
};

static bool in_set(const char *const *set, const char *s)
{
    for (size_t i = 0; set[i]; i++)
        if (strcmp(set[i], s) == 0)
            return true;
    return false;
}

static bool overrides_has(const char *const *keys, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(keys[i], key) == 0)
            return true;
    return false;
}

/* Falco's decode_overrides. 0, or -1 after the error. */
static int decode_overrides(struct loader *L, const struct lfile *f, const struct ynode *item,
                            const char *const *can_append, const char *const *can_replace, struct overrides *o)
{
    memset(o, 0, sizeof(*o));
    const struct ynode *ov = ytree_get(item, "override");
    if (!ov || ov->kind == YN_SCALAR)   /* yaml-cpp iterates nothing in a scalar */
        return 0;
    if (ov->kind != YN_MAP) {
        error_at(L, at_node(f, ov), "'override' must be a mapping of keys to append or replace");
        return -1;
    }
    for (size_t i = 0; i + 1 < ov->count; i += 2) {
        const struct ynode *k = ov->items[i], *v = ov->items[i + 1];
        if (k->kind != YN_SCALAR || v->kind != YN_SCALAR) {
            error_at(L, at_node(f, k), "'override' maps keys to append or replace");
            return -1;
        }
        bool a = in_set(can_append, k->value), r = in_set(can_replace, k->value);
        if (strcmp(v->value, "append") == 0) {
            if (!a) {
                error_at(L, at_node(f, k), "Key '%s' cannot be appended to, use 'replace' instead", k->value);
                return -1;
            }
            if (!overrides_has(o->append, o->nappend, k->value) && o->nappend < 16)
                o->append[o->nappend++] = k->value;
        } else if (strcmp(v->value, "replace") == 0) {
            if (!r) {
                error_at(L, at_node(f, k), "Key '%s' cannot be replaced", k->value);
                return -1;
            }
            if (!overrides_has(o->replace, o->nreplace, k->value) && o->nreplace < 16)
                o->replace[o->nreplace++] = k->value;
        } else {
            error_at(L, at_node(f, v), "Invalid override operation for key '%s': '%s'. Allowed values are: %s%s",
                     k->value, v->value, a ? "append " : "", r ? "replace" : "");
            return -1;
        }
    }
    return 0;
}

/* The append flag, its deprecation warning, and the clash with override. */
static int decode_append(struct loader *L, const struct lfile *f, const struct ynode *item, const struct ynode *namen,
                         bool *append)
{
    *append = false;
    if (dbool(L, f, item, "append", false, append, NULL) != 0)
        return -1;
    if (*append)
        warn_at(L, at_node(f, namen), WARNING_APPEND);
    return 0;
}

/* ---- lists ---- */

/* Falco's RGX_BARESTR, ([^()"'[:space:]=,]+), matched whole. */
static bool bare_name(const char *s, size_t n)
{
    if (!n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (strchr("()\"'=,", s[i]) || is_blank_char(s[i]))
            return false;
    return true;
}

bool loader_identifier(const char *s, size_t n)
{
    if (!n || !((s[0] | 32) >= 'a' && (s[0] | 32) <= 'z'))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!(((s[i] | 32) >= 'a' && (s[i] | 32) <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return false;
    return true;
}

static int decode_items(struct loader *L, const struct lfile *f, const struct ynode *item, const struct ynode *namen,
                        const struct ynode **out)
{
    const struct ynode *items = ytree_get(item, "items");
    *out = NULL;
    if (!items) {
        error_at(L, at_node(f, namen), "Item has no mapping for key 'items'");
        return -1;
    }
    if (items->kind != YN_SEQ) {
        error_at(L, at_node(f, items), "Value for key 'items' is not a sequence");
        return -1;
    }
    for (size_t i = 0; i < items->count; i++)
        if (items->items[i]->kind != YN_SCALAR || is_null(items->items[i])) {
            error_at(L, at_node(f, items->items[i]), "sequence value is not scalar");
            return -1;
        }
    *out = items;
    return 0;
}

static struct llist *list_new(struct loader *L, const char *name, size_t nlen)
{
    struct llist *l = tmp_alloc(L, sizeof(*l));
    if (!l || vec_grow(L, &L->lists, &L->caplists, L->nlists, sizeof(*L->lists)) != 0 ||
        lmap_put(&L->list_names, NULL, name, nlen, (uint32_t)L->nlists) != 0) {
        L->oom = true;
        return NULL;
    }
    memset(l, 0, sizeof(*l));
    l->name = name;
    l->name_len = nlen;
    for (size_t i = 0; i < nlen && !l->needs_quoting_scan; i++)
        l->needs_quoting_scan = list_delim(name[i]);
    L->lists[L->nlists++] = l;
    return l;
}

static void read_list(struct loader *L, const struct lfile *f, const struct ynode *item)
{
    static const char *const items_only[] = {"items", NULL};
    static const char *const known[] = {"list", "items", "append", "override", NULL};
    const struct ynode *namen, *items;
    if (dval(L, f, item, item, "list", 0, &namen) != 0)
        return;
    const char *name = namen->value;
    struct lpos at = at_node(f, namen);
    if (!bare_name(name, namen->len))
        warn_at(L, at, "List has an invalid name. List names should match a regular expression: "
                "([^()\"'[:space:]=,]+)");
    bool append;
    struct overrides o;
    if (decode_items(L, f, item, namen, &items) != 0 || decode_append(L, f, item, namen, &append) != 0 ||
        decode_overrides(L, f, item, items_only, items_only, &o) != 0)
        return;
    if (append && (o.nappend || o.nreplace)) {
        error_at(L, at, ERROR_OVERRIDE_APPEND);
        return;
    }
    append |= overrides_has(o.append, o.nappend, "items");
    long idx = lmap_get(&L->list_names, NULL, name, namen->len);
    struct llist *l;
    if (append) {
        if (idx < 0) {
            error_at(L, at, "list '%s': " ERROR_NO_PREVIOUS_LIST "%s", name, order_hint(L));
            return;
        }
        l = L->lists[idx];
        l->visibility = L->next_index++;
    } else {
        if (idx >= 0) {
            l = L->lists[idx];   /* a definition replaces it, where it stands */
            l->raw.n = 0;
        } else {
            if (!(l = list_new(L, name, namen->len)))
                return;
            l->index = L->next_index;
            L->spaced_lists += l->needs_quoting_scan;
            if (L->spaced_lists > RULES_MAX_SPACED_LISTS && l->needs_quoting_scan) {
                error_at(L, at, "more than %d lists with a blank, comma, parenthesis or '=' in their names: each is "
                         "searched for in every condition", RULES_MAX_SPACED_LISTS);
                return;
            }
        }
        l->visibility = L->next_index++;
        l->pos = at;
    }
    for (size_t i = 0; i < items->count; i++)
        if (ivec_push(L, &l->raw, f, items->items[i]) != 0)
            return;
    warn_unknown_keys(L, f, item, known);
}

/* ---- macros ---- */

static void read_macro(struct loader *L, const struct lfile *f, const struct ynode *item)
{
    static const char *const cond_only[] = {"condition", NULL};
    static const char *const known[] = {"macro", "condition", "append", "override", NULL};
    const struct ynode *namen, *cond;
    if (dval(L, f, item, item, "macro", 0, &namen) != 0)
        return;
    const char *name = namen->value;
    struct lpos at = at_node(f, namen);
    if (!loader_identifier(name, namen->len))
        warn_at(L, at, "Macro has an invalid name. Macro names should match a regular expression: "
                "([a-zA-Z]+[a-zA-Z0-9_]*)");
    bool append;
    struct overrides o;
    if (dval(L, f, item, namen, "condition", 0, &cond) != 0 || decode_append(L, f, item, namen, &append) != 0 ||
        decode_overrides(L, f, item, cond_only, cond_only, &o) != 0)
        return;
    if (append && (o.nappend || o.nreplace)) {
        error_at(L, at, ERROR_OVERRIDE_APPEND);
        return;
    }
    append |= overrides_has(o.append, o.nappend, "condition");
    long idx = lmap_get(&L->macro_names, NULL, name, namen->len);
    struct lmacro *m;
    if (append) {
        if (idx < 0) {
            error_at(L, at, "macro '%s': " ERROR_NO_PREVIOUS_MACRO "%s", name, order_hint(L));
            return;
        }
        m = L->macros[idx];
        ftext_append(L, &m->cond, f, cond);
        m->visibility = L->next_index++;
    } else {
        if (idx >= 0) {
            m = L->macros[idx];   /* keeps its index: what saw it still does */
        } else {
            if (!(m = tmp_alloc(L, sizeof(*m))) ||
                vec_grow(L, &L->macros, &L->capmacros, L->nmacros, sizeof(*L->macros)) != 0 ||
                lmap_put(&L->macro_names, NULL, name, namen->len, (uint32_t)L->nmacros) != 0) {
                L->oom = true;
                return;
            }
            memset(m, 0, sizeof(*m));
            m->name = name;
            m->index = L->next_index;
            L->macros[L->nmacros++] = m;
        }
        ftext_set(L, &m->cond, f, cond);
        m->visibility = L->next_index++;
        m->pos = at;
    }
    warn_unknown_keys(L, f, item, known);
}

/* ---- exceptions ---- */

/* Falco's normalize_comp: surrounding blanks go. */
static void trim_span(const char *s, size_t len, size_t *off, size_t *n)
{
    size_t a = 0, b = len;
    while (a < b && (s[a] == ' ' || s[a] == '\t' || s[a] == '\r' || s[a] == '\n'))
        a++;
    while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\r' || s[b - 1] == '\n'))
        b--;
    *off = a;
    *n = b - a;
}

static bool span_is(const char *s, size_t n, const char *word) { return strlen(word) == n && memcmp(s, word, n) == 0; }

/* libsinsp's supported_operators. */
static bool is_operator(const char *s, size_t n)
{
    static const char *const ops[] = {"exists", "<=", "<", ">=", ">", "==", "=", "!=", "glob", "iglob", "contains",
                                      "icontains", "bcontains", "startswith", "bstartswith", "endswith", "regex",
                                      "intersects", "in", "pmatch", NULL};
    for (size_t i = 0; ops[i]; i++)
        if (span_is(s, n, ops[i]))
            return true;
    return false;
}

/* Falco's is_str_operator_with_modifier: "startswith oneof" and the like. */
static bool rules_is_modified_operator(const char *s, size_t n)
{
    static const char *const ops[] = {"=", "==", "!=", "contains", "icontains", "bcontains", "startswith",
                                      "bstartswith", "endswith", "glob", "iglob", "regex", NULL};
    const char *sp = memchr(s, ' ', n);
    if (!sp)
        return false;
    size_t a = (size_t)(sp - s);
    const char *mod = sp + 1;
    size_t mlen = n - a - 1;
    if (!(span_is(mod, mlen, "oneof") || span_is(mod, mlen, "anyof") || span_is(mod, mlen, "allof")))
        return false;
    for (size_t i = 0; ops[i]; i++)
        if (span_is(s, a, ops[i]))
            return true;
    return false;
}

/* Falco's decode of an exception's fields/comps/values entry: a scalar must
 * not be empty; sequences hold entries. */
static int check_entry(struct loader *L, const struct lfile *f, const struct ynode *v, const char *what)
{
    if (v->kind == YN_SCALAR && v->len == 0 && v->style != YS_PLAIN) {
        error_at(L, at_node(f, v), "Value of '%s' must be non-empty", what);
        return -1;
    }
    if (v->kind == YN_SEQ)
        for (size_t i = 0; i < v->count; i++)
            if (check_entry(L, f, v->items[i], what) != 0)
                return -1;
    return 0;
}

/* An entry's is_valid: a non-empty scalar or a non-empty sequence. */
static bool entry_valid(const struct ynode *v)
{
    if (!v)
        return false;
    if (v->kind == YN_SEQ)
        return v->count > 0;
    return v->kind == YN_SCALAR && v->len > 0 && !is_null(v);
}

/* Falco's read_rule_exceptions: the exceptions of one item into out (a
 * vector of the item's own). append: fields may be left out. */
static int read_exception(struct loader *L, const struct lfile *f, const struct ynode *e, bool append,
                          struct lexcvec *out, struct lmap *seen);

static int read_exceptions(struct loader *L, const struct lfile *f, const struct ynode *item, bool append,
                           struct lexcvec *out, bool *given)
{
    *given = false;
    const struct ynode *exs = ytree_get(item, "exceptions");
    if (!exs || is_null(exs))
        return 0;
    *given = true;
    if (exs->kind != YN_SEQ) {
        error_at(L, at_node(f, exs), "Rule exceptions must be a sequence");
        return -1;
    }
    struct lmap seen = {0};   /* this item's names: a second one warns (and both apply) */
    int rc = 0;
    for (size_t i = 0; i < exs->count && rc == 0; i++)
        rc = read_exception(L, f, exs->items[i], append, out, &seen);
    lmap_free(&seen);
    return rc;
}

/* One exception of an item into out. */
static int read_exception(struct loader *L, const struct lfile *f, const struct ynode *e, bool append,
                          struct lexcvec *out, struct lmap *seen)
{
    static const char *const known[] = {"name", "fields", "comps", "values", NULL};
    const struct ynode *namen;
    if (e->kind != YN_MAP) {
        error_at(L, at_node(f, e), "Rule exception must be a mapping");
        return -1;
    }
    if (dval(L, f, e, e, "name", 0, &namen) != 0)
        return -1;
    if (lmap_get(seen, NULL, namen->value, namen->len) >= 0)
        warn_at(L, at_node(f, e), "Multiple definitions of exception '%s' in the same rule", namen->value);
    else if (lmap_put(seen, NULL, namen->value, namen->len, 0) != 0)
        L->oom = true;
    const struct ynode *fields = ytree_get(e, "fields"), *comps = ytree_get(e, "comps");
    if (!fields && !append) {
        error_at(L, at_node(f, e), "exception '%s': Item has no mapping for key 'fields'", namen->value);
        return -1;
    }
    if ((fields && check_entry(L, f, fields, "fields") != 0) || (comps && check_entry(L, f, comps, "comps") != 0))
        return -1;
    if (vec_grow(L, &out->v, &out->cap, out->n, sizeof(*out->v)) != 0)
        return -1;
    struct lexc *x = &out->v[out->n++];
    memset(x, 0, sizeof(*x));
    x->name = namen->value;
    x->pos = at_node(f, e);
    x->fields = at_node(f, fields);
    x->comps = at_node(f, comps);
    const struct ynode *values = ytree_get(e, "values");
    if (values) {
        if (values->kind != YN_SEQ) {
            error_at(L, at_node(f, values), "Rule exception values must be a sequence");
            return -1;
        }
        for (size_t k = 0; k < values->count; k++)
            if (check_entry(L, f, values->items[k], "values") != 0 ||
                ivec_push(L, &x->values, f, values->items[k]) != 0)
                return -1;
    } else if (append) {
        warn_at(L, at_node(f, e), "Overriding/appending exception with no values");
    }
    warn_unknown_keys(L, f, e, known);
    return 0;
}

/* A field of an exception exists (Falco's is_valid_lhs_field); a
 * transformer is left to the condition's parser. */
static int check_exception_field(struct loader *L, const struct lfile *f, const struct ynode *n)
{
    if (n->kind != YN_SCALAR || memchr(n->value, '(', n->len))
        return n->kind == YN_SCALAR ? 0 : (error_at(L, at_node(f, n), "an exception's field must be a string"), -1);
    const char *arg = NULL;
    size_t arglen = 0, base = n->len;
    const char *br = memchr(n->value, '[', n->len);
    if (br && n->value[n->len - 1] == ']') {
        base = (size_t)(br - n->value);
        arg = br + 1;
        arglen = n->len - base - 2;
    }
    struct fieldref ref;
    char err[300];
    struct arena a;
    arena_init(&a, 4096, 1 << 20);
    int rc = fields_resolve(n->value, base, arg, arglen, br != NULL, &a, &ref, err, sizeof(err));
    arena_free(&a);
    if (rc != 0) {
        error_at(L, at_node(f, n), "'%s' is not a supported filter field (%s)", n->value, err);
        return -1;
    }
    return 0;
}

/* Falco's validate_exception_info: comps default ("=" per field, or in),
 * lengths equal, operators known, fields known (when the source is). */
static int validate_exception(struct loader *L, struct lexc *x, bool known_source)
{
    const struct lfile *f = x->pos.file;
    const struct ynode *fields = x->fields.node, *comps = x->comps.node;
    x->fields_list = fields->kind == YN_SEQ;
    size_t n = x->fields_list ? fields->count : 1;
    x->comp_text = tmp_alloc(L, n * sizeof(*x->comp_text));
    x->comp_len = tmp_alloc(L, n * sizeof(*x->comp_len));
    x->comp_node = tmp_alloc(L, n * sizeof(*x->comp_node));
    if (!x->comp_text || !x->comp_len || !x->comp_node)
        return -1;
    x->ncomps = n;
    if (x->fields_list) {
        if (!entry_valid(comps)) {
            for (size_t i = 0; i < n; i++) {
                x->comp_text[i] = "=";
                x->comp_len[i] = 1;
                x->comp_node[i] = NULL;
            }
        } else {
            size_t nc = comps->kind == YN_SEQ ? comps->count : 0;
            if (nc != n) {
                error_at(L, x->pos, "exception '%s': Fields and comps lists must have equal length", x->name);
                return -1;
            }
            for (size_t i = 0; i < n; i++) {
                const struct ynode *c = comps->items[i];
                size_t off = 0, len = 0;
                if (c->kind == YN_SCALAR)
                    trim_span(c->value, c->len, &off, &len);
                if (c->kind != YN_SCALAR || !(is_operator(c->value + off, len) ||
                                              rules_is_modified_operator(c->value + off, len))) {
                    error_at(L, at_node(f, c), "exception '%s': '%.*s' is not a supported comparison operator",
                             x->name, (int)(c->kind == YN_SCALAR ? len : 0), c->kind == YN_SCALAR ? c->value + off : "");
                    return -1;
                }
                x->comp_text[i] = c->value + off;
                x->comp_len[i] = len;
                x->comp_node[i] = c;
            }
        }
        for (size_t i = 0; known_source && i < n; i++)
            if (check_exception_field(L, f, fields->items[i]) != 0)
                return -1;
        return 0;
    }
    if (!entry_valid(comps)) {
        x->comp_text[0] = "in";
        x->comp_len[0] = 2;
        x->comp_node[0] = NULL;
    } else {
        if (comps->kind == YN_SEQ) {
            error_at(L, at_node(f, comps), "exception '%s': Fields and comps must both be strings", x->name);
            return -1;
        }
        size_t off, len;
        trim_span(comps->value, comps->len, &off, &len);
        const char *c = comps->value + off;
        if (!(span_is(c, len, "in") || span_is(c, len, "pmatch") || span_is(c, len, "intersects") ||
              rules_is_modified_operator(c, len))) {
            error_at(L, at_node(f, comps), "exception '%s': When fields is a single value, comps must be one of (in, "
                     "pmatch, intersects) or a modifier operator (e.g. startswith oneof)", x->name);
            return -1;
        }
        x->comp_text[0] = c;
        x->comp_len[0] = len;
        x->comp_node[0] = comps;
    }
    if (known_source && check_exception_field(L, f, fields) != 0)
        return -1;
    return 0;
}

/* The rule's exception named name, of its current set, or NULL. */
static struct lexc *find_exception(struct loader *L, struct lrule *r, const char *name)
{
    long i = lmap_get(&L->exc_names, r, name, strlen(name));
    if (i < 0 || (size_t)i >= r->exc.n || strcmp(r->exc.v[i].name, name) != 0)
        return NULL;
    return &r->exc.v[i];
}

/* Adds x as the rule's next exception (the first of its name is the one
 * appends find). */
static int add_exception(struct loader *L, struct lrule *r, const struct lexc *x)
{
    if (vec_grow(L, &r->exc.v, &r->exc.cap, r->exc.n, sizeof(*r->exc.v)) != 0)
        return -1;
    r->exc.v[r->exc.n] = *x;
    if (!find_exception(L, r, x->name) &&
        lmap_put(&L->exc_names, r, x->name, strlen(x->name), (uint32_t)r->exc.n) != 0) {
        L->oom = true;
        return -1;
    }
    r->exc.n++;
    return 0;
}

static void clear_exceptions(struct lrule *r)
{
    for (size_t i = 0; i < r->exc.n; i++)
        free(r->exc.v[i].values.v);
    r->exc.n = 0;
}

/* ---- rules ---- */

static bool known_source(const char *s) { return strcmp(s, "syscall") == 0; }

/* Falco's find_prev_rule: the rule of that name, refusing another source. */
static int find_prev_rule(struct loader *L, struct lpos at, const char *name, const char *source,
                          struct lrule **out)
{
    long i = lmap_get(&L->rule_names, NULL, name, strlen(name));
    *out = i >= 0 ? L->rules[i] : NULL;
    if (*out && (*out)->source[0] && source[0] && strcmp((*out)->source, source) != 0) {
        error_at(L, at, "rule '%s': Rule has been re-defined with a different source ('%s', before '%s')", name,
                 source, (*out)->source);
        return -1;
    }
    return 0;
}

/* Falco's decode_tags: a sequence of strings (null is not one). */
static int check_tags(struct loader *L, const struct lfile *f, const struct ynode *tags)
{
    if (tags->kind != YN_SEQ) {
        error_at(L, at_node(f, tags), "Value for key 'tags' is not a sequence");
        return -1;
    }
    for (size_t i = 0; i < tags->count; i++)
        if (tags->items[i]->kind != YN_SCALAR || is_null(tags->items[i])) {
            error_at(L, at_node(f, tags->items[i]), "sequence value is not scalar");
            return -1;
        }
    return 0;
}

static int add_tags(struct loader *L, struct tagvec *t, const struct ynode *tags)
{
    for (size_t i = 0; i < tags->count; i++) {
        if (vec_grow(L, &t->v, &t->cap, t->n, sizeof(*t->v)) != 0)
            return -1;
        t->v[t->n++] = tags->items[i]->value;
    }
    return 0;
}

/* What one rule item carries toward a rule (Falco's rule_update_info). */
struct rule_update {
    const struct ynode *cond, *output, *desc, *tags, *priority_node;
    struct lexcvec exc;
    bool has_exc;
    bool has_priority, has_enabled, has_capture, has_capture_duration, has_warn, has_skip;
    enum rules_priority priority;
    bool enabled, capture, warn, skip;
    uint32_t capture_duration;
    const char *source;
};

static bool update_has_any(const struct rule_update *u)
{
    return u->cond || u->output || u->desc || u->tags || u->has_exc || u->has_priority || u->has_enabled ||
           u->has_capture || u->has_capture_duration || u->has_warn || u->has_skip;
}

static void update_free(struct rule_update *u)
{
    for (size_t i = 0; i < u->exc.n; i++)
        free(u->exc.v[i].values.v);
    free(u->exc.v);
}

static int parse_priority(struct loader *L, const struct lfile *f, const struct ynode *n, enum rules_priority *out)
{
    if (rules_priority_parse(n->value, out) != 0) {
        error_at(L, at_node(f, n), "Invalid priority '%s': one of Emergency, Alert, Critical, Error, Warning, Notice, "
                 "Informational (or Info), Debug", n->value);
        return -1;
    }
    return 0;
}

/* Falco's collector::append for rules. */
static void rule_append(struct loader *L, const struct lfile *f, struct lpos at, const char *name,
                        struct rule_update *u)
{
    struct lrule *r;
    if (find_prev_rule(L, at, name, u->source, &r) != 0)
        return;
    if (!r) {
        error_at(L, at, "rule '%s': " ERROR_NO_PREVIOUS_RULE_APPEND "%s", name, order_hint(L));
        return;
    }
    if (!update_has_any(u)) {
        error_at(L, at, "rule '%s': Appended rule must have exceptions or condition property", name);
        return;
    }
    if (u->cond)
        ftext_append(L, &r->cond, f, u->cond);
    if (u->output)
        ftext_append(L, &r->output, f, u->output);
    if (u->desc)
        ftext_append(L, &r->desc, f, u->desc);
    if (u->tags && add_tags(L, &r->tags, u->tags) != 0)
        return;
    for (size_t i = 0; i < u->exc.n; i++) {
        struct lexc *x = &u->exc.v[i];
        struct lexc *prev = find_exception(L, r, x->name);
        if (!prev) {
            if (!entry_valid(x->fields.node)) {
                error_at(L, x->pos, "exception '%s': Rule exception must have fields property with a list of fields",
                         x->name);
                return;
            }
            if (!x->values.n) {
                error_at(L, x->pos, "exception '%s': Rule exception must have values property with a list of values",
                         x->name);
                return;
            }
            if (validate_exception(L, x, !r->unknown_source) != 0 || add_exception(L, r, x) != 0)
                return;
            x->values = (struct ivec){0};   /* moved */
            continue;
        }
        if (entry_valid(x->fields.node)) {
            error_at(L, x->pos, "exception '%s': Can not append exception fields to existing exception, only values",
                     x->name);
            return;
        }
        if (entry_valid(x->comps.node)) {
            error_at(L, x->pos, "exception '%s': Can not append exception comps to existing exception, only values",
                     x->name);
            return;
        }
        for (size_t k = 0; k < x->values.n; k++)
            if (ivec_push(L, &prev->values, x->values.v[k].file, x->values.v[k].node) != 0)
                return;
    }
    r->visibility = L->next_index++;
}

/* Falco's collector::selective_replace. */
static void rule_replace(struct loader *L, const struct lfile *f, struct lpos at, const char *name,
                         struct rule_update *u)
{
    struct lrule *r;
    if (find_prev_rule(L, at, name, u->source, &r) != 0)
        return;
    if (!r) {
        error_at(L, at, "rule '%s': " ERROR_NO_PREVIOUS_RULE_REPLACE "%s", name, order_hint(L));
        return;
    }
    if (!update_has_any(u)) {
        error_at(L, at, "rule '%s': The rule must have at least one field that can be replaced", name);
        return;
    }
    if (u->cond)
        ftext_set(L, &r->cond, f, u->cond);
    if (u->output)
        ftext_set(L, &r->output, f, u->output);
    if (u->desc)
        ftext_set(L, &r->desc, f, u->desc);
    if (u->tags) {
        r->tags.n = 0;
        if (add_tags(L, &r->tags, u->tags) != 0)
            return;
    }
    if (u->has_exc) {
        clear_exceptions(r);
        r->exc_gen++;
        for (size_t i = 0; i < u->exc.n; i++) {
            /* Falco does not validate here (and would then use empty comps): defaults are filled as for a definition */
            if (validate_exception(L, &u->exc.v[i], !r->unknown_source) != 0 || add_exception(L, r, &u->exc.v[i]) != 0)
                return;
            u->exc.v[i].values = (struct ivec){0};
        }
    }
    if (u->has_priority)
        r->priority = u->priority;
    if (u->has_capture)
        r->capture = u->capture;
    if (u->has_capture_duration)
        r->capture_duration = u->capture_duration;
    if (u->has_enabled)
        r->enabled = u->enabled;
    if (u->has_warn)
        r->warn_evttypes = u->warn;
    if (u->has_skip)
        r->skip_unknown = u->skip;
    r->visibility = L->next_index++;
}

static const char *const rule_appendable[] = {"condition", "output", "desc", "tags", "exceptions", NULL};
static const char *const rule_replaceable[] = {"condition", "output", "desc", "priority", "capture",
                                               "capture_duration", "tags", "exceptions", "enabled", "warn_evttypes",
                                               "skip-if-unknown-filter", NULL};

/* Decodes one key of an override update (Falco reads them in this order). */
static int decode_update_key(struct loader *L, const struct lfile *f, const struct ynode *item,
                             const struct ynode *namen, const char *key, bool append, const char *source,
                             struct rule_update *u)
{
    const struct ynode *v;
    if (strcmp(key, "condition") == 0) {
        u->source = source;
        return dval(L, f, item, namen, "condition", 0, &u->cond);
    }
    if (strcmp(key, "exceptions") == 0) {
        bool given;
        int rc = read_exceptions(L, f, item, append, &u->exc, &given);
        u->has_exc = true;
        return rc;
    }
    if (strcmp(key, "output") == 0)
        return dval(L, f, item, namen, "output", 0, &u->output);
    if (strcmp(key, "desc") == 0)
        return dval(L, f, item, namen, "desc", 0, &u->desc);
    if (strcmp(key, "tags") == 0) {
        u->tags = ytree_get(item, "tags");
        return check_tags(L, f, u->tags);
    }
    if (strcmp(key, "priority") == 0) {
        if (dval(L, f, item, namen, "priority", 0, &v) != 0 || parse_priority(L, f, v, &u->priority) != 0)
            return -1;
        u->has_priority = true;
        return 0;
    }
    if (strcmp(key, "capture") == 0)
        return dbool(L, f, item, "capture", true, &u->capture, &u->has_capture);
    if (strcmp(key, "capture_duration") == 0)
        return duint32(L, f, item, "capture_duration", &u->capture_duration, &u->has_capture_duration);
    if (strcmp(key, "enabled") == 0)
        return dbool(L, f, item, "enabled", true, &u->enabled, &u->has_enabled);
    if (strcmp(key, "warn_evttypes") == 0)
        return dbool(L, f, item, "warn_evttypes", true, &u->warn, &u->has_warn);
    return dbool(L, f, item, "skip-if-unknown-filter", true, &u->skip, &u->has_skip);
}

/* An item with override: an append of some keys, a replace of others, and
 * no key left that override does not name. */
static void read_rule_override(struct loader *L, const struct lfile *f, const struct ynode *item,
                               const struct ynode *namen, const char *source, const struct overrides *o)
{
    static const char *const order_append[] = {"condition", "exceptions", "output", "desc", "tags", NULL};
    static const char *const order_replace[] = {"condition", "exceptions", "output", "desc", "tags", "priority",
                                                "capture", "capture_duration", "enabled", "warn_evttypes",
                                                "skip-if-unknown-filter", NULL};
    const char *name = namen->value;
    struct lpos at = at_node(f, namen);
    bool expected[16] = {false};   /* rule_replaceable ∪ rule_appendable that the item defines, by rule_replaceable index */
    for (size_t i = 0; rule_replaceable[i]; i++)
        expected[i] = ytree_get(item, rule_replaceable[i]) != NULL;
    for (int pass = 0; pass < 2; pass++) {
        const char *const *keys = pass == 0 ? o->append : o->replace;
        size_t nkeys = pass == 0 ? o->nappend : o->nreplace;
        if (!nkeys)
            continue;
        const char *const *order = pass == 0 ? order_append : order_replace;
        struct rule_update u = {.source = ""};
        bool failed = false;
        for (size_t k = 0; order[k] && !failed; k++) {
            if (!overrides_has(keys, nkeys, order[k]))
                continue;
            size_t ei = 0;
            while (rule_replaceable[ei] && strcmp(rule_replaceable[ei], order[k]) != 0)
                ei++;
            if (!ytree_get(item, order[k])) {
                error_at(L, at, "rule '%s': An %s override for '%s' was specified but '%s' is not defined", name,
                         pass == 0 ? "append" : "replace", order[k], order[k]);
                failed = true;
                break;
            }
            expected[ei] = false;
            failed = decode_update_key(L, f, item, namen, order[k], pass == 0, source, &u) != 0;
        }
        if (!failed) {
            if (pass == 0)
                rule_append(L, f, at, name, &u);
            else
                rule_replace(L, f, at, name, &u);
        }
        update_free(&u);
        if (failed)
            return;
    }
    for (size_t i = 0; rule_replaceable[i]; i++)
        if (expected[i])
            error_at(L, at_node(f, ytree_get(item, rule_replaceable[i])),
                     "rule '%s': Unexpected key '%s': no corresponding entry under 'override' is defined.", name,
                     rule_replaceable[i]);
}

static struct lrule *rule_slot(struct loader *L, const char *name)
{
    long idx = lmap_get(&L->rule_names, NULL, name, strlen(name));
    if (idx >= 0) {
        struct lrule *r = L->rules[idx];   /* redefined: replaced where it stands */
        clear_exceptions(r);
        free(r->exc.v);
        free(r->tags.v);
        uint32_t index = r->index, gen = r->exc_gen + 1;
        memset(r, 0, sizeof(*r));
        r->index = index;
        r->exc_gen = gen;
        return r;
    }
    struct lrule *r = tmp_alloc(L, sizeof(*r));
    if (!r || vec_grow(L, &L->rules, &L->caprules, L->nrules, sizeof(*L->rules)) != 0 ||
        lmap_put(&L->rule_names, NULL, name, strlen(name), (uint32_t)L->nrules) != 0) {
        L->oom = true;
        return NULL;
    }
    memset(r, 0, sizeof(*r));
    r->index = L->next_index;
    L->rules[L->nrules++] = r;
    return r;
}

/* A full definition (Falco's collector::define for rules). */
static void read_rule_define(struct loader *L, const struct lfile *f, const struct ynode *item,
                             const struct ynode *namen)
{
    const char *name = namen->value;
    struct lpos at = at_node(f, namen);
    const struct ynode *cond, *output, *desc, *prio, *source;
    enum rules_priority priority;
    if (dval(L, f, item, namen, "condition", 0, &cond) != 0 || dval(L, f, item, namen, "output", 0, &output) != 0 ||
        dval(L, f, item, namen, "desc", 0, &desc) != 0 || dval(L, f, item, namen, "priority", 0, &prio) != 0 ||
        parse_priority(L, f, prio, &priority) != 0 || dval(L, f, item, namen, "source", DV_OPTIONAL, &source) != 0)
        return;
    bool enabled = true, capture = false, warn = true, skip = false, present;
    uint32_t duration = 0;
    struct lexcvec exc = {0};
    bool has_exc;
    const struct ynode *tags = ytree_get(item, "tags");
    if (dbool(L, f, item, "enabled", false, &enabled, NULL) != 0 ||
        dbool(L, f, item, "capture", false, &capture, NULL) != 0 ||
        duint32(L, f, item, "capture_duration", &duration, &present) != 0 ||
        dbool(L, f, item, "warn_evttypes", false, &warn, NULL) != 0 ||
        dbool(L, f, item, "skip-if-unknown-filter", false, &skip, NULL) != 0 ||
        (tags && check_tags(L, f, tags) != 0) ||
        read_exceptions(L, f, item, false, &exc, &has_exc) != 0)
        goto out;
    const char *src = source ? source->value : "syscall";
    struct lrule *prev;
    if (find_prev_rule(L, at, name, src, &prev) != 0)
        goto out;
    bool unknown = !known_source(src);
    if (unknown)
        warn_at(L, source ? at_node(f, source) : at, "rule '%s': Unknown source %s, skipping", name, src);
    for (size_t i = 0; i < exc.n; i++) {
        if (!entry_valid(exc.v[i].fields.node)) {
            error_at(L, exc.v[i].pos, "exception '%s': Rule exception item must have fields property with a list of "
                     "fields", exc.v[i].name);
            goto out;
        }
        if (validate_exception(L, &exc.v[i], !unknown) != 0)
            goto out;
    }
    struct lrule *r = rule_slot(L, name);
    if (!r)
        goto out;
    r->name = name;
    r->pos = at;
    r->cond_pos = at_node(f, cond);
    r->visibility = L->next_index++;
    r->source = src;
    r->unknown_source = unknown;
    ftext_set(L, &r->cond, f, cond);
    /* Falco trims the output of a definition */
    size_t off, len;
    trim_span(output->value, output->len, &off, &len);
    struct frag *g = frag_new(L, f, output, off, len);
    r->output = (struct ftext){.head = g, .tail = g, .has = g != NULL};
    ftext_set(L, &r->desc, f, desc);
    r->priority = priority;
    r->enabled = enabled;
    r->capture = capture;
    r->capture_duration = duration;
    r->warn_evttypes = warn;
    r->skip_unknown = skip;
    if (tags && add_tags(L, &r->tags, tags) != 0)
        goto out;
    for (size_t i = 0; i < exc.n; i++) {
        if (add_exception(L, r, &exc.v[i]) != 0)
            goto out;
        exc.v[i].values = (struct ivec){0};
    }
out:
    for (size_t i = 0; i < exc.n; i++)
        free(exc.v[i].values.v);
    free(exc.v);
}

static void read_rule(struct loader *L, const struct lfile *f, const struct ynode *item)
{
    static const char *const known[] = {"rule", "condition", "output", "desc", "priority", "source", "enabled",
                                        "capture", "capture_duration", "warn_evttypes", "skip-if-unknown-filter",
                                        "tags", "exceptions", "override", "append", NULL};
    const struct ynode *namen, *srcn;
    if (dval(L, f, item, item, "rule", 0, &namen) != 0)
        return;
    const char *name = namen->value;
    struct lpos at = at_node(f, namen);
    if (dval(L, f, item, namen, "source", DV_OPTIONAL | DV_CAN_BE_EMPTY, &srcn) != 0)
        return;
    const char *source = srcn ? srcn->value : "";
    bool append;
    struct overrides o;
    if (decode_append(L, f, item, namen, &append) != 0 ||
        decode_overrides(L, f, item, rule_appendable, rule_replaceable, &o) != 0)
        return;
    if (append && (o.nappend || o.nreplace)) {
        error_at(L, at, ERROR_OVERRIDE_APPEND);
        return;
    }
    if (o.nappend || o.nreplace) {
        read_rule_override(L, f, item, namen, source, &o);
    } else if (append) {
        /* Falco takes only the condition and the exceptions of an append:
         * output, desc, tags, enabled... are ignored. */
        struct rule_update u = {.source = source};
        bool given;
        if ((!ytree_get(item, "condition") || dval(L, f, item, namen, "condition", 0, &u.cond) == 0) &&
            read_exceptions(L, f, item, true, &u.exc, &given) == 0) {
            u.has_exc = given;
            rule_append(L, f, at, name, &u);
        }
        update_free(&u);
    } else if (!ytree_get(item, "condition") && !ytree_get(item, "output") && !ytree_get(item, "desc") &&
               !ytree_get(item, "priority")) {
        bool enabled;
        if (dbool(L, f, item, "enabled", true, &enabled, NULL) != 0)
            return;
        warn_at(L, at, WARNING_ENABLED);
        long idx = lmap_get(&L->rule_names, NULL, name, strlen(name));
        if (idx < 0) {
            error_at(L, at, "rule '%s': Rule has 'enabled' key but no rule by that name already exists%s", name,
                     order_hint(L));
            return;
        }
        L->rules[idx]->enabled = enabled;
    } else {
        read_rule_define(L, f, item, namen);
    }
    warn_unknown_keys(L, f, item, known);
}

/* ---- required versions ---- */

/* libsinsp's sinsp_version: sscanf("%u.%u.%u") == 3. */
static bool parse_semver(const char *s, uint32_t v[3])
{
    const char *p = s;
    for (int i = 0; i < 3; i++) {
        while (is_blank_char(*p))
            p++;
        bool neg = false;
        if (*p == '+' || *p == '-')
            neg = *p++ == '-';
        if (*p < '0' || *p > '9')
            return false;
        uint64_t x = 0;
        while (*p >= '0' && *p <= '9') {
            x = x * 10 + (uint64_t)(*p++ - '0');
            if (x > UINT32_MAX)
                x = UINT32_MAX + 1ull;   /* saturates, as strtoul gives ULONG_MAX */
        }
        uint32_t u = x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
        v[i] = neg ? (uint32_t)(0u - u) : u;
        if (i < 2 && *p++ != '.')
            return false;
    }
    return true;
}

static void read_engine_version(struct loader *L, const struct lfile *f, const struct ynode *item)
{
    static const char *const known[] = {"required_engine_version", NULL};
    const struct ynode *v;
    if (dval(L, f, item, item, "required_engine_version", 0, &v) != 0)
        return;
    uint32_t want[3], minor;
    if (yaml_uint32(v->value, &minor)) {
        /* the old progressive number is the semver minor (rule_loader_reader.h) */
        want[0] = RULES_FALCO_ENGINE_MAJOR;
        want[1] = minor;
        want[2] = RULES_FALCO_ENGINE_PATCH;
    } else if (!parse_semver(v->value, want)) {
        error_at(L, at_node(f, v), "Unable to parse engine version '%s' as a semver string. Expected \"x.y.z\" "
                 "semver format.", v->value);
        return;
    }
    /* sinsp_version::compatible_with: same major, and not older */
    const uint32_t have[3] = {RULES_FALCO_ENGINE_MAJOR, RULES_FALCO_ENGINE_MINOR, RULES_FALCO_ENGINE_PATCH};
    bool older = have[1] < want[1] || (have[1] == want[1] && have[2] < want[2]);
    if (have[0] != want[0] || older)
        error_at(L, at_node(f, v), "Rules require engine version %u.%u.%u, but engine version is %s (seccheckd loads "
                 "rules as the Falco engine of that version does)", want[0], want[1], want[2],
                 RULES_FALCO_ENGINE_VERSION);
    warn_unknown_keys(L, f, item, known);
}

/* One requirement: a plugin and its alternatives. The container plugin's
 * fields are built in, at any version Falco's rules ask for. */
static void read_plugin_requirement(struct loader *L, const struct lfile *f, const struct ynode *p)
{
    if (p->kind != YN_MAP) {
        error_at(L, at_node(f, p), "Plugin version must be a mapping");
        return;
    }
    const struct ynode *alts[65];
    size_t n = 0;
    alts[n++] = p;
    const struct ynode *more = ytree_get(p, "alternatives");
    if (more) {
        if (more->kind != YN_SEQ) {
            error_at(L, at_node(f, more), "Value of plugin version alternatives must be a sequence");
            return;
        }
        for (size_t i = 0; i < more->count; i++) {
            if (more->items[i]->kind != YN_MAP) {
                error_at(L, at_node(f, more->items[i]), "Plugin version alternative must be a mapping");
                return;
            }
            if (n < 65)
                alts[n++] = more->items[i];
        }
    }
    struct lplugin_req req = {.pos = at_node(f, p)};
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        const struct ynode *name, *version;
        if (dval(L, f, alts[i], alts[i], "name", 0, &name) != 0 ||
            dval(L, f, alts[i], alts[i], "version", 0, &version) != 0)
            return;
        uint32_t v[3];
        if (!parse_semver(version->value, v)) {
            error_at(L, at_node(f, version), "Invalid required version '%s' for plugin '%s'", version->value,
                     name->value);
            return;
        }
        for (size_t k = 0; k < i; k++) {
            const struct ynode *other = ytree_get(alts[k], "name");
            if (other && strcmp(other->value, name->value) == 0) {
                error_at(L, at_node(f, name), "Defined multiple alternative version requirements for plugin '%s'",
                         name->value);
                return;
            }
        }
        req.met |= strcmp(name->value, "container") == 0;
        int w = snprintf(req.names + used, sizeof(req.names) - used, "%s%s (>= %s)", i ? ", " : "", name->value,
                         version->value);
        if (w > 0)
            used = (size_t)w < sizeof(req.names) - used ? used + (size_t)w : sizeof(req.names) - 1;
    }
    if (vec_grow(L, &L->plugins, &L->capplugins, L->nplugins, sizeof(*L->plugins)) == 0)
        L->plugins[L->nplugins++] = req;
}

static void read_plugin_versions(struct loader *L, const struct lfile *f, const struct ynode *item)
{
    static const char *const known[] = {"required_plugin_versions", NULL};
    const struct ynode *reqs = ytree_get(item, "required_plugin_versions");
    if (reqs->kind != YN_SEQ) {
        error_at(L, at_node(f, reqs), "Value of required_plugin_versions must be a sequence");
        return;
    }
    for (size_t i = 0; i < reqs->count; i++)
        read_plugin_requirement(L, f, reqs->items[i]);
    warn_unknown_keys(L, f, item, known);
}

/* Falco's check_plugin_requirements, after every file: a requirement no
 * alternative of which is the container plugin cannot be met. */
static void check_plugins(struct loader *L)
{
    for (size_t i = 0; i < L->nplugins; i++)
        if (!L->plugins[i].met)
            error_at(L, L->plugins[i].pos, "Plugin requirement not satisfied, must load one of: %s (seccheckd has no "
                     "plugins: only the container plugin's fields are built in)", L->plugins[i].names);
}

/* ---- items and files ---- */

static void read_item(struct loader *L, const struct lfile *f, const struct ynode *item)
{
    if (is_null(item))
        return;   /* "- " alone: Falco skips it */
    if (item->kind != YN_MAP) {
        error_at(L, at_node(f, item), "Unexpected element type. Each element should be a yaml associative array.");
        return;
    }
    if (++L->items > RULES_MAX_ITEMS) {
        if (!L->items_exceeded)
            error_at(L, at_node(f, item), "more than %d lists, macros and rules", RULES_MAX_ITEMS);
        L->items_exceeded = true;
        return;
    }
    if (check_key_kinds(L, f, item) != 0)
        return;
    if (ytree_get(item, "required_engine_version"))
        read_engine_version(L, f, item);
    else if (ytree_get(item, "required_plugin_versions"))
        read_plugin_versions(L, f, item);
    else if (ytree_get(item, "list"))
        read_list(L, f, item);
    else if (ytree_get(item, "macro"))
        read_macro(L, f, item);
    else if (ytree_get(item, "rule"))
        read_rule(L, f, item);
    else if (ytree_get(item, "sequence"))
        sequence_read(L, f, item);   /* seccheckd's own: Falco's loader skips it (sequence_load.c) */
    else
        warn_at(L, at_node(f, item), "Unknown top level item");
}

/* Offset of the first byte that is not valid UTF-8, or len. */
static size_t first_invalid_utf8(const char *s, size_t len)
{
    if (utf8_valid(s, len))
        return len;
    size_t lo = 0, hi = len;   /* the shortest invalid prefix */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (utf8_valid(s, mid + 1))
            lo = mid + 1;
        else
            hi = mid;
    }
    /* a valid prefix may end inside a sequence: back to its lead byte */
    while (lo > 0 && ((unsigned char)s[lo] & 0xc0) == 0x80)
        lo--;
    return lo;
}

static void line_col_of(const char *s, size_t off, unsigned *line, unsigned *col)
{
    unsigned l = 1, c = 1;
    for (size_t i = 0; i < off; i++) {
        if (s[i] == '\n') {
            l++;
            c = 1;
        } else if (((unsigned char)s[i] & 0xc0) != 0x80) {
            c++;
        }
    }
    *line = l;
    *col = c;
}

static void collect_file(struct loader *L, const char *name, const char *buf, size_t len)
{
    struct lfile *f = tmp_alloc(L, sizeof(*f));
    char *copy = arena_strndup(&L->tmp, name, strlen(name));
    if (!f || !copy) {
        L->oom = true;
        return;
    }
    /* A UTF-8 byte order mark is not text (yaml-cpp skips it too). */
    if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0) {
        buf += 3;
        len -= 3;
    }
    f->name = copy;
    f->buf = buf;
    f->len = len;
    L->rs->stats.files++;
    unsigned line, col;
    size_t bad = first_invalid_utf8(buf, len);
    if (bad < len) {
        line_col_of(buf, bad, &line, &col);
        diag_add(L->diag, true, name, line, col, "not UTF-8 (byte 0x%02x): rules files are UTF-8 text",
                 (unsigned char)buf[bad]);
        return;
    }
    struct ynode **docs;
    size_t ndocs;
    struct ytree_error yerr;
    if (ytree_parse(&L->tmp, buf, len, &docs, &ndocs, &yerr) != 0) {
        diag_add(L->diag, true, name, yerr.line, yerr.column, "%s", yerr.message);
        return;
    }
    for (size_t d = 0; d < ndocs; d++) {
        const struct ynode *doc = docs[d];
        if (is_null(doc))
            continue;
        if (doc->kind != YN_SEQ) {
            error_at(L, at_node(f, doc), "Rules content is not yaml array of objects (a rules file is a YAML "
                     "sequence of items: - rule: ..., - macro: ..., - list: ...)");
            continue;
        }
        for (size_t i = 0; i < doc->count; i++)
            read_item(L, f, doc->items[i]);
    }
}

/* ---- entry points ---- */

static struct rule_set *loader_begin(struct loader *L, struct rules_diag *diag)
{
    memset(L, 0, sizeof(*L));
    L->diag = diag;
    L->append = append_output_acquire();
    arena_init(&L->tmp, 64 * 1024, SIZE_MAX);
    L->rs = calloc(1, sizeof(*L->rs));
    if (L->rs)
        arena_init(&L->rs->arena, 64 * 1024, SIZE_MAX);
    return L->rs;
}

static struct rule_set *loader_end(struct loader *L)
{
    if (!L->oom)
        check_plugins(L);
    /* compiled even after an error, so one run names every problem */
    if (!L->oom)
        compile_all(L);
    if (L->oom)
        diag_add(L->diag, true, "rules", 0, 0, "out of memory loading the rules");
    for (size_t i = 0; i < L->nlists; i++) {
        struct llist *l = L->lists[i];
        if (l->expanded.v != l->compiled.v)
            free(l->expanded.v);
        free(l->compiled.v);
        free(l->raw.v);
    }
    for (size_t i = 0; i < L->nmacros; i++) {
        tb_free(&L->macros[i]->text);
        free(L->macros[i]->refs);
        for (struct deferred *d = L->macros[i]->unknown, *next; d; d = next) {
            next = d->next;
            free(d->file);
            free(d->message);
            free(d);
        }
    }
    for (size_t i = 0; i < L->nrules; i++) {
        tb_free(&L->rules[i]->cond_text);
        tb_free(&L->rules[i]->out_text);
        clear_exceptions(L->rules[i]);
        free(L->rules[i]->exc.v);
        free(L->rules[i]->tags.v);
    }
    sequence_loader_free(L);
    free(L->lists);
    free(L->macros);
    free(L->rules);
    free(L->plugins);
    free(L->slots);
    free(L->scan_refs);
    lmap_free(&L->list_names);
    lmap_free(&L->macro_names);
    lmap_free(&L->rule_names);
    lmap_free(&L->exc_names);
    lmap_free(&L->macro_bodies);
    arena_free(&L->tmp);
    append_output_release(L->append);
    if (L->diag->errors || L->oom) {
        rule_set_free(L->rs);
        return NULL;
    }
    return L->rs;
}

struct rule_set *rule_set_load_buffer(const char *name, const char *text, size_t len, struct rules_diag *diag)
{
    struct loader L;
    if (!loader_begin(&L, diag)) {
        diag_add(diag, true, name, 0, 0, "out of memory");
        return NULL;
    }
    if (len > RULES_FILE_MAX_BYTES) {
        unsigned line, col;
        line_col_of(text, RULES_FILE_MAX_BYTES, &line, &col);
        diag_add(diag, true, name, line, col, "larger than %u bytes: refused", RULES_FILE_MAX_BYTES);
    } else {
        collect_file(&L, name, text, len);
    }
    return loader_end(&L);
}

static void on_file(void *ctx, const char *path, const char *buf, size_t len)
{
    collect_file(ctx, path, buf, len);
}

struct rule_set *rule_set_load(const char *const *paths, size_t npaths, struct rules_diag *diag)
{
    struct loader L;
    if (!loader_begin(&L, diag)) {
        diag_add(diag, true, npaths ? paths[0] : "rules", 0, 0, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < npaths; i++)
        rules_read_path(&L.tmp, paths[i], diag, on_file, &L);
    return loader_end(&L);
}

void rule_set_free(struct rule_set *rs)
{
    if (!rs)
        return;
    filter_owned_free(rs->owned);
    arena_free(&rs->arena);
    free(rs);
}

void rule_set_get_stats(const struct rule_set *rs, struct rule_set_stats *out) { *out = rs->stats; }

size_t rule_set_rule_count(const struct rule_set *rs) { return rs->nrules; }

void rule_set_rule_info(const struct rule_set *rs, size_t i, struct rule_info *out)
{
    const struct rule *r = &rs->rules[i];
    *out = (struct rule_info){.name = r->name, .desc = r->desc, .priority = r->priority, .enabled = r->enabled,
                              .tags = r->tags, .ntags = r->ntags, .file = r->file, .line = r->line};
}

void rule_set_rule_types(const struct rule_set *rs, size_t i, char *buf, size_t buflen)
{
    rule_types_text(&rs->rules[i], buf, buflen);
}

void rule_types_text(const struct rule *r, char *buf, size_t buflen)
{
    if (!buflen)
        return;
    buf[0] = '\0';
    if (r->all_types || evtype_set_is_empty(&r->types)) {
        snprintf(buf, buflen, r->all_types ? "all" : "none");
        return;
    }
    size_t len = 0;
    for (unsigned t = 0; t < EVTYPE_COUNT && len + 1 < buflen; t++) {
        if (!evtype_set_has(&r->types, t))
            continue;
        int n = snprintf(buf + len, buflen - len, "%s%s", len ? "," : "", evtype_name(t));
        if (n < 0)
            break;
        len += (size_t)n;
    }
    if (len >= buflen)
        buf[buflen - 1] = '\0';
}
