/* alerts.c - `seccheckd alerts`: the alerts table, read back for people.
 *
 * One shape for both places alerts live: a host's database (--db, read as
 * `seccheckd events` reads it, follow.h) and the central copy (--to, where
 * `seccheckd forward` ships them with host_id). Rows come in id order, a
 * few hundred per statement, each host's after the last one shown (a
 * cursor per host), so --follow prints each alert once, in the order it
 * committed, however late a host's batches arrive centrally.
 */
#include "alerts.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include "central.h"
#include "central_urls.h"
#include "alert_outbox.h"
#include "alert_show.h"
#include "cli.h"
#include "container_filter.h"
#include "clock.h"
#include "event_line.h"
#include "follow.h"
#include "host_id.h"
#include "json.h"
#include "rules.h"
#include "sqlutil.h"
#include "strbuf.h"
#include "term_color.h"

#define PROG "seccheckd alerts"
#define ROWS_PER_READ 512
#define CENTRAL_POLL_MS 1000            /* --follow --to: how often to ask the central server */
#define SINCE_MAX_S (36500ull * 86400)
#define RULE_WIDTH 32                   /* table columns, cut beyond */
#define CONTAINER_WIDTH 14
#define NAMES_WIDTH 28                  /* namespace/pod/container */
#define PRIORITY_WIDTH 13               /* Informational */
#define HOST_WIDTH 16                   /* the host's name */
#define HOST_ID_WIDTH 14                /* its id: a machine-id is 32 hex digits */
#define OUTPUT_MAX 400
#define TIME_WIDTH 24                   /* 2026-12-01T16:51:52.719Z */
#define ID_WIDTH 6                      /* wider ids push the row on */
#define CLOCK_APART_NS 1000000000       /* the sandbox's time shown when this far from the daemon's */

/* "namespace/pod/container" from the three names, the missing ones left
 * out; NULL when none is known. The same SQL in SQLite and PostgreSQL. */
enum { ALERTS_OK = 0, ALERTS_FAILED = 1, ALERTS_USAGE = 2, ALERTS_OUTPUT_GONE = 3 };
#define CENTRAL_RETRY (-1)            /* a transient refusal: the same read again */
#define CENTRAL_RETRIES_MAX 10        /* without --follow, in a row */

struct alerts_options {
    const char *db_path;
    const char *to_url;             /* the first --to */
    struct central_urls to;         /* every --to: one database per partition, read as one */
    const char *host_id;            /* --to: one host (default: this host's id) */
    bool all_hosts;
    bool has_since;
    uint64_t since_s;
    const char *since_text, *priority_text;   /* as given */
    bool has_priority;
    enum rules_priority priority;   /* that and above */
    const char *rule;
    const char *container;          /* id or name; --pod, --namespace beside it (container_filter.h) */
    const char *pod, *ns;
    bool follow;
    bool json;
    bool wide;                      /* cut nothing */
    enum term_color_mode color;
};

/* One alert as read back, from either place. time_ns is the sandbox's
 * (the event's context time: whatever the sandbox says), recv_ns the
 * daemon's when it received the event. */
struct alert_row {
    const char *host;               /* central only: the host's id */
    const char *host_name;          /* ... and its name (hosts.hostname), NULL when not known */
    int64_t id, time_ns, recv_ns;
    bool has_recv;                  /* false: the event is not there (a row written by something else) */
    bool replaced;                  /* output_fields or tags were not JSON: {} or [] instead */
    const char *rule, *priority, *container, *output, *output_fields, *tags;
    const char *names;              /* "namespace/pod/container" as runsc's state file gave them, or NULL */
    size_t output_len;
    uint64_t suppressed;            /* held back before it */
    uint64_t evicted;               /* its connection's partial matches evicted before it */
    const char *sequence;           /* a sequence's alert: its steps (a JSON object); else NULL */
};

/* The table's columns of text (cut to their width, --wide: as wide as
 * their longest). */
enum column { COL_HOST, COL_HOST_ID, COL_PRIORITY, COL_RULE, COL_CONTAINER, COL_NAMES, COLUMNS };

static const size_t column_width[COLUMNS] = {HOST_WIDTH, HOST_ID_WIDTH, PRIORITY_WIDTH, RULE_WIDTH,
                                             CONTAINER_WIDTH, NAMES_WIDTH};

struct printer {
    const struct alerts_options *o;
    char hostname[256];             /* --db --json: the line's hostname */
    struct strbuf line, scratch;
    size_t width[COLUMNS];          /* each column's (--wide: measured first) */
    bool measuring;                 /* --wide's first pass: widths taken, nothing printed */
    bool header_done;
    bool sandbox_column;            /* a column for the sandbox's time: some alert's is off */
    bool names_column;              /* a column for the container's names: some alert's are known */
    bool replaced_said;
    bool color;                     /* the table to a terminal: priorities coloured */
    uint64_t printed;
};

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: seccheckd alerts (--db PATH | --to URL [--host-id ID | --all-hosts])\n"
            "                        [--since DURATION] [--priority LEVEL] [--rule TEXT] [--container ID]\n"
            "                        [--pod NAME] [--namespace NAME] [--follow] [--json | --wide]\n"
            "                        [--color auto|always|never]\n"
            "       seccheckd alerts show ID ...   the story of one alert (seccheckd alerts show --help)\n"
            "Prints the alerts the rules raised (seccheckd --rules), oldest first.\n"
            "\n"
            "  --db PATH          a host's database (only read; the daemon may be running)\n"
            "  --to URL           the central PostgreSQL that seccheckd forward ships to (again for\n"
            "                     each partition's database: read as one)\n"
            "  --host-id ID       --to: this host's alerts [the id forward ships as: /etc/machine-id]\n"
            "  --all-hosts        --to: every host's, host by host\n"
            "  --since DURATION   only alerts whose event seccheckd received in the last DURATION\n"
            "                     (its own clock, not the sandbox's): 90, 90s, 15m, 12h, 7d\n"
            "  --priority LEVEL   only alerts of this priority and above: emergency, alert,\n"
            "                     critical, error, warning, notice, info(rmational), debug\n"
            "  --rule TEXT        only alerts of rules whose name contains TEXT, in any case\n"
            "  --container ID     only this container's alerts, by id or name (seccheckd containers)\n"
            "  --pod NAME         only the alerts of this pod's containers\n"
            "  --namespace NAME   only the alerts of this namespace's containers\n"
            "  --follow, -f       then print new alerts as they commit, until interrupted;\n"
            "                     without --since, only new ones\n"
            "  --json             one line of Falco's JSON per alert (what --alerts-out wrote),\n"
            "                     for falcosidekick and other tools [an aligned table: the time\n"
            "                     seccheckd received the event, the sandbox's own when it is\n"
            "                     more than a second off, priority, rule, container (and its\n"
            "                     namespace/pod/name when runsc's state gave them), output]\n"
            "  --wide             the table with nothing cut: whole rules, containers and output,\n"
            "                     each column as wide as its longest stored value\n"
            "  --color WHEN       colour the priorities in the table: auto (when standard output\n"
            "                     is a terminal and NO_COLOR is not set), always, never [auto]\n"
            "  --help, -h         this text\n"
            "\n"
            "Exit status: 0 done (or --follow interrupted), 1 a runtime error (printed), 2 usage error.\n");
}

static int usage_error(const char *problem, const char *value)
{
    return cli_usage_error(PROG, problem, value);
}

/* 0, ALERTS_USAGE, or -1 after --help. */
static int parse_options(int argc, char **argv, struct alerts_options *o)
{
    static const struct option options[] = {
        {"db", required_argument, NULL, 'd'},        {"to", required_argument, NULL, 'T'},
        {"host-id", required_argument, NULL, 'H'},   {"all-hosts", no_argument, NULL, 'A'},
        {"since", required_argument, NULL, 's'},     {"priority", required_argument, NULL, 'p'},
        {"rule", required_argument, NULL, 'r'},      {"container", required_argument, NULL, 'c'},
        {"pod", required_argument, NULL, 'P'},       {"namespace", required_argument, NULL, 'N'},
        {"follow", no_argument, NULL, 'f'},          {"json", no_argument, NULL, 'j'},
        {"wide", no_argument, NULL, 'w'},            {"color", required_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},            {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof(*o));
    int ch;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, CLI_GETOPT_QUIET "fh", options, NULL)) != -1) {
        switch (ch) {
        case 'd': o->db_path = optarg; break;
        case 'T':
            if (central_urls_add(&o->to, optarg, PROG) != 0)
                return ALERTS_USAGE;
            o->to_url = o->to.url[0];
            break;
        case 'H': o->host_id = optarg; break;
        case 'A': o->all_hosts = true; break;
        case 's':
            if (cli_parse_duration_s(optarg, SINCE_MAX_S, &o->since_s) != 0)
                return usage_error("--since: expected a duration like 90, 90s, 15m, 12h or 7d", optarg);
            o->has_since = true;
            o->since_text = optarg;
            break;
        case 'p':
            if (rules_priority_parse(optarg, &o->priority) != 0)
                return usage_error("--priority: expected emergency, alert, critical, error, warning, notice, "
                                   "info or debug", optarg);
            o->has_priority = true;
            o->priority_text = optarg;
            break;
        case 'r': o->rule = optarg; break;
        case 'c': o->container = optarg; break;
        case 'P': o->pod = optarg; break;
        case 'N': o->ns = optarg; break;
        case 'f': o->follow = true; break;
        case 'j': o->json = true; break;
        case 'w': o->wide = true; break;
        case 'C':
            if (term_color_parse(optarg, &o->color) != 0)
                return usage_error("--color: expected auto, always or never", optarg);
            break;
        case 'h': usage(stdout); return -1;
        default: cli_report_getopt_error(PROG, ch, argv); return ALERTS_USAGE;
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument", argv[optind]);
    if (!o->db_path == !o->to_url)
        return usage_error("give --db PATH (a host's database) or --to URL (the central copy)", NULL);
    if (o->db_path && (o->host_id || o->all_hosts))
        return usage_error("--host-id and --all-hosts go with --to", NULL);
    if (o->host_id && o->all_hosts)
        return usage_error("give --host-id or --all-hosts, not both", NULL);
    if (o->json && o->wide)
        return usage_error("--wide is for the table; --json cuts nothing", NULL);
    return 0;
}

/* " AND priority IN ('Emergency', ..., LEVEL)": the priority and above. */
static void priority_filter(struct strbuf *sql, const struct alerts_options *o)
{
    if (!o->has_priority)
        return;
    strbuf_puts(sql, " AND priority IN (");
    for (int p = 0; p <= (int)o->priority; p++)
        strbuf_printf(sql, "%s'%s'", p ? ", " : "", rules_priority_name((enum rules_priority)p));
    strbuf_putc(sql, ')');
}

/* ---- printing ---- */

/* The rendered text without the "HH:MM:SS.nnnnnnnnn: Priority " that the
 * table's columns already show. */
static void output_text(const struct alert_row *a, const char **text, size_t *len)
{
    *text = a->output;
    *len = a->output_len;
    size_t prefix = 20 + strlen(a->priority) + 1;
    if (*len > prefix && a->output[18] == ':' && a->output[19] == ' ' &&
        strncmp(a->output + 20, a->priority, strlen(a->priority)) == 0 && a->output[prefix - 1] == ' ') {
        *text += prefix;
        *len -= prefix;
    }
}

/* Characters a terminal shows for UTF-8 text (a cell's width). */
static size_t shown_width(const char *s, size_t len)
{
    size_t w = 0;
    for (size_t i = 0; i < len; i++)
        w += ((unsigned char)s[i] & 0xc0) != 0x80;
    return w;
}

/* Bytes of the longest start of s that shows at most width characters. */
static size_t fitting(const char *s, size_t len, size_t width)
{
    size_t i = 0;
    for (size_t w = 0; i < len; i++) {
        if (((unsigned char)s[i] & 0xc0) != 0x80 && w++ == width)
            break;
    }
    return i;
}

/* One column: escaped, cut to its width with "..." when longer (--wide:
 * whole, the column as wide as its longest), padded. */
static void cell(struct printer *p, const char *text, enum column col)
{
    const char *t = text ? text : "-";
    size_t width = p->width[col];
    strbuf_reset(&p->scratch);
    event_line_plain(&p->scratch, t, strlen(t), p->o->wide ? SIZE_MAX : 4 * width);   /* escaped, more than fits */
    size_t len = p->scratch.len;
    size_t shown = shown_width(p->scratch.data, len);
    if (p->measuring && shown > width)
        p->width[col] = width = shown;
    if (!p->o->wide && shown > width) {
        strbuf_append(&p->line, p->scratch.data, fitting(p->scratch.data, len, width - 3));
        strbuf_puts(&p->line, "...  ");
        return;
    }
    strbuf_append(&p->line, p->scratch.data, len);
    for (size_t w = shown < width ? shown : width; w < width + 2; w++)   /* two spaces at least */
        strbuf_putc(&p->line, ' ');
}

/* More than CLOCK_APART_NS apart, either way (any two int64 values). */
static bool clocks_apart(int64_t a, int64_t b)
{
    uint64_t gap = a > b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
    return gap > CLOCK_APART_NS;
}

/* A time, padded: a year past 9999 or before 0 is longer or shorter. */
static void time_cell(struct printer *p, int64_t ns)
{
    size_t start = p->line.len;
    strbuf_put_utc(&p->line, ns, 3);
    for (size_t w = p->line.len - start; w < TIME_WIDTH + 2; w++)
        strbuf_putc(&p->line, ' ');
}

static void table_header(struct printer *p)
{
    int w[COLUMNS];
    for (int i = 0; i < COLUMNS; i++)
        w[i] = (int)p->width[i];
    if (p->o->to_url && p->o->all_hosts)
        strbuf_printf(&p->line, "%-*s  %-*s  ", w[COL_HOST], "HOST", w[COL_HOST_ID], "HOST ID");
    strbuf_printf(&p->line, "%-*s  %-*s  ", ID_WIDTH, "ID", TIME_WIDTH, "TIME (UTC)");
    if (p->sandbox_column)
        strbuf_printf(&p->line, "%-*s  ", TIME_WIDTH, "SANDBOX TIME");
    strbuf_printf(&p->line, "%-*s  %-*s  %-*s  ", w[COL_PRIORITY], "PRIORITY", w[COL_RULE], "RULE",
                  w[COL_CONTAINER], "CONTAINER");
    if (p->names_column)
        strbuf_printf(&p->line, "%-*s  ", w[COL_NAMES], "NAMESPACE/POD/NAME");
    strbuf_puts(&p->line, "OUTPUT\n");
}

static void table_row(struct printer *p, const struct alert_row *a)
{
    if (!p->header_done)
        table_header(p);
    p->header_done = true;
    if (p->o->to_url && p->o->all_hosts) {
        cell(p, a->host_name, COL_HOST);
        cell(p, a->host, COL_HOST_ID);
    }
    strbuf_printf(&p->line, "%-*" PRId64 "  ", ID_WIDTH, a->id);   /* what seccheckd alerts show ID takes */
    time_cell(p, a->has_recv ? a->recv_ns : a->time_ns);
    if (p->sandbox_column && a->has_recv && clocks_apart(a->time_ns, a->recv_ns))
        time_cell(p, a->time_ns);
    else if (p->sandbox_column)
        strbuf_printf(&p->line, "%-*s  ", TIME_WIDTH, "-");
    const char *color = p->color ? term_color_priority(a->priority) : "";
    strbuf_puts(&p->line, color);
    cell(p, a->priority, COL_PRIORITY);   /* any text: a row written by something else */
    if (color[0])
        strbuf_puts(&p->line, TERM_COLOR_RESET);
    cell(p, a->rule, COL_RULE);
    cell(p, a->container, COL_CONTAINER);
    if (p->names_column)
        cell(p, a->names, COL_NAMES);
    const char *text;
    size_t len;
    output_text(a, &text, &len);
    event_line_plain(&p->line, text, len, p->o->wide ? SIZE_MAX : OUTPUT_MAX);
    if (a->suppressed)
        strbuf_printf(&p->line, " (and %" PRIu64 " held back before it)", a->suppressed);
    strbuf_putc(&p->line, '\n');
}

/* Falco's line, as --alerts-out wrote it; what a terminal would act on
 * written as \uNNNN (the same JSON). */
static void json_row(struct printer *p, const struct alert_row *a)
{
    if (a->replaced && !p->replaced_said)
        fprintf(stderr, PROG ": alert %" PRId64 " has output_fields or tags that are not JSON (a row seccheckd did "
                "not write): printed with {} or [] in their place\n", a->id);
    p->replaced_said |= a->replaced;
    strbuf_reset(&p->scratch);
    /* Falco's hostname: the host's name as its forwarder gave it (what its
     * --alerts-out wrote), else its id; here, this machine's. */
    const char *hostname = a->host_name ? a->host_name : a->host ? a->host : p->hostname;
    struct rules_alert_extras extras = {.suppressed = a->suppressed, .evicted = a->evicted, .sequence = a->sequence};
    rules_alert_json_ex(&p->scratch, hostname, a->rule, a->priority, a->time_ns, a->output, a->output_len,
                        a->output_fields, a->tags, &extras);
    event_line_json(&p->line, p->scratch.data ? p->scratch.data : "{}", p->scratch.len);
    strbuf_putc(&p->line, '\n');
}

/* 0, or ALERTS_FAILED / ALERTS_OUTPUT_GONE. */
static int print_row(struct printer *p, const struct alert_row *a)
{
    strbuf_reset(&p->line);
    if (p->o->json)
        json_row(p, a);
    else
        table_row(p, a);
    if (p->line.failed || p->scratch.failed) {
        fprintf(stderr, PROG ": out of memory rendering alert %" PRId64 "\n", a->id);
        return ALERTS_FAILED;
    }
    if (p->measuring) {
        p->header_done = false;
        return 0;
    }
    if (fwrite(p->line.data, 1, p->line.len, stdout) != p->line.len)
        return errno == EPIPE ? ALERTS_OUTPUT_GONE : ALERTS_FAILED;
    p->printed++;
    return 0;
}

static int flush_output(void)
{
    if (fflush(stdout) == 0)
        return 0;
    if (errno == EPIPE)
        return ALERTS_OUTPUT_GONE;
    fprintf(stderr, PROG ": writing to standard output: %s\n", strerror(errno));
    return ALERTS_FAILED;
}

/* ---- saying why nothing was printed ---- */

/* What the reader of one place answers: how many alerts pass filters
 * (only those set in it), and the most frequent values of a column
 * ("rule", "container_id") with their counts. */
struct miss_source {
    void *ctx;
    const char *where;              /* "seccheck.db", "the central copy" */
    int64_t (*count)(void *ctx, const struct alerts_options *filters);
    void (*top)(void *ctx, const char *column, struct strbuf *out);
};

/* o with one filter only: *which of it. */
static struct alerts_options only_filter(const struct alerts_options *o, char which)
{
    struct alerts_options f = *o;
    f.has_since = which == 's' && o->has_since;
    f.has_priority = which == 'p' && o->has_priority;
    f.rule = which == 'r' ? o->rule : NULL;
    f.container = which == 'c' ? o->container : NULL;
    f.pod = which == 'c' ? o->pod : NULL;
    f.ns = which == 'c' ? o->ns : NULL;
    return f;
}

static void say_filter(const struct alerts_options *o, const struct miss_source *m, char which, struct strbuf *line)
{
    struct alerts_options f = only_filter(o, which);
    int64_t n = m->count(m->ctx, &f);
    strbuf_reset(line);
    switch (which) {
    case 's': strbuf_printf(line, "  --since %s: ", o->since_text); break;
    case 'p': strbuf_printf(line, "  --priority %s: ", o->priority_text); break;
    case 'r':
        strbuf_puts(line, "  --rule '");
        event_line_plain(line, o->rule, strlen(o->rule), 200);
        strbuf_puts(line, "': ");
        break;
    default: {
        /* --container, --pod and --namespace together: they name containers */
        const char *names[] = {"--container", "--pod", "--namespace"};
        const char *values[] = {o->container, o->pod, o->ns};
        strbuf_puts(line, " ");
        for (int k = 0; k < 3; k++) {
            if (!values[k])
                continue;
            strbuf_printf(line, " %s '", names[k]);
            event_line_plain(line, values[k], strlen(values[k]), 200);
            strbuf_puts(line, "'");
        }
        strbuf_puts(line, ": ");
        break;
    }
    }
    if (n > 0) {
        strbuf_printf(line, "%" PRId64 " alert%s\n", n, cli_plural((uint64_t)n));
    } else if (which == 's') {
        strbuf_puts(line, "none whose event seccheckd received in that time\n");
    } else if (which == 'p') {
        strbuf_puts(line, "none of that priority or above\n");
    } else {
        strbuf_puts(line, which == 'r' ? "no rule's name contains it (the rules that raised alerts: "
                                       : "no alert of that container (the containers with alerts: ");
        m->top(m->ctx, which == 'r' ? "rule" : "container_id", line);
        strbuf_puts(line, ")\n");
    }
    fputs(line->data ? line->data : "", stderr);
}

/* Nothing passed: says whether there are alerts at all, and if so what each
 * filter alone lets through, naming the rules or containers there are.
 * With --follow (which starts after the stored alerts unless --since), said
 * once the stored ones are read, and only when there are none or none pass
 * the filters: then the new ones are waited for. */
static void explain_miss(const struct alerts_options *o, const struct miss_source *m)
{
    struct alerts_options none = only_filter(o, 0);
    int64_t total = m->count(m->ctx, &none);
    if (total == 0 && o->follow) {
        fprintf(stderr, PROG ": no alerts in %s yet; waiting for them\n", m->where);
        return;
    }
    if (total <= 0) {
        fprintf(stderr, PROG ": no alerts in %s (alerts come from rules: seccheckd --rules PATH, e.g. "
                "configs/rules/gvisor_rules.yaml)\n", m->where);
        return;
    }
    if (o->follow && m->count(m->ctx, o) != 0)
        return;   /* some pass: following goes on after them */
    fprintf(stderr, PROG ": none of the %" PRId64 " alert%s in %s pass%s the filters%s; each alone:\n", total,
            cli_plural((uint64_t)total), m->where, total == 1 ? "es" : "",
            o->follow ? " (waiting for new ones)" : "");
    struct strbuf line = {0};
    if (o->rule)
        say_filter(o, m, 'r', &line);
    if (o->container || o->pod || o->ns)
        say_filter(o, m, 'c', &line);
    if (o->has_priority)
        say_filter(o, m, 'p', &line);
    if (o->has_since)
        say_filter(o, m, 's', &line);
    strbuf_free(&line);
}

/* "NAME N, NAME N": the values escaped and cut, the first few. */
#define TOP_VALUES 6

static void put_top_value(struct strbuf *out, int i, const char *value, const char *count)
{
    if (i)
        strbuf_puts(out, ", ");
    const char *v = value ? value : "-";
    event_line_plain(out, v, strlen(v), 60);
    strbuf_printf(out, " %s", count);
}

/* ---- a host's database ---- */

struct local_reader {
    const struct alerts_options *o;
    sqlite3 *db;
    sqlite3_stmt *rows;
    struct follow follow;
    int64_t after;
    int64_t since_ns, since_event;  /* --since: its bound, the last event received before it */
    struct container_names names;   /* what the database can join (container_filter.h) */
    bool has_sequences;             /* the alerts table has evicted and sequence (a daemon with sequences wrote it) */
};

/* The filters after "WHERE a.id > ?1": ?2 the last event received before
 * --since, ?3 the rule, ?4 the container. */
/* --container (id or name), --pod, --namespace: parameters ?6 to ?8. */
static struct container_filter container_filter_of(const struct alerts_options *o)
{
    return (struct container_filter){.container = o->container, .pod = o->pod, .ns = o->ns};
}

static void local_filters(struct strbuf *sql, const struct alerts_options *o, const struct container_names *names)
{
    if (o->has_since)
        strbuf_puts(sql, " AND a.event_id > ?2");
    if (o->rule)   /* SQLite's lower(): ASCII letters */
        strbuf_puts(sql, " AND instr(lower(a.rule), lower(?3)) > 0");
    struct container_filter cf = container_filter_of(o);
    container_filter_sql(sql, &cf, names, "a.container_id", "e.conn_id", 6);
    priority_filter(sql, o);
}

/* The statement over alerts a joined to their events e, the filters bound. */
static int local_statement(struct local_reader *r, const char *head, const char *tail, sqlite3_stmt **st)
{
    const struct alerts_options *o = r->o;
    struct strbuf sql = {0};
    strbuf_puts(&sql, head);
    local_filters(&sql, o, &r->names);
    strbuf_puts(&sql, tail);
    int rc = sql.failed ? SQLITE_NOMEM : sqlite3_prepare_v2(r->db, sql.data, -1, st, NULL);
    strbuf_free(&sql);
    if (rc != SQLITE_OK) {
        fprintf(stderr, PROG ": %s: %s\n", o->db_path, sqlite3_errmsg(r->db));
        return ALERTS_FAILED;
    }
    sqlite3_bind_int64(*st, 1, r->after);
    if (o->has_since)
        sqlite3_bind_int64(*st, 2, r->since_event);
    if (o->rule)
        sqlite3_bind_text(*st, 3, o->rule, -1, SQLITE_STATIC);
    struct container_filter cf = container_filter_of(o);
    container_filter_bind(*st, &cf, 6);
    return 0;
}

/* "FROM alerts a" with each alert's event e and its container's names i
 * (container_filter.h), and the filters' WHERE start. */
static void local_from(const struct local_reader *r, struct strbuf *sql)
{
    strbuf_puts(sql, " FROM alerts a LEFT JOIN events e ON e.id = a.event_id");
    container_names_join(sql, &r->names, "a.container_id", "e.conn_id");
    strbuf_puts(sql, " WHERE a.id > ?1");
}

static int local_prepare(struct local_reader *r)
{
    char tail[64];
    snprintf(tail, sizeof(tail), " ORDER BY a.id LIMIT %d", ROWS_PER_READ);
    struct strbuf head = {0};
    strbuf_puts(&head, "SELECT a.id, a.time_ns, a.rule, a.priority, a.container_id, a.output, "
                       ALERT_OUTBOX_OBJECT_SQL("a.output_fields") ", " ALERT_OUTBOX_ARRAY_SQL("a.tags")
                       ", e.recv_ns, a.suppressed, ");
    container_names_label(&head, &r->names, "a.container_id");
    strbuf_puts(&head, r->has_sequences ? ", a.evicted, " ALERT_OUTBOX_OBJECT_SQL("a.sequence") : ", 0, NULL");
    local_from(r, &head);
    int rc = head.failed ? ALERTS_FAILED : local_statement(r, head.data, tail, &r->rows);
    strbuf_free(&head);
    return rc;
}

/* Whether an alert to print names a container whose names (or foreign
 * label) are known (then the table has a column for them). */
static bool local_any_named(struct local_reader *r)
{
    if (!r->names.has_info)
        return false;
    struct strbuf head = {0};
    strbuf_puts(&head, "SELECT EXISTS(SELECT 1");
    local_from(r, &head);
    strbuf_puts(&head, " AND (");
    container_names_label(&head, &r->names, "a.container_id");
    strbuf_puts(&head, ") IS NOT NULL");
    sqlite3_stmt *st;
    bool yes = !head.failed && local_statement(r, head.data, ")", &st) == 0;
    strbuf_free(&head);
    if (!yes)
        return false;
    yes = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) != 0;
    sqlite3_finalize(st);
    return yes;
}

/* Whether an alert to print has a sandbox time more than a second off the
 * daemon's (then the table has a column for it). */
static bool local_clock_apart(struct local_reader *r)
{
    sqlite3_stmt *st;
    char apart[160];
    snprintf(apart, sizeof(apart), " AND (a.time_ns > e.recv_ns + %d OR a.time_ns < e.recv_ns - %d))",
             CLOCK_APART_NS, CLOCK_APART_NS);
    if (local_statement(r, "SELECT EXISTS(SELECT 1 FROM alerts a JOIN events e ON e.id = a.event_id WHERE a.id > ?1",
                        apart, &st) != 0)
        return true;
    bool yes = sqlite3_step(st) != SQLITE_ROW || sqlite3_column_int(st, 0) != 0;
    sqlite3_finalize(st);
    return yes;
}

static const char *column_text(sqlite3_stmt *st, int col)
{
    return (const char *)sqlite3_column_text(st, col);
}

/* The next rows; *n says how many. */
static int local_print_next(struct local_reader *r, struct printer *p, int *n)
{
    sqlite3_bind_int64(r->rows, 1, r->after);
    int step, rc = 0;
    *n = 0;
    while (rc == 0 && (step = sqlite3_step(r->rows)) == SQLITE_ROW) {
        struct alert_row a = {
            .id = sqlite3_column_int64(r->rows, 0), .time_ns = sqlite3_column_int64(r->rows, 1),
            .rule = column_text(r->rows, 2), .priority = column_text(r->rows, 3),
            .container = column_text(r->rows, 4), .output = column_text(r->rows, 5),
            .output_len = (size_t)sqlite3_column_bytes(r->rows, 5), .recv_ns = sqlite3_column_int64(r->rows, 8),
            .has_recv = sqlite3_column_type(r->rows, 8) == SQLITE_INTEGER,
            .suppressed = (uint64_t)sqlite3_column_int64(r->rows, 9), .names = column_text(r->rows, 10),
            .evicted = (uint64_t)sqlite3_column_int64(r->rows, 11), .sequence = column_text(r->rows, 12)};
        a.output_fields = alert_outbox_json_column(column_text(r->rows, 6), (size_t)sqlite3_column_bytes(r->rows, 6),
                                                   "{}", &a.replaced);
        a.tags = alert_outbox_json_column(column_text(r->rows, 7), (size_t)sqlite3_column_bytes(r->rows, 7), "[]",
                                          &a.replaced);
        r->after = a.id;
        if (!a.rule || !a.priority || !a.output) {
            fprintf(stderr, PROG ": alert %" PRId64 " has an empty column: not a row the daemon wrote\n", a.id);
            rc = ALERTS_FAILED;
        } else {
            rc = print_row(p, &a);
        }
        (*n)++;
    }
    if (rc == 0 && step != SQLITE_DONE) {
        fprintf(stderr, PROG ": reading alerts: %s\n", sqlite3_errmsg(r->db));
        rc = ALERTS_FAILED;
    }
    sqlite3_reset(r->rows);   /* ends the read transaction */
    return rc ? rc : flush_output();
}

/* The newest receive time in the database open: where following the file
 * that replaces it goes on from. */
static int64_t newest_received(sqlite3 *db)
{
    return sqlutil_int(db, "SELECT coalesce(max(recv_ns), -9223372036854775807) FROM events", INT64_MIN + 1);
}

static int64_t local_count(void *ctx, const struct alerts_options *filters)
{
    struct local_reader *r = ctx;
    const struct alerts_options *saved = r->o;
    int64_t saved_after = r->after, n = -1;
    r->o = filters;
    r->after = 0;
    sqlite3_stmt *st;
    if (local_statement(r, "SELECT count(*) FROM alerts a LEFT JOIN events e ON e.id = a.event_id WHERE a.id > ?1",
                        "", &st) == 0) {   /* the filters name i only inside their own subqueries */
        if (sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    r->o = saved;
    r->after = saved_after;
    return n;
}

static void local_top(void *ctx, const char *column, struct strbuf *out)
{
    struct local_reader *r = ctx;
    char sql[200];
    snprintf(sql, sizeof(sql), "SELECT %s, count(*) FROM alerts GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT %d", column,
             TOP_VALUES);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK)
        return;
    for (int i = 0; sqlite3_step(st) == SQLITE_ROW; i++)
        put_top_value(out, i, column_text(st, 0), column_text(st, 1));
    sqlite3_finalize(st);
}

/* The database is there and holds alerts: 0, or ALERTS_FAILED said. */
static int local_check(struct local_reader *r)
{
    container_names_probe(r->db, &r->names);
    /* a database no daemon with sequences has opened yet has neither column */
    r->has_sequences = sqlite3_table_column_metadata(r->db, NULL, "alerts", "evicted", NULL, NULL, NULL, NULL, NULL) ==
                           SQLITE_OK &&
                       sqlite3_table_column_metadata(r->db, NULL, "alerts", "sequence", NULL, NULL, NULL, NULL, NULL) ==
                           SQLITE_OK;
    if (sqlutil_has(r->db, "table", "alerts"))
        return 0;
    fprintf(stderr, PROG ": %s has no alerts table: it was written by a seccheckd without rules (start this "
            "one on it, with --rules PATH, e.g. configs/rules/gvisor_rules.yaml)\n", r->o->db_path);
    return ALERTS_FAILED;
}

/* The file at the path was deleted or replaced: what the old one still
 * holds is printed, then the new one is read from the alerts of events
 * received after the last of those (a restored copy's are history). */
static int local_follow_moved(struct local_reader *r, struct printer *p)
{
    int n, rc;
    while ((rc = local_print_next(r, p, &n)) == 0 && n == ROWS_PER_READ)
        ;
    if (rc != 0)
        return rc;
    int64_t newest = newest_received(r->db);
    sqlite3_finalize(r->rows);
    r->rows = NULL;
    if (follow_reopen(&r->follow, &r->db) != 0)
        return 0;   /* stopped */
    if ((rc = local_check(r)) != 0)
        return rc;
    int64_t last_event = follow_last_id_before(r->db, newest < INT64_MAX ? newest + 1 : newest);
    sqlite3_stmt *st;
    r->after = 0;
    if (sqlite3_prepare_v2(r->db, "SELECT coalesce(max(id), 0) FROM alerts WHERE event_id <= ?1", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_int64(st, 1, last_event);
        if (sqlite3_step(st) == SQLITE_ROW)
            r->after = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    if (r->o->has_since)
        r->since_event = follow_last_id_before(r->db, r->since_ns);
    return local_prepare(r);
}

/* --wide: the columns as wide as their longest value among the stored
 * alerts that pass the filters (a pass that prints nothing). */
static int local_measure(struct local_reader *r, struct printer *p)
{
    int64_t start = r->after;
    r->after = 0;
    p->measuring = true;
    int rc = 0, n = ROWS_PER_READ;
    while (rc == 0 && n == ROWS_PER_READ && !follow_stopped())
        rc = local_print_next(r, p, &n);
    p->measuring = false;
    r->after = start;
    return rc;
}

static int run_local(const struct alerts_options *o, struct printer *p)
{
    struct local_reader r = {.o = o};
    int rc = follow_open_db(PROG, o->db_path, &r.db) != 0 ? ALERTS_FAILED : 0;
    if (rc == 0)
        rc = local_check(&r);
    if (rc == 0 && o->follow && !o->has_since)
        r.after = sqlutil_int(r.db, "SELECT coalesce(max(id), 0) FROM alerts", 0);
    r.since_ns = realtime_ns() - (int64_t)o->since_s * 1000000000;
    if (rc == 0 && o->has_since)
        r.since_event = follow_last_id_before(r.db, r.since_ns);
    if (rc == 0)
        p->sandbox_column = !o->json && (o->follow || local_clock_apart(&r));
    if (rc == 0)
        p->names_column = !o->json && r.names.has_info && (o->follow || local_any_named(&r));
    if (rc == 0)
        rc = local_prepare(&r);
    if (rc == 0 && o->wide)
        rc = local_measure(&r, p);
    if (rc == 0 && follow_start(&r.follow, r.db, PROG, o->db_path) != 0)
        rc = ALERTS_FAILED;
    bool stored_done = false;
    while (rc == 0 && !follow_stopped()) {
        int n;
        rc = local_print_next(&r, p, &n);
        if (rc != 0 || n == ROWS_PER_READ)
            continue;
        if (!stored_done && !p->printed) {   /* say why, on stderr: the output stays empty */
            struct miss_source m = {.ctx = &r, .where = o->db_path, .count = local_count, .top = local_top};
            explain_miss(o, &m);
        }
        stored_done = true;
        if (!o->follow)
            break;
        if (follow_wait(&r.follow) == FOLLOW_MOVED)
            rc = local_follow_moved(&r, p);
    }
    sqlite3_finalize(r.rows);
    follow_end(&r.follow);
    sqlite3_close(r.db);
    return rc;
}

/* ---- the central copy ---- */

/* Where each host's alerts were read up to: a JSON object for the query
 * ({"host": last id}), grown as hosts appear. */
struct cursors {
    char **hosts;
    int64_t *last;
    size_t n, cap;
};

static int cursor_set(struct cursors *c, const char *host, int64_t id)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->hosts[i], host) == 0) {
            c->last[i] = id;
            return 0;
        }
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        char **h = realloc(c->hosts, cap * sizeof(*h));
        if (h)
            c->hosts = h;
        int64_t *l = h ? realloc(c->last, cap * sizeof(*l)) : NULL;
        if (!l)
            return -1;
        c->last = l;
        c->cap = cap;
    }
    if (!(c->hosts[c->n] = strdup(host)))
        return -1;
    c->last[c->n++] = id;
    return 0;
}

static void cursors_json(const struct cursors *c, struct strbuf *out)
{
    strbuf_reset(out);
    strbuf_putc(out, '{');
    for (size_t i = 0; i < c->n; i++) {
        if (i)
            strbuf_putc(out, ',');
        json_render_string(out, c->hosts[i], strlen(c->hosts[i]));
        strbuf_putc(out, ':');
        strbuf_put_i64(out, c->last[i]);
    }
    strbuf_putc(out, '}');
}

static void cursors_free(struct cursors *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->hosts[i]);
    free(c->hosts);
    free(c->last);
}

struct central_reader {
    const struct alerts_options *o;
    const char *url;
    PGconn *pg;
    char host[HOST_ID_MAX + 1];     /* one host, or "" for all */
    struct cursors cursors;
    struct strbuf sql, cursor_json;
    char since[24];
    bool has_names;                 /* the central schema has container_names (schema 6 on) */
    bool has_sequences;             /* its alerts have evicted and sequence (a forwarder shipped them) */
};

#define CENTRAL_PARAMS 7

/* $1 the cursors, $2 the host ("" every one), $3 since (the daemon's
 * receive time of the event), $4 rule, $5 container (id or name), $6 pod,
 * $7 namespace. Names are matched on the alert's own host: a container id
 * is only unique per host. */
static void central_filters(struct strbuf *sql, const struct central_reader *r, const struct alerts_options *o)
{
    strbuf_puts(sql, " FROM alerts a LEFT JOIN events e ON e.host_id = a.host_id AND e.id = a.event_id");
    if (r->has_names)   /* the names of the alert's own sandbox's container (container_filter.h) */
        central_names_join(sql, "a.host_id", "a.container_id", "e.conn_id");
    strbuf_puts(sql, " LEFT JOIN jsonb_each_text($1::jsonb) c ON c.key = a.host_id"
                     " WHERE a.id > coalesce(c.value::bigint, 0) AND ($2 = '' OR a.host_id = $2)"
                     " AND ($3::bigint IS NULL OR e.recv_ns >= $3::bigint)"
                     " AND ($4::text IS NULL OR strpos(lower(a.rule), lower($4)) > 0)");
    if (r->has_names)
        strbuf_puts(sql, " AND ($5::text IS NULL OR a.container_id = $5 OR n.container_name = $5)"
                         " AND ($6::text IS NULL OR n.pod_name = $6) AND ($7::text IS NULL OR n.pod_namespace = $7)");
    else   /* no names known: a name matches nothing */
        strbuf_puts(sql, " AND ($5::text IS NULL OR a.container_id = $5) AND $6::text IS NULL AND $7::text IS NULL");
    priority_filter(sql, o);
}

/* The parameters of central_filters for o, cursors as given. */
static void central_params(const struct central_reader *r, const struct alerts_options *o, const char *cursors,
                           const char *v[CENTRAL_PARAMS])
{
    const char *values[CENTRAL_PARAMS] = {cursors, r->host, o->has_since ? r->since : NULL, o->rule, o->container,
                                          o->pod, o->ns};
    memcpy(v, values, sizeof(values));
}

static void central_sql(struct central_reader *r)
{
    struct strbuf *sql = &r->sql;
    strbuf_puts(sql, "SELECT a.host_id, a.id, a.time_ns, a.rule, a.priority, a.container_id, a.output,"
                     " CASE WHEN jsonb_typeof(a.output_fields) = 'object' THEN a.output_fields::text END,"
                     " CASE WHEN jsonb_typeof(a.tags) = 'array' THEN a.tags::text END, e.recv_ns,"
                     /* to_jsonb: a hosts table of a forwarder before hostname has none */
                     " (SELECT to_jsonb(h) ->> 'hostname' FROM hosts h WHERE h.host_id = a.host_id),"
                     " a.suppressed, ");
    strbuf_puts(sql, r->has_names ? CENTRAL_NAMES_LABEL_SQL("a.host_id", "a.container_id") : "NULL");
    strbuf_puts(sql, r->has_sequences ? ", a.evicted, a.sequence" : ", 0, NULL");
    central_filters(sql, r, r->o);
    strbuf_printf(sql, " ORDER BY a.host_id COLLATE \"C\", a.id LIMIT %d", ROWS_PER_READ);
}

/* Whether an alert to print, by the filters, meets condition (SQL over a,
 * e and n); false when it cannot tell. */
static bool central_any_alert(struct central_reader *r, const char *condition)
{
    struct strbuf sql = {0};
    strbuf_puts(&sql, "SELECT EXISTS(SELECT 1");
    central_filters(&sql, r, r->o);
    strbuf_printf(&sql, " AND %s)", condition);
    const char *v[CENTRAL_PARAMS];
    central_params(r, r->o, "{}", v);
    PGresult *res = sql.failed ? NULL : PQexecParams(r->pg, sql.data, CENTRAL_PARAMS, NULL, v, NULL, NULL, 0);
    bool yes = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    PQclear(res);
    strbuf_free(&sql);
    return yes;
}

/* Whether an alert to print has a sandbox time more than a second off the
 * daemon's (the table's sandbox column). */
static bool central_clock_apart(struct central_reader *r)
{
    char condition[128];
    snprintf(condition, sizeof(condition), "(a.time_ns > e.recv_ns + %d OR a.time_ns < e.recv_ns - %d)",
             CLOCK_APART_NS, CLOCK_APART_NS);
    return central_any_alert(r, condition);
}

/* Whether an alert to print names a container whose names are known
 * centrally (the table's names column). */
static bool central_any_named(struct central_reader *r)
{
    return r->has_names &&
           central_any_alert(r, "(" CENTRAL_NAMES_LABEL_SQL("a.host_id", "a.container_id") ") IS NOT NULL");
}

static int64_t central_count(void *ctx, const struct alerts_options *filters)
{
    struct central_reader *r = ctx;
    struct strbuf sql = {0};
    strbuf_puts(&sql, "SELECT count(*)");
    central_filters(&sql, r, filters);
    const char *v[CENTRAL_PARAMS];
    central_params(r, filters, "{}", v);
    PGresult *res = sql.failed ? NULL : PQexecParams(r->pg, sql.data, CENTRAL_PARAMS, NULL, v, NULL, NULL, 0);
    int64_t n = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 ? strtoll(PQgetvalue(res, 0, 0), NULL, 10)
                                                                              : -1;
    PQclear(res);
    strbuf_free(&sql);
    return n;
}

static void central_top(void *ctx, const char *column, struct strbuf *out)
{
    struct central_reader *r = ctx;
    char sql[240];
    snprintf(sql, sizeof(sql), "SELECT %s, count(*) FROM alerts WHERE $1 = '' OR host_id = $1 GROUP BY 1"
             " ORDER BY 2 DESC, 1 LIMIT %d", column, TOP_VALUES);
    const char *v[] = {r->host};
    PGresult *res = PQexecParams(r->pg, sql, 1, NULL, v, NULL, NULL, 0);
    for (int i = 0; PQresultStatus(res) == PGRES_TUPLES_OK && i < PQntuples(res); i++)
        put_top_value(out, i, PQgetisnull(res, i, 0) ? NULL : PQgetvalue(res, i, 0), PQgetvalue(res, i, 1));
    PQclear(res);
}

/* Without --since, --follow starts after what is there now. */
static int central_start_at_end(struct central_reader *r)
{
    const char *v[] = {r->host};
    PGresult *res = PQexecParams(r->pg, "SELECT host_id, max(id) FROM alerts WHERE $1 = '' OR host_id = $1"
                                        " GROUP BY host_id", 1, NULL, v, NULL, NULL, 0);
    int rc = PQresultStatus(res) == PGRES_TUPLES_OK ? 0 : ALERTS_FAILED;
    for (int i = 0; rc == 0 && i < PQntuples(res); i++)
        if (cursor_set(&r->cursors, PQgetvalue(res, i, 0), strtoll(PQgetvalue(res, i, 1), NULL, 10)) != 0)
            rc = ALERTS_FAILED;
    if (rc != 0) {
        char line[512];
        central_message_line(PQerrorMessage(r->pg), line, sizeof(line));
        fprintf(stderr, PROG ": reading the central alerts: %s\n", line);
    }
    PQclear(res);
    return rc;
}

/* PostgreSQL's refusals that the same read, tried again, gets past: a
 * deadlock's victim, a serialization failure, a lock not available. The
 * forwarders never make a reader one (central_ensure_schema gives way
 * first), but a reader cannot know what else runs on the server. */
static bool central_transient(const PGresult *res)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    return state && (strcmp(state, "40P01") == 0 || strcmp(state, "40001") == 0 || strcmp(state, "55P03") == 0);
}

/* The central sequence column (text, as the host's database kept it) of
 * row i when it is a JSON object, as the host's reader takes it
 * (ALERT_OUTBOX_OBJECT_SQL); else NULL: the line has no such key. */
static const char *central_sequence(const PGresult *res, int i, int col)
{
    if (PQgetisnull(res, i, col))
        return NULL;
    const char *text = PQgetvalue(res, i, col);
    size_t len = (size_t)PQgetlength(res, i, col);
    if (strlen(text) != len || !utf8_valid(text, len))
        return NULL;
    json_t *j = json_loadb(text, len, 0, NULL);   /* an object or array at the top, nothing after it */
    bool object = json_is_object(j);
    json_decref(j);
    return object ? text : NULL;
}

/* 0, ALERTS_FAILED / ALERTS_OUTPUT_GONE, or CENTRAL_RETRY (said on stderr):
 * nothing was printed, the cursors did not move. */
static int central_print_next(struct central_reader *r, struct printer *p, int *n)
{
    const struct alerts_options *o = r->o;
    cursors_json(&r->cursors, &r->cursor_json);
    if (r->cursor_json.failed)
        return ALERTS_FAILED;
    const char *v[CENTRAL_PARAMS];
    central_params(r, o, r->cursor_json.data, v);
    PGresult *res = PQexecParams(r->pg, r->sql.data, CENTRAL_PARAMS, NULL, v, NULL, NULL, 0);
    *n = 0;
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        char line[512];
        bool again = central_transient(res);
        central_message_line(PQresultErrorMessage(res), line, sizeof(line));
        fprintf(stderr, PROG ": reading the central alerts: %s%s\n", line, again ? "; reading again" : "");
        PQclear(res);
        return again ? CENTRAL_RETRY : ALERTS_FAILED;
    }
    int rc = 0;
    for (int i = 0; rc == 0 && i < PQntuples(res); i++) {
        struct alert_row a = {
            .host = PQgetvalue(res, i, 0), .id = strtoll(PQgetvalue(res, i, 1), NULL, 10),
            .time_ns = strtoll(PQgetvalue(res, i, 2), NULL, 10), .rule = PQgetvalue(res, i, 3),
            .priority = PQgetvalue(res, i, 4), .container = PQgetisnull(res, i, 5) ? NULL : PQgetvalue(res, i, 5),
            .output = PQgetvalue(res, i, 6), .output_len = (size_t)PQgetlength(res, i, 6),
            .has_recv = !PQgetisnull(res, i, 9), .recv_ns = strtoll(PQgetvalue(res, i, 9), NULL, 10),
            .host_name = PQgetisnull(res, i, 10) ? NULL : PQgetvalue(res, i, 10),
            .suppressed = strtoull(PQgetvalue(res, i, 11), NULL, 10),
            .names = PQgetisnull(res, i, 12) ? NULL : PQgetvalue(res, i, 12),
            .evicted = PQgetisnull(res, i, 13) ? 0 : strtoull(PQgetvalue(res, i, 13), NULL, 10),
            .sequence = central_sequence(res, i, 14)};
        a.output_fields = alert_outbox_json_column(PQgetisnull(res, i, 7) ? NULL : PQgetvalue(res, i, 7),
                                                   (size_t)PQgetlength(res, i, 7), "{}", &a.replaced);
        a.tags = alert_outbox_json_column(PQgetisnull(res, i, 8) ? NULL : PQgetvalue(res, i, 8),
                                          (size_t)PQgetlength(res, i, 8), "[]", &a.replaced);
        rc = cursor_set(&r->cursors, a.host, a.id) != 0 ? ALERTS_FAILED : print_row(p, &a);
        (*n)++;
    }
    PQclear(res);
    return rc ? rc : flush_output();
}

/* The settings --to takes: 0, or ALERTS_USAGE after saying why. */
static int central_settings(struct central_reader *r)
{
    char err[512];
    if (!r->o->all_hosts && host_id_resolve(r->o->host_id, r->host, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": --host-id: %s\n", err);
        return ALERTS_USAGE;
    }
    return 0;
}

/* Connected, with the alerts table there: 0; else why in err, and
 * *lasting when waiting cannot help (a refused password...). */
static int central_ready(struct central_reader *r, bool *lasting, char *err, size_t errlen)
{
    *lasting = false;
    if (!r->pg && !(r->pg = central_connect(r->url, lasting, err, errlen)))
        return -1;
    PGresult *res = PQexec(r->pg, "SELECT to_regclass('alerts') IS NOT NULL, " CENTRAL_NAMES_READY_SQL ","
                                  " (SELECT count(*) = 2 FROM information_schema.columns WHERE table_schema ="
                                  " current_schema() AND table_name = 'alerts' AND column_name IN ('evicted', 'sequence'))");
    bool ok = PQresultStatus(res) == PGRES_TUPLES_OK, has = ok && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    /* The statement follows the schema it reads: one made before names (or
     * sequences) were shipped has none. */
    bool names = ok && strcmp(PQgetvalue(res, 0, 1), "t") == 0;
    bool sequences = ok && strcmp(PQgetvalue(res, 0, 2), "t") == 0;
    PQclear(res);
    if (has && (names != r->has_names || sequences != r->has_sequences || !r->sql.len)) {
        r->has_names = names;
        r->has_sequences = sequences;
        strbuf_reset(&r->sql);
        central_sql(r);
        if (r->sql.failed) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    if (has)
        return 0;
    if (ok)
        snprintf(err, errlen, "the central database has no alerts table: no seccheckd forward of this version has "
                 "shipped to it yet");
    else
        central_message_line(PQerrorMessage(r->pg), err, errlen);
    return -1;
}

/* --follow outlives the central server's outages: a lost connection or a
 * table not made yet is waited out, said once each time. */
static void central_wait(struct central_reader *r, const char *why, bool *said)
{
    if (!*said)
        fprintf(stderr, PROG ": %s; waiting (--follow)\n", why);
    *said = true;
    if (r->pg && PQstatus(r->pg) != CONNECTION_OK) {
        PQfinish(r->pg);
        r->pg = NULL;
    }
    follow_sleep_ms(CENTRAL_POLL_MS);
}

/* --wide: as local_measure, over the central copy (the cursors start
 * again after it). */
static int central_measure(struct central_reader *r, struct printer *p)
{
    p->measuring = true;
    int rc = 0, n = ROWS_PER_READ;
    while (rc == 0 && n == ROWS_PER_READ && !follow_stopped())
        rc = central_print_next(r, p, &n);
    p->measuring = false;
    cursors_free(&r->cursors);
    r->cursors = (struct cursors){0};
    return rc;
}

static int run_central_at(const struct alerts_options *o, struct printer *p, const char *url)
{
    struct central_reader r = {.o = o, .url = url};
    if (o->has_since)
        snprintf(r.since, sizeof(r.since), "%" PRId64, realtime_ns() - (int64_t)o->since_s * 1000000000);
    int rc = central_settings(&r);
    bool started = false, waiting = false, lasting, stored_done = false;
    int retries = 0;
    char err[512];
    while (rc == 0 && !follow_stopped()) {
        if (central_ready(&r, &lasting, err, sizeof(err)) != 0) {
            if (!o->follow || lasting) {
                fprintf(stderr, PROG ": %s\n", err);
                rc = ALERTS_FAILED;
            } else {
                central_wait(&r, err, &waiting);
            }
            started = true;   /* nothing was there when it started: every alert that comes is new */
            p->sandbox_column = p->names_column = !o->json;
            continue;
        }
        if (waiting)
            fprintf(stderr, PROG ": reading the central alerts again\n");
        waiting = false;
        if (!started && o->wide && (rc = central_measure(&r, p)) != 0)
            break;
        if (!started && o->follow && !o->has_since && (rc = central_start_at_end(&r)) != 0)
            break;
        if (!started) {
            p->sandbox_column = !o->json && (o->follow || central_clock_apart(&r));
            p->names_column = !o->json && r.has_names && (o->follow || central_any_named(&r));
        }
        started = true;
        int n;
        rc = central_print_next(&r, p, &n);
        if (rc == CENTRAL_RETRY) {
            rc = o->follow || ++retries < CENTRAL_RETRIES_MAX ? 0 : ALERTS_FAILED;
            follow_sleep_ms(CENTRAL_POLL_MS / 4);
            continue;
        }
        retries = 0;
        if (rc == ALERTS_FAILED && o->follow && PQstatus(r.pg) != CONNECTION_OK) {
            central_wait(&r, "lost the connection to the central server", &waiting);
            rc = 0;
            continue;
        }
        if (rc != 0 || n == ROWS_PER_READ)
            continue;
        if (!stored_done && !p->printed) {   /* say why, on stderr: the output stays empty */
            struct strbuf where = {0};
            strbuf_puts(&where, "the central copy");
            if (r.host[0]) {   /* which host's: --host-id's value, escaped */
                strbuf_puts(&where, " (host ");
                event_line_plain(&where, r.host, strlen(r.host), 200);
                strbuf_puts(&where, ")");
            }
            struct miss_source m = {.ctx = &r, .where = where.failed ? "the central copy" : where.data,
                                    .count = central_count, .top = central_top};
            explain_miss(o, &m);
            strbuf_free(&where);
        }
        stored_done = true;
        if (!o->follow)
            break;
        follow_sleep_ms(CENTRAL_POLL_MS);
    }
    if (r.pg)
        PQfinish(r.pg);
    cursors_free(&r.cursors);
    strbuf_free(&r.sql);
    strbuf_free(&r.cursor_json);
    return rc;
}

/* ---- several central databases (one per partition), read as one ---- */

struct host_at {
    char *host;
    int reader;
};

static int host_order(const void *a, const void *b)
{
    return strcmp(((const struct host_at *)a)->host, ((const struct host_at *)b)->host);
}

/* Every reader connected, the alerts table there; the table's columns
 * chosen as one database's would be. 0, or ALERTS_FAILED (said). */
static int readers_ready(struct central_reader *r, int n, struct printer *p)
{
    bool lasting;
    char err[512];
    p->sandbox_column = p->names_column = false;
    for (int i = 0; i < n; i++) {
        if (central_ready(&r[i], &lasting, err, sizeof(err)) != 0) {
            fprintf(stderr, PROG ": --to number %d: %s\n", i + 1, err);
            return ALERTS_FAILED;
        }
        p->sandbox_column |= !r->o->json && (r->o->follow || central_clock_apart(&r[i]));
        p->names_column |= !r->o->json && r[i].has_names && (r->o->follow || central_any_named(&r[i]));
    }
    return 0;
}

/* --all-hosts, once: host by host in the order one database gives, each
 * host read in the database that holds it (hosts are disjoint: each
 * database is one partition's). */
static int merged_once(struct central_reader *r, int n, struct printer *p)
{
    struct host_at *hosts = NULL;
    size_t nhosts = 0;
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        PGresult *res = PQexec(r[i].pg, "SELECT DISTINCT host_id FROM alerts");
        if (PQresultStatus(res) != PGRES_TUPLES_OK) {
            char line[512];
            central_message_line(PQresultErrorMessage(res), line, sizeof(line));
            fprintf(stderr, PROG ": reading the central alerts: %s\n", line);
            rc = ALERTS_FAILED;
        }
        struct host_at *grown = rc ? NULL : realloc(hosts, (nhosts + (size_t)PQntuples(res) + 1) * sizeof(*hosts));
        for (int k = 0; grown && k < PQntuples(res); k++)
            grown[nhosts++] = (struct host_at){.host = strdup(PQgetvalue(res, k, 0)), .reader = i};
        if (grown)
            hosts = grown;
        else if (rc == 0)
            rc = ALERTS_FAILED;
        PQclear(res);
    }
    if (rc == 0)
        qsort(hosts, nhosts, sizeof(*hosts), host_order);
    /* --wide: a first pass takes the columns' widths (as central_measure). */
    for (int pass = r->o->wide ? 0 : 1; pass < 2 && rc == 0; pass++) {
        p->measuring = pass == 0;
        for (size_t h = 0; h < nhosts && rc == 0; h++) {
            struct central_reader *one = &r[hosts[h].reader];
            snprintf(one->host, sizeof(one->host), "%s", hosts[h].host ? hosts[h].host : "");
            for (int got = ROWS_PER_READ; rc == 0 && got == ROWS_PER_READ;)
                rc = central_print_next(one, p, &got);
        }
        for (int i = 0; i < n && pass == 0; i++) {
            cursors_free(&r[i].cursors);
            r[i].cursors = (struct cursors){0};
        }
    }
    p->measuring = false;
    for (size_t h = 0; h < nhosts; h++)
        free(hosts[h].host);
    free(hosts);
    for (int i = 0; i < n; i++)
        r[i].host[0] = '\0';
    return rc;
}

/* --all-hosts --follow: each database's new alerts in turn, every second. */
static int merged_follow(struct central_reader *r, int n, struct printer *p)
{
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        if (!r[i].o->has_since)
            rc = central_start_at_end(&r[i]);
    while (rc == 0 && !follow_stopped()) {
        for (int i = 0; i < n && rc == 0; i++)
            for (int got = ROWS_PER_READ; rc == 0 && got == ROWS_PER_READ;)
                rc = central_print_next(&r[i], p, &got);
        if (rc == 0)
            follow_sleep_ms(CENTRAL_POLL_MS);
    }
    return rc;
}

static int run_central(const struct alerts_options *o, struct printer *p)
{
    const struct central_urls *u = &o->to;
    if (u->n == 1)
        return run_central_at(o, p, u->url[0]);
    struct central_reader r[CENTRAL_URLS_MAX];
    memset(r, 0, sizeof(r));
    int rc = 0;
    for (int i = 0; i < u->n; i++) {
        r[i] = (struct central_reader){.o = o, .url = u->url[i]};
        if (o->has_since)
            snprintf(r[i].since, sizeof(r[i].since), "%" PRId64, realtime_ns() - (int64_t)o->since_s * 1000000000);
    }
    if (!o->all_hosts) {   /* one host: where it is */
        char err[512], host[HOST_ID_MAX + 1];
        PGconn *pg[CENTRAL_URLS_MAX] = {NULL};
        if (host_id_resolve(o->host_id, host, err, sizeof(err)) != 0) {
            fprintf(stderr, PROG ": --host-id: %s\n", err);
            return ALERTS_USAGE;
        }
        bool lasting;
        for (int i = 0; i < u->n && rc == 0; i++)
            if (!(pg[i] = central_connect(u->url[i], &lasting, err, sizeof(err)))) {
                fprintf(stderr, PROG ": --to number %d: %s\n", i + 1, err);
                rc = ALERTS_FAILED;
            }
        int at = rc ? 0 : central_urls_find_host(pg, u, host, err, sizeof(err));
        if (at < -1) {
            fprintf(stderr, PROG ": %s\n", err);
            rc = ALERTS_FAILED;
        }
        for (int i = 0; i < u->n; i++)
            if (pg[i])
                PQfinish(pg[i]);
        return rc ? rc : run_central_at(o, p, u->url[at < 0 ? 0 : at]);
    }
    rc = readers_ready(r, u->n, p);
    if (rc == 0)
        rc = o->follow ? merged_follow(r, u->n, p) : merged_once(r, u->n, p);
    if (rc == 0 && !p->printed && !o->follow) {
        struct miss_source m = {.ctx = &r[0], .where = "the central copy (the first --to)", .count = central_count,
                                .top = central_top};
        explain_miss(o, &m);
    }
    for (int i = 0; i < u->n; i++) {
        if (r[i].pg)
            PQfinish(r[i].pg);
        cursors_free(&r[i].cursors);
        strbuf_free(&r[i].sql);
        strbuf_free(&r[i].cursor_json);
    }
    return rc;
}

/* ---- the command ---- */

int alerts_main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "show") == 0)
        return alert_show_main(argc - 1, argv + 1);
    struct alerts_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? ALERTS_OK : rc;
    struct printer p = {.o = &o, .color = !o.json && term_color_wanted(o.color, STDOUT_FILENO)};
    memcpy(p.width, column_width, sizeof(p.width));
    if (gethostname(p.hostname, sizeof(p.hostname) - 1) != 0)
        snprintf(p.hostname, sizeof(p.hostname), "unknown");
    struct follow_signals signals;
    follow_catch_signals(&signals);
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    rc = o.db_path ? run_local(&o, &p) : run_central(&o, &p);
    strbuf_free(&p.line);
    strbuf_free(&p.scratch);
    follow_restore_signals(&signals);
    return rc == ALERTS_OUTPUT_GONE ? ALERTS_OK : rc;
}
