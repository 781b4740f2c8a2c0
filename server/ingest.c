#include "ingest.h"

#include <inttypes.h>

#include "log.h"
#include "wire.h"

static void reject(struct batch *b, struct conn_record *rec, enum reject_reason why)
{
    b->counts.rejected[why]++;
    rec->rejected++;
}

uint64_t ingest_drop_allowance(const struct conn_record *rec, int64_t recv_ns)
{
    int64_t since = rec->connect_ns;   /* no drops before it, and the bound while nothing was read empty */
    if (rec->drops_since_ns && rec->drops_since_ns - INGEST_DROP_STALE_NS > since)
        since = rec->drops_since_ns - INGEST_DROP_STALE_NS;
    return recv_ns > since ? (uint64_t)(recv_ns - since) / INGEST_DROP_NS_EACH : 0;
}

/* dropped_count is cumulative and wraps at 2^32 (ingest.h has the bound):
 * a count that went back, or jumped past what the sandbox could have
 * dropped, is not added (one packet could claim ~2^32 drops) but counted
 * as an anomaly. */
static void track_drops(struct conn_record *rec, uint32_t dropped_count, int64_t recv_ns)
{
    uint32_t last = rec->last_dropped_count, delta = wire_dropped_delta(last, dropped_count);
    bool back = dropped_count < last && last - dropped_count < (1u << 31);
    bool counted = !back && delta <= ingest_drop_allowance(rec, recv_ns);
    if (counted)
        rec->sandbox_dropped += delta;
    else
        rec->dropped_count_regressions++;
    if (counted && delta && (!rec->drops_logged_ns || recv_ns - rec->drops_logged_ns >= INGEST_DROP_LOG_NS)) {
        /* the first line says this header's drops (a record handed over
         * by a restart starts a fresh count), later ones all since */
        uint64_t since = rec->drops_logged_ns ? rec->sandbox_dropped - rec->drops_logged : delta;
        log_warn("connection %" PRIu64 " (peer pid %" PRId64 "): the sandbox dropped %" PRIu64 " events%s (%" PRIu64
                 " in all): its socket buffer was full; raise net.core.wmem_default or gvisor-config --retries, "
                 "or enable fewer points", rec->id, rec->peer_pid, since,
                 rec->drops_logged_ns ? " since the previous warning" : "", rec->sandbox_dropped);
        rec->drops_logged_ns = recv_ns;
        rec->drops_logged = rec->sandbox_dropped;
    }
    rec->last_dropped_count = dropped_count;
    rec->drops_since_ns = rec->emptied_ns;
}

void ingest_drop(struct ingest *in, struct conn_record *rec, size_t len)
{
    rec->messages++;
    rec->bytes += len;
    struct batch *b = pipeline_current(in->pipeline);
    b->counts.received++;
    reject(b, rec, REJECT_QUEUE_FULL);
}

int ingest_packet(struct ingest *in, struct conn_record *rec, const uint8_t *pkt, size_t len, bool truncated,
                  int64_t recv_ns)
{
    rec->messages++;
    rec->bytes += len;
    struct batch *b = pipeline_current(in->pipeline);
    if (!batch_has_room(b, len)) {
        if (in->drop_when_full && pipeline_exhausted(in->pipeline)) {
            b->counts.received++;
            reject(b, rec, REJECT_QUEUE_FULL);
            return 0;
        }
        if (pipeline_seal(in->pipeline) != 0) {
            b->counts.received++;
            reject(b, rec, REJECT_NO_MEMORY);
            return -1;
        }
        b = pipeline_current(in->pipeline);
    }
    b->counts.received++;

    struct wire_header header;
    if (truncated) {
        reject(b, rec, REJECT_OVERSIZE);
        return 0;
    }
    switch (wire_header_parse(pkt, len, &header)) {
    case WIRE_OK:
        break;
    case WIRE_SHORT_PACKET:
        reject(b, rec, REJECT_SHORT_PACKET);
        return 0;
    case WIRE_BAD_HEADER_SIZE:
        reject(b, rec, REJECT_BAD_HEADER);
        return 0;
    }
    track_drops(rec, header.dropped_count, recv_ns);
    if (in->by_type)
        in->by_type[header.message_type <= DECODE_TYPE_MAX ? header.message_type : DECODE_TYPE_MAX + 1]++;
    if (in->count_only || (in->filter && !filter_type_passes(in->filter, header.message_type))) {
        b->counts.discarded++;
        return 0;
    }

    struct event *ev = batch_push(b, pkt, len);
    if (!ev) {
        reject(b, rec, REJECT_NO_MEMORY);
        return -1;
    }
    ev->conn_id = rec->id;
    ev->recv_ns = recv_ns;
    decode_event(in->decoder, &b->arena, &header, ev->raw, len, ev);
    if (in->filter && filter_on_containers(in->filter) &&
        !filter_container_passes(in->filter, ev->context ? ev->context->container_id : NULL)) {
        b->count--;   /* the event slot goes back; its arena bytes wait for the reset */
        b->counts.discarded++;
        return 0;
    }
    b->counts.decode[ev->status]++;
    if (ev->status != DECODE_OK)
        rec->decode_errors++;
    return 0;
}
