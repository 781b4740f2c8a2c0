/* fuzz_seeds.c - initial fuzz inputs from recorded traces.
 *
 * usage: fuzz_seeds [-n PER_TYPE] OUTDIR TRACE...
 * Splits each trace into one file per packet, OUTDIR/<trace>-<n>.pkt (the
 * harness treats an input as one packet). Recordings repeat themselves (one
 * has 39000 reads and writes), so per trace and message_type only the first
 * PER_TYPE packets (default 32) are kept, plus every packet longer than all
 * kept before it of its type; -n 0 keeps every packet. The start of each
 * trace (config and its first FUZZ_SEED_HEAD_RECORDS records) also becomes
 * OUTDIR/<trace>-head.trace, a small real tracereplay file for the harness's
 * trace-file path. Reads and writes through the project's own tracefile.h.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracefile.h"

#define FUZZ_SEED_HEAD_RECORDS 8
#define FUZZ_SEED_PER_TYPE 32

static unsigned long per_type = FUZZ_SEED_PER_TYPE;

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
    /* Per message_type (u16, any value): packets kept and longest kept. */
    static unsigned long kept[65536];
    static size_t longest[65536];
    memset(kept, 0, sizeof(kept));
    memset(longest, 0, sizeof(longest));
    const uint8_t *pkt;
    size_t len;
    uint64_t n = 0, written = 0;
    int rc = 0;
    while (rc == 0 && (st = tracefile_next(&in, &pkt, &len)) == TRACEFILE_OK) {
        unsigned type = len >= 4 ? (unsigned)(pkt[2] | pkt[3] << 8) : 0;
        if (per_type == 0 || kept[type] < per_type || len > longest[type]) {
            snprintf(path, sizeof(path), "%s/%s-%06llu.pkt", outdir, name, (unsigned long long)n);
            rc = write_file(path, pkt, len);
            kept[type]++;
            if (len > longest[type])
                longest[type] = len;
            written++;
        }
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
        printf("fuzz_seeds: %s: %llu packets, %llu kept as seeds\n", trace, (unsigned long long)n,
               (unsigned long long)written);
    return rc;
}

int main(int argc, char **argv)
{
    int opt;
    char *end = NULL;
    while ((opt = getopt(argc, argv, "n:")) != -1) {
        if (opt == 'n')
            per_type = strtoul(optarg, &end, 10);
        if (opt != 'n' || *end != '\0') {
            fprintf(stderr, "usage: %s [-n PER_TYPE] OUTDIR TRACE...\n", argv[0]);
            return 2;
        }
    }
    if (argc - optind < 2) {
        fprintf(stderr, "usage: %s [-n PER_TYPE] OUTDIR TRACE...\n", argv[0]);
        return 2;
    }
    for (int i = optind + 1; i < argc; i++)
        if (seed_trace(argv[optind], argv[i]) != 0)
            return 1;
    return 0;
}
