/* Integration: the SQL views answer the common questions on real traces:
 * what ran, which files were opened, network endpoints with decoded
 * addresses, failed syscalls, per-sandbox drop totals. */
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
#include "replay.h"

static void replay(const char *socket, const char *trace)
{
    assert_int_equal(replay_file(socket, trace), 0);
}

static void test_views_on_recorded_traces(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    assert_true(daemon_start(&d, SECCHECKD_BIN, NULL));
    replay(d.socket, TRACES_DIR "/mixed_syscalls.trace");
    replay(d.socket, TRACES_DIR "/exec_loop.trace");
    replay(d.socket, TRACES_DIR "/drops.trace");
    usleep(300000);
    assert_int_equal(daemon_stop(&d), 0);
    const char *db = d.db;
    /* execs: every sentry exec (mixed 6 + exec_loop 202), argv decoded. */
    assert_int_equal(db_query_int(db, "SELECT count(*) FROM execs"), 208);
    assert_int_equal(db_query_int(db, "SELECT count(*) FROM execs WHERE binary_path='/usr/bin/true' AND "
                                      "json_extract(argv, '$[0]')='/bin/true'"), 200);
    assert_int_equal(db_query_int(db, "SELECT execs FROM processes_per_container WHERE "
                                      "binary_path='/usr/bin/true' ORDER BY execs DESC LIMIT 1"), 200);
    /* files_opened: the exit side of every open (mixed: 178 exits). */
    assert_int_equal(db_query_int(db, "SELECT count(*) FROM files_opened"),
                     db_query_int(db, "SELECT count(*) FROM events WHERE msg_type=7 AND is_exit=1"));
    assert_int_equal(db_query_int(db, "SELECT count(*) FROM files_opened WHERE pathname='/tmp/mixed_sh.txt' "
                                      "AND fd >= 0 AND call='openat'") > 0, 1);
    assert_int_equal(db_query_int(db, "SELECT count(*) FROM files_opened WHERE call='creat'"), 1);
    /* network: addresses decoded for all three families. */
    assert_true(db_query_int(db, "SELECT count(*) FROM network WHERE call='connect' AND address='127.0.0.1:27127'") >
                0);
    assert_true(db_query_int(db, "SELECT count(*) FROM network WHERE call='connect' AND address LIKE "
                                 "'[0000:0000:0000:0000:0000:0000:0000:0001]:9'") > 0);
    assert_true(db_query_int(db, "SELECT count(*) FROM network WHERE call='bind' AND "
                                 "address='unix:/tmp/mixed_wl/uds'") > 0);
    assert_true(db_query_int(db, "SELECT count(*) FROM network WHERE call='connect' AND errno=2 AND "
                                 "address='unix:/tmp/mixed_wl/no-such-socket'") > 0);
    /* failed_syscalls: the ENOENT execve of exec_loop, the EPERM setuid of mixed. */
    assert_int_equal(db_query_int(db, "SELECT count(*) FROM failed_syscalls WHERE type_name='SYSCALL_EXECVE' AND "
                                      "errno=2 AND pathname='/nonexistent'"), 1);
    assert_true(db_query_int(db, "SELECT count(*) FROM failed_syscalls WHERE type_name='SYSCALL_SETID' AND "
                                 "errno=1") > 0);
    assert_int_equal(db_query_int(db, "SELECT count(*) FROM failed_syscalls WHERE errno=0"), 0);
    /* sandbox_drops: drops.trace reports 18311 drops over 1692 messages. */
    assert_int_equal(db_query_int(db, "SELECT sandbox_dropped FROM sandbox_drops WHERE messages=1692"), 18311);
    /* 18311 / (1692 + 18311) of what the sandbox produced */
    assert_int_equal(db_query_int(db, "SELECT CAST(round(drop_pct * 1000) AS INTEGER) FROM sandbox_drops "
                                      "WHERE messages=1692"), 91541);
    assert_int_equal(db_query_int(db, "SELECT count(*) FROM sandbox_drops WHERE containers LIKE 'runsc-%'"), 3);
    daemon_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_views_on_recorded_traces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
