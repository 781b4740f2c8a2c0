/* term_color.h - colour on a terminal for the commands that show a
 * database to people (`seccheckd alerts`, `seccheckd events`):
 * --color auto|always|never, and NO_COLOR (https://no-color.org/).
 *
 * Only seccheckd's own escape sequences are ever written: every string
 * from a sandbox is escaped first (event_line.h), then wrapped.
 */
#ifndef SECCHECKD_TERM_COLOR_H
#define SECCHECKD_TERM_COLOR_H

#include <stdbool.h>

enum term_color_mode { TERM_COLOR_AUTO, TERM_COLOR_ALWAYS, TERM_COLOR_NEVER };

/* "auto", "always" or "never": 0, or -1. */
int term_color_parse(const char *s, enum term_color_mode *out);

/* Whether to colour what goes to fd: always; never; auto when fd is a
 * terminal, NO_COLOR is unset or empty and TERM is not "dumb" (--color
 * always wins over NO_COLOR, as its convention asks of an explicit flag). */
bool term_color_wanted(enum term_color_mode mode, int fd);

#define TERM_COLOR_RESET "\x1b[0m"

/* The sequence for an alert's priority as Falco names it ("Critical"...),
 * "" for one it does not know: red for Emergency to Error (bold to
 * Critical), yellow for Warning, cyan for Notice, none below. */
const char *term_color_priority(const char *priority);

/* For the calls `seccheckd events` marks: exec green, connect magenta,
 * open blue. */
#define TERM_COLOR_EXEC "\x1b[32m"
#define TERM_COLOR_CONNECT "\x1b[35m"
#define TERM_COLOR_OPEN "\x1b[34m"

#endif
