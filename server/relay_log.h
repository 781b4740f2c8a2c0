/* relay_log.h - the packets a restart's relay read, for the new image.
 *
 * An append-only log in a memfd that two processes map: the restart relay
 * (relay.h) appends each packet it reads from a connection, with its
 * length, flags and receive time, and notes when a socket was read empty
 * or closed; the new image ingests the records in order, as it would have
 * read them from the sockets. One writer, one reader: the writer publishes
 * how far its records are complete (a release store), the reader never
 * reads past that (an acquire load). The reader checks every record
 * against the log's bounds and the connections it knows: a record that
 * does not fit ends the log (relay_log_next returns -1).
 *
 * The format is versioned: a build reads the logs of the versions it
 * knows (a restart checks that the build it hands over to does).
 */
#ifndef SECCHECKD_RELAY_LOG_H
#define SECCHECKD_RELAY_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RELAY_LOG_VERSION 1

enum relay_record_type {
    RELAY_PACKET = 1,   /* len payload bytes follow */
    RELAY_EMPTIED,      /* the socket was read empty at ns (conn_record.emptied_ns) */
    RELAY_EOF,          /* the peer closed: nothing more on this connection */
    RELAY_ERROR,        /* reading failed with errno flags: the connection is done */
};

#define RELAY_TRUNCATED 1u   /* RELAY_PACKET: larger than the receive slot (MSG_TRUNC) */

struct relay_record {
    uint32_t type;      /* enum relay_record_type */
    uint32_t conn;      /* the connection's index in the handoff state */
    uint32_t len;       /* RELAY_PACKET: payload bytes that follow; else 0 */
    uint32_t flags;     /* RELAY_PACKET: RELAY_TRUNCATED; RELAY_ERROR: the errno */
    int64_t ns;         /* CLOCK_REALTIME: when the packet was read, or the socket read empty */
};

struct relay_log {
    int fd;             /* the memfd; -1: not mapped */
    uint8_t *base;      /* the header, then the records */
    size_t size;        /* bytes mapped */
    uint64_t capacity;  /* bytes for records */
    uint64_t pos;       /* the writer's end of records, or the reader's next record */
    uint64_t released;  /* reader: records below this were given back to the kernel */
};

/* A new log of capacity bytes of records (sparse: pages are taken as the
 * relay writes them): its memfd, or -1 with err. */
int relay_log_create(uint64_t capacity, char *err, size_t errlen);

/* Maps the log fd names (writable: the relay's side). The log keeps its own
 * copy of fd. 0, or -1 with err (not a relay log, or another version). */
int relay_log_map(struct relay_log *l, int fd, bool writable, char *err, size_t errlen);

void relay_log_unmap(struct relay_log *l);

/* Writer: appends r and its r->len payload bytes; false when it does not
 * fit (the log is full; nothing was written). Readers see it once
 * published. */
bool relay_log_append(struct relay_log *l, const struct relay_record *r, const void *payload);
void relay_log_publish(struct relay_log *l);

/* Reader: how far the records are complete. */
uint64_t relay_log_written(const struct relay_log *l);

/* Reader: the next record before end (at most relay_log_written) into r,
 * its payload in *payload (inside the mapping), without taking it.
 * nconns bounds r->conn. 1: a record; 0: none before end; -1: a record
 * that does not fit. */
int relay_log_peek(const struct relay_log *l, uint64_t end, uint32_t nconns, struct relay_record *r,
                   const uint8_t **payload);

/* Reader: takes r, the record relay_log_peek just gave. */
void relay_log_take(struct relay_log *l, const struct relay_record *r);

/* Reader: gives the pages of the records read so far back to the kernel
 * (in large steps), so a long catch-up holds no more than it has left. */
void relay_log_release(struct relay_log *l);

#endif
