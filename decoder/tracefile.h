/* tracefile.h - gVisor `tracereplay` files: read and write.
 *
 * Layout: the 16 bytes "tracereplay file", u64 LE length + JSON config
 * ({"version":1}), then repeated u64 LE length + raw packet (header +
 * payload, exactly as received). Every length read from a file is checked
 * against TRACEFILE_RECORD_MAX, as gVisor's own reader does.
 */
#ifndef SECCHECKD_TRACEFILE_H
#define SECCHECKD_TRACEFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TRACEFILE_MAGIC "tracereplay file"
#define TRACEFILE_MAGIC_LEN 16
#define TRACEFILE_RECORD_MAX (1u << 20)   /* gVisor refuses longer records */
#define TRACEFILE_CONFIG_MAX 4096

enum tracefile_status {
    TRACEFILE_OK = 0,
    TRACEFILE_END,              /* clean end of file */
    TRACEFILE_IO_ERROR,
    TRACEFILE_NOT_TRACE,        /* magic missing */
    TRACEFILE_BAD_CONFIG,       /* config length or JSON unusable */
    TRACEFILE_TRUNCATED,        /* file ends inside a length or record */
    TRACEFILE_RECORD_TOO_LARGE,
};

struct tracefile {
    FILE *fp;
    const char *path;
    uint32_t version;           /* wire version from the config JSON */
    uint64_t records;           /* records read or written so far */
    uint8_t *record;            /* reader's buffer, TRACEFILE_RECORD_MAX bytes */
};

/* Human-readable reason for a status, for error messages. */
const char *tracefile_strerror(enum tracefile_status st);

enum tracefile_status tracefile_open(struct tracefile *tf, const char *path);
/* Next packet; *pkt stays valid until the next call. */
enum tracefile_status tracefile_next(struct tracefile *tf, const uint8_t **pkt, size_t *len);

enum tracefile_status tracefile_create(struct tracefile *tf, const char *path, uint32_t version);
enum tracefile_status tracefile_append(struct tracefile *tf, const uint8_t *pkt, size_t len);
/* Flushes the writer's buffered records to the kernel. */
enum tracefile_status tracefile_flush(struct tracefile *tf);

/* Closes either kind; returns TRACEFILE_IO_ERROR if a buffered write failed. */
enum tracefile_status tracefile_close(struct tracefile *tf);

#endif
