#include "fields.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gvisor/container.pb-c.h"
#include "gvisor/sentry.pb-c.h"
#include "gvisor/syscall.pb-c.h"
#include "json.h"

enum arg_kind { ARG_NONE, ARG_ANCESTOR, ARG_EVT };

static const struct {
    const char *name;
    enum ftype type;
    enum arg_kind arg;
} field_table[F_COUNT] = {
    [F_EVT_TYPE] = {"evt.type", FT_STR, ARG_NONE},
    [F_EVT_DIR] = {"evt.dir", FT_STR, ARG_NONE},
    [F_EVT_TIME] = {"evt.time", FT_STR, ARG_NONE},
    [F_EVT_NUM] = {"evt.num", FT_UINT, ARG_NONE},
    [F_EVT_RES] = {"evt.res", FT_STR, ARG_NONE},
    [F_EVT_RAWRES] = {"evt.rawres", FT_INT, ARG_NONE},
    [F_EVT_FAILED] = {"evt.failed", FT_BOOL, ARG_NONE},
    [F_EVT_IS_OPEN_READ] = {"evt.is_open_read", FT_BOOL, ARG_NONE},
    [F_EVT_IS_OPEN_WRITE] = {"evt.is_open_write", FT_BOOL, ARG_NONE},
    [F_EVT_IS_OPEN_EXEC] = {"evt.is_open_exec", FT_BOOL, ARG_NONE},
    [F_EVT_ARG] = {"evt.arg", FT_DYN, ARG_EVT},
    [F_EVT_DROPPED] = {"evt.dropped", FT_UINT, ARG_NONE},
    [F_EVT_DROPPED_NEW] = {"evt.dropped_new", FT_UINT, ARG_NONE},
    [F_PROC_NAME] = {"proc.name", FT_STR, ARG_NONE},
    [F_PROC_EXEPATH] = {"proc.exepath", FT_STR, ARG_NONE},
    [F_PROC_CMDLINE] = {"proc.cmdline", FT_STR, ARG_NONE},
    [F_PROC_ARGS] = {"proc.args", FT_STR, ARG_NONE},
    [F_PROC_PID] = {"proc.pid", FT_INT, ARG_NONE},
    [F_PROC_TID] = {"proc.tid", FT_INT, ARG_NONE},
    [F_PROC_CWD] = {"proc.cwd", FT_STR, ARG_NONE},
    [F_PROC_DURATION] = {"proc.duration", FT_INT, ARG_NONE},
    [F_PROC_PPID] = {"proc.ppid", FT_INT, ARG_NONE},
    [F_PROC_PNAME] = {"proc.pname", FT_STR, ARG_NONE},
    [F_PROC_PCMDLINE] = {"proc.pcmdline", FT_STR, ARG_NONE},
    [F_PROC_ANAME] = {"proc.aname", FT_STR, ARG_ANCESTOR},
    [F_PROC_APID] = {"proc.apid", FT_INT, ARG_ANCESTOR},
    [F_USER_UID] = {"user.uid", FT_UINT, ARG_NONE},
    [F_GROUP_GID] = {"group.gid", FT_UINT, ARG_NONE},
    [F_CONTAINER_ID] = {"container.id", FT_STR, ARG_NONE},
    [F_FD_NAME] = {"fd.name", FT_STR, ARG_NONE},
    [F_FD_NUM] = {"fd.num", FT_INT, ARG_NONE},
    [F_FD_DIRECTORY] = {"fd.directory", FT_STR, ARG_NONE},
    [F_FD_FILENAME] = {"fd.filename", FT_STR, ARG_NONE},
    [F_FD_TYPECHAR] = {"fd.typechar", FT_STR, ARG_NONE},
    [F_FD_SIP] = {"fd.sip", FT_IP, ARG_NONE},
    [F_FD_SPORT] = {"fd.sport", FT_UINT, ARG_NONE},
    [F_FD_CIP] = {"fd.cip", FT_IP, ARG_NONE},
    [F_FD_CPORT] = {"fd.cport", FT_UINT, ARG_NONE},
    [F_FD_RIP] = {"fd.rip", FT_IP, ARG_NONE},
    [F_FD_RPORT] = {"fd.rport", FT_UINT, ARG_NONE},
    [F_FD_LIP] = {"fd.lip", FT_IP, ARG_NONE},
    [F_FD_LPORT] = {"fd.lport", FT_UINT, ARG_NONE},
    [F_GVISOR_POINT] = {"gvisor.point", FT_STR, ARG_NONE},
};

size_t fields_count(void) { return F_COUNT; }

const struct field_info *fields_info(size_t i)
{
    static struct field_info infos[F_COUNT];
    if (i >= F_COUNT)
        return NULL;
    infos[i].name = field_table[i].name;
    infos[i].type = field_table[i].type;
    infos[i].arg = field_table[i].arg == ARG_ANCESTOR ? "[N]" : field_table[i].arg == ARG_EVT ? ".NAME or [N]" : NULL;
    return &infos[i];
}

enum ftype fields_type(const struct fieldref *f) { return field_table[f->id].type; }

/* ---- the message layouts, shared ---- */

static struct decoder shared_decoder;
static pthread_once_t decoder_once = PTHREAD_ONCE_INIT;
static void init_decoder(void) { decoder_init(&shared_decoder); }

const struct decoder *fields_decoder(void)
{
    pthread_once(&decoder_once, init_decoder);
    return &shared_decoder;
}

/* Fields a message's common view needs, by name, per message type. */
struct msg_layout {
    const ProtobufCFieldDescriptor *fd, *fd_path, *pathname, *address, *flags, *mode;
};
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

static const struct msg_layout *layout_of(uint16_t type)
{
    pthread_once(&layouts_once, init_layouts);
    return type <= DECODE_TYPE_MAX ? &layouts[type] : &layouts[0];
}

/* ---- resolution ---- */

static bool is_skipped_arg(const ProtobufCFieldDescriptor *f)
{
    return strcmp(f->name, "context_data") == 0 || strcmp(f->name, "exit") == 0 || strcmp(f->name, "sysno") == 0;
}

/* evt.arg.NAME or evt.arg[N] for every message type. */
static int resolve_arg(const char *name, size_t len, int32_t index, struct arena *a, struct fieldref *out, char *err,
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

int fields_resolve(const char *name, size_t len, const char *arg, size_t arglen, bool has_arg, struct arena *a,
                   struct fieldref *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    out->index = -1;
    static const char evt_arg[] = "evt.arg.";
    if (len > sizeof(evt_arg) - 1 && memcmp(name, evt_arg, sizeof(evt_arg) - 1) == 0) {
        if (has_arg) {
            snprintf(err, errlen, "'%.*s' takes no [argument]", (int)len, name);
            return -1;
        }
        out->id = F_EVT_ARG;
        return resolve_arg(name + sizeof(evt_arg) - 1, len - (sizeof(evt_arg) - 1), -1, a, out, err, errlen);
    }
    for (int i = 0; i < F_COUNT; i++) {
        if (strlen(field_table[i].name) != len || memcmp(field_table[i].name, name, len) != 0)
            continue;
        out->id = (uint16_t)i;
        switch (field_table[i].arg) {
        case ARG_NONE:
            if (has_arg) {
                snprintf(err, errlen, "'%s' takes no [argument]", field_table[i].name);
                return -1;
            }
            return 0;
        case ARG_ANCESTOR:
            if (!has_arg) {
                out->any_ancestor = true;
                return 0;
            }
            if (!parse_index(arg, arglen, &out->index) || out->index > PROC_ANCESTORS_MAX) {
                snprintf(err, errlen, "'%s[%.*s]': the argument must be a number from 0 to %d", field_table[i].name,
                         (int)(arglen > 32 ? 32 : arglen), arg, PROC_ANCESTORS_MAX);
                return -1;
            }
            return 0;
        case ARG_EVT:
            if (!has_arg) {
                snprintf(err, errlen, "'evt.arg' needs a field: evt.arg.NAME or evt.arg[N]");
                return -1;
            }
            if (parse_index(arg, arglen, &out->index))
                return resolve_arg(NULL, 0, out->index, a, out, err, errlen);
            return resolve_arg(arg, arglen, -1, a, out, err, errlen);
        }
    }
    snprintf(err, errlen, "unknown field '%.*s' (rules/README.md lists the fields)", (int)(len > 64 ? 64 : len), name);
    return -1;
}

/* ---- small helpers ---- */

static void set_str(struct fval *v, const char *s, size_t len)
{
    v->kind = FV_STR;
    v->s = s;
    v->len = (uint32_t)len;
}

static void set_cstr(struct fval *v, const char *s)
{
    if (s && s[0])
        set_str(v, s, strlen(s));
    else
        v->kind = FV_ABSENT;
}

static void set_int(struct fval *v, int64_t i)
{
    v->kind = FV_INT;
    v->i = i;
}

static void set_uint(struct fval *v, uint64_t u)
{
    v->kind = FV_UINT;
    v->u = u;
}

static void set_bool(struct fval *v, bool b)
{
    v->kind = FV_BOOL;
    v->b = b;
}

/* Copies a strbuf's content into v (the strbuf backs it). */
static void set_buf(struct fval *v, struct strbuf *b)
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
    set_str(v, b->data, b->len);
}

static const void *field_ptr(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    return (const char *)m + f->offset;
}

static bool read_int(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, int64_t *out)
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

static const char *read_str(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    if (!f || f->type != PROTOBUF_C_TYPE_STRING || f->label == PROTOBUF_C_LABEL_REPEATED)
        return NULL;
    return *(const char *const *)field_ptr(m, f);
}

static const ProtobufCBinaryData *read_bytes(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    if (!f || f->type != PROTOBUF_C_TYPE_BYTES || f->label == PROTOBUF_C_LABEL_REPEATED)
        return NULL;
    return field_ptr(m, f);
}

void fields_format_time(struct strbuf *out, int64_t ns, bool iso)
{
    int64_t sec = ns / 1000000000, frac = ns % 1000000000;
    if (frac < 0) {
        frac += 1000000000;
        sec--;
    }
    time_t t = (time_t)sec;
    struct tm tm;
    if (!gmtime_r(&t, &tm))
        memset(&tm, 0, sizeof(tm));
    char buf[64];
    int n = iso ? snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%09dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                           tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)frac)
                : snprintf(buf, sizeof(buf), "%02d:%02d:%02d.%09d", tm.tm_hour, tm.tm_min, tm.tm_sec, (int)frac);
    if (n > 0)
        strbuf_append(out, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* ---- fd.* ---- */

enum { ROLE_NONE, ROLE_SERVER_REMOTE, ROLE_CLIENT_REMOTE, ROLE_SERVER_LOCAL };

static bool is_open_type(unsigned t)
{
    return t == SYS_OPEN || t == SYS_OPENAT || t == SYS_OPENAT2 || t == SYS_OPEN_BY_HANDLE_AT;
}

static char typechar_of_path(const char *p)
{
    static const struct {
        const char *prefix;
        char c;
    } kinds[] = {
        {"pipe:", 'p'}, {"anon_inode:[eventfd]", 'e'}, {"anon_inode:[signalfd]", 's'},
        {"anon_inode:[eventpoll]", 'l'}, {"anon_inode:[inotify]", 'i'}, {"anon_inode:inotify", 'i'},
        {"anon_inode:[timerfd]", 't'}, {"anon_inode:[pidfd]", 'P'}, {"memfd:", 'm'},
    };
    if (p[0] == '/')
        return 'f';
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (strncmp(p, kinds[i].prefix, strlen(kinds[i].prefix)) == 0)
            return kinds[i].c;
    return 'o';
}

static char typechar_of_domain(int64_t domain)
{
    switch (domain) {
    case 1: return 'u';
    case 2: return '4';
    case 10: return '6';
    case 16: return 'n';
    default: return 'o';
    }
}

/* Lexically normal form of an absolute path: no "." or ".." parts, no
 * doubled slashes (what Falco's path concatenation gives). In place. */
static size_t normalize_path(char *p, size_t len)
{
    size_t out = 0, i = 0;
    while (i < len) {
        while (i < len && p[i] == '/')
            i++;
        size_t start = i;
        while (i < len && p[i] != '/')
            i++;
        size_t plen = i - start;
        if (plen == 0 || (plen == 1 && p[start] == '.'))
            continue;
        if (plen == 2 && p[start] == '.' && p[start + 1] == '.') {
            while (out > 0 && p[out - 1] != '/')
                out--;
            if (out > 0)
                out--;
            continue;
        }
        p[out++] = '/';
        memmove(p + out, p + start, plen);
        out += plen;
    }
    if (out == 0)
        p[out++] = '/';
    return out;
}

/* fd.name is the buffer's text, NUL-terminated for the string operators;
 * a buffer that hit its bound names nothing rather than a cut path. */
static void name_from_buffer(struct strbuf *b, struct fdinfo *fi)
{
    strbuf_putc(b, '\0');
    if (b->failed)
        return;
    b->len--;
    fi->has_name = true;
    fi->name = b->data;
    fi->name_len = (uint32_t)b->len;
}

/* The opened file's absolute path: pathname, joined to the directory fd's
 * path (openat) or the cwd when relative. */
static void open_name(struct evctx *x, const ProtobufCMessage *m, const struct msg_layout *l, struct fdinfo *fi)
{
    const char *path = read_str(m, l->pathname);
    if (!path || !path[0])
        return;
    const char *dir = NULL;
    if (path[0] != '/') {
        int64_t dirfd = -100;
        if (x->cls.type == SYS_OPENAT || x->cls.type == SYS_OPENAT2)
            read_int(m, l->fd, &dirfd);
        if (dirfd == -100) {
            const Gvisor__Common__ContextData *ctx = x->ev->context;
            if (ctx && ctx->cwd && ctx->cwd[0])
                dir = ctx->cwd;
            else if (x->proc && x->proc->cwd.len)
                dir = x->proc->cwd.data;
        } else {
            const char *fdp = read_str(m, l->fd_path);
            if (fdp && fdp[0] == '/')
                dir = fdp;
        }
    }
    struct strbuf *b = x->fdname;
    strbuf_reset(b);
    if (dir) {
        strbuf_puts(b, dir);
        strbuf_putc(b, '/');
    }
    strbuf_puts(b, path);
    if (b->failed)
        return;
    if (b->data[0] == '/')
        b->len = normalize_path(b->data, b->len);
    name_from_buffer(b, fi);
}

static void put_ip(struct strbuf *b, uint8_t family, const uint8_t *ip)
{
    char text[INET6_ADDRSTRLEN];
    if (!inet_ntop(family == 6 ? AF_INET6 : AF_INET, ip, text, sizeof(text)))
        text[0] = '\0';
    strbuf_puts(b, text);
}

static void put_endpoint(struct strbuf *b, uint8_t family, const uint8_t *ip, uint16_t port)
{
    put_ip(b, family, ip);
    strbuf_putc(b, ':');
    strbuf_put_u64(b, port);
}

/* A sockaddr as gVisor sends it (family, then the kernel's layout). */
static void socket_name(struct evctx *x, const ProtobufCBinaryData *addr, struct fdinfo *fi)
{
    if (!addr || addr->len < 2)
        return;
    const uint8_t *a = addr->data;
    unsigned family = a[0] | a[1] << 8;
    uint16_t type = x->ev->header.message_type;
    struct strbuf *b = x->fdname;
    strbuf_reset(b);
    fi->is_socket = true;
    if (family == 1) {   /* AF_UNIX: the path, '@' for an abstract name */
        fi->typechar = 'u';
        size_t n = addr->len - 2;
        const uint8_t *p = a + 2;
        if (n == 0)
            return;
        if (p[0] == 0) {
            strbuf_putc(b, '@');
            p++;
            n--;
        }
        size_t plen = 0;
        while (plen < n && p[plen])
            plen++;
        strbuf_append(b, p, plen);
    } else if ((family == 2 && addr->len >= 8) || (family == 10 && addr->len >= 24)) {
        fi->family = family == 2 ? 4 : 6;
        fi->typechar = family == 2 ? '4' : '6';
        fi->port = (uint16_t)(a[2] << 8 | a[3]);
        memcpy(fi->ip, family == 2 ? a + 4 : a + 8, family == 2 ? 4 : 16);
        static const uint8_t zero[16];
        /* Falco's rendering: client->server, the side gVisor does not
         * report as zeros; bind and listen name the local address alone. */
        if (type == 24 || type == 37) {
            fi->role = ROLE_SERVER_LOCAL;
            put_endpoint(b, fi->family, fi->ip, fi->port);
        } else if (type == 25) {
            fi->role = ROLE_CLIENT_REMOTE;
            put_endpoint(b, fi->family, fi->ip, fi->port);
            strbuf_puts(b, "->");
            put_endpoint(b, fi->family, zero, 0);
        } else {
            fi->role = ROLE_SERVER_REMOTE;
            put_endpoint(b, fi->family, zero, 0);
            strbuf_puts(b, "->");
            put_endpoint(b, fi->family, fi->ip, fi->port);
        }
    } else {
        return;
    }
    if (b->len == 0 || b->failed)
        return;
    name_from_buffer(b, fi);
}

/* The syscall's raw return: -errno, or its result. A sandbox's errno of
 * INT64_MIN has no negation in int64_t: it saturates. */
static int64_t raw_result(const struct event *ev)
{
    if (!ev->errorno)
        return ev->result;
    return ev->errorno == INT64_MIN ? INT64_MAX : -ev->errorno;
}

/* fd.num: the fd the event creates (its result) or works on. */
static void fd_number(struct evctx *x, const ProtobufCMessage *m, const struct msg_layout *l, struct fdinfo *fi)
{
    const struct event *ev = x->ev;
    int64_t rawres = raw_result(ev);
    int64_t v;
    switch (ev->header.message_type) {
    case 7:   /* open: the new fd */
    case 12:  /* socket */
    case 20:  /* signalfd */
    case 22:  /* eventfd */
    case 26:  /* timerfd_create */
    case 30:  /* inotify_init */
        if (ev->is_exit) {
            fi->has_num = true;
            fi->num = rawres;
        }
        return;
    case 25:  /* accept: the listening fd on enter, the new one on exit */
    case 19:  /* dup: the old fd on enter, the new one on exit */
        if (ev->is_exit) {
            fi->has_num = true;
            fi->num = rawres;
        } else if (ev->header.message_type == 19) {
            fi->has_num = true;
            fi->num = ((const Gvisor__Syscall__Dup *)m)->old_fd;
        } else if (read_int(m, l->fd, &v)) {
            fi->has_num = true;
            fi->num = v;
        }
        return;
    case 17:
        if (ev->is_exit) {
            fi->has_num = true;
            fi->num = ((const Gvisor__Syscall__Pipe *)m)->reader;
        }
        return;
    case 33:
        if (ev->is_exit) {
            fi->has_num = true;
            fi->num = ((const Gvisor__Syscall__SocketPair *)m)->socket1;
        }
        return;
    case 11:  /* execve: no fd of its own */
        return;
    case 13:
        if (ev->sysno != SYS_FCHDIR)
            return;
        break;
    default:
        break;
    }
    if (read_int(m, l->fd, &v)) {
        fi->has_num = true;
        fi->num = v;
    }
}

static struct fdinfo *fd_info(struct evctx *x)
{
    struct fdinfo *fi = x->fd;
    if (x->have_fd)
        return fi;
    x->have_fd = true;
    memset(fi, 0, sizeof(*fi));
    const struct event *ev = x->ev;
    const ProtobufCMessage *m = ev->msg;
    uint16_t type = ev->header.message_type;
    if (type < 6 || type == 35 || type > DECODE_TYPE_MAX)
        return fi;
    const struct msg_layout *l = layout_of(type);
    fd_number(x, m, l, fi);
    switch (type) {
    case 7:
        open_name(x, m, l, fi);
        if (fi->has_name) {
            int64_t flags = 0;
            read_int(m, l->flags, &flags);
            fi->typechar = flags & 0200000 ? 'd' : 'f';   /* O_DIRECTORY */
        }
        return fi;
    case 10: case 24: case 25: case 37:
        socket_name(x, read_bytes(m, l->address), fi);
        break;
    case 12: case 33:
        if (ev->is_exit) {
            int64_t domain = type == 12 ? ((const Gvisor__Syscall__Socket *)m)->domain
                                        : ((const Gvisor__Syscall__SocketPair *)m)->domain;
            fi->typechar = typechar_of_domain(domain);
        }
        return fi;
    case 17: fi->typechar = ev->is_exit ? 'p' : 0; return fi;
    case 20: fi->typechar = ev->is_exit ? 's' : 0; return fi;
    case 22: fi->typechar = ev->is_exit ? 'e' : 0; return fi;
    case 26: fi->typechar = ev->is_exit ? 't' : 0; return fi;
    case 30: fi->typechar = ev->is_exit ? 'i' : 0; return fi;
    case 11: return fi;
    case 13:
        if (ev->sysno != SYS_FCHDIR)
            return fi;
        break;
    default:
        break;
    }
    if (!fi->has_name) {
        const char *p = read_str(m, l->fd_path);
        if (p && p[0]) {
            fi->has_name = true;
            fi->name = p;
            fi->name_len = (uint32_t)strlen(p);
            if (!fi->typechar)
                fi->typechar = type == 13 ? 'd' : typechar_of_path(p);
        }
    }
    return fi;
}

static void fd_ip(struct fdinfo *fi, bool want, struct fval *v)
{
    if (!want || !fi->family)
        return;
    v->kind = FV_IP;
    v->len = fi->family == 4 ? 4 : 16;
    memcpy(v->ip, fi->ip, v->len);
}

static void fd_field(struct evctx *x, uint16_t id, struct fval *v, struct strbuf *buf)
{
    struct fdinfo *fi = fd_info(x);
    bool server = fi->role == ROLE_SERVER_REMOTE || fi->role == ROLE_SERVER_LOCAL;
    bool client = fi->role == ROLE_CLIENT_REMOTE;
    bool remote = fi->role == ROLE_SERVER_REMOTE || fi->role == ROLE_CLIENT_REMOTE;
    bool local = fi->role == ROLE_SERVER_LOCAL;
    switch (id) {
    case F_FD_NAME:
        if (fi->has_name)
            set_str(v, fi->name, fi->name_len);
        return;
    case F_FD_NUM:
        if (fi->has_num)
            set_int(v, fi->num);
        return;
    case F_FD_TYPECHAR:
        if (fi->typechar) {
            strbuf_reset(buf);
            strbuf_putc(buf, fi->typechar);
            set_buf(v, buf);
        }
        return;
    case F_FD_DIRECTORY:
    case F_FD_FILENAME: {
        if (!fi->has_name || (fi->typechar != 'f' && fi->typechar != 'd') || fi->name[0] != '/')
            return;
        if (fi->typechar == 'd') {
            if (id == F_FD_DIRECTORY)
                set_str(v, fi->name, fi->name_len);
            return;
        }
        const char *slash = memrchr(fi->name, '/', fi->name_len);
        size_t dlen = (size_t)(slash - fi->name);
        if (id == F_FD_FILENAME)
            set_str(v, slash + 1, fi->name_len - dlen - 1);
        else if (dlen == 0)
            set_str(v, "/", 1);
        else {
            strbuf_reset(buf);
            strbuf_append(buf, fi->name, dlen);
            set_buf(v, buf);
        }
        return;
    }
    case F_FD_SIP: fd_ip(fi, server, v); return;
    case F_FD_CIP: fd_ip(fi, client, v); return;
    case F_FD_RIP: fd_ip(fi, remote, v); return;
    case F_FD_LIP: fd_ip(fi, local, v); return;
    case F_FD_SPORT: if (server && fi->family) set_uint(v, fi->port); return;
    case F_FD_CPORT: if (client && fi->family) set_uint(v, fi->port); return;
    case F_FD_RPORT: if (remote && fi->family) set_uint(v, fi->port); return;
    case F_FD_LPORT: if (local && fi->family) set_uint(v, fi->port); return;
    default: return;
    }
}

/* ---- evt.* ---- */

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
    set_bool(v, r);
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
    if (type > DECODE_TYPE_MAX || !f->arg[type])
        return;
    const ProtobufCFieldDescriptor *d = f->arg[type];
    const ProtobufCMessage *m = x->ev->msg;
    const void *p = field_ptr(m, d);
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
        set_buf(v, buf);
        return;
    }
    int64_t iv;
    switch (d->type) {
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(const char *const *)p;
        set_str(v, s ? s : "", s ? strlen(s) : 0);
        return;
    }
    case PROTOBUF_C_TYPE_BOOL: set_bool(v, *(const protobuf_c_boolean *)p); return;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: set_uint(v, *(const uint32_t *)p); return;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: set_uint(v, *(const uint64_t *)p); return;
    case PROTOBUF_C_TYPE_MESSAGE:   /* rendered as JSON text; absent when not sent */
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_DOUBLE:
        if (d->type == PROTOBUF_C_TYPE_MESSAGE && !*(const ProtobufCMessage *const *)p)
            return;
        strbuf_reset(buf);
        put_element(buf, d, p);
        set_buf(v, buf);
        return;
    default:
        if (read_int(m, d, &iv))
            set_int(v, iv);
        return;
    }
}

/* ---- proc.* ---- */

static void cmdline(const struct proc *p, struct fval *v, struct strbuf *buf)
{
    if (!p || !p->name[0])
        return;
    strbuf_reset(buf);
    strbuf_puts(buf, p->name);
    if (p->args.len) {
        strbuf_putc(buf, ' ');
        strbuf_append(buf, p->args.data, p->args.len);
    }
    set_buf(v, buf);
}

static const struct proc *ancestor(struct evctx *x, unsigned level)
{
    const struct proc *p = x->proc;
    for (unsigned i = 0; i < level && p; i++) {
        const struct proc *q = proctab_parent(x->pt, p);
        p = q == p ? NULL : q;
    }
    return p;
}

void fields_ancestor(struct evctx *x, const struct fieldref *f, unsigned level, struct fval *out)
{
    out->kind = FV_ABSENT;
    if (level > PROC_ANCESTORS_MAX)
        return;
    const struct proc *a = ancestor(x, level);
    if (!a)
        return;
    if (f->id == F_PROC_ANAME)
        set_cstr(out, a->name);
    else
        set_int(out, a->tgid);
}

static bool is_hex64(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return false;
    return n == 64;
}

static void proc_field(struct evctx *x, const struct fieldref *f, struct fval *v, struct strbuf *buf)
{
    const struct proc *p = x->proc;
    const Gvisor__Common__ContextData *ctx = x->ev->context;
    switch (f->id) {
    case F_PROC_PID:
        if (ctx && ctx->thread_group_id > 0)
            set_int(v, ctx->thread_group_id);
        return;
    case F_PROC_TID:
        if (ctx && ctx->thread_id > 0)
            set_int(v, ctx->thread_id);
        return;
    case F_CONTAINER_ID: {
        const char *id = x->ev->header.message_type == 1 ? ((const Gvisor__Container__Start *)x->ev->msg)->id : NULL;
        if (!id || !id[0])
            id = ctx ? ctx->container_id : NULL;
        if (!id || !id[0])
            return;
        set_str(v, id, is_hex64(id) ? 12 : strlen(id));   /* Falco's short form of a 64-hex id */
        return;
    }
    default:
        break;
    }
    if (!p)
        return;
    const struct proc *parent;
    switch (f->id) {
    case F_PROC_NAME: set_cstr(v, p->name); return;
    case F_PROC_EXEPATH: if (p->exepath.len) set_str(v, p->exepath.data, p->exepath.len); return;
    case F_PROC_ARGS: set_str(v, p->args.len ? p->args.data : "", p->args.len); return;
    case F_PROC_CMDLINE: cmdline(p, v, buf); return;
    case F_PROC_CWD:
        if (!p->cwd.len)
            return;
        if (p->cwd.data[p->cwd.len - 1] == '/') {
            set_str(v, p->cwd.data, p->cwd.len);
            return;
        }
        strbuf_reset(buf);   /* Falco's proc.cwd ends in '/' */
        strbuf_append(buf, p->cwd.data, p->cwd.len);
        strbuf_putc(buf, '/');
        set_buf(v, buf);
        return;
    case F_PROC_DURATION:
        if (p->start_ns) {   /* both times are the sandbox's: saturate, never overflow */
            int64_t d;
            set_int(v, !__builtin_sub_overflow(x->time_ns, p->start_ns, &d) ? d
                       : p->start_ns < 0                                  ? INT64_MAX
                                                                          : INT64_MIN);
        }
        return;
    case F_PROC_PPID:
        if ((parent = proctab_parent(x->pt, p)))
            set_int(v, parent->tgid);
        return;
    case F_PROC_PNAME:
        if ((parent = proctab_parent(x->pt, p)))
            set_cstr(v, parent->name);
        return;
    case F_PROC_PCMDLINE: cmdline(proctab_parent(x->pt, p), v, buf); return;
    case F_PROC_ANAME:
    case F_PROC_APID:
        fields_ancestor(x, f, f->index < 0 ? 1 : (unsigned)f->index, v);
        return;
    case F_USER_UID: if (p->has_creds) set_uint(v, p->uid); return;
    case F_GROUP_GID: if (p->has_creds) set_uint(v, p->gid); return;
    default: return;
    }
}

/* ---- dispatch ---- */

static void extract(struct evctx *x, const struct fieldref *f, struct fval *v, struct strbuf *buf)
{
    const struct event *ev = x->ev;
    v->kind = FV_ABSENT;
    switch (f->id) {
    case F_EVT_TYPE: set_cstr(v, evtype_name(x->cls.type)); return;
    case F_EVT_DIR: set_str(v, x->cls.dir == '<' ? "<" : ">", 1); return;
    case F_EVT_TIME:
        strbuf_reset(buf);
        fields_format_time(buf, x->time_ns, false);
        set_buf(v, buf);
        return;
    case F_EVT_NUM: set_uint(v, x->num); return;
    case F_EVT_DROPPED: set_uint(v, ev->header.dropped_count); return;
    case F_EVT_DROPPED_NEW: set_uint(v, x->dropped_new); return;
    case F_EVT_RES:
        if (!x->cls.has_result)
            return;
        if (ev->errorno == 0) {
            set_str(v, "SUCCESS", 7);
        } else {
            const char *name = ev->errorno > 0 && ev->errorno < 4096 ? strerrorname_np((int)ev->errorno) : NULL;
            strbuf_reset(buf);
            if (name)
                strbuf_puts(buf, name);
            else
                strbuf_put_i64(buf, ev->errorno);
            set_buf(v, buf);
        }
        return;
    case F_EVT_RAWRES:
        if (x->cls.has_result)
            set_int(v, raw_result(ev));
        return;
    case F_EVT_FAILED:
        if (x->cls.has_result)
            set_bool(v, ev->errorno != 0);
        return;
    case F_EVT_IS_OPEN_READ:
    case F_EVT_IS_OPEN_WRITE:
    case F_EVT_IS_OPEN_EXEC: evt_is_open(x, f->id, v); return;
    case F_EVT_ARG: evt_arg(x, f, v, buf); return;
    case F_GVISOR_POINT:
        if (!x->have_point) {
            evtype_point(ev, &x->cls, x->point);
            x->have_point = true;
        }
        set_cstr(v, x->point);
        return;
    case F_FD_NAME: case F_FD_NUM: case F_FD_DIRECTORY: case F_FD_FILENAME: case F_FD_TYPECHAR:
    case F_FD_SIP: case F_FD_SPORT: case F_FD_CIP: case F_FD_CPORT: case F_FD_RIP: case F_FD_RPORT:
    case F_FD_LIP: case F_FD_LPORT:
        fd_field(x, f->id, v, buf);
        return;
    default:
        proc_field(x, f, v, buf);
        return;
    }
}

const struct fval *fields_get(struct evctx *x, const struct fieldref *f)
{
    struct field_slot *s = &x->slots[f->slot];
    if (s->gen != x->gen) {
        extract(x, f, &s->v, &s->buf);
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
    case FV_IP: put_ip(out, v->len == 4 ? 4 : 6, v->ip); return;
    }
}
