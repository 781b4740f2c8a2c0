/* runsc_toml.h - `seccheckd gvisor-config --runsc-toml FILE`: the node's side
 * of a containerd (Kubernetes) node. containerd's runsc shim reads FILE
 * (runsc.toml: ConfigPath in containerd's config; /run/containerd/runsc/
 * config.toml on GKE Sandbox) and passes each key of its [runsc_config]
 * table to runsc as --KEY=VALUE (gVisor g3doc/user_guide/containerd/
 * configuration.md), as Falco's chart did for its gVisor engine
 * (pod-init-config = "<root>/pod-init.json").
 *
 * FILE is the operator's: only one line is added, `pod-init-config =
 * "PATH"` in [runsc_config] (the table is added at the end when missing);
 * every other line stays byte for byte. A file that already sets
 * pod-init-config to another path (another tool's trace session: runsc
 * takes one) is refused, not clobbered, as is one whose lines cannot be
 * read one by one (a multi-line string). */
#ifndef SECCHECKD_RUNSC_TOML_H
#define SECCHECKD_RUNSC_TOML_H

#include <stdbool.h>
#include <stddef.h>

#define RUNSC_TOML_FILE_MAX (1u << 20)
#define RUNSC_TOML_POD_INIT_NAME "seccheckd-pod-init.json"

/* Pure: text (NUL-terminated; len 0: no file) with pod-init-config = "pod_init_path" in
 * [runsc_config]; malloc'd, *changed false when it was set so already.
 * NULL with the reason in err. */
char *runsc_toml_merge(const char *text, size_t len, const char *pod_init_path, bool *changed, char *err,
                       size_t errlen);

struct runsc_toml_result {
    char toml_path[4096];       /* as written (symlinks resolved) */
    char pod_init_path[4096];   /* RUNSC_TOML_POD_INIT_NAME beside it */
    bool changed;
};

/* Writes pod_init beside toml_path, then toml_path merged. 0, or -1 with
 * the reason in err (toml_path as it was). */
int runsc_toml_install(const char *toml_path, const char *pod_init, size_t pod_init_len,
                       struct runsc_toml_result *out, char *err, size_t errlen);

#endif
