/* test_json.c - protobuf messages as JSON (decoder/json.h), checked with
 * SQLite's own JSON functions (json_valid is strict RFC 8259). */
#include "unit_util.h"

#include <inttypes.h>
#include <sqlite3.h>

#include "decode.h"
#include "json.h"
#include "strbuf.h"
#include "gvisor/container.pb-c.h"
#include "gvisor/sentry.pb-c.h"
#include "gvisor/syscall.pb-c.h"

static struct decoder dec;
static sqlite3 *db;
static sqlite3_stmt *st_valid;

static int setup(void **state)
{
    (void)state;
    decoder_init(&dec);
    if (sqlite3_open(":memory:", &db) != SQLITE_OK)
        return -1;
    if (sqlite3_prepare_v2(db, "SELECT json_valid(?1)", -1, &st_valid, NULL) != SQLITE_OK)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sqlite3_finalize(st_valid);
    sqlite3_close(db);
    return 0;
}

static int json_valid(const char *json, size_t len)
{
    sqlite3_reset(st_valid);
    sqlite3_bind_text(st_valid, 1, json, (int)len, SQLITE_TRANSIENT);
    assert_int_equal(sqlite3_step(st_valid), SQLITE_ROW);
    return sqlite3_column_int(st_valid, 0);
}

/* Runs "SELECT <expr>" with ?1 bound to json; the statement is left stepped
 * on its row for the caller to read and must be finalized. */
static sqlite3_stmt *query(const char *json, const char *expr)
{
    char sql[512];
    snprintf(sql, sizeof(sql), "SELECT %s", expr);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("prepare %s: %s", sql, sqlite3_errmsg(db));
    sqlite3_bind_text(st, 1, json, -1, SQLITE_TRANSIENT);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    return st;
}

/* "fn(?1, 'path')" into expr: fails the test rather than query a cut path. */
static void path_expr(char *expr, size_t len, const char *fn, const char *path)
{
    int n = snprintf(expr, len, "%s(?1, '%s')", fn, path);
    if (n < 0 || (size_t)n >= len)
        fail_msg("JSON path longer than the query buffer (%zu bytes): %s", len, path);
}

/* json_extract(json, path) as text into out; returns false when NULL. */
static bool extract_text(const char *json, const char *path, char *out, size_t outlen)
{
    char expr[256];
    path_expr(expr, sizeof(expr), "json_extract", path);
    sqlite3_stmt *st = query(json, expr);
    bool present = sqlite3_column_type(st, 0) != SQLITE_NULL;
    if (present)
        snprintf(out, outlen, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return present;
}

static int64_t extract_int(const char *json, const char *path)
{
    char expr[256];
    path_expr(expr, sizeof(expr), "json_extract", path);
    sqlite3_stmt *st = query(json, expr);
    if (sqlite3_column_type(st, 0) != SQLITE_INTEGER)
        fail_msg("%s in %s is not an integer", path, json);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* json_type(json, path), or "" when the path is absent. */
static void json_type_of(const char *json, const char *path, char *out, size_t outlen)
{
    char expr[256];
    path_expr(expr, sizeof(expr), "json_type", path);
    sqlite3_stmt *st = query(json, expr);
    const unsigned char *t = sqlite3_column_text(st, 0);
    snprintf(out, outlen, "%s", t ? (const char *)t : "");
    sqlite3_finalize(st);
}

/* Renders msg into sb (reset first) and asserts it is valid JSON. */
static const char *render(struct strbuf *sb, const ProtobufCMessage *msg)
{
    strbuf_reset(sb);
    assert_int_equal(json_render_message(sb, msg), 0);
    assert_false(sb->failed);
    assert_non_null(sb->data);
    assert_int_equal(strlen(sb->data), sb->len);
    if (!json_valid(sb->data, sb->len))
        fail_msg("invalid JSON: %s", sb->data);
    return sb->data;
}

static const char *render_string(struct strbuf *sb, const char *s, size_t len)
{
    strbuf_reset(sb);
    json_render_string(sb, s, len);
    assert_false(sb->failed);
    if (!json_valid(sb->data, sb->len))
        fail_msg("invalid JSON string: %s", sb->data);
    return sb->data;
}

/* ---- every fixture message ---- */

struct spot {
    const char *start_arg2;   /* expected in Start.args[2] */
    int start_checked;
    int open_exit_checked;
    int open_enter_checked;
    int unknown_fields;
};

static void render_trace(const char *name, struct spot *spot)
{
    struct trace_pkts t;
    trace_load(name, &t);
    struct arena a;
    arena_init(&a, 64 * 1024, 1 << 20);
    struct strbuf sb = {0};
    char text[1024], type[32];
    for (size_t i = 0; i < t.n; i++) {
        arena_reset(&a);
        struct wire_header h;
        assert_int_equal(wire_header_parse(t.pkt[i], t.len[i], &h), WIRE_OK);
        const uint8_t *raw = arena_memdup(&a, t.pkt[i], t.len[i]);
        struct event ev;
        decode_event(&dec, &a, &h, raw, t.len[i], &ev);
        assert_int_equal(ev.status, DECODE_OK);
        const char *json = render(&sb, ev.msg);
        assert_int_equal(json[0], '{');
        if (strstr(json, "_unknown_fields"))
            spot->unknown_fields++;

        if (h.message_type == 1) {
            assert_true(extract_text(json, "$.context_data.container_id", text, sizeof(text)));
            assert_memory_equal(text, "runsc-", 6);
            json_type_of(json, "$.args", type, sizeof(type));
            assert_string_equal(type, "array");
            assert_true(extract_text(json, "$.args[0]", text, sizeof(text)));
            assert_string_equal(text, "/bin/sh");
            assert_true(extract_text(json, "$.args[2]", text, sizeof(text)));
            assert_non_null(strstr(text, spot->start_arg2));
            json_type_of(json, "$.context_data.credentials", type, sizeof(type));
            assert_string_equal(type, "object");   /* root: sent empty, still present */
            assert_int_equal(extract_int(json, "$.context_data.credentials.real_uid"), 0);
            json_type_of(json, "$.terminal", type, sizeof(type));
            assert_string_equal(type, "false");
            spot->start_checked++;
        } else if (h.message_type == 7 && ev.is_exit && spot->open_exit_checked < 5) {
            json_type_of(json, "$.exit.result", type, sizeof(type));
            assert_string_equal(type, "integer");
            assert_int_equal(extract_int(json, "$.exit.result"), ev.result);
            assert_int_equal(extract_int(json, "$.exit.errorno"), ev.errorno);
            assert_int_equal(extract_int(json, "$.sysno"), (int64_t)ev.sysno);
            spot->open_exit_checked++;
        } else if (h.message_type == 7 && !ev.is_exit && spot->open_enter_checked < 5) {
            json_type_of(json, "$.exit", type, sizeof(type));
            assert_string_equal(type, "");   /* unset sub-message omitted */
            assert_true(extract_text(json, "$.pathname", text, sizeof(text)));
            spot->open_enter_checked++;
        }
    }
    strbuf_free(&sb);
    arena_free(&a);
    trace_free(&t);
}

static void test_mixed_syscalls_valid(void **state)
{
    (void)state;
    struct spot spot = {.start_arg2 = "/usr/bin/python3 /tmp/mixed_syscalls.py"};
    render_trace("mixed_syscalls.trace", &spot);
    assert_int_equal(spot.start_checked, 1);
    assert_int_equal(spot.open_exit_checked, 5);
    assert_int_equal(spot.open_enter_checked, 5);
    assert_int_equal(spot.unknown_fields, 0);
}

static void test_exec_loop_valid(void **state)
{
    (void)state;
    struct spot spot = {.start_arg2 = "seq 200"};
    render_trace("exec_loop.trace", &spot);
    assert_int_equal(spot.start_checked, 1);
    assert_int_equal(spot.unknown_fields, 0);
}

/* ---- 64-bit integers ---- */

static void test_64bit_exact(void **state)
{
    (void)state;
    Gvisor__Syscall__Exit exit = GVISOR__SYSCALL__EXIT__INIT;
    exit.result = INT64_MIN;
    exit.errorno = -1;
    Gvisor__Syscall__Clone c = GVISOR__SYSCALL__CLONE__INIT;
    c.exit = &exit;
    c.sysno = UINT64_MAX;
    c.flags = 0x8000000000000011ull;    /* 2^63 + 17: a double would round it */
    c.stack = 0x7fffffffffffffffull;
    c.new_tid = 9007199254740993ull;    /* 2^53 + 1 */
    c.tls = 0;

    uint8_t buf[256];
    size_t n = gvisor__syscall__clone__get_packed_size(&c);
    assert_true(n <= sizeof(buf));
    assert_int_equal(gvisor__syscall__clone__pack(&c, buf), n);
    Gvisor__Syscall__Clone *u = gvisor__syscall__clone__unpack(NULL, n, buf);
    assert_non_null(u);
    assert_int_equal(u->flags, 0x8000000000000011ull);

    struct strbuf sb = {0};
    const char *json = render(&sb, &u->base);
    assert_non_null(strstr(json, "\"flags\":9223372036854775825"));
    assert_non_null(strstr(json, "\"sysno\":18446744073709551615"));
    assert_non_null(strstr(json, "\"stack\":9223372036854775807"));
    assert_non_null(strstr(json, "\"new_tid\":9007199254740993"));
    assert_non_null(strstr(json, "\"tls\":0"));
    assert_non_null(strstr(json, "\"result\":-9223372036854775808"));
    assert_non_null(strstr(json, "\"errorno\":-1"));
    /* and SQLite reads them as integers, exactly where they fit int64 */
    assert_int_equal(extract_int(json, "$.stack"), INT64_MAX);
    assert_int_equal(extract_int(json, "$.new_tid"), 9007199254740993ll);
    assert_int_equal(extract_int(json, "$.exit.result"), INT64_MIN);
    assert_int_equal(extract_int(json, "$.exit.errorno"), -1);
    char type[32];
    json_type_of(json, "$.flags", type, sizeof(type));
    assert_string_equal(type, "integer");
    sqlite3_stmt *st = query(json, "?1 -> '$.flags'");
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "9223372036854775825");
    sqlite3_finalize(st);

    gvisor__syscall__clone__free_unpacked(u, NULL);
    strbuf_free(&sb);
}

static void test_32bit_signedness(void **state)
{
    (void)state;
    Gvisor__Syscall__Socket s = GVISOR__SYSCALL__SOCKET__INIT;
    s.domain = -2147483647 - 1;
    s.type = 2147483647;
    s.protocol = -1;
    Gvisor__Syscall__Setid id = GVISOR__SYSCALL__SETID__INIT;
    id.id = 4294967295u;
    struct strbuf sb = {0};
    const char *json = render(&sb, &s.base);
    assert_int_equal(extract_int(json, "$.domain"), INT32_MIN);
    assert_int_equal(extract_int(json, "$.type"), INT32_MAX);
    assert_int_equal(extract_int(json, "$.protocol"), -1);
    json = render(&sb, &id.base);
    assert_int_equal(extract_int(json, "$.id"), 4294967295ll);
    strbuf_free(&sb);
}

/* ---- strings ---- */

static void test_invalid_utf8(void **state)
{
    (void)state;
    struct strbuf sb = {0};
    const struct {
        const char *in;
        size_t len;
    } bad[] = {
        {"a\xff" "b", 3},
        {"\xc3", 1},                      /* truncated 2-byte sequence at the end */
        {"x\xe2\x82", 3},                 /* truncated 3-byte sequence */
        {"\xe2\x82y", 3},                 /* 3-byte sequence cut by ASCII */
        {"\xc0\x80", 2},                  /* overlong NUL */
        {"\xe0\x80\xaf", 3},              /* overlong '/' */
        {"\xed\xa0\x80", 3},              /* UTF-16 surrogate D800 */
        {"\xf4\x90\x80\x80", 4},          /* past U+10FFFF */
        {"\xf8\x88\x80\x80\x80", 5},      /* 5-byte form */
        {"\x80\xbf", 2},                  /* lone continuation bytes */
        {"\xfe\xff", 2},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *json = render_string(&sb, bad[i].in, bad[i].len);
        if (!strstr(json, "\\ufffd"))
            fail_msg("case %zu: no U+FFFD in %s", i, json);
        for (size_t k = 0; k < sb.len; k++)
            if ((unsigned char)json[k] >= 0x80)
                fail_msg("case %zu: raw byte 0x%02x left in %s", i, (unsigned char)json[k], json);
    }
    assert_string_equal(render_string(&sb, "a\xff" "b", 3), "\"a\\ufffdb\"");
    assert_string_equal(render_string(&sb, "\xc3", 1), "\"\\ufffd\"");

    /* the same through a message field: still valid JSON */
    Gvisor__Syscall__Open o = GVISOR__SYSCALL__OPEN__INIT;
    char path[] = "/tmp/\xff\xc0\x80\xed\xa0\x80/x\xe2\x82";
    o.pathname = path;
    const char *json = render(&sb, &o.base);
    assert_non_null(strstr(json, "\"pathname\":\"/tmp/\\ufffd"));
    char text[256];
    assert_true(extract_text(json, "$.pathname", text, sizeof(text)));
    assert_memory_equal(text, "/tmp/\xef\xbf\xbd", 8);   /* U+FFFD as UTF-8 */
    strbuf_free(&sb);
}

static void test_escapes(void **state)
{
    (void)state;
    struct strbuf sb = {0};
    const char in[] = "q\"b\\s/n\nr\rt\tc\x01\x1f" "d\x7f";
    assert_string_equal(render_string(&sb, in, sizeof(in) - 1),
                        "\"q\\\"b\\\\s/n\\nr\\rt\\tc\\u0001\\u001fd\x7f\"");
    /* an embedded NUL is escaped, not a terminator */
    assert_string_equal(render_string(&sb, "a\0b", 3), "\"a\\u0000b\"");
    assert_string_equal(render_string(&sb, "", 0), "\"\"");

    /* every control character round-trips through SQLite's parser */
    char all[32];
    for (int c = 0; c < 32; c++)
        all[c] = (char)c;
    render_string(&sb, all, sizeof(all));

    Gvisor__Syscall__Open o = GVISOR__SYSCALL__OPEN__INIT;
    char path[] = "/a \"quoted\" \\back\\ \t\n";
    o.pathname = path;
    const char *json = render(&sb, &o.base);
    char text[256];
    assert_true(extract_text(json, "$.pathname", text, sizeof(text)));
    assert_string_equal(text, path);
    strbuf_free(&sb);
}

static void test_valid_utf8(void **state)
{
    (void)state;
    struct strbuf sb = {0};
    const char in[] = "caf\xc3\xa9 \xf0\x9f\x98\x80 \xe2\x82\xac \xf4\x8f\xbf\xbf \xc2\x80 \xef\xbf\xbd";
    char want[sizeof(in) + 2];
    snprintf(want, sizeof(want), "\"%s\"", in);
    assert_string_equal(render_string(&sb, in, sizeof(in) - 1), want);
    assert_null(strstr(sb.data, "\\ufffd"));   /* a literal U+FFFD is valid and kept */

    Gvisor__Syscall__Chdir c = GVISOR__SYSCALL__CHDIR__INIT;
    char path[] = "/home/\xc3\xa9t\xc3\xa9/\xf0\x9f\x98\x80";
    c.pathname = path;
    const char *json = render(&sb, &c.base);
    char text[256];
    assert_true(extract_text(json, "$.pathname", text, sizeof(text)));
    assert_string_equal(text, path);
    strbuf_free(&sb);
}

/* ---- bytes, presence, arrays ---- */

static void test_bytes_hex(void **state)
{
    (void)state;
    struct strbuf sb = {0};
    uint8_t addr[] = {0x0a, 0x00, 0xBC, 0xff, 0x01, 0xde, 0xAD};
    Gvisor__Syscall__Connect c = GVISOR__SYSCALL__CONNECT__INIT;
    c.address.data = addr;
    c.address.len = sizeof(addr);
    const char *json = render(&sb, &c.base);
    assert_non_null(strstr(json, "\"address\":\"0a00bcff01dead\""));
    char text[64];
    assert_true(extract_text(json, "$.address", text, sizeof(text)));
    assert_string_equal(text, "0a00bcff01dead");

    c.address.len = 0;
    json = render(&sb, &c.base);
    assert_non_null(strstr(json, "\"address\":\"\""));
    strbuf_free(&sb);
}

static void test_presence(void **state)
{
    (void)state;
    struct strbuf sb = {0};
    char type[32];

    /* nothing set: sub-messages omitted, scalars written with zero values */
    Gvisor__Syscall__Open o = GVISOR__SYSCALL__OPEN__INIT;
    const char *json = render(&sb, &o.base);
    assert_null(strstr(json, "\"exit\""));
    assert_null(strstr(json, "\"context_data\""));
    json_type_of(json, "$.exit", type, sizeof(type));
    assert_string_equal(type, "");
    assert_int_equal(extract_int(json, "$.sysno"), 0);
    assert_int_equal(extract_int(json, "$.flags"), 0);
    json_type_of(json, "$.pathname", type, sizeof(type));
    assert_string_equal(type, "text");

    /* an empty exit is present */
    Gvisor__Syscall__Exit exit = GVISOR__SYSCALL__EXIT__INIT;
    o.exit = &exit;
    json = render(&sb, &o.base);
    assert_non_null(strstr(json, "\"exit\":{\"result\":0,\"errorno\":0}"));
    json_type_of(json, "$.exit", type, sizeof(type));
    assert_string_equal(type, "object");

    /* empty message and messages that are only sub-messages */
    assert_string_equal(render(&sb, &exit.base), "{\"result\":0,\"errorno\":0}");
    Gvisor__Sentry__TaskExit te = GVISOR__SENTRY__TASK_EXIT__INIT;
    assert_string_equal(render(&sb, &te.base), "{\"exit_status\":0}");
    Gvisor__Sentry__PipeProcInfo pp = GVISOR__SENTRY__PIPE_PROC_INFO__INIT;
    assert_string_equal(render(&sb, &pp.base), "{}");
    Gvisor__Common__ContextData ctx = GVISOR__COMMON__CONTEXT_DATA__INIT;
    pp.context_data = &ctx;
    json = render(&sb, &pp.base);
    json_type_of(json, "$.context_data", type, sizeof(type));
    assert_string_equal(type, "object");
    json_type_of(json, "$.context_data.credentials", type, sizeof(type));
    assert_string_equal(type, "");
    strbuf_free(&sb);
}

static void test_repeated(void **state)
{
    (void)state;
    struct strbuf sb = {0};
    char type[32], text[64];
    Gvisor__Container__Start s = GVISOR__CONTAINER__START__INIT;
    const char *json = render(&sb, &s.base);
    json_type_of(json, "$.args", type, sizeof(type));
    assert_string_equal(type, "array");   /* empty repeated: [] */
    assert_non_null(strstr(json, "\"args\":[]"));

    char a0[] = "/bin/sh", a1[] = "-c", a2[] = "echo \"hi\"\n";
    char *args[] = {a0, a1, a2};
    s.n_args = 3;
    s.args = args;
    s.terminal = 1;
    json = render(&sb, &s.base);
    sqlite3_stmt *st = query(json, "json_array_length(?1, '$.args')");
    assert_int_equal(sqlite3_column_int(st, 0), 3);
    sqlite3_finalize(st);
    assert_true(extract_text(json, "$.args[2]", text, sizeof(text)));
    assert_string_equal(text, a2);
    json_type_of(json, "$.terminal", type, sizeof(type));
    assert_string_equal(type, "true");

    /* nested sub-messages: one set, one unset */
    Gvisor__Common__Timespec ts = GVISOR__COMMON__TIMESPEC__INIT;
    ts.sec = -5;
    ts.nsec = 999999999;
    Gvisor__Syscall__ItimerSpec it = GVISOR__SYSCALL__ITIMER_SPEC__INIT;
    it.value = &ts;
    json = render(&sb, &it.base);
    assert_int_equal(extract_int(json, "$.value.sec"), -5);
    assert_int_equal(extract_int(json, "$.value.nsec"), 999999999);
    json_type_of(json, "$.interval", type, sizeof(type));
    assert_string_equal(type, "");
    strbuf_free(&sb);
}

static void test_unknown_fields_and_reuse(void **state)
{
    (void)state;
    /* a decoded message that carried unknown fields still renders valid JSON */
    const uint8_t payload[] = {0x18, 0x02, 0x78, 0x05, 0xf8, 0xff, 0x03, 0x01};
    uint8_t pkt[64];
    size_t len = make_packet(pkt, 7, 0, payload, sizeof(payload));
    struct wire_header h;
    assert_int_equal(wire_header_parse(pkt, len, &h), WIRE_OK);
    struct arena a;
    arena_init(&a, 4096, 1 << 20);
    const uint8_t *raw = arena_memdup(&a, pkt, len);
    struct event ev;
    decode_event(&dec, &a, &h, raw, len, &ev);
    assert_int_equal(ev.status, DECODE_OK);
    struct strbuf sb = {0};
    const char *json = render(&sb, ev.msg);
    assert_int_equal(extract_int(json, "$.sysno"), 2);
    assert_int_equal(extract_int(json, "$._unknown_fields"), 2);

    /* render appends: a reset buffer gives the same text again, without growing */
    char first[512];
    snprintf(first, sizeof(first), "%s", json);
    size_t cap = sb.cap;
    for (int i = 0; i < 100; i++) {
        json = render(&sb, ev.msg);
        assert_string_equal(json, first);
    }
    assert_int_equal(sb.cap, cap);
    strbuf_free(&sb);
    arena_free(&a);
}

/* ---- every message type, every field: pack, decode, render, compare ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint64_t rnd_u64(void)
{
    static const uint64_t edge[] = {0, 1, 127, 128, 0x7fffffffull, 0x80000000ull, 0xffffffffull,
                                    0x7fffffffffffffffull, 0x8000000000000000ull, 0xffffffffffffffffull};
    return rnd() % 3 == 0 ? edge[rnd() % (sizeof(edge) / sizeof(edge[0]))] : rnd() >> (rnd() % 64);
}

/* Valid UTF-8 with characters that need escaping; never NUL. */
static char *rnd_string(struct arena *a)
{
    static const char *const pieces[] = {"a", "Z", "/", " ", "\"", "\\", "\n", "\t", "\x01", "\x1f", "\x7f",
                                         "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "runsc-", "%s", "{}"};
    size_t n = rnd() % 8;
    char *s = arena_alloc(a, n * 8 + 1);
    assert_non_null(s);
    s[0] = '\0';
    for (size_t i = 0; i < n; i++)
        strcat(s, pieces[rnd() % (sizeof(pieces) / sizeof(pieces[0]))]);
    return s;
}

static void fill_message(struct arena *a, ProtobufCMessage *m, int depth)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        char *p = (char *)m + f->offset;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            assert_int_equal(f->type, PROTOBUF_C_TYPE_STRING);   /* the only repeated type in this schema */
            size_t n = rnd() % 4;
            char **items = arena_alloc(a, sizeof(char *) * (n + 1));
            for (size_t k = 0; k < n; k++)
                items[k] = rnd_string(a);
            *(size_t *)((char *)m + f->quantifier_offset) = n;
            *(char ***)p = n ? items : NULL;
            continue;
        }
        switch (f->type) {
        case PROTOBUF_C_TYPE_INT32: *(int32_t *)p = (int32_t)(uint32_t)rnd_u64(); break;
        case PROTOBUF_C_TYPE_UINT32: *(uint32_t *)p = (uint32_t)rnd_u64(); break;
        case PROTOBUF_C_TYPE_INT64: *(int64_t *)p = (int64_t)rnd_u64(); break;
        case PROTOBUF_C_TYPE_UINT64: *(uint64_t *)p = rnd_u64(); break;
        case PROTOBUF_C_TYPE_BOOL: *(protobuf_c_boolean *)p = (protobuf_c_boolean)(rnd() & 1); break;
        case PROTOBUF_C_TYPE_STRING: *(char **)p = rnd_string(a); break;
        case PROTOBUF_C_TYPE_BYTES: {
            ProtobufCBinaryData *b = (ProtobufCBinaryData *)p;
            b->len = rnd() % 20;
            b->data = arena_alloc(a, b->len + 1);
            for (size_t k = 0; k < b->len; k++)
                b->data[k] = (uint8_t)rnd();
            break;
        }
        case PROTOBUF_C_TYPE_MESSAGE: {
            ProtobufCMessage *sub = NULL;
            if (depth < 4 && rnd() % 5 != 0) {
                const ProtobufCMessageDescriptor *sd = f->descriptor;
                sub = arena_alloc(a, sd->sizeof_message);
                sd->message_init(sub);
                fill_message(a, sub, depth + 1);
            }
            *(ProtobufCMessage **)p = sub;
            break;
        }
        default:
            fail_msg("field %s.%s: type %d not in this schema", d->name, f->name, f->type);
        }
    }
}

/* `?1 -> path` as text (JSON text of the value), "" when absent. */
static void json_at(const char *json, const char *path, char *out, size_t outlen)
{
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT ?1 -> ?2", -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_text(st, 1, json, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, path, -1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    const unsigned char *t = sqlite3_column_text(st, 0);
    snprintf(out, outlen, "%s", t ? (const char *)t : "");
    sqlite3_finalize(st);
}

static void expect_string_at(const char *json, const char *path, const char *want)
{
    char got[512];
    if (!extract_text(json, path, got, sizeof(got)))
        got[0] = '\0';
    if (strcmp(got, want) != 0)
        fail_msg("%s: got \"%s\", want \"%s\" in %s", path, got, want, json);
}

static size_t fields_checked;

/* Every field of m appears in json under path with m's value. */
static void check_fields(const char *json, const ProtobufCMessage *m, const char *path)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        fields_checked++;
        const char *p = (const char *)m + f->offset;
        char fp[256], got[512], want[512];
        snprintf(fp, sizeof(fp), "%s.%s", path, f->name);
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)((const char *)m + f->quantifier_offset);
            char *const *items = *(char *const *const *)p;
            char expr[300];
            path_expr(expr, sizeof(expr), "json_array_length", fp);
            sqlite3_stmt *st = query(json, expr);
            assert_int_equal(sqlite3_column_int64(st, 0), n);
            sqlite3_finalize(st);
            for (size_t k = 0; k < n; k++) {
                char ep[300];
                snprintf(ep, sizeof(ep), "%s[%zu]", fp, k);
                expect_string_at(json, ep, items[k]);
            }
            continue;
        }
        want[0] = '\0';
        switch (f->type) {
        case PROTOBUF_C_TYPE_INT32: snprintf(want, sizeof(want), "%d", *(const int32_t *)p); break;
        case PROTOBUF_C_TYPE_UINT32: snprintf(want, sizeof(want), "%u", *(const uint32_t *)p); break;
        case PROTOBUF_C_TYPE_INT64: snprintf(want, sizeof(want), "%lld", (long long)*(const int64_t *)p); break;
        case PROTOBUF_C_TYPE_UINT64:
            snprintf(want, sizeof(want), "%llu", (unsigned long long)*(const uint64_t *)p);
            break;
        case PROTOBUF_C_TYPE_BOOL: snprintf(want, sizeof(want), "%s", *(const int *)p ? "true" : "false"); break;
        case PROTOBUF_C_TYPE_STRING: expect_string_at(json, fp, *(char *const *)p); continue;
        case PROTOBUF_C_TYPE_BYTES: {
            const ProtobufCBinaryData *b = (const ProtobufCBinaryData *)p;
            for (size_t k = 0; k < b->len; k++)
                snprintf(want + 2 * k, 3, "%02x", b->data[k]);
            expect_string_at(json, fp, want);
            continue;
        }
        case PROTOBUF_C_TYPE_MESSAGE: {
            const ProtobufCMessage *sub = *(const ProtobufCMessage *const *)p;
            json_at(json, fp, got, sizeof(got));
            if (!sub) {
                if (got[0])
                    fail_msg("%s: unset sub-message rendered as %s", fp, got);
            } else {
                check_fields(json, sub, fp);
            }
            continue;
        }
        default: fail_msg("unexpected type");
        }
        json_at(json, fp, got, sizeof(got));
        if (strcmp(got, want) != 0)
            fail_msg("%s: got %s, want %s in %s", fp, got, want, json);
    }
}

static void test_all_types_round_trip(void **state)
{
    (void)state;
    struct arena build, decoded;
    arena_init(&build, 64 * 1024, 64u << 20);
    arena_init(&decoded, 64 * 1024, 64u << 20);
    struct strbuf sb = {0};
    uint8_t *pkt = malloc(65536);
    assert_non_null(pkt);
    for (uint16_t type = 1; type <= DECODE_TYPE_MAX; type++) {
        const ProtobufCMessageDescriptor *desc = dec.types[type].desc;
        for (int iter = 0; iter < 12; iter++) {
            arena_reset(&build);
            arena_reset(&decoded);
            ProtobufCMessage *m = arena_alloc(&build, desc->sizeof_message);
            desc->message_init(m);
            fill_message(&build, m, 0);
            size_t plen = protobuf_c_message_get_packed_size(m);
            assert_true(plen + 8 <= 65536);
            make_packet(pkt, type, 0, NULL, 0);
            assert_int_equal(protobuf_c_message_pack(m, pkt + 8), plen);
            struct wire_header h;
            assert_int_equal(wire_header_parse(pkt, plen + 8, &h), WIRE_OK);
            const uint8_t *raw = arena_memdup(&decoded, pkt, plen + 8);
            struct event ev;
            decode_event(&dec, &decoded, &h, raw, plen + 8, &ev);
            if (ev.status != DECODE_OK)
                fail_msg("type %u iteration %d: status %d", type, iter, ev.status);
            assert_int_equal(protobuf_c_message_get_packed_size(ev.msg), plen);

            /* the shared fields decode pulls out */
            const struct decode_layout *l = &dec.types[type];
            const ProtobufCMessage *ctx = *(ProtobufCMessage *const *)((const char *)m + l->context->offset);
            assert_int_equal(ev.context != NULL, ctx != NULL);
            if (ctx)
                assert_int_equal(ev.context->time_ns, ((const Gvisor__Common__ContextData *)ctx)->time_ns);
            if (l->sysno) {
                assert_true(ev.has_sysno);
                assert_int_equal(ev.sysno, *(const uint64_t *)((const char *)m + l->sysno->offset));
                const Gvisor__Syscall__Exit *ex = *(Gvisor__Syscall__Exit *const *)((const char *)m + l->exit->offset);
                assert_int_equal(ev.is_exit, ex != NULL);
                if (ex) {
                    assert_int_equal(ev.result, ex->result);
                    assert_int_equal(ev.errorno, ex->errorno);
                }
            } else {
                assert_false(ev.has_sysno);
                assert_false(ev.is_exit);
            }

            const char *json = render(&sb, ev.msg);
            check_fields(json, m, "$");
        }
    }
    /* 38 types x 12 messages, each with at least context_data and a scalar */
    assert_true(fields_checked > 38 * 12 * 10);
    free(pkt);
    strbuf_free(&sb);
    arena_free(&build);
    arena_free(&decoded);
}

/* strbuf_put_u64/i64 write what printf would, at the edges too. */
static void test_strbuf_integers(void **state)
{
    (void)state;
    static const int64_t signed_cases[] = {0, 1, -1, 9, 10, -10, 4294967295LL, INT64_MAX, INT64_MIN, INT64_MIN + 1};
    static const uint64_t unsigned_cases[] = {0, 7, 10, 99, 100, 18446744073709551615ULL, 10000000000000000000ULL};
    struct strbuf sb = {0};
    char want[32];
    for (size_t i = 0; i < sizeof(signed_cases) / sizeof(signed_cases[0]); i++) {
        strbuf_reset(&sb);
        strbuf_put_i64(&sb, signed_cases[i]);
        snprintf(want, sizeof(want), "%" PRId64, signed_cases[i]);
        assert_string_equal(sb.data, want);
        assert_int_equal(sb.len, strlen(want));
    }
    for (size_t i = 0; i < sizeof(unsigned_cases) / sizeof(unsigned_cases[0]); i++) {
        strbuf_reset(&sb);
        strbuf_puts(&sb, "x=");
        strbuf_put_u64(&sb, unsigned_cases[i]);
        snprintf(want, sizeof(want), "x=%" PRIu64, unsigned_cases[i]);
        assert_string_equal(sb.data, want);
    }
    strbuf_free(&sb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strbuf_integers),
        cmocka_unit_test(test_mixed_syscalls_valid),
        cmocka_unit_test(test_exec_loop_valid),
        cmocka_unit_test(test_64bit_exact),
        cmocka_unit_test(test_32bit_signedness),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_valid_utf8),
        cmocka_unit_test(test_bytes_hex),
        cmocka_unit_test(test_presence),
        cmocka_unit_test(test_repeated),
        cmocka_unit_test(test_unknown_fields_and_reuse),
        cmocka_unit_test(test_all_types_round_trip),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
