#include "tracefile.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *tracefile_strerror(enum tracefile_status st)
{
    switch (st) {
    case TRACEFILE_OK: return "ok";
    case TRACEFILE_END: return "end of file";
    case TRACEFILE_IO_ERROR: return "I/O error";
    case TRACEFILE_NOT_TRACE: return "not a tracereplay file (missing \"tracereplay file\" magic)";
    case TRACEFILE_BAD_CONFIG: return "bad config header (expected u64 length + JSON {\"version\":N})";
    case TRACEFILE_TRUNCATED: return "truncated (file ends inside a record)";
    case TRACEFILE_RECORD_TOO_LARGE: return "record longer than 1 MiB (gVisor's limit)";
    }
    return "unknown error";
}

static uint64_t load_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void store_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Reads exactly n bytes: OK, END (nothing read at all), TRUNCATED or IO_ERROR. */
static enum tracefile_status read_exact(FILE *fp, void *buf, size_t n)
{
    size_t got = fread(buf, 1, n, fp);
    if (got == n)
        return TRACEFILE_OK;
    if (ferror(fp))
        return TRACEFILE_IO_ERROR;
    return got == 0 ? TRACEFILE_END : TRACEFILE_TRUNCATED;
}

/* Pulls the "version" number out of the small config object. The config is
 * written by gVisor as {"version":N}; anything without a usable version is
 * refused rather than guessed. */
static int parse_config_version(const char *json, uint32_t *version)
{
    const char *key = strstr(json, "\"version\"");
    if (!key)
        return -1;
    const char *p = key + strlen("\"version\"");
    while (isspace((unsigned char)*p))
        p++;
    if (*p++ != ':')
        return -1;
    while (isspace((unsigned char)*p))
        p++;
    if (!isdigit((unsigned char)*p))
        return -1;
    errno = 0;
    char *end;
    unsigned long v = strtoul(p, &end, 10);
    if (errno || v == 0 || v > UINT32_MAX)
        return -1;
    *version = (uint32_t)v;
    return 0;
}

static enum tracefile_status read_config(struct tracefile *tf)
{
    uint8_t lenbuf[8];
    enum tracefile_status st = read_exact(tf->fp, lenbuf, sizeof(lenbuf));
    if (st != TRACEFILE_OK)
        return st == TRACEFILE_IO_ERROR ? st : TRACEFILE_TRUNCATED;
    uint64_t len = load_le64(lenbuf);
    if (len == 0 || len >= TRACEFILE_CONFIG_MAX)
        return TRACEFILE_BAD_CONFIG;
    char json[TRACEFILE_CONFIG_MAX];
    st = read_exact(tf->fp, json, (size_t)len);
    if (st != TRACEFILE_OK)
        return st == TRACEFILE_IO_ERROR ? st : TRACEFILE_TRUNCATED;
    json[len] = '\0';
    return parse_config_version(json, &tf->version) == 0 ? TRACEFILE_OK : TRACEFILE_BAD_CONFIG;
}

enum tracefile_status tracefile_open(struct tracefile *tf, const char *path)
{
    memset(tf, 0, sizeof(*tf));
    tf->path = path;
    tf->fp = fopen(path, "rb");
    if (!tf->fp)
        return TRACEFILE_IO_ERROR;
    char magic[TRACEFILE_MAGIC_LEN];
    enum tracefile_status st = read_exact(tf->fp, magic, sizeof(magic));
    if (st == TRACEFILE_IO_ERROR)
        goto fail;
    if (st != TRACEFILE_OK || memcmp(magic, TRACEFILE_MAGIC, TRACEFILE_MAGIC_LEN) != 0) {
        st = TRACEFILE_NOT_TRACE;
        goto fail;
    }
    st = read_config(tf);
    if (st != TRACEFILE_OK)
        goto fail;
    tf->record = malloc(TRACEFILE_RECORD_MAX);
    if (!tf->record) {
        st = TRACEFILE_IO_ERROR;
        goto fail;
    }
    return TRACEFILE_OK;
fail:
    fclose(tf->fp);
    tf->fp = NULL;
    return st;
}

enum tracefile_status tracefile_next(struct tracefile *tf, const uint8_t **pkt, size_t *len)
{
    uint8_t lenbuf[8];
    enum tracefile_status st = read_exact(tf->fp, lenbuf, sizeof(lenbuf));
    if (st != TRACEFILE_OK)
        return st;
    uint64_t n = load_le64(lenbuf);
    if (n > TRACEFILE_RECORD_MAX)
        return TRACEFILE_RECORD_TOO_LARGE;
    st = read_exact(tf->fp, tf->record, (size_t)n);
    if (st == TRACEFILE_END)
        st = TRACEFILE_TRUNCATED;   /* the length promised bytes that never came */
    if (st != TRACEFILE_OK)
        return st;
    tf->records++;
    *pkt = tf->record;
    *len = (size_t)n;
    return TRACEFILE_OK;
}

enum tracefile_status tracefile_create(struct tracefile *tf, const char *path, uint32_t version)
{
    memset(tf, 0, sizeof(*tf));
    tf->path = path;
    tf->version = version;
    tf->fp = fopen(path, "wbx");   /* never clobber an existing recording */
    if (!tf->fp)
        return TRACEFILE_IO_ERROR;
    char json[64];
    int n = snprintf(json, sizeof(json), "{\"version\":%u}", version);
    uint8_t lenbuf[8];
    store_le64(lenbuf, (uint64_t)n);
    if (fwrite(TRACEFILE_MAGIC, 1, TRACEFILE_MAGIC_LEN, tf->fp) != TRACEFILE_MAGIC_LEN ||
        fwrite(lenbuf, 1, 8, tf->fp) != 8 || fwrite(json, 1, (size_t)n, tf->fp) != (size_t)n) {
        fclose(tf->fp);
        tf->fp = NULL;
        return TRACEFILE_IO_ERROR;
    }
    return TRACEFILE_OK;
}

enum tracefile_status tracefile_append(struct tracefile *tf, const uint8_t *pkt, size_t len)
{
    if (len > TRACEFILE_RECORD_MAX)
        return TRACEFILE_RECORD_TOO_LARGE;
    uint8_t lenbuf[8];
    store_le64(lenbuf, (uint64_t)len);
    if (fwrite(lenbuf, 1, 8, tf->fp) != 8 || fwrite(pkt, 1, len, tf->fp) != len)
        return TRACEFILE_IO_ERROR;
    tf->records++;
    return TRACEFILE_OK;
}

enum tracefile_status tracefile_flush(struct tracefile *tf)
{
    return fflush(tf->fp) == 0 ? TRACEFILE_OK : TRACEFILE_IO_ERROR;
}

enum tracefile_status tracefile_close(struct tracefile *tf)
{
    enum tracefile_status st = TRACEFILE_OK;
    if (tf->fp && fclose(tf->fp) != 0)
        st = TRACEFILE_IO_ERROR;
    tf->fp = NULL;
    free(tf->record);
    tf->record = NULL;
    return st;
}
