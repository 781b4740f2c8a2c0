/* follow.h - what the commands that show a database to people share
 * (`seccheckd events`, `seccheckd alerts`): opening it to read next to a
 * running daemon, and --follow: waiting for the daemon's next commit until
 * SIGINT or SIGTERM asks to stop.
 */
#ifndef SECCHECKD_QUERY_FOLLOW_H
#define SECCHECKD_QUERY_FOLLOW_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sqlite3.h>

#include "db_file.h"

#define FOLLOW_POLL_MS 200   /* how often --follow looks for a commit */

/* Opens path to read: never created, no -wal or -shm left behind that were
 * not there (read-write with query_only when it can), waiting out the
 * daemon's write lock. Checks that it is a seccheckd database (an events
 * table). 0, or 1 after printing "PROG: PATH: problem". */
int follow_open_db(const char *prog, const char *path, sqlite3 **db);

/* The last event id received before since_ns (0: none): ids grow with
 * the time they were received, so a binary search over ids (a rowid lookup
 * each) finds it; rows before it received later (a clock step back) are not
 * looked at. What --since means: the daemon's clock, never the sandbox's. */
int64_t follow_last_id_before(sqlite3 *db, int64_t since_ns);

/* --follow: PRAGMA data_version changes when another connection commits
 * (a read of the WAL index, not of the tables); the file at the path is
 * checked at each poll too, so a database deleted or replaced under the
 * daemon is followed to the file the daemon goes on in, as delivery does. */
struct follow {
    const char *prog, *path;
    sqlite3_stmt *data_version;
    int64_t version;
    struct db_file_sidecars sidecars;   /* the -wal and -shm of the file open */
    bool said_waiting;
};
/* 0, or 1 after printing the error. */
int follow_start(struct follow *f, sqlite3 *db, const char *prog, const char *path);

enum follow_event {
    FOLLOW_COMMITTED,   /* another connection committed: read on */
    FOLLOW_MOVED,       /* the file at the path is not the one open any more */
    FOLLOW_STOPPED,     /* a stop signal */
};
/* Sleeps until one of those. */
enum follow_event follow_wait(struct follow *f);

/* After FOLLOW_MOVED, once the caller read what the old file still had and
 * finalized its statements: closes *db (no checkpoint: the -wal at the path
 * may be the new file's) and, once the daemon has let go of the old file's
 * -wal and -shm (so the new file is never read through them), opens the
 * file at the path into *db, waiting for one while there is none. 0, or 1
 * when a stop signal came first. */
int follow_reopen(struct follow *f, sqlite3 **db);

void follow_end(struct follow *f);

/* Sleeps ms milliseconds, cut short by a stop signal. */
void follow_sleep_ms(int ms);

/* SIGINT and SIGTERM end --follow cleanly (true from follow_stopped);
 * SIGPIPE is ignored, so a reader that goes away is an EPIPE, not a death. */
struct follow_signals {
    struct sigaction old_int, old_term, old_pipe;
};
void follow_catch_signals(struct follow_signals *saved);
void follow_restore_signals(const struct follow_signals *saved);
bool follow_stopped(void);

#endif
