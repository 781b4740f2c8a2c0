/* containers.c - `seccheckd containers`: the containers view, for people.
 *
 * One statement over the database's `containers` view (views.sql.h), read
 * beside a running daemon as `seccheckd events` reads (sqlutil_open_reader:
 * the daemon never waits for it). Every name comes from a state file or a
 * sandbox, so each cell is escaped and cut (event_line_plain) and the JSON
 * lines neutralize what a terminal acts on (event_line_json).
 */
#include "containers.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sqlite3.h>

#include "cli.h"
#include "container_filter.h"
#include "event_line.h"
#include "sqlutil.h"
#include "strbuf.h"

#define PROG "seccheckd containers"

struct containers_options {
    const char *db_path;
    struct container_filter filter;
    bool json;
};

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: seccheckd containers --db PATH [--container ID|NAME] [--pod NAME] [--namespace NAME] [--json]\n"
            "\n"
            "The containers the database saw: id, the container, pod and namespace names and the\n"
            "image runsc's state file gave (--runsc-root; '-' when not known, LOOKUP says why), first\n"
            "and last seen (UTC), events and alerts.\n"
            "\n"
            "  --db PATH          the daemon's database (read only; the daemon never waits for it)\n"
            "  --container X      only the container of this id or name\n"
            "  --pod NAME         only this pod's containers\n"
            "  --namespace NAME   only this namespace's containers\n"
            "  --json             one JSON object per container instead of the table\n"
            "  -h, --help         this text\n");
}

static int parse_options(int argc, char **argv, struct containers_options *o)
{
    static const struct option longopts[] = {
        {"db", required_argument, NULL, 'd'},       {"container", required_argument, NULL, 'c'},
        {"pod", required_argument, NULL, 'p'},      {"namespace", required_argument, NULL, 'n'},
        {"json", no_argument, NULL, 'j'},           {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, CLI_GETOPT_QUIET "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': o->db_path = optarg; break;
        case 'c': o->filter.container = optarg; break;
        case 'p': o->filter.pod = optarg; break;
        case 'n': o->filter.ns = optarg; break;
        case 'j': o->json = true; break;
        case 'h': usage(stdout); return -1;
        default: cli_report_getopt_error(PROG, c, argv); return 2;
        }
    }
    if (optind < argc)
        return cli_usage_error(PROG, "unexpected argument", argv[optind]);
    if (!o->db_path)
        return cli_usage_error(PROG, "--db PATH is required", NULL);
    return 0;
}

static const char *col(sqlite3_stmt *st, int i)
{
    const char *s = (const char *)sqlite3_column_text(st, i);
    return s && s[0] ? s : "-";
}

static void cell(struct strbuf *line, const char *text, size_t width)
{
    size_t before = line->len;
    event_line_plain(line, text, strlen(text), width);
    for (size_t n = line->len - before; n < width + 2; n++)
        strbuf_putc(line, ' ');
}

static const char *const headers[] = {"CONTAINER", "NAME", "POD", "NAMESPACE", "IMAGE", "FIRST SEEN (UTC)",
                                      "LAST SEEN (UTC)", "EVENTS", "ALERTS", "LOOKUP"};
static const size_t widths[] = {20, 20, 24, 16, 40, 24, 24, 8, 6, 8};
#define NCOLS (sizeof(widths) / sizeof(widths[0]))

static const char select_sql[] =
    "SELECT container_id, name, pod_name, pod_namespace, image, first_seen, last_seen, events, alerts,"
    " coalesce(lookup, 'none'),"
    " json_object('container_id', container_id, 'name', name, 'pod_name', pod_name, 'pod_namespace',"
    "  pod_namespace, 'image', image, 'image_repository', image_repository, 'image_tag', image_tag,"
    "  'is_sandbox', is_sandbox, 'user_name', user_name, 'lookup', lookup, 'lookup_why', lookup_why,"
    "  'first_seen', first_seen, 'last_seen', last_seen, 'events', events, 'execs', execs, 'alerts', alerts,"
    "  'sandbox_dropped', sandbox_dropped)"
    " FROM containers WHERE 1";

static int print_rows(sqlite3 *db, const struct containers_options *o)
{
    struct strbuf sql = {0}, line = {0};
    strbuf_puts(&sql, select_sql);
    container_filter_sql(&sql, &o->filter, "container_id", 1, sqlutil_has(db, "table", "container_info"));
    strbuf_puts(&sql, " ORDER BY first_seen, container_id");
    sqlite3_stmt *st = NULL;
    int rc = sql.failed ? SQLITE_NOMEM : sqlite3_prepare_v2(db, sql.data, -1, &st, NULL);
    if (rc != SQLITE_OK) {
        fprintf(stderr, PROG ": %s: %s (is it a seccheckd database?)\n", o->db_path, sqlite3_errmsg(db));
        strbuf_free(&sql);
        return 1;
    }
    container_filter_bind(st, &o->filter, 1);
    if (!o->json) {
        for (size_t i = 0; i < NCOLS; i++)
            cell(&line, headers[i], widths[i]);
        while (line.len && line.data[line.len - 1] == ' ')
            line.len--;
        printf("%.*s\n", (int)line.len, line.data);
    }
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        strbuf_reset(&line);
        if (o->json) {
            const char *j = (const char *)sqlite3_column_text(st, (int)NCOLS);
            event_line_json(&line, j ? j : "{}", j ? strlen(j) : 2);
        } else {
            for (size_t i = 0; i < NCOLS; i++)
                cell(&line, col(st, (int)i), widths[i]);
            while (line.len && line.data[line.len - 1] == ' ')
                line.len--;
        }
        printf("%.*s\n", (int)line.len, line.data);
    }
    int status = rc == SQLITE_DONE ? 0 : 1;
    if (status)
        fprintf(stderr, PROG ": %s: %s\n", o->db_path, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    strbuf_free(&sql);
    strbuf_free(&line);
    if (fflush(stdout) != 0 && errno != EPIPE) {
        fprintf(stderr, PROG ": writing to standard output: %s\n", strerror(errno));
        status = 1;
    }
    return status;
}

int containers_main(int argc, char **argv)
{
    struct containers_options o = {0};
    int rc = parse_options(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    sqlite3 *db = NULL;
    if (sqlutil_open_reader(o.db_path, &db) != SQLITE_OK) {
        fprintf(stderr, PROG ": cannot open %s: %s\n", o.db_path, db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return 1;
    }
    rc = print_rows(db, &o);
    sqlite3_close(db);
    return rc;
}
