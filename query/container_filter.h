/* container_filter.h - --container, --pod and --namespace for the commands
 * that read a host's database (events, alerts, containers): a container is
 * named by its id or by its name, a pod by its name, a namespace by its
 * name, as runsc's state files gave them (the container_info table; an
 * older database without it matches names to nothing). */
#ifndef SECCHECKD_CONTAINER_FILTER_H
#define SECCHECKD_CONTAINER_FILTER_H

#include <sqlite3.h>
#include <stdbool.h>

#include "strbuf.h"

struct container_filter {
    const char *container;   /* id or container name */
    const char *pod;
    const char *ns;
};

static inline bool container_filter_any(const struct container_filter *f)
{
    return f->container || f->pod || f->ns;
}

/* Appends " AND ..." conditions on column (the id column of the query)
 * with parameters ?first, ?first+1, ?first+2. has_info: the database has
 * container_info (sqlutil_has). */
void container_filter_sql(struct strbuf *sql, const struct container_filter *f, const char *column, int first,
                          bool has_info);

/* SQL for a container's names as one text, "namespace/pod/name" with the
 * parts it has (NULL when it has none), from the three column expressions:
 * the label `seccheckd alerts` and `events` print beside the id. SQLite's
 * and PostgreSQL's alike. */
#define CONTAINER_NAMES_SQL(ns, pod, name)                                                                      \
    "nullif(rtrim(coalesce(" ns " || '/', '') || coalesce(" pod " || '/', '') || coalesce(" name ", ''), '/'), '')"

/* Binds what container_filter_sql asked for (the strings must outlive the statement). */
void container_filter_bind(sqlite3_stmt *st, const struct container_filter *f, int first);

#endif
