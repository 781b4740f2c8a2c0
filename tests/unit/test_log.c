/* Unit: common/log.c escapes what it writes (issue 32 item 8). A sandbox's
 * string reaches log lines (a container id in process_history.c's "rules:
 * connection N names container %s", a state file's path, a rule's text):
 * whatever it holds, a line stays one line, starts with the daemon's own
 * prefix, and carries no byte a terminal acts on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "log.h"

/* What log_msg wrote to stderr while fn ran with arg. */
static char *captured(void (*fn)(const char *), const char *arg)
{
    char path[] = "/tmp/seccheckd-test-log-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
    fn(arg);
    fflush(stderr);
    assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
    close(saved);
    off_t size = lseek(fd, 0, SEEK_END);
    assert_true(size >= 0);
    char *text = calloc(1, (size_t)size + 1);
    assert_non_null(text);
    assert_int_equal(pread(fd, text, (size_t)size, 0), size);
    close(fd);
    return text;
}

static void warn_container(const char *id)
{
    log_warn("rules: connection 7 names container %s of connection 3", id);
}

static int count(const char *s, char c)
{
    int n = 0;
    for (; *s; s++)
        n += *s == c;
    return n;
}

/* The forged line of the audit: a newline and the daemon's own prefix. */
static void test_newline_cannot_start_a_line(void **state)
{
    (void)state;
    char *out = captured(warn_container, "victim\nseccheckd: error: FORGED LINE\r\n");
    assert_int_equal(count(out, '\n'), 1);   /* one line: its own end */
    assert_null(strchr(out, '\r'));
    assert_string_equal(out, "seccheckd: warn: rules: connection 7 names container "
                             "victim\\nseccheckd: error: FORGED LINE\\r\\n of connection 3\n");
    free(out);
}

/* ESC, BEL, DEL, NUL-free C0 and the C1 controls (CSI as U+009B): escaped;
 * bytes that are not UTF-8 too; UTF-8 text is kept as it is. */
static void test_terminal_controls_escaped(void **state)
{
    (void)state;
    char *out = captured(warn_container, "\x1b[31mred\x07\x7f\xc2\x9b" "2J\xff\xfe caf\xc3\xa9 \xe2\x9c\x93\ttab");
    for (const unsigned char *p = (const unsigned char *)out; *p; p++)
        assert_true(*p == '\n' || (*p >= 0x20 && *p != 0x7f));
    assert_null(strstr(out, "\xc2\x9b"));
    assert_non_null(strstr(out, "\\x1b[31mred\\x07\\x7f\\xc2\\x9b2J\\xff\\xfe caf\xc3\xa9 \xe2\x9c\x93\\ttab"));
    free(out);
}

/* A long value: the line is cut, still one line, escapes never split. */
static void test_long_line_cut_whole(void **state)
{
    (void)state;
    char big[5000];
    for (size_t i = 0; i < sizeof(big) - 1; i++)
        big[i] = i % 2 ? '\x1b' : 'a';
    big[sizeof(big) - 1] = '\0';
    char *out = captured(warn_container, big);
    size_t len = strlen(out);
    assert_true(len > 1000);
    assert_int_equal(count(out, '\n'), 1);
    assert_int_equal(out[len - 1], '\n');
    for (size_t i = 0; i + 1 < len; i++)
        assert_true((unsigned char)out[i] >= 0x20);
    /* the cut falls between escapes: the text before the newline ends with a whole "\x1b" or "a" */
    assert_true(out[len - 2] == 'a' || (len >= 6 && memcmp(out + len - 5, "\\x1b", 4) == 0));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_newline_cannot_start_a_line),
        cmocka_unit_test(test_terminal_controls_escaped),
        cmocka_unit_test(test_long_line_cut_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
