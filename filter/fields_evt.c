/* fields_evt.c - evt.* and gvisor.point: what the event itself is (type,
 * direction, time, result, the open flags) and evt.arg: Falco's argument of
 * that name for the event (fields_args.c), else the field of its protobuf
 * message by that name, or by position.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fields_class.h"
#include "gvisor/syscall.pb-c.h"
#include "json.h"
#include "trace_names.h"

/* More of libs' event class (sinsp_filtercheck_event.cpp), after filter.h's ids. */
enum {
    F_EVT_RAWARG = F_EVT_COUNT, F_EVT_TYPE_IS, F_SYSCALL_TYPE, F_EVT_INFO, F_EVT_IS_IO, F_EVT_IS_IO_READ,
    F_EVT_IS_IO_WRITE, F_EVT_IO_DIR,
};

/* libs' EF_READS_FROM_FD / EF_WRITES_TO_FD syscalls (driver/event_table.c),
 * by x86_64 number: 'r', 'w', or 0. */
static char io_dir(unsigned t)
{
    switch (t) {
    /* read, pread64, readv, recvfrom, recvmsg, preadv, recvmmsg, preadv2 */
    case 0: case 17: case 19: case 45: case 47: case 295: case 299: case 327: return 'r';
    /* write, pwrite64, writev, sendfile, sendto, sendmsg, pwritev, sendmmsg, pwritev2 */
    case 1: case 18: case 20: case 40: case 44: case 46: case 296: case 307: case 328: return 'w';
    default: return 0;
    }
}

static bool is_open_type(unsigned t)
{
    return t == SYS_OPEN || t == SYS_OPENAT || t == SYS_OPENAT2 || t == SYS_OPEN_BY_HANDLE_AT;
}

static const void *field_ptr(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    return (const char *)m + f->offset;
}

/* ---- evt.arg: resolution ---- */

static bool is_skipped_arg(const ProtobufCFieldDescriptor *f)
{
    return strcmp(f->name, "context_data") == 0 || strcmp(f->name, "exit") == 0 || strcmp(f->name, "sysno") == 0;
}

/* evt.arg.NAME under Falco's name: the parameter's index + 1 per list. */
static bool resolve_falco_name(const char *name, size_t len, struct arena *a, struct fieldref *out)
{
    if (!fields_args_known_name(name, len))
        return false;
    size_t n = fields_args_lists();
    uint8_t *idx = arena_alloc(a, n);
    if (!idx)
        return false;
    for (size_t i = 0; i < n; i++)
        idx[i] = (uint8_t)(fields_args_find((int)i, name, len) + 1);
    out->falco = idx;
    return true;
}

/* evt.arg.NAME or evt.arg[N] for every message type. */
int fields_evt_resolve_arg(const char *name, size_t len, int32_t index, struct arena *a, struct fieldref *out, char *err,
                       size_t errlen)
{
    const ProtobufCFieldDescriptor **table = arena_alloc(a, (DECODE_TYPE_MAX + 1) * sizeof(*table));
    if (!table) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    char nbuf[128];
    if (len >= sizeof(nbuf)) {
        snprintf(err, errlen, "no gVisor message has a field named '%.*s'", (int)(len > 64 ? 64 : len), name);
        return -1;
    }
    if (len)
        memcpy(nbuf, name, len);
    nbuf[len] = '\0';
    bool any = false;
    const struct decoder *d = fields_decoder();
    table[0] = NULL;
    for (int t = 1; t <= DECODE_TYPE_MAX; t++) {
        const ProtobufCMessageDescriptor *desc = d->types[t].desc;
        const ProtobufCFieldDescriptor *f = NULL;
        if (index < 0) {
            f = protobuf_c_message_descriptor_get_field_by_name(desc, nbuf);
        } else {
            int32_t k = 0;
            for (unsigned i = 0; i < desc->n_fields && !f; i++)
                if (!is_skipped_arg(&desc->fields[i]) && k++ == index)
                    f = &desc->fields[i];
        }
        table[t] = f;
        any |= f != NULL;
    }
    if (index < 0) {
        any |= resolve_falco_name(nbuf, len, a, out);
        out->argname = arena_strndup(a, nbuf, len);   /* its name, for messages */
        out->argname_len = (uint32_t)len;
        if (!out->argname) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    if (!any) {
        if (index < 0)
            snprintf(err, errlen, "no gVisor message has a field named '%s' (evt.arg.NAME takes a field name of the "
                     "event's protobuf message, e.g. evt.arg.pathname)", nbuf);
        else
            snprintf(err, errlen, "no gVisor message has an argument %" PRId32, index);
        return -1;
    }
    out->arg = table;
    return 0;
}


static bool open_flags(const struct evctx *x, int64_t *flags, int64_t *mode)
{
    const struct event *ev = x->ev;
    if (ev->header.message_type != 7 || !ev->is_exit)
        return false;
    const Gvisor__Syscall__Open *m = (const Gvisor__Syscall__Open *)ev->msg;
    *flags = m->flags;
    *mode = m->mode;
    return true;
}

static void evt_is_open(const struct evctx *x, uint16_t id, struct fval *v)
{
    int64_t flags, mode;
    bool r = false;
    if (open_flags(x, &flags, &mode)) {
        unsigned acc = flags & 3;   /* O_RDONLY 0, O_WRONLY 1, O_RDWR 2; 3 counts as read */
        bool exec_mode = (mode & 0111) != 0;
        if (is_open_type(x->cls.type)) {
            if (id == F_EVT_IS_OPEN_READ)
                r = acc != 1;
            else if (id == F_EVT_IS_OPEN_WRITE)
                r = acc == 1 || acc == 2;
            else
                r = (flags & (0100 | 020000000)) && exec_mode && x->cls.type != SYS_OPEN_BY_HANDLE_AT;
        } else if (x->cls.type == SYS_CREAT && id == F_EVT_IS_OPEN_EXEC) {
            r = exec_mode;
        }
    }
    fv_bool(v, r);
}

static void put_hex(struct strbuf *b, const uint8_t *p, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        char pair[2] = {hex[p[i] >> 4], hex[p[i] & 15]};
        strbuf_append(b, pair, 2);
    }
}

/* One element of a message field as text (repeated fields, rendering). */
static void put_element(struct strbuf *b, const ProtobufCFieldDescriptor *f, const void *p)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(const char *const *)p;
        strbuf_puts(b, s ? s : "");
        return;
    }
    case PROTOBUF_C_TYPE_BYTES: {
        const ProtobufCBinaryData *d = p;
        put_hex(b, d->data, d->len);
        return;
    }
    case PROTOBUF_C_TYPE_BOOL: strbuf_puts(b, *(const protobuf_c_boolean *)p ? "true" : "false"); return;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: strbuf_put_u64(b, *(const uint32_t *)p); return;
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_ENUM: strbuf_put_i64(b, *(const int32_t *)p); return;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: strbuf_put_u64(b, *(const uint64_t *)p); return;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64: strbuf_put_i64(b, *(const int64_t *)p); return;
    case PROTOBUF_C_TYPE_FLOAT: strbuf_printf(b, "%g", *(const float *)p); return;
    case PROTOBUF_C_TYPE_DOUBLE: strbuf_printf(b, "%g", *(const double *)p); return;
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *sub = *(const ProtobufCMessage *const *)p;
        if (sub)
            json_render_message(b, sub);
        return;
    }
    }
}

static void evt_arg(struct evctx *x, const struct fieldref *f, struct fval *v, struct strbuf *buf)
{
    uint16_t type = x->ev->header.message_type;
    if (f->falco) {
        /* Falco's argument of that name for this event wins over a message
         * field of the same name (openat's fd is the new fd, not dirfd) */
        int list = fields_args_list(type, x->cls.type);
        if (list >= 0 && f->falco[list]) {
            fields_args_value(x, list, f->falco[list] - 1, v, buf);
            return;
        }
    }
    if (type > DECODE_TYPE_MAX || !f->arg[type])
        return;
    const ProtobufCFieldDescriptor *d = f->arg[type];
    const ProtobufCMessage *m = x->ev->msg;
    const void *p = field_ptr(m, d);
    if (type == 38 && d->id == 4) {   /* syscall/ptrace's request: libs' name (evt.arg.request) */
        const char *name = trace_ptrace_request_name(((const Gvisor__Syscall__Ptrace *)m)->request);
        fv_cstr(v, name ? name : "PTRACE_UNKNOWN");
        return;
    }
    if (d->label == PROTOBUF_C_LABEL_REPEATED) {
        size_t n = *(const size_t *)((const char *)m + d->quantifier_offset);
        const char *items = *(const char *const *)p;
        size_t step = decode_value_size(d->type);
        strbuf_reset(buf);
        for (size_t i = 0; i < n; i++) {
            if (i)
                strbuf_putc(buf, ' ');
            put_element(buf, d, items + i * step);
        }
        fv_buf(v, buf);
        return;
    }
    int64_t iv;
    switch (d->type) {
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(const char *const *)p;
        fv_str(v, s ? s : "", s ? strlen(s) : 0);
        return;
    }
    case PROTOBUF_C_TYPE_BOOL: fv_bool(v, *(const protobuf_c_boolean *)p); return;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: fv_uint(v, *(const uint32_t *)p); return;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: fv_uint(v, *(const uint64_t *)p); return;
    case PROTOBUF_C_TYPE_MESSAGE:   /* rendered as JSON text; absent when not sent */
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_DOUBLE:
        if (d->type == PROTOBUF_C_TYPE_MESSAGE && !*(const ProtobufCMessage *const *)p)
            return;
        strbuf_reset(buf);
        put_element(buf, d, p);
        fv_buf(v, buf);
        return;
    default:
        if (fields_read_int(m, d, &iv))
            fv_int(v, iv);
        return;
    }
}

static void evt_extract(struct evctx *x, const struct fieldref *f, struct fval *v, struct strbuf *buf)
{
    const struct event *ev = x->ev;
    switch (f->id) {
    case F_EVT_TYPE: fv_cstr(v, evtype_name(x->cls.type)); return;
    case F_EVT_DIR: fv_str(v, x->cls.dir == '<' ? "<" : ">", 1); return;
    case F_EVT_TIME:
        strbuf_reset(buf);
        fields_format_time(buf, x->time_ns, false);
        fv_buf(v, buf);
        return;
    case F_EVT_NUM: fv_uint(v, x->num); return;
    case F_EVT_DROPPED: fv_uint(v, ev->header.dropped_count); return;
    case F_EVT_DROPPED_NEW: fv_uint(v, x->dropped_new); return;
    case F_EVT_RES:
        if (!x->cls.has_result)
            return;
        if (ev->errorno == 0) {
            fv_str(v, "SUCCESS", 7);
        } else {
            const char *name = ev->errorno > 0 && ev->errorno < 4096 ? strerrorname_np((int)ev->errorno) : NULL;
            strbuf_reset(buf);
            if (name)
                strbuf_puts(buf, name);
            else
                strbuf_put_i64(buf, ev->errorno);
            fv_buf(v, buf);
        }
        return;
    case F_EVT_RAWRES:
        if (x->cls.has_result)
            fv_int(v, fields_rawres(ev));
        return;
    case F_EVT_FAILED:
        if (x->cls.has_result)
            fv_bool(v, ev->errorno != 0);
        return;
    case F_EVT_IS_OPEN_READ:
    case F_EVT_IS_OPEN_WRITE:
    case F_EVT_IS_OPEN_EXEC: evt_is_open(x, f->id, v); return;
    case F_EVT_ARG: evt_arg(x, f, v, buf); return;
    case F_EVT_RAWARG: {   /* the message field's own value; a parameter it names otherwise: evt.arg's */
        uint16_t type = ev->header.message_type;
        struct fieldref raw = *f;
        if (type <= DECODE_TYPE_MAX && f->arg[type])
            raw.falco = NULL;
        evt_arg(x, &raw, v, buf);
        return;
    }
    case F_EVT_ARGS:
    case F_EVT_INFO: fields_args_all(x, v, buf); return;   /* libs: evt.info falls through to evt.args */
    case F_EVT_TYPE_IS: {
        const char *name = evtype_name(x->cls.type);
        if (f->argname)
            fv_uint(v, name && strlen(name) == f->argname_len && memcmp(name, f->argname, f->argname_len) == 0);
        return;
    }
    case F_SYSCALL_TYPE:
        if (x->cls.type < EVTYPE_SYSCALL_LIMIT)
            fv_cstr(v, evtype_name(x->cls.type));
        return;
    case F_EVT_IS_IO: fv_bool(v, io_dir(x->cls.type) != 0); return;
    case F_EVT_IS_IO_READ: fv_bool(v, io_dir(x->cls.type) == 'r'); return;
    case F_EVT_IS_IO_WRITE: fv_bool(v, io_dir(x->cls.type) == 'w'); return;
    case F_EVT_IO_DIR:
        if (io_dir(x->cls.type))
            fv_cstr(v, io_dir(x->cls.type) == 'r' ? "read" : "write");
        return;
    case F_EVT_BUFFER: return;   /* runsc sends no read or write data */
    case F_GVISOR_POINT:
        if (!x->have_point) {
            evtype_point(ev, &x->cls, x->point);
            x->have_point = true;
        }
        fv_cstr(v, x->point);
        return;
    default:
        return;
    }
}

/* evt.args names pids and fds by the process table: the event's process. */
#define P FIELD_CTX_PROCESS
static const struct field_def evt_defs[] = {
    {"evt.type", FT_STR, FA_NONE, F_EVT_TYPE, 0, 0, 0, FIELD_REPORTED},
    {"evt.dir", FT_STR, FA_NONE, F_EVT_DIR, 0, 0, 0, FIELD_REPORTED},
    {"evt.time", FT_STR, FA_NONE, F_EVT_TIME, 0, 0, 0, FIELD_REPORTED},
    {"evt.num", FT_UINT, FA_NONE, F_EVT_NUM, 0, 0, 0, FIELD_REPORTED},
    {"evt.res", FT_STR, FA_NONE, F_EVT_RES, 0, 0, 0, FIELD_REPORTED},
    {"evt.rawres", FT_INT, FA_NONE, F_EVT_RAWRES, 0, 0, 0, FIELD_REPORTED},
    {"evt.failed", FT_BOOL, FA_NONE, F_EVT_FAILED, 0, 0, 0, FIELD_REPORTED},
    {"evt.is_open_read", FT_BOOL, FA_NONE, F_EVT_IS_OPEN_READ, 0, 0, 0, FIELD_REPORTED},
    {"evt.is_open_write", FT_BOOL, FA_NONE, F_EVT_IS_OPEN_WRITE, 0, 0, 0, FIELD_REPORTED},
    {"evt.is_open_exec", FT_BOOL, FA_NONE, F_EVT_IS_OPEN_EXEC, 0, 0, 0, FIELD_REPORTED},
    {"evt.arg", FT_DYN, FA_EVT_ARG, F_EVT_ARG, 0, 0, 0, FIELD_REPORTED},
    {"evt.dropped", FT_UINT, FA_NONE, F_EVT_DROPPED, 0, 0, 0, FIELD_REPORTED},
    {"evt.dropped_new", FT_UINT, FA_NONE, F_EVT_DROPPED_NEW, 0, 0, 0, FIELD_REPORTED},
    {"gvisor.point", FT_STR, FA_NONE, F_GVISOR_POINT, 0, 0, 0, FIELD_REPORTED},
    {"evt.args", FT_STR, FA_NONE, F_EVT_ARGS, P, RULES_OPT_FD_PATH, 0, FIELD_REPORTED},
    {"evt.buffer", FT_STR, FA_NONE, F_EVT_BUFFER, 0, 0, 0, FIELD_NEVER},
    {"evt.rawarg", FT_DYN, FA_EVT_ARG, F_EVT_RAWARG, 0, 0, 0, FIELD_REPORTED},
    {"evt.type.is", FT_UINT, FA_KEY, F_EVT_TYPE_IS, 0, 0, 0, FIELD_REPORTED},
    {"syscall.type", FT_STR, FA_NONE, F_SYSCALL_TYPE, 0, 0, 0, FIELD_REPORTED},
    {"evt.info", FT_STR, FA_NONE, F_EVT_INFO, P, RULES_OPT_FD_PATH, 0, FIELD_REPORTED},
    {"evt.is_io", FT_BOOL, FA_NONE, F_EVT_IS_IO, 0, 0, 0, FIELD_REPORTED},
    {"evt.is_io_read", FT_BOOL, FA_NONE, F_EVT_IS_IO_READ, 0, 0, 0, FIELD_REPORTED},
    {"evt.is_io_write", FT_BOOL, FA_NONE, F_EVT_IS_IO_WRITE, 0, 0, 0, FIELD_REPORTED},
    {"evt.io_dir", FT_STR, FA_NONE, F_EVT_IO_DIR, 0, 0, 0, FIELD_REPORTED},
};
#undef P

const struct field_class fields_evt_class = {
    "evt", evt_defs, sizeof(evt_defs) / sizeof(evt_defs[0]), evt_extract,
};
