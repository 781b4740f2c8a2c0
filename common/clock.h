/* clock.h - wall-clock and monotonic nanoseconds. */
#ifndef SECCHECKD_CLOCK_H
#define SECCHECKD_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static inline int64_t realtime_ns(void) { return clock_ns(CLOCK_REALTIME); }

/* The CLOCK_REALTIME time ms from now: a deadline for pthread_timedjoin_np. */
static inline struct timespec realtime_in_ms(int ms)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (long)(ms % 1000) * 1000000;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}
static inline int64_t monotonic_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

#endif
