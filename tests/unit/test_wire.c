/* test_wire.c - packet header and handshake (decoder/wire.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "wire.h"

static void test_header_good(void **state)
{
    (void)state;
    const uint8_t pkt[] = {0x08, 0x00, 0x07, 0x00, 0x78, 0x56, 0x34, 0x12, 0xaa, 0xbb};
    struct wire_header h;
    memset(&h, 0xee, sizeof(h));
    assert_int_equal(wire_header_parse(pkt, sizeof(pkt), &h), WIRE_OK);
    assert_int_equal(h.header_size, 8);
    assert_int_equal(h.message_type, 7);
    assert_int_equal(h.dropped_count, 0x12345678u);
}

static void test_header_little_endian(void **state)
{
    (void)state;
    /* Every byte differs so a byte-order or offset slip shows. */
    const uint8_t pkt[] = {0x08, 0x00, 0x22, 0x01, 0x01, 0x02, 0x03, 0x84};
    struct wire_header h;
    assert_int_equal(wire_header_parse(pkt, sizeof(pkt), &h), WIRE_OK);
    assert_int_equal(h.message_type, 0x0122);
    assert_int_equal(h.dropped_count, 0x84030201u);

    const uint8_t max[] = {0x08, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    assert_int_equal(wire_header_parse(max, sizeof(max), &h), WIRE_OK);
    assert_int_equal(h.message_type, 0xffff);
    assert_int_equal(h.dropped_count, 0xffffffffu);
}

static void test_header_short(void **state)
{
    (void)state;
    const uint8_t pkt[8] = {0x08, 0x00, 0x07, 0x00, 0, 0, 0, 0};
    struct wire_header h;
    for (size_t len = 0; len < 8; len++)
        assert_int_equal(wire_header_parse(pkt, len, &h), WIRE_SHORT_PACKET);
    assert_int_equal(wire_header_parse(pkt, 8, &h), WIRE_OK);
}

static void set_header_size(uint8_t *pkt, uint16_t hs)
{
    pkt[0] = (uint8_t)hs;
    pkt[1] = (uint8_t)(hs >> 8);
}

static void test_header_bad_size(void **state)
{
    (void)state;
    uint8_t pkt[100] = {0};
    struct wire_header h;
    pkt[2] = 7;

    set_header_size(pkt, 0);
    assert_int_equal(wire_header_parse(pkt, 20, &h), WIRE_BAD_HEADER_SIZE);
    set_header_size(pkt, 7);
    assert_int_equal(wire_header_parse(pkt, 20, &h), WIRE_BAD_HEADER_SIZE);
    set_header_size(pkt, 1);
    assert_int_equal(wire_header_parse(pkt, 8, &h), WIRE_BAD_HEADER_SIZE);
    /* header_size past the packet */
    set_header_size(pkt, 21);
    assert_int_equal(wire_header_parse(pkt, 20, &h), WIRE_BAD_HEADER_SIZE);
    set_header_size(pkt, 9);
    assert_int_equal(wire_header_parse(pkt, 8, &h), WIRE_BAD_HEADER_SIZE);
    set_header_size(pkt, 65535);
    assert_int_equal(wire_header_parse(pkt, sizeof(pkt), &h), WIRE_BAD_HEADER_SIZE);
    set_header_size(pkt, 0x0800);   /* 8 read big-endian */
    assert_int_equal(wire_header_parse(pkt, sizeof(pkt), &h), WIRE_BAD_HEADER_SIZE);
}

static void test_header_size_equals_len(void **state)
{
    (void)state;
    uint8_t pkt[32] = {0};
    struct wire_header h;
    pkt[2] = 9;
    set_header_size(pkt, 8);
    assert_int_equal(wire_header_parse(pkt, 8, &h), WIRE_OK);   /* empty payload */
    assert_int_equal(h.header_size, 8);
    set_header_size(pkt, 20);
    assert_int_equal(wire_header_parse(pkt, 20, &h), WIRE_OK);
    assert_int_equal(h.header_size, 20);
    assert_int_equal(h.message_type, 9);
}

static void test_header_grown(void **state)
{
    (void)state;
    /* A future, longer header: 12 bytes, the last 4 unknown, then payload. */
    const uint8_t pkt[] = {0x0c, 0x00, 0x22, 0x00, 0x05, 0x00, 0x00, 0x00, 0xde, 0xad, 0xbe, 0xef, 0x08, 0x01};
    struct wire_header h;
    assert_int_equal(wire_header_parse(pkt, sizeof(pkt), &h), WIRE_OK);
    assert_int_equal(h.header_size, 12);
    assert_int_equal(h.message_type, 34);
    assert_int_equal(h.dropped_count, 5);
}

static void test_header_write_round_trip(void **state)
{
    (void)state;
    uint8_t out[WIRE_HEADER_MIN];
    memset(out, 0xcc, sizeof(out));
    wire_header_write(out, 0x1234, 0xdeadbeefu);
    const uint8_t want[] = {0x08, 0x00, 0x34, 0x12, 0xef, 0xbe, 0xad, 0xde};
    assert_memory_equal(out, want, sizeof(want));

    const uint16_t types[] = {0, 1, 7, 34, 38, 39, 1000, 0xffff};
    const uint32_t drops[] = {0, 1, 865, 18311, 0x7fffffffu, 0xfffffff0u, 0xffffffffu};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        for (size_t j = 0; j < sizeof(drops) / sizeof(drops[0]); j++) {
            struct wire_header h;
            wire_header_write(out, types[i], drops[j]);
            assert_int_equal(wire_header_parse(out, sizeof(out), &h), WIRE_OK);
            assert_int_equal(h.header_size, WIRE_HEADER_MIN);
            assert_int_equal(h.message_type, types[i]);
            assert_int_equal(h.dropped_count, drops[j]);
        }
    }
}

static void test_handshake_good(void **state)
{
    (void)state;
    uint32_t v = 0;
    const uint8_t v1[] = {0x08, 0x01};
    assert_int_equal(wire_handshake_parse(v1, sizeof(v1), &v), 0);
    assert_int_equal(v, 1);

    const uint8_t v5[] = {0x08, 0x05};
    v = 0;
    assert_int_equal(wire_handshake_parse(v5, sizeof(v5), &v), 0);
    assert_int_equal(v, 5);

    /* a newer client might send fields we do not know: still a handshake */
    const uint8_t extra[] = {0x08, 0x02, 0x10, 0x07};
    v = 0;
    assert_int_equal(wire_handshake_parse(extra, sizeof(extra), &v), 0);
    assert_int_equal(v, 2);

    const uint8_t vmax[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0x0f};
    v = 0;
    assert_int_equal(wire_handshake_parse(vmax, sizeof(vmax), &v), 0);
    assert_int_equal(v, 0xffffffffu);
}

static void test_handshake_rejected(void **state)
{
    (void)state;
    uint32_t v = 77;
    const uint8_t v0[] = {0x08, 0x00};
    assert_int_equal(wire_handshake_parse(v0, sizeof(v0), &v), -1);
    assert_int_equal(wire_handshake_parse(v0, 0, &v), -1);   /* empty */

    const uint8_t *garbage[] = {
        (const uint8_t *)"\xff\xff\xff",          /* unterminated varint tag */
        (const uint8_t *)"\x08",                  /* tag without value */
        (const uint8_t *)"\x08\x80",              /* truncated varint value */
        (const uint8_t *)"\x0a\x01\x01",          /* field 1 with wrong wire type */
        (const uint8_t *)"hello",                 /* text */
        (const uint8_t *)"\x10\x01",              /* only an unknown field: version 0 */
        (const uint8_t *)"\x00\x00",              /* field number 0 */
    };
    const size_t glen[] = {3, 1, 2, 3, 5, 2, 2};
    for (size_t i = 0; i < sizeof(glen) / sizeof(glen[0]); i++) {
        v = 77;
        if (wire_handshake_parse(garbage[i], glen[i], &v) != -1)
            fail_msg("garbage handshake %zu accepted as version %u", i, v);
        assert_int_equal(v, 77);   /* untouched on failure */
    }

    /* Longer than the peer's answer buffer: refused before parsing. */
    size_t big = WIRE_HANDSHAKE_MAX + 1;
    uint8_t *pkt = calloc(1, big);
    assert_non_null(pkt);
    pkt[0] = 0x08;
    pkt[1] = 0x01;
    assert_int_equal(wire_handshake_parse(pkt, big, &v), -1);
    /* A large packet of unknown fields within the limit: must not crash. */
    for (size_t i = 2; i + 1 < WIRE_HANDSHAKE_MAX; i += 2) {
        pkt[i] = 0x10;   /* field 2, varint */
        pkt[i + 1] = 0x01;
    }
    v = 0;
    int rc = wire_handshake_parse(pkt, WIRE_HANDSHAKE_MAX, &v);
    assert_true(rc == 0 || rc == -1);
    if (rc == 0)
        assert_int_equal(v, 1);
    free(pkt);
}

static void test_handshake_encode(void **state)
{
    (void)state;
    uint8_t out[8];
    memset(out, 0xcc, sizeof(out));
    size_t n = wire_handshake_encode(1, out);
    assert_int_equal(n, 2);
    const uint8_t want[] = {0x08, 0x01};
    assert_memory_equal(out, want, 2);

    const uint32_t versions[] = {1, 5, 127, 128, 300, 0xffffffffu};
    for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
        memset(out, 0, sizeof(out));
        n = wire_handshake_encode(versions[i], out);
        assert_in_range(n, 2, 6);
        uint32_t v = 0;
        assert_int_equal(wire_handshake_parse(out, n, &v), 0);
        assert_int_equal(v, versions[i]);
    }
}

static void test_dropped_delta(void **state)
{
    (void)state;
    assert_int_equal(wire_dropped_delta(0xFFFFFFF0u, 0x10u), 0x20u);
    assert_int_equal(wire_dropped_delta(0xFFFFFFFFu, 0u), 1u);
    assert_int_equal(wire_dropped_delta(0, 865), 865u);
    assert_int_equal(wire_dropped_delta(865, 865), 0u);
    assert_int_equal(wire_dropped_delta(100, 18311), 18211u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_good),
        cmocka_unit_test(test_header_little_endian),
        cmocka_unit_test(test_header_short),
        cmocka_unit_test(test_header_bad_size),
        cmocka_unit_test(test_header_size_equals_len),
        cmocka_unit_test(test_header_grown),
        cmocka_unit_test(test_header_write_round_trip),
        cmocka_unit_test(test_handshake_good),
        cmocka_unit_test(test_handshake_rejected),
        cmocka_unit_test(test_handshake_encode),
        cmocka_unit_test(test_dropped_delta),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
