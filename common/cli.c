#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

int cli_parse_uint(const char *prog, const char *opt, const char *val, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(val, &end, 10);
    if (errno || end == val || *end || val[0] == '-' || v < min || v > max) {
        fprintf(stderr, "%s: --%s: expected a whole number from %llu to %llu, got '%s'\n", prog, opt,
                (unsigned long long)min, (unsigned long long)max, val);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_double(const char *prog, const char *opt, const char *val, double min, double max, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(val, &end);
    if (errno || end == val || *end || !(v >= min && v <= max)) {
        fprintf(stderr, "%s: --%s: expected a number from %g to %g, got '%s'\n", prog, opt, min, max, val);
        return -1;
    }
    *out = v;
    return 0;
}

/* A suffix letter and what it multiplies by; the table ends at suffix 0. */
struct unit {
    char suffix;
    uint64_t scale;
};

/* Digits, then at most one suffix from units: the value in *out, -1 if not
 * that shape or above max. */
static int parse_scaled(const char *v, const struct unit *units, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || end == v || !isdigit((unsigned char)v[0]))
        return -1;
    uint64_t scale = 1;
    for (const struct unit *u = units; *end && u->suffix; u++)
        if (*end == u->suffix) {
            scale = u->scale;
            end++;
            break;
        }
    if (*end || n > max / scale)
        return -1;
    *out = n * scale;
    return 0;
}

int cli_parse_duration_s(const char *v, uint64_t max, uint64_t *out)
{
    static const struct unit units[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}, {0, 0}};
    return parse_scaled(v, units, max, out);
}

int cli_parse_bytes(const char *v, uint64_t max, uint64_t *out)
{
    static const struct unit units[] = {
        {'K', 1ull << 10}, {'k', 1ull << 10}, {'M', 1ull << 20}, {'m', 1ull << 20},
        {'G', 1ull << 30}, {'g', 1ull << 30}, {'T', 1ull << 40}, {'t', 1ull << 40}, {0, 0},
    };
    return parse_scaled(v, units, max, out);
}

void cli_report_getopt_error(const char *prog, int ch, char *const *argv)
{
    /* getopt has stepped past the offending word (and its value, if any). */
    const char *word = optind > 0 ? argv[optind - 1] : "";
    bool is_long = strncmp(word, "--", 2) == 0;
    if (ch == ':' && is_long)
        fprintf(stderr, "%s: option '%s' needs a value\n", prog, word);
    else if (ch == ':')
        fprintf(stderr, "%s: option '-%c' needs a value\n", prog, optopt);
    else if (is_long && optopt)
        fprintf(stderr, "%s: option '%.*s' takes no value\n", prog, (int)strcspn(word, "="), word);
    else if (is_long)
        fprintf(stderr, "%s: unknown option '%s'\n", prog, word);
    else
        fprintf(stderr, "%s: unknown option '-%c'\n", prog, optopt);
    fprintf(stderr, "Try '%s --help'.\n", prog);
}

int cli_usage_error(const char *prog, const char *problem, const char *value)
{
    fprintf(stderr, "%s: %s", prog, problem);
    if (value)
        fprintf(stderr, ", got '%s'", value);
    fprintf(stderr, " (try --help)\n");
    return 2;
}

int cli_set_log_level(const char *prog, const char *value)
{
    int level = log_level_parse(value);
    if (level < 0) {
        fprintf(stderr, "%s: --log-level: expected error, warn, info or debug, got '%s'\n", prog, value);
        return -1;
    }
    log_set_level((enum log_level)level);
    return 0;
}
