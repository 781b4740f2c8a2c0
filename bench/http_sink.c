/* http_sink.c - bench-http-sink: a fast local HTTP/1.1 receiver for the
 * delivery benchmarks (bench/deliver.sh, bench/lib.sh's
 * sqlite+rules20+deliver): one thread, epoll, keep-alive, answers every
 * POST 200 with an empty body and counts them, so what limits a
 * measurement is seccheckd's delivery, not the receiver (a Python
 * http.server takes a few thousand requests a second on one core).
 *
 * Usage: bench-http-sink PORT_FILE
 * Listens on 127.0.0.1 (a free port, written to PORT_FILE), prints
 * "listening on PORT"; on SIGTERM or SIGINT prints "requests N bytes B"
 * (B: request bodies) and exits. Not hardened: a benchmark tool for
 * loopback only (requests up to 64 KiB, at most 64 connections).
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_CONNS 64
#define BUF_SIZE (64 * 1024)

struct conn {
    int fd;
    size_t len;
    char buf[BUF_SIZE];
};

static unsigned long long requests, body_bytes;

static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";

/* Bytes of the first whole request in c (0: not whole yet, -1: bad). */
static long whole_request(const struct conn *c, size_t *body)
{
    const char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
    if (!end)
        return c->len == BUF_SIZE ? -1 : 0;
    size_t head = (size_t)(end - c->buf) + 4, clen = 0;
    for (const char *p = c->buf; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if ((size_t)(end - p) > 15 && strncasecmp(p, "content-length:", 15) == 0)
            clen = strtoul(p + 15, NULL, 10);
        if (!nl)
            break;
        p = nl + 1;
    }
    if (head + clen > BUF_SIZE)
        return -1;
    *body = clen;
    return c->len >= head + clen ? (long)(head + clen) : 0;
}

/* Reads what is there and answers every whole request; false: close. */
static bool serve(struct conn *c)
{
    for (;;) {
        ssize_t n = read(c->fd, c->buf + c->len, BUF_SIZE - c->len);
        if (n == 0)
            return false;
        if (n < 0)
            return errno == EAGAIN || errno == EINTR;
        c->len += (size_t)n;
        long used;
        size_t body;
        while ((used = whole_request(c, &body)) > 0) {
            if (write(c->fd, answer, sizeof(answer) - 1) != (ssize_t)(sizeof(answer) - 1))
                return false;
            requests++;
            body_bytes += body;
            memmove(c->buf, c->buf + used, c->len - (size_t)used);
            c->len -= (size_t)used;
        }
        if (used < 0)
            return false;
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: bench-http-sink PORT_FILE\n");
        return 2;
    }
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(ls, 64) != 0 ||
        getsockname(ls, (struct sockaddr *)&a, &alen) != 0) {
        perror("bench-http-sink: listen");
        return 1;
    }
    FILE *f = fopen(argv[1], "w");
    if (!f || fprintf(f, "%d\n", ntohs(a.sin_port)) < 0 || fclose(f) != 0) {
        perror("bench-http-sink: port file");
        return 1;
    }
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigprocmask(SIG_BLOCK, &stop, NULL);
    int sfd = signalfd(-1, &stop, SFD_CLOEXEC);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
    ev.data.ptr = &sfd;
    epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);
    static struct conn conns[MAX_CONNS];
    for (int i = 0; i < MAX_CONNS; i++)
        conns[i].fd = -1;
    printf("listening on %d\n", ntohs(a.sin_port));
    fflush(stdout);
    for (;;) {
        struct epoll_event evs[64];
        int n = epoll_wait(ep, evs, 64, -1);
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == &sfd) {
                printf("requests %llu bytes %llu\n", requests, body_bytes);
                return 0;
            }
            if (evs[i].data.ptr == NULL) {
                int fd;
                while ((fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    struct conn *c = NULL;
                    for (int k = 0; k < MAX_CONNS && !c; k++)
                        if (conns[k].fd < 0)
                            c = &conns[k];
                    if (!c) {
                        close(fd);
                        continue;
                    }
                    int one = 1;
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                    c->fd = fd;
                    c->len = 0;
                    struct epoll_event cev = {.events = EPOLLIN, .data.ptr = c};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
                }
                continue;
            }
            struct conn *c = evs[i].data.ptr;
            if (!serve(c)) {
                close(c->fd);
                c->fd = -1;
            }
        }
    }
}
