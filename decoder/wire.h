/* wire.h - the gVisor remote-sink wire format, version 1.
 *
 * Pure functions over bytes: the packet header that precedes every message
 * after the handshake, and the Handshake message itself. No I/O here.
 */
#ifndef SECCHECKD_WIRE_H
#define SECCHECKD_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define WIRE_VERSION 1
#define WIRE_HEADER_MIN 8            /* header_size of wire version 1 */
#define WIRE_HANDSHAKE_MAX 10240     /* the gVisor client's answer buffer */

struct wire_header {
    uint16_t header_size;    /* payload starts here; >= 8, may grow */
    uint16_t message_type;
    uint32_t dropped_count;  /* cumulative sandbox drops, wraps at 2^32 */
};

enum wire_status {
    WIRE_OK = 0,
    WIRE_SHORT_PACKET,       /* fewer than 8 bytes */
    WIRE_BAD_HEADER_SIZE,    /* header_size < 8 or > packet length */
};

enum wire_status wire_header_parse(const uint8_t *pkt, size_t len, struct wire_header *out);
void wire_header_write(uint8_t out[WIRE_HEADER_MIN], uint16_t message_type, uint32_t dropped_count);

/* Parses a client Handshake packet. Returns 0 and the version when it is a
 * well-formed Handshake with version >= 1, -1 otherwise. */
int wire_handshake_parse(const uint8_t *pkt, size_t len, uint32_t *version);

/* The version of a well-formed Handshake message of any version (0: none
 * given), for saying what a refused client sent; -1 when it is not one. */
int wire_handshake_version(const uint8_t *pkt, size_t len, uint32_t *version);

/* Encodes Handshake{version}; returns its length (at most 6 bytes). */
size_t wire_handshake_encode(uint32_t version, uint8_t out[8]);

/* Wrap-safe growth of the sandbox's cumulative drop counter. */
static inline uint32_t wire_dropped_delta(uint32_t last, uint32_t now) { return now - last; }

#endif
