/* test_copy_text.c - values in COPY text format (forward/copy_text.h): what
 * PostgreSQL's text and jsonb would refuse becomes U+FFFD, everything else
 * arrives byte for byte, escaped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "copy_text.h"

static struct strbuf out;

static const char *text(const char *s, size_t len)
{
    strbuf_reset(&out);
    copy_text_string(&out, s, len);
    return out.len ? out.data : "";
}

static const char *json(const char *s)
{
    strbuf_reset(&out);
    copy_text_json(&out, s, strlen(s));
    return out.len ? out.data : "";
}

static void test_escapes(void **state)
{
    (void)state;
    assert_string_equal(text("a\tb\nc\rd\\e", 9), "a\\tb\\nc\\rd\\\\e");
    assert_string_equal(text("plain", 5), "plain");
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
    /* jsonb refuses \u0000: replaced. COPY doubles the backslash. */
    assert_string_equal(json("{\"a\":\"x\\u0000y\"}"), "{\"a\":\"x\\\\ufffdy\"}");
    /* An escaped backslash followed by u0000 is text, not an escape. */
    assert_string_equal(json("{\"a\":\"\\\\u0000\"}"), "{\"a\":\"\\\\\\\\u0000\"}");
    /* Other escapes and an escaped quote stay as they are. */
    assert_string_equal(json("{\"a\":\"\\\"\\u0001\\n\"}"), "{\"a\":\"\\\\\"\\\\u0001\\\\n\"}");
    /* Outside strings nothing is rewritten. */
    assert_string_equal(json("[1,2]"), "[1,2]");
}

static void test_scalars(void **state)
{
    (void)state;
    strbuf_reset(&out);
    copy_text_null(&out);
    out.data[out.len] = '\0';
    assert_string_equal(out.data, "\\N");
    strbuf_reset(&out);
    copy_text_int(&out, INT64_MIN);
    assert_string_equal(out.data, "-9223372036854775808");
    strbuf_reset(&out);
    unsigned char raw[300];
    for (size_t i = 0; i < sizeof(raw); i++)
        raw[i] = (unsigned char)i;
    copy_text_bytea(&out, raw, sizeof(raw));
    assert_int_equal(out.len, 3 + 2 * sizeof(raw));
    assert_memory_equal(out.data, "\\\\x000102", 9);
    assert_memory_equal(out.data + out.len - 2, "2b", 2);   /* 299 & 0xff */
    assert_memory_equal(out.data + 3 + 2 * 255, "ff00", 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_json_nul_escape),
        cmocka_unit_test(test_scalars),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    strbuf_free(&out);
    return rc;
}
