/* options.h - seccheck-loadgen's command line: what to replay, how hard,
 * and how to report it. Parsing only; no I/O beyond messages on stderr. */
#ifndef SECCHECKD_LOADGEN_OPTIONS_H
#define SECCHECKD_LOADGEN_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOADGEN_PROG "seccheck-loadgen"
/* One sender thread (and one fd) per connection, as each sandbox is its
 * own process; beyond this a single load generator stops being realistic. */
#define LOADGEN_MAX_CONNECTIONS 4096

enum loadgen_mode {
    MODE_SENTRY,    /* non-blocking writev, retry with backoff, then drop */
    MODE_BLOCK,     /* wait for room: never drops, measures the drain rate */
};

struct loadgen_options {
    const char *socket;
    const char **traces;          /* argv pointers, in command-line order */
    size_t ntraces;
    unsigned connections;
    enum loadgen_mode mode;
    uint64_t messages;            /* per connection; 0 = one pass of its trace */
    int64_t duration_ns;          /* 0 = no time limit */
    double rate;                  /* messages/s per connection; 0 = flat out */
    unsigned retries;             /* sentry mode: writev attempts after EAGAIN */
    int64_t backoff_ns;           /* first sleep between retries */
    int64_t backoff_max_ns;       /* retries sleep at most this long */
    int64_t handshake_timeout_ns;
    const char *bench_name;       /* NULL = derived from mode/conns/traces */
    bool json;
};

enum loadgen_parse_result {
    PARSE_RUN,       /* options valid: go */
    PARSE_EXIT_OK,   /* --help printed */
    PARSE_USAGE,     /* a message is on stderr; exit 2 */
};

/* Parses argv into o. o->traces is malloc'd: free it with
 * loadgen_options_free whatever the result. */
enum loadgen_parse_result loadgen_parse_args(int argc, char **argv, struct loadgen_options *o);
void loadgen_options_free(struct loadgen_options *o);

const char *loadgen_mode_name(enum loadgen_mode mode);

/* Parses "25us", "10ms", "1.5s", "500ns" (also "m" for minutes) into
 * nanoseconds within [min_ns, max_ns]. A bare number is taken in bare_unit
 * ("s") when given; with bare_unit NULL only "0" may go without a unit.
 * Prints "seccheck-loadgen: --OPT: ..." and returns -1 when invalid. */
int loadgen_parse_duration(const char *opt, const char *val, const char *bare_unit, int64_t min_ns,
                           int64_t max_ns, int64_t *out);

#endif
