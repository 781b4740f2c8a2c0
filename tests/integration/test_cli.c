/* Integration: how seccheckd starts, refuses and explains itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon.h"
#include "listener.h"

/* Runs seccheckd with args to completion; returns exit code, output in out. */
/* Runs binary with args (NULL-terminated) in dir (NULL: here) to
 * completion, at most 10 s; returns its exit code, stdout and stderr in out. */
static int run_program(const char *dir, const char *binary, const char *const *args, char *out, size_t outlen)
{
    char cmd[4096];
    size_t len = (size_t)snprintf(cmd, sizeof(cmd), "%s%s%stimeout 10 %s", dir ? "cd '" : "", dir ? dir : "",
                                  dir ? "' && " : "", binary);
    for (int i = 0; args[i]; i++)
        len += (size_t)snprintf(cmd + len, sizeof(cmd) - len, " '%s'", args[i]);
    snprintf(cmd + len, sizeof(cmd) - len, " 2>&1");
    assert_true(len < sizeof(cmd) - 8);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, outlen - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* seccheckd with args: its exit code, stdout and stderr in out. */
static int run_capture(const char *const *args, char *out, size_t outlen)
{
    return run_program(NULL, SECCHECKD_BIN, args, out, outlen);
}

static void test_help_and_version(void **state)
{
    (void)state;
    char out[32768];   /* --help is over 8 KiB */
    const char *help[] = {"--help", NULL};
    assert_int_equal(run_capture(help, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "--socket PATH"));
    assert_non_null(strstr(out, "/tmp/seccheck.sock"));
    assert_non_null(strstr(out, "--sink sqlite|discard|record"));
    assert_non_null(strstr(out, "--config FILE"));
    const char *version[] = {"--version", NULL};
    assert_int_equal(run_capture(version, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "seccheckd "));
}

static void test_bad_options_explain_themselves(void **state)
{
    (void)state;
    char out[8192];
    const char *bogus[] = {"--bogus", NULL};
    assert_int_equal(run_capture(bogus, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "--help"));
    const char *zero[] = {"--batch-size", "0", NULL};
    assert_int_equal(run_capture(zero, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "--batch-size: expected a whole number from 1"));
    const char *sink[] = {"--sink", "kafka", NULL};
    assert_int_equal(run_capture(sink, out, sizeof(out)), 2);   /* a usage error, caught before starting */
    assert_non_null(strstr(out, "--sink: expected sqlite, discard, record, ndjson or text"));
    const char *db[] = {"--db", "/nonexistent-dir/x.db", "--socket", "/tmp/unused-seccheckd.sock", NULL};
    assert_int_equal(run_capture(db, out, sizeof(out)), 1);
    assert_non_null(strstr(out, "/nonexistent-dir/x.db"));
}

static void test_refuses_to_replace_a_regular_file(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    FILE *f = fopen(d.socket, "w");
    fputs("precious", f);
    fclose(f);
    assert_false(daemon_start(&d, SECCHECKD_BIN, NULL));
    assert_int_equal(d.exit_status, 1);
    char *log = daemon_read_log(&d);
    assert_non_null(strstr(log, "is not a socket"));
    free(log);
    f = fopen(d.socket, "r");
    char buf[16] = {0};
    assert_non_null(fgets(buf, sizeof(buf), f));
    fclose(f);
    assert_string_equal(buf, "precious");
    daemon_cleanup(&d);
}

static void test_replaces_a_stale_socket(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    /* A socket file left by a process that died: bound, never unlinked. */
    int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strcpy(addr.sun_path, d.socket);
    assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    close(fd);
    assert_true(daemon_start(&d, SECCHECKD_BIN, NULL));
    struct stat st;
    assert_int_equal(stat(d.socket, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0660);
    assert_int_equal(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}

static void test_refuses_a_live_listener(void **state)
{
    (void)state;
    struct daemon first, second;
    daemon_prepare(&first);
    assert_true(daemon_start(&first, SECCHECKD_BIN, NULL));
    daemon_prepare(&second);
    strcpy(second.socket, first.socket);
    assert_false(daemon_start(&second, SECCHECKD_BIN, NULL));
    assert_int_equal(second.exit_status, 1);
    char *log = daemon_read_log(&second);
    assert_non_null(strstr(log, "another process is listening"));
    free(log);
    /* The first daemon still serves (a probe like the second's), and then
     * a sandbox, which takes connection id 1: the probes took none. */
    int fd = listener_connect(first.socket);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(replay_file(first.socket, TRACES_DIR "/exec_loop.trace"), 0);
    assert_true(daemon_wait_log(&first, "connection 1 closed (eof)", 1, 10000));
    assert_int_equal(daemon_stop(&first), 0);
    /* Neither probe is a sandbox: not in the log, the summary or the
     * connections table. */
    log = daemon_read_log(&first);
    if (strstr(log, "not a gVisor") || strstr(log, "in_handshake") || daemon_log_count(&first, "connection ") != 2 ||
        !strstr(log, "connection 1 opened: peer pid ") || !strstr(log, ", client version 1\n"))
        fail_msg("the probes show in the first daemon's log:\n%s", log);
    assert_int_equal(summary_number(log, "summary: connections", "connections "), 1);
    assert_int_equal(summary_number(log, "summary: connections", "failed handshakes "), 0);
    free(log);
    assert_int_equal(db_query_int(first.db, "SELECT count(*) FROM connections"), 1);
    assert_int_equal(db_query_int(first.db, "SELECT max(id) FROM connections"), 1);
    daemon_cleanup(&second);
    daemon_cleanup(&first);
}

/* A peer that is not runsc's remote sink is told apart in the log: what
 * was expected and what came. */
static void test_bad_handshake_says_what_came(void **state)
{
    struct daemon *d = *state;
    assert_true(daemon_start(d, SECCHECKD_BIN, NULL));
    static const struct {
        const char *bytes;
        size_t len;
        const char *got;
    } cases[] = {
        {"GET / HTTP/1.1\r\nHost: x\r\n", 25,
         "got 25 bytes: 47 45 54 20 2f 20 48 54 54 50 2f 31 2e 31 0d 0a \"GET / HTTP/1.1..\"...; closing"},
        {"\x08\x00", 2, "got a Handshake of version 0 (2 bytes: 08 00 \"..\"); closing"},
        {"", 0, "got an empty packet; closing"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int fd = connect_raw(d->socket, cases[i].bytes, cases[i].len);
        assert_true(closed_by_peer(fd, 5000));
        close(fd);
        char want[300];
        snprintf(want, sizeof(want), "connection %zu: not a gVisor seccheck client: expected a Handshake message of "
                 "version 1 or later (runsc's remote sink), %s", i + 1, cases[i].got);
        if (!daemon_wait_log(d, want, 1, 5000)) {
            char *log = daemon_read_log(d);
            fail_msg("expected '%s' in:\n%s", want, log);
        }
    }
    assert_int_equal(daemon_stop(d), 0);
    char *log = daemon_read_log(d);
    assert_int_equal(summary_number(log, "summary: connections", "failed handshakes "), 3);
    free(log);
}

/* The loop's turns and stalls are for developers: in the summary at
 * --log-level debug only, in the metrics always. */
static void test_loop_turns_at_debug_only(void **state)
{
    struct daemon *d = *state;
    char metrics[400];
    snprintf(metrics, sizeof(metrics), "unix:%s/metrics.sock", d->dir);
    const char *args[] = {"--metrics-listen", metrics, NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    assert_int_equal(replay_file(d->socket, TRACES_DIR "/exec_loop.trace"), 0);
    assert_true(metric_scrape(metrics + 5, "seccheckd_loop_turns_total") > 0);
    assert_true(metric_scrape(metrics + 5, "seccheckd_loop_preempted_turns_total") >= 0);
    assert_true(metric_scrape(metrics + 5, "seccheckd_loop_stalls_over_1ms_total") >= 0);
    assert_true(metric_scrape(metrics + 5, "seccheckd_loop_own_stalls_over_1ms_total") >= 0);
    assert_true(metric_scrape(metrics + 5, "seccheckd_loop_longest_turn_seconds") > 0);
    assert_int_equal(daemon_stop(d), 0);
    assert_int_equal(daemon_log_count(d, "summary: loop turns"), 0);
    assert_int_equal(daemon_log_count(d, "summary: 1219 received"), 1);
    const char *debug[] = {"--log-level", "debug", NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, debug));
    assert_int_equal(daemon_stop(d), 0);
    assert_int_equal(daemon_log_count(d, "summary: loop turns"), 1);
}

/* -h is --help everywhere, and the usage block names every command. */
static void test_h_and_help_name_every_command(void **state)
{
    (void)state;
    char out[16384];
    const char *h[] = {"-h", NULL};
    assert_int_equal(run_capture(h, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "Usage: seccheckd [OPTIONS]"));
    for (const char *const *cmd = (const char *const[]){"verify", "export", "events", "forward", "gvisor-config", "types",
                                                                NULL}; *cmd; cmd++) {
        char want[64];
        snprintf(want, sizeof(want), "       seccheckd %s ", *cmd);
        if (!strstr(out, want))
            fail_msg("--help does not list '%s': %s", *cmd, out);
        const char *sub_h[] = {*cmd, "-h", NULL};
        if (run_capture(sub_h, out, sizeof(out)) != 0 || !strstr(out, "Usage: seccheckd "))
            fail_msg("seccheckd %s -h: %s", *cmd, out);
        assert_int_equal(run_capture(h, out, sizeof(out)), 0);
    }
    assert_int_equal(run_program(NULL, DUMMY_BIN, h, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "Usage: seccheck-dummy"));
    assert_int_equal(run_program(NULL, LOADGEN_BIN, h, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "Usage: seccheck-loadgen"));
}

/* Every usage error exits 2, and every line it prints starts with the
 * program's name as typed ("seccheckd export:"), never argv[0]'s path. */
static void test_usage_errors_exit_2_under_the_program_name(void **state)
{
    struct daemon *d = *state;
    char short_key[400];
    snprintf(short_key, sizeof(short_key), "%s/short.key", d->dir);
    FILE *f = fopen(short_key, "w");
    assert_non_null(f);
    fputs("abc", f);
    fclose(f);
    const struct {
        const char *binary, *prog;
        const char *args[8];
        const char *want;
    } cases[] = {
        {SECCHECKD_BIN, "seccheckd", {"--bogus"}, "seccheckd: unknown option '--bogus'"},
        {SECCHECKD_BIN, "seccheckd", {"-x"}, "seccheckd: unknown option '-x'"},
        {SECCHECKD_BIN, "seccheckd", {"--socket"}, "seccheckd: option '--socket' needs a value"},
        {SECCHECKD_BIN, "seccheckd", {"--help=yes"}, "seccheckd: option '--help' takes no value"},
        /* numbers are decimal: 010 is ten, never octal eight, and 0x10 is no number */
        {SECCHECKD_BIN, "seccheckd", {"--batch-size", "0x10"}, "seccheckd: --batch-size: expected a whole number"},
        {LOADGEN_BIN, "seccheck-loadgen", {"--connections", "0x2"}, "seccheck-loadgen: --connections: expected a whole number"},
        {SECCHECKD_BIN, "seccheckd", {"--socket", d->socket, "--db", d->db, "--metrics-listen", "0.0.0.0:9464"},
         "seccheckd: --metrics-listen 0.0.0.0:9464: 0.0.0.0 is not a loopback address"},
        {SECCHECKD_BIN, "seccheckd", {"--socket", d->socket, "--db", d->db, "--metrics-listen", "127.0.0.1:99999"},
         "seccheckd: --metrics-listen 127.0.0.1:99999: expected HOST:PORT"},
        {SECCHECKD_BIN, "seccheckd", {"--socket", d->socket, "--db", d->db, "--key-file", short_key},
         "seccheckd: --key-file: key file"},
        {SECCHECKD_BIN, "seccheckd export", {"export", "--bogus"}, "seccheckd export: unknown option '--bogus'"},
        {SECCHECKD_BIN, "seccheckd export", {"export", "--conn", "abc"},
         "seccheckd export: --conn: expected a whole number from 1"},
        {SECCHECKD_BIN, "seccheckd verify", {"verify", "--db"}, "seccheckd verify: option '--db' needs a value"},
        {SECCHECKD_BIN, "seccheckd verify", {"verify", "--to", "postgresql:///x", "--bogus"},
         "seccheckd verify: unknown option '--bogus'"},
        {SECCHECKD_BIN, "seccheckd forward", {"forward", "--bogus"}, "seccheckd forward: unknown option '--bogus'"},
        {SECCHECKD_BIN, "seccheckd gvisor-config", {"gvisor-config", "--bogus"},
         "seccheckd gvisor-config: unknown option '--bogus'"},
        {DUMMY_BIN, "seccheck-dummy", {"--bogus"}, "seccheck-dummy: unknown option '--bogus'"},
        {DUMMY_BIN, "seccheck-dummy", {"a.sock", "b.sock"}, "seccheck-dummy: unexpected argument 'b.sock'"},
        {LOADGEN_BIN, "seccheck-loadgen", {"--bogus"}, "seccheck-loadgen: unknown option '--bogus'"},
        {LOADGEN_BIN, "seccheck-loadgen", {"--socket"}, "seccheck-loadgen: option '--socket' needs a value"},
    };
    char out[8192];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = run_program(NULL, cases[i].binary, cases[i].args, out, sizeof(out));
        if (rc != 2 || strncmp(out, cases[i].want, strlen(cases[i].want)) != 0)
            fail_msg("case %zu: expected exit 2 and a first line starting '%s', got exit %d: %s", i, cases[i].want,
                     rc, out);
        for (const char *line = out; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : "") {
            char try_prog[64];
            snprintf(try_prog, sizeof(try_prog), "Try '%s --help'.", cases[i].prog);
            if (strncmp(line, cases[i].prog, strlen(cases[i].prog)) != 0 &&
                strncmp(line, try_prog, strlen(try_prog)) != 0)
                fail_msg("case %zu: a line not under '%s': %s", i, cases[i].prog, line);
        }
        assert_null(strstr(out, "----"));
    }
}

/* Every numeric option, on the command line: its lowest and highest values
 * are taken, one step beyond either is refused (exit 2) with a message
 * naming the option, its limit and the value. --version after the option
 * exits 0 once everything before it parsed. */
static void test_every_numeric_option_has_limits(void **state)
{
    (void)state;
    const struct {
        const char *option, *lowest, *highest, *below, *above, *limit;
    } limits[] = {
        {"ndjson-keep", "1", "1000", "0", "1001", "from 1 to 1000"},
        {"batch-size", "1", "1000000", "0", "1000001", "from 1 to 1000000"},
        {"flush-ms", "1", "60000", "0", "60001", "from 1 to 60000"},
        {"queue-max", "1", "4096", "0", "4097", "from 1 to 4096"},
        {"max-message", "10240", "16777216", "10239", "16777217", "from 10240 to 16777216"},
        {"max-connections", "1", "1000000", "0", "1000001", "from 1 to 1000000"},
        {"handshake-timeout-ms", "1", "3600000", "0", "3600001", "from 1 to 3600000"},
        {"read-budget", "1", "1000000", "0", "1000001", "from 1 to 1000000"},
        {"drain-timeout-ms", "0", "3600000", "-1", "3600001", "from 0 to 3600000"},
        {"busy-timeout-ms", "0", "3600000", "-1", "3600001", "from 0 to 3600000"},
        {"busy-timeout-ms", "0", "3600000", "-1", "18446744073709551616", "from 0 to 3600000"},
        {"retain", "0", "36500d", "-1", "36501d", "at most 36500d"},
        {"retain", "0", "3153600000", "-1s", "1000000d", "at most 36500d"},
        {"retain", "0", "876000h", "-1", "213503982334602d", "at most 36500d"},
        {"max-db-size", "1M", "256T", "1048575", "257T", "from 1M to 256T"},
        {"max-db-size", "0", "281474976710656", "1023K", "281474976710657", "from 1M to 256T"},
        {"ndjson-max-size", "0", "256T", "-1", "262145G", "at most 256T"},
        {"socket-mode", "0", "0777", "-1", "01000", "from 0 to 0777"},
        {"allow-uid", "0", "4294967294", "-1", "4294967295", "below 4294967295"},
        {"allow-uid", "0", "0,4294967294", "-1", "4294967296", "below 4294967295"},
        {"socket-group", "0", "4294967294", "-1", "4294967295", "below 4294967295"},
    };
    char out[8192];
    for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
        char option[64];
        snprintf(option, sizeof(option), "--%s", limits[i].option);
        const char *ok_values[] = {limits[i].lowest, limits[i].highest};
        for (int k = 0; k < 2; k++) {
            const char *args[] = {option, ok_values[k], "--version", NULL};
            if (run_capture(args, out, sizeof(out)) != 0)
                fail_msg("%s %s: expected to be taken, got: %s", option, ok_values[k], out);
        }
        const char *bad_values[] = {limits[i].below, limits[i].above};
        for (int k = 0; k < 2; k++) {
            const char *args[] = {option, bad_values[k], "--version", NULL};
            int rc = run_capture(args, out, sizeof(out));
            char value[64];
            snprintf(value, sizeof(value), "'%s'", bad_values[k]);
            if (rc != 2 || strncmp(out, "seccheckd: ", 11) != 0 || !strstr(out, option) ||
                !strstr(out, limits[i].limit) || !strstr(out, value))
                fail_msg("%s %s: expected exit 2 naming %s, '%s' and %s; got exit %d: %s", option, bad_values[k],
                         option, limits[i].limit, value, rc, out);
        }
    }
}

/* "1 connection", "1 batch": the singular for one. */
static void test_singular_for_one(void **state)
{
    struct daemon *d = *state;
    const char *argv[] = {DUMMY_BIN, d->socket, NULL};
    assert_true(daemon_spawn(d, argv, "listening on"));
    assert_int_equal(replay_file(d->socket, TRACES_DIR "/exec_loop.trace"), 0);
    assert_true(daemon_wait_log(d, "closed", 1, 10000));
    assert_int_equal(daemon_stop(d), 0);
    char *log = daemon_read_log(d);
    if (!strstr(log, "total: 1 connection, 1219 messages, "))
        fail_msg("expected 'total: 1 connection, 1219 messages': %s", log);
    free(log);
}

/* The summary's counts are what the tables hold: a connection closing
 * after its events' batch went out makes a second sink write holding no
 * events, which adds no row to the batches table. */
static void test_summary_does_not_miscount_batches(void **state)
{
    struct daemon *d = *state;
    const char *args[] = {"--flush-ms", "50", NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    int fd = replay_open(d->socket, 1);
    assert_true(fd >= 0);
    uint8_t pkt[8] = {8, 0, 1, 0, 0, 0, 0, 0};
    send_bytes(fd, pkt, sizeof(pkt));
    sleep_ms(400);   /* the event's batch is written */
    close(fd);
    assert_true(daemon_wait_log(d, "connection 1 closed", 1, 10000));
    sleep_ms(400);   /* and the close in a write of its own */
    assert_int_equal(daemon_stop(d), 0);
    long long rows = db_query_int(d->db, "SELECT count(*) FROM batches");
    assert_int_equal(rows, 1);
    char *log = daemon_read_log(d);
    const char *line = strstr(log, "seccheckd: summary: connections ");
    assert_non_null(line);
    const char *batches = strstr(line, ", batches ");
    const char *nl = strchr(line, '\n');
    assert_non_null(batches);
    assert_true(!nl || batches < nl);
    if (atoll(batches + strlen(", batches ")) != rows)
        fail_msg("the summary says%.*s, the batches table holds %lld", (int)(nl ? nl - batches : 40), batches + 1,
                 rows);
    free(log);
}

/* --record-dir with a trailing '/' names the same files, no "//". */
static void test_record_dir_trailing_slash(void **state)
{
    struct daemon *d = *state;
    char dir[400];
    snprintf(dir, sizeof(dir), "%s/traces/", d->dir);
    const char *args[] = {"--sink", "record", "--record-dir", dir, NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    assert_int_equal(replay_file(d->socket, TRACES_DIR "/exec_loop.trace"), 0);
    assert_true(daemon_wait_log(d, "record: connection 1 written", 1, 10000));
    assert_int_equal(daemon_stop(d), 0);
    char *log = daemon_read_log(d);
    char want[512];
    snprintf(want, sizeof(want), "%s/traces/client-0001 (1219 messages)", d->dir);
    if (strstr(log, "//client-") || !strstr(log, want))
        fail_msg("expected '%s' and no '//': %s", want, log);
    free(log);
    char file[512];
    snprintf(file, sizeof(file), "%s/traces/client-0001", d->dir);
    assert_int_equal(access(file, R_OK), 0);
}

/* The Python baseline listener parses its arguments: --help prints usage
 * (exit 0, no socket named "--help"), an unknown option exits 2. */
static void test_python_dummy_arguments(void **state)
{
    struct daemon *d = *state;
    char out[8192];
    const char *help[] = {DUMMY_PY, "--help", NULL};
    int rc = run_program(d->dir, "python3", help, out, sizeof(out));
    char stray[400];
    snprintf(stray, sizeof(stray), "%s/--help", d->dir);
    bool made_socket = access(stray, F_OK) == 0;
    if (made_socket)
        unlink(stray);
    if (rc != 0 || made_socket || !strstr(out, "usage: "))
        fail_msg("--help: exit %d, %s socket named --help: %s", rc, made_socket ? "a" : "no", out);
    const char *bogus[] = {DUMMY_PY, "--bogus", NULL};
    rc = run_program(d->dir, "python3", bogus, out, sizeof(out));
    snprintf(stray, sizeof(stray), "%s/--bogus", d->dir);
    made_socket = access(stray, F_OK) == 0;
    if (made_socket)
        unlink(stray);
    if (rc != 2 || !strstr(out, "--bogus"))
        fail_msg("--bogus: expected exit 2 naming it, got exit %d: %s", rc, out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_and_version),
        cmocka_unit_test(test_bad_options_explain_themselves),
        cmocka_unit_test(test_refuses_to_replace_a_regular_file),
        cmocka_unit_test(test_replaces_a_stale_socket),
        cmocka_unit_test(test_refuses_a_live_listener),
        cmocka_unit_test_setup_teardown(test_bad_handshake_says_what_came, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_loop_turns_at_debug_only, daemon_setup, daemon_teardown),
        cmocka_unit_test(test_h_and_help_name_every_command),
        cmocka_unit_test_setup_teardown(test_usage_errors_exit_2_under_the_program_name, daemon_setup, daemon_teardown),
        cmocka_unit_test(test_every_numeric_option_has_limits),
        cmocka_unit_test_setup_teardown(test_singular_for_one, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_summary_does_not_miscount_batches, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_record_dir_trailing_slash, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_python_dummy_arguments, daemon_setup, daemon_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
