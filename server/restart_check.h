/* restart_check.h - a restart never runs a build that cannot start.
 *
 * Before a restart hands its connections over (server.c), the binary that
 * is to run checks this image's settings: `BINARY check ARGS...` with the
 * daemon's own arguments re-reads the config file and the command line and
 * opens every sink as a start would (main.c), while this image reads on.
 * A binary that cannot run, exits non-zero, dies of a signal or takes over
 * 30 s fails the check: the restart is refused and nothing is lost. When
 * the installed binary cannot be executed at all (removed, not
 * executable), the running image is checked instead, and is the one that
 * runs again.
 *
 * The check also says what the build can take over: run by a restart, it
 * writes "relay-log N" (the relay log version it reads, relay_log.h) to
 * the descriptor RESTART_CHECK_REPORT_ENV names. A build that says nothing
 * (one from before the relay) is handed the connections without a relay.
 */
#ifndef SECCHECKD_RESTART_CHECK_H
#define SECCHECKD_RESTART_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <uv.h>

#define RESTART_CHECK_TIMEOUT_MS 30000
#define RESTART_CHECK_REPORT_ENV "SECCHECKD_CHECK_REPORT_FD"

struct restart_check;

struct restart_check_result {
    const char *failure;        /* NULL: passed; else why it failed */
    bool runs_current_image;    /* the running image was checked, not the installed binary */
    struct stat checked;        /* the installed binary as it was checked */
    bool reads_relay_log;       /* it reads this build's relay log (relay_log.h) */
};

typedef void (*restart_check_done)(const struct restart_check_result *r, void *data);

/* Runs the check of binary with argv's arguments (argv[0] aside); done is
 * called once, from the loop, unless the check is cancelled first. The
 * check frees itself after done. NULL (with err) if it could not start. */
struct restart_check *restart_check_start(uv_loop_t *loop, const char *binary, char *const *argv,
                                          restart_check_done done, void *data, char *err, size_t errlen);

/* Kills the check (stopping): done is not called; it frees itself. */
void restart_check_cancel(struct restart_check *c);

/* In `seccheckd check`, once the settings passed: tells the restart that
 * runs it (RESTART_CHECK_REPORT_ENV) what this build can take over. */
void restart_check_report(void);

/* True while the installed binary is the file that was checked (no new
 * install since). */
bool restart_check_same_binary(const char *binary, const struct stat *checked);

#endif
