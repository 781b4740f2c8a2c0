/* copy_text.h - values in PostgreSQL's COPY text format, made acceptable to
 * the central server whatever the local database holds.
 *
 * The local text columns come from sandboxes: they may hold NUL bytes or
 * invalid UTF-8, which PostgreSQL's text type refuses, and detail may hold
 * the JSON escape \u0000, which jsonb refuses. One refused row would stop
 * forwarding for good, so such characters become U+FFFD here; raw (bytea)
 * keeps the bytes as received, and the chain is computed over raw.
 */
#ifndef SECCHECKD_COPY_TEXT_H
#define SECCHECKD_COPY_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

/* \N: SQL NULL. */
void copy_text_null(struct strbuf *out);
void copy_text_int(struct strbuf *out, int64_t v);
void copy_text_real(struct strbuf *out, double v);
/* Text: invalid UTF-8 and NUL become U+FFFD; backslash, tab, newline and
 * carriage return are escaped. */
void copy_text_string(struct strbuf *out, const void *s, size_t len);
/* JSON text for a jsonb column: as copy_text_string, and the escape \u0000
 * (outside another escape) becomes \ufffd. */
void copy_text_json(struct strbuf *out, const void *s, size_t len);
/* bytea in hex: \\x0a1b... */
void copy_text_bytea(struct strbuf *out, const void *p, size_t len);

#endif
