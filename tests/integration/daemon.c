#include "daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sqlite3.h>

#include "replay.h"

void daemon_prepare(struct daemon *d)
{
    memset(d, 0, sizeof(*d));
    snprintf(d->dir, sizeof(d->dir), "/tmp/seccheckd-test-XXXXXX");
    if (!mkdtemp(d->dir)) {
        perror("mkdtemp");
        abort();
    }
    snprintf(d->socket, sizeof(d->socket), "%s/s.sock", d->dir);
    snprintf(d->db, sizeof(d->db), "%s/events.db", d->dir);
    snprintf(d->log, sizeof(d->log), "%s/daemon.log", d->dir);
}

char *daemon_read_log(const struct daemon *d)
{
    FILE *f = fopen(d->log, "r");
    if (!f)
        return strdup("");
    char *buf = NULL;
    size_t cap = 0, len = 0, n;
    char chunk[4096];
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            buf = realloc(buf, cap);
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    fclose(f);
    if (!buf)
        return strdup("");
    buf[len] = '\0';
    return buf;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

bool daemon_spawn(struct daemon *d, const char *const *argv, const char *ready)
{
    /* Truncated here, not in the child, so a previous run's log is gone
     * before we start looking for the ready line. */
    int fd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    d->pid = fork();
    if (d->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);   /* a failed test never leaves a daemon behind */
        dup2(fd, 1);
        dup2(fd, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(fd);
    for (int i = 0; i < 500; i++) {   /* up to 5 s: slow under sanitizers */
        char *log = daemon_read_log(d);
        bool up = strstr(log, ready) != NULL;
        free(log);
        if (up)
            return true;
        int status;
        if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
            d->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            d->pid = 0;
            return false;
        }
        sleep_ms(10);
    }
    return false;
}

bool daemon_start(struct daemon *d, const char *binary, const char *const *extra_args)
{
    const char *argv[64];
    int n = 0;
    argv[n++] = binary;
    argv[n++] = "--socket";
    argv[n++] = d->socket;
    argv[n++] = "--db";
    argv[n++] = d->db;
    for (int i = 0; extra_args && extra_args[i] && n < 62; i++)
        argv[n++] = extra_args[i];
    argv[n] = NULL;
    return daemon_spawn(d, argv, "info: listening on");
}

int daemon_stop(struct daemon *d)
{
    if (d->pid <= 0)
        return d->exit_status;
    kill(d->pid, SIGTERM);
    int status;
    /* A daemon that hangs on SIGTERM is a failure, not a ctest timeout. */
    for (int i = 0; i < 2000 && waitpid(d->pid, &status, WNOHANG) == 0; i++)
        sleep_ms(10);
    if (waitpid(d->pid, &status, WNOHANG) == 0) {
        fprintf(stderr, "daemon %d ignored SIGTERM for 20 s: killing it\n", (int)d->pid);
        kill(d->pid, SIGKILL);
        waitpid(d->pid, &status, 0);
        d->pid = 0;
        d->exit_status = 124;
        return d->exit_status;
    }
    d->pid = 0;
    d->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return d->exit_status;
}

int daemon_log_count(const struct daemon *d, const char *needle)
{
    char *log = daemon_read_log(d);
    int seen = 0;
    for (const char *p = log; (p = strstr(p, needle)) != NULL; p++)
        seen++;
    free(log);
    return seen;
}

bool daemon_wait_log(const struct daemon *d, const char *needle, int n, int timeout_ms)
{
    for (int waited = 0; waited <= timeout_ms; waited += 10) {
        if (daemon_log_count(d, needle) >= n)
            return true;
        sleep_ms(10);
    }
    return false;
}

int replay_file(const char *socket, const char *trace_path)
{
    struct replay_trace t;
    char err[512];
    if (replay_trace_load(&t, trace_path, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    int fd = replay_connect(socket, t.version, 5000, err, sizeof(err));
    int rc = fd < 0 ? -1 : 0;
    if (fd < 0)
        fprintf(stderr, "%s\n", err);
    for (size_t i = 0; rc == 0 && i < t.count; i++)
        if (replay_send(fd, t.packets[i], t.lengths[i]) != 0) {
            perror("send");
            rc = -1;
        }
    if (fd >= 0)
        close(fd);
    replay_trace_free(&t);
    return rc;
}

void daemon_cleanup(struct daemon *d)
{
    if (d->pid > 0)
        daemon_stop(d);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", d->dir);
}

long long db_query_int(const char *db, const char *sql)
{
    sqlite3 *h;
    long long v = -1;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
        else
            fprintf(stderr, "query failed: %s: %s\n", sql, sqlite3_errmsg(h));
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return v;
}
