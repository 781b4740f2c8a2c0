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

/* The SQLSTATE of this thread's last failed statement (central_error_is_data). */
static _Thread_local char last_sqlstate[6];

bool central_error_is_data(void)
{
    /* 22 data exception, 23 integrity constraint violation, 42 syntax
     * error or access rule violation (a column of another type). */
    return strncmp(last_sqlstate, "22", 2) == 0 || strncmp(last_sqlstate, "23", 2) == 0 ||
           strncmp(last_sqlstate, "42", 2) == 0;
}

static int result_error(PGresult *res, PGconn *pg, const char *what, char *err, size_t errlen)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    snprintf(last_sqlstate, sizeof(last_sqlstate), "%s", state ? state : "");
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
    "ALTER TABLE hosts ADD COLUMN IF NOT EXISTS hostname text;"
    /* A batch too large for one JetStream message comes in chunks: how
     * many of batch last_batch_id + 1 are in. */
    "ALTER TABLE hosts ADD COLUMN IF NOT EXISTS partial_chunks bigint NOT NULL DEFAULT 0;";

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
              has_column(res, "hosts", "hostname") && has_column(res, "hosts", "partial_chunks");
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
    return central_begin_host(pg, host_id, hostname, head, err, errlen);
}

int central_begin_host(PGconn *pg, const char *host_id, const char *hostname, struct central_head *head, char *err,
                       size_t errlen)
{
    memset(head, 0, sizeof(*head));
    const char *v[] = {host_id, hostname};
    /* No write when the name is the same: the row is locked next anyway. */
    PGresult *res = exec_params(pg, "INSERT INTO hosts(host_id, hostname) VALUES($1, nullif($2, ''))"
                                " ON CONFLICT (host_id) DO UPDATE SET hostname = excluded.hostname"
                                " WHERE excluded.hostname IS NOT NULL AND hosts.hostname IS DISTINCT FROM"
                                " excluded.hostname", 2, v, NULL, NULL);
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        return result_error(res, pg, "registering the host", err, errlen);
    PQclear(res);
    res = PQexecParams(pg, "SELECT last_batch_id, last_hash, partial_chunks FROM hosts WHERE host_id = $1 FOR UPDATE",
                       1, NULL, v, NULL, NULL, 1);
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
        return result_error(res, pg, "reading the host's position", err, errlen);
    const unsigned char *p = (const unsigned char *)PQgetvalue(res, 0, 0);
    uint64_t id = 0;
    for (int i = 0; i < 8 && PQgetlength(res, 0, 0) == 8; i++)
        id = id << 8 | p[i];
    head->last_batch_id = (int64_t)id;
    p = (const unsigned char *)PQgetvalue(res, 0, 2);
    id = 0;
    for (int i = 0; i < 8 && PQgetlength(res, 0, 2) == 8; i++)
        id = id << 8 | p[i];
    head->partial_chunks = (int64_t)id;
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
                                " UPDATE hosts SET last_batch_id = $3, last_hash = $4, partial_chunks = 0"
                                " WHERE host_id = $1",
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

static int64_t local_source_copy(void *ctx, enum local_part part, int64_t lo, int64_t hi, const char *host_id,
                                 struct strbuf *out, size_t flush_at, local_flush_cb flush, void *flush_data,
                                 struct local_span *span, char *err, size_t errlen)
{
    return local_copy_part(ctx, part, lo, hi, host_id, out, flush_at, flush, flush_data, span, err, errlen);
}

void central_local_source(struct central_source *src, struct local *l)
{
    *src = (struct central_source){.tables = l, .copy = local_source_copy, .ctx = l};
}

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

/* COPY part's rows (selected by lo..hi) into target. Rows copied, -1
 * central error, -2 source error. */
static int64_t copy_part(PGconn *pg, const struct central_source *src, enum local_part part, const char *target,
                         int64_t lo, int64_t hi, const char *host_id, struct local_span *span, int64_t *waited_ns,
                         char *err, size_t errlen)
{
    const struct local_table *t = local_part_table(src->tables, part);
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
    int64_t rows = src->copy(src->ctx, part, lo, hi, host_id, &buf, COPY_FLUSH_BYTES, copy_flush, &sink, span, lerr,
                             sizeof(lerr));
    strbuf_free(&buf);
    if (waited_ns)
        *waited_ns = sink.waited_ns;
    /* A source failure aborts the COPY, so nothing partial can commit. */
    PQputCopyEnd(pg, rows == -1 ? "the source's read failed" : NULL);
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
static int upsert_part(PGconn *pg, const struct central_source *src, enum local_part part, int64_t lo, int64_t hi,
                       const char *host_id, int64_t *rows, char *err, size_t errlen)
{
    const struct local_table *t = local_part_table(src->tables, part);
    if (!t)
        return 0;
    char stage[96];
    snprintf(stage, sizeof(stage), "incoming_%s", t->name);
    struct strbuf sql = {0};
    strbuf_printf(&sql, "CREATE TEMP TABLE IF NOT EXISTS %s (LIKE %s) ON COMMIT DELETE ROWS", stage, t->name);
    int rc = exec_command(pg, sql.failed ? "" : sql.data, "staging table", err, errlen);
    int64_t n = 0;
    if (rc == 0) {
        n = copy_part(pg, src, part, stage, lo, hi, host_id, NULL, NULL, err, errlen);
        rc = n < 0 ? (int)n : 0;
    }
    if (rows)
        *rows = rc == 0 ? n : 0;
    if (rc == 0 && n > 0) {
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

/* A count or an id of the host: sql over $1 host_id, $2 lo, $3 hi. -1 on
 * an error (err). */
static int64_t host_number(PGconn *pg, const char *sql, const char *host_id, int64_t lo, int64_t hi,
                           const char *what, char *err, size_t errlen)
{
    char l[24], h[24];
    snprintf(l, sizeof(l), "%" PRId64, lo);
    snprintf(h, sizeof(h), "%" PRId64, hi);
    const char *v[] = {host_id, l, h};
    PGresult *res = exec_params(pg, sql, strstr(sql, "$3") ? 3 : 1, v, NULL, NULL);
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        result_error(res, pg, what, err, errlen);
        return -1;
    }
    int64_t n = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return n;
}

/* The container names that changed since the central copy's newest row of
 * this host (the hosts row is locked: one writer at a time), upserted:
 * metadata, so a row that comes again is harmless. */
static int ship_container_info(PGconn *pg, const struct central_source *src, const char *host_id, char *err,
                               size_t errlen)
{
    if (!src->tables->has_container_info)
        return 0;
    int64_t newest = host_number(pg, "SELECT coalesce(max(id), 0) FROM container_info WHERE host_id = $1", host_id,
                                 0, 0, "container_info", err, errlen);
    return newest < 0 ? -1 : upsert_part(pg, src, LOCAL_PART_NAMES, newest, 0, host_id, NULL, err, errlen);
}

int central_sync_open_rows(PGconn *pg, const struct central_source *src, const char *host_id, int64_t runs_from,
                           int64_t conns_from, int64_t conns_since, int64_t *conns_rows, char *err, size_t errlen)
{
    int rc = upsert_part(pg, src, LOCAL_PART_OPEN_RUNS, runs_from, 0, host_id, NULL, err, errlen);
    if (rc == 0)
        rc = upsert_part(pg, src, LOCAL_PART_OPEN_CONNECTIONS, conns_from, conns_since, host_id, conns_rows, err,
                         errlen);
    /* Names the central copy lacks though it has every batch: rows of a
     * host that forwarded before names were shipped. */
    return rc != 0 ? rc : ship_container_info(pg, src, host_id, err, errlen);
}

/* The alerts of the events lo..hi: in the transaction of their batches, so
 * they arrive exactly once, as the events do. Alerts copied, or < 0. */
static int64_t ship_alerts(PGconn *pg, const struct central_source *src, int64_t lo, int64_t hi, const char *host_id,
                           char *err, size_t errlen)
{
    if (!src->tables->has_alerts || lo > hi)
        return 0;
    return copy_part(pg, src, LOCAL_PART_ALERTS, "alerts", lo, hi, host_id, NULL, NULL, err, errlen);
}

/* Runs an UPDATE or DELETE with int64 parameters after host_id (and the
 * hash, binary, when given as the third). */
static int exec_host(PGconn *pg, const char *sql, const char *host_id, const int64_t *ints, int nints,
                     const uint8_t *hash, const char *what, char *err, size_t errlen)
{
    char text[8][24];
    const char *v[10] = {host_id};
    int len[10] = {0}, fmt[10] = {0}, n = 1;
    if (hash) {
        v[n] = (const char *)hash;
        len[n] = CHAIN_HASH_LEN;
        fmt[n++] = 1;
    }
    for (int i = 0; i < nints && i < 8; i++) {
        snprintf(text[i], sizeof(text[i]), "%" PRId64, ints[i]);
        v[n++] = text[i];
    }
    PGresult *res = exec_params(pg, sql, n, v, len, fmt);
    if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)
        return result_error(res, pg, what, err, errlen);
    PQclear(res);
    return 0;
}

int central_ship(PGconn *pg, const struct central_source *src, const char *host_id, const struct local_batch *b,
                 int n, const struct central_chunk *chunk, int64_t *events, int64_t *alerts, char *err,
                 size_t errlen)
{
    int64_t lo = INT64_MAX, hi = 0, want = 0;
    for (int i = 0; i < n; i++) {
        want += b[i].events;
        if (b[i].has_range && b[i].events > 0) {
            lo = b[i].first < lo ? b[i].first : lo;
            hi = b[i].last > hi ? b[i].last : hi;
        }
    }
    bool whole = !chunk || chunk->final;
    *events = *alerts = 0;
    int64_t got = 0, started = monotonic_ns(), waited = 0;
    /* The connections the events name, seen while they are copied: a
     * second pass over the events for them cost as much as ~10% of the
     * COPY. Those in between come along, upserted like the rest. */
    struct local_span conns = {.col = local_column_index(&src->tables->events, "conn_id"), .min = 1, .max = 0};
    if (want > 0) {
        got = copy_part(pg, src, LOCAL_PART_EVENTS, "events", lo, hi, host_id, &conns, &waited, err, errlen);
        if (got < 0)
            return (int)got;
        int64_t have = got;
        if (chunk && chunk->final && chunk->index > 1 &&
            (have = host_number(pg, "SELECT count(*) FROM events WHERE host_id = $1 AND id BETWEEN $2 AND $3",
                                host_id, lo, hi, "counting a batch's events", err, errlen)) < 0)
            return -1;
        if (whole && have != want) {
            snprintf(err, errlen, "batches %" PRId64 "..%" PRId64 " seal %" PRId64 " events but the host's database "
                     "holds %" PRId64 " in their range: it was altered (seccheckd verify --db names where)",
                     b[0].id, b[n - 1].id, want, have);
            return -2;
        }
    }
    int64_t nalerts = ship_alerts(pg, src, lo, hi, host_id, err, errlen);
    if (nalerts < 0)
        return (int)nalerts;
    int crc = ship_container_info(pg, src, host_id, err, errlen);
    if (crc != 0)
        return crc;
    int64_t copied = monotonic_ns();
    if (whole) {
        int64_t nb = copy_part(pg, src, LOCAL_PART_BATCHES, "batches", b[0].id, b[n - 1].id, host_id, NULL, NULL,
                               err, errlen);
        if (nb < 0)
            return (int)nb;
        if (nb != n) {
            snprintf(err, errlen, "batches %" PRId64 "..%" PRId64 ": %" PRId64 " rows where %d were read", b[0].id,
                     b[n - 1].id, nb, n);
            return -2;
        }
        int rc = upsert_part(pg, src, LOCAL_PART_RUNS, b[0].id, b[n - 1].id, host_id, NULL, err, errlen);
        if (rc != 0)
            return rc;
    }
    if (conns.min <= conns.max) {
        int rc = upsert_part(pg, src, LOCAL_PART_CONNECTIONS, conns.min, conns.max, host_id, NULL, err, errlen);
        if (rc != 0)
            return rc;
    }
    int rc;
    if (whole) {
        int64_t v[] = {b[n - 1].id, got, whole ? n : 0, b[n - 1].committed_ns, nalerts};
        rc = exec_host(pg,
                       "UPDATE hosts SET last_hash = $2, last_batch_id = $3, events = events + $4,"
                       " batches = batches + $5, last_event_time = to_timestamp($6::bigint / 1e9),"
                       " last_forwarded = now(), alerts = alerts + $7, partial_chunks = 0 WHERE host_id = $1",
                       host_id, v, 5, b[n - 1].hash, "moving the host's position", err, errlen);
    } else {
        int64_t v[] = {chunk->index, got, nalerts};
        rc = exec_host(pg,
                       "UPDATE hosts SET partial_chunks = $2, events = events + $3, alerts = alerts + $4,"
                       " last_forwarded = now() WHERE host_id = $1",
                       host_id, v, 3, NULL, "moving the host's position", err, errlen);
    }
    if (rc != 0)
        return rc;
    *events = got;
    *alerts = nalerts;
    /* Where a slow forwarder's time goes: rendering, or the server. */
    log_debug("forward: %" PRId64 " events copied in %.1f ms (%.1f ms of it waiting for the server), the rest of "
              "the transaction %.1f ms before the commit", got, (double)(copied - started) / 1e6,
              (double)waited / 1e6, (double)(monotonic_ns() - copied) / 1e6);
    return 0;
}

/* ---- applying: the chain, gaps, refusals ---- */

static void hex8(const uint8_t *h, char out[17])
{
    for (int i = 0; i < 8; i++)
        snprintf(out + 2 * i, 3, "%02x", h[i]);
}

int central_refuse(PGconn *pg, const char *host_id, int64_t batch_id, const char *why, char *reason,
                   size_t reasonlen, char *err, size_t errlen)
{
    snprintf(reason, reasonlen, "%s: another host forwards under host id '%s', or its database was restored from "
             "an older copy; not merged", why, host_id);
    return central_record_refusal(pg, host_id, batch_id, reason, err, errlen);
}

/* The part of b[0..n) that chains on from head: consecutive ids, each
 * prev_hash the previous hash. */
static int chained_prefix(const struct central_head *head, const struct local_batch *b, int n)
{
    int i = 0;
    while (i < n && b[i].id == (i ? b[i - 1].id : head->last_batch_id) + 1 &&
           memcmp(b[i].prev, i ? b[i - 1].hash : head->last_hash, CHAIN_HASH_LEN) == 0)
        i++;
    return i;
}

/* A batch that came in chunks was left half-way (its first chunks are
 * there, hosts.partial_chunks says how many) and comes again whole: its
 * rows that are there go. */
static int drop_partial(PGconn *pg, const char *host_id, struct central_head *head, const struct local_batch *b,
                        char *err, size_t errlen)
{
    int64_t v[] = {b->has_range ? b->first : 1, b->has_range ? b->last : 0};
    if (exec_host(pg,
                  "WITH e AS (DELETE FROM events WHERE host_id = $1 AND id BETWEEN $2 AND $3),"
                  " a AS (DELETE FROM alerts WHERE host_id = $1 AND event_id BETWEEN $2 AND $3)"
                  " UPDATE hosts SET partial_chunks = 0 WHERE host_id = $1",
                  host_id, v, 2, NULL, "dropping a batch's first chunks", err, errlen) != 0)
        return -1;
    head->partial_chunks = 0;
    return 0;
}

static int record_gap(PGconn *pg, const char *host_id, struct central_head *head, const struct local_batch *first,
                      struct central_outcome *out, char *err, size_t errlen)
{
    out->gap_first = head->last_batch_id + 1;
    out->gap_last = first->id - 1;
    if (central_record_gap(pg, host_id, out->gap_first, out->gap_last, first->prev, err, errlen) != 0)
        return -1;
    head->last_batch_id = out->gap_last;
    head->partial_chunks = 0;
    memcpy(head->last_hash, first->prev, CHAIN_HASH_LEN);
    return 0;
}

int central_apply(PGconn *pg, const struct central_source *src, const char *host_id, struct central_head *head,
                  const struct local_batch *b, int n, const struct central_chunk *chunk, unsigned flags,
                  struct central_outcome *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    out->gap_first = 1;
    int64_t last = head->last_batch_id;
    /* Already there: a message delivered again, a chunk applied before. */
    if (b[n - 1].id <= last || (chunk && b[0].id == last + 1 && chunk->index <= head->partial_chunks)) {
        out->what = CENTRAL_ALREADY;
        return 0;
    }
    if (b[0].id <= last) {
        snprintf(out->reason, sizeof(out->reason), "batches %" PRId64 "..%" PRId64 " overlap the central copy, "
                 "which ends at batch %" PRId64 ": sent again grouped otherwise (the stream lost messages?); "
                 "not merged", b[0].id, b[n - 1].id, last);
        out->what = CENTRAL_REFUSED;
        out->refused_id = b[0].id;
        return central_record_refusal(pg, host_id, b[0].id, out->reason, err, errlen);
    }
    bool after_gap = b[0].id > last + 1;
    /* A chunk comes after the one before it, the first one after the batch before. */
    bool in_order = !chunk || chunk->index == (after_gap ? 1 : head->partial_chunks + 1);
    if (!in_order || (after_gap && !(flags & CENTRAL_GAP_KNOWN))) {
        out->what = CENTRAL_WAITING;
        return 0;
    }
    if (after_gap && record_gap(pg, host_id, head, &b[0], out, err, errlen) != 0)
        return -1;
    if (head->partial_chunks > 0 && !chunk && drop_partial(pg, host_id, head, &b[0], err, errlen) != 0)
        return -1;
    int ok = chained_prefix(head, b, n);
    if (ok == 0 || (ok < n && (flags & CENTRAL_WHOLE))) {
        char want[17], got[17], why[200];
        hex8(ok ? b[ok - 1].hash : head->last_hash, want);
        hex8(b[ok].prev, got);
        snprintf(why, sizeof(why), "its prev_hash %s... does not follow the central copy's batch %" PRId64
                 " (hash %s...)", got, ok ? b[ok - 1].id : head->last_batch_id, want);
        out->what = CENTRAL_REFUSED;
        out->refused_id = b[ok].id;
        return central_refuse(pg, host_id, b[ok].id, why, out->reason, sizeof(out->reason), err, errlen);
    }
    int rc = central_ship(pg, src, host_id, b, ok, chunk, &out->events, &out->alerts, err, errlen);
    if (rc != 0)
        return rc;
    out->what = CENTRAL_SHIPPED;
    if (!chunk || chunk->final) {
        out->shipped = ok;
        head->last_batch_id = b[ok - 1].id;
        memcpy(head->last_hash, b[ok - 1].hash, CHAIN_HASH_LEN);
        head->partial_chunks = 0;
    } else {
        head->partial_chunks = chunk->index;
    }
    return 0;
}
