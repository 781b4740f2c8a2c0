/* load_text.c - the loader's texts and names: a keyed hash map, texts built
 * from YAML scalars that remember where each byte came from, and the
 * splicing of lists into conditions as Falco does it.
 *
 * Falco (rule_loader_compiler.cpp, resolve_list) substitutes a list's name in
 * a condition's text with its items joined by ", " (an item holding a blank
 * and not starting with a quote gets double quotes): wherever the name
 * stands between blanks, parentheses, commas, '=' or the ends of the text.
 * The filter language then reads the items as it reads any value, so
 * '"cat"' is cat, and an empty list takes a comma away with it. Doing the
 * same here gives Falco's meaning to every such case, and an error inside
 * an item is reported at the item.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "diag.h"
#include "loader.h"

/* ---- SipHash-1-3, keyed once per process ---- */

static uint64_t sip_key[2];
static pthread_once_t sip_once = PTHREAD_ONCE_INIT;

static void sip_init(void)
{
    uint64_t k[2] = {0, 0};
    if (getrandom(k, sizeof(k), GRND_NONBLOCK) != (ssize_t)sizeof(k)) {
        /* no entropy yet (early boot): time and pid, still unknown to a file written beforehand */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        k[0] = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid();
        k[1] = (uint64_t)ts.tv_sec * 0xC2B2AE3D27D4EB4Full ^ (uint64_t)(uintptr_t)&ts;
    }
    sip_key[0] = k[0];
    sip_key[1] = k[1];
}

static inline uint64_t rotl64(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

#define SIPROUND                                                                                                      \
    do {                                                                                                              \
        v0 += v1;                                                                                                     \
        v1 = rotl64(v1, 13);                                                                                          \
        v1 ^= v0;                                                                                                     \
        v0 = rotl64(v0, 32);                                                                                          \
        v2 += v3;                                                                                                     \
        v3 = rotl64(v3, 16);                                                                                          \
        v3 ^= v2;                                                                                                     \
        v0 += v3;                                                                                                     \
        v3 = rotl64(v3, 21);                                                                                          \
        v3 ^= v0;                                                                                                     \
        v2 += v1;                                                                                                     \
        v1 = rotl64(v1, 17);                                                                                          \
        v1 ^= v2;                                                                                                     \
        v2 = rotl64(v2, 32);                                                                                          \
    } while (0)

static uint64_t siphash13(const void *tag, const char *key, size_t len)
{
    pthread_once(&sip_once, sip_init);
    uint64_t k0 = sip_key[0] ^ (uint64_t)(uintptr_t)tag, k1 = sip_key[1];
    uint64_t v0 = 0x736f6d6570736575ull ^ k0, v1 = 0x646f72616e646f6dull ^ k1;
    uint64_t v2 = 0x6c7967656e657261ull ^ k0, v3 = 0x7465646279746573ull ^ k1;
    const unsigned char *p = (const unsigned char *)key;
    size_t whole = len & ~(size_t)7;
    for (size_t i = 0; i < whole; i += 8) {
        uint64_t m;
        memcpy(&m, p + i, 8);
        v3 ^= m;
        SIPROUND;
        v0 ^= m;
    }
    uint64_t b = (uint64_t)len << 56;
    for (size_t i = 0; i < (len & 7); i++)
        b |= (uint64_t)p[whole + i] << (8 * i);
    v3 ^= b;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    uint64_t h = v0 ^ v1 ^ v2 ^ v3;
    return h ? h : 1;   /* 0 marks an empty slot */
}

static bool slot_is(const struct lmap_slot *s, uint64_t h, const void *tag, const char *key, size_t len)
{
    return s->hash == h && s->tag == tag && s->len == len && (len == 0 || memcmp(s->key, key, len) == 0);
}

long lmap_get(const struct lmap *m, const void *tag, const char *key, size_t len)
{
    if (!m->cap || len > UINT32_MAX)
        return -1;
    uint64_t h = siphash13(tag, key, len);
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        const struct lmap_slot *s = &m->slots[i];
        if (!s->hash)
            return -1;
        if (slot_is(s, h, tag, key, len))
            return (long)s->value;
    }
}

static void lmap_insert(struct lmap *m, const struct lmap_slot *e)
{
    size_t i = e->hash & (m->cap - 1);
    while (m->slots[i].hash && !slot_is(&m->slots[i], e->hash, e->tag, e->key, e->len))
        i = (i + 1) & (m->cap - 1);
    if (!m->slots[i].hash)
        m->n++;
    m->slots[i] = *e;
}

int lmap_put(struct lmap *m, const void *tag, const char *key, size_t len, uint32_t value)
{
    if (len > UINT32_MAX)
        return -1;
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        struct lmap g = {.slots = calloc(cap, sizeof(struct lmap_slot)), .cap = cap};
        if (!g.slots)
            return -1;
        for (size_t i = 0; i < m->cap; i++)
            if (m->slots[i].hash)
                lmap_insert(&g, &m->slots[i]);
        free(m->slots);
        *m = g;
    }
    struct lmap_slot e = {.tag = tag, .key = key, .len = (uint32_t)len, .value = value,
                          .hash = siphash13(tag, key, len)};
    lmap_insert(m, &e);
    return 0;
}

void lmap_free(struct lmap *m)
{
    free(m->slots);
    memset(m, 0, sizeof(*m));
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

/* The value is the source minus quotes, indentation and escapes, with line
 * breaks folded: each value byte is matched to the next equal source byte
 * (a folded space to a line break). Exact for plain, quoted and block
 * scalars without escapes; near the spot otherwise. */
void scalar_pos(const struct lfile *f, const struct ynode *n, size_t local, unsigned *line, unsigned *col)
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

/* ---- texts ---- */

static bool tb_reserve(struct tbuild *t, size_t more)
{
    if (t->oom)
        return false;
    if (t->len + more + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + more + 1) {
            if (cap > SIZE_MAX / 2) {
                t->oom = true;
                return false;
            }
            cap *= 2;
        }
        char *b = realloc(t->buf, cap);
        if (!b) {
            t->oom = true;
            return false;
        }
        t->buf = b;
        t->cap = cap;
    }
    return true;
}

static void tb_piece(struct tbuild *t, const struct lfile *f, const struct ynode *n, size_t src, bool gen)
{
    if (t->np && t->p[t->np - 1].start == t->len) {   /* the last piece got no byte: reuse it */
        t->p[t->np - 1] = (struct tpiece){.start = t->len, .file = f, .node = n, .src = src, .gen = gen};
        return;
    }
    if (t->np == t->pcap) {
        size_t cap = t->pcap ? t->pcap * 2 : 16;
        struct tpiece *p = realloc(t->p, cap * sizeof(*p));
        if (!p) {
            t->oom = true;
            return;
        }
        t->p = p;
        t->pcap = cap;
    }
    t->p[t->np++] = (struct tpiece){.start = t->len, .file = f, .node = n, .src = src, .gen = gen};
}

static void tb_bytes(struct tbuild *t, const char *s, size_t len)
{
    if (!tb_reserve(t, len))
        return;
    memcpy(t->buf + t->len, s, len);
    t->len += len;
    t->buf[t->len] = '\0';
}

void tb_node(struct tbuild *t, const struct lfile *f, const struct ynode *n, size_t off, size_t len)
{
    if (!len || t->oom)
        return;
    tb_piece(t, f, n, off, false);
    tb_bytes(t, n->value + off, len);
}

/* Generated text reported at byte src of the node's value. */
static void tb_gen_at(struct tbuild *t, const struct lfile *f, const struct ynode *n, size_t src, const char *s,
                      size_t len)
{
    if (!len || t->oom)
        return;
    tb_piece(t, f, n, src, true);
    tb_bytes(t, s, len);
}

void tb_gen(struct tbuild *t, const struct lfile *f, const struct ynode *n, const char *s, size_t len)
{
    tb_gen_at(t, f, n, 0, s, len);
}

void tb_truncate(struct tbuild *t, size_t len)
{
    if (len >= t->len)
        return;
    t->len = len;
    if (t->buf)
        t->buf[len] = '\0';
    while (t->np && t->p[t->np - 1].start >= len)
        t->np--;
}

void tb_free(struct tbuild *t)
{
    free(t->buf);
    free(t->p);
    memset(t, 0, sizeof(*t));
}

/* The piece holding byte off (the last one starting at or before it). */
static size_t tb_piece_at(const struct tbuild *t, size_t off)
{
    size_t lo = 0, hi = t->np;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->p[mid].start <= off)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

void tb_where(const struct tbuild *t, size_t off, const char **file, unsigned *line, unsigned *col)
{
    if (!t->np) {
        *file = "rules";
        *line = *col = 0;
        return;
    }
    const struct tpiece *p = &t->p[tb_piece_at(t, off)];
    size_t local = p->gen ? p->src : p->src + (off >= p->start ? off - p->start : 0);
    *file = p->file->name;
    scalar_pos(p->file, p->node, local, line, col);
}

void tb_join(struct tbuild *t, const struct ftext *f)
{
    for (const struct frag *g = f->head; g; g = g->next) {
        if (g != f->head)
            tb_gen_at(t, g->file, g->node, g->off, " ", 1);
        tb_node(t, g->file, g->node, g->off, g->len);
    }
}

/* Copies in's bytes [from, to) with their positions. *pi: a piece index at
 * or before from (moves forward). */
static void tb_copy(struct tbuild *out, const struct tbuild *in, size_t from, size_t to, size_t *pi)
{
    while (from < to && !out->oom) {
        while (*pi + 1 < in->np && in->p[*pi + 1].start <= from)
            (*pi)++;
        const struct tpiece *p = &in->p[*pi];
        size_t end = *pi + 1 < in->np ? in->p[*pi + 1].start : in->len;
        if (end > to)
            end = to;
        size_t src = p->gen ? p->src : p->src + (from - p->start);
        tb_piece(out, p->file, p->node, src, p->gen);
        tb_bytes(out, in->buf + from, end - from);
        from = end;
    }
}

void tb_copy_range(struct tbuild *out, const struct tbuild *in, size_t from, size_t to)
{
    size_t pi = 0;
    if (in->np && from < to)
        tb_copy(out, in, from, to, &pi);
}

void tb_remove_all(struct tbuild *t, const char *needle)
{
    size_t n = strlen(needle);
    if (!t->buf || !n || !strstr(t->buf, needle))
        return;
    struct tbuild out = {0};
    size_t at = 0, pi = 0;
    for (const char *hit; (hit = strstr(t->buf + at, needle)) != NULL;) {
        size_t off = (size_t)(hit - t->buf);
        tb_copy(&out, t, at, off, &pi);
        at = off + n;
    }
    tb_copy(&out, t, at, t->len, &pi);
    if (!out.buf && tb_reserve(&out, 0))   /* nothing left: an empty text, still terminated */
        out.buf[0] = '\0';
    tb_free(t);
    *t = out;
}

/* ---- splicing lists ---- */

/* Falco's quote_item: an item holding a blank, not starting with a quote,
 * goes in double quotes. */
static void splice_item(struct tbuild *out, const struct litem *it)
{
    const struct ynode *n = it->node;
    bool quote = n->len && memchr(n->value, ' ', n->len) && n->value[0] != '"' && n->value[0] != '\'';
    if (quote)
        tb_gen(out, it->file, n, "\"", 1);
    tb_node(out, it->file, n, 0, n->len);
    if (quote)
        tb_gen_at(out, it->file, n, n->len, "\"", 1);
}

struct spliced_match {
    size_t pos, end;
    const struct llist *list;
};

static int cmp_match(const void *a, const void *b)
{
    const struct spliced_match *x = a, *y = b;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    return x->list->index < y->list->index ? -1 : x->list->index > y->list->index;
}

/* Where names holding a blank or a delimiter occur in s, as Falco finds
 * them (the characters around are delimiters or the ends), sorted, without
 * overlaps. NULL when there are none (or out of memory: L->oom). */
static struct spliced_match *spaced_matches(struct loader *L, const char *s, size_t len, size_t *count)
{
    struct spliced_match *m = NULL;
    size_t n = 0, cap = 0;
    *count = 0;
    if (!L->spaced_lists)
        return NULL;
    for (size_t i = 0; i < L->nlists; i++) {
        const struct llist *l = L->lists[i];
        if (!l->needs_quoting_scan || !l->name_len)
            continue;
        for (const char *p = s; (p = memmem(p, len - (size_t)(p - s), l->name, l->name_len)); p++) {
            size_t at = (size_t)(p - s), end = at + l->name_len;
            if ((at > 0 && !list_delim(s[at - 1])) || (end < len && !list_delim(s[end])))
                continue;
            if (vec_grow(L, &m, &cap, n, sizeof(*m)) != 0) {
                free(m);
                return NULL;
            }
            m[n++] = (struct spliced_match){.pos = at, .end = end, .list = l};
        }
    }
    if (!n)
        return NULL;
    qsort(m, n, sizeof(*m), cmp_match);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!k || m[i].pos >= m[k - 1].end)
            m[k++] = m[i];
    *count = k;
    return m;
}

/* Whether out ends with a list operator and blanks: `proc.name in shells`.
 * Falco's text would then be `in sh, bash`, which its parser refuses (and a
 * one-item list works as if it had parentheses): seccheckd gives the list
 * its parentheses, as its rules always allowed. */
static bool after_list_operator(const struct tbuild *out)
{
    static const char *const ops[] = {"in", "intersects", "pmatch"};
    size_t k = out->len;
    while (k > 0 && (out->buf[k - 1] == ' ' || out->buf[k - 1] == '\t' || out->buf[k - 1] == '\n' ||
                     out->buf[k - 1] == '\r'))
        k--;
    if (k == out->len)
        return false;
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(ops[i]);
        if (k >= n && memcmp(out->buf + k - n, ops[i], n) == 0 &&
            (k == n || out->buf[k - n - 1] == ' ' || out->buf[k - n - 1] == '\t' || out->buf[k - n - 1] == '\n' ||
             out->buf[k - n - 1] == '\r' || out->buf[k - n - 1] == ')'))
            return true;
    }
    return false;
}

/* Splices list l in place of in's bytes [at, end); returns where copying
 * resumes in in (past a comma an empty list takes away). */
static size_t splice_one(struct loader *L, struct llist *l, const struct tbuild *in, size_t at, size_t end,
                         size_t *pi, struct tbuild *out)
{
    l->used = true;
    L->spliced += l->expanded.n;
    if (L->spliced > RULES_MAX_LIST_ITEMS) {
        if (!L->spliced_exceeded) {
            const char *file;
            unsigned line, col;
            tb_where(in, at, &file, &line, &col);
            diag_add(L->diag, true, file, line, col, "the lists spliced into conditions hold more than %u items "
                     "(here list '%s', %zu items): use a list in a macro, which rules share", RULES_MAX_LIST_ITEMS,
                     l->name, l->expanded.n);
        }
        L->spliced_exceeded = true;
        return end;
    }
    while (*pi + 1 < in->np && in->p[*pi + 1].start <= at)
        (*pi)++;
    const struct tpiece *here = &in->p[*pi];
    size_t here_src = here->gen ? here->src : here->src + (at - here->start);
    bool parens = after_list_operator(out);
    tb_gen_at(out, here->file, here->node, here_src, parens ? " (" : " ", parens ? 2 : 1);
    if (parens) {
        for (size_t k = 0; k < l->expanded.n; k++) {
            if (k)
                tb_gen(out, l->expanded.v[k].file, l->expanded.v[k].node, ", ", 2);
            splice_item(out, &l->expanded.v[k]);
        }
        tb_gen_at(out, here->file, here->node, here_src, ") ", 2);
        return end;
    }
    if (l->expanded.n == 0) {
        /* Falco takes a comma away: the one before, else the one after. */
        size_t k = out->len - 1;
        while (k > 0 && (out->buf[k - 1] == ' ' || out->buf[k - 1] == '\t' || out->buf[k - 1] == '\n' ||
                         out->buf[k - 1] == '\r'))
            k--;
        if (k > 0 && out->buf[k - 1] == ',') {
            tb_truncate(out, k - 1);
            tb_gen_at(out, here->file, here->node, here_src, "  ", 2);
            return end;
        }
        tb_gen_at(out, here->file, here->node, here_src, " ", 1);
        size_t j = end;
        while (j < in->len && (in->buf[j] == ' ' || in->buf[j] == '\t' || in->buf[j] == '\n' || in->buf[j] == '\r'))
            j++;
        return j < in->len && in->buf[j] == ',' ? j + 1 : end;
    }
    for (size_t k = 0; k < l->expanded.n; k++) {
        const struct litem *it = &l->expanded.v[k];
        if (k)
            tb_gen(out, it->file, it->node, ", ", 2);
        splice_item(out, it);
    }
    tb_gen_at(out, here->file, here->node, here_src, " ", 1);
    return end;
}

void splice_lists(struct loader *L, const struct tbuild *in, struct tbuild *out)
{
    if (in->oom || !in->len) {
        out->oom |= in->oom;
        return;
    }
    size_t nm;
    struct spliced_match *m = spaced_matches(L, in->buf, in->len, &nm);
    size_t mi = 0, pi = 0, copy_from = 0, i = 0;
    const char *s = in->buf;
    while (i < in->len && !out->oom) {
        if (mi < nm && m[mi].pos == i) {
            tb_copy(out, in, copy_from, i, &pi);
            i = copy_from = splice_one(L, (struct llist *)m[mi].list, in, i, m[mi].end, &pi, out);
            while (mi < nm && m[mi].pos < i)
                mi++;
            continue;
        }
        if (list_delim(s[i])) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < in->len && !list_delim(s[j]) && !(mi < nm && m[mi].pos == j))
            j++;
        long li = j == in->len || list_delim(s[j]) ? lmap_get(&L->list_names, NULL, s + i, j - i) : -1;
        if (li >= 0) {
            tb_copy(out, in, copy_from, i, &pi);
            i = copy_from = splice_one(L, L->lists[li], in, i, j, &pi, out);
            while (mi < nm && m[mi].pos < i)
                mi++;
            continue;
        }
        i = j;
    }
    tb_copy(out, in, copy_from, in->len, &pi);
    out->oom |= in->oom;
    free(m);
}
