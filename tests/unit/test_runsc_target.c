/* test_runsc_target.c - what one runsc has (rules/runsc_target.c) and what
 * a rule needs of it (rules/needs.c): `runsc trace metadata` read (runsc
 * 2022-12's real output and release-20260817.0's, tests/fixtures/runsc/),
 * the built-in 2022-12 set equal to the real one, the release a target
 * shows, an event type mapped to the point a target has, the warnings for
 * what it lacks, and hostile or broken metadata and runsc binaries. */
#include "rules_util.h"

#include <sys/stat.h>

#include "reaper.h"
#include "runsc_target.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/seccheckd-runsc-XXXXXX");
    return reaper_mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    reaper_remove(dir);
    return reaper_clear();
}

static char *read_whole(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    static char buf[1 << 20];
    *len = fread(buf, 1, sizeof(buf) - 1, fp);
    fclose(fp);
    buf[*len] = '\0';
    return buf;
}

static void load_fixture(struct runsc_target *t, const char *name)
{
    char path[512], err[512];
    snprintf(path, sizeof(path), "%s/%s", RUNSC_FIXTURES, name);
    size_t len;
    char *text = read_whole(path, &len);
    if (runsc_target_parse(t, name, text, len, err, sizeof(err)) != 0)
        fail_msg("%s", err);
}

/* "opt,..|ctx,.." of a target's point, or "-" when it lacks it. */
static const char *point_text(const struct runsc_target *t, const char *point)
{
    static char out[512];
    const struct rules_need *p = runsc_target_point(t, point);
    if (!p)
        return "-";
    size_t n = 0;
    out[0] = '\0';
    for (unsigned b = 0; rules_optional_name(b); b++)
        if (p->optional >> b & 1)
            n += (size_t)snprintf(out + n, sizeof(out) - n, "%s,", rules_optional_name(b));
    n += (size_t)snprintf(out + n, sizeof(out) - n, "|");
    for (unsigned b = 0; rules_context_name(b); b++)
        if (p->context >> b & 1)
            n += (size_t)snprintf(out + n, sizeof(out) - n, "%s,", rules_context_name(b));
    return out;
}

static void test_real_2022_and_built_in(void **state)
{
    (void)state;
    struct runsc_target real, built;
    load_fixture(&real, "metadata-20221219.txt");
    assert_int_equal(runsc_target_2022(&built), 0);
    /* POINTS (991): the built-in set is exactly what runsc 0.0~20221219 prints */
    assert_int_equal(real.points.count, 991);
    assert_int_equal(built.points.count, real.points.count);
    for (size_t i = 0; i < real.points.count; i++) {
        const struct rules_need *r = &real.points.items[i], *b = &built.points.items[i];
        if (strcmp(r->point, b->point) != 0 || r->optional != b->optional || r->context != b->context)
            fail_msg("%s vs built in %s", r->point, b->point);
    }
    assert_int_equal(real.release, RULES_RUNSC_2022_12);
    assert_int_equal(built.release, RULES_RUNSC_2022_12);
    assert_string_equal(point_text(&real, "syscall/openat/exit"),
                        "fd_path,|time,thread_id,task_start_time,group_id,thread_group_start_time,container_id,"
                        "credentials,cwd,process_name,");
    assert_string_equal(point_text(&real, "sentry/execve"),
                        "binary_info,|time,thread_id,task_start_time,group_id,thread_group_start_time,container_id,"
                        "credentials,cwd,process_name,");
    assert_string_equal(point_text(&real, "syscall/sysno/441/exit") + 0, point_text(&real, "syscall/sysno/0/enter"));
    assert_string_equal(point_text(&real, "syscall/sysno/442/exit"), "-");
    assert_string_equal(point_text(&real, "sentry/mmap"), "-");
    assert_string_equal(point_text(&real, "syscall/ptrace/exit"), "-");
    runsc_target_free(&real);
    runsc_target_free(&built);
}

static void test_release_20260817(void **state)
{
    (void)state;
    struct runsc_target t;
    load_fixture(&t, "metadata-20260817.txt");
    assert_int_equal(t.release, RULES_RUNSC_20260817);
    assert_string_equal(point_text(&t, "sentry/execve"),
                        "binary_info,binary_sha256,binary_sha1,fd_info,pipe_proc_info,|time,thread_id,"
                        "task_start_time,group_id,thread_group_start_time,container_id,credentials,cwd,process_name,"
                        "parent_thread_group_id,is_exec_session,");
    /* pkg/sentry/seccheck/metadata.go:289 at 3c5eee17d: its own list, no cwd */
    assert_string_equal(point_text(&t, "sentry/exit_notify_parent"),
                        "|time,thread_id,task_start_time,group_id,thread_group_start_time,container_id,credentials,"
                        "process_name,parent_thread_group_id,");
    assert_string_equal(point_text(&t, "syscall/listen/exit") + 0, point_text(&t, "syscall/mmap/enter"));
    assert_string_equal(point_text(&t, "syscall/ptrace/exit"),
                        "|time,thread_id,task_start_time,group_id,thread_group_start_time,container_id,credentials,cwd,"
                        "process_name,parent_thread_group_id,is_exec_session,");
    runsc_target_free(&t);
}

/* The release a metadata shows, from the one point or field that came with it. */
static void test_release_shown(void **state)
{
    (void)state;
    static const char ctx9[] = "time|thread_id|task_start_time|group_id|thread_group_start_time|container_id|"
                               "credentials|cwd|process_name";
    static const struct {
        const char *line;
        unsigned release;
    } cases[] = {
        {"Name: sentry/clone, optional fields: [], context fields: [%s]", RULES_RUNSC_2022_12},
        {"Name: sentry/clone, optional fields: [], context fields: [%s|parent_thread_group_id]", RULES_RUNSC_20260525},
        {"Name: sentry/mmap, optional fields: [], context fields: [%s]", RULES_RUNSC_20260714},
        {"Name: sentry/clone, optional fields: [], context fields: [%s|is_exec_session]", RULES_RUNSC_20260721},
        {"Name: sentry/execve, optional fields: [binary_info|fd_info], context fields: [%s]", RULES_RUNSC_20260721},
        {"Name: syscall/mmap/exit, optional fields: [fd_path], context fields: [%s]", RULES_RUNSC_20260721},
        {"Name: syscall/listen/exit, optional fields: [fd_path], context fields: [%s]", RULES_RUNSC_20260727},
        {"Name: syscall/ptrace/exit, optional fields: [], context fields: [%s]", RULES_RUNSC_20260727},
        {"Name: sentry/execve, optional fields: [binary_sha1], context fields: [%s]", RULES_RUNSC_20260727},
        {"Name: sentry/execve, optional fields: [pipe_proc_info], context fields: [%s]", RULES_RUNSC_20260817},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[1024], err[256];
        const char *hole = strstr(cases[i].line, "%s");
        int n = snprintf(text, sizeof(text), "%.*s%s%s", (int)(hole - cases[i].line), cases[i].line, ctx9, hole + 2);
        struct runsc_target t;
        assert_int_equal(runsc_target_parse(&t, "m", text, (size_t)n, err, sizeof(err)), 0);
        if (t.release != cases[i].release)
            fail_msg("%s: release %u, expected %u", text, t.release, cases[i].release);
        runsc_target_free(&t);
    }
}

static void test_hostile_metadata(void **state)
{
    (void)state;
    char err[256];
    struct runsc_target t;
    /* nothing that is a point */
    static const char *const none[] = {
        "", "hello\n", "POINTS (0)\n\nSINKS (1)\nName: remote\n",
        "Name: sentry/clone, optional fields: [], context fields: [time", /* cut short */
        "Name: , optional fields: [], context fields: []\n",
    };
    for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
        assert_int_equal(runsc_target_parse(&t, "m.txt", none[i], strlen(none[i]), err, sizeof(err)), -1);
        assert_non_null(strstr(err, "m.txt: no point in it (expected what `runsc trace metadata` prints"));
    }
    /* unknown names kept out; a name too long for any point; NUL bytes */
    static const char odd[] = "Name: sentry/clone, optional fields: [frobnicate|env], context fields: [time|"
                              "brain_waves|cwd]\nName: syscall/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                              "/exit, optional fields: [], context fields: []\n\0\0Name: x";
    assert_int_equal(runsc_target_parse(&t, "m", odd, sizeof(odd) - 1, err, sizeof(err)), 0);
    assert_int_equal(t.points.count, 1);
    assert_string_equal(point_text(&t, "sentry/clone"), "env,|time,cwd,");
    runsc_target_free(&t);
    /* more points than any runsc has */
    size_t cap = (RUNSC_METADATA_MAX_POINTS + 1) * 64, len = 0;
    char *big = malloc(cap);
    assert_non_null(big);
    for (int i = 0; i <= RUNSC_METADATA_MAX_POINTS; i++)
        len += (size_t)snprintf(big + len, cap - len, "Name: p/%d, optional fields: [], context fields: []\n", i);
    assert_int_equal(runsc_target_parse(&t, "m", big, len, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "m: more than 20000 points: not what runsc prints"));
    free(big);
}

static const char *script(const char *name, const char *body)
{
    static char path[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(path[k], sizeof(path[k]), "%s/%s", dir, name);
    FILE *fp = fopen(path[k], "w");
    assert_non_null(fp);
    fprintf(fp, "#!/bin/sh\n%s\n", body);
    fclose(fp);
    assert_int_equal(chmod(path[k], 0755), 0);
    return path[k];
}

static void test_running_runsc(void **state)
{
    (void)state;
    struct runsc_target t;
    char err[512], body[1024];
    /* a runsc that answers: its version names it */
    snprintf(body, sizeof(body), "[ \"$1\" = --version ] && { echo 'runsc version test-1'; echo 'spec: 1'; exit 0; }\n"
             "[ \"$1 $2\" = 'trace metadata' ] && exec cat %s/metadata-20260817.txt\nexit 9", RUNSC_FIXTURES);
    const char *good = script("runsc-good", body);
    assert_int_equal(runsc_target_run(&t, good, err, sizeof(err)), 0);
    char want[512];
    snprintf(want, sizeof(want), "%s (runsc version test-1)", good);
    assert_string_equal(t.label, want);
    assert_int_equal(t.release, RULES_RUNSC_20260817);
    runsc_target_free(&t);
    /* one that fails: its exit code and the first line it printed */
    const char *bad = script("runsc-bad", "echo 'flag provided but not defined: -x' >&2; echo more >&2; exit 3");
    assert_int_equal(runsc_target_run(&t, bad, err, sizeof(err)), -1);
    snprintf(want, sizeof(want), "%s trace metadata exited with 3: flag provided but not defined: -x", bad);
    assert_string_equal(err, want);
    /* one that does not stop talking: cut at the bound, killed */
    const char *chatty = script("runsc-chatty", "exec yes 'Name: x, optional fields: [], context fields: []'");
    assert_int_equal(runsc_target_run(&t, chatty, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "trace: printed more than a runsc's metadata can be"));
    /* one that hangs, its output open or closed: killed at the deadline */
    const char *hang = script("runsc-hang", "[ \"$1\" = --version ] && exit 1; exec sleep 30");
    assert_int_equal(runsc_target_run_within(&t, hang, 300, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "trace: took too long"));
    const char *quiet = script("runsc-quiet", "exec >&- 2>&-; exec sleep 30");
    assert_int_equal(runsc_target_run_within(&t, quiet, 300, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "trace: took too long"));
    /* none there */
    assert_int_equal(runsc_target_run(&t, "/nonexistent/runsc", err, sizeof(err)), -1);
    assert_string_equal(err, "cannot run /nonexistent/runsc: No such file or directory");
    /* resolve: 2022-12 built in; a saved metadata file; its errors */
    assert_int_equal(runsc_target_resolve(&t, "2022-12", NULL, err, sizeof(err)), 0);
    assert_string_equal(t.label, "runsc 2022-12 (0.0~20221219, built in)");
    runsc_target_free(&t);
    assert_int_equal(runsc_target_resolve(&t, NULL, RUNSC_FIXTURES "/metadata-20221219.txt", err, sizeof(err)), 0);
    assert_int_equal(t.points.count, 991);
    runsc_target_free(&t);
    assert_int_equal(runsc_target_resolve(&t, NULL, "/nonexistent.txt", err, sizeof(err)), -1);
    assert_string_equal(err, "cannot open /nonexistent.txt: No such file or directory");
}

/* ---- what rules need of a target ---- */

static const char *needs_on(const char *rules_text, const struct runsc_target *t, unsigned parts)
{
    static char out[8192];
    struct rule_set *rs = rules_ok(rules_text);
    struct rules_needs n = {0};
    for (size_t i = 0; i < rule_set_rule_count(rs); i++)
        assert_int_equal(rule_set_rule_needs_on(rs, i, t, parts, &n), 0);
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n.count; i++) {
        const struct rules_need *p = &n.items[i];
        len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%s[", i ? "; " : "", p->point);
        for (unsigned b = 0; rules_optional_name(b); b++)
            if (p->optional >> b & 1)
                len += (size_t)snprintf(out + len, sizeof(out) - len, "%s,", rules_optional_name(b));
        len += (size_t)snprintf(out + len, sizeof(out) - len, "]");
        if (p->context & (RULES_CTX_PARENT_THREAD_GROUP_ID | RULES_CTX_IS_EXEC_SESSION | RULES_CTX_CREDENTIALS))
            len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%s%s",
                                    p->context & RULES_CTX_CREDENTIALS ? "+creds" : "",
                                    p->context & RULES_CTX_PARENT_THREAD_GROUP_ID ? "+ppid" : "",
                                    p->context & RULES_CTX_IS_EXEC_SESSION ? "+session" : "");
        if (p->release)
            len += (size_t)snprintf(out + len, sizeof(out) - len, "@%s(%s)", rules_runsc_release_name(p->release),
                                    p->release_field);
    }
    rules_needs_free(&n);
    rule_set_free(rs);
    return out;
}

static const char *rule(const char *condition, const char *output)
{
    static char text[2048];
    snprintf(text, sizeof(text), "- rule: r\n  desc: d\n  condition: %s\n  output: '%s'\n  priority: Notice\n",
             condition, output);
    return text;
}

static void test_needs_by_target(void **state)
{
    (void)state;
    struct runsc_target old, now;
    assert_int_equal(runsc_target_2022(&old), 0);
    load_fixture(&now, "metadata-20260817.txt");
    /* ptrace: the raw point (and its enter) on 2022-12, the schematized one
     * after; the raw point has numbers only, so a rule reading the request
     * by name alone needs the release that brought syscall/ptrace */
    const char *r = rule("evt.type = ptrace and evt.arg.request = PTRACE_ATTACH", "x");
    static const char *const raw_newer = "syscall/sysno/101/enter[]; syscall/sysno/101/exit[]@release-20260727.0"
                                         "(Falco's arguments by name, which its raw point lacks)";
    assert_string_equal(needs_on(r, &old, RULES_NEED_ALL), raw_newer);
    assert_string_equal(needs_on(r, NULL, RULES_NEED_ALL), raw_newer);
    /* with the raw arguments as its alternative (the default rule), no release */
    r = rule("evt.type = ptrace and (evt.arg.request = PTRACE_ATTACH or evt.arg.arg1 = 16)", "x");
    assert_string_equal(needs_on(r, &old, RULES_NEED_ALL), "syscall/sysno/101/enter[]; syscall/sysno/101/exit[]");
    r = rule("evt.type = ptrace and evt.arg.request = PTRACE_ATTACH", "x");
    assert_string_equal(needs_on(r, &now, RULES_NEED_ALL), "syscall/ptrace/exit[]");
    r = rule("evt.type in (mmap, listen) and fd.name exists", "x");
    assert_string_equal(needs_on(r, &now, RULES_NEED_ALL), "syscall/listen/exit[fd_path,]; syscall/mmap/exit[fd_path,]");
    assert_string_equal(needs_on(r, &old, RULES_NEED_ALL),
                        "syscall/sysno/50/enter[]; syscall/sysno/50/exit[]; syscall/sysno/9/enter[]; "
                        "syscall/sysno/9/exit[]");
    /* an image fact: sentry/execve's binary_info, the credentials for
     * is_exe_writable, and the release its field needs */
    r = rule("evt.type = execve and proc.is_exe_upper_layer = true", "x");
    assert_string_equal(needs_on(r, &now, RULES_NEED_ALL),
                        "container/start[]; sentry/clone[]; "
                        "sentry/execve[binary_info,]+creds@release-20260714.0(proc.is_exe_upper_layer); "
                        "sentry/task_exit[]");
    /* the streams and the pipe peers: fd_info and pipe_proc_info; a parent
     * field asks for parent_thread_group_id where runsc has it */
    r = rule("evt.type = connect and proc.stdin.type = ipv4 and gvisor.pipe_input.name = curl", "%proc.pname");
    assert_string_equal(needs_on(r, &now, RULES_NEED_ALL),
                        "container/start[]+ppid; sentry/clone[]+ppid; "
                        "sentry/execve[fd_info,pipe_proc_info,]+ppid@release-20260817.0(gvisor.pipe_input.name); "
                        "sentry/task_exit[]+ppid; syscall/connect/exit[]+ppid@release-20260817.0(gvisor.pipe_input.name)");
    /* on 2022-12 (NULL), only its fields */
    assert_string_equal(needs_on(r, NULL, RULES_NEED_ALL),
                        "container/start[]; sentry/clone[]; sentry/execve[]@release-20260817.0(gvisor.pipe_input.name); "
                        "sentry/task_exit[]; syscall/connect/exit[]@release-20260817.0(gvisor.pipe_input.name)");
    /* an output field's release does not count for what the rule needs */
    r = rule("evt.type = execve", "%proc.exe_ino");
    assert_string_equal(needs_on(r, &now, RULES_NEED_CONDITION), "sentry/execve[]");
    runsc_target_free(&old);
    runsc_target_free(&now);
}

static const char *warnings(const char *rules_text, const struct runsc_target *t, size_t *count)
{
    static char out[8192];
    struct rule_set *rs = rules_ok(rules_text);
    memset(out, 0, sizeof(out));
    FILE *fp = fmemopen(out, sizeof(out), "w");
    assert_non_null(fp);
    *count = 0;
    for (size_t i = 0; i < rule_set_rule_count(rs); i++) {
        struct rules_needs n = {0};
        assert_int_equal(rule_set_rule_needs_on(rs, i, t, RULES_NEED_CONDITION, &n), 0);
        struct rule_info info;
        rule_set_rule_info(rs, i, &info);
        *count += runsc_target_warn(t, info.file, info.line, false, info.name, &n, fp);
        rules_needs_free(&n);
    }
    fclose(fp);
    rule_set_free(rs);
    return out;
}

static void test_warnings(void **state)
{
    (void)state;
    struct runsc_target old, now;
    assert_int_equal(runsc_target_2022(&old), 0);
    load_fixture(&now, "metadata-20260817.txt");
    size_t n;
    const char *w = warnings(rule("evt.type = sentry_mmap and fd.is_upper_layer = true", "x"), &old, &n);
    assert_string_equal(w, "t.yaml:1: warning: rule 'r' needs a newer runsc than runsc 2022-12 (0.0~20221219, built "
                           "in): the point sentry/mmap (runsc release-20260714.0 on)\n"
                           "t.yaml:1: warning: rule 'r' needs a newer runsc than runsc 2022-12 (0.0~20221219, built "
                           "in): it reads fd.is_upper_layer (runsc release-20260727.0 on)\n");
    assert_int_equal(n, 2);
    /* a field whose release the missing point or field already says: once */
    w = warnings(rule("evt.type = execve and gvisor.exec_session = true", "x"), &old, &n);
    assert_string_equal(w, "t.yaml:1: warning: rule 'r' needs a newer runsc than runsc 2022-12 (0.0~20221219, built "
                           "in): the context field is_exec_session at sentry/execve (runsc release-20260721.0 on)\n");
    /* parent_thread_group_id is best effort: never missing */
    w = warnings(rule("evt.type = execve and proc.pname = sh", "x"), &old, &n);
    assert_string_equal(w, "");
    /* what the newest target has: nothing to say */
    w = warnings(rule("evt.type = sentry_mmap and fd.is_upper_layer = true and gvisor.exec_session = true", "x"), &now,
                 &n);
    assert_int_equal(n, 0);
    /* what a runsc dropped (release-20260817.0's exit_notify_parent has no cwd) */
    w = warnings(rule("evt.type = exit_notify_parent and proc.cwd = /", "x"), &now, &n);
    assert_string_equal(w, "t.yaml:1: warning: rule 'r' needs what metadata-20260817.txt does not have: the context "
                           "field cwd at sentry/exit_notify_parent\n");
    /* keep: only what the target has */
    struct rule_set *rs = rules_ok(rule("evt.type = execve and gvisor.exec_session = true", "%proc.stdin.name"));
    struct rules_needs all = {0}, kept = {0};
    assert_int_equal(rule_set_rule_needs_on(rs, 0, &now, RULES_NEED_ALL, &all), 0);
    assert_int_equal(runsc_target_keep(&old, &all, &kept), 0);
    const struct rules_need *ex = rules_needs_find(&kept, "sentry/execve");
    assert_non_null(ex);
    assert_int_equal(ex->optional, 0);
    assert_int_equal(ex->context & ~RULES_CTX_2022, 0);
    rules_needs_free(&all);
    rules_needs_free(&kept);
    rule_set_free(rs);
    runsc_target_free(&old);
    runsc_target_free(&now);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_2022_and_built_in),
        cmocka_unit_test(test_release_20260817),
        cmocka_unit_test(test_release_shown),
        cmocka_unit_test(test_hostile_metadata),
        cmocka_unit_test_setup_teardown(test_running_runsc, setup, teardown),
        cmocka_unit_test(test_needs_by_target),
        cmocka_unit_test(test_warnings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
