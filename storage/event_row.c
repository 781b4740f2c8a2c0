#include "event_row.h"

#include <string.h>

#include "decode.h"
#include "event_json.h"
#include "json.h"
#include "sqlutil.h"

static void set_int(struct event_value *v, int64_t i) { *v = (struct event_value){.kind = EVENT_VALUE_INT, .i = i}; }

/* sqlutil_bind_nonzero's rule: zero is NULL. */
static void set_nonzero(struct event_value *v, int64_t i)
{
    if (i)
        set_int(v, i);
}

/* sqlutil_bind_text's rule: NULL and "" are NULL; invalid UTF-8 is bound
 * sanitized (unclean says so). */
static void set_text(struct event_value *v, const char *s)
{
    if (!s || !*s)
        return;
    size_t len = strlen(s);
    *v = (struct event_value){.kind = EVENT_VALUE_TEXT, .p = s, .len = len, .unclean = !utf8_valid(s, len)};
}

static void context_values(struct event_value *v, const Gvisor__Common__ContextData *c)
{
    set_nonzero(&v[6], c->time_ns);
    set_text(&v[7], c->container_id);
    set_nonzero(&v[8], c->thread_id);
    set_nonzero(&v[9], c->thread_group_id);
    set_text(&v[10], c->process_name);
    set_text(&v[11], c->cwd);
    const Gvisor__Common__Credentials *cr = c->credentials;
    if (cr) {
        set_int(&v[12], cr->real_uid);
        set_int(&v[13], cr->effective_uid);
        set_int(&v[14], cr->saved_uid);
        set_int(&v[15], cr->real_gid);
        set_int(&v[16], cr->effective_gid);
        set_int(&v[17], cr->saved_gid);
    }
    set_nonzero(&v[24], c->thread_start_time_ns);
    set_nonzero(&v[25], c->thread_group_start_time_ns);
    set_int(&v[26], c->parent_thread_group_id);
    set_int(&v[27], c->is_exec_session != 0);
}

void event_row_values(const struct event *ev, const char *detail, size_t detail_len, bool stores_type_name,
                      struct event_value v[EVENT_ROW_PARAMS + 1])
{
    memset(v, 0, sizeof(*v) * (EVENT_ROW_PARAMS + 1));   /* EVENT_VALUE_NULL */
    set_int(&v[1], (int64_t)ev->conn_id);
    set_int(&v[2], ev->recv_ns);
    set_int(&v[3], ev->header.message_type);
    set_int(&v[4], ev->header.dropped_count);
    set_text(&v[5], event_decode_error_name(ev->status));
    if (ev->context)
        context_values(v, ev->context);
    if (ev->has_sysno) {
        set_int(&v[18], (int64_t)ev->sysno);
        set_int(&v[19], ev->is_exit);
        if (ev->is_exit) {
            set_int(&v[20], ev->result);
            set_int(&v[21], ev->errorno);
        }
    }
    if (detail)   /* bound as it is: event_json renders valid UTF-8 */
        v[22] = (struct event_value){.kind = EVENT_VALUE_TEXT, .p = detail, .len = detail_len};
    v[23] = (struct event_value){.kind = EVENT_VALUE_BLOB, .p = (const char *)ev->raw, .len = ev->raw_len};
    if (stores_type_name)
        set_text(&v[28], decode_type_name(ev->header.message_type));
}

void event_row_bind_values(sqlite3_stmt *st, const struct event_value *v, int n)
{
    sqlite3_clear_bindings(st);
    for (int i = 1; i <= n; i++)
        switch (v[i].kind) {
        case EVENT_VALUE_NULL:
            break;
        case EVENT_VALUE_INT:
            sqlite3_bind_int64(st, i, v[i].i);
            break;
        case EVENT_VALUE_TEXT:
            if (v[i].unclean)
                sqlutil_bind_text(st, i, v[i].p);   /* NUL-terminated: set_text's */
            else
                sqlite3_bind_text(st, i, v[i].p, (int)v[i].len, SQLITE_STATIC);
            break;
        case EVENT_VALUE_BLOB:
            sqlite3_bind_blob(st, i, v[i].p, (int)v[i].len, SQLITE_STATIC);
            break;
        }
}

void event_row_bind(sqlite3_stmt *st, const struct event *ev, const char *detail, size_t detail_len,
                    bool stores_type_name)
{
    struct event_value v[EVENT_ROW_PARAMS + 1];
    event_row_values(ev, detail, detail_len, stores_type_name, v);
    event_row_bind_values(st, v, EVENT_ROW_PARAMS);
}
