/* Integration: `seccheckd rules check` and `seccheckd rules test` as a user
 * runs them: exit codes, summaries, errors with their positions, alerts
 * over a recorded trace and over a database; what a runsc lacks, named as
 * a rule's or a sequence's (and by gvisor-config). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "daemon.h"
#include "reaper.h"
#include "replay.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/seccheckd-rulescli-XXXXXX");
    return reaper_mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    reaper_remove(dir);
    return 0;
}

static const char *in_dir(const char *name)
{
    static char path[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(path[k], sizeof(path[k]), "%s/%s", dir, name);
    return path[k];
}

/* name, in the test's directory. */
static void write_file_in(const char *name, const char *text)
{
    write_file(in_dir(name), text);
}

/* seccheckd rules ARGS within limit_s seconds: exit code (124: killed at
 * the limit); stdout in out, stderr in err. */
static int rules_within(int limit_s, const char *const *args, char *out, size_t outlen, char *err, size_t errlen)
{
    char cmd[8192];
    size_t len = (size_t)snprintf(cmd, sizeof(cmd), "timeout -s KILL %d %s rules", limit_s, SECCHECKD_BIN);
    for (int i = 0; args[i]; i++)
        len += (size_t)snprintf(cmd + len, sizeof(cmd) - len, " '%s'", args[i]);
    snprintf(cmd + len, sizeof(cmd) - len, " 2>'%s'", in_dir("stderr"));
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, outlen - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    FILE *fp = fopen(in_dir("stderr"), "r");
    assert_non_null(fp);
    n = fread(err, 1, errlen - 1, fp);
    err[n] = '\0';
    fclose(fp);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int rules(const char *const *args, char *out, size_t outlen, char *err, size_t errlen)
{
    return rules_within(60, args, out, outlen, err, errlen);
}

static const char *GOOD = "- list: mine\n  items: [python3]\n"
                          "- macro: opened\n  condition: evt.type = openat and evt.dir = <\n"
                          "- rule: openat\n  desc: d\n  condition: opened\n  output: '%fd.name by %proc.name'\n"
                          "  priority: Notice\n"
                          "- rule: python openat\n  desc: d\n  condition: opened and proc.name in (mine)\n"
                          "  output: '%fd.name'\n  priority: Warning\n  tags: [py]\n";

static size_t count_lines(const char *s, const char *must_contain)
{
    size_t n = 0;
    for (const char *line = s; *line;) {
        const char *end = strchr(line, '\n');
        if (!end)
            break;
        if (!must_contain || memmem(line, (size_t)(end - line), must_contain, strlen(must_contain)))
            n++;
        line = end + 1;
    }
    return n;
}

static void test_check(void **state)
{
    (void)state;
    static char out[65536], err[65536];
    write_file_in("good.yaml", GOOD);
    const char *ok[] = {"check", in_dir("good.yaml"), NULL};
    assert_int_equal(rules(ok, out, sizeof(out), err, sizeof(err)), 0);
    assert_non_null(strstr(out, "1 list, 1 macro, 2 rules (2 enabled) in 1 file\n"));
    assert_non_null(strstr(out, "  openat [Notice]: openat\n"));
    assert_non_null(strstr(out, "  python openat [Warning]: openat\n"));
    write_file_in("bad.yaml", "- rule: r\n  desc: d\n  condition: evt.type = openat and proc.nam = x\n  output: o\n"
                           "  priority: Notice\n"
                           "- rule: s\n  desc: d\n  condition: evt.type = open and evt.type = execve\n  output: o\n"
                           "  priority: Loud\n");
    const char *bad[] = {"check", in_dir("good.yaml"), in_dir("bad.yaml"), NULL};
    assert_int_equal(rules(bad, out, sizeof(out), err, sizeof(err)), 2);
    char want[512];
    snprintf(want, sizeof(want), "%s:3:36: error: unknown field 'proc.nam'", in_dir("bad.yaml"));
    assert_non_null(strstr(err, want));
    snprintf(want, sizeof(want), "%s:10:13: error: Invalid priority 'Loud'", in_dir("bad.yaml"));
    assert_non_null(strstr(err, want));
    assert_non_null(strstr(err, "seccheckd rules: 2 errors: rules not loaded"));
    assert_string_equal(out, "");
    /* a directory: its *.yaml files */
    const char *d[] = {"check", dir, NULL};
    assert_int_equal(rules(d, out, sizeof(out), err, sizeof(err)), 2);
    remove(in_dir("bad.yaml"));
    assert_int_equal(rules(d, out, sizeof(out), err, sizeof(err)), 0);
    const char *missing[] = {"check", in_dir("none.yaml"), NULL};
    assert_int_equal(rules(missing, out, sizeof(out), err, sizeof(err)), 2);
    assert_non_null(strstr(err, "none.yaml: error: cannot open: No such file or directory"));
}

/* Issue 24 item 7: `rules check FIFO` is refused at once, naming the file
 * (it used to wait for a writer for good); item 11: a directory of *.yml
 * files loads them, one without rules files says so; the engine version
 * Falco's required_engine_version is checked against is printed. */
static void test_check_files(void **state)
{
    (void)state;
    static char out[65536], err[65536];
    char fifo[128];
    snprintf(fifo, sizeof(fifo), "%s", in_dir("fifo.yaml"));
    assert_int_equal(mkfifo(fifo, 0600), 0);
    const char *f[] = {"check", fifo, NULL};
    assert_int_equal(rules_within(10, f, out, sizeof(out), err, sizeof(err)), 2);
    char want[512];
    snprintf(want, sizeof(want), "%s: error: not a regular file (a FIFO): rules are read from regular files only",
             fifo);
    if (!strstr(err, want))
        fail_msg("expected '%s' in:\n%s", want, err);
    remove(fifo);
    char sub[256];
    snprintf(sub, sizeof(sub), "%s", in_dir("d"));
    assert_int_equal(mkdir(sub, 0700), 0);
    const char *d[] = {"check", sub, NULL};
    assert_int_equal(rules(d, out, sizeof(out), err, sizeof(err)), 0);
    snprintf(want, sizeof(want), "%s: warning: no *.yaml or *.yml files in this directory", sub);
    assert_non_null(strstr(err, want));
    assert_non_null(strstr(out, "0 lists, 0 macros, 0 rules (0 enabled) in 0 files\n"));
    write_file_in("d/rules.yml", GOOD);
    assert_int_equal(rules(d, out, sizeof(out), err, sizeof(err)), 0);
    assert_non_null(strstr(out, "Falco engine version 0.63.0 semantics (falcosecurity/falco 130747499b)\n"));
    assert_non_null(strstr(out, "1 list, 1 macro, 2 rules (2 enabled) in 1 file\n"));
    write_file_in("d/skip.yml", "- rule: k\n  desc: d\n  condition: ka.verb = get\n  output: o\n  priority: Notice\n"
                                "  source: k8s_audit\n");
    assert_int_equal(rules(d, out, sizeof(out), err, sizeof(err)), 0);
    assert_non_null(strstr(out, "1 list, 1 macro, 2 rules (2 enabled, 1 skipped) in 2 files\n"));
    write_file_in("d/version.yml", "- required_engine_version: 99\n");
    assert_int_equal(rules(d, out, sizeof(out), err, sizeof(err)), 2);
    assert_non_null(strstr(err, "error: Rules require engine version 0.99.0, but engine version is 0.63.0"));
}

/* `seccheckd --version` names the Falco engine the rules load as. */
static void test_version_names_engine(void **state)
{
    (void)state;
    static char out[4096];
    const char *argv[] = {SECCHECKD_BIN, "--version", NULL};
    assert_int_equal(run_command(argv, out, sizeof(out), NULL, 0), 0);
    assert_non_null(strstr(out, "rules: loaded as Falco's engine 0.63.0 loads them (falcosecurity/falco 130747499b)\n"));
}

/* Issue 25: a list appended to after the macro that uses it is seen by the
 * macro, as in Falco (main matched the list's name as a literal: 0 alerts). */
static void test_list_appended_after_macro(void **state)
{
    (void)state;
    static char out[1 << 20], err[65536];
    const char *macro_rule = "- macro: opened_by_mine\n  condition: evt.type = openat and evt.dir = < and proc.name in (mine)\n"
                             "- rule: mine opened\n  desc: d\n  condition: opened_by_mine\n  output: '%fd.name'\n"
                             "  priority: Notice\n";
    char text[2048];
    snprintf(text, sizeof(text), "- list: mine\n  items: [python3, cat]\n%s", macro_rule);
    write_file_in("whole.yaml", text);
    snprintf(text, sizeof(text), "- list: mine\n  items: [python3]\n%s- list: mine\n  items: [cat]\n"
             "  override: {items: append}\n", macro_rule);
    write_file_in("appended.yaml", text);
    const char *whole[] = {"test", in_dir("whole.yaml"), "--trace", TRACES_DIR "/mixed_syscalls.trace", "--alerts-rate",
                           "0", NULL};
    assert_int_equal(rules(whole, out, sizeof(out), err, sizeof(err)), 0);
    size_t want = count_lines(out, "\"rule\":\"mine opened\"");
    assert_true(want > 0);
    const char *appended[] = {"test", in_dir("appended.yaml"), "--trace", TRACES_DIR "/mixed_syscalls.trace",
                              "--alerts-rate", "0", NULL};
    assert_int_equal(rules(appended, out, sizeof(out), err, sizeof(err)), 0);
    assert_int_equal(count_lines(out, "\"rule\":\"mine opened\""), want);
    print_message("%zu alerts with the list appended after the macro\n", want);
}

static void test_test_over_trace(void **state)
{
    (void)state;
    static char out[1 << 20], err[65536];
    write_file_in("good.yaml", GOOD);
    /* Falco's rule_matching first by default: "openat" comes first and
     * matches every openat exit, so "python openat" never alerts */
    const char *first[] = {"test", in_dir("good.yaml"), "--trace", TRACES_DIR "/mixed_syscalls.trace", NULL};
    assert_int_equal(rules(first, out, sizeof(out), err, sizeof(err)), 0);
    assert_int_equal(count_lines(out, "\"rule\":\"openat\""), 175);
    assert_int_equal(count_lines(out, NULL), 175);
    assert_non_null(strstr(err, "python openat: 0 alerts\n"));
    const char *args[] = {"test", in_dir("good.yaml"), "--trace", TRACES_DIR "/mixed_syscalls.trace",
                          TRACES_DIR "/exec_loop.trace", "--rule-matching", "all", "--hostname", "h1", NULL};
    assert_int_equal(rules(args, out, sizeof(out), err, sizeof(err)), 0);
    size_t lines = count_lines(out, NULL);
    assert_int_equal(count_lines(out, "\"rule\":\"openat\""), 175);   /* the openat exits the trace holds */
    size_t py = count_lines(out, "\"rule\":\"python openat\"");
    assert_true(py > 0 && py < 175);
    assert_int_equal(lines, 175 + py);
    assert_int_equal(count_lines(out, "{\"hostname\":\"h1\",\"output\":\""), lines);
    assert_non_null(strstr(err, "openat: 175 alerts\n"));
    assert_non_null(strstr(err, "seccheckd rules: 2454 events"));
    /* throttled when asked: the rest counted per rule */
    const char *throttled[] = {"test", in_dir("good.yaml"), "--trace", TRACES_DIR "/mixed_syscalls.trace",
                               "--alerts-rate", "1", "--alerts-burst", "5", NULL};
    assert_int_equal(rules(throttled, out, sizeof(out), err, sizeof(err)), 0);
    assert_true(count_lines(out, "\"rule\":\"openat\"") < 20);
    assert_non_null(strstr(err, "suppressed)"));
}

static void test_test_over_database(void **state)
{
    (void)state;
    static char out[1 << 20], err[65536];
    write_file_in("good.yaml", GOOD);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(in_dir("events.db"), &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE events(id INTEGER PRIMARY KEY, conn_id INTEGER, recv_ns INTEGER, "
                                      "raw BLOB)", NULL, NULL, NULL), SQLITE_OK);
    struct replay_trace t;
    char terr[256];
    assert_int_equal(replay_trace_load(&t, TRACES_DIR "/mixed_syscalls.trace", terr, sizeof(terr)), 0);
    sqlite3_stmt *st;
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    /* received a second apart, as the daemon's clock stored it */
    assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO events(conn_id, recv_ns, raw) VALUES (7, ?2, ?1)", -1, &st,
                                        NULL), SQLITE_OK);
    for (size_t i = 0; i < t.count; i++) {
        sqlite3_bind_blob(st, 1, t.packets[i], (int)t.lengths[i], SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, (int64_t)(i + 1) * 1000000000);
        assert_int_equal(sqlite3_step(st), SQLITE_DONE);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(db);
    replay_trace_free(&t);
    const char *args[] = {"test", in_dir("good.yaml"), "--db", in_dir("events.db"), "--alerts-rate", "0", NULL};
    assert_int_equal(rules(args, out, sizeof(out), err, sizeof(err)), 0);
    assert_int_equal(count_lines(out, "\"rule\":\"openat\""), 175);
    assert_non_null(strstr(err, "seccheckd rules: 1235 events"));
    /* The limits run on the stored receive times: one alert a second lets
     * every openat through, as the daemon did (this run's own clock, a few
     * milliseconds for the whole database, would let one through). */
    const char *limited[] = {"test", in_dir("good.yaml"), "--db", in_dir("events.db"), "--alerts-ceiling", "1",
                             "--alerts-ceiling-burst", "1", NULL};
    assert_int_equal(rules(limited, out, sizeof(out), err, sizeof(err)), 0);
    assert_int_equal(count_lines(out, "\"rule\":\"openat\""), 175);
    assert_null(strstr(err, "over the ceiling"));
    const char *notdb[] = {"test", in_dir("good.yaml"), "--db", in_dir("good.yaml"), NULL};
    assert_int_equal(rules(notdb, out, sizeof(out), err, sizeof(err)), 1);
}

/* Rules that need fields gVisor never reports (issue 25 item 4): loaded
 * disabled, listed per rule and counted; --rules-absent-fields run runs
 * them. */
static void test_absent_fields(void **state)
{
    (void)state;
    static char out[1 << 20], err[65536];
    write_file_in("absent.yaml",
                  "- rule: caps\n  desc: d\n  condition: evt.type = openat and not thread.cap_effective contains "
                  "CAP_SYS_ADMIN\n  output: '%fd.name'\n  priority: Notice\n"
                  "- rule: buffer\n  desc: d\n  condition: evt.type = read and evt.buffer contains x\n  output: o\n"
                  "  priority: Notice\n"
                  "- rule: openat\n  desc: d\n  condition: evt.type = openat and evt.dir = <\n"
                  "  output: '%fd.name %thread.cap_permitted'\n  priority: Notice\n");
    const char *check[] = {"check", in_dir("absent.yaml"), NULL};
    assert_int_equal(rules(check, out, sizeof(out), err, sizeof(err)), 0);
    assert_non_null(strstr(out, "0 lists, 0 macros, 3 rules (1 enabled, 2 disabled: fields gVisor never reports) in "
                                "1 file\n"));
    assert_non_null(strstr(out, "  caps [Notice, disabled]: openat\n    disabled, needs fields gVisor never reports: "
                                "thread.cap_effective\n"));
    assert_non_null(strstr(out, "  buffer [Notice, disabled]: read\n    disabled, needs fields gVisor never "
                                "reports: evt.buffer\n"));
    assert_non_null(strstr(out, "  openat [Notice]: openat\n"));
    assert_int_equal(count_lines(err, "warning: rule 'caps' is disabled"), 1);
    assert_int_equal(count_lines(err, "warning: rule 'buffer' is disabled"), 1);
    assert_int_equal(count_lines(err, "openat"), 0);   /* an output-only field: no warning */
    const char *run[] = {"check", "--rules-absent-fields", "run", in_dir("absent.yaml"), NULL};
    assert_int_equal(rules(run, out, sizeof(out), err, sizeof(err)), 0);
    assert_non_null(strstr(out, "3 rules (3 enabled) in 1 file\n"));
    assert_non_null(strstr(out, "  caps [Notice]: openat\n    needs fields gVisor never reports: "
                                "thread.cap_effective\n"));
    assert_int_equal(count_lines(err, "rule 'caps' needs fields gVisor never reports"), 1);
    /* test: disabled rules raise nothing; run: caps alerts on every openat exit, the absent field renders <NA> */
    char trace[512];
    snprintf(trace, sizeof(trace), "%s/mixed_syscalls.trace", TRACES_DIR);
    const char *t[] = {"test", in_dir("absent.yaml"), "--trace", trace, "--alerts-rate", "0", NULL};
    assert_int_equal(rules(t, out, sizeof(out), err, sizeof(err)), 0);
    assert_int_equal(count_lines(out, "\"rule\":\"caps\""), 0);
    assert_int_equal(count_lines(out, "\"rule\":\"openat\""), 175);
    assert_int_equal(count_lines(out, "\"thread.cap_permitted\":null"), 175);
    const char *trun[] = {"test", in_dir("absent.yaml"), "--trace", trace, "--alerts-rate", "0",
                          "--rules-absent-fields=run", NULL};
    assert_int_equal(rules(trun, out, sizeof(out), err, sizeof(err)), 0);
    assert_true(count_lines(out, "\"rule\":\"caps\"") > 0);
    assert_int_equal(count_lines(out, "\"rule\":\"buffer\""), 0);   /* contains on nothing: never true */
    const char *bad[] = {"check", "--rules-absent-fields", "maybe", in_dir("absent.yaml"), NULL};
    assert_int_equal(rules(bad, out, sizeof(out), err, sizeof(err)), 2);
    assert_non_null(strstr(err, "--rules-absent-fields: expected disable or run, got 'maybe'"));
}

/* What a runsc lacks, said of a rule as "rule 'NAME'" and of a sequence as
 * "sequence 'NAME'", by rules check and gvisor-config alike. */
static void test_runsc_warning_names_a_sequence(void **state)
{
    (void)state;
    write_file_in("mmap.yaml", "- rule: Mapped\n  desc: d\n  condition: evt.type = sentry_mmap\n  output: x\n"
                               "  priority: NOTICE\n"
                               "- sequence: Written then mapped\n  desc: d\n  within: 1h\n  steps:\n"
                               "    - name: w\n      condition: evt.type = openat and evt.is_open_write = true\n"
                               "    - name: m\n      condition: evt.type = sentry_mmap and fd.name = %w.fd.name\n"
                               "  output: x\n  priority: NOTICE\n");
    const char *file = in_dir("mmap.yaml");
    char want_rule[512], want_sequence[512];
    snprintf(want_rule, sizeof(want_rule), "%s:1: warning: rule 'Mapped' needs a newer runsc than runsc 2022-12 "
             "(0.0~20221219, built in): the point sentry/mmap (runsc release-20260714.0 on)\n", file);
    snprintf(want_sequence, sizeof(want_sequence), "%s:6: warning: sequence 'Written then mapped' needs a newer runsc "
             "than runsc 2022-12 (0.0~20221219, built in): the point sentry/mmap (runsc release-20260714.0 on)\n", file);
    static char out[16384], err[16384];
    assert_int_equal(rules((const char *const[]){"check", "--runsc", "2022-12", file, NULL}, out, sizeof(out), err,
                           sizeof(err)), 0);
    if (!strstr(err, want_rule) || !strstr(err, want_sequence) || strstr(err, "rule 'Written then mapped'"))
        fail_msg("rules check:\n%s", err);
    const char *config[] = {SECCHECKD_BIN, "gvisor-config", "--runsc", "2022-12", "--rules", file, NULL};
    assert_int_equal(run_command(config, out, sizeof(out), err, sizeof(err)), 0);
    if (!strstr(err, want_rule) || !strstr(err, want_sequence) || strstr(err, "rule 'Written then mapped'"))
        fail_msg("gvisor-config:\n%s", err);
}

static void test_usage_errors(void **state)
{
    (void)state;
    static char out[65536], err[65536];
    write_file_in("good.yaml", GOOD);
    const char *help[] = {"--help", NULL};
    assert_int_equal(rules(help, out, sizeof(out), err, sizeof(err)), 0);
    assert_non_null(strstr(out, "Usage: seccheckd rules check [--pod-init FILE] [--runsc PATH | --runsc-metadata FILE]\n"
                                "                             [--rules-absent-fields disable|run] PATH...\n"));
    const char *none[] = {NULL};
    assert_int_equal(rules(none, out, sizeof(out), err, sizeof(err)), 2);
    assert_non_null(strstr(err, "seccheckd rules: expected a command: check or test (try --help)"));
    const char *unknown[] = {"lint", NULL};
    assert_int_equal(rules(unknown, out, sizeof(out), err, sizeof(err)), 2);
    const char *no_input[] = {"test", in_dir("good.yaml"), NULL};
    assert_int_equal(rules(no_input, out, sizeof(out), err, sizeof(err)), 2);
    assert_non_null(strstr(err, "seccheckd rules: test needs either --trace FILE... or --db DB"));
    const char *matching[] = {"test", in_dir("good.yaml"), "--trace", "x", "--rule-matching", "some", NULL};
    assert_int_equal(rules(matching, out, sizeof(out), err, sizeof(err)), 2);
    assert_non_null(strstr(err, "--rule-matching: expected first or all, got 'some'"));
    const char *both[] = {"test", in_dir("good.yaml"), "--trace", "x", "--db", "y", NULL};
    assert_int_equal(rules(both, out, sizeof(out), err, sizeof(err)), 2);
    const char *no_rules[] = {"test", "--trace", "x", NULL};
    assert_int_equal(rules(no_rules, out, sizeof(out), err, sizeof(err)), 2);
    const char *bad_opt[] = {"check", "--strict", in_dir("good.yaml"), NULL};
    assert_int_equal(rules(bad_opt, out, sizeof(out), err, sizeof(err)), 2);
    assert_non_null(strstr(err, "seccheckd rules: check: unknown option '--strict'"));
    const char *bad_rate[] = {"test", in_dir("good.yaml"), "--trace", "x", "--alerts-rate", "fast", NULL};
    assert_int_equal(rules(bad_rate, out, sizeof(out), err, sizeof(err)), 2);
    const char *no_trace[] = {"test", in_dir("good.yaml"), "--trace", in_dir("missing.trace"), NULL};
    assert_int_equal(rules(no_trace, out, sizeof(out), err, sizeof(err)), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_check, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_version_names_engine, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_appended_after_macro, setup, teardown),
        cmocka_unit_test_setup_teardown(test_test_over_trace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_test_over_database, setup, teardown),
        cmocka_unit_test_setup_teardown(test_usage_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_absent_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_runsc_warning_names_a_sequence, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
