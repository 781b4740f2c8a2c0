/* alert_line.c - an alert as Falco's JSON or text line (alert_line.h). */
#include "alert_line.h"

#include <string.h>

#include "json.h"

/* SGR colours of the priority word, highest priority first (rules.h order). */
static const char *const priority_colors[RULES_PRIORITY_COUNT] = {
    "1;31", "1;31", "1;31",   /* Emergency, Alert, Critical: bold red */
    "31",                     /* Error: red */
    "33",                     /* Warning: yellow */
    "36",                     /* Notice: cyan */
    "32",                     /* Informational: green */
    "2",                      /* Debug: dim */
};

/* Bytes of the valid UTF-8 sequence at s (at most len), or 0. */
static size_t utf8_len_at(const unsigned char *s, size_t len)
{
    size_t n = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
    return n && n <= len && utf8_valid((const char *)s, n) ? n : 0;
}

static void escape_code(struct strbuf *out, unsigned code)
{
    static const char hex[] = "0123456789abcdef";
    char esc[6] = {'\\', 'u', '0', '0', hex[(code >> 4) & 0xf], hex[code & 0xf]};
    strbuf_append(out, esc, sizeof(esc));
}

void alert_line_escape(struct strbuf *out, const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        size_t start = i;
        while (i < len && s[i] >= 0x20 && s[i] < 0x80 && s[i] != '"' && s[i] != '\\')
            i++;
        strbuf_append(out, s + start, i - start);
        if (i >= len)
            break;
        unsigned char c = s[i];
        if (c >= 0x80) {
            size_t n = utf8_len_at(s + i, len - i);
            if (n == 2 && c == 0xc2 && s[i + 1] < 0xa0)
                escape_code(out, s[i + 1]);            /* a C1 control, U+0080..U+009F */
            else if (n)
                strbuf_append(out, s + i, n);
            else
                strbuf_puts(out, "\xef\xbf\xbd");     /* U+FFFD for each byte that is not UTF-8 */
            i += n ? n : 1;
            continue;
        }
        switch (c) {
        case '"': strbuf_puts(out, "\\\""); break;
        case '\\': strbuf_puts(out, "\\\\"); break;
        case '\b': strbuf_puts(out, "\\b"); break;
        case '\f': strbuf_puts(out, "\\f"); break;
        case '\n': strbuf_puts(out, "\\n"); break;
        case '\r': strbuf_puts(out, "\\r"); break;
        case '\t': strbuf_puts(out, "\\t"); break;
        default: escape_code(out, c);
        }
        i++;
    }
}

/* Where the priority word starts in the output ("HH:MM:SS.nnnnnnnnn: Warning ..."),
 * or len when the output does not read so. */
static size_t priority_at(const struct alert *a, const char *name)
{
    size_t at = a->output_len, n = strlen(name);
    for (size_t i = 0; i + 1 < a->output_len && at == a->output_len; i++)
        if (a->output[i] == ':' && a->output[i + 1] == ' ')
            at = i + 2;
    return at + n <= a->output_len && memcmp(a->output + at, name, n) == 0 ? at : a->output_len;
}

static void render_text(struct strbuf *out, const struct alert *a, bool color)
{
    const char *name = rules_priority_name(a->priority);
    size_t at = color && a->priority < RULES_PRIORITY_COUNT ? priority_at(a, name) : a->output_len;
    if (at == a->output_len) {
        alert_line_escape(out, a->output, a->output_len);
        return;
    }
    size_t n = strlen(name);
    alert_line_escape(out, a->output, at);   /* the time prefix */
    strbuf_printf(out, "\033[%sm%s\033[0m", priority_colors[a->priority], name);
    alert_line_escape(out, a->output + at + n, a->output_len - at - n);
}

void alert_line_render(struct strbuf *out, const struct alert *a, const struct alert_line_style *style)
{
    switch (style->format) {
    case ALERT_LINE_JSON:
        strbuf_append(out, a->json, a->json_len);
        break;
    case ALERT_LINE_JOURNAL:
        strbuf_printf(out, "<%d>", a->priority < RULES_PRIORITY_COUNT ? (int)a->priority : RULES_DEBUG);
        render_text(out, a, false);
        break;
    case ALERT_LINE_TEXT:
        render_text(out, a, style->color);
        break;
    }
    strbuf_putc(out, '\n');
}
