#include "listener.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static int fill_addr(struct sockaddr_un *addr, const char *path)
{
    memset(addr, 0, sizeof(*addr));
    addr->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(addr->sun_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(addr->sun_path, path);
    return 0;
}

int listener_connect(const char *path)
{
    struct sockaddr_un addr;
    if (fill_addr(&addr, path) != 0)
        return -1;
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* 0 when path is free to bind (absent, or a stale socket now removed). */
static int clear_stale_socket(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "cannot inspect %s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISSOCK(st.st_mode)) {
        snprintf(err, errlen, "%s exists and is not a socket; refusing to replace it (remove it, or choose "
                 "another socket path)", path);
        return -1;
    }
    int fd = listener_connect(path);
    if (fd >= 0) {
        close(fd);
        snprintf(err, errlen, "another process is listening on %s (stop it, or choose another socket path)", path);
        return -1;
    }
    if (errno == EPROTOTYPE) {
        snprintf(err, errlen, "%s is a socket of another type in use by another process (choose another socket path)",
                 path);
        return -1;
    }
    if (errno != ECONNREFUSED) {
        snprintf(err, errlen, "cannot check whether %s is in use: %s", path, strerror(errno));
        return -1;
    }
    if (unlink(path) != 0) {
        snprintf(err, errlen, "cannot remove stale socket %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

int listener_open(struct listener *l, const char *path, int backlog, mode_t mode, char *err, size_t errlen)
{
    l->fd = -1;
    struct sockaddr_un addr;
    if (fill_addr(&addr, path) != 0) {
        snprintf(err, errlen, "socket path %s is longer than %zu bytes (choose a shorter --socket)", path,
                 sizeof(addr.sun_path) - 1);
        return -1;
    }
    if (clear_stale_socket(path, err, errlen) != 0)
        return -1;
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket(AF_UNIX, SOCK_SEQPACKET): %s", strerror(errno));
        return -1;
    }
    /* The file bind creates takes the socket's own mode, less the umask: set
     * both before bind so no call ever goes by the path (a chmod after bind
     * follows a symlink planted there in between). */
    if (fchmod(fd, mode) != 0) {
        snprintf(err, errlen, "cannot set mode %o on the socket: %s", (unsigned)mode, strerror(errno));
        goto fail;
    }
    mode_t umask_was = umask(0);   /* at start-up, before any thread creates files */
    int bound = bind(fd, (struct sockaddr *)&addr, sizeof(addr));
    int bind_errno = errno;
    umask(umask_was);
    if (bound != 0) {
        snprintf(err, errlen, "cannot bind %s: %s (check that the directory exists and is writable)", path,
                 strerror(bind_errno));
        goto fail;
    }
    if (listen(fd, backlog) != 0) {
        snprintf(err, errlen, "listen on %s: %s", path, strerror(errno));
        goto fail_unlink;
    }
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISSOCK(st.st_mode)) {
        snprintf(err, errlen, "%s was removed or replaced right after bind (is another process using the "
                 "directory?)", path);
        close(fd);
        return -1;   /* not ours to unlink */
    }
    l->fd = fd;
    strcpy(l->path, path);
    l->dev = st.st_dev;
    l->ino = st.st_ino;
    return 0;
fail_unlink:
    unlink(path);
fail:
    close(fd);
    return -1;
}

int listener_adopt(struct listener *l, int fd, char *err, size_t errlen)
{
    int type = 0, listening = 0;
    socklen_t len = sizeof(type);
    struct sockaddr_un addr;
    socklen_t alen = sizeof(addr);
    memset(&addr, 0, sizeof(addr));
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_SEQPACKET ||
        getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening ||
        getsockname(fd, (struct sockaddr *)&addr, &alen) != 0 || addr.sun_family != AF_UNIX) {
        snprintf(err, errlen, "the socket systemd passed is not a listening Unix SOCK_SEQPACKET socket "
                 "(use ListenSequentialPacket= in the .socket unit)");
        return -1;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
        snprintf(err, errlen, "cannot set up the socket systemd passed: %s", strerror(errno));
        return -1;
    }
    l->fd = fd;
    snprintf(l->path, sizeof(l->path), "%s", addr.sun_path);
    l->dev = 0;   /* not ours: listener_close never unlinks it */
    l->ino = 0;
    return 0;
}

void listener_close(struct listener *l)
{
    if (l->fd < 0)
        return;
    struct stat st;
    if (l->ino != 0 && lstat(l->path, &st) == 0 && st.st_dev == l->dev && st.st_ino == l->ino)
        unlink(l->path);
    close(l->fd);
    l->fd = -1;
}
