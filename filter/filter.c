/* filter.c - compiling a condition's tree (filter_parse.c) into the nodes
 * filter_eval.c evaluates: macros, lists and fields resolved, every
 * constant compiled once, transformers typed, and refused where libsinsp's
 * compiler refuses them (sinsp_filter_compiler, flt_is_comparable,
 * add_transformer, add_filter_value, the event-code search of
 * filter/ppm_codes.cpp). Also what a condition can match (filter_reach,
 * filter_may_match) and reads (filter_fields).
 */
#include "filter.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter_ast.h"
#include "filter_int.h"
#include "regex_re2.h"

static const char *const op_names[OP_COUNT] = {
    [OP_EQ] = "=", [OP_NE] = "!=", [OP_LT] = "<", [OP_LE] = "<=", [OP_GT] = ">", [OP_GE] = ">=",
    [OP_CONTAINS] = "contains", [OP_ICONTAINS] = "icontains", [OP_BCONTAINS] = "bcontains",
    [OP_STARTSWITH] = "startswith", [OP_BSTARTSWITH] = "bstartswith", [OP_ENDSWITH] = "endswith",
    [OP_GLOB] = "glob", [OP_IGLOB] = "iglob", [OP_IN] = "in", [OP_INTERSECTS] = "intersects",
    [OP_PMATCH] = "pmatch", [OP_EXISTS] = "exists", [OP_REGEX] = "regex",
};

const char *filter_op_name(enum filter_op op) { return op < OP_COUNT ? op_names[op] : "?"; }

const char *filter_mod_name(enum filter_mod mod)
{
    static const char *const names[] = {"", "oneof", "anyof", "allof"};
    return (unsigned)mod < 4 ? names[mod] : "?";
}

int filter_op_parse(const char *s)
{
    if (strcmp(s, "==") == 0)
        return OP_EQ;
    for (int i = 0; i < OP_COUNT; i++)
        if (strcmp(op_names[i], s) == 0)
            return i;
    return -1;
}

/* Falco's cmpop_supports_modifier: the string operators. */
static bool takes_modifier(enum filter_op op)
{
    switch (op) {
    case OP_EQ: case OP_NE: case OP_CONTAINS: case OP_ICONTAINS: case OP_BCONTAINS: case OP_STARTSWITH:
    case OP_BSTARTSWITH: case OP_ENDSWITH: case OP_GLOB: case OP_IGLOB: case OP_REGEX: return true;
    default: return false;
    }
}

int filter_cmp_parse(const char *s, enum filter_op *op, enum filter_mod *mod)
{
    const char *sp = strchr(s, ' ');
    char base[16];
    size_t n = sp ? (size_t)(sp - s) : strlen(s);
    if (n >= sizeof(base))
        return -1;
    memcpy(base, s, n);
    base[n] = '\0';
    int o = filter_op_parse(base);
    if (o < 0)
        return -1;
    *op = (enum filter_op)o;
    *mod = MOD_NONE;
    if (!sp)
        return 0;
    static const char *const names[] = {"oneof", "anyof", "allof"};
    for (int m = 0; m < 3; m++)
        if (strcmp(sp + 1, names[m]) == 0 && takes_modifier(*op)) {
            *mod = (enum filter_mod)(m + 1);
            return 0;
        }
    return -1;
}

/* ---- constants ---- */

static bool parse_fnum(const char *s, size_t len, struct fnum *out)
{
    size_t i = 0;
    bool neg = false;
    if (i < len && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    if (i >= len)
        return false;
    uint64_t v = 0;
    if (len - i > 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
        i += 2;
        for (; i < len; i++) {
            char c = s[i];
            int d = c >= '0' && c <= '9' ? c - '0' : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10 : -1;
            if (d < 0 || v >> 60)
                return false;
            v = v << 4 | (uint64_t)d;
        }
    } else {
        for (; i < len; i++) {
            if (s[i] < '0' || s[i] > '9')
                return false;
            uint64_t d = (uint64_t)(s[i] - '0');
            if (v > (UINT64_MAX - d) / 10)
                return false;
            v = v * 10 + d;
        }
    }
    out->neg = neg && v != 0;
    out->mag = v;
    return true;
}

bool filter_tryparse_u64(const char *s, size_t len, uint64_t *out)
{
    size_t i = 0;
    while (i < len && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r')))
        i++;
    bool neg = false;
    if (i < len && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    size_t digits = i;
    uint64_t v = 0;
    bool over = false;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            over = true;
        else
            v = v * 10 + d;
    }
    if (i == digits || i != len)
        return false;
    if (over)
        v = UINT64_MAX;   /* strtoull's ERANGE: sscanf still converts */
    *out = neg ? 0 - v : v;
    return true;
}

static bool parse_ip(const char *s, size_t len, struct operand *o)
{
    char buf[INET6_ADDRSTRLEN + 8];
    if (len >= sizeof(buf))
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *slash = strchr(buf, '/');
    int prefix = -1;
    if (slash) {
        *slash = '\0';
        struct fnum n;
        if (!parse_fnum(slash + 1, strlen(slash + 1), &n) || n.neg || n.mag > 128)
            return false;
        prefix = (int)n.mag;
    }
    if (inet_pton(AF_INET, buf, o->ip) == 1) {
        o->ipfam = 4;
        if (prefix > 32)
            return false;
        o->prefix = (uint8_t)(prefix < 0 ? 32 : prefix);
    } else if (inet_pton(AF_INET6, buf, o->ip) == 1) {
        o->ipfam = 6;
        o->prefix = (uint8_t)(prefix < 0 ? 128 : prefix);
    } else {
        return false;
    }
    o->has_ip = true;
    return true;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)(c | 32);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

struct filter_owned {
    struct regex *re;
    struct filter_owned *next;
};

void filter_owned_free(struct filter_owned *list)
{
    while (list) {
        struct filter_owned *next = list->next;
        regex_free(list->re);
        free(list);
        list = next;
    }
}

static const char *clip(size_t len) { return len > 48 ? "..." : ""; }
#define CLIPPED(s, len) (int)((len) > 48 ? 48 : (len)), (s), clip(len)

/* Precompiles what the operator needs of one value. */
static int compile_operand(const struct filter_env *env, enum filter_op op, struct operand *o, const char *s,
                           size_t len, char *err, size_t errlen)
{
    struct arena *a = env->arena;
    memset(o, 0, sizeof(*o));
    o->s = arena_strndup(a, s, len);
    if (!o->s)
        goto oom;
    o->len = (uint32_t)len;
    o->has_num = parse_fnum(s, len, &o->num);
    if (len == 4 && memcmp(s, "true", 4) == 0)
        o->has_bool = o->b = true;
    else if (len == 5 && memcmp(s, "false", 5) == 0)
        o->has_bool = true;
    parse_ip(s, len, o);
    if (op == OP_ICONTAINS || op == OP_IGLOB) {
        char *l = arena_strndup(a, s, len);
        if (!l)
            goto oom;
        for (size_t i = 0; i < len; i++)
            l[i] = (char)filter_fold((unsigned char)l[i], true);
        o->lower = l;
    }
    if (op == OP_BCONTAINS || op == OP_BSTARTSWITH) {
        bool hex = len % 2 == 0;
        for (size_t i = 0; hex && i < len; i++)
            hex = hexval(s[i]) >= 0;
        if (!hex) {
            snprintf(err, errlen, "'%s' takes hex bytes (an even number of hex digits: 2f746d70), not '%.*s%s'",
                     op_names[op], CLIPPED(s, len));
            return -1;
        }
        uint8_t *b = arena_alloc(a, len / 2 + 1);
        if (!b)
            goto oom;
        for (size_t i = 0; i < len; i += 2)
            b[i / 2] = (uint8_t)(hexval(s[i]) << 4 | hexval(s[i + 1]));
        o->bytes = b;
        o->nbytes = (uint32_t)(len / 2);
    }
    if (op == OP_REGEX) {
        if (!env->owned) {
            snprintf(err, errlen, "regex is not available here");
            return -1;
        }
        size_t have = 0;
        for (const struct filter_owned *w = *env->owned; w; w = w->next)
            have++;
        if (have >= REGEX_MAX_PATTERNS) {
            snprintf(err, errlen, "more than %d regular expressions in the rules: refused (each holds up to %d KiB)",
                     REGEX_MAX_PATTERNS, REGEX_MAX_MEM >> 10);
            return -1;
        }
        struct filter_owned *own = malloc(sizeof(*own));
        if (!own)
            goto oom;
        char why[200];
        own->re = regex_compile(s, len, why, sizeof(why));
        if (!own->re) {
            free(own);
            snprintf(err, errlen, "invalid regular expression '%.*s%s': %s", CLIPPED(s, len), why);
            return -1;
        }
        own->next = *env->owned;
        *env->owned = own;
        o->re = own->re;
    }
    if (op == OP_PMATCH) {
        size_t n = 0;
        for (size_t i = 0; i < len;) {
            while (i < len && s[i] == '/')
                i++;
            if (i < len)
                n++;
            while (i < len && s[i] != '/')
                i++;
        }
        const char **parts = arena_alloc(a, (n + 1) * sizeof(*parts));
        uint32_t *lens = arena_alloc(a, (n + 1) * sizeof(*lens));
        bool *globs = arena_alloc(a, n + 1);
        if (!parts || !lens || !globs)
            goto oom;
        size_t k = 0;
        for (size_t i = 0; i < len;) {
            while (i < len && s[i] == '/')
                i++;
            size_t st = i;
            while (i < len && s[i] != '/')
                i++;
            if (i > st) {
                parts[k] = o->s + st;
                lens[k] = (uint32_t)(i - st);
                globs[k] = memchr(o->s + st, '*', i - st) || memchr(o->s + st, '?', i - st) ||
                           memchr(o->s + st, '[', i - st);
                k++;
            }
        }
        o->parts = parts;
        o->part_lens = lens;
        o->part_glob = globs;
        o->nparts = (uint32_t)n;
    }
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    return -1;
}

/* in-set order: length first, then bytes (any total order serves). */
static int set_str_cmp(const void *x, const void *y)
{
    const struct operand *a = *(const struct operand *const *)x, *b = *(const struct operand *const *)y;
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    return memcmp(a->s, b->s, a->len);
}

static int set_num_cmp(const void *x, const void *y)
{
    const struct operand *a = *(const struct operand *const *)x, *b = *(const struct operand *const *)y;
    return filter_fnum_cmp(a->num, b->num);
}

/* ---- what a condition can match, what it reads ---- */

/* What one walk of a condition learned about each macro body it met: a
 * macro used twice under a condition (m2: m1 or m1, m3: m2 or m2...) is
 * answered once per walk, not once per use, so a walk costs the distinct
 * nodes, not the expanded ones (issue 32 item 7: a 30 KB file of doubling
 * macros took 215 s to check, 95% of it in the same bodies' answers).
 * Open addressing by pointer; out of memory, bodies are walked again. */
struct body_memo {
    const struct cnode **keys;
    unsigned char *vals;
    size_t cap, n, size;    /* size: bytes of one value */
};

static uint64_t ptr_hash(const void *p)
{
    return ((uint64_t)(uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull;
}

/* body's value: *known when it was stored before; NULL when no room. */
static void *memo_slot(struct body_memo *m, const struct cnode *body, bool *known)
{
    *known = false;
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        const struct cnode **keys = calloc(cap, sizeof(*keys));
        unsigned char *vals = calloc(cap, m->size);
        if (!keys || !vals) {
            free(keys);
            free(vals);
            return NULL;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i]) {
                size_t j = ptr_hash(m->keys[i]) & (cap - 1);
                while (keys[j])
                    j = (j + 1) & (cap - 1);
                keys[j] = m->keys[i];
                memcpy(vals + j * m->size, m->vals + i * m->size, m->size);
            }
        free(m->keys);
        free(m->vals);
        m->keys = keys;
        m->vals = vals;
        m->cap = cap;
    }
    size_t j = ptr_hash(body) & (m->cap - 1);
    while (m->keys[j] && m->keys[j] != body)
        j = (j + 1) & (m->cap - 1);
    *known = m->keys[j] != NULL;
    if (!*known) {
        m->keys[j] = body;
        m->n++;
    }
    return m->vals + j * m->size;
}

static void memo_free(struct body_memo *m)
{
    free(m->keys);
    free(m->vals);
}

struct probe {
    unsigned type;
    char dir;
    const char *point;
    struct body_memo memo;   /* per body: may be true, may be false */
};

static bool plain(const struct check *c) { return !c->lhs && !c->rhs; }

/* Three-valued: *t when n may be true, *f when it may be false. */
static void may(const struct cnode *n, struct probe *p, bool *t, bool *f)
{
    bool kt, kf;
    switch (n->kind) {
    case CN_TYPES:
        *t = evtype_set_has(n->types, p->type);
        *f = !*t;
        return;
    case CN_CONST:
        *t = n->const_val;
        *f = !n->const_val;
        return;
    case CN_CHECK: {
        const struct check *c = n->chk;
        if (c->known) {
            *t = c->known > 0;
            *f = !*t;
            return;
        }
        if (!plain(c)) {
            *t = *f = true;
            return;
        }
        if (c->field.id == F_EVT_DIR) {   /* as the evaluator tests it */
            *t = c->dirs & (p->dir == '>' ? FILTER_DIR_ENTER : FILTER_DIR_EXIT);
            *f = !*t;
            return;
        }
        const char *known = c->field.id == F_GVISOR_POINT ? p->point
                            : c->field.id == F_EVT_TYPE   ? evtype_name(p->type)
                                                          : NULL;
        if (!known) {
            *t = *f = true;
            return;
        }
        *t = filter_compare_str(c, known, strlen(known));
        *f = !*t;
        return;
    }
    case CN_NOT:
        may(n->kids[0], p, f, t);
        return;
    case CN_MACRO: {
        bool known;
        bool *answer = memo_slot(&p->memo, n->body, &known);
        if (answer && known) {
            *t = answer[0];
            *f = answer[1];
            return;
        }
        may(n->body, p, t, f);
        if (answer && (answer = memo_slot(&p->memo, n->body, &known)) != NULL) {   /* the memo may have grown */
            answer[0] = *t;
            answer[1] = *f;
        }
        return;
    }
    case CN_AND:
    case CN_OR:
        *t = n->kind == CN_AND;
        *f = n->kind == CN_OR;
        for (uint32_t i = 0; i < n->n; i++) {
            may(n->kids[i], p, &kt, &kf);
            if (n->kind == CN_AND) {
                *t = *t && kt;
                *f = *f || kf;
            } else {
                *t = *t || kt;
                *f = *f && kf;
            }
        }
        return;
    }
    *t = *f = true;
}

bool filter_may_match(const struct cnode *n, unsigned t, char dir, const char *point)
{
    struct probe p = {.type = t, .dir = dir, .point = point, .memo = {.size = 2 * sizeof(bool)}};
    bool yes, no;
    may(n, &p, &yes, &no);
    memo_free(&p.memo);
    return yes;
}

static void expr_fields(const struct fexpr *e, void (*fn)(void *ctx, const struct fieldref *f), void *ctx)
{
    if (!e)
        return;
    if (e->kind == FX_FIELD)
        fn(ctx, &e->field);
    for (uint32_t i = 0; i < e->nargs; i++)
        expr_fields(e->args[i], fn, ctx);
}

/* Each macro body once per walk (memo: the bodies met). */
static void fields_of(const struct cnode *n, void (*fn)(void *ctx, const struct fieldref *f), void *ctx,
                      struct body_memo *met)
{
    bool known;
    switch (n->kind) {
    case CN_CHECK:
        if (n->chk->lhs)
            expr_fields(n->chk->lhs, fn, ctx);
        else
            fn(ctx, &n->chk->field);
        expr_fields(n->chk->rhs, fn, ctx);
        return;
    case CN_MACRO:
        if (!memo_slot(met, n->body, &known) || !known)
            fields_of(n->body, fn, ctx, met);
        return;
    case CN_AND:
    case CN_OR:
    case CN_NOT:
        for (uint32_t i = 0; i < n->n; i++)
            fields_of(n->kids[i], fn, ctx, met);
        return;
    case CN_TYPES:
    case CN_CONST: return;
    }
}

void filter_fields(const struct cnode *n, void (*fn)(void *ctx, const struct fieldref *f), void *ctx)
{
    struct body_memo met = {.size = 1};
    fields_of(n, fn, ctx, &met);
    memo_free(&met);
}

/* Where an evt.dir check is true, asked of the very comparison the events
 * will meet (evt.dir is never absent). */
static unsigned dir_check(const struct check *c)
{
    if (c->op == OP_EXISTS)
        return FILTER_DIR_ALL;
    return (filter_compare_str(c, ">", 1) ? FILTER_DIR_ENTER : 0) | (filter_compare_str(c, "<", 1) ? FILTER_DIR_EXIT : 0);
}

static void reach_all(struct filter_reach *r)
{
    evtype_set_all(&r->types);
    r->dirs = FILTER_DIR_ALL;
}

static void reach_none(struct filter_reach *r)
{
    memset(&r->types, 0, sizeof(r->types));
    r->dirs = 0;
}

/* An evt.type test holds for its types, an evt.dir test for its
 * directions, an evt.num test that its invariant decides always or never;
 * anything else may be true or false for every one (libsinsp's "neutral"
 * checks). */
static void reach_leaf(const struct cnode *n, struct filter_reach *t, struct filter_reach *f)
{
    reach_all(t);
    reach_all(f);
    if (n->kind == CN_TYPES) {
        t->types = *n->types;
        f->types = *n->types;
        evtype_set_invert(&f->types);
    } else if (n->kind == CN_CHECK && n->chk->known) {
        reach_none(n->chk->known > 0 ? f : t);
    } else if (n->kind == CN_CHECK && plain(n->chk) && n->chk->field.id == F_EVT_DIR && !n->chk->field.any_ancestor) {
        t->dirs = dir_check(n->chk);
        f->dirs = FILTER_DIR_ALL & ~t->dirs;
    }   /* CN_CONST, `x in ()`: no restriction, as in Falco */
}

static void reach(const struct cnode *n, struct filter_reach *t, struct filter_reach *f, struct body_memo *memo)
{
    struct filter_reach kt, kf;
    switch (n->kind) {
    case CN_NOT:
        reach(n->kids[0], f, t, memo);
        return;
    case CN_MACRO: {
        bool known;
        struct filter_reach *answer = memo_slot(memo, n->body, &known);
        if (answer && known) {
            *t = answer[0];
            *f = answer[1];
            return;
        }
        reach(n->body, t, f, memo);
        if (answer) {   /* looked up again: the slot may have moved as the memo grew */
            answer = memo_slot(memo, n->body, &known);
            if (answer) {
                answer[0] = *t;
                answer[1] = *f;
            }
        }
        return;
    }
    case CN_AND:
    case CN_OR: {
        bool and = n->kind == CN_AND;
        struct filter_reach *meet = and ? t : f, *join = and ? f : t;   /* all kids' / any kid's */
        reach_all(meet);
        reach_none(join);
        for (uint32_t i = 0; i < n->n; i++) {
            reach(n->kids[i], &kt, &kf, memo);
            const struct filter_reach *km = and ? &kt : &kf, *kj = and ? &kf : &kt;
            evtype_set_and(&meet->types, &km->types);
            meet->dirs &= km->dirs;
            evtype_set_or(&join->types, &kj->types);
            join->dirs |= kj->dirs;
        }
        return;
    }
    default:
        reach_leaf(n, t, f);
    }
}

void filter_reach(const struct cnode *n, struct filter_reach *t, struct filter_reach *f)
{
    struct body_memo memo = {.size = 2 * sizeof(struct filter_reach)};
    reach(n, t, f, &memo);
    memo_free(&memo);
}

/* ---- building nodes ---- */

static uint64_t sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

struct cnode *filter_make_node(struct arena *a, enum cnode_kind kind, struct cnode **kids, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (!kids[i])
            return NULL;
    struct cnode *node = arena_alloc(a, sizeof(*node));
    struct cnode **k = arena_alloc(a, (n ? n : 1) * sizeof(*k));
    if (!node || !k)
        return NULL;
    memset(node, 0, sizeof(*node));
    memcpy(k, kids, n * sizeof(*k));
    node->kind = kind;
    node->kids = k;
    node->n = n;
    node->size = 1;
    for (uint32_t i = 0; i < n; i++) {
        node->size = sat_add(node->size, kids[i]->size);
        if (kids[i]->macro_depth > node->macro_depth)
            node->macro_depth = kids[i]->macro_depth;
        node->uses_dir |= kids[i]->uses_dir;
        node->uses_point |= kids[i]->uses_point;
    }
    return node;
}

static struct cnode *leaf(struct arena *a, enum cnode_kind kind)
{
    struct cnode *n = arena_alloc(a, sizeof(*n));
    if (n) {
        memset(n, 0, sizeof(*n));
        n->kind = kind;
        n->size = 1;
    }
    return n;
}

/* ---- the compiler ---- */

struct compiler {
    const struct filter_env *env;
    bool failed;
};

static void cerr(struct compiler *C, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cerr(struct compiler *C, size_t pos, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    C->env->error(C->env->ctx, pos, msg);
    C->failed = true;
}

static void cwarn(struct compiler *C, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cwarn(struct compiler *C, size_t pos, const char *fmt, ...)
{
    if (!C->env->warn)
        return;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    C->env->warn(C->env->ctx, pos, msg);
}

/* libsinsp's byte buffers (PT_BYTEBUF: evt.buffer alone), by name, whatever
 * type the field table gives them: they take bcontains and bstartswith, a
 * NUL byte, and no string operator that reads text. */
#define FT_BYTES_ ((enum ftype)0x7f)

static enum ftype field_type(const struct fieldref *f, const char *name, size_t len)
{
    if (len == 10 && memcmp(name, "evt.buffer", 10) == 0)
        return FT_BYTES_;
    return fields_type(f);
}

static const char *type_word(enum ftype t)
{
    if (t == FT_BYTES_)
        return "byte";
    switch (t) {
    case FT_INT:
    case FT_UINT: return "numeric";
    case FT_BOOL: return "boolean";
    case FT_IP: return "IP address";
    default: return "string";
    }
}

/* Text-like types: strings, and evt.arg (a string in libsinsp: its
 * numbers are compared as text by string operators). */
static bool stringy(enum ftype t) { return t == FT_STR || t == FT_DYN; }

/* libsinsp's flt_is_comparable: which operators a field's type takes. */
static bool op_allowed(enum ftype t, bool is_list, enum filter_op op, enum filter_mod mod)
{
    if (op == OP_EXISTS)
        return true;
    if (is_list)
        return op == OP_IN || op == OP_INTERSECTS;
    if (t == FT_BYTES_)
        return op == OP_EQ || op == OP_NE || op == OP_CONTAINS || op == OP_IN || op == OP_STARTSWITH ||
               op == OP_ENDSWITH || op == OP_INTERSECTS || op == OP_BCONTAINS || op == OP_BSTARTSWITH;
    switch (t) {
    case FT_INT:
    case FT_UINT:
        return op == OP_EQ || op == OP_NE || op == OP_LT || op == OP_LE || op == OP_GT || op == OP_GE || op == OP_IN ||
               op == OP_INTERSECTS;
    case FT_BOOL: return op == OP_EQ || op == OP_NE || op == OP_IN || op == OP_INTERSECTS;
    case FT_IP:
        if (mod != MOD_NONE)
            return op == OP_EQ || op == OP_NE;
        return op == OP_EQ || op == OP_NE || op == OP_IN || op == OP_INTERSECTS;
    default:   /* strings, evt.arg, and a type this table does not know yet */
        return op != OP_BCONTAINS && op != OP_BSTARTSWITH;
    }
}

/* Fields libsinsp marks EPF_NO_TRANSFORMER and EPF_NO_RHS (by name, so the
 * rule holds for every field the table has or will have). */
static bool field_is_fixed(const char *name, size_t len)
{
    static const char *const fixed[] = {
        "proc.aname", "proc.apid", "proc.aexe", "proc.aexepath", "proc.acmdline", "proc.aenv", "fd.ip", "fd.port",
        "fd.net", "fd.proto", "fd.name_changed", "fd.cip.name", "fd.sip.name", "fd.lip.name", "fd.rip.name",
        "evt.rawarg", "evt.around",
    };
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        if (strlen(fixed[i]) == len && memcmp(fixed[i], name, len) == 0)
            return true;
    return len > 11 && memcmp(name, "evt.rawarg.", 11) == 0;
}

static uint32_t scratch_slot(const struct filter_env *env, int32_t index)
{
    struct fieldref f;
    memset(&f, 0, sizeof(f));
    f.id = FILTER_SCRATCH_ID;
    f.index = index;
    return env->slot(env->ctx, &f);
}

/* The text of a tree node for messages: a field's name, "tolower(...)". */
static void node_name(const struct ast *a, char *out, size_t cap)
{
    if (a->kind == AST_FIELD)
        snprintf(out, cap, "%.*s%s%.*s%s", (int)(a->len > 64 ? 64 : a->len), a->text, a->has_arg ? "[" : "",
                 a->has_arg ? (int)(a->arg_len > 32 ? 32 : a->arg_len) : 0, a->has_arg ? a->arg : "",
                 a->has_arg ? "]" : "");
    else if (a->kind == AST_TRANSFORM)
        snprintf(out, cap, "%.*s(...)", (int)a->len, a->text);
    else
        snprintf(out, cap, "%s", a->kind == AST_TLIST ? "(...)" : "a value");
}

static bool name_is(const struct ast *a, const char *name) { return strlen(name) == a->len && memcmp(a->text, name, a->len) == 0; }

static int resolve_field(struct compiler *C, const struct ast *a, struct fieldref *out)
{
    char err[300];
    if (fields_resolve(a->text, a->len, a->arg, a->arg_len, a->has_arg, C->env->arena, out, err, sizeof(err)) != 0) {
        cerr(C, a->pos, "%s", err);
        return -1;
    }
    return 0;
}

static struct fexpr *new_expr(struct compiler *C, enum fexpr_kind kind)
{
    struct fexpr *e = arena_alloc(C->env->arena, sizeof(*e));
    if (!e) {
        cerr(C, 0, "out of memory");
        return NULL;
    }
    memset(e, 0, sizeof(*e));
    e->kind = (uint8_t)kind;
    e->type = FT_STR;
    return e;
}

static bool has_evt_type(const struct fexpr *e)
{
    if (e->kind == FX_FIELD && e->field.id == F_EVT_TYPE)
        return true;
    for (uint32_t i = 0; i < e->nargs; i++)
        if (has_evt_type(e->args[i]))
            return true;
    return false;
}

static struct fexpr *compile_expr(struct compiler *C, const struct ast *a, unsigned side, unsigned depth);

static struct fexpr *expr_field(struct compiler *C, const struct ast *a)
{
    struct fexpr *e = new_expr(C, FX_FIELD);
    if (!e || resolve_field(C, a, &e->field) != 0)
        return NULL;
    if (e->field.any_ancestor) {
        cerr(C, a->pos, "'%.*s' without an index tests every ancestor: it cannot be transformed, listed or compared "
             "with a field (use %.*s[N])", (int)a->len, a->text, (int)a->len, a->text);
        return NULL;
    }
    e->type = (uint8_t)field_type(&e->field, a->text, a->len);
    e->field.slot = C->env->slot(C->env->ctx, &e->field);
    return e;
}

static bool scratch_for(struct compiler *C, struct fexpr *e, unsigned side, unsigned depth)
{
    e->vals_slot = scratch_slot(C->env, filter_scratch_index(side, depth, 0));
    e->bytes_slot = scratch_slot(C->env, filter_scratch_index(side, depth, 1));
    return true;
}

/* The argument a one-argument transformer applies to: libsinsp's
 * add_transformer refuses fields that take none. */
static bool transformable(struct compiler *C, const struct ast *arg)
{
    if (arg->kind == AST_FIELD && field_is_fixed(arg->text, arg->len)) {
        cerr(C, arg->pos, "field '%.*s' does not support transformers", (int)arg->len, arg->text);
        return false;
    }
    return true;
}

static struct fexpr *expr_transform(struct compiler *C, const struct ast *a, unsigned side, unsigned depth)
{
    static const struct {
        const char *name;
        enum fexpr_kind kind;
    } names[] = {{"tolower", FX_TOLOWER}, {"toupper", FX_TOUPPER}, {"b64", FX_B64}, {"basename", FX_BASENAME},
                 {"len", FX_LEN},         {"join", FX_JOIN},       {"concat", FX_CONCAT}, {"getopt", FX_GETOPT}};
    if (name_is(a, "val")) {   /* the identity: the field itself, on a right-hand side */
        if (a->has_arg) {
            cerr(C, a->pos, "transformer 'val' does not support field arguments");
            return NULL;
        }
        return expr_field(C, a->kids[0]);
    }
    enum fexpr_kind kind = FX_FIELD;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (name_is(a, names[i].name))
            kind = names[i].kind;
    if (kind == FX_FIELD) {
        cerr(C, a->pos, "unknown transformer '%.*s'", (int)a->len, a->text);
        return NULL;
    }
    bool multi = kind == FX_JOIN || kind == FX_CONCAT || kind == FX_GETOPT;
    if (!multi && a->n != 1) {
        cerr(C, a->pos, "%.*s() takes one argument", (int)a->len, a->text);
        return NULL;
    }
    if (kind == FX_JOIN && a->n != 2) {
        cerr(C, a->pos, "join() takes 2 arguments: a separator and a list");
        return NULL;
    }
    if (kind == FX_GETOPT && a->n != 2) {
        cerr(C, a->pos, "getopt() takes 2 arguments: a list of arguments and an optstring");
        return NULL;
    }
    if (kind == FX_CONCAT && a->n < 2) {
        cerr(C, a->pos, "concat() takes at least 2 arguments");
        return NULL;
    }
    if (a->has_arg && kind != FX_GETOPT) {
        cerr(C, a->pos, "transformer '%.*s' does not support field arguments", (int)a->len, a->text);
        return NULL;
    }
    if (!multi && !transformable(C, a->kids[0]))
        return NULL;
    struct fexpr *e = new_expr(C, kind);
    struct fexpr **args = arena_alloc(C->env->arena, a->n * sizeof(*args));
    if (!e || !args)
        return NULL;
    bool ok = true;
    for (uint32_t i = 0; i < a->n; i++)
        ok &= (args[i] = compile_expr(C, a->kids[i], side, depth + 1)) != NULL;
    if (!ok)
        return NULL;
    e->args = args;
    e->nargs = a->n;
    scratch_for(C, e, side, depth);
    char name[100];
    node_name(a->kids[0], name, sizeof(name));
    const struct fexpr *x = args[0];
    switch (kind) {
    case FX_TOLOWER:
    case FX_TOUPPER:
    case FX_BASENAME:
    case FX_B64:
        if (!stringy(x->type) && !(kind == FX_B64 && x->type == FT_BYTES_)) {
            cerr(C, a->pos, "transformer '%.*s' does not apply to %s%s '%s' (it takes strings)", (int)a->len, a->text,
                 type_word(x->type), x->is_list ? " list" : " field", name);
            return NULL;
        }
        e->type = x->type == FT_DYN ? FT_STR : x->type;
        e->is_list = x->is_list;
        return e;
    case FX_LEN:
        if (!x->is_list && !stringy(x->type) && x->type != FT_BYTES_) {
            cerr(C, a->pos, "transformer 'len' does not apply to %s field '%s' (it takes strings and lists)",
                 type_word(x->type), name);
            return NULL;
        }
        e->type = FT_UINT;
        return e;
    case FX_JOIN:
        if (x->is_list || !args[1]->is_list) {
            cerr(C, a->pos, x->is_list ? "join() first argument (the separator) must be a single value, not a list"
                                       : "join() second argument must be a list");
            return NULL;
        }
        return e;
    case FX_CONCAT:
        for (uint32_t i = 0; i < e->nargs; i++)
            if (!stringy(args[i]->type) || args[i]->is_list) {
                cerr(C, a->kids[i]->pos, "concat() arguments must be strings");
                return NULL;
            }
        return e;
    case FX_GETOPT:
        if (!x->is_list || args[1]->is_list || !stringy(x->type) || !stringy(args[1]->type)) {
            cerr(C, a->pos, !x->is_list      ? "getopt() first argument must be a list"
                            : args[1]->is_list ? "getopt() second argument (the optstring) must be a single value"
                                               : "getopt() arguments must be strings");
            return NULL;
        }
        if (a->has_arg) {
            if (a->arg_len != 1) {
                cerr(C, a->pos, "getopt() field argument must be a single option character");
                return NULL;
            }
            e->selector = a->arg[0];
        }
        e->is_list = !e->selector;
        if (args[1]->kind == FX_CONST) {   /* decoded once, not per event */
            struct getopt_spec *spec = arena_alloc(C->env->arena, sizeof(*spec));
            if (!spec)
                return NULL;
            filter_getopt_spec(args[1]->value.s, args[1]->value.len, spec);
            e->opts = spec;
        }
        return e;
    default: return NULL;
    }
}

static struct fexpr *compile_expr(struct compiler *C, const struct ast *a, unsigned side, unsigned depth)
{
    switch (a->kind) {
    case AST_FIELD: return expr_field(C, a);
    case AST_VALUE: {
        struct fexpr *e = new_expr(C, FX_CONST);
        char *s = e ? arena_strndup(C->env->arena, a->text, a->len) : NULL;
        if (!s)
            return NULL;
        e->value = (struct fval){.kind = FV_STR, .len = a->len, .s = s};
        return e;
    }
    case AST_TLIST: {
        struct fexpr *e = new_expr(C, FX_LIST);
        struct fexpr **args = arena_alloc(C->env->arena, (a->n ? a->n : 1) * sizeof(*args));
        if (!e || !args)
            return NULL;
        bool ok = true;
        for (uint32_t i = 0; i < a->n; i++)
            ok &= (args[i] = compile_expr(C, a->kids[i], side, depth + 1)) != NULL;
        if (!ok)
            return NULL;
        e->args = args;
        e->nargs = a->n;
        e->is_list = true;
        scratch_for(C, e, side, depth);
        return e;
    }
    case AST_TRANSFORM: return expr_transform(C, a, side, depth);
    default:
        cerr(C, a->pos, "expected a field, a transformer or a value");
        return NULL;
    }
}

/* The constants of a check, growing in the arena. */
struct values {
    const char **text;
    uint32_t *lens, *pos;
    size_t n, cap;
};

static int add_value(struct arena *a, struct values *v, const char *text, size_t len, size_t pos)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 8;
        const char **t = arena_alloc(a, cap * sizeof(*t));
        uint32_t *l = arena_alloc(a, cap * sizeof(*l)), *p = arena_alloc(a, cap * sizeof(*p));
        if (!t || !l || !p)
            return -1;
        if (v->n) {
            memcpy(t, v->text, v->n * sizeof(*t));
            memcpy(l, v->lens, v->n * sizeof(*l));
            memcpy(p, v->pos, v->n * sizeof(*p));
        }
        v->text = t;
        v->lens = l;
        v->pos = p;
        v->cap = cap;
    }
    v->text[v->n] = text;
    v->pos[v->n] = (uint32_t)pos;
    v->lens[v->n++] = (uint32_t)len;
    return 0;
}

/* A list item: a bare name of a list expands to its items. */
static int add_list_item(struct compiler *C, struct values *v, const struct ast *item)
{
    const struct filter_list *l = item->quoted ? NULL : C->env->list(C->env->ctx, item->text, item->len);
    if (!l)
        return add_value(C->env->arena, v, item->text, item->len, item->pos);
    for (size_t i = 0; i < l->n; i++)
        if (add_value(C->env->arena, v, l->items[i], l->lens[i], item->pos) != 0)
            return -1;
    return 0;
}

/* The right-hand constants: one value, a (list), or a list's name. */
static int collect_values(struct compiler *C, const struct ast *right, bool listy, struct values *vals)
{
    if (!right)
        return 0;
    if (right->kind == AST_LIST) {
        for (uint32_t i = 0; i < right->n; i++)
            if (add_list_item(C, vals, right->kids[i]) != 0)
                return -1;
        return 0;
    }
    if (!listy)
        return add_value(C->env->arena, vals, right->text, right->len, right->pos);
    const struct filter_list *l = C->env->list(C->env->ctx, right->text, right->len);
    if (!l) {
        cerr(C, right->pos, "undefined list '%.*s'", (int)right->len, right->text);
        return -1;
    }
    for (size_t k = 0; k < l->n; k++)
        if (add_value(C->env->arena, vals, l->items[k], l->lens[k], right->pos) != 0)
            return -1;
    return 0;
}

/* evt.type with any operator: the set of type names it accepts. */
static struct cnode *compile_types(struct compiler *C, struct check *c, const struct values *vals)
{
    struct evtype_set *set = arena_alloc(C->env->arena, sizeof(*set));
    struct cnode *n = leaf(C->env->arena, CN_TYPES);
    if (!set || !n)
        return NULL;
    memset(set, 0, sizeof(*set));
    bool by_name = c->op == OP_EQ || c->op == OP_NE || c->op == OP_IN || c->op == OP_INTERSECTS;
    if (by_name) {
        for (uint32_t i = 0; i < c->nvals; i++) {
            int t = evtype_lookup(c->vals[i].s, c->vals[i].len);
            if (t < 0) {
                cerr(C, vals->pos[i], "unknown event type '%.*s%s' (a syscall name, or procexit, container, "
                     "exit_notify_parent, sentry_mmap)", CLIPPED(c->vals[i].s, c->vals[i].len));
                return NULL;
            }
            evtype_set_add(set, (unsigned)t);
        }
    }
    if (by_name && c->mod == MOD_NONE) {
        if (c->op == OP_NE)
            evtype_set_invert(set);
    } else {
        memset(set, 0, sizeof(*set));
        for (unsigned t = 0; t < EVTYPE_COUNT; t++) {
            const char *name = evtype_name(t);
            if (name && (c->op == OP_EXISTS || filter_compare_str(c, name, strlen(name))))
                evtype_set_add(set, t);
        }
    }
    n->types = set;
    return n;
}

/* libsinsp's event-code invariant for evt.num (filter/ppm_codes.cpp): it
 * starts at 1, so some tests decide themselves. */
static int8_t evt_num_known(const struct check *c)
{
    uint64_t n;
    if (c->op == OP_IN) {
        for (uint32_t i = 0; i < c->nvals; i++)
            if (!filter_tryparse_u64(c->vals[i].s, c->vals[i].len, &n) || n != 0)
                return 0;
        return -1;
    }
    if (c->mod != MOD_NONE || c->nvals != 1 || !filter_tryparse_u64(c->vals[0].s, c->vals[0].len, &n))
        return 0;
    switch (c->op) {
    case OP_EQ: return n == 0 ? -1 : 0;
    case OP_NE: return n == 0 ? 1 : 0;
    case OP_LT: return n <= 1 ? -1 : 0;
    case OP_LE: return n == 0 ? -1 : 0;
    case OP_GT: return n == 0 ? 1 : 0;
    case OP_GE: return n <= 1 ? 1 : 0;
    default: return 0;
    }
}

/* libsinsp's compiler warnings on constant values (sinsp_filter_compiler::
 * check_value_and_add_warnings). */
static void value_warnings(struct compiler *C, enum filter_op op, const char *v, size_t len, size_t pos)
{
    if (!C->env->warn)
        return;
    if (op == OP_REGEX) {
        static const char special[] = ".+*?^$()[]{}|\\";
        bool needs_regex = false;
        for (size_t i = 0; i < len && !needs_regex; i++) {
            if ((i == 0 && v[i] == '^') || (i == len - 1 && v[i] == '$'))
                continue;
            if (((i == 0 && len > 1) || i + 2 == len) && v[i] == '.' && i + 1 < len && strchr("+*?", v[i + 1])) {
                i++;
                continue;
            }
            needs_regex = memchr(special, v[i], sizeof(special) - 1) != NULL;
        }
        if (!needs_regex)
            cwarn(C, pos, "regex check with '%.*s%s' may be optimized with simpler operators such as '=', 'contains', "
                  "'startswith', 'endswith'", CLIPPED(v, len));
    }
    char nospace[128];
    size_t k = 0;
    for (size_t i = 0; i < len && k + 1 < sizeof(nospace); i++)
        if (!(v[i] == ' ' || (v[i] >= '\t' && v[i] <= '\r')))
            nospace[k++] = v[i];
    nospace[k] = '\0';
    struct fieldref f;
    char err[8];
    struct arena scratch;
    arena_init(&scratch, 1024, 1 << 16);
    const char *br = memchr(nospace, '[', k);
    size_t base = br && nospace[k - 1] == ']' ? (size_t)(br - nospace) : k;
    if (k && k < sizeof(nospace) - 1 &&
        fields_resolve(nospace, base, base < k ? nospace + base + 1 : NULL, base < k ? k - base - 2 : 0, base < k,
                       &scratch, &f, err, sizeof(err)) == 0)
        cwarn(C, pos, "'%.*s%s' may be a valid field misused as a const string value", CLIPPED(v, len));
    arena_free(&scratch);
    static const char *const tr[] = {"val", "tolower", "toupper", "b64", "basename", "len", "join", "concat", "getopt"};
    for (size_t i = 0; i < sizeof(tr) / sizeof(tr[0]); i++) {
        size_t n = strlen(tr[i]);
        if (k >= n + 2 && memcmp(nospace, tr[i], n) == 0 && nospace[n] == '(' && nospace[k - 1] == ')')
            cwarn(C, pos, "'%.*s%s' may be a valid field transformer misused as a const string value", CLIPPED(v, len));
    }
}

/* Each constant compiled for the left side's type. */
static int compile_values(struct compiler *C, struct check *c, const struct values *vals, const char *lname)
{
    enum ftype t = (enum ftype)c->type;
    c->nvals = (uint32_t)vals->n;
    c->vals = arena_alloc(C->env->arena, (vals->n ? vals->n : 1) * sizeof(*c->vals));
    if (!c->vals)
        return -1;
    memset(c->vals, 0, sizeof(*c->vals));
    char err[300];
    for (size_t i = 0; i < vals->n; i++) {
        struct operand *o = &c->vals[i];
        const char *s = vals->text[i];
        size_t len = vals->lens[i];
        if (t != FT_BYTES_ && memchr(s, '\0', len)) {
            cerr(C, vals->pos[i], "a value cannot contain a NUL byte (\\x00) for '%s'", lname);
            return -1;
        }
        value_warnings(C, c->op, s, len, vals->pos[i]);
        if (compile_operand(C->env, c->op, o, s, len, err, sizeof(err)) != 0) {
            cerr(C, vals->pos[i], "%s", err);
            return -1;
        }
        bool ok = stringy(t) || t == FT_BYTES_ || ((t == FT_INT || t == FT_UINT) && o->has_num) ||
                  (t == FT_BOOL && (o->has_bool || (o->has_num && !o->num.neg && o->num.mag <= 1))) ||
                  (t == FT_IP && o->has_ip);
        if (!ok) {
            cerr(C, vals->pos[i], "'%.*s%s' is not %s for '%s'", CLIPPED(o->s, o->len),
                 t == FT_IP ? "an IP address or network" : t == FT_BOOL ? "true or false" : "a number", lname);
            return -1;
        }
        if (t == FT_BOOL && !o->has_bool) {
            o->has_bool = true;
            o->b = o->num.mag == 1;
        }
    }
    bool sets = c->op == OP_IN || c->op == OP_INTERSECTS || (c->op == OP_EQ && c->mod == MOD_ANYOF) ||
                (c->op == OP_NE && c->mod == MOD_ALLOF);
    if (sets) {
        c->by_str = arena_alloc(C->env->arena, (vals->n ? vals->n : 1) * sizeof(*c->by_str));
        c->by_num = arena_alloc(C->env->arena, (vals->n ? vals->n : 1) * sizeof(*c->by_num));
        if (!c->by_str || !c->by_num)
            return -1;
        for (uint32_t i = 0; i < c->nvals; i++) {
            c->by_str[i] = &c->vals[i];
            if (c->vals[i].has_num)
                c->by_num[c->nby_num++] = &c->vals[i];
        }
        qsort(c->by_str, c->nvals, sizeof(*c->by_str), set_str_cmp);
        qsort(c->by_num, c->nby_num, sizeof(*c->by_num), set_num_cmp);
    }
    return 0;
}

/* The right side is a field or a transformer (libsinsp's add_filter_value
 * of a filter check). */
static bool rhs_allowed(struct compiler *C, const struct check *c, const struct ast *left, const struct ast *right,
                        const char *lname)
{
    if (c->op == OP_PMATCH || c->op == OP_REGEX) {
        cerr(C, right->pos, "operator '%s' does not take a field on its right side", op_names[c->op]);
        return false;
    }
    if (left->kind == AST_FIELD && field_is_fixed(left->text, left->len)) {
        cerr(C, right->pos, "field '%s' does not support right-hand side fields", lname);
        return false;
    }
    const struct ast *r = right;
    while (r->kind == AST_TRANSFORM && r->n == 1)
        r = r->kids[0];
    if (r->kind == AST_FIELD && field_is_fixed(r->text, r->len)) {
        cerr(C, r->pos, "field '%.*s' cannot be used as a right-hand side field", (int)r->len, r->text);
        return false;
    }
    enum ftype lt = stringy((enum ftype)c->type) ? FT_STR : (enum ftype)c->type;
    enum ftype rt = stringy((enum ftype)c->rhs->type) ? FT_STR : (enum ftype)c->rhs->type;
    if (lt != rt || c->lhs_list != c->rhs->is_list) {
        char rname[100];
        node_name(right->kind == AST_TRANSFORM && name_is(right, "val") ? right->kids[0] : right, rname, sizeof(rname));
        cerr(C, right->pos, "'%s' is a %s%s while the right-hand side '%s' is a %s%s: they cannot be compared", lname,
             type_word(lt), c->lhs_list ? " list" : "", rname, type_word(rt), c->rhs->is_list ? " list" : "");
        return false;
    }
    return true;
}

static bool expr_reads(const struct fexpr *e, uint16_t id)
{
    if (!e)
        return false;
    if (e->kind == FX_FIELD && e->field.id == id)
        return true;
    for (uint32_t i = 0; i < e->nargs; i++)
        if (expr_reads(e->args[i], id))
            return true;
    return false;
}

static uint64_t expr_nodes(const struct fexpr *e)
{
    uint64_t n = e ? 1 : 0;
    for (uint32_t i = 0; e && i < e->nargs; i++)
        n = sat_add(n, expr_nodes(e->args[i]));
    return n;
}

static bool check_reads(const struct check *c, uint16_t id)
{
    return (!c->lhs && c->field.id == id) || expr_reads(c->lhs, id) || expr_reads(c->rhs, id);
}

static struct cnode *check_node(struct compiler *C, struct check *c)
{
    struct cnode *n = leaf(C->env->arena, CN_CHECK);
    if (!n)
        return NULL;
    n->chk = c;
    /* What one evaluation costs, for FILTER_MAX_EXPANDED: the expressions'
     * nodes, and each constant an operator walks one by one. */
    bool walks = c->op == OP_PMATCH || (c->mod != MOD_NONE && !c->by_str);
    n->size = sat_add(1, sat_add(expr_nodes(c->lhs), sat_add(expr_nodes(c->rhs), walks ? c->nvals : 0)));
    /* Reading evt.dir brings syscall enter points; gvisor.point, an exec's
     * syscall exit after its sentry/execve (rules/README.md). */
    n->uses_dir = check_reads(c, F_EVT_DIR);
    n->uses_point = check_reads(c, F_GVISOR_POINT);
    if (plain(c)) {
        if (c->field.id == F_EVT_DIR)
            c->dirs = (uint8_t)dir_check(c);
        if (c->field.id == F_EVT_NUM)
            c->known = evt_num_known(c);
    }
    if (c->op == OP_REGEX)
        c->utf8_slot = scratch_slot(C->env, FILTER_SCRATCH_UTF8);
    return n;
}

/* left op right (right NULL for exists): a check node. */
static struct cnode *compile_check(struct compiler *C, const struct ast *left, enum filter_op op, enum filter_mod mod,
                                   const struct ast *right, size_t op_pos)
{
    struct check *c = arena_alloc(C->env->arena, sizeof(*c));
    if (!c)
        return NULL;
    memset(c, 0, sizeof(*c));
    c->op = op;
    c->mod = mod;
    char lname[100];
    node_name(left, lname, sizeof(lname));
    bool evt_type = false;
    if (left->kind == AST_FIELD) {
        if (resolve_field(C, left, &c->field) != 0)
            return NULL;
        c->type = (uint8_t)field_type(&c->field, left->text, left->len);
        evt_type = c->field.id == F_EVT_TYPE;
    } else {
        c->lhs = compile_expr(C, left, 0, 0);
        if (!c->lhs)
            return NULL;
        c->type = c->lhs->type;
        c->lhs_list = c->lhs->is_list;
        bool types_op = op == OP_EQ || op == OP_NE || op == OP_IN || op == OP_EXISTS;
        if (types_op && mod == MOD_NONE && has_evt_type(c->lhs)) {
            cerr(C, left->pos, "evt.type cannot be transformed in a %s check: its values are event types, known at load",
                 op_names[op]);
            return NULL;
        }
    }
    if (!op_allowed((enum ftype)c->type, c->lhs_list, op, mod)) {
        if (mod != MOD_NONE)
            cerr(C, op_pos, "operator '%s %s' does not apply to %s field '%s'", op_names[op], filter_mod_name(mod),
                 type_word((enum ftype)c->type), lname);
        else
            cerr(C, op_pos, "operator '%s' does not apply to %s%s '%s'", op_names[op],
                 type_word((enum ftype)c->type), c->lhs_list ? " list" : left->kind == AST_FIELD ? " field" : " value",
                 lname);
        return NULL;
    }
    bool dyn_right = right && right->kind == AST_TRANSFORM;
    if (dyn_right) {
        if (evt_type && (op == OP_EQ || op == OP_NE || op == OP_IN)) {
            cerr(C, right->pos, "evt.type cannot be compared with a field or a transformer: its values are event "
                 "types, known at load");
            return NULL;
        }
        c->rhs = compile_expr(C, right, 1, 0);
        if (!c->rhs || !rhs_allowed(C, c, left, right, lname))
            return NULL;
        if (c->field.any_ancestor) {
            cerr(C, right->pos, "field '%s' does not support right-hand side fields", lname);
            return NULL;
        }
        if (!c->lhs)
            c->field.slot = C->env->slot(C->env->ctx, &c->field);
        return check_node(C, c);
    }
    struct values vals = {0};
    bool listy = op == OP_IN || op == OP_INTERSECTS || op == OP_PMATCH || mod != MOD_NONE;
    if (collect_values(C, right, listy, &vals) != 0 || compile_values(C, c, &vals, lname) != 0)
        return NULL;
    if (evt_type && !c->lhs)
        return compile_types(C, c, &vals);
    /* An empty list matches nothing: a constant, except for evt.num, whose
     * test says so to the event-type search (libsinsp's invariant). */
    if ((op == OP_IN || op == OP_INTERSECTS || op == OP_PMATCH) && c->nvals == 0 &&
        !(c->field.id == F_EVT_NUM && !c->lhs))
        return leaf(C->env->arena, CN_CONST);
    c->field.slot = c->lhs ? 0 : C->env->slot(C->env->ctx, &c->field);
    return check_node(C, c);
}

static struct cnode *compile_node(struct compiler *C, const struct ast *a);

static struct cnode *compile_macro(struct compiler *C, const struct ast *a)
{
    bool failed = false;
    const struct cnode *body = C->env->macro(C->env->ctx, a->text, a->len, a->pos, &failed);
    if (!body) {
        C->failed = true;
        return NULL;
    }
    if (body->macro_depth + 1 > FILTER_MAX_MACRO_NESTING) {
        cerr(C, a->pos, "macros nested deeper than %d", FILTER_MAX_MACRO_NESTING);
        return NULL;
    }
    struct cnode *m = leaf(C->env->arena, CN_MACRO);
    if (!m)
        return NULL;
    m->body = body;
    m->size = sat_add(body->size, 1);
    m->macro_depth = body->macro_depth + 1;
    m->uses_dir = body->uses_dir;
    m->uses_point = body->uses_point;
    return m;
}

static struct cnode *compile_node(struct compiler *C, const struct ast *a)
{
    switch (a->kind) {
    case AST_AND:
    case AST_OR:
    case AST_NOT: {
        struct cnode *stack[16];
        struct cnode **kids = a->n <= 16 ? stack : arena_alloc(C->env->arena, a->n * sizeof(*kids));
        if (!kids)
            return NULL;
        bool ok = true;   /* every child compiled, so every error is reported */
        for (uint32_t i = 0; i < a->n; i++)
            ok &= (kids[i] = compile_node(C, a->kids[i])) != NULL;
        if (!ok)
            return NULL;
        enum cnode_kind k = a->kind == AST_AND ? CN_AND : a->kind == AST_OR ? CN_OR : CN_NOT;
        return filter_make_node(C->env->arena, k, kids, a->n);
    }
    case AST_IDENT: return compile_macro(C, a);
    case AST_UNARY: return compile_check(C, a->kids[0], OP_EXISTS, MOD_NONE, NULL, a->op_pos);
    case AST_BINARY:
        return compile_check(C, a->kids[0], (enum filter_op)a->op, (enum filter_mod)a->mod, a->kids[1], a->op_pos);
    default:
        cerr(C, a->pos, "expected a check");
        return NULL;
    }
}

/* The tree's own arena: a condition of len bytes makes at most a few
 * nodes per byte. */
static void tree_arena(struct arena *t, size_t len)
{
    size_t limit = len < ((size_t)64 << 20) / 96 ? len * 96 + 65536 : (size_t)64 << 20;
    arena_init(t, 16384, limit);
}

struct cnode *filter_parse(const struct filter_env *env, const char *text, size_t len)
{
    struct arena tree;
    tree_arena(&tree, len);
    struct ast_error err;
    struct ast *root = ast_parse(&tree, text, len, &err);
    struct cnode *n = NULL;
    if (!root) {
        env->error(env->ctx, err.pos, err.msg);
    } else {
        struct compiler C = {.env = env};
        n = compile_node(&C, root);
        if (C.failed)
            n = NULL;
    }
    arena_free(&tree);
    return n;
}

int filter_syntax_check(const char *text, size_t len, char *err, size_t errlen, size_t *err_pos)
{
    struct arena tree;
    tree_arena(&tree, len);
    struct ast_error e;
    struct ast *root = ast_parse(&tree, text, len, &e);
    arena_free(&tree);
    if (root)
        return 0;
    snprintf(err, errlen, "%s", e.msg);
    *err_pos = e.pos;
    return -1;
}

struct cnode *filter_make_check_mod(const struct filter_env *env, const char *field, size_t flen, enum filter_op op,
                                    enum filter_mod mod, const char *const *values, const uint32_t *lens,
                                    size_t nvalues, size_t pos)
{
    struct arena tree;
    size_t room = flen + 64;
    for (size_t i = 0; i < nvalues; i++)
        room += 2 + lens[i] / 64;   /* a node per value, whatever its length */
    tree_arena(&tree, room);
    struct ast_error err;
    struct ast *left = ast_parse_operand(&tree, field, flen, &err);
    struct cnode *n = NULL;
    struct compiler C = {.env = env};
    if (!left) {
        char msg[sizeof(err.msg) + 80];
        snprintf(msg, sizeof(msg), "'%.*s%s' is not a field: %s", CLIPPED(field, flen), err.msg);
        env->error(env->ctx, pos, msg);
        goto out;
    }
    /* Positions are the caller's: every node is at pos. */
    left->pos = (uint32_t)pos;
    struct ast *right = NULL;
    bool listy = op == OP_IN || op == OP_INTERSECTS || op == OP_PMATCH || mod != MOD_NONE;
    if (op != OP_EXISTS) {
        right = arena_alloc(&tree, sizeof(*right));
        struct ast **items = arena_alloc(&tree, (nvalues ? nvalues : 1) * sizeof(*items));
        if (!right || !items) {
            cerr(&C, pos, "out of memory");
            goto out;
        }
        memset(right, 0, sizeof(*right));
        right->kind = listy ? AST_LIST : AST_VALUE;
        right->pos = (uint32_t)pos;
        for (size_t i = 0; i < nvalues; i++) {
            struct ast *v = arena_alloc(&tree, sizeof(*v));
            if (!v) {
                cerr(&C, pos, "out of memory");
                goto out;
            }
            memset(v, 0, sizeof(*v));
            v->kind = AST_VALUE;
            v->pos = (uint32_t)pos;
            v->text = values[i];
            v->len = lens[i];
            items[i] = v;
        }
        if (listy) {
            right->kids = items;
            right->n = (uint32_t)nvalues;
        } else if (nvalues == 1) {
            *right = *items[0];
        } else {
            cerr(&C, pos, "operator '%s' takes one value, not %zu", op_names[op], nvalues);
            goto out;
        }
    }
    n = compile_check(&C, left, op, mod, right, pos);
    if (C.failed)
        n = NULL;
out:
    arena_free(&tree);
    return n;
}

struct cnode *filter_make_check(const struct filter_env *env, const char *field, size_t flen, enum filter_op op,
                                const char *const *values, const uint32_t *lens, size_t nvalues, size_t pos)
{
    return filter_make_check_mod(env, field, flen, op, MOD_NONE, values, lens, nvalues, pos);
}
