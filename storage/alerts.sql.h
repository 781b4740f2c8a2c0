/* alerts.sql.h - the alerts the rules raised (rules.h), in the SQLite
 * schema. Included by sink_sqlite.c only.
 *
 * An alert is written in the transaction of the batch that holds its event,
 * right after the event's row, so after a crash no alert lacks its event and
 * no matched event lacks its alert. Columns follow Falco's alert: priority
 * as Falco spells it, output as rendered, output_fields and tags as JSON. */
#include "sql_time.h"

static const char alerts_sql[] =
    /* AUTOINCREMENT: an id is never handed out twice, even once retention
     * deleted every alert, so a delivery position (alert_delivery) never
     * points past an alert not yet sent. */
    "CREATE TABLE IF NOT EXISTS alerts("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  event_id INTEGER NOT NULL,"       /* events.id */
    "  rule TEXT NOT NULL,"
    "  priority TEXT NOT NULL,"          /* Emergency .. Debug */
    "  time_ns INTEGER NOT NULL,"        /* the event's time */
    "  container_id TEXT,"
    "  output TEXT NOT NULL,"
    "  output_fields TEXT NOT NULL,"     /* JSON object */
    "  tags TEXT NOT NULL,"              /* JSON array */
    "  suppressed INTEGER NOT NULL DEFAULT 0,"   /* throttled alerts of the rule and container before it */
    "  evicted INTEGER NOT NULL DEFAULT 0,"      /* the connection's sequences' partial matches evicted before it */
    "  sequence TEXT,"                           /* a sequence's alert: its steps' events (rules.h RULES_SEQUENCE_KEY) */
    /* The row as the batch chain covers it (chain.h chain_alert_encode):
     * verify compares the columns with it. NULL: written before alerts
     * were chained. */
    "  sealed BLOB);"
    /* Retention deletes alerts with their events, by event id range. */
    "CREATE INDEX IF NOT EXISTS alerts_by_event ON alerts(event_id);"
    /* Each alert with what the event says: who, where, the whole message.
     * Replaced at each start, as the other views (views.sql.h). */
    "DROP VIEW IF EXISTS alerts_full;\n"
    "CREATE VIEW alerts_full AS\n"
    "SELECT a.id, a.event_id, a.rule, a.priority, a.time_ns,\n"
    "       " UTC_MS("a.time_ns") " AS time, a.container_id, a.output,\n"
    "       a.output_fields, a.tags, a.suppressed, e.conn_id, e.type_name, e.thread_id, e.thread_group_id,\n"
    "       e.process_name, e.cwd, e.effective_uid, f.message\n"
    "FROM alerts a JOIN events e ON e.id = a.event_id JOIN events_full f ON f.id = a.event_id;\n"
    /* How far delivery (--alerts-url) got, per receiver: every alert up to
     * alert_id was delivered or given up on (alert_outbox.h). target is
     * the receiver's origin, scheme://host:port, never its path or query,
     * where webhooks keep tokens. */
    "CREATE TABLE IF NOT EXISTS alert_delivery("
    "  target TEXT PRIMARY KEY,"
    "  alert_id INTEGER NOT NULL,"
    "  updated_ns INTEGER NOT NULL);"
    /* Earlier builds stored the whole URL: each becomes its origin (the
     * default port made explicit, as libcurl gives it), the row updated last
     * kept when several share one; the token goes with the rest. */
    "CREATE TEMP VIEW delivery_origins AS\n"
    "WITH p AS (SELECT rowid AS r, target, updated_ns, lower(substr(target, 1, instr(target, '://') - 1)) AS scheme,\n"
    "                  substr(target, instr(target, '://') + 3) AS rest\n"
    "           FROM alert_delivery WHERE instr(target, '://') > 0),\n"
    "     a AS (SELECT *, substr(rest, 1, min(instr(rest || '/', '/'), instr(rest || '?', '?'),\n"
    "                                         instr(rest || '#', '#')) - 1) AS authority FROM p),\n"
    "     o AS (SELECT *, scheme || '://' || authority ||\n"
    "                  CASE WHEN instr(CASE WHEN substr(authority, 1, 1) = '['\n"
    "                                       THEN substr(authority, instr(authority, ']') + 1)\n"
    "                                       ELSE authority END, ':') > 0 THEN ''\n"
    "                       WHEN scheme = 'https' THEN ':443' ELSE ':80' END AS origin FROM a)\n"
    "SELECT target, origin, row_number() OVER (PARTITION BY origin ORDER BY updated_ns DESC, r DESC) AS rank FROM o;\n"
    "DELETE FROM alert_delivery WHERE target IN (SELECT target FROM delivery_origins WHERE rank > 1);\n"
    "UPDATE alert_delivery SET target = (SELECT origin FROM delivery_origins d WHERE d.target = alert_delivery.target)\n"
    "WHERE target IN (SELECT target FROM delivery_origins WHERE origin != target);\n"
    "DROP VIEW temp.delivery_origins;";

/* A database made before sequences: their columns added (the rows before
 * are rules' alerts, none evicted). */
static const char alerts_sequence_columns_sql[] =
    "ALTER TABLE alerts ADD COLUMN evicted INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE alerts ADD COLUMN sequence TEXT;";

static const char insert_alert_sql[] =
    "INSERT INTO alerts(event_id, rule, priority, time_ns, container_id, output, output_fields, tags, suppressed,"
    " evicted, sequence, sealed) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)";
