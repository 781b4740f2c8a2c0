/* sink_record.c - records each connection as a gVisor tracereplay file.
 *
 * The files are what gVisor's `tracereplay save` writes (client-NNNN, the
 * "tracereplay file" signature, {"version":N}, then length-prefixed raw
 * packets), with N the client's handshake version, so `tracereplay replay`
 * and seccheck-loadgen can play them back. Runs on the writer thread.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "log.h"
#include "sink.h"
#include "tracefile.h"

struct recording {
    uint64_t conn_id;
    struct tracefile file;
    bool failed;           /* a write failed: later events count as failed */
    bool touched;          /* written since the last flush */
    char path[4200];
};

struct record_sink {
    struct sink base;
    char dir[4096];
    struct recording *open;    /* one per connection with a file open */
    size_t nopen, capacity;
    size_t last;               /* index of the last hit: events come in runs */
};

static struct recording *find(struct record_sink *s, uint64_t conn_id)
{
    if (s->last < s->nopen && s->open[s->last].conn_id == conn_id)
        return &s->open[s->last];
    for (size_t i = 0; i < s->nopen; i++)
        if (s->open[i].conn_id == conn_id) {
            s->last = i;
            return &s->open[i];
        }
    return NULL;
}

static struct recording *start(struct record_sink *s, uint64_t conn_id, uint32_t version)
{
    if (s->nopen == s->capacity) {
        size_t cap = s->capacity ? s->capacity * 2 : 16;
        struct recording *p = realloc(s->open, cap * sizeof(*p));
        if (!p)
            return NULL;
        s->open = p;
        s->capacity = cap;
    }
    struct recording *r = &s->open[s->nopen];
    memset(r, 0, sizeof(*r));
    r->conn_id = conn_id;
    snprintf(r->path, sizeof(r->path), "%s/client-%04llu", s->dir, (unsigned long long)conn_id);
    if (tracefile_create(&r->file, r->path, version ? version : 1) != TRACEFILE_OK) {
        log_error("record: cannot create %s: %s", r->path, strerror(errno));
        r->failed = true;
    }
    s->last = s->nopen++;
    return r;
}

static void finish_recording(struct record_sink *s, struct recording *r)
{
    if (!r->failed && tracefile_close(&r->file) != TRACEFILE_OK)
        log_error("record: writing %s failed: %s", r->path, strerror(errno));
    log_info("record: connection %llu written to %s (%llu message%s)", (unsigned long long)r->conn_id, r->path,
             (unsigned long long)r->file.records, cli_plural(r->file.records));
    *r = s->open[--s->nopen];
    s->last = 0;
}

static void append(struct recording *r, const struct event *ev, struct batch_result *result)
{
    enum tracefile_status st;
    if (!r->failed && (st = tracefile_append(&r->file, ev->raw, ev->raw_len)) != TRACEFILE_OK) {
        log_error("record: writing %s failed: %s; further events of this connection are not recorded", r->path,
                  st == TRACEFILE_IO_ERROR ? strerror(errno) : tracefile_strerror(st));
        r->failed = true;
    }
    if (r->failed) {
        result->failed++;
        return;
    }
    r->touched = true;
    result->stored++;
}

static void record_write_batch(struct sink *base, struct batch *b)
{
    struct record_sink *s = (struct record_sink *)base;
    /* Open files first: a snapshot carries the handshake version. */
    for (size_t i = 0; i < b->nconns; i++) {
        const struct conn_record *c = &b->conns[i];
        if (c->client_version && !find(s, c->id))
            start(s, c->id, c->client_version);
    }
    for (size_t i = 0; i < b->count; i++) {
        const struct event *ev = &b->events[i];
        struct recording *r = find(s, ev->conn_id);
        if (!r)
            r = start(s, ev->conn_id, WIRE_VERSION);
        if (r)
            append(r, ev, &b->result);
        else
            b->result.failed++;
    }
    /* Flush once per batch: readers see data within --flush-ms, and a crash
     * loses at most the last batch. */
    for (size_t i = 0; i < s->nopen; i++) {
        struct recording *r = &s->open[i];
        if (r->touched && !r->failed && tracefile_flush(&r->file) != TRACEFILE_OK) {
            log_error("record: flushing %s failed: %s", r->path, strerror(errno));
            r->failed = true;
        }
        r->touched = false;
    }
    for (size_t i = 0; i < b->nconns; i++) {
        struct recording *r;
        if (b->conns[i].close_ns && (r = find(s, b->conns[i].id)))
            finish_recording(s, r);
    }
}

static void record_close(struct sink *base)
{
    struct record_sink *s = (struct record_sink *)base;
    while (s->nopen)
        finish_recording(s, &s->open[0]);
    free(s->open);
    free(s);
}

static const struct sink_ops record_ops = {
    .name = "record",
    .needs_writer_thread = true,
    .write_batch = record_write_batch,
    .close = record_close,
};

/* Numbers new files after the highest client-NNNN already in dir, so a
 * restart never overwrites an earlier recording. */
static uint64_t next_client_number(DIR *d)
{
    uint64_t highest = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        unsigned long long n;
        char tail;
        if (sscanf(e->d_name, "client-%llu%c", &n, &tail) == 1 && n > highest)
            highest = n;
    }
    return highest + 1;
}

struct sink *sink_record_open(const char *dir, char *err, size_t errlen)
{
    if (strlen(dir) >= sizeof(((struct record_sink *)0)->dir)) {
        snprintf(err, errlen, "--record-dir is too long");
        return NULL;
    }
    if (mkdir(dir, 0750) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create --record-dir %s: %s", dir, strerror(errno));
        return NULL;
    }
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "cannot open --record-dir %s: %s", dir, strerror(errno));
        return NULL;
    }
    struct record_sink *s = calloc(1, sizeof(*s));
    if (!s) {
        closedir(d);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->base.ops = &record_ops;
    s->base.first_conn_id = next_client_number(d);
    closedir(d);
    /* "traces/" and "traces" name the same directory: no "traces//client-0001". */
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    snprintf(s->dir, sizeof(s->dir), "%.*s", (int)len, dir);
    return &s->base;
}
