/* Unit: container.mounts, container.mount and container.mount.source,
 * .dest, .mode, .rdwr, .propagation over a real container cache (a runsc
 * root made here), with the names, argument forms and values of Falco's
 * container plugin (falcosecurity/plugins plugins/container/src/caps/
 * extract/extract.cpp:158-220 the fields, :637-710 their values) and libs'
 * older filtercheck (falcosecurity/libs 9ab23531a0 userspace/libsinsp/
 * sinsp_filtercheck_container.cpp:279-347 the [index] and [path] forms,
 * :550-648 the values): absent when the container or the mount is not
 * known. */
#include <sys/stat.h>

#include "container.h"
#include "rules_util.h"

static struct ctx_parts CP;

/* A Docker-like spec: the proc mount, a read-only /etc of the host, the
 * Docker socket, a tmpfs with a mode, a host path with a ':' in it. */
static const char mounts_json[] =
    "\"linux\":{\"rootfsPropagation\":\"rprivate\"},\"mounts\":["
    "{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\",\"options\":[\"nosuid\",\"noexec\"]},"
    "{\"destination\":\"/host/etc\",\"type\":\"bind\",\"source\":\"/etc\",\"options\":[\"rbind\",\"ro\",\"rslave\"]},"
    "{\"destination\":\"/var/run/docker.sock\",\"type\":\"bind\",\"source\":\"/var/run/docker.sock\","
    "\"options\":[\"rbind\",\"rw\"]},"
    "{\"destination\":\"/scratch\",\"type\":\"tmpfs\",\"source\":\"tmpfs\",\"options\":[\"mode=1777\",\"size=1m\"]},"
    "{\"destination\":\"/data\",\"type\":\"bind\",\"source\":\"/srv/a:b\",\"options\":[\"rbind\"]}]";

#define MOUNTS_TEXT                                                                                          \
    "proc:/proc::true:rprivate,/etc:/host/etc::false:rslave,/var/run/docker.sock:/var/run/docker.sock::true:" \
    "rprivate,tmpfs:/scratch:1777:true:rprivate,/srv/a\\\\x3ab:/data::true:rprivate"

struct world {
    char dir[64], root[128];
    struct container_cache *cache;
    struct container_view *view;
    struct rules_engine *engine;
};

/* A runsc root holding c1's state file, whose spec has spec_members. */
static void world_init(struct world *w, const char *spec_members)
{
    scratch_dir(w->dir);
    snprintf(w->root, sizeof(w->root), "%s/root", w->dir);
    mkdir(w->root, 0755);
    char path[512], json[4096];
    snprintf(path, sizeof(path), "%s/c1_sandbox:s1.state", w->root);
    snprintf(json, sizeof(json), "{\"id\":\"c1\",\"spec\":{%s}}", spec_members);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(json, f);
    fclose(f);
    w->cache = cache_on_root(w->root);
    w->view = container_view_new(w->cache);
    w->engine = engine_with_containers(NULL, w->view);
}

static void world_free(struct world *w)
{
    rules_engine_free(w->engine);
    container_view_free(w->view);
    container_cache_close(w->cache);
    scratch_dir_remove(w->dir);
}

/* container/start of id: the alerts (in L). */
static size_t start_of(struct world *w, const char *id)
{
    static Gvisor__Container__Start st;
    gvisor__container__start__init(&st);
    st.context_data = mk_ctx(&CP, 1, "sh", 1500);
    CP.ctx.container_id = (char *)id;
    st.id = (char *)id;
    const struct event *ev = evb_build(&B, 1, 1, 0, &st.base);
    container_view_wait(w->view, 1, id, 2000000000LL);   /* as the writer's stage does */
    return eval_count(w->engine, ev, &L);
}

/* The output_fields of one rule on container/start printing output. */
static const char *fields_of(struct world *w, const char *output)
{
    char rule[4096];
    snprintf(rule, sizeof(rule), "- rule: r\n  desc: d\n  condition: evt.type = container\n  output: '%s'\n"
                                 "  priority: Notice\n", output);
    rules_engine_set_rules(w->engine, rules_ok(rule));
    assert_int_equal(start_of(w, "c1"), 1);
    return L.items[0].output_fields;
}

static void expect_in(const char *haystack, const char *needle)
{
    if (!strstr(haystack, needle))
        fail_msg("'%s' not in %s", needle, haystack);
}

/* Every field by index and by path: the plugin's values (extract.cpp:
 * 656-710), the path a glob of the source (libs container_info.cpp:106-116,
 * fnmatch as utils.cpp:779-787), of the destination for
 * container.mount.source (sinsp_filtercheck_container.cpp:617-618). */
static void test_mount_fields_by_index_and_path(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, mounts_json);
    const char *f = fields_of(&w, "%container.mounts");
    assert_string_equal(f, "{\"container.mounts\":\"" MOUNTS_TEXT "\",\"evt.time\":1500}");
    f = fields_of(&w, "%container.mount[0] %container.mount[4] %container.mount[/etc] %container.mount[/var/run/*] "
                      "%container.mount[tmp*]");
    expect_in(f, "\"container.mount[0]\":\"proc:/proc::true:rprivate\"");
    expect_in(f, "\"container.mount[4]\":\"/srv/a\\\\x3ab:/data::true:rprivate\"");
    expect_in(f, "\"container.mount[/etc]\":\"/etc:/host/etc::false:rslave\"");
    expect_in(f, "\"container.mount[/var/run/*]\":\"/var/run/docker.sock:/var/run/docker.sock::true:rprivate\"");
    expect_in(f, "\"container.mount[tmp*]\":\"tmpfs:/scratch:1777:true:rprivate\"");
    f = fields_of(&w, "%container.mount.source[1] %container.mount.source[/host/*] %container.mount.source[/data] "
                      "%container.mount.dest[1] %container.mount.dest[/etc] %container.mount.dest[/srv/a:b]");
    expect_in(f, "\"container.mount.source[1]\":\"/etc\"");
    expect_in(f, "\"container.mount.source[/host/*]\":\"/etc\"");   /* by destination */
    expect_in(f, "\"container.mount.source[/data]\":\"/srv/a:b\"");   /* the value itself is not escaped */
    expect_in(f, "\"container.mount.dest[1]\":\"/host/etc\"");
    expect_in(f, "\"container.mount.dest[/etc]\":\"/host/etc\"");     /* by source */
    expect_in(f, "\"container.mount.dest[/srv/a:b]\":\"/data\"");
    f = fields_of(&w, "%container.mount.mode[3] %container.mount.mode[0] %container.mount.mode[tmpfs] "
                      "%container.mount.rdwr[1] %container.mount.rdwr[/var/run/docker.sock] "
                      "%container.mount.propagation[/etc] %container.mount.propagation[0]");
    expect_in(f, "\"container.mount.mode[3]\":\"1777\"");
    expect_in(f, "\"container.mount.mode[0]\":\"\"");   /* a mount without a mode: "", not absent */
    expect_in(f, "\"container.mount.mode[tmpfs]\":\"1777\"");
    expect_in(f, "\"container.mount.rdwr[1]\":\"false\"");   /* a string, as the plugin's */
    expect_in(f, "\"container.mount.rdwr[/var/run/docker.sock]\":\"true\"");
    expect_in(f, "\"container.mount.propagation[/etc]\":\"rslave\"");
    expect_in(f, "\"container.mount.propagation[0]\":\"rprivate\"");   /* the spec's rootfsPropagation */
    /* no such mount: absent, by index and by path (extract.cpp:683: nothing set) */
    f = fields_of(&w, "%container.mount[5] %container.mount[/nope*] %container.mount.dest[/proc*] "
                      "%container.mount.source[/etc] %container.mount.mode[99] %container.mount.rdwr[/x] "
                      "%container.mount.propagation[7]");
    expect_in(f, "\"container.mount[5]\":null");
    expect_in(f, "\"container.mount[/nope*]\":null");
    expect_in(f, "\"container.mount.dest[/proc*]\":null");     /* no source starts /proc ("proc" does not) */
    expect_in(f, "\"container.mount.source[/etc]\":null");     /* no destination is /etc */
    expect_in(f, "\"container.mount.mode[99]\":null");
    expect_in(f, "\"container.mount.rdwr[/x]\":null");
    expect_in(f, "\"container.mount.propagation[7]\":null");
    /* in text: <NA> */
    rules_engine_set_rules(w.engine, rules_ok("- rule: r\n  desc: d\n  condition: evt.type = container\n"
                                              "  output: 'a=%container.mount[9] b=%container.mount.dest[/etc]'\n"
                                              "  priority: Notice\n"));
    assert_int_equal(start_of(&w, "c1"), 1);
    expect_in(L.items[0].output, "a=<NA> b=/host/etc");
    world_free(&w);
}

/* Conditions: upstream's sensitive_mount macro (falcosecurity/rules
 * rules/falco-sandbox_rules.yaml:1245-1257, its form `not F in ("<NA>","N/A")`),
 * globs over '/', container.mounts with contains, the rdwr string. */
static void test_conditions_on_mounts(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, mounts_json);
    rules_engine_set_rules(
        w.engine,
        rules_ok("- rule: docker socket\n  desc: d\n  condition: evt.type = container and not "
                 "container.mount.dest[/var/run/docker.sock] in (\"<NA>\",\"N/A\")\n  output: a\n  priority: Notice\n"
                 "- rule: host etc read-only\n  desc: d\n  condition: evt.type = container and "
                 "container.mount.dest[/e*] = /host/etc and container.mount.rdwr[/etc] = false\n  output: b\n"
                 "  priority: Notice\n"
                 "- rule: mounts text\n  desc: d\n  condition: evt.type = container and container.mounts contains "
                 "\"/var/run/docker.sock:\" and container.mount[1] startswith \"/etc:\"\n  output: c\n"
                 "  priority: Notice\n"
                 "- rule: a glob across directories\n  desc: d\n  condition: evt.type = container and "
                 "container.mount.source[/var/*sock] = /var/run/docker.sock\n  output: d\n  priority: Notice\n"
                 "- rule: never\n  desc: d\n  condition: evt.type = container and (container.mount.dest[/root*] "
                 "exists or container.mount[8] != x or container.mount.rdwr[0] = false)\n  output: e\n"
                 "  priority: Notice\n"));
    assert_int_equal(start_of(&w, "c1"), 4);
    assert_string_equal(L.items[0].rule, "docker socket");
    assert_string_equal(L.items[1].rule, "host etc read-only");
    assert_string_equal(L.items[2].rule, "mounts text");
    assert_string_equal(L.items[3].rule, "a glob across directories");
    world_free(&w);
}

/* Without a state file, without a view, and with a spec without mounts:
 * container.mounts absent in the first two, "" in the last; every mount
 * absent (extract.cpp:590-611: no container, no value). */
static void test_absent_when_not_known(void **state)
{
    (void)state;
    static const char out[] = "%container.mounts %container.mount[0] %container.mount.dest[/etc] "
                              "%container.mount.rdwr[0]";
    static const char absent[] = "{\"container.mount.dest[/etc]\":null,\"container.mount.rdwr[0]\":null,"
                                 "\"container.mount[0]\":null,\"container.mounts\":null,\"evt.time\":1500}";
    struct world w;
    world_init(&w, mounts_json);
    char rule[512];
    snprintf(rule, sizeof(rule), "- rule: r\n  desc: d\n  condition: evt.type = container\n  output: '%s'\n"
                                 "  priority: Notice\n", out);
    rules_engine_set_rules(w.engine, rules_ok(rule));
    assert_int_equal(start_of(&w, "nostate"), 1);
    assert_string_equal(L.items[0].output_fields, absent);
    world_free(&w);

    struct rules_engine *plain = engine_with(rule);   /* no view: seccheckd rules test */
    static Gvisor__Container__Start st;
    gvisor__container__start__init(&st);
    st.context_data = mk_ctx(&CP, 1, "sh", 1500);
    st.id = (char *)"c1";
    assert_int_equal(eval_count(plain, evb_build(&B, 1, 1, 0, &st.base), &L), 1);
    assert_string_equal(L.items[0].output_fields, absent);
    rules_engine_free(plain);

    world_init(&w, "\"annotations\":{}");
    rules_engine_set_rules(w.engine, rules_ok(rule));
    assert_int_equal(start_of(&w, "c1"), 1);
    assert_string_equal(L.items[0].output_fields,
                        "{\"container.mount.dest[/etc]\":null,\"container.mount.rdwr[0]\":null,"
                        "\"container.mount[0]\":null,\"container.mounts\":\"\",\"evt.time\":1500}");
    world_free(&w);
}

/* A hostile spec: what is kept is what the fields give, the joined texts
 * escape the separators, the mounts past the limit are not there. */
static void test_hostile_mounts(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, "\"mounts\":[7,{\"destination\":\"/evil\\u001b[2J\",\"source\":\"/a,/proc:/host/proc::true:\","
                   "\"options\":[\"ro\",5]},{\"destination\":[\"/x\"]},{\"destination\":\"/ok\",\"source\":\"/ok\"}]");
    const char *f = fields_of(&w, "%container.mounts %container.mount.dest[0] %container.mount.dest[/a,*] "
                                  "%container.mount.source[/ok] %container.mount[2]");
    expect_in(f, "\"container.mounts\":\"/a\\\\x2c/proc\\\\x3a/host/proc\\\\x3a\\\\x3atrue\\\\x3a:/evil\\u001b[2J::false:,"
                 "/ok:/ok::true:\"");
    expect_in(f, "\"container.mount.dest[0]\":\"/evil\\u001b[2J\"");   /* escaped where shown */
    expect_in(f, "\"container.mount.dest[/a,*]\":\"/evil\\u001b[2J\"");
    expect_in(f, "\"container.mount.source[/ok]\":\"/ok\"");   /* the refused entries take no index */
    expect_in(f, "\"container.mount[2]\":null");
    struct container_cache_stats st;
    container_cache_get_stats(w.cache, &st);
    assert_int_equal(st.mounts_malformed, 3);   /* 7, the destination list; the kept one's ESC and option 5 */
    world_free(&w);
}

/* Names and argument forms as libs parses them
 * (sinsp_filtercheck_container.cpp:309-347): the [argument] is required,
 * container.mounts takes none. */
static void test_argument_forms(void **state)
{
    (void)state;
    char out[2048];
    static const char *const bad[] = {"container.mount = x", "container.mount.dest = x", "container.mounts[0] = x",
                                      "container.mount.dest[\"\"] = x", "container.mount.rdwr exists"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char rule[512];
        snprintf(rule, sizeof(rule), "- rule: r\n  desc: d\n  condition: evt.type = container and %s\n  output: o\n"
                                     "  priority: Notice\n", bad[i]);
        rules_errors(rule, out, sizeof(out));
        if (!strstr(out, "container.mount"))
            fail_msg("%s: %s", bad[i], out);
    }
    rules_errors("- rule: r\n  desc: d\n  condition: evt.type = container and container.mount.dest = x\n"
                 "  output: o\n  priority: Notice\n", out, sizeof(out));
    expect_in(out, "'container.mount.dest' needs [N], a mount's index, or [PATH], a glob of its path");
    rule_set_free(rules_ok("- rule: r\n  desc: d\n  condition: evt.type = container and "
                           "(container.mount[0] = x or container.mount.propagation[\"/a b/*\"] = y or "
                           "container.mount.mode['/with space'] = z)\n  output: '%container.mount.dest[/x]'\n"
                           "  priority: Notice\n"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mount_fields_by_index_and_path),
        cmocka_unit_test(test_conditions_on_mounts),
        cmocka_unit_test(test_absent_when_not_known),
        cmocka_unit_test(test_hostile_mounts),
        cmocka_unit_test(test_argument_forms),
    };
    return cmocka_run_group_tests(tests, rules_group_setup, rules_group_teardown);
}
