#include "relay_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define RELAY_LOG_MAGIC "seccrlog"
#define RELAY_LOG_HEADER 64u            /* bytes before the first record */
#define RELAY_LOG_ALIGN 8u              /* every record starts on a multiple */
#define RELAY_LOG_RELEASE_STEP (4u << 20)

struct relay_log_header {
    char magic[8];
    uint32_t version;
    uint32_t reserved;
    uint64_t capacity;
    _Atomic uint64_t written;           /* bytes of complete records after the header */
};

_Static_assert(sizeof(struct relay_log_header) <= RELAY_LOG_HEADER, "the header fits its space");
_Static_assert(sizeof(struct relay_record) % RELAY_LOG_ALIGN == 0, "records stay aligned");

static struct relay_log_header *header(const struct relay_log *l)
{
    return (struct relay_log_header *)l->base;
}

static uint64_t padded(uint64_t n)
{
    return (n + RELAY_LOG_ALIGN - 1) & ~(uint64_t)(RELAY_LOG_ALIGN - 1);
}

int relay_log_create(uint64_t capacity, char *err, size_t errlen)
{
    capacity = padded(capacity);
    int fd = memfd_create("seccheckd-relay-log", MFD_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create the relay's log: %s", strerror(errno));
        return -1;
    }
    struct relay_log_header h = {.magic = RELAY_LOG_MAGIC, .version = RELAY_LOG_VERSION, .capacity = capacity};
    if (ftruncate(fd, (off_t)(RELAY_LOG_HEADER + capacity)) != 0 || pwrite(fd, &h, sizeof(h), 0) != sizeof(h)) {
        snprintf(err, errlen, "cannot size the relay's log (%llu bytes): %s", (unsigned long long)capacity,
                 strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

int relay_log_map(struct relay_log *l, int fd, bool writable, char *err, size_t errlen)
{
    memset(l, 0, sizeof(*l));
    l->fd = -1;
    struct stat st;
    struct relay_log_header h;
    if (fstat(fd, &st) != 0 || pread(fd, &h, sizeof(h), 0) != sizeof(h)) {
        snprintf(err, errlen, "cannot read the relay's log: %s", strerror(errno));
        return -1;
    }
    if (memcmp(h.magic, RELAY_LOG_MAGIC, sizeof(h.magic)) != 0 || h.version != RELAY_LOG_VERSION ||
        h.capacity % RELAY_LOG_ALIGN != 0 || (uint64_t)st.st_size != RELAY_LOG_HEADER + h.capacity) {
        snprintf(err, errlen, "the relay's log is not a version %d log of this size", RELAY_LOG_VERSION);
        return -1;
    }
    int own = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    void *base = own < 0 ? MAP_FAILED
                         : mmap(NULL, (size_t)st.st_size, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED,
                                own, 0);
    if (base == MAP_FAILED) {
        snprintf(err, errlen, "cannot map the relay's log: %s", strerror(errno));
        if (own >= 0)
            close(own);
        return -1;
    }
    *l = (struct relay_log){.fd = own, .base = base, .size = (size_t)st.st_size, .capacity = h.capacity};
    if (writable)
        l->pos = atomic_load_explicit(&header(l)->written, memory_order_acquire);
    return 0;
}

void relay_log_unmap(struct relay_log *l)
{
    if (l->base)
        munmap(l->base, l->size);
    if (l->fd >= 0)
        close(l->fd);
    memset(l, 0, sizeof(*l));
    l->fd = -1;
}

bool relay_log_append(struct relay_log *l, const struct relay_record *r, const void *payload)
{
    uint64_t need = sizeof(*r) + padded(r->len);
    if (need > l->capacity - l->pos)
        return false;
    uint8_t *at = l->base + RELAY_LOG_HEADER + l->pos;
    memcpy(at, r, sizeof(*r));
    if (r->len)
        memcpy(at + sizeof(*r), payload, r->len);
    l->pos += need;
    return true;
}

void relay_log_publish(struct relay_log *l)
{
    atomic_store_explicit(&header(l)->written, l->pos, memory_order_release);
}

uint64_t relay_log_written(const struct relay_log *l)
{
    uint64_t w = atomic_load_explicit(&header(l)->written, memory_order_acquire);
    return w < l->capacity ? w : l->capacity;
}

int relay_log_peek(const struct relay_log *l, uint64_t end, uint32_t nconns, struct relay_record *r,
                   const uint8_t **payload)
{
    if (end > l->capacity)
        end = l->capacity;
    if (l->pos >= end)
        return 0;
    if (end - l->pos < sizeof(*r))
        return -1;
    const uint8_t *at = l->base + RELAY_LOG_HEADER + l->pos;
    memcpy(r, at, sizeof(*r));
    bool packet = r->type == RELAY_PACKET;
    if (r->type < RELAY_PACKET || r->type > RELAY_ERROR || r->conn >= nconns || (!packet && r->len != 0) ||
        padded(r->len) > end - l->pos - sizeof(*r))
        return -1;
    *payload = at + sizeof(*r);
    return 1;
}

void relay_log_take(struct relay_log *l, const struct relay_record *r)
{
    l->pos += sizeof(*r) + padded(r->len);
}

void relay_log_release(struct relay_log *l)
{
    uint64_t upto = (RELAY_LOG_HEADER + l->pos) & ~(uint64_t)(RELAY_LOG_RELEASE_STEP - 1);
    if (upto <= RELAY_LOG_HEADER + l->released + RELAY_LOG_RELEASE_STEP)
        return;
    /* The header's page stays: the writer still publishes there. */
    uint64_t from = RELAY_LOG_RELEASE_STEP > RELAY_LOG_HEADER + l->released ? RELAY_LOG_RELEASE_STEP
                                                                             : RELAY_LOG_HEADER + l->released;
    if (upto > from && fallocate(l->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)from,
                                 (off_t)(upto - from)) == 0)
        l->released = upto - RELAY_LOG_HEADER;
}
