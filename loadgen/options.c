#include "options.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define NS_PER_S 1000000000LL
#define MAX_MESSAGES 1000000000000000ULL   /* 10^15: decades at a million a second */

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: " LOADGEN_PROG " --socket PATH --trace FILE [--trace FILE...] [OPTIONS]\n"
            "Replays recorded gVisor seccheck traces (tracereplay files) into a collector's\n"
            "socket the way gVisor's remote sink sends them, and reports the throughput.\n"
            "\n"
            "  --socket PATH          the collector's SOCK_SEQPACKET socket (required)\n"
            "  --trace FILE           a trace to replay; repeat for more. Connection i replays\n"
            "                         trace i %% (number of traces), handshaking with the\n"
            "                         file's recorded wire version (required)\n"
            "  --connections N        concurrent connections, one sender thread each,\n"
            "                         1 to %d [1]\n"
            "  --mode sentry|block    sentry: like gVisor's remote sink, a non-blocking\n"
            "                         writev(header, payload) per message; when the socket is\n"
            "                         full, retry, then drop the message and count it in later\n"
            "                         headers' dropped_count. block: wait for room, never drop\n"
            "                         (measures how fast the collector drains) [sentry]\n"
            "  --messages N           messages per connection (sent or dropped), cycling\n"
            "                         through its trace [one pass of the trace, or no limit\n"
            "                         with --duration]\n"
            "  --duration SECONDS     stop after this long (e.g. 0.5, 10, 2m, 500ms)\n"
            "                         [no limit]; with --messages, whichever comes first\n"
            "  --rate R               messages/s per connection, on an absolute schedule\n"
            "                         (late messages are sent at once, so the average holds)\n"
            "                         [as fast as possible]\n"
            "  --retries N            sentry mode: attempts after EAGAIN before dropping [0]\n"
            "  --backoff DURATION     sentry mode: first sleep between retries, doubling each\n"
            "                         time; units ns, us, ms, s (e.g. 25us, 1ms) [25us]\n"
            "  --backoff-max DURATION sentry mode: longest sleep between retries [10ms]\n"
            "  --handshake-timeout DURATION\n"
            "                         how long to wait for the collector's handshake answer [5s]\n"
            "  --bench-name NAME      name of the Go benchmark line; \"Benchmark\" and a capital\n"
            "                         are added as Go's format requires (myRun ->\n"
            "                         BenchmarkMyRun) [Loadgen/mode=M/conns=N/trace=T,\n"
            "                         plus /rate=R with --rate]\n"
            "  --json                 print one JSON object instead of the summary and the\n"
            "                         benchmark line\n"
            "  --help, -h             this text\n"
            "\n"
            "Output: a summary, then a Go benchmark line that benchstat compares across runs:\n"
            "  BenchmarkLoadgen/mode=sentry/conns=8/trace=redis_rw-2  N  T ns/op  R msgs/s  B MB/s  D drop%%\n"
            "(N = messages sent, ns/op = wall time per message sent; -2 = the CPUs this\n"
            "process may use, like GOMAXPROCS, and left out when 1 as Go does).\n"
            "A progress line is shown on stderr when it is a terminal and the run is long.\n"
            "SIGINT/SIGTERM stop the senders; the summary covers what was sent.\n"
            "Exit status: 0 done, 1 runtime error (trace, socket, handshake, a connection\n"
            "closed by the collector), 2 usage error.\n",
            LOADGEN_MAX_CONNECTIONS);
}

const char *loadgen_mode_name(enum loadgen_mode mode)
{
    return mode == MODE_BLOCK ? "block" : "sentry";
}

/* Nanoseconds per unit, or 0 if unit is not one. Go's duration units. */
static double unit_ns(const char *unit)
{
    static const struct {
        const char *name;
        double ns;
    } units[] = {
        {"ns", 1}, {"us", 1e3}, {"\xc2\xb5s", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9},
    };
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (strcmp(unit, units[i].name) == 0)
            return units[i].ns;
    return 0;
}

int loadgen_parse_duration(const char *opt, const char *val, const char *bare_unit, int64_t min_ns,
                           int64_t max_ns, int64_t *out)
{
    char *end;
    double v = strtod(val, &end);
    const char *unit = *end ? end : bare_unit;
    double scale = unit ? unit_ns(unit) : 0;
    if (end != val && v == 0 && !*end)
        scale = 1;   /* "0" needs no unit */
    double ns = v * scale;
    if (end == val || val[0] == '-' || !isfinite(v) || scale == 0 || !(ns >= (double)min_ns && ns <= (double)max_ns)) {
        char lower[64] = "";
        if (min_ns == 1)
            snprintf(lower, sizeof(lower), "greater than 0 and ");
        else if (min_ns > 1)
            snprintf(lower, sizeof(lower), "at least %.10g s and ", (double)min_ns / NS_PER_S);
        fprintf(stderr,
                LOADGEN_PROG ": --%s: expected a duration such as 25us, 10ms or 1.5s (units ns, us, ms, s, m, h)%s, "
                "%sat most %.10g s; got '%s'\n",
                opt, bare_unit ? " or a number of seconds" : "", lower, (double)max_ns / NS_PER_S, val);
        return -1;
    }
    *out = (int64_t)llround(ns);
    return 0;
}

enum {
    OPT_SOCKET = 256, OPT_TRACE, OPT_CONNECTIONS, OPT_MODE, OPT_MESSAGES, OPT_DURATION, OPT_RATE, OPT_RETRIES,
    OPT_BACKOFF, OPT_BACKOFF_MAX, OPT_HANDSHAKE_TIMEOUT, OPT_BENCH_NAME, OPT_JSON, OPT_HELP,
};

static const struct option long_options[] = {
    {"socket", required_argument, NULL, OPT_SOCKET},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"connections", required_argument, NULL, OPT_CONNECTIONS},
    {"mode", required_argument, NULL, OPT_MODE},
    {"messages", required_argument, NULL, OPT_MESSAGES},
    {"duration", required_argument, NULL, OPT_DURATION},
    {"rate", required_argument, NULL, OPT_RATE},
    {"retries", required_argument, NULL, OPT_RETRIES},
    {"backoff", required_argument, NULL, OPT_BACKOFF},
    {"backoff-max", required_argument, NULL, OPT_BACKOFF_MAX},
    {"handshake-timeout", required_argument, NULL, OPT_HANDSHAKE_TIMEOUT},
    {"bench-name", required_argument, NULL, OPT_BENCH_NAME},
    {"json", no_argument, NULL, OPT_JSON},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

static int add_trace(struct loadgen_options *o, const char *path)
{
    const char **grown = realloc(o->traces, (o->ntraces + 1) * sizeof(*grown));
    if (!grown) {
        fprintf(stderr, LOADGEN_PROG ": out of memory\n");
        return -1;
    }
    o->traces = grown;
    o->traces[o->ntraces++] = path;
    return 0;
}

/* The cap gets its own message: "at most 4096" alone does not say why. */
static int parse_connections(const char *val, unsigned *out)
{
    char *end;
    unsigned long long big = strtoull(val, &end, 0);
    if (end != val && !*end && val[0] != '-' && big > LOADGEN_MAX_CONNECTIONS) {
        fprintf(stderr,
                LOADGEN_PROG ": --connections: %s is more than %d, the most one load generator runs "
                "(one sender thread and socket each); run several loadgen processes instead\n",
                val, LOADGEN_MAX_CONNECTIONS);
        return -1;
    }
    uint64_t v;
    if (cli_parse_uint(LOADGEN_PROG, "connections", val, 1, LOADGEN_MAX_CONNECTIONS, &v) != 0)
        return -1;
    *out = (unsigned)v;
    return 0;
}

static int parse_mode(const char *val, enum loadgen_mode *out)
{
    if (strcmp(val, "sentry") == 0)
        *out = MODE_SENTRY;
    else if (strcmp(val, "block") == 0)
        *out = MODE_BLOCK;
    else {
        fprintf(stderr, LOADGEN_PROG ": --mode: expected sentry or block, got '%s'\n", val);
        return -1;
    }
    return 0;
}

static int parse_option(int ch, const char *val, char *const *argv_for_errors, struct loadgen_options *o)
{
    uint64_t v;
    switch (ch) {
    case OPT_SOCKET: o->socket = val; return 0;
    case OPT_TRACE: return add_trace(o, val);
    case OPT_CONNECTIONS: return parse_connections(val, &o->connections);
    case OPT_MODE: return parse_mode(val, &o->mode);
    case OPT_MESSAGES: return cli_parse_uint(LOADGEN_PROG, "messages", val, 1, MAX_MESSAGES, &o->messages);
    case OPT_DURATION:
        return loadgen_parse_duration("duration", val, "s", 1, 1000000 * NS_PER_S, &o->duration_ns);
    case OPT_RATE: return cli_parse_double(LOADGEN_PROG, "rate", val, 0.001, 1e9, &o->rate);
    case OPT_RETRIES:
        if (cli_parse_uint(LOADGEN_PROG, "retries", val, 0, 1000000, &v) != 0)
            return -1;
        o->retries = (unsigned)v;
        return 0;
    case OPT_BACKOFF: return loadgen_parse_duration("backoff", val, NULL, 0, 10 * NS_PER_S, &o->backoff_ns);
    case OPT_BACKOFF_MAX:
        return loadgen_parse_duration("backoff-max", val, NULL, 0, 60 * NS_PER_S, &o->backoff_max_ns);
    case OPT_HANDSHAKE_TIMEOUT:
        return loadgen_parse_duration("handshake-timeout", val, NULL, 1000000, 3600 * NS_PER_S,
                                      &o->handshake_timeout_ns);
    case OPT_BENCH_NAME: o->bench_name = val; return 0;
    case OPT_JSON: o->json = true; return 0;
    default:   /* '?' or ':' from getopt_long, which printed nothing */
        cli_report_getopt_error(LOADGEN_PROG, ch, argv_for_errors);
        return -1;
    }
}

/* Checks that need every option: what is required, what must agree. */
static int check_options(const struct loadgen_options *o)
{
    if (!o->socket) {
        fprintf(stderr, LOADGEN_PROG ": --socket PATH is required (the collector's socket; try --help)\n");
        return -1;
    }
    if (o->ntraces == 0) {
        fprintf(stderr, LOADGEN_PROG ": at least one --trace FILE is required (try --help)\n");
        return -1;
    }
    if (o->backoff_ns > o->backoff_max_ns) {
        fprintf(stderr, LOADGEN_PROG ": --backoff (%.9g s) is longer than --backoff-max (%.9g s)\n",
                (double)o->backoff_ns / NS_PER_S, (double)o->backoff_max_ns / NS_PER_S);
        return -1;
    }
    if (o->bench_name && (!o->bench_name[0] || strpbrk(o->bench_name, " \t\n\r"))) {
        fprintf(stderr, LOADGEN_PROG ": --bench-name: must be non-empty without spaces (benchstat splits "
                        "lines on spaces), got '%s'\n", o->bench_name);
        return -1;
    }
    return 0;
}

enum loadgen_parse_result loadgen_parse_args(int argc, char **argv, struct loadgen_options *o)
{
    *o = (struct loadgen_options){
        .connections = 1,
        .mode = MODE_SENTRY,
        .backoff_ns = 25000,                 /* gVisor's remote sink defaults */
        .backoff_max_ns = 10000000,
        .handshake_timeout_ns = 5 * NS_PER_S,
    };
    int ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, CLI_GETOPT_QUIET "h", long_options, NULL)) != -1) {
        if (ch == OPT_HELP || ch == 'h') {
            usage(stdout);
            return PARSE_EXIT_OK;
        }
        if (parse_option(ch, optarg, argv, o) != 0)
            return PARSE_USAGE;
    }
    if (optind < argc) {
        fprintf(stderr, LOADGEN_PROG ": unexpected argument '%s' (traces go after --trace; try --help)\n",
                argv[optind]);
        return PARSE_USAGE;
    }
    return check_options(o) == 0 ? PARSE_RUN : PARSE_USAGE;
}

void loadgen_options_free(struct loadgen_options *o)
{
    free(o->traces);
    o->traces = NULL;
    o->ntraces = 0;
}
