/* Unit: Falco's append_output (rules.h): the extra output formats and
 * fields falco.yaml adds to rules' outputs, and the suggested fields, as
 * falcosecurity/falco 130747499b applies them. Each case names the upstream
 * test or code it follows; the rules render on a crafted openat. */
#include "filter.h"
#include "rules_util.h"

static struct ctx_parts CP;

/* An openat by "cat" in container c1, time 1700000000000000001. */
static const struct event *openat_ev(void)
{
    static Gvisor__Syscall__Open m;
    static Gvisor__Syscall__Exit x;
    gvisor__syscall__open__init(&m);
    gvisor__syscall__exit__init(&x);
    x.result = 3;
    m.context_data = mk_ctx(&CP, 7, "cat", 1700000000000000001);
    m.exit = &x;
    m.sysno = 257;
    m.fd = -100;
    m.pathname = (char *)"/etc/shadow";
    return evb_build(&B, 1, 7, 0, &m.base);
}

/* Sets the append_output of spec for the loads that follow. */
static void set_ao(const char *spec)
{
    char err[512];
    struct rules_append_output *ao = rules_append_output_load(spec, err, sizeof(err));
    if (!ao)
        fail_msg("append_output %s: %s", spec, err);
    rules_set_append_output(ao);
}

/* The rules text's alerts on one openat (every rule that matches, in load
 * order), left in L. */
static void alerts_of(const char *rules)
{
    struct rules_engine *e = engine_with(rules);
    eval_count(e, openat_ev(), &L);
    rules_engine_free(e);   /* the list keeps its own copies */
}

/* The text after "HH:MM:SS.nnnnnnnnn: Priority ". */
static const char *message(size_t i)
{
    assert_true(i < L.count);
    const char *p = strstr(L.items[i].output, ": ");
    assert_non_null(p);
    p = strchr(p + 2, ' ');
    assert_non_null(p);
    return p + 1;
}

static int teardown_ao(void **state)
{
    (void)state;
    rules_set_append_output(NULL);
    return 0;
}

/* unit_tests/engine/test_extra_output.cpp:22-36 extra_format_all */
static void test_extra_format_all(void **state)
{
    (void)state;
    char dir[64], path[128];
    scratch_dir(dir);
    snprintf(path, sizeof(path), "%s/falco.yaml", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("rules_files: [/etc/falco/falco_rules.yaml]\nappend_output:\n  - extra_output: \"evt.type=%evt.type\"\n", f);
    fclose(f);
    set_ao(path);
    alerts_of("- rule: legit_rule\n  desc: legit rule description\n  condition: evt.type=openat\n"
              "  output: user=%user.uid command=%proc.cmdline file=%fd.name\n  priority: INFO\n");
    assert_int_equal(L.count, 1);
    assert_string_equal(message(0), "user=1000 command=cat file=/etc/shadow evt.type=openat");
    scratch_dir_remove(dir);
}

static void write_yaml(char *dir, char *path, size_t pathlen, const char *text)
{
    scratch_dir(dir);
    snprintf(path, pathlen, "%s/append.yaml", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* test_extra_output.cpp:38-58 extra_format_by_rule, and :60-93
 * extra_format_by_tag_rule (the tags a rule must all have: std::includes,
 * rule_loader_compiler.cpp:450-455). The list alone, without falco.yaml's
 * other keys, is read the same. */
static void test_extra_format_by_rule_and_tags(void **state)
{
    (void)state;
    char dir[64], path[128];
    write_yaml(dir, path, sizeof(path),
               "- match: {rule: legit_rule}\n  extra_output: \"evt.type=%evt.type\"\n");
    set_ao(path);
    alerts_of("- rule: legit_rule\n  desc: d\n  condition: evt.type=openat\n  output: out 1\n  priority: INFO\n"
              "- rule: another_rule\n  desc: d\n  condition: evt.type=openat\n  output: out 2\n  priority: INFO\n");
    assert_int_equal(L.count, 2);
    assert_string_equal(message(0), "out 1 evt.type=openat");
    assert_string_equal(message(1), "out 2");
    scratch_dir_remove(dir);

    write_yaml(dir, path, sizeof(path),
               "append_output:\n"
               "  - match: {tags: [tag1]}\n    extra_output: extra 1\n"
               "  - match: {rule: another_rule}\n    extra_output: extra 2\n"
               "  - match: {tags: [tag1, tag2]}\n    extra_output: extra 3\n"
               "  - match: {source: k8s_audit}\n    extra_output: not for syscall rules\n");
    set_ao(path);
    alerts_of("- rule: legit_rule\n  desc: d\n  condition: evt.type=openat\n  output: out 1\n  priority: INFO\n"
              "  tags: [tag1]\n"
              "- rule: another_rule\n  desc: d\n  condition: evt.type=openat\n  output: out 2\n  priority: INFO\n"
              "  tags: [tag1]\n"
              "- rule: a_third_rule\n  desc: d\n  condition: evt.type=openat\n  output: out 3\n  priority: INFO\n"
              "  tags: [tag1, tag2]\n");
    assert_int_equal(L.count, 3);
    assert_string_equal(message(0), "out 1 extra 1");
    assert_string_equal(message(1), "out 2 extra 1 extra 2");
    assert_string_equal(message(2), "out 3 extra 1 extra 3");
    scratch_dir_remove(dir);
}

/* test_extra_output.cpp:95-109 extra_format_empty_container_info:
 * %container.info becomes nothing, with the deprecation warning of
 * rule_loader_compiler.cpp:464-472. */
static void test_container_info_becomes_nothing(void **state)
{
    (void)state;
    set_ao("none");
    const char *text = "- rule: legit_rule\n  desc: d\n  condition: evt.type=openat\n"
                       "  output: out 1 (%container.info) by %proc.name\n  priority: INFO\n  tags: [tag1]\n";
    struct rules_diag d = {0};
    struct rule_set *rs = rule_set_load_buffer("t.yaml", text, strlen(text), &d);
    assert_non_null(rs);
    assert_int_equal(d.warnings, 1);
    assert_non_null(strstr(d.items[0].message, "%container.info is deprecated"));
    rules_diag_free(&d);
    rule_set_free(rs);
    alerts_of(text);
    assert_string_equal(message(0), "out 1 () by cat");
    assert_string_equal(L.items[0].output_fields, "{\"evt.time\":1700000000000000001,\"proc.name\":\"cat\"}");
}

/* test_extra_output.cpp:111-129 extra_fields_all, and formats.cpp:147-172:
 * a NAME: FORMAT field is its text, a raw field its typed value, in
 * output_fields only; a key the output has takes the extra field's value. */
static void test_extra_fields(void **state)
{
    (void)state;
    char dir[64], path[128];
    setenv("SECCHECKD_TEST_AO", "from-env", 1);
    write_yaml(dir, path, sizeof(path),
               "append_output:\n"
               "  - extra_fields:\n"
               "      - my_field: \"hello %evt.num\"\n"
               "      - home: \"${SECCHECKD_TEST_AO} $${KEPT}\"\n"
               "      - proc.pid\n"
               "      - proc.name: \"[%proc.name]\"\n");
    set_ao(path);
    alerts_of("- rule: legit_rule\n  desc: d\n  condition: evt.type=openat\n  output: file=%fd.name by %proc.name\n"
              "  priority: INFO\n");
    assert_int_equal(L.count, 1);
    assert_string_equal(message(0), "file=/etc/shadow by cat");
    assert_string_equal(L.items[0].output_fields,
                        "{\"evt.time\":1700000000000000001,\"fd.name\":\"/etc/shadow\",\"home\":\"from-env ${KEPT}\","
                        "\"my_field\":\"hello 1\",\"proc.name\":\"[cat]\",\"proc.pid\":7}");
    unsetenv("SECCHECKD_TEST_AO");
    scratch_dir_remove(dir);
}

/* falco.yaml:797-799 ships `- suggested_output: true`; init_falco_engine.cpp:
 * 26-59 appends " foo_bar=%foo.bar" for every field flagged suggested, the
 * container plugin's (plugins extract.cpp:118-338): the text and
 * output_fields say which container, pod and image. */
static void test_suggested_output(void **state)
{
    (void)state;
    set_ao("suggested");
    alerts_of("- rule: r\n  desc: d\n  condition: evt.type=openat\n  output: read %fd.name\n  priority: WARNING\n");
    assert_int_equal(L.count, 1);
    assert_string_equal(message(0), "read /etc/shadow container_id=c1 container_name=<NA> "
                                    "container_image_repository=<NA> container_image_tag=<NA> k8s_pod_name=<NA> "
                                    "k8s_ns_name=<NA>");
    assert_string_equal(L.items[0].output_fields,
                        "{\"container.id\":\"c1\",\"container.image.repository\":null,\"container.image.tag\":null,"
                        "\"container.name\":null,\"evt.time\":1700000000000000001,\"fd.name\":\"/etc/shadow\","
                        "\"k8s.ns.name\":null,\"k8s.pod.name\":null}");
    for (size_t i = 0; i < 6; i++)
        assert_non_null(fields_suggested(i));
    assert_null(fields_suggested(6));
    /* none: the output as written */
    set_ao("none");
    alerts_of("- rule: r\n  desc: d\n  condition: evt.type=openat\n  output: read %fd.name\n  priority: WARNING\n");
    assert_string_equal(message(0), "read /etc/shadow");
    /* a falco.yaml without append_output: none, as Falco's default in code */
    char dir[64], path[128];
    write_yaml(dir, path, sizeof(path), "json_output: true\n");
    set_ao(path);
    alerts_of("- rule: r\n  desc: d\n  condition: evt.type=openat\n  output: read %fd.name\n  priority: WARNING\n");
    assert_string_equal(message(0), "read /etc/shadow");
    scratch_dir_remove(dir);
}

/* What is refused, with the file, line and column. */
static void test_refused(void **state)
{
    (void)state;
    static const struct {
        const char *yaml, *error;
    } cases[] = {
        {"append_output:\n  - extra_output: \"x=%no.such\"\n", ":2:5: append_output: extra_output: unknown field"},
        {"append_output:\n  - extra_fields:\n      - a: x\n      - a: y\n",
         ":4:9: append_output: extra_fields: 'a' is given twice"},
        {"append_output:\n  - extra_fields: [not.a.field]\n", ":2:5: append_output: extra_fields: unknown field"},
        {"append_output:\n  - suggested_output: maybe\n", ":2:23: append_output: suggested_output: expected true"},
        {"append_output:\n  - extra: x\n", ":2:5: append_output: unknown key 'extra'"},
        {"append_output: {suggested_output: true}\n", ":1:16: append_output: expected a sequence"},
        {"append_output:\n  - [1]\n", ":2:5: append_output: each entry is a mapping"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char dir[64], path[128], err[512];
        write_yaml(dir, path, sizeof(path), cases[i].yaml);
        struct rules_append_output *ao = rules_append_output_load(path, err, sizeof(err));
        if (ao)
            fail_msg("case %zu loaded", i);
        if (!strstr(err, cases[i].error) || strncmp(err, path, strlen(path)) != 0)
            fail_msg("case %zu: '%s' lacks '%s'", i, err, cases[i].error);
        scratch_dir_remove(dir);
    }
    char err[512];
    assert_null(rules_append_output_load("/nonexistent/falco.yaml", err, sizeof(err)));
    assert_non_null(strstr(err, "/nonexistent/falco.yaml"));
    assert_null(rules_append_output_load("", err, sizeof(err)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_extra_format_all, teardown_ao),
        cmocka_unit_test_teardown(test_extra_format_by_rule_and_tags, teardown_ao),
        cmocka_unit_test_teardown(test_container_info_becomes_nothing, teardown_ao),
        cmocka_unit_test_teardown(test_extra_fields, teardown_ao),
        cmocka_unit_test_teardown(test_suggested_output, teardown_ao),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, rules_group_setup, rules_group_teardown);
}
