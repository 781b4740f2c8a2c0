/* line_writer.h - whole lines to a file or standard output, for the sinks
 * that write text (ndjson, text).
 *
 * Lines are gathered per batch and written with one write(2) per batch, so
 * a shipper tailing the file sees complete lines within the flush interval
 * and the writer thread makes one system call per batch, not per event.
 * Optional size-based rotation: PATH -> PATH.1 -> ... -> PATH.keep (the
 * oldest is deleted), then PATH is reopened. A failed write (disk full) is
 * counted per line, logged at most every few seconds, and cut back out of a
 * regular file so no reader ever sees half a line.
 *
 * Opening a writer ignores SIGPIPE for the process: a reader that goes
 * away (the shipper at the other end of a pipe) is a counted write error,
 * not the end of the daemon. A reader that stays but stops reading blocks
 * the write until shutdown cuts it off (sink.h, cut_off): then that write
 * and every later one fail, counted like any other failed write.
 */
#ifndef SECCHECKD_LINE_WRITER_H
#define SECCHECKD_LINE_WRITER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "strbuf.h"

#define LINE_WRITER_PATH_MAX 4096

struct line_writer {
    const char *who;              /* the sink's name, for log lines */
    const atomic_bool *cut_off;   /* the sink's: stop waiting on blocked writes; NULL: never */
    char path[LINE_WRITER_PATH_MAX];
    int fd;                       /* -1: closed; reopened at the next flush */
    bool is_stdout;
    bool is_regular;              /* a regular file: can be cut back and rotated */
    bool can_rotate;              /* a regular file and max_bytes > 0 */
    uint64_t max_bytes;
    unsigned keep;
    uint64_t size;                /* bytes in the current file */
    struct strbuf pending;        /* complete lines not yet written */
    uint64_t pending_lines;
    /* Failure reporting: lines lost since the last log line, and when. */
    bool failing;
    uint64_t lost_total;
    uint64_t lost_unlogged;
    int64_t last_log_ns;
};

/* path "-": standard output (never rotated). max_bytes 0: never rotate.
 * cut_off: the sink's flag (sink.h), or NULL. -1 with a message naming the
 * path in err; a symbolic link is refused. */
int line_writer_open(struct line_writer *w, const char *who, const char *path, uint64_t max_bytes, unsigned keep,
                     const atomic_bool *cut_off, char *err, size_t errlen);

/* Queues one complete line (ending in '\n'). When it would take the file
 * past max_bytes, the queued lines are written and the file rotated first;
 * what they became is counted in r. */
void line_writer_add(struct line_writer *w, const char *line, size_t len, struct batch_result *r);

/* Writes the queued lines (one write); each is counted in r as stored or failed. */
void line_writer_flush(struct line_writer *w, struct batch_result *r);

/* Counts a line that never reached the writer (it could not be rendered)
 * as failed, with the same rate-limited log. */
void line_writer_lost(struct line_writer *w, struct batch_result *r, const char *why);

void line_writer_close(struct line_writer *w);

#endif
