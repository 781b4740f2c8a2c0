/* publish.c - `seccheckd forward --to nats://...`: the daemon's committed
 * batches into the fleet's stream, exactly once (jetstream.h).
 *
 * One thread: a libuv loop whose step timer builds and publishes one
 * message at a time (nats.c calls block for a publish's round trip), and
 * between steps serves the metrics endpoint and signals.
 *
 * Where it is lives in the stream, not here: at start, and whenever the
 * stream answers that the host's subject moved on without us, it reads the
 * subject's last message and goes on after it, once that message's batch
 * is checked against this database's (another host under the same id, or
 * a database restored from an older copy, is refused). A message that
 * fails is sent again as it was, with the same Nats-Msg-Id and expected
 * sequence, so neither a retry nor a lost answer can repeat or skip one.
 *
 * The database stays the spool: retention keeps every batch the central
 * copy does not have yet (seccheckd central publishes how far it has each
 * host on seccheck.applied.<host>), not just what the stream acknowledged:
 * the stream can lose its last seconds in a power cut of its nodes. */
#include "jetstream.h"

#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "alert_outbox.h"
#include "cli.h"
#include "clock.h"
#include "internal.h"
#include "log.h"
#include "metrics.h"
#include "rules.h"
#include "shipper_options.h"
#include "sqlutil.h"

#define PROG "seccheckd forward"
#define NS_PER_S ((int64_t)1000000000)
#define APPLIED_EVERY_NS (1 * NS_PER_S)
#define SYNC_EVERY_NS (1 * NS_PER_S)
#define ALERTS_PER_READ 256

enum error_kind { ERR_CONNECT, ERR_STREAM, ERR_LOCAL, ERR_REFUSED, ERR_KINDS };
static const char *const error_names[ERR_KINDS] = {"connect", "stream", "local", "refused"};

struct options {
    const char *db_path, *urls, *auth_file, *ca_file;
    struct shipper_options common;
    struct js_stream_spec stream;
    char host_id[HOST_ID_MAX + 1];
    char hostname[SHIPPER_HOSTNAME_MAX + 1];
    uint64_t message_events, poll_ms;
    int level;                      /* zstd's; 0: none */
    bool live_alerts;
};

/* Where the host is in the stream: after the last message acked. */
struct position {
    uint64_t seq;                   /* the subject's last stream sequence (0: none) */
    int64_t at_batch;               /* the last whole batch in the stream */
    uint8_t at_hash[CHAIN_HASH_LEN];
    bool in_chunk;                  /* batch at_batch + 1 is half sent */
    int64_t chunk_index, next_event;
    int64_t names_id;               /* container_info rows up to this id are in */
    /* Runs and connections from these ids on may still change: a run's
     * stop reaches the central copy with a sync (runs_from moves with syncs
     * only), a connection's close with the next message of any kind. */
    int64_t runs_from, conns_from;
    int64_t conns_seen;             /* the highest connection id when the last message was built */
};

/* The message built and not acked yet: sent again as it is until it is. */
struct pending {
    bool ready;
    struct strbuf bytes;
    char msg_id[JS_TOKEN_MAX + 64];
    struct position after;          /* where the host is once it is in */
    enum js_kind kind;
    int64_t first_batch, batches, events, alerts;
    int64_t alerts_lo, alerts_hi;   /* ids of its alerts (lo > hi: none) */
    bool whole_sync;                /* a sync of every row from the marks on */
    int64_t sync_connections;       /* a sync: the connections rows it holds */
};

struct publisher {
    struct options o;
    uv_loop_t *loop;
    uv_timer_t step_timer, stats_timer;
    uv_signal_t sigterm, sigint;
    struct metrics metrics;
    struct local local;
    bool local_open;
    struct js_link link;
    bool connected, resumed;
    unsigned partitions, partition;
    char token[JS_TOKEN_MAX + 1];
    char subject[JS_TOKEN_MAX + 64], alerts_subject[JS_TOKEN_MAX + 64], applied_subject[JS_TOKEN_MAX + 64];
    char applied_stream[160];
    int64_t max_payload;
    struct js_codec *codec;
    /* Version 2 (jetstream.h): events as their chained columns, read as
     * such, when the host's events table allows it. */
    bool chained;
    struct local_table chained_events;
    int64_t v2_first_event_id;
    struct strbuf body, sync_body;
    struct local_batch *batches;
    struct position pos;
    /* The message on its way (or to send) and the one after it, rendered
     * while the stream takes the first. */
    struct pending slots[2];
    int cur;
    bool in_flight;                 /* slots[cur] sent, its answer not read yet */
    int64_t sent_ns;
    natsSubscription *acks;         /* the stream's answers: ack_prefix.<attempt> */
    char ack_prefix[JS_TOKEN_MAX + 64];
    uint64_t attempt;
    double bytes_per_event;         /* compressed, as the last messages went: sizes the next */
    int64_t synced_version, synced_ns, whole_synced_ns;
    uint64_t synced_connections_total;
    struct alert_outbox_reader alerts;
    bool alerts_open;
    struct strbuf alert_line;
    /* the central copy's position, as seccheckd central published it */
    int64_t applied, applied_read_ns, saved, saved_ns;
    bool applied_warned, central_caught_up;
    uint64_t backoff_ms;
    bool lasting;
    int exit_status;
    bool caught_up;
    uint64_t run_events, run_batches;
    int64_t run_started_ns;
    struct local_lag lag;
    double lag_seconds;
    /* counters */
    uint64_t messages_total, batches_total, events_total, alerts_total, bytes_total, raw_bytes_total;
    uint64_t chunks_total, syncs_total, duplicates_total, refused_total, paused_total, resumes_total, gaps_total;
    uint64_t rerenders_total;
    uint64_t live_alerts_total, live_alerts_failed_total;
    uint64_t errors[ERR_KINDS];
    uint64_t interval_events, interval_batches, interval_messages;
};

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: seccheckd forward --to nats://HOST:PORT[,nats://HOST:PORT...] [--db PATH] [OPTIONS]\n"
            "Publishes the batches the daemon committed to its SQLite database into the fleet's NATS\n"
            "JetStream stream, exactly once, in order, with their hash chain; seccheckd central applies\n"
            "them to PostgreSQL. (--to postgresql://... ships to PostgreSQL directly: see --to.)\n"
            "\n"
            "  --to URLS              the NATS servers, nats:// or tls:// (TLS; the system's CAs or\n"
            "                         --nats-ca), comma-separated. No credentials in them\n"
            "  --nats-auth FILE       USER:PASSWORD on its first line, or a NATS .creds file\n"
            "  --nats-ca FILE         PEM certificates to trust for tls:// [the system's]\n"
            "  --stream NAME          the stream seccheckd nats-setup made [SECCHECK]\n"
            "  --partitions K         hosts hash to K partitions; must be the stream's [the stream's]\n"
            "  --db PATH              the daemon's database [./seccheck.db]\n"
            "  --host-id ID           this host's name in the central copy [/etc/machine-id, or the hostname]\n"
            "  --message-events N     events per message, at most (a message stays under the servers'\n"
            "                         max_payload whatever N is) [32768]\n"
            "  --compress LEVEL       zstd level of the messages, -7 (fastest) to 19, 0 for none; -1\n"
            "                         compressed the mixed trace's rows as small as 1 at twice the speed [-1]\n"
            "  --no-live-alerts       do not publish each alert on seccheck.alerts.<host>\n"
            "  --metrics-listen ADDR  serve Prometheus metrics at HOST:PORT (loopback) or unix:PATH [off]\n"
            "  --poll-ms N            when caught up, look for new batches this often [200]\n"
            "  --timeout-ms N         connecting, and waiting for the stream's answer [5000]\n"
            "  --retry-min-ms N       first wait after a failure, doubling [500]\n"
            "  --retry-max-ms N       longest wait between retries [30000]\n"
            "  --stats-interval S     log progress this often (0: never), and at each catch-up [60]\n"
            "  --log-level LEVEL      error, warn, info or debug [info]\n"
            "  --help                 this text\n"
            "\n"
            "Servers down, a stream without quorum or full: publishing pauses (counted, logged) and\n"
            "resumes; the daemon keeps storing, and its retention keeps every batch the central copy\n"
            "does not have yet. What retrying cannot heal (--db missing, the credentials refused, a\n"
            "stream of another shape) ends it with exit status 1, the reason logged.\n");
}

static int parse_level(const char *s, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < -7 || v > 19)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_options(struct options *o, int argc, char **argv)
{
    static const struct option options[] = {
        {"to", required_argument, NULL, 't'},         {"db", required_argument, NULL, 'd'},
        {"host-id", required_argument, NULL, 'H'},    {"nats-auth", required_argument, NULL, 'a'},
        {"nats-ca", required_argument, NULL, 'c'},    {"stream", required_argument, NULL, 'S'},
        {"partitions", required_argument, NULL, 'k'}, {"message-events", required_argument, NULL, 'e'},
        {"compress", required_argument, NULL, 'z'},   {"no-live-alerts", no_argument, NULL, 'A'},
        {"poll-ms", required_argument, NULL, 'p'},    SHIPPER_TIMEOUT_OPTION,
        SHIPPER_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    *o = (struct options){.db_path = "./seccheck.db", .common = SHIPPER_OPTIONS_DEFAULT, .message_events = 32768,
                          .poll_ms = 200, .level = -1, .live_alerts = true, .stream = {.name = JS_DEFAULT_STREAM}};
    const char *host_id = NULL;
    uint64_t k = 0;
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, CLI_GETOPT_QUIET "h", options, NULL)) != -1) {
        switch (ch) {
        case 't': o->urls = optarg; break;
        case 'd': o->db_path = optarg; break;
        case 'H': host_id = optarg; break;
        case 'a': o->auth_file = optarg; break;
        case 'c': o->ca_file = optarg; break;
        case 'S': o->stream.name = optarg; break;
        case 'k': if (cli_parse_uint(PROG, "partitions", optarg, 1, JS_PARTITIONS_MAX, &k)) return 2; break;
        case 'e': if (cli_parse_uint(PROG, "message-events", optarg, 1, 1000000, &o->message_events)) return 2; break;
        case 'z':
            if (parse_level(optarg, &o->level) != 0)
                return cli_usage_error(PROG, "--compress: expected a zstd level from -7 to 19, or 0 for none", optarg);
            break;
        case 'A': o->live_alerts = false; break;
        case 'p': if (cli_parse_uint(PROG, "poll-ms", optarg, 1, 600000, &o->poll_ms)) return 2; break;
        case 'h': usage(stdout); return -1;
        default: if (shipper_take_option(&o->common, PROG, ch, argv)) return 2; break;
        }
    }
    o->stream.partitions = (unsigned)k;
    if (shipper_check_no_operands(PROG, argc, argv))
        return 2;
    char err[512];
    if (js_link_check_urls(o->urls, "--to", err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s\n", err);
        return 2;
    }
    if (shipper_identify_host(PROG, host_id, o->host_id, o->hostname) || shipper_finish_options(&o->common, PROG))
        return 2;
    return 0;
}

/* ---- failures ---- */

static uint64_t fail(struct publisher *p, enum error_kind kind, const char *msg)
{
    p->errors[kind]++;
    uint64_t wait_ms = shipper_next_backoff(&p->o.common, &p->backoff_ms);
    if (kind == ERR_CONNECT || kind == ERR_STREAM)
        log_warn("forward: %s; publishing paused, the daemon keeps storing; retrying in %.1f s", msg,
                 (double)wait_ms / 1000);
    else
        log_error("forward: %s; retrying in %.1f s", msg, (double)wait_ms / 1000);
    return wait_ms;
}

static struct pending *current(struct publisher *p) { return &p->slots[p->cur]; }
static struct pending *following(struct publisher *p) { return &p->slots[p->cur ^ 1]; }

/* Nothing built or on its way: what comes next is built from the position. */
static void forget_messages(struct publisher *p)
{
    p->slots[0].ready = p->slots[1].ready = false;
    p->in_flight = false;
}

static void drop_link(struct publisher *p)
{
    if (p->acks)
        natsSubscription_Destroy(p->acks);
    p->acks = NULL;
    js_link_close(&p->link);
    p->connected = false;
    p->resumed = false;
    forget_messages(p);
}

/* ---- connecting and resuming ---- */

static int ensure_local(struct publisher *p, enum error_kind *kind, char *err, size_t errlen)
{
    *kind = ERR_LOCAL;
    if (!p->local_open) {
        if (local_open(&p->local, p->o.db_path, &p->lasting, err, errlen) != 0)
            return -1;
        p->local_open = true;
    }
    bool changed;
    if (local_load_columns(&p->local, &changed, &p->lasting, err, errlen) != 0)
        return -1;
    p->chained = js_events_decodable(&p->local.events);
    js_chained_events_table(&p->chained_events);
    /* Schema version 1's rows end where meta says (a database no daemon
     * upgraded: none ends); read as verify reads it. */
    int64_t version = sqlutil_int(p->local.db, "SELECT CAST(value AS INTEGER) FROM meta WHERE key='schema_version'", 2);
    p->v2_first_event_id = version < 2 ? INT64_MAX
                                       : sqlutil_int(p->local.db, "SELECT CAST(value AS INTEGER) FROM meta"
                                                                  " WHERE key='schema_v2_first_event_id'", 1);
    if (p->v2_first_event_id < 1)
        p->v2_first_event_id = 1;
    return 0;
}

/* A request the servers dropped because this user may not make it: their
 * asynchronous error says so (the request itself only times out). The
 * permissions do not change by retrying: lasting. */
static bool denied(struct publisher *p, const char *what, char *err, size_t errlen)
{
    char async[256];
    js_link_take_async_error(&p->link, async, sizeof(async));
    if (!strcasestr(async, "permissions violation"))
        return false;
    snprintf(err, errlen, "the servers refused %s: %s (the user of --nats-auth may use only its own host's "
             "subjects and inbox: is --host-id %s the host this user is for?)", what, async, p->o.host_id);
    p->lasting = true;
    return true;
}

static int ensure_link(struct publisher *p, enum error_kind *kind, char *err, size_t errlen)
{
    if (p->connected)
        return 0;
    *kind = ERR_CONNECT;
    char name[HOST_ID_MAX + 64], inbox[JS_TOKEN_MAX + 16];
    snprintf(name, sizeof(name), "seccheckd-forward %s", p->o.host_id);
    snprintf(inbox, sizeof(inbox), "_INBOX_%s", p->token);
    struct js_link_options lo = {.urls = p->o.urls, .auth_file = p->o.auth_file, .ca_file = p->o.ca_file,
                                 .name = name, .inbox = inbox, .timeout_ms = (int64_t)p->o.common.timeout_ms};
    if (js_link_connect(&p->link, &lo, &p->lasting, err, errlen) != 0)
        return -1;
    unsigned k = 0;
    int rc = js_stream_verify(&p->link, &p->o.stream, JS_CHECK_ESSENTIAL, &k, err, errlen);
    if (rc != 0) {
        *kind = ERR_STREAM;
        p->lasting = rc == -2;
        char what[128];
        snprintf(what, sizeof(what), "the info of stream %s", p->o.stream.name);
        denied(p, what, err, errlen);
        js_link_close(&p->link);
        return -1;
    }
    if (p->o.stream.partitions && k != p->o.stream.partitions) {   /* js_stream_verify names it; belt and braces */
        *kind = ERR_STREAM;
        p->lasting = true;
        snprintf(err, errlen, "stream %s has %u partitions, --partitions says %u", p->o.stream.name, k,
                 p->o.stream.partitions);
        js_link_close(&p->link);
        return -1;
    }
    p->partitions = k;
    p->partition = js_partition_of(p->o.host_id, k);
    snprintf(p->subject, sizeof(p->subject), JS_SUBJECT_ROOT ".%u.%s.batch", p->partition, p->token);
    p->max_payload = natsConnection_GetMaxPayload(p->link.nc);
    /* The stream answers each publish on a subject of this connection's
     * own, one per attempt, so an answer to an attempt given up on is
     * never taken for the next one's. */
    snprintf(p->ack_prefix, sizeof(p->ack_prefix), "_INBOX_%s.pub%" PRIx64, p->token,
             (uint64_t)realtime_ns() ^ (uint64_t)getpid());
    char acks[JS_TOKEN_MAX + 72];
    snprintf(acks, sizeof(acks), "%s.*", p->ack_prefix);
    natsStatus s = natsConnection_SubscribeSync(&p->acks, p->link.nc, acks);
    if (s != NATS_OK) {
        snprintf(err, errlen, "subscribing to the stream's answers: %s", natsStatus_GetText(s));
        js_link_close(&p->link);
        return -1;
    }
    p->connected = true;
    log_info("forward: connected to %s; stream %s (%u partition%s): publishing on %s", p->o.urls,
             p->o.stream.name, k, cli_plural(k), p->subject);
    return 0;
}

static void hex8(const uint8_t *h, char out[17])
{
    for (int i = 0; i < 8; i++)
        snprintf(out + 2 * i, 3, "%02x", h[i]);
}

/* The batch b of the stream's last message against this database's: 0
 * the same chain, -1 not (err), *wait when this database is behind. */
static int check_batch(struct publisher *p, int64_t id, const uint8_t hash[CHAIN_HASH_LEN], char *err, size_t errlen)
{
    struct local_batch b;
    int found = local_batch_by_id(&p->local, id, &b);
    if (found < 0) {
        snprintf(err, errlen, "reading local batch %" PRId64 ": %s", id, sqlite3_errmsg(p->local.db));
        return -1;
    }
    if (found) {
        if (memcmp(b.hash, hash, CHAIN_HASH_LEN) == 0)
            return 0;
        char a[17], c[17];
        hex8(hash, a);
        hex8(b.hash, c);
        snprintf(err, errlen, "host %s: the stream's batch %" PRId64 " (hash %s...) is not this database's (hash "
                 "%s...): another host publishes under host id '%s', or this database was restored from an older "
                 "copy; not published", p->o.host_id, id, a, c, p->o.host_id);
        return -2;
    }
    struct local_lag lag;
    if (local_lag_after(&p->local, 0, &lag) == 0 && lag.newest_id < id) {
        snprintf(err, errlen, "host %s: the stream holds batches up to %" PRId64 ", this database only up to %" PRId64
                 ": another host under this id, or restored from an older copy? Waiting for the daemon to catch up",
                 p->o.host_id, id, lag.newest_id);
        return -2;
    }
    return 0;   /* deleted here since: the central copy had it */
}

/* Reads the subject's last message and goes on after it. */
static int resume(struct publisher *p, enum error_kind *kind, char *err, size_t errlen)
{
    /* A sync on its way when the link dropped may or may not be in. */
    local_sync_forget(&p->local);
    *kind = ERR_STREAM;
    jsDirectGetMsgOptions dg;
    jsDirectGetMsgOptions_Init(&dg);
    dg.LastBySubject = p->subject;
    natsMsg *m = NULL;
    natsStatus s = js_DirectGetMsg(&m, p->link.js, p->o.stream.name, NULL, &dg);
    struct position pos = {0};
    if (s == NATS_OK) {
        struct js_payload pl;
        char why[512];
        int rc = js_payload_decode(p->codec, natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m), &pl, why,
                                   sizeof(why));
        pos.seq = natsMsg_GetSequence(m);
        natsMsg_Destroy(m);
        if (rc != 0 || strcmp(pl.host_id, p->o.host_id) != 0) {
            snprintf(err, errlen, "the last message on %s (sequence %" PRIu64 ") is not one of this host's this "
                     "release reads: %.300s", p->subject, pos.seq, rc ? why : "it names another host");
            *kind = ERR_REFUSED;
            return -1;
        }
        pos.at_batch = pl.at_batch;
        memcpy(pos.at_hash, pl.at_hash, CHAIN_HASH_LEN);
        pos.names_id = pl.names_id;
        pos.runs_from = pl.open_runs_from;
        pos.conns_from = pl.open_conns_from;
        pos.conns_seen = pl.open_conns_seen;
        if (pl.kind == JS_KIND_CHUNK && !pl.chunk.final) {
            pos.in_chunk = true;
            pos.chunk_index = pl.chunk.index;
            pos.next_event = pl.next_event;
        }
        *kind = ERR_LOCAL;
        rc = pos.at_batch ? check_batch(p, pos.at_batch, pos.at_hash, err, errlen) : 0;
        if (rc == 0 && pos.in_chunk)
            rc = check_batch(p, pl.batches[0].id, pl.batches[0].hash, err, errlen);
        if (rc != 0) {
            if (rc == -2) {
                *kind = ERR_REFUSED;
                p->refused_total++;
            }
            return -1;
        }
    } else if (s != NATS_NOT_FOUND) {
        char why[300], what[JS_TOKEN_MAX + 96];
        snprintf(what, sizeof(what), "reading the last message on %s", p->subject);
        if (!denied(p, what, err, errlen)) {
            js_status_text(s, 0, why, sizeof(why));
            snprintf(err, errlen, "%s: %s", what, why);
        }
        return -1;
    }
    p->pos = pos;
    forget_messages(p);
    p->resumed = true;
    p->resumes_total++;
    log_info("forward: host %s: the stream has batches up to %" PRId64 "%s (subject sequence %" PRIu64 "); going on "
             "from there", p->o.host_id, pos.at_batch, pos.in_chunk ? " and part of the next" : "", pos.seq);
    return 0;
}

/* ---- building a message ---- */

static int keep_all(struct strbuf *out, void *data)
{
    (void)out;
    (void)data;
    return 0;
}

/* Renders part's rows after what body holds, as a section of pl. Rows, or -1. */
static int64_t add_section(struct publisher *p, struct js_payload *pl, struct strbuf *body, enum local_part part,
                           int64_t lo, int64_t hi, struct local_span *span, char *err, size_t errlen)
{
    if (!local_part_table(&p->local, part))
        return 0;
    size_t off = body->len;
    const struct local_table *cols = part == LOCAL_PART_EVENTS && pl->chained_events ? &p->chained_events : NULL;
    int64_t rows = local_copy_part_columns(&p->local, part, cols, lo, hi, NULL, body, SIZE_MAX, keep_all, NULL, span,
                                           err, errlen);
    if (rows < 0)
        return -1;
    if (body->failed) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pl->sections[part] = (struct js_section){.present = true, .rows = rows, .off = off, .len = body->len - off};
    return rows;
}

/* A message that is not a sync moves the marks only past rows it carries.
 * A run that stopped after its last batch went out is only in a sync:
 * until one is sent, its mark stays (a host has few runs). A connection
 * goes past the mark closed, in span_closed_connections, only once an
 * earlier message could have seen it (up to the last one's highest id):
 * one opened and closed since, without events, is left to the next
 * message or sync. */
static void hold_marks_without_sync(const struct publisher *p, struct js_payload *pl)
{
    pl->open_runs_from = p->pos.runs_from;
    int64_t seen_next = p->pos.conns_seen < INT64_MAX ? p->pos.conns_seen + 1 : INT64_MAX;
    if (pl->open_conns_from > seen_next)
        pl->open_conns_from = seen_next;
    if (pl->open_conns_from < p->pos.conns_from)
        pl->open_conns_from = p->pos.conns_from;
}

static void start_payload(struct publisher *p, struct js_payload *pl, enum js_kind kind)
{
    memset(pl, 0, sizeof(*pl));
    pl->kind = kind;
    snprintf(pl->host_id, sizeof(pl->host_id), "%s", p->o.host_id);
    snprintf(pl->hostname, sizeof(pl->hostname), "%s", p->o.hostname);
    pl->tables = p->local;
    pl->tables.db = NULL;
    pl->chained_events = p->chained;
    pl->v2_first_event_id = p->v2_first_event_id;
    pl->names_id = p->pos.names_id;
    local_open_marks(&p->local, &pl->open_runs_from, &pl->open_conns_from);
    pl->open_conns_seen = local_last_connection_id(&p->local);
    if (kind != JS_KIND_SYNC)
        hold_marks_without_sync(p, pl);
}

/* The connections this message's mark moves past (closed, seen by an
 * earlier message that may have sent them open) go with it: no sync would
 * send their close later. */
static void span_closed_connections(const struct publisher *p, const struct js_payload *pl, struct local_span *conns)
{
    int64_t lo = p->pos.conns_from > 1 ? p->pos.conns_from : 1;
    int64_t hi = pl->open_conns_from - 1;
    if (lo > hi)
        return;
    conns->min = lo < conns->min ? lo : conns->min;
    conns->max = hi > conns->max ? hi : conns->max;
}

/* Where conn_id is in the events rows pl's events section is read with. */
static int events_conn_column(const struct publisher *p, const struct js_payload *pl)
{
    return local_column_index(pl->chained_events ? &p->chained_events : &p->local.events, "conn_id");
}

/* The names (container_info) past those sent: with every message. */
static int add_names(struct publisher *p, struct js_payload *pl, struct strbuf *body, char *err, size_t errlen)
{
    struct local_span ids = {.col = 0};
    if (add_section(p, pl, body, LOCAL_PART_NAMES, p->pos.names_id, 0, &ids, err, errlen) < 0)
        return -1;
    if (ids.min <= ids.max)
        pl->names_id = ids.max;
    return 0;
}

/* The rows of batches b[0..n) (whole) into body. */
static int render_batches(struct publisher *p, struct js_payload *pl, const struct local_batch *b, int n,
                          struct pending *pd, char *err, size_t errlen)
{
    int64_t lo = INT64_MAX, hi = 0;
    for (int i = 0; i < n; i++)
        if (b[i].has_range && b[i].events > 0) {
            lo = b[i].first < lo ? b[i].first : lo;
            hi = b[i].last > hi ? b[i].last : hi;
        }
    struct local_span conns = {.col = events_conn_column(p, pl)};
    struct local_span alerts = {.col = 0};
    int64_t events = add_section(p, pl, &p->body, LOCAL_PART_EVENTS, lo, hi, &conns, err, errlen);
    int64_t nalerts = events < 0 ? -1 : add_section(p, pl, &p->body, LOCAL_PART_ALERTS, lo, hi, &alerts, err, errlen);
    span_closed_connections(p, pl, &conns);
    if (nalerts < 0 || add_names(p, pl, &p->body, err, errlen) != 0 ||
        add_section(p, pl, &p->body, LOCAL_PART_BATCHES, b[0].id, b[n - 1].id, NULL, err, errlen) < 0 ||
        add_section(p, pl, &p->body, LOCAL_PART_RUNS, b[0].id, b[n - 1].id, NULL, err, errlen) < 0 ||
        (conns.min <= conns.max &&
         add_section(p, pl, &p->body, LOCAL_PART_CONNECTIONS, conns.min, conns.max, NULL, err, errlen) < 0))
        return -1;
    pd->events = events;
    pd->alerts = nalerts;
    pd->alerts_lo = alerts.min;
    pd->alerts_hi = alerts.max;
    return 0;
}

/* What an event takes in a message, learned: a larger figure at once, a
 * smaller one slowly, so the next message is rarely rendered twice for
 * being too large (each render reads the rows again). */
static void learn_size(struct publisher *p, size_t bytes, int64_t events)
{
    if (events <= 0)
        return;
    double now = (double)bytes / (double)events;
    p->bytes_per_event = now > p->bytes_per_event ? now : 0.75 * p->bytes_per_event + 0.25 * now;
}

/* Encodes pl with p->body (events of them) into the pending message, and
 * learns what an event takes. 0, 1 too large for one message, -1 error. */
static int seal(struct publisher *p, const struct js_payload *pl, int64_t events, struct pending *pd, char *err,
                size_t errlen)
{
    if (p->body.len > JS_BODY_MAX / 2) {
        learn_size(p, p->body.len, events);
        p->rerenders_total++;
        return 1;
    }
    if (js_payload_encode(p->codec, pl, p->body.data, p->body.len, &pd->bytes, err, errlen) != 0)
        return -1;
    learn_size(p, pd->bytes.len, events);
    /* Headers (Nats-Msg-Id, the expected sequence) and the protocol line. */
    if ((int64_t)pd->bytes.len + 512 > p->max_payload) {
        p->rerenders_total++;
        return 1;
    }
    p->raw_bytes_total += p->body.len;
    return 0;
}

/* How many events the next message should hold, from what the last ones
 * compressed to. */
static int64_t events_budget(const struct publisher *p)
{
    double fit = (double)p->max_payload * 0.7 / (p->bytes_per_event > 1 ? p->bytes_per_event : 1);
    int64_t n = fit < 1 ? 1 : (int64_t)fit;
    return n > (int64_t)p->o.message_events ? (int64_t)p->o.message_events : n;
}

/* One part of batch b: events from p->pos.next_event on, as many as fit. */
static int build_chunk(struct publisher *p, const struct local_batch *b, struct pending *pd, char *err, size_t errlen)
{
    int64_t from = p->pos.in_chunk ? p->pos.next_event : b->first, index = p->pos.in_chunk ? p->pos.chunk_index + 1 : 1;
    for (int64_t count = events_budget(p);; count = count / 2) {
        if (count < 1) {
            snprintf(err, errlen, "batch %" PRId64 ": event %" PRId64 " alone does not fit one message (the servers' "
                     "max_payload is %" PRId64 " bytes): raise max_payload", b->id, from, p->max_payload);
            return -1;
        }
        int64_t to = count > b->last - from ? b->last : from + count - 1;
        bool final = to >= b->last;
        struct js_payload pl;
        start_payload(p, &pl, JS_KIND_CHUNK);
        pl.batches = (struct local_batch *)b;
        pl.nbatches = 1;
        pl.chunk = (struct central_chunk){.index = index, .final = final};
        pl.next_event = final ? 0 : to + 1;
        pl.at_batch = final ? b->id : p->pos.at_batch;
        memcpy(pl.at_hash, final ? b->hash : p->pos.at_hash, CHAIN_HASH_LEN);
        if (b->id > p->pos.at_batch + 1 && index == 1)
            pl.gap_from = p->pos.at_batch + 1;
        strbuf_reset(&p->body);
        struct local_span conns = {.col = events_conn_column(p, &pl)};
        struct local_span alerts = {.col = 0};
        int64_t events = add_section(p, &pl, &p->body, LOCAL_PART_EVENTS, from, to, &conns, err, errlen);
        int64_t nalerts = events < 0 ? -1 : add_section(p, &pl, &p->body, LOCAL_PART_ALERTS, from, to, &alerts, err,
                                                        errlen);
        span_closed_connections(p, &pl, &conns);
        if (nalerts < 0 || add_names(p, &pl, &p->body, err, errlen) != 0 ||
            (final && (add_section(p, &pl, &p->body, LOCAL_PART_BATCHES, b->id, b->id, NULL, err, errlen) < 0 ||
                       add_section(p, &pl, &p->body, LOCAL_PART_RUNS, b->id, b->id, NULL, err, errlen) < 0)) ||
            (conns.min <= conns.max &&
             add_section(p, &pl, &p->body, LOCAL_PART_CONNECTIONS, conns.min, conns.max, NULL, err, errlen) < 0))
            return -1;
        int rc = seal(p, &pl, events, pd, err, errlen);
        if (rc < 0)
            return -1;
        if (rc == 1)
            continue;
        pd->kind = JS_KIND_CHUNK;
        pd->first_batch = b->id;
        pd->batches = final ? 1 : 0;
        pd->events = events;
        pd->alerts = nalerts;
        pd->alerts_lo = alerts.min;
        pd->alerts_hi = alerts.max;
        pd->after = p->pos;
        pd->after.at_batch = pl.at_batch;
        memcpy(pd->after.at_hash, pl.at_hash, CHAIN_HASH_LEN);
        pd->after.in_chunk = !final;
        pd->after.chunk_index = final ? 0 : index;
        pd->after.next_event = pl.next_event;
        pd->after.names_id = pl.names_id;
        pd->after.runs_from = pl.open_runs_from;
        pd->after.conns_from = pl.open_conns_from;
        pd->after.conns_seen = pl.open_conns_seen;
        snprintf(pd->msg_id, sizeof(pd->msg_id), "%s:%" PRId64 ":%" PRId64, p->token, b->id, index);
        return 0;
    }
}

/* Whole batches b[0..n), as many as fit; a first batch that does not fit
 * alone goes in chunks. */
static int build_batches(struct publisher *p, const struct local_batch *b, int n, struct pending *pd, char *err,
                         size_t errlen)
{
    int64_t budget = events_budget(p), events = 0;
    int take = 0;
    while (take < n && (take == 0 || events + b[take].events <= budget)) {
        events += b[take].events;
        take++;
    }
    if (take == 1 && b[0].events > budget)   /* it will not fit: in parts, without trying whole */
        return build_chunk(p, &b[0], pd, err, errlen);
    for (;;) {
        struct js_payload pl;
        start_payload(p, &pl, JS_KIND_BATCHES);
        pl.batches = (struct local_batch *)b;
        pl.nbatches = take;
        pl.at_batch = b[take - 1].id;
        memcpy(pl.at_hash, b[take - 1].hash, CHAIN_HASH_LEN);
        if (b[0].id > p->pos.at_batch + 1)
            pl.gap_from = p->pos.at_batch + 1;
        strbuf_reset(&p->body);
        if (render_batches(p, &pl, b, take, pd, err, errlen) != 0)
            return -1;
        int rc = seal(p, &pl, pd->events, pd, err, errlen);
        if (rc < 0)
            return -1;
        if (rc == 1 && take > 1) {
            take /= 2;
            continue;
        }
        if (rc == 1)   /* one batch larger than a message */
            return build_chunk(p, &b[0], pd, err, errlen);
        pd->kind = JS_KIND_BATCHES;
        pd->first_batch = b[0].id;
        pd->batches = take;
        pd->after = p->pos;
        pd->after.at_batch = pl.at_batch;
        memcpy(pd->after.at_hash, pl.at_hash, CHAIN_HASH_LEN);
        pd->after.in_chunk = false;
        pd->after.names_id = pl.names_id;
        pd->after.runs_from = pl.open_runs_from;
        pd->after.conns_from = pl.open_conns_from;
        pd->after.conns_seen = pl.open_conns_seen;
        snprintf(pd->msg_id, sizeof(pd->msg_id), "%s:%" PRId64 ":1", p->token, pl.at_batch);
        if (pl.gap_from) {
            log_warn("forward: host %s: batches %" PRId64 "..%" PRId64 " were deleted locally before they were "
                     "published (--max-db-size); the message says so, and the central gaps table will name them",
                     p->o.host_id, pl.gap_from, b[0].id - 1);
            p->gaps_total++;
        }
        return 0;
    }
}

/* Caught up: the runs and connections that may have changed since their
 * batch (a close, a stop, counters) and new names, when the daemon
 * committed since and they differ from the last ones sent. 0 built, 1
 * nothing to send, -1 error. */
static int build_sync(struct publisher *p, struct pending *pd, char *err, size_t errlen)
{
    int64_t version = local_data_version(&p->local);
    if (p->pos.at_batch == 0 || p->pos.in_chunk || version == p->synced_version ||
        monotonic_ns() - p->synced_ns < SYNC_EVERY_NS)
        return 1;
    struct js_payload pl;
    start_payload(p, &pl, JS_KIND_SYNC);
    pl.at_batch = p->pos.at_batch;
    memcpy(pl.at_hash, p->pos.at_hash, CHAIN_HASH_LEN);
    strbuf_reset(&p->body);
    bool whole = !p->local.sync_known || monotonic_ns() - p->whole_synced_ns > LOCAL_SYNC_WHOLE_EVERY_S * NS_PER_S;
    if (whole)
        local_sync_forget(&p->local);
    int64_t conns;
    if (add_names(p, &pl, &p->body, err, errlen) != 0 ||
        add_section(p, &pl, &p->body, LOCAL_PART_OPEN_RUNS, p->pos.runs_from, 0, NULL, err, errlen) < 0 ||
        local_sync_note(&p->local, p->pos.conns_from, err, errlen) != 0 ||
        (conns = add_section(p, &pl, &p->body, LOCAL_PART_OPEN_CONNECTIONS, p->pos.conns_from,
                             local_sync_since(&p->local, p->pos.conns_from), NULL, err, errlen)) < 0)
        return -1;
    p->synced_ns = monotonic_ns();
    p->synced_version = version;
    if (p->body.len == p->sync_body.len && memcmp(p->body.data, p->sync_body.data, p->body.len) == 0 &&
        pl.open_runs_from == p->pos.runs_from && pl.open_conns_from == p->pos.conns_from)
        return 1;   /* the same rows as last time */
    int rc = seal(p, &pl, 0, pd, err, errlen);
    if (rc != 0) {
        if (rc == 1)
            snprintf(err, errlen, "the runs and connections still open (%zu bytes) do not fit one message",
                     p->body.len);
        return -1;
    }
    strbuf_reset(&p->sync_body);
    strbuf_append(&p->sync_body, p->body.data, p->body.len);
    pd->kind = JS_KIND_SYNC;
    pd->whole_sync = whole;
    pd->sync_connections = conns;
    pd->batches = pd->events = pd->alerts = 0;
    pd->alerts_lo = 1;
    pd->alerts_hi = 0;
    pd->after = p->pos;
    pd->after.names_id = pl.names_id;
    pd->after.runs_from = pl.open_runs_from;
    pd->after.conns_from = pl.open_conns_from;
    pd->after.conns_seen = pl.open_conns_seen;
    snprintf(pd->msg_id, sizeof(pd->msg_id), "%s:%" PRId64 ":sync-%" PRId64, p->token, p->pos.at_batch,
             realtime_ns());
    return 0;
}

/* The next message into pd: 0 built, 1 nothing to publish, -1 error. */
static int build_next(struct publisher *p, struct pending *pd, char *err, size_t errlen)
{
    if (local_begin(&p->local, err, errlen) != 0)
        return -1;
    int rc;
    if (p->pos.in_chunk) {
        struct local_batch b;
        int found = local_batch_by_id(&p->local, p->pos.at_batch + 1, &b);
        if (found != 1) {
            snprintf(err, errlen, "batch %" PRId64 ", half published, is no longer in the database",
                     p->pos.at_batch + 1);
            local_end(&p->local);
            return -1;
        }
        rc = build_chunk(p, &b, pd, err, errlen);
    } else {
        int n = local_batches_after(&p->local, p->pos.at_batch, JS_BATCHES_MAX, (int64_t)p->o.message_events,
                                    p->batches, err, errlen);
        rc = n < 0 ? -1 : n == 0 ? build_sync(p, pd, err, errlen) : build_batches(p, p->batches, n, pd, err, errlen);
    }
    local_end(&p->local);
    if (rc == 0)
        pd->ready = true;
    return rc;
}

/* ---- publishing ---- */

struct alert_ctx {
    struct publisher *p;
    int64_t hi, last;
};

static bool publish_alert(const struct alert_outbox_row *row, void *data)
{
    struct alert_ctx *c = data;
    struct publisher *p = c->p;
    if (row->id > c->hi)
        return false;
    c->last = row->id;
    strbuf_reset(&p->alert_line);
    rules_alert_json(&p->alert_line, p->o.hostname, row->rule, row->priority, row->time_ns, row->output,
                     row->output_len, row->output_fields, row->tags, row->suppressed);
    natsStatus s = p->alert_line.failed ? NATS_NO_MEMORY
                                        : natsConnection_Publish(p->link.nc, p->alerts_subject, p->alert_line.data,
                                                                 (int)p->alert_line.len);
    if (s == NATS_OK)
        p->live_alerts_total++;
    else
        p->live_alerts_failed_total++;
    return true;
}

/* The alerts of the message just acked, each as Falco's JSON on
 * seccheck.alerts.<host>: best effort (the batch is the durable copy). */
static void publish_alerts(struct publisher *p, int64_t lo, int64_t hi)
{
    if (!p->o.live_alerts || lo > hi || !p->local.has_alerts)
        return;
    char err[256];
    if (!p->alerts_open) {
        if (alert_outbox_reader_open(&p->alerts, p->o.db_path, err, sizeof(err)) != 0) {
            log_warn("forward: live alerts: %s", err);
            p->live_alerts_failed_total += (uint64_t)(hi - lo + 1);
            return;
        }
        p->alerts_open = true;
    }
    struct alert_ctx c = {.p = p, .hi = hi, .last = lo - 1};
    for (;;) {
        int64_t before = c.last;
        int n = alert_outbox_read(&p->alerts, c.last, ALERTS_PER_READ, publish_alert, &c, err, sizeof(err));
        if (n < 0)
            log_warn("forward: live alerts: %s", err);
        if (n < ALERTS_PER_READ || c.last == before || c.last >= hi)
            break;
    }
}

/* The stream stored a sync: the next one sends what changed since. */
static void sync_taken(struct publisher *p, const struct pending *pd)
{
    char err[256];
    p->syncs_total++;
    p->synced_connections_total += (uint64_t)pd->sync_connections;
    if (pd->whole_sync)
        p->whole_synced_ns = monotonic_ns();
    if (local_sync_taken(&p->local, err, sizeof(err)) != 0)
        log_warn("forward: host %s: %s; the next sync sends every row again", p->o.host_id, err);
}

static void acked(struct publisher *p, uint64_t seq)
{
    struct pending *pd = current(p);
    p->pos = pd->after;
    p->pos.seq = seq;
    pd->ready = false;
    p->in_flight = false;
    p->cur ^= 1;   /* the one rendered meanwhile, if any, goes next */
    p->messages_total++;
    p->interval_messages++;
    p->bytes_total += pd->bytes.len;
    p->batches_total += (uint64_t)pd->batches;
    p->events_total += (uint64_t)pd->events;
    p->alerts_total += (uint64_t)pd->alerts;
    p->interval_batches += (uint64_t)pd->batches;
    p->interval_events += (uint64_t)pd->events;
    p->run_batches += (uint64_t)pd->batches;
    p->run_events += (uint64_t)pd->events;
    if (pd->kind == JS_KIND_CHUNK)
        p->chunks_total++;
    if (pd->kind == JS_KIND_SYNC)
        sync_taken(p, pd);
    if (pd->kind != JS_KIND_SYNC)
        p->caught_up = false;
    publish_alerts(p, pd->alerts_lo, pd->alerts_hi);
    log_debug("forward: published %s (%zu bytes, %" PRId64 " events) at sequence %" PRIu64, pd->msg_id,
              pd->bytes.len, pd->events, seq);
}

/* Sends the current message: headers Nats-Msg-Id and the subject's
 * expected last sequence, its answer asked for on ack_prefix.<attempt>.
 * 0, or -1 with err (the connection). */
static int send_current(struct publisher *p, char *err, size_t errlen)
{
    struct pending *pd = current(p);
    char reply[JS_TOKEN_MAX + 96], seq[24];
    snprintf(reply, sizeof(reply), "%s.%" PRIu64, p->ack_prefix, ++p->attempt);
    snprintf(seq, sizeof(seq), "%" PRIu64, p->pos.seq);
    natsMsg *m = NULL;
    natsStatus s = natsMsg_Create(&m, p->subject, reply, pd->bytes.data, (int)pd->bytes.len);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, "Nats-Msg-Id", pd->msg_id);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, "Nats-Expected-Last-Subject-Sequence", seq);
    if (s == NATS_OK)
        s = natsConnection_PublishMsg(p->link.nc, m);
    natsMsg_Destroy(m);
    if (s != NATS_OK) {
        char why[300];
        js_status_text(s, 0, why, sizeof(why));
        snprintf(err, errlen, "publishing %s: %s", pd->msg_id, why);
        return -1;
    }
    p->in_flight = true;
    p->sent_ns = monotonic_ns();
    return 0;
}

/* The stream's answer to the current attempt. 0 stored (*seq, *dup); 1
 * refused (*code, why); 2 no answer in time, or no stream there (why);
 * -1 the connection failed (why). */
static int read_answer(struct publisher *p, uint64_t *seq, bool *dup, int *code, char *why, size_t whylen)
{
    char want[JS_TOKEN_MAX + 96];
    snprintf(want, sizeof(want), "%s.%" PRIu64, p->ack_prefix, p->attempt);
    for (;;) {
        int64_t left = ((int64_t)p->o.common.timeout_ms * 1000000 - (monotonic_ns() - p->sent_ns)) / 1000000;
        natsMsg *m = NULL;
        natsStatus s = left > 0 ? natsSubscription_NextMsg(&m, p->acks, left) : NATS_TIMEOUT;
        if (s == NATS_TIMEOUT) {
            snprintf(why, whylen, "no answer within %" PRIu64 " ms (servers down, or no quorum)",
                     p->o.common.timeout_ms);
            return 2;
        }
        if (s != NATS_OK) {
            js_status_text(s, 0, why, whylen);
            return -1;
        }
        if (strcmp(natsMsg_GetSubject(m), want) != 0) {   /* an attempt given up on */
            natsMsg_Destroy(m);
            continue;
        }
        const char *status = NULL;
        if (natsMsgHeader_Get(m, "Status", &status) == NATS_OK && status && strcmp(status, "503") == 0) {
            snprintf(why, whylen, "no stream takes the host's subject (no responders: the stream or its leader is gone)");
            natsMsg_Destroy(m);
            return 2;
        }
        json_error_t jerr;
        json_t *a = json_loadb(natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m), 0, &jerr);
        natsMsg_Destroy(m);
        json_t *e = json_object_get(a, "error"), *sq = json_object_get(a, "seq");
        int rc;
        if (json_is_object(e)) {
            *code = (int)json_integer_value(json_object_get(e, "err_code"));
            const char *d = json_string_value(json_object_get(e, "description"));
            snprintf(why, whylen, "%s (JetStream error %d)", d ? d : "refused", *code);
            rc = 1;
        } else if (json_is_integer(sq) && json_integer_value(sq) > 0) {
            *seq = (uint64_t)json_integer_value(sq);
            *dup = json_is_true(json_object_get(a, "duplicate"));
            rc = 0;
        } else {
            snprintf(why, whylen, "an answer that is not JetStream's");
            rc = 2;
        }
        json_decref(a);
        return rc;
    }
}

/* The current message's answer: 0 stored (or the position read again),
 * -1 with err (the message stays, to be sent again). */
static int await_current(struct publisher *p, enum error_kind *kind, char *err, size_t errlen)
{
    struct pending *pd = current(p);
    uint64_t seq = 0;
    bool dup = false;
    int code = 0;
    char why[400], what[JS_TOKEN_MAX + 96];
    int rc = read_answer(p, &seq, &dup, &code, why, sizeof(why));
    p->in_flight = false;
    *kind = ERR_STREAM;
    if (rc == 0 && dup) {
        /* Stored before (an answer lost): the subject's last message says
         * whether it is ours. */
        p->duplicates_total++;
        p->resumed = false;
        return resume(p, kind, err, errlen);
    }
    if (rc == 0) {
        log_debug("forward: %s stored at sequence %" PRIu64 " (its answer read %.1f ms after it was sent, the next "
                  "message rendered meanwhile)", pd->msg_id, seq, (double)(monotonic_ns() - p->sent_ns) / 1e6);
        acked(p, seq);
        return 0;
    }
    snprintf(what, sizeof(what), "publishing on %s", p->subject);
    if (denied(p, what, err, errlen)) {
        *kind = ERR_REFUSED;
        return -1;
    }
    if (rc == 1 && code == JSStreamWrongLastSequenceErr) {
        /* The subject moved on: our message got in and its answer was lost,
         * or another publisher uses this host id. The last message tells. */
        p->resumed = false;
        log_info("forward: %s: %s; reading where the stream is", pd->msg_id, why);
        return resume(p, kind, err, errlen);
    }
    p->paused_total++;
    snprintf(err, errlen, "publishing %s: %s", pd->msg_id, why);
    if (rc < 0)
        *kind = ERR_CONNECT;
    return -1;
}

/* While the stream takes the current message, the next one is rendered
 * from where the current one leaves the host (a failure here is only
 * tried again later). */
static void build_following(struct publisher *p)
{
    struct pending *cur = current(p), *next = following(p);
    if (next->ready || cur->kind == JS_KIND_SYNC)
        return;
    struct position now = p->pos;
    char err[512];
    int64_t start = monotonic_ns();
    p->pos = cur->after;
    if (build_next(p, next, err, sizeof(err)) < 0)
        next->ready = false;
    p->pos = now;
    if (next->ready)
        log_debug("forward: %s rendered in %.1f ms while %s was on its way", next->msg_id,
                  (double)(monotonic_ns() - start) / 1e6, cur->msg_id);
}

/* ---- the central copy's position, for retention ---- */

static void read_applied(struct publisher *p, bool now)
{
    if (!p->connected || (!now && monotonic_ns() - p->applied_read_ns < APPLIED_EVERY_NS))
        return;
    p->applied_read_ns = monotonic_ns();
    jsDirectGetMsgOptions dg;
    jsDirectGetMsgOptions_Init(&dg);
    dg.LastBySubject = p->applied_subject;
    natsMsg *m = NULL;
    natsStatus s = js_DirectGetMsg(&m, p->link.js, p->applied_stream, NULL, &dg);
    if (s == NATS_OK) {
        char text[64];
        int len = natsMsg_GetDataLength(m);
        snprintf(text, sizeof(text), "%.*s", len < 63 ? len : 63, natsMsg_GetData(m));
        char *end;
        long long v = strtoll(text, &end, 10);
        if (end != text && v >= 0)
            p->applied = v;
        natsMsg_Destroy(m);
        /* Once each time it gets there: the end of the whole way. */
        bool all_in = p->applied >= p->pos.at_batch && p->pos.at_batch > 0 && p->lag.batches == 0;
        if (all_in && !p->central_caught_up)
            log_info("forward: host %s: the central copy has every batch, up to %" PRId64, p->o.host_id, p->applied);
        p->central_caught_up = all_in;
    } else if (s != NATS_NOT_FOUND && !p->applied_warned) {
        char why[300];
        js_status_text(s, 0, why, sizeof(why));
        log_warn("forward: cannot read the central copy's position (%s on %s): %s; retention keeps every batch "
                 "until it can", p->applied_subject, p->applied_stream, why);
        p->applied_warned = true;
    }
}

static void save_progress(struct publisher *p, bool now)
{
    if (!p->local_open || p->local.batches.ncols == 0)
        return;
    int64_t keep_after = p->applied < p->pos.at_batch ? p->applied : p->pos.at_batch;
    if (keep_after != p->saved && (now || monotonic_ns() - p->saved_ns >= NS_PER_S)) {
        char err[256];
        p->saved_ns = monotonic_ns();
        if (local_save_progress(&p->local, p->o.urls, p->o.host_id, keep_after, err, sizeof(err)) == 0)
            p->saved = keep_after;
        else
            log_warn("forward: cannot record progress in %s: %s", p->o.db_path, err);
    }
}

static void after_step(struct publisher *p)
{
    read_applied(p, false);
    save_progress(p, false);
    if (local_lag_after(&p->local, p->pos.at_batch, &p->lag) == 0)
        p->lag_seconds = p->lag.batches ? (double)(realtime_ns() - p->lag.oldest_committed_ns) / 1e9 : 0;
}

static void note_caught_up(struct publisher *p)
{
    if (p->caught_up)
        return;
    p->caught_up = true;
    int64_t now = monotonic_ns();
    log_info("forward: host %s: caught up at batch %" PRId64 ": published %" PRIu64 " batches, %" PRIu64 " events "
             "in %.1f s; the central copy has up to batch %" PRId64, p->o.host_id, p->pos.at_batch, p->run_batches,
             p->run_events, (double)(now - p->run_started_ns) / 1e9, p->applied);
    p->run_batches = p->run_events = 0;
    p->run_started_ns = now;
}

/* The wait before the next step in ms; UINT64_MAX: stop. */
static uint64_t step(struct publisher *p)
{
    char err[1024];
    enum error_kind kind = ERR_LOCAL;
    int rc = ensure_local(p, &kind, err, sizeof(err));
    if (rc == 0)
        rc = ensure_link(p, &kind, err, sizeof(err));
    if (rc == 0 && !p->resumed)
        rc = resume(p, &kind, err, sizeof(err));
    int built = 0;
    if (rc == 0 && !current(p)->ready) {
        kind = ERR_LOCAL;
        built = build_next(p, current(p), err, sizeof(err));
        rc = built < 0 ? -1 : 0;
    }
    if (rc == 0 && current(p)->ready && !p->in_flight) {
        kind = ERR_CONNECT;
        rc = send_current(p, err, sizeof(err));
    }
    if (rc == 0 && p->in_flight) {
        build_following(p);
        rc = await_current(p, &kind, err, sizeof(err));
    }
    if (rc != 0) {
        if (kind == ERR_CONNECT)
            drop_link(p);
        if (p->local_open)
            after_step(p);
        if (p->lasting) {
            p->errors[kind]++;
            log_error("forward: %s; retrying cannot heal this: exiting", err);
            return UINT64_MAX;
        }
        return fail(p, kind, err);
    }
    p->backoff_ms = 0;
    after_step(p);
    if (built == 1 && p->lag.batches == 0) {
        note_caught_up(p);
        return p->o.poll_ms;
    }
    return 0;
}

/* ---- the loop ---- */

static void stop_loop(struct publisher *p)
{
    uv_timer_stop(&p->step_timer);
    uv_timer_stop(&p->stats_timer);
    uv_close((uv_handle_t *)&p->step_timer, NULL);
    uv_close((uv_handle_t *)&p->stats_timer, NULL);
    uv_close((uv_handle_t *)&p->sigterm, NULL);
    uv_close((uv_handle_t *)&p->sigint, NULL);
    metrics_stop(&p->metrics);
}

static void on_step(uv_timer_t *t)
{
    struct publisher *p = t->data;
    uint64_t wait = step(p);
    if (wait == UINT64_MAX) {
        p->exit_status = 1;
        stop_loop(p);
        return;
    }
    uv_timer_start(&p->step_timer, on_step, wait, 0);
}

static void on_stats(uv_timer_t *t)
{
    struct publisher *p = t->data;
    char behind[200];
    if (p->lag.batches)
        snprintf(behind, sizeof(behind), "behind the daemon by %" PRId64 " batches, %" PRId64 " events, %.1f s",
                 p->lag.batches, p->lag.events, p->lag_seconds);
    else
        snprintf(behind, sizeof(behind), "behind the daemon by 0 (caught up at batch %" PRId64 ")", p->pos.at_batch);
    log_info("forward: host %s: published %" PRIu64 " messages, %" PRIu64 " batches, %" PRIu64 " events in the last %"
             PRIu64 " s (%" PRIu64 " events in all)%s; %s; the central copy has up to batch %" PRId64, p->o.host_id,
             p->interval_messages, p->interval_batches, p->interval_events, p->o.common.stats_s, p->events_total,
             p->connected ? "" : " (the stream is unreachable)", behind, p->applied);
    p->interval_messages = p->interval_batches = p->interval_events = 0;
}

static void on_signal(uv_signal_t *s, int signum)
{
    struct publisher *p = s->data;
    log_info("forward: signal %d: stopping (the stream has batches up to %" PRId64 ")", signum, p->pos.at_batch);
    stop_loop(p);
}

static void render(struct strbuf *o, void *data)
{
    const struct publisher *p = data;
#define METRIC(name, type, help, fmt, value)                                                                      \
    strbuf_printf(o, "# HELP seccheckd_forward_" name " " help "\n# TYPE seccheckd_forward_" name " " type          \
                     "\nseccheckd_forward_" name " " fmt "\n", value)
    METRIC("messages_total", "counter", "Messages the stream acknowledged.", "%" PRIu64, p->messages_total);
    METRIC("batches_total", "counter", "Batches the stream acknowledged.", "%" PRIu64, p->batches_total);
    METRIC("events_total", "counter", "Events the stream acknowledged.", "%" PRIu64, p->events_total);
    METRIC("alerts_total", "counter", "Alerts the stream acknowledged (with their events).", "%" PRIu64,
           p->alerts_total);
    METRIC("bytes_total", "counter", "Bytes of the messages acknowledged (compressed).", "%" PRIu64, p->bytes_total);
    METRIC("raw_bytes_total", "counter", "Bytes of the messages rendered, before compression.", "%" PRIu64,
           p->raw_bytes_total);
    METRIC("chunks_total", "counter", "Messages holding a part of a batch too large for one.", "%" PRIu64,
           p->chunks_total);
    METRIC("syncs_total", "counter", "Messages of runs and connections changed after their batch.", "%" PRIu64,
           p->syncs_total);
    METRIC("synced_connections_total", "counter", "Connections rows the syncs held: those that may have changed "
           "since the sync before.", "%" PRIu64, p->synced_connections_total);
    METRIC("rerenders_total", "counter", "Messages rendered again, smaller, for being larger than max_payload.",
           "%" PRIu64, p->rerenders_total);
    METRIC("duplicates_total", "counter", "Publishes the stream answered as duplicates (Nats-Msg-Id).", "%" PRIu64,
           p->duplicates_total);
    METRIC("refused_total", "counter", "Times the stream's chain of this host id was not this database's.",
           "%" PRIu64, p->refused_total);
    METRIC("paused_total", "counter", "Publishes the stream did not take (full, no quorum, down): retried.",
           "%" PRIu64, p->paused_total);
    METRIC("resumes_total", "counter", "Times the position was read from the stream.", "%" PRIu64, p->resumes_total);
    METRIC("gaps_total", "counter", "Batches deleted locally before they were published (runs of them).", "%" PRIu64,
           p->gaps_total);
    METRIC("live_alerts_total", "counter", "Alerts published on seccheck.alerts.<host>.", "%" PRIu64,
           p->live_alerts_total);
    METRIC("live_alerts_failed_total", "counter", "Alerts that could not be published live (best effort).",
           "%" PRIu64, p->live_alerts_failed_total);
    METRIC("lag_batches", "gauge", "Batches the daemon committed that the stream lacks.", "%" PRId64, p->lag.batches);
    METRIC("lag_events", "gauge", "Events the daemon committed that the stream lacks.", "%" PRId64, p->lag.events);
    METRIC("lag_seconds", "gauge", "Age of the oldest batch not published yet.", "%.3f", p->lag_seconds);
    METRIC("shipped_batch_id", "gauge", "Last batch id the stream holds.", "%" PRId64, p->pos.at_batch);
    METRIC("central_batch_id", "gauge", "Last batch id the central copy has (seccheckd central says).", "%" PRId64,
           p->applied);
    METRIC("stream_up", "gauge", "1 while connected to the servers, the stream checked.", "%d", p->connected ? 1 : 0);
#undef METRIC
    strbuf_puts(o, "# HELP seccheckd_forward_errors_total Failed steps by kind (each is retried).\n"
                   "# TYPE seccheckd_forward_errors_total counter\n");
    for (int k = 0; k < ERR_KINDS; k++)
        strbuf_printf(o, "seccheckd_forward_errors_total{kind=\"%s\"} %" PRIu64 "\n", error_names[k], p->errors[k]);
}

int jetstream_forward_main(int argc, char **argv)
{
    static struct publisher p;
    memset(&p, 0, sizeof(p));
    int rc = parse_options(&p.o, argc, argv);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    js_subject_token(p.o.host_id, p.token, sizeof(p.token));
    snprintf(p.alerts_subject, sizeof(p.alerts_subject), JS_ALERTS_PREFIX "%s", p.token);
    snprintf(p.applied_subject, sizeof(p.applied_subject), JS_APPLIED_PREFIX "%s", p.token);
    snprintf(p.applied_stream, sizeof(p.applied_stream), "%s" JS_APPLIED_SUFFIX, p.o.stream.name);
    p.codec = js_codec_new(p.o.level);
    p.batches = calloc(JS_BATCHES_MAX, sizeof(*p.batches));
    if (!p.codec || !p.batches) {
        fprintf(stderr, PROG ": out of memory\n");
        js_codec_free(p.codec);
        free(p.batches);
        return 1;
    }
    p.saved = -1;
    /* Learned from the first message on; until then the mixed trace's:
     * ~530 bytes a row, ~40 compressed (bench/nats.sh), with room. */
    p.bytes_per_event = p.o.level ? 100 : 600;
    p.loop = uv_default_loop();
    char err[512];
    if (p.o.common.metrics_listen &&
        metrics_start(&p.metrics, p.loop, p.o.common.metrics_listen, render, &p, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s\n", err);
        rc = 1;
        goto out;
    }
    uv_timer_init(p.loop, &p.step_timer);
    uv_timer_init(p.loop, &p.stats_timer);
    uv_signal_init(p.loop, &p.sigterm);
    uv_signal_init(p.loop, &p.sigint);
    p.step_timer.data = p.stats_timer.data = p.sigterm.data = p.sigint.data = &p;
    uv_signal_start(&p.sigterm, on_signal, SIGTERM);
    uv_signal_start(&p.sigint, on_signal, SIGINT);
    p.run_started_ns = monotonic_ns();
    uv_timer_start(&p.step_timer, on_step, 0, 0);
    if (p.o.common.stats_s)
        uv_timer_start(&p.stats_timer, on_stats, p.o.common.stats_s * 1000, p.o.common.stats_s * 1000);
    log_info("forward: %s -> NATS JetStream stream %s as host %s", p.o.db_path, p.o.stream.name, p.o.host_id);
    uv_run(p.loop, UV_RUN_DEFAULT);
    uv_loop_close(p.loop);
    rc = p.exit_status;
    if (p.local_open) {
        read_applied(&p, true);
        save_progress(&p, true);
    }
out:
    if (p.alerts_open)
        alert_outbox_reader_close(&p.alerts);
    drop_link(&p);
    if (p.local_open)
        local_close(&p.local);
    js_codec_free(p.codec);
    free(p.batches);
    strbuf_free(&p.body);
    strbuf_free(&p.sync_body);
    strbuf_free(&p.slots[0].bytes);
    strbuf_free(&p.slots[1].bytes);
    strbuf_free(&p.alert_line);
    return rc;
}
