/* link.c - the connection to the NATS servers and the fleet stream's shape
 * (internal.h).
 *
 * Credentials never come from the command line, which every local user can
 * read: a URL with user:password@ is refused, and --nats-auth names a file
 * whose first line is USER:PASSWORD (or a NATS .creds file). tls:// turns
 * TLS on, against the system's CAs or --nats-ca's. */
#include "internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "log.h"

#define AUTH_FILE_MAX 4096
#define DESCRIPTION_PREFIX "seccheckd fleet stream:"
#define NS_PER_S ((int64_t)1000000000)

static pthread_once_t nats_opened = PTHREAD_ONCE_INIT;
static natsStatus nats_open_status;

static void open_library(void) { nats_open_status = nats_Open(-1); }

void js_status_text(natsStatus s, jsErrCode code, char *out, size_t outlen)
{
    const char *last = nats_GetLastError(NULL);
    if (code)
        snprintf(out, outlen, "%s (JetStream error %d)%s%s", natsStatus_GetText(s), (int)code, last ? ": " : "",
                 last ? last : "");
    else
        snprintf(out, outlen, "%s%s%s", natsStatus_GetText(s), last && *last ? ": " : "", last ? last : "");
}

/* ---- URLs ---- */

/* Splits urls at commas into list (copies in buf); -1 with err. */
static int split_urls(const char *urls, const char *option, char *buf, size_t buflen, const char **list, int *n,
                      bool *tls, char *err, size_t errlen)
{
    if (!urls || !*urls || strlen(urls) >= buflen) {
        snprintf(err, errlen, "%s: expected nats://HOST:PORT[,nats://HOST:PORT...] (or tls://)", option);
        return -1;
    }
    snprintf(buf, buflen, "%s", urls);
    *n = 0;
    int schemes = 0;
    for (char *save = NULL, *u = strtok_r(buf, ",", &save); u; u = strtok_r(NULL, ",", &save)) {
        bool is_tls = strncmp(u, "tls://", 6) == 0;
        if (!is_tls && strncmp(u, "nats://", 7) != 0) {
            snprintf(err, errlen, "%s: '%.80s' is not a nats:// or tls:// URL", option, u);
            return -1;
        }
        const char *rest = u + (is_tls ? 6 : 7);
        if (strchr(rest, '@')) {
            snprintf(err, errlen, "%s: a URL holds credentials, which any local user can read in the process list: "
                     "put USER:PASSWORD in a file and name it with --nats-auth", option);
            return -1;
        }
        if (!*rest || strlen(u) >= JS_URL_MAX || *n == JS_URLS_MAX) {
            snprintf(err, errlen, "%s: expected 1 to %d URLs of a host and port each", option, JS_URLS_MAX);
            return -1;
        }
        schemes |= is_tls ? 2 : 1;
        list[(*n)++] = u;
    }
    if (*n == 0 || schemes == 3) {
        snprintf(err, errlen, "%s: %s", option, *n ? "nats:// and tls:// mixed: use one for every server"
                                                   : "no URL");
        return -1;
    }
    *tls = schemes == 2;
    return 0;
}

int js_link_check_urls(const char *urls, const char *option, char *err, size_t errlen)
{
    char buf[JS_URLS_MAX * JS_URL_MAX];
    const char *list[JS_URLS_MAX];
    int n;
    bool tls;
    return split_urls(urls, option, buf, sizeof(buf), list, &n, &tls, err, errlen);
}

/* ---- credentials ---- */

/* The first line of path: USER:PASSWORD, or a .creds file (nats.c reads
 * it). -1 with err (lasting). */
static int load_auth(natsOptions *opts, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "--nats-auth %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && (st.st_mode & 0077))
        log_warn("--nats-auth %s: group or others may read it (mode %03o): chmod 600 it", path,
                 (unsigned)(st.st_mode & 0777));
    char text[AUTH_FILE_MAX + 1];
    size_t n = fread(text, 1, AUTH_FILE_MAX, f);
    fclose(f);
    text[n] = '\0';
    if (strstr(text, "-----BEGIN NATS USER JWT-----")) {
        natsStatus s = natsOptions_SetUserCredentialsFromFiles(opts, path, NULL);
        if (s != NATS_OK)
            snprintf(err, errlen, "--nats-auth %s: not a credentials file nats.c reads: %s", path,
                     natsStatus_GetText(s));
        return s == NATS_OK ? 0 : -1;
    }
    text[strcspn(text, "\r\n")] = '\0';
    char *colon = strchr(text, ':');
    if (!colon || colon == text || !colon[1]) {
        snprintf(err, errlen, "--nats-auth %s: its first line is not USER:PASSWORD (nor is it a .creds file)", path);
        return -1;
    }
    *colon = '\0';
    natsStatus s = natsOptions_SetUserInfo(opts, text, colon + 1);
    explicit_bzero(text, sizeof(text));
    if (s != NATS_OK) {
        snprintf(err, errlen, "--nats-auth %s: %s", path, natsStatus_GetText(s));
        return -1;
    }
    return 0;
}

/* ---- connecting ---- */

/* nats.c runs a connection's callbacks on a thread of its own, queued, and
 * the last one after natsConnection_Close returns: the closed callback.
 * Their closure is therefore on the heap, one per connection, and freed
 * only once that callback ran (a link on a stack frame that returned was
 * written to: ASan in e2e.readme's central, a disconnected callback). */
struct js_link_events {
    pthread_mutex_t lock;
    pthread_cond_t closed_cond;
    bool closed;                    /* the connection's last callback ran */
    char async_error[256];          /* the server's last asynchronous error (a permissions violation) */
    uint64_t async_errors;
};

/* How long js_link_close waits for the closed callback; past it the events
 * are left allocated (a late callback finds them), never freed under it. */
#define CLOSED_CALLBACK_WAIT_MS 10000

static struct js_link_events *events_new(void)
{
    struct js_link_events *ev = calloc(1, sizeof(*ev));
    if (!ev)
        return NULL;
    pthread_mutex_init(&ev->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ev->closed_cond, &ca);
    pthread_condattr_destroy(&ca);
    return ev;
}

static void events_free(struct js_link_events *ev)
{
    if (!ev)
        return;
    pthread_cond_destroy(&ev->closed_cond);
    pthread_mutex_destroy(&ev->lock);
    free(ev);
}

/* Whether the closed callback ran within CLOSED_CALLBACK_WAIT_MS. */
static bool events_wait_closed(struct js_link_events *ev)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += CLOSED_CALLBACK_WAIT_MS / 1000;
    pthread_mutex_lock(&ev->lock);
    int e = 0;
    while (!ev->closed && e != ETIMEDOUT)
        e = pthread_cond_timedwait(&ev->closed_cond, &ev->lock, &until);
    bool closed = ev->closed;
    pthread_mutex_unlock(&ev->lock);
    return closed;
}

static void on_async_error(natsConnection *nc, natsSubscription *sub, natsStatus s, void *closure)
{
    (void)sub;
    struct js_link_events *ev = closure;
    const char *text = NULL;
    natsConnection_GetLastError(nc, &text);
    pthread_mutex_lock(&ev->lock);
    snprintf(ev->async_error, sizeof(ev->async_error), "%s", text && *text ? text : natsStatus_GetText(s));
    ev->async_errors++;
    pthread_mutex_unlock(&ev->lock);
}

static void on_closed(natsConnection *nc, void *closure)
{
    (void)nc;
    struct js_link_events *ev = closure;
    pthread_mutex_lock(&ev->lock);
    ev->closed = true;
    pthread_cond_broadcast(&ev->closed_cond);
    pthread_mutex_unlock(&ev->lock);
}

void js_link_take_async_error(struct js_link *l, char *out, size_t outlen)
{
    struct js_link_events *ev = l->events;
    if (!ev) {
        snprintf(out, outlen, "%s", "");
        return;
    }
    pthread_mutex_lock(&ev->lock);
    snprintf(out, outlen, "%s", ev->async_error);
    ev->async_error[0] = '\0';
    pthread_mutex_unlock(&ev->lock);
}

static bool auth_refused(natsStatus s)
{
    const char *last = nats_GetLastError(NULL);
    return s == NATS_CONNECTION_AUTH_FAILED || s == NATS_NOT_PERMITTED ||
           (last && (strstr(last, "Authorization Violation") || strstr(last, "authorization violation")));
}

int js_link_connect(struct js_link *l, const struct js_link_options *o, bool *lasting, char *err, size_t errlen)
{
    *lasting = false;
    pthread_once(&nats_opened, open_library);
    if (nats_open_status != NATS_OK) {
        snprintf(err, errlen, "cannot start the NATS library: %s", natsStatus_GetText(nats_open_status));
        return -1;
    }
    char buf[JS_URLS_MAX * JS_URL_MAX];
    const char *list[JS_URLS_MAX];
    int n;
    bool tls;
    if (split_urls(o->urls, "--to", buf, sizeof(buf), list, &n, &tls, err, errlen) != 0) {
        *lasting = true;
        return -1;
    }
    if (!l->events && !(l->events = events_new())) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    natsOptions *opts = NULL;
    natsStatus s = natsOptions_Create(&opts);
    if (s == NATS_OK)
        s = natsOptions_SetServers(opts, list, n);
    if (s == NATS_OK)
        s = natsOptions_SetTimeout(opts, o->timeout_ms);
    if (s == NATS_OK && o->name)
        s = natsOptions_SetName(opts, o->name);
    if (s == NATS_OK && o->inbox)
        s = natsOptions_SetCustomInboxPrefix(opts, o->inbox);
    if (s == NATS_OK)
        s = natsOptions_SetMaxReconnect(opts, -1);
    if (s == NATS_OK)
        s = natsOptions_SetReconnectWait(opts, 250);
    if (s == NATS_OK)
        s = natsOptions_SetErrorHandler(opts, on_async_error, l->events);
    if (s == NATS_OK)
        s = natsOptions_SetClosedCB(opts, on_closed, l->events);
    /* A publish or fetch waiting on a connection that is gone fails at
     * once rather than at its timeout: the caller retries. */
    if (s == NATS_OK)
        s = natsOptions_SetFailRequestsOnDisconnect(opts, true);
    if (s == NATS_OK && tls)
        s = natsOptions_SetSecure(opts, true);
    if (s != NATS_OK) {
        js_status_text(s, 0, buf, 256);
        snprintf(err, errlen, "NATS options: %s", buf);
        natsOptions_Destroy(opts);
        return -1;
    }
    /* A nats:// server that requires TLS gets it too (nats.c upgrades): the CA counts there as well. */
    if (o->ca_file && (s = natsOptions_LoadCATrustedCertificates(opts, o->ca_file)) != NATS_OK) {
        snprintf(err, errlen, "--nats-ca %s: cannot load it: %s", o->ca_file, natsStatus_GetText(s));
        natsOptions_Destroy(opts);
        *lasting = true;
        return -1;
    }
    if (o->auth_file && load_auth(opts, o->auth_file, err, errlen) != 0) {
        natsOptions_Destroy(opts);
        *lasting = true;
        return -1;
    }
    s = natsConnection_Connect(&l->nc, opts);
    natsOptions_Destroy(opts);
    if (s == NATS_OK) {
        jsOptions jo;
        jsOptions_Init(&jo);
        jo.Wait = o->timeout_ms;
        s = natsConnection_JetStream(&l->js, l->nc, &jo);
    }
    if (s != NATS_OK) {
        char why[300];
        js_status_text(s, 0, why, sizeof(why));
        *lasting = auth_refused(s);
        snprintf(err, errlen, "cannot connect to %s: %s%s", o->urls, why,
                 *lasting ? " (check the user and password in --nats-auth)" : "");
        js_link_close(l);
        return -1;
    }
    l->timeout_ms = o->timeout_ms;
    return 0;
}

void js_link_close(struct js_link *l)
{
    if (l->js)
        jsCtx_Destroy(l->js);
    bool callbacks_done = true;   /* a connection that never was calls nothing back */
    if (l->nc) {
        natsConnection_Close(l->nc);
        callbacks_done = events_wait_closed(l->events);
        natsConnection_Destroy(l->nc);
    }
    if (callbacks_done)
        events_free(l->events);
    else
        log_warn("NATS: a connection's closed callback did not come in %d s: its few bytes of state are left "
                 "allocated for it", CLOSED_CALLBACK_WAIT_MS / 1000);
    l->js = NULL;
    l->nc = NULL;
    l->events = NULL;
}

/* ---- the stream ---- */

unsigned js_stream_partitions(const jsStreamConfig *c)
{
    const char *d = c->Description ? strstr(c->Description, "partitions=") : NULL;
    if (!d)
        return 0;
    char *end;
    errno = 0;
    unsigned long k = strtoul(d + strlen("partitions="), &end, 10);
    return errno == 0 && k >= 1 && k <= JS_PARTITIONS_MAX && (*end == '\0' || *end == ' ') ? (unsigned)k : 0;
}

/* What both streams share: limits retention, file storage, direct gets. */
static void base_config(jsStreamConfig *cfg, const char *name, const char *description, const char **subjects,
                        int64_t replicas)
{
    jsStreamConfig_Init(cfg);
    cfg->Name = name;
    cfg->Description = description;
    cfg->Subjects = subjects;
    cfg->SubjectsLen = 1;
    cfg->Retention = js_LimitsPolicy;
    cfg->Storage = js_FileStorage;
    cfg->Replicas = replicas;
    cfg->MaxMsgs = -1;
    cfg->MaxConsumers = -1;
    cfg->AllowDirect = true;
}

void js_stream_config(jsStreamConfig *cfg, const struct js_stream_spec *spec, char *buf, size_t buflen,
                      const char **subjects)
{
    snprintf(buf, buflen, DESCRIPTION_PREFIX " partitions=%u format=%s/%d", spec->partitions, JS_FORMAT_NAME,
             JS_FORMAT_VERSION);
    subjects[0] = JS_BATCH_SUBJECTS;
    base_config(cfg, spec->name, buf, subjects, spec->replicas);
    cfg->Discard = js_DiscardNew;
    cfg->MaxBytes = spec->max_bytes;
    cfg->MaxAge = spec->max_age_ns;
    cfg->Duplicates = spec->duplicates_ns;
    cfg->MaxMsgsPerSubject = -1;
    cfg->MaxMsgSize = -1;
}

void js_applied_config(jsStreamConfig *cfg, const struct js_stream_spec *spec, char *name, size_t namelen,
                       const char **subjects)
{
    snprintf(name, namelen, "%s" JS_APPLIED_SUFFIX, spec->name);
    subjects[0] = JS_APPLIED_PREFIX "*";
    base_config(cfg, name, DESCRIPTION_PREFIX " how far the central copy has each host (seccheckd central)", subjects,
                spec->replicas);
    cfg->Discard = js_DiscardOld;
    cfg->MaxMsgsPerSubject = 1;
    cfg->MaxBytes = -1;
    cfg->MaxMsgSize = 1024;
}

static const char *retention_name(jsRetentionPolicy r)
{
    return r == js_LimitsPolicy ? "limits" : r == js_InterestPolicy ? "interest" : "workqueue";
}

static void duration(int64_t ns, char *out, size_t len)
{
    if (ns <= 0)
        snprintf(out, len, "none");
    else if (ns % ((int64_t)3600 * NS_PER_S) == 0)
        snprintf(out, len, "%" PRId64 "h", ns / ((int64_t)3600 * NS_PER_S));
    else if (ns % NS_PER_S == 0)
        snprintf(out, len, "%" PRId64 "s", ns / NS_PER_S);
    else
        snprintf(out, len, "%.3fs", (double)ns / 1e9);
}

int js_stream_differences(const jsStreamConfig *c, const struct js_stream_spec *spec, unsigned what,
                          struct strbuf *out)
{
    int n = 0;
#define DIFF(...) (strbuf_puts(out, n++ ? "; " : ""), strbuf_printf(out, __VA_ARGS__))
    bool subjects = c->SubjectsLen == 1 && c->Subjects && strcmp(c->Subjects[0], JS_BATCH_SUBJECTS) == 0;
    if (!subjects)
        DIFF("subjects %s%s, expected " JS_BATCH_SUBJECTS " alone",
             c->SubjectsLen > 0 && c->Subjects ? c->Subjects[0] : "(none)", c->SubjectsLen > 1 ? " and more" : "");
    if (c->Retention != js_LimitsPolicy)
        DIFF("retention %s, expected limits (a consumer's ack must not delete what another has not read)",
             retention_name(c->Retention));
    if (c->Discard != js_DiscardNew)
        DIFF("discard old, expected new (a full stream would delete batches no consumer has read; with new it "
             "refuses them and the hosts keep them)");
    if (c->Storage != js_FileStorage)
        DIFF("memory storage, expected file (a restart of the servers would lose every batch)");
    if (!c->AllowDirect)
        DIFF("allow_direct off, expected on (a forwarder reads its last message with a direct get)");
    if (c->Duplicates <= 0)
        DIFF("no duplicate window, expected one (Nats-Msg-Id)");
    unsigned k = js_stream_partitions(c);
    if (!k)
        DIFF("no partitions in its description, expected '" DESCRIPTION_PREFIX " partitions=K ...' (seccheckd "
             "nats-setup)");
    else if (spec->partitions && k != spec->partitions)
        DIFF("partitions %u, expected %u (the hosts would hash to other subjects than the consumers read)", k,
             spec->partitions);
    char want[32], got[32];
    if (c->Description && !strstr(c->Description, "format=" JS_FORMAT_NAME "/"))
        DIFF("no format in its description");
    if (what & ~JS_CHECK_ESSENTIAL) {
        if (c->Replicas != spec->replicas)
            DIFF("replicas %" PRId64 ", expected %" PRId64, c->Replicas, spec->replicas);
        if (c->MaxBytes != spec->max_bytes)
            DIFF("max_bytes %" PRId64 ", expected %" PRId64, c->MaxBytes, spec->max_bytes);
        if (c->MaxAge != spec->max_age_ns) {
            duration(c->MaxAge, got, sizeof(got));
            duration(spec->max_age_ns, want, sizeof(want));
            DIFF("max_age %s, expected %s", got, want);
        }
        if (c->Duplicates > 0 && c->Duplicates != spec->duplicates_ns) {
            duration(c->Duplicates, got, sizeof(got));
            duration(spec->duplicates_ns, want, sizeof(want));
            DIFF("duplicate_window %s, expected %s", got, want);
        }
    }
#undef DIFF
    return n;
}

int js_stream_verify(struct js_link *l, const struct js_stream_spec *spec, unsigned what, unsigned *partitions,
                     char *err, size_t errlen)
{
    jsStreamInfo *si = NULL;
    jsErrCode code = 0;
    natsStatus s = js_GetStreamInfo(&si, l->js, spec->name, NULL, &code);
    if (s == NATS_NOT_FOUND || code == JSStreamNotFoundErr) {
        snprintf(err, errlen, "no stream %s on the servers: create it with seccheckd nats-setup", spec->name);
        return -2;
    }
    if (s != NATS_OK) {
        char why[300];
        js_status_text(s, code, why, sizeof(why));
        snprintf(err, errlen, "stream %s: %s", spec->name, why);
        return -1;
    }
    struct strbuf diffs = {0};
    int n = js_stream_differences(si->Config, spec, what, &diffs);
    *partitions = js_stream_partitions(si->Config);
    if (n)
        snprintf(err, errlen, "stream %s does not fit: %s", spec->name, diffs.data ? diffs.data : "");
    strbuf_free(&diffs);
    jsStreamInfo_Destroy(si);
    return n ? -2 : 0;
}
