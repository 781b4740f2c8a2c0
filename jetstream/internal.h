/* internal.h - what the files of jetstream/ share and nothing outside uses:
 * the connection to the NATS servers (link.c) and the stream's expected
 * shape (stream.c). jetstream.h is the module's interface. */
#ifndef SECCHECKD_JETSTREAM_INTERNAL_H
#define SECCHECKD_JETSTREAM_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <nats/nats.h>

#include "jetstream.h"
#include "strbuf.h"

/* ---- the connection ---- */

#define JS_URLS_MAX 16
#define JS_URL_MAX 512

struct js_link_options {
    const char *urls;               /* nats://H:P,nats://H:P or tls://... (one scheme) */
    const char *auth_file;          /* --nats-auth: "USER:PASSWORD" on its first line, or a .creds file; NULL: none */
    const char *ca_file;            /* --nats-ca: PEM CAs for tls:// (NULL: the system's) */
    const char *name;               /* the connection's name, shown by the server's monitor */
    const char *inbox;              /* the inbox prefix replies come to (the permissions name it) */
    int64_t timeout_ms;             /* connecting, and each request */
};

struct js_link_events;              /* what nats.c's callback thread writes (link.c) */

struct js_link {
    natsConnection *nc;
    jsCtx *js;
    int64_t timeout_ms;
    struct js_link_events *events;  /* the connection's: its callbacks' closure, outliving the link if need be */
};

/* Checks a URL list as js_link_connect reads it: 0, or -1 with err (a
 * scheme other than nats:// or tls://, both mixed, credentials in a URL,
 * more than JS_URLS_MAX). */
int js_link_check_urls(const char *urls, const char *option, char *err, size_t errlen);

/* Connects (the first time: nats_Open) with reconnects on for good. 0, or
 * -1 with err and *lasting when retrying cannot help (the credentials
 * file, the CA file, the server refusing the user). */
int js_link_connect(struct js_link *l, const struct js_link_options *o, bool *lasting, char *err, size_t errlen);
/* Closes the connection and returns once nats.c has run its last callback
 * for it (a link on the stack may then go). */
void js_link_close(struct js_link *l);

/* The server's last asynchronous error since the last call ("" if none). */
void js_link_take_async_error(struct js_link *l, char *out, size_t outlen);

/* A natsStatus and the library's message for it, one line; with the
 * JetStream error code when there is one. */
void js_status_text(natsStatus s, jsErrCode code, char *out, size_t outlen);

/* ---- the stream ---- */

#define JS_DEFAULT_STREAM "SECCHECK"
#define JS_APPLIED_SUFFIX "_APPLIED"
#define JS_BATCH_SUBJECTS JS_SUBJECT_ROOT ".*.*.batch"
#define JS_APPLIED_PREFIX JS_SUBJECT_ROOT ".applied."
#define JS_ALERTS_PREFIX JS_SUBJECT_ROOT ".alerts."

/* What the fleet's stream should be. */
struct js_stream_spec {
    const char *name;
    int64_t replicas;
    int64_t max_bytes;
    int64_t max_age_ns;
    int64_t duplicates_ns;
    unsigned partitions;
};

#define JS_CHECK_ESSENTIAL 1u       /* what forward and central need to be right */
#define JS_CHECK_ALL 3u             /* and what nats-setup was asked for */

/* Appends one "; "-separated phrase per difference between the stream
 * config c and spec (what it is, what is expected, why it matters).
 * Returns how many. spec->partitions 0 takes the stream's. */
int js_stream_differences(const jsStreamConfig *c, const struct js_stream_spec *spec, unsigned what,
                          struct strbuf *out);
/* The partitions recorded in a stream's description; 0 when none is. */
unsigned js_stream_partitions(const jsStreamConfig *c);
/* Fills cfg (strings point into buf, subjects into subjects[1]) for spec. */
void js_stream_config(jsStreamConfig *cfg, const struct js_stream_spec *spec, char *buf, size_t buflen,
                      const char **subjects);
/* The positions stream (JS_APPLIED_SUFFIX): the central copy's position per
 * host, the last message on each subject only. */
void js_applied_config(jsStreamConfig *cfg, const struct js_stream_spec *spec, char *name, size_t namelen,
                       const char **subjects);

/* Reads the stream's info and checks it (what: JS_CHECK_*). 0 and
 * *partitions (the stream's), -1 with err: unreachable or an API error;
 * -2: the stream is missing or differs (err names each difference: lasting). */
int js_stream_verify(struct js_link *l, const struct js_stream_spec *spec, unsigned what, unsigned *partitions,
                     char *err, size_t errlen);

#endif
