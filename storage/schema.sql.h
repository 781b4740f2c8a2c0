/* schema.sql.h - the SQLite schema, version SQLITE_SCHEMA_VERSION.
 * Included by sink_sqlite.c only; kept apart so the SQL reads as SQL.
 *
 * Version 2 stores each event once: detail holds the message's own fields,
 * not context_data, sysno or exit, which the columns hold (event_json.h);
 * events_full (views.sql.h) puts the whole message back together. A
 * version 1 database (detail whole, type_name stored) is upgraded in place
 * at start by adding the four new context columns, which SQLite does
 * without touching a row; its old rows keep their whole detail, and
 * meta.schema_v2_first_event_id says where the new ones begin. */
#define SQLITE_SCHEMA_VERSION 2

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS meta("
    "  key TEXT PRIMARY KEY,"
    "  value TEXT NOT NULL);"

    /* One row per daemon run: received = stored + discarded + rejected + store_failed. */
    "CREATE TABLE IF NOT EXISTS runs("
    "  id INTEGER PRIMARY KEY,"
    "  started_ns INTEGER NOT NULL,"
    "  stopped_ns INTEGER,"
    "  pid INTEGER NOT NULL,"
    "  received INTEGER NOT NULL DEFAULT 0,"
    "  stored INTEGER NOT NULL DEFAULT 0,"
    "  discarded INTEGER NOT NULL DEFAULT 0,"
    "  rejected INTEGER NOT NULL DEFAULT 0,"
    "  store_failed INTEGER NOT NULL DEFAULT 0,"
    "  rejected_short_packet INTEGER NOT NULL DEFAULT 0,"
    "  rejected_bad_header INTEGER NOT NULL DEFAULT 0,"
    "  rejected_oversize INTEGER NOT NULL DEFAULT 0,"
    "  rejected_no_memory INTEGER NOT NULL DEFAULT 0,"
    "  rejected_queue_full INTEGER NOT NULL DEFAULT 0,"
    "  unknown_type INTEGER NOT NULL DEFAULT 0,"
    "  bad_payload INTEGER NOT NULL DEFAULT 0,"
    /* NULL: the daemon started. 'deleted' or 'replaced': its database file
     * went away (or another, a restored copy, took its place) while it
     * ran, and it went on in the file at the path with this row: a new
     * segment of the run, and of the batch chain when the file was new. */
    "  reopen_reason TEXT);"

    "CREATE TABLE IF NOT EXISTS connections("
    "  id INTEGER PRIMARY KEY,"
    "  run_id INTEGER NOT NULL REFERENCES runs(id),"
    "  peer_pid INTEGER,"
    "  peer_uid INTEGER,"
    "  peer_gid INTEGER,"
    "  connect_ns INTEGER NOT NULL,"
    "  close_ns INTEGER,"
    "  client_version INTEGER,"
    "  messages INTEGER NOT NULL,"
    "  bytes INTEGER NOT NULL,"
    "  last_dropped_count INTEGER NOT NULL,"
    "  sandbox_dropped INTEGER NOT NULL,"
    "  dropped_count_regressions INTEGER NOT NULL DEFAULT 0,"
    "  rejected INTEGER NOT NULL,"
    "  decode_errors INTEGER NOT NULL,"
    "  close_reason TEXT,"
    "  paused_count INTEGER NOT NULL DEFAULT 0,"   /* reading paused: over its fair share of the queue */
    "  paused_ns INTEGER NOT NULL DEFAULT 0,"
    /* The sandbox it streams from (runsc's id): its container_info rows
     * (same sandbox) name its events; NULL while not known. How it was
     * known: 'peer' (the runsc command that connected), 'container' (the
     * state file of the first container it named), 'restart'. */
    "  sandbox TEXT,"
    "  sandbox_bound_by TEXT);"

    /* Tamper evidence (chain.h): one row per committed batch of events, in
     * the batch's transaction; hash chains on from the previous row. */
    "CREATE TABLE IF NOT EXISTS batches("
    "  id INTEGER PRIMARY KEY,"
    "  run_id INTEGER NOT NULL,"
    "  first_event_id INTEGER,"
    "  last_event_id INTEGER,"
    "  events INTEGER NOT NULL,"
    "  committed_ns INTEGER NOT NULL,"
    "  prev_hash BLOB NOT NULL,"
    "  hash BLOB NOT NULL,"
    "  keyed INTEGER NOT NULL,"
    /* The batch's alerts (their ids are consecutive) as the chain covers
     * them; NULL: written before alerts were chained (chain.h). */
    "  alerts INTEGER,"
    "  first_alert_id INTEGER);";

/* The events table, in two parts around the type_name expression (built
 * from the decoder's names: schema_type_name_sql). Version 1 stored
 * type_name; here it is computed on read, so costs no byte. The last four
 * columns are version 2's, last so that an upgraded version 1 table has
 * the same columns in the same order. */
static const char events_table_head_sql[] =
    "CREATE TABLE IF NOT EXISTS events("
    "  id INTEGER PRIMARY KEY,"
    "  conn_id INTEGER NOT NULL,"
    "  recv_ns INTEGER NOT NULL,"
    "  msg_type INTEGER NOT NULL,"
    "  type_name TEXT GENERATED ALWAYS AS (";
static const char events_table_tail_sql[] =
    ") VIRTUAL,"
    "  dropped_count INTEGER NOT NULL,"
    "  decode_error TEXT,"
    "  time_ns INTEGER,"
    "  container_id TEXT,"
    "  thread_id INTEGER,"
    "  thread_group_id INTEGER,"
    "  process_name TEXT,"
    "  cwd TEXT,"
    "  real_uid INTEGER, effective_uid INTEGER, saved_uid INTEGER,"
    "  real_gid INTEGER, effective_gid INTEGER, saved_gid INTEGER,"
    "  sysno INTEGER,"
    "  is_exit INTEGER,"
    "  result INTEGER,"
    "  errno INTEGER,"
    "  detail TEXT,"
    "  raw BLOB NOT NULL,"
    "  thread_start_time_ns INTEGER,"
    "  thread_group_start_time_ns INTEGER,"
    "  parent_thread_group_id INTEGER,"
    "  is_exec_session INTEGER);";
    /* Its secondary indexes are chosen at start (--indexes): event_indexes.c. */

/* Version 1 -> 2, in the start transaction: adding a column only rewrites
 * the table's definition, so it takes the same time on any size. */
static const char upgrade_v1_sql[] =
    "ALTER TABLE events ADD COLUMN thread_start_time_ns INTEGER;"
    "ALTER TABLE events ADD COLUMN thread_group_start_time_ns INTEGER;"
    "ALTER TABLE events ADD COLUMN parent_thread_group_id INTEGER;"
    "ALTER TABLE events ADD COLUMN is_exec_session INTEGER;"
    "INSERT OR REPLACE INTO meta SELECT 'schema_v2_first_event_id', coalesce(max(id), 0) + 1 FROM events;"
    "UPDATE meta SET value = '2' WHERE key = 'schema_version';";

/* Parameter numbers are the bind_* indexes in sink_sqlite.c; an upgraded
 * version 1 table still stores type_name (?28), the other does not. */
#define INSERT_EVENT_COLUMNS \
    "INSERT INTO events(conn_id, recv_ns, msg_type, dropped_count, decode_error," \
    " time_ns, container_id, thread_id, thread_group_id, process_name, cwd," \
    " real_uid, effective_uid, saved_uid, real_gid, effective_gid, saved_gid," \
    " sysno, is_exit, result, errno, detail, raw," \
    " thread_start_time_ns, thread_group_start_time_ns, parent_thread_group_id, is_exec_session"
#define INSERT_EVENT_VALUES "?1,?2,?3,?4,?5, ?6,?7,?8,?9,?10,?11, ?12,?13,?14,?15,?16,?17, ?18,?19,?20,?21,?22,?23, ?24,?25,?26,?27"
static const char insert_event_sql[] = INSERT_EVENT_COLUMNS ") VALUES(" INSERT_EVENT_VALUES ")";
static const char insert_event_v1_sql[] = INSERT_EVENT_COLUMNS ", type_name) VALUES(" INSERT_EVENT_VALUES ",?28)";

static const char upsert_conn_sql[] =
    "INSERT INTO connections(id, run_id, peer_pid, peer_uid, peer_gid, connect_ns, close_ns,"
    " client_version, messages, bytes, last_dropped_count, sandbox_dropped, rejected,"
    " decode_errors, close_reason, dropped_count_regressions, paused_count, paused_ns, sandbox, sandbox_bound_by)"
    " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
    " ON CONFLICT(id) DO UPDATE SET close_ns=excluded.close_ns,"
    " client_version=excluded.client_version, messages=excluded.messages,"
    " bytes=excluded.bytes, last_dropped_count=excluded.last_dropped_count,"
    " sandbox_dropped=excluded.sandbox_dropped, rejected=excluded.rejected,"
    " decode_errors=excluded.decode_errors, close_reason=excluded.close_reason,"
    " dropped_count_regressions=excluded.dropped_count_regressions,"
    " paused_count=excluded.paused_count, paused_ns=excluded.paused_ns,"
    " sandbox=coalesce(connections.sandbox, excluded.sandbox),"   /* bound once: never rebound */
    " sandbox_bound_by=coalesce(connections.sandbox_bound_by, excluded.sandbox_bound_by)";

/* A database made before the connections table had them. */
static const char conn_sandbox_columns_sql[] =
    "ALTER TABLE connections ADD COLUMN sandbox TEXT;"
    "ALTER TABLE connections ADD COLUMN sandbox_bound_by TEXT;";
static const char conn_pause_columns_sql[] =
    "ALTER TABLE connections ADD COLUMN paused_count INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE connections ADD COLUMN paused_ns INTEGER NOT NULL DEFAULT 0;";

/* A database made before runs had it. */
static const char runs_reopen_column_sql[] = "ALTER TABLE runs ADD COLUMN reopen_reason TEXT;";

static const char update_run_sql[] =
    "UPDATE runs SET received=received+?1, stored=stored+?2, discarded=discarded+?3,"
    " rejected=rejected+?4, store_failed=store_failed+?5, rejected_short_packet=rejected_short_packet+?6,"
    " rejected_bad_header=rejected_bad_header+?7, rejected_oversize=rejected_oversize+?8,"
    " unknown_type=unknown_type+?9, bad_payload=bad_payload+?10, rejected_no_memory=rejected_no_memory+?12,"
    " rejected_queue_full=rejected_queue_full+?13"
    " WHERE id=?11";

static const char chain_last_sql[] = "SELECT id, hash FROM batches ORDER BY id DESC LIMIT 1";

static const char chain_insert_sql[] =
    "INSERT INTO batches(id, run_id, first_event_id, last_event_id, events, committed_ns, prev_hash, hash, keyed,"
    " alerts, first_alert_id) VALUES(?,?,?,?,?,?,?,?,?,?,?)";

/* A database made before alerts were chained: its batches have no alerts
 * (NULL: not covered), its alerts no sealed record. */
static const char batches_alerts_columns_sql[] =
    "ALTER TABLE batches ADD COLUMN alerts INTEGER;"
    "ALTER TABLE batches ADD COLUMN first_alert_id INTEGER;";
static const char alerts_sealed_column_sql[] = "ALTER TABLE alerts ADD COLUMN sealed BLOB;";
