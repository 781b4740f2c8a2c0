/* test_event_json.c - one event as one NDJSON line (storage/event_json.h),
 * checked with SQLite's JSON functions: against the events table the
 * SQLite sink writes for the same events (every column, the NULL rules,
 * detail, raw), and on hand-made events for the edge cases. */
#include "unit_util.h"

#include <sqlite3.h>

#include "batch.h"
#include "decode.h"
#include "event_json.h"
#include "json.h"
#include "sink.h"
#include "strbuf.h"
#include "gvisor/syscall.pb-c.h"

static struct decoder dec;
static sqlite3 *mem;   /* for json_extract and friends */

static int setup(void **state)
{
    (void)state;
    decoder_init(&dec);
    return sqlite3_open(":memory:", &mem) == SQLITE_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    sqlite3_close(mem);
    return 0;
}

/* "SELECT expr" with ?1 bound to line; the row's first column as text
 * (NULL: returns false). */
static bool query_text(const char *line, const char *expr, char *out, size_t outlen)
{
    char sql[512];
    snprintf(sql, sizeof(sql), "SELECT %s", expr);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(mem, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("prepare %s: %s", sql, sqlite3_errmsg(mem));
    sqlite3_bind_text(st, 1, line, -1, SQLITE_TRANSIENT);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    bool present = sqlite3_column_type(st, 0) != SQLITE_NULL;
    if (present)
        snprintf(out, outlen, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return present;
}

/* json_type(line, path): "" when the key is absent. */
static const char *type_of(const char *line, const char *path)
{
    static char type[32];
    char expr[128];
    snprintf(expr, sizeof(expr), "json_type(?1, '%s')", path);
    if (!query_text(line, expr, type, sizeof(type)))
        type[0] = '\0';
    return type;
}

static const char *text_at(const char *line, const char *path)
{
    static char text[4096];
    char expr[128];
    snprintf(expr, sizeof(expr), "json_extract(?1, '%s')", path);
    if (!query_text(line, expr, text, sizeof(text)))
        fail_msg("%s missing in %s", path, line);
    return text;
}

static long long int_at(const char *line, const char *path)
{
    assert_string_equal(type_of(line, path), "integer");
    return strtoll(text_at(line, path), NULL, 10);
}

/* Renders ev and checks the line's shape: one valid object, one '\n' at the end. */
static const char *render_line(struct strbuf *sb, const struct event *ev)
{
    strbuf_reset(sb);
    assert_int_equal(event_json_render(sb, ev), 0);
    assert_true(sb->len > 2);
    assert_int_equal(sb->data[sb->len - 1], '\n');
    assert_ptr_equal(strchr(sb->data, '\n'), sb->data + sb->len - 1);
    char valid[8];
    assert_true(query_text(sb->data, "json_valid(?1)", valid, sizeof(valid)));
    if (strcmp(valid, "1") != 0)
        fail_msg("invalid JSON: %s", sb->data);
    assert_string_equal(type_of(sb->data, "$"), "object");
    return sb->data;
}

/* Decodes pkt into ev, its bytes and message in arena a. */
static void decode_packet(struct arena *a, const uint8_t *pkt, size_t len, struct event *ev)
{
    struct wire_header h;
    assert_int_equal(wire_header_parse(pkt, len, &h), WIRE_OK);
    const uint8_t *raw = arena_memdup(a, pkt, len);
    memset(ev, 0, sizeof(*ev));
    decode_event(&dec, a, &h, raw, len, ev);
    ev->conn_id = 42;
    ev->recv_ns = 1700000000123456789;
}

/* ---- against the events table ---- */

/* Columns of the events table that every line carries under the same name,
 * with the table's value (json_extract gives 1/0 for true/false). */
static const char *const columns[] = {
    "conn_id", "recv_ns", "msg_type", "type_name", "dropped_count", "decode_error", "time_ns", "container_id",
    "thread_id", "thread_group_id", "process_name", "cwd", "real_uid", "effective_uid", "saved_uid", "real_gid",
    "effective_gid", "saved_gid", "sysno", "is_exit", "result", "errno", "thread_start_time_ns",
    "thread_group_start_time_ns", "parent_thread_group_id", "is_exec_session",
};
#define NCOLUMNS (sizeof(columns) / sizeof(columns[0]))

static const uint8_t garbage_payload[] = {0xff, 0xff, 0xff, 0xff, 0xff};

/* Every event of a fixture, plus an unknown type and a bad payload: into
 * the SQLite sink (db_path) in batches, and as lines into lines(id, line)
 * of `mem`, numbered as the sink numbers its rows. Returns the count. */
static int64_t write_both(const char *name, const char *db_path)
{
    struct trace_pkts t;
    trace_load(name, &t);
    struct sink_sqlite_options o = {.path = db_path, .busy_timeout_ms = 2000};
    char err[512];
    struct sink *s = sink_sqlite_open(&o, err, sizeof(err));
    if (!s)
        fail_msg("%s", err);
    struct batch_limits lim = {.max_events = 1024, .max_bytes = 64u << 20};
    struct batch *b = batch_new(&lim);
    assert_non_null(b);
    sqlite3_stmt *ins;
    assert_int_equal(sqlite3_prepare_v2(mem, "INSERT INTO lines(line) VALUES(?1)", -1, &ins, NULL), SQLITE_OK);
    struct strbuf sb = {0};
    uint8_t odd[2][64];
    size_t odd_len[2] = {make_packet(odd[0], 999, 7, "abc", 3),
                         make_packet(odd[1], 7, 8, garbage_payload, sizeof(garbage_payload))};
    int64_t total = 0;
    for (size_t i = 0; i < t.n + 2; i++) {
        const uint8_t *pkt = i < t.n ? t.pkt[i] : odd[i - t.n];
        size_t len = i < t.n ? t.len[i] : odd_len[i - t.n];
        struct event *ev = batch_push(b, pkt, len);
        assert_non_null(ev);
        struct wire_header h;
        assert_int_equal(wire_header_parse(pkt, len, &h), WIRE_OK);
        decode_event(&dec, &b->arena, &h, ev->raw, len, ev);
        ev->conn_id = 3 + i % 2;
        ev->recv_ns = 1700000000000000000 + (int64_t)i;
        if (b->count == b->max_events || i == t.n + 1) {
            for (size_t k = 0; k < b->count; k++) {
                sqlite3_reset(ins);
                sqlite3_bind_text(ins, 1, render_line(&sb, &b->events[k]), -1, SQLITE_TRANSIENT);
                assert_int_equal(sqlite3_step(ins), SQLITE_DONE);
            }
            sink_write_batch(s, b);
            assert_int_equal(b->result.stored, b->count);
            total += (int64_t)b->count;
            batch_reset(b);
        }
    }
    sqlite3_finalize(ins);
    strbuf_free(&sb);
    batch_free(b);
    sink_close(s);
    trace_free(&t);
    return total;
}

static int64_t mem_int(const char *sql)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(mem, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("prepare %s: %s", sql, sqlite3_errmsg(mem));
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void mem_exec(const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(mem, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
}

/* Rows whose line disagrees with the table on column col (NULL = absent). */
static int64_t mismatches(const char *col)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM ev.events e JOIN lines l ON l.id = e.id"
             " WHERE json_extract(l.line, '$.%s') IS NOT e.\"%s\"", col, col);
    return mem_int(sql);
}

static void check_against_table(const char *name)
{
    char dir[64], db_path[128];
    scratch_dir(dir);
    snprintf(db_path, sizeof(db_path), "%s/events.db", dir);
    mem_exec("DROP TABLE IF EXISTS lines; CREATE TABLE lines(id INTEGER PRIMARY KEY, line TEXT NOT NULL)");
    int64_t n = write_both(name, db_path);
    char attach[256];
    snprintf(attach, sizeof(attach), "ATTACH '%s' AS ev", db_path);
    mem_exec(attach);
    assert_int_equal(mem_int("SELECT count(*) FROM ev.events"), n);
    assert_int_equal(mem_int("SELECT count(*) FROM lines"), n);
    for (size_t c = 0; c < NCOLUMNS; c++)
        if (mismatches(columns[c]) != 0)
            fail_msg("%s: column %s differs in %lld rows", name, columns[c], (long long)mismatches(columns[c]));
    /* detail: the same document as the table's; raw only when there is none. */
    assert_int_equal(mem_int("SELECT count(*) FROM ev.events e JOIN lines l ON l.id = e.id"
                             " WHERE json(json_extract(l.line, '$.detail')) IS NOT json(e.detail)"),
                     0);
    assert_int_equal(mem_int("SELECT count(*) FROM ev.events e JOIN lines l ON l.id = e.id"
                             " WHERE json_extract(l.line, '$.raw') IS NOT"
                             " (CASE WHEN e.detail IS NULL THEN lower(hex(e.raw)) END)"),
                     0);
    assert_int_equal(mem_int("SELECT count(*) FROM lines WHERE json_extract(line, '$.raw') IS NOT NULL"), 2);
    /* A NULL column is an absent key, never a JSON null; no other keys. */
    assert_int_equal(mem_int("SELECT count(*) FROM lines, json_each(lines.line) WHERE json_each.type = 'null'"), 0);
    char sql[1024] = "SELECT count(*) FROM lines, json_each(lines.line) WHERE json_each.key NOT IN ('detail','raw'";
    for (size_t c = 0; c < NCOLUMNS; c++)
        snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql), ",'%s'", columns[c]);
    strcat(sql, ")");
    assert_int_equal(mem_int(sql), 0);
    /* The fixtures do exercise the optional columns. */
    assert_true(mem_int("SELECT count(*) FROM lines WHERE json_extract(line, '$.container_id') IS NOT NULL") > 0);
    mem_exec("DETACH ev");
    scratch_dir_remove(dir);
}

static void test_mixed_syscalls_match_table(void **state)
{
    (void)state;
    check_against_table("mixed_syscalls.trace");
    /* Both syscall forms occur, and exit carries errno even when 0. */
    assert_true(mem_int("SELECT count(*) FROM lines WHERE json_type(line, '$.is_exit') = 'true'"
                        " AND json_type(line, '$.errno') = 'integer'") > 0);
    assert_true(mem_int("SELECT count(*) FROM lines WHERE json_type(line, '$.is_exit') = 'false'"
                        " AND json_type(line, '$.result') IS NULL") > 0);
}

static void test_exec_loop_match_table(void **state)
{
    (void)state;
    check_against_table("exec_loop.trace");
    /* Container and sentry messages have no syscall fields. */
    assert_true(mem_int("SELECT count(*) FROM lines WHERE json_extract(line, '$.msg_type') = 1"
                        " AND json_type(line, '$.sysno') IS NULL AND json_type(line, '$.is_exit') IS NULL") == 1);
}

static void test_drops_match_table(void **state)
{
    (void)state;
    check_against_table("drops.trace");
    assert_true(mem_int("SELECT max(json_extract(line, '$.dropped_count')) FROM lines") > 0);
}

/* ---- edge cases, by hand ---- */

static void test_unknown_type_is_raw_hex(void **state)
{
    (void)state;
    struct arena a;
    arena_init(&a, 4096, 1 << 20);
    uint8_t pkt[16];
    size_t len = make_packet(pkt, 999, 0x01020304, "\x00\xff\n", 3);
    struct event ev;
    decode_packet(&a, pkt, len, &ev);
    assert_int_equal(ev.status, DECODE_UNKNOWN_TYPE);
    struct strbuf sb = {0};
    const char *line = render_line(&sb, &ev);
    assert_string_equal(text_at(line, "$.raw"), "0800e70304030201" "00ff0a");
    assert_string_equal(text_at(line, "$.decode_error"), "unknown_type");
    assert_int_equal(int_at(line, "$.msg_type"), 999);
    assert_int_equal(int_at(line, "$.dropped_count"), 0x01020304);
    assert_int_equal(int_at(line, "$.conn_id"), 42);
    assert_int_equal(int_at(line, "$.recv_ns"), 1700000000123456789LL);
    assert_string_equal(type_of(line, "$.type_name"), "");
    assert_string_equal(type_of(line, "$.detail"), "");
    assert_string_equal(type_of(line, "$.time_ns"), "");

    /* A known type whose payload does not unpack keeps its name. */
    arena_reset(&a);
    len = make_packet(pkt, 7, 0, garbage_payload, sizeof(garbage_payload));
    decode_packet(&a, pkt, len, &ev);
    assert_int_equal(ev.status, DECODE_BAD_PAYLOAD);
    line = render_line(&sb, &ev);
    assert_string_equal(text_at(line, "$.decode_error"), "bad_payload");
    assert_string_equal(text_at(line, "$.type_name"), "SYSCALL_OPEN");
    assert_string_equal(text_at(line, "$.raw"), "0800070000000000ffffffffff");
    assert_string_equal(type_of(line, "$.sysno"), "");
    strbuf_free(&sb);
    arena_free(&a);
}

/* Packs msg as a packet of type and decodes it. */
static void decode_message(struct arena *a, uint16_t type, const ProtobufCMessage *msg, struct event *ev)
{
    uint8_t payload[1024], pkt[1100];
    size_t plen = protobuf_c_message_get_packed_size(msg);
    assert_true(plen <= sizeof(payload));
    protobuf_c_message_pack(msg, payload);
    size_t len = make_packet(pkt, type, 0, payload, plen);
    decode_packet(a, pkt, len, ev);
    assert_int_equal(ev->status, DECODE_OK);
}

static void test_null_rules(void **state)
{
    (void)state;
    struct arena a;
    arena_init(&a, 4096, 1 << 20);
    struct strbuf sb = {0}, detail = {0};
    struct event ev;

    /* No context_data at all: none of its columns; an enter has no result. */
    Gvisor__Syscall__Open open = GVISOR__SYSCALL__OPEN__INIT;
    open.sysno = 2;
    open.pathname = "/etc/\"quoted\"\n";
    decode_message(&a, 7, &open.base, &ev);
    const char *line = render_line(&sb, &ev);
    static const char *const context_keys[] = {"$.time_ns", "$.container_id", "$.thread_id", "$.thread_group_id",
                                               "$.process_name", "$.cwd", "$.real_uid", "$.saved_gid",
                                               "$.result", "$.errno", "$.decode_error", "$.raw"};
    for (size_t i = 0; i < sizeof(context_keys) / sizeof(context_keys[0]); i++)
        if (type_of(line, context_keys[i])[0])
            fail_msg("%s present in %s", context_keys[i], line);
    assert_int_equal(int_at(line, "$.sysno"), 2);
    assert_string_equal(type_of(line, "$.is_exit"), "false");
    assert_string_equal(text_at(line, "$.type_name"), "SYSCALL_OPEN");
    assert_string_equal(text_at(line, "$.detail.pathname"), "/etc/\"quoted\"\n");
    strbuf_reset(&detail);
    assert_int_equal(event_detail_render(&detail, &ev), 0);
    assert_non_null(strstr(line, detail.data));   /* detail is the table's, verbatim */
    assert_string_equal(type_of(line, "$.detail.sysno"), "");   /* a column: once is enough */
    assert_string_equal(type_of(line, "$.is_exec_session"), "");   /* no context, none of it */

    /* Zero ids and empty strings are "not collected"; credentials, once
     * sent, are written whole (zeros included); exit gives result and errno. */
    arena_reset(&a);
    Gvisor__Common__ContextData ctx = GVISOR__COMMON__CONTEXT_DATA__INIT;
    Gvisor__Common__Credentials cred = GVISOR__COMMON__CREDENTIALS__INIT;
    Gvisor__Syscall__Exit ex = GVISOR__SYSCALL__EXIT__INIT;
    ctx.thread_id = 5;
    ctx.process_name = "sh";
    ctx.credentials = &cred;
    cred.effective_uid = 1000;
    ex.result = -2;
    ex.errorno = 0;
    open.context_data = &ctx;
    open.exit = &ex;
    decode_message(&a, 7, &open.base, &ev);
    line = render_line(&sb, &ev);
    assert_string_equal(type_of(line, "$.time_ns"), "");
    assert_string_equal(type_of(line, "$.container_id"), "");
    assert_string_equal(type_of(line, "$.thread_group_id"), "");
    assert_string_equal(type_of(line, "$.cwd"), "");
    assert_int_equal(int_at(line, "$.thread_id"), 5);
    assert_string_equal(text_at(line, "$.process_name"), "sh");
    assert_int_equal(int_at(line, "$.real_uid"), 0);
    assert_int_equal(int_at(line, "$.effective_uid"), 1000);
    assert_int_equal(int_at(line, "$.saved_gid"), 0);
    assert_string_equal(type_of(line, "$.is_exit"), "true");
    assert_int_equal(int_at(line, "$.result"), -2);
    assert_int_equal(int_at(line, "$.errno"), 0);
    assert_string_equal(type_of(line, "$.detail.exit"), "");
    assert_string_equal(type_of(line, "$.detail.context_data"), "");
    assert_string_equal(type_of(line, "$.is_exec_session"), "false");
    assert_int_equal(int_at(line, "$.parent_thread_group_id"), 0);
    assert_string_equal(type_of(line, "$.thread_start_time_ns"), "");

    strbuf_free(&detail);
    strbuf_free(&sb);
    arena_free(&a);
}

/* A newer gVisor's context_data, with a field this schema does not know:
 * the columns cannot hold it, so detail keeps context_data whole (and
 * events_full takes it from there); exit, which they hold, still goes. */
static void test_unknown_context_field_stays_in_detail(void **state)
{
    (void)state;
    struct arena a;
    arena_init(&a, 4096, 1 << 20);
    struct strbuf sb = {0};
    struct event ev;
    Gvisor__Common__ContextData ctx = GVISOR__COMMON__CONTEXT_DATA__INIT;
    ctx.thread_id = 5;
    uint8_t ctx_bytes[64];
    size_t ctx_len = protobuf_c_message_pack(&ctx.base, ctx_bytes);
    ctx_bytes[ctx_len++] = 0x98;   /* field 99, varint: unknown here */
    ctx_bytes[ctx_len++] = 0x06;
    ctx_bytes[ctx_len++] = 0x01;
    uint8_t payload[96];
    size_t plen = 0;
    payload[plen++] = 0x0a;        /* Open.context_data */
    payload[plen++] = (uint8_t)ctx_len;
    memcpy(payload + plen, ctx_bytes, ctx_len);
    plen += ctx_len;
    static const uint8_t rest[] = {0x12, 0x02, 0x08, 0x03, 0x18, 0x02};   /* exit{result 3}, sysno 2 */
    memcpy(payload + plen, rest, sizeof(rest));
    plen += sizeof(rest);
    uint8_t pkt[128];
    decode_packet(&a, pkt, make_packet(pkt, 7, 0, payload, plen), &ev);
    assert_int_equal(ev.status, DECODE_OK);
    const char *line = render_line(&sb, &ev);
    assert_int_equal(int_at(line, "$.detail.context_data.thread_id"), 5);
    assert_int_equal(int_at(line, "$.detail.context_data._unknown_fields"), 1);
    assert_int_equal(int_at(line, "$.thread_id"), 5);   /* the columns have what they can hold */
    assert_string_equal(type_of(line, "$.detail.exit"), "");
    assert_string_equal(type_of(line, "$.detail.sysno"), "");
    assert_int_equal(int_at(line, "$.result"), 3);
    strbuf_free(&sb);
    arena_free(&a);
}

/* Strings from the sandbox are not trusted to be UTF-8 or free of
 * control characters: the line stays one valid JSON line. */
static void test_hostile_strings(void **state)
{
    (void)state;
    struct arena a;
    arena_init(&a, 4096, 1 << 20);
    struct strbuf sb = {0};
    struct event ev;
    Gvisor__Common__ContextData ctx = GVISOR__COMMON__CONTEXT_DATA__INIT;
    ctx.container_id = "bad\xff\xfe id\r\n\x1b[31m";
    ctx.time_ns = -5;
    Gvisor__Syscall__Open open = GVISOR__SYSCALL__OPEN__INIT;
    open.context_data = &ctx;
    decode_message(&a, 7, &open.base, &ev);
    const char *line = render_line(&sb, &ev);
    assert_string_equal(text_at(line, "$.container_id"), "bad\xef\xbf\xbd\xef\xbf\xbd id\r\n\x1b[31m");
    assert_int_equal(int_at(line, "$.time_ns"), -5);
    strbuf_free(&sb);
    arena_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mixed_syscalls_match_table),
        cmocka_unit_test(test_exec_loop_match_table),
        cmocka_unit_test(test_drops_match_table),
        cmocka_unit_test(test_unknown_type_is_raw_hex),
        cmocka_unit_test(test_null_rules),
        cmocka_unit_test(test_hostile_strings),
        cmocka_unit_test(test_unknown_context_field_stays_in_detail),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
