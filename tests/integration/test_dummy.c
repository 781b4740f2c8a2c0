/* Integration: seccheck-dummy, and the Python baseline it replaces, accept
 * sandboxes, discard their messages and report the counts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon.h"
#include "replay.h"

/* Runs a discard listener, replays two traces, checks what it printed. */
static void check_listener(const char *const *argv_tail, bool is_python)
{
    struct replay_trace exec_loop, drops;
    assert_int_equal(trace_load_named(&exec_loop, "exec_loop"), 0);
    assert_int_equal(trace_load_named(&drops, "drops"), 0);
    struct daemon d;
    daemon_prepare(&d);
    const char *argv[4] = {argv_tail[0], argv_tail[1], argv_tail[1] ? d.socket : NULL, NULL};
    if (!argv_tail[1])
        argv[1] = d.socket;
    assert_true(daemon_spawn(&d, argv, "listening on"));
    assert_int_equal(replay_connection(d.socket, &exec_loop, exec_loop.version), 0);
    assert_int_equal(replay_connection(d.socket, &drops, drops.version), 0);
    /* Both connections reported before we stop it (the log is checked below). */
    daemon_wait_log(&d, "1219 messages", 1, 5000);
    daemon_wait_log(&d, "1692 messages", 1, 5000);
    assert_int_equal(daemon_stop(&d), 0);
    char *log = daemon_read_log(&d);
    char line[200];
    snprintf(line, sizeof(line), "1219 messages, %zu bytes, 0 dropped by the sandbox", exec_loop.bytes);
    assert_non_null(strstr(log, line));
    snprintf(line, sizeof(line), "1692 messages, %zu bytes, 18311 dropped by the sandbox", drops.bytes);
    assert_non_null(strstr(log, line));
    snprintf(line, sizeof(line), "total: 2 connections, 2911 messages, %zu bytes, 18311 dropped by the sandbox",
             exec_loop.bytes + drops.bytes);
    assert_non_null(strstr(log, line));
    free(log);
    struct stat st;
    assert_int_not_equal(stat(d.socket, &st), 0);   /* removed on exit */
    (void)is_python;
    daemon_cleanup(&d);
    replay_trace_free(&exec_loop);
    replay_trace_free(&drops);
}

static void test_seccheck_dummy(void **state)
{
    (void)state;
    const char *argv[] = {DUMMY_BIN, NULL};
    check_listener(argv, false);
}

static void test_python_baseline(void **state)
{
    (void)state;
    const char *argv[] = {"/usr/bin/python3", DUMMY_PY};
    check_listener(argv, true);
}

static void test_dummy_usage(void **state)
{
    (void)state;
    FILE *p = popen(DUMMY_BIN " --help", "r");
    char out[1024] = {0};
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    assert_int_equal(pclose(p), 0);
    assert_non_null(strstr(out, "/tmp/seccheck.sock"));
    p = popen(DUMMY_BIN " a b 2>&1", "r");
    n = fread(out, 1, sizeof(out) - 1, p);
    assert_int_not_equal(pclose(p), 0);
}

/* seccheck-dummy takes its socket as an argument: its errors about the path
 * must not send the user to a --socket option it does not have. */
static void test_dummy_socket_errors(void **state)
{
    (void)state;
    struct daemon first, second;
    daemon_prepare(&first);
    const char *argv[] = {DUMMY_BIN, first.socket, NULL};
    assert_true(daemon_spawn(&first, argv, "listening on"));
    daemon_prepare(&second);
    /* It exits at once: what it prints is the error ("is listening on" too). */
    assert_false(daemon_spawn(&second, argv, "never printed"));
    assert_int_equal(second.exit_status, 1);
    char *log = daemon_read_log(&second);
    if (!strstr(log, "seccheck-dummy: another process is listening on") ||
        !strstr(log, "(stop it, or choose another socket path)") || strstr(log, "--socket"))
        fail_msg("unexpected error for a socket in use: %s", log);
    free(log);
    assert_int_equal(daemon_stop(&first), 0);

    FILE *f = fopen(first.socket, "w");   /* not a socket: never replaced */
    assert_non_null(f);
    fclose(f);
    assert_false(daemon_spawn(&second, argv, "never printed"));
    log = daemon_read_log(&second);
    if (!strstr(log, "exists and is not a socket; refusing to replace it (remove it, or choose another socket path)") ||
        strstr(log, "--socket"))
        fail_msg("unexpected error for a regular file: %s", log);
    free(log);
    daemon_cleanup(&second);
    daemon_cleanup(&first);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seccheck_dummy),
        cmocka_unit_test(test_python_baseline),
        cmocka_unit_test(test_dummy_usage),
        cmocka_unit_test(test_dummy_socket_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
