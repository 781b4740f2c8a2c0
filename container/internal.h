/* internal.h - what the files of container/ share; not part of its
 * interface (container.h is). */
#ifndef SECCHECKD_CONTAINER_INTERNAL_H
#define SECCHECKD_CONTAINER_INTERNAL_H

#include <stdatomic.h>
#include <string.h>
#include <sys/types.h>

#include "container.h"

/* A record and what it owns: its strings (one allocation each, listed so
 * that release frees them) and its user and group tables. */
struct record {
    struct container_record pub;
    atomic_uint refs;
    char **strings;
    size_t nstrings, strings_cap;
    struct container_user *users;
    struct container_group *groups;
    struct container_mount *mounts;
    struct container_label *labels;
    /* What the users were read from, to tell a change (container_reread_users). */
    int64_t passwd_mtime_ns, group_mtime_ns;
    off_t passwd_size, group_size;
    bool alloc_failed;
    bool partial;                   /* refused as read half-written: to be looked for again */
    bool accounted;                 /* counted in container_records_alive */
    size_t bytes;                   /* what it holds, about (record_account) */
};

struct record *record_new(const char *id);
/* A copy of s[0..len) (cut to CONTAINER_STRING_MAX) owned by r; NULL when
 * memory ran out (r->alloc_failed set). */
const char *record_strndup(struct record *r, const char *s, size_t len);
/* Hands s (malloc'd, NUL-terminated, any length) to r, which frees it
 * with itself; s, or NULL (s freed, r->alloc_failed set) out of memory. */
const char *record_keep(struct record *r, char *s);
static inline const char *record_strdup(struct record *r, const char *s)
{
    return s ? record_strndup(r, s, strlen(s)) : NULL;
}
/* image[0..len) as the record's image (cut to CONTAINER_STRING_MAX), split
 * into repository and tag as Falco's container plugin splits it. */
void record_set_image(struct record *r, const char *image, size_t len);
/* The record's why (a fixed text). */
void record_set_state(struct record *r, enum container_state state, const char *why);
/* r is made, or another source added to it: its bytes are counted alive
 * until its last release. */
void record_account(struct record *r);

/* Reads spec.mounts (and linux.rootfsPropagation) into r (mounts.c). */
struct json_t;
void mounts_read(struct record *r, struct json_t *spec);
/* r's mounts as old has them (a record made again from old). */
void mounts_copy(struct record *r, const struct container_record *old);

/* Reads rootfs's etc/passwd and etc/group into r (users.c). Missing files
 * leave the tables empty; refused ones are counted in *refused. */
void users_read(struct record *r, const char *rootfs, uint64_t *refused);
/* The state file name of the directory rootfd opened as a lookup opens it
 * (no symlink followed, never blocking on a FIFO); -1 with errno. */
int state_file_open(int rootfd, const char *name);

/* A record of container id in sandbox from its state file already open
 * (fd, taken: closed), which path names: the file as it was written, even
 * if runsc deleted it since. */
struct container_record *container_read_held(const char *sandbox, const char *id, int fd, const char *path,
                                             uint64_t *users_refused);

/* A record of container id in sandbox from the OCI bundle runsc makes it
 * from (the spec in bundle/config.json, which runsc copies into its state
 * file): FOUND, or UNKNOWN when it cannot be read. For a connection's own
 * sandbox, whose bundle its peer named: read before the container runs, so
 * a container that ends before its state file is looked at keeps names. */
struct container_record *container_read_bundle(const char *sandbox, const char *id, const char *bundle,
                                               uint64_t *users_refused);

/* container_read, counting the passwd and group files refused. */
struct container_record *container_read_counted(const char *sandbox, const char *id, const char *const *roots,
                                                size_t nroots, uint64_t *users_refused);

/* Have rootfs's etc/passwd or etc/group changed since r read them? */
bool users_changed(const struct record *r);

/* ---- Docker's Engine API, a source of names besides the state file (docker.c) ----
 * Used by the cache's lookup thread only (one connection, reused). */
struct docker_source;
struct docker_source_stats {
    uint64_t lookups, found, not_found, failed, refused, labels_dropped;
};
/* NULL with the reason in err (libcurl cannot start, out of memory). */
struct docker_source *docker_source_new(const char *socket_path, char *err, size_t errlen);
void docker_source_free(struct docker_source *d);   /* NULL: nothing */
/* Asks Docker about r's container when r was found without names (no CRI
 * annotations) and fills in what Docker says; counted in d's stats. */
void docker_source_fill(struct docker_source *d, struct record *r);
void docker_source_get_stats(const struct docker_source *d, struct docker_source_stats *out);
/* r's Docker fields as old has them (a record made again from old). */
void docker_fields_copy(struct record *r, const struct container_record *old);

#endif
