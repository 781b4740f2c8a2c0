#include "db_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PICK_ANOTHER "pick another path with --db"

/* The directory part of path: "." for a bare name. */
static void directory_of(const char *path, char *out, size_t outlen)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, outlen, ".");
    else if (slash == path)
        snprintf(out, outlen, "/");
    else
        snprintf(out, outlen, "%.*s", (int)(slash - path), path);
}

static bool permission_error(int e)
{
    return e == EACCES || e == EPERM;
}

static void describe_directory(const char *path, char *err, size_t errlen)
{
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        len--;
    snprintf(err, errlen, "it is a directory, not a file (give a file path with --db, such as %.*s/seccheck.db)",
             (int)len, path);
}

/* The -wal and -shm files are created beside the database. */
static int check_directory_writable(const char *path, char *err, size_t errlen)
{
    char dir[4096];
    directory_of(path, dir, sizeof(dir));
    if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) == 0)
        return 0;
    if (errno == EROFS)
        snprintf(err, errlen, "it is on a read-only file system (" PICK_ANOTHER ")");
    else
        snprintf(err, errlen, "its -wal and -shm files cannot be created in directory %s: %s (check that its "
                 "directory exists and is writable by the user seccheckd runs as, or " PICK_ANOTHER ")", dir,
                 strerror(errno));
    return -1;
}

static int check_existing(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "%s", strerror(errno));   /* a symlink to nothing, a loop */
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        describe_directory(path, err, errlen);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "it is not a regular file (" PICK_ANOTHER ")");
        return -1;
    }
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        if (permission_error(errno))
            snprintf(err, errlen, "it is read-only for this user (%s): make it writable by the user seccheckd "
                     "runs as, or " PICK_ANOTHER, strerror(errno));
        else if (errno == EROFS)
            snprintf(err, errlen, "it is on a read-only file system (" PICK_ANOTHER ")");
        else
            snprintf(err, errlen, "%s", strerror(errno));
        return -1;
    }
    close(fd);
    return check_directory_writable(path, err, errlen);
}

int db_file_prepare(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, DB_FILE_MODE);
    if (fd >= 0) {
        /* The umask may have taken bits DB_FILE_MODE asks for. */
        int rc = fchmod(fd, DB_FILE_MODE);
        int e = errno;
        close(fd);
        if (rc != 0)
            snprintf(err, errlen, "cannot make it mode %04o: %s", DB_FILE_MODE, strerror(e));
        return rc == 0 ? 0 : -1;
    }
    int e = errno;
    if (e == EEXIST)
        return check_existing(path, err, errlen);
    char dir[4096];
    directory_of(path, dir, sizeof(dir));
    if (e == ENOENT)
        snprintf(err, errlen, "directory %s does not exist (check that its directory exists and is writable, or "
                 PICK_ANOTHER ")", dir);
    else if (permission_error(e))
        snprintf(err, errlen, "cannot create it in directory %s: %s (check that its directory exists and is "
                 "writable by the user seccheckd runs as, or " PICK_ANOTHER ")", dir, strerror(e));
    else if (e == EISDIR)
        describe_directory(path, err, errlen);
    else if (e == EROFS)
        snprintf(err, errlen, "cannot create it: the file system is read-only (" PICK_ANOTHER ")");
    else
        snprintf(err, errlen, "cannot create it: %s", strerror(e));
    return -1;
}

int db_file_check_readable(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s is a directory, not a database file", path);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s is not a regular file", path);
        return -1;
    }
    if (access(path, R_OK) != 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

void db_file_describe_error(sqlite3 *db, char *err, size_t errlen)
{
    if ((sqlite3_extended_errcode(db) & 0xff) == SQLITE_NOTADB)
        snprintf(err, errlen, "it is not an SQLite database (" PICK_ANOTHER ")");
    else
        snprintf(err, errlen, "%s", sqlite3_errmsg(db));
}

bool db_file_moved(sqlite3 *db)
{
    int moved = 0;
    return sqlite3_file_control(db, "main", SQLITE_FCNTL_HAS_MOVED, &moved) == SQLITE_OK && moved;
}

static void remember(const char *path, const char *suffix, bool *known, dev_t *dev, ino_t *ino)
{
    char full[4200];
    struct stat st;
    snprintf(full, sizeof(full), "%s%s", path, suffix);
    *known = stat(full, &st) == 0;
    *dev = *known ? st.st_dev : 0;
    *ino = *known ? st.st_ino : 0;
}

void db_file_remember_sidecars(struct db_file_sidecars *s, const char *path)
{
    remember(path, "-wal", &s->wal.known, &s->wal.dev, &s->wal.ino);
    remember(path, "-shm", &s->shm.known, &s->shm.dev, &s->shm.ino);
}

static void drop_if_same(const char *path, const char *suffix, bool known, dev_t dev, ino_t ino)
{
    char full[4200];
    struct stat st;
    snprintf(full, sizeof(full), "%s%s", path, suffix);
    if (known && stat(full, &st) == 0 && st.st_dev == dev && st.st_ino == ino)
        unlink(full);
}

void db_file_drop_stale_sidecars(const struct db_file_sidecars *s, const char *path)
{
    drop_if_same(path, "-wal", s->wal.known, s->wal.dev, s->wal.ino);
    drop_if_same(path, "-shm", s->shm.known, s->shm.dev, s->shm.ino);
}
