/* test_retention_age.c - retention by age (storage/retention.h): a batch goes
 * when it is older than --retain, and no retention, however long, wraps
 * around into deleting recent batches. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "clock.h"
#include "retention.h"

#define NS_PER_S 1000000000LL
#define DAY_S 86400LL

/* The tables retention reads and writes, with three batches of ten events
 * committed 10 days, 5 days and 1 second before now_ns, and an alert on
 * every event. */
static sqlite3 *open_db(int64_t now_ns)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "CREATE TABLE events(id INTEGER PRIMARY KEY);"
                                  "CREATE TABLE batches(id INTEGER PRIMARY KEY, first_event_id, last_event_id,"
                                  " committed_ns, hash BLOB);"
                                  "CREATE TABLE meta(key TEXT PRIMARY KEY, value);"
                                  "CREATE TABLE alerts(id INTEGER PRIMARY KEY, event_id INTEGER NOT NULL);"
                                  "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30)"
                                  " INSERT INTO events SELECT i FROM n;"
                                  "INSERT INTO alerts(event_id) SELECT id FROM events;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    const int64_t ages_ns[] = {10 * DAY_S * NS_PER_S, 5 * DAY_S * NS_PER_S, NS_PER_S};
    for (int i = 0; i < 3; i++) {
        char sql[256];
        snprintf(sql, sizeof(sql), "INSERT INTO batches VALUES (%d, %d, %d, %lld, zeroblob(32))", i + 1, 10 * i + 1,
                 10 * i + 10, (long long)(now_ns - ages_ns[i]));
        assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    }
    return db;
}

static long long count(sqlite3 *db, const char *table)
{
    char sql[64];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    long long n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

static void test_retain_by_age_without_overflow(void **state)
{
    (void)state;
    const struct {
        uint64_t retain_s;
        long long batches_left;
    } cases[] = {
        {DAY_S, 1},                           /* 10 and 5 days old go; the newest always stays */
        {7 * DAY_S, 2},                       /* only the 10-day-old batch */
        {36500 * DAY_S, 3},                   /* --retain's largest value */
        {106752 * DAY_S, 3},                  /* retain * 10^9 first overflows int64 here */
        {1000000 * DAY_S, 3},                 /* the reported case: all but the newest were deleted */
        {INT64_MAX / NS_PER_S + 1, 3},
        {UINT64_MAX, 3},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sqlite3 *db = open_db(realtime_ns());
        struct retention r;
        retention_init(&r, ":memory:", cases[i].retain_s, 0, 1000);
        /* The clock read again: a step works for RETENTION_STEP_NS from now. */
        retention_step(&r, db, realtime_ns(), true);
        long long left = count(db, "batches"), events = count(db, "events"), alerts = count(db, "alerts");
        sqlite3_close(db);
        if (left != cases[i].batches_left || events != 10 * left || alerts != events)
            fail_msg("--retain %llu s: %lld batch rows, %lld events and %lld alerts left, expected %lld batches",
                     (unsigned long long)cases[i].retain_s, left, events, alerts, cases[i].batches_left);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retain_by_age_without_overflow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
