/* central_verify.c - `seccheckd verify --to URL [--host-id ID | --all-hosts]`:
 * recomputes a host's batch chain from its central rows with chain.c, the
 * code the daemon writes it with, and names the first batch that does not
 * verify. Batches recorded in the gaps table (lost on the host before they
 * were shipped) are named and skipped: the chain resumes at their
 * resume_hash.
 *
 * Then the columns people query: every central event's raw is decoded again
 * (event_redecode.h) and what the forwarder would have shipped for it is
 * copied into a temporary table, rendered as the forwarder renders
 * (local_render_value), a few MiB at a time once their batches' hashes
 * verified; a query compares them with the central rows of their id range,
 * detail as jsonb, and they are deleted. The central copy does not know
 * where a host's upgrade from schema version 1 happened, so a row may be in
 * either version's form (version 1: the whole message in detail, the four
 * newer columns NULL).
 *
 * Alerts the same way (chain.h): a batch's alerts' sealed records are
 * hashed after its events, a missing or added one is named by its id, and
 * each alert's columns are compared with what its sealed record holds,
 * rendered as the forwarder renders them (expected_alerts).
 */
#include "central.h"

#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "central_urls.h"
#include "cli.h"
#include "copy_binary.h"
#include "event_line.h"
#include "event_redecode.h"
#include "host_id.h"

#define PROG "seccheckd verify"
#define FETCH_BATCHES "1000"
#define LIST_MAX 20                       /* altered events named; the rest are counted */
#define EXPECTED_FLUSH_BYTES (4u << 20)   /* COPY what is rendered at this size */

enum { VERIFY_OK = 0, VERIFY_BAD = 1, VERIFY_USAGE = 2 };

static int64_t be64(const char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | (unsigned char)p[i];
    return (int64_t)v;
}

/* Binary int8 column, or 0 when NULL. */
static int64_t col_int(const PGresult *r, int row, int col, bool *null)
{
    bool is_null = PQgetisnull(r, row, col) || PQgetlength(r, row, col) != 8;
    if (null)
        *null = is_null;
    return is_null ? 0 : be64(PQgetvalue(r, row, col));
}

struct gap {
    int64_t first, last;
    uint8_t resume[CHAIN_HASH_LEN];
};

struct cverifier {
    PGconn *pg;
    const char *host;
    /* The host id as printed: chosen by the host (any UTF-8 the central
     * text column takes, C1 controls and bidirectional overrides too), so
     * escaped as every other such string (event_line.h). */
    char shown[4 * HOST_ID_MAX + 64];
    struct chain *chain;
    struct gap *gaps;
    int ngaps;
    bool hash_only;
    bool all_hosts;
    /* The rows the forwarder would have shipped, decoded again from the
     * central raw, waiting to be copied into expected_events. */
    struct event_redecoder redecoder;
    struct strbuf expected;
    int64_t expected_rows, expected_lo, expected_hi;   /* their event ids */
    int64_t altered, listed;      /* events whose columns differ, and how many were named */
    /* Alerts: whether the central copy has the chain's columns (a copy no
     * host shipped them to has none), the sealed alerts of verified batches
     * waiting to be compared, and the counts. */
    bool chained_alerts, sealed_alerts;
    struct strbuf expected_alerts;
    int64_t expected_alert_rows;
    int64_t alerts_altered, alerts_listed, alerts_verified, uncovered;
};

/* A central batches row with its alert columns (NULL alerts: written
 * before alerts were chained). */
struct cbatch {
    struct local_batch b;
    bool covers_alerts;
    int64_t alerts, first_alert;
};

static void set_host(struct cverifier *v, const char *host)
{
    v->host = host;
    struct strbuf sb = {0};
    if (host)
        event_line_plain(&sb, host, strlen(host), 2 * HOST_ID_MAX);
    snprintf(v->shown, sizeof(v->shown), "%s", sb.failed || !sb.data ? "?" : sb.data);
    strbuf_free(&sb);
}

/* libpq's error as one line on stderr: "PROG: what: message". */
static void print_pg_error(PGconn *pg, const char *what)
{
    char line[1024];
    central_message_line(PQerrorMessage(pg), line, sizeof(line));
    fprintf(stderr, PROG ": %s%s%s\n", what, what[0] ? ": " : "", line);
}

static int load_gaps(struct cverifier *v)
{
    free(v->gaps);
    v->gaps = NULL;
    const char *p[] = {v->host};
    PGresult *r = PQexecParams(v->pg, "SELECT first_batch, last_batch, resume_hash FROM gaps WHERE host_id = $1"
                                      " ORDER BY first_batch", 1, NULL, p, NULL, NULL, 1);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        print_pg_error(v->pg, "reading gaps");
        PQclear(r);
        return -1;
    }
    v->ngaps = PQntuples(r);
    v->gaps = calloc((size_t)v->ngaps + 1, sizeof(*v->gaps));
    for (int i = 0; v->gaps && i < v->ngaps; i++) {
        v->gaps[i].first = col_int(r, i, 0, NULL);
        v->gaps[i].last = col_int(r, i, 1, NULL);
        if (PQgetlength(r, i, 2) == CHAIN_HASH_LEN)
            memcpy(v->gaps[i].resume, PQgetvalue(r, i, 2), CHAIN_HASH_LEN);
    }
    PQclear(r);
    return v->gaps ? 0 : -1;
}

/* Whether the central copy's table has the column (a copy no host of a
 * newer daemon shipped to lacks its columns). */
static bool central_has_column(PGconn *pg, const char *table, const char *column)
{
    const char *p[] = {table, column};
    PGresult *r = PQexecParams(pg, "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()"
                                   " AND table_name = $1 AND column_name = $2", 2, NULL, p, NULL, NULL, 0);
    bool has = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    PQclear(r);
    return has;
}

/* Runs sql (no parameters) for its status only; false with the error printed. */
static bool run(PGconn *pg, const char *sql)
{
    PGresult *r = PQexec(pg, sql);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        print_pg_error(pg, "");
    PQclear(r);
    return ok;
}

/* ---- the decoded columns: expected_events, and a query per few MiB ---- */

static enum local_kind kind_of(enum redecode_kind k)
{
    return k == REDECODE_INT ? LOCAL_INT : k == REDECODE_TEXT ? LOCAL_TEXT : LOCAL_JSON;
}

/* This session's own table, emptied after each comparison. */
static int create_expected(PGconn *pg)
{
    struct strbuf sql = {0};
    strbuf_puts(&sql, "CREATE TEMP TABLE expected_events(host_id text, batch bigint, id bigint");
    for (int i = 0; i < REDECODE_COLUMNS; i++)
        strbuf_printf(&sql, ", %s %s", redecode_columns[i].name,
                      redecode_columns[i].kind == REDECODE_INT ? "bigint"
                      : redecode_columns[i].kind == REDECODE_TEXT ? "text" : "jsonb");
    strbuf_puts(&sql, ", whole_detail jsonb)");
    PGresult *r = PQexec(pg, sql.failed ? "" : sql.data);
    strbuf_free(&sql);
    int rc = PQresultStatus(r) == PGRES_COMMAND_OK ? 0 : -1;
    if (rc != 0)
        print_pg_error(pg, "creating a temporary table");
    PQclear(r);
    return rc;
}

/* One central event (row i of r: id, conn_id, recv_ns, msg_type, raw,
 * whether it may be in version 1's form) as the forwarder would ship it,
 * into v->expected. */
static int add_expected(struct cverifier *v, int64_t batch, const PGresult *r, int i)
{
    bool v1_shaped = PQgetlength(r, i, 5) == 1 && PQgetvalue(r, i, 5)[0] != 0;
    sqlite3_stmt *want = event_redecode(&v->redecoder, PQgetvalue(r, i, 4), (size_t)PQgetlength(r, i, 4), v1_shaped);
    struct strbuf *out = &v->expected;
    int64_t id = col_int(r, i, 0, NULL);
    if (v->expected_rows == 0) {
        copy_binary_header(out);
        v->expected_lo = id;
    }
    v->expected_hi = id;
    copy_binary_row(out, 3 + REDECODE_COLUMNS + 1);
    copy_binary_text(out, v->host, strlen(v->host));
    copy_binary_int8(out, batch);
    copy_binary_int8(out, id);
    for (int c = 0; c <= REDECODE_COLUMNS; c++) {
        enum local_kind kind = c == REDECODE_WHOLE_DETAIL ? LOCAL_JSON : kind_of(redecode_columns[c].kind);
        /* No valid header: NULL everywhere, which no stored row is. */
        if (!want)
            copy_binary_null(out);
        else if (local_render_value(out, want, c, kind) != 0)
            return -1;
    }
    v->expected_rows++;
    return 0;
}

static int copy_expected(struct cverifier *v)
{
    copy_binary_trailer(&v->expected);
    PGresult *r = PQexec(v->pg, "COPY expected_events FROM STDIN (FORMAT binary)");
    bool copying = PQresultStatus(r) == PGRES_COPY_IN;
    PQclear(r);
    int rc = copying && !v->expected.failed && PQputCopyData(v->pg, v->expected.data, (int)v->expected.len) == 1
                 ? 0 : -1;
    if (copying)
        PQputCopyEnd(v->pg, rc == 0 ? NULL : "out of memory");
    while ((r = PQgetResult(v->pg)) != NULL) {
        if (PQresultStatus(r) != PGRES_COMMAND_OK)
            rc = -1;
        PQclear(r);
    }
    if (rc != 0)
        print_pg_error(v->pg, "copying the decoded rows");
    strbuf_reset(&v->expected);
    return rc;
}

/* ", CASE WHEN e.c IS DISTINCT FROM <want> THEN 'c' END" for the columns
 * [from, to]; want: the expected value, NULL for x's column of that name. */
static void differing(struct strbuf *sql, int from, int to, const char *want)
{
    for (int i = from; i <= to; i++) {
        const char *name = redecode_columns[i].name;
        strbuf_printf(sql, ", CASE WHEN e.%s IS DISTINCT FROM %s%s THEN '%s' END", name, want ? "" : "x.",
                      want ? want : name, name);
    }
}

/* Host $1's events with ids $2..$3 whose columns are not what their raw
 * decodes to, by id (the first LIST_MAX): batch, id, the columns that
 * differ, and how many events differ in all. A row is sound in either version's form; for one
 * in neither, the columns that differ from the nearer form are named. */
static void compare_sql(struct strbuf *sql)
{
    strbuf_puts(sql, "WITH c AS (SELECT x.batch, x.id, concat_ws(', '");
    differing(sql, 0, REDECODE_DETAIL - 1, NULL);
    differing(sql, REDECODE_TYPE_NAME, REDECODE_TYPE_NAME, NULL);
    strbuf_puts(sql, ") AS common, concat_ws(', '");
    differing(sql, REDECODE_DETAIL, REDECODE_V2_LAST, NULL);
    strbuf_puts(sql, ") AS v2, concat_ws(', ', CASE WHEN e.detail IS DISTINCT FROM x.whole_detail THEN 'detail' END");
    differing(sql, REDECODE_V2_FIRST, REDECODE_V2_LAST, "NULL::bigint");
    strbuf_printf(sql, ") AS v1, e.thread_start_time_ns IS NULL AND e.thread_group_start_time_ns IS NULL"
                       " AND e.parent_thread_group_id IS NULL AND e.is_exec_session IS NULL AS v1_shaped"
                       " FROM expected_events x JOIN events e ON e.host_id = x.host_id AND e.id = x.id"
                       " WHERE x.host_id = $1 AND e.id BETWEEN $2 AND $3),"
                       " n AS (SELECT *, length(v1) - length(replace(v1, ',', '')) AS n1,"
                       "   length(v2) - length(replace(v2, ',', '')) AS n2 FROM c),"
                       " d AS (SELECT batch, id, concat_ws(', ', NULLIF(common, ''), CASE WHEN v2 <> '' AND v1 <> ''"
                       "   THEN CASE WHEN n1 < n2 OR (n1 = n2 AND v1_shaped) THEN v1 ELSE v2 END END) AS columns"
                       "   FROM n)"
                       " SELECT batch, id, columns, count(*) OVER () FROM d WHERE columns <> '' ORDER BY id LIMIT %d",
                  LIST_MAX);
}

/* The rows rendered so far (their batches verified) against the central
 * ones: the first LIST_MAX that differ named, all counted. 0 or -1. */
static int compare_expected(struct cverifier *v)
{
    if (v->expected_rows == 0)
        return 0;
    if (copy_expected(v) != 0)
        return -1;
    struct strbuf sql = {0};
    compare_sql(&sql);
    char lo[24], hi[24];
    snprintf(lo, sizeof(lo), "%" PRId64, v->expected_lo);
    snprintf(hi, sizeof(hi), "%" PRId64, v->expected_hi);
    const char *p[] = {v->host, lo, hi};
    PGresult *r = PQexecParams(v->pg, sql.failed ? "" : sql.data, 3, NULL, p, NULL, NULL, 0);
    strbuf_free(&sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        print_pg_error(v->pg, "comparing the decoded columns");
        PQclear(r);
        return -1;
    }
    for (int i = 0; i < PQntuples(r) && v->listed < LIST_MAX; i++, v->listed++) {
        const char *columns = PQgetvalue(r, i, 2);
        printf("host %s: event %s (batch %s): altered: %s %s not what its raw decodes to\n", v->shown,
               PQgetvalue(r, i, 1), PQgetvalue(r, i, 0), columns, strchr(columns, ',') ? "are" : "is");
    }
    v->altered += PQntuples(r) ? strtoll(PQgetvalue(r, 0, 3), NULL, 10) : 0;
    PQclear(r);
    v->expected_rows = 0;
    /* Not DELETE: its dead rows would stay in every later scan of the table
     * (no vacuum inside a transaction): 300k events, 12.8-15.4 s against
     * 10.1-13.6 s with TRUNCATE, alternating runs at load 7. */
    return run(v->pg, "TRUNCATE expected_events") ? 0 : -1;
}

/* After the whole chain verified: 0, VERIFY_BAD (printed) or VERIFY_USAGE. */
static int report_columns(struct cverifier *v)
{
    if (compare_expected(v) != 0)
        return VERIFY_USAGE;
    if (v->altered == 0)
        return 0;
    if (v->altered > v->listed)
        printf("host %s: ... and %" PRId64 " more altered event%s\n", v->shown, v->altered - v->listed,
               cli_plural((uint64_t)(v->altered - v->listed)));
    printf("host %s: altered: %" PRId64 " event%s with decoded columns that differ from the raw packet (the raw "
           "column and the chain verify)\n", v->shown, v->altered, cli_plural((uint64_t)v->altered));
    return VERIFY_BAD;
}

/* ---- the alerts' columns against their sealed records ---- */

static const char *const alert_columns[] = {"event_id", "rule", "priority", "time_ns", "container_id", "output",
                                            "output_fields", "tags", "suppressed"};
#define ALERT_COLUMNS 9

static int create_expected_alerts(PGconn *pg)
{
    PGresult *r = PQexec(pg, "CREATE TEMP TABLE expected_alerts(host_id text, batch bigint, id bigint, sealed boolean,"
                             " event_id bigint, rule text, priority text, time_ns bigint, container_id text,"
                             " output text, output_fields jsonb, tags jsonb, suppressed bigint)");
    int rc = PQresultStatus(r) == PGRES_COMMAND_OK ? 0 : -1;
    if (rc != 0)
        print_pg_error(pg, "creating a temporary table");
    PQclear(r);
    return rc;
}

/* Whether s is JSON (a sealed record forged with text that is not would
 * stop the COPY; the forwarder's rendering makes the rest jsonb's). */
static bool json_text(const char *s, size_t len)
{
    json_t *j = json_loadb(s, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    json_decref(j);
    return j != NULL;
}

/* One central alert (id, its sealed record) as the forwarder would have
 * shipped its row, into v->expected_alerts; a record that is not one (or
 * whose JSON is not) goes as sealed false, and is named. */
static void add_expected_alert(struct cverifier *v, int64_t batch, int64_t id, const void *sealed, size_t len)
{
    struct chain_alert a;
    bool ok = sealed && chain_alert_decode(sealed, len, &a) == 0 && json_text(a.output_fields, a.output_fields_len) &&
              json_text(a.tags, a.tags_len);
    struct strbuf *out = &v->expected_alerts;
    if (v->expected_alert_rows == 0)
        copy_binary_header(out);
    copy_binary_row(out, 4 + ALERT_COLUMNS);
    copy_binary_text(out, v->host, strlen(v->host));
    copy_binary_int8(out, batch);
    copy_binary_int8(out, id);
    strbuf_append(out, "\0\0\0\1", 4);   /* a boolean: 1 byte */
    strbuf_putc(out, ok ? 1 : 0);
    if (!ok) {
        for (int i = 0; i < ALERT_COLUMNS; i++)
            copy_binary_null(out);
    } else {
        copy_binary_int8(out, a.event_id);
        copy_binary_text(out, a.rule, a.rule_len);
        copy_binary_text(out, a.priority, a.priority_len);
        copy_binary_int8(out, a.time_ns);
        if (a.container_id)
            copy_binary_text(out, a.container_id, a.container_id_len);
        else
            copy_binary_null(out);
        copy_binary_text(out, a.output, a.output_len);
        copy_binary_jsonb(out, a.output_fields, a.output_fields_len);
        copy_binary_jsonb(out, a.tags, a.tags_len);
        copy_binary_int8(out, a.suppressed);
    }
    v->expected_alert_rows++;
}

/* The sealed alerts gathered so far against the central rows: the first
 * LIST_MAX that differ named, all counted. 0 or -1. */
static int compare_expected_alerts(struct cverifier *v)
{
    if (v->expected_alert_rows == 0)
        return 0;
    copy_binary_trailer(&v->expected_alerts);
    PGresult *r = PQexec(v->pg, "COPY expected_alerts FROM STDIN (FORMAT binary)");
    bool copying = PQresultStatus(r) == PGRES_COPY_IN;
    PQclear(r);
    int rc = copying && !v->expected_alerts.failed &&
                     PQputCopyData(v->pg, v->expected_alerts.data, (int)v->expected_alerts.len) == 1
                 ? 0 : -1;
    if (copying)
        PQputCopyEnd(v->pg, rc == 0 ? NULL : "out of memory");
    while ((r = PQgetResult(v->pg)) != NULL) {
        if (PQresultStatus(r) != PGRES_COMMAND_OK)
            rc = -1;
        PQclear(r);
    }
    strbuf_reset(&v->expected_alerts);
    v->expected_alert_rows = 0;
    if (rc != 0) {
        print_pg_error(v->pg, "copying the sealed alerts");
        return -1;
    }
    struct strbuf sql = {0};
    strbuf_puts(&sql, "WITH d AS (SELECT x.batch, x.id, CASE WHEN NOT x.sealed THEN 'sealed' ELSE concat_ws(', '");
    for (int i = 0; i < ALERT_COLUMNS; i++)
        strbuf_printf(&sql, ", CASE WHEN a.%s IS DISTINCT FROM x.%s THEN '%s' END", alert_columns[i],
                      alert_columns[i], alert_columns[i]);
    strbuf_printf(&sql, ") END AS columns FROM expected_alerts x JOIN alerts a ON a.host_id = x.host_id AND"
                        " a.id = x.id WHERE x.host_id = $1)"
                        " SELECT batch, id, columns, count(*) OVER () FROM d WHERE columns <> '' ORDER BY id LIMIT %d",
                  LIST_MAX);
    const char *p[] = {v->host};
    r = PQexecParams(v->pg, sql.failed ? "" : sql.data, 1, NULL, p, NULL, NULL, 0);
    strbuf_free(&sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        print_pg_error(v->pg, "comparing the alerts");
        PQclear(r);
        return -1;
    }
    for (int i = 0; i < PQntuples(r) && v->alerts_listed < LIST_MAX; i++, v->alerts_listed++) {
        const char *columns = PQgetvalue(r, i, 2);
        if (strcmp(columns, "sealed") == 0)
            printf("host %s: alert %s (batch %s): altered: its sealed record is not one\n", v->shown,
                   PQgetvalue(r, i, 1), PQgetvalue(r, i, 0));
        else
            printf("host %s: alert %s (batch %s): altered: %s %s not what was sealed\n", v->shown,
                   PQgetvalue(r, i, 1), PQgetvalue(r, i, 0), columns, strchr(columns, ',') ? "are" : "is");
    }
    v->alerts_altered += PQntuples(r) ? strtoll(PQgetvalue(r, 0, 3), NULL, 10) : 0;
    PQclear(r);
    return run(v->pg, "TRUNCATE expected_alerts") ? 0 : -1;
}

/* The batch's sealed alerts into the hash (their records kept for the
 * comparison), and whether every one is there and none was added: 0,
 * VERIFY_BAD (printed) or VERIFY_USAGE. */
static int batch_alerts(struct cverifier *v, const struct cbatch *cb)
{
    const struct local_batch *b = &cb->b;
    int64_t lo = cb->first_alert, hi = cb->first_alert + cb->alerts - 1;
    if (cb->alerts > 0 && cb->first_alert > INT64_MAX - cb->alerts) {
        printf("host %s: batch %" PRId64 ": altered: its alert range is out of bounds\n", v->shown, b->id);
        return VERIFY_BAD;
    }
    char lo_s[24], hi_s[24];
    snprintf(lo_s, sizeof(lo_s), "%" PRId64, cb->alerts ? lo : 1);
    snprintf(hi_s, sizeof(hi_s), "%" PRId64, cb->alerts ? hi : 0);
    const char *p[] = {v->host, lo_s, hi_s};
    int64_t missing[LIST_MAX], nmissing = 0, present = 0, expect = lo;
    if (cb->alerts > 0 && v->sealed_alerts) {
        PGresult *r = PQexecParams(v->pg, "SELECT id, sealed FROM alerts WHERE host_id = $1 AND id BETWEEN $2 AND $3"
                                          " ORDER BY id", 3, NULL, p, NULL, NULL, 1);
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            print_pg_error(v->pg, "reading alerts");
            PQclear(r);
            return VERIFY_USAGE;
        }
        for (int i = 0; i < PQntuples(r); i++) {
            int64_t id = col_int(r, i, 0, NULL);
            for (; expect < id; expect++, nmissing++)
                if (nmissing < LIST_MAX)
                    missing[nmissing] = expect;
            expect = id + 1;
            present++;
            bool null = PQgetisnull(r, i, 1);
            const char *sealed = null ? NULL : PQgetvalue(r, i, 1);
            size_t len = null ? 0 : (size_t)PQgetlength(r, i, 1);
            chain_add_alert(v->chain, sealed ? sealed : "", len);
            if (!v->hash_only)
                add_expected_alert(v, b->id, id, sealed, len);
        }
        PQclear(r);
    }
    for (; cb->alerts > 0 && expect <= hi; expect++, nmissing++)
        if (nmissing < LIST_MAX)
            missing[nmissing] = expect;
    if (nmissing) {
        printf("host %s: batch %" PRId64 ": deleted alerts: %" PRId64 " of %" PRId64 " sealed alerts present; "
               "missing: alert", v->shown, b->id, present, cb->alerts);
        for (int64_t i = 0; i < nmissing && i < LIST_MAX; i++)
            printf("%s %" PRId64, i ? "," : "", missing[i]);
        printf("%s\n", nmissing > LIST_MAX ? " ..." : "");
        return VERIFY_BAD;
    }
    if (!b->has_range)
        return 0;
    char first[24], last[24];
    snprintf(first, sizeof(first), "%" PRId64, b->first);
    snprintf(last, sizeof(last), "%" PRId64, b->last);
    const char *q[] = {v->host, first, last, lo_s, hi_s};
    PGresult *r = PQexecParams(v->pg, "SELECT count(*), min(id) FROM alerts WHERE host_id = $1 AND event_id BETWEEN"
                                      " $2 AND $3 AND (id < $4 OR id > $5)", 5, NULL, q, NULL, NULL, 1);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        print_pg_error(v->pg, "reading alerts");
        PQclear(r);
        return VERIFY_USAGE;
    }
    int64_t stray = col_int(r, 0, 0, NULL), stray_id = col_int(r, 0, 1, NULL);
    PQclear(r);
    if (stray) {
        printf("host %s: batch %" PRId64 ": inserted alerts: %" PRId64 " alert%s of its events %s not among the %"
               PRId64 " it sealed (alert %" PRId64 ")\n", v->shown, b->id, stray, cli_plural((uint64_t)stray),
               stray == 1 ? "is" : "are", cb->alerts, stray_id);
        return VERIFY_BAD;
    }
    return 0;
}

/* ---- the chain ---- */

/* Recomputes batch b's hash from its central events and alerts; *present:
 * events; *alerts_rc: what batch_alerts said. */
static int recompute(struct cverifier *v, const struct cbatch *cb, int64_t *present, uint8_t out[CHAIN_HASH_LEN],
                     int *alerts_rc)
{
    const struct local_batch *b = &cb->b;
    *present = 0;
    *alerts_rc = 0;
    chain_begin(v->chain, b->prev);
    if (b->has_range && b->events > 0) {
        char lo[24], hi[24];
        snprintf(lo, sizeof(lo), "%" PRId64, b->first);
        snprintf(hi, sizeof(hi), "%" PRId64, b->last);
        const char *p[] = {v->host, lo, hi};
        /* Version 1's form is rendered too where the row may be in it: its
         * newer columns NULL, or detail holding what version 2 leaves out. */
        PGresult *r = PQexecParams(v->pg, "SELECT id, conn_id, recv_ns, msg_type, raw,"
                                          " coalesce(detail ?| array['context_data', 'sysno', 'exit'], false) OR"
                                          " (thread_start_time_ns IS NULL AND thread_group_start_time_ns IS NULL"
                                          " AND parent_thread_group_id IS NULL AND is_exec_session IS NULL)"
                                          " FROM events WHERE host_id = $1 AND id BETWEEN $2 AND $3 ORDER BY id",
                                   3, NULL, p, NULL, NULL, 1);
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            print_pg_error(v->pg, "reading events");
            PQclear(r);
            return -1;
        }
        int rc = 0;
        for (int i = 0; i < PQntuples(r) && rc == 0; i++) {
            struct chain_row row = {
                .id = col_int(r, i, 0, NULL), .conn_id = col_int(r, i, 1, NULL),
                .recv_ns = col_int(r, i, 2, NULL), .msg_type = col_int(r, i, 3, NULL),
                .raw = PQgetvalue(r, i, 4), .raw_len = (size_t)PQgetlength(r, i, 4),
            };
            chain_add_row(v->chain, &row);
            if (!v->hash_only && add_expected(v, b->id, r, i) != 0) {
                fprintf(stderr, PROG ": host %s: event %" PRId64 ": out of memory\n", v->shown, row.id);
                rc = -1;
            }
        }
        *present = PQntuples(r);
        PQclear(r);
        if (rc != 0)
            return -1;
    }
    if (cb->covers_alerts && (*alerts_rc = batch_alerts(v, cb)) == VERIFY_USAGE)
        return -1;
    struct chain_batch c = {.id = b->id, .run_id = b->run_id, .first_event_id = b->has_range ? b->first : 0,
                            .last_event_id = b->has_range ? b->last : 0, .events = b->events,
                            .committed_ns = b->committed_ns, .covers_alerts = cb->covers_alerts,
                            .alerts = cb->alerts, .first_alert_id = cb->alerts ? cb->first_alert : 0};
    return chain_finish(v->chain, &c, out);
}

/* The gap starting at id, or NULL. */
static const struct gap *gap_at(const struct cverifier *v, int64_t id)
{
    for (int i = 0; i < v->ngaps; i++)
        if (v->gaps[i].first == id)
            return &v->gaps[i];
    return NULL;
}

/* Checks one batch after (prev_id, prev_hash). 0 or VERIFY_BAD (printed)
 * or VERIFY_USAGE. */
static int check(struct cverifier *v, const struct cbatch *cb, int64_t *prev_id, uint8_t prev_hash[CHAIN_HASH_LEN],
                 bool keyed)
{
    const struct local_batch *b = &cb->b;
    const struct gap *g;
    while ((g = gap_at(v, *prev_id + 1)) != NULL && g->last >= g->first) {
        printf("host %s: note: batches %" PRId64 "..%" PRId64 " were lost on the host before they were shipped "
               "(gap)\n", v->shown, g->first, g->last);
        *prev_id = g->last;
        memcpy(prev_hash, g->resume, CHAIN_HASH_LEN);
    }
    if (b->id != *prev_id + 1) {
        printf("host %s: batch %" PRId64 ": missing: batch %" PRId64 " follows batch %" PRId64 "\n", v->shown,
               *prev_id + 1, b->id, *prev_id);
        return VERIFY_BAD;
    }
    if ((b->keyed != 0) != keyed) {
        printf("host %s: batch %" PRId64 ": %s\n", v->shown, b->id,
               keyed ? "not keyed" : "chain is keyed: pass --key-file");
        return keyed ? VERIFY_BAD : VERIFY_USAGE;
    }
    if (memcmp(b->prev, prev_hash, CHAIN_HASH_LEN) != 0) {
        printf("host %s: batch %" PRId64 ": out of order: prev_hash does not match batch %" PRId64 "\n", v->shown,
               b->id, *prev_id);
        return VERIFY_BAD;
    }
    int64_t present;
    int alerts_rc;
    uint8_t hash[CHAIN_HASH_LEN];
    if (recompute(v, cb, &present, hash, &alerts_rc) != 0)
        return VERIFY_USAGE;
    if (present != b->events) {
        printf("host %s: batch %" PRId64 ": %s rows: %" PRId64 " events present where %" PRId64 " were sealed\n",
               v->shown, b->id, present < b->events ? "deleted" : "inserted", present, b->events);
        return VERIFY_BAD;
    }
    if (alerts_rc != 0)
        return alerts_rc;
    if (memcmp(hash, b->hash, CHAIN_HASH_LEN) != 0) {
        printf("host %s: batch %" PRId64 ": altered: hash mismatch\n", v->shown, b->id);
        return VERIFY_BAD;
    }
    if (v->expected.len >= EXPECTED_FLUSH_BYTES && compare_expected(v) != 0)
        return VERIFY_USAGE;
    if (v->expected_alerts.len >= EXPECTED_FLUSH_BYTES && compare_expected_alerts(v) != 0)
        return VERIFY_USAGE;
    if (cb->covers_alerts)
        v->alerts_verified += cb->alerts;
    else
        v->uncovered++;
    *prev_id = b->id;
    memcpy(prev_hash, b->hash, CHAIN_HASH_LEN);
    return 0;
}

static void read_row(const PGresult *r, int i, struct cbatch *cb)
{
    bool n2, n3, n9;
    memset(cb, 0, sizeof(*cb));
    struct local_batch *b = &cb->b;
    cb->alerts = col_int(r, i, 9, &n9);
    cb->covers_alerts = !n9;
    cb->first_alert = col_int(r, i, 10, NULL);
    b->id = col_int(r, i, 0, NULL);
    b->run_id = col_int(r, i, 1, NULL);
    b->first = col_int(r, i, 2, &n2);
    b->last = col_int(r, i, 3, &n3);
    b->has_range = !n2 && !n3;
    b->events = col_int(r, i, 4, NULL);
    b->committed_ns = col_int(r, i, 5, NULL);
    if (PQgetlength(r, i, 6) == CHAIN_HASH_LEN)
        memcpy(b->prev, PQgetvalue(r, i, 6), CHAIN_HASH_LEN);
    if (PQgetlength(r, i, 7) == CHAIN_HASH_LEN)
        memcpy(b->hash, PQgetvalue(r, i, 7), CHAIN_HASH_LEN);
    b->keyed = col_int(r, i, 8, NULL);
}

/* One host's chain, then its decoded columns. */
static int walk(struct cverifier *v, bool keyed)
{
    const char *p[] = {v->host};
    /* a central schema from before the chain covered alerts has no alerts columns */
    const char *sql = v->chained_alerts
                          ? "DECLARE chain CURSOR FOR SELECT id, run_id, first_event_id, last_event_id, events,"
                            " committed_ns, prev_hash, hash, keyed::bigint, alerts, first_alert_id FROM"
                            " batches WHERE host_id = $1 ORDER BY id"
                          : "DECLARE chain CURSOR FOR SELECT id, run_id, first_event_id, last_event_id, events,"
                            " committed_ns, prev_hash, hash, keyed::bigint, NULL::bigint, NULL::bigint FROM"
                            " batches WHERE host_id = $1 ORDER BY id";
    PGresult *r = PQexecParams(v->pg, sql, 1, NULL, p, NULL, NULL, 1);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        print_pg_error(v->pg, "reading batches");
        PQclear(r);
        return VERIFY_USAGE;
    }
    PQclear(r);
    int64_t prev_id = 0, nbatches = 0, nevents = 0;
    uint8_t prev_hash[CHAIN_HASH_LEN] = {0};
    int rc = 0;
    v->altered = v->listed = 0;
    v->expected_rows = 0;   /* what a failed host left */
    strbuf_reset(&v->expected);
    v->alerts_altered = v->alerts_listed = v->alerts_verified = v->uncovered = 0;
    v->expected_alert_rows = 0;
    strbuf_reset(&v->expected_alerts);
    for (;;) {
        r = PQexecParams(v->pg, "FETCH " FETCH_BATCHES " FROM chain", 0, NULL, NULL, NULL, NULL, 1);
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            print_pg_error(v->pg, "reading batches");
            PQclear(r);
            return VERIFY_USAGE;
        }
        int n = PQntuples(r);
        for (int i = 0; i < n && rc == 0; i++) {
            struct cbatch b;
            read_row(r, i, &b);
            if ((rc = check(v, &b, &prev_id, prev_hash, keyed)) == 0) {
                nbatches++;
                nevents += b.b.events;
            }
        }
        PQclear(r);
        if (rc != 0 || n == 0)
            break;
    }
    if (!run(v->pg, "CLOSE chain"))
        return VERIFY_USAGE;
    if (rc != 0)
        return rc;
    if (nbatches == 0 && v->ngaps == 0) {
        printf("%shost %s: no batches in the central copy\n", v->all_hosts ? "note: " : "", v->shown);
        return v->all_hosts ? VERIFY_OK : VERIFY_BAD;
    }
    r = PQexecParams(v->pg, "SELECT count(*) FROM events WHERE host_id = $1", 1, NULL, p, NULL, NULL, 1);
    int64_t stored = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 ? col_int(r, 0, 0, NULL) : -1;
    PQclear(r);
    if (stored != nevents) {
        printf("host %s: %" PRId64 " events stored centrally, %" PRId64 " sealed in its batches\n", v->shown, stored,
               nevents);
        return VERIFY_BAD;
    }
    if (v->uncovered)
        printf("host %s: note: %" PRId64 " batch%s written before alerts were chained: %s alerts are not "
               "covered\n", v->shown, v->uncovered, v->uncovered == 1 ? " was" : "es were",
               v->uncovered == 1 ? "its" : "their");
    if (!v->hash_only && compare_expected_alerts(v) != 0)
        return VERIFY_USAGE;
    int alerts_rc = 0;
    if (v->alerts_altered) {
        if (v->alerts_altered > v->alerts_listed)
            printf("host %s: ... and %" PRId64 " more altered alert%s\n", v->shown,
                   v->alerts_altered - v->alerts_listed, cli_plural((uint64_t)(v->alerts_altered - v->alerts_listed)));
        printf("host %s: altered: %" PRId64 " alert%s with columns that differ from what was sealed (the chain "
               "verifies)\n", v->shown, v->alerts_altered, cli_plural((uint64_t)v->alerts_altered));
        alerts_rc = VERIFY_BAD;
    }
    if (!v->hash_only && (rc = report_columns(v)) != 0)
        return rc;
    if (alerts_rc)
        return alerts_rc;
    printf("ok: host %s: %" PRId64 " batches, %" PRId64 " events, %" PRId64 " alerts verified", v->shown, nbatches,
           nevents, v->alerts_verified);
    if (v->ngaps)
        printf(" (%d gaps recorded)", v->ngaps);
    printf("%s\n", v->hash_only ? " (--hash-only: the decoded columns and detail not compared with raw)" : "");
    return 0;
}

/* Every host of the hosts table, in one snapshot. */
static int walk_all(struct cverifier *v, bool keyed)
{
    PGresult *hosts = PQexec(v->pg, "SELECT host_id FROM hosts ORDER BY host_id");
    if (PQresultStatus(hosts) != PGRES_TUPLES_OK) {
        print_pg_error(v->pg, "reading hosts");
        PQclear(hosts);
        return VERIFY_USAGE;
    }
    int n = PQntuples(hosts), failed = 0, worst = VERIFY_OK;
    for (int i = 0; i < n && worst != VERIFY_USAGE; i++) {
        set_host(v, PQgetvalue(hosts, i, 0));
        int rc = load_gaps(v) != 0 ? VERIFY_USAGE : walk(v, keyed);
        failed += rc != VERIFY_OK;
        worst = rc > worst ? rc : worst;
    }
    PQclear(hosts);
    set_host(v, NULL);
    if (worst == VERIFY_USAGE)
        return worst;
    if (failed)
        printf("%d of %d host%s did not verify (above)\n", failed, n, cli_plural((uint64_t)n));
    else
        printf("ok: %d host%s verified\n", n, cli_plural((uint64_t)n));
    return worst;
}

static void usage(void)
{
    printf("Usage: seccheckd verify --to URL... [--host-id ID | --all-hosts] [--key-file PATH] [--hash-only]\n"
           "Recomputes a host's batch chain from the central PostgreSQL copy (seccheckd forward), then\n"
           "decodes every central event's raw packet again and names the events whose decoded columns\n"
           "or detail differ from it.\n"
           "\n"
           "  --to URL         the central database (no password in it: ~/.pgpass, PGPASSFILE); again\n"
           "                   for each partition's database (seccheckd central --partition I): a host is\n"
           "                   checked where it is, --all-hosts checks every host of each\n"
           "  --host-id ID     the host to check [/etc/machine-id, or the hostname: forward's default]\n"
           "  --all-hosts      check every host of the central copy\n"
           "  --key-file PATH  the HMAC key the hosts' daemons were given; required for keyed chains\n"
           "  --hash-only      check the chain only, not the decoded columns (faster)\n"
           "\n"
           "Exit status: 0 everything verifies, 1 a batch or an event does not (printed), 2 usage\n"
           "error or the central copy cannot be read.\n");
}

/* Verifies host (NULL: every host) in one central database. */
static int verify_url(const char *url, const char *host, const struct chain_key *key, bool hash_only)
{
    char err[512];
    struct cverifier v = {.hash_only = hash_only, .all_hosts = host == NULL};
    set_host(&v, host);
    int rc = VERIFY_USAGE;
    v.chain = chain_new(key, err, sizeof(err));
    if (!v.chain || event_redecoder_init(&v.redecoder, err, sizeof(err)) != 0 ||
        (v.pg = central_connect(url, NULL, err, sizeof(err))) == NULL) {
        fprintf(stderr, PROG ": %s\n", err);
        goto out;
    }
    /* One snapshot: batches and events agree while forwarders write. Read
     * only but for the temporary table (which READ ONLY could fill but not
     * truncate). */
    if (!run(v.pg, hash_only ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
                             : "BEGIN ISOLATION LEVEL REPEATABLE READ") ||
        (!hash_only && (create_expected(v.pg) != 0 || create_expected_alerts(v.pg) != 0)))
        goto out;
    v.chained_alerts = central_has_column(v.pg, "batches", "first_alert_id");
    v.sealed_alerts = central_has_column(v.pg, "alerts", "sealed");
    if (!host)
        rc = walk_all(&v, key != NULL);
    else
        rc = load_gaps(&v) != 0 ? VERIFY_USAGE : walk(&v, key != NULL);
out:
    if (v.pg)
        PQfinish(v.pg);
    free(v.gaps);
    chain_free(v.chain);
    event_redecoder_free(&v.redecoder);
    strbuf_free(&v.expected);
    strbuf_free(&v.expected_alerts);
    return rc;
}

/* Several --to (one database per partition): the one that holds host. */
static int pick_url(const struct central_urls *u, const char *host)
{
    PGconn *pg[CENTRAL_URLS_MAX] = {NULL};
    char err[512];
    int found = -3;
    for (int i = 0; i < u->n; i++)
        if (!(pg[i] = central_connect(u->url[i], NULL, err, sizeof(err)))) {
            fprintf(stderr, PROG ": --to number %d: %s\n", i + 1, err);
            goto out;
        }
    found = central_urls_find_host(pg, u, host, err, sizeof(err));
    if (found < 0 && found != -1)
        fprintf(stderr, PROG ": %s\n", err);
out:
    for (int i = 0; i < u->n; i++)
        if (pg[i])
            PQfinish(pg[i]);
    return found == -1 ? 0 : found;   /* none: the first says it has no batches of it */
}

int central_verify_main(int argc, char **argv)
{
    static const struct option options[] = {
        {"to", required_argument, NULL, 't'},     {"host-id", required_argument, NULL, 'H'},
        {"all-hosts", no_argument, NULL, 'A'},    {"key-file", required_argument, NULL, 'k'},
        {"hash-only", no_argument, NULL, 'o'},    {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct central_urls urls = {.n = 0};
    const char *host = NULL, *key_file = NULL;
    bool all_hosts = false, hash_only = false;
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, CLI_GETOPT_QUIET "h", options, NULL)) != -1) {
        switch (ch) {
        case 't': if (central_urls_add(&urls, optarg, PROG) != 0) return VERIFY_USAGE; break;
        case 'H': host = optarg; break;
        case 'A': all_hosts = true; break;
        case 'k': key_file = optarg; break;
        case 'o': hash_only = true; break;
        case 'h': usage(); return VERIFY_OK;
        default: cli_report_getopt_error(PROG, ch, argv); return VERIFY_USAGE;
        }
    }
    char err[512], host_id[HOST_ID_MAX + 1];
    if (optind < argc || !urls.n) {
        fprintf(stderr, PROG ": --to URL is required, and takes no other argument (try --help)\n");
        return VERIFY_USAGE;
    }
    if (all_hosts && host) {
        fprintf(stderr, PROG ": --host-id and --all-hosts: one or the other (try --help)\n");
        return VERIFY_USAGE;
    }
    if (!all_hosts && host_id_resolve(host, host_id, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s\n", err);
        return VERIFY_USAGE;
    }
    struct chain_key key = {.bytes = NULL};
    if (key_file && chain_key_load(key_file, &key, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s\n", err);
        return VERIFY_USAGE;
    }
    int rc;
    if (all_hosts) {   /* every host of every database */
        rc = VERIFY_OK;
        for (int i = 0; i < urls.n && rc != VERIFY_USAGE; i++) {
            int one = verify_url(urls.url[i], NULL, key_file ? &key : NULL, hash_only);
            rc = one > rc ? one : rc;
        }
    } else {
        int at = pick_url(&urls, host_id);
        rc = at < 0 ? VERIFY_USAGE : verify_url(urls.url[at], host_id, key_file ? &key : NULL, hash_only);
    }
    chain_key_free(&key);
    return rc;
}
