#include "render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_word(char c) { return is_alpha(c) || (c >= '0' && c <= '9') || c == '_'; }

/* The length of a field reference at s: name ('.' part)+ ('[' arg ']')?. */
static size_t field_ref_len(const char *s, size_t len, size_t *name_len)
{
    size_t i = 0, parts = 0;
    while (i < len && is_alpha(s[i])) {
        size_t st = i;
        while (i < len && is_word(s[i]))
            i++;
        parts++;
        if (i + 1 < len && s[i] == '.' && is_alpha(s[i + 1]) && i > st)
            i++;
        else
            break;
    }
    if (parts < 2)
        return 0;
    *name_len = i;
    if (i < len && s[i] == '[') {
        const char *close = memchr(s + i, ']', len - i);
        if (close)
            i = (size_t)(close - s) + 1;
    }
    return i;
}

static int key_cmp(const void *a, const void *b)
{
    const struct tmpl_key *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int r = memcmp(x->key, y->key, n);
    return r ? r : (x->len < y->len ? -1 : x->len > y->len);
}

static int resolve(const struct tmpl_env *env, const char *ref, size_t reflen, size_t name_len, size_t pos,
                   struct fieldref *out, uint16_t *capture1)
{
    char err[300];
    *capture1 = 0;
    if (env->step_field) {
        int rc = env->step_field(env->ctx, ref, reflen, name_len, pos, out, capture1);
        if (rc != 0)
            return rc > 0 ? 0 : -1;
    }
    bool has_arg = reflen > name_len;
    const char *arg = has_arg ? ref + name_len + 1 : NULL;
    size_t arglen = has_arg ? reflen - name_len - 2 : 0;
    if (fields_resolve(ref, name_len, arg, arglen, has_arg, env->arena, out, err, sizeof(err)) != 0) {
        env->error(env->ctx, pos, err);
        return -1;
    }
    if (out->any_ancestor) {
        snprintf(err, sizeof(err), "'%.*s' needs an index in an output (%.*s[1] is the parent)", (int)name_len, ref,
                 (int)name_len, ref);
        env->error(env->ctx, pos, err);
        return -1;
    }
    out->slot = env->slot(env->ctx, out);
    return 0;
}

int template_compile(const struct tmpl_env *env, const char *text, size_t len, struct template *out)
{
    memset(out, 0, sizeof(*out));
    /* The parts and keys point into the rule set's own copy of the text. */
    char *copy = arena_alloc(env->arena, len + 1);
    if (!copy) {
        env->error(env->ctx, 0, "out of memory");
        return -1;
    }
    memcpy(copy, text, len);
    copy[len] = '\0';
    text = copy;
    size_t cap_parts = 1, cap_keys = 2;
    for (size_t i = 0; i < len; i++)
        if (text[i] == '%') {
            cap_parts++;
            cap_keys++;
        }
    out->parts = arena_alloc(env->arena, cap_parts * sizeof(*out->parts));
    out->keys = arena_alloc(env->arena, cap_keys * sizeof(*out->keys));
    if (!out->parts || !out->keys) {
        env->error(env->ctx, 0, "out of memory");
        return -1;
    }
    int rc = 0;
    size_t lit = 0, i = 0;
    while (i < len) {
        if (text[i] != '%') {
            i++;
            continue;
        }
        size_t ref_start = i + 1, reflen = 0, name_len = 0, end;
        if (i + 1 < len && text[i + 1] == '(') {
            const char *close = memchr(text + i + 2, ')', len - i - 2);
            if (!close) {
                env->error(env->ctx, i, "'%(' without its ')'");
                return -1;
            }
            ref_start = i + 2;
            reflen = (size_t)(close - (text + ref_start));
            size_t inner = field_ref_len(text + ref_start, reflen, &name_len);
            if (inner != reflen) {
                env->error(env->ctx, ref_start, "expected a field name inside %(...)");
                rc = -1;
                i = (size_t)(close - text) + 1;
                continue;
            }
            end = (size_t)(close - text) + 1;
        } else {
            reflen = field_ref_len(text + ref_start, len - ref_start, &name_len);
            if (!reflen) {   /* a lone '%': literal text */
                i++;
                continue;
            }
            end = ref_start + reflen;
        }
        struct tmpl_part *p = &out->parts[out->nparts];
        memset(p, 0, sizeof(*p));
        p->text = text + lit;
        p->len = (uint32_t)(i - lit);
        if (resolve(env, text + ref_start, reflen, name_len, ref_start, &p->field, &p->capture1) != 0) {
            rc = -1;
        } else {
            p->has_field = true;
            out->nparts++;
            struct tmpl_key *k = &out->keys[out->nkeys++];
            memset(k, 0, sizeof(*k));
            k->key = text + ref_start;
            k->len = (uint32_t)reflen;
            k->field = p->field;
            k->capture1 = p->capture1;
        }
        lit = i = end;
    }
    if (rc != 0)
        return rc;
    struct tmpl_part *tail = &out->parts[out->nparts++];
    memset(tail, 0, sizeof(*tail));
    tail->text = text + lit;
    tail->len = (uint32_t)(len - lit);
    /* evt.time is always there (as integer nanoseconds). */
    struct tmpl_key *k = &out->keys[out->nkeys++];
    memset(k, 0, sizeof(*k));
    k->key = "evt.time";
    k->len = 8;
    if (fields_resolve("evt.time", 8, NULL, 0, false, env->arena, &k->field, (char[8]){0}, 8) == 0)
        k->field.slot = env->slot(env->ctx, &k->field);
    qsort(out->keys, out->nkeys, sizeof(*out->keys), key_cmp);
    size_t u = 0;
    for (size_t j = 0; j < out->nkeys; j++)
        if (u == 0 || key_cmp(&out->keys[u - 1], &out->keys[j]) != 0)
            out->keys[u++] = out->keys[j];
    out->nkeys = u;
    return 0;
}

int template_add_field(const struct tmpl_env *env, struct template *t, const char *key, size_t keylen,
                       const char *format, size_t flen, bool raw)
{
    struct tmpl_key k = {.key = arena_strndup(env->arena, key, keylen), .len = (uint32_t)keylen};
    if (!k.key) {
        env->error(env->ctx, 0, "out of memory");
        return -1;
    }
    if (raw) {
        size_t name_len = 0, reflen = field_ref_len(key, keylen, &name_len);
        if (reflen != keylen) {
            env->error(env->ctx, 0, "expected a field name");
            return -1;
        }
        if (resolve(env, key, keylen, name_len, 0, &k.field, &k.capture1) != 0)
            return -1;
    } else {
        struct template *sub = arena_alloc(env->arena, sizeof(*sub));
        if (!sub) {
            env->error(env->ctx, 0, "out of memory");
            return -1;
        }
        if (template_compile(env, format, flen, sub) != 0)
            return -1;
        k.format = sub;
    }
    for (size_t i = 0; i < t->nkeys; i++)
        if (key_cmp(&t->keys[i], &k) == 0) {
            t->keys[i] = k;
            return 0;
        }
    struct tmpl_key *keys = arena_alloc(env->arena, (t->nkeys + 1) * sizeof(*keys));
    if (!keys) {
        env->error(env->ctx, 0, "out of memory");
        return -1;
    }
    size_t at = 0;
    while (at < t->nkeys && key_cmp(&t->keys[at], &k) < 0)
        at++;
    memcpy(keys, t->keys, at * sizeof(*keys));
    keys[at] = k;
    memcpy(keys + at + 1, t->keys + at, (t->nkeys - at) * sizeof(*keys));
    t->keys = keys;
    t->nkeys++;
    return 0;
}

/* ---- rendering ---- */

/* The longest prefix of at most max bytes that does not split a UTF-8
 * sequence. */
static size_t cut_len(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    size_t n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
        n--;
    return n;
}

static void text_value(struct strbuf *out, const struct fval *v, size_t max)
{
    if (v->kind != FV_STR) {
        fields_render_text(out, v);
        return;
    }
    size_t n = cut_len(v->s, v->len, max);
    utf8_sanitize(out, v->s, n);
    if (n < v->len)
        strbuf_puts(out, "...");
}

static void json_value(struct strbuf *out, const struct fval *v, size_t max, struct strbuf *tmp)
{
    switch (v->kind) {
    case FV_ABSENT: strbuf_puts(out, "null"); return;
    case FV_INT: strbuf_put_i64(out, v->i); return;
    case FV_UINT: strbuf_put_u64(out, v->u); return;
    case FV_BOOL: strbuf_puts(out, v->b ? "true" : "false"); return;
    case FV_IP:
        strbuf_reset(tmp);
        fields_render_text(tmp, v);
        json_render_string(out, tmp->data ? tmp->data : "", tmp->len);
        return;
    case FV_STR: {
        size_t n = cut_len(v->s, v->len, max);
        if (n == v->len) {
            json_render_string(out, v->s, n);
            return;
        }
        strbuf_reset(tmp);
        strbuf_append(tmp, v->s, n);
        strbuf_puts(tmp, "...");
        json_render_string(out, tmp->data, tmp->len);
        return;
    }
    }
}

void render_tags_json(struct strbuf *out, const char *const *tags, size_t n)
{
    strbuf_putc(out, '[');
    for (size_t i = 0; i < n; i++) {
        if (i)
            strbuf_putc(out, ',');
        json_render_string(out, tags[i], strlen(tags[i]));
    }
    strbuf_putc(out, ']');
}

/* A field's value for the alert: the event's, or a sequence step's. */
static const struct fval *value_of(struct evctx *x, const struct render_rule *r, const struct fieldref *f,
                                   uint16_t capture1)
{
    if (capture1 && r->capture)
        return r->capture(r->capture_ctx, capture1 - 1u);
    return fields_get(x, f);
}

/* A template's text with the event's values (Falco's OF_NORMAL), or a
 * sequence step's where the template names one. */
static void render_text(struct strbuf *out, struct evctx *x, const struct render_rule *r, const struct template *t,
                        size_t field_max)
{
    for (size_t i = 0; i < t->nparts; i++) {
        const struct tmpl_part *p = &t->parts[i];
        strbuf_append(out, p->text, p->len);
        if (p->has_field)
            text_value(out, value_of(x, r, &p->field, p->capture1), field_max);
    }
}

void render_alert(struct evctx *x, const struct render_rule *r, const char *hostname, size_t field_max,
                  uint64_t suppressed, struct render_out *out)
{
    const struct template *t = r->output;
    struct strbuf *text = out->text, *fields = out->fields, *json = out->json;
    strbuf_reset(text);
    strbuf_reset(fields);
    strbuf_reset(json);
    fields_format_time(text, x->time_ns, false);
    strbuf_puts(text, ": ");
    strbuf_puts(text, rules_priority_name(r->priority));
    strbuf_putc(text, ' ');
    render_text(text, x, r, t, field_max);
    /* json doubles as scratch for cut values until it is written below */
    strbuf_putc(fields, '{');
    for (size_t i = 0; i < t->nkeys; i++) {
        const struct tmpl_key *k = &t->keys[i];
        if (fields->len > 1)
            strbuf_putc(fields, ',');
        json_render_string(fields, k->key, k->len);
        strbuf_putc(fields, ':');
        if (k->format) {   /* an extra field's text: json is scratch here too */
            strbuf_reset(json);
            render_text(json, x, r, k->format, field_max);
            json_render_string(fields, json->data ? json->data : "", json->len);
        } else if (fields_json_time(&k->field) && !k->capture1) {   /* Falco: every time form as nanoseconds */
            strbuf_put_i64(fields, x->time_ns);
        } else {
            json_value(fields, value_of(x, r, &k->field, k->capture1), field_max, json);
        }
    }
    strbuf_putc(fields, '}');
    strbuf_reset(json);
    struct rules_alert_extras extras = {.suppressed = suppressed, .evicted = r->evicted, .sequence = r->sequence_json};
    rules_alert_json_ex(json, hostname, r->name, rules_priority_name(r->priority), x->time_ns,
                        text->data ? text->data : "", text->len, fields->data ? fields->data : "{}", r->tags_json,
                        &extras);
}

/* {"hostname":..,"output":..,"output_fields":..,"priority":..,"rule":..
 * without the closing brace: the keys every alert's JSON starts with, in
 * Falco's (sorted) order. */
static void json_head(struct strbuf *json, const char *hostname, const char *output, size_t output_len,
                      const char *output_fields, const char *priority, const char *rule)
{
    strbuf_puts(json, "{\"hostname\":");
    json_render_string(json, hostname, strlen(hostname));
    strbuf_puts(json, ",\"output\":");
    json_render_string(json, output, output_len);
    strbuf_puts(json, ",\"output_fields\":");
    strbuf_puts(json, output_fields);
    strbuf_puts(json, ",\"priority\":");
    json_render_string(json, priority, strlen(priority));
    strbuf_puts(json, ",\"rule\":");
    json_render_string(json, rule, strlen(rule));
}

/* Falco's JSON of an internal message (falco_outputs.cpp:186-210): its
 * output is the message alone, which the text line holds between the
 * priority and the fields' " (": HH:MM:SS.nnnnnnnnn: Debug MESSAGE (k=v ...). */
static void internal_json(struct strbuf *json, const char *hostname, const char *rule, const char *priority,
                          int64_t time_ns, const char *output, size_t output_len, const char *output_fields)
{
    const char *msg = output, *end = output + output_len;
    const char *colon = memmem(output, output_len, ": ", 2);
    const char *space = colon ? memchr(colon + 2, ' ', (size_t)(end - colon - 2)) : NULL;
    if (space)
        msg = space + 1;
    for (const char *p = end - 1; p > msg; p--)
        if (p[0] == '(' && p[-1] == ' ') {
            end = p - 1;
            break;
        }
    json_head(json, hostname, msg, (size_t)(end - msg), output_fields, priority, rule);
    strbuf_puts(json, ",\"source\":\"internal\",\"time\":\"");
    fields_format_time(json, time_ns, true);
    strbuf_puts(json, "\"}");
}

void rules_alert_json(struct strbuf *json, const char *hostname, const char *rule, const char *priority,
                      int64_t time_ns, const char *output, size_t output_len, const char *output_fields,
                      const char *tags, uint64_t suppressed)
{
    struct rules_alert_extras extras = {.suppressed = suppressed};
    rules_alert_json_ex(json, hostname, rule, priority, time_ns, output, output_len, output_fields, tags, &extras);
}

void rules_alert_json_ex(struct strbuf *json, const char *hostname, const char *rule, const char *priority,
                         int64_t time_ns, const char *output, size_t output_len, const char *output_fields,
                         const char *tags, const struct rules_alert_extras *x)
{
    if (strcmp(rule, RULES_DROP_RULE) == 0) {
        internal_json(json, hostname, rule, priority, time_ns, output, output_len, output_fields);
        return;
    }
    json_head(json, hostname, output, output_len, output_fields, priority, rule);
    /* seccheckd's own keys in their sorted places: after rule, before source */
    if (x->evicted) {
        strbuf_puts(json, ",\"" RULES_EVICTED_KEY "\":");
        strbuf_put_u64(json, x->evicted);
    }
    if (x->sequence && x->sequence[0]) {
        strbuf_puts(json, ",\"" RULES_SEQUENCE_KEY "\":");
        strbuf_puts(json, x->sequence);
    }
    if (x->suppressed) {
        strbuf_puts(json, ",\"" RULES_SUPPRESSED_KEY "\":");
        strbuf_put_u64(json, x->suppressed);
    }
    strbuf_puts(json, ",\"source\":\"syscall\"");
    strbuf_puts(json, ",\"tags\":");
    strbuf_puts(json, tags);
    strbuf_puts(json, ",\"time\":\"");
    fields_format_time(json, time_ns, true);
    strbuf_puts(json, "\"}");
}
