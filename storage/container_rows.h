/* container_rows.h - the container_info table: one row per container whose
 * runsc state was looked up (container/container.h), written by the SQLite
 * sink in the transaction of the batch that carries the record, so a
 * container's names are committed with (or before) its events. The
 * `containers` view (views.sql.h) joins it. */
#ifndef SECCHECKD_CONTAINER_ROWS_H
#define SECCHECKD_CONTAINER_ROWS_H

#include <sqlite3.h>

#include "batch.h"

/* CREATE TABLE IF NOT EXISTS, in the schema's transaction. 0, or -1 with err. */
int container_rows_setup(sqlite3 *db, char *err, size_t errlen);

/* The statement container_rows_write steps (finalize it with the sink's). */
int container_rows_prepare(sqlite3 *db, sqlite3_stmt **st);

/* Every record of b, replacing the container's row. 0, or -1 (the
 * transaction fails, and the records come again with a later batch). */
int container_rows_write(sqlite3_stmt *st, const struct batch *b);

#endif
