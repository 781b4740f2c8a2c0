/* sink_ndjson.c - one JSON object per event (event_json.h), one line each,
 * for log shippers (Fluent Bit, Vector, an OpenTelemetry collector) that
 * tail the file or read standard output.
 *
 * Runs on the writer thread. Each line is rendered into a reused buffer and
 * the batch goes out in one write (line_writer.h), so a tailing shipper sees
 * events within --flush-ms and steady state allocates nothing.
 */
#include <stdio.h>
#include <stdlib.h>

#include "event_json.h"
#include "line_writer.h"
#include "sink.h"

struct ndjson_sink {
    struct sink base;
    struct line_writer out;
    struct strbuf line;
};

static void ndjson_write_batch(struct sink *base, struct batch *b)
{
    struct ndjson_sink *s = (struct ndjson_sink *)base;
    for (size_t i = 0; i < b->count; i++) {
        strbuf_reset(&s->line);
        if (event_json_render(&s->line, &b->events[i]) != 0)
            line_writer_lost(&s->out, &b->result, "out of memory rendering JSON");
        else
            line_writer_add(&s->out, s->line.data, s->line.len, &b->result);
    }
    line_writer_flush(&s->out, &b->result);
}

static void ndjson_close(struct sink *base)
{
    struct ndjson_sink *s = (struct ndjson_sink *)base;
    line_writer_close(&s->out);
    strbuf_free(&s->line);
    free(s);
}

static const struct sink_ops ndjson_ops = {
    .name = "ndjson",
    .needs_writer_thread = true,
    .write_batch = ndjson_write_batch,
    .close = ndjson_close,
};

struct sink *sink_ndjson_open(const struct sink_ndjson_options *opts, char *err, size_t errlen)
{
    struct ndjson_sink *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (line_writer_open(&s->out, "ndjson", opts->path, opts->max_bytes, opts->keep, &s->base.cut_off, err,
                         errlen) != 0) {
        free(s);
        return NULL;
    }
    s->base.ops = &ndjson_ops;
    s->base.first_conn_id = 1;
    return &s->base;
}
