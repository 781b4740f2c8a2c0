/* load_compile.c - the collected lists, macros and rules compiled, as
 * falcosecurity/falco's rule_loader_compiler.cpp compiles them:
 *
 *  - a list's item naming a list defined before it (by its first
 *    definition, before the list's own last change) takes that list's items
 *    as written: one level (compile_list_infos);
 *  - a condition sees every list, with all its appends, wherever they are:
 *    "there is no visibility order between filter conditions and lists".
 *    A list's name in a condition's text becomes its items; an item naming a
 *    list that comes later in the files becomes that list's, since Falco
 *    substitutes the lists one after the other in order (resolve_list);
 *  - a macro sees the macros whose first definition is before its own last
 *    change; a rule sees them all (resolve_macros). Macros are compiled so
 *    that what one uses is compiled first (their references read by a first
 *    parse), so a macro overridden later keeps its place for those that use
 *    it;
 *  - exceptions become text appended to the condition
 *    (build_rule_exception_infos), read by the same parser;
 *  - fields are checked where Falco checks them: in rules. A macro with an
 *    unknown field is an error only when a rule uses it (a warning when none
 *    does), and a rule with skip-if-unknown-filter is skipped with a
 *    warning instead of an error.
 * Every count that a file could multiply is counted before anything is
 * built: lists' items, items spliced into conditions, nodes and depth of a
 * condition with its macros expanded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "append_output.h"
#include "availability.h"
#include "diag.h"
#include "loader.h"
#include "sequence.h"

/* The parser (filter/) refuses a macro nested past its own limit; the
 * loader's must be the same, or the two would say different things. */
_Static_assert(RULES_MAX_NESTING == FILTER_MAX_MACRO_NESTING, "macro nesting: rules.h and filter.h disagree");

/* ---- the filter's callbacks ---- */

static uint32_t slot_for(void *ctx, const struct fieldref *f)
{
    struct loader *L = ctx;
    if (L->scanning)
        return 0;
    for (size_t i = 0; i < L->nslots; i++)
        if (fields_same(&L->slots[i], f))
            return (uint32_t)i;
    if (vec_grow(L, &L->slots, &L->capslots, L->nslots, sizeof(*L->slots)) != 0)
        return 0;
    L->slots[L->nslots] = *f;
    return (uint32_t)L->nslots++;
}

/* Falco's err_is_unknown_type_or_field: what skip-if-unknown-filter skips,
 * and what a macro no rule uses may hold. */
static bool unknown_kind(const char *msg)
{
    return strncmp(msg, "unknown field", 13) == 0 || strncmp(msg, "no gVisor message has", 21) == 0 ||
           strncmp(msg, "unknown event type", 18) == 0;
}

static void defer(struct loader *L, const char *file, unsigned line, unsigned col, const char *msg)
{
    struct deferred *d = calloc(1, sizeof(*d));
    if (d && (!(d->file = strdup(file)) || !(d->message = strdup(msg)))) {
        free(d->file);
        free(d);
        d = NULL;
    }
    if (!d) {
        L->oom = true;
        return;
    }
    d->line = line;
    d->column = col;
    *L->deferred_tail = d;
    L->deferred_tail = &d->next;
    L->deferred_other |= !unknown_kind(msg);
}

static void on_error(void *ctx, size_t pos, const char *msg)
{
    struct loader *L = ctx;
    if (L->scanning)
        return;
    const char *file = "rules";
    unsigned line = 0, col = 0;
    if (L->cur_text) {
        tb_where(L->cur_text, pos, &file, &line, &col);
    } else if (L->cur_node.node) {
        file = L->cur_node.file->name;
        line = L->cur_node.node->line;
        col = L->cur_node.node->column;
    }
    if (L->collecting)
        defer(L, file, line, col, msg);
    else
        diag_add(L->diag, true, file, line, col, "%s", msg);
}

/* Every list is spliced into the texts already: a word the parser asks
 * about is itself (Falco leaves it so, and `in word` is a one-item list). */
static const struct filter_list *find_list(void *ctx, const char *name, size_t len)
{
    struct loader *L = ctx;
    L->one_item[0] = name;
    L->one_len[0] = (uint32_t)len;
    L->one_list = (struct filter_list){.items = L->one_item, .lens = L->one_len, .n = 1};
    return &L->one_list;
}

/* What a macro reference stands for while its references are read. */
static const struct cnode scan_body = {.kind = CN_CONST, .const_val = true, .size = 1};

/* The path a -> ... -> b through macros' references (for a circle's
 * message), or "" when there is none. */
static void circle_path(struct loader *L, uint32_t from, uint32_t to, char *out, size_t outlen)
{
    out[0] = '\0';
    uint32_t *prev = malloc(L->nmacros * sizeof(*prev)), *queue = malloc(L->nmacros * sizeof(*queue));
    if (!prev || !queue) {
        free(prev);
        free(queue);
        return;
    }
    for (size_t i = 0; i < L->nmacros; i++)
        prev[i] = UINT32_MAX;
    size_t head = 0, tail = 0;
    queue[tail++] = from;
    prev[from] = from;
    while (head < tail && prev[to] == UINT32_MAX) {
        const struct lmacro *m = L->macros[queue[head++]];
        for (size_t k = 0; k < m->nrefs; k++)
            if (prev[m->refs[k]] == UINT32_MAX) {
                prev[m->refs[k]] = queue[head - 1];
                queue[tail++] = m->refs[k];
            }
    }
    if (prev[to] != UINT32_MAX) {
        size_t n = 0;
        for (uint32_t v = to;; v = prev[v]) {   /* backwards, then printed forwards */
            queue[n++] = v;
            if (v == from)
                break;
        }
        size_t used = 0;
        for (size_t i = n; i-- > 0 && used + 1 < outlen;) {
            int w = snprintf(out + used, outlen - used, "%s%s", i + 1 == n ? "" : " -> ", L->macros[queue[i]]->name);
            if (w < 0)
                break;
            used = (size_t)w < outlen - used ? used + (size_t)w : outlen - 1;
        }
    }
    free(prev);
    free(queue);
}

static const struct cnode *find_macro(void *ctx, const char *name, size_t len, size_t pos, bool *failed)
{
    struct loader *L = ctx;
    *failed = false;
    long i = lmap_get(&L->macro_names, NULL, name, len);
    struct lmacro *m = i >= 0 ? L->macros[i] : NULL;
    bool visible = m && m->index < L->visible;
    if (L->scanning) {
        if (visible && vec_grow(L, &L->scan_refs, &L->scan_cap, L->scan_n, sizeof(*L->scan_refs)) == 0)
            L->scan_refs[L->scan_n++] = (uint32_t)i;
        return &scan_body;
    }
    char msg[700];
    if (visible) {
        m->used = true;
        switch (m->state) {
        case M_DONE:
            return m->compiled;
        case M_FAILED:
            *failed = true;
            return NULL;
        case M_UNKNOWN_FIELD:
            if (!L->tainted_by)
                L->tainted_by = m;
            *failed = true;
            return NULL;
        default:
            if (m == L->cur_macro) {
                snprintf(msg, sizeof(msg), "reference loop in macro '%s': it refers to itself", m->name);
            } else {
                char path[400] = "";
                if (L->cur_macro)
                    circle_path(L, (uint32_t)i, (uint32_t)lmap_get(&L->macro_names, NULL, L->cur_macro->name,
                                                                   strlen(L->cur_macro->name)), path, sizeof(path));
                snprintf(msg, sizeof(msg), "reference loop in macro '%s': macros nest in a circle: %s -> %s",
                         m->name, L->cur_macro ? L->cur_macro->name : "?", path[0] ? path : m->name);
            }
            break;
        }
    } else if (m && m == L->cur_macro) {
        snprintf(msg, sizeof(msg), "Undefined macro '%s' used in filter: a macro does not see itself (it sees the "
                 "macros defined before it)", m->name);
    } else if (m) {
        snprintf(msg, sizeof(msg), "Undefined macro '%.*s' used in filter: it is defined after this macro (%s:%u), "
                 "and a macro sees only the macros defined before it", (int)len, name, m->pos.file->name,
                 m->pos.node->line);
    } else {
        snprintf(msg, sizeof(msg), "Undefined macro '%.*s' used in filter.", (int)(len > 200 ? 200 : len), name);
    }
    on_error(L, pos, msg);
    return NULL;
}

/* libsinsp's compilation warnings (a field name used as a string value, a
 * regex a simpler operator would do), at their place. */
static void on_warning(void *ctx, size_t pos, const char *msg)
{
    struct loader *L = ctx;
    if (L->scanning)
        return;
    const char *file = "rules";
    unsigned line = 0, col = 0;
    if (L->cur_text)
        tb_where(L->cur_text, pos, &file, &line, &col);
    diag_add(L->diag, false, file, line, col, "%s", msg);
}

/* The parser's callbacks; the compiled regular expressions go to the rule
 * set (or, for the parse that only reads references, to a list freed
 * after it). */
static struct filter_env env_of(struct loader *L, struct arena *a)
{
    return (struct filter_env){.ctx = L, .arena = a, .macro = find_macro, .list = find_list, .slot = slot_for,
                               .error = on_error, .warn = on_warning,
                               .owned = L->scanning ? &L->scan_owned : &L->rs->owned};
}

/* Errors of what follows go to L->deferred, not to the diagnostics. */
static void begin_collect(struct loader *L)
{
    L->collecting = true;
    L->deferred = NULL;
    L->deferred_tail = &L->deferred;
    L->deferred_other = false;
    L->tainted_by = NULL;
}

static struct deferred *end_collect(struct loader *L)
{
    L->collecting = false;
    struct deferred *d = L->deferred;
    L->deferred = NULL;
    L->deferred_tail = &L->deferred;
    return d;
}

static void deferred_free(struct deferred *d)
{
    while (d) {
        struct deferred *next = d->next;
        free(d->file);
        free(d->message);
        free(d);
        d = next;
    }
}

/* Each deferred problem as a diagnostic, with a note after it. */
static void emit(struct loader *L, const struct deferred *d, bool is_error, const char *note)
{
    for (; d; d = d->next)
        diag_add(L->diag, is_error, d->file, d->line, d->column, "%s%s", d->message, note);
}

/* The macro whose own text has the unknown field m's use led to. */
static const struct lmacro *unknown_root(const struct lmacro *m)
{
    for (size_t guard = 0; m && !m->unknown && m->unknown_from && guard < RULES_MAX_NESTING + 1; guard++)
        m = m->unknown_from;
    return m;
}

/* ---- depth of a tree with its macros expanded ---- */

static uint32_t macro_body_depth(struct loader *L, const struct cnode *body)
{
    long d = lmap_get(&L->macro_bodies, body, "", 0);
    return d > 0 ? (uint32_t)d : 1;
}

/* The levels of n's tree, a macro's counting its body's (known already:
 * what a tree uses is compiled before it). Iterative: n may be deep. */
static uint32_t tree_depth(struct loader *L, const struct cnode *n)
{
    struct frame {
        const struct cnode *n;
        uint32_t depth, next;
    };
    struct frame *stack = NULL;
    size_t sp = 0, cap = 0;
    uint32_t best = 0;
    if (vec_grow(L, &stack, &cap, sp, sizeof(*stack)) != 0)
        return UINT32_MAX;
    stack[sp++] = (struct frame){n, 1, 0};
    while (sp) {
        struct frame *f = &stack[sp - 1];
        const struct cnode *c = f->n;
        if (c->kind == CN_MACRO) {
            uint32_t d = f->depth + macro_body_depth(L, c->body);
            best = d > best ? d : best;
            sp--;
            continue;
        }
        uint32_t nkids = c->kind == CN_AND || c->kind == CN_OR || c->kind == CN_NOT ? c->n : 0;
        if (f->next == 0 && f->depth > best)
            best = f->depth;
        if (f->next >= nkids) {
            sp--;
            continue;
        }
        const struct cnode *kid = c->kids[f->next++];
        uint32_t depth = f->depth + 1;
        if (vec_grow(L, &stack, &cap, sp, sizeof(*stack)) != 0) {
            free(stack);
            return UINT32_MAX;
        }
        stack[sp++] = (struct frame){kid, depth, 0};
    }
    free(stack);
    return best;
}

/* ---- lists ---- */

static uint64_t sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

static struct llist *list_named(struct loader *L, const struct ynode *n)
{
    long i = lmap_get(&L->list_names, NULL, n->value, n->len);
    return i >= 0 ? L->lists[i] : NULL;
}

static int by_index_desc(const void *a, const void *b)
{
    const struct llist *x = *(struct llist *const *)a, *y = *(struct llist *const *)b;
    return x->index > y->index ? -1 : x->index < y->index;
}

static void too_many_items(struct loader *L, const struct llist *l, uint64_t n, const char *how)
{
    error_at(L, l->pos, "the lists hold more than %u items %s (list '%s' alone: %llu%s): lists inside lists multiply",
             RULES_MAX_LIST_ITEMS, how, l->name, (unsigned long long)n, n == UINT64_MAX ? " or more" : "");
}

static void compile_lists(struct loader *L)
{
    /* One level: an item naming a list defined before takes its items. */
    uint64_t total = 0;
    for (size_t i = 0; i < L->nlists; i++) {
        struct llist *l = L->lists[i];
        uint64_t n = 0;
        for (size_t k = 0; k < l->raw.n; k++) {
            const struct llist *ref = list_named(L, l->raw.v[k].node);
            n = sat_add(n, ref && ref->index < l->visibility ? ref->raw.n : 1);
        }
        total = sat_add(total, n);
        if (total > RULES_MAX_LIST_ITEMS) {
            too_many_items(L, l, n, "once lists inside lists are taken in");
            return;
        }
    }
    for (size_t i = 0; i < L->nlists && !L->oom; i++) {
        struct llist *l = L->lists[i];
        for (size_t k = 0; k < l->raw.n; k++) {
            struct llist *ref = list_named(L, l->raw.v[k].node);
            if (ref && ref->index < l->visibility) {
                ref->used = true;
                for (size_t j = 0; j < ref->raw.n; j++)
                    ivec_push(L, &l->compiled, ref->raw.v[j].file, ref->raw.v[j].node);
            } else {
                ivec_push(L, &l->compiled, l->raw.v[k].file, l->raw.v[k].node);
            }
        }
    }
    /* What a condition gets: Falco substitutes the lists in order, so an
     * item naming a later list becomes that list's items in turn. Counted,
     * then built, from the last list back. */
    struct llist **order = malloc((L->nlists ? L->nlists : 1) * sizeof(*order));
    if (!order) {
        L->oom = true;
        return;
    }
    if (L->nlists)
        memcpy(order, L->lists, L->nlists * sizeof(*order));
    qsort(order, L->nlists, sizeof(*order), by_index_desc);
    total = 0;
    for (size_t i = 0; i < L->nlists; i++) {
        struct llist *l = order[i];
        uint64_t n = 0;
        for (size_t k = 0; k < l->compiled.n; k++) {
            const struct llist *m = list_named(L, l->compiled.v[k].node);
            n = sat_add(n, m && m->index > l->index ? m->nexpanded : 1);
        }
        l->nexpanded = n;
        total = sat_add(total, n);
        if (total > RULES_MAX_LIST_ITEMS) {
            too_many_items(L, l, n, "once the lists named in lists are expanded");
            free(order);
            return;
        }
    }
    for (size_t i = 0; i < L->nlists && !L->oom; i++) {
        struct llist *l = order[i];
        bool cascades = false;
        for (size_t k = 0; k < l->compiled.n && !cascades; k++) {
            const struct llist *m = list_named(L, l->compiled.v[k].node);
            cascades = m && m->index > l->index;
        }
        if (!cascades) {
            l->expanded = l->compiled;   /* shared: freed once */
            continue;
        }
        for (size_t k = 0; k < l->compiled.n; k++) {
            struct llist *m = list_named(L, l->compiled.v[k].node);
            if (m && m->index > l->index) {
                m->used = true;
                for (size_t j = 0; j < m->expanded.n; j++)
                    ivec_push(L, &l->expanded, m->expanded.v[j].file, m->expanded.v[j].node);
            } else {
                ivec_push(L, &l->expanded, l->compiled.v[k].file, l->compiled.v[k].node);
            }
        }
    }
    free(order);
    L->rs->stats.lists = L->nlists;
}

/* ---- macros ---- */

/* The macros m's text refers to (that it can see), by a parse that only
 * records them. */
static void scan_refs(struct loader *L, struct lmacro *m)
{
    L->scanning = true;
    struct filter_env env = env_of(L, &L->tmp);
    L->visible = m->visibility;
    L->scan_n = 0;
    if (m->text.len)
        filter_parse(&env, m->text.buf, m->text.len);
    L->scanning = false;
    filter_owned_free(L->scan_owned);
    L->scan_owned = NULL;
    if (L->scan_n) {
        m->refs = malloc(L->scan_n * sizeof(*m->refs));
        if (!m->refs) {
            L->oom = true;
            return;
        }
        memcpy(m->refs, L->scan_refs, L->scan_n * sizeof(*m->refs));
        m->nrefs = L->scan_n;
    }
}

/* The macros in an order where each comes after those it refers to (a
 * depth-first walk, without recursion; a circle is left for compiling to
 * report). */
static uint32_t *macro_order(struct loader *L)
{
    size_t n = L->nmacros;
    uint32_t *order = malloc((n ? n : 1) * sizeof(*order));
    uint8_t *seen = calloc(n ? n : 1, 1);
    struct walk {
        uint32_t m;
        size_t next;
    } *stack = malloc((n ? n : 1) * sizeof(*stack));
    if (!order || !seen || !stack) {
        free(order);
        free(seen);
        free(stack);
        L->oom = true;
        return NULL;
    }
    size_t k = 0;
    for (uint32_t root = 0; root < n; root++) {
        if (seen[root])
            continue;
        size_t sp = 0;
        stack[sp++] = (struct walk){root, 0};
        seen[root] = 1;
        while (sp) {
            struct walk *w = &stack[sp - 1];
            const struct lmacro *m = L->macros[w->m];
            if (w->next < m->nrefs) {
                uint32_t c = m->refs[w->next++];
                if (!seen[c]) {
                    seen[c] = 1;
                    stack[sp++] = (struct walk){c, 0};
                }
                continue;
            }
            seen[w->m] = 2;
            order[k++] = w->m;
            sp--;
        }
    }
    free(seen);
    free(stack);
    return order;
}

static void compile_macro(struct loader *L, struct lmacro *m)
{
    struct filter_env env = env_of(L, &L->rs->arena);
    L->cur_macro = m;
    L->cur_text = &m->text;
    L->visible = m->visibility;
    m->state = M_BUSY;
    begin_collect(L);
    const struct cnode *c = m->text.len ? filter_parse(&env, m->text.buf, m->text.len) : NULL;
    if (!m->text.len)
        on_error(L, 0, "the condition is empty");
    const struct lmacro *tainted = L->tainted_by;
    bool other = L->deferred_other;
    struct deferred *d = end_collect(L);
    L->cur_text = NULL;
    L->cur_macro = NULL;
    if (c && !d) {
        m->depth = tree_depth(L, c);
        if (m->depth > RULES_MAX_TREE_DEPTH) {
            error_at(L, m->pos, "macro '%s': its condition nests %u levels deep once its macros are expanded (at "
                     "most %d)", m->name, m->depth, RULES_MAX_TREE_DEPTH);
            m->state = M_FAILED;
            return;
        }
        if (lmap_put(&L->macro_bodies, c, "", 0, m->depth) != 0)
            L->oom = true;
        m->compiled = c;
        m->state = M_DONE;
        return;
    }
    if (!other && (d || tainted)) {
        m->state = M_UNKNOWN_FIELD;   /* an error only if a rule uses it */
        m->unknown = d;
        m->unknown_from = tainted;
        return;
    }
    emit(L, d, true, "");
    deferred_free(d);
    m->state = M_FAILED;
}

static void compile_macros(struct loader *L)
{
    for (size_t i = 0; i < L->nmacros && !L->oom; i++)
        scan_refs(L, L->macros[i]);
    uint32_t *order = L->oom ? NULL : macro_order(L);
    for (size_t i = 0; order && i < L->nmacros && !L->oom; i++)
        compile_macro(L, L->macros[order[i]]);
    free(order);
    L->rs->stats.macros = L->nmacros;
}

/* ---- exceptions, as text ---- */

static bool span_eq(const char *s, size_t n, const char *w) { return strlen(w) == n && memcmp(s, w, n) == 0; }

/* Falco's is_operator_for_list. */
static bool list_comp(const char *c, size_t n)
{
    return span_eq(c, n, "in") || span_eq(c, n, "intersects") || span_eq(c, n, "pmatch") ||
           (memchr(c, ' ', n) != NULL);   /* a modifier operator: validated when collected */
}

/* A value as Falco splices it: quote_item (or paren_item for a list
 * operator's single value). */
static void exc_value(struct tbuild *t, const struct litem *v, bool paren)
{
    const struct ynode *n = v->node;
    if (n->kind != YN_SCALAR || ytree_is_null(n)) {
        if (paren)
            tb_gens(t, v->file, n, "()");
        return;   /* an empty entry */
    }
    size_t len = n->len;
    const char *s = n->value;
    if (paren) {
        bool open = len && s[0] == '(';
        if (!open)
            tb_gen(t, v->file, n, "(", 1);
        tb_node(t, v->file, n, 0, len);
        if (!open)
            tb_gen(t, v->file, n, ")", 1);
        return;
    }
    bool quote = len && memchr(s, ' ', len) && s[0] != '"' && s[0] != '\'';
    if (quote)
        tb_gen(t, v->file, n, "\"", 1);
    tb_node(t, v->file, n, 0, len);
    if (quote)
        tb_gen(t, v->file, n, "\"", 1);
}

static void exc_comp(struct tbuild *t, const struct lexc *x, size_t k)
{
    const struct ynode *c = x->comp_node[k];
    if (c)
        tb_node(t, x->pos.file, c, (size_t)(x->comp_text[k] - c->value), x->comp_len[k]);
    else
        tb_gen(t, x->pos.file, x->pos.node, x->comp_text[k], x->comp_len[k]);
}

static void exc_field(struct tbuild *t, const struct lfile *f, const struct ynode *n)
{
    if (n->kind == YN_SCALAR)
        tb_node(t, f, n, 0, n->len);
}

/* " and not (...)" for each exception with values
 * (build_rule_exception_infos). 0, or -1 after the error. */
static int exceptions_text(struct loader *L, const struct lrule *r, struct tbuild *t)
{
    for (size_t i = 0; i < r->exc.n; i++) {
        const struct lexc *x = &r->exc.v[i];
        const struct lfile *xf = x->pos.file, *ff = x->fields.file;
        const struct ynode *fields = x->fields.node;
        if (!x->values.n)
            continue;
        if (!x->fields_list) {
            tb_gens(t, xf, x->pos.node, " and not (");
            exc_field(t, ff, fields);
            tb_gens(t, xf, x->pos.node, " ");
            exc_comp(t, x, 0);
            tb_gens(t, xf, x->pos.node, " (");
            for (size_t k = 0; k < x->values.n; k++) {
                const struct litem *v = &x->values.v[k];
                if (v->node->kind == YN_SEQ) {
                    error_at(L, at_node(v->file, v->node), "rule '%s', exception '%s': Expected values array to "
                             "contain a list of strings", r->name, x->name);
                    return -1;
                }
                if (k)
                    tb_gens(t, v->file, v->node, ", ");
                exc_value(t, v, false);
            }
            tb_gens(t, xf, x->pos.node, "))");
            continue;
        }
        tb_gens(t, xf, x->pos.node, " and not (");
        for (size_t k = 0; k < x->values.n; k++) {
            const struct litem *v = &x->values.v[k];
            const struct ynode *tuple = v->node;
            size_t cnt = tuple->kind == YN_SEQ ? tuple->count : 0;
            if (cnt != fields->count) {
                error_at(L, at_node(v->file, tuple), "rule '%s', exception '%s': Fields and values lists must have "
                         "equal length (%zu fields, %zu values)", r->name, x->name, fields->count, cnt);
                return -1;
            }
            tb_gens(t, v->file, tuple, k ? " or (" : "(");
            for (size_t j = 0; j < cnt; j++) {
                const struct ynode *e = tuple->items[j];
                tb_gens(t, v->file, e, j ? " and  " : " ");
                exc_field(t, ff, fields->items[j]);
                tb_gens(t, v->file, e, " ");
                exc_comp(t, x, j);
                tb_gens(t, v->file, e, " ");
                struct litem ev = {.file = v->file, .node = e};
                if (e->kind == YN_SEQ) {
                    tb_gens(t, v->file, e, "(");
                    for (size_t q = 0; q < e->count; q++) {
                        if (q)
                            tb_gens(t, v->file, e->items[q], ", ");
                        struct litem iv = {.file = v->file, .node = e->items[q]};
                        exc_value(t, &iv, false);
                    }
                    tb_gens(t, v->file, e, ")");
                } else {
                    exc_value(t, &ev, list_comp(x->comp_text[j], x->comp_len[j]));
                }
            }
            tb_gens(t, v->file, tuple, ")");
        }
        tb_gens(t, xf, x->pos.node, ")");
    }
    return 0;
}

/* ---- rules ---- */

static char *rs_strdup(struct loader *L, const char *s, size_t len)
{
    char *d = arena_strndup(&L->rs->arena, s ? s : "", s ? len : 0);
    if (!d)
        L->oom = true;
    return d;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static size_t type_count(const struct evtype_set *s)
{
    size_t n = 0;
    for (size_t i = 0; i < EVTYPE_WORDS; i++)
        n += (size_t)__builtin_popcountll(s->w[i]);
    return n;
}

/* The rule's sorted unique tags and their JSON. */
static void rule_tags(struct loader *L, const struct lrule *lr, struct rule *r)
{
    const char **tags = arena_alloc(&L->rs->arena, (lr->tags.n ? lr->tags.n : 1) * sizeof(*tags));
    if (!tags) {
        L->oom = true;
        return;
    }
    for (size_t i = 0; i < lr->tags.n; i++)
        tags[i] = lr->tags.v[i];
    qsort(tags, lr->tags.n, sizeof(*tags), cmp_str);
    size_t n = 0;
    for (size_t i = 0; i < lr->tags.n; i++)
        if (!n || strcmp(tags[n - 1], tags[i]) != 0)
            tags[n++] = tags[i];
    for (size_t i = 0; i < n; i++)
        tags[i] = rs_strdup(L, tags[i], strlen(tags[i]));
    r->tags = tags;
    r->ntags = n;
    struct strbuf tj = {0};
    render_tags_json(&tj, tags, n);
    r->tags_json = tj.failed ? NULL : rs_strdup(L, tj.data ? tj.data : "[]", tj.data ? tj.len : 2);
    strbuf_free(&tj);
    if (!r->tags_json)
        L->oom = true;
}

/* A rule's compile failed: skipped (skip-if-unknown-filter and only unknown
 * fields), or its errors reported. */
static void rule_failed(struct loader *L, const struct lrule *lr, struct deferred *d, bool other,
                        const struct lmacro *tainted)
{
    char note[400];
    const struct lmacro *root = unknown_root(tainted);
    bool skip = !other && lr->skip_unknown && (d || tainted);
    if (skip) {
        snprintf(note, sizeof(note), " (rule '%s' skipped: skip-if-unknown-filter is true)", lr->name);
        emit(L, d, false, note);
        if (root) {
            snprintf(note, sizeof(note), " (in macro '%s'; rule '%s' skipped: skip-if-unknown-filter is true)",
                     root->name, lr->name);
            emit(L, root->unknown, false, note);
        }
        L->rs->stats.rules_skipped++;
    } else {
        emit(L, d, true, "");
        if (root) {
            snprintf(note, sizeof(note), " (in macro '%s', which rule '%s' uses)", root->name, lr->name);
            emit(L, root->unknown, true, note);
            if (!d)
                error_at(L, lr->pos, "rule '%s' uses macro '%s', which names an unknown field", lr->name,
                         root->name);
        }
        if (!d && !root && !L->oom && L->diag->errors == 0)
            error_at(L, lr->pos, "rule '%s' does not compile", lr->name);
    }
    if (root)
        ((struct lmacro *)root)->reported = true;
}

static void compile_rule(struct loader *L, struct lrule *lr)
{
    struct rule_set *rs = L->rs;
    if (lr->unknown_source) {
        rs->stats.rules_skipped++;
        return;
    }
    struct rule *r = &rs->rules[rs->nrules];
    memset(r, 0, sizeof(*r));
    if (lr->text_failed)
        return;
    struct tbuild cond_text = lr->cond_text, out_text = lr->out_text;
    lr->cond_text = lr->out_text = (struct tbuild){0};
    struct filter_env env = env_of(L, &rs->arena);
    struct tmpl_env tenv = {.ctx = L, .arena = &rs->arena, .slot = slot_for, .error = on_error};
    L->visible = UINT32_MAX;
    begin_collect(L);
    struct ao_target target = {.name = lr->name, .source = lr->source, .tags = lr->tags.v, .ntags = lr->tags.n,
                               .output = lr->output.head, .pos = &lr->pos};
    append_output_text(L, &target, &out_text);
    L->cur_text = &out_text;
    int trc = template_compile(&tenv, out_text.buf ? out_text.buf : "", out_text.len, &r->output);
    if (trc == 0)
        trc = append_output_fields(L, &target, &tenv, &r->output);
    L->cur_text = &cond_text;
    struct cnode *cond = filter_parse(&env, cond_text.buf ? cond_text.buf : "", cond_text.len);
    L->cur_text = NULL;
    const struct lmacro *tainted = L->tainted_by;
    bool other = L->deferred_other;
    struct deferred *d = end_collect(L);
    if (trc != 0 || !cond || d) {
        rule_failed(L, lr, d, other, tainted);
        deferred_free(d);
        goto done;
    }
    if (cond->size > FILTER_MAX_EXPANDED) {
        error_at(L, lr->cond_pos, "rule '%s': the condition is too large after expanding its macros (more than %d "
                 "nodes): a rule must stay cheap to test", lr->name, FILTER_MAX_EXPANDED);
        goto done;
    }
    uint32_t depth = tree_depth(L, cond);
    if (depth > RULES_MAX_TREE_DEPTH) {
        error_at(L, lr->cond_pos, "rule '%s': the condition nests %u levels deep once its macros are expanded (at "
                 "most %d)", lr->name, depth, RULES_MAX_TREE_DEPTH);
        goto done;
    }
    struct filter_reach may_true, may_false;
    filter_reach(cond, &may_true, &may_false);
    r->types = may_true.types;
    size_t ntypes = type_count(&r->types);
    if (ntypes == 0 && lr->warn_evttypes)
        warn_at(L, lr->pos, "rule '%s': the condition can match no event type (e.g. evt.type = open and evt.type = "
                "execve): it never raises an alert (warn_evttypes: false silences this)", lr->name);
    else if (ntypes > 100 && lr->warn_evttypes)
        warn_at(L, lr->pos, "rule '%s': Rule matches too many evt.type values. This has a significant performance "
                "penalty. (%zu event types: events of each are tested against it; add evt.type in (...), or "
                "warn_evttypes: false)", lr->name, ntypes);
    r->all_types = evtype_set_is_all(&r->types);
    /* Enter points reach a rule that tests evt.dir, unless its test can
     * only be true for exits (`evt.dir = <`, as most do): half the syscall
     * events would otherwise evaluate it only to find it false. */
    r->sees_enter = cond->uses_dir && (may_true.dirs & FILTER_DIR_ENTER);
    r->names_point = cond->uses_point;
    r->cond = cond;
    struct tbuild desc = {0};
    tb_join(&desc, &lr->desc);
    r->name = rs_strdup(L, lr->name, strlen(lr->name));
    r->desc = rs_strdup(L, desc.buf, desc.len);
    tb_free(&desc);
    r->priority = lr->priority;
    r->enabled = lr->enabled;
    r->file = rs_strdup(L, lr->pos.file->name, strlen(lr->pos.file->name));
    r->line = lr->pos.node->line;
    rule_tags(L, lr, r);
    char absent[1400];   /* fields gVisor never reports: disabled, said once */
    if (availability_apply(rs, r, absent, sizeof(absent)))
        warn_at(L, lr->pos, "%s", absent);
    /* What one event may cost, all rules together: each bounded alone is
     * not enough (the audit's 30 KB file of doubling macros: 286 rules of
     * 98,000 nodes each, 100 ms per event). */
    if (r->enabled && (L->expanded_total += cond->size) > RULES_MAX_EXPANDED_SET) {
        error_at(L, lr->cond_pos, "rule '%s': the enabled rules' conditions come to more than %d nodes once their "
                 "macros are expanded (%llu with this rule's %llu): the rules must stay cheap to test on every "
                 "event; disable rules, or use smaller macros", lr->name, RULES_MAX_EXPANDED_SET,
                 (unsigned long long)L->expanded_total, (unsigned long long)cond->size);
        goto done;
    }
    rs->nrules++;
    rs->stats.rules++;
    rs->stats.rules_enabled += r->enabled;
done:
    tb_free(&cond_text);
    tb_free(&out_text);
}

/* ---- sequences' conditions and outputs (sequence_load.c) ---- */

int compile_condition(struct loader *L, const struct tbuild *text, struct lpos at, const char *owner, bool warn_types,
                      struct rule *r)
{
    if (!text->len) {
        error_at(L, at, "%s: the condition is empty", owner);
        return -1;
    }
    struct filter_env env = env_of(L, &L->rs->arena);
    L->visible = UINT32_MAX;   /* as a rule's: every macro */
    begin_collect(L);
    L->cur_text = text;
    struct cnode *cond = filter_parse(&env, text->buf, text->len);
    L->cur_text = NULL;
    const struct lmacro *root = unknown_root(L->tainted_by);
    struct deferred *d = end_collect(L);
    if (!cond || d || root) {
        emit(L, d, true, "");
        if (root) {
            char note[400];
            snprintf(note, sizeof(note), " (in macro '%s', which %s uses)", root->name, owner);
            emit(L, root->unknown, true, note);
            ((struct lmacro *)root)->reported = true;
        }
        if (!d && !root && !L->oom)
            error_at(L, at, "%s does not compile", owner);
        deferred_free(d);
        return -1;
    }
    if (cond->size > FILTER_MAX_EXPANDED) {
        error_at(L, at, "%s: the condition is too large after expanding its macros (more than %d nodes)", owner,
                 FILTER_MAX_EXPANDED);
        return -1;
    }
    uint32_t depth = tree_depth(L, cond);
    if (depth > RULES_MAX_TREE_DEPTH) {
        error_at(L, at, "%s: the condition nests %u levels deep once its macros are expanded (at most %d)", owner,
                 depth, RULES_MAX_TREE_DEPTH);
        return -1;
    }
    struct filter_reach may_true, may_false;
    filter_reach(cond, &may_true, &may_false);
    r->types = may_true.types;
    size_t ntypes = type_count(&r->types);
    if (ntypes == 0 && warn_types)
        warn_at(L, at, "%s: the condition can match no event type: the sequence never completes", owner);
    else if (ntypes > 100 && warn_types)
        warn_at(L, at, "%s: the condition matches %zu event types: events of each are tested against it (add "
                "evt.type in (...))", owner, ntypes);
    r->all_types = evtype_set_is_all(&r->types);
    r->sees_enter = cond->uses_dir && (may_true.dirs & FILTER_DIR_ENTER);
    r->names_point = cond->uses_point;
    r->cond = cond;
    return 0;
}

struct tmpl_env loader_tmpl_env(struct loader *L)
{
    return (struct tmpl_env){.ctx = L, .arena = &L->rs->arena, .slot = slot_for, .error = on_error};
}

/* The rule's condition (its exceptions appended, the lists spliced in) and
 * output, as texts: all of them are built before anything is compiled, so
 * a file whose lists multiply is refused before any of that work. */
static void rule_texts(struct loader *L, struct lrule *lr)
{
    if (lr->unknown_source)
        return;
    struct tbuild raw = {0};
    if (lr->exc.n) {
        const struct frag *g = lr->cond.head;
        tb_gen(&raw, g->file, g->node, "(", 1);
        tb_join(&raw, &lr->cond);
        tb_gen(&raw, g->file, g->node, ")", 1);
        lr->text_failed = exceptions_text(L, lr, &raw) != 0;
    } else {
        tb_join(&raw, &lr->cond);
    }
    if (!lr->text_failed)
        splice_lists(L, &raw, &lr->cond_text);
    tb_join(&lr->out_text, &lr->output);
    if (raw.oom || lr->cond_text.oom || lr->out_text.oom)
        L->oom = true;
    tb_free(&raw);
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

/* Falco's warnings for what nothing uses, and the unknown fields of macros
 * no rule uses (never compiled into a filter, so not errors). */
static void warn_unused(struct loader *L)
{
    for (size_t i = 0; i < L->nmacros; i++) {
        const struct lmacro *m = L->macros[i];
        if (m->state == M_UNKNOWN_FIELD && m->unknown && !m->reported) {
            char note[300];
            snprintf(note, sizeof(note), " (in macro '%s', which no rule uses: ignored)", m->name);
            emit(L, m->unknown, false, note);
        }
        if (!m->used)
            warn_at(L, m->pos, "macro '%s': Macro not referred to by any other rule/macro", m->name);
    }
    for (size_t i = 0; i < L->nlists; i++)
        if (!L->lists[i]->used)
            warn_at(L, L->lists[i]->pos, "list '%s': List not referred to by any other rule/macro",
                    L->lists[i]->name);
}

void compile_all(struct loader *L)
{
    size_t errors = L->diag->errors;
    compile_lists(L);
    if (L->diag->errors > errors || L->oom)
        return;   /* the lists are what everything else is made of */
    for (size_t i = 0; i < L->nmacros && !L->oom; i++) {
        struct lmacro *m = L->macros[i];
        struct tbuild raw = {0};
        tb_join(&raw, &m->cond);
        splice_lists(L, &raw, &m->text);
        tb_free(&raw);
        L->oom |= m->text.oom;
    }
    for (size_t i = 0; i < L->nrules && !L->oom && !L->spliced_exceeded; i++)
        rule_texts(L, L->rules[i]);
    if (L->spliced_exceeded || L->oom)
        return;
    compile_macros(L);
    struct rule_set *rs = L->rs;
    rs->rules = arena_alloc(&rs->arena, (L->nrules ? L->nrules : 1) * sizeof(*rs->rules));
    if (!rs->rules) {
        L->oom = true;
        return;
    }
    for (size_t i = 0; i < L->nrules && !L->oom; i++)
        compile_rule(L, L->rules[i]);
    if (!L->oom)
        sequence_compile_all(L);
    if (L->diag->errors || L->oom)
        return;
    warn_unused(L);
    rs->nslots = (uint32_t)L->nslots;
    if (build_index(rs, &rs->exits, false) != 0 || build_index(rs, &rs->enters, true) != 0)
        L->oom = true;
}
