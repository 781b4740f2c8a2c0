/* handoff.h - restart without losing sandboxes.
 *
 * The gVisor client never reconnects, so a collector restart must keep every
 * connection. On SIGUSR2 seccheckd commits what it holds, writes its state
 * (listening socket, and per connection: fd, state, record) to a memfd,
 * and executes the binary it was started from again (same PID, same
 * arguments: a newly installed build, if any) with the descriptors
 * inherited; the new image adopts them and carries on. Packets sent in
 * between wait in the sockets' kernel buffers.
 */
#ifndef SECCHECKD_HANDOFF_H
#define SECCHECKD_HANDOFF_H

#include <stddef.h>

#include "batch.h"
#include "conn.h"
#include "listener.h"

#define HANDOFF_ENV "SECCHECKD_HANDOFF_FD"

struct handoff_conn {
    int fd;
    enum conn_state state;
    struct conn_record rec;
};

struct handoff {
    struct listener listener;
    struct handoff_conn *conns;
    size_t nconns;
};

/* Writes h to a new memfd left open across exec; its fd, or -1. */
int handoff_save(const struct handoff *h, char *err, size_t errlen);

/* Loads the state named by HANDOFF_ENV, if any (and unsets it). Returns 0
 * when there is none, 1 when h was filled, -1 with err on a bad state. */
int handoff_load_from_env(struct handoff *h, char *err, size_t errlen);

/* Executes path (the binary installed now, see self_binary.h) with argv
 * and the state fd. If that fails (the file is gone or not executable), it
 * logs why and executes the running image again, so the connections
 * survive on the old build. Returns only if both fail (with errno). */
int handoff_exec(const char *path, char *const *argv, int state_fd);

void handoff_free(struct handoff *h);

#endif
