/* event.h - one received packet, decoded.
 *
 * Everything an event points to (raw bytes, unpacked message, strings) lives
 * in the arena of the batch that holds it, and dies with the batch's reset.
 */
#ifndef SECCHECKD_EVENT_H
#define SECCHECKD_EVENT_H

#include <stdbool.h>
#include <stdint.h>
#include <protobuf-c/protobuf-c.h>

#include "gvisor/common.pb-c.h"
#include "wire.h"

enum decode_status {
    DECODE_OK = 0,
    DECODE_UNKNOWN_TYPE,      /* stored raw: a newer gVisor's message */
    DECODE_BAD_PAYLOAD,       /* stored raw: protobuf did not unpack */
    DECODE_STATUS_COUNT
};

struct decode_layout;

struct event {
    uint64_t conn_id;
    int64_t recv_ns;              /* CLOCK_REALTIME when read from the socket */
    const uint8_t *raw;           /* header + payload, as received */
    uint32_t raw_len;
    struct wire_header header;
    enum decode_status status;
    const ProtobufCMessage *msg;  /* NULL unless status == DECODE_OK */
    const struct decode_layout *layout;   /* msg's common fields (decode.h); NULL with msg */

    /* Fields most messages share, found once through the descriptors. */
    const Gvisor__Common__ContextData *context;   /* NULL when not sent */
    bool has_sysno;
    uint64_t sysno;
    bool is_exit;                 /* syscall exit point: `exit` present */
    int64_t result;
    int64_t errorno;
};

#endif
