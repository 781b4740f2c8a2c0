#include "restart_check.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "relay_log.h"

#define RUNNING_IMAGE "/proc/self/exe"   /* in the child, a fork: the same file as ours */

struct restart_check {
    uv_process_t process;
    uv_timer_t timer;
    int open_handles;
    bool cancelled;
    bool timed_out;
    struct restart_check_result result;
    int report_fd;                        /* our end of the report pipe */
    char binary[4096];
    char failure[4200];
    restart_check_done done;
    void *data;
};

static void on_closed(uv_handle_t *h)
{
    struct restart_check *c = h->data;
    if (--c->open_handles == 0) {
        if (c->report_fd >= 0)
            close(c->report_fd);
        free(c);
    }
}

/* What the check wrote before it exited ("relay-log N" lines). */
static void read_report(struct restart_check *c)
{
    char buf[256];
    ssize_t n = c->report_fd >= 0 ? read(c->report_fd, buf, sizeof(buf) - 1) : 0;
    buf[n > 0 ? n : 0] = '\0';
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        int version;
        if (sscanf(line, "relay-log %d", &version) == 1 && version == RELAY_LOG_VERSION)
            c->result.reads_relay_log = true;
    }
}

static void close_handles(struct restart_check *c)
{
    uv_close((uv_handle_t *)&c->timer, on_closed);
    uv_close((uv_handle_t *)&c->process, on_closed);
}

static void describe_failure(struct restart_check *c, int64_t status, int signum)
{
    const char *what = c->result.runs_current_image ? "the running image" : c->binary;
    if (c->timed_out)
        snprintf(c->failure, sizeof(c->failure), "%s did not finish its check within %d s", what,
                 RESTART_CHECK_TIMEOUT_MS / 1000);
    else if (signum)
        snprintf(c->failure, sizeof(c->failure), "%s died of signal %d (%s) checking the settings", what, signum,
                 strsignal(signum));
    else if (status)
        snprintf(c->failure, sizeof(c->failure), "%s exited with status %lld checking the settings (its messages "
                 "are above)", what, (long long)status);
}

static void on_check_exit(uv_process_t *p, int64_t status, int signum)
{
    struct restart_check *c = p->data;
    uv_timer_stop(&c->timer);
    if (!c->cancelled) {
        read_report(c);
        describe_failure(c, status, signum);
        c->result.failure = c->failure[0] ? c->failure : NULL;
        c->done(&c->result, c->data);
    }
    close_handles(c);
}

static void on_timeout(uv_timer_t *t)
{
    struct restart_check *c = t->data;
    c->timed_out = true;
    uv_process_kill(&c->process, SIGKILL);
}

/* `BINARY check ARGS...`: the daemon's arguments after its own name. */
static char **check_args(const char *binary, char *const *argv)
{
    size_t n = 0;
    while (argv[n])
        n++;
    char **args = calloc(n + 2, sizeof(*args));
    if (!args)
        return NULL;
    args[0] = (char *)binary;
    args[1] = "check";
    for (size_t i = 1; i < n; i++)
        args[i + 1] = argv[i];
    return args;
}

/* Our environment and RESTART_CHECK_REPORT_ENV=3; NULL: no memory. */
static char **report_env(void)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 2, sizeof(*env));
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], RESTART_CHECK_REPORT_ENV "=", strlen(RESTART_CHECK_REPORT_ENV) + 1) != 0)
            env[k++] = environ[i];
    env[k] = RESTART_CHECK_REPORT_ENV "=3";
    return env;
}

/* Standard input and output closed (stdout may be the NDJSON stream), its
 * messages on our standard error, that is in our log; descriptor 3 the
 * write end of the report pipe. */
static int spawn(struct restart_check *c, uv_loop_t *loop, const char *file, char **args)
{
    int pipefd[2] = {-1, -1};
    char **env = report_env();
    if (env && pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) == 0)
        c->report_fd = pipefd[0];
    else   /* no report: the check runs all the same, the restart goes without a relay */
        log_warn("restart: cannot ask the build what it takes over (%s); it is handed no relay", strerror(errno));
    uv_stdio_container_t stdio[4] = {{.flags = UV_IGNORE}, {.flags = UV_IGNORE},
                                     {.flags = UV_INHERIT_FD, .data.fd = STDERR_FILENO},
                                     {.flags = UV_INHERIT_FD, .data.fd = pipefd[1]}};
    uv_process_options_t o = {.exit_cb = on_check_exit, .file = file, .args = args,
                              .env = c->report_fd >= 0 ? env : NULL, .stdio_count = c->report_fd >= 0 ? 4 : 3,
                              .stdio = stdio};
    int rc = uv_spawn(loop, &c->process, &o);
    if (pipefd[1] >= 0)
        close(pipefd[1]);
    free(env);
    return rc;
}

struct restart_check *restart_check_start(uv_loop_t *loop, const char *binary, char *const *argv,
                                          restart_check_done done, void *data, char *err, size_t errlen)
{
    struct restart_check *c = calloc(1, sizeof(*c));
    char **args = c ? check_args(binary, argv) : NULL;
    if (!args) {
        free(c);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    *c = (struct restart_check){.done = done, .data = data, .open_handles = 2, .report_fd = -1};
    snprintf(c->binary, sizeof(c->binary), "%s", binary);
    c->process.data = c->timer.data = c;
    uv_timer_init(loop, &c->timer);
    const char *file = binary;
    if (access(binary, X_OK) != 0 || stat(binary, &c->result.checked) != 0) {
        log_error("restart: cannot execute %s: %s; checking the running image instead", binary, strerror(errno));
        c->result.runs_current_image = true;
        file = RUNNING_IMAGE;
    }
    int rc = spawn(c, loop, file, args);
    free(args);
    if (rc != 0) {
        snprintf(err, errlen, "cannot run %s to check the settings: %s", file, uv_strerror(rc));
        close_handles(c);
        return NULL;
    }
    uv_timer_start(&c->timer, on_timeout, RESTART_CHECK_TIMEOUT_MS, 0);
    return c;
}

void restart_check_cancel(struct restart_check *c)
{
    c->cancelled = true;
    uv_process_kill(&c->process, SIGKILL);   /* on_check_exit closes it once reaped */
}

void restart_check_report(void)
{
    const char *env = getenv(RESTART_CHECK_REPORT_ENV);
    if (!env)
        return;
    int fd = atoi(env);
    unsetenv(RESTART_CHECK_REPORT_ENV);
    if (fd > 2 && dprintf(fd, "relay-log %d\n", RELAY_LOG_VERSION) < 0)
        log_warn("check: cannot tell the restart what this build takes over: %s", strerror(errno));
    if (fd > 2)
        close(fd);
}

bool restart_check_same_binary(const char *binary, const struct stat *checked)
{
    struct stat now;
    return stat(binary, &now) == 0 && now.st_dev == checked->st_dev && now.st_ino == checked->st_ino &&
           now.st_size == checked->st_size && now.st_mtim.tv_sec == checked->st_mtim.tv_sec &&
           now.st_mtim.tv_nsec == checked->st_mtim.tv_nsec;
}
