#include "filter.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules.h"

static const char *const op_names[OP_COUNT] = {
    [OP_EQ] = "=", [OP_NE] = "!=", [OP_LT] = "<", [OP_LE] = "<=", [OP_GT] = ">", [OP_GE] = ">=",
    [OP_CONTAINS] = "contains", [OP_ICONTAINS] = "icontains", [OP_BCONTAINS] = "bcontains",
    [OP_STARTSWITH] = "startswith", [OP_BSTARTSWITH] = "bstartswith", [OP_ENDSWITH] = "endswith",
    [OP_GLOB] = "glob", [OP_IGLOB] = "iglob", [OP_IN] = "in", [OP_INTERSECTS] = "intersects",
    [OP_PMATCH] = "pmatch", [OP_EXISTS] = "exists",
};

const char *filter_op_name(enum filter_op op) { return op < OP_COUNT ? op_names[op] : "?"; }

int filter_op_parse(const char *s)
{
    if (strcmp(s, "==") == 0)
        return OP_EQ;
    for (int i = 0; i < OP_COUNT; i++)
        if (strcmp(op_names[i], s) == 0)
            return i;
    return -1;
}

/* ---- glob: fnmatch(3) without flags (or with FNM_CASEFOLD), on counted
 * strings, without backtracking blow-up (one star remembered) ---- */

static unsigned char fold(unsigned char c, bool icase) { return icase && c >= 'A' && c <= 'Z' ? c + 32 : c; }

static bool class_match(const char *name, size_t n, unsigned char c)
{
#define CLASS(str, expr) if (n == sizeof(str) - 1 && memcmp(name, str, n) == 0) return (expr)
    CLASS("alpha", (c | 32) >= 'a' && (c | 32) <= 'z');
    CLASS("digit", c >= '0' && c <= '9');
    CLASS("alnum", ((c | 32) >= 'a' && (c | 32) <= 'z') || (c >= '0' && c <= '9'));
    CLASS("upper", c >= 'A' && c <= 'Z');
    CLASS("lower", c >= 'a' && c <= 'z');
    CLASS("space", c == ' ' || (c >= '\t' && c <= '\r'));
    CLASS("xdigit", (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'f'));
    CLASS("punct", c > 32 && c < 127 && !(((c | 32) >= 'a' && (c | 32) <= 'z') || (c >= '0' && c <= '9')));
#undef CLASS
    return false;
}

/* Matches the bracket expression at p[*i] (just past '[') against c; sets
 * *i past its ']'. Returns -1 when the bracket is not closed (then '[' is
 * an ordinary character, as fnmatch treats it). */
static int bracket(const char *p, size_t plen, size_t *i, unsigned char c, bool icase)
{
    size_t k = *i;
    bool negate = false, matched = false;
    if (k < plen && (p[k] == '!' || p[k] == '^')) {
        negate = true;
        k++;
    }
    bool first = true;
    while (k < plen && (first || p[k] != ']')) {
        first = false;
        if (p[k] == '[' && k + 1 < plen && p[k + 1] == ':') {
            const char *end = memmem(p + k + 2, plen - k - 2, ":]", 2);
            if (end) {
                matched |= class_match(p + k + 2, (size_t)(end - (p + k + 2)), c);
                k = (size_t)(end - p) + 2;
                continue;
            }
        }
        unsigned char lo = (unsigned char)p[k];
        if (lo == '\\' && k + 1 < plen)
            lo = (unsigned char)p[++k];
        k++;
        unsigned char hi = lo;
        if (k + 1 < plen && p[k] == '-' && p[k + 1] != ']') {
            hi = (unsigned char)p[k + 1];
            if (hi == '\\' && k + 2 < plen)
                hi = (unsigned char)p[++k + 1];
            k += 2;
        }
        unsigned char fc = fold(c, icase);
        if ((c >= lo && c <= hi) || (fc >= fold(lo, icase) && fc <= fold(hi, icase)))
            matched = true;
    }
    if (k >= plen)
        return -1;
    *i = k + 1;
    return matched != negate;
}

static bool glob_match(const char *p, size_t plen, const char *s, size_t slen, bool icase)
{
    size_t pi = 0, si = 0, star_p = (size_t)-1, star_s = 0;
    while (si < slen) {
        if (pi < plen) {
            char pc = p[pi];
            if (pc == '*') {
                star_p = ++pi;
                star_s = si;
                continue;
            }
            if (pc == '?') {
                pi++;
                si++;
                continue;
            }
            if (pc == '[') {
                size_t k = pi + 1;
                int r = bracket(p, plen, &k, (unsigned char)s[si], icase);
                if (r == 1) {
                    pi = k;
                    si++;
                    continue;
                }
                if (r == 0)
                    goto backtrack;
                /* unclosed: a literal '[' */
            }
            if (pc == '\\' && pi + 1 < plen)
                pc = p[++pi];
            if (fold((unsigned char)pc, icase) == fold((unsigned char)s[si], icase)) {
                pi++;
                si++;
                continue;
            }
        }
    backtrack:
        if (star_p == (size_t)-1)
            return false;
        pi = star_p;
        si = ++star_s;
    }
    while (pi < plen && p[pi] == '*')
        pi++;
    return pi == plen;
}

/* ---- values ---- */

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
            int d = s[i] >= '0' && s[i] <= '9' ? s[i] - '0' : (s[i] | 32) >= 'a' && (s[i] | 32) <= 'f' ? (s[i] | 32) - 'a' + 10 : -1;
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

static int fnum_cmp(struct fnum a, struct fnum b)
{
    if (a.neg != b.neg)
        return a.neg ? -1 : 1;
    int r = a.mag < b.mag ? -1 : a.mag > b.mag;
    return a.neg ? -r : r;
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

static bool ip_in(const struct operand *o, const struct fval *v)
{
    if (!o->has_ip || (o->ipfam == 4) != (v->len == 4))
        return false;
    unsigned bits = o->prefix;
    size_t full = bits / 8;
    if (memcmp(o->ip, v->ip, full) != 0)
        return false;
    if (bits % 8) {
        uint8_t mask = (uint8_t)(0xff << (8 - bits % 8));
        if ((o->ip[full] & mask) != (v->ip[full] & mask))
            return false;
    }
    return true;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 32;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Precompiles what the operator will need of one value. */
static int compile_operand(struct arena *a, enum filter_op op, struct operand *o, const char *s, size_t len,
                           char *err, size_t errlen)
{
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
            l[i] = (char)fold((unsigned char)l[i], true);
        o->lower = l;
    }
    if (op == OP_BCONTAINS || op == OP_BSTARTSWITH) {
        if (len % 2) {
            snprintf(err, errlen, "'%s' needs hex bytes (an even number of hex digits), got '%.*s'", op_names[op],
                     (int)(len > 40 ? 40 : len), s);
            return -1;
        }
        uint8_t *b = arena_alloc(a, len / 2 + 1);
        if (!b)
            goto oom;
        for (size_t i = 0; i < len; i += 2) {
            int hi = hexval(s[i]), lo = hexval(s[i + 1]);
            if (hi < 0 || lo < 0) {
                snprintf(err, errlen, "'%s' needs hex bytes, got '%.*s'", op_names[op], (int)(len > 40 ? 40 : len), s);
                return -1;
            }
            b[i / 2] = (uint8_t)(hi << 4 | lo);
        }
        o->bytes = b;
        o->nbytes = (uint32_t)(len / 2);
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

static int cmp_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
    int r = memcmp(a, b, alen < blen ? alen : blen);
    return r ? r : (alen < blen ? -1 : alen > blen);
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
    return fnum_cmp(a->num, b->num);
}

/* ---- evaluation ---- */

static bool icontains(const char *h, size_t hlen, const char *lower, size_t nlen)
{
    if (nlen == 0)
        return true;
    for (size_t i = 0; i + nlen <= hlen; i++) {
        size_t k = 0;
        while (k < nlen && fold((unsigned char)h[i + k], true) == (unsigned char)lower[k])
            k++;
        if (k == nlen)
            return true;
    }
    return false;
}

static bool pmatch_one(const struct operand *o, const char *s, size_t len)
{
    size_t i = 0;
    for (uint32_t k = 0; k < o->nparts; k++) {
        while (i < len && s[i] == '/')
            i++;
        if (i >= len)
            return false;
        size_t st = i;
        while (i < len && s[i] != '/')
            i++;
        bool eq = o->part_glob[k] ? glob_match(o->parts[k], o->part_lens[k], s + st, i - st, false)
                                  : o->part_lens[k] == i - st && memcmp(o->parts[k], s + st, i - st) == 0;
        if (!eq)
            return false;
    }
    return o->nparts > 0;
}

static bool in_str(const struct check *c, const char *s, size_t len)
{
    size_t lo = 0, hi = c->nvals;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const struct operand *o = c->by_str[mid];
        int r = o->len != len ? (o->len < len ? -1 : 1) : memcmp(o->s, s, len);
        if (r == 0)
            return true;
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

static bool cmp_str(const struct check *c, const char *s, size_t len)
{
    const struct operand *o = c->vals;
    switch (c->op) {
    case OP_EQ: return o->len == len && memcmp(o->s, s, len) == 0;
    case OP_NE: return !(o->len == len && memcmp(o->s, s, len) == 0);
    case OP_LT: return cmp_bytes(s, len, o->s, o->len) < 0;
    case OP_LE: return cmp_bytes(s, len, o->s, o->len) <= 0;
    case OP_GT: return cmp_bytes(s, len, o->s, o->len) > 0;
    case OP_GE: return cmp_bytes(s, len, o->s, o->len) >= 0;
    case OP_CONTAINS: return memmem(s, len, o->s, o->len) != NULL;
    case OP_ICONTAINS: return icontains(s, len, o->lower, o->len);
    case OP_BCONTAINS: return memmem(s, len, o->bytes, o->nbytes) != NULL;
    case OP_STARTSWITH: return len >= o->len && memcmp(s, o->s, o->len) == 0;
    case OP_BSTARTSWITH: return len >= o->nbytes && memcmp(s, o->bytes, o->nbytes) == 0;
    case OP_ENDSWITH: return len >= o->len && memcmp(s + len - o->len, o->s, o->len) == 0;
    case OP_GLOB: return glob_match(o->s, o->len, s, len, false);
    case OP_IGLOB: return glob_match(o->lower, o->len, s, len, true);
    case OP_IN:
    case OP_INTERSECTS: return in_str(c, s, len);
    case OP_PMATCH:
        for (uint32_t i = 0; i < c->nvals; i++)
            if (pmatch_one(&c->vals[i], s, len))
                return true;
        return false;
    default: return false;
    }
}

static bool cmp_num(const struct check *c, struct fnum v, bool is_bool)
{
    const struct operand *o = c->vals;
    switch (c->op) {
    case OP_EQ:
    case OP_NE: {
        bool eq = is_bool && o->has_bool ? (v.mag != 0) == o->b : o->has_num && fnum_cmp(v, o->num) == 0;
        return c->op == OP_EQ ? eq : !eq;
    }
    case OP_LT: return o->has_num && fnum_cmp(v, o->num) < 0;
    case OP_LE: return o->has_num && fnum_cmp(v, o->num) <= 0;
    case OP_GT: return o->has_num && fnum_cmp(v, o->num) > 0;
    case OP_GE: return o->has_num && fnum_cmp(v, o->num) >= 0;
    case OP_IN:
    case OP_INTERSECTS: {
        if (is_bool)
            for (uint32_t i = 0; i < c->nvals; i++)
                if (c->vals[i].has_bool && c->vals[i].b == (v.mag != 0))
                    return true;
        size_t lo = 0, hi = c->nby_num;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            int r = fnum_cmp(c->by_num[mid]->num, v);
            if (r == 0)
                return true;
            if (r < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        return false;
    }
    default: {
        /* a string operator on a number (evt.arg of an integer field) */
        char buf[24];
        int n = snprintf(buf, sizeof(buf), "%s%llu", v.neg ? "-" : "", (unsigned long long)v.mag);
        return cmp_str(c, buf, (size_t)n);
    }
    }
}

static bool cmp_ip(const struct check *c, const struct fval *v)
{
    switch (c->op) {
    case OP_EQ: return ip_in(c->vals, v);
    case OP_NE: return !ip_in(c->vals, v);
    case OP_IN:
    case OP_INTERSECTS:
        for (uint32_t i = 0; i < c->nvals; i++)
            if (ip_in(&c->vals[i], v))
                return true;
        return false;
    default: {
        char buf[INET6_ADDRSTRLEN];
        if (!inet_ntop(v->len == 4 ? AF_INET : AF_INET6, v->ip, buf, sizeof(buf)))
            return false;
        return cmp_str(c, buf, strlen(buf));
    }
    }
}

static bool compare(const struct check *c, const struct fval *v)
{
    switch (v->kind) {
    case FV_STR: return cmp_str(c, v->s, v->len);
    case FV_INT: return cmp_num(c, (struct fnum){v->i < 0, v->i < 0 ? 0 - (uint64_t)v->i : (uint64_t)v->i}, false);
    case FV_UINT: return cmp_num(c, (struct fnum){false, v->u}, false);
    case FV_BOOL: return cmp_num(c, (struct fnum){false, v->b}, true);
    case FV_IP: return cmp_ip(c, v);
    default: return false;
    }
}

static unsigned dir_check(const struct check *c);

static bool eval_check(struct evctx *x, const struct check *c)
{
    if (c->field.id == F_EVT_DIR)   /* nearly every rule has one: a bit test */
        return c->dirs & (x->cls.dir == '>' ? FILTER_DIR_ENTER : FILTER_DIR_EXIT);
    if (c->field.any_ancestor) {
        /* proc.aname / proc.apid: some ancestor, parent upward, matches */
        for (unsigned level = 1; level <= PROC_ANCESTORS_MAX; level++) {
            struct fval v;
            fields_ancestor(x, &c->field, level, &v);
            if (v.kind == FV_ABSENT)
                return false;
            if (c->op == OP_EXISTS || compare(c, &v))
                return true;
        }
        return false;
    }
    const struct fval *v = fields_get(x, &c->field);
    if (c->op == OP_EXISTS)
        return v->kind != FV_ABSENT;
    return v->kind != FV_ABSENT && compare(c, v);
}

bool filter_eval(struct evctx *x, const struct cnode *n)
{
    switch (n->kind) {
    case CN_AND:
        for (uint32_t i = 0; i < n->n; i++)
            if (!filter_eval(x, n->kids[i]))
                return false;
        return true;
    case CN_OR:
        for (uint32_t i = 0; i < n->n; i++)
            if (filter_eval(x, n->kids[i]))
                return true;
        return false;
    case CN_NOT: return !filter_eval(x, n->kids[0]);
    case CN_CHECK: return eval_check(x, n->chk);
    case CN_TYPES: return evtype_set_has(n->types, x->cls.type);
    case CN_MACRO: return filter_eval(x, n->body);
    case CN_CONST: return n->const_val;
    }
    return false;
}

/* ---- what a condition can match, what it reads ---- */

struct probe {
    unsigned type;
    char dir;
    const char *point;
};

/* Three-valued: *t when n may be true, *f when it may be false. */
static void may(const struct cnode *n, const struct probe *p, bool *t, bool *f)
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
        *t = c->op == OP_EXISTS || cmp_str(c, known, strlen(known));
        *f = !*t;
        return;
    }
    case CN_NOT:
        may(n->kids[0], p, f, t);
        return;
    case CN_MACRO:
        may(n->body, p, t, f);
        return;
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
    struct probe p = {.type = t, .dir = dir, .point = point};
    bool yes, no;
    may(n, &p, &yes, &no);
    return yes;
}

void filter_fields(const struct cnode *n, void (*fn)(void *ctx, const struct fieldref *f), void *ctx)
{
    switch (n->kind) {
    case CN_CHECK: fn(ctx, &n->chk->field); return;
    case CN_MACRO: filter_fields(n->body, fn, ctx); return;
    case CN_AND:
    case CN_OR:
    case CN_NOT:
        for (uint32_t i = 0; i < n->n; i++)
            filter_fields(n->kids[i], fn, ctx);
        return;
    case CN_TYPES:
    case CN_CONST: return;
    }
}

/* ---- where a condition may be true ---- */

/* Where an evt.dir check is true, asked of the very compare() the events
 * will meet (evt.dir is never absent). */
static unsigned dir_check(const struct check *c)
{
    if (c->op == OP_EXISTS)
        return FILTER_DIR_ALL;
    struct fval enter = {.kind = FV_STR, .len = 1, .s = ">"}, exit = {.kind = FV_STR, .len = 1, .s = "<"};
    return (compare(c, &enter) ? FILTER_DIR_ENTER : 0) | (compare(c, &exit) ? FILTER_DIR_EXIT : 0);
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

/* An evt.type test holds for its types, an evt.dir test for its directions;
 * anything else may be true or false for every one. */
static void reach_leaf(const struct cnode *n, struct filter_reach *t, struct filter_reach *f)
{
    reach_all(t);
    reach_all(f);
    if (n->kind == CN_TYPES) {
        t->types = *n->types;
        f->types = *n->types;
        evtype_set_invert(&f->types);
    } else if (n->kind == CN_CHECK && n->chk->field.id == F_EVT_DIR && !n->chk->field.any_ancestor) {
        t->dirs = dir_check(n->chk);
        f->dirs = FILTER_DIR_ALL & ~t->dirs;
    }   /* CN_CONST, `x in ()`: no restriction, as in Falco */
}

void filter_reach(const struct cnode *n, struct filter_reach *t, struct filter_reach *f)
{
    struct filter_reach kt, kf;
    switch (n->kind) {
    case CN_NOT:
        filter_reach(n->kids[0], f, t);
        return;
    case CN_MACRO:
        filter_reach(n->body, t, f);
        return;
    case CN_AND:
    case CN_OR: {
        bool and = n->kind == CN_AND;
        struct filter_reach *meet = and ? t : f, *join = and ? f : t;   /* all kids' / any kid's */
        reach_all(meet);
        reach_none(join);
        for (uint32_t i = 0; i < n->n; i++) {
            filter_reach(n->kids[i], &kt, &kf);
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

/* ---- the parser ---- */

struct parser {
    const struct filter_env *env;
    const char *s;
    size_t len, pos;
    int depth;
    bool syntax_error;      /* stop: the rest cannot be read */
    bool failed;            /* some error was reported */
};

static void perr(struct parser *p, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void perr(struct parser *p, size_t pos, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    p->env->error(p->env->ctx, pos, msg);
    p->failed = true;
}

static void syntax(struct parser *p, const char *what)
{
    if (p->syntax_error)
        return;
    perr(p, p->pos, "syntax error: %s", what);
    p->syntax_error = true;
}

static char cur(const struct parser *p) { return p->pos < p->len ? p->s[p->pos] : '\0'; }
static char at(const struct parser *p, size_t k) { return p->pos + k < p->len ? p->s[p->pos + k] : '\0'; }
static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\b' || c == '\r' || c == '\n'; }
static bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_word(char c) { return is_alpha(c) || (c >= '0' && c <= '9') || c == '_'; }

static bool blank(struct parser *p)
{
    size_t start = p->pos;
    while (is_blank(cur(p)))
        p->pos++;
    return p->pos > start;
}

static bool match(struct parser *p, const char *word)
{
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
        return false;
    p->pos += n;
    return true;
}

/* [a-zA-Z]+[a-zA-Z0-9_]* */
static size_t ident_len(const struct parser *p, size_t from)
{
    size_t i = from;
    if (i >= p->len || !is_alpha(p->s[i]))
        return 0;
    while (i < p->len && is_word(p->s[i]))
        i++;
    return i - from;
}

/* identifier ('.' identifier)+ */
static size_t field_name_len(const struct parser *p)
{
    size_t n = ident_len(p, p->pos);
    if (!n)
        return 0;
    size_t total = n, parts = 1;
    while (p->pos + total < p->len && p->s[p->pos + total] == '.') {
        size_t k = ident_len(p, p->pos + total + 1);
        if (!k)
            break;
        total += 1 + k;
        parts++;
    }
    return parts > 1 ? total : 0;
}

/* Falco's unescaping of a quoted token (quotes included). */
static int unescape(struct parser *p, size_t at_pos, const char *tok, size_t n, char *out, size_t *outlen)
{
    char quote = tok[0];
    size_t k = 0;
    bool esc = false;
    for (size_t i = 1; i + 1 < n; i++) {
        char c = tok[i];
        if (!esc) {
            if (c == '\\')
                esc = true;
            else
                out[k++] = c;
            continue;
        }
        esc = false;
        switch (c) {
        case 'b': out[k++] = '\b'; break;
        case 'f': out[k++] = '\f'; break;
        case 'n': out[k++] = '\n'; break;
        case 'r': out[k++] = '\r'; break;
        case 't': out[k++] = '\t'; break;
        case ' ':   /* legacy, as libsinsp: gives a backslash */
        case '\\': out[k++] = '\\'; break;
        case '/': out[k++] = '/'; break;
        case '"':
        case '\'':
            if (c != quote) {
                perr(p, at_pos + i - 1, "invalid \\%c escape in a %c-quoted string", c, quote);
                return -1;
            }
            out[k++] = c;
            break;
        default:
            perr(p, at_pos + i - 1, "unsupported escape sequence \\%c (use \\n \\t \\r \\b \\f \\\\ \\/ or the quote)",
                 c);
            return -1;
        }
    }
    *outlen = k;
    return 0;
}

/* A quoted string or a bare one; text into *out (arena). */
struct token {
    const char *text;
    size_t len;
    size_t pos;
    bool quoted;
};

static bool lex_quoted(struct parser *p, struct token *t)
{
    char q = cur(p);
    if (q != '"' && q != '\'')
        return false;
    size_t start = p->pos;
    char prev = '\\';
    for (size_t i = start; i < p->len; i++) {
        if (p->s[i] == q && prev != '\\' && i > start) {
            size_t n = i + 1 - start;
            char *buf = arena_alloc(p->env->arena, n + 1);
            if (!buf) {
                perr(p, start, "out of memory");
                return false;
            }
            size_t outlen;
            if (unescape(p, start, p->s + start, n, buf, &outlen) != 0) {
                p->pos = i + 1;
                t->text = "";
                t->len = 0;
                t->pos = start;
                t->quoted = true;
                return true;
            }
            buf[outlen] = '\0';
            t->text = buf;
            t->len = outlen;
            t->pos = start;
            t->quoted = true;
            p->pos = i + 1;
            return true;
        }
        prev = p->s[i];
    }
    return false;
}

/* [^()"'[:space:]=,]+ */
static bool lex_bare(struct parser *p, struct token *t)
{
    size_t i = p->pos;
    while (i < p->len) {
        char c = p->s[i];
        if (c == '(' || c == ')' || c == '"' || c == '\'' || is_space(c) || c == '=' || c == ',')
            break;
        i++;
    }
    if (i == p->pos)
        return false;
    t->text = p->s + p->pos;
    t->len = i - p->pos;
    t->pos = p->pos;
    t->quoted = false;
    p->pos = i;
    return true;
}

/* 0[xX][0-9a-fA-F]+ or [+-]?[0-9]+[.]?[0-9]*([eE][+-][0-9]+)? */
static bool lex_number(struct parser *p, struct token *t)
{
    size_t i = p->pos;
    if (at(p, 0) == '0' && (at(p, 1) == 'x' || at(p, 1) == 'X') && hexval(at(p, 2)) >= 0) {
        i += 2;
        while (i < p->len && hexval(p->s[i]) >= 0)
            i++;
    } else {
        if (i < p->len && (p->s[i] == '+' || p->s[i] == '-'))
            i++;
        size_t digits = i;
        while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9')
            i++;
        if (i == digits)
            return false;
        if (i < p->len && p->s[i] == '.') {
            i++;
            while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9')
                i++;
        }
        if (i + 2 < p->len && (p->s[i] == 'e' || p->s[i] == 'E') && (p->s[i + 1] == '+' || p->s[i + 1] == '-') &&
            p->s[i + 2] >= '0' && p->s[i + 2] <= '9') {
            i += 2;
            while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9')
                i++;
        }
    }
    t->text = p->s + p->pos;
    t->len = i - p->pos;
    t->pos = p->pos;
    t->quoted = false;
    p->pos = i;
    return true;
}

/* The values of a check, growing in the arena. */
struct values {
    const char **text;
    uint32_t *lens;
    size_t n, cap;
};

static int add_value(struct arena *a, struct values *v, const char *text, size_t len)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 8;
        const char **t = arena_alloc(a, cap * sizeof(*t));
        uint32_t *l = arena_alloc(a, cap * sizeof(*l));
        if (!t || !l)
            return -1;
        if (v->n) {
            memcpy(t, v->text, v->n * sizeof(*t));
            memcpy(l, v->lens, v->n * sizeof(*l));
        }
        v->text = t;
        v->lens = l;
        v->cap = cap;
    }
    v->text[v->n] = text;
    v->lens[v->n++] = (uint32_t)len;
    return 0;
}

/* A list value's item: a bare name of a list expands to its items. */
static int add_list_item(struct parser *p, struct values *v, const struct token *t)
{
    const struct filter_list *l = t->quoted ? NULL : p->env->list(p->env->ctx, t->text, t->len);
    if (!l)
        return add_value(p->env->arena, v, t->text, t->len);
    for (size_t i = 0; i < l->n; i++)
        if (add_value(p->env->arena, v, l->items[i], l->lens[i]) != 0)
            return -1;
    return 0;
}

static struct cnode *compile_check(const struct filter_env *env, struct parser *p, const char *field, size_t flen,
                                   const char *arg, size_t arglen, bool has_arg, enum filter_op op,
                                   const struct values *vals, size_t field_pos, size_t op_pos, size_t val_pos);

static struct cnode *parse_or(struct parser *p);

static struct cnode *parse_embedded(struct parser *p)
{
    if (++p->depth > RULES_MAX_NESTING) {
        perr(p, p->pos, "parentheses nested deeper than %d", RULES_MAX_NESTING);
        p->syntax_error = true;
        return NULL;
    }
    blank(p);
    struct cnode *n = parse_or(p);
    blank(p);
    if (!p->syntax_error && !match(p, ")"))
        syntax(p, "expected ')'");
    p->depth--;
    return n;
}

static struct cnode *parse_condition(struct parser *p, const char *field, size_t flen, const char *arg, size_t arglen,
                                     bool has_arg, size_t field_pos)
{
    static const char *const num_ops[] = {"<=", "<", ">=", ">"};
    static const enum filter_op num_codes[] = {OP_LE, OP_LT, OP_GE, OP_GT};
    static const char *const str_ops[] = {"==", "=", "!=", "glob", "iglob", "contains", "icontains", "bcontains",
                                          "startswith", "bstartswith", "endswith", "regex"};
    static const int str_codes[] = {OP_EQ, OP_EQ, OP_NE, OP_GLOB, OP_IGLOB, OP_CONTAINS, OP_ICONTAINS,
                                    OP_BCONTAINS, OP_STARTSWITH, OP_BSTARTSWITH, OP_ENDSWITH, -1};
    static const char *const list_ops[] = {"intersects", "in", "pmatch"};
    static const enum filter_op list_codes[] = {OP_INTERSECTS, OP_IN, OP_PMATCH};
    struct values vals = {0};
    blank(p);
    size_t op_pos = p->pos;
    if (match(p, "exists"))
        return compile_check(p->env, p, field, flen, arg, arglen, has_arg, OP_EXISTS, &vals, field_pos, op_pos, op_pos);
    for (int i = 0; i < 4; i++) {
        if (!match(p, num_ops[i]))
            continue;
        blank(p);
        struct token t;
        size_t val_pos = p->pos;
        if (!lex_number(p, &t)) {
            syntax(p, "expected a number after a numeric operator");
            return NULL;
        }
        if (add_value(p->env->arena, &vals, t.text, t.len) != 0)
            return NULL;
        return compile_check(p->env, p, field, flen, arg, arglen, has_arg, num_codes[i], &vals, field_pos, op_pos,
                             val_pos);
    }
    for (int i = 0; i < 12; i++) {
        bool word = is_alpha(str_ops[i][0]);
        size_t save = p->pos;
        if (!match(p, str_ops[i]))
            continue;
        if (word && !blank(p)) {   /* "contains" needs a blank after it */
            p->pos = save;
            continue;
        }
        if (str_codes[i] < 0) {
            perr(p, op_pos, "the regex operator is not supported (use glob, pmatch or contains)");
            p->syntax_error = true;
            return NULL;
        }
        blank(p);
        struct token t;
        size_t val_pos = p->pos;
        if (!lex_quoted(p, &t) && !lex_bare(p, &t)) {
            syntax(p, "expected a value");
            return NULL;
        }
        if (add_value(p->env->arena, &vals, t.text, t.len) != 0)
            return NULL;
        return compile_check(p->env, p, field, flen, arg, arglen, has_arg, (enum filter_op)str_codes[i], &vals,
                             field_pos, op_pos, val_pos);
    }
    for (int i = 0; i < 3; i++) {
        if (!match(p, list_ops[i]))
            continue;
        blank(p);
        size_t val_pos = p->pos;
        if (match(p, "(")) {
            blank(p);
            struct token t;
            if (lex_quoted(p, &t) || lex_bare(p, &t)) {
                if (add_list_item(p, &vals, &t) != 0)
                    return NULL;
                blank(p);
                while (match(p, ",")) {
                    blank(p);
                    if (!lex_quoted(p, &t) && !lex_bare(p, &t)) {
                        syntax(p, "expected a value after ','");
                        return NULL;
                    }
                    if (add_list_item(p, &vals, &t) != 0)
                        return NULL;
                    blank(p);
                }
            }
            if (!match(p, ")")) {
                syntax(p, "expected ')' closing the list");
                return NULL;
            }
        } else {
            size_t n = ident_len(p, p->pos);
            if (!n) {
                syntax(p, "expected a list: '(' or a list name");
                return NULL;
            }
            const struct filter_list *l = p->env->list(p->env->ctx, p->s + p->pos, n);
            if (!l) {
                perr(p, p->pos, "undefined list '%.*s'", (int)n, p->s + p->pos);
                p->pos += n;
                return NULL;
            }
            p->pos += n;
            for (size_t k = 0; k < l->n; k++)
                if (add_value(p->env->arena, &vals, l->items[k], l->lens[k]) != 0)
                    return NULL;
        }
        return compile_check(p->env, p, field, flen, arg, arglen, has_arg, list_codes[i], &vals, field_pos, op_pos,
                             val_pos);
    }
    syntax(p, "expected an operator: =, ==, !=, <, <=, >, >=, contains, icontains, bcontains, startswith, "
              "bstartswith, endswith, glob, iglob, in, intersects, pmatch or exists");
    return NULL;
}

static struct cnode *parse_check(struct parser *p)
{
    blank(p);
    if (match(p, "("))
        return parse_embedded(p);
    size_t start = p->pos;
    size_t flen = field_name_len(p);
    if (flen) {
        const char *field = p->s + p->pos;
        p->pos += flen;
        const char *arg = NULL;
        size_t arglen = 0;
        bool has_arg = false;
        if (match(p, "[")) {
            struct token t;
            if (lex_quoted(p, &t)) {
                arg = t.text;
                arglen = t.len;
            } else {
                size_t i = p->pos;
                while (i < p->len && p->s[i] != ']' && p->s[i] != '[' && p->s[i] != '"' && p->s[i] != '\'' &&
                       !is_space(p->s[i]))
                    i++;
                if (i == p->pos) {
                    syntax(p, "expected a field argument: a quoted string or a bare string");
                    return NULL;
                }
                arg = p->s + p->pos;
                arglen = i - p->pos;
                p->pos = i;
            }
            if (!match(p, "]")) {
                syntax(p, "expected ']'");
                return NULL;
            }
            has_arg = true;
        }
        return parse_condition(p, field, flen, arg, arglen, has_arg, start);
    }
    size_t n = ident_len(p, p->pos);
    if (n) {
        bool failed = false;
        const struct cnode *body = p->env->macro(p->env->ctx, p->s + p->pos, n, p->pos, &failed);
        p->pos += n;
        if (!body) {
            p->failed = true;
            return NULL;
        }
        if (body->macro_depth + 1 > RULES_MAX_NESTING) {
            perr(p, start, "macros nested deeper than %d", RULES_MAX_NESTING);
            return NULL;
        }
        struct cnode *m = leaf(p->env->arena, CN_MACRO);
        if (!m)
            return NULL;
        m->body = body;
        m->size = sat_add(body->size, 1);
        m->macro_depth = body->macro_depth + 1;
        m->uses_dir = body->uses_dir;
        m->uses_point = body->uses_point;
        return m;
    }
    syntax(p, "expected '(', a field check or a macro name");
    return NULL;
}

static struct cnode *parse_not(struct parser *p)
{
    blank(p);
    bool neg = false;
    for (;;) {
        if (at(p, 0) == 'n' && at(p, 1) == 'o' && at(p, 2) == 't' && is_space(at(p, 3))) {
            p->pos += 3;
            blank(p);
            neg = !neg;
            continue;
        }
        break;
    }
    struct cnode *child;
    if (match(p, "not(")) {
        neg = !neg;
        child = parse_embedded(p);
    } else {
        child = parse_check(p);
    }
    if (!neg || !child)
        return child;
    return filter_make_node(p->env->arena, CN_NOT, &child, 1);
}

/* One level of and/or: first ('word' (blank next | '(' embedded))* */
static struct cnode *parse_level(struct parser *p, const char *word, enum cnode_kind kind,
                                 struct cnode *(*next)(struct parser *))
{
    struct cnode *stack_kids[16];
    struct cnode **kids = stack_kids;
    size_t n = 0, cap = 16;
    bool lost = false;
    blank(p);
    struct cnode *first = next(p);
    lost |= !first;
    kids[n++] = first;
    blank(p);
    while (!p->syntax_error && match(p, word)) {
        struct cnode *child;
        if (!blank(p)) {
            if (match(p, "(")) {
                child = parse_embedded(p);
            } else {
                char what[48];
                snprintf(what, sizeof(what), "expected a blank or '(' after '%s'", word);
                syntax(p, what);
                return NULL;
            }
        } else {
            child = next(p);
        }
        lost |= !child;
        if (n == cap) {
            struct cnode **grown = arena_alloc(p->env->arena, cap * 2 * sizeof(*grown));
            if (!grown)
                return NULL;
            memcpy(grown, kids, n * sizeof(*grown));
            kids = grown;
            cap *= 2;
        }
        kids[n++] = child;
        blank(p);
    }
    if (lost || p->syntax_error)
        return NULL;
    if (n == 1)
        return kids[0];
    return filter_make_node(p->env->arena, kind, kids, (uint32_t)n);
}

static struct cnode *parse_and(struct parser *p) { return parse_level(p, "and", CN_AND, parse_not); }
static struct cnode *parse_or(struct parser *p) { return parse_level(p, "or", CN_OR, parse_and); }

struct cnode *filter_parse(const struct filter_env *env, const char *text, size_t len)
{
    struct parser p = {.env = env, .s = text, .len = len};
    blank(&p);
    if (p.pos == len) {
        perr(&p, 0, "the condition is empty");
        return NULL;
    }
    struct cnode *n = parse_or(&p);
    if (!p.syntax_error && p.pos != len)
        syntax(&p, "unexpected text: expected 'and', 'or' or the end of the condition");
    return p.failed ? NULL : n;
}

/* ---- compiling one check ---- */

static bool op_allowed(enum ftype t, enum filter_op op)
{
    switch (t) {
    case FT_STR:
    case FT_DYN: return true;
    case FT_INT:
    case FT_UINT:
        return op == OP_EQ || op == OP_NE || op == OP_LT || op == OP_LE || op == OP_GT || op == OP_GE || op == OP_IN ||
               op == OP_INTERSECTS || op == OP_EXISTS;
    case FT_BOOL:
    case FT_IP: return op == OP_EQ || op == OP_NE || op == OP_IN || op == OP_INTERSECTS || op == OP_EXISTS;
    }
    return false;
}

static const char *type_word(enum ftype t)
{
    switch (t) {
    case FT_INT:
    case FT_UINT: return "numeric";
    case FT_BOOL: return "boolean";
    case FT_IP: return "IP address";
    default: return "string";
    }
}

/* evt.type with any operator: the set of type names it accepts. */
static struct cnode *compile_types(const struct filter_env *env, struct parser *p, struct check *c, size_t val_pos)
{
    struct evtype_set *set = arena_alloc(env->arena, sizeof(*set));
    struct cnode *n = leaf(env->arena, CN_TYPES);
    if (!set || !n)
        return NULL;
    memset(set, 0, sizeof(*set));
    if (c->op == OP_EQ || c->op == OP_NE || c->op == OP_IN || c->op == OP_INTERSECTS) {
        for (uint32_t i = 0; i < c->nvals; i++) {
            int t = evtype_lookup(c->vals[i].s, c->vals[i].len);
            if (t < 0) {
                perr(p, val_pos, "unknown event type '%.*s' (a syscall name, or procexit, container, "
                     "exit_notify_parent, sentry_mmap)", (int)(c->vals[i].len > 48 ? 48 : c->vals[i].len),
                     c->vals[i].s);
                return NULL;
            }
            evtype_set_add(set, (unsigned)t);
        }
        if (c->op == OP_NE)
            evtype_set_invert(set);
    } else {
        for (unsigned t = 0; t < EVTYPE_COUNT; t++) {
            const char *name = evtype_name(t);
            if (name && (c->op == OP_EXISTS || cmp_str(c, name, strlen(name))))
                evtype_set_add(set, t);
        }
    }
    n->types = set;
    return n;
}

static struct cnode *compile_check(const struct filter_env *env, struct parser *p, const char *field, size_t flen,
                                   const char *arg, size_t arglen, bool has_arg, enum filter_op op,
                                   const struct values *vals, size_t field_pos, size_t op_pos, size_t val_pos)
{
    char err[300];
    struct check *c = arena_alloc(env->arena, sizeof(*c));
    if (!c)
        return NULL;
    memset(c, 0, sizeof(*c));
    if (fields_resolve(field, flen, arg, arglen, has_arg, env->arena, &c->field, err, sizeof(err)) != 0) {
        perr(p, field_pos, "%s", err);
        return NULL;
    }
    enum ftype t = fields_type(&c->field);
    if (!op_allowed(t, op)) {
        perr(p, op_pos, "operator '%s' does not apply to %s field '%.*s'", op_names[op], type_word(t), (int)flen, field);
        return NULL;
    }
    c->op = op;
    c->nvals = (uint32_t)vals->n;
    c->vals = arena_alloc(env->arena, (vals->n ? vals->n : 1) * sizeof(*c->vals));
    if (!c->vals)
        return NULL;
    memset(c->vals, 0, sizeof(*c->vals));
    for (size_t i = 0; i < vals->n; i++) {
        struct operand *o = &c->vals[i];
        if (compile_operand(env->arena, op, o, vals->text[i], vals->lens[i], err, sizeof(err)) != 0) {
            perr(p, val_pos, "%s", err);
            return NULL;
        }
        bool ok = t == FT_STR || t == FT_DYN || ((t == FT_INT || t == FT_UINT) && o->has_num) ||
                  (t == FT_BOOL && (o->has_bool || (o->has_num && !o->num.neg && o->num.mag <= 1))) ||
                  (t == FT_IP && o->has_ip);
        if (!ok) {
            perr(p, val_pos, "'%.*s' is not %s for '%.*s'", (int)(o->len > 48 ? 48 : o->len), o->s,
                 t == FT_IP ? "an IP address or network" : t == FT_BOOL ? "true or false" : "a number", (int)flen,
                 field);
            return NULL;
        }
        if (t == FT_BOOL && !o->has_bool) {
            o->has_bool = true;
            o->b = o->num.mag == 1;
        }
    }
    if (op == OP_IN || op == OP_INTERSECTS) {
        c->by_str = arena_alloc(env->arena, (vals->n ? vals->n : 1) * sizeof(*c->by_str));
        c->by_num = arena_alloc(env->arena, (vals->n ? vals->n : 1) * sizeof(*c->by_num));
        if (!c->by_str || !c->by_num)
            return NULL;
        for (uint32_t i = 0; i < c->nvals; i++) {
            c->by_str[i] = &c->vals[i];
            if (c->vals[i].has_num)
                c->by_num[c->nby_num++] = &c->vals[i];
        }
        qsort(c->by_str, c->nvals, sizeof(*c->by_str), set_str_cmp);
        qsort(c->by_num, c->nby_num, sizeof(*c->by_num), set_num_cmp);
    }
    if ((op == OP_IN || op == OP_INTERSECTS || op == OP_PMATCH) && c->nvals == 0) {
        struct cnode *never = leaf(env->arena, CN_CONST);   /* an empty list matches nothing */
        return never;
    }
    if (c->field.id == F_EVT_TYPE)
        return compile_types(env, p, c, val_pos);
    struct cnode *n = leaf(env->arena, CN_CHECK);
    if (!n)
        return NULL;
    n->chk = c;
    n->uses_dir = c->field.id == F_EVT_DIR;
    if (n->uses_dir)
        c->dirs = (uint8_t)dir_check(c);
    n->uses_point = c->field.id == F_GVISOR_POINT;
    c->field.slot = env->slot(env->ctx, &c->field);
    return n;
}

struct cnode *filter_make_check(const struct filter_env *env, const char *field, size_t flen, enum filter_op op,
                                const char *const *values, const uint32_t *lens, size_t nvalues, size_t pos)
{
    /* A parser over nothing, so errors carry pos. */
    struct parser p = {.env = env, .s = "", .len = 0, .pos = pos};
    struct values vals = {0};
    for (size_t i = 0; i < nvalues; i++) {
        struct token t = {.text = values[i], .len = lens[i]};
        if (op == OP_IN || op == OP_INTERSECTS || op == OP_PMATCH ? add_list_item(&p, &vals, &t) != 0
                                                                  : add_value(env->arena, &vals, t.text, t.len) != 0)
            return NULL;
    }
    const char *arg = NULL;
    size_t arglen = 0, base = flen;
    const char *br = memchr(field, '[', flen);
    if (br && field[flen - 1] == ']') {
        base = (size_t)(br - field);
        arg = br + 1;
        arglen = flen - base - 2;
    }
    struct cnode *n = compile_check(env, &p, field, base, arg, arglen, br != NULL, op, &vals, pos, pos, pos);
    return p.failed ? NULL : n;
}
