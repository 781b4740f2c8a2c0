/* Integration: settings from a config file, the command line overriding
 * it, ingest filters, and SIGHUP applying a changed filter live. */
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
#include <sqlite3.h>

#include "daemon.h"
#include "replay.h"

static void replay(const char *socket, const char *trace)
{
    assert_int_equal(replay_file(socket, trace), 0);
}

/* Waits for n "closed (eof)" lines: the daemon read every packet sent. */
static void wait_closed(const struct daemon *d, int n)
{
    if (!daemon_wait_log(d, "closed (eof)", n, 5000))
        fail_msg("connections did not close");
}

static void test_file_settings_and_sighup_reload(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    char conf[400], text[1024];
    snprintf(conf, sizeof(conf), "%s/seccheckd.conf", d.dir);
    snprintf(text, sizeof(text), "# a comment\nsocket = %s\n  db=%s   # trailing comment\ndrop-types = SYSCALL_READ\n"
             "batch-size = 100\n", d.socket, d.db);
    write_file(conf, text);
    const char *argv[] = {SECCHECKD_BIN, "--config", conf, NULL};
    assert_true(daemon_spawn(&d, argv, "info: listening on"));
    replay(d.socket, TRACES_DIR "/redis_rw.trace");   /* 19804 reads, 19584 writes */
    wait_closed(&d, 1);
    snprintf(text, sizeof(text), "socket = %s\ndb = %s\ndrop-types = SYSCALL_WRITE\nbatch-size = 200\n", d.socket,
             d.db);
    write_file(conf, text);
    kill(d.pid, SIGHUP);
    for (int i = 0; i < 200; i++) {
        char *log = daemon_read_log(&d);
        bool done = strstr(log, "reload: applied") != NULL;
        free(log);
        if (done)
            break;
        usleep(10000);
    }
    replay(d.socket, TRACES_DIR "/redis_rw.trace");
    wait_closed(&d, 2);
    assert_int_equal(daemon_stop(&d), 0);
    char *log = daemon_read_log(&d);
    assert_non_null(strstr(log, "reload: applied drop-types"));
    assert_non_null(strstr(log, "not applied until a restart (SIGUSR2; systemctl kill -s USR2 seccheckd): "
                                "batch-size"));
    free(log);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM events WHERE conn_id=1 AND msg_type=9"), 0);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM events WHERE conn_id=1 AND msg_type=34"), 19584);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM events WHERE conn_id=2 AND msg_type=9"), 19804);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM events WHERE conn_id=2 AND msg_type=34"), 0);
    assert_int_equal(db_query_int(d.db, "SELECT discarded FROM runs"), 19804 + 19584);
    assert_int_equal(db_query_int(d.db, "SELECT received - stored - discarded FROM runs"), 0);
    daemon_cleanup(&d);
}

static void test_command_line_overrides_file(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    char conf[400];
    snprintf(conf, sizeof(conf), "%s/seccheckd.conf", d.dir);
    write_file(conf, "socket = /nonexistent-dir/never.sock\nsink = discard\n");
    const char *args[] = {"--config", conf, "--sink", "sqlite", NULL};   /* --socket from daemon_start wins */
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    replay(d.socket, TRACES_DIR "/exec_loop.trace");
    wait_closed(&d, 1);
    assert_int_equal(daemon_stop(&d), 0);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM events"), 1219);
    daemon_cleanup(&d);
}

static void test_bad_config_files(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    char conf[400];
    snprintf(conf, sizeof(conf), "%s/bad.conf", d.dir);
    const char *cases[][2] = {
        {"\n# ok\nno-such-setting = 1\n", "bad.conf:3: unknown setting 'no-such-setting'"},
        {"batch-size = 0\n", "bad.conf:1: --batch-size: expected a whole number from 1"},
        {"just words\n", "bad.conf:1: expected 'name = value'"},
        {"keep-types = SYSCALL_NOPE\n", "bad.conf:1: --keep-types: unknown message type 'SYSCALL_NOPE'"},
        {"keep-types = 7\ndrop-types = 8\n", "bad.conf:2: --drop-types: --keep-types is set too"},
        {"metrics-listen = 192.0.2.1:9464\n", "bad.conf:1: --metrics-listen 192.0.2.1:9464: 192.0.2.1 is not"},
        {"db = \"unterminated\n", "bad.conf:1: db: a quoted value needs its closing"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        write_file(conf, cases[i][0]);
        const char *args[] = {"--config", conf, NULL};
        assert_false(daemon_start(&d, SECCHECKD_BIN, args));
        assert_int_equal(d.exit_status, 2);
        char *log = daemon_read_log(&d);
        if (!strstr(log, cases[i][1]))
            fail_msg("case %zu: expected '%s' in: %s", i, cases[i][1], log);
        free(log);
    }
    const char *missing[] = {"--config", "/nonexistent/seccheckd.conf", NULL};
    assert_false(daemon_start(&d, SECCHECKD_BIN, missing));
    char *log = daemon_read_log(&d);
    assert_non_null(strstr(log, "cannot read config file /nonexistent/seccheckd.conf"));
    free(log);
    daemon_cleanup(&d);
}

/* A line longer than the parser's 4,095 bytes is an error naming the file
 * and line, never split: here the tail of a long comment would otherwise
 * become a setting (drop-types). A directory, or any read error, is an
 * error too, not a start with no settings. */
static void test_long_lines_and_unreadable_config(void **state)
{
    struct daemon *d = *state;
    char conf[400];
    snprintf(conf, sizeof(conf), "%s/long.conf", d->dir);
    FILE *f = fopen(conf, "w");
    assert_non_null(f);
    fputs("log-level = info\n#", f);
    for (int i = 0; i < 4094; i++)
        fputc('x', f);
    fputs("drop-types=SYSCALL_OPEN\n", f);
    fclose(f);
    const char *args[] = {"--config", conf, NULL};
    bool started = daemon_start(d, SECCHECKD_BIN, args);
    if (started)
        daemon_stop(d);
    char *log = daemon_read_log(d);
    if (started || d->exit_status != 2 || !strstr(log, "long.conf:2: line longer than 4095 bytes"))
        fail_msg("expected exit 2 naming long.conf:2, got %s and: %s", started ? "a running daemon" : "an exit", log);
    free(log);

    /* Exactly 4,095 bytes (and its newline) is still a line. */
    f = fopen(conf, "w");
    assert_non_null(f);
    fputs("#", f);
    for (int i = 0; i < 4094; i++)
        fputc('x', f);
    fputs("\nlog-level = info\n", f);
    fclose(f);
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    assert_int_equal(daemon_stop(d), 0);

    const char *dir_args[] = {"--config", d->dir, NULL};
    started = daemon_start(d, SECCHECKD_BIN, dir_args);
    if (started)
        daemon_stop(d);
    log = daemon_read_log(d);
    if (started || d->exit_status != 2 || !strstr(log, "cannot read config file") || !strstr(log, "a directory"))
        fail_msg("--config DIRECTORY: expected exit 2 and why, got %s and: %s", started ? "a running daemon" : "an exit",
                 log);
    free(log);
}

/* The config file takes the same limits as the command line. */
static void test_config_values_within_limits(void **state)
{
    struct daemon *d = *state;
    char conf[400];
    snprintf(conf, sizeof(conf), "%s/limits.conf", d->dir);
    const char *cases[][2] = {
        {"retain = 1000000d\n", "limits.conf:1: --retain: expected a duration like 3600, 90m, 12h or 7d (0: forever), "
                                "at most 36500d (100 years), got '1000000d'"},
        {"max-db-size = 300T\n", "limits.conf:1: --max-db-size: expected a size from 1M to 256T"},
        {"allow-uid = 4294967296\n", "limits.conf:1: --allow-uid: a uid must be below 4294967295, got '4294967296'"},
        {"socket-group = 4294967295\n", "limits.conf:1: --socket-group: a group id must be below 4294967295"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        write_file(conf, cases[i][0]);
        const char *args[] = {"--config", conf, NULL};
        bool started = daemon_start(d, SECCHECKD_BIN, args);
        if (started)
            daemon_stop(d);
        char *log = daemon_read_log(d);
        if (started || d->exit_status != 2 || !strstr(log, cases[i][1]))
            fail_msg("case %zu: expected exit 2 and '%s', got %s and: %s", i, cases[i][1],
                     started ? "a running daemon" : "an exit", log);
        free(log);
    }
}

static void container_of_first_event(const char *db, char *out, size_t outlen)
{
    sqlite3 *h;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(h, "SELECT container_id FROM events WHERE container_id IS NOT NULL LIMIT 1",
                                        -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    snprintf(out, outlen, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(h);
}

/* One run: start with args, replay exec_loop (one container) and redis_rw
 * (no container ids collected), stop. */
static void run_with(struct daemon *d, const char *const *args)
{
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    replay(d->socket, TRACES_DIR "/exec_loop.trace");
    replay(d->socket, TRACES_DIR "/redis_rw.trace");
    wait_closed(d, 2);
    assert_int_equal(daemon_stop(d), 0);
}

static void test_container_filters(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    const char *none[] = {"--drop-containers", "runsc-nonexistent", NULL};
    run_with(&d, none);
    assert_int_equal(db_query_int(d.db, "SELECT stored FROM runs WHERE id=1"), 1219 + 39388);
    char id[128];
    container_of_first_event(d.db, id, sizeof(id));
    assert_non_null(strstr(id, "runsc-"));

    const char *keep[] = {"--keep-containers", id, NULL};
    run_with(&d, keep);   /* only exec_loop's events: redis_rw's have no container */
    assert_int_equal(db_query_int(d.db, "SELECT stored FROM runs WHERE id=2"), 1219);
    assert_int_equal(db_query_int(d.db, "SELECT discarded FROM runs WHERE id=2"), 39388);

    const char *drop[] = {"--drop-containers", id, NULL};
    run_with(&d, drop);
    assert_int_equal(db_query_int(d.db, "SELECT stored FROM runs WHERE id=3"), 39388);
    assert_int_equal(db_query_int(d.db, "SELECT discarded FROM runs WHERE id=3"), 1219);

    const char *types[] = {"--keep-types", "CONTAINER_START,sentry_exec,11", NULL};
    run_with(&d, types);
    assert_int_equal(db_query_int(d.db, "SELECT stored FROM runs WHERE id=4"), 1 + 202 + 406);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM runs WHERE received = stored + discarded"), 4);
    daemon_cleanup(&d);
}

/* SIGHUP after an edit of the rules file (the same path): the log says
 * what changed in the rules (and in the sequences), and never "applied no
 * changes" after loading new rules; a SIGHUP with nothing changed says so. */
static void test_sighup_says_what_changed_in_the_rules(void **state)
{
    struct daemon *d = *state;
    char rules[400];
    snprintf(rules, sizeof(rules), "%s/r.yaml", d->dir);
    static const char before[] =
        "- list: shells\n  items: [sh]\n"
        "- rule: Shell\n  desc: d\n  condition: evt.type = execve and proc.name in (shells)\n  output: x\n"
        "  priority: WARNING\n"
        "- rule: Opens\n  desc: d\n  condition: evt.type = openat\n  output: x\n  priority: INFO\n"
        "- rule: Reads\n  desc: d\n  condition: evt.type = read\n  output: x\n  priority: INFO\n";
    static const char after[] =
        "- list: shells\n  items: [sh, bash]\n"
        "- rule: Shell\n  desc: d\n  condition: evt.type = execve and proc.name in (shells)\n  output: x\n"
        "  priority: WARNING\n"
        "- rule: Opens\n  desc: d\n  condition: evt.type = openat\n  output: x\n  priority: INFO\n"
        "  enabled: false\n"
        "- rule: Connects\n  desc: d\n  condition: evt.type = connect\n  output: x\n  priority: NOTICE\n";
    write_file(rules, before);
    const char *args[] = {"--rules", rules, NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    kill(d->pid, SIGHUP);
    assert_true(daemon_wait_log(d, "reload: applied", 1, 5000));
    write_file(rules, after);
    kill(d->pid, SIGHUP);
    assert_true(daemon_wait_log(d, "reload: applied", 2, 5000));
    /* a sequence added, the rules the same: said as a rule is, and applied */
    char with_sequence[sizeof(after) + 400];
    snprintf(with_sequence, sizeof(with_sequence), "%s%s", after,
             "- sequence: Written then run\n  desc: d\n  within: 1h\n  steps:\n    - name: w\n"
             "      condition: evt.type = openat and evt.is_open_write = true\n    - name: x\n"
             "      condition: evt.type = execve and proc.exepath = %w.fd.name\n  output: x\n  priority: CRITICAL\n");
    write_file(rules, with_sequence);
    kill(d->pid, SIGHUP);
    assert_true(daemon_wait_log(d, "reload: applied", 3, 5000));
    assert_int_equal(daemon_stop(d), 0);
    char *log = daemon_read_log(d);
    const char *first = strstr(log, "reload: rules: no rule changed; 3 of 3 rules enabled\n");
    if (!first || !strstr(first, "reload: applied no changes\n"))
        fail_msg("an unchanged reload does not say so:\n%s", log);
    const char *second = strstr(first + 1, "reload: rules: 1 rule added (Connects), 1 removed (Reads), 1 changed "
                                           "(Shell), 1 disabled (Opens); 2 of 3 rules enabled (was 3 of 3)\n");
    if (!second || !strstr(second, "reload: applied rules\n"))
        fail_msg("the second reload does not say what changed:\n%s", log);
    const char *third = strstr(second + 1, "reload: rules: 1 sequence added (Written then run); 2 of 3 rules enabled, "
                                           "1 of 1 sequences enabled (was 0 of 0)\n");
    if (!third || !strstr(third, "reload: applied rules\n"))
        fail_msg("the third reload does not say the sequence added:\n%s", log);
    assert_int_equal(daemon_log_count(d, "applied no changes"), 1);
    free(log);
}

/* Issue 31 item 4: the rules when none are given (the systemd unit's
 * --default-rules), the config file's `rules =` winning over them, `none`,
 * and the start log saying "detection off" whenever no rule runs. */
static char *start_log(struct daemon *d, const char *const *args)
{
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    assert_int_equal(daemon_stop(d), 0);
    return daemon_read_log(d);
}

static void test_default_rules_and_detection_off(void **state)
{
    struct daemon *d = *state;
    char rules_d[400], mine[400], conf[400], text[1200], missing[400];
    snprintf(rules_d, sizeof(rules_d), "%s/rules.d", d->dir);
    snprintf(mine, sizeof(mine), "%s/mine.yaml", d->dir);
    snprintf(conf, sizeof(conf), "%s/seccheckd.conf", d->dir);
    snprintf(missing, sizeof(missing), "%s/no-such-dir", d->dir);
    assert_int_equal(mkdir(rules_d, 0755), 0);
    snprintf(text, sizeof(text), "%s/gvisor_rules.yaml", rules_d);
    char cp[2600];
    snprintf(cp, sizeof(cp), "cp %s/configs/rules/gvisor_rules.yaml %s", SOURCE_DIR, text);
    assert_int_equal(system(cp), 0);
    write_file(mine, "- rule: mine\n  desc: d\n  condition: evt.type = execve\n  output: o\n  priority: Notice\n");

    /* no rules anywhere: said */
    char *log = start_log(d, (const char *[]){NULL});
    assert_non_null(strstr(log, "warn: detection off: no rules loaded (--rules FILE|DIR; cmake --install puts the "
                                "default rules in /etc/seccheckd/rules.d)"));
    free(log);
    /* the unit's default, there: the default rules load, nothing said */
    log = start_log(d, (const char *[]){"--default-rules", rules_d, NULL});
    assert_non_null(strstr(log, "rules enabled of"));
    assert_non_null(strstr(log, "from 1 file"));
    assert_null(strstr(log, "detection off"));
    free(log);
    /* the config file's rules win over the default */
    snprintf(text, sizeof(text), "rules = %s\n", mine);
    write_file(conf, text);
    log = start_log(d, (const char *[]){"--config", conf, "--default-rules", rules_d, NULL});
    assert_non_null(strstr(log, "rules: 1 rules enabled of 1"));
    free(log);
    /* none, in the file or on the command line: no rules, said */
    write_file(conf, "rules = none\n");
    log = start_log(d, (const char *[]){"--config", conf, "--default-rules", rules_d, NULL});
    assert_null(strstr(log, "rules enabled"));
    assert_non_null(strstr(log, "detection off: no rules loaded (--rules FILE|DIR instead of none;"));
    free(log);
    log = start_log(d, (const char *[]){"--default-rules", rules_d, "--rules", "none", NULL});
    assert_non_null(strstr(log, "detection off"));
    free(log);
    /* the default missing (rules never installed): detection off, said */
    log = start_log(d, (const char *[]){"--default-rules", missing, NULL});
    char want[600];
    snprintf(want, sizeof(want), "warn: detection off: no rules loaded: --default-rules %s does not exist", missing);
    assert_non_null(strstr(log, want));
    free(log);
    /* a rules directory holding no enabled rule */
    write_file(mine, "- rule: off\n  desc: d\n  condition: evt.type = execve\n  output: o\n  priority: Notice\n"
                     "  enabled: false\n");
    log = start_log(d, (const char *[]){"--rules", mine, NULL});
    assert_non_null(strstr(log, "warn: detection off: the rules files hold no enabled rule"));
    free(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_settings_and_sighup_reload),
        cmocka_unit_test(test_command_line_overrides_file),
        cmocka_unit_test(test_bad_config_files),
        cmocka_unit_test_setup_teardown(test_long_lines_and_unreadable_config, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_config_values_within_limits, daemon_setup, daemon_teardown),
        cmocka_unit_test(test_container_filters),
        cmocka_unit_test_setup_teardown(test_sighup_says_what_changed_in_the_rules, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_default_rules_and_detection_off, daemon_setup, daemon_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
