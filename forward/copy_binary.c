/* copy_binary.c - PostgreSQL's binary COPY format (copy_binary.h). */
#include "copy_binary.h"

#include <stdbool.h>
#include <string.h>

static const char replacement[] = "\xef\xbf\xbd";   /* U+FFFD */

static void put_be(struct strbuf *out, uint64_t v, int bytes)
{
    unsigned char b[8];
    for (int i = bytes - 1; i >= 0; i--, v >>= 8)
        b[i] = (unsigned char)v;
    strbuf_append(out, b, (size_t)bytes);
}

void copy_binary_header(struct strbuf *out)
{
    /* Signature, flags (no OIDs), header extension length. */
    strbuf_append(out, "PGCOPY\n\377\r\n\0", 11);
    put_be(out, 0, 4);
    put_be(out, 0, 4);
}

void copy_binary_trailer(struct strbuf *out) { put_be(out, 0xffff, 2); }

void copy_binary_row(struct strbuf *out, int n) { put_be(out, (uint64_t)n, 2); }

void copy_binary_null(struct strbuf *out) { put_be(out, 0xffffffffu, 4); }

void copy_binary_int8(struct strbuf *out, int64_t v)
{
    unsigned char b[12] = {0, 0, 0, 8};   /* the length and the value in one append: the most common field */
    for (int i = 11; i >= 4; i--, v = (int64_t)((uint64_t)v >> 8))
        b[i] = (unsigned char)v;
    strbuf_append(out, b, sizeof(b));
}

void copy_binary_float8(struct strbuf *out, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof(bits));
    put_be(out, 8, 4);
    put_be(out, bits, 8);
}

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

/* Bytes that go out as they are: ASCII but NUL, and but the backslash
 * when JSON strings are tracked (a quote goes out as it is too, toggling
 * whether the bytes after it are in a string). */
static bool plain(unsigned char c, bool json) { return c && c < 0x80 && !(json && c == '\\'); }

static void put_clean(struct strbuf *out, const unsigned char *s, size_t len, bool json)
{
    bool in_string = false;
    for (size_t i = 0; i < len;) {
        /* The common case, in one append. */
        size_t start = i;
        while (i < len && plain(s[i], json)) {
            if (json && s[i] == '"')
                in_string = !in_string;
            i++;
        }
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
        if (c == '\0') {
            strbuf_puts(out, replacement);
            i++;
            continue;
        }
        if (in_string && c == '\\' && i + 1 < len) {
            /* An escape: \u0000 is the one jsonb refuses; any other
             * (including \\) is copied whole so its second byte is not
             * read as the start of another. A second byte that is not
             * ASCII is left to the loop (the server refuses the JSON). */
            if (len - i >= 6 && memcmp(s + i, "\\u0000", 6) == 0) {
                strbuf_puts(out, "\\ufffd");
                i += 6;
            } else if (s[i + 1] && s[i + 1] < 0x80) {
                strbuf_append(out, s + i, 2);
                i += 2;
            } else {
                strbuf_putc(out, '\\');
                i++;
            }
            continue;
        }
        strbuf_putc(out, (char)c);
        i++;
    }
}

/* A field whose length is known once written: its 4 length bytes patched. */
static size_t field_start(struct strbuf *out)
{
    put_be(out, 0, 4);
    return out->len;
}

static void field_end(struct strbuf *out, size_t start)
{
    if (out->failed)
        return;
    uint64_t n = out->len - start;
    for (int i = 0; i < 4; i++)
        out->data[start - 1 - i] = (char)(n >> (8 * i));
}

void copy_binary_text(struct strbuf *out, const void *s, size_t len)
{
    size_t start = field_start(out);
    put_clean(out, s, len, false);
    field_end(out, start);
}

void copy_binary_jsonb(struct strbuf *out, const void *s, size_t len)
{
    size_t start = field_start(out);
    strbuf_putc(out, 1);   /* jsonb's binary format version, then the JSON text */
    put_clean(out, s, len, true);
    field_end(out, start);
}

void copy_binary_bytea(struct strbuf *out, const void *p, size_t len)
{
    put_be(out, len, 4);
    strbuf_append(out, p, len);
}
