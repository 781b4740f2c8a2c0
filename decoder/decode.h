/* decode.h - packet bytes to struct event, through protobuf-c.
 *
 * Pure: no I/O, no globals. The only per-message-type code in the project is
 * the table in decode.c mapping message_type to its generated descriptor;
 * the common fields (context_data, exit, sysno) are found by name at init.
 */
#ifndef SECCHECKD_DECODE_H
#define SECCHECKD_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "event.h"

#define DECODE_TYPE_MAX 38          /* highest message_type this schema knows */

/* Unpacking may use at most this many arena bytes per payload byte (plus a
 * constant): honest messages need ~3x, crafted ones are cut off here. */
#define DECODE_INFLATION 16
#define DECODE_OVERHEAD 4096

struct decode_layout {
    const ProtobufCMessageDescriptor *desc;
    const ProtobufCFieldDescriptor *context;
    const ProtobufCFieldDescriptor *exit;
    const ProtobufCFieldDescriptor *sysno;
};

struct decoder {
    struct decode_layout types[DECODE_TYPE_MAX + 1];
};

void decoder_init(struct decoder *d);

/* "SYSCALL_OPEN" for 7; NULL for types this schema does not know. */
const char *decode_type_name(uint16_t message_type);

/* Arena bytes a packet of len bytes may need: copy + unpack budget. The
 * caller guarantees at least this much is left before calling decode. */
static inline size_t decode_arena_need(size_t len)
{
    return len + 8 + len * DECODE_INFLATION + DECODE_OVERHEAD;
}

/* Bytes one element of a field of this type takes in a protobuf-c message
 * (the stride of a repeated field's array). */
size_t decode_value_size(ProtobufCType type);

/* Decodes a packet whose header already parsed as `header` (wire.h). raw must
 * already be in the arena (the event keeps the pointer). Never fails: an
 * unknown type or bad payload is reported in ev->status. */
void decode_event(const struct decoder *d, struct arena *arena, const struct wire_header *header,
                  const uint8_t *raw, size_t len, struct event *ev);

#endif
