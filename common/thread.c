/* thread.c - threads that never take the daemon's signals (thread.h). */
#include "thread.h"

#include <signal.h>

int thread_start_blocking_signals(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(thread, attr, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}
