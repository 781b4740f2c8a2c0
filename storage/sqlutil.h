/* sqlutil.h - the few SQLite calls every storage module makes the same way:
 * run SQL with a message on failure, read one integer, ask whether a table
 * or index exists, bind text from a sandbox. */
#ifndef SECCHECKD_SQLUTIL_H
#define SECCHECKD_SQLUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

/* Runs sql (one or more statements). SQLITE_OK (0), or the failure's result
 * code with SQLite's message in err. */
int sqlutil_exec(sqlite3 *db, const char *sql, char *err, size_t errlen);

/* The first column of the first row of sql; fallback when there is no row,
 * it is NULL, or the query fails. */
int64_t sqlutil_int(sqlite3 *db, const char *sql, int64_t fallback);

/* Whether sqlite_master has an object of this type ("table", "index"). */
bool sqlutil_has(sqlite3 *db, const char *type, const char *name);

/* Binds s to parameter col: NULL for NULL or "" (the tables' rule), else
 * the string, SQLITE_STATIC (s must outlive the step). Text columns must
 * hold valid UTF-8 (readers such as Python's sqlite3 refuse anything else)
 * and a sandbox may send any bytes: the rare invalid string is bound as a
 * sanitized copy (U+FFFD per bad byte); the raw column keeps the original. */
void sqlutil_bind_text(sqlite3_stmt *st, int col, const char *s);

/* Opens the database at path for reading (never creating it), as `verify`
 * and `export` do, next to a running daemon or not, and leaves no -wal or
 * -shm file behind that was not there. A WAL database read through a
 * read-only connection keeps the -wal and -shm that connection made (only
 * a connection that may write removes them, as the last one to close).
 * So without a -wal or -shm (no daemon has the database open) it is
 * opened read-write with query_only set, and SQLite removes them at
 * sqlite3_close unless another connection (a daemon started meanwhile)
 * still uses them; with them, read-only, and they stay. SQLITE_OK, or
 * sqlite3_open_v2's code with *db as it leaves it (close it). */
int sqlutil_open_reader(const char *path, sqlite3 **db);

/* Binds v, or NULL for 0 ("not collected": gVisor never reports a zero
 * time or id, and a connection not closed yet has no close time). */
void sqlutil_bind_nonzero(sqlite3_stmt *st, int col, int64_t v);

#endif
