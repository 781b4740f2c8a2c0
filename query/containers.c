/* containers.c - `seccheckd containers`: the containers view, for people.
 *
 * One statement over the database's `containers` view (views.sql.h), read
 * beside a running daemon as `seccheckd events` reads (sqlutil_open_reader:
 * the daemon never waits for it). Every name comes from a state file or a
 * sandbox, so each cell is escaped and cut (event_line_plain) and the JSON
 * lines neutralize what a terminal acts on (event_line_json). --to reads
 * the central copy's containers view (forward/central_views.sql.h) the
 * same way: one host's containers, or every host's with its id first.
 */
#include "containers.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <libpq-fe.h>

#include "central.h"
#include "cli.h"
#include "container_filter.h"
#include "event_line.h"
#include "central_urls.h"
#include "host_id.h"
#include "sqlutil.h"
#include "strbuf.h"

#define PROG "seccheckd containers"

struct containers_options {
    const char *db_path;
    const char *to_url;             /* the central copy instead (the first --to) */
    struct central_urls to;         /* every --to: one database per partition, merged */
    const char *host_id;            /* --to: one host (default: this host's id) */
    bool all_hosts;
    struct container_filter filter;
    bool json;
};

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: seccheckd containers (--db PATH | --to URL [--host-id ID | --all-hosts])\n"
            "                            [--container ID|NAME] [--pod NAME] [--namespace NAME] [--json]\n"
            "\n"
            "The containers the database saw: id, the container, pod and namespace names and the\n"
            "image runsc's state file gave (--runsc-root; '-' when not known, LOOKUP says why), first\n"
            "and last seen (UTC), events and alerts.\n"
            "\n"
            "  --db PATH          the daemon's database (read only; the daemon never waits for it)\n"
            "  --to URL           the central PostgreSQL that seccheckd forward ships to (again for\n"
            "                     each partition's database: their rows merged as one's)\n"
            "  --host-id ID       --to: this host's containers [the id forward ships as: /etc/machine-id]\n"
            "  --all-hosts        --to: every host's, a HOST ID column first\n"
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
        {"to", required_argument, NULL, 'T'},       {"host-id", required_argument, NULL, 'H'},
        {"all-hosts", no_argument, NULL, 'A'},
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
        case 'T':
            if (central_urls_add(&o->to, optarg, PROG) != 0)
                return 2;
            o->to_url = o->to.url[0];
            break;
        case 'H': o->host_id = optarg; break;
        case 'A': o->all_hosts = true; break;
        case 'h': usage(stdout); return -1;
        default: cli_report_getopt_error(PROG, c, argv); return 2;
        }
    }
    if (optind < argc)
        return cli_usage_error(PROG, "unexpected argument", argv[optind]);
    if (!o->db_path && !o->to_url)
        return cli_usage_error(PROG, "--db PATH is required (or --to URL, the central copy)", NULL);
    if (o->db_path && o->to_url)
        return cli_usage_error(PROG, "give --db PATH or --to URL, not both", NULL);
    if (o->db_path && (o->host_id || o->all_hosts))
        return cli_usage_error(PROG, "--host-id and --all-hosts go with --to", NULL);
    if (o->host_id && o->all_hosts)
        return cli_usage_error(PROG, "give --host-id or --all-hosts, not both", NULL);
    return 0;
}

static const char *col(sqlite3_stmt *st, int i)
{
    const char *s = (const char *)sqlite3_column_text(st, i);
    return s && s[0] ? s : "-";
}

/* Bytes of the first n characters of s[0..len) (UTF-8; a byte that is
 * not counts as one). */
static size_t chars_bytes(const char *s, size_t len, size_t n, size_t *chars)
{
    size_t i = 0, c = 0;
    for (; i < len && c < n; c++) {
        i++;
        while (i < len && ((unsigned char)s[i] & 0xc0) == 0x80)
            i++;
    }
    *chars = c;
    return i;
}

/* text escaped in a column of width characters and two spaces: a longer
 * one is cut to width - 3 characters and "...", so the next column starts
 * where the header says. */
static void cell(struct strbuf *line, const char *text, size_t width)
{
    struct strbuf cut = {0};
    event_line_plain(&cut, text, strlen(text), 4 * width);
    size_t chars, all = chars_bytes(cut.data ? cut.data : "", cut.len, SIZE_MAX, &chars);
    if (chars > width) {
        all = chars_bytes(cut.data, cut.len, width - 3, &chars);
        strbuf_append(line, cut.data, all);
        strbuf_puts(line, "...");
        chars += 3;
    } else if (all) {
        strbuf_append(line, cut.data, all);
    }
    strbuf_free(&cut);
    for (; chars < width + 2; chars++)
        strbuf_putc(line, ' ');
}

static const char *const headers[] = {"CONTAINER", "NAME", "POD", "NAMESPACE", "IMAGE", "FIRST SEEN (UTC)",
                                      "LAST SEEN (UTC)", "EVENTS", "ALERTS", "LOOKUP"};
static const size_t widths[] = {20, 20, 24, 16, 40, 24, 24, 8, 6, 8};
#define NCOLS (sizeof(widths) / sizeof(widths[0]))
#define HOST_ID_WIDTH 20   /* --to --all-hosts: a machine-id is 32 hex digits, cut */

static const char select_sql[] =
    "SELECT container_id, name, pod_name, pod_namespace, image, first_seen, last_seen, events, alerts,"
    " coalesce(lookup, 'none'),"
    " json_object('container_id', container_id, 'name', name, 'pod_name', pod_name, 'pod_namespace',"
    "  pod_namespace, 'image', image, 'image_repository', image_repository, 'image_tag', image_tag,"
    "  'is_sandbox', is_sandbox, 'user_name', user_name, 'lookup', lookup, 'lookup_why', lookup_why,"
    "  'first_seen', first_seen, 'last_seen', last_seen, 'events', events, 'execs', execs, 'alerts', alerts,"
    "  'sandbox_dropped', sandbox_dropped)"
    " FROM containers WHERE 1";

static void print_header(struct strbuf *line, bool host_column)
{
    strbuf_reset(line);
    if (host_column)
        cell(line, "HOST ID", HOST_ID_WIDTH);
    for (size_t i = 0; i < NCOLS; i++)
        cell(line, headers[i], widths[i]);
    while (line->len && line->data[line->len - 1] == ' ')
        line->len--;
    printf("%.*s\n", (int)line->len, line->data);
}

/* " AND ..." for the filter over the containers view, parameters ?1 to ?3
 * (container_filter_bind). Each row has its own sandbox's names
 * (views.sql.h): the filters read them there. */
static void filter_rows(struct strbuf *sql, sqlite3 *db, const struct container_filter *f)
{
    bool has_info = sqlutil_has(db, "table", "container_info");
    if (f->container)
        strbuf_puts(sql, has_info ? " AND (container_id = ?1 OR name = ?1)" : " AND container_id = ?1");
    if (f->pod)
        strbuf_puts(sql, has_info ? " AND pod_name = ?2" : " AND ?2 IS NULL");
    if (f->ns)
        strbuf_puts(sql, has_info ? " AND pod_namespace = ?3" : " AND ?3 IS NULL");
}

/* ---- nothing printed: why, on stderr (as seccheckd events says it) ---- */

/* How many containers pass f: local (db) or central (pg, host ""
 * every one). -1 on an error. */
static long long count_passing(sqlite3 *db, PGconn *pg, const char *host, const struct container_filter *f)
{
    if (pg) {
        const char *v[] = {host, f->container, f->pod, f->ns};
        PGresult *res = PQexecParams(pg, "SELECT count(*) FROM containers WHERE ($1 = '' OR host_id = $1)"
                                         " AND ($2::text IS NULL OR container_id = $2 OR name = $2)"
                                         " AND ($3::text IS NULL OR pod_name = $3)"
                                         " AND ($4::text IS NULL OR pod_namespace = $4)", 4, NULL, v, NULL, NULL, 0);
        long long n = PQresultStatus(res) == PGRES_TUPLES_OK ? strtoll(PQgetvalue(res, 0, 0), NULL, 10) : -1;
        PQclear(res);
        return n;
    }
    struct strbuf sql = {0};
    strbuf_puts(&sql, "SELECT count(*) FROM containers WHERE 1");
    filter_rows(&sql, db, f);
    sqlite3_stmt *st = NULL;
    long long n = -1;
    if (!sql.failed && sqlite3_prepare_v2(db, sql.data, -1, &st, NULL) == SQLITE_OK) {
        container_filter_bind(st, f, 1);
        if (sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    strbuf_free(&sql);
    return n;
}

/* No container printed: the database (or the host) holds none yet, or
 * which filter matches none. */
static void explain_nothing(sqlite3 *db, PGconn *pg, const char *host, const struct containers_options *o)
{
    const struct container_filter none = {0}, *f = &o->filter;
    long long all = count_passing(db, pg, host, &none);
    if (all == 0) {
        if (pg)
            fprintf(stderr, PROG ": the central copy holds no containers%s%s yet\n", host[0] ? " of host " : "",
                    host[0] ? host : "");
        else
            fprintf(stderr, PROG ": %s holds no containers yet (no stored event named one)\n", o->db_path);
        return;
    }
    if (!container_filter_any(f) || all < 0)
        return;
    fprintf(stderr, PROG ": no container passes the filters (%lld stored)\n", all);
    const struct {
        const char *option, *value, *why;
        struct container_filter one;
    } each[] = {
        {"--container", f->container, "no container of that id or name", {.container = f->container}},
        {"--pod", f->pod, "no container of that pod", {.pod = f->pod}},
        {"--namespace", f->ns, "no container of that namespace", {.ns = f->ns}},
    };
    for (size_t i = 0; i < sizeof(each) / sizeof(each[0]); i++)
        if (each[i].value && count_passing(db, pg, host, &each[i].one) == 0)
            event_line_say_option(each[i].option, each[i].value, each[i].why);
}

static int print_rows(sqlite3 *db, const struct containers_options *o)
{
    struct strbuf sql = {0}, line = {0};
    strbuf_puts(&sql, select_sql);
    filter_rows(&sql, db, &o->filter);
    strbuf_puts(&sql, " ORDER BY first_seen, container_id");
    sqlite3_stmt *st = NULL;
    int rc = sql.failed ? SQLITE_NOMEM : sqlite3_prepare_v2(db, sql.data, -1, &st, NULL);
    if (rc != SQLITE_OK) {
        fprintf(stderr, PROG ": %s: %s (is it a seccheckd database?)\n", o->db_path, sqlite3_errmsg(db));
        strbuf_free(&sql);
        return 1;
    }
    container_filter_bind(st, &o->filter, 1);
    if (!o->json)
        print_header(&line, false);
    long long printed = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        printed++;
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
    if (status == 0 && printed == 0)
        explain_nothing(db, NULL, "", o);
    strbuf_free(&sql);
    strbuf_free(&line);
    if (fflush(stdout) != 0 && errno != EPIPE) {
        fprintf(stderr, PROG ": writing to standard output: %s\n", strerror(errno));
        status = 1;
    }
    return status;
}

/* ---- the central copy ---- */

/* The central view's times, as the local view writes them (UTC_MS). */
#define PG_UTC_MS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"

/* $1 the host ("" every one), $2 container id or name, $3 pod, $4 namespace. */
static const char central_sql[] =
    "SELECT host_id, container_id, name, pod_name, pod_namespace, image, " PG_UTC_MS("first_seen") ", "
    PG_UTC_MS("last_seen") ", events, alerts, coalesce(lookup, 'none'),"
    " json_build_object('host_id', host_id, 'container_id', container_id, 'name', name, 'pod_name', pod_name,"
    "  'pod_namespace', pod_namespace, 'image', image, 'image_repository', image_repository, 'image_tag',"
    "  image_tag, 'is_sandbox', is_sandbox, 'user_name', user_name, 'lookup', lookup, 'lookup_why', lookup_why,"
    "  'first_seen', " PG_UTC_MS("first_seen") ", 'last_seen', " PG_UTC_MS("last_seen") ", 'events', events,"
    "  'execs', execs, 'alerts', alerts, 'sandbox_dropped', sandbox_dropped)::text"
    " FROM containers WHERE ($1 = '' OR host_id = $1)"
    " AND ($2::text IS NULL OR container_id = $2 OR name = $2)"
    " AND ($3::text IS NULL OR pod_name = $3) AND ($4::text IS NULL OR pod_namespace = $4)"
    " ORDER BY host_id COLLATE \"C\", first_seen, container_id COLLATE \"C\"";

static const char *pg_col(PGresult *res, int row, int i)
{
    const char *s = PQgetisnull(res, row, i) ? NULL : PQgetvalue(res, row, i);
    return s && s[0] ? s : "-";
}

/* Of the databases' results, the one whose next row comes first in the
 * order one database gives (host, first seen, container); -1 none left.
 * Hosts are disjoint between the databases (each is one partition's). */
static int next_of(PGresult *const *res, const int *row, int n)
{
    int best = -1;
    for (int i = 0; i < n; i++) {
        if (row[i] >= PQntuples(res[i]))
            continue;
        if (best < 0) {
            best = i;
            continue;
        }
        static const int key[] = {0, 6, 1};   /* host_id, first_seen, container_id: central_sql's order */
        int c = 0;
        for (int k = 0; k < 3 && c == 0; k++)
            c = strcmp(PQgetvalue(res[i], row[i], key[k]), PQgetvalue(res[best], row[best], key[k]));
        if (c < 0)
            best = i;
    }
    return best;
}

static int query_central(PGconn *pg, const struct containers_options *o, const char *host, PGresult **out)
{
    PGresult *check = PQexec(pg, "SELECT to_regclass('container_names') IS NOT NULL");
    bool current = PQresultStatus(check) == PGRES_TUPLES_OK && strcmp(PQgetvalue(check, 0, 0), "t") == 0;
    PQclear(check);
    if (!current) {
        fprintf(stderr, PROG ": the central database has no container names: no seccheckd forward of this version "
                "has shipped to it yet\n");
        return 1;
    }
    const char *v[] = {host, o->filter.container, o->filter.pod, o->filter.ns};
    PGresult *res = PQexecParams(pg, central_sql, 4, NULL, v, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        char line[512];
        central_message_line(PQresultErrorMessage(res), line, sizeof(line));
        fprintf(stderr, PROG ": reading the central containers view: %s\n", line);
        PQclear(res);
        return 1;
    }
    *out = res;
    return 0;
}

static int print_central(PGconn *const *pg, int n, const struct containers_options *o, const char *host)
{
    PGresult *res[CENTRAL_URLS_MAX] = {NULL};
    int row[CENTRAL_URLS_MAX] = {0}, status = 0;
    for (int i = 0; i < n && status == 0; i++)
        status = query_central(pg[i], o, host, &res[i]);
    struct strbuf line = {0};
    bool host_column = !host[0];
    if (status == 0 && !o->json)
        print_header(&line, host_column);
    for (int i; status == 0 && (i = next_of(res, row, n)) >= 0; row[i]++) {
        int r = row[i];
        strbuf_reset(&line);
        if (o->json) {
            const char *j = PQgetvalue(res[i], r, (int)NCOLS + 1);
            event_line_json(&line, j, strlen(j));
        } else {
            if (host_column)
                cell(&line, pg_col(res[i], r, 0), HOST_ID_WIDTH);
            for (size_t c = 0; c < NCOLS; c++)
                cell(&line, pg_col(res[i], r, (int)c + 1), widths[c]);
            while (line.len && line.data[line.len - 1] == ' ')
                line.len--;
        }
        printf("%.*s\n", (int)line.len, line.data);
    }
    bool none = true;
    for (int i = 0; i < n; i++) {
        none = none && (!res[i] || PQntuples(res[i]) == 0);
        PQclear(res[i]);
    }
    if (status == 0 && none)   /* said from the first database (the host's, for one host) */
        explain_nothing(NULL, pg[0], host, o);
    status = status || line.failed ? 1 : 0;
    strbuf_free(&line);
    if (fflush(stdout) != 0 && errno != EPIPE) {
        fprintf(stderr, PROG ": writing to standard output: %s\n", strerror(errno));
        status = 1;
    }
    return status;
}

static int run_central(const struct containers_options *o)
{
    char err[512], host[HOST_ID_MAX + 1] = "";
    if (!o->all_hosts && host_id_resolve(o->host_id, host, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s\n", err);
        return 2;
    }
    PGconn *pg[CENTRAL_URLS_MAX] = {NULL};
    int rc = 0, n = o->to.n;
    for (int i = 0; i < n && rc == 0; i++)
        if (!(pg[i] = central_connect(o->to.url[i], NULL, err, sizeof(err)))) {
            fprintf(stderr, PROG ": %s\n", err);
            rc = 1;
        }
    int at = 0;
    if (rc == 0 && host[0] && (at = central_urls_find_host(pg, &o->to, host, err, sizeof(err))) < -1) {
        fprintf(stderr, PROG ": %s\n", err);
        rc = 1;
    }
    if (rc == 0)   /* one host: where it is (the first when none: nothing to list) */
        rc = host[0] ? print_central(&pg[at < 0 ? 0 : at], 1, o, host) : print_central(pg, n, o, host);
    for (int i = 0; i < n; i++)
        if (pg[i])
            PQfinish(pg[i]);
    return rc;
}

int containers_main(int argc, char **argv)
{
    struct containers_options o = {0};
    int rc = parse_options(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    if (o.to_url)
        return run_central(&o);
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
