/* fuzz_seeds.c - initial fuzz inputs from recorded traces.
 *
 * usage: fuzz_seeds OUTDIR TRACE...
 * Writes every packet of every trace as OUTDIR/<trace>-<n>.pkt (the harness
 * treats an input as one packet), and the start of each trace (config and
 * its first FUZZ_SEED_HEAD_RECORDS records) as OUTDIR/<trace>-head.trace, a
 * small but real tracereplay file for the harness's trace-file path. Reads
 * and writes through the project's own tracefile.h.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tracefile.h"

#define FUZZ_SEED_HEAD_RECORDS 8

static int write_file(const char *path, const uint8_t *data, size_t len)
{
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(data, 1, len, fp) != len || fclose(fp) != 0) {
        fprintf(stderr, "fuzz_seeds: %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int seed_trace(const char *outdir, const char *trace)
{
    char namebuf[4096];
    snprintf(namebuf, sizeof(namebuf), "%s", trace);
    char *name = basename(namebuf);
    char *dot = strrchr(name, '.');
    if (dot && dot != name)
        *dot = '\0';

    struct tracefile in, head;
    enum tracefile_status st = tracefile_open(&in, trace);
    if (st != TRACEFILE_OK) {
        fprintf(stderr, "fuzz_seeds: %s: %s\n", trace, tracefile_strerror(st));
        return -1;
    }
    char path[8192];
    snprintf(path, sizeof(path), "%s/%s-head.trace", outdir, name);
    unlink(path);   /* the writer never clobbers */
    st = tracefile_create(&head, path, in.version);
    if (st != TRACEFILE_OK) {
        fprintf(stderr, "fuzz_seeds: %s: %s\n", path, tracefile_strerror(st));
        tracefile_close(&in);
        return -1;
    }
    const uint8_t *pkt;
    size_t len;
    uint64_t n = 0;
    int rc = 0;
    while (rc == 0 && (st = tracefile_next(&in, &pkt, &len)) == TRACEFILE_OK) {
        snprintf(path, sizeof(path), "%s/%s-%06llu.pkt", outdir, name, (unsigned long long)n);
        rc = write_file(path, pkt, len);
        if (rc == 0 && n < FUZZ_SEED_HEAD_RECORDS && tracefile_append(&head, pkt, len) != TRACEFILE_OK)
            rc = -1;
        n++;
    }
    if (rc == 0 && st != TRACEFILE_END) {
        fprintf(stderr, "fuzz_seeds: %s: %s\n", trace, tracefile_strerror(st));
        rc = -1;
    }
    if (tracefile_close(&head) != TRACEFILE_OK)
        rc = -1;
    tracefile_close(&in);
    if (rc == 0)
        printf("fuzz_seeds: %s: %llu packets\n", trace, (unsigned long long)n);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s OUTDIR TRACE...\n", argv[0]);
        return 2;
    }
    for (int i = 2; i < argc; i++)
        if (seed_trace(argv[1], argv[i]) != 0)
            return 1;
    return 0;
}
