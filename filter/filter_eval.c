/* filter_eval.c - evaluating compiled conditions on one event (filter.h):
 * comparisons as libsinsp's filter_compare.cpp and sinsp_filtercheck.cpp
 * make them, operator modifiers, transformers (sinsp_filter_transformers/,
 * sinsp_filtercheck_multivalue_transformer.cpp) and `regex`.
 *
 * Nothing here allocates once the scratch buffers have grown to the
 * workload's sizes: a transformer builds its values in two scratch slots
 * of the engine's value cache chosen at compile by its side of the check
 * and its depth in the expression (filter_int.h), and a node's values stay
 * valid until its parent evaluates the next argument, which every parent
 * copies or consumes first.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "filter_int.h"
#include "proctab.h"
#include "json.h"
#include "regex_re2.h"

/* ---- glob: fnmatch(3) without flags (or with FNM_CASEFOLD), on counted
 * strings, without backtracking blow-up (one star remembered) ---- */

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
        unsigned char fc = filter_fold(c, icase);
        if ((c >= lo && c <= hi) || (fc >= filter_fold(lo, icase) && fc <= filter_fold(hi, icase)))
            matched = true;
    }
    if (k >= plen)
        return -1;
    *i = k + 1;
    return matched != negate;
}

bool filter_glob_match(const char *p, size_t plen, const char *s, size_t slen, bool icase)
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
            if (filter_fold((unsigned char)pc, icase) == filter_fold((unsigned char)s[si], icase)) {
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

/* ---- comparing one value with one constant ---- */

int filter_fnum_cmp(struct fnum a, struct fnum b)
{
    if (a.neg != b.neg)
        return a.neg ? -1 : 1;
    int r = a.mag < b.mag ? -1 : a.mag > b.mag;
    return a.neg ? -r : r;
}

static int cmp_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
    int r = memcmp(a, b, alen < blen ? alen : blen);
    return r ? r : (alen < blen ? -1 : alen > blen);
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

static bool icontains(const char *h, size_t hlen, const char *needle, size_t nlen)
{
    if (nlen == 0)
        return true;
    for (size_t i = 0; i + nlen <= hlen; i++) {
        size_t k = 0;
        while (k < nlen && filter_fold((unsigned char)h[i + k], true) == filter_fold((unsigned char)needle[k], true))
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
        bool eq = o->part_glob[k] ? filter_glob_match(o->parts[k], o->part_lens[k], s + st, i - st, false)
                                  : o->part_lens[k] == i - st && memcmp(o->parts[k], s + st, i - st) == 0;
        if (!eq)
            return false;
    }
    return o->nparts > 0;
}

/* The value as regex matches it: valid UTF-8 as is, else with each maximal
 * invalid subpart replaced by U+FFFD, as libsinsp sanitizes it
 * (utf8::sanitize: Unicode's substitution of maximal subparts). */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    if (c < 0x80)
        return 1;
    if (c < 0xC2)
        return 1u << 8;
    if (c < 0xE0)
        return p + 1 < end && (p[1] & 0xC0) == 0x80 ? 2 : 1u << 8;
    if (c < 0xF0) {
        unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        if (p + 1 >= end || p[1] < lo || p[1] > hi)
            return 1u << 8;
        if (p + 2 >= end || (p[2] & 0xC0) != 0x80)
            return 2u << 8;
        return 3;
    }
    if (c <= 0xF4) {
        unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        if (p + 1 >= end || p[1] < lo || p[1] > hi)
            return 1u << 8;
        if (p + 2 >= end || (p[2] & 0xC0) != 0x80)
            return 2u << 8;
        if (p + 3 >= end || (p[3] & 0xC0) != 0x80)
            return 3u << 8;
        return 4;
    }
    return 1u << 8;
}

static bool regex_value(const struct regex *re, const char *s, size_t len, struct strbuf *tmp)
{
    if (utf8_valid(s, len))
        return regex_full_match(re, s, len);
    if (!tmp)
        return false;
    strbuf_reset(tmp);
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        size_t r = utf8_seq(p, end);
        if (r < 256) {
            strbuf_append(tmp, p, r);
            p += r;
        } else {
            strbuf_append(tmp, "\xef\xbf\xbd", 3);
            p += r >> 8;
        }
    }
    if (tmp->failed)
        return false;
    return regex_full_match(re, tmp->len ? tmp->data : "", tmp->len);
}

/* A string operator with one constant. */
static bool str_one(enum filter_op op, const struct operand *o, const char *s, size_t len, struct strbuf *tmp)
{
    switch (op) {
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
    case OP_GLOB: return filter_glob_match(o->s, o->len, s, len, false);
    case OP_IGLOB: return filter_glob_match(o->lower, o->len, s, len, true);
    case OP_PMATCH: return pmatch_one(o, s, len);
    case OP_REGEX: return regex_value(o->re, s, len, tmp);
    case OP_IN:
    case OP_INTERSECTS: return o->len == len && memcmp(o->s, s, len) == 0;
    default: return false;
    }
}

static bool num_one(enum filter_op op, const struct operand *o, struct fnum v, bool is_bool)
{
    switch (op) {
    case OP_EQ:
    case OP_NE:
    case OP_IN:
    case OP_INTERSECTS: {
        bool eq = is_bool && o->has_bool ? (v.mag != 0) == o->b : o->has_num && filter_fnum_cmp(v, o->num) == 0;
        return op == OP_NE ? !eq : eq;
    }
    case OP_LT: return o->has_num && filter_fnum_cmp(v, o->num) < 0;
    case OP_LE: return o->has_num && filter_fnum_cmp(v, o->num) <= 0;
    case OP_GT: return o->has_num && filter_fnum_cmp(v, o->num) > 0;
    case OP_GE: return o->has_num && filter_fnum_cmp(v, o->num) >= 0;
    default: return false;
    }
}

static struct fnum fnum_of(const struct fval *v)
{
    switch (v->kind) {
    case FV_INT: return (struct fnum){v->i < 0, v->i < 0 ? 0 - (uint64_t)v->i : (uint64_t)v->i};
    case FV_UINT: return (struct fnum){false, v->u};
    case FV_BOOL: return (struct fnum){false, v->b};
    default: return (struct fnum){false, 0};
    }
}

/* The text of a non-string value (a string operator on evt.arg's number,
 * an IP address): at most 46 bytes. */
static size_t text_of(const struct fval *v, char *buf, size_t cap)
{
    int n = 0;
    switch (v->kind) {
    case FV_INT: n = snprintf(buf, cap, "%lld", (long long)v->i); break;
    case FV_UINT: n = snprintf(buf, cap, "%llu", (unsigned long long)v->u); break;
    case FV_BOOL: n = snprintf(buf, cap, "%s", v->b ? "true" : "false"); break;
    case FV_IP:
        if (!inet_ntop(v->len == 4 ? AF_INET : AF_INET6, v->ip, buf, (socklen_t)cap))
            return 0;
        return strlen(buf);
    default: return 0;
    }
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

/* One value with one constant, under the check's operator. */
static bool value_one(const struct check *c, enum filter_op op, const struct operand *o, const struct fval *v,
                      struct strbuf *tmp)
{
    switch (v->kind) {
    case FV_STR: return str_one(op, o, v->s, v->len, tmp);
    case FV_INT:
    case FV_UINT:
    case FV_BOOL:
        if (c->type == FT_DYN && op != OP_EQ && op != OP_NE && op != OP_LT && op != OP_LE && op != OP_GT &&
            op != OP_GE && op != OP_IN && op != OP_INTERSECTS) {
            char buf[64];   /* a string operator on evt.arg's number */
            size_t n = text_of(v, buf, sizeof(buf));
            return str_one(op, o, buf, n, tmp);
        }
        return num_one(op, o, fnum_of(v), v->kind == FV_BOOL);
    case FV_IP:
        if (op == OP_EQ || op == OP_IN || op == OP_INTERSECTS)
            return ip_in(o, v);
        if (op == OP_NE)
            return !ip_in(o, v);
        {
            char buf[64];
            size_t n = text_of(v, buf, sizeof(buf));
            return str_one(op, o, buf, n, tmp);
        }
    default: return false;
    }
}

/* in / intersects: binary search in the sorted constants. */
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

static bool in_num(const struct check *c, struct fnum v)
{
    size_t lo = 0, hi = c->nby_num;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int r = filter_fnum_cmp(c->by_num[mid]->num, v);
        if (r == 0)
            return true;
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

static bool in_set(const struct check *c, const struct fval *v)
{
    switch (v->kind) {
    case FV_STR: return in_str(c, v->s, v->len);
    case FV_BOOL:
        for (uint32_t i = 0; i < c->nvals; i++)
            if (c->vals[i].has_bool && c->vals[i].b == v->b)
                return true;
        return false;
    case FV_INT:
    case FV_UINT: {
        if (in_num(c, fnum_of(v)))
            return true;
        if (c->type != FT_DYN)
            return false;
        char buf[64];
        size_t n = text_of(v, buf, sizeof(buf));
        return in_str(c, buf, n);
    }
    case FV_IP:
        for (uint32_t i = 0; i < c->nvals; i++)
            if (ip_in(&c->vals[i], v))
                return true;
        return false;
    default: return false;
    }
}

/* Modifiers (sinsp_filter_check::compare_rhs_with_mod): per constant,
 * exactly one / at least one / every one; never true over no constants. */
static bool with_mod(const struct check *c, const struct fval *v, struct strbuf *tmp)
{
    if (c->nvals == 0)
        return false;
    if (c->by_str && ((c->op == OP_EQ && c->mod == MOD_ANYOF) || (c->op == OP_NE && c->mod == MOD_ALLOF)))
        return in_set(c, v) == (c->op == OP_EQ);   /* "is in" / "is not in", as libsinsp's fast path */
    uint32_t hits = 0;
    for (uint32_t i = 0; i < c->nvals; i++) {
        bool m = value_one(c, c->op, &c->vals[i], v, tmp);
        if (c->mod == MOD_ANYOF && m)
            return true;
        if (c->mod == MOD_ALLOF && !m)
            return false;
        if (c->mod == MOD_ONEOF && m && ++hits > 1)
            return false;
    }
    return c->mod == MOD_ALLOF || (c->mod == MOD_ONEOF && hits == 1);
}

/* The check against its constants, with the regex sanitizing buffer. */
static bool compare_const(const struct check *c, const struct fval *v, struct strbuf *tmp)
{
    if (c->mod != MOD_NONE)
        return with_mod(c, v, tmp);
    switch (c->op) {
    case OP_IN:
    case OP_INTERSECTS: return in_set(c, v);
    case OP_PMATCH:
        if (v->kind != FV_STR)
            return false;
        for (uint32_t i = 0; i < c->nvals; i++)
            if (pmatch_one(&c->vals[i], v->s, v->len))
                return true;
        return false;
    default: return value_one(c, c->op, c->vals, v, tmp);
    }
}

bool filter_compare(const struct check *c, const struct fval *v)
{
    return c->op == OP_EXISTS || (v->kind != FV_ABSENT && compare_const(c, v, NULL));
}

bool filter_compare_str(const struct check *c, const char *s, size_t len)
{
    struct fval v = {.kind = FV_STR, .len = (uint32_t)len, .s = s};
    return filter_compare(c, &v);
}

/* ---- two values of the event (a right-hand field or transformer) ---- */

static bool same_value(const struct fval *a, const struct fval *b)
{
    if (a->kind == FV_STR || b->kind == FV_STR) {
        char ab[64], bb[64];
        const char *as = a->s, *bs = b->s;
        size_t al = a->len, bl = b->len;
        if (a->kind != FV_STR)
            al = text_of(a, ab, sizeof(ab)), as = ab;
        if (b->kind != FV_STR)
            bl = text_of(b, bb, sizeof(bb)), bs = bb;
        return al == bl && memcmp(as, bs, al) == 0;
    }
    if (a->kind == FV_IP || b->kind == FV_IP)
        return a->kind == b->kind && a->len == b->len && memcmp(a->ip, b->ip, a->len) == 0;
    return filter_fnum_cmp(fnum_of(a), fnum_of(b)) == 0;
}

static bool dyn_one(enum filter_op op, const struct fval *l, const struct fval *r)
{
    if (op == OP_EQ || op == OP_IN || op == OP_INTERSECTS)
        return same_value(l, r);
    if (op == OP_NE)
        return !same_value(l, r);
    bool nums = l->kind != FV_STR && l->kind != FV_IP && r->kind != FV_STR && r->kind != FV_IP;
    if (nums) {
        int k = filter_fnum_cmp(fnum_of(l), fnum_of(r));
        switch (op) {
        case OP_LT: return k < 0;
        case OP_LE: return k <= 0;
        case OP_GT: return k > 0;
        case OP_GE: return k >= 0;
        default: return false;
        }
    }
    char lb[64], rb[64];
    const char *s = l->s, *n = r->s;
    size_t slen = l->len, nlen = r->len;
    if (l->kind != FV_STR)
        slen = text_of(l, lb, sizeof(lb)), s = lb;
    if (r->kind != FV_STR)
        nlen = text_of(r, rb, sizeof(rb)), n = rb;
    switch (op) {
    case OP_LT: return cmp_bytes(s, slen, n, nlen) < 0;
    case OP_LE: return cmp_bytes(s, slen, n, nlen) <= 0;
    case OP_GT: return cmp_bytes(s, slen, n, nlen) > 0;
    case OP_GE: return cmp_bytes(s, slen, n, nlen) >= 0;
    case OP_CONTAINS:
    case OP_BCONTAINS: return memmem(s, slen, n, nlen) != NULL;
    case OP_ICONTAINS: return icontains(s, slen, n, nlen);
    case OP_STARTSWITH:
    case OP_BSTARTSWITH: return slen >= nlen && memcmp(s, n, nlen) == 0;
    case OP_ENDSWITH: return slen >= nlen && memcmp(s + slen - nlen, n, nlen) == 0;
    case OP_GLOB: return filter_glob_match(n, nlen, s, slen, false);
    case OP_IGLOB: return filter_glob_match(n, nlen, s, slen, true);
    default: return false;
    }
}

struct vals {
    const struct fval *v;
    uint32_t n;
};

static bool any_in(const struct fval *v, const struct vals *set)
{
    for (uint32_t i = 0; i < set->n; i++)
        if (same_value(v, &set->v[i]))
            return true;
    return false;
}

/* libsinsp compares a list (both sides are of one kind, checked at load)
 * value by value: in, every left value is on the right; intersects, some. */
static bool compare_dyn(const struct check *c, const struct vals *l, const struct vals *r)
{
    if (c->lhs_list) {
        for (uint32_t i = 0; i < l->n; i++) {
            bool in = any_in(&l->v[i], r);
            if (c->op == OP_INTERSECTS && in)
                return true;
            if (c->op == OP_IN && !in)
                return false;
        }
        return c->op == OP_IN;
    }
    if (c->op == OP_IN || c->op == OP_INTERSECTS)
        return any_in(&l->v[0], r);
    return r->n == 1 && dyn_one(c->op, &l->v[0], &r->v[0]);
}

/* A list on the left against constants. */
static bool compare_list(const struct check *c, const struct vals *l)
{
    for (uint32_t i = 0; i < l->n; i++) {
        bool in = in_set(c, &l->v[i]);
        if (c->op == OP_INTERSECTS && in)
            return true;
        if (c->op == OP_IN && !in)
            return false;
    }
    return c->op == OP_IN;
}

/* ---- transformers ---- */

/* A result under construction in a node's two scratch buffers: the bytes
 * of its strings, and its values (strings first recorded by offset, made
 * pointers once the bytes stop moving). */
struct builder {
    struct strbuf *bytes, *vals;
};

static void b_init(struct evctx *x, const struct fexpr *e, struct builder *b)
{
    b->bytes = &x->slots[e->bytes_slot].buf;
    b->vals = &x->slots[e->vals_slot].buf;
    strbuf_reset(b->bytes);
    strbuf_reset(b->vals);
}

/* Appends the value's text to the bytes; returns where it starts. */
static size_t put_text(struct strbuf *bytes, const struct fval *v)
{
    size_t start = bytes->len;
    if (v->kind == FV_STR)
        strbuf_append(bytes, v->s, v->len);
    else
        fields_render_text(bytes, v);
    return start;
}

static void b_add_string(struct builder *b, size_t off, size_t len)
{
    struct fval v = {.kind = FV_STR, .len = (uint32_t)len, .u = off};
    strbuf_append(b->vals, &v, sizeof(v));
}

static void b_add_value(struct builder *b, const struct fval *v)
{
    struct fval copy = *v;
    if (copy.kind == FV_STR) {   /* the text moves into the bytes */
        size_t off = put_text(b->bytes, v);
        copy.u = off;
    }
    strbuf_append(b->vals, &copy, sizeof(copy));
}

static bool b_finish(struct builder *b, struct vals *out)
{
    if (b->bytes->failed || b->vals->failed)
        return false;
    struct fval *v = (struct fval *)(void *)b->vals->data;
    size_t n = b->vals->len / sizeof(*v);
    for (size_t i = 0; i < n; i++)
        if (v[i].kind == FV_STR) {
            size_t off = (size_t)v[i].u;
            v[i].s = b->bytes->len ? b->bytes->data + off : "";
        }
    static const struct fval none = {.kind = FV_ABSENT};
    out->v = n ? v : &none;
    out->n = (uint32_t)n;
    return true;
}

static bool fx_eval(struct evctx *x, const struct fexpr *e, struct vals *out);

/* The single value of an argument (a separator, an optstring, a concat
 * part): its text appended to bytes, cut at a NUL as libsinsp's C strings
 * are; false when absent. */
static bool arg_text(struct evctx *x, const struct fexpr *arg, struct strbuf *bytes, size_t *start, size_t *len)
{
    struct vals v;
    if (!fx_eval(x, arg, &v) || v.n != 1)
        return false;
    *start = put_text(bytes, &v.v[0]);
    size_t n = bytes->len - *start;
    const char *nul = n ? memchr(bytes->data + *start, '\0', n) : NULL;
    *len = nul ? (size_t)(nul - (bytes->data + *start)) : n;
    return !bytes->failed;
}

/* libsinsp's Base64::decodeWithoutPadding, in place (the output never
 * passes the input): up to two '=' are ignored, the last character's
 * unused bits must be 0. */
static bool b64_decode(char *s, size_t n, size_t *outn)
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (n == 0) {
        *outn = 0;
        return true;
    }
    if (s[n - 1] == '=') {
        n--;
        if (n > 0 && s[n - 1] == '=')
            n--;
    }
    if (n == 0 || n % 4 == 1)
        return false;
    size_t o = 0;
    unsigned acc = 0;
    for (size_t i = 0; i < n; i++) {
        const char *p = s[i] ? memchr(alphabet, s[i], 64) : NULL;
        if (!p)
            return false;
        unsigned c = (unsigned)(p - alphabet);
        bool last = i == n - 1;
        switch (i % 4) {
        case 0: acc = c << 2; break;
        case 1:
            s[o++] = (char)(acc | c >> 4);
            acc = (c << 4) & 0xff;
            if (last && (c & 15))
                return false;
            break;
        case 2:
            s[o++] = (char)(acc | c >> 2);
            acc = (c << 6) & 0xff;
            if (last && (c & 3))
                return false;
            break;
        case 3: s[o++] = (char)(acc | c); break;
        }
    }
    *outn = o;
    return true;
}

/* tolower, toupper, basename, b64: each value's text, transformed in its
 * copy in the bytes buffer. */
static bool fx_string(struct evctx *x, const struct fexpr *e, struct vals *out)
{
    struct vals in;
    if (!fx_eval(x, e->args[0], &in))
        return false;
    struct builder b;
    b_init(x, e, &b);
    for (uint32_t i = 0; i < in.n; i++) {
        size_t start = put_text(b.bytes, &in.v[i]);
        if (b.bytes->failed)
            return false;
        char *s = b.bytes->data ? b.bytes->data + start : NULL;
        size_t n = b.bytes->len - start, outn = n;
        switch (e->kind) {
        case FX_TOLOWER:
        case FX_TOUPPER:
            for (size_t k = 0; k < n; k++) {
                unsigned char ch = (unsigned char)s[k];
                if (e->kind == FX_TOLOWER && ch >= 'A' && ch <= 'Z')
                    s[k] = (char)(ch + 32);
                else if (e->kind == FX_TOUPPER && ch >= 'a' && ch <= 'z')
                    s[k] = (char)(ch - 32);
            }
            break;
        case FX_BASENAME: {
            const char *slash = n ? memrchr(s, '/', n) : NULL;
            if (slash) {
                size_t skip = (size_t)(slash - s) + 1;
                memmove(s, s + skip, n - skip);
                outn = n - skip;
            }
            break;
        }
        case FX_B64: {
            if (!b64_decode(s, n, &outn))
                return false;   /* not base64: no value, as libsinsp */
            const char *nul = outn ? memchr(s, '\0', outn) : NULL;
            if (nul)
                outn = (size_t)(nul - s);   /* a string stops at its NUL in libsinsp */
            break;
        }
        default: return false;
        }
        b.bytes->len = start + outn;
        if (b.bytes->data)
            b.bytes->data[b.bytes->len] = '\0';
        b_add_string(&b, start, outn);
    }
    return b_finish(&b, out);
}

static bool fx_len(struct evctx *x, const struct fexpr *e, struct vals *out)
{
    struct vals in;
    if (!fx_eval(x, e->args[0], &in))
        return false;
    uint64_t n = in.n;
    if (!e->args[0]->is_list) {
        const struct fval *v = &in.v[0];
        if (v->kind == FV_STR) {
            const char *nul = v->len ? memchr(v->s, '\0', v->len) : NULL;
            n = nul ? (uint64_t)(nul - v->s) : v->len;
        } else {
            char buf[64];
            n = text_of(v, buf, sizeof(buf));
        }
    }
    struct builder b;
    b_init(x, e, &b);
    struct fval r = {.kind = FV_UINT, .u = n};
    b_add_value(&b, &r);
    return b_finish(&b, out);
}

/* join(sep, list): the separator waits in the values buffer while the
 * list is evaluated (its scratch is the separator's). */
static bool fx_join(struct evctx *x, const struct fexpr *e, struct vals *out)
{
    struct builder b;
    b_init(x, e, &b);
    size_t sep_start, sep_len;
    if (!arg_text(x, e->args[0], b.vals, &sep_start, &sep_len))
        return false;
    struct vals list;
    if (!fx_eval(x, e->args[1], &list))
        return false;
    for (uint32_t i = 0; i < list.n; i++) {
        if (i && sep_len)
            strbuf_append(b.bytes, b.vals->data + sep_start, sep_len);
        size_t start = put_text(b.bytes, &list.v[i]);
        size_t n = b.bytes->len - start;
        const char *nul = n ? memchr(b.bytes->data + start, '\0', n) : NULL;
        if (nul)
            b.bytes->len = (size_t)(nul - b.bytes->data);
    }
    size_t len = b.bytes->len;
    strbuf_reset(b.vals);
    b_add_string(&b, 0, len);
    return b_finish(&b, out);
}

static bool fx_concat(struct evctx *x, const struct fexpr *e, struct vals *out)
{
    struct builder b;
    b_init(x, e, &b);
    for (uint32_t i = 0; i < e->nargs; i++) {
        size_t start, len;
        if (!arg_text(x, e->args[i], b.bytes, &start, &len))
            return false;
        b.bytes->len = start + len;
    }
    b_add_string(&b, 0, b.bytes->len);
    return b_finish(&b, out);
}

void filter_getopt_spec(const char *s, size_t len, struct getopt_spec *out)
{
    memset(out, 0, sizeof(*out));
    out->colon = len > 0 && s[0] == ':';
    for (size_t i = out->colon ? 1 : 0; i < len; i++) {
        unsigned char opt = (unsigned char)s[i];
        if (opt == ':')
            continue;
        out->valid[opt] = true;
        if (i + 1 < len && s[i + 1] == ':') {
            out->with_arg[opt] = true;
            i++;
        }
    }
}

/* getopt(args, optstring), as libsinsp's multivalue getopt transformer:
 * short options only, stopping at "--" or the first non-option; each
 * option yields its letter ('?' when unknown) and, when it takes one, its
 * argument ("" when missing); with [c], only the last value of option c. */
static bool fx_getopt(struct evctx *x, const struct fexpr *e, struct vals *out)
{
    struct getopt_spec local;
    const struct getopt_spec *spec = e->opts;
    struct builder b;
    b_init(x, e, &b);
    if (!spec) {
        size_t start, len;
        if (!arg_text(x, e->args[1], b.bytes, &start, &len))
            return false;
        filter_getopt_spec(len ? b.bytes->data + start : "", len, &local);
        spec = &local;
        strbuf_reset(b.bytes);
    }
    struct vals args;
    if (!fx_eval(x, e->args[0], &args))
        return false;
    bool have = false;
    struct fval pick = {.kind = FV_STR, .s = "", .len = 0};
    for (uint32_t ai = 0; ai < args.n; ai++) {
        const struct fval *a = &args.v[ai];
        if (a->kind != FV_STR)
            break;
        const char *s = a->s;
        size_t n = a->len;
        if (n == 2 && s[0] == '-' && s[1] == '-')
            break;
        if (n > 2 && s[0] == '-' && s[1] == '-')
            continue;   /* long options are skipped */
        if (n < 2 || s[0] != '-')
            break;
        for (size_t i = 1; i < n; i++) {
            unsigned char opt = (unsigned char)s[i];
            if (opt == ':' || !spec->valid[opt]) {
                if (!e->selector)
                    b_add_value(&b, &(struct fval){.kind = FV_STR, .s = "?", .len = 1});
                continue;
            }
            bool match = !e->selector || opt == (unsigned char)e->selector;
            struct fval name = {.kind = FV_STR, .s = s + i, .len = 1};
            if (!spec->with_arg[opt]) {
                if (match) {
                    if (e->selector)
                        pick = name, have = true;
                    else
                        b_add_value(&b, &name);
                }
                continue;
            }
            struct fval val;
            bool has_val = true;
            if (i + 1 < n)
                val = (struct fval){.kind = FV_STR, .s = s + i + 1, .len = (uint32_t)(n - i - 1)};
            else if (ai + 1 < args.n && args.v[ai + 1].kind == FV_STR)
                val = args.v[++ai];
            else
                has_val = false;
            if (match) {
                if (e->selector) {
                    pick = has_val ? val : (struct fval){.kind = FV_STR, .s = "", .len = 0};
                    have = true;
                } else if (has_val) {
                    b_add_value(&b, &name);
                    b_add_value(&b, &val);
                } else {
                    b_add_value(&b, &(struct fval){.kind = FV_STR, .s = "", .len = 0});
                }
            }
            break;
        }
    }
    if (e->selector) {
        if (!have)
            return false;
        b_add_value(&b, &pick);
    }
    return b_finish(&b, out);
}

static bool fx_eval(struct evctx *x, const struct fexpr *e, struct vals *out)
{
    switch (e->kind) {
    case FX_FIELD: {
        const struct fval *v = fields_get(x, &e->field);
        if (v->kind == FV_ABSENT)
            return false;
        *out = (struct vals){v, 1};
        return true;
    }
    case FX_CONST: *out = (struct vals){&e->value, 1}; return true;
    case FX_LIST: {
        struct builder b;
        b_init(x, e, &b);
        for (uint32_t i = 0; i < e->nargs; i++) {
            struct vals v;
            if (!fx_eval(x, e->args[i], &v))
                return false;   /* one absent item: no list (libsinsp's list_check) */
            for (uint32_t k = 0; k < v.n; k++) {
                size_t start = put_text(b.bytes, &v.v[k]);
                b_add_string(&b, start, b.bytes->len - start);
            }
        }
        return b_finish(&b, out);
    }
    case FX_TOLOWER:
    case FX_TOUPPER:
    case FX_BASENAME:
    case FX_B64: return fx_string(x, e, out);
    case FX_LEN: return fx_len(x, e, out);
    case FX_JOIN: return fx_join(x, e, out);
    case FX_CONCAT: return fx_concat(x, e, out);
    case FX_GETOPT: return fx_getopt(x, e, out);
    }
    return false;
}

/* ---- checks and nodes ---- */

static bool eval_check(struct evctx *x, const struct check *c)
{
    struct strbuf *tmp = c->op == OP_REGEX ? &x->slots[c->utf8_slot].buf : NULL;
    struct vals l, r;
    if (c->lhs) {
        if (!fx_eval(x, c->lhs, &l))
            return false;
        if (c->op == OP_EXISTS)
            return true;
    } else {
        if (c->field.id == F_EVT_DIR && !c->rhs)   /* nearly every rule has one: a bit test */
            return c->dirs & (x->cls.dir == '>' ? FILTER_DIR_ENTER : FILTER_DIR_EXIT);
        if (c->field.any_ancestor) {
            /* proc.aname / proc.apid: some ancestor, parent upward, matches */
            for (unsigned level = 1; level <= PROC_ANCESTORS_MAX; level++) {
                struct fval v;
                fields_ancestor(x, &c->field, level, &v);
                if (v.kind == FV_ABSENT)
                    return false;
                if (c->op == OP_EXISTS || compare_const(c, &v, tmp))
                    return true;
            }
            return false;
        }
        const struct fval *v = fields_get(x, &c->field);
        if (c->op == OP_EXISTS)
            return v->kind != FV_ABSENT;
        if (v->kind == FV_ABSENT)
            return false;
        l = (struct vals){v, 1};
    }
    if (c->rhs) {
        if (!fx_eval(x, c->rhs, &r))
            return false;
        return compare_dyn(c, &l, &r);
    }
    if (c->lhs_list)
        return compare_list(c, &l);
    return compare_const(c, &l.v[0], tmp);
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
