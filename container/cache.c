/* cache.c - container records by id, looked up on a thread of their own.
 *
 * Callers (the writer thread's stages, the rules' view) only take a mutex:
 * an id not known yet gets an entry and a lookup is due at once; the
 * lookup thread reads the state file (state_file.c) and publishes the
 * record: into the entry, into a ring of recent publications (storage
 * writes each as a row) and by moving the generation on. A lookup that
 * finds no state file is due again after retry_ns, doubling, until
 * `attempts` have failed: then the container is published as unknown
 * (counted) and never looked for again. A found container's passwd and
 * group are checked for a change at most every CONTAINER_USERS_RECHECK_NS,
 * when someone asks for it. At most max_records entries: the least
 * recently asked for goes (its record lives on with its holders).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "internal.h"
#include "log.h"
#include "thread.h"

#define BUCKETS 1024

struct entry {
    struct entry *next;              /* bucket chain */
    char id[CONTAINER_ID_MAX];
    const struct container_record *rec;   /* NULL until the first lookup ends */
    unsigned attempts;               /* state file searches made */
    int64_t due_ns;                  /* monotonic: the next lookup; 0 none */
    bool in_flight;                  /* the thread works on it (not evicted meanwhile) */
    bool recheck_users;              /* passwd/group to be compared with the files */
    int64_t users_checked_ns;
    int64_t asked_ns;                /* last get, for eviction */
};

struct container_cache {
    pthread_mutex_t mu;
    pthread_cond_t work;             /* the thread: something is due, or stop */
    pthread_cond_t published_cv;     /* waiters: a record was published */
    pthread_t thread;
    bool started, stopping;
    char **roots;
    size_t nroots;
    unsigned attempts;
    int64_t retry_ns;
    size_t max_records;
    struct docker_source *docker;    /* Docker's API, a source of names besides the state file; NULL: none */
    struct entry *buckets[BUCKETS];
    size_t nentries;
    /* The last max_records publications, for container_cache_published. */
    const struct container_record **ring;
    _Atomic uint64_t generation;     /* publications so far */
    struct container_cache_stats stats;
    bool warned_refused, warned_users, warned_mounts;
};

static uint32_t hash_id(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static struct entry *find(struct container_cache *c, const char *id)
{
    for (struct entry *e = c->buckets[hash_id(id) % BUCKETS]; e; e = e->next)
        if (strcmp(e->id, id) == 0)
            return e;
    return NULL;
}

static void unlink_entry(struct container_cache *c, struct entry *victim)
{
    struct entry **p = &c->buckets[hash_id(victim->id) % BUCKETS];
    while (*p != victim)
        p = &(*p)->next;
    *p = victim->next;
    container_record_release(victim->rec);
    free(victim);
    c->nentries--;
}

/* The least recently asked for entry the thread is not working on. */
static void evict_one(struct container_cache *c)
{
    struct entry *oldest = NULL;
    for (size_t b = 0; b < BUCKETS; b++)
        for (struct entry *e = c->buckets[b]; e; e = e->next)
            if (!e->in_flight && (!oldest || e->asked_ns < oldest->asked_ns))
                oldest = e;
    if (oldest) {
        unlink_entry(c, oldest);
        c->stats.evicted++;
    }
}

static struct entry *add(struct container_cache *c, const char *id, int64_t now)
{
    if (c->nentries >= c->max_records)
        evict_one(c);
    struct entry *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    snprintf(e->id, sizeof(e->id), "%s", id);
    e->due_ns = now;
    e->asked_ns = now;
    struct entry **b = &c->buckets[hash_id(id) % BUCKETS];
    e->next = *b;
    *b = e;
    c->nentries++;
    pthread_cond_signal(&c->work);
    return e;
}

/* Under the mutex: the record goes into the entry and the ring. */
static void publish(struct container_cache *c, struct entry *e, const struct container_record *r)
{
    container_record_release(e->rec);
    e->rec = r;
    uint64_t seq = atomic_load(&c->generation);
    size_t slot = (size_t)(seq % c->max_records);
    container_record_release(c->ring[slot]);
    container_record_ref(r);
    c->ring[slot] = r;
    atomic_store(&c->generation, seq + 1);
    pthread_cond_broadcast(&c->published_cv);
}

static struct entry *next_due(struct container_cache *c, int64_t now, int64_t *soonest)
{
    *soonest = 0;
    for (size_t b = 0; b < BUCKETS; b++)
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
    }
}

/* A container's record from the state file, then from the other sources of names (the source hook: Docker's
 * API for a container whose state file names none). On the lookup thread, the mutex released. */
static struct container_record *read_record(struct container_cache *c, const char *id, uint64_t *users_refused)
{
    struct container_record *r = container_read_counted(id, (const char *const *)c->roots, c->nroots, users_refused);
    if (r)
        docker_source_fill(c->docker, (struct record *)r);
    return r;
}

/* One lookup, the mutex released around the file system. */
static void run_lookup(struct container_cache *c, struct entry *e)
{
    bool users = e->recheck_users && e->rec;
    e->in_flight = true;
    e->recheck_users = false;
    const struct container_record *old = e->rec;
    if (old)
        container_record_ref(old);
    char id[CONTAINER_ID_MAX];
    memcpy(id, e->id, sizeof(id));
    pthread_mutex_unlock(&c->mu);

    uint64_t users_refused = 0;
    struct container_record *r = users ? container_reread_users(old) : read_record(c, id, &users_refused);
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
    e->due_ns = 0;
    if (!r) {   /* out of memory: try again later */
        e->due_ns = now + c->retry_ns;
        return;
    }
    if (r->state == CONTAINER_UNKNOWN && e->attempts < c->attempts && c->nroots) {
        int64_t wait = c->retry_ns;
        for (unsigned i = 1; i < e->attempts && wait < 60000000000LL; i++)
            wait *= 2;
        e->due_ns = now + wait;
        container_record_release(r);
        pthread_cond_broadcast(&c->published_cv);   /* a waiter waits for the first attempt only */
        return;
    }
    if (r->state == CONTAINER_UNKNOWN)
        c->stats.unknown++;
    note_outcome(c, r, users_refused);
    e->users_checked_ns = now;
    publish(c, e, r);
}

static void *lookup_thread(void *arg)
{
    struct container_cache *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->stopping) {
        int64_t now = monotonic_ns(), soonest;
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
    c->max_records = cfg->max_records ? cfg->max_records : CONTAINER_CACHE_MAX;
    c->ring = calloc(c->max_records, sizeof(*c->ring));
    c->roots = cfg->nroots ? calloc(cfg->nroots, sizeof(*c->roots)) : NULL;
    bool ok = c->ring && (c->roots || !cfg->nroots) && cfg->nroots <= CONTAINER_ROOTS_MAX;
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
    return c;
}

void container_cache_close(struct container_cache *c)
{
    if (!c)
        return;
    if (c->started) {
        pthread_mutex_lock(&c->mu);
        c->stopping = true;
        pthread_cond_signal(&c->work);
        pthread_mutex_unlock(&c->mu);
        pthread_join(c->thread, NULL);
    }
    for (size_t b = 0; b < BUCKETS; b++)
        while (c->buckets[b])
            unlink_entry(c, c->buckets[b]);
    for (size_t i = 0; c->ring && i < c->max_records; i++)
        container_record_release(c->ring[i]);
    free(c->ring);
    docker_source_free(c->docker);
    for (size_t i = 0; i < c->nroots; i++)
        free(c->roots[i]);
    free(c->roots);
    pthread_cond_destroy(&c->work);
    pthread_cond_destroy(&c->published_cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* Under the mutex: id's entry (made when new), NULL for an id never looked up. */
static struct entry *entry_for(struct container_cache *c, const char *id, int64_t now)
{
    if (!container_id_valid(id)) {
        c->stats.invalid_ids++;
        return NULL;
    }
    struct entry *e = find(c, id);
    if (!e)
        e = add(c, id, now);
    if (!e)
        return NULL;
    e->asked_ns = now;
    if (e->rec && e->rec->state == CONTAINER_FOUND && !e->in_flight && !e->recheck_users &&
        now - e->users_checked_ns >= CONTAINER_USERS_RECHECK_NS) {
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

const struct container_record *container_cache_get(struct container_cache *c, const char *id)
{
    if (!c || !id)
        return NULL;
    pthread_mutex_lock(&c->mu);
    const struct container_record *r = take(entry_for(c, id, monotonic_ns()));
    pthread_mutex_unlock(&c->mu);
    return r;
}

const struct container_record *container_cache_wait(struct container_cache *c, const char *id, int64_t timeout_ns)
{
    if (!c || !id)
        return NULL;
    int64_t now = monotonic_ns(), deadline = now + timeout_ns;
    pthread_mutex_lock(&c->mu);
    struct entry *e = entry_for(c, id, now);
    /* The first lookup only: a container retried later is not waited for again. */
    while (e && !e->rec && e->attempts == 0 && !c->stopping) {
        struct timespec until = {.tv_sec = (time_t)(deadline / 1000000000), .tv_nsec = (long)(deadline % 1000000000)};
        if (pthread_cond_timedwait(&c->published_cv, &c->mu, &until) != 0) {
            c->stats.wait_timeouts++;
            break;
        }
        e = find(c, id);   /* it may have been evicted meanwhile */
    }
    const struct container_record *r = take(e);
    pthread_mutex_unlock(&c->mu);
    return r;
}

uint64_t container_cache_generation(const struct container_cache *c)
{
    return c ? atomic_load(&((struct container_cache *)c)->generation) : 0;
}

size_t container_cache_published(struct container_cache *c, uint64_t *cursor, const struct container_record **out,
                                 size_t max)
{
    if (!c)
        return 0;
    pthread_mutex_lock(&c->mu);
    uint64_t end = atomic_load(&c->generation);
    if (end - *cursor > c->max_records || *cursor > end)
        *cursor = end > c->max_records ? end - c->max_records : 0;
    size_t n = 0;
    for (; *cursor < end && n < max; ++*cursor) {
        const struct container_record *r = c->ring[*cursor % c->max_records];
        container_record_ref(r);
        out[n++] = r;
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
