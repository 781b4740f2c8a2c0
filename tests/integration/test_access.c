/* Integration: who may connect. Socket mode and group, peer credentials
 * recorded per connection, --allow-uid refusing (and counting) others. */
#include <grp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon.h"
#include "replay.h"

#define NOBODY 65534

/* Connects and handshakes as uid in a child; its exit code says whether
 * the collector answered (0) or refused (1). */
static int connect_as(const char *socket, uid_t uid)
{
    pid_t pid = reaper_fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (setgid(NOBODY) != 0 || setuid(uid) != 0)
            _exit(3);
        char err[256];
        int fd = replay_connect(socket, 1, 2000, err, sizeof(err));
        if (fd < 0)
            _exit(1);
        usleep(100000);
        close(fd);
        _exit(0);
    }
    int code = reaper_wait(pid);
    return code < 128 ? code : -1;
}

static void test_allow_uid(void **state)
{
    (void)state;
    if (getuid() != 0)
        skip();   /* needs root to connect as another user */
    struct daemon d;
    daemon_prepare(&d);
    chmod(d.dir, 0755);
    const char *args[] = {"--socket-mode", "0666", "--allow-uid", "nobody,4242", NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    assert_int_equal(connect_as(d.socket, NOBODY), 0);   /* listed by name */
    assert_int_equal(connect_as(d.socket, 0), 1);        /* root is not listed */
    assert_int_equal(connect_as(d.socket, 1000), 1);
    assert_int_equal(daemon_stop(&d), 0);
    char *log = daemon_read_log(&d);
    assert_non_null(strstr(log, "denied 2"));
    assert_non_null(strstr(log, "not in --allow-uid"));
    free(log);
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM connections WHERE peer_uid=%d AND peer_pid > 0", NOBODY);
    assert_int_equal(db_query_int(d.db, sql), 1);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM connections"), 1);   /* denied: no row */
    daemon_cleanup(&d);
}

static void test_socket_mode_and_group(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    struct group *g = getgrgid(NOBODY);
    const char *group = g ? g->gr_name : "65534";
    const char *args[] = {"--socket-mode", "0620", "--socket-group", group, NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    struct stat st;
    assert_int_equal(stat(d.socket, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0620);
    assert_int_equal(st.st_gid, NOBODY);
    assert_int_equal(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}

static void test_default_mode_and_bad_group(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    assert_true(daemon_start(&d, SECCHECKD_BIN, NULL));
    struct stat st;
    assert_int_equal(stat(d.socket, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0660);
    assert_int_equal(daemon_stop(&d), 0);
    const char *args[] = {"--socket-group", "no-such-group-here", NULL};
    assert_false(daemon_start(&d, SECCHECKD_BIN, args));
    char *log = daemon_read_log(&d);
    assert_non_null(strstr(log, "--socket-group: no group named 'no-such-group-here'"));
    free(log);
    const char *uids[] = {"--allow-uid", "0,no-such-user-here", NULL};
    assert_false(daemon_start(&d, SECCHECKD_BIN, uids));
    log = daemon_read_log(&d);
    assert_non_null(strstr(log, "'no-such-user-here' is neither a user name nor a uid"));
    free(log);
    daemon_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allow_uid),
        cmocka_unit_test(test_socket_mode_and_group),
        cmocka_unit_test(test_default_mode_and_bad_group),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
