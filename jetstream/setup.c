/* setup.c - `seccheckd nats-setup`: creates the fleet's stream, or checks
 * that the one there is the one asked for (jetstream.h). Nothing is ever
 * changed on a stream that exists: a difference is named, and the operator
 * decides (a stream's subjects, retention or storage cannot change in
 * place, and its partitions must not while hosts publish). */
#include "jetstream.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "clock.h"
#include "internal.h"
#include "log.h"

#define PROG "seccheckd nats-setup"
#define NS_PER_S ((int64_t)1000000000)

struct setup_options {
    const char *urls, *auth_file, *ca_file;
    struct js_stream_spec spec;
    uint64_t timeout_ms, wait_s;
};

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: seccheckd nats-setup --to nats://HOST:PORT[,...] [OPTIONS]\n"
            "Creates the fleet's JetStream stream that seccheckd forward publishes to and seccheckd\n"
            "central reads (and %s" JS_APPLIED_SUFFIX ", where central says how far it got), or checks\n"
            "that the stream there is this one and names each difference.\n"
            "\n"
            "  --to URLS              the NATS servers, nats:// or tls://, comma-separated\n"
            "  --nats-auth FILE       USER:PASSWORD on its first line (a user that may manage streams)\n"
            "  --nats-ca FILE         PEM certificates to trust for tls:// [the system's]\n"
            "  --stream NAME          [%s]\n"
            "  --partitions K         hosts hash to K partitions, each a consumer of its own [1]\n"
            "  --replicas N           copies of each message, on N servers (R3 survives one lost) [3]\n"
            "  --max-bytes SIZE       the stream's size at most; full, it refuses publishes and the\n"
            "                         hosts keep their batches (discard new) [10G]\n"
            "  --max-age DURATION     messages older than this go (longer than any consumer's outage) [7d]\n"
            "  --duplicate-window D   how long Nats-Msg-Id deduplicates [2m]\n"
            "  --timeout-ms N         connecting, and each request [5000]\n"
            "  --wait S               servers that do not answer yet (starting, electing a leader) are\n"
            "                         asked again for this long [30]\n"
            "  --help                 this text\n"
            "\n"
            "Exit status: 0 the stream is ready (made now, or there already as asked), 1 it differs or\n"
            "an error, 2 usage error.\n",
            JS_DEFAULT_STREAM, JS_DEFAULT_STREAM);
}

static int parse(struct setup_options *o, int argc, char **argv)
{
    static const struct option options[] = {
        {"to", required_argument, NULL, 't'},          {"nats-auth", required_argument, NULL, 'a'},
        {"nats-ca", required_argument, NULL, 'c'},     {"stream", required_argument, NULL, 'S'},
        {"partitions", required_argument, NULL, 'k'},  {"replicas", required_argument, NULL, 'r'},
        {"max-bytes", required_argument, NULL, 'b'},   {"max-age", required_argument, NULL, 'g'},
        {"duplicate-window", required_argument, NULL, 'd'}, {"timeout-ms", required_argument, NULL, 'T'},
        {"wait", required_argument, NULL, 'w'},        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *o = (struct setup_options){.timeout_ms = 5000, .wait_s = 30,
                                .spec = {.name = JS_DEFAULT_STREAM, .replicas = 3, .max_bytes = 10LL << 30,
                                         .max_age_ns = 7 * 86400 * NS_PER_S, .duplicates_ns = 120 * NS_PER_S,
                                         .partitions = 1}};
    uint64_t v;
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, CLI_GETOPT_QUIET "h", options, NULL)) != -1) {
        switch (ch) {
        case 't': o->urls = optarg; break;
        case 'a': o->auth_file = optarg; break;
        case 'c': o->ca_file = optarg; break;
        case 'S': o->spec.name = optarg; break;
        case 'k':
            if (cli_parse_uint(PROG, "partitions", optarg, 1, JS_PARTITIONS_MAX, &v))
                return 2;
            o->spec.partitions = (unsigned)v;
            break;
        case 'r':
            if (cli_parse_uint(PROG, "replicas", optarg, 1, 5, &v))
                return 2;
            o->spec.replicas = (int64_t)v;
            break;
        case 'b':
            if (cli_parse_bytes(optarg, 1ull << 50, &v) != 0 || v < (1u << 20))
                return cli_usage_error(PROG, "--max-bytes: expected a size of at least 1M (512M, 10G)", optarg);
            o->spec.max_bytes = (int64_t)v;
            break;
        case 'g':
            if (cli_parse_duration_s(optarg, 3650ull * 86400, &v) != 0 || v == 0)
                return cli_usage_error(PROG, "--max-age: expected a duration (12h, 7d)", optarg);
            o->spec.max_age_ns = (int64_t)v * NS_PER_S;
            break;
        case 'd':
            if (cli_parse_duration_s(optarg, 86400, &v) != 0 || v == 0)
                return cli_usage_error(PROG, "--duplicate-window: expected a duration (2m)", optarg);
            o->spec.duplicates_ns = (int64_t)v * NS_PER_S;
            break;
        case 'T': if (cli_parse_uint(PROG, "timeout-ms", optarg, 100, 600000, &o->timeout_ms)) return 2; break;
        case 'w': if (cli_parse_uint(PROG, "wait", optarg, 0, 3600, &o->wait_s)) return 2; break;
        case 'h': usage(stdout); return -1;
        default: cli_report_getopt_error(PROG, ch, argv); return 2;
        }
    }
    if (optind < argc)
        return cli_usage_error(PROG, "unexpected argument", argv[optind]);
    if (!o->urls)
        return cli_usage_error(PROG, "--to URLS is required: the NATS servers", NULL);
    char err[512];
    if (js_link_check_urls(o->urls, "--to", err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s\n", err);
        return 2;
    }
    if (strlen(o->spec.name) > 64 || strpbrk(o->spec.name, " .*>") || !*o->spec.name)
        return cli_usage_error(PROG, "--stream: 1 to 64 characters, no spaces, dots, '*' or '>'", o->spec.name);
    if (o->spec.duplicates_ns > o->spec.max_age_ns)
        return cli_usage_error(PROG, "--duplicate-window is longer than --max-age", NULL);
    return 0;
}

/* Makes stream cfg, or checks the one there against it. 0 ready, 1 differs, -1 error, -2 no answer (yet). */
static int create_or_check(struct js_link *l, jsStreamConfig *cfg, const struct js_stream_spec *spec, bool main)
{
    jsStreamInfo *si = NULL;
    jsErrCode code = 0;
    natsStatus s = js_GetStreamInfo(&si, l->js, cfg->Name, NULL, &code);
    char why[400];
    if (s == NATS_TIMEOUT || s == NATS_NO_RESPONDERS)
        return -2;   /* JetStream not up yet: no meta leader */
    if (s == NATS_OK) {
        struct strbuf diffs = {0};
        int n = 0;
        if (main)
            n = js_stream_differences(si->Config, spec, JS_CHECK_ALL, &diffs);
        else if (si->Config->MaxMsgsPerSubject != 1 || si->Config->SubjectsLen != 1 ||
                 strcmp(si->Config->Subjects[0], cfg->Subjects[0]) != 0 || !si->Config->AllowDirect) {
            strbuf_printf(&diffs, "expected subjects %s, one message per subject and allow_direct", cfg->Subjects[0]);
            n = 1;
        }
        if (n)
            printf("stream %s exists and differs: %s\nChange it, or delete it (its messages go with it), or run "
                   "nats-setup with the options it was made with.\n", cfg->Name, diffs.data);
        else
            printf("stream %s is ready: %" PRIu64 " messages, %" PRIu64 " bytes\n", cfg->Name, si->State.Msgs,
                   si->State.Bytes);
        strbuf_free(&diffs);
        jsStreamInfo_Destroy(si);
        return n ? 1 : 0;
    }
    if (s != NATS_NOT_FOUND && code != JSStreamNotFoundErr) {
        js_status_text(s, code, why, sizeof(why));
        fprintf(stderr, PROG ": stream %s: %s\n", cfg->Name, why);
        return -1;
    }
    s = js_AddStream(&si, l->js, cfg, NULL, &code);
    if (s != NATS_OK) {
        js_status_text(s, code, why, sizeof(why));
        fprintf(stderr, PROG ": creating stream %s: %s%s\n", cfg->Name, why,
                strstr(why, "insufficient") ? " (lower --max-bytes or --replicas, or give the servers more "
                                              "jetstream max_file_store)" : "");
        return -1;
    }
    jsStreamInfo_Destroy(si);
    if (main)
        printf("stream %s created: subjects " JS_BATCH_SUBJECTS ", %u partition%s, %" PRId64 " replicas, file storage, "
               "limits retention, discard new, max_bytes %" PRId64 ", max_age %" PRId64 "s, duplicate window %" PRId64
               "s\n", cfg->Name, spec->partitions, cli_plural(spec->partitions), spec->replicas, spec->max_bytes,
               spec->max_age_ns / NS_PER_S, spec->duplicates_ns / NS_PER_S);
    else
        printf("stream %s created: the central copy's position per host (" JS_APPLIED_PREFIX "<host>)\n", cfg->Name);
    return 0;
}

int jetstream_setup_main(int argc, char **argv)
{
    struct setup_options o;
    int rc = parse(&o, argc, argv);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    struct js_link l = {0};
    bool lasting = false, said = false;
    char err[1024];
    struct js_link_options lo = {.urls = o.urls, .auth_file = o.auth_file, .ca_file = o.ca_file,
                                 .name = "seccheckd nats-setup", .timeout_ms = (int64_t)o.timeout_ms};
    jsStreamConfig cfg, applied;
    char description[256], applied_name[128];
    const char *subjects[1], *applied_subjects[1];
    js_stream_config(&cfg, &o.spec, description, sizeof(description), subjects);
    js_applied_config(&applied, &o.spec, applied_name, sizeof(applied_name), applied_subjects);
    int64_t deadline = monotonic_ns() + (int64_t)o.wait_s * NS_PER_S;
    int a = -2, b = -2;
    for (;;) {
        if (!l.nc && js_link_connect(&l, &lo, &lasting, err, sizeof(err)) != 0) {
            a = -3;
        } else {
            a = create_or_check(&l, &cfg, &o.spec, true);
            b = a < 0 ? -1 : create_or_check(&l, &applied, &o.spec, false);
            snprintf(err, sizeof(err), "no answer from JetStream (the servers starting, or electing a leader)");
        }
        if ((a != -3 && a != -2 && b != -2) || lasting || monotonic_ns() >= deadline)
            break;
        if (!said)
            fprintf(stderr, PROG ": %s; asking again for up to %" PRIu64 " s (--wait)\n", err, o.wait_s);
        said = true;
        js_link_close(&l);
        usleep(500 * 1000);
    }
    if (a == -3 || a == -2 || b == -2)
        fprintf(stderr, PROG ": %s\n", err);
    js_link_close(&l);
    return a == 0 && b == 0 ? 0 : 1;
}
