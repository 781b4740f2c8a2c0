#include "sqlutil.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "strbuf.h"

int sqlutil_exec(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc == SQLITE_OK)
        return 0;
    snprintf(err, errlen, "%s", msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return rc;
}

int64_t sqlutil_int(sqlite3 *db, const char *sql, int64_t fallback)
{
    sqlite3_stmt *st;
    int64_t v = fallback;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

bool sqlutil_has(sqlite3 *db, const char *type, const char *name)
{
    sqlite3_stmt *st;
    bool found = false;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type=?1 AND name=?2", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, type, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

void sqlutil_bind_text(sqlite3_stmt *st, int col, const char *s)
{
    if (!s || !*s) {
        sqlite3_bind_null(st, col);
        return;
    }
    size_t len = strlen(s);
    if (utf8_valid(s, len)) {
        sqlite3_bind_text(st, col, s, (int)len, SQLITE_STATIC);
        return;
    }
    struct strbuf clean = {0};
    utf8_sanitize(&clean, s, len);
    sqlite3_bind_text(st, col, clean.failed ? "" : clean.data, clean.failed ? 0 : (int)clean.len, SQLITE_TRANSIENT);
    strbuf_free(&clean);
}

void sqlutil_bind_nonzero(sqlite3_stmt *st, int col, int64_t v)
{
    if (v)
        sqlite3_bind_int64(st, col, v);
    else
        sqlite3_bind_null(st, col);
}

/* path-wal or path-shm is there (or cannot be checked: then assume so). */
static bool companion_exists(const char *path, const char *suffix)
{
    char name[4200];
    if ((size_t)snprintf(name, sizeof(name), "%s%s", path, suffix) >= sizeof(name))
        return true;
    return access(name, F_OK) == 0 || errno != ENOENT;
}

int sqlutil_open_reader(const char *path, sqlite3 **db)
{
    bool quiet = !companion_exists(path, "-wal") && !companion_exists(path, "-shm");
    int rc = sqlite3_open_v2(path, db, quiet ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY, NULL);
    if (rc == SQLITE_OK && quiet)
        rc = sqlite3_exec(*db, "PRAGMA query_only=1", NULL, NULL, NULL);
    return rc;
}
