/* Integration: the SQL views answer the common questions on real traces:
 * what ran and from which parent, which files were opened (flags named),
 * network endpoints with decoded addresses, failed syscalls (errno named),
 * per-sandbox drop totals, the containers seen. An older database gets
 * this build's views at start. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "daemon.h"
#include "gvisor/sentry.pb-c.h"
#include "replay.h"
#include "wire.h"

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
    /* the parents: exec_loop's sh made every process it ran, python3 ran
     * echo and true in mixed_syscalls */
    assert_int_equal(db_query_int(db, "SELECT count(*) FROM execs WHERE parent_name = 'sh' AND "
                                      "parent_thread_group_id = 1"), 205);
    assert_int_equal(db_query_int(db, "SELECT count(*) FROM execs WHERE parent_name = 'python3' AND "
                                      "parent_thread_group_id = 4 AND binary_path IN ('/usr/bin/echo', '/usr/bin/true')"),
                     3);
    /* names for numbers */
    assert_int_equal(db_query_int(db, "SELECT count(*) FROM files_opened WHERE pathname = '/tmp/mixed_sh.txt' AND "
                                      "flags_text = 'O_WRONLY|O_CREAT|O_TRUNC'"), 1);
    assert_int_equal(db_query_int(db, "SELECT count(*) FROM files_opened WHERE pathname = '/etc/ld.so.cache' AND "
                                      "flags_text = 'O_RDONLY|O_CLOEXEC'") > 0, 1);
    assert_int_equal(db_query_int(db, "SELECT count(*) FROM files_opened WHERE flags IS NOT NULL AND "
                                      "flags_text IS NULL"), 0);
    assert_int_equal(db_query_int(db, "SELECT count(*) FROM failed_syscalls WHERE type_name='SYSCALL_EXECVE' AND "
                                      "errno_name = 'ENOENT' AND pathname='/nonexistent'"), 1);
    assert_int_equal(db_query_int(db, "SELECT count(*) FROM failed_syscalls WHERE type_name='SYSCALL_SETID' AND "
                                      "errno_name = 'EPERM'") > 0, 1);
    assert_int_equal(db_query_int(db, "SELECT count(*) FROM failed_syscalls WHERE errno_name IS NULL"), 0);
    assert_int_equal(db_query_int(db, "SELECT count(*) FROM network WHERE address='unix:/tmp/mixed_wl/no-such-socket' "
                                      "AND errno_name = 'ENOENT' AND family_name = 'AF_UNIX'") > 0, 1);
    assert_int_equal(db_query_int(db, "SELECT count(*) FROM network WHERE address = '127.0.0.1:27127' AND "
                                      "family_name = 'AF_INET'") > 0, 1);
    assert_int_equal(db_query_int(db, "SELECT count(*) FROM network WHERE family = 10 AND family_name = 'AF_INET6'") > 0,
                     1);
    /* containers: one per trace, its events, execs and its sandbox's drops */
    assert_int_equal(db_query_int(db, "SELECT count(*) FROM containers"), 3);
    assert_int_equal(db_query_int(db, "SELECT events FROM containers WHERE execs = 202"), 1219);
    assert_int_equal(db_query_int(db, "SELECT events FROM containers WHERE execs = 6"), 1235);
    assert_int_equal(db_query_int(db, "SELECT sandbox_dropped FROM containers WHERE events = 1692"), 18311);
    assert_int_equal(db_query_int(db, "SELECT sum(events) FROM containers"),
                     db_query_int(db, "SELECT count(*) FROM events WHERE container_id IS NOT NULL"));
    assert_int_equal(db_query_int(db, "SELECT count(*) FROM containers WHERE first_seen <= last_seen AND "
                                      "first_seen >= strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-1 hour')"), 3);
    daemon_cleanup(&d);
}

/* Every view's times in the one format of the CLI (UTC, milliseconds, Z):
 * an exec's time in the execs view is the one `seccheckd events` prints for
 * it; the second floored, the milliseconds cut (a time before 1970 too). */
static void test_view_times_are_the_cli_format(void **state)
{
    struct daemon *d = *state;
    assert_true(daemon_start(d, SECCHECKD_BIN, NULL));
    replay(d->socket, TRACES_DIR "/mixed_syscalls.trace");
    assert_true(daemon_wait_log(d, "closed (eof)", 1, 10000));
    assert_int_equal(daemon_stop(d), 0);
    static const char *const columns[][2] = {
        {"execs", "time"}, {"processes_per_container", "first"}, {"processes_per_container", "last"},
        {"containers", "first_seen"}, {"containers", "last_seen"}, {"files_opened", "time"},
        {"failed_syscalls", "time"}, {"sandbox_drops", "connected"}, {"sandbox_drops", "closed"},
        {"network", "time"},
    };
    for (size_t i = 0; i < sizeof(columns) / sizeof(columns[0]); i++) {
        long long rows = dbq(d, "SELECT count(*) FROM %s", columns[i][0]);
        assert_true(rows > 0);
        long long good = dbq(d, "SELECT count(*) FROM %s WHERE %s GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]T"
                                "[0-2][0-9]:[0-5][0-9]:[0-6][0-9].[0-9][0-9][0-9]Z'", columns[i][0], columns[i][1]);
        if (good != rows)
            fail_msg("%s.%s: %lld of %lld rows in the CLI's time format", columns[i][0], columns[i][1], good, rows);
    }
    char out[8192], when[64];
    const char *argv[] = {SECCHECKD_BIN, "events", "--db", d->db, "--type", "SENTRY_EXEC", NULL};
    assert_int_equal(run_command(argv, out, sizeof(out), NULL, 0), 0);
    assert_int_equal(sscanf(out, "%63s", when), 1);
    assert_int_equal(dbq(d, "SELECT count(*) FROM (SELECT time FROM execs ORDER BY id LIMIT 1) WHERE time = '%s'",
                         when), 1);
    /* Cut, not rounded; floored before 1970. */
    long long id = dbq(d, "SELECT min(id) FROM execs");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(d->db, &db), SQLITE_OK);
    char sql[200];
    snprintf(sql, sizeof(sql), "UPDATE events SET time_ns = 1700000000999999999 WHERE id = %lld", id);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlq(db, "SELECT count(*) FROM execs WHERE time = '2023-11-14T22:13:20.999Z'"), 1);
    snprintf(sql, sizeof(sql), "UPDATE events SET time_ns = -1 WHERE id = %lld", id);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlq(db, "SELECT count(*) FROM execs WHERE time = '1969-12-31T23:59:59.999Z'"), 1);
    sqlite3_close(db);
}

/* ---- crafted process trees ---- */

#define T0 1700000000000000000LL   /* a sandbox clock reading, ns */
#define SEC 1000000000LL

struct ctx {
    int tg;                 /* thread group */
    const char *name;       /* process name before this event */
    int64_t tg_start;       /* thread_group_start_time_ns; 0: not collected */
    int64_t time;           /* ns after T0 */
    int parent;             /* parent_thread_group_id; 0: not sent */
};

static Gvisor__Common__ContextData context_of(const struct ctx *c)
{
    Gvisor__Common__ContextData d = GVISOR__COMMON__CONTEXT_DATA__INIT;
    d.time_ns = T0 + c->time;
    d.thread_id = c->tg;
    d.thread_group_id = c->tg;
    d.thread_group_start_time_ns = c->tg_start ? T0 + c->tg_start : 0;
    d.container_id = "tree";
    d.process_name = (char *)c->name;
    d.parent_thread_group_id = c->parent;
    return d;
}

static void send_message(int fd, uint16_t type, const ProtobufCMessage *m)
{
    uint8_t pkt[4096];
    size_t n = protobuf_c_message_get_packed_size(m);
    assert_true(n + WIRE_HEADER_MIN <= sizeof(pkt));
    wire_header_write(pkt, type, 0);
    protobuf_c_message_pack(m, pkt + WIRE_HEADER_MIN);
    send_bytes(fd, pkt, WIRE_HEADER_MIN + n);
}

/* by makes created (a thread of its own group when created == by.tg),
 * started at created_start. */
static void send_clone(int fd, struct ctx by, int created, int64_t created_start)
{
    Gvisor__Common__ContextData d = context_of(&by);
    Gvisor__Sentry__CloneInfo m = GVISOR__SENTRY__CLONE_INFO__INIT;
    m.context_data = &d;
    m.created_thread_id = created == by.tg ? created + 1000 : created;
    m.created_thread_group_id = created;
    m.created_thread_start_time_ns = T0 + created_start;
    send_message(fd, 2, &m.base);
}

static void send_exec(int fd, struct ctx who, const char *binary)
{
    Gvisor__Common__ContextData d = context_of(&who);
    Gvisor__Sentry__ExecveInfo m = GVISOR__SENTRY__EXECVE_INFO__INIT;
    m.context_data = &d;
    m.binary_path = (char *)binary;
    send_message(fd, 3, &m.base);
}

/* The parent of each exec is the process whose clone made it, not the
 * exec'ing process's own name before the exec (what execs showed before):
 * env exec'ing cat has bash for parent. */
static void test_exec_parents(void **state)
{
    struct daemon *d = *state;
    assert_true(daemon_start(d, SECCHECKD_BIN, NULL));
    int a = replay_open(d->socket, 1), b = replay_open(d->socket, 1);
    assert_true(a >= 0 && b >= 0);
    /* bash (1) forks 2, which runs env, which runs cat; cat starts a
     * thread, then runs true. */
    send_clone(a, (struct ctx){1, "bash", 0, 2000, 0}, 2, 1000);
    send_exec(a, (struct ctx){2, "bash", 1000, 3000, 0}, "/usr/bin/env");
    send_exec(a, (struct ctx){2, "env", 1000, 4000, 0}, "/usr/bin/cat");
    send_clone(a, (struct ctx){2, "cat", 1000, 5000, 0}, 2, 4500);
    send_exec(a, (struct ctx){2, "cat", 1000, 6000, 0}, "/usr/bin/true");
    /* 3: no clone seen (its parent unknown) */
    send_exec(a, (struct ctx){3, "orphan", 7000, 8000, 0}, "/usr/bin/orphan");
    /* pid 4 made twice: by bash, then (reused) by make; make's child runs cc */
    send_clone(a, (struct ctx){1, "bash", 0, 9100, 0}, 4, 9000);
    send_clone(a, (struct ctx){10, "make", 0, 20100, 0}, 4, 20000);
    send_exec(a, (struct ctx){4, "make", 20000, 21000, 0}, "/usr/bin/cc");
    /* without thread_group_start_time: a clone 5 s back is found, one 15 s back is not */
    send_clone(a, (struct ctx){1, "bash", 0, 30 * SEC, 0}, 6, 30 * SEC);
    send_exec(a, (struct ctx){6, "bash", 0, 35 * SEC, 0}, "/usr/bin/six");
    send_clone(a, (struct ctx){1, "bash", 0, 40 * SEC, 0}, 7, 40 * SEC);
    send_exec(a, (struct ctx){7, "bash", 0, 55 * SEC, 0}, "/usr/bin/seven");
    /* parent_thread_group_id sent: the clone's maker (1), or another
     * process after a reparenting (55: its name is not known) */
    send_clone(a, (struct ctx){1, "bash", 0, 60 * SEC, 0}, 8, 60 * SEC);
    send_exec(a, (struct ctx){8, "bash", 60 * SEC, 61 * SEC, 1}, "/usr/bin/eight");
    send_clone(a, (struct ctx){1, "bash", 0, 62 * SEC, 0}, 9, 62 * SEC);
    send_exec(a, (struct ctx){9, "bash", 62 * SEC, 63 * SEC, 55}, "/usr/bin/nine");
    /* another sandbox: its pid 2 is not the first one's */
    send_exec(b, (struct ctx){2, "sh", 1000, 3500, 0}, "/usr/bin/other");
    close(a);
    close(b);
    assert_true(daemon_wait_log(d, "connection 2 closed", 1, 10000));
    assert_int_equal(daemon_stop(d), 0);
    const char *sql = "SELECT group_concat(binary_path || ':' || coalesce(parent_name, '-') || ':' ||"
                      " coalesce(parent_thread_group_id, '-'), ' ') FROM (SELECT * FROM execs ORDER BY conn_id, id)";
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(d->db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    const char *got = (const char *)sqlite3_column_text(st, 0);
    const char *want = "/usr/bin/env:bash:1 /usr/bin/cat:bash:1 /usr/bin/true:bash:1 /usr/bin/orphan:-:- "
                       "/usr/bin/cc:make:10 /usr/bin/six:bash:1 /usr/bin/seven:-:- /usr/bin/eight:bash:1 "
                       "/usr/bin/nine:-:55 /usr/bin/other:-:-";
    if (strcmp(got ? got : "", want) != 0)
        fail_msg("execs' parents:\n got  %s\n want %s", got, want);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* A database made by an older build gets this build's views at start:
 * the views are replaced, not kept because they exist. */
static void test_older_views_are_replaced(void **state)
{
    struct daemon *d = *state;
    assert_true(daemon_start(d, SECCHECKD_BIN, NULL));
    assert_int_equal(daemon_stop(d), 0);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(d->db, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "DROP VIEW execs; DROP VIEW containers; DROP TABLE errno_names;"
                                      "CREATE VIEW execs AS SELECT id, process_name AS parent_name FROM events"
                                      " WHERE msg_type = 3", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_true(daemon_start(d, SECCHECKD_BIN, NULL));
    assert_int_equal(daemon_stop(d), 0);
    assert_int_equal(db_query_int(d->db, "SELECT count(*) FROM pragma_table_info('execs') WHERE name IN "
                                         "('parent_thread_group_id', 'binary_path')"), 2);
    assert_int_equal(db_query_int(d->db, "SELECT count(*) FROM containers"), 0);
    assert_int_equal(db_query_int(d->db, "SELECT errno FROM errno_names WHERE name = 'ECONNREFUSED'"), 111);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_views_on_recorded_traces),
        cmocka_unit_test_setup_teardown(test_view_times_are_the_cli_format, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_exec_parents, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_older_views_are_replaced, daemon_setup, daemon_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
