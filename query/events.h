/* events.h - `seccheckd events`: a database's events for people, one line
 * each (event_line.h) or as JSON, filtered, and with --follow as they
 * commit: the live view `tetra getevents -o compact` gives Tetragon's
 * users.
 *
 * It only reads: the daemon's writer is never blocked (WAL readers do not
 * block it, and no read transaction is held between polls, so checkpoints
 * are not held up either), and a database that had no -wal and -shm
 * files has none after it.
 */
#ifndef SECCHECKD_EVENTS_H
#define SECCHECKD_EVENTS_H

/* argv[0] is the subcommand name ("events"); the options follow:
 *   --db PATH [--follow] [--container ID] [--type NAME[,NAME...]]
 *   [--process NAME] [--since DURATION] [-o compact|json] [--help]
 * Returns 0 (also when --follow is stopped by SIGINT or SIGTERM, or the
 * reader of the output goes away), 1 on a runtime error (printed), 2 on a
 * usage error. */
int events_main(int argc, char **argv);

#endif
