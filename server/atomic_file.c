/* atomic_file.c - read with a bound, replace whole (atomic_file.h). */
#include "atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int atomic_file_read(const char *path, size_t max, char **text, size_t *len, struct stat *st, char *err,
                     size_t errlen)
{
    *text = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        return snprintf(err, errlen, "cannot open it: %s", strerror(errno)), -1;
    }
    int rc = -1;
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        snprintf(err, errlen, "it is not a regular file");
    } else if ((uint64_t)st->st_size > max) {
        snprintf(err, errlen, "it is larger than %zu bytes", max);
    } else if (!(*text = malloc((size_t)st->st_size + 1))) {
        snprintf(err, errlen, "out of memory");
    } else {
        rc = 0;
        while (*len < (size_t)st->st_size) {
            ssize_t n = read(fd, *text + *len, (size_t)st->st_size - *len);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                snprintf(err, errlen, "cannot read it: %s", n < 0 ? strerror(errno) : "it shrank while read");
                rc = -1;
                break;
            }
            *len += (size_t)n;
        }
        (*text)[*len] = '\0';
    }
    close(fd);
    if (rc != 0) {
        free(*text);
        *text = NULL;
    }
    return rc;
}

int atomic_file_replace(const char *path, const char *text, size_t len, const struct stat *like, char *err,
                        size_t errlen)
{
    char tmp[PATH_MAX + 16], dircopy[PATH_MAX];
    snprintf(dircopy, sizeof(dircopy), "%s", path);
    const char *dir = dirname(dircopy);
    int n = snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
    if (n < 0 || (size_t)n >= sizeof(tmp))
        return snprintf(err, errlen, "%s: path too long", path), -1;
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return snprintf(err, errlen, "cannot create a file in %s: %s", dir, strerror(errno)), -1;
    bool ok = fchmod(fd, like ? (like->st_mode & 07777) : 0644) == 0;
    struct stat made;
    /* the owner of the file replaced, when the new one did not get it anyway (a chown needs CAP_CHOWN) */
    if (ok && like && fstat(fd, &made) == 0 && (made.st_uid != like->st_uid || made.st_gid != like->st_gid))
        ok = fchown(fd, like->st_uid, like->st_gid) == 0;
    for (size_t done = 0; ok && done < len;) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        ok = w > 0;
        if (ok)
            done += (size_t)w;
    }
    ok = ok && fsync(fd) == 0;
    int saved = errno;
    ok = close(fd) == 0 && ok;
    if (ok && rename(tmp, path) != 0) {
        saved = errno;
        ok = false;
    }
    if (!ok) {
        unlink(tmp);
        return snprintf(err, errlen, "cannot write %s: %s", path, strerror(saved)), -1;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

int atomic_file_beside(const char *path, const char *name, char *resolved, size_t resolved_len, char *beside,
                       size_t beside_len, char *err, size_t errlen)
{
    char real[PATH_MAX], dircopy[PATH_MAX], cwd[PATH_MAX];
    /* A symlinked file (configuration management) is changed where it points. */
    if (realpath(path, real))
        snprintf(resolved, resolved_len, "%s", real);
    else if (errno == ENOENT)
        snprintf(resolved, resolved_len, "%s", path);
    else
        return snprintf(err, errlen, "%s: %s", path, strerror(errno)), -1;
    snprintf(dircopy, sizeof(dircopy), "%s", resolved);
    const char *dir = dirname(dircopy);
    bool relative = dir[0] != '/';
    if (relative && !getcwd(cwd, sizeof(cwd)))
        return snprintf(err, errlen, "cannot tell the working directory: %s", strerror(errno)), -1;
    int n = relative ? snprintf(beside, beside_len, "%s/%s/%s", cwd, dir, name)
                     : snprintf(beside, beside_len, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, name);
    if (n < 0 || (size_t)n >= beside_len)
        return snprintf(err, errlen, "%s: path too long", path), -1;
    return 0;
}
