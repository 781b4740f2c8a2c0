/* reaper.h - what a test starts must not outlive it: child processes and
 * scratch paths (/tmp/seccheckd-*) are registered here, and are killed,
 * reaped and removed on every path out of a test:
 *   - the test stops and removes them itself (reaper_wait, reaper_remove);
 *   - a failed assertion: every cmocka test runs with reaper_teardown (this
 *     header routes cmocka_run_group_tests through reaper_run_group_tests);
 *   - exit() without teardown: an atexit handler does the same;
 *   - a crash, abort() or SIGKILL of the test: each child has
 *     PR_SET_PDEATHSIG=SIGKILL, and a janitor process (forked once, waiting
 *     for the test process to die) kills the children's process groups and
 *     removes the registered paths.
 * Each child leads its own process group, so what it forks goes with it.
 * For the test's own thread only (the cmocka helpers are). */
#ifndef SECCHECKD_TEST_REAPER_H
#define SECCHECKD_TEST_REAPER_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <cmocka.h>

/* fork() for a test: in the child (0) the process leads its own group and
 * dies with this process; in the parent the child is registered. -1 with
 * errno when fork failed. */
pid_t reaper_fork(void);

/* Waits for a child of reaper_fork and forgets it: its exit code, or 128 +
 * the signal that ended it. */
int reaper_wait(pid_t pid);

/* reaper_wait without blocking: -1 while the child still runs. */
int reaper_poll(pid_t pid);

/* Up to timeout_ms for the child to exit by itself, then SIGKILL to its
 * whole group; reaps and forgets it. The exit code (as reaper_wait), or 124
 * when it had to be killed. */
int reaper_wait_within(pid_t pid, int timeout_ms);

/* mkdtemp(template) and registers the directory; template must start
 * with /tmp/seccheckd- (the name every test's scratch path has). template,
 * or NULL with errno. */
char *reaper_mkdtemp(char *template);

/* Registers a path (file or directory) to remove if the test ends early. */
void reaper_track_path(const char *path);

/* Removes path recursively (a file or a directory tree) and forgets it. 0,
 * or -1 with errno. */
int reaper_remove(const char *path);

/* Kills (SIGKILL, whole group) and reaps every registered child and removes
 * every registered path; the number of children and paths there were. */
int reaper_clear(void);

/* The cmocka teardown every test gets: reaper_clear, naming what the test
 * left behind on stderr. Always 0: the leftovers are gone. */
int reaper_teardown(void **state);

/* cmocka's _cmocka_run_group_tests with reaper_teardown after each test
 * that has no teardown of its own (a test with one calls reaper_clear in
 * it). */
int reaper_run_group_tests(const char *group_name, const struct CMUnitTest *tests, size_t count,
                           CMFixtureFunction group_setup, CMFixtureFunction group_teardown);

#undef cmocka_run_group_tests
#define cmocka_run_group_tests(group_tests, group_setup, group_teardown)                                      \
    reaper_run_group_tests(#group_tests, group_tests, sizeof(group_tests) / sizeof((group_tests)[0]), group_setup, \
                           group_teardown)

#endif
