/* cli.h - strict number parsing for command-line options, with errors that
 * name the option and the accepted range. */
#ifndef SECCHECKD_CLI_H
#define SECCHECKD_CLI_H

#include <stdint.h>

/* Parses a decimal (or 0x/0 prefixed) unsigned integer in [min, max];
 * prints "PROG: --OPT: ..." and returns -1 otherwise. */
int cli_parse_uint(const char *prog, const char *opt, const char *val, uint64_t min, uint64_t max, uint64_t *out);

/* Same for a float (seconds, rates). */
int cli_parse_double(const char *prog, const char *opt, const char *val, double min, double max, double *out);

#endif
