/* test_event_indexes.c - the events table's chosen indexes
 * (storage/event_indexes.h): parsing --indexes, what the SQLite sink creates
 * and drops, the statistics that let a time-range query use the type index,
 * and a trace export that groups connections with or without events_by_conn. */
#include "unit_util.h"

#include <sqlite3.h>

#include "batch.h"
#include "decode.h"
#include "event_indexes.h"
#include "export.h"
#include "sink.h"
#include "wire.h"

static struct trace_pkts redis;

static int load_fixture(void **state)
{
    (void)state;
    trace_load("redis_rw.trace", &redis);
    return 0;
}

static int free_fixture(void **state)
{
    (void)state;
    trace_free(&redis);
    return 0;
}

static struct sink *open_db(const char *path, unsigned indexes)
{
    struct sink_sqlite_options o = {.path = path, .busy_timeout_ms = 1000, .indexes = indexes};
    char err[512] = "";
    struct sink *s = sink_sqlite_open(&o, err, sizeof(err));
    if (!s)
        fail_msg("sink_sqlite_open(%s): %s", path, err);
    return s;
}

static void close_db(struct sink *s)
{
    sink_finish(s, 1);
    sink_close(s);
}

/* The first row's text of a query on a fresh connection ("" for NULL). */
static void query_text(const char *path, const char *sql, char *out, size_t outlen)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;   /* cmocka's fail_msg is not declared noreturn */
    if (sqlite3_open(path, &db) != SQLITE_OK || sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    out[0] = '\0';
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(out, outlen, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* The indexes --indexes chooses and those made by hand: not the three of
 * alerts show's ancestry, always there (ancestry_names). */
static void index_names(const char *path, char *out, size_t outlen)
{
    query_text(path,
               "SELECT group_concat(name) FROM (SELECT name FROM sqlite_master WHERE type='index' AND "
               "tbl_name='events' AND sql IS NOT NULL AND name NOT IN ('events_execs', 'events_clones', "
               "'events_fork_exits') ORDER BY name)",
               out, outlen);
}

static void ancestry_names(const char *path, char *out, size_t outlen)
{
    query_text(path,
               "SELECT group_concat(name) FROM (SELECT name FROM sqlite_master WHERE type='index' AND "
               "tbl_name='events' AND name IN ('events_execs', 'events_clones', 'events_fork_exits') ORDER BY name)",
               out, outlen);
}

/* n packets of redis_rw as events of connections 1..nconns in turn. */
static void write_events(struct sink *s, size_t n, uint64_t nconns)
{
    struct decoder dec;
    decoder_init(&dec);
    struct batch_limits lim = {.max_events = 4096, .max_bytes = 64u << 20};
    struct batch *b = batch_new(&lim);
    assert_non_null(b);
    for (size_t i = 0; i < n; i++) {
        const uint8_t *pkt = redis.pkt[i % redis.n];
        size_t len = redis.len[i % redis.n];
        struct wire_header h;
        assert_int_equal(wire_header_parse(pkt, len, &h), WIRE_OK);
        struct event *ev = batch_push(b, pkt, len);
        assert_non_null(ev);
        ev->conn_id = 1 + i % nconns;
        ev->recv_ns = 1000 + (int64_t)i;
        decode_event(&dec, &b->arena, &h, ev->raw, len, ev);
        b->counts.received++;
        if (b->count == lim.max_events || i + 1 == n) {
            sink_write_batch(s, b);
            assert_int_equal(b->result.stored, b->count);
            batch_reset(b);
        }
    }
    batch_free(b);
}

static void test_parse(void **state)
{
    (void)state;
    unsigned m = 0;
    char err[256];
    assert_int_equal(event_indexes_parse("type,container", &m, err, sizeof(err)), 0);
    assert_int_equal(m, EVENT_INDEX_TYPE | EVENT_INDEX_CONTAINER);
    assert_int_equal(event_indexes_parse("type", &m, err, sizeof(err)), 0);
    assert_int_equal(m, EVENT_INDEXES_DEFAULT);
    assert_int_equal(event_indexes_parse("all", &m, err, sizeof(err)), 0);
    assert_int_equal(m, EVENT_INDEXES_ALL);
    assert_int_equal(event_indexes_parse("conn, time", &m, err, sizeof(err)), 0);   /* as a config file may say */
    assert_int_equal(m, EVENT_INDEX_CONN | EVENT_INDEX_TIME);
    assert_int_equal(event_indexes_parse("none", &m, err, sizeof(err)), 0);
    assert_int_equal(m, EVENT_INDEXES_NONE);

    m = 12345;
    assert_int_equal(event_indexes_parse("type,bogus", &m, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "'bogus'"));
    assert_int_equal(m, 12345);   /* untouched on error */
    assert_int_equal(event_indexes_parse("", &m, err, sizeof(err)), -1);
    assert_int_equal(event_indexes_parse(",", &m, err, sizeof(err)), -1);
}

static void test_sink_keeps_the_chosen_set(void **state)
{
    (void)state;
    char dir[64], path[128], names[256];
    scratch_dir(dir);
    snprintf(path, sizeof(path), "%s/e.db", dir);

    close_db(open_db(path, 0));   /* 0: the default */
    index_names(path, names, sizeof(names));
    assert_string_equal(names, "events_by_type");

    close_db(open_db(path, EVENT_INDEXES_ALL));
    index_names(path, names, sizeof(names));
    assert_string_equal(names, "events_by_conn,events_by_container,events_by_time,events_by_type");

    /* An index made by hand is the operator's, whatever --indexes says. */
    query_text(path, "CREATE INDEX mine ON events(process_name)", names, sizeof(names));
    struct sink *s = open_db(path, EVENT_INDEXES_NONE);
    write_events(s, 100, 1);   /* and the sink still writes without any */
    close_db(s);
    index_names(path, names, sizeof(names));
    assert_string_equal(names, "mine");
    ancestry_names(path, names, sizeof(names));   /* whatever --indexes says */
    assert_string_equal(names, "events_clones,events_execs,events_fork_exits");

    close_db(open_db(path, EVENT_INDEX_TIME));
    index_names(path, names, sizeof(names));
    assert_string_equal(names, "events_by_time,mine");
    scratch_dir_remove(dir);
}

static void test_time_range_uses_type_index(void **state)
{
    (void)state;
    char dir[64], path[128], text[512];
    scratch_dir(dir);
    snprintf(path, sizeof(path), "%s/e.db", dir);
    const char *plan = "EXPLAIN QUERY PLAN SELECT count(*) FROM events WHERE time_ns > 0";

    /* Too few rows to bother: no statistics, so a full scan. */
    struct sink *s = open_db(path, 0);
    write_events(s, 100, 1);
    close_db(s);
    query_text(path, "SELECT count(*) FROM sqlite_master WHERE name='sqlite_stat1'", text, sizeof(text));
    assert_string_equal(text, "0");

    s = open_db(path, 0);
    write_events(s, 20000, 2);
    close_db(s);
    query_text(path, "SELECT count(*) FROM sqlite_stat1 WHERE tbl='events'", text, sizeof(text));
    assert_string_not_equal(text, "0");
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, plan, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    snprintf(text, sizeof(text), "%s", (const char *)sqlite3_column_text(st, 3));
    sqlite3_finalize(st);
    sqlite3_close(db);
    assert_non_null(strstr(text, "events_by_type"));
    assert_non_null(strstr(text, "ANY(msg_type)"));
    scratch_dir_remove(dir);
}

/* Each exported client file holds its connection's packets, in order. */
static void check_trace_export(unsigned indexes)
{
    char dir[64], path[128], out[160];
    scratch_dir(dir);
    snprintf(path, sizeof(path), "%s/e.db", dir);
    snprintf(out, sizeof(out), "%s/out", dir);
    enum { NCONNS = 3, NEVENTS = 3000 };
    struct sink *s = open_db(path, indexes);
    write_events(s, NEVENTS, NCONNS);
    close_db(s);

    char *argv[] = {"export", "--db", path, "--format", "trace", "--out", out, NULL};
    assert_int_equal(export_main(7, argv), 0);
    for (size_t c = 1; c <= NCONNS; c++) {
        char file[200];
        snprintf(file, sizeof(file), "%s/client-%04zu", out, c);
        struct tracefile tf;
        assert_int_equal(tracefile_open(&tf, file), TRACEFILE_OK);
        const uint8_t *pkt;
        size_t len, n = 0;
        for (size_t i = c - 1; tracefile_next(&tf, &pkt, &len) == TRACEFILE_OK; i += NCONNS, n++) {
            assert_int_equal(len, redis.len[i % redis.n]);
            assert_memory_equal(pkt, redis.pkt[i % redis.n], len);
        }
        tracefile_close(&tf);
        assert_int_equal(n, NEVENTS / NCONNS);
    }
    scratch_dir_remove(out);
    scratch_dir_remove(dir);
}

static void test_trace_export_without_conn_index(void **state)
{
    (void)state;
    check_trace_export(EVENT_INDEXES_DEFAULT);
}

static void test_trace_export_with_conn_index(void **state)
{
    (void)state;
    check_trace_export(EVENT_INDEXES_ALL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_sink_keeps_the_chosen_set),
        cmocka_unit_test(test_time_range_uses_type_index),
        cmocka_unit_test(test_trace_export_without_conn_index),
        cmocka_unit_test(test_trace_export_with_conn_index),
    };
    return cmocka_run_group_tests(tests, load_fixture, free_fixture);
}
