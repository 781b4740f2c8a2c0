#include "conn_snapshots.h"

#include <stdlib.h>
#include <string.h>

static bool is_closed(const struct conn_record *rec)
{
    return rec->close_reason[0] != '\0';
}

static bool waits_closed(const struct conn_snapshot *s)
{
    return !s->committed && is_closed(&s->rec);
}

/* The index of id, or where it goes. */
static size_t find(const struct conn_snapshots *cs, uint64_t id)
{
    size_t lo = 0, hi = cs->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cs->items[mid].rec.id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int make_room(struct conn_snapshots *cs)
{
    if (cs->n < cs->cap)
        return 0;
    size_t cap = cs->cap ? 2 * cs->cap : 64;
    struct conn_snapshot *items = realloc(cs->items, cap * sizeof(*items));
    if (!items)
        return -1;
    cs->items = items;
    cs->cap = cap;
    return 0;
}

static void remove_at(struct conn_snapshots *cs, size_t i)
{
    memmove(&cs->items[i], &cs->items[i + 1], (cs->n - i - 1) * sizeof(cs->items[0]));
    cs->n--;
}

/* Nothing commits and connections keep closing: the oldest closed one goes. */
static void give_up_oldest_closed(struct conn_snapshots *cs)
{
    for (size_t i = 0; i < cs->n; i++)
        if (waits_closed(&cs->items[i])) {
            remove_at(cs, i);
            cs->closed_uncommitted--;
            cs->lost++;
            return;
        }
}

int conn_snapshots_note(struct conn_snapshots *cs, const struct conn_record *rec)
{
    size_t i = find(cs, rec->id);
    if (i < cs->n && cs->items[i].rec.id == rec->id) {
        if (waits_closed(&cs->items[i]))
            cs->closed_uncommitted--;
    } else {
        if (make_room(cs) != 0)
            return -1;
        memmove(&cs->items[i + 1], &cs->items[i], (cs->n - i) * sizeof(cs->items[0]));
        cs->n++;
    }
    cs->items[i] = (struct conn_snapshot){.rec = *rec, .committed = false};
    if (!is_closed(rec))
        return 0;
    if (++cs->closed_uncommitted <= CONN_SNAPSHOTS_MAX_CLOSED)
        return 0;
    give_up_oldest_closed(cs);
    return 1;
}

size_t conn_snapshots_uncommitted(const struct conn_snapshots *cs)
{
    size_t n = 0;
    for (size_t i = 0; i < cs->n; i++)
        n += !cs->items[i].committed;
    return n;
}

void conn_snapshots_committed(struct conn_snapshots *cs)
{
    size_t kept = 0;
    for (size_t i = 0; i < cs->n; i++) {
        if (is_closed(&cs->items[i].rec))
            continue;
        cs->items[kept] = cs->items[i];
        cs->items[kept++].committed = true;
    }
    cs->n = kept;
    cs->closed_uncommitted = 0;
}

void conn_snapshots_uncommit_all(struct conn_snapshots *cs)
{
    for (size_t i = 0; i < cs->n; i++)
        cs->items[i].committed = false;
}

void conn_snapshots_free(struct conn_snapshots *cs)
{
    free(cs->items);
    memset(cs, 0, sizeof(*cs));
}
