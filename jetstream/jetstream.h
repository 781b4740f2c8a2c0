/* jetstream.h - the fleet on a replicated log: every host's batches through
 * a NATS JetStream stream, exactly once into the central PostgreSQL. The
 * module's whole interface.
 *
 *   host: seccheck.db ─▶ forward --to nats://  ─▶ stream (R3) ─▶ central --from nats:// ─▶ PostgreSQL
 *         (the spool)    one message per group       subjects       a pull consumer per partition,
 *                        of batches, chained         per host       one transaction per fetch,
 *                                                                   acks after COMMIT
 *
 * forward/ reads the host's database (local.h) and keeps the central apply
 * (central.h: the chain, gaps, refusals, the hosts position); this module
 * carries batches between the two: the message format (js_payload), the
 * subjects, the publisher (`seccheckd forward --to nats://...`), the
 * consumer (`seccheckd central`) and `seccheckd nats-setup`.
 *
 * Subjects: seccheck.<partition>.<host>.batch, where <host> is the host id
 * with every byte outside [A-Za-z0-9_-] written %XX (js_subject_token: a
 * subject token cannot hold '.', '*', '>' or spaces) and <partition> is
 * js_partition_of(host id, K). Each alert also goes, best effort, as
 * Falco's JSON to seccheck.alerts.<host> (core NATS, not stored).
 *
 * Exactly once into the stream: each message carries Nats-Msg-Id
 * "<host>:<batch>:<chunk>" (the last batch it holds, and which part of it)
 * and Nats-Expected-Last-Subject-Sequence, the stream sequence of the
 * host's previous message; a publisher that starts reads its subject's
 * last message (a direct get) and resumes after it. Exactly once into
 * PostgreSQL: central_apply is idempotent on the hosts position, and a
 * message is acked only after the transaction that applied it committed.
 *
 * Every byte of a message is untrusted: a compromised host can publish
 * anything on its own subjects. js_payload_decode bounds and checks all
 * of it before anything reaches PostgreSQL, and the consumer writes the
 * host id of the subject into every row, never one from the message.
 */
#ifndef SECCHECKD_JETSTREAM_H
#define SECCHECKD_JETSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "central.h"
#include "host_id.h"
#include "local.h"
#include "strbuf.h"

/* ---- commands (argv[0] is the command's name) ---- */

/* `seccheckd forward --to nats://...`: forward_main hands over when --to
 * names NATS (nats:// or tls://). Exit status as forward.h. */
int jetstream_forward_main(int argc, char **argv);
/* `seccheckd central --from nats://... --to postgresql://...`. 0 stopped
 * by a signal, 1 an error retrying cannot heal, 2 usage error. */
int jetstream_central_main(int argc, char **argv);
/* `seccheckd nats-setup --to nats://...`: creates the stream or checks it.
 * 0 ready, 1 it differs (each difference named) or an error, 2 usage. */
int jetstream_setup_main(int argc, char **argv);

/* True when url (or the first of a comma list) is a NATS URL. */
bool jetstream_is_url(const char *url);
/* True when forward's arguments (argv[0] "forward") name NATS with --to. */
bool jetstream_forward_wanted(int argc, char **argv);

/* ---- subjects and partitions ---- */

#define JS_SUBJECT_ROOT "seccheck"
#define JS_TOKEN_MAX (3 * HOST_ID_MAX)
#define JS_PARTITIONS_MAX 1024

/* The host id as a subject token (see above). 0, or -1 when out is too small. */
int js_subject_token(const char *host_id, char *out, size_t outlen);
/* The token back to the host id. 0, or -1 when it is not one
 * js_subject_token makes (a stray '%', a byte it would have escaped). */
int js_subject_host(const char *token, size_t len, char out[HOST_ID_MAX + 1]);
/* The partition of a host: FNV-1a (64 bits) of its id, modulo partitions.
 * Stable across releases and machines: the publisher and the consumer must
 * agree (the stream records K). */
unsigned js_partition_of(const char *host_id, unsigned partitions);

/* ---- the message format ---- */

/* A message is the line "seccheck-batch/<version> <compression>\n", then
 * (compressed with zstd, one frame, or as it is for "none"): a 4-byte
 * little-endian length, a JSON header of that length, and the sections
 * the header lists, each a PostgreSQL binary COPY stream of one part's
 * rows (local.h) without host_id. The header names the host, the kind,
 * the batches (id, chain hashes, event range), the columns of every table
 * (name and kind), and each section's part, rows and bytes: a consumer
 * needs nothing but the message, and one of another release refuses a
 * version it cannot read by its name.
 *
 * Version 2 (what the publisher writes when it can) differs in the events
 * section alone: each row holds only the columns the batch chain covers,
 * id, conn_id, recv_ns, msg_type and raw (JS_CHAINED_COLUMNS, chain.h);
 * the consumer decodes the rest of the host's events columns from raw
 * with the daemon's decoder and binding (event_redecode.h), as `verify`
 * does, and renders them as the direct forwarder renders the stored ones.
 * Rows below the header's v2_first_event_id take schema version 1's form
 * (the whole message in detail, version 2's four columns NULL). A raw
 * with no valid packet header, which no daemon stores, gets its decoded
 * columns NULL. Version 1 (every column as stored) is written when the
 * host's events table has a column neither chained nor decoded (a newer
 * daemon's), and still read. */
#define JS_FORMAT_NAME "seccheck-batch"
#define JS_FORMAT_VERSION 2                /* the newest written and read */
#define JS_FORMAT_ROWS 1                   /* events as stored: still read */
#define JS_CHAINED_COLUMNS 5
#define JS_HEADER_MAX (256u << 10)         /* bytes of JSON */
#define JS_BODY_MAX (64u << 20)            /* decompressed bytes of a message, at most */
#define JS_BATCHES_MAX 1024                /* batches in one message */

enum js_kind {
    JS_KIND_BATCHES,                /* whole batches */
    JS_KIND_CHUNK,                  /* one part of one batch too large for one message */
    JS_KIND_SYNC,                   /* runs, connections and names changed after batch at_batch */
};

struct js_section {
    bool present;
    int64_t rows;
    size_t off, len;                /* in body */
};

struct js_payload {
    enum js_kind kind;
    char host_id[HOST_ID_MAX + 1];
    char hostname[256];             /* the host's name, shown beside its id (sanitized UTF-8) */
    struct local_batch *batches;    /* JS_KIND_BATCHES: 1..JS_BATCHES_MAX; CHUNK: 1 */
    int nbatches;
    struct central_chunk chunk;     /* JS_KIND_CHUNK */
    int64_t next_event;             /* JS_KIND_CHUNK, not final: the batch's next event id */
    int64_t at_batch;               /* the last whole batch once this message is in */
    uint8_t at_hash[CHAIN_HASH_LEN];   /* its hash (zeros for none) */
    int64_t gap_from;               /* > 0: batches gap_from .. batches[0].id - 1 are lost on the host */
    int64_t names_id;               /* the newest container_info id sent, this message included */
    int64_t open_runs_from, open_conns_from;   /* runs and connections from these ids on may still change */
    int64_t open_conns_seen;        /* the host's highest connection id when it was built (0: not said) */
    struct local tables;            /* the columns of each table (db NULL) */
    struct js_section sections[LOCAL_PARTS];
    /* Version 2: the events section holds the chained columns only, and
     * rows with ids below v2_first_event_id are version 1's form
     * (INT64_MAX: every row, a database no daemon upgraded). */
    bool chained_events;
    int64_t v2_first_event_id;
    const uint8_t *body;            /* the sections; owned by the codec */
    size_t body_len;
    struct js_codec *codec;         /* decoded: the codec holding body, whose decoder js_payload_source uses */
};

/* Compression state, buffers and the event decoder, reused message after
 * message. */
struct js_codec;
/* level: zstd's (negative: faster), 0 for no compression ("none"). NULL
 * when out of memory. */
struct js_codec *js_codec_new(int level);
void js_codec_free(struct js_codec *c);

/* The message for p, whose sections are body[0..body_len) (p->body is
 * ignored; p->sections' off and len index body), into out (reset first).
 * 0, or -1 with err. */
int js_payload_encode(struct js_codec *c, const struct js_payload *p, const void *body, size_t body_len,
                      struct strbuf *out, char *err, size_t errlen);

/* Reads a message into p (its body kept in c until the next decode):
 * every length, count and bound checked, every section walked as binary
 * COPY with its table's column count. 0; -1 not a message of this format
 * or malformed (err says what); -2 a version or compression this release
 * cannot read (err names it). */
int js_payload_decode(struct js_codec *c, const void *data, size_t len, struct js_payload *p, char *err,
                      size_t errlen);

/* A central_source over a decoded message: its sections with host_id (the
 * subject's, given to central_ship) written first in every row. lo and hi
 * are ignored: the publisher selected the rows. The events part reports a
 * connections span that is not empty exactly when connections come along. */
void js_payload_source(struct central_source *src, struct js_payload *p);

/* The events columns a version 2 message carries, as a table named
 * events: id, conn_id, recv_ns, msg_type (int), raw (blob). */
void js_chained_events_table(struct local_table *t);
/* Whether version 2 can carry rows of this events table: each of its
 * columns one the chain covers (of the kind above) or one the decoder
 * makes (event_redecode.h), and all the chained ones there. */
bool js_events_decodable(const struct local_table *events);

/* The part's name in a header ("events", "open_runs"...); NULL if none. */
const char *js_part_name(enum local_part part);

#endif
