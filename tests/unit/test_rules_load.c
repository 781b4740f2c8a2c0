/* test_rules_load.c - rules files (rules/load*.c): Falco's item kinds,
 * append and override for lists, macros and rules, redefinition in place,
 * exceptions, directories in name order (*.yaml and *.yml), files that are
 * not regular files refused without blocking, a UTF-8 BOM, the bounds on
 * what lists multiply into, nesting to RULES_MAX_NESTING (with the stack it
 * takes), and every error with its exact file:line:column. Falco's own
 * loader tests, case by case: test_falco_loader.c. */
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "rules_util.h"

/* execve("/bin/<name>") exit by <name>, tgid 20, in container c1. */
static const struct event *exec_event(const char *name, const char *arg1)
{
    static struct ctx_parts cp;
    static Gvisor__Syscall__Execve m;
    static Gvisor__Syscall__Exit x;
    static char path[64];
    static char *argv[2];
    gvisor__syscall__execve__init(&m);
    gvisor__syscall__exit__init(&x);
    snprintf(path, sizeof(path), "/bin/%s", name);
    argv[0] = (char *)name;
    argv[1] = (char *)arg1;
    m.context_data = mk_ctx(&cp, 20, name, 1700000000000000001);
    m.exit = &x;
    m.sysno = 59;
    m.pathname = path;
    m.argv = argv;
    m.n_argv = 2;
    return evb_build(&B, 1, 11, 0, &m.base);
}

/* The rule names that alert on ev, comma separated. */
static const char *fired(struct rules_engine *e, const struct event *ev)
{
    static char names[1024];
    names[0] = '\0';
    eval_count(e, ev, &L);
    for (size_t i = 0; i < L.count; i++)
        snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? "," : "", L.items[i].rule);
    return names;
}

/* One file with one error: the whole report must contain want. */
static void expect_error(const char *text, const char *want)
{
    char out[8192];
    rules_errors(text, out, sizeof(out));
    if (!strstr(out, want))
        fail_msg("expected '%s' in:\n%s", want, out);
}

#define RULE(name, cond) "- rule: " name "\n  desc: d\n  condition: " cond "\n  output: o\n  priority: Notice\n"

static void test_append_list_macro_rule(void **state)
{
    (void)state;
    struct rules_engine *e = engine_with(
        "- list: shells\n  items: [sh]\n"
        "- list: shells\n  items: [bash]\n  append: true\n"
        "- macro: spawned\n  condition: evt.type = execve\n"
        "- macro: spawned\n  condition: and evt.dir = <\n  append: true\n"
        RULE("shell", "spawned and proc.name in (shells)")
        "- rule: shell\n  condition: and proc.args = -i\n  append: true\n");
    assert_string_equal(fired(e, exec_event("bash", "-i")), "shell");
    assert_string_equal(fired(e, exec_event("sh", "-i")), "shell");
    assert_string_equal(fired(e, exec_event("bash", "-c")), "");   /* the appended condition holds */
    assert_string_equal(fired(e, exec_event("zsh", "-i")), "");
    rules_engine_free(e);
}

static void test_override(void **state)
{
    (void)state;
    struct rules_engine *e = engine_with(
        "- list: shells\n  items: [sh, zsh]\n"
        "- list: shells\n  items: [bash]\n  override:\n    items: replace\n"
        "- list: more\n  items: [dash]\n"
        "- list: more\n  items: [ksh]\n  override: {items: append}\n"
        "- macro: m\n  condition: proc.name = nobody\n"
        "- macro: m\n  condition: proc.name in (shells, more)\n  override: {condition: replace}\n"
        RULE("r", "evt.type = execve and m")
        "- rule: r\n  condition: or proc.name = fish\n  override: {condition: append}\n"
        "- rule: r\n  priority: Critical\n  tags: [x]\n  override: {priority: replace, tags: append}\n");
    assert_string_equal(fired(e, exec_event("bash", "-i")), "r");
    assert_int_equal(L.items[0].priority, RULES_CRITICAL);
    assert_string_equal(L.items[0].tags, "[\"x\"]");
    assert_string_equal(fired(e, exec_event("sh", "-i")), "");       /* replaced */
    assert_string_equal(fired(e, exec_event("ksh", "-i")), "r");     /* appended */
    assert_string_equal(fired(e, exec_event("dash", "-i")), "r");
    assert_string_equal(fired(e, exec_event("fish", "-i")), "r");    /* condition appended */
    rules_engine_free(e);
}

static void test_redefinition_in_place_and_enabled(void **state)
{
    (void)state;
    struct rule_set *rs = rules_ok(RULE("a", "evt.type = execve") RULE("b", "evt.type = execve")
                                   RULE("a", "evt.type = execve and proc.name = x")
                                   "- rule: b\n  enabled: false\n");
    assert_int_equal(rule_set_rule_count(rs), 2);
    struct rule_info info;
    rule_set_rule_info(rs, 0, &info);
    assert_string_equal(info.name, "a");   /* replaced where it was */
    assert_int_equal(info.line, 11);
    rule_set_rule_info(rs, 1, &info);
    assert_string_equal(info.name, "b");
    assert_false(info.enabled);
    struct rule_set_stats st;
    rule_set_get_stats(rs, &st);
    assert_int_equal(st.rules, 2);
    assert_int_equal(st.rules_enabled, 1);
    struct rules_engine *e = engine_with(NULL);
    rules_engine_set_rules(e, rs);
    assert_string_equal(fired(e, exec_event("x", "-i")), "a");
    assert_string_equal(fired(e, exec_event("y", "-i")), "");   /* b is disabled */
    rules_engine_free(e);
}

static void test_exceptions(void **state)
{
    (void)state;
    struct rules_engine *e = engine_with(
        "- list: trusted\n  items: [make, gcc]\n"
        "- rule: r\n  desc: d\n  condition: evt.type = execve\n  output: o\n  priority: Notice\n"
        "  exceptions:\n"
        "    - name: by_name\n      fields: proc.name\n      values: [cc, trusted]\n"
        "    - name: pair\n      fields: [proc.name, proc.args]\n      comps: [=, startswith]\n"
        "      values:\n        - [sh, --safe]\n"
        "    - name: listed\n      fields: [proc.name, proc.args]\n      comps: [in, =]\n"
        "      values:\n        - [[ksh, csh], -x]\n"
        "- rule: r\n  exceptions:\n    - name: by_name\n      values: [ld]\n  append: true\n");
    assert_string_equal(fired(e, exec_event("bash", "-i")), "r");
    assert_string_equal(fired(e, exec_event("cc", "-i")), "");
    assert_string_equal(fired(e, exec_event("gcc", "-i")), "");     /* a list name among the values */
    assert_string_equal(fired(e, exec_event("ld", "-i")), "");      /* appended values */
    assert_string_equal(fired(e, exec_event("sh", "--safe-mode")), "");
    assert_string_equal(fired(e, exec_event("sh", "-c")), "r");
    assert_string_equal(fired(e, exec_event("csh", "-x")), "");
    assert_string_equal(fired(e, exec_event("csh", "-y")), "r");
    rules_engine_free(e);
}

static void write_text(const char *dir, const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

/* *.yaml and *.yml (as Falco takes them), in byte order of their names;
 * other names are not rules files. */
static void test_directory_in_name_order(void **state)
{
    (void)state;
    char dir[64];
    scratch_dir(dir);
    write_text(dir, "b.yaml", "- list: names\n  items: [b]\n  append: true\n"
                              RULE("r", "evt.type = execve and proc.name in (names)"));
    write_text(dir, "a.yaml", "- list: names\n  items: [a]\n");
    write_text(dir, "c.yml", "- list: names\n  items: [c]\n  override: {items: append}\n");
    write_text(dir, "d.txt", "- list: [broken\n");   /* not a rules file's name: not read */
    struct rules_diag d = {0};
    const char *paths[] = {dir};
    struct rule_set *rs = rule_set_load(paths, 1, &d);
    if (!rs) {
        rules_diag_print(&d, stderr);
        fail_msg("directory did not load");
    }
    struct rule_set_stats st;
    rule_set_get_stats(rs, &st);
    assert_int_equal(st.files, 3);
    struct rules_engine *e = engine_with(NULL);
    rules_engine_set_rules(e, rs);
    assert_string_equal(fired(e, exec_event("a", "-i")), "r");
    assert_string_equal(fired(e, exec_event("b", "-i")), "r");
    assert_string_equal(fired(e, exec_event("c", "-i")), "r");   /* the .yml file, after b.yaml */
    rules_engine_free(e);
    rules_diag_free(&d);
    scratch_dir_remove(dir);
}

/* Issue 24 item 11: a directory holding only rules.yml loads it (it used
 * to load nothing, exit 0); one holding neither warns. */
static void test_directory_of_yml_and_empty_directory(void **state)
{
    (void)state;
    char dir[64];
    scratch_dir(dir);
    write_text(dir, "rules.yml", RULE("r", "evt.type = execve"));
    struct rules_diag d = {0};
    const char *paths[] = {dir};
    struct rule_set *rs = rule_set_load(paths, 1, &d);
    assert_non_null(rs);
    assert_int_equal(rule_set_rule_count(rs), 1);
    rule_set_free(rs);
    rules_diag_free(&d);
    char path[128];
    snprintf(path, sizeof(path), "%s/rules.yml", dir);
    assert_int_equal(rename(path, strcat(strcpy((char[128]){0}, dir), "/rules.txt")), 0);
    rs = rule_set_load(paths, 1, &d);
    assert_non_null(rs);
    assert_int_equal(rule_set_rule_count(rs), 0);
    assert_int_equal(d.warnings, 1);
    assert_non_null(strstr(d.items[0].message, "no *.yaml or *.yml files in this directory"));
    assert_string_equal(d.items[0].file, dir);
    rule_set_free(rs);
    rules_diag_free(&d);
    scratch_dir_remove(dir);
}

/* Issue 24 item 11: a UTF-8 byte order mark starts the file (it was refused
 * with "did not find expected '-' indicator"). */
static void test_utf8_bom_accepted(void **state)
{
    (void)state;
    struct rule_set *rs = rules_ok("\xEF\xBB\xBF" RULE("r", "evt.type = execve"));
    assert_int_equal(rule_set_rule_count(rs), 1);
    struct rule_info info;
    rule_set_rule_info(rs, 0, &info);
    assert_int_equal(info.line, 1);
    rule_set_free(rs);
    char out[4096];   /* positions stay those of the text after the mark */
    rules_errors("\xEF\xBB\xBF" RULE("r", "evt.type = execve and proc.nam = x"), out, sizeof(out));
    assert_non_null(strstr(out, "t.yaml:3:36: error: unknown field 'proc.nam'"));
}

/* rule_set_load of paths in a child that must finish within 5 s: its
 * diagnostics printed to out. The child's exit code (124: it hung). */
static int load_in_child(const char *const *paths, size_t n, char *out, size_t outlen)
{
    char log[64];
    strcpy(log, "/tmp/seccheckd-unit-load-XXXXXX");
    int fd = mkstemp(log);
    assert_true(fd >= 0);
    reaper_track_path(log);
    pid_t pid = reaper_fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rules_diag d = {0};
        struct rule_set *rs = rule_set_load(paths, n, &d);
        FILE *fp = fdopen(fd, "w");
        rules_diag_print(&d, fp);
        fclose(fp);
        _exit(rs ? 0 : 2);
    }
    close(fd);
    int rc = reaper_wait_within(pid, 5000);
    FILE *fp = fopen(log, "r");
    assert_non_null(fp);
    size_t got = fread(out, 1, outlen - 1, fp);
    out[got] = '\0';
    fclose(fp);
    reaper_remove(log);
    return rc;
}

/* Issue 24 item 7: a FIFO, a device or a socket among the rules paths (or
 * in a rules directory) is refused by name at once; a FIFO used to block
 * the load for good (fopen waits for a writer). */
static void test_not_regular_files_refused(void **state)
{
    (void)state;
    char dir[64], fifo[96], sock[96], out[8192], want[256];
    scratch_dir(dir);
    snprintf(fifo, sizeof(fifo), "%s/fifo.yaml", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    const char *one[] = {fifo};
    assert_int_equal(load_in_child(one, 1, out, sizeof(out)), 2);
    snprintf(want, sizeof(want), "%s: error: not a regular file (a FIFO)", fifo);
    if (!strstr(out, want))
        fail_msg("expected '%s' in:\n%s", want, out);
    /* in a directory: the entry is named */
    write_text(dir, "a.yaml", RULE("r", "evt.type = execve"));
    const char *d[] = {dir};
    assert_int_equal(load_in_child(d, 1, out, sizeof(out)), 2);
    if (!strstr(out, want))
        fail_msg("expected '%s' in:\n%s", want, out);
    remove(fifo);
    /* a device, a socket */
    const char *dev[] = {"/dev/null"};
    assert_int_equal(load_in_child(dev, 1, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "/dev/null: error: not a regular file (a character device)"));
    snprintf(sock, sizeof(sock), "%s/s.yaml", dir);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, sock, strlen(sock) + 1);
    assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
    const char *sk[] = {sock};
    assert_int_equal(load_in_child(sk, 1, out, sizeof(out)), 2);
    snprintf(want, sizeof(want), "%s: error: not a regular file", sock);
    assert_non_null(strstr(out, want));
    close(s);
    scratch_dir_remove(dir);
}

/* Issue 24 item 8: what lists inside lists multiply into is counted before
 * it is built. In Falco a list takes another's items one level deep, so 21
 * lists of two lists each, defined in order, stay small; the same lists
 * defined last first are expanded level after level when a condition names
 * them (Falco substitutes them in order), 2^21 items: refused with the list
 * and its line, before anything is built (it was accepted after 2.3 s at
 * 373 MB). */
static void test_nested_lists_bounded(void **state)
{
    (void)state;
    static char text[8192];
    size_t n = (size_t)snprintf(text, sizeof(text), "- list: l0\n  items: [a, b]\n");
    for (int i = 1; i <= 20; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "- list: l%d\n  items: [l%d, l%d]\n", i, i - 1, i - 1);
    snprintf(text + n, sizeof(text) - n, RULE("r", "evt.type = execve and proc.name in (l20)"));
    struct rules_engine *e = engine_with(text);
    /* one level: l20 holds l18's name four times, not a and b */
    assert_string_equal(fired(e, exec_event("a", "-i")), "");
    assert_string_equal(fired(e, exec_event("l18", "-i")), "r");
    rules_engine_free(e);
    n = 0;
    for (int i = 20; i >= 1; i--)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "- list: l%d\n  items: [l%d, l%d]\n", i, i - 1, i - 1);
    n += (size_t)snprintf(text + n, sizeof(text) - n, "- list: l0\n  items: [a, b]\n");
    snprintf(text + n, sizeof(text) - n, RULE("r", "evt.type = execve and proc.name in (l20)"));
    expect_error(text, "t.yaml:5:9: error: the lists hold more than 1000000 items once the lists named in lists are "
                       "expanded (list 'l18' alone: 524288)");
    /* ten levels (1024 items) load, and mean a and b */
    n = 0;
    for (int i = 10; i >= 1; i--)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "- list: l%d\n  items: [l%d, l%d]\n", i, i - 1, i - 1);
    n += (size_t)snprintf(text + n, sizeof(text) - n, "- list: l0\n  items: [a, b]\n");
    snprintf(text + n, sizeof(text) - n, RULE("r", "evt.type = execve and proc.name in (l10)"));
    e = engine_with(text);
    assert_string_equal(fired(e, exec_event("b", "-i")), "r");
    assert_string_equal(fired(e, exec_event("l9", "-i")), "");
    rules_engine_free(e);
}

/* Doubling macros (m0 a test, each next one m(i-1) or m(i-1)) and rules on m14 up to `bytes` of text:
 * the audit's 30 KB file (issue 32 item 7) at 30000. */
static size_t doubling_macros(char *text, size_t size, size_t bytes)
{
    size_t n = (size_t)snprintf(text, size, "- macro: m0\n  condition: (evt.type = execve and proc.name = x)\n");
    for (int i = 1; i <= 14; i++)
        n += (size_t)snprintf(text + n, size - n, "- macro: m%d\n  condition: (m%d or m%d)\n", i, i - 1, i - 1);
    size_t rules = 0;
    while (n < bytes && n + 200 < size) {
        n += (size_t)snprintf(text + n, size - n, "- rule: r%zu\n  desc: d\n  condition: m14 and not proc.name = p%zu\n"
                              "  output: o\n  priority: Notice\n", rules, rules);
        rules++;
    }
    return rules;
}

/* Issue 32 item 7: each rule bounded alone is not enough. 286 rules of
 * 98,305 nodes each (30 KB) cost 100 ms an event and 10-13 s to load
 * (215 s for 2,000 such rules); now the enabled rules' conditions are
 * bounded together (RULES_MAX_EXPANDED_SET), refused with the rule's line,
 * and a macro's reach is worked out once per rule, so refusing the file
 * takes no time (the child's 5 s: the build before took 10 s and more,
 * and loaded it). Two such rules fit, and match as their macros say. */
static void test_rule_set_bounded_after_expansion(void **state)
{
    (void)state;
    static char text[40000];
    assert_true(doubling_macros(text, sizeof(text), 30000) > 280);   /* 30 KB of them */
    char path[] = "/tmp/seccheckd-unit-doubling-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    reaper_track_path(path);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    char out[1 << 16];
    const char *paths[] = {path};
    assert_int_equal(load_in_child(paths, 1, out, sizeof(out)), 2);   /* refused, at once */
    char want[512];
    snprintf(want, sizeof(want), "%s:43:14: error: rule 'r2': the enabled rules' conditions come to more than 200000 "
             "nodes once their macros are expanded (294915 with this rule's 98305)", path);
    if (!strstr(out, want))
        fail_msg("expected '%s' in:\n%.2000s", want, out);
    reaper_remove(path);

    /* two of them: 196,610 nodes, loaded, and the shared macros' reach is theirs */
    size_t n = 0;
    doubling_macros(text, sizeof(text), 0);
    n = strlen(text);
    snprintf(text + n, sizeof(text) - n, RULE("r0", "m14 and not proc.name = p0") RULE("r1", "m14 and not proc.name = p1")
             RULE("other", "evt.type = execve and not m0 and proc.name = y"));
    struct rules_engine *e = engine_with(text);
    assert_string_equal(fired(e, exec_event("x", "-i")), "r0,r1");
    assert_string_equal(fired(e, exec_event("p0", "-i")), "");   /* x only: m0 tests proc.name = x */
    assert_string_equal(fired(e, exec_event("y", "-i")), "other");
    rules_engine_free(e);
}

/* Issue 24 item 8: a list named in many conditions counts each time. */
static void test_spliced_items_bounded(void **state)
{
    (void)state;
    size_t cap = 8u << 20, n = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    n += (size_t)snprintf(text + n, cap - n, "- list: big\n  items: [");
    for (int i = 0; i < 250000; i++)
        n += (size_t)snprintf(text + n, cap - n, "%si%d", i ? ", " : "", i);
    n += (size_t)snprintf(text + n, cap - n, "]\n");
    for (int r = 0; r < 5; r++)
        n += (size_t)snprintf(text + n, cap - n, RULE("r%d", "evt.type = execve and proc.name in (big)"), r);
    char out[8192];
    rules_errors(text, out, sizeof(out));
    if (!strstr(out, "t.yaml:25:50: error: the lists spliced into conditions hold more than 1000000 items (here list "
                     "'big', 250000 items)"))
        fail_msg("%s", out);
    free(text);
}

static void test_types_and_warnings(void **state)
{
    (void)state;
    struct rules_diag d = {0};
    const char *text = "- required_engine_version: 0.26.0\n"
                       "- required_engine_version: 3\n"
                       "- some_future_item: 1\n"
                       "- rule: k8s\n  desc: d\n  condition: ka.verb = get\n  output: o\n  priority: Notice\n"
                       "  source: k8s_audit\n"
                       RULE("all", "proc.name = x")
                       RULE("opens", "evt.type in (open, openat) or (evt.type = creat and fd.num > 0)")
                       RULE("not_exec", "not evt.type = execve and proc.name = x");
    struct rule_set *rs = rule_set_load_buffer("t.yaml", text, strlen(text), &d);
    assert_non_null(rs);
    char out[4096];
    FILE *fp = fmemopen(out, sizeof(out), "w");
    rules_diag_print(&d, fp);
    fclose(fp);
    assert_null(strstr(out, "t.yaml:1:"));   /* versions this engine meets: nothing to say */
    assert_null(strstr(out, "t.yaml:2:"));
    assert_non_null(strstr(out, "t.yaml:3:3: warning: Unknown top level item\n"));
    assert_non_null(strstr(out, "t.yaml:9:11: warning: rule 'k8s': Unknown source k8s_audit, skipping"));
    assert_non_null(strstr(out, "t.yaml:10:9: warning: rule 'all': Rule matches too many evt.type values"));
    assert_int_equal(d.errors, 0);
    assert_int_equal(rule_set_rule_count(rs), 3);
    struct rule_set_stats st;
    rule_set_get_stats(rs, &st);
    assert_int_equal(st.rules_skipped, 1);
    char types[8192];
    rule_set_rule_types(rs, 0, types, sizeof(types));
    assert_string_equal(types, "all");
    rule_set_rule_types(rs, 1, types, sizeof(types));
    assert_string_equal(types, "open,creat,openat");
    rule_set_rule_types(rs, 2, types, sizeof(types));
    assert_null(strstr(types, ",execve,"));
    assert_non_null(strstr(types, ",execveat,"));
    assert_non_null(strstr(types, "procexit"));
    rule_set_free(rs);
    rules_diag_free(&d);
}

static void test_errors_with_positions(void **state)
{
    (void)state;
    /* a misspelt key warns (Falco: "Unknown key"), and what is then missing is the error */
    expect_error("- rule: r\n  desc: d\n  condtion: evt.type = open\n  output: o\n  priority: Notice\n",
                 "t.yaml:1:9: error: Item has no mapping for key 'condition'");
    expect_error("- rule: r\n  desc: d\n  condtion: evt.type = open\n  output: o\n  priority: Notice\n",
                 "t.yaml:3:3: warning: Unknown key 'condtion'. The key will be ignored.");
    expect_error(RULE("r", "evt.type = open and proc.nam = x"),
                 "t.yaml:3:34: error: unknown field 'proc.nam'");
    expect_error(RULE("r", "evt.type = open and undefined_macro"),
                 "t.yaml:3:34: error: Undefined macro 'undefined_macro' used in filter.");
    expect_error(RULE("r", "evt.type = open and = x"),
                 "t.yaml:3:34: error: syntax error: expected '(', a field check or a macro name");
    expect_error(RULE("r", "evt.type = open and (proc.name = x"), "t.yaml:3:48: error: syntax error: expected ')'");
    expect_error(RULE("r", "evt.type = open proc.name = x"),
                 "t.yaml:3:30: error: syntax error: unexpected text: expected 'and', 'or'");
    expect_error(RULE("r", "evt.type = open and proc.name ~ x"), "t.yaml:3:44: error: syntax error: expected an operator");
    expect_error(RULE("r", "evt.type = open and fd.num > abc"),
                 "t.yaml:3:43: error: syntax error: expected a number after a numeric operator");
    expect_error(RULE("r", "evt.type = open and fd.num = abc"), "t.yaml:3:43: error: 'abc' is not a number for 'fd.num'");
    expect_error(RULE("r", "evt.type = open and fd.num contains 1"),
                 "t.yaml:3:41: error: operator 'contains' does not apply to numeric field 'fd.num'");
    expect_error(RULE("r", "evt.type = opn"), "t.yaml:3:25: error: unknown event type 'opn'");
    expect_error(RULE("r", "evt.type = open and proc.name regex '('"),
                 "t.yaml:3:50: error: invalid regular expression '(': missing )");
    expect_error("- rule: r\n  desc: d\n  condition: evt.type = open\n  output: o\n  priority: Urgent\n",
                 "t.yaml:5:13: error: Invalid priority 'Urgent'");
    expect_error("- rule: r\n  desc: d\n  condition: evt.type = open\n",
                 "t.yaml:1:9: error: Item has no mapping for key 'output'");
    expect_error("- rule: r\n  desc: d\n  condition: evt.type = open\n  output: \"file %fd.nam by %proc.name\"\n"
                 "  priority: Notice\n",
                 "t.yaml:4:18: error: unknown field 'fd.nam'");
    expect_error("- rule: r\n  desc: d\n  condition: evt.type = open\n  output: \"file %(proc.aname) x\"\n"
                 "  priority: Notice\n",
                 "t.yaml:4:19: error: 'proc.aname' needs an index in an output");
    expect_error("- rule: r\n  condition: and x\n  append: true\n",
                 "t.yaml:1:9: error: rule 'r': Rule uses 'append' or 'override.<key>: append' but no rule by that name "
                 "already exists");
    expect_error("- list: l\n  items: [a]\n- list: l\n  items: [b]\n  append: true\n  override: {items: append}\n",
                 "t.yaml:3:9: error: Keys 'override' and 'append: true' cannot be used together.");
    expect_error("- list: l\n  items: [a]\n- list: l\n  items: [b]\n  override: {items: merge}\n",
                 "t.yaml:5:21: error: Invalid override operation for key 'items': 'merge'. Allowed values are: append "
                 "replace");
    expect_error("- rule: r\n  desc: d\n  condition: evt.type = open\n  output: o\n  priority: Notice\n  enabled: maybe\n",
                 "t.yaml:6:12: error: Can't decode YAML scalar value of 'enabled' ('maybe'): true or false");
    expect_error("rule: r\n", "t.yaml:1:1: error: Rules content is not yaml array of objects");
    expect_error("- rule: r\n- 42\n", "t.yaml:2:3: error: Unexpected element type. Each element should be a yaml "
                                      "associative array.");
}

static void test_errors_in_block_scalars(void **state)
{
    (void)state;
    /* positions inside multi-line conditions map back to the file */
    expect_error("- rule: r\n  desc: d\n  condition: >\n    evt.type = open\n    and proc.nam = x\n"
                 "  output: o\n  priority: Notice\n",
                 "t.yaml:5:9: error: unknown field 'proc.nam'");
    expect_error("- rule: r\n  desc: d\n  condition: |\n    evt.type = open\n      and (proc.name = x\n"
                 "      or fd.nme = y)\n  output: o\n  priority: Notice\n",
                 "t.yaml:6:10: error: unknown field 'fd.nme'");
    expect_error("- rule: r\n  desc: d\n  condition: evt.type = open and\n    proc.name = x and\n    fd.nme = y\n"
                 "  output: o\n  priority: Notice\n",
                 "t.yaml:5:5: error: unknown field 'fd.nme'");
    expect_error("- rule: r\n  desc: d\n  condition: \"evt.type = open and\n    fd.nme = y\"\n"
                 "  output: o\n  priority: Notice\n",
                 "t.yaml:4:5: error: unknown field 'fd.nme'");
    /* an appended condition: the error is in the second item */
    expect_error(RULE("r", "evt.type = open") "- rule: r\n  condition: and fd.nme = y\n  append: true\n",
                 "t.yaml:7:18: error: unknown field 'fd.nme'");
}

/* Stack a load and an evaluation take at RULES_MAX_NESTING, measured on a
 * thread whose stack is painted first: the high-water mark. */
struct deep_job {
    const char *text;
    bool loaded;
    size_t evaluated;
};

static void *deep_run(void *arg)
{
    struct deep_job *j = arg;
    struct rules_diag d = {0};
    struct rule_set *rs = rule_set_load_buffer("t.yaml", j->text, strlen(j->text), &d);
    if (!rs)
        rules_diag_print(&d, stderr);
    j->loaded = rs != NULL;
    rules_diag_free(&d);
    if (rs) {
        struct rules_engine_config cfg;
        rules_engine_config_defaults(&cfg);
        cfg.rate = 0;
        struct rules_engine *e = rules_engine_new(&cfg);
        rules_engine_set_rules(e, rs);
        j->evaluated = eval_count(e, exec_event("x", "-i"), &L);
        rules_engine_free(e);
    }
    return NULL;
}

#define DEEP_STACK (16u << 20)

/* Falco's parser depth (1000) in parentheses around a comparison (filter/filter_ast.h). */
#define FALCO_PARENS 198

static size_t stack_used(const char *text, bool *loaded, size_t *alerts)
{
    unsigned char *stack = aligned_alloc(4096, DEEP_STACK);
    assert_non_null(stack);
    memset(stack, 0xA5, DEEP_STACK);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    assert_int_equal(pthread_attr_setstack(&attr, stack, DEEP_STACK), 0);
    struct deep_job j = {.text = text};
    pthread_t t;
    assert_int_equal(pthread_create(&t, &attr, deep_run, &j), 0);
    pthread_join(t, NULL);
    pthread_attr_destroy(&attr);
    size_t untouched = 0;
    while (untouched < DEEP_STACK && stack[untouched] == 0xA5)
        untouched++;
    free(stack);
    *loaded = j.loaded;
    *alerts = j.evaluated;
    return DEEP_STACK - untouched;
}

static void test_macro_errors(void **state)
{
    (void)state;
    /* Falco: a macro sees the macros defined before it ("Undefined macro") */
    expect_error("- macro: a\n  condition: b\n- macro: b\n  condition: a\n" RULE("r", "evt.type = open and a"),
                 "t.yaml:2:14: error: Undefined macro 'b' used in filter: it is defined after this macro (t.yaml:3)");
    expect_error("- macro: a\n  condition: a or proc.name = x\n" RULE("r", "evt.type = open and a"),
                 "t.yaml:2:14: error: Undefined macro 'a' used in filter: a macro does not see itself");
    /* a circle through an append, which makes b visible to a */
    expect_error("- macro: a\n  condition: proc.name = x\n- macro: b\n  condition: a\n"
                 "- macro: a\n  condition: or b\n  override: {condition: append}\n" RULE("r", "evt.type = open and a"),
                 "error: reference loop in macro 'a': macros nest in a circle: b -> a -> b");
    expect_error("- macro: a\n  condition: proc.name = x\n- macro: a\n  condition: or a\n  append: true\n"
                 RULE("r", "evt.type = open and a"),
                 "t.yaml:4:17: error: reference loop in macro 'a': it refers to itself");
    /* a list's name is its items wherever it stands, as in Falco: here a
     * macro named a */
    expect_error("- list: l\n  items: [a]\n" RULE("r", "evt.type = open and l"),
                 "t.yaml:2:11: error: Undefined macro 'a' used in filter.");
    /* RULES_MAX_NESTING + 1 macros each using the one before */
    size_t cap = 1u << 20, n = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    n += (size_t)snprintf(text + n, cap - n, "- macro: m0\n  condition: proc.name = x\n");
    for (int i = 1; i <= RULES_MAX_NESTING + 1; i++)
        n += (size_t)snprintf(text + n, cap - n, "- macro: m%d\n  condition: m%d\n", i, i - 1);
    snprintf(text + n, cap - n, RULE("r", "evt.type = execve and m%d"), RULES_MAX_NESTING);
    char want[80];
    snprintf(want, sizeof(want), "t.yaml:%d:14: error: macros nested deeper than %d", 2 * RULES_MAX_NESTING + 4,
             RULES_MAX_NESTING);
    expect_error(text, want);
    /* RULES_MAX_NESTING of them load and evaluate (Falco's depth: 1000) */
    n = (size_t)snprintf(text, cap, "- macro: m0\n  condition: proc.name = x\n");
    for (int i = 1; i < RULES_MAX_NESTING; i++)
        n += (size_t)snprintf(text + n, cap - n, "- macro: m%d\n  condition: m%d\n", i, i - 1);
    snprintf(text + n, cap - n, RULE("r", "evt.type = execve and m%d"), RULES_MAX_NESTING - 1);
    bool loaded;
    size_t alerts;
    size_t used = stack_used(text, &loaded, &alerts);
    assert_true(loaded);
    assert_int_equal(alerts, 1);
    print_message("stack at %d nested macros (load and evaluation): %zu KiB\n", RULES_MAX_NESTING, used / 1024);
    assert_true(used < 4u << 20);   /* half of a usual 8 MiB thread stack */
    /* parentheses: as deep as Falco's parser goes (set_max_depth(1000), counted as libsinsp
     * counts it: 198 around a comparison) load and evaluate; deeper does not */
    char *cond = malloc(24 * FALCO_PARENS + 64);
    assert_non_null(cond);
    n = (size_t)sprintf(cond, "evt.type = execve and ");
    for (int i = 0; i < FALCO_PARENS; i++)
        n += (size_t)sprintf(cond + n, "(proc.name = y or ");
    n += (size_t)sprintf(cond + n, "proc.name = x");
    for (int i = 0; i < FALCO_PARENS; i++)
        cond[n++] = ')';
    cond[n] = '\0';
    snprintf(text, cap, RULE("r", "%s"), cond);
    used = stack_used(text, &loaded, &alerts);
    assert_true(loaded);
    assert_int_equal(alerts, 1);
    print_message("stack at %d nested parentheses (load and evaluation): %zu KiB\n", FALCO_PARENS, used / 1024);
    assert_true(used < 4u << 20);
    n = (size_t)sprintf(cond, "evt.type = execve and ");
    for (int i = 0; i <= FALCO_PARENS; i++)
        cond[n++] = '(';
    n += (size_t)sprintf(cond + n, "proc.name = x");
    for (int i = 0; i <= FALCO_PARENS; i++)
        cond[n++] = ')';
    cond[n] = '\0';
    snprintf(text, cap, RULE("r", "%s"), cond);
    expect_error(text, "error: nested too deeply");
    /* deep macros inside deep parentheses: the expanded tree is bounded */
    n = (size_t)snprintf(text, cap, "- macro: m0\n  condition: proc.name = x\n");
    for (int i = 1; i < 64; i++) {
        n += (size_t)snprintf(text + n, cap - n, "- macro: m%d\n  condition: ", i);
        for (int k = 0; k < 80; k++)
            n += (size_t)snprintf(text + n, cap - n, "(proc.name = y or ");
        n += (size_t)snprintf(text + n, cap - n, "m%d", i - 1);
        for (int k = 0; k < 80; k++)
            text[n++] = ')';
        text[n++] = '\n';
    }
    snprintf(text + n, cap - n, RULE("r", "evt.type = execve and m63"));
    expect_error(text, "levels deep once its macros are expanded (at most 4096)");
    free(cond);
    free(text);
}

static void test_refused_files(void **state)
{
    (void)state;
    expect_error("- rule: r\n  desc: caf\xe9\n", "t.yaml:2:12: error: not UTF-8 (byte 0xe9)");
    expect_error("- rule: [r\n  desc: d\n", "t.yaml:2:7: error: not valid YAML: did not find expected ',' or ']'");
    expect_error("- &a rule: r\n- *a\n", "t.yaml:2:3: error: YAML aliases (*name) are not supported");
    /* larger than RULES_FILE_MAX_BYTES: refused, naming the line */
    size_t big = RULES_FILE_MAX_BYTES + 10;
    char *text = malloc(big + 1);
    assert_non_null(text);
    for (size_t i = 0; i < big; i++)
        text[i] = i % 64 == 63 ? '\n' : '#';
    text[big] = '\0';
    expect_error(text, "t.yaml:262145:1: error: larger than 16777216 bytes: refused");
    free(text);
    /* more than RULES_MAX_ITEMS items */
    size_t cap = (size_t)(RULES_MAX_ITEMS + 2) * 32;
    text = malloc(cap);
    assert_non_null(text);
    size_t n = 0;
    for (int i = 0; i <= RULES_MAX_ITEMS; i++)
        n += (size_t)snprintf(text + n, cap - n, "- list: l%d\n  items: []\n", i);
    char want[64];
    snprintf(want, sizeof(want), "t.yaml:%d:3: error: more than %d lists", 2 * RULES_MAX_ITEMS + 1, RULES_MAX_ITEMS);
    expect_error(text, want);
    free(text);
    /* nesting deeper than the YAML tree's bound */
    char deep[300];
    memset(deep, '[', 200);
    deep[200] = '\0';
    expect_error(deep, "t.yaml:1:65: error: YAML nested too deeply");
}

static void test_every_error_reported(void **state)
{
    (void)state;
    char out[8192];
    rules_errors(RULE("a", "evt.type = open and proc.nam = x") RULE("b", "evt.type = open and fd.nme = y")
                 "- rule: c\n  desc: d\n  condition: evt.type = open\n  output: o\n  priority: Nope\n",
                 out, sizeof(out));
    assert_non_null(strstr(out, "t.yaml:3:34: error: unknown field 'proc.nam'"));
    assert_non_null(strstr(out, "t.yaml:8:34: error: unknown field 'fd.nme'"));
    assert_non_null(strstr(out, "t.yaml:15:13: error: Invalid priority 'Nope'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_list_macro_rule),   cmocka_unit_test(test_override),
        cmocka_unit_test(test_redefinition_in_place_and_enabled), cmocka_unit_test(test_exceptions),
        cmocka_unit_test(test_directory_in_name_order),  cmocka_unit_test(test_directory_of_yml_and_empty_directory),
        cmocka_unit_test(test_utf8_bom_accepted),        cmocka_unit_test(test_not_regular_files_refused),
        cmocka_unit_test(test_nested_lists_bounded),
        cmocka_unit_test(test_rule_set_bounded_after_expansion),     cmocka_unit_test(test_spliced_items_bounded),
        cmocka_unit_test(test_types_and_warnings),
        cmocka_unit_test(test_errors_with_positions),    cmocka_unit_test(test_errors_in_block_scalars),
        cmocka_unit_test(test_macro_errors),             cmocka_unit_test(test_refused_files),
        cmocka_unit_test(test_every_error_reported),
    };
    return cmocka_run_group_tests(tests, rules_group_setup, rules_group_teardown);
}
