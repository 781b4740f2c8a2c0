/* throttle.h - at most `rate` alerts per second (burst `burst`) for one
 * rule in one container, in event time, with bounded state.
 *
 * A token bucket per (rule name, container id), both hashed to 64 bits.
 * The table has a fixed number of entries: a new key takes a free one, else
 * a full bucket (one that would allow a whole burst: forgetting it loses
 * nothing), else the least recently used in its probe window. Throttled
 * alerts are counted in the bucket and handed to the next alert it lets
 * through.
 */
#ifndef SECCHECKD_RULES_THROTTLE_H
#define SECCHECKD_RULES_THROTTLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define THROTTLE_ENTRIES 4096   /* rule x container pairs tracked at once */

struct throttle_entry {
    uint64_t key;
    double tokens;
    int64_t last_ns;            /* event time of the last refill */
    uint64_t suppressed;        /* since the last alert let through */
    bool used;
};

struct throttle {
    double rate, burst;
    struct throttle_entry *entries;
};

int throttle_init(struct throttle *t, double rate, double burst);
void throttle_free(struct throttle *t);

/* True: raise the alert (*suppressed: how many it stands for); false:
 * throttled (counted). */
bool throttle_take(struct throttle *t, const char *rule, const char *container, int64_t now_ns, uint64_t *suppressed);

#endif
