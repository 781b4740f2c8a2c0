/* siphash.h - SipHash-2-4 (Aumasson and Bernstein) of two 64-bit words
 * under a 128-bit secret key: a hash table keyed on values a sandbox
 * chooses (its pids) stays a hash table, since without the key no one can
 * compute inputs that share a bucket. The key comes from getrandom, drawn
 * per table, so it differs per process and per restart.
 *
 * Header only: a few lines each, inlined where the tables hash.
 */
#ifndef SECCHECKD_FILTER_SIPHASH_H
#define SECCHECKD_FILTER_SIPHASH_H

#include <stdint.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

struct siphash_key {
    uint64_t k0, k1;
};

static inline uint64_t siphash_rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

#define SIPHASH_ROUND(v0, v1, v2, v3)                                                                                 \
    do {                                                                                                              \
        v0 += v1;                                                                                                     \
        v1 = siphash_rotl(v1, 13);                                                                                    \
        v1 ^= v0;                                                                                                     \
        v0 = siphash_rotl(v0, 32);                                                                                    \
        v2 += v3;                                                                                                     \
        v3 = siphash_rotl(v3, 16);                                                                                    \
        v3 ^= v2;                                                                                                     \
        v0 += v3;                                                                                                     \
        v3 = siphash_rotl(v3, 21);                                                                                    \
        v3 ^= v0;                                                                                                     \
        v2 += v1;                                                                                                     \
        v1 = siphash_rotl(v1, 17);                                                                                    \
        v1 ^= v2;                                                                                                     \
        v2 = siphash_rotl(v2, 32);                                                                                    \
    } while (0)

/* SipHash-2-4 of the 16 bytes a then b, each little-endian: the reference
 * implementation's value for that message. */
static inline uint64_t siphash_2u64(const struct siphash_key *k, uint64_t a, uint64_t b)
{
    uint64_t v0 = k->k0 ^ 0x736f6d6570736575ull, v1 = k->k1 ^ 0x646f72616e646f6dull;
    uint64_t v2 = k->k0 ^ 0x6c7967656e657261ull, v3 = k->k1 ^ 0x7465646279746573ull;
    const uint64_t words[3] = {a, b, (uint64_t)16 << 56};   /* the last block: the length, no bytes left */
    for (int w = 0; w < 3; w++) {
        v3 ^= words[w];
        SIPHASH_ROUND(v0, v1, v2, v3);
        SIPHASH_ROUND(v0, v1, v2, v3);
        v0 ^= words[w];
    }
    v2 ^= 0xff;
    for (int r = 0; r < 4; r++)
        SIPHASH_ROUND(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}

/* A fresh secret key. Without the kernel's randomness (getrandom before its
 * pool is ready, at early boot) it mixes what an outsider cannot read: the
 * clocks to the nanosecond, the pid and where the stack is (ASLR). */
static inline void siphash_key_random(struct siphash_key *k)
{
    if (getrandom(k, sizeof(*k), GRND_NONBLOCK) == (ssize_t)sizeof(*k))
        return;
    struct timespec rt, mono;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    const struct siphash_key mix = {(uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec,
                                    (uint64_t)(uintptr_t)&rt ^ (uint64_t)getpid() << 32};
    k->k0 = siphash_2u64(&mix, (uint64_t)mono.tv_nsec, (uint64_t)mono.tv_sec);
    k->k1 = siphash_2u64(&mix, k->k0, (uint64_t)(uintptr_t)k);
}

#endif
