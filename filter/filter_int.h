/* filter_int.h - what the compiler (filter.c) and the evaluator
 * (filter_eval.c) of conditions share; not part of rules/'s interface. */
#ifndef SECCHECKD_FILTER_INT_H
#define SECCHECKD_FILTER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "filter.h"

/* The fieldref id of the condition's scratch slots: no field has it, so
 * the loader's slot table gives each (side, depth, use) one slot of the
 * engine's value cache, shared by every check of the rule set (a check's
 * scratch is dead once it has been evaluated). */
#define FILTER_SCRATCH_ID ((uint16_t)0xffff)
#define FILTER_SCRATCH_UTF8 (1 << 20)   /* index of the regex sanitizing buffer */

static inline int32_t filter_scratch_index(unsigned side, unsigned depth, unsigned use)
{
    return (int32_t)(side * 4096 + depth * 2 + use);
}

/* getopt(3)'s optstring, decoded: which option characters exist, which
 * take an argument, and whether a leading ':' makes a missing argument ':'
 * rather than '?'. */
struct getopt_spec {
    bool colon;
    bool valid[256];
    bool with_arg[256];
};

void filter_getopt_spec(const char *s, size_t len, struct getopt_spec *out);

/* ASCII case folding, as libsinsp's tolower/strcasestr in the C locale. */
static inline unsigned char filter_fold(unsigned char c, bool icase) { return icase && c >= 'A' && c <= 'Z' ? c + 32 : c; }

bool filter_glob_match(const char *p, size_t plen, const char *s, size_t slen, bool icase);

/* Whether value v satisfies check c against its constants (c->vals). */
bool filter_compare(const struct check *c, const struct fval *v);

/* A string against c's constants (evt.type's sets are computed with it). */
bool filter_compare_str(const struct check *c, const char *s, size_t len);

/* Sign-and-magnitude order. */
int filter_fnum_cmp(struct fnum a, struct fnum b);

/* libsinsp's sinsp_numparser::tryparseu64 (sscanf "%lu" and nothing after
 * it): what its evt.num invariant reasons about. */
bool filter_tryparse_u64(const char *s, size_t len, uint64_t *out);

#endif
