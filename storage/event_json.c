/* event_json.c - the events table's columns and the decoded message as one
 * JSON object per line, and the detail document both carry. Field order
 * follows the table. */
#include "event_json.h"

#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "decode.h"
#include "json.h"

const char *event_decode_error_name(enum decode_status status)
{
    switch (status) {
    case DECODE_UNKNOWN_TYPE: return "unknown_type";
    case DECODE_BAD_PAYLOAD: return "bad_payload";
    default: return NULL;
    }
}

/* Every key after the first is preceded by a comma; all keys are written
 * through here so the separators cannot go wrong. */
static void key(struct strbuf *out, const char *name)
{
    strbuf_puts(out, ",\"");
    strbuf_puts(out, name);
    strbuf_puts(out, "\":");
}

static void put_int(struct strbuf *out, const char *name, int64_t v)
{
    key(out, name);
    strbuf_put_i64(out, v);
}

/* The table stores 0 as NULL for these: gVisor never sends a zero time or id. */
static void put_nonzero(struct strbuf *out, const char *name, int64_t v)
{
    if (v)
        put_int(out, name, v);
}

/* The table stores "" as NULL. Strings come from the sandbox: json.h
 * escapes them and replaces invalid UTF-8. */
static void put_text(struct strbuf *out, const char *name, const char *s)
{
    if (!s || !*s)
        return;
    key(out, name);
    json_render_string(out, s, strlen(s));
}

static void put_hex(struct strbuf *out, const char *name, const uint8_t *data, size_t len)
{
    static const char digits[] = "0123456789abcdef";
    key(out, name);
    strbuf_putc(out, '"');
    for (size_t i = 0; i < len; i++) {
        char pair[2] = {digits[data[i] >> 4], digits[data[i] & 15]};
        strbuf_append(out, pair, 2);
    }
    strbuf_putc(out, '"');
}

static void put_bool(struct strbuf *out, const char *name, bool v)
{
    key(out, name);
    strbuf_puts(out, v ? "true" : "false");
}

static void put_context(struct strbuf *out, const Gvisor__Common__ContextData *c)
{
    put_nonzero(out, "time_ns", c->time_ns);
    put_text(out, "container_id", c->container_id);
    put_nonzero(out, "thread_id", c->thread_id);
    put_nonzero(out, "thread_group_id", c->thread_group_id);
    put_text(out, "process_name", c->process_name);
    put_text(out, "cwd", c->cwd);
    const Gvisor__Common__Credentials *cr = c->credentials;
    if (cr) {
        put_int(out, "real_uid", cr->real_uid);
        put_int(out, "effective_uid", cr->effective_uid);
        put_int(out, "saved_uid", cr->saved_uid);
        put_int(out, "real_gid", cr->real_gid);
        put_int(out, "effective_gid", cr->effective_gid);
        put_int(out, "saved_gid", cr->saved_gid);
    }
}

/* The columns schema 2 added, after the syscall's as in the table. */
static void put_context_more(struct strbuf *out, const Gvisor__Common__ContextData *c)
{
    put_nonzero(out, "thread_start_time_ns", c->thread_start_time_ns);
    put_nonzero(out, "thread_group_start_time_ns", c->thread_group_start_time_ns);
    put_int(out, "parent_thread_group_id", c->parent_thread_group_id);
    put_bool(out, "is_exec_session", c->is_exec_session);
}

/* is_exit is a JSON boolean (the table's 0/1); result and errno only on exit. */
static void put_syscall(struct strbuf *out, const struct event *ev)
{
    if (!ev->has_sysno)
        return;
    key(out, "sysno");
    strbuf_put_u64(out, ev->sysno);
    key(out, "is_exit");
    strbuf_puts(out, ev->is_exit ? "true" : "false");
    if (ev->is_exit) {
        put_int(out, "result", ev->result);
        put_int(out, "errno", ev->errorno);
    }
}

/* A sub-message the columns hold field by field, unless it carries fields
 * this schema does not know (a newer gVisor): then detail keeps it whole. */
static bool columns_hold(const ProtobufCMessage *m)
{
    return !m || m->n_unknown_fields == 0;
}

static bool context_in_columns(const Gvisor__Common__ContextData *c)
{
    return !c || (columns_hold(&c->base) && columns_hold(c->credentials ? &c->credentials->base : NULL));
}

int event_detail_render(struct strbuf *out, const struct event *ev)
{
    const ProtobufCFieldDescriptor *omit[3];
    size_t nomit = 0;
    const struct decode_layout *l = ev->layout;
    if (l && l->context && context_in_columns(ev->context))
        omit[nomit++] = l->context;
    if (l && l->sysno && ev->sysno <= INT64_MAX)
        omit[nomit++] = l->sysno;
    if (l && l->exit) {
        const ProtobufCMessage *exit = *(const ProtobufCMessage *const *)((const char *)ev->msg + l->exit->offset);
        if (columns_hold(exit))
            omit[nomit++] = l->exit;
    }
    return json_render_message_omitting(out, ev->msg, omit, nomit);
}

int event_json_render(struct strbuf *out, const struct event *ev)
{
    strbuf_puts(out, "{\"conn_id\":");
    strbuf_put_u64(out, ev->conn_id);
    put_int(out, "recv_ns", ev->recv_ns);
    put_int(out, "msg_type", ev->header.message_type);
    put_text(out, "type_name", decode_type_name(ev->header.message_type));
    put_int(out, "dropped_count", ev->header.dropped_count);
    put_text(out, "decode_error", event_decode_error_name(ev->status));
    if (ev->context)
        put_context(out, ev->context);
    put_syscall(out, ev);
    if (ev->context)
        put_context_more(out, ev->context);
    if (ev->msg) {
        key(out, "detail");
        event_detail_render(out, ev);
    } else {
        put_hex(out, "raw", ev->raw, ev->raw_len);
    }
    strbuf_puts(out, "}\n");
    return out->failed ? -1 : 0;
}
