#include "process_history.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>

#include "arena.h"
#include "decode.h"
#include "strbuf.h"
#include "wire.h"

/* Connections still open when the last image stopped: kept across SIGUSR2
 * (close_ns NULL), or closed by the daemon's own shutdown. A connection its
 * sandbox closed belongs to a sandbox that is gone. */
static const char open_conns_sql[] =
    "SELECT id FROM connections WHERE close_ns IS NULL OR close_reason = 'shutdown' ORDER BY id DESC LIMIT ?1";

/* The process events (container start, sentry clone, exec, exit) of those
 * connections, newest first through events_by_type's msg_type, then
 * replayed oldest first. The window is the daemon's own: it ends at the
 * receive time of the newest event stored (the last image's clock), never
 * at a time an event carries, which its sandbox chose (one clone dated 2116
 * would otherwise put every other sandbox's history outside it). */
static const char history_sql[] =
    "SELECT id, conn_id, recv_ns, raw, container_id FROM ("
    "  SELECT id, conn_id, recv_ns, raw, container_id FROM events"
    "  WHERE msg_type IN (1, 2, 3, 5)"
    "    AND recv_ns >= (SELECT recv_ns FROM events ORDER BY id DESC LIMIT 1) - ?1"
    "    AND conn_id IN (SELECT value FROM json_each(?2))"
    "  ORDER BY id DESC LIMIT ?3)"
    " ORDER BY id";

static struct process_history_conn *old_conn(struct process_history *h, uint64_t id)
{
    for (size_t i = 0; i < h->nold; i++)
        if (h->old[i].conn_id == id)
            return &h->old[i];
    return NULL;
}

/* "[3,7,9]": the connections, for json_each. 0 connections: -1. */
static int load_open_conns(struct process_history *h, sqlite3 *db, struct strbuf *ids)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, open_conns_sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int(st, 1, PROCESS_HISTORY_MAX_CONNS);
    h->old = calloc(PROCESS_HISTORY_MAX_CONNS, sizeof(*h->old));
    strbuf_putc(ids, '[');
    while (h->old && sqlite3_step(st) == SQLITE_ROW) {
        h->old[h->nold].conn_id = (uint64_t)sqlite3_column_int64(st, 0);
        if (h->nold)
            strbuf_putc(ids, ',');
        strbuf_put_u64(ids, h->old[h->nold++].conn_id);
    }
    strbuf_putc(ids, ']');
    sqlite3_finalize(st);
    return h->old && h->nold && !ids->failed ? 0 : -1;
}

static void replay_row(struct process_history *h, sqlite3_stmt *st, const struct decoder *d, struct arena *arena,
                       struct rules_engine *e, struct process_history_stats *stats)
{
    const uint8_t *raw = sqlite3_column_blob(st, 3);
    size_t len = (size_t)sqlite3_column_bytes(st, 3);
    struct wire_header hdr;
    if (!raw || wire_header_parse(raw, len, &hdr) != WIRE_OK)
        return;
    struct event ev = {0};
    arena_reset(arena);
    decode_event(d, arena, &hdr, raw, len, &ev);
    if (ev.status != DECODE_OK)
        return;
    ev.conn_id = (uint64_t)sqlite3_column_int64(st, 1);
    ev.recv_ns = sqlite3_column_int64(st, 2);
    rules_engine_observe(e, &ev);
    stats->events++;
    struct process_history_conn *c = old_conn(h, ev.conn_id);
    const char *container = (const char *)sqlite3_column_text(st, 4);
    if (c && container)
        snprintf(c->container_id, sizeof(c->container_id), "%s", container);
}

static int replay(struct process_history *h, sqlite3 *db, const char *ids, struct rules_engine *e,
                  struct process_history_stats *stats)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, history_sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, (int64_t)PROCESS_HISTORY_WINDOW_S * 1000000000);
    sqlite3_bind_text(st, 2, ids, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, PROCESS_HISTORY_MAX_EVENTS);
    struct decoder d;
    decoder_init(&d);
    struct arena arena;
    arena_init(&arena, 64 * 1024, SIZE_MAX);   /* decode_event bounds each unpack itself */
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        replay_row(h, st, &d, &arena, e, stats);
    arena_free(&arena);
    sqlite3_finalize(st);
    for (size_t i = 0; i < h->nold; i++)
        stats->connections += h->old[i].container_id[0] != '\0';
    return rc == SQLITE_DONE ? 0 : -1;
}

int process_history_load(struct process_history *h, const char *db_path, struct rules_engine *e,
                         struct process_history_stats *stats, char *err, size_t errlen)
{
    memset(stats, 0, sizeof(*stats));
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    struct strbuf ids = {0};
    if (rc == SQLITE_OK && load_open_conns(h, db, &ids) != 0) {
        strbuf_free(&ids);
        sqlite3_close(db);
        return 0;   /* nothing was open: nothing to rebuild */
    }
    /* One read transaction: a consistent picture while the writer goes on. */
    if (rc == SQLITE_OK && (rc = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL)) == SQLITE_OK) {
        rc = replay(h, db, ids.data, e, stats) == 0 ? SQLITE_OK : SQLITE_ERROR;
        sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    }
    if (rc != SQLITE_OK)
        snprintf(err, errlen, "cannot read the process history in %s: %s", db_path,
                 db ? sqlite3_errmsg(db) : "out of memory");
    strbuf_free(&ids);
    sqlite3_close(db);
    return rc == SQLITE_OK ? 0 : -1;
}

/* ---- which table a live connection uses ---- */

static size_t slot_of(const struct process_history *h, uint64_t conn_id)
{
    size_t i = (size_t)(conn_id * 0x9E3779B97F4A7C15ull) & (h->map_cap - 1);
    while (h->map[i].conn_id && h->map[i].conn_id != conn_id)
        i = (i + 1) & (h->map_cap - 1);
    return i;
}

static int grow_map(struct process_history *h)
{
    size_t old_cap = h->map_cap;
    struct process_history_slot *old = h->map;
    h->map_cap = old_cap ? old_cap * 2 : 64;
    if (!(h->map = calloc(h->map_cap, sizeof(*h->map)))) {
        h->map = old;
        h->map_cap = old_cap;
        return -1;
    }
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].conn_id)
            h->map[slot_of(h, old[i].conn_id)] = old[i];
    free(old);
    return 0;
}

/* The table a connection seen for the first time takes: its own when it is
 * one of the old connections (kept across SIGUSR2), else an unclaimed old
 * connection's of the same container, else a new one. */
static uint64_t choose_table(struct process_history *h, const struct event *ev)
{
    struct process_history_conn *c = old_conn(h, ev->conn_id);
    if (c) {
        c->claimed = true;
        return ev->conn_id;
    }
    const char *container = ev->context ? ev->context->container_id : NULL;
    if (container && container[0])
        for (size_t i = 0; i < h->nold; i++)
            if (!h->old[i].claimed && strcmp(h->old[i].container_id, container) == 0) {
                h->old[i].claimed = true;
                return h->old[i].conn_id;
            }
    return ev->conn_id;
}

uint64_t process_history_table(struct process_history *h, const struct event *ev)
{
    if (h->nold == 0 || ev->conn_id == 0)
        return ev->conn_id;   /* nothing to take over: every table is the connection's own */
    if ((h->map_count + 1) * 2 > h->map_cap && grow_map(h) != 0)
        return ev->conn_id;
    size_t i = slot_of(h, ev->conn_id);
    if (!h->map[i].conn_id) {
        h->map[i].conn_id = ev->conn_id;
        h->map[i].table_id = choose_table(h, ev);
        h->map_count++;
    }
    return h->map[i].table_id;
}

uint64_t process_history_forget(struct process_history *h, uint64_t conn_id)
{
    if (!h->map_cap || !conn_id)
        return conn_id;
    size_t i = slot_of(h, conn_id);
    if (!h->map[i].conn_id)
        return conn_id;
    uint64_t table = h->map[i].table_id;
    /* Backward-shift deletion keeps every other entry reachable. */
    size_t mask = h->map_cap - 1, hole = i;
    h->map[hole].conn_id = 0;
    h->map_count--;
    for (size_t j = (hole + 1) & mask; h->map[j].conn_id; j = (j + 1) & mask) {
        size_t home = (size_t)(h->map[j].conn_id * 0x9E3779B97F4A7C15ull) & mask;
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            h->map[hole] = h->map[j];
            h->map[j].conn_id = 0;
            hole = j;
        }
    }
    return table;
}

void process_history_free(struct process_history *h)
{
    free(h->old);
    free(h->map);
    memset(h, 0, sizeof(*h));
}
