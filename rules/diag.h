/* diag.h - adding to a rules_diag (rules.h) from inside the module. */
#ifndef SECCHECKD_RULES_DIAG_H
#define SECCHECKD_RULES_DIAG_H

#include <stdbool.h>

#include "rules.h"

/* At most this many items are kept (all are counted), warnings at most
 * half of them: a hostile file cannot make the report itself unbounded,
 * nor hide an error behind warnings. */
#define DIAG_MAX_ITEMS 1000

void diag_add(struct rules_diag *d, bool is_error, const char *file, unsigned line, unsigned column, const char *fmt,
              ...) __attribute__((format(printf, 6, 7)));

#endif
