/* daemon.h - run a seccheckd binary for a test: a private directory, its
 * socket and database there, stderr captured to a file. */
#ifndef SECCHECKD_TEST_DAEMON_H
#define SECCHECKD_TEST_DAEMON_H

#include <stdbool.h>
#include <sys/types.h>

struct daemon {
    pid_t pid;
    char dir[256];
    char socket[300];
    char db[300];
    char log[300];
    int exit_status;    /* after daemon_stop: exit code, or 128 + signal */
};

/* Makes a fresh temp directory with socket/db/log paths in it. */
void daemon_prepare(struct daemon *d);

/* Starts binary with extra args (NULL-terminated) after --socket/--db, and
 * waits until it logs that it listens. false if it exited or timed out. */
bool daemon_start(struct daemon *d, const char *binary, const char *const *extra_args);

/* Starts any program (argv[0] is its path) with stdout and stderr in the
 * log, and waits until the log contains ready. */
bool daemon_spawn(struct daemon *d, const char *const *argv, const char *ready);

/* SIGTERM and wait; returns the exit status. */
int daemon_stop(struct daemon *d);

/* Whole captured stderr, malloc'd. */
char *daemon_read_log(const struct daemon *d);

/* Times needle occurs in the daemon's log. */
int daemon_log_count(const struct daemon *d, const char *needle);

/* Waits (up to timeout_ms) until needle occurs n times in the log. */
bool daemon_wait_log(const struct daemon *d, const char *needle, int n, int timeout_ms);

/* Replays a whole trace file over one new connection (handshake with its
 * version), then closes it. 0, or -1 with the reason on stderr. */
int replay_file(const char *socket, const char *trace_path);

/* Removes the directory and what is in it. */
void daemon_cleanup(struct daemon *d);

/* Runs SQL returning one integer against path; -1 on error. */
long long db_query_int(const char *db, const char *sql);

#endif
