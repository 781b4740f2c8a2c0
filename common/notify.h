/* notify.h - systemd integration without libsystemd: the sd_notify datagram
 * protocol (READY, WATCHDOG, STOPPING, RELOADING, STATUS) and socket
 * activation's LISTEN_FDS. Both are documented stable interfaces; outside
 * systemd every call is a no-op. */
#ifndef SECCHECKD_NOTIFY_H
#define SECCHECKD_NOTIFY_H

#include <stdint.h>

/* Sends state (e.g. "READY=1") to $NOTIFY_SOCKET. 0 sent, 1 not under
 * systemd, -1 error. */
int notify_send(const char *state);

/* The watchdog interval systemd expects pings within, in microseconds;
 * 0 when no watchdog is configured for this process. */
uint64_t notify_watchdog_usec(void);

/* The first socket systemd passed (LISTEN_FDS, for this PID), or -1; clears
 * the variables so children do not inherit them. */
int notify_listen_fd(void);

#endif
