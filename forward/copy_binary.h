/* copy_binary.h - values in PostgreSQL's binary COPY format, made acceptable
 * to the central server whatever the local database holds.
 *
 * Binary, not text: no escaping on either side, integers without decimal
 * parsing, bytea without hex (bench/forward.sh measures the difference).
 * The stream is a header, rows (a field count, then each field as a 4-byte
 * length, -1 for NULL, and its bytes), and a trailer.
 *
 * The local text columns come from sandboxes: they may hold NUL bytes or
 * invalid UTF-8, which PostgreSQL's text type refuses (binary COPY checks
 * the encoding too), and detail may hold the JSON escape \u0000, which jsonb
 * refuses. One refused row would stop forwarding for good, so such
 * characters become U+FFFD here; raw (bytea) keeps the bytes as received,
 * and the chain is computed over raw.
 */
#ifndef SECCHECKD_COPY_BINARY_H
#define SECCHECKD_COPY_BINARY_H

#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

/* The stream's start and end, once per COPY. */
void copy_binary_header(struct strbuf *out);
void copy_binary_trailer(struct strbuf *out);
/* A row of n fields follows. */
void copy_binary_row(struct strbuf *out, int n);

void copy_binary_null(struct strbuf *out);
void copy_binary_int8(struct strbuf *out, int64_t v);     /* bigint */
void copy_binary_float8(struct strbuf *out, double v);    /* double precision */
/* text: invalid UTF-8 and NUL become U+FFFD. */
void copy_binary_text(struct strbuf *out, const void *s, size_t len);
/* jsonb: as text, and the escape \u0000 (outside another escape) becomes
 * \ufffd; the server still parses it, and refuses what is not JSON. */
void copy_binary_jsonb(struct strbuf *out, const void *s, size_t len);
void copy_binary_bytea(struct strbuf *out, const void *p, size_t len);

#endif
