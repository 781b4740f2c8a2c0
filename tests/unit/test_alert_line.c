/* test_alert_line.c - an alert as the line the daemon prints
 * (storage/alert_line.h): Falco's JSON as the rules made it, Falco's text
 * line escaped as Falco escapes it, the priority coloured for a terminal,
 * and sd-daemon's "<N>" prefix for the journal. */
#include "unit_util.h"

#include "alert_line.h"

static struct alert make_alert(enum rules_priority p, const char *output, size_t len)
{
    static const char json[] = "{\"hostname\":\"h\",\"output\":\"x\"}";
    return (struct alert){.rule = "R", .priority = p, .output = output, .output_len = len, .json = json,
                          .json_len = sizeof(json) - 1};
}

static const char *line(const struct alert *a, enum alert_line_format f, bool color)
{
    static struct strbuf sb;
    strbuf_reset(&sb);
    struct alert_line_style st = {.format = f, .color = color};
    alert_line_render(&sb, a, &st);
    strbuf_putc(&sb, '\0');
    assert_false(sb.failed);
    return sb.data;
}

static const char *escaped(const char *s, size_t len)
{
    static struct strbuf sb;
    strbuf_reset(&sb);
    alert_line_escape(&sb, s, len);
    strbuf_putc(&sb, '\0');
    return sb.data;
}

#define OUT "13:53:31.726060287: Critical Some Event Description (proc_exe=bash)"

/* Falco's text line is its "output" and a newline: the prefix
 * "%evt.time: Priority" (falco userspace/engine/formats.cpp, format_event),
 * "13:53:31.726060287: Critical Some Event..." in its own comment there. */
static void test_text_is_falcos_line(void **state)
{
    (void)state;
    struct alert a = make_alert(RULES_CRITICAL, OUT, strlen(OUT));
    assert_string_equal(line(&a, ALERT_LINE_TEXT, false), OUT "\n");
    assert_string_equal(line(&a, ALERT_LINE_JSON, false), "{\"hostname\":\"h\",\"output\":\"x\"}\n");
}

/* As nlohmann::json's dump (ensure_ascii false, invalid UTF-8 replaced)
 * without the quotes, which is what Falco prints (formats.cpp, the
 * OF_NORMAL branch): a sandbox's escape sequence never reaches a terminal. */
static void test_escaped_as_falco_does(void **state)
{
    (void)state;
    assert_string_equal(escaped("a \"b\" \\c", 8), "a \\\"b\\\" \\\\c");
    assert_string_equal(escaped("\n\r\t\b\f", 5), "\\n\\r\\t\\b\\f");
    assert_string_equal(escaped("\x1b[31mred", 8), "\\u001b[31mred");
    assert_string_equal(escaped("\0z\x7f", 3), "\\u0000z\x7f");
    assert_string_equal(escaped("caf\xc3\xa9 \xe2\x82\xac", 9), "caf\xc3\xa9 \xe2\x82\xac");   /* UTF-8 kept */
    assert_string_equal(escaped("\xc0\xaf|\xff", 4), "\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd"); /* U+FFFD each */
    assert_string_equal(escaped("\xed\xa0\x80", 3), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");    /* a surrogate */
    /* C1 controls (U+009B is CSI to some terminals): escaped as well. */
    assert_string_equal(escaped("\xc2\x9b" "31m\xc2\x85\xc2\xa0", 9), "\\u009b31m\\u0085\xc2\xa0");
    assert_string_equal(escaped("x\xc2", 2), "x\xef\xbf\xbd");   /* a sequence cut short */
}

static void test_text_of_hostile_output(void **state)
{
    (void)state;
    static const char out[] = "00:00:01.000000000: Warning file=/tmp/\x1b]0;owned\x07\nnext";
    struct alert a = make_alert(RULES_WARNING, out, sizeof(out) - 1);
    assert_string_equal(line(&a, ALERT_LINE_TEXT, true),
                        "00:00:01.000000000: \033[33mWarning\033[0m file=/tmp/\\u001b]0;owned\\u0007\\nnext\n");
}

/* The priority word in its colour, the rest as it was. */
static void test_colour_marks_the_priority(void **state)
{
    (void)state;
    static const struct {
        enum rules_priority p;
        const char *sgr;
    } cases[] = {{RULES_EMERGENCY, "1;31"}, {RULES_CRITICAL, "1;31"}, {RULES_ERROR, "31"}, {RULES_WARNING, "33"},
                 {RULES_NOTICE, "36"}, {RULES_INFORMATIONAL, "32"}, {RULES_DEBUG, "2"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[128], want[160];
        const char *name = rules_priority_name(cases[i].p);
        snprintf(out, sizeof(out), "01:02:03.000000004: %s rule text: more", name);
        snprintf(want, sizeof(want), "01:02:03.000000004: \033[%sm%s\033[0m rule text: more\n", cases[i].sgr, name);
        struct alert a = make_alert(cases[i].p, out, strlen(out));
        assert_string_equal(line(&a, ALERT_LINE_TEXT, true), want);
        snprintf(want, sizeof(want), "%s\n", out);
        assert_string_equal(line(&a, ALERT_LINE_TEXT, false), want);
    }
    /* An output that does not start "TIME: Priority" is printed uncoloured. */
    struct alert odd = make_alert(RULES_WARNING, "no prefix", 9);
    assert_string_equal(line(&odd, ALERT_LINE_TEXT, true), "no prefix\n");
    struct alert other = make_alert(RULES_WARNING, "t: Error x", 10);
    assert_string_equal(line(&other, ALERT_LINE_TEXT, true), "t: Error x\n");
}

/* sd-daemon(3): "<N>" with N the syslog level; Falco's priorities are
 * syslog's, Emergency 0 to Debug 7. Never coloured. */
static void test_journal_prefix_is_the_syslog_level(void **state)
{
    (void)state;
    for (int p = 0; p < RULES_PRIORITY_COUNT; p++) {
        char out[96], want[112];
        snprintf(out, sizeof(out), "01:02:03.000000004: %s x", rules_priority_name((enum rules_priority)p));
        snprintf(want, sizeof(want), "<%d>%s\n", p, out);
        struct alert a = make_alert((enum rules_priority)p, out, strlen(out));
        assert_string_equal(line(&a, ALERT_LINE_JOURNAL, true), want);
    }
    assert_int_equal(RULES_WARNING, 4);   /* LOG_WARNING */
    assert_int_equal(RULES_DEBUG, 7);     /* LOG_DEBUG */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_is_falcos_line),
        cmocka_unit_test(test_escaped_as_falco_does),
        cmocka_unit_test(test_text_of_hostile_output),
        cmocka_unit_test(test_colour_marks_the_priority),
        cmocka_unit_test(test_journal_prefix_is_the_syslog_level),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
