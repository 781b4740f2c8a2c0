/* availability.h - what gVisor can report for a rule's condition: a rule
 * whose condition reads a field gVisor never reports (FIELD_NEVER: evt.buffer,
 * thread.cap_*, an evt.arg that no message of the rule's event types
 * carries) can never be true as written, so it is loaded disabled, with
 * one warning naming it and those fields, unless the absent-fields mode is
 * "run" (rules_set_absent_mode, rules.h). A field gVisor reports only in
 * newer runsc releases (FIELD_NEWER_RUNSC) disables nothing.
 *
 * The loader calls availability_apply once per rule, after it compiles.
 */
#ifndef SECCHECKD_RULES_AVAILABILITY_H
#define SECCHECKD_RULES_AVAILABILITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rule_set;
struct rule;

/* Records on r (in rs's arena) the fields its condition needs that gVisor
 * never reports, and disables it in the default mode. True when the loader
 * must warn: the warning's text is in msg. */
bool availability_apply(struct rule_set *rs, struct rule *r, char *msg, size_t msglen);

/* The message types that can carry events of evtype type (rules/needs.c:
 * runsc 2022-12's schematized point, else its raw one; the sentry points
 * for execve, clone, procexit, container). Up to max into out; how many. */
size_t needs_type_messages(unsigned type, uint16_t *out, size_t max);

#endif
