#include "wire.h"

#include <string.h>

#include "gvisor/common.pb-c.h"

static uint16_t load_le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t load_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

enum wire_status wire_header_parse(const uint8_t *pkt, size_t len, struct wire_header *out)
{
    if (len < WIRE_HEADER_MIN)
        return WIRE_SHORT_PACKET;
    out->header_size = load_le16(pkt);
    out->message_type = load_le16(pkt + 2);
    out->dropped_count = load_le32(pkt + 4);
    if (out->header_size < WIRE_HEADER_MIN || out->header_size > len)
        return WIRE_BAD_HEADER_SIZE;
    return WIRE_OK;
}

void wire_header_write(uint8_t out[WIRE_HEADER_MIN], uint16_t message_type, uint32_t dropped_count)
{
    out[0] = WIRE_HEADER_MIN;
    out[1] = 0;
    out[2] = (uint8_t)message_type;
    out[3] = (uint8_t)(message_type >> 8);
    for (int i = 0; i < 4; i++)
        out[4 + i] = (uint8_t)(dropped_count >> (8 * i));
}

/* The handshake is tiny and rare: decode it on the stack, no heap. */
static void *stack_alloc(void *data, size_t size)
{
    unsigned char *buf = data;
    size_t *used = (size_t *)buf;
    size_t off = sizeof(size_t) + *used;
    if (off > 1024 || size > 1024 - off)
        return NULL;
    *used += (size + 7) & ~(size_t)7;
    return buf + off;
}
static void stack_free(void *data, void *ptr) { (void)data; (void)ptr; }

int wire_handshake_version(const uint8_t *pkt, size_t len, uint32_t *version)
{
    if (len == 0 || len > WIRE_HANDSHAKE_MAX)
        return -1;
    _Alignas(16) unsigned char space[1024] = {0};
    ProtobufCAllocator alloc = {.alloc = stack_alloc, .free = stack_free, .allocator_data = space};
    Gvisor__Common__Handshake *hs = gvisor__common__handshake__unpack(&alloc, len, pkt);
    if (!hs)
        return -1;
    *version = hs->version;
    return 0;
}

int wire_handshake_parse(const uint8_t *pkt, size_t len, uint32_t *version)
{
    uint32_t v;
    if (wire_handshake_version(pkt, len, &v) != 0 || v < 1)
        return -1;
    *version = v;
    return 0;
}

size_t wire_handshake_encode(uint32_t version, uint8_t out[8])
{
    Gvisor__Common__Handshake hs = GVISOR__COMMON__HANDSHAKE__INIT;
    hs.version = version;
    return gvisor__common__handshake__pack(&hs, out);
}
