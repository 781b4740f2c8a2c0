/* state_file.c - runsc's state file of a container, read into a record.
 *
 * runsc names it `<container-id>_sandbox:<sandbox-id>.state` in its root
 * directory (google/gvisor runsc/container/state_file.go, buildPath) and
 * writes it 0640 with encoding/json: the Container of container.go, whose
 * `spec` is the OCI runtime spec (annotations, root.path, process.user,
 * process.terminal, process.capabilities, mounts: mounts.c) and
 * `bundleDir` the bundle.
 *
 * The root is searched for the one entry starting `<id>_sandbox:` and
 * ending `.state` (the sandbox id is not known beforehand); the entry is
 * opened by name beneath the root's directory handle, never followed as a
 * symlink, read only when a regular file of at most
 * CONTAINER_STATE_MAX_BYTES, and parsed by jansson (depth bounded by
 * jansson itself, NUL escapes refused). Only strings, booleans and small
 * numbers are taken from it. A file whose `id` is not the id asked for is
 * refused: it describes another container.
 */
#include <dirent.h>
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

/* The file's bytes, NUL-terminated; NULL with why set. */
static char *read_state(int rootfd, const char *name, size_t *len, const char **why)
{
    int fd = openat(rootfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        *why = errno == ELOOP ? "the state file is a symlink" : "the state file cannot be opened";
        return NULL;
    }
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
            ssize_t n = read(fd, buf + *len, want - *len);
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
    close(fd);
    return buf;
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

static void take_spec(struct record *r, json_t *doc, const char *sandbox_from_name)
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
        r->pub.sandbox_id = record_strdup(r, sandbox_from_name);
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

/* Reads and parses the file; the record's state says how it went. */
static void read_into(struct record *r, int rootfd, const char *name, const char *sandbox, uint64_t *users_refused)
{
    size_t len = 0;
    const char *why = NULL;
    char *text = read_state(rootfd, name, &len, &why);
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
        record_set_state(r, CONTAINER_REFUSED, "the state file is not a JSON object");
    } else if (!id || idlen != strlen(r->pub.id) || memcmp(id, r->pub.id, idlen) != 0) {
        record_set_state(r, CONTAINER_REFUSED, "the state file names another container");
    } else if (!json_is_object(json_object_get(doc, "spec"))) {
        record_set_state(r, CONTAINER_REFUSED, "the state file has no spec");
    } else {
        take_spec(r, doc, sandbox);
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
    return &r->pub;
}

struct container_record *container_read_counted(const char *id, const char *const *roots, size_t nroots,
                                                uint64_t *users_refused)
{
    struct record *r = record_new(id);
    if (!r)
        return NULL;
    record_set_state(r, CONTAINER_UNKNOWN, nroots ? "no state file in the runsc roots" : "no runsc root to look in");
    if (!container_id_valid(id)) {
        record_set_state(r, CONTAINER_UNKNOWN, "not a runsc container id");
        return finish(r);
    }
    for (size_t i = 0; i < nroots; i++) {
        int rootfd = open(roots[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
            continue;
        char name[CONTAINER_ID_MAX * 2 + 32], sandbox[CONTAINER_ID_MAX];
        int found = find_state_entry(rootfd, id, name, sizeof(name), sandbox, sizeof(sandbox));
        if (found > 0) {
            char path[CONTAINER_STRING_MAX];
            snprintf(path, sizeof(path), "%s/%s", roots[i], name);
            r->pub.state_file = record_strdup(r, path);
            read_into(r, rootfd, name, sandbox, users_refused);
        }
        close(rootfd);
        if (found > 0)
            break;
    }
    return finish(r);
}

struct container_record *container_read(const char *id, const char *const *roots, size_t nroots)
{
    uint64_t ignored = 0;
    return container_read_counted(id, roots, nroots, &ignored);
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
                          &r->pub.rootfs, &r->pub.bundle, &r->pub.state_file};
    const char *src[] = {old->why, old->name, old->image, old->image_repository, old->image_tag,
                         old->pod_name, old->pod_namespace, old->pod_uid, old->sandbox_id,
                         old->rootfs, old->bundle, old->state_file};
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
