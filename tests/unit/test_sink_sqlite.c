/* test_sink_sqlite.c - the storage side: the SQLite and discard sinks
 * (storage/sink.h), batches (storage/batch.h), and ingest_packet
 * (server/ingest.h) driving a pipeline (storage/pipeline.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "unit_util.h"

#include <sqlite3.h>
#include <uv.h>

#include "batch.h"
#include "decode.h"
#include "ingest.h"
#include "pipeline.h"
#include "sink.h"
#include "verify.h"

static struct decoder dec;

#if defined(__SANITIZE_ADDRESS__)
/* test_ingest_seal_fails makes batch_new's calloc fail on purpose: let it
 * return NULL as libc does instead of aborting. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }
#endif

static int setup(void **state)
{
    (void)state;
    decoder_init(&dec);
    return 0;
}

/* ---- small SQLite helpers over a read-only connection ---- */

static sqlite3 *db_open_ro(const char *path)
{
    sqlite3 *db;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        fail_msg("open %s: %s", path, sqlite3_errmsg(db));
    return db;
}

static sqlite3_stmt *db_query(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("prepare %s: %s", sql, sqlite3_errmsg(db));
    return st;
}

static int64_t db_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = db_query(db, sql);
    if (sqlite3_step(st) != SQLITE_ROW)
        fail_msg("no row: %s", sql);
    if (sqlite3_column_type(st, 0) == SQLITE_NULL)
        fail_msg("NULL: %s", sql);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static bool db_is_null(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = db_query(db, sql);
    if (sqlite3_step(st) != SQLITE_ROW)
        fail_msg("no row: %s", sql);
    bool null = sqlite3_column_type(st, 0) == SQLITE_NULL;
    sqlite3_finalize(st);
    return null;
}

static void db_text(sqlite3 *db, const char *sql, char *out, size_t outlen)
{
    sqlite3_stmt *st = db_query(db, sql);
    if (sqlite3_step(st) != SQLITE_ROW)
        fail_msg("no row: %s", sql);
    const unsigned char *t = sqlite3_column_text(st, 0);
    if (!t)
        fail_msg("NULL: %s", sql);
    snprintf(out, outlen, "%s", (const char *)t);
    sqlite3_finalize(st);
}

static struct sink *open_sqlite(const char *path)
{
    struct sink_sqlite_options o = {.path = path, .busy_timeout_ms = 2000};
    char err[512] = "";
    struct sink *s = sink_sqlite_open(&o, err, sizeof(err));
    if (!s)
        fail_msg("sink_sqlite_open(%s): %s", path, err);
    assert_string_equal(s->ops->name, "sqlite");
    assert_true(s->ops->needs_writer_thread);
    return s;
}

/* Pushes one packet into b and decodes it there, as ingest does. */
static struct event *push_decoded(struct batch *b, const uint8_t *pkt, size_t len, uint64_t conn_id, int64_t recv_ns)
{
    struct wire_header h;
    assert_int_equal(wire_header_parse(pkt, len, &h), WIRE_OK);
    struct event *ev = batch_push(b, pkt, len);
    assert_non_null(ev);
    assert_ptr_not_equal(ev->raw, pkt);   /* copied into the arena */
    ev->conn_id = conn_id;
    ev->recv_ns = recv_ns;
    decode_event(&dec, &b->arena, &h, ev->raw, len, ev);
    b->counts.decode[ev->status]++;
    return ev;
}

/* ---- the SQLite sink ---- */

static const uint8_t garbage_payload[] = {0xff, 0xff, 0xff, 0xff, 0xff};

/* The first packet of a given type in a fixture, copied into out. */
static size_t first_of_type(const char *name, uint16_t type, uint8_t *out, size_t cap)
{
    char path[4096];
    trace_path(path, sizeof(path), name);
    struct tracefile tf;
    assert_int_equal(tracefile_open(&tf, path), TRACEFILE_OK);
    const uint8_t *p;
    size_t len;
    while (tracefile_next(&tf, &p, &len) == TRACEFILE_OK) {
        struct wire_header h;
        if (wire_header_parse(p, len, &h) == WIRE_OK && h.message_type == type) {
            assert_true(len <= cap);
            memcpy(out, p, len);
            tracefile_close(&tf);
            return len;
        }
    }
    tracefile_close(&tf);
    fail_msg("no packet of type %u in %s", type, name);
    return 0;
}

static void test_sqlite_batch(void **state)
{
    (void)state;
    char dir[64], path[128];
    scratch_dir(dir);
    snprintf(path, sizeof(path), "%s/events.db", dir);

    struct sink *s = open_sqlite(path);
    assert_int_equal(s->first_conn_id, 1);

    struct trace_pkts t;
    trace_load("exec_loop.trace", &t);
    struct batch_limits lim = {.max_events = t.n + 16, .max_bytes = 64u << 20};
    struct batch *b = batch_new(&lim);
    assert_non_null(b);

    const uint64_t conn_id = 7;
    for (size_t i = 0; i < t.n; i++) {
        struct event *ev = push_decoded(b, t.pkt[i], t.len[i], conn_id, 1000 + (int64_t)i);
        assert_int_equal(ev->status, DECODE_OK);
    }
    /* two packets stored raw: an unknown type and a bad payload */
    enum { X_UNKNOWN, X_BAD, X_READ, X_WRITE, NEXTRA };
    uint8_t extra[NEXTRA][512];
    size_t extra_len[NEXTRA];
    extra_len[X_UNKNOWN] = make_packet(extra[X_UNKNOWN], 50, 0, "\x08\x01", 2);
    extra_len[X_BAD] = make_packet(extra[X_BAD], 7, 0, garbage_payload, sizeof(garbage_payload));
    /* no context at all (redis_rw), and context without credentials (drops) */
    extra_len[X_READ] = first_of_type("redis_rw.trace", 9, extra[X_READ], sizeof(extra[X_READ]));
    extra_len[X_WRITE] = first_of_type("drops.trace", 34, extra[X_WRITE], sizeof(extra[X_WRITE]));
    const enum decode_status extra_status[NEXTRA] = {DECODE_UNKNOWN_TYPE, DECODE_BAD_PAYLOAD, DECODE_OK, DECODE_OK};
    size_t extra_bytes = 0;
    for (int x = 0; x < NEXTRA; x++) {
        struct event *ev = push_decoded(b, extra[x], extra_len[x], conn_id, 5000 + x);
        assert_int_equal(ev->status, extra_status[x]);
        extra_bytes += extra_len[x];
    }
    const size_t nevents = t.n + NEXTRA;
    assert_int_equal(b->count, nevents);

    /* what the loop saw meanwhile: three more packets that were rejected */
    b->counts.received = nevents + 3;
    b->counts.rejected[REJECT_SHORT_PACKET] = 1;
    b->counts.rejected[REJECT_BAD_HEADER] = 1;
    b->counts.rejected[REJECT_OVERSIZE] = 1;
    struct conn_record rec = {
        .id = conn_id,
        .peer_pid = 4242,
        .peer_uid = 1000,
        .peer_gid = 1001,
        .connect_ns = 111,
        .close_ns = 222,
        .client_version = 1,
        .messages = nevents + 3,
        .bytes = t.total_bytes + extra_bytes,
        .last_dropped_count = 12,
        .sandbox_dropped = 0x100000010ull,
        .rejected = 3,
        .decode_errors = 2,
    };
    snprintf(rec.close_reason, sizeof(rec.close_reason), "eof");
    assert_int_equal(batch_add_conn(b, &rec), 0);
    assert_int_equal(b->nconns, 1);

    sink_write_batch(s, b);
    assert_int_equal(b->result.stored, nevents);
    assert_int_equal(b->result.discarded, 0);
    assert_int_equal(b->result.failed, 0);
    sink_finish(s, 999);
    sink_close(s);

    sqlite3 *db = db_open_ro(path);
    char text[256];
    assert_int_equal(db_int(db, "SELECT count(*) FROM events"), nevents);

    /* first row: the container start */
    assert_int_equal(db_int(db, "SELECT msg_type FROM events ORDER BY id LIMIT 1"), 1);
    db_text(db, "SELECT type_name FROM events ORDER BY id LIMIT 1", text, sizeof(text));
    assert_string_equal(text, "CONTAINER_START");
    db_text(db, "SELECT container_id FROM events ORDER BY id LIMIT 1", text, sizeof(text));
    assert_memory_equal(text, "runsc-", 6);
    db_text(db, "SELECT process_name FROM events ORDER BY id LIMIT 1", text, sizeof(text));
    assert_string_equal(text, "sh");
    db_text(db, "SELECT cwd FROM events ORDER BY id LIMIT 1", text, sizeof(text));
    assert_string_equal(text, "/tmp");
    assert_int_equal(db_int(db, "SELECT conn_id FROM events ORDER BY id LIMIT 1"), conn_id);
    assert_int_equal(db_int(db, "SELECT recv_ns FROM events ORDER BY id LIMIT 1"), 1000);
    assert_int_equal(db_int(db, "SELECT dropped_count FROM events ORDER BY id LIMIT 1"), 0);
    assert_int_equal(db_int(db, "SELECT thread_id FROM events ORDER BY id LIMIT 1"), 1);
    assert_int_equal(db_int(db, "SELECT real_uid FROM events ORDER BY id LIMIT 1"), 0);   /* root: empty creds */
    assert_true(db_int(db, "SELECT time_ns FROM events ORDER BY id LIMIT 1") > 0);
    assert_true(db_is_null(db, "SELECT is_exit FROM events ORDER BY id LIMIT 1"));
    assert_true(db_is_null(db, "SELECT errno FROM events ORDER BY id LIMIT 1"));
    assert_true(db_is_null(db, "SELECT sysno FROM events ORDER BY id LIMIT 1"));
    assert_true(db_is_null(db, "SELECT decode_error FROM events ORDER BY id LIMIT 1"));

    /* per-type counts as in the README */
    const struct {
        int type;
        int count;
    } want[] = {{1, 1}, {2, 203}, {3, 202}, {4, 203}, {5, 204}, {11, 406}, {50, 1}, {7, 1}, {9, 1}, {34, 1}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        char sql[128];
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM events WHERE msg_type=%d", want[i].type);
        assert_int_equal(db_int(db, sql), want[i].count);
    }
    assert_int_equal(db_int(db, "SELECT count(*) FROM events WHERE type_name='SENTRY_EXEC'"), 202);

    /* execve: enter and exit told apart, the failing /nonexistent exit */
    assert_int_equal(db_int(db, "SELECT count(*) FROM events WHERE msg_type=11 AND is_exit=0"), 203);
    assert_int_equal(db_int(db, "SELECT count(*) FROM events WHERE msg_type=11 AND is_exit=1"), 203);
    assert_int_equal(db_int(db, "SELECT count(*) FROM events WHERE msg_type=11 AND is_exit=1 AND errno=2"), 1);
    assert_int_equal(db_int(db, "SELECT count(*) FROM events WHERE msg_type=11 AND sysno=59"), 406);
    assert_int_equal(db_int(db, "SELECT count(*) FROM events WHERE msg_type=11 AND is_exit=1 AND result IS NULL"),
                     0);
    assert_int_equal(db_int(db, "SELECT count(*) FROM events WHERE msg_type=11 AND is_exit=0 AND errno IS NOT NULL"),
                     0);
    db_text(db, "SELECT json_extract(detail, '$.pathname') FROM events WHERE msg_type=11 AND errno=2", text,
            sizeof(text));
    assert_string_equal(text, "/nonexistent");
    assert_int_equal(db_int(db, "SELECT count(*) FROM events WHERE msg_type BETWEEN 1 AND 5 AND "
                                "(is_exit IS NOT NULL OR sysno IS NOT NULL OR errno IS NOT NULL)"),
                     0);

    /* context columns on every decoded row, and they match the detail */
    assert_int_equal(db_int(db, "SELECT count(*) FROM events WHERE container_id LIKE 'runsc-%'"), t.n + 1);
    assert_int_equal(db_int(db, "SELECT count(*) FROM events WHERE process_name IS NOT NULL"), t.n);
    assert_int_equal(db_int(db, "SELECT count(*) FROM events WHERE real_uid IS NOT NULL"), t.n);
    /* ... held once: detail has none of it, events_full puts it back */
    assert_int_equal(db_int(db, "SELECT count(*) FROM events WHERE json_type(detail, '$.context_data') IS NOT NULL "
                                "OR json_type(detail, '$.sysno') IS NOT NULL OR json_type(detail, '$.exit') IS NOT NULL"),
                     0);
    assert_int_equal(db_int(db, "SELECT count(*) FROM events e JOIN events_full f USING(id) WHERE "
                                "json_extract(f.message, '$.context_data.container_id') = e.container_id AND "
                                "json_extract(f.message, '$.context_data.time_ns') = e.time_ns AND "
                                "json_extract(f.message, '$.context_data.thread_start_time_ns') = "
                                "coalesce(e.thread_start_time_ns, 0) AND e.is_exec_session IS NOT NULL"),
                     t.n + 1);

    /* the read without context: sysno 0 is a value (read), not NULL */
    assert_int_equal(db_int(db, "SELECT sysno FROM events WHERE msg_type=9"), 0);
    assert_int_equal(db_int(db, "SELECT is_exit FROM events WHERE msg_type=9"), 0);
    assert_true(db_is_null(db, "SELECT container_id FROM events WHERE msg_type=9"));
    assert_true(db_is_null(db, "SELECT time_ns FROM events WHERE msg_type=9"));
    assert_true(db_is_null(db, "SELECT real_uid FROM events WHERE msg_type=9"));
    assert_true(db_is_null(db, "SELECT errno FROM events WHERE msg_type=9"));
    /* the write with time, thread_id, container_id only */
    assert_int_equal(db_int(db, "SELECT sysno FROM events WHERE msg_type=34"), 1);
    assert_true(db_int(db, "SELECT thread_id FROM events WHERE msg_type=34") > 0);
    assert_true(db_is_null(db, "SELECT real_uid FROM events WHERE msg_type=34"));
    assert_true(db_is_null(db, "SELECT process_name FROM events WHERE msg_type=34"));
    assert_true(db_is_null(db, "SELECT cwd FROM events WHERE msg_type=34"));

    /* detail: valid JSON for decoded rows, NULL for the raw-only ones */
    assert_int_equal(db_int(db, "SELECT count(*) FROM events WHERE json_valid(detail)"), t.n + 2);
    assert_int_equal(db_int(db, "SELECT count(*) FROM events WHERE detail IS NULL"), 2);
    assert_int_equal(db_int(db, "SELECT count(*) FROM events WHERE decode_error='unknown_type' AND msg_type=50 "
                                "AND type_name IS NULL"),
                     1);
    assert_int_equal(db_int(db, "SELECT count(*) FROM events WHERE decode_error='bad_payload' AND msg_type=7 "
                                "AND type_name='SYSCALL_OPEN'"),
                     1);

    /* raw: exactly the packet bytes, in order */
    sqlite3_stmt *st = db_query(db, "SELECT raw, recv_ns FROM events ORDER BY id");
    for (size_t i = 0; i < nevents; i++) {
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        const void *raw = sqlite3_column_blob(st, 0);
        size_t len = (size_t)sqlite3_column_bytes(st, 0);
        const uint8_t *want_pkt = i < t.n ? t.pkt[i] : extra[i - t.n];
        size_t want_len = i < t.n ? t.len[i] : extra_len[i - t.n];
        assert_int_equal(len, want_len);
        assert_memory_equal(raw, want_pkt, len);
        assert_int_equal(sqlite3_column_int64(st, 1), i < t.n ? 1000 + (int64_t)i : 5000 + (int64_t)(i - t.n));
    }
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);

    /* the connection snapshot */
    assert_int_equal(db_int(db, "SELECT count(*) FROM connections"), 1);
    st = db_query(db, "SELECT id, run_id, peer_pid, peer_uid, peer_gid, connect_ns, close_ns, client_version, "
                      "messages, bytes, last_dropped_count, sandbox_dropped, rejected, decode_errors, close_reason "
                      "FROM connections");
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int64(st, 0), 7);
    assert_int_equal(sqlite3_column_int64(st, 1), 1);
    assert_int_equal(sqlite3_column_int64(st, 2), 4242);
    assert_int_equal(sqlite3_column_int64(st, 3), 1000);
    assert_int_equal(sqlite3_column_int64(st, 4), 1001);
    assert_int_equal(sqlite3_column_int64(st, 5), 111);
    assert_int_equal(sqlite3_column_int64(st, 6), 222);
    assert_int_equal(sqlite3_column_int64(st, 7), 1);
    assert_int_equal(sqlite3_column_int64(st, 8), nevents + 3);
    assert_int_equal(sqlite3_column_int64(st, 9), rec.bytes);
    assert_int_equal(sqlite3_column_int64(st, 10), 12);
    assert_int_equal(sqlite3_column_int64(st, 11), 0x100000010ll);
    assert_int_equal(sqlite3_column_int64(st, 12), 3);
    assert_int_equal(sqlite3_column_int64(st, 13), 2);
    assert_string_equal((const char *)sqlite3_column_text(st, 14), "eof");
    sqlite3_finalize(st);

    /* the run: counts add up, stop time recorded */
    assert_int_equal(db_int(db, "SELECT count(*) FROM runs"), 1);
    assert_int_equal(db_int(db, "SELECT received FROM runs"), nevents + 3);
    assert_int_equal(db_int(db, "SELECT stored FROM runs"), nevents);
    assert_int_equal(db_int(db, "SELECT discarded FROM runs"), 0);
    assert_int_equal(db_int(db, "SELECT rejected FROM runs"), 3);
    assert_int_equal(db_int(db, "SELECT store_failed FROM runs"), 0);
    assert_int_equal(db_int(db, "SELECT rejected_short_packet FROM runs"), 1);
    assert_int_equal(db_int(db, "SELECT rejected_bad_header FROM runs"), 1);
    assert_int_equal(db_int(db, "SELECT rejected_oversize FROM runs"), 1);
    assert_int_equal(db_int(db, "SELECT rejected_no_memory FROM runs"), 0);
    assert_int_equal(db_int(db, "SELECT unknown_type FROM runs"), 1);
    assert_int_equal(db_int(db, "SELECT bad_payload FROM runs"), 1);
    assert_int_equal(db_int(db, "SELECT count(*) FROM runs WHERE received = stored + discarded + rejected + "
                                "store_failed"),
                     1);
    assert_int_equal(db_int(db, "SELECT stopped_ns FROM runs"), 999);
    assert_true(db_int(db, "SELECT started_ns FROM runs") > 1600000000000000000ll);
    assert_int_equal(db_int(db, "SELECT pid FROM runs"), getpid());
    db_text(db, "SELECT value FROM meta WHERE key='schema_version'", text, sizeof(text));
    assert_string_equal(text, "2");
    sqlite3_close(db);

    /* ---- a second run on the same database ---- */
    s = open_sqlite(path);
    assert_int_equal(s->first_conn_id, 8);   /* max(connections.id) + 1 */
    batch_reset(b);
    assert_int_equal(b->count, 0);
    assert_int_equal(b->counts.received, 0);
    for (size_t i = 0; i < 5; i++)
        push_decoded(b, t.pkt[i], t.len[i], s->first_conn_id, 7000 + (int64_t)i);
    b->counts.received = 5;
    struct conn_record rec2 = {.id = s->first_conn_id, .connect_ns = 333, .messages = 5, .bytes = 100};
    assert_int_equal(batch_add_conn(b, &rec2), 0);
    rec.close_ns = 444;   /* an update of the old connection */
    snprintf(rec.close_reason, sizeof(rec.close_reason), "shutdown");
    assert_int_equal(batch_add_conn(b, &rec), 0);
    sink_write_batch(s, b);
    assert_int_equal(b->result.stored, 5);
    sink_finish(s, 2000);
    sink_close(s);

    db = db_open_ro(path);
    assert_int_equal(db_int(db, "SELECT count(*) FROM runs"), 2);
    assert_int_equal(db_int(db, "SELECT stored FROM runs WHERE id=1"), nevents);
    assert_int_equal(db_int(db, "SELECT stored FROM runs WHERE id=2"), 5);
    assert_int_equal(db_int(db, "SELECT received FROM runs WHERE id=2"), 5);
    assert_int_equal(db_int(db, "SELECT stopped_ns FROM runs WHERE id=2"), 2000);
    assert_int_equal(db_int(db, "SELECT count(*) FROM events"), nevents + 5);
    assert_int_equal(db_int(db, "SELECT count(*) FROM events WHERE conn_id=8"), 5);
    assert_int_equal(db_int(db, "SELECT count(*) FROM connections"), 2);
    assert_int_equal(db_int(db, "SELECT run_id FROM connections WHERE id=8"), 2);
    assert_true(db_is_null(db, "SELECT close_ns FROM connections WHERE id=8"));   /* still open */
    assert_true(db_is_null(db, "SELECT close_reason FROM connections WHERE id=8"));
    assert_int_equal(db_int(db, "SELECT close_ns FROM connections WHERE id=7"), 444);
    db_text(db, "SELECT close_reason FROM connections WHERE id=7", text, sizeof(text));
    assert_string_equal(text, "shutdown");
    sqlite3_close(db);

    /* a third open sees both connections */
    s = open_sqlite(path);
    assert_int_equal(s->first_conn_id, 9);
    sink_close(s);

    batch_free(b);
    trace_free(&t);
    scratch_dir_remove(dir);
}

static void test_sqlite_schema_version_refused(void **state)
{
    (void)state;
    char dir[64], path[128];
    scratch_dir(dir);
    snprintf(path, sizeof(path), "%s/future.db", dir);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                                  "INSERT INTO meta VALUES('schema_version','99');",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);

    struct sink_sqlite_options o = {.path = path, .busy_timeout_ms = 1000};
    char err[512] = "";
    struct sink *s = sink_sqlite_open(&o, err, sizeof(err));
    assert_null(s);
    if (!strstr(err, "99") || !strstr(err, "schema version"))
        fail_msg("error does not name the version: %s", err);
    assert_non_null(strstr(err, path));

    /* nothing was changed: no run recorded, no tables created */
    db = db_open_ro(path);
    assert_int_equal(db_int(db, "SELECT count(*) FROM sqlite_master WHERE name IN ('runs','events')"), 0);
    char text[32];
    db_text(db, "SELECT value FROM meta WHERE key='schema_version'", text, sizeof(text));
    assert_string_equal(text, "99");
    sqlite3_close(db);
    scratch_dir_remove(dir);
}

static void test_sqlite_bad_path(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof(path), "/tmp/seccheckd-unit-no-such-dir-%d/sub/events.db", (int)getpid());
    struct sink_sqlite_options o = {.path = path, .busy_timeout_ms = 1000};
    char err[512] = "";
    struct sink *s = sink_sqlite_open(&o, err, sizeof(err));
    assert_null(s);
    if (!strstr(err, path))
        fail_msg("error does not name the path: %s", err);

    /* a file that is not a database */
    char junk[64];
    static const char not_db[] = "this is not an SQLite database, only text long enough to hold a header: "
                                 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    scratch_file(junk, not_db, sizeof(not_db) - 1);
    o.path = junk;
    err[0] = '\0';
    s = sink_sqlite_open(&o, err, sizeof(err));
    assert_null(s);
    assert_non_null(strstr(err, junk));
    unlink(junk);
}

/* ---- batches that fail to store ---- */

/* Takes the database's write lock from a second connection. */
static sqlite3 *lock_db(const char *path)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    return db;
}

static void unlock_db(sqlite3 *db)
{
    assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* A batch of n packets of t from index first, plus `rejected` short packets. */
static void fill_batch(struct batch *b, const struct trace_pkts *t, size_t first, size_t n, uint64_t rejected)
{
    batch_reset(b);
    for (size_t i = first; i < first + n; i++)
        push_decoded(b, t->pkt[i], t->len[i], 1, (int64_t)i);
    b->counts.received = n + rejected;
    b->counts.rejected[REJECT_SHORT_PACKET] = rejected;
}

static struct sink *open_sqlite_busy(const char *path, int busy_ms)
{
    struct sink_sqlite_options o = {.path = path, .busy_timeout_ms = busy_ms};
    char err[512] = "";
    struct sink *s = sink_sqlite_open(&o, err, sizeof(err));
    if (!s)
        fail_msg("sink_sqlite_open(%s): %s", path, err);
    return s;
}

struct delayed_unlock {
    sqlite3 *locker;
    int delay_ms;
};

static void *unlock_later(void *arg)
{
    struct delayed_unlock *u = arg;
    usleep((useconds_t)u->delay_ms * 1000);
    sqlite3_exec(u->locker, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(u->locker);
    return NULL;
}

/* While running, a lock held by another process is waited out (each attempt
 * waits the busy timeout, 20 ms here, and the batch is retried): the batch
 * is stored once the lock goes, nothing is lost. */
static void test_sqlite_lock_is_waited_out(void **state)
{
    (void)state;
    char dir[64], path[128];
    scratch_dir(dir);
    snprintf(path, sizeof(path), "%s/wait.db", dir);
    struct sink *s = open_sqlite_busy(path, 20);
    struct trace_pkts t;
    trace_load("exec_loop.trace", &t);
    struct batch_limits lim = {.max_events = 64, .max_bytes = 8u << 20};
    struct batch *b = batch_new(&lim);
    fill_batch(b, &t, 0, 10, 0);
    struct delayed_unlock u = {.locker = lock_db(path), .delay_ms = 300};
    pthread_t th;
    pthread_create(&th, NULL, unlock_later, &u);
    sink_write_batch(s, b);
    pthread_join(th, NULL);
    assert_int_equal(b->result.stored, 10);
    assert_int_equal(b->result.failed, 0);
    sink_finish(s, 10);
    sink_close(s);
    sqlite3 *db = db_open_ro(path);
    assert_int_equal(db_int(db, "SELECT count(*) FROM events"), 10);
    assert_int_equal(db_int(db, "SELECT store_failed FROM runs"), 0);
    sqlite3_close(db);
    batch_free(b);
    trace_free(&t);
    scratch_dir_remove(dir);
}

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Waiting out a lock must sleep in SQLite's busy handler, not spin: a
 * deferred BEGIN whose first SELECT takes a read lock cannot upgrade to a
 * write while another connection writes, and SQLite fails that upgrade at
 * once without calling the busy handler (thousands of attempts a second, a
 * whole core). The writer holds the lock for a second here. */
static void test_sqlite_lock_wait_does_not_spin(void **state)
{
    (void)state;
    char dir[64], path[128];
    scratch_dir(dir);
    snprintf(path, sizeof(path), "%s/spin.db", dir);
    struct sink *s = open_sqlite_busy(path, 200);
    struct trace_pkts t;
    trace_load("exec_loop.trace", &t);
    struct batch_limits lim = {.max_events = 64, .max_bytes = 8u << 20};
    struct batch *b = batch_new(&lim);
    fill_batch(b, &t, 0, 10, 0);
    sink_write_batch(s, b);   /* the chain has a previous batch to read */
    fill_batch(b, &t, 10, 10, 0);
    struct delayed_unlock u = {.locker = lock_db(path), .delay_ms = 1000};
    pthread_t th;
    pthread_create(&th, NULL, unlock_later, &u);
    double cpu0 = thread_cpu_s(), wall0 = wall_s();
    sink_write_batch(s, b);
    double cpu = thread_cpu_s() - cpu0, wall = wall_s() - wall0;
    pthread_join(th, NULL);
    uint64_t stored = b->result.stored;
    sink_finish(s, 10);
    sink_close(s);
    sqlite3 *db = db_open_ro(path);
    int64_t rows = db_int(db, "SELECT count(*) FROM events");
    sqlite3_close(db);
    batch_free(b);
    trace_free(&t);
    scratch_dir_remove(dir);
    printf("lock held 1 s: the write took %.3f s wall, %.3f s CPU\n", wall, cpu);
    assert_int_equal(stored, 10);   /* landed once the lock went */
    assert_int_equal(rows, 20);
    assert_true(wall >= 0.9);
    if (cpu > 0.2)
        fail_msg("the writer spun on the lock: %.3f s of CPU in %.3f s (busy handler not used)", cpu, wall);
}

/* A restart's check (`seccheckd check`, a probe) writes the database the
 * running daemon writes, and under load it lost that race: with the
 * daemon's writer busy, SQLite's busy handler (backing off to a try every
 * 100 ms) kept missing the moments the lock was free, and the check failed
 * "database is locked", a restart refused (integration.restart under
 * ThreadSanitizer with both cores busy, 1 run in 3). A probe now tries
 * every millisecond, and while a check runs (sink_checking) the daemon's
 * writer leaves a gap after each transaction. */

/* Another writer that lets go of the lock for 2 ms every 250 ms, until
 * stopped. */
struct lock_windows {
    const char *path;
    atomic_bool stop;
    unsigned windows;
};

static void *open_windows(void *arg)
{
    struct lock_windows *w = arg;
    sqlite3 *db = lock_db(w->path);
    while (!atomic_load(&w->stop)) {
        usleep(250000);
        sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
        usleep(2000);
        w->windows++;
        while (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK && !atomic_load(&w->stop))
            usleep(100);   /* the probe got in: wait for it */
    }
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(db);
    return NULL;
}

/* The lock is free 2 ms in 250: tried every 100 ms, a check would find it
 * free within the 3 s here in 2 runs of 5; tried every
 * millisecond, it does in the first window or the next. */
static void test_sqlite_check_tries_for_the_lock_every_millisecond(void **state)
{
    (void)state;
    char dir[64], path[128];
    scratch_dir(dir);
    snprintf(path, sizeof(path), "%s/windows.db", dir);
    struct sink *s = open_sqlite(path);   /* the database and its schema exist */
    sink_finish(s, 10);
    sink_close(s);
    struct lock_windows w = {.path = path};
    pthread_t th;
    pthread_create(&th, NULL, open_windows, &w);
    usleep(50000);
    struct sink_sqlite_options o = {.path = path, .busy_timeout_ms = 3000, .probe = true};
    char err[512] = "";
    double waited = wall_s();
    struct sink *probe = sink_sqlite_open(&o, err, sizeof(err));
    waited = wall_s() - waited;
    atomic_store(&w.stop, true);
    pthread_join(th, NULL);
    if (probe)
        sink_close(probe);
    scratch_dir_remove(dir);
    printf("the check got in after %.0f ms, %u windows\n", waited * 1000, w.windows);
    if (!probe)
        fail_msg("the check never found the lock free in %u windows of 2 ms: %s", w.windows, err);
}

/* The daemon's own writer, busy without a pause, with a check running:
 * the check gets in. */
struct busy_writer {
    struct sink *sink;
    struct batch *batch;
    atomic_bool stop;
    unsigned writes;
};

static void *write_without_pause(void *arg)
{
    struct busy_writer *w = arg;
    while (!atomic_load(&w->stop)) {
        sink_write_batch(w->sink, w->batch);   /* the same events again: the transaction is what matters */
        w->writes++;
    }
    return NULL;
}

static void test_sqlite_check_gets_in_while_the_writer_is_busy(void **state)
{
    (void)state;
    char dir[64], path[128];
    scratch_dir(dir);
    snprintf(path, sizeof(path), "%s/busy.db", dir);
    struct trace_pkts t;
    trace_load("exec_loop.trace", &t);
    /* Transactions of 20,000 events (tens of milliseconds each), back to back. */
    struct batch_limits lim = {.max_events = 20000, .max_bytes = 64u << 20};
    struct busy_writer w = {.sink = open_sqlite(path), .batch = batch_new(&lim)};
    for (size_t i = 0; i < lim.max_events; i++)
        push_decoded(w.batch, t.pkt[i % t.n], t.len[i % t.n], 1, (int64_t)i);
    w.batch->counts.received = lim.max_events;
    double took = wall_s();
    sink_write_batch(w.sink, w.batch);
    took = wall_s() - took;
    sink_checking(w.sink, true);   /* as the daemon does while its restart checks */
    pthread_t th;
    pthread_create(&th, NULL, write_without_pause, &w);
    usleep(100000);
    /* Long enough for the transaction under way and the gap after it. */
    int busy_ms = (int)(2000 * took) + 200;
    struct sink_sqlite_options o = {.path = path, .busy_timeout_ms = busy_ms, .probe = true};
    char err[512] = "";
    struct sink *probe = sink_sqlite_open(&o, err, sizeof(err));
    atomic_store(&w.stop, true);
    pthread_join(th, NULL);
    sink_checking(w.sink, false);
    unsigned writes = w.writes;
    if (probe)
        sink_close(probe);
    sink_finish(w.sink, 10);
    sink_close(w.sink);
    batch_free(w.batch);
    trace_free(&t);
    scratch_dir_remove(dir);
    printf("transactions of %.0f ms: the writer committed %u while the check waited up to %d ms\n", took * 1000,
           writes, busy_ms);
    if (!probe)
        fail_msg("the check could not write beside a busy writer: %s", err);
    assert_true(writes >= 1);   /* the writer was writing meanwhile */
}

static void test_sqlite_failed_batch_counted_later(void **state)
{
    (void)state;
    char dir[64], path[128];
    scratch_dir(dir);
    snprintf(path, sizeof(path), "%s/busy.db", dir);
    struct sink *s = open_sqlite_busy(path, 20);
    struct trace_pkts t;
    trace_load("exec_loop.trace", &t);
    struct batch_limits lim = {.max_events = 64, .max_bytes = 8u << 20};
    struct batch *b = batch_new(&lim);

    /* the database is locked by someone else at shutdown (the sink gives up
     * instead of waiting): the batch fails as a whole */
    fill_batch(b, &t, 0, 10, 1);
    sqlite3 *locker = lock_db(path);
    atomic_store(&s->giving_up, true);
    sink_write_batch(s, b);
    unlock_db(locker);
    assert_int_equal(b->result.failed, 10);
    assert_int_equal(b->result.stored, 0);
    assert_true(s->error[0] != '\0');

    /* the next batch succeeds and carries the failed one's counts */
    fill_batch(b, &t, 10, 5, 0);
    sink_write_batch(s, b);
    assert_int_equal(b->result.stored, 5);
    assert_int_equal(b->result.failed, 0);
    sink_finish(s, 10);
    sink_close(s);

    sqlite3 *db = db_open_ro(path);
    assert_int_equal(db_int(db, "SELECT count(*) FROM events"), 5);   /* nothing half-written */
    assert_int_equal(db_int(db, "SELECT min(recv_ns) FROM events"), 10);
    assert_int_equal(db_int(db, "SELECT received FROM runs"), 16);
    assert_int_equal(db_int(db, "SELECT stored FROM runs"), 5);
    assert_int_equal(db_int(db, "SELECT store_failed FROM runs"), 10);
    assert_int_equal(db_int(db, "SELECT rejected_short_packet FROM runs"), 1);
    assert_int_equal(db_int(db, "SELECT count(*) FROM runs WHERE received = stored + discarded + rejected + "
                                "store_failed"),
                     1);
    sqlite3_close(db);
    batch_free(b);
    trace_free(&t);
    scratch_dir_remove(dir);
}

/* The counts of failed batches wait in `pending` for the next batch that
 * succeeds. When the last batches of a run fail (disk full, database locked
 * at shutdown), sqlite_finish must still write them to the runs row. */
static void test_sqlite_failed_last_batch_counted(void **state)
{
    (void)state;
    char dir[64], path[128];
    scratch_dir(dir);
    snprintf(path, sizeof(path), "%s/busy-last.db", dir);
    struct sink *s = open_sqlite_busy(path, 20);
    struct trace_pkts t;
    trace_load("exec_loop.trace", &t);
    struct batch_limits lim = {.max_events = 64, .max_bytes = 8u << 20};
    struct batch *b = batch_new(&lim);

    fill_batch(b, &t, 0, 5, 0);
    sink_write_batch(s, b);
    assert_int_equal(b->result.stored, 5);

    fill_batch(b, &t, 5, 10, 2);   /* the last batch fails: locked at shutdown */
    sqlite3 *locker = lock_db(path);
    atomic_store(&s->giving_up, true);
    sink_write_batch(s, b);
    unlock_db(locker);
    assert_int_equal(b->result.failed, 10);
    sink_finish(s, 20);   /* the database is writable again at shutdown */
    sink_close(s);

    sqlite3 *db = db_open_ro(path);
    assert_int_equal(db_int(db, "SELECT stopped_ns FROM runs"), 20);
    assert_int_equal(db_int(db, "SELECT stored FROM runs"), 5);
    int64_t received = db_int(db, "SELECT received FROM runs");
    int64_t failed = db_int(db, "SELECT store_failed FROM runs");
    int64_t rejected = db_int(db, "SELECT rejected FROM runs");
    sqlite3_close(db);
    batch_free(b);
    trace_free(&t);
    scratch_dir_remove(dir);
    if (received != 17 || failed != 10 || rejected != 2)
        fail_msg("runs row lost the failed last batch: received=%lld (want 17) store_failed=%lld "
                 "(want 10) rejected=%lld (want 2); sqlite_finish does not write pending counts",
                 (long long)received, (long long)failed, (long long)rejected);
}

/* A sink on a scratch database and batches of exec_loop's packets. */
struct file_fixture {
    char dir[64], path[128];
    struct sink *sink;
    struct trace_pkts trace;
    struct batch *batch;
};

static void file_fixture_open(struct file_fixture *f, const char *name, int busy_ms)
{
    scratch_dir(f->dir);
    snprintf(f->path, sizeof(f->path), "%s/%s", f->dir, name);
    f->sink = open_sqlite_busy(f->path, busy_ms);
    trace_load("exec_loop.trace", &f->trace);
    struct batch_limits lim = {.max_events = 64, .max_bytes = 8u << 20};
    f->batch = batch_new(&lim);
}

/* Writes packets [first, first + n) as one batch, with conn's snapshot
 * (NULL: none); the events it stored. */
static uint64_t file_fixture_write(struct file_fixture *f, size_t first, size_t n, const struct conn_record *conn)
{
    fill_batch(f->batch, &f->trace, first, n, 0);
    if (conn)
        assert_int_equal(batch_add_conn(f->batch, conn), 0);
    sink_write_batch(f->sink, f->batch);
    return f->batch->result.stored;
}

/* Ends the run; the database stays for the checks. */
static void file_fixture_finish(struct file_fixture *f)
{
    sink_finish(f->sink, 900);
    sink_close(f->sink);
    batch_free(f->batch);
    trace_free(&f->trace);
}

/* A failed batch's connection snapshots are not lost with it: the next
 * transaction that commits writes the newest snapshot of every connection
 * (a connection does not stay "open" with stale counts, and one opened and
 * closed while nothing could be stored still gets its row), and so does
 * the end of the run when the last batches failed. */
/* Writes f's batch with the database locked by another connection, as at
 * shutdown (the sink gives up instead of waiting): it fails whole. */
static void write_while_locked(struct file_fixture *f)
{
    sqlite3 *locker = lock_db(f->path);
    atomic_store(&f->sink->giving_up, true);
    sink_write_batch(f->sink, f->batch);
    unlock_db(locker);
    atomic_store(&f->sink->giving_up, false);
    assert_int_equal(f->batch->result.stored, 0);
}

static void test_sqlite_failed_batch_keeps_conn_snapshots(void **state)
{
    (void)state;
    struct file_fixture f;
    file_fixture_open(&f, "conns.db", 20);
    struct conn_record a = {.id = 1, .connect_ns = 100, .messages = 10};
    assert_int_equal(file_fixture_write(&f, 0, 10, &a), 10);

    /* Fails: a moved on, c2 opened and closed meanwhile. */
    struct conn_record c2 = {.id = 2, .connect_ns = 200, .close_ns = 300, .messages = 3, .close_reason = "eof"};
    a.messages = 20;
    fill_batch(f.batch, &f.trace, 10, 10, 0);
    assert_int_equal(batch_add_conn(f.batch, &a), 0);
    assert_int_equal(batch_add_conn(f.batch, &c2), 0);
    write_while_locked(&f);

    /* Commits, with no snapshot of its own. */
    assert_int_equal(file_fixture_write(&f, 20, 5, NULL), 5);
    sqlite3 *db = db_open_ro(f.path);
    assert_int_equal(db_int(db, "SELECT count(*) FROM connections"), 2);
    assert_int_equal(db_int(db, "SELECT messages FROM connections WHERE id=1"), 20);
    assert_true(db_is_null(db, "SELECT close_ns FROM connections WHERE id=1"));
    assert_int_equal(db_int(db, "SELECT messages FROM connections WHERE id=2"), 3);
    assert_int_equal(db_int(db, "SELECT close_ns FROM connections WHERE id=2"), 300);
    sqlite3_close(db);

    /* The last batch, with a's close, fails: the end of the run writes it. */
    a.messages = 25;
    a.close_ns = 400;
    snprintf(a.close_reason, sizeof(a.close_reason), "eof");
    fill_batch(f.batch, &f.trace, 25, 5, 0);
    assert_int_equal(batch_add_conn(f.batch, &a), 0);
    write_while_locked(&f);
    file_fixture_finish(&f);
    db = db_open_ro(f.path);
    assert_int_equal(db_int(db, "SELECT messages FROM connections WHERE id=1"), 25);
    assert_int_equal(db_int(db, "SELECT close_ns FROM connections WHERE id=1"), 400);
    assert_int_equal(db_int(db, "SELECT store_failed FROM runs"), 15);
    sqlite3_close(db);
    scratch_dir_remove(f.dir);
}

/* ---- the database file deleted or replaced under the sink ---- */

static void assert_integrity_ok(const char *path)
{
    sqlite3 *db = db_open_ro(path);
    char result[64];
    db_text(db, "PRAGMA integrity_check", result, sizeof(result));
    sqlite3_close(db);
    assert_string_equal(result, "ok");
}

static int verify_db_file(const char *path)
{
    char *argv[] = {"verify", "--db", (char *)path, NULL};
    return verify_main(3, argv);
}

/* A consistent copy of a live database, as a backup tool makes it. */
static void backup_to(const char *from, const char *to)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(from, &db), SQLITE_OK);
    char sql[300];
    snprintf(sql, sizeof(sql), "VACUUM INTO '%s'", to);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* The file at the path after the run: sound, verified, events rows, the
 * last runs row's reopen_reason. */
static void assert_file_after_run(const char *path, int64_t events, const char *reopen_reason)
{
    assert_integrity_ok(path);
    assert_int_equal(verify_db_file(path), 0);
    sqlite3 *db = db_open_ro(path);
    assert_int_equal(db_int(db, "SELECT count(*) FROM events"), events);
    char why[32];
    db_text(db, "SELECT reopen_reason FROM runs ORDER BY id DESC LIMIT 1", why, sizeof(why));
    assert_string_equal(why, reopen_reason);
    assert_int_equal(db_int(db, "SELECT stopped_ns FROM runs ORDER BY id DESC LIMIT 1"), 900);
    sqlite3_close(db);
}

/* Deleted: the next batch goes to a new database at the path, with a runs
 * row saying why and the rows of the connections still open; nothing is
 * left in (or counted as stored in) the deleted file. */
static void test_sqlite_database_deleted(void **state)
{
    (void)state;
    struct file_fixture f;
    file_fixture_open(&f, "deleted.db", 2000);
    struct conn_record quiet = {.id = 1, .connect_ns = 100, .messages = 10};
    assert_int_equal(file_fixture_write(&f, 0, 10, &quiet), 10);

    assert_int_equal(unlink(f.path), 0);   /* `rm deleted.db`: its -wal and -shm stay */
    fill_batch(f.batch, &f.trace, 10, 10, 1);
    sink_write_batch(f.sink, f.batch);
    assert_int_equal(f.batch->result.stored, 10);
    assert_int_equal(f.batch->result.failed, 0);
    assert_int_equal(access(f.path, F_OK), 0);
    assert_integrity_ok(f.path);
    assert_int_equal(file_fixture_write(&f, 20, 5, NULL), 5);
    file_fixture_finish(&f);

    assert_file_after_run(f.path, 15, "deleted");
    sqlite3 *db = db_open_ro(f.path);
    assert_int_equal(db_int(db, "SELECT min(recv_ns) FROM events"), 10);
    assert_int_equal(db_int(db, "SELECT received FROM runs"), 16);
    assert_int_equal(db_int(db, "SELECT stored FROM runs"), 15);
    assert_int_equal(db_int(db, "SELECT rejected FROM runs"), 1);
    assert_int_equal(db_int(db, "SELECT messages FROM connections WHERE id=1"), 10);   /* carried over */
    sqlite3_close(db);
    scratch_dir_remove(f.dir);
}

/* Replaced by a restored copy: the sink goes on in the copy (its chain
 * continues), and the copy is not read through the old file's -wal. */
static void test_sqlite_database_replaced(void **state)
{
    (void)state;
    struct file_fixture f;
    file_fixture_open(&f, "replaced.db", 2000);
    char copy[140];
    snprintf(copy, sizeof(copy), "%s/backup.db", f.dir);
    file_fixture_write(&f, 0, 10, NULL);
    backup_to(f.path, copy);
    file_fixture_write(&f, 10, 10, NULL);   /* after the backup: the restore loses these */
    assert_int_equal(rename(copy, f.path), 0);
    assert_int_equal(file_fixture_write(&f, 20, 5, NULL), 5);
    assert_integrity_ok(f.path);
    file_fixture_finish(&f);

    assert_file_after_run(f.path, 15, "replaced");
    sqlite3 *db = db_open_ro(f.path);
    assert_int_equal(db_int(db, "SELECT count(*) FROM events WHERE recv_ns BETWEEN 10 AND 19"), 0);
    assert_int_equal(db_int(db, "SELECT count(*) FROM batches"), 2);
    assert_int_equal(db_int(db, "SELECT count(*) FROM runs"), 2);
    assert_int_equal(db_int(db, "SELECT received FROM runs WHERE id=2"), 5);
    sqlite3_close(db);
    scratch_dir_remove(f.dir);
}

/* ---- the discard sink ---- */

static void test_discard_sink(void **state)
{
    (void)state;
    struct sink *s = sink_discard_open();
    assert_non_null(s);
    assert_false(s->ops->needs_writer_thread);
    assert_int_equal(s->first_conn_id, 1);

    struct trace_pkts t;
    trace_load("mixed_syscalls.trace", &t);
    struct batch_limits lim = {.max_events = 100, .max_bytes = 8u << 20};
    struct batch *b = batch_new(&lim);
    assert_non_null(b);
    size_t i = 0;
    while (i < t.n && batch_has_room(b, t.len[i])) {
        push_decoded(b, t.pkt[i], t.len[i], 1, 0);
        i++;
    }
    assert_int_equal(b->count, 100);   /* the event limit, not the bytes, stopped it */
    assert_null(batch_push(b, t.pkt[i], t.len[i]));
    b->counts.received = b->count;
    sink_write_batch(s, b);
    assert_int_equal(b->result.discarded, b->count);
    assert_int_equal(b->result.stored, 0);
    assert_int_equal(b->result.failed, 0);

    /* an empty batch discards nothing */
    batch_reset(b);
    sink_write_batch(s, b);
    assert_int_equal(b->result.discarded, 0);
    sink_finish(s, 1);   /* no finish op: a no-op */
    sink_close(s);
    batch_free(b);
    trace_free(&t);
}

static void test_batch_limits(void **state)
{
    (void)state;
    /* the arena budget, not the event count, limits a batch of big packets */
    struct batch_limits lim = {.max_events = 1000, .max_bytes = 64 * 1024};
    struct batch *b = batch_new(&lim);
    assert_non_null(b);
    uint8_t pkt[1024];
    size_t len = make_packet(pkt, 34, 0, NULL, 0);
    memset(pkt + len, 0, sizeof(pkt) - len);
    len = sizeof(pkt);
    size_t n = 0;
    while (batch_has_room(b, len)) {
        assert_non_null(batch_push(b, pkt, len));
        n++;
        assert_true(n < 1000);
    }
    assert_true(n > 0);
    assert_true(arena_remaining(&b->arena) < decode_arena_need(len));
    assert_null(batch_push(b, pkt, len));
    assert_int_equal(b->count, n);

    /* connection snapshots grow past their first allocation */
    for (uint64_t id = 1; id <= 100; id++) {
        struct conn_record rec = {.id = id};
        assert_int_equal(batch_add_conn(b, &rec), 0);
    }
    assert_int_equal(b->nconns, 100);
    assert_int_equal(b->conns[99].id, 100);
    batch_reset(b);
    assert_int_equal(b->nconns, 0);
    assert_int_equal(b->count, 0);
    assert_true(batch_has_room(b, len));

    struct batch_counts into = {0}, from = {.received = 5, .rejected = {1, 2, 3, 4}, .decode = {7, 8, 9}};
    batch_counts_add(&into, &from);
    batch_counts_add(&into, &from);
    assert_int_equal(into.received, 10);
    assert_int_equal(into.rejected[REJECT_NO_MEMORY], 8);
    assert_int_equal(into.decode[DECODE_BAD_PAYLOAD], 18);
    assert_int_equal(batch_counts_rejected(&into), 20);
    assert_string_equal(reject_reason_name(REJECT_SHORT_PACKET), "short_packet");
    assert_string_equal(reject_reason_name(REJECT_NO_MEMORY), "no_memory");
    batch_free(b);
}

/* ---- ingest_packet through a pipeline ---- */

struct seal_ctx {
    struct conn_record *rec;
    int seals;
    int spaces;
};

static void on_seal(struct batch *b, void *data)
{
    struct seal_ctx *c = data;
    c->seals++;
    assert_int_equal(batch_add_conn(b, c->rec), 0);
}

static void on_space(void *data)
{
    struct seal_ctx *c = data;
    c->spaces++;
}

static void test_ingest_discard(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    struct sink *sink = sink_discard_open();
    assert_non_null(sink);
    struct pipeline p;
    struct pipeline_config cfg = {.limits = {.max_events = 64, .max_bytes = 1u << 20}, .queue_max = 2};
    assert_int_equal(pipeline_init(&p, &loop, sink, &cfg, NULL, NULL, NULL), 0);
    struct ingest in = {.decoder = &dec, .pipeline = &p};
    /* connected a minute before the packets (read at 42): 6e9 drops
     * allowed, so the wrap below is growth (ingest.h) */
    struct conn_record rec = {.id = 1, .client_version = 1, .connect_ns = 42 - 60000000000LL};
    uint64_t fed = 0, bytes = 0;
#define FEED(pkt, len, trunc, want_rc)                                                                            \
    do {                                                                                                          \
        assert_int_equal(ingest_packet(&in, &rec, (pkt), (len), (trunc), 42), (want_rc));                        \
        fed++;                                                                                                    \
        bytes += (len);                                                                                           \
    } while (0)

    /* short packets */
    uint8_t buf[64] = {0x08, 0x00, 0x07, 0x00};
    FEED(buf, 0, false, 0);
    FEED(buf, 3, false, 0);
    FEED(buf, 7, false, 0);
    /* bad header_size */
    uint8_t hdr[20] = {0x04, 0x00, 0x07, 0x00};
    FEED(hdr, sizeof(hdr), false, 0);
    hdr[0] = 100;
    FEED(hdr, sizeof(hdr), false, 0);

    struct trace_pkts t;
    trace_load("exec_loop.trace", &t);
    /* cut by the kernel (MSG_TRUNC): rejected whatever they contain */
    FEED(t.pkt[0], t.len[0], true, 0);
    FEED(t.pkt[1], t.len[1], true, 0);
    /* every good packet */
    for (size_t i = 0; i < t.n; i++)
        FEED(t.pkt[i], t.len[i], false, 0);
    /* kept raw: an unknown type and a bad payload */
    size_t len = make_packet(buf, 50, 0, "\x08\x01", 2);
    FEED(buf, len, false, 0);
    len = make_packet(buf, 7, 0, garbage_payload, sizeof(garbage_payload));
    FEED(buf, len, false, 0);
    /* the sandbox's drop counter wraps */
    len = make_packet(buf, 34, 0xfffffff0u, NULL, 0);
    FEED(buf, len, false, 0);
    len = make_packet(buf, 34, 0x10u, NULL, 0);
    FEED(buf, len, false, 0);
    /* a packet no batch can ever hold */
    size_t huge_len = 100000;
    uint8_t *huge = calloc(1, huge_len);
    assert_non_null(huge);
    make_packet(huge, 34, 0x10u, NULL, 0);
    assert_true(decode_arena_need(huge_len) > cfg.limits.max_bytes);
    FEED(huge, huge_len, false, -1);
    free(huge);
#undef FEED

    pipeline_finish(&p);
    const uint64_t events = t.n + 4;
    assert_int_equal(p.counts.received, fed);
    assert_int_equal(p.counts.rejected[REJECT_SHORT_PACKET], 3);
    assert_int_equal(p.counts.rejected[REJECT_BAD_HEADER], 2);
    assert_int_equal(p.counts.rejected[REJECT_OVERSIZE], 2);
    assert_int_equal(p.counts.rejected[REJECT_NO_MEMORY], 1);
    assert_int_equal(batch_counts_rejected(&p.counts), 8);
    assert_int_equal(p.counts.decode[DECODE_OK], t.n + 2);
    assert_int_equal(p.counts.decode[DECODE_UNKNOWN_TYPE], 1);
    assert_int_equal(p.counts.decode[DECODE_BAD_PAYLOAD], 1);
    assert_int_equal(p.result.discarded, events);
    assert_int_equal(p.result.stored, 0);
    assert_int_equal(p.result.failed, 0);
    assert_int_equal(p.counts.received,
                     p.result.stored + p.result.discarded + p.result.failed + batch_counts_rejected(&p.counts));
    assert_int_equal(p.batches_stored, 0);   /* discard stores nothing */
    assert_true(p.batches <= cfg.queue_max + 1);

    assert_int_equal(rec.messages, fed);
    assert_int_equal(rec.bytes, bytes);
    assert_int_equal(rec.rejected, 8);
    assert_int_equal(rec.decode_errors, 2);
    assert_int_equal(rec.last_dropped_count, 0x10);
    assert_int_equal(rec.sandbox_dropped, 0x100000010ull);

    uv_run(&loop, UV_RUN_DEFAULT);   /* let the pipeline's handle close */
    pipeline_free(&p);
    assert_int_equal(uv_loop_close(&loop), 0);
    sink_close(sink);
    trace_free(&t);
}

static void test_ingest_sqlite_pipeline(void **state)
{
    (void)state;
    char dir[64], path[128];
    scratch_dir(dir);
    snprintf(path, sizeof(path), "%s/pipe.db", dir);
    struct sink *sink = open_sqlite(path);

    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    struct conn_record rec = {.id = sink->first_conn_id, .client_version = 1, .connect_ns = 5};
    struct seal_ctx ctx = {.rec = &rec};
    struct pipeline p;
    struct pipeline_config cfg = {.limits = {.max_events = 100, .max_bytes = 4u << 20}, .queue_max = 2};
    assert_int_equal(pipeline_init(&p, &loop, sink, &cfg, on_space, on_seal, &ctx), 0);
    struct ingest in = {.decoder = &dec, .pipeline = &p};

    struct trace_pkts t;
    trace_load("mixed_syscalls.trace", &t);
    uint64_t fed = 0;
    for (size_t i = 0; i < t.n; i++) {
        assert_int_equal(ingest_packet(&in, &rec, t.pkt[i], t.len[i], false, 1000 + (int64_t)i), 0);
        fed++;
        if (i % 100 == 50) {   /* a rejected packet now and then */
            assert_int_equal(ingest_packet(&in, &rec, t.pkt[i], 5, false, 0), 0);
            fed++;
        }
        /* backpressure as the server does it: stop until a batch comes back */
        while (pipeline_saturated(&p))
            uv_run(&loop, UV_RUN_ONCE);
    }
    rec.close_ns = 77;
    snprintf(rec.close_reason, sizeof(rec.close_reason), "eof");
    pipeline_finish(&p);
    uint64_t rejected = fed - t.n;
    assert_true(rejected > 0);
    assert_int_equal(p.counts.received, fed);
    assert_int_equal(p.counts.rejected[REJECT_SHORT_PACKET], rejected);
    assert_int_equal(p.result.stored, t.n);
    assert_int_equal(p.result.failed, 0);
    assert_true(ctx.seals >= (int)(t.n / cfg.limits.max_events));
    assert_true(p.batches <= cfg.queue_max + 1);
    sink_finish(sink, 123);
    uv_run(&loop, UV_RUN_DEFAULT);
    pipeline_free(&p);
    assert_int_equal(uv_loop_close(&loop), 0);
    sink_close(sink);

    sqlite3 *db = db_open_ro(path);
    assert_int_equal(db_int(db, "SELECT count(*) FROM events"), t.n);
    assert_int_equal(db_int(db, "SELECT count(DISTINCT msg_type) FROM events"), 34);
    assert_int_equal(db_int(db, "SELECT count(*) FROM events WHERE json_valid(detail)"), t.n);
    assert_int_equal(db_int(db, "SELECT received FROM runs"), fed);
    assert_int_equal(db_int(db, "SELECT stored FROM runs"), t.n);
    assert_int_equal(db_int(db, "SELECT rejected_short_packet FROM runs"), rejected);
    assert_int_equal(db_int(db, "SELECT count(*) FROM runs WHERE received = stored + discarded + rejected + "
                                "store_failed"),
                     1);
    assert_int_equal(db_int(db, "SELECT stopped_ns FROM runs"), 123);
    /* the last snapshot wins */
    assert_int_equal(db_int(db, "SELECT count(*) FROM connections"), 1);
    assert_int_equal(db_int(db, "SELECT messages FROM connections"), fed);
    assert_int_equal(db_int(db, "SELECT rejected FROM connections"), rejected);
    assert_int_equal(db_int(db, "SELECT close_ns FROM connections"), 77);
    /* rows keep arrival order */
    assert_int_equal(db_int(db, "SELECT count(*) FROM events a JOIN events b ON b.id = a.id + 1 "
                                "WHERE b.recv_ns <= a.recv_ns"),
                     0);
    sqlite3_close(db);
    trace_free(&t);
    scratch_dir_remove(dir);
}

/* Runs packets through ingest where sealing the full batch fails (no memory
 * for a new batch), then recovers. Returns the connection record. */
static struct conn_record ingest_with_failed_seal(uint64_t *fed_out, uint64_t *bytes_out)
{
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    struct sink *sink = sink_discard_open();
    struct pipeline p;
    struct pipeline_config cfg = {.limits = {.max_events = 4, .max_bytes = 1u << 20}, .queue_max = 1};
    assert_int_equal(pipeline_init(&p, &loop, sink, &cfg, NULL, NULL, NULL), 0);
    struct ingest in = {.decoder = &dec, .pipeline = &p};
    struct conn_record rec = {.id = 1};
    struct trace_pkts t;
    trace_load("exec_loop.trace", &t);
    uint64_t fed = 0, bytes = 0;
    for (size_t i = 0; i < 4; i++, fed++) {
        assert_int_equal(ingest_packet(&in, &rec, t.pkt[i], t.len[i], false, 1), 0);
        bytes += t.len[i];
    }
    /* the batch is full; a new one cannot be allocated (calloc overflows) */
    p.cfg.limits.max_events = SIZE_MAX / sizeof(struct event) + 2;
    assert_int_equal(ingest_packet(&in, &rec, t.pkt[4], t.len[4], false, 1), -1);
    fed++;
    bytes += t.len[4];
    p.cfg.limits.max_events = 4;   /* memory is back */
    for (size_t i = 5; i < 10; i++, fed++) {
        assert_int_equal(ingest_packet(&in, &rec, t.pkt[i], t.len[i], false, 1), 0);
        bytes += t.len[i];
    }
    pipeline_finish(&p);
    assert_int_equal(p.counts.received, fed);
    assert_int_equal(p.counts.rejected[REJECT_NO_MEMORY], 1);
    assert_int_equal(p.result.discarded, fed - 1);
    assert_int_equal(p.counts.received, p.result.discarded + batch_counts_rejected(&p.counts));
    assert_int_equal(rec.rejected, 1);
    uv_run(&loop, UV_RUN_DEFAULT);
    pipeline_free(&p);
    assert_int_equal(uv_loop_close(&loop), 0);
    sink_close(sink);
    trace_free(&t);
    *fed_out = fed;
    *bytes_out = bytes;
    return rec;
}

static void test_ingest_seal_fails(void **state)
{
    (void)state;
    uint64_t fed, bytes;
    ingest_with_failed_seal(&fed, &bytes);
}

/* When the batch is full and pipeline_seal fails, the rejected packet still
 * counts in the connection's messages and bytes, like every other one. */
static void test_ingest_seal_failure_conn_counts(void **state)
{
    (void)state;
    uint64_t fed, bytes;
    struct conn_record rec = ingest_with_failed_seal(&fed, &bytes);
    if (rec.messages != fed || rec.bytes != bytes)
        fail_msg("conn messages=%llu bytes=%llu, want %llu and %llu (the packet rejected when "
                 "pipeline_seal failed is not counted)",
                 (unsigned long long)rec.messages, (unsigned long long)rec.bytes, (unsigned long long)fed,
                 (unsigned long long)bytes);
}

/* Opening an existing database must not read its whole events table:
 * the row estimate reads the two ends of the id index. Opening is timed
 * against one full scan of the same table (the query the estimate was
 * before), so the bound holds on a slow or loaded machine. */
static void test_sqlite_open_does_not_scan_events(void **state)
{
    (void)state;
    char dir[64], path[128];
    scratch_dir(dir);
    snprintf(path, sizeof(path), "%s/events.db", dir);
    struct sink *s = open_sqlite(path);
    sink_close(s);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500000) "
                                  "INSERT INTO events(conn_id, recv_ns, msg_type, dropped_count, raw) "
                                  "SELECT 1, i, 1, 0, x'00' FROM n",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    double scan = 1e9, open = 1e9;
    for (int i = 0; i < 3; i++) {
        double t = wall_s();
        assert_int_equal(db_int(db, "SELECT max(id) - min(id) FROM events"), 499999);
        double took = wall_s() - t;
        scan = took < scan ? took : scan;
        t = wall_s();
        s = open_sqlite(path);
        took = wall_s() - t;
        open = took < open ? took : open;
        sink_close(s);
    }
    sqlite3_close(db);
    printf("open %.1f ms, one scan of 500000 events %.1f ms\n", open * 1e3, scan * 1e3);
    if (open >= scan)
        fail_msg("opening took %.1f ms, a whole scan of events %.1f ms", open * 1e3, scan * 1e3);
    scratch_dir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sqlite_batch),
        cmocka_unit_test(test_sqlite_schema_version_refused),
        cmocka_unit_test(test_sqlite_bad_path),
        cmocka_unit_test(test_sqlite_lock_is_waited_out),
        cmocka_unit_test(test_sqlite_lock_wait_does_not_spin),
        cmocka_unit_test(test_sqlite_check_tries_for_the_lock_every_millisecond),
        cmocka_unit_test(test_sqlite_check_gets_in_while_the_writer_is_busy),
        cmocka_unit_test(test_sqlite_failed_batch_counted_later),
        cmocka_unit_test(test_sqlite_failed_last_batch_counted),
        cmocka_unit_test(test_sqlite_failed_batch_keeps_conn_snapshots),
        cmocka_unit_test(test_sqlite_database_deleted),
        cmocka_unit_test(test_sqlite_database_replaced),
        cmocka_unit_test(test_discard_sink),
        cmocka_unit_test(test_batch_limits),
        cmocka_unit_test(test_ingest_discard),
        cmocka_unit_test(test_ingest_sqlite_pipeline),
        cmocka_unit_test(test_ingest_seal_fails),
        cmocka_unit_test(test_ingest_seal_failure_conn_counts),
        cmocka_unit_test(test_sqlite_open_does_not_scan_events),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
