/* main.c - the seccheckd command line. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alerts.h"
#include "central.h"
#include "chain.h"
#include "containers.h"
#include "deliver.h"
#include "events.h"
#include "export.h"
#include "ingest_filter.h"
#include "forward.h"
#include "jetstream.h"
#include "gvisor_config.h"
#include "handoff.h"
#include "log.h"
#include "notify.h"
#include "options.h"
#include "relay.h"
#include "restart_check.h"
#include "rules.h"
#include "rules_cli.h"
#include "rules_diff.h"
#include "rules_reload.h"
#include "runsc_roots.h"
#include "self_binary.h"
#include "server.h"
#include "sink.h"
#include "verify.h"

/* A clean stop lets delivery go on with the alerts still waiting this long. */
#define DELIVER_STOP_GRACE_MS 2000

/* One sink of the --sink list by name (options.c accepts only these);
 * probe: `seccheckd check`, which leaves no run behind; outbox: delivery's
 * position, for the SQLite sink. */
static struct sink *open_one_sink(const struct options *o, const char *name, bool probe, struct alert_outbox *outbox,
                                  char *err, size_t errlen)
{
    if (strcmp(name, "discard") == 0) {
        struct sink *s = sink_discard_open();
        if (!s)
            snprintf(err, errlen, "out of memory");
        return s;
    }
    if (strcmp(name, "record") == 0)
        return sink_record_open(o->record_dir, err, errlen);
    if (strcmp(name, "ndjson") == 0) {
        struct sink_ndjson_options no = {
            .path = o->ndjson_path, .max_bytes = o->ndjson_max_bytes, .keep = (unsigned)o->ndjson_keep};
        return sink_ndjson_open(&no, err, errlen);
    }
    if (strcmp(name, "text") == 0)
        return sink_text_open(o->text_path, err, errlen);
    struct sink_sqlite_options so = {
        .path = o->db_path,
        .busy_timeout_ms = (int)o->busy_timeout_ms,
        .key_file = o->key_file,
        .retain_s = o->retain_s,
        .max_db_bytes = o->max_db_bytes,
        .indexes = o->indexes,
        .probe = probe,
        .outbox = outbox,
    };
    return sink_sqlite_open(&so, err, errlen);
}

/* What a sink writes to, for the start-up log line; NULL: nothing. */
static const char *sink_target(const struct options *o, const char *name)
{
    const char *t = strcmp(name, "sqlite") == 0   ? o->db_path
                    : strcmp(name, "record") == 0 ? o->record_dir
                    : strcmp(name, "ndjson") == 0 ? o->ndjson_path
                    : strcmp(name, "text") == 0   ? o->text_path
                                                  : NULL;
    return t && strcmp(t, "-") == 0 ? "stdout" : t;
}

/* Every sink of the comma list, several combined by a tee. On a failure
 * the ones already open are closed and err names the failing one. */
static struct sink *open_sink(const struct options *o, bool probe, struct alert_outbox *outbox, char *err,
                              size_t errlen)
{
    struct sink *sinks[8];
    size_t n = 0;
    char names[256], why[480];
    err[0] = '\0';
    snprintf(names, sizeof(names), "%s", o->sink);
    char *save = NULL;
    for (char *name = strtok_r(names, ",", &save); name && !err[0]; name = strtok_r(NULL, ",", &save)) {
        for (size_t i = 0; i < n; i++)
            if (strcmp(sinks[i]->ops->name, name) == 0)
                snprintf(err, errlen, "--sink: %s is listed twice", name);
        if (!err[0] && n == sizeof(sinks) / sizeof(sinks[0]))
            snprintf(err, errlen, "--sink: too many sinks");
        if (err[0])
            break;
        if ((sinks[n] = open_one_sink(o, name, probe, outbox, why, sizeof(why))) != NULL)
            n++;
        else
            snprintf(err, errlen, "%s sink: %s", name, why);
    }
    struct sink *s = NULL;
    if (err[0])
        while (n)
            sink_close(sinks[--n]);
    else
        s = sink_tee_open(sinks, n, err, errlen);   /* closes them if it fails */
    return s;
}

/* "sqlite -> ./seccheck.db, ndjson -> stdout" */
static void describe_sinks(const struct options *o, char *out, size_t outlen)
{
    char names[256];
    snprintf(names, sizeof(names), "%s", o->sink);
    size_t len = 0;
    out[0] = '\0';
    char *save = NULL;
    for (char *name = strtok_r(names, ",", &save); name && len < outlen; name = strtok_r(NULL, ",", &save)) {
        const char *target = sink_target(o, name);
        len += (size_t)snprintf(out + len, outlen - len, "%s%s%s%s", len ? ", " : "", name, target ? " -> " : "",
                                target ? target : "");
    }
}

/* 7d, 12h, 90m, 45s, as --retain takes them; "forever" for 0. */
static void format_duration(uint64_t s, char *out, size_t len)
{
    static const struct { uint64_t seconds; char unit; } units[] = {{86400, 'd'}, {3600, 'h'}, {60, 'm'}};
    size_t i = 0;
    while (i < 3 && s % units[i].seconds)
        i++;
    if (s == 0)
        snprintf(out, len, "forever");
    else if (i < 3)
        snprintf(out, len, "%llu%c", (unsigned long long)(s / units[i].seconds), units[i].unit);
    else
        snprintf(out, len, "%llus", (unsigned long long)s);
}

/* 20G, 512M, 4096, as --max-db-size takes them; "none" for 0. */
static void format_bytes(uint64_t b, char *out, size_t len)
{
    static const char units[] = "TGMK";
    int i = 0;
    while (units[i] && (b % (1ull << (10 * (4 - i))) != 0))
        i++;
    if (b == 0)
        snprintf(out, len, "none");
    else if (units[i])
        snprintf(out, len, "%llu%c", (unsigned long long)(b >> (10 * (4 - i))), units[i]);
    else
        snprintf(out, len, "%llu", (unsigned long long)b);
}

/* What decides which events are kept, for the start-up log: what to check
 * first when events seem to be missing. */
static void log_settings(const struct options *o)
{
    char retention[96] = "", retain[32], max_size[32];
    format_duration(o->retain_s, retain, sizeof(retain));
    format_bytes(o->max_db_bytes, max_size, sizeof(max_size));
    if (strstr(o->sink, "sqlite"))
        snprintf(retention, sizeof(retention), "retain %s, max-db-size %s; ", retain, max_size);
    const struct server_config *c = &o->server;
    log_info("settings: %skeep-types %s, drop-types %s, keep-containers %s, drop-containers %s; max-connections %u, "
             "max-message %zu, batch-size %zu, flush-ms %u, queue-max %zu, on-full %s",
             retention, o->keep_types ? o->keep_types : "all", o->drop_types ? o->drop_types : "none",
             o->keep_containers ? o->keep_containers : "all", o->drop_containers ? o->drop_containers : "none",
             c->max_connections, c->max_message, c->pipeline.limits.max_events, c->flush_ms, c->pipeline.queue_max,
             c->drop_when_full ? "drop" : "block");
}

/* Said at start when no rule runs: a daemon started from a config file or
 * a unit without rules detects nothing, and nothing else would say so. */
static void log_detection(const struct options *o, uint64_t rules_enabled)
{
    if (o->rules && rules_enabled)
        return;
    if (o->rules)
        log_warn("detection off: the rules files hold no enabled rule (--rules)");
    else if (o->default_rules && !o->rules_none)
        log_warn("detection off: no rules loaded: --default-rules %s does not exist (cmake --install puts the "
                 "default rules in %s)", o->default_rules, SECCHECKD_RULES_DIR);
    else
        log_warn("detection off: no rules loaded (--rules FILE|DIR%s; cmake --install puts the default rules in %s)",
                 o->rules_none ? " instead of none" : "", SECCHECKD_RULES_DIR);
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

/* Every error and warning of a rules load, one log line each. */
static void log_rules_diag(const struct rules_diag *d)
{
    for (size_t i = 0; i < d->count; i++) {
        const struct rules_diag_item *it = &d->items[i];
        char where[64] = "";
        if (it->line)
            snprintf(where, sizeof(where), ":%u:%u", it->line, it->column);
        if (it->is_error)
            log_error("rules: %s%s: %s", it->file, where, it->message);
        else
            log_warn("rules: %s%s: %s", it->file, where, it->message);
    }
}

/* A load's outcome, logged: every problem, then what loaded. */
static void log_rules_loaded(const struct rule_set *rs, const struct rules_diag *diag)
{
    log_rules_diag(diag);
    if (rs) {
        struct rule_set_stats st;
        rule_set_get_stats(rs, &st);
        log_info("rules: %zu rules enabled of %zu (%zu lists, %zu macros) from %zu file%s", st.rules_enabled,
                 st.rules, st.lists, st.macros, st.files, st.files == 1 ? "" : "s");
    } else {
        log_error("rules: %zu error%s in the rules files (above)", diag->errors, diag->errors == 1 ? "" : "s");
    }
}

/* --append-output for the rules loads that follow; false with why logged. */
static bool set_append_output(const struct options *o, const char *what)
{
    char err[512];
    struct rules_append_output *ao =
        rules_append_output_load(o->append_output ? o->append_output : RULES_APPEND_OUTPUT_DEFAULT, err, sizeof(err));
    if (!ao) {
        log_error("%s--append-output: %s", what, err);
        return false;
    }
    rules_set_append_output(ao);
    return true;
}

/* The --rules files as one set; NULL with every problem logged. */
static struct rule_set *load_rules(const struct options *o)
{
    if (!set_append_output(o, "rules: "))
        return NULL;
    char *copy;
    const char *paths[OPTIONS_RULES_MAX];
    size_t n = options_rules_paths(o, &copy, paths, OPTIONS_RULES_MAX);
    struct rules_diag diag = {0};
    rules_set_absent_mode(o->rules_absent_run ? RULES_ABSENT_RUN : RULES_ABSENT_DISABLE);
    struct rule_set *rs = rule_set_load(paths, n, &diag);
    log_rules_loaded(rs, &diag);
    rules_diag_free(&diag);
    free(copy);
    return rs;
}

static uint64_t rules_enabled(const struct rule_set *rs)
{
    struct rule_set_stats st;
    rule_set_get_stats(rs, &st);
    return st.rules_enabled;
}

/* The alerts' "hostname". */
static void host_name(char *out, size_t outlen)
{
    memset(out, 0, outlen);
    if (gethostname(out, outlen - 1) != 0)
        snprintf(out, outlen, "unknown");
}

static void offer_alerts(const struct alert_list *alerts, void *delivery)
{
    deliver_offer(delivery, alerts);
}

/* True when a sink of the --sink list writes its events to standard output. */
static bool sink_on_stdout(const struct options *o)
{
    char names[256];
    snprintf(names, sizeof(names), "%s", o->sink);
    char *save = NULL;
    for (char *name = strtok_r(names, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        const char *target = sink_target(o, name);
        if (target && strcmp(target, "stdout") == 0)
            return true;
    }
    return false;
}

/* Standard output is the journal's stream: systemd sets JOURNAL_STREAM to
 * its device and inode ("DEV:INODE"), which a redirection changes. */
static bool stdout_is_journal(void)
{
    const char *v = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    char tail;
    struct stat st;
    return v && sscanf(v, "%llu:%llu%c", &dev, &ino, &tail) == 2 && fstat(STDOUT_FILENO, &st) == 0 &&
           (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

/* --color auto: a terminal that is not "dumb", and no NO_COLOR (no-color.org). */
static bool want_color(enum options_color c)
{
    if (c != OPTIONS_COLOR_AUTO)
        return c == OPTIONS_COLOR_ALWAYS;
    const char *no_color = getenv("NO_COLOR"), *term = getenv("TERM");
    return isatty(STDOUT_FILENO) && !(no_color && no_color[0]) && !(term && strcmp(term, "dumb") == 0);
}

/* Standard output was closed when the daemon started (now /dev/null). */
static bool stdout_was_closed;

/* Where the alert lines go: --alerts-out PATH or - (Falco's JSON), none,
 * or by default Falco's text line on standard output (as Falco does), the
 * journal's "<N>" prefix when that is the journal. *path NULL: nowhere;
 * why says where, for the start-up log. */
static void choose_alert_output(const struct options *o, const char **path, struct alert_line_style *style,
                                const char **why)
{
    *style = (struct alert_line_style){.format = ALERT_LINE_JSON};
    *path = o->alerts_out && strcmp(o->alerts_out, "none") != 0 ? o->alerts_out : NULL;
    *why = NULL;
    if (o->alerts_out || !o->rules)
        return;
    if (stdout_was_closed || sink_on_stdout(o)) {
        *why = stdout_was_closed ? "not on standard output, which was closed (--alerts-out PATH writes them to a file)"
                                 : "not on standard output, where a sink writes its events (--alerts-out PATH "
                                   "writes them to a file)";
        return;
    }
    *path = "-";
    if (stdout_is_journal()) {
        style->format = ALERT_LINE_JOURNAL;
        *why = "Falco's text line on standard output, the journal, at the alert's priority (--alerts-out none: off)";
    } else {
        style->format = ALERT_LINE_TEXT;
        style->color = want_color(o->color);
        *why = "Falco's text line on standard output (--alerts-out none: off; -: Falco's JSON)";
    }
}

static void conn_ready(uint64_t conn_id, int fd, void *data)
{
    container_cache_conn_opened(data, conn_id, fd);
}

/* The rules in front of the sink: on the writer thread, alerts stored with
 * their events (and, without a database, offered to delivery). Takes
 * ownership of sink and rs; NULL after printing why. */
static struct sink *add_rules(const struct options *o, struct sink *sink, struct rule_set *rs, const char *hostname,
                              struct deliver *delivery, struct container_view *containers, bool probe)
{
    const char *why;
    struct sink_rules_options ro = {
        .alerts_max_bytes = o->alerts_max_bytes,
        .alerts_keep = (unsigned)o->alerts_keep,
        .history_db = strstr(o->sink, "sqlite") ? o->db_path : NULL,
        .on_alerts = delivery ? offer_alerts : NULL,
        .on_alerts_data = delivery,
    };
    choose_alert_output(o, &ro.alerts_path, &ro.alerts_style, &why);
    if (why && !probe)
        log_info("alerts: %s", why);
    rules_engine_config_defaults(&ro.engine);
    ro.engine.hostname = hostname;
    ro.engine.max_processes = (size_t)o->max_processes;
    ro.engine.matching = (enum rules_matching)o->rule_matching;
    ro.engine.rate = o->alerts_rate;
    ro.engine.burst = (double)o->alerts_burst;
    ro.engine.containers = containers;
    ro.engine.ceiling = o->alerts_ceiling;
    ro.engine.ceiling_burst = (double)o->alerts_ceiling_burst;
    ro.engine.sequence_max_bytes = (size_t)o->sequence_memory;
    ro.engine.sequence_max_per_group = (size_t)o->sequence_partials;
    ro.engine.drop_alerts = !o->drop_alerts_off;
    ro.engine.drop_threshold = o->drop_threshold;
    ro.engine.drop_rate = o->drop_rate;
    ro.engine.drop_burst = (double)o->drop_burst;
    char err[512];
    struct sink *s = sink_rules_open(sink, rs, &ro, err, sizeof(err));
    if (!s)
        fprintf(stderr, "seccheckd: --alerts-out: %s\n", err);
    return s;
}

/* SIGHUP: the rules files again, loaded on a thread of their own
 * (rules_reload.h) so that no file, however slow or hostile, stops the loop;
 * reload_rules_done swaps the new set in and says what changed. True when a
 * load was started (or queued behind the one running). */
static bool reload_rules(struct rules_reload *reloader, const struct options *fresh, bool running)
{
    if (!fresh->rules) {
        if (running)
            log_warn("reload: --rules is gone from the settings; the running rules stay until a restart");
        return false;
    }
    if (!running) {
        log_warn("reload: rules are not applied until a restart (the daemon started without --rules)");
        return false;
    }
    if (!set_append_output(fresh, "reload: the running rules stay: "))
        return false;
    char *copy, err[256];
    const char *paths[OPTIONS_RULES_MAX];
    size_t n = options_rules_paths(fresh, &copy, paths, OPTIONS_RULES_MAX);
    rules_set_absent_mode(fresh->rules_absent_run ? RULES_ABSENT_RUN : RULES_ABSENT_DISABLE);
    int rc = reloader ? rules_reload_start(reloader, paths, n, err, sizeof(err)) : -1;
    free(copy);
    if (rc < 0) {
        log_error("reload: %s; the running rules stay", reloader ? err : "no rules loader");
        return false;
    }
    if (rc == 1)
        log_info("reload: a rules load is under way; the files are loaded again after it");
    return true;
}

/* "log-level, rules" holds name as one of its comma-separated names. */
static bool names_setting(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == '\0' || p[n] == ','))
            return true;
    return false;
}

/* --alerts-url and its companions, checked as a request would use them:
 * the settings, or NULL (none wanted, or err says why not). */
static struct deliver_settings *load_delivery_settings(const struct options *o, char *err, size_t errlen)
{
    err[0] = '\0';
    if (!o->alerts_url && !o->alerts_url_file)
        return NULL;
    return deliver_settings_load(o->alerts_url, o->alerts_url_file, o->alerts_ca, o->alerts_header_file,
                                 (unsigned)o->alerts_timeout_ms, err, errlen);
}

/* The delivery settings of fresh become the running ones' (not applied). */
static void keep_delivery_settings(struct options *fresh, const struct options *running)
{
    char **f[] = {&fresh->alerts_url, &fresh->alerts_url_file, &fresh->alerts_ca, &fresh->alerts_header_file};
    char *const r[] = {running->alerts_url, running->alerts_url_file, running->alerts_ca,
                       running->alerts_header_file};
    for (size_t i = 0; i < 4; i++) {
        free(*f[i]);
        *f[i] = r[i] ? strdup(r[i]) : NULL;
    }
    fresh->alerts_timeout_ms = running->alerts_timeout_ms;
}

/* SIGHUP: new delivery settings go to the delivery thread; settings that
 * do not load leave the running ones (and fresh then says so). */
static void reload_delivery(struct deliver *d, const struct options *running, struct options *fresh)
{
    char err[512];
    struct deliver_settings *s = NULL;
    bool wanted = fresh->alerts_url || fresh->alerts_url_file;
    if (!wanted && d)
        log_warn("reload: --alerts-url is gone from the settings; delivery goes on until a restart");
    else if (wanted && !d)
        log_warn("reload: --alerts-url is not applied until a restart (the daemon started without it)");
    else if (d && fresh->alerts_url && fresh->alerts_url_file)
        log_error("reload: give --alerts-url or --alerts-url-file, not both; delivery keeps its running settings");
    else if (d && !(s = load_delivery_settings(fresh, err, sizeof(err))))
        log_error("reload: %s; delivery keeps its running settings", err);
    if (s)
        deliver_reconfigure(d, s);
    else if (d || wanted)
        keep_delivery_settings(fresh, running);
}

/* What SIGHUP needs: the command line to read the settings again, and the
 * settings running now. */
struct reload_context {
    int argc;
    char **argv;
    struct options *running;
    struct sink *sink;
    struct deliver *delivery;
    struct rules_digest *rules;   /* the running rules, to say what a reload changed */
    struct server *srv;
    struct rules_reload *reloader;   /* with --rules */
    /* SIGHUPs whose rules are loading: what each applied, said once the
     * rules are in (after what changed in them) */
    struct reload_summary *pending, **pending_tail;
};

/* What one SIGHUP applied, kept while its rules load. */
struct reload_summary {
    char live[512], later[512];
    struct reload_summary *next;
};

static void reload_pending_add(struct reload_context *rc, const char *live, const char *later)
{
    struct reload_summary *p = calloc(1, sizeof(*p));
    if (!p) {   /* said now, without the rules */
        log_info("reload: applied %s", live[0] ? live : "no changes");
        return;
    }
    snprintf(p->live, sizeof(p->live), "%s", live);
    snprintf(p->later, sizeof(p->later), "%s", later);
    if (!rc->pending_tail)
        rc->pending_tail = &rc->pending;
    *rc->pending_tail = p;
    rc->pending_tail = &p->next;
}

/* Says what the oldest pending SIGHUP applied (all of them when no other
 * load follows: a SIGHUP during a load shares the next one). */
static void reload_pending_say(struct reload_context *rc, bool rules_changed, bool all)
{
    while (rc->pending) {
        struct reload_summary *p = rc->pending;
        rc->pending = p->next;
        if (!rc->pending)
            rc->pending_tail = &rc->pending;
        if (rules_changed && !names_setting(p->live, "rules"))   /* the same files, new contents */
            snprintf(p->live + strlen(p->live), sizeof(p->live) - strlen(p->live), "%srules",
                     p->live[0] ? ", " : "");
        log_info("reload: applied %s", p->live[0] ? p->live : "no changes");
        if (p->later[0])
            log_warn("reload: not applied until a restart (SIGUSR2; systemctl kill -s USR2 seccheckd): %s", p->later);
        free(p);
        if (!all)
            break;
    }
}

static void reload_pending_free(struct reload_context *rc)
{
    while (rc->pending) {
        struct reload_summary *p = rc->pending;
        rc->pending = p->next;
        free(p);
    }
    rc->pending_tail = &rc->pending;
}

/* On the loop thread, a SIGHUP's rules load has ended (more: another
 * follows it). The new set is described against the running one, then
 * swapped in. */
static void reload_rules_done(struct rule_set *rs, const struct rules_diag *diag, double ms, bool more, void *data)
{
    struct reload_context *rc = data;
    log_rules_loaded(rs, diag);
    bool changed = false;
    if (!rs) {
        log_error("reload: the rules files have errors; the running rules stay");
    } else {
        log_info("reload: rules loaded in %.0f ms, off the event loop (the running rules served meanwhile)", ms);
        struct rules_digest *now = rules_digest_of(rs);
        size_t changes = 1;
        if (now && rc->rules) {
            char what[1024];
            changes = rules_digest_describe(rc->rules, now, what, sizeof(what));
            log_info("reload: rules: %s", what);
        }
        rules_digest_free(rc->rules);
        rc->rules = now;
        changed = changes > 0;
        rc->srv->rules_loaded = rules_enabled(rs);
        sink_set_rules(rc->sink, rs);
    }
    reload_pending_say(rc, changed, !more);
}

static void swap_strings(char **a, char **b)
{
    char *t = *a;
    *a = *b;
    *b = t;
}

/* The running settings take the live ones from fresh (fresh gets the old
 * ones, to free); the restart-only ones keep describing what runs. */
static void take_live_settings(struct options *running, struct options *fresh)
{
    swap_strings(&running->keep_types, &fresh->keep_types);
    swap_strings(&running->drop_types, &fresh->drop_types);
    swap_strings(&running->keep_containers, &fresh->keep_containers);
    swap_strings(&running->drop_containers, &fresh->drop_containers);
    if (running->rules)   /* without rules at start, a new list waits for a restart */
        swap_strings(&running->rules, &fresh->rules);
    swap_strings(&running->append_output, &fresh->append_output);
    running->log_level = fresh->log_level;
    running->retain_s = fresh->retain_s;
    running->max_db_bytes = fresh->max_db_bytes;
    swap_strings(&running->alerts_url, &fresh->alerts_url);
    swap_strings(&running->alerts_url_file, &fresh->alerts_url_file);
    swap_strings(&running->alerts_ca, &fresh->alerts_ca);
    swap_strings(&running->alerts_header_file, &fresh->alerts_header_file);
    running->alerts_timeout_ms = fresh->alerts_timeout_ms;
}

/* SIGHUP: re-read the config file and command line; apply what can change
 * live (filters, log level), name what waits for a restart. */
static void reload(struct server *srv, void *data)
{
    struct reload_context *rc = data;
    struct options fresh;
    struct filter filter;
    char err[256];
    if (options_load(&fresh, rc->argc, rc->argv) != 0 ||
        options_build_filter(&fresh, &filter, err, sizeof(err)) != 0) {
        log_error("reload: the new settings are not valid; keeping the running ones");
        options_free(&fresh);
        return;
    }
    reload_delivery(rc->delivery, rc->running, &fresh);
    char live[512], later[512];
    options_diff(rc->running, &fresh, true, live, sizeof(live));
    options_diff(rc->running, &fresh, false, later, sizeof(later));
    server_set_filter(srv, &filter);
    log_set_level(fresh.log_level);
    sink_set_retention(rc->sink, fresh.retain_s, fresh.max_db_bytes);
    if (reload_rules(rc->reloader, &fresh, rc->running->rules != NULL)) {
        reload_pending_add(rc, live, later);   /* said when the rules are in */
        take_live_settings(rc->running, &fresh);
        options_free(&fresh);
        return;
    }
    log_info("reload: applied %s", live[0] ? live : "no changes");
    if (later[0])
        log_warn("reload: not applied until a restart (SIGUSR2; systemctl kill -s USR2 seccheckd): %s", later);
    take_live_settings(rc->running, &fresh);
    options_free(&fresh);
}

/* Values the option parser cannot judge alone (an address, a key file's
 * length) are still usage errors: 0, or -1 with the problem printed. */
static int check_option_values(const struct options *o)
{
    char err[512];
    if (o->server.metrics_listen && metrics_check_address(o->server.metrics_listen, err, sizeof(err)) != 0) {
        fprintf(stderr, "seccheckd: %s\n", err);   /* names the option */
        return -1;
    }
    bool delivers = o->alerts_url || o->alerts_url_file;
    if (((o->alerts_out && strcmp(o->alerts_out, "none") != 0) || delivers) && !o->rules) {
        fprintf(stderr, "seccheckd: --%s needs --rules (the alerts come from rules)\n",
                o->alerts_out ? "alerts-out" : o->alerts_url ? "alerts-url" : "alerts-url-file");
        return -1;
    }
    if (o->alerts_url && o->alerts_url_file) {
        fprintf(stderr, "seccheckd: give --alerts-url or --alerts-url-file, not both\n");
        return -1;
    }
    if ((o->alerts_ca || o->alerts_header_file) && !delivers) {
        fprintf(stderr, "seccheckd: --%s is for --alerts-url, which is not set\n",
                o->alerts_ca ? "alerts-ca" : "alerts-header-file");
        return -1;
    }
    if (o->key_file) {
        struct chain_key key;
        int rc = chain_key_load(o->key_file, &key, err, sizeof(err));
        chain_key_free(&key);
        if (rc != 0) {
            fprintf(stderr, "seccheckd: --key-file: %s\n", err);
            return -1;
        }
    }
    return 0;
}

/* `seccheckd check [OPTIONS]`: the settings these options give (config file
 * and command line) are valid and every sink opens; the socket is not
 * bound. A restart runs it with the build to run before handing over
 * (restart_check.h), so it must fail wherever a start would. */
static void check_usage(FILE *out)
{
    fprintf(out, "Usage: seccheckd check [OPTIONS]\n"
                 "Checks what a start with these options would get to, without starting: the settings\n"
                 "are valid, the rules files load, every sink opens (the database, --alerts-out).\n"
                 "A restart (SIGUSR2) runs it first and keeps the running image when it fails.\n"
                 "OPTIONS are the daemon's, --config FILE too (seccheckd --help lists them).\n"
                 "Exit status: 0 a start would get that far, 1 a sink does not open, 2 a setting or a\n"
                 "rules file is invalid (printed).\n");
}

static int check_main(int argc, char **argv)
{
    struct options o;
    options_set_help(check_usage);
    int rc = options_load(&o, argc, argv);
    if (rc == 0)
        log_set_level(o.log_level);
    if (rc == 0 && check_option_values(&o) != 0)
        rc = 2;
    struct rule_set *rules = NULL;
    if (rc == 0 && o.rules && !(rules = load_rules(&o)))
        rc = 2;   /* a rules file with an error: the restart is refused */
    char err[512];
    struct sink *sink = rc == 0 ? open_sink(&o, true, NULL, err, sizeof(err)) : NULL;
    if (rc == 0 && !sink)
        fprintf(stderr, "seccheckd: %s\n", err);
    char hostname[256];
    host_name(hostname, sizeof(hostname));
    if (sink && rules)
        sink = add_rules(&o, sink, rules, hostname, NULL, NULL, true);   /* --alerts-out opens as at a start */
    else
        rule_set_free(rules);
    if (sink) {
        sink_close(sink);
        char sinks[768], build_id[2 * 64 + 1];
        describe_sinks(&o, sinks, sizeof(sinks));
        self_binary_build_id(build_id, sizeof(build_id));
        log_info("check: seccheckd %s (build-id %s): the settings are valid and the sink opens: %s",
                 options_version(), build_id, sinks);
        restart_check_report();
    } else if (rc == 0) {
        rc = 1;
    }
    options_free(&o);
    return rc;
}

/* `seccheckd SUBCOMMAND ...`: tools that work on a database, not the daemon. */
static int run_subcommand(int argc, char **argv, bool *handled)
{
    *handled = true;
    if (strcmp(argv[1], "check") == 0)
        return check_main(argc - 1, argv + 1);
    if (strcmp(argv[1], RELAY_SUBCOMMAND) == 0)   /* a restart's, not in the usage */
        return relay_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "verify") == 0) {
        for (int i = 2; i < argc; i++)   /* --to: the central copy (forward/) */
            if (strcmp(argv[i], "--to") == 0 || strncmp(argv[i], "--to=", 5) == 0)
                return central_verify_main(argc - 1, argv + 1);
        return verify_main(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "forward") == 0)   /* --to nats://: the fleet's stream (jetstream/) */
        return jetstream_forward_wanted(argc - 1, argv + 1) ? jetstream_forward_main(argc - 1, argv + 1)
                                                            : forward_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "central") == 0)
        return jetstream_central_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "nats-setup") == 0)
        return jetstream_setup_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "export") == 0)
        return export_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "events") == 0)
        return events_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "gvisor-config") == 0)
        return gvisor_config_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "types") == 0)
        return filter_types_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "alerts") == 0)
        return alerts_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "containers") == 0)
        return containers_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "rules") == 0)
        return rules_main(argc - 1, argv + 1);
    *handled = false;
    return 0;
}

/* A start that failed (rc, why). A restarted image hands the connections
 * back to the build that handed them over (it returns only if that build
 * cannot run either); a fresh one just exits. */
static int start_failed(struct handoff *inherited, int rc, const char *why)
{
    if (inherited->listener.fd >= 0) {
        handoff_come_back(inherited, why);
        log_error("restart: the build that handed over cannot run either (%s); the connections are lost",
                  strerror(errno));
    }
    handoff_free(inherited);
    return rc;
}

/* A standard descriptor closed at start would be the number the next open
 * returns: the database could become "standard output". Each closed one is
 * /dev/null from here on. */
static void keep_standard_fds_open(void)
{
    for (int fd = 0; fd <= 2; fd++)   /* in order: open takes the lowest free number, fd */
        if (fcntl(fd, F_GETFD) < 0) {
            stdout_was_closed |= fd == STDOUT_FILENO;
            if (open("/dev/null", O_RDWR) < 0)
                return;
        }
}

int main(int argc, char **argv)
{
    keep_standard_fds_open();
    if (argc > 1 && argv[1][0] != '-') {
        bool handled;
        int rc = run_subcommand(argc, argv, &handled);
        if (handled)
            return rc;
        fprintf(stderr, "seccheckd: unknown command '%s' (commands: check, verify, export, events, alerts, containers, rules, "
                "forward, central, nats-setup, gvisor-config, types; try --help)\n", argv[1]);
        return 2;
    }
    /* A restart's state comes first: whatever fails after, it goes back. */
    struct handoff inherited;
    char err[512];
    if (handoff_load_from_env(&inherited, err, sizeof(err)) < 0) {
        fprintf(stderr, "seccheckd: %s\n", err);
        return 1;
    }
    struct options o;
    int rc = options_load(&o, argc, argv);
    if (rc != 0) {
        options_free(&o);
        return start_failed(&inherited, rc, "its settings are not valid (see above)");
    }
    log_set_level(o.log_level);
    struct reload_context reload_ctx = {.argc = argc, .argv = argv, .running = &o};
    o.server.on_reload = reload;
    o.server.reload_data = &reload_ctx;
    /* "off" as in --help, so a config file can say it too. */
    if (o.metrics_listen && strcmp(o.metrics_listen, "off") != 0)
        o.server.metrics_listen = o.metrics_listen;
    /* The size gauges, when SQLite is among the sinks (the only sink
     * name containing "sqlite"). */
    o.server.db_path = strstr(o.sink, "sqlite") ? o.db_path : NULL;
    struct server srv;
    struct deliver_settings *delivery_settings = NULL;
    err[0] = '\0';
    if (check_option_values(&o) != 0 ||
        (!(delivery_settings = load_delivery_settings(&o, err, sizeof(err))) && err[0])) {
        if (err[0])
            fprintf(stderr, "seccheckd: %s\n", err);
        options_free(&o);
        return start_failed(&inherited, 2, "its settings are not valid (see above)");
    }
    /* Resolved now: a restart executes this path, the build installed then. */
    char binary[4096], build_id[2 * 64 + 1];
    if (self_binary_path(argv[0], binary, sizeof(binary)) != 0)
        snprintf(binary, sizeof(binary), "/proc/self/exe");
    self_binary_build_id(build_id, sizeof(build_id));
    log_info("seccheckd %s, binary %s, build-id %s", options_version(), binary, build_id);
    /* Before the socket: a rules file with an error fails the start (exit
     * 2, like any setting) without touching the socket or a sink. */
    struct rule_set *rules = NULL;
    if (o.rules && !(rules = load_rules(&o))) {
        deliver_settings_free(delivery_settings);
        options_free(&o);
        return start_failed(&inherited, 2, "its rules files have errors (see above)");
    }
    o.server.restart_binary = binary;
    o.server.restart_argv = argv;
    if (server_listen(&srv, &o.server, &inherited, err, sizeof(err)) != 0) {
        fprintf(stderr, "seccheckd: %s\n", err);
        server_free(&srv);
        rule_set_free(rules);
        deliver_settings_free(delivery_settings);
        options_free(&o);
        return start_failed(&inherited, 1, err);
    }
    /* With the SQLite sink the alerts table is delivery's outbox. */
    struct alert_outbox outbox;
    alert_outbox_init(&outbox);
    struct alert_outbox *use_outbox = delivery_settings && o.server.db_path ? &outbox : NULL;
    char hostname[256];
    host_name(hostname, sizeof(hostname));
    struct sink *sink = open_sink(&o, false, use_outbox, err, sizeof(err));
    if (!sink)
        fprintf(stderr, "seccheckd: %s\n", err);
    struct deliver *delivery = NULL;
    if (sink && delivery_settings) {
        struct deliver_config dc = {.hostname = hostname, .db_path = use_outbox ? o.db_path : NULL,
                                    .outbox = use_outbox, .queue_max = (size_t)o.alerts_queue};
        if (!(delivery = deliver_start(delivery_settings, &dc, err, sizeof(err)))) {
            fprintf(stderr, "seccheckd: --alerts-url: %s\n", err);
            sink_close(sink);
            sink = NULL;
        }
    } else {
        deliver_settings_free(delivery_settings);
    }
    /* Container names (runsc's state files): the rules read them, the
     * stage in front of everything looks them up and stores them. */
    struct container_cache *containers = NULL;
    struct container_view *container_view = NULL;
    if (sink && runsc_roots_open(&o, &containers, &container_view, err, sizeof(err)) != 0) {
        fprintf(stderr, "seccheckd: --runsc-root: %s\n", err);
        sink_close(sink);
        sink = NULL;
    }
    if (sink && rules) {
        srv.rules_loaded = rules_enabled(rules);
        reload_ctx.rules = rules_digest_of(rules);   /* NULL (no memory): a reload cannot say what changed */
        sink = add_rules(&o, sink, rules, hostname, delivery, container_view, false);
    } else {
        rule_set_free(rules);
    }
    if (sink && containers) {
        sink = sink_containers_open(sink, containers, container_view,
                                    strstr(o.sink, "sqlite") ? o.db_path : NULL, err, sizeof(err));
        /* Each connection's peer is read as it handshakes: its sandbox. */
        srv.cfg.on_conn_ready = sink ? conn_ready : NULL;
        srv.cfg.conn_ready_data = containers;
    } else {
        container_view_free(container_view);
        container_cache_close(containers);
    }
    if (!sink) {
        deliver_stop(delivery, 0);
        server_free(&srv);
        alert_outbox_destroy(&outbox);
        rules_digest_free(reload_ctx.rules);
        options_free(&o);
        return start_failed(&inherited, 1, err);
    }
    reload_ctx.sink = sink;
    reload_ctx.delivery = delivery;
    reload_ctx.srv = &srv;
    srv.delivery = delivery;
    struct filter filter;
    options_build_filter(&o, &filter, err, sizeof(err));   /* validated by options_load */
    server_set_filter(&srv, &filter);
    uv_loop_t *loop = uv_default_loop();
    if (server_start(&srv, loop, sink, err, sizeof(err)) != 0) {
        fprintf(stderr, "seccheckd: %s\n", err);
        server_free(&srv);
        deliver_stop(delivery, 0);
        sink_close(sink);
        alert_outbox_destroy(&outbox);
        uv_loop_close(loop);
        rules_digest_free(reload_ctx.rules);
        options_free(&o);
        return start_failed(&inherited, 1, err);
    }
    handoff_free(&inherited);   /* adopted */
    if (o.rules && !(reload_ctx.reloader = rules_reload_new(loop, reload_rules_done, &reload_ctx, err, sizeof(err))))
        log_error("rules: %s: SIGHUP cannot reload the rules", err);
    char sinks[768];
    describe_sinks(&o, sinks, sizeof(sinks));
    log_info("listening on %s, sink %s", o.server.socket_path, sinks);
    log_settings(&o);
    log_detection(&o, srv.rules_loaded);
    log_socket_buffer_hint();
    notify_send("READY=1");
    uv_run(loop, UV_RUN_DEFAULT);
    rules_reload_close(reload_ctx.reloader);   /* a load still running is not waited for */
    uv_run(loop, UV_RUN_NOWAIT);
    reload_pending_free(&reload_ctx);
    server_print_summary(&srv, stderr, o.log_level >= LOG_DEBUG);
    int handoff_fd = srv.handoff_fd, fallback_fd = srv.fallback_fd;
    bool same_image = srv.checked.runs_current_image;
    server_free(&srv);
    /* Before the sink closes, so it records delivery's last position; a
     * restart must not keep the sockets waiting for a slow receiver. */
    deliver_stop(delivery, handoff_fd >= 0 ? 0 : DELIVER_STOP_GRACE_MS);
    sink_close(sink);
    alert_outbox_destroy(&outbox);
    uv_loop_close(loop);
    rules_digest_free(reload_ctx.rules);
    options_free(&o);
    if (handoff_fd >= 0) {
        handoff_exec(same_image ? NULL : binary, argv, handoff_fd, fallback_fd);
        log_error("restart: cannot execute %s or the running image: %s; the connections are lost", binary,
                  strerror(errno));
        return 1;
    }
    return 0;
}
