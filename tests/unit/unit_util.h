/* unit_util.h - helpers shared by the unit tests: the recorded fixtures
 * loaded into memory (by seccheck_replay's loader), and scratch files and
 * directories under /tmp.
 *
 * Everything is static inline so each test program takes only what it uses
 * without -Wunused-function complaints.
 */
#ifndef SECCHECKD_UNIT_UTIL_H
#define SECCHECKD_UNIT_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "reaper.h"   /* scratch paths go even when a test fails */
#include "replay.h"
#include "tracefile.h"   /* several tests read trace files record by record */

#ifndef TRACES_DIR
#error "TRACES_DIR must be defined (tests/fixtures/traces, set by tests/CMakeLists.txt)"
#endif

/* Every packet of one trace file: a replay_trace under the short names the
 * unit tests use (n packets, pkt[i] of len[i] bytes). */
struct trace_pkts {
    size_t n;
    const uint8_t *const *pkt;
    const size_t *len;
    uint32_t version;
    size_t total_bytes;
    struct replay_trace loaded;   /* owns the packets */
};

static inline void trace_path(char *out, size_t outlen, const char *name)
{
    snprintf(out, outlen, "%s/%s", TRACES_DIR, name);
}

/* Loads TRACES_DIR/name; fails the current test if it cannot. */
static inline void trace_load(const char *name, struct trace_pkts *t)
{
    char path[4096], err[512];
    trace_path(path, sizeof(path), name);
    memset(t, 0, sizeof(*t));
    if (replay_trace_load(&t->loaded, path, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    t->n = t->loaded.count;
    t->pkt = t->loaded.packets;
    t->len = t->loaded.lengths;
    t->version = t->loaded.version;
    t->total_bytes = t->loaded.bytes;
}

static inline void trace_free(struct trace_pkts *t)
{
    replay_trace_free(&t->loaded);
    memset(t, 0, sizeof(*t));
}

/* A fresh private directory under /tmp; path must hold 64 bytes. */
static inline void scratch_dir(char *path)
{
    strcpy(path, "/tmp/seccheckd-unit-XXXXXX");
    if (!reaper_mkdtemp(path))
        fail_msg("mkdtemp failed");
}

/* Removes a scratch directory and everything in it. */
static inline void scratch_dir_remove(const char *path)
{
    reaper_remove(path);
}

/* Writes len bytes to a new mkstemp file; path must hold 64 bytes. */
static inline void scratch_file(char *path, const void *data, size_t len)
{
    strcpy(path, "/tmp/seccheckd-unit-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0)
        fail_msg("mkstemp failed");
    reaper_track_path(path);
    const uint8_t *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n <= 0) {
            close(fd);
            fail_msg("write to %s failed", path);
        }
        p += n;
        len -= (size_t)n;
    }
    close(fd);
}

/* Reads a whole file into malloc'd memory. */
static inline uint8_t *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        fail_msg("cannot open %s", path);
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *buf = malloc(size > 0 ? (size_t)size : 1);
    assert_non_null(buf);
    size_t got = fread(buf, 1, (size_t)size, fp);
    fclose(fp);
    assert_int_equal(got, (size_t)size);
    *len = got;
    return buf;
}

static inline void store_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t load_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Builds packet = 8-byte v1 header + payload into out; returns its length. */
static inline size_t make_packet(uint8_t *out, uint16_t type, uint32_t dropped, const void *payload, size_t plen)
{
    out[0] = 8;
    out[1] = 0;
    out[2] = (uint8_t)type;
    out[3] = (uint8_t)(type >> 8);
    for (int i = 0; i < 4; i++)
        out[4 + i] = (uint8_t)(dropped >> (8 * i));
    if (plen)
        memcpy(out + 8, payload, plen);
    return 8 + plen;
}

#endif
