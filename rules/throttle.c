#include "throttle.h"

#include <stdlib.h>
#include <string.h>

#define PROBE 8

static uint64_t hash_str(uint64_t h, const char *s)
{
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

int throttle_init(struct throttle *t, double rate, double burst)
{
    t->rate = rate;
    t->burst = burst < 1 ? 1 : burst;
    t->entries = rate > 0 ? calloc(THROTTLE_ENTRIES, sizeof(*t->entries)) : NULL;
    return rate > 0 && !t->entries ? -1 : 0;
}

void throttle_free(struct throttle *t)
{
    free(t->entries);
    t->entries = NULL;
}

static void refill(const struct throttle *t, struct throttle_entry *e, int64_t now)
{
    if (now > e->last_ns) {
        e->tokens += (double)(now - e->last_ns) * t->rate / 1e9;
        if (e->tokens > t->burst)
            e->tokens = t->burst;
        e->last_ns = now;
    }
}

bool throttle_take(struct throttle *t, const char *rule, const char *container, int64_t now_ns, uint64_t *suppressed)
{
    *suppressed = 0;
    if (t->rate <= 0 || !t->entries)
        return true;
    /* 0 is the empty key; a container's "" and NULL are the same. */
    uint64_t key = hash_str(hash_str(1469598103934665603ull, rule) * 31 + 7, container) | 1;
    size_t base = (size_t)(key * 0x9e3779b97f4a7c15ull >> 52) & (THROTTLE_ENTRIES - 1);
    struct throttle_entry *e = NULL, *spare = NULL;
    for (size_t i = 0; i < PROBE && !e; i++) {
        struct throttle_entry *c = &t->entries[(base + i) & (THROTTLE_ENTRIES - 1)];
        if (c->used && c->key == key) {
            e = c;
            break;
        }
        if (!spare && !c->used)
            spare = c;
    }
    if (!e) {
        if (!spare) {
            /* a bucket that refilled is as good as none; else the stalest */
            for (size_t i = 0; i < PROBE; i++) {
                struct throttle_entry *c = &t->entries[(base + i) & (THROTTLE_ENTRIES - 1)];
                refill(t, c, now_ns);
                if (c->tokens >= t->burst && c->suppressed == 0) {
                    spare = c;
                    break;
                }
                if (!spare || c->last_ns < spare->last_ns)
                    spare = c;
            }
        }
        e = spare;
        *e = (struct throttle_entry){.key = key, .tokens = t->burst, .last_ns = now_ns, .used = true};
    }
    refill(t, e, now_ns);
    if (e->tokens >= 1) {
        e->tokens -= 1;
        *suppressed = e->suppressed;
        e->suppressed = 0;
        return true;
    }
    e->suppressed++;
    return false;
}
