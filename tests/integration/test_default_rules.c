/* Integration: the default rules (configs/rules/gvisor_rules.yaml) and the
 * runsc side generated from rules, as a user runs them:
 * - over the four recorded traces (benign work), offline: only the rules
 *   meant to fire there fire;
 * - configs/pod-init-default-rules.json is what `seccheckd gvisor-config
 *   --rules` makes of them today;
 * - `seccheckd rules check --pod-init` warns for each point or field a rule
 *   needs and a config does not enable, naming rule, point and field;
 * - usage errors exit 2 with the program's name.
 * tests/e2e/default_rules_e2e.sh makes every rule fire in real sandboxes. */
#include <setjmp.h>
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

#define RULES SOURCE_DIR "/configs/rules/gvisor_rules.yaml"
#define POD_INIT SOURCE_DIR "/configs/pod-init-default-rules.json"

static char dir[64];
static char out[1 << 16], err[1 << 16];

static int setup(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/seccheckd-defrules-XXXXXX");
    return reaper_mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    reaper_remove(dir);
    return reaper_clear();
}

static const char *in_dir(const char *name, const char *text)
{
    static char path[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(path[k], sizeof(path[k]), "%s/%s", dir, name);
    FILE *fp = fopen(path[k], "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
    return path[k];
}

/* seccheckd ARGS... (NULL-terminated): exit code, out and err filled. */
static int seccheckd(const char *first, ...)
{
    const char *argv[32] = {SECCHECKD_BIN, first};
    size_t n = 2;
    va_list ap;
    va_start(ap, first);
    while (n < 31 && (argv[n] = va_arg(ap, const char *)) != NULL)
        n++;
    va_end(ap);
    argv[n] = NULL;
    return run_command(argv, out, sizeof(out), err, sizeof(err));
}

/* The rules that raised alerts, from `rules test`'s summary on stderr:
 * "NAME: N alert(s)" lines with N > 0, joined by "; ". */
static const char *fired(const char *summary)
{
    static char list[4096];
    size_t len = 0;
    list[0] = '\0';
    for (const char *line = summary; *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        const char *colon = memmem(line, n, ": ", 2);
        if (colon && strncmp(line, "seccheckd rules:", 16) != 0 && strtoul(colon + 2, NULL, 10) > 0)
            len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%.*s", len ? "; " : "", (int)n, line);
        line += n + (end ? 1 : 0);
    }
    return list;
}

static const char *OUTBOUND_ON = "- rule: Outbound connection\n  enabled: true\n  override: {enabled: replace}\n";

static void test_traces(void **state)
{
    (void)state;
    const char *on = in_dir("on.yaml", OUTBOUND_ON);
    static const struct {
        const char *trace, *want;
    } cases[] = {
        /* a loop of /bin/true, find, a failing exec */
        {"exec_loop", ""},
        /* mixed_syscalls.py's forked child chroots to /tmp, drops to uid
         * 1000 and then asks for uid 0 (refused): both on purpose, both what
         * those rules are for */
        {"mixed_syscalls", "Non-root process setting uid 0: 1 alert; Chroot: 1 alert"},
        /* the recorder fell behind redis-benchmark (865 events dropped in 7
         * bursts), and drops.trace was recorded dropping on purpose: the
         * sandboxes did report drops */
        {"redis_rw", "Sandbox dropped events: 7 alerts"},
        /* every growth of its count is an alert: no per-rule throttling by
         * default (as Falco), far below the per-connection ceiling */
        {"drops", "Sandbox dropped events: 1371 alerts"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char trace[512];
        snprintf(trace, sizeof(trace), "%s/%s.trace", TRACES_DIR, cases[i].trace);
        assert_int_equal(seccheckd("rules", "test", RULES, on, "--trace", trace, NULL), 0);
        const char *got = fired(err);
        if (strcmp(got, cases[i].want) != 0)
            fail_msg("%s: expected '%s', got '%s'\n%s", cases[i].trace, cases[i].want, got, err);
    }
}

static void test_shipped_config_is_generated(void **state)
{
    (void)state;
    /* for runsc 2022-12 (Debian 12's), whatever runsc this host has */
    assert_int_equal(seccheckd("gvisor-config", "--runsc", "2022-12", "--rules", RULES, NULL), 0);
    FILE *fp = fopen(POD_INIT, "r");
    assert_non_null(fp);
    static char shipped[sizeof(out)];
    size_t n = fread(shipped, 1, sizeof(shipped) - 1, fp);
    shipped[n] = '\0';
    fclose(fp);
    if (strcmp(out, shipped) != 0)
        fail_msg("%s is out of date: regenerate it with\n  seccheckd gvisor-config --runsc 2022-12 --rules "
                 "configs/rules/gvisor_rules.yaml > configs/pod-init-default-rules.json", POD_INIT);
    /* runsc 2022-12 has none of the 2026 points and fields; the rules that
     * need them are named, the config has what runsc 2022-12 accepts */
    assert_null(strstr(out, "sentry/mmap"));
    assert_null(strstr(out, "fd_info"));
    assert_null(strstr(out, "is_exec_session"));
    assert_null(strstr(out, "parent_thread_group_id"));
    assert_non_null(strstr(err, "warning: rule 'Executable mapped from the writable layer or a memfd' needs a newer "
                                "runsc than runsc 2022-12 (0.0~20221219, built in): the point sentry/mmap (runsc "
                                "release-20260714.0 on)\n"));
    assert_non_null(strstr(err, "seccheckd gvisor-config: 7 rules need more than runsc 2022-12 (0.0~20221219, built "
                                "in) sends: the config enables what it has (a newer runsc: --runsc PATH)\n"));
    /* what the rules read, not more: no read or write points */
    assert_null(strstr(out, "syscall/read/"));
    assert_null(strstr(out, "syscall/write/"));
    assert_non_null(strstr(out, "{\"name\": \"syscall/sysno/272/exit\", \"context_fields\": [\"time\", \"group_id\", "
                                "\"thread_group_start_time\", \"container_id\", \"credentials\", \"process_name\"]}"));
    assert_non_null(strstr(out, "{\"name\": \"syscall/dup2/exit\", \"optional_fields\": [\"fd_path\"]"));
    /* connect for the sequences that read it (Credential read then connection out, Reverse shell,
     * Port scan), the disabled outbound rule enabled as well; rules A B as well as --rules A --rules B */
    const char *on = in_dir("on.yaml", OUTBOUND_ON);
    assert_non_null(strstr(out, "{\"name\": \"syscall/connect/exit\", \"optional_fields\": [\"fd_path\"]"));
    assert_int_equal(seccheckd("gvisor-config", "--runsc", "2022-12", "--rules", RULES, on, "--socket", "/run/s.sock",
                               NULL), 0);
    assert_non_null(strstr(out, "{\"name\": \"syscall/connect/exit\", \"optional_fields\": [\"fd_path\"]"));
    assert_non_null(strstr(out, "\"endpoint\": \"/run/s.sock\""));
    /* with --points: both */
    const char *setuid = in_dir("setuid.yaml", "- rule: r\n  desc: d\n  condition: evt.type = setuid and evt.dir = >\n"
                                               "  output: x\n  priority: Notice\n");
    assert_int_equal(seccheckd("gvisor-config", "--runsc", "2022-12", "--points", "net", "--rules", setuid, NULL), 0);
    assert_non_null(strstr(out, "{\"name\": \"syscall/socketpair/enter\", \"context_fields\": [\"time\", \"thread_id\", "
                                "\"task_start_time\", \"group_id\", \"thread_group_start_time\", \"container_id\", "
                                "\"credentials\", \"cwd\", \"process_name\"]}"));
    assert_non_null(strstr(out, "{\"name\": \"syscall/setuid/enter\", \"context_fields\": [\"time\", \"container_id\", "
                                "\"process_name\"]}"));
    assert_null(strstr(out, "syscall/setuid/exit"));
}

/* Points whose context_fields lack one of the readers' three (time,
 * container_id, process_name) in a gvisor-config output: their names,
 * "; "-joined ("" when none). */
static const char *without_readers_context(const char *config)
{
    static char list[4096];
    size_t len = 0;
    list[0] = '\0';
    const char *sinks = strstr(config, "\"sinks\"");   /* the points come before */
    assert_non_null(sinks);
    for (const char *line = strstr(config, "{\"name\": \""); line && line < sinks;
         line = strstr(line + 1, "{\"name\": \"")) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        const char *ctx = memmem(line, n, "\"context_fields\": [", 19);
        if (ctx && memmem(ctx, n - (size_t)(ctx - line), "\"time\"", 6) &&
            memmem(ctx, n - (size_t)(ctx - line), "\"container_id\"", 14) &&
            memmem(ctx, n - (size_t)(ctx - line), "\"process_name\"", 14))
            continue;
        int shown = (int)(n < 60 ? n : 60);
        len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%.*s", len ? "; " : "", shown, line);
        if (len >= sizeof(list))
            break;
    }
    return list;
}

/* Every point gvisor-config --rules enables carries the context the
 * readers ask of a stored event: its container, time and process (issue
 * 31 item 6: Falco's rules enabled syscall/close/exit with only group_id
 * and thread_group_start_time for the process table, 77% of the rows a
 * sandbox stored, none of them with a container or a time; task exits,
 * clones, execve enters the same with the default rules). */
static void test_every_point_says_container_time_process(void **state)
{
    (void)state;
    assert_int_equal(seccheckd("gvisor-config", "--runsc", "2022-12", "--rules", RULES, NULL), 0);
    const char *missing = without_readers_context(out);
    if (missing[0])
        fail_msg("the default rules' points without time, container_id or process_name: %s", missing);
    assert_non_null(strstr(out, "{\"name\": \"sentry/task_exit\", \"context_fields\": [\"time\", \"thread_id\", "
                                "\"group_id\", \"thread_group_start_time\", \"container_id\", \"cwd\", "
                                "\"process_name\"]}"));
    assert_int_equal(seccheckd("gvisor-config", "--runsc", "2022-12", "--rules",
                               SOURCE_DIR "/tests/fixtures/falco_rules/falco_rules.yaml", "--rules",
                               SOURCE_DIR "/tests/fixtures/falco_rules/falco-incubating_rules.yaml", NULL), 0);
    missing = without_readers_context(out);
    if (missing[0])
        fail_msg("Falco's rules' points without time, container_id or process_name: %s", missing);
    assert_non_null(strstr(out, "{\"name\": \"syscall/close/exit\", \"context_fields\": [\"time\", \"group_id\", "
                                "\"thread_group_start_time\", \"container_id\", \"process_name\"]}"));
    /* --points groups carry every context field, as before */
    assert_int_equal(seccheckd("gvisor-config", "--runsc", "2022-12", "--points", "files", NULL), 0);
    assert_string_equal(without_readers_context(out), "");
}

static void test_check_pod_init(void **state)
{
    (void)state;
    assert_int_equal(seccheckd("rules", "check", "--runsc", "2022-12", "--pod-init", POD_INIT, RULES, NULL), 0);
    assert_non_null(strstr(out, "configs/pod-init-default-rules.json: enables everything the enabled rules need"));
    /* only that the 2026 rules need a newer runsc than 2022-12 */
    assert_non_null(strstr(out, "7 rules need more than runsc 2022-12 (0.0~20221219, built in) sends: they load, "
                                "and raise no alert for what is not sent\n"));
    int lines = 0;
    for (const char *l = err; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l), lines++) {
        const char *end = strchr(l, '\n');
        size_t n = end ? (size_t)(end - l) : strlen(l);
        static const char newer[] = "needs a newer runsc than runsc 2022-12 (0.0~20221219, built in): ";
        if (!memmem(l, n, newer, sizeof(newer) - 1))
            fail_msg("not a newer-runsc warning: %.*s", (int)n, l);
    }
    assert_int_equal(lines, 8);   /* 6 rules, the mmap rule twice: its point and its layer field; the mmap sequence */

    /* a config made by hand: dup2 without fd_path, openat without the
     * credentials, unshare's exit without its enter, no sentry/clone */
    const char *cfg = in_dir("cfg.json",
        "{\"trace_session\": {\"name\": \"Default\", \"points\": [\n"
        "  {\"name\": \"syscall/dup2/exit\", \"context_fields\": [\"time\", \"group_id\", \"thread_group_start_time\","
        " \"container_id\", \"credentials\", \"cwd\", \"process_name\"]},\n"
        "  {\"name\": \"syscall/openat/exit\", \"optional_fields\": [\"fd_path\"], \"context_fields\": [\"time\","
        " \"group_id\", \"thread_group_start_time\", \"container_id\", \"cwd\", \"process_name\"]},\n"
        "  {\"name\": \"syscall/sysno/272/exit\", \"context_fields\": [\"time\", \"group_id\","
        " \"thread_group_start_time\", \"container_id\", \"credentials\", \"process_name\"]}\n"
        "], \"sinks\": [{\"name\": \"remote\", \"config\": {\"endpoint\": \"/tmp/s.sock\"}}]}}\n");
    const char *one = in_dir("one.yaml",
        "- rule: redirect\n  desc: d\n  condition: evt.type = dup2 and fd.name startswith socket\n  output: x\n"
        "  priority: Notice\n"
        "- rule: shadow\n  desc: d\n  condition: evt.type = openat and fd.name = /etc/shadow\n"
        "  output: '%user.uid %proc.pname'\n  priority: Notice\n"
        "- rule: ns\n  desc: d\n  condition: evt.type = unshare\n  output: '%proc.name'\n  priority: Notice\n");
    assert_int_equal(seccheckd("rules", "check", "--pod-init", cfg, one, NULL), 0);
    char want[1024];
    snprintf(want, sizeof(want), "%s:1: warning: rule 'redirect' reads the optional field fd_path at "
             "syscall/dup2/exit, which %s does not enable\n", one, cfg);
    assert_non_null(strstr(err, want));
    snprintf(want, sizeof(want), "%s:6: warning: rule 'shadow' reads the context field credentials at "
             "syscall/openat/exit, which %s does not enable\n", one, cfg);
    assert_non_null(strstr(err, want));
    snprintf(want, sizeof(want), "%s:6: warning: rule 'shadow' needs the point sentry/clone, which %s does not "
             "enable (it keeps the process table the rule reads)\n", one, cfg);
    assert_non_null(strstr(err, want));
    snprintf(want, sizeof(want), "%s:11: warning: rule 'ns' needs the point syscall/sysno/272/enter, which %s does "
             "not enable (runsc 2022-12 sends the context fields of a raw exit point only with its enter point "
             "enabled)\n", one, cfg);
    assert_non_null(strstr(err, want));
    /* 1 + 1 + 4 tracking points (shadow: proc.pname) + 1 */
    assert_non_null(strstr(out, "cfg.json: 7 warnings: some rules would miss events"));

    /* the config every earlier release shipped, against the default rules */
    assert_int_equal(seccheckd("rules", "check", "--runsc=2022-12", "--pod-init=" SOURCE_DIR
                               "/configs/pod-init-exec-files.json", RULES, NULL), 0);
    assert_non_null(strstr(err, "warning: rule 'Namespace changed' needs the point syscall/sysno/272/exit"));
    assert_non_null(strstr(err, "warning: rule 'Sensitive file read' reads the context field thread_group_start_time "
                                "at syscall/openat/exit"));
    /* a rule that sees every type needs nothing in particular */
    assert_null(strstr(err, "Sandbox dropped events"));
}

static void test_usage_errors(void **state)
{
    (void)state;
    assert_int_equal(seccheckd("rules", "check", "--pod-init", NULL), 2);
    assert_non_null(strstr(err, "seccheckd rules: --pod-init needs a FILE"));
    assert_int_equal(seccheckd("rules", "check", "--pod-init", RULES, NULL), 2);
    assert_non_null(strstr(err, "seccheckd rules: check needs at least one PATH"));
    assert_int_equal(seccheckd("rules", "check", "--pod-init", "/nonexistent.json", RULES, NULL), 2);
    assert_non_null(strstr(err, "seccheckd rules: cannot open /nonexistent.json: No such file or directory"));
    const char *bad = in_dir("bad.json", "{\"trace_session\": [1, 2");
    assert_int_equal(seccheckd("rules", "check", "--pod-init", bad, RULES, NULL), 2);
    assert_non_null(strstr(err, "bad.json:2:1: cannot read it as JSON: "));
    const char *other = in_dir("other.json", "{\"points\": []}");
    assert_int_equal(seccheckd("rules", "check", "--pod-init", other, RULES, NULL), 2);
    assert_non_null(strstr(err, "other.json: not a pod-init config"));
    const char *broken = in_dir("broken.yaml", "- rule: r\n  desc: d\n  condition: evt.type = nosuch\n  output: x\n"
                                               "  priority: Notice\n");
    assert_int_equal(seccheckd("gvisor-config", "--rules", broken, NULL), 2);
    assert_non_null(strstr(err, "broken.yaml:3:25: error: unknown event type 'nosuch'"));
    assert_non_null(strstr(err, "seccheckd gvisor-config: the rules have errors: no config written"));
    assert_string_equal(out, "");
    assert_int_equal(seccheckd("gvisor-config", "--rules", "/nonexistent.yaml", NULL), 2);
    assert_non_null(strstr(err, "/nonexistent.yaml: error: cannot open"));
    assert_int_equal(seccheckd("gvisor-config", "stray", NULL), 2);
    assert_non_null(strstr(err, "seccheckd gvisor-config: --points: expected exec, files, net or all"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_traces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shipped_config_is_generated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_point_says_container_time_process, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_pod_init, setup, teardown),
        cmocka_unit_test_setup_teardown(test_usage_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
