/* test_rules_load.c - rules files (rules/load.c): Falco's item kinds,
 * append and override for lists, macros and rules, redefinition in place,
 * exceptions, directories in name order, and every error with its exact
 * file:line:column. */
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

static void test_directory_in_name_order(void **state)
{
    (void)state;
    char dir[64], path[128];
    scratch_dir(dir);
    snprintf(path, sizeof(path), "%s/b.yaml", dir);
    FILE *fp = fopen(path, "w");
    fputs("- list: names\n  items: [b]\n  append: true\n" RULE("r", "evt.type = execve and proc.name in (names)"), fp);
    fclose(fp);
    snprintf(path, sizeof(path), "%s/a.yaml", dir);
    fp = fopen(path, "w");
    fputs("- list: names\n  items: [a]\n", fp);
    fclose(fp);
    snprintf(path, sizeof(path), "%s/c.yml", dir);   /* not *.yaml: not loaded */
    fp = fopen(path, "w");
    fputs("- list: [broken\n", fp);
    fclose(fp);
    struct rules_diag d = {0};
    const char *paths[] = {dir};
    struct rule_set *rs = rule_set_load(paths, 1, &d);
    if (!rs) {
        rules_diag_print(&d, stderr);
        fail_msg("directory did not load");
    }
    struct rule_set_stats st;
    rule_set_get_stats(rs, &st);
    assert_int_equal(st.files, 2);
    struct rules_engine *e = engine_with(NULL);
    rules_engine_set_rules(e, rs);
    assert_string_equal(fired(e, exec_event("a", "-i")), "r");
    assert_string_equal(fired(e, exec_event("b", "-i")), "r");
    rules_engine_free(e);
    rules_diag_free(&d);
    scratch_dir_remove(dir);
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
    assert_non_null(strstr(out, "t.yaml:1:3: warning: 'required_engine_version' is accepted and ignored\n"));
    assert_null(strstr(out, "t.yaml:2:3"));   /* said once */
    assert_non_null(strstr(out, "t.yaml:3:3: warning: unknown top-level item 'some_future_item' ignored\n"));
    assert_non_null(strstr(out, "t.yaml:9:11: warning: rule 'k8s': source 'k8s_audit' is not supported"));
    assert_non_null(strstr(out, "t.yaml:10:9: warning: rule 'all' has no evt.type restriction"));
    assert_int_equal(d.errors, 0);
    assert_int_equal(rule_set_rule_count(rs), 3);
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

/* One file with one error: the whole report must contain want. */
static void expect_error(const char *text, const char *want)
{
    char out[8192];
    rules_errors(text, out, sizeof(out));
    if (!strstr(out, want))
        fail_msg("expected '%s' in:\n%s", want, out);
}

static void test_errors_with_positions(void **state)
{
    (void)state;
    expect_error("- rule: r\n  desc: d\n  condtion: evt.type = open\n  output: o\n  priority: Notice\n",
                 "t.yaml:3:3: error: unknown field 'condtion' in a rule");
    expect_error(RULE("r", "evt.type = open and proc.nam = x"),
                 "t.yaml:3:34: error: unknown field 'proc.nam'");
    expect_error(RULE("r", "evt.type = open and undefined_macro"), "t.yaml:3:34: error: undefined macro 'undefined_macro'");
    expect_error(RULE("r", "evt.type = open and proc.name in nolist"), "t.yaml:3:47: error: undefined list 'nolist'");
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
    expect_error(RULE("r", "evt.type = open and evt.type = execve"),
                 "t.yaml:3:14: error: the condition can match no event type");
    expect_error(RULE("r", "evt.type = open and proc.name regex '('"),
                 "t.yaml:3:50: error: invalid regular expression '(': missing )");
    expect_error("- rule: r\n  desc: d\n  condition: evt.type = open\n  output: o\n  priority: Urgent\n",
                 "t.yaml:5:13: error: rule 'r': priority 'Urgent' is not one of");
    expect_error("- rule: r\n  desc: d\n  condition: evt.type = open\n",
                 "t.yaml:1:9: error: rule 'r' lacks output, priority");
    expect_error("- rule: r\n  desc: d\n  condition: evt.type = open\n  output: \"file %fd.nam by %proc.name\"\n"
                 "  priority: Notice\n",
                 "t.yaml:4:18: error: unknown field 'fd.nam'");
    expect_error("- rule: r\n  desc: d\n  condition: evt.type = open\n  output: \"file %(proc.aname) x\"\n"
                 "  priority: Notice\n",
                 "t.yaml:4:19: error: 'proc.aname' needs an index in an output");
    expect_error("- rule: r\n  condition: and x\n  append: true\n",
                 "t.yaml:1:9: error: rule 'r' is not defined before: append needs an earlier definition");
    expect_error("- list: l\n  items: [a]\n- list: l\n  items: [b]\n  append: true\n  override: {items: append}\n",
                 "t.yaml:5:11: error: 'append' and 'override' cannot be used together");
    expect_error("- list: l\n  items: [a]\n- list: l\n  items: [b]\n  override: {items: merge}\n",
                 "t.yaml:5:21: error: override of 'items' must be append or replace");
    expect_error("- macro: m\n  condition: evt.type = open\n- macro: m\n  condition: x\n  override: {}\n",
                 "t.yaml:4:3: error: 'condition' is not named under override");
    expect_error("- rule: r\n  desc: d\n  condition: evt.type = open\n  output: o\n  priority: Notice\n  enabled: maybe\n",
                 "t.yaml:6:12: error: 'enabled' must be true or false");
    expect_error("rule: r\n", "t.yaml:1:1: error: a rules file is a YAML sequence of items");
    expect_error("- rule: r\n- 42\n", "t.yaml:2:3: error: an item must be a mapping");
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

static void test_macro_errors(void **state)
{
    (void)state;
    expect_error("- macro: a\n  condition: b\n- macro: b\n  condition: a\n" RULE("r", "evt.type = open and a"),
                 "t.yaml:2:14: error: macros nest in a circle: a -> b -> a");
    expect_error("- macro: a\n  condition: a or proc.name = x\n", "t.yaml:2:14: error: macro 'a' refers to itself");
    expect_error("- macro: a\n  condition: b\n- macro: b\n  condition: proc.name = x\n",
                 "t.yaml:2:14: error: macro 'b' is used before its definition (t.yaml:3)");
    expect_error("- list: l\n  items: [a]\n" RULE("r", "evt.type = open and l"),
                 "t.yaml:5:34: error: 'l' is a list, not a macro: use it inside in (...)");
    /* 66 macros each using the one before: deeper than RULES_MAX_NESTING */
    static char text[16384];
    size_t n = 0;
    n += (size_t)snprintf(text + n, sizeof(text) - n, "- macro: m0\n  condition: proc.name = x\n");
    for (int i = 1; i <= RULES_MAX_NESTING + 1; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "- macro: m%d\n  condition: m%d\n", i, i - 1);
    expect_error(text, "t.yaml:132:14: error: macros nested deeper than 64");
    /* parentheses too */
    char cond[1024] = "evt.type = open and ";
    for (int i = 0; i < 210; i++)
        strcat(cond, "(");
    char rule[2048];
    snprintf(rule, sizeof(rule), RULE("r", "%s"), cond);
    expect_error(rule, "error: nested too deeply");
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
    assert_non_null(strstr(out, "t.yaml:15:13: error: rule 'c': priority 'Nope'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_list_macro_rule),   cmocka_unit_test(test_override),
        cmocka_unit_test(test_redefinition_in_place_and_enabled), cmocka_unit_test(test_exceptions),
        cmocka_unit_test(test_directory_in_name_order),  cmocka_unit_test(test_types_and_warnings),
        cmocka_unit_test(test_errors_with_positions),    cmocka_unit_test(test_errors_in_block_scalars),
        cmocka_unit_test(test_macro_errors),             cmocka_unit_test(test_refused_files),
        cmocka_unit_test(test_every_error_reported),
    };
    return cmocka_run_group_tests(tests, rules_group_setup, rules_group_teardown);
}
