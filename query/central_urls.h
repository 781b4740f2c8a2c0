/* central_urls.h - several central databases read as one: the readers'
 * --to, given once per database (one per partition: seccheckd central
 * --partition I --to URL). Every host lives in one of them, so a reader of
 * one host reads it where it is, and a reader of every host merges their
 * rows in the order one database would give. */
#ifndef SECCHECKD_CENTRAL_URLS_H
#define SECCHECKD_CENTRAL_URLS_H

#include <stdbool.h>
#include <stddef.h>
#include <libpq-fe.h>

#define CENTRAL_URLS_MAX 16

struct central_urls {
    const char *url[CENTRAL_URLS_MAX];
    int n;
};

/* Adds one --to. 0, or (too many, or a URL central_check_url refuses) 2,
 * a usage error, said on stderr under prog's name. */
int central_urls_add(struct central_urls *u, const char *url, const char *prog);

/* Which database holds host_id (its hosts row), of the open connections
 * pg[0..n): its index; -1 none holds it, -2 more than one does (err names
 * which: give one --to); -3 a query failed (err). With one database, 0
 * whatever it holds (the reader says what is missing). */
int central_urls_find_host(PGconn *const *pg, const struct central_urls *u, const char *host_id, char *err,
                           size_t errlen);

#endif
