/* test_conn_snapshots.c - the connection snapshots the SQLite sink keeps
 * until a transaction commits them (storage/conn_snapshots.h). */
#include "unit_util.h"

#include "conn_snapshots.h"

static struct conn_record rec(uint64_t id, uint64_t messages, bool closed)
{
    struct conn_record r = {.id = id, .connect_ns = 1, .messages = messages};
    if (closed) {
        r.close_ns = 2;
        snprintf(r.close_reason, sizeof(r.close_reason), "eof");
    }
    return r;
}

static size_t uncommitted(const struct conn_snapshots *cs) { return conn_snapshots_uncommitted(cs); }

/* Newest wins, sorted by id whatever the order they come in; a commit
 * forgets the closed ones and keeps the open ones (committed). */
static void test_latest_per_connection(void **state)
{
    (void)state;
    struct conn_snapshots cs = {0};
    struct conn_record r3 = rec(3, 1, false), r1 = rec(1, 1, false), r2 = rec(2, 5, true);
    assert_int_equal(conn_snapshots_note(&cs, &r3), 0);
    assert_int_equal(conn_snapshots_note(&cs, &r1), 0);
    assert_int_equal(conn_snapshots_note(&cs, &r2), 0);
    r1.messages = 9;
    assert_int_equal(conn_snapshots_note(&cs, &r1), 0);
    assert_int_equal(cs.n, 3);
    for (size_t i = 0; i < cs.n; i++)
        assert_int_equal(cs.items[i].rec.id, i + 1);
    assert_int_equal(cs.items[0].rec.messages, 9);
    assert_int_equal(uncommitted(&cs), 3);

    conn_snapshots_committed(&cs);
    assert_int_equal(cs.n, 2);   /* 2 was closed */
    assert_int_equal(cs.items[0].rec.id, 1);
    assert_int_equal(cs.items[1].rec.id, 3);
    assert_int_equal(uncommitted(&cs), 0);

    r3.messages = 4;   /* a failed transaction's snapshot stays uncommitted */
    conn_snapshots_note(&cs, &r3);
    assert_int_equal(uncommitted(&cs), 1);
    conn_snapshots_uncommit_all(&cs);   /* a new database file */
    assert_int_equal(uncommitted(&cs), 2);
    conn_snapshots_free(&cs);
}

/* While nothing commits, closed connections pile up: at most
 * CONN_SNAPSHOTS_MAX_CLOSED, the oldest given up and counted; open ones
 * are never given up. */
static void test_closed_ones_bounded(void **state)
{
    (void)state;
    struct conn_snapshots cs = {0};
    struct conn_record open = rec(1, 1, false);
    conn_snapshots_note(&cs, &open);
    uint64_t extra = 10;
    int dropped = 0;
    for (uint64_t id = 2; id < 2 + CONN_SNAPSHOTS_MAX_CLOSED + extra; id++) {
        struct conn_record r = rec(id, id, true);
        int rc = conn_snapshots_note(&cs, &r);
        assert_true(rc >= 0);
        dropped += rc;
    }
    assert_int_equal(dropped, extra);
    assert_int_equal(cs.lost, extra);
    assert_int_equal(cs.n, 1 + CONN_SNAPSHOTS_MAX_CLOSED);
    assert_int_equal(cs.items[0].rec.id, 1);              /* the open one stays */
    assert_int_equal(cs.items[1].rec.id, 2 + extra);      /* the oldest closed went */
    /* A closed connection noted again (its last snapshot twice) is not
     * counted twice. */
    struct conn_record again = cs.items[cs.n - 1].rec;
    assert_int_equal(conn_snapshots_note(&cs, &again), 0);
    assert_int_equal(cs.closed_uncommitted, CONN_SNAPSHOTS_MAX_CLOSED);
    conn_snapshots_committed(&cs);
    assert_int_equal(cs.n, 1);
    assert_int_equal(cs.closed_uncommitted, 0);
    conn_snapshots_free(&cs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_latest_per_connection),
        cmocka_unit_test(test_closed_ones_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
