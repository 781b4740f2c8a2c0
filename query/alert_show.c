/* alert_show.c - `seccheckd alerts show ID` (alert_show.h).
 *
 * Reads through show_store.h, so a host's database and the central copy
 * tell the same story; every event is decoded again from its stored packet
 * (what the daemon stored is what it received), and every string from a
 * sandbox is escaped on its way out (event_line.h), or JSON-escaped in
 * --json, whose document then has what a terminal acts on escaped too.
 *
 * The ancestry walks up from the alert's process: its exec (the latest
 * sentry/execve of that process before the alert), the clone that made it
 * (the parent's, sent in the parent's context), then the parent as it was
 * at that clone, and so on, to a process with no parent: the container's
 * first (container/start), or one whose clone is not stored, which is said
 * with why. Bounded: ANCESTRY_MAX generations, a cycle (a forged clone)
 * stops it, each search scans at most SCAN_MAX events either side.
 */
#include "alert_show.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arena.h"
#include "cli.h"
#include "decode.h"
#include "event_line.h"
#include "gvisor/container.pb-c.h"
#include "gvisor/sentry.pb-c.h"
#include "json.h"
#include "rules.h"
#include "show_store.h"
#include "strbuf.h"
#include "term_color.h"
#include "wire.h"

#define PROG "seccheckd alerts show"
#define WINDOW_DEFAULT 10
#define WINDOW_MAX 10000          /* --before, --after */
#define ANCESTRY_MAX 64           /* generations */
#define SCAN_MAX 1000000          /* events looked at either side of the alert's for its process's */
#define ARGV_MAX 64               /* arguments kept per process */
#define ARGV_BYTES 4096
#define VALUE_MAX 1024            /* a program, a cwd */

enum { SHOW_OK = 0, SHOW_FAILED = 1, SHOW_USAGE = 2 };

struct show_options {
    const char *db_path, *to_url, *host_id;
    int64_t id;
    uint64_t before, after;
    bool json;
    enum term_color_mode color;
};

/* One process of the ancestry, as the stored events tell it. */
enum program_from { FROM_NONE, FROM_EXEC, FROM_START, FROM_PARENT };

struct process {
    int64_t pid, start;              /* start: its thread group's start time, SHOW_UNKNOWN */
    int64_t at;                      /* the event id it is looked at from */
    char name[64];                   /* the context's process_name (raw) */
    enum program_from from;
    int64_t program_event, program_recv;   /* the exec or container/start that gave the program */
    struct strbuf binary, cwd, argv; /* raw; argv NUL-separated */
    size_t nargv, argv_more;
    int64_t uid;                     /* SHOW_UNKNOWN */
    int64_t clone_event;             /* the clone that made it, SHOW_UNKNOWN */
    int64_t parent;                  /* its parent's pid, SHOW_UNKNOWN */
};

/* One step of a sequence's alert: its event and its process's ancestry,
 * rendered once (the ancestry code is the alert's own, run for its event). */
struct step_story {
    struct strbuf name, time, first_time;   /* raw, from the alert's row */
    int64_t event_id, count, conn_id;
    bool has_event, has_first_time;
    struct strbuf line;                     /* its event's line */
    struct strbuf ancestry_text, ancestry_json, notes;
};

struct show;
static void text_steps(struct show *sh, struct strbuf *out);   /* "a sequence's steps" below */
static void json_steps(struct show *sh, struct strbuf *out);

struct show {
    const struct show_options *o;
    struct show_store store;
    struct decoder decoder;
    struct arena arena;
    bool color;
    /* The alert and its event. */
    struct show_alert alert;
    struct strbuf alert_text;        /* the alert's strings, NUL-separated (the row is gone) */
    int64_t event_id, conn_id, event_recv;
    bool has_event;
    struct strbuf event_line, message;
    bool has_message;
    /* The ancestry, the alert's process first (printed last). */
    struct process procs[ANCESTRY_MAX];
    int nprocs;
    struct strbuf ancestry_notes;    /* one note per line */
    /* The window. */
    int64_t window_ids[2 * WINDOW_MAX + 1];
    struct strbuf window_lines;      /* one line each, '\n' ended */
    int nwindow, alert_index;
    struct strbuf window_notes;
    /* Other alerts in the window. */
    struct strbuf nearby;            /* rendered rows (text) or JSON array items */
    int nnearby;
    struct strbuf out, scratch;
    int64_t min_id;
    /* A sequence's alert: its steps, each with its event and ancestry. */
    struct step_story *steps;
    int nsteps;
    int64_t sandbox_dropped;
};

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: seccheckd alerts show ID (--db PATH | --to URL [--host-id ID])\n"
            "                             [--before N] [--after N] [--json] [--color auto|always|never]\n"
            "The story of alert ID (the first column of seccheckd alerts): the rule, priority, time\n"
            "and output; the event that matched, whole; the process's ancestry from the container's\n"
            "first process down to it (pid, exec time, program, argv, cwd, uid), from the stored\n"
            "container start, clone and exec events; the process's own events around the alert's;\n"
            "the other alerts of the container in that window. What is missing is said.\n"
            "\n"
            "  --db PATH          a host's database (only read; the daemon may be running)\n"
            "  --to URL           the central PostgreSQL that seccheckd forward ships to\n"
            "  --host-id ID       --to: the host the alert is from [the id forward ships as]\n"
            "  --before N         the process's events shown before the alert's [10]\n"
            "  --after N          ... and after it [10]\n"
            "  --json, -o json    all of it as one JSON document, the event's whole message in it\n"
            "  --color WHEN       colour the priority and calls: auto, always, never [auto]\n"
            "  --help, -h         this text\n"
            "\n"
            "Exit status: 0 shown, 1 a runtime error or no such alert, 2 usage error.\n");
}

static int usage_error(const char *problem, const char *value)
{
    return cli_usage_error(PROG, problem, value);
}

/* 0, SHOW_USAGE, or -1 after --help. */
static int parse_options(int argc, char **argv, struct show_options *o)
{
    static const struct option options[] = {
        {"db", required_argument, NULL, 'd'},      {"to", required_argument, NULL, 'T'},
        {"host-id", required_argument, NULL, 'H'}, {"before", required_argument, NULL, 'B'},
        {"after", required_argument, NULL, 'A'},   {"json", no_argument, NULL, 'j'},
        {"output", required_argument, NULL, 'o'},  {"color", required_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    *o = (struct show_options){.before = WINDOW_DEFAULT, .after = WINDOW_DEFAULT};
    int ch;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, CLI_GETOPT_QUIET "o:h", options, NULL)) != -1) {
        switch (ch) {
        case 'd': o->db_path = optarg; break;
        case 'T': o->to_url = optarg; break;
        case 'H': o->host_id = optarg; break;
        case 'B':
            if (cli_parse_uint(PROG, "before", optarg, 0, WINDOW_MAX, &o->before) != 0)
                return SHOW_USAGE;
            break;
        case 'A':
            if (cli_parse_uint(PROG, "after", optarg, 0, WINDOW_MAX, &o->after) != 0)
                return SHOW_USAGE;
            break;
        case 'j': o->json = true; break;
        case 'o':
            if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0)
                return usage_error("-o: expected text or json", optarg);
            o->json = strcmp(optarg, "json") == 0;
            break;
        case 'C':
            if (term_color_parse(optarg, &o->color) != 0)
                return usage_error("--color: expected auto, always or never", optarg);
            break;
        case 'h': usage(stdout); return -1;
        default: cli_report_getopt_error(PROG, ch, argv); return SHOW_USAGE;
        }
    }
    uint64_t id;
    if (optind >= argc)
        return usage_error("which alert? give its ID (the first column of seccheckd alerts)", NULL);
    if (cli_parse_uint(PROG, "ID", argv[optind], 1, INT64_MAX, &id) != 0)
        return SHOW_USAGE;
    o->id = (int64_t)id;
    if (optind + 1 < argc)
        return usage_error("unexpected argument", argv[optind + 1]);
    if (!o->db_path == !o->to_url)
        return usage_error("give --db PATH (a host's database) or --to URL (the central copy)", NULL);
    if (o->db_path && o->host_id)
        return usage_error("--host-id goes with --to", NULL);
    return 0;
}

/* ---- events, decoded again ---- */

/* ev decoded from row; false for a packet that is not one (an edited row). */
static bool decode_row(struct show *sh, const struct show_row *row, struct event *ev)
{
    struct wire_header h;
    arena_reset(&sh->arena);
    memset(ev, 0, sizeof(*ev));
    ev->recv_ns = row->recv_ns;
    ev->conn_id = (uint64_t)row->conn_id;
    if (!row->raw || wire_header_parse(row->raw, row->raw_len, &h) != WIRE_OK) {
        ev->raw_len = (uint32_t)(row->raw_len > UINT32_MAX ? UINT32_MAX : row->raw_len);
        ev->status = DECODE_BAD_PAYLOAD;
        return false;
    }
    decode_event(&sh->decoder, &sh->arena, &h, row->raw, row->raw_len, ev);
    return ev->status == DECODE_OK;
}

/* The event's line, without its '\n', appended to out. */
static void line_of(struct show *sh, const struct show_row *row, struct strbuf *out, bool color)
{
    struct event ev;
    decode_row(sh, row, &ev);
    size_t start = out->len;
    event_line_render_color(out, &ev, color);
    if (out->len > start && out->data[out->len - 1] == '\n')
        out->len--;
}

/* The first event a question finds, as a row copied out (raw kept in keep). */
struct first_row {
    bool found;
    struct show_row row;
    struct strbuf keep;
};

static bool take_first(const struct show_row *row, void *data)
{
    struct first_row *f = data;
    f->found = true;
    f->row = *row;
    strbuf_reset(&f->keep);
    strbuf_append(&f->keep, row->raw, row->raw_len);
    f->row.raw = (const uint8_t *)f->keep.data;
    return false;
}

/* One event for q; found, with the first row in f. A store error is a
 * note, not an end: what could be read is still shown. */
static bool find_one(struct show *sh, enum show_query q, const int64_t *args, struct first_row *f)
{
    f->found = false;
    if (sh->store.events(&sh->store, q, args, 1, take_first, f) < 0)
        strbuf_printf(&sh->ancestry_notes, "reading the events failed: %s\n", sh->store.error(&sh->store));
    return f->found && !f->keep.failed;
}

/* ---- the alert ---- */

static void copy_string(struct strbuf *keep, const char *s, size_t len)
{
    strbuf_append(keep, s ? s : "", s ? len : 0);
    strbuf_putc(keep, '\0');
}

static void take_alert(const struct show_alert *a, void *data)
{
    struct show *sh = data;
    sh->alert = *a;
    /* The row's strings live until the callback returns: kept, offsets
     * turned into pointers once all are in. */
    struct strbuf *k = &sh->alert_text;
    strbuf_reset(k);
    const char *strings[] = {a->rule, a->priority, a->container, a->output, a->output_fields, a->tags, a->host_name};
    size_t lens[] = {strlen(a->rule), strlen(a->priority), a->container ? strlen(a->container) : 0, a->output_len,
                     strlen(a->output_fields), strlen(a->tags), a->host_name ? strlen(a->host_name) : 0};
    size_t offs[7];
    for (int i = 0; i < 7; i++) {
        offs[i] = k->len;
        copy_string(k, strings[i], lens[i]);
    }
    if (k->failed)
        return;
    sh->alert.rule = k->data + offs[0];
    sh->alert.priority = k->data + offs[1];
    sh->alert.container = a->container ? k->data + offs[2] : NULL;
    sh->alert.output = k->data + offs[3];
    sh->alert.output_fields = k->data + offs[4];
    sh->alert.tags = k->data + offs[5];
    sh->alert.host_name = a->host_name ? k->data + offs[6] : NULL;
}

static void take_message(const char *json, size_t len, void *data)
{
    struct show *sh = data;
    strbuf_append(&sh->message, json, len);
    sh->has_message = true;
}

/* The alert and its event: SHOW_OK, or SHOW_FAILED said. */
static int read_alert(struct show *sh)
{
    int found = sh->store.alert(&sh->store, sh->o->id, take_alert, sh);
    if (found < 0) {
        fprintf(stderr, PROG ": reading alert %" PRId64 ": %s\n", sh->o->id, sh->store.error(&sh->store));
        return SHOW_FAILED;
    }
    if (found == 0) {
        fprintf(stderr, PROG ": %s has no alert %" PRId64 " (seccheckd alerts lists them, the id first; retention "
                "deletes alerts with their events)\n", sh->store.where, sh->o->id);
        return SHOW_FAILED;
    }
    if (sh->alert_text.failed) {
        fprintf(stderr, PROG ": out of memory\n");
        return SHOW_FAILED;
    }
    sh->event_id = sh->alert.event_id;
    sh->min_id = sh->store.scalar(&sh->store, SHOW_MIN_ID, NULL);
    struct first_row f = {0};
    int64_t args[] = {sh->event_id};
    sh->has_event = find_one(sh, SHOW_EVENT, args, &f);
    if (sh->has_event) {
        sh->conn_id = f.row.conn_id;
        sh->event_recv = f.row.recv_ns;
        line_of(sh, &f.row, &sh->event_line, sh->color);
        if (sh->o->json && sh->store.message(&sh->store, sh->event_id, take_message, sh) < 0)
            strbuf_printf(&sh->ancestry_notes, "the event's whole message cannot be read: %s\n",
                          sh->store.error(&sh->store));
    }
    strbuf_free(&f.keep);
    return SHOW_OK;
}

/* ---- what is missing, said ---- */

/* Why no event of msg_type was found for the question: the sandbox never
 * sent that point, retention deleted it, or it happened before the
 * connection. */
static void missing_because(struct show *sh, struct strbuf *out, int msg_type, const char *point)
{
    int64_t args[] = {sh->conn_id, msg_type};
    if (sh->store.scalar(&sh->store, SHOW_CONN_HAS, args) == 0) {
        strbuf_printf(out, "this sandbox sent no %s events: the point is not enabled (seccheckd gvisor-config "
                      "--points exec, or --rules)", point);
        return;
    }
    if (sh->min_id != SHOW_UNKNOWN && sh->min_id > 1) {
        struct first_row f = {0};
        int64_t first[] = {sh->min_id};
        strbuf_printf(out, "retention deleted the events before %" PRId64, sh->min_id);
        if (find_one(sh, SHOW_EVENT, first, &f)) {
            strbuf_puts(out, " (received ");
            strbuf_put_utc(out, f.row.recv_ns, 3);
            strbuf_putc(out, ')');
        }
        strbuf_free(&f.keep);
        return;
    }
    strbuf_puts(out, "it came before this sandbox's connection, or was not sent");
}

/* ---- the ancestry ---- */

static void process_free(struct process *p)
{
    strbuf_free(&p->binary);
    strbuf_free(&p->cwd);
    strbuf_free(&p->argv);
}

static void set_string(struct strbuf *sb, const char *s)
{
    strbuf_reset(sb);
    if (s) {
        size_t n = strnlen(s, VALUE_MAX + 1);
        strbuf_append(sb, s, n > VALUE_MAX ? VALUE_MAX : n);
    }
}

static void set_argv(struct process *p, char *const *v, size_t n)
{
    strbuf_reset(&p->argv);
    p->nargv = p->argv_more = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = v[i] ? strnlen(v[i], ARGV_BYTES) : 0;
        if (p->nargv == ARGV_MAX || p->argv.len + len + 1 > ARGV_BYTES) {
            p->argv_more = n - i;
            return;
        }
        strbuf_append(&p->argv, v[i] ? v[i] : "", len);
        strbuf_putc(&p->argv, '\0');
        p->nargv++;
    }
}

/* What the context of an event of this process says of it; its name only
 * from an event after its exec (an exec's context still has the old one). */
static void from_context(struct process *p, const Gvisor__Common__ContextData *c, bool name)
{
    if (!c)
        return;
    if (name && c->process_name && c->process_name[0])
        snprintf(p->name, sizeof(p->name), "%s", c->process_name);
    if (c->cwd && c->cwd[0])
        set_string(&p->cwd, c->cwd);
    if (c->credentials)
        p->uid = c->credentials->effective_uid;
    if (p->start == SHOW_UNKNOWN && c->thread_group_start_time_ns)
        p->start = c->thread_group_start_time_ns;
}

static void basename_as_name(struct process *p)
{
    const char *b = p->binary.data ? p->binary.data : "";
    const char *slash = memchr(b, '/', p->binary.len) ? strrchr(b, '/') : NULL;
    if (p->binary.len)
        snprintf(p->name, sizeof(p->name), "%s", slash ? slash + 1 : b);
}

/* Its latest exec before p->at: the program, argv, cwd, uid then. */
static bool find_exec(struct show *sh, struct process *p)
{
    struct first_row f = {0};
    int64_t args[] = {sh->conn_id, p->pid, p->start, p->at};
    bool found = find_one(sh, SHOW_LAST_EXEC, args, &f);
    struct event ev;
    if (found && decode_row(sh, &f.row, &ev) && ev.header.message_type == 3) {
        const Gvisor__Sentry__ExecveInfo *x = (const Gvisor__Sentry__ExecveInfo *)ev.msg;
        p->from = FROM_EXEC;
        p->program_event = f.row.id;
        p->program_recv = f.row.recv_ns;
        set_string(&p->binary, x->binary_path);
        set_argv(p, x->argv, x->n_argv);
        from_context(p, ev.context, false);
        if (!p->name[0])
            basename_as_name(p);
    } else {
        found = false;
    }
    strbuf_free(&f.keep);
    return found;
}

/* The container/start of this process (the container's first), if stored. */
static bool find_start(struct show *sh, struct process *p)
{
    struct first_row f = {0};
    int64_t args[] = {sh->conn_id, p->at};
    bool found = find_one(sh, SHOW_START, args, &f);
    struct event ev;
    if (found && decode_row(sh, &f.row, &ev) && ev.header.message_type == 1 && ev.context &&
        ev.context->thread_group_id == p->pid) {
        const Gvisor__Container__Start *x = (const Gvisor__Container__Start *)ev.msg;
        p->from = FROM_START;
        p->program_event = f.row.id;
        p->program_recv = f.row.recv_ns;
        set_string(&p->binary, x->n_args ? x->args[0] : "");
        set_argv(p, x->args, x->n_args);
        from_context(p, ev.context, !p->name[0]);
        if (x->cwd && x->cwd[0])
            set_string(&p->cwd, x->cwd);
    } else {
        found = false;
    }
    strbuf_free(&f.keep);
    return found;
}

/* The clone that made p, at or before p->at: its parent is the clone's
 * caller. The parent's own start time and name (as ps shows it then) come
 * with it. */
static bool find_clone(struct show *sh, struct process *p, int64_t *parent_start, char *parent_name, size_t len)
{
    struct first_row f = {0};
    int64_t args[] = {sh->conn_id, p->pid, p->start, p->at};
    bool found = find_one(sh, SHOW_CLONE, args, &f);
    struct event ev;
    if (found && decode_row(sh, &f.row, &ev) && ev.context && ev.context->thread_group_id != p->pid &&
        ev.context->thread_group_id > 0) {
        p->clone_event = f.row.id;
        p->parent = ev.context->thread_group_id;
        *parent_start = ev.context->thread_group_start_time_ns ? ev.context->thread_group_start_time_ns
                                                               : SHOW_UNKNOWN;
        snprintf(parent_name, len, "%s", ev.context->process_name ? ev.context->process_name : "");
    } else {
        found = false;
    }
    strbuf_free(&f.keep);
    return found;
}

static const char *pname(const struct process *p)
{
    return p->name[0] ? p->name : "?";
}

static void note_process(struct show *sh, const struct process *p, const char *what)
{
    struct strbuf *n = &sh->ancestry_notes;
    event_line_plain(n, pname(p), strlen(pname(p)), 64);
    strbuf_printf(n, "[%" PRId64 "]: %s", p->pid, what);
}

/* Walks up from the alert's process; each generation's notes said. */
static void build_ancestry(struct show *sh, const struct event *alert_event)
{
    const Gvisor__Common__ContextData *c = alert_event->context;
    if (!c || (!c->thread_group_id && !c->thread_id)) {
        strbuf_puts(&sh->ancestry_notes, "the event names no process (context_data not collected): no ancestry\n");
        return;
    }
    struct process *p = &sh->procs[0];
    *p = (struct process){.pid = c->thread_group_id ? c->thread_group_id : c->thread_id, .start = SHOW_UNKNOWN,
                          .at = sh->event_id, .uid = SHOW_UNKNOWN, .clone_event = SHOW_UNKNOWN,
                          .parent = SHOW_UNKNOWN, .program_event = SHOW_UNKNOWN};
    from_context(p, c, true);
    sh->nprocs = 1;
    for (;;) {
        p = &sh->procs[sh->nprocs - 1];
        bool exec = find_exec(sh, p), start = !exec && find_start(sh, p);
        int64_t parent_start = SHOW_UNKNOWN;
        char parent_name[sizeof(p->name)] = "";
        bool clone = !start && find_clone(sh, p, &parent_start, parent_name, sizeof(parent_name));
        if (!exec && !start && !clone) {
            note_process(sh, p, "no exec stored: ");
            missing_because(sh, &sh->ancestry_notes, 3, "sentry/execve");
            strbuf_putc(&sh->ancestry_notes, '\n');
        }
        if (start || p->pid == 1)
            return;   /* the container's first process */
        if (!clone) {
            note_process(sh, p, "its parent is unknown, the clone that made it is not stored: ");
            missing_because(sh, &sh->ancestry_notes, 2, "sentry/clone");
            strbuf_putc(&sh->ancestry_notes, '\n');
            return;
        }
        if (!exec)
            p->from = FROM_PARENT;   /* forked, no exec since: its parent's program */
        for (int i = 0; i < sh->nprocs; i++)
            if (sh->procs[i].pid == p->parent) {
                note_process(sh, p, "its parent is one of its own descendants: a clone that cannot be true (the "
                             "sandbox's events are its own)\n");
                return;
            }
        if (sh->nprocs == ANCESTRY_MAX) {
            strbuf_printf(&sh->ancestry_notes, "cut at %d generations\n", ANCESTRY_MAX);
            return;
        }
        struct process *up = &sh->procs[sh->nprocs++];
        *up = (struct process){.pid = p->parent, .start = parent_start, .at = p->clone_event, .uid = SHOW_UNKNOWN,
                               .clone_event = SHOW_UNKNOWN, .parent = SHOW_UNKNOWN, .program_event = SHOW_UNKNOWN};
        memcpy(up->name, parent_name, sizeof(up->name));
    }
}

/* A process forked without exec runs its parent's program. */
static void inherit_programs(struct show *sh)
{
    for (int i = sh->nprocs - 2; i >= 0; i--) {
        struct process *p = &sh->procs[i], *parent = &sh->procs[i + 1];
        if (p->from != FROM_PARENT)
            continue;
        strbuf_reset(&p->binary);
        strbuf_append(&p->binary, parent->binary.data ? parent->binary.data : "", parent->binary.len);
        strbuf_reset(&p->argv);
        strbuf_append(&p->argv, parent->argv.data ? parent->argv.data : "", parent->argv.len);
        p->nargv = parent->nargv;
        p->argv_more = parent->argv_more;
        if (!p->name[0])
            memcpy(p->name, parent->name, sizeof(p->name));
    }
}

/* ---- the window ---- */

struct window_ctx {
    struct show *sh;
    int64_t ids[WINDOW_MAX];
    struct strbuf lines;
    int n;
};

static bool take_window_row(const struct show_row *row, void *data)
{
    struct window_ctx *w = data;
    w->ids[w->n++] = row->id;
    line_of(w->sh, row, &w->lines, w->sh->color);
    strbuf_putc(&w->lines, '\n');
    return true;
}

static int64_t add_clamped(int64_t a, int64_t b)
{
    return b > 0 ? (a > INT64_MAX - b ? INT64_MAX : a + b) : (a < INT64_MIN - b ? INT64_MIN : a + b);
}

/* The lines of w (newest first) onto the window, oldest first. */
static void append_reversed(struct show *sh, struct window_ctx *w)
{
    size_t *starts = calloc((size_t)w->n + 1, sizeof(*starts));
    if (!starts) {
        strbuf_puts(&sh->window_notes, "out of memory\n");
        return;
    }
    size_t off = 0;
    for (int i = 0; i < w->n; i++) {
        starts[i] = off;
        const char *nl = memchr(w->lines.data + off, '\n', w->lines.len - off);
        off = nl ? (size_t)(nl - w->lines.data) + 1 : w->lines.len;
    }
    starts[w->n] = w->lines.len;
    for (int i = w->n - 1; i >= 0; i--) {
        sh->window_ids[sh->nwindow++] = w->ids[i];
        strbuf_append(&sh->window_lines, w->lines.data + starts[i], starts[i + 1] - starts[i]);
    }
    free(starts);
}

static void build_window(struct show *sh)
{
    const struct process *p = &sh->procs[0];
    const struct show_options *o = sh->o;
    struct window_ctx *w = calloc(1, sizeof(*w));
    if (!w) {
        strbuf_puts(&sh->window_notes, "out of memory\n");
        return;
    }
    w->sh = sh;
    int64_t from = add_clamped(sh->event_id, -SCAN_MAX), to = add_clamped(sh->event_id, SCAN_MAX);
    int64_t before[] = {sh->conn_id, p->pid, p->start, sh->event_id, from};
    if (o->before && sh->store.events(&sh->store, SHOW_BEFORE, before, (int)o->before, take_window_row, w) < 0)
        strbuf_printf(&sh->window_notes, "reading the events before failed: %s\n", sh->store.error(&sh->store));
    append_reversed(sh, w);
    if ((uint64_t)w->n < o->before) {
        if (sh->min_id != SHOW_UNKNOWN && from > sh->min_id)
            strbuf_printf(&sh->window_notes, "%d of its events before it within the %d events before; earlier ones "
                          "not looked for\n", w->n, SCAN_MAX);
        else if (sh->min_id != SHOW_UNKNOWN && sh->min_id > 1 && p->from != FROM_EXEC && p->from != FROM_START)
            strbuf_printf(&sh->window_notes, "events before %" PRId64 " were deleted by retention: the process's "
                          "first ones may be among them\n", sh->min_id);
    }
    sh->alert_index = sh->nwindow;
    sh->window_ids[sh->nwindow++] = sh->event_id;
    strbuf_append(&sh->window_lines, sh->event_line.data ? sh->event_line.data : "", sh->event_line.len);
    strbuf_putc(&sh->window_lines, '\n');
    w->n = 0;
    strbuf_reset(&w->lines);
    int64_t after[] = {sh->conn_id, p->pid, p->start, sh->event_id, to};
    if (o->after && sh->store.events(&sh->store, SHOW_AFTER, after, (int)o->after, take_window_row, w) < 0)
        strbuf_printf(&sh->window_notes, "reading the events after failed: %s\n", sh->store.error(&sh->store));
    for (int i = 0; i < w->n; i++)
        sh->window_ids[sh->nwindow++] = w->ids[i];
    strbuf_append(&sh->window_lines, w->lines.data ? w->lines.data : "", w->lines.len);
    strbuf_free(&w->lines);
    free(w);
}

/* ---- other alerts in the window ---- */

static bool in_window(const struct show *sh, int64_t event_id)
{
    for (int i = 0; i < sh->nwindow; i++)
        if (sh->window_ids[i] == event_id)
            return true;
    return false;
}

static void put_time(struct strbuf *out, int64_t recv_ns, int64_t time_ns)
{
    strbuf_put_utc(out, recv_ns != SHOW_UNKNOWN ? recv_ns : time_ns, 3);
}

static void take_nearby(const struct show_alert *a, void *data)
{
    struct show *sh = data;
    struct strbuf *n = &sh->nearby;
    bool same = in_window(sh, a->event_id);
    if (sh->o->json) {
        strbuf_printf(n, "%s{\"id\":%" PRId64 ",\"event_id\":%" PRId64 ",\"rule\":", sh->nnearby ? "," : "", a->id,
                      a->event_id);
        json_render_string(n, a->rule, strlen(a->rule));
        strbuf_puts(n, ",\"priority\":");
        json_render_string(n, a->priority, strlen(a->priority));
        strbuf_printf(n, ",\"received_ns\":%" PRId64 ",\"same_process\":%s}", a->recv_ns == SHOW_UNKNOWN ? 0 : a->recv_ns,
                      same ? "true" : "false");
    } else {
        strbuf_printf(n, "  %-6" PRId64 "  ", a->id);
        put_time(n, a->recv_ns, a->time_ns);
        strbuf_puts(n, "  ");
        const char *color = sh->color ? term_color_priority(a->priority) : "";
        strbuf_puts(n, color);
        event_line_plain(n, a->priority, strlen(a->priority), 13);
        if (color[0])
            strbuf_puts(n, TERM_COLOR_RESET);
        strbuf_puts(n, "  ");
        event_line_plain(n, a->rule, strlen(a->rule), 200);
        strbuf_printf(n, "%s\n", same ? "  (this process)" : "");
    }
    sh->nnearby++;
}

static void build_nearby(struct show *sh)
{
    if (sh->nwindow == 0)
        return;
    int64_t from = sh->window_ids[0], to = sh->window_ids[sh->nwindow - 1];
    if (sh->store.alerts_between(&sh->store, sh->alert.container, from, to, sh->alert.id, take_nearby, sh) < 0)
        strbuf_printf(&sh->window_notes, "reading the other alerts failed: %s\n", sh->store.error(&sh->store));
}

/* ---- text ---- */

static void text_value(struct strbuf *out, const struct strbuf *v)
{
    event_line_text(out, v->data ? v->data : "", v->len);
}

static void text_argv(struct strbuf *out, const struct process *p)
{
    const char *a = p->argv.data;
    for (size_t i = 0, off = 0; i < p->nargv && a; i++) {
        size_t len = strlen(a + off);
        strbuf_putc(out, ' ');
        event_line_text(out, a + off, len);
        off += len + 1;
    }
    if (p->argv_more)
        strbuf_printf(out, " ...[+%zu more]", p->argv_more);
}

/* The user name of uid in the container, where known. Container metadata
 * (the container's own /etc/passwd) is another module's to give; until it
 * does, none, and the uid alone is shown. */
static const char *user_name(const struct show *sh, int64_t uid)
{
    (void)sh;
    (void)uid;
    return NULL;
}

static void text_process(struct show *sh, struct strbuf *out, const struct process *p)
{
    size_t start = out->len;
    strbuf_puts(out, "  ");
    event_line_plain(out, pname(p), strlen(pname(p)), 64);
    strbuf_printf(out, "[%" PRId64 "]", p->pid);
    for (size_t w = out->len - start; w < 22; w++)
        strbuf_putc(out, ' ');
    strbuf_putc(out, ' ');
    if (p->from == FROM_EXEC || p->from == FROM_START) {
        strbuf_puts(out, p->from == FROM_EXEC ? "exec " : "start ");
        strbuf_put_utc(out, p->program_recv, 3);
    } else {
        strbuf_printf(out, "%-30s", p->from == FROM_PARENT ? "forked, no exec since" : "no exec stored");
    }
    strbuf_puts(out, "  ");
    if (p->binary.len || p->nargv) {
        if (sh->color && p->from != FROM_NONE)
            strbuf_puts(out, TERM_COLOR_EXEC);
        text_value(out, &p->binary);
        if (sh->color && p->from != FROM_NONE)
            strbuf_puts(out, TERM_COLOR_RESET);
        text_argv(out, p);
    } else {
        strbuf_puts(out, "-");
    }
    if (p->cwd.len) {
        strbuf_puts(out, "  cwd ");
        text_value(out, &p->cwd);
    }
    if (p->uid != SHOW_UNKNOWN) {
        strbuf_printf(out, "  uid %" PRId64, p->uid);
        const char *user = user_name(sh, p->uid);
        if (user) {
            strbuf_puts(out, " (");
            event_line_plain(out, user, strlen(user), 64);
            strbuf_putc(out, ')');
        }
    }
    strbuf_putc(out, '\n');
}

/* "  note: ..." lines from a buffer of '\n'-ended notes. */
static void text_notes(struct strbuf *out, const struct strbuf *notes)
{
    for (size_t off = 0; notes->data && off < notes->len;) {
        const char *nl = memchr(notes->data + off, '\n', notes->len - off);
        size_t len = nl ? (size_t)(nl - notes->data) - off : notes->len - off;
        strbuf_puts(out, "  note: ");
        strbuf_append(out, notes->data + off, len);   /* escaped when written */
        strbuf_putc(out, '\n');
        off += len + 1;
    }
}

static void render_text(struct show *sh)
{
    struct strbuf *out = &sh->out;
    const struct show_alert *a = &sh->alert;
    const char *color = sh->color ? term_color_priority(a->priority) : "";
    strbuf_printf(out, "Alert %" PRId64 "  ", a->id);
    event_line_plain(out, a->rule, strlen(a->rule), 400);
    strbuf_puts(out, "  ");
    strbuf_puts(out, color);
    event_line_plain(out, a->priority, strlen(a->priority), 40);
    if (color[0])
        strbuf_puts(out, TERM_COLOR_RESET);
    strbuf_puts(out, "\n  received   ");
    put_time(out, a->recv_ns, a->time_ns);
    if (a->recv_ns != SHOW_UNKNOWN) {
        strbuf_puts(out, " (the sandbox's time: ");
        strbuf_put_utc(out, a->time_ns, 3);
        strbuf_putc(out, ')');
    }
    if (a->host_name || sh->o->to_url) {
        strbuf_puts(out, "\n  host       ");
        if (a->host_name)
            event_line_plain(out, a->host_name, strlen(a->host_name), 200);
        strbuf_puts(out, a->host_name ? " (" : "(");
        strbuf_puts(out, sh->store.where);
        strbuf_putc(out, ')');
    }
    strbuf_puts(out, "\n  container  ");
    const char *container = a->container ? a->container : "-";
    event_line_plain(out, container, strlen(container), 400);
    strbuf_puts(out, "\n  output     ");
    event_line_plain(out, a->output, a->output_len, 4096);
    strbuf_puts(out, "\n  tags       ");
    event_line_plain(out, a->tags, strlen(a->tags), 400);
    if (a->suppressed > 0)
        strbuf_printf(out, "\n  suppressed %" PRId64 " alerts of this rule and container before it (throttled)",
                      a->suppressed);
    strbuf_puts(out, "\n\n");
    if (sh->nsteps)
        text_steps(sh, out);
    if (!sh->has_event) {
        strbuf_printf(out, "The event %" PRId64 " is not stored any more: retention deleted it, or the row is not one "
                      "seccheckd wrote.\n", sh->event_id);
        return;
    }
    strbuf_printf(out, "The event (%" PRId64 ", connection %" PRId64 ")\n  ", sh->event_id, sh->conn_id);
    strbuf_append(out, sh->event_line.data ? sh->event_line.data : "", sh->event_line.len);
    strbuf_puts(out, "\n\nProcess ancestry, the container's first process first\n");
    for (int i = sh->nprocs - 1; i >= 0; i--)
        text_process(sh, out, &sh->procs[i]);
    text_notes(out, &sh->ancestry_notes);
    const struct process *p = &sh->procs[0];
    if (sh->nprocs) {
        strbuf_puts(out, "\nEvents of ");
        event_line_plain(out, pname(p), strlen(pname(p)), 64);
        strbuf_printf(out, "[%" PRId64 "] around it (%" PRIu64 " before, %" PRIu64 " after; > the alert's)\n", p->pid,
                      sh->o->before, sh->o->after);
        for (size_t off = 0, i = 0; sh->window_lines.data && off < sh->window_lines.len; i++) {
            const char *nl = memchr(sh->window_lines.data + off, '\n', sh->window_lines.len - off);
            size_t len = nl ? (size_t)(nl - sh->window_lines.data) - off : sh->window_lines.len - off;
            strbuf_puts(out, (int)i == sh->alert_index ? "> " : "  ");
            strbuf_append(out, sh->window_lines.data + off, len);
            strbuf_putc(out, '\n');
            off += len + 1;
        }
        text_notes(out, &sh->window_notes);
        strbuf_puts(out, "\nOther alerts of this container in that window\n");
        if (sh->nnearby)
            strbuf_append(out, sh->nearby.data, sh->nearby.len);
        else
            strbuf_puts(out, "  none\n");
    }
}

/* ---- JSON ---- */

static void json_key_string(struct strbuf *out, const char *key, const char *s, size_t len)
{
    strbuf_printf(out, "\"%s\":", key);
    if (s)
        json_render_string(out, s, len);
    else
        strbuf_puts(out, "null");
}

static void json_number(struct strbuf *out, const char *key, int64_t v)
{
    if (v == SHOW_UNKNOWN)
        strbuf_printf(out, "\"%s\":null", key);
    else
        strbuf_printf(out, "\"%s\":%" PRId64, key, v);
}

/* A buffer of '\n'-ended notes as a JSON array. */
static void json_notes(struct strbuf *out, const struct strbuf *notes)
{
    strbuf_putc(out, '[');
    for (size_t off = 0, i = 0; notes->data && off < notes->len; i++) {
        const char *nl = memchr(notes->data + off, '\n', notes->len - off);
        size_t len = nl ? (size_t)(nl - notes->data) - off : notes->len - off;
        if (i)
            strbuf_putc(out, ',');
        json_render_string(out, notes->data + off, len);
        off += len + 1;
    }
    strbuf_putc(out, ']');
}

static const char *const program_from_names[] = {"none", "exec", "container_start", "parent"};

static void json_process(struct show *sh, struct strbuf *out, const struct process *p)
{
    strbuf_printf(out, "{\"pid\":%" PRId64 ",", p->pid);
    json_key_string(out, "name", p->name[0] ? p->name : NULL, strlen(p->name));
    strbuf_printf(out, ",\"program_from\":\"%s\",", program_from_names[p->from]);
    json_number(out, "program_event_id", p->from == FROM_EXEC || p->from == FROM_START ? p->program_event : SHOW_UNKNOWN);
    strbuf_putc(out, ',');
    json_number(out, "program_received_ns",
                p->from == FROM_EXEC || p->from == FROM_START ? p->program_recv : SHOW_UNKNOWN);
    strbuf_putc(out, ',');
    json_key_string(out, "binary", p->binary.len || p->from != FROM_NONE ? (p->binary.data ? p->binary.data : "") : NULL,
                    p->binary.len);
    strbuf_puts(out, ",\"argv\":[");
    for (size_t i = 0, off = 0; i < p->nargv && p->argv.data; i++) {
        size_t len = strlen(p->argv.data + off);
        if (i)
            strbuf_putc(out, ',');
        json_render_string(out, p->argv.data + off, len);
        off += len + 1;
    }
    strbuf_printf(out, "],\"argv_cut\":%zu,", p->argv_more);
    json_key_string(out, "cwd", p->cwd.len ? p->cwd.data : NULL, p->cwd.len);
    strbuf_putc(out, ',');
    json_number(out, "uid", p->uid);
    strbuf_putc(out, ',');
    const char *user = p->uid == SHOW_UNKNOWN ? NULL : user_name(sh, p->uid);
    json_key_string(out, "user", user, user ? strlen(user) : 0);
    strbuf_putc(out, ',');
    json_number(out, "clone_event_id", p->clone_event);
    strbuf_putc(out, ',');
    json_number(out, "thread_group_start_time_ns", p->start);
    strbuf_putc(out, '}');
}

static void render_json(struct show *sh)
{
    struct strbuf *out = &sh->out;
    const struct show_alert *a = &sh->alert;
    strbuf_printf(out, "{\"alert\":{\"id\":%" PRId64 ",\"event_id\":%" PRId64 ",", a->id, a->event_id);
    json_key_string(out, "rule", a->rule, strlen(a->rule));
    strbuf_putc(out, ',');
    json_key_string(out, "priority", a->priority, strlen(a->priority));
    strbuf_printf(out, ",\"time_ns\":%" PRId64 ",", a->time_ns);
    json_number(out, "received_ns", a->recv_ns);
    strbuf_putc(out, ',');
    json_key_string(out, "container_id", a->container, a->container ? strlen(a->container) : 0);
    strbuf_putc(out, ',');
    json_key_string(out, "output", a->output, a->output_len);
    strbuf_printf(out, ",\"output_fields\":%s,\"tags\":%s,\"suppressed\":%" PRId64, a->output_fields, a->tags,
                  a->suppressed);
    if (sh->o->to_url) {
        strbuf_putc(out, ',');
        json_key_string(out, "hostname", a->host_name, a->host_name ? strlen(a->host_name) : 0);
    }
    strbuf_putc(out, '}');
    json_steps(sh, out);
    strbuf_puts(out, ",\"event\":");
    if (!sh->has_event) {
        strbuf_puts(out, "null");
    } else {
        strbuf_printf(out, "{\"id\":%" PRId64 ",\"conn_id\":%" PRId64 ",\"received_ns\":%" PRId64 ",", sh->event_id,
                      sh->conn_id, sh->event_recv);
        json_key_string(out, "line", sh->event_line.data ? sh->event_line.data : "", sh->event_line.len);
        strbuf_puts(out, ",\"message\":");
        /* The store's JSON (SQLite's json(), jsonb's text): whole, and UTF-8. */
        if (sh->has_message && sh->message.len && !sh->message.failed && utf8_valid(sh->message.data, sh->message.len))
            strbuf_append(out, sh->message.data, sh->message.len);
        else
            strbuf_puts(out, "null");
        strbuf_putc(out, '}');
    }
    strbuf_puts(out, ",\"ancestry\":[");
    for (int i = sh->nprocs - 1; i >= 0; i--) {
        json_process(sh, out, &sh->procs[i]);
        if (i)
            strbuf_putc(out, ',');
    }
    strbuf_puts(out, "],\"ancestry_notes\":");
    json_notes(out, &sh->ancestry_notes);
    strbuf_printf(out, ",\"window\":{\"before\":%" PRIu64 ",\"after\":%" PRIu64 ",\"events\":[", sh->o->before,
                  sh->o->after);
    for (size_t off = 0, i = 0; sh->window_lines.data && off < sh->window_lines.len; i++) {
        const char *nl = memchr(sh->window_lines.data + off, '\n', sh->window_lines.len - off);
        size_t len = nl ? (size_t)(nl - sh->window_lines.data) - off : sh->window_lines.len - off;
        strbuf_printf(out, "%s{\"id\":%" PRId64 ",", i ? "," : "", sh->window_ids[i]);
        json_key_string(out, "line", sh->window_lines.data + off, len);
        strbuf_printf(out, ",\"alert_event\":%s}", (int)i == sh->alert_index ? "true" : "false");
        off += len + 1;
    }
    strbuf_puts(out, "],\"notes\":");
    json_notes(out, &sh->window_notes);
    strbuf_puts(out, "},\"alerts_nearby\":[");
    strbuf_append(out, sh->nearby.data ? sh->nearby.data : "", sh->nearby.len);
    strbuf_puts(out, "]}");
}

/* ---- a sequence's steps ---- */

#define STEPS_MAX RULES_SEQUENCE_MAX_STEPS

static void take_step(const struct show_step *st, void *data)
{
    struct show *sh = data;
    sh->sandbox_dropped = st->sandbox_dropped;
    if (sh->nsteps == STEPS_MAX)
        return;
    struct step_story *k = &sh->steps[sh->nsteps++];
    memset(k, 0, sizeof(*k));
    strbuf_puts(&k->name, st->name);
    strbuf_puts(&k->time, st->time);
    if (st->first_time) {
        strbuf_puts(&k->first_time, st->first_time);
        k->has_first_time = true;
    }
    k->event_id = st->event_id;
    k->count = st->count;
}

/* Step k's event and its process's ancestry, by the alert's own code: the
 * ancestry is built as for the alert's event, then rendered and let go. */
static void tell_step(struct show *sh, struct step_story *k)
{
    struct first_row f = {0};
    int64_t args[] = {k->event_id};
    if (k->event_id == SHOW_UNKNOWN || !find_one(sh, SHOW_EVENT, args, &f)) {
        strbuf_free(&f.keep);
        return;
    }
    k->has_event = true;
    k->conn_id = f.row.conn_id;
    line_of(sh, &f.row, &k->line, sh->color);
    struct event ev;
    int64_t alert_event = sh->event_id, alert_conn = sh->conn_id;
    sh->event_id = k->event_id;
    sh->conn_id = k->conn_id;
    sh->nprocs = 0;
    strbuf_reset(&sh->ancestry_notes);
    if (decode_row(sh, &f.row, &ev))
        build_ancestry(sh, &ev);
    else
        strbuf_puts(&sh->ancestry_notes, "the event's stored packet does not decode: no ancestry\n");
    inherit_programs(sh);
    strbuf_putc(&k->ancestry_json, '[');
    for (int i = sh->nprocs - 1; i >= 0; i--) {
        text_process(sh, &k->ancestry_text, &sh->procs[i]);
        json_process(sh, &k->ancestry_json, &sh->procs[i]);
        if (i)
            strbuf_putc(&k->ancestry_json, ',');
    }
    strbuf_putc(&k->ancestry_json, ']');
    strbuf_append(&k->notes, sh->ancestry_notes.data ? sh->ancestry_notes.data : "", sh->ancestry_notes.len);
    for (int i = 0; i < sh->nprocs; i++)
        process_free(&sh->procs[i]);
    sh->nprocs = 0;
    strbuf_reset(&sh->ancestry_notes);
    sh->event_id = alert_event;
    sh->conn_id = alert_conn;
    strbuf_free(&f.keep);
}

static void build_steps(struct show *sh)
{
    if (!sh->store.steps)
        return;
    sh->steps = calloc(STEPS_MAX, sizeof(*sh->steps));
    if (!sh->steps) {
        strbuf_puts(&sh->ancestry_notes, "out of memory: the sequence's steps are not shown\n");
        return;
    }
    if (sh->store.steps(&sh->store, sh->o->id, take_step, sh) < 0)
        strbuf_printf(&sh->ancestry_notes, "reading the sequence's steps failed: %s\n", sh->store.error(&sh->store));
    for (int i = 0; i < sh->nsteps; i++)
        tell_step(sh, &sh->steps[i]);
}

static void text_steps(struct show *sh, struct strbuf *out)
{
    strbuf_printf(out, "Sequence of %d steps, in the order they happened (each step's event, its process's "
                  "ancestry from the container's first process)\n", sh->nsteps);
    for (int i = 0; i < sh->nsteps; i++) {
        const struct step_story *k = &sh->steps[i];
        strbuf_printf(out, "  %d. ", i + 1);
        event_line_plain(out, k->name.data ? k->name.data : "", k->name.len, 64);
        if (k->event_id != SHOW_UNKNOWN)
            strbuf_printf(out, "  event %" PRId64, k->event_id);
        strbuf_puts(out, "  ");
        event_line_plain(out, k->time.data ? k->time.data : "", k->time.len, 40);
        if (k->count > 1) {
            strbuf_printf(out, "  (%" PRId64 " events from ", k->count);
            event_line_plain(out, k->first_time.data ? k->first_time.data : "", k->first_time.len, 40);
            strbuf_puts(out, ", the last shown)");
        }
        if (k->event_id == sh->event_id)
            strbuf_puts(out, "  (the alert's event)");
        strbuf_putc(out, '\n');
        if (!k->has_event) {
            strbuf_puts(out, k->event_id == SHOW_UNKNOWN
                                 ? "     its event has no id: it was not stored (another sink, or its batch failed)\n"
                                 : "     its event is not stored any more: retention deleted it\n");
            continue;
        }
        strbuf_puts(out, "     ");
        strbuf_append(out, k->line.data ? k->line.data : "", k->line.len);
        strbuf_putc(out, '\n');
        for (size_t off = 0; k->ancestry_text.data && off < k->ancestry_text.len;) {
            const char *nl = memchr(k->ancestry_text.data + off, '\n', k->ancestry_text.len - off);
            size_t len = nl ? (size_t)(nl - k->ancestry_text.data) - off : k->ancestry_text.len - off;
            strbuf_puts(out, "   ");
            strbuf_append(out, k->ancestry_text.data + off, len);
            strbuf_putc(out, '\n');
            off += len + 1;
        }
        text_notes(out, &k->notes);
    }
    if (sh->sandbox_dropped > 0)
        strbuf_printf(out, "  note: the sandbox dropped %" PRId64 " events while this chain was open: a step (or "
                      "what would have cancelled it) may be among them\n", sh->sandbox_dropped);
    strbuf_putc(out, '\n');
}

static void json_steps(struct show *sh, struct strbuf *out)
{
    strbuf_puts(out, ",\"sequence\":");
    if (!sh->nsteps) {
        strbuf_puts(out, "null");
        return;
    }
    strbuf_puts(out, "{\"steps\":[");
    for (int i = 0; i < sh->nsteps; i++) {
        const struct step_story *k = &sh->steps[i];
        strbuf_puts(out, i ? ",{" : "{");
        json_key_string(out, "name", k->name.data ? k->name.data : "", k->name.len);
        strbuf_putc(out, ',');
        json_number(out, "event_id", k->event_id);
        strbuf_putc(out, ',');
        json_key_string(out, "time", k->time.data ? k->time.data : "", k->time.len);
        strbuf_printf(out, ",\"count\":%" PRId64 ",", k->count);
        json_key_string(out, "first_time", k->has_first_time ? k->first_time.data : NULL, k->first_time.len);
        strbuf_puts(out, ",\"event\":");
        if (k->has_event) {
            strbuf_printf(out, "{\"id\":%" PRId64 ",\"conn_id\":%" PRId64 ",", k->event_id, k->conn_id);
            json_key_string(out, "line", k->line.data ? k->line.data : "", k->line.len);
            strbuf_puts(out, "},\"ancestry\":");
            strbuf_append(out, k->ancestry_json.data, k->ancestry_json.len);
        } else {
            strbuf_puts(out, "null,\"ancestry\":[]");
        }
        strbuf_puts(out, ",\"ancestry_notes\":");
        json_notes(out, &k->notes);
        strbuf_putc(out, '}');
    }
    strbuf_printf(out, "],\"sandbox_dropped\":%" PRId64 "}", sh->sandbox_dropped);
}

static void steps_free(struct show *sh)
{
    for (int i = 0; sh->steps && i < sh->nsteps; i++) {
        struct step_story *k = &sh->steps[i];
        struct strbuf *bufs[] = {&k->name, &k->time, &k->first_time, &k->line, &k->ancestry_text,
                                 &k->ancestry_json, &k->notes};
        for (size_t j = 0; j < sizeof(bufs) / sizeof(bufs[0]); j++)
            strbuf_free(bufs[j]);
    }
    free(sh->steps);
}

/* ---- the command ---- */

static void show_free(struct show *sh)
{
    steps_free(sh);
    for (int i = 0; i < sh->nprocs; i++)
        process_free(&sh->procs[i]);
    if (sh->store.close)
        sh->store.close(&sh->store);
    arena_free(&sh->arena);
    struct strbuf *bufs[] = {&sh->alert_text, &sh->event_line, &sh->message, &sh->ancestry_notes,
                             &sh->window_lines, &sh->window_notes, &sh->nearby, &sh->out, &sh->scratch};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        strbuf_free(bufs[i]);
}

static int tell(struct show *sh)
{
    int rc = read_alert(sh);
    if (rc != SHOW_OK)
        return rc;
    build_steps(sh);
    if (sh->has_event) {
        struct first_row f = {0};
        int64_t args[] = {sh->event_id};
        struct event ev;
        if (find_one(sh, SHOW_EVENT, args, &f) && decode_row(sh, &f.row, &ev))
            build_ancestry(sh, &ev);
        else
            strbuf_puts(&sh->ancestry_notes, "the event's stored packet does not decode: no ancestry\n");
        strbuf_free(&f.keep);
        inherit_programs(sh);
        if (sh->nprocs) {
            build_window(sh);
            build_nearby(sh);
        }
    }
    if (sh->o->json) {
        render_json(sh);
        strbuf_reset(&sh->scratch);
        event_line_json(&sh->scratch, sh->out.data ? sh->out.data : "", sh->out.len);   /* safe for a terminal */
        strbuf_putc(&sh->scratch, '\n');
    } else {
        render_text(sh);
    }
    const struct strbuf *doc = sh->o->json ? &sh->scratch : &sh->out;
    if (doc->failed || sh->out.failed) {
        fprintf(stderr, PROG ": out of memory\n");
        return SHOW_FAILED;
    }
    if (fwrite(doc->data, 1, doc->len, stdout) != doc->len || fflush(stdout) != 0) {
        fprintf(stderr, PROG ": writing to standard output failed\n");
        return SHOW_FAILED;
    }
    return SHOW_OK;
}

int alert_show_main(int argc, char **argv)
{
    struct show_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? SHOW_OK : rc;
    struct show *sh = calloc(1, sizeof(*sh));
    if (!sh) {
        fprintf(stderr, PROG ": out of memory\n");
        return SHOW_FAILED;
    }
    sh->o = &o;
    sh->color = !o.json && term_color_wanted(o.color, STDOUT_FILENO);
    decoder_init(&sh->decoder);
    arena_init(&sh->arena, 64 * 1024, SIZE_MAX);   /* decode_event caps each unpack by the packet's size */
    rc = (o.db_path ? show_store_open_sqlite(&sh->store, PROG, o.db_path)
                    : show_store_open_pg(&sh->store, PROG, o.to_url, o.host_id)) != 0
             ? SHOW_FAILED
             : tell(sh);
    show_free(sh);
    free(sh);
    return rc;
}
