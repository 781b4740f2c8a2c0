/* Integration: what gVisor's 2026 releases send (issue 26), in packets made by
 * an implementation independent of seccheckd's (tests/support/gvisor_packets.py:
 * Debian's python3-protobuf with message classes of its own, transcribed from
 * google/gvisor's pkg/sentry/seccheck/points at 3c5eee17d):
 * - our decoder/proto/gvisor files are that transcription, compiled by protoc;
 * - over the socket, to a daemon with the default rules: every new field
 *   reaches detail, the execs view and `seccheckd events`; each default rule
 *   of the 2026 fields fires on its crafted story, silent on its benign twin;
 * - the same stories through `seccheckd rules test --trace`;
 * - `gvisor-config` and `rules check` for a runsc of release-20260817.0
 *   (its metadata, or a runsc that prints it), and for this host's runsc. */
#include <setjmp.h>
#include <stdbool.h>
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

#define RULES SOURCE_DIR "/configs/rules/gvisor_rules.yaml"
#define PACKETS SOURCE_DIR "/tests/support/gvisor_packets.py"
#define METADATA_2026 SOURCE_DIR "/tests/fixtures/runsc/metadata-20260817.txt"
#define PYTHON "/usr/bin/python3"   /* Debian's, with python3-protobuf */

static char out[1 << 17], err[1 << 16];

/* Each story and the rules it must raise, in alert order ("" none). */
static const struct {
    const char *story, *rules;
} stories[] = {
    {"drop_exec", "Drop and execute new binary in container"},
    {"drop_exec_benign", ""},
    {"memfd_exec", "Fileless execution via memfd_create"},
    {"memfd_exec_benign", ""},
    {"reverse_shell", "Shell with a network connection as a standard stream"},
    {"reverse_shell_benign", ""},
    {"curl_pipe_sh", "Download piped into a shell"},
    {"curl_pipe_sh_late_curl", "Download piped into a shell"},
    {"curl_pipe_grep", ""},
    {"exec_session", "Shell in an exec session"},
    {"exec_session_benign", ""},
    {"mmap_upper", "Executable mapped from the writable layer or a memfd,"
                   "Executable mapped from the writable layer or a memfd"},
    {"mmap_upper_benign", ""},
    {"ptrace_attach", "Process attached with ptrace,Process attached with ptrace"},
    {"ptrace_benign", ""},
    {"download_exec", "Downloaded file executed"},  /* sequences, their steps checked below */
    {"download_exec_benign", ""},
    {"drop_mmap", "Dropped file loaded as code"},
    {"drop_mmap_benign", ""},
};
#define NSTORIES (sizeof(stories) / sizeof(stories[0]))

static int run(const char *const *argv)
{
    return run_command(argv, out, sizeof(out), err, sizeof(err));
}

static void python_ok(const char *cmd, const char *target, int n, const char *const *names)
{
    const char *argv[NSTORIES + 8] = {PYTHON, PACKETS, cmd, target};
    for (int i = 0; i < n; i++)
        argv[4 + i] = names[i];
    argv[4 + n] = NULL;
    int rc = run(argv);
    if (rc != 0)
        fail_msg("gvisor_packets.py %s: exit %d (%s /usr/bin/python3 with python3-protobuf: scripts/setup.sh)\n%s%s",
                 cmd, rc, rc == 127 ? "no" : "needs", out, err);
}

static void test_schema_is_upstreams(void **state)
{
    (void)state;
    const char *argv[] = {PYTHON, PACKETS, "check-schema", SOURCE_DIR "/decoder/proto", NULL};
    if (run(argv) != 0)
        fail_msg("decoder/proto/gvisor/*.proto differ from google/gvisor 3c5eee17d:\n%s%s", out, err);
    assert_non_null(strstr(out, "check-schema: 24 messages as google/gvisor 3c5eee17dc45659fb86843531074f38e78e0cc35"));
}

/* The alerts of each story's container, "rule,rule" in id order. */
static void expect_alerts(const struct daemon *d)
{
    for (size_t i = 0; i < NSTORIES; i++) {
        char container[96], sql[512];
        snprintf(container, sizeof(container), "c2026-%s", stories[i].story);
        for (char *c = container; *c; c++)
            *c = *c == '_' ? '-' : *c;
        snprintf(sql, sizeof(sql), "SELECT coalesce(group_concat(rule, ','), '') FROM (SELECT rule FROM alerts WHERE "
                 "container_id = '%s' ORDER BY id)", container);
        char cmd[700];
        snprintf(cmd, sizeof(cmd), "%s", sql);
        const char *argv[] = {"/usr/bin/sqlite3", d->db, cmd, NULL};
        assert_int_equal(run(argv), 0);
        out[strcspn(out, "\n")] = '\0';
        if (strcmp(out, stories[i].rules) != 0)
            fail_msg("%s: alerts '%s', expected '%s'", stories[i].story, out, stories[i].rules);
    }
}

static void test_over_the_socket(void **state)
{
    struct daemon *d = *state;
    char alerts[400];
    snprintf(alerts, sizeof(alerts), "%s/alerts.json", d->dir);
    const char *args[] = {"--rules", RULES, "--alerts-out", alerts, "--alerts-rate", "0", NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    const char *names[NSTORIES + 1];
    for (size_t i = 0; i < NSTORIES; i++)
        names[i] = stories[i].story;
    names[NSTORIES] = "fields";
    python_ok("send", d->socket, (int)NSTORIES + 1, names);
    if (!daemon_wait_log(d, "closed (eof)", (int)NSTORIES + 1, 10000))
        fail_msg("connections did not close");
    assert_int_equal(daemon_stop(d), 0);
    expect_alerts(d);
    /* one JSON line per alert, the default rules' MITRE tags with them */
    long long n = dbq(d, "SELECT count(*) FROM alerts");
    assert_int_equal(n, 12 + 4);   /* the stories' 12, the fields story's 4 */
    char *log = daemon_read_log(d);
    free(log);
    FILE *fp = fopen(alerts, "r");
    assert_non_null(fp);
    long long lines = 0;
    for (int c; (c = fgetc(fp)) != EOF;)
        lines += c == '\n';
    fclose(fp);
    assert_int_equal(lines, n);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts WHERE rule = 'Drop and execute new binary in container' AND "
                            "tags LIKE '%%\"T1105\"%%' AND json_extract(output_fields, '$.\"proc.exe_ino\"') = 4242 "
                            "AND json_extract(output_fields, '$.\"proc.exe_ino.ctime_duration_proc_start\"') = "
                            "10000000002"), 2);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts WHERE rule = 'Shell with a network connection as a standard "
                            "stream' AND json_extract(output_fields, '$.\"proc.stdin.name\"') = "
                            "'10.0.0.2:40000->192.0.2.9:4444' AND json_extract(output_fields, "
                            "'$.\"gvisor.stdin.rport\"') = 4444"), 1);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts WHERE rule = 'Download piped into a shell' AND "
                            "(json_extract(output_fields, '$.\"gvisor.pipe_input.exepath\"') = '/usr/bin/curl' OR "
                            "json_extract(output_fields, '$.\"gvisor.pipe_output.exepath\"') = '/bin/sh')"), 2);
    /* the sequence's alert names its two steps' events: the write, then the mapping */
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts a JOIN events w ON w.id = json_extract(a.sequence, "
                            "'$.steps[0].event_id') JOIN events m ON m.id = json_extract(a.sequence, "
                            "'$.steps[1].event_id') WHERE a.rule = 'Dropped file loaded as code' AND w.msg_type = 7 "
                            "AND m.msg_type = 35 AND m.id = a.event_id AND json_extract(a.sequence, "
                            "'$.steps[0].name') = 'drop' AND json_extract(a.output_fields, '$.\"drop.fd.name\"') = "
                            "'/tmp/libx.so'"), 1);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts WHERE rule = 'Process attached with ptrace' AND "
                            "json_extract(output_fields, '$.\"evt.arg.request\"') IN ('PTRACE_ATTACH', 'PTRACE_SEIZE') "
                            "AND json_extract(output_fields, '$.\"evt.arg.pid\"') = 1"), 3);

    /* every new field in detail, as the independent encoder wrote it */
    static const char *const detail[] = {
        "msg_type = 3 AND json_extract(detail, '$.binary_overlayfs_upper') = 1 AND json_extract(detail, "
        "'$.binary_ino') = 4242 AND json_extract(detail, '$.binary_ctime.sec') = 1798999990 AND json_extract(detail, "
        "'$.binary_size') = 8000 AND json_extract(detail, '$.binary_nlink') = 1 AND json_extract(detail, "
        "'$.binary_sha1') = '0101010101010101010101010101010101010101' AND json_extract(detail, '$.execfn') = "
        "'./payload' AND json_extract(detail, '$.stdin.socket.remote.ip') = 'c0000209' AND json_extract(detail, "
        "'$.stdin.socket.remote.port') = 23569 AND json_extract(detail, '$.stdout.path') = 'pipe:[9]' AND "
        "json_extract(detail, '$.pipe_output_proc.context_data.thread_group_id') = 1 AND parent_thread_group_id = 1",
        "msg_type = 3 AND json_extract(detail, '$.binary_in_memfd') = 1 AND is_exec_session = 1",
        "msg_type = 35 AND json_extract(detail, '$.mapped_path') = '/tmp/libevil.so' AND json_extract(detail, "
        "'$.mapped_ino') = 77 AND json_extract(detail, '$.overlayfs_upper') = 1",
        "msg_type = 36 AND sysno = 9 AND json_extract(detail, '$.prot') = 5 AND json_extract(detail, '$.length') = 8192 "
        "AND result = 139637976727552",
        "msg_type = 37 AND sysno = 50 AND json_extract(detail, '$.backlog') = 128 AND json_extract(detail, "
        "'$.address') LIKE '0200115c%%' AND json_extract(detail, '$.socket_type') = 1",
        "msg_type = 38 AND sysno = 101 AND json_extract(detail, '$.request') = 16 AND json_extract(detail, '$.pid') = 1",
    };
    for (size_t i = 0; i < sizeof(detail) / sizeof(detail[0]); i++)
        if (dbq(d, "SELECT count(*) FROM events WHERE container_id = 'c2026-fields' AND %s", detail[i]) != 1)
            fail_msg("no event where %s", detail[i]);

    /* the execs view's new columns */
    static const struct {
        const char *where, *want;
    } execs[] = {
        {"binary_path = '/opt/tool/payload' AND container_id = 'c2026-fields'", "upper|0|0|||1|bash"},
        {"binary_path = '/memfd:m (deleted)'", "none|1|1||||"},
        {"binary_path = '/usr/bin/ls' AND container_id = 'c2026-drop-exec-benign'", "lower|0|0||||"},
        {"binary_path = '/bin/sh' AND container_id = 'c2026-curl-pipe-sh'", "||0|2|curl||"},
        {"binary_path = '/bin/bash' AND container_id = 'c2026-exec-session'", "||1||||"},
    };
    for (size_t i = 0; i < sizeof(execs) / sizeof(execs[0]); i++) {
        char sql[512];
        snprintf(sql, sizeof(sql), "SELECT coalesce(layer, '') || '|' || coalesce(in_memfd, '') || '|' || "
                 "coalesce(exec_session, '') || '|' || coalesce(pipe_input_pid, '') || '|' || coalesce(pipe_input_name, "
                 "'') || '|' || coalesce(pipe_output_pid, '') || '|' || coalesce(pipe_output_name, '') FROM execs WHERE %s",
                 execs[i].where);
        const char *argv[] = {"/usr/bin/sqlite3", d->db, sql, NULL};
        assert_int_equal(run(argv), 0);
        out[strcspn(out, "\n")] = '\0';
        if (strcmp(out, execs[i].want) != 0)
            fail_msg("execs where %s: '%s', expected '%s'", execs[i].where, out, execs[i].want);
    }

    /* seccheckd events, readable */
    const char *ev[] = {SECCHECKD_BIN, "events", "--db", d->db, "--container", "c2026-fields", NULL};
    assert_int_equal(run(ev), 0);
    static const char *const lines_want[] = {
        " exec /opt/tool/payload payload [upper] stdin=socket:10.0.0.2:40000->192.0.2.9:4444 stdout=pipe->bash[1]\n",
        " exec \"/memfd:m (deleted)\" \"memfd:m (deleted)\" [memfd]\n",
        " mmap exec /tmp/libevil.so [upper]\n",
        " mmap 3</tmp/libevil.so> 8192 PROT_READ|PROT_EXEC MAP_PRIVATE = 0x7f0000000000\n",
        " listen 0.0.0.0:4444 backlog=128 = 0\n",
        " ptrace PTRACE_ATTACH pid=1 = 0\n",
    };
    for (size_t i = 0; i < sizeof(lines_want) / sizeof(lines_want[0]); i++)
        if (!strstr(out, lines_want[i]))
            fail_msg("no line ending '%s' in:\n%s%s", lines_want[i], out, err);
}

/* The rules' summary on stderr: "NAME: N alert(s)" with N > 0, "; "-joined
 * (a sequence's line ends in " [sequence]": left out). */
static const char *fired(const char *summary)
{
    static char list[4096];
    size_t len = 0;
    list[0] = '\0';
    for (const char *line = summary; *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        const char *colon = memmem(line, n, ": ", 2);
        size_t shown = n >= 11 && memcmp(line + n - 11, " [sequence]", 11) == 0 ? n - 11 : n;
        if (colon && strncmp(line, "seccheckd rules:", 16) != 0 && strtoul(colon + 2, NULL, 10) > 0)
            len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%.*s", len ? "; " : "", (int)shown, line);
        line += n + (end ? 1 : 0);
    }
    return list;
}

static void test_rules_test_trace(void **state)
{
    struct daemon *d = *state;   /* its directory only */
    const char *names[NSTORIES];
    for (size_t i = 0; i < NSTORIES; i++)
        names[i] = stories[i].story;
    python_ok("trace", d->dir, (int)NSTORIES, names);
    for (size_t i = 0; i < NSTORIES; i++) {
        char trace[512], want[512] = "";
        snprintf(trace, sizeof(trace), "%s/%s.trace", d->dir, stories[i].story);
        const char *argv[] = {SECCHECKD_BIN, "rules", "test", RULES, "--trace", trace, "--alerts-rate", "0", NULL};
        assert_int_equal(run(argv), 0);
        if (stories[i].rules[0]) {
            const char *comma = strchr(stories[i].rules, ',');
            size_t n = comma ? (size_t)(comma - stories[i].rules) : strlen(stories[i].rules);
            snprintf(want, sizeof(want), "%.*s: %s", (int)n, stories[i].rules, comma ? "2 alerts" : "1 alert");
        }
        if (strcmp(fired(err), want) != 0)
            fail_msg("%s: rules test says '%s', expected '%s'", stories[i].story, fired(err), want);
    }
}

static const char *runsc_script(const struct daemon *d, const char *name, const char *body)
{
    static char path[400];
    snprintf(path, sizeof(path), "%s/%s", d->dir, name);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fprintf(fp, "#!/bin/sh\n%s\n", body);
    fclose(fp);
    assert_int_equal(chmod(path, 0755), 0);
    return path;
}

static void test_config_for_each_runsc(void **state)
{
    struct daemon *d = *state;
    /* release-20260817.0: every rule gets what it reads, nothing to warn of */
    const char *cfg[] = {SECCHECKD_BIN, "gvisor-config", "--runsc-metadata", METADATA_2026, "--rules", RULES, NULL};
    assert_int_equal(run(cfg), 0);
    assert_string_equal(err, "");
    assert_non_null(strstr(out, "{\"name\": \"sentry/execve\", \"optional_fields\": [\"binary_info\", \"fd_info\", "
                                "\"pipe_proc_info\"], \"context_fields\": [\"time\", \"thread_id\", \"group_id\", "
                                "\"thread_group_start_time\", \"container_id\", \"credentials\", \"cwd\", "
                                "\"process_name\", \"parent_thread_group_id\", \"is_exec_session\"]}"));
    assert_non_null(strstr(out, "{\"name\": \"sentry/mmap\", "));
    assert_non_null(strstr(out, "{\"name\": \"syscall/ptrace/exit\", "));
    assert_null(strstr(out, "syscall/sysno/101/"));   /* the raw ptrace point is runsc 2022-12's */
    char cfg_path[400];
    snprintf(cfg_path, sizeof(cfg_path), "%s/cfg2026.json", d->dir);
    write_file(cfg_path, out);
    const char *check[] = {SECCHECKD_BIN, "rules", "check", "--runsc-metadata", METADATA_2026, "--pod-init",
                           cfg_path, RULES, NULL};
    assert_int_equal(run(check), 0);
    assert_null(strstr(err, "warning"));
    assert_non_null(strstr(out, "cfg2026.json: enables everything the enabled rules need"));
    /* the config for runsc 2022-12 against release-20260817.0: what it does not enable */
    const char *old[] = {SECCHECKD_BIN, "rules", "check", "--runsc-metadata", METADATA_2026, "--pod-init",
                         SOURCE_DIR "/configs/pod-init-default-rules.json", RULES, NULL};
    assert_int_equal(run(old), 0);
    assert_non_null(strstr(err, "warning: rule 'Executable mapped from the writable layer or a memfd' needs the point "
                                "sentry/mmap, which " SOURCE_DIR "/configs/pod-init-default-rules.json does not enable"));
    assert_non_null(strstr(err, "warning: rule 'Shell in an exec session' reads the context field is_exec_session at "
                                "sentry/execve, which"));
    /* a runsc that prints that metadata: asked, named by its version */
    char body[600];
    snprintf(body, sizeof(body), "case \"$1\" in --version) echo 'runsc version release-20260817.0';;\n"
             "trace) cat %s;; *) exit 2;; esac", METADATA_2026);
    const char *fake = runsc_script(d, "runsc", body);
    const char *asked[] = {SECCHECKD_BIN, "gvisor-config", "--runsc", fake, "--rules", RULES, NULL};
    assert_int_equal(run(asked), 0);
    assert_string_equal(err, "");
    assert_non_null(strstr(out, "syscall/ptrace/exit"));
    /* with runsc first in PATH and no --runsc, that one too */
    char path[2400], saved[1024];
    snprintf(saved, sizeof(saved), "%s", getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    snprintf(path, sizeof(path), "%s:%s", d->dir, saved);
    setenv("PATH", path, 1);
    const char *implicit[] = {SECCHECKD_BIN, "rules", "check", RULES, NULL};
    int rc = run(implicit);
    setenv("PATH", saved, 1);
    assert_int_equal(rc, 0);
    assert_null(strstr(err, "needs a newer runsc"));
    /* a runsc that fails: exit 1, named; --runsc 2022-12 said as the way out */
    const char *broken = runsc_script(d, "runsc", "echo 'runsc: cannot open /run/runsc: Permission denied' >&2; exit 128");
    const char *fails[] = {SECCHECKD_BIN, "gvisor-config", "--runsc", broken, "--rules", RULES, NULL};
    assert_int_equal(run(fails), 1);
    assert_non_null(strstr(err, "trace metadata exited with 128: runsc: cannot open /run/runsc: Permission denied "
                                "(--runsc 2022-12 writes a config for runsc 0.0~20221219)"));
    assert_string_equal(out, "");
    const char *both[] = {SECCHECKD_BIN, "gvisor-config", "--runsc", "2022-12", "--runsc-metadata", METADATA_2026, NULL};
    assert_int_equal(run(both), 2);
    assert_non_null(strstr(err, "--runsc and --runsc-metadata both name the target: give one"));
    const char *both_check[] = {SECCHECKD_BIN, "rules", "check", "--runsc=2022-12", "--runsc-metadata", METADATA_2026,
                                RULES, NULL};
    assert_int_equal(run(both_check), 2);
    const char *no_value[] = {SECCHECKD_BIN, "rules", "check", "--runsc", NULL};
    assert_int_equal(run(no_value), 2);
    assert_non_null(strstr(err, "seccheckd rules: --runsc needs a PATH"));
}

/* This host's runsc (Debian's 0.0~20221219) says what the built-in set says. */
static void test_host_runsc_is_2022(void **state)
{
    (void)state;
    static char builtin[sizeof(out)];
    const char *b[] = {SECCHECKD_BIN, "gvisor-config", "--runsc", "2022-12", "--points", "all", "--rules", RULES, NULL};
    assert_int_equal(run(b), 0);
    memcpy(builtin, out, sizeof(out));
    const char *h[] = {SECCHECKD_BIN, "gvisor-config", "--runsc", "/usr/bin/runsc", "--points", "all", "--rules",
                       RULES, NULL};
    if (access("/usr/bin/runsc", X_OK) != 0)
        fail_msg("/usr/bin/runsc is not installed (scripts/setup.sh installs it)");
    assert_int_equal(run(h), 0);
    assert_string_equal(out, builtin);
    assert_non_null(strstr(err, "needs a newer runsc than /usr/bin/runsc (runsc version 0.0~20221219.0): the point "
                                "sentry/mmap (runsc release-20260714.0 on)"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schema_is_upstreams),
        cmocka_unit_test_setup_teardown(test_over_the_socket, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_rules_test_trace, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_config_for_each_runsc, daemon_setup, daemon_teardown),
        cmocka_unit_test(test_host_runsc_is_2022),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
