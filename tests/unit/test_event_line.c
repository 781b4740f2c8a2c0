/* test_event_line.c - the bounds and escapes of `seccheckd events` lines
 * (query/event_line.h) that the integration test does not reach: a cut
 * never splits a character, quoting, and JSON kept JSON. */
#include "unit_util.h"

#include "event_line.h"

static const char *shown(const char *s, size_t len)
{
    static struct strbuf sb;
    strbuf_reset(&sb);
    event_line_text(&sb, s, len);
    assert_false(sb.failed);
    return sb.len ? sb.data : "";
}

static void test_quotes_and_escapes(void **state)
{
    (void)state;
    assert_string_equal(shown("/etc/passwd", 11), "/etc/passwd");
    assert_string_equal(shown("", 0), "\"\"");
    assert_string_equal(shown("a \"b\" \\c", 8), "\"a \\\"b\\\" \\\\c\"");
    assert_string_equal(shown("x\\y", 3), "x\\\\y");
    assert_string_equal(shown("\x1b[0m\x7f", 5), "\\x1b[0m\\x7f");
    assert_string_equal(shown("\0z", 2), "\\x00z");
    assert_string_equal(shown("caf\xc3\xa9", 5), "caf\xc3\xa9");              /* UTF-8 kept */
    assert_string_equal(shown("\xc0\xaf", 2), "\\xc0\\xaf");                   /* an overlong '/' */
    assert_string_equal(shown("\xed\xa0\x80", 3), "\\xed\\xa0\\x80");          /* a surrogate */
    assert_string_equal(shown("\xe2\x81\xa6x\xef\xbb\xbf", 7), "\\u{2066}x\\u{feff}");
}

/* The cut falls before a character that would straddle it. */
static void test_cut_on_a_character(void **state)
{
    (void)state;
    char s[EVENT_LINE_VALUE_MAX + 10];
    memset(s, 'a', EVENT_LINE_VALUE_MAX - 1);
    memcpy(s + EVENT_LINE_VALUE_MAX - 1, "\xc3\xa9zzzzzzzzz", 11);   /* é at bytes 255-256 */
    const char *out = shown(s, sizeof(s));
    size_t n = strlen(out);
    const char *tail = "a\"...[+11 bytes]";
    assert_true(n > strlen(tail));
    assert_string_equal(out + n - strlen(tail), tail);
    assert_int_equal(n, 1 + (EVENT_LINE_VALUE_MAX - 1) + strlen("\"...[+11 bytes]"));
}

static void test_json_for_a_terminal(void **state)
{
    (void)state;
    struct strbuf sb = {0};
    const char json[] = "{\"p\":\"\xe2\x80\xae" "exe\x7f\xc2\x9b\",\"n\":1,\"u\":\"\xc3\xa9\"}";
    event_line_json(&sb, json, sizeof(json) - 1);
    assert_string_equal(sb.data, "{\"p\":\"\\u202eexe\\u007f\\u009b\",\"n\":1,\"u\":\"\xc3\xa9\"}");
    strbuf_free(&sb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quotes_and_escapes),
        cmocka_unit_test(test_cut_on_a_character),
        cmocka_unit_test(test_json_for_a_terminal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
