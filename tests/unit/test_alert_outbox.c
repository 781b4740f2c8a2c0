/* test_alert_outbox.c - the alerts table as delivery's outbox
 * (storage/alert_outbox.h): the position the writer keeps survives only
 * the transactions that commit, is written again after one that rolled
 * back, and a new alert wakes delivery once; the reader starts a new URL at
 * the newest alert (AUTOINCREMENT: ids of deleted alerts are never handed
 * out again), a known one where it stopped, and gives each row back with
 * the NUL bytes of its output, so rules_alert_json renders the very line
 * the rules did. */
#include "unit_util.h"

#include <sqlite3.h>

#include "alert_outbox.h"
#include "decode.h"
#include "rules.h"
#include "sink.h"
#include "strbuf.h"
#include "wire.h"

struct scratch {
    char dir[64];
    char db[128];
};

/* A database with the daemon's schema (made by the SQLite sink). */
static int setup(void **state)
{
    struct scratch *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    scratch_dir(s->dir);
    snprintf(s->db, sizeof(s->db), "%s/t.db", s->dir);
    struct sink_sqlite_options o = {.path = s->db, .busy_timeout_ms = 1000};
    char err[512];
    struct sink *sink = sink_sqlite_open(&o, err, sizeof(err));
    if (!sink)
        fail_msg("%s", err);
    sink_close(sink);
    *state = s;
    return 0;
}

static int teardown(void **state)
{
    struct scratch *s = *state;
    scratch_dir_remove(s->dir);
    free(s);
    return 0;
}

static sqlite3 *open_rw(const char *path)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    return db;
}

static int64_t one_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    return v;
}

static void exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("%s: %s", sql, err);
}

static int woken;
static void count_wake(void *data)
{
    (void)data;
    woken++;
}

/* What a transaction wrote goes with it when it rolls back; the next
 * transaction writes it again; after the writer opened another file, only
 * a position counted in that file is written. */
static void test_position_follows_commits(void **state)
{
    struct scratch *s = *state;
    sqlite3 *db = open_rw(s->db);
    struct alert_outbox o;
    alert_outbox_init(&o);
    alert_outbox_save(&o, db);   /* nothing set yet: nothing written */
    assert_int_equal(one_int(db, "SELECT count(*) FROM alert_delivery"), 0);
    alert_outbox_set(&o, "http://r/", 5, 0);
    exec(db, "BEGIN");
    alert_outbox_save(&o, db);
    exec(db, "ROLLBACK");
    alert_outbox_rollback(&o);
    assert_int_equal(one_int(db, "SELECT count(*) FROM alert_delivery"), 0);
    assert_int_equal(alert_outbox_saved_position(&o), 0);
    exec(db, "BEGIN");
    alert_outbox_save(&o, db);   /* written again: the rolled-back write is gone */
    exec(db, "COMMIT");
    alert_outbox_commit(&o, 0);
    assert_int_equal(one_int(db, "SELECT alert_id FROM alert_delivery WHERE target = 'http://r/'"), 5);
    assert_int_equal(alert_outbox_saved_position(&o), 5);
    /* Unchanged: no write (the row's time stays). */
    int64_t updated = one_int(db, "SELECT updated_ns FROM alert_delivery");
    alert_outbox_save(&o, db);
    alert_outbox_commit(&o, 0);
    assert_int_equal(one_int(db, "SELECT updated_ns FROM alert_delivery"), updated);
    /* A new URL has a row of its own. */
    alert_outbox_set(&o, "https://other/", 9, 0);
    alert_outbox_save(&o, db);
    alert_outbox_commit(&o, 0);
    assert_int_equal(one_int(db, "SELECT alert_id FROM alert_delivery WHERE target = 'https://other/'"), 9);
    assert_int_equal(one_int(db, "SELECT alert_id FROM alert_delivery WHERE target = 'http://r/'"), 5);
    assert_int_equal(alert_outbox_saved_position(NULL), INT64_MAX);
    /* Another file at the path: a position of the old one is never saved
     * there, retention keeps everything until delivery sets one. */
    exec(db, "DELETE FROM alert_delivery");
    alert_outbox_reopened(&o, db);
    assert_int_equal(alert_outbox_generation(&o), 1);
    assert_int_equal(alert_outbox_saved_position(&o), 0);
    alert_outbox_save(&o, db);
    alert_outbox_commit(&o, 0);
    assert_int_equal(one_int(db, "SELECT count(*) FROM alert_delivery"), 0);
    alert_outbox_set(&o, "https://other/", 2, 1);
    alert_outbox_save(&o, db);
    alert_outbox_commit(&o, 0);
    assert_int_equal(one_int(db, "SELECT alert_id FROM alert_delivery WHERE target = 'https://other/'"), 2);
    sqlite3_close(db);
    alert_outbox_destroy(&o);
}

/* A commit with a newer alert publishes it and wakes delivery, once. */
static void test_new_alerts_wake_once(void **state)
{
    (void)state;
    struct alert_outbox o;
    alert_outbox_init(&o);
    o.on_commit = count_wake;
    woken = 0;
    alert_outbox_commit(&o, 0);
    assert_int_equal(woken, 0);
    alert_outbox_commit(&o, 10);
    assert_int_equal(woken, 1);
    assert_int_equal(alert_outbox_newest(&o), 10);
    alert_outbox_commit(&o, 10);
    alert_outbox_commit(&o, 7);
    assert_int_equal(woken, 1);
    assert_int_equal(alert_outbox_newest(&o), 10);
    alert_outbox_lost(&o, 3);
    alert_outbox_lost(NULL, 3);
    assert_int_equal(atomic_load(&o.lost), 3);
    alert_outbox_destroy(&o);
}

static void insert_alert(sqlite3 *db, const char *output, size_t output_len)
{
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO alerts(event_id, rule, priority, time_ns, output, "
                                            "output_fields, tags) VALUES(1, 'R', 'Warning', 1700000000000000001, ?1,"
                                            " '{\"evt.time\":1700000000000000001}', '[\"t\"]')",
                                        -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(st, 1, output, (int)output_len, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
}

struct rows {
    int64_t ids[8];
    char lines[8][512];
    int n;
};

static bool keep_row(const struct alert_outbox_row *row, void *data)
{
    struct rows *r = data;
    if (r->n == 2)
        return false;   /* take two, refuse the third */
    struct strbuf sb = {0};
    rules_alert_json(&sb, "h1", row->rule, row->priority, row->time_ns, row->output, row->output_len,
                     row->output_fields, row->tags, row->suppressed);
    r->ids[r->n] = row->id;
    snprintf(r->lines[r->n], sizeof(r->lines[0]), "%s", sb.data);
    strbuf_free(&sb);
    r->n++;
    return true;
}

static void test_reader(void **state)
{
    struct scratch *s = *state;
    sqlite3 *db = open_rw(s->db);
    insert_alert(db, "a\0b", 3);
    for (int i = 0; i < 4; i++)
        insert_alert(db, "x", 1);
    exec(db, "DELETE FROM alerts WHERE id >= 4");   /* retention: ids 4 and 5 are gone for good */
    struct alert_outbox_reader r;
    char err[256];
    assert_int_equal(alert_outbox_reader_open(&r, s->db, err, sizeof(err)), 0);
    struct alert_outbox_start st;
    assert_int_equal(alert_outbox_start(&r, "http://new:80", -1, &st, err, sizeof(err)), 0);
    assert_int_equal(st.from, OUTBOX_FROM_NEWEST);
    assert_int_equal(st.newest, 5);
    assert_int_equal(st.position, 5);   /* the first URL: from the next alert on */
    assert_int_equal(st.history, 3);    /* the 3 stored alerts it does not get */
    exec(db, "INSERT INTO alert_delivery VALUES('http://old:80', 0, 1)");
    assert_int_equal(alert_outbox_start(&r, "http://old:80", -1, &st, err, sizeof(err)), 0);
    assert_int_equal(st.from, OUTBOX_FROM_OWN);
    assert_int_equal(st.position, 0);
    struct rows rows = {0};
    assert_int_equal(alert_outbox_read(&r, 0, 8, keep_row, &rows, err, sizeof(err)), 2);
    assert_int_equal(rows.ids[0], 1);
    assert_int_equal(rows.ids[1], 2);
    assert_string_equal(rows.lines[0],
                        "{\"hostname\":\"h1\",\"output\":\"a\\u0000b\",\"output_fields\":{\"evt.time\":"
                        "1700000000000000001},\"priority\":\"Warning\",\"rule\":\"R\",\"source\":\"syscall\","
                        "\"tags\":[\"t\"],\"time\":\"2023-11-14T22:13:20.000000001Z\"}");
    insert_alert(db, "y", 1);   /* id 6, not 4 */
    assert_int_equal(one_int(db, "SELECT max(id) FROM alerts"), 6);
    rows.n = 0;
    assert_int_equal(alert_outbox_read(&r, 3, 8, keep_row, &rows, err, sizeof(err)), 1);
    assert_int_equal(rows.ids[0], 6);
    /* Alerts held back before one: delivery says how many, outside output_fields. */
    exec(db, "UPDATE alerts SET suppressed = 4 WHERE id = 6");
    rows.n = 0;
    assert_int_equal(alert_outbox_read(&r, 3, 8, keep_row, &rows, err, sizeof(err)), 1);
    assert_non_null(strstr(rows.lines[0], "\"output_fields\":{\"evt.time\":1700000000000000001},\"priority\":"
                                          "\"Warning\",\"rule\":\"R\",\"seccheckd_suppressed\":4,\"source\":"));
    /* The read ended: a writer can checkpoint the whole WAL. */
    int log_frames = -1, checkpointed = -1;
    assert_int_equal(sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE, &log_frames, &checkpointed),
                     SQLITE_OK);
    alert_outbox_reader_close(&r);
    sqlite3_close(db);
}

/* Where a URL new to the database starts: the position handed over (the
 * URL it replaces on SIGHUP), else that of the URL delivered to last, never
 * past the newest alert; a known URL always at its own. */
static void test_new_url_takes_over(void **state)
{
    struct scratch *s = *state;
    sqlite3 *db = open_rw(s->db);
    for (int i = 0; i < 9; i++)
        insert_alert(db, "x", 1);
    exec(db, "INSERT INTO alert_delivery VALUES('http://a:80', 4, 100), ('http://b:80', 7, 50)");
    struct alert_outbox_reader r;
    char err[256];
    assert_int_equal(alert_outbox_reader_open(&r, s->db, err, sizeof(err)), 0);
    struct alert_outbox_start st;
    assert_int_equal(alert_outbox_start(&r, "http://c:80", 2, &st, err, sizeof(err)), 0);
    assert_int_equal(st.from, OUTBOX_FROM_TAKEN);
    assert_int_equal(st.position, 2);
    assert_int_equal(alert_outbox_start(&r, "http://c:80", 99, &st, err, sizeof(err)), 0);
    assert_int_equal(st.position, 9);   /* not past the newest */
    assert_int_equal(alert_outbox_start(&r, "http://c:80", -1, &st, err, sizeof(err)), 0);
    assert_int_equal(st.from, OUTBOX_FROM_LATEST);
    assert_string_equal(st.from_target, "http://a:80");   /* updated last */
    assert_int_equal(st.position, 4);
    assert_int_equal(alert_outbox_start(&r, "http://b:80", 2, &st, err, sizeof(err)), 0);
    assert_int_equal(st.from, OUTBOX_FROM_OWN);
    assert_int_equal(st.position, 7);
    alert_outbox_reader_close(&r);
    sqlite3_close(db);
}

/* A target left before its last position was written (a SIGHUP to another
 * URL within the second): both rows are written, the old one at its last
 * position; a rolled-back transaction takes both writes along. */
static void test_left_target_is_written(void **state)
{
    struct scratch *s = *state;
    sqlite3 *db = open_rw(s->db);
    struct alert_outbox o;
    alert_outbox_init(&o);
    alert_outbox_set(&o, "http://a:80", 3, 0);
    alert_outbox_save(&o, db);
    alert_outbox_commit(&o, 0);
    alert_outbox_set(&o, "http://a:80", 8, 0);   /* not saved yet */
    alert_outbox_set(&o, "http://b:80", 8, 0);   /* the switch */
    alert_outbox_set(&o, "http://b:80", 9, 0);
    exec(db, "BEGIN");
    alert_outbox_save(&o, db);
    exec(db, "ROLLBACK");
    alert_outbox_rollback(&o);
    assert_int_equal(one_int(db, "SELECT alert_id FROM alert_delivery WHERE target = 'http://a:80'"), 3);
    assert_int_equal(one_int(db, "SELECT count(*) FROM alert_delivery WHERE target = 'http://b:80'"), 0);
    alert_outbox_save(&o, db);
    alert_outbox_commit(&o, 0);
    assert_int_equal(one_int(db, "SELECT alert_id FROM alert_delivery WHERE target = 'http://a:80'"), 8);
    assert_int_equal(one_int(db, "SELECT alert_id FROM alert_delivery WHERE target = 'http://b:80'"), 9);
    /* b was written after a: the target delivered to last. */
    assert_int_equal(one_int(db, "SELECT target = 'http://b:80' FROM alert_delivery ORDER BY updated_ns DESC, rowid DESC"
                                 " LIMIT 1"), 1);
    sqlite3_close(db);
    alert_outbox_destroy(&o);
}

/* A -> B -> A with no writer transaction between (integration.deliver's
 * test_new_url_takes_the_backlog in a CI simulation: A's saved row said 96,
 * where it had stopped at 120, and it got 96-120 again): the position a
 * receiver left is held until written, and delivery coming back starts
 * from it; another file generation's is not this file's. */
static void test_left_position_is_held(void **state)
{
    struct scratch *s = *state;
    sqlite3 *db = open_rw(s->db);
    struct alert_outbox o;
    alert_outbox_init(&o);
    int64_t p = -1;
    assert_false(alert_outbox_held_position(&o, "http://a:80", 0, &p));
    alert_outbox_set(&o, "http://a:80", 96, 0);
    alert_outbox_save(&o, db);
    alert_outbox_commit(&o, 0);
    alert_outbox_set(&o, "http://a:80", 120, 0);   /* delivered on, not written */
    alert_outbox_set(&o, "http://b:80", 120, 0);   /* the switch to b */
    alert_outbox_set(&o, "http://b:80", 1100, 0);
    assert_int_equal(one_int(db, "SELECT alert_id FROM alert_delivery WHERE target = 'http://a:80'"), 96);
    assert_true(alert_outbox_held_position(&o, "http://a:80", 0, &p));
    assert_int_equal(p, 120);
    assert_true(alert_outbox_held_position(&o, "http://b:80", 0, &p));
    assert_int_equal(p, 1100);
    assert_false(alert_outbox_held_position(&o, "http://a:80", 1, &p));   /* a replaced file */
    assert_false(alert_outbox_held_position(&o, "http://c:80", 0, &p));
    sqlite3_close(db);
    alert_outbox_destroy(&o);
}

/* Rows of an earlier build held the whole URL, a token in its path or
 * query: the next start keeps only each origin, the row updated last of
 * those that share one. */
static void test_stored_urls_become_origins(void **state)
{
    struct scratch *s = *state;
    sqlite3 *db = open_rw(s->db);
    exec(db, "INSERT INTO alert_delivery VALUES('https://hooks.slack.com/services/T0/B0/s3cret', 7, 20),"
             " ('http://127.0.0.1:2801/', 5, 10), ('HTTP://h/?token=s3cret', 9, 30), ('http://h:80', 3, 5),"
             " ('http://[::1]:81#s3cret', 2, 1), ('http://[::1]/', 4, 1)");
    sqlite3_close(db);
    struct sink_sqlite_options o = {.path = s->db, .busy_timeout_ms = 1000};
    char err[512];
    struct sink *sink = sink_sqlite_open(&o, err, sizeof(err));
    if (!sink)
        fail_msg("%s", err);
    sink_close(sink);
    db = open_rw(s->db);
    assert_int_equal(one_int(db, "SELECT count(*) FROM alert_delivery"), 5);
    assert_int_equal(one_int(db, "SELECT count(*) FROM alert_delivery WHERE target LIKE '%s3cret%'"), 0);
    assert_int_equal(one_int(db, "SELECT alert_id FROM alert_delivery WHERE target = 'https://hooks.slack.com:443'"), 7);
    assert_int_equal(one_int(db, "SELECT alert_id FROM alert_delivery WHERE target = 'http://127.0.0.1:2801'"), 5);
    assert_int_equal(one_int(db, "SELECT alert_id FROM alert_delivery WHERE target = 'http://h:80'"), 9);
    assert_int_equal(one_int(db, "SELECT alert_id FROM alert_delivery WHERE target = 'http://[::1]:81'"), 2);
    assert_int_equal(one_int(db, "SELECT alert_id FROM alert_delivery WHERE target = 'http://[::1]:80'"), 4);
    sqlite3_close(db);
}

/* The engine's line and the line rendered again from the row are the same
 * bytes, NUL byte in the output and all. */
static void test_line_from_row_is_the_rules_line(void **state)
{
    (void)state;
    const char *yaml = "- rule: Nul\n  desc: d\n  condition: evt.type = openat\n"
                       "  output: \"a\\0b %proc.name \\\"q\\\" \\u00e9\"\n  priority: NOTICE\n  tags: [z, a]\n";
    struct rules_diag diag = {0};
    struct rule_set *rs = rule_set_load_buffer("t.yaml", yaml, strlen(yaml), &diag);
    assert_non_null(rs);
    rules_diag_free(&diag);
    struct rules_engine_config cfg;
    rules_engine_config_defaults(&cfg);
    cfg.hostname = "h\"1";
    struct rules_engine *e = rules_engine_new(&cfg);
    rules_engine_set_rules(e, rs);
    struct trace_pkts t;
    trace_load("mixed_syscalls.trace", &t);
    struct decoder dec;
    decoder_init(&dec);
    struct arena arena;
    arena_init(&arena, 64 * 1024, 16 << 20);
    struct alert_list l = {0};
    for (size_t i = 0; i < t.n && l.count == 0; i++) {
        struct wire_header h;
        if (wire_header_parse(t.pkt[i], t.len[i], &h) != WIRE_OK)
            continue;
        struct event ev = {.conn_id = 1, .recv_ns = 1};
        decode_event(&dec, &arena, &h, t.pkt[i], t.len[i], &ev);
        if (ev.status == DECODE_OK)
            rules_engine_eval(e, &ev, i, &l);
    }
    assert_true(l.count > 0);
    const struct alert *a = &l.items[0];
    assert_non_null(memchr(a->output, '\0', a->output_len));
    struct strbuf sb = {0};
    rules_alert_json(&sb, "h\"1", a->rule, rules_priority_name(a->priority), a->time_ns, a->output, a->output_len,
                     a->output_fields, a->tags, a->suppressed);
    assert_int_equal(sb.len, a->json_len);
    assert_memory_equal(sb.data, a->json, a->json_len);
    strbuf_free(&sb);
    alert_list_free(&l);
    arena_free(&arena);
    trace_free(&t);
    rules_engine_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_position_follows_commits, setup, teardown),
        cmocka_unit_test(test_new_alerts_wake_once),
        cmocka_unit_test_setup_teardown(test_reader, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_url_takes_over, setup, teardown),
        cmocka_unit_test_setup_teardown(test_left_target_is_written, setup, teardown),
        cmocka_unit_test_setup_teardown(test_left_position_is_held, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stored_urls_become_origins, setup, teardown),
        cmocka_unit_test(test_line_from_row_is_the_rules_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
