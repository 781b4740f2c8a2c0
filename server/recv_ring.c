#include "recv_ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int recv_ring_init(struct recv_ring *r, unsigned nslots, size_t slot_size)
{
    memset(r, 0, sizeof(*r));
    r->msgs = calloc(nslots, sizeof(*r->msgs));
    r->iov = calloc(nslots, sizeof(*r->iov));
    /* mmap: untouched slot pages cost no memory, so large slots are cheap
     * until a large packet actually arrives. */
    void *slots = mmap(NULL, (size_t)nslots * slot_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!r->msgs || !r->iov || slots == MAP_FAILED) {
        free(r->msgs);
        free(r->iov);
        if (slots != MAP_FAILED)
            munmap(slots, (size_t)nslots * slot_size);
        memset(r, 0, sizeof(*r));
        return -1;
    }
    r->slots = slots;
    r->nslots = nslots;
    r->slot_size = slot_size;
    for (unsigned i = 0; i < nslots; i++) {
        r->iov[i].iov_base = r->slots + (size_t)i * slot_size;
        r->iov[i].iov_len = slot_size;
        r->msgs[i].msg_hdr.msg_iov = &r->iov[i];
        r->msgs[i].msg_hdr.msg_iovlen = 1;
    }
    return 0;
}

void recv_ring_free(struct recv_ring *r)
{
    if (r->slots)
        munmap(r->slots, (size_t)r->nslots * r->slot_size);
    free(r->msgs);
    free(r->iov);
    memset(r, 0, sizeof(*r));
}

int recv_ring_fill(struct recv_ring *r, int fd, unsigned max)
{
    if (max > r->nslots)
        max = r->nslots;
    for (unsigned i = 0; i < max; i++)
        r->msgs[i].msg_hdr.msg_flags = 0;
    int n;
    do
        n = recvmmsg(fd, r->msgs, max, MSG_DONTWAIT, NULL);
    while (n < 0 && errno == EINTR);
    return n;
}
