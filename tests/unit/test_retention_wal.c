/* test_retention_wal.c - the WAL checkpoint retention runs after each batch
 * (storage/retention.h) never makes the writer wait for a reader while
 * batches are coming: `seccheckd forward` holds a read snapshot while it
 * ships, and a 50 ms wait for it after every commit filled the writer queue
 * until the sandboxes dropped. Idle, the writer waits for the reader briefly,
 * and the WAL is truncated once the reader lets go. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "clock.h"
#include "retention.h"
#include "unit_util.h"

static sqlite3 *open_wal_db(const char *path)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF", NULL, NULL, NULL),
                     SQLITE_OK);
    return db;
}

static long long file_bytes(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static double seconds_since(int64_t start_ns)
{
    return (double)(monotonic_ns() - start_ns) / 1e9;
}

static int busy_timeout_ms(sqlite3 *db)
{
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA busy_timeout", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int ms = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return ms;
}

static void test_checkpoint_never_waits_for_a_reader_under_load(void **state)
{
    (void)state;
    char dir[64], path[128], wal[136];
    scratch_dir(dir);
    snprintf(path, sizeof(path), "%s/wal.db", dir);
    snprintf(wal, sizeof(wal), "%s-wal", path);

    sqlite3 *writer = open_wal_db(path);
    char err[256];
    assert_int_equal(retention_setup(writer, err, sizeof(err)), 0);
    assert_int_equal(sqlite3_exec(writer,
                                  "CREATE TABLE events(id INTEGER PRIMARY KEY);"
                                  "CREATE TABLE batches(id INTEGER PRIMARY KEY, first_event_id, last_event_id,"
                                  " committed_ns, hash BLOB);"
                                  "CREATE TABLE meta(key TEXT PRIMARY KEY, value);"
                                  "CREATE TABLE filler(b BLOB);",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    /* The forwarder's open snapshot: the WAL cannot start over behind it. */
    sqlite3 *reader = open_wal_db(path);
    assert_int_equal(sqlite3_exec(reader, "BEGIN; SELECT count(*) FROM events", NULL, NULL, NULL), SQLITE_OK);
    char sql[128];
    snprintf(sql, sizeof(sql), "INSERT INTO filler VALUES (zeroblob(%u))", RETENTION_WAL_LIMIT + (1u << 20));
    assert_int_equal(sqlite3_exec(writer, sql, NULL, NULL, NULL), SQLITE_OK);
    assert_true(file_bytes(wal) > (long long)RETENTION_WAL_LIMIT);

    struct retention r;
    retention_init(&r, path, 0, 0, 1000);
    int64_t start = monotonic_ns();
    retention_step(&r, writer, realtime_ns(), false);
    double loaded = seconds_since(start);
    start = monotonic_ns();
    retention_step(&r, writer, realtime_ns(), true);
    double idle = seconds_since(start);
    printf("checkpoint with a reader holding the WAL: %.1f ms between batches, %.1f ms idle\n", loaded * 1e3,
           idle * 1e3);
    if (loaded >= 0.025)
        fail_msg("between batches the checkpoint waited %.1f ms for the reader", loaded * 1e3);
    assert_true(idle >= 0.025);   /* idle, it does give the reader a moment */
    assert_int_equal(busy_timeout_ms(writer), 1000);   /* the writer's own timeout is back */
    assert_true(file_bytes(wal) > (long long)RETENTION_WAL_LIMIT);

    assert_int_equal(sqlite3_exec(reader, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    retention_step(&r, writer, realtime_ns(), false);
    assert_int_equal(file_bytes(wal), 0);   /* the reader gone, even a step under load truncates */
    sqlite3_close(reader);
    sqlite3_close(writer);
    scratch_dir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checkpoint_never_waits_for_a_reader_under_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
