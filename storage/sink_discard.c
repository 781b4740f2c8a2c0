/* sink_discard.c - counts every event as discarded and stores nothing:
 * the full receive and decode path with no storage cost. */
#include <stdlib.h>

#include "sink.h"

static void discard_write_batch(struct sink *s, struct batch *b)
{
    (void)s;
    b->result.discarded = b->count;
}

static void discard_close(struct sink *s) { free(s); }

static const struct sink_ops discard_ops = {
    .name = "discard",
    .needs_writer_thread = false,
    .write_batch = discard_write_batch,
    .close = discard_close,
};

struct sink *sink_discard_open(void)
{
    struct sink *s = calloc(1, sizeof(*s));
    if (s) {
        s->ops = &discard_ops;
        s->first_conn_id = 1;
    }
    return s;
}
