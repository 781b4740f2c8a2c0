#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int cli_parse_uint(const char *prog, const char *opt, const char *val, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(val, &end, 0);
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
