/* availability.c - rules that need fields gVisor never reports
 * (availability.h). */
#include "availability.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "filter.h"
#include "ruleset.h"

static atomic_int absent_mode = RULES_ABSENT_DISABLE;

void rules_set_absent_mode(enum rules_absent_mode m) { atomic_store(&absent_mode, (int)m); }

enum rules_absent_mode rules_get_absent_mode(void) { return (enum rules_absent_mode)atomic_load(&absent_mode); }

int rules_absent_mode_parse(const char *s, enum rules_absent_mode *out)
{
    if (strcmp(s, "disable") == 0)
        *out = RULES_ABSENT_DISABLE;
    else if (strcmp(s, "run") == 0)
        *out = RULES_ABSENT_RUN;
    else
        return -1;
    return 0;
}

/* Whether some event type the rule can match carries evt.arg f: Falco's
 * parameter of that name where the event has one, else the message field. */
static bool arg_reported(const struct rule *r, const struct fieldref *f)
{
    if (r->all_types)
        return true;   /* every type: some message may have it */
    for (unsigned t = 0; t < EVTYPE_COUNT; t++) {
        if (!evtype_set_has(&r->types, t))
            continue;
        uint16_t msgs[4];
        size_t n = needs_type_messages(t, msgs, 4);
        for (size_t i = 0; i < n; i++) {
            int list = f->falco ? fields_args_list(msgs[i], t) : -1;
            if (list >= 0 && f->falco[list]) {
                if (fields_args_reported(list, f->falco[list] - 1))
                    return true;
            } else if (msgs[i] <= DECODE_TYPE_MAX && f->arg[msgs[i]]) {
                return true;
            }
        }
    }
    return false;
}

struct never {
    const struct rule *rule;
    const char *names[16];        /* distinct, in the order met */
    size_t count;
    bool more;                    /* and others past those */
    char argname[16][80];         /* evt.arg.NAME spelled out */
};

static void note(struct never *nv, const char *name)
{
    for (size_t i = 0; i < nv->count; i++)
        if (strcmp(nv->names[i], name) == 0)
            return;
    if (nv->count < sizeof(nv->names) / sizeof(nv->names[0]))
        nv->names[nv->count++] = name;
    else
        nv->more = true;
}

static void visit(void *ctx, const struct fieldref *f)
{
    struct never *nv = ctx;
    if (fields_avail(f) == FIELD_NEVER) {
        note(nv, fields_name(f));
        return;
    }
    if (f->id != F_EVT_ARG || arg_reported(nv->rule, f))
        return;
    char text[80];
    if (f->index >= 0)
        snprintf(text, sizeof(text), "evt.arg[%d]", (int)f->index);
    else
        snprintf(text, sizeof(text), "evt.arg.%.64s", f->argname ? f->argname : "?");
    for (size_t i = 0; i < nv->count; i++)
        if (strcmp(nv->names[i], text) == 0)
            return;
    if (nv->count == sizeof(nv->names) / sizeof(nv->names[0])) {
        nv->more = true;
        return;
    }
    snprintf(nv->argname[nv->count], sizeof(nv->argname[nv->count]), "%s", text);
    note(nv, nv->argname[nv->count]);
}

const char *rule_set_rule_absent(const struct rule_set *rs, size_t i, bool *disabled)
{
    const struct rule *r = &rs->rules[i];
    if (disabled)
        *disabled = r->absent_disabled;
    return r->absent_fields;
}

bool availability_apply(struct rule_set *rs, struct rule *r, char *msg, size_t msglen)
{
    if (!r->cond)
        return false;
    struct never nv = {.rule = r};
    filter_fields(r->cond, visit, &nv);
    if (!nv.count)
        return false;
    char list[1024];
    size_t len = 0;
    list[0] = '\0';
    for (size_t i = 0; i < nv.count && len < sizeof(list); i++) {
        int n = snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "", nv.names[i]);
        if (n < 0)
            break;
        len += (size_t)n;
    }
    if (nv.more && len < sizeof(list))
        snprintf(list + len, sizeof(list) - len, " and more");
    r->absent_fields = arena_strndup(&rs->arena, list, strlen(list));
    if (!r->enabled)
        return false;   /* off already: nothing to say */
    if (rules_get_absent_mode() == RULES_ABSENT_RUN) {
        snprintf(msg, msglen, "rule '%s' needs fields gVisor never reports: %s; it runs (--rules-absent-fields run), "
                 "though comparisons on them are always false", r->name, list);
        return true;
    }
    r->enabled = false;
    r->absent_disabled = true;
    rs->stats.rules_absent += 1;
    snprintf(msg, msglen, "rule '%s' is disabled: its condition needs fields gVisor never reports: %s "
             "(--rules-absent-fields run runs it anyway)", r->name, list);
    return true;
}
