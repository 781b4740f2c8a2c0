/* container_filter.h - a container's names for the commands that read a
 * host's database (events, alerts): --container, --pod and --namespace,
 * and the names printed beside a container's id.
 *
 * Names follow the sandbox (container/container.h): a container_info row
 * names the events of its own sandbox's connections only (connections.sandbox
 * = container_info.sandbox), never those of a sandbox that merely names the
 * id; such an event is labelled CONTAINER_FOREIGN_LABEL where the names
 * would be. A database written before rows had their sandbox joins by the
 * id alone, as it did; one without container_info has no names (a name
 * matches nothing). */
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

/* What the database can join. */
struct container_names {
    bool has_info;           /* container_info exists */
    bool by_sandbox;         /* its rows and the connections have their sandbox */
};

void container_names_probe(sqlite3 *db, struct container_names *n);

/* The label of an event that names a container its own sandbox does not
 * run (a compromised sandbox naming another pod's container id): not a
 * name a state file can give, since '!' is in no runsc id nor Kubernetes name. */
#define CONTAINER_FOREIGN_LABEL "!foreign"

/* Appends " LEFT JOIN ... i": container_info as i for the event whose
 * container id and connection id are the columns id_col and conn_col
 * (nothing without container_info). */
void container_names_join(struct strbuf *sql, const struct container_names *n, const char *id_col,
                          const char *conn_col);

/* Appends the label over that join: "namespace/pod/name" (the parts there
 * are), CONTAINER_FOREIGN_LABEL, or NULL. */
void container_names_label(struct strbuf *sql, const struct container_names *n, const char *id_col);

/* Appends " AND ..." conditions for the filter on the event of id_col and
 * conn_col, with parameters ?first, ?first+1, ?first+2. */
void container_filter_sql(struct strbuf *sql, const struct container_filter *f, const struct container_names *n,
                          const char *id_col, const char *conn_col, int first);

/* SQL for a container's names as one text, "namespace/pod/name" with the
 * parts it has (NULL when it has none), from the three column expressions:
 * the label `seccheckd alerts` and `events` print beside the id. SQLite's
 * and PostgreSQL's alike. */
#define CONTAINER_NAMES_SQL(ns, pod, name)                                                                      \
    "nullif(rtrim(coalesce(" ns " || '/', '') || coalesce(" pod " || '/', '') || coalesce(" name ", ''), '/'), '')"

/* The central copy (PostgreSQL): true when its container_names view has
 * each row's sandbox (a forwarder of this build made its schema); before,
 * readers show no names rather than another sandbox's. */
#define CENTRAL_NAMES_READY_SQL                                                                                 \
    "(to_regclass('container_names') IS NOT NULL AND EXISTS(SELECT 1 FROM information_schema.columns"          \
    " WHERE table_schema = current_schema() AND table_name = 'container_names' AND column_name = 'sandbox'))"

/* The same join and label centrally: container_names as n (and
 * connections as nc) for the event of host_col, id_col and conn_col. */
void central_names_join(struct strbuf *sql, const char *host_col, const char *id_col, const char *conn_col);
#define CENTRAL_NAMES_LABEL_SQL(host, id)                                                                        \
    "CASE WHEN n.lookup = 'foreign' OR (n.host_id IS NULL AND EXISTS(SELECT 1 FROM container_names f"            \
    " WHERE f.host_id = " host " AND f.container_id = " id " AND f.lookup = 'found')) THEN '"                   \
    CONTAINER_FOREIGN_LABEL "' ELSE " CONTAINER_NAMES_SQL("n.pod_namespace", "n.pod_name", "n.container_name") " END"

/* Binds what container_filter_sql asked for (the strings must outlive the statement). */
void container_filter_bind(sqlite3_stmt *st, const struct container_filter *f, int first);

#endif
