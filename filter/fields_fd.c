/* fields_fd.c - fd.*: the file or socket an event creates or works on,
 * from the message's own fields (pathname, fd, fd_path, address), the
 * process's cwd, and the sockets the process table remembers (socket,
 * accept, connect, bind, dup exits: proctab.h). gVisor keeps no fd table
 * for us: a name comes from the event itself, from fd_path when runsc sends
 * it, or from a remembered socket's address.
 */
#include <arpa/inet.h>
#include <string.h>

#include "fields_class.h"
#include "gvisor/sentry.pb-c.h"
#include "gvisor/syscall.pb-c.h"

enum {
    F_FD_NAME = FIELD_BASE_FD, F_FD_NUM, F_FD_DIRECTORY, F_FD_FILENAME, F_FD_TYPECHAR,
    F_FD_SIP, F_FD_SPORT, F_FD_CIP, F_FD_CPORT, F_FD_RIP, F_FD_RPORT, F_FD_LIP, F_FD_LPORT,
    F_FD_TYPE, F_FD_L4PROTO, F_FD_SOCKFAMILY, F_FD_IP, F_FD_PORT, F_FD_NET, F_FD_CNET, F_FD_SNET, F_FD_LNET,
    F_FD_RNET, F_FD_CONNECTED, F_FD_NAME_CHANGED, F_FD_NAMERAW,
    F_FD_CIP_NAME, F_FD_SIP_NAME, F_FD_LIP_NAME, F_FD_RIP_NAME,
    F_FD_UID, F_FD_CONTAINERNAME, F_FD_CONTAINERDIRECTORY,
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

/* What the event's own message says. */
static void fd_collect(struct evctx *x, struct fdinfo *fi)
{
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
        return;
    }
    if (type < 6 || type > DECODE_TYPE_MAX)
        return;
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
        return;
    case 10: case 24: case 25: case 37:
        socket_name(x, fields_read_bytes(m, l->address), fi);
        if (type == 10 && ev->is_exit) {
            /* libs: a connect that succeeded or is in progress connects */
            fi->connected = ev->errorno == 0 || ev->errorno == 115;
            fi->name_changed = fi->connected && fi->family;
        } else if (type == 25 && ev->is_exit) {
            fi->connected = ev->errorno == 0;
        }
        break;
    case 12: case 33:
        if (ev->is_exit) {
            const Gvisor__Syscall__Socket *k = (const Gvisor__Syscall__Socket *)m;
            const Gvisor__Syscall__SocketPair *kp = (const Gvisor__Syscall__SocketPair *)m;
            int64_t domain = type == 12 ? k->domain : kp->domain;
            fi->typechar = typechar_of_domain(domain);
            fi->domain = domain > 0 && domain < 256 ? (uint8_t)domain : 0;
            fi->type = (uint8_t)((type == 12 ? k->type : kp->type) & 0xf);
            fi->protocol = (uint16_t)(type == 12 ? k->protocol : kp->protocol);
            fi->connected = type == 33;
        }
        return;
    case 17: fi->typechar = ev->is_exit ? 'p' : 0; return;
    case 20: fi->typechar = ev->is_exit ? 's' : 0; return;
    case 22: fi->typechar = ev->is_exit ? 'e' : 0; return;
    case 26: fi->typechar = ev->is_exit ? 't' : 0; return;
    case 30: fi->typechar = ev->is_exit ? 'i' : 0; return;
    case 11: return;
    case 13:
        if (ev->sysno != SYS_FCHDIR)
            return;
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
}

/* A name that says nothing of the connection: gVisor's "socket:[N]" for any
 * socket, or its "[err: FD not found]" when the fd is gone (a close exit). */
static bool is_socket_path(const struct fdinfo *fi)
{
    return fi->has_name && ((fi->name_len >= 7 && memcmp(fi->name, "socket:", 7) == 0) ||
                            (fi->name_len >= 5 && memcmp(fi->name, "[err:", 5) == 0));
}

/* What the process table remembers of the fd when it is a socket: its
 * kind, and the address an earlier connect, accept or bind gave it when
 * this event names none (dup, read, write, close of a socket). */
static void fd_merge_socket(struct evctx *x, struct fdinfo *fi)
{
    if (!fi->has_num || !x->proc)
        return;
    const struct psock *s = proctab_socket(x->proc, fi->num);
    if (!s)
        return;
    fi->sock = s;
    if (!fi->domain) {
        fi->domain = s->domain;
        fi->type = s->type;
        fi->protocol = s->protocol;
    }
    if (!fi->typechar || fi->typechar == 'o')
        fi->typechar = typechar_of_domain(s->domain);
    if (fi->connected < 0)
        fi->connected = s->connected;
    if (fi->family || !s->family)
        return;
    fi->family = s->family;
    fi->port = s->port;
    memcpy(fi->ip, s->ip, sizeof(fi->ip));
    fi->role = s->role == PSOCK_LOCAL ? ROLE_SERVER_LOCAL : s->role == PSOCK_REMOTE_CLIENT ? ROLE_CLIENT_REMOTE
                                                                                          : ROLE_SERVER_REMOTE;
    if (fi->has_name && !is_socket_path(fi))
        return;
    /* the name as the event that gave the address rendered it */
    static const uint8_t zero[16];
    struct strbuf *b = x->fdname;
    strbuf_reset(b);
    fi->has_name = false;
    if (fi->role == ROLE_SERVER_LOCAL) {
        put_endpoint(b, fi->family, fi->ip, fi->port);
    } else if (fi->role == ROLE_CLIENT_REMOTE) {
        put_endpoint(b, fi->family, fi->ip, fi->port);
        strbuf_puts(b, "->");
        put_endpoint(b, fi->family, zero, 0);
    } else {
        put_endpoint(b, fi->family, zero, 0);
        strbuf_puts(b, "->");
        put_endpoint(b, fi->family, fi->ip, fi->port);
    }
    if (!b->failed)
        name_from_buffer(b, fi);
}

static struct fdinfo *fd_info(struct evctx *x)
{
    struct fdinfo *fi = x->fd;
    if (x->have_fd)
        return fi;
    x->have_fd = true;
    memset(fi, 0, sizeof(*fi));
    fi->connected = -1;
    fd_collect(x, fi);
    fd_merge_socket(x, fi);
    return fi;
}

/* libs' fd.type for a type character (fdinfo.cpp get_typestring); "<NA>"
 * for an fd of a kind it does not name. */
static const char *type_name(char c)
{
    switch (c) {
    case 'f': return "file";
    case 'd': return "directory";
    case '4': return "ipv4";
    case '6': return "ipv6";
    case 'u': return "unix";
    case 'p': return "pipe";
    case 'e': return "event";
    case 's': return "signalfd";
    case 'l': return "eventpoll";
    case 'i': return "inotify";
    case 't': return "timerfd";
    case 'n': return "netlink";
    case 'm': return "memfd";
    case 'P': return "pidfd";
    default: return "<NA>";
    }
}

/* libs' l4 protocol of an inet socket from socket(2)'s arguments
 * (parsers.cpp parse_socket_exit); NULL when it does not know one. */
static const char *l4proto_name(const struct fdinfo *fi)
{
    if (fi->domain != 2 && fi->domain != 10)
        return NULL;
    bool raw = fi->type == 3;
    switch (fi->protocol) {
    case 6: return raw ? "raw" : "tcp";
    case 17: return raw ? "raw" : "udp";
    case 1: return raw ? "raw" : "icmp";
    case 255: return "raw";
    case 0: return fi->type == 1 ? "tcp" : fi->type == 2 ? "udp" : NULL;
    default: return NULL;
    }
}

/* An fd known to be something other than a socket: a file, a pipe... */
static bool is_other_fd(const struct fdinfo *fi)
{
    return !fi->sock && fi->typechar && strchr("fdpesltimP", fi->typechar);
}

/* The raw path an open was given, doubled slashes made one (libs'
 * fd.nameraw); other file fds: their name. */
static void nameraw(struct evctx *x, const struct fdinfo *fi, struct fval *v, struct strbuf *buf)
{
    const struct event *ev = x->ev;
    const char *raw = NULL;
    size_t len = 0;
    if (ev->header.message_type == 7) {
        raw = fields_read_str(ev->msg, fields_layout(7)->pathname);
        len = raw ? strlen(raw) : 0;
        if (!len)
            return;
    } else if (fi->has_name && (fi->typechar == 'f' || fi->typechar == 'd')) {
        raw = fi->name;
        len = fi->name_len;
    } else {
        if (fi->has_num)
            fv_str(v, "", 0);
        return;
    }
    strbuf_reset(buf);
    for (size_t i = 0; i < len; i++)
        if (!(raw[i] == '/' && i > 0 && raw[i - 1] == '/'))
            strbuf_putc(buf, raw[i]);
    fv_buf(v, buf);
}

static void fd_ip(struct fdinfo *fi, bool want, struct fval *v)
{
    if (!want || !fi->family)
        return;
    v->kind = FV_IP;
    v->len = fi->family == 4 ? 4 : 16;
    memcpy(v->ip, fi->ip, v->len);
}

static bool has_fd(const struct fdinfo *fi) { return fi->has_num || fi->has_name; }

/* fd.directory: a directory fd's name, a file's text before its last '/'
 * ("/" for one at the root); false for anything else. */
static bool fd_directory(const struct fdinfo *fi, const char **dir, size_t *len)
{
    if (!fi->has_name || (fi->typechar != 'f' && fi->typechar != 'd') || fi->name[0] != '/')
        return false;
    if (fi->typechar == 'd') {
        *dir = fi->name;
        *len = fi->name_len;
        return true;
    }
    size_t dlen = (size_t)((const char *)memrchr(fi->name, '/', fi->name_len) - fi->name);
    *dir = dlen ? fi->name : "/";
    *len = dlen ? dlen : 1;
    return true;
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
    case F_FD_UID: {   /* libs: the thread id, then the fd number, as text */
        const Gvisor__Common__ContextData *ctx = x->ev->context;
        if (fi->has_num && ctx && ctx->thread_id > 0) {
            strbuf_reset(buf);
            strbuf_put_i64(buf, ctx->thread_id);
            strbuf_put_i64(buf, fi->num);
            fv_buf(v, buf);
        }
        return;
    }
    case F_FD_CONTAINERNAME: {   /* libs: container.id ':' fd.name */
        struct fval cid = {0};
        fields_container_id(x, &cid);
        if (fi->has_name && cid.kind == FV_STR) {
            strbuf_reset(buf);
            strbuf_append(buf, cid.s, cid.len);
            strbuf_putc(buf, ':');
            strbuf_append(buf, fi->name, fi->name_len);
            fv_buf(v, buf);
        }
        return;
    }
    case F_FD_CONTAINERDIRECTORY: {   /* libs: container.id ':' fd.directory */
        struct fval cid = {0};
        const char *dir;
        size_t dlen;
        fields_container_id(x, &cid);
        if (cid.kind == FV_STR && fd_directory(fi, &dir, &dlen)) {
            strbuf_reset(buf);
            strbuf_append(buf, cid.s, cid.len);
            strbuf_putc(buf, ':');
            strbuf_append(buf, dir, dlen);
            fv_buf(v, buf);
        }
        return;
    }
    case F_FD_DIRECTORY: {
        const char *dir;
        size_t dlen;
        if (fd_directory(fi, &dir, &dlen)) {
            strbuf_reset(buf);
            strbuf_append(buf, dir, dlen);
            fv_buf(v, buf);
        }
        return;
    }
    case F_FD_FILENAME: {
        if (!fi->has_name || fi->typechar != 'f' || fi->name[0] != '/')
            return;
        const char *slash = memrchr(fi->name, '/', fi->name_len);
        size_t dlen = (size_t)(slash - fi->name);
        fv_str(v, slash + 1, fi->name_len - dlen - 1);
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
    /* gVisor tells one side of a connection per event: fd.ip and fd.port
     * (client or server in libs) are that side, fd.net its network */
    case F_FD_IP: case F_FD_NET: fd_ip(fi, true, v); return;
    case F_FD_PORT: if (fi->family) fv_uint(v, fi->port); return;
    case F_FD_SNET: fd_ip(fi, server, v); return;
    case F_FD_CNET: fd_ip(fi, client, v); return;
    case F_FD_RNET: fd_ip(fi, remote, v); return;
    case F_FD_LNET: fd_ip(fi, local, v); return;
    case F_FD_TYPE:
        if (fi->typechar)
            fv_cstr(v, type_name(fi->typechar));
        return;
    case F_FD_L4PROTO: {
        const char *p = l4proto_name(fi);
        if (p || has_fd(fi))
            fv_cstr(v, p ? p : "<NA>");   /* libs: an fd of no known protocol says so as text */
        return;
    }
    case F_FD_SOCKFAMILY:
        if (fi->domain == 2 || fi->domain == 10 || fi->typechar == '4' || fi->typechar == '6')
            fv_str(v, "ip", 2);
        else if (fi->domain == 1 || fi->typechar == 'u')
            fv_str(v, "unix", 4);
        return;
    case F_FD_CONNECTED:
        if (fi->connected >= 0)
            fv_bool(v, fi->connected);
        else if (has_fd(fi) && is_other_fd(fi))
            fv_bool(v, false);
        return;
    case F_FD_NAME_CHANGED:
        if (has_fd(fi))
            fv_bool(v, fi->name_changed);
        return;
    case F_FD_NAMERAW: nameraw(x, fi, v, buf); return;
    default: return;   /* fd.*ip.name: no resolver sees gVisor's addresses */
    }
}

/* A relative path is joined to the cwd; the name needs fd_path where
 * gVisor has no other source for it. */
#define NAME_CTX RULES_CTX_CWD
/* What the process table remembers of a socket, for events that name only
 * its fd: the process's entry and its socket calls. */
#define P FIELD_CTX_PROCESS
#define SOCKETS FIELD_PROC_SOCKETS
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
    {"fd.type", FT_STR, FA_NONE, F_FD_TYPE, P, RULES_OPT_FD_PATH, SOCKETS, FIELD_REPORTED},
    {"fd.l4proto", FT_STR, FA_NONE, F_FD_L4PROTO, P, 0, SOCKETS, FIELD_REPORTED},
    {"fd.sockfamily", FT_STR, FA_NONE, F_FD_SOCKFAMILY, P, 0, SOCKETS, FIELD_REPORTED},
    {"fd.ip", FT_IP, FA_NONE, F_FD_IP, P, 0, SOCKETS, FIELD_REPORTED},
    {"fd.port", FT_UINT, FA_NONE, F_FD_PORT, P, 0, SOCKETS, FIELD_REPORTED},
    {"fd.net", FT_IP, FA_NONE, F_FD_NET, P, 0, SOCKETS, FIELD_REPORTED},
    {"fd.cnet", FT_IP, FA_NONE, F_FD_CNET, P, 0, SOCKETS, FIELD_REPORTED},
    {"fd.snet", FT_IP, FA_NONE, F_FD_SNET, P, 0, SOCKETS, FIELD_REPORTED},
    {"fd.lnet", FT_IP, FA_NONE, F_FD_LNET, P, 0, SOCKETS, FIELD_REPORTED},
    {"fd.rnet", FT_IP, FA_NONE, F_FD_RNET, P, 0, SOCKETS, FIELD_REPORTED},
    {"fd.connected", FT_BOOL, FA_NONE, F_FD_CONNECTED, P, 0, SOCKETS, FIELD_REPORTED},
    {"fd.name_changed", FT_BOOL, FA_NONE, F_FD_NAME_CHANGED, 0, 0, 0, FIELD_REPORTED},
    {"fd.nameraw", FT_STR, FA_NONE, F_FD_NAMERAW, 0, RULES_OPT_FD_PATH, 0, FIELD_REPORTED},
    /* libs resolves these through DNS replies it has seen; nothing here does */
    {"fd.cip.name", FT_STR, FA_NONE, F_FD_CIP_NAME, 0, 0, 0, FIELD_NEVER},
    {"fd.sip.name", FT_STR, FA_NONE, F_FD_SIP_NAME, 0, 0, 0, FIELD_NEVER},
    {"fd.lip.name", FT_STR, FA_NONE, F_FD_LIP_NAME, 0, 0, 0, FIELD_NEVER},
    {"fd.rip.name", FT_STR, FA_NONE, F_FD_RIP_NAME, 0, 0, 0, FIELD_NEVER},
    {"fd.uid", FT_STR, FA_NONE, F_FD_UID, RULES_CTX_THREAD_ID, 0, 0, FIELD_REPORTED},
    {"fd.containername", FT_STR, FA_NONE, F_FD_CONTAINERNAME, NAME_CTX | RULES_CTX_CONTAINER_ID, RULES_OPT_FD_PATH, 0,
     FIELD_REPORTED},
    {"fd.containerdirectory", FT_STR, FA_NONE, F_FD_CONTAINERDIRECTORY, NAME_CTX | RULES_CTX_CONTAINER_ID,
     RULES_OPT_FD_PATH, 0, FIELD_REPORTED},
};
#undef P
#undef SOCKETS

const struct field_class fields_fd_class = {
    "fd", fd_defs, sizeof(fd_defs) / sizeof(fd_defs[0]), fd_extract,
};

const struct fdinfo *fields_fd_info(struct evctx *x) { return fd_info(x); }
