/* daemon.h - run a seccheckd binary for a test: a private directory, its
 * socket and database there, stderr captured to a file. Also the helpers the
 * integration tests share: replaying traces, raw connections, /proc readings.
 * Helpers that return a status can run in any thread; those that "fail the
 * test" use cmocka and belong to the test's own thread. */
#ifndef SECCHECKD_TEST_DAEMON_H
#define SECCHECKD_TEST_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "reaper.h"

struct replay_trace;

struct daemon {
    pid_t pid;
    char dir[256];
    char socket[300];
    char db[300];
    char log[300];
    char runsc_root[300];   /* an empty runsc root of its own (see daemon_start) */
    int exit_status;    /* after daemon_stop: exit code, or 128 + signal */
};

/* Makes a fresh temp directory with socket/db/log paths in it, registered
 * with the reaper (removed even when the test fails). */
void daemon_prepare(struct daemon *d);

/* Starts binary with extra args (NULL-terminated) after --socket/--db, and
 * waits until it logs that it listens. false if it exited or timed out.
 * Unless the args (or a --config file) say otherwise, the daemon looks up
 * names in an empty runsc root of the test's own and never asks a Docker
 * socket: a test reads no machine-wide state (the machine's runsc roots,
 * /var/run/docker.sock) it did not make. */
bool daemon_start(struct daemon *d, const char *binary, const char *const *extra_args);

/* daemon_start under an open-file limit: RLIMIT_NOFILE soft and hard set
 * to nofile in the child before exec (the daemon cannot raise it). */
bool daemon_start_nofile(struct daemon *d, const char *binary, const char *const *extra_args, unsigned nofile);

/* Starts argv (argv[0] is its path) as a reaper_fork child, its standard
 * output to out and its standard error to err (each NULL: ours). */
pid_t spawn_program(const char *const *argv, const char *out, const char *err);

/* Starts any program (argv[0] is its path) with stdout and stderr in the
 * log, and waits until the log contains ready. The process is a
 * reaper_fork child: it never outlives the test. */
bool daemon_spawn(struct daemon *d, const char *const *argv, const char *ready);

/* SIGTERM and wait up to timeout_ms; returns the exit status, or 124 when
 * it had to be killed (SIGKILL) at the deadline. */
int daemon_stop_within(struct daemon *d, int timeout_ms);

/* daemon_stop_within with a 20 s deadline. */
int daemon_stop(struct daemon *d);

/* For a daemon the test already signalled: waits up to timeout_ms for it to
 * exit without signalling it again (a second SIGTERM during shutdown is not
 * the same test); as daemon_stop_within otherwise. */
int daemon_wait_exit(struct daemon *d, int timeout_ms);

/* Whole captured stderr, malloc'd. */
char *daemon_read_log(const struct daemon *d);

/* The log's last lines on stderr, for a failure's report. */
void daemon_print_log_tail(const struct daemon *d, int lines);

/* Times needle occurs in the daemon's log. */
int daemon_log_count(const struct daemon *d, const char *needle);

/* Waits (up to timeout_ms) until needle occurs n times in the log. */
bool daemon_wait_log(const struct daemon *d, const char *needle, int n, int timeout_ms);

/* Loads TRACES_DIR/<name>.trace into t. 0, or -1 with the reason on stderr. */
int trace_load_named(struct replay_trace *t, const char *name);

/* trace_load_named for names[0..n) into traces[0..n); on failure frees what
 * it loaded. 0, or -1 with the reason on stderr. */
int traces_load(struct replay_trace *traces, const char *const *names, int n);

/* Frees traces[0..n). */
void traces_free(struct replay_trace *traces, int n);

/* True when a and b hold the same packets in the same order. */
bool traces_equal(const struct replay_trace *a, const struct replay_trace *b);

/* A test group's recorded traces, loaded once: its cmocka state. */
struct trace_fixture {
    struct replay_trace *traces;   /* in the order of the names */
    int n;
    size_t packets;                /* in all traces */
};

/* cmocka group setup: *state = a trace_fixture of names[0..n) (see
 * trace_load_named). 0, or -1 with the reason on stderr. */
int trace_fixture_setup(void **state, const char *const *names, int n);

/* cmocka group teardown for trace_fixture_setup. */
int trace_fixture_teardown(void **state);

/* Connects to the collector at socket and handshakes with version: the
 * fd, or -1 with the reason on stderr. */
int replay_open(const char *socket, uint32_t version);

/* Sends every packet of t on fd. 0, or -1 with the reason on stderr. */
int replay_packets(int fd, const struct replay_trace *t);

/* Sends all of t over one new connection (handshake with version), then
 * closes it. 0, or -1 with the reason on stderr. */
int replay_connection(const char *socket, const struct replay_trace *t, uint32_t version);

/* replay_connection for traces[0..n), each on its own thread, all at once;
 * versions NULL: each trace's own. 0 when every trace went out whole. */
int replay_concurrently(const char *socket, const struct replay_trace *const *traces, const uint32_t *versions,
                        int n);

/* Replays a whole trace file over one new connection (handshake with its
 * version), then closes it. 0, or -1 with the reason on stderr. */
int replay_file(const char *socket, const char *trace_path);

/* Sends buf as one packet; fails the test unless all len bytes went. */
void send_bytes(int fd, const void *buf, size_t len);

/* Connects without handshaking and sends len raw bytes (none when len 0 and
 * bytes NULL; a zero-length packet when len 0 and bytes not NULL); fails the
 * test if it cannot connect. */
int connect_raw(const char *socket, const void *bytes, size_t len);

/* True when the peer closed fd (EOF) within timeout_ms without sending
 * anything (a handshake answer would make this false). */
bool closed_by_peer(int fd, int timeout_ms);

/* Removes the directory and what is in it. */
void daemon_cleanup(struct daemon *d);

/* A cmocka per-test fixture: a prepared struct daemon in *state. The
 * teardown stops it, removes its directory and reaps whatever else the test
 * started (reaper_clear), on every path, a failed assertion included. */
int daemon_setup(void **state);
int daemon_teardown(void **state);

/* `binary verify --db db` passes (its output printed). */
bool verify_ok(const char *binary, const char *db);

/* Runs SQL returning one integer against path; -1 on error. */
long long db_query_int(const char *db, const char *sql);

/* db_query_int on d's database, the SQL made by printf. */
__attribute__((format(printf, 2, 3))) long long dbq(const struct daemon *d, const char *fmt, ...);

/* The first column of SQL's first row on an open database; fails the test
 * without one. */
struct sqlite3;
long long sqlq(struct sqlite3 *db, const char *sql);

/* The number after "key": in a JSON file (seccheck-loadgen --json); fails
 * the test without one. */
long long json_file_number(const char *path, const char *key);

/* The value of one series ("name" or "name{label=\"v\"}") in a Prometheus
 * scrape; -1 if absent. */
double metric(const char *text, const char *series);

/* One series of a scrape of the metrics endpoint on the Unix socket path
 * (--metrics-listen unix:PATH), read with curl; -1 if absent. Fails the
 * test if curl cannot run. */
double metric_scrape(const char *path, const char *series);

/* Runs argv (argv[0] a path) to its end, within 60 s: its standard output
 * and error in out and err (each cut to its size, NUL-terminated; err may be
 * NULL to drop it). Its exit code (as reaper_wait_within: 124 when it had
 * to be killed). */
int run_command(const char *const *argv, char *out, size_t outlen, char *err, size_t errlen);

/* run_command with argv's standard output and error on a pseudo-terminal
 * (what a person at a terminal sees, for --color auto), NO_COLOR set to
 * no_color unless it is NULL; what it wrote in out. */
int run_on_terminal(const char *const *argv, const char *no_color, char *out, size_t outlen);

/* Replaces path's contents with text; fails the test if it cannot. */
void write_file(const char *path, const char *text);

/* Connects a stream client to the Unix socket path; -1 if nobody listens. */
int connect_unix(const char *path);

/* Writes request on fd, reads to EOF (at most timeout_ms in all) and closes
 * fd; the whole answer, malloc'd, or NULL if fd < 0, the connection failed
 * or it timed out. */
char *http_exchange(int fd, const char *request, size_t request_len, int timeout_ms);

/* GET /metrics from a daemon's --metrics-listen unix:path: the whole HTTP
 * answer (malloc'd; read series with metric()), or NULL. */
char *scrape_metrics_unix(const char *path);

/* Sleeps ms milliseconds, resuming after signals. */
void sleep_ms(int ms);

/* The number after key on the log's summary line that holds anchor (a
 * failed assertion if either is missing). */
long long summary_number(const char *log, const char *anchor, const char *key);

/* Resident set of pid in KiB, from /proc; fails the test if unreadable. */
long rss_kib(pid_t pid);

/* Open file descriptors of pid, from /proc; fails the test if unreadable. */
int open_fd_count(pid_t pid);

/* Waits up to timeout_ms until pid has path open (a reader that started:
 * path absolute, as /proc names it); false if it never did. */
bool wait_file_open(pid_t pid, const char *path, int timeout_ms);

/* CPU time (user + system) of pid, or of its thread tid when tid > 0, in
 * ms, from /proc; fails the test if unreadable. */
long cpu_time_ms(pid_t pid, pid_t tid);

#endif
