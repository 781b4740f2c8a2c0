/* rules_diff.h - what a reload changed in the rules.
 *
 * A digest of a rule set is, per rule and per sequence, its name, whether
 * it is enabled, and a fingerprint of what it does: a rule's compiled
 * condition (the macros and lists it uses expanded, its exceptions
 * included), output, priority, desc and tags; a sequence's steps (each
 * condition, its comparisons with earlier steps, count), unless, by,
 * within, output, priority, desc and tags. Two digests compared give the
 * rules and the sequences added, removed and changed (a list or macro edit
 * changes every rule and sequence that uses it) and the ones enabled or
 * disabled, for SIGHUP's log line. The digest owns its strings: it
 * outlives the set it was made from (which the writer thread frees once
 * the next set is installed).
 */
#ifndef SECCHECKD_RULES_DIFF_H
#define SECCHECKD_RULES_DIFF_H

#include <stddef.h>

#include "rules.h"

struct rules_digest;

/* NULL when out of memory. */
struct rules_digest *rules_digest_of(const struct rule_set *rs);
void rules_digest_free(struct rules_digest *d);

/* One line for the log, into out (cut to outlen, always terminated):
 *   "2 rules added (A, B), 1 removed (C), 1 changed (D), 1 enabled (E);
 *    19 of 20 rules enabled (was 18 of 19)"
 * or "no rule changed; 19 of 20 rules enabled". When either set has
 * sequences, theirs follow in the same words:
 *   "1 rule changed (D); 1 sequence added (S); 20 of 20 rules enabled,
 *    3 of 3 sequences enabled (was 2 of 2)"
 * or "no rule or sequence changed; 20 of 20 rules enabled, 3 of 3
 * sequences enabled". Names are listed up to a few per kind, then "and N
 * more". Returns the number of rules and sequences added, removed,
 * changed, enabled or disabled (0: the same rules and sequences). */
size_t rules_digest_describe(const struct rules_digest *before, const struct rules_digest *after, char *out,
                             size_t outlen);

#endif
