/* thread.h - threads that never take the daemon's signals.
 *
 * The daemon's signals (SIGTERM, SIGINT, SIGHUP, SIGUSR2) belong to the
 * loop thread (libuv's handlers), and across a restart (server/handoff.c)
 * the ones that arrive while the image is being replaced must stay pending
 * for the next image. The kernel gives a process-directed signal to any
 * thread that does not block it: a helper thread that had them unblocked
 * took a SIGUSR2 meant for the next image, and the old image's handler
 * swallowed it. Every helper thread is started here, with every signal
 * blocked (it inherits the mask it is created with). */
#ifndef SECCHECKD_THREAD_H
#define SECCHECKD_THREAD_H

#include <pthread.h>

/* pthread_create with every signal blocked in the new thread; the caller's
 * mask is unchanged. 0 or pthread_create's error number. */
int thread_start_blocking_signals(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

#endif
