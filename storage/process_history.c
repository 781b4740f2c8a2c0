#include "process_history.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <unistd.h>

#include "arena.h"
#include "clock.h"
#include "decode.h"
#include "log.h"
#include "strbuf.h"
#include "wire.h"

/* Connections still open when the last image stopped: kept across SIGUSR2
 * (close_ns NULL), or closed by the daemon's own shutdown. A connection its
 * sandbox closed belongs to a sandbox that is gone. */
static const char open_conns_sql[] =
    "SELECT id, coalesce(peer_pid, -1), coalesce(peer_uid, -1), coalesce(peer_gid, -1), connect_ns FROM connections"
    " WHERE close_ns IS NULL OR close_reason = 'shutdown' ORDER BY id DESC LIMIT ?1";

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
        struct process_history_conn *c = &h->old[h->nold];
        c->conn_id = (uint64_t)sqlite3_column_int64(st, 0);
        c->peer_pid = sqlite3_column_int64(st, 1);
        c->peer_uid = sqlite3_column_int64(st, 2);
        c->peer_gid = sqlite3_column_int64(st, 3);
        c->connect_ns = sqlite3_column_int64(st, 4);
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

/* When the process pid started, in CLOCK_BOOTTIME nanoseconds (field 22 of
 * /proc/PID/stat, in clock ticks); -1 when it is gone or unreadable. */
static int64_t process_start_boot_ns(int64_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%lld/stat", (long long)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');   /* the name may hold spaces and parentheses: fields follow the last ')' */
    long hz = sysconf(_SC_CLK_TCK);
    if (!p || hz <= 0 || hz > 1000000000)
        return -1;
    p++;
    for (int field = 3; field < 22; field++) {   /* state (3) ... itrealvalue (21) */
        p += strspn(p, " ");
        p += strcspn(p, " ");
    }
    char *end;
    errno = 0;
    unsigned long long ticks = strtoull(p, &end, 10);
    if (errno || end == p || ticks > (unsigned long long)INT64_MAX / 1000000000u)
        return -1;
    return (int64_t)(ticks * (1000000000u / (unsigned long long)hz));
}

/* The new connection's peer is the process that made the old one: the same
 * pid, uid and gid, and that pid's process started before the old
 * connection was made (a pid is never two live processes: a reused one
 * started later). connect_ns is the wall clock; it is compared through the
 * clocks' offset now, so a wall clock stepped since errs either way by the
 * step, and a tie needs the same pid all the same. */
static bool same_peer(const struct process_history_conn *old, const struct conn_record *rec)
{
    if (!rec || rec->peer_pid <= 0 || rec->peer_pid != old->peer_pid || rec->peer_uid != old->peer_uid ||
        rec->peer_gid != old->peer_gid)
        return false;
    int64_t started = process_start_boot_ns(rec->peer_pid);
    int64_t offset = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_BOOTTIME);
    return started >= 0 && started <= old->connect_ns - offset;
}

static const struct conn_record *record_of(const struct conn_record *conns, size_t n, uint64_t id)
{
    for (size_t i = 0; i < n; i++)
        if (conns[i].id == id)
            return &conns[i];
    return NULL;
}

/* The table a connection seen for the first time takes: its own when it is
 * one of the old connections (kept across SIGUSR2), else an unclaimed old
 * connection's of the container it names whose peer is its own, else a new
 * one (counted when its container was an old connection's). */
static uint64_t choose_table(struct process_history *h, const struct event *ev, const struct conn_record *rec)
{
    struct process_history_conn *c = old_conn(h, ev->conn_id);
    if (c) {
        c->claimed = true;
        return ev->conn_id;
    }
    const char *container = ev->context ? ev->context->container_id : NULL;
    if (!container || !container[0])
        return ev->conn_id;
    struct process_history_conn *named = NULL;
    for (size_t i = 0; i < h->nold; i++) {
        c = &h->old[i];
        if (c->claimed || strcmp(c->container_id, container) != 0)
            continue;
        if (same_peer(c, rec)) {
            c->claimed = true;
            log_info("rules: connection %llu takes over the process table of connection %llu (the same peer, "
                     "pid %lld, container %s)", (unsigned long long)ev->conn_id, (unsigned long long)c->conn_id,
                     (long long)c->peer_pid, c->container_id);
            return c->conn_id;
        }
        named = named ? named : c;
    }
    if (named) {
        h->untied++;
        if (!named->refusal_logged)
            log_warn("rules: connection %llu names container %s of connection %llu, but its peer is not the "
                     "process that made that one: its process table starts empty (%llu so far)",
                     (unsigned long long)ev->conn_id, named->container_id, (unsigned long long)named->conn_id,
                     (unsigned long long)h->untied);
        named->refusal_logged = true;
    }
    return ev->conn_id;
}

uint64_t process_history_table(struct process_history *h, const struct event *ev, const struct conn_record *conns,
                               size_t nconns)
{
    if (h->nold == 0 || ev->conn_id == 0)
        return ev->conn_id;   /* nothing to take over: every table is the connection's own */
    if ((h->map_count + 1) * 2 > h->map_cap && grow_map(h) != 0)
        return ev->conn_id;
    size_t i = slot_of(h, ev->conn_id);
    if (!h->map[i].conn_id) {
        h->map[i].conn_id = ev->conn_id;
        h->map[i].table_id = choose_table(h, ev, record_of(conns, nconns, ev->conn_id));
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
