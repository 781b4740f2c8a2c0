/* cli.h - command-line helpers shared by seccheckd, its subcommands and the
 * tools: strict number parsing with errors that name the option and the
 * accepted range, and getopt error messages under the program's own name.
 *
 * Every message starts with "PROG: " where PROG is the program as the user
 * typed it ("seccheckd", "seccheckd export", "seccheck-loadgen"), never
 * argv[0]'s full path. */
#ifndef SECCHECKD_CLI_H
#define SECCHECKD_CLI_H

#include <stdint.h>

/* Parses a decimal unsigned integer in [min, max] (010 is ten, not octal
 * eight; 0x10 is refused); prints "PROG: --OPT: ..." and returns -1 otherwise. opt is the option's
 * name without dashes ("conn"). */
int cli_parse_uint(const char *prog, const char *opt, const char *val, uint64_t min, uint64_t max, uint64_t *out);

/* --log-level VALUE: error, warn, info or debug, set for the process; 0,
 * or -1 after printing "PROG: --log-level: expected ..." on stderr. */
int cli_set_log_level(const char *prog, const char *value);

/* Same for a float (seconds, rates). */
int cli_parse_double(const char *prog, const char *opt, const char *val, double min, double max, double *out);

/* 90, 90s, 15m, 12h, 7d -> seconds in *out; -1 (nothing printed: the
 * caller names its option) if not a duration or above max. */
int cli_parse_duration_s(const char *val, uint64_t max, uint64_t *out);

/* 1048576, 512K, 100M, 2G, 1T (either case) -> bytes; -1 as above. */
int cli_parse_bytes(const char *val, uint64_t max, uint64_t *out);

/* The optstring prefix that makes getopt_long silent on errors (with
 * opterr = 0) and tell a missing value (':') from an unknown option ('?'). */
#define CLI_GETOPT_QUIET ":"

/* After getopt_long returned '?' or ':' (quiet mode, see above): prints
 * "PROG: unknown option '--x'" (or which option needs a value, or takes
 * none) and "Try 'PROG --help'." on stderr. */
void cli_report_getopt_error(const char *prog, int ch, char *const *argv);

/* Prints "PROG: PROBLEM, got 'VALUE' (try --help)" (without the got part
 * when value is NULL) on stderr; returns 2, a usage error's exit status. */
int cli_usage_error(const char *prog, const char *problem, const char *value);

/* "s" unless n is 1: "%llu connection%s". */
static inline const char *cli_plural(uint64_t n)
{
    return n == 1 ? "" : "s";
}

#endif
