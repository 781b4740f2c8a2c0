#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

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

void log_msg(enum log_level level, const char *fmt, ...)
{
    if ((int)level > atomic_load_explicit(&current_level, memory_order_relaxed))
        return;
    /* One fprintf per line so lines from two threads never interleave. */
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "seccheckd: %s: %s\n", level_names[level], line);
}
