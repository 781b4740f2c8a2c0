/* state_file.c - runsc's state file of a container, read into a record.
 *
 * runsc names it `<container-id>_sandbox:<sandbox-id>.state` in its root
 * directory (google/gvisor runsc/container/state_file.go, buildPath) and
 * writes it 0640 with encoding/json: the Container of container.go, whose
 * `spec` is the OCI runtime spec (annotations, root.path, process.user,
 * process.terminal, process.capabilities, mounts: mounts.c) and
 * `bundleDir` the bundle.
 *
 * A container is looked up as one sandbox's (container.h): the entry
 * `<id>_sandbox:<sandbox>.state` is opened by that name beneath the root's
 * directory handle, never followed as a symlink, read only when a regular
 * file of at most CONTAINER_STATE_MAX_BYTES, and parsed by jansson (depth
 * bounded by jansson itself, NUL escapes refused). Only strings, booleans
 * and small numbers are taken from it. A file whose `id` is not the id
 * asked for is refused: it describes another container. When the sandbox
 * has no such file, the root is searched for one starting `<id>_sandbox:`
 * (CONTAINER_ROOT_ENTRIES_MAX entries at most): there, the container is
 * another sandbox's (FOREIGN), and nothing of that file is read.
 */
#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "internal.h"

#define STATE_SUFFIX ".state"
#define SANDBOX_INFIX "_sandbox:"

/* The entry of root naming id's state file, copied into name; the sandbox
 * id in it into sandbox. 1 found, 0 not there, -1 the root cannot be read. */
static int find_state_entry(int rootfd, const char *id, char *name, size_t namelen, char *sandbox, size_t sandboxlen)
{
    int dfd = dup(rootfd);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return -1;
    }
    size_t idlen = strlen(id), infix = strlen(SANDBOX_INFIX), suffix = strlen(STATE_SUFFIX);
    int found = 0;
    struct dirent *e;
    for (unsigned scanned = 0; found == 0 && scanned < CONTAINER_ROOT_ENTRIES_MAX && (e = readdir(d)); scanned++) {
        size_t len = strlen(e->d_name);
        if (len <= idlen + infix + suffix || strncmp(e->d_name, id, idlen) != 0 ||
            strncmp(e->d_name + idlen, SANDBOX_INFIX, infix) != 0 ||
            strcmp(e->d_name + len - suffix, STATE_SUFFIX) != 0 || len >= namelen)
            continue;
        size_t sblen = len - idlen - infix - suffix;
        if (sblen >= sandboxlen)
            continue;
        memcpy(sandbox, e->d_name + idlen + infix, sblen);
        sandbox[sblen] = '\0';
        if (!container_id_valid(sandbox))
            continue;
        memcpy(name, e->d_name, len + 1);
        found = 1;
    }
    closedir(d);
    return found;
}

/* The bytes of the open file fd (from its start), NUL-terminated; NULL with why set. */
static char *read_state_fd(int fd, size_t *len, const char **why)
{
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        *why = "the state file is not a regular file";
    } else if (st.st_size < 0 || (uint64_t)st.st_size > CONTAINER_STATE_MAX_BYTES) {
        *why = "the state file is larger than 4 MiB";
    } else {
        size_t want = (size_t)st.st_size;
        buf = malloc(want + 1);
        *len = 0;
        while (buf && *len < want) {
            ssize_t n = pread(fd, buf + *len, want - *len, (off_t)*len);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            *len += (size_t)n;
        }
        if (buf)
            buf[*len] = '\0';
        else
            *why = "out of memory";
    }
    return buf;
}

int state_file_open(int rootfd, const char *name)
{
    return openat(rootfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
}

static const char *json_str(json_t *obj, const char *key, size_t *len)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_string(v))
        return NULL;
    *len = json_string_length(v);
    return json_string_value(v);
}

static const char *keep_str(struct record *r, json_t *obj, const char *key)
{
    size_t len = 0;
    const char *s = json_str(obj, key, &len);
    return s ? record_strndup(r, s, len) : NULL;
}

/* The 41 capabilities of Linux 5.9 (CAP_CHOWN .. CAP_CHECKPOINT_RESTORE):
 * Docker's --privileged and CRI's privileged containers get every one. */
static bool grants_every_capability(json_t *process)
{
    json_t *bounding = json_object_get(json_object_get(process, "capabilities"), "bounding");
    static const char *const wanted[] = {
        "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
        "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE",
        "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER", "CAP_SYS_MODULE",
        "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT",
        "CAP_SYS_NICE", "CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE",
        "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG",
        "CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE",
    };
    if (!json_is_array(bounding))
        return false;
    for (size_t w = 0; w < sizeof(wanted) / sizeof(wanted[0]); w++) {
        bool has = false;
        for (size_t i = 0; !has && i < json_array_size(bounding); i++) {
            json_t *v = json_array_get(bounding, i);
            has = json_is_string(v) && strcmp(json_string_value(v), wanted[w]) == 0;
        }
        if (!has)
            return false;
    }
    return true;
}

/* A uid or gid: a JSON integer from 0 to 2^32-1. */
static bool json_u32(json_t *obj, const char *key, uint32_t *out)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > (json_int_t)UINT32_MAX)
        return false;
    *out = (uint32_t)json_integer_value(v);
    return true;
}

static void take_image(struct record *r, json_t *ann)
{
    size_t len = 0;
    const char *image = json_str(ann, "io.kubernetes.cri.image-name", &len);
    if (image && len)
        record_set_image(r, image, len);
}

/* root.path, joined to bundleDir when relative (as runsc does). */
static void take_rootfs(struct record *r, json_t *spec)
{
    size_t len = 0;
    const char *path = json_str(json_object_get(spec, "root"), "path", &len);
    if (!path || len == 0 || memchr(path, '\0', len))
        return;
    if (path[0] == '/') {
        r->pub.rootfs = record_strndup(r, path, len);
        return;
    }
    const char *bundle = r->pub.bundle;
    if (!bundle || bundle[0] != '/')
        return;
    size_t blen = strlen(bundle);
    if (blen + 1 + len > CONTAINER_STRING_MAX)
        return;   /* cut, it would name another directory */
    char joined[CONTAINER_STRING_MAX + 2];
    snprintf(joined, sizeof(joined), "%s/%.*s", bundle, (int)len, path);
    r->pub.rootfs = record_strdup(r, joined);
}

/* createdAt as Go's time.Time marshals it: RFC 3339 with up to 9 decimals
 * and Z or an offset. 0 when absent or not that. */
static int64_t parse_created(json_t *doc)
{
    size_t len = 0;
    const char *s = json_str(doc, "createdAt", &len);
    struct tm tm = {0};
    const char *rest = s && len < 64 ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
    if (!rest)
        return 0;
    int64_t frac = 0, scale = 1000000000;
    if (*rest == '.')
        for (rest++; *rest >= '0' && *rest <= '9'; rest++)
            if (scale > 1) {
                scale /= 10;
                frac += (*rest - '0') * scale;
            }
    int64_t offset_s = 0;
    if ((*rest == '+' || *rest == '-') && strlen(rest) == 6 && rest[3] == ':') {
        int h = (rest[1] - '0') * 10 + (rest[2] - '0'), m = (rest[4] - '0') * 10 + (rest[5] - '0');
        offset_s = (rest[0] == '+' ? 1 : -1) * (h * 3600 + m * 60);
    } else if (strcmp(rest, "Z") != 0) {
        return 0;
    }
    time_t t = timegm(&tm);
    if (t < 0 || t > (time_t)4102444800)   /* 1970 to 2100: anything else is not a creation time */
        return 0;
    return ((int64_t)t - offset_s) * 1000000000 + frac;
}

static void take_spec(struct record *r, json_t *doc)
{
    json_t *spec = json_object_get(doc, "spec");
    json_t *ann = json_object_get(spec, "annotations");
    json_t *process = json_object_get(spec, "process");
    r->pub.bundle = keep_str(r, doc, "bundleDir");
    r->pub.created_ns = parse_created(doc);
    r->pub.name = keep_str(r, ann, "io.kubernetes.cri.container-name");
    r->pub.pod_name = keep_str(r, ann, "io.kubernetes.cri.sandbox-name");
    r->pub.pod_namespace = keep_str(r, ann, "io.kubernetes.cri.sandbox-namespace");
    r->pub.pod_uid = keep_str(r, ann, "io.kubernetes.cri.sandbox-uid");
    r->pub.sandbox_id = keep_str(r, ann, "io.kubernetes.cri.sandbox-id");
    if (!r->pub.sandbox_id)
        r->pub.sandbox_id = record_strdup(r, r->pub.sandbox);
    size_t len = 0;
    const char *type = json_str(ann, "io.kubernetes.cri.container-type", &len);
    r->pub.is_sandbox = type && len == 7 && memcmp(type, "sandbox", 7) == 0;
    take_image(r, ann);
    take_rootfs(r, spec);
    json_t *user = json_object_get(process, "user");
    r->pub.has_user = json_u32(user, "uid", &r->pub.user_uid);
    if (r->pub.has_user && !json_u32(user, "gid", &r->pub.user_gid))
        r->pub.user_gid = 0;
    r->pub.terminal = json_is_true(json_object_get(process, "terminal"));
    r->pub.privileged = grants_every_capability(process);
    mounts_read(r, spec);
}

/* Reads and parses the open state file fd (-1: it could not be opened,
 * errno says why); the record's state says how it went. */
static void read_into(struct record *r, int fd, uint64_t *users_refused)
{
    size_t len = 0;
    const char *why = errno == ELOOP ? "the state file is a symlink" : "the state file cannot be opened";
    char *text = fd >= 0 ? read_state_fd(fd, &len, &why) : NULL;
    if (!text) {
        record_set_state(r, CONTAINER_REFUSED, why);
        return;
    }
    json_error_t jerr;
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    size_t idlen = 0;
    const char *id = doc ? json_str(doc, "id", &idlen) : NULL;
    if (!json_is_object(doc)) {
        /* runsc writes the file in place (os.WriteFile: truncate, write):
         * one read half-way through is not JSON. Looked for again. */
        r->partial = true;
        record_set_state(r, CONTAINER_REFUSED, "the state file is not a JSON object");
    } else if (!id || idlen != strlen(r->pub.id) || memcmp(id, r->pub.id, idlen) != 0) {
        record_set_state(r, CONTAINER_REFUSED, "the state file names another container");
    } else if (!json_is_object(json_object_get(doc, "spec"))) {
        r->partial = true;
        record_set_state(r, CONTAINER_REFUSED, "the state file has no spec");
    } else {
        take_spec(r, doc);
        record_set_state(r, CONTAINER_FOUND, NULL);
        if (r->pub.rootfs)
            users_read(r, r->pub.rootfs, users_refused);
    }
    json_decref(doc);
}

static struct container_record *finish(struct record *r)
{
    if (r->alloc_failed) {
        container_record_release(&r->pub);
        return NULL;
    }
    r->pub.resolved_ns = realtime_ns();
    record_account(r);
    return &r->pub;
}

/* `<id>_sandbox:<sandbox>.state` into name; false when it does not fit. */
static bool state_name(const char *sandbox, const char *id, char *name, size_t len)
{
    int n = snprintf(name, len, "%s" SANDBOX_INFIX "%s" STATE_SUFFIX, id, sandbox);
    return n > 0 && (size_t)n < len;
}

/* Is there an entry named name in the root? 1 yes, 0 no, -1 cannot tell. */
static int has_entry(int rootfd, const char *name)
{
    struct stat st;
    if (fstatat(rootfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
        return 1;
    return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
}

struct container_record *container_read_counted(const char *sandbox, const char *id, const char *const *roots,
                                                size_t nroots, uint64_t *users_refused)
{
    struct record *r = record_new(id);
    if (!r)
        return NULL;
    r->pub.sandbox = record_strdup(r, sandbox && sandbox[0] ? sandbox : id);
    record_set_state(r, CONTAINER_UNKNOWN, nroots ? "no state file in the runsc roots" : "no runsc root to look in");
    char name[CONTAINER_ID_MAX * 2 + 32];
    if (!container_id_valid(id) || !container_id_valid(r->pub.sandbox ? r->pub.sandbox : "") ||
        !state_name(r->pub.sandbox, id, name, sizeof(name))) {
        record_set_state(r, CONTAINER_UNKNOWN, "not a runsc container id");
        return finish(r);
    }
    bool found = false;
    for (size_t i = 0; !found && i < nroots; i++) {
        int rootfd = open(roots[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
            continue;
        if (has_entry(rootfd, name) > 0) {
            found = true;
            char path[CONTAINER_STRING_MAX];
            snprintf(path, sizeof(path), "%s/%s", roots[i], name);
            r->pub.state_file = record_strdup(r, path);
            int fd = state_file_open(rootfd, name);
            read_into(r, fd, users_refused);
            if (fd >= 0)
                close(fd);
        }
        close(rootfd);
    }
    char other[CONTAINER_ID_MAX];
    if (!found && container_sandbox_of(id, roots, nroots, other) == 1 && strcmp(other, r->pub.sandbox) != 0)
        record_set_state(r, CONTAINER_FOREIGN, "its state file is another sandbox's: not this sandbox's container");
    return finish(r);
}

/* filepath.Join(base, rel) as Go cleans it (lexically: "." and ".." and
 * repeated slashes), into out; false when it does not fit. */
static bool join_clean(const char *base, const char *rel, char *out, size_t len)
{
    char joined[2 * CONTAINER_STRING_MAX + 2];
    if (snprintf(joined, sizeof(joined), "%s/%s", base, rel) >= (int)sizeof(joined) || joined[0] != '/')
        return false;
    size_t o = 0;
    char *save = NULL;
    for (char *part = strtok_r(joined, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
        if (strcmp(part, ".") == 0)
            continue;
        if (strcmp(part, "..") == 0) {
            while (o > 0 && out[--o] != '/')
                ;
            continue;
        }
        size_t n = strlen(part);
        if (o + 1 + n + 1 > len)
            return false;
        out[o++] = '/';
        memcpy(out + o, part, n);
        o += n;
    }
    if (o == 0)
        out[o++] = '/';
    out[o] = '\0';
    return true;
}

/* The spec as runsc keeps it in its state (runsc/specutils ReadSpecFromFile):
 * relative mount sources joined to the bundle (root.path: take_rootfs). */
static void absolute_sources(json_t *spec, const char *bundle)
{
    json_t *mounts = json_object_get(spec, "mounts");
    for (size_t i = 0; json_is_array(mounts) && i < json_array_size(mounts); i++) {
        json_t *m = json_array_get(mounts, i), *src = json_object_get(m, "source");
        char path[CONTAINER_STRING_MAX + 1];
        if (json_is_string(src) && json_string_length(src) && json_string_value(src)[0] != '/' &&
            join_clean(bundle, json_string_value(src), path, sizeof(path)))
            json_object_set_new(m, "source", json_string(path));
    }
}

struct container_record *container_read_bundle(const char *sandbox, const char *id, const char *bundle,
                                               uint64_t *users_refused)
{
    struct record *r = record_new(id);
    if (!r)
        return NULL;
    r->pub.sandbox = record_strdup(r, sandbox);
    record_set_state(r, CONTAINER_UNKNOWN, "no state file, and its bundle's config.json cannot be read");
    int dirfd = open(bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int fd = dirfd >= 0 ? state_file_open(dirfd, "config.json") : -1;
    size_t len = 0;
    const char *why = NULL;
    char *text = fd >= 0 ? read_state_fd(fd, &len, &why) : NULL;
    json_t *spec = text ? json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL) : NULL;
    if (json_is_object(spec))
        absolute_sources(spec, bundle);
    /* What runsc would write as its state: the spec, the bundle, the id. */
    json_t *doc = json_is_object(spec) ? json_pack("{s:s, s:O, s:s}", "id", id, "spec", spec, "bundleDir", bundle)
                                       : NULL;
    if (doc) {
        char path[CONTAINER_STRING_MAX];
        snprintf(path, sizeof(path), "%s/config.json", bundle);
        r->pub.state_file = record_strdup(r, path);
        take_spec(r, doc);
        record_set_state(r, CONTAINER_FOUND, NULL);
        if (r->pub.rootfs)
            users_read(r, r->pub.rootfs, users_refused);
    }
    json_decref(doc);
    json_decref(spec);
    free(text);
    if (fd >= 0)
        close(fd);
    if (dirfd >= 0)
        close(dirfd);
    return finish(r);
}

struct container_record *container_read_held(const char *sandbox, const char *id, int fd, const char *path,
                                             uint64_t *users_refused)
{
    struct record *r = record_new(id);
    if (!r) {
        close(fd);
        return NULL;
    }
    r->pub.sandbox = record_strdup(r, sandbox);
    r->pub.state_file = record_strdup(r, path);
    read_into(r, fd, users_refused);
    close(fd);
    return finish(r);
}

struct container_record *container_read(const char *sandbox, const char *id, const char *const *roots,
                                        size_t nroots)
{
    uint64_t ignored = 0;
    return container_read_counted(sandbox, id, roots, nroots, &ignored);
}

int container_sandbox_of(const char *id, const char *const *roots, size_t nroots, char out[CONTAINER_ID_MAX])
{
    if (!container_id_valid(id))
        return 0;
    for (size_t i = 0; i < nroots; i++) {
        int rootfd = open(roots[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
            continue;
        char name[CONTAINER_ID_MAX * 2 + 32];
        int found = find_state_entry(rootfd, id, name, sizeof(name), out, CONTAINER_ID_MAX);
        close(rootfd);
        if (found > 0)
            return 1;
    }
    return 0;
}

struct container_record *container_reread_users(const struct container_record *old)
{
    const struct record *o = (const struct record *)old;
    if (old->state != CONTAINER_FOUND || !old->rootfs || !users_changed(o))
        return NULL;
    struct record *r = record_new(old->id);
    if (!r)
        return NULL;
    /* The same metadata, each string copied: a record owns what it points to. */
    const char **dst[] = {&r->pub.why, &r->pub.name, &r->pub.image, &r->pub.image_repository, &r->pub.image_tag,
                          &r->pub.pod_name, &r->pub.pod_namespace, &r->pub.pod_uid, &r->pub.sandbox_id,
                          &r->pub.sandbox, &r->pub.rootfs, &r->pub.bundle, &r->pub.state_file};
    const char *src[] = {old->why, old->name, old->image, old->image_repository, old->image_tag,
                         old->pod_name, old->pod_namespace, old->pod_uid, old->sandbox_id,
                         old->sandbox, old->rootfs, old->bundle, old->state_file};
    for (size_t i = 0; i < sizeof(src) / sizeof(src[0]); i++)
        *dst[i] = record_strdup(r, src[i]);
    r->pub.state = old->state;
    r->pub.is_sandbox = old->is_sandbox;
    r->pub.privileged = old->privileged;
    r->pub.terminal = old->terminal;
    r->pub.has_user = old->has_user;
    r->pub.user_uid = old->user_uid;
    r->pub.user_gid = old->user_gid;
    r->pub.created_ns = old->created_ns;
    mounts_copy(r, old);
    docker_fields_copy(r, old);
    uint64_t ignored = 0;
    users_read(r, r->pub.rootfs, &ignored);
    return finish(r);
}
