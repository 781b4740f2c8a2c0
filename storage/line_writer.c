/* line_writer.c - batched, rotated, failure-counted line output. */
#include "line_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"

/* A full disk fails every batch: one log line per this many seconds says
 * how many events were lost meanwhile, instead of one per batch. */
#define LOSS_LOG_INTERVAL_NS (10 * 1000000000LL)

static const char *shown_path(const struct line_writer *w)
{
    return w->is_stdout ? "standard output" : w->path;
}

static void note_loss(struct line_writer *w, uint64_t lines, const char *why)
{
    w->lost_total += lines;
    w->lost_unlogged += lines;
    int64_t now = monotonic_ns();
    if (w->failing && now - w->last_log_ns < LOSS_LOG_INTERVAL_NS)
        return;
    log_error("%s: %llu events not written to %s: %s (%llu lost in all; logged at most every %lld s)", w->who,
              (unsigned long long)w->lost_unlogged, shown_path(w), why, (unsigned long long)w->lost_total,
              LOSS_LOG_INTERVAL_NS / 1000000000LL);
    w->failing = true;
    w->last_log_ns = now;
    w->lost_unlogged = 0;
}

static void note_success(struct line_writer *w)
{
    if (!w->failing)
        return;
    log_info("%s: writing to %s again (%llu events lost in all)", w->who, shown_path(w),
             (unsigned long long)w->lost_total);
    w->failing = false;
}

/* Why open_file failed, for the log: a link is refused on purpose. */
static const char *open_error(int err)
{
    return err == ELOOP ? "it is a symbolic link, which seccheckd does not follow (a link planted in a shared "
                          "directory would send the events into another file): give the real path, or - for "
                          "standard output"
                        : strerror(err);
}

/* 0, or -1 with errno. Never through a symbolic link (ELOOP): at start and
 * at every reopen after a rotation, when the path is briefly free for
 * anyone who can write to its directory. */
static int open_file(struct line_writer *w)
{
    int fd = open(w->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0640);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    w->fd = fd;
    w->size = (uint64_t)st.st_size;
    /* A FIFO or a device has no size to limit and cannot be renamed away. */
    w->is_regular = S_ISREG(st.st_mode);
    w->can_rotate = w->is_regular && w->max_bytes > 0;
    return 0;
}

#define CUT_OFF_WHY "shutdown stopped waiting for the reader (the write blocked)"

static bool cut_off(const struct line_writer *w)
{
    return w->cut_off && atomic_load(w->cut_off);
}

/* 0, or -1 with errno (ECANCELED: cut off); *written says how far it got
 * either way. A blocked write is interrupted by a signal (EINTR, or a short
 * count) once shutdown cuts it off; the flag is checked before each try. */
static int write_all(struct line_writer *w, const char *p, size_t len, size_t *written)
{
    *written = 0;
    while (len > 0) {
        if (cut_off(w)) {
            errno = ECANCELED;
            return -1;
        }
        ssize_t n = write(w->fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
        *written += (size_t)n;
    }
    return 0;
}

/* PATH.(keep-1) -> PATH.keep (replacing the oldest) ... PATH -> PATH.1.
 * 0, or the errno of the rename that failed. */
static int shift_files(const struct line_writer *w)
{
    char from[LINE_WRITER_PATH_MAX + 16], to[LINE_WRITER_PATH_MAX + 16];
    if (w->keep == 0)
        return unlink(w->path) == 0 || errno == ENOENT ? 0 : errno;
    for (unsigned i = w->keep; i > 1; i--) {
        snprintf(from, sizeof(from), "%s.%u", w->path, i - 1);
        snprintf(to, sizeof(to), "%s.%u", w->path, i);
        if (rename(from, to) != 0 && errno != ENOENT)
            return errno;
    }
    snprintf(to, sizeof(to), "%s.1", w->path);
    return rename(w->path, to) == 0 || errno == ENOENT ? 0 : errno;
}

static void rotate(struct line_writer *w)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    int failed = shift_files(w);
    /* The path holds a new file now. When the shift failed, the old file
     * counts as a fresh one too, so the next attempt comes only after
     * another max_bytes instead of at every line. */
    w->size = 0;
    if (open_file(w) != 0)
        return;   /* the next flush retries the open and counts the loss */
    if (failed) {
        log_error("%s: cannot rotate %s: %s; appending to it past the size limit", w->who, w->path,
                  strerror(failed));
        w->size = 0;
    }
}

int line_writer_open(struct line_writer *w, const char *who, const char *path, uint64_t max_bytes, unsigned keep,
                     const atomic_bool *cut_off_flag, char *err, size_t errlen)
{
    memset(w, 0, sizeof(*w));
    w->who = who;
    w->cut_off = cut_off_flag;
    w->fd = -1;
    w->max_bytes = max_bytes;
    w->keep = keep;
    if (strlen(path) >= sizeof(w->path)) {
        snprintf(err, errlen, "path is too long");
        return -1;
    }
    snprintf(w->path, sizeof(w->path), "%s", path);
    signal(SIGPIPE, SIG_IGN);
    if (strcmp(path, "-") == 0) {
        w->is_stdout = true;
        w->fd = STDOUT_FILENO;
        return 0;
    }
    if (open_file(w) != 0) {
        if (errno == ELOOP)
            snprintf(err, errlen, "cannot open %s: %s", path, open_error(errno));
        else
            snprintf(err, errlen, "cannot open %s: %s (check that its directory exists and is writable)", path,
                     strerror(errno));
        return -1;
    }
    return 0;
}

void line_writer_lost(struct line_writer *w, struct batch_result *r, const char *why)
{
    r->failed++;
    note_loss(w, 1, why);
}

void line_writer_add(struct line_writer *w, const char *line, size_t len, struct batch_result *r)
{
    uint64_t queued = w->size + w->pending.len;
    if (w->can_rotate && queued > 0 && queued + len > w->max_bytes) {
        line_writer_flush(w, r);
        rotate(w);
    }
    strbuf_append(&w->pending, line, len);
    if (w->pending.failed) {
        /* strbuf left the queued lines untouched; only this one is lost. */
        w->pending.failed = false;
        line_writer_lost(w, r, "out of memory");
        return;
    }
    w->pending_lines++;
}

/* After a failed write: cut the written part of it back out of the file.
 * From the file's real size, not w->size: someone may have emptied the file
 * meanwhile (logrotate's copytruncate), and cutting to the remembered size
 * would then pad it with NUL bytes. Only ever shortens the file. */
static void cut_back(struct line_writer *w, size_t written)
{
    if (!w->is_regular || w->fd < 0)
        return;
    struct stat st;
    if (fstat(w->fd, &st) != 0) {
        log_error("%s: cannot cut a partial line from %s: %s", w->who, w->path, strerror(errno));
        return;
    }
    uint64_t now = (uint64_t)st.st_size;
    uint64_t before = now > written ? now - written : 0;
    if (before < now && ftruncate(w->fd, (off_t)before) != 0) {
        log_error("%s: cannot cut a partial line from %s: %s", w->who, w->path, strerror(errno));
        w->size = now;
        return;
    }
    w->size = before;
}

/* After a write: where it ended is the file's size (O_APPEND writes at the
 * end), which also notices a file emptied from outside. */
static void note_size(struct line_writer *w, size_t written)
{
    off_t end = w->is_regular ? lseek(w->fd, 0, SEEK_CUR) : -1;
    w->size = end >= 0 ? (uint64_t)end : w->size + written;
}

void line_writer_flush(struct line_writer *w, struct batch_result *r)
{
    uint64_t lines = w->pending_lines;
    if (lines == 0)
        return;
    const char *failed = NULL;   /* why, when the lines were not written */
    size_t written = 0;
    if (cut_off(w)) {
        failed = CUT_OFF_WHY;
    } else if (w->fd < 0 && open_file(w) != 0) {
        failed = open_error(errno);
    } else if (write_all(w, w->pending.data, w->pending.len, &written) != 0) {
        failed = errno == ECANCELED ? CUT_OFF_WHY : strerror(errno);
        cut_back(w, written);
    } else {
        note_size(w, written);
    }
    strbuf_reset(&w->pending);
    w->pending_lines = 0;
    if (failed) {
        r->failed += lines;
        note_loss(w, lines, failed);
        return;
    }
    r->stored += lines;
    note_success(w);
}

void line_writer_close(struct line_writer *w)
{
    if (w->fd >= 0 && !w->is_stdout)
        close(w->fd);
    w->fd = -1;
    strbuf_free(&w->pending);
}
