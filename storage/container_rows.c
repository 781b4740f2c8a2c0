/* container_rows.c - container records as container_info rows. */
#include <stdio.h>

#include "container_rows.h"
#include "sqlutil.h"

static const char container_info_sql[] =
    /* id: replacing a row (its passwd changed) gives it a new, higher one
     * (AUTOINCREMENT never hands an id out twice), so `seccheckd forward`
     * ships the rows past the central copy's newest. */
    "CREATE TABLE IF NOT EXISTS container_info("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  container_id TEXT NOT NULL UNIQUE,"
    "  state TEXT NOT NULL,"           /* found, unknown (no state file), refused (a bad one) */
    "  why TEXT,"                      /* unknown or refused: why */
    "  name TEXT, image TEXT, image_repository TEXT, image_tag TEXT,"
    "  pod_name TEXT, pod_namespace TEXT, pod_uid TEXT, sandbox_id TEXT,"
    "  is_sandbox INTEGER NOT NULL DEFAULT 0,"   /* the pod's pause container */
    "  privileged INTEGER NOT NULL DEFAULT 0,"
    "  terminal INTEGER NOT NULL DEFAULT 0,"
    "  user_uid INTEGER, user_gid INTEGER,"      /* the OCI process user */
    "  user_name TEXT,"                          /* its name in the container's /etc/passwd */
    "  users INTEGER NOT NULL DEFAULT 0,"        /* entries read from that passwd */
    "  rootfs TEXT, bundle TEXT, state_file TEXT,"
    "  resolved_ns INTEGER NOT NULL,"
    /* The sandbox it was looked up for (container.h): the names go to the
     * events of that sandbox's connections (connections.sandbox) only. */
    "  sandbox TEXT);";

/* A row is replaced only by a better answer, or by the same answer of its
 * own sandbox (its users re-read): found over refused over foreign over
 * unknown. So a lookup that found nothing (a container ended, its state
 * file gone, named by any sandbox after a restart) never erases names
 * found before, and another sandbox's lookup never replaces a found row
 * (a row of a build before rows had their sandbox, NULL, is replaced).
 * Replacing gives the row a new id (forward ships it). */
#define STATE_RANK(s) "(CASE " s " WHEN 'found' THEN 3 WHEN 'refused' THEN 2 WHEN 'foreign' THEN 1 ELSE 0 END)"
static const char upsert_sql[] =
    "INSERT OR REPLACE INTO container_info(container_id, state, why, name, image, image_repository, image_tag,"
    " pod_name, pod_namespace, pod_uid, sandbox_id, is_sandbox, privileged, terminal, user_uid, user_gid,"
    " user_name, users, rootfs, bundle, state_file, resolved_ns, sandbox)"
    " SELECT ?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23"
    " WHERE NOT EXISTS (SELECT 1 FROM container_info o WHERE o.container_id = ?1 AND"
    "   (" STATE_RANK("o.state") " > " STATE_RANK("?2") " OR"
    "    (" STATE_RANK("o.state") " = " STATE_RANK("?2") " AND o.sandbox IS NOT NULL AND o.sandbox IS NOT ?23)))";

int container_rows_setup(sqlite3 *db, char *err, size_t errlen)
{
    if (sqlutil_exec(db, container_info_sql, err, errlen) != SQLITE_OK)
        return -1;
    /* A table made before rows had their sandbox: its rows keep NULL, which
     * joins the connections of that time (no sandbox either). */
    if (sqlutil_int(db, "SELECT count(*) FROM pragma_table_info('container_info') WHERE name='sandbox'", 1) == 0 &&
        sqlutil_exec(db, "ALTER TABLE container_info ADD COLUMN sandbox TEXT", err, errlen) != SQLITE_OK)
        return -1;
    return 0;
}

int container_rows_prepare(sqlite3 *db, sqlite3_stmt **st)
{
    return sqlite3_prepare_v3(db, upsert_sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
}

static void bind_record(sqlite3_stmt *st, const struct container_record *r)
{
    sqlutil_bind_text(st, 1, r->id);
    sqlutil_bind_text(st, 2, container_state_name(r->state));
    const char *const texts[] = {r->why, r->name, r->image, r->image_repository, r->image_tag, r->pod_name,
                                 r->pod_namespace, r->pod_uid, r->sandbox_id};
    for (int i = 0; i < 9; i++)
        sqlutil_bind_text(st, 3 + i, texts[i]);
    sqlite3_bind_int(st, 12, r->is_sandbox);
    sqlite3_bind_int(st, 13, r->privileged);
    sqlite3_bind_int(st, 14, r->terminal);
    const struct container_user *u = r->has_user ? container_user_by_uid(r, r->user_uid) : NULL;
    if (r->has_user) {
        sqlite3_bind_int64(st, 15, r->user_uid);
        sqlite3_bind_int64(st, 16, r->user_gid);
    } else {
        sqlite3_bind_null(st, 15);
        sqlite3_bind_null(st, 16);
    }
    sqlutil_bind_text(st, 17, u ? u->name : (r->has_user && r->user_uid == 0 ? "root" : NULL));
    sqlite3_bind_int64(st, 18, (sqlite3_int64)r->nusers);
    sqlutil_bind_text(st, 19, r->rootfs);
    sqlutil_bind_text(st, 20, r->bundle);
    sqlutil_bind_text(st, 21, r->state_file);
    sqlite3_bind_int64(st, 22, r->resolved_ns);
    sqlutil_bind_text(st, 23, r->sandbox);
}

int container_rows_write(sqlite3_stmt *st, const struct batch *b)
{
    for (size_t i = 0; i < b->ncontainers; i++) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        bind_record(st, b->containers[i]);
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE)
            return -1;
    }
    return 0;
}
