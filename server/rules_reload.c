/* rules_reload.c - SIGHUP's rules load on a thread of its own (see the header).
 *
 * The loading thread and the loop share one struct, counted: the loop's
 * reference goes when its async handle has closed, the thread's when it
 * has handed its result over (or dropped it because the loop had gone).
 * uv_async_send is called under the mutex and only while the loop side is
 * open, so it never touches a closing handle.
 */
#include "rules_reload.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "thread.h"

struct shared {
    pthread_mutex_t mu;
    int refs;
    bool closed;                  /* the loop side is gone: drop the result */
    uv_async_t *async;
    bool ready;
    struct rule_set *result;
    struct rules_diag diag;
    double ms;
};

struct rules_reload {
    uv_loop_t *loop;
    uv_async_t async;
    struct shared *sh;
    rules_reload_done_fn done;
    void *data;
    bool running;
    char **pending;               /* the paths of the reload that waits, or NULL */
    size_t npending;
};

struct job {
    struct shared *sh;
    char **paths;
    size_t n;
};

static void free_paths(char **p, size_t n)
{
    for (size_t i = 0; p && i < n; i++)
        free(p[i]);
    free(p);
}

static char **copy_paths(const char *const *paths, size_t n)
{
    char **c = calloc(n ? n : 1, sizeof(*c));
    for (size_t i = 0; c && i < n; i++)
        if (!(c[i] = strdup(paths[i]))) {
            free_paths(c, n);
            return NULL;
        }
    return c;
}

/* Drops one reference; the last frees. */
static void release(struct shared *sh)
{
    pthread_mutex_lock(&sh->mu);
    bool last = --sh->refs == 0;
    pthread_mutex_unlock(&sh->mu);
    if (!last)
        return;
    rule_set_free(sh->result);
    rules_diag_free(&sh->diag);
    pthread_mutex_destroy(&sh->mu);
    free(sh);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void *load_thread(void *arg)
{
    struct job *j = arg;
    struct shared *sh = j->sh;
    double t0 = now_ms();
    struct rules_diag diag = {0};
    struct rule_set *rs = rule_set_load((const char *const *)j->paths, j->n, &diag);
    double ms = now_ms() - t0;
    free_paths(j->paths, j->n);
    free(j);
    pthread_mutex_lock(&sh->mu);
    if (!sh->closed) {
        sh->result = rs;
        sh->diag = diag;
        sh->ms = ms;
        sh->ready = true;
        uv_async_send(sh->async);
        rs = NULL;
        memset(&diag, 0, sizeof(diag));
    }
    pthread_mutex_unlock(&sh->mu);
    rule_set_free(rs);
    rules_diag_free(&diag);
    release(sh);
    return NULL;
}

/* A detached thread with a stack of known size and every signal blocked
 * (the loop thread handles them). */
static int spawn(struct rules_reload *r, char **paths, size_t n, char *err, size_t errlen)
{
    struct job *j = malloc(sizeof(*j));
    if (!j) {
        snprintf(err, errlen, "out of memory");
        free_paths(paths, n);
        return -1;
    }
    *j = (struct job){.sh = r->sh, .paths = paths, .n = n};
    pthread_mutex_lock(&r->sh->mu);
    r->sh->refs++;
    pthread_mutex_unlock(&r->sh->mu);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, RULES_RELOAD_STACK);
    pthread_t t;
    int rc = thread_start_blocking_signals(&t, &attr, load_thread, j);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the rules loading thread: %s", strerror(rc));
        free_paths(paths, n);
        free(j);
        release(r->sh);
        return -1;
    }
    r->running = true;
    return 0;
}

static void on_loaded(uv_async_t *h)
{
    struct rules_reload *r = h->data;
    struct shared *sh = r->sh;
    pthread_mutex_lock(&sh->mu);
    bool ready = sh->ready;
    struct rule_set *rs = sh->result;
    struct rules_diag diag = sh->diag;
    double ms = sh->ms;
    sh->ready = false;
    sh->result = NULL;
    memset(&sh->diag, 0, sizeof(sh->diag));
    pthread_mutex_unlock(&sh->mu);
    if (!ready)
        return;
    r->running = false;
    r->done(rs, &diag, ms, r->pending != NULL, r->data);
    rules_diag_free(&diag);
    if (r->pending) {
        char **p = r->pending;
        size_t n = r->npending;
        char err[256];
        r->pending = NULL;
        if (spawn(r, p, n, err, sizeof(err)) != 0)
            log_error("reload: %s; the running rules stay", err);
    }
}

struct rules_reload *rules_reload_new(uv_loop_t *loop, rules_reload_done_fn done, void *data, char *err,
                                      size_t errlen)
{
    struct rules_reload *r = calloc(1, sizeof(*r));
    struct shared *sh = calloc(1, sizeof(*sh));
    if (!r || !sh) {
        free(r);
        free(sh);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    int rc = uv_async_init(loop, &r->async, on_loaded);
    if (rc != 0) {
        free(r);
        free(sh);
        snprintf(err, errlen, "cannot set up the rules loader: %s", uv_strerror(rc));
        return NULL;
    }
    uv_unref((uv_handle_t *)&r->async);
    pthread_mutex_init(&sh->mu, NULL);
    sh->refs = 1;
    sh->async = &r->async;
    r->async.data = r;
    r->loop = loop;
    r->sh = sh;
    r->done = done;
    r->data = data;
    return r;
}

int rules_reload_start(struct rules_reload *r, const char *const *paths, size_t n, char *err, size_t errlen)
{
    char **copy = copy_paths(paths, n);
    if (!copy) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (r->running) {
        free_paths(r->pending, r->npending);
        r->pending = copy;
        r->npending = n;
        return 1;
    }
    return spawn(r, copy, n, err, errlen);
}

static void on_closed(uv_handle_t *h)
{
    struct rules_reload *r = h->data;
    free_paths(r->pending, r->npending);
    release(r->sh);
    free(r);
}

void rules_reload_close(struct rules_reload *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->sh->mu);
    r->sh->closed = true;
    pthread_mutex_unlock(&r->sh->mu);
    uv_close((uv_handle_t *)&r->async, on_closed);
}
