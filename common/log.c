#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static enum log_level current_level = LOG_INFO;
static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_set_level(enum log_level level) { current_level = level; }

int log_level_parse(const char *name)
{
    for (int i = 0; i <= LOG_DEBUG; i++)
        if (strcmp(name, level_names[i]) == 0)
            return i;
    return -1;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    if (level > current_level)
        return;
    /* One fprintf per line so lines from two threads never interleave. */
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "seccheckd: %s: %s\n", level_names[level], line);
}
