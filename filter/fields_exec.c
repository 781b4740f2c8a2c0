/* fields_exec.c - what gVisor's 2026 releases tell of a process and its
 * image, as Falco's fields where libs has them (proc.is_exe_upper_layer,
 * proc.exe_ino, proc.stdin.type, proc.tty...) and gvisor.* where it has
 * none (the pipe peers, the exec session, a standard stream's addresses):
 *
 *  - the binary's facts and the standard streams come from the process's
 *    last sentry/execve (binary_info, fd_info, pipe_proc_info), kept in the
 *    process table and copied to its children (proctab.h);
 *  - gvisor.exec_session from the event's context (is_exec_session);
 *  - fd.is_upper_layer, fd.is_lower_layer, fd.ino from sentry/mmap, the
 *    executable mapping of a file.
 *
 * Each definition's release is the gVisor release that first sends what it
 * reads (rules/README.md), for `rules check` and `gvisor-config`.
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "fields_class.h"
#include "gvisor/sentry.pb-c.h"

enum {
    F_IS_EXE_UPPER = FIELD_BASE_EXEC, F_IS_EXE_LOWER, F_IS_EXE_MEMFD, F_EXE_INO, F_EXE_INO_CTIME,
    F_EXE_INO_CTIME_DURATION, F_IS_EXE_WRITABLE, F_TTY,
    /* proc.stdin.type, .name, gvisor.stdin.lip, .lport, .rip, .rport; then stdout, stderr */
    F_STREAM_FIRST,
    F_STREAM_LAST = F_STREAM_FIRST + 3 * 6 - 1,
    F_PIPE_IN_NAME, F_PIPE_IN_EXEPATH, F_PIPE_IN_PID, F_PIPE_OUT_NAME, F_PIPE_OUT_EXEPATH, F_PIPE_OUT_PID,
    F_EXEC_SESSION,
    F_FD_IS_UPPER, F_FD_IS_LOWER, F_FD_INO,
    F_EXE_INO_MTIME,
};

enum { S_TYPE, S_NAME, S_LIP, S_LPORT, S_RIP, S_RPORT };

/* ---- the binary ---- */

static void image_field(const struct proc *p, uint16_t id, struct fval *v)
{
    const struct proc_image *im = &p->image;
    switch (id) {
    case F_IS_EXE_UPPER: if (im->known & PROC_IMAGE_UPPER) fv_bool(v, im->upper); return;
    case F_IS_EXE_LOWER: if (im->known & PROC_IMAGE_LOWER) fv_bool(v, im->lower); return;
    case F_IS_EXE_MEMFD: if (im->known & PROC_IMAGE_MEMFD) fv_bool(v, im->memfd); return;
    case F_IS_EXE_WRITABLE: if (im->known & PROC_IMAGE_WRITABLE) fv_bool(v, im->writable); return;
    /* inode 0 and time 0 mean none, as in libs */
    case F_EXE_INO: if (im->ino && im->ino <= INT64_MAX) fv_int(v, (int64_t)im->ino); return;
    case F_EXE_INO_CTIME: if (im->ctime_ns > 0) fv_uint(v, (uint64_t)im->ctime_ns); return;
    case F_EXE_INO_CTIME_DURATION:
        /* libs: the process's clone time minus the binary's ctime; a binary
         * changed after the process started has none here (libs wraps) */
        if (im->ctime_ns > 0 && p->start_ns > im->ctime_ns)
            fv_uint(v, (uint64_t)(p->start_ns - im->ctime_ns));
        return;
    default: return;
    }
}

/* ---- the standard streams ---- */

/* libs' fd type names (sinsp_fdinfo::get_typestring) from the mode, the
 * socket's family and gVisor's name for the descriptor. */
static const char *stream_type(const struct proc_stream *st)
{
    const char *path = st->path.len ? st->path.data : "";
    if (strncmp(path, "/memfd:", 7) == 0)
        return "memfd";
    static const struct {
        const char *prefix, *type;
    } anon[] = {
        {"anon_inode:[eventfd]", "event"}, {"anon_inode:[signalfd]", "signalfd"},
        {"anon_inode:[eventpoll]", "eventpoll"}, {"anon_inode:[inotify]", "inotify"},
        {"anon_inode:inotify", "inotify"}, {"anon_inode:[timerfd]", "timerfd"}, {"anon_inode:[pidfd]", "pidfd"},
    };
    for (size_t i = 0; i < sizeof(anon) / sizeof(anon[0]); i++)
        if (strncmp(path, anon[i].prefix, strlen(anon[i].prefix)) == 0)
            return anon[i].type;
    switch (st->mode & S_IFMT) {
    case S_IFREG:
    case S_IFCHR:
    case S_IFBLK: return "file";   /* libs: a device is a file too */
    case S_IFDIR: return "directory";
    case S_IFIFO: return "pipe";
    case S_IFSOCK:
        switch (st->family) {
        case AF_INET: return "ipv4";
        case AF_INET6: return "ipv6";
        case AF_UNIX: return "unix";
        case AF_NETLINK: return "netlink";
        default: return NULL;   /* a socket whose family gVisor did not say */
        }
    default:
        if (strncmp(path, "pipe:", 5) == 0)
            return "pipe";
        return NULL;
    }
}

static void put_side(struct strbuf *b, uint8_t len, const uint8_t *ip, uint16_t port)
{
    static const uint8_t zero[16];
    fields_put_ip(b, len == 16 ? 6 : 4, len ? ip : zero);
    strbuf_putc(b, ':');
    strbuf_put_u64(b, port);
}

/* libs' name of a socket, local->remote (what a connect makes: client to
 * server; gVisor does not say which side connected), else gVisor's name. */
static void stream_name(const struct proc_stream *st, struct fval *v, struct strbuf *buf)
{
    if ((st->family == AF_INET || st->family == AF_INET6) && (st->lip_len || st->rip_len)) {
        strbuf_reset(buf);
        uint8_t len = st->lip_len ? st->lip_len : st->rip_len;
        put_side(buf, len, st->lip, st->lport);
        strbuf_puts(buf, "->");
        put_side(buf, len, st->rip, st->rport);
        fv_buf(v, buf);
        return;
    }
    if (st->path.len)
        fv_str(v, st->path.data, st->path.len);
}

static void fv_ip(struct fval *v, uint8_t len, const uint8_t *ip)
{
    if (len != 4 && len != 16)
        return;
    v->kind = FV_IP;
    v->len = len;
    memcpy(v->ip, ip, len);
}

static void stream_field(const struct proc *p, uint16_t id, struct fval *v, struct strbuf *buf)
{
    const struct proc_exec_io *io = p->io;
    if (!io || !io->has_streams)
        return;
    unsigned k = (unsigned)(id - F_STREAM_FIRST);
    const struct proc_stream *st = &io->stream[k / 6];
    if (!st->known)
        return;
    switch (k % 6) {
    case S_TYPE: fv_cstr(v, stream_type(st)); return;
    case S_NAME: stream_name(st, v, buf); return;
    case S_LIP: fv_ip(v, st->lip_len, st->lip); return;
    case S_LPORT: if (st->lip_len) fv_uint(v, st->lport); return;
    case S_RIP: fv_ip(v, st->rip_len, st->rip); return;
    case S_RPORT: if (st->rip_len) fv_uint(v, st->rport); return;
    default: return;
    }
}

/* Linux's number of a terminal gVisor names (new_encode_dev of /dev/pts/N:
 * major 136, /dev/ttyN: 4, /dev/tty 5:0, /dev/console 5:1), 0 for another
 * name, -1 for a host character device (runsc passes a terminal as
 * host:[N], /dev/null the same: which it is, gVisor does not say). */
static int64_t tty_of(const struct proc_stream *st)
{
    const char *path = st->path.len ? st->path.data : "";
    unsigned major = 0, minor = 0;
    const char *digits = NULL;
    if (strncmp(path, "/dev/pts/", 9) == 0) {
        major = 136;
        digits = path + 9;
    } else if (strncmp(path, "/dev/tty", 8) == 0 && path[8] >= '0' && path[8] <= '9') {
        major = 4;
        digits = path + 8;
    } else if (strcmp(path, "/dev/tty") == 0 || strcmp(path, "/dev/console") == 0) {
        major = 5;
        minor = path[5] == 'c';
    } else if (strncmp(path, "host:[", 6) == 0 && (st->mode & S_IFMT) == S_IFCHR) {
        return -1;
    } else {
        return 0;
    }
    if (digits) {
        if (!digits[0] || strlen(digits) > 6)
            return 0;
        for (const char *d = digits; *d; d++) {
            if (*d < '0' || *d > '9')
                return 0;
            minor = minor * 10 + (unsigned)(*d - '0');
        }
    }
    return (int64_t)((minor & 0xff) | (major << 8) | ((uint64_t)(minor & ~0xffu) << 12));
}

/* proc.tty: the terminal on a standard stream; 0 when none is one; absent
 * when they are not known, or one is a host device that may be one. */
static void tty_field(const struct proc *p, struct fval *v)
{
    const struct proc_exec_io *io = p->io;
    if (!io || !io->has_streams)
        return;
    for (int k = 0; k < 3; k++) {
        if (!io->stream[k].known)
            continue;
        int64_t t = tty_of(&io->stream[k]);
        if (t < 0)
            return;
        if (t > 0) {
            fv_uint(v, (uint64_t)t);
            return;
        }
    }
    fv_uint(v, 0);
}

/* ---- the pipe peers ---- */

/* The peer as gVisor's scsdk ProcessTracker resolves it: the process the
 * table has for its id and start, named by its own exec (a forked copy of
 * the parent that has not executed yet runs no program of its own). */
static void pipe_field(struct evctx *x, const struct proc *p, uint16_t id, struct fval *v)
{
    const struct proc_exec_io *io = p->io;
    if (!io || !io->has_pipes)
        return;
    bool in = id <= F_PIPE_IN_PID;
    const struct proc_peer *peer = in ? &io->pipe_in : &io->pipe_out;
    if (!peer->tgid)
        return;
    unsigned which = (unsigned)(id - (in ? F_PIPE_IN_NAME : F_PIPE_OUT_NAME));
    if (which == 2) {
        fv_int(v, peer->tgid);
        return;
    }
    const struct proc *q = proctab_lookup(x->pt, p->conn_id, peer->tgid, peer->start_ns);
    if (!q || !q->own_image)
        return;
    if (which == 0)
        fv_cstr(v, q->name);
    else if (q->exepath.len)
        fv_str(v, q->exepath.data, q->exepath.len);
}

/* ---- sentry/mmap's file ---- */

static void mmap_field(const struct event *ev, uint16_t id, struct fval *v)
{
    if (ev->header.message_type != 35)
        return;
    const Gvisor__Sentry__MmapInfo *m = (const Gvisor__Sentry__MmapInfo *)ev->msg;
    if (!m->mapped_path || !m->mapped_path[0])
        return;   /* an anonymous mapping: no file */
    switch (id) {
    case F_FD_IS_UPPER: fv_bool(v, m->overlayfs_upper); return;
    case F_FD_IS_LOWER: fv_bool(v, m->overlayfs_lower); return;
    case F_FD_INO: if (m->mapped_ino && m->mapped_ino <= INT64_MAX) fv_int(v, (int64_t)m->mapped_ino); return;
    default: return;
    }
}

static void exec_extract(struct evctx *x, const struct fieldref *f, struct fval *v, struct strbuf *buf)
{
    uint16_t id = f->id;
    if (id == F_EXEC_SESSION) {
        if (x->ev->context)
            fv_bool(v, x->ev->context->is_exec_session);
        return;
    }
    if (id >= F_FD_IS_UPPER) {
        mmap_field(x->ev, id, v);
        return;
    }
    const struct proc *p = x->proc;
    if (!p)
        return;
    if (id >= F_STREAM_FIRST && id <= F_STREAM_LAST)
        stream_field(p, id, v, buf);
    else if (id >= F_PIPE_IN_NAME && id <= F_PIPE_OUT_PID)
        pipe_field(x, p, id, v);
    else if (id == F_TTY)
        tty_field(p, v);
    else
        image_field(p, id, v);
}

#define P FIELD_CTX_PROCESS
#define BIN(name, type, id) {name, type, FA_NONE, id, P, 0, FIELD_PROC_BINARY, FIELD_NEWER_RUNSC}
#define STREAM(s, i) \
    {"proc." s ".type", FT_STR, FA_NONE, F_STREAM_FIRST + (i) * 6 + S_TYPE, P, 0, FIELD_PROC_STDIO, FIELD_NEWER_RUNSC}, \
    {"proc." s ".name", FT_STR, FA_NONE, F_STREAM_FIRST + (i) * 6 + S_NAME, P, 0, FIELD_PROC_STDIO, FIELD_NEWER_RUNSC}, \
    {"gvisor." s ".lip", FT_IP, FA_NONE, F_STREAM_FIRST + (i) * 6 + S_LIP, P, 0, FIELD_PROC_STDIO, FIELD_NEWER_RUNSC}, \
    {"gvisor." s ".lport", FT_UINT, FA_NONE, F_STREAM_FIRST + (i) * 6 + S_LPORT, P, 0, FIELD_PROC_STDIO, \
     FIELD_NEWER_RUNSC}, \
    {"gvisor." s ".rip", FT_IP, FA_NONE, F_STREAM_FIRST + (i) * 6 + S_RIP, P, 0, FIELD_PROC_STDIO, FIELD_NEWER_RUNSC}, \
    {"gvisor." s ".rport", FT_UINT, FA_NONE, F_STREAM_FIRST + (i) * 6 + S_RPORT, P, 0, FIELD_PROC_STDIO, \
     FIELD_NEWER_RUNSC}
#define PIPE(name, type, id) {name, type, FA_NONE, id, P, 0, FIELD_PROC_PIPES | FIELD_PROC_IMAGE, FIELD_NEWER_RUNSC}
static const struct field_def exec_defs[] = {
    BIN("proc.is_exe_upper_layer", FT_BOOL, F_IS_EXE_UPPER),
    BIN("proc.is_exe_lower_layer", FT_BOOL, F_IS_EXE_LOWER),
    BIN("proc.is_exe_from_memfd", FT_BOOL, F_IS_EXE_MEMFD),
    BIN("proc.exe_ino", FT_INT, F_EXE_INO),
    BIN("proc.exe_ino.ctime", FT_UINT, F_EXE_INO_CTIME),
    BIN("proc.exe_ino.ctime_duration_proc_start", FT_UINT, F_EXE_INO_CTIME_DURATION),
    /* ExecveInfo has the binary's ctime, never its mtime */
    {"proc.exe_ino.mtime", FT_UINT, FA_NONE, F_EXE_INO_MTIME, 0, 0, 0, FIELD_NEVER},
    /* binary_mode, uid and gid are runsc 2022-12's binary_info */
    {"proc.is_exe_writable", FT_BOOL, FA_NONE, F_IS_EXE_WRITABLE, P, 0, FIELD_PROC_BINARY, FIELD_REPORTED},
    {"proc.tty", FT_UINT, FA_NONE, F_TTY, P, 0, FIELD_PROC_STDIO, FIELD_NEWER_RUNSC},
    STREAM("stdin", 0),
    STREAM("stdout", 1),
    STREAM("stderr", 2),
    PIPE("gvisor.pipe_input.name", FT_STR, F_PIPE_IN_NAME),
    PIPE("gvisor.pipe_input.exepath", FT_STR, F_PIPE_IN_EXEPATH),
    PIPE("gvisor.pipe_input.pid", FT_INT, F_PIPE_IN_PID),
    PIPE("gvisor.pipe_output.name", FT_STR, F_PIPE_OUT_NAME),
    PIPE("gvisor.pipe_output.exepath", FT_STR, F_PIPE_OUT_EXEPATH),
    PIPE("gvisor.pipe_output.pid", FT_INT, F_PIPE_OUT_PID),
    {"gvisor.exec_session", FT_BOOL, FA_NONE, F_EXEC_SESSION, RULES_CTX_IS_EXEC_SESSION, 0, 0, FIELD_NEWER_RUNSC},
    {"fd.is_upper_layer", FT_BOOL, FA_NONE, F_FD_IS_UPPER, 0, 0, 0, FIELD_NEWER_RUNSC},
    {"fd.is_lower_layer", FT_BOOL, FA_NONE, F_FD_IS_LOWER, 0, 0, 0, FIELD_NEWER_RUNSC},
    {"fd.ino", FT_INT, FA_NONE, F_FD_INO, 0, 0, 0, FIELD_NEWER_RUNSC},
};
#undef P
#undef BIN
#undef STREAM
#undef PIPE

/* The gVisor release each field first has a value from. */
unsigned fields_exec_release(const struct field_def *d)
{
    if (d < exec_defs || d >= exec_defs + sizeof(exec_defs) / sizeof(exec_defs[0]))
        return RULES_RUNSC_RELEASE_COUNT - 1;
    switch (d->id) {
    case F_IS_EXE_UPPER:
    case F_EXE_INO: return RULES_RUNSC_20260714;
    case F_IS_EXE_LOWER:
    case F_EXE_INO_CTIME:
    case F_EXE_INO_CTIME_DURATION:
    case F_EXEC_SESSION: return RULES_RUNSC_20260721;
    case F_IS_EXE_MEMFD:
    case F_FD_IS_UPPER:
    case F_FD_IS_LOWER: return RULES_RUNSC_20260727;
    case F_FD_INO: return RULES_RUNSC_20260714;
    case F_IS_EXE_WRITABLE: return RULES_RUNSC_2022_12;
    default:
        if (d->id >= F_PIPE_IN_NAME && d->id <= F_PIPE_OUT_PID)
            return RULES_RUNSC_20260817;
        return RULES_RUNSC_20260721;   /* the standard streams, proc.tty */
    }
}

const struct field_class fields_exec_class = {
    "exec", exec_defs, sizeof(exec_defs) / sizeof(exec_defs[0]), exec_extract,
};
