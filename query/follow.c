#include "follow.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "sqlutil.h"

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig) { stop_signal = sig; }

bool follow_stopped(void) { return stop_signal != 0; }

void follow_catch_signals(struct follow_signals *saved)
{
    stop_signal = 0;
    struct sigaction sa = {.sa_handler = on_stop};   /* no SA_RESTART: a sleep ends */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &saved->old_int);
    sigaction(SIGTERM, &sa, &saved->old_term);
    struct sigaction ignore = {.sa_handler = SIG_IGN};
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, &saved->old_pipe);
}

void follow_restore_signals(const struct follow_signals *saved)
{
    sigaction(SIGINT, &saved->old_int, NULL);
    sigaction(SIGTERM, &saved->old_term, NULL);
    sigaction(SIGPIPE, &saved->old_pipe, NULL);
}

/* follow_open_db without printing: 0, or -1 with "PATH: problem" in err. */
static int open_db(const char *path, sqlite3 **db, char *err, size_t errlen)
{
    *db = NULL;
    struct stat st;
    const char *problem = stat(path, &st) != 0 ? (errno == ENOENT ? "no such database (check --db)" : strerror(errno))
                          : S_ISDIR(st.st_mode) ? "is a directory, not a database"
                          : !S_ISREG(st.st_mode) ? "is not a regular file, not a database"
                                                 : NULL;
    if (problem) {
        snprintf(err, errlen, "%s: %s", path, problem);
        return -1;
    }
    if (sqlutil_open_reader(path, db) != SQLITE_OK) {
        snprintf(err, errlen, "cannot open %s: %s", path, *db ? sqlite3_errmsg(*db) : "out of memory");
        return -1;
    }
    sqlite3_busy_timeout(*db, 5000);
    char why[256];
    /* The first read: a file that is not a database fails here. */
    if (sqlutil_exec(*db, "SELECT 1 FROM sqlite_master LIMIT 1", why, sizeof(why)) != 0) {
        snprintf(err, errlen, "%s: %s", path, why);
        return -1;
    }
    if (!sqlutil_has(*db, "table", "events")) {
        snprintf(err, errlen, "%s is not a seccheckd database (no events table)", path);
        return -1;
    }
    return 0;
}

int follow_open_db(const char *prog, const char *path, sqlite3 **db)
{
    char err[4400];
    if (open_db(path, db, err, sizeof(err)) == 0)
        return 0;
    fprintf(stderr, "%s: %s\n", prog, err);
    return 1;
}

int64_t follow_last_id_before(sqlite3 *db, int64_t since_ns)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT recv_ns FROM events WHERE id >= ?1 ORDER BY id LIMIT 1", -1, &st, NULL) !=
        SQLITE_OK)
        return 0;
    /* Any ids an edited file may hold: no signed overflow. */
    int64_t lo = sqlutil_int(db, "SELECT min(id) FROM events", 1);
    int64_t max = sqlutil_int(db, "SELECT max(id) FROM events", 0), hi = max < INT64_MAX ? max + 1 : max;
    while (lo < hi) {   /* the least x whose first row at or after it is recent enough (or none) */
        int64_t mid = lo + (int64_t)(((uint64_t)hi - (uint64_t)lo) / 2);
        sqlite3_bind_int64(st, 1, mid);
        bool recent = sqlite3_step(st) != SQLITE_ROW || sqlite3_column_int64(st, 0) >= since_ns;
        sqlite3_reset(st);
        if (recent)
            hi = mid;
        else
            lo = mid + 1;
    }
    sqlite3_finalize(st);
    return lo > INT64_MIN ? lo - 1 : lo;
}

static int64_t data_version(struct follow *f)
{
    int64_t v = -1;
    if (sqlite3_step(f->data_version) == SQLITE_ROW)
        v = sqlite3_column_int64(f->data_version, 0);
    sqlite3_reset(f->data_version);
    return v;
}

int follow_start(struct follow *f, sqlite3 *db, const char *prog, const char *path)
{
    f->prog = prog;
    f->path = path;
    f->said_waiting = false;
    if (sqlite3_prepare_v2(db, "PRAGMA data_version", -1, &f->data_version, NULL) != SQLITE_OK) {
        fprintf(stderr, "%s: %s\n", prog, sqlite3_errmsg(db));
        return 1;
    }
    f->version = data_version(f);
    db_file_remember_sidecars(&f->sidecars, path);
    return 0;
}

void follow_sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    if (!stop_signal)
        nanosleep(&ts, NULL);   /* a signal cuts it short */
}

enum follow_event follow_wait(struct follow *f)
{
    sqlite3 *db = sqlite3_db_handle(f->data_version);
    while (!stop_signal) {
        follow_sleep_ms(FOLLOW_POLL_MS);
        int64_t v = data_version(f);
        if (v != f->version) {
            f->version = v;
            return FOLLOW_COMMITTED;
        }
        if (db_file_moved(db))
            return FOLLOW_MOVED;
    }
    return FOLLOW_STOPPED;
}

/* Whether the -wal or -shm at the path is still the old file's. */
static bool same_file(const char *path, const char *suffix, bool known, dev_t dev, ino_t ino)
{
    char full[4200];
    struct stat st;
    snprintf(full, sizeof(full), "%s%s", path, suffix);
    return known && stat(full, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

/* The file at the path can be opened: there is one, and the old file's
 * -wal and -shm are not beside it any more (the daemon removes them once
 * it has closed the old file; read through them, the new file would look
 * like the old one's history). */
static bool path_ready(const struct follow *f)
{
    struct stat st;
    return stat(f->path, &st) == 0 &&
           !same_file(f->path, "-wal", f->sidecars.wal.known, f->sidecars.wal.dev, f->sidecars.wal.ino) &&
           !same_file(f->path, "-shm", f->sidecars.shm.known, f->sidecars.shm.dev, f->sidecars.shm.ino);
}

int follow_reopen(struct follow *f, sqlite3 **db)
{
    sqlite3_finalize(f->data_version);
    f->data_version = NULL;
    fprintf(stderr, "%s: %s is not the file it was (deleted or replaced): following the file at the path\n",
            f->prog, f->path);
    /* The old file stays open until the new one is ready: its -wal and -shm
     * then cannot be freed, so no new file takes their inode numbers and
     * passes for them. */
    sqlite3 *old = *db;
    *db = NULL;
    sqlite3_db_config(old, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
    char err[4400], said[4400] = "";
    while (!stop_signal) {
        if (!path_ready(f)) {
            snprintf(err, sizeof(err), "waiting for the daemon to open a database at %s", f->path);
        } else {
            sqlite3_close(old);   /* no checkpoint: the -wal at the path is the new file's */
            old = NULL;
            if (open_db(f->path, db, err, sizeof(err)) == 0) {
                if (follow_start(f, *db, f->prog, f->path) == 0) {
                    fprintf(stderr, "%s: reading %s again\n", f->prog, f->path);
                    return 0;
                }
                snprintf(err, sizeof(err), "%s: cannot follow its commits", f->path);
            }
            sqlite3_close(*db);
            *db = NULL;
        }
        if (strcmp(err, said) != 0)   /* a file being made fails a few times: each reason once */
            fprintf(stderr, "%s: %s\n", f->prog, err);
        snprintf(said, sizeof(said), "%s", err);
        follow_sleep_ms(1000);
    }
    sqlite3_close(old);
    return 1;
}

void follow_end(struct follow *f)
{
    sqlite3_finalize(f->data_version);
    f->data_version = NULL;
}
