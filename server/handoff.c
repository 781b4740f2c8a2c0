#include "handoff.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"

/* One line per item, text, so a state written by one build is readable by
 * the next (an upgrade) and a human can inspect it. Version 1 has the
 * listener and conn lines only; version 2 adds keyword lines, and a
 * reader skips a keyword it does not know (a later build's). */
#define HANDOFF_MAGIC "seccheckd-handoff "
#define HANDOFF_VERSION 2
#define HANDOFF_MAX_LINE (1u << 20)   /* an argument may be 128 KiB, hex doubles it */

void handoff_init(struct handoff *h)
{
    memset(h, 0, sizeof(*h));
    h->listener.fd = -1;
    h->fallback_fd = -1;
    h->relay = (struct relay_fds){.ctl_fd = -1, .log_fd = -1, .event_fd = -1};
}

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

/* The build to come back to: its descriptor and arguments (hex, so any
 * byte but NUL survives the line format). */
static void write_fallback(FILE *f, const struct handoff *h)
{
    if (h->fallback_fd < 0 || !h->fallback_argv)
        return;
    fprintf(f, "fallback %d\n", h->fallback_fd);
    set_cloexec(h->fallback_fd, 0);
    for (char **arg = h->fallback_argv; *arg; arg++) {
        fputs("arg ", f);
        for (const unsigned char *p = (const unsigned char *)*arg; *p; p++)
            fprintf(f, "%02x", *p);
        fputc('\n', f);
    }
}

/* The relay reading the streaming connections, if any: its descriptors
 * survive exec. */
static void write_relay(FILE *f, const struct relay_fds *r)
{
    if (r->pid <= 0)
        return;
    fprintf(f, "relay %d %d %d %d\n", (int)r->pid, r->ctl_fd, r->log_fd, r->event_fd);
    set_cloexec(r->ctl_fd, 0);
    set_cloexec(r->log_fd, 0);
    set_cloexec(r->event_fd, 0);
}

static void write_failure(FILE *f, const char *failure)
{
    if (!failure[0])
        return;
    fputs("failure ", f);
    for (const char *p = failure; *p; p++)
        fputc(*p == '\n' ? ' ' : *p, f);
    fputc('\n', f);
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
    fprintf(f, HANDOFF_MAGIC "%d\n", HANDOFF_VERSION);
    fprintf(f, "listener %d %ju %ju %s\n", h->listener.fd, (uintmax_t)h->listener.dev, (uintmax_t)h->listener.ino,
            h->listener.path);
    set_cloexec(h->listener.fd, 0);
    fprintf(f, "next_conn_id %" PRIu64 "\n", h->next_conn_id);
    fprintf(f, "stopped_reading %" PRId64 "\n", h->stopped_reading_ns);
    fprintf(f, "restarts %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", h->restarts.ok, h->restarts.refused,
            h->restarts.failed);
    write_fallback(f, h);
    write_failure(f, h->failure);
    write_relay(f, &h->relay);
    if (h->restart_again)
        fputs("restart_again\n", f);
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

/* ---- loading ---- */

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
    if ((n != 14 && n != 15 && n != 17) || (state != CONN_HANDSHAKE && state != CONN_STREAMING) ||
        fcntl(c->fd, F_GETFD) < 0)
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

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* "arg HEX": one more argument of the fallback build. */
static int parse_arg(const char *hex, struct handoff *h, size_t *nargs)
{
    size_t len = strcspn(hex, "\n");
    char *arg = len % 2 == 0 ? malloc(len / 2 + 1) : NULL;
    char **argv = arg ? realloc(h->fallback_argv, (*nargs + 2) * sizeof(*argv)) : NULL;
    if (!argv) {
        free(arg);
        return -1;
    }
    h->fallback_argv = argv;
    for (size_t i = 0; i < len / 2; i++) {
        int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0 || (hi | lo) == 0) {   /* not hex, or a NUL */
            free(arg);
            return -1;
        }
        arg[i] = (char)(hi << 4 | lo);
    }
    arg[len / 2] = '\0';
    argv[(*nargs)++] = arg;
    argv[*nargs] = NULL;
    return 0;
}

static int add_conn(const char *line, struct handoff *h, size_t *cap)
{
    if (h->nconns == *cap) {
        size_t more = *cap ? *cap * 2 : 64;
        struct handoff_conn *p = realloc(h->conns, more * sizeof(*p));
        if (!p)
            return -1;
        h->conns = p;
        *cap = more;
    }
    if (parse_conn(line, &h->conns[h->nconns]) != 0)
        return -1;
    h->nconns++;
    return 0;
}

/* One keyword line of version 2; an unknown keyword is a later build's. */
static int parse_keyword(const char *line, struct handoff *h, size_t *nargs)
{
    if (strncmp(line, "next_conn_id ", 13) == 0)
        return sscanf(line, "next_conn_id %" SCNu64, &h->next_conn_id) == 1 ? 0 : -1;
    if (strncmp(line, "stopped_reading ", 16) == 0)
        return sscanf(line, "stopped_reading %" SCNd64, &h->stopped_reading_ns) == 1 ? 0 : -1;
    if (strncmp(line, "exec ", 5) == 0)
        return sscanf(line, "exec %" SCNd64, &h->exec_ns) == 1 ? 0 : -1;
    if (strncmp(line, "restarts ", 9) == 0)
        return sscanf(line, "restarts %" SCNu64 " %" SCNu64 " %" SCNu64, &h->restarts.ok, &h->restarts.refused,
                      &h->restarts.failed) == 3 ? 0 : -1;
    if (strncmp(line, "fallback ", 9) == 0)
        return sscanf(line, "fallback %d", &h->fallback_fd) == 1 && set_cloexec(h->fallback_fd, 1) == 0 ? 0 : -1;
    if (strncmp(line, "arg ", 4) == 0)
        return parse_arg(line + 4, h, nargs);
    if (strncmp(line, "relay ", 6) == 0) {
        struct relay_fds *r = &h->relay;
        int pid;
        if (sscanf(line, "relay %d %d %d %d", &pid, &r->ctl_fd, &r->log_fd, &r->event_fd) != 4 || pid <= 1 ||
            set_cloexec(r->ctl_fd, 1) != 0 || set_cloexec(r->log_fd, 1) != 0 || set_cloexec(r->event_fd, 1) != 0)
            return -1;
        r->pid = pid;
        return 0;
    }
    if (strcmp(line, "restart_again\n") == 0) {
        h->restart_again = true;
        return 0;
    }
    if (strncmp(line, "failure ", 8) == 0) {
        snprintf(h->failure, sizeof(h->failure), "%.*s", (int)strcspn(line + 8, "\n"), line + 8);
        return 0;
    }
    return 0;
}

static int parse(FILE *f, struct handoff *h, char *err, size_t errlen)
{
    char *line = NULL;
    size_t linecap = 0, conncap = 0, nargs = 0;
    ssize_t len;
    int version = 0, rc = 0;
    if ((len = getline(&line, &linecap, f)) <= 0 || strncmp(line, HANDOFF_MAGIC, strlen(HANDOFF_MAGIC)) != 0 ||
        (version = atoi(line + strlen(HANDOFF_MAGIC))) < 1 || version > HANDOFF_VERSION) {
        snprintf(err, errlen, "handoff state has an unknown format");
        rc = -1;
    } else if (getline(&line, &linecap, f) <= 0 || parse_listener(line, &h->listener) != 0) {
        snprintf(err, errlen, "handoff state: bad listener line");
        rc = -1;
    }
    while (rc == 0 && (len = getline(&line, &linecap, f)) > 0) {
        if ((size_t)len > HANDOFF_MAX_LINE) {
            snprintf(err, errlen, "handoff state: a line of %zd bytes", len);
            rc = -1;
        } else if (strncmp(line, "conn ", 5) == 0 || version == 1) {
            if (add_conn(line, h, &conncap) != 0) {
                snprintf(err, errlen, "handoff state: bad connection line %zu", h->nconns + 1);
                rc = -1;
            }
        } else if (parse_keyword(line, h, &nargs) != 0) {
            snprintf(err, errlen, "handoff state: bad line '%.40s'", line);
            rc = -1;
        }
    }
    free(line);
    if (rc == 0 && h->fallback_fd >= 0 && !h->fallback_argv)
        h->fallback_fd = -1;   /* nothing to run it with */
    return rc;
}

int handoff_load_from_env(struct handoff *h, char *err, size_t errlen)
{
    handoff_init(h);
    const char *env = getenv(HANDOFF_ENV);
    if (!env)
        return 0;
    int fd = atoi(env);
    unsetenv(HANDOFF_ENV);
    FILE *f = fdopen(fd, "r");
    if (!f) {
        snprintf(err, errlen, "cannot read the handoff state (fd %d): %s", fd, strerror(errno));
        return -1;
    }
    int rc = parse(f, h, err, errlen);
    fclose(f);
    return rc == 0 ? 1 : -1;
}

/* ---- executing the next image ---- */

void handoff_held_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGUSR2);
    sigaddset(set, SIGHUP);
}

/* Until the new image has its handlers, a SIGTERM would kill it with every
 * connection: the mask survives exec, the new image unblocks (server.c),
 * and a signal sent meanwhile is delivered then. */
static void block_held_signals(sigset_t *old)
{
    sigset_t held;
    handoff_held_signals(&held);
    pthread_sigmask(SIG_BLOCK, &held, old);
}

/* The state's last line: when exec was called, for the new image's log. */
static void stamp_exec(int state_fd)
{
    if (lseek(state_fd, 0, SEEK_END) >= 0)
        dprintf(state_fd, "exec %" PRId64 "\n", monotonic_ns());
    lseek(state_fd, 0, SEEK_SET);
}

/* Executes path, or fd when path is NULL or cannot run, with the state fd
 * named in the environment; returns only if neither runs (with errno). */
static int exec_with_state(const char *path, int fd, char *const *argv, int state_fd)
{
    char value[16];
    snprintf(value, sizeof(value), "%d", state_fd);
    setenv(HANDOFF_ENV, value, 1);
    sigset_t old;
    block_held_signals(&old);
    stamp_exec(state_fd);
    if (path) {
        execv(path, argv);
        log_error("restart: cannot execute %s: %s; running this image again", path, strerror(errno));
    }
    if (fd >= 0)
        fexecve(fd, argv, environ);
    int saved = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    unsetenv(HANDOFF_ENV);
    errno = saved;
    return -1;
}

int handoff_exec(const char *path, char *const *argv, int state_fd, int fallback_fd)
{
    return exec_with_state(path, fallback_fd, argv, state_fd);
}

int handoff_come_back(struct handoff *h, const char *why)
{
    if (h->fallback_fd < 0) {
        errno = ENOENT;
        return -1;
    }
    struct handoff back = *h;
    back.fallback_fd = -1;   /* if the build that ran cannot start either, nothing is left to run */
    back.fallback_argv = NULL;
    back.restarts.failed++;
    snprintf(back.failure, sizeof(back.failure), "%s", why);
    char err[256];
    int fd = handoff_save(&back, err, sizeof(err));
    if (fd < 0) {
        log_error("restart: %s", err);
        errno = EIO;
        return -1;
    }
    log_error("restart: this image cannot start (%s); running the build that handed over again", why);
    exec_with_state(NULL, h->fallback_fd, h->fallback_argv, fd);
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
}

void handoff_free(struct handoff *h)
{
    free(h->conns);
    h->conns = NULL;
    h->nconns = 0;
    if (h->fallback_argv)
        for (char **arg = h->fallback_argv; *arg; arg++)
            free(*arg);
    free(h->fallback_argv);
    h->fallback_argv = NULL;
    if (h->fallback_fd >= 0)
        close(h->fallback_fd);
    h->fallback_fd = -1;
}
