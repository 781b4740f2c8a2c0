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
    /* errors first: a long list of warnings must not push them out of sight */
    for (size_t k = 0; k < 2 * d->count; k++) {
        const struct rules_diag_item *it = &d->items[k % d->count];
        if (it->is_error != (k < d->count))
            continue;
        const char *kind = it->is_error ? "error" : "warning";
        if (it->line)
            fprintf(out, "%s:%u:%u: %s: %s\n", it->file, it->line, it->column, kind, it->message);
        else
            fprintf(out, "%s: %s: %s\n", it->file, kind, it->message);
    }
    size_t shown_errors = d->errors_kept;
    if (d->errors > shown_errors)
        fprintf(out, "(%zu more errors not shown)\n", d->errors - shown_errors);
    if (d->warnings > d->count - shown_errors)
        fprintf(out, "(%zu more warnings not shown)\n", d->warnings - (d->count - shown_errors));
}

void diag_add(struct rules_diag *d, bool is_error, const char *file, unsigned line, unsigned column, const char *fmt,
              ...)
{
    if (is_error)
        d->errors++;
    else
        d->warnings++;
    /* warnings take at most half the room: errors are never crowded out */
    if (d->count >= DIAG_MAX_ITEMS || (!is_error && d->count - d->errors_kept >= DIAG_MAX_ITEMS / 2))
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
    d->errors_kept += is_error;
    d->count++;
}
