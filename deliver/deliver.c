/* deliver.c - the delivery thread (deliver.h): the next alert from the
 * outbox or the queue, one POST, then on to the next, or back off. */
#include "deliver.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "http.h"
#include "log.h"
#include "thread.h"
#include "queue.h"
#include "settings.h"
#include "strbuf.h"

#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL
#define DELIVER_READ_ROWS 256               /* alerts read from the outbox at once */
#define DELIVER_READ_BYTES (1u << 20)       /* and their lines, at most (past one alert) */
#define DELIVER_IDLE_MS 1000                /* a wake-up missed costs at most this */
#define DELIVER_BACKOFF_MIN_MS 100
#define DELIVER_BACKOFF_MAX_MS 30000
#define DELIVER_LOG_INTERVAL_NS (60 * NS_PER_S)
#define DELIVER_QUEUE_MAX_BYTES (64u << 20)

/* The alert being delivered. */
struct next_alert {
    int64_t id;                  /* outbox: its alerts.id; queue: 0 */
    const char *line, *rule;
    size_t len;
};

/* Alerts read from the outbox, rendered: their lines in one buffer. */
struct read_item {
    int64_t id;
    size_t line_off, line_len, rule_off;
};

struct deliver {
    char *hostname;
    struct deliver_settings *settings;             /* the thread's */
    _Atomic(struct deliver_settings *) next_settings;
    struct http http;
    pthread_t thread;
    atomic_bool stopping, abort;

    /* Where the alerts wait: the outbox (outbox != NULL) or the queue. */
    struct alert_outbox *outbox;
    struct alert_outbox_reader reader;
    char *db_path;
    uint64_t generation;                 /* of the file the reader has open (alert_outbox.h) */
    int64_t position;                    /* last alert delivered or given up on */
    struct read_item items[DELIVER_READ_ROWS];
    size_t nitems, next_item;
    struct strbuf lines;
    struct alert_queue queue;

    /* The receiver's health, the delivery thread's. */
    bool down;
    int64_t down_since_ns, down_logged_ns, retry_at_ns;
    uint64_t down_attempts;
    int backoff_ms;
    uint64_t rejected_unlogged;
    int64_t rejected_logged_ns;
    bool read_error_logged;
    int64_t replaced_logged_ns;
    /* Queue overflow, the writer thread's. */
    uint64_t dropped_unlogged;
    int64_t dropped_logged_ns;

    /* What the metrics read. */
    atomic_uint_fast64_t delivered, failed, rejected, dropped, skipped;
    atomic_int_fast64_t position_seen;
};

/* ---- where the alerts come from ---- */

struct read_ctx {
    struct deliver *d;
    bool failed;
};

static bool take_row(const struct alert_outbox_row *row, void *data)
{
    struct read_ctx *c = data;
    struct deliver *d = c->d;
    if (d->nitems > 0 && d->lines.len >= DELIVER_READ_BYTES)
        return false;
    if (row->replaced && (!d->replaced_logged_ns || monotonic_ns() - d->replaced_logged_ns >= DELIVER_LOG_INTERVAL_NS)) {
        d->replaced_logged_ns = monotonic_ns();
        log_warn("alerts: alert %lld has output_fields or tags that are not JSON (a row seccheckd did not write): "
                 "sent with {} or [] in their place (at most one such line a minute)", (long long)row->id);
    }
    struct read_item *it = &d->items[d->nitems];
    it->id = row->id;
    it->line_off = d->lines.len;
    struct rules_alert_extras extras = {.suppressed = row->suppressed, .evicted = row->evicted,
                                        .sequence = row->sequence};
    rules_alert_json_ex(&d->lines, d->hostname, row->rule, row->priority, row->time_ns, row->output, row->output_len,
                        row->output_fields, row->tags, &extras);
    it->line_len = d->lines.len - it->line_off;
    strbuf_putc(&d->lines, '\0');
    it->rule_off = d->lines.len;
    strbuf_puts(&d->lines, row->rule);
    strbuf_putc(&d->lines, '\0');
    if (d->lines.failed) {
        c->failed = true;
        return false;
    }
    d->nitems++;
    return true;
}

static void publish_position(struct deliver *d, int64_t position)
{
    d->position = position;
    atomic_store(&d->position_seen, position);
    alert_outbox_set(d->outbox, d->settings->origin, position, d->generation);   /* never the path: a token */
}

/* Alerts between the position and id that are gone: retention deleted
 * their batches before they were delivered (--max-db-size; or any bound,
 * for a URL that was not the one delivered to then). */
static void skip_to(struct deliver *d, int64_t id)
{
    if (id - 1 > d->position) {
        uint64_t gone = (uint64_t)(id - 1 - d->position);
        atomic_fetch_add(&d->dropped, gone);
        log_warn("alerts: %llu alerts were deleted by retention before they were delivered; counted as dropped",
                 (unsigned long long)gone);
    }
}

/* The next chunk after the position; false when there is none now. */
static bool read_outbox(struct deliver *d)
{
    int64_t newest = alert_outbox_newest(d->outbox);   /* before the read: every id up to it is committed */
    if (newest <= d->position)
        return false;
    d->nitems = d->next_item = 0;
    strbuf_reset(&d->lines);
    struct read_ctx c = {.d = d};
    char err[300];
    int n = alert_outbox_read(&d->reader, d->position, DELIVER_READ_ROWS, take_row, &c, err, sizeof(err));
    if (alert_outbox_generation(d->outbox) != d->generation) {   /* newest may be the other file's */
        d->nitems = 0;
        return false;
    }
    if (n < 0 || c.failed) {
        if (!d->read_error_logged)
            log_error("alerts: %s; delivery tries again in a second", c.failed ? "out of memory" : err);
        d->read_error_logged = true;
        d->nitems = 0;
        return false;
    }
    d->read_error_logged = false;
    if (n == 0) {   /* every alert up to newest is gone */
        skip_to(d, newest + 1);
        publish_position(d, newest);
        return false;
    }
    return true;
}

/* Says where delivery to the URL starts (alert_outbox_start's answer),
 * and counts the history a first URL does not get as skipped. */
static void log_start(struct deliver *d, const char *why, const struct alert_outbox_start *st)
{
    unsigned long long waiting = st->newest > st->position ? (unsigned long long)(st->newest - st->position) : 0;
    const char *origin = d->settings->origin;
    switch (st->from) {
    case OUTBOX_FROM_OWN:
        log_info("alerts: delivering to %s%s, from where it stopped (alert %lld; %llu alerts waiting)", origin, why,
                 (long long)st->position, waiting);
        break;
    case OUTBOX_FROM_TAKEN:
        log_info("alerts: delivering to %s%s, a URL new to this database, from where the delivery before it "
                 "stopped (alert %lld; %llu alerts waiting)", origin, why, (long long)st->position, waiting);
        break;
    case OUTBOX_FROM_LATEST:
        log_info("alerts: delivering to %s%s, a URL new to this database, from where %s stopped (alert %lld; %llu "
                 "alerts waiting)", origin, why, st->from_target, (long long)st->position, waiting);
        break;
    case OUTBOX_FROM_NEWEST:
        atomic_fetch_add(&d->skipped, (uint64_t)st->history);
        log_info("alerts: delivering to %s%s, the first URL of this database, from the next alert on: the %lld "
                 "alerts stored before are not sent (counted as skipped)", origin, why, (long long)st->history);
        break;
    }
}

/* Where delivery to the URL starts in the file the reader has open; a URL
 * the file does not know starts after alert take_over (-1: after the URL
 * delivered to last, or, with none, the newest). False (logged) when it
 * cannot be read. */
static bool start_position(struct deliver *d, const char *why, int64_t take_over)
{
    char err[300];
    struct alert_outbox_start st;
    d->nitems = d->next_item = 0;
    if (alert_outbox_start(&d->reader, d->settings->origin, take_over, &st, err, sizeof(err)) != 0) {
        log_error("alerts: %s; delivery goes on from alert %lld", err, (long long)d->position);
        return false;
    }
    /* A receiver this run delivered to and left: its saved row may be older
     * than where it stopped (the writer had no transaction since), and a
     * second change of URL would have lost that unwritten position. */
    int64_t held;
    if (alert_outbox_held_position(d->outbox, d->settings->origin, d->generation, &held) && held >= st.position) {
        st.position = held;
        st.from = OUTBOX_FROM_OWN;
    }
    publish_position(d, st.position);
    log_start(d, why, &st);
    return true;
}

/* The writer opened another file at the path (the database was deleted or
 * replaced): so does the reader, and delivery goes on from the position
 * kept in that file. false while it cannot be opened. */
static bool follow_new_file(struct deliver *d)
{
    char err[300];
    uint64_t generation = alert_outbox_generation(d->outbox);
    alert_outbox_reader_close(&d->reader);
    if (alert_outbox_reader_open(&d->reader, d->db_path, err, sizeof(err)) != 0) {
        if (!d->read_error_logged)
            log_error("alerts: %s; delivery tries again in a second", err);
        d->read_error_logged = true;
        return false;
    }
    d->read_error_logged = false;
    d->generation = generation;
    /* The file held alerts up to reopen_newest when the daemon opened it:
     * the ones after were raised since, none delivered yet. */
    start_position(d, " from the database file now at the path", alert_outbox_reopen_newest(d->outbox));
    return true;
}

static bool next_alert(struct deliver *d, struct next_alert *a)
{
    if (!d->outbox) {
        struct queued_alert q;
        if (!queue_front(&d->queue, &q))
            return false;
        *a = (struct next_alert){.line = q.line, .len = q.len, .rule = q.rule};
        return true;
    }
    if (alert_outbox_generation(d->outbox) != d->generation && !follow_new_file(d))
        return false;
    if (d->next_item == d->nitems && !read_outbox(d))
        return false;
    const struct read_item *it = &d->items[d->next_item];
    *a = (struct next_alert){.id = it->id, .line = d->lines.data + it->line_off, .len = it->line_len,
                             .rule = d->lines.data + it->rule_off};
    return true;
}

/* Delivered or given up on: on to the next. */
static void advance(struct deliver *d, const struct next_alert *a)
{
    if (!d->outbox) {
        queue_pop(&d->queue);
        return;
    }
    skip_to(d, a->id);
    publish_position(d, a->id);
    d->next_item++;
}

static uint64_t waiting(struct deliver *d)
{
    if (!d->outbox)
        return queue_count(&d->queue);
    int64_t lag = alert_outbox_newest(d->outbox) - atomic_load(&d->position_seen);
    return lag > 0 ? (uint64_t)lag : 0;
}

/* ---- the receiver's health ---- */

static void note_failure(struct deliver *d, const char *why)
{
    int64_t now = monotonic_ns();
    atomic_fetch_add(&d->failed, 1);
    d->down_attempts++;
    if (!d->down) {
        d->down = true;
        d->down_since_ns = d->down_logged_ns = now;
        d->down_attempts = 1;
        log_warn("alerts: delivery to %s failed: %s; retrying with backoff (up to %d s), the alerts wait %s",
                 d->settings->origin, why, DELIVER_BACKOFF_MAX_MS / 1000,
                 d->outbox ? "in the database" : "in the queue");
    } else if (now - d->down_logged_ns >= DELIVER_LOG_INTERVAL_NS) {
        d->down_logged_ns = now;
        log_warn("alerts: delivery to %s still failing: %llu attempts in %lld s, the last: %s; %llu alerts waiting",
                 d->settings->origin, (unsigned long long)d->down_attempts, (long long)((now - d->down_since_ns) / NS_PER_S),
                 why, (unsigned long long)waiting(d));
    }
    d->backoff_ms = d->backoff_ms ? d->backoff_ms * 2 : DELIVER_BACKOFF_MIN_MS;
    if (d->backoff_ms > DELIVER_BACKOFF_MAX_MS)
        d->backoff_ms = DELIVER_BACKOFF_MAX_MS;
    d->retry_at_ns = now + d->backoff_ms * NS_PER_MS;
}

/* The receiver answered (delivered or rejected): it is up. */
static void note_answer(struct deliver *d)
{
    if (d->down)
        log_info("alerts: delivering to %s again after %.1f s (%llu failed attempts)", d->settings->origin,
                 (double)(monotonic_ns() - d->down_since_ns) / NS_PER_S, (unsigned long long)d->down_attempts);
    d->down = false;
    d->backoff_ms = 0;
    d->retry_at_ns = 0;
}

static void note_rejected(struct deliver *d, const struct next_alert *a, const char *why)
{
    int64_t now = monotonic_ns();
    atomic_fetch_add(&d->rejected, 1);
    d->rejected_unlogged++;
    if (d->rejected_logged_ns && now - d->rejected_logged_ns < DELIVER_LOG_INTERVAL_NS)
        return;
    char which[64] = "";
    if (a->id)
        snprintf(which, sizeof(which), " %lld", (long long)a->id);
    log_warn("alerts: %s rejected alert%s (rule '%s'): %s; not sent again (%llu rejected since the last such line)",
             d->settings->origin, which, a->rule, why, (unsigned long long)d->rejected_unlogged);
    d->rejected_unlogged = 0;
    d->rejected_logged_ns = now;
}

/* ---- settings ---- */

static void take_settings(struct deliver *d)
{
    struct deliver_settings *s = atomic_exchange(&d->next_settings, NULL);
    if (!s)
        return;
    /* A position is the receiver's: its origin's (another path there is
     * the same receiver). */
    bool new_receiver = strcmp(s->origin, d->settings->origin) != 0;
    http_use(&d->http, s);
    deliver_settings_free(d->settings);
    d->settings = s;
    d->backoff_ms = 0;   /* new settings deserve an attempt at once */
    d->retry_at_ns = 0;
    if (new_receiver)
        d->down = false;   /* the old receiver's outage is not the new one's */
    if (new_receiver && d->outbox)
        start_position(d, " (a new --alerts-url)", d->position);   /* its own position, else the backlog */
    else if (new_receiver)
        log_info("alerts: delivering to %s (a new --alerts-url), the queue's alerts first", s->origin);
    else
        log_info("alerts: delivery to %s uses the reloaded settings", s->origin);
}

/* ---- the thread ---- */

static bool should_stop(struct deliver *d)
{
    if (atomic_load(&d->abort))
        return true;
    if (!atomic_load(&d->stopping))
        return false;
    /* What is waiting goes while the receiver answers and the grace lasts
     * (the writer has stopped: nothing more comes); the outbox keeps the
     * rest for the next start, the queue's are dropped. */
    bool nothing_left = d->outbox ? d->next_item == d->nitems && alert_outbox_newest(d->outbox) <= d->position
                                  : queue_count(&d->queue) == 0;
    return nothing_left || d->retry_at_ns;
}

static int ms_until(int64_t t_ns)
{
    int64_t ms = (t_ns - monotonic_ns()) / NS_PER_MS + 1;
    return ms > DELIVER_IDLE_MS ? DELIVER_IDLE_MS : (int)ms;
}

static void deliver_one(struct deliver *d, const struct next_alert *a)
{
    char why[600];
    switch (http_post(&d->http, a->line, a->len, &d->abort, why, sizeof(why))) {
    case POST_DELIVERED:
        atomic_fetch_add(&d->delivered, 1);
        note_answer(d);
        advance(d, a);
        break;
    case POST_REJECTED:
        note_rejected(d, a, why);
        note_answer(d);
        advance(d, a);
        break;
    case POST_FAILED:
        note_failure(d, why);
        break;
    case POST_ABORTED:
        break;
    }
}

static void *deliver_main(void *arg)
{
    struct deliver *d = arg;
    for (;;) {
        take_settings(d);
        if (should_stop(d))
            break;
        if (d->retry_at_ns && monotonic_ns() < d->retry_at_ns) {
            http_wait(&d->http, ms_until(d->retry_at_ns));
            continue;
        }
        struct next_alert a;
        if (!next_alert(d, &a)) {
            if (atomic_load(&d->stopping))
                break;
            http_wait(&d->http, DELIVER_IDLE_MS);
            continue;
        }
        deliver_one(d, &a);
    }
    return NULL;
}

/* ---- the interface ---- */

static void wake(void *data)
{
    http_wake(&((struct deliver *)data)->http);
}

static void free_deliver(struct deliver *d)
{
    http_close(&d->http);
    alert_outbox_reader_close(&d->reader);
    queue_free(&d->queue);
    strbuf_free(&d->lines);
    deliver_settings_free(d->settings);
    deliver_settings_free(atomic_load(&d->next_settings));
    free(d->hostname);
    free(d->db_path);
    free(d);
}

/* The outbox's position for the URL, read before the writer starts. */
static int open_outbox(struct deliver *d, const struct deliver_config *cfg, char *err, size_t errlen)
{
    d->outbox = cfg->outbox;
    struct alert_outbox_start st;
    if (!(d->db_path = strdup(cfg->db_path))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (alert_outbox_reader_open(&d->reader, cfg->db_path, err, errlen) != 0 ||
        alert_outbox_start(&d->reader, d->settings->origin, -1, &st, err, errlen) != 0)
        return -1;
    atomic_store(&d->outbox->newest, st.newest);
    publish_position(d, st.position);
    d->outbox->on_commit = wake;
    d->outbox->on_commit_data = d;
    log_start(d, " from the database's alerts table", &st);
    return 0;
}

struct deliver *deliver_start(struct deliver_settings *s, const struct deliver_config *cfg, char *err,
                              size_t errlen)
{
    struct deliver *d = calloc(1, sizeof(*d));
    if (!d || !(d->hostname = strdup(cfg->hostname))) {
        snprintf(err, errlen, "out of memory");
        free(d);
        deliver_settings_free(s);
        return NULL;
    }
    d->settings = s;
    atomic_init(&d->next_settings, NULL);
    if (http_open(&d->http, err, errlen) != 0)
        goto fail;
    http_use(&d->http, s);
    if (cfg->db_path) {
        if (open_outbox(d, cfg, err, errlen) != 0)
            goto fail;
    } else {
        if (queue_init(&d->queue, cfg->queue_max, DELIVER_QUEUE_MAX_BYTES) != 0) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        log_info("alerts: delivering to %s through a queue in memory of at most %zu alerts (no sqlite sink: "
                 "alerts that do not fit, and those still queued at a stop, are dropped and counted)",
                 s->origin, cfg->queue_max);
    }
    /* Signals go to the loop thread; this one only waits on libcurl. */
    int rc = thread_start_blocking_signals(&d->thread, NULL, deliver_main, d);
    if (rc == 0) {
        pthread_setname_np(d->thread, "alert-delivery");   /* top -H, bench/deliver.sh */
        return d;
    }
    snprintf(err, errlen, "cannot start the delivery thread: %s", strerror(rc));
fail:
    if (d->outbox)
        d->outbox->on_commit = NULL;
    free_deliver(d);
    return NULL;
}

void deliver_offer(struct deliver *d, const struct alert_list *alerts)
{
    if (d->outbox || alerts->count == 0)
        return;
    uint64_t dropped = queue_push(&d->queue, alerts);
    if (alerts->count > dropped)
        http_wake(&d->http);
    if (!dropped)
        return;
    atomic_fetch_add(&d->dropped, dropped);
    d->dropped_unlogged += dropped;
    int64_t now = monotonic_ns();
    if (d->dropped_logged_ns && now - d->dropped_logged_ns < DELIVER_LOG_INTERVAL_NS)
        return;
    log_warn("alerts: the delivery queue is full (%zu alerts waiting): %llu alerts dropped since the last such "
             "line", queue_count(&d->queue), (unsigned long long)d->dropped_unlogged);
    d->dropped_unlogged = 0;
    d->dropped_logged_ns = now;
}

void deliver_reconfigure(struct deliver *d, struct deliver_settings *s)
{
    deliver_settings_free(atomic_exchange(&d->next_settings, s));   /* one the thread never took */
    http_wake(&d->http);
}

void deliver_get_stats(const struct deliver *d, struct deliver_stats *out)
{
    struct deliver *m = (struct deliver *)d;   /* atomics only */
    out->delivered = atomic_load(&m->delivered);
    out->failed = atomic_load(&m->failed);
    out->rejected = atomic_load(&m->rejected);
    out->dropped = atomic_load(&m->dropped) + (m->outbox ? atomic_load(&m->outbox->lost) : 0);
    out->skipped = atomic_load(&m->skipped);
    out->lag = waiting(m);
}

void deliver_stop(struct deliver *d, int grace_ms)
{
    if (!d)
        return;
    atomic_store(&d->stopping, true);
    if (grace_ms <= 0)
        atomic_store(&d->abort, true);
    http_wake(&d->http);
    struct timespec deadline = realtime_in_ms(grace_ms > 0 ? grace_ms : 0);
    if (pthread_timedjoin_np(d->thread, NULL, &deadline) == ETIMEDOUT) {
        atomic_store(&d->abort, true);
        http_wake(&d->http);
        pthread_join(d->thread, NULL);
    }
    if (d->outbox)
        d->outbox->on_commit = NULL;   /* the writer is done: main.c stops it first */
    size_t unsent = d->outbox ? 0 : queue_count(&d->queue);
    atomic_fetch_add(&d->dropped, unsent);
    struct deliver_stats st;
    deliver_get_stats(d, &st);
    log_info("alerts: delivery to %s stopped: %llu delivered, %llu rejected, %llu dropped%s, %llu failed attempts; "
             "%llu alerts waiting%s",
             d->settings->origin, (unsigned long long)st.delivered, (unsigned long long)st.rejected,
             (unsigned long long)st.dropped, unsent ? " (the queue's included)" : "", (unsigned long long)st.failed,
             (unsigned long long)(d->outbox ? st.lag : 0), d->outbox ? " in the database for the next start" : "");
    free_deliver(d);
}
