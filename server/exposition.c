#include "exposition.h"

#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>

#include "clock.h"
#include "deliver.h"

/* ---- the text format ---- */

static void family(struct strbuf *o, const char *name, const char *type, const char *help)
{
    strbuf_printf(o, "# HELP seccheckd_%s %s\n# TYPE seccheckd_%s %s\n", name, help, name, type);
}

static void sample(struct strbuf *o, const char *name, const char *label, const char *value, uint64_t v)
{
    if (label)
        strbuf_printf(o, "seccheckd_%s{%s=\"%s\"} %" PRIu64 "\n", name, label, value, v);
    else
        strbuf_printf(o, "seccheckd_%s %" PRIu64 "\n", name, v);
}

static void counter(struct strbuf *o, const char *name, const char *help, uint64_t v)
{
    family(o, name, "counter", help);
    sample(o, name, NULL, NULL, v);
}

/* A family by label that has no series yet (no alert raised, no open
 * connection): one sample at 0, its labels empty (which Prometheus stores
 * as no label), the convention for a counter that has not moved, so a panel
 * shows 0 rather than no data. It goes once a labeled series appears (a
 * sum over the family is the same). labels: `rule=""`, as written. */
static void zero_unless(struct strbuf *o, const char *name, const char *labels, bool any)
{
    if (!any)
        strbuf_printf(o, "seccheckd_%s{%s} 0\n", name, labels);
}

static void gauge(struct strbuf *o, const char *name, const char *help, uint64_t v)
{
    family(o, name, "gauge", help);
    sample(o, name, NULL, NULL, v);
}

static void gauge_seconds(struct strbuf *o, const char *name, const char *help, int64_t ns)
{
    family(o, name, "gauge", help);
    strbuf_printf(o, "seccheckd_%s %.9f\n", name, (double)ns / 1e9);
}

static void histogram_seconds(struct strbuf *o, const char *name, const char *help, const struct histogram *h)
{
    family(o, name, "histogram", help);
    for (int i = 0; i < HISTOGRAM_BUCKETS; i++)
        strbuf_printf(o, "seccheckd_%s_bucket{le=\"%g\"} %" PRIu64 "\n", name,
                      (double)histogram_bounds_ns[i] / 1e9, histogram_cumulative(h, i));
    strbuf_printf(o, "seccheckd_%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, h->count);
    strbuf_printf(o, "seccheckd_%s_sum %.9f\n", name, (double)h->sum_ns / 1e9);
    strbuf_printf(o, "seccheckd_%s_count %" PRIu64 "\n", name, h->count);
}

/* ---- the daemon's numbers ---- */

static void render_connections(struct strbuf *o, const struct server *s)
{
    gauge(o, "connections_open", "Sandbox connections open now (handshaking or streaming).", s->nconns);
    counter(o, "connections_total", "Sandbox connections: counted at the handshake, or at the close of one "
            "that never made it.", s->stats.connections_total);
    counter(o, "probes_total", "Connections closed without sending a byte (another daemon checking that the socket "
            "is served): not sandboxes, never recorded.", s->stats.probes);
    counter(o, "connections_refused_total",
            "Connections closed at once: --max-connections were open, or no descriptor was left.",
            s->stats.connections_refused);
    counter(o, "connections_refused_no_fd_total",
            "Of the refused: accept failed for lack of descriptors (raise the open-file limit).",
            s->stats.connections_refused_no_fd);
    counter(o, "connections_denied_total", "Connections closed at once: peer uid not in --allow-uid.",
            s->stats.connections_denied);
    counter(o, "handshake_failures_total", "Connections closed before a valid handshake.",
            s->stats.handshake_failures);
    uint64_t dropped = s->stats.sandbox_dropped;   /* closed connections */
    for (const struct conn *c = s->conns; c; c = c->next)
        dropped += c->rec.sandbox_dropped;
    counter(o, "sandbox_dropped_total", "Events the sandboxes dropped before sending (their dropped_count, "
            "wrap-safe, summed over open and closed connections).", dropped);
    family(o, "connection_sandbox_dropped_total", "counter",
           "Events this open connection's sandbox dropped before sending (its socket buffer was full).");
    for (const struct conn *c = s->conns; c; c = c->next)
        if (c->rec.id)   /* 0: still handshaking, no id yet */
            strbuf_printf(o, "seccheckd_connection_sandbox_dropped_total{conn=\"%" PRIu64 "\"} %" PRIu64 "\n",
                          c->rec.id, c->rec.sandbox_dropped);
}

/* Time c has spent paused, the pause going on included. */
static int64_t paused_ns(const struct conn *c, int64_t now)
{
    return c->rec.paused_ns + (c->paused && !c->held ? now - c->paused_since_ns : 0);
}

/* Backpressure by connection (open ones; the totals include closed ones):
 * a connection over its fair share of the writer queue pauses. */
static void render_pauses(struct strbuf *o, const struct server *s)
{
    int64_t now = monotonic_ns();
    uint64_t pauses = s->stats.pauses;
    int64_t paused = s->stats.paused_ns;
    for (const struct conn *c = s->conns; c; c = c->next) {
        pauses += c->rec.paused_count;
        paused += paused_ns(c, now);
    }
    counter(o, "pauses_total", "Times a connection's reading paused, open and closed connections: it held more "
            "than its fair share of the writer queue, or the reserve was full too.", pauses);
    family(o, "paused_seconds_total", "counter", "Time connections spent paused, open and closed.");
    strbuf_printf(o, "seccheckd_paused_seconds_total %.9f\n", (double)paused / 1e9);
    bool any = false;
    family(o, "connection_pauses_total", "counter", "Times this open connection's reading paused.");
    for (const struct conn *c = s->conns; c; c = c->next)
        if (c->rec.id) {   /* 0: still handshaking, no id yet */
            strbuf_printf(o, "seccheckd_connection_pauses_total{conn=\"%" PRIu64 "\"} %" PRIu64 "\n", c->rec.id,
                          c->rec.paused_count);
            any = true;
        }
    zero_unless(o, "connection_pauses_total", "conn=\"\"", any);
    family(o, "connection_paused_seconds_total", "counter", "Time this open connection spent paused.");
    for (const struct conn *c = s->conns; c; c = c->next)
        if (c->rec.id)
            strbuf_printf(o, "seccheckd_connection_paused_seconds_total{conn=\"%" PRIu64 "\"} %.9f\n", c->rec.id,
                          (double)paused_ns(c, now) / 1e9);
    zero_unless(o, "connection_paused_seconds_total", "conn=\"\"", any);
}

/* A packet counts as received (and as rejected, undecoded or discarded by
 * policy) the moment it is read: the totals of every batch handed to the
 * sink plus the open batch's, so these never go backwards as batches move.
 * Stored, store_failed and the sink's own discards count once the sink is
 * done with the batch; while batches are in flight (writer_queue_depth)
 * received runs ahead of their sum, and once idle it equals it, as in the
 * exit summary. */
static void render_messages(struct strbuf *o, const struct pipeline *p)
{
    struct batch_counts seen = p->submitted;
    if (p->current)
        batch_counts_add(&seen, &p->current->counts);
    counter(o, "messages_received_total", "Packets read from sandbox connections after the handshake.",
            seen.received);
    counter(o, "messages_stored_total", "Events the sink committed.", p->result.stored);
    counter(o, "messages_discarded_total",
            "Packets dropped by policy (--keep-types and the other filters, --sink discard).",
            seen.discarded + p->result.discarded);
    counter(o, "messages_store_failed_total", "Events the sink could not store (database errors).",
            p->result.failed);
    family(o, "messages_rejected_total", "counter", "Packets not turned into events, by reason.");
    for (int r = 0; r < REJECT_REASON_COUNT; r++)
        sample(o, "messages_rejected_total", "reason", reject_reason_name(r), seen.rejected[r]);
    family(o, "messages_undecoded_total", "counter", "Events stored raw because they did not decode, by reason.");
    sample(o, "messages_undecoded_total", "reason", "unknown_type", seen.decode[DECODE_UNKNOWN_TYPE]);
    sample(o, "messages_undecoded_total", "reason", "bad_payload", seen.decode[DECODE_BAD_PAYLOAD]);
}

/* Only the types seen; every type this schema has no name for is "unknown". */
static void render_types(struct strbuf *o, const uint64_t by_type[INGEST_TYPE_SLOTS])
{
    const char *name = "messages_received_by_type_total";
    family(o, name, "counter", "Packets with a valid header, by message_type (before filters).");
    uint64_t unknown = by_type[DECODE_TYPE_MAX + 1];
    bool any = false;
    for (uint16_t t = 0; t <= DECODE_TYPE_MAX; t++) {
        const char *type = decode_type_name(t);
        if (!type) {
            unknown += by_type[t];
        } else if (by_type[t]) {
            sample(o, name, "type", type, by_type[t]);
            any = true;
        }
    }
    if (unknown)
        sample(o, name, "type", "unknown", unknown);
    zero_unless(o, name, "type=\"\"", any || unknown);
}

/* Two stat() calls per scrape, on the loop thread: metadata of a local
 * file (SQLite's WAL mode does not work on network file systems anyway). */
static uint64_t file_bytes(const char *path, const char *suffix)
{
    char full[4096 + 8];
    struct stat st;
    if ((size_t)snprintf(full, sizeof(full), "%s%s", path, suffix) >= sizeof(full) || stat(full, &st) != 0)
        return 0;
    return (uint64_t)st.st_size;
}

static void render_storage(struct strbuf *o, struct server *s)
{
    gauge(o, "writer_queue_depth", "Sealed batches waiting for or being written by the writer thread.",
          pipeline_in_flight(&s->pipeline));
    histogram_seconds(o, "batch_commit_seconds", "Time the sink took to write one batch (one transaction).",
                      &s->pipeline.write_latency);
    if (!s->cfg.db_path)
        return;
    gauge(o, "db_bytes", "Size of the SQLite database file.", file_bytes(s->cfg.db_path, ""));
    gauge(o, "db_wal_bytes", "Size of its write-ahead log (-wal file).", file_bytes(s->cfg.db_path, "-wal"));
    counter(o, "retention_deleted_events_total", "Events deleted by retention (--retain, --max-db-size).",
            sink_retention_deleted(s->sink));
}

/* Prometheus label values escape backslash, double quote and newline. */
static void label_value(struct strbuf *o, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            strbuf_putc(o, '\\');
        if (*v == '\n')
            strbuf_puts(o, "\\n");
        else
            strbuf_putc(o, *v);
    }
}

static void render_alerts(struct strbuf *o, const struct server *s)
{
    const struct alert_tally *t = &s->pipeline.alerts;
    gauge(o, "rules_loaded", "Rules enabled in the running rule set (--rules).", s->rules_loaded);
    bool any = false;
    family(o, "alerts_total", "counter", "Alerts raised, by rule and priority.");
    for (size_t i = 0; i < t->cap; i++)
        for (int p = 0; t->rules[i].name && p < RULES_PRIORITY_COUNT; p++)
            if (t->rules[i].by_priority[p]) {
                strbuf_puts(o, "seccheckd_alerts_total{rule=\"");
                label_value(o, t->rules[i].name);
                strbuf_printf(o, "\",priority=\"%s\"} %" PRIu64 "\n", rules_priority_name(p),
                              t->rules[i].by_priority[p]);
                any = true;
            }
    zero_unless(o, "alerts_total", "rule=\"\",priority=\"\"", any);
    any = false;
    family(o, "alerts_suppressed_total", "counter", "Alerts not raised because their rule and connection were "
           "over --alerts-rate, by rule.");
    for (size_t i = 0; i < t->cap; i++)
        if (t->rules[i].name && t->rules[i].suppressed) {
            strbuf_puts(o, "seccheckd_alerts_suppressed_total{rule=\"");
            label_value(o, t->rules[i].name);
            strbuf_printf(o, "\"} %" PRIu64 "\n", t->rules[i].suppressed);
            any = true;
        }
    zero_unless(o, "alerts_suppressed_total", "rule=\"\"", any);
    any = false;
    family(o, "alerts_over_ceiling_total", "counter", "Alerts not raised because their connection was over "
           "--alerts-ceiling, by rule.");
    for (size_t i = 0; i < t->cap; i++)
        if (t->rules[i].name && t->rules[i].over_ceiling) {
            strbuf_puts(o, "seccheckd_alerts_over_ceiling_total{rule=\"");
            label_value(o, t->rules[i].name);
            strbuf_printf(o, "\"} %" PRIu64 "\n", t->rules[i].over_ceiling);
            any = true;
        }
    zero_unless(o, "alerts_over_ceiling_total", "rule=\"\"", any);
    counter(o, "alerts_lost_total", "Alerts the rules could not keep for lack of memory.", t->lost);
    counter(o, "alert_lines_failed_total", "Alerts that could not be written to --alerts-out.", t->lines_failed);
    uint64_t processes, evictions;
    if (sink_process_table(s->sink, &processes, &evictions)) {
        gauge(o, "rules_processes", "Processes the rules' tables hold (parents, command lines), all sandboxes.",
              processes);
        counter(o, "rules_process_evictions_total", "Processes removed from the rules' tables to stay under "
                "--max-processes (the sandbox holding the most loses its least recently used).", evictions);
    }
    struct sink_sequences sq;
    if (sink_sequences(s->sink, &sq)) {
        gauge(o, "rules_sequence_partials", "Sequences' partial matches held (chains begun, not complete), all "
              "sandboxes.", sq.partials);
        gauge(o, "rules_sequence_bytes", "Bytes the partial matches hold (at most --sequence-memory).", sq.bytes);
        counter(o, "rules_sequence_started_total", "Partial matches begun.", sq.started);
        counter(o, "rules_sequence_evictions_total", "Partial matches evicted by --sequence-memory or "
                "--sequence-partials (the sandbox holding the most loses its oldest); each said in its "
                "connection's next alert.", sq.evicted);
        counter(o, "rules_sequence_expired_total", "Partial matches past their sequence's within.", sq.expired);
        counter(o, "rules_sequence_cancelled_total", "Partial matches cancelled by their sequence's unless.",
                sq.cancelled);
        counter(o, "rules_sequence_dropped_total", "Partial matches dropped because the rules changed, the "
                "connection closed or the daemon restarted.", sq.dropped);
    }
}

/* The container lookups (--runsc-root), when they run. */
static void render_containers(struct strbuf *o, const struct server *s)
{
    struct container_cache_stats st;
    uint64_t foreign, over_limit;
    if (!s->sink || !sink_container_stats(s->sink, &st, &foreign, &over_limit))
        return;
    counter(o, "container_lookups_total", "Searches of the runsc roots for a container's state file (each attempt).",
            st.lookups);
    counter(o, "containers_found_total", "Containers whose runsc state file was read.", st.found);
    counter(o, "containers_unknown_total", "Containers given up on: no state file after every attempt.", st.unknown);
    counter(o, "container_state_files_refused_total", "State files refused: too large, not JSON, not a regular "
            "file, or naming another container.", st.refused);
    counter(o, "container_user_files_refused_total", "Containers' /etc/passwd or /etc/group refused: not a regular "
            "file, too large, or leading out of the container's root.", st.users_refused);
    counter(o, "container_mounts_malformed_total", "Mounts of containers' specs refused (not an object, no "
            "destination, past 256 mounts or 64 KiB) or malformed (a value cut or holding a control character, an "
            "option not a string).", st.mounts_malformed);
    counter(o, "container_ids_invalid_total", "Container ids never looked up: not a runsc id.", st.invalid_ids);
    counter(o, "container_ids_over_limit_total", "Container ids not looked up: their connection named more than 64.",
            over_limit);
    counter(o, "container_records_foreign_total", "Container records withheld from a connection: another sandbox's.",
            foreign);
    counter(o, "container_lookup_wait_timeouts_total", "First lookups the writer stopped waiting for (100 ms a "
            "batch); their events went on without names.", st.wait_timeouts);
    counter(o, "container_records_evicted_total", "Container records dropped to stay under 4096.", st.evicted);
    family(o, "container_docker_lookups_total", "counter", "Questions to Docker's API (--docker-socket) about a "
           "container whose runsc state names none, by result: found (its name, image, labels), not_found (not "
           "Docker's), failed (no answer in 2 s, an HTTP error), refused (an answer over 1 MiB, not JSON, or about "
           "another container).");
    sample(o, "container_docker_lookups_total", "result", "found", st.docker_found);
    sample(o, "container_docker_lookups_total", "result", "not_found", st.docker_not_found);
    sample(o, "container_docker_lookups_total", "result", "failed", st.docker_failed);
    sample(o, "container_docker_lookups_total", "result", "refused", st.docker_refused);
    counter(o, "container_labels_dropped_total", "Docker labels not kept: past 256 or 16 KiB a container, a key "
            "over 256 bytes or a value over 100 (Falco's label_max_len).", st.labels_dropped);
    counter(o, "container_records_evicted_total", "Container records dropped to stay under 4096 records and 256 MiB.",
            st.evicted);
    gauge(o, "container_records", "Container records the lookup cache holds.", st.records);
    gauge(o, "container_record_bytes", "Bytes of those records (names, users, groups, mounts), about.",
          st.record_bytes);
    family(o, "container_connections_bound_total", "counter", "Connections bound to their sandbox, by how: peer "
           "(the runsc command that connected), container (the first container they named), restart (as the image "
           "before this one had them); none: closed without a sandbox.");
    sample(o, "container_connections_bound_total", "by", "peer", st.bound_peer);
    sample(o, "container_connections_bound_total", "by", "container", st.bound_container);
    sample(o, "container_connections_bound_total", "by", "restart", st.bound_restart);
    sample(o, "container_connections_bound_total", "by", "none", st.unbound);
}

/* Counted over every image of the process (the restart state carries them). */
static void render_restarts(struct strbuf *o, const struct server *s)
{
    const struct handoff_restarts *r = &s->stats.restarts;
    family(o, "restarts_total", "counter", "Restarts in place (SIGUSR2) since the process started, by result: ok "
           "(a new image took over), refused (the build to run failed its check: the running image carried on), "
           "failed (the new image could not start: the build before it came back).");
    sample(o, "restarts_total", "result", "ok", r->ok);
    sample(o, "restarts_total", "result", "refused", r->refused);
    sample(o, "restarts_total", "result", "failed", r->failed);
    gauge_seconds(o, "restart_reading_pause_seconds",
                  "The restart that started this image: from the previous image's last read to this one's first, "
                  "while the sandboxes buffered (0 after a fresh start).",
                  s->stats.restart_pause_ns);
}

/* Atomics the delivery thread keeps (deliver.h): no lock. */
static void render_delivery(struct strbuf *o, const struct server *s)
{
    struct deliver_stats st = {0};   /* without --alerts-url: every one 0, so the panels show 0 */
    if (s->delivery)
        deliver_get_stats(s->delivery, &st);
    const char *name = "alert_deliveries_total";
    family(o, name, "counter", "Alerts delivered to --alerts-url, attempts that failed (each retry counts), "
           "alerts the receiver rejected (4xx: not sent again), alerts dropped (queue full, store failed, "
           "deleted by --max-db-size before delivery), and alerts skipped (stored before the database's first "
           "--alerts-url: not sent).");
    sample(o, name, "result", "delivered", st.delivered);
    sample(o, name, "result", "failed", st.failed);
    sample(o, name, "result", "rejected", st.rejected);
    sample(o, name, "result", "dropped", st.dropped);
    sample(o, name, "result", "skipped", st.skipped);
    gauge(o, "alert_delivery_lag", "Alerts raised and not yet delivered: with the sqlite sink, the newest alert id "
          "committed minus the last one delivered; without it, the alerts in the queue.", st.lag);
}

/* The rest of the loop's figures (the exit summary prints them at
 * --log-level debug). */
static void render_loop_turns(struct strbuf *o, const struct stall_meter *m)
{
    counter(o, "loop_turns_total", "Turns of the socket loop.", m->turns);
    counter(o, "loop_preempted_turns_total", "Loop turns in which the thread was preempted (another thread had the "
            "CPU).", m->preempted_turns);
    counter(o, "loop_stalls_over_1ms_total", "Loop turns that went over 1 ms without reading sockets.",
            m->stalls_over_1ms);
    counter(o, "loop_own_stalls_over_1ms_total", "Of those, turns not preempted: the loop's own work.",
            m->own_stalls_over_1ms);
    gauge_seconds(o, "loop_longest_turn_seconds", "Busy time (not idle) of the longest loop turn since start.",
                  m->longest_turn_ns);
}

void exposition_render(struct strbuf *out, struct server *s)
{
    render_connections(out, s);
    render_pauses(out, s);
    render_messages(out, &s->pipeline);
    render_types(out, s->stats.received_by_type);
    render_storage(out, s);
    render_alerts(out, s);
    render_containers(out, s);
    render_restarts(out, s);
    render_delivery(out, s);
    gauge_seconds(out, "loop_longest_stall_seconds",
                  "Longest time the loop went without reading sockets since start, wall clock (its own work, "
                  "and time preempted).",
                  s->stalls.longest_stall_ns);
    gauge_seconds(out, "loop_longest_own_stall_seconds",
                  "Longest time without reading sockets in a loop turn that was not preempted: the loop's own work.",
                  s->stalls.longest_own_stall_ns);
    render_loop_turns(out, &s->stalls);
}
