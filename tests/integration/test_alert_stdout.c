/* Integration: the alerts on the daemon's standard output, as Falco prints
 * them by default. With --rules and no --alerts-out, Falco's text line
 * ("HH:MM:SS.nnnnnnnnn: Priority output"); --alerts-out - Falco's JSON;
 * --alerts-out none nothing; under systemd (JOURNAL_STREAM naming standard
 * output) sd-daemon's "<N>" prefix; colour on a terminal (--color,
 * NO_COLOR, TERM=dumb); nothing when a sink writes its events there or
 * standard output was closed. */
#include <fcntl.h>
#include <poll.h>
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

/* exec_loop.trace holds one container/start: one alert. */
static const char start_rule[] =
    "- rule: Container started\n"
    "  desc: a container started\n"
    "  condition: evt.type = container\n"
    "  output: \"container %container.id started (\\\"quoted\\\")\"\n"
    "  priority: WARNING\n";

/* with what the default --append-output (Falco's suggested_output) adds */
#define SUGGESTED " container_id=runsc-924761 container_name=<NA> container_image_repository=<NA> " \
    "container_image_tag=<NA> k8s_pod_name=<NA> k8s_ns_name=<NA>"
#define TEXT_TAIL ": Warning container runsc-924761 started (\\\"quoted\\\")" SUGGESTED "\n"

static const char *rules_path(const struct daemon *d)
{
    static char path[400];
    snprintf(path, sizeof(path), "%s/r.yaml", d->dir);
    write_file(path, start_rule);
    return path;
}

static int setup(void **state)
{
    unsetenv("JOURNAL_STREAM");
    unsetenv("NO_COLOR");
    setenv("TERM", "xterm", 1);
    return daemon_setup(state);
}

/* The alert row committed (the line is written right after the commit). */
static void replay_and_wait(struct daemon *d)
{
    long long before = dbq(d, "SELECT count(*) FROM alerts");
    before = before < 0 ? 0 : before;   /* no table yet */
    assert_int_equal(replay_file(d->socket, TRACES_DIR "/exec_loop.trace"), 0);
    for (int i = 0; i < 500 && dbq(d, "SELECT count(*) FROM alerts") < before + 1; i++)
        sleep_ms(10);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts"), before + 1);
    sleep_ms(100);
}

/* The log (stdout and stderr) after the daemon stopped. */
static char *run_daemon(struct daemon *d, const char *const *extra)
{
    const char *args[16] = {"--rules", rules_path(d)};
    int n = 2;
    for (int i = 0; extra && extra[i]; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    replay_and_wait(d);
    assert_int_equal(daemon_stop(d), 0);
    return daemon_read_log(d);
}

/* A line of the log that is prefix, "HH:MM:SS.nnnnnnnnn", then p. */
static bool falco_time_before(const char *log, const char *p, const char *prefix)
{
    size_t n = strlen(prefix);
    const char *start = p - 18 - (ptrdiff_t)n;
    if (start < log || (start > log && start[-1] != '\n') || strncmp(start, prefix, n) != 0)
        return false;
    const char *t = p - 18;
    for (int i = 0; i < 18; i++) {
        bool digit = t[i] >= '0' && t[i] <= '9';
        if ((i == 2 || i == 5) ? t[i] != ':' : i == 8 ? t[i] != '.' : !digit)
            return false;
    }
    return true;
}

static void test_text_line_by_default(void **state)
{
    struct daemon *d = *state;
    char *log = run_daemon(d, NULL);
    const char *p = strstr(log, TEXT_TAIL);
    if (!p || !falco_time_before(log, p, ""))
        fail_msg("no Falco text line in: %s", log);
    assert_null(strstr(p + 1, TEXT_TAIL));   /* once */
    assert_null(strstr(log, "\"rule\":\"Container started\""));
    assert_null(strstr(log, "\033["));          /* not a terminal */
    assert_non_null(strstr(log, "alerts: Falco's text line on standard output"));
    /* The line is the stored output, escaped as Falco escapes it. */
    char want[512];
    snprintf(want, sizeof(want), "%.18s: Warning container runsc-924761 started (\"quoted\")" SUGGESTED, p - 18);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts WHERE output = '%s'", want), 1);
    /* alerts_full's time in the views' format, the line's time of day. */
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts_full WHERE time GLOB "
                            "'[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T%.12sZ'", p - 18), 1);
    free(log);
}

static void test_dash_is_json_and_none_is_nothing(void **state)
{
    struct daemon *d = *state;
    char *log = run_daemon(d, (const char *[]){"--alerts-out", "-", NULL});
    assert_non_null(strstr(log, "\"rule\":\"Container started\""));
    assert_null(strstr(log, TEXT_TAIL));
    free(log);
    log = run_daemon(d, (const char *[]){"--alerts-out", "none", NULL});
    assert_null(strstr(log, "Container started"));
    assert_null(strstr(log, "container runsc-924761 started"));
    free(log);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts"), 2);   /* stored either way */
}

/* Under systemd standard output is the journal's stream, JOURNAL_STREAM
 * its "DEV:INODE": each line starts with the syslog level (Warning 4). */
static void test_journal_prefix_when_stdout_is_the_journal(void **state)
{
    struct daemon *d = *state;
    write_file(d->log, "");   /* daemon_start truncates it: the same inode */
    struct stat st;
    assert_int_equal(stat(d->log, &st), 0);
    char stream[64];
    snprintf(stream, sizeof(stream), "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
    setenv("JOURNAL_STREAM", stream, 1);
    char *log = run_daemon(d, (const char *[]){"--color", "always", NULL});
    const char *p = strstr(log, TEXT_TAIL);
    if (!p || !falco_time_before(log, p, "<4>"))
        fail_msg("no <4> line in: %s", log);
    assert_null(strstr(log, "\033["));
    free(log);
    /* Inherited by a program whose output went elsewhere: plain text. */
    setenv("JOURNAL_STREAM", "1:1", 1);
    log = run_daemon(d, NULL);
    assert_null(strstr(log, "<4>"));
    assert_non_null(strstr(log, TEXT_TAIL));
    free(log);
    unsetenv("JOURNAL_STREAM");
}

static void test_color_always_and_never(void **state)
{
    struct daemon *d = *state;
    setenv("NO_COLOR", "1", 1);   /* the command line overrides it */
    char *log = run_daemon(d, (const char *[]){"--color", "always", NULL});
    assert_non_null(strstr(log, ": \033[33mWarning\033[0m container runsc-924761 started"));
    free(log);
    unsetenv("NO_COLOR");
    log = run_daemon(d, (const char *[]){"--color", "never", NULL});
    assert_null(strstr(log, "\033["));
    free(log);
}

/* Standard output on a pseudo-terminal (stderr to the log): colour unless
 * NO_COLOR is set or TERM is dumb. What reached the terminal, or NULL. */
static char *daemon_on_terminal(struct daemon *d)
{
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    assert_true(master >= 0);
    assert_int_equal(grantpt(master), 0);
    assert_int_equal(unlockpt(master), 0);
    const char *slave_name = ptsname(master);
    assert_non_null(slave_name);
    int logfd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(logfd >= 0);
    d->pid = reaper_fork();
    assert_true(d->pid >= 0);
    if (d->pid == 0) {
        int slave = open(slave_name, O_RDWR | O_NOCTTY);
        if (slave < 0)
            _exit(126);
        dup2(slave, 1);
        dup2(logfd, 2);
        execl(SECCHECKD_BIN, SECCHECKD_BIN, "--socket", d->socket, "--db", d->db, "--rules", rules_path(d),
              (char *)NULL);
        _exit(127);
    }
    close(logfd);
    assert_true(daemon_wait_log(d, "info: listening on", 1, 10000));
    replay_and_wait(d);
    char buf[8192];
    size_t used = 0;
    struct pollfd p = {.fd = master, .events = POLLIN};
    for (int i = 0; i < 100 && !memmem(buf, used, "started", 7); i++) {
        if (poll(&p, 1, 50) > 0) {
            ssize_t n = read(master, buf + used, sizeof(buf) - 1 - used);
            if (n > 0)
                used += (size_t)n;
        }
    }
    buf[used] = '\0';
    assert_int_equal(daemon_stop(d), 0);
    close(master);
    return strdup(buf);
}

static void test_color_auto_on_a_terminal(void **state)
{
    struct daemon *d = *state;
    char *out = daemon_on_terminal(d);
    if (!strstr(out, ": \033[33mWarning\033[0m container runsc-924761 started"))
        fail_msg("no coloured line on the terminal: %s", out);
    free(out);
    setenv("NO_COLOR", "1", 1);
    out = daemon_on_terminal(d);
    assert_non_null(strstr(out, ": Warning container runsc-924761 started"));
    assert_null(strstr(out, "\033["));
    free(out);
    unsetenv("NO_COLOR");
    setenv("TERM", "dumb", 1);
    out = daemon_on_terminal(d);
    assert_non_null(strstr(out, ": Warning container runsc-924761 started"));
    assert_null(strstr(out, "\033["));
    free(out);
    setenv("TERM", "xterm", 1);
}

/* The text sink writes its events to standard output: the alerts stay out
 * of it, and the log says so. */
static void test_not_where_a_sink_writes(void **state)
{
    struct daemon *d = *state;
    char *log = run_daemon(d, (const char *[]){"--sink", "sqlite,text", NULL});
    assert_null(strstr(log, TEXT_TAIL));
    assert_non_null(strstr(log, "alerts: not on standard output, where a sink writes its events"));
    free(log);
}

/* Started with standard output closed: the database never takes its
 * number, nothing is written, the alert is stored. */
static void test_stdout_closed(void **state)
{
    struct daemon *d = *state;
    d->pid = reaper_fork();
    assert_true(d->pid >= 0);
    if (d->pid == 0) {
        int logfd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (logfd < 0)
            _exit(126);
        dup2(logfd, 2);
        close(logfd);
        close(1);
        execl(SECCHECKD_BIN, SECCHECKD_BIN, "--socket", d->socket, "--db", d->db, "--rules", rules_path(d),
              (char *)NULL);
        _exit(127);
    }
    assert_true(daemon_wait_log(d, "info: listening on", 1, 10000));
    replay_and_wait(d);
    assert_int_equal(daemon_stop(d), 0);
    assert_true(daemon_log_count(d, "alerts: not on standard output, which was closed") == 1);
    assert_true(verify_ok(SECCHECKD_BIN, d->db));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_text_line_by_default, setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_dash_is_json_and_none_is_nothing, setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_journal_prefix_when_stdout_is_the_journal, setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_color_always_and_never, setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_color_auto_on_a_terminal, setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_not_where_a_sink_writes, setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_stdout_closed, setup, daemon_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
