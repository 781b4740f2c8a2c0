/* Integration: sequence rules in the daemon and in `seccheckd rules test`,
 * with packets made by tests/support/gvisor_packets.py (python3-protobuf):
 * - a restart (SIGUSR2) keeps no partial match: a chain begun before it does
 *   not complete after it, the old image says how many it let go, and a
 *   chain begun after it completes;
 * - `rules test --db` names a sequence alert's steps by the stored events'
 *   ids, as the daemon's alerts table does;
 * - the recorded agent workloads (tests/fixtures/traces/agent_*.trace: a
 *   shell, python, git, gcc, make, node, pip and npm installs, in runsc)
 *   raise nothing under the default rules and the untrusted-code rules,
 *   though the events the rules read are there. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon.h"
#include "reaper.h"
#include "replay.h"

#define RULES SOURCE_DIR "/configs/rules/gvisor_rules.yaml"
#define UNTRUSTED SOURCE_DIR "/configs/rules/untrusted_code_rules.yaml"
#define PACKETS SOURCE_DIR "/tests/support/gvisor_packets.py"
#define PYTHON "/usr/bin/python3"   /* Debian's, with python3-protobuf */

static char out[1 << 18], err[1 << 16];

static int run(const char *const *argv)
{
    return run_command(argv, out, sizeof(out), err, sizeof(err));
}

/* DIR/STORY.trace from gvisor_packets.py, loaded. */
static void story_trace(const struct daemon *d, const char *story, struct replay_trace *t)
{
    const char *argv[] = {PYTHON, PACKETS, "trace", d->dir, story, NULL};
    if (run(argv) != 0)
        fail_msg("gvisor_packets.py trace %s: %s%s", story, out, err);
    char path[512], why[256];
    snprintf(path, sizeof(path), "%s/%s.trace", d->dir, story);
    if (replay_trace_load(t, path, why, sizeof(why)) != 0)
        fail_msg("%s: %s", path, why);
}

static void send_range(int fd, const struct replay_trace *t, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        send_bytes(fd, t->packets[i], t->lengths[i]);
}

/* The story's first four packets (to curl's write) begin the chain, the last
 * two (a child running /root/x) would complete it. */
#define BEGUN 4

static void test_restart_keeps_no_partial_match(void **state)
{
    struct daemon *d = *state;
    struct replay_trace t;
    story_trace(d, "download_exec", &t);
    assert_int_equal(t.count, 6);
    const char *args[] = {"--rules", RULES, NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    int fd = replay_open(d->socket, 1);
    assert_true(fd >= 0);
    send_range(fd, &t, 0, BEGUN);
    /* the chain is begun once its batch is written: the metrics' count */
    for (int i = 0; i < 100 && dbq(d, "SELECT count(*) FROM events WHERE msg_type = 7") < 1; i++)
        usleep(20000);
    usleep(300000);
    kill(d->pid, SIGUSR2);
    if (!daemon_wait_log(d, "restart: adopted", 1, 15000))
        fail_msg("the restart did not complete");
    assert_int_equal(daemon_log_count(d, "rules: 1 partial matches of sequences end with this image (a restart keeps "
                                         "none)"), 1);
    send_range(fd, &t, BEGUN, t.count);
    close(fd);
    assert_true(daemon_wait_log(d, "connection 1 closed", 1, 10000));
    /* begun after the restart: it completes */
    assert_int_equal(replay_connection(d->socket, &t, 1), 0);
    assert_true(daemon_wait_log(d, "connection 2 closed", 1, 10000));
    assert_int_equal(daemon_stop(d), 0);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts a JOIN events e ON e.id = a.event_id WHERE a.rule = "
                            "'Downloaded file executed' AND e.conn_id = 1"), 0);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts a JOIN events e ON e.id = a.event_id WHERE a.rule = "
                            "'Downloaded file executed' AND e.conn_id = 2"), 1);

    /* rules test --db: the same alert, its steps named by the same stored ids
     * (it replays without the restart, so connection 1's chain completes there) */
    const char *test[] = {SECCHECKD_BIN, "rules", "test", RULES, "--db", d->db, "--hostname", "h", NULL};
    assert_int_equal(run(test), 0);
    assert_non_null(strstr(err, "Downloaded file executed: 2 alerts [sequence]"));
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT sequence FROM alerts WHERE rule = 'Downloaded file executed'");
    const char *argv[] = {"/usr/bin/sqlite3", d->db, sql, NULL};
    static char lines[sizeof(out)];
    memcpy(lines, out, sizeof(lines));
    assert_int_equal(run(argv), 0);
    out[strcspn(out, "\n")] = '\0';
    assert_non_null(strstr(out, "{\"steps\":[{\"name\":\"download\",\"event_id\":"));
    char want[600];
    if (strlen(out) > 400)
        fail_msg("a sequence column longer than two steps need: %s", out);
    snprintf(want, sizeof(want), "\"rule\":\"Downloaded file executed\",\"seccheckd_sequence\":%.400s,", out);
    if (!strstr(lines, want))
        fail_msg("rules test --db does not give the stored steps %s:\n%s", want, lines);
    replay_trace_free(&t);
}

/* Recorded benign agent work raises nothing; a probe shows the events the
 * rules read are in the recordings. */
static void test_agent_workloads_raise_nothing(void **state)
{
    static const char *const traces[] = {"agent_code", "agent_build", "agent_install"};
    static const char probe[] = "- rule: probe\n  desc: d\n  condition: evt.type = execve and evt.res = SUCCESS\n"
                                "  output: p\n  priority: INFO\n"
                                "- sequence: probe write then exec\n  desc: d\n  within: 1h\n  steps:\n"
                                "    - name: w\n      condition: evt.type in (open, openat) and evt.is_open_write = "
                                "true\n    - name: x\n      condition: evt.type = execve and evt.res = SUCCESS and "
                                "proc.exepath = %w.fd.name\n  output: p\n  priority: INFO\n";
    struct daemon *d = *(struct daemon **)state;
    char probe_path[512];
    snprintf(probe_path, sizeof(probe_path), "%s/probe.yaml", d->dir);
    FILE *fp = fopen(probe_path, "w");
    assert_non_null(fp);
    fputs(probe, fp);
    fclose(fp);
    for (size_t i = 0; i < sizeof(traces) / sizeof(traces[0]); i++) {
        char trace[512];
        snprintf(trace, sizeof(trace), "%s/%s.trace", TRACES_DIR, traces[i]);
        const char *quiet[] = {SECCHECKD_BIN, "rules", "test", RULES, UNTRUSTED, "--trace", trace, NULL};
        assert_int_equal(run(quiet), 0);
        if (out[0] || !strstr(err, " events, 0 alerts\n"))
            fail_msg("%s raised alerts:\n%s%s", traces[i], out, err);
        const char *probed[] = {SECCHECKD_BIN, "rules", "test", probe_path, "--trace", trace, NULL};
        assert_int_equal(run(probed), 0);
        if (strstr(err, "probe: 0 alerts") || !strstr(err, "probe write then exec: "))
            fail_msg("%s: the probe found no exec: %s", traces[i], err);
    }
    /* the builds write what they then run: the chains are there, the rules let them be */
    char trace[512];
    snprintf(trace, sizeof(trace), "%s/agent_build.trace", TRACES_DIR);
    const char *probed[] = {SECCHECKD_BIN, "rules", "test", probe_path, "--trace", trace, NULL};
    assert_int_equal(run(probed), 0);
    assert_null(strstr(err, "probe write then exec: 0 alerts"));
}

/* rules test takes the daemon's bounds and says what became of the chains. */
static void test_rules_test_bounds(void **state)
{
    struct daemon *d = *state;   /* its directory only */
    char trace[512];
    snprintf(trace, sizeof(trace), "%s/hostile.trace", d->dir);
    const char *make[] = {PYTHON, SOURCE_DIR "/bench/rules/hostile_chains.py", trace, "300", NULL};
    if (run(make) != 0)
        fail_msg("hostile_chains.py: %s%s", out, err);
    const char *test[] = {SECCHECKD_BIN, "rules", "test", RULES, "--trace", trace, "--sequence-partials", "100", NULL};
    assert_int_equal(run(test), 0);
    /* 300 writes, each beginning a chain of two sequences; 100 of each kept */
    if (!strstr(err, "seccheckd rules: sequences: 600 chains begun, 400 evicted by the bounds, 0 expired, 0 cancelled, "
                     "200 dropped (a trace's end), 0 waiting\n"))
        fail_msg("rules test: %s", err);
    const char *bad[] = {SECCHECKD_BIN, "rules", "test", RULES, "--trace", trace, "--sequence-memory", "1K", NULL};
    assert_int_equal(run(bad), 2);
    assert_non_null(strstr(err, "--sequence-memory: expected a size like 32M, at least 64K, got '1K'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_restart_keeps_no_partial_match, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_agent_workloads_raise_nothing, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_rules_test_bounds, daemon_setup, daemon_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
