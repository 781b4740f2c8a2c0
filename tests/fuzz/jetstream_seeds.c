/* jetstream_seeds.c - initial inputs for fuzz_jetstream.c: messages of the
 * fleet stream, encoded by the publisher's own js_payload_encode.
 *
 * usage: jetstream_seeds OUTDIR TRACE
 * Writes OUTDIR/js-<kind>-v<version>-<compression>.msg for each kind
 * (batches, chunk, final chunk, sync), version 1 (every events column as
 * stored) and 2 (the chained columns, the rest decoded from raw: the raw
 * packets are the first of TRACE, a recording), without compression and
 * with zstd. The tables are small: the fuzzer grows them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "copy_binary.h"
#include "event_redecode.h"
#include "jetstream.h"
#include "tracefile.h"

#define SEED_EVENTS 12
#define SEED_FIRST_EVENT 100

static struct {
    uint8_t data[4096];
    size_t len;
} packets[SEED_EVENTS];

static void column(struct local_table *t, const char *name, enum local_kind kind)
{
    snprintf(t->cols[t->ncols].name, sizeof(t->cols[0].name), "%s", name);
    t->cols[t->ncols++].kind = kind;
}

static void describe_tables(struct local *l, bool chained)
{
    memset(l, 0, sizeof(*l));
    local_name_tables(l);
    column(&l->events, "id", LOCAL_INT);
    column(&l->events, "conn_id", LOCAL_INT);
    column(&l->events, "recv_ns", LOCAL_INT);
    column(&l->events, "msg_type", LOCAL_INT);
    if (chained)
        for (int i = 0; i < REDECODE_COLUMNS; i++)
            column(&l->events, redecode_columns[i].name, redecode_columns[i].kind == REDECODE_INT    ? LOCAL_INT
                                                         : redecode_columns[i].kind == REDECODE_TEXT ? LOCAL_TEXT
                                                                                                     : LOCAL_JSON);
    else
        column(&l->events, "detail", LOCAL_JSON);
    column(&l->events, "raw", LOCAL_BLOB);
    column(&l->batches, "id", LOCAL_INT);
    column(&l->batches, "committed_ns", LOCAL_INT);
    column(&l->runs, "id", LOCAL_INT);
    column(&l->runs, "stopped_ns", LOCAL_INT);
    column(&l->connections, "id", LOCAL_INT);
    column(&l->connections, "close_ns", LOCAL_INT);
    column(&l->connections, "close_reason", LOCAL_TEXT);
    column(&l->connections, "ratio", LOCAL_REAL);
    column(&l->alerts, "id", LOCAL_INT);
    column(&l->alerts, "event_id", LOCAL_INT);
    column(&l->alerts, "rule", LOCAL_TEXT);
    column(&l->container_info, "id", LOCAL_INT);
    column(&l->container_info, "name", LOCAL_TEXT);
    l->has_alerts = l->has_container_info = true;
}

static size_t begin_section(struct strbuf *body)
{
    size_t at = body->len;
    copy_binary_header(body);
    return at;
}

static void end_section(struct js_payload *p, struct strbuf *body, enum local_part part, size_t at, int64_t rows)
{
    copy_binary_trailer(body);
    p->sections[part] = (struct js_section){.present = true, .rows = rows, .off = at, .len = body->len - at};
}

/* Events first..last: the chained columns (version 2) or every column. */
static void events_section(struct js_payload *p, struct strbuf *body, int64_t first, int64_t last)
{
    size_t at = begin_section(body);
    for (int64_t id = first; id <= last; id++) {
        const uint8_t *raw = packets[id - SEED_FIRST_EVENT].data;
        size_t rawlen = packets[id - SEED_FIRST_EVENT].len;
        copy_binary_row(body, p->chained_events ? JS_CHAINED_COLUMNS : 6);
        copy_binary_int8(body, id);
        copy_binary_int8(body, 1 + id % 2);
        copy_binary_int8(body, 1700000000000000000 + id);
        copy_binary_int8(body, rawlen >= 4 ? raw[2] | raw[3] << 8 : 0);
        if (!p->chained_events)
            copy_binary_jsonb(body, "{\"fd\":3}", 8);
        copy_binary_bytea(body, raw, rawlen);
    }
    end_section(p, body, LOCAL_PART_EVENTS, at, last - first + 1);
}

static void small_sections(struct js_payload *p, struct strbuf *body, bool with_batch)
{
    size_t at = begin_section(body);
    copy_binary_row(body, 3);
    copy_binary_int8(body, 1);
    copy_binary_int8(body, SEED_FIRST_EVENT + 1);
    copy_binary_text(body, "Terminal shell in container", 27);
    end_section(p, body, LOCAL_PART_ALERTS, at, 1);
    at = begin_section(body);
    copy_binary_row(body, 2);
    copy_binary_int8(body, 4);
    copy_binary_text(body, "web-1", 5);
    end_section(p, body, LOCAL_PART_NAMES, at, 1);
    if (with_batch) {
        at = begin_section(body);
        copy_binary_row(body, 2);
        copy_binary_int8(body, 7);
        copy_binary_int8(body, 1700000000123456789);
        end_section(p, body, LOCAL_PART_BATCHES, at, 1);
        at = begin_section(body);
        copy_binary_row(body, 2);
        copy_binary_int8(body, 1);
        copy_binary_null(body);
        end_section(p, body, LOCAL_PART_RUNS, at, 1);
    }
    at = begin_section(body);
    for (int id = 1; id <= 2; id++) {
        copy_binary_row(body, 4);
        copy_binary_int8(body, id);
        if (id == 1) {
            copy_binary_int8(body, 1700000000999999999);
            copy_binary_text(body, "eof", 3);
        } else {
            copy_binary_null(body);
            copy_binary_null(body);
        }
        copy_binary_float8(body, 0.5);
    }
    end_section(p, body, with_batch ? LOCAL_PART_CONNECTIONS : LOCAL_PART_OPEN_CONNECTIONS, at, 2);
}

static struct local_batch batch = {.id = 7, .run_id = 1, .first = SEED_FIRST_EVENT,
                                   .last = SEED_FIRST_EVENT + SEED_EVENTS - 1, .events = SEED_EVENTS,
                                   .committed_ns = 1700000000123456789, .has_range = true};

static void header(struct js_payload *p, enum js_kind kind, bool chained)
{
    memset(p, 0, sizeof(*p));
    p->kind = kind;
    snprintf(p->host_id, sizeof(p->host_id), "node-1.example");
    snprintf(p->hostname, sizeof(p->hostname), "node-1");
    describe_tables(&p->tables, chained);
    p->chained_events = chained;
    p->v2_first_event_id = chained ? SEED_FIRST_EVENT + 2 : 0;   /* two rows in version 1's form */
    p->names_id = 4;
    p->open_runs_from = 1;
    p->open_conns_from = 2;
    p->open_conns_seen = 2;
    memset(batch.prev, 0xaa, sizeof(batch.prev));
    memset(batch.hash, 0xbb, sizeof(batch.hash));
}

/* kind 0 batches, 1 a chunk (not the last), 2 the last chunk, 3 a sync. */
static void build(struct js_payload *p, struct strbuf *body, int kind, bool chained)
{
    static const enum js_kind kinds[] = {JS_KIND_BATCHES, JS_KIND_CHUNK, JS_KIND_CHUNK, JS_KIND_SYNC};
    header(p, kinds[kind], chained);
    strbuf_reset(body);
    if (kind == 3) {
        p->at_batch = 7;
        memcpy(p->at_hash, batch.hash, CHAIN_HASH_LEN);
        small_sections(p, body, false);
        return;
    }
    p->batches = &batch;
    p->nbatches = 1;
    bool final = kind != 1;
    int64_t first = kind == 2 ? SEED_FIRST_EVENT + SEED_EVENTS / 2 : SEED_FIRST_EVENT;
    int64_t last = kind == 1 ? SEED_FIRST_EVENT + SEED_EVENTS / 2 - 1 : batch.last;
    if (kinds[kind] == JS_KIND_CHUNK) {
        p->chunk = (struct central_chunk){.index = kind, .final = final};
        p->next_event = final ? 0 : last + 1;
    }
    p->at_batch = final ? batch.id : batch.id - 1;
    memcpy(p->at_hash, final ? batch.hash : batch.prev, CHAIN_HASH_LEN);
    events_section(p, body, first, last);
    small_sections(p, body, final);
}

static int read_packets(const char *trace)
{
    struct tracefile in;
    enum tracefile_status st = tracefile_open(&in, trace);
    if (st != TRACEFILE_OK) {
        fprintf(stderr, "jetstream_seeds: %s: %s\n", trace, tracefile_strerror(st));
        return -1;
    }
    int n = 0;
    const uint8_t *pkt;
    size_t len;
    while (n < SEED_EVENTS && tracefile_next(&in, &pkt, &len) == TRACEFILE_OK) {
        if (len > sizeof(packets[0].data))
            continue;
        memcpy(packets[n].data, pkt, len);
        packets[n++].len = len;
    }
    tracefile_close(&in);
    if (n < SEED_EVENTS) {
        fprintf(stderr, "jetstream_seeds: %s: fewer than %d packets of at most %zu bytes\n", trace, SEED_EVENTS,
                sizeof(packets[0].data));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s OUTDIR TRACE\n", argv[0]);
        return 2;
    }
    if (read_packets(argv[2]) != 0)
        return 1;
    static const char *const kind_names[] = {"batches", "chunk", "final-chunk", "sync"};
    struct strbuf body = {0}, msg = {0};
    int rc = 0, written = 0;
    for (int level = 0; level <= 3 && rc == 0; level += 3) {
        struct js_codec *c = js_codec_new(level);
        for (int kind = 0; kind < 4 && c && rc == 0; kind++)
            for (int v = 1; v <= 2 && rc == 0; v++) {
                struct js_payload p;
                char err[256] = "", path[4096];
                build(&p, &body, kind, v == 2);
                snprintf(path, sizeof(path), "%s/js-%s-v%d-%s.msg", argv[1], kind_names[kind], v,
                         level ? "zstd" : "none");
                FILE *fp = NULL;
                if (js_payload_encode(c, &p, body.data, body.len, &msg, err, sizeof(err)) != 0) {
                    fprintf(stderr, "jetstream_seeds: %s: %s\n", path, err);
                    rc = 1;
                } else if (!(fp = fopen(path, "wb")) || fwrite(msg.data, 1, msg.len, fp) != msg.len) {
                    fprintf(stderr, "jetstream_seeds: %s: %s\n", path, strerror(errno));
                    rc = 1;
                } else {
                    written++;
                }
                if (fp && fclose(fp) != 0 && rc == 0) {
                    fprintf(stderr, "jetstream_seeds: %s: %s\n", path, strerror(errno));
                    rc = 1;
                }
            }
        if (!c) {
            fprintf(stderr, "jetstream_seeds: out of memory\n");
            rc = 1;
        }
        js_codec_free(c);
    }
    strbuf_free(&body);
    strbuf_free(&msg);
    if (rc == 0)
        printf("jetstream_seeds: %d messages in %s\n", written, argv[1]);
    return rc;
}
