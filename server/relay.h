/* relay.h - a restart during which the sockets are never left unread.
 *
 * A SIGUSR2 restart (server.c) overlaps the two images as nginx's binary
 * upgrade does. While the running image still reads, it launches a relay:
 * a small process of its own build (`seccheckd restart-relay`), which says
 * when it is ready. Then the running image stops reading and passes every
 * streaming connection to the relay, which reads them from that instant
 * into a shared log (relay_log.h). Meanwhile the running image commits what
 * it holds and executes the new one, which opens its sink and loads its
 * rules: the slow part of a start, with the relay reading on. Ready, the
 * new image ingests the log as it grows, as if it had read the packets
 * itself (their receive times, drops and closes included); caught up, it
 * tells the relay to stop, ingests the last records and reads the sockets
 * itself. What the sandboxes see is two hand-overs, each one message
 * between two processes, not the start.
 *
 * The log is bounded (struct relay_limits): a relay whose log is full
 * stops reading, and the sandboxes drop what they cannot buffer, counted
 * by them as always; past half full, a connection holding more than its
 * share of it is not read further, so one sandbox cannot fill it for the
 * others. A relay that dies leaves what it published; the new
 * image reads the sockets from there. The relay dies with the daemon's
 * process (PR_SET_PDEATHSIG) and takes no signal but SIGKILL.
 *
 * The three descriptors (control socket, log, wake-up eventfd) and the
 * relay's pid travel in the handoff state (handoff.h); a build that cannot
 * read this log version is never handed a relay (restart_check.h asks).
 */
#ifndef SECCHECKD_RELAY_H
#define SECCHECKD_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "relay_log.h"

#define RELAY_SUBCOMMAND "restart-relay"

/* What a relay is, across the exec: handoff.h saves and loads it. */
struct relay_fds {
    pid_t pid;          /* 0: no relay */
    int ctl_fd;         /* SOCK_SEQPACKET to the relay */
    int log_fd;         /* the memfd of its log */
    int event_fd;       /* written by the relay when it published more */
};

/* ---- the running image: launch, then hand over ---- */

struct relay_launch;

/* failure NULL: the relay is ready to take the connections; else why not
 * (it could not start, or exited). Called once, from the loop, unless the
 * launch was cancelled first. */
typedef void (*relay_ready_cb)(const char *failure, void *data);

/* How far a relay reads ahead of the new image: it stops reading once its
 * log has max_packets packets, or cannot take another of max_message
 * bytes (the new image takes the sockets back sooner, not later). */
struct relay_limits {
    uint64_t log_bytes;
    uint64_t max_packets;
    size_t max_message;
};

/* Starts a relay of the running build. NULL (with err) if it could not be
 * started. */
struct relay_launch *relay_launch(uv_loop_t *loop, const struct relay_limits *limits, relay_ready_cb ready,
                                  void *data, char *err, size_t errlen);

/* A connection the relay is to read: its socket and its index in the
 * handoff state (what its records name). */
struct relay_conn {
    int fd;
    uint32_t index;
};

/* The relay is ready: this image has stopped reading (at stopped_ns,
 * CLOCK_MONOTONIC); the relay reads conns[0..n) from now on. 0, or -1 with
 * err (the relay is gone: nothing was handed over). */
int relay_hand_over(struct relay_launch *r, const struct relay_conn *conns, size_t n, int64_t stopped_ns,
                    char *err, size_t errlen);

/* The descriptors for the handoff state (valid until relay_launch_free). */
struct relay_fds relay_launch_fds(const struct relay_launch *r);

/* Frees the launch; kill: the relay too (a restart refused or abandoned),
 * else it lives on for the next image (after relay_hand_over). */
void relay_launch_free(struct relay_launch *r, bool kill_relay);

/* ---- the relay itself ---- */

/* `seccheckd restart-relay MAX_PACKETS MAX_MESSAGE PARENT_PID`, descriptors
 * 3-5 as struct relay_fds says: the process relay_launch starts. Its exit
 * code; it refuses to run by hand. */
int relay_main(int argc, char **argv);

/* ---- the new image: take the log, then the sockets ---- */

struct relay_feed;

/* What the relay did, once it has stopped. */
struct relay_summary {
    int64_t handed_ns;      /* when the previous image stopped reading (CLOCK_MONOTONIC) */
    int64_t started_ns;     /* the relay's first read */
    int64_t stopped_ns;     /* its last */
    uint64_t packets, bytes;
    bool full;              /* its log filled: it stopped reading before it was told */
    bool died;              /* it did not answer: what it published is all there is */
};

/* wake: new records may be waiting, or the relay stopped. */
typedef void (*relay_wake_cb)(void *data);

/* Takes over the relay fds describes (the descriptors are the feed's now).
 * NULL with err when the log cannot be read: the relay is killed and the
 * connections are read directly. */
struct relay_feed *relay_feed_open(uv_loop_t *loop, const struct relay_fds *fds, uint32_t nconns, relay_wake_cb wake,
                                   void *data, char *err, size_t errlen);

/* The next record, not taken yet (see relay_log_peek); -1 ends the log. */
int relay_feed_peek(struct relay_feed *f, struct relay_record *r, const uint8_t **payload);

/* Takes r, the record relay_feed_peek just gave. */
void relay_feed_take(struct relay_feed *f, const struct relay_record *r);

/* Asks the relay to stop reading (once; later calls do nothing); wake is
 * called when it has. */
void relay_feed_stop(struct relay_feed *f);

/* True once the relay stopped (or died) and every record it published was
 * taken; *s then says what it did. */
bool relay_feed_done(struct relay_feed *f, struct relay_summary *s);

/* Frees the feed, and reaps the relay (SIGKILL if it lingers). */
void relay_feed_close(struct relay_feed *f);

#endif
