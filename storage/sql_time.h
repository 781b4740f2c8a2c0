/* sql_time.h - a time in nanoseconds as the text the views show, in SQL.
 *
 * The one format of every seccheckd command: UTC, ISO 8601 with
 * milliseconds and Z, "2026-12-01T15:13:10.123Z", made as strbuf_put_utc
 * makes it (the second floored, the milliseconds cut, not rounded). Plain
 * SQL, so the views work in the sqlite3 CLI. ns is an SQL expression (a
 * string literal here), evaluated four times. */
#ifndef SECCHECKD_SQL_TIME_H
#define SECCHECKD_SQL_TIME_H

#define UTC_MS(ns)                                                                                                   \
    "strftime('%Y-%m-%dT%H:%M:%S', (" ns " - ((" ns " % 1000000000) + 1000000000) % 1000000000) / 1000000000, "     \
    "'unixepoch') || printf('.%03dZ', ((" ns " % 1000000000) + 1000000000) % 1000000000 / 1000000)"

#endif
