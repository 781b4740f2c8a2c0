/* test_jetstream_payload.c - the fleet stream's message format
 * (jetstream/jetstream.h): what the publisher encodes the consumer decodes
 * whole; every hostile variation a compromised host could publish is
 * refused with a reason, never read past its bounds; the consumer writes
 * the subject's host id into every row; subjects and partitions are stable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <zstd.h>

#include "copy_binary.h"
#include "event_redecode.h"
#include "jetstream.h"
#include "json.h"
#include "wire.h"

static void column(struct local_table *t, const char *name, enum local_kind kind)
{
    snprintf(t->cols[t->ncols].name, sizeof(t->cols[0].name), "%s", name);
    t->cols[t->ncols++].kind = kind;
}

/* The tables of a small daemon database: events (id, conn_id, raw),
 * batches (id), runs (id), connections (id, close_ns), alerts (id, rule). */
static void tables(struct local *l)
{
    memset(l, 0, sizeof(*l));
    local_name_tables(l);
    column(&l->events, "id", LOCAL_INT);
    column(&l->events, "conn_id", LOCAL_INT);
    column(&l->events, "raw", LOCAL_BLOB);
    column(&l->batches, "id", LOCAL_INT);
    column(&l->runs, "id", LOCAL_INT);
    column(&l->connections, "id", LOCAL_INT);
    column(&l->connections, "close_ns", LOCAL_INT);
    column(&l->alerts, "id", LOCAL_INT);
    column(&l->alerts, "rule", LOCAL_TEXT);
    l->has_alerts = true;
}

static struct local_batch batch = {.id = 7, .run_id = 1, .first = 100, .last = 101, .events = 2,
                                   .committed_ns = 123456789, .has_range = true, .keyed = 0};

/* A message: events 100 and 101, their batch, one alert, one connection. */
static void build(struct js_payload *p, struct strbuf *body)
{
    memset(p, 0, sizeof(*p));
    memset(batch.prev, 0xaa, sizeof(batch.prev));
    memset(batch.hash, 0xbb, sizeof(batch.hash));
    p->kind = JS_KIND_BATCHES;
    snprintf(p->host_id, sizeof(p->host_id), "node-1.example");
    snprintf(p->hostname, sizeof(p->hostname), "node-1");
    p->batches = &batch;
    p->nbatches = 1;
    p->at_batch = 7;
    memcpy(p->at_hash, batch.hash, CHAIN_HASH_LEN);
    p->names_id = 3;
    tables(&p->tables);
    strbuf_reset(body);
    size_t at = body->len;
    copy_binary_header(body);
    for (int id = 100; id <= 101; id++) {
        copy_binary_row(body, 3);
        copy_binary_int8(body, id);
        copy_binary_int8(body, 5);
        copy_binary_bytea(body, "\x00\x01raw", 5);
    }
    copy_binary_trailer(body);
    p->sections[LOCAL_PART_EVENTS] = (struct js_section){.present = true, .rows = 2, .off = at, .len = body->len - at};
    at = body->len;
    copy_binary_header(body);
    copy_binary_row(body, 2);
    copy_binary_int8(body, 1);
    copy_binary_text(body, "Rule", 4);
    copy_binary_trailer(body);
    p->sections[LOCAL_PART_ALERTS] = (struct js_section){.present = true, .rows = 1, .off = at, .len = body->len - at};
    at = body->len;
    copy_binary_header(body);
    copy_binary_row(body, 1);
    copy_binary_int8(body, 7);
    copy_binary_trailer(body);
    p->sections[LOCAL_PART_BATCHES] = (struct js_section){.present = true, .rows = 1, .off = at, .len = body->len - at};
    at = body->len;
    copy_binary_header(body);
    copy_binary_row(body, 2);
    copy_binary_int8(body, 5);
    copy_binary_null(body);
    copy_binary_trailer(body);
    p->sections[LOCAL_PART_CONNECTIONS] =
        (struct js_section){.present = true, .rows = 1, .off = at, .len = body->len - at};
}

static void encode(struct js_codec *c, const struct js_payload *p, const struct strbuf *body, struct strbuf *msg)
{
    char err[256] = "";
    assert_int_equal(js_payload_encode(c, p, body->data, body->len, msg, err, sizeof(err)), 0);
}

static void test_round_trip(void **state)
{
    (void)state;
    for (int level = 0; level <= 3; level += 3) {
        struct js_codec *c = js_codec_new(level);
        struct strbuf body = {0}, msg = {0};
        struct js_payload p, q;
        build(&p, &body);
        encode(c, &p, &body, &msg);
        assert_memory_equal(msg.data, level ? "seccheck-batch/1 zstd\n" : "seccheck-batch/1 none\n", 22);
        char err[256] = "";
        assert_int_equal(js_payload_decode(c, msg.data, msg.len, &q, err, sizeof(err)), 0);
        assert_string_equal(q.host_id, "node-1.example");
        assert_string_equal(q.hostname, "node-1");
        assert_int_equal(q.kind, JS_KIND_BATCHES);
        assert_int_equal(q.nbatches, 1);
        assert_int_equal(q.batches[0].id, 7);
        assert_int_equal(q.batches[0].first, 100);
        assert_int_equal(q.batches[0].last, 101);
        assert_int_equal(q.batches[0].events, 2);
        assert_int_equal(q.batches[0].committed_ns, 123456789);
        assert_memory_equal(q.batches[0].prev, batch.prev, CHAIN_HASH_LEN);
        assert_memory_equal(q.batches[0].hash, batch.hash, CHAIN_HASH_LEN);
        assert_int_equal(q.at_batch, 7);
        assert_int_equal(q.names_id, 3);
        assert_int_equal(q.tables.events.ncols, 3);
        assert_string_equal(q.tables.events.cols[2].name, "raw");
        assert_int_equal(q.tables.events.cols[2].kind, LOCAL_BLOB);
        assert_true(q.tables.has_alerts);
        assert_false(q.tables.has_container_info);
        assert_int_equal(q.sections[LOCAL_PART_EVENTS].rows, 2);
        assert_int_equal(q.body_len, body.len);
        assert_memory_equal(q.body, body.data, body.len);
        strbuf_free(&body);
        strbuf_free(&msg);
        js_codec_free(c);
    }
}

static int collect(struct strbuf *out, void *data)
{
    strbuf_append(data, out->data, out->len);
    strbuf_reset(out);
    return 0;
}

/* The consumer's rows: host_id (the subject's, given) first in each. */
static void test_source_writes_host_id(void **state)
{
    (void)state;
    struct js_codec *c = js_codec_new(1);
    struct strbuf body = {0}, msg = {0}, out = {0}, all = {0};
    struct js_payload p, q;
    build(&p, &body);
    encode(c, &p, &body, &msg);
    char err[256];
    assert_int_equal(js_payload_decode(c, msg.data, msg.len, &q, err, sizeof(err)), 0);
    struct central_source src;
    js_payload_source(&src, &q);
    struct local_span span = {.col = 1};
    assert_int_equal(src.copy(src.ctx, LOCAL_PART_EVENTS, 0, 0, "h", &out, 1 << 20, collect, &all, &span, err,
                              sizeof(err)),
                     2);
    assert_true(span.min <= span.max);   /* connections come along */
    /* header 19, then row: count 4, host "h", id, conn_id, raw */
    const unsigned char *d = (const unsigned char *)all.data;
    assert_memory_equal(d, "PGCOPY\n\377\r\n\0", 11);
    assert_int_equal(d[19] << 8 | d[20], 4);
    assert_int_equal(d[21] | d[22] | d[23], 0);
    assert_int_equal(d[24], 1);
    assert_int_equal(d[25], 'h');
    assert_int_equal(d[all.len - 2], 0xff);
    assert_int_equal(d[all.len - 1], 0xff);
    /* A part the message lacks: an empty stream. */
    strbuf_reset(&all);
    assert_int_equal(src.copy(src.ctx, LOCAL_PART_RUNS, 0, 0, "h", &out, 1 << 20, collect, &all, NULL, err,
                              sizeof(err)),
                     0);
    assert_int_equal(all.len, 19 + 2);
    strbuf_free(&body);
    strbuf_free(&msg);
    strbuf_free(&out);
    strbuf_free(&all);
    js_codec_free(c);
}

/* Decoding msg must fail (rc), the reason containing want. */
static void refused(struct js_codec *c, const void *msg, size_t len, int rc, const char *want)
{
    struct js_payload q;
    char err[512] = "";
    assert_int_equal(js_payload_decode(c, msg, len, &q, err, sizeof(err)), rc);
    if (!strstr(err, want))
        fail_msg("expected '%s' in: %s", want, err);
}

/* An uncompressed message with header text h and body b. */
static void raw_message(struct strbuf *out, const char *h, const void *b, size_t blen)
{
    strbuf_reset(out);
    strbuf_puts(out, "seccheck-batch/1 none\n");
    size_t n = strlen(h);
    unsigned char le[4] = {(unsigned char)n, (unsigned char)(n >> 8), (unsigned char)(n >> 16), (unsigned char)(n >> 24)};
    strbuf_append(out, le, 4);
    strbuf_append(out, h, n);
    strbuf_append(out, b, blen);
}

/* Messages whose header is header with one thing changed, each refused
 * for the reason it names; version: the format line's. */
struct header_edit {
    const char *from, *to, *want;
};
static void refused_edits(struct js_codec *c, const char *header, const struct strbuf *body,
                          const struct header_edit *cases, size_t n, int version)
{
    struct strbuf m = {0};
    for (size_t i = 0; i < n; i++) {
        char *at = strstr(header, cases[i].from);
        if (!at)
            fail_msg("case %zu: '%s' not in the header %s", i, cases[i].from, header);
        struct strbuf h = {0};
        strbuf_append(&h, header, (size_t)(at - header));
        strbuf_puts(&h, cases[i].to);
        strbuf_puts(&h, at + strlen(cases[i].from));
        raw_message(&m, h.data, body->data, body->len);
        m.data[15] = (char)('0' + version);
        refused(c, m.data, m.len, -1, cases[i].want);
        strbuf_free(&h);
    }
    strbuf_free(&m);
}

/* Every cut of the message fails cleanly (ASan checks the bounds). */
static void every_cut_refused(struct js_codec *c, const struct strbuf *msg)
{
    for (size_t n = 0; n < msg->len; n++) {
        struct js_payload q;
        char err[256];
        char *copy = malloc(n ? n : 1);
        memcpy(copy, msg->data, n);
        assert_int_not_equal(js_payload_decode(c, copy, n, &q, err, sizeof(err)), 0);
        free(copy);
    }
}

/* The open marks go through; connections_seen, which only the publisher
 * reads back, may be missing (a publisher before it) or wrong: 0, not
 * known, and the message is still read. */
static void test_open_marks(void **state)
{
    (void)state;
    struct js_codec *c = js_codec_new(0);
    struct strbuf body = {0}, msg = {0}, m = {0};
    struct js_payload p, q;
    char err[256] = "";
    build(&p, &body);
    p.open_runs_from = 2;
    p.open_conns_from = 5;
    p.open_conns_seen = 9;
    encode(c, &p, &body, &msg);
    assert_int_equal(js_payload_decode(c, msg.data, msg.len, &q, err, sizeof(err)), 0);
    assert_int_equal(q.open_runs_from, 2);
    assert_int_equal(q.open_conns_from, 5);
    assert_int_equal(q.open_conns_seen, 9);
    uint32_t hlen;
    memcpy(&hlen, msg.data + 22, 4);
    char *header = strndup(msg.data + 26, hlen);
    static const char *const edits[][2] = {
        {",\"connections_seen\":9", ""},
        {"\"connections_seen\":9", "\"connections_seen\":-1"},
        {"\"connections_seen\":9", "\"connections_seen\":\"9\""},
    };
    for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
        char *at = strstr(header, edits[i][0]);
        if (!at)
            fail_msg("'%s' not in the header %s", edits[i][0], header);
        struct strbuf h = {0};
        strbuf_append(&h, header, (size_t)(at - header));
        strbuf_puts(&h, edits[i][1]);
        strbuf_puts(&h, at + strlen(edits[i][0]));
        raw_message(&m, h.data, body.data, body.len);
        assert_int_equal(js_payload_decode(c, m.data, m.len, &q, err, sizeof(err)), 0);
        assert_int_equal(q.open_conns_from, 5);
        assert_int_equal(q.open_conns_seen, 0);
        strbuf_free(&h);
    }
    free(header);
    strbuf_free(&body);
    strbuf_free(&msg);
    strbuf_free(&m);
    js_codec_free(c);
}

static void test_format_line(void **state)
{
    (void)state;
    struct js_codec *c = js_codec_new(1);
    refused(c, "", 0, -1, "not a seccheckd batch message");
    refused(c, "GET / HTTP/1.1\r\n", 16, -1, "not a seccheckd batch message");
    refused(c, "seccheck-batch/3 zstd\nxxxx", 26, -2,
            "seccheck-batch/3, which this release cannot read (it reads seccheck-batch/1 and seccheck-batch/2)");
    refused(c, "seccheck-batch/2 lz4\nxxxx", 25, -2, "format seccheck-batch/2 compressed with 'lz4'");
    refused(c, "seccheck-batch/2 zstd\nnot a frame", 33, -1, "not one zstd frame");
    refused(c, "seccheck-batch/1 lz4\nxxxx", 25, -2, "compressed with 'lz4'");
    refused(c, "seccheck-batch/1 zstd\nnot a frame", 33, -1, "not one zstd frame");
    js_codec_free(c);
}

/* A zstd frame that declares more than a message may hold is refused
 * before anything is allocated for it; one with bytes after it too. */
static void test_decompression_bounds(void **state)
{
    (void)state;
    struct js_codec *c = js_codec_new(1);
    size_t big = (size_t)JS_BODY_MAX + JS_HEADER_MAX + 16;
    char *zeros = calloc(1, big);
    size_t cap = ZSTD_compressBound(big);
    struct strbuf m = {0};
    strbuf_puts(&m, "seccheck-batch/1 zstd\n");
    char *frame = malloc(cap);
    size_t n = ZSTD_compress(frame, cap, zeros, big, 1);
    assert_false(ZSTD_isError(n));
    strbuf_append(&m, frame, n);
    refused(c, m.data, m.len, -1, "not one zstd frame declaring at most");
    /* A valid small frame followed by junk. */
    strbuf_reset(&m);
    strbuf_puts(&m, "seccheck-batch/1 zstd\n");
    n = ZSTD_compress(frame, cap, zeros, 100, 1);
    strbuf_append(&m, frame, n);
    strbuf_append(&m, "junk", 4);
    refused(c, m.data, m.len, -1, "not one zstd frame");
    free(frame);
    free(zeros);
    strbuf_free(&m);
    js_codec_free(c);
}

static void test_hostile_headers(void **state)
{
    (void)state;
    struct js_codec *c = js_codec_new(0);
    struct strbuf m = {0};
    /* header length past the end */
    strbuf_puts(&m, "seccheck-batch/1 none\n\xff\xff\x00\x00{}");
    refused(c, m.data, m.len, -1, "header length");
    raw_message(&m, "{not json", "", 0);
    refused(c, m.data, m.len, -1, "header:");
    raw_message(&m, "{\"host\":\"a\",\"host\":\"b\"}", "", 0);
    refused(c, m.data, m.len, -1, "header:");   /* duplicate keys */
    raw_message(&m, "{\"host\":\"a.b\"}", "", 0);
    refused(c, m.data, m.len, -1, "names no host id");   /* '.' is never in a token */
    raw_message(&m, "{\"host\":\"a%2\"}", "", 0);
    refused(c, m.data, m.len, -1, "names no host id");
    js_codec_free(c);
    strbuf_free(&m);
}

/* The encoder's header with one thing changed. */
static void test_hostile_fields(void **state)
{
    (void)state;
    struct js_codec *c = js_codec_new(0);
    struct strbuf body = {0}, msg = {0}, m = {0};
    struct js_payload p;
    build(&p, &body);
    encode(c, &p, &body, &msg);
    uint32_t hlen;
    memcpy(&hlen, msg.data + 22, 4);
    char *header = strndup(msg.data + 26, hlen);
    static const struct header_edit cases[] = {
        {"\"events\":2", "\"events\":-2", "batch 1 of the header"},
        {"\"id\":7,", "\"id\":0,", "batch 1 of the header"},
        {"\"first\":100", "\"first\":102", "batch 1 of the header"},   /* first > last */
        {"\"kind\":\"batches\"", "\"kind\":\"other\"", "kind 'other'"},
        {"\"at_batch\":7", "\"at_batch\":9", "at_batch 9"},
        {"\"rows\":2", "\"rows\":3", "section events: 2 rows where the header says 3"},
        {"[\"raw\",\"blob\"]", "[\"raw\",\"blob\"],[\"x\",\"int\"]", "section events: row 1 has 3 fields where its table has 4"},
        {"[\"raw\",\"blob\"]", "[\"r aw\",\"blob\"]", "is not [name, kind]"},
        {"[\"raw\",\"blob\"]", "[\"raw\",\"pointer\"]", "is not [name, kind]"},
        {"\"events\":[[\"id\"", "\"evil\":[[\"id\"", "table 'evil'"},
        {"{\"part\":\"alerts\"", "{\"part\":\"events\"", "not a known part after the one before"},
    };
    refused_edits(c, header, &body, cases, sizeof(cases) / sizeof(cases[0]), 1);
    /* A section's field length past its end, and bytes after the trailer. */
    struct strbuf bad = {0};
    strbuf_append(&bad, body.data, body.len);
    bad.data[p.sections[LOCAL_PART_EVENTS].off + 19 + 2] = 0x7f;   /* the first field's length */
    raw_message(&m, header, bad.data, bad.len);
    refused(c, m.data, m.len, -1, "runs past the section");
    raw_message(&m, header, body.data, body.len - 1);
    refused(c, m.data, m.len, -1, "section 4: not a known part after the one before, or its rows or bytes");
    strbuf_reset(&bad);
    strbuf_append(&bad, body.data, body.len);
    strbuf_puts(&bad, "extra");
    raw_message(&m, header, bad.data, bad.len);
    refused(c, m.data, m.len, -1, "after the last section");
    every_cut_refused(c, &msg);
    free(header);
    strbuf_free(&bad);
    strbuf_free(&body);
    strbuf_free(&msg);
    strbuf_free(&m);
    js_codec_free(c);
}

/* A hostname longer than the consumer keeps is cut at a character's
 * start: half a character is not UTF-8, PostgreSQL would refuse it, and
 * with it every message of the fetch, again and again. */
static void test_long_hostname(void **state)
{
    (void)state;
    struct js_codec *c = js_codec_new(0);
    struct strbuf body = {0}, msg = {0}, m = {0}, h = {0}, name = {0};
    struct js_payload p, q;
    build(&p, &body);
    encode(c, &p, &body, &msg);
    uint32_t hlen;
    memcpy(&hlen, msg.data + 22, 4);
    char *header = strndup(msg.data + 26, hlen);
    const char *from = "\"hostname\":\"node-1\"";
    char *at = strstr(header, from);
    assert_non_null(at);
    for (int shift = 0; shift < 3; shift++) {   /* the cut lands on each byte of a 2-byte character */
        strbuf_reset(&name);
        for (int i = 0; i < shift; i++)
            strbuf_putc(&name, 'x');
        for (int i = 0; i < 200; i++)
            strbuf_puts(&name, "\xc3\xa9");   /* U+00E9 */
        strbuf_reset(&h);
        strbuf_append(&h, header, (size_t)(at - header));
        strbuf_printf(&h, "\"hostname\":\"%s\"", name.data);
        strbuf_puts(&h, at + strlen(from));
        raw_message(&m, h.data, body.data, body.len);
        char err[256] = "";
        assert_int_equal(js_payload_decode(c, m.data, m.len, &q, err, sizeof(err)), 0);
        size_t n = strlen(q.hostname);
        assert_true(n >= sizeof(q.hostname) - 2 && n < sizeof(q.hostname));
        assert_true(utf8_valid(q.hostname, n));
        assert_memory_equal(q.hostname, name.data, n);
    }
    free(header);
    strbuf_free(&body);
    strbuf_free(&msg);
    strbuf_free(&m);
    strbuf_free(&h);
    strbuf_free(&name);
    js_codec_free(c);
}

/* ---- version 2: events as their chained columns, decoded by the consumer ---- */

/* The daemon's events table: the chained columns and every decoded one
 * (dropped_count declared text when odd: a value the consumer renders the
 * SQLite way, as local_render_value converts it). */
static void events_table(struct local_table *t, bool odd)
{
    t->ncols = 0;
    column(t, "id", LOCAL_INT);
    column(t, "conn_id", LOCAL_INT);
    column(t, "recv_ns", LOCAL_INT);
    column(t, "msg_type", LOCAL_INT);
    for (int i = 0; i < REDECODE_COLUMNS; i++)
        column(t, redecode_columns[i].name, odd && i == 0                               ? LOCAL_TEXT
                                            : redecode_columns[i].kind == REDECODE_INT    ? LOCAL_INT
                                            : redecode_columns[i].kind == REDECODE_TEXT ? LOCAL_TEXT
                                                                                        : LOCAL_JSON);
    column(t, "raw", LOCAL_BLOB);
}

/* Packet 100: a valid header (message type 3, 9 drops) and a payload no
 * decoder reads, as a hostile sandbox sends it: the daemon stores it with
 * decode_error. Packet 101: no valid header (only an edited database
 * holds one). */
static const uint8_t hostile_payload[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x12};

static void packet(uint8_t *out, size_t *len, int id)
{
    if (id == 100) {
        wire_header_write(out, 3, 9);
        memcpy(out + WIRE_HEADER_MIN, hostile_payload, sizeof(hostile_payload));
        *len = WIRE_HEADER_MIN + sizeof(hostile_payload);
    } else {
        memcpy(out, "xy", 2);
        *len = 2;
    }
}

/* build()'s message as version 2: events 100 and 101 as chained columns,
 * rows below v2_first in version 1's form. */
static void build_v2(struct js_payload *p, struct strbuf *body, int64_t v2_first, bool odd)
{
    build(p, body);
    events_table(&p->tables.events, odd);
    p->chained_events = true;
    p->v2_first_event_id = v2_first;
    struct strbuf rest = {0};
    size_t events_end = p->sections[LOCAL_PART_EVENTS].off + p->sections[LOCAL_PART_EVENTS].len;
    strbuf_append(&rest, body->data + events_end, body->len - events_end);
    strbuf_reset(body);
    copy_binary_header(body);
    for (int id = 100; id <= 101; id++) {
        uint8_t raw[64];
        size_t len;
        packet(raw, &len, id);
        copy_binary_row(body, JS_CHAINED_COLUMNS);
        copy_binary_int8(body, id);
        copy_binary_int8(body, 5);
        copy_binary_int8(body, 1000 + id);
        copy_binary_int8(body, 3);
        copy_binary_bytea(body, raw, len);
    }
    copy_binary_trailer(body);
    size_t delta = body->len - p->sections[LOCAL_PART_EVENTS].len;
    p->sections[LOCAL_PART_EVENTS].len = body->len;
    for (int i = LOCAL_PART_EVENTS + 1; i < LOCAL_PARTS; i++)
        if (p->sections[i].present)
            p->sections[i].off += delta;
    strbuf_append(body, rest.data, rest.len);
    strbuf_free(&rest);
}

/* Field col of the row-th row of a binary COPY stream: its length (-1
 * NULL) and bytes. */
static int32_t copy_field(const struct strbuf *all, int row, int col, const unsigned char **at)
{
    const unsigned char *d = (const unsigned char *)all->data + 19;
    for (int r = 0;; r++) {
        int n = d[0] << 8 | d[1];
        d += 2;
        for (int f = 0; f < n; f++) {
            int32_t len = (int32_t)((uint32_t)d[0] << 24 | (uint32_t)d[1] << 16 | (uint32_t)d[2] << 8 | d[3]);
            if (r == row && f == col) {
                *at = d + 4;
                return len;
            }
            d += 4 + (len < 0 ? 0 : len);
        }
    }
}

/* What the consumer writes for each decoded column is the daemon's value
 * for that packet (event_redecode), rendered as the direct forwarder
 * renders the stored one; chained columns as they came; version 1's form
 * below v2_first_event_id; a raw without a header NULL. */
static void test_v2_decodes_events(void **state)
{
    (void)state;
    for (int round = 0; round < 3; round++) {
        int64_t v2_first = round == 1 ? 101 : 1;
        bool odd = round == 2;
        struct js_codec *c = js_codec_new(1);
        struct strbuf body = {0}, msg = {0}, out = {0}, all = {0}, want = {0};
        struct js_payload p, q;
        build_v2(&p, &body, v2_first, odd);
        encode(c, &p, &body, &msg);
        assert_memory_equal(msg.data, "seccheck-batch/2 zstd\n", 22);
        char err[256] = "";
        assert_int_equal(js_payload_decode(c, msg.data, msg.len, &q, err, sizeof(err)), 0);
        assert_true(q.chained_events);
        assert_int_equal(q.v2_first_event_id, v2_first);
        struct central_source src;
        js_payload_source(&src, &q);
        struct local_span span = {.col = 1};
        assert_int_equal(src.copy(src.ctx, LOCAL_PART_EVENTS, 0, 0, "h", &out, 1 << 20, collect, &all, &span, err,
                                  sizeof(err)),
                         2);
        struct event_redecoder r;
        assert_int_equal(event_redecoder_init(&r, err, sizeof(err)), 0);
        const struct local_table *t = &q.tables.events;
        for (int row = 0; row < 2; row++) {
            uint8_t raw[64];
            size_t len;
            packet(raw, &len, 100 + row);
            bool v1 = 100 + row < v2_first;
            sqlite3_stmt *st = event_redecode(&r, raw, len, v1);
            assert_true(row == 0 ? st != NULL : st == NULL);
            const unsigned char *f;
            assert_int_equal(copy_field(&all, row, 0, &f), 1);   /* host_id */
            for (int i = 0; i < t->ncols; i++) {
                int32_t flen = copy_field(&all, row, 1 + i, &f);
                int rc = -1;
                for (int k = 0; k < REDECODE_COLUMNS; k++)
                    if (strcmp(redecode_columns[k].name, t->cols[i].name) == 0)
                        rc = k;
                strbuf_reset(&want);
                if (rc < 0) {   /* chained: as built */
                    if (strcmp(t->cols[i].name, "raw") == 0)
                        copy_binary_bytea(&want, raw, len);
                    else
                        copy_binary_int8(&want, strcmp(t->cols[i].name, "id") == 0        ? 100 + row
                                                : strcmp(t->cols[i].name, "conn_id") == 0 ? 5
                                                : strcmp(t->cols[i].name, "recv_ns") == 0 ? 1100 + row
                                                                                          : 3);
                } else if (!st || (v1 && rc >= REDECODE_V2_FIRST && rc <= REDECODE_V2_LAST)) {
                    copy_binary_null(&want);
                } else {
                    assert_int_equal(local_render_value(&want, st, v1 && rc == REDECODE_DETAIL ? REDECODE_WHOLE_DETAIL
                                                                                             : rc,
                                                        t->cols[i].kind),
                                     0);
                }
                int32_t wlen = (int32_t)((uint32_t)(unsigned char)want.data[0] << 24 |
                                         (uint32_t)(unsigned char)want.data[1] << 16 |
                                         (uint32_t)(unsigned char)want.data[2] << 8 | (unsigned char)want.data[3]);
                if (flen != wlen || (flen > 0 && memcmp(f, want.data + 4, (size_t)flen) != 0))
                    fail_msg("row %d column %s: %d bytes where %d are expected", row, t->cols[i].name, flen, wlen);
                if (row == 0 && strcmp(t->cols[i].name, "decode_error") == 0)
                    assert_true(flen > 0);   /* the hostile payload is named */
                if (row == 0 && strcmp(t->cols[i].name, "dropped_count") == 0) {
                    if (odd)
                        assert_memory_equal(f, "9", 1);
                    else
                        assert_int_equal(f[7], 9);
                }
            }
        }
        event_redecoder_free(&r);
        strbuf_free(&body);
        strbuf_free(&msg);
        strbuf_free(&out);
        strbuf_free(&all);
        strbuf_free(&want);
        js_codec_free(c);
    }
}

/* A version 2 message a compromised host edited: each refused by name. */
static void test_v2_hostile(void **state)
{
    (void)state;
    struct js_codec *c = js_codec_new(0);
    struct strbuf body = {0}, msg = {0}, m = {0};
    struct js_payload p;
    build_v2(&p, &body, 1, false);
    encode(c, &p, &body, &msg);
    uint32_t hlen;
    memcpy(&hlen, msg.data + 22, 4);
    char *header = strndup(msg.data + 26, hlen);
    static const struct header_edit cases[] = {
        {"\"v2_first_event_id\":1", "\"v2_first_event_id\":0", "v2_first_event_id missing"},
        {"[\"raw\",\"blob\"]", "[\"raw\",\"text\"]", "neither chained (of their kind) nor decoded"},
        {"[\"cwd\",\"text\"]", "[\"not_decoded\",\"text\"]", "neither chained (of their kind) nor decoded"},
        {"[\"recv_ns\",\"int\"],", "", "neither chained (of their kind) nor decoded"},
    };
    refused_edits(c, header, &body, cases, sizeof(cases) / sizeof(cases[0]), 2);
    /* An id of 4 bytes, a NULL raw: the chained fields are checked. */
    struct strbuf bad = {0};
    size_t first = p.sections[LOCAL_PART_EVENTS].off + 19 + 2;
    strbuf_append(&bad, body.data, body.len);
    bad.data[first + 3] = 4;
    raw_message(&m, header, bad.data, bad.len);
    memcpy(m.data, "seccheck-batch/2", 16);
    refused(c, m.data, m.len, -1, "row 1 field 1 is of another length where 8 bytes are expected");
    strbuf_reset(&bad);
    strbuf_append(&bad, body.data, body.len);
    memset(bad.data + first + 4 * 12, 0xff, 4);   /* raw's length: NULL (its bytes then misread) */
    raw_message(&m, header, bad.data, bad.len);
    memcpy(m.data, "seccheck-batch/2", 16);
    refused(c, m.data, m.len, -1, "row 1 field 5 is NULL");
    /* Version 1 with version 2's events section: the field counts differ. */
    raw_message(&m, header, body.data, body.len);
    refused(c, m.data, m.len, -1, "row 1 has 5 fields where its table has 29 columns");
    every_cut_refused(c, &msg);
    free(header);
    strbuf_free(&bad);
    strbuf_free(&body);
    strbuf_free(&msg);
    strbuf_free(&m);
    js_codec_free(c);
}

static void test_subjects(void **state)
{
    (void)state;
    char token[JS_TOKEN_MAX + 1], back[HOST_ID_MAX + 1];
    assert_int_equal(js_subject_token("0123abcdef", token, sizeof(token)), 0);
    assert_string_equal(token, "0123abcdef");
    assert_int_equal(js_subject_token("node1.example.com", token, sizeof(token)), 0);
    assert_string_equal(token, "node1%2Eexample%2Ecom");
    assert_int_equal(js_subject_token("a*b>c%d\xc3\xa9", token, sizeof(token)), 0);
    assert_string_equal(token, "a%2Ab%3Ec%25d%C3%A9");
    assert_int_equal(js_subject_host(token, strlen(token), back), 0);
    assert_string_equal(back, "a*b>c%d\xc3\xa9");
    assert_int_equal(js_subject_token("x", token, 2), 0);
    assert_int_equal(js_subject_token("xy", token, 2), -1);
    /* What the encoder never writes is not a token. */
    assert_int_equal(js_subject_host("a%2e", 4, back), -1);    /* lower case */
    assert_int_equal(js_subject_host("a%41", 4, back), -1);    /* 'A' needs no escape */
    assert_int_equal(js_subject_host("a%20", 4, back), -1);    /* a space is no host id's */
    assert_int_equal(js_subject_host("a%4", 3, back), -1);
    assert_int_equal(js_subject_host("", 0, back), -1);
    /* FNV-1a 64: stable values, the publisher's and the consumer's. */
    assert_int_equal(js_partition_of("host-a", 1), 0);
    unsigned counts[4] = {0};
    for (int i = 0; i < 400; i++) {
        char id[16];
        snprintf(id, sizeof(id), "host-%d", i);
        counts[js_partition_of(id, 4)]++;
        assert_int_equal(js_partition_of(id, 4), js_partition_of(id, 4));
    }
    for (int k = 0; k < 4; k++)
        assert_true(counts[k] > 60);   /* spread, roughly evenly */
    assert_int_equal(js_partition_of("a", 1000), 0xaf63dc4c8601ec8cull % 1000);
}

static void test_forward_wanted(void **state)
{
    (void)state;
    char *a[] = {"forward", "--db", "x", "--to", "nats://h:4222"};
    char *b[] = {"forward", "--to", "postgresql:///db"};
    char *c[] = {"forward", "--to=tls://h:4222,tls://g:4222"};
    char *d[] = {"forward", "--to", "nats://h:1", "--to", "postgresql:///x"};
    assert_true(jetstream_forward_wanted(5, a));
    assert_false(jetstream_forward_wanted(3, b));
    assert_true(jetstream_forward_wanted(2, c));
    assert_false(jetstream_forward_wanted(5, d));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),         cmocka_unit_test(test_source_writes_host_id),
        cmocka_unit_test(test_open_marks),
        cmocka_unit_test(test_format_line),        cmocka_unit_test(test_decompression_bounds),
        cmocka_unit_test(test_hostile_headers),    cmocka_unit_test(test_hostile_fields),
        cmocka_unit_test(test_long_hostname),
        cmocka_unit_test(test_subjects),           cmocka_unit_test(test_forward_wanted),
        cmocka_unit_test(test_v2_decodes_events),  cmocka_unit_test(test_v2_hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
