/* db_file.h - the SQLite database at --db as a file.
 *
 * Created private: DB_FILE_MODE whatever the umask, since it holds command
 * lines and environment variables (SQLite gives the -wal and -shm files it
 * creates the main file's permission bits, so the main file is enough).
 * Messages that name what is wrong with a path that cannot be a database
 * (a directory, a read-only file, a missing or unwritable directory), with
 * the directory hint only where the directory is the problem.
 */
#ifndef SECCHECKD_DB_FILE_H
#define SECCHECKD_DB_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sqlite3.h>

#define DB_FILE_MODE 0640

/* Before sqlite3_open of a database to write: creates path (DB_FILE_MODE)
 * if it does not exist, else checks that this user may write it and create
 * its -wal and -shm beside it. 0, or -1 with the problem and its fix in
 * err. */
int db_file_prepare(const char *path, char *err, size_t errlen);

/* Before a read-only open (verify, export, forward): names a missing file,
 * a directory, one this user may not read. 0, or -1 with err. */
int db_file_check_readable(const char *path, char *err, size_t errlen);

/* An open SQLite error as the reason a file is not usable: "it is not an
 * SQLite database" for SQLITE_NOTADB, else SQLite's own message. */
void db_file_describe_error(sqlite3 *db, char *err, size_t errlen);

#endif
