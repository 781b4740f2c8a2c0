/* unit.runsc_toml: `gvisor-config --runsc-toml FILE` adding pod-init-config to
 * containerd's runsc.toml (server/runsc_toml.c): one line added in
 * [runsc_config] (the table appended when missing), every other byte kept,
 * another tool's pod-init-config refused rather than clobbered, a file whose
 * lines cannot be read one by one refused. docker.daemonset runs it as the
 * DaemonSet's init container does. */
#include "runsc_toml.h"
#include "unit_util.h"

#define P "/run/containerd/runsc/seccheckd-pod-init.json"

static void expect(const char *in, const char *want, bool want_changed)
{
    char err[512] = "";
    bool changed = !want_changed;
    char *out = runsc_toml_merge(in, strlen(in), P, &changed, err, sizeof(err));
    if (!out)
        fail_msg("refused '%s': %s", in, err);
    if (strcmp(out, want) != 0)
        fail_msg("for:\n%s\nexpected:\n%s\ngot:\n%s", in, want, out);
    assert_int_equal(changed, want_changed);
    free(out);
}

static void refused(const char *in, const char *why)
{
    char err[512] = "";
    bool changed = true;
    char *out = runsc_toml_merge(in, strlen(in), P, &changed, err, sizeof(err));
    if (out || !strstr(err, why))
        fail_msg("for:\n%s\nexpected a refusal naming '%s', got '%s'", in, why, out ? out : err);
    assert_false(changed);
}

static void test_added(void **state)
{
    (void)state;
    expect("", "[runsc_config]\n  pod-init-config = \"" P "\"\n", true);
    /* GKE's shape: the table exists; the line goes right under its header, the rest as it was */
    expect("binary_name = \"/usr/bin/runsc\"\n# flags\n[runsc_config]\n  platform = \"systrap\"\n\n[other]\n  x = 1\n",
           "binary_name = \"/usr/bin/runsc\"\n# flags\n[runsc_config]\n  pod-init-config = \"" P "\"\n"
           "  platform = \"systrap\"\n\n[other]\n  x = 1\n", true);
    expect("[ \"runsc_config\" ]   # quoted, spaced\n", "[ \"runsc_config\" ]   # quoted, spaced\n  pod-init-config = \"" P "\"\n",
           true);
    /* no table: appended, the file's last line ended or not */
    expect("log_level = \"debug\"\n", "log_level = \"debug\"\n\n[runsc_config]\n  pod-init-config = \"" P "\"\n", true);
    expect("log_level = \"debug\"", "log_level = \"debug\"\n\n[runsc_config]\n  pod-init-config = \"" P "\"\n", true);
    /* [[runsc_config]] is an array of tables; a pod-init-config of another table is not runsc's */
    expect("[[runsc_config]]\n[x]\n  pod-init-config = \"/else\"\n",
           "[[runsc_config]]\n[x]\n  pod-init-config = \"/else\"\n\n[runsc_config]\n  pod-init-config = \"" P "\"\n", true);
    /* already ours, in either string form or as a dotted key: nothing to change */
    const char *same[] = {"[runsc_config]\n  pod-init-config = \"" P "\"\n", "[runsc_config]\npod-init-config='" P "' # ours\n",
                          "runsc_config.pod-init-config = \"" P "\"\n"};
    for (size_t i = 0; i < 3; i++)
        expect(same[i], same[i], false);
}

static void test_refused(void **state)
{
    (void)state;
    refused("[runsc_config]\n  platform = \"kvm\"\n  pod-init-config = \"/run/containerd/runsc/pod-init.json\"\n",
            "already sets pod-init-config = \"/run/containerd/runsc/pod-init.json\"");
    refused("runsc_config.pod-init-config = \"/etc/falco/pod-init.json\"\n", "another trace session");
    refused("[runsc_config]\n  debug-log = '''\n[runsc_config]\n'''\n", "multi-line string");
    refused("[runsc_config]\n  \"pod-init-config\" = \"/x\\u0041\"\n", "already sets");   /* escaped: not provably ours */
    char err[256];
    bool changed;
    assert_null(runsc_toml_merge("", 0, "relative.json", &changed, err, sizeof(err)));
    assert_null(runsc_toml_merge("", 0, "/a\"b", &changed, err, sizeof(err)));
    assert_non_null(strstr(err, "absolute"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_added),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
