#include "event_line.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "decode.h"
#include "gvisor/sentry.pb-c.h"
#include "gvisor/syscall.pb-c.h"
#include "linux_names.h"
#include "term_color.h"
#include "trace_names.h"

/* ---- text from a sandbox ---- */

/* Length of the valid UTF-8 sequence at s (its code point in *cp), or 0:
 * no overlongs, surrogates or code points past U+10FFFF. */
static size_t utf8_char(const unsigned char *s, size_t len, uint32_t *cp)
{
    size_t n = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (n == 0 || n > len)
        return 0;
    uint32_t c = n == 1 ? s[0] : s[0] & (0x7f >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        c = c << 6 | (s[i] & 0x3f);
    }
    static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < least[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return n;
}

/* Code points a terminal acts on or that reorder what it shows. */
static bool is_control(uint32_t c)
{
    return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x200e || c == 0x200f || c == 0x2028 || c == 0x2029 ||
           (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) || c == 0xfeff;
}

static bool needs_quotes(const char *s, size_t len)
{
    return len == 0 || memchr(s, ' ', len) || memchr(s, '"', len);
}

static void put_escaped_char(struct strbuf *out, uint32_t c)
{
    static const char short_escape[] = {['\n'] = 'n', ['\t'] = 't', ['\r'] = 'r'};
    if (c < sizeof(short_escape) && short_escape[c])
        strbuf_printf(out, "\\%c", short_escape[c]);
    else if (c < 0x80)
        strbuf_printf(out, "\\x%02x", c);
    else
        strbuf_printf(out, "\\u{%04x}", c);
}

/* text escaped, cut at max bytes; in quotes when quotable says so and it
 * needs them (or is cut). */
static void escaped(struct strbuf *out, const char *text, size_t len, size_t max, bool quotable)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t shown = len;
    if (shown > max) {   /* cut on a character boundary */
        shown = max;
        while (shown > 0 && (s[shown] & 0xc0) == 0x80)
            shown--;
    }
    bool quoted = quotable && (shown < len || needs_quotes(text, len));
    if (quoted)
        strbuf_putc(out, '"');
    for (size_t i = 0; i < shown;) {
        uint32_t c;
        size_t n = utf8_char(s + i, shown - i, &c);
        if (n == 0) {
            strbuf_printf(out, "\\x%02x", s[i]);
            i++;
        } else if (is_control(c)) {
            put_escaped_char(out, c);
            i += n;
        } else {
            if (c == '\\' || (quoted && c == '"'))
                strbuf_putc(out, '\\');
            strbuf_append(out, s + i, n);
            i += n;
        }
    }
    if (quoted)
        strbuf_putc(out, '"');
    if (shown < len)
        strbuf_printf(out, "...[+%zu bytes]", len - shown);
}

void event_line_text(struct strbuf *out, const char *text, size_t len)
{
    escaped(out, text, len, EVENT_LINE_VALUE_MAX, true);
}

void event_line_plain(struct strbuf *out, const char *text, size_t len, size_t max)
{
    escaped(out, text, len, max, false);
}

void event_line_json(struct strbuf *out, const char *json, size_t len)
{
    const unsigned char *s = (const unsigned char *)json;
    for (size_t i = 0; i < len;) {
        uint32_t c;
        size_t n = utf8_char(s + i, len - i, &c);
        if (n == 0)
            n = 1;   /* not UTF-8: passed on as it is */
        else if (is_control(c)) {
            strbuf_printf(out, "\\u%04x", c);
            i += n;
            continue;
        }
        strbuf_append(out, s + i, n);
        i += n;
    }
}

static void text(struct strbuf *out, const char *s)
{
    event_line_text(out, s ? s : "", s ? strlen(s) : 0);
}

/* ---- fields, by name, through the message's descriptor ---- */

static const void *field_at(const ProtobufCMessage *m, const char *name, ProtobufCType type, bool repeated)
{
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(m->descriptor, name);
    if (!f || f->type != type || (f->label == PROTOBUF_C_LABEL_REPEATED) != repeated)
        return NULL;
    return (const char *)m + f->offset;
}

static const char *str_field(const ProtobufCMessage *m, const char *name)
{
    const char *const *p = field_at(m, name, PROTOBUF_C_TYPE_STRING, false);
    return p && *p ? *p : "";
}

/* A scalar field as a signed number (uint64 above INT64_MAX stays
 * unsigned in *u); false when m has no such scalar field. */
static bool scalar(const ProtobufCFieldDescriptor *f, const void *p, int64_t *i, uint64_t *u, bool *is_unsigned)
{
    *is_unsigned = false;
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32: case PROTOBUF_C_TYPE_ENUM:
        *i = *(const int32_t *)p;
        return true;
    case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
        *i = *(const int64_t *)p;
        return true;
    case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32:
        *i = *(const uint32_t *)p;
        return true;
    case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64:
        *u = *(const uint64_t *)p;
        *is_unsigned = true;
        return true;
    case PROTOBUF_C_TYPE_BOOL:
        *i = *(const protobuf_c_boolean *)p != 0;
        return true;
    default:
        return false;
    }
}

static int64_t int_field(const ProtobufCMessage *m, const char *name)
{
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(m->descriptor, name);
    int64_t i = 0;
    uint64_t u = 0;
    bool is_unsigned;
    if (!f || f->label == PROTOBUF_C_LABEL_REPEATED || !scalar(f, (const char *)m + f->offset, &i, &u, &is_unsigned))
        return 0;
    return is_unsigned ? (int64_t)u : i;
}

/* " a b c" for a repeated string, stopping near EVENT_LINE_MAX. */
static void strings(struct strbuf *out, size_t line_start, const ProtobufCMessage *m, const char *name)
{
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(m->descriptor, name);
    if (!f || f->type != PROTOBUF_C_TYPE_STRING || f->label != PROTOBUF_C_LABEL_REPEATED)
        return;
    size_t n = *(const size_t *)((const char *)m + f->quantifier_offset);
    char *const *v = *(char *const *const *)((const char *)m + f->offset);
    for (size_t i = 0; i < n; i++) {
        if (out->len - line_start > EVENT_LINE_MAX) {
            strbuf_printf(out, " ...[+%zu more]", n - i);
            return;
        }
        strbuf_putc(out, ' ');
        text(out, v[i]);
    }
}

/* ---- what happened ---- */

/* x86-64 syscall numbers of the calls the typed messages carry (one type
 * covers several: SYSCALL_READ is read, pread64, readv...), and a few raw
 * ones. */
static const struct {
    uint16_t sysno;
    const char *name;
} syscall_names[] = {
    {0, "read"}, {1, "write"}, {2, "open"}, {3, "close"}, {9, "mmap"}, {17, "pread64"}, {18, "pwrite64"},
    {19, "readv"}, {20, "writev"}, {22, "pipe"}, {32, "dup"}, {33, "dup2"}, {39, "getpid"}, {41, "socket"},
    {42, "connect"}, {43, "accept"}, {49, "bind"}, {50, "listen"}, {53, "socketpair"}, {56, "clone"},
    {57, "fork"}, {58, "vfork"}, {59, "execve"}, {63, "uname"}, {72, "fcntl"}, {80, "chdir"}, {81, "fchdir"},
    {85, "creat"}, {101, "ptrace"}, {105, "setuid"}, {106, "setgid"}, {112, "setsid"}, {117, "setresuid"},
    {119, "setresgid"}, {161, "chroot"}, {253, "inotify_init"}, {254, "inotify_add_watch"},
    {255, "inotify_rm_watch"}, {257, "openat"}, {282, "signalfd"}, {283, "timerfd_create"}, {284, "eventfd"},
    {286, "timerfd_settime"}, {287, "timerfd_gettime"}, {288, "accept4"}, {289, "signalfd4"}, {290, "eventfd2"},
    {292, "dup3"}, {293, "pipe2"}, {294, "inotify_init1"}, {295, "preadv"}, {296, "pwritev"}, {302, "prlimit64"},
    {322, "execveat"}, {327, "preadv2"}, {328, "pwritev2"},
};

/* The call's name: by syscall number, else the type's own in lower case
 * (SYSCALL_OPEN: "open"). */
static void call_name(struct strbuf *out, const struct event *ev)
{
    if (ev->has_sysno)
        for (size_t i = 0; i < sizeof(syscall_names) / sizeof(syscall_names[0]); i++)
            if (syscall_names[i].sysno == ev->sysno) {
                strbuf_puts(out, syscall_names[i].name);
                return;
            }
    const char *type = decode_type_name(ev->header.message_type);
    if (ev->header.message_type == 6 || !type) {   /* raw, or a type this build lacks */
        strbuf_printf(out, "syscall %" PRIu64, ev->sysno);
        return;
    }
    if (strncmp(type, "SYSCALL_", 8) == 0)
        type += 8;
    for (; *type; type++)
        strbuf_putc(out, (char)(*type >= 'A' && *type <= 'Z' ? *type - 'A' + 'a' : *type));
}

/* A sockaddr as the network view shows it: 10.0.0.1:80, [::1]:443,
 * unix:/path, unix:@abstract; anything else as family and hex. */
static void address(struct strbuf *out, const ProtobufCBinaryData *a)
{
    const uint8_t *b = a->data;
    size_t len = a->len;
    unsigned family = len >= 2 ? (unsigned)(b[0] | b[1] << 8) : 0;
    unsigned port = len >= 4 ? (unsigned)(b[2] << 8 | b[3]) : 0;
    char ip[INET6_ADDRSTRLEN];
    if (family == AF_INET && len >= 8 && inet_ntop(AF_INET, b + 4, ip, sizeof(ip))) {
        strbuf_printf(out, "%s:%u", ip, port);
    } else if (family == AF_INET6 && len >= 24 && inet_ntop(AF_INET6, b + 8, ip, sizeof(ip))) {
        strbuf_printf(out, "[%s]:%u", ip, port);
    } else if (family == AF_UNIX) {
        strbuf_puts(out, "unix:");
        if (len <= 2) {
            strbuf_puts(out, "(unnamed)");
            return;
        }
        bool abstract = b[2] == 0;
        const char *path = (const char *)b + 2 + abstract;
        size_t n = len - 2 - abstract;
        const char *nul = memchr(path, 0, n);
        if (abstract)
            strbuf_putc(out, '@');
        event_line_text(out, path, nul ? (size_t)(nul - path) : n);
    } else {
        const char *name = linux_family_name(family);
        strbuf_printf(out, "%s%s", name ? name : "family ", name ? " " : "");
        if (!name)
            strbuf_printf(out, "%u ", family);
        size_t shown = len < 16 ? len : 16;
        for (size_t i = 0; i < shown; i++)
            strbuf_printf(out, "%02x", b[i]);
        if (shown < len)
            strbuf_printf(out, "...[+%zu bytes]", len - shown);
    }
}

static void render_open(struct strbuf *out, const ProtobufCMessage *m)
{
    const char *path = str_field(m, "pathname"), *dir = str_field(m, "fd_path");
    uint32_t flags = (uint32_t)int_field(m, "flags");
    strbuf_putc(out, ' ');
    text(out, path);
    strbuf_putc(out, ' ');
    linux_open_flags(out, flags);
    if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
        strbuf_printf(out, " 0%" PRIo64, (uint64_t)int_field(m, "mode"));
    if (path[0] != '/' && dir[0]) {
        strbuf_puts(out, " at ");
        text(out, dir);
    }
}

static void render_sockaddr_call(struct strbuf *out, const ProtobufCMessage *m)
{
    const ProtobufCBinaryData *a = field_at(m, "address", PROTOBUF_C_TYPE_BYTES, false);
    strbuf_putc(out, ' ');
    if (a && a->len)
        address(out, a);
    else
        strbuf_printf(out, "fd %" PRId64, int_field(m, "fd"));
}

/* A file descriptor as strace -y shows it: 3</etc/passwd> (the path gVisor
 * gave it, when it did: "[err: FD not found]" and the like say it had none,
 * gvisor pkg/sentry/syscalls/linux/points.go). */
static void fd_with_path(struct strbuf *out, int64_t fd, const char *path)
{
    strbuf_printf(out, "%" PRId64, fd);
    if (path[0] && strncmp(path, "[err: ", 6) != 0) {
        strbuf_putc(out, '<');
        text(out, path);
        strbuf_putc(out, '>');
    }
}

/* name=value for each scalar and non-empty string field but the common
 * ones (context_data, exit and sysno are shown elsewhere); fd_path goes
 * with the first descriptor (fd, old_fd). */
static void render_fields(struct strbuf *out, const ProtobufCMessage *m)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    const char *fd_path = str_field(m, "fd_path");
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        const void *p = (const char *)m + f->offset;
        int64_t v = 0;
        uint64_t u = 0;
        bool is_unsigned;
        size_t name_len = strlen(f->name);
        if (f->label == PROTOBUF_C_LABEL_REPEATED || strcmp(f->name, "sysno") == 0 ||
            strcmp(f->name, "fd_path") == 0)
            continue;
        if (f->type == PROTOBUF_C_TYPE_STRING && *(const char *const *)p && **(const char *const *)p) {
            strbuf_printf(out, " %s=", f->name);
            text(out, *(const char *const *)p);
        } else if (scalar(f, p, &v, &u, &is_unsigned)) {
            if (is_unsigned) {
                strbuf_printf(out, " %s=%" PRIu64, f->name, u);
            } else if (name_len >= 2 && strcmp(f->name + name_len - 2, "fd") == 0) {
                strbuf_printf(out, " %s=", f->name);
                fd_with_path(out, v, fd_path);
                fd_path = "";
            } else {
                strbuf_printf(out, " %s=%" PRId64, f->name, v);
            }
        }
    }
}

/* The message's fd with its fd_path. */
static void message_fd(struct strbuf *out, const ProtobufCMessage *m)
{
    fd_with_path(out, int_field(m, "fd"), str_field(m, "fd_path"));
}

/* " /usr/bin/cat cat /etc/passwd": a program and its argv. */
static void path_and_argv(struct strbuf *out, size_t line_start, const ProtobufCMessage *m, const char *path)
{
    strbuf_putc(out, ' ');
    text(out, str_field(m, path));
    strings(out, line_start, m, "argv");
}

/* read 3</etc/passwd> 4096 @64: descriptor, count, offset when given. */
static void render_read_write(struct strbuf *out, const ProtobufCMessage *m)
{
    strbuf_putc(out, ' ');
    message_fd(out, m);
    strbuf_printf(out, " %" PRIu64, (uint64_t)int_field(m, "count"));
    if (int_field(m, "has_offset"))
        strbuf_printf(out, " @%" PRId64, int_field(m, "offset"));
}

/* The colour the call of ev is marked with (exec, connect, open), or NULL. */
static const char *call_color(const struct event *ev)
{
    switch (ev->header.message_type) {
    case 3: case 11: return TERM_COLOR_EXEC;      /* SENTRY_EXEC, SYSCALL_EXECVE */
    case 10: return TERM_COLOR_CONNECT;           /* SYSCALL_CONNECT */
    case 7: return TERM_COLOR_OPEN;               /* SYSCALL_OPEN */
    default: return NULL;
    }
}

/* ---- gVisor's 2026 messages ---- */

static void ip_port(struct strbuf *out, const Gvisor__Common__SocketIp *ip)
{
    char text[INET6_ADDRSTRLEN];
    /* gVisor sends the port as its network-order bytes read little-endian */
    unsigned port = (unsigned)((ip->port & 0xff) << 8 | (ip->port >> 8 & 0xff));
    if ((ip->ip.len == 4 && inet_ntop(AF_INET, ip->ip.data, text, sizeof(text))) ||
        (ip->ip.len == 16 && inet_ntop(AF_INET6, ip->ip.data, text, sizeof(text))))
        strbuf_printf(out, ip->ip.len == 16 ? "[%s]:%u" : "%s:%u", text, ip->port <= 0xffff ? port : 0);
    else
        strbuf_puts(out, "?");
}

/* A pipe's other end: name[pid] as its context gave them. */
static void peer(struct strbuf *out, const Gvisor__Sentry__PipeProcInfo *p)
{
    const Gvisor__Common__ContextData *c = p->context_data;
    if (c && c->process_name && c->process_name[0])
        text(out, c->process_name);
    strbuf_printf(out, "[%d]", c ? c->thread_group_id : 0);
}

/* " stdin=tcp:10.0.0.2:40000->192.0.2.9:4444", " stdout=pipe->sh[3]": a
 * standard stream that is a socket with an address, or a pipe to a peer. */
static void stream(struct strbuf *out, const char *name, const Gvisor__Common__FdInfo *fd,
                   const Gvisor__Sentry__PipeProcInfo *pipe_peer, bool input)
{
    if (pipe_peer) {
        strbuf_printf(out, " %s=pipe%s", name, input ? "<-" : "->");
        peer(out, pipe_peer);
        return;
    }
    const Gvisor__Common__SocketInfo *s = fd ? fd->socket : NULL;
    if (!s)
        return;
    bool inet = s->family == AF_INET || s->family == AF_INET6;
    const char *family = linux_family_name(s->family);
    strbuf_printf(out, " %s=", name);
    if (!inet)
        strbuf_printf(out, "%s:", family ? family : "socket");
    else
        strbuf_puts(out, "socket:");
    if (inet && (s->local || s->remote)) {
        if (s->local)
            ip_port(out, s->local);
        strbuf_puts(out, "->");
        if (s->remote)
            ip_port(out, s->remote);
    } else {
        text(out, fd->path);
    }
}

/* exec PATH ARGV [upper] [lower] [memfd] stdin=... stdout=...: the image's
 * layer and the standard streams, where runsc sends them. */
static void render_sentry_exec(struct strbuf *out, size_t line_start, const ProtobufCMessage *m)
{
    const Gvisor__Sentry__ExecveInfo *e = (const Gvisor__Sentry__ExecveInfo *)m;
    strbuf_puts(out, "exec");
    path_and_argv(out, line_start, m, "binary_path");
    if (e->binary_overlayfs_upper)
        strbuf_puts(out, " [upper]");
    if (e->binary_overlayfs_lower)
        strbuf_puts(out, " [lower]");
    if (e->binary_in_memfd)
        strbuf_puts(out, " [memfd]");
    stream(out, "stdin", e->stdin, e->pipe_input_proc, true);
    stream(out, "stdout", e->stdout, e->pipe_output_proc, false);
    stream(out, "stderr", e->stderr, NULL, false);
}

/* sentry/mmap: an executable mapping of a file. */
static void render_sentry_mmap(struct strbuf *out, const ProtobufCMessage *m)
{
    const Gvisor__Sentry__MmapInfo *mm = (const Gvisor__Sentry__MmapInfo *)m;
    strbuf_puts(out, "mmap exec ");
    if (mm->mapped_path && mm->mapped_path[0])
        text(out, mm->mapped_path);
    else
        strbuf_puts(out, "(anonymous)");
    if (mm->overlayfs_upper)
        strbuf_puts(out, " [upper]");
    if (mm->overlayfs_lower)
        strbuf_puts(out, " [lower]");
    if (mm->is_initial_mmap)
        strbuf_puts(out, " [initial]");
}

/* mmap 3</lib.so> 8192 PROT_READ|PROT_EXEC MAP_PRIVATE @4096 */
static void render_mmap(struct strbuf *out, const ProtobufCMessage *m)
{
    const Gvisor__Syscall__Mmap *mm = (const Gvisor__Syscall__Mmap *)m;
    strbuf_putc(out, ' ');
    if (mm->flags & MAP_ANONYMOUS)
        strbuf_puts(out, "anonymous");
    else
        fd_with_path(out, mm->fd, mm->fd_path ? mm->fd_path : "");
    strbuf_printf(out, " %" PRIu64 " ", mm->length);
    trace_mmap_prot(out, mm->prot);
    strbuf_putc(out, ' ');
    trace_mmap_flags(out, mm->flags);
    if (mm->offset)
        strbuf_printf(out, " @%" PRId64, mm->offset);
}

/* ptrace PTRACE_ATTACH pid=42 */
static void render_ptrace(struct strbuf *out, const ProtobufCMessage *m)
{
    const Gvisor__Syscall__Ptrace *p = (const Gvisor__Syscall__Ptrace *)m;
    const char *name = trace_ptrace_request_name(p->request);
    if (name)
        strbuf_printf(out, " %s", name);
    else
        strbuf_printf(out, " request=%" PRId64, p->request);
    strbuf_printf(out, " pid=%" PRId32, p->pid);
}

/* listen 0.0.0.0:4444 backlog=128 */
static void render_listen(struct strbuf *out, const ProtobufCMessage *m)
{
    render_sockaddr_call(out, m);
    strbuf_printf(out, " backlog=%" PRId32, ((const Gvisor__Syscall__Listen *)m)->backlog);
}

/* The message's part of the line, after the call's name. */
static void render_what(struct strbuf *out, size_t line_start, const struct event *ev)
{
    const ProtobufCMessage *m = ev->msg;
    switch (ev->header.message_type) {
    case 1:   /* CONTAINER_START */
        strbuf_puts(out, "start ");
        text(out, str_field(m, "id"));
        strings(out, line_start, m, "args");
        return;
    case 2: {   /* SENTRY_CLONE: a thread of the caller's own group, or a new process */
        int64_t group = int_field(m, "created_thread_group_id");
        bool thread = ev->context && ev->context->thread_group_id == group;
        strbuf_printf(out, "clone %s %" PRId64, thread ? "thread" : "process",
                      thread ? int_field(m, "created_thread_id") : group);
        return;
    }
    case 3:   /* SENTRY_EXEC */
        render_sentry_exec(out, line_start, m);
        return;
    case 35:   /* SENTRY_MMAP */
        render_sentry_mmap(out, m);
        return;
    case 4: case 5:   /* SENTRY_EXIT_NOTIFY_PARENT, SENTRY_TASK_EXIT */
        strbuf_printf(out, "%s %" PRId64, ev->header.message_type == 4 ? "exit" : "task exit",
                      int_field(m, "exit_status"));
        return;
    default:
        break;
    }
    call_name(out, ev);
    switch (ev->header.message_type) {
    case 6:   /* SYSCALL_RAW */
        for (int i = 1; i <= 6; i++) {
            char arg[8];
            snprintf(arg, sizeof(arg), "arg%d", i);
            strbuf_printf(out, " 0x%" PRIx64, (uint64_t)int_field(m, arg));
        }
        return;
    case 7:
        render_open(out, m);
        return;
    case 8:   /* CLOSE */
        strbuf_putc(out, ' ');
        message_fd(out, m);
        return;
    case 9: case 34:   /* READ, WRITE */
        render_read_write(out, m);
        return;
    case 13: case 21:   /* CHDIR (fchdir: a descriptor), CHROOT */
        strbuf_putc(out, ' ');
        if (str_field(m, "pathname")[0])
            text(out, str_field(m, "pathname"));
        else
            message_fd(out, m);
        return;
    case 10: case 24: case 25:   /* CONNECT, BIND, ACCEPT */
        render_sockaddr_call(out, m);
        return;
    case 36:
        render_mmap(out, m);
        return;
    case 37:
        render_listen(out, m);
        return;
    case 38:
        render_ptrace(out, m);
        return;
    case 11:   /* EXECVE */
        path_and_argv(out, line_start, m, "pathname");
        return;
    case 12: {   /* SOCKET */
        const char *family = linux_family_name(int_field(m, "domain"));
        if (family)
            strbuf_printf(out, " %s type=%" PRId64 " protocol=%" PRId64, family, int_field(m, "type"),
                          int_field(m, "protocol"));
        else
            render_fields(out, m);
        return;
    }
    default:
        render_fields(out, m);
        return;
    }
}

static void exit_suffix(struct strbuf *out, const struct event *ev)
{
    if (!ev->is_exit)
        return;
    const char *name = ev->errorno ? linux_errno_name(ev->errorno) : NULL;
    if (name)
        strbuf_printf(out, " = %s", name);
    else if (ev->errorno)
        strbuf_printf(out, " = errno %" PRId64, ev->errorno);
    else if (ev->header.message_type == 36)   /* mmap: an address */
        strbuf_printf(out, " = 0x%" PRIx64, (uint64_t)ev->result);
    else
        strbuf_printf(out, " = %" PRId64, ev->result);
}

/* ---- the line ---- */

void event_line_render(struct strbuf *out, const struct event *ev)
{
    event_line_render_color(out, ev, false);
}

/* Wraps the word at out[at] (the call's name) in color. */
static void color_word(struct strbuf *out, size_t at, const char *color)
{
    if (out->failed || at >= out->len)
        return;
    size_t end = at;
    while (end < out->len && out->data[end] != ' ' && out->data[end] != '\n')
        end++;
    size_t tail = out->len - end, color_len = strlen(color), reset_len = strlen(TERM_COLOR_RESET);
    /* Room first, then the bytes moved: the word's tail and the word. */
    for (size_t i = 0; i < color_len + reset_len; i++)
        strbuf_putc(out, ' ');
    if (out->failed)
        return;
    memmove(out->data + end + color_len + reset_len, out->data + end, tail);
    memmove(out->data + at + color_len, out->data + at, end - at);
    memcpy(out->data + at, color, color_len);
    memcpy(out->data + end + color_len, TERM_COLOR_RESET, reset_len);
}

void event_line_render_color(struct strbuf *out, const struct event *ev, bool color)
{
    event_line_render_named(out, ev, color, NULL, 0);
}

void event_line_render_named(struct strbuf *out, const struct event *ev, bool color, const char *names,
                             size_t names_len)
{
    size_t start = out->len;
    const Gvisor__Common__ContextData *c = ev->context;
    strbuf_put_utc(out, c && c->time_ns ? c->time_ns : ev->recv_ns, 3);
    strbuf_putc(out, ' ');
    if (c && c->container_id && c->container_id[0])
        text(out, c->container_id);
    else
        strbuf_putc(out, '-');
    if (names && names_len) {
        strbuf_putc(out, '(');
        event_line_text(out, names, names_len);
        strbuf_putc(out, ')');
    }
    strbuf_putc(out, ' ');
    bool named = c && c->process_name && c->process_name[0];
    if (named)
        text(out, c->process_name);
    int pid = c ? (c->thread_group_id ? c->thread_group_id : c->thread_id) : 0;   /* the thread's, if no group's */
    if (pid)
        strbuf_printf(out, "[%d]", pid);
    else if (!named)
        strbuf_putc(out, '-');
    strbuf_putc(out, ' ');
    if (ev->status != DECODE_OK || !ev->msg) {
        const char *type = decode_type_name(ev->header.message_type);
        strbuf_puts(out, "undecoded ");
        if (type)
            strbuf_puts(out, type);
        else
            strbuf_printf(out, "type %u", ev->header.message_type);
        strbuf_printf(out, " (%s, %" PRIu32 " bytes)\n",
                      ev->status == DECODE_UNKNOWN_TYPE ? "unknown type" : "did not decode", ev->raw_len);
        return;
    }
    size_t what = out->len;
    render_what(out, start, ev);
    exit_suffix(out, ev);
    strbuf_putc(out, '\n');
    const char *mark = color ? call_color(ev) : NULL;
    if (mark)
        color_word(out, what, mark);
}

void event_line_say_option(const char *option, const char *value, const char *why)
{
    struct strbuf line = {0};
    strbuf_printf(&line, "  %s '", option);
    event_line_plain(&line, value, strlen(value), 200);
    strbuf_printf(&line, "': %s\n", why);
    if (!line.failed)
        fputs(line.data, stderr);
    strbuf_free(&line);
}
