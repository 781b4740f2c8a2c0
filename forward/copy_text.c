#include "copy_text.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const char hexdigits[] = "0123456789abcdef";
static const char replacement[] = "\xef\xbf\xbd";   /* U+FFFD */

void copy_text_null(struct strbuf *out) { strbuf_puts(out, "\\N"); }

void copy_text_int(struct strbuf *out, int64_t v) { strbuf_put_i64(out, v); }

void copy_text_real(struct strbuf *out, double v) { strbuf_printf(out, "%.17g", v); }

/* Length of the valid UTF-8 sequence at s (RFC 3629: no overlongs, no
 * surrogates, nothing above U+10FFFF), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0;
        if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90;
        if (c == 0xf4)
            hi = 0x8f;
    } else
        return 0;
    if (avail < n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return n;
}

/* One ASCII byte, escaped for COPY text where it must be. */
static void put_ascii(struct strbuf *out, unsigned char c)
{
    switch (c) {
    case '\\': strbuf_puts(out, "\\\\"); break;
    case '\t': strbuf_puts(out, "\\t"); break;
    case '\n': strbuf_puts(out, "\\n"); break;
    case '\r': strbuf_puts(out, "\\r"); break;
    case '\0': strbuf_puts(out, replacement); break;
    default: strbuf_putc(out, (char)c);
    }
}

/* Bytes that go out as they are: printable ASCII but the backslash, and the
 * quote when JSON strings are tracked. */
static bool plain(unsigned char c, bool json) { return c >= 0x20 && c < 0x7f && c != '\\' && !(json && c == '"'); }

static void put_text(struct strbuf *out, const unsigned char *s, size_t len, bool json)
{
    bool in_string = false;
    for (size_t i = 0; i < len;) {
        /* The common case, in one append. */
        size_t start = i;
        while (i < len && plain(s[i], json))
            i++;
        if (i > start)
            strbuf_append(out, s + start, i - start);
        if (i >= len)
            break;
        unsigned char c = s[i];
        if (c >= 0x80) {
            size_t n = utf8_len(s + i, len - i);
            if (n)
                strbuf_append(out, s + i, n);
            else
                strbuf_puts(out, replacement);
            i += n ? n : 1;
            continue;
        }
        if (json && c == '"')
            in_string = !in_string;
        if (json && in_string && c == '\\' && i + 1 < len) {
            /* An escape: \u0000 is the one jsonb refuses; any other
             * (including \\) is copied whole so its second byte is not
             * read as the start of another. */
            if (len - i >= 6 && memcmp(s + i, "\\u0000", 6) == 0) {
                strbuf_puts(out, "\\\\ufffd");
                i += 6;
            } else {
                put_ascii(out, '\\');
                put_ascii(out, s[i + 1]);
                i += 2;
            }
            continue;
        }
        put_ascii(out, c);
        i++;
    }
}

void copy_text_string(struct strbuf *out, const void *s, size_t len) { put_text(out, s, len, false); }

void copy_text_json(struct strbuf *out, const void *s, size_t len) { put_text(out, s, len, true); }

void copy_text_bytea(struct strbuf *out, const void *p, size_t len)
{
    const unsigned char *b = p;
    char chunk[512];
    size_t n = 0;
    strbuf_puts(out, "\\\\x");
    for (size_t i = 0; i < len; i++) {
        chunk[n++] = hexdigits[b[i] >> 4];
        chunk[n++] = hexdigits[b[i] & 15];
        if (n == sizeof(chunk)) {
            strbuf_append(out, chunk, n);
            n = 0;
        }
    }
    strbuf_append(out, chunk, n);
}
