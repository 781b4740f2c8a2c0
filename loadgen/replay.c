#include "replay.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "listener.h"
#include "tracefile.h"
#include "wire.h"

/* Two passes over the file: sizes first, then one buffer for all packets,
 * so a trace costs two allocations however many packets it has. */
static int scan_sizes(const char *path, size_t *count, size_t *bytes, uint32_t *version, char *err, size_t errlen)
{
    struct tracefile tf;
    enum tracefile_status st = tracefile_open(&tf, path);
    if (st != TRACEFILE_OK) {
        snprintf(err, errlen, "%s: %s", path, st == TRACEFILE_IO_ERROR ? strerror(errno) : tracefile_strerror(st));
        return -1;
    }
    const uint8_t *pkt;
    size_t len;
    *count = *bytes = 0;
    while ((st = tracefile_next(&tf, &pkt, &len)) == TRACEFILE_OK) {
        (*count)++;
        *bytes += len;
    }
    *version = tf.version;
    tracefile_close(&tf);
    if (st != TRACEFILE_END) {
        snprintf(err, errlen, "%s: record %zu: %s", path, *count + 1, tracefile_strerror(st));
        return -1;
    }
    return 0;
}

int replay_trace_load(struct replay_trace *t, const char *path, char *err, size_t errlen)
{
    memset(t, 0, sizeof(*t));
    size_t count, bytes;
    uint32_t version;
    if (scan_sizes(path, &count, &bytes, &version, err, errlen) != 0)
        return -1;
    t->path = strdup(path);
    t->packets = calloc(count ? count : 1, sizeof(*t->packets));
    t->lengths = calloc(count ? count : 1, sizeof(*t->lengths));
    t->data = malloc(bytes ? bytes : 1);
    if (!t->path || !t->packets || !t->lengths || !t->data) {
        replay_trace_free(t);
        snprintf(err, errlen, "%s: out of memory loading %zu bytes", path, bytes);
        return -1;
    }
    struct tracefile tf;
    if (tracefile_open(&tf, path) != TRACEFILE_OK) {
        replay_trace_free(t);
        snprintf(err, errlen, "%s: changed while loading", path);
        return -1;
    }
    const uint8_t *pkt;
    size_t len, off = 0;
    while (t->count < count && tracefile_next(&tf, &pkt, &len) == TRACEFILE_OK && off + len <= bytes) {
        memcpy(t->data + off, pkt, len);
        t->packets[t->count] = t->data + off;
        t->lengths[t->count] = len;
        t->count++;
        off += len;
    }
    tracefile_close(&tf);
    t->version = version;
    t->bytes = off;
    return 0;
}

void replay_trace_free(struct replay_trace *t)
{
    free(t->path);
    free(t->packets);
    free(t->lengths);
    free(t->data);
    memset(t, 0, sizeof(*t));
}

int replay_connect(const char *path, uint32_t version, int timeout_ms, char *err, size_t errlen)
{
    int fd = listener_connect(path);
    if (fd < 0) {
        snprintf(err, errlen, "cannot connect to %s: %s%s", path, strerror(errno),
                 errno == ENOENT || errno == ECONNREFUSED ? " (is the collector running?)" : "");
        return -1;
    }
    uint8_t hs[8];
    size_t n = wire_handshake_encode(version, hs);
    if (send(fd, hs, n, MSG_NOSIGNAL) != (ssize_t)n) {
        /* A collector that closes at once (full, or not answering this
         * protocol) can close before our send: that is a refusal too. */
        if (errno == EPIPE || errno == ECONNRESET)
            snprintf(err, errlen, "%s: the collector refused the handshake (connection closed)", path);
        else
            snprintf(err, errlen, "%s: sending the handshake: %s", path, strerror(errno));
        goto fail;
    }
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int rc = poll(&pfd, 1, timeout_ms);
    if (rc <= 0) {
        snprintf(err, errlen, "%s: no handshake answer within %d ms", path, timeout_ms);
        goto fail;
    }
    uint8_t answer[WIRE_HANDSHAKE_MAX];
    ssize_t got = recv(fd, answer, sizeof(answer), 0);
    uint32_t server_version;
    if (got <= 0 || wire_handshake_parse(answer, (size_t)got, &server_version) != 0) {
        snprintf(err, errlen, "%s: the collector refused the handshake (%s)", path,
                 got == 0 ? "connection closed" : got < 0 ? strerror(errno) : "bad answer");
        goto fail;
    }
    return fd;
fail:
    close(fd);
    return -1;
}

int replay_send(int fd, const uint8_t *pkt, size_t len)
{
    ssize_t n;
    do
        n = send(fd, pkt, len, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)len ? 0 : -1;
}
