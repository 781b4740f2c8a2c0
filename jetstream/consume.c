/* consume.c - `seccheckd central --from nats://... --to postgresql://...`:
 * the fleet's stream into the central PostgreSQL, exactly once (jetstream.h).
 *
 * One worker thread per partition served, each with its own durable pull
 * consumer (seccheck-central-<k>, explicit acks, filter
 * seccheck.<k>.*.batch), its own NATS and PostgreSQL connections. A worker
 * fetches up to --fetch messages, applies them in one transaction through
 * central_apply (the direct path's: the hosts row is the position, so a
 * message delivered again applies nothing), one savepoint per message so
 * one host's refused message never holds up another's, and acks them only
 * after COMMIT: at-least-once delivery into an idempotent store. A host's
 * messages apply in order: one that comes before the one it follows is
 * handed back (a delayed nak) until that arrives, and after --gap-wait the
 * hole is recorded in gaps, as the direct path records a batch lost on the
 * host. The loop thread serves signals, the metrics and progress lines.
 *
 * After each commit a worker publishes each host's new position on
 * seccheck.applied.<host>: the host's forwarder keeps its batches until
 * then. */
#include "jetstream.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "cli.h"
#include "clock.h"
#include "internal.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "shipper_options.h"
#include "thread.h"

#define PROG "seccheckd central"
#define NS_PER_S ((int64_t)1000000000)
#define FETCH_WAIT_MS 1000
#define WAITING_MAX 4096            /* hosts whose next message is missing, tracked for --gap-wait */
#define INFO_EVERY_NS (2 * NS_PER_S)
#define TXN_HOSTS_MAX 256           /* hosts in one transaction */

enum error_kind { ERR_NATS, ERR_CENTRAL, ERR_KINDS };
static const char *const error_names[ERR_KINDS] = {"nats", "central"};

struct options {
    const char *urls, *pg_url, *auth_file, *ca_file, *durable;
    struct shipper_options common;
    struct js_stream_spec stream;
    int partition;                  /* -1: every partition */
    uint64_t fetch, ack_wait_s, gap_wait_s;
};

struct counters {
    atomic_uint_fast64_t messages, batches, events, alerts, already, waiting, refused, gaps, syncs, chunks;
    atomic_uint_fast64_t transactions, errors[ERR_KINDS];
    atomic_int_fast64_t pending, ack_pending, last_seq, up;
};

struct waiting_host {
    char host_id[HOST_ID_MAX + 1];
    int64_t since_ns;
};

/* A host's position within the transaction being built. */
struct txn_host {
    char host_id[HOST_ID_MAX + 1];
    struct central_head head;
    bool moved;
};

enum action { ACT_ACK, ACT_NAK, ACT_TERM };

struct worker {
    struct central *c;
    unsigned partition;
    pthread_t thread;
    bool started;
    struct js_link link;
    natsSubscription *sub;
    PGconn *pg;
    bool schema_ready;
    struct js_codec *codec;
    char durable[128], filter[64];
    struct local ensured[8];        /* table descriptions the schema was made for */
    int nensured;
    struct waiting_host waiting[WAITING_MAX];
    int nwaiting;
    struct txn_host hosts[TXN_HOSTS_MAX];
    int nhosts;
    enum action *actions;
    int64_t info_ns;
    uint64_t backoff_ms;
    struct counters n;
    uint64_t interval_events_seen;
};

struct central {
    struct options o;
    unsigned partitions;
    struct worker *workers;
    unsigned nworkers;
    atomic_bool stopping;
    atomic_int exit_status;
    uv_loop_t *loop;
    uv_timer_t stats_timer;
    uv_signal_t sigterm, sigint;
    uv_async_t done;
    atomic_uint running;
    struct metrics metrics;
};

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: seccheckd central --from nats://HOST:PORT[,...] --to URL [OPTIONS]\n"
            "Applies the batches every host's seccheckd forward published into the fleet's NATS\n"
            "JetStream stream to a central PostgreSQL, exactly once, each host's in order: one\n"
            "durable pull consumer per partition, one transaction per fetch, acks after COMMIT.\n"
            "\n"
            "  --from URLS            the NATS servers, nats:// or tls://, comma-separated\n"
            "  --to URL               the central PostgreSQL (libpq URL; no password in it: ~/.pgpass,\n"
            "                         PGPASSFILE or PGPASSWORD)\n"
            "  --nats-auth FILE       USER:PASSWORD on its first line, or a NATS .creds file\n"
            "  --nats-ca FILE         PEM certificates to trust for tls:// [the system's]\n"
            "  --stream NAME          the stream seccheckd nats-setup made [SECCHECK]\n"
            "  --partitions K         must be the stream's [the stream's]\n"
            "  --partition I          apply partition I only (0..K-1), e.g. one PostgreSQL database per\n"
            "                         partition, or one machine each [all K, a thread each]\n"
            "  --durable PREFIX       the consumers' names, PREFIX-<partition> [seccheck-central]\n"
            "  --fetch N              messages per fetch, applied in one transaction [64]\n"
            "  --ack-wait S           the consumers' ack wait: a message not acked by then comes again [30]\n"
            "  --gap-wait S           how long a host's message waits for the one before it before the\n"
            "                         hole is recorded in gaps [60]\n"
            "  --metrics-listen ADDR  serve Prometheus metrics at HOST:PORT (loopback) or unix:PATH [off]\n"
            "  --timeout-ms N         connecting to NATS, and each request [5000]\n"
            "  --retry-min-ms N       first wait after a failure, doubling [500]\n"
            "  --retry-max-ms N       longest wait between retries [30000]\n"
            "  --stats-interval S     log progress this often (0: never) [60]\n"
            "  --log-level LEVEL      error, warn, info or debug [info]\n"
            "  --help                 this text\n"
            "\n"
            "Exit status: 0 stopped by SIGTERM or SIGINT, 1 an error retrying cannot heal (credentials\n"
            "refused, a stream of another shape), 2 usage error.\n");
}

static int parse_options(struct options *o, int argc, char **argv)
{
    static const struct option options[] = {
        {"from", required_argument, NULL, 'f'},      {"to", required_argument, NULL, 't'},
        {"nats-auth", required_argument, NULL, 'a'}, {"nats-ca", required_argument, NULL, 'c'},
        {"stream", required_argument, NULL, 'S'},    {"partitions", required_argument, NULL, 'k'},
        {"partition", required_argument, NULL, 'i'}, {"durable", required_argument, NULL, 'D'},
        {"fetch", required_argument, NULL, 'n'},     {"ack-wait", required_argument, NULL, 'w'},
        {"gap-wait", required_argument, NULL, 'g'},  SHIPPER_TIMEOUT_OPTION,
        SHIPPER_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    *o = (struct options){.durable = "seccheck-central", .common = SHIPPER_OPTIONS_DEFAULT, .partition = -1,
                          .fetch = 64, .ack_wait_s = 30, .gap_wait_s = 60, .stream = {.name = JS_DEFAULT_STREAM}};
    uint64_t k = 0, i = 0;
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, CLI_GETOPT_QUIET "h", options, NULL)) != -1) {
        switch (ch) {
        case 'f': o->urls = optarg; break;
        case 't': o->pg_url = optarg; break;
        case 'a': o->auth_file = optarg; break;
        case 'c': o->ca_file = optarg; break;
        case 'S': o->stream.name = optarg; break;
        case 'k': if (cli_parse_uint(PROG, "partitions", optarg, 1, JS_PARTITIONS_MAX, &k)) return 2; break;
        case 'i':
            if (cli_parse_uint(PROG, "partition", optarg, 0, JS_PARTITIONS_MAX - 1, &i))
                return 2;
            o->partition = (int)i;
            break;
        case 'D': o->durable = optarg; break;
        case 'n': if (cli_parse_uint(PROG, "fetch", optarg, 1, 4096, &o->fetch)) return 2; break;
        case 'w': if (cli_parse_uint(PROG, "ack-wait", optarg, 1, 3600, &o->ack_wait_s)) return 2; break;
        case 'g': if (cli_parse_uint(PROG, "gap-wait", optarg, 1, 86400 * 7, &o->gap_wait_s)) return 2; break;
        case 'h': usage(stdout); return -1;
        default: if (shipper_take_option(&o->common, PROG, ch, argv)) return 2; break;
        }
    }
    o->stream.partitions = (unsigned)k;
    if (shipper_check_no_operands(PROG, argc, argv))
        return 2;
    char err[512];
    if (!o->urls || !o->pg_url) {
        fprintf(stderr, PROG ": --from URLS (the NATS servers) and --to URL (the central PostgreSQL) are required "
                "(try --help)\n");
        return 2;
    }
    if (js_link_check_urls(o->urls, "--from", err, sizeof(err)) != 0 || central_check_url(o->pg_url, err, sizeof(err))) {
        fprintf(stderr, PROG ": %s\n", err);
        return 2;
    }
    if (o->stream.partitions && o->partition >= (int)o->stream.partitions) {
        fprintf(stderr, PROG ": --partition %d: the partitions are 0 to %u\n", o->partition, o->stream.partitions - 1);
        return 2;
    }
    if (shipper_finish_options(&o->common, PROG))
        return 2;
    if (strlen(o->durable) > 64 || strpbrk(o->durable, " .*>") || !*o->durable) {
        fprintf(stderr, PROG ": --durable: 1 to 64 characters, no spaces, dots, '*' or '>'\n");
        return 2;
    }
    return 0;
}

/* ---- connections ---- */

static void drop_nats(struct worker *w)
{
    if (w->sub)
        natsSubscription_Destroy(w->sub);
    w->sub = NULL;
    js_link_close(&w->link);
    atomic_store(&w->n.up, 0);
}

static void drop_pg(struct worker *w)
{
    if (w->pg)
        PQfinish(w->pg);
    w->pg = NULL;
    w->schema_ready = false;
}

/* The durable consumer of the partition, made or brought to our settings,
 * and a pull subscription bound to it. */
static int subscribe(struct worker *w, char *err, size_t errlen)
{
    const struct options *o = &w->c->o;
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = w->durable;
    cc.Description = "seccheckd central: one partition into PostgreSQL";
    cc.FilterSubject = w->filter;
    cc.AckPolicy = js_AckExplicit;
    cc.DeliverPolicy = js_DeliverAll;
    cc.AckWait = (int64_t)o->ack_wait_s * NS_PER_S;
    cc.MaxDeliver = -1;
    cc.MaxAckPending = (int64_t)o->fetch * 4 > 1000 ? (int64_t)o->fetch * 4 : 1000;
    jsConsumerInfo *ci = NULL;
    jsErrCode code = 0;
    natsStatus s = js_AddConsumer(&ci, w->link.js, o->stream.name, &cc, NULL, &code);
    if (s != NATS_OK && code == JSConsumerNameExistErr) {
        jsConsumerInfo_Destroy(ci);
        ci = NULL;
        s = js_UpdateConsumer(&ci, w->link.js, o->stream.name, &cc, NULL, &code);
    }
    jsConsumerInfo_Destroy(ci);
    if (s != NATS_OK) {
        char why[300];
        js_status_text(s, code, why, sizeof(why));
        snprintf(err, errlen, "consumer %s on stream %s: %s", w->durable, o->stream.name, why);
        return -1;
    }
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = o->stream.name;
    so.Consumer = w->durable;
    s = js_PullSubscribe(&w->sub, w->link.js, w->filter, w->durable, NULL, &so, &code);
    if (s != NATS_OK) {
        char why[300];
        js_status_text(s, code, why, sizeof(why));
        snprintf(err, errlen, "pull subscription to %s: %s", w->durable, why);
        return -1;
    }
    return 0;
}

static int ensure_nats(struct worker *w, bool *lasting, char *err, size_t errlen)
{
    if (w->sub)
        return 0;
    const struct options *o = &w->c->o;
    char name[160], inbox[160];
    snprintf(name, sizeof(name), "seccheckd-central %s", w->durable);
    snprintf(inbox, sizeof(inbox), "_INBOX_%s", o->durable);   /* one prefix for every partition's: the permissions */
    struct js_link_options lo = {.urls = o->urls, .auth_file = o->auth_file, .ca_file = o->ca_file, .name = name,
                                 .inbox = inbox, .timeout_ms = (int64_t)o->common.timeout_ms};
    if (!w->link.nc && js_link_connect(&w->link, &lo, lasting, err, errlen) != 0)
        return -1;
    unsigned k;
    int rc = js_stream_verify(&w->link, &o->stream, JS_CHECK_ESSENTIAL, &k, err, errlen);
    if (rc == 0 && k != w->c->partitions) {
        snprintf(err, errlen, "stream %s now has %u partitions, this consumer started with %u: restart it",
                 o->stream.name, k, w->c->partitions);
        rc = -2;
    }
    if (rc == 0)
        rc = subscribe(w, err, errlen);
    if (rc != 0) {
        *lasting = rc == -2;
        drop_nats(w);
        return -1;
    }
    atomic_store(&w->n.up, 1);
    log_info("central: partition %u: consuming %s through %s", w->partition, w->filter, w->durable);
    return 0;
}

static const char positions_sql[] =
    /* How far each consumer applied the stream: its last message's stream
     * sequence, in the transaction that applied it. */
    "CREATE TABLE IF NOT EXISTS nats_positions("
    "  stream text NOT NULL,"
    "  consumer text NOT NULL,"
    "  stream_seq bigint NOT NULL,"
    "  updated timestamptz NOT NULL DEFAULT now(),"
    "  PRIMARY KEY(stream, consumer))";

static int ensure_pg(struct worker *w, bool *lasting, char *err, size_t errlen)
{
    if (w->pg)
        return 0;
    if ((w->pg = central_connect(w->c->o.pg_url, lasting, err, errlen)) == NULL)
        return -1;
    PGresult *res = PQexec(w->pg, positions_sql);
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        char line[512];
        central_message_line(PQresultErrorMessage(res), line, sizeof(line));
        snprintf(err, errlen, "nats_positions: %s", line);
        PQclear(res);
        drop_pg(w);
        return -1;
    }
    PQclear(res);
    return 0;
}

/* The schema fits the tables a message describes (each description once). */
static bool same_tables(const struct local *a, const struct local *b)
{
    const struct local_table *x[] = {&a->runs, &a->connections, &a->events, &a->batches, &a->alerts, &a->container_info};
    const struct local_table *y[] = {&b->runs, &b->connections, &b->events, &b->batches, &b->alerts, &b->container_info};
    for (int i = 0; i < 6; i++)
        if (x[i]->ncols != y[i]->ncols || memcmp(x[i]->cols, y[i]->cols, sizeof(x[i]->cols[0]) * (size_t)x[i]->ncols))
            return false;
    return true;
}

static bool schema_known(struct worker *w, const struct local *t)
{
    for (int i = 0; i < w->nensured; i++)
        if (same_tables(&w->ensured[i], t))
            return true;
    return false;
}

/* Outside any transaction: makes the schema fit t. */
static int ensure_schema(struct worker *w, const struct local *t, char *err, size_t errlen)
{
    if (central_ensure_schema(w->pg, t, err, errlen) != 0)
        return -1;
    if (w->nensured == (int)(sizeof(w->ensured) / sizeof(w->ensured[0])))
        w->nensured = 0;   /* forget the oldest ones: asking again is cheap */
    w->ensured[w->nensured++] = *t;
    return 0;
}

/* ---- applying one message ---- */

static struct txn_host *txn_host(struct worker *w, const char *host_id, const char *hostname, char *err,
                                 size_t errlen)
{
    for (int i = 0; i < w->nhosts; i++)
        if (strcmp(w->hosts[i].host_id, host_id) == 0)
            return &w->hosts[i];
    if (w->nhosts == TXN_HOSTS_MAX) {
        snprintf(err, errlen, "more than %d hosts in one fetch", TXN_HOSTS_MAX);
        return NULL;
    }
    struct txn_host *h = &w->hosts[w->nhosts];
    memset(h, 0, sizeof(*h));
    snprintf(h->host_id, sizeof(h->host_id), "%s", host_id);
    /* central_begin opens the transaction; here it is open already. */
    if (central_begin_host(w->pg, host_id, hostname, &h->head, err, errlen) != 0)
        return NULL;
    w->nhosts++;
    return h;
}

static int64_t *waiting_since(struct worker *w, const char *host_id, bool add)
{
    for (int i = 0; i < w->nwaiting; i++)
        if (strcmp(w->waiting[i].host_id, host_id) == 0)
            return &w->waiting[i].since_ns;
    if (!add)
        return NULL;
    if (w->nwaiting == WAITING_MAX)
        w->nwaiting--;   /* the newest entry gives way: it starts waiting again */
    struct waiting_host *wh = &w->waiting[w->nwaiting++];
    snprintf(wh->host_id, sizeof(wh->host_id), "%s", host_id);
    wh->since_ns = monotonic_ns();
    return &wh->since_ns;
}

static void waiting_done(struct worker *w, const char *host_id)
{
    for (int i = 0; i < w->nwaiting; i++)
        if (strcmp(w->waiting[i].host_id, host_id) == 0) {
            w->waiting[i] = w->waiting[--w->nwaiting];
            return;
        }
}

/* The host of a batch subject, seccheck.<k>.<host>.batch. */
static int subject_host(const char *subject, char host_id[HOST_ID_MAX + 1])
{
    const char *a = strchr(subject, '.'), *b = a ? strchr(a + 1, '.') : NULL, *c = b ? strchr(b + 1, '.') : NULL;
    if (!c || strcmp(c, ".batch") != 0)
        return -1;
    return js_subject_host(b + 1, (size_t)(c - b - 1), host_id);
}

/* What to record when a message is refused, outside its savepoint. */
struct refusal {
    char host_id[HOST_ID_MAX + 1];
    int64_t batch_id;
    char reason[700];
};

/* Applies a decoded message of host h. Sets *act; 0, or -1 with err (a
 * central error: the transaction is lost), -2 with refusal filled (the
 * message's fault: its savepoint is rolled back). */
static int apply_payload(struct worker *w, struct js_payload *pl, const char *host_id, struct txn_host *h,
                         uint64_t seq, enum action *act, struct refusal *ref, char *err, size_t errlen)
{
    struct central_source src;
    js_payload_source(&src, pl);
    struct central_head *head = &h->head;
    int rc;
    int64_t *since = waiting_since(w, host_id, false);
    bool overdue = since && monotonic_ns() - *since >= (int64_t)w->c->o.gap_wait_s * NS_PER_S;
    *act = ACT_ACK;
    if (pl->kind == JS_KIND_SYNC) {
        if (head->last_batch_id > pl->at_batch || (head->last_batch_id == pl->at_batch && head->partial_chunks)) {
            atomic_fetch_add(&w->n.already, 1);
            return 0;
        }
        if (head->last_batch_id < pl->at_batch) {
            if (overdue) {   /* the batches before it are recorded as lost when they come */
                atomic_fetch_add(&w->n.already, 1);
                return 0;
            }
            *act = ACT_NAK;
            waiting_since(w, host_id, true);
            atomic_fetch_add(&w->n.waiting, 1);
            return 0;
        }
        rc = central_sync_open_rows(w->pg, &src, host_id, pl->open_runs_from, pl->open_conns_from, 0, NULL,
                                    err, errlen);
        if (rc != 0)
            goto failed;
        atomic_fetch_add(&w->n.syncs, 1);
        return 0;
    }
    unsigned flags = CENTRAL_WHOLE;
    if ((pl->gap_from && pl->gap_from <= head->last_batch_id + 1) || (overdue && pl->kind == JS_KIND_BATCHES))
        flags |= CENTRAL_GAP_KNOWN;
    struct central_outcome out;
    struct central_head before = *head;
    const struct central_chunk *chunk = pl->kind == JS_KIND_CHUNK ? &pl->chunk : NULL;
    rc = central_apply(w->pg, &src, host_id, head, pl->batches, pl->nbatches, chunk, flags, &out, err, errlen);
    if (rc != 0) {
        *head = before;
        goto failed;
    }
    switch (out.what) {
    case CENTRAL_ALREADY:
        atomic_fetch_add(&w->n.already, 1);
        break;
    case CENTRAL_WAITING:
        if (overdue && chunk) {   /* the parts before it are lost: the batch never completes */
            snprintf(ref->reason, sizeof(ref->reason), "chunk %" PRId64 " of batch %" PRId64 " came, the chunks "
                     "before it did not within --gap-wait (stream sequence %" PRIu64 ")", chunk->index,
                     pl->batches[0].id, seq);
            snprintf(ref->host_id, sizeof(ref->host_id), "%s", host_id);
            ref->batch_id = pl->batches[0].id;
            *act = ACT_TERM;
            return -2;
        }
        *act = ACT_NAK;
        waiting_since(w, host_id, true);
        atomic_fetch_add(&w->n.waiting, 1);
        break;
    case CENTRAL_REFUSED:
        log_error("central: host %s: batch %" PRId64 " refused (stream sequence %" PRIu64 "): %s", host_id,
                  out.refused_id, seq, out.reason);
        atomic_fetch_add(&w->n.refused, 1);
        h->moved = true;   /* the refusal row is part of the transaction */
        break;
    case CENTRAL_SHIPPED:
        h->moved = true;
        waiting_done(w, host_id);
        atomic_fetch_add(&w->n.batches, (uint64_t)out.shipped);
        atomic_fetch_add(&w->n.events, (uint64_t)out.events);
        atomic_fetch_add(&w->n.alerts, (uint64_t)out.alerts);
        if (chunk)
            atomic_fetch_add(&w->n.chunks, 1);
        break;
    }
    if (out.gap_first <= out.gap_last) {
        log_warn("central: host %s: batches %" PRId64 "..%" PRId64 " %s; recorded in the gaps table", host_id,
                 out.gap_first, out.gap_last,
                 pl->gap_from ? "were deleted on the host before they were published"
                              : "never came within --gap-wait (the stream lost them, or a message was refused)");
        atomic_fetch_add(&w->n.gaps, 1);
    }
    return 0;
failed:
    if (rc == -2 || (PQstatus(w->pg) == CONNECTION_OK && central_error_is_data())) {
        snprintf(ref->host_id, sizeof(ref->host_id), "%s", host_id);
        ref->batch_id = pl->nbatches ? pl->batches[0].id : pl->at_batch;
        snprintf(ref->reason, sizeof(ref->reason), "the central server or this consumer refused its rows (stream "
                 "sequence %" PRIu64 "): %.500s", seq, err);
        *act = ACT_TERM;
        return -2;
    }
    return -1;
}

/* Records a refused message; every text made valid UTF-8 first (a host id
 * or a reason may carry a hostile host's bytes). */
static int record_refusal(struct worker *w, const struct refusal *ref, char *err, size_t errlen)
{
    struct strbuf host = {0}, reason = {0};
    utf8_sanitize(&host, ref->host_id, strlen(ref->host_id));
    utf8_sanitize(&reason, ref->reason, strlen(ref->reason));
    strbuf_putc(&host, '\0');
    strbuf_putc(&reason, '\0');
    int rc = -1;
    if (host.failed || reason.failed)
        snprintf(err, errlen, "out of memory");
    else {
        log_error("central: partition %u: host %s: message refused: %s", w->partition, host.data, reason.data);
        struct central_head ignored;
        rc = central_begin_host(w->pg, host.data, "", &ignored, err, errlen) != 0 ||
                     central_record_refusal(w->pg, host.data, ref->batch_id, reason.data, err, errlen) != 0
                 ? -1
                 : 0;
    }
    strbuf_free(&host);
    strbuf_free(&reason);
    return rc;
}

/* One message, inside its own savepoint. 0, or -1 (the transaction is
 * lost: err). -3: its tables need the schema extended first. */
static int apply_message(struct worker *w, natsMsg *m, enum action *act, char *err, size_t errlen)
{
    const char *subject = natsMsg_GetSubject(m);
    uint64_t seq = 0;
    jsMsgMetaData *meta = NULL;
    if (natsMsg_GetMetaData(&meta, m) == NATS_OK) {
        seq = meta->Sequence.Stream;
        jsMsgMetaData_Destroy(meta);
    }
    struct refusal ref = {.batch_id = 0};
    char host_id[HOST_ID_MAX + 1], why[600];
    struct js_payload pl;
    int rc;
    if (subject_host(subject, host_id) != 0) {
        snprintf(ref.host_id, sizeof(ref.host_id), "%.*s", HOST_ID_MAX, subject);
        snprintf(ref.reason, sizeof(ref.reason), "subject %.200s names no host (stream sequence %" PRIu64 ")",
                 subject, seq);
        goto refuse;
    }
    rc = js_payload_decode(w->codec, natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m), &pl, why, sizeof(why));
    if (rc != 0) {
        snprintf(ref.host_id, sizeof(ref.host_id), "%s", host_id);
        snprintf(ref.reason, sizeof(ref.reason), "not a message this release reads (stream sequence %" PRIu64 "): %s",
                 seq, why);
        goto refuse;
    }
    if (strcmp(pl.host_id, host_id) != 0) {
        /* A host may publish only its own subjects (the servers' permissions):
         * a message naming another is not that other's. */
        snprintf(ref.host_id, sizeof(ref.host_id), "%s", host_id);
        ref.batch_id = pl.nbatches ? pl.batches[0].id : pl.at_batch;
        snprintf(ref.reason, sizeof(ref.reason), "the message on this host's subject names host '%.128s' "
                 "(stream sequence %" PRIu64 "); not merged", pl.host_id, seq);
        goto refuse;
    }
    if (!schema_known(w, &pl.tables))
        return -3;
    struct txn_host *h = txn_host(w, host_id, pl.hostname, err, errlen);
    if (!h)
        return -1;
    PGresult *res = PQexec(w->pg, "SAVEPOINT m");
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
    if (!ok) {
        snprintf(err, errlen, "savepoint: %s", PQerrorMessage(w->pg));
        return -1;
    }
    rc = apply_payload(w, &pl, host_id, h, seq, act, &ref, err, errlen);
    res = PQexec(w->pg, rc == -2 ? "ROLLBACK TO SAVEPOINT m" : "RELEASE SAVEPOINT m");
    ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
    if (rc == -1 || !ok) {
        if (ok == false && rc != -1)
            snprintf(err, errlen, "savepoint: %s", PQerrorMessage(w->pg));
        return -1;
    }
    if (rc == 0) {
        atomic_fetch_add(&w->n.messages, 1);
        return 0;
    }
refuse:
    *act = ACT_TERM;
    atomic_fetch_add(&w->n.refused, 1);
    atomic_fetch_add(&w->n.messages, 1);
    return record_refusal(w, &ref, err, errlen);
}

/* Publishes each host's new position (best effort: retention waits for the next). */
static void publish_positions(struct worker *w)
{
    for (int i = 0; i < w->nhosts; i++) {
        if (!w->hosts[i].moved)
            continue;
        char token[JS_TOKEN_MAX + 1], subject[JS_TOKEN_MAX + 32], text[32];
        if (js_subject_token(w->hosts[i].host_id, token, sizeof(token)) != 0)
            continue;
        snprintf(subject, sizeof(subject), JS_APPLIED_PREFIX "%s", token);
        int n = snprintf(text, sizeof(text), "%" PRId64, w->hosts[i].head.last_batch_id);
        natsConnection_Publish(w->link.nc, subject, text, n);
    }
}

static int record_position(struct worker *w, uint64_t last_seq, char *err, size_t errlen)
{
    char seq[24];
    snprintf(seq, sizeof(seq), "%" PRIu64, last_seq);
    const char *v[] = {w->c->o.stream.name, w->durable, seq};
    PGresult *res = PQexecParams(w->pg,
                                 "INSERT INTO nats_positions(stream, consumer, stream_seq) VALUES($1, $2, $3)"
                                 " ON CONFLICT (stream, consumer) DO UPDATE SET stream_seq ="
                                 " greatest(nats_positions.stream_seq, excluded.stream_seq), updated = now()",
                                 3, NULL, v, NULL, NULL, 0);
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    if (!ok) {
        char line[512];
        central_message_line(PQresultErrorMessage(res), line, sizeof(line));
        snprintf(err, errlen, "nats_positions: %s", line);
    }
    PQclear(res);
    return ok ? 0 : -1;
}

/* The fetched messages in one transaction, then their acks. 0, -1 central
 * error (nothing acked: the list stays for a retry), -3 the schema first. */
static int apply_list(struct worker *w, natsMsgList *list, char *err, size_t errlen)
{
    PGresult *res = PQexec(w->pg, "BEGIN");
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
    if (!ok) {
        snprintf(err, errlen, "begin: %s", PQerrorMessage(w->pg));
        return -1;
    }
    w->nhosts = 0;
    uint64_t last_seq = 0;
    int rc = 0;
    for (int i = 0; i < list->Count && rc == 0; i++) {
        rc = apply_message(w, list->Msgs[i], &w->actions[i], err, errlen);
        jsMsgMetaData *meta = NULL;
        if (rc == 0 && natsMsg_GetMetaData(&meta, list->Msgs[i]) == NATS_OK) {
            last_seq = meta->Sequence.Stream > last_seq ? meta->Sequence.Stream : last_seq;
            jsMsgMetaData_Destroy(meta);
        }
    }
    if (rc == 0 && last_seq)
        rc = record_position(w, last_seq, err, errlen);
    if (rc == 0)
        rc = central_commit(w->pg, err, errlen);
    if (rc != 0) {
        central_rollback(w->pg);
        return rc;
    }
    atomic_fetch_add(&w->n.transactions, 1);
    atomic_store(&w->n.last_seq, (int_fast64_t)last_seq);
    /* Committed: now, and only now, the stream may forget them. A crash
     * before the acks delivers them again, and they apply nothing. */
    for (int i = 0; i < list->Count; i++) {
        natsMsg *m = list->Msgs[i];
        natsStatus s = w->actions[i] == ACT_NAK ? natsMsg_NakWithDelay(m, 1000, NULL)
                       : w->actions[i] == ACT_TERM ? natsMsg_Term(m, NULL)
                                                   : natsMsg_AckSync(m, NULL, NULL);
        if (s != NATS_OK)
            log_warn("central: partition %u: an ack failed (%s): the message comes again after --ack-wait and "
                     "applies nothing", w->partition, natsStatus_GetText(s));
    }
    publish_positions(w);
    return 0;
}

/* Tells the stream the messages are still being worked on (the retries). */
static bool in_progress(natsMsgList *list)
{
    for (int i = 0; i < list->Count; i++)
        if (natsMsg_InProgress(list->Msgs[i], NULL) != NATS_OK)
            return false;
    return true;
}

static void refresh_info(struct worker *w)
{
    if (!w->sub || monotonic_ns() - w->info_ns < INFO_EVERY_NS)
        return;
    w->info_ns = monotonic_ns();
    jsConsumerInfo *ci = NULL;
    if (natsSubscription_GetConsumerInfo(&ci, w->sub, NULL, NULL) == NATS_OK) {
        atomic_store(&w->n.pending, (int_fast64_t)ci->NumPending);
        atomic_store(&w->n.ack_pending, (int_fast64_t)ci->NumAckPending);
        jsConsumerInfo_Destroy(ci);
    }
}

static void worker_sleep(struct worker *w, uint64_t ms)
{
    for (uint64_t slept = 0; slept < ms && !atomic_load(&w->c->stopping); slept += 100)
        usleep(100 * 1000);
}

static uint64_t backoff(struct worker *w, enum error_kind kind, const char *err)
{
    atomic_fetch_add(&w->n.errors[kind], 1);
    uint64_t wait_ms = shipper_next_backoff(&w->c->o.common, &w->backoff_ms);
    log_warn("central: partition %u: %s; retrying in %.1f s", w->partition, err, (double)wait_ms / 1000);
    return wait_ms;
}

static void stop_all(struct central *c) { atomic_store(&c->stopping, true); }

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct central *c = w->c;
    char err[1024];
    natsMsgList list = {0};
    while (!atomic_load(&c->stopping)) {
        bool lasting = false;
        if (ensure_nats(w, &lasting, err, sizeof(err)) != 0 || ensure_pg(w, &lasting, err, sizeof(err)) != 0) {
            if (lasting) {
                log_error("central: partition %u: %s; retrying cannot heal this: exiting", w->partition, err);
                atomic_store(&c->exit_status, 1);
                stop_all(c);
                break;
            }
            worker_sleep(w, backoff(w, w->sub ? ERR_CENTRAL : ERR_NATS, err));
            continue;
        }
        if (list.Count == 0) {
            refresh_info(w);
            jsErrCode code = 0;
            natsStatus s = natsSubscription_Fetch(&list, w->sub, (int)c->o.fetch, FETCH_WAIT_MS, &code);
            if (s == NATS_TIMEOUT)
                continue;
            if (s != NATS_OK) {
                js_status_text(s, code, err, sizeof(err));
                natsMsgList_Destroy(&list);
                memset(&list, 0, sizeof(list));
                drop_nats(w);
                worker_sleep(w, backoff(w, ERR_NATS, err));
                continue;
            }
        }
        int rc = apply_list(w, &list, err, sizeof(err));
        if (rc == -3) {
            /* A message describes columns the schema lacks: made outside
             * the transaction, then the same messages again. */
            struct js_payload pl;
            char why[512];
            for (int i = 0; i < list.Count && rc == -3; i++)
                if (js_payload_decode(w->codec, natsMsg_GetData(list.Msgs[i]),
                                      (size_t)natsMsg_GetDataLength(list.Msgs[i]), &pl, why, sizeof(why)) == 0 &&
                    !schema_known(w, &pl.tables) && ensure_schema(w, &pl.tables, err, sizeof(err)) != 0)
                    rc = -1;
            if (rc == -3)
                continue;
        }
        if (rc != 0) {
            if (PQstatus(w->pg) != CONNECTION_OK)
                drop_pg(w);
            worker_sleep(w, backoff(w, ERR_CENTRAL, err));
            if (!in_progress(&list)) {   /* they come again after --ack-wait */
                natsMsgList_Destroy(&list);
                memset(&list, 0, sizeof(list));
                drop_nats(w);
            }
            continue;
        }
        w->backoff_ms = 0;
        natsMsgList_Destroy(&list);
        memset(&list, 0, sizeof(list));
    }
    natsMsgList_Destroy(&list);
    drop_nats(w);
    drop_pg(w);
    if (atomic_fetch_sub(&c->running, 1) == 1)
        uv_async_send(&c->done);
    return NULL;
}

/* ---- the loop thread ---- */

static void on_signal(uv_signal_t *s, int signum)
{
    struct central *c = s->data;
    log_info("central: signal %d: stopping once the current transactions are done", signum);
    stop_all(c);
}

static void on_done(uv_async_t *a)
{
    struct central *c = a->data;
    uv_timer_stop(&c->stats_timer);
    uv_close((uv_handle_t *)&c->stats_timer, NULL);
    uv_close((uv_handle_t *)&c->sigterm, NULL);
    uv_close((uv_handle_t *)&c->sigint, NULL);
    uv_close((uv_handle_t *)&c->done, NULL);
    metrics_stop(&c->metrics);
}

static void on_stats(uv_timer_t *t)
{
    struct central *c = t->data;
    for (unsigned i = 0; i < c->nworkers; i++) {
        struct worker *w = &c->workers[i];
        uint64_t events = atomic_load(&w->n.events);
        log_info("central: partition %u: applied %" PRIu64 " events in the last %" PRIu64 " s (%.0f/s; %" PRIu64
                 " batches, %" PRIu64 " messages in all); %" PRIdFAST64 " messages pending in the stream, %"
                 PRIu64 " refused, %" PRIu64 " gaps%s", w->partition, events - w->interval_events_seen,
                 c->o.common.stats_s, (double)(events - w->interval_events_seen) / (double)c->o.common.stats_s,
                 (uint64_t)atomic_load(&w->n.batches), (uint64_t)atomic_load(&w->n.messages),
                 atomic_load(&w->n.pending), (uint64_t)atomic_load(&w->n.refused), (uint64_t)atomic_load(&w->n.gaps),
                 atomic_load(&w->n.up) ? "" : " (NATS unreachable)");
        w->interval_events_seen = events;
    }
}

/* One gauge per partition: the counters' field at off. */
static void gauge(struct strbuf *o, const struct central *c, const char *name, const char *help, size_t off)
{
    strbuf_printf(o, "# HELP seccheckd_central_%s %s\n# TYPE seccheckd_central_%s gauge\n", name, help, name);
    for (unsigned i = 0; i < c->nworkers; i++) {
        const atomic_int_fast64_t *v = (const atomic_int_fast64_t *)((const char *)&c->workers[i].n + off);
        strbuf_printf(o, "seccheckd_central_%s{partition=\"%u\"} %" PRIdFAST64 "\n", name, c->workers[i].partition,
                      atomic_load(v));
    }
}

static void render(struct strbuf *o, void *data)
{
    const struct central *c = data;
    struct { const char *name, *type, *help; size_t off; bool gauge; } series[] = {
#define S(field, type, help) {#field, type, help, offsetof(struct counters, field), false}
        S(messages, "counter", "Messages taken from the stream (applied, already there, or refused)."),
        S(batches, "counter", "Batches applied to the central copy."),
        S(events, "counter", "Events applied to the central copy."),
        S(alerts, "counter", "Alerts applied to the central copy."),
        S(already, "counter", "Messages the central copy had already (delivered again): nothing applied."),
        S(waiting, "counter", "Messages handed back to wait for the one before them."),
        S(refused, "counter", "Messages refused (recorded in refusals)."),
        S(gaps, "counter", "Gaps recorded."),
        S(syncs, "counter", "Sync messages applied (runs and connections changed after their batch)."),
        S(chunks, "counter", "Parts of batches too large for one message applied."),
        S(transactions, "counter", "Central transactions committed."),
#undef S
    };
    for (size_t s = 0; s < sizeof(series) / sizeof(series[0]); s++) {
        strbuf_printf(o, "# HELP seccheckd_central_%s_total %s\n# TYPE seccheckd_central_%s_total counter\n",
                      series[s].name, series[s].help, series[s].name);
        for (unsigned i = 0; i < c->nworkers; i++) {
            const atomic_uint_fast64_t *v = (const atomic_uint_fast64_t *)((const char *)&c->workers[i].n +
                                                                            series[s].off);
            strbuf_printf(o, "seccheckd_central_%s_total{partition=\"%u\"} %" PRIu64 "\n", series[s].name,
                          c->workers[i].partition, (uint64_t)atomic_load(v));
        }
    }
    gauge(o, c, "pending", "Messages of the partition the consumer has not been given yet.",
          offsetof(struct counters, pending));
    gauge(o, c, "ack_pending", "Messages given to the consumer and not acked yet.",
          offsetof(struct counters, ack_pending));
    gauge(o, c, "stream_seq", "The last stream sequence applied.", offsetof(struct counters, last_seq));
    gauge(o, c, "up", "1 while connected to NATS, the consumer bound.", offsetof(struct counters, up));
    strbuf_puts(o, "# HELP seccheckd_central_errors_total Failed steps by kind (each is retried).\n"
                   "# TYPE seccheckd_central_errors_total counter\n");
    for (unsigned i = 0; i < c->nworkers; i++)
        for (int k = 0; k < ERR_KINDS; k++)
            strbuf_printf(o, "seccheckd_central_errors_total{partition=\"%u\",kind=\"%s\"} %" PRIu64 "\n",
                          c->workers[i].partition, error_names[k], (uint64_t)atomic_load(&c->workers[i].n.errors[k]));
}

/* Before the workers: the stream is there and fits, its partitions known. */
static int check_stream(struct central *c, char *err, size_t errlen)
{
    struct js_link l = {0};
    bool lasting;
    char inbox[96];
    snprintf(inbox, sizeof(inbox), "_INBOX_%s", c->o.durable);
    struct js_link_options lo = {.urls = c->o.urls, .auth_file = c->o.auth_file, .ca_file = c->o.ca_file,
                                 .name = "seccheckd-central", .inbox = inbox,
                                 .timeout_ms = (int64_t)c->o.common.timeout_ms};
    uint64_t backoff_ms = 0;
    for (;;) {
        int rc = js_link_connect(&l, &lo, &lasting, err, errlen);
        if (rc == 0) {
            rc = js_stream_verify(&l, &c->o.stream, JS_CHECK_ESSENTIAL, &c->partitions, err, errlen);
            lasting = rc == -2;
            js_link_close(&l);
        }
        if (rc == 0)
            return 0;
        if (lasting)
            return -1;
        uint64_t wait_ms = shipper_next_backoff(&c->o.common, &backoff_ms);
        log_warn("central: %s; retrying in %.1f s", err, (double)wait_ms / 1000);
        usleep((useconds_t)(wait_ms * 1000));
    }
}

int jetstream_central_main(int argc, char **argv)
{
    static struct central c;
    memset(&c, 0, sizeof(c));
    int rc = parse_options(&c.o, argc, argv);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    char err[1024];
    /* Until the stream is reached, SIGTERM's default action ends the wait. */
    rc = check_stream(&c, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, PROG ": %s\n", err);
        return 1;
    }
    if (c.o.partition >= (int)c.partitions) {
        fprintf(stderr, PROG ": --partition %d: stream %s has partitions 0 to %u\n", c.o.partition, c.o.stream.name,
                c.partitions - 1);
        return 2;
    }
    c.loop = uv_default_loop();
    uv_signal_init(c.loop, &c.sigterm);
    uv_signal_init(c.loop, &c.sigint);
    c.sigterm.data = c.sigint.data = &c;
    c.nworkers = c.o.partition >= 0 ? 1 : c.partitions;
    c.workers = calloc(c.nworkers, sizeof(*c.workers));
    for (unsigned i = 0; c.workers && i < c.nworkers; i++) {
        struct worker *w = &c.workers[i];
        w->c = &c;
        w->partition = c.o.partition >= 0 ? (unsigned)c.o.partition : i;
        snprintf(w->durable, sizeof(w->durable), "%s-%u", c.o.durable, w->partition);
        snprintf(w->filter, sizeof(w->filter), JS_SUBJECT_ROOT ".%u.*.batch", w->partition);
        w->codec = js_codec_new(0);
        w->actions = calloc(c.o.fetch, sizeof(*w->actions));
        if (!w->codec || !w->actions) {
            fprintf(stderr, PROG ": out of memory\n");
            rc = 1;
        }
    }
    if (!c.workers)
        rc = 1;
    if (rc == 0 && c.o.common.metrics_listen &&
        metrics_start(&c.metrics, c.loop, c.o.common.metrics_listen, render, &c, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s\n", err);
        rc = 1;
    }
    if (rc != 0) {
        uv_close((uv_handle_t *)&c.sigterm, NULL);
        uv_close((uv_handle_t *)&c.sigint, NULL);
        uv_run(c.loop, UV_RUN_DEFAULT);
        uv_loop_close(c.loop);
        goto out;
    }
    uv_timer_init(c.loop, &c.stats_timer);
    uv_async_init(c.loop, &c.done, on_done);
    c.stats_timer.data = c.done.data = &c;
    uv_signal_start(&c.sigterm, on_signal, SIGTERM);
    uv_signal_start(&c.sigint, on_signal, SIGINT);
    if (c.o.common.stats_s)
        uv_timer_start(&c.stats_timer, on_stats, c.o.common.stats_s * 1000, c.o.common.stats_s * 1000);
    log_info("central: stream %s (%u partition%s) -> the central PostgreSQL: %s", c.o.stream.name, c.partitions,
             cli_plural(c.partitions),
             c.o.partition >= 0 ? "one partition" : "every partition, a worker each");
    atomic_store(&c.running, c.nworkers);
    for (unsigned i = 0; i < c.nworkers; i++) {
        int e = thread_start_blocking_signals(&c.workers[i].thread, NULL, worker_main, &c.workers[i]);
        if (e != 0) {
            log_error("central: cannot start a worker: %s", strerror(e));
            atomic_store(&c.exit_status, 1);
            stop_all(&c);
            if (atomic_fetch_sub(&c.running, 1) == 1)
                uv_async_send(&c.done);
            continue;
        }
        c.workers[i].started = true;
    }
    uv_run(c.loop, UV_RUN_DEFAULT);
    for (unsigned i = 0; i < c.nworkers; i++)
        if (c.workers[i].started)
            pthread_join(c.workers[i].thread, NULL);
    uv_loop_close(c.loop);
    rc = atomic_load(&c.exit_status);
out:
    for (unsigned i = 0; c.workers && i < c.nworkers; i++) {
        js_codec_free(c.workers[i].codec);
        free(c.workers[i].actions);
    }
    free(c.workers);
    return rc;
}
