/* test_event_line.c - the bounds and escapes of `seccheckd events` lines
 * (query/event_line.h) that the integration test does not reach: a cut
 * never splits a character, quoting, and JSON kept JSON. */
#include "unit_util.h"

#include "arena.h"
#include "decode.h"
#include "event_line.h"
#include "gvisor/common.pb-c.h"
#include "gvisor/syscall.pb-c.h"
#include "term_color.h"
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

/* The line of an openat exit by a process named name, coloured or not. */
static void open_line(struct strbuf *out, const char *name, bool color)
{
    Gvisor__Common__ContextData ctx = GVISOR__COMMON__CONTEXT_DATA__INIT;
    ctx.container_id = "c1";
    ctx.process_name = (char *)name;
    ctx.thread_group_id = 7;
    ctx.time_ns = 1;
    Gvisor__Syscall__Exit x = GVISOR__SYSCALL__EXIT__INIT;
    x.result = 3;
    Gvisor__Syscall__Open open = GVISOR__SYSCALL__OPEN__INIT;
    open.context_data = &ctx;
    open.exit = &x;
    open.sysno = 257;
    open.fd = -100;
    open.pathname = "/etc/passwd";
    static uint8_t pkt[512];
    size_t n = protobuf_c_message_get_packed_size(&open.base);
    assert_true(WIRE_HEADER_MIN + n <= sizeof(pkt));
    wire_header_write(pkt, 7, 0);
    protobuf_c_message_pack(&open.base, pkt + WIRE_HEADER_MIN);
    struct wire_header h;
    assert_int_equal(wire_header_parse(pkt, WIRE_HEADER_MIN + n, &h), WIRE_OK);
    struct decoder d;
    decoder_init(&d);
    struct arena arena;
    arena_init(&arena, 64 * 1024, 1 << 20);
    struct event ev = {.recv_ns = 1};
    decode_event(&d, &arena, &h, pkt, WIRE_HEADER_MIN + n, &ev);
    assert_int_equal(ev.status, DECODE_OK);
    event_line_render_color(out, &ev, color);
    arena_free(&arena);
}

/* Colour wraps the call's name only, in seccheckd's own sequence; a
 * process name's escape sequence stays escaped. */
static void test_color_marks_the_call(void **state)
{
    (void)state;
    struct strbuf plain = {0}, colored = {0};
    open_line(&plain, "\x1b[2Jcat", false);
    open_line(&colored, "\x1b[2Jcat", true);
    assert_string_equal(plain.data, "1970-01-01T00:00:00.000Z c1 \\x1b[2Jcat[7] openat /etc/passwd O_RDONLY = 3\n");
    assert_string_equal(colored.data, "1970-01-01T00:00:00.000Z c1 \\x1b[2Jcat[7] " TERM_COLOR_OPEN "openat"
                                      TERM_COLOR_RESET " /etc/passwd O_RDONLY = 3\n");
    strbuf_free(&plain);
    strbuf_free(&colored);
    assert_string_equal(term_color_priority("Critical"), "\x1b[1;31m");
    assert_string_equal(term_color_priority("Warning"), "\x1b[33m");
    assert_string_equal(term_color_priority("\x1b]0;x"), "");
    enum term_color_mode m;
    assert_int_equal(term_color_parse("always", &m), 0);
    assert_int_equal(m, TERM_COLOR_ALWAYS);
    assert_int_equal(term_color_parse("yes", &m), -1);
    assert_true(term_color_wanted(TERM_COLOR_ALWAYS, -1));
    assert_false(term_color_wanted(TERM_COLOR_NEVER, 1));
    assert_false(term_color_wanted(TERM_COLOR_AUTO, -1));   /* not a terminal */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quotes_and_escapes),
        cmocka_unit_test(test_cut_on_a_character),
        cmocka_unit_test(test_json_for_a_terminal),
        cmocka_unit_test(test_color_marks_the_call),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
