/* test_fair_share.c - the per-connection accounting of the writer queue
 * (storage/fair_share.h): charges and releases balance, a batch outlives
 * the connection that filled it, large packets cost their room, and the
 * fair share singles out the floods, never the quiet ones, and nobody when
 * little is queued. */
#include "unit_util.h"

#include "batch.h"
#include "fair_share.h"

/* A queue of one batch of 100 events / 100 * 64 bytes: 100 units of room,
 * a unit per 64 bytes. */
static const struct batch_limits limits = {.max_events = 100, .max_bytes = 6400};

static void charge(struct share_account *a, struct batch *b, int n, size_t len)
{
    for (int i = 0; i < n; i++)
        assert_int_equal(share_charge(a, b, len), 0);
}

static void test_level_singles_out_the_floods(void **state)
{
    (void)state;
    struct fair_share pool;
    fair_share_init(&pool, 1, &limits);
    struct batch *b = batch_new(&limits);
    assert_non_null(b);
    struct share_account *quiet = share_account_new(&pool), *f1 = share_account_new(&pool),
                         *f2 = share_account_new(&pool);
    charge(quiet, b, 5, 10);
    charge(f1, b, 60, 10);
    charge(f2, b, 50, 10);
    assert_int_equal(pool.units, 115);
    assert_int_equal(pool.holders, 3);
    assert_int_equal(b->nshares, 3);   /* one entry per account, however many packets */
    /* 115 queued among 3 open: over 38 is over. */
    assert_false(share_over_fair(quiet, 1, 1));
    assert_true(share_over_fair(f1, 1, 1));
    assert_true(share_over_fair(f2, 1, 1));
    /* The share halved (half the reserve used): 25 of 135 among 3 is over. */
    assert_false(share_over_fair(quiet, 1, 2));
    charge(quiet, b, 20, 10);
    assert_true(share_over_fair(quiet, 1, 2));    /* 25 * 3 * 2 > 135 */
    assert_false(share_over_fair(quiet, 1, 1));

    /* The batch comes back: everything is released, nobody is over. */
    share_release(b);
    assert_int_equal(pool.units, 0);
    assert_int_equal(pool.holders, 0);
    assert_int_equal(quiet->units + f1->units + f2->units, 0);
    assert_int_equal(quiet->events, 0);
    assert_false(share_over_fair(f1, 1, 1));
    share_account_drop(quiet);
    share_account_drop(f1);
    share_account_drop(f2);
    batch_free(b);
}

/* Little queued (under the room): nobody is singled out for less than the
 * room divided among the open connections; past it, the larger holder is. */
static void test_little_queued_nobody_is_over(void **state)
{
    (void)state;
    struct fair_share pool;
    fair_share_init(&pool, 1, &limits);
    struct batch *b = batch_new(&limits);
    struct share_account *x = share_account_new(&pool), *y = share_account_new(&pool);
    charge(x, b, 20, 10);
    charge(y, b, 5, 10);
    assert_false(share_over_fair(x, 1, 1));   /* 20 * 2 open <= 100: a stalled writer is nobody's doing */
    assert_false(share_over_fair(y, 1, 1));
    charge(x, b, 35, 10);
    assert_true(share_over_fair(x, 1, 1));    /* 55 * 2 > 100 */
    assert_false(share_over_fair(y, 1, 1));
    share_release(b);
    share_account_drop(x);
    share_account_drop(y);
    batch_free(b);
}

/* A lone flood is over its share once another connection is open (holding
 * nothing yet) and it holds more than half the room. */
static void test_a_lone_flood_is_over(void **state)
{
    (void)state;
    struct fair_share pool;
    fair_share_init(&pool, 1, &limits);
    struct batch *b = batch_new(&limits);
    struct share_account *f = share_account_new(&pool);
    charge(f, b, 80, 10);
    assert_false(share_over_fair(f, 1, 1));   /* alone: nobody to be unfair to */
    struct share_account *idle = share_account_new(&pool);
    assert_true(share_over_fair(f, 1, 1));    /* 80 * 2 > 100 */
    assert_false(share_over_fair(idle, 1, 1));
    share_release(b);
    share_account_drop(f);
    share_account_drop(idle);
    assert_int_equal(pool.open, 0);
    batch_free(b);
}

static void test_large_packets_cost_their_room(void **state)
{
    (void)state;
    struct fair_share pool;
    fair_share_init(&pool, 1, &limits);
    struct batch *b = batch_new(&limits);
    struct share_account *big = share_account_new(&pool);
    charge(big, b, 1, 64 * 30);
    charge(big, b, 1, 1);
    assert_int_equal(big->units, 31);
    assert_int_equal(big->events, 2);
    share_release(b);
    share_account_drop(big);
    batch_free(b);
}

/* The connection closes while a batch still holds its events: the account
 * lives until the batch comes back (ASan would see a use after free). */
static void test_account_outlives_its_connection(void **state)
{
    (void)state;
    struct fair_share pool;
    fair_share_init(&pool, 1, &limits);
    struct batch *b1 = batch_new(&limits), *b2 = batch_new(&limits);
    struct share_account *a = share_account_new(&pool);
    charge(a, b1, 3, 10);
    charge(a, b2, 4, 10);
    share_account_drop(a);
    share_release(b1);
    assert_int_equal(pool.units, 4);
    assert_int_equal(pool.holders, 1);
    share_release(b2);
    assert_int_equal(pool.units, 0);
    assert_int_equal(pool.holders, 0);
    batch_free(b1);
    batch_free(b2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_level_singles_out_the_floods),
        cmocka_unit_test(test_little_queued_nobody_is_over),
        cmocka_unit_test(test_a_lone_flood_is_over),
        cmocka_unit_test(test_large_packets_cost_their_room),
        cmocka_unit_test(test_account_outlives_its_connection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
