/* histogram.h - a fixed-bucket latency histogram, Prometheus-shaped.
 *
 * Observed on the loop thread only (pipeline collect), rendered at scrape
 * time: no locks, no allocation. Buckets and sum are kept in nanoseconds so
 * counts stay exact; the renderer turns them into seconds.
 */
#ifndef SECCHECKD_HISTOGRAM_H
#define SECCHECKD_HISTOGRAM_H

#include <stdint.h>

#define HISTOGRAM_BUCKETS 13

/* Upper bounds (inclusive, "le") of the finite buckets, ascending:
 * 0.5 ms .. 5 s, the span of one SQLite transaction on a healthy to a
 * struggling disk. */
extern const int64_t histogram_bounds_ns[HISTOGRAM_BUCKETS];

struct histogram {
    uint64_t buckets[HISTOGRAM_BUCKETS + 1];   /* per bucket, not cumulative; last: above every bound */
    uint64_t count;
    uint64_t sum_ns;
};

void histogram_observe(struct histogram *h, int64_t ns);

/* Observations <= histogram_bounds_ns[i] (i == HISTOGRAM_BUCKETS: all). */
uint64_t histogram_cumulative(const struct histogram *h, int i);

#endif
