/* payload.c - the message format of the fleet's stream (jetstream.h): one
 * group of batches, a part of one, or a sync, read from the host's database
 * as binary COPY sections and described by a JSON header.
 *
 * Decoding trusts nothing: the message comes from a host that may be
 * compromised. The decompressed size is declared by the frame and bounded
 * before anything is allocated, the header is parsed by jansson within
 * JS_HEADER_MAX, every number is range-checked, and each section is walked
 * as binary COPY (field counts, lengths inside the section) so the apply
 * only ever copies bytes already known to be well-formed. */
#include "jetstream.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include <zstd.h>

#include "copy_binary.h"
#include "event_redecode.h"
#include "json.h"

#define FORMAT_LINE_MAX 64
#define COPY_SIGNATURE "PGCOPY\n\377\r\n\0"
#define COPY_SIGNATURE_LEN 11

struct js_codec {
    int level;                      /* zstd level; 0: none */
    ZSTD_CCtx *cctx;
    ZSTD_DCtx *dctx;
    struct strbuf plain;            /* decode: length, header, sections */
    struct strbuf scratch;          /* encode: header JSON */
    struct local_batch batches[JS_BATCHES_MAX];
    struct event_redecoder redecoder;   /* version 2's events, decoded as the daemon decoded them */
    bool redecoder_ready;
};

struct js_codec *js_codec_new(int level)
{
    struct js_codec *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->level = level;
    c->cctx = ZSTD_createCCtx();
    c->dctx = ZSTD_createDCtx();
    char err[160];
    c->redecoder_ready = event_redecoder_init(&c->redecoder, err, sizeof(err)) == 0;
    if (!c->cctx || !c->dctx || !c->redecoder_ready) {
        js_codec_free(c);
        return NULL;
    }
    return c;
}

void js_codec_free(struct js_codec *c)
{
    if (!c)
        return;
    ZSTD_freeCCtx(c->cctx);
    ZSTD_freeDCtx(c->dctx);
    strbuf_free(&c->plain);
    strbuf_free(&c->scratch);
    if (c->redecoder_ready)
        event_redecoder_free(&c->redecoder);
    free(c);
}

/* ---- names ---- */

static const char *const part_names[LOCAL_PARTS] = {
    [LOCAL_PART_EVENTS] = "events",
    [LOCAL_PART_ALERTS] = "alerts",
    [LOCAL_PART_NAMES] = "names",
    [LOCAL_PART_BATCHES] = "batches",
    [LOCAL_PART_RUNS] = "runs",
    [LOCAL_PART_CONNECTIONS] = "connections",
    [LOCAL_PART_OPEN_RUNS] = "open_runs",
    [LOCAL_PART_OPEN_CONNECTIONS] = "open_connections",
};

const char *js_part_name(enum local_part part) { return (unsigned)part < LOCAL_PARTS ? part_names[part] : NULL; }

static int part_by_name(const char *name)
{
    for (int i = 0; i < LOCAL_PARTS; i++)
        if (strcmp(part_names[i], name) == 0)
            return i;
    return -1;
}

static const char *const kind_names[] = {[JS_KIND_BATCHES] = "batches", [JS_KIND_CHUNK] = "chunk",
                                         [JS_KIND_SYNC] = "sync"};
static const char *const column_kinds[] = {[LOCAL_INT] = "int", [LOCAL_REAL] = "real", [LOCAL_TEXT] = "text",
                                           [LOCAL_BLOB] = "blob", [LOCAL_JSON] = "json"};

/* The tables a header describes, in struct local. */
static struct local_table *table_named(struct local *l, const char *name)
{
    struct local_table *all[] = {&l->runs, &l->connections, &l->events, &l->batches, &l->alerts, &l->container_info};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    return NULL;
}

/* ---- version 2's events: the chained columns, the rest decoded ---- */

enum { CHAINED_ID, CHAINED_CONN_ID, CHAINED_RECV_NS, CHAINED_MSG_TYPE, CHAINED_RAW };
static const struct local_column chained_columns[JS_CHAINED_COLUMNS] = {
    {"id", LOCAL_INT}, {"conn_id", LOCAL_INT}, {"recv_ns", LOCAL_INT}, {"msg_type", LOCAL_INT}, {"raw", LOCAL_BLOB},
};

void js_chained_events_table(struct local_table *t)
{
    memset(t, 0, sizeof(*t));
    t->name = "events";
    memcpy(t->cols, chained_columns, sizeof(chained_columns));
    t->ncols = JS_CHAINED_COLUMNS;
}

/* Where an events column comes from in a version 2 message: chained field
 * 0..JS_CHAINED_COLUMNS-1, or JS_CHAINED_COLUMNS + its redecode column;
 * -1 neither. */
static int events_source(const char *name)
{
    for (int i = 0; i < JS_CHAINED_COLUMNS; i++)
        if (strcmp(chained_columns[i].name, name) == 0)
            return i;
    for (int i = 0; i < REDECODE_COLUMNS; i++)
        if (strcmp(redecode_columns[i].name, name) == 0)
            return JS_CHAINED_COLUMNS + i;
    return -1;
}

bool js_events_decodable(const struct local_table *events)
{
    int chained = 0;
    for (int i = 0; i < events->ncols; i++) {
        int from = events_source(events->cols[i].name);
        if (from < 0 || (from < JS_CHAINED_COLUMNS && events->cols[i].kind != chained_columns[from].kind))
            return false;
        chained += from < JS_CHAINED_COLUMNS;
    }
    return chained == JS_CHAINED_COLUMNS;   /* column names are unique (PRAGMA, read_tables) */
}

/* ---- subjects ---- */

static bool token_plain(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

int js_subject_token(const char *host_id, char *out, size_t outlen)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)host_id; *p; p++) {
        size_t need = token_plain(*p) ? 1 : 3;
        if (n + need >= outlen)
            return -1;
        if (need == 1)
            out[n++] = (char)*p;
        else
            n += (size_t)snprintf(out + n, outlen - n, "%%%02X", *p);
    }
    if (n == 0 || n >= outlen)
        return -1;
    out[n] = '\0';
    return 0;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;   /* js_subject_token writes upper case only */
}

int js_subject_host(const char *token, size_t len, char out[HOST_ID_MAX + 1])
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)token[i];
        if (n >= HOST_ID_MAX)
            return -1;
        if (token_plain(c)) {
            out[n++] = (char)c;
            continue;
        }
        if (c != '%' || i + 2 >= len)
            return -1;
        int hi = hex_digit(token[i + 1]), lo = hex_digit(token[i + 2]);
        if (hi < 0 || lo < 0)
            return -1;
        unsigned char v = (unsigned char)(hi << 4 | lo);
        if (token_plain(v) || v < 0x21 || v == 0x7f)   /* not what the encoder writes, or not a host id's byte */
            return -1;
        out[n++] = (char)v;
        i += 2;
    }
    if (n == 0)
        return -1;
    out[n] = '\0';
    return 0;
}

unsigned js_partition_of(const char *host_id, unsigned partitions)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)host_id; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    return partitions ? (unsigned)(h % partitions) : 0;
}

bool jetstream_is_url(const char *url)
{
    return url && (strncmp(url, "nats://", 7) == 0 || strncmp(url, "tls://", 6) == 0);
}

bool jetstream_forward_wanted(int argc, char **argv)
{
    bool wanted = false;
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {   /* the last --to counts, as getopt's */
        if (strcmp(argv[i], "--to") == 0 && i + 1 < argc)
            wanted = jetstream_is_url(argv[++i]);
        else if (strncmp(argv[i], "--to=", 5) == 0)
            wanted = jetstream_is_url(argv[i] + 5);
    }
    return wanted;
}

/* ---- encoding ---- */

static void hex(const uint8_t *h, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[h[i] >> 4];
        out[2 * i + 1] = digits[h[i] & 15];
    }
    out[2 * n] = '\0';
}

static json_t *batch_json(const struct local_batch *b)
{
    char prev[2 * CHAIN_HASH_LEN + 1], hash[2 * CHAIN_HASH_LEN + 1];
    hex(b->prev, CHAIN_HASH_LEN, prev);
    hex(b->hash, CHAIN_HASH_LEN, hash);
    return json_pack("{sI sI so so sI sI ss ss sI}", "id", (json_int_t)b->id, "run_id", (json_int_t)b->run_id,
                     "first", b->has_range ? json_integer(b->first) : json_null(), "last",
                     b->has_range ? json_integer(b->last) : json_null(), "events", (json_int_t)b->events,
                     "committed_ns", (json_int_t)b->committed_ns, "prev", prev, "hash", hash, "keyed",
                     (json_int_t)b->keyed);
}

static json_t *table_json(const struct local_table *t)
{
    json_t *cols = json_array();
    for (int i = 0; cols && i < t->ncols; i++)
        json_array_append_new(cols, json_pack("[ss]", t->cols[i].name, column_kinds[t->cols[i].kind]));
    return cols;
}

static json_t *header_json(const struct js_payload *p, const char *token, const char *hostname)
{
    char at_hash[2 * CHAIN_HASH_LEN + 1];
    hex(p->at_hash, CHAIN_HASH_LEN, at_hash);
    json_t *h = json_pack("{ss ss ss sI ss sI sI s{sI sI sI}}", "host", token, "hostname", hostname, "kind",
                          kind_names[p->kind], "at_batch", (json_int_t)p->at_batch, "at_hash", at_hash, "gap_from",
                          (json_int_t)p->gap_from, "names_id", (json_int_t)p->names_id, "open", "runs_from",
                          (json_int_t)p->open_runs_from, "connections_from", (json_int_t)p->open_conns_from,
                          "connections_seen", (json_int_t)p->open_conns_seen);
    if (!h)
        return NULL;
    json_t *batches = json_array();
    for (int i = 0; i < p->nbatches; i++)
        json_array_append_new(batches, batch_json(&p->batches[i]));
    json_object_set_new(h, "batches", batches);
    if (p->kind == JS_KIND_CHUNK)
        json_object_set_new(h, "chunk", json_pack("{sI sb sI}", "index", (json_int_t)p->chunk.index, "final",
                                                  p->chunk.final, "next_event", (json_int_t)p->next_event));
    json_t *tables = json_object();
    const struct local_table *all[] = {&p->tables.runs, &p->tables.connections, &p->tables.events,
                                       &p->tables.batches, p->tables.has_alerts ? &p->tables.alerts : NULL,
                                       p->tables.has_container_info ? &p->tables.container_info : NULL};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (all[i])
            json_object_set_new(tables, all[i]->name, table_json(all[i]));
    json_object_set_new(h, "tables", tables);
    json_t *sections = json_array();
    for (int i = 0; i < LOCAL_PARTS; i++)
        if (p->sections[i].present)
            json_array_append_new(sections, json_pack("{ss sI sI}", "part", part_names[i], "rows",
                                                      (json_int_t)p->sections[i].rows, "bytes",
                                                      (json_int_t)p->sections[i].len));
    json_object_set_new(h, "sections", sections);
    if (p->chained_events)
        json_object_set_new(h, "v2_first_event_id", json_integer((json_int_t)p->v2_first_event_id));
    return h;
}

/* Sections must follow one another in part order (the decoder reads them
 * in the header's order, which is part order). */
static int check_layout(const struct js_payload *p, size_t body_len, char *err, size_t errlen)
{
    size_t at = 0;
    for (int i = 0; i < LOCAL_PARTS; i++) {
        if (!p->sections[i].present)
            continue;
        if (p->sections[i].off != at || p->sections[i].len > body_len - at) {
            snprintf(err, errlen, "section %s is not where the sections before it end", part_names[i]);
            return -1;
        }
        at += p->sections[i].len;
    }
    if (at != body_len) {
        snprintf(err, errlen, "the sections do not cover the body");
        return -1;
    }
    return 0;
}

static int compress_into(struct js_codec *c, const void *a, size_t alen, const void *b, size_t blen,
                         struct strbuf *out, char *err, size_t errlen)
{
    size_t total = alen + blen, bound = ZSTD_compressBound(total), start = out->len;
    if (out->cap - out->len < bound) {   /* grow once to the bound */
        size_t want = out->len + bound + 1;
        char *data = realloc(out->data, want);
        if (!data) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        out->data = data;
        out->cap = want;
    }
    ZSTD_CCtx_reset(c->cctx, ZSTD_reset_session_only);
    ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_compressionLevel, c->level);
    ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setPledgedSrcSize(c->cctx, total);
    ZSTD_outBuffer ob = {out->data + start, bound, 0};
    ZSTD_inBuffer ia = {a, alen, 0}, ib = {b, blen, 0};
    size_t rc = 0;
    while (ia.pos < ia.size && !ZSTD_isError(rc))
        rc = ZSTD_compressStream2(c->cctx, &ob, &ia, ZSTD_e_continue);
    do
        rc = ZSTD_isError(rc) ? rc : ZSTD_compressStream2(c->cctx, &ob, &ib, ZSTD_e_end);
    while (rc != 0 && !ZSTD_isError(rc));
    if (ZSTD_isError(rc)) {
        snprintf(err, errlen, "zstd: %s", ZSTD_getErrorName(rc));
        return -1;
    }
    out->len = start + ob.pos;
    out->data[out->len] = '\0';
    return 0;
}

int js_payload_encode(struct js_codec *c, const struct js_payload *p, const void *body, size_t body_len,
                      struct strbuf *out, char *err, size_t errlen)
{
    char token[JS_TOKEN_MAX + 1];
    if (js_subject_token(p->host_id, token, sizeof(token)) != 0) {
        snprintf(err, errlen, "host id does not make a subject token");
        return -1;
    }
    if (check_layout(p, body_len, err, errlen) != 0)
        return -1;
    if (p->chained_events && (!js_events_decodable(&p->tables.events) || p->v2_first_event_id < 1)) {
        snprintf(err, errlen, "version %d cannot carry these events columns", JS_FORMAT_VERSION);
        return -1;
    }
    strbuf_reset(&c->scratch);
    utf8_sanitize(&c->scratch, p->hostname, strlen(p->hostname));
    strbuf_putc(&c->scratch, '\0');
    json_t *h = c->scratch.failed ? NULL : header_json(p, token, c->scratch.data ? c->scratch.data : "");
    char *text = h ? json_dumps(h, JSON_COMPACT) : NULL;
    json_decref(h);
    if (!text) {
        snprintf(err, errlen, "out of memory (message header)");
        return -1;
    }
    size_t hlen = strlen(text);
    if (hlen > JS_HEADER_MAX || body_len > JS_BODY_MAX) {
        snprintf(err, errlen, "message too large: header %zu bytes, body %zu (at most %u and %u)", hlen, body_len,
                 JS_HEADER_MAX, JS_BODY_MAX);
        free(text);
        return -1;
    }
    strbuf_reset(&c->scratch);
    uint8_t le[4] = {(uint8_t)hlen, (uint8_t)(hlen >> 8), (uint8_t)(hlen >> 16), (uint8_t)(hlen >> 24)};
    strbuf_append(&c->scratch, le, 4);
    strbuf_append(&c->scratch, text, hlen);
    free(text);
    strbuf_reset(out);
    strbuf_printf(out, "%s/%d %s\n", JS_FORMAT_NAME, p->chained_events ? JS_FORMAT_VERSION : JS_FORMAT_ROWS,
                  c->level ? "zstd" : "none");
    int rc = 0;
    if (c->level)
        rc = compress_into(c, c->scratch.data, c->scratch.len, body, body_len, out, err, errlen);
    else {
        strbuf_append(out, c->scratch.data, c->scratch.len);
        strbuf_append(out, body, body_len);
    }
    if (rc == 0 && (out->failed || c->scratch.failed)) {
        snprintf(err, errlen, "out of memory (message)");
        rc = -1;
    }
    return rc;
}

/* ---- decoding ---- */

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

#define FIELD_ANY (-2)             /* widths: NULL or any length */
#define FIELD_NOT_NULL (-1)        /* any length but NULL */

/* Walks one binary COPY stream of rows of ncols fields, each of the length
 * widths[i] says when widths is not NULL: 0 and *rows, or -1 with what is
 * wrong. */
static int walk_copy(const uint8_t *p, size_t len, int ncols, const int *widths, int64_t *rows, char *err,
                     size_t errlen)
{
    if (len < COPY_SIGNATURE_LEN + 8 + 2 || memcmp(p, COPY_SIGNATURE, COPY_SIGNATURE_LEN) != 0) {
        snprintf(err, errlen, "not a binary COPY stream");
        return -1;
    }
    uint32_t flags = be32(p + COPY_SIGNATURE_LEN), ext = be32(p + COPY_SIGNATURE_LEN + 4);
    size_t at = COPY_SIGNATURE_LEN + 8;
    if (flags != 0 || ext > len - at) {
        snprintf(err, errlen, "binary COPY header with flags %" PRIu32 " or an extension past its end", flags);
        return -1;
    }
    at += ext;
    *rows = 0;
    for (;;) {
        if (len - at < 2) {
            snprintf(err, errlen, "row %" PRId64 " cut short", *rows + 1);
            return -1;
        }
        uint16_t n = be16(p + at);
        at += 2;
        if (n == 0xffff)
            break;
        if (n != (uint16_t)ncols) {
            snprintf(err, errlen, "row %" PRId64 " has %u fields where its table has %d columns", *rows + 1, n, ncols);
            return -1;
        }
        for (int i = 0; i < ncols; i++) {
            if (len - at < 4) {
                snprintf(err, errlen, "row %" PRId64 " cut short", *rows + 1);
                return -1;
            }
            uint32_t flen = be32(p + at);
            at += 4;
            int want = widths ? widths[i] : FIELD_ANY;
            if ((flen == 0xffffffffu && want != FIELD_ANY) || (want >= 0 && flen != (uint32_t)want)) {
                snprintf(err, errlen, "row %" PRId64 " field %d is %s where %d bytes are expected", *rows + 1, i + 1,
                         flen == 0xffffffffu ? "NULL" : "of another length", want);
                return -1;
            }
            if (flen == 0xffffffffu)
                continue;
            if (flen > len - at) {
                snprintf(err, errlen, "row %" PRId64 " field %d runs past the section", *rows + 1, i + 1);
                return -1;
            }
            at += flen;
        }
        (*rows)++;
    }
    if (at != len) {
        snprintf(err, errlen, "%zu bytes after the binary COPY trailer", len - at);
        return -1;
    }
    return 0;
}

static bool get_int(json_t *o, const char *key, int64_t min, int64_t max, int64_t *out)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v))
        return false;
    json_int_t n = json_integer_value(v);
    if (n < min || n > max)
        return false;
    *out = (int64_t)n;
    return true;
}

static int lower_hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static bool get_hash(json_t *o, const char *key, uint8_t out[CHAIN_HASH_LEN])
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v) || json_string_length(v) != 2 * CHAIN_HASH_LEN)
        return false;
    const char *s = json_string_value(v);
    for (int i = 0; i < CHAIN_HASH_LEN; i++) {
        int hi = lower_hex_digit(s[2 * i]), lo = lower_hex_digit(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

static int read_batch(json_t *o, struct local_batch *b)
{
    memset(b, 0, sizeof(*b));
    json_t *first = json_object_get(o, "first"), *last = json_object_get(o, "last");
    if (!json_is_object(o) || !get_int(o, "id", 1, INT64_MAX, &b->id) || !get_int(o, "run_id", 0, INT64_MAX, &b->run_id) ||
        !get_int(o, "events", 0, INT32_MAX, &b->events) || !get_int(o, "committed_ns", INT64_MIN, INT64_MAX, &b->committed_ns) ||
        !get_int(o, "keyed", 0, 1, &b->keyed) || !get_hash(o, "prev", b->prev) || !get_hash(o, "hash", b->hash))
        return -1;
    b->has_range = json_is_integer(first) && json_is_integer(last);
    if (b->has_range) {
        b->first = json_integer_value(first);
        b->last = json_integer_value(last);
        if (b->first < 1 || b->last < b->first)
            return -1;
    } else if (!json_is_null(first) || !json_is_null(last) || b->events != 0) {
        return -1;
    }
    return 0;
}

static bool valid_column(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= LOCAL_NAME_MAX)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

static int read_tables(json_t *tables, struct local *l, char *err, size_t errlen)
{
    const char *name;
    json_t *cols;
    if (!json_is_object(tables)) {
        snprintf(err, errlen, "no tables");
        return -1;
    }
    json_object_foreach(tables, name, cols) {
        struct local_table *t = table_named(l, name);
        size_t n = json_array_size(cols);
        if (!t || t->ncols || !json_is_array(cols) || n == 0 || n > LOCAL_MAX_COLUMNS) {
            snprintf(err, errlen, "table '%.64s' is not one of a seccheckd database, or its columns are not a list "
                     "of 1 to %d", name, LOCAL_MAX_COLUMNS);
            return -1;
        }
        for (size_t i = 0; i < n; i++) {
            json_t *c = json_array_get(cols, i);
            const char *cname = json_string_value(json_array_get(c, 0)), *kind = json_string_value(json_array_get(c, 1));
            int k = -1;
            for (int j = 0; kind && j < (int)(sizeof(column_kinds) / sizeof(column_kinds[0])); j++)
                if (strcmp(kind, column_kinds[j]) == 0)
                    k = j;
            if (json_array_size(c) != 2 || !cname || !valid_column(cname) || k < 0 ||
                (i == 0 && strcmp(cname, "id") != 0)) {
                snprintf(err, errlen, "table %s: column %zu is not [name, kind] with a name of [a-z0-9_] (the first "
                         "'id') and a kind of int, real, text, blob or json", name, i + 1);
                return -1;
            }
            for (size_t j = 0; j < i; j++)
                if (strcmp(t->cols[j].name, cname) == 0) {
                    snprintf(err, errlen, "table %s: column %s twice", name, cname);
                    return -1;
                }
            snprintf(t->cols[i].name, sizeof(t->cols[i].name), "%s", cname);
            t->cols[i].kind = (enum local_kind)k;
        }
        t->ncols = (int)n;
    }
    l->has_alerts = l->alerts.ncols > 0;
    l->has_container_info = l->container_info.ncols > 0;
    if (!l->runs.ncols || !l->connections.ncols || !l->events.ncols || !l->batches.ncols) {
        snprintf(err, errlen, "the tables runs, connections, events and batches are not all described");
        return -1;
    }
    return 0;
}

static int read_sections(json_t *sections, struct js_payload *p, size_t body_len, char *err, size_t errlen)
{
    size_t at = 0;
    int last = -1;
    if (!json_is_array(sections) || json_array_size(sections) > LOCAL_PARTS) {
        snprintf(err, errlen, "sections are not a list of at most %d", LOCAL_PARTS);
        return -1;
    }
    for (size_t i = 0; i < json_array_size(sections); i++) {
        json_t *s = json_array_get(sections, i);
        const char *name = json_string_value(json_object_get(s, "part"));
        int part = name ? part_by_name(name) : -1;
        int64_t rows, bytes;
        if (part <= last || !get_int(s, "rows", 0, INT32_MAX, &rows) ||
            !get_int(s, "bytes", 0, (int64_t)(body_len - at), &bytes)) {
            snprintf(err, errlen, "section %zu: not a known part after the one before, or its rows or bytes "
                     "out of range", i + 1);
            return -1;
        }
        const struct local_table *t = local_part_table(&p->tables, (enum local_part)part);
        if (!t) {
            snprintf(err, errlen, "section %s: its table is not described", part_names[part]);
            return -1;
        }
        static const int chained_widths[JS_CHAINED_COLUMNS] = {8, 8, 8, 8, FIELD_NOT_NULL};
        bool chained = part == LOCAL_PART_EVENTS && p->chained_events;
        int64_t walked = 0;
        char why[160] = "";
        if (walk_copy(p->body + at, (size_t)bytes, chained ? JS_CHAINED_COLUMNS : t->ncols,
                      chained ? chained_widths : NULL, &walked, why, sizeof(why)) != 0 ||
            walked != rows) {
            if (walked != rows && !why[0])
                snprintf(why, sizeof(why), "%" PRId64 " rows where the header says %" PRId64, walked, rows);
            snprintf(err, errlen, "section %s: %s", part_names[part], why);
            return -1;
        }
        p->sections[part] = (struct js_section){.present = true, .rows = rows, .off = at, .len = (size_t)bytes};
        at += (size_t)bytes;
        last = part;
    }
    if (at != body_len) {
        snprintf(err, errlen, "%zu bytes after the last section", body_len - at);
        return -1;
    }
    return 0;
}

static int read_kind(json_t *h, struct js_payload *p, char *err, size_t errlen)
{
    const char *kind = json_string_value(json_object_get(h, "kind"));
    json_t *batches = json_object_get(h, "batches");
    size_t n = json_array_size(batches);
    int k = -1;
    for (int i = 0; kind && i < 3; i++)
        if (strcmp(kind, kind_names[i]) == 0)
            k = i;
    if (k < 0 || !json_is_array(batches) || n > JS_BATCHES_MAX || (k == JS_KIND_BATCHES && n == 0) ||
        (k == JS_KIND_CHUNK && n != 1) || (k == JS_KIND_SYNC && n != 0)) {
        snprintf(err, errlen, "kind '%.16s' with %zu batches is not one this release knows", kind ? kind : "", n);
        return -1;
    }
    p->kind = (enum js_kind)k;
    for (size_t i = 0; i < n; i++)
        if (read_batch(json_array_get(batches, i), &p->batches[i]) != 0 ||
            (i > 0 && p->batches[i].id != p->batches[i - 1].id + 1)) {
            snprintf(err, errlen, "batch %zu of the header: a field missing or out of range, or not the next id",
                     i + 1);
            return -1;
        }
    p->nbatches = (int)n;
    if (k == JS_KIND_CHUNK) {
        json_t *c = json_object_get(h, "chunk"), *fin = json_object_get(c, "final");
        if (!get_int(c, "index", 1, INT32_MAX, &p->chunk.index) || !json_is_boolean(fin) ||
            !get_int(c, "next_event", 0, INT64_MAX, &p->next_event)) {
            snprintf(err, errlen, "chunk: index, final or next_event missing or out of range");
            return -1;
        }
        p->chunk.final = json_is_true(fin);
    }
    json_t *o = json_object_get(h, "open");
    if (!get_int(o, "runs_from", 0, INT64_MAX, &p->open_runs_from) ||
        !get_int(o, "connections_from", 0, INT64_MAX, &p->open_conns_from)) {
        snprintf(err, errlen, "open: runs_from or connections_from missing");
        return -1;
    }
    /* Only the publisher reads it back (where it resumes); older ones did not say it. */
    if (!get_int(o, "connections_seen", 0, INT64_MAX, &p->open_conns_seen))
        p->open_conns_seen = 0;
    return 0;
}

/* The header's hostname (valid UTF-8 without NUL: jansson checks) into
 * out, cut at a character's start when it is longer: PostgreSQL refuses
 * half a character, and would refuse every message of the fetch with it. */
static void copy_hostname(char *out, size_t outlen, const char *hostname)
{
    size_t n = strlen(hostname);
    if (n >= outlen) {
        n = outlen - 1;
        while (n > 0 && ((unsigned char)hostname[n] & 0xc0) == 0x80)
            n--;
    }
    memcpy(out, hostname, n);
    out[n] = '\0';
}

static int read_header(json_t *h, struct js_payload *p, char *err, size_t errlen)
{
    const char *token = json_string_value(json_object_get(h, "host"));
    const char *hostname = json_string_value(json_object_get(h, "hostname"));
    if (!json_is_object(h) || !token || js_subject_host(token, strlen(token), p->host_id) != 0) {
        snprintf(err, errlen, "the header names no host id");
        return -1;
    }
    copy_hostname(p->hostname, sizeof(p->hostname), hostname ? hostname : "");
    if (!get_int(h, "at_batch", 0, INT64_MAX, &p->at_batch) || !get_hash(h, "at_hash", p->at_hash) ||
        !get_int(h, "gap_from", 0, INT64_MAX, &p->gap_from) ||
        !get_int(h, "names_id", 0, INT64_MAX, &p->names_id)) {
        snprintf(err, errlen, "at_batch, gap_from or names_id missing or out of range");
        return -1;
    }
    if (read_kind(h, p, err, errlen) != 0 || read_tables(json_object_get(h, "tables"), &p->tables, err, errlen) != 0)
        return -1;
    if (p->chained_events && (!get_int(h, "v2_first_event_id", 1, INT64_MAX, &p->v2_first_event_id) ||
                              !js_events_decodable(&p->tables.events))) {
        snprintf(err, errlen, "version %d: v2_first_event_id missing, or events columns neither chained (of "
                 "their kind) nor decoded from raw", JS_FORMAT_VERSION);
        return -1;
    }
    /* What the consumer relies on: where the message leaves the host's chain. */
    int64_t want = p->kind == JS_KIND_SYNC ? p->at_batch
                   : p->kind == JS_KIND_CHUNK && !p->chunk.final ? p->batches[0].id - 1
                                                                  : p->batches[p->nbatches - 1].id;
    if (p->at_batch != want || (p->gap_from && (p->kind == JS_KIND_SYNC || p->gap_from >= p->batches[0].id))) {
        snprintf(err, errlen, "at_batch %" PRId64 " or gap_from %" PRId64 " does not fit the batches", p->at_batch,
                 p->gap_from);
        return -1;
    }
    return 0;
}

/* "seccheck-batch/2 zstd\n": -1 not ours, -2 not readable here. */
static int read_format_line(const uint8_t *data, size_t len, int *version_out, bool *zstd, size_t *skip, char *err,
                            size_t errlen)
{
    const uint8_t *nl = memchr(data, '\n', len < FORMAT_LINE_MAX ? len : FORMAT_LINE_MAX);
    size_t name_len = strlen(JS_FORMAT_NAME);
    if (!nl || (size_t)(nl - data) <= name_len + 1 || memcmp(data, JS_FORMAT_NAME "/", name_len + 1) != 0) {
        struct strbuf shown = {0};
        json_render_string(&shown, (const char *)data, len < 24 ? len : 24);
        snprintf(err, errlen, "not a seccheckd batch message (it starts %s)", shown.data ? shown.data : "\"\"");
        strbuf_free(&shown);
        return -1;
    }
    char line[FORMAT_LINE_MAX + 1];
    memcpy(line, data, (size_t)(nl - data));
    line[nl - data] = '\0';
    for (char *c = line; *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
            *c = '?';
    char *version = line + name_len + 1, *comp = strchr(version, ' ');
    if (comp)
        *comp++ = '\0';
    if (strcmp(version, "1") != 0 && strcmp(version, "2") != 0) {
        snprintf(err, errlen, "format %s/%s, which this release cannot read (it reads %s/%d and %s/%d): upgrade "
                 "seccheckd central", JS_FORMAT_NAME, version, JS_FORMAT_NAME, JS_FORMAT_ROWS, JS_FORMAT_NAME,
                 JS_FORMAT_VERSION);
        return -2;
    }
    *version_out = version[0] - '0';
    if (!comp || (strcmp(comp, "zstd") != 0 && strcmp(comp, "none") != 0)) {
        snprintf(err, errlen, "format %s/%s compressed with '%s', which this release cannot read (zstd or none)",
                 JS_FORMAT_NAME, version, comp ? comp : "");
        return -2;
    }
    *zstd = strcmp(comp, "zstd") == 0;
    *skip = (size_t)(nl - data) + 1;
    return 0;
}

static int inflate(struct js_codec *c, const uint8_t *src, size_t len, bool zstd, char *err, size_t errlen)
{
    strbuf_reset(&c->plain);
    if (!zstd) {
        if (len > 4 + JS_HEADER_MAX + (size_t)JS_BODY_MAX) {
            snprintf(err, errlen, "message of %zu bytes, more than a message may hold", len);
            return -1;
        }
        strbuf_append(&c->plain, src, len);
        return c->plain.failed ? (snprintf(err, errlen, "out of memory"), -1) : 0;
    }
    unsigned long long size = ZSTD_getFrameContentSize(src, len);
    if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR ||
        size > 4 + JS_HEADER_MAX + (unsigned long long)JS_BODY_MAX || ZSTD_findFrameCompressedSize(src, len) != len) {
        snprintf(err, errlen, "not one zstd frame declaring at most %u bytes", 4 + JS_HEADER_MAX + JS_BODY_MAX);
        return -1;
    }
    if (c->plain.cap < size + 1) {
        char *d = realloc(c->plain.data, (size_t)size + 1);
        if (!d) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        c->plain.data = d;
        c->plain.cap = (size_t)size + 1;
    }
    size_t got = ZSTD_decompressDCtx(c->dctx, c->plain.data, (size_t)size, src, len);
    if (ZSTD_isError(got) || got != size) {
        snprintf(err, errlen, "zstd: %s", ZSTD_isError(got) ? ZSTD_getErrorName(got) : "size differs from the frame's");
        return -1;
    }
    c->plain.len = got;
    return 0;
}

int js_payload_decode(struct js_codec *c, const void *data, size_t len, struct js_payload *p, char *err,
                      size_t errlen)
{
    memset(p, 0, sizeof(*p));
    local_name_tables(&p->tables);
    p->batches = c->batches;
    p->codec = c;
    bool zstd;
    size_t skip;
    int version = 0;
    int rc = read_format_line(data, len, &version, &zstd, &skip, err, errlen);
    if (rc != 0)
        return rc;
    p->chained_events = version == JS_FORMAT_VERSION;
    if (inflate(c, (const uint8_t *)data + skip, len - skip, zstd, err, errlen) != 0)
        return -1;
    const uint8_t *plain = (const uint8_t *)c->plain.data;
    size_t plen = c->plain.len;
    uint32_t hlen = plen >= 4 ? (uint32_t)plain[0] | (uint32_t)plain[1] << 8 | (uint32_t)plain[2] << 16 |
                                    (uint32_t)plain[3] << 24
                              : 0;
    if (plen < 4 || hlen == 0 || hlen > JS_HEADER_MAX || hlen > plen - 4) {
        snprintf(err, errlen, "header length %" PRIu32 " does not fit the message", hlen);
        return -1;
    }
    json_error_t jerr;
    json_t *h = json_loadb((const char *)plain + 4, hlen, JSON_REJECT_DUPLICATES, &jerr);
    if (!h) {
        snprintf(err, errlen, "header: %s", jerr.text);
        return -1;
    }
    p->body = plain + 4 + hlen;
    p->body_len = plen - 4 - hlen;
    if (p->body_len > JS_BODY_MAX) {
        snprintf(err, errlen, "body of %zu bytes, more than %u", p->body_len, JS_BODY_MAX);
        json_decref(h);
        return -1;
    }
    rc = read_header(h, p, err, errlen);
    if (rc == 0)
        rc = read_sections(json_object_get(h, "sections"), p, p->body_len, err, errlen);
    json_decref(h);
    if (rc == 0 && p->kind != JS_KIND_SYNC && !p->sections[LOCAL_PART_EVENTS].present) {
        snprintf(err, errlen, "batches without an events section");
        rc = -1;
    }
    return rc;
}

/* ---- the message as a central_source ---- */

static int64_t be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return (int64_t)v;
}

/* Column i of a version 2 events row decoded from raw: from[i] the
 * column's source (events_source), v1 version 1's form. */
static int decoded_column(int from, bool v1)
{
    int col = from - JS_CHAINED_COLUMNS;
    if (v1 && col == REDECODE_DETAIL)
        return REDECODE_WHOLE_DETAIL;
    if (v1 && col >= REDECODE_V2_FIRST && col <= REDECODE_V2_LAST)
        return -1;   /* NULL */
    return col;
}

/* One value as local_render_value renders the same value read back from
 * SQLite; false for one it would convert (another kind, unclean text). */
static bool render_exact(struct strbuf *out, const struct event_value *v, enum local_kind kind)
{
    switch (v->kind) {
    case EVENT_VALUE_NULL:
        copy_binary_null(out);
        return true;
    case EVENT_VALUE_INT:
        if (kind != LOCAL_INT)
            return false;
        copy_binary_int8(out, v->i);
        return true;
    case EVENT_VALUE_TEXT:
        if (v->unclean || (kind != LOCAL_TEXT && kind != LOCAL_JSON))
            return false;
        if (kind == LOCAL_JSON)
            copy_binary_jsonb(out, v->p, v->len);
        else
            copy_binary_text(out, v->p, v->len);
        return true;
    case EVENT_VALUE_BLOB:
        break;
    }
    return false;
}

/* One version 2 events row (its fields at q, walked at decode) as the
 * direct forwarder ships it: host_id, then each of the host's events
 * columns, chained ones as they came, the others decoded from raw with
 * the daemon's decoder and its binding's values (event_row.h), rendered as
 * local_copy_rows renders the values SQLite gives back; the rare value
 * SQLite would convert goes the SQLite way. Returns where the row ends,
 * NULL with err. */
static const uint8_t *decoded_row(struct js_payload *p, const uint8_t *q, const int *from, const uint8_t *prefix,
                                  const char *host_id, size_t hostlen, struct strbuf *out, char *err, size_t errlen)
{
    const uint8_t *field[JS_CHAINED_COLUMNS];
    uint32_t flen[JS_CHAINED_COLUMNS];
    for (int c = 0; c < JS_CHAINED_COLUMNS; c++) {   /* none NULL, the ints 8 bytes: walk_copy */
        field[c] = q;
        flen[c] = be32(q);
        q += 4 + flen[c];
    }
    int64_t id = be64(field[CHAINED_ID] + 4);
    bool v1 = id < p->v2_first_event_id;
    const uint8_t *raw = field[CHAINED_RAW] + 4;
    struct event_value v[EVENT_ROW_PARAMS + 2];
    bool decoded = event_redecode_values(&p->codec->redecoder, raw, flen[CHAINED_RAW], v1, v);
    const struct local_table *t = &p->tables.events;
    strbuf_append(out, prefix, 6);
    strbuf_append(out, host_id, hostlen);
    size_t row_start = out->len;
    sqlite3_stmt *st = NULL;   /* the row through SQLite, once a value needs it */
    for (int i = 0; i < t->ncols; i++) {
        if (from[i] < JS_CHAINED_COLUMNS) {
            strbuf_append(out, field[from[i]], 4 + (size_t)flen[from[i]]);
            continue;
        }
        int col = decoded_column(from[i], v1);
        if (!decoded || col < 0) {
            copy_binary_null(out);
        } else if (st) {
            if (local_render_value(out, st, col, t->cols[i].kind) != 0) {
                snprintf(err, errlen, "event %" PRId64 ": its decoded %s is not a value of the column's kind", id,
                         t->cols[i].name);
                return NULL;
            }
        } else if (!render_exact(out, &v[redecode_params[col]], t->cols[i].kind)) {
            /* The row again from its start, every value as SQLite gives it back. */
            st = event_redecode(&p->codec->redecoder, raw, flen[CHAINED_RAW], v1);
            if (!st) {   /* it decoded a moment ago: SQLite failed (out of memory) */
                snprintf(err, errlen, "event %" PRId64 ": decoding it again through SQLite failed", id);
                return NULL;
            }
            out->len = row_start;
            i = -1;
        }
    }
    return q;
}

/* The events of a version 2 message as full rows (decoded_row). */
static int64_t copy_decoded_events(struct js_payload *p, const char *host_id, struct strbuf *out, size_t flush_at,
                                   local_flush_cb flush, void *flush_data, char *err, size_t errlen)
{
    const struct js_section *s = &p->sections[LOCAL_PART_EVENTS];
    const struct local_table *t = &p->tables.events;
    int from[LOCAL_MAX_COLUMNS];
    for (int i = 0; i < t->ncols; i++)
        from[i] = events_source(t->cols[i].name);   /* all found: js_events_decodable at decode */
    const uint8_t *q = p->body + s->off, *end = q + s->len;
    size_t hostlen = strlen(host_id);
    q += COPY_SIGNATURE_LEN + 8 + be32(q + COPY_SIGNATURE_LEN + 4);
    uint8_t prefix[6] = {(uint8_t)((t->ncols + 1) >> 8), (uint8_t)(t->ncols + 1), (uint8_t)(hostlen >> 24),
                         (uint8_t)(hostlen >> 16), (uint8_t)(hostlen >> 8), (uint8_t)hostlen};
    int64_t rows = 0;
    while (q + 2 <= end && be16(q) != 0xffff) {
        q = decoded_row(p, q + 2, from, prefix, host_id, hostlen, out, err, errlen);
        if (!q)
            return -1;
        rows++;
        if (out->len >= flush_at && flush(out, flush_data) != 0)
            return -2;
    }
    return rows;
}

static int64_t message_copy(void *ctx, enum local_part part, int64_t lo, int64_t hi, const char *host_id,
                            struct strbuf *out, size_t flush_at, local_flush_cb flush, void *flush_data,
                            struct local_span *span, char *err, size_t errlen)
{
    (void)lo;
    (void)hi;
    struct js_payload *p = ctx;
    const struct js_section *s = (unsigned)part < LOCAL_PARTS ? &p->sections[part] : NULL;
    const struct local_table *t = (unsigned)part < LOCAL_PARTS ? local_part_table(&p->tables, part) : NULL;
    if (span) {
        bool conns = p->sections[LOCAL_PART_CONNECTIONS].present && p->sections[LOCAL_PART_CONNECTIONS].rows > 0;
        span->min = conns ? 1 : INT64_MAX;
        span->max = conns ? 1 : INT64_MIN;
    }
    uint8_t hdr[COPY_SIGNATURE_LEN + 8] = COPY_SIGNATURE;
    strbuf_append(out, hdr, sizeof(hdr));
    int64_t rows = 0;
    if (s && s->present && t && part == LOCAL_PART_EVENTS && p->chained_events) {
        rows = copy_decoded_events(p, host_id, out, flush_at, flush, flush_data, err, errlen);
        if (rows < 0)
            return rows;
    } else if (s && s->present && t) {
        const uint8_t *q = p->body + s->off, *end = q + s->len;
        size_t hostlen = strlen(host_id);
        q += COPY_SIGNATURE_LEN + 8 + be32(q + COPY_SIGNATURE_LEN + 4);
        uint8_t prefix[6] = {(uint8_t)((t->ncols + 1) >> 8), (uint8_t)(t->ncols + 1), (uint8_t)(hostlen >> 24),
                             (uint8_t)(hostlen >> 16), (uint8_t)(hostlen >> 8), (uint8_t)hostlen};
        /* Walked at decode: every length is known to stay inside. */
        while (q + 2 <= end && be16(q) != 0xffff) {
            const uint8_t *row = q + 2;
            q = row;
            for (int i = 0; i < t->ncols; i++) {
                uint32_t flen = be32(q);
                q += 4 + (flen == 0xffffffffu ? 0 : flen);
            }
            strbuf_append(out, prefix, sizeof(prefix));
            strbuf_append(out, host_id, hostlen);
            strbuf_append(out, row, (size_t)(q - row));
            rows++;
            if (out->len >= flush_at && flush(out, flush_data) != 0)
                return -2;
        }
    }
    strbuf_append(out, "\xff\xff", 2);
    if (out->failed) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return flush(out, flush_data) != 0 ? -2 : rows;
}

void js_payload_source(struct central_source *src, struct js_payload *p)
{
    *src = (struct central_source){.tables = &p->tables, .copy = message_copy, .ctx = p};
}
