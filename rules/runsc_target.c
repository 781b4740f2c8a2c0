/* runsc_target.c - what one runsc has (runsc_target.h). */
#include "runsc_target.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char *const release_names[RULES_RUNSC_RELEASE_COUNT] = {
    "0.0~20221219", "release-20260525.0", "release-20260714.0", "release-20260721.0", "release-20260727.0",
    "release-20260817.0",
};

const char *rules_runsc_release_name(unsigned release)
{
    return release < RULES_RUNSC_RELEASE_COUNT ? release_names[release] : "a release this build does not know";
}

unsigned runsc_release_of_optional(unsigned bit)
{
    switch (bit) {
    case RULES_OPT_FD_INFO: return RULES_RUNSC_20260721;
    case RULES_OPT_BINARY_SHA256:
    case RULES_OPT_BINARY_SHA1: return RULES_RUNSC_20260727;
    case RULES_OPT_PIPE_PROC_INFO: return RULES_RUNSC_20260817;
    default: return RULES_RUNSC_2022_12;
    }
}

unsigned runsc_release_of_context(unsigned bit)
{
    switch (bit) {
    case RULES_CTX_PARENT_THREAD_GROUP_ID: return RULES_RUNSC_20260525;
    case RULES_CTX_IS_EXEC_SESSION: return RULES_RUNSC_20260721;
    default: return RULES_RUNSC_2022_12;
    }
}

void runsc_target_free(struct runsc_target *t)
{
    rules_needs_free(&t->points);
    memset(t, 0, sizeof(*t));
}

const struct rules_need *runsc_target_point(const struct runsc_target *t, const char *point)
{
    size_t lo = 0, hi = t->points.count;   /* sorted by name (rules_needs_add) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(t->points.items[mid].point, point);
        if (c == 0)
            return &t->points.items[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* ---- runsc 2022-12, built in ---- */

#define RAW_SYSCALLS_2022 442   /* syscall/sysno/0..441: runsc's lastSyscallInTable */

int runsc_target_2022(struct runsc_target *t)
{
    memset(t, 0, sizeof(*t));
    snprintf(t->label, sizeof(t->label), "runsc 2022-12 (0.0~20221219, built in)");
    static const struct {
        const char *name;
        unsigned optional;
    } sentry[] = {
        {"container/start", RULES_OPT_ENV}, {"sentry/clone", 0}, {"sentry/execve", RULES_OPT_BINARY_INFO},
        {"sentry/exit_notify_parent", 0}, {"sentry/task_exit", 0},
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof(sentry) / sizeof(sentry[0]); i++)
        rc |= rules_needs_add(&t->points, sentry[i].name, sentry[i].optional, RULES_CTX_2022, 0);
    const char *name;
    unsigned optional, release;
    for (size_t i = 0; rules_typed_syscall(i, &name, &optional, &release); i++)
        for (int exit = 0; exit < 2 && release == RULES_RUNSC_2022_12; exit++) {
            char point[RULES_POINT_MAX];
            snprintf(point, sizeof(point), "syscall/%s/%s", name, exit ? "exit" : "enter");
            rc |= rules_needs_add(&t->points, point, optional, RULES_CTX_2022, 0);
        }
    for (unsigned n = 0; n < RAW_SYSCALLS_2022; n++)
        for (int exit = 0; exit < 2; exit++) {
            char point[RULES_POINT_MAX];
            snprintf(point, sizeof(point), "syscall/sysno/%u/%s", n, exit ? "exit" : "enter");
            rc |= rules_needs_add(&t->points, point, 0, RULES_CTX_2022, 0);
        }
    if (rc != 0) {
        runsc_target_free(t);
        return -1;
    }
    return 0;
}

/* ---- `runsc trace metadata` ---- */

/* The bits of "a|b|c" (names it does not know left out). */
static unsigned parse_names(const char *s, size_t len, unsigned (*parse)(const char *))
{
    unsigned bits = 0;
    while (len) {
        const char *bar = memchr(s, '|', len);
        size_t n = bar ? (size_t)(bar - s) : len;
        char name[64];
        if (n < sizeof(name)) {
            memcpy(name, s, n);
            name[n] = '\0';
            bits |= parse(name);
        }
        s += n + (bar ? 1 : 0);
        len -= n + (bar ? 1 : 0);
    }
    return bits;
}

/* The text of "LABEL: [TEXT]" at *p (the line's end at end); false if not there. */
static bool bracketed(const char **p, const char *end, const char *label, const char **text, size_t *len)
{
    size_t n = strlen(label);
    if ((size_t)(end - *p) < n + 1 || memcmp(*p, label, n) != 0 || (*p)[n] != '[')
        return false;
    const char *open = *p + n + 1;
    const char *close = memchr(open, ']', (size_t)(end - open));
    if (!close)
        return false;
    *text = open;
    *len = (size_t)(close - open);
    *p = close + 1;
    return true;
}

/* "Name: P, optional fields: [..], context fields: [..]": 1 added, 0 not
 * such a line, -1 out of memory. */
static int parse_point(struct runsc_target *t, const char *line, const char *end)
{
    static const char head[] = "Name: ";
    if ((size_t)(end - line) < sizeof(head) - 1 || memcmp(line, head, sizeof(head) - 1) != 0)
        return 0;
    const char *name = line + sizeof(head) - 1;
    const char *comma = memchr(name, ',', (size_t)(end - name));
    if (!comma || comma == name || (size_t)(comma - name) >= RULES_POINT_MAX)
        return 0;   /* a sink ("Name: remote"), or a name no rule can need */
    const char *p = comma + 2, *opt, *ctx;
    size_t optlen, ctxlen;
    if (p > end || !bracketed(&p, end, "optional fields: ", &opt, &optlen) || (size_t)(end - p) < 2 ||
        (p += 2, !bracketed(&p, end, "context fields: ", &ctx, &ctxlen)))
        return 0;
    char point[RULES_POINT_MAX];
    memcpy(point, name, (size_t)(comma - name));
    point[comma - name] = '\0';
    unsigned o = parse_names(opt, optlen, rules_optional_parse), c = parse_names(ctx, ctxlen, rules_context_parse);
    return rules_needs_add(&t->points, point, o, c, 0) == 0 ? 1 : -1;
}

/* The newest release whose points and fields t shows. */
static unsigned release_shown(const struct runsc_target *t)
{
    unsigned r = RULES_RUNSC_2022_12, opt = 0, ctx = 0;
    for (size_t i = 0; i < t->points.count; i++) {
        opt |= t->points.items[i].optional;
        ctx |= t->points.items[i].context;
    }
    if (ctx & RULES_CTX_PARENT_THREAD_GROUP_ID)
        r = RULES_RUNSC_20260525;
    if (runsc_target_point(t, "sentry/mmap"))
        r = RULES_RUNSC_20260714;
    if ((ctx & RULES_CTX_IS_EXEC_SESSION) || (opt & RULES_OPT_FD_INFO) || runsc_target_point(t, "syscall/mmap/exit"))
        r = RULES_RUNSC_20260721;
    if ((opt & RULES_OPT_BINARY_SHA1) || runsc_target_point(t, "syscall/listen/exit") ||
        runsc_target_point(t, "syscall/ptrace/exit"))
        r = RULES_RUNSC_20260727;
    if (opt & RULES_OPT_PIPE_PROC_INFO)
        r = RULES_RUNSC_20260817;
    return r;
}

int runsc_target_parse(struct runsc_target *t, const char *label, const char *text, size_t len, char *err,
                       size_t errlen)
{
    memset(t, 0, sizeof(*t));
    snprintf(t->label, sizeof(t->label), "%s", label);
    size_t points = 0;
    for (const char *line = text, *end_all = text + len; line < end_all;) {
        const char *nl = memchr(line, '\n', (size_t)(end_all - line));
        const char *end = nl ? nl : end_all;
        int rc = parse_point(t, line, end);
        if (rc < 0) {
            snprintf(err, errlen, "out of memory");
            runsc_target_free(t);
            return -1;
        }
        if (rc > 0 && ++points > RUNSC_METADATA_MAX_POINTS) {
            snprintf(err, errlen, "%s: more than %d points: not what runsc prints", label, RUNSC_METADATA_MAX_POINTS);
            runsc_target_free(t);
            return -1;
        }
        line = end + (nl ? 1 : 0);
    }
    if (!t->points.count) {
        snprintf(err, errlen, "%s: no point in it (expected what `runsc trace metadata` prints: \"Name: POINT, "
                 "optional fields: [...], context fields: [...]\" lines)", label);
        runsc_target_free(t);
        return -1;
    }
    t->release = release_shown(t);
    return 0;
}

/* ---- running runsc ---- */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs argv with stdin /dev/null; its stdout into *out (malloc'd, at most
 * max bytes), the start of its stderr into errtext. Its exit status, or -1
 * with the problem in err (could not start, too much output, too slow). */
static int run_capture(char *const *argv, char **out, size_t *outlen, size_t max, int timeout_ms, char *errtext,
                       size_t errtextlen, char *err, size_t errlen)
{
    int opipe[2], epipe[2];
    *out = NULL;
    *outlen = 0;
    errtext[0] = '\0';
    if (pipe2(opipe, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    if (pipe2(epipe, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        close(opipe[0]);
        close(opipe[1]);
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, opipe[1], 1);
    posix_spawn_file_actions_adddup2(&fa, epipe[1], 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(opipe[1]);
    close(epipe[1]);
    if (rc != 0) {
        snprintf(err, errlen, "cannot run %s: %s", argv[0], strerror(rc));
        close(opipe[0]);
        close(epipe[0]);
        return -1;
    }
    char *buf = malloc(max + 1);
    size_t len = 0, elen = 0;
    const char *problem = buf ? NULL : "out of memory";
    int64_t deadline = now_ms() + timeout_ms;
    struct pollfd fds[2] = {{.fd = opipe[0], .events = POLLIN}, {.fd = epipe[0], .events = POLLIN}};
    while (!problem && (fds[0].fd >= 0 || fds[1].fd >= 0)) {
        int64_t left = deadline - now_ms();
        if (left <= 0) {
            problem = "took too long";
            break;
        }
        if (poll(fds, 2, (int)left) < 0) {
            if (errno == EINTR)
                continue;
            problem = "poll failed";
            break;
        }
        for (int k = 0; k < 2; k++) {
            if (fds[k].fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char tmp[8192];
            ssize_t n = read(fds[k].fd, tmp, sizeof(tmp));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                close(fds[k].fd);
                fds[k].fd = -1;
                continue;
            }
            if (k == 0) {
                if (len + (size_t)n > max) {
                    problem = "printed more than a runsc's metadata can be";
                    break;
                }
                memcpy(buf + len, tmp, (size_t)n);
                len += (size_t)n;
            } else if (elen + 1 < errtextlen) {
                size_t take = (size_t)n < errtextlen - 1 - elen ? (size_t)n : errtextlen - 1 - elen;
                memcpy(errtext + elen, tmp, take);
                elen += take;
                errtext[elen] = '\0';
            }
        }
    }
    for (int k = 0; k < 2; k++)
        if (fds[k].fd >= 0)
            close(fds[k].fd);
    /* it may have closed its output and still run: the same deadline */
    int status = 0;
    pid_t done = 0;
    while (!problem && (done = waitpid(pid, &status, WNOHANG)) == 0) {
        if (now_ms() >= deadline) {
            problem = "took too long";
            break;
        }
        struct timespec nap = {0, 10 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    if (done < 0 && errno != EINTR && !problem)
        problem = "could not be waited for";
    if (problem || done <= 0) {
        if (problem)
            kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    if (problem) {
        snprintf(err, errlen, "%s %s: %s", argv[0], argv[1] ? argv[1] : "", problem);
        free(buf);
        return -1;
    }
    buf[len] = '\0';
    *out = buf;
    *outlen = len;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* The first line of text, without control characters, cut to max. */
static void first_line(char *dst, size_t max, const char *text)
{
    size_t n = 0;
    for (const char *p = text; *p && *p != '\n' && n + 1 < max; p++)
        dst[n++] = (unsigned char)*p < 0x20 ? ' ' : *p;
    dst[n] = '\0';
}

int runsc_target_run(struct runsc_target *t, const char *runsc, char *err, size_t errlen)
{
    return runsc_target_run_within(t, runsc, RUNSC_METADATA_TIMEOUT_MS, err, errlen);
}

int runsc_target_run_within(struct runsc_target *t, const char *runsc, int timeout_ms, char *err, size_t errlen)
{
    memset(t, 0, sizeof(*t));
    char *out = NULL, errtext[512], version[96] = "";
    size_t len;
    char *vargv[] = {(char *)runsc, "--version", NULL};
    if (run_capture(vargv, &out, &len, 4096, timeout_ms, errtext, sizeof(errtext), err, errlen) == 0)
        first_line(version, sizeof(version), out);
    free(out);
    char *argv[] = {(char *)runsc, "trace", "metadata", NULL};
    int rc = run_capture(argv, &out, &len, RUNSC_METADATA_MAX, timeout_ms, errtext, sizeof(errtext), err, errlen);
    if (rc < 0)
        return -1;
    if (rc != 0) {
        char why[200];
        first_line(why, sizeof(why), errtext);
        snprintf(err, errlen, "%s trace metadata exited with %d%s%s", runsc, rc, why[0] ? ": " : "", why);
        free(out);
        return -1;
    }
    char label[RUNSC_TARGET_LABEL_MAX];
    snprintf(label, sizeof(label), "%s%s%s%s", runsc, version[0] ? " (" : "", version, version[0] ? ")" : "");
    rc = runsc_target_parse(t, label, out, len, err, errlen);
    free(out);
    return rc;
}

const char *runsc_target_find_in_path(char *buf, size_t buflen)
{
    const char *path = getenv("PATH");
    if (!path)
        return NULL;
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t n = colon ? (size_t)(colon - path) : strlen(path);
        if (n && (size_t)snprintf(buf, buflen, "%.*s/runsc", (int)n, path) < buflen && access(buf, X_OK) == 0)
            return buf;
        path += n + (colon ? 1 : 0);
    }
    return NULL;
}

static int read_metadata_file(struct runsc_target *t, const char *file, char *err, size_t errlen)
{
    FILE *fp = fopen(file, "rb");
    if (!fp) {
        snprintf(err, errlen, "cannot open %s: %s", file, strerror(errno));
        return -1;
    }
    char *buf = malloc(RUNSC_METADATA_MAX + 1);
    size_t len = buf ? fread(buf, 1, RUNSC_METADATA_MAX + 1, fp) : 0;
    bool failed = !buf || ferror(fp);
    fclose(fp);
    if (failed || len > RUNSC_METADATA_MAX) {
        snprintf(err, errlen, "cannot read %s: %s", file,
                 !buf ? "out of memory" : len > RUNSC_METADATA_MAX ? "larger than a runsc's metadata can be"
                                                                   : strerror(errno));
        free(buf);
        return -1;
    }
    int rc = runsc_target_parse(t, file, buf, len, err, errlen);
    free(buf);
    return rc;
}

int runsc_target_resolve(struct runsc_target *t, const char *runsc, const char *metadata_file, char *err,
                         size_t errlen)
{
    if (runsc && strcmp(runsc, "2022-12") == 0)
        return runsc_target_2022(t) == 0 ? 0 : (snprintf(err, errlen, "out of memory"), -1);
    if (runsc)
        return runsc_target_run(t, runsc, err, errlen);
    if (metadata_file)
        return read_metadata_file(t, metadata_file, err, errlen);
    char found[4096];
    if (runsc_target_find_in_path(found, sizeof(found)))
        return runsc_target_run(t, found, err, errlen);
    return runsc_target_2022(t) == 0 ? 0 : (snprintf(err, errlen, "out of memory"), -1);
}

/* ---- what a rule needs of the target ---- */

int runsc_target_keep(const struct runsc_target *t, const struct rules_needs *need, struct rules_needs *out)
{
    for (size_t i = 0; i < need->count; i++) {
        const struct rules_need *n = &need->items[i];
        const struct rules_need *h = runsc_target_point(t, n->point);
        if (h && rules_needs_add(out, n->point, n->optional & h->optional, n->context & h->context, n->why) != 0)
            return -1;
    }
    return 0;
}

size_t runsc_target_lacks(const struct runsc_target *t, const struct rules_needs *need,
                          void (*each)(void *ctx, const char *what, unsigned release), void *ctx)
{
    size_t n = 0;
    unsigned release = 0, said = 0;   /* the newest release a field needs; the newest one said */
    const char *release_field = NULL;
    char what[160];
    for (size_t i = 0; i < need->count; i++) {
        const struct rules_need *it = &need->items[i];
        if (it->release > release) {
            release = it->release;
            release_field = it->release_field;
        }
        const struct rules_need *h = runsc_target_point(t, it->point);
        if (!h) {
            snprintf(what, sizeof(what), "the point %s", it->point);
            unsigned r = runsc_release_of_point(it->point);
            each(ctx, what, r), n++;
            said = r > said && r < RULES_RUNSC_RELEASE_COUNT ? r : said;
            continue;
        }
        unsigned opt = it->optional & ~h->optional, ctx_bits = it->context & ~h->context & ~(unsigned)RULES_CTX_BEST_EFFORT;
        for (unsigned b = 0; b < RULES_OPT_COUNT; b++)
            if (opt >> b & 1) {
                snprintf(what, sizeof(what), "the optional field %s at %s", rules_optional_name(b), it->point);
                unsigned r = runsc_release_of_optional(1u << b);
                each(ctx, what, r), n++;
                said = r > said ? r : said;
            }
        for (unsigned b = 0; b < RULES_CTX_COUNT; b++)
            if (ctx_bits >> b & 1) {
                snprintf(what, sizeof(what), "the context field %s at %s", rules_context_name(b), it->point);
                unsigned r = runsc_release_of_context(1u << b);
                each(ctx, what, r), n++;
                said = r > said ? r : said;
            }
    }
    /* a field newer than the points and fields said: its release (binary_info
     * sends more in later releases) */
    if (release > t->release && release > said) {
        snprintf(what, sizeof(what), "it reads %s", release_field ? release_field : "a field");
        each(ctx, what, release), n++;
    }
    return n;
}

struct warn_ctx {
    FILE *out;
    const char *file, *kind, *name;   /* kind: "rule" or "sequence" */
    unsigned line;
    const struct runsc_target *t;
};

/* One warning: "needs a newer runsc than LABEL: WHAT (runsc RELEASE on)",
 * or "needs what LABEL does not have: WHAT" when no release this build
 * knows brought it, or the target's release should have it (a point
 * another runsc dropped). */
static void say(void *ctx, const char *what, unsigned release)
{
    const struct warn_ctx *w = ctx;
    if (!w->out)
        return;
    if (runsc_target_is_newer(w->t, release))
        fprintf(w->out, "%s:%u: warning: %s '%s' needs a newer runsc than %s: %s (runsc %s on)\n", w->file, w->line,
                w->kind, w->name, w->t->label, what, rules_runsc_release_name(release));
    else
        fprintf(w->out, "%s:%u: warning: %s '%s' needs what %s does not have: %s\n", w->file, w->line, w->kind,
                w->name, w->t->label, what);
}

bool runsc_target_is_newer(const struct runsc_target *t, unsigned release)
{
    return release < RULES_RUNSC_RELEASE_COUNT && release > t->release;
}

size_t runsc_target_warn(const struct runsc_target *t, const char *file, unsigned line, bool is_sequence,
                         const char *name, const struct rules_needs *need, FILE *out)
{
    struct warn_ctx w = {.out = out, .file = file, .kind = is_sequence ? "sequence" : "rule", .name = name,
                         .line = line, .t = t};
    return runsc_target_lacks(t, need, say, &w);
}
