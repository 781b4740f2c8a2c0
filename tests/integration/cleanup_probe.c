/* cleanup_probe - a test program that fails on purpose with a daemon running,
 * for cleanup_check.sh (ctest integration.cleanup), which then checks that
 * the daemon and its scratch directory are gone. Not a test by itself: it is
 * meant to fail.
 *
 * usage: cleanup_probe assert|abort STATE_FILE
 *   assert: the first test starts a daemon, writes "PID DIR" to STATE_FILE
 *           and fails an assertion; the second test checks, before the
 *           program exits, that the daemon and its directory are already
 *           gone. Exits 1 (the one deliberate failure) when cleanup works.
 *   abort:  starts a daemon, writes STATE_FILE, then abort()s: no teardown,
 *           no atexit handler runs. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
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

static const char *state_file;

/* Starts a daemon and records it in the state file. */
static void start_recorded_daemon(struct daemon *d)
{
    daemon_prepare(d);
    assert_true(daemon_start(d, SECCHECKD_BIN, NULL));
    FILE *f = fopen(state_file, "w");
    assert_non_null(f);
    fprintf(f, "%d %s\n", (int)d->pid, d->dir);
    assert_int_equal(fclose(f), 0);
}

static void test_fails_with_daemon_running(void **state)
{
    (void)state;
    struct daemon d;
    start_recorded_daemon(&d);
    fail_msg("deliberate failure with daemon %d running in %s", (int)d.pid, d.dir);
}

static void test_previous_daemon_already_gone(void **state)
{
    (void)state;
    FILE *f = fopen(state_file, "r");
    assert_non_null(f);
    int pid = 0;
    char dir[256] = "";
    assert_int_equal(fscanf(f, "%d %255s", &pid, dir), 2);
    fclose(f);
    errno = 0;
    if (kill(pid, 0) == 0 || errno != ESRCH)
        fail_msg("daemon %d still exists after the failed test", pid);
    struct stat st;
    if (stat(dir, &st) == 0)
        fail_msg("scratch directory %s still exists after the failed test", dir);
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "assert") != 0 && strcmp(argv[1], "abort") != 0)) {
        fprintf(stderr, "usage: %s assert|abort STATE_FILE\n", argv[0]);
        return 2;
    }
    state_file = argv[2];
    if (strcmp(argv[1], "abort") == 0) {
        struct daemon d;
        start_recorded_daemon(&d);
        fprintf(stderr, "cleanup_probe: aborting with daemon %d running in %s\n", (int)d.pid, d.dir);
        abort();
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fails_with_daemon_running),
        cmocka_unit_test(test_previous_daemon_already_gone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
