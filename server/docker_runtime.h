/* docker_runtime.h - `seccheckd gvisor-config --docker-runtime NAME`:
 * registers runsc as a Docker runtime that streams to seccheckd, as gVisor's
 * own seccheck benchmarks do (test/benchmarks/seccheck/README.md and the
 * Makefile's setup-seccheck: a runtime whose runtimeArgs carry
 * --pod-init-config).
 *
 * Docker's daemon.json is the operator's file: it is read with a real
 * parser (jansson), only runtimes.NAME is changed (its path when it has
 * none, its --pod-init-config argument; every other key and argument is
 * kept), and a file that cannot be parsed, or whose runtimes or entry is
 * not what Docker takes, is refused with the reason and left as it was.
 * Files are replaced atomically (a temporary file beside them, fsync,
 * rename), the pod-init config first, so a crash leaves either the old
 * daemon.json or the new one with its config in place. */
#ifndef SECCHECKD_DOCKER_RUNTIME_H
#define SECCHECKD_DOCKER_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>

#define DOCKER_RUNTIME_FILE_MAX (1u << 20)   /* a daemon.json larger than this is refused */

/* True when s may go into a runtimeArgs entry or a runtime's path: dockerd
 * writes a runtime with arguments into a /bin/sh script that joins them
 * with spaces, unquoted (moby daemon/runtime_unix.go, initRuntimes), so a
 * space or a shell character would split or run something else. */
bool docker_runtime_safe_word(const char *s);

/* Pure: the JSON text of a daemon.json (len 0: none, or an empty file) with
 * runtimes.NAME pointing runsc at pod_init_path. A malloc'd, NUL-terminated
 * text, with *changed false when the file already said exactly that; NULL
 * with the reason in err (nothing to write). */
char *docker_runtime_merge(const char *text, size_t len, const char *name, const char *runsc_path,
                           const char *pod_init_path, bool *changed, char *err, size_t errlen);

struct docker_runtime_result {
    char config_path[4096];      /* daemon.json as written (symlinks resolved) */
    char pod_init_path[4096];    /* the pod-init config written beside it */
    char runtime_path[4096];     /* runtimes.NAME.path as it is now (an existing one is kept) */
    char exec_root[4096];        /* daemon.json's exec-root, "" when it names none */
    char host_socket[4096];      /* its first unix:// host, "" when none */
    bool changed;                /* daemon.json was rewritten */
};

/* Writes pod_init (the config's text) as NAME-pod-init.json beside
 * config_path, then config_path merged. 0, or -1 with the reason in err
 * (then daemon.json is as it was). */
int docker_runtime_install(const char *config_path, const char *name, const char *runsc_path, const char *pod_init,
                           size_t pod_init_len, struct docker_runtime_result *out, char *err, size_t errlen);

#endif
