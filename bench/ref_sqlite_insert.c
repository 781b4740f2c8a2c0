/* ref_sqlite_insert.c - the storage limit: a bare prepared-statement INSERT
 * loop writing the same rows (event_row.h), with the same schema, pragmas and
 * batch size, as seccheckd's SQLite sink. Rows are decoded and rendered before the clock
 * starts, so this measures SQLite alone; bench/ compares seccheckd's
 * sustained rate with it.
 * Usage: ref-sqlite-insert [--indexes LIST] DB ROWS BATCH TRACE...   (prints rows/s) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>

#include "arena.h"
#include "clock.h"
#include "decode.h"
#include "event_indexes.h"
#include "event_json.h"
#include "event_row.h"
#include "replay.h"
#include "schema.sql.h"
#include "sink.h"

struct row {
    struct event ev;
    char *detail;
    size_t detail_len;
};

/* Decodes and renders every packet of the traces once, up front. Rows are
 * kept per trace: row i of the run is taken from trace i % ntraces, as
 * seccheck-loadgen's connection i replays trace i % ntraces, so both write
 * the same mix. */
static struct row *prepare_rows(struct replay_trace *traces, int ntraces, size_t *nrows, size_t *start,
                                struct arena *arena)
{
    size_t total = 0;
    for (int t = 0; t < ntraces; t++)
        total += traces[t].count;
    struct row *rows = calloc(total, sizeof(*rows));
    struct decoder dec;
    decoder_init(&dec);
    struct strbuf json = {0};
    size_t n = 0;
    for (int t = 0; t < ntraces; t++) {
        start[t] = n;
        for (size_t i = 0; i < traces[t].count; i++) {
            struct wire_header h;
            if (wire_header_parse(traces[t].packets[i], traces[t].lengths[i], &h) != WIRE_OK)
                continue;
            struct row *r = &rows[n++];
            decode_event(&dec, arena, &h, traces[t].packets[i], traces[t].lengths[i], &r->ev);
            r->ev.recv_ns = realtime_ns();
            if (r->ev.msg) {
                strbuf_reset(&json);
                event_detail_render(&json, &r->ev);
                r->detail = strdup(json.data);
                r->detail_len = json.len;
            }
        }
        nrows[t] = n - start[t];
    }
    strbuf_free(&json);
    return rows;
}

static int exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "ref-sqlite-insert: %s: %s\n", sql, msg);
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    unsigned indexes = EVENT_INDEXES_DEFAULT;
    char err[512];
    if (argc > 2 && strcmp(argv[1], "--indexes") == 0) {
        if (event_indexes_parse(argv[2], &indexes, err, sizeof(err)) != 0) {
            fprintf(stderr, "ref-sqlite-insert: %s\n", err);
            return 2;
        }
        argv += 2;
        argc -= 2;
    }
    if (argc < 5) {
        fprintf(stderr, "usage: ref-sqlite-insert [--indexes LIST] DB ROWS BATCH TRACE...\n");
        return 2;
    }
    size_t want = strtoull(argv[2], NULL, 10), batch = strtoull(argv[3], NULL, 10);
    int ntraces = argc - 4;
    struct replay_trace *traces = calloc((size_t)ntraces, sizeof(*traces));
    for (int t = 0; t < ntraces; t++)
        if (replay_trace_load(&traces[t], argv[4 + t], err, sizeof(err)) != 0) {
            fprintf(stderr, "ref-sqlite-insert: %s\n", err);
            return 1;
        }
    struct arena arena;
    arena_init(&arena, 1u << 20, (size_t)1 << 34);
    size_t *nrows = calloc((size_t)ntraces, sizeof(*nrows)), *first = calloc((size_t)ntraces, sizeof(*first));
    struct row *rows = prepare_rows(traces, ntraces, nrows, first, &arena);

    /* The schema, pragmas and indexes: made by the sink itself, then closed. */
    struct sink_sqlite_options o = {.path = argv[1], .busy_timeout_ms = 5000, .indexes = indexes};
    struct sink *sink = sink_sqlite_open(&o, err, sizeof(err));
    if (!sink) {
        fprintf(stderr, "ref-sqlite-insert: %s\n", err);
        return 1;
    }
    sink_close(sink);
    sqlite3 *db;
    sqlite3_stmt *st;
    if (sqlite3_open(argv[1], &db) != SQLITE_OK || exec(db, "PRAGMA synchronous=NORMAL") ||
        exec(db, "PRAGMA cache_size=-32768") ||
        sqlite3_prepare_v3(db, insert_event_sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "ref-sqlite-insert: %s\n", sqlite3_errmsg(db));
        return 1;
    }
    int64_t start = monotonic_ns();
    exec(db, "BEGIN");
    for (size_t i = 0; i < want; i++) {
        size_t t = i % (size_t)ntraces;
        const struct row *r = &rows[first[t] + (i / (size_t)ntraces) % nrows[t]];
        event_row_bind(st, &r->ev, r->detail, r->detail_len, false);
        if (sqlite3_step(st) != SQLITE_DONE) {
            fprintf(stderr, "ref-sqlite-insert: insert: %s\n", sqlite3_errmsg(db));
            return 1;
        }
        sqlite3_reset(st);
        if (i % batch == batch - 1) {
            exec(db, "COMMIT");
            exec(db, "BEGIN");
        }
    }
    exec(db, "COMMIT");
    double seconds = (double)(monotonic_ns() - start) / 1e9;
    printf("ref-sqlite-insert: %zu rows in %.3f s: %.0f rows/s (batch %zu)\n", want, seconds, want / seconds, batch);
    sqlite3_finalize(st);
    sqlite3_close(db);
    for (int t = 0; t < ntraces; t++)
        for (size_t i = 0; i < nrows[t]; i++)
            free(rows[first[t] + i].detail);
    free(rows);
    free(nrows);
    free(first);
    arena_free(&arena);
    for (int t = 0; t < ntraces; t++)
        replay_trace_free(&traces[t]);
    free(traces);
    return 0;
}
