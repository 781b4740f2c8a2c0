/* json.h - any protobuf-c message as a JSON object, through its descriptor.
 *
 * One generic walker instead of per-type code. Field names are the .proto
 * names; every scalar field is written (proto3 zero values included, so
 * json_extract finds them), sub-messages only when present, repeated fields
 * as arrays, 64-bit integers as JSON numbers, bytes as lowercase hex, strings
 * validated as UTF-8 (invalid bytes become U+FFFD, so the JSON stays valid).
 */
#ifndef SECCHECKD_JSON_H
#define SECCHECKD_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <protobuf-c/protobuf-c.h>

#include "strbuf.h"

/* Appends msg as a JSON object. Returns 0, or -1 if the buffer could not grow. */
int json_render_message(struct strbuf *out, const ProtobufCMessage *msg);

/* The same, leaving out the top-level fields listed in omit (descriptors of
 * msg's own fields; nested messages are written whole). */
int json_render_message_omitting(struct strbuf *out, const ProtobufCMessage *msg,
                                 const ProtobufCFieldDescriptor *const *omit, size_t nomit);

/* True when s[0..len) is valid UTF-8 (no overlongs, surrogates or code
 * points past U+10FFFF). */
bool utf8_valid(const char *s, size_t len);

/* Appends s with every byte that is not part of valid UTF-8 replaced by
 * U+FFFD, so text from a sandbox can go where valid text is required. */
void utf8_sanitize(struct strbuf *out, const char *s, size_t len);

/* Appends s (len bytes, any content) as a JSON string literal. */
void json_render_string(struct strbuf *out, const char *s, size_t len);

#endif
