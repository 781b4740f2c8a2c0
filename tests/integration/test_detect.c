/* Integration: rules evaluated by the daemon on every event (--rules). The
 * alerts match the stored rows one for one, ride in the transaction of
 * their event (kill -9 cannot split them), go out as Falco JSON lines, are
 * held to their limits per connection (never by what a sandbox sends) and
 * counted, follow a SIGHUP reload (a broken file keeps the running set),
 * and still know a process's parent across a restart. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "daemon.h"
#include "gvisor/sentry.pb-c.h"
#include "gvisor/syscall.pb-c.h"
#include "replay.h"
#include "wire.h"

/* The openat exits of a trace, and the same restricted to one process. */
static const char openat_rule[] =
    "- rule: Openat exit\n"
    "  desc: every openat that returned\n"
    "  condition: evt.type = openat and evt.dir = <\n"
    "  output: \"%proc.name opened %fd.name (res=%evt.res)\"\n"
    "  priority: WARNING\n"
    "  tags: [test, files]\n";

static const char cat_rule[] =
    "- rule: Cat at work\n"
    "  desc: any event of cat but its exec\n"
    "  condition: proc.name = cat and evt.type != execve\n"
    "  output: \"cat did %evt.type\"\n"
    "  priority: info\n";

static char *write_rules(const struct daemon *d, const char *name, const char *yaml)
{
    static char path[4][400];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, sizeof(path[0]), "%s/%s", d->dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(yaml, f);
    fclose(f);
    return p;
}

static void replay(const char *socket, const char *trace)
{
    assert_int_equal(replay_file(socket, trace), 0);
}

/* Waits until the query counts n: the batches holding the alerts committed. */
static void wait_count(const struct daemon *d, const char *sql, long long n)
{
    for (int i = 0; i < 500 && dbq(d, "%s", sql) < n; i++)
        sleep_ms(10);
    assert_int_equal(dbq(d, "%s", sql), n);
}

static void wait_closed(const struct daemon *d, int n)
{
    if (!daemon_wait_log(d, "closed (eof)", n, 10000))
        fail_msg("connections did not close");
}

/* Rows a rule on openat exits must match: 175 in mixed_syscalls.trace. */
#define OPENAT_EXITS "msg_type = 7 AND sysno = 257 AND is_exit = 1"
#define MIXED_OPENAT_EXITS 175
/* Rows of cat that a rule without evt.dir sees: exits and sentry points,
 * not syscall enter points, not the exec itself. */
#define CAT_ROWS "process_name = 'cat' AND coalesce(is_exit, 1) = 1 AND msg_type NOT IN (3, 11)"

static void test_one_alert_per_matching_row(void **state)
{
    struct daemon *d = *state;
    char rules[2048];
    snprintf(rules, sizeof(rules), "%s%s", openat_rule, cat_rule);
    /* cat's openat exits match both rules: every rule alerts */
    const char *args[] = {"--rules", write_rules(d, "r.yaml", rules), "--rule-matching", "all", NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    replay(d->socket, TRACES_DIR "/mixed_syscalls.trace");
    replay(d->socket, TRACES_DIR "/exec_loop.trace");
    wait_closed(d, 2);
    assert_int_equal(daemon_stop(d), 0);
    long long openats = dbq(d, "SELECT count(*) FROM events WHERE " OPENAT_EXITS);
    assert_int_equal(openats, MIXED_OPENAT_EXITS);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts WHERE rule = 'Openat exit'"), openats);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts a JOIN events e ON e.id = a.event_id "
                            "WHERE a.rule = 'Openat exit' AND e." OPENAT_EXITS), openats);
    long long cat = dbq(d, "SELECT count(*) FROM events WHERE " CAT_ROWS);
    assert_true(cat >= 62);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts WHERE rule = 'Cat at work'"), cat);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts a JOIN events e ON e.id = a.event_id "
                            "WHERE a.rule = 'Cat at work' AND e." CAT_ROWS),
                     cat);
    /* What the row holds comes back in the alert. */
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts a JOIN events e ON e.id = a.event_id "
                            "WHERE a.rule = 'Openat exit' AND a.priority = 'Warning' AND a.tags = '[\"files\",\"test\"]'"
                            " AND a.container_id = e.container_id AND a.time_ns = e.time_ns"
                            " AND json_extract(a.output_fields, '$.\"proc.name\"') = e.process_name"
                            " AND a.output LIKE '%%: Warning ' || e.process_name || ' opened %%'"),
                     openats);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts_full WHERE rule = 'Openat exit' AND type_name = "
                            "'SYSCALL_OPEN' AND json_extract(message, '$.sysno') = 257"),
                     openats);
    char *log = daemon_read_log(d);
    char want[128];
    snprintf(want, sizeof(want), "summary: alerts %lld: Warning %lld, Informational %lld; suppressed by "
             "--alerts-rate 0; over --alerts-ceiling 0", openats + cat, openats, cat);
    if (!strstr(log, want))
        fail_msg("expected '%s' in: %s", want, log);
    free(log);
}

/* A detector that stores nothing: discard sink, alerts on stdout. */
static void test_detector_without_storage(void **state)
{
    struct daemon *d = *state;
    const char *argv[] = {SECCHECKD_BIN, "--socket", d->socket, "--sink", "discard", "--rules",
                          write_rules(d, "r.yaml", openat_rule), "--alerts-out", "-", "--alerts-rate", "0", NULL};
    assert_true(daemon_spawn(d, argv, "info: listening on"));
    replay(d->socket, TRACES_DIR "/mixed_syscalls.trace");
    wait_closed(d, 1);
    assert_int_equal(daemon_stop(d), 0);
    assert_int_equal(daemon_log_count(d, "{\"hostname\":"), MIXED_OPENAT_EXITS);
    assert_int_equal(daemon_log_count(d, "\"rule\":\"Openat exit\""), MIXED_OPENAT_EXITS);
    assert_int_equal(daemon_log_count(d, "1235 received = 0 stored + 1235 discarded"), 1);
    assert_int_equal(access(d->db, F_OK), -1);
}

/* Every line is one JSON object in Falco's format: checked by Python's json
 * module, as a consumer would read it. */
static void test_alert_lines_are_falco_json(void **state)
{
    struct daemon *d = *state;
    char out[400], check[400];
    snprintf(out, sizeof(out), "%s/alerts.json", d->dir);
    const char *args[] = {"--rules", write_rules(d, "r.yaml", openat_rule), "--alerts-out", out, NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    replay(d->socket, TRACES_DIR "/mixed_syscalls.trace");
    wait_closed(d, 1);
    assert_int_equal(daemon_stop(d), 0);
    snprintf(check, sizeof(check), "%s/check.py", d->dir);
    FILE *f = fopen(check, "w");
    assert_non_null(f);
    fputs("import json, re, sys\n"
          "n = 0\n"
          "for line in open(sys.argv[1]):\n"
          "    a = json.loads(line); n += 1\n"
          "    assert list(a) == ['hostname','output','output_fields','priority','rule','source','tags','time'], a\n"
          "    assert a['rule'] == 'Openat exit' and a['priority'] == 'Warning' and a['source'] == 'syscall'\n"
          "    assert a['tags'] == ['files', 'test'], a['tags']\n"
          "    assert re.fullmatch(r'\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{9}Z', a['time']), a['time']\n"
          /* and Falco's suggested_output, the default --append-output */
          "    assert re.fullmatch(r'\\d\\d:\\d\\d:\\d\\d\\.\\d{9}: Warning \\S+ opened .* \\(res=\\S+\\)'\n"
          "        r' container_id=\\S+ container_name=<NA> container_image_repository=<NA> container_image_tag=<NA>'\n"
          "        r' k8s_pod_name=<NA> k8s_ns_name=<NA>', a['output']), a['output']\n"
          "    f = a['output_fields']\n"
          "    assert list(f) == sorted(f), f\n"
          "    assert set(f) == {'evt.time', 'proc.name', 'fd.name', 'evt.res', 'container.id', 'container.name',\n"
          "                      'container.image.repository', 'container.image.tag', 'k8s.pod.name', 'k8s.ns.name'}, f\n"
          "    assert isinstance(f['evt.time'], int) and a['time'][11:19] == a['output'][:8]\n"
          "print(n)\n",
          f);
    fclose(f);
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "python3 %s %s", check, out);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[64] = "";
    if (!fgets(line, sizeof(line), p))
        line[0] = '\0';
    assert_int_equal(pclose(p), 0);
    /* No per-rule throttling by default (Falco has none): every match is an
     * alert, far below the connection's ceiling, and the lines carry
     * exactly Falco's keys. */
    long long lines = atoll(line);
    assert_int_equal(lines, MIXED_OPENAT_EXITS);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts"), lines);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts WHERE suppressed > 0"), 0);
}

static int64_t monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void send_range(int fd, const struct replay_trace *t, size_t from, size_t to);

/* --alerts-rate: one rule on one connection, a burst, then the rate in the
 * daemon's clock (the trace sent twice, half a second apart, on one
 * connection); the rest counted, and an alert after a suppression says how
 * many it stands for. */
static void test_throttling(void **state)
{
    struct daemon *d = *state;
    char metrics[400];
    snprintf(metrics, sizeof(metrics), "unix:%s/m.sock", d->dir);
    const char *args[] = {"--rules", write_rules(d, "r.yaml", openat_rule), "--alerts-rate", "10",
                          "--alerts-burst", "5", "--metrics-listen", metrics, NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    struct replay_trace t;
    assert_int_equal(trace_load_named(&t, "mixed_syscalls"), 0);
    int64_t started = monotonic_ms();
    int fd = replay_open(d->socket, 1);
    assert_true(fd >= 0);
    send_range(fd, &t, 0, t.count);
    sleep_ms(500);   /* evaluated at least 400 ms apart: 4 tokens back */
    send_range(fd, &t, 0, t.count);
    close(fd);
    replay_trace_free(&t);
    wait_closed(d, 1);
    sleep_ms(300);
    int64_t took_ms = monotonic_ms() - started;   /* the last batch was evaluated by now */
    long long matches = 2 * MIXED_OPENAT_EXITS;
    long long alerts = dbq(d, "SELECT count(*) FROM alerts");
    assert_in_range(alerts, 5 + 4, 5 + 1 + took_ms / 100);   /* 5 at once, then 10 a second */
    const char *sock = metrics + strlen("unix:");
    assert_int_equal(metric_scrape(sock, "seccheckd_alerts_suppressed_total{rule=\"Openat exit\"}"), matches - alerts);
    assert_int_equal(metric_scrape(sock, "seccheckd_alerts_total{rule=\"Openat exit\",priority=\"Warning\"}"), alerts);
    assert_int_equal(metric_scrape(sock, "seccheckd_rules_loaded"), 1);
    /* The alerts after the burst carry the suppressions before them. */
    assert_true(dbq(d, "SELECT count(*) FROM alerts WHERE suppressed > 0") >= 1);
    assert_true(dbq(d, "SELECT sum(suppressed) FROM alerts") <= matches - alerts);
    /* every suppression of the first pass is carried by a later alert */
    assert_true(dbq(d, "SELECT sum(suppressed) FROM alerts") >= MIXED_OPENAT_EXITS - (alerts - 4));
    assert_int_equal(daemon_stop(d), 0);
    char want[160];
    snprintf(want, sizeof(want), "summary: alerts %lld: Warning %lld; suppressed by --alerts-rate %lld; over "
             "--alerts-ceiling 0", alerts, alerts, matches - alerts);
    assert_int_equal(daemon_log_count(d, want), 1);
}

/* SIGHUP reloads the rules: a good file applies from the next batch on, a
 * broken one is named with its line and the running set stays. */
static void test_sighup_reload(void **state)
{
    struct daemon *d = *state;
    char *path = write_rules(d, "r.yaml", openat_rule);
    const char *args[] = {"--rules", path, "--alerts-rate", "0", NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    replay(d->socket, TRACES_DIR "/mixed_syscalls.trace");
    wait_closed(d, 1);
    wait_count(d, "SELECT count(*) FROM alerts", MIXED_OPENAT_EXITS);
    write_rules(d, "r.yaml", cat_rule);
    kill(d->pid, SIGHUP);
    assert_true(daemon_wait_log(d, "rules: 1 rules enabled of 1", 2, 5000));   /* at start, then reloaded */
    replay(d->socket, TRACES_DIR "/mixed_syscalls.trace");
    wait_closed(d, 2);
    write_rules(d, "r.yaml", "- rule: Broken\n  desc: x\n  condition: evt.type = openat and (\n  output: x\n"
                             "  priority: WARNING\n");
    kill(d->pid, SIGHUP);
    assert_true(daemon_wait_log(d, "the running rules stay", 1, 5000));
    replay(d->socket, TRACES_DIR "/mixed_syscalls.trace");
    wait_closed(d, 3);
    assert_int_equal(daemon_stop(d), 0);
    char *log = daemon_read_log(d);
    if (!strstr(log, "r.yaml:3:"))
        fail_msg("the broken file's line is not named: %s", log);
    free(log);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts a JOIN events e ON e.id = a.event_id "
                            "WHERE a.rule = 'Openat exit' AND e.conn_id = 1"), MIXED_OPENAT_EXITS);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts a JOIN events e ON e.id = a.event_id "
                            "WHERE a.rule = 'Openat exit' AND e.conn_id > 1"), 0);
    long long cat1 = dbq(d, "SELECT count(*) FROM events WHERE conn_id = 1 AND " CAT_ROWS);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts a JOIN events e ON e.id = a.event_id "
                            "WHERE a.rule = 'Cat at work' AND e.conn_id IN (2, 3)"), 2 * cat1);
}

/* kill -9 under load: alerts and events commit together, so afterwards no
 * alert lacks its event and no matching event lacks its alert. */
static void test_kill9_keeps_alerts_with_events(void **state)
{
    struct daemon *d = *state;
    const char *args[] = {"--rules", write_rules(d, "r.yaml", openat_rule), "--alerts-rate", "0", NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    pid_t lg = reaper_fork();
    assert_true(lg >= 0);
    if (lg == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execl(LOADGEN_BIN, LOADGEN_BIN, "--socket", d->socket, "--trace", TRACES_DIR "/mixed_syscalls.trace",
              "--connections", "4", "--mode", "block", "--duration", "10", (char *)NULL);
        _exit(127);
    }
    sleep_ms(1500);
    kill(d->pid, SIGKILL);
    daemon_wait_exit(d, 5000);
    reaper_wait(lg);
    long long matched = dbq(d, "SELECT count(*) FROM events WHERE " OPENAT_EXITS);
    assert_true(matched > MIXED_OPENAT_EXITS);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts"), matched);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts WHERE event_id NOT IN (SELECT id FROM events)"), 0);
    assert_int_equal(dbq(d, "SELECT count(*) FROM events WHERE " OPENAT_EXITS
                            " AND id NOT IN (SELECT event_id FROM alerts)"), 0);
    assert_int_equal(dbq(d, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = 'ok'"), 1);
}

/* A rule that matches every event (enter points too, and naming
 * gvisor.point, the execve exits that follow a sentry/execve), on 4
 * connections: each held to its ceiling (a burst, then a rate), the rest
 * counted, and every event stored. How fast it stores is bench/rules.sh's. */
static void test_match_all_rule_is_held_to_the_ceiling(void **state)
{
    struct daemon *d = *state;
    char out[400];
    snprintf(out, sizeof(out), "%s/loadgen.json", d->dir);
    const char *args[] = {"--rules", write_rules(d, "r.yaml", "- rule: Everything\n  desc: every event\n"
                                                              "  condition: evt.num > 0 and evt.dir in (<, >) and gvisor.point exists\n"
                                                              "  output: \"%evt.type by %proc.name\"\n"
                                                              "  priority: DEBUG\n"),
                          "--alerts-ceiling", "5", "--alerts-ceiling-burst", "100", NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    int64_t started = monotonic_ms();
    pid_t lg = reaper_fork();
    assert_true(lg >= 0);
    if (lg == 0) {
        if (!freopen(out, "w", stdout))
            _exit(126);
        execl(LOADGEN_BIN, LOADGEN_BIN, "--socket", d->socket, "--trace", TRACES_DIR "/mixed_syscalls.trace",
              "--connections", "4", "--mode", "block", "--messages", "12350", "--json", (char *)NULL);
        _exit(127);
    }
    assert_int_equal(reaper_wait(lg), 0);
    wait_closed(d, 4);
    assert_int_equal(daemon_stop(d), 0);
    int64_t took_ms = monotonic_ms() - started;   /* the last batch was evaluated by now */
    long long events = 4 * 12350;
    assert_int_equal(json_file_number(out, "sent"), events);
    assert_int_equal(dbq(d, "SELECT count(*) FROM events"), events);
    assert_int_equal(dbq(d, "SELECT received - stored FROM runs"), 0);
    /* Each connection: the burst of 100, then 5 a second of the daemon's clock. */
    long long alerts = dbq(d, "SELECT count(*) FROM alerts");
    assert_in_range(alerts, 4 * 100, 4 * (100 + 1 + took_ms * 5 / 1000));
    for (int c = 1; c <= 4; c++)
        assert_true(dbq(d, "SELECT count(*) FROM alerts a JOIN events e ON e.id = a.event_id WHERE e.conn_id = %d",
                        c) >= 100);
    long long decoded = dbq(d, "SELECT count(*) FROM events WHERE decode_error IS NULL");
    char want[200];
    snprintf(want, sizeof(want), "summary: alerts %lld: Debug %lld; suppressed by --alerts-rate 0; over "
             "--alerts-ceiling %lld", alerts, alerts, decoded - alerts);
    if (daemon_log_count(d, want) != 1) {
        char *log = daemon_read_log(d);
        fprintf(stderr, "%s", log);
        free(log);
        fail_msg("expected '%s' in the log (above)", want);
    }
}

/* ---- one sandbox must not touch another's alerts (issue 24 items 1, 3) ---- */

static const char shadow_rule[] =
    "- rule: Shadow read\n"
    "  desc: /etc/shadow opened\n"
    "  condition: evt.type = openat and evt.dir = < and fd.name = /etc/shadow\n"
    "  output: \"%proc.name read %fd.name in %container.id\"\n"
    "  priority: WARNING\n";

/* An openat exit of path by process tgid, naming container, at time_ns. */
static void send_open(int fd, const char *container, int64_t time_ns, int32_t tgid, const char *path)
{
    Gvisor__Common__ContextData ctx = GVISOR__COMMON__CONTEXT_DATA__INIT;
    ctx.container_id = (char *)container;
    ctx.process_name = (char *)"cat";
    ctx.thread_id = ctx.thread_group_id = tgid;
    ctx.time_ns = time_ns;
    Gvisor__Syscall__Exit x = GVISOR__SYSCALL__EXIT__INIT;
    x.result = 3;
    Gvisor__Syscall__Open m = GVISOR__SYSCALL__OPEN__INIT;
    m.context_data = &ctx;
    m.exit = &x;
    m.sysno = 257;
    m.fd = -100;
    m.pathname = (char *)path;
    uint8_t pkt[512];
    size_t n = protobuf_c_message_get_packed_size(&m.base);
    assert_true(n + WIRE_HEADER_MIN <= sizeof(pkt));
    wire_header_write(pkt, 7, 0);
    protobuf_c_message_pack(&m.base, pkt + WIRE_HEADER_MIN);
    send_bytes(fd, pkt, WIRE_HEADER_MIN + n);
}

/* The auditor's experiment: with a per-rule limit on, another connection
 * sends 150 matches naming the victim's container with a context time of
 * 2^62; the victim's two reads still alert. Fails before (the bucket was
 * the container's, refilled by event time): 0 != 2. */
static void test_one_connection_cannot_empty_anothers_bucket(void **state)
{
    struct daemon *d = *state;
    const char *args[] = {"--rules", write_rules(d, "r.yaml", shadow_rule), "--alerts-rate", "10",
                          "--alerts-burst", "100", NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    int victim = replay_open(d->socket, 1);
    int attacker = replay_open(d->socket, 1);
    assert_true(victim >= 0 && attacker >= 0);
    send_open(victim, "victim", 1700000000000000000, 5, "/etc/hostname");   /* the victim's connection is 1 */
    wait_count(d, "SELECT count(*) FROM events", 1);
    for (int i = 0; i < 150; i++)
        send_open(attacker, "victim", (int64_t)1 << 62, 66, "/etc/shadow");
    wait_count(d, "SELECT count(*) FROM events", 151);
    send_open(victim, "victim", 1700000001000000000, 5, "/etc/shadow");
    send_open(victim, "victim", 1700000002000000000, 5, "/etc/shadow");
    close(victim);
    close(attacker);
    wait_closed(d, 2);
    assert_int_equal(daemon_stop(d), 0);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts a JOIN events e ON e.id = a.event_id WHERE e.conn_id = 1"),
                     2);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts a JOIN events e ON e.id = a.event_id WHERE e.conn_id = 2"),
                     100);
}

/* Whatever a connection varies (a new container id and a time one second
 * later on every event), its alerts stay under its ceiling; the rest are
 * counted (metrics, the exit summary) and said in its next alert; another
 * connection alerts as before. Fails before: 3,000 matches raised 3,000
 * alerts. */
static void test_ceiling_holds_whatever_a_connection_sends(void **state)
{
    struct daemon *d = *state;
    char metrics[400];
    snprintf(metrics, sizeof(metrics), "unix:%s/m.sock", d->dir);
    char lines[400];
    snprintf(lines, sizeof(lines), "%s/alerts.json", d->dir);
    const char *args[] = {"--rules", write_rules(d, "r.yaml", shadow_rule), "--alerts-ceiling", "10",
                          "--alerts-ceiling-burst", "100", "--metrics-listen", metrics, "--alerts-out", lines, NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    int flood = replay_open(d->socket, 1);
    assert_true(flood >= 0);
    int64_t started = monotonic_ms();
    for (int i = 0; i < 3000; i++) {
        char id[32];
        snprintf(id, sizeof(id), "c%d", i);
        send_open(flood, id, 1700000000000000000 + (int64_t)i * 1000000000, 66, "/etc/shadow");
    }
    wait_count(d, "SELECT count(*) FROM events", 3000);
    int64_t took_ms = monotonic_ms() - started;
    long long raised = dbq(d, "SELECT count(*) FROM alerts");
    assert_in_range(raised, 100, 100 + 1 + took_ms * 10 / 1000);
    const char *sock = metrics + strlen("unix:");
    sleep_ms(300);   /* a batch after: its counts are published */
    assert_int_equal(metric_scrape(sock, "seccheckd_alerts_over_ceiling_total{rule=\"Shadow read\"}"), 3000 - raised);
    /* another connection is not held back */
    int quiet = replay_open(d->socket, 1);
    assert_true(quiet >= 0);
    send_open(quiet, "quiet", 1700000000000000000, 5, "/etc/shadow");
    close(quiet);
    wait_count(d, "SELECT count(*) FROM alerts a JOIN events e ON e.id = a.event_id WHERE e.conn_id = 2", 1);
    /* 200 ms later the flood's next alert says how many it held back */
    sleep_ms(200);
    send_open(flood, "c0", 1, 66, "/etc/shadow");
    close(flood);
    wait_closed(d, 2);
    assert_int_equal(daemon_stop(d), 0);
    long long last = dbq(d, "SELECT max(a.id) FROM alerts a JOIN events e ON e.id = a.event_id WHERE e.conn_id = 1");
    assert_int_equal(dbq(d, "SELECT sum(suppressed) FROM alerts"), 3000 - raised);
    long long held = dbq(d, "SELECT suppressed FROM alerts WHERE id = %lld", last);
    assert_true(held > 0);
    /* The count in its own key of the line, outside output_fields: in
     * --alerts-out, in `seccheckd alerts --json` (the line delivery sends),
     * and in the table. */
    char key[64], note[64];
    snprintf(key, sizeof(key), "\"rule\":\"Shadow read\",\"seccheckd_suppressed\":%lld,", held);
    snprintf(note, sizeof(note), "(and %lld held back before it)", held);
    FILE *f = fopen(lines, "r");
    assert_non_null(f);
    char line[4096];
    int with_key = 0;
    while (fgets(line, sizeof(line), f))
        with_key += strstr(line, key) != NULL &&
                    strstr(line, "\"output_fields\":{\"container.id\":\"c0\",\"container.image.repository\":null,"
                                 "\"container.image.tag\":null,\"container.name\":null,\"evt.time\":1,"
                                 "\"fd.name\":\"/etc/shadow\",\"k8s.ns.name\":null,\"k8s.pod.name\":null,"
                                 "\"proc.name\":\"cat\"}") != NULL;
    fclose(f);
    assert_int_equal(with_key, 1);
    static char out[1 << 20];
    const char *json[] = {SECCHECKD_BIN, "alerts", "--db", d->db, "--json", NULL};
    assert_int_equal(run_command(json, out, sizeof(out), NULL, 0), 0);
    assert_non_null(strstr(out, key));
    const char *table[] = {SECCHECKD_BIN, "alerts", "--db", d->db, NULL};
    assert_int_equal(run_command(table, out, sizeof(out), NULL, 0), 0);
    assert_non_null(strstr(out, note));
    long long alerts = dbq(d, "SELECT count(*) FROM alerts");
    char want[200];
    snprintf(want, sizeof(want), "summary: alerts %lld: Warning %lld; suppressed by --alerts-rate 0; over "
             "--alerts-ceiling %lld", alerts, alerts, 3000 + 1 + 1 - alerts);
    assert_int_equal(daemon_log_count(d, want), 1);
}

/* One sandbox clones 100 processes that never exit: the tables keep at
 * most --max-processes, and the evictions are counted. */
static void test_process_table_bounded_and_counted(void **state)
{
    struct daemon *d = *state;
    char metrics[400];
    snprintf(metrics, sizeof(metrics), "unix:%s/m.sock", d->dir);
    const char *args[] = {"--rules", write_rules(d, "r.yaml", openat_rule), "--max-processes", "16",
                          "--metrics-listen", metrics, NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    int fd = replay_open(d->socket, 1);
    assert_true(fd >= 0);
    Gvisor__Common__ContextData ctx = GVISOR__COMMON__CONTEXT_DATA__INIT;
    ctx.container_id = "runsc-flood";
    ctx.process_name = "sh";
    ctx.thread_id = ctx.thread_group_id = 1;
    ctx.thread_group_start_time_ns = 1700000000000000000;
    uint8_t pkt[512];
    for (int k = 0; k < 100; k++) {
        Gvisor__Sentry__CloneInfo clone = GVISOR__SENTRY__CLONE_INFO__INIT;
        clone.context_data = &ctx;
        ctx.time_ns = 1700000000000000000 + k;
        clone.created_thread_id = clone.created_thread_group_id = 2 + k;
        clone.created_thread_start_time_ns = 1700000000000000000 + k;
        size_t n = protobuf_c_message_get_packed_size(&clone.base);
        assert_true(n + WIRE_HEADER_MIN <= sizeof(pkt));
        wire_header_write(pkt, 2, 0);
        protobuf_c_message_pack(&clone.base, pkt + WIRE_HEADER_MIN);
        send_bytes(fd, pkt, WIRE_HEADER_MIN + n);
    }
    wait_count(d, "SELECT count(*) FROM events", 100);
    const char *sock = metrics + strlen("unix:");
    double held = metric_scrape(sock, "seccheckd_rules_processes");   /* the connection still open */
    double evicted = metric_scrape(sock, "seccheckd_rules_process_evictions_total");
    close(fd);
    wait_closed(d, 1);
    sleep_ms(300);   /* a batch after the close: its table is gone */
    double after_close = metric_scrape(sock, "seccheckd_rules_processes");
    assert_int_equal(daemon_stop(d), 0);
    if (held != 16 || evicted != 101 - 16 || after_close != 0)   /* sh and its 100 children */
        fail_msg("processes %g (16), evictions %g (85), after the close %g (0)", held, evicted, after_close);
}

/* --rules repeats: the files load in order and a later one extends an
 * earlier one's list; the command line's list replaces the config file's. */
static void test_rules_files_in_order(void **state)
{
    struct daemon *d = *state;
    char *base = write_rules(d, "base.yaml", "- list: readers\n  items: [cat]\n"
                                             "- rule: Reader opens\n  desc: d\n"
                                             "  condition: evt.type = openat and evt.dir = < and proc.name in (readers)\n"
                                             "  output: \"%proc.name opened %fd.name\"\n  priority: NOTICE\n");
    char *tune = write_rules(d, "tune.yaml", "- list: readers\n  items: [wc]\n  override: {items: append}\n");
    char *ignored = write_rules(d, "config.yaml", openat_rule);
    char conf[400], text[600];
    snprintf(conf, sizeof(conf), "%s/seccheckd.conf", d->dir);
    snprintf(text, sizeof(text), "rules = %s\nalerts-rate = 0\n", ignored);
    write_file(conf, text);
    const char *args[] = {"--config", conf, "--rules", base, "--rules", tune, NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    replay(d->socket, TRACES_DIR "/mixed_syscalls.trace");
    wait_closed(d, 1);
    assert_int_equal(daemon_stop(d), 0);
    long long readers = dbq(d, "SELECT count(*) FROM events WHERE " OPENAT_EXITS " AND process_name IN ('cat', 'wc')");
    assert_true(readers > dbq(d, "SELECT count(*) FROM events WHERE " OPENAT_EXITS " AND process_name = 'cat'"));
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts WHERE rule = 'Reader opens'"), readers);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts WHERE rule <> 'Reader opens'"), 0);
    assert_int_equal(daemon_log_count(d, "from 2 files"), 1);
}

/* Rules files that do not load stop the daemon at start, naming each
 * error; --alerts-out without rules is a usage error. */
static void test_bad_rules_refused(void **state)
{
    struct daemon *d = *state;
    const char *args[] = {"--rules", write_rules(d, "bad.yaml", "- rule: X\n  desc: x\n  condition: proc.nam = a\n"
                                                                "  output: x\n  priority: WARNING\n"), NULL};
    assert_false(daemon_start(d, SECCHECKD_BIN, args));
    assert_int_equal(d->exit_status, 2);
    char *log = daemon_read_log(d);
    if (!strstr(log, "bad.yaml:3:") || !strstr(log, "proc.nam"))
        fail_msg("the unknown field is not named with its line: %s", log);
    free(log);
    const char *alone[] = {"--alerts-out", "-", NULL};
    assert_false(daemon_start(d, SECCHECKD_BIN, alone));
    assert_int_equal(d->exit_status, 2);
    assert_int_equal(daemon_log_count(d, "--alerts-out needs --rules"), 1);
}

static void send_range(int fd, const struct replay_trace *t, size_t from, size_t to);

/* A restart whose rules files have an error is refused (the build to run
 * checks them first): the running image keeps its connection and its rules;
 * once the file is fixed the restart goes through with the new set. */
static void test_restart_refused_on_broken_rules(void **state)
{
    struct daemon *d = *state;
    char *path = write_rules(d, "r.yaml", openat_rule);
    const char *args[] = {"--rules", path, "--alerts-rate", "0", NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    int fd = replay_open(d->socket, 1);
    assert_true(fd >= 0);
    write_rules(d, "r.yaml", "- rule: Broken\n  desc: x\n  condition: evt.type = openat and\n  output: x\n"
                             "  priority: WARNING\n");
    kill(d->pid, SIGUSR2);
    assert_true(daemon_wait_log(d, "restart refused", 1, 40000));
    assert_int_equal(daemon_log_count(d, "r.yaml:3:"), 1);   /* the check named the error */
    struct replay_trace t;
    assert_int_equal(trace_load_named(&t, "mixed_syscalls"), 0);
    send_range(fd, &t, 0, t.count);   /* the held connection, still read, by the running rules */
    wait_count(d, "SELECT count(*) FROM alerts", MIXED_OPENAT_EXITS);
    write_rules(d, "r.yaml", cat_rule);
    kill(d->pid, SIGUSR2);
    assert_true(daemon_wait_log(d, "restart: adopted 1 connections", 1, 40000));
    send_range(fd, &t, 0, t.count);
    close(fd);
    replay_trace_free(&t);
    wait_closed(d, 1);
    assert_int_equal(daemon_stop(d), 0);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts WHERE rule = 'Openat exit'"), MIXED_OPENAT_EXITS);
    assert_true(dbq(d, "SELECT count(*) FROM alerts WHERE rule = 'Cat at work'") > 0);
    assert_int_equal(dbq(d, "SELECT count(DISTINCT conn_id) FROM events"), 1);
}

/* exec_loop: sh runs /bin/true 200 times; each child's parent is known only
 * from sh's sentry/clone before it. Cut after one such clone, restart, send
 * the rest: the first exec after the restart still names sh. */
static const char parent_rule[] =
    "- rule: True run by sh\n"
    "  desc: sh started /bin/true\n"
    "  condition: evt.type = execve and proc.name = true and proc.pname = sh\n"
    "  output: \"%proc.name by %proc.pname\"\n"
    "  priority: NOTICE\n";

/* Index of the 100th sentry/clone (message_type 2) packet. */
static size_t cut_after_clone(const struct replay_trace *t)
{
    int clones = 0;
    for (size_t i = 0; i < t->count; i++)
        if (t->lengths[i] >= 8 && t->packets[i][2] == 2 && ++clones == 100)
            return i;
    fail_msg("exec_loop has fewer than 100 clones");
    return 0;
}

static void send_range(int fd, const struct replay_trace *t, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        assert_int_equal(replay_send(fd, t->packets[i], t->lengths[i]), 0);
}

static void expect_every_true_named(const struct daemon *d)
{
    long long execs = dbq(d, "SELECT count(*) FROM events WHERE msg_type = 3 AND json_extract(detail, "
                             "'$.binary_path') = '/usr/bin/true'");
    assert_int_equal(execs, 200);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts WHERE rule = 'True run by sh'"), execs);
}

static void test_sigusr2_keeps_process_parents(void **state)
{
    struct daemon *d = *state;
    struct replay_trace t;
    assert_int_equal(trace_load_named(&t, "exec_loop"), 0);
    const char *args[] = {"--rules", write_rules(d, "r.yaml", parent_rule), "--alerts-rate", "0", NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    int fd = replay_open(d->socket, 1);
    assert_true(fd >= 0);
    size_t cut = cut_after_clone(&t) + 1;
    send_range(fd, &t, 0, cut);
    sleep_ms(300);   /* committed: the new image rebuilds from the database */
    kill(d->pid, SIGUSR2);
    assert_true(daemon_wait_log(d, "restart: adopted", 1, 10000));
    send_range(fd, &t, cut, t.count);
    close(fd);
    replay_trace_free(&t);
    wait_closed(d, 1);
    assert_int_equal(daemon_stop(d), 0);
    assert_int_equal(daemon_log_count(d, "rules: process tables rebuilt"), 1);
    expect_every_true_named(d);
}

/* A sentry/clone of pid 1 creating child, at time_ns, on fd. */
static void send_clone(int fd, const char *container, int64_t time_ns, int32_t child)
{
    Gvisor__Common__ContextData ctx = GVISOR__COMMON__CONTEXT_DATA__INIT;
    ctx.container_id = (char *)container;
    ctx.process_name = (char *)"sh";
    ctx.thread_id = ctx.thread_group_id = 1;
    ctx.thread_group_start_time_ns = time_ns;
    ctx.time_ns = time_ns;
    Gvisor__Sentry__CloneInfo clone = GVISOR__SENTRY__CLONE_INFO__INIT;
    clone.context_data = &ctx;
    clone.created_thread_id = clone.created_thread_group_id = child;
    clone.created_thread_start_time_ns = time_ns;
    uint8_t pkt[512];
    size_t n = protobuf_c_message_get_packed_size(&clone.base);
    assert_true(n + WIRE_HEADER_MIN <= sizeof(pkt));
    wire_header_write(pkt, 2, 0);
    protobuf_c_message_pack(&clone.base, pkt + WIRE_HEADER_MIN);
    send_bytes(fd, pkt, WIRE_HEADER_MIN + n);
}

/* Issue 24 item 5: one clone dated 2116 from another sandbox, then
 * SIGUSR2: the victim's processes are rebuilt all the same (the window is
 * the daemon's receive times). Fails before, the window anchored on the
 * newest event's own time: 199 != 200 (the first exec after the restart
 * did not name sh). */
static void test_future_dated_event_keeps_others_history(void **state)
{
    struct daemon *d = *state;
    struct replay_trace t;
    assert_int_equal(trace_load_named(&t, "exec_loop"), 0);
    const char *args[] = {"--rules", write_rules(d, "r.yaml", parent_rule), "--alerts-rate", "0", NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    int fd = replay_open(d->socket, 1);
    int attacker = replay_open(d->socket, 1);
    assert_true(fd >= 0 && attacker >= 0);
    size_t cut = cut_after_clone(&t) + 1;
    send_range(fd, &t, 0, cut);
    send_clone(attacker, "elsewhere", (int64_t)4607712000 * 1000000000, 2);   /* 2116-01-01 */
    sleep_ms(300);   /* committed: the new image rebuilds from the database */
    kill(d->pid, SIGUSR2);
    assert_true(daemon_wait_log(d, "restart: adopted", 1, 10000));
    send_range(fd, &t, cut, t.count);
    close(fd);
    close(attacker);
    replay_trace_free(&t);
    wait_closed(d, 2);
    assert_int_equal(daemon_stop(d), 0);
    expect_every_true_named(d);
}

/* A plain restart: the sandbox connects again (runsc trace create --force),
 * a new connection of the same container from the same peer process takes
 * the old one's table. */
static void test_plain_restart_keeps_process_parents(void **state)
{
    struct daemon *d = *state;
    struct replay_trace t;
    assert_int_equal(trace_load_named(&t, "exec_loop"), 0);
    const char *args[] = {"--rules", write_rules(d, "r.yaml", parent_rule), "--alerts-rate", "0", NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    int fd = replay_open(d->socket, 1);
    assert_true(fd >= 0);
    size_t cut = cut_after_clone(&t) + 1;
    send_range(fd, &t, 0, cut);
    sleep_ms(300);
    assert_int_equal(daemon_stop(d), 0);
    close(fd);
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    fd = replay_open(d->socket, 1);
    assert_true(fd >= 0);
    send_range(fd, &t, cut, t.count);
    close(fd);
    replay_trace_free(&t);
    wait_closed(d, 1);
    assert_int_equal(daemon_stop(d), 0);
    assert_int_equal(daemon_log_count(d, "rules: process tables rebuilt"), 1);
    expect_every_true_named(d);
}

/* Issue 24 item 6, the auditor's experiment: after a plain restart another
 * sandbox (another process) connects first, naming the victim's container
 * in its first event; the victim connects again, from the process that
 * made its earlier connection, and gets its table back: every exec after
 * the restart still names sh. Fails before (the first connection naming
 * the container took the table, and its close ended it): 199 != 200. */
static void test_plain_restart_table_not_taken_by_a_claim(void **state)
{
    struct daemon *d = *state;
    struct replay_trace t;
    assert_int_equal(trace_load_named(&t, "exec_loop"), 0);
    const char *args[] = {"--rules", write_rules(d, "r.yaml", parent_rule), "--alerts-rate", "0", NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    int fd = replay_open(d->socket, 1);
    assert_true(fd >= 0);
    size_t cut = cut_after_clone(&t) + 1;
    send_range(fd, &t, 0, cut);
    sleep_ms(300);
    assert_int_equal(daemon_stop(d), 0);
    close(fd);
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(d->db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT container_id FROM events WHERE container_id <> '' LIMIT 1", -1,
                                        &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    char container[128];
    snprintf(container, sizeof(container), "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    pid_t other = reaper_fork();   /* another process: another peer */
    assert_true(other >= 0);
    if (other == 0) {
        int afd = replay_open(d->socket, 1);
        if (afd < 0)
            _exit(1);
        send_clone(afd, container, 1700000000000000000, 77);
        sleep_ms(200);
        _exit(0);
    }
    assert_int_equal(reaper_wait(other), 0);
    wait_count(d, "SELECT count(*) FROM events WHERE conn_id = (SELECT max(id) FROM connections)", 1);
    fd = replay_open(d->socket, 1);
    assert_true(fd >= 0);
    send_range(fd, &t, cut, t.count);
    close(fd);
    replay_trace_free(&t);
    wait_closed(d, 2);
    assert_int_equal(daemon_stop(d), 0);
    expect_every_true_named(d);
    assert_int_equal(daemon_log_count(d, "its process table starts empty (1 so far)"), 1);
    assert_int_equal(daemon_log_count(d, "takes over the process table of connection 1 (the same peer"), 1);
}

/* A rule needing a field gVisor never reports (issue 25 item 4): with
 * rules-absent-fields = run in the config file it runs (an always-absent
 * field: `not ... contains` is true); the file changed to disable and
 * SIGHUP: the reloaded set has it disabled, one warning, no alert. */
static void test_rules_absent_fields(void **state)
{
    struct daemon *d = *state;
    const char *rules = write_rules(d, "r.yaml", "- rule: caps\n  desc: d\n  condition: evt.type = openat and "
                                                  "evt.dir = < and not thread.cap_effective contains CAP_SYS_ADMIN\n"
                                                  "  output: '%fd.name %thread.cap_effective'\n  priority: Notice\n");
    char cfg_text[1024];
    snprintf(cfg_text, sizeof(cfg_text), "rules = %s\nrules-absent-fields = run\nalerts-rate = 0\n", rules);
    const char *cfg = write_rules(d, "seccheckd.conf", cfg_text);
    const char *args[] = {"--config", cfg, NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    replay(d->socket, TRACES_DIR "/mixed_syscalls.trace");
    wait_closed(d, 1);
    wait_count(d, "SELECT count(*) FROM alerts", MIXED_OPENAT_EXITS);
    snprintf(cfg_text, sizeof(cfg_text), "rules = %s\nrules-absent-fields = disable\nalerts-rate = 0\n", rules);
    write_rules(d, "seccheckd.conf", cfg_text);
    kill(d->pid, SIGHUP);
    assert_true(daemon_wait_log(d, "rules: 0 rules enabled of 1", 1, 5000));
    replay(d->socket, TRACES_DIR "/mixed_syscalls.trace");
    wait_closed(d, 2);
    assert_int_equal(daemon_stop(d), 0);
    assert_int_equal(daemon_log_count(d, "rule 'caps' needs fields gVisor never reports: thread.cap_effective; it "
                                         "runs"), 1);
    assert_int_equal(daemon_log_count(d, "rule 'caps' is disabled: its condition needs fields gVisor never "
                                         "reports: thread.cap_effective"), 1);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts a JOIN events e ON e.id = a.event_id WHERE e.conn_id = 1 "
                            "AND json_extract(a.output_fields, '$.\"thread.cap_effective\"') IS NULL"),
                     MIXED_OPENAT_EXITS);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts a JOIN events e ON e.id = a.event_id WHERE e.conn_id = 2"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_one_alert_per_matching_row, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_detector_without_storage, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_alert_lines_are_falco_json, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_throttling, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_sighup_reload, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_kill9_keeps_alerts_with_events, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_match_all_rule_is_held_to_the_ceiling, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_one_connection_cannot_empty_anothers_bucket, daemon_setup,
                                        daemon_teardown),
        cmocka_unit_test_setup_teardown(test_ceiling_holds_whatever_a_connection_sends, daemon_setup,
                                        daemon_teardown),
        cmocka_unit_test_setup_teardown(test_process_table_bounded_and_counted, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_rules_files_in_order, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_bad_rules_refused, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_sigusr2_keeps_process_parents, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_restart_refused_on_broken_rules, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_plain_restart_keeps_process_parents, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_future_dated_event_keeps_others_history, daemon_setup,
                                        daemon_teardown),
        cmocka_unit_test_setup_teardown(test_plain_restart_table_not_taken_by_a_claim, daemon_setup,
                                        daemon_teardown),
        cmocka_unit_test_setup_teardown(test_rules_absent_fields, daemon_setup, daemon_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
