#include "event_indexes.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sqlutil.h"

struct index_def {
    enum event_index bit;
    const char *word;       /* as --indexes spells it */
    const char *name;
    const char *columns;
};

static const struct index_def known[] = {
    {EVENT_INDEX_TYPE, "type", "events_by_type", "msg_type, time_ns"},
    {EVENT_INDEX_CONTAINER, "container", "events_by_container", "container_id, time_ns"},
    {EVENT_INDEX_TIME, "time", "events_by_time", "time_ns"},
    {EVENT_INDEX_CONN, "conn", "events_by_conn", "conn_id"},
};
#define NKNOWN (sizeof(known) / sizeof(known[0]))

static int parse_word(const char *word, unsigned *mask)
{
    if (strcmp(word, "all") == 0) {
        *mask |= EVENT_INDEXES_ALL;
        return 0;
    }
    if (strcmp(word, "none") == 0) {
        *mask |= EVENT_INDEXES_NONE;
        return 0;
    }
    for (size_t i = 0; i < NKNOWN; i++)
        if (strcmp(word, known[i].word) == 0) {
            *mask |= known[i].bit;
            return 0;
        }
    return -1;
}

int event_indexes_parse(const char *list, unsigned *mask, char *err, size_t errlen)
{
    char *copy = strdup(list), *save = NULL;
    if (!copy) {
        snprintf(err, errlen, "--indexes: out of memory");
        return -1;
    }
    unsigned m = 0;
    int rc = 0, words = 0;
    for (char *w = strtok_r(copy, ", \t", &save); w && rc == 0; w = strtok_r(NULL, ", \t", &save), words++)
        if (parse_word(w, &m) != 0) {
            snprintf(err, errlen, "--indexes: expected type, container, time, conn, all or none (or a comma "
                     "list), got '%s'", w);
            rc = -1;
        }
    free(copy);
    if (rc == 0 && words == 0) {
        snprintf(err, errlen, "--indexes: empty (say none for no indexes)");
        rc = -1;
    }
    if (rc == 0)
        *mask = (m & EVENT_INDEXES_ALL) ? m & EVENT_INDEXES_ALL : EVENT_INDEXES_NONE;
    return rc;
}

int event_indexes_apply(sqlite3 *db, unsigned mask, char *err, size_t errlen)
{
    /* A new database gets its indexes without a word; an existing one
     * changing its set is news to the operator. */
    bool empty = sqlutil_int(db, "SELECT NOT EXISTS(SELECT 1 FROM events)", 0) != 0;
    enum log_level level = empty ? LOG_DEBUG : LOG_INFO;
    if (mask == 0)
        mask = EVENT_INDEXES_DEFAULT;
    for (size_t i = 0; i < NKNOWN; i++) {
        const struct index_def *d = &known[i];
        bool want = (mask & d->bit) != 0;
        if (want == sqlutil_has(db, "index", d->name))
            continue;
        char sql[160];
        if (want) {
            log_msg(level, "sqlite: creating index %s (--indexes has %s); on a large database this takes a while",
                    d->name, d->word);
            snprintf(sql, sizeof(sql), "CREATE INDEX %s ON events(%s)", d->name, d->columns);
        } else {
            log_msg(level, "sqlite: dropping index %s: not in --indexes (add %s to keep it)", d->name, d->word);
            snprintf(sql, sizeof(sql), "DROP INDEX %s", d->name);
        }
        char why[200];
        if (sqlutil_exec(db, sql, why, sizeof(why)) != 0) {
            snprintf(err, errlen, "%s: %s", sql, why);
            return -1;
        }
    }
    return 0;
}

/* The ancestry `seccheckd alerts show` walks (query/show_store_sqlite.c):
 * each generation asks for its process's latest exec and for the clone
 * (or fork exit) that made it, before a given event, in one connection.
 * Through these each question is one index search, so a forged ancestry
 * of 64 generations costs what a real one does (issue 32 item 9: without
 * them every clone and exec row in between was read again per generation,
 * json_extract on each clone: 11-26 s over 400k events). Partial: only
 * exec, clone and fork-exit rows are in them (a few % of a trace), so
 * the writer pays an insert for those only. Made whatever --indexes says. */
static const struct {
    const char *name, *sql;
} ancestry_indexes[] = {
    {"events_execs", "CREATE INDEX events_execs ON events(conn_id, thread_group_id, id) WHERE msg_type = 3"},
    {"events_clones", "CREATE INDEX events_clones ON events(conn_id, json_extract(detail, '$.created_thread_group_id'), "
                      "id) WHERE msg_type = 2"},
    {"events_fork_exits", "CREATE INDEX events_fork_exits ON events(conn_id, result, id) WHERE msg_type IN (23, 29) "
                          "AND is_exit = 1"},
};

int event_indexes_ancestry(sqlite3 *db, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof(ancestry_indexes) / sizeof(ancestry_indexes[0]); i++) {
        if (sqlutil_has(db, "index", ancestry_indexes[i].name))
            continue;
        log_info("sqlite: creating index %s (alerts show's ancestry); on a large database this takes a while",
                 ancestry_indexes[i].name);
        char why[200];
        if (sqlutil_exec(db, ancestry_indexes[i].sql, why, sizeof(why)) != 0) {
            snprintf(err, errlen, "%s: %s", ancestry_indexes[i].sql, why);
            return -1;
        }
    }
    return 0;
}

void event_indexes_analyze(sqlite3 *db)
{
    char err[256];
    if (sqlutil_exec(db, "PRAGMA analysis_limit=1000; ANALYZE events", err, sizeof(err)) != 0)
        log_warn("sqlite: could not refresh query statistics (%s); queries still work, some more slowly", err);
}
