/* test_arena.c - the bump allocator (decoder/arena.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "arena.h"

static void test_alignment(void **state)
{
    (void)state;
    struct arena a;
    arena_init(&a, 256, 1 << 20);
    size_t total = 0;
    for (size_t size = 1; size < 300; size += 3) {
        void *p = arena_alloc(&a, size);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 8, 0);
        memset(p, 0x5a, size);   /* writable, and ASan checks the bounds */
        total += (size + 7) & ~(size_t)7;
        assert_int_equal(arena_used(&a), total);
    }
    /* through the protobuf-c allocator too */
    for (size_t size = 1; size < 40; size++) {
        void *p = a.pb.alloc(a.pb.allocator_data, size);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 8, 0);
        a.pb.free(a.pb.allocator_data, p);   /* a no-op until reset */
    }
    arena_free(&a);
}

static void test_distinct(void **state)
{
    (void)state;
    /* allocations never overlap: fill each with its own byte and recheck */
    struct arena a;
    arena_init(&a, 128, 1 << 20);
    unsigned char *ptrs[200];
    size_t sizes[200];
    for (int i = 0; i < 200; i++) {
        sizes[i] = (size_t)(i * 7 % 150) + 1;
        ptrs[i] = arena_alloc(&a, sizes[i]);
        assert_non_null(ptrs[i]);
        memset(ptrs[i], i, sizes[i]);
    }
    for (int i = 0; i < 200; i++)
        for (size_t k = 0; k < sizes[i]; k++)
            assert_int_equal(ptrs[i][k], (unsigned char)i);
    arena_free(&a);
}

static void test_limit(void **state)
{
    (void)state;
    struct arena a;
    arena_init(&a, 1024, 4096);
    assert_int_equal(arena_remaining(&a), 4096);
    assert_int_equal(arena_used(&a), 0);

    assert_non_null(arena_alloc(&a, 100));      /* rounds to 104 */
    assert_int_equal(arena_used(&a), 104);
    assert_int_equal(arena_remaining(&a), 4096 - 104);

    size_t before = arena_remaining(&a);
    assert_non_null(arena_alloc(&a, 1000));
    assert_int_equal(arena_remaining(&a), before - 1000);

    /* past the limit: NULL and nothing consumed */
    before = arena_remaining(&a);
    assert_null(arena_alloc(&a, before + 1));
    assert_null(arena_alloc(&a, 1 << 20));
    assert_int_equal(arena_remaining(&a), before);

    /* exactly what is left still works, then nothing does */
    assert_int_equal(before % 8, 0);
    assert_non_null(arena_alloc(&a, before));
    assert_int_equal(arena_remaining(&a), 0);
    assert_int_equal(arena_used(&a), 4096);
    assert_null(arena_alloc(&a, 1));
    assert_null(arena_memdup(&a, "x", 1));
    assert_null(a.pb.alloc(a.pb.allocator_data, 8));

    /* sizes that overflow when rounded up */
    arena_reset(&a);
    assert_null(arena_alloc(&a, SIZE_MAX));
    assert_null(arena_alloc(&a, SIZE_MAX - 3));
    assert_null(arena_alloc(&a, SIZE_MAX - 8));
    assert_int_equal(arena_used(&a), 0);

    /* after reset the full limit is available again */
    assert_int_equal(arena_remaining(&a), 4096);
    assert_non_null(arena_alloc(&a, 4096));
    arena_free(&a);

    /* zero limit: nothing at all */
    arena_init(&a, 1024, 0);
    assert_null(arena_alloc(&a, 1));
    assert_int_equal(arena_remaining(&a), 0);
    arena_free(&a);
}

/* One fill: a mix of small, chunk-sized and larger-than-chunk allocations. */
static void fill_pattern(struct arena *a, int round)
{
    static const size_t sizes[] = {24, 100, 5000, 8, 3000, 2000, 17, 4096, 4095, 1, 12000, 64, 900, 4000, 333};
    for (int rep = 0; rep < 4; rep++) {
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            unsigned char *p = arena_alloc(a, sizes[i]);
            assert_non_null(p);
            memset(p, round, sizes[i]);
        }
    }
}

static void test_reset_reuses_chunks(void **state)
{
    (void)state;
    struct arena a;
    arena_init(&a, 4096, 64u << 20);
    fill_pattern(&a, 1);   /* warm-up */
    size_t used = arena_used(&a);
    size_t reserved = a.reserved;
    assert_true(reserved >= used);
    arena_reset(&a);
    assert_int_equal(arena_used(&a), 0);
    assert_int_equal(a.reserved, reserved);   /* reset keeps the chunks */

    for (int round = 2; round < 12; round++) {
        fill_pattern(&a, round);
        assert_int_equal(arena_used(&a), used);
        if (a.reserved != reserved)
            fail_msg("round %d: reserved grew from %zu to %zu", round, reserved, a.reserved);
        arena_reset(&a);
    }

    /* a smaller fill after a big one allocates nothing either */
    for (int i = 0; i < 100; i++)
        assert_non_null(arena_alloc(&a, 64));
    assert_int_equal(a.reserved, reserved);
    arena_free(&a);
    assert_int_equal(a.reserved, 0);
    assert_int_equal(arena_used(&a), 0);
}

static void test_reset_reuses_per_message(void **state)
{
    (void)state;
    /* the batch usage: many small fills with resets in between */
    struct arena a;
    arena_init(&a, 1024, 1 << 20);
    for (int i = 0; i < 50; i++)
        assert_non_null(arena_alloc(&a, 40));
    arena_reset(&a);
    size_t reserved = a.reserved;
    for (int round = 0; round < 1000; round++) {
        for (int i = 0; i < 50; i++)
            assert_non_null(arena_alloc(&a, 40));
        arena_reset(&a);
    }
    assert_int_equal(a.reserved, reserved);
    arena_free(&a);
}

static void test_large_allocation(void **state)
{
    (void)state;
    struct arena a;
    arena_init(&a, 1024, 1 << 20);
    unsigned char *small = arena_alloc(&a, 16);
    assert_non_null(small);
    memset(small, 0x11, 16);
    unsigned char *big = arena_alloc(&a, 100000);
    assert_non_null(big);
    assert_int_equal((uintptr_t)big % 8, 0);
    memset(big, 0x22, 100000);
    assert_true(a.reserved >= 100000 + 16);
    unsigned char *after = arena_alloc(&a, 16);
    assert_non_null(after);
    memset(after, 0x33, 16);
    for (int i = 0; i < 16; i++) {
        assert_int_equal(small[i], 0x11);
        assert_int_equal(after[i], 0x33);
    }
    assert_int_equal(big[0], 0x22);
    assert_int_equal(big[99999], 0x22);
    assert_int_equal(arena_used(&a), 16 + 100000 + 16);
    arena_free(&a);

    /* the first allocation larger than a chunk */
    arena_init(&a, 64, 1 << 20);
    unsigned char *p = arena_alloc(&a, 1000);
    assert_non_null(p);
    memset(p, 1, 1000);
    arena_free(&a);
}

static void test_memdup(void **state)
{
    (void)state;
    struct arena a;
    arena_init(&a, 256, 1 << 20);
    char src[300];
    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (char)(i * 31);
    char *copy = arena_memdup(&a, src, sizeof(src));
    assert_non_null(copy);
    assert_ptr_not_equal(copy, src);
    assert_memory_equal(copy, src, sizeof(src));
    src[0] ^= 0x7f;   /* a copy, not an alias */
    assert_int_equal(copy[0], 0);

    const char *hello = "hello";
    char *h = arena_memdup(&a, hello, 6);
    assert_string_equal(h, "hello");
    assert_int_equal((uintptr_t)h % 8, 0);

    void *z = arena_memdup(&a, NULL, 0);   /* size 0: a valid, unique pointer */
    assert_non_null(z);
    assert_ptr_not_equal(z, h);
    arena_free(&a);
}

static void test_strndup(void **state)
{
    (void)state;
    struct arena a;
    arena_init(&a, 64, 96);
    const char *text = "/etc/passwd and more";
    char *s = arena_strndup(&a, text, 11);   /* a prefix, terminated */
    assert_string_equal(s, "/etc/passwd");
    char *empty = arena_strndup(&a, text, 0);
    assert_string_equal(empty, "");
    assert_null(arena_strndup(&a, text, 96));   /* len + 1 would pass the limit */
    arena_free(&a);
}

static void test_free_and_reinit(void **state)
{
    (void)state;
    struct arena a;
    arena_init(&a, 512, 1 << 20);
    arena_free(&a);   /* freeing an unused arena is fine */
    assert_non_null(arena_alloc(&a, 10));
    assert_non_null(arena_alloc(&a, 5000));
    arena_free(&a);
    assert_null(a.chunks);
    /* usable again after free */
    assert_non_null(arena_alloc(&a, 10));
    assert_int_equal(arena_used(&a), 16);
    arena_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alignment),
        cmocka_unit_test(test_distinct),
        cmocka_unit_test(test_limit),
        cmocka_unit_test(test_reset_reuses_chunks),
        cmocka_unit_test(test_reset_reuses_per_message),
        cmocka_unit_test(test_large_allocation),
        cmocka_unit_test(test_memdup),
        cmocka_unit_test(test_strndup),
        cmocka_unit_test(test_free_and_reinit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
