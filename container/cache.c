/* cache.c - container records by (sandbox, id), looked up on a thread of
 * their own.
 *
 * Callers (the writer thread's stages, the rules' view) only take a mutex:
 * a container not known yet gets an entry and a lookup is due at once; the
 * lookup thread reads its state file as its sandbox's (state_file.c) and
 * publishes the record: into the entry, onto the dirty list (storage takes
 * it from there, once, as a row) and by moving the generation on. A lookup
 * that finds no state file is due again after retry_ns, doubling, until
 * `attempts` have failed: then the container is published as unknown
 * (counted) and not looked for again, unless its state file appears in a
 * watched root (watch.c). A connection's own sandbox is looked for every
 * CONTAINER_OPEN_RETRY_NS from the connection's open (conns.c). What was
 * found is kept: a later lookup that finds nothing never replaces it. A
 * found container's passwd and group are checked for a change at most every
 * users_recheck_ns, when someone asks for it. At most max_records entries
 * and max_bytes of their records: the least recently asked for goes (its
 * record lives on with its holders). The cache keeps no record it replaced.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_int.h"
#include "clock.h"
#include "log.h"
#include "thread.h"

static uint32_t hash_key(uint32_t scope, const char *sandbox, const char *id)
{
    uint32_t h = 2166136261u ^ scope;
    for (const char *s = sandbox; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    h = (h ^ '/') * 16777619u;
    for (const char *s = id; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static struct entry *find(struct container_cache *c, uint32_t scope, const char *sandbox, const char *id)
{
    for (struct entry *e = c->buckets[hash_key(scope, sandbox, id) % CACHE_BUCKETS]; e; e = e->next)
        if (e->scope == scope && strcmp(e->id, id) == 0 && strcmp(e->sandbox, sandbox) == 0)
            return e;
    return NULL;
}

static size_t record_bytes(const struct container_record *r)
{
    return r ? ((const struct record *)r)->bytes : 0;
}

static void set_record(struct container_cache *c, struct entry *e, const struct container_record *r)
{
    c->bytes -= record_bytes(e->rec);
    c->stats.records -= e->rec != NULL;
    container_record_release(e->rec);
    e->rec = r;
    c->bytes += record_bytes(r);
    c->stats.records += r != NULL;
    c->stats.record_bytes = c->bytes;
}

static void unlink_entry(struct container_cache *c, struct entry *victim)
{
    struct entry **p = &c->buckets[hash_key(victim->scope, victim->sandbox, victim->id) % CACHE_BUCKETS];
    while (*p != victim)
        p = &(*p)->next;
    *p = victim->next;
    if (victim->dirty) {   /* off the dirty list: its row is not written */
        struct entry **d = &c->dirty_head;
        while (*d != victim)
            d = &(*d)->dirty_next;
        *d = victim->dirty_next;
        if (c->dirty_tail == &victim->dirty_next)
            c->dirty_tail = d;
    }
    set_record(c, victim, NULL);
    if (victim->held_fd >= 0)
        close(victim->held_fd);
    free(victim->held_path);
    free(victim->bundle);
    free(victim);
    c->nentries--;
}

/* The least recently asked for entry the thread is not working on. */
static bool evict_one(struct container_cache *c)
{
    struct entry *oldest = NULL;
    for (size_t b = 0; b < CACHE_BUCKETS; b++)
        for (struct entry *e = c->buckets[b]; e; e = e->next)
            if (!e->in_flight && (!oldest || e->asked_ns < oldest->asked_ns))
                oldest = e;
    if (!oldest)
        return false;
    unlink_entry(c, oldest);
    c->stats.evicted++;
    return true;
}

/* Room for one more entry (and for what the records hold). */
static void make_room(struct container_cache *c)
{
    while ((c->nentries >= c->max_records || c->bytes > c->max_bytes) && evict_one(c))
        ;
}

static struct entry *add(struct container_cache *c, uint32_t scope, const char *sandbox, const char *id, int64_t now)
{
    make_room(c);
    struct entry *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->scope = scope;
    snprintf(e->sandbox, sizeof(e->sandbox), "%s", sandbox);
    snprintf(e->id, sizeof(e->id), "%s", id);
    e->due_ns = now;
    e->asked_ns = now;
    e->held_fd = -1;
    struct entry **b = &c->buckets[hash_key(scope, sandbox, id) % CACHE_BUCKETS];
    e->next = *b;
    *b = e;
    c->nentries++;
    pthread_cond_signal(&c->work);
    return e;
}

struct entry *cache_entry(struct container_cache *c, uint32_t scope, const char *sandbox, const char *id, int64_t now)
{
    struct entry *e = find(c, scope, sandbox, id);
    return e ? e : add(c, scope, sandbox, id, now);
}

void cache_signal(struct container_cache *c)
{
    atomic_fetch_add(&c->generation, 1);
    pthread_cond_broadcast(&c->published_cv);
}

/* Under the mutex: the record goes into the entry and, once, onto the dirty list. */
static void publish(struct container_cache *c, struct entry *e, const struct container_record *r)
{
    set_record(c, e, r);
    if (!e->dirty) {
        e->dirty = true;
        e->dirty_next = NULL;
        *c->dirty_tail = e;
        c->dirty_tail = &e->dirty_next;
    }
    cache_signal(c);
    if (c->bytes > c->max_bytes)
        make_room(c);
}

static struct entry *next_due(struct container_cache *c, int64_t now, int64_t *soonest)
{
    for (size_t b = 0; b < CACHE_BUCKETS; b++)
        for (struct entry *e = c->buckets[b]; e; e = e->next) {
            if (e->in_flight || (!e->due_ns && !e->recheck_users))
                continue;
            if (e->recheck_users || e->due_ns <= now)
                return e;
            if (!*soonest || e->due_ns < *soonest)
                *soonest = e->due_ns;
        }
    return NULL;
}

static void note_outcome(struct container_cache *c, const struct container_record *r, uint64_t users_refused)
{
    c->stats.users_refused += users_refused;
    if (users_refused && !c->warned_users) {
        c->warned_users = true;
        log_warn("containers: container %s: its /etc/passwd or /etc/group was refused (not a regular file, "
                 "larger than 1 MiB, or leading out of its root); user names stay unknown (counted in "
                 "seccheckd_container_user_files_refused_total, logged once)", r->id);
    }
    if (r->state == CONTAINER_FOUND) {
        c->stats.found++;
        c->stats.mounts_malformed += r->mounts_malformed;
        if (r->mounts_malformed && !c->warned_mounts) {
            c->warned_mounts = true;
            log_warn("containers: container %s: %u of its spec's mounts were refused or malformed (not an object, "
                     "no destination, past %d mounts or %u bytes, a value cut or holding a control character, an "
                     "option not a string; counted in seccheckd_container_mounts_malformed_total, logged once)",
                     r->id, (unsigned)r->mounts_malformed, CONTAINER_MOUNTS_MAX, CONTAINER_MOUNTS_TEXT_MAX);
        }
    } else if (r->state == CONTAINER_REFUSED) {
        c->stats.refused++;
        if (!c->warned_refused) {
            c->warned_refused = true;
            log_warn("containers: %s: %s; its events carry no names (counted in "
                     "seccheckd_container_state_files_refused_total, logged once)",
                     r->state_file ? r->state_file : r->id, r->why ? r->why : "refused");
        }
    } else if (r->state == CONTAINER_FOREIGN) {
        c->stats.foreign++;
    } else {
        c->stats.unknown++;
    }
}

/* When the next lookup of e is due after one that found nothing; 0: none. */
static int64_t retry_at(const struct container_cache *c, const struct entry *e, int64_t now)
{
    if (now < e->open_until_ns)
        return now + CONTAINER_OPEN_RETRY_NS;
    if (e->attempts >= c->attempts || (!c->nroots && e->scope == 0))
        return 0;
    int64_t wait = c->retry_ns;
    for (unsigned i = 1; i < e->attempts && wait < 60000000000LL; i++)
        wait *= 2;
    return now + wait;
}

/* One lookup, the mutex released around the file system. */
static void run_lookup(struct container_cache *c, struct entry *e)
{
    bool users = e->recheck_users && e->rec && e->rec->state == CONTAINER_FOUND;
    e->in_flight = true;
    e->recheck_users = false;
    const struct container_record *old = e->rec;
    if (old)
        container_record_ref(old);
    char sandbox[CONTAINER_ID_MAX], id[CONTAINER_ID_MAX];
    memcpy(sandbox, e->sandbox, sizeof(sandbox));
    memcpy(id, e->id, sizeof(id));
    /* The daemon's roots are fixed for the cache's life; a connection's own
     * is copied (the connection may close meanwhile). */
    const char *own = e->scope ? conns_root_of(c, e->scope) : NULL;
    char *own_copy = own ? strdup(own) : NULL;
    const char *const *roots = e->scope == 0 ? (const char *const *)c->roots : (const char *const *)&own_copy;
    size_t nroots = e->scope == 0 ? c->nroots : own_copy != NULL;
    /* The file as the watch opened it when written, if it did: read even when gone since. */
    int held = users ? -1 : e->held_fd;
    char *held_path = held >= 0 ? e->held_path : NULL;
    if (held >= 0) {
        e->held_fd = -1;
        e->held_path = NULL;
    }
    char *bundle = !users && e->bundle ? strdup(e->bundle) : NULL;
    pthread_mutex_unlock(&c->mu);

    uint64_t users_refused = 0;
    struct container_record *r =
        users       ? container_reread_users(old)
        : held >= 0 ? container_read_held(sandbox, id, held, held_path, &users_refused)
                    : container_read_counted(sandbox, id, roots, nroots, &users_refused);
    if (r && r->state == CONTAINER_UNKNOWN && bundle) {   /* not written yet, or gone already */
        struct container_record *b = container_read_bundle(sandbox, id, bundle, &users_refused);
        if (b && b->state == CONTAINER_FOUND) {
            container_record_release(r);
            r = b;
        } else {
            container_record_release(b);
        }
    }
    if (r && !users && c->docker) {   /* the other sources of names: Docker's API, for a container whose state names none */
        docker_source_fill(c->docker, (struct record *)r);
        record_account((struct record *)r);   /* its labels count against the cache's bytes too */
    }
    free(bundle);
    free(held_path);
    free(own_copy);
    container_record_release(old);
    int64_t now = monotonic_ns();

    pthread_mutex_lock(&c->mu);
    e->in_flight = false;
    if (users) {
        e->users_checked_ns = now;
        if (r)
            publish(c, e, r);
        return;
    }
    c->stats.lookups++;
    e->attempts++;
    e->due_ns = e->again ? now : 0;
    e->again = false;
    if (!r) {   /* out of memory: try again later */
        e->due_ns = now + c->retry_ns;
        return;
    }
    if (e->rec && e->rec->state == CONTAINER_FOUND) {
        container_record_release(r);   /* found before: kept, whatever this one says */
        return;
    }
    bool retry = r->state == CONTAINER_UNKNOWN || (r->state == CONTAINER_REFUSED && ((struct record *)r)->partial);
    if (retry && (e->due_ns || (e->due_ns = retry_at(c, e, now)) != 0)) {
        container_record_release(r);
        pthread_cond_broadcast(&c->published_cv);   /* a waiter may wait for the first attempt only */
        return;
    }
    if (e->rec && e->rec->state == r->state && r->state != CONTAINER_FOUND) {
        container_record_release(r);   /* looked again (a watch), the same answer: nothing new */
        pthread_cond_broadcast(&c->published_cv);
        return;
    }
    note_outcome(c, r, users_refused);
    e->users_checked_ns = now;
    log_debug("containers: %s of sandbox %s: %s after %u lookup%s%s%s", r->id, r->sandbox, container_state_name(r->state),
              e->attempts, e->attempts == 1 ? "" : "s", r->why ? ": " : "", r->why ? r->why : "");
    publish(c, e, r);
}

static void *lookup_thread(void *arg)
{
    struct container_cache *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->stopping) {
        int64_t now = monotonic_ns(), soonest = 0;
        struct conn_entry *ce = conns_due(c, now, &soonest);
        if (ce) {
            conns_run(c, ce);
            continue;
        }
        struct entry *e = next_due(c, now, &soonest);
        if (e) {
            run_lookup(c, e);
            continue;
        }
        if (!soonest) {
            pthread_cond_wait(&c->work, &c->mu);
        } else {
            struct timespec until = {.tv_sec = (time_t)(soonest / 1000000000), .tv_nsec = (long)(soonest % 1000000000)};
            pthread_cond_timedwait(&c->work, &c->mu, &until);
        }
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

struct container_cache *container_cache_open(const struct container_cache_config *cfg, char *err, size_t errlen)
{
    struct container_cache *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->attempts = cfg->attempts ? cfg->attempts : CONTAINER_ATTEMPTS;
    c->retry_ns = cfg->retry_ns > 0 ? cfg->retry_ns : 100000000;
    c->users_recheck_ns = cfg->users_recheck_ns > 0 ? cfg->users_recheck_ns : CONTAINER_USERS_RECHECK_NS;
    c->max_records = cfg->max_records ? cfg->max_records : CONTAINER_CACHE_MAX;
    c->max_bytes = cfg->max_bytes ? cfg->max_bytes : CONTAINER_CACHE_MAX_BYTES;
    c->dirty_tail = &c->dirty_head;
    c->inotify_fd = c->stop_fd = -1;
    c->roots = cfg->nroots ? calloc(cfg->nroots, sizeof(*c->roots)) : NULL;
    bool ok = (c->roots || !cfg->nroots) && cfg->nroots <= CONTAINER_ROOTS_MAX;
    for (size_t i = 0; ok && i < cfg->nroots; i++)
        ok = (c->roots[c->nroots++] = strdup(cfg->roots[i])) != NULL;
    char docker_err[256] = "";
    if (ok && cfg->docker_socket)
        ok = (c->docker = docker_source_new(cfg->docker_socket, docker_err, sizeof(docker_err))) != NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->work, &ca);
    pthread_cond_init(&c->published_cv, &ca);
    pthread_condattr_destroy(&ca);
    if (ok && thread_start_blocking_signals(&c->thread, NULL, lookup_thread, c) == 0)
        c->started = true;
    if (!c->started) {
        snprintf(err, errlen, "%s", cfg->nroots > CONTAINER_ROOTS_MAX ? "at most 16 runsc roots"
                                    : docker_err[0] ? docker_err : "cannot start the container lookup thread");
        container_cache_close(c);
        return NULL;
    }
    if (!cfg->no_watch)
        watch_start(c);
    return c;
}

void container_cache_close(struct container_cache *c)
{
    if (!c)
        return;
    watch_stop(c);
    if (c->started) {
        pthread_mutex_lock(&c->mu);
        c->stopping = true;
        pthread_cond_signal(&c->work);
        pthread_mutex_unlock(&c->mu);
        pthread_join(c->thread, NULL);
    }
    conns_free_all(c);
    for (size_t b = 0; b < CACHE_BUCKETS; b++)
        while (c->buckets[b])
            unlink_entry(c, c->buckets[b]);
    for (size_t i = 0; i < c->nroots; i++)
        free(c->roots[i]);
    free(c->roots);
    docker_source_free(c->docker);
    pthread_cond_destroy(&c->work);
    pthread_cond_destroy(&c->published_cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* Under the mutex: the entry of (b, id) (made when new), NULL for an id never looked up. */
static struct entry *entry_for(struct container_cache *c, const struct container_binding *b, const char *id,
                               int64_t now)
{
    if (!container_id_valid(id) || !b || !container_id_valid(b->sandbox)) {
        c->stats.invalid_ids++;
        return NULL;
    }
    struct entry *e = cache_entry(c, b->scope, b->sandbox, id, now);
    if (!e)
        return NULL;
    e->asked_ns = now;
    if (e->rec && e->rec->state == CONTAINER_FOUND && !e->in_flight && !e->recheck_users &&
        now - e->users_checked_ns >= c->users_recheck_ns) {
        e->recheck_users = true;
        pthread_cond_signal(&c->work);
    }
    return e;
}

static const struct container_record *take(const struct entry *e)
{
    if (!e || !e->rec)
        return NULL;
    container_record_ref(e->rec);
    return e->rec;
}

const struct container_record *container_cache_get(struct container_cache *c, const struct container_binding *b,
                                                   const char *id)
{
    if (!c || !id)
        return NULL;
    pthread_mutex_lock(&c->mu);
    const struct container_record *r = take(entry_for(c, b, id, monotonic_ns()));
    pthread_mutex_unlock(&c->mu);
    return r;
}

/* Is e still worth waiting for: no record, and either no attempt ended yet
 * or it is a connection's own sandbox in its open window? */
static bool worth_waiting(const struct entry *e, int64_t now)
{
    return e && !e->rec && (e->attempts == 0 || now < e->open_until_ns);
}

const struct container_record *container_cache_wait(struct container_cache *c, const struct container_binding *b,
                                                    const char *id, int64_t timeout_ns)
{
    if (!c || !id)
        return NULL;
    int64_t now = monotonic_ns(), deadline = now + timeout_ns;
    pthread_mutex_lock(&c->mu);
    struct entry *e = entry_for(c, b, id, now);
    while (worth_waiting(e, now) && !c->stopping) {
        struct timespec until = {.tv_sec = (time_t)(deadline / 1000000000), .tv_nsec = (long)(deadline % 1000000000)};
        if (pthread_cond_timedwait(&c->published_cv, &c->mu, &until) != 0) {
            c->stats.wait_timeouts++;
            break;
        }
        now = monotonic_ns();
        e = find(c, b->scope, b->sandbox, id);   /* it may have been evicted meanwhile */
    }
    const struct container_record *r = take(e);
    pthread_mutex_unlock(&c->mu);
    return r;
}

uint64_t container_cache_generation(const struct container_cache *c)
{
    return c ? atomic_load(&((struct container_cache *)c)->generation) : 0;
}

size_t container_cache_take_published(struct container_cache *c, const struct container_record **out, size_t max)
{
    if (!c)
        return 0;
    pthread_mutex_lock(&c->mu);
    size_t n = 0;
    while (n < max && c->dirty_head) {
        struct entry *e = c->dirty_head;
        c->dirty_head = e->dirty_next;
        if (!c->dirty_head)
            c->dirty_tail = &c->dirty_head;
        e->dirty = false;
        e->dirty_next = NULL;
        if (e->rec) {
            container_record_ref(e->rec);
            out[n++] = e->rec;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return n;
}

void container_cache_get_stats(struct container_cache *c, struct container_cache_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    *out = c->stats;
    pthread_mutex_unlock(&c->mu);
    struct docker_source_stats d;
    docker_source_get_stats(c->docker, &d);
    out->docker_lookups = d.lookups;
    out->docker_found = d.found;
    out->docker_not_found = d.not_found;
    out->docker_failed = d.failed;
    out->docker_refused = d.refused;
    out->labels_dropped = d.labels_dropped;
}
