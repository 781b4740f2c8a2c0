/* fields.c - the field registry: every class's table (fields_class.h),
 * name resolution, the value cache, and the text of a value.
 */

#include <arpa/inet.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "container.h"
#include "fields_class.h"

/* By id base: classes[id >> 8]. */
static const struct field_class *const classes[] = {
    [FIELD_BASE_EVT >> 8] = &fields_evt_class,
    [FIELD_BASE_PROC >> 8] = &fields_proc_class,
    [FIELD_BASE_FD >> 8] = &fields_fd_class,
    [FIELD_BASE_CONTAINER >> 8] = &fields_container_class,
    [FIELD_BASE_EXEC >> 8] = &fields_exec_class,
    [FIELD_BASE_USER >> 8] = &fields_user_class,
    [FIELD_BASE_GEN_EVENT >> 8] = &fields_gen_event_class,
    [FIELD_BASE_UNREPORTED >> 8] = &fields_unreported_class,
    [FIELD_BASE_K8SMETA >> 8] = &fields_k8smeta_class,
};
#define NCLASSES (sizeof(classes) / sizeof(classes[0]))

static const struct field_class *class_of(uint16_t id)
{
    return classes[id >> 8];
}

/* The i-th definition over every class, in registry order. */
static const struct field_def *def_at(size_t i)
{
    for (size_t c = 0; c < NCLASSES; c++) {
        if (!classes[c])
            continue;
        if (i < classes[c]->ndefs)
            return &classes[c]->defs[i];
        i -= classes[c]->ndefs;
    }
    return NULL;
}

size_t fields_count(void)
{
    size_t n = 0;
    for (size_t c = 0; c < NCLASSES; c++)
        n += classes[c] ? classes[c]->ndefs : 0;
    return n;
}

static const char *arg_text(enum field_arg a)
{
    switch (a) {
    case FA_ANCESTOR: return "[N]";
    case FA_EVT_ARG: return ".NAME or [N]";
    case FA_ENV_NAME: return "[NAME]";
    case FA_MOUNT: return "[N] or [PATH]";
    case FA_KEY:
    case FA_KEY_REQUIRED: return "[KEY] or .KEY";
    case FA_INDEX: return "[N]";
    case FA_ENV_LEVEL: return "[NAME] or [N]";
    default: return NULL;
    }
}

const struct field_info *fields_info(size_t i)
{
    static __thread struct field_info info;
    const struct field_def *d = def_at(i);
    if (!d)
        return NULL;
    info.name = d->name;
    info.type = d->type;
    info.arg = arg_text(d->arg);
    info.avail = d->avail;
    return &info;
}

/* falcosecurity/plugins 0b3cbd8d8 plugins/container/src/caps/extract/extract.cpp:
 * the fields whose field_info ends in `true` (lines 118, 141, 231, 241, 326,
 * 338), which libsinsp flags EPF_FORMAT_SUGGESTED (libs plugin.cpp:513-525). */
static const char *const suggested[] = {
    "container.id", "container.name", "container.image.repository", "container.image.tag", "k8s.pod.name",
    "k8s.ns.name",
};

const char *fields_suggested(size_t i)
{
    return i < sizeof(suggested) / sizeof(suggested[0]) ? suggested[i] : NULL;
}

enum ftype fields_type(const struct fieldref *f) { return f->def->type; }

bool fields_same(const struct fieldref *a, const struct fieldref *b)
{
    if (a->id != b->id || a->index != b->index || a->any_ancestor != b->any_ancestor ||
        a->argname_len != b->argname_len || (a->argname_len && memcmp(a->argname, b->argname, a->argname_len) != 0))
        return false;
    if (a->arg != b->arg &&
        (!a->arg || !b->arg || memcmp(a->arg, b->arg, (DECODE_TYPE_MAX + 1) * sizeof(*a->arg)) != 0))
        return false;
    return a->falco == b->falco || (a->falco && b->falco && memcmp(a->falco, b->falco, fields_args_lists()) == 0);
}
enum field_avail fields_avail(const struct fieldref *f) { return f->def->avail; }
const char *fields_name(const struct fieldref *f) { return f->def->name; }

void fields_needs(const struct fieldref *f, struct field_needs *out)
{
    out->context = f->def->context;
    out->optional = f->def->optional;
    out->process = f->def->process;
    out->release = f->def->avail == FIELD_NEWER_RUNSC ? fields_exec_release(f->def) : 0;
}

/* ---- the message layouts, shared ---- */

static struct decoder shared_decoder;
static pthread_once_t decoder_once = PTHREAD_ONCE_INIT;
static void init_decoder(void) { decoder_init(&shared_decoder); }

const struct decoder *fields_decoder(void)
{
    pthread_once(&decoder_once, init_decoder);
    return &shared_decoder;
}

static struct msg_layout layouts[DECODE_TYPE_MAX + 1];
static pthread_once_t layouts_once = PTHREAD_ONCE_INIT;

static void init_layouts(void)
{
    const struct decoder *d = fields_decoder();
    for (int t = 1; t <= DECODE_TYPE_MAX; t++) {
        const ProtobufCMessageDescriptor *desc = d->types[t].desc;
        struct msg_layout *l = &layouts[t];
        l->fd = protobuf_c_message_descriptor_get_field_by_name(desc, "fd");
        l->fd_path = protobuf_c_message_descriptor_get_field_by_name(desc, "fd_path");
        l->pathname = protobuf_c_message_descriptor_get_field_by_name(desc, "pathname");
        l->address = protobuf_c_message_descriptor_get_field_by_name(desc, "address");
        l->flags = protobuf_c_message_descriptor_get_field_by_name(desc, "flags");
        l->mode = protobuf_c_message_descriptor_get_field_by_name(desc, "mode");
    }
}

const struct msg_layout *fields_layout(uint16_t type)
{
    pthread_once(&layouts_once, init_layouts);
    return type <= DECODE_TYPE_MAX ? &layouts[type] : &layouts[0];
}

/* ---- resolution ---- */

static bool parse_index(const char *arg, size_t len, int32_t *out)
{
    if (len == 0 || len > 6)
        return false;
    int32_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (arg[i] < '0' || arg[i] > '9')
            return false;
        v = v * 10 + (arg[i] - '0');
    }
    *out = v;
    return true;
}

static bool takes_key(const struct field_def *d) { return d->arg == FA_KEY || d->arg == FA_KEY_REQUIRED; }

/* The FA_KEY field whose name, then '.', starts name (the longest), or NULL. */
static const struct field_def *key_prefix_def(const char *name, size_t len)
{
    const struct field_def *best = NULL;
    for (size_t c = 0; c < NCLASSES; c++) {
        if (!classes[c])
            continue;
        for (size_t i = 0; i < classes[c]->ndefs; i++) {
            const struct field_def *d = &classes[c]->defs[i];
            size_t n = strlen(d->name);
            if (takes_key(d) && len > n + 1 && name[n] == '.' && memcmp(d->name, name, n) == 0 &&
                (!best || n > strlen(best->name)))
                best = d;
        }
    }
    return best;
}

static const struct field_def *find_def(const char *name, size_t len)
{
    for (size_t c = 0; c < NCLASSES; c++) {
        if (!classes[c])
            continue;
        for (size_t i = 0; i < classes[c]->ndefs; i++) {
            const struct field_def *d = &classes[c]->defs[i];
            if (strlen(d->name) == len && memcmp(d->name, name, len) == 0)
                return d;
        }
    }
    return NULL;
}

int fields_resolve(const char *name, size_t len, const char *arg, size_t arglen, bool has_arg, struct arena *a,
                   struct fieldref *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    out->index = -1;
    static const char *const arg_fields[] = {"evt.arg", "evt.rawarg"};   /* and .NAME */
    for (size_t i = 0; i < sizeof(arg_fields) / sizeof(arg_fields[0]); i++) {
        size_t n = strlen(arg_fields[i]);
        if (len <= n + 1 || memcmp(name, arg_fields[i], n) != 0 || name[n] != '.')
            continue;
        if (has_arg) {
            snprintf(err, errlen, "'%.*s' takes no [argument]", (int)len, name);
            return -1;
        }
        out->def = find_def(arg_fields[i], n);
        out->id = out->def->id;
        return fields_evt_resolve_arg(name + n + 1, len - n - 1, -1, a, out, err, errlen);
    }
    const struct field_def *d = find_def(name, len);
    if (!d && !has_arg && (d = key_prefix_def(name, len)) != NULL) {
        /* k8s.pod.label.app: the .KEY form of k8s.pod.label[app] */
        size_t n = strlen(d->name) + 1;
        arg = name + n;
        arglen = len - n;
        has_arg = true;
    }
    if (d) {
        out->def = d;
        out->id = d->id;
        switch (d->arg) {
        case FA_NONE:
            if (has_arg) {
                snprintf(err, errlen, "'%s' takes no [argument]", d->name);
                return -1;
            }
            return 0;
        case FA_ANCESTOR:
            if (!has_arg) {
                out->any_ancestor = true;
                return 0;
            }
            if (!parse_index(arg, arglen, &out->index) || out->index > PROC_ANCESTORS_MAX) {
                snprintf(err, errlen, "'%s[%.*s]': the argument must be a number from 0 to %d", d->name,
                         (int)(arglen > 32 ? 32 : arglen), arg, PROC_ANCESTORS_MAX);
                return -1;
            }
            return 0;
        case FA_ENV_NAME:
            if (!has_arg)
                return 0;
            if (arglen == 0 || arglen > 256 || !(out->argname = arena_strndup(a, arg, arglen))) {
                snprintf(err, errlen, "'%s[%.*s]': the argument must be a variable name (1 to 256 bytes)", d->name,
                         (int)(arglen > 32 ? 32 : arglen), arg);
                return -1;
            }
            out->argname_len = (uint32_t)arglen;
            return 0;
        case FA_MOUNT:
            /* libs' sinsp_filter_check_container::extract_arg: a number is
             * an index, anything else a path glob */
            if (has_arg && parse_index(arg, arglen, &out->index))
                return 0;
            if (!has_arg || arglen == 0 || arglen > FIELD_MOUNT_GLOB_MAX ||
                !(out->argname = arena_strndup(a, arg, arglen))) {
                snprintf(err, errlen, "'%s' needs [N], a mount's index, or [PATH], a glob of its path (1 to %d bytes)",
                         d->name, FIELD_MOUNT_GLOB_MAX);
                return -1;
            }
            out->argname_len = (uint32_t)arglen;
            return 0;
        case FA_KEY_REQUIRED:
            if (!has_arg) {
                snprintf(err, errlen, "'%s' needs [KEY] (or .KEY), a label's name", d->name);
                return -1;
            }
            /* fall through */
        case FA_KEY:
            if (!has_arg)
                return 0;
            if (arglen == 0 || arglen > FIELD_KEY_MAX || !(out->argname = arena_strndup(a, arg, arglen))) {
                snprintf(err, errlen, "'%s[%.*s]': the argument must be 1 to %d bytes", d->name,
                         (int)(arglen > 32 ? 32 : arglen), arg, FIELD_KEY_MAX);
                return -1;
            }
            out->argname_len = (uint32_t)arglen;
            return 0;
        case FA_INDEX:
            if (has_arg && (!parse_index(arg, arglen, &out->index) || out->index > PROC_ANCESTORS_MAX)) {
                snprintf(err, errlen, "'%s[%.*s]': the argument must be a number from 0 to %d", d->name,
                         (int)(arglen > 32 ? 32 : arglen), arg, PROC_ANCESTORS_MAX);
                return -1;
            }
            return 0;
        case FA_ENV_LEVEL:
            if (!has_arg || (parse_index(arg, arglen, &out->index) && out->index <= PROC_ANCESTORS_MAX))
                return 0;
            out->index = -1;
            if (arglen == 0 || arglen > 256 || !(out->argname = arena_strndup(a, arg, arglen))) {
                snprintf(err, errlen, "'%s[%.*s]': the argument must be a variable name or an ancestor's level",
                         d->name, (int)(arglen > 32 ? 32 : arglen), arg);
                return -1;
            }
            out->argname_len = (uint32_t)arglen;
            return 0;
        case FA_EVT_ARG:
            if (!has_arg) {
                snprintf(err, errlen, "'evt.arg' needs a field: evt.arg.NAME or evt.arg[N]");
                return -1;
            }
            if (parse_index(arg, arglen, &out->index))
                return fields_evt_resolve_arg(NULL, 0, out->index, a, out, err, errlen);
            return fields_evt_resolve_arg(arg, arglen, -1, a, out, err, errlen);
        }
    }
    snprintf(err, errlen, "unknown field '%.*s' (rules/README.md lists the fields)", (int)(len > 64 ? 64 : len), name);
    return -1;
}

/* ---- values ---- */

void fv_buf(struct fval *v, struct strbuf *b)
{
    if (b->failed) {
        v->kind = FV_ABSENT;
        return;
    }
    strbuf_putc(b, '\0');
    if (b->failed) {
        v->kind = FV_ABSENT;
        return;
    }
    b->len--;
    fv_str(v, b->data, b->len);
}

static const void *field_ptr(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    return (const char *)m + f->offset;
}

bool fields_read_int(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, int64_t *out)
{
    if (!f || f->label == PROTOBUF_C_LABEL_REPEATED)
        return false;
    const void *p = field_ptr(m, f);
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_ENUM: *out = *(const int32_t *)p; return true;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: *out = *(const uint32_t *)p; return true;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: *out = *(const int64_t *)p; return true;
    default: return false;
    }
}

const char *fields_read_str(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    if (!f || f->type != PROTOBUF_C_TYPE_STRING || f->label == PROTOBUF_C_LABEL_REPEATED)
        return NULL;
    return *(const char *const *)field_ptr(m, f);
}

const ProtobufCBinaryData *fields_read_bytes(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    if (!f || f->type != PROTOBUF_C_TYPE_BYTES || f->label == PROTOBUF_C_LABEL_REPEATED)
        return NULL;
    return field_ptr(m, f);
}

int fields_utc(int64_t ns, struct tm *tm)
{
    int64_t sec = ns / 1000000000, frac = ns % 1000000000;
    if (frac < 0) {
        frac += 1000000000;
        sec--;
    }
    time_t t = (time_t)sec;
    if (!gmtime_r(&t, tm))
        memset(tm, 0, sizeof(*tm));
    return (int)frac;
}

void fields_format_time(struct strbuf *out, int64_t ns, bool iso)
{
    struct tm tm;
    int frac = fields_utc(ns, &tm);
    char buf[64];
    int n = iso ? snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%09dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                           tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)frac)
                : snprintf(buf, sizeof(buf), "%02d:%02d:%02d.%09d", tm.tm_hour, tm.tm_min, tm.tm_sec, (int)frac);
    if (n > 0)
        strbuf_append(out, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

void fields_put_ip(struct strbuf *b, uint8_t family, const uint8_t *ip)
{
    char text[INET6_ADDRSTRLEN];
    if (!inet_ntop(family == 6 ? AF_INET6 : AF_INET, ip, text, sizeof(text)))
        text[0] = '\0';
    strbuf_puts(b, text);
}


/* ---- dispatch ---- */

const struct fval *fields_get(struct evctx *x, const struct fieldref *f)
{
    struct field_slot *s = &x->slots[f->slot];
    if (s->gen != x->gen) {
        s->v.kind = FV_ABSENT;
        class_of(f->id)->extract(x, f, &s->v, &s->buf);
        s->gen = x->gen;
    }
    return &s->v;
}

void fields_render_text(struct strbuf *out, const struct fval *v)
{
    switch (v->kind) {
    case FV_ABSENT: strbuf_puts(out, "<NA>"); return;
    case FV_STR: strbuf_append(out, v->s, v->len); return;
    case FV_INT: strbuf_put_i64(out, v->i); return;
    case FV_UINT: strbuf_put_u64(out, v->u); return;
    case FV_BOOL: strbuf_puts(out, v->b ? "true" : "false"); return;
    case FV_IP: fields_put_ip(out, v->len == 4 ? 4 : 6, v->ip); return;
    }
}

