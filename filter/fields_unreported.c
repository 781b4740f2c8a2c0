/* fields_unreported.c - the fields of Falco's libs (falcosecurity/libs
 * 48dfd53cd userspace/libsinsp/sinsp_filtercheck_*.cpp) and of its container
 * plugin (falcosecurity/plugins 0b3cbd8d8 plugins/container/src/caps/
 * extract/extract.cpp) that no other class here has: known to the loader,
 * so a Falco rules file that names one loads, and never given a value.
 *
 * Two kinds, and they load differently:
 *  - FIELD_NEVER: Falco has a value, gVisor and the node have no source for
 *    it (a syscall's latency or CPU, a process's memory and descriptor
 *    counts, cgroups, a device number, a poll's fd list, a container's IP
 *    addresses and a pod's labels, which runsc's state does not hold). A rule whose
 *    condition needs one is loaded disabled, with the warning every such
 *    field gets (--rules-absent-fields run runs it).
 *  - FIELD_REPORTED but always absent: Falco's container plugin extracts
 *    nothing for them either (its deprecated container.healthcheck, the
 *    probes, k8s.deployment.* and the other k8s API fields:
 *    extract.cpp:720-723, 893-917). A rule reading them runs exactly as in
 *    Falco, its comparisons on them false.
 */
#include "fields_class.h"

enum {
    /* libs' event class */
    F_EVT_LATENCY = FIELD_BASE_UNREPORTED, F_EVT_LATENCY_S, F_EVT_LATENCY_NS, F_EVT_LATENCY_QUANTIZED,
    F_EVT_LATENCY_HUMAN, F_EVT_DELTATIME, F_EVT_DELTATIME_S, F_EVT_DELTATIME_NS, F_EVT_CATEGORY, F_EVT_CPU,
    F_EVT_BUFLEN, F_EVT_IS_WAIT, F_EVT_WAIT_LATENCY, F_EVT_IS_SYSLOG, F_EVT_COUNT_FIELD, F_EVT_COUNT_ERROR,
    F_EVT_COUNT_ERROR_FILE, F_EVT_COUNT_ERROR_NET, F_EVT_COUNT_ERROR_MEMORY, F_EVT_COUNT_ERROR_OTHER,
    F_EVT_COUNT_EXIT, F_EVT_COUNT_PROCINFO, F_EVT_COUNT_THREADINFO, F_EVT_AROUND, F_EVT_ABSPATH, F_EVT_BUFLEN_IN,
    F_EVT_BUFLEN_OUT, F_EVT_BUFLEN_FILE, F_EVT_BUFLEN_FILE_IN, F_EVT_BUFLEN_FILE_OUT, F_EVT_BUFLEN_NET,
    F_EVT_BUFLEN_NET_IN, F_EVT_BUFLEN_NET_OUT, F_EVT_INFRA_NAME, F_EVT_INFRA_CONTAINER_ID,
    F_EVT_INFRA_CONTAINER_NAME, F_EVT_INFRA_CONTAINER_IMAGE, F_EVT_IS_OPEN_CREATE,
    /* libs' thread class */
    F_PROC_EXE_INO_CTIME_PIDNS, F_PROC_PIDNS_INIT_START_TS, F_PROC_FDOPENCOUNT, F_PROC_FDLIMIT, F_PROC_FDUSAGE,
    F_PROC_VMSIZE, F_PROC_VMRSS, F_PROC_VMSWAP, F_THREAD_PFMAJOR, F_THREAD_PFMINOR, F_THREAD_NAMETID,
    F_THREAD_EXECTIME, F_THREAD_TOTEXECTIME, F_THREAD_CGROUPS, F_THREAD_CGROUP, F_PROC_NTHREADS, F_PROC_NCHILDS,
    F_THREAD_CPU, F_THREAD_CPU_USER, F_THREAD_CPU_SYSTEM, F_THREAD_VMSIZE, F_THREAD_VMRSS, F_THREAD_VMSIZE_B,
    F_THREAD_VMRSS_B,
    /* libs' fd, fdlist and fspath classes, utils */
    F_FD_IS_SERVER, F_FD_PROTO, F_FD_CPROTO, F_FD_SPROTO, F_FD_LPROTO, F_FD_RPROTO, F_FD_DEV, F_FD_DEV_MAJOR,
    F_FD_DEV_MINOR, F_FD_TYPES, F_FDLIST_NUMS, F_FDLIST_NAMES, F_FDLIST_CIPS, F_FDLIST_SIPS, F_FDLIST_CPORTS,
    F_FDLIST_SPORTS, F_FS_PATH_NAME, F_FS_PATH_NAMERAW, F_FS_PATH_SOURCE, F_FS_PATH_SOURCERAW, F_FS_PATH_TARGET,
    F_FS_PATH_TARGETRAW, F_UTIL_CNT,
    /* the container plugin */
    F_CONTAINER_IMAGE_DIGEST, F_CONTAINER_IP, F_CONTAINER_CNI_JSON, F_CONTAINER_HOST_PID,
    F_CONTAINER_HOST_NETWORK, F_CONTAINER_HOST_IPC, F_K8S_POD_LABEL,
    F_K8S_POD_LABELS, F_K8S_POD_IP, F_K8S_POD_CNI_JSON,
    /* the container plugin's deprecated fields: empty in Falco too */
    F_CONTAINER_HEALTHCHECK, F_CONTAINER_LIVENESS_PROBE, F_CONTAINER_READINESS_PROBE, F_PROC_IS_HEALTHCHECK,
    F_PROC_IS_LIVENESS_PROBE, F_PROC_IS_READINESS_PROBE, F_K8S_RC_NAME, F_K8S_RC_ID, F_K8S_RC_LABEL, F_K8S_RC_LABELS,
    F_K8S_SVC_NAME, F_K8S_SVC_ID, F_K8S_SVC_LABEL, F_K8S_SVC_LABELS, F_K8S_NS_ID, F_K8S_NS_LABEL, F_K8S_NS_LABELS,
    F_K8S_RS_NAME, F_K8S_RS_ID, F_K8S_RS_LABEL, F_K8S_RS_LABELS, F_K8S_DEPLOYMENT_NAME, F_K8S_DEPLOYMENT_ID,
    F_K8S_DEPLOYMENT_LABEL, F_K8S_DEPLOYMENT_LABELS,
};

static void unreported_extract(struct evctx *x, const struct fieldref *f, struct fval *v, struct strbuf *buf)
{
    (void)x;
    (void)f;
    (void)buf;
    v->kind = FV_ABSENT;
}

#define NEVER(name, type, arg, id) {name, type, arg, id, 0, 0, 0, FIELD_NEVER}
#define EMPTY(name, type, arg, id) {name, type, arg, id, 0, 0, 0, FIELD_REPORTED}
/* libs' PT_DOUBLE fields: compared as text here (there is no decimal type) */
#define DOUBLE FT_STR

static const struct field_def unreported_defs[] = {
    /* gVisor's points carry no syscall duration, CPU or wait state */
    NEVER("evt.latency", FT_UINT, FA_NONE, F_EVT_LATENCY),
    NEVER("evt.latency.s", FT_UINT, FA_NONE, F_EVT_LATENCY_S),
    NEVER("evt.latency.ns", FT_UINT, FA_NONE, F_EVT_LATENCY_NS),
    NEVER("evt.latency.quantized", FT_UINT, FA_NONE, F_EVT_LATENCY_QUANTIZED),
    NEVER("evt.latency.human", FT_STR, FA_NONE, F_EVT_LATENCY_HUMAN),
    NEVER("evt.wait_latency", FT_UINT, FA_NONE, F_EVT_WAIT_LATENCY),
    NEVER("evt.is_wait", FT_BOOL, FA_NONE, F_EVT_IS_WAIT),
    NEVER("evt.cpu", FT_INT, FA_NONE, F_EVT_CPU),
    /* the time since the previous event of the capture: no capture here */
    NEVER("evt.deltatime", FT_UINT, FA_NONE, F_EVT_DELTATIME),
    NEVER("evt.deltatime.s", FT_UINT, FA_NONE, F_EVT_DELTATIME_S),
    NEVER("evt.deltatime.ns", FT_UINT, FA_NONE, F_EVT_DELTATIME_NS),
    /* libs' per-event table of categories and flags is not carried here */
    NEVER("evt.category", FT_STR, FA_NONE, F_EVT_CATEGORY),
    NEVER("evt.is_syslog", FT_BOOL, FA_NONE, F_EVT_IS_SYSLOG),
    /* runsc sends no read or write data (evt.buffer), nor its length */
    NEVER("evt.buflen", FT_UINT, FA_NONE, F_EVT_BUFLEN),
    NEVER("evt.buflen.in", FT_UINT, FA_NONE, F_EVT_BUFLEN_IN),
    NEVER("evt.buflen.out", FT_UINT, FA_NONE, F_EVT_BUFLEN_OUT),
    NEVER("evt.buflen.file", FT_UINT, FA_NONE, F_EVT_BUFLEN_FILE),
    NEVER("evt.buflen.file.in", FT_UINT, FA_NONE, F_EVT_BUFLEN_FILE_IN),
    NEVER("evt.buflen.file.out", FT_UINT, FA_NONE, F_EVT_BUFLEN_FILE_OUT),
    NEVER("evt.buflen.net", FT_UINT, FA_NONE, F_EVT_BUFLEN_NET),
    NEVER("evt.buflen.net.in", FT_UINT, FA_NONE, F_EVT_BUFLEN_NET_IN),
    NEVER("evt.buflen.net.out", FT_UINT, FA_NONE, F_EVT_BUFLEN_NET_OUT),
    /* chisels' table counters and capture windows */
    NEVER("evt.count", FT_UINT, FA_NONE, F_EVT_COUNT_FIELD),
    NEVER("evt.count.error", FT_UINT, FA_NONE, F_EVT_COUNT_ERROR),
    NEVER("evt.count.error.file", FT_UINT, FA_NONE, F_EVT_COUNT_ERROR_FILE),
    NEVER("evt.count.error.net", FT_UINT, FA_NONE, F_EVT_COUNT_ERROR_NET),
    NEVER("evt.count.error.memory", FT_UINT, FA_NONE, F_EVT_COUNT_ERROR_MEMORY),
    NEVER("evt.count.error.other", FT_UINT, FA_NONE, F_EVT_COUNT_ERROR_OTHER),
    NEVER("evt.count.exit", FT_UINT, FA_NONE, F_EVT_COUNT_EXIT),
    NEVER("evt.count.procinfo", FT_UINT, FA_NONE, F_EVT_COUNT_PROCINFO),
    NEVER("evt.count.threadinfo", FT_UINT, FA_NONE, F_EVT_COUNT_THREADINFO),
    NEVER("evt.around", FT_UINT, FA_KEY, F_EVT_AROUND),
    /* the paths of renameat, symlinkat...: raw points on runsc, pointers */
    NEVER("evt.abspath", FT_STR, FA_KEY, F_EVT_ABSPATH),
    /* whether an open created the file: gVisor does not say */
    NEVER("evt.is_open_create", FT_BOOL, FA_NONE, F_EVT_IS_OPEN_CREATE),
    /* Docker's own events (libs' infrastructure events): not a syscall's */
    EMPTY("evt.infra.docker.name", FT_STR, FA_NONE, F_EVT_INFRA_NAME),
    EMPTY("evt.infra.docker.container.id", FT_STR, FA_NONE, F_EVT_INFRA_CONTAINER_ID),
    EMPTY("evt.infra.docker.container.name", FT_STR, FA_NONE, F_EVT_INFRA_CONTAINER_NAME),
    EMPTY("evt.infra.docker.container.image", FT_STR, FA_NONE, F_EVT_INFRA_CONTAINER_IMAGE),

    /* the host's view of a process: pid namespaces, descriptors, memory,
     * page faults, CPU time, cgroups, thread counts */
    NEVER("proc.exe_ino.ctime_duration_pidns_start", FT_INT, FA_NONE, F_PROC_EXE_INO_CTIME_PIDNS),
    NEVER("proc.pidns_init_start_ts", FT_UINT, FA_NONE, F_PROC_PIDNS_INIT_START_TS),
    NEVER("proc.fdopencount", FT_UINT, FA_NONE, F_PROC_FDOPENCOUNT),
    NEVER("proc.fdlimit", FT_INT, FA_NONE, F_PROC_FDLIMIT),
    NEVER("proc.fdusage", DOUBLE, FA_NONE, F_PROC_FDUSAGE),
    NEVER("proc.vmsize", FT_UINT, FA_NONE, F_PROC_VMSIZE),
    NEVER("proc.vmrss", FT_UINT, FA_NONE, F_PROC_VMRSS),
    NEVER("proc.vmswap", FT_UINT, FA_NONE, F_PROC_VMSWAP),
    NEVER("thread.pfmajor", FT_UINT, FA_NONE, F_THREAD_PFMAJOR),
    NEVER("thread.pfminor", FT_UINT, FA_NONE, F_THREAD_PFMINOR),
    NEVER("thread.nametid", FT_STR, FA_NONE, F_THREAD_NAMETID),
    NEVER("thread.exectime", FT_UINT, FA_NONE, F_THREAD_EXECTIME),
    NEVER("thread.totexectime", FT_UINT, FA_NONE, F_THREAD_TOTEXECTIME),
    NEVER("thread.cgroups", FT_STR, FA_NONE, F_THREAD_CGROUPS),
    NEVER("thread.cgroup", FT_STR, FA_KEY, F_THREAD_CGROUP),
    NEVER("proc.nthreads", FT_UINT, FA_NONE, F_PROC_NTHREADS),
    NEVER("proc.nchilds", FT_UINT, FA_NONE, F_PROC_NCHILDS),
    NEVER("thread.cpu", DOUBLE, FA_NONE, F_THREAD_CPU),
    NEVER("thread.cpu.user", DOUBLE, FA_NONE, F_THREAD_CPU_USER),
    NEVER("thread.cpu.system", DOUBLE, FA_NONE, F_THREAD_CPU_SYSTEM),
    NEVER("thread.vmsize", FT_UINT, FA_NONE, F_THREAD_VMSIZE),
    NEVER("thread.vmrss", FT_UINT, FA_NONE, F_THREAD_VMRSS),
    NEVER("thread.vmsize.b", FT_UINT, FA_NONE, F_THREAD_VMSIZE_B),
    NEVER("thread.vmrss.b", FT_UINT, FA_NONE, F_THREAD_VMRSS_B),

    /* gVisor keeps no descriptor table for us: a process's other fds, a
     * file's device, whether a socket is a server of this machine's, the
     * services of /etc/services by port */
    NEVER("fd.is_server", FT_BOOL, FA_NONE, F_FD_IS_SERVER),
    NEVER("fd.proto", FT_STR, FA_NONE, F_FD_PROTO),
    NEVER("fd.cproto", FT_STR, FA_NONE, F_FD_CPROTO),
    NEVER("fd.sproto", FT_STR, FA_NONE, F_FD_SPROTO),
    NEVER("fd.lproto", FT_STR, FA_NONE, F_FD_LPROTO),
    NEVER("fd.rproto", FT_STR, FA_NONE, F_FD_RPROTO),
    NEVER("fd.dev", FT_INT, FA_NONE, F_FD_DEV),
    NEVER("fd.dev.major", FT_INT, FA_NONE, F_FD_DEV_MAJOR),
    NEVER("fd.dev.minor", FT_INT, FA_NONE, F_FD_DEV_MINOR),
    NEVER("fd.types", FT_STR, FA_KEY, F_FD_TYPES),
    /* poll and select: runsc has no such points */
    NEVER("fdlist.nums", FT_STR, FA_NONE, F_FDLIST_NUMS),
    NEVER("fdlist.names", FT_STR, FA_NONE, F_FDLIST_NAMES),
    NEVER("fdlist.cips", FT_STR, FA_NONE, F_FDLIST_CIPS),
    NEVER("fdlist.sips", FT_STR, FA_NONE, F_FDLIST_SIPS),
    NEVER("fdlist.cports", FT_STR, FA_NONE, F_FDLIST_CPORTS),
    NEVER("fdlist.sports", FT_STR, FA_NONE, F_FDLIST_SPORTS),
    /* mkdir, unlink, rename, link...: raw points on runsc, their paths pointers */
    NEVER("fs.path.name", FT_STR, FA_NONE, F_FS_PATH_NAME),
    NEVER("fs.path.nameraw", FT_STR, FA_NONE, F_FS_PATH_NAMERAW),
    NEVER("fs.path.source", FT_STR, FA_NONE, F_FS_PATH_SOURCE),
    NEVER("fs.path.sourceraw", FT_STR, FA_NONE, F_FS_PATH_SOURCERAW),
    NEVER("fs.path.target", FT_STR, FA_NONE, F_FS_PATH_TARGET),
    NEVER("fs.path.targetraw", FT_STR, FA_NONE, F_FS_PATH_TARGETRAW),
    NEVER("util.cnt", FT_UINT, FA_NONE, F_UTIL_CNT),

    /* the container plugin asks the runtime (CRI, Docker) for these;
     * runsc's state file does not hold them (Docker's labels and image id
     * are fields_container.c's: its API gives them) */
    NEVER("container.image.digest", FT_STR, FA_NONE, F_CONTAINER_IMAGE_DIGEST),
    NEVER("container.ip", FT_STR, FA_NONE, F_CONTAINER_IP),
    NEVER("container.cni.json", FT_STR, FA_NONE, F_CONTAINER_CNI_JSON),
    NEVER("container.host_pid", FT_BOOL, FA_NONE, F_CONTAINER_HOST_PID),
    NEVER("container.host_network", FT_BOOL, FA_NONE, F_CONTAINER_HOST_NETWORK),
    NEVER("container.host_ipc", FT_BOOL, FA_NONE, F_CONTAINER_HOST_IPC),
    NEVER("k8s.pod.label", FT_STR, FA_KEY_REQUIRED, F_K8S_POD_LABEL),
    NEVER("k8s.pod.labels", FT_STR, FA_NONE, F_K8S_POD_LABELS),
    NEVER("k8s.pod.ip", FT_STR, FA_NONE, F_K8S_POD_IP),
    NEVER("k8s.pod.cni.json", FT_STR, FA_NONE, F_K8S_POD_CNI_JSON),

    /* deprecated in the plugin, which extracts nothing for them */
    EMPTY("container.healthcheck", FT_STR, FA_NONE, F_CONTAINER_HEALTHCHECK),
    EMPTY("container.liveness_probe", FT_STR, FA_NONE, F_CONTAINER_LIVENESS_PROBE),
    EMPTY("container.readiness_probe", FT_STR, FA_NONE, F_CONTAINER_READINESS_PROBE),
    EMPTY("proc.is_container_healthcheck", FT_BOOL, FA_NONE, F_PROC_IS_HEALTHCHECK),
    EMPTY("proc.is_container_liveness_probe", FT_BOOL, FA_NONE, F_PROC_IS_LIVENESS_PROBE),
    EMPTY("proc.is_container_readiness_probe", FT_BOOL, FA_NONE, F_PROC_IS_READINESS_PROBE),
    EMPTY("k8s.rc.name", FT_STR, FA_NONE, F_K8S_RC_NAME),
    EMPTY("k8s.rc.id", FT_STR, FA_NONE, F_K8S_RC_ID),
    EMPTY("k8s.rc.label", FT_STR, FA_KEY_REQUIRED, F_K8S_RC_LABEL),
    EMPTY("k8s.rc.labels", FT_STR, FA_NONE, F_K8S_RC_LABELS),
    EMPTY("k8s.svc.name", FT_STR, FA_NONE, F_K8S_SVC_NAME),
    EMPTY("k8s.svc.id", FT_STR, FA_NONE, F_K8S_SVC_ID),
    EMPTY("k8s.svc.label", FT_STR, FA_KEY_REQUIRED, F_K8S_SVC_LABEL),
    EMPTY("k8s.svc.labels", FT_STR, FA_NONE, F_K8S_SVC_LABELS),
    EMPTY("k8s.ns.id", FT_STR, FA_NONE, F_K8S_NS_ID),
    EMPTY("k8s.ns.label", FT_STR, FA_KEY_REQUIRED, F_K8S_NS_LABEL),
    EMPTY("k8s.ns.labels", FT_STR, FA_NONE, F_K8S_NS_LABELS),
    EMPTY("k8s.rs.name", FT_STR, FA_NONE, F_K8S_RS_NAME),
    EMPTY("k8s.rs.id", FT_STR, FA_NONE, F_K8S_RS_ID),
    EMPTY("k8s.rs.label", FT_STR, FA_KEY_REQUIRED, F_K8S_RS_LABEL),
    EMPTY("k8s.rs.labels", FT_STR, FA_NONE, F_K8S_RS_LABELS),
    EMPTY("k8s.deployment.name", FT_STR, FA_NONE, F_K8S_DEPLOYMENT_NAME),
    EMPTY("k8s.deployment.id", FT_STR, FA_NONE, F_K8S_DEPLOYMENT_ID),
    EMPTY("k8s.deployment.label", FT_STR, FA_KEY_REQUIRED, F_K8S_DEPLOYMENT_LABEL),
    EMPTY("k8s.deployment.labels", FT_STR, FA_NONE, F_K8S_DEPLOYMENT_LABELS),
};

const struct field_class fields_unreported_class = {
    "unreported", unreported_defs, sizeof(unreported_defs) / sizeof(unreported_defs[0]), unreported_extract,
};
