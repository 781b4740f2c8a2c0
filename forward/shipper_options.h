/* shipper_options.h - what seccheckd's three long-running shippers share on
 * their command lines and in their retries: `seccheckd forward --to
 * postgresql://` (forward.c), `seccheckd forward --to nats://`
 * (jetstream/publish.c) and `seccheckd central` (jetstream/consume.c).
 *
 * Each shipper's getopt_long table ends with SHIPPER_LONG_OPTIONS, its
 * switch handles its own options and --help, and its default case hands
 * everything else to shipper_take_option. So the shared options keep one
 * name, range, default and message in all three, and a failure waits as
 * long before its retry in each.
 */
#ifndef SECCHECKD_FORWARD_SHIPPER_OPTIONS_H
#define SECCHECKD_FORWARD_SHIPPER_OPTIONS_H

#include <getopt.h>
#include <stdint.h>

#include "host_id.h"

struct shipper_options {
    const char *metrics_listen;     /* --metrics-listen ADDR; NULL: off */
    uint64_t retry_min_ms;          /* --retry-min-ms: the first wait after a failure */
    uint64_t retry_max_ms;          /* --retry-max-ms: the longest, never below retry_min_ms */
    uint64_t stats_s;               /* --stats-interval: progress lines this often; 0: never */
    uint64_t timeout_ms;            /* --timeout-ms (the NATS shippers only) */
};

#define SHIPPER_OPTIONS_DEFAULT {.retry_min_ms = 500, .retry_max_ms = 30000, .stats_s = 60, .timeout_ms = 5000}

/* What getopt_long returns for the shared options: above every character,
 * so that none can clash with a letter a shipper picks for its own. */
enum shipper_option_code {
    SHIPPER_OPT_METRICS_LISTEN = 0x100,
    SHIPPER_OPT_RETRY_MIN_MS,
    SHIPPER_OPT_RETRY_MAX_MS,
    SHIPPER_OPT_STATS_INTERVAL,
    SHIPPER_OPT_LOG_LEVEL,
    SHIPPER_OPT_TIMEOUT_MS,
};

/* The shared entries of a getopt_long table, before its {NULL, 0, NULL, 0}.
 * --help stays 'h' (so is -h, in the optstring): each shipper prints its
 * own usage. */
#define SHIPPER_LONG_OPTIONS                                                   \
    {"metrics-listen", required_argument, NULL, SHIPPER_OPT_METRICS_LISTEN},   \
    {"retry-min-ms", required_argument, NULL, SHIPPER_OPT_RETRY_MIN_MS},       \
    {"retry-max-ms", required_argument, NULL, SHIPPER_OPT_RETRY_MAX_MS},       \
    {"stats-interval", required_argument, NULL, SHIPPER_OPT_STATS_INTERVAL},   \
    {"log-level", required_argument, NULL, SHIPPER_OPT_LOG_LEVEL},             \
    {"help", no_argument, NULL, 'h'}

/* The NATS shippers' one more: connecting, and waiting for an answer. */
#define SHIPPER_TIMEOUT_OPTION {"timeout-ms", required_argument, NULL, SHIPPER_OPT_TIMEOUT_MS}

/* Takes one answer ch of getopt_long (its value in optarg) that is not one
 * of the shipper's own: a shared option is set (0). A value out of range,
 * an unknown option or one missing its value is reported on stderr under
 * prog (-1: the caller exits with 2, a usage error). */
int shipper_take_option(struct shipper_options *o, const char *prog, int ch, char *const *argv);

/* After getopt_long: -1 (reported) if a word is left that is no option. */
int shipper_check_no_operands(const char *prog, int argc, char *const *argv);

#define SHIPPER_HOSTNAME_MAX 255

/* The forwarders' identity: id from given (--host-id; NULL: the default,
 * host_id.h), and this machine's hostname ("" when unknown), which the
 * central hosts table shows beside it. 0, or -1 reported. */
int shipper_identify_host(const char *prog, const char *given, char id[HOST_ID_MAX + 1],
                          char hostname[SHIPPER_HOSTNAME_MAX + 1]);

/* The checks made last: retry_max_ms raised to retry_min_ms, and the
 * metrics address, refused before anything is opened. 0, or -1 reported. */
int shipper_finish_options(struct shipper_options *o, const char *prog);

/* One more failure in a row: the wait before the next try, in ms, also
 * kept in *backoff_ms. retry_min_ms first, then doubling up to
 * retry_max_ms; the caller sets *backoff_ms to 0 after a success. */
uint64_t shipper_next_backoff(const struct shipper_options *o, uint64_t *backoff_ms);

#endif
