/* load_file.c - rules files and directories read without ever blocking.
 *
 * A rules path is untrusted: it may be a FIFO (open would wait for a writer,
 * read for data), a device, a socket, or be swapped for one between a check
 * and the open. So every file is opened with O_NONBLOCK, and fstat on the
 * open descriptor decides: only a regular file is read; anything else is
 * refused by name. A directory is read the same way, entry by entry (its
 * *.yaml and *.yml files, in byte order of their names, as Falco takes
 * them).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag.h"
#include "loader.h"

#define OPEN_FLAGS (O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)

static const char *kind_of(mode_t m)
{
    return S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
         : S_ISSOCK(m) ? "a socket" : S_ISDIR(m) ? "a directory" : "not a file";
}

/* Reads the regular file open at fd (at most RULES_FILE_MAX_BYTES). The
 * bytes (in a), or NULL after the error. */
static char *read_regular(struct arena *a, int fd, const struct stat *st, const char *path, struct rules_diag *diag,
                          size_t *len)
{
    size_t cap = st->st_size > 0 && (uint64_t)st->st_size <= RULES_FILE_MAX_BYTES ? (size_t)st->st_size + 1
                                                                                  : 64 * 1024;
    char *buf = arena_alloc(a, cap + 1);
    size_t n = 0;
    while (buf) {
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            diag_add(diag, true, path, 0, 0, "cannot read: %s", strerror(errno));
            return NULL;
        }
        if (got == 0)
            break;
        n += (size_t)got;
        if (n > RULES_FILE_MAX_BYTES) {
            diag_add(diag, true, path, 0, 0, "larger than %u bytes: refused", RULES_FILE_MAX_BYTES);
            return NULL;
        }
        if (n == cap) {   /* the file grew since fstat: more room */
            char *bigger = arena_alloc(a, cap * 2 + 1);
            if (bigger)
                memcpy(bigger, buf, n);
            buf = bigger;
            cap *= 2;
        }
    }
    if (!buf) {
        diag_add(diag, true, path, 0, 0, "cannot read: out of memory");
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* fd is open on path: a regular file is handed to fn, anything else
 * refused. Closes fd. */
static void take_file(struct arena *a, int fd, const char *path, struct rules_diag *diag, rules_file_fn fn,
                      void *ctx)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        diag_add(diag, true, path, 0, 0, "cannot open: %s", strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        diag_add(diag, true, path, 0, 0, "not a regular file (%s): rules are read from regular files only",
                 kind_of(st.st_mode));
    } else {
        size_t len;
        char *buf = read_regular(a, fd, &st, path, diag, &len);
        if (buf)
            fn(ctx, path, buf, len);
    }
    close(fd);
}

/* open failed: ENXIO is a socket (or a device without a driver). */
static void open_failed(const char *path, int err, struct rules_diag *diag)
{
    if (err == ENXIO)
        diag_add(diag, true, path, 0, 0, "not a regular file (a socket or a device): rules are read from regular "
                 "files only");
    else
        diag_add(diag, true, path, 0, 0, "cannot open: %s", strerror(err));
}

static bool rules_name(const char *name)
{
    size_t n = strlen(name);
    return name[0] != '.' && ((n > 5 && strcmp(name + n - 5, ".yaml") == 0) ||
                              (n > 4 && strcmp(name + n - 4, ".yml") == 0));
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The directory open at fd: its rules files, in name order. */
static void take_directory(struct arena *a, int fd, const char *path, struct rules_diag *diag, rules_file_fn fn,
                           void *ctx)
{
    DIR *d = fdopendir(fd);
    if (!d) {
        diag_add(diag, true, path, 0, 0, "cannot read the directory: %s", strerror(errno));
        close(fd);
        return;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    bool oom = false;
    struct dirent *e;
    while (!oom && (e = readdir(d))) {
        if (!rules_name(e->d_name))
            continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            char **grown = realloc(names, ncap * sizeof(*names));
            if (!grown) {
                oom = true;
                break;
            }
            names = grown;
            cap = ncap;
        }
        if (!(names[n] = strdup(e->d_name)))
            oom = true;
        else
            n++;
    }
    if (oom)
        diag_add(diag, true, path, 0, 0, "cannot read the directory: out of memory");
    if (n)
        qsort(names, n, sizeof(*names), by_name);
    if (!n && !oom)
        diag_add(diag, false, path, 0, 0, "no *.yaml or *.yml files in this directory: no rules loaded from it");
    for (size_t i = 0; i < n; i++) {
        size_t plen = strlen(path), flen = plen + 1 + strlen(names[i]) + 1;
        char *full = arena_alloc(a, flen);
        if (full) {
            snprintf(full, flen, "%s%s%s", path, plen && path[plen - 1] == '/' ? "" : "/", names[i]);
            int efd = openat(dirfd(d), names[i], OPEN_FLAGS);
            if (efd < 0)
                open_failed(full, errno, diag);
            else
                take_file(a, efd, full, diag, fn, ctx);
        }
        free(names[i]);
    }
    free(names);
    closedir(d);
}

void rules_read_path(struct arena *a, const char *path, struct rules_diag *diag, rules_file_fn fn, void *ctx)
{
    int fd = open(path, OPEN_FLAGS);
    if (fd < 0) {
        open_failed(path, errno, diag);
        return;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        take_directory(a, fd, path, diag, fn, ctx);
        return;
    }
    take_file(a, fd, path, diag, fn, ctx);
}
