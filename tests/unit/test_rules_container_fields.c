/* Unit: the container.*, k8s.*, user.* and group.* fields of the rules
 * engine over a real container cache (a runsc root and rootfs made here):
 * names and types as Falco's container plugin and libs' user and group
 * filterchecks have them, absent when the container is not known. */
#include <sys/stat.h>

#include "container.h"
#include "rules_util.h"

static struct ctx_parts CP;

static const char all_fields[] =
    "%container.id %container.full_id %container.name %container.image %container.image.repository "
    "%container.image.tag %container.type %container.privileged %k8s.pod.name %k8s.ns.name %k8s.pod.id "
    "%k8s.pod.uid %k8s.pod.sandbox_id %k8s.pod.full_sandbox_id %user.uid %user.name %user.homedir %user.shell "
    "%user.loginuid %user.loginname %group.gid %group.name";

static char all_rule[2048];   /* a rule whose output names all_fields */

struct world {
    char dir[64], root[128], rootfs[160];
    struct container_cache *cache;
    struct container_view *view;
    struct rules_engine *engine;
};

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void world_init(struct world *w, const char *passwd)
{
    scratch_dir(w->dir);
    snprintf(w->root, sizeof(w->root), "%s/root", w->dir);
    snprintf(w->rootfs, sizeof(w->rootfs), "%s/rootfs", w->dir);
    mkdir(w->root, 0755);
    mkdir(w->rootfs, 0755);
    char path[512], json[2048];
    snprintf(path, sizeof(path), "%s/etc", w->rootfs);
    mkdir(path, 0755);
    if (passwd) {
        snprintf(path, sizeof(path), "%s/etc/passwd", w->rootfs);
        put(path, passwd);
        snprintf(path, sizeof(path), "%s/etc/group", w->rootfs);
        put(path, "root:x:0:\nusers:x:100:\n");
    }
    snprintf(path, sizeof(path), "%s/c1_sandbox:s1.state", w->root);
    snprintf(json, sizeof(json),
             "{\"id\":\"c1\",\"createdAt\":\"1970-01-01T00:00:01Z\",\"spec\":{\"root\":{\"path\":\"%s\"},\"annotations\":{"
             "\"io.kubernetes.cri.container-name\":\"web\",\"io.kubernetes.cri.sandbox-name\":\"shop-5d\","
             "\"io.kubernetes.cri.sandbox-namespace\":\"prod\",\"io.kubernetes.cri.sandbox-uid\":\"u-1\","
             "\"io.kubernetes.cri.image-name\":\"localhost:5000/myimage:latest\","
             "\"io.kubernetes.cri.sandbox-id\":\"0123456789abcdef0123\"}}}",
             w->rootfs);
    put(path, json);
    w->cache = cache_on_root(w->root);
    w->view = container_view_new(w->cache);
    w->engine = engine_with_containers(NULL, w->view);
    snprintf(all_rule, sizeof(all_rule),
             "- rule: r\n  desc: d\n  condition: evt.dir in ('<', '>')\n  output: '%s'\n  priority: Notice\n"
             "  warn_evttypes: false\n", all_fields);
    rules_engine_set_rules(w->engine, rules_ok(all_rule));
}

static void world_free(struct world *w)
{
    rules_engine_free(w->engine);
    container_view_free(w->view);
    container_cache_close(w->cache);
    scratch_dir_remove(w->dir);
}

/* container/start of c1 on conn, its process with uid and gid. */
static const char *fields_at_start(struct world *w, uint64_t conn, uint32_t uid, uint32_t gid)
{
    static Gvisor__Container__Start st;
    gvisor__container__start__init(&st);
    st.context_data = mk_ctx(&CP, 1, "sh", 1500);
    CP.creds.effective_uid = uid;
    CP.creds.effective_gid = gid;
    st.id = (char *)"c1";
    const struct event *ev = evb_build(&B, conn, 1, 0, &st.base);
    container_view_wait(w->view, conn, "c1", 2000000000LL);   /* as the writer's stage does */
    assert_int_equal(eval_count(w->engine, ev, &L), 1);
    return L.items[0].output_fields;
}

/* falcosecurity/plugins plugins/container/src/caps/extract/extract.cpp:804
 * (k8s.pod.sandbox_id cut to 12); libs userspace/libsinsp/
 * sinsp_filtercheck_user.cpp:118 (user.loginuid -1 for UINT32_MAX). */
static void test_fields_of_a_known_container(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, "root:x:0:0:root:/root:/bin/bash\nbob:x:1000:100:Bob:/home/bob:/bin/zsh\n");
    assert_string_equal(
        fields_at_start(&w, 1, 1000, 100),
        "{\"container.full_id\":\"c1\",\"container.id\":\"c1\",\"container.image\":\"localhost:5000/myimage:latest\","
        "\"container.image.repository\":\"localhost:5000/myimage\",\"container.image.tag\":\"latest\","
        "\"container.name\":\"web\",\"container.privileged\":false,\"container.type\":\"gvisor\",\"evt.time\":1500,"
        "\"group.gid\":100,\"group.name\":\"users\",\"k8s.ns.name\":\"prod\",\"k8s.pod.full_sandbox_id\":"
        "\"0123456789abcdef0123\",\"k8s.pod.id\":\"u-1\",\"k8s.pod.name\":\"shop-5d\",\"k8s.pod.sandbox_id\":"
        "\"0123456789ab\",\"k8s.pod.uid\":\"u-1\",\"user.homedir\":\"/home/bob\",\"user.loginname\":\"<NA>\","
        "\"user.loginuid\":-1,\"user.name\":\"bob\",\"user.shell\":\"/bin/zsh\",\"user.uid\":1000}");
    /* container.start_ts from createdAt (1 s), container.duration to the event (1500 ns: before it, absent) */
    rules_engine_set_rules(w.engine, rules_ok("- rule: r\n  desc: d\n  condition: evt.type = container\n"
                                              "  output: '%container.start_ts %container.duration'\n"
                                              "  priority: Notice\n"));
    assert_string_equal(fields_at_start(&w, 1, 0, 0),
                        "{\"container.duration\":null,\"container.start_ts\":1000000000,\"evt.time\":1500}");
    rules_engine_set_rules(w.engine, rules_ok(all_rule));
    /* a uid the container's passwd does not name: the string "<NA>", as
     * libs' sinsp_filtercheck_user.cpp:100-108 and _group.cpp:58-68 give it,
     * and libs' own test asserts (userspace/libsinsp/test/filterchecks/
     * user.cpp:54-60 at 48dfd53cd, a removed user); not absent: upstream's
     * known_user_in_container compares it */
    const char *f = fields_at_start(&w, 2, 4242, 4242);
    assert_non_null(strstr(f, "\"user.name\":\"<NA>\""));
    assert_non_null(strstr(f, "\"user.homedir\":\"<NA>\""));
    assert_non_null(strstr(f, "\"group.name\":\"<NA>\""));
    assert_non_null(strstr(f, "\"k8s.ns.name\":\"prod\""));
    world_free(&w);
}

/* No passwd: uid 0 is root (libs: "root", home "/root", shell "<NA>":
 * userspace/libsinsp/test/filterchecks/user.cpp:96-99 at 48dfd53cd),
 * others "<NA>". */
static void test_uid_0_is_root_without_passwd(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, NULL);
    const char *f = fields_at_start(&w, 1, 0, 0);
    assert_non_null(strstr(f, "\"user.name\":\"root\""));
    assert_non_null(strstr(f, "\"user.homedir\":\"/root\""));
    assert_non_null(strstr(f, "\"user.shell\":\"<NA>\""));
    assert_non_null(strstr(f, "\"group.name\":\"root\""));
    f = fields_at_start(&w, 2, 1000, 100);
    assert_non_null(strstr(f, "\"user.name\":\"<NA>\""));
    world_free(&w);
}

/* Without a view (seccheckd rules test) or without a state file: every
 * container name absent, the ids and container.type still there; the user
 * and group names libs' "<NA>" (no passwd to name uid 1000). */
static void test_absent_when_not_known(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, NULL);
    static Gvisor__Container__Start st;
    gvisor__container__start__init(&st);
    st.context_data = mk_ctx(&CP, 1, "sh", 1500);
    CP.ctx.container_id = (char *)"nostate";
    st.id = (char *)"nostate";
    const struct event *ev = evb_build(&B, 1, 1, 0, &st.base);
    container_view_wait(w.view, 1, "nostate", 2000000000LL);
    assert_int_equal(eval_count(w.engine, ev, &L), 1);
    assert_string_equal(L.items[0].output_fields,
                        "{\"container.full_id\":\"nostate\",\"container.id\":\"nostate\",\"container.image\":null,"
                        "\"container.image.repository\":null,\"container.image.tag\":null,\"container.name\":null,"
                        "\"container.privileged\":null,\"container.type\":\"gvisor\",\"evt.time\":1500,"
                        "\"group.gid\":100,\"group.name\":\"<NA>\",\"k8s.ns.name\":null,\"k8s.pod.full_sandbox_id\":null,"
                        "\"k8s.pod.id\":null,\"k8s.pod.name\":null,\"k8s.pod.sandbox_id\":null,\"k8s.pod.uid\":null,"
                        "\"user.homedir\":\"<NA>\",\"user.loginname\":\"<NA>\",\"user.loginuid\":-1,"
                        "\"user.name\":\"<NA>\",\"user.shell\":\"<NA>\",\"user.uid\":1000}");
    world_free(&w);
    struct rules_engine *plain = engine_with("- rule: r\n  desc: d\n  condition: k8s.ns.name = prod or "
                                             "user.name = root\n  output: '%container.name'\n  priority: Notice\n"
                                             "  warn_evttypes: false\n");
    st.context_data = mk_ctx(&CP, 1, "sh", 1500);
    st.id = (char *)"c1";
    assert_int_equal(eval_count(plain, evb_build(&B, 1, 1, 0, &st.base), &L), 0);
    rules_engine_free(plain);
}

/* Conditions see them: a rule on k8s.ns.name and one on user.name. */
static void test_conditions_on_names(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, "bob:x:1000:100::/home/bob:/bin/sh\n");
    rules_engine_set_rules(w.engine, rules_ok("- rule: ns\n  desc: d\n  condition: evt.type = container and "
                                              "k8s.ns.name = prod and container.image.tag = latest\n  output: x\n"
                                              "  priority: Notice\n"
                                              "- rule: user\n  desc: d\n  condition: evt.type = container and "
                                              "user.name in (alice, bob) and not user.loginuid >= 0\n  output: y\n"
                                              "  priority: Notice\n"
                                              "- rule: never\n  desc: d\n  condition: evt.type = container and "
                                              "k8s.ns.name = kube-system\n  output: z\n  priority: Notice\n"));
    static Gvisor__Container__Start st;
    gvisor__container__start__init(&st);
    st.context_data = mk_ctx(&CP, 1, "sh", 1500);
    st.id = (char *)"c1";
    const struct event *ev = evb_build(&B, 1, 1, 0, &st.base);
    container_view_wait(w.view, 1, "c1", 2000000000LL);
    assert_int_equal(eval_count(w.engine, ev, &L), 2);
    assert_string_equal(L.items[0].rule, "ns");
    assert_string_equal(L.items[1].rule, "user");
    world_free(&w);
}

/* falcosecurity/rules falco-incubating_rules.yaml:764-765 (at c72713ee2e):
 * known_user_in_container is `container and not user.name in
 * ("<NA>","N/A","")`; for a uid the container's passwd does not name libs
 * gives "<NA>" (sinsp_filtercheck_user.cpp:100-108), so the macro is false
 * and "Non sudo setuid" stays quiet for such a process, as in Falco. */
static void test_unknown_user_is_the_string_na(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, "bob:x:1000:100::/home/bob:/bin/sh\n");
    rules_engine_set_rules(w.engine, rules_ok("- macro: container\n  condition: (container.id != host)\n"
                                              "- macro: known_user_in_container\n"
                                              "  condition: (container and not user.name in (\"<NA>\",\"N/A\",\"\"))\n"
                                              "- rule: known\n  desc: d\n  condition: evt.type = container and "
                                              "known_user_in_container\n  output: '%user.name'\n  priority: Notice\n"
                                              "- rule: unknown\n  desc: d\n  condition: evt.type = container and "
                                              "user.name = \"<NA>\" and group.name = \"<NA>\"\n  output: '%user.name'\n"
                                              "  priority: Notice\n"));
    (void)fields_at_start(&w, 1, 1000, 100);   /* bob: known */
    assert_string_equal(L.items[0].rule, "known");
    (void)fields_at_start(&w, 2, 4242, 4242);  /* nobody the passwd names */
    assert_string_equal(L.items[0].rule, "unknown");
    assert_string_equal(L.items[0].output_fields, "{\"evt.time\":1500,\"user.name\":\"<NA>\"}");
    world_free(&w);
}

/* Falco's k8smeta plugin (plugins/k8smeta/src/plugin.cpp:420-460): the
 * pod's name and uid and its namespace's name are the CRI annotations'
 * (issue 31 item 2); the labels only the API server has: a rule on one is
 * loaded disabled. */
static void test_k8smeta_fields(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, NULL);
    rules_engine_set_rules(w.engine, rules_ok("- rule: r\n  desc: d\n  condition: evt.type = container and "
                                              "k8smeta.ns.name = prod\n  output: '%k8smeta.pod.name "
                                              "%k8smeta.pod.uid %k8smeta.ns.name %k8smeta.pod.label[app]'\n"
                                              "  priority: Notice\n"
                                              "- rule: labels\n  desc: d\n  condition: k8smeta.pod.label.app = web\n"
                                              "  output: o\n  priority: Notice\n  warn_evttypes: false\n"));
    fields_at_start(&w, 1, 0, 0);
    assert_non_null(strstr(L.items[0].output, "shop-5d u-1 prod <NA>"));
    const struct rule_set *rs = rules_engine_rules(w.engine);
    bool off;
    assert_string_equal(rule_set_rule_absent(rs, 1, &off), "k8smeta.pod.label");
    assert_true(off);
    world_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields_of_a_known_container),
        cmocka_unit_test(test_k8smeta_fields),
        cmocka_unit_test(test_uid_0_is_root_without_passwd),
        cmocka_unit_test(test_absent_when_not_known),
        cmocka_unit_test(test_conditions_on_names),
        cmocka_unit_test(test_unknown_user_is_the_string_na),
    };
    return cmocka_run_group_tests(tests, rules_group_setup, rules_group_teardown);
}
