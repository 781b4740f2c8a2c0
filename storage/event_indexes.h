/* event_indexes.h - which secondary indexes the events table carries.
 *
 * Every index costs the writer a B-tree insert per event: with all four,
 * SQLite inserts ~3.4x slower than with none (bench/sqlite_ref.sh), and the
 * writer shares the CPU with the thread that must drain sandboxes within a
 * few milliseconds. So the set is a choice (--indexes): by default only
 * type, which every view filters on (bench/zero_drop.sh: type alone takes
 * ~12% more events/s than type,container before the sandboxes drop); time
 * ranges still avoid a full scan through it (skip-scan), once the table
 * statistics exist (event_indexes_analyze).
 */
#ifndef SECCHECKD_EVENT_INDEXES_H
#define SECCHECKD_EVENT_INDEXES_H

#include <stddef.h>
#include <sqlite3.h>

enum event_index {
    EVENT_INDEX_TYPE = 1u << 0,        /* events_by_type (msg_type, time_ns) */
    EVENT_INDEX_CONTAINER = 1u << 1,   /* events_by_container (container_id, time_ns) */
    EVENT_INDEX_TIME = 1u << 2,        /* events_by_time (time_ns) */
    EVENT_INDEX_CONN = 1u << 3,        /* events_by_conn (conn_id) */
};
#define EVENT_INDEXES_DEFAULT EVENT_INDEX_TYPE
#define EVENT_INDEXES_ALL (EVENT_INDEX_TYPE | EVENT_INDEX_CONTAINER | EVENT_INDEX_TIME | EVENT_INDEX_CONN)
/* "none" said explicitly: a mask of 0 means "not chosen", the default. */
#define EVENT_INDEXES_NONE (1u << 8)

/* "type,container", "all" or "none" -> a mask (never 0); -1 and a message
 * naming the word it did not know. */
int event_indexes_parse(const char *list, unsigned *mask, char *err, size_t errlen);

/* Creates the indexes in mask (0: EVENT_INDEXES_DEFAULT) that are missing
 * and drops the other known ones (indexes of other names, say made by hand,
 * are left alone); logs each change. Within the caller's transaction. */
int event_indexes_apply(sqlite3 *db, unsigned mask, char *err, size_t errlen);

/* Creates, when missing, the partial indexes of `seccheckd alerts show`'s
 * ancestry (exec, clone and fork-exit rows by connection and process):
 * always, whatever --indexes says. Within the caller's transaction. */
int event_indexes_ancestry(sqlite3 *db, char *err, size_t errlen);

/* Refreshes the query planner's statistics on events, reading a bounded
 * sample, so a time-range query skip-scans events_by_type instead of
 * reading the whole table. Cheap; at start and shutdown. */
void event_indexes_analyze(sqlite3 *db);

#endif
