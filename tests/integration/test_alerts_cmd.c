/* Integration: `seccheckd alerts --db`, over a database a real daemon filled
 * with --rules: the table (one row per alert, columns in place, hostile text
 * escaped), --json (the very lines --alerts-out wrote), the filters against
 * SQL counts, --follow picking up alerts committed after it started, and
 * the errors people meet. The central side (--to) is in tests/fleet. */
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
#include "gvisor/common.pb-c.h"
#include "gvisor/syscall.pb-c.h"
#include "wire.h"

/* Two rules of two priorities over mixed_syscalls.trace: 175 openat exits
 * (Warning) and cat's 31 opens among them (Critical). */
#define OPENAT_EXITS 175
#define CAT_OPENS 31
static const char rules_yaml[] =
    "- rule: Openat exit\n"
    "  desc: every openat that returned\n"
    "  condition: evt.type = openat and evt.dir = <\n"
    "  output: \"%proc.name opened %fd.name\"\n"
    "  priority: WARNING\n"
    "  tags: [files]\n"
    "- rule: Cat opens\n"
    "  desc: cat opened something\n"
    "  condition: evt.type = openat and evt.dir = < and proc.name = cat\n"
    "  output: \"cat opened %fd.name as %proc.cmdline\"\n"
    "  priority: CRITICAL\n";

#define OUT_MAX (4 << 20)

struct run {
    int status;
    char *out, *err;
};

static struct run alerts_cmd(const char *const *args)
{
    const char *argv[32] = {SECCHECKD_BIN, "alerts"};
    size_t n = 2;
    for (; args[n - 2] && n < 31; n++)
        argv[n] = args[n - 2];
    argv[n] = NULL;
    struct run r = {.out = malloc(OUT_MAX), .err = malloc(8192)};
    assert_non_null(r.out);
    assert_non_null(r.err);
    r.status = run_command(argv, r.out, OUT_MAX, r.err, 8192);
    return r;
}

static void run_free(struct run *r)
{
    free(r->out);
    free(r->err);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static char *start_with_rules(struct daemon *d, const char *extra_out)
{
    static char rules[400];
    snprintf(rules, sizeof(rules), "%s/r.yaml", d->dir);
    FILE *f = fopen(rules, "w");
    assert_non_null(f);
    fputs(rules_yaml, f);
    fclose(f);
    /* both rules alert for cat's opens */
    const char *args[] = {"--rules", rules, "--rule-matching", "all", extra_out ? "--alerts-out" : NULL, extra_out,
                          NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    return rules;
}

static void replay_mixed(struct daemon *d, int closed)
{
    assert_int_equal(replay_file(d->socket, TRACES_DIR "/mixed_syscalls.trace"), 0);
    assert_true(daemon_wait_log(d, "closed (eof)", closed, 10000));
}

/* The table: a header, one row per alert, the output without the time and
 * priority its columns show. */
static void test_table(void **state)
{
    struct daemon *d = *state;
    start_with_rules(d, NULL);
    replay_mixed(d, 1);
    assert_int_equal(daemon_stop(d), 0);
    struct run r = alerts_cmd((const char *const[]){"--db", d->db, NULL});
    assert_int_equal(r.status, 0);
    long long alerts = dbq(d, "SELECT count(*) FROM alerts");
    assert_int_equal(alerts, OPENAT_EXITS + CAT_OPENS);
    assert_int_equal(count_lines(r.out), alerts + 1);
    assert_true(strncmp(r.out, "TIME (UTC)", 10) == 0);
    assert_non_null(strstr(r.out, "PRIORITY       RULE"));
    /* A cat row: time, priority, rule, container, then the rendered text. */
    const char *row = strstr(r.out, "Critical       Cat opens");
    assert_non_null(row);
    const char *line = row;
    while (line > r.out && line[-1] != '\n')
        line--;
    assert_true(line[4] == '-' && line[10] == 'T' && line[23] == 'Z');   /* 2026-11-30T00:30:58.868Z */
    assert_non_null(strstr(row, "runsc-236711"));
    const char *output = strstr(row, "cat opened ");
    assert_non_null(output);
    assert_true(output < strchr(row, '\n'));
    assert_null(strstr(r.out, ": Critical cat opened"));   /* the prefix is the columns' */
    run_free(&r);
}

/* --json gives each alert's line exactly as --alerts-out wrote it. */
static void test_json_is_the_alert_line(void **state)
{
    struct daemon *d = *state;
    char out[400];
    snprintf(out, sizeof(out), "%s/alerts.json", d->dir);
    start_with_rules(d, out);
    replay_mixed(d, 1);
    assert_int_equal(daemon_stop(d), 0);
    struct run r = alerts_cmd((const char *const[]){"--db", d->db, "--json", NULL});
    assert_int_equal(r.status, 0);
    FILE *f = fopen(out, "r");
    assert_non_null(f);
    char *written = malloc(OUT_MAX);
    assert_non_null(written);
    size_t n = fread(written, 1, OUT_MAX - 1, f);
    written[n] = '\0';
    fclose(f);
    assert_int_equal(count_lines(r.out), OPENAT_EXITS + CAT_OPENS);
    if (strcmp(r.out, written) != 0)
        fail_msg("--json differs from --alerts-out:\n%.400s\n---\n%.400s", r.out, written);
    free(written);
    run_free(&r);
}

static long long lines_of(const char *const *args)
{
    struct run r = alerts_cmd(args);
    if (r.status != 0)
        fail_msg("exit %d: %s", r.status, r.err);
    long long n = count_lines(r.out);
    run_free(&r);
    return n;
}

static void test_filters(void **state)
{
    struct daemon *d = *state;
    start_with_rules(d, NULL);
    replay_mixed(d, 1);
    assert_int_equal(daemon_stop(d), 0);
    const char *db = d->db;
    assert_int_equal(lines_of((const char *const[]){"--db", db, "--json", "--priority", "critical", NULL}), CAT_OPENS);
    assert_int_equal(lines_of((const char *const[]){"--db", db, "--json", "--priority", "Warning", NULL}), OPENAT_EXITS + CAT_OPENS);
    assert_int_equal(lines_of((const char *const[]){"--db", db, "--json", "--priority", "emergency", NULL}), 0);
    assert_int_equal(lines_of((const char *const[]){"--db", db, "--json", "--rule", "Openat exit", NULL}), OPENAT_EXITS);
    assert_int_equal(lines_of((const char *const[]){"--db", db, "--json", "--container", "runsc-236711", NULL}),
                     OPENAT_EXITS + CAT_OPENS);
    assert_int_equal(lines_of((const char *const[]){"--db", db, "--json", "--container", "other", NULL}), 0);
    /* The trace's events were recorded on 2026-11-30: alerts carry their time. */
    long long age_s = dbq(d, "SELECT (CAST(strftime('%%s', 'now') AS INTEGER) - min(time_ns) / 1000000000) FROM alerts");
    char recent[32], all[32];
    snprintf(recent, sizeof(recent), "%llds", age_s / 2);
    snprintf(all, sizeof(all), "%llds", age_s + 3600);
    assert_int_equal(lines_of((const char *const[]){"--db", db, "--json", "--since", recent, NULL}), 0);
    assert_int_equal(lines_of((const char *const[]){"--db", db, "--json", "--since", all, NULL}), OPENAT_EXITS + CAT_OPENS);
}

/* --follow prints only the alerts committed after it started, until
 * SIGTERM, and exits 0. */
static void test_follow(void **state)
{
    struct daemon *d = *state;
    start_with_rules(d, NULL);
    replay_mixed(d, 1);
    for (int i = 0; i < 300 && dbq(d, "SELECT count(*) FROM alerts") < OPENAT_EXITS + CAT_OPENS; i++)
        sleep_ms(10);
    char out[400];
    snprintf(out, sizeof(out), "%s/follow.out", d->dir);
    pid_t follower = reaper_fork();
    assert_true(follower >= 0);
    if (follower == 0) {
        if (!freopen(out, "w", stdout))
            _exit(126);
        execl(SECCHECKD_BIN, SECCHECKD_BIN, "alerts", "--db", d->db, "--follow", "--json", "--rule", "Cat opens",
              (char *)NULL);
        _exit(127);
    }
    sleep_ms(500);   /* it has read where the table ends */
    replay_mixed(d, 2);
    long long want = CAT_OPENS;
    char *text = NULL;
    for (int i = 0; i < 100; i++) {
        FILE *f = fopen(out, "r");
        char buf[65536];
        size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = '\0';
        if (count_lines(buf) >= want) {
            text = strdup(buf);
            break;
        }
        sleep_ms(100);
    }
    kill(follower, SIGTERM);
    assert_int_equal(reaper_wait_within(follower, 5000), 0);
    assert_non_null(text);
    assert_int_equal(count_lines(text), want);   /* the second replay's, not the first's */
    free(text);
    assert_int_equal(daemon_stop(d), 0);
}

/* Control bytes and escape sequences from a sandbox stay escaped in the
 * table; --json keeps them as JSON escapes. */
static void test_hostile_text(void **state)
{
    struct daemon *d = *state;
    char rules[400];
    snprintf(rules, sizeof(rules), "%s/r.yaml", d->dir);
    FILE *f = fopen(rules, "w");
    assert_non_null(f);
    fputs("- rule: Any open\n  desc: d\n  condition: evt.type = openat\n  output: \"%proc.name %fd.name\"\n"
          "  priority: NOTICE\n", f);
    fclose(f);
    const char *args[] = {"--rules", rules, NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    int fd = replay_open(d->socket, 1);
    assert_true(fd >= 0);
    Gvisor__Common__ContextData ctx = GVISOR__COMMON__CONTEXT_DATA__INIT;
    ctx.container_id = "evil\n2026-01-01T00:00:00.000Z forged";
    ctx.process_name = "\x1b[2J\x1b]0;pwned\a";
    ctx.thread_group_id = 7;
    Gvisor__Syscall__Exit x = GVISOR__SYSCALL__EXIT__INIT;
    x.result = 3;
    Gvisor__Syscall__Open open = GVISOR__SYSCALL__OPEN__INIT;
    open.context_data = &ctx;
    open.exit = &x;
    open.sysno = 257;
    open.fd = -100;
    open.pathname = "/tmp/\xe2\x80\xae" "fdp.exe\r\xc2\x9b" "31m\xff\xfe";
    size_t n = protobuf_c_message_get_packed_size(&open.base);
    uint8_t *pkt = malloc(WIRE_HEADER_MIN + n);
    assert_non_null(pkt);
    wire_header_write(pkt, 7, 0);
    protobuf_c_message_pack(&open.base, pkt + WIRE_HEADER_MIN);
    send_bytes(fd, pkt, WIRE_HEADER_MIN + n);
    free(pkt);
    close(fd);
    assert_true(daemon_wait_log(d, "closed (eof)", 1, 10000));
    assert_int_equal(daemon_stop(d), 0);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts"), 1);
    for (int json = 0; json < 2; json++) {
        struct run r = alerts_cmd((const char *const[]){"--db", d->db, json ? "--json" : NULL, NULL});
        assert_int_equal(r.status, 0);
        assert_int_equal(count_lines(r.out), json ? 1 : 2);
        for (const unsigned char *p = (const unsigned char *)r.out; *p; p++)
            if ((*p < 0x20 && *p != '\n') || *p == 0x7f || (p[0] == 0xc2 && p[1] == 0x9b) ||
                (p[0] == 0xe2 && p[1] == 0x80 && p[2] == 0xae))
                fail_msg("a control character in the %s output: %s", json ? "json" : "table", r.out);
        run_free(&r);
    }
}

static void test_errors(void **state)
{
    struct daemon *d = *state;
    assert_true(daemon_start(d, SECCHECKD_BIN, NULL));   /* no rules: no alerts */
    assert_int_equal(daemon_stop(d), 0);
    struct run r = alerts_cmd((const char *const[]){"--db", d->db, NULL});
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "");
    assert_non_null(strstr(r.err, "no alerts in"));
    assert_non_null(strstr(r.err, "--rules"));
    run_free(&r);
    /* A database from before alerts existed. */
    char old[400];
    snprintf(old, sizeof(old), "%s/old.db", d->dir);
    const char *create[] = {"/usr/bin/sqlite3", old, "CREATE TABLE events(id INTEGER PRIMARY KEY)", NULL};
    char ignored[256];
    assert_int_equal(run_command(create, ignored, sizeof(ignored), NULL, 0), 0);
    r = alerts_cmd((const char *const[]){"--db", old, NULL});
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "has no alerts table"));
    run_free(&r);
    static const struct {
        const char *args[6];
        const char *says;
    } usage[] = {
        {{"--db", "x.db", "--priority", "loud", NULL}, "--priority: expected emergency, alert"},
        {{"--db", "x.db", "--since", "yesterday", NULL}, "--since: expected a duration"},
        {{NULL}, "give --db PATH (a host's database) or --to URL"},
        {{"--db", "x.db", "--to", "postgresql:///x", NULL}, "give --db PATH"},
        {{"--db", "x.db", "--all-hosts", NULL}, "--host-id and --all-hosts go with --to"},
        {{"--db", "x.db", "stray", NULL}, "unexpected argument"},
    };
    for (size_t i = 0; i < sizeof(usage) / sizeof(usage[0]); i++) {
        r = alerts_cmd(usage[i].args);
        if (r.status != 2 || !strstr(r.err, usage[i].says) || strncmp(r.err, "seccheckd alerts: ", 18) != 0)
            fail_msg("case %zu: exit %d, %s", i, r.status, r.err);
        run_free(&r);
    }
    r = alerts_cmd((const char *const[]){"--db", "/nonexistent/x.db", NULL});
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "no such database"));
    run_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_table, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_json_is_the_alert_line, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_filters, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_follow, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_hostile_text, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_errors, daemon_setup, daemon_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
