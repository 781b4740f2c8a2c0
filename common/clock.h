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
static inline int64_t monotonic_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

#endif
