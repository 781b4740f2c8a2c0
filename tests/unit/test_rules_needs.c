/* test_rules_needs.c - what a rule needs from runsc (rules.h, rules/needs.c):
 * the points it matches (schematized, raw, sentry; enter only when it tests
 * evt.dir; gvisor.point narrowing), the points that keep the process table
 * for the proc.* fields it reads, the optional and context fields of each,
 * and the list the generator and `rules check --pod-init` work on. */
#include "rules_util.h"

/* "point[opt,...][ctx,...]why; ..." for every need of the set's rules. */
static const char *needs_of(const char *rules_text)
{
    static char out[8192];
    struct rule_set *rs = rules_ok(rules_text);
    struct rules_needs n = {0};
    for (size_t i = 0; i < rule_set_rule_count(rs); i++)
        assert_int_equal(rule_set_rule_needs(rs, i, &n), 0);
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n.count; i++) {
        const struct rules_need *p = &n.items[i];
        len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%s[", i ? "; " : "", p->point);
        for (unsigned b = 0; rules_optional_name(b); b++)
            if (p->optional >> b & 1)
                len += (size_t)snprintf(out + len, sizeof(out) - len, "%s,", rules_optional_name(b));
        len += (size_t)snprintf(out + len, sizeof(out) - len, "][");
        for (unsigned b = 0; rules_context_name(b); b++)
            if (p->context >> b & 1)
                len += (size_t)snprintf(out + len, sizeof(out) - len, "%s,", rules_context_name(b));
        len += (size_t)snprintf(out + len, sizeof(out) - len, "]%s%s%s", p->why & RULES_WHY_MATCHES ? "M" : "",
                                p->why & RULES_WHY_PROCESS ? "P" : "", p->why & RULES_WHY_RAW_CONTEXT ? "R" : "");
    }
    rules_needs_free(&n);
    rule_set_free(rs);
    return out;
}

static void expect_needs(const char *condition, const char *output, const char *want)
{
    char text[2048];
    snprintf(text, sizeof(text), "- rule: r\n  desc: d\n  condition: %s\n  output: '%s'\n  priority: Notice\n", condition,
             output);
    const char *got = needs_of(text);
    if (strcmp(got, want) != 0)
        fail_msg("%s / %s:\n got  %s\n want %s", condition, output, got, want);
}

static void test_points_matched(void **state)
{
    (void)state;
    /* exits only, unless the rule tests evt.dir; time and container always */
    expect_needs("evt.type = openat", "x", "syscall/openat/exit[][time,container_id,]M");
    expect_needs("evt.type in (open, openat) and evt.dir in (<, >)", "x",
                 "syscall/open/enter[][time,container_id,]M; syscall/open/exit[][time,container_id,]M; "
                 "syscall/openat/enter[][time,container_id,]M; syscall/openat/exit[][time,container_id,]M");
    expect_needs("evt.type = setuid and evt.dir = >", "x", "syscall/setuid/enter[][time,container_id,]M");
    expect_needs("evt.type = setuid and not evt.dir = >", "x", "syscall/setuid/exit[][time,container_id,]M");
    /* gvisor.point narrows, a point's own name too */
    expect_needs("evt.type = openat and evt.dir in (<, >) and gvisor.point endswith /enter", "x",
                 "syscall/openat/enter[][time,container_id,]M");
    /* no schematized point: the raw one, its enter for the context fields */
    expect_needs("evt.type = unshare", "x",
                 "syscall/sysno/272/enter[][time,container_id,]R; syscall/sysno/272/exit[][time,container_id,]M");
    expect_needs("evt.type = ptrace and evt.dir = >", "x", "syscall/sysno/101/enter[][time,container_id,]M");
    /* the process-level views; the syscall's exit only where gvisor.point names it */
    expect_needs("evt.type = execve", "x", "sentry/execve[][time,container_id,]M");
    expect_needs("evt.type = clone", "x", "sentry/clone[][time,container_id,]M");
    expect_needs("evt.type = execve and gvisor.point = syscall/execve/exit", "x",
                 "syscall/execve/exit[][time,container_id,]M");
    expect_needs("evt.type = procexit", "x", "sentry/task_exit[][time,container_id,]M");
    expect_needs("evt.type = container", "x", "container/start[][time,container_id,]M");
    /* a rule that does not restrict evt.type needs no particular point; nor a disabled one */
    expect_needs("evt.dropped > 0", "x", "");
    assert_string_equal(needs_of("- rule: r\n  desc: d\n  condition: evt.type = openat\n  output: x\n"
                                 "  priority: Notice\n  enabled: false\n"),
                        "");
}

static void test_fields_read(void **state)
{
    (void)state;
    /* fd.name: fd_path where the point offers it, the cwd for relative paths */
    expect_needs("evt.type in (open, openat) and fd.name = /etc/shadow", "x",
                 "syscall/open/exit[][time,container_id,cwd,]M; syscall/openat/exit[fd_path,][time,container_id,cwd,]M");
    expect_needs("evt.type = dup2 and fd.typechar = 4", "x", "syscall/dup2/exit[fd_path,][time,container_id,]M");
    /* the output's fields count as much as the condition's */
    expect_needs("evt.type = chroot", "%user.uid %proc.pid %proc.tid",
                 "syscall/chroot/exit[][time,thread_id,group_id,thread_group_start_time,container_id,credentials,]M");
    /* evt.arg names the optional field it reads, per point */
    expect_needs("evt.type = execveat and evt.arg.envv contains LD_PRELOAD", "x",
                 "syscall/execveat/exit[envv,][time,container_id,]M");
    expect_needs("evt.type = container", "%evt.arg.env", "container/start[env,][time,container_id,]M");
    expect_needs("evt.type = execve", "%evt.arg.binary_sha256", "sentry/execve[binary_info,][time,container_id,]M");
    expect_needs("evt.type = dup", "%evt.arg.fd_path", "syscall/dup/exit[fd_path,][time,container_id,]M");
    /* proc.name at an exec: the path given to execve, from the enter points */
    expect_needs("evt.type = execve and proc.name = nc", "x",
                 "sentry/execve[][time,group_id,thread_group_start_time,container_id,process_name,]M; "
                 "syscall/execve/enter[][group_id,thread_group_start_time,]P; "
                 "syscall/execveat/enter[][group_id,thread_group_start_time,]P");
    /* elsewhere it is the context's */
    expect_needs("evt.type = openat and proc.name = cat", "x",
                 "syscall/openat/exit[][time,group_id,thread_group_start_time,container_id,process_name,]M");
    /* parents: the points that keep the table */
    expect_needs("evt.type = openat and proc.pname = sh", "x",
                 "container/start[][thread_id,group_id,thread_group_start_time,process_name,]P; "
                 "sentry/clone[][thread_id,group_id,thread_group_start_time,process_name,]P; "
                 "sentry/execve[][thread_id,group_id,thread_group_start_time,process_name,]P; "
                 "sentry/task_exit[][thread_id,group_id,thread_group_start_time,process_name,]P; "
                 "syscall/openat/exit[][time,group_id,thread_group_start_time,container_id,]M");
    /* an exec path joined to the cwd */
    expect_needs("evt.type = procexit", "%proc.exepath",
                 "container/start[][thread_id,group_id,thread_group_start_time,cwd,process_name,]P; "
                 "sentry/clone[][thread_id,group_id,thread_group_start_time,cwd,process_name,]P; "
                 "sentry/execve[][thread_id,group_id,thread_group_start_time,cwd,process_name,]P; "
                 "sentry/task_exit[][time,thread_id,group_id,thread_group_start_time,container_id,cwd,process_name,]MP");
}

static void test_merged_over_rules(void **state)
{
    (void)state;
    const char *two = "- rule: a\n  desc: d\n  condition: evt.type = openat and fd.name = /x\n  output: x\n"
                      "  priority: Notice\n"
                      "- rule: b\n  desc: d\n  condition: evt.type = openat and user.uid = 0\n  output: x\n"
                      "  priority: Notice\n";
    assert_string_equal(needs_of(two), "syscall/openat/exit[fd_path,][time,group_id,thread_group_start_time,"
                                       "container_id,credentials,cwd,]M");
}

static void test_names_and_offers(void **state)
{
    (void)state;
    for (unsigned b = 0; rules_optional_name(b); b++)
        assert_int_equal(rules_optional_parse(rules_optional_name(b)), 1u << b);
    for (unsigned b = 0; rules_context_name(b); b++)
        assert_int_equal(rules_context_parse(rules_context_name(b)), 1u << b);
    assert_null(rules_optional_name(RULES_OPT_COUNT));
    assert_null(rules_context_name(RULES_CTX_COUNT));
    assert_int_equal(rules_optional_parse("fd_pathx"), 0);
    assert_int_equal(rules_context_parse("pid"), 0);
    assert_int_equal(RULES_CTX_ALL, 0x7ff);
    assert_int_equal(RULES_CTX_2022, 0x1ff);   /* what runsc 2022-12 lists */
    /* as `runsc trace metadata` lists them: runsc 2022-12's */
    assert_int_equal(rules_point_optional("syscall/openat/exit"), RULES_OPT_FD_PATH);
    assert_int_equal(rules_point_optional("syscall/open/enter"), 0);
    assert_int_equal(rules_point_optional("syscall/creat/exit"), RULES_OPT_FD_PATH);
    assert_int_equal(rules_point_optional("syscall/execveat/enter"), RULES_OPT_FD_PATH | RULES_OPT_ENVV);
    /* and the 2026 releases' (pkg/sentry/seccheck/metadata.go:262, metadata_amd64.go:42,104 at 3c5eee17d) */
    assert_int_equal(rules_point_optional("sentry/execve"), RULES_OPT_BINARY_INFO | RULES_OPT_BINARY_SHA256 |
                                                                RULES_OPT_BINARY_SHA1 | RULES_OPT_FD_INFO |
                                                                RULES_OPT_PIPE_PROC_INFO);
    assert_int_equal(rules_point_optional("syscall/mmap/exit"), RULES_OPT_FD_PATH);
    assert_int_equal(rules_point_optional("syscall/listen/enter"), RULES_OPT_FD_PATH);
    assert_int_equal(rules_point_optional("syscall/ptrace/exit"), 0);
    assert_int_equal(rules_point_optional("container/start"), RULES_OPT_ENV);
    assert_int_equal(rules_point_optional("syscall/sysno/0/exit"), 0);
    assert_int_equal(rules_point_optional("syscall/openat/middle"), 0);
    assert_int_equal(rules_point_optional("syscall/"), 0);
    assert_int_equal(rules_point_optional("openat/exit"), 0);
}

static void test_needs_list(void **state)
{
    (void)state;
    struct rules_needs n = {0};
    assert_int_equal(rules_needs_add(&n, "syscall/openat/exit", RULES_OPT_FD_PATH, RULES_CTX_TIME, RULES_WHY_MATCHES), 0);
    assert_int_equal(rules_needs_add(&n, "container/start", 0, RULES_CTX_CWD, RULES_WHY_PROCESS), 0);
    assert_int_equal(rules_needs_add(&n, "syscall/openat/exit", 0, RULES_CTX_CWD, RULES_WHY_PROCESS), 0);
    char longname[RULES_POINT_MAX + 1];
    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    assert_int_equal(rules_needs_add(&n, longname, 0, 0, 0), -1);
    for (int i = 0; i < 100; i++) {   /* grows past its first capacity, stays sorted */
        char p[32];
        snprintf(p, sizeof(p), "syscall/sysno/%d/exit", 99 - i);
        assert_int_equal(rules_needs_add(&n, p, 0, 0, RULES_WHY_MATCHES), 0);
    }
    assert_int_equal(n.count, 102);
    for (size_t i = 1; i < n.count; i++)
        assert_true(strcmp(n.items[i - 1].point, n.items[i].point) < 0);
    const struct rules_need *o = rules_needs_find(&n, "syscall/openat/exit");
    assert_non_null(o);
    assert_int_equal(o->optional, RULES_OPT_FD_PATH);
    assert_int_equal(o->context, RULES_CTX_TIME | RULES_CTX_CWD);
    assert_int_equal(o->why, RULES_WHY_MATCHES | RULES_WHY_PROCESS);
    assert_null(rules_needs_find(&n, "syscall/openat/enter"));
    rules_needs_free(&n);
    assert_int_equal(n.count, 0);
}

/* The fields Falco's rules use (issue 25): what each needs kept. */
static void test_falco_fields_needs(void **state)
{
    (void)state;
    /* proc.env: the environment comes with sentry/execve always, with container/start when asked */
    expect_needs("evt.type = openat and proc.env contains X", "x",
                 "container/start[env,][thread_id,group_id,thread_group_start_time,process_name,]P; "
                 "sentry/clone[][thread_id,group_id,thread_group_start_time,process_name,]P; "
                 "sentry/execve[][thread_id,group_id,thread_group_start_time,process_name,]P; "
                 "sentry/task_exit[][thread_id,group_id,thread_group_start_time,process_name,]P; "
                 "syscall/openat/exit[][time,group_id,thread_group_start_time,container_id,]M");
    /* session and process group: setsid, and setpgid's raw points */
    expect_needs("evt.type = openat and proc.is_vpgid_leader = true", "x",
                 "container/start[][thread_id,group_id,thread_group_start_time,process_name,]P; "
                 "sentry/clone[][thread_id,group_id,thread_group_start_time,process_name,]P; "
                 "sentry/execve[][thread_id,group_id,thread_group_start_time,process_name,]P; "
                 "sentry/task_exit[][thread_id,group_id,thread_group_start_time,process_name,]P; "
                 "syscall/openat/exit[][time,group_id,thread_group_start_time,container_id,]M; "
                 "syscall/setsid/exit[][group_id,thread_group_start_time,]P; "
                 "syscall/sysno/109/enter[][group_id,thread_group_start_time,]R; "
                 "syscall/sysno/109/exit[][group_id,thread_group_start_time,]P");
    /* fd.type on dup: the sockets the process holds */
    const char *got = needs_of("- rule: r\n  desc: d\n  condition: evt.type = dup2 and fd.type = ipv4\n  output: x\n"
                               "  priority: Notice\n");
    static const char *const socket_points[] = {"syscall/socket/exit[]", "syscall/accept4/exit[]",
                                                "syscall/connect/exit[]", "syscall/close/exit[]",
                                                "syscall/dup2/exit[fd_path,][time,group_id"};
    for (size_t i = 0; i < sizeof(socket_points) / sizeof(socket_points[0]); i++)
        if (!strstr(got, socket_points[i]))
            fail_msg("%s not in %s", socket_points[i], got);
    /* evt.arg under Falco's name: the process and cwd, fd_path for an fd */
    expect_needs("evt.type = close and evt.arg.fd startswith '<f>/etc'", "x",
                 "syscall/close/exit[fd_path,][time,group_id,thread_group_start_time,container_id,cwd,]M");
    /* a protobuf name alone: as before */
    expect_needs("evt.type = close and evt.arg.fd_path startswith /etc", "x",
                 "syscall/close/exit[fd_path,][time,container_id,]M");
    /* fields gVisor never reports: the rule is off, it needs nothing */
    expect_needs("evt.type = read and evt.buffer contains x", "x", "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_points_matched),
        cmocka_unit_test(test_fields_read),
        cmocka_unit_test(test_merged_over_rules),
        cmocka_unit_test(test_names_and_offers),
        cmocka_unit_test(test_needs_list),
        cmocka_unit_test(test_falco_fields_needs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
