/* test_fair_share.c - the per-connection accounting of the writer queue
 * (storage/fair_share.h): charges and releases balance, a batch outlives
 * the connection that filled it, large packets cost their room, and the
 * max-min fair level singles out the floods, never the quiet ones. */
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
    fair_share_rebalance(&pool);
    assert_int_equal(pool.level, (100 - 5) / 2);   /* the room less the quiet one's, halved */
    assert_false(share_over_fair(quiet));
    assert_true(share_over_fair(f1));
    assert_true(share_over_fair(f2));

    /* The batch comes back: everything is released, nobody is over. */
    share_release(b);
    assert_int_equal(pool.units, 0);
    assert_int_equal(pool.holders, 0);
    assert_int_equal(quiet->units + f1->units + f2->units, 0);
    fair_share_rebalance(&pool);
    assert_false(share_over_fair(f1));
    share_account_drop(quiet);
    share_account_drop(f1);
    share_account_drop(f2);
    assert_null(pool.accounts);
    batch_free(b);
    fair_share_free(&pool);
}

static void test_under_the_room_nobody_is_over(void **state)
{
    (void)state;
    struct fair_share pool;
    fair_share_init(&pool, 1, &limits);
    struct batch *b = batch_new(&limits);
    struct share_account *x = share_account_new(&pool), *y = share_account_new(&pool);
    charge(x, b, 45, 10);
    charge(y, b, 10, 10);
    fair_share_rebalance(&pool);
    assert_false(share_over_fair(x));   /* a stalled writer is nobody's fault */
    assert_false(share_over_fair(y));
    share_release(b);
    share_account_drop(x);
    share_account_drop(y);
    batch_free(b);
    fair_share_free(&pool);
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
    fair_share_free(&pool);
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
    assert_non_null(pool.accounts);
    share_release(b1);
    assert_int_equal(pool.units, 4);
    share_release(b2);
    assert_int_equal(pool.units, 0);
    assert_null(pool.accounts);
    batch_free(b1);
    batch_free(b2);
    fair_share_free(&pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_level_singles_out_the_floods),
        cmocka_unit_test(test_under_the_room_nobody_is_over),
        cmocka_unit_test(test_large_packets_cost_their_room),
        cmocka_unit_test(test_account_outlives_its_connection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
