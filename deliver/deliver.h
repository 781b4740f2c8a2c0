/* deliver.h - alerts to an HTTP receiver (--alerts-url): falcosidekick's
 * `POST /`, or any webhook. The module's whole interface.
 *
 * Each alert goes as one POST of its Falco JSON line (Content-Type:
 * application/json, the same bytes as its --alerts-out line), in the order
 * the alerts were raised, one request at a time over a kept-alive
 * connection (libcurl), from a thread of its own: a receiver that fails,
 * hangs or crawls never holds up reading or storing.
 *
 * Where the alerts wait:
 *   - with the SQLite sink, in the alerts table itself (alert_outbox.h):
 *     delivery reads them after its position through a read-only
 *     connection, and the position is kept in the database, so a receiver
 *     down for hours gets every alert in order when it returns, and a
 *     restart (plain or SIGUSR2) loses none and repeats at most the one in
 *     flight (after a crash, those delivered in the last second or so);
 *   - with other sinks, in a bounded queue in memory, fed after each batch
 *     (deliver_offer), its room shared by the connections whose alerts wait
 *     (queue.h: a flooder's alerts go first); alerts that do not fit are
 *     dropped, counted, logged, and a stop drops what is still queued once
 *     a short grace is over.
 *
 * What a receiver answers:
 *   2xx                    delivered
 *   5xx, 408, 429, no
 *   answer, a timeout, a
 *   connection error, TLS  failed: the same alert again after a backoff
 *                          (0.1 s doubling to 30 s), nothing skipped
 *   3xx                    failed, as above: a redirect is never followed
 *                          (it could lead the alerts to another host); the
 *                          log names where it points, to fix --alerts-url
 *   other 4xx              rejected: the receiver refuses this alert for
 *                          what it holds, and retrying would block every
 *                          later one, so it is counted, logged, and skipped
 * While the receiver fails: one log line when it starts, one a minute
 * while it goes on, one when delivery works again.
 */
#ifndef SECCHECKD_DELIVER_H
#define SECCHECKD_DELIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alert_outbox.h"
#include "rules.h"

/* What may change on SIGHUP: the receiver's URL, its CA, the extra headers
 * and the timeout. Loading checks everything a request would trip on. */
struct deliver_settings;

/* url: http:// or https://, no credentials (they belong in the header
 * file); or, url NULL, url_file: a file whose first line (not blank, not a
 * # comment) is that URL, so a token in it shows neither in ps nor in a
 * config file; ca_file: PEM certificates to trust instead of the system's
 * (NULL: the system's); header_file: "Name: value" lines (NULL: none);
 * timeout_ms: for a whole request (connecting at most 5 s of it). NULL with
 * a message naming the option and the problem in err (never the URL's path
 * or query). */
struct deliver_settings *deliver_settings_load(const char *url, const char *url_file, const char *ca_file,
                                               const char *header_file, unsigned timeout_ms, char *err,
                                               size_t errlen);
void deliver_settings_free(struct deliver_settings *s);

/* "https://host:port": the URL without path and query, which may hold a
 * token (webhook URLs often do): what the log shows. */
const char *deliver_settings_origin(const struct deliver_settings *s);

struct deliver_config {
    const char *hostname;          /* the alerts' "hostname" (copied) */
    /* The SQLite database whose alerts table is the outbox, and the
     * position shared with its sink; NULL: the in-memory queue. */
    const char *db_path;
    struct alert_outbox *outbox;
    size_t queue_max;              /* alerts the queue holds at most */
};

struct deliver;

/* Starts delivering with s (taken, freed on failure): the outbox's
 * position is read before this returns, so alerts committed from now on
 * are never missed. NULL with err. */
struct deliver *deliver_start(struct deliver_settings *s, const struct deliver_config *cfg, char *err,
                              size_t errlen);

/* Without a database: queues copies of a batch's alerts (the writer
 * thread, after the batch; never blocks). A no-op with the outbox. */
void deliver_offer(struct deliver *d, const struct alert_list *alerts);

/* New settings (SIGHUP; taken): used from the next request on, the backoff
 * reset. Positions are per receiver, by origin (scheme://host:port, what
 * alert_delivery.target and the log hold: a path or query may carry a
 * token): another origin continues from its own saved position, or, new to
 * the database, from the running one's, so the backlog goes to the new
 * receiver and nothing is skipped; switching back resumes at the old
 * receiver's own position. Any thread. */
void deliver_reconfigure(struct deliver *d, struct deliver_settings *s);

/* Counters since start and the backlog; any thread, without locks. */
struct deliver_stats {
    uint64_t delivered;
    uint64_t failed;      /* attempts: each retry of one alert counts */
    uint64_t rejected;
    uint64_t dropped;     /* never delivered: queue full, store failed, deleted by --max-db-size */
    uint64_t skipped;     /* stored before the database's first --alerts-url: not sent, by design */
    uint64_t lag;         /* alerts raised and not yet delivered (nor rejected nor dropped) */
};
void deliver_get_stats(const struct deliver *d, struct deliver_stats *out);

/* Stops and frees d, after the writer stopped. grace_ms: how long the
 * alerts still waiting may go on being delivered while the receiver
 * answers, the request in flight abandoned when it is over (0 for a
 * restart, which must not keep the sockets waiting); the outbox keeps what
 * is left for the next start. */
void deliver_stop(struct deliver *d, int grace_ms);

#endif
