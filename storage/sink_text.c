/* sink_text.c - one human-readable line per event, for debugging:
 *
 *   [conn 3] 2026-11-30T02:33:11.123456Z runsc-123456 sh[12/12] SYSCALL_OPEN exit
 *       sysno=2 fd=-100 pathname="/etc/hostname" flags=0 mode=0 result=3 errno=0
 *
 * (on one line): connection, the event's time (the sandbox's, else when it
 * was received), container, process[thread/thread group], type, then every
 * field of the message but context_data as name=value, then the syscall's
 * result. Everything from the sandbox is escaped to printable ASCII (so a
 * crafted name cannot drive the terminal) and long values are cut short.
 * Runs on the writer thread, through line_writer.h like the NDJSON sink.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decode.h"
#include "event_json.h"
#include "line_writer.h"
#include "sink.h"

#define TEXT_VALUE_MAX 200       /* bytes of one string shown */
#define TEXT_BYTES_MAX 32        /* bytes of a bytes field shown, as hex */
#define TEXT_REPEATED_MAX 16     /* elements of a repeated field shown */
#define TEXT_DEPTH_MAX 4         /* nested messages shown */
#define TEXT_LINE_MAX 4096       /* longer lines are cut */

struct text_sink {
    struct sink base;
    struct line_writer out;
    struct strbuf line;
};

static const char hexdigits[] = "0123456789abcdef";

/* Printable ASCII as is; quotes, backslashes and every other byte escaped. */
static void put_escaped(struct strbuf *out, const char *str, size_t len, size_t max)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t shown = len > max ? max : len;
    for (size_t i = 0; i < shown; i++) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            strbuf_append(out, esc, 2);
        } else if (c >= 0x20 && c < 0x7f) {
            strbuf_putc(out, (char)c);
        } else if (c == '\n') {
            strbuf_puts(out, "\\n");
        } else if (c == '\t') {
            strbuf_puts(out, "\\t");
        } else if (c == '\r') {
            strbuf_puts(out, "\\r");
        } else {
            char esc[4] = {'\\', 'x', hexdigits[c >> 4], hexdigits[c & 15]};
            strbuf_append(out, esc, 4);
        }
    }
    if (shown < len)
        strbuf_printf(out, "...(%zu bytes)", len);
}

static void put_quoted(struct strbuf *out, const char *s)
{
    strbuf_putc(out, '"');
    put_escaped(out, s ? s : "", s ? strlen(s) : 0, TEXT_VALUE_MAX);
    strbuf_putc(out, '"');
}

static void put_hex(struct strbuf *out, const uint8_t *data, size_t len, size_t max)
{
    size_t shown = len > max ? max : len;
    for (size_t i = 0; i < shown; i++) {
        char pair[2] = {hexdigits[data[i] >> 4], hexdigits[data[i] & 15]};
        strbuf_append(out, pair, 2);
    }
    if (shown < len)
        strbuf_printf(out, "...(%zu bytes)", len);
    if (len == 0)
        strbuf_puts(out, "\"\"");
}

static void put_fields(struct strbuf *out, const ProtobufCMessage *msg, int depth);

/* One element of a field; p points at its storage in the message. */
static void put_value(struct strbuf *out, const ProtobufCFieldDescriptor *f, const void *p, int depth)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_ENUM: strbuf_printf(out, "%" PRId32, *(const int32_t *)p); break;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: strbuf_printf(out, "%" PRIu32, *(const uint32_t *)p); break;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64: strbuf_printf(out, "%" PRId64, *(const int64_t *)p); break;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: strbuf_printf(out, "%" PRIu64, *(const uint64_t *)p); break;
    case PROTOBUF_C_TYPE_FLOAT: strbuf_printf(out, "%g", (double)*(const float *)p); break;
    case PROTOBUF_C_TYPE_DOUBLE: strbuf_printf(out, "%g", *(const double *)p); break;
    case PROTOBUF_C_TYPE_BOOL: strbuf_puts(out, *(const protobuf_c_boolean *)p ? "true" : "false"); break;
    case PROTOBUF_C_TYPE_STRING: put_quoted(out, *(const char *const *)p); break;
    case PROTOBUF_C_TYPE_BYTES: {
        const ProtobufCBinaryData *b = p;
        put_hex(out, b->data, b->len, TEXT_BYTES_MAX);
        break;
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *m = *(const ProtobufCMessage *const *)p;
        strbuf_putc(out, '{');
        if (m && depth < TEXT_DEPTH_MAX)
            put_fields(out, m, depth + 1);
        else if (m)
            strbuf_puts(out, "...");
        strbuf_putc(out, '}');
        break;
    }
    }
}

static void put_repeated(struct strbuf *out, const ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f,
                         int depth)
{
    size_t count = *(const size_t *)((const char *)msg + f->quantifier_offset);
    const char *items = *(const char *const *)((const char *)msg + f->offset);
    size_t shown = count > TEXT_REPEATED_MAX ? TEXT_REPEATED_MAX : count;
    strbuf_putc(out, '[');
    for (size_t i = 0; i < shown; i++) {
        if (i)
            strbuf_puts(out, ", ");
        put_value(out, f, items + i * decode_value_size(f->type), depth);
    }
    if (shown < count)
        strbuf_printf(out, ", ...(%zu in all)", count);
    strbuf_putc(out, ']');
}

/* The common fields have their own places on the line. */
static bool shown_elsewhere(const ProtobufCFieldDescriptor *f, int depth)
{
    return depth == 0 && (strcmp(f->name, "context_data") == 0 || strcmp(f->name, "exit") == 0);
}

/* name=value for every field, space-separated (and after a space at the
 * top level, where they follow the type); absent sub-messages are left out. */
static void put_fields(struct strbuf *out, const ProtobufCMessage *msg, int depth)
{
    const ProtobufCMessageDescriptor *desc = msg->descriptor;
    bool first = true;
    for (unsigned i = 0; i < desc->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &desc->fields[i];
        const void *p = (const char *)msg + f->offset;
        bool repeated = f->label == PROTOBUF_C_LABEL_REPEATED;
        if (shown_elsewhere(f, depth) ||
            (!repeated && f->type == PROTOBUF_C_TYPE_MESSAGE && !*(const void *const *)p))
            continue;
        if (depth == 0 || !first)
            strbuf_putc(out, ' ');
        first = false;
        strbuf_printf(out, "%s=", f->name);
        if (repeated)
            put_repeated(out, msg, f, depth);
        else
            put_value(out, f, p, depth);
    }
}

/* runsc-123456 sh[12/12], or "-" for what the point did not collect. */
static void put_context(struct strbuf *out, const Gvisor__Common__ContextData *c)
{
    if (!c) {
        strbuf_puts(out, " - -");
        return;
    }
    const char *id = c->container_id && *c->container_id ? c->container_id : "-";
    strbuf_putc(out, ' ');
    put_escaped(out, id, strlen(id), TEXT_VALUE_MAX);
    const char *name = c->process_name && *c->process_name ? c->process_name : "?";
    strbuf_putc(out, ' ');
    put_escaped(out, name, strlen(name), TEXT_VALUE_MAX);
    strbuf_printf(out, "[%" PRId32 "/%" PRId32 "]", c->thread_id, c->thread_group_id);
}

static void render_line(struct strbuf *out, const struct event *ev)
{
    strbuf_printf(out, "[conn %" PRIu64 "] ", ev->conn_id);
    strbuf_put_utc(out, ev->context && ev->context->time_ns ? ev->context->time_ns : ev->recv_ns, 6);
    put_context(out, ev->context);
    const char *type = decode_type_name(ev->header.message_type);
    if (type)
        strbuf_printf(out, " %s", type);
    else
        strbuf_printf(out, " type=%u", (unsigned)ev->header.message_type);
    if (ev->has_sysno)
        strbuf_puts(out, ev->is_exit ? " exit" : " enter");
    if (ev->msg) {
        put_fields(out, ev->msg, 0);
    } else {
        strbuf_printf(out, " decode_error=%s raw=", event_decode_error_name(ev->status));
        put_hex(out, ev->raw, ev->raw_len, TEXT_VALUE_MAX);
    }
    if (ev->is_exit)
        strbuf_printf(out, " result=%" PRId64 " errno=%" PRId64, ev->result, ev->errorno);
    if (out->len > TEXT_LINE_MAX) {
        out->len = TEXT_LINE_MAX;   /* all ASCII by now: any cut is clean */
        strbuf_puts(out, "...");
    }
    strbuf_putc(out, '\n');
}

static void text_write_batch(struct sink *base, struct batch *b)
{
    struct text_sink *s = (struct text_sink *)base;
    for (size_t i = 0; i < b->count; i++) {
        strbuf_reset(&s->line);
        render_line(&s->line, &b->events[i]);
        if (s->line.failed)
            line_writer_lost(&s->out, &b->result, "out of memory rendering the line");
        else
            line_writer_add(&s->out, s->line.data, s->line.len, &b->result);
    }
    line_writer_flush(&s->out, &b->result);
}

static void text_close(struct sink *base)
{
    struct text_sink *s = (struct text_sink *)base;
    line_writer_close(&s->out);
    strbuf_free(&s->line);
    free(s);
}

static const struct sink_ops text_ops = {
    .name = "text",
    .needs_writer_thread = true,
    .write_batch = text_write_batch,
    .close = text_close,
};

struct sink *sink_text_open(const char *path, char *err, size_t errlen)
{
    struct text_sink *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (line_writer_open(&s->out, "text", path, 0, 0, &s->base.cut_off, err, errlen) != 0) {
        free(s);
        return NULL;
    }
    s->base.ops = &text_ops;
    s->base.first_conn_id = 1;
    return &s->base;
}
