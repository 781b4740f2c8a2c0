/* Integration: a SIGHUP's rules load never stops the daemon from reading
 * (issue 24 item 7). The files load on a thread of their own: a FIFO put in
 * the rules file's place is refused by name at once, a large valid file
 * loads while the sockets are read and stored, metrics answer, SIGTERM
 * stops the daemon; the running rules serve until the new set is in. */
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
#include "reaper.h"
#include "replay.h"

#define TRACE TRACES_DIR "/mixed_syscalls.trace"
#define MIXED_OPENAT_EXITS 175   /* the openat exits of mixed_syscalls.trace */

static const char openat_rule[] = "- rule: Openat exit\n"
                                  "  desc: every openat that returned\n"
                                  "  condition: evt.type = openat and evt.dir = <\n"
                                  "  output: \"%proc.name opened %fd.name\"\n"
                                  "  priority: WARNING\n";

static void path_in(const struct daemon *d, const char *name, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s/%s", d->dir, name);
}

/* The trace replayed by a child, within 15 s (a daemon that does not read
 * would block the sender: the test must not). 0 when it went out whole. */
static int replay_within(const struct daemon *d)
{
    pid_t pid = reaper_fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(replay_file(d->socket, TRACE) == 0 ? 0 : 1);
    return reaper_wait_within(pid, 15000);
}

static size_t trace_packets(void)
{
    struct replay_trace t;
    assert_int_equal(trace_load_named(&t, "mixed_syscalls"), 0);
    size_t n = t.count;
    replay_trace_free(&t);
    return n;
}

/* Waits up to timeout_ms for the events table to hold n rows. */
static bool wait_events(const struct daemon *d, long long n, int timeout_ms)
{
    for (int waited = 0; waited < timeout_ms; waited += 20) {
        if (dbq(d, "SELECT count(*) FROM events") >= n)
            return true;
        sleep_ms(20);
    }
    return dbq(d, "SELECT count(*) FROM events") >= n;
}

/* A FIFO where the rules file was: the reload is refused by name at once
 * and the daemon goes on reading, storing, alerting with the running rules
 * and answering metrics; SIGTERM stops it. Before: the loop waited in
 * fopen for a writer (0 of the packets read, metrics silent, SIGTERM
 * ignored: killed at the deadline). */
static void test_fifo_on_sighup(void **state)
{
    struct daemon *d = *state;
    char rules[400], metrics[400];
    path_in(d, "r.yaml", rules, sizeof(rules));
    snprintf(metrics, sizeof(metrics), "unix:%s/m.sock", d->dir);
    write_file(rules, openat_rule);
    const char *args[] = {"--rules", rules, "--alerts-rate", "0", "--metrics-listen", metrics, NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    assert_int_equal(unlink(rules), 0);
    assert_int_equal(mkfifo(rules, 0600), 0);
    kill(d->pid, SIGHUP);
    char want[512];
    snprintf(want, sizeof(want), "rules: %s: not a regular file (a FIFO)", rules);
    bool refused = daemon_wait_log(d, want, 1, 5000);
    assert_int_equal(replay_within(d), 0);
    size_t packets = trace_packets();
    assert_true(wait_events(d, (long long)packets, 10000));
    char *answer = scrape_metrics_unix(metrics + strlen("unix:"));
    assert_non_null(answer);
    assert_int_equal(metric(answer, "seccheckd_rules_loaded"), 1);
    free(answer);
    assert_int_equal(daemon_stop_within(d, 10000), 0);
    assert_true(refused);
    assert_int_equal(daemon_log_count(d, "reload: the rules files have errors; the running rules stay"), 1);
    /* the running rules kept alerting */
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts"), MIXED_OPENAT_EXITS);
    unlink(rules);
}

/* A large valid rules file (40,000 rules, ~9 MB): while it loads, a
 * sandbox's events are read and stored; the new set comes in after, and
 * applies to what follows. Before: the load ran on the loop, so the events
 * waited for it (the reload was done before any of them was stored). */
static void test_slow_load_does_not_stall_reading(void **state)
{
    struct daemon *d = *state;
    char rules[400], big[400];
    path_in(d, "r.yaml", rules, sizeof(rules));
    path_in(d, "big.yaml", big, sizeof(big));
    write_file(rules, openat_rule);
    FILE *f = fopen(big, "w");
    assert_non_null(f);
    fputs("- list: names\n  items: [", f);
    for (int i = 0; i < 2000; i++)
        fprintf(f, "%sn%d", i ? ", " : "", i);
    fputs("]\n- macro: m\n  condition: proc.name in (names)\n", f);
    for (int i = 0; i < 40000; i++)
        fprintf(f, "- rule: r%d\n  desc: d\n  condition: evt.type = openat and m and (fd.name startswith /x%d or "
                "fd.name endswith /y%d or proc.cmdline contains z%d)\n  output: \"%%proc.name %%fd.name\"\n"
                "  priority: Notice\n  enabled: false\n", i, i, i, i);
    fputs(openat_rule, f);
    fclose(f);
    const char *args[] = {"--rules", rules, "--alerts-rate", "0", NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    assert_int_equal(daemon_log_count(d, "rules: 1 rules enabled of 1 "), 1);
    assert_int_equal(rename(big, rules), 0);
    kill(d->pid, SIGHUP);
    assert_int_equal(replay_within(d), 0);
    size_t packets = trace_packets();
    assert_true(wait_events(d, (long long)packets, 30000));
    /* every event stored, and the new rules still loading */
    int done_early = daemon_log_count(d, "rules: 1 rules enabled of 40001 ");
    assert_true(daemon_wait_log(d, "rules: 1 rules enabled of 40001 ", 1, 120000));
    assert_int_equal(done_early, 0);
    /* what follows the swap meets the new set: its openat rule alerts once per exit again */
    assert_int_equal(replay_within(d), 0);
    assert_true(wait_events(d, 2 * (long long)packets, 10000));
    for (int i = 0; i < 200 && dbq(d, "SELECT count(*) FROM alerts") < 2 * MIXED_OPENAT_EXITS; i++)
        sleep_ms(20);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts"), 2 * MIXED_OPENAT_EXITS);
    assert_int_equal(daemon_stop_within(d, 10000), 0);
    char *log = daemon_read_log(d);
    const char *ms = strstr(log, "reload: rules loaded in ");
    assert_non_null(ms);
    print_message("the reload took %ld ms\n", strtol(ms + strlen("reload: rules loaded in "), NULL, 10));
    free(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fifo_on_sighup, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_slow_load_does_not_stall_reading, daemon_setup, daemon_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
