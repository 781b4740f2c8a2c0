/* load.c - rules files (Falco's YAML format) to a compiled rule_set.
 *
 * Two passes, as Falco's loader: collect every item of every file in order
 * (lists, macros, rules; append, override, redefinition in place), then
 * compile: lists in order (an item naming an earlier list takes its items),
 * macros in order (each sees only the lists and macros defined before it;
 * appending moves that point), then rules (which see everything). Every
 * error is reported with its file, line and column: positions inside a
 * condition are mapped back through the YAML scalar to the file, block
 * scalars included.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "availability.h"
#include "diag.h"
#include "filter.h"
#include "json.h"
#include "render.h"
#include "ruleset.h"
#include "rules.h"
#include "yaml_tree.h"

struct lfile {
    const char *name;
    const char *buf;
    size_t len;
};

/* A node and the file it is in: a position. */
struct lpos {
    const struct lfile *file;
    const struct ynode *node;
};

/* Text joined from YAML scalars (a condition and its appends), with the
 * scalar each byte came from. */
struct seg {
    struct lpos at;
    size_t start, len;
};

struct ctext {
    char *text;
    size_t len;
    struct seg *segs;
    size_t nsegs;
};

struct llist {
    const char *name;
    struct lpos pos;
    const struct ynode **items;
    const struct lfile **item_files;
    size_t nitems, cap;
    size_t order;
    struct filter_list compiled;
};

enum { M_NEW, M_BUSY, M_DONE, M_FAILED };

struct lmacro {
    const char *name;
    struct lpos pos;
    struct ctext cond;
    size_t order;
    int state;
    const struct cnode *compiled;
};

struct lexc {
    const char *name;
    struct lpos pos;
    const struct ynode *fields, *comps;
    const struct ynode **values;
    const struct lfile **value_files;
    size_t nvalues, cap;
};

struct lrule {
    const char *name;
    struct lpos pos;
    struct ctext cond, output, desc;
    bool has_cond, has_output, has_desc;
    struct lpos prio;             /* node NULL: not given */
    bool enabled;
    bool warn_evttypes;
    const char **tags;
    size_t ntags, tagcap;
    struct lexc *exc;
    size_t nexc, exccap;
};

/* name -> index, open addressing. */
struct namemap {
    const char **names;
    size_t *idx;
    size_t cap, n;
};

struct loader {
    struct arena tmp;             /* everything of the load itself */
    struct rule_set *rs;
    struct rules_diag *diag;
    struct llist **lists;
    struct lmacro **macros;
    struct lrule **rules;
    size_t nlists, nmacros, nrules, caplists, capmacros, caprules;
    struct namemap list_names, macro_names, rule_names;
    size_t order, items;
    bool items_exceeded;
    bool warned_version;
    const char *warned_keys[16];
    size_t nwarned;
    /* compiling */
    const struct ctext *cur_text;     /* errors at offsets of this text... */
    struct lpos cur_node;             /* ...or at this node */
    size_t visible;                   /* lists and macros ordered before this are visible */
    const char *cur_macro;
    struct fieldref *slots;
    size_t nslots, capslots;
    bool oom;
};

/* ---- small utilities ---- */

static void *tmp_alloc(struct loader *L, size_t n)
{
    void *p = arena_alloc(&L->tmp, n ? n : 1);
    if (!p)
        L->oom = true;
    return p;
}

static char *rs_strdup(struct loader *L, const char *s)
{
    char *d = arena_strndup(&L->rs->arena, s, strlen(s));
    if (!d)
        L->oom = true;
    return d;
}

/* memcpy for arrays that may still be empty (and NULL). */
static void copy_n(void *dst, const void *src, size_t n)
{
    if (n)
        memcpy(dst, src, n);
}

static int grow(void *arrp, size_t *cap, size_t n, size_t elem)
{
    void **arr = arrp;
    if (n < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 16;
    void *p = realloc(*arr, ncap * elem);
    if (!p)
        return -1;
    *arr = p;
    *cap = ncap;
    return 0;
}

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static long namemap_get(const struct namemap *m, const char *name)
{
    if (!m->cap)
        return -1;
    for (size_t i = name_hash(name) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->names[i])
            return -1;
        if (strcmp(m->names[i], name) == 0)
            return (long)m->idx[i];
    }
}

static int namemap_put(struct namemap *m, const char *name, size_t idx)
{
    if ((m->n + 1) * 2 > m->cap) {
        struct namemap g = {.cap = m->cap ? m->cap * 2 : 64};
        g.names = calloc(g.cap, sizeof(*g.names));
        g.idx = calloc(g.cap, sizeof(*g.idx));
        if (!g.names || !g.idx) {
            free(g.names);
            free(g.idx);
            return -1;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->names[i])
                namemap_put(&g, m->names[i], m->idx[i]);
        free(m->names);
        free(m->idx);
        *m = g;
    }
    size_t i = name_hash(name) & (m->cap - 1);
    while (m->names[i] && strcmp(m->names[i], name) != 0)
        i = (i + 1) & (m->cap - 1);
    if (!m->names[i])
        m->n++;
    m->names[i] = name;
    m->idx[i] = idx;
    return 0;
}

static void namemap_free(struct namemap *m)
{
    free(m->names);
    free(m->idx);
}

/* ---- positions ---- */

/* Line and column (1-based, columns in characters as libyaml counts them)
 * of byte offset target, counting from the node's own start. */
static void pos_of_byte(const struct lfile *f, const struct ynode *n, size_t target, unsigned *line, unsigned *col)
{
    unsigned l = n->line, c = n->column;
    const unsigned char *b = (const unsigned char *)f->buf;
    for (size_t i = n->start; i < target && i < f->len; i++) {
        if (b[i] == '\n' || (b[i] == '\r' && (i + 1 >= f->len || b[i + 1] != '\n'))) {
            l++;
            c = 1;
        } else if ((b[i] & 0xc0) != 0x80) {
            c++;
        }
    }
    *line = l;
    *col = c;
}

/* Where byte `local` of a scalar's value came from in the file. The value
 * is the source minus quotes, indentation and escapes, with line breaks
 * folded: each value byte is matched to the next equal source byte (a
 * folded space to a line break). Exact for plain, quoted and block
 * scalars without escapes; near the spot otherwise. */
static void scalar_pos(const struct lfile *f, const struct ynode *n, size_t local, unsigned *line, unsigned *col)
{
    size_t src = n->start, end = n->end < f->len ? n->end : f->len;
    if (n->kind != YN_SCALAR) {
        pos_of_byte(f, n, src, line, col);
        return;
    }
    if (n->style == YS_SINGLE || n->style == YS_DOUBLE)
        src++;
    else if (n->style == YS_LITERAL || n->style == YS_FOLDED) {
        while (src < end && f->buf[src] != '\n')
            src++;
        if (src < end)
            src++;
    }
    if (local > n->len)
        local = n->len;
    for (size_t k = 0; k <= local && k < n->len; k++) {
        char v = n->value[k];
        size_t j = src;
        while (j < end && f->buf[j] != v && !(v == ' ' && f->buf[j] == '\n'))
            j++;
        if (j >= end)
            break;
        if (k == local) {
            src = j;
            break;
        }
        src = j + 1;
    }
    pos_of_byte(f, n, src, line, col);
}

static void error_at_node(struct loader *L, struct lpos at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void error_at_node(struct loader *L, struct lpos at, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    diag_add(L->diag, true, at.file->name, at.node ? at.node->line : 0, at.node ? at.node->column : 0, "%s", msg);
}

static void warn_at_node(struct loader *L, struct lpos at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void warn_at_node(struct loader *L, struct lpos at, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    diag_add(L->diag, false, at.file->name, at.node ? at.node->line : 0, at.node ? at.node->column : 0, "%s", msg);
}

static void error_at_text(struct loader *L, const struct ctext *t, size_t off, const char *msg)
{
    const struct seg *s = &t->segs[0];
    for (size_t i = 0; i < t->nsegs; i++)
        if (t->segs[i].start <= off)
            s = &t->segs[i];
    size_t local = off - s->start;
    unsigned line, col;
    scalar_pos(s->at.file, s->at.node, local, &line, &col);
    diag_add(L->diag, true, s->at.file->name, line, col, "%s", msg);
}

/* ---- YAML helpers ---- */

static struct lpos at_node(const struct lfile *f, const struct ynode *n) { return (struct lpos){f, n}; }

static bool is_null(const struct ynode *n)
{
    return n->kind == YN_SCALAR && n->style == YS_PLAIN &&
           (n->len == 0 || strcmp(n->value, "~") == 0 || strcmp(n->value, "null") == 0);
}

static const char *scalar(struct loader *L, const struct lfile *f, const struct ynode *n, const char *what)
{
    if (n->kind != YN_SCALAR) {
        error_at_node(L, at_node(f, n), "%s must be a string", what);
        return NULL;
    }
    return n->value;
}

static int boolean(struct loader *L, const struct lfile *f, const struct ynode *n, const char *what, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no", "off"};
    if (n->kind == YN_SCALAR) {
        for (int i = 0; i < 3; i++) {
            if (strcasecmp(n->value, yes[i]) == 0) {
                *out = true;
                return 0;
            }
            if (strcasecmp(n->value, no[i]) == 0) {
                *out = false;
                return 0;
            }
        }
    }
    error_at_node(L, at_node(f, n), "%s must be true or false", what);
    return -1;
}

static void ctext_append(struct loader *L, struct ctext *t, const struct lfile *f, const struct ynode *n)
{
    size_t sep = t->len ? 1 : 0;
    char *text = tmp_alloc(L, t->len + sep + n->len + 1);
    struct seg *segs = tmp_alloc(L, (t->nsegs + 1) * sizeof(*segs));
    if (!text || !segs)
        return;
    copy_n(text, t->text, t->len);
    if (sep)
        text[t->len] = ' ';
    memcpy(text + t->len + sep, n->value, n->len);
    text[t->len + sep + n->len] = '\0';
    copy_n(segs, t->segs, t->nsegs * sizeof(*segs));
    segs[t->nsegs] = (struct seg){.at = at_node(f, n), .start = t->len + sep, .len = n->len};
    t->text = text;
    t->len += sep + n->len;
    t->segs = segs;
    t->nsegs++;
}

static void ctext_set(struct loader *L, struct ctext *t, const struct lfile *f, const struct ynode *n)
{
    memset(t, 0, sizeof(*t));
    ctext_append(L, t, f, n);
}

/* Keys of an item must be known. */
static int check_keys(struct loader *L, const struct lfile *f, const struct ynode *item, const char *kind,
                      const char *const *known)
{
    int rc = 0;
    for (size_t i = 0; i + 1 < item->count; i += 2) {
        const struct ynode *k = item->items[i];
        bool ok = k->kind == YN_SCALAR;
        for (size_t j = 0; ok && known[j]; j++)
            if (strcmp(known[j], k->value) == 0)
                goto next;
        error_at_node(L, at_node(f, k), "unknown field '%s' in a %s (known: %s%s%s%s%s%s%s%s%s...)",
                      k->kind == YN_SCALAR ? k->value : "?", kind, known[0], known[1] ? ", " : "",
                      known[1] ? known[1] : "", known[2] ? ", " : "", known[2] ? known[2] : "",
                      known[3] ? ", " : "", known[3] ? known[3] : "", known[4] ? ", " : "", known[4] ? known[4] : "");
        rc = -1;
    next:;
    }
    return rc;
}

/* ---- collecting: lists ---- */

static int list_add_items(struct loader *L, struct llist *l, const struct lfile *f, const struct ynode *items)
{
    if (items->kind != YN_SEQ) {
        if (is_null(items))
            return 0;
        error_at_node(L, at_node(f, items), "'items' of list '%s' must be a sequence", l->name);
        return -1;
    }
    for (size_t i = 0; i < items->count; i++) {
        const struct ynode *it = items->items[i];
        if (it->kind != YN_SCALAR) {
            error_at_node(L, at_node(f, it), "items of list '%s' must be strings", l->name);
            return -1;
        }
        if (l->nitems == l->cap) {
            size_t cap = l->cap ? l->cap * 2 : 8;
            const struct ynode **n = tmp_alloc(L, cap * sizeof(*n));
            const struct lfile **nf = tmp_alloc(L, cap * sizeof(*nf));
            if (!n || !nf)
                return -1;
            copy_n(n, l->items, l->nitems * sizeof(*n));
            copy_n(nf, l->item_files, l->nitems * sizeof(*nf));
            l->items = n;
            l->item_files = nf;
            l->cap = cap;
        }
        l->item_files[l->nitems] = f;
        l->items[l->nitems++] = it;
    }
    return 0;
}

/* override: {key: append|replace}: 1 append, 0 replace, -1 error (the
 * keys allowed to do which are the caller's). */
static int override_mode(struct loader *L, const struct lfile *f, const struct ynode *ov, const char *key,
                         const char *const *may_append, const char *const *may_replace)
{
    const struct ynode *m = ytree_get(ov, key);
    if (!m)
        return -2;
    const char *v = m->kind == YN_SCALAR ? m->value : "";
    bool can_append = false, can_replace = false;
    for (size_t i = 0; may_append[i]; i++)
        can_append |= strcmp(may_append[i], key) == 0;
    for (size_t i = 0; may_replace[i]; i++)
        can_replace |= strcmp(may_replace[i], key) == 0;
    if (strcmp(v, "append") == 0 && can_append)
        return 1;
    if (strcmp(v, "replace") == 0 && can_replace)
        return 0;
    error_at_node(L, at_node(f, m), "override of '%s' must be %s", key,
                  can_append && can_replace ? "append or replace" : can_replace ? "replace" : "append");
    return -1;
}

/* Every key of an override item is named under override, and the other
 * way round. */
static int check_override(struct loader *L, const struct lfile *f, const struct ynode *item, const struct ynode *ov,
                          const char *name_key)
{
    if (ov->kind != YN_MAP) {
        error_at_node(L, at_node(f, ov), "'override' must be a mapping of keys to append or replace");
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i + 1 < item->count; i += 2) {
        const char *k = item->items[i]->value;
        if (strcmp(k, name_key) == 0 || strcmp(k, "override") == 0)
            continue;
        if (!ytree_get(ov, k)) {
            error_at_node(L, at_node(f, item->items[i]), "'%s' is not named under override (add %s: append or replace)",
                          k, k);
            rc = -1;
        }
    }
    for (size_t i = 0; i + 1 < ov->count; i += 2) {
        const char *k = ov->items[i]->kind == YN_SCALAR ? ov->items[i]->value : "";
        if (!ytree_get(item, k)) {
            error_at_node(L, at_node(f, ov->items[i]), "override names '%s', which the item does not have", k);
            rc = -1;
        }
    }
    return rc;
}

static int get_append(struct loader *L, const struct lfile *f, const struct ynode *item, bool *append)
{
    *append = false;
    const struct ynode *a = ytree_get(item, "append");
    if (a && boolean(L, f, a, "'append'", append) != 0)
        return -1;
    if (*append && ytree_get(item, "override")) {
        error_at_node(L, at_node(f, a), "'append' and 'override' cannot be used together");
        return -1;
    }
    return 0;
}

static void collect_list(struct loader *L, const struct lfile *f, const struct ynode *item, const struct ynode *namen)
{
    static const char *const known[] = {"list", "items", "append", "override", NULL};
    static const char *const items_only[] = {"items", NULL};
    if (check_keys(L, f, item, "list", known) != 0)
        return;
    const char *name = scalar(L, f, namen, "a list's name");
    bool append;
    if (!name || get_append(L, f, item, &append) != 0)
        return;
    const struct ynode *items = ytree_get(item, "items");
    const struct ynode *ov = ytree_get(item, "override");
    long idx = namemap_get(&L->list_names, name);
    if ((append || ov) && idx < 0) {
        error_at_node(L, at_node(f, namen), "list '%s' is not defined before: %s needs an earlier definition", name,
                      append ? "append" : "override");
        return;
    }
    if (!items) {
        error_at_node(L, at_node(f, namen), "list '%s' has no 'items'", name);
        return;
    }
    bool add = append;
    if (ov) {
        if (check_override(L, f, item, ov, "list") != 0)
            return;
        int mode = override_mode(L, f, ov, "items", items_only, items_only);
        if (mode < 0)
            return;
        add = mode == 1;
    }
    struct llist *l;
    if (idx >= 0) {
        l = L->lists[idx];
        if (!add)
            l->nitems = 0;
    } else {
        if (grow(&L->lists, &L->caplists, L->nlists, sizeof(*L->lists)) != 0 || !(l = tmp_alloc(L, sizeof(*l)))) {
            L->oom = true;
            return;
        }
        memset(l, 0, sizeof(*l));
        l->name = name;
        l->pos = at_node(f, namen);
        if (namemap_put(&L->list_names, name, L->nlists) != 0) {
            L->oom = true;
            return;
        }
        L->lists[L->nlists++] = l;
    }
    l->order = L->order;   /* visible to what comes after this item */
    list_add_items(L, l, f, items);
}

static void collect_macro(struct loader *L, const struct lfile *f, const struct ynode *item, const struct ynode *namen)
{
    static const char *const known[] = {"macro", "condition", "append", "override", NULL};
    static const char *const cond_only[] = {"condition", NULL};
    if (check_keys(L, f, item, "macro", known) != 0)
        return;
    const char *name = scalar(L, f, namen, "a macro's name");
    bool append;
    if (!name || get_append(L, f, item, &append) != 0)
        return;
    const struct ynode *cond = ytree_get(item, "condition");
    const struct ynode *ov = ytree_get(item, "override");
    long idx = namemap_get(&L->macro_names, name);
    if ((append || ov) && idx < 0) {
        error_at_node(L, at_node(f, namen), "macro '%s' is not defined before: %s needs an earlier definition", name,
                      append ? "append" : "override");
        return;
    }
    if (!cond || !scalar(L, f, cond, "a macro's condition")) {
        if (!cond)
            error_at_node(L, at_node(f, namen), "macro '%s' has no 'condition'", name);
        return;
    }
    bool add = append;
    if (ov) {
        if (check_override(L, f, item, ov, "macro") != 0)
            return;
        int mode = override_mode(L, f, ov, "condition", cond_only, cond_only);
        if (mode < 0)
            return;
        add = mode == 1;
    }
    struct lmacro *m;
    if (idx >= 0) {
        m = L->macros[idx];
    } else {
        if (grow(&L->macros, &L->capmacros, L->nmacros, sizeof(*L->macros)) != 0 || !(m = tmp_alloc(L, sizeof(*m)))) {
            L->oom = true;
            return;
        }
        memset(m, 0, sizeof(*m));
        m->name = name;
        m->pos = at_node(f, namen);
        if (namemap_put(&L->macro_names, name, L->nmacros) != 0) {
            L->oom = true;
            return;
        }
        L->macros[L->nmacros++] = m;
    }
    if (add)
        ctext_append(L, &m->cond, f, cond);
    else
        ctext_set(L, &m->cond, f, cond);
    m->order = L->order;
}

/* ---- collecting: rules ---- */

static int add_tags(struct loader *L, struct lrule *r, const struct lfile *f, const struct ynode *tags)
{
    if (tags->kind != YN_SEQ) {
        if (is_null(tags))
            return 0;
        error_at_node(L, at_node(f, tags), "'tags' must be a sequence of strings");
        return -1;
    }
    for (size_t i = 0; i < tags->count; i++) {
        const struct ynode *t = tags->items[i];
        if (t->kind != YN_SCALAR) {
            error_at_node(L, at_node(f, t), "'tags' must be a sequence of strings");
            return -1;
        }
        bool dup = false;
        for (size_t k = 0; k < r->ntags && !dup; k++)
            dup = strcmp(r->tags[k], t->value) == 0;
        if (dup)
            continue;
        if (grow(&r->tags, &r->tagcap, r->ntags, sizeof(*r->tags)) != 0) {
            L->oom = true;
            return -1;
        }
        r->tags[r->ntags++] = t->value;
    }
    return 0;
}

static int add_exceptions(struct loader *L, struct lrule *r, const struct lfile *f, const struct ynode *excs)
{
    static const char *const known[] = {"name", "fields", "comps", "values", NULL};
    if (excs->kind != YN_SEQ) {
        if (is_null(excs))
            return 0;
        error_at_node(L, at_node(f, excs), "'exceptions' must be a sequence");
        return -1;
    }
    for (size_t i = 0; i < excs->count; i++) {
        const struct ynode *e = excs->items[i];
        if (e->kind != YN_MAP) {
            error_at_node(L, at_node(f, e), "an exception must be a mapping with name, fields, comps, values");
            return -1;
        }
        if (check_keys(L, f, e, "exception", known) != 0)
            return -1;
        const struct ynode *namen = ytree_get(e, "name");
        const char *name = namen ? scalar(L, f, namen, "an exception's name") : NULL;
        if (!name) {
            if (!namen)
                error_at_node(L, at_node(f, e), "an exception needs a 'name'");
            return -1;
        }
        struct lexc *x = NULL;
        for (size_t k = 0; k < r->nexc && !x; k++)
            if (strcmp(r->exc[k].name, name) == 0)
                x = &r->exc[k];
        if (!x) {
            if (grow(&r->exc, &r->exccap, r->nexc, sizeof(*r->exc)) != 0) {
                L->oom = true;
                return -1;
            }
            x = &r->exc[r->nexc++];
            memset(x, 0, sizeof(*x));
            x->name = name;
            x->pos = at_node(f, namen);
        }
        const struct ynode *fields = ytree_get(e, "fields"), *comps = ytree_get(e, "comps");
        if (fields)
            x->fields = fields;
        if (comps)
            x->comps = comps;
        if (!x->fields) {
            error_at_node(L, at_node(f, namen), "exception '%s' needs 'fields'", name);
            return -1;
        }
        if (x->fields && x->pos.file != f)
            x->pos = at_node(f, namen);
        const struct ynode *values = ytree_get(e, "values");
        if (!values || is_null(values))
            continue;
        if (values->kind != YN_SEQ) {
            error_at_node(L, at_node(f, values), "exception '%s': 'values' must be a sequence", name);
            return -1;
        }
        for (size_t k = 0; k < values->count; k++) {
            if (x->nvalues == x->cap) {
                size_t cap = x->cap ? x->cap * 2 : 8;
                const struct ynode **nv = tmp_alloc(L, cap * sizeof(*nv));
                const struct lfile **nf = tmp_alloc(L, cap * sizeof(*nf));
                if (!nv || !nf)
                    return -1;
                copy_n(nv, x->values, x->nvalues * sizeof(*nv));
                copy_n(nf, x->value_files, x->nvalues * sizeof(*nf));
                x->values = nv;
                x->value_files = nf;
                x->cap = cap;
            }
            x->value_files[x->nvalues] = f;
            x->values[x->nvalues++] = values->items[k];
        }
    }
    return 0;
}

static void set_text(struct loader *L, struct ctext *t, bool *has, const struct lfile *f, const struct ynode *n,
                     bool append)
{
    if (append && *has)
        ctext_append(L, t, f, n);
    else
        ctext_set(L, t, f, n);
    *has = true;
}

static const char *const rule_append_keys[] = {"condition", "output", "desc", "tags", "exceptions", NULL};
static const char *const rule_replace_keys[] = {"condition", "output", "desc", "tags", "exceptions", "priority",
                                                "enabled", "capture", "capture_duration", "warn_evttypes",
                                                "skip-if-unknown-filter", NULL};

/* Applies the item's keys to r; modes says per key whether to append. */
static int apply_rule_keys(struct loader *L, struct lrule *r, const struct lfile *f, const struct ynode *item,
                           bool append_all, const struct ynode *ov)
{
    static const char *const text_keys[] = {"condition", "output", "desc"};
    int rc = 0;
    for (int i = 0; i < 3; i++) {
        const struct ynode *n = ytree_get(item, text_keys[i]);
        if (!n)
            continue;
        if (!scalar(L, f, n, text_keys[i])) {
            rc = -1;
            continue;
        }
        bool app = append_all || (ov && override_mode(L, f, ov, text_keys[i], rule_append_keys, rule_replace_keys) == 1);
        struct ctext *t = i == 0 ? &r->cond : i == 1 ? &r->output : &r->desc;
        bool *has = i == 0 ? &r->has_cond : i == 1 ? &r->has_output : &r->has_desc;
        set_text(L, t, has, f, n, app);
    }
    const struct ynode *n;
    if ((n = ytree_get(item, "priority")))
        r->prio = at_node(f, n);
    if ((n = ytree_get(item, "enabled")) && boolean(L, f, n, "'enabled'", &r->enabled) != 0)
        rc = -1;
    if ((n = ytree_get(item, "warn_evttypes")) && boolean(L, f, n, "'warn_evttypes'", &r->warn_evttypes) != 0)
        rc = -1;
    if ((n = ytree_get(item, "skip-if-unknown-filter"))) {
        bool ignored;
        if (boolean(L, f, n, "'skip-if-unknown-filter'", &ignored) != 0)
            rc = -1;
    }
    if ((n = ytree_get(item, "tags"))) {
        bool app = append_all || (ov && override_mode(L, f, ov, "tags", rule_append_keys, rule_replace_keys) == 1);
        if (!app)
            r->ntags = 0;
        if (add_tags(L, r, f, n) != 0)
            rc = -1;
    }
    if ((n = ytree_get(item, "exceptions"))) {
        bool app = append_all || (ov && override_mode(L, f, ov, "exceptions", rule_append_keys, rule_replace_keys) == 1);
        if (!app)
            r->nexc = 0;
        if (add_exceptions(L, r, f, n) != 0)
            rc = -1;
    }
    return rc;
}

static void collect_rule(struct loader *L, const struct lfile *f, const struct ynode *item, const struct ynode *namen)
{
    static const char *const known[] = {"rule", "desc", "condition", "output", "priority", "tags", "enabled",
                                        "exceptions", "source", "append", "override", "warn_evttypes",
                                        "skip-if-unknown-filter", "capture", "capture_duration", NULL};
    if (check_keys(L, f, item, "rule", known) != 0)
        return;
    const char *name = scalar(L, f, namen, "a rule's name");
    bool append;
    if (!name || get_append(L, f, item, &append) != 0)
        return;
    const struct ynode *src = ytree_get(item, "source");
    if (src && (src->kind != YN_SCALAR || strcmp(src->value, "syscall") != 0)) {
        warn_at_node(L, at_node(f, src), "rule '%s': source '%s' is not supported (only syscall): skipped", name,
                     src->kind == YN_SCALAR ? src->value : "?");
        return;
    }
    const struct ynode *ov = ytree_get(item, "override");
    long idx = namemap_get(&L->rule_names, name);
    if ((append || ov) && idx < 0) {
        error_at_node(L, at_node(f, namen), "rule '%s' is not defined before: %s needs an earlier definition", name,
                      append ? "append" : "override");
        return;
    }
    if (append) {
        for (size_t i = 0; i + 1 < item->count; i += 2) {
            const char *k = item->items[i]->value;
            bool ok = strcmp(k, "rule") == 0 || strcmp(k, "append") == 0 || strcmp(k, "source") == 0;
            for (size_t j = 0; !ok && rule_append_keys[j]; j++)
                ok = strcmp(k, rule_append_keys[j]) == 0;
            if (!ok)
                error_at_node(L, at_node(f, item->items[i]), "'%s' cannot be appended (only condition, output, desc, "
                              "tags, exceptions): use override: {%s: replace}", k, k);
        }
        apply_rule_keys(L, L->rules[idx], f, item, true, NULL);
        return;
    }
    if (ov) {
        if (check_override(L, f, item, ov, "rule") != 0)
            return;
        for (size_t i = 0; i + 1 < ov->count; i += 2)
            if (override_mode(L, f, ov, ov->items[i]->value, rule_append_keys, rule_replace_keys) == -1)
                return;
        apply_rule_keys(L, L->rules[idx], f, item, false, ov);
        return;
    }
    /* The old form: only rule and enabled toggles an existing rule. */
    const struct ynode *en = ytree_get(item, "enabled");
    if (idx >= 0 && en && item->count == 4) {
        boolean(L, f, en, "'enabled'", &L->rules[idx]->enabled);
        return;
    }
    static const char *const required[] = {"condition", "output", "desc", "priority"};
    int missing = 0;
    char list[80] = "";
    for (int i = 0; i < 4; i++) {
        if (!ytree_get(item, required[i])) {
            snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", missing ? ", " : "", required[i]);
            missing++;
        }
    }
    if (missing) {
        error_at_node(L, at_node(f, namen), "rule '%s' lacks %s (a rule needs condition, output, desc and priority)",
                      name, list);
        return;
    }
    struct lrule *r;
    if (idx >= 0) {
        r = L->rules[idx];   /* redefined: replaced in place, keeping its order */
        free(r->tags);
        free(r->exc);
    } else {
        if (grow(&L->rules, &L->caprules, L->nrules, sizeof(*L->rules)) != 0 || !(r = tmp_alloc(L, sizeof(*r)))) {
            L->oom = true;
            return;
        }
        if (namemap_put(&L->rule_names, name, L->nrules) != 0) {
            L->oom = true;
            return;
        }
        L->rules[L->nrules++] = r;
    }
    memset(r, 0, sizeof(*r));
    r->name = name;
    r->pos = at_node(f, namen);
    r->enabled = true;
    r->warn_evttypes = true;
    apply_rule_keys(L, r, f, item, false, NULL);
}

/* ---- collecting: files ---- */

static void warn_once(struct loader *L, const struct lfile *f, const struct ynode *k, bool known)
{
    for (size_t i = 0; i < L->nwarned; i++)
        if (strcmp(L->warned_keys[i], k->value) == 0)
            return;
    if (L->nwarned < sizeof(L->warned_keys) / sizeof(L->warned_keys[0]))
        L->warned_keys[L->nwarned++] = k->value;
    if (known)
        warn_at_node(L, at_node(f, k), "'%s' is accepted and ignored", k->value);
    else
        warn_at_node(L, at_node(f, k), "unknown top-level item '%s' ignored", k->value);
}

static void collect_item(struct loader *L, const struct lfile *f, const struct ynode *item)
{
    if (item->kind != YN_MAP || item->count == 0) {
        error_at_node(L, at_node(f, item), "an item must be a mapping: - rule: ..., - macro: ..., - list: ...");
        return;
    }
    if (++L->items > RULES_MAX_ITEMS) {
        if (!L->items_exceeded)
            error_at_node(L, at_node(f, item), "more than %d lists, macros and rules", RULES_MAX_ITEMS);
        L->items_exceeded = true;
        return;
    }
    L->order++;
    const struct ynode *n;
    if ((n = ytree_get(item, "rule")))
        collect_rule(L, f, item, n);
    else if ((n = ytree_get(item, "macro")))
        collect_macro(L, f, item, n);
    else if ((n = ytree_get(item, "list")))
        collect_list(L, f, item, n);
    else if (ytree_get(item, "required_engine_version") || ytree_get(item, "required_plugin_versions"))
        warn_once(L, f, item->items[0], true);
    else if (item->items[0]->kind == YN_SCALAR)
        warn_once(L, f, item->items[0], false);
}

/* Offset of the first byte that is not valid UTF-8, or len. */
static size_t first_invalid_utf8(const char *s, size_t len)
{
    if (utf8_valid(s, len))
        return len;
    size_t lo = 0, hi = len;   /* the shortest invalid prefix */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
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
            error_at_node(L, at_node(f, doc), "a rules file is a YAML sequence of items (- rule: ..., - macro: ..., "
                          "- list: ...)");
            continue;
        }
        for (size_t i = 0; i < doc->count; i++)
            collect_item(L, f, doc->items[i]);
    }
}

/* ---- compiling ---- */

static uint32_t slot_for(void *ctx, const struct fieldref *f)
{
    struct loader *L = ctx;
    for (size_t i = 0; i < L->nslots; i++) {
        const struct fieldref *s = &L->slots[i];
        if (fields_same(s, f))
            return (uint32_t)i;
    }
    if (grow(&L->slots, &L->capslots, L->nslots, sizeof(*L->slots)) != 0) {
        L->oom = true;
        return 0;
    }
    L->slots[L->nslots] = *f;
    return (uint32_t)L->nslots++;
}

static void on_error(void *ctx, size_t pos, const char *msg)
{
    struct loader *L = ctx;
    if (L->cur_text)
        error_at_text(L, L->cur_text, pos, msg);
    else
        error_at_node(L, L->cur_node, "%s", msg);
}

static const struct filter_list *find_list(void *ctx, const char *name, size_t len)
{
    struct loader *L = ctx;
    char buf[256];
    if (len >= sizeof(buf))
        return NULL;
    memcpy(buf, name, len);
    buf[len] = '\0';
    long i = namemap_get(&L->list_names, buf);
    if (i < 0 || L->lists[i]->order >= L->visible)
        return NULL;
    return &L->lists[i]->compiled;
}

/* Identifiers a condition text names (for the circle check): words that
 * are not keywords, field names or quoted. */
static bool text_names(const char *s, size_t len, const char *name)
{
    size_t nlen = strlen(name);
    char q = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (q) {
            if (c == q && s[i - 1] != '\\')
                q = 0;
            continue;
        }
        if (c == '"' || c == '\'') {
            q = c;
            continue;
        }
        bool start = (i == 0 || !(s[i - 1] == '.' || s[i - 1] == '_' || (s[i - 1] >= '0' && s[i - 1] <= '9') ||
                                  ((s[i - 1] | 32) >= 'a' && (s[i - 1] | 32) <= 'z')));
        if (start && i + nlen <= len && memcmp(s + i, name, nlen) == 0) {
            char after = i + nlen < len ? s[i + nlen] : ' ';
            if (!(after == '.' || after == '_' || (after >= '0' && after <= '9') || ((after | 32) >= 'a' && (after | 32) <= 'z')))
                return true;
        }
    }
    return false;
}

/* Whether macro `from` reaches macro `to` through the names its text uses. */
static bool reaches(struct loader *L, const struct lmacro *from, const char *to, char *path, size_t pathlen, int depth)
{
    if (depth > RULES_MAX_NESTING)
        return false;
    if (text_names(from->cond.text, from->cond.len, to)) {
        snprintf(path + strlen(path), pathlen - strlen(path), " -> %s", to);
        return true;
    }
    for (size_t i = 0; i < L->nmacros; i++) {
        const struct lmacro *m = L->macros[i];
        if (m == from || !text_names(from->cond.text, from->cond.len, m->name))
            continue;
        size_t keep = strlen(path);
        snprintf(path + keep, pathlen - keep, " -> %s", m->name);
        if (reaches(L, m, to, path, pathlen, depth + 1))
            return true;
        path[keep] = '\0';
    }
    return false;
}

static const struct cnode *find_macro(void *ctx, const char *name, size_t len, size_t pos, bool *failed)
{
    struct loader *L = ctx;
    char buf[256], msg[700];
    *failed = false;
    if (len >= sizeof(buf)) {
        on_error(L, pos, "undefined macro (name too long)");
        return NULL;
    }
    memcpy(buf, name, len);
    buf[len] = '\0';
    long i = namemap_get(&L->macro_names, buf);
    if (i >= 0 && L->macros[i]->order < L->visible) {
        const struct lmacro *m = L->macros[i];
        if (m->state == M_FAILED) {
            *failed = true;
            return NULL;
        }
        if (m->state == M_DONE)
            return m->compiled;
    }
    if (i >= 0 && L->cur_macro) {
        char path[400];
        snprintf(path, sizeof(path), "%s -> %s", L->cur_macro, buf);
        if (strcmp(buf, L->cur_macro) == 0)
            snprintf(msg, sizeof(msg), "macro '%s' refers to itself", buf);
        else if (reaches(L, L->macros[i], L->cur_macro, path, sizeof(path), 0))
            snprintf(msg, sizeof(msg), "macros nest in a circle: %s", path);
        else
            snprintf(msg, sizeof(msg), "macro '%s' is used before its definition (%s:%u): a macro sees only the "
                     "macros defined before it", buf, L->macros[i]->pos.file->name, L->macros[i]->pos.node->line);
    } else if (namemap_get(&L->list_names, buf) >= 0) {
        snprintf(msg, sizeof(msg), "'%s' is a list, not a macro: use it inside in (...)", buf);
    } else {
        snprintf(msg, sizeof(msg), "undefined macro '%s'", buf);
    }
    on_error(L, pos, msg);
    return NULL;
}

static struct filter_env env_of(struct loader *L)
{
    return (struct filter_env){.ctx = L, .arena = &L->rs->arena, .macro = find_macro, .list = find_list,
                               .slot = slot_for, .error = on_error, .owned = &L->rs->owned};
}

static void compile_lists(struct loader *L)
{
    /* In order of visibility, so an item naming an earlier list finds it
     * already expanded. */
    struct llist **sorted = malloc((L->nlists ? L->nlists : 1) * sizeof(*sorted));
    if (!sorted) {
        L->oom = true;
        return;
    }
    copy_n(sorted, L->lists, L->nlists * sizeof(*sorted));
    for (size_t i = 1; i < L->nlists; i++)   /* insertion sort: appends reorder few */
        for (size_t j = i; j > 0 && sorted[j - 1]->order > sorted[j]->order; j--) {
            struct llist *t = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = t;
        }
    for (size_t i = 0; i < L->nlists; i++) {
        struct llist *l = sorted[i];
        L->visible = l->order;
        size_t n = 0;
        for (size_t k = 0; k < l->nitems; k++) {
            const struct filter_list *sub = find_list(L, l->items[k]->value, l->items[k]->len);
            n += sub ? sub->n : 1;
        }
        const char **items = arena_alloc(&L->rs->arena, (n ? n : 1) * sizeof(*items));
        uint32_t *lens = arena_alloc(&L->rs->arena, (n ? n : 1) * sizeof(*lens));
        if (!items || !lens) {
            L->oom = true;
            break;
        }
        size_t k2 = 0;
        for (size_t k = 0; k < l->nitems; k++) {
            const struct filter_list *sub = find_list(L, l->items[k]->value, l->items[k]->len);
            if (sub) {
                copy_n(items + k2, sub->items, sub->n * sizeof(*items));
                copy_n(lens + k2, sub->lens, sub->n * sizeof(*lens));
                k2 += sub->n;
            } else {
                items[k2] = rs_strdup(L, l->items[k]->value);
                lens[k2++] = (uint32_t)l->items[k]->len;
            }
        }
        l->compiled = (struct filter_list){.items = items, .lens = lens, .n = k2};
        L->rs->stats.lists++;
    }
    free(sorted);
}

static void compile_macros(struct loader *L)
{
    struct lmacro **sorted = malloc((L->nmacros ? L->nmacros : 1) * sizeof(*sorted));
    if (!sorted) {
        L->oom = true;
        return;
    }
    copy_n(sorted, L->macros, L->nmacros * sizeof(*sorted));
    for (size_t i = 1; i < L->nmacros; i++)
        for (size_t j = i; j > 0 && sorted[j - 1]->order > sorted[j]->order; j--) {
            struct lmacro *t = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = t;
        }
    struct filter_env env = env_of(L);
    for (size_t i = 0; i < L->nmacros; i++) {
        struct lmacro *m = sorted[i];
        L->visible = m->order;
        L->cur_text = &m->cond;
        L->cur_macro = m->name;
        m->state = M_BUSY;
        m->compiled = filter_parse(&env, m->cond.text, m->cond.len);
        m->state = m->compiled ? M_DONE : M_FAILED;
        L->rs->stats.macros++;
    }
    L->cur_macro = NULL;
    L->cur_text = NULL;
    free(sorted);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* The values of one exception field: a list (sequence or list name) for
 * in/pmatch/intersects, else one scalar. */
static struct cnode *exception_check(struct loader *L, const struct lfile *f, const struct ynode *field,
                                     enum filter_op op, enum filter_mod mod, const struct ynode *value)
{
    struct filter_env env = env_of(L);
    L->cur_node = at_node(f, value);
    const char *one[1];
    uint32_t one_len[1];
    const char *const *vals = one;
    const uint32_t *lens = one_len;
    size_t n = 1;
    if (value->kind == YN_SEQ) {
        const char **v = tmp_alloc(L, (value->count ? value->count : 1) * sizeof(*v));
        uint32_t *l = tmp_alloc(L, (value->count ? value->count : 1) * sizeof(*l));
        if (!v || !l)
            return NULL;
        for (size_t i = 0; i < value->count; i++) {
            if (value->items[i]->kind != YN_SCALAR) {
                error_at_node(L, at_node(f, value->items[i]), "exception values must be strings");
                return NULL;
            }
            v[i] = value->items[i]->value;
            l[i] = (uint32_t)value->items[i]->len;
        }
        vals = v;
        lens = l;
        n = value->count;
    } else if (value->kind == YN_SCALAR) {
        one[0] = value->value;
        one_len[0] = (uint32_t)value->len;
    } else {
        error_at_node(L, at_node(f, value), "an exception value must be a string or a list");
        return NULL;
    }
    bool list_op = op == OP_IN || op == OP_PMATCH || op == OP_INTERSECTS || mod != MOD_NONE;
    if (!list_op && n != 1) {
        error_at_node(L, at_node(f, value), "operator '%s' takes one value, not a list", filter_op_name(op));
        return NULL;
    }
    return filter_make_check_mod(&env, field->value, field->len, op, mod, vals, lens, n, 0);
}

static int comp_of(struct loader *L, const struct lfile *f, const struct ynode *comps, size_t i, bool single,
                   enum filter_op *op, enum filter_mod *mod)
{
    const struct ynode *c = NULL;
    if (comps && comps->kind == YN_SEQ && i < comps->count)
        c = comps->items[i];
    else if (comps && comps->kind == YN_SCALAR)
        c = comps;
    *mod = MOD_NONE;
    if (!c) {
        *op = single ? OP_IN : OP_EQ;
        return 0;
    }
    /* an operator, or a string operator and a modifier: "startswith oneof" */
    int bad = c->kind != YN_SCALAR || filter_cmp_parse(c->value, op, mod) != 0;
    if (bad || *op == OP_EXISTS ||
        (single && ((*op != OP_IN && *op != OP_PMATCH && *op != OP_INTERSECTS) || *mod != MOD_NONE))) {
        error_at_node(L, at_node(f, c), single ? "an exception on one field compares with in, pmatch or intersects"
                                               : "unknown comparison operator in 'comps'");
        return -1;
    }
    return 0;
}

/* (f1 c1 v1 and f2 c2 v2) or ... for one exception; NULL when it has no
 * values (it excludes nothing) or on error (*err set). */
static struct cnode *compile_exception(struct loader *L, const struct lexc *x, bool *err)
{
    const struct lfile *f = x->pos.file;
    const struct ynode *fields = x->fields;
    if (x->nvalues == 0)
        return NULL;
    struct arena *a = &L->rs->arena;
    bool single = fields->kind == YN_SCALAR;
    if (!single && fields->kind != YN_SEQ) {
        error_at_node(L, at_node(f, fields), "exception '%s': 'fields' must be a field or a list of fields", x->name);
        *err = true;
        return NULL;
    }
    if (single) {
        enum filter_op op;
        enum filter_mod mod;
        if (comp_of(L, f, x->comps, 0, true, &op, &mod) != 0) {
            *err = true;
            return NULL;
        }
        /* every value item is one list element */
        struct ynode seq = {.kind = YN_SEQ, .line = x->values[0]->line, .column = x->values[0]->column,
                            .start = x->values[0]->start, .end = x->values[0]->end,
                            .items = (struct ynode **)x->values, .count = x->nvalues};
        struct cnode *c = exception_check(L, x->value_files[0], fields, op, mod, &seq);
        if (!c)
            *err = true;
        return c;
    }
    struct cnode **alts = tmp_alloc(L, x->nvalues * sizeof(*alts));
    struct cnode **conj = tmp_alloc(L, (fields->count ? fields->count : 1) * sizeof(*conj));
    if (!alts || !conj) {
        *err = true;
        return NULL;
    }
    for (size_t v = 0; v < x->nvalues; v++) {
        const struct ynode *tuple = x->values[v];
        const struct lfile *vf = x->value_files[v];
        if (tuple->kind != YN_SEQ || tuple->count != fields->count) {
            error_at_node(L, at_node(vf, tuple), "exception '%s': each value must be a list of %zu items, one per field",
                          x->name, fields->count);
            *err = true;
            return NULL;
        }
        for (size_t i = 0; i < fields->count; i++) {
            enum filter_op op;
            enum filter_mod mod;
            if (fields->items[i]->kind != YN_SCALAR || comp_of(L, f, x->comps, i, false, &op, &mod) != 0) {
                *err = true;
                return NULL;
            }
            conj[i] = exception_check(L, vf, fields->items[i], op, mod, tuple->items[i]);
            if (!conj[i]) {
                *err = true;
                return NULL;
            }
        }
        alts[v] = fields->count == 1 ? conj[0] : filter_make_node(a, CN_AND, conj, (uint32_t)fields->count);
    }
    return x->nvalues == 1 ? alts[0] : filter_make_node(a, CN_OR, alts, (uint32_t)x->nvalues);
}

static char *text_dup(struct loader *L, const struct ctext *t)
{
    return rs_strdup(L, t->text ? t->text : "");
}

static void warn_all_types(struct loader *L, const struct lrule *r)
{
    warn_at_node(L, r->pos, "rule '%s' has no evt.type restriction: every event of every type is tested against it "
                 "(slow; add evt.type in (...), or warn_evttypes: false)", r->name);
}

static void compile_rule(struct loader *L, struct lrule *lr, struct rule *r)
{
    struct filter_env env = env_of(L);
    L->visible = (size_t)-1;
    memset(r, 0, sizeof(*r));
    r->name = rs_strdup(L, lr->name);
    r->desc = text_dup(L, &lr->desc);
    r->enabled = lr->enabled;
    r->file = rs_strdup(L, lr->pos.file->name);
    r->line = lr->pos.node->line;
    bool ok = true;
    const char *prio = lr->prio.node && lr->prio.node->kind == YN_SCALAR ? lr->prio.node->value : NULL;
    if (!prio || rules_priority_parse(prio, &r->priority) != 0) {
        error_at_node(L, lr->prio.node ? lr->prio : lr->pos, "rule '%s': priority '%s' is not one of Emergency, "
                      "Alert, Critical, Error, Warning, Notice, Informational (or Info), Debug", lr->name,
                      prio ? prio : "?");
        ok = false;
    }
    /* tags, sorted */
    const char **tags = arena_alloc(&L->rs->arena, (lr->ntags ? lr->ntags : 1) * sizeof(*tags));
    if (!tags) {
        L->oom = true;
        return;
    }
    for (size_t i = 0; i < lr->ntags; i++)
        tags[i] = rs_strdup(L, lr->tags[i]);
    qsort(tags, lr->ntags, sizeof(*tags), cmp_str);
    r->tags = tags;
    r->ntags = lr->ntags;
    struct strbuf tj = {0};
    render_tags_json(&tj, tags, lr->ntags);
    r->tags_json = tj.failed ? NULL : rs_strdup(L, tj.data);
    strbuf_free(&tj);
    if (!r->tags_json)
        L->oom = true;
    /* condition, and not the exceptions */
    L->cur_text = &lr->cond;
    struct cnode *cond = filter_parse(&env, lr->cond.text, lr->cond.len);
    L->cur_text = NULL;
    if (!cond)
        ok = false;
    struct cnode **alts = tmp_alloc(L, (lr->nexc ? lr->nexc : 1) * sizeof(*alts));
    size_t nalts = 0;
    for (size_t i = 0; alts && i < lr->nexc; i++) {
        bool err = false;
        struct cnode *e = compile_exception(L, &lr->exc[i], &err);
        ok &= !err;
        if (e)
            alts[nalts++] = e;
    }
    if (ok && nalts) {
        struct cnode *any = nalts == 1 ? alts[0] : filter_make_node(&L->rs->arena, CN_OR, alts, (uint32_t)nalts);
        struct cnode *not_any = filter_make_node(&L->rs->arena, CN_NOT, &any, 1);
        struct cnode *both[2] = {cond, not_any};
        cond = filter_make_node(&L->rs->arena, CN_AND, both, 2);
    }
    /* output */
    struct tmpl_env tenv = {.ctx = L, .arena = &L->rs->arena, .slot = slot_for, .error = on_error};
    L->cur_text = &lr->output;
    if (template_compile(&tenv, lr->output.text, lr->output.len, &r->output) != 0)
        ok = false;
    L->cur_text = NULL;
    if (!ok || !cond)
        return;
    if (cond->size > FILTER_MAX_EXPANDED) {
        error_at_text(L, &lr->cond, 0, "the condition is too large after expanding its macros (more than 100000 "
                      "nodes): a rule must stay cheap to test");
        return;
    }
    struct filter_reach may_true, may_false;
    filter_reach(cond, &may_true, &may_false);
    r->types = may_true.types;
    if (evtype_set_is_empty(&r->types)) {
        error_at_text(L, &lr->cond, 0, "the condition can match no event type (e.g. evt.type = open and evt.type = "
                      "execve): it would never raise an alert");
        return;
    }
    r->all_types = evtype_set_is_all(&r->types);
    if (r->all_types && lr->warn_evttypes && r->enabled)
        warn_all_types(L, lr);
    /* Enter points reach a rule that tests evt.dir, unless its test can
     * only be true for exits (`evt.dir = <`, as most do): half the syscall
     * events would otherwise evaluate it only to find it false. */
    r->sees_enter = cond->uses_dir && (may_true.dirs & FILTER_DIR_ENTER);
    r->names_point = cond->uses_point;
    r->cond = cond;
    char absent[1400];   /* fields gVisor never reports: disabled, said once */
    if (availability_apply(L->rs, r, absent, sizeof(absent)))
        warn_at_node(L, lr->pos, "%s", absent);
}

/* Rule ids per event type, for enabled rules. */
static int build_index(struct rule_set *rs, struct rule_index *ix, bool enters)
{
    uint32_t counts[EVTYPE_COUNT] = {0};
    size_t total = 0;
    for (size_t i = 0; i < rs->nrules; i++) {
        const struct rule *r = &rs->rules[i];
        if (!r->enabled || (enters && !r->sees_enter))
            continue;
        for (unsigned t = 0; t < EVTYPE_COUNT; t++)
            if (evtype_set_has(&r->types, t) && (!enters || t <= EVTYPE_UNKNOWN)) {
                counts[t]++;
                total++;
            }
    }
    ix->ids = arena_alloc(&rs->arena, (total ? total : 1) * sizeof(*ix->ids));
    if (!ix->ids)
        return -1;
    ix->off[0] = 0;
    for (unsigned t = 0; t < EVTYPE_COUNT; t++)
        ix->off[t + 1] = ix->off[t] + counts[t];
    uint32_t fill[EVTYPE_COUNT];
    memcpy(fill, ix->off, sizeof(fill));
    for (size_t i = 0; i < rs->nrules; i++) {
        const struct rule *r = &rs->rules[i];
        if (!r->enabled || (enters && !r->sees_enter))
            continue;
        for (unsigned t = 0; t < EVTYPE_COUNT; t++)
            if (evtype_set_has(&r->types, t) && (!enters || t <= EVTYPE_UNKNOWN))
                ix->ids[fill[t]++] = (uint32_t)i;
    }
    return 0;
}

static void compile_all(struct loader *L)
{
    compile_lists(L);
    compile_macros(L);
    struct rule_set *rs = L->rs;
    rs->rules = arena_alloc(&rs->arena, (L->nrules ? L->nrules : 1) * sizeof(*rs->rules));
    if (!rs->rules) {
        L->oom = true;
        return;
    }
    for (size_t i = 0; i < L->nrules; i++) {
        compile_rule(L, L->rules[i], &rs->rules[i]);
        rs->stats.rules++;
        rs->stats.rules_enabled += rs->rules[i].enabled;
    }
    rs->nrules = L->nrules;
    rs->nslots = (uint32_t)L->nslots;
    if (L->diag->errors == 0 && !L->oom &&
        (build_index(rs, &rs->exits, false) != 0 || build_index(rs, &rs->enters, true) != 0))
        L->oom = true;
}

/* ---- entry points ---- */

static struct rule_set *loader_begin(struct loader *L, struct rules_diag *diag)
{
    memset(L, 0, sizeof(*L));
    L->diag = diag;
    arena_init(&L->tmp, 64 * 1024, SIZE_MAX);
    L->rs = calloc(1, sizeof(*L->rs));
    if (L->rs)
        arena_init(&L->rs->arena, 64 * 1024, SIZE_MAX);
    return L->rs;
}

static struct rule_set *loader_end(struct loader *L)
{
    if (!L->oom && L->diag->errors == 0)
        compile_all(L);
    if (L->oom)
        diag_add(L->diag, true, "rules", 0, 0, "out of memory loading the rules");
    for (size_t i = 0; i < L->nrules; i++) {
        free(L->rules[i]->tags);
        free(L->rules[i]->exc);
    }
    free(L->lists);
    free(L->macros);
    free(L->rules);
    free(L->slots);
    namemap_free(&L->list_names);
    namemap_free(&L->macro_names);
    namemap_free(&L->rule_names);
    arena_free(&L->tmp);
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

/* A whole file, at most RULES_FILE_MAX_BYTES (+1 to tell it is larger). */
static char *read_file(struct loader *L, const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        diag_add(L->diag, true, path, 0, 0, "cannot open: %s", strerror(errno));
        return NULL;
    }
    size_t cap = 64 * 1024, n = 0;
    char *buf = tmp_alloc(L, cap);
    for (;;) {
        if (!buf)
            break;
        size_t got = fread(buf + n, 1, cap - n, fp);
        n += got;
        if (n > RULES_FILE_MAX_BYTES || got == 0)
            break;
        if (n == cap) {
            char *bigger = tmp_alloc(L, cap * 2);
            if (bigger)
                memcpy(bigger, buf, n);
            buf = bigger;
            cap *= 2;
        }
    }
    bool failed = ferror(fp);
    fclose(fp);
    if (failed || !buf) {
        diag_add(L->diag, true, path, 0, 0, "cannot read: %s", failed ? strerror(errno) : "out of memory");
        return NULL;
    }
    if (n > RULES_FILE_MAX_BYTES) {
        unsigned line, col;
        line_col_of(buf, RULES_FILE_MAX_BYTES, &line, &col);
        diag_add(L->diag, true, path, line, col, "larger than %u bytes: refused", RULES_FILE_MAX_BYTES);
        return NULL;
    }
    *len = n;
    return buf;
}

static int yaml_only(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return d->d_name[0] != '.' && n > 5 && strcmp(d->d_name + n - 5, ".yaml") == 0;
}

static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

static void load_path(struct loader *L, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        diag_add(L->diag, true, path, 0, 0, "cannot open: %s", strerror(errno));
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        size_t len;
        char *buf = read_file(L, path, &len);
        if (buf)
            collect_file(L, path, buf, len);
        return;
    }
    struct dirent **names;
    int n = scandir(path, &names, yaml_only, by_name);
    if (n < 0) {
        diag_add(L->diag, true, path, 0, 0, "cannot read the directory: %s", strerror(errno));
        return;
    }
    for (int i = 0; i < n; i++) {
        char full[4096];
        snprintf(full, sizeof(full), "%s%s%s", path, path[strlen(path) - 1] == '/' ? "" : "/", names[i]->d_name);
        size_t len;
        char *buf = read_file(L, full, &len);
        if (buf)
            collect_file(L, full, buf, len);
        free(names[i]);
    }
    free(names);
}

struct rule_set *rule_set_load(const char *const *paths, size_t npaths, struct rules_diag *diag)
{
    struct loader L;
    if (!loader_begin(&L, diag)) {
        diag_add(diag, true, npaths ? paths[0] : "rules", 0, 0, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < npaths; i++)
        load_path(&L, paths[i]);
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
    const struct rule *r = &rs->rules[i];
    if (!buflen)
        return;
    buf[0] = '\0';
    if (r->all_types) {
        snprintf(buf, buflen, "all");
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
