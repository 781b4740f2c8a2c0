/* handoff.h - restart without losing sandboxes.
 *
 * The gVisor client never reconnects, so a collector restart must keep every
 * connection. On SIGUSR2 seccheckd commits what it holds, writes its state
 * (listening socket, and per connection: fd, state, record) to a memfd,
 * and executes the binary it was started from again (same PID, same
 * arguments: a newly installed build, if any) with the descriptors
 * inherited; the new image adopts them and carries on. Packets sent in
 * between wait in the sockets' kernel buffers.
 *
 * The state also carries what spans images: the next connection id, the
 * restart counts, when the previous image stopped reading (CLOCK_MONOTONIC
 * runs on across exec: the new image logs the pause), and the build that
 * handed over with its arguments, which a new image that cannot start
 * executes again with the same state (handoff_come_back), so the
 * connections come back to a build that ran.
 *
 * A restart with a relay (relay.h) carries it too: its pid and
 * descriptors; the connections it reads are the streaming ones.
 */
#ifndef SECCHECKD_HANDOFF_H
#define SECCHECKD_HANDOFF_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "conn.h"
#include "listener.h"
#include "relay.h"

#define HANDOFF_ENV "SECCHECKD_HANDOFF_FD"

struct handoff_conn {
    int fd;
    enum conn_state state;
    struct conn_record rec;
};

/* Restarts so far, over every image of this process. */
struct handoff_restarts {
    uint64_t ok;        /* a new image took over */
    uint64_t refused;   /* its check failed: the running image carried on */
    uint64_t failed;    /* it could not start: the build before came back */
};

struct handoff {
    struct listener listener;      /* fd -1: no state (a fresh start) */
    struct handoff_conn *conns;
    size_t nconns;
    uint64_t next_conn_id;         /* ids below it were given; 0: not said (a version 1 state) */
    int64_t stopped_reading_ns;    /* the previous image's last read (CLOCK_MONOTONIC); 0: not said */
    int64_t exec_ns;               /* when it executed this image; 0: not said */
    struct handoff_restarts restarts;
    int fallback_fd;               /* the build that handed over (O_PATH); -1: none */
    char **fallback_argv;          /* its arguments, NULL-terminated; NULL with no fallback */
    char failure[256];             /* why the image it was handed to could not start; "": none */
    struct relay_fds relay;        /* pid 0: none (the streaming connections wait unread) */
    bool restart_again;            /* a SIGUSR2 came during the restart: the new image restarts once more */
};

/* An empty state: no listener, no fallback. */
void handoff_init(struct handoff *h);

/* Writes h to a new memfd left open across exec (as are the descriptors it
 * names); its fd, or -1. */
int handoff_save(const struct handoff *h, char *err, size_t errlen);

/* Loads the state named by HANDOFF_ENV, if any (and unsets it). Returns 0
 * when there is none, 1 when h was filled, -1 with err on a bad state.
 * Version 1 states (written by builds before the restart counts) load too. */
int handoff_load_from_env(struct handoff *h, char *err, size_t errlen);

/* The signals a restart holds for the new image: SIGTERM, SIGINT, SIGUSR2,
 * SIGHUP. Blocked (pending ones wait) from the moment the running image
 * stops reading until the new one handles them (server.c); the mask and
 * the pending signals survive exec. */
void handoff_held_signals(sigset_t *set);

/* Executes path (the binary installed now, see self_binary.h; NULL: the
 * running image, fallback_fd) with argv and the state fd, the held signals
 * blocked. If path cannot be executed, it logs why and executes
 * fallback_fd instead. Returns only if neither runs (with errno). */
int handoff_exec(const char *path, char *const *argv, int state_fd, int fallback_fd);

/* This image was handed h but cannot start: counts the restart as failed,
 * records why, and executes h's fallback build with h (its connections
 * and listener), which starts without a fallback of its own. Returns -1
 * (with errno) only if there is no fallback or it cannot run. */
int handoff_come_back(struct handoff *h, const char *why);

/* Frees h and closes its fallback descriptor (not the connections). */
void handoff_free(struct handoff *h);

#endif
