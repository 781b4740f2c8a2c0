#include "histogram.h"

const int64_t histogram_bounds_ns[HISTOGRAM_BUCKETS] = {
    500000, 1000000, 2500000, 5000000, 10000000, 25000000, 50000000,
    100000000, 250000000, 500000000, 1000000000, 2500000000, 5000000000,
};

void histogram_observe(struct histogram *h, int64_t ns)
{
    if (ns < 0)
        ns = 0;
    int i = 0;
    while (i < HISTOGRAM_BUCKETS && ns > histogram_bounds_ns[i])
        i++;
    h->buckets[i]++;
    h->count++;
    h->sum_ns += (uint64_t)ns;
}

uint64_t histogram_cumulative(const struct histogram *h, int i)
{
    uint64_t n = 0;
    for (int b = 0; b <= i && b <= HISTOGRAM_BUCKETS; b++)
        n += h->buckets[b];
    return n;
}
