#include "term_color.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int term_color_parse(const char *s, enum term_color_mode *out)
{
    static const char *const names[] = {"auto", "always", "never"};
    for (int i = 0; i < 3; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (enum term_color_mode)i;
            return 0;
        }
    return -1;
}

bool term_color_wanted(enum term_color_mode mode, int fd)
{
    if (mode != TERM_COLOR_AUTO)
        return mode == TERM_COLOR_ALWAYS;
    const char *no_color = getenv("NO_COLOR"), *term = getenv("TERM");
    return isatty(fd) && !(no_color && no_color[0]) && !(term && strcmp(term, "dumb") == 0);
}

const char *term_color_priority(const char *priority)
{
    static const struct {
        const char *name, *sequence;
    } colors[] = {
        {"Emergency", "\x1b[1;31m"}, {"Alert", "\x1b[1;31m"}, {"Critical", "\x1b[1;31m"}, {"Error", "\x1b[31m"},
        {"Warning", "\x1b[33m"},     {"Notice", "\x1b[36m"},
    };
    for (size_t i = 0; i < sizeof(colors) / sizeof(colors[0]); i++)
        if (strcmp(priority, colors[i].name) == 0)
            return colors[i].sequence;
    return "";
}
