/* listener.h - the SOCK_SEQPACKET listening socket, anet.c style helpers. */
#ifndef SECCHECKD_LISTENER_H
#define SECCHECKD_LISTENER_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/un.h>

struct listener {
    int fd;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    dev_t dev;      /* identity of the socket file we bound, so we only */
    ino_t ino;      /* ever remove our own */
};

/* Creates, binds and listens on a non-blocking SOCK_SEQPACKET socket at path.
 * An existing file is replaced only when it is a socket nobody listens on.
 * Returns 0, or -1 with a message naming the problem and the fix. */
int listener_open(struct listener *l, const char *path, int backlog, mode_t mode, char *err, size_t errlen);

/* Takes a listening socket someone else bound (systemd socket activation):
 * checks it is a listening SOCK_SEQPACKET socket and makes it non-blocking.
 * Its file is never removed by us. -1 with a message on a wrong socket. */
int listener_adopt(struct listener *l, int fd, char *err, size_t errlen);

/* Closes the socket and removes its file if it is still the one we bound. */
void listener_close(struct listener *l);

/* Connects a blocking SOCK_SEQPACKET client to path; -1 and errno on failure. */
int listener_connect(const char *path);

#endif
