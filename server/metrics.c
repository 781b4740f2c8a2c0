#include "metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

#define METRICS_BACKLOG 64
#define METRICS_SOCKET_MODE 0660
#define PROMETHEUS_TEXT "text/plain; version=0.0.4; charset=utf-8"

enum client_state { CLIENT_FREE = 0, CLIENT_READING, CLIENT_WRITING, CLIENT_CLOSING };

/* One connection slot; the slots live as long as the endpoint and are
 * reused, so a connection allocates nothing (the body grows once). */
struct metrics_client {
    struct metrics *m;
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } conn;
    uv_timer_t timer;               /* the whole exchange must fit in it */
    uv_write_t write_req;
    enum client_state state;
    int open_handles;
    uint64_t seq;                   /* accept order */
    size_t len;                     /* request bytes read */
    char head[256];                 /* status line and headers of the answer */
    struct strbuf body;
    char request[METRICS_REQUEST_MAX];
};

static void accept_into(struct metrics *m, struct metrics_client *c);

/* ---- slots ---- */

/* After stop, once the listener and every client have closed. */
static void release_if_done(struct metrics *m)
{
    if (!m->stopping || m->listening || m->busy > 0 || !m->clients)
        return;
    for (unsigned i = 0; i < METRICS_MAX_CLIENTS; i++)
        strbuf_free(&m->clients[i].body);
    free(m->clients);
    m->clients = NULL;
}

static void on_client_closed(uv_handle_t *h)
{
    struct metrics_client *c = h->data;
    if (--c->open_handles > 0)
        return;
    struct metrics *m = c->m;
    c->state = CLIENT_FREE;
    m->busy--;
    if (m->pending && !m->stopping) {
        m->pending = false;
        accept_into(m, c);   /* the connection that waited for this slot */
    }
    release_if_done(m);
}

static void close_client(struct metrics_client *c)
{
    if (c->state == CLIENT_FREE || c->state == CLIENT_CLOSING)
        return;
    c->state = CLIENT_CLOSING;
    uv_close(&c->conn.handle, on_client_closed);
    uv_close((uv_handle_t *)&c->timer, on_client_closed);
}

static struct metrics_client *free_slot(struct metrics *m)
{
    for (unsigned i = 0; i < METRICS_MAX_CLIENTS; i++)
        if (m->clients[i].state == CLIENT_FREE)
            return &m->clients[i];
    return NULL;
}

/* Every slot is taken: unless one is already closing (its slot goes to the
 * newcomer), close the oldest connection that has not sent a whole request.
 * A real scraper sends it as soon as it connects, so the oldest such is the
 * idlest; connections being answered are left to finish. */
static void make_room(struct metrics *m)
{
    struct metrics_client *oldest = NULL;
    for (unsigned i = 0; i < METRICS_MAX_CLIENTS; i++) {
        struct metrics_client *c = &m->clients[i];
        if (c->state == CLIENT_CLOSING)
            return;
        if (c->state == CLIENT_READING && (!oldest || c->seq < oldest->seq))
            oldest = c;
    }
    if (oldest) {
        log_debug("metrics: %d connections open; closing the idlest", METRICS_MAX_CLIENTS);
        close_client(oldest);
    }
}

/* ---- one request, one answer ---- */

static const char *status_text(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 431: return "Request Header Fields Too Large";
    default: return "Internal Server Error";
    }
}

static void on_written(uv_write_t *req, int status)
{
    (void)status;   /* the connection closes either way */
    close_client(req->data);
}

static void answer(struct metrics_client *c, int status)
{
    struct metrics *m = c->m;
    uv_read_stop(&c->conn.stream);
    c->state = CLIENT_WRITING;
    strbuf_reset(&c->body);
    if (status == 200) {
        m->render(&c->body, m->render_data);
        if (c->body.failed)
            status = 500;   /* out of memory: better no answer than half of one */
    }
    if (status != 200) {
        strbuf_reset(&c->body);
        strbuf_printf(&c->body, "%s%s\n", status_text(status), status == 404 ? ": try GET /metrics" : "");
    }
    int n = snprintf(c->head, sizeof(c->head),
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
                     status, status_text(status), status == 200 ? PROMETHEUS_TEXT : "text/plain; charset=utf-8",
                     c->body.len);
    uv_buf_t bufs[2] = {uv_buf_init(c->head, (unsigned)n),
                        uv_buf_init(c->body.data ? c->body.data : c->head, (unsigned)c->body.len)};
    c->write_req.data = c;
    if (uv_write(&c->write_req, &c->conn.stream, bufs, 2, on_written) != 0)
        close_client(c);
}

static bool token_is(const char *p, size_t len, const char *want)
{
    return len == strlen(want) && memcmp(p, want, len) == 0;
}

/* The request line, METHOD SP TARGET SP HTTP/1.x: 200 for GET /metrics
 * (query string allowed), 404 for anything else well-formed, else 400.
 * Headers are read (to find the request's end) but not interpreted. */
static int route(const struct metrics_client *c)
{
    const char *line = c->request, *eol = memchr(line, '\n', c->len);
    size_t len = (size_t)(eol - line);
    if (len > 0 && line[len - 1] == '\r')
        len--;
    const char *sp1 = memchr(line, ' ', len);
    const char *target = sp1 ? sp1 + 1 : NULL;
    const char *sp2 = target ? memchr(target, ' ', len - (size_t)(target - line)) : NULL;
    if (!sp2 || (size_t)(line + len - (sp2 + 1)) < 6 || memcmp(sp2 + 1, "HTTP/1", 6) != 0)
        return 400;
    size_t tlen = (size_t)(sp2 - target);
    const char *query = memchr(target, '?', tlen);
    if (query)
        tlen = (size_t)(query - target);
    return token_is(line, (size_t)(sp1 - line), "GET") && token_is(target, tlen, "/metrics") ? 200 : 404;
}

/* The blank line ending the headers, looked for only where new bytes could
 * complete it so a byte-at-a-time sender costs linear time. */
static bool request_complete(const struct metrics_client *c, size_t old_len)
{
    size_t from = old_len > 3 ? old_len - 3 : 0;
    const char *p = c->request + from;
    size_t n = c->len - from;
    return memmem(p, n, "\r\n\r\n", 4) || memmem(p, n, "\n\n", 2);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct metrics_client *c = h->data;
    (void)suggested;
    *buf = uv_buf_init(c->request + c->len, (unsigned)(sizeof(c->request) - c->len));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct metrics_client *c = s->data;
    (void)buf;
    if (nread < 0) {
        close_client(c);   /* gone before a whole request, or an error */
        return;
    }
    if (nread == 0 || c->state != CLIENT_READING)
        return;
    size_t old_len = c->len;
    c->len += (size_t)nread;
    if (request_complete(c, old_len))
        answer(c, route(c));
    else if (c->len == sizeof(c->request))
        answer(c, 431);
}

static void on_timeout(uv_timer_t *t)
{
    log_debug("metrics: closing a connection that did not finish within %d ms", METRICS_TIMEOUT_MS);
    close_client(t->data);
}

static void accept_into(struct metrics *m, struct metrics_client *c)
{
    strbuf_reset(&c->body);
    c->m = m;
    c->len = 0;
    c->seq = m->next_seq++;
    c->state = CLIENT_READING;
    c->open_handles = 2;
    m->busy++;
    if (m->unix_socket)
        uv_pipe_init(m->loop, &c->conn.pipe, 0);
    else
        uv_tcp_init(m->loop, &c->conn.tcp);
    uv_timer_init(m->loop, &c->timer);
    c->conn.handle.data = c->timer.data = c;
    int rc = uv_accept(&m->listener.stream, &c->conn.stream);
    if (rc == 0)
        rc = uv_read_start(&c->conn.stream, on_alloc, on_read);
    if (rc != 0) {
        log_debug("metrics: accept: %s", uv_strerror(rc));
        close_client(c);
        return;
    }
    uv_timer_start(&c->timer, on_timeout, METRICS_TIMEOUT_MS, 0);
}

static void on_connection(uv_stream_t *server, int status)
{
    struct metrics *m = server->data;
    if (status < 0) {
        if (m->accept_failures++ % 1000 == 0)
            log_warn("metrics: accept: %s (%" PRIu64 " so far)", uv_strerror(status), m->accept_failures);
        return;
    }
    struct metrics_client *c = free_slot(m);
    if (c) {
        accept_into(m, c);
        return;
    }
    /* Left unaccepted, the connection makes libuv stop watching the
     * listener until a slot frees (on_client_closed accepts it): further
     * ones wait in the kernel's backlog, not in our memory. */
    m->pending = true;
    make_room(m);
}

/* ---- listening ---- */

static int usage_error(const char *addr, char *err, size_t errlen)
{
    snprintf(err, errlen, "--metrics-listen %s: expected HOST:PORT on a loopback address (127.0.0.1:9464, "
             "[::1]:9464, localhost:9464) or unix:PATH", addr);
    return -1;
}

/* HOST:PORT to a socket address, refusing anything but loopback: the
 * metrics tell whoever reads them what the sandboxes do. Host names other
 * than localhost are not resolved (no DNS, no /etc/hosts surprises). */
static int loopback_address(const char *addr, struct sockaddr_storage *ss, char *err, size_t errlen)
{
    const char *colon = strrchr(addr, ':');
    char host[64], *end;
    if (!colon || colon == addr || (size_t)(colon - addr) >= sizeof(host))
        return usage_error(addr, err, errlen);
    snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
    size_t hl = strlen(host);
    if (hl > 2 && host[0] == '[' && host[hl - 1] == ']')
        snprintf(host, sizeof(host), "%.*s", (int)(hl - 2), addr + 1);
    errno = 0;
    unsigned long port = strtoul(colon + 1, &end, 10);
    if (colon[1] < '0' || colon[1] > '9' || errno || *end || port > 65535)
        return usage_error(addr, err, errlen);
    if (strcmp(host, "localhost") == 0)
        snprintf(host, sizeof(host), "127.0.0.1");
    memset(ss, 0, sizeof(*ss));
    struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    bool loopback;
    if (uv_ip4_addr(host, (int)port, in4) == 0)
        loopback = ntohl(in4->sin_addr.s_addr) >> 24 == 127;
    else if (uv_ip6_addr(host, (int)port, in6) == 0)
        loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
    else
        return usage_error(addr, err, errlen);
    if (!loopback) {
        snprintf(err, errlen, "--metrics-listen %s: %s is not a loopback address; the metrics reveal what the "
                 "sandboxes do, so they are served only on 127.0.0.1, ::1 or localhost, or on unix:PATH (put an "
                 "authenticating proxy in front to expose them further)", addr, host);
        return -1;
    }
    return 0;
}

static void log_tcp_address(struct metrics *m)
{
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    char ip[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (uv_tcp_getsockname(&m->listener.tcp, (struct sockaddr *)&ss, &len) != 0)
        return;
    if (ss.ss_family == AF_INET6) {
        uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof(ip));
        port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
        log_info("metrics: serving http://[%s]:%d/metrics", ip, port);
    } else {
        uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof(ip));
        port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        log_info("metrics: serving http://%s:%d/metrics", ip, port);
    }
}

static int listen_tcp(struct metrics *m, const char *addr, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    if (loopback_address(addr, &ss, err, errlen) != 0)
        return -1;
    int rc = uv_tcp_init(m->loop, &m->listener.tcp);
    if (rc == 0) {
        m->listening = true;
        m->listener.handle.data = m;
        /* libuv sets SO_REUSEADDR, so a restart can bind again at once. */
        rc = uv_tcp_bind(&m->listener.tcp, (struct sockaddr *)&ss, 0);
    }
    if (rc == 0)
        rc = uv_listen(&m->listener.stream, METRICS_BACKLOG, on_connection);
    if (rc != 0) {
        snprintf(err, errlen, "--metrics-listen %s: cannot listen: %s", addr, uv_strerror(rc));
        return -1;
    }
    log_tcp_address(m);
    return 0;
}

/* 0 when path is free to bind: absent, or a stale socket now removed. Never
 * replaces a file that is not a socket, nor a socket someone listens on. */
static int clear_stale_socket(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "--metrics-listen: cannot inspect %s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISSOCK(st.st_mode)) {
        snprintf(err, errlen, "--metrics-listen: %s exists and is not a socket; refusing to replace it (remove it "
                 "or choose another path)", path);
        return -1;
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    /* Non-blocking: a listener with a full backlog must not hang start-up. */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int rc = fd < 0 ? -1 : connect(fd, (struct sockaddr *)&sa, sizeof(sa));
    int why = errno;
    if (fd >= 0)
        close(fd);
    if (rc == 0 || (fd >= 0 && why != ECONNREFUSED)) {
        snprintf(err, errlen, "--metrics-listen: %s is a socket in use by another process (%s); choose another path",
                 path, rc == 0 ? "it accepts connections" : strerror(why));
        return -1;
    }
    if (fd < 0 || unlink(path) != 0) {
        snprintf(err, errlen, "--metrics-listen: cannot replace stale socket %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static bool is_unix_address(const char *addr)
{
    return strncmp(addr, "unix:", strlen("unix:")) == 0;
}

static int check_unix_path(const char *addr, char *err, size_t errlen)
{
    size_t len = strlen(addr + strlen("unix:"));
    if (len == 0 || len >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
        snprintf(err, errlen, "--metrics-listen %s: the socket path must be 1 to %zu bytes", addr,
                 sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
        return -1;
    }
    return 0;
}

int metrics_check_address(const char *addr, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    return is_unix_address(addr) ? check_unix_path(addr, err, errlen) : loopback_address(addr, &ss, err, errlen);
}

/* Bound here rather than by uv_pipe_bind, whose close unlinks the path
 * whoever it belongs to by then: we remove the file only while it is still
 * the one we bound (remove_socket_file). The fd, or a libuv error. */
static int bind_unix(struct metrics *m, const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, path, strlen(path) + 1);   /* length checked */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return uv_translate_sys_error(errno);
    struct stat st;
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || stat(path, &st) != 0) {
        int rc = uv_translate_sys_error(errno);
        close(fd);
        return rc;
    }
    snprintf(m->path, sizeof(m->path), "%s", path);
    m->dev = st.st_dev;
    m->ino = st.st_ino;
    if (chmod(path, METRICS_SOCKET_MODE) != 0) {   /* before listen: nobody connects meanwhile */
        int rc = uv_translate_sys_error(errno);
        close(fd);
        return rc;
    }
    return fd;
}

static int listen_unix(struct metrics *m, const char *addr, char *err, size_t errlen)
{
    const char *path = addr + strlen("unix:");
    if (check_unix_path(addr, err, errlen) != 0)
        return -1;
    if (clear_stale_socket(path, err, errlen) != 0)
        return -1;
    m->unix_socket = true;
    int fd = bind_unix(m, path);
    int rc = fd < 0 ? fd : uv_pipe_init(m->loop, &m->listener.pipe, 0);
    if (rc == 0) {
        m->listening = true;
        m->listener.handle.data = m;
        rc = uv_pipe_open(&m->listener.pipe, fd);
        if (rc != 0)
            close(fd);   /* not taken by the handle */
    } else if (fd >= 0) {
        close(fd);
    }
    if (rc == 0)
        rc = uv_listen(&m->listener.stream, METRICS_BACKLOG, on_connection);
    if (rc != 0) {
        snprintf(err, errlen, "--metrics-listen %s: cannot listen: %s (check that the directory exists and is "
                 "writable)", addr, uv_strerror(rc));
        return -1;
    }
    log_info("metrics: serving on unix:%s", path);
    return 0;
}

int metrics_start(struct metrics *m, uv_loop_t *loop, const char *addr, metrics_render_cb render, void *data,
                  char *err, size_t errlen)
{
    memset(m, 0, sizeof(*m));
    m->loop = loop;
    m->render = render;
    m->render_data = data;
    m->clients = calloc(METRICS_MAX_CLIENTS, sizeof(*m->clients));
    if (!m->clients) {
        snprintf(err, errlen, "--metrics-listen: out of memory");
        return -1;
    }
    int rc = is_unix_address(addr) ? listen_unix(m, addr, err, errlen) : listen_tcp(m, addr, err, errlen);
    if (rc != 0)
        metrics_stop(m);
    return rc;
}

static void on_listener_closed(uv_handle_t *h)
{
    struct metrics *m = h->data;
    m->listening = false;
    release_if_done(m);
}

/* The socket file, if it is still the one we bound (a new daemon may
 * already have replaced it). */
static void remove_socket_file(struct metrics *m)
{
    struct stat st;
    if (m->ino != 0 && lstat(m->path, &st) == 0 && st.st_dev == m->dev && st.st_ino == m->ino)
        unlink(m->path);
    m->ino = 0;
}

void metrics_stop(struct metrics *m)
{
    if (!m->clients && !m->listening)
        return;   /* never started, or already gone */
    m->stopping = true;
    if (m->listening && !uv_is_closing(&m->listener.handle))
        uv_close(&m->listener.handle, on_listener_closed);
    remove_socket_file(m);
    for (unsigned i = 0; m->clients && i < METRICS_MAX_CLIENTS; i++)
        close_client(&m->clients[i]);
    release_if_done(m);
}
