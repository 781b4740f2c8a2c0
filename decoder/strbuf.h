/* strbuf.h - a growable byte buffer that keeps its memory between uses.
 *
 * Renderers reset and refill one strbuf per message, so after the first few
 * messages the buffer is large enough and no further allocation happens.
 * Growth failure is sticky: the buffer reports it once, at the end.
 */
#ifndef SECCHECKD_STRBUF_H
#define SECCHECKD_STRBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct strbuf {
    char *data;      /* NUL-terminated when len > 0 */
    size_t len;
    size_t cap;
    bool failed;     /* an append could not grow the buffer */
};

void strbuf_free(struct strbuf *sb);
static inline void strbuf_reset(struct strbuf *sb) { sb->len = 0; sb->failed = false; }

void strbuf_append(struct strbuf *sb, const void *data, size_t len);
void strbuf_putc(struct strbuf *sb, char c);
void strbuf_puts(struct strbuf *sb, const char *s);
void strbuf_printf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Decimal integers, without printf's format parsing: JSON rendering writes
 * several per event on the writer thread. */
void strbuf_put_u64(struct strbuf *sb, uint64_t v);
void strbuf_put_i64(struct strbuf *sb, int64_t v);

/* ns since the epoch as UTC, ISO 8601, with 3 or 6 decimals of the second
 * (2026-11-30T02:33:11.123Z); "@<ns>ns" for a time gmtime cannot show (a
 * sandbox may send any number). */
void strbuf_put_utc(struct strbuf *sb, int64_t ns, int decimals);

#endif
