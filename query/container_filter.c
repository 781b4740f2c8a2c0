/* container_filter.c - a container's names, by its id and its event's
 * connection's sandbox, as SQL (container_filter.h). */
#include "container_filter.h"

#include "sqlutil.h"

void container_names_probe(sqlite3 *db, struct container_names *n)
{
    n->has_info = sqlutil_has(db, "table", "container_info");
    n->by_sandbox =
        n->has_info &&
        sqlutil_int(db, "SELECT count(*) FROM pragma_table_info('container_info') WHERE name = 'sandbox'", 0) > 0 &&
        sqlutil_int(db, "SELECT count(*) FROM pragma_table_info('connections') WHERE name = 'sandbox'", 0) > 0;
}

void container_names_join(struct strbuf *sql, const struct container_names *n, const char *id_col,
                          const char *conn_col)
{
    if (n->by_sandbox)
        strbuf_printf(sql, " LEFT JOIN connections ic ON ic.id = %s"
                           " LEFT JOIN container_info i ON i.container_id = %s AND i.sandbox IS ic.sandbox",
                      conn_col, id_col);
    else if (n->has_info)
        strbuf_printf(sql, " LEFT JOIN container_info i ON i.container_id = %s", id_col);
}

void container_names_label(struct strbuf *sql, const struct container_names *n, const char *id_col)
{
    if (!n->has_info) {
        strbuf_puts(sql, "NULL");
        return;
    }
    if (n->by_sandbox)
        strbuf_printf(sql, "CASE WHEN i.state = 'foreign' OR (i.container_id IS NULL AND EXISTS(SELECT 1 FROM"
                           " container_info f WHERE f.container_id = %s AND f.state = 'found')) THEN '"
                           CONTAINER_FOREIGN_LABEL "' ELSE ", id_col);
    strbuf_puts(sql, CONTAINER_NAMES_SQL("i.pod_namespace", "i.pod_name", "i.name"));
    if (n->by_sandbox)
        strbuf_puts(sql, " END");
}

/* " id_col IN (names of this info column = ?param, of the event's own sandbox)" */
static void by_info(struct strbuf *sql, const struct container_names *n, const char *id_col, const char *conn_col,
                    const char *info_column, int param)
{
    if (n->by_sandbox)
        strbuf_printf(sql, " EXISTS(SELECT 1 FROM container_info fi, connections fc WHERE fc.id = %s"
                           " AND fi.container_id = %s AND fi.sandbox IS fc.sandbox AND fi.%s = ?%d)",
                      conn_col, id_col, info_column, param);
    else if (n->has_info)
        strbuf_printf(sql, " %s IN (SELECT container_id FROM container_info WHERE %s = ?%d)", id_col, info_column,
                      param);
    else
        strbuf_printf(sql, " ?%d IS NULL", param);   /* no names known: nothing matches */
}

void container_filter_sql(struct strbuf *sql, const struct container_filter *f, const struct container_names *n,
                          const char *id_col, const char *conn_col, int first)
{
    if (f->container) {
        strbuf_printf(sql, " AND (%s = ?%d OR", id_col, first);
        by_info(sql, n, id_col, conn_col, "name", first);
        strbuf_puts(sql, ")");
    }
    if (f->pod) {
        strbuf_puts(sql, " AND");
        by_info(sql, n, id_col, conn_col, "pod_name", first + 1);
    }
    if (f->ns) {
        strbuf_puts(sql, " AND");
        by_info(sql, n, id_col, conn_col, "pod_namespace", first + 2);
    }
}

void container_filter_bind(sqlite3_stmt *st, const struct container_filter *f, int first)
{
    const char *v[] = {f->container, f->pod, f->ns};
    for (int i = 0; i < 3; i++)
        if (v[i])
            sqlite3_bind_text(st, first + i, v[i], -1, SQLITE_STATIC);
}

void central_names_join(struct strbuf *sql, const char *host_col, const char *id_col, const char *conn_col)
{
    strbuf_printf(sql, " LEFT JOIN connections nc ON nc.host_id = %s AND nc.id = %s"
                       " LEFT JOIN container_names n ON n.host_id = %s AND n.container_id = %s"
                       " AND n.sandbox IS NOT DISTINCT FROM nc.sandbox",
                  host_col, conn_col, host_col, id_col);
}
