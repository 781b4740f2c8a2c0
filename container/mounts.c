/* mounts.c - the OCI spec's `mounts` of a state file, read into a record
 * as Falco's container plugin reads an OCI spec's (falcosecurity/plugins
 * plugins/container/go-worker/pkg/container/containerd.go:91-111, the
 * engine that, like runsc, has only the spec):
 *
 *   source, dest  the entry's `source` and `destination`. The source is
 *                 as runsc keeps it: a relative one joined to the bundle
 *                 directory when runsc read the spec (release-20221219.0
 *                 runsc/specutils/specutils.go:190-195), so a proc mount's
 *                 "proc" is BUNDLE/proc where Falco, reading containerd's
 *                 spec, has "proc"; "" when the spec gives none;
 *   rdwr          false when an option is "ro": gVisor reads options so
 *                 (runsc release-20221219.0 runsc/boot/vfs.go:743-765,
 *                 parseMountOptions: "ro" sets ReadOnly, "rw" is the
 *                 default and undoes nothing), as containerd.go:97-99 does;
 *   mode          the last "mode=" option's value (containerd.go:100-101).
 *                 Docker's own mount mode ("z", "ro") is not in an OCI spec:
 *                 without a "mode=" option the mode is "";
 *   propagation   the last of the mount's propagation options (private,
 *                 rprivate, shared, rshared, slave, rslave, unbindable,
 *                 runbindable: runsc/specutils/fs.go:68-82), else the spec's
 *                 linux.rootfsPropagation (what containerd.go:109 gives every
 *                 mount), else "". It is what the spec asked for: gVisor keeps
 *                 the sandbox's mount table in the sentry's memory and never
 *                 propagates a mount between sandbox and host (it refuses
 *                 shared and rshared for bind mounts, fs.go:79-82), and
 *                 mounts the container makes itself later are in no state
 *                 file.
 *
 * The spec is its author's (a pod's): at most CONTAINER_MOUNTS_MAX entries
 * and CONTAINER_MOUNTS_TEXT_MAX bytes of container.mounts are kept, a
 * value is cut at CONTAINER_STRING_MAX bytes. Values are kept as the spec
 * has them, like every name of a record, and escaped wherever they are
 * shown; in the joined texts (container.mount, container.mounts) ':', ','
 * and '\' inside a value are written \x3a, \x2c, \x5c, so that one
 * mount's path cannot forge another mount there. An entry refused, cut,
 * holding a control character, or with an option that is not a string is
 * counted in mounts_malformed. jansson has already refused NUL escapes and
 * invalid UTF-8 (the whole file then).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *const propagation_names[] = {
    "private", "rprivate", "shared", "rshared", "slave", "rslave", "unbindable", "runbindable",
};
#define NPROPAGATIONS (sizeof(propagation_names) / sizeof(propagation_names[0]))

/* The propagation name s[0..len) is, or NULL (a fixed string: nothing of the spec's is kept). */
static const char *propagation_name(const char *s, size_t len)
{
    for (size_t i = 0; i < NPROPAGATIONS; i++)
        if (strlen(propagation_names[i]) == len && memcmp(propagation_names[i], s, len) == 0)
            return propagation_names[i];
    return NULL;
}

/* A byte of a value written \xHH in the joined texts: their separators
 * and the escape itself. */
static bool needs_escape(unsigned char c)
{
    return c == ':' || c == ',' || c == '\\';
}

/* s[0..len) escaped, appended at out (room for escaped_len bytes); the bytes written. */
static size_t escape_into(char *out, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!needs_escape(c)) {
            out[n++] = (char)c;
            continue;
        }
        out[n++] = '\\';
        out[n++] = 'x';
        out[n++] = hex[c >> 4];
        out[n++] = hex[c & 15];
    }
    return n;
}

static size_t escaped_len(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += needs_escape((unsigned char)*s) ? 4 : 1;
    return n;
}

static bool has_control(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return true;
    return false;
}

/* A string value of the spec, as kept (cut; owned by r). NULL out of memory. */
static const char *keep_value(struct record *r, const char *s, size_t len, bool *malformed)
{
    if (len > CONTAINER_STRING_MAX || has_control(s, len))
        *malformed = true;
    return record_strndup(r, s, len);
}

/* What one entry says, before anything is kept. */
struct mount_entry {
    const char *source, *dest, *mode;
    size_t source_len, dest_len, mode_len;
    const char *propagation;   /* one of propagation_names, or NULL */
    bool rdwr, malformed;
};

/* false: not a mount (not an object, no string destination, a source not a string). */
static bool read_entry(json_t *m, struct mount_entry *e)
{
    memset(e, 0, sizeof(*e));
    e->rdwr = true;
    e->source = e->mode = "";
    json_t *dest = json_object_get(m, "destination"), *source = json_object_get(m, "source");
    if (!json_is_object(m) || !json_is_string(dest) || (source && !json_is_string(source)))
        return false;
    e->dest = json_string_value(dest);
    e->dest_len = json_string_length(dest);
    if (source) {
        e->source = json_string_value(source);
        e->source_len = json_string_length(source);
    }
    json_t *options = json_object_get(m, "options");
    if (options && !json_is_array(options))
        e->malformed = true;   /* ignored */
    size_t i;
    json_t *opt;
    json_array_foreach(options, i, opt) {
        if (!json_is_string(opt)) {
            e->malformed = true;
            continue;
        }
        const char *s = json_string_value(opt);
        size_t len = json_string_length(opt);
        const char *prop = propagation_name(s, len);
        if (len == 2 && memcmp(s, "ro", 2) == 0) {
            e->rdwr = false;
        } else if (len >= 5 && memcmp(s, "mode=", 5) == 0) {
            e->mode = s + 5;
            e->mode_len = len - 5;
        } else if (prop) {
            e->propagation = prop;
        }
    }
    return true;
}

/* The text Falco's container_mount_info::to_string gives
 * (plugins/container/src/container_info.h:42-46): source:dest:mode:rdwr:propagation,
 * the values escaped for it; its length. out has room for mount_text_room(m). */
static size_t mount_text_room(const struct container_mount *m)
{
    return escaped_len(m->source) + escaped_len(m->dest) + escaped_len(m->mode) + strlen(m->propagation) +
           sizeof(":::false:");
}

static size_t mount_text(char *out, const struct container_mount *m)
{
    size_t n = escape_into(out, m->source, strlen(m->source));
    out[n++] = ':';
    n += escape_into(out + n, m->dest, strlen(m->dest));
    out[n++] = ':';
    n += escape_into(out + n, m->mode, strlen(m->mode));
    n += (size_t)sprintf(out + n, ":%s:%s", m->rdwr ? "true" : "false", m->propagation);
    return n;
}

/* Keeps e as r's next mount, unless the texts would pass their limit. */
static bool keep_entry(struct record *r, struct container_mount *mounts, const struct mount_entry *e,
                       const char *rootfs_propagation, size_t *text_used)
{
    bool malformed = e->malformed;
    struct container_mount *m = &mounts[r->pub.nmounts];
    m->rdwr = e->rdwr;
    m->propagation = e->propagation ? e->propagation : rootfs_propagation;
    m->source = keep_value(r, e->source, e->source_len, &malformed);
    m->dest = keep_value(r, e->dest, e->dest_len, &malformed);
    m->mode = keep_value(r, e->mode, e->mode_len, &malformed);
    if (!m->source || !m->dest || !m->mode)
        return false;
    size_t room = mount_text_room(m);
    if (*text_used + room + 1 > CONTAINER_MOUNTS_TEXT_MAX)
        return false;   /* its values stay owned by r, unused */
    char *text = malloc(room);
    if (!text) {
        r->alloc_failed = true;
        return false;
    }
    text[mount_text(text, m)] = '\0';
    m->text = record_keep(r, text);
    if (!m->text)
        return false;
    *text_used += strlen(m->text) + 1;
    r->pub.nmounts++;
    if (malformed)
        r->pub.mounts_malformed++;
    return true;
}

/* container.mounts: the mounts' texts joined by ',' (extract.cpp:637-654). */
static void join_texts(struct record *r, size_t text_used)
{
    char *joined = malloc(text_used + 1);
    if (!joined) {
        r->alloc_failed = true;
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < r->pub.nmounts; i++) {
        if (i)
            joined[n++] = ',';
        size_t len = strlen(r->pub.mounts[i].text);
        memcpy(joined + n, r->pub.mounts[i].text, len);
        n += len;
    }
    joined[n] = '\0';
    r->pub.mounts_text = record_keep(r, joined);
}

void mounts_read(struct record *r, json_t *spec)
{
    json_t *list = json_object_get(spec, "mounts");
    const char *root_prop = NULL;
    json_t *linux_ = json_object_get(spec, "linux");
    json_t *rp = json_object_get(linux_, "rootfsPropagation");
    if (json_is_string(rp))
        root_prop = propagation_name(json_string_value(rp), json_string_length(rp));
    if (!root_prop)
        root_prop = "";
    if (list && !json_is_array(list))
        r->pub.mounts_malformed++;
    size_t total = json_array_size(list), want = total < CONTAINER_MOUNTS_MAX ? total : CONTAINER_MOUNTS_MAX;
    struct container_mount *mounts = want ? calloc(want, sizeof(*mounts)) : NULL;
    if (want && !mounts) {
        r->alloc_failed = true;
        return;
    }
    r->mounts = mounts;
    r->pub.mounts = mounts;
    size_t text_used = 0;
    for (size_t i = 0; i < total; i++) {
        struct mount_entry e;
        bool kept = r->pub.nmounts < want && read_entry(json_array_get(list, i), &e) &&
                    keep_entry(r, mounts, &e, root_prop, &text_used);
        if (!kept)
            r->pub.mounts_malformed++;
    }
    join_texts(r, text_used);
}

/* A copy of s owned by r, whatever its length (s is already as kept). */
static const char *copy_kept(struct record *r, const char *s)
{
    char *copy = strdup(s);
    if (!copy) {
        r->alloc_failed = true;
        return NULL;
    }
    return record_keep(r, copy);
}

void mounts_copy(struct record *r, const struct container_record *old)
{
    r->pub.mounts_malformed = old->mounts_malformed;
    r->pub.mounts_text = old->mounts_text ? copy_kept(r, old->mounts_text) : NULL;
    if (!old->nmounts)
        return;
    struct container_mount *mounts = calloc(old->nmounts, sizeof(*mounts));
    if (!mounts) {
        r->alloc_failed = true;
        return;
    }
    r->mounts = mounts;
    r->pub.mounts = mounts;
    r->pub.nmounts = old->nmounts;
    for (size_t i = 0; i < old->nmounts; i++) {
        const struct container_mount *o = &old->mounts[i];
        mounts[i].source = copy_kept(r, o->source);
        mounts[i].dest = copy_kept(r, o->dest);
        mounts[i].mode = copy_kept(r, o->mode);
        mounts[i].text = copy_kept(r, o->text);
        mounts[i].propagation = o->propagation;   /* a fixed string */
        mounts[i].rdwr = o->rdwr;
    }
}
