/* recv_ring.h - the receive slots recvmmsg fills, reused for every read.
 *
 * One set per loop (the loop reads one connection at a time), each slot as
 * large as the largest accepted message, so a packet is either whole or
 * flagged truncated. Packets are copied out into a batch right after the
 * read; the slots never leave the loop thread.
 */
#ifndef SECCHECKD_RECV_RING_H
#define SECCHECKD_RECV_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct recv_ring {
    struct mmsghdr *msgs;
    struct iovec *iov;
    uint8_t *slots;
    unsigned nslots;
    size_t slot_size;
};

int recv_ring_init(struct recv_ring *r, unsigned nslots, size_t slot_size);
void recv_ring_free(struct recv_ring *r);

/* Reads up to max packets without blocking; returns the count, or -1 with
 * errno (EAGAIN when nothing is waiting). A zero-length entry marks EOF. */
int recv_ring_fill(struct recv_ring *r, int fd, unsigned max);

static inline const uint8_t *recv_ring_packet(const struct recv_ring *r, unsigned i, size_t *len, bool *truncated)
{
    *len = r->msgs[i].msg_len;
    *truncated = (r->msgs[i].msg_hdr.msg_flags & MSG_TRUNC) != 0;
    return r->slots + (size_t)i * r->slot_size;
}

#endif
