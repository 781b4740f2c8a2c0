/* container_filter.c - --container, --pod, --namespace as SQL. */
#include "container_filter.h"

static void by_info(struct strbuf *sql, const char *column, const char *info_column, int param, bool has_info)
{
    if (has_info)
        strbuf_printf(sql, " %s IN (SELECT container_id FROM container_info WHERE %s = ?%d)", column, info_column,
                      param);
    else
        strbuf_printf(sql, " ?%d IS NULL", param);   /* no names known: nothing matches */
}

void container_filter_sql(struct strbuf *sql, const struct container_filter *f, const char *column, int first,
                          bool has_info)
{
    if (f->container) {
        strbuf_printf(sql, " AND (%s = ?%d OR", column, first);
        by_info(sql, column, "name", first, has_info);
        strbuf_puts(sql, ")");
    }
    if (f->pod) {
        strbuf_puts(sql, " AND");
        by_info(sql, column, "pod_name", first + 1, has_info);
    }
    if (f->ns) {
        strbuf_puts(sql, " AND");
        by_info(sql, column, "pod_namespace", first + 2, has_info);
    }
}

void container_filter_bind(sqlite3_stmt *st, const struct container_filter *f, int first)
{
    const char *v[] = {f->container, f->pod, f->ns};
    for (int i = 0; i < 3; i++)
        if (v[i])
            sqlite3_bind_text(st, first + i, v[i], -1, SQLITE_STATIC);
}
