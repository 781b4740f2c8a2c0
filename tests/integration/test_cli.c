/* Integration: how seccheckd starts, refuses and explains itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon.h"
#include "listener.h"

/* Runs seccheckd with args to completion; returns exit code, output in out. */
static int run_capture(const char *const *args, char *out, size_t outlen)
{
    char cmd[2048] = SECCHECKD_BIN;
    for (int i = 0; args[i]; i++) {
        strcat(cmd, " '");
        strcat(cmd, args[i]);
        strcat(cmd, "'");
    }
    strcat(cmd, " 2>&1");
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, outlen - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_help_and_version(void **state)
{
    (void)state;
    char out[8192];
    const char *help[] = {"--help", NULL};
    assert_int_equal(run_capture(help, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "--socket PATH"));
    assert_non_null(strstr(out, "/tmp/seccheck.sock"));
    assert_non_null(strstr(out, "--sink sqlite|discard|record"));
    assert_non_null(strstr(out, "--config FILE"));
    const char *version[] = {"--version", NULL};
    assert_int_equal(run_capture(version, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "seccheckd "));
}

static void test_bad_options_explain_themselves(void **state)
{
    (void)state;
    char out[8192];
    const char *bogus[] = {"--bogus", NULL};
    assert_int_equal(run_capture(bogus, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "--help"));
    const char *zero[] = {"--batch-size", "0", NULL};
    assert_int_equal(run_capture(zero, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "--batch-size: expected a whole number from 1"));
    const char *sink[] = {"--sink", "kafka", NULL};
    assert_int_equal(run_capture(sink, out, sizeof(out)), 2);   /* a usage error, caught before starting */
    assert_non_null(strstr(out, "--sink: expected sqlite, discard, record, ndjson or text"));
    const char *db[] = {"--db", "/nonexistent-dir/x.db", "--socket", "/tmp/unused-seccheckd.sock", NULL};
    assert_int_equal(run_capture(db, out, sizeof(out)), 1);
    assert_non_null(strstr(out, "/nonexistent-dir/x.db"));
}

static void test_refuses_to_replace_a_regular_file(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    FILE *f = fopen(d.socket, "w");
    fputs("precious", f);
    fclose(f);
    assert_false(daemon_start(&d, SECCHECKD_BIN, NULL));
    assert_int_equal(d.exit_status, 1);
    char *log = daemon_read_log(&d);
    assert_non_null(strstr(log, "is not a socket"));
    free(log);
    f = fopen(d.socket, "r");
    char buf[16] = {0};
    assert_non_null(fgets(buf, sizeof(buf), f));
    fclose(f);
    assert_string_equal(buf, "precious");
    daemon_cleanup(&d);
}

static void test_replaces_a_stale_socket(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    /* A socket file left by a process that died: bound, never unlinked. */
    int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strcpy(addr.sun_path, d.socket);
    assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    close(fd);
    assert_true(daemon_start(&d, SECCHECKD_BIN, NULL));
    struct stat st;
    assert_int_equal(stat(d.socket, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0660);
    assert_int_equal(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}

static void test_refuses_a_live_listener(void **state)
{
    (void)state;
    struct daemon first, second;
    daemon_prepare(&first);
    assert_true(daemon_start(&first, SECCHECKD_BIN, NULL));
    daemon_prepare(&second);
    strcpy(second.socket, first.socket);
    assert_false(daemon_start(&second, SECCHECKD_BIN, NULL));
    assert_int_equal(second.exit_status, 1);
    char *log = daemon_read_log(&second);
    assert_non_null(strstr(log, "another process is listening"));
    free(log);
    /* The first daemon still serves. */
    int fd = listener_connect(first.socket);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(daemon_stop(&first), 0);
    daemon_cleanup(&second);
    daemon_cleanup(&first);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_and_version),
        cmocka_unit_test(test_bad_options_explain_themselves),
        cmocka_unit_test(test_refuses_to_replace_a_regular_file),
        cmocka_unit_test(test_replaces_a_stale_socket),
        cmocka_unit_test(test_refuses_a_live_listener),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
