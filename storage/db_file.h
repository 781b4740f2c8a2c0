/* db_file.h - the SQLite database at --db as a file.
 *
 * Created private: DB_FILE_MODE whatever the umask, since it holds command
 * lines and environment variables (SQLite gives the -wal and -shm files it
 * creates the main file's permission bits, so the main file is enough).
 * Messages that name what is wrong with a path that cannot be a database
 * (a directory, a read-only file, a missing or unwritable directory), with
 * the directory hint only where the directory is the problem. And whether
 * the path still holds the file a connection has open: a database deleted
 * or replaced under the daemon must be noticed, and the new file at the
 * path must not be read through the old one's -wal and -shm.
 */
#ifndef SECCHECKD_DB_FILE_H
#define SECCHECKD_DB_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
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

/* Whether the main file of db is no longer at its path: deleted, or another
 * file put there (SQLITE_FCNTL_HAS_MOVED: one stat). */
bool db_file_moved(sqlite3 *db);

/* The -wal and -shm files beside a database, by device and inode. */
struct db_file_sidecars {
    struct {
        bool known;
        dev_t dev;
        ino_t ino;
    } wal, shm;
};

/* Taken once the database is open in WAL mode: SQLite keeps both files
 * open (and in place) for as long as the connection lives. */
void db_file_remember_sidecars(struct db_file_sidecars *s, const char *path);

/* After closing a database whose file was deleted or replaced (without the
 * checkpoint that would delete the -wal and -shm by name): removes the ones
 * at path that are still those remembered, so the database at the path now
 * is not read through the old one's log; a restore that brought its own is
 * left alone. */
void db_file_drop_stale_sidecars(const struct db_file_sidecars *s, const char *path);

#endif
