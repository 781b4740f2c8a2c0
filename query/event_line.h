/* event_line.h - one event as one line for people (`seccheckd events`):
 *
 *   2026-11-29T12:34:56.123Z runsc-924761 cat[3] openat /etc/passwd O_RDONLY|O_CLOEXEC = 3
 *
 * when (the sandbox's time, else when seccheckd received it), container,
 * process[thread group id, else thread id], what happened: the call with its main arguments
 * (paths, argv, decoded socket addresses, flags by name) and, on a
 * syscall's exit, " = result" or " = ERRNO". Types without a layout of
 * their own show their scalar fields as name=value.
 *
 * Every string from a sandbox is bounded and escaped so it can neither
 * forge a line nor drive the terminal: control bytes, DEL, invalid UTF-8,
 * C1 controls and bidirectional overrides become \n, \xNN or \u{NNNN},
 * backslash \\; a value with a space, a quote or nothing in it is quoted;
 * a value is cut at EVENT_LINE_VALUE_MAX bytes and the line's lists stop
 * near EVENT_LINE_MAX, each saying what it left out.
 */
#ifndef SECCHECKD_EVENT_LINE_H
#define SECCHECKD_EVENT_LINE_H

#include <stdbool.h>

#include "event.h"
#include "strbuf.h"

#define EVENT_LINE_VALUE_MAX 256
#define EVENT_LINE_MAX 4096

/* Appends ev's line, '\n' included. ev as decode_event made it, with
 * recv_ns set; an undecoded event says so, with its type and size. */
void event_line_render(struct strbuf *out, const struct event *ev);

/* The same, with color the call's name of an exec, connect or open
 * coloured (term_color.h): for a terminal. */
void event_line_render_color(struct strbuf *out, const struct event *ev, bool color);

/* The same, with the container's names ("namespace/pod/name", as
 * `seccheckd containers` knows them; NULL: none) beside its id, escaped:
 *   2026-11-29T12:34:56.123Z 3f9a1c2b(shop/web-7f9c/web) cat[3] openat ...
 * (one word, so the line's columns stay where they are). */
void event_line_render_named(struct strbuf *out, const struct event *ev, bool color, const char *names,
                             size_t names_len);

/* Appends text (len bytes, any content) escaped and bounded as above. */
void event_line_text(struct strbuf *out, const char *text, size_t len);

/* The same without quotes, cut at max bytes: a column of prose, such as an
 * alert's output. */
void event_line_plain(struct strbuf *out, const char *text, size_t len, size_t max);

/* Prints "  OPTION 'VALUE': why" on stderr, the value escaped and cut as
 * event_line_plain does: a reader's filter that matched nothing. */
void event_line_say_option(const char *option, const char *value, const char *why);

/* Appends a JSON document with the characters a terminal acts on that
 * JSON leaves raw (DEL, C1 controls, bidirectional overrides) written as
 * \uNNNN: the same JSON, safe to print. */
void event_line_json(struct strbuf *out, const char *json, size_t len);

#endif
