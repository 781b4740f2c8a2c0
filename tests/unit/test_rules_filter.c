/* test_rules_filter.c - Falco's condition language (rules/filter.h): every
 * operator, precedence, quoting and escapes, absent values, lists, lists of
 * lists, nested macros; evaluated on a crafted openat exit event. */
#include "rules_util.h"

/* openat("/etc/passwd", O_RDONLY) = 3 by cat (tgid 10) in /root. */
static const struct event *openat_event(const char *path)
{
    static struct ctx_parts cp;
    static Gvisor__Syscall__Open m;
    static Gvisor__Syscall__Exit x;
    gvisor__syscall__open__init(&m);
    gvisor__syscall__exit__init(&x);
    x.result = 3;
    m.context_data = mk_ctx(&cp, 10, "cat", 1700000000000000001);
    m.exit = &x;
    m.sysno = 257;
    m.fd = -100;
    m.pathname = (char *)path;
    return evb_build(&B, 1, 7, 0, &m.base);
}

/* The same call's enter point: no exit, no result. */
static const struct event *openat_enter_event(const char *path)
{
    static struct ctx_parts cp;
    static Gvisor__Syscall__Open m;
    gvisor__syscall__open__init(&m);
    m.context_data = mk_ctx(&cp, 10, "cat", 1700000000000000001);
    m.sysno = 257;
    m.fd = -100;
    m.pathname = (char *)path;
    return evb_build(&B, 1, 7, 0, &m.base);
}

static char *rules_for(const char *cond)
{
    static char text[8192];
    snprintf(text, sizeof(text),
             "- list: shells\n  items: [sh, cat]\n"
             "- list: all_shells\n  items: [shells, bash]\n"
             "- macro: is_cat\n  condition: proc.name = cat\n"
             "- macro: cat_fd3\n  condition: is_cat and fd.num = 3\n"
             "- rule: r\n  desc: d\n  condition: |\n    %s\n  output: o\n  priority: Notice\n",
             cond);
    return text;
}

static bool matches_on(const char *cond, const struct event *(*make)(const char *), const char *path)
{
    struct rules_engine *e = engine_with(rules_for(cond));
    size_t n = eval_count(e, make(path), &L);
    rules_engine_free(e);
    return n == 1;
}

static bool matches(const char *cond) { return matches_on(cond, openat_event, "/etc/passwd"); }

#define YES(c) do { if (!matches(c)) fail_msg("expected a match: %s", c); } while (0)
#define NO(c) do { if (matches(c)) fail_msg("expected no match: %s", c); } while (0)

/* Enter points reach only the rules whose evt.dir test may be true for one
 * (the index leaves out `evt.dir = <` rules): none that could match is left
 * out, however the test is written. */
static void test_directions(void **state)
{
    (void)state;
    static const char *const on_enter[] = {
        "evt.dir = >", "evt.dir != <", "not evt.dir = <", "evt.dir in (>)", "evt.dir in (<, >)",
        "evt.dir = < or proc.name = cat", "not (evt.dir = < and fd.num = 3)", "evt.dir exists",
        "evt.dir intersects (>)", "is_cat and not evt.dir = <",
    };
    static const char *const never_on_enter[] = {
        "evt.dir = <", "evt.dir != >", "not evt.dir = >", "evt.dir in (<)", "evt.dir = < and proc.name = cat",
        "evt.dir = > and evt.dir = <", "proc.name = cat",   /* no evt.dir test: exits only */
    };
    for (size_t i = 0; i < sizeof(on_enter) / sizeof(on_enter[0]); i++)
        if (!matches_on(on_enter[i], openat_enter_event, "/etc/passwd"))
            fail_msg("an enter point must match: %s", on_enter[i]);
    for (size_t i = 0; i < sizeof(never_on_enter) / sizeof(never_on_enter[0]); i++)
        if (matches_on(never_on_enter[i], openat_enter_event, "/etc/passwd"))
            fail_msg("an enter point must not match: %s", never_on_enter[i]);
    YES("evt.dir = <");
    YES("evt.dir != >");
    NO("evt.dir = >");
    NO("evt.dir in (>)");
}

static void test_comparison_operators(void **state)
{
    (void)state;
    YES("fd.name = /etc/passwd");
    YES("fd.name == /etc/passwd");
    NO("fd.name = /etc/shadow");
    YES("fd.name != /etc/shadow");
    NO("fd.name != /etc/passwd");
    YES("fd.num < 4");
    NO("fd.num < 3");
    YES("fd.num <= 3");
    NO("fd.num <= 2");
    YES("fd.num > 2");
    NO("fd.num > 3");
    YES("fd.num >= 3");
    NO("fd.num >= 4");
    YES("fd.num = 0x3");
    YES("fd.num > -1");
}

static void test_string_operators(void **state)
{
    (void)state;
    YES("fd.name contains etc/pa");
    NO("fd.name contains ETC");
    YES("fd.name icontains ETC/PASS");
    NO("fd.name icontains shadow");
    YES("fd.name startswith /etc");
    NO("fd.name startswith etc");
    YES("fd.name endswith passwd");
    NO("fd.name endswith /etc");
    YES("fd.name glob '/etc/p*'");
    YES("fd.name glob '/*/pass?d'");
    YES("fd.name glob '/etc/[a-p]asswd'");
    NO("fd.name glob '/etc/[!p]asswd'");
    NO("fd.name glob '/ETC/*'");
    YES("fd.name glob '*'");            /* '*' crosses '/' (fnmatch without flags) */
    YES("fd.name iglob '/ETC/*'");
    YES("fd.name bcontains 2f706173");  /* "/pas" */
    NO("fd.name bcontains 2f706174");
    YES("fd.name bstartswith 2f657463");
    NO("fd.name bstartswith 657463");
}

static void test_list_operators(void **state)
{
    (void)state;
    YES("fd.name in (/etc/shadow, /etc/passwd)");
    NO("fd.name in (/etc/shadow, /etc/pass)");
    YES("fd.name intersects (/etc/passwd)");
    YES("fd.num in (1, 2, 3)");
    NO("fd.num in (1, 2)");
    NO("fd.name in ()");                /* an empty list matches nothing */
    YES("fd.name pmatch (/etc)");
    YES("fd.name pmatch (/usr, /etc/passwd)");
    NO("fd.name pmatch (/et)");         /* whole path parts, not prefixes */
    NO("fd.name pmatch (/etc/passwd/x)");
    YES("fd.name pmatch (/e*/pass*)");
    YES("fd.name exists");
    NO("proc.ppid exists");
    YES("proc.name in (shells)");
    YES("proc.name in shells");
    YES("proc.name in (all_shells)");   /* a list of lists */
    YES("proc.name in (bash, all_shells, zsh)");
    NO("proc.name in (bash, zsh)");
}

static void test_absent_values(void **state)
{
    (void)state;
    /* the process has no parent in the table: every comparison is false */
    NO("proc.pname = x");
    NO("proc.pname != x");
    YES("not proc.pname = x");
    NO("proc.pname in (x, y)");
    NO("proc.ppid != 1");
    NO("proc.pname startswith x");
    YES("not proc.pname exists");
}

static void test_precedence(void **state)
{
    (void)state;
    YES("evt.type = openat and fd.num = 4 or proc.name = cat");   /* (a and b) or c */
    NO("evt.type = openat and (fd.num = 4 or proc.name = dog)");
    YES("not fd.num = 4 and proc.name = cat");                      /* (not a) and b */
    NO("not (fd.num = 3 and proc.name = cat)");
    YES("not not fd.num = 3");
    YES("not(fd.num = 4)");
    YES("fd.num = 3 and(proc.name = cat)");
    YES("((((fd.num = 3))))");
    NO("fd.num = 4 or proc.name = dog or fd.name = x");
    YES("fd.num = 4 or proc.name = dog or fd.name = /etc/passwd");
}

static void test_macros(void **state)
{
    (void)state;
    YES("is_cat");
    YES("cat_fd3");   /* a macro using a macro */
    NO("not cat_fd3");
    YES("cat_fd3 and evt.type = openat");
}

static void test_quoting_and_escapes(void **state)
{
    (void)state;
    YES("proc.name = \"cat\"");
    YES("proc.name = 'cat'");
    YES("fd.name = \"/etc/passwd\"");
    YES("fd.name startswith \"/etc\" and proc.name = 'cat'");
    /* a path holding a tab, a space, a double quote and a backslash */
    const char *odd = "/tmp/a\tb c\"d\\e";
    if (!matches_on("evt.arg.pathname = \"/tmp/a\\tb c\\\"d\\\\e\"", openat_event, odd))
        fail_msg("double-quoted escapes");
    if (!matches_on("evt.arg.pathname = '/tmp/a\\tb c\"d\\\\e'", openat_event, odd))
        fail_msg("single-quoted escapes");
    if (!matches_on("evt.arg.pathname contains '\\/a\\t'", openat_event, odd))
        fail_msg("\\/ escape");
}

static void test_bad_escapes(void **state)
{
    (void)state;
    char out[2048];
    rules_errors(rules_for("proc.name = \"a\\qb\""), out, sizeof(out));
    if (!strstr(out, "t.yaml:12:19: error: unsupported escape sequence \\q"))
        fail_msg("%s", out);
    rules_errors(rules_for("proc.name = 'a\\\"b'"), out, sizeof(out));
    assert_non_null(strstr(out, "invalid \\\" escape in a '-quoted string"));
}

static void test_numbers_and_types(void **state)
{
    (void)state;
    YES("evt.rawres = 3");
    YES("evt.failed = false");
    YES("evt.is_open_read = true");
    NO("evt.is_open_write = true");
    YES("user.uid = 1000 and group.gid = 100");
    YES("evt.arg.flags = O_RDONLY");          /* Falco's argument names and text (fields_args.c) */
    YES("evt.arg.fd = '<f>/etc/passwd'");     /* openat's fd is the new one; dirfd the message's fd */
    YES("evt.arg.dirfd = AT_FDCWD");
    YES("evt.arg[0] = -100");          /* Open's first argument is fd */
    YES("evt.arg[2] = /etc/passwd");
    YES("evt.dir = <");
    NO("evt.dir = >");
    YES("evt.type startswith open");   /* a type set, computed at load */
    YES("evt.type != execve");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_directions),
        cmocka_unit_test(test_comparison_operators), cmocka_unit_test(test_string_operators),
        cmocka_unit_test(test_list_operators),       cmocka_unit_test(test_absent_values),
        cmocka_unit_test(test_precedence),           cmocka_unit_test(test_macros),
        cmocka_unit_test(test_quoting_and_escapes),  cmocka_unit_test(test_bad_escapes),
        cmocka_unit_test(test_numbers_and_types),
    };
    return cmocka_run_group_tests(tests, rules_group_setup, rules_group_teardown);
}
