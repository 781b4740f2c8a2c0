#include "daemon.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "listener.h"
#include "replay.h"

#ifndef TRACES_DIR
#error "TRACES_DIR must be defined (tests/fixtures/traces, set by tests/CMakeLists.txt)"
#endif

void daemon_prepare(struct daemon *d)
{
    memset(d, 0, sizeof(*d));
    snprintf(d->dir, sizeof(d->dir), "/tmp/seccheckd-test-XXXXXX");
    if (!reaper_mkdtemp(d->dir))
        fail_msg("mkdtemp %s: %s", d->dir, strerror(errno));
    snprintf(d->socket, sizeof(d->socket), "%s/s.sock", d->dir);
    snprintf(d->db, sizeof(d->db), "%s/events.db", d->dir);
    snprintf(d->log, sizeof(d->log), "%s/daemon.log", d->dir);
    snprintf(d->runsc_root, sizeof(d->runsc_root), "%s/runsc-root", d->dir);
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

void daemon_print_log_tail(const struct daemon *d, int lines)
{
    char *log = daemon_read_log(d);
    const char *p = log + strlen(log);
    for (int n = 0; p > log && n <= lines; p--)
        n += p[-1] == '\n';
    fprintf(stderr, "--- the daemon's last lines:\n%s", p);
    free(log);
}

/* Appends what fd has to buf (cut at len - 1); false at its end. */
static bool drain(int fd, char *buf, size_t len, size_t *used)
{
    char chunk[4096];
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n <= 0)
        return n < 0 && errno == EINTR;
    size_t take = buf && *used + 1 < len ? len - 1 - *used : 0;
    if (take > (size_t)n)
        take = (size_t)n;
    if (take)
        memcpy(buf + *used, chunk, take);
    *used += take;
    return true;
}

int run_command(const char *const *argv, char *out, size_t outlen, char *err, size_t errlen)
{
    int po[2], pe[2];
    assert_int_equal(pipe(po), 0);
    assert_int_equal(pipe(pe), 0);
    pid_t pid = reaper_fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(po[0]);
        close(pe[0]);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    size_t nout = 0, nerr = 0;
    struct pollfd fds[2] = {{.fd = po[0], .events = POLLIN}, {.fd = pe[0], .events = POLLIN}};
    int open_fds = 2;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (long waited = 0; open_fds && waited < 60000;) {
        int r = poll(fds, 2, 100);
        clock_gettime(CLOCK_MONOTONIC, &now);
        waited = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
        for (int i = 0; r > 0 && i < 2; i++)
            if (fds[i].fd >= 0 && fds[i].revents &&
                !drain(fds[i].fd, i ? err : out, i ? errlen : outlen, i ? &nerr : &nout)) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0)
            close(fds[i].fd);
    if (out && outlen)
        out[nout] = '\0';
    if (err && errlen)
        err[nerr] = '\0';
    return reaper_wait_within(pid, 1000);
}

void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

pid_t spawn_program(const char *const *argv, const char *out, const char *err)
{
    pid_t pid = reaper_fork();
    if (pid < 0)
        fail_msg("fork: %s", strerror(errno));
    if (pid == 0) {
        if ((out && !freopen(out, "w", stdout)) || (err && !freopen(err, "w", stderr)))
            _exit(126);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* daemon_spawn; nofile > 0 also sets RLIMIT_NOFILE (soft and hard) in the
 * child before exec. */
static bool spawn_limited(struct daemon *d, const char *const *argv, const char *ready, unsigned nofile)
{
    /* Truncated here, not in the child, so a previous run's log is gone
     * before we start looking for the ready line. */
    int fd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        fail_msg("cannot create %s: %s", d->log, strerror(errno));
    d->pid = reaper_fork();
    if (d->pid < 0)
        fail_msg("fork: %s", strerror(errno));
    if (d->pid == 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        struct rlimit rl = {.rlim_cur = nofile, .rlim_max = nofile};
        if (nofile > 0 && setrlimit(RLIMIT_NOFILE, &rl) != 0)
            _exit(126);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(fd);
    /* Up to 60 s: a correctness test does not time the start. ASan on a
     * machine at load 8 took longer than the 5 s this was to load
     * integration.restart_drops' 3 MB of rules; a daemon that is up
     * returns at once. */
    for (int i = 0; i < 6000; i++) {
        char *log = daemon_read_log(d);
        bool up = strstr(log, ready) != NULL;
        free(log);
        if (up)
            return true;
        int code = reaper_poll(d->pid);
        if (code >= 0) {
            d->exit_status = code;
            d->pid = 0;
            return false;
        }
        sleep_ms(10);
    }
    return false;
}

bool daemon_spawn(struct daemon *d, const char *const *argv, const char *ready)
{
    return spawn_limited(d, argv, ready, 0);
}

/* Whether args name option (as "--opt VALUE" or "--opt=VALUE") or a
 * --config file, which may. */
static bool args_set(const char *const *args, const char *option)
{
    size_t len = strlen(option);
    for (int i = 0; args && args[i]; i++)
        if (strcmp(args[i], "--config") == 0 || strncmp(args[i], "--config=", 9) == 0 ||
            (strncmp(args[i], option, len) == 0 && (args[i][len] == '\0' || args[i][len] == '=')))
            return true;
    return false;
}

/* daemon_start; nofile > 0: under that open-file limit. */
static bool start_limited(struct daemon *d, const char *binary, const char *const *extra_args, unsigned nofile)
{
    const char *argv[64];
    int n = 0;
    argv[n++] = binary;
    argv[n++] = "--socket";
    argv[n++] = d->socket;
    argv[n++] = "--db";
    argv[n++] = d->db;
    if (!args_set(extra_args, "--runsc-root")) {
        if (mkdir(d->runsc_root, 0700) != 0 && errno != EEXIST)
            fail_msg("mkdir %s: %s", d->runsc_root, strerror(errno));
        argv[n++] = "--runsc-root";
        argv[n++] = d->runsc_root;
    }
    if (!args_set(extra_args, "--docker-socket")) {
        argv[n++] = "--docker-socket";
        argv[n++] = "none";
    }
    for (int i = 0; extra_args && extra_args[i] && n < 62; i++)
        argv[n++] = extra_args[i];
    argv[n] = NULL;
    return spawn_limited(d, argv, "info: listening on", nofile);
}

bool daemon_start(struct daemon *d, const char *binary, const char *const *extra_args)
{
    return start_limited(d, binary, extra_args, 0);
}

bool daemon_start_nofile(struct daemon *d, const char *binary, const char *const *extra_args, unsigned nofile)
{
    return start_limited(d, binary, extra_args, nofile);
}

int daemon_stop_within(struct daemon *d, int timeout_ms)
{
    /* A daemon that hangs on SIGTERM is a failure, not a ctest timeout. */
    if (d->pid > 0)
        kill(d->pid, SIGTERM);
    return daemon_wait_exit(d, timeout_ms);
}

int daemon_wait_exit(struct daemon *d, int timeout_ms)
{
    if (d->pid <= 0)
        return d->exit_status;
    d->exit_status = reaper_wait_within(d->pid, timeout_ms);
    if (d->exit_status == 124)
        fprintf(stderr, "daemon %d did not exit within %d ms after SIGTERM: killed it\n", (int)d->pid, timeout_ms);
    d->pid = 0;
    return d->exit_status;
}

int daemon_stop(struct daemon *d)
{
    return daemon_stop_within(d, 20000);
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

static int trace_load_path(struct replay_trace *t, const char *path)
{
    char err[512];
    if (replay_trace_load(t, path, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return 0;
}

int trace_load_named(struct replay_trace *t, const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s.trace", TRACES_DIR, name);
    return trace_load_path(t, path);
}

int traces_load(struct replay_trace *traces, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (trace_load_named(&traces[i], names[i]) != 0) {
            traces_free(traces, i);
            return -1;
        }
    return 0;
}

void traces_free(struct replay_trace *traces, int n)
{
    for (int i = 0; i < n; i++)
        replay_trace_free(&traces[i]);
}

bool traces_equal(const struct replay_trace *a, const struct replay_trace *b)
{
    bool same = a->count == b->count;
    for (size_t i = 0; same && i < a->count; i++)
        same = a->lengths[i] == b->lengths[i] && memcmp(a->packets[i], b->packets[i], a->lengths[i]) == 0;
    return same;
}

int trace_fixture_setup(void **state, const char *const *names, int n)
{
    struct trace_fixture *f = calloc(1, sizeof(*f));
    struct replay_trace *traces = calloc((size_t)n, sizeof(*traces));
    if (!f || !traces || traces_load(traces, names, n) != 0) {
        free(traces);
        free(f);
        return -1;
    }
    *f = (struct trace_fixture){.traces = traces, .n = n};
    for (int i = 0; i < n; i++)
        f->packets += traces[i].count;
    *state = f;
    return 0;
}

int trace_fixture_teardown(void **state)
{
    struct trace_fixture *f = *state;
    if (f) {
        traces_free(f->traces, f->n);
        free(f->traces);
        free(f);
    }
    return 0;
}

int replay_open(const char *socket, uint32_t version)
{
    char err[512];
    int fd = replay_connect(socket, version, 5000, err, sizeof(err));
    if (fd < 0)
        fprintf(stderr, "%s\n", err);
    return fd;
}

int replay_packets(int fd, const struct replay_trace *t)
{
    for (size_t i = 0; i < t->count; i++)
        if (replay_send(fd, t->packets[i], t->lengths[i]) != 0) {
            fprintf(stderr, "send packet %zu of %s: %s\n", i, t->path, strerror(errno));
            return -1;
        }
    return 0;
}

int replay_connection(const char *socket, const struct replay_trace *t, uint32_t version)
{
    int fd = replay_open(socket, version);
    if (fd < 0)
        return -1;
    int rc = replay_packets(fd, t);
    close(fd);
    return rc;
}

struct sender {
    const char *socket;
    const struct replay_trace *trace;
    uint32_t version;
    int rc;
};

static void *sender_main(void *arg)
{
    struct sender *s = arg;
    s->rc = replay_connection(s->socket, s->trace, s->version);
    return NULL;
}

int replay_concurrently(const char *socket, const struct replay_trace *const *traces, const uint32_t *versions,
                        int n)
{
    pthread_t *threads = calloc((size_t)n, sizeof(*threads));
    struct sender *senders = calloc((size_t)n, sizeof(*senders));
    int rc = threads && senders ? 0 : -1;
    int started = 0;
    while (rc == 0 && started < n) {
        struct sender *s = &senders[started];
        *s = (struct sender){.socket = socket, .trace = traces[started],
                             .version = versions ? versions[started] : traces[started]->version};
        if (pthread_create(&threads[started], NULL, sender_main, s) != 0) {
            fprintf(stderr, "pthread_create failed for connection %d\n", started);
            rc = -1;
        } else {
            started++;
        }
    }
    for (int i = 0; i < started; i++) {
        pthread_join(threads[i], NULL);
        if (senders[i].rc != 0)
            rc = -1;
    }
    free(threads);
    free(senders);
    return rc;
}

int replay_file(const char *socket, const char *trace_path)
{
    struct replay_trace t;
    if (trace_load_path(&t, trace_path) != 0)
        return -1;
    int rc = replay_connection(socket, &t, t.version);
    replay_trace_free(&t);
    return rc;
}

void send_bytes(int fd, const void *buf, size_t len)
{
    ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
    if (n != (ssize_t)len)
        fail_msg("send of %zu bytes: %zd (%s)", len, n, strerror(errno));
}

int connect_raw(const char *socket, const void *bytes, size_t len)
{
    int fd = listener_connect(socket);
    assert_true(fd >= 0);
    if (bytes)
        send_bytes(fd, bytes, len);
    return fd;
}

bool closed_by_peer(int fd, int timeout_ms)
{
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char buf[64];
    return recv(fd, buf, sizeof(buf), 0) == 0;
}

void daemon_cleanup(struct daemon *d)
{
    if (d->pid > 0)
        daemon_stop(d);
    if (reaper_remove(d->dir) != 0)
        fprintf(stderr, "could not remove %s: %s\n", d->dir, strerror(errno));
}

bool verify_ok(const char *binary, const char *db)
{
    char cmd[1200], out[2048] = "";
    snprintf(cmd, sizeof(cmd), "%s verify --db %s", binary, db);
    FILE *p = popen(cmd, "r");
    if (!p)
        return false;
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    int rc = pclose(p);
    printf("verify: %s", out);
    return rc == 0 && strstr(out, "ok:");
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

long long dbq(const struct daemon *d, const char *fmt, ...)
{
    char sql[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    return db_query_int(d->db, sql);
}

long long sqlq(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    if (sqlite3_step(st) != SQLITE_ROW)
        fail_msg("%s: no row (%s)", sql, sqlite3_errmsg(db));
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

long long json_file_number(const char *path, const char *key)
{
    FILE *in = fopen(path, "r");
    if (!in)
        fail_msg("cannot open %s", path);
    char json[4096];
    size_t len = fread(json, 1, sizeof(json) - 1, in);
    fclose(in);
    json[len] = '\0';
    char needle[64];
    snprintf(needle, sizeof(needle), "\"%s\":", key);
    const char *at = strstr(json, needle);
    if (!at)
        fail_msg("no %s in %s: %s", key, path, json);
    return strtoll(at + strlen(needle), NULL, 10);
}

double metric(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (strncmp(line, series, n) == 0 && line[n] == ' ')
            return strtod(line + n + 1, NULL);
    return -1;
}

/* Python's pty module: the child on a pseudo-terminal, its bytes copied out. */
static const char pty_run_py[] =
    "import os, pty, sys\n"
    "if sys.argv[1] != '-':\n"
    "    os.environ['NO_COLOR'] = sys.argv[1]\n"
    "else:\n"
    "    os.environ.pop('NO_COLOR', None)\n"
    "os.environ['TERM'] = 'xterm'\n"
    "pid, fd = pty.fork()\n"
    "if pid == 0:\n"
    "    os.execv(sys.argv[2], sys.argv[2:])\n"
    "out = b''\n"
    "while True:\n"
    "    try:\n"
    "        chunk = os.read(fd, 65536)\n"
    "    except OSError:\n"
    "        break\n"
    "    if not chunk:\n"
    "        break\n"
    "    out += chunk\n"
    "_, status = os.waitpid(pid, 0)\n"
    "sys.stdout.buffer.write(out)\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n";

int run_on_terminal(const char *const *argv, const char *no_color, char *out, size_t outlen)
{
    const char *args[64] = {"/usr/bin/python3", "-c", pty_run_py, no_color ? no_color : "-"};
    size_t n = 4;
    for (size_t i = 0; argv[i] && n < 63; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    return run_command(args, out, outlen, NULL, 0);
}

void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static int64_t monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int connect_unix(const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(a.sun_path))
        return -1;
    memcpy(a.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

char *http_exchange(int fd, const char *request, size_t request_len, int timeout_ms)
{
    if (fd < 0)
        return NULL;
    size_t off = 0;
    while (off < request_len) {
        ssize_t n = send(fd, request + off, request_len - off, MSG_NOSIGNAL);
        if (n <= 0)
            break;   /* the server may close early (e.g. on an oversized request): read what it said */
        off += (size_t)n;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    int64_t deadline = monotonic_ms() + timeout_ms;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int left = (int)(deadline - monotonic_ms());
        if (left <= 0 || poll(&p, 1, left) <= 0) {
            free(buf);
            buf = NULL;
            break;
        }
        if (len + 4096 > cap)
            buf = realloc(buf, cap *= 2);
        ssize_t n = recv(fd, buf + len, cap - len - 1, 0);
        if (n <= 0)
            break;   /* EOF, or reset after the answer */
        len += (size_t)n;
    }
    close(fd);
    if (buf)
        buf[len] = '\0';
    return buf;
}

char *scrape_metrics_unix(const char *path)
{
    static const char scrape[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
    return http_exchange(connect_unix(path), scrape, strlen(scrape), 10000);
}

double metric_scrape(const char *path, const char *series)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "curl -s --unix-socket %s http://x/metrics", path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof(text) - 1, p);
    text[n] = '\0';
    pclose(p);
    return metric(text, series);
}

long rss_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    long kib = -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

int open_fd_count(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    DIR *dir = opendir(path);
    assert_non_null(dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(dir));)
        n += e->d_name[0] != '.';
    closedir(dir);
    return n;
}

bool wait_file_open(pid_t pid, const char *path, int timeout_ms)
{
    char dir_path[64], link[400], target[4096];
    snprintf(dir_path, sizeof(dir_path), "/proc/%d/fd", (int)pid);
    for (int waited = 0; waited <= timeout_ms; waited += 20) {
        DIR *dir = opendir(dir_path);
        for (struct dirent *e; dir && (e = readdir(dir));) {
            snprintf(link, sizeof(link), "%s/%s", dir_path, e->d_name);
            ssize_t n = readlink(link, target, sizeof(target) - 1);
            if (n > 0 && (target[n] = '\0', strcmp(target, path) == 0)) {
                closedir(dir);
                return true;
            }
        }
        if (dir)
            closedir(dir);
        sleep_ms(20);
    }
    return false;
}

long cpu_time_ms(pid_t pid, pid_t tid)
{
    char path[64], buf[1024];
    if (tid > 0)
        snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
    else
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot read %s", path);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* Fields 14 and 15 (utime, stime), counted after the ")" that ends the
     * command name, which may itself hold spaces. */
    const char *p = strrchr(buf, ')');
    unsigned long long utime = 0, stime = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
        fail_msg("cannot parse %s", path);
    return (long)((utime + stime) * 1000 / (unsigned long long)sysconf(_SC_CLK_TCK));
}

int daemon_setup(void **state)
{
    struct daemon *d = calloc(1, sizeof(*d));
    if (!d)
        return -1;
    daemon_prepare(d);
    *state = d;
    return 0;
}

int daemon_teardown(void **state)
{
    struct daemon *d = *state;
    daemon_cleanup(d);
    free(d);
    reaper_clear();
    return 0;
}

/* The number after key on the log's summary line that holds anchor. */
long long summary_number(const char *log, const char *anchor, const char *key)
{
    const char *line = strstr(log, anchor);
    if (!line)
        fail_msg("no summary line with '%s' in the log", anchor);
    const char *end = strchr(line, '\n');
    const char *k = strstr(line, key);
    if (!k || (end && k > end))
        fail_msg("no '%s' on the summary line '%s'", key, anchor);
    return strtoll(k + strlen(key), NULL, 10);
}
