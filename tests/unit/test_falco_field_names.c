/* Unit: every field falcosecurity/libs (48dfd53cd, userspace/libsinsp/
 * sinsp_filtercheck_*.cpp: each class's m_info table) and Falco's container
 * and k8smeta plugins (falcosecurity/plugins 0b3cbd8d8) define is known to
 * the loader (issue 31 item 2): a rules file naming it loads; what gVisor
 * and the node cannot feed is loaded disabled with the absent-fields
 * warning, the rest runs. And a local file checked alone, appending to what
 * it does not define, is told to name falco_rules.yaml first. */
#include "filter.h"
#include "rules_util.h"

static struct ctx_parts CP;

/* The field as a condition names it (an argument where upstream requires
 * one), and whether the rule reading it is loaded disabled. */
static const struct {
    const char *field;
    bool disabled;
} upstream[] = {
    /* libs userspace/libsinsp/sinsp_filtercheck_event.cpp */
    {"evt.latency", true},
    {"evt.latency.s", true},
    {"evt.latency.ns", true},
    {"evt.latency.quantized", true},
    {"evt.latency.human", true},
    {"evt.deltatime", true},
    {"evt.deltatime.s", true},
    {"evt.deltatime.ns", true},
    {"evt.outputtime", false},
    {"evt.dir", false},
    {"evt.type", false},
    {"evt.type.is[openat]", false},
    {"syscall.type", false},
    {"evt.category", true},
    {"evt.cpu", true},
    {"evt.args", false},
    {"evt.arg.fd", false},
    {"evt.rawarg.flags", false},
    {"evt.info", false},
    {"evt.buffer", true},
    {"evt.buflen", true},
    {"evt.res", false},
    {"evt.rawres", false},
    {"evt.failed", false},
    {"evt.is_io", false},
    {"evt.is_io_read", false},
    {"evt.is_io_write", false},
    {"evt.io_dir", false},
    {"evt.is_wait", true},
    {"evt.wait_latency", true},
    {"evt.is_syslog", true},
    {"evt.count", true},
    {"evt.count.error", true},
    {"evt.count.error.file", true},
    {"evt.count.error.net", true},
    {"evt.count.error.memory", true},
    {"evt.count.error.other", true},
    {"evt.count.exit", true},
    {"evt.count.procinfo", true},
    {"evt.count.threadinfo", true},
    {"evt.around[1000]", true},
    {"evt.abspath[src]", true},
    {"evt.buflen.in", true},
    {"evt.buflen.out", true},
    {"evt.buflen.file", true},
    {"evt.buflen.file.in", true},
    {"evt.buflen.file.out", true},
    {"evt.buflen.net", true},
    {"evt.buflen.net.in", true},
    {"evt.buflen.net.out", true},
    {"evt.is_open_read", false},
    {"evt.is_open_write", false},
    {"evt.infra.docker.name", false},
    {"evt.infra.docker.container.id", false},
    {"evt.infra.docker.container.name", false},
    {"evt.infra.docker.container.image", false},
    {"evt.is_open_exec", false},
    {"evt.is_open_create", true},
    /* libs userspace/libsinsp/sinsp_filtercheck_gen_event.cpp */
    {"evt.num", false},
    {"evt.time", false},
    {"evt.time.s", false},
    {"evt.time.iso8601", false},
    {"evt.datetime", false},
    {"evt.datetime.s", false},
    {"evt.rawtime", false},
    {"evt.rawtime.s", false},
    {"evt.rawtime.ns", false},
    {"evt.reltime", true},
    {"evt.reltime.s", true},
    {"evt.reltime.ns", true},
    {"evt.pluginname", false},
    {"evt.plugininfo", false},
    {"evt.source", false},
    {"evt.is_async", false},
    {"evt.asynctype", false},
    {"evt.hostname", false},
    /* libs userspace/libsinsp/sinsp_filtercheck_thread.cpp */
    {"proc.exe", false},
    {"proc.pexe", false},
    {"proc.aexe", false},
    {"proc.exepath", false},
    {"proc.pexepath", false},
    {"proc.aexepath", false},
    {"proc.name", false},
    {"proc.pname", false},
    {"proc.aname", false},
    {"proc.args", false},
    {"proc.aargs", false},
    {"proc.cmdline", false},
    {"proc.pcmdline", false},
    {"proc.acmdline", false},
    {"proc.cmdnargs", false},
    {"proc.cmdlenargs", false},
    {"proc.exeline", false},
    {"proc.env", false},
    {"proc.aenv", false},
    {"proc.cwd", false},
    {"proc.loginshellid", false},
    {"proc.tty", false},
    {"proc.pid", false},
    {"proc.ppid", false},
    {"proc.apid", false},
    {"proc.vpid", false},
    {"proc.pvpid", false},
    {"proc.sid", false},
    {"proc.sname", false},
    {"proc.sid.exe", false},
    {"proc.sid.exepath", false},
    {"proc.vpgid", false},
    {"proc.vpgid.name", false},
    {"proc.vpgid.exe", false},
    {"proc.vpgid.exepath", false},
    {"proc.pgid", false},
    {"proc.pgid.name", false},
    {"proc.pgid.exe", false},
    {"proc.pgid.exepath", false},
    {"proc.duration", false},
    {"proc.ppid.duration", false},
    {"proc.pid.ts", false},
    {"proc.ppid.ts", false},
    {"proc.is_exe_writable", false},
    {"proc.is_exe_upper_layer", false},
    {"proc.is_exe_lower_layer", false},
    {"proc.is_exe_from_memfd", false},
    {"proc.is_sid_leader", false},
    {"proc.is_vpgid_leader", false},
    {"proc.is_pgid_leader", false},
    {"proc.exe_ino", false},
    {"proc.exe_ino.ctime", false},
    {"proc.exe_ino.mtime", true},
    {"proc.exe_ino.ctime_duration_proc_start", false},
    {"proc.exe_ino.ctime_duration_pidns_start", true},
    {"proc.pidns_init_start_ts", true},
    {"thread.cap_permitted", true},
    {"thread.cap_inheritable", true},
    {"thread.cap_effective", true},
    {"proc.fdopencount", true},
    {"proc.fdlimit", true},
    {"proc.fdusage", true},
    {"proc.vmsize", true},
    {"proc.vmrss", true},
    {"proc.vmswap", true},
    {"thread.pfmajor", true},
    {"thread.pfminor", true},
    {"thread.tid", false},
    {"thread.ismain", false},
    {"thread.vtid", false},
    {"thread.nametid", true},
    {"thread.exectime", true},
    {"thread.totexectime", true},
    {"thread.cgroups", true},
    {"thread.cgroup[cpuacct]", true},
    {"proc.nthreads", true},
    {"proc.nchilds", true},
    {"thread.cpu", true},
    {"thread.cpu.user", true},
    {"thread.cpu.system", true},
    {"thread.vmsize", true},
    {"thread.vmrss", true},
    {"thread.vmsize.b", true},
    {"thread.vmrss.b", true},
    {"proc.stdin.type", false},
    {"proc.stdout.type", false},
    {"proc.stderr.type", false},
    {"proc.stdin.name", false},
    {"proc.stdout.name", false},
    {"proc.stderr.name", false},
    /* libs userspace/libsinsp/sinsp_filtercheck_fd.cpp */
    {"fd.num", false},
    {"fd.type", false},
    {"fd.typechar", false},
    {"fd.name", false},
    {"fd.directory", false},
    {"fd.filename", false},
    {"fd.ip", false},
    {"fd.cip", false},
    {"fd.sip", false},
    {"fd.lip", false},
    {"fd.rip", false},
    {"fd.port", false},
    {"fd.cport", false},
    {"fd.sport", false},
    {"fd.lport", false},
    {"fd.rport", false},
    {"fd.l4proto", false},
    {"fd.sockfamily", false},
    {"fd.is_server", true},
    {"fd.uid", false},
    {"fd.containername", false},
    {"fd.containerdirectory", false},
    {"fd.proto", true},
    {"fd.cproto", true},
    {"fd.sproto", true},
    {"fd.lproto", true},
    {"fd.rproto", true},
    {"fd.net", false},
    {"fd.cnet", false},
    {"fd.snet", false},
    {"fd.lnet", false},
    {"fd.rnet", false},
    {"fd.connected", false},
    {"fd.name_changed", false},
    {"fd.cip.name", true},
    {"fd.sip.name", true},
    {"fd.lip.name", true},
    {"fd.rip.name", true},
    {"fd.dev", true},
    {"fd.dev.major", true},
    {"fd.dev.minor", true},
    {"fd.ino", false},
    {"fd.nameraw", false},
    {"fd.types", true},
    {"fd.is_upper_layer", false},
    {"fd.is_lower_layer", false},
    /* libs userspace/libsinsp/sinsp_filtercheck_fdlist.cpp */
    {"fdlist.nums", true},
    {"fdlist.names", true},
    {"fdlist.cips", true},
    {"fdlist.sips", true},
    {"fdlist.cports", true},
    {"fdlist.sports", true},
    /* libs userspace/libsinsp/sinsp_filtercheck_fspath.cpp */
    {"fs.path.name", true},
    {"fs.path.nameraw", true},
    {"fs.path.source", true},
    {"fs.path.sourceraw", true},
    {"fs.path.target", true},
    {"fs.path.targetraw", true},
    /* libs userspace/libsinsp/sinsp_filtercheck_user.cpp */
    {"user.uid", false},
    {"user.name", false},
    {"user.homedir", false},
    {"user.shell", false},
    {"user.loginuid", false},
    {"user.loginname", false},
    /* libs userspace/libsinsp/sinsp_filtercheck_group.cpp */
    {"group.gid", false},
    {"group.name", false},
    /* libs userspace/libsinsp/sinsp_filtercheck_utils.cpp */
    {"util.cnt", true},
    /* plugins plugins/container/src/caps/extract/extract.cpp:96-420 */
    {"container.id", false},
    {"container.full_id", false},
    {"container.name", false},
    {"container.image", false},
    {"container.image.id", false},   /* Docker's Engine API gives it (container/docker.c) */
    {"container.type", false},
    {"container.privileged", false},
    {"container.mounts", false},
    {"container.mount[0]", false},
    {"container.mount.source[/data]", false},
    {"container.mount.dest[0]", false},
    {"container.mount.mode[0]", false},
    {"container.mount.rdwr[0]", false},
    {"container.mount.propagation[0]", false},
    {"container.image.repository", false},
    {"container.image.tag", false},
    {"container.image.digest", true},
    {"container.healthcheck", false},
    {"container.liveness_probe", false},
    {"container.readiness_probe", false},
    {"container.start_ts", false},
    {"container.duration", false},
    {"container.ip", true},
    {"container.cni.json", true},
    {"container.host_pid", true},
    {"container.host_network", true},
    {"container.host_ipc", true},
    {"container.label[app]", false},   /* Docker's Engine API gives it (container/docker.c) */
    {"container.labels", false},   /* Docker's Engine API gives it (container/docker.c) */
    {"proc.is_container_healthcheck", false},
    {"proc.is_container_liveness_probe", false},
    {"proc.is_container_readiness_probe", false},
    {"k8s.pod.name", false},
    {"k8s.ns.name", false},
    {"k8s.pod.id", false},
    {"k8s.pod.uid", false},
    {"k8s.pod.sandbox_id", false},
    {"k8s.pod.full_sandbox_id", false},
    {"k8s.pod.label.app", true},
    {"k8s.pod.labels", true},
    {"k8s.pod.ip", true},
    {"k8s.pod.cni.json", true},
    {"k8s.rc.name", false},
    {"k8s.rc.id", false},
    {"k8s.rc.label[a]", false},
    {"k8s.rc.labels", false},
    {"k8s.svc.name", false},
    {"k8s.svc.id", false},
    {"k8s.svc.label[a]", false},
    {"k8s.svc.labels", false},
    {"k8s.ns.id", false},
    {"k8s.ns.label[a]", false},
    {"k8s.ns.labels", false},
    {"k8s.rs.name", false},
    {"k8s.rs.id", false},
    {"k8s.rs.label[a]", false},
    {"k8s.rs.labels", false},
    {"k8s.deployment.name", false},
    {"k8s.deployment.id", false},
    {"k8s.deployment.label[a]", false},
    {"k8s.deployment.labels", false},
    /* plugins plugins/k8smeta/src/plugin.cpp:420-560 */
    {"k8smeta.pod.name", false},
    {"k8smeta.pod.uid", false},
    {"k8smeta.pod.label[app]", true},
    {"k8smeta.pod.labels", true},
    {"k8smeta.pod.ip", true},
    {"k8smeta.ns.name", false},
    {"k8smeta.ns.uid", true},
    {"k8smeta.ns.label[a]", true},
    {"k8smeta.ns.labels", true},
    {"k8smeta.deployment.name", true},
    {"k8smeta.deployment.uid", true},
    {"k8smeta.deployment.label[a]", true},
    {"k8smeta.deployment.labels", true},
    {"k8smeta.svc.name", true},
    {"k8smeta.svc.uid", true},
    {"k8smeta.svc.label[a]", true},
    {"k8smeta.svc.labels", true},
    {"k8smeta.rs.name", true},
    {"k8smeta.rs.uid", true},
    {"k8smeta.rs.label[a]", true},
    {"k8smeta.rs.labels", true},
    {"k8smeta.rc.name", true},
    {"k8smeta.rc.uid", true},
    {"k8smeta.rc.label[a]", true},
    {"k8smeta.rc.labels", true},
};

/* One rule per field, "f<N>": `evt.type = openat and FIELD exists`. */
static void test_every_upstream_field_is_known(void **state)
{
    (void)state;
    size_t n = sizeof(upstream) / sizeof(upstream[0]);
    struct strbuf text = {0};
    for (size_t i = 0; i < n; i++)
        strbuf_printf(&text, "- rule: f%zu\n  desc: d\n  condition: evt.type = openat and %s exists\n"
                      "  output: o\n  priority: Notice\n", i, upstream[i].field);
    assert_false(text.failed);
    struct rules_diag d = {0};
    struct rule_set *rs = rule_set_load_buffer("t.yaml", text.data, text.len, &d);
    if (!rs) {
        rules_diag_print(&d, stderr);
        fail_msg("the upstream fields did not load");
    }
    assert_int_equal(rule_set_rule_count(rs), n);
    size_t disabled = 0;
    for (size_t i = 0; i < n; i++) {
        bool off = false;
        struct rule_info info;
        rule_set_rule_info(rs, i, &info);
        const char *absent = rule_set_rule_absent(rs, i, &off);
        if (off != upstream[i].disabled || info.enabled == upstream[i].disabled)
            fail_msg("%s: %s, expected %s", upstream[i].field, off ? "disabled" : "enabled",
                     upstream[i].disabled ? "disabled" : "enabled");
        if (off && !absent)
            fail_msg("%s: disabled without naming the field", upstream[i].field);
        disabled += off;
    }
    assert_int_equal(d.warnings, disabled);   /* one warning per disabled rule */
    printf("%zu upstream fields: %zu run, %zu loaded disabled (gVisor and the node cannot feed them)\n", n,
           n - disabled, disabled);
    rule_set_free(rs);
    rules_diag_free(&d);
    strbuf_free(&text);
}

/* The issue's four: one such rule in a local file used to stop the daemon
 * (unknown field, exit 2). fd.types has no source in gVisor: disabled with
 * the warning. container.healthcheck, proc.is_container_healthcheck and
 * k8s.deployment.name are deprecated in Falco's container plugin, which
 * extracts nothing for them (extract.cpp:720-723, 893-917): the rules run
 * as in Falco, their comparisons false, `not` true. */
static void test_the_issues_fields(void **state)
{
    (void)state;
    const char *text =
        "- rule: std streams\n  desc: d\n  condition: evt.type = openat and fd.types[0] in (ipv4, ipv6)\n"
        "  output: o\n  priority: Notice\n"
        "- rule: not a healthcheck\n  desc: d\n  condition: evt.type = openat and not container.healthcheck "
        "contains curl and not proc.is_container_healthcheck = true\n  output: o\n  priority: Notice\n"
        "- rule: deployment\n  desc: d\n  condition: evt.type = openat and k8s.deployment.name = web\n"
        "  output: '%k8s.deployment.name %k8s.pod.label.app'\n  priority: Notice\n";
    struct rules_diag d = {0};
    struct rule_set *rs = rule_set_load_buffer("falco_rules.local.yaml", text, strlen(text), &d);
    assert_non_null(rs);
    assert_int_equal(d.errors, 0);
    assert_int_equal(d.warnings, 1);
    assert_non_null(strstr(d.items[0].message, "rule 'std streams' is disabled: its condition needs fields gVisor "
                                               "never reports: fd.types"));
    rules_diag_free(&d);
    struct rules_engine *e = engine_with(NULL);
    rules_engine_set_rules(e, rs);
    static Gvisor__Syscall__Open m;
    static Gvisor__Syscall__Exit x;
    gvisor__syscall__open__init(&m);
    gvisor__syscall__exit__init(&x);
    x.result = 3;
    m.context_data = mk_ctx(&CP, 7, "cat", 1700000000000000001);
    m.exit = &x;
    m.sysno = 257;
    m.fd = -100;
    m.pathname = (char *)"/etc/hosts";
    assert_int_equal(eval_count(e, evb_build(&B, 1, 7, 0, &m.base), &L), 1);
    assert_string_equal(L.items[0].rule, "not a healthcheck");
    rules_engine_free(e);
}

/* A falco_rules.local.yaml checked alone: Falco's error for the append
 * (rule_loading_messages.h), and once, what to do about it. With the file
 * it changes loaded first, it loads. */
static void test_local_file_alone_names_the_base_file(void **state)
{
    (void)state;
    const char *local = "- list: shell_binaries\n  items: [tcsh]\n  override: {items: append}\n"
                        "- macro: user_known_write_below_binary_dir_activities\n  condition: or (proc.name = x)\n"
                        "  override: {condition: append}\n"
                        "- rule: Read sensitive file untrusted\n  enabled: false\n";
    char out[4096];
    rules_errors(local, out, sizeof(out));
    assert_non_null(strstr(out, "t.yaml:1:9: error: list 'shell_binaries': List uses 'append' or "
                                "'override.items: append' but no list by that name already exists (no file loaded "
                                "before this one defines it: name the file that does first, in Falco's rules_files "
                                "order, e.g. seccheckd rules check falco_rules.yaml falco-incubating_rules.yaml "
                                "falco_rules.local.yaml)"));
    assert_non_null(strstr(out, "macro 'user_known_write_below_binary_dir_activities': Macro uses 'append'"));
    assert_non_null(strstr(out, "rule 'Read sensitive file untrusted': Rule has 'enabled' key but no rule"));
    const char *first = strstr(out, "name the file that does first");
    assert_null(strstr(first + 1, "name the file that does first"));   /* said once */

    char dir[64], base[128], loc[128];
    scratch_dir(dir);
    snprintf(base, sizeof(base), "%s/falco_rules.yaml", dir);
    snprintf(loc, sizeof(loc), "%s/falco_rules.local.yaml", dir);
    FILE *f = fopen(base, "w");
    assert_non_null(f);
    fputs("- list: shell_binaries\n  items: [sh]\n"
          "- macro: never_true\n  condition: (evt.num=0)\n"
          "- macro: user_known_write_below_binary_dir_activities\n  condition: (never_true)\n"
          "- rule: Read sensitive file untrusted\n  desc: d\n  condition: evt.type = openat and proc.name in "
          "(shell_binaries) and not user_known_write_below_binary_dir_activities\n  output: o\n  priority: WARNING\n",
          f);
    fclose(f);
    f = fopen(loc, "w");
    assert_non_null(f);
    fputs(local, f);
    fclose(f);
    const char *paths[] = {base, loc};
    struct rules_diag d = {0};
    struct rule_set *rs = rule_set_load(paths, 2, &d);
    if (!rs)
        rules_diag_print(&d, stderr);
    assert_non_null(rs);
    rule_set_free(rs);
    rules_diag_free(&d);
    scratch_dir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_upstream_field_is_known),
        cmocka_unit_test(test_the_issues_fields),
        cmocka_unit_test(test_local_file_alone_names_the_base_file),
    };
    return cmocka_run_group_tests(tests, rules_group_setup, rules_group_teardown);
}
