/* append_output.c - Falco's append_output settings: read (the default,
 * none, or falco.yaml's section), checked, and handed to the loads that
 * follow (rules.h, append_output.h).
 */
#include "append_output.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "arena.h"
#include "diag.h"
#include "loader.h"
#include "render.h"
#include "yaml_tree.h"

/* The settings and what they hold, one arena; shared by reference. */
struct ao_owned {
    struct rules_append_output ao;   /* first: a rules_append_output * is one of these */
    struct arena arena;
    atomic_uint refs;
};

static pthread_mutex_t current_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ao_owned *current;

static struct ao_owned *owned_of(const struct rules_append_output *ao) { return (struct ao_owned *)ao; }

void rules_append_output_free(struct rules_append_output *ao)
{
    append_output_release(ao);
}

void append_output_release(const struct rules_append_output *ao)
{
    if (!ao)
        return;
    struct ao_owned *o = owned_of(ao);
    if (atomic_fetch_sub(&o->refs, 1) == 1) {
        arena_free(&o->arena);
        free(o);
    }
}

void rules_set_append_output(struct rules_append_output *ao)
{
    pthread_mutex_lock(&current_lock);
    struct ao_owned *old = current;
    current = ao ? owned_of(ao) : NULL;
    pthread_mutex_unlock(&current_lock);
    if (old)
        append_output_release(&old->ao);
}

const struct rules_append_output *append_output_acquire(void)
{
    pthread_mutex_lock(&current_lock);
    struct ao_owned *o = current;
    if (o)
        atomic_fetch_add(&o->refs, 1);
    pthread_mutex_unlock(&current_lock);
    return o ? &o->ao : NULL;
}

bool append_output_matches(const struct ao_entry *e, const char *name, const char *source, const char *const *tags,
                           size_t ntags)
{
    if (e->source && strcmp(e->source, source[0] ? source : "syscall") != 0)
        return false;
    if (e->rule && strcmp(e->rule, name) != 0)
        return false;
    for (size_t i = 0; i < e->ntags; i++) {
        bool has = false;
        for (size_t j = 0; j < ntags && !has; j++)
            has = strcmp(e->tags[i], tags[j]) == 0;
        if (!has)
            return false;
    }
    return true;
}

/* ---- reading ---- */

struct reader {
    struct ao_owned *o;
    const char *path;
    char *err;
    size_t errlen;
    bool failed;
};

static void fail_at(struct reader *r, const struct ynode *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail_at(struct reader *r, const struct ynode *n, const char *fmt, ...)
{
    if (r->failed)
        return;   /* the first problem is the one said */
    r->failed = true;
    int k = n ? snprintf(r->err, r->errlen, "%s:%u:%u: append_output: ", r->path, n->line, n->column)
              : snprintf(r->err, r->errlen, "%s: append_output: ", r->path);
    if (k < 0 || (size_t)k >= r->errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err + k, r->errlen - (size_t)k, fmt, ap);
    va_end(ap);
}

/* A mapping's key as text ("" for a key that is not a scalar). */
static const char *key_of(const struct ynode *k) { return k->kind == YN_SCALAR ? k->value : ""; }

/* A scalar's value with ${VAR} replaced by the environment's VAR (nothing
 * when unset) and $${...} kept as ${...}: Falco's yaml_helper.h
 * pre_process_env_vars, which it applies to every value of its
 * configuration. The text an expansion inserts is not expanded again. */
static const char *expand(struct reader *r, const struct ynode *n)
{
    struct strbuf out = {0};
    const char *v = n->value;
    size_t i = 0;
    while (i < n->len) {
        const char *close = v[i] == '$' ? memchr(v + i, '}', n->len - i) : NULL;
        if (close && i + 1 < n->len && v[i + 1] == '{') {
            char name[256];
            size_t nlen = (size_t)(close - (v + i + 2));
            snprintf(name, sizeof(name), "%.*s", (int)(nlen < sizeof(name) ? nlen : sizeof(name) - 1), v + i + 2);
            const char *value = getenv(name);
            if (value)
                strbuf_puts(&out, value);
            i = (size_t)(close - v) + 1;
        } else if (close && i + 2 < n->len && v[i + 1] == '$' && v[i + 2] == '{') {
            strbuf_putc(&out, '$');   /* $${x} is ${x}, taken as is */
            strbuf_append(&out, v + i + 2, (size_t)(close - (v + i + 2)) + 1);
            i = (size_t)(close - v) + 1;
        } else {
            strbuf_putc(&out, v[i++]);
        }
    }
    const char *s = out.failed ? NULL : arena_strndup(&r->o->arena, out.data ? out.data : "", out.len);
    strbuf_free(&out);
    if (!s)
        fail_at(r, n, "out of memory");
    return s;
}

static const char *scalar(struct reader *r, const struct ynode *n, const char *what)
{
    if (n->kind != YN_SCALAR) {
        fail_at(r, n, "%s: expected a string", what);
        return NULL;
    }
    return expand(r, n);
}

/* yaml-cpp's as<bool>: true/false, yes/no, on/off, y/n, any case. */
static int boolean(struct reader *r, const struct ynode *n, const char *what, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on", "y"}, *const no[] = {"false", "no", "off", "n"};
    const char *v = n->kind == YN_SCALAR ? expand(r, n) : NULL;
    for (size_t i = 0; v && i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0)
            return *out = true, 0;
        if (strcasecmp(v, no[i]) == 0)
            return *out = false, 0;
    }
    fail_at(r, n, "%s: expected true or false", what);
    return -1;
}

static void read_match(struct reader *r, const struct ynode *m, struct ao_entry *e)
{
    if (m->kind != YN_MAP) {
        fail_at(r, m, "match: expected a mapping (source, tags, rule)");
        return;
    }
    for (size_t i = 0; i + 1 < m->count; i += 2) {
        const struct ynode *k = m->items[i], *v = m->items[i + 1];
        if (strcmp(key_of(k), "source") == 0) {
            e->source = scalar(r, v, "match.source");
        } else if (strcmp(key_of(k), "rule") == 0) {
            e->rule = scalar(r, v, "match.rule");
        } else if (strcmp(key_of(k), "tags") == 0) {
            if (v->kind != YN_SEQ)
                continue;   /* Falco takes tags only from a sequence */
            e->tags = arena_alloc(&r->o->arena, (v->count ? v->count : 1) * sizeof(*e->tags));
            if (!e->tags) {
                fail_at(r, v, "out of memory");
                return;
            }
            for (size_t t = 0; t < v->count; t++)
                e->tags[e->ntags++] = scalar(r, v->items[t], "match.tags: each tag");
        } else {
            fail_at(r, k, "match: unknown key '%s' (source, tags, rule)", key_of(k));
        }
    }
}

static bool field_key_taken(const struct ao_entry *e, const char *key)
{
    for (size_t i = 0; i < e->nfields; i++)
        if (strcmp(e->fields[i].key, key) == 0)
            return true;
    return false;
}

/* extra_fields: `- NAME: FORMAT` or `- field.name`; a key given twice is
 * an error, as in Falco's decode. */
static void read_fields(struct reader *r, const struct ynode *s, struct ao_entry *e)
{
    if (s->kind != YN_SEQ) {
        fail_at(r, s, "extra_fields: expected a sequence of NAME: FORMAT or field names");
        return;
    }
    e->fields = arena_alloc(&r->o->arena, (s->count ? s->count : 1) * sizeof(*e->fields));
    if (!e->fields) {
        fail_at(r, s, "out of memory");
        return;
    }
    for (size_t i = 0; i < s->count && !r->failed; i++) {
        const struct ynode *it = s->items[i];
        struct ao_field f = {0};
        if (it->kind == YN_MAP && it->count == 2) {
            f.key = scalar(r, it->items[0], "extra_fields: a name");
            f.format = scalar(r, it->items[1], "extra_fields: a format");
        } else if (it->kind == YN_SCALAR) {
            f.key = expand(r, it);
            f.raw = true;
        } else {
            fail_at(r, it, "extra_fields: each item is NAME: FORMAT or a field name");
        }
        if (r->failed)
            return;
        if (field_key_taken(e, f.key)) {
            fail_at(r, it, "extra_fields: '%s' is given twice", f.key);
            return;
        }
        e->fields[e->nfields++] = f;
    }
}

static void read_entry(struct reader *r, const struct ynode *n, struct ao_entry *e)
{
    if (n->kind != YN_MAP) {
        fail_at(r, n, "each entry is a mapping (match, extra_output, extra_fields, suggested_output)");
        return;
    }
    for (size_t i = 0; i + 1 < n->count && !r->failed; i += 2) {
        const struct ynode *k = n->items[i], *v = n->items[i + 1];
        if (strcmp(key_of(k), "match") == 0)
            read_match(r, v, e);
        else if (strcmp(key_of(k), "extra_output") == 0)
            e->extra_output = scalar(r, v, "extra_output");
        else if (strcmp(key_of(k), "extra_fields") == 0)
            read_fields(r, v, e);
        else if (strcmp(key_of(k), "suggested_output") == 0)
            boolean(r, v, "suggested_output", &e->suggested);
        else
            fail_at(r, k, "unknown key '%s' (match, extra_output, extra_fields, suggested_output)", key_of(k));
    }
}

/* ---- checking: every format compiles, as Falco checks each rule's ---- */

struct check_ctx {
    struct reader *r;
    const struct ynode *node;
    const char *what;
};

static uint32_t no_slot(void *ctx, const struct fieldref *f)
{
    (void)ctx;
    (void)f;
    return 0;
}

static void check_error(void *ctx, size_t pos, const char *message)
{
    struct check_ctx *c = ctx;
    (void)pos;
    fail_at(c->r, c->node, "%s: %s", c->what, message);
}

static void check_entry(struct reader *r, const struct ao_entry *e, const struct ynode *n)
{
    struct arena scratch;
    arena_init(&scratch, 4096, SIZE_MAX);
    struct check_ctx c = {.r = r, .node = n};
    struct tmpl_env env = {.ctx = &c, .arena = &scratch, .slot = no_slot, .error = check_error};
    struct template t;
    c.what = "extra_output";
    if (e->extra_output && !r->failed)
        template_compile(&env, e->extra_output, strlen(e->extra_output), &t);
    if (!r->failed && template_compile(&env, "", 0, &t) == 0) {
        for (size_t i = 0; i < e->nfields && !r->failed; i++) {
            c.what = e->fields[i].raw ? "extra_fields" : e->fields[i].key;
            const char *fmt = e->fields[i].format ? e->fields[i].format : "";
            template_add_field(&env, &t, e->fields[i].key, strlen(e->fields[i].key), fmt, strlen(fmt),
                               e->fields[i].raw);
        }
    }
    arena_free(&scratch);
}

/* The list: a falco.yaml's append_output (none there: an empty list, as
 * Falco's default in code), or a document that is the list itself. */
static const struct ynode *the_list(struct reader *r, struct ynode **docs, size_t ndocs)
{
    const struct ynode *doc = ndocs ? docs[0] : NULL;
    if (!doc || ytree_is_null(doc))
        return NULL;
    if (doc->kind == YN_MAP) {
        const struct ynode *l = ytree_get(doc, "append_output");
        if (!l || ytree_is_null(l))
            return NULL;
        doc = l;
    }
    if (doc->kind != YN_SEQ) {
        fail_at(r, doc, "expected a sequence of entries (falco.yaml's append_output)");
        return NULL;
    }
    return doc;
}

struct file_text {
    const char *buf;
    size_t len;
    int files;
};

static void on_file(void *ctx, const char *path, const char *buf, size_t len)
{
    struct file_text *f = ctx;
    (void)path;
    f->buf = buf;
    f->len = len;
    f->files++;
}

static struct ao_owned *new_owned(void)
{
    struct ao_owned *o = calloc(1, sizeof(*o));
    if (o) {
        arena_init(&o->arena, 16 * 1024, 16u << 20);
        atomic_init(&o->refs, 1);
    }
    return o;
}

static int load_file(struct ao_owned *o, const char *path, char *err, size_t errlen)
{
    struct reader r = {.o = o, .path = path, .err = err, .errlen = errlen};
    struct rules_diag diag = {0};
    struct file_text f = {0};
    rules_read_path(&o->arena, path, &diag, on_file, &f);
    if (diag.errors) {
        const struct rules_diag_item *it = diag.count ? &diag.items[0] : NULL;
        snprintf(err, errlen, "%s: %s", path, it ? it->message : "cannot be read");
        rules_diag_free(&diag);
        return -1;
    }
    rules_diag_free(&diag);
    if (f.files != 1) {
        snprintf(err, errlen, "%s: expected one YAML file (falco.yaml, or its append_output list alone)", path);
        return -1;
    }
    struct ynode **docs;
    size_t ndocs;
    struct ytree_error ye;
    if (ytree_parse(&o->arena, f.buf, f.len, &docs, &ndocs, &ye) != 0) {
        snprintf(err, errlen, "%s:%u:%u: %s", path, ye.line, ye.column, ye.message);
        return -1;
    }
    const struct ynode *list = the_list(&r, docs, ndocs);
    if (list && !r.failed) {
        o->ao.entries = arena_alloc(&o->arena, (list->count ? list->count : 1) * sizeof(*o->ao.entries));
        if (!o->ao.entries)
            fail_at(&r, list, "out of memory");
        for (size_t i = 0; i < list->count && !r.failed; i++) {
            struct ao_entry *e = &o->ao.entries[o->ao.n++];
            memset(e, 0, sizeof(*e));
            read_entry(&r, list->items[i], e);
            if (!r.failed)
                check_entry(&r, e, list->items[i]);
        }
    }
    return r.failed ? -1 : 0;
}

struct rules_append_output *rules_append_output_load(const char *spec, char *err, size_t errlen)
{
    if (!spec || !spec[0]) {
        snprintf(err, errlen, "append_output: expected suggested, none or the path of a YAML file");
        return NULL;
    }
    struct ao_owned *o = new_owned();
    if (!o) {
        snprintf(err, errlen, "append_output: out of memory");
        return NULL;
    }
    if (strcmp(spec, "suggested") == 0) {   /* falco.yaml as Falco ships it */
        o->ao.entries = arena_alloc(&o->arena, sizeof(*o->ao.entries));
        if (o->ao.entries) {
            memset(o->ao.entries, 0, sizeof(*o->ao.entries));
            o->ao.entries[0].suggested = true;
            o->ao.n = 1;
        }
    } else if (strcmp(spec, "none") != 0 && load_file(o, spec, err, errlen) != 0) {
        append_output_release(&o->ao);
        return NULL;
    }
    if (strcmp(spec, "suggested") == 0 && !o->ao.entries) {
        snprintf(err, errlen, "append_output: out of memory");
        append_output_release(&o->ao);
        return NULL;
    }
    return &o->ao;
}

/* ---- applied to a rule (rule_loader_compiler.cpp:445-493) ---- */

void append_output_text(struct loader *L, const struct ao_target *t, struct tbuild *out)
{
    const struct frag *g = t->output;
    if (!g)
        return;
    for (size_t i = 0; L->append && i < L->append->n; i++) {
        const struct ao_entry *e = &L->append->entries[i];
        if (!append_output_matches(e, t->name, t->source ? t->source : "", t->tags, t->ntags))
            continue;
        if (e->extra_output) {
            tb_gen(out, g->file, g->node, " ", 1);
            tb_gens(out, g->file, g->node, e->extra_output);
        }
        /* init_falco_engine.cpp:26-36: " foo_bar=%foo.bar", one per field */
        for (size_t f = 0; e->suggested && fields_suggested(f); f++) {
            const char *name = fields_suggested(f);
            char fmt[128];
            int n = snprintf(fmt, sizeof(fmt), " %s=%%%s", name, name);
            for (int c = 1; c < n && fmt[c] != '='; c++)
                if (fmt[c] == '.')
                    fmt[c] = '_';
            tb_gen(out, g->file, g->node, fmt, (size_t)n);
        }
    }
    /* rule_loader_compiler.cpp:464-472: the container plugin adds what
     * %container.info stood for, so it becomes nothing */
    if (out->buf && strstr(out->buf, "%container.info")) {
        warn_at(L, *t->pos, "rule '%s': %%container.info is deprecated and no more useful, and will be dropped by "
                "Falco 1.0.0. The container plugin will automatically add required fields to the output message "
                "(here: append-output)", t->name);
        tb_remove_all(out, "%container.info");
    }
}

int append_output_fields(struct loader *L, const struct ao_target *t, const struct tmpl_env *env,
                         struct template *tpl)
{
    for (size_t i = 0; L->append && i < L->append->n; i++) {
        const struct ao_entry *e = &L->append->entries[i];
        if (!append_output_matches(e, t->name, t->source ? t->source : "", t->tags, t->ntags))
            continue;
        for (size_t f = 0; f < e->nfields; f++) {
            const struct ao_field *fd = &e->fields[f];
            const char *fmt = fd->format ? fd->format : "";
            if (template_add_field(env, tpl, fd->key, strlen(fd->key), fmt, strlen(fmt), fd->raw) != 0)
                return -1;
        }
    }
    return 0;
}
