/* seccheck-dummy - a drop-in replacement for gVisor's dummy_uds_server.py.
 *
 * Accepts sandbox connections, answers the handshake and discards every
 * message, through seccheckd's own receive path (listener, recvmmsg, header
 * checks, accounting) so it measures what seccheckd's socket side costs.
 * Prints each connection's counts when it closes and totals on exit.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "log.h"
#include "server.h"
#include "sink.h"

#define PROG "seccheck-dummy"

struct totals {
    uint64_t connections, messages, bytes, sandbox_dropped;
};

static void on_conn_closed(const struct conn_record *rec, void *data)
{
    struct totals *t = data;
    t->connections++;
    t->messages += rec->messages;
    t->bytes += rec->bytes;
    t->sandbox_dropped += rec->sandbox_dropped;
    printf("connection %" PRIu64 " closed (%s): %" PRIu64 " message%s, %" PRIu64 " byte%s, %" PRIu64
           " dropped by the sandbox\n",
           rec->id, rec->close_reason, rec->messages, cli_plural(rec->messages), rec->bytes, cli_plural(rec->bytes),
           rec->sandbox_dropped);
    fflush(stdout);
}

static void usage(FILE *out)
{
    fprintf(out, "Usage: seccheck-dummy [-h|--help] [SOCKET]\n"
                 "Listens on SOCKET [/tmp/seccheck.sock] like gVisor's dummy_uds_server.py: answers\n"
                 "each sandbox's handshake and discards every message. Prints per-connection\n"
                 "counts on disconnect and totals on SIGINT/SIGTERM; removes the socket on exit.\n");
}

/* [-h|--help] [SOCKET]: -1 to run (socket set if given), else the exit
 * status (0 after --help, 2 after a usage error, named). */
static int parse_args(int argc, char **argv, const char **socket)
{
    static const struct option options[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, CLI_GETOPT_QUIET "h", options, NULL)) != -1) {
        if (ch == 'h') {
            usage(stdout);
            return 0;
        }
        cli_report_getopt_error(PROG, ch, argv);
        return 2;
    }
    if (argc - optind > 1) {
        fprintf(stderr, PROG ": unexpected argument '%s': give one SOCKET at most (try --help)\n", argv[optind + 1]);
        return 2;
    }
    if (optind < argc)
        *socket = argv[optind];
    return -1;
}

int main(int argc, char **argv)
{
    struct server_config cfg;
    server_config_defaults(&cfg);
    int rc = parse_args(argc, argv, &cfg.socket_path);
    if (rc >= 0)
        return rc;
    struct totals totals = {0};
    cfg.count_only = true;
    cfg.socket_mode = 0666;   /* as the Python server: anyone may connect */
    cfg.on_conn_closed = on_conn_closed;
    cfg.hook_data = &totals;
    log_set_level(LOG_WARN);

    struct server srv;
    char err[512];
    if (server_listen(&srv, &cfg, NULL, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s\n", err);
        return 1;
    }
    struct sink *sink = sink_discard_open();
    uv_loop_t *loop = uv_default_loop();
    if (!sink || server_start(&srv, loop, sink, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s\n", sink ? err : "out of memory");
        server_free(&srv);
        if (sink)
            sink_close(sink);
        return 1;
    }
    printf("listening on %s\n", cfg.socket_path);
    fflush(stdout);
    uv_run(loop, UV_RUN_DEFAULT);
    printf("total: %" PRIu64 " connection%s, %" PRIu64 " message%s, %" PRIu64 " byte%s, %" PRIu64
           " dropped by the sandbox\n",
           totals.connections, cli_plural(totals.connections), totals.messages, cli_plural(totals.messages),
           totals.bytes, cli_plural(totals.bytes), totals.sandbox_dropped);
    server_free(&srv);
    sink_close(sink);
    uv_loop_close(loop);
    return 0;
}
