/* forward.h - `seccheckd forward`: ships what the daemon committed to its
 * SQLite database to a central PostgreSQL, exactly once, batch by batch
 * (central.h), from a process of its own.
 *
 * The local database is the spool: when the central server is down the
 * forwarder retries with a bounded backoff (one log line per attempt) and
 * the daemon keeps storing. After each central commit the forwarder records
 * how far it got in the local forward_progress table, so the daemon's
 * retention keeps what is not shipped yet (retention.h); the central server
 * stays the source of truth when the forwarder starts.
 */
#ifndef SECCHECKD_FORWARD_H
#define SECCHECKD_FORWARD_H

/* argv[0] is "forward". Exit status: 0 stopped by SIGTERM/SIGINT (or
 * --init-schema done), 1 runtime error, 2 usage error. */
int forward_main(int argc, char **argv);

#endif
