/* Integration: the events table stores each event once, and loses nothing.
 *
 * Every field of every message of every recorded trace is reachable from
 * SQL: each row's events_full.message, as a JSON tree, is exactly the
 * decoder's JSON of the row's raw packet (json.h: the whole message,
 * context_data included). Checked on a new database, and on a database made
 * by schema version 1 (tests/fixtures/db/schema-v1.db) after the daemon
 * upgraded it and appended to it: then verify passes across old and new
 * rows, and the views and export read both. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "arena.h"
#include "daemon.h"
#include "decode.h"
#include "json.h"
#include "replay.h"
#include "strbuf.h"
#include "wire.h"

#ifndef FIXTURES_DB_DIR
#error "FIXTURES_DB_DIR must be defined (tests/fixtures/db)"
#endif

static const char *const trace_names[] = {"exec_loop", "mixed_syscalls", "redis_rw", "drops"};
#define NTRACES 4

/* The schema version 1 fixture: mixed_syscalls.trace, 1235 events in 5 batches. */
#define V1_EVENTS 1235

static struct trace_fixture *traces;
static struct daemon current;   /* removed by the teardown, a failed test included */

static int group_setup(void **state)
{
    if (trace_fixture_setup(state, trace_names, NTRACES) != 0)
        return -1;
    traces = *state;
    return 0;
}

static int test_setup(void **state)
{
    (void)state;
    daemon_prepare(&current);
    return 0;
}

static int test_teardown(void **state)
{
    (void)state;
    daemon_cleanup(&current);
    return 0;
}

/* ---- reading the database ---- */

static sqlite3 *db_open(const char *path)
{
    sqlite3 *db;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        fail_msg("cannot open %s", path);
    return db;
}

static void exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
}

/* Fills temp.want(id, doc): each decoded row's raw packet decoded again and
 * rendered whole by json.h, the document version 1 stored as detail. */
static long long decode_every_row(sqlite3 *db)
{
    exec(db, "CREATE TEMP TABLE want(id INTEGER PRIMARY KEY, doc TEXT NOT NULL)");
    struct decoder dec;
    decoder_init(&dec);
    struct arena arena;
    arena_init(&arena, 1 << 16, 64u << 20);
    struct strbuf doc = {0};
    sqlite3_stmt *rows, *ins;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT id, raw FROM events WHERE decode_error IS NULL", -1, &rows,
                                        NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO temp.want VALUES(?1, ?2)", -1, &ins, NULL), SQLITE_OK);
    long long n = 0;
    while (sqlite3_step(rows) == SQLITE_ROW) {
        const uint8_t *raw = sqlite3_column_blob(rows, 1);
        size_t len = (size_t)sqlite3_column_bytes(rows, 1);
        struct wire_header h;
        assert_int_equal(wire_header_parse(raw, len, &h), WIRE_OK);
        arena_reset(&arena);
        struct event ev;
        memset(&ev, 0, sizeof(ev));
        decode_event(&dec, &arena, &h, raw, len, &ev);
        assert_int_equal(ev.status, DECODE_OK);
        strbuf_reset(&doc);
        assert_int_equal(json_render_message(&doc, ev.msg), 0);
        sqlite3_reset(ins);
        sqlite3_bind_int64(ins, 1, sqlite3_column_int64(rows, 0));
        sqlite3_bind_text(ins, 2, doc.data, (int)doc.len, SQLITE_STATIC);
        assert_int_equal(sqlite3_step(ins), SQLITE_DONE);
        n++;
    }
    sqlite3_finalize(rows);
    sqlite3_finalize(ins);
    strbuf_free(&doc);
    arena_free(&arena);
    return n;
}

/* Nodes (path, JSON type, value) of `left` missing from `right`, both
 * "(id, doc)" queries; the first difference is printed. */
static long long tree_difference(sqlite3 *db, const char *left, const char *right)
{
    char sql[1024];
    snprintf(sql, sizeof(sql),
             "SELECT count(*), min(id || ' ' || fullkey || ' ' || type || ' ' || coalesce(atom, '')) FROM ("
             " SELECT l.id, t.fullkey, t.type, t.atom FROM (%s) l, json_tree(l.doc) t"
             " EXCEPT SELECT r.id, t.fullkey, t.type, t.atom FROM (%s) r, json_tree(r.doc) t)",
             left, right);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    long long n = sqlite3_column_int64(st, 0);
    if (n)
        print_message("first difference: %s\n", (const char *)sqlite3_column_text(st, 1));
    sqlite3_finalize(st);
    return n;
}

/* Every field of every decoded row is in events_full.message, with its
 * value and JSON type, and nothing else is; undecoded rows have none. */
static void assert_every_field_reachable(const char *path)
{
    sqlite3 *db = db_open(path);
    long long decoded = decode_every_row(db);
    assert_true(decoded > 0);
    assert_int_equal(sqlq(db, "SELECT count(*) FROM events_full WHERE decode_error IS NULL AND json_valid(message)"),
                     decoded);
    assert_int_equal(
        sqlq(db, "SELECT count(*) FROM events_full WHERE decode_error IS NOT NULL AND message IS NOT NULL"), 0);
    const char *want = "SELECT id, doc FROM temp.want";
    const char *full = "SELECT id, message AS doc FROM events_full WHERE decode_error IS NULL";
    assert_int_equal(tree_difference(db, want, full), 0);   /* nothing lost */
    assert_int_equal(tree_difference(db, full, want), 0);   /* nothing made up */
    sqlite3_close(db);
}

/* ---- running the daemon and the subcommands ---- */

/* Replays traces[0..n) of the fixture, one connection each; packets sent. */
static long long daemon_run(const int *which, int n)
{
    if (!daemon_start(&current, SECCHECKD_BIN, NULL)) {
        char *log = daemon_read_log(&current);
        fail_msg("daemon did not start: %s", log);
    }
    long long sent = 0;
    for (int i = 0; i < n; i++) {
        const struct replay_trace *t = &traces->traces[which[i]];
        assert_int_equal(replay_connection(current.socket, t, t->version), 0);
        sent += (long long)t->count;
    }
    assert_int_equal(daemon_stop(&current), 0);
    return sent;
}

/* Runs `seccheckd ARGS...` with its output in out_path; its exit status. */
static int run_seccheckd(const char *const *args, const char *out_path)
{
    char cmd[2048];
    int len = snprintf(cmd, sizeof(cmd), "'%s'", SECCHECKD_BIN);
    for (int i = 0; args[i]; i++)
        len += snprintf(cmd + len, sizeof(cmd) - (size_t)len, " '%s'", args[i]);
    snprintf(cmd + len, sizeof(cmd) - (size_t)len, " > '%s' 2>&1", out_path);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot open %s", path);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    if (!in || !out)
        fail_msg("cannot copy %s to %s", from, to);
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
        assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    assert_int_equal(fclose(out), 0);
}

/* ---- the tests ---- */

/* A new database: context, sysno and exit only in their columns (detail
 * never repeats them), and every field of every trace back in events_full. */
static void test_new_database_stores_each_field_once(void **state)
{
    (void)state;
    const int all[] = {0, 1, 2, 3};
    long long sent = daemon_run(all, NTRACES);
    sqlite3 *db = db_open(current.db);
    assert_int_equal(sqlq(db, "SELECT count(*) FROM events"), sent);
    assert_int_equal(sqlq(db, "SELECT value FROM meta WHERE key='schema_version'"), 2);
    assert_int_equal(sqlq(db, "SELECT count(*) FROM events WHERE json_type(detail, '$.context_data') IS NOT NULL"
                           " OR json_type(detail, '$.sysno') IS NOT NULL OR json_type(detail, '$.exit') IS NOT NULL"),
                     0);
    /* The added context columns hold what the traces sent. */
    assert_true(
        sqlq(db, "SELECT count(*) FROM events WHERE thread_start_time_ns > 0 AND thread_group_start_time_ns > 0") > 0);
    assert_true(sqlq(db, "SELECT count(*) FROM events WHERE parent_thread_group_id IS NOT NULL") > 0);
    assert_int_equal(sqlq(db, "SELECT count(*) FROM events WHERE decode_error IS NULL AND time_ns IS NOT NULL"
                           " AND is_exec_session IS NULL"), 0);
    /* 16 KiB pages: less SQLite work per event than 4 KiB (sink_sqlite.c). */
    assert_int_equal(sqlq(db, "PRAGMA page_size"), 16384);
    /* type_name is computed, not stored, and still answers. */
    assert_int_equal(sqlq(db, "SELECT hidden FROM pragma_table_xinfo('events') WHERE name='type_name'"), 2);
    assert_int_equal(sqlq(db, "SELECT count(*) FROM events WHERE msg_type=7 AND type_name='SYSCALL_OPEN'"),
                     sqlq(db, "SELECT count(*) FROM events WHERE msg_type=7"));
    sqlite3_close(db);
    assert_every_field_reachable(current.db);
}

/* A database written by schema version 1 opens, is upgraded in place and
 * appended to; verify, the views, export and events_full read both kinds
 * of rows. */
static void test_version_1_database_keeps_working(void **state)
{
    (void)state;
    copy_file(FIXTURES_DB_DIR "/schema-v1.db", current.db);
    assert_int_equal(db_query_int(current.db, "SELECT value FROM meta WHERE key='schema_version'"), 1);
    assert_int_equal(db_query_int(current.db, "SELECT count(*) FROM events"), V1_EVENTS);

    const int some[] = {1, 0, 3};   /* mixed (as in the fixture), exec_loop, drops */
    long long sent = daemon_run(some, 3);
    char *log = daemon_read_log(&current);
    assert_non_null(strstr(log, "upgrading the database from schema version 1"));
    free(log);

    sqlite3 *db = db_open(current.db);
    assert_int_equal(sqlq(db, "SELECT value FROM meta WHERE key='schema_version'"), 2);
    assert_int_equal(sqlq(db, "SELECT value FROM meta WHERE key='schema_v2_first_event_id'"), V1_EVENTS + 1);
    assert_int_equal(sqlq(db, "SELECT count(*) FROM events"), V1_EVENTS + sent);
    assert_int_equal(sqlq(db, "PRAGMA page_size"), 4096);   /* a database keeps the pages it was made with */
    /* Old rows as they were (whole detail), new rows each field once. */
    assert_int_equal(sqlq(db, "SELECT count(*) FROM events WHERE id <= 1235 AND decode_error IS NULL AND"
                           " json_type(detail, '$.context_data') IS NULL"), 0);
    assert_int_equal(sqlq(db, "SELECT count(*) FROM events WHERE id > 1235 AND"
                           " json_type(detail, '$.context_data') IS NOT NULL"), 0);
    assert_int_equal(sqlq(db, "SELECT count(*) FROM events WHERE id > 1235 AND decode_error IS NULL AND"
                           " (type_name IS NULL OR is_exec_session IS NULL)"), 0);
    /* The views see both. */
    static const char *const views[] = {"execs", "files_opened", "failed_syscalls", "network"};
    for (size_t i = 0; i < sizeof(views) / sizeof(views[0]); i++) {
        char sql[160];
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s WHERE id <= 1235", views[i]);
        long long old_rows = sqlq(db, sql);
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s WHERE id > 1235", views[i]);
        long long new_rows = sqlq(db, sql);
        if (old_rows == 0 || new_rows < old_rows)
            fail_msg("view %s: %lld old rows, %lld new (mixed_syscalls was replayed into both)", views[i],
                     old_rows, new_rows);
    }
    assert_int_equal(sqlq(db, "SELECT count(*) FROM sandbox_drops WHERE containers LIKE 'runsc-%'"), 4);
    /* The same trace gives the same messages before and after the upgrade. */
    assert_int_equal(sqlq(db, "SELECT count(*) FROM (SELECT message FROM events_full WHERE conn_id = 1"
                           " EXCEPT SELECT message FROM events_full WHERE conn_id = 2)"), 0);
    long long batches = sqlq(db, "SELECT count(*) FROM batches"), events = sqlq(db, "SELECT count(*) FROM events");
    sqlite3_close(db);
    assert_every_field_reachable(current.db);

    /* verify: the chain runs on across the upgrade. */
    char out[400], want[128];
    snprintf(out, sizeof(out), "%s/verify.out", current.dir);
    const char *verify[] = {"verify", "--db", current.db, NULL};
    assert_int_equal(run_seccheckd(verify, out), 0);
    /* the batches written before alerts were chained (the version 1
     * file's) verify by the format they were sealed in, and are said */
    long long uncovered = db_query_int(current.db, "SELECT count(*) FROM batches WHERE alerts IS NULL");
    assert_true(uncovered > 0 && uncovered < batches);
    snprintf(want, sizeof(want), "ok: %lld batches, %lld events, 0 alerts verified", batches, events);
    if (!strstr(slurp(out), want))
        fail_msg("verify: expected '%s', got: %s", want, slurp(out));
    snprintf(want, sizeof(want), "note: %lld batches were written before alerts were chained", uncovered);
    if (!strstr(slurp(out), want))
        fail_msg("verify: expected '%s', got: %s", want, slurp(out));
    /* ... and compares each row with its raw by the row's own schema: a
     * version 1 row's whole detail and NULL new columns, a version 2 row's
     * detail without context (issue 19 item 6). */
    char tampered[400];
    snprintf(tampered, sizeof(tampered), "%s/tampered.db", current.dir);
    copy_file(current.db, tampered);
    sqlite3 *t;
    assert_int_equal(sqlite3_open(tampered, &t), SQLITE_OK);
    assert_int_equal(sqlite3_exec(t, "UPDATE events SET detail = json_remove(detail, '$.context_data') WHERE id = 5;"
                                     "UPDATE events SET is_exec_session = 1 WHERE id = 6;"
                                     "UPDATE events SET process_name = 'evil' WHERE id = 1240;"
                                     "UPDATE events SET detail = json_set(detail, '$.context_data', json('{}'))"
                                     " WHERE id = 1241 AND detail IS NOT NULL",
                                     NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_total_changes(t), 4);
    sqlite3_close(t);
    const char *verify_tampered[] = {"verify", "--db", tampered, NULL};
    assert_int_equal(run_seccheckd(verify_tampered, out), 1);
    static const char *const named[] = {
        "event 5 (batch 1): altered: detail is",         "event 6 (batch 1): altered: is_exec_session is",
        "event 1240 (batch 6): altered: process_name is", "event 1241 (batch 6): altered: detail is",
        "altered: 4 events",
    };
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
        if (!strstr(slurp(out), named[i]))
            fail_msg("verify of the tampered copy: expected '%s', got: %s", named[i], slurp(out));

    /* export: one line per row, old and new, each value once. */
    char nd[400];
    snprintf(nd, sizeof(nd), "%s/export.ndjson", current.dir);
    const char *export[] = {"export", "--db", current.db, "--format", "ndjson", "--out", nd, NULL};
    assert_int_equal(run_seccheckd(export, out), 0);
    FILE *f = fopen(nd, "r");
    assert_non_null(f);
    long long lines = 0, with_context = 0;
    char line[1 << 16];
    while (fgets(line, sizeof(line), f)) {
        lines++;
        if (strstr(line, "\"context_data\""))
            with_context++;
    }
    fclose(f);
    assert_int_equal(lines, events);
    assert_int_equal(with_context, 0);

    /* A second start finds version 2 and leaves the marker alone. */
    const int one[] = {0};
    daemon_run(one, 1);
    assert_int_equal(daemon_log_count(&current, "upgrading the database"), 0);
    assert_int_equal(db_query_int(current.db, "SELECT value FROM meta WHERE key='schema_v2_first_event_id'"),
                     V1_EVENTS + 1);
    snprintf(want, sizeof(want), "ok: %lld batches", db_query_int(current.db, "SELECT count(*) FROM batches"));
    assert_int_equal(run_seccheckd(verify, out), 0);
    assert_non_null(strstr(slurp(out), want));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_new_database_stores_each_field_once, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_version_1_database_keeps_working, test_setup, test_teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, trace_fixture_teardown);
}
