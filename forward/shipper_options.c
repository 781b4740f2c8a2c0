/* shipper_options.c - the shippers' shared options and backoff
 * (shipper_options.h). */
#include "shipper_options.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "metrics.h"

int shipper_take_option(struct shipper_options *o, const char *prog, int ch, char *const *argv)
{
    switch (ch) {
    case SHIPPER_OPT_METRICS_LISTEN:
        o->metrics_listen = strcmp(optarg, "off") == 0 ? NULL : optarg;
        return 0;
    case SHIPPER_OPT_RETRY_MIN_MS: return cli_parse_uint(prog, "retry-min-ms", optarg, 1, 600000, &o->retry_min_ms);
    case SHIPPER_OPT_RETRY_MAX_MS: return cli_parse_uint(prog, "retry-max-ms", optarg, 1, 3600000, &o->retry_max_ms);
    case SHIPPER_OPT_STATS_INTERVAL: return cli_parse_uint(prog, "stats-interval", optarg, 0, 86400, &o->stats_s);
    case SHIPPER_OPT_TIMEOUT_MS: return cli_parse_uint(prog, "timeout-ms", optarg, 100, 600000, &o->timeout_ms);
    case SHIPPER_OPT_LOG_LEVEL: return cli_set_log_level(prog, optarg);
    default:
        cli_report_getopt_error(prog, ch, argv);
        return -1;
    }
}

int shipper_check_no_operands(const char *prog, int argc, char *const *argv)
{
    if (optind >= argc)
        return 0;
    fprintf(stderr, "%s: unexpected argument '%s' (try --help)\n", prog, argv[optind]);
    return -1;
}

int shipper_identify_host(const char *prog, const char *given, char id[HOST_ID_MAX + 1],
                          char hostname[SHIPPER_HOSTNAME_MAX + 1])
{
    char err[512];
    if (host_id_resolve(given, id, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return -1;
    }
    /* gethostname need not terminate a name it had to cut. */
    hostname[SHIPPER_HOSTNAME_MAX] = '\0';
    if (gethostname(hostname, SHIPPER_HOSTNAME_MAX) != 0)
        hostname[0] = '\0';
    return 0;
}

int shipper_finish_options(struct shipper_options *o, const char *prog)
{
    if (o->retry_max_ms < o->retry_min_ms)
        o->retry_max_ms = o->retry_min_ms;
    char err[512];
    if (o->metrics_listen && metrics_check_address(o->metrics_listen, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return -1;
    }
    return 0;
}

uint64_t shipper_next_backoff(const struct shipper_options *o, uint64_t *backoff_ms)
{
    *backoff_ms = *backoff_ms ? *backoff_ms * 2 : o->retry_min_ms;
    if (*backoff_ms > o->retry_max_ms)
        *backoff_ms = o->retry_max_ms;
    return *backoff_ms;
}
