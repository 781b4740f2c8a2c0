/* Integration: the real seccheckd binary, real SEQPACKET connections, the
 * recorded gVisor traces replayed several at once, then the database checked
 * against the trace files packet by packet. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "daemon.h"
#include "listener.h"
#include "replay.h"
#include "wire.h"

static const char *const trace_names[] = {"exec_loop", "mixed_syscalls", "redis_rw", "drops"};
#define NTRACES 4

static int setup(void **state)
{
    return trace_fixture_setup(state, trace_names, NTRACES);
}

/* Which trace a connection replayed: the one whose packets its rows are. */
static const struct replay_trace *match_connection(sqlite3 *db, long long conn_id, const struct trace_fixture *f)
{
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT raw FROM events WHERE conn_id=? ORDER BY id LIMIT 1", -1, &st,
                                        NULL), SQLITE_OK);
    sqlite3_bind_int64(st, 1, conn_id);
    const struct replay_trace *found = NULL;
    if (sqlite3_step(st) == SQLITE_ROW) {
        const void *raw = sqlite3_column_blob(st, 0);
        size_t len = (size_t)sqlite3_column_bytes(st, 0);
        for (int i = 0; i < NTRACES; i++)
            if (f->traces[i].lengths[0] == len && memcmp(f->traces[i].packets[0], raw, len) == 0)
                found = &f->traces[i];
    }
    sqlite3_finalize(st);
    return found;
}

/* Every row of the connection is the trace's packet at the same position. */
static void assert_rows_are_trace(sqlite3 *db, long long conn_id, const struct replay_trace *t)
{
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT raw, msg_type, decode_error FROM events WHERE conn_id=? ORDER BY id",
                                        -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_int64(st, 1, conn_id);
    size_t i = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        assert_true(i < t->count);
        assert_int_equal((size_t)sqlite3_column_bytes(st, 0), t->lengths[i]);
        assert_memory_equal(sqlite3_column_blob(st, 0), t->packets[i], t->lengths[i]);
        struct wire_header h;
        assert_int_equal(wire_header_parse(t->packets[i], t->lengths[i], &h), WIRE_OK);
        assert_int_equal(sqlite3_column_int(st, 1), h.message_type);
        assert_int_equal(sqlite3_column_type(st, 2), SQLITE_NULL);   /* decoded */
        i++;
    }
    sqlite3_finalize(st);
    assert_int_equal(i, t->count);
}

/* Per message type, rows of the connection == packets of the trace. */
static void assert_type_counts(sqlite3 *db, long long conn_id, const struct replay_trace *t)
{
    size_t expected[65536 / 64] = {0};   /* types seen here are < 1024 */
    for (size_t i = 0; i < t->count; i++) {
        struct wire_header h;
        wire_header_parse(t->packets[i], t->lengths[i], &h);
        assert_true(h.message_type < 1024);
        expected[h.message_type]++;
    }
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT msg_type, count(*) FROM events WHERE conn_id=? GROUP BY 1", -1,
                                        &st, NULL), SQLITE_OK);
    sqlite3_bind_int64(st, 1, conn_id);
    size_t types = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int type = sqlite3_column_int(st, 0);
        assert_int_equal((size_t)sqlite3_column_int64(st, 1), expected[type]);
        types++;
    }
    sqlite3_finalize(st);
    size_t expected_types = 0;
    for (size_t k = 0; k < 1024; k++)
        expected_types += expected[k] != 0;
    assert_int_equal(types, expected_types);
}

static void test_all_traces_twice_at_once(void **state)
{
    struct trace_fixture *f = *state;
    struct daemon d;
    daemon_prepare(&d);
    assert_true(daemon_start(&d, SECCHECKD_BIN, NULL));
    const struct replay_trace *set[2 * NTRACES];
    size_t total = 0;
    for (int i = 0; i < 2 * NTRACES; i++) {
        set[i] = &f->traces[i % NTRACES];
        total += set[i]->count;
    }
    assert_int_equal(replay_concurrently(d.socket, set, NULL, 2 * NTRACES), 0);
    assert_int_equal(daemon_stop(&d), 0);

    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(d.db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    int seen[NTRACES] = {0};
    for (long long conn = 1; conn <= 2 * NTRACES; conn++) {
        const struct replay_trace *t = match_connection(db, conn, f);
        assert_non_null(t);
        seen[t - f->traces]++;
        assert_rows_are_trace(db, conn, t);
        assert_type_counts(db, conn, t);
        char sql[200];
        snprintf(sql, sizeof(sql), "SELECT messages FROM connections WHERE id=%lld AND close_reason='eof' "
                 "AND client_version=1", conn);
        assert_int_equal(db_query_int(d.db, sql), (long long)t->count);
    }
    for (int i = 0; i < NTRACES; i++)
        assert_int_equal(seen[i], 2);
    sqlite3_close(db);

    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM events"), (long long)total);
    assert_int_equal(db_query_int(d.db, "SELECT received FROM runs"), (long long)total);
    assert_int_equal(db_query_int(d.db, "SELECT stored FROM runs"), (long long)total);
    assert_int_equal(db_query_int(d.db, "SELECT rejected + discarded + store_failed FROM runs"), 0);
    assert_true(db_query_int(d.db, "SELECT stopped_ns FROM runs") > 0);
    /* drops.trace reports 18311 sandbox drops, redis_rw.trace 865. */
    assert_int_equal(db_query_int(d.db, "SELECT sum(sandbox_dropped) FROM connections"), 2 * (18311 + 865));
    char *log = daemon_read_log(&d);
    char expect[128];
    snprintf(expect, sizeof(expect), "%zu received = %zu stored + 0 discarded + 0 rejected", total, total);
    assert_non_null(strstr(log, expect));
    free(log);
    struct stat st;
    assert_int_not_equal(stat(d.socket, &st), 0);   /* socket removed on exit */
    daemon_cleanup(&d);
}

static void test_backpressure_loses_nothing(void **state)
{
    struct trace_fixture *f = *state;
    struct daemon d;
    daemon_prepare(&d);
    /* Tiny batches and a one-batch queue: reading pauses and resumes often. */
    const char *args[] = {"--batch-size", "16", "--queue-max", "1", NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    const struct replay_trace *redis = &f->traces[2];
    const struct replay_trace *set[] = {redis, redis, redis, redis};
    assert_int_equal(replay_concurrently(d.socket, set, NULL, 4), 0);
    assert_int_equal(daemon_stop(&d), 0);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM events"), (long long)(4 * redis->count));
    assert_int_equal(db_query_int(d.db, "SELECT received - stored FROM runs"), 0);
    daemon_cleanup(&d);
}

static void test_discard_sink_counts_everything(void **state)
{
    struct trace_fixture *f = *state;
    struct daemon d;
    daemon_prepare(&d);
    const char *args[] = {"--sink", "discard", NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    const struct replay_trace *set[] = {&f->traces[0], &f->traces[1]};
    assert_int_equal(replay_concurrently(d.socket, set, NULL, 2), 0);
    assert_int_equal(daemon_stop(&d), 0);
    size_t total = f->traces[0].count + f->traces[1].count;
    char *log = daemon_read_log(&d);
    char expect[128];
    snprintf(expect, sizeof(expect), "%zu received = 0 stored + %zu discarded + 0 rejected", total, total);
    assert_non_null(strstr(log, expect));
    free(log);
    assert_int_not_equal(access(d.db, F_OK), 0);   /* discard writes no database */
    daemon_cleanup(&d);
}

static void test_malformed_packets_are_counted(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    const char *args[] = {"--max-message", "10240", NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    char err[256];
    int fd = replay_connect(d.socket, 1, 5000, err, sizeof(err));
    assert_true(fd >= 0);
    uint8_t pkt[20000] = {0};
    send_bytes(fd, "abc", 3);                                 /* short */
    wire_header_write(pkt, 7, 0);
    pkt[0] = 4;
    send_bytes(fd, pkt, 8);                                   /* header_size 4 */
    wire_header_write(pkt, 7, 0);
    pkt[0] = 200;
    send_bytes(fd, pkt, 16);                                  /* header_size past the packet */
    wire_header_write(pkt, 7, 0);
    send_bytes(fd, pkt, sizeof(pkt));                         /* over --max-message */
    wire_header_write(pkt, 999, 0);
    send_bytes(fd, pkt, 12);                                  /* unknown type: kept raw */
    wire_header_write(pkt, 7, 0);
    memset(pkt + 8, 0xff, 6);
    send_bytes(fd, pkt, 14);                                  /* garbage protobuf: kept raw */
    wire_header_write(pkt, 7, 3);
    send_bytes(fd, pkt, 8);                                   /* good: empty Open */
    close(fd);
    assert_int_equal(daemon_stop(&d), 0);
    assert_int_equal(db_query_int(d.db, "SELECT received FROM runs"), 7);
    assert_int_equal(db_query_int(d.db, "SELECT stored FROM runs"), 3);
    assert_int_equal(db_query_int(d.db, "SELECT rejected FROM runs"), 4);
    assert_int_equal(db_query_int(d.db, "SELECT rejected_short_packet FROM runs"), 1);
    assert_int_equal(db_query_int(d.db, "SELECT rejected_bad_header FROM runs"), 2);
    assert_int_equal(db_query_int(d.db, "SELECT rejected_oversize FROM runs"), 1);
    assert_int_equal(db_query_int(d.db, "SELECT unknown_type FROM runs"), 1);
    assert_int_equal(db_query_int(d.db, "SELECT bad_payload FROM runs"), 1);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM events WHERE decode_error='unknown_type' "
                                        "AND msg_type=999 AND length(raw)=12"), 1);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM events WHERE decode_error='bad_payload'"), 1);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM events WHERE decode_error IS NULL "
                                        "AND type_name='SYSCALL_OPEN' AND is_exit=0 AND dropped_count=3"), 1);
    assert_int_equal(db_query_int(d.db, "SELECT rejected FROM connections"), 4);
    /* Logged, but rate-limited: one line for the burst, not one per packet. */
    assert_int_equal(daemon_log_count(&d, "packets rejected so far"), 1);
    daemon_cleanup(&d);
}

static void test_bad_handshakes_are_closed_others_served(void **state)
{
    struct trace_fixture *f = *state;
    struct daemon d;
    daemon_prepare(&d);
    const char *args[] = {"--handshake-timeout-ms", "300", NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    int silent = connect_raw(d.socket, NULL, 0);
    int v0 = connect_raw(d.socket, "\x08\x00", 2);
    int garbage = connect_raw(d.socket, "\xff\xff\xff", 3);
    /* While those are pending, a good client is served at once. */
    const struct replay_trace *set[] = {&f->traces[0]};
    assert_int_equal(replay_concurrently(d.socket, set, NULL, 1), 0);
    assert_true(closed_by_peer(v0, 2000));
    assert_true(closed_by_peer(garbage, 2000));
    assert_true(closed_by_peer(silent, 3000));
    close(silent);
    close(v0);
    close(garbage);
    assert_int_equal(daemon_stop(&d), 0);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM connections WHERE close_reason='bad_handshake'"), 2);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM connections WHERE close_reason='handshake_timeout'"),
                     1);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM events"), (long long)f->traces[0].count);
    daemon_cleanup(&d);
}

static void test_max_connections_refuses_extra(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    const char *args[] = {"--max-connections", "2", NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    char err[256];
    int a = replay_connect(d.socket, 1, 5000, err, sizeof(err));
    int b = replay_connect(d.socket, 1, 5000, err, sizeof(err));
    assert_true(a >= 0 && b >= 0);
    int c = replay_connect(d.socket, 1, 2000, err, sizeof(err));
    assert_int_equal(c, -1);
    assert_non_null(strstr(err, "refused the handshake"));
    close(a);
    close(b);
    assert_int_equal(daemon_stop(&d), 0);
    char *log = daemon_read_log(&d);
    assert_non_null(strstr(log, "refused 1"));
    free(log);
    daemon_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_traces_twice_at_once),
        cmocka_unit_test(test_backpressure_loses_nothing),
        cmocka_unit_test(test_discard_sink_counts_everything),
        cmocka_unit_test(test_malformed_packets_are_counted),
        cmocka_unit_test(test_bad_handshakes_are_closed_others_served),
        cmocka_unit_test(test_max_connections_refuses_extra),
    };
    return cmocka_run_group_tests(tests, setup, trace_fixture_teardown);
}
