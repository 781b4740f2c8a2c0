/* main.c - the seccheckd command line. */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "log.h"
#include "notify.h"
#include "server.h"
#include "sink.h"

#define SECCHECKD_VERSION "0.1.0"

struct options {
    struct server_config server;
    const char *sink;
    const char *db_path;
    const char *record_dir;
    const char *key_file;
    int busy_timeout_ms;
};

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: seccheckd [OPTIONS]\n"
            "Collects gVisor seccheck events from sandboxes (runsc remote sink) into SQLite.\n"
            "\n"
            "  --socket PATH            SOCK_SEQPACKET socket to listen on [/tmp/seccheck.sock]\n"
            "  --socket-mode OCTAL      permissions of the socket file [0660]\n"
            "  --socket-group GROUP     group owning the socket file [the daemon's]\n"
            "  --allow-uid UID[,UID...] accept only peers with these user ids (names or\n"
            "                           numbers); others are refused and counted [anyone]\n"
            "  --sink sqlite|discard|record\n"
            "                           store events in SQLite, decode and drop them, or record\n"
            "                           each connection as a gVisor tracereplay file [sqlite]\n"
            "  --db PATH                SQLite database for --sink sqlite [./seccheck.db]\n"
            "  --record-dir DIR         where --sink record writes client-NNNN files [./traces]\n"
            "  --batch-size N           events per transaction, at most [4096]\n"
            "  --flush-ms N             longest an event waits before its batch is written [100]\n"
            "  --queue-max N            batches queued for the writer before --on-full applies [8]\n"
            "  --on-full block|drop     when the queue is full: stop reading (the kernel buffer\n"
            "                           fills, then the sandbox drops and counts), or keep\n"
            "                           reading and drop here, counted as rejected queue_full [block]\n"
            "  --max-message BYTES      largest packet accepted; larger ones are rejected [262144]\n"
            "  --max-connections N      connections beyond this are refused [1024]\n"
            "  --handshake-timeout-ms N close clients that do not handshake in time [5000]\n"
            "  --read-budget N          packets read per connection per loop turn [256]\n"
            "  --drain-timeout-ms N     on SIGTERM, keep reading open connections this long [2000]\n"
            "  --busy-timeout-ms N      wait this long for a locked database, then retry [5000]\n"
            "  --key-file PATH          HMAC key for the tamper-evident batch chain [plain SHA-256]\n"
            "  --log-level LEVEL        error, warn, info or debug [info]\n"
            "  --help                   this text\n"
            "  --version                print the version\n"
            "\n"
            "Point runsc at it with a pod-init config whose sink is\n"
            "  {\"name\": \"remote\", \"config\": {\"endpoint\": \"/tmp/seccheck.sock\"}}\n"
            "SIGINT/SIGTERM: stop accepting, drain, commit, print a summary.\n"
            "SIGUSR2: restart in place (new binary, same PID) keeping every connection.\n");
}

enum {
    OPT_SOCKET = 256, OPT_SOCKET_MODE, OPT_SINK, OPT_DB, OPT_RECORD_DIR, OPT_BATCH_SIZE, OPT_FLUSH_MS, OPT_QUEUE_MAX, OPT_ON_FULL,
    OPT_MAX_MESSAGE, OPT_MAX_CONNECTIONS, OPT_HANDSHAKE_TIMEOUT, OPT_READ_BUDGET, OPT_DRAIN_TIMEOUT,
    OPT_BUSY_TIMEOUT, OPT_LOG_LEVEL, OPT_SOCKET_GROUP, OPT_ALLOW_UID, OPT_KEY_FILE, OPT_HELP, OPT_VERSION,
};

static const struct option long_options[] = {
    {"socket", required_argument, NULL, OPT_SOCKET},
    {"socket-mode", required_argument, NULL, OPT_SOCKET_MODE},
    {"sink", required_argument, NULL, OPT_SINK},
    {"db", required_argument, NULL, OPT_DB},
    {"record-dir", required_argument, NULL, OPT_RECORD_DIR},
    {"batch-size", required_argument, NULL, OPT_BATCH_SIZE},
    {"flush-ms", required_argument, NULL, OPT_FLUSH_MS},
    {"queue-max", required_argument, NULL, OPT_QUEUE_MAX},
    {"on-full", required_argument, NULL, OPT_ON_FULL},
    {"max-message", required_argument, NULL, OPT_MAX_MESSAGE},
    {"max-connections", required_argument, NULL, OPT_MAX_CONNECTIONS},
    {"handshake-timeout-ms", required_argument, NULL, OPT_HANDSHAKE_TIMEOUT},
    {"read-budget", required_argument, NULL, OPT_READ_BUDGET},
    {"drain-timeout-ms", required_argument, NULL, OPT_DRAIN_TIMEOUT},
    {"busy-timeout-ms", required_argument, NULL, OPT_BUSY_TIMEOUT},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"socket-group", required_argument, NULL, OPT_SOCKET_GROUP},
    {"allow-uid", required_argument, NULL, OPT_ALLOW_UID},
    {"key-file", required_argument, NULL, OPT_KEY_FILE},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

/* "0,1000,alice": each a user name or a number. */
static int parse_allowed_uids(const char *list, struct server_config *c)
{
    char *copy = strdup(list), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        struct passwd *pw = getpwnam(tok);
        uint64_t uid;
        if (pw) {
            uid = pw->pw_uid;
        } else if (cli_parse_uint("seccheckd", "allow-uid", tok, 0, UINT32_MAX - 1, &uid) != 0) {
            fprintf(stderr, "seccheckd: --allow-uid: '%s' is neither a user name nor a uid\n", tok);
            free(copy);
            return -1;
        }
        if (c->allowed_uids_count == SERVER_MAX_ALLOWED_UIDS) {
            fprintf(stderr, "seccheckd: --allow-uid: at most %d uids\n", SERVER_MAX_ALLOWED_UIDS);
            free(copy);
            return -1;
        }
        c->allowed_uids[c->allowed_uids_count++] = (uid_t)uid;
    }
    free(copy);
    return 0;
}

/* Parses one numeric option into *out, within [min, max]. */
static int number(const char *opt, uint64_t min, uint64_t max, uint64_t *out)
{
    return cli_parse_uint("seccheckd", opt, optarg, min, max, out);
}

static int parse_option(int ch, struct options *o)
{
    struct server_config *c = &o->server;
    uint64_t v;
    switch (ch) {
    case OPT_SOCKET: c->socket_path = optarg; return 0;
    case OPT_SINK: o->sink = optarg; return 0;
    case OPT_DB: o->db_path = optarg; return 0;
    case OPT_RECORD_DIR: o->record_dir = optarg; return 0;
    case OPT_KEY_FILE: o->key_file = optarg; return 0;
    case OPT_SOCKET_GROUP: {
        struct group *g = getgrnam(optarg);
        if (!g && cli_parse_uint("seccheckd", "socket-group", optarg, 0, UINT32_MAX - 1, &v) != 0) {
            fprintf(stderr, "seccheckd: --socket-group: no group named '%s'\n", optarg);
            return -1;
        }
        c->socket_gid = g ? (long long)g->gr_gid : (long long)v;
        return 0;
    }
    case OPT_ALLOW_UID:
        return parse_allowed_uids(optarg, c);
    case OPT_SOCKET_MODE:
        if (cli_parse_uint("seccheckd", "socket-mode", optarg, 0, 0777, &v) != 0)
            return -1;
        c->socket_mode = (mode_t)v;
        return 0;
    case OPT_BATCH_SIZE:
        if (number("batch-size", 1, 1000000, &v)) return -1;
        c->pipeline.limits.max_events = v;
        return 0;
    case OPT_FLUSH_MS:
        if (number("flush-ms", 1, 60000, &v)) return -1;
        c->flush_ms = (unsigned)v;
        return 0;
    case OPT_QUEUE_MAX:
        if (number("queue-max", 1, 4096, &v)) return -1;
        c->pipeline.queue_max = v;
        return 0;
    case OPT_ON_FULL:
        if (strcmp(optarg, "block") != 0 && strcmp(optarg, "drop") != 0) {
            fprintf(stderr, "seccheckd: --on-full: expected block or drop, got '%s'\n", optarg);
            return -1;
        }
        c->drop_when_full = strcmp(optarg, "drop") == 0;
        return 0;
    case OPT_MAX_MESSAGE:
        if (number("max-message", 10240, 16u << 20, &v)) return -1;
        c->max_message = v;
        return 0;
    case OPT_MAX_CONNECTIONS:
        if (number("max-connections", 1, 1000000, &v)) return -1;
        c->max_connections = (unsigned)v;
        return 0;
    case OPT_HANDSHAKE_TIMEOUT:
        if (number("handshake-timeout-ms", 1, 3600000, &v)) return -1;
        c->handshake_timeout_ms = (unsigned)v;
        return 0;
    case OPT_READ_BUDGET:
        if (number("read-budget", 1, 1000000, &v)) return -1;
        c->read_budget = (unsigned)v;
        return 0;
    case OPT_DRAIN_TIMEOUT:
        if (number("drain-timeout-ms", 0, 3600000, &v)) return -1;
        c->drain_timeout_ms = (unsigned)v;
        return 0;
    case OPT_BUSY_TIMEOUT:
        if (number("busy-timeout-ms", 0, 3600000, &v)) return -1;
        o->busy_timeout_ms = (int)v;
        return 0;
    case OPT_LOG_LEVEL: {
        int level = log_level_parse(optarg);
        if (level < 0) {
            fprintf(stderr, "seccheckd: --log-level: expected error, warn, info or debug, got '%s'\n", optarg);
            return -1;
        }
        log_set_level(level);
        return 0;
    }
    case OPT_HELP: usage(stdout); exit(0);
    case OPT_VERSION: printf("seccheckd %s\n", SECCHECKD_VERSION); exit(0);
    default:
        fprintf(stderr, "Try 'seccheckd --help'.\n");
        return -1;
    }
}

static struct sink *open_sink(const struct options *o)
{
    char err[512];
    struct sink *s;
    if (strcmp(o->sink, "discard") == 0)
        return sink_discard_open();
    if (strcmp(o->sink, "record") == 0) {
        s = sink_record_open(o->record_dir, err, sizeof(err));
    } else if (strcmp(o->sink, "sqlite") == 0) {
        struct sink_sqlite_options so = {
            .path = o->db_path, .busy_timeout_ms = o->busy_timeout_ms, .key_file = o->key_file};
        s = sink_sqlite_open(&so, err, sizeof(err));
    } else {
        fprintf(stderr, "seccheckd: --sink: expected sqlite, discard or record, got '%s'\n", o->sink);
        return NULL;
    }
    if (!s)
        fprintf(stderr, "seccheckd: %s\n", err);
    return s;
}

/* How many events fit in a sandbox's socket buffer before it drops. */
static void log_socket_buffer_hint(void)
{
    FILE *f = fopen("/proc/sys/net/core/wmem_default", "r");
    long wmem = 0;
    if (!f)
        return;
    if (fscanf(f, "%ld", &wmem) == 1 && wmem > 0)
        log_info("net.core.wmem_default=%ld: a sandbox buffers about %ld small events before it drops; raise "
                 "it with sysctl -w net.core.wmem_default=N, or set retries in the runsc sink config",
                 wmem, wmem / 768);
    fclose(f);
}

int main(int argc, char **argv)
{
    struct options o = {.sink = "sqlite", .db_path = "./seccheck.db", .record_dir = "./traces", .busy_timeout_ms = 5000};
    server_config_defaults(&o.server);
    int ch;
    while ((ch = getopt_long(argc, argv, "", long_options, NULL)) != -1)
        if (parse_option(ch, &o) != 0)
            return 2;
    if (optind < argc) {
        fprintf(stderr, "seccheckd: unexpected argument '%s' (try --help)\n", argv[optind]);
        return 2;
    }
    struct server srv;
    char err[512];
    if (server_listen(&srv, &o.server, err, sizeof(err)) != 0) {
        fprintf(stderr, "seccheckd: %s\n", err);
        return 1;
    }
    struct sink *sink = open_sink(&o);
    if (!sink) {
        server_free(&srv);
        return 1;
    }
    uv_loop_t *loop = uv_default_loop();
    if (server_start(&srv, loop, sink, err, sizeof(err)) != 0) {
        fprintf(stderr, "seccheckd: %s\n", err);
        server_free(&srv);
        sink_close(sink);
        uv_loop_close(loop);
        return 1;
    }
    const char *target = strcmp(o.sink, "sqlite") == 0 ? o.db_path : strcmp(o.sink, "record") == 0 ? o.record_dir : NULL;
    log_info("listening on %s, sink %s%s%s", o.server.socket_path, o.sink, target ? " -> " : "", target ? target : "");
    log_socket_buffer_hint();
    notify_send("READY=1");
    uv_run(loop, UV_RUN_DEFAULT);
    server_print_summary(&srv, stderr);
    int handoff_fd = srv.handoff_fd;
    server_free(&srv);
    sink_close(sink);
    uv_loop_close(loop);
    if (handoff_fd >= 0) {
        handoff_exec(argv, handoff_fd);
        log_error("restart: cannot re-execute %s: %s; the connections are lost", argv[0], strerror(errno));
        return 1;
    }
    return 0;
}
