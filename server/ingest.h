/* ingest.h - one received packet into the current batch.
 *
 * The seam between sockets and storage: checks the header, accounts the
 * packet to its connection, copies it into the batch's arena and decodes it
 * there. No socket code, so tests and the allocation counter drive it
 * directly.
 */
#ifndef SECCHECKD_INGEST_H
#define SECCHECKD_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "decode.h"
#include "ingest_filter.h"
#include "pipeline.h"

struct ingest {
    const struct decoder *decoder;
    struct pipeline *pipeline;
    /* Check and count headers only; discard packets without keeping or
     * decoding them (seccheck-dummy). */
    bool count_only;
    /* --on-full drop: when every batch, reserve included, is in flight,
     * count and drop new packets instead of growing the queue (reading
     * never pauses). */
    bool drop_when_full;
    const struct filter *filter;    /* NULL: keep everything */
    /* NULL, or INGEST_TYPE_SLOTS counters: packets whose header parsed, by
     * message_type, filtered or not (metrics). Loop thread only. */
    uint64_t *by_type;
};

/* by_type slots: message_type 0..DECODE_TYPE_MAX, then one for every
 * larger (unknown) type. */
#define INGEST_TYPE_SLOTS (DECODE_TYPE_MAX + 2)

/* The sandbox's drops a header may claim. dropped_count is cumulative and
 * wraps at 2^32, so a packet could move it by up to 2^32-1; a sandbox
 * cannot drop more points than it generates, and none generates one point
 * per INGEST_DROP_NS_EACH ns (100 million a second: drops.trace dropped
 * 46 thousand a second, and each point is a syscall's worth of work plus
 * a send on one socket). Its count moved since the last counted header,
 * whose count gVisor loaded before sending (and before its retries, at
 * most INGEST_DROP_STALE_NS with any sane retries/backoff_max: 1000 x
 * 10 ms is the most `seccheckd gvisor-config` writes), and that header
 * was sent after the socket was last read empty before it (emptied_ns).
 * So a header may add the drops of the time from that, less the
 * staleness, but never from before the connection, to its own reading:
 * beyond it, it is counted as a regression, not as drops. A count that
 * goes back (by less than 2^31: more is a wrap) is a regression too. A
 * wall-clock step back shortens the allowance (by at most the step). */
#define INGEST_DROP_NS_EACH 10
#define INGEST_DROP_STALE_NS 10000000000LL

/* A sandbox's drops are a warning in the log as they are seen: the first
 * at once, then at most one line per connection this often, with what it
 * dropped since the previous one. */
#define INGEST_DROP_LOG_NS 10000000000LL

/* The most drops a header read at recv_ns may add to rec's. */
uint64_t ingest_drop_allowance(const struct conn_record *rec, int64_t recv_ns);
/* truncated: the kernel cut the packet (MSG_TRUNC), it was larger than the
 * receive slot. Returns 0, or -1 when no memory was left for it (counted). */
int ingest_packet(struct ingest *in, struct conn_record *rec, const uint8_t *pkt, size_t len, bool truncated,
                  int64_t recv_ns);

/* --on-full drop, for a connection over its fair share while the queue is
 * full: the packet is counted as received and rejected queue_full, not kept. */
void ingest_drop(struct ingest *in, struct conn_record *rec, size_t len);

#endif
