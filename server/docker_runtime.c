/* docker_runtime.c - runsc as a Docker runtime in daemon.json (docker_runtime.h). */
#include "docker_runtime.h"

#include "atomic_file.h"

#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POD_INIT_NAME "pod-init-config"   /* runsc's flag, without its dashes */

bool docker_runtime_safe_word(const char *s)
{
    if (!s || !*s)
        return false;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  strchr("_./:=,+@%-", c) != NULL;
        if (!ok)
            return false;
    }
    return true;
}

/* A runtime name Docker takes and a file name of ours: [A-Za-z0-9][A-Za-z0-9_.-]*, at most 64. */
static bool valid_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 64 || !((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') ||
                              (name[0] >= '0' && name[0] <= '9')))
        return false;
    return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

/* Is arg runsc's --pod-init-config (-pod-init-config: Go's flag package takes one dash too)? 1 with its
 * value in the same word ("=..."), 2 when the value is the next word, 0 not it. */
static int pod_init_arg(const char *arg)
{
    const char *flag = arg[0] == '-' && arg[1] == '-' ? arg + 2 : arg[0] == '-' ? arg + 1 : NULL;
    if (!flag || strncmp(flag, POD_INIT_NAME, strlen(POD_INIT_NAME)) != 0)
        return 0;
    const char *rest = flag + strlen(POD_INIT_NAME);
    return *rest == '=' ? 1 : *rest == '\0' ? 2 : 0;
}

/* entry's runtimeArgs without any --pod-init-config, then ours; NULL with err. */
static json_t *new_args(json_t *entry, const char *pod_init_path, const char *name, char *err, size_t errlen)
{
    json_t *old = json_object_get(entry, "runtimeArgs");
    if (old && !json_is_array(old)) {
        snprintf(err, errlen, "runtimes.%s.runtimeArgs is not a list: Docker would not start with it either", name);
        return NULL;
    }
    json_t *args = json_array();
    size_t i, n = json_array_size(old);
    for (i = 0; args && i < n; i++) {
        json_t *v = json_array_get(old, i);
        if (!json_is_string(v)) {
            snprintf(err, errlen, "runtimes.%s.runtimeArgs[%zu] is not a string", name, i);
            json_decref(args);
            return NULL;
        }
        int kind = pod_init_arg(json_string_value(v));
        if (kind == 2)
            i++;   /* and its value */
        else if (kind == 0)
            json_array_append(args, v);
    }
    char flag[PATH_MAX + 32];
    snprintf(flag, sizeof(flag), "--" POD_INIT_NAME "=%s", pod_init_path);
    if (!args || json_array_append_new(args, json_string(flag)) != 0) {
        snprintf(err, errlen, "out of memory");
        json_decref(args);
        return NULL;
    }
    return args;
}

/* Sets runtimes.NAME in root; -1 with err. */
static int set_runtime(json_t *root, const char *name, const char *runsc_path, const char *pod_init_path, char *err,
                       size_t errlen)
{
    json_t *runtimes = json_object_get(root, "runtimes");
    if (!runtimes) {
        runtimes = json_object();
        if (!runtimes || json_object_set_new(root, "runtimes", runtimes) != 0)
            return snprintf(err, errlen, "out of memory"), -1;
    } else if (!json_is_object(runtimes)) {
        return snprintf(err, errlen, "its \"runtimes\" is not an object"), -1;
    }
    json_t *entry = json_object_get(runtimes, name);
    if (!entry) {
        entry = json_object();
        if (!entry || json_object_set_new(runtimes, name, entry) != 0)
            return snprintf(err, errlen, "out of memory"), -1;
    } else if (!json_is_object(entry)) {
        return snprintf(err, errlen, "runtimes.%s is not an object", name), -1;
    }
    if (json_object_get(entry, "runtimeType")) {
        snprintf(err, errlen, "runtimes.%s has a runtimeType (a containerd shim): Docker passes a shim no "
                 "runtimeArgs; give runsc its pod-init-config in the shim's runsc.toml ([runsc_config]), or "
                 "choose another runtime name", name);
        return -1;
    }
    json_t *path = json_object_get(entry, "path");
    if (path && !json_is_string(path))
        return snprintf(err, errlen, "runtimes.%s.path is not a string", name), -1;
    if (!path && json_object_set_new(entry, "path", json_string(runsc_path)) != 0)
        return snprintf(err, errlen, "out of memory"), -1;
    const char *kept = json_string_value(json_object_get(entry, "path"));
    if (!docker_runtime_safe_word(kept)) {
        snprintf(err, errlen, "runtimes.%s.path holds a space or a shell character: dockerd runs it from a /bin/sh "
                 "script, unquoted", name);
        return -1;
    }
    json_t *args = new_args(entry, pod_init_path, name, err, errlen);
    if (!args)
        return -1;
    if (json_object_set_new(entry, "runtimeArgs", args) != 0)
        return snprintf(err, errlen, "out of memory"), -1;
    return 0;
}

/* Does every real number in v read back the same from 15 significant digits? Then they are written
 * with 15 (0.1 stays "0.1"), else with 17, which reads back every double exactly. */
static bool reals_fit_15_digits(json_t *v, int depth)
{
    if (depth > 64)
        return false;
    if (json_is_real(v)) {
        char buf[64];
        snprintf(buf, sizeof(buf), "%.15g", json_real_value(v));
        return strtod(buf, NULL) == json_real_value(v);
    }
    const char *key;
    json_t *item;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach(v, key, item)
            if (!reals_fit_15_digits(item, depth + 1))
                return false;
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, item)
            if (!reals_fit_15_digits(item, depth + 1))
                return false;
    }
    return true;
}

static bool blank(const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!strchr(" \t\r\n", text[i]))
            return false;
    return true;
}

char *docker_runtime_merge(const char *text, size_t len, const char *name, const char *runsc_path,
                           const char *pod_init_path, bool *changed, char *err, size_t errlen)
{
    *changed = false;
    if (!valid_name(name)) {
        snprintf(err, errlen, "--docker-runtime: '%.64s' is not a runtime name ([A-Za-z0-9][A-Za-z0-9_.-]*, at most "
                 "64 characters)", name);
        return NULL;
    }
    if (!docker_runtime_safe_word(pod_init_path) || !docker_runtime_safe_word(runsc_path)) {
        snprintf(err, errlen, "the pod-init config's path or runsc's holds a space or a shell character: dockerd "
                 "puts runtimeArgs into a /bin/sh script unquoted (choose a plain path)");
        return NULL;
    }
    json_error_t jerr;
    json_t *root = blank(text, len) ? json_object()
                                    : json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!root) {
        snprintf(err, errlen, "it is not valid JSON (line %d, column %d: %s)", jerr.line, jerr.column, jerr.text);
        return NULL;
    }
    json_t *before = json_deep_copy(root);
    char *out = NULL;
    if (!json_is_object(root)) {
        snprintf(err, errlen, "it is not a JSON object");
    } else if (!before) {
        snprintf(err, errlen, "out of memory");
    } else if (set_runtime(root, name, runsc_path, pod_init_path, err, errlen) == 0) {
        *changed = !json_equal(before, root) || blank(text, len);
        /* a number another key holds is written back as the same double */
        out = json_dumps(root, JSON_INDENT(4) | JSON_REAL_PRECISION(reals_fit_15_digits(root, 0) ? 15 : 17));
        if (!out)
            snprintf(err, errlen, "out of memory");
    }
    json_decref(before);
    json_decref(root);
    return out;
}

/* The runtime's path, daemon.json's exec-root and first unix:// host, for the next steps' message. */
static void note_daemon(const char *text, const char *name, struct docker_runtime_result *out)
{
    json_t *root = json_loads(text, 0, NULL);
    const char *path = json_string_value(json_object_get(json_object_get(json_object_get(root, "runtimes"), name),
                                                         "path"));
    snprintf(out->runtime_path, sizeof(out->runtime_path), "%s", path ? path : "");
    const char *exec_root = json_string_value(json_object_get(root, "exec-root"));
    if (exec_root)
        snprintf(out->exec_root, sizeof(out->exec_root), "%s", exec_root);
    json_t *hosts = json_object_get(root, "hosts");
    for (size_t i = 0; i < json_array_size(hosts) && !out->host_socket[0]; i++) {
        const char *h = json_string_value(json_array_get(hosts, i));
        if (h && strncmp(h, "unix://", 7) == 0)
            snprintf(out->host_socket, sizeof(out->host_socket), "%s", h + 7);
    }
    json_decref(root);
}

int docker_runtime_install(const char *config_path, const char *name, const char *runsc_path, const char *pod_init,
                           size_t pod_init_len, struct docker_runtime_result *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    char name_json[96];
    snprintf(name_json, sizeof(name_json), "%s-pod-init.json", name);
    if (atomic_file_beside(config_path, name_json, out->config_path, sizeof(out->config_path), out->pod_init_path,
                           sizeof(out->pod_init_path), err, errlen) != 0)
        return -1;

    char *text = NULL;
    size_t len = 0;
    struct stat st;
    char why[1024];
    if (atomic_file_read(out->config_path, DOCKER_RUNTIME_FILE_MAX, &text, &len, &st, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "%s: %s; nothing changed", out->config_path, why);
        return -1;
    }
    bool existed = text != NULL;
    char *merged = docker_runtime_merge(text ? text : "", len, name, runsc_path, out->pod_init_path, &out->changed,
                                        why, sizeof(why));
    free(text);
    if (!merged) {
        snprintf(err, errlen, "%s: %s; nothing changed", out->config_path, why);
        return -1;
    }
    int rc = atomic_file_replace(out->pod_init_path, pod_init, pod_init_len, NULL, err, errlen);
    if (rc == 0 && out->changed) {
        size_t mlen = strlen(merged);
        merged[mlen] = '\n';   /* json_dumps' text has no final newline; its NUL becomes one */
        rc = atomic_file_replace(out->config_path, merged, mlen + 1, existed ? &st : NULL, err, errlen);
        merged[mlen] = '\0';
    }
    if (rc == 0)
        note_daemon(merged, name, out);
    free(merged);
    return rc;
}
