/* Integration: a signal arriving while a SIGUSR2 restart is under way never
 * kills the daemon (a default action would take every sandbox connection
 * with it, and leave the socket file behind). Under a 4-connection flood,
 * SIGUSR2 and 10-90 ms after the daemon took it a second SIGUSR2 or a
 * SIGHUP, 30 times: the daemon lives on with its PID, connections and
 * socket file, each signal takes effect (a restart each, a reload each),
 * and every packet sent is stored. SIGUSR2 then SIGTERM or SIGINT: a clean
 * stop, exit 0. (The second signal is timed from the first one's "received"
 * line: sent before that, two SIGUSR2 can merge into one, as the kernel
 * keeps one of a kind pending; a busy machine can leave the daemon off the
 * CPU for 100 ms.) */
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

#define PAIRS 30
#ifdef SECCHECKD_SANITIZED
#define FLOOD_RATE "3000"   /* per connection: a sanitized daemon still drains it between restarts */
#else
#define FLOOD_RATE "10000"
#endif

/* 4 connections at rate messages/s each, in block mode (never dropping),
 * for up to seconds; --json to out, its complaints (a stopped daemon
 * closes the connections) to out.err. */
static pid_t start_flood(const char *socket, const char *out, const char *rate, const char *seconds)
{
    char errors[420];
    snprintf(errors, sizeof(errors), "%s.err", out);
    const char *argv[] = {LOADGEN_BIN, "--socket", socket, "--trace", TRACES_DIR "/redis_rw.trace", "--trace",
                          TRACES_DIR "/mixed_syscalls.trace", "--connections", "4", "--mode", "block", "--rate", rate,
                          "--duration", seconds, "--json", NULL};
    return spawn_program(argv, out, errors);
}

/* 10 to 90 ms, spread over the pairs. */
static int pair_delay_ms(int i)
{
    return 10 + (i * 37) % 81;
}

static void assert_serving(const struct daemon *d, pid_t pid, int pair)
{
    struct stat st;
    if (d->pid != pid || reaper_poll(d->pid) >= 0)
        fail_msg("the daemon died at pair %d", pair + 1);
    if (stat(d->socket, &st) != 0 || !S_ISSOCK(st.st_mode))
        fail_msg("the socket file is gone after pair %d", pair + 1);
}

static void test_signals_during_restarts_are_held(void **state)
{
    struct daemon *d = *state;
    /* With the container lookup thread running (a runsc root to read): a
     * signal it took during a restart was handled by the image going away
     * and lost (CI's machine had /var/run/runsc, made by the e2e tests'
     * sandboxes; the tests here name their own root). */
    char root[300];
    snprintf(root, sizeof(root), "%.200s/runsc-root", d->dir);
    assert_int_equal(mkdir(root, 0700), 0);
    const char *const args[] = {"--runsc-root", root, NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    pid_t pid = d->pid;
    char out[400];
    snprintf(out, sizeof(out), "%s/loadgen.json", d->dir);
    pid_t lg = start_flood(d->socket, out, FLOOD_RATE, "600");
    assert_true(daemon_wait_log(d, "connection 4 opened", 1, 10000));
    int usr2 = 0, hup = 0;
    for (int i = 0; i < PAIRS; i++) {
        int second = i % 2 ? SIGHUP : SIGUSR2;
        kill(pid, SIGUSR2);
        /* The line's end: "received ...: held for the new image" is the same
         * signal again (the new image says "received" when it takes it). */
        if (!daemon_wait_log(d, "received User defined signal 2\n", ++usr2, 30000))
            fail_msg("pair %d: SIGUSR2 %d was not received", i + 1, usr2);
        sleep_ms(pair_delay_ms(i));
        kill(pid, second);
        second == SIGUSR2 ? usr2++ : hup++;
        if (!daemon_wait_log(d, "restart: adopted 4 connections", usr2, 60000) ||
            !daemon_wait_log(d, "reload: applied", hup, 10000)) {
            daemon_print_log_tail(d, 40);
            assert_serving(d, pid, i);
            fail_msg("pair %d: %d restarts and %d reloads of %d and %d", i + 1,
                     daemon_log_count(d, "restart: adopted"), daemon_log_count(d, "reload: applied"), usr2, hup);
        }
        assert_serving(d, pid, i);
    }
    kill(lg, SIGTERM);
    assert_int_equal(reaper_wait(lg), 0);
    assert_int_equal(daemon_stop(d), 0);
    long long sent = json_file_number(out, "sent");
    printf("%d restarts, %d reloads; loadgen sent %lld\n", usr2, hup, sent);
    assert_int_equal(daemon_log_count(d, "restart: adopted 4 connections"), usr2);
    assert_int_equal(daemon_log_count(d, "reload: applied"), hup);
    assert_int_equal(dbq(d, "SELECT count(*) FROM events"), sent);
    assert_int_equal(dbq(d, "SELECT count(*) FROM connections"), 4);
    assert_int_equal(dbq(d, "SELECT sum(messages) FROM connections"), sent);
    assert_int_equal(dbq(d, "SELECT count(*) FROM runs"), usr2 + 1);
}

/* SIGUSR2, then the stop signal: whichever image takes it (the running
 * one while it checks, the new one if it was held), the daemon stops
 * cleanly with everything it read stored. */
static void restart_then_stop(int stop_signal)
{
    for (int i = 0; i < 4; i++) {
        struct daemon d;
        daemon_prepare(&d);
        assert_true(daemon_start(&d, SECCHECKD_BIN, NULL));
        char out[400];
        snprintf(out, sizeof(out), "%s/loadgen.json", d.dir);
        pid_t lg = start_flood(d.socket, out, FLOOD_RATE, "30");
        assert_true(daemon_wait_log(&d, "connection 4 opened", 1, 10000));
        sleep_ms(200);
        kill(d.pid, SIGUSR2);
        sleep_ms(pair_delay_ms(i * 5));
        kill(d.pid, stop_signal);
        int status = daemon_wait_exit(&d, 20000);
        if (status != 0)
            fail_msg("round %d: SIGUSR2 then %s: exit status %d", i + 1, strsignal(stop_signal), status);
        reaper_wait_within(lg, 10000);
        assert_true(daemon_log_count(&d, "stopping: no new connections") == 1);
        assert_int_equal(dbq(&d, "SELECT count(*) FROM runs WHERE stopped_ns IS NOT NULL"),
                         dbq(&d, "SELECT count(*) FROM runs"));
        assert_int_equal(dbq(&d, "SELECT sum(received) FROM runs"), dbq(&d, "SELECT count(*) FROM events"));
        assert_int_equal(dbq(&d, "SELECT sum(received) FROM runs"), dbq(&d, "SELECT sum(messages) FROM connections"));
        daemon_cleanup(&d);
    }
}

static void test_restart_then_sigterm_stops_cleanly(void **state)
{
    (void)state;
    restart_then_stop(SIGTERM);
}

static void test_restart_then_sigint_stops_cleanly(void **state)
{
    (void)state;
    restart_then_stop(SIGINT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_signals_during_restarts_are_held, daemon_setup, daemon_teardown),
        cmocka_unit_test(test_restart_then_sigterm_stops_cleanly),
        cmocka_unit_test(test_restart_then_sigint_stops_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
