#include "handoff.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"

/* One line per item, text, so a state written by one build is readable by
 * the next (an upgrade) and a human can inspect it. */
#define HANDOFF_VERSION "seccheckd-handoff 1"

static int set_cloexec(int fd, int on)
{
    int flags = fcntl(fd, F_GETFD);
    if (flags < 0)
        return -1;
    return fcntl(fd, F_SETFD, on ? flags | FD_CLOEXEC : flags & ~FD_CLOEXEC);
}

static void write_conn(FILE *f, const struct handoff_conn *c)
{
    const struct conn_record *r = &c->rec;
    fprintf(f,
            "conn %d %d %" PRIu64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRIu32 " %" PRIu64
            " %" PRIu64 " %" PRIu32 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRId64 "\n",
            c->fd, (int)c->state, r->id, r->peer_pid, r->peer_uid, r->peer_gid, r->connect_ns, r->client_version,
            r->messages, r->bytes, r->last_dropped_count, r->sandbox_dropped, r->rejected, r->decode_errors,
            r->dropped_count_regressions, r->paused_count, r->paused_ns);
}

int handoff_save(const struct handoff *h, char *err, size_t errlen)
{
    int fd = memfd_create("seccheckd-handoff", 0);
    FILE *f = fd >= 0 ? fdopen(dup(fd), "w") : NULL;
    if (!f) {
        snprintf(err, errlen, "cannot create the handoff state: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    fprintf(f, "%s\n", HANDOFF_VERSION);
    fprintf(f, "listener %d %ju %ju %s\n", h->listener.fd, (uintmax_t)h->listener.dev, (uintmax_t)h->listener.ino,
            h->listener.path);
    set_cloexec(h->listener.fd, 0);
    for (size_t i = 0; i < h->nconns; i++) {
        write_conn(f, &h->conns[i]);
        set_cloexec(h->conns[i].fd, 0);
    }
    if (fclose(f) != 0 || lseek(fd, 0, SEEK_SET) != 0) {
        snprintf(err, errlen, "cannot write the handoff state: %s", strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static int parse_conn(const char *line, struct handoff_conn *c)
{
    struct conn_record *r = &c->rec;
    int state;
    memset(c, 0, sizeof(*c));
    int n = sscanf(line,
                   "conn %d %d %" SCNu64 " %" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNu32 " %" SCNu64
                   " %" SCNu64 " %" SCNu32 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNd64,
                   &c->fd, &state, &r->id, &r->peer_pid, &r->peer_uid, &r->peer_gid, &r->connect_ns,
                   &r->client_version, &r->messages, &r->bytes, &r->last_dropped_count, &r->sandbox_dropped,
                   &r->rejected, &r->decode_errors, &r->dropped_count_regressions, &r->paused_count, &r->paused_ns);
    /* 14 or 15 fields: written by a build before dropped_count_regressions,
     * or before the pause counters (an upgrade). */
    if ((n != 14 && n != 15 && n != 17) || (state != CONN_HANDSHAKE && state != CONN_STREAMING) || fcntl(c->fd, F_GETFD) < 0)
        return -1;
    c->state = (enum conn_state)state;
    return set_cloexec(c->fd, 1);
}

static int parse_listener(const char *line, struct listener *l)
{
    uintmax_t dev, ino;
    int consumed = 0;
    if (sscanf(line, "listener %d %ju %ju %n", &l->fd, &dev, &ino, &consumed) != 3 || consumed == 0)
        return -1;
    snprintf(l->path, sizeof(l->path), "%s", line + consumed);
    l->path[strcspn(l->path, "\n")] = '\0';
    l->dev = (dev_t)dev;
    l->ino = (ino_t)ino;
    if (fcntl(l->fd, F_GETFD) < 0)
        return -1;
    return set_cloexec(l->fd, 1);
}

static int parse(FILE *f, struct handoff *h, char *err, size_t errlen)
{
    char line[512];
    if (!fgets(line, sizeof(line), f) || strncmp(line, HANDOFF_VERSION, strlen(HANDOFF_VERSION)) != 0) {
        snprintf(err, errlen, "handoff state has an unknown format");
        return -1;
    }
    if (!fgets(line, sizeof(line), f) || parse_listener(line, &h->listener) != 0) {
        snprintf(err, errlen, "handoff state: bad listener line");
        return -1;
    }
    size_t cap = 0;
    while (fgets(line, sizeof(line), f)) {
        if (h->nconns == cap) {
            cap = cap ? cap * 2 : 64;
            struct handoff_conn *p = realloc(h->conns, cap * sizeof(*p));
            if (!p) {
                snprintf(err, errlen, "out of memory reading the handoff state");
                return -1;
            }
            h->conns = p;
        }
        if (parse_conn(line, &h->conns[h->nconns]) != 0) {
            snprintf(err, errlen, "handoff state: bad connection line %zu", h->nconns + 1);
            return -1;
        }
        h->nconns++;
    }
    return 0;
}

int handoff_load_from_env(struct handoff *h, char *err, size_t errlen)
{
    memset(h, 0, sizeof(*h));
    h->listener.fd = -1;
    const char *env = getenv(HANDOFF_ENV);
    if (!env)
        return 0;
    int fd = atoi(env);
    unsetenv(HANDOFF_ENV);
    FILE *f = fdopen(fd, "r");
    if (!f) {
        snprintf(err, errlen, "cannot read the handoff state (fd %s): %s", env, strerror(errno));
        return -1;
    }
    int rc = parse(f, h, err, errlen);
    fclose(f);
    return rc == 0 ? 1 : -1;
}

int handoff_exec(const char *path, char *const *argv, int state_fd)
{
    char value[16];
    snprintf(value, sizeof(value), "%d", state_fd);
    setenv(HANDOFF_ENV, value, 1);
    /* Until the new image has its handlers, a SIGTERM would kill it with
     * every connection: the mask survives exec, the new image unblocks
     * (server_start), and a signal sent meanwhile is delivered then. */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGUSR2);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, &old);
    execv(path, argv);
    log_error("restart: cannot execute %s: %s; running this image again", path, strerror(errno));
    execv("/proc/self/exe", argv);
    int saved = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    unsetenv(HANDOFF_ENV);
    errno = saved;
    return -1;
}

void handoff_free(struct handoff *h)
{
    free(h->conns);
    h->conns = NULL;
    h->nconns = 0;
}
