/* test_copy_binary.c - values in PostgreSQL's binary COPY format
 * (forward/copy_binary.h): each field's length and bytes as the server reads
 * them; what text and jsonb would refuse becomes U+FFFD, everything else
 * arrives byte for byte, unescaped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "copy_binary.h"

static struct strbuf out;

static uint64_t be(const char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = v << 8 | (unsigned char)p[i];
    return v;
}

/* The payload of the one field in out, NUL-terminated; its length checked
 * against the bytes that follow it. */
static const char *field(void)
{
    static char payload[1024];
    assert_true(out.len >= 4);
    size_t n = (size_t)be(out.data, 4);
    assert_int_equal(n, out.len - 4);
    assert_true(n < sizeof(payload));
    memcpy(payload, out.data + 4, n);
    payload[n] = '\0';
    return payload;
}

static const char *text(const char *s, size_t len)
{
    strbuf_reset(&out);
    copy_binary_text(&out, s, len);
    return field();
}

static const char *json(const char *s)
{
    strbuf_reset(&out);
    copy_binary_jsonb(&out, s, strlen(s));
    const char *p = field();
    assert_int_equal(p[0], 1);   /* jsonb format version */
    return p + 1;
}

static void test_unescaped(void **state)
{
    (void)state;
    /* Binary COPY has no escapes: tab, newline, backslash go as they are. */
    assert_string_equal(text("a\tb\nc\rd\\e", 9), "a\tb\nc\rd\\e");
    assert_string_equal(text("plain", 5), "plain");
    assert_string_equal(text("", 0), "");
}

static void test_utf8(void **state)
{
    (void)state;
    /* Valid multibyte sequences pass untouched. */
    assert_string_equal(text("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    /* NUL, a lone continuation byte, a truncated sequence, an overlong form,
     * a surrogate and a code point past U+10FFFF each become U+FFFD. */
    assert_string_equal(text("A\0B", 3), "A\xef\xbf\xbd" "B");
    assert_string_equal(text("\x80", 1), "\xef\xbf\xbd");
    assert_string_equal(text("\xe2\x82", 2), "\xef\xbf\xbd\xef\xbf\xbd");
    assert_string_equal(text("\xc0\xaf", 2), "\xef\xbf\xbd\xef\xbf\xbd");
    assert_string_equal(text("\xed\xa0\x80", 3), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    assert_string_equal(text("\xf4\x90\x80\x80", 4), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
}

static void test_json_nul_escape(void **state)
{
    (void)state;
    /* jsonb refuses \u0000: replaced. */
    assert_string_equal(json("{\"a\":\"x\\u0000y\"}"), "{\"a\":\"x\\ufffdy\"}");
    /* An escaped backslash followed by u0000 is text, not an escape. */
    assert_string_equal(json("{\"a\":\"\\\\u0000\"}"), "{\"a\":\"\\\\u0000\"}");
    /* Other escapes and an escaped quote stay as they are. */
    assert_string_equal(json("{\"a\":\"\\\"\\u0001\\n\"}"), "{\"a\":\"\\\"\\u0001\\n\"}");
    /* Outside strings nothing is rewritten. */
    assert_string_equal(json("[1,2]"), "[1,2]");
    /* Invalid UTF-8 inside a string. */
    assert_string_equal(json("[\"a\xff\"]"), "[\"a\xef\xbf\xbd\"]");
}

static void test_scalars(void **state)
{
    (void)state;
    strbuf_reset(&out);
    copy_binary_null(&out);
    assert_int_equal(out.len, 4);
    assert_int_equal(be(out.data, 4), 0xffffffffu);
    strbuf_reset(&out);
    copy_binary_int8(&out, INT64_MIN + 1);
    assert_int_equal(out.len, 12);
    assert_int_equal(be(out.data, 4), 8);
    assert_int_equal(be(out.data + 4, 8), 0x8000000000000001u);
    strbuf_reset(&out);
    copy_binary_float8(&out, -2.5);   /* IEEE 754: 0xc004000000000000 */
    assert_int_equal(be(out.data + 4, 8), 0xc004000000000000u);
    strbuf_reset(&out);
    unsigned char raw[300];
    for (size_t i = 0; i < sizeof(raw); i++)
        raw[i] = (unsigned char)i;
    copy_binary_bytea(&out, raw, sizeof(raw));
    assert_int_equal(out.len, 4 + sizeof(raw));
    assert_int_equal(be(out.data, 4), sizeof(raw));
    assert_memory_equal(out.data + 4, raw, sizeof(raw));
}

static void test_framing(void **state)
{
    (void)state;
    strbuf_reset(&out);
    copy_binary_header(&out);
    assert_int_equal(out.len, 19);
    assert_memory_equal(out.data, "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0", 19);
    strbuf_reset(&out);
    copy_binary_row(&out, 27);
    copy_binary_trailer(&out);
    assert_int_equal(out.len, 4);
    assert_memory_equal(out.data, "\0\x1b\xff\xff", 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unescaped),
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_json_nul_escape),
        cmocka_unit_test(test_scalars),
        cmocka_unit_test(test_framing),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    strbuf_free(&out);
    return rc;
}
