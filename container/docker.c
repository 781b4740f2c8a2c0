/* docker.c - a container's names from Docker's Engine API (container.h).
 *
 * Docker gives runsc OCI specs without CRI annotations, so a Docker
 * container's state file names no container, image or labels. Docker's
 * API does: GET /containers/{id}/json over its Unix socket (libcurl's
 * CURLOPT_UNIX_SOCKET_PATH) answers Id, Name (with a leading '/'), Image
 * (the image id, "sha256:<hex>") and Config.Image (the reference the user
 * ran) and Config.Labels: what Falco's container plugin takes
 * (falcosecurity/plugins plugins/container/go-worker/pkg/container/
 * docker.go, ctrToInfo). The path carries no API version: Docker answers
 * it with its own, and these keys are in every version.
 *
 * Asked on the cache's lookup thread, once per record made (the record is
 * the cache). Bounded: one answer at most CONTAINER_DOCKER_ANSWER_MAX
 * bytes and CONTAINER_DOCKER_TIMEOUT_MS, plain HTTP on the socket, no
 * redirect followed, the path sent as is. The answer is parsed by jansson
 * (duplicate keys refused) and only strings are taken from it. Docker
 * resolves a name or an id prefix too, so an answer whose Id is not the id
 * asked is refused: a container named like another's id never lends its
 * names. Labels as the plugin keeps them (a value over its label_max_len,
 * 100, is not kept), at most CONTAINER_LABELS_MAX and
 * CONTAINER_LABELS_BYTES_MAX of keys and values, keys sorted.
 */
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "log.h"

#define CONNECT_TIMEOUT_MS 500

struct docker_source {
    CURL *curl;
    char *socket;
    char errbuf[CURL_ERROR_SIZE];
    char *answer;                 /* the answer's bytes so far */
    size_t len, cap;
    bool too_large;
    /* Counted on the lookup thread, read by any (docker_source_get_stats). */
    _Atomic uint64_t lookups, found, not_found, failed, refused, labels_dropped;
    bool warned_failed, warned_refused;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static size_t keep_answer(char *data, size_t size, size_t n, void *arg)
{
    struct docker_source *d = arg;
    size_t add = size * n;
    if (add > CONTAINER_DOCKER_ANSWER_MAX - d->len) {
        d->too_large = true;
        return 0;   /* libcurl stops the transfer */
    }
    if (d->len + add + 1 > d->cap) {
        size_t cap = d->cap ? d->cap : 16384;
        while (cap < d->len + add + 1)
            cap *= 2;
        char *grown = realloc(d->answer, cap);
        if (!grown)
            return 0;
        d->answer = grown;
        d->cap = cap;
    }
    memcpy(d->answer + d->len, data, add);
    d->len += add;
    d->answer[d->len] = '\0';
    return add;
}

struct docker_source *docker_source_new(const char *socket_path, char *err, size_t errlen)
{
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK) {
        snprintf(err, errlen, "libcurl cannot start: %s", curl_easy_strerror(curl_init_rc));
        return NULL;
    }
    struct docker_source *d = calloc(1, sizeof(*d));
    if (d) {
        d->socket = strdup(socket_path);
        d->curl = curl_easy_init();
    }
    if (!d || !d->socket || !d->curl) {
        snprintf(err, errlen, "out of memory");
        docker_source_free(d);
        return NULL;
    }
    CURL *c = d->curl;
    curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, d->socket);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);   /* a thread: no SIGALRM for timeouts */
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, d->errbuf);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)CONTAINER_DOCKER_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)CONTAINER_DOCKER_ANSWER_MAX);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "seccheckd");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep_answer);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, d);
    return d;
}

void docker_source_free(struct docker_source *d)
{
    if (!d)
        return;
    if (d->curl)
        curl_easy_cleanup(d->curl);
    free(d->socket);
    free(d->answer);
    free(d);
}

void docker_source_get_stats(const struct docker_source *d, struct docker_source_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (!d)
        return;
    out->lookups = atomic_load(&d->lookups);
    out->found = atomic_load(&d->found);
    out->not_found = atomic_load(&d->not_found);
    out->failed = atomic_load(&d->failed);
    out->refused = atomic_load(&d->refused);
    out->labels_dropped = atomic_load(&d->labels_dropped);
}

/* GET /containers/{id}/json: the HTTP status, 0 when there was no answer (why says), the body in d->answer. */
static long ask(struct docker_source *d, const char *id, const char **why)
{
    char url[CONTAINER_ID_MAX + 64];
    snprintf(url, sizeof(url), "http://docker/containers/%s/json", id);   /* id: [A-Za-z0-9_+.-] only */
    d->len = 0;
    d->too_large = false;
    d->errbuf[0] = '\0';
    curl_easy_setopt(d->curl, CURLOPT_URL, url);
    CURLcode rc = curl_easy_perform(d->curl);
    long status = 0;
    if (rc == CURLE_OK)
        curl_easy_getinfo(d->curl, CURLINFO_RESPONSE_CODE, &status);
    else if ((d->too_large = d->too_large || rc == CURLE_FILESIZE_EXCEEDED))
        *why = "its answer is larger than 1 MiB";
    else
        *why = d->errbuf[0] ? d->errbuf : curl_easy_strerror(rc);
    return status;
}

static int label_order(const void *a, const void *b)
{
    return strcmp(((const struct container_label *)a)->key, ((const struct container_label *)b)->key);
}

/* container.labels as the plugin joins them (extract.cpp, concatenate_container_labels): sorted, "k:v"
 * (or "k" for an empty value) joined by ", ", without io.kubernetes.* and annotation.* keys. */
static void labels_join(struct record *r)
{
    size_t total = 1;
    for (size_t i = 0; i < r->pub.nlabels; i++)
        total += strlen(r->labels[i].key) + strlen(r->labels[i].value) + 3;
    char *text = malloc(total), *p = text;
    if (!text) {
        r->alloc_failed = true;
        return;
    }
    for (size_t i = 0; i < r->pub.nlabels; i++) {
        const struct container_label *l = &r->labels[i];
        if (strncmp(l->key, "io.kubernetes.", 14) == 0 || strncmp(l->key, "annotation.", 11) == 0)
            continue;
        p += sprintf(p, "%s%s%s%s", p == text ? "" : ", ", l->key, l->value[0] ? ":" : "", l->value);
    }
    *p = '\0';
    r->pub.labels_text = record_keep(r, text);
}

static void take_labels(struct record *r, json_t *labels)
{
    size_t n = json_is_object(labels) ? json_object_size(labels) : 0;
    r->labels = n ? calloc(n < CONTAINER_LABELS_MAX ? n : CONTAINER_LABELS_MAX, sizeof(*r->labels)) : NULL;
    if (n && !r->labels) {
        r->alloc_failed = true;
        return;
    }
    const char *key;
    json_t *v;
    size_t bytes = 0;
    json_object_foreach(labels, key, v) {
        size_t klen = strlen(key), vlen = json_is_string(v) ? json_string_length(v) : 0;
        if (!json_is_string(v) || klen == 0 || klen > CONTAINER_LABEL_KEY_MAX || vlen > CONTAINER_LABEL_VALUE_MAX ||
            memchr(json_string_value(v), '\0', vlen) || r->pub.nlabels == CONTAINER_LABELS_MAX ||
            bytes + klen + vlen > CONTAINER_LABELS_BYTES_MAX) {
            r->pub.labels_dropped++;
            continue;
        }
        bytes += klen + vlen;
        struct container_label *l = &r->labels[r->pub.nlabels++];
        l->key = record_strndup(r, key, klen);
        l->value = record_strndup(r, json_string_value(v), vlen);
        if (!l->key || !l->value)
            return;
    }
    if (r->pub.nlabels)
        qsort(r->labels, r->pub.nlabels, sizeof(*r->labels), label_order);
    r->pub.labels = r->labels;
}

/* The answer into r; false (why says) when it is refused. */
static bool take_answer(struct record *r, const char *text, size_t len, const char **why)
{
    json_error_t jerr;
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    json_t *config = json_object_get(doc, "Config");
    const char *id = json_string_value(json_object_get(doc, "Id"));
    const char *name = json_string_value(json_object_get(doc, "Name"));
    bool ok = false;
    if (!json_is_object(doc))
        *why = "its answer is not a JSON object";
    else if (!id || strcmp(id, r->pub.id) != 0)
        *why = "it answered about another container";
    else if (!name || !*name || (config && !json_is_object(config)))
        *why = "its answer has no name or a Config that is not an object";
    else
        ok = true;
    if (ok) {
        name += name[0] == '/';
        r->pub.name = record_strdup(r, name);
        json_t *image = json_object_get(config, "Image");
        size_t ilen = json_is_string(image) ? json_string_length(image) : 0;
        const char *ref = json_string_value(image);
        if (ilen && !memchr(ref, '\0', ilen))
            record_set_image(r, ref, ilen);
        /* "sha256:<hex>": the hex, as the plugin takes it (no '/', after the ':') */
        const char *image_id = json_string_value(json_object_get(doc, "Image"));
        const char *colon = image_id && !strchr(image_id, '/') ? strchr(image_id, ':') : NULL;
        if (colon && colon[1])
            r->pub.image_id = record_strdup(r, colon + 1);
        take_labels(r, json_object_get(config, "Labels"));
        if (!r->alloc_failed)
            labels_join(r);
        r->pub.names_from_docker = true;
    }
    json_decref(doc);
    return ok;
}

void docker_source_fill(struct docker_source *d, struct record *r)
{
    if (!d || r->pub.state != CONTAINER_FOUND || r->pub.name || r->pub.pod_name)
        return;
    atomic_fetch_add(&d->lookups, 1);
    const char *why = NULL;
    long status = ask(d, r->pub.id, &why);
    if (status == 404) {
        atomic_fetch_add(&d->not_found, 1);   /* a runsc container Docker did not start */
        return;
    }
    if (status == 200 && take_answer(r, d->answer, d->len, &why)) {
        atomic_fetch_add(&d->found, 1);
        atomic_fetch_add(&d->labels_dropped, r->pub.labels_dropped);
        return;
    }
    char status_text[64];
    if (!why) {
        snprintf(status_text, sizeof(status_text), "it answered HTTP status %ld", status);
        why = status_text;
    }
    bool refused = status == 200 || d->too_large;
    atomic_fetch_add(refused ? &d->refused : &d->failed, 1);
    bool *warned = refused ? &d->warned_refused : &d->warned_failed;
    if (!*warned) {
        *warned = true;
        log_warn("containers: Docker's API on %s, asked about container %s: %s; its name, image and labels stay "
                 "unknown (counted in seccheckd_container_docker_lookups_total, logged once)", d->socket, r->pub.id,
                 why);
    }
}

void docker_fields_copy(struct record *r, const struct container_record *old)
{
    r->pub.names_from_docker = old->names_from_docker;
    r->pub.image_id = record_strdup(r, old->image_id);
    r->pub.labels_text = record_strdup(r, old->labels_text);
    r->pub.labels_dropped = old->labels_dropped;
    if (!old->nlabels)
        return;
    r->labels = calloc(old->nlabels, sizeof(*r->labels));
    if (!r->labels) {
        r->alloc_failed = true;
        return;
    }
    for (size_t i = 0; i < old->nlabels; i++) {
        r->labels[i].key = record_strdup(r, old->labels[i].key);
        r->labels[i].value = record_strdup(r, old->labels[i].value);
    }
    r->pub.labels = r->labels;
    r->pub.nlabels = old->nlabels;
}
