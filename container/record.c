/* record.c - container records: their memory, references, look-ups by id,
 * and the two small parsers of names a record needs (image references,
 * container ids). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const char *const container_default_roots[] = {
    "/run/containerd/runsc/k8s.io",       /* containerd's runsc shim, Kubernetes' namespace */
    "/run/containerd/runsc/moby",         /* the same under Docker's containerd namespace */
    "/var/run/docker/runtime-runsc/moby", /* dockerd with a runtime named runsc */
    "/var/run/docker/runtime-runc/moby",  /* the same, runsc installed as the runc runtime */
    "/var/run/runsc",                     /* plain runsc */
    NULL,
};

const char *container_state_name(enum container_state s)
{
    switch (s) {
    case CONTAINER_FOUND: return "found";
    case CONTAINER_UNKNOWN: return "unknown";
    case CONTAINER_REFUSED: return "refused";
    case CONTAINER_FOREIGN: return "foreign";
    }
    return "unknown";
}

struct record *record_new(const char *id)
{
    struct record *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    atomic_init(&r->refs, 1);
    r->pub.id = record_strdup(r, id);
    if (!r->pub.id) {
        container_record_release(&r->pub);
        return NULL;
    }
    return r;
}

const char *record_keep(struct record *r, char *s)
{
    if (r->nstrings == r->strings_cap) {
        size_t cap = r->strings_cap ? r->strings_cap * 2 : 16;
        char **n = realloc(r->strings, cap * sizeof(*n));
        if (!n) {
            free(s);
            r->alloc_failed = true;
            return NULL;
        }
        r->strings = n;
        r->strings_cap = cap;
    }
    r->strings[r->nstrings++] = s;
    return s;
}

const char *record_strndup(struct record *r, const char *s, size_t len)
{
    if (len > CONTAINER_STRING_MAX)
        len = CONTAINER_STRING_MAX;
    char *copy = malloc(len + 1);
    if (!copy) {
        r->alloc_failed = true;
        return NULL;
    }
    memcpy(copy, s, len);
    copy[len] = '\0';
    return record_keep(r, copy);
}

void record_set_image(struct record *r, const char *image, size_t len)
{
    if (len > CONTAINER_STRING_MAX)
        len = CONTAINER_STRING_MAX;
    size_t repo_len, tag_start, tag_len;
    container_image_split(image, len, &repo_len, &tag_start, &tag_len);
    r->pub.image = record_strndup(r, image, len);
    r->pub.image_repository = record_strndup(r, image, repo_len);
    if (tag_len)
        r->pub.image_tag = record_strndup(r, image + tag_start, tag_len);
}

void record_set_state(struct record *r, enum container_state state, const char *why)
{
    r->pub.state = state;
    r->pub.why = why;
}

static atomic_uint_fast64_t alive_records, alive_bytes;

void record_account(struct record *r)
{
    size_t bytes = sizeof(*r) + r->strings_cap * sizeof(*r->strings) + r->pub.nusers * sizeof(*r->users) +
                   r->pub.ngroups * sizeof(*r->groups) + r->pub.nmounts * sizeof(*r->mounts) +
                   r->pub.nlabels * sizeof(*r->labels);
    for (size_t i = 0; i < r->nstrings; i++)
        bytes += strlen(r->strings[i]) + 1 + 2 * sizeof(void *);   /* malloc's own words, about */
    if (r->accounted)   /* again, after another source added to it (Docker's labels) */
        atomic_fetch_sub_explicit(&alive_bytes, r->bytes, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&alive_records, 1, memory_order_relaxed);
    r->bytes = bytes;
    r->accounted = true;
    atomic_fetch_add_explicit(&alive_bytes, bytes, memory_order_relaxed);
}

uint64_t container_records_alive(uint64_t *bytes)
{
    if (bytes)
        *bytes = atomic_load_explicit(&alive_bytes, memory_order_relaxed);
    return atomic_load_explicit(&alive_records, memory_order_relaxed);
}

void container_record_ref(const struct container_record *pub)
{
    struct record *r = (struct record *)pub;
    atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
}

void container_record_release(const struct container_record *pub)
{
    if (!pub)
        return;
    struct record *r = (struct record *)pub;
    if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (r->accounted) {
        atomic_fetch_sub_explicit(&alive_records, 1, memory_order_relaxed);
        atomic_fetch_sub_explicit(&alive_bytes, r->bytes, memory_order_relaxed);
    }
    for (size_t i = 0; i < r->nstrings; i++)
        free(r->strings[i]);
    free(r->strings);
    free(r->users);
    free(r->groups);
    free(r->mounts);
    free(r->labels);
    free(r);
}

const char *container_label(const struct container_record *r, const char *key)
{
    size_t lo = 0, hi = r && key ? r->nlabels : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(r->labels[mid].key, key);
        if (c == 0)
            return r->labels[mid].value;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const struct container_user *container_user_by_uid(const struct container_record *r, uint32_t uid)
{
    size_t lo = 0, hi = r ? r->nusers : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->users[mid].uid == uid)
            return &r->users[mid];
        if (r->users[mid].uid < uid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const struct container_group *container_group_by_gid(const struct container_record *r, uint32_t gid)
{
    size_t lo = 0, hi = r ? r->ngroups : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->groups[mid].gid == gid)
            return &r->groups[mid];
        if (r->groups[mid].gid < gid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

void container_image_split(const char *image, size_t len, size_t *repo_len, size_t *tag_start, size_t *tag_len)
{
    const char *at = memchr(image, '@', len);   /* the digest goes first */
    if (at)
        len = (size_t)(at - image);
    size_t last_slash = SIZE_MAX, last_colon = SIZE_MAX;
    for (size_t i = 0; i < len; i++) {
        if (image[i] == '/')
            last_slash = i;
        else if (image[i] == ':')
            last_colon = i;
    }
    /* no colon, or one before the last slash (a registry's port): no tag */
    if (last_colon == SIZE_MAX || (last_slash != SIZE_MAX && last_colon < last_slash)) {
        *repo_len = len;
        *tag_start = len;
        *tag_len = 0;
        return;
    }
    *repo_len = last_colon;
    *tag_start = last_colon + 1;
    *tag_len = len - last_colon - 1;
}

bool container_id_valid(const char *id)
{
    size_t n = 0;
    for (; id && id[n]; n++) {
        unsigned char ch = (unsigned char)id[n];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
                  ch == '+' || ch == '.' || ch == '-';
        if (!ok || n + 1 >= CONTAINER_ID_MAX)
            return false;
    }
    /* "." and ".." would be directory entries, never runsc ids */
    return n > 0 && strcmp(id, ".") != 0 && strcmp(id, "..") != 0;
}
