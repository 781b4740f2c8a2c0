/* diag.c - rules_diag (every error and warning with its position) and
 * Falco's priority names. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "diag.h"
#include "rules.h"

static const char *const priority_names[RULES_PRIORITY_COUNT] = {
    "Emergency", "Alert", "Critical", "Error", "Warning", "Notice", "Informational", "Debug",
};

const char *rules_priority_name(enum rules_priority p)
{
    return p < RULES_PRIORITY_COUNT ? priority_names[p] : "Unknown";
}

int rules_priority_parse(const char *s, enum rules_priority *out)
{
    for (int i = 0; i < RULES_PRIORITY_COUNT; i++) {
        if (strcasecmp(s, priority_names[i]) == 0) {
            *out = (enum rules_priority)i;
            return 0;
        }
    }
    if (strcasecmp(s, "info") == 0) {
        *out = RULES_INFORMATIONAL;
        return 0;
    }
    return -1;
}

void rules_diag_free(struct rules_diag *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->count; i++) {
        free(d->items[i].file);
        free(d->items[i].message);
    }
    free(d->items);
    memset(d, 0, sizeof(*d));
}

void rules_diag_print(const struct rules_diag *d, FILE *out)
{
    for (size_t i = 0; i < d->count; i++) {
        const struct rules_diag_item *it = &d->items[i];
        const char *kind = it->is_error ? "error" : "warning";
        if (it->line)
            fprintf(out, "%s:%u:%u: %s: %s\n", it->file, it->line, it->column, kind, it->message);
        else
            fprintf(out, "%s: %s: %s\n", it->file, kind, it->message);
    }
    size_t shown_errors = 0;
    for (size_t i = 0; i < d->count; i++)
        shown_errors += d->items[i].is_error;
    if (d->errors > shown_errors)
        fprintf(out, "(%zu more errors not shown)\n", d->errors - shown_errors);
}

void diag_add(struct rules_diag *d, bool is_error, const char *file, unsigned line, unsigned column, const char *fmt,
              ...)
{
    if (is_error)
        d->errors++;
    else
        d->warnings++;
    if (d->count >= DIAG_MAX_ITEMS)
        return;
    if (d->count == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 16;
        struct rules_diag_item *n = realloc(d->items, cap * sizeof(*n));
        if (!n)
            return;
        d->items = n;
        d->cap = cap;
    }
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    struct rules_diag_item *it = &d->items[d->count];
    it->is_error = is_error;
    it->file = strdup(file ? file : "");
    it->message = strdup(msg);
    it->line = line;
    it->column = column;
    if (!it->file || !it->message) {
        free(it->file);
        free(it->message);
        return;
    }
    d->count++;
}
