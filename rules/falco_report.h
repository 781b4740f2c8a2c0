/* falco_report.h - `seccheckd rules check --falco`: what a Falco user's
 * rules files (falcosecurity/rules' and their own) do on gVisor. Each rule
 * falls in one class, the first that applies in this order:
 *
 *   off          enabled: false in the rules files (as in Falco)
 *   disabled     its condition needs a field gVisor never reports
 *                (availability.h; --rules-absent-fields run: "runs anyway")
 *   never true   no event of its types can satisfy its condition as
 *                loaded (as in Falco: a list left empty for the user).
 *                Every event type the loader knows is a gVisor point (a
 *                syscall's raw one at least), so no rule misses one.
 *   newer runsc  it reads what the target runsc does not send (a newer
 *                release does): it raises nothing on this runsc
 *   runs         everything it reads is sent
 *
 * then what changes in behaviour against Falco (only what this build
 * does), and one summary line with the count of each class. */
#ifndef SECCHECKD_RULES_FALCO_REPORT_H
#define SECCHECKD_RULES_FALCO_REPORT_H

#include <stddef.h>
#include <stdio.h>

struct rule_set;
struct runsc_target;

enum falco_class {
    FALCO_RUNS,
    FALCO_NEWER_RUNSC,
    FALCO_ABSENT,          /* disabled for fields gVisor never reports */
    FALCO_ABSENT_RUN,      /* the same, run anyway (--rules-absent-fields run) */
    FALCO_NEVER_TRUE,      /* no event of its types can satisfy its condition (an empty list...) */
    FALCO_OFF,
    FALCO_CLASS_COUNT
};

/* The word the report prints for a class ("runs", "newer runsc"...). */
const char *falco_class_name(enum falco_class c);

/* Prints the report of rs on target to out; the rules of each class in
 * counts (NULL: not wanted). 0, or -1 out of memory (said on stderr). */
int falco_report_print(const struct rule_set *rs, const struct runsc_target *target, FILE *out,
                       size_t counts[FALCO_CLASS_COUNT]);

#endif
