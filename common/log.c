/* log.c - one line per notable event, to stderr.
 *
 * Log lines carry strings from sandboxes (container ids, paths from state
 * files, names from rules files a tenant may write): the logger escapes
 * every line itself, so no caller can forget to. A control character (C0,
 * DEL, the C1 controls U+0080..U+009F) or a byte that is not UTF-8 is
 * written as \xNN (\n, \r and \t as themselves escaped): a line stays one
 * line starting with "seccheckd: LEVEL:", and nothing in it is a terminal
 * escape sequence. UTF-8 text is kept as it is. */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define LOG_LINE_MAX 1024   /* a message, formatted, before escaping: longer ones are cut */

/* Set on SIGHUP by the loop thread while the writer and delivery threads log. */
static atomic_int current_level = LOG_INFO;
static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_set_level(enum log_level level) { atomic_store_explicit(&current_level, (int)level, memory_order_relaxed); }

int log_level_parse(const char *name)
{
    for (int i = 0; i <= LOG_DEBUG; i++)
        if (strcmp(name, level_names[i]) == 0)
            return i;
    return -1;
}

/* Bytes of the well-formed UTF-8 sequence at s (at most n), 0 if none. */
static size_t utf8_at(const unsigned char *s, size_t n)
{
    size_t len = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
    if (len == 0 || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) || (s[0] == 0xf0 && s[1] < 0x90) ||
        (s[0] == 0xf4 && s[1] >= 0x90))
        return 0;   /* overlong, a surrogate, past U+10FFFF */
    return len;
}

/* in escaped into out (room for 4 bytes per byte of in, and a NUL). */
static void escape_line(const char *in, char *out)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)in;
    size_t n = strlen(in), o = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        size_t len = c >= 0x80 ? utf8_at(s + i, n - i) : 1;
        bool c1 = len == 2 && c == 0xc2 && s[i + 1] < 0xa0;
        if (c >= 0x20 && c != 0x7f && len && !c1) {
            memcpy(out + o, s + i, len);
            o += len;
            i += len;
            continue;
        }
        size_t bytes = c1 ? 2 : 1;
        for (size_t b = 0; b < bytes; b++, i++) {
            unsigned char e = s[i];
            out[o++] = '\\';
            if (e == '\n' || e == '\r' || e == '\t') {
                out[o++] = e == '\n' ? 'n' : e == '\r' ? 'r' : 't';
            } else {
                out[o++] = 'x';
                out[o++] = hex[e >> 4];
                out[o++] = hex[e & 15];
            }
        }
    }
    out[o] = '\0';
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    if ((int)level > atomic_load_explicit(&current_level, memory_order_relaxed))
        return;
    char line[LOG_LINE_MAX], escaped[LOG_LINE_MAX * 4];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    escape_line(line, escaped);
    /* One fprintf per line so lines from two threads never interleave. */
    fprintf(stderr, "seccheckd: %s: %s\n", level_names[level], escaped);
}
