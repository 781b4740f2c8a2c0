/* event_row.h - one event as a row of the events table (schema.sql.h).
 *
 * Binds the parameters of insert_event_sql (or insert_event_v1_sql, which
 * also stores type_name, for a table upgraded from schema version 1) from a
 * decoded event, with the table's rules: a zero time or id and an empty
 * string are NULL ("not collected"); the context columns are all NULL when
 * context_data was not sent (is_exec_session is NULL then, and only then);
 * result and errno only on a syscall's exit; detail is event_json.h's
 * event_detail_render, so each value is stored once. The sink and the
 * bench's bare INSERT loop (bench/ref_sqlite_insert.c) bind through here.
 */
#ifndef SECCHECKD_EVENT_ROW_H
#define SECCHECKD_EVENT_ROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#include "event.h"

/* One parameter's value as event_row_bind binds it. */
enum event_value_kind { EVENT_VALUE_NULL, EVENT_VALUE_INT, EVENT_VALUE_TEXT, EVENT_VALUE_BLOB };
struct event_value {
    enum event_value_kind kind;
    bool unclean;                   /* text that is not valid UTF-8: bound sanitized (sqlutil_bind_text) */
    int64_t i;
    const char *p;                  /* text (NUL-terminated when unclean) or bytes, pointing into ev or detail */
    size_t len;
};
#define EVENT_ROW_PARAMS 28         /* insert_event_sql's ?1..?27 and insert_event_v1_sql's ?28 type_name */

/* The values event_row_bind binds, v[i] for parameter ?i (v[0] unused;
 * ?28 NULL unless stores_type_name): one rule for the daemon's rows and for
 * whoever renders them again from raw without SQLite (event_redecode.h). */
void event_row_values(const struct event *ev, const char *detail, size_t detail_len, bool stores_type_name,
                      struct event_value v[EVENT_ROW_PARAMS + 1]);

/* Clears st's bindings and binds v[1..n] to ?1..?n. */
void event_row_bind_values(sqlite3_stmt *st, const struct event_value *v, int n);

/* Clears st's bindings and binds ev, with detail (detail_len bytes: ev's
 * event_detail_render, or NULL when ev was not decoded or it could not be
 * rendered). Text and blobs are bound SQLITE_STATIC: ev's bytes and detail
 * must stay until the statement has stepped. */
void event_row_bind(sqlite3_stmt *st, const struct event *ev, const char *detail, size_t detail_len,
                    bool stores_type_name);

#endif
