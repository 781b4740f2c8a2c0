/* fields_container.c - container.* and k8s.*: the container an event comes
 * from. The id is the event's; the rest comes from runsc's state file of
 * that container (container/container.h), through the engine's view, with
 * the names and types of Falco's container plugin
 * (falcosecurity/plugins plugins/container/src/caps/extract/extract.cpp):
 * absent while the container is not known.
 *
 * The mounts are the spec's (container/mounts.c says what each value is
 * and what gVisor cannot tell) with the plugin's semantics (extract.cpp:
 * 637-710) and libs' older filtercheck's, which the plugin follows
 * (falcosecurity/libs 9ab23531a0 userspace/libsinsp/
 * sinsp_filtercheck_container.cpp:550-648): container.mounts joins every
 * mount's "source:dest:mode:rdwr:propagation" with ',' (the field
 * descriptions say space-separated; the code joins with ','), "" for a
 * container without mounts; container.mount[N] and container.mount.*[N]
 * are the N-th mount's; container.mount[PATH] and container.mount.*[PATH]
 * the first mount whose source matches the glob PATH (fnmatch, libs
 * container_info.cpp:106-127 and utils.cpp:779-787), but
 * container.mount.source[PATH], which matches the destination. No such
 * mount: absent (the description of container.mount says "none"; neither
 * implementation returns it). The plugin now matches PATH as a regular
 * expression anywhere in the path (plugins/container/src/
 * container_info.cpp:34-66), which its own field descriptions, and the
 * upstream rules' globs (container.mount.dest[/proc*]), do not mean: the
 * glob is kept.
 *
 * A Docker container's name, image, image id and labels are Docker's
 * (container/docker.c), as the plugin takes them from Docker's API:
 * container.label[KEY] one label, container.labels all of them ("k:v, k2",
 * extract.cpp's concatenate_container_labels), container.image.id the hex
 * of Docker's image id (go-worker/pkg/container/docker.go). */
#include <fnmatch.h>

#include "container.h"
#include "fields_class.h"
#include "gvisor/container.pb-c.h"

enum {
    F_CONTAINER_ID = FIELD_BASE_CONTAINER,
    F_CONTAINER_FULL_ID, F_CONTAINER_NAME, F_CONTAINER_IMAGE, F_CONTAINER_IMAGE_REPOSITORY, F_CONTAINER_IMAGE_TAG,
    F_CONTAINER_TYPE, F_CONTAINER_PRIVILEGED, F_CONTAINER_START_TS, F_CONTAINER_DURATION,
    F_K8S_POD_NAME, F_K8S_NS_NAME, F_K8S_POD_ID, F_K8S_POD_UID, F_K8S_POD_SANDBOX_ID, F_K8S_POD_FULL_SANDBOX_ID,
    F_CONTAINER_MOUNTS, F_CONTAINER_MOUNT, F_CONTAINER_MOUNT_SOURCE, F_CONTAINER_MOUNT_DEST, F_CONTAINER_MOUNT_MODE,
    F_CONTAINER_MOUNT_RDWR, F_CONTAINER_MOUNT_PROPAGATION,
    F_CONTAINER_IMAGE_ID, F_CONTAINER_LABEL, F_CONTAINER_LABELS,
};

#define SHORT_ID_LEN 12   /* Falco's short container and sandbox ids */

static bool is_hex64(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return false;
    return n == 64;
}

static const char *event_container_id(const struct evctx *x)
{
    const char *id = x->ev->header.message_type == 1 ? ((const Gvisor__Container__Start *)x->ev->msg)->id : NULL;
    if (!id || !id[0])
        id = x->ev->context ? x->ev->context->container_id : NULL;
    return id && id[0] ? id : NULL;
}

const struct container_record *fields_container_record(struct evctx *x)
{
    if (!x->have_container) {
        x->have_container = true;
        const char *id = event_container_id(x);
        const struct container_record *r = id ? container_view_get(x->containers, x->ev->conn_id, id) : NULL;
        x->container = r && r->state == CONTAINER_FOUND ? r : NULL;
    }
    return x->container;
}

/* The mount f names: by index, else the first whose source (destination
 * for container.mount.source) matches f's glob. */
static const struct container_mount *mount_of(const struct container_record *r, const struct fieldref *f)
{
    if (f->index >= 0)
        return (size_t)f->index < r->nmounts ? &r->mounts[f->index] : NULL;
    if (!f->argname)
        return NULL;
    for (size_t i = 0; i < r->nmounts; i++) {
        const struct container_mount *m = &r->mounts[i];
        if (fnmatch(f->argname, f->id == F_CONTAINER_MOUNT_SOURCE ? m->dest : m->source, 0) == 0)
            return m;
    }
    return NULL;
}

/* A value of the mount; "" stays a value (the plugin sets it: a mount without a mode). */
static void mount_extract(const struct container_record *r, const struct fieldref *f, struct fval *v)
{
    if (f->id == F_CONTAINER_MOUNTS) {
        if (r->mounts_text)
            fv_str(v, r->mounts_text, strlen(r->mounts_text));
        return;
    }
    const struct container_mount *m = mount_of(r, f);
    if (!m)
        return;
    const char *s = NULL;
    switch (f->id) {
    case F_CONTAINER_MOUNT: s = m->text; break;
    case F_CONTAINER_MOUNT_SOURCE: s = m->source; break;
    case F_CONTAINER_MOUNT_DEST: s = m->dest; break;
    case F_CONTAINER_MOUNT_MODE: s = m->mode; break;
    case F_CONTAINER_MOUNT_RDWR: s = m->rdwr ? "true" : "false"; break;   /* a string, as Falco's */
    case F_CONTAINER_MOUNT_PROPAGATION: s = m->propagation; break;
    default: return;
    }
    fv_str(v, s, strlen(s));
}

void fields_container_id(const struct evctx *x, struct fval *v)
{
    const char *id = event_container_id(x);
    if (id)
        fv_str(v, id, is_hex64(id) ? SHORT_ID_LEN : strlen(id));
}

static void container_extract(struct evctx *x, const struct fieldref *f, struct fval *v, struct strbuf *buf)
{
    (void)buf;
    const char *id = event_container_id(x);
    if (!id)
        return;
    switch (f->id) {
    case F_CONTAINER_ID: fields_container_id(x, v); return;
    case F_CONTAINER_FULL_ID: fv_cstr(v, id); return;
    case F_CONTAINER_TYPE: fv_cstr(v, "gvisor"); return;
    default: break;
    }
    const struct container_record *r = fields_container_record(x);
    if (!r)
        return;
    switch (f->id) {
    case F_CONTAINER_NAME: fv_cstr(v, r->name); return;
    case F_CONTAINER_IMAGE: fv_cstr(v, r->image); return;
    case F_CONTAINER_IMAGE_REPOSITORY: fv_cstr(v, r->image_repository); return;
    case F_CONTAINER_IMAGE_TAG: fv_cstr(v, r->image_tag); return;
    case F_CONTAINER_IMAGE_ID: fv_cstr(v, r->image_id); return;
    case F_CONTAINER_LABEL: fv_cstr(v, f->argname ? container_label(r, f->argname) : NULL); return;
    case F_CONTAINER_LABELS: fv_cstr(v, r->labels_text); return;
    case F_CONTAINER_PRIVILEGED: fv_bool(v, r->privileged); return;
    case F_CONTAINER_START_TS:
        if (r->created_ns > 0)
            fv_uint(v, (uint64_t)r->created_ns);
        return;
    case F_CONTAINER_DURATION:
        if (r->created_ns > 0 && x->time_ns >= r->created_ns)
            fv_uint(v, (uint64_t)(x->time_ns - r->created_ns));
        return;
    case F_K8S_POD_NAME: fv_cstr(v, r->pod_name); return;
    case F_K8S_NS_NAME: fv_cstr(v, r->pod_namespace); return;
    case F_K8S_POD_ID:   /* the legacy name of the pod's uid */
    case F_K8S_POD_UID: fv_cstr(v, r->pod_uid); return;
    case F_K8S_POD_SANDBOX_ID:
        if (r->pod_name && r->sandbox_id)
            fv_str(v, r->sandbox_id, strlen(r->sandbox_id) > SHORT_ID_LEN ? SHORT_ID_LEN : strlen(r->sandbox_id));
        return;
    case F_K8S_POD_FULL_SANDBOX_ID:
        if (r->pod_name)
            fv_cstr(v, r->sandbox_id);
        return;
    default: mount_extract(r, f, v); return;
    }
}

#define C RULES_CTX_CONTAINER_ID
static const struct field_def container_defs[] = {
    {"container.id", FT_STR, FA_NONE, F_CONTAINER_ID, C, 0, 0, FIELD_REPORTED},
    {"container.full_id", FT_STR, FA_NONE, F_CONTAINER_FULL_ID, C, 0, 0, FIELD_REPORTED},
    {"container.name", FT_STR, FA_NONE, F_CONTAINER_NAME, C, 0, 0, FIELD_REPORTED},
    {"container.image", FT_STR, FA_NONE, F_CONTAINER_IMAGE, C, 0, 0, FIELD_REPORTED},
    {"container.image.repository", FT_STR, FA_NONE, F_CONTAINER_IMAGE_REPOSITORY, C, 0, 0, FIELD_REPORTED},
    {"container.image.tag", FT_STR, FA_NONE, F_CONTAINER_IMAGE_TAG, C, 0, 0, FIELD_REPORTED},
    {"container.type", FT_STR, FA_NONE, F_CONTAINER_TYPE, C, 0, 0, FIELD_REPORTED},
    {"container.privileged", FT_BOOL, FA_NONE, F_CONTAINER_PRIVILEGED, C, 0, 0, FIELD_REPORTED},
    {"container.start_ts", FT_UINT, FA_NONE, F_CONTAINER_START_TS, C, 0, 0, FIELD_REPORTED},
    {"container.duration", FT_UINT, FA_NONE, F_CONTAINER_DURATION, C, 0, 0, FIELD_REPORTED},
    {"k8s.pod.name", FT_STR, FA_NONE, F_K8S_POD_NAME, C, 0, 0, FIELD_REPORTED},
    {"k8s.ns.name", FT_STR, FA_NONE, F_K8S_NS_NAME, C, 0, 0, FIELD_REPORTED},
    {"k8s.pod.id", FT_STR, FA_NONE, F_K8S_POD_ID, C, 0, 0, FIELD_REPORTED},
    {"k8s.pod.uid", FT_STR, FA_NONE, F_K8S_POD_UID, C, 0, 0, FIELD_REPORTED},
    {"k8s.pod.sandbox_id", FT_STR, FA_NONE, F_K8S_POD_SANDBOX_ID, C, 0, 0, FIELD_REPORTED},
    {"k8s.pod.full_sandbox_id", FT_STR, FA_NONE, F_K8S_POD_FULL_SANDBOX_ID, C, 0, 0, FIELD_REPORTED},
    {"container.mounts", FT_STR, FA_NONE, F_CONTAINER_MOUNTS, C, 0, 0, FIELD_REPORTED},
    {"container.mount", FT_STR, FA_MOUNT, F_CONTAINER_MOUNT, C, 0, 0, FIELD_REPORTED},
    {"container.mount.source", FT_STR, FA_MOUNT, F_CONTAINER_MOUNT_SOURCE, C, 0, 0, FIELD_REPORTED},
    {"container.mount.dest", FT_STR, FA_MOUNT, F_CONTAINER_MOUNT_DEST, C, 0, 0, FIELD_REPORTED},
    {"container.mount.mode", FT_STR, FA_MOUNT, F_CONTAINER_MOUNT_MODE, C, 0, 0, FIELD_REPORTED},
    {"container.mount.rdwr", FT_STR, FA_MOUNT, F_CONTAINER_MOUNT_RDWR, C, 0, 0, FIELD_REPORTED},
    {"container.mount.propagation", FT_STR, FA_MOUNT, F_CONTAINER_MOUNT_PROPAGATION, C, 0, 0, FIELD_REPORTED},
    {"container.image.id", FT_STR, FA_NONE, F_CONTAINER_IMAGE_ID, C, 0, 0, FIELD_REPORTED},
    {"container.label", FT_STR, FA_KEY_REQUIRED, F_CONTAINER_LABEL, C, 0, 0, FIELD_REPORTED},
    {"container.labels", FT_STR, FA_NONE, F_CONTAINER_LABELS, C, 0, 0, FIELD_REPORTED},
};
#undef C

const struct field_class fields_container_class = {
    "container", container_defs, sizeof(container_defs) / sizeof(container_defs[0]), container_extract,
};
