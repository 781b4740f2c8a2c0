/* Integration: the systemd interfaces, without systemd. The daemon reports
 * READY=1, pings WATCHDOG=1 and says STOPPING=1 on $NOTIFY_SOCKET, and it
 * serves on a socket passed by socket activation (LISTEN_FDS), leaving the
 * socket file to its owner. */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
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
#include "replay.h"

static int bind_unix(int type, const char *path)
{
    int fd = socket(AF_UNIX, type, 0);
    assert_true(fd >= 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    int n = snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
    if (n < 0 || (size_t)n >= sizeof(addr.sun_path))
        fail_msg("socket path longer than sun_path (%zu bytes): %s", sizeof(addr.sun_path), path);
    assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    return fd;
}

/* Collects notify datagrams for up to ms milliseconds into out. */
static void read_notifications(int fd, int ms, char *out, size_t outlen)
{
    struct timeval tv = {.tv_sec = 0, .tv_usec = 50000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    size_t len = strlen(out);
    for (int waited = 0; waited < ms; waited += 50) {
        char buf[256];
        ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
        if (n > 0 && len + (size_t)n + 2 < outlen) {
            memcpy(out + len, buf, (size_t)n);
            len += (size_t)n;
            out[len++] = '\n';
            out[len] = '\0';
        }
    }
}

static void test_notify_ready_watchdog_stopping(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    char path[300];
    snprintf(path, sizeof(path), "%s/notify", d.dir);
    int nfd = bind_unix(SOCK_DGRAM, path);
    setenv("NOTIFY_SOCKET", path, 1);
    setenv("WATCHDOG_USEC", "200000", 1);   /* ping every 100 ms */
    bool started = daemon_start(&d, SECCHECKD_BIN, NULL);
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    assert_true(started);
    char got[4096] = "";
    read_notifications(nfd, 600, got, sizeof(got));
    assert_non_null(strstr(got, "READY=1"));
    int pings = 0;
    for (const char *p = got; (p = strstr(p, "WATCHDOG=1")) != NULL; p++)
        pings++;
    assert_true(pings >= 3);
    kill(d.pid, SIGTERM);
    read_notifications(nfd, 300, got, sizeof(got));
    assert_non_null(strstr(got, "STOPPING=1"));
    assert_int_equal(daemon_wait_exit(&d, 20000), 0);   /* the one SIGTERM above is enough */
    close(nfd);
    daemon_cleanup(&d);
}

static void test_socket_activation(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    char sock[300];
    snprintf(sock, sizeof(sock), "%s/activated.sock", d.dir);
    int lfd = bind_unix(SOCK_SEQPACKET, sock);
    assert_int_equal(listen(lfd, 16), 0);
    /* As systemd does: the socket is fd 3 and LISTEN_PID names the child. */
    int log = open(d.log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(log >= 0);
    d.pid = reaper_fork();   /* stopped and reaped even when an assertion below fails */
    assert_true(d.pid >= 0);
    if (d.pid == 0) {
        dup2(log, 1);   /* never the test runner's stdout */
        dup2(log, 2);
        dup2(lfd, 3);
        char pid[16];
        snprintf(pid, sizeof(pid), "%d", (int)getpid());
        setenv("LISTEN_PID", pid, 1);
        setenv("LISTEN_FDS", "1", 1);
        execl(SECCHECKD_BIN, SECCHECKD_BIN, "--db", d.db, "--socket", "/nonexistent/ignored.sock", (char *)NULL);
        _exit(127);
    }
    close(log);
    close(lfd);
    char *text = NULL;
    for (int i = 0; i < 500; i++) {
        free(text);
        text = daemon_read_log(&d);
        if (strstr(text, "info: listening on"))
            break;
        usleep(10000);
    }
    assert_non_null(strstr(text, "using the socket systemd passed"));
    free(text);
    struct replay_trace t;
    char err[512];
    assert_int_equal(replay_trace_load(&t, TRACES_DIR "/exec_loop.trace", err, sizeof(err)), 0);
    int fd = replay_connect(sock, 1, 5000, err, sizeof(err));
    assert_true(fd >= 0);
    for (size_t i = 0; i < t.count; i++)
        assert_int_equal(replay_send(fd, t.packets[i], t.lengths[i]), 0);
    close(fd);
    usleep(200000);
    assert_int_equal(daemon_stop(&d), 0);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM events"), (long long)t.count);
    struct stat st;
    assert_int_equal(stat(sock, &st), 0);   /* systemd's socket file is left alone */
    replay_trace_free(&t);
    daemon_cleanup(&d);
}

static void test_socket_activation_wrong_type(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    char sock[300];
    snprintf(sock, sizeof(sock), "%s/stream.sock", d.dir);
    int lfd = bind_unix(SOCK_STREAM, sock);   /* ListenStream= by mistake */
    assert_int_equal(listen(lfd, 16), 0);
    int log = open(d.log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(log >= 0);
    pid_t pid = reaper_fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(log, 1);
        dup2(log, 2);
        dup2(lfd, 3);
        char p[16];
        snprintf(p, sizeof(p), "%d", (int)getpid());
        setenv("LISTEN_PID", p, 1);
        setenv("LISTEN_FDS", "1", 1);
        execl(SECCHECKD_BIN, SECCHECKD_BIN, "--db", d.db, (char *)NULL);
        _exit(127);
    }
    close(log);
    close(lfd);
    assert_int_equal(reaper_wait(pid), 1);
    char *text = daemon_read_log(&d);
    assert_non_null(strstr(text, "ListenSequentialPacket="));
    free(text);
    daemon_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_notify_ready_watchdog_stopping),
        cmocka_unit_test(test_socket_activation),
        cmocka_unit_test(test_socket_activation_wrong_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
