/* fuzz_jetstream.c - the fleet stream's message decoder under libFuzzer
 * (seccheck_fuzz_jetstream) and its corpus replay (fuzz_jetstream_regression,
 * ctest fuzz.jetstream_regression).
 *
 * An input is one message as `central` takes it from the stream: bytes a
 * compromised host may publish on its own subjects. Invariants (a violation
 * abort()s):
 * - js_payload_decode returns 0, -1 or -2, and a refusal says why.
 * - A message it accepts is whole: a kind with the batches it allows, a host
 *   id that makes a subject token, a hostname of valid UTF-8 (PostgreSQL
 *   takes it), sections that follow one another in part order and cover the
 *   body, the four tables a database always has, and for version 2 events
 *   columns the consumer can decode.
 * - Every part ships (js_payload_source, as central_apply reads it) as one
 *   binary COPY stream: the signature, each row its table's columns plus the
 *   host id first, as many rows as the header says, the trailer last. Only a
 *   version 2 events value the column's kind cannot hold may refuse it.
 * - Encoded again (no compression) and decoded, it is the same message:
 *   every header field, every table's columns, every section, the body.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_harness.h"
#include "jetstream.h"
#include "json.h"

#define CHECK FUZZ_CHECK

#define FUZZ_HOST "host-fuzz"
#define COPY_SIGNATURE "PGCOPY\n\377\r\n\0"
#define COPY_SIGNATURE_LEN 11

static struct js_codec *decoder, *encoder, *again;
static struct strbuf message, shipped, chunk;

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static void check_decoded(const struct js_payload *p)
{
    CHECK(p->kind == JS_KIND_BATCHES || p->kind == JS_KIND_CHUNK || p->kind == JS_KIND_SYNC);
    CHECK(p->nbatches >= 0 && p->nbatches <= JS_BATCHES_MAX);
    CHECK(p->kind != JS_KIND_BATCHES || p->nbatches >= 1);
    CHECK(p->kind != JS_KIND_CHUNK || p->nbatches == 1);
    CHECK(p->kind != JS_KIND_SYNC || p->nbatches == 0);
    char token[JS_TOKEN_MAX + 1];
    CHECK(p->host_id[0] && js_subject_token(p->host_id, token, sizeof(token)) == 0);
    size_t hostlen = strnlen(p->hostname, sizeof(p->hostname));
    CHECK(hostlen < sizeof(p->hostname) && utf8_valid(p->hostname, hostlen));
    size_t at = 0;
    for (int i = 0; i < LOCAL_PARTS; i++) {
        const struct js_section *s = &p->sections[i];
        if (!s->present)
            continue;
        CHECK(s->off == at && s->len <= p->body_len - at && s->rows >= 0);
        CHECK(local_part_table(&p->tables, (enum local_part)i) != NULL);
        at += s->len;
    }
    CHECK(at == p->body_len);
    const struct local_table *always[] = {&p->tables.events, &p->tables.runs, &p->tables.connections,
                                          &p->tables.batches};
    for (size_t i = 0; i < sizeof(always) / sizeof(always[0]); i++)
        CHECK(always[i]->ncols >= 1 && always[i]->ncols <= LOCAL_MAX_COLUMNS);
    CHECK(p->kind == JS_KIND_SYNC || p->sections[LOCAL_PART_EVENTS].present);
    CHECK(!p->chained_events || (js_events_decodable(&p->tables.events) && p->v2_first_event_id >= 1));
}

static int keep_chunk(struct strbuf *out, void *data)
{
    struct strbuf *all = data;
    strbuf_append(all, out->data, out->len);
    strbuf_reset(out);
    return all->failed ? -1 : 0;
}

/* One shipped COPY stream: its rows, each ncols + 1 fields, host id first. */
static int64_t walk_shipped(const uint8_t *q, size_t len, int ncols)
{
    CHECK(len >= COPY_SIGNATURE_LEN + 8 + 2 && memcmp(q, COPY_SIGNATURE, COPY_SIGNATURE_LEN) == 0);
    CHECK(be32(q + COPY_SIGNATURE_LEN) == 0 && be32(q + COPY_SIGNATURE_LEN + 4) == 0);
    const uint8_t *end = q + len;
    q += COPY_SIGNATURE_LEN + 8;
    int64_t rows = 0;
    for (;;) {
        CHECK(end - q >= 2);
        uint16_t fields = be16(q);
        q += 2;
        if (fields == 0xffff)
            break;
        CHECK(fields == ncols + 1);
        for (int f = 0; f < fields; f++) {
            CHECK(end - q >= 4);
            uint32_t flen = be32(q);
            q += 4;
            if (flen == 0xffffffffu) {
                CHECK(f > 0);
                continue;
            }
            CHECK(flen <= (size_t)(end - q));
            if (f == 0)
                CHECK(flen == strlen(FUZZ_HOST) && memcmp(q, FUZZ_HOST, flen) == 0);
            q += flen;
        }
        rows++;
    }
    CHECK(q == end);
    return rows;
}

static void ship_every_part(struct js_payload *p)
{
    struct central_source src;
    js_payload_source(&src, p);
    for (int part = 0; part < LOCAL_PARTS; part++) {
        const struct local_table *t = local_part_table(&p->tables, (enum local_part)part);
        struct local_span span = {.col = 0};
        char err[512] = "";
        strbuf_reset(&chunk);
        strbuf_reset(&shipped);
        int64_t rows = src.copy(src.ctx, (enum local_part)part, 0, 0, FUZZ_HOST, &chunk, 4096, keep_chunk,
                                &shipped, &span, err, sizeof(err));
        if (rows < 0) {   /* a decoded value its column cannot hold: the consumer refuses the message */
            CHECK(rows == -1 && err[0] && part == LOCAL_PART_EVENTS && p->chained_events);
            continue;
        }
        CHECK(rows == (p->sections[part].present ? p->sections[part].rows : 0));
        CHECK(!shipped.failed && chunk.len == 0);
        int64_t walked = walk_shipped((const uint8_t *)shipped.data, shipped.len, t ? t->ncols : 0);
        CHECK(walked == rows);
    }
}

static bool same_tables(const struct local *a, const struct local *b)
{
    const struct local_table *ta[] = {&a->events, &a->batches, &a->runs, &a->connections, &a->alerts,
                                      &a->container_info};
    const struct local_table *tb[] = {&b->events, &b->batches, &b->runs, &b->connections, &b->alerts,
                                      &b->container_info};
    for (size_t i = 0; i < sizeof(ta) / sizeof(ta[0]); i++) {
        if (ta[i]->ncols != tb[i]->ncols)
            return false;
        for (int c = 0; c < ta[i]->ncols; c++)
            if (strcmp(ta[i]->cols[c].name, tb[i]->cols[c].name) != 0 || ta[i]->cols[c].kind != tb[i]->cols[c].kind)
                return false;
    }
    return a->has_alerts == b->has_alerts && a->has_container_info == b->has_container_info;
}

static bool same_batch(const struct local_batch *a, const struct local_batch *b)
{
    return a->id == b->id && a->run_id == b->run_id && a->first == b->first && a->last == b->last &&
           a->events == b->events && a->committed_ns == b->committed_ns && a->keyed == b->keyed &&
           a->has_range == b->has_range && memcmp(a->prev, b->prev, CHAIN_HASH_LEN) == 0 &&
           memcmp(a->hash, b->hash, CHAIN_HASH_LEN) == 0;
}

static void round_trip(const struct js_payload *p)
{
    char err[512] = "";
    if (js_payload_encode(encoder, p, p->body, p->body_len, &message, err, sizeof(err)) != 0) {
        /* Only a header at the limit that grew by the fields it left out. */
        CHECK(strstr(err, "message too large"));
        return;
    }
    struct js_payload q;
    CHECK(js_payload_decode(again, message.data, message.len, &q, err, sizeof(err)) == 0);
    CHECK(q.kind == p->kind && strcmp(q.host_id, p->host_id) == 0 && strcmp(q.hostname, p->hostname) == 0);
    CHECK(q.nbatches == p->nbatches);
    for (int i = 0; i < p->nbatches; i++)
        CHECK(same_batch(&q.batches[i], &p->batches[i]));
    if (p->kind == JS_KIND_CHUNK)
        CHECK(q.chunk.index == p->chunk.index && q.chunk.final == p->chunk.final && q.next_event == p->next_event);
    CHECK(q.at_batch == p->at_batch && memcmp(q.at_hash, p->at_hash, CHAIN_HASH_LEN) == 0);
    CHECK(q.gap_from == p->gap_from && q.names_id == p->names_id);
    CHECK(q.open_runs_from == p->open_runs_from && q.open_conns_from == p->open_conns_from &&
          q.open_conns_seen == p->open_conns_seen);
    CHECK(same_tables(&q.tables, &p->tables));
    CHECK(q.chained_events == p->chained_events && (!p->chained_events || q.v2_first_event_id == p->v2_first_event_id));
    for (int i = 0; i < LOCAL_PARTS; i++)
        CHECK(q.sections[i].present == p->sections[i].present && q.sections[i].rows == p->sections[i].rows &&
              q.sections[i].off == p->sections[i].off && q.sections[i].len == p->sections[i].len);
    CHECK(q.body_len == p->body_len && (p->body_len == 0 || memcmp(q.body, p->body, p->body_len) == 0));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!decoder) {
        decoder = js_codec_new(3);
        encoder = js_codec_new(0);
        again = js_codec_new(0);
        CHECK(decoder && encoder && again);
    }
    struct js_payload p;
    char err[512] = "";
    int rc = js_payload_decode(decoder, data, size, &p, err, sizeof(err));
    CHECK(rc == 0 || rc == -1 || rc == -2);
    if (rc != 0) {
        CHECK(err[0] != '\0' && memchr(err, '\0', sizeof(err)));
        return 0;
    }
    check_decoded(&p);
    ship_every_part(&p);
    round_trip(&p);
    return 0;
}

int fuzz_harness_finish(void)
{
    js_codec_free(decoder);
    js_codec_free(encoder);
    js_codec_free(again);
    decoder = encoder = again = NULL;
    strbuf_free(&message);
    strbuf_free(&shipped);
    strbuf_free(&chunk);
    return 0;
}
