/* ruleset.h - a loaded rule set as the engine uses it (rules.h keeps it
 * opaque): compiled rules, and for every event type the rules that can
 * match it, so an event tests only those.
 */
#ifndef SECCHECKD_RULES_RULESET_H
#define SECCHECKD_RULES_RULESET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "filter.h"
#include "render.h"
#include "rules.h"

struct seq_set;

struct rule {
    const char *name;
    const char *desc;
    enum rules_priority priority;
    bool enabled;
    const char *const *tags;      /* sorted, unique */
    size_t ntags;
    const char *tags_json;
    const char *file;
    unsigned line;
    struct cnode *cond;           /* NULL only while loading */
    struct template output;
    struct evtype_set types;      /* what the condition can match */
    bool all_types;               /* no evt.type restriction */
    bool sees_enter;              /* tests evt.dir: syscall enter points reach it */
    bool names_point;             /* tests gvisor.point: sees an exec's syscall exit too */
    const char *absent_fields;    /* what its condition needs that gVisor never reports (availability.h) */
    bool absent_disabled;         /* disabled for them */
};

/* Rule indices per event type: ids[off[t] .. off[t + 1]). */
struct rule_index {
    uint32_t off[EVTYPE_COUNT + 1];
    uint32_t *ids;
};

struct rule_set {
    struct arena arena;           /* everything below */
    struct rule *rules;
    size_t nrules;
    struct rule_set_stats stats;
    uint32_t nslots;              /* distinct fields read: the engine's value cache */
    struct rule_index exits;      /* exit points and every non-syscall point */
    struct rule_index enters;     /* syscall enter points */
    struct filter_owned *owned;   /* what conditions hold outside the arena (compiled regexes) */
    struct seq_set *seq;          /* the sequences (rules/sequence.h); in the arena, NULL: none */
};

/* What the process table must keep for the enabled rules (PROC_KEEP_*,
 * proctab.h): rules/needs.c. */
unsigned rule_set_process_keep(const struct rule_set *rs);

#endif
