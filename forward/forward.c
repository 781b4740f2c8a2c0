/* forward.c - the forwarder's command line, loop and counters (forward.h).
 *
 * One thread: a libuv loop whose step timer runs one central transaction at
 * a time (libpq calls block for its length), and between steps serves the
 * metrics endpoint and signals.
 */
#include "forward.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "central.h"
#include "cli.h"
#include "clock.h"
#include "host_id.h"
#include "local.h"
#include "log.h"
#include "metrics.h"
#include "shipper_options.h"

#define PROG "seccheckd forward"
#define MAX_BATCHES_PER_TXN 1024
#define NS_PER_S 1000000000LL

enum error_kind { ERR_CONNECT, ERR_CENTRAL, ERR_LOCAL, ERR_CHAIN, ERR_KINDS };
static const char *const error_names[ERR_KINDS] = {"connect", "central", "local", "chain_refused"};

struct forward_options {
    const char *db_path, *url;
    struct shipper_options common;
    char host_id[HOST_ID_MAX + 1];
    char hostname[SHIPPER_HOSTNAME_MAX + 1];  /* this machine's, beside the id in the central hosts table */
    uint64_t txn_events, poll_ms;
    bool init_schema;
};

struct forwarder {
    struct forward_options o;
    uv_loop_t *loop;
    uv_timer_t step_timer, stats_timer;
    uv_signal_t sigterm, sigint;
    struct metrics metrics;
    struct local local;
    bool local_open;
    PGconn *pg;
    bool schema_ready;
    int64_t shipped;                  /* last batch the central copy has, as last read */
    int64_t saved;                    /* last value written to forward_progress, -1 none */
    int64_t saved_ns;                 /* when (monotonic) */
    uint64_t backoff_ms;
    /* Runs and connections rows re-sent when caught up: from these ids on,
     * whenever the daemon committed since (data_version). */
    int64_t runs_from, conns_from, synced_version;
    int64_t pending_runs_from, pending_conns_from, pending_version;
    bool pending_whole;             /* the sync in the open transaction sends every row */
    int64_t pending_sync_connections;   /* and this many connections rows */
    int64_t whole_synced_ns;
    uint64_t synced_connections_total;
    int64_t version_before_snapshot;  /* read before it: a later commit shows as a change */
    /* counters */
    uint64_t batches_total, events_total, alerts_total, transactions_total, gaps_total, gap_batches_total;
    uint64_t errors[ERR_KINDS];
    uint64_t interval_batches, interval_events, interval_alerts;
    /* Shipped since the forwarder last caught up (or started), and when
     * that was (monotonic): the catch-up line says how much and how long. */
    bool caught_up;
    uint64_t run_batches, run_events, run_alerts;
    int64_t run_started_ns;
    struct local_lag lag;
    double lag_seconds;
    bool central_up;
    bool lasting;                     /* the last error does not heal by retrying: exit */
    int exit_status;
};

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: seccheckd forward --to URL [--db PATH] [--host-id ID] [OPTIONS]\n"
            "Ships the events the daemon committed to its SQLite database to a central PostgreSQL,\n"
            "exactly once, batch by batch with their hash chain. Run it beside the daemon.\n"
            "\n"
            "  --to URL               the central database, a libpq URL or connection string\n"
            "                         (postgresql://user@host/db). No password in it: libpq reads it\n"
            "                         from ~/.pgpass, PGPASSFILE or PGPASSWORD. nats://HOST:PORT,... (or\n"
            "                         tls://) publishes to the fleet's NATS JetStream stream instead:\n"
            "                         seccheckd forward --to nats://h:4222 --help\n"
            "  --db PATH              the daemon's database [./seccheck.db]\n"
            "  --host-id ID           this host's name in the central copy [/etc/machine-id, or the hostname]\n"
            "  --init-schema          create or update the central schema, then exit\n"
            "  --metrics-listen ADDR  serve Prometheus metrics at HOST:PORT (loopback) or unix:PATH [off]\n"
            "  --txn-events N         events per central transaction, at most (whole batches) [65536]\n"
            "  --poll-ms N            when caught up, look for new batches this often [200]\n"
            "  --retry-min-ms N       first wait after a failure, doubling [500]\n"
            "  --retry-max-ms N       longest wait between retries [30000]\n"
            "  --stats-interval S     log progress (events and alerts shipped, how far behind) this often,\n"
            "                         in seconds (0: never), and at each catch-up [60]\n"
            "  --log-level LEVEL      error, warn, info or debug [info]\n"
            "  --help                 this text\n"
            "\n"
            "A central server down or unreachable is retried; what retrying cannot heal (--db missing\n"
            "or not the daemon's database, a password missing or refused, a role or database the server\n"
            "does not have) ends it with exit status 1, the reason logged.\n"
            "The daemon's retention keeps the batches not shipped yet (unless --max-db-size forces it;\n"
            "the central gaps table then names what was lost). `seccheckd verify --to URL` checks this\n"
            "host's chain and columns on the central copy.\n");
}

static int parse_options(struct forward_options *o, int argc, char **argv)
{
    static const struct option options[] = {
        {"to", required_argument, NULL, 't'},         {"db", required_argument, NULL, 'd'},
        {"host-id", required_argument, NULL, 'H'},    {"init-schema", no_argument, NULL, 'I'},
        {"txn-events", required_argument, NULL, 'e'}, {"poll-ms", required_argument, NULL, 'p'},
        SHIPPER_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    *o = (struct forward_options){.db_path = "./seccheck.db", .common = SHIPPER_OPTIONS_DEFAULT,
                                  .txn_events = 65536, .poll_ms = 200};
    const char *host_id = NULL;
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, CLI_GETOPT_QUIET "h", options, NULL)) != -1) {
        switch (ch) {
        case 't': o->url = optarg; break;
        case 'd': o->db_path = optarg; break;
        case 'H': host_id = optarg; break;
        case 'I': o->init_schema = true; break;
        case 'e': if (cli_parse_uint(PROG, "txn-events", optarg, 1, 10000000, &o->txn_events)) return 2; break;
        case 'p': if (cli_parse_uint(PROG, "poll-ms", optarg, 1, 600000, &o->poll_ms)) return 2; break;
        case 'h': usage(stdout); return -1;
        default: if (shipper_take_option(&o->common, PROG, ch, argv)) return 2; break;
        }
    }
    if (shipper_check_no_operands(PROG, argc, argv))
        return 2;
    if (!o->url) {
        fprintf(stderr, PROG ": --to URL is required: the central PostgreSQL (try --help)\n");
        return 2;
    }
    char err[512];
    if (central_check_url(o->url, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s\n", err);
        return 2;
    }
    if (shipper_identify_host(PROG, host_id, o->host_id, o->hostname) || shipper_finish_options(&o->common, PROG))
        return 2;
    return 0;
}

/* ---- one step: one central transaction ---- */

static void drop_central(struct forwarder *f)
{
    if (f->pg)
        PQfinish(f->pg);
    f->pg = NULL;
    f->schema_ready = false;
    f->central_up = false;
}

/* Counts an error, logs it with the retry, and returns the wait. */
static uint64_t fail(struct forwarder *f, enum error_kind kind, const char *msg)
{
    f->errors[kind]++;
    uint64_t wait_ms = shipper_next_backoff(&f->o.common, &f->backoff_ms);
    if (kind == ERR_CONNECT)
        log_warn("forward: central server unreachable (%s); the daemon keeps storing; retrying in %.1f s", msg,
                 (double)wait_ms / 1000);
    else
        log_error("forward: %s; retrying in %.1f s", msg, (double)wait_ms / 1000);
    return wait_ms;
}

/* Opens what is not open yet. -1 with *kind and err, and f->lasting when
 * retrying cannot heal it. */
static int ensure_connections(struct forwarder *f, enum error_kind *kind, char *err, size_t errlen)
{
    if (!f->local_open) {
        *kind = ERR_LOCAL;
        if (local_open(&f->local, f->o.db_path, &f->lasting, err, errlen) != 0)
            return -1;
        f->local_open = true;
    }
    bool changed = false;
    *kind = ERR_LOCAL;
    if (local_load_columns(&f->local, &changed, &f->lasting, err, errlen) != 0)
        return -1;
    if (!f->pg) {
        *kind = ERR_CONNECT;
        if ((f->pg = central_connect(f->o.url, &f->lasting, err, errlen)) == NULL)
            return -1;
    }
    if (!f->schema_ready || changed) {
        *kind = ERR_CENTRAL;
        if (central_ensure_schema(f->pg, &f->local, err, errlen) != 0)
            return -1;
        f->schema_ready = true;
    }
    if (!f->central_up) {   /* the counterpart of "unreachable ... retrying" */
        log_info("forward: connected to the central server, schema ready");
        f->central_up = true;
    }
    return 0;
}

/* The local chain does not continue the central one at batch id: recorded
 * and committed; -1 with err naming the batch. */
static int refuse(struct forwarder *f, int64_t id, const char *why, char *err, size_t errlen)
{
    char reason[640];
    if (central_refuse(f->pg, f->o.host_id, id, why, reason, sizeof(reason), err, errlen) != 0 ||
        central_commit(f->pg, err, errlen) != 0)
        return -1;
    snprintf(err, errlen, "host %s: batch %" PRId64 " refused: %s", f->o.host_id, id, reason);
    return -1;
}

/* Nothing new locally: is the local chain still the one the central copy
 * holds? 0 yes, -1 no or an error (err). */
static int check_caught_up(struct forwarder *f, const struct central_head *head, char *err, size_t errlen)
{
    if (head->last_batch_id == 0)
        return 0;
    struct local_batch b;
    int found = local_batch_by_id(&f->local, head->last_batch_id, &b);
    if (found < 0) {
        snprintf(err, errlen, "reading local batch %" PRId64 ": %s", head->last_batch_id,
                 sqlite3_errmsg(f->local.db));
        return -1;
    }
    if (found)
        return memcmp(b.hash, head->last_hash, CHAIN_HASH_LEN) == 0
                   ? 0
                   : refuse(f, b.id, "its hash differs from the central copy's batch of that id", err, errlen);
    struct local_lag lag;
    if (local_lag_after(&f->local, 0, &lag) != 0 || lag.newest_id == 0)
        return 0;   /* an empty database: nothing to compare */
    if (local_batch_by_id(&f->local, lag.newest_id, &b) != 1)
        return 0;   /* newer batches exist after all: next step */
    uint8_t central[CHAIN_HASH_LEN];
    int c = central_batch_hash(f->pg, f->o.host_id, b.id, central, err, errlen);
    if (c < 0)
        return -1;
    if (c == 1 && memcmp(central, b.hash, CHAIN_HASH_LEN) != 0)
        return refuse(f, b.id, "the central copy is ahead of this database and its batch of that id differs",
                      err, errlen);
    if (c == 1) {
        snprintf(err, errlen, "the central copy of host %s is at batch %" PRId64 ", this database only at %"
                 PRId64 ": restored from an older copy? Waiting for the daemon to catch up",
                 f->o.host_id, head->last_batch_id, b.id);
        return -1;
    }
    return 0;
}

/* The central copy committed the sync: the next sends what changed since. */
static void sync_taken(struct forwarder *f)
{
    char err[256];
    f->synced_connections_total += (uint64_t)f->pending_sync_connections;
    if (f->pending_whole)
        f->whole_synced_ns = monotonic_ns();
    if (local_sync_taken(&f->local, err, sizeof(err)) != 0)
        log_warn("forward: host %s: %s; the next sync sends every row again", f->o.host_id, err);
}

/* Caught up: the runs and connections rows that changed after their last
 * batch (a close, a stop), when the daemon committed anything since. */
static int sync_open_rows(struct forwarder *f, enum error_kind *kind, char *err, size_t errlen)
{
    int64_t version = f->version_before_snapshot;
    if (version == f->synced_version)
        return 0;
    int64_t runs_from, conns_from;
    local_open_marks(&f->local, &runs_from, &conns_from);
    bool whole = !f->local.sync_known || monotonic_ns() - f->whole_synced_ns > LOCAL_SYNC_WHOLE_EVERY_S * NS_PER_S;
    if (whole)
        local_sync_forget(&f->local);
    if (local_sync_note(&f->local, f->conns_from, err, errlen) != 0) {
        *kind = ERR_LOCAL;
        return -1;
    }
    struct central_source src;
    central_local_source(&src, &f->local);
    int rc = central_sync_open_rows(f->pg, &src, f->o.host_id, f->runs_from, f->conns_from,
                                    local_sync_since(&f->local, f->conns_from), &f->pending_sync_connections, err,
                                    errlen);
    if (rc != 0) {
        *kind = rc == -2 ? ERR_LOCAL : ERR_CENTRAL;
        return -1;
    }
    f->pending_whole = whole;
    /* Takes effect with the commit; a failed commit retries from the old marks. */
    f->pending_runs_from = runs_from;
    f->pending_conns_from = conns_from;
    f->pending_version = version;
    return 0;
}

/* One transaction. 0 shipped (*more: a full load, look again at once),
 * 1 nothing to do, -1 error with *kind and err. */
static int ship_once(struct forwarder *f, struct local_batch *batches, bool *more, enum error_kind *kind, char *err,
                     size_t errlen)
{
    struct central_head head;
    *more = false;
    *kind = ERR_CENTRAL;
    if (central_begin(f->pg, f->o.host_id, f->o.hostname, &head, err, errlen) != 0)
        return -1;
    f->shipped = head.last_batch_id;
    *kind = ERR_LOCAL;
    f->version_before_snapshot = local_data_version(&f->local);
    if (local_begin(&f->local, err, errlen) != 0)
        return -1;
    int n = local_batches_after(&f->local, head.last_batch_id, MAX_BATCHES_PER_TXN, (int64_t)f->o.txn_events,
                                batches, err, errlen);
    if (n < 0)
        return -1;
    int rc = 0;
    *kind = ERR_CHAIN;
    if (n == 0) {
        rc = check_caught_up(f, &head, err, errlen);
        if (rc == 0 && head.last_batch_id > 0)
            rc = sync_open_rows(f, kind, err, errlen);
        if (rc == 0) {
            *kind = ERR_CENTRAL;
            rc = central_commit(f->pg, err, errlen) == 0 ? 1 : -1;
            if (rc == 1 && f->pending_version) {
                f->runs_from = f->pending_runs_from;
                f->conns_from = f->pending_conns_from;
                f->synced_version = f->pending_version;
                f->pending_version = 0;
                sync_taken(f);
            }
        }
        return rc;
    }
    /* Batches lost locally before they were shipped (--max-db-size) are
     * recorded as a gap, and the chain resumes from the first one still there. */
    struct central_source src;
    central_local_source(&src, &f->local);
    struct central_outcome out;
    *kind = ERR_CENTRAL;
    rc = central_apply(f->pg, &src, f->o.host_id, &head, batches, n, NULL, CENTRAL_GAP_KNOWN, &out, err, errlen);
    if (rc == -2)
        *kind = ERR_LOCAL;
    if (rc == 0 && out.gap_first <= out.gap_last) {
        log_warn("forward: host %s: batches %" PRId64 "..%" PRId64 " were deleted locally before they were "
                 "shipped (--max-db-size); the gap is recorded in the central gaps table", f->o.host_id,
                 out.gap_first, out.gap_last);
        f->gaps_total++;
        f->gap_batches_total += (uint64_t)(out.gap_last - out.gap_first + 1);
    }
    if (rc == 0 && out.what == CENTRAL_REFUSED) {
        *kind = ERR_CHAIN;
        if (central_commit(f->pg, err, errlen) == 0)
            snprintf(err, errlen, "host %s: batch %" PRId64 " refused: %s", f->o.host_id, out.refused_id,
                     out.reason);
        return -1;
    }
    int ok = out.shipped;
    int64_t events = out.events, alerts = out.alerts;
    int64_t commit_ns = monotonic_ns();
    if (rc == 0)
        rc = central_commit(f->pg, err, errlen);
    if (rc != 0)
        return -1;
    commit_ns = monotonic_ns() - commit_ns;
    f->shipped = batches[ok - 1].id;
    f->batches_total += (uint64_t)ok;
    f->events_total += (uint64_t)events;
    f->alerts_total += (uint64_t)alerts;
    f->interval_batches += (uint64_t)ok;
    f->interval_events += (uint64_t)events;
    f->interval_alerts += (uint64_t)alerts;
    f->run_batches += (uint64_t)ok;
    f->run_events += (uint64_t)events;
    f->run_alerts += (uint64_t)alerts;
    f->caught_up = false;
    f->transactions_total++;
    *more = ok == n && (n == MAX_BATCHES_PER_TXN || events >= (int64_t)f->o.txn_events);
    log_debug("forward: shipped batches %" PRId64 "..%" PRId64 " (%" PRId64 " events); commit %.1f ms",
              batches[0].id, batches[ok - 1].id, events, (double)commit_ns / 1e6);
    return 0;
}

/* Every write here can make the daemon's next transaction start over
 * (SQLITE_BUSY), so retention hears of progress at most this often. */
#define PROGRESS_EVERY_NS (1 * NS_PER_S)

/* Tells retention how far the central copy is (now: even if just saved).
 *
 * This is why the forwarder's commits stay synchronous (the server's
 * synchronous_commit, on by default). With it off, exactly-once would still
 * hold: a commit lost in a central crash is lost whole, hosts row included,
 * and the next central_begin reads where the central copy really ends. But
 * f->shipped, saved here, could name batches the central server then lost,
 * and retention would delete their only copy. Commits measured under 1% of
 * the forwarding time (bench/forward.sh, 300k mixed events: 70-133 ms of
 * COMMIT in 4-16 s), so there is nothing to win for that risk. */
static void save_progress(struct forwarder *f, bool now)
{
    char err[256];
    /* Not before the daemon's tables are there: its forward_progress table
     * would be the only one of a database the daemon has yet to create. */
    if (f->local.batches.ncols == 0)
        return;
    if (f->shipped != f->saved && (now || monotonic_ns() - f->saved_ns >= PROGRESS_EVERY_NS)) {
        f->saved_ns = monotonic_ns();
        if (local_save_progress(&f->local, f->o.url, f->o.host_id, f->shipped, err, sizeof(err)) == 0)
            f->saved = f->shipped;
        else
            log_warn("forward: cannot record progress in %s (retention goes by the last position recorded): %s",
                     f->o.db_path, err);
    }
}

/* After a step: how far behind, and tell retention how far we are. */
static void after_step(struct forwarder *f)
{
    save_progress(f, false);
    if (local_lag_after(&f->local, f->shipped, &f->lag) == 0)
        f->lag_seconds = f->lag.batches ? (double)(realtime_ns() - f->lag.oldest_committed_ns) / 1e9 : 0;
}

/* Nothing left to ship: the first time since shipping (or since the
 * start), one line says how far the central copy is and what it took. */
static void note_caught_up(struct forwarder *f)
{
    if (f->caught_up)
        return;
    f->caught_up = true;
    int64_t now = monotonic_ns();
    if (f->run_batches)
        log_info("forward: host %s: caught up at batch %" PRId64 ": shipped %" PRIu64 " batches, %" PRIu64
                 " events, %" PRIu64 " alerts in %.1f s; behind the daemon by 0",
                 f->o.host_id, f->shipped, f->run_batches, f->run_events, f->run_alerts,
                 (double)(now - f->run_started_ns) / 1e9);
    else
        log_info("forward: host %s: caught up at batch %" PRId64 ": nothing to ship", f->o.host_id, f->shipped);
    f->run_batches = f->run_events = f->run_alerts = 0;
    f->run_started_ns = now;
}

/* Returns the wait before the next step, in ms; UINT64_MAX: stop, an
 * error that retrying cannot heal (logged). */
static uint64_t step(struct forwarder *f, struct local_batch *batches)
{
    char err[1024];
    enum error_kind kind;
    bool more = false;
    int rc = ensure_connections(f, &kind, err, sizeof(err));
    if (rc == 0)
        rc = ship_once(f, batches, &more, &kind, err, sizeof(err));
    if (f->local_open)
        local_end(&f->local);
    if (rc < 0) {
        if (f->pg)
            central_rollback(f->pg);
        if (kind == ERR_CONNECT || (f->pg && PQstatus(f->pg) != CONNECTION_OK))
            drop_central(f);
        if (f->local_open)
            after_step(f);
        if (f->lasting) {
            f->errors[kind]++;
            log_error("forward: %s; retrying cannot heal this: exiting", err);
            return UINT64_MAX;
        }
        return fail(f, kind, err);
    }
    f->backoff_ms = 0;
    after_step(f);
    if (rc == 1 && f->lag.batches == 0)
        note_caught_up(f);
    return more ? 0 : f->o.poll_ms;
}

/* ---- the loop ---- */

/* Ends the loop: every handle closed, uv_run returns. */
static void stop_loop(struct forwarder *f)
{
    uv_timer_stop(&f->step_timer);
    uv_timer_stop(&f->stats_timer);
    uv_close((uv_handle_t *)&f->step_timer, NULL);
    uv_close((uv_handle_t *)&f->stats_timer, NULL);
    uv_close((uv_handle_t *)&f->sigterm, NULL);
    uv_close((uv_handle_t *)&f->sigint, NULL);
    metrics_stop(&f->metrics);
}

static void on_step(uv_timer_t *t)
{
    struct forwarder *f = t->data;
    static struct local_batch batches[MAX_BATCHES_PER_TXN];
    uint64_t wait = step(f, batches);
    if (wait == UINT64_MAX) {
        f->exit_status = 1;   /* systemd (Restart=) decides what comes next */
        stop_loop(f);
        return;
    }
    uv_timer_start(&f->step_timer, on_step, wait, 0);
}

/* Every --stats-interval (a minute), idle or not: the forwarder is alive
 * and how far behind it is. */
static void on_stats(uv_timer_t *t)
{
    struct forwarder *f = t->data;
    char behind[160];
    if (f->lag.batches)
        snprintf(behind, sizeof(behind), "behind the daemon by %" PRId64 " batches, %" PRId64 " events, %.1f s",
                 f->lag.batches, f->lag.events, f->lag_seconds);
    else
        snprintf(behind, sizeof(behind), "behind the daemon by 0 (caught up at batch %" PRId64 ")", f->shipped);
    log_info("forward: host %s: shipped %" PRIu64 " batches, %" PRIu64 " events, %" PRIu64 " alerts in the last %"
             PRIu64 " s (%" PRIu64 " events, %" PRIu64 " alerts in all)%s; %s",
             f->o.host_id, f->interval_batches, f->interval_events, f->interval_alerts, f->o.common.stats_s,
             f->events_total, f->alerts_total, f->central_up ? "" : " (the central server is unreachable)", behind);
    f->interval_batches = f->interval_events = f->interval_alerts = 0;
}

static void on_signal(uv_signal_t *s, int signum)
{
    struct forwarder *f = s->data;
    log_info("forward: signal %d: stopping (the central copy is at batch %" PRId64 ")", signum, f->shipped);
    stop_loop(f);
}

static void render(struct strbuf *o, void *data)
{
    const struct forwarder *f = data;
#define METRIC(name, type, help, fmt, value)                                                                      \
    strbuf_printf(o, "# HELP seccheckd_forward_" name " " help "\n# TYPE seccheckd_forward_" name " " type          \
                     "\nseccheckd_forward_" name " " fmt "\n", value)
    METRIC("batches_total", "counter", "Batches committed to the central server.", "%" PRIu64, f->batches_total);
    METRIC("events_total", "counter", "Events committed to the central server.", "%" PRIu64, f->events_total);
    METRIC("alerts_total", "counter", "Alerts committed to the central server (with their events).", "%" PRIu64,
           f->alerts_total);
    METRIC("transactions_total", "counter", "Central transactions committed.", "%" PRIu64, f->transactions_total);
    METRIC("synced_connections_total", "counter", "Connections rows the syncs sent: those that may have changed "
           "since the sync before.", "%" PRIu64, f->synced_connections_total);
    METRIC("gaps_total", "counter", "Gaps recorded: batches deleted locally before they were shipped.", "%" PRIu64,
           f->gaps_total);
    METRIC("gap_batches_total", "counter", "Batches lost in recorded gaps.", "%" PRIu64, f->gap_batches_total);
    METRIC("lag_batches", "gauge", "Batches the daemon committed that the central server lacks.", "%" PRId64,
           f->lag.batches);
    METRIC("lag_events", "gauge", "Events the daemon committed that the central server lacks.", "%" PRId64,
           f->lag.events);
    METRIC("lag_seconds", "gauge", "Age of the oldest batch not shipped yet.", "%.3f", f->lag_seconds);
    METRIC("shipped_batch_id", "gauge", "Last batch id the central copy holds.", "%" PRId64, f->shipped);
    METRIC("central_up", "gauge", "1 while connected to the central server, its schema ready.", "%d",
           f->central_up ? 1 : 0);
#undef METRIC
    strbuf_puts(o, "# HELP seccheckd_forward_errors_total Failed steps by kind (each is retried).\n"
                   "# TYPE seccheckd_forward_errors_total counter\n");
    for (int k = 0; k < ERR_KINDS; k++)
        strbuf_printf(o, "seccheckd_forward_errors_total{kind=\"%s\"} %" PRIu64 "\n", error_names[k], f->errors[k]);
}

static int init_schema(struct forwarder *f)
{
    char err[1024];
    enum error_kind kind;
    int rc = ensure_connections(f, &kind, err, sizeof(err));
    if (rc != 0)
        fprintf(stderr, PROG ": %s\n", err);
    else
        printf("central schema ready for %s\n", f->o.db_path);
    return rc == 0 ? 0 : 1;
}

int forward_main(int argc, char **argv)
{
    static struct forwarder f;
    memset(&f, 0, sizeof(f));
    int rc = parse_options(&f.o, argc, argv);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    f.saved = -1;
    if (f.o.init_schema) {
        rc = init_schema(&f);
        goto out;
    }
    f.loop = uv_default_loop();
    char err[512];
    if (f.o.common.metrics_listen &&
        metrics_start(&f.metrics, f.loop, f.o.common.metrics_listen, render, &f, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s\n", err);
        rc = 1;
        goto out;
    }
    uv_timer_init(f.loop, &f.step_timer);
    uv_timer_init(f.loop, &f.stats_timer);
    uv_signal_init(f.loop, &f.sigterm);
    uv_signal_init(f.loop, &f.sigint);
    f.step_timer.data = f.stats_timer.data = f.sigterm.data = f.sigint.data = &f;
    uv_signal_start(&f.sigterm, on_signal, SIGTERM);
    uv_signal_start(&f.sigint, on_signal, SIGINT);
    f.run_started_ns = monotonic_ns();
    uv_timer_start(&f.step_timer, on_step, 0, 0);
    if (f.o.common.stats_s)
        uv_timer_start(&f.stats_timer, on_stats, f.o.common.stats_s * 1000, f.o.common.stats_s * 1000);
    log_info("forward: %s -> central server as host %s", f.o.db_path, f.o.host_id);
    uv_run(f.loop, UV_RUN_DEFAULT);
    uv_loop_close(f.loop);
    rc = f.exit_status;
    if (f.local_open)
        save_progress(&f, true);
out:
    if (f.pg) {
        central_rollback(f.pg);
        PQfinish(f.pg);
    }
    if (f.local_open)
        local_close(&f.local);
    return rc;
}
