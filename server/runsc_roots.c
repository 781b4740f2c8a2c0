/* runsc_roots.c - which runsc roots the daemon reads, and what it says
 * about each at start: a root it cannot read is named with the reason
 * (container names then stay unknown for its containers), so an operator
 * sees why `container.name` is <NA> before asking. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "runsc_roots.h"

#define DOCKER_DEFAULT_SOCKET "/var/run/docker.sock"

/* Logs what a start finds at root; true when it can be read now. */
static bool check_root(const char *root)
{
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        log_info("containers: reading runsc's state files in %s", root);
        return true;
    }
    log_warn("containers: %s (--runsc-root): %s; its containers' names, pods and users stay unknown until it can "
             "be read (it is looked at again for each new container)",
             root, errno == EACCES ? "permission denied (the daemon needs read access: the systemd unit's "
                                     "ReadOnlyPaths=)" : strerror(errno));
    return false;
}

/* --docker-socket: the path to ask, or NULL (none, or the default is not there). */
static const char *docker_socket(const struct options *o)
{
    const char *path = o->docker_socket;
    if (path && strcmp(path, "none") == 0) {
        log_info("containers: --docker-socket none: Docker containers' names are not asked for");
        return NULL;
    }
    struct stat st;
    bool is_socket = stat(path ? path : DOCKER_DEFAULT_SOCKET, &st) == 0 && S_ISSOCK(st.st_mode);
    if (!path && !is_socket)
        return NULL;
    if (is_socket)
        log_info("containers: asking Docker's API on %s for the names of Docker's containers",
                 path ? path : DOCKER_DEFAULT_SOCKET);
    else
        log_warn("containers: %s (--docker-socket) is not a socket now; Docker containers' names stay unknown until "
                 "dockerd listens there", path);
    return path ? path : DOCKER_DEFAULT_SOCKET;
}

int runsc_roots_open(const struct options *o, struct container_cache **cache, struct container_view **view,
                     char *err, size_t errlen)
{
    *cache = NULL;
    *view = NULL;
    char *copy = NULL;
    const char *roots[CONTAINER_ROOTS_MAX];
    size_t n = options_runsc_roots(o, &copy, roots, CONTAINER_ROOTS_MAX);
    for (size_t i = 0; i < n; i++)
        if (strcmp(roots[i], "none") == 0) {
            log_info("containers: --runsc-root none: container, pod and user names are not looked up");
            free(copy);
            return 0;
        }
    if (n == 0) {
        for (const char *const *d = container_default_roots; *d && n < CONTAINER_ROOTS_MAX; d++)
            if (access(*d, F_OK) == 0)
                roots[n++] = *d;
        if (n == 0)
            log_info("containers: none of runsc's usual roots exists (%s): names come from the state a connecting "
                     "runsc command keeps elsewhere (runsc do's, its --root), else give --runsc-root DIR",
                     CONTAINER_DEFAULT_ROOTS_TEXT);

    }
    for (size_t i = 0; i < n; i++)
        check_root(roots[i]);
    struct container_cache_config cfg = {.roots = roots, .nroots = n, .docker_socket = docker_socket(o)};
    *cache = container_cache_open(&cfg, err, errlen);
    free(copy);
    if (!*cache)
        return -1;
    if (!(*view = container_view_new(*cache))) {
        container_cache_close(*cache);
        *cache = NULL;
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}
