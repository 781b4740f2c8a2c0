/* seccheck-loadgen - replays recorded gVisor seccheck traces into a
 * collector's socket as many sandboxes would, and measures how much gets
 * through (block mode) or how much the sandboxes would drop (sentry mode).
 *
 * main: load the traces, connect and handshake every connection, start one
 * sender thread per connection, release them together, supervise the
 * duration and progress line, then report. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "clock.h"
#include "options.h"
#include "replay.h"
#include "report.h"
#include "sender.h"
#include "wire.h"

#define PROGRESS_AFTER_NS 1500000000LL   /* short runs would only flicker */
#define PROGRESS_EVERY_NS 500000000LL
#define SENDER_STACK (256u * 1024)       /* 4096 threads x 8 MiB default would be 32 GiB of stacks */
#define MAX_ERRORS_SHOWN 10

/* Set by SIGINT/SIGTERM, and by main when --duration ends; senders poll it. */
static atomic_bool g_stop;
static volatile sig_atomic_t g_signal;

static void on_signal(int sig)
{
    g_signal = sig;
    atomic_store(&g_stop, true);
}

static void install_signals(void)
{
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* A collector that goes away must show up as EPIPE on that connection,
     * not kill the whole run. */
    signal(SIGPIPE, SIG_IGN);
}

struct run {
    const struct loadgen_options *o;
    struct replay_trace *traces;
    size_t max_header;               /* largest header_size in any trace */
    struct sender *senders;
    unsigned nsenders;               /* initialised (connected) so far */
    pthread_t *threads;
    unsigned nthreads;               /* started so far */
    struct start_gate gate;
    struct sender_config cfg;
    int64_t start_ns;
};

/* ---- setup ---- */

static size_t trace_max_header(const struct replay_trace *t)
{
    size_t max = WIRE_HEADER_MIN;
    for (size_t i = 0; i < t->count; i++) {
        struct wire_header h;
        if (wire_header_parse(t->packets[i], t->lengths[i], &h) == WIRE_OK && h.header_size > max)
            max = h.header_size;
    }
    return max;
}

static int load_traces(struct run *r)
{
    r->traces = calloc(r->o->ntraces, sizeof(*r->traces));
    if (!r->traces) {
        fprintf(stderr, LOADGEN_PROG ": out of memory\n");
        return -1;
    }
    for (size_t i = 0; i < r->o->ntraces; i++) {
        char err[1024];
        if (replay_trace_load(&r->traces[i], r->o->traces[i], err, sizeof(err)) != 0) {
            fprintf(stderr, LOADGEN_PROG ": %s\n", err);
            return -1;
        }
        if (r->traces[i].count == 0) {
            fprintf(stderr, LOADGEN_PROG ": %s: the trace holds no messages, nothing to replay\n", r->o->traces[i]);
            return -1;
        }
        size_t h = trace_max_header(&r->traces[i]);
        if (h > r->max_header)
            r->max_header = h;
    }
    return 0;
}

/* Each connection is a socket: make sure that many fit under RLIMIT_NOFILE,
 * raising the soft limit when the hard one allows. */
static int ensure_fd_limit(unsigned connections)
{
    rlim_t need = (rlim_t)connections + 32;   /* + stdio, trace files, slack */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= need)
        return 0;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
        fprintf(stderr, LOADGEN_PROG ": --connections %u needs %llu open files but the limit is %llu "
                        "(raise it with ulimit -n)\n", connections, (unsigned long long)need,
                (unsigned long long)rl.rlim_max);
        return -1;
    }
    rl.rlim_cur = need;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
        fprintf(stderr, LOADGEN_PROG ": cannot raise the open-file limit to %llu: %s\n", (unsigned long long)need,
                strerror(errno));
        return -1;
    }
    return 0;
}

/* How many messages connection i attempts: --messages, else no limit with
 * --duration, else one pass of its trace. */
static uint64_t message_limit(const struct loadgen_options *o, const struct replay_trace *t)
{
    if (o->messages)
        return o->messages;
    return o->duration_ns ? UINT64_MAX : t->count;
}

/* Connects, handshakes (with the file's recorded version) and prepares
 * connection i; every failure names the connection and the reason. */
static int connect_one(struct run *r, unsigned i)
{
    const struct loadgen_options *o = r->o;
    const struct replay_trace *t = &r->traces[i % o->ntraces];
    char err[1024];
    int fd = replay_connect(o->socket, t->version, (int)(o->handshake_timeout_ns / 1000000), err, sizeof(err));
    if (fd < 0) {
        fprintf(stderr, LOADGEN_PROG ": connection %u of %u: %s\n", i + 1, o->connections, err);
        return -1;
    }
    if (sender_prepare_socket(fd, o->mode) != 0) {
        fprintf(stderr, LOADGEN_PROG ": connection %u: setting up the socket: %s\n", i + 1, strerror(errno));
        close(fd);
        return -1;
    }
    if (sender_init(&r->senders[i], i, fd, t, r->max_header, message_limit(o, t), &r->cfg) != 0) {
        fprintf(stderr, LOADGEN_PROG ": out of memory\n");
        close(fd);
        return -1;
    }
    r->nsenders = i + 1;
    return 0;
}

static int connect_all(struct run *r)
{
    unsigned n = r->o->connections;
    /* aligned_alloc: struct sender is cache-line aligned; calloc is not. */
    r->senders = aligned_alloc(_Alignof(struct sender), n * sizeof(*r->senders));
    r->threads = calloc(n, sizeof(*r->threads));
    if (!r->senders || !r->threads) {
        fprintf(stderr, LOADGEN_PROG ": out of memory\n");
        return -1;
    }
    for (unsigned i = 0; i < n; i++) {
        if (atomic_load(&g_stop)) {
            fprintf(stderr, LOADGEN_PROG ": interrupted while connecting\n");
            return -1;
        }
        if (connect_one(r, i) != 0)
            return -1;
    }
    return 0;
}

static int start_threads(struct run *r)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, SENDER_STACK);
    int rc = 0;
    for (unsigned i = 0; i < r->nsenders && rc == 0; i++) {
        rc = pthread_create(&r->threads[i], &attr, sender_run, &r->senders[i]);
        if (rc == 0)
            r->nthreads++;
        else
            fprintf(stderr, LOADGEN_PROG ": cannot start sender thread %u of %u: %s\n", i + 1, r->nsenders,
                    strerror(rc));
    }
    pthread_attr_destroy(&attr);
    return rc == 0 ? 0 : -1;
}

/* ---- the measured interval ---- */

static void sum_counters(const struct run *r, uint64_t *sent, uint64_t *dropped)
{
    *sent = *dropped = 0;
    for (unsigned i = 0; i < r->nsenders; i++) {
        *sent += atomic_load_explicit(&r->senders[i].sent, memory_order_relaxed);
        *dropped += atomic_load_explicit(&r->senders[i].dropped, memory_order_relaxed);
    }
}

struct progress {
    bool enabled, shown;
    int64_t next_ns, last_ns;
    uint64_t last_sent;
};

static void progress_tick(const struct run *r, struct progress *p, int64_t now)
{
    uint64_t sent, dropped;
    sum_counters(r, &sent, &dropped);
    double interval = (double)(now - p->last_ns) / 1e9;
    report_progress(stderr, (double)(now - r->start_ns) / 1e9, sent, dropped,
                    interval > 0 ? (double)(sent - p->last_sent) / interval : 0);
    p->shown = true;
    p->last_ns = now;
    p->last_sent = sent;
    p->next_ns = now + PROGRESS_EVERY_NS;
}

/* Waits for the senders to finish, ending the run at --duration and
 * refreshing the progress line meanwhile. */
static void supervise(struct run *r)
{
    int64_t deadline = r->o->duration_ns ? r->start_ns + r->o->duration_ns : INT64_MAX;
    struct progress p = {.enabled = isatty(STDERR_FILENO) == 1, .next_ns = r->start_ns + PROGRESS_AFTER_NS,
                         .last_ns = r->start_ns};
    for (;;) {
        int64_t wake = deadline;
        if (p.enabled && p.next_ns < wake)
            wake = p.next_ns;
        if (gate_wait_finished(&r->gate, wake == INT64_MAX ? INT64_MAX / 2 : wake) == 0)
            break;
        int64_t now = monotonic_ns();
        if (now >= deadline)
            atomic_store(&g_stop, true);
        if (p.enabled && now >= p.next_ns)
            progress_tick(r, &p, now);
    }
    if (p.shown)
        report_progress_clear(stderr);
}

static void join_threads(struct run *r)
{
    for (unsigned i = 0; i < r->nthreads; i++)
        pthread_join(r->threads[i], NULL);
    r->nthreads = 0;
}

/* ---- results ---- */

static const char *error_hint(int err)
{
    switch (err) {
    case EPIPE:
    case ECONNRESET: return " (the collector closed the connection)";
    case EMSGSIZE: return " (a packet is larger than the socket accepts)";
    default: return "";
    }
}

static void report_errors(const struct run *r, unsigned errors)
{
    unsigned shown = 0;
    for (unsigned i = 0; i < r->nsenders && shown < MAX_ERRORS_SHOWN; i++) {
        const struct sender *s = &r->senders[i];
        if (!s->error)
            continue;
        fprintf(stderr, LOADGEN_PROG ": connection %u (%s): send failed after %llu messages: %s%s\n", i + 1,
                s->trace->path, (unsigned long long)s->error_after, strerror(s->error), error_hint(s->error));
        shown++;
    }
    if (errors > shown)
        fprintf(stderr, LOADGEN_PROG ": ... and %u more connections failed\n", errors - shown);
}

static struct loadgen_result collect(const struct run *r)
{
    struct loadgen_result res = {.connections = r->nsenders, .interrupted = g_signal != 0};
    int64_t end = r->start_ns;
    for (unsigned i = 0; i < r->nsenders; i++) {
        const struct sender *s = &r->senders[i];
        res.sent += atomic_load(&s->sent);
        res.dropped += atomic_load(&s->dropped);
        res.dropped_reported += s->dropped_reported;
        res.bytes += s->bytes;
        res.errors += s->error != 0;
        if (s->end_ns > end)
            end = s->end_ns;
    }
    res.seconds = (double)(end - r->start_ns) / 1e9;
    return res;
}

static void free_run(struct run *r)
{
    for (unsigned i = 0; i < r->nsenders; i++)
        sender_free(&r->senders[i]);
    free(r->senders);
    free(r->threads);
    for (size_t i = 0; r->traces && i < r->o->ntraces; i++)
        replay_trace_free(&r->traces[i]);
    free(r->traces);
    gate_destroy(&r->gate);
}

/* Everything after option parsing; returns the exit status. */
static int run(const struct loadgen_options *o)
{
    struct run r = {.o = o};
    if (gate_init(&r.gate) != 0) {
        fprintf(stderr, LOADGEN_PROG ": cannot set up thread synchronisation\n");
        return 1;
    }
    r.cfg = (struct sender_config){.mode = o->mode, .rate = o->rate, .retries = o->retries,
                                   .backoff_ns = o->backoff_ns, .backoff_max_ns = o->backoff_max_ns,
                                   .stop = &g_stop, .gate = &r.gate};
    if (load_traces(&r) != 0 || ensure_fd_limit(o->connections) != 0 || connect_all(&r) != 0) {
        free_run(&r);
        return 1;
    }
    if (start_threads(&r) != 0) {
        gate_abort(&r.gate);
        join_threads(&r);
        free_run(&r);
        return 1;
    }
    r.start_ns = gate_open_when_parked(&r.gate, r.nthreads);
    supervise(&r);
    join_threads(&r);

    struct loadgen_result res = collect(&r);
    report_errors(&r, res.errors);
    if (o->json) {
        report_json(stdout, o, &res);
    } else {
        report_summary(stdout, o, &res);
        report_bench_line(stdout, o, &res);
    }
    fflush(stdout);
    free_run(&r);
    return res.errors ? 1 : 0;
}

int main(int argc, char **argv)
{
    struct loadgen_options o;
    enum loadgen_parse_result parsed = loadgen_parse_args(argc, argv, &o);
    int status = parsed == PARSE_EXIT_OK ? 0 : 2;
    if (parsed == PARSE_RUN) {
        install_signals();
        status = run(&o);
    }
    loadgen_options_free(&o);
    return status;
}
