/* test_rules_filter.c - Falco's condition language (filter/filter.h): every
 * operator, precedence, quoting and escapes, absent values, lists, lists of
 * lists, nested macros; evaluated on a crafted openat exit event. */
#include "rules_util.h"

#include "filter.h"
#include "regex_re2.h"
#include "strbuf.h"

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
    YES("fd.name regex '/etc/pass.*'");   /* the whole value, RE2's syntax */
    NO("fd.name regex 'etc/pass.*'");
    YES("fd.name regex '/(etc|usr)/[a-z]+'");
    NO("fd.name regex '/etc'");
}

/* bcontains and bstartswith take byte fields only (libsinsp's
 * flt_is_comparable: a string field refuses them). */
static void test_byte_operators_refused_on_strings(void **state)
{
    (void)state;
    char out[2048];
    rules_errors(rules_for("fd.name bcontains 2f706173"), out, sizeof(out));
    assert_non_null(strstr(out, "operator 'bcontains' does not apply to string field 'fd.name'"));
    rules_errors(rules_for("proc.name bstartswith 2f"), out, sizeof(out));
    assert_non_null(strstr(out, "operator 'bstartswith' does not apply to string field 'proc.name'"));
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

/* regex: RE2's memory and the pattern's size are bounded, each refusal
 * names the limit. */
static void test_regex_bounds(void **state)
{
    (void)state;
    char out[2048];
    static char cond[8192];
    memcpy(cond, "proc.name regex '", 17);
    memset(cond + 17, 'a', REGEX_MAX_PATTERN + 1);
    strcpy(cond + 17 + REGEX_MAX_PATTERN + 1, "'");
    rules_errors(rules_for(cond), out, sizeof(out));
    assert_non_null(strstr(out, "regular expression longer than 4096 bytes"));
    /* a program larger than RE2's budget (REGEX_MAX_MEM) */
    rules_errors(rules_for("proc.name regex '.{1000}.{1000}'"), out, sizeof(out));
    assert_non_null(strstr(out, "invalid regular expression '.{1000}.{1000}': pattern too large - compile failed"));
    /* POSIX syntax, as libsinsp's RE2::POSIX: no Perl classes */
    rules_errors(rules_for("proc.name regex '\\\\d+'"), out, sizeof(out));
    assert_non_null(strstr(out, "invalid escape sequence: \\d"));
    /* more patterns than a rule set may hold */
    struct strbuf sb = {0};
    for (int i = 0; i <= REGEX_MAX_PATTERNS; i++)
        strbuf_printf(&sb, "- rule: r%d\n  desc: d\n  condition: evt.type = open and proc.name regex 'x%d'\n"
                      "  output: o\n  priority: Notice\n", i, i);
    struct rules_diag d = {0};
    assert_null(rule_set_load_buffer("t.yaml", sb.data, sb.len, &d));
    FILE *fp = fmemopen(out, sizeof(out), "w");
    rules_diag_print(&d, fp);
    fclose(fp);
    assert_non_null(strstr(out, "more than 1024 regular expressions"));
    rules_diag_free(&d);
    strbuf_free(&sb);
}

/* A value that is not valid UTF-8 meets the pattern as libsinsp sanitizes
 * it: each maximal invalid subpart one U+FFFD. */
static void test_regex_utf8(void **state)
{
    (void)state;
    assert_true(matches_on("evt.arg.pathname regex 'a.b'", openat_event, "a\xff" "b"));
    assert_true(matches_on("evt.arg.pathname regex 'a.b'", openat_event, "a\xe0\xa0" "b"));   /* one subpart */
    assert_false(matches_on("evt.arg.pathname regex 'a..b'", openat_event, "a\xe0\xa0" "b"));
    assert_true(matches_on("evt.arg.pathname regex 'a..b'", openat_event, "a\xe0\x41" "b"));  /* lead byte alone, then A */
    assert_true(matches_on("evt.arg.pathname regex 'caf\xc3\xa9'", openat_event, "caf\xc3\xa9"));
}

/* A transformer over evt.dir still brings enter points to its rule, and
 * one over gvisor.point the exec's syscall exits. */
static void test_transformed_dir(void **state)
{
    (void)state;
    assert_true(matches_on("toupper(evt.dir) = >", openat_enter_event, "/etc/passwd"));
    assert_false(matches_on("toupper(evt.dir) = >", openat_event, "/etc/passwd"));
    assert_true(matches_on("tolower(gvisor.point) endswith /exit", openat_event, "/etc/passwd"));
}

/* What one event may cost is bounded: a modifier, as pmatch, walks its
 * values one by one, so they count against FILTER_MAX_EXPANDED; in and
 * == anyof search a sorted set and do not. */
static void test_linear_cost_bounded(void **state)
{
    (void)state;
    struct strbuf sb = {0};
    strbuf_puts(&sb, "- list: big\n  items: [");
    for (int i = 0; i <= FILTER_MAX_EXPANDED; i++)
        strbuf_printf(&sb, "%sv%d", i ? ", " : "", i);
    strbuf_puts(&sb, "]\n");
    size_t head = sb.len;
    const char *conds[] = {"proc.name in (big)", "proc.name == anyof (big)", "proc.name contains oneof (big)",
                           "fd.name pmatch (big)"};
    for (int i = 0; i < 4; i++) {
        sb.len = head;
        strbuf_printf(&sb, "- rule: r\n  desc: d\n  condition: evt.type = openat and %s\n  output: o\n  priority: Notice\n",
                      conds[i]);
        struct rules_diag d = {0};
        struct rule_set *rs = rule_set_load_buffer("t.yaml", sb.data, sb.len, &d);
        if ((rs != NULL) != (i < 2))
            fail_msg("%s: %s", conds[i], rs ? "loaded" : d.count ? d.items[0].message : "?");
        rule_set_free(rs);
        rules_diag_free(&d);
    }
    strbuf_free(&sb);
}

/* Falco's escapes, \xHH included, in both quotes. */
static void test_hex_escapes(void **state)
{
    (void)state;
    YES("fd.name = \"/etc/\\x70asswd\"");
    YES("fd.name = '\\x2fetc\\x2fpasswd'");
    NO("fd.name = \"/etc/\\x50asswd\"");
    char out[2048];
    rules_errors(rules_for("proc.name = \"\\x4\""), out, sizeof(out));
    assert_non_null(strstr(out, "truncated \\x escape"));
    rules_errors(rules_for("proc.name = \"\\xzz\""), out, sizeof(out));
    assert_non_null(strstr(out, "invalid \\x escape"));
    rules_errors(rules_for("proc.name = \"a\\x00\""), out, sizeof(out));
    assert_non_null(strstr(out, "cannot contain a NUL byte"));
}

/* Exceptions' comps take a modifier, its value the list it ranges over
 * (falco unit_tests/engine/test_rule_loader.cpp:1828-2263). */
static void test_exception_modifiers(void **state)
{
    (void)state;
    static const struct {
        unsigned line;
        const char *fields, *comps, *values;
        bool excepted;   /* cat opening /etc/passwd is excepted */
    } cases[] = {
        {1828, "[proc.name]", "[startswith oneof]", "[[ca, sudo, systemd]]", true},
        {1828, "[proc.name]", "[startswith oneof]", "[[ca, c]]", false},           /* two match: not one */
        {1851, "[proc.cmdline]", "[contains allof]", "[[ca, at]]", true},
        {1851, "[proc.cmdline]", "[contains allof]", "[[cat, shadow]]", false},
        {1875, "[fd.name]", "[endswith anyof]", "[[.sh, wd]]", true},
        {1897, "[fd.name]", "[glob oneof]", "[[\"/etc/p*\", \"/tmp/*\"]]", true},
        {1939, "[proc.name, fd.name]", "[startswith oneof, startswith]", "[[ca, sudo], /etc/]", true},
        {2121, "[proc.name]", "[= oneof]", "[[nmap, cat, nikto]]", true},
        {2145, "[proc.name]", "[regex oneof]", "[[\"c[a-z]t\", \"pentest-[0-9]{2,4}\"]]", true},
        {2166, "[proc.name]", "[startswith oneof]", "[ca]", true},   /* a scalar: its one-item list */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[1024];
        snprintf(text, sizeof(text), "- rule: r\n  desc: d\n  condition: evt.type = openat\n  output: o\n  priority: Notice\n"
                 "  exceptions:\n    - name: ex\n      fields: %s\n      comps: %s\n      values:\n        - %s\n",
                 cases[i].fields, cases[i].comps, cases[i].values);
        struct rules_engine *e = engine_with(text);
        size_t n = eval_count(e, openat_event("/etc/passwd"), &L);
        rules_engine_free(e);
        if (n != (cases[i].excepted ? 0u : 1u))
            fail_msg("test_rule_loader.cpp:%u: %s %s %s: %zu alerts", cases[i].line, cases[i].fields, cases[i].comps,
                     cases[i].values, n);
    }
    /* refused, as Falco refuses them: no base operator, a list operator or
     * a numeric one with a modifier (test_rule_loader.cpp:1985, 2027, 2050, 2073) */
    static const char *const bad[] = {"[frobulate oneof]", "[in oneof]", "[\">= oneof\"]", "[oneof]"};
    for (size_t i = 0; i < 4; i++) {
        char text[1024], out[2048];
        snprintf(text, sizeof(text), "- rule: r\n  desc: d\n  condition: evt.type = openat\n  output: o\n  priority: Notice\n"
                 "  exceptions:\n    - name: ex\n      fields: [proc.name]\n      comps: %s\n      values:\n        - [[bash]]\n",
                 bad[i]);
        rules_errors(text, out, sizeof(out));
        assert_non_null(strstr(out, "is not a supported comparison operator"));   /* Falco's message */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_directions),
        cmocka_unit_test(test_comparison_operators), cmocka_unit_test(test_string_operators),
        cmocka_unit_test(test_list_operators),       cmocka_unit_test(test_absent_values),
        cmocka_unit_test(test_precedence),           cmocka_unit_test(test_macros),
        cmocka_unit_test(test_quoting_and_escapes),  cmocka_unit_test(test_bad_escapes),
        cmocka_unit_test(test_numbers_and_types),    cmocka_unit_test(test_byte_operators_refused_on_strings),
        cmocka_unit_test(test_regex_bounds),         cmocka_unit_test(test_regex_utf8),
        cmocka_unit_test(test_transformed_dir),      cmocka_unit_test(test_linear_cost_bounded),
        cmocka_unit_test(test_hex_escapes),          cmocka_unit_test(test_exception_modifiers),
    };
    return cmocka_run_group_tests(tests, rules_group_setup, rules_group_teardown);
}
