/* fields_k8smeta.c - Falco's k8smeta plugin (falcosecurity/plugins
 * 0b3cbd8d8 plugins/k8smeta/src/plugin.cpp:420-560): the pod and namespace
 * a container runs in, as the Kubernetes API server knows them. The names
 * and the pod's uid are what the CRI annotations in runsc's state file give
 * (k8s.pod.name, k8s.ns.name, k8s.pod.uid: fields_container.c); the rest
 * (labels, IPs, uids of namespaces, deployments, services, replica sets
 * and controllers) only the API server has: FIELD_NEVER, a rule needing
 * one is loaded disabled with the warning.
 */
#include "container.h"
#include "fields_class.h"

enum {
    F_K8SMETA_POD_NAME = FIELD_BASE_K8SMETA, F_K8SMETA_POD_UID, F_K8SMETA_NS_NAME, F_K8SMETA_POD_LABEL,
    F_K8SMETA_POD_LABELS, F_K8SMETA_POD_IP, F_K8SMETA_NS_UID, F_K8SMETA_NS_LABEL, F_K8SMETA_NS_LABELS,
    F_K8SMETA_DEPLOYMENT_NAME, F_K8SMETA_DEPLOYMENT_UID, F_K8SMETA_DEPLOYMENT_LABEL, F_K8SMETA_DEPLOYMENT_LABELS,
    F_K8SMETA_SVC_NAME, F_K8SMETA_SVC_UID, F_K8SMETA_SVC_LABEL, F_K8SMETA_SVC_LABELS, F_K8SMETA_RS_NAME,
    F_K8SMETA_RS_UID, F_K8SMETA_RS_LABEL, F_K8SMETA_RS_LABELS, F_K8SMETA_RC_NAME, F_K8SMETA_RC_UID,
    F_K8SMETA_RC_LABEL, F_K8SMETA_RC_LABELS,
};

static void k8smeta_extract(struct evctx *x, const struct fieldref *f, struct fval *v, struct strbuf *buf)
{
    (void)buf;
    const struct container_record *r = fields_container_record(x);
    if (!r)
        return;
    switch (f->id) {
    case F_K8SMETA_POD_NAME: fv_cstr(v, r->pod_name); return;
    case F_K8SMETA_POD_UID: fv_cstr(v, r->pod_uid); return;
    case F_K8SMETA_NS_NAME: fv_cstr(v, r->pod_namespace); return;
    default: return;
    }
}

#define NEVER(name, arg, id) {name, FT_STR, arg, id, 0, 0, 0, FIELD_NEVER}
static const struct field_def k8smeta_defs[] = {
    {"k8smeta.pod.name", FT_STR, FA_NONE, F_K8SMETA_POD_NAME, RULES_CTX_CONTAINER_ID, 0, 0, FIELD_REPORTED},
    {"k8smeta.pod.uid", FT_STR, FA_NONE, F_K8SMETA_POD_UID, RULES_CTX_CONTAINER_ID, 0, 0, FIELD_REPORTED},
    {"k8smeta.ns.name", FT_STR, FA_NONE, F_K8SMETA_NS_NAME, RULES_CTX_CONTAINER_ID, 0, 0, FIELD_REPORTED},
    NEVER("k8smeta.pod.label", FA_KEY_REQUIRED, F_K8SMETA_POD_LABEL),
    NEVER("k8smeta.pod.labels", FA_NONE, F_K8SMETA_POD_LABELS),
    NEVER("k8smeta.pod.ip", FA_NONE, F_K8SMETA_POD_IP),
    NEVER("k8smeta.ns.uid", FA_NONE, F_K8SMETA_NS_UID),
    NEVER("k8smeta.ns.label", FA_KEY_REQUIRED, F_K8SMETA_NS_LABEL),
    NEVER("k8smeta.ns.labels", FA_NONE, F_K8SMETA_NS_LABELS),
    NEVER("k8smeta.deployment.name", FA_NONE, F_K8SMETA_DEPLOYMENT_NAME),
    NEVER("k8smeta.deployment.uid", FA_NONE, F_K8SMETA_DEPLOYMENT_UID),
    NEVER("k8smeta.deployment.label", FA_KEY_REQUIRED, F_K8SMETA_DEPLOYMENT_LABEL),
    NEVER("k8smeta.deployment.labels", FA_NONE, F_K8SMETA_DEPLOYMENT_LABELS),
    NEVER("k8smeta.svc.name", FA_NONE, F_K8SMETA_SVC_NAME),
    NEVER("k8smeta.svc.uid", FA_NONE, F_K8SMETA_SVC_UID),
    NEVER("k8smeta.svc.label", FA_KEY_REQUIRED, F_K8SMETA_SVC_LABEL),
    NEVER("k8smeta.svc.labels", FA_NONE, F_K8SMETA_SVC_LABELS),
    NEVER("k8smeta.rs.name", FA_NONE, F_K8SMETA_RS_NAME),
    NEVER("k8smeta.rs.uid", FA_NONE, F_K8SMETA_RS_UID),
    NEVER("k8smeta.rs.label", FA_KEY_REQUIRED, F_K8SMETA_RS_LABEL),
    NEVER("k8smeta.rs.labels", FA_NONE, F_K8SMETA_RS_LABELS),
    NEVER("k8smeta.rc.name", FA_NONE, F_K8SMETA_RC_NAME),
    NEVER("k8smeta.rc.uid", FA_NONE, F_K8SMETA_RC_UID),
    NEVER("k8smeta.rc.label", FA_KEY_REQUIRED, F_K8SMETA_RC_LABEL),
    NEVER("k8smeta.rc.labels", FA_NONE, F_K8SMETA_RC_LABELS),
};

const struct field_class fields_k8smeta_class = {
    "k8smeta", k8smeta_defs, sizeof(k8smeta_defs) / sizeof(k8smeta_defs[0]), k8smeta_extract,
};
