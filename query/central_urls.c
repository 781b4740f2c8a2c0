/* central_urls.c - several central databases read as one (central_urls.h). */
#include "central_urls.h"

#include <stdio.h>
#include <string.h>

#include "central.h"

int central_urls_add(struct central_urls *u, const char *url, const char *prog)
{
    char err[512];
    if (u->n == CENTRAL_URLS_MAX) {
        fprintf(stderr, "%s: --to: at most %d central databases\n", prog, CENTRAL_URLS_MAX);
        return 2;
    }
    if (central_check_url(url, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return 2;
    }
    u->url[u->n++] = url;
    return 0;
}

int central_urls_find_host(PGconn *const *pg, const struct central_urls *u, const char *host_id, char *err,
                           size_t errlen)
{
    if (u->n == 1)
        return 0;
    int found = -1, count = 0;
    char where[400] = "";
    for (int i = 0; i < u->n; i++) {
        const char *v[] = {host_id};
        PGresult *res = PQexecParams(pg[i], "SELECT EXISTS(SELECT 1 FROM hosts WHERE host_id = $1)", 1, NULL, v,
                                     NULL, NULL, 0);
        if (PQresultStatus(res) != PGRES_TUPLES_OK) {
            char line[300];
            central_message_line(PQresultErrorMessage(res), line, sizeof(line));
            snprintf(err, errlen, "the central database of --to number %d: %s", i + 1, line);
            PQclear(res);
            return -3;
        }
        if (strcmp(PQgetvalue(res, 0, 0), "t") == 0) {
            found = i;
            count++;
            size_t len = strlen(where);
            snprintf(where + len, sizeof(where) - len, "%s%d", count > 1 ? ", " : "", i + 1);
        }
        PQclear(res);
    }
    if (count > 1) {
        snprintf(err, errlen, "the host is in %d of the central databases (--to numbers %s; did the partitions "
                 "change?): give the one to read with a single --to", count, where);
        return -2;
    }
    if (found < 0)
        snprintf(err, errlen, "none of the %d central databases (--to) holds the host", u->n);
    return found;
}
