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
#include <sqlite3.h>

#include "event.h"

/* Clears st's bindings and binds ev, with detail (detail_len bytes: ev's
 * event_detail_render, or NULL when ev was not decoded or it could not be
 * rendered). Text and blobs are bound SQLITE_STATIC: ev's bytes and detail
 * must stay until the statement has stepped. */
void event_row_bind(sqlite3_stmt *st, const struct event *ev, const char *detail, size_t detail_len,
                    bool stores_type_name);

#endif
