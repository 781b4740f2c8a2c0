/* watch.c - the roots watched for new state files (inotify), so that a
 * container of a bound sandbox is looked up when runsc writes its state
 * (`runsc create`, before the container runs), not when its first events
 * reach the writer: a container that lives a few hundred milliseconds
 * (a Kubernetes Job's, a one-shot agent sandbox's) would be gone by then.
 *
 * A thread of its own reads the events; runsc writes each state file in
 * place (os.WriteFile), so a file closed after writing (IN_CLOSE_WRITE) or
 * moved in is looked up: `<id>_sandbox:<sandbox>.state` of a sandbox some
 * open connection is bound to (in that root), not yet found. Nothing else
 * a name says is trusted: the lookup reads the file as any lookup does.
 * Without inotify (or past its limits) lookups happen as containers are
 * named, and a connection's own sandbox is still looked for from its open.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "cache_int.h"
#include "clock.h"
#include "thread.h"

#define WATCH_MASK (IN_CLOSE_WRITE | IN_MOVED_TO)

/* Under the mutex: name (`<id>_sandbox:<sandbox>.state`) was written in
 * root. The file is opened now, and that open file is what the lookup
 * reads: runsc may delete it a few milliseconds later (a container that
 * ran and exited), before the lookup thread gets to run. */
static void state_file_written(struct container_cache *c, uint32_t scope, const char *root, const char *name)
{
    const char *infix = strstr(name, "_sandbox:");
    size_t len = strlen(name);
    if (!infix || len < 6 || strcmp(name + len - 6, ".state") != 0)
        return;
    char id[CONTAINER_ID_MAX], sandbox[CONTAINER_ID_MAX];
    size_t idlen = (size_t)(infix - name);
    if (len < idlen + 9 + 6)
        return;
    size_t sblen = len - 6 - idlen - 9;
    if (idlen >= sizeof(id) || sblen >= sizeof(sandbox))
        return;
    memcpy(id, name, idlen);
    id[idlen] = '\0';
    memcpy(sandbox, infix + 9, sblen);
    sandbox[sblen] = '\0';
    if (!container_id_valid(id) || !container_id_valid(sandbox) || !conns_sandbox_open(c, scope, sandbox))
        return;
    int64_t now = monotonic_ns();
    struct entry *e = cache_entry(c, scope, sandbox, id, now);
    if (!e || (e->rec && e->rec->state == CONTAINER_FOUND))
        return;
    char path[CONTAINER_STRING_MAX];
    int fd = snprintf(path, sizeof(path), "%s/%s", root, name) < (int)sizeof(path)
                 ? open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
                 : -1;
    char *copy = fd >= 0 ? strdup(path) : NULL;
    if (copy) {
        if (e->held_fd >= 0)
            close(e->held_fd);
        free(e->held_path);
        e->held_fd = fd;
        e->held_path = copy;
    } else if (fd >= 0) {
        close(fd);
    }
    if (e->in_flight) {
        e->again = true;   /* what it reads may be what came before this write */
        return;
    }
    e->due_ns = now;
    pthread_cond_signal(&c->work);
}

static const char *root_of(struct container_cache *c, int wd, uint32_t *scope)
{
    for (size_t i = 0; i < c->nwatches; i++)
        if (c->watches[i].wd == wd) {
            *scope = c->watches[i].scope;
            return c->watches[i].root;
        }
    return NULL;
}

static void *watch_thread(void *arg)
{
    struct container_cache *c = arg;
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        struct pollfd fds[2] = {{.fd = c->inotify_fd, .events = POLLIN}, {.fd = c->stop_fd, .events = POLLIN}};
        if (poll(fds, 2, -1) < 0 && errno != EINTR)
            break;
        if (fds[1].revents)
            break;
        if (!(fds[0].revents & POLLIN))
            continue;
        ssize_t n = read(c->inotify_fd, buf, sizeof(buf));
        if (n <= 0)
            continue;
        pthread_mutex_lock(&c->mu);
        for (ssize_t off = 0; off + (ssize_t)sizeof(struct inotify_event) <= n;) {
            const struct inotify_event *ev = (const struct inotify_event *)(buf + off);
            off += (ssize_t)(sizeof(*ev) + ev->len);
            uint32_t scope = 0;
            const char *root = root_of(c, ev->wd, &scope);
            if (root && ev->len && (ev->mask & WATCH_MASK))
                state_file_written(c, scope, root, ev->name);
        }
        pthread_mutex_unlock(&c->mu);
    }
    return NULL;
}

void watch_start(struct container_cache *c)
{
    c->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    c->stop_fd = eventfd(0, EFD_CLOEXEC);
    if (c->inotify_fd < 0 || c->stop_fd < 0)
        goto off;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->nroots; i++)
        watch_add(c, c->roots[i], 0);
    pthread_mutex_unlock(&c->mu);
    if (thread_start_blocking_signals(&c->watcher, NULL, watch_thread, c) == 0) {
        c->watching = true;
        return;
    }
off:
    if (c->inotify_fd >= 0)
        close(c->inotify_fd);
    if (c->stop_fd >= 0)
        close(c->stop_fd);
    c->inotify_fd = c->stop_fd = -1;
}

void watch_stop(struct container_cache *c)
{
    if (c->watching) {
        uint64_t one = 1;
        if (write(c->stop_fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
            abort();   /* an eventfd write of 1 cannot fail short of a bug */
        pthread_join(c->watcher, NULL);
        c->watching = false;
    }
    if (c->inotify_fd >= 0)
        close(c->inotify_fd);
    if (c->stop_fd >= 0)
        close(c->stop_fd);
    c->inotify_fd = c->stop_fd = -1;
    for (size_t i = 0; i < c->nwatches; i++)
        free(c->watches[i].root);
    c->nwatches = 0;
}

int watch_add(struct container_cache *c, const char *root, uint32_t scope)
{
    if (c->inotify_fd < 0 || c->nwatches >= WATCHES_MAX)
        return -1;
    int wd = inotify_add_watch(c->inotify_fd, root, WATCH_MASK | IN_ONLYDIR | IN_DONT_FOLLOW);
    if (wd < 0)
        return -1;
    for (size_t i = 0; i < c->nwatches; i++)
        if (c->watches[i].wd == wd)   /* the same directory again: the first scope keeps it */
            return -1;
    char *copy = strdup(root);
    if (!copy) {
        inotify_rm_watch(c->inotify_fd, wd);
        return -1;
    }
    c->watches[c->nwatches].wd = wd;
    c->watches[c->nwatches].scope = scope;
    c->watches[c->nwatches].root = copy;
    c->nwatches++;
    return wd;
}

void watch_remove(struct container_cache *c, int wd)
{
    for (size_t i = 0; i < c->nwatches; i++)
        if (c->watches[i].wd == wd) {
            free(c->watches[i].root);
            c->watches[i] = c->watches[--c->nwatches];
            if (c->inotify_fd >= 0)
                inotify_rm_watch(c->inotify_fd, wd);
            return;
        }
}
