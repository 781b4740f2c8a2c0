/* chain.h - the tamper-evident batch chain, one implementation shared by the
 * writer (sink_sqlite.c) and the verifier (verify.c).
 *
 * Every committed batch gets a row in the batches table whose hash is
 *
 *   hash_n = H(tag || prev_hash || row_1 || ... || row_k || alert_1 || ... || alert_m || trailer)
 *
 * where H is SHA-256, or HMAC-SHA256 under the key of --key-file; prev_hash
 * is hash_{n-1} (32 zero bytes for the first batch), each row is
 *   'R', id, conn_id, recv_ns, msg_type, len(raw) (little-endian 64-bit), raw
 * for the batch's events rows in id order, each alert is
 *   'A', len(sealed) (little-endian 64-bit), sealed
 * for the batch's alerts rows in id order, and the trailer is
 *   'C', batch id, run_id, first_event_id, last_event_id, events, committed_ns, keyed,
 *        alerts, first_alert_id
 * (little-endian 64-bit). raw is the packet as received: every other events
 * column except conn_id and recv_ns is derived from it. sealed is the
 * alert's row in chain_alert_encode's form, stored beside it (alerts.sealed):
 * the chain covers it as raw, and verify compares the alert's columns with
 * what sealed holds, as it compares an event's with what raw decodes to.
 * The batches row keeps alerts and first_alert_id (the alerts' ids are
 * consecutive: one transaction), so a missing alert is named by its id.
 *
 * A batch written before alerts were chained has no alert parts and the
 * trailer 'B' without the last two fields (its batches row: alerts NULL):
 * such a hash can never equal one that covers alerts, so an attacker cannot
 * turn a newer batch into an older one to drop its alerts.
 *
 * Every writer and verifier of the chain goes through here: the daemon
 * (sink_sqlite.c), verify (query/verify.c), the central copy's verify
 * (forward/central_verify.c), and any path that ships the batches (their
 * rows, alerts.sealed, batches.alerts and first_alert_id) must carry those
 * columns as they are.
 *
 * Usage: chain_begin, chain_add_row for every row, chain_add_alert for every
 * alert (b->covers_alerts), chain_finish; the same struct chain is reused
 * batch after batch.
 */
#ifndef SECCHECKD_CHAIN_H
#define SECCHECKD_CHAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CHAIN_HASH_LEN 32
#define CHAIN_KEY_MIN 16            /* bytes; shorter key files are refused */
#define CHAIN_KEY_MAX (64 * 1024)   /* a key file larger than this is a mistake */
#define CHAIN_KEY_ID_HEX (2 * CHAIN_HASH_LEN + 1)

/* The bytes of a key file, as they are (a trailing newline is key material). */
struct chain_key {
    unsigned char *bytes;
    size_t len;
    mode_t mode;                    /* the file's permission bits, to warn when others can read it */
};

/* Loads path into key; -1 with a message naming the file in err. */
int chain_key_load(const char *path, struct chain_key *key, char *err, size_t errlen);
/* Wipes and frees the key bytes; safe on a zeroed key. */
void chain_key_free(struct chain_key *key);
/* HMAC-SHA256(key, fixed label) as hex: tells which key wrote a chain
 * without revealing it. -1 on an OpenSSL failure. */
int chain_key_id(const struct chain_key *key, char out[CHAIN_KEY_ID_HEX]);

struct chain;

/* key NULL: plain SHA-256; otherwise HMAC-SHA256 with a copy of the key.
 * NULL with the reason in err. */
struct chain *chain_new(const struct chain_key *key, char *err, size_t errlen);
void chain_free(struct chain *c);
bool chain_keyed(const struct chain *c);

struct chain_row {
    int64_t id;
    int64_t conn_id;
    int64_t recv_ns;
    int64_t msg_type;
    const void *raw;
    size_t raw_len;
};

struct chain_batch {
    int64_t id;
    int64_t run_id;
    int64_t first_event_id;         /* 0 when the batch has no events */
    int64_t last_event_id;
    int64_t events;
    int64_t committed_ns;
    bool covers_alerts;             /* false: a batch written before alerts were chained */
    int64_t alerts;                 /* the batch's alerts */
    int64_t first_alert_id;         /* 0 when none */
};

/* An alerts row as the chain covers it, but its id (the batch's
 * first_alert_id and its place give it). Strings are bytes with their
 * length (an output may hold NUL bytes); container_id NULL: none. */
struct chain_alert {
    int64_t event_id, time_ns, suppressed;
    const char *rule, *priority, *container_id, *output, *output_fields, *tags;
    size_t rule_len, priority_len, container_id_len, output_len, output_fields_len, tags_len;
    /* a sequence's alert: the partial matches evicted before it, and its
     * steps' events as the alerts table keeps them (NULL: a rule's alert) */
    int64_t evicted;
    const char *sequence;
    size_t sequence_len;
};

/* The alert's sealed record: 'S', then event_id, time_ns, suppressed
 * (little-endian 64-bit), then each string as its length (little-endian
 * 64-bit) and bytes: rule, priority, container_id (length 2^64-1 when
 * NULL, no bytes), output, output_fields, tags; then evicted (64-bit) and
 * sequence (as container_id). Appended to out; its length, or 0 out of
 * memory. */
struct strbuf;
size_t chain_alert_encode(const struct chain_alert *a, struct strbuf *out);
/* The fields of a sealed record (pointing into it); 0, or -1 when it is not
 * one (a stored value is untrusted: every length is checked). */
int chain_alert_decode(const void *sealed, size_t len, struct chain_alert *out);

/* Starts a batch after prev. -1 on an OpenSSL failure (then chain_finish fails too). */
int chain_begin(struct chain *c, const uint8_t prev[CHAIN_HASH_LEN]);
void chain_add_row(struct chain *c, const struct chain_row *r);
/* After the rows, in id order. */
void chain_add_alert(struct chain *c, const void *sealed, size_t len);
/* Ends the batch; 0 and the hash in out, or -1 if any step failed. */
int chain_finish(struct chain *c, const struct chain_batch *b, uint8_t out[CHAIN_HASH_LEN]);

/* The last OpenSSL error as text, for messages. */
const char *chain_openssl_error(char *buf, size_t len);

#endif
