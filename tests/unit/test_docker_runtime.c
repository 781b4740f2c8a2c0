/* unit.docker_runtime: `gvisor-config --docker-runtime NAME` merging runsc's
 * runtime into Docker's daemon.json (server/docker_runtime.c): the file's
 * other keys, their order and the entry's other arguments kept, an older
 * --pod-init-config replaced in each form runsc's flag parser takes, what
 * Docker would not take (or we cannot write safely) refused with the reason
 * and nothing written. e2e's docker.runtime shows a real dockerd taking the
 * result. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sys/stat.h>

#include "docker_runtime.h"
#include "unit_util.h"

#define POD "/etc/docker/runsc-seccheck-pod-init.json"

static char *merge(const char *text, bool *changed, char *err, size_t errlen)
{
    return docker_runtime_merge(text, strlen(text), "runsc-seccheck", "/usr/bin/runsc", POD, changed, err, errlen);
}

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &e);
    if (!j)
        fail_msg("not JSON (%s): %s", e.text, text);
    return j;
}

static void test_new_file(void **state)
{
    (void)state;
    char err[512];
    bool changed = false;
    for (int i = 0; i < 2; i++) {   /* none, and an empty file (dockerd takes both as no settings) */
        char *out = merge(i ? " \n" : "", &changed, err, sizeof(err));
        assert_non_null(out);
        assert_true(changed);
        json_t *got = parse(out), *want = parse("{\"runtimes\": {\"runsc-seccheck\": {\"path\": \"/usr/bin/runsc\","
                                               " \"runtimeArgs\": [\"--pod-init-config=" POD "\"]}}}");
        assert_true(json_equal(got, want));
        json_decref(got);
        json_decref(want);
        free(out);
    }
}

static const char existing[] =
    "{\"log-level\": \"warn\", \"data-root\": \"/srv/docker\",\n"
    " \"default-ulimits\": {\"nofile\": {\"Name\": \"nofile\", \"Hard\": 64000, \"Soft\": 64000}},\n"
    " \"ratio\": 0.1, \"exact\": 0.12345678901234566, \"big\": 9007199254740993, \"flag\": false, \"none\": null,\n"
    " \"runtimes\": {\"kata\": {\"path\": \"/usr/bin/kata-runtime\"},\n"
    "   \"runsc-seccheck\": {\"path\": \"/opt/gvisor/runsc\", \"runtimeArgs\": [\"--platform=kvm\",\n"
    "     \"--pod-init-config\", \"/old/two-words.json\", \"-pod-init-config=/old/one-dash.json\",\n"
    "     \"--pod-init-config=/old/equals.json\", \"--debug\"]}},\n"
    " \"log-opts\": {\"max-size\": \"10m\"}}\n";

/* The other keys, values and order kept; the entry's path and other args kept, every older
 * --pod-init-config gone, ours last. */
static void test_keeps_other_keys(void **state)
{
    (void)state;
    char err[512];
    bool changed = false;
    char *out = merge(existing, &changed, err, sizeof(err));
    assert_non_null(out);
    assert_true(changed);
    json_t *got = parse(out), *before = parse(existing);
    const char *key;
    json_t *v;
    size_t i = 0;
    const char *order[] = {"log-level", "data-root", "default-ulimits", "ratio", "exact", "big", "flag", "none",
                           "runtimes", "log-opts"};
    json_object_foreach(got, key, v) {
        assert_true(i < 10);
        assert_string_equal(key, order[i]);
        if (strcmp(key, "runtimes") != 0)
            assert_true(json_equal(v, json_object_get(before, key)));
        i++;
    }
    assert_int_equal(i, 10);
    assert_int_equal(json_integer_value(json_object_get(got, "big")), 9007199254740993LL);
    assert_true(json_real_value(json_object_get(got, "exact")) == 0.12345678901234566);
    json_t *runtimes = json_object_get(got, "runtimes");
    assert_true(json_equal(json_object_get(runtimes, "kata"), json_object_get(json_object_get(before, "runtimes"), "kata")));
    json_t *entry = json_object_get(runtimes, "runsc-seccheck");
    assert_string_equal(json_string_value(json_object_get(entry, "path")), "/opt/gvisor/runsc");
    json_t *want = parse("[\"--platform=kvm\", \"--debug\", \"--pod-init-config=" POD "\"]");
    assert_true(json_equal(json_object_get(entry, "runtimeArgs"), want));
    json_decref(want);

    /* Once more: the same text, nothing to change. */
    char *again = docker_runtime_merge(out, strlen(out), "runsc-seccheck", "/usr/bin/runsc", POD, &changed, err,
                                       sizeof(err));
    assert_non_null(again);
    assert_false(changed);
    assert_string_equal(again, out);
    free(again);
    json_decref(got);
    json_decref(before);
    free(out);
}

/* Each refusal names its reason and gives nothing to write. */
static void test_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *text, *why;
    } cases[] = {
        {"{\"log-level\": \"warn\",\n \"runtimes\": {", "not valid JSON (line 2"},
        {"{\"a\": 1, \"a\": 2}", "not valid JSON"},                      /* duplicate keys: which one would Docker keep? */
        {"[1, 2]", "not a JSON object"},
        {"{\"runtimes\": [\"runsc\"]}", "\"runtimes\" is not an object"},
        {"{\"runtimes\": {\"runsc-seccheck\": \"/usr/bin/runsc\"}}", "runtimes.runsc-seccheck is not an object"},
        {"{\"runtimes\": {\"runsc-seccheck\": {\"runtimeType\": \"io.containerd.runsc.v1\"}}}", "runsc.toml"},
        {"{\"runtimes\": {\"runsc-seccheck\": {\"path\": \"/usr/bin/runsc\", \"runtimeArgs\": \"--debug\"}}}",
         "runtimeArgs is not a list"},
        {"{\"runtimes\": {\"runsc-seccheck\": {\"path\": \"/usr/bin/runsc\", \"runtimeArgs\": [1]}}}",
         "runtimeArgs[0] is not a string"},
        {"{\"runtimes\": {\"runsc-seccheck\": {\"path\": 7}}}", "path is not a string"},
        {"{\"runtimes\": {\"runsc-seccheck\": {\"path\": \"/opt/my runsc\"}}}", "unquoted"},
        {"{\"runtimes\": {\"runsc-seccheck\": {\"path\": \"/usr/bin/runsc;reboot\"}}}", "unquoted"},
        {"{\"n\": 123456789012345678901234567890}", "not valid JSON"},   /* past int64: refused, not rounded */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char err[512] = "";
        bool changed = true;
        char *out = merge(cases[i].text, &changed, err, sizeof(err));
        if (out || !strstr(err, cases[i].why))
            fail_msg("case %zu (%s): expected a refusal naming '%s', got '%s'", i, cases[i].text, cases[i].why,
                     out ? out : err);
        assert_false(changed);
    }
    char err[512];
    bool changed;
    assert_null(docker_runtime_merge("{}", 2, "bad name", "/usr/bin/runsc", POD, &changed, err, sizeof(err)));
    assert_non_null(strstr(err, "not a runtime name"));
    assert_null(docker_runtime_merge("{}", 2, "runsc", "/usr/bin/runsc", "/etc/my dir/x.json", &changed, err,
                                     sizeof(err)));
    assert_non_null(strstr(err, "unquoted"));
    assert_false(docker_runtime_safe_word("$(id)"));
    assert_false(docker_runtime_safe_word("a`b"));
    assert_false(docker_runtime_safe_word(""));
    assert_true(docker_runtime_safe_word("--pod-init-config=/etc/docker/runsc-seccheck-pod-init.json"));
}

/* A file's text, NUL-terminated (unit_util.h's slurp gives bytes). */
static char *read_text(const char *path)
{
    size_t len = 0;
    uint8_t *bytes = slurp(path, &len);
    char *text = realloc(bytes, len + 1);
    assert_non_null(text);
    text[len] = '\0';
    return text;
}

static void put(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

/* On disk: the pod-init config beside daemon.json, the file's mode kept, a symlinked daemon.json changed
 * where it points; a broken one left byte for byte, no pod-init config written. */
static void test_install(void **state)
{
    (void)state;
    char dir[] = "/tmp/seccheckd-dockerrt-XXXXXX", path[256], target[256], pod[256], err[1024];
    assert_non_null(reaper_mkdtemp(dir));
    snprintf(target, sizeof(target), "%s/real.json", dir);
    snprintf(path, sizeof(path), "%s/daemon.json", dir);
    put(target, existing, 0600);
    assert_int_equal(symlink("real.json", path), 0);
    struct docker_runtime_result res;
    const char cfg[] = "{\"trace_session\": {}}\n";
    assert_int_equal(docker_runtime_install(path, "runsc-seccheck", "/usr/bin/runsc", cfg, strlen(cfg), &res, err,
                                            sizeof(err)), 0);
    assert_true(res.changed);
    assert_string_equal(res.config_path, target);
    assert_string_equal(res.runtime_path, "/opt/gvisor/runsc");
    snprintf(pod, sizeof(pod), "%s/runsc-seccheck-pod-init.json", dir);
    assert_string_equal(res.pod_init_path, pod);
    char *text = read_text(pod);
    assert_string_equal(text, cfg);
    free(text);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(stat(target, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    text = read_text(target);
    assert_non_null(strstr(text, "\"--pod-init-config=" "/tmp/seccheckd-dockerrt-"));
    assert_non_null(strstr(text, "\"log-opts\""));
    free(text);

    static const char broken[] = "{\"runtimes\": {\"runsc\": {\"path\": \"/usr/bin/runsc\"},}\n";
    put(target, broken, 0644);
    assert_int_equal(unlink(pod), 0);
    assert_int_equal(docker_runtime_install(path, "runsc-seccheck", "/usr/bin/runsc", cfg, strlen(cfg), &res, err,
                                            sizeof(err)), -1);
    assert_non_null(strstr(err, "not valid JSON"));
    assert_non_null(strstr(err, "nothing changed"));
    text = read_text(target);
    assert_string_equal(text, broken);
    free(text);
    assert_int_equal(access(pod, F_OK), -1);
    /* and nothing else was left in the directory (a temporary file) */
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "test $(ls -A %s | wc -l) -eq 2", dir);
    assert_int_equal(system(cmd), 0);

    /* A directory is not a daemon.json. */
    assert_int_equal(docker_runtime_install(dir, "runsc-seccheck", "/usr/bin/runsc", cfg, strlen(cfg), &res, err,
                                            sizeof(err)), -1);
    assert_non_null(strstr(err, "not a regular file"));
    assert_int_equal(reaper_remove(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_file),
        cmocka_unit_test(test_keeps_other_keys),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_install),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
