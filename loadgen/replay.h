/* replay.h - the client side of the wire: load recorded traces, connect to a
 * collector and handshake as a gVisor sandbox does, send packets.
 * Shared by seccheck-loadgen and the tests, so both speak the wire exactly
 * one way. */
#ifndef SECCHECKD_REPLAY_H
#define SECCHECKD_REPLAY_H

#include <stddef.h>
#include <stdint.h>

/* A whole trace file in memory: packets in recorded order. */
struct replay_trace {
    char *path;
    uint32_t version;            /* from the file's config JSON */
    size_t count;
    size_t bytes;                /* sum of packet lengths */
    const uint8_t **packets;
    size_t *lengths;
    uint8_t *data;               /* one allocation holding every packet */
};

/* Loads path; -1 with a message (naming the file and the problem) in err. */
int replay_trace_load(struct replay_trace *t, const char *path, char *err, size_t errlen);
void replay_trace_free(struct replay_trace *t);

/* Connects a SOCK_SEQPACKET socket to path, sends Handshake{version} and
 * waits (up to timeout_ms) for the collector's answer. Returns the blocking
 * fd, or -1 with the reason in err. */
int replay_connect(const char *path, uint32_t version, int timeout_ms, char *err, size_t errlen);

/* Sends one packet, blocking; 0 or -1 with errno. */
int replay_send(int fd, const uint8_t *pkt, size_t len);

#endif
