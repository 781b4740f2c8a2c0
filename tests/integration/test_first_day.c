/* Integration: what a first day with the readers met (issue 31 item 8):
 * `containers` and `alerts --follow` said nothing at all when nothing
 * matched or nothing was there yet (now they say so on stderr, as `events`
 * does; the central side, `alerts --to --follow`, is in tests/fleet/
 * readers.sh), `alerts --wide` let a long rule name push its row's columns
 * out of line, the top-level usage left out `alerts show`, and `check
 * --help` printed the daemon's help. */
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

#define OUT_MAX (1 << 20)

struct run {
    int status;
    char *out, *err;
};

/* `seccheckd ARGS...` to its end. */
static struct run cmd(const char *const *args)
{
    const char *argv[32] = {SECCHECKD_BIN};
    size_t n = 1;
    for (; args[n - 1] && n < 31; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    struct run r = {.out = malloc(OUT_MAX), .err = malloc(16384)};
    assert_non_null(r.out);
    assert_non_null(r.err);
    r.status = run_command(argv, r.out, OUT_MAX, r.err, 16384);
    return r;
}

static void run_free(struct run *r)
{
    free(r->out);
    free(r->err);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *buf = calloc(1, 65536);
    assert_non_null(buf);
    size_t n = fread(buf, 1, 65535, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Two rules over mixed_syscalls.trace, one named longer than the table's
 * 32-character RULE column. */
static const char rules_yaml[] =
    "- rule: Openat exit\n"
    "  desc: every openat that returned\n"
    "  condition: evt.type = openat and evt.dir = <\n"
    "  output: \"%proc.name opened %fd.name\"\n"
    "  priority: WARNING\n"
    "- rule: Cat opened a file, a rule whose name is longer than the column\n"
    "  desc: cat opened something\n"
    "  condition: evt.type = openat and evt.dir = < and proc.name = cat\n"
    "  output: \"cat opened %fd.name\"\n"
    "  priority: CRITICAL\n";

static void store_with_rules(struct daemon *d)
{
    char rules[400];
    snprintf(rules, sizeof(rules), "%s/r.yaml", d->dir);
    write_file(rules, rules_yaml);
    const char *args[] = {"--rules", rules, "--rule-matching", "all", NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    assert_int_equal(replay_file(d->socket, TRACES_DIR "/mixed_syscalls.trace"), 0);
    assert_true(daemon_wait_log(d, "closed (eof)", 1, 10000));
    assert_int_equal(daemon_stop(d), 0);
}

/* containers: an empty database says it holds none yet; a filter that
 * matches nothing is named (before: nothing at all, exit 0). */
static void test_containers_say_why_nothing(void **state)
{
    struct daemon *d = *state;
    assert_true(daemon_start(d, SECCHECKD_BIN, NULL));
    assert_int_equal(daemon_stop(d), 0);
    struct run r = cmd((const char *const[]){"containers", "--db", d->db, NULL});
    assert_int_equal(r.status, 0);
    if (!strstr(r.err, " holds no containers yet (no stored event named one)\n"))
        fail_msg("stderr: '%s'", r.err);
    run_free(&r);
    store_with_rules(d);
    long long stored = dbq(d, "SELECT count(*) FROM containers");
    assert_true(stored > 0);
    r = cmd((const char *const[]){"containers", "--db", d->db, "--pod", "no\x1b[2Jsuch", NULL});
    assert_int_equal(r.status, 0);
    char want[128];
    snprintf(want, sizeof(want), "seccheckd containers: no container passes the filters (%lld stored)\n", stored);
    if (!strstr(r.err, want))
        fail_msg("stderr: '%s'", r.err);
    assert_non_null(strstr(r.err, "  --pod 'no\\x1b[2Jsuch': no container of that pod\n"));
    assert_null(strstr(r.err, "\x1b"));   /* escaped */
    run_free(&r);
    /* --container that exists with --namespace that does not: only the latter named */
    r = cmd((const char *const[]){"containers", "--db", d->db, "--container", "runsc-236711", "--namespace", "nons",
                                  NULL});
    assert_non_null(strstr(r.err, "  --namespace 'nons': no container of that namespace\n"));
    assert_null(strstr(r.err, "--container"));
    run_free(&r);
    r = cmd((const char *const[]){"containers", "--db", d->db, NULL});   /* something printed: nothing said */
    assert_string_equal(r.err, "");
    assert_non_null(strstr(r.out, "runsc-236711"));
    run_free(&r);
}

/* alerts --follow: followed for a while, then stopped; its stderr. */
static char *follow_err(const struct daemon *d, const char *const *filters)
{
    char err[400];
    snprintf(err, sizeof(err), "%s/follow.err", d->dir);
    const char *argv[16] = {SECCHECKD_BIN, "alerts", "--db", d->db, "--follow"};
    size_t n = 5;
    for (; filters[n - 5] && n < 15; n++)
        argv[n] = filters[n - 5];
    argv[n] = NULL;
    pid_t pid = spawn_program(argv, "/dev/null", err);
    assert_true(pid > 0);
    char wal[420];
    snprintf(wal, sizeof(wal), "%s-wal", d->db);
    assert_true(wait_file_open(pid, wal, 10000));   /* it has read the stored alerts */
    sleep_ms(300);
    kill(pid, SIGTERM);
    assert_int_equal(reaper_wait_within(pid, 5000), 0);   /* it was still following */
    return slurp(err);
}

/* alerts --follow says when nothing is there yet or no stored alert passes
 * its filters, then follows (before: silent, as if all were well). */
static void test_alerts_follow_says_why_nothing(void **state)
{
    struct daemon *d = *state;
    assert_true(daemon_start(d, SECCHECKD_BIN, NULL));
    assert_int_equal(daemon_stop(d), 0);
    char *err = follow_err(d, (const char *const[]){NULL});
    char want[400];
    snprintf(want, sizeof(want), "seccheckd alerts: no alerts in %s yet; waiting for them\n", d->db);
    if (strcmp(err, want) != 0)
        fail_msg("stderr: '%s'", err);
    free(err);
    store_with_rules(d);
    long long alerts = dbq(d, "SELECT count(*) FROM alerts");
    assert_true(alerts > 0);
    err = follow_err(d, (const char *const[]){"--rule", "nothing", NULL});
    snprintf(want, sizeof(want), "seccheckd alerts: none of the %lld alerts in %s pass the filters (waiting for new "
             "ones); each alone:\n", alerts, d->db);
    if (!strstr(err, want))
        fail_msg("stderr: '%s'", err);
    assert_non_null(strstr(err, "  --rule 'nothing': no rule's name contains it (the rules that raised alerts: "));
    free(err);
    err = follow_err(d, (const char *const[]){"--rule", "openat", NULL});   /* some pass: nothing to explain */
    assert_string_equal(err, "");
    free(err);
    /* without --follow, as before */
    struct run r = cmd((const char *const[]){"alerts", "--db", d->db, "--rule", "nothing", NULL});
    assert_int_equal(r.status, 0);
    snprintf(want, sizeof(want), "none of the %lld alerts in %s pass the filters; each alone:\n", alerts, d->db);
    assert_non_null(strstr(r.err, want));
    run_free(&r);
}

/* Every row of the table has a column where the header's word starts: two
 * spaces, then text (and, with value, that text). */
static void assert_column_aligned(const char *table, const char *header_word, const char *value)
{
    const char *nl = strchr(table, '\n');
    assert_non_null(nl);
    const char *h = strstr(table, header_word);
    assert_true(h && h < nl);
    size_t at = (size_t)(h - table);
    int rows = 0;
    for (const char *line = nl + 1; *line; rows++) {
        const char *end = strchr(line, '\n');
        assert_non_null(end);
        bool one = (size_t)(end - line) > at && line[at - 1] == ' ' && line[at - 2] == ' ' && line[at] != ' ' &&
                   (!value || strncmp(line + at, value, strlen(value)) == 0);
        if (!one)
            fail_msg("row %d: column %s at %zu reads '%.20s': %.*s", rows, header_word, at, line + at,
                     (int)(end - line), line);
        line = end + 1;
    }
    assert_true(rows > 1);
}

/* --wide: each column as wide as its longest value, the rows aligned
 * (before: the long rule's rows had their CONTAINER column 30 characters
 * right of the header's, the others 0). */
static void test_wide_aligns(void **state)
{
    struct daemon *d = *state;
    store_with_rules(d);
    struct run r = cmd((const char *const[]){"alerts", "--db", d->db, "--wide", NULL});
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "Cat opened a file, a rule whose name is longer than the column  runsc-236711"));
    assert_column_aligned(r.out, "CONTAINER", "runsc-236711  ");
    assert_column_aligned(r.out, "OUTPUT", NULL);
    run_free(&r);
    /* the plain table still cuts to 32 */
    r = cmd((const char *const[]){"alerts", "--db", d->db, NULL});
    assert_non_null(strstr(r.out, "Cat opened a file, a rule who...  runsc-236711"));
    assert_column_aligned(r.out, "CONTAINER", "runsc-236711  ");
    run_free(&r);
}

/* The top-level usage names alerts show; check --help is check's own. */
static void test_usage(void **state)
{
    (void)state;
    struct run r = cmd((const char *const[]){"--help", NULL});
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "\n       seccheckd alerts show ID --db PATH | --to URL"));
    run_free(&r);
    r = cmd((const char *const[]){"check", "--help", NULL});
    assert_int_equal(r.status, 0);
    assert_true(strncmp(r.out, "Usage: seccheckd check [OPTIONS]\n", 33) == 0);
    assert_non_null(strstr(r.out, "Exit status: 0 a start would get that far, 1 a sink does not open, 2"));
    assert_null(strstr(r.out, "Usage: seccheckd [OPTIONS]"));   /* not the daemon's */
    assert_null(strstr(r.out, "--socket"));
    run_free(&r);
    r = cmd((const char *const[]){"check", "-h", NULL});
    assert_true(strncmp(r.out, "Usage: seccheckd check [OPTIONS]\n", 33) == 0);
    run_free(&r);
    r = cmd((const char *const[]){"check", "--no-such-option", NULL});   /* a usage error, as before */
    assert_int_equal(r.status, 2);
    run_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_containers_say_why_nothing, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_alerts_follow_says_why_nothing, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_wide_aligns, daemon_setup, daemon_teardown),
        cmocka_unit_test(test_usage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
