#include "json.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "decode.h"

static const char hexdigits[] = "0123456789abcdef";

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if invalid. */
static size_t utf8_sequence_len(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    size_t n;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (avail < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    /* Overlong forms, UTF-16 surrogates and code points past U+10FFFF. */
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

bool utf8_valid(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_sequence_len(s + i, len - i);
        if (!n)
            return false;
        i += n;
    }
    return true;
}

void utf8_sanitize(struct strbuf *out, const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_sequence_len(s + i, len - i);
        if (n) {
            strbuf_append(out, s + i, n);
            i += n;
        } else {
            strbuf_puts(out, "\xef\xbf\xbd");   /* U+FFFD */
            i++;
        }
    }
}

void json_render_string(struct strbuf *out, const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    strbuf_putc(out, '"');
    size_t i = 0;
    while (i < len) {
        size_t start = i;
        /* Copy the longest run that needs no escaping in one append. */
        while (i < len && s[i] >= 0x20 && s[i] < 0x80 && s[i] != '"' && s[i] != '\\')
            i++;
        strbuf_append(out, s + start, i - start);
        if (i >= len)
            break;
        unsigned char c = s[i];
        if (c >= 0x80) {
            size_t n = utf8_sequence_len(s + i, len - i);
            if (n) {
                strbuf_append(out, s + i, n);
                i += n;
            } else {
                strbuf_puts(out, "\\ufffd");
                i++;
            }
            continue;
        }
        switch (c) {
        case '"': strbuf_puts(out, "\\\""); break;
        case '\\': strbuf_puts(out, "\\\\"); break;
        case '\n': strbuf_puts(out, "\\n"); break;
        case '\r': strbuf_puts(out, "\\r"); break;
        case '\t': strbuf_puts(out, "\\t"); break;
        default: {
            char esc[6] = {'\\', 'u', '0', '0', hexdigits[c >> 4], hexdigits[c & 0xf]};
            strbuf_append(out, esc, sizeof(esc));
        }
        }
        i++;
    }
    strbuf_putc(out, '"');
}

static void render_hex(struct strbuf *out, const uint8_t *data, size_t len)
{
    strbuf_putc(out, '"');
    for (size_t i = 0; i < len; i++) {
        char pair[2] = {hexdigits[data[i] >> 4], hexdigits[data[i] & 0xf]};
        strbuf_append(out, pair, 2);
    }
    strbuf_putc(out, '"');
}

static void render_double(struct strbuf *out, double v)
{
    if (isfinite(v))
        strbuf_printf(out, "%.17g", v);
    else
        strbuf_puts(out, "null");
}

/* One element of a field; p points at its storage in the message. */
static void render_value(struct strbuf *out, const ProtobufCFieldDescriptor *f, const void *p)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_ENUM:
        strbuf_put_i64(out, *(const int32_t *)p);
        break;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        strbuf_put_u64(out, *(const uint32_t *)p);
        break;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        strbuf_put_i64(out, *(const int64_t *)p);
        break;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        strbuf_put_u64(out, *(const uint64_t *)p);
        break;
    case PROTOBUF_C_TYPE_FLOAT:
        render_double(out, *(const float *)p);
        break;
    case PROTOBUF_C_TYPE_DOUBLE:
        render_double(out, *(const double *)p);
        break;
    case PROTOBUF_C_TYPE_BOOL:
        strbuf_puts(out, *(const protobuf_c_boolean *)p ? "true" : "false");
        break;
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(const char *const *)p;
        json_render_string(out, s ? s : "", s ? strlen(s) : 0);
        break;
    }
    case PROTOBUF_C_TYPE_BYTES: {
        const ProtobufCBinaryData *b = p;
        render_hex(out, b->data, b->len);
        break;
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *m = *(const ProtobufCMessage *const *)p;
        if (m)
            json_render_message(out, m);
        else
            strbuf_puts(out, "null");
        break;
    }
    }
}

static void render_repeated(struct strbuf *out, const ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f)
{
    size_t count = *(const size_t *)((const char *)msg + f->quantifier_offset);
    const char *items = *(const char *const *)((const char *)msg + f->offset);
    size_t step = decode_value_size(f->type);
    strbuf_putc(out, '[');
    for (size_t i = 0; i < count; i++) {
        if (i)
            strbuf_putc(out, ',');
        render_value(out, f, items + i * step);
    }
    strbuf_putc(out, ']');
}

/* proto3 sub-messages have presence (a NULL pointer when not sent); scalars
 * and repeated fields are always written. */
static bool field_present(const ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f)
{
    if (f->label == PROTOBUF_C_LABEL_REPEATED || f->type != PROTOBUF_C_TYPE_MESSAGE)
        return true;
    return *(const void *const *)((const char *)msg + f->offset) != NULL;
}

static bool omitted(const ProtobufCFieldDescriptor *f, const ProtobufCFieldDescriptor *const *omit, size_t nomit)
{
    for (size_t i = 0; i < nomit; i++)
        if (omit[i] == f)
            return true;
    return false;
}

int json_render_message(struct strbuf *out, const ProtobufCMessage *msg)
{
    return json_render_message_omitting(out, msg, NULL, 0);
}

int json_render_message_omitting(struct strbuf *out, const ProtobufCMessage *msg,
                                 const ProtobufCFieldDescriptor *const *omit, size_t nomit)
{
    const ProtobufCMessageDescriptor *desc = msg->descriptor;
    bool first = true;
    strbuf_putc(out, '{');
    for (unsigned i = 0; i < desc->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &desc->fields[i];
        if (!field_present(msg, f) || omitted(f, omit, nomit))
            continue;
        if (!first)
            strbuf_putc(out, ',');
        first = false;
        strbuf_putc(out, '"');
        strbuf_puts(out, f->name);
        strbuf_puts(out, "\":");
        if (f->label == PROTOBUF_C_LABEL_REPEATED)
            render_repeated(out, msg, f);
        else
            render_value(out, f, (const char *)msg + f->offset);
    }
    if (msg->n_unknown_fields)
        strbuf_printf(out, "%s\"_unknown_fields\":%u", first ? "" : ",", msg->n_unknown_fields);
    strbuf_putc(out, '}');
    return out->failed ? -1 : 0;
}
