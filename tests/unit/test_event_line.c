/* test_event_line.c - the bounds and escapes of `seccheckd events` lines
 * (query/event_line.h) that the integration test does not reach: a cut
 * never splits a character, quoting, and JSON kept JSON. */
#include "unit_util.h"

#include "decode.h"
#include "event_line.h"
#include "wire.h"

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

/* gVisor fills fd_path with "[err: FD not found]" when the descriptor has
 * no path (a close exit: gone already; gvisor
 * pkg/sentry/syscalls/linux/points.go): the line shows the fd alone,
 * "close 3 = 0", as for a descriptor sent without a path. 178 such events
 * in mixed_syscalls.trace (recorded with runsc 2022-12). */
static void test_fd_without_gvisors_error_string(void **state)
{
    (void)state;
    struct trace_pkts t;
    trace_load("mixed_syscalls.trace", &t);
    struct decoder dec;
    decoder_init(&dec);
    struct arena arena;
    arena_init(&arena, 64 * 1024, 16 << 20);
    struct strbuf sb = {0};
    int closes = 0;
    for (size_t i = 0; i < t.n; i++) {
        struct wire_header h;
        if (wire_header_parse(t.pkt[i], t.len[i], &h) != WIRE_OK)
            continue;
        if (!memmem(t.pkt[i], t.len[i], "[err: ", 6))
            continue;
        struct event ev = {.conn_id = 1, .recv_ns = 1};
        arena_reset(&arena);
        decode_event(&dec, &arena, &h, t.pkt[i], t.len[i], &ev);
        strbuf_reset(&sb);
        event_line_render(&sb, &ev);
        strbuf_putc(&sb, '\0');
        if (memmem(sb.data, sb.len, "err:", 4))
            fail_msg("gVisor's error string shown: %s", sb.data);
        const char *close = strstr(sb.data, " close ");
        if (close) {
            int fd = -1;
            char rest[8] = "";
            assert_int_equal(sscanf(close, " close %d %7s", &fd, rest), 2);
            assert_true(fd >= 0);
            assert_string_equal(rest, "=");
            closes++;
        }
    }
    assert_true(closes >= 100);
    strbuf_free(&sb);
    arena_free(&arena);
    trace_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quotes_and_escapes),
        cmocka_unit_test(test_cut_on_a_character),
        cmocka_unit_test(test_json_for_a_terminal),
        cmocka_unit_test(test_fd_without_gvisors_error_string),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
