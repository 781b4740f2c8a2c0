/* seccheck-dummy - a drop-in replacement for gVisor's dummy_uds_server.py.
 *
 * Accepts sandbox connections, answers the handshake and discards every
 * message, through seccheckd's own receive path (listener, recvmmsg, header
 * checks, accounting) so it measures what seccheckd's socket side costs.
 * Prints each connection's counts when it closes and totals on exit.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "server.h"
#include "sink.h"

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
    printf("connection %" PRIu64 " closed (%s): %" PRIu64 " messages, %" PRIu64 " bytes, %" PRIu64
           " dropped by the sandbox\n",
           rec->id, rec->close_reason, rec->messages, rec->bytes, rec->sandbox_dropped);
    fflush(stdout);
}

static void usage(FILE *out)
{
    fprintf(out, "Usage: seccheck-dummy [SOCKET]\n"
                 "Listens on SOCKET [/tmp/seccheck.sock] like gVisor's dummy_uds_server.py: answers\n"
                 "each sandbox's handshake and discards every message. Prints per-connection\n"
                 "counts on disconnect and totals on SIGINT/SIGTERM; removes the socket on exit.\n");
}

int main(int argc, char **argv)
{
    struct server_config cfg;
    server_config_defaults(&cfg);
    if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
        bool help = argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
        usage(help ? stdout : stderr);
        return help ? 0 : 2;
    }
    if (argc == 2)
        cfg.socket_path = argv[1];
    struct totals totals = {0};
    cfg.count_only = true;
    cfg.socket_mode = 0666;   /* as the Python server: anyone may connect */
    cfg.on_conn_closed = on_conn_closed;
    cfg.hook_data = &totals;
    log_set_level(LOG_WARN);

    struct server srv;
    char err[512];
    if (server_listen(&srv, &cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "seccheck-dummy: %s\n", err);
        return 1;
    }
    struct sink *sink = sink_discard_open();
    uv_loop_t *loop = uv_default_loop();
    if (!sink || server_start(&srv, loop, sink, err, sizeof(err)) != 0) {
        fprintf(stderr, "seccheck-dummy: %s\n", sink ? err : "out of memory");
        server_free(&srv);
        if (sink)
            sink_close(sink);
        return 1;
    }
    printf("listening on %s\n", cfg.socket_path);
    fflush(stdout);
    uv_run(loop, UV_RUN_DEFAULT);
    printf("total: %" PRIu64 " connections, %" PRIu64 " messages, %" PRIu64 " bytes, %" PRIu64
           " dropped by the sandbox\n",
           totals.connections, totals.messages, totals.bytes, totals.sandbox_dropped);
    server_free(&srv);
    sink_close(sink);
    uv_loop_close(loop);
    return 0;
}
