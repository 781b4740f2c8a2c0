/* Integration: `seccheckd events` on databases a real daemon stored from
 * the recorded traces: the compact line of known events, the filters,
 * JSON lines, --follow picking up what commits after it started (without
 * holding up the daemon), no -wal/-shm left behind, hostile strings kept
 * on their line, bad arguments; `seccheckd types`. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
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
#include "gvisor/container.pb-c.h"
#include "gvisor/syscall.pb-c.h"
#include "wire.h"

/* ---- running the command ---- */

struct output {
    char *out, *err;
    size_t out_len;
    int status;
};

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return buf;
}

/* Starts `seccheckd events ARGS...` with stdout and stderr in files of d's
 * directory; its pid. */
static pid_t start_events(const struct daemon *d, const char *const *args)
{
    char out[400], err[400];
    snprintf(out, sizeof(out), "%s/events.out", d->dir);
    snprintf(err, sizeof(err), "%s/events.err", d->dir);
    const char *argv[24] = {SECCHECKD_BIN, "events"};
    size_t n = 2;
    for (; args[n - 2] && n < 23; n++)
        argv[n] = args[n - 2];
    argv[n] = NULL;
    pid_t pid = reaper_fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600), e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(o, 1);
        dup2(e, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static void collect(const struct daemon *d, struct output *r)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/events.out", d->dir);
    r->out = slurp(path, &r->out_len);
    snprintf(path, sizeof(path), "%s/events.err", d->dir);
    r->err = slurp(path, NULL);
}

static struct output run_events(const struct daemon *d, const char *const *args)
{
    struct output r;
    r.status = reaper_wait_within(start_events(d, args), 60000);
    collect(d, &r);
    return r;
}

static void output_free(struct output *r)
{
    free(r->out);
    free(r->err);
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* Lines of out containing every one of the needles. */
static size_t lines_with(const char *out, const char *a, const char *b)
{
    size_t n = 0;
    for (const char *line = out; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char *copy = strndup(line, len);
        n += strstr(copy, a) && (!b || strstr(copy, b));
        free(copy);
        line += len + (end != NULL);
    }
    return n;
}

static void store_traces(struct daemon *d)
{
    assert_true(daemon_start(d, SECCHECKD_BIN, NULL));
    assert_int_equal(replay_file(d->socket, TRACES_DIR "/mixed_syscalls.trace"), 0);
    assert_int_equal(replay_file(d->socket, TRACES_DIR "/exec_loop.trace"), 0);
    assert_int_equal(replay_file(d->socket, TRACES_DIR "/drops.trace"), 0);
    assert_true(daemon_wait_log(d, "connection 3 closed", 1, 10000));
    assert_int_equal(daemon_stop(d), 0);
}

static bool exists(const char *db, const char *suffix)
{
    char path[512];
    snprintf(path, sizeof(path), "%s%s", db, suffix);
    return access(path, F_OK) == 0;
}

/* ---- the tests ---- */

/* One line per event, in id order, saying what happened. */
static void test_compact_lines(void **state)
{
    struct daemon *d = *state;
    store_traces(d);
    struct output r = run_events(d, (const char *const[]){"--db", d->db, NULL});
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, "");
    assert_int_equal(count_lines(r.out), dbq(d, "SELECT count(*) FROM events"));
    /* the first event of the first trace, the container's start */
    const char *first = "2026-11-30T00:30:58.854Z runsc-236711 sh[1] start runsc-236711 /bin/sh -c \"cd /tmp; ";
    if (strncmp(r.out, first, strlen(first)) != 0)
        fail_msg("first line: %.200s", r.out);
    const char *lines[] = {
        " runsc-236711 sh[1] openat /tmp/mixed_sh.txt O_WRONLY|O_CREAT|O_TRUNC 0666 = 3\n",
        " runsc-236711 sh[1] openat /etc/ld.so.cache O_RDONLY|O_CLOEXEC = 3\n",
        " runsc-236711 sh[2] execve /usr/bin/cat cat /tmp/mixed_sh.txt = 0\n",
        " runsc-236711 sh[2] exec /usr/bin/cat cat /tmp/mixed_sh.txt\n",
        " runsc-236711 python3[4] connect 127.0.0.1:27127",
        " runsc-236711 python3[4] connect [::1]:9",
        " runsc-236711 python3[4] connect unix:/tmp/mixed_wl/no-such-socket = ENOENT\n",
        " runsc-236711 python3[4] bind unix:/tmp/mixed_wl/uds = 0\n",
        " runsc-236711 python3[5] setuid id=0 = EPERM\n",
        " runsc-924761 sh[3] exec /usr/bin/true /bin/true\n",
        " runsc-924761 sh[1] clone process 3\n",
        " execve /nonexistent /nonexistent = ENOENT\n",
        " runsc-740029 [2] write 3</dev/null> 1\n",   /* drops.trace: thread ids, no group ids */
    };
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
        if (!strstr(r.out, lines[i]))
            fail_msg("no line with '%s'", lines[i]);
    assert_int_equal(lines_with(r.out, " exec /usr/bin/true /bin/true", NULL), 200);
    output_free(&r);
}

/* --type, --container, --process, --since, alone and together. */
static void test_filters(void **state)
{
    struct daemon *d = *state;
    store_traces(d);
    const struct {
        const char *args[8];
        const char *where;   /* the rows it must print, as SQL */
    } cases[] = {
        {{"--type", "SENTRY_EXEC"}, "msg_type = 3"},
        {{"--type", "3,syscall_execve"}, "msg_type IN (3, 11)"},
        {{"--container", "runsc-924761"}, "container_id = 'runsc-924761'"},
        {{"--process", "python3"}, "process_name = 'python3'"},
        {{"--container", "runsc-924761", "--type", "SENTRY_EXEC", "--process", "sh"},
         "container_id = 'runsc-924761' AND msg_type = 3 AND process_name = 'sh'"},
        {{"--since", "1h", "--container", "runsc-740029"}, "container_id = 'runsc-740029'"},
        {{"--container", "no-such"}, "0"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *args[12] = {"--db", d->db};
        memcpy(args + 2, cases[i].args, sizeof(cases[i].args));
        struct output r = run_events(d, args);
        long long want = dbq(d, "SELECT count(*) FROM events WHERE %s", cases[i].where);
        if (r.status != 0 || (long long)count_lines(r.out) != want)
            fail_msg("case %zu: exit %d, %zu lines, want %lld: %s", i, r.status, count_lines(r.out), want, r.err);
        output_free(&r);
    }
    assert_true(dbq(d, "SELECT count(*) FROM events WHERE msg_type = 3") == 208);
    struct output r = run_events(d, (const char *const[]){"--db", d->db, "--type", "SENTRY_EXEC", NULL});
    assert_int_equal(lines_with(r.out, " exec /", NULL), 208);
    output_free(&r);
    /* received over a second ago: none in the last second */
    sleep_ms(1100);
    r = run_events(d, (const char *const[]){"--db", d->db, "--since", "1", NULL});
    assert_int_equal(r.status, 0);
    assert_int_equal(r.out_len, 0);
    output_free(&r);
}

/* -o json: events_full's row per line, the same message. */
static void test_json(void **state)
{
    struct daemon *d = *state;
    store_traces(d);
    struct output r = run_events(d, (const char *const[]){"--db", d->db, "-o", "json", "--type", "SYSCALL_OPEN", NULL});
    assert_int_equal(r.status, 0);
    long long opens = dbq(d, "SELECT count(*) FROM events WHERE msg_type = 7");
    assert_int_equal(count_lines(r.out), opens);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(d->db, &db), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT json_valid(?1), json_extract(?1, '$.type_name'), "
                                            "json_extract(?1, '$.message') = (SELECT json(message) FROM events_full"
                                            " WHERE id = json_extract(?1, '$.id'))", -1, &st, NULL), SQLITE_OK);
    size_t same = 0;
    for (char *line = r.out, *end; (end = strchr(line, '\n')); line = end + 1) {
        sqlite3_bind_text(st, 1, line, (int)(end - line), SQLITE_TRANSIENT);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_int_equal(sqlite3_column_int(st, 0), 1);
        assert_string_equal((const char *)sqlite3_column_text(st, 1), "SYSCALL_OPEN");
        same += sqlite3_column_int(st, 2) == 1;
        sqlite3_reset(st);
    }
    assert_int_equal(same, opens);
    sqlite3_finalize(st);
    sqlite3_close(db);
    assert_non_null(strstr(r.out, "\"pathname\":\"/tmp/mixed_sh.txt\""));
    output_free(&r);
}

/* --follow prints the last 10 stored events that pass the filters, as
 * tail -f does (before: none), then what commits, as it commits, while the
 * daemon stores every event; SIGTERM ends it with status 0. */
static void test_follow(void **state)
{
    struct daemon *d = *state;
    assert_true(daemon_start(d, SECCHECKD_BIN, NULL));
    assert_int_equal(replay_file(d->socket, TRACES_DIR "/mixed_syscalls.trace"), 0);
    assert_int_equal(replay_file(d->socket, TRACES_DIR "/exec_loop.trace"), 0);
    assert_true(daemon_wait_log(d, "connection 2 closed", 1, 10000));
    for (int i = 0; i < 100 && dbq(d, "SELECT count(*) FROM events WHERE msg_type = 3") < 208; i++)
        sleep_ms(50);   /* the batches committed: 6 execs of mixed's, 202 of exec_loop's */
    pid_t follower = start_events(d, (const char *const[]){"--db", d->db, "--follow", "--type",
                                                           "SENTRY_EXEC,CONTAINER_START", NULL});
    char wal[420];
    snprintf(wal, sizeof(wal), "%s-wal", d->db);
    assert_true(wait_file_open(follower, wal, 10000));
    char out[400];
    snprintf(out, sizeof(out), "%s/events.out", d->dir);
    size_t lines = 0;
    for (int i = 0; i < 100 && lines < 10; i++) {
        sleep_ms(50);
        char *text = slurp(out, NULL);
        lines = count_lines(text);
        free(text);
    }
    assert_int_equal(lines, 10);   /* the last 10 stored */
    assert_int_equal(replay_file(d->socket, TRACES_DIR "/mixed_syscalls.trace"), 0);
    for (int i = 0; i < 100 && lines < 16; i++) {   /* mixed again: 1 start + 5 execs... */
        sleep_ms(100);
        char *text = slurp(out, NULL);
        lines = count_lines(text);
        free(text);
    }
    long long mixed = dbq(d, "SELECT count(*) FROM events WHERE msg_type IN (1, 3) AND conn_id = 1");
    assert_int_equal(lines, 10 + mixed);
    assert_int_equal(reaper_poll(follower), -1);   /* still following */
    kill(follower, SIGTERM);
    assert_int_equal(reaper_wait_within(follower, 5000), 0);
    struct output r;
    collect(d, &r);
    assert_string_equal(r.err, "");
    assert_int_equal(lines_with(r.out, "runsc-924761", " exec "), 10);   /* exec_loop's last ten */
    assert_int_equal(lines_with(r.out, "runsc-236711", NULL), mixed);  /* what came after it started */
    output_free(&r);
    assert_int_equal(daemon_stop(d), 0);
    assert_int_equal(dbq(d, "SELECT count(*) FROM runs WHERE received = stored"), 1);
    assert_int_equal(daemon_log_count(d, "locked"), 0);
}

/* -n N: the last N stored that pass the filters, with or without --follow;
 * a filter that matches no stored event says so, and which, on stderr
 * (before: silent, exit 0); an empty database says it holds none. */
static void test_last_lines_and_misses(void **state)
{
    struct daemon *d = *state;
    store_traces(d);
    struct output r = run_events(d, (const char *const[]){"--db", d->db, "-n", "3", "--type", "SENTRY_EXEC", NULL});
    assert_int_equal(r.status, 0);
    assert_int_equal(count_lines(r.out), 3);
    long long last = dbq(d, "SELECT max(id) FROM events WHERE msg_type = 3");
    char *line3 = strrchr(r.out, '\n');
    assert_non_null(line3);
    output_free(&r);
    r = run_events(d, (const char *const[]){"--db", d->db, "-n", "3", "-o", "json", "--type", "SENTRY_EXEC", NULL});
    char want[64];
    snprintf(want, sizeof(want), "{\"id\":%lld,", last);
    assert_non_null(strstr(r.out, want));   /* the newest is among them */
    output_free(&r);
    r = run_events(d, (const char *const[]){"--db", d->db, "-n", "0", NULL});
    assert_int_equal(r.status, 0);
    assert_int_equal(r.out_len, 0);
    assert_string_equal(r.err, "");   /* none asked for: nothing to explain */
    output_free(&r);
    /* with --container too (issue 31 item 8: -n 5 printed all 128 of the
     * container's events, its offset bound where the filter's id was) */
    r = run_events(d, (const char *const[]){"--db", d->db, "--container", "runsc-236711", "-n", "5", NULL});
    assert_int_equal(r.status, 0);
    assert_int_equal(count_lines(r.out), 5);
    assert_int_equal(lines_with(r.out, "runsc-236711", NULL), 5);
    snprintf(want, sizeof(want), "%lld", dbq(d, "SELECT max(id) FROM events WHERE container_id = 'runsc-236711'"));
    output_free(&r);
    r = run_events(d, (const char *const[]){"--db", d->db, "--container", "runsc-236711", "-n", "1", "-o", "json",
                                            NULL});
    char want_id[80];
    snprintf(want_id, sizeof(want_id), "{\"id\":%s,", want);
    assert_non_null(strstr(r.out, want_id));   /* the last one */
    output_free(&r);
    /* --follow with --container: its last 10 first, as tail -f (it dumped them all) */
    pid_t follower = start_events(d, (const char *const[]){"--db", d->db, "--follow", "--container", "runsc-236711",
                                                           NULL});
    char wal[420];
    snprintf(wal, sizeof(wal), "%s-wal", d->db);
    assert_true(wait_file_open(follower, wal, 10000));
    sleep_ms(300);
    kill(follower, SIGTERM);
    assert_int_equal(reaper_wait_within(follower, 5000), 0);
    collect(d, &r);
    assert_int_equal(count_lines(r.out), 10);
    assert_int_equal(lines_with(r.out, "runsc-236711", NULL), 10);
    output_free(&r);
    r = run_events(d, (const char *const[]){"--db", d->db, "--container", "no\x1b[2Jsuch", "--type", "SENTRY_EXEC",
                                            NULL});
    assert_int_equal(r.status, 0);
    assert_int_equal(r.out_len, 0);
    assert_non_null(strstr(r.err, "seccheckd events: no stored event passes the filters\n"));
    assert_non_null(strstr(r.err, "  --container 'no\\x1b[2Jsuch': no event of that container"));
    assert_null(strstr(r.err, "--type"));   /* that one alone matches */
    output_free(&r);
    r = run_events(d, (const char *const[]){"--db", d->db, "--type", "SYSCALL_PTRACE", "--process", "nobody", NULL});
    if (!strstr(r.err, "  --type 'SYSCALL_PTRACE': no event of those types"))
        fail_msg("stderr: %s", r.err);
    assert_non_null(strstr(r.err, "  --process 'nobody': no event of a process of that name"));
    output_free(&r);
    /* An empty database. */
    struct daemon e;
    daemon_prepare(&e);
    assert_true(daemon_start(&e, SECCHECKD_BIN, NULL));
    assert_int_equal(daemon_stop(&e), 0);
    r = run_events(d, (const char *const[]){"--db", e.db, "--type", "SENTRY_EXEC", NULL});
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "holds no events yet"));
    output_free(&r);
    daemon_cleanup(&e);
}

/* Lines of the follower's output so far. */
static size_t follower_lines(const struct daemon *d)
{
    char out[400];
    snprintf(out, sizeof(out), "%s/events.out", d->dir);
    char *text = slurp(out, NULL);
    size_t n = count_lines(text);
    free(text);
    return n;
}

static void wait_follower_lines(const struct daemon *d, size_t n)
{
    for (int i = 0; i < 150 && follower_lines(d) < n; i++)
        sleep_ms(100);
    if (follower_lines(d) != n) {
        char err[400];
        snprintf(err, sizeof(err), "%s/events.err", d->dir);
        char *text = slurp(err, NULL);
        fail_msg("%zu lines, expected %zu; the follower said: %s", follower_lines(d), n, text);
    }
}

/* A copy of d's database (VACUUM INTO), made while the daemon runs. */
static void copy_database(const struct daemon *d, const char *copy)
{
    sqlite3 *db;
    char sql[600];
    snprintf(sql, sizeof(sql), "VACUUM INTO '%s'", copy);
    assert_int_equal(sqlite3_open(d->db, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* --follow follows the file at the path, as the daemon does: deleted under
 * it, then replaced by a copy made before, the events stored since in each
 * file are printed, once, and none of the copy's old ones (before: nothing
 * more was printed after the file was deleted). */
static void test_follow_deleted_and_replaced(void **state)
{
    struct daemon *d = *state;
    assert_true(daemon_start(d, SECCHECKD_BIN, NULL));
    assert_int_equal(replay_file(d->socket, TRACES_DIR "/mixed_syscalls.trace"), 0);
    assert_true(daemon_wait_log(d, "connection 1 closed", 1, 10000));
    sleep_ms(300);   /* the batch committed */
    char copy[400];
    snprintf(copy, sizeof(copy), "%s/copy.db", d->dir);
    copy_database(d, copy);
    pid_t follower = start_events(d, (const char *const[]){"--db", d->db, "--follow", "-n", "0", "--type",
                                                           "SENTRY_EXEC,CONTAINER_START", NULL});
    char wal[420];
    snprintf(wal, sizeof(wal), "%s-wal", d->db);
    assert_true(wait_file_open(follower, wal, 10000));   /* it has read (its -wal open), before the file goes */
    assert_int_equal(unlink(d->db), 0);
    assert_int_equal(replay_file(d->socket, TRACES_DIR "/exec_loop.trace"), 0);
    assert_true(daemon_wait_log(d, "was deleted while in use", 1, 5000));
    wait_follower_lines(d, 203);   /* exec_loop: 1 start + 202 execs */
    assert_int_equal(replay_file(d->socket, TRACES_DIR "/exec_loop.trace"), 0);   /* into the new file only */
    wait_follower_lines(d, 406);
    assert_int_equal(rename(copy, d->db), 0);
    assert_int_equal(replay_file(d->socket, TRACES_DIR "/exec_loop.trace"), 0);
    assert_true(daemon_wait_log(d, "was replaced by another file", 1, 5000));
    assert_int_equal(replay_file(d->socket, TRACES_DIR "/exec_loop.trace"), 0);
    wait_follower_lines(d, 812);
    sleep_ms(300);
    assert_int_equal(reaper_poll(follower), -1);   /* still following */
    kill(follower, SIGTERM);
    assert_int_equal(reaper_wait_within(follower, 5000), 0);
    struct output r;
    collect(d, &r);
    assert_int_equal(lines_with(r.out, "runsc-924761", NULL), 812);
    assert_int_equal(lines_with(r.out, "runsc-236711", NULL), 0);   /* the copy's, stored before */
    assert_non_null(strstr(r.err, "is not the file it was (deleted or replaced): following the file at the path"));
    assert_non_null(strstr(r.err, "reading "));
    output_free(&r);
    assert_int_equal(daemon_stop(d), 0);
}

/* exec, connect and open in colour on a terminal or with --color always;
 * NO_COLOR and a pipe keep the lines plain, -o json too. */
static void test_color(void **state)
{
    struct daemon *d = *state;
    store_traces(d);
    struct output r = run_events(d, (const char *const[]){"--db", d->db, "--color", "always", NULL});
    assert_int_equal(r.status, 0);
    assert_true(lines_with(r.out, "\x1b[32mexec\x1b[0m ", NULL) > 0);
    assert_true(lines_with(r.out, "\x1b[35mconnect\x1b[0m ", NULL) > 0);
    assert_true(lines_with(r.out, "\x1b[34mopenat\x1b[0m ", NULL) > 0);
    assert_int_equal(lines_with(r.out, "\x1b[", NULL),
                     dbq(d, "SELECT count(*) FROM events WHERE msg_type IN (3, 7, 10, 11)"));
    output_free(&r);
    r = run_events(d, (const char *const[]){"--db", d->db, "-o", "json", "--color", "always", NULL});
    assert_null(strchr(r.out, '\x1b'));
    output_free(&r);
    r = run_events(d, (const char *const[]){"--db", d->db, NULL});
    assert_null(strchr(r.out, '\x1b'));
    output_free(&r);
    size_t max = 8 << 20;
    char *out = malloc(max);
    assert_non_null(out);
    const char *argv[] = {SECCHECKD_BIN, "events", "--db", d->db, "--type", "SENTRY_EXEC", NULL};
    assert_int_equal(run_on_terminal(argv, NULL, out, max), 0);
    assert_non_null(strstr(out, "\x1b[32mexec\x1b[0m "));
    assert_int_equal(run_on_terminal(argv, "1", out, max), 0);
    assert_null(strchr(out, '\x1b'));
    free(out);
}

/* A database without -wal and -shm (the daemon stopped) has none after a
 * run, nor after --follow is stopped. */
static void test_leaves_no_wal(void **state)
{
    struct daemon *d = *state;
    store_traces(d);
    assert_false(exists(d->db, "-wal"));
    assert_false(exists(d->db, "-shm"));
    struct output r = run_events(d, (const char *const[]){"--db", d->db, "--type", "SENTRY_EXEC", NULL});
    assert_int_equal(r.status, 0);
    output_free(&r);
    assert_false(exists(d->db, "-wal"));
    assert_false(exists(d->db, "-shm"));
    pid_t follower = start_events(d, (const char *const[]){"--db", d->db, "--follow", "-o", "json", NULL});
    sleep_ms(600);
    kill(follower, SIGINT);
    assert_int_equal(reaper_wait_within(follower, 5000), 0);
    assert_false(exists(d->db, "-wal"));
    assert_false(exists(d->db, "-shm"));
    assert_int_equal(dbq(d, "SELECT count(*) FROM events WHERE msg_type = 3"), 208);   /* nothing written */
}

/* ---- hostile strings ---- */

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

/* Control bytes, escape sequences, bidi overrides, invalid UTF-8 and a
 * 20,000-byte path stay on their line, escaped and cut, in both modes. */
static void test_hostile_strings(void **state)
{
    struct daemon *d = *state;
    assert_true(daemon_start(d, SECCHECKD_BIN, NULL));
    int fd = replay_open(d->socket, 1);
    assert_true(fd >= 0);
    Gvisor__Common__ContextData ctx = GVISOR__COMMON__CONTEXT_DATA__INIT;
    ctx.container_id = "evil\n2026-01-01T00:00:00.000Z forged";
    ctx.process_name = "\x1b[2J\x1b]0;pwned\a";
    ctx.thread_group_id = 7;
    Gvisor__Syscall__Open open = GVISOR__SYSCALL__OPEN__INIT;
    open.context_data = &ctx;
    open.sysno = 257;
    open.pathname = "/tmp/\xe2\x80\xae" "fdp.exe\r\xc2\x9b" "31m\xff\xfe";
    send_message(fd, 7, &open.base);
    char *long_path = malloc(20001);
    assert_non_null(long_path);
    memset(long_path, 'a', 20000);
    long_path[20000] = '\0';
    open.pathname = long_path;
    send_message(fd, 7, &open.base);
    Gvisor__Container__Start start = GVISOR__CONTAINER__START__INIT;
    start.context_data = &ctx;
    char *args[3000];
    for (size_t i = 0; i < 3000; i++)
        args[i] = i % 2 ? "two words" : "\t";
    start.n_args = 3000;
    start.args = args;
    send_message(fd, 1, &start.base);
    close(fd);
    free(long_path);
    assert_true(daemon_wait_log(d, "connection 1 closed", 1, 10000));
    assert_int_equal(daemon_stop(d), 0);

    struct output r = run_events(d, (const char *const[]){"--db", d->db, NULL});
    assert_int_equal(r.status, 0);
    assert_int_equal(count_lines(r.out), 3);
    for (size_t i = 0; i < r.out_len; i++)
        if ((unsigned char)r.out[i] < 0x20 && r.out[i] != '\n')
            fail_msg("a control byte 0x%02x at %zu: %.300s", r.out[i], i, r.out);
    assert_null(strstr(r.out, "\xe2\x80\xae"));
    assert_null(strstr(r.out, "\xc2\x9b"));
    const char *escaped = " \"evil\\n2026-01-01T00:00:00.000Z forged\" \\x1b[2J\\x1b]0;pwned\\x07[7] openat "
                          "/tmp/\\u{202e}fdp.exe\\r\\u{009b}31m\\xff\\xfe O_RDONLY\n";
    if (!strstr(r.out, escaped))
        fail_msg("no line ending '%s' in:\n%.600s", escaped, r.out);
    assert_non_null(strstr(r.out, "\"...[+19744 bytes] O_RDONLY\n"));
    /* every line bounded: the 3000 arguments stop near EVENT_LINE_MAX */
    for (char *line = r.out, *end; (end = strchr(line, '\n')); line = end + 1)
        assert_true(end - line < 4096 + 600);
    assert_non_null(strstr(r.out, " \\t \"two words\" \\t "));
    assert_non_null(strstr(r.out, " more]\n"));
    output_free(&r);

    r = run_events(d, (const char *const[]){"--db", d->db, "-o", "json", NULL});
    assert_int_equal(r.status, 0);
    assert_int_equal(count_lines(r.out), 3);
    for (size_t i = 0; i < r.out_len; i++)
        if ((unsigned char)r.out[i] < 0x20 && r.out[i] != '\n')
            fail_msg("a control byte 0x%02x in JSON at %zu", r.out[i], i);
    assert_null(strstr(r.out, "\xe2\x80\xae"));
    assert_null(strstr(r.out, "\xc2\x9b"));
    assert_non_null(strstr(r.out, "\\u202efdp.exe\\r\\u009b31m"));
    output_free(&r);
}

/* Usage errors exit 2 under the command's name; a database that is not
 * there or not seccheckd's exits 1, saying so. */
static void test_bad_arguments(void **state)
{
    struct daemon *d = *state;
    char notdb[400], other[400];
    snprintf(notdb, sizeof(notdb), "%s/notes.txt", d->dir);
    snprintf(other, sizeof(other), "%s/other.db", d->dir);
    FILE *f = fopen(notdb, "w");
    assert_non_null(f);
    fputs("not a database, but long enough to look like a header to nobody........................\n", f);
    fclose(f);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(other, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE t(x)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    const struct {
        const char *args[6];
        int status;
        const char *want;
    } cases[] = {
        {{NULL}, 2, "seccheckd events: --db PATH is required"},
        {{"--db", other, "--type", "SYSCALL_BOGUS"}, 2, "seccheckd events: --type: unknown message type 'SYSCALL_BOGUS'"},
        {{"--db", other, "--since", "5x"}, 2, "seccheckd events: --since: expected a duration"},
        {{"--db", other, "-o", "xml"}, 2, "seccheckd events: -o: expected compact or json, got 'xml'"},
        {{"--db", other, "extra"}, 2, "seccheckd events: unexpected argument, got 'extra'"},
        {{"--db", other, "-n", "ten"}, 2, "seccheckd events: --lines"},
        {{"--db"}, 2, "seccheckd events: option '--db' needs a value"},
        {{"--bogus"}, 2, "seccheckd events: unknown option '--bogus'"},
        {{"--db", "/nonexistent/x.db"}, 1, "seccheckd events: /nonexistent/x.db: no such database"},
        {{"--db", d->dir}, 1, "is a directory, not a database"},
        {{"--db", other}, 1, "is not a seccheckd database (no events table)"},
        {{"--db", notdb}, 1, "file is not a database"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct output r = run_events(d, cases[i].args);
        if (r.status != cases[i].status || !strstr(r.err, cases[i].want) || r.out_len != 0)
            fail_msg("case %zu: exit %d (want %d), stderr: %s", i, r.status, cases[i].status, r.err);
        output_free(&r);
    }
    assert_false(exists(other, "-wal"));
}

/* `seccheckd types` lists every type by number and name, and each name
 * is one --type (and --keep-types) takes. */
static void test_types(void **state)
{
    struct daemon *d = *state;
    char out[400];
    snprintf(out, sizeof(out), "%s/types.out", d->dir);
    const char *argv[] = {SECCHECKD_BIN, "types", NULL};
    pid_t pid = reaper_fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 1);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    assert_int_equal(reaper_wait(pid), 0);
    char *text = slurp(out, NULL);
    assert_non_null(strstr(text, "\n     1  CONTAINER_START\n"));
    assert_non_null(strstr(text, "\n     7  SYSCALL_OPEN\n"));
    assert_non_null(strstr(text, "\n    38  SYSCALL_PTRACE\n"));
    char names[2048] = "";
    size_t n = 0;
    for (char *line = strchr(text, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        unsigned number;
        char name[64];
        assert_int_equal(sscanf(line + 1, "%u %63s", &number, name), 2);
        snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", n++ ? "," : "", name);
    }
    free(text);
    assert_int_equal(n, 38);
    store_traces(d);
    struct output r = run_events(d, (const char *const[]){"--db", d->db, "--type", names, NULL});
    assert_int_equal(r.status, 0);
    assert_int_equal(count_lines(r.out), dbq(d, "SELECT count(*) FROM events"));
    output_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_compact_lines, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_filters, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_json, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_follow, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_follow_deleted_and_replaced, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_last_lines_and_misses, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_color, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_leaves_no_wal, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_hostile_strings, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_bad_arguments, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_types, daemon_setup, daemon_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
