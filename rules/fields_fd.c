/* fields_fd.c - fd.*: the file or socket an event creates or works on,
 * from the message's own fields (pathname, fd, fd_path, address) and the
 * process's cwd. gVisor keeps no fd table for us: a name comes from the
 * event itself, or from fd_path when runsc sends it.
 */
#include <arpa/inet.h>
#include <string.h>

#include "fields_class.h"
#include "gvisor/sentry.pb-c.h"
#include "gvisor/syscall.pb-c.h"

enum {
    F_FD_NAME = FIELD_BASE_FD, F_FD_NUM, F_FD_DIRECTORY, F_FD_FILENAME, F_FD_TYPECHAR,
    F_FD_SIP, F_FD_SPORT, F_FD_CIP, F_FD_CPORT, F_FD_RIP, F_FD_RPORT, F_FD_LIP, F_FD_LPORT,
};

enum { ROLE_NONE, ROLE_SERVER_REMOTE, ROLE_CLIENT_REMOTE, ROLE_SERVER_LOCAL };

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
    if (strncmp(p, "/memfd:", 7) == 0)
        return 'm';   /* gVisor names a memfd /memfd:NAME (deleted) */
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
    const char *path = fields_read_str(m, l->pathname);
    if (!path || !path[0])
        return;
    const char *dir = NULL;
    if (path[0] != '/') {
        int64_t dirfd = -100;
        if (x->cls.type == SYS_OPENAT || x->cls.type == SYS_OPENAT2)
            fields_read_int(m, l->fd, &dirfd);
        if (dirfd == -100) {
            const Gvisor__Common__ContextData *ctx = x->ev->context;
            if (ctx && ctx->cwd && ctx->cwd[0])
                dir = ctx->cwd;
            else if (x->proc && x->proc->cwd.len)
                dir = x->proc->cwd.data;
        } else {
            const char *fdp = fields_read_str(m, l->fd_path);
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

static void put_endpoint(struct strbuf *b, uint8_t family, const uint8_t *ip, uint16_t port)
{
    fields_put_ip(b, family, ip);
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

/* fd.num: the fd the event creates (its result) or works on. */
static void fd_number(struct evctx *x, const ProtobufCMessage *m, const struct msg_layout *l, struct fdinfo *fi)
{
    const struct event *ev = x->ev;
    int64_t rawres = fields_rawres(ev);
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
        } else if (fields_read_int(m, l->fd, &v)) {
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
    if (fields_read_int(m, l->fd, &v)) {
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
    if (type == 35) {   /* sentry/mmap: the mapped file (fields_exec.c has its layer) */
        const char *path = ((const Gvisor__Sentry__MmapInfo *)m)->mapped_path;
        if (path && path[0]) {
            fi->has_name = true;
            fi->name = path;
            fi->name_len = (uint32_t)strlen(path);
            fi->typechar = strncmp(path, "/memfd:", 7) == 0 ? 'm' : 'f';
        }
        return fi;
    }
    if (type < 6 || type > DECODE_TYPE_MAX)
        return fi;
    const struct msg_layout *l = fields_layout(type);
    fd_number(x, m, l, fi);
    switch (type) {
    case 7:
        open_name(x, m, l, fi);
        if (fi->has_name) {
            int64_t flags = 0;
            fields_read_int(m, l->flags, &flags);
            fi->typechar = flags & 0200000 ? 'd' : 'f';   /* O_DIRECTORY */
        }
        return fi;
    case 10: case 24: case 25: case 37:
        socket_name(x, fields_read_bytes(m, l->address), fi);
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
        const char *p = fields_read_str(m, l->fd_path);
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

static void fd_extract(struct evctx *x, const struct fieldref *f, struct fval *v, struct strbuf *buf)
{
    uint16_t id = f->id;
    struct fdinfo *fi = fd_info(x);
    bool server = fi->role == ROLE_SERVER_REMOTE || fi->role == ROLE_SERVER_LOCAL;
    bool client = fi->role == ROLE_CLIENT_REMOTE;
    bool remote = fi->role == ROLE_SERVER_REMOTE || fi->role == ROLE_CLIENT_REMOTE;
    bool local = fi->role == ROLE_SERVER_LOCAL;
    switch (id) {
    case F_FD_NAME:
        if (fi->has_name)
            fv_str(v, fi->name, fi->name_len);
        return;
    case F_FD_NUM:
        if (fi->has_num)
            fv_int(v, fi->num);
        return;
    case F_FD_TYPECHAR:
        if (fi->typechar) {
            strbuf_reset(buf);
            strbuf_putc(buf, fi->typechar);
            fv_buf(v, buf);
        }
        return;
    case F_FD_DIRECTORY:
    case F_FD_FILENAME: {
        if (!fi->has_name || (fi->typechar != 'f' && fi->typechar != 'd') || fi->name[0] != '/')
            return;
        if (fi->typechar == 'd') {
            if (id == F_FD_DIRECTORY)
                fv_str(v, fi->name, fi->name_len);
            return;
        }
        const char *slash = memrchr(fi->name, '/', fi->name_len);
        size_t dlen = (size_t)(slash - fi->name);
        if (id == F_FD_FILENAME)
            fv_str(v, slash + 1, fi->name_len - dlen - 1);
        else if (dlen == 0)
            fv_str(v, "/", 1);
        else {
            strbuf_reset(buf);
            strbuf_append(buf, fi->name, dlen);
            fv_buf(v, buf);
        }
        return;
    }
    case F_FD_SIP: fd_ip(fi, server, v); return;
    case F_FD_CIP: fd_ip(fi, client, v); return;
    case F_FD_RIP: fd_ip(fi, remote, v); return;
    case F_FD_LIP: fd_ip(fi, local, v); return;
    case F_FD_SPORT: if (server && fi->family) fv_uint(v, fi->port); return;
    case F_FD_CPORT: if (client && fi->family) fv_uint(v, fi->port); return;
    case F_FD_RPORT: if (remote && fi->family) fv_uint(v, fi->port); return;
    case F_FD_LPORT: if (local && fi->family) fv_uint(v, fi->port); return;
    default: return;
    }
}

/* A relative path is joined to the cwd; the name needs fd_path where
 * gVisor has no other source for it. */
#define NAME_CTX RULES_CTX_CWD
static const struct field_def fd_defs[] = {
    {"fd.name", FT_STR, FA_NONE, F_FD_NAME, NAME_CTX, RULES_OPT_FD_PATH, 0, FIELD_REPORTED},
    {"fd.num", FT_INT, FA_NONE, F_FD_NUM, 0, 0, 0, FIELD_REPORTED},
    {"fd.directory", FT_STR, FA_NONE, F_FD_DIRECTORY, NAME_CTX, RULES_OPT_FD_PATH, 0, FIELD_REPORTED},
    {"fd.filename", FT_STR, FA_NONE, F_FD_FILENAME, NAME_CTX, RULES_OPT_FD_PATH, 0, FIELD_REPORTED},
    {"fd.typechar", FT_STR, FA_NONE, F_FD_TYPECHAR, 0, RULES_OPT_FD_PATH, 0, FIELD_REPORTED},
    {"fd.sip", FT_IP, FA_NONE, F_FD_SIP, 0, 0, 0, FIELD_REPORTED},
    {"fd.sport", FT_UINT, FA_NONE, F_FD_SPORT, 0, 0, 0, FIELD_REPORTED},
    {"fd.cip", FT_IP, FA_NONE, F_FD_CIP, 0, 0, 0, FIELD_REPORTED},
    {"fd.cport", FT_UINT, FA_NONE, F_FD_CPORT, 0, 0, 0, FIELD_REPORTED},
    {"fd.rip", FT_IP, FA_NONE, F_FD_RIP, 0, 0, 0, FIELD_REPORTED},
    {"fd.rport", FT_UINT, FA_NONE, F_FD_RPORT, 0, 0, 0, FIELD_REPORTED},
    {"fd.lip", FT_IP, FA_NONE, F_FD_LIP, 0, 0, 0, FIELD_REPORTED},
    {"fd.lport", FT_UINT, FA_NONE, F_FD_LPORT, 0, 0, 0, FIELD_REPORTED},
};

const struct field_class fields_fd_class = {
    "fd", fd_defs, sizeof(fd_defs) / sizeof(fd_defs[0]), fd_extract,
};
