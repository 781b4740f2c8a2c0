/* alert_tally.h - alerts counted per rule and priority, on the loop thread.
 *
 * Batches come back from the writer with the alerts their events raised
 * (batch.h); the pipeline adds them here, where the metrics endpoint and the
 * exit summary read them without touching the writer's state. Rule names are
 * copied: a SIGHUP may replace the rule set while its alerts are counted.
 */
#ifndef SECCHECKD_ALERT_TALLY_H
#define SECCHECKD_ALERT_TALLY_H

#include <stddef.h>
#include <stdint.h>

#include "rules.h"

struct alert_tally_rule {
    char *name;
    uint64_t by_priority[RULES_PRIORITY_COUNT];
    uint64_t suppressed;              /* held back by --alerts-rate */
    uint64_t over_ceiling;            /* held back by --alerts-ceiling */
};

struct alert_tally {
    struct alert_tally_rule *rules;   /* open addressing on the name; NULL names are free */
    size_t cap;                       /* a power of two, or 0 */
    size_t count;
    uint64_t by_priority[RULES_PRIORITY_COUNT];
    uint64_t suppressed;
    uint64_t over_ceiling;
    uint64_t lost;                    /* alerts the rules could not keep (no memory) */
    uint64_t lines_failed;            /* alerts not written to --alerts-out */
    uint64_t untallied;               /* counted in the totals only: no memory for their rule's entry */
};

/* Adds every alert and suppression of l. Never fails: without memory for a
 * new rule's entry, its alerts still count in the totals. */
void alert_tally_add(struct alert_tally *t, const struct alert_list *l);
void alert_tally_free(struct alert_tally *t);

uint64_t alert_tally_total(const struct alert_tally *t);

#endif
