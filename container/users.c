/* users.c - a container's /etc/passwd and /etc/group, read from beneath its
 * root filesystem on the host.
 *
 * The container owns these files: a compromised one writes what it likes
 * there, a symlink to the host's /etc/shadow or a FIFO included. So each is
 * opened beneath the root with openat2(RESOLVE_IN_ROOT) (a symlink, ".."
 * included, resolves inside the root as the container would see it, never
 * out of it; magic links refused), non-blocking, and read only when it is a
 * regular file of at most CONTAINER_USERS_MAX_BYTES. A kernel without
 * openat2 gets the same guarantee from a walk that follows no symlink at
 * all. Lines are parsed as libs parses them (userspace/libsinsp/user.cpp):
 * seven fields for passwd, four for group, ids whole decimal numbers that
 * fit 32 bits, anything else skipped; at most CONTAINER_USERS_MAX_ENTRIES
 * entries, each field at most CONTAINER_USER_FIELD_MAX bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

static int open_beneath(int rootfd, const char *dir, const char *file)
{
    char path[64];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    struct open_how how = {.flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
                           .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
    int fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
    if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
        return fd;
    /* No openat2 (an old kernel, or a seccomp filter refusing it): follow
     * no symlink at all, each step. */
    int d = openat(rootfd, dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (d < 0)
        return -1;
    fd = openat(d, file, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
    int saved = errno;
    close(d);
    errno = saved;
    return fd;
}

struct slurp {
    char *data;
    size_t len;
    struct stat st;
};

/* 1 read, 0 missing, -1 refused (counted by the caller). */
static int slurp_file(int rootfd, const char *file, struct slurp *out)
{
    memset(out, 0, sizeof(*out));
    int fd = open_beneath(rootfd, "etc", file);
    if (fd < 0)
        return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
    int rc = -1;
    if (fstat(fd, &out->st) == 0 && S_ISREG(out->st.st_mode) && out->st.st_size >= 0 &&
        (uint64_t)out->st.st_size <= CONTAINER_USERS_MAX_BYTES) {
        /* What fstat said, at most: a file growing meanwhile is read to there. */
        size_t want = (size_t)out->st.st_size;
        out->data = malloc(want + 1);
        rc = out->data ? 1 : -1;
        while (out->data && out->len < want) {
            ssize_t n = read(fd, out->data + out->len, want - out->len);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                rc = -1;
            if (n <= 0)
                break;
            out->len += (size_t)n;
        }
    }
    close(fd);
    if (rc != 1) {
        free(out->data);
        out->data = NULL;
        out->len = 0;
    }
    return rc;
}

/* Splits line into up to max ':' fields (the last takes the rest). */
static size_t split_fields(const char *line, size_t len, const char **f, size_t *flen, size_t max)
{
    size_t n = 0, start = 0;
    while (n < max) {
        const char *colon = memchr(line + start, ':', len - start);
        if (!colon || n + 1 == max) {
            f[n] = line + start;
            flen[n++] = len - start;
            break;
        }
        f[n] = line + start;
        flen[n++] = (size_t)(colon - (line + start));
        start = (size_t)(colon - line) + 1;
    }
    return n;
}

static bool parse_u32(const char *s, size_t len, uint32_t *out)
{
    if (len == 0 || len > 10)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

typedef void (*line_fn)(struct record *r, const char *line, size_t len, void *acc);

static void each_line(struct record *r, const struct slurp *f, line_fn fn, void *acc)
{
    size_t at = 0;
    while (at < f->len) {
        const char *nl = memchr(f->data + at, '\n', f->len - at);
        size_t end = nl ? (size_t)(nl - f->data) : f->len;
        size_t len = end - at;
        if (len && f->data[at + len - 1] == '\r')
            len--;
        fn(r, f->data + at, len, acc);
        at = end + 1;
    }
}

/* Entries with their line number, so that sorting by id keeps the first
 * line of an id (qsort is not stable). */
struct user_line {
    struct container_user u;
    size_t seq;
};
struct group_line {
    struct container_group g;
    size_t seq;
};

struct acc {
    void *items;
    size_t n, cap, size;
};

static void *acc_next(struct record *r, struct acc *a)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 32;
        void *n = realloc(a->items, cap * a->size);
        if (!n) {
            r->alloc_failed = true;
            return NULL;
        }
        a->items = n;
        a->cap = cap;
    }
    return (char *)a->items + a->n * a->size;
}

static bool field_ok(const char *s, size_t len)
{
    return len <= CONTAINER_USER_FIELD_MAX && !memchr(s, '\0', len);
}

/* name:passwd:uid:gid:gecos:home:shell */
static void passwd_line(struct record *r, const char *line, size_t len, void *accp)
{
    struct acc *a = accp;
    const char *f[7];
    size_t fl[7];
    uint32_t uid, gid;
    if (a->n >= CONTAINER_USERS_MAX_ENTRIES || split_fields(line, len, f, fl, 7) < 7 ||
        !parse_u32(f[2], fl[2], &uid) || !parse_u32(f[3], fl[3], &gid) || !field_ok(f[0], fl[0]) ||
        !field_ok(f[5], fl[5]) || !field_ok(f[6], fl[6]))
        return;
    struct user_line *e = acc_next(r, a);
    if (!e)
        return;
    *e = (struct user_line){.u = {.uid = uid, .gid = gid, .name = record_strndup(r, f[0], fl[0]),
                                  .home = record_strndup(r, f[5], fl[5]), .shell = record_strndup(r, f[6], fl[6])},
                            .seq = a->n};
    if (e->u.name && e->u.home && e->u.shell)
        a->n++;
}

/* name:passwd:gid:members (members may be missing) */
static void group_line(struct record *r, const char *line, size_t len, void *accp)
{
    struct acc *a = accp;
    const char *f[4];
    size_t fl[4];
    uint32_t gid;
    if (a->n >= CONTAINER_USERS_MAX_ENTRIES || split_fields(line, len, f, fl, 4) < 3 ||
        !parse_u32(f[2], fl[2], &gid) || !field_ok(f[0], fl[0]))
        return;
    struct group_line *e = acc_next(r, a);
    if (!e)
        return;
    *e = (struct group_line){.g = {.gid = gid, .name = record_strndup(r, f[0], fl[0])}, .seq = a->n};
    if (e->g.name)
        a->n++;
}

static int cmp_user_line(const void *pa, const void *pb)
{
    const struct user_line *x = pa, *y = pb;
    if (x->u.uid != y->u.uid)
        return x->u.uid < y->u.uid ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_group_line(const void *pa, const void *pb)
{
    const struct group_line *x = pa, *y = pb;
    if (x->g.gid != y->g.gid)
        return x->g.gid < y->g.gid ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void keep_users(struct record *r, struct acc *a)
{
    struct user_line *l = a->items;
    if (a->n)
        qsort(l, a->n, sizeof(*l), cmp_user_line);   /* none: items is NULL, which qsort may not get */
    struct container_user *out = a->n ? malloc(a->n * sizeof(*out)) : NULL;
    size_t n = 0;
    for (size_t i = 0; out && i < a->n; i++)
        if (n == 0 || out[n - 1].uid != l[i].u.uid)
            out[n++] = l[i].u;
    if (a->n && !out)
        r->alloc_failed = true;
    r->users = out;
    r->pub.users = out;
    r->pub.nusers = n;
    free(a->items);
}

static void keep_groups(struct record *r, struct acc *a)
{
    struct group_line *l = a->items;
    if (a->n)
        qsort(l, a->n, sizeof(*l), cmp_group_line);
    struct container_group *out = a->n ? malloc(a->n * sizeof(*out)) : NULL;
    size_t n = 0;
    for (size_t i = 0; out && i < a->n; i++)
        if (n == 0 || out[n - 1].gid != l[i].g.gid)
            out[n++] = l[i].g;
    if (a->n && !out)
        r->alloc_failed = true;
    r->groups = out;
    r->pub.groups = out;
    r->pub.ngroups = n;
    free(a->items);
}

static int64_t mtime_ns(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* The root filesystem as a directory handle: an absolute path from the
 * state file, and nothing else is ever opened by a path from it. */
static int open_root(const char *rootfs)
{
    if (!rootfs || rootfs[0] != '/')
        return -1;
    return open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

void users_read(struct record *r, const char *rootfs, uint64_t *refused)
{
    int rootfd = open_root(rootfs);
    if (rootfd < 0)
        return;
    struct slurp f;
    int rc = slurp_file(rootfd, "passwd", &f);
    if (rc < 0)
        ++*refused;
    if (rc > 0) {
        struct acc a = {.size = sizeof(struct user_line)};
        each_line(r, &f, passwd_line, &a);
        keep_users(r, &a);
        r->pub.users_read = true;
        r->passwd_mtime_ns = mtime_ns(&f.st);
        r->passwd_size = f.st.st_size;
        free(f.data);
    }
    rc = slurp_file(rootfd, "group", &f);
    if (rc < 0)
        ++*refused;
    if (rc > 0) {
        struct acc a = {.size = sizeof(struct group_line)};
        each_line(r, &f, group_line, &a);
        keep_groups(r, &a);
        r->group_mtime_ns = mtime_ns(&f.st);
        r->group_size = f.st.st_size;
        free(f.data);
    }
    close(rootfd);
}

static bool file_changed(int rootfd, const char *file, int64_t mtime, off_t size)
{
    int fd = open_beneath(rootfd, "etc", file);
    if (fd < 0)
        return mtime != 0;   /* gone (or refused now): changed if it was read */
    struct stat st;
    bool changed = fstat(fd, &st) != 0 || mtime_ns(&st) != mtime || st.st_size != size;
    close(fd);
    return changed;
}

bool users_changed(const struct record *r)
{
    int rootfd = open_root(r->pub.rootfs);
    if (rootfd < 0)
        return false;
    bool changed = file_changed(rootfd, "passwd", r->passwd_mtime_ns, r->passwd_size) ||
                   file_changed(rootfd, "group", r->group_mtime_ns, r->group_size);
    close(rootfd);
    return changed;
}
