/* render.h - a rule's output template and the alert it becomes.
 *
 * Falco's output syntax: text with %field and %(field) references (every
 * field checked when the rules load). Rendering gives Falco's three forms:
 * the text ("HH:MM:SS.nnnnnnnnn: Priority " + the filled template, absent
 * fields as <NA>), output_fields (a JSON object: one key per field as
 * spelled, sorted, plus evt.time as integer nanoseconds; numbers as
 * numbers, absent as null) and the whole alert as one JSON line with the
 * keys in Falco's (alphabetical) order. Every value from the sandbox is cut
 * to output_field_max bytes (marked "...") and JSON-escaped; the condition
 * saw the whole value.
 */
#ifndef SECCHECKD_RULES_RENDER_H
#define SECCHECKD_RULES_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "filter.h"
#include "rules.h"
#include "strbuf.h"

struct tmpl_part {
    const char *text;           /* literal text before the field */
    uint32_t len;
    bool has_field;
    struct fieldref field;
    uint16_t capture1;          /* a sequence's %STEP.FIELD: its capture + 1 (0: the event's own field) */
};

struct template;

struct tmpl_key {
    const char *key;            /* the field as spelled: "proc.aname[2]", or an extra field's name */
    uint32_t len;
    struct fieldref field;
    uint16_t capture1;          /* as in tmpl_part */
    /* An append_output extra field NAME: FORMAT (rules.h): its value is
     * that template's text, a string; NULL: the field's own value. */
    const struct template *format;
};

struct template {
    struct tmpl_part *parts;
    size_t nparts;
    struct tmpl_key *keys;      /* sorted by key, unique, evt.time among them */
    size_t nkeys;
};

/* What compiling a template asks of the loader (errors at byte offsets of
 * the text, field slots). */
struct tmpl_env {
    void *ctx;
    struct arena *arena;
    uint32_t (*slot)(void *ctx, const struct fieldref *f);
    void (*error)(void *ctx, size_t pos, const char *message);
    /* Optional (sequences): a reference naming an earlier step's field,
     * "write.fd.name" (name_len up to the field's argument). 1 when it is
     * one (*capture1 set, *out its field), 0 when it is not (a field of the
     * event), -1 after reporting an error. */
    int (*step_field)(void *ctx, const char *ref, size_t reflen, size_t name_len, size_t pos, struct fieldref *out,
                      uint16_t *capture1);
};

/* 0, or -1 after reporting every bad field. */
int template_compile(const struct tmpl_env *env, const char *text, size_t len, struct template *out);

/* Adds a key to t's output_fields only, as Falco's append_output
 * extra_fields do (formats.cpp): raw, key is a field ("evt.hostname") and
 * its value the field's; else key is a name of one's own and its value the
 * text of format (a template), a string. A key t has already (the
 * output's, or an earlier extra's) takes the new value, as in Falco. 0, or
 * -1 after reporting the problem. */
int template_add_field(const struct tmpl_env *env, struct template *t, const char *key, size_t keylen,
                       const char *format, size_t flen, bool raw);

/* A rule as the renderer needs it. */
struct render_rule {
    const char *name;
    enum rules_priority priority;
    const struct template *output;
    const char *tags_json;      /* JSON array, sorted */
    /* A sequence's alert: its steps' fields (capture1 - 1), and its
     * RULES_SEQUENCE_KEY object; an alert of a connection whose partial
     * matches were evicted: how many (RULES_EVICTED_KEY). */
    const struct fval *(*capture)(void *ctx, unsigned i);
    void *capture_ctx;
    const char *sequence_json;
    uint64_t evicted;
};

struct render_out {
    struct strbuf *text;        /* the "output" string */
    struct strbuf *fields;      /* the output_fields object */
    struct strbuf *json;        /* the whole alert line */
};

/* Fills the three buffers (reset first) for the context's event; a
 * suppressed count above 0 goes in the line as RULES_SUPPRESSED_KEY, never
 * in output_fields. */
void render_alert(struct evctx *x, const struct render_rule *r, const char *hostname, size_t field_max,
                  uint64_t suppressed, struct render_out *out);

/* The tags as a sorted JSON array (strings escaped). */
void render_tags_json(struct strbuf *out, const char *const *tags, size_t n);

#endif
