/* ref_recvmmsg.c - the physical limit: the plainest possible discard
 * collector. epoll + recvmmsg into one static buffer, handshake answered,
 * nothing decoded or kept. bench/ compares seccheckd and seccheck-dummy with
 * this, as a ratio of its drain rate. Not a product: no limits, no checks
 * beyond what keeps it from crashing.
 * Usage: ref-recvmmsg SOCKET   (SIGINT/SIGTERM: print totals and exit) */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define VLEN 64
#define SLOT 65536

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static unsigned char slots[VLEN][SLOT];

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: ref-recvmmsg SOCKET\n");
        return 2;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    unlink(argv[1]);
    int lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", argv[1]);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) || listen(lfd, 128)) {
        perror("listen");
        return 1;
    }
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = lfd};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    struct mmsghdr msgs[VLEN];
    struct iovec iov[VLEN];
    for (int i = 0; i < VLEN; i++) {
        iov[i] = (struct iovec){.iov_base = slots[i], .iov_len = SLOT};
        msgs[i] = (struct mmsghdr){.msg_hdr = {.msg_iov = &iov[i], .msg_iovlen = 1}};
    }
    unsigned long long messages = 0, bytes = 0, connections = 0;
    printf("listening on %s\n", argv[1]);
    fflush(stdout);
    while (!stop) {
        struct epoll_event events[64];
        int n = epoll_wait(ep, events, 64, 200);
        for (int i = 0; i < n; i++) {
            int fd = events[i].data.fd;
            if (fd == lfd) {
                int c;
                while ((c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    struct epoll_event cev = {.events = EPOLLIN, .data.fd = c};
                    epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
                    connections++;
                }
                continue;
            }
            int got = recvmmsg(fd, msgs, VLEN, MSG_DONTWAIT, NULL);
            if (got <= 0) {
                if (got < 0 && errno == EAGAIN)
                    continue;
                close(fd);
                continue;
            }
            int eof = 0;
            for (int k = 0; k < got; k++) {
                unsigned len = msgs[k].msg_len;
                if (len == 0) {
                    eof = 1;
                    break;
                }
                /* The first packet is the handshake (2 bytes, no header): answer it. */
                if (len < 8 && slots[k][0] == 0x08) {
                    send(fd, "\x08\x01", 2, MSG_NOSIGNAL);
                    continue;
                }
                messages++;
                bytes += len;
            }
            if (eof)
                close(fd);
        }
    }
    printf("total: %llu connections, %llu messages, %llu bytes\n", connections, messages, bytes);
    unlink(argv[1]);
    return 0;
}
