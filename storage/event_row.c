#include "event_row.h"

#include "decode.h"
#include "event_json.h"
#include "sqlutil.h"

static void bind_context(sqlite3_stmt *st, const Gvisor__Common__ContextData *c)
{
    sqlutil_bind_nonzero(st, 6, c->time_ns);
    sqlutil_bind_text(st, 7, c->container_id);
    sqlutil_bind_nonzero(st, 8, c->thread_id);
    sqlutil_bind_nonzero(st, 9, c->thread_group_id);
    sqlutil_bind_text(st, 10, c->process_name);
    sqlutil_bind_text(st, 11, c->cwd);
    const Gvisor__Common__Credentials *cr = c->credentials;
    if (cr) {
        sqlite3_bind_int64(st, 12, cr->real_uid);
        sqlite3_bind_int64(st, 13, cr->effective_uid);
        sqlite3_bind_int64(st, 14, cr->saved_uid);
        sqlite3_bind_int64(st, 15, cr->real_gid);
        sqlite3_bind_int64(st, 16, cr->effective_gid);
        sqlite3_bind_int64(st, 17, cr->saved_gid);
    }
    sqlutil_bind_nonzero(st, 24, c->thread_start_time_ns);
    sqlutil_bind_nonzero(st, 25, c->thread_group_start_time_ns);
    sqlite3_bind_int64(st, 26, c->parent_thread_group_id);
    sqlite3_bind_int(st, 27, c->is_exec_session != 0);
}

void event_row_bind(sqlite3_stmt *st, const struct event *ev, const char *detail, size_t detail_len,
                    bool stores_type_name)
{
    sqlite3_clear_bindings(st);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)ev->conn_id);
    sqlite3_bind_int64(st, 2, ev->recv_ns);
    sqlite3_bind_int(st, 3, ev->header.message_type);
    sqlite3_bind_int64(st, 4, ev->header.dropped_count);
    sqlutil_bind_text(st, 5, event_decode_error_name(ev->status));
    if (ev->context)
        bind_context(st, ev->context);
    if (ev->has_sysno) {
        sqlite3_bind_int64(st, 18, (sqlite3_int64)ev->sysno);
        sqlite3_bind_int(st, 19, ev->is_exit);
        if (ev->is_exit) {
            sqlite3_bind_int64(st, 20, ev->result);
            sqlite3_bind_int64(st, 21, ev->errorno);
        }
    }
    if (detail)
        sqlite3_bind_text(st, 22, detail, (int)detail_len, SQLITE_STATIC);
    sqlite3_bind_blob(st, 23, ev->raw, (int)ev->raw_len, SQLITE_STATIC);
    if (stores_type_name)
        sqlutil_bind_text(st, 28, decode_type_name(ev->header.message_type));
}
