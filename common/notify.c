#include "notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int notify_send(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    if (!path || !*path)
        return 1;
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    size_t len = strlen(path);
    if (len >= sizeof(addr.sun_path) || (path[0] != '/' && path[0] != '@'))
        return -1;
    memcpy(addr.sun_path, path, len);
    if (path[0] == '@')
        addr.sun_path[0] = '\0';   /* abstract namespace */
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    socklen_t addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
    ssize_t n = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&addr, addrlen);
    int saved = errno;
    close(fd);
    errno = saved;
    return n == (ssize_t)strlen(state) ? 0 : -1;
}

/* True when the variable names no PID or this one. */
static int for_this_pid(const char *name)
{
    const char *pid = getenv(name);
    return !pid || strtol(pid, NULL, 10) == (long)getpid();
}

uint64_t notify_watchdog_usec(void)
{
    const char *usec = getenv("WATCHDOG_USEC");
    if (!usec || !for_this_pid("WATCHDOG_PID"))
        return 0;
    return strtoull(usec, NULL, 10);
}

int notify_listen_fd(void)
{
    const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
    int fd = -1;
    if (pid && fds && strtol(pid, NULL, 10) == (long)getpid() && atoi(fds) >= 1)
        fd = 3;   /* SD_LISTEN_FDS_START */
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
    return fd;
}
