/* Integration: SIGUSR2 restarts seccheckd in place (same PID, new image)
 * while sandboxes stream, and no connection is lost: every message the
 * clients sent without a client-side drop is stored, each connection keeps
 * its id and counters, and every run's accounting adds up. A build or
 * settings that cannot start never take the connections down: the restart
 * is refused (a config typo, a database in a missing directory, a full
 * disk, a binary that exits), or the build that ran comes back (a new
 * image that fails after its check passed). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon.h"

/* 4 connections for 3 s (12 s under sanitizers, where a restart waits up to
 * a second for a writer that cannot keep up, then takes as long again to
 * commit its queue: it must still find the connections open). */
#ifdef SECCHECKD_SANITIZED
#define LOADGEN_RATE "10000"
#else
#define LOADGEN_RATE "40000"
#endif

/* Runs seccheck-loadgen in the background; its --json goes to out. */
static pid_t start_loadgen(const char *socket, const char *mode, const char *out)
{
    const char *argv[] = {LOADGEN_BIN, "--socket", socket, "--trace", TRACES_DIR "/redis_rw.trace", "--trace",
                          TRACES_DIR "/mixed_syscalls.trace", "--connections", "4", "--mode", mode, "--messages",
                          "120000", "--rate", LOADGEN_RATE, "--json", NULL};
    return spawn_program(argv, out, NULL);
}

/* Waits until the log shows n completed restarts. */
static void wait_for_adoptions(const struct daemon *d, int n)
{
    if (!daemon_wait_log(d, "restart: adopted", n, 10000)) {
        daemon_print_log_tail(d, 40);
        fail_msg("restart %d did not complete", n);
    }
}

static void restart_while_streaming(const char *mode)
{
    struct daemon d;
    daemon_prepare(&d);
    assert_true(daemon_start(&d, SECCHECKD_BIN, NULL));
    pid_t pid = d.pid;
    char out[400];
    snprintf(out, sizeof(out), "%s/loadgen.json", d.dir);
    pid_t lg = start_loadgen(d.socket, mode, out);
    for (int i = 0; i < 3; i++) {   /* three restarts while 4 connections stream */
        usleep(300000);
        kill(pid, SIGUSR2);
        wait_for_adoptions(&d, i + 1);
    }
    assert_int_equal(reaper_wait(lg), 0);
    usleep(200000);
    assert_int_equal(d.pid, pid);
    assert_int_equal(daemon_stop(&d), 0);   /* the same PID took SIGTERM */

    long long sent = json_file_number(out, "sent"), dropped = json_file_number(out, "dropped");
    long long rows = db_query_int(d.db, "SELECT count(*) FROM events");
    printf("%s: loadgen sent %lld, dropped %lld at the client; stored %lld over %lld runs\n", mode, sent, dropped,
           rows, db_query_int(d.db, "SELECT count(*) FROM runs"));
    char *log = daemon_read_log(&d);
    assert_non_null(strstr(log, "restart: adopted 4 connections"));
    free(log);
    assert_int_equal(rows, sent);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM runs"), 4);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM runs WHERE received = stored"), 4);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM connections"), 4);   /* no new ids */
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM connections WHERE close_reason='eof'"), 4);
    assert_int_equal(db_query_int(d.db, "SELECT sum(messages) FROM connections"), sent);
    assert_int_equal(db_query_int(d.db, "SELECT count(DISTINCT conn_id) FROM events"), 4);
    daemon_cleanup(&d);
}

/* A packet with an empty payload: header_size 8, message_type 1 (container
 * start), the sandbox's running dropped_count. */
static void send_with_dropped(int fd, uint32_t dropped)
{
    uint8_t pkt[8] = {8, 0, 1, 0, (uint8_t)dropped, (uint8_t)(dropped >> 8), (uint8_t)(dropped >> 16),
                      (uint8_t)(dropped >> 24)};
    send_bytes(fd, pkt, sizeof(pkt));
}

/* Connection 1, handshaken, one packet sent: the sandbox held across. */
static int open_held(const struct daemon *d)
{
    int fd = replay_open(d->socket, 1);
    assert_true(fd >= 0);
    send_with_dropped(fd, 0);
    return fd;
}

/* One more packet, then EOF: once the daemon has read to it and stopped,
 * the connection's row must count messages. */
static void finish_held(struct daemon *d, int fd, long long messages)
{
    send_with_dropped(fd, 0);
    close(fd);
    assert_true(daemon_wait_log(d, "connection 1 closed", 1, 10000));
    assert_int_equal(daemon_stop(d), 0);
    assert_int_equal(db_query_int(d->db, "SELECT messages FROM connections WHERE id = 1"), messages);
}

/* A daemon whose connection 1 sends packets carrying the dropped_count
 * values before[0..nbefore), is restarted, sends after[0..nafter), and
 * closes; the daemon is stopped. */
static void restart_between(struct daemon *d, const uint32_t *before, size_t nbefore, const uint32_t *after,
                            size_t nafter)
{
    daemon_prepare(d);
    assert_true(daemon_start(d, SECCHECKD_BIN, NULL));
    int fd = replay_open(d->socket, 1);
    assert_true(fd >= 0);
    for (size_t i = 0; i < nbefore; i++)
        send_with_dropped(fd, before[i]);
    usleep(300000);
    kill(d->pid, SIGUSR2);
    wait_for_adoptions(d, 1);
    for (size_t i = 0; i < nafter; i++)
        send_with_dropped(fd, after[i]);
    close(fd);
    assert_true(daemon_wait_log(d, "connection 1 closed", 1, 10000));
    assert_int_equal(daemon_stop(d), 0);
}

/* A connection's counters cross the restart whole, the count of headers
 * whose dropped_count went backwards among them. */
static void test_restart_keeps_connection_counters(void **state)
{
    (void)state;
    struct daemon d;
    const uint32_t before[] = {10, 4}, after[] = {6};   /* 4: backwards, a regression */
    restart_between(&d, before, 2, after, 1);
    assert_int_equal(db_query_int(d.db, "SELECT messages FROM connections WHERE id = 1"), 3);
    assert_int_equal(db_query_int(d.db, "SELECT last_dropped_count FROM connections WHERE id = 1"), 6);
    assert_int_equal(db_query_int(d.db, "SELECT dropped_count_regressions FROM connections WHERE id = 1"), 1);
    daemon_cleanup(&d);
}

static void test_restart_block_mode(void **state)
{
    (void)state;
    restart_while_streaming("block");
}

static void test_restart_sentry_mode(void **state)
{
    (void)state;
    restart_while_streaming("sentry");
}

static void copy_file(const char *from, const char *to, mode_t mode)
{
    int in = open(from, O_RDONLY | O_CLOEXEC);
    assert_true(in >= 0);
    int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    assert_true(out >= 0);
    char buf[1 << 16];
    ssize_t n;
    while ((n = read(in, buf, sizeof(buf))) > 0)
        assert_int_equal(write(out, buf, (size_t)n), n);
    assert_int_equal(n, 0);
    close(in);
    assert_int_equal(close(out), 0);
}

/* SIGUSR2 runs the binary installed now. The daemon runs from a copy;
 * another copy is moved over it (how packages install: a new inode, the
 * old one deleted); after the restart /proc/PID/exe is the new file, not
 * "(deleted)", the log names the binary in both images, and the
 * connection open across it carries on. */
static void test_restart_runs_the_newly_installed_binary(void **state)
{
    struct daemon *d = *state;
    char bin[400], staged[400];
    snprintf(bin, sizeof(bin), "%s/seccheckd", d->dir);
    snprintf(staged, sizeof(staged), "%s/seccheckd.new", d->dir);
    copy_file(SECCHECKD_BIN, bin, 0755);
    assert_true(daemon_start(d, bin, NULL));
    int fd = open_held(d);

    copy_file(SECCHECKD_BIN, staged, 0755);
    struct stat installed;
    assert_int_equal(stat(staged, &installed), 0);
    assert_int_equal(rename(staged, bin), 0);
    kill(d->pid, SIGUSR2);
    wait_for_adoptions(d, 1);

    char proc[64], exe[512];
    snprintf(proc, sizeof(proc), "/proc/%d/exe", (int)d->pid);
    ssize_t n = readlink(proc, exe, sizeof(exe) - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    if (strcmp(exe, bin) != 0)
        fail_msg("after SIGUSR2 the daemon runs '%s', not the installed '%s'", exe, bin);
    struct stat running;
    assert_int_equal(stat(proc, &running), 0);
    assert_int_equal(running.st_ino, installed.st_ino);
    char binary_line[512];
    snprintf(binary_line, sizeof(binary_line), ", binary %s, build-id ", bin);
    assert_int_equal(daemon_log_count(d, binary_line), 2);

    finish_held(d, fd, 2);
}

/* If the installed binary cannot run (removed, say), the restart runs the
 * image already running, so no connection is lost. */
static void test_restart_falls_back_to_the_running_image(void **state)
{
    struct daemon *d = *state;
    char bin[400];
    snprintf(bin, sizeof(bin), "%s/seccheckd", d->dir);
    copy_file(SECCHECKD_BIN, bin, 0755);
    assert_true(daemon_start(d, bin, NULL));
    int fd = open_held(d);
    assert_int_equal(unlink(bin), 0);
    kill(d->pid, SIGUSR2);
    wait_for_adoptions(d, 1);
    assert_int_equal(daemon_log_count(d, "restart: cannot execute"), 1);
    finish_held(d, fd, 2);
}

/* ---- a restart never makes things worse than not restarting ---- */

static void config_path(const struct daemon *d, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s/seccheckd.conf", d->dir);
}

/* The daemon's whole settings, in its config file: socket, database, a
 * metrics socket, then extra lines (a later line overrides). */
static void write_config(const struct daemon *d, const char *extra)
{
    char conf[400], text[2048];
    config_path(d, conf, sizeof(conf));
    snprintf(text, sizeof(text), "socket = %s\ndb = %s\nmetrics-listen = unix:%s/metrics.sock\n%s", d->socket, d->db,
             d->dir, extra);
    write_file(conf, text);
}

static void start_with_config(struct daemon *d)
{
    char conf[400];
    config_path(d, conf, sizeof(conf));
    write_config(d, "");
    const char *argv[] = {SECCHECKD_BIN, "--config", conf, NULL};
    assert_true(daemon_spawn(d, argv, "info: listening on"));
}

/* seccheckd_restarts_total{result} on the daemon's metrics socket
 * (d->dir/metrics.sock). */
static double restarts(const struct daemon *d, const char *result)
{
    char path[400], series[96];
    snprintf(path, sizeof(path), "%s/metrics.sock", d->dir);
    snprintf(series, sizeof(series), "seccheckd_restarts_total{result=\"%s\"}", result);
    char *text = scrape_metrics_unix(path);
    if (!text)
        fail_msg("no answer on %s", path);
    double v = metric(text, series);
    free(text);
    return v;
}

static void assert_restarts(const struct daemon *d, double ok, double refused, double failed)
{
    double got[3] = {restarts(d, "ok"), restarts(d, "refused"), restarts(d, "failed")};
    if (got[0] != ok || got[1] != refused || got[2] != failed)
        fail_msg("restarts_total ok %g refused %g failed %g, expected %g %g %g", got[0], got[1], got[2], ok,
                 refused, failed);
}

static void wait_for_refusals(const struct daemon *d, int n)
{
    if (!daemon_wait_log(d, "restart refused", n, 40000))
        fail_msg("restart %d was not refused", n);
}

static void assert_alive(const struct daemon *d, pid_t pid)
{
    assert_int_equal(d->pid, pid);
    assert_int_equal(reaper_poll(d->pid), -1);
}

/* A config line "key = DIR/path" (DIR: the daemon's directory) makes the
 * restart's check fail with expect in the log: refused, the connection
 * carries on in the running image, and once the file is mended the restart
 * goes through. */
static void refused_then_mended(const char *key, const char *path, const char *expect)
{
    struct daemon d;
    daemon_prepare(&d);
    start_with_config(&d);
    pid_t pid = d.pid;
    int fd = open_held(&d);
    char line[512];
    snprintf(line, sizeof(line), "%s = %s/%s\n", key, d.dir, path);
    write_config(&d, line);
    kill(d.pid, SIGUSR2);
    wait_for_refusals(&d, 1);
    if (daemon_log_count(&d, expect) < 1)
        fail_msg("the check did not say '%s'", expect);
    assert_alive(&d, pid);
    assert_int_equal(daemon_log_count(&d, "restart: adopted"), 0);
    send_with_dropped(fd, 0);

    write_config(&d, "");
    kill(d.pid, SIGUSR2);
    wait_for_adoptions(&d, 1);
    assert_restarts(&d, 1, 1, 0);
    finish_held(&d, fd, 3);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM events"), 3);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM runs"), 2);   /* the checks left no run */
    daemon_cleanup(&d);
}

static void test_restart_refuses_a_config_typo(void **state)
{
    (void)state;
    refused_then_mended("sokcet", "other.sock", "unknown setting 'sokcet'");
}

static void test_restart_refuses_a_db_in_a_missing_directory(void **state)
{
    (void)state;
    refused_then_mended("db", "missing/events.db", "cannot use database");
}

/* The scratch tmpfs of test_restart_refuses_on_a_full_disk is unmounted
 * whatever happened, before its directory is removed. */
static int unmount_teardown(void **state)
{
    struct daemon *d = *state;
    char mnt[300];
    snprintf(mnt, sizeof(mnt), "%.200s/fs", d->dir);
    if (d->pid > 0)
        daemon_stop(d);
    umount2(mnt, MNT_DETACH);
    return daemon_teardown(state);
}

/* Fills the file system holding dir to its last block. */
static void fill_disk(const char *dir)
{
    char path[400], block[4096] = {0};
    snprintf(path, sizeof(path), "%s/filler", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    while (write(fd, block, sizeof(block)) > 0)
        ;
    assert_int_equal(errno, ENOSPC);
    close(fd);
}

static long long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* The database's disk is full: a new image could not record its run, so
 * the restart is refused; with room again it goes through. */
static void test_restart_refuses_on_a_full_disk(void **state)
{
    struct daemon *d = *state;
    char mnt[300], wal[400];
    snprintf(mnt, sizeof(mnt), "%.200s/fs", d->dir);
    mkdir(mnt, 0700);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=3m") != 0)
        skip();   /* needs root (CI and the dev machines run as root) */
    snprintf(d->db, sizeof(d->db), "%.200s/events.db", mnt);
    snprintf(wal, sizeof(wal), "%s-wal", d->db);
    assert_true(daemon_start(d, SECCHECKD_BIN, NULL));
    pid_t pid = d->pid;
    int fd = open_held(d);
    /* Idle, the writer truncates the WAL (at most every 2 s): a new write
     * must then grow a file on the full disk. */
    for (int i = 0; i < 100 && file_size(wal) != 0; i++)
        sleep_ms(100);
    assert_int_equal(file_size(wal), 0);
    fill_disk(mnt);
    kill(d->pid, SIGUSR2);
    wait_for_refusals(d, 1);
    assert_true(daemon_log_count(d, "database or disk is full") >= 1);
    assert_alive(d, pid);
    send_with_dropped(fd, 0);   /* counted as store_failed while the disk is full */

    char filler[400];
    snprintf(filler, sizeof(filler), "%s/filler", mnt);
    assert_int_equal(unlink(filler), 0);
    kill(d->pid, SIGUSR2);
    wait_for_adoptions(d, 1);
    finish_held(d, fd, 3);
    assert_int_equal(db_query_int(d->db, "SELECT sum(received) FROM runs"), 3);
    assert_int_equal(db_query_int(d->db, "SELECT sum(stored) + sum(store_failed) FROM runs"), 3);
    assert_int_equal(db_query_int(d->db, "SELECT count(*) FROM events"),
                     db_query_int(d->db, "SELECT sum(stored) FROM runs"));
}

/* Writes an executable script and moves it over path (a new inode, as an
 * install does). */
static void install_script(const char *path, const char *text)
{
    char staged[400];
    assert_true((size_t)snprintf(staged, sizeof(staged), "%s.new", path) < sizeof(staged));
    write_file(staged, text);
    assert_int_equal(chmod(staged, 0755), 0);
    assert_int_equal(rename(staged, path), 0);
}

static void install_binary(const char *path)
{
    char staged[400];
    assert_true((size_t)snprintf(staged, sizeof(staged), "%s.new", path) < sizeof(staged));
    copy_file(SECCHECKD_BIN, staged, 0755);
    assert_int_equal(rename(staged, path), 0);
}

/* The daemon runs from a copy in its directory, with a metrics socket. */
static void start_from_copy(struct daemon *d, char *bin, size_t binlen)
{
    static char metrics[400];
    snprintf(bin, binlen, "%s/seccheckd", d->dir);
    snprintf(metrics, sizeof(metrics), "unix:%s/metrics.sock", d->dir);
    copy_file(SECCHECKD_BIN, bin, 0755);
    const char *args[] = {"--metrics-listen", metrics, NULL};
    assert_true(daemon_start(d, bin, args));
}

/* A build that cannot start at all (here, a script that exits) fails its
 * check: the running image carries on; a working build installed over it
 * then takes over. */
static void test_restart_refuses_a_binary_that_exits(void **state)
{
    struct daemon *d = *state;
    char bin[400];
    start_from_copy(d, bin, sizeof(bin));
    pid_t pid = d->pid;
    int fd = open_held(d);
    install_script(bin, "#!/bin/sh\necho 'broken build: cannot start' >&2\nexit 3\n");
    kill(d->pid, SIGUSR2);
    wait_for_refusals(d, 1);
    assert_true(daemon_log_count(d, "broken build: cannot start") >= 1);
    assert_true(daemon_log_count(d, "exited with status 3") >= 1);
    assert_alive(d, pid);
    send_with_dropped(fd, 0);

    install_binary(bin);
    kill(d->pid, SIGUSR2);
    wait_for_adoptions(d, 1);
    assert_restarts(d, 1, 1, 0);
    finish_held(d, fd, 3);
}

/* A new image that fails to start after its check passed (here a wrapper
 * passes the check, then runs seccheckd with a database it cannot open)
 * hands the connections back: the build that ran before comes back from
 * the descriptor it left, though its file was replaced. */
static void test_restart_comes_back_when_the_new_image_cannot_start(void **state)
{
    struct daemon *d = *state;
    char bin[400], script[1024];
    start_from_copy(d, bin, sizeof(bin));
    pid_t pid = d->pid;
    int fd = open_held(d);
    snprintf(script, sizeof(script),
             "#!/bin/sh\n[ \"$1\" = check ] && exit 0\nexec %s \"$@\" --db %s/missing/events.db\n", SECCHECKD_BIN,
             d->dir);
    install_script(bin, script);
    kill(d->pid, SIGUSR2);
    if (!daemon_wait_log(d, "restart failed: the new image could not start", 1, 40000))
        fail_msg("the build that ran did not come back");
    wait_for_adoptions(d, 1);   /* by the build that came back */
    assert_true(daemon_log_count(d, "cannot use database") >= 1);
    assert_alive(d, pid);
    assert_restarts(d, 0, 0, 1);
    send_with_dropped(fd, 0);

    install_binary(bin);
    kill(d->pid, SIGUSR2);
    wait_for_adoptions(d, 2);
    assert_restarts(d, 1, 0, 1);
    finish_held(d, fd, 3);
    assert_int_equal(db_query_int(d->db, "SELECT count(*) FROM events"), 3);
}

/* Runs `seccheckd check ARGS` (NULL-terminated), its messages in d->log;
 * its exit code. */
static int run_check(const struct daemon *d, const char *const *args)
{
    const char *argv[16] = {SECCHECKD_BIN, "check"};
    int n = 2;
    for (int i = 0; args[i] && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return reaper_wait(spawn_program(argv, NULL, d->log));
}

/* `seccheckd check`: exit 0 when a start would get past its settings and
 * sinks (and no run is left in the database), 2 for settings, 1 for a sink
 * that cannot open; it binds nothing. */
static void test_check_subcommand(void **state)
{
    struct daemon *d = *state;
    char missing[400];
    snprintf(missing, sizeof(missing), "%s/missing/events.db", d->dir);
    const char *good[] = {"--socket", d->socket, "--db", d->db, NULL};
    assert_int_equal(run_check(d, good), 0);
    assert_int_equal(daemon_log_count(d, "the settings are valid and the sink opens: sqlite -> "), 1);
    assert_int_not_equal(access(d->socket, F_OK), 0);
    assert_int_equal(db_query_int(d->db, "SELECT count(*) FROM runs"), 0);
    assert_true(db_query_int(d->db, "SELECT value FROM meta WHERE key = 'last_check_ns'") > 0);
    const char *bad_value[] = {"--db", d->db, "--batch-size", "0", NULL};
    assert_int_equal(run_check(d, bad_value), 2);
    const char *bad_db[] = {"--db", missing, NULL};
    assert_int_equal(run_check(d, bad_db), 1);
    assert_int_equal(daemon_log_count(d, "cannot use database"), 1);
}

/* ---- what a connection carries across ---- */

/* The sandbox's dropped_count is a running total: after the restart its
 * next value adds only what it dropped since (10, then 15: 15 dropped, not
 * 25, which a new image forgetting last_dropped_count would count). */
static void test_restart_counts_sandbox_drops_once(void **state)
{
    (void)state;
    struct daemon d;
    const uint32_t before[] = {10}, after[] = {15};
    restart_between(&d, before, 1, after, 1);
    assert_int_equal(db_query_int(d.db, "SELECT sandbox_dropped FROM connections WHERE id = 1"), 15);
    assert_int_equal(db_query_int(d.db, "SELECT last_dropped_count FROM connections WHERE id = 1"), 15);
    assert_int_equal(daemon_log_count(&d, "connection 1 closed (eof): 2 messages, 16 bytes, 15 sandbox drops"), 1);
    daemon_cleanup(&d);
}

/* Lines of path holding needle. */
static int count_lines_with(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[8192];
    int n = 0;
    while (fgets(line, sizeof(line), f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

/* Connection ids stay unique across a restart, whatever the sink (SQLite
 * would hide a reuse: it starts from its connections table): the held
 * connection keeps 1, one closed before the restart had 2, the next one
 * gets 3. */
static void test_restart_never_reuses_a_connection_id(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    char out[400];
    snprintf(out, sizeof(out), "%s/events.ndjson", d.dir);
    const char *args[] = {"--sink", "ndjson", "--ndjson-path", out, NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    int held = replay_open(d.socket, 1);
    assert_true(held >= 0);
    assert_true(daemon_wait_log(&d, "connection 1 opened", 1, 10000));
    int gone = replay_open(d.socket, 1);
    assert_true(gone >= 0);
    send_with_dropped(held, 0);
    send_with_dropped(gone, 0);
    close(gone);
    assert_true(daemon_wait_log(&d, "connection 2 closed", 1, 10000));
    kill(d.pid, SIGUSR2);
    wait_for_adoptions(&d, 1);
    int fresh = replay_open(d.socket, 1);
    assert_true(fresh >= 0);
    send_with_dropped(fresh, 0);
    send_with_dropped(held, 0);
    close(fresh);
    close(held);
    assert_true(daemon_wait_log(&d, "closed (eof)", 3, 10000));
    assert_int_equal(daemon_stop(&d), 0);
    assert_int_equal(daemon_log_count(&d, "connection 1 opened"), 1);
    assert_int_equal(daemon_log_count(&d, "connection 2 opened"), 1);
    assert_int_equal(daemon_log_count(&d, "connection 3 opened"), 1);
    assert_int_equal(count_lines_with(out, "{\"conn_id\":1,"), 2);
    assert_int_equal(count_lines_with(out, "{\"conn_id\":2,"), 1);
    assert_int_equal(count_lines_with(out, "{\"conn_id\":3,"), 1);
    daemon_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restart_block_mode),
        cmocka_unit_test(test_restart_sentry_mode),
        cmocka_unit_test(test_restart_keeps_connection_counters),
        cmocka_unit_test_setup_teardown(test_restart_runs_the_newly_installed_binary, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_restart_falls_back_to_the_running_image, daemon_setup, daemon_teardown),
        cmocka_unit_test(test_restart_refuses_a_config_typo),
        cmocka_unit_test(test_restart_refuses_a_db_in_a_missing_directory),
        cmocka_unit_test_setup_teardown(test_restart_refuses_on_a_full_disk, daemon_setup, unmount_teardown),
        cmocka_unit_test_setup_teardown(test_restart_refuses_a_binary_that_exits, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_restart_comes_back_when_the_new_image_cannot_start, daemon_setup,
                                        daemon_teardown),
        cmocka_unit_test_setup_teardown(test_check_subcommand, daemon_setup, daemon_teardown),
        cmocka_unit_test(test_restart_counts_sandbox_drops_once),
        cmocka_unit_test(test_restart_never_reuses_a_connection_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
