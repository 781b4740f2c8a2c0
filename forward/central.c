/* central.c - the central PostgreSQL side of forwarding (central.h). */
#include "central.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "central_views.sql.h"
#include "clock.h"
#include "linux_names.h"
#include "log.h"
#include "strbuf.h"

#define COPY_FLUSH_BYTES (256u << 10)

/* ---- plumbing ---- */

void central_message_line(const char *msg, char *out, size_t outlen)
{
    size_t len = 0;
    out[0] = '\0';
    while (*msg && len + 1 < outlen) {
        size_t n = strcspn(msg, "\n"), skip = 0;
        while (skip < n && isspace((unsigned char)msg[skip]))
            skip++;
        size_t keep = n - skip;
        while (keep && isspace((unsigned char)msg[skip + keep - 1]))
            keep--;
        bool caret = keep == 1 && msg[skip] == '^';   /* points into the LINE above: no use on one line */
        if (keep && !caret) {
            int w = snprintf(out + len, outlen - len, "%s%.*s", len ? "; " : "", (int)keep, msg + skip);
            len = w < 0 || (size_t)w >= outlen - len ? outlen - 1 : len + (size_t)w;
        }
        msg += n + (msg[n] == '\n');
    }
}

static void pg_error(PGconn *pg, const char *what, char *err, size_t errlen)
{
    char line[1024];
    central_message_line(PQerrorMessage(pg), line, sizeof(line));
    snprintf(err, errlen, "%s: %s", what, line);
}

static int result_error(PGresult *res, PGconn *pg, const char *what, char *err, size_t errlen)
{
    char line[1024];
    central_message_line(res ? PQresultErrorMessage(res) : PQerrorMessage(pg), line, sizeof(line));
    snprintf(err, errlen, "%s: %s", what, line);
    PQclear(res);
    return -1;
}

/* Runs sql that returns no rows. */
static int exec_command(PGconn *pg, const char *sql, const char *what, char *err, size_t errlen)
{
    PGresult *res = PQexec(pg, sql);
    if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)
        return result_error(res, pg, what, err, errlen);
    PQclear(res);
    return 0;
}

/* Parameters: text, except those marked binary (bytea hashes). */
static PGresult *exec_params(PGconn *pg, const char *sql, int n, const char *const *values, const int *lengths,
                             const int *formats)
{
    return PQexecParams(pg, sql, n, NULL, values, lengths, formats, 0);
}

/* ---- URL and connection ---- */

int central_check_url(const char *url, char *err, size_t errlen)
{
    char *why = NULL;
    PQconninfoOption *opts = PQconninfoParse(url, &why);
    if (!opts) {
        snprintf(err, errlen, "--to: not a PostgreSQL connection string or URL: %s", why ? why : "out of memory");
        PQfreemem(why);
        return -1;
    }
    int rc = 0;
    for (PQconninfoOption *o = opts; o->keyword; o++)
        if (strcmp(o->keyword, "password") == 0 && o->val && o->val[0]) {
            snprintf(err, errlen, "--to: the URL holds a password, which any local user can read in the process "
                     "list: remove it and put it in ~/.pgpass (or the file PGPASSFILE names), or in PGPASSWORD");
            rc = -1;
        }
    PQconninfoFree(opts);
    return rc;
}

/* On a Unix socket (a server on this host) the kernel's default send
 * buffer, 208 KiB, holds less than the server parses while the forwarder
 * renders the next COPY chunk, and the server waits: 4 MiB (capped by
 * net.core.wmem_max) shipped 1.2x the events per second (bench/forward.sh).
 * TCP sizes its own buffers, and setting one would stop that. */
static void widen_send_buffer(PGconn *pg)
{
    struct sockaddr_storage addr;
    socklen_t len = sizeof(addr);
    int fd = PQsocket(pg), size = 4 << 20;
    if (fd >= 0 && getsockname(fd, (struct sockaddr *)&addr, &len) == 0 && addr.ss_family == AF_UNIX)
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
}

/* Connection errors that retrying does not heal: the server refused who
 * we are (a wrong password, a role or pg_hba.conf entry it does not have),
 * the database does not exist, or we may not connect to it. */
static bool lasting_sqlstate(const char *code)
{
    static const char *const codes[] = {"28P01", "28000", "3D000", "42501"};
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
        if (strcmp(code, codes[i]) == 0)
            return true;
    return false;
}

/* libpq keeps a failed connection's SQLSTATE to itself; in verbose mode it
 * writes it into the message ("FATAL:  28P01: password authentication
 * failed ..." and a "LOCATION:" line). Reads the codes (*lasting if one
 * does not heal) and writes the message as the default mode has it, on
 * one line (central_message_line). */
static void connect_error(PGconn *pg, bool *lasting, char *err, size_t errlen)
{
    struct strbuf msg = {0};
    for (const char *p = PQerrorMessage(pg); *p;) {
        size_t n = strcspn(p, "\n");
        const char *sev = NULL;
        for (const char *s = p; s + 8 <= p + n && !sev; s++)
            if (strncmp(s, "FATAL:  ", 8) == 0 || strncmp(s, "ERROR:  ", 8) == 0)
                sev = s + 8;
        if (sev && sev + 7 <= p + n && sev[5] == ':' && sev[6] == ' ') {
            char code[6] = {sev[0], sev[1], sev[2], sev[3], sev[4], '\0'};
            *lasting |= lasting_sqlstate(code);
            strbuf_append(&msg, p, (size_t)(sev - p));   /* the code left out */
            strbuf_append(&msg, sev + 7, (size_t)(p + n - (sev + 7)));
        } else if (strncmp(p, "LOCATION:", 9) != 0) {
            strbuf_append(&msg, p, n);
        }
        strbuf_putc(&msg, '\n');
        p += n + (p[n] == '\n');
    }
    char line[1024];
    central_message_line(msg.failed ? "out of memory" : msg.len ? msg.data : "", line, sizeof(line));
    snprintf(err, errlen, "cannot connect: %s", line);
    strbuf_free(&msg);
}

/* The connection's connect_timeout in seconds (libpq: below 2 means 2; 0
 * or unset: none, here 10, the default this file sets). */
static int connect_timeout_s(PGconn *pg)
{
    int s = 10;
    PQconninfoOption *opts = PQconninfo(pg);
    for (PQconninfoOption *o = opts; o && o->keyword; o++)
        if (strcmp(o->keyword, "connect_timeout") == 0 && o->val && atoi(o->val) > 0)
            s = atoi(o->val) < 2 ? 2 : atoi(o->val);
    PQconninfoFree(opts);
    return s;
}

/* PQconnectPoll until it is done or the timeout passes: connecting
 * without blocking is what lets the error verbosity be set first. */
static bool connect_poll(PGconn *pg)
{
    int64_t deadline = monotonic_ns() + (int64_t)connect_timeout_s(pg) * 1000000000;
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;
    while (st != PGRES_POLLING_OK && st != PGRES_POLLING_FAILED) {
        int64_t left_ms = (deadline - monotonic_ns()) / 1000000;
        struct pollfd p = {.fd = PQsocket(pg), .events = st == PGRES_POLLING_READING ? POLLIN : POLLOUT};
        int n = left_ms > 0 ? poll(&p, 1, (int)left_ms) : 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        st = PQconnectPoll(pg);
    }
    return st == PGRES_POLLING_OK;
}

PGconn *central_connect(const char *url, bool *lasting, char *err, size_t errlen)
{
    bool ignored;
    lasting = lasting ? lasting : &ignored;
    *lasting = false;
    /* Earlier keywords are defaults the URL (expanded from dbname) overrides. */
    const char *keys[] = {"connect_timeout", "fallback_application_name", "dbname", NULL};
    const char *values[] = {"10", "seccheckd-forward", url, NULL};
    PGconn *pg = PQconnectStartParams(keys, values, 1);
    if (!pg) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    PQsetErrorVerbosity(pg, PQERRORS_VERBOSE);
    if (PQstatus(pg) == CONNECTION_BAD || !connect_poll(pg)) {
        if (PQstatus(pg) != CONNECTION_BAD)
            snprintf(err, errlen, "cannot connect: no answer within %d s (connect_timeout)", connect_timeout_s(pg));
        else if (PQconnectionNeedsPassword(pg)) {
            *lasting = true;
            snprintf(err, errlen, "cannot connect: the server asks for a password and none was found: put it in "
                     "~/.pgpass (or the file PGPASSFILE names), or in PGPASSWORD");
        } else
            connect_error(pg, lasting, err, errlen);
        PQfinish(pg);
        return NULL;
    }
    PQsetErrorVerbosity(pg, PQERRORS_DEFAULT);
    /* Notices (e.g. "relation already exists, skipping") are not news. */
    exec_command(pg, "SET client_min_messages = warning", "set", err, errlen);
    widen_send_buffer(pg);
    return pg;
}

/* ---- schema ---- */

static const char fixed_schema[] =
    "CREATE TABLE IF NOT EXISTS hosts("
    "  host_id text PRIMARY KEY,"
    "  events bigint NOT NULL DEFAULT 0,"
    "  batches bigint NOT NULL DEFAULT 0,"
    "  last_batch_id bigint NOT NULL DEFAULT 0,"
    "  last_hash bytea,"
    "  last_event_time timestamptz,"
    "  last_forwarded timestamptz,"
    "  first_forwarded timestamptz NOT NULL DEFAULT now());"
    "CREATE TABLE IF NOT EXISTS gaps("
    "  host_id text NOT NULL,"
    "  first_batch bigint NOT NULL,"
    "  last_batch bigint NOT NULL,"
    "  resume_hash bytea NOT NULL,"
    "  recorded timestamptz NOT NULL DEFAULT now(),"
    "  PRIMARY KEY(host_id, first_batch));"
    "CREATE TABLE IF NOT EXISTS refusals("
    "  host_id text NOT NULL,"
    "  batch_id bigint NOT NULL,"
    "  reason text NOT NULL,"
    "  attempts bigint NOT NULL DEFAULT 1,"
    "  first_seen timestamptz NOT NULL DEFAULT now(),"
    "  last_seen timestamptz NOT NULL DEFAULT now(),"
    "  PRIMARY KEY(host_id, batch_id));"
    /* The rules' alerts (storage/alerts.sql.h), made whether or not a host
     * has any yet, so the views can name them; a host's newer columns are
     * added by its mirror. */
    "CREATE TABLE IF NOT EXISTS alerts("
    "  host_id text NOT NULL,"
    "  id bigint NOT NULL,"
    "  event_id bigint NOT NULL,"
    "  rule text NOT NULL,"
    "  priority text NOT NULL,"
    "  time_ns bigint NOT NULL,"
    "  container_id text,"
    "  output text NOT NULL,"
    "  output_fields jsonb NOT NULL,"
    "  tags jsonb NOT NULL,"
    "  suppressed bigint NOT NULL DEFAULT 0,"
    "  PRIMARY KEY(host_id, id));"
    "ALTER TABLE hosts ADD COLUMN IF NOT EXISTS alerts bigint NOT NULL DEFAULT 0;"
    /* Container names (storage/container_rows.c), for the containers view;
     * a host's rows are upserted as they change (a higher id each time). */
    "CREATE TABLE IF NOT EXISTS container_info("
    "  host_id text NOT NULL,"
    "  id bigint NOT NULL,"
    "  container_id text NOT NULL,"
    "  state text NOT NULL,"
    "  why text, name text, image text, image_repository text, image_tag text,"
    "  pod_name text, pod_namespace text, pod_uid text, sandbox_id text,"
    "  is_sandbox bigint, privileged bigint, terminal bigint, user_uid bigint, user_gid bigint,"
    "  user_name text, users bigint, rootfs text, bundle text, state_file text, resolved_ns bigint,"
    "  PRIMARY KEY(host_id, id));"
    /* The host's name (gethostname), shown beside its id. */
    "ALTER TABLE hosts ADD COLUMN IF NOT EXISTS hostname text;";

static const char *pg_type(enum local_kind k)
{
    switch (k) {
    case LOCAL_INT: return "bigint";
    case LOCAL_REAL: return "double precision";
    case LOCAL_TEXT: return "text";
    case LOCAL_JSON: return "jsonb";
    case LOCAL_BLOB: break;
    }
    return "bytea";
}

/* A mirror of a local table, keyed (host_id, id); columns only added. */
static void mirror_sql(struct strbuf *sql, const struct local_table *t)
{
    strbuf_printf(sql, "CREATE TABLE IF NOT EXISTS %s(host_id text NOT NULL, id bigint NOT NULL,"
                       " PRIMARY KEY(host_id, id));", t->name);
    for (int i = 1; i < t->ncols; i++)
        strbuf_printf(sql, "ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s %s;", t->name, t->cols[i].name,
                      pg_type(t->cols[i].kind));
}

static bool has_column(PGresult *res, const char *table, const char *column)
{
    for (int i = 0; i < PQntuples(res); i++)
        if (strcmp(PQgetvalue(res, i, 0), table) == 0 && strcmp(PQgetvalue(res, i, 1), column) == 0)
            return true;
    return false;
}

static bool has_columns(PGresult *res, const struct local_table *t)
{
    for (int i = 0; i < t->ncols; i++)
        if (!has_column(res, t->name, t->cols[i].name))
            return false;
    return true;
}

/* The schema has every column of l's tables and this build's views and
 * fixed tables (marked by CENTRAL_SCHEMA_MARK on events_full). Checked
 * first because the DDL, even when it changes nothing, locks the tables
 * ACCESS EXCLUSIVE: a forwarder starting on one host waited for every
 * other host's transaction, held up the next ones, and could deadlock with
 * one going on to upsert runs. Any error: not current. */
static bool schema_current(PGconn *pg, const struct local *l)
{
    PGresult *res = PQexec(pg, "SELECT obj_description(to_regclass('events_full'), 'pg_class')");
    bool current = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
                   strcmp(PQgetvalue(res, 0, 0), CENTRAL_SCHEMA_MARK) == 0;
    PQclear(res);
    if (!current)
        return false;
    res = PQexec(pg, "SELECT table_name, column_name FROM information_schema.columns"
                     " WHERE table_schema = current_schema()"
                     " AND table_name IN ('runs', 'connections', 'events', 'batches', 'alerts', 'container_info', 'hosts')");
    current = PQresultStatus(res) == PGRES_TUPLES_OK && has_columns(res, &l->runs) &&
              has_columns(res, &l->connections) && has_columns(res, &l->events) && has_columns(res, &l->batches) &&
              (!l->has_alerts || has_columns(res, &l->alerts)) &&
              (!l->has_container_info || has_columns(res, &l->container_info)) &&
              has_column(res, "hosts", "hostname");
    PQclear(res);
    return current;
}

/* How long the schema's DDL waits for a table before it lets go of every
 * lock it took and the forwarder tries again (its retry backoff): less than
 * PostgreSQL's deadlock_timeout (1 s by default). A reader whose statement
 * waits for a table the DDL holds waits less than that, and the DDL gives
 * way before a deadlock can be found: the reader is never its victim. */
#define SCHEMA_LOCK_TIMEOUT "200ms"

/* The DDL that makes the schema current, in the transaction that holds the
 * schema lock. 0, or -1 with err. */
static int change_schema(PGconn *pg, const struct local *l, char *err, size_t errlen)
{
    struct strbuf sql = {0};
    strbuf_puts(&sql, "SET LOCAL lock_timeout = '" SCHEMA_LOCK_TIMEOUT "';");
    strbuf_puts(&sql, fixed_schema);
    mirror_sql(&sql, &l->runs);
    mirror_sql(&sql, &l->connections);
    mirror_sql(&sql, &l->events);
    mirror_sql(&sql, &l->batches);
    if (l->has_alerts)
        mirror_sql(&sql, &l->alerts);
    if (l->has_container_info)
        mirror_sql(&sql, &l->container_info);
    linux_names_sql(&sql);   /* the lookup tables the views join */
    strbuf_puts(&sql, central_views_sql);
    if (sql.failed) {
        strbuf_free(&sql);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    PGresult *res = PQexec(pg, sql.data);
    strbuf_free(&sql);
    if (PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK) {
        PQclear(res);
        return 0;
    }
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    if (state && strcmp(state, "55P03") == 0) {   /* lock_not_available */
        PQclear(res);
        snprintf(err, errlen, "creating the central schema: a reader or another forwarder holds a table it changes; "
                 "it gave way after " SCHEMA_LOCK_TIMEOUT " (readers never wait on it longer) and tries again");
        return -1;
    }
    return result_error(res, pg, "creating the central schema", err, errlen);
}

int central_ensure_schema(PGconn *pg, const struct local *l, char *err, size_t errlen)
{
    /* The staging tables upserts go through are this session's own,
     * LIKE their table: dropped so they follow new columns. */
    if (exec_command(pg, "DROP TABLE IF EXISTS pg_temp.incoming_runs, pg_temp.incoming_connections, "
                         "pg_temp.incoming_container_info",
                     "dropping the staging tables", err, errlen) != 0)
        return -1;
    if (schema_current(pg, l))
        return 0;
    /* Forwarders change the schema one at a time. One that waited here for
     * another finds the schema that one made, and changes nothing: its DDL
     * would lock every table ACCESS EXCLUSIVE all the same, behind the
     * readers and ahead of them (fleet.exactly_once's follower, a deadlock
     * victim, printed none of its alerts). */
    int rc = exec_command(pg, "BEGIN", "begin", err, errlen);
    if (rc == 0)
        rc = exec_command(pg, "SELECT pg_advisory_xact_lock(7061746)",   /* arbitrary: "seccheckd schema" */
                          "taking the schema lock", err, errlen);
    if (rc == 0 && !schema_current(pg, l))
        rc = change_schema(pg, l, err, errlen);
    if (rc == 0)
        rc = central_commit(pg, err, errlen);
    if (rc != 0)
        central_rollback(pg);
    return rc;
}

/* ---- transactions ---- */

int central_begin(PGconn *pg, const char *host_id, const char *hostname, struct central_head *head, char *err,
                  size_t errlen)
{
    memset(head, 0, sizeof(*head));
    if (exec_command(pg, "BEGIN", "begin", err, errlen) != 0)
        return -1;
    const char *v[] = {host_id, hostname};
    /* No write when the name is the same: the row is locked next anyway. */
    PGresult *res = exec_params(pg, "INSERT INTO hosts(host_id, hostname) VALUES($1, nullif($2, ''))"
                                " ON CONFLICT (host_id) DO UPDATE SET hostname = excluded.hostname"
                                " WHERE excluded.hostname IS NOT NULL AND hosts.hostname IS DISTINCT FROM"
                                " excluded.hostname", 2, v, NULL, NULL);
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        return result_error(res, pg, "registering the host", err, errlen);
    PQclear(res);
    res = PQexecParams(pg, "SELECT last_batch_id, last_hash FROM hosts WHERE host_id = $1 FOR UPDATE", 1, NULL, v,
                       NULL, NULL, 1);
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
        return result_error(res, pg, "reading the host's position", err, errlen);
    const unsigned char *p = (const unsigned char *)PQgetvalue(res, 0, 0);
    uint64_t id = 0;
    for (int i = 0; i < 8 && PQgetlength(res, 0, 0) == 8; i++)
        id = id << 8 | p[i];
    head->last_batch_id = (int64_t)id;
    if (!PQgetisnull(res, 0, 1) && PQgetlength(res, 0, 1) == CHAIN_HASH_LEN)
        memcpy(head->last_hash, PQgetvalue(res, 0, 1), CHAIN_HASH_LEN);
    PQclear(res);
    return 0;
}

int central_commit(PGconn *pg, char *err, size_t errlen)
{
    PGresult *res = PQexec(pg, "COMMIT");
    /* COMMIT of a failed transaction answers ROLLBACK, not an error. */
    if (PQresultStatus(res) != PGRES_COMMAND_OK || strcmp(PQcmdStatus(res), "COMMIT") != 0)
        return result_error(res, pg, "commit", err, errlen);
    PQclear(res);
    return 0;
}

void central_rollback(PGconn *pg)
{
    if (PQstatus(pg) == CONNECTION_OK && PQtransactionStatus(pg) != PQTRANS_IDLE)
        PQclear(PQexec(pg, "ROLLBACK"));
}

int central_batch_hash(PGconn *pg, const char *host_id, int64_t id, uint8_t out[CHAIN_HASH_LEN], char *err,
                       size_t errlen)
{
    char idtext[24];
    snprintf(idtext, sizeof(idtext), "%" PRId64, id);
    const char *v[] = {host_id, idtext};
    PGresult *res = PQexecParams(pg, "SELECT hash FROM batches WHERE host_id = $1 AND id = $2", 2, NULL, v, NULL,
                                 NULL, 1);
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        return result_error(res, pg, "reading a central batch", err, errlen);
    int found = PQntuples(res) == 1 && PQgetlength(res, 0, 0) == CHAIN_HASH_LEN;
    if (found)
        memcpy(out, PQgetvalue(res, 0, 0), CHAIN_HASH_LEN);
    PQclear(res);
    return found;
}

int central_record_gap(PGconn *pg, const char *host_id, int64_t first, int64_t last,
                       const uint8_t resume_hash[CHAIN_HASH_LEN], char *err, size_t errlen)
{
    char f[24], t[24];
    snprintf(f, sizeof(f), "%" PRId64, first);
    snprintf(t, sizeof(t), "%" PRId64, last);
    const char *v[] = {host_id, f, t, (const char *)resume_hash};
    int len[] = {0, 0, 0, CHAIN_HASH_LEN}, fmt[] = {0, 0, 0, 1};
    PGresult *res = exec_params(pg,
                                "WITH g AS (INSERT INTO gaps(host_id, first_batch, last_batch, resume_hash)"
                                " VALUES($1, $2, $3, $4) RETURNING 1)"
                                " UPDATE hosts SET last_batch_id = $3, last_hash = $4 WHERE host_id = $1",
                                4, v, len, fmt);
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        return result_error(res, pg, "recording a gap", err, errlen);
    PQclear(res);
    return 0;
}

int central_record_refusal(PGconn *pg, const char *host_id, int64_t batch_id, const char *reason, char *err,
                           size_t errlen)
{
    char b[24];
    snprintf(b, sizeof(b), "%" PRId64, batch_id);
    const char *v[] = {host_id, b, reason};
    PGresult *res = exec_params(pg,
                                "INSERT INTO refusals(host_id, batch_id, reason) VALUES($1, $2, $3)"
                                " ON CONFLICT (host_id, batch_id) DO UPDATE SET attempts = refusals.attempts + 1,"
                                " last_seen = now(), reason = excluded.reason",
                                3, v, NULL, NULL);
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        return result_error(res, pg, "recording a refusal", err, errlen);
    PQclear(res);
    return 0;
}

/* ---- shipping ---- */

struct copy_sink {
    PGconn *pg;
    int64_t waited_ns;              /* blocked handing data to the server */
};

static int copy_flush(struct strbuf *out, void *data)
{
    struct copy_sink *c = data;
    if (out->failed)
        return -1;
    int64_t start = monotonic_ns();
    int rc = PQputCopyData(c->pg, out->data, (int)out->len) == 1 ? 0 : -1;
    c->waited_ns += monotonic_ns() - start;
    strbuf_reset(out);
    return rc;
}

/* COPY rows of t (selected by where over lo..hi) into target. Rows
 * copied, -1 central error, -2 local error. */
static int64_t copy_table(PGconn *pg, struct local *l, const struct local_table *t, const char *target,
                          const char *where, int64_t lo, int64_t hi, const char *host_id, struct local_span *span,
                          int64_t *waited_ns, char *err, size_t errlen)
{
    struct strbuf sql = {0}, buf = {0};
    strbuf_printf(&sql, "COPY %s(host_id,", target);
    local_column_list(t, &sql);
    strbuf_puts(&sql, ") FROM STDIN (FORMAT binary)");
    PGresult *res = PQexec(pg, sql.failed ? "" : sql.data);
    strbuf_free(&sql);
    if (PQresultStatus(res) != PGRES_COPY_IN)
        return result_error(res, pg, target, err, errlen);
    PQclear(res);
    struct copy_sink sink = {.pg = pg};
    char lerr[256] = "";
    int64_t rows = local_copy_rows(l, t, where, lo, hi, host_id, &buf, COPY_FLUSH_BYTES, copy_flush, &sink, span,
                                   lerr, sizeof(lerr));
    strbuf_free(&buf);
    if (waited_ns)
        *waited_ns = sink.waited_ns;
    /* A local failure aborts the COPY, so nothing partial can commit. */
    PQputCopyEnd(pg, rows == -1 ? "local read failed" : NULL);
    int rc = 0;
    while ((res = PQgetResult(pg)) != NULL) {
        if (PQresultStatus(res) != PGRES_COMMAND_OK && rc == 0) {
            rc = -1;
            result_error(res, pg, target, err, errlen);
            continue;
        }
        PQclear(res);
    }
    if (rows == -1) {
        snprintf(err, errlen, "%s", lerr);
        return -2;
    }
    if (rows == -2 && rc == 0)
        pg_error(pg, target, err, errlen);
    return rc != 0 || rows < 0 ? -1 : rows;
}

/* Runs and connections change after their first batch (counters, close
 * time): staged by COPY, then upserted. */
static int upsert_table(PGconn *pg, struct local *l, const struct local_table *t, const char *where, int64_t lo,
                        int64_t hi, const char *host_id, char *err, size_t errlen)
{
    char stage[96];
    snprintf(stage, sizeof(stage), "incoming_%s", t->name);
    struct strbuf sql = {0};
    strbuf_printf(&sql, "CREATE TEMP TABLE IF NOT EXISTS %s (LIKE %s) ON COMMIT DELETE ROWS", stage, t->name);
    int rc = exec_command(pg, sql.failed ? "" : sql.data, "staging table", err, errlen);
    if (rc == 0) {
        int64_t n = copy_table(pg, l, t, stage, where, lo, hi, host_id, NULL, NULL, err, errlen);
        rc = n < 0 ? (int)n : 0;
    }
    if (rc == 0) {
        strbuf_reset(&sql);
        strbuf_printf(&sql, "INSERT INTO %s(host_id,", t->name);
        local_column_list(t, &sql);
        strbuf_puts(&sql, ") SELECT host_id,");
        local_column_list(t, &sql);
        strbuf_printf(&sql, " FROM %s ON CONFLICT (host_id, id) DO UPDATE SET ", stage);
        for (int i = 1; i < t->ncols; i++)
            strbuf_printf(&sql, "%s%s = excluded.%s", i > 1 ? ", " : "", t->cols[i].name, t->cols[i].name);
        strbuf_printf(&sql, "; TRUNCATE %s", stage);
        rc = exec_command(pg, sql.failed ? "" : sql.data, t->name, err, errlen);
    }
    strbuf_free(&sql);
    return rc;
}

/* The container names that changed since the central copy's newest row of
 * this host (the hosts row is locked: one forwarder at a time), upserted:
 * metadata, so a row that comes again is harmless. */
static int ship_container_info(PGconn *pg, struct local *l, const char *host_id, char *err, size_t errlen)
{
    if (!l->has_container_info)
        return 0;
    const char *v[] = {host_id};
    PGresult *res = exec_params(pg, "SELECT coalesce(max(id), 0) FROM container_info WHERE host_id = $1", 1, v,
                                NULL, NULL);
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
        return result_error(res, pg, "container_info", err, errlen);
    int64_t newest = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return upsert_table(pg, l, &l->container_info, "WHERE id > ?1 AND ?2 = 0 ORDER BY id", newest, 0, host_id, err,
                        errlen);
}

int central_sync_open_rows(PGconn *pg, struct local *l, const char *host_id, int64_t runs_from, int64_t conns_from,
                           char *err, size_t errlen)
{
    int rc = upsert_table(pg, l, &l->runs, "WHERE id >= ?1 AND ?2 = 0", runs_from, 0, host_id, err, errlen);
    if (rc == 0)
        rc = upsert_table(pg, l, &l->connections, "WHERE id >= ?1 AND ?2 = 0", conns_from, 0, host_id, err, errlen);
    /* Names the central copy lacks though it has every batch: rows of a
     * host that forwarded before names were shipped. */
    return rc != 0 ? rc : ship_container_info(pg, l, host_id, err, errlen);
}

/* The alerts of the events lo..hi: in the transaction of their batches, so
 * they arrive exactly once, as the events do. Alerts copied, or < 0. */
static int64_t ship_alerts(PGconn *pg, struct local *l, int64_t lo, int64_t hi, const char *host_id, char *err,
                           size_t errlen)
{
    if (!l->has_alerts || lo > hi)
        return 0;
    return copy_table(pg, l, &l->alerts, "alerts", "WHERE event_id BETWEEN ?1 AND ?2 ORDER BY id", lo, hi, host_id,
                      NULL, NULL, err, errlen);
}

int central_ship(PGconn *pg, struct local *l, const char *host_id, const struct local_batch *b, int n,
                 int64_t *events, int64_t *alerts, char *err, size_t errlen)
{
    int64_t lo = INT64_MAX, hi = 0, want = 0;
    for (int i = 0; i < n; i++) {
        want += b[i].events;
        if (b[i].has_range && b[i].events > 0) {
            lo = b[i].first < lo ? b[i].first : lo;
            hi = b[i].last > hi ? b[i].last : hi;
        }
    }
    *events = *alerts = 0;
    int64_t got = 0, started = monotonic_ns(), waited = 0;
    /* The connections the events name, seen while they are copied: a
     * second pass over the events for them cost as much as ~10% of the
     * COPY. Those in between come along, upserted like the rest. */
    struct local_span conns = {.col = local_column_index(&l->events, "conn_id"), .min = 1, .max = 0};
    if (want > 0) {
        got = copy_table(pg, l, &l->events, "events", "WHERE id BETWEEN ?1 AND ?2 ORDER BY id", lo, hi, host_id,
                         &conns, &waited, err, errlen);
        if (got < 0)
            return (int)got;
        if (got != want) {
            snprintf(err, errlen, "batches %" PRId64 "..%" PRId64 " seal %" PRId64 " events but the local "
                     "database holds %" PRId64 " in their range: it was altered (seccheckd verify --db names where)",
                     b[0].id, b[n - 1].id, want, got);
            return -2;
        }
    }
    int64_t nalerts = ship_alerts(pg, l, lo, hi, host_id, err, errlen);
    if (nalerts < 0)
        return (int)nalerts;
    int crc = ship_container_info(pg, l, host_id, err, errlen);
    if (crc != 0)
        return crc;
    int64_t copied = monotonic_ns();
    int64_t nb = copy_table(pg, l, &l->batches, "batches", "WHERE id BETWEEN ?1 AND ?2", b[0].id, b[n - 1].id,
                            host_id, NULL, NULL, err, errlen);
    if (nb < 0)
        return (int)nb;
    if (nb != n) {
        snprintf(err, errlen, "batches %" PRId64 "..%" PRId64 ": %" PRId64 " rows where %d were read", b[0].id,
                 b[n - 1].id, nb, n);
        return -2;
    }
    int rc = upsert_table(pg, l, &l->runs, "WHERE id IN (SELECT run_id FROM batches WHERE id BETWEEN ?1 AND ?2)",
                          b[0].id, b[n - 1].id, host_id, err, errlen);
    if (rc == 0 && conns.min <= conns.max)
        rc = upsert_table(pg, l, &l->connections, "WHERE id BETWEEN ?1 AND ?2", conns.min, conns.max, host_id, err,
                          errlen);
    if (rc != 0)
        return rc;

    char last_id[24], nev[24], nbat[24], last_ns[24], nal[24];
    snprintf(last_id, sizeof(last_id), "%" PRId64, b[n - 1].id);
    snprintf(nev, sizeof(nev), "%" PRId64, got);
    snprintf(nbat, sizeof(nbat), "%d", n);
    snprintf(last_ns, sizeof(last_ns), "%" PRId64, b[n - 1].committed_ns);
    snprintf(nal, sizeof(nal), "%" PRId64, nalerts);
    const char *v[] = {host_id, last_id, (const char *)b[n - 1].hash, nev, nbat, last_ns, nal};
    int len[] = {0, 0, CHAIN_HASH_LEN, 0, 0, 0, 0}, fmt[] = {0, 0, 1, 0, 0, 0, 0};
    PGresult *res = exec_params(pg,
                                "UPDATE hosts SET last_batch_id = $2, last_hash = $3, events = events + $4,"
                                " batches = batches + $5, last_event_time = to_timestamp($6::bigint / 1e9),"
                                " last_forwarded = now(), alerts = alerts + $7 WHERE host_id = $1",
                                7, v, len, fmt);
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        return result_error(res, pg, "moving the host's position", err, errlen);
    PQclear(res);
    *events = got;
    *alerts = nalerts;
    /* Where a slow forwarder's time goes: rendering, or the server. */
    log_debug("forward: %" PRId64 " events copied in %.1f ms (%.1f ms of it waiting for the server), the rest of "
              "the transaction %.1f ms before the commit", got, (double)(copied - started) / 1e6,
              (double)waited / 1e6, (double)(monotonic_ns() - copied) / 1e6);
    return 0;
}
