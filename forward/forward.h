/* forward.h - `seccheckd forward`: ships what the daemon committed to its
 * SQLite database to a central PostgreSQL, exactly once, batch by batch
 * (central.h), from a process of its own.
 *
 * The local database is the spool: when the central server is down the
 * forwarder retries with a bounded backoff (one log line per attempt) and
 * the daemon keeps storing. What retrying cannot heal ends it with the
 * reason logged and exit status 1 (a --db that does not exist or is not the
 * daemon's database, a password missing or refused, a role, database or
 * connect permission the server does not have): its service manager
 * decides about restarting. After each central commit the forwarder records
 * how far it got in the local forward_progress table, so the daemon's
 * retention keeps what is not shipped yet (retention.h); the central server
 * stays the source of truth when the forwarder starts.
 */
#ifndef SECCHECKD_FORWARD_H
#define SECCHECKD_FORWARD_H

/* argv[0] is "forward". Exit status: 0 stopped by SIGTERM/SIGINT (or
 * --init-schema done), 1 an error retrying cannot heal (or --init-schema
 * failed), 2 usage error. */
int forward_main(int argc, char **argv);

#endif
