/* Integration: SIGUSR2 restarts seccheckd in place (same PID, new image)
 * while sandboxes stream, and no connection is lost: every message the
 * clients sent without a client-side drop is stored, each connection keeps
 * its id and counters, and every run's accounting adds up. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon.h"

/* Runs seccheck-loadgen in the background; its --json goes to out. */
static pid_t start_loadgen(const char *socket, const char *mode, const char *out)
{
    pid_t pid = reaper_fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (!freopen(out, "w", stdout))
            _exit(126);
        execl(LOADGEN_BIN, LOADGEN_BIN, "--socket", socket, "--trace", TRACES_DIR "/redis_rw.trace", "--trace",
              TRACES_DIR "/mixed_syscalls.trace", "--connections", "4", "--mode", mode, "--messages", "120000",
              "--rate", "40000", "--json", (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Waits until the log shows n completed restarts. */
static void wait_for_adoptions(const struct daemon *d, int n)
{
    if (!daemon_wait_log(d, "restart: adopted", n, 10000))
        fail_msg("restart %d did not complete", n);
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

/* A connection's counters cross the restart whole, the count of headers
 * whose dropped_count went backwards among them. */
static void test_restart_keeps_connection_counters(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    assert_true(daemon_start(&d, SECCHECKD_BIN, NULL));
    int fd = replay_open(d.socket, 1);
    assert_true(fd >= 0);
    send_with_dropped(fd, 10);
    send_with_dropped(fd, 4);   /* backwards: a regression */
    usleep(300000);
    kill(d.pid, SIGUSR2);
    wait_for_adoptions(&d, 1);
    send_with_dropped(fd, 6);
    close(fd);
    assert_true(daemon_wait_log(&d, "connection 1 closed", 1, 10000));
    assert_int_equal(daemon_stop(&d), 0);
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
    int fd = replay_open(d->socket, 1);
    assert_true(fd >= 0);
    send_with_dropped(fd, 0);

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

    send_with_dropped(fd, 0);
    close(fd);
    assert_true(daemon_wait_log(d, "connection 1 closed", 1, 10000));
    assert_int_equal(daemon_stop(d), 0);
    assert_int_equal(db_query_int(d->db, "SELECT messages FROM connections WHERE id = 1"), 2);
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
    int fd = replay_open(d->socket, 1);
    assert_true(fd >= 0);
    send_with_dropped(fd, 0);
    assert_int_equal(unlink(bin), 0);
    kill(d->pid, SIGUSR2);
    wait_for_adoptions(d, 1);
    assert_int_equal(daemon_log_count(d, "restart: cannot execute"), 1);
    send_with_dropped(fd, 0);
    close(fd);
    assert_true(daemon_wait_log(d, "connection 1 closed", 1, 10000));
    assert_int_equal(daemon_stop(d), 0);
    assert_int_equal(db_query_int(d->db, "SELECT messages FROM connections WHERE id = 1"), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restart_block_mode),
        cmocka_unit_test(test_restart_sentry_mode),
        cmocka_unit_test(test_restart_keeps_connection_counters),
        cmocka_unit_test_setup_teardown(test_restart_runs_the_newly_installed_binary, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_restart_falls_back_to_the_running_image, daemon_setup, daemon_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
