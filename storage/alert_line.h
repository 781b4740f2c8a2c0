/* alert_line.h - one alert as a line of text: what --alerts-out and the
 * daemon's standard output show.
 *
 * JSON is the alert's Falco JSON line as the rules made it. TEXT is Falco's
 * text line (its json_output: false, the default): the alert's output,
 * "HH:MM:SS.nnnnnnnnn: Priority rendered-output" (UTC, as in the JSON's
 * "output"; Falco uses the local zone), escaped as Falco escapes it (the
 * output as a JSON string without its quotes: control characters as \n or
 * \u001b, quotes and backslashes escaped, invalid UTF-8 as U+FFFD;
 * falco userspace/engine/formats.cpp, format_event). A value from the
 * sandbox can therefore never start a terminal escape sequence; the C1
 * controls U+0080..U+009F, which some terminals also obey, are escaped too.
 * Colour, for a terminal, marks the priority word. JOURNAL is the text
 * behind sd-daemon's "<N>" prefix, N the priority as a syslog level
 * (Emergency 0 .. Debug 7), so journald files each alert at its priority.
 */
#ifndef SECCHECKD_ALERT_LINE_H
#define SECCHECKD_ALERT_LINE_H

#include <stdbool.h>

#include "rules.h"
#include "strbuf.h"

enum alert_line_format {
    ALERT_LINE_JSON,
    ALERT_LINE_TEXT,
    ALERT_LINE_JOURNAL,
};

struct alert_line_style {
    enum alert_line_format format;
    bool color;                 /* TEXT only: ANSI colour on the priority */
};

/* Appends the alert's line, '\n' included. */
void alert_line_render(struct strbuf *out, const struct alert *a, const struct alert_line_style *style);

/* Falco's text escaping of s[0..len) (see above), appended. */
void alert_line_escape(struct strbuf *out, const char *s, size_t len);

#endif
