/* event_redecode.c - an events row again from its raw column (event_redecode.h). */
#include "event_redecode.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "event_json.h"
#include "event_row.h"
#include "json.h"
#include "wire.h"

const struct redecode_column redecode_columns[REDECODE_COLUMNS] = {
    {"dropped_count", REDECODE_INT},   {"decode_error", REDECODE_TEXT},
    {"time_ns", REDECODE_INT},         {"container_id", REDECODE_TEXT},
    {"thread_id", REDECODE_INT},       {"thread_group_id", REDECODE_INT},
    {"process_name", REDECODE_TEXT},   {"cwd", REDECODE_TEXT},
    {"real_uid", REDECODE_INT},        {"effective_uid", REDECODE_INT},
    {"saved_uid", REDECODE_INT},       {"real_gid", REDECODE_INT},
    {"effective_gid", REDECODE_INT},   {"saved_gid", REDECODE_INT},
    {"sysno", REDECODE_INT},           {"is_exit", REDECODE_INT},
    {"result", REDECODE_INT},          {"errno", REDECODE_INT},
    {"detail", REDECODE_JSON},         {"thread_start_time_ns", REDECODE_INT},
    {"thread_group_start_time_ns", REDECODE_INT}, {"parent_thread_group_id", REDECODE_INT},
    {"is_exec_session", REDECODE_INT}, {"type_name", REDECODE_TEXT},
};

/* event_row_bind's parameters (schema.sql.h: INSERT_EVENT_VALUES, ?28
 * type_name) for the columns above, in their order, and ?29 for the whole
 * message. conn_id, recv_ns, msg_type (?1-?3) and raw (?23) are the
 * chain's own. */
#define WHOLE_DETAIL_PARAM 29
static const char values_sql[] = "SELECT ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,"
                                 " ?18, ?19, ?20, ?21, ?22, ?24, ?25, ?26, ?27, ?28, ?29";

const int redecode_params[REDECODE_COLUMNS + 1] = {4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
                                                    17, 18, 19, 20, 21, 22, 24, 25, 26, 27, 28, WHOLE_DETAIL_PARAM};

int event_redecoder_init(struct event_redecoder *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    decoder_init(&r->decoder);
    /* No limit of its own: decode_event caps each unpack by the packet's
     * size, exactly as it did in the daemon. */
    arena_init(&r->arena, 64 * 1024, SIZE_MAX);
    if (sqlite3_open_v2(":memory:", &r->mem, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ||
        sqlite3_prepare_v3(r->mem, values_sql, -1, SQLITE_PREPARE_PERSISTENT, &r->values, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "SQLite: %s", r->mem ? sqlite3_errmsg(r->mem) : "out of memory");
        event_redecoder_free(r);
        return -1;
    }
    return 0;
}

void event_redecoder_free(struct event_redecoder *r)
{
    sqlite3_finalize(r->values);
    if (r->mem)
        sqlite3_close(r->mem);
    arena_free(&r->arena);
    strbuf_free(&r->detail);
    strbuf_free(&r->whole);
    r->values = NULL;
    r->mem = NULL;
}

bool event_redecode_event(struct event_redecoder *r, const void *raw, size_t len, struct event *ev)
{
    struct wire_header h;
    memset(ev, 0, sizeof(*ev));
    arena_reset(&r->arena);
    if (!raw || wire_header_parse(raw, len, &h) != WIRE_OK)
        return false;
    decode_event(&r->decoder, &r->arena, &h, raw, len, ev);
    return true;
}

bool event_redecode_values(struct event_redecoder *r, const void *raw, size_t len, bool whole_detail,
                           struct event_value v[EVENT_ROW_PARAMS + 2])
{
    struct event ev;
    if (!event_redecode_event(r, raw, len, &ev))
        return false;
    bool detail = false, whole = false;
    if (ev.msg) {
        strbuf_reset(&r->detail);
        detail = event_detail_render(&r->detail, &ev) == 0;
        if (whole_detail) {
            strbuf_reset(&r->whole);
            whole = json_render_message(&r->whole, ev.msg) == 0;
        }
    }
    event_row_values(&ev, detail ? r->detail.data : NULL, r->detail.len, true, v);
    v[WHOLE_DETAIL_PARAM] = whole ? (struct event_value){.kind = EVENT_VALUE_TEXT, .p = r->whole.data,
                                                         .len = r->whole.len}
                                  : (struct event_value){.kind = EVENT_VALUE_NULL};
    return true;
}

sqlite3_stmt *event_redecode(struct event_redecoder *r, const void *raw, size_t len, bool whole_detail)
{
    struct event_value v[EVENT_ROW_PARAMS + 2];
    if (!event_redecode_values(r, raw, len, whole_detail, v))
        return NULL;
    sqlite3_stmt *st = r->values;
    sqlite3_reset(st);
    event_row_bind_values(st, v, WHOLE_DETAIL_PARAM);
    return sqlite3_step(st) == SQLITE_ROW ? st : NULL;
}

static bool same_bytes(sqlite3_stmt *st_a, int a, sqlite3_stmt *st_b, int b, bool text)
{
    const void *pa = text ? (const void *)sqlite3_column_text(st_a, a) : sqlite3_column_blob(st_a, a);
    const void *pb = text ? (const void *)sqlite3_column_text(st_b, b) : sqlite3_column_blob(st_b, b);
    int na = sqlite3_column_bytes(st_a, a), nb = sqlite3_column_bytes(st_b, b);
    return na == nb && (na == 0 || memcmp(pa, pb, (size_t)na) == 0);
}

bool event_redecode_same(sqlite3_stmt *st_a, int a, sqlite3_stmt *st_b, int b)
{
    int type = sqlite3_column_type(st_a, a);
    if (type != sqlite3_column_type(st_b, b))
        return false;
    switch (type) {
    case SQLITE_NULL:
        return true;
    case SQLITE_INTEGER:
        return sqlite3_column_int64(st_a, a) == sqlite3_column_int64(st_b, b);
    case SQLITE_FLOAT:
        return sqlite3_column_double(st_a, a) == sqlite3_column_double(st_b, b);
    default:
        return same_bytes(st_a, a, st_b, b, type == SQLITE_TEXT);
    }
}
