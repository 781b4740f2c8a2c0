/* Integration: `seccheckd alerts --db`, over a database a real daemon filled
 * with --rules: the table (one row per alert, columns in place, hostile text
 * escaped), --json (the very lines --alerts-out wrote, a sequence's steps and
 * evicted partial matches included), the filters against
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
#include "gvisor/container.pb-c.h"
#include "gvisor/sentry.pb-c.h"
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
    assert_true(strncmp(r.out, "ID      TIME (UTC)", 18) == 0);
    assert_non_null(strstr(r.out, "PRIORITY       RULE"));
    /* A cat row: its id, time, priority, rule, container, then the
     * rendered text. */
    const char *row = strstr(r.out, "Critical       Cat opens");
    assert_non_null(row);
    const char *line = row;
    while (line > r.out && line[-1] != '\n')
        line--;
    long long id = atoll(line);
    assert_int_equal(dbq(d, "SELECT rule = 'Cat opens' FROM alerts WHERE id = %lld", id), 1);
    line += 8;   /* the ID column */
    assert_true(line[4] == '-' && line[10] == 'T' && line[23] == 'Z');   /* 2026-11-30T00:30:58.868Z */
    assert_non_null(strstr(row, "runsc-236711"));
    const char *output = strstr(row, "cat opened ");
    assert_non_null(output);
    assert_true(output < strchr(row, '\n'));
    assert_null(strstr(r.out, ": Critical cat opened"));   /* the prefix is the columns' */
    run_free(&r);
}

/* What --alerts-out wrote at path (at most OUT_MAX - 1 bytes), to free. */
static char *read_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *text = malloc(OUT_MAX);
    assert_non_null(text);
    size_t n = fread(text, 1, OUT_MAX - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
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
    char *written = read_lines(out);
    assert_int_equal(count_lines(r.out), OPENAT_EXITS + CAT_OPENS);
    if (strcmp(r.out, written) != 0)
        fail_msg("--json differs from --alerts-out:\n%.400s\n---\n%.400s", r.out, written);
    free(written);
    run_free(&r);
}

/* A sequence and a rule beside it, for the sequence's keys in the line. */
static const char sequence_rules_yaml[] =
    "- sequence: Written then run\n"
    "  desc: a file written, then run as a program\n"
    "  within: 1h\n"
    "  steps:\n"
    "    - name: write\n"
    "      condition: evt.type in (open, openat) and evt.is_open_write = true\n"
    "    - name: run\n"
    "      condition: evt.type = execve and evt.res = SUCCESS and proc.exepath = %write.fd.name\n"
    "  output: \"%write.fd.name run as %proc.cmdline\"\n"
    "  priority: CRITICAL\n"
    "- rule: Any exec\n"
    "  desc: every program run\n"
    "  condition: evt.type = execve and evt.res = SUCCESS\n"
    "  output: \"ran %proc.exepath\"\n"
    "  priority: NOTICE\n";

/* gvisor_packets.py's STORY replayed on a connection of its own. */
static void replay_story(struct daemon *d, const char *story, int closed)
{
    char out[512], err[512], trace[512];
    const char *argv[] = {"/usr/bin/python3", SOURCE_DIR "/tests/support/gvisor_packets.py", "trace", d->dir, story,
                          NULL};
    if (run_command(argv, out, sizeof(out), err, sizeof(err)) != 0)
        fail_msg("gvisor_packets.py trace %s: %s%s", story, out, err);
    snprintf(trace, sizeof(trace), "%s/%s.trace", d->dir, story);
    assert_int_equal(replay_file(d->socket, trace), 0);
    assert_true(daemon_wait_log(d, "closed (eof)", closed, 10000));
}

/* --json of a sequence's alert and of an alert after evicted partial
 * matches: the line --alerts-out wrote, seccheckd_evicted and
 * seccheckd_sequence in their places (after rule). */
static void test_json_sequence_keys(void **state)
{
    struct daemon *d = *state;
    char rules[400], out[400];
    snprintf(rules, sizeof(rules), "%s/seq.yaml", d->dir);
    snprintf(out, sizeof(out), "%s/alerts.json", d->dir);
    write_file(rules, sequence_rules_yaml);
    /* one partial match per connection: curl's second write evicts its first */
    const char *args[] = {"--rules", rules, "--sequence-partials", "1", "--alerts-out", out, NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    replay_story(d, "download_exec_benign", 1);
    replay_story(d, "download_exec", 2);
    assert_int_equal(daemon_stop(d), 0);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts WHERE evicted = 1"), 1);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts WHERE sequence IS NOT NULL"), 1);
    struct run r = alerts_cmd((const char *const[]){"--db", d->db, "--json", NULL});
    assert_int_equal(r.status, 0);
    char *written = read_lines(out);
    if (!strstr(written, "\"rule\":\"Any exec\",\"seccheckd_evicted\":1,\"source\":") ||
        !strstr(written, "\"rule\":\"Written then run\",\"seccheckd_sequence\":{\"steps\":[{\"name\":\"write\","
                         "\"event_id\":"))
        fail_msg("--alerts-out has not the keys this test is about:\n%s", written);
    if (strcmp(r.out, written) != 0)
        fail_msg("--json differs from --alerts-out:\n%s\n---\n%s", r.out, written);
    free(written);
    run_free(&r);
    /* a database no daemon with sequences opened has neither column: read all the same */
    const char *drop[] = {"/usr/bin/sqlite3", d->db,
                          "ALTER TABLE alerts DROP COLUMN sequence; ALTER TABLE alerts DROP COLUMN evicted", NULL};
    char ignored[256];
    assert_int_equal(run_command(drop, ignored, sizeof(ignored), NULL, 0), 0);
    r = alerts_cmd((const char *const[]){"--db", d->db, "--json", NULL});
    assert_int_equal(r.status, 0);
    assert_int_equal(count_lines(r.out), dbq(d, "SELECT count(*) FROM alerts"));
    assert_null(strstr(r.out, "seccheckd_"));
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
    /* --rule: a part of the name, in any case. */
    assert_int_equal(lines_of((const char *const[]){"--db", db, "--json", "--rule", "openat", NULL}), OPENAT_EXITS);
    assert_int_equal(lines_of((const char *const[]){"--db", db, "--json", "--rule", "OPENS", NULL}), CAT_OPENS);
    assert_int_equal(lines_of((const char *const[]){"--db", db, "--json", "--rule", "t", NULL}), OPENAT_EXITS + CAT_OPENS);
    assert_int_equal(lines_of((const char *const[]){"--db", db, "--json", "--rule", "cat opens x", NULL}), 0);
    assert_int_equal(lines_of((const char *const[]){"--db", db, "--json", "--container", "runsc-236711", NULL}),
                     OPENAT_EXITS + CAT_OPENS);
    assert_int_equal(lines_of((const char *const[]){"--db", db, "--json", "--container", "other", NULL}), 0);
    /* --since is the daemon's clock: the trace's events were recorded days
     * ago (their time_ns), but received now. Received two hours ago (the
     * first 100 events, moved back), they are out of --since 1h. */
    assert_int_equal(lines_of((const char *const[]){"--db", db, "--json", "--since", "1h", NULL}), OPENAT_EXITS + CAT_OPENS);
    char sql[300];
    snprintf(sql, sizeof(sql), "UPDATE events SET recv_ns = recv_ns - 7200000000000 WHERE id <= 100");
    const char *edit[] = {"/usr/bin/sqlite3", db, sql, NULL};
    char ignored[256];
    assert_int_equal(run_command(edit, ignored, sizeof(ignored), NULL, 0), 0);
    long long early = dbq(d, "SELECT count(*) FROM alerts WHERE event_id <= 100");
    assert_true(early > 0);
    assert_int_equal(lines_of((const char *const[]){"--db", db, "--json", "--since", "1h", NULL}),
                     OPENAT_EXITS + CAT_OPENS - early);
    assert_int_equal(lines_of((const char *const[]){"--db", db, "--json", "--since", "3h", NULL}), OPENAT_EXITS + CAT_OPENS);
}

/* A filter that matches nothing says which, and what there is instead
 * (before: "alerts come from rules", as if none were loaded). */
static void test_miss_says_what_did_not_match(void **state)
{
    struct daemon *d = *state;
    start_with_rules(d, NULL);
    replay_mixed(d, 1);
    assert_int_equal(daemon_stop(d), 0);
    struct run r = alerts_cmd((const char *const[]){"--db", d->db, "--rule", "nothing", "--container", "runsc-236711",
                                                    NULL});
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "");
    assert_non_null(strstr(r.err, "none of the 206 alerts in"));
    assert_non_null(strstr(r.err, "--rule 'nothing': no rule's name contains it (the rules that raised alerts: "
                                  "Openat exit 175, Cat opens 31)"));
    assert_non_null(strstr(r.err, "--container 'runsc-236711': 206 alerts"));
    assert_null(strstr(r.err, "alerts come from rules"));
    run_free(&r);
    r = alerts_cmd((const char *const[]){"--db", d->db, "--container", "other", "--priority", "emergency", NULL});
    assert_non_null(strstr(r.err, "--container 'other': no alert of that container (the containers with alerts: "
                                  "runsc-236711 206)"));
    assert_non_null(strstr(r.err, "--priority emergency: none of that priority or above"));
    run_free(&r);
}

/* The table cuts long cells to their column; --wide cuts nothing. */
static void test_wide_cuts_nothing(void **state)
{
    struct daemon *d = *state;
    start_with_rules(d, NULL);
    assert_int_equal(daemon_stop(d), 0);
    const char *insert[] = {"/usr/bin/sqlite3", d->db,
                            "INSERT INTO alerts(event_id, rule, priority, time_ns, container_id, output, output_fields,"
                            " tags) VALUES(1, 'A rule with a name far longer than its column END', 'Warning', 1,"
                            " 'a-container-id-longer-than-fourteen-END', printf('%.*c', 600, 'o') || 'END', '{}', '[]')",
                            NULL};
    char ignored[256];
    assert_int_equal(run_command(insert, ignored, sizeof(ignored), NULL, 0), 0);
    struct run r = alerts_cmd((const char *const[]){"--db", d->db, NULL});
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.out, "END"));
    assert_non_null(strstr(r.out, "A rule with a name far longer..."));
    run_free(&r);
    r = alerts_cmd((const char *const[]){"--db", d->db, "--wide", NULL});
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "A rule with a name far longer than its column END  "));
    assert_non_null(strstr(r.out, "a-container-id-longer-than-fourteen-END  "));
    assert_non_null(strstr(r.out, "oooEND\n"));
    assert_null(strstr(r.out, "..."));
    run_free(&r);
}

/* An alert raised a moment ago whose event says time_ns = 1 (the sandbox's
 * clock: its choice) is in --since 1h, as events --since lists it, and the
 * table shows the sandbox's time in a column of its own. */
static void test_since_is_the_daemons_clock(void **state)
{
    struct daemon *d = *state;
    start_with_rules(d, NULL);
    int fd = replay_open(d->socket, 1);
    assert_true(fd >= 0);
    Gvisor__Common__ContextData ctx = GVISOR__COMMON__CONTEXT_DATA__INIT;
    ctx.container_id = "c1";
    ctx.process_name = "cat";
    ctx.thread_group_id = 7;
    ctx.time_ns = 1;
    Gvisor__Syscall__Exit x = GVISOR__SYSCALL__EXIT__INIT;
    x.result = 3;
    Gvisor__Syscall__Open open = GVISOR__SYSCALL__OPEN__INIT;
    open.context_data = &ctx;
    open.exit = &x;
    open.sysno = 257;
    open.fd = -100;
    open.pathname = "/etc/passwd";
    uint8_t pkt[512];
    size_t n = protobuf_c_message_get_packed_size(&open.base);
    assert_true(WIRE_HEADER_MIN + n <= sizeof(pkt));
    wire_header_write(pkt, 7, 0);
    protobuf_c_message_pack(&open.base, pkt + WIRE_HEADER_MIN);
    send_bytes(fd, pkt, WIRE_HEADER_MIN + n);
    close(fd);
    assert_true(daemon_wait_log(d, "closed (eof)", 1, 10000));
    assert_int_equal(daemon_stop(d), 0);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts"), 2);   /* both rules */
    assert_int_equal(lines_of((const char *const[]){"--db", d->db, "--json", "--since", "1h", NULL}), 2);
    struct run r = alerts_cmd((const char *const[]){"--db", d->db, "--since", "1h", NULL});
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "SANDBOX TIME"));
    assert_non_null(strstr(r.out, "  1970-01-01T00:00:00.000Z  Warning"));
    assert_null(strstr(r.out, "  1970-01-01T00:00:00.000Z  1970"));   /* the first column is the daemon's */
    run_free(&r);
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
    char wal[420];
    snprintf(wal, sizeof(wal), "%s-wal", d->db);
    assert_true(wait_file_open(follower, wal, 10000));   /* it has read where the table ends */
    sleep_ms(200);
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

static long long file_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    long long n = 0;
    for (int c; f && (c = fgetc(f)) != EOF;)
        n += c == '\n';
    if (f)
        fclose(f);
    return n;
}

static void wait_file_lines(const char *path, long long n)
{
    for (int i = 0; i < 150 && file_lines(path) < n; i++)
        sleep_ms(100);
    assert_int_equal(file_lines(path), n);
}

/* --follow follows the file at the path: deleted under the daemon, then
 * replaced by a copy made before; the alerts raised since in each file are
 * printed once, none of the copy's (before: nothing after the deletion). */
static void test_follow_deleted_and_replaced(void **state)
{
    struct daemon *d = *state;
    start_with_rules(d, NULL);
    replay_mixed(d, 1);
    for (int i = 0; i < 300 && dbq(d, "SELECT count(*) FROM alerts") < OPENAT_EXITS + CAT_OPENS; i++)
        sleep_ms(10);
    char copy[400], out[400], err[400], sql[600];
    snprintf(copy, sizeof(copy), "%s/copy.db", d->dir);
    snprintf(sql, sizeof(sql), "VACUUM INTO '%s'", copy);
    const char *vacuum[] = {"/usr/bin/sqlite3", d->db, sql, NULL};
    char ignored[256];
    assert_int_equal(run_command(vacuum, ignored, sizeof(ignored), NULL, 0), 0);
    snprintf(out, sizeof(out), "%s/follow.out", d->dir);
    snprintf(err, sizeof(err), "%s/follow.err", d->dir);
    const char *argv[] = {SECCHECKD_BIN, "alerts", "--db", d->db, "--follow", "--json", NULL};
    pid_t follower = spawn_program(argv, out, err);
    char wal[420];
    snprintf(wal, sizeof(wal), "%s-wal", d->db);
    assert_true(wait_file_open(follower, wal, 10000));   /* it has read (its -wal open), before the file goes */
    const long long per = OPENAT_EXITS + CAT_OPENS;
    assert_int_equal(unlink(d->db), 0);
    replay_mixed(d, 2);
    assert_true(daemon_wait_log(d, "was deleted while in use", 1, 5000));
    replay_mixed(d, 3);
    wait_file_lines(out, 2 * per);
    assert_int_equal(rename(copy, d->db), 0);
    replay_mixed(d, 4);
    assert_true(daemon_wait_log(d, "was replaced by another file", 1, 5000));
    replay_mixed(d, 5);
    wait_file_lines(out, 4 * per);
    sleep_ms(300);
    assert_int_equal(file_lines(out), 4 * per);   /* none twice, none of the copy's */
    kill(follower, SIGTERM);
    assert_int_equal(reaper_wait_within(follower, 5000), 0);
    assert_int_equal(daemon_stop(d), 0);
}

/* Priorities in colour on a terminal (--color auto), or always; never
 * when told, when NO_COLOR is set (but for --color always), through a pipe
 * or in --json. */
static void test_color(void **state)
{
    struct daemon *d = *state;
    start_with_rules(d, NULL);
    replay_mixed(d, 1);
    assert_int_equal(daemon_stop(d), 0);
    struct run r = alerts_cmd((const char *const[]){"--db", d->db, "--color", "always", NULL});
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "\x1b[1;31mCritical       \x1b[0mCat opens"));
    assert_non_null(strstr(r.out, "\x1b[33mWarning        \x1b[0mOpenat exit"));
    run_free(&r);
    const char *const plain[][6] = {
        {"--db", d->db, NULL},                                   /* a pipe: auto says no */
        {"--db", d->db, "--color", "never", NULL},
        {"--db", d->db, "--json", "--color", "always", NULL},    /* JSON stays JSON */
    };
    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
        r = alerts_cmd(plain[i]);
        assert_int_equal(r.status, 0);
        if (strchr(r.out, '\x1b'))
            fail_msg("case %zu: colour in %.200s", i, r.out);
        run_free(&r);
    }
    char *out = malloc(OUT_MAX);
    assert_non_null(out);
    const char *argv[] = {SECCHECKD_BIN, "alerts", "--db", d->db, NULL};
    assert_int_equal(run_on_terminal(argv, NULL, out, OUT_MAX), 0);
    assert_non_null(strstr(out, "\x1b[1;31mCritical"));   /* auto on a terminal */
    assert_int_equal(run_on_terminal(argv, "1", out, OUT_MAX), 0);
    assert_null(strchr(out, '\x1b'));                     /* NO_COLOR */
    const char *always[] = {SECCHECKD_BIN, "alerts", "--db", d->db, "--color", "always", NULL};
    assert_int_equal(run_on_terminal(always, "1", out, OUT_MAX), 0);
    assert_non_null(strstr(out, "\x1b[1;31mCritical"));   /* the flag wins */
    free(out);
    r = alerts_cmd((const char *const[]){"--db", d->db, "--color", "yes", NULL});
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--color: expected auto, always or never"));
    run_free(&r);
}

/* ---- alerts show: a crafted sandbox ---- */

static void assert_no_controls(const char *what, const char *out)
{
    for (const unsigned char *p = (const unsigned char *)out; *p; p++)
        if ((*p < 0x20 && *p != '\n') || *p == 0x7f || (p[0] == 0xc2 && p[1] == 0x9b) ||
            (p[0] == 0xe2 && p[1] == 0x80 && p[2] == 0xae))
            fail_msg("a control character in the %s output at %td: %s", what, (const char *)p - out, out);
}


static void send_message(int fd, uint16_t type, const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *pkt = malloc(WIRE_HEADER_MIN + n);
    assert_non_null(pkt);
    wire_header_write(pkt, type, 0);
    protobuf_c_message_pack(m, pkt + WIRE_HEADER_MIN);
    send_bytes(fd, pkt, WIRE_HEADER_MIN + n);
    free(pkt);
}

/* A context of process pid (thread group started at start). */
struct who {
    Gvisor__Common__ContextData ctx;
    Gvisor__Common__Credentials creds;
};

static Gvisor__Common__ContextData *as(struct who *w, int32_t pid, int64_t start, const char *name, const char *cwd,
                                       uint32_t uid)
{
    static int64_t clock = 1700000000000000000LL;
    gvisor__common__context_data__init(&w->ctx);
    gvisor__common__credentials__init(&w->creds);
    w->creds.effective_uid = w->creds.real_uid = uid;
    w->ctx.credentials = &w->creds;
    w->ctx.time_ns = clock += 1000000;
    w->ctx.thread_id = w->ctx.thread_group_id = pid;
    w->ctx.thread_group_start_time_ns = w->ctx.thread_start_time_ns = start;
    w->ctx.container_id = (char *)"runsc-show";
    w->ctx.process_name = (char *)name;
    w->ctx.cwd = (char *)cwd;
    return &w->ctx;
}

static void send_clone(int fd, struct who *parent, int32_t child, int32_t thread, int64_t child_start)
{
    Gvisor__Sentry__CloneInfo c = GVISOR__SENTRY__CLONE_INFO__INIT;
    c.context_data = &parent->ctx;
    c.created_thread_group_id = child;
    c.created_thread_id = thread;
    c.created_thread_start_time_ns = child_start;
    send_message(fd, 2, &c.base);
}

static void send_exec(int fd, struct who *w, const char *binary, char **argv, size_t argc)
{
    Gvisor__Sentry__ExecveInfo x = GVISOR__SENTRY__EXECVE_INFO__INIT;
    x.context_data = &w->ctx;
    x.binary_path = (char *)binary;
    x.argv = argv;
    x.n_argv = argc;
    send_message(fd, 3, &x.base);
}

static void send_openat(int fd, struct who *w, const char *path)
{
    Gvisor__Syscall__Exit x = GVISOR__SYSCALL__EXIT__INIT;
    x.result = 3;
    Gvisor__Syscall__Open o = GVISOR__SYSCALL__OPEN__INIT;
    o.context_data = &w->ctx;
    o.exit = &x;
    o.sysno = 257;
    o.fd = -100;
    o.pathname = (char *)path;
    send_message(fd, 7, &o.base);
}

#define S1 1700000000001000000LL
#define S2 1700000000002000000LL
#define S3 1700000000003000000LL
#define S9 1700000000009000000LL

/* The story a sandbox tells: sh (pid 1, container/start) forks sh (2),
 * which execs sh -c 'cat /etc/shadow; true' and forks cat (3), which reads
 * /etc/shadow, then /etc/ld.so.cache; meanwhile pid 9 (another child of 1)
 * opens /tmp/x, and cat makes a thread (a clone in its own group, not a
 * parent). */
static void send_story(int fd)
{
    struct who w;
    char *start_args[] = {"/bin/sh", "-c", "sh -c 'cat /etc/shadow; true' \x1b]0;owned\x07"};
    Gvisor__Container__Start st = GVISOR__CONTAINER__START__INIT;
    st.context_data = as(&w, 1, S1, "sh", "/", 0);
    st.id = "runsc-show";
    st.cwd = "/";
    st.args = start_args;
    st.n_args = 3;
    send_message(fd, 1, &st.base);
    as(&w, 1, S1, "sh", "/", 0);
    send_clone(fd, &w, 2, 2, S2);
    char *sh_argv[] = {"sh", "-c", "cat /etc/shadow; true"};
    as(&w, 2, S2, "sh", "/", 0);
    send_exec(fd, &w, "/bin/sh", sh_argv, 3);
    as(&w, 1, S1, "sh", "/", 0);
    send_clone(fd, &w, 9, 9, S9);
    as(&w, 2, S2, "sh", "/home/u", 1000);
    send_clone(fd, &w, 3, 3, S3);
    char *cat_argv[] = {"cat", "/etc/shadow"};
    as(&w, 3, S3, "sh", "/home/u", 1000);
    send_exec(fd, &w, "/usr/bin/cat", cat_argv, 2);
    as(&w, 9, S9, "sh", "/", 0);
    send_openat(fd, &w, "/tmp/x");
    as(&w, 3, S3, "cat", "/home/u", 1000);
    send_clone(fd, &w, 3, 33, S3 + 5);   /* a thread of cat's */
    as(&w, 3, S3, "cat", "/home/u", 1000);
    send_openat(fd, &w, "/etc/shadow");
    as(&w, 3, S3, "cat", "/home/u", 1000);
    send_openat(fd, &w, "/etc/ld.so.cache");
}

static long long shadow_alert(const struct daemon *d)
{
    return dbq(d, "SELECT a.id FROM alerts a JOIN events e ON e.id = a.event_id WHERE a.rule = 'Cat opens'"
                  " AND json_extract(e.detail, '$.pathname') = '/etc/shadow'");
}

/* Lines of text holding needle, in order: the index of the first, or -1. */
static int line_index(const char *text, const char *needle)
{
    int i = 0;
    for (const char *line = text; *line; i++) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char *copy = strndup(line, len);
        bool has = strstr(copy, needle) != NULL;
        free(copy);
        if (has)
            return i;
        line += len + (end != NULL);
    }
    return -1;
}

static void show_fail(const char *what, const struct run *r)
{
    fprintf(stderr, "%s; exit %d, stdout:\n%s\nstderr:\n%s\n", what, r->status, r->out, r->err);
    fail();
}

#define EXPECT_LINE(r, needle) \
    do { \
        if (line_index((r).out, (needle)) < 0) \
            show_fail("no line with: " needle, &(r)); \
    } while (0)

/* alerts show: the alert, its event, the ancestry from the container's
 * first process down, the process's own events around it (pid 9's not
 * among them, the thread not a parent), the container's other alerts in
 * that window; --before/--after; --json; what is missing said. */
static void test_show_story(void **state)
{
    struct daemon *d = *state;
    start_with_rules(d, NULL);
    int fd = replay_open(d->socket, 1);
    assert_true(fd >= 0);
    send_story(fd);
    close(fd);
    assert_true(daemon_wait_log(d, "closed (eof)", 1, 10000));
    assert_int_equal(daemon_stop(d), 0);
    long long id = shadow_alert(d);
    assert_true(id > 0);
    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", id);
    struct run r = alerts_cmd((const char *const[]){"show", ids, "--db", d->db, NULL});
    if (r.status != 0)
        show_fail("exit", &r);
    assert_no_controls("show", r.out);
    char head[64];
    snprintf(head, sizeof(head), "Alert %lld  Cat opens  Critical", id);
    assert_true(strncmp(r.out, head, strlen(head)) == 0);
    EXPECT_LINE(r, "  container  runsc-show");
    EXPECT_LINE(r, "cat[3] openat /etc/shadow O_RDONLY = 3");
    int sh1 = line_index(r.out, "  sh[1]  "), sh2 = line_index(r.out, "  sh[2]  "), cat = line_index(r.out, "  cat[3]  ");
    if (!(sh1 > 0 && sh1 < sh2 && sh2 < cat))
        show_fail("the ancestry is not sh[1], sh[2], cat[3] in that order", &r);
    EXPECT_LINE(r, "start 2");   /* sh[1]: the container/start, with its time */
    EXPECT_LINE(r, "/bin/sh /bin/sh -c \"sh -c 'cat /etc/shadow; true' \\x1b]0;owned\\x07\"  cwd /  uid 0");
    EXPECT_LINE(r, "/bin/sh sh -c \"cat /etc/shadow; true\"  cwd /  uid 0");
    EXPECT_LINE(r, "/usr/bin/cat cat /etc/shadow  cwd /home/u  uid 1000");
    if (strstr(r.out, "note:"))
        show_fail("a note where nothing is missing", &r);
    /* The window: cat's exec, the alert's event marked, the read after. */
    int exec = line_index(r.out, "sh[3] exec /usr/bin/cat cat /etc/shadow");
    int marked = line_index(r.out, "> 2023-11-14T22:13:"), after = line_index(r.out, "cat[3] openat /etc/ld.so.cache");
    int starts = 0;   /* lines that start with "> ": the alert's event only */
    for (const char *l = r.out; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        starts += strncmp(l, "> ", 2) == 0;
    if (!(exec > cat && exec < marked && marked < after) || line_index(r.out, "[9] openat") >= 0 || starts != 1)
        show_fail("the window is not cat's exec, > its open of /etc/shadow, then /etc/ld.so.cache", &r);
    EXPECT_LINE(r, "Other alerts of this container in that window");
    EXPECT_LINE(r, "Openat exit  (this process)");
    EXPECT_LINE(r, "Cat opens  (this process)");
    run_free(&r);

    r = alerts_cmd((const char *const[]){"show", ids, "--db", d->db, "--before", "0", "--after", "0", NULL});
    assert_int_equal(r.status, 0);
    assert_int_equal(line_index(r.out, "sh[3] exec /usr/bin/cat"), -1);   /* the window: the alert's event alone */
    assert_int_equal(line_index(r.out, "openat /etc/ld.so.cache"), -1);
    assert_true(line_index(r.out, "> 2023-11-14T22:13:") > 0);
    run_free(&r);

    char out[400];
    snprintf(out, sizeof(out), "%s/show.json", d->dir);
    const char *argv[] = {SECCHECKD_BIN, "alerts", "show", ids, "--db", d->db, "--json", NULL};
    assert_int_equal(reaper_wait_within(spawn_program(argv, out, NULL), 30000), 0);
    const char *check[] = {"/usr/bin/python3", "-c",
                           "import json, sys\n"
                           "d = json.load(open(sys.argv[1]))\n"
                           "assert [p['pid'] for p in d['ancestry']] == [1, 2, 3], d['ancestry']\n"
                           "assert [p['program_from'] for p in d['ancestry']] == ['container_start', 'exec', 'exec']\n"
                           "assert d['ancestry'][2]['argv'] == ['cat', '/etc/shadow'] and d['ancestry'][2]['uid'] == 1000\n"
                           "assert d['ancestry'][2]['user'] is None and d['ancestry_notes'] == []\n"
                           "assert d['event']['message']['pathname'] == '/etc/shadow', d['event']\n"
                           "assert d['event']['message']['context_data']['thread_group_id'] == 3\n"
                           "assert sum(e['alert_event'] for e in d['window']['events']) == 1\n"
                           "assert d['alert']['rule'] == 'Cat opens' and d['alert']['output_fields']['fd.name'] == '/etc/shadow'\n"
                           "assert any(not a['same_process'] for a in d['alerts_nearby']), d['alerts_nearby']\n",
                           out, NULL};
    char said[4000], why[4000];
    if (run_command(check, said, sizeof(said), why, sizeof(why)) != 0)
        fail_msg("--json: %s", why);

    /* What is missing is said: the events up to the clone that made sh[2]
     * deleted (as retention does, oldest first). */
    const char *edit[] = {"/usr/bin/sqlite3", d->db,
                          "DELETE FROM events WHERE id <= (SELECT min(id) FROM events WHERE msg_type = 2)", NULL};
    assert_int_equal(run_command(edit, said, sizeof(said), NULL, 0), 0);
    r = alerts_cmd((const char *const[]){"show", ids, "--db", d->db, NULL});
    assert_int_equal(r.status, 0);
    EXPECT_LINE(r, "note: sh[2]: its parent is unknown, the clone that made it is not stored: retention deleted the "
                   "events before 3");
    if (line_index(r.out, "  sh[1]  ") >= 0)
        show_fail("sh[1] still shown", &r);
    run_free(&r);
    r = alerts_cmd((const char *const[]){"show", "999999", "--db", d->db, NULL});
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "has no alert 999999"));
    run_free(&r);
}

/* A sandbox that sent neither sentry/clone nor sentry/execve: the ancestry
 * says which points were not enabled. */
static void test_show_without_process_points(void **state)
{
    struct daemon *d = *state;
    start_with_rules(d, NULL);
    int fd = replay_open(d->socket, 1);
    assert_true(fd >= 0);
    struct who w;
    as(&w, 7, S9, "cat", "/", 0);
    send_openat(fd, &w, "/etc/passwd");
    close(fd);
    assert_true(daemon_wait_log(d, "closed (eof)", 1, 10000));
    assert_int_equal(daemon_stop(d), 0);
    struct run r = alerts_cmd((const char *const[]){"show", "1", "--db", d->db, NULL});
    assert_int_equal(r.status, 0);
    EXPECT_LINE(r, "note: cat[7]: no exec stored: this sandbox sent no sentry/execve events: the point is not enabled");
    EXPECT_LINE(r, "note: cat[7]: its parent is unknown, the clone that made it is not stored: this sandbox sent no "
                   "sentry/clone events");
    EXPECT_LINE(r, "  cat[7]  ");
    run_free(&r);
    r = alerts_cmd((const char *const[]){"show", "--db", d->db, NULL});
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "which alert?"));
    run_free(&r);
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

/* A row written by something else (or a compromised host's, through the
 * central copy): every column of the table is escaped, the priority's too
 * (before, \x1b]0;owned\x07\x1b[2J reached the terminal raw). */
static const char hostile_row_sql[] =
    "INSERT INTO alerts(event_id, rule, priority, time_ns, container_id, output, output_fields, tags)"
    " VALUES(1, 'rule' || char(27) || '[31m', char(27) || ']0;owned' || char(7) || char(27) || '[2J', 1,"
    " 'c' || char(8238) || 'x', 'out' || char(13) || char(155) || 'put', '{\"a\":', '[1,')";


static void test_hostile_columns(void **state)
{
    struct daemon *d = *state;
    start_with_rules(d, NULL);
    assert_int_equal(daemon_stop(d), 0);
    const char *insert[] = {"/usr/bin/sqlite3", d->db, hostile_row_sql, NULL};
    char ignored[256];
    assert_int_equal(run_command(insert, ignored, sizeof(ignored), NULL, 0), 0);
    struct run r = alerts_cmd((const char *const[]){"--db", d->db, NULL});
    assert_int_equal(r.status, 0);
    assert_int_equal(count_lines(r.out), 2);
    assert_no_controls("table", r.out);
    assert_non_null(strstr(r.out, "\\x1b]0;own...  "));   /* escaped, then cut to its column */
    run_free(&r);
    /* --json: output_fields and tags that are not JSON become {} and [],
     * said on stderr: the line is JSON a tool can read (before: invalid). */
    char out[400];
    snprintf(out, sizeof(out), "%s/alerts.json", d->dir);
    const char *argv[] = {SECCHECKD_BIN, "alerts", "--db", d->db, "--json", NULL};
    char err[1000];
    snprintf(err, sizeof(err), "%s/alerts.err", d->dir);
    assert_int_equal(reaper_wait_within(spawn_program(argv, out, err), 30000), 0);
    const char *check[] = {"/usr/bin/python3", "-c",
                           "import json, sys\n"
                           "lines = open(sys.argv[1], 'rb').read().splitlines()\n"
                           "assert len(lines) == 1, lines\n"
                           "a = json.loads(lines[0].decode('utf-8'))\n"
                           "assert a['output_fields'] == {} and a['tags'] == [], a\n",
                           out, NULL};
    char said[2000];
    char why[2000];
    if (run_command(check, said, sizeof(said), why, sizeof(why)) != 0)
        fail_msg("--json printed what is not JSON: %s", why);
    const char *cat[] = {"/bin/cat", err, NULL};
    assert_int_equal(run_command(cat, said, sizeof(said), NULL, 0), 0);
    assert_non_null(strstr(said, "alert 1 has output_fields or tags that are not JSON"));
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
        cmocka_unit_test_setup_teardown(test_json_sequence_keys, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_filters, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_since_is_the_daemons_clock, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_miss_says_what_did_not_match, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_wide_cuts_nothing, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_follow, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_follow_deleted_and_replaced, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_hostile_text, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_hostile_columns, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_color, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_show_story, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_show_without_process_points, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_errors, daemon_setup, daemon_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
