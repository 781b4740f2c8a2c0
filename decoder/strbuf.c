#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static bool strbuf_reserve(struct strbuf *sb, size_t extra)
{
    if (sb->failed)
        return false;
    if (sb->len + extra + 1 <= sb->cap)
        return true;
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < sb->len + extra + 1) {
        if (cap > (size_t)-1 / 2) {
            sb->failed = true;
            return false;
        }
        cap *= 2;
    }
    char *p = realloc(sb->data, cap);
    if (!p) {
        sb->failed = true;
        return false;
    }
    sb->data = p;
    sb->cap = cap;
    return true;
}

void strbuf_free(struct strbuf *sb)
{
    free(sb->data);
    memset(sb, 0, sizeof(*sb));
}

void strbuf_append(struct strbuf *sb, const void *data, size_t len)
{
    if (!strbuf_reserve(sb, len))
        return;
    memcpy(sb->data + sb->len, data, len);
    sb->len += len;
    sb->data[sb->len] = '\0';
}

void strbuf_putc(struct strbuf *sb, char c)
{
    if (!strbuf_reserve(sb, 1))
        return;
    sb->data[sb->len++] = c;
    sb->data[sb->len] = '\0';
}

void strbuf_puts(struct strbuf *sb, const char *s) { strbuf_append(sb, s, strlen(s)); }

void strbuf_printf(struct strbuf *sb, const char *fmt, ...)
{
    char small[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof(small)) {
        strbuf_append(sb, small, (size_t)n);
        return;
    }
    if (!strbuf_reserve(sb, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

void strbuf_put_u64(struct strbuf *sb, uint64_t v)
{
    char digits[20];   /* UINT64_MAX has 20 */
    size_t n = sizeof(digits);
    do {
        digits[--n] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    strbuf_append(sb, digits + n, sizeof(digits) - n);
}

void strbuf_put_i64(struct strbuf *sb, int64_t v)
{
    if (v < 0) {
        strbuf_putc(sb, '-');
        strbuf_put_u64(sb, (uint64_t)0 - (uint64_t)v);   /* INT64_MIN too */
        return;
    }
    strbuf_put_u64(sb, (uint64_t)v);
}

void strbuf_put_utc(struct strbuf *sb, int64_t ns, int decimals)
{
    int64_t sec = ns / 1000000000, sub = ns % 1000000000;
    if (sub < 0) {
        sec--;
        sub += 1000000000;
    }
    time_t t = (time_t)sec;
    struct tm tm;
    char when[32];
    if (!gmtime_r(&t, &tm) || strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
        strbuf_printf(sb, "@%lldns", (long long)ns);
        return;
    }
    if (decimals == 3)
        strbuf_printf(sb, "%s.%03dZ", when, (int)(sub / 1000000));
    else
        strbuf_printf(sb, "%s.%06dZ", when, (int)(sub / 1000));
}
