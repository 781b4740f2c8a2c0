/* regex_re2.h - the `regex` operator's matcher: RE2, as libsinsp uses it.
 *
 * Why RE2: it is what falcosecurity/libs compiles `regex` values with
 * (sinsp_filtercheck.cpp: re2::RE2(value, RE2::POSIX), matched with
 * ANCHOR_BOTH), so a pattern means here what it means in Falco; and it runs
 * in time linear in the text with no backtracking, so neither a hostile
 * pattern in a rules file nor a hostile value from a sandbox can make one
 * event cost exponential time. Each pattern is compiled once, at load, with
 * its memory bounded (REGEX_MAX_MEM); matching allocates nothing once RE2's
 * DFA cache holds the states the workload reaches.
 *
 * Semantics: POSIX egrep syntax as RE2 reads it (RE2::POSIX: no \d, \b or
 * other Perl classes; leftmost-longest), UTF-8, and the whole value must
 * match: `proc.name regex 'ba.*'` is true for bash and false for dbash.
 */
#ifndef SECCHECKD_FILTER_REGEX_RE2_H
#define SECCHECKD_FILTER_REGEX_RE2_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Longest pattern accepted (bytes): longer ones are refused at load. */
#define REGEX_MAX_PATTERN 4096
/* RE2's memory budget per pattern (its compiled program and DFA cache):
 * a pattern whose program does not fit is refused at load; a DFA that
 * fills it is reset by RE2, and matching stays linear. With at most
 * REGEX_MAX_PATTERNS patterns per rule set, regexes hold at most 256 MiB
 * however hostile the values they meet (a few KiB each in practice). */
#define REGEX_MAX_MEM (256 << 10)
#define REGEX_MAX_PATTERNS 1024

struct regex;

/* Compiles pattern[0..len); NULL with a message in err (RE2's reason, or
 * the size limit) when it cannot. */
struct regex *regex_compile(const char *pattern, size_t len, char *err, size_t errlen);

/* Whether the whole of s[0..len) matches. s must be valid UTF-8 (the
 * caller sanitizes, as libsinsp does). */
bool regex_full_match(const struct regex *re, const char *s, size_t len);

void regex_free(struct regex *re);

#ifdef __cplusplus
}
#endif

#endif
