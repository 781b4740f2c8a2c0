/* test_libs_filter.c - the filter language of current falcosecurity/libs
 * (48dfd53cd2, 2026-07-22), case by case: every case of
 * userspace/libsinsp/test/filter_parser.ut.cpp, filter_escaping.ut.cpp,
 * filter_compiler.ut.cpp, filter_op_*.ut.cpp, filter_ppm_codes.ut.cpp and
 * filter_transformer.ut.cpp (and filterchecks/cmp_operator_modifiers.cpp)
 * that has a gVisor counterpart, each naming its upstream file and line
 * and expecting upstream's answer: parse or not, compile or not, and for
 * evaluation the match on a crafted event.
 *
 * Counterparts: libs' generic names (test.str, a.b) are parsed as they
 * are (filter_syntax_check); fields gVisor has no source for are replaced
 * by a seccheckd field of the same libsinsp type (named at each group);
 * events are gVisor messages decoded as the daemon decodes them. Cases
 * needing a field only another part of seccheckd defines (fd.net, fd.ip,
 * evt.buffer) run when the field is known and are skipped, counted, when
 * it is not. */
#include "rules_util.h"

#include "filter.h"
#include "libs_filter_parser_cases.h"

/* ---- filter_parser.ut.cpp ---- */

static bool parses(const char *text, char *err, size_t errlen)
{
    size_t pos;
    return filter_syntax_check(text, strlen(text), err, errlen, &pos) == 0;
}

/* libs' test_accept: as written, then " in ", then spaces as newlines,
 * then newlines as tabs. Prints and counts what does not parse. */
static unsigned expect_parse(unsigned line, const char *text, bool variants)
{
    char err[300];
    if (!parses(text, err, sizeof(err))) {
        print_error("filter_parser.ut.cpp:%u: expected to parse: %s (%s)\n", line, text, err);
        return 1;
    }
    if (!variants)
        return 0;
    size_t n = strlen(text);
    char *v = malloc(n + 3);
    assert_non_null(v);
    v[0] = ' ';
    memcpy(v + 1, text, n);
    v[n + 1] = ' ';
    v[n + 2] = '\0';
    unsigned wrong = 0;
    for (int pass = 0; pass < 3 && !wrong; pass++) {
        for (size_t i = 0; pass && i < n + 2; i++) {
            if (pass == 1 && v[i] == ' ')
                v[i] = '\n';
            if (pass == 2 && v[i] == '\n')
                v[i] = '\t';
        }
        if (!parses(v, err, sizeof(err))) {
            print_error("filter_parser.ut.cpp:%u: expected to parse (variant %d): %s (%s)\n", line, pass, text, err);
            wrong++;
        }
    }
    free(v);
    return wrong;
}

static void test_parser_cases(void **state)
{
    (void)state;
    size_t n = sizeof(parser_cases) / sizeof(parser_cases[0]);
    unsigned wrong = 0;
    for (size_t i = 0; i < n; i++) {
        const struct parse_case *c = &parser_cases[i];
        char err[300];
        if (c->answer != REJECT) {
            wrong += expect_parse(c->line, c->text, c->answer == ACCEPT);
        } else if (parses(c->text, err, sizeof(err))) {
            print_error("filter_parser.ut.cpp:%u: expected a syntax error: %s\n", c->line, c->text);
            wrong++;
        }
    }
    assert_int_equal(wrong, 0);
}

/* filter_parser.ut.cpp:99: recursion is bounded; a deeply nested input is
 * an error, not a crash. The bound is Falco's (rule_loader_compiler.cpp:285
 * sets libsinsp's parser depth to 1000; libs' test checks its default,
 * 100), counted as libsinsp counts it. */
static void test_parser_depth(void **state)
{
    (void)state;
    char *deep = malloc(100001);
    assert_non_null(deep);
    memset(deep, '(', 100000);
    deep[100000] = '\0';
    char err[300];
    assert_false(parses(deep, err, sizeof(err)));
    assert_non_null(strstr(err, "nested too deeply"));
    free(deep);
    /* libsinsp counts 5 levels of recursion per parenthesis (parse_or,
     * parse_and, parse_not, parse_check, parse_embedded_remainder), then 4
     * for a macro name, 7 for a comparison: at 1000, 199 and 198 pass. */
    char text[512];
    for (int k = 197; k <= 200; k++) {
        memset(text, '(', (size_t)k);
        strcpy(text + k, "a");
        memset(text + k + 1, ')', (size_t)k);
        text[2 * k + 1] = '\0';
        assert_int_equal(parses(text, err, sizeof(err)), k <= 199);
        memset(text, '(', (size_t)k);
        strcpy(text + k, "a.b = 1");
        memset(text + k + 7, ')', (size_t)k);
        text[2 * k + 7] = '\0';
        assert_int_equal(parses(text, err, sizeof(err)), k <= 198);
    }
}

/* filter_parser.ut.cpp:259-264 (test_reject_msg): the reasons. */
static void test_parser_messages(void **state)
{
    (void)state;
    static const struct {
        unsigned line;
        const char *text, *says;
    } cases[] = {
        {259, "evt.arg[] = value", "expected a field argument: a quoted string or a bare string"},
        {261, "evt.arg[\"x\" = value", "expected ']'"},
        {262, "getopt(proc.args, \"nt:\")[] = value", "expected a field argument: a quoted string or a bare string"},
        {264, "getopt(proc.args, \"nt:\")[\"t\" = value", "expected ']'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char err[300];
        if (parses(cases[i].text, err, sizeof(err)) || !strstr(err, cases[i].says))
            fail_msg("filter_parser.ut.cpp:%u: expected '%s' for %s, got '%s'", cases[i].line, cases[i].says,
                     cases[i].text, err);
    }
}


/* ---- filter_escaping.ut.cpp ---- */

static void expect_unescape(unsigned line, const char *tok, size_t n, const char *want, size_t wantlen)
{
    char out[256], err[200];
    size_t outlen, bad;
    if (filter_unescape(tok, n, out, &outlen, &bad, err, sizeof(err)) != 0)
        fail_msg("filter_escaping.ut.cpp:%u: %.*s: %s", line, (int)n, tok, err);
    if (outlen != wantlen || memcmp(out, want, wantlen) != 0)
        fail_msg("filter_escaping.ut.cpp:%u: %.*s unescaped to %.*s", line, (int)n, tok, (int)outlen, out);
}

static void expect_bad_escape(unsigned line, const char *tok)
{
    char out[256], err[200];
    size_t outlen, bad;
    if (filter_unescape(tok, strlen(tok), out, &outlen, &bad, err, sizeof(err)) == 0)
        fail_msg("filter_escaping.ut.cpp:%u: %s unescaped (libs refuses it)", line, tok);
}

#define UNESCAPE(line, tok, want) expect_unescape(line, tok, sizeof(tok) - 1, want, sizeof(want) - 1)

static void test_escaping(void **state)
{
    (void)state;
    /* the escaped forms escape_str gives (its unidirectional cases),
     * unescaped back (the bidirectional ones) */
    UNESCAPE(38, "\"some string\"", "some string");
    UNESCAPE(51, "\"some\\\\b\\\\f\\\\n\\\\r\\\\tstring\"", "some\\b\\f\\n\\r\\tstring");
    UNESCAPE(64, "\"some \\\"quoted string\\\"\"", "some \"quoted string\"");
    UNESCAPE(77, "\"some 'quoted string'\"", "some 'quoted string'");
    UNESCAPE(88, "\"\\x41\"", "A");
    UNESCAPE(89, "\"\\x7f\"", "\x7f");
    UNESCAPE(90, "\"\\x01\"", "\x01");
    UNESCAPE(94, "\"\\xff\"", "\xff");
    UNESCAPE(95, "\"\\x80\"", "\x80");
    UNESCAPE(96, "\"\\xAb\"", "\xab");
    UNESCAPE(103, "\"\\xff\\xfe\"", "\xff\xfe");
    UNESCAPE(108, "\"a\\xffb\"", "a\xff" "b");
    UNESCAPE(112, "\"\\x00\"", "\0");
    UNESCAPE(113, "\"a\\x00b\"", "a\0b");
    UNESCAPE(117, "\"\\x413\"", "A3");
    UNESCAPE(143, "\"\0\"", "\0");          /* escape_str_quotes_nul: a raw NUL inside quotes */
    UNESCAPE(150, "\"a \xff\"", "a \xff");  /* high_byte_roundtrip */
    UNESCAPE(158, "\"some 'quoted string'\"", "some 'quoted string'");
    expect_bad_escape(121, "\"\\x\"");
    expect_bad_escape(122, "\"\\xf\"");
    expect_bad_escape(123, "\"a\\xf\"");
    expect_bad_escape(127, "\"\\xgg\"");
    expect_bad_escape(128, "\"\\xfg\"");
    expect_bad_escape(129, "\"\\x g\"");
    expect_bad_escape(130, "\"\\x-1\"");
    expect_bad_escape(131, "\"\\x+a\"");
}

/* ---- compiling with seccheckd's fields, without the loader ---- */

struct tenv {
    struct arena arena;
    struct filter_owned *owned;
    struct fieldref slots[512];
    size_t nslots;
    char err[400];
    unsigned errors, warnings;
};
static struct tenv T;

static const struct cnode *t_macro(void *ctx, const char *name, size_t len, size_t pos, bool *failed)
{
    (void)pos;
    *failed = false;
    struct tenv *t = ctx;
    snprintf(t->err, sizeof(t->err), "undefined macro '%.*s'", (int)len, name);
    t->errors++;
    return NULL;
}

static const struct filter_list *t_list(void *ctx, const char *name, size_t len)
{
    (void)ctx;
    static const char *const items[] = {"sh", "bash"};
    static const uint32_t lens[] = {2, 4};
    static const struct filter_list shells = {items, lens, 2};
    return len == 6 && memcmp(name, "shells", 6) == 0 ? &shells : NULL;
}

static uint32_t t_slot(void *ctx, const struct fieldref *f)
{
    struct tenv *t = ctx;
    for (size_t i = 0; i < t->nslots; i++)
        if (t->slots[i].id == f->id && t->slots[i].index == f->index && t->slots[i].arg == f->arg)
            return (uint32_t)i;
    assert_true(t->nslots < sizeof(t->slots) / sizeof(t->slots[0]));
    t->slots[t->nslots] = *f;
    return (uint32_t)t->nslots++;
}

static void t_error(void *ctx, size_t pos, const char *msg)
{
    (void)pos;
    struct tenv *t = ctx;
    if (!t->errors++)
        snprintf(t->err, sizeof(t->err), "%s", msg);
}

static void t_warn(void *ctx, size_t pos, const char *msg)
{
    (void)pos;
    (void)msg;
    ((struct tenv *)ctx)->warnings++;
}

/* Compiles cond; the node stays valid until the next compile. */
static struct cnode *compile(const char *cond)
{
    filter_owned_free(T.owned);
    T.owned = NULL;
    arena_free(&T.arena);
    arena_init(&T.arena, 16384, 64 << 20);
    T.nslots = 0;
    T.errors = T.warnings = 0;
    T.err[0] = '\0';
    struct filter_env env = {.ctx = &T, .arena = &T.arena, .macro = t_macro, .list = t_list, .slot = t_slot,
                             .error = t_error, .owned = &T.owned, .warn = t_warn};
    struct cnode *n = filter_parse(&env, cond, strlen(cond));
    return T.errors ? NULL : n;
}

static void tenv_free(void)
{
    filter_owned_free(T.owned);
    T.owned = NULL;
    arena_free(&T.arena);
}

/* Fields defined by another part of seccheckd (issue 25's fields): the
 * cases on them run once they exist. */
static unsigned skipped;
static bool known_field(const char *cond)
{
    static const char *const later[] = {"evt.buffer", "fd.net", "fd.ip", "fd.type"};
    for (size_t i = 0; i < sizeof(later) / sizeof(later[0]); i++) {
        const char *at = strstr(cond, later[i]);
        if (!at)
            continue;
        size_t n = strlen(later[i]);
        if (at[n] >= 'a' && at[n] <= 'z')
            continue;   /* fd.name, not fd.net */
        struct arena a;
        arena_init(&a, 1024, 1 << 20);
        struct fieldref f;
        char err[200];
        int r = fields_resolve(later[i], n, NULL, 0, false, &a, &f, err, sizeof(err));
        arena_free(&a);
        if (r != 0) {
            skipped++;
            return false;
        }
    }
    return true;
}

/* ---- events: gVisor's counterparts of libs' test events ---- */

enum ev_kind {
    EV_OPEN,        /* openat("/tmp/file_to_run") = 3 by cat: libs' PPME_SYSCALL_OPEN_X on /tmp/file_to_run */
    EV_GETCWD,      /* a failed getcwd (raw syscall 79) by a process named "syscall": evt.source's value */
    EV_GETCWD_NAMED,/* the same by a process named "getcwd": syscall.type's value in a string field */
    EV_MYEXE,       /* openat by a process named "myexe": cmp_operator_modifiers' execve of /myexe */
    EV_CONNECT4,    /* connect to 142.251.111.147:443 */
    EV_CONNECT6,    /* connect to [2001:4860:4860::8888]:443 */
    EV_OPEN_FAIL,   /* openat("/tmp/the_file") failing with EPERM: fd.num -1 */
    EV_EPOLL_FAIL,  /* epoll_create (raw syscall 213) failing with EINVAL: evt.rawres -22 */
    EV_OPEN_SUBDIR, /* openat("/opt/dir/SUBDIR/file.txt") */
    EV_OPEN_PMATCH, /* openat("/opt/dir/subdir/file.txt") */
    EV_QUOTES,      /* openat of a relative path holding quotes (pathname set by the case) */
    EV_TESTDIR,     /* openat("/test/dir") */
};

static const struct event *open_ev(const char *proc, const char *path, int64_t result, uint32_t errorno)
{
    static struct ctx_parts cp;
    static Gvisor__Syscall__Open m;
    static Gvisor__Syscall__Exit x;
    gvisor__syscall__open__init(&m);
    gvisor__syscall__exit__init(&x);
    x.result = result;
    x.errorno = (int64_t)errorno;
    m.context_data = mk_ctx(&cp, 10, proc, 1700000000000000001);
    m.exit = &x;
    m.sysno = 257;
    m.fd = -100;
    m.pathname = (char *)path;
    return evb_build(&B, 1, 7, 0, &m.base);
}

static const struct event *raw_ev(const char *proc, uint64_t sysno, uint32_t errorno)
{
    static struct ctx_parts cp;
    static Gvisor__Syscall__Syscall m;
    static Gvisor__Syscall__Exit x;
    gvisor__syscall__syscall__init(&m);
    gvisor__syscall__exit__init(&x);
    x.errorno = (int64_t)errorno;
    m.context_data = mk_ctx(&cp, 10, proc, 1700000000000000001);
    m.exit = &x;
    m.sysno = sysno;
    m.arg1 = 7;
    return evb_build(&B, 1, 6, 0, &m.base);
}

static const struct event *connect_ev(const uint8_t *addr, size_t alen)
{
    static struct ctx_parts cp;
    static Gvisor__Syscall__Connect c;
    static Gvisor__Syscall__Exit x;
    static uint8_t abuf[64];
    gvisor__syscall__connect__init(&c);
    gvisor__syscall__exit__init(&x);
    memcpy(abuf, addr, alen);
    c.context_data = mk_ctx(&cp, 10, "curl", 1700000000000000001);
    c.exit = &x;
    c.sysno = 42;
    c.fd = 5;
    c.fd_path = (char *)"socket:[3]";
    c.address = (ProtobufCBinaryData){.len = alen, .data = abuf};
    return evb_build(&B, 1, 10, 0, &c.base);
}

static const char *quotes_path = "";

static const struct event *make_event(enum ev_kind k)
{
    static const uint8_t in4[16] = {2, 0, 0x01, 0xbb, 142, 251, 111, 147};
    static const uint8_t in6[28] = {10, 0, 0x01, 0xbb, 0, 0, 0, 0, 0x20, 0x01, 0x48, 0x60, 0x48, 0x60,
                                    [22] = 0x88, [23] = 0x88};
    switch (k) {
    case EV_OPEN: return open_ev("cat", "/tmp/file_to_run", 3, 0);
    case EV_GETCWD: return raw_ev("syscall", 79, 34);
    case EV_GETCWD_NAMED: return raw_ev("getcwd", 79, 34);
    case EV_MYEXE: return open_ev("myexe", "/etc/hosts", 3, 0);
    case EV_CONNECT4: return connect_ev(in4, sizeof(in4));
    case EV_CONNECT6: return connect_ev(in6, sizeof(in6));
    case EV_OPEN_FAIL: return open_ev("cat", "/tmp/the_file", -1, 1);
    case EV_EPOLL_FAIL: return raw_ev("cat", 213, 22);
    case EV_OPEN_SUBDIR: return open_ev("cat", "/opt/dir/SUBDIR/file.txt", 3, 0);
    case EV_OPEN_PMATCH: return open_ev("cat", "/opt/dir/subdir/file.txt", 3, 0);
    case EV_QUOTES: return open_ev("cat", quotes_path, 3, 0);
    case EV_TESTDIR: return open_ev("cat", "/test/dir", 3, 0);
    }
    return NULL;
}

enum want { NO, YES, BAD, LOADS };

struct ecase {
    unsigned line;
    enum want want;
    const char *cond;
};

/* 1: matches, 0: does not, -1: refused (message in T.err). Through the
 * loader and a fresh engine (evt.num 1), as a rule: the condition, or a
 * check that is never true and reaches every event type, so the loader
 * indexes a rule whose types are empty as well. */
static int eval_on(enum ev_kind k, const char *cond)
{
    char text[4096];
    snprintf(text, sizeof(text), "- rule: r\n  desc: d\n  condition: >-\n    (%s) or proc.pid = -4242\n  output: o\n"
             "  priority: Notice\n", cond);
    struct rules_diag d = {0};
    struct rule_set *rs = rule_set_load_buffer("t.yaml", text, strlen(text), &d);
    if (!rs) {
        snprintf(T.err, sizeof(T.err), "%s", d.count ? d.items[0].message : "?");
        rules_diag_free(&d);
        return -1;
    }
    rules_diag_free(&d);
    struct rules_engine_config cfg;
    rules_engine_config_defaults(&cfg);
    cfg.rate = 0;
    struct rules_engine *e = rules_engine_new(&cfg);
    assert_non_null(e);
    rules_engine_set_rules(e, rs);
    size_t n = eval_count(e, make_event(k), &L);
    rules_engine_free(e);
    return n == 1;
}

static unsigned run_cases(const char *file, enum ev_kind k, const struct ecase *cases, size_t n)
{
    unsigned wrong = 0;
    for (size_t i = 0; i < n; i++) {
        const struct ecase *c = &cases[i];
        if (!known_field(c->cond))
            continue;
        int r = eval_on(k, c->cond);
        bool ok = c->want == BAD ? r < 0 : c->want == LOADS ? r >= 0 : r == (c->want == YES);
        if (!ok) {
            wrong++;
            print_error("%s:%u: %s: expected %s, got %s%s%s\n", file, c->line, c->cond,
                        c->want == BAD ? "an error" : c->want == LOADS ? "it to load" : c->want == YES ? "a match" : "no match",
                        r < 0 ? "an error: " : r ? "a match" : "no match", r < 0 ? T.err : "", "");
        }
    }
    return wrong;
}

#define RUN(file, k, cases) run_cases(file, k, cases, sizeof(cases) / sizeof(cases[0]))

/* ---- filter_compiler.ut.cpp ---- */

/* supported_operators (the mock check c.true, a string: proc.name; the
 * mock c.buffer, a byte buffer: evt.buffer) and
 * operators_field_types_compatibility, with the libsinsp type's
 * counterpart: PT_BOOL evt.is_io as evt.is_open_read, PT_CHARBUF fd.name,
 * PT_INT64 proc.pid, PT_IPADDR fd.ip as fd.sip, PT_PORT fd.port as
 * fd.sport, PT_RELTIME proc.pid.ts as proc.duration, PT_UINT32 evt.count
 * as user.uid, PT_UINT64 evt.num, PT_BYTEBUF evt.buffer and PT_IPNET
 * fd.net as themselves. PT_ABSTIME (evt.rawtime, compared as PT_UINT64),
 * PT_DOUBLE, PT_INT16 and PT_INT32 have no gVisor field. */
enum compiles { C_NO, C_OK };
static const struct {
    unsigned line;
    enum compiles ok;
    const char *cond;
} compile_cases[] = {
    {265, C_OK, "proc.name exists"},
    {266, C_OK, "proc.name = value"},
    {267, C_OK, "proc.name == value"},
    {268, C_OK, "proc.name != value"},
    {269, C_OK, "proc.name glob value"},
    {270, C_OK, "proc.name contains value"},
    {271, C_OK, "proc.name icontains value"},
    {272, C_OK, "proc.name startswith value"},
    {273, C_OK, "proc.name endswith value"},
    {274, C_OK, "proc.name > 1"},
    {275, C_OK, "proc.name < 1"},
    {276, C_OK, "proc.name >= 1"},
    {277, C_OK, "proc.name <= 1"},
    {278, C_OK, "proc.name in ()"},
    {279, C_OK, "proc.name intersects ()"},
    {280, C_OK, "proc.name pmatch ()"},
    {281, C_OK, "proc.name in()"},
    {282, C_OK, "evt.buffer bcontains 12ab001fc5"},
    {283, C_OK, "evt.buffer bstartswith 48545450"},
    {286, C_NO, "evt.buffer bstartswith g"},
    {287, C_NO, "evt.buffer bstartswith 123Z"},
    {288, C_NO, "evt.buffer bstartswith abc_1"},
    {318, C_OK, "evt.is_open_read exists"},
    {319, C_OK, "evt.is_open_read = true"},
    {320, C_OK, "evt.is_open_read != true"},
    {321, C_NO, "evt.is_open_read < true"},
    {322, C_NO, "evt.is_open_read <= true"},
    {323, C_NO, "evt.is_open_read > true"},
    {324, C_NO, "evt.is_open_read >= true"},
    {325, C_NO, "evt.is_open_read contains true"},
    {326, C_OK, "evt.is_open_read in (true)"},
    {327, C_OK, "evt.is_open_read intersects (true)"},
    {328, C_NO, "evt.is_open_read icontains true"},
    {329, C_NO, "evt.is_open_read startswith true"},
    {330, C_NO, "evt.is_open_read glob true"},
    {331, C_NO, "evt.is_open_read pmatch (true)"},
    {332, C_NO, "evt.is_open_read endswith true"},
    {333, C_NO, "evt.is_open_read bcontains 7472756500"},
    {334, C_NO, "evt.is_open_read bstartswith 7472756500"},
    {335, C_NO, "evt.is_open_read iglob true"},
    {336, C_NO, "evt.is_open_read regex '1'"},
    {339, C_OK, "evt.buffer exists"},
    {340, C_OK, "evt.buffer = test"},
    {341, C_OK, "evt.buffer != test"},
    {342, C_NO, "evt.buffer < 1"},
    {343, C_NO, "evt.buffer <= 2"},
    {344, C_NO, "evt.buffer > 3"},
    {345, C_NO, "evt.buffer >= 4"},
    {346, C_OK, "evt.buffer contains test"},
    {347, C_OK, "evt.buffer in (test)"},
    {348, C_OK, "evt.buffer intersects (test)"},
    {349, C_NO, "evt.buffer icontains test"},
    {350, C_OK, "evt.buffer startswith test"},
    {351, C_NO, "evt.buffer glob test"},
    {352, C_NO, "evt.buffer pmatch (test)"},
    {353, C_OK, "evt.buffer endswith test"},
    {354, C_OK, "evt.buffer bcontains 303000"},
    {355, C_OK, "evt.buffer bstartswith 303000"},
    {356, C_NO, "evt.buffer iglob test"},
    {357, C_NO, "evt.buffer regex '.*'"},
    {360, C_OK, "fd.name exists"},
    {361, C_OK, "fd.name = true"},
    {362, C_OK, "fd.name != true"},
    {363, C_OK, "fd.name < 1"},
    {364, C_OK, "fd.name <= 1"},
    {365, C_OK, "fd.name > 1"},
    {366, C_OK, "fd.name >= 1"},
    {367, C_OK, "fd.name contains true"},
    {368, C_OK, "fd.name in (true)"},
    {369, C_OK, "fd.name intersects (true)"},
    {370, C_OK, "fd.name icontains true"},
    {371, C_OK, "fd.name startswith true"},
    {372, C_OK, "fd.name glob true"},
    {373, C_OK, "fd.name pmatch (true)"},
    {374, C_OK, "fd.name endswith true"},
    {375, C_NO, "fd.name bcontains 303000"},
    {376, C_NO, "fd.name bstartswith 303000"},
    {377, C_OK, "fd.name iglob true"},
    {378, C_OK, "fd.name regex '/home/.*/dev'"},
    {446, C_OK, "proc.pid exists"},
    {447, C_OK, "proc.pid = 1"},
    {448, C_OK, "proc.pid != 1"},
    {449, C_OK, "proc.pid < 1"},
    {450, C_OK, "proc.pid <= 1"},
    {451, C_OK, "proc.pid > 1"},
    {452, C_OK, "proc.pid >= 1"},
    {453, C_NO, "proc.pid contains 1"},
    {454, C_OK, "proc.pid in (1)"},
    {455, C_OK, "proc.pid intersects (1)"},
    {456, C_NO, "proc.pid icontains 1"},
    {457, C_NO, "proc.pid startswith 1"},
    {458, C_NO, "proc.pid glob 1"},
    {459, C_NO, "proc.pid pmatch (1)"},
    {460, C_NO, "proc.pid endswith 1"},
    {461, C_NO, "proc.pid bcontains 303000"},
    {462, C_NO, "proc.pid bstartswith 303000"},
    {463, C_NO, "proc.pid iglob 1"},
    {464, C_NO, "proc.pid regex '1'"},
    {467, C_OK, "fd.sip exists"},
    {468, C_OK, "fd.sip = 127.0.0.1"},
    {469, C_OK, "fd.sip != 127.0.0.1"},
    {470, C_NO, "fd.sip < 127"},
    {471, C_NO, "fd.sip <= 127"},
    {472, C_NO, "fd.sip > 127"},
    {473, C_NO, "fd.sip >= 127"},
    {474, C_NO, "fd.sip contains 127.0.0.1"},
    {475, C_OK, "fd.sip in (127.0.0.1)"},
    {476, C_OK, "fd.sip intersects (127.0.0.1)"},
    {477, C_NO, "fd.sip icontains 127.0.0.1"},
    {478, C_NO, "fd.sip startswith 127.0.0.1"},
    {479, C_NO, "fd.sip glob 127.0.0.1"},
    {480, C_NO, "fd.sip pmatch (127.0.0.1)"},
    {481, C_NO, "fd.sip endswith 127.0.0.1"},
    {482, C_NO, "fd.sip bcontains 3132372e302e302e3100"},
    {483, C_NO, "fd.sip bstartswith 3132372e302e302e3100"},
    {484, C_NO, "fd.sip iglob 127.0.0.1"},
    {485, C_NO, "fd.sip regex '.*'"},
    {487, C_OK, "fd.sip == anyof (127.0.0.1)"},
    {488, C_OK, "fd.sip == allof (127.0.0.1)"},
    {489, C_OK, "fd.sip != anyof (127.0.0.1)"},
    {490, C_OK, "fd.sip != allof (127.0.0.1)"},
    {491, C_NO, "fd.sip contains anyof (127.0.0.1)"},
    {492, C_NO, "fd.sip regex allof ('.*')"},
    {495, C_OK, "fd.net exists"},
    {496, C_OK, "fd.net = 127.0.0.1/32"},
    {497, C_OK, "fd.net != 127.0.0.1/32"},
    {498, C_NO, "fd.net < 127"},
    {499, C_NO, "fd.net <= 127"},
    {500, C_NO, "fd.net > 127"},
    {501, C_NO, "fd.net >= 127"},
    {502, C_NO, "fd.net contains 127.0.0.1/32"},
    {503, C_OK, "fd.net in (127.0.0.1/32)"},
    {504, C_OK, "fd.net intersects (127.0.0.1/32)"},
    {505, C_NO, "fd.net icontains 127.0.0.1/32"},
    {506, C_NO, "fd.net startswith 127.0.0.1/32"},
    {507, C_NO, "fd.net glob 127.0.0.1/32"},
    {508, C_NO, "fd.net pmatch (127.0.0.1/32)"},
    {509, C_NO, "fd.net endswith 127.0.0.1/32"},
    {510, C_NO, "fd.net bcontains 3132372e302e302e312f333200"},
    {511, C_NO, "fd.net bstartswith 3132372e302e302e312f333200"},
    {512, C_NO, "fd.net iglob 127.0.0.1/32"},
    {513, C_NO, "fd.net regex '.*'"},
    {515, C_OK, "fd.net == anyof (127.0.0.1/32)"},
    {516, C_OK, "fd.net == allof (127.0.0.1/32)"},
    {517, C_OK, "fd.net != anyof (127.0.0.1/32)"},
    {518, C_OK, "fd.net != allof (127.0.0.1/32)"},
    {519, C_NO, "fd.net contains anyof (127.0.0.1/32)"},
    {520, C_NO, "fd.net startswith allof (127.0.0.1/32)"},
    {523, C_OK, "fd.sport exists"},
    {524, C_OK, "fd.sport = 1"},
    {525, C_OK, "fd.sport != 1"},
    {526, C_OK, "fd.sport < 1"},
    {527, C_OK, "fd.sport <= 1"},
    {528, C_OK, "fd.sport > 1"},
    {529, C_OK, "fd.sport >= 1"},
    {530, C_NO, "fd.sport contains 1"},
    {531, C_OK, "fd.sport in (1)"},
    {532, C_OK, "fd.sport intersects (1)"},
    {533, C_NO, "fd.sport icontains 1"},
    {534, C_NO, "fd.sport startswith 1"},
    {535, C_NO, "fd.sport glob 1"},
    {536, C_NO, "fd.sport pmatch (1)"},
    {537, C_NO, "fd.sport endswith 1"},
    {538, C_NO, "fd.sport bcontains 303000"},
    {539, C_NO, "fd.sport bstartswith 303000"},
    {540, C_NO, "fd.sport iglob 1"},
    {541, C_NO, "fd.sport regex '1'"},
    {544, C_OK, "proc.duration exists"},
    {545, C_OK, "proc.duration = 1"},
    {546, C_OK, "proc.duration != 1"},
    {547, C_OK, "proc.duration < 1"},
    {548, C_OK, "proc.duration <= 1"},
    {549, C_OK, "proc.duration > 1"},
    {550, C_OK, "proc.duration >= 1"},
    {551, C_NO, "proc.duration contains 1"},
    {552, C_OK, "proc.duration in (1)"},
    {553, C_OK, "proc.duration intersects (1)"},
    {554, C_NO, "proc.duration icontains 1"},
    {555, C_NO, "proc.duration startswith 1"},
    {556, C_NO, "proc.duration glob 1"},
    {557, C_NO, "proc.duration pmatch (1)"},
    {558, C_NO, "proc.duration endswith 1"},
    {559, C_NO, "proc.duration bcontains 303000"},
    {560, C_NO, "proc.duration bstartswith 303000"},
    {561, C_NO, "proc.duration iglob 1"},
    {562, C_NO, "proc.duration regex '1'"},
    {565, C_OK, "user.uid exists"},
    {566, C_OK, "user.uid = 1"},
    {567, C_OK, "user.uid != 1"},
    {568, C_OK, "user.uid < 1"},
    {569, C_OK, "user.uid <= 1"},
    {570, C_OK, "user.uid > 1"},
    {571, C_OK, "user.uid >= 1"},
    {572, C_NO, "user.uid contains 1"},
    {573, C_OK, "user.uid in (1)"},
    {574, C_OK, "user.uid intersects (1)"},
    {575, C_NO, "user.uid icontains 1"},
    {576, C_NO, "user.uid startswith 1"},
    {577, C_NO, "user.uid glob 1"},
    {578, C_NO, "user.uid pmatch (1)"},
    {579, C_NO, "user.uid endswith 1"},
    {580, C_NO, "user.uid bcontains 303000"},
    {581, C_NO, "user.uid bstartswith 303000"},
    {582, C_NO, "user.uid iglob 1"},
    {583, C_NO, "user.uid regex '1'"},
    {586, C_OK, "evt.num exists"},
    {587, C_OK, "evt.num = 1"},
    {588, C_OK, "evt.num != 1"},
    {589, C_OK, "evt.num < 1"},
    {590, C_OK, "evt.num <= 1"},
    {591, C_OK, "evt.num > 1"},
    {592, C_OK, "evt.num >= 1"},
    {593, C_NO, "evt.num contains 1"},
    {594, C_OK, "evt.num in (1)"},
    {595, C_OK, "evt.num intersects (1)"},
    {596, C_NO, "evt.num icontains 1"},
    {597, C_NO, "evt.num startswith 1"},
    {598, C_NO, "evt.num glob 1"},
    {599, C_NO, "evt.num pmatch (1)"},
    {600, C_NO, "evt.num endswith 1"},
    {601, C_NO, "evt.num bcontains 303000"},
    {602, C_NO, "evt.num bstartswith 303000"},
    {603, C_NO, "evt.num iglob 1"},
    {604, C_NO, "evt.num regex '1'"},
};

static void test_compiler_types(void **state)
{
    (void)state;
    unsigned wrong = 0;
    for (size_t i = 0; i < sizeof(compile_cases) / sizeof(compile_cases[0]); i++) {
        if (!known_field(compile_cases[i].cond))
            continue;
        bool ok = compile(compile_cases[i].cond) != NULL;
        if (ok != (compile_cases[i].ok == C_OK)) {
            wrong++;
            print_error("filter_compiler.ut.cpp:%u: %s: expected %s%s%s\n", compile_cases[i].line, compile_cases[i].cond,
                        compile_cases[i].ok == C_OK ? "it to compile: " : "an error", ok ? "" : T.err, "");
        } else if (ok && T.warnings) {
            wrong++;   /* test_filter_compile expects no warning unless it says so */
            print_error("filter_compiler.ut.cpp:%u: %s: unexpected warning\n", compile_cases[i].line, compile_cases[i].cond);
        }
    }
    assert_int_equal(wrong, 0);
}


/* boolean_evaluation: the mock checks c.true=1 and c.false=1 as a true
 * and a false check on the event (cat opening /tmp/file_to_run). */
static void test_compiler_boolean(void **state)
{
    (void)state;
    static const struct ecase cases[] = {
        {214, YES, "c.true=1"},
        {215, NO, "c.false=1"},
        {216, NO, "not c.true=1"},
        {217, NO, "not(c.true=1)"},
        {218, YES, "not not c.true=1"},
        {219, YES, "not not(c.true=1)"},
        {220, YES, "not (not c.true=1)"},
        {221, NO, "not not not c.true=1"},
        {222, NO, "not not not(c.true=1)"},
        {223, NO, "not (not (not c.true=1))"},
        {224, NO, "not(not(not c.true=1))"},
        {225, YES, "not not not not c.true=1"},
        {226, YES, "not not(not not c.true=1)"},
        {227, YES, "c.true=1 and c.true=1"},
        {228, NO, "c.true=1 and c.false=1"},
        {229, NO, "c.false=1 and c.true=1"},
        {230, NO, "c.false=1 and c.false=1"},
        {231, NO, "c.true=1 and not c.true=1"},
        {232, NO, "not c.true=1 and c.true=1"},
        {233, YES, "c.true=1 or c.true=1"},
        {234, YES, "c.true=1 or c.false=1"},
        {235, YES, "c.false=1 or c.true=1"},
        {236, NO, "c.false=1 or c.false=1"},
        {237, YES, "c.false=1 or not c.false=1"},
        {238, YES, "not c.false=1 or c.false=1"},
        {239, YES, "c.true=1 or c.true=1 and c.false=1"},
        {240, NO, "(c.true=1 or c.true=1) and c.false=1"},
        {241, YES, "not (not (c.true=1 or c.true=1) and c.false=1)"},
        {242, NO, "not (c.false=1 or c.false=1 or c.true=1)"},
        {243, YES, "not (c.false=1 or c.false=1 and not c.true=1)"},
        {244, NO, "not (c.false=1 or not c.false=1 and c.true=1)"},
        {245, NO, "not ((c.false=1 or not (c.false=1 and not c.true=1)) and c.true=1)"},
    };
    struct ecase mapped[sizeof(cases) / sizeof(cases[0])];
    static char texts[sizeof(cases) / sizeof(cases[0])][256];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *o = texts[i];
        for (const char *s = cases[i].cond; *s;) {
            if (!strncmp(s, "c.true=1", 8)) {
                o += sprintf(o, "proc.name=cat");
                s += 8;
            } else if (!strncmp(s, "c.false=1", 9)) {
                o += sprintf(o, "proc.name=dog");
                s += 9;
            } else {
                *o++ = *s++;
            }
        }
        *o = '\0';
        mapped[i] = (struct ecase){cases[i].line, cases[i].want, texts[i]};
    }
    assert_int_equal(RUN("filter_compiler.ut.cpp", EV_OPEN, mapped), 0);
}

/* str_escape: c.singlequote holds hello 'quoted', c.doublequote hello
 * "quoted": here the raw pathname of an openat (evt.arg.pathname). */
static void test_compiler_str_escape(void **state)
{
    (void)state;
    static const struct ecase single[] = {
        {249, YES, "evt.arg.pathname = 'hello \\'quoted\\''"},
        {250, YES, "evt.arg.pathname = \"hello 'quoted'\""},
        {254, NO, "evt.arg.pathname = 'hello \\\\'quoted\\\\''"},
        {255, NO, "evt.arg.pathname = \"hello ''quoted''\""},
    };
    static const struct ecase dbl[] = {
        {251, YES, "evt.arg.pathname = 'hello \"quoted\"'"},
        {252, YES, "evt.arg.pathname = \"hello \\\"quoted\\\"\""},
        {256, NO, "evt.arg.pathname = \"hello \\\\\"quoted\\\\\"\""},
        {257, NO, "evt.arg.pathname = 'hello \"\"quoted\"\"'"},
    };
    quotes_path = "hello 'quoted'";
    unsigned wrong = RUN("filter_compiler.ut.cpp", EV_QUOTES, single);
    quotes_path = "hello \"quoted\"";
    wrong += RUN("filter_compiler.ut.cpp", EV_QUOTES, dbl);
    assert_int_equal(wrong, 0);
}

/* complex_filter: Falco's "Unexpected outbound connection destination" of
 * 2019, macros expanded; every field it names is a gVisor one. */
static void test_compiler_complex(void **state)
{
    (void)state;
    const char *filter = "((evt.type = open or evt.type = openat) and evt.is_open_write = true and fd.typechar = f and "
                         "fd.num >= 0) and (fd.filename in (.bashrc, .bash_profile, .bash_history, .bash_login, "
                         ".bash_logout, .inputrc, .profile, .cshrc, .login, .logout, .history, .tcshrc, .cshdirs, "
                         ".zshenv, .zprofile, .zshrc, .zlogin, .zlogout) or fd.name in (/etc/profile, /etc/bashrc, "
                         "/etc/csh.cshrc, /etc/csh.login) or fd.directory in (/etc/zsh)) and not proc.name in (ash, "
                         "bash, csh, ksh, sh, tcsh, zsh, dash) and not (proc.name = exe and (proc.cmdline contains "
                         "\"/var/lib/docker\" or proc.cmdline contains '/var/run/docker') and proc.pname in (dockerd, "
                         "docker, dockerd-current, docker-current))";
    if (!compile(filter))   /* filter_compiler.ut.cpp:612 */
        fail_msg("%s", T.err);
}

/* compilation_warnings: evt.source as proc.name, evt.plugininfo (a field
 * used as a string) as fd.name. */
static void test_compiler_warnings(void **state)
{
    (void)state;
    static const struct {
        unsigned line;
        unsigned warnings;
        const char *cond;
    } cases[] = {
        {650, 1, "proc.name = fd.name"},
        {651, 1, "proc.name = 'tolower(fd.name)'"},
        {652, 1, "proc.name regex syscall"},
        {653, 1, "proc.name regex ^syscall$"},
        {654, 1, "proc.name regex ^syscall"},
        {655, 1, "proc.name regex syscall$"},
        {656, 1, "proc.name regex .*syscall"},
        {657, 1, "proc.name regex syscall.*"},
        {658, 1, "proc.name regex .*syscall.*"},
        {659, 1, "proc.name regex .+syscall"},
        {660, 1, "proc.name regex syscall.+"},
        {661, 1, "proc.name regex .+syscall.+"},
        {662, 1, "proc.name regex .?syscall"},
        {663, 1, "proc.name regex syscall.?"},
        {664, 1, "proc.name regex .?syscall.?"},
        {667, 0, "proc.name = unknown.field"},
        {668, 0, "proc.name = tolower"},
        {669, 0, "proc.name = tolower(fd.name)"},
        {670, 0, "proc.name = 'tolow(fd.name)'"},
        {671, 0, "proc.name regex syscall.{1}"},
        {672, 0, "proc.name regex syscall\\.*"},
        {673, 0, "proc.name regex s.*l"},
        {674, 0, "proc.name regex syscal[l]?"},
    };
    unsigned wrong = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (!compile(cases[i].cond)) {
            print_error("filter_compiler.ut.cpp:%u: %s: %s\n", cases[i].line, cases[i].cond, T.err);
            wrong++;
        } else if (T.warnings != cases[i].warnings) {
            print_error("filter_compiler.ut.cpp:%u: %s: %u warnings, expected %u\n", cases[i].line, cases[i].cond,
                        T.warnings, cases[i].warnings);
            wrong++;
        }
    }
    assert_int_equal(wrong, 0);
}

/* transformer_field_arg_support, and the refusals of the compiler's
 * evaluation tests, with their reasons. */
static void test_compiler_messages(void **state)
{
    (void)state;
    static const struct {
        unsigned line;
        const char *cond, *says;
    } cases[] = {
        {681, "toupper(fd.name)[x] = foo", "transformer 'toupper' does not support field arguments"},
        {685, "fd.name = val(proc.name)[x]", "transformer 'val' does not support field arguments"},
        /* val's field is proc.aname[1] (libsinsp's evt.around, EPF_NO_RHS) */
        {771, "proc.name = val(proc.aname[1])", "cannot be used as a right-hand side field"},
        {774, "proc.aname[1] = val(proc.name)", "does not support right-hand side fields"},
        /* evt.rawarg's EPF_NO_TRANSFORMER: proc.aname's */
        {782, "toupper(proc.aname[1]) = -1", "does not support transformers"},
        {789, "toupper(evt.rawres) = -1", "does not apply to numeric field 'evt.rawres'"},
        {790, "tolower(evt.rawres) = -1", "does not apply to numeric field"},
        {791, "b64(evt.rawres) = -1", "does not apply to numeric field"},
        {743, "proc.name = val(evt.is_open_read)", "cannot be compared"},
        {750, "proc.name = \"\\x00\"", "NUL byte"},
        {986, "fd.name regex val(proc.name)", "'regex' does not take a field"},
    };
    unsigned wrong = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (compile(cases[i].cond) || !strstr(T.err, cases[i].says)) {
            print_error("filter_compiler.ut.cpp:%u: %s: expected '%s', got '%s'\n", cases[i].line, cases[i].cond,
                        cases[i].says, T.err);
            wrong++;
        }
    assert_int_equal(wrong, 0);
}

/* The compiler's evaluations on libs' getcwd event (a raw syscall here;
 * evt.source's "syscall" is the process name, syscall.type's "getcwd" too
 * where a string field stands for it), its open and NUL-byte cases. */
static void test_compiler_eval(void **state)
{
    (void)state;
    static const struct ecase getcwd[] = {
        {699, YES, "(evt.type = getcwd)"},
        {700, YES, "(evt.arg.arg1 = val(evt.arg.arg1))"},
        {711, NO, "(proc.name = proc.name)"},
        {712, YES, "(proc.name = val(proc.name))"},
        {715, BAD, "(evt.type = val(tolower(toupper(evt.type))))"},
        {718, BAD, "(val(proc.name) = val(proc.name))"},
        {721, BAD, "(evt.type = val(evt.type, proc.name))"},
        {750, BAD, "proc.name = \"\\x00\""},
        {751, BAD, "proc.name contains \"\\x00\""},
        {752, BAD, "proc.name icontains \"\\x00\""},
        {753, BAD, "proc.name startswith \"\\x00\""},
        {754, BAD, "proc.name endswith \"\\x00\""},
        {755, BAD, "proc.name pmatch (\"\\x00\")"},
        {756, BAD, "proc.name glob \"\\x00?\""},
        {757, BAD, "proc.name regex \"\\x00\""},
        {758, LOADS, "evt.buffer = \"\\x00\""},
        {762, BAD, "evt.buffer bcontains \"\\x00\""},
        {763, BAD, "evt.buffer bstartswith \"\\x00\""},
        {801, YES, "evt.type = openat or evt.type = getcwd"},
        {802, YES, "evt.type = getcwd"},
        {860, NO, "fd.ip = 127.0.0.1 or fd.ip = 10.0.0.1"},
        {861, NO, "fd.ip = 10.0.0.1"},
        {869, NO, "fd.net = 127.0.0.1/32 or fd.net = 10.0.0.1/32"},
        {870, NO, "fd.net = 10.0.0.1/32"},
        {888, YES, "toupper(proc.name) = SYS or toupper(proc.name) = SYSCALL"},
        {889, YES, "toupper(proc.name) = SYSCALL"},
        {897, YES, "proc.name = val(fd.name) or proc.name = val(proc.name)"},
        {901, YES, "proc.name = val(proc.name)"},
        {972, YES, "proc.name regex '^[s]{1}ysca[l]{2}$'"},
        {975, NO, "proc.name regex 'yscal.*'"},
        {976, NO, "proc.name regex '.*yscal'"},
        {977, YES, "proc.name regex 'syscal.*'"},
        {980, NO, "proc.name regex '^unknown$'"},
        {983, YES, "toupper(proc.name) regex '^[A-Z]+$'"},
        {986, BAD, "fd.name regex val(proc.name)"},
        {1007, LOADS, "evt.type == oneof (getcwd, openat)"},
        {1008, LOADS, "evt.type == anyof (getcwd, openat)"},
        {1009, LOADS, "evt.type == allof (getcwd)"},
        {1012, LOADS, "evt.type != oneof (openat, execve)"},
        {1013, LOADS, "evt.type != anyof (openat, execve)"},
        {1014, LOADS, "evt.type != allof (openat)"},
        {1017, LOADS, "evt.type == oneof (getcwd, openat) and proc.name == oneof (syscall)"},
        {1020, LOADS, "not evt.type == oneof (openat) or evt.type == anyof (getcwd)"},
        {1024, LOADS, "toupper(proc.name) == oneof (INIT, BASH)"},
        {1106, YES, "evt.type == oneof (getcwd, openat)"},
        {1107, YES, "evt.type == oneof (getcwd)"},
        {1108, NO, "evt.type == oneof (openat, execve)"},
        {1109, NO, "evt.type == oneof ()"},
        {1112, YES, "evt.type == anyof (getcwd, openat)"},
        {1113, YES, "evt.type == anyof (getcwd)"},
        {1114, NO, "evt.type == anyof (openat, execve)"},
        {1115, NO, "evt.type == anyof ()"},
        {1118, YES, "evt.type == allof (getcwd)"},
        {1119, NO, "evt.type == allof (getcwd, openat)"},
        {1120, NO, "evt.type == allof (openat)"},
        {1121, NO, "evt.type == allof ()"},
        {1124, YES, "toupper(proc.name) == oneof (SYSCALL, NA)"},
        {1125, NO, "toupper(proc.name) == oneof (UNKNOWN, NA)"},
        {1128, YES, "evt.type == oneof (getcwd, openat) and proc.name == anyof (syscall)"},
        {1131, NO, "evt.type == oneof (openat, execve) and proc.name == anyof (syscall)"},
    };
    /* filter_transformers_combination on syscall.type: a string field with
     * its value (proc.name); on evt.type itself Falco refuses them when it
     * indexes the rule (filter_ppm_codes.ut.cpp:474, below). */
    static const struct ecase named[] = {
        {730, YES, "(tolower(proc.name) = getcwd)"},
        {731, YES, "(toupper(proc.name) = GETCWD)"},
        {732, YES, "(tolower(toupper(proc.name)) = getcwd)"},
        {733, YES, "(tolower(proc.name) = tolower(proc.name))"},
        {734, YES, "(toupper(proc.name) = toupper(proc.name))"},
        {735, YES, "(tolower(toupper(proc.name)) = tolower(toupper(proc.name)))"},
    };
    /* filter_cache_corner_cases' field with an argument: an openat of /test/dir */
    static const struct ecase testdir[] = {
        {878, YES, "evt.arg.pathname startswith /etc or evt.arg.pathname = /test/dir"},
        {879, YES, "evt.arg.pathname = /test/dir"},
    };
    unsigned wrong = RUN("filter_compiler.ut.cpp", EV_GETCWD, getcwd);
    wrong += RUN("filter_compiler.ut.cpp", EV_GETCWD_NAMED, named);
    wrong += RUN("filter_compiler.ut.cpp", EV_TESTDIR, testdir);
    assert_int_equal(wrong, 0);
}

/* ---- filter_op_*.ut.cpp ---- */

static void test_op_numeric(void **state)
{
    (void)state;
    /* evt.rawarg.res of a failed epoll_create (-22): evt.rawres here; evt.cpu has no gVisor source */
    static const struct ecase epoll[] = {
        {48, NO, "evt.rawres > 0"},
        {49, YES, "evt.rawres < 0"},
        {50, NO, "evt.rawres > 4294967295"},
        {51, YES, "evt.rawres < -1"},
        {52, YES, "evt.rawres > -65535"},
    };
    static const struct ecase fail[] = {
        {65, NO, "fd.num >= 0"},
        {66, NO, "fd.num > 0"},
        {67, YES, "fd.num < 0"},
        {68, NO, "fd.num > 4294967295"},
        {69, NO, "fd.num < -1"},
        {70, YES, "fd.num > -65535"},
    };
    unsigned wrong = RUN("filter_op_numeric_compare.ut.cpp", EV_EPOLL_FAIL, epoll);
    wrong += RUN("filter_op_numeric_compare.ut.cpp", EV_OPEN_FAIL, fail);
    assert_int_equal(wrong, 0);
}

static void test_op_contains(void **state)
{
    (void)state;
    /* evt.arg.flags' flag names (O_CREAT) are the fields part's; the file name cases: */
    static const struct ecase cases[] = {
        {44, YES, "fd.name contains /dir"},
        {45, YES, "fd.name icontains /subdir"},
        {46, NO, "fd.name icontains notthis"},
    };
    assert_int_equal(RUN("filter_op_contains.ut.cpp", EV_OPEN_SUBDIR, cases), 0);
}

static void test_op_pmatch(void **state)
{
    (void)state;
    static const struct ecase cases[] = {
    {41, YES, "fd.name pmatch (/opt/dir)"},
    {42, YES, "fd.name pmatch (/opt/dir/subdir)"},
    {43, NO, "fd.name pmatch (/opt/dir2)"},
    {44, YES, "fd.name pmatch (/opt/dir, /opt/dir2)"},
    {45, NO, "fd.name pmatch (/opt/dir3, /opt/dir2)"},
    {46, YES, "fd.name pmatch (/opt/*)"},
    {47, YES, "fd.name pmatch (/opt/*/subdir)"},
    {54, YES, "fd.name pmatch (/opt/di?/subdir)"},
    {55, NO, "fd.name pmatch (/opt/dii?/subdir)"},
    {56, YES, "fd.name pmatch (/opt/di[r]/subdir)"},
    {57, NO, "fd.name pmatch (/opt/di[!r]/subdir)"},
    {58, NO, "fd.name pmatch (/opt/di[t]/subdir)"},
    {60, NO, "fd.name pmatch (/opt/di/subdir)"},
    {61, NO, "fd.name pmatch (/opt/*/subdir2)"},
    {62, YES, "fd.name pmatch (/opt/*/*)"},
    {63, NO, "fd.name pmatch (/opt/*/*/subsubdir)"},
    };
    assert_int_equal(RUN("filter_op_pmatch.ut.cpp", EV_OPEN_PMATCH, cases), 0);
}

/* gVisor's connect carries the peer only: the server side (fd.sip; fd.ip
 * and fd.net, the fields part's, on that address), not libs' socktuple. */
static void test_op_net(void **state)
{
    (void)state;
    static const struct ecase v4[] = {
    {47, YES, "fd.ip == 142.251.111.147"},
    {48, YES, "fd.sip == 142.251.111.147"},
    {54, NO, "fd.ip != 142.251.111.147"},
    {56, YES, "fd.sip != 0:0:0:0:0:0:0:1"},
    {57, NO, "fd.sip == '0:0:0:0:0:0:0:1'"},
    {59, YES, "fd.net == 142.0.0.0/4"},
    {60, YES, "fd.net == 142.251.0.0/8"},
    {61, YES, "fd.net == 142.251.111.0/16"},
    {62, YES, "fd.net != 10.0.0.0/8"},
    {63, YES, "fd.net != 2001:db8:abcd:0012::0/64"},
    {65, NO, "fd.net == 10.0.0.0/8"},
    {66, NO, "fd.net == 2001:db8:abcd:0012::0/64"},
    {93, YES, "fd.sip == anyof (142.251.111.147)"},
    {94, YES, "fd.sip == anyof (10.0.0.1, 142.251.111.147)"},
    {95, NO, "fd.sip == anyof (10.0.0.1, 192.168.0.1)"},
    {98, YES, "fd.sip == allof (142.251.111.147)"},
    {99, NO, "fd.sip == allof (142.251.111.147, 10.0.0.1)"},
    {102, YES, "fd.sip == oneof (142.251.111.147)"},
    {103, YES, "fd.sip == oneof (10.0.0.1, 142.251.111.147)"},
    {104, NO, "fd.sip == oneof (10.0.0.1, 192.168.0.1)"},
    {107, YES, "fd.sip != anyof (10.0.0.1)"},
    {108, NO, "fd.sip != anyof (142.251.111.147)"},
    {109, YES, "fd.sip != allof (10.0.0.1, 192.168.0.1)"},
    };
    static const struct ecase v6[] = {
    {148, YES, "fd.ip == 2001:4860:4860::8888"},
    {149, YES, "fd.sip == 2001:4860:4860::8888"},
    {155, NO, "fd.ip != 2001:4860:4860::8888"},
    {157, YES, "fd.sip != 127.0.0.1"},
    {158, NO, "fd.sip == '127.0.0.1'"},
    {160, YES, "fd.net == 2001::0/16"},
    {161, YES, "fd.net == 2001:4860::0/32"},
    {162, YES, "fd.net == 2001:4860:4860::8888/48"},
    {163, YES, "fd.net != 10::0/16"},
    {164, YES, "fd.net != 10.0.0.0/8"},
    {166, NO, "fd.net == 10.0.0.0/8"},
    {167, NO, "fd.net == 2001:db8:abcd:0012::0/64"},
    };
    unsigned wrong = RUN("filter_op_net_compare.ut.cpp", EV_CONNECT4, v4);
    wrong += RUN("filter_op_net_compare.ut.cpp", EV_CONNECT6, v6);
    assert_int_equal(wrong, 0);
}

/* filter_op_bytebuf.ut.cpp: gVisor sends no read or write data (evt.buffer
 * is always absent), so only the compile answers have a counterpart. */
static void test_op_bytebuf(void **state)
{
    (void)state;
    static const struct ecase cases[] = {
        {40, BAD, "evt.buffer bcontains"},
        {41, BAD, "evt.buffer bcontains 2"},
        {42, BAD, "evt.buffer bcontains 2g"},
        {44, LOADS, "evt.buffer bcontains 68656c6c6f"},
        {45, LOADS, "evt.buffer bcontains 656c6C"},
        {50, BAD, "evt.buffer bstartswith"},
        {51, BAD, "evt.buffer bstartswith 2"},
        {52, BAD, "evt.buffer bstartswith 2g"},
        {54, LOADS, "evt.buffer bstartswith 68"},
        {77, LOADS, "evt.buffer = \"a\\x00b\""},
    };
    assert_int_equal(RUN("filter_op_bytebuf.ut.cpp", EV_OPEN, cases), 0);
}

/* ---- filter_transformer.ut.cpp ---- */

/* The transformer unit tests, on constants (rawstring values) and lists
 * of constants, and the types each takes. */
static void test_transformers_unit(void **state)
{
    (void)state;
    static const struct ecase cases[] = {
        {126, YES, "toupper(\"hello\") = HELLO"},
        {127, YES, "toupper(\"WORLD\") = WORLD"},
        {128, YES, "toupper(\"eXcItED\") = EXCITED"},
        {129, YES, "toupper(\"\") = \"\""},
        {130, YES, "toupper((\"hello\", \"wOrLd\", \"ONE_1234\")) in (HELLO, WORLD, ONE_1234)"},
        {130, YES, "len(toupper((\"hello\", \"wOrLd\", \"ONE_1234\"))) = 3"},
        {120, BAD, "toupper(proc.pid) = 1"},
        {120, BAD, "toupper(evt.is_open_read) = x"},
        {120, BAD, "toupper(fd.sip) = x"},
        {174, YES, "tolower(\"HELLO\") = hello"},
        {175, YES, "tolower(\"world\") = world"},
        {176, YES, "tolower(\"NoT eXcItED\") = \"not excited\""},
        {177, YES, "tolower(\"\") = \"\""},
        {178, YES, "tolower((\"HELLO\", \"wOrLd\", \"one_1234\")) in (hello, world, one_1234)"},
        {168, BAD, "tolower(proc.pid) = 1"},
        {223, YES, "b64(\"aGVsbG8=\") = hello"},
        {224, YES, "b64(\"d29ybGQgIQ==\") = \"world !\""},
        {225, YES, "b64(\"\") = \"\""},
        {217, BAD, "b64(user.uid) = 1"},
        {266, YES, "basename(\"/home/ubuntu/hello.txt\") = hello.txt"},
        {267, YES, "basename(\"/usr/local/bin/cat\") = cat"},
        {268, YES, "basename(\"/\") = \"\""},
        {269, YES, "basename(\"/hello/\") = \"\""},
        {270, YES, "basename(\"hello\") = hello"},
        {271, YES, "basename(\"\") = \"\""},
        {260, BAD, "basename(fd.num) = 1"},
        {312, YES, "len(\"/home/ubuntu/hello.txt\") = 22"},
        {313, YES, "len(\"/\") = 1"},
        {314, YES, "len((\"/hello\")) = 1"},
        {315, YES, "len(()) = 0"},
        {316, YES, "len((1, 2, 3, 4, 5)) = 5"},
        {306, BAD, "len(proc.pid) = 1"},
        {306, BAD, "len(evt.failed) = 1"},
    };
    assert_int_equal(RUN("filter_transformer.ut.cpp", EV_OPEN, cases), 0);
}

/* The evaluations on libs' open of /tmp/file_to_run (fd.types, a list
 * field, and a read's data have no gVisor source; where a test needs a
 * list that is not a constant, getopt's result stands for fd.types). */
static void test_transformers_eval(void **state)
{
    (void)state;
    static const struct ecase cases[] = {
    {364, YES, "basename(fd.name) = file_to_run"},
    {365, NO, "basename(fd.name) = /tmp/file_to_run"},
    {393, YES, "len(fd.name) = 16"},
    {432, YES, "join(fd.name, (fd.name,fd.directory)) = /tmp/file_to_run/tmp/file_to_run/tmp"},
    {435, YES, "join(\"-\", (fd.name,fd.directory)) = /tmp/file_to_run-/tmp"},
    {436, YES, "join(\"-\", (\"aaa\",\"bbb\")) = aaa-bbb"},
    {437, YES, "join(\"->\", (\"aaa\",\"bbb\")) = aaa->bbb"},
    {438, YES, "join(\"->\", (\"aaa\")) = aaa"},
    {439, YES, "join(\"->\", (fd.name, \"aaa\")) = /tmp/file_to_run->aaa"},
    {440, YES, "join(\"->\", (fd.name, \"aaa\", fd.directory)) = /tmp/file_to_run->aaa->/tmp"},
    {443, YES, "join(\"->\", (toupper(fd.name), \"aaa\")) = /TMP/FILE_TO_RUN->aaa"},
    {445, YES, "join(\"->\", ( \"aaa\", toupper(fd.name))) = aaa->/TMP/FILE_TO_RUN"},
    {447, YES, "join(\"-\", (fd.directory, join(\"->\", ( \"aaa\", toupper(fd.name))))) = /tmp-aaa->/TMP/FILE_TO_RUN"},
    {450, YES, "join(\",\", (\"aaa\",\"bbb\")) = \"aaa,bbb\""},
    {451, NO, "join(\",\", (\"aaa\",\"bbb\")) = \"aaa-bbb\""},
    {452, YES, "join(\",\", (evt.num, evt.num)) = \"1,1\""},
    {453, YES, "join(\",\", ()) = \"\""},
    {454, NO, "join(\",\", ()) = \",\""},
    {458, BAD, "join() = foo"},
    {459, BAD, "join(\"-\") = foo"},
    {460, BAD, "join(\"-\", \"a\", \"b\") = foo"},
    {462, BAD, "join(getopt((\"-n\"), \"n\"), (\"a\", \"b\")) = foo"},
    {463, BAD, "join((\"a\", \"b\"), (\"a\", \"b\")) = foo"},
    {464, BAD, "join((\"a\", \"b\"), \"a\") = foo"},
    {465, BAD, "join(\"a\", \"b\") = foo"},
    {488, YES, "concat(fd.name, fd.directory) = /tmp/file_to_run/tmp"},
    {489, YES, "concat(\"aaa\", \"bbb\") = aaabbb"},
    {490, YES, "concat(\"aaa\", \"bbb\", \"ccc\") = aaabbbccc"},
    {491, YES, "concat(fd.name, \"aaa\") = /tmp/file_to_runaaa"},
    {492, YES, "concat(fd.name, \"aaa\", fd.directory) = /tmp/file_to_runaaa/tmp"},
    {494, YES, "concat(toupper(fd.name), \"aaa\") = /TMP/FILE_TO_RUNaaa"},
    {495, YES, "concat(\"aaa\", toupper(fd.name)) = aaa/TMP/FILE_TO_RUN"},
    {496, YES, "concat(fd.directory, concat(\"aaa\", toupper(fd.name))) = /tmpaaa/TMP/FILE_TO_RUN"},
    {499, YES, "concat(\"aaa\", \"bbb\") = \"aaabbb\""},
    {500, NO, "concat(\"aaa\", \"bbb\") = \"aaa-bbb\""},
    {504, BAD, "concat() = foo"},
    {505, BAD, "concat(\"aaa\") = foo"},
    {507, BAD, "concat(getopt((\"-n\"), \"n\"), \"a\") = foo"},
    {508, BAD, "concat((\"a\", \"b\"), \"a\") = foo"},
    {509, BAD, "concat(\"a\", (\"a\", \"b\")) = foo"},
    {510, BAD, "concat((\"a\", \"b\"), (\"a\", \"b\")) = foo"},
    {534, YES, "toupper(join(\"-\", (fd.name, fd.directory))) = /TMP/FILE_TO_RUN-/TMP"},
    {537, YES, "toupper(join(\"-\", (\"aaa\", \"bbb\"))) = AAA-BBB"},
    {540, YES, "tolower(join(\"-\", (fd.name, fd.directory))) = /tmp/file_to_run-/tmp"},
    {543, YES, "tolower(join(\"-\", (\"AAA\", \"BBB\"))) = aaa-bbb"},
    {548, YES, "len(join(\"-\", (fd.name, fd.directory))) = 21"},
    {549, YES, "len(join(\"-\", (\"aaa\", \"bbb\"))) = 7"},
    {553, YES, "join(\"-\", (\"aaa\", \"bbb\")) = \"aaa-bbb\""},
    {554, YES, "b64(join(\"W\", (\"YWFhL\", \"JiYg\"))) = \"aaa-bbb\""},
    {557, YES, "toupper(tolower(join(\"-\", (fd.name, fd.directory)))) = /TMP/FILE_TO_RUN-/TMP"},
    {562, YES, "toupper(join(\"-\", (fd.name, fd.directory))) contains /TMP"},
    {563, YES, "toupper(join(\"-\", (fd.name, fd.directory))) startswith /TMP"},
    {564, YES, "len(join(\"-\", (fd.name, fd.directory))) > 20"},
    {565, YES, "len(join(\"-\", (fd.name, fd.directory))) >= 21"},
    {566, YES, "len(join(\"-\", (fd.name, fd.directory))) < 22"},
    {569, YES, "toupper(concat(fd.name, fd.directory)) = /TMP/FILE_TO_RUN/TMP"},
    {570, YES, "toupper(concat(\"aaa\", \"bbb\")) = AAABBB"},
    {573, YES, "tolower(concat(fd.name, fd.directory)) = /tmp/file_to_run/tmp"},
    {574, YES, "tolower(concat(\"AAA\", \"BBB\")) = aaabbb"},
    {579, YES, "len(concat(fd.name, fd.directory)) = 20"},
    {580, YES, "len(concat(\"aaa\", \"bbb\")) = 6"},
    {584, YES, "concat(\"aaa\", \"bbb\") = \"aaabbb\""},
    {585, YES, "b64(concat(\"YWFh\", \"YmJi\")) = \"aaabbb\""},
    {588, YES, "toupper(tolower(concat(fd.name, fd.directory))) = /TMP/FILE_TO_RUN/TMP"},
    {593, YES, "toupper(concat(fd.name, fd.directory)) contains /TMP"},
    {594, YES, "toupper(concat(fd.name, fd.directory)) startswith /TMP"},
    {595, YES, "len(concat(fd.name, fd.directory)) > 19"},
    {596, YES, "len(concat(fd.name, fd.directory)) >= 20"},
    {597, YES, "len(concat(fd.name, fd.directory)) < 21"},
    {726, YES, "getopt((\"-n\",\"\"), \"n\") intersects (\"n\")"},
    {727, YES, "getopt((\"-t\", \"hello\"), \"t:\") intersects (\"t\", \"hello\")"},
    {728, YES, "getopt((\"-nt\", \"hello\"), \"nt:\") intersects (\"n\", \"t\", \"hello\")"},
    {730, YES, "getopt((\"-thello\"), \"t:\") intersects (\"t\", \"hello\")"},
    {731, YES, "getopt((\"-n\", \"-t\", \"hello\"), \"nt:\") intersects (\"n\", \"t\", \"hello\")"},
    {734, NO, "getopt((\"-n\"), \"n\") intersects (\"t\")"},
    {735, YES, "getopt((\"-n\", \"--\", \"-t\"), \"nt:\") intersects (\"n\")"},
    {736, NO, "getopt((\"-n\", \"--\", \"-t\"), \"nt:\") intersects (\"t\")"},
    {737, YES, "getopt((\"-x\", \"-n\"), \"n\") intersects (\"?\", \"n\")"},
    {738, NO, "getopt((\"-x\", \"-n\"), \"n\") intersects (\"x\")"},
    {739, YES, "getopt((\"-l\", \"-p\", \"8080\", \"-e\", \"/bin/sh\"), \"lp:e:\") intersects (\"l\", \"p\", \"e\", \"8080\", \"/bin/sh\")"},
    {745, YES, "getopt((\"-lpe\", \"/bin/sh\"), \"lp:e:\") intersects (\"l\",\"p\",\"e\")"},
    {749, YES, "getopt((\"-lpe\", \"/bin/sh\"), \"lpe:\") intersects (\"/bin/sh\")"},
    {751, BAD, "getopt() intersects (\"n\")"},
    {752, BAD, "getopt((\"a\")) intersects (\"n\")"},
    {753, BAD, "getopt((\"a\"), \"n\", \"extra\") intersects (\"n\")"},
    {755, BAD, "getopt(\"not_a_list\", \"n\") intersects (\"n\")"},
    {757, BAD, "getopt((\"-n\"), (\"n\")) intersects (\"n\")"},
    {759, NO, "getopt((\"-n\", \"-t\"), \"\") intersects (\"n\")"},
    {760, NO, "getopt((\"-n\", \"-t\"), \"\") intersects (\"t\")"},
    {761, NO, "getopt((\"\"), \"n\") intersects (\"n\")"},
    {762, NO, "getopt((\"arg1\", \"arg2\", \"arg3\"), \"n\") intersects (\"n\")"},
    {763, NO, "getopt((\"arg1\", \"-n\", \"arg2\"), \"n\") intersects (\"n\")"},
    {764, NO, "getopt((\"-\", \"-n\"), \"n\") intersects (\"n\")"},
    {765, NO, "getopt((\"-\"), \"n\") intersects (\"n\")"},
    {766, YES, "getopt((\"-t\"), \"t:\") intersects (\"\")"},
    {767, NO, "getopt((\"-t\"), \"t:\") intersects (\"?\")"},
    {768, NO, "getopt((\"-t\"), \"t:\") intersects (\"t\")"},
    {769, YES, "getopt((\"-t\"), \":t:\") intersects (\"\")"},
    {770, NO, "getopt((\"-t\"), \":t:\") intersects (\":\")"},
    {771, YES, "getopt((\"-n\", \"--\", \"--\"), \"n\") intersects (\"n\")"},
    {772, NO, "getopt((\"--\", \"-n\"), \"n\") intersects (\"n\")"},
    {773, YES, "getopt((\"-nat\", \"hello\"), \"na:t\") intersects (\"n\", \"a\", \"t\")"},
    {775, YES, "getopt((\"-abcvalue\"), \"abc:\") intersects (\"a\", \"b\", \"c\", \"value\")"},
    {778, YES, "getopt((\"-abc\", \"value\"), \"abc:\") intersects (\"a\", \"b\", \"c\", \"value\")"},
    {781, YES, "getopt((\"-n\", \"-n\", \"-n\"), \"n\") intersects (\"n\")"},
    {782, YES, "getopt((\"-v\", \"-v\", \"-v\"), \"v\") intersects (\"v\")"},
    {783, YES, "getopt((\"-t\", \"val1\", \"-t\", \"val2\"), \"t:\") intersects (\"t\", \"val1\", \"val2\")"},
    {786, YES, "getopt((\"-p\", \"8080\"), \"p:\") intersects (\"p\", \"8080\")"},
    {787, YES, "getopt((\"-p8080\"), \"p:\") intersects (\"p\", \"8080\")"},
    {788, YES, "getopt((\"-n\", \"42\"), \"n:\") intersects (\"n\", \"42\")"},
    {789, YES, "getopt((\"-t\", \"-123\"), \"t:\") intersects (\"t\", \"-123\")"},
    {790, YES, "getopt((\"-f\", \"/etc/passwd\"), \"f:\") intersects (\"f\", \"/etc/passwd\")"},
    {793, YES, "getopt((\"-f\", \"./relative/path\"), \"f:\") intersects (\"f\", \"./relative/path\")"},
    {798, YES, "getopt((\"-u\", \"http://example.com:8080/path\"), \"u:\") intersects (\"u\", \"http://example.com:8080/path\")"},
    {801, YES, "getopt((\"-t\", \"\"), \"t:\") intersects (\"t\", \"\")"},
    {802, YES, "getopt((\"-p\", \"22\", \"-i\", \"keyfile\", \"user@host\"), \"p:i:\") intersects (\"p\", \"22\", \"i\", \"keyfile\")"},
    {805, YES, "getopt((\"-xzf\", \"file.tar.gz\"), \"xzf:\") intersects (\"x\", \"z\", \"f\", \"file.tar.gz\")"},
    {808, YES, "getopt((\"-X\", \"POST\", \"-H\", \"header\", \"-d\", \"data\", \"url\"), \"X:H:d:\") intersects (\"X\", \"POST\", \"H\", \"header\", \"d\", \"data\")"},
    {811, YES, "getopt((\"-e\", \"/bin/sh\", \"attacker.com\", \"4444\"), \"e:\") intersects (\"e\", \"/bin/sh\")"},
    {814, YES, "getopt((\"-rn\", \"pattern\", \"/path\"), \"rn\") intersects (\"r\", \"n\")"},
    {816, YES, "getopt((\"-it\", \"-p\", \"8080:80\", \"-v\", \"/host:/container\", \"image\"), \"itp:v:\") intersects (\"i\", \"t\", \"p\", \"8080:80\", \"v\", \"/host:/container\")"},
    {819, YES, "getopt((\"-a\", \"1\", \"-b\", \"2\", \"-c\", \"3\"), \"a:b:c:\") intersects (\"a\", \"1\", \"b\", \"2\", \"c\", \"3\")"},
    {822, YES, "getopt((\"-abc\"), \"abc\") intersects (\"a\", \"b\", \"c\")"},
    {823, YES, "getopt((\"-a\", \"val\", \"-b\"), \"a:b\") intersects (\"a\", \"val\", \"b\")"},
    {825, YES, "getopt((\"-abcdefg\"), \"abcdefg\") intersects (\"a\", \"b\", \"c\", \"d\", \"e\", \"f\", \"g\")"},
    {828, YES, "getopt((\"-1\", \"-2\", \"-3\"), \"123\") intersects (\"1\", \"2\", \"3\")"},
    {830, YES, "getopt((\"-a1b2c3\"), \"a1b2c3\") intersects (\"a\", \"1\", \"b\", \"2\", \"c\", \"3\")"},
    {833, NO, "getopt((\"regular_file\", \"-f\", \"another_file\"), \"f:\") intersects (\"f\", \"another_file\")"},
    {836, YES, "getopt((\"-f\", \"another_file\", \"regular_file\"), \"f:\") intersects (\"f\", \"another_file\")"},
    {839, YES, "getopt((\"-t\", \" \"), \"t:\") intersects (\"t\", \" \")"},
    {840, NO, "getopt((\"\", \"-n\", \"\"), \"n\") intersects (\"n\")"},
    {841, YES, "getopt((\"-@\", \"-+\"), \"@+\") intersects (\"@\", \"+\")"},
    {842, YES, "getopt((\"-nx\"), \"n\") intersects (\"n\", \"?\")"},
    {843, YES, "getopt((\"-n\", \"-t\", \"hello\"), \"nt:\")[t] = hello"},
    {844, NO, "getopt((\"-n\", \"-t\", \"hello\"), \"nt:\")[t] = n"},
    {845, YES, "getopt((\"-n\", \"-t\", \"hello\"), \"nt:\")[n] = n"},
    {846, BAD, "getopt((\"-n\"), \"n\")[\"\"] = n"},
    {847, YES, "getopt((\"-t\", \"v1\", \"-t\", \"v2\"), \"t:\")[t] = v2"},
    {848, YES, "getopt((\"-t?\"), \"t:\")[t] = ?"},
    {849, YES, "getopt((\"-t:\"), \":t:\")[t] = :"},
    {850, NO, "getopt((\"-t\"), \"t:\")[t] != \"\""},
    {851, YES, "getopt((\"-t\"), \"t:\")[t] = \"\""},
    {852, NO, "getopt((\"-t\"), \"t:\")[t] = ?"},
    {853, NO, "getopt((\"-t\"), \":t:\")[t] = :"},
    {854, NO, "getopt((\"-n\"), \"nt:\")[t] != \"\""},
    {855, NO, "getopt((\"-t\", \"v1\", \"-t\"), \"t:\")[t] = v1"},
    {856, YES, "getopt((\"-t\", \"v1\", \"-t\"), \"t:\")[t] = \"\""},
    {857, NO, "getopt((\"--exec\"), \"e:\") intersects (\"?\")"},
    {858, NO, "getopt((\"--exec\"), \"e:\") intersects (\"e\")"},
    {859, YES, "getopt((\"--exec\", \"-n\"), \"n\") intersects (\"n\")"},
    {860, YES, "getopt((\"-n\", \"file\", \"-t\"), \"nt\") intersects (\"n\")"},
    {861, NO, "getopt((\"-n\", \"file\", \"-t\"), \"nt\") intersects (\"t\")"},
    {862, YES, "getopt((\"-abcdefghijklmnopqrstuvwxyz\"), \"abcdefghijklmnopqrstuvwxyz\") intersects (\"a\", \"b\", \"c\", \"z\")"},
    {865, YES, "getopt((\"-a\", \"-b\", \"-c\", \"-d\", \"-e\", \"-f\"), \"abcdef\") intersects (\"a\", \"b\", \"c\", \"d\", \"e\", \"f\")"},
    {868, YES, "getopt((\"-t\", \"this_is_a_very_long_argument_value_that_might_test_buffer_handling\"), \"t:\") intersects (\"t\", \"this_is_a_very_long_argument_value_that_might_test_buffer_handling\")"},
    };
    assert_int_equal(RUN("filter_transformer.ut.cpp", EV_OPEN, cases), 0);
}

/* ---- filterchecks/cmp_operator_modifiers.cpp: every operator with every
 * modifier, on a process named myexe ---- */
static void test_modifiers(void **state)
{
    (void)state;
    static const struct ecase cases[] = {
    {43, YES, "proc.name == oneof (myexe, bash)"},
    {44, YES, "proc.name == oneof (myexe)"},
    {45, NO, "proc.name == oneof (bash, sh)"},
    {46, NO, "proc.name == oneof (myexe, myexe)"},
    {49, YES, "proc.name == anyof (myexe, bash)"},
    {50, NO, "proc.name == anyof (bash, sh)"},
    {51, YES, "proc.name == anyof (myexe, myexe)"},
    {54, YES, "proc.name == allof (myexe)"},
    {55, NO, "proc.name == allof (myexe, bash)"},
    {56, NO, "proc.name == allof (bash, sh)"},
    {57, YES, "proc.name == allof (myexe, myexe)"},
    {74, YES, "proc.name != oneof (myexe, myexe, bash)"},
    {75, NO, "proc.name != oneof (myexe, myexe)"},
    {76, NO, "proc.name != oneof (bash, sh)"},
    {77, YES, "proc.name != oneof (myexe, bash)"},
    {80, YES, "proc.name != anyof (bash, sh)"},
    {81, YES, "proc.name != anyof (myexe, bash)"},
    {84, YES, "proc.name != allof (bash, sh)"},
    {85, NO, "proc.name != allof (myexe, bash)"},
    {101, YES, "proc.name contains oneof (myex, bash)"},
    {102, YES, "proc.name contains oneof (exe)"},
    {103, NO, "proc.name contains oneof (bash, sh)"},
    {104, NO, "proc.name contains oneof (my, exe)"},
    {106, YES, "proc.name contains anyof (myex, bash)"},
    {107, NO, "proc.name contains anyof (bash, sh)"},
    {108, YES, "proc.name contains anyof (my, exe)"},
    {110, YES, "proc.name contains allof (my, exe)"},
    {111, NO, "proc.name contains allof (myex, bash)"},
    {112, NO, "proc.name contains allof (bash, sh)"},
    {128, YES, "proc.name icontains oneof (MYEX, BASH)"},
    {129, NO, "proc.name icontains oneof (BASH, SH)"},
    {130, NO, "proc.name icontains oneof (MY, EXE)"},
    {132, YES, "proc.name icontains anyof (MYEX, BASH)"},
    {133, NO, "proc.name icontains anyof (BASH, SH)"},
    {134, YES, "proc.name icontains anyof (MY, EXE)"},
    {136, YES, "proc.name icontains allof (MY, EXE)"},
    {137, NO, "proc.name icontains allof (MYEX, BASH)"},
    {138, NO, "proc.name icontains allof (BASH, SH)"},
    {154, YES, "proc.name startswith oneof (my, bash)"},
    {155, NO, "proc.name startswith oneof (bash, sh)"},
    {156, NO, "proc.name startswith oneof (my, mye)"},
    {158, YES, "proc.name startswith anyof (my, bash)"},
    {159, NO, "proc.name startswith anyof (bash, sh)"},
    {160, YES, "proc.name startswith anyof (my, mye)"},
    {162, YES, "proc.name startswith allof (my, mye)"},
    {163, NO, "proc.name startswith allof (my, bash)"},
    {164, NO, "proc.name startswith allof (bash, sh)"},
    {180, YES, "proc.name endswith oneof (exe, sh)"},
    {181, NO, "proc.name endswith oneof (sh, bash)"},
    {182, NO, "proc.name endswith oneof (exe, yexe)"},
    {184, YES, "proc.name endswith anyof (exe, sh)"},
    {185, NO, "proc.name endswith anyof (sh, bash)"},
    {186, YES, "proc.name endswith anyof (exe, yexe)"},
    {188, YES, "proc.name endswith allof (exe, yexe)"},
    {189, NO, "proc.name endswith allof (exe, sh)"},
    {190, NO, "proc.name endswith allof (sh, bash)"},
    {206, YES, "proc.name glob oneof (my*, bash)"},
    {207, NO, "proc.name glob oneof (bash, sh*)"},
    {208, NO, "proc.name glob oneof (my*, *exe)"},
    {210, YES, "proc.name glob anyof (my*, bash)"},
    {211, NO, "proc.name glob anyof (bash, sh*)"},
    {212, YES, "proc.name glob anyof (my*, *exe)"},
    {214, YES, "proc.name glob allof (my*, *exe)"},
    {215, NO, "proc.name glob allof (bash, sh*)"},
    {231, YES, "proc.name iglob oneof (MY*, BASH)"},
    {232, NO, "proc.name iglob oneof (BASH, SH*)"},
    {233, NO, "proc.name iglob oneof (MY*, *EXE)"},
    {235, YES, "proc.name iglob anyof (MY*, BASH)"},
    {236, NO, "proc.name iglob anyof (BASH, SH*)"},
    {237, YES, "proc.name iglob anyof (MY*, *EXE)"},
    {239, YES, "proc.name iglob allof (MY*, *EXE)"},
    {240, NO, "proc.name iglob allof (BASH, SH*)"},
    {256, YES, "proc.name regex oneof (my.*, b.*)"},
    {257, NO, "proc.name regex oneof (b.*, sh.*)"},
    {258, NO, "proc.name regex oneof (my.*, .*exe)"},
    {260, YES, "proc.name regex anyof (my.*, b.*)"},
    {261, NO, "proc.name regex anyof (b.*, sh.*)"},
    {262, YES, "proc.name regex anyof (my.*, .*exe)"},
    {264, YES, "proc.name regex allof (my.*, .*exe)"},
    {265, NO, "proc.name regex allof (my.*, b.*)"},
    {266, NO, "proc.name regex allof (b.*, sh.*)"},
    {282, YES, "toupper(proc.name) == oneof (MYEXE, BASH)"},
    {283, NO, "toupper(proc.name) == oneof (BASH, SH)"},
    {284, YES, "toupper(proc.name) != oneof (MYEXE, BASH)"},
    {285, NO, "toupper(proc.name) != oneof (BASH, SH)"},
    {286, YES, "toupper(proc.name) != allof (BASH, SH)"},
    {287, NO, "toupper(proc.name) != allof (MYEXE, BASH)"},
    {303, YES, "proc.name == oneof (myexe) and proc.name != allof (bash, sh)"},
    {304, NO, "proc.name == oneof (myexe) and proc.name != allof (myexe, bash)"},
    {306, YES, "proc.name == anyof (myexe, bash) or proc.name != oneof (myexe)"},
    {322, NO, "proc.name == oneof ()"},
    {323, NO, "proc.name == anyof ()"},
    {324, NO, "proc.name == allof ()"},
    {325, NO, "proc.name != oneof ()"},
    {326, NO, "proc.name != anyof ()"},
    {327, NO, "proc.name != allof ()"},
    };
    assert_int_equal(RUN("filterchecks/cmp_operator_modifiers.cpp", EV_MYEXE, cases), 0);
}

/* Exceptions' comps with a modifier (falco unit_tests/engine/
 * test_rule_loader.cpp:1828-2230): the check filter_make_check_mod builds
 * for the loader, and Falco's reading of a comp. */
static void test_modifiers_api(void **state)
{
    (void)state;
    enum filter_op op;
    enum filter_mod mod;
    assert_int_equal(filter_cmp_parse("startswith oneof", &op, &mod), 0);   /* test_rule_loader.cpp:1840 */
    assert_int_equal(op, OP_STARTSWITH);
    assert_int_equal(mod, MOD_ONEOF);
    assert_int_equal(filter_cmp_parse("= oneof", &op, &mod), 0);            /* :2134 */
    assert_int_equal(op, OP_EQ);
    assert_int_equal(filter_cmp_parse("regex oneof", &op, &mod), 0);        /* :2158 */
    assert_int_equal(filter_cmp_parse("in", &op, &mod), 0);
    assert_int_equal(mod, MOD_NONE);
    assert_int_equal(filter_cmp_parse("frobulate oneof", &op, &mod), -1);   /* :1996 */
    assert_int_equal(filter_cmp_parse("in oneof", &op, &mod), -1);          /* :2041 */
    assert_int_equal(filter_cmp_parse(">= oneof", &op, &mod), -1);          /* :2064 */
    assert_int_equal(filter_cmp_parse("oneof", &op, &mod), -1);             /* :2084 */
    static const char *const vals[] = {"my", "bash"};
    static const uint32_t lens[] = {2, 4};
    static const char *const bad[] = {"research[0-9]+", "pentest-[0-9]{2,4}"};
    static const uint32_t badlens[] = {14, 18};
    struct filter_env env = {.ctx = &T, .arena = &T.arena, .macro = t_macro, .list = t_list, .slot = t_slot,
                             .error = t_error, .owned = &T.owned};
    compile("proc.name exists");   /* resets T */
    assert_non_null(filter_make_check_mod(&env, "proc.name", 9, OP_STARTSWITH, MOD_ONEOF, vals, lens, 2, 0));
    assert_non_null(filter_make_check_mod(&env, "proc.name", 9, OP_REGEX, MOD_ONEOF, bad, badlens, 2, 0));
    assert_non_null(filter_make_check_mod(&env, "tolower(proc.name)", 18, OP_EQ, MOD_ANYOF, vals, lens, 2, 0));
    assert_null(filter_make_check_mod(&env, "proc.pid", 8, OP_CONTAINS, MOD_ONEOF, vals, lens, 2, 0));
}

/* ---- filter_ppm_codes.ut.cpp: the event types a condition can be true
 * for (filter_reach), as libs' ppm_event_codes computes them ---- */

enum set_kind {
    S_OPENAT_ONLY, S_NOT_OPENAT, S_OPENAT_CLOSE_ONLY, S_NOT_OPENAT_CLOSE, S_ALL_EVENTS, S_NO_EVENTS, S_COND
};

static bool types_of(const char *cond, struct evtype_set *out)
{
    struct cnode *n = compile(cond);
    if (!n)
        return false;
    struct filter_reach t, f;
    filter_reach(n, &t, &f);
    *out = t.types;
    return true;
}

static void named_set(enum set_kind k, struct evtype_set *s)
{
    struct evtype_set oc;
    memset(&oc, 0, sizeof(oc));
    evtype_set_add(&oc, (unsigned)evtype_lookup("openat", 6));
    if (k == S_OPENAT_CLOSE_ONLY || k == S_NOT_OPENAT_CLOSE)
        evtype_set_add(&oc, (unsigned)evtype_lookup("close", 5));
    memset(s, 0, sizeof(*s));
    switch (k) {
    case S_OPENAT_ONLY:
    case S_OPENAT_CLOSE_ONLY: *s = oc; break;
    case S_NOT_OPENAT:
    case S_NOT_OPENAT_CLOSE:
        *s = oc;
        evtype_set_invert(s);
        break;
    case S_ALL_EVENTS: evtype_set_all(s); break;
    default: break;
    }
}

/* evt.num=1.5 (:377) and b64(evt.num)=0 (:382) are parsed only there:
 * libsinsp's compiler refuses both (no number; b64 takes strings), as
 * seccheckd's does, so they have no compiled counterpart. */
static void test_ppm_codes(void **state)
{
    (void)state;
    static const struct {
        unsigned line;
        enum set_kind want;
        const char *cond, *same_as;
    } cases[] = {
    {120, S_OPENAT_ONLY, "evt.type=openat", NULL},
    {121, S_OPENAT_ONLY, "evt.type = openat", NULL},
    {122, S_OPENAT_ONLY, "not evt.type != openat", NULL},
    {123, S_OPENAT_ONLY, "not not evt.type = openat", NULL},
    {124, S_OPENAT_ONLY, "not not not not evt.type = openat", NULL},
    {125, S_OPENAT_ONLY, "evt.type in (openat)", NULL},
    {126, S_OPENAT_ONLY, "not (not evt.type=openat)", NULL},
    {127, S_OPENAT_ONLY, "evt.type=openat and proc.name=nginx", NULL},
    {128, S_OPENAT_ONLY, "evt.type=openat and not proc.name=nginx", NULL},
    {129, S_OPENAT_ONLY, "evt.type=openat and (proc.name=nginx)", NULL},
    {130, S_OPENAT_ONLY, "evt.type=openat and not (evt.type=close and proc.name=nginx)", NULL},
    {135, S_NOT_OPENAT, "evt.type!=openat", NULL},
    {136, S_NOT_OPENAT, "not not not evt.type = openat", NULL},
    {137, S_NOT_OPENAT, "not evt.type=openat", NULL},
    {138, S_NOT_OPENAT, "evt.type=close or evt.type!=openat", NULL},
    {147, S_OPENAT_CLOSE_ONLY, "evt.type in (openat, close)", NULL},
    {148, S_OPENAT_CLOSE_ONLY, "evt.type=openat or evt.type=close", NULL},
    {149, S_OPENAT_CLOSE_ONLY, "evt.type=openat or (evt.type=close and proc.name=nginx)", NULL},
    {152, S_OPENAT_CLOSE_ONLY, "evt.type=close or (evt.type=openat and proc.name=nginx)", NULL},
    {157, S_NOT_OPENAT_CLOSE, "not evt.type in (openat, close)", NULL},
    {158, S_NOT_OPENAT_CLOSE, "not not not evt.type in (openat, close)", NULL},
    {159, S_NOT_OPENAT_CLOSE, "evt.type!=openat and evt.type!=close", NULL},
    {167, S_ALL_EVENTS, "evt.type!=openat or evt.type!=close", NULL},
    {168, S_ALL_EVENTS, "proc.name=nginx", NULL},
    {169, S_ALL_EVENTS, "evt.type=openat or proc.name=nginx", NULL},
    {170, S_ALL_EVENTS, "evt.type=openat or (proc.name=nginx)", NULL},
    {171, S_ALL_EVENTS, "(evt.type=openat) or proc.name=nginx", NULL},
    {172, S_ALL_EVENTS, "evt.type=close or not (evt.type=openat and proc.name=nginx)", NULL},
    {175, S_ALL_EVENTS, "evt.type=openat or not (evt.type=close and proc.name=nginx)", NULL},
    {185, S_NO_EVENTS, "evt.type=close and evt.type=openat", NULL},
    {186, S_NO_EVENTS, "evt.type=openat and (evt.type=close and proc.name=nginx)", NULL},
    {187, S_NO_EVENTS, "evt.type=openat and (evt.type=close)", NULL},
    {196, S_COND, "evt.type in (connect, execve, accept, mmap, container) and not (proc.name=cat and evt.type=mmap)", "evt.type in (accept, connect, container, execve, mmap)"},
    {200, S_NO_EVENTS, "(evt.type=mmap and not evt.type=mmap)", NULL},
    {208, S_COND, "(evt.type exists)", "(proc.name=cat)"},
    {209, S_COND, "(evt.type exists)", "(not proc.name=cat)"},
    {213, S_COND, "not (evt.type exists)", "(evt.type in ())"},
    {215, S_COND, "not (evt.type in ())", "(evt.type exists)"},
    {217, S_COND, "evt.type=mmap", "not (not evt.type=mmap)"},
    {219, S_NO_EVENTS, "(evt.type in ())", NULL},
    {221, S_COND, "evt.type=mmap or not evt.type=mmap", "(evt.type exists)"},
    {222, S_COND, "evt.type=mmap or not evt.type=mmap", "(proc.name=cat)"},
    {223, S_COND, "evt.type=mmap or not evt.type=mmap", "(not proc.name=cat)"},
    {225, S_COND, "(evt.type in ()) and (evt.type exists)", "(evt.type in ())"},
    {226, S_COND, "(evt.type in ()) and (proc.name=cat)", "(evt.type in ())"},
    {227, S_COND, "(evt.type in ()) and (not proc.name=cat)", "(evt.type in ())"},
    {229, S_COND, "(evt.type in ()) or (evt.type exists)", "(evt.type exists)"},
    {230, S_COND, "(evt.type in ()) or (proc.name=cat)", "(evt.type exists)"},
    {231, S_COND, "(evt.type in ()) or (not proc.name=cat)", "(evt.type exists)"},
    {233, S_COND, "evt.type=mmap and (evt.type in ())", "(evt.type in ())"},
    {235, S_COND, "evt.type=mmap and (evt.type exists)", "evt.type=mmap"},
    {236, S_COND, "evt.type=mmap and (proc.name=cat)", "evt.type=mmap"},
    {237, S_COND, "evt.type=mmap and (not proc.name=cat)", "evt.type=mmap"},
    {239, S_COND, "evt.type=mmap or (evt.type in ())", "evt.type=mmap"},
    {241, S_COND, "evt.type=mmap or (evt.type exists)", "(evt.type exists)"},
    {242, S_COND, "evt.type=mmap or (proc.name=cat)", "(evt.type exists)"},
    {243, S_COND, "evt.type=mmap or (not proc.name=cat)", "(evt.type exists)"},
    {245, S_COND, "evt.type=mmap or evt.type=mmap", "evt.type=mmap"},
    {247, S_COND, "evt.type=mmap and evt.type=mmap", "evt.type=mmap"},
    {250, S_COND, "not (proc.name=cat or evt.type=mmap)", "not proc.name=cat and not evt.type=mmap"},
    {253, S_COND, "not (proc.name=cat or fd.type=file)", "not proc.name=cat and not fd.type=file"},
    {256, S_COND, "not (evt.type=execve or evt.type=mmap)", "not evt.type=execve and not evt.type=mmap"},
    {259, S_COND, "not (evt.type=mmap or evt.type=mmap)", "not evt.type=mmap and not evt.type=mmap"},
    {262, S_COND, "not (proc.name=cat and evt.type=mmap)", "not proc.name=cat or not evt.type=mmap"},
    {265, S_COND, "not (proc.name=cat and fd.type=file)", "not proc.name=cat or not fd.type=file"},
    {268, S_COND, "not (evt.type=execve and evt.type=mmap)", "not evt.type=execve or not evt.type=mmap"},
    {271, S_COND, "not (evt.type=mmap and evt.type=mmap)", "not evt.type=mmap or not evt.type=mmap"},
    {276, S_COND, "not evt.type=mmap", "evt.type!=mmap"},
    {277, S_COND, "not proc.name=cat", "proc.name!=cat"},
    {280, S_COND, "evt.type=execve and evt.type=mmap", "evt.type=mmap and evt.type=execve"},
    {281, S_COND, "not (evt.type=execve and evt.type=mmap)", "not (evt.type=mmap and evt.type=execve)"},
    {284, S_COND, "not evt.type=execve and not evt.type=mmap", "not evt.type=mmap and not evt.type=execve"},
    {287, S_COND, "proc.name=cat and evt.type=mmap", "evt.type=mmap and proc.name=cat"},
    {288, S_COND, "not (proc.name=cat and evt.type=mmap)", "not (evt.type=mmap and proc.name=cat)"},
    {291, S_COND, "not proc.name=cat and not evt.type=mmap", "not evt.type=mmap and not proc.name=cat"},
    {294, S_COND, "proc.name=cat and fd.type=file", "fd.type=file and proc.name=cat"},
    {295, S_COND, "not (proc.name=cat and fd.type=file)", "not (fd.type=file and proc.name=cat)"},
    {298, S_COND, "not proc.name=cat and not fd.type=file", "not fd.type=file and not proc.name=cat"},
    {303, S_COND, "evt.type=execve or evt.type=mmap", "evt.type=mmap or evt.type=execve"},
    {304, S_COND, "not (evt.type=execve or evt.type=mmap)", "not (evt.type=mmap or evt.type=execve)"},
    {307, S_COND, "not evt.type=execve or not evt.type=mmap", "not evt.type=mmap or not evt.type=execve"},
    {310, S_COND, "proc.name=cat or evt.type=mmap", "evt.type=mmap or proc.name=cat"},
    {311, S_COND, "not (proc.name=cat or evt.type=mmap)", "not (evt.type=mmap or proc.name=cat)"},
    {314, S_COND, "not proc.name=cat or not evt.type=mmap", "not evt.type=mmap or not proc.name=cat"},
    {317, S_COND, "proc.name=cat or fd.type=file", "fd.type=file or proc.name=cat"},
    {318, S_COND, "not (proc.name=cat or fd.type=file)", "not (fd.type=file or proc.name=cat)"},
    {321, S_COND, "not proc.name=cat or not fd.type=file", "not fd.type=file or not proc.name=cat"},
    {337, S_NO_EVENTS, "evt.num=0", NULL},
    {338, S_NO_EVENTS, "evt.num == 0", NULL},
    {339, S_NO_EVENTS, "evt.num<1", NULL},
    {340, S_NO_EVENTS, "evt.num<0", NULL},
    {341, S_NO_EVENTS, "evt.num<=0", NULL},
    {342, S_NO_EVENTS, "evt.num in (0)", NULL},
    {343, S_NO_EVENTS, "evt.num in (0, 0)", NULL},
    {344, S_NO_EVENTS, "evt.num in ()", NULL},
    {347, S_ALL_EVENTS, "evt.num!=0", NULL},
    {348, S_ALL_EVENTS, "evt.num>0", NULL},
    {349, S_ALL_EVENTS, "evt.num>=0", NULL},
    {350, S_ALL_EVENTS, "evt.num>=1", NULL},
    {355, S_ALL_EVENTS, "evt.num=1", NULL},
    {356, S_ALL_EVENTS, "evt.num=42", NULL},
    {357, S_ALL_EVENTS, "evt.num<100", NULL},
    {358, S_ALL_EVENTS, "evt.num<=1", NULL},
    {359, S_ALL_EVENTS, "evt.num>5", NULL},
    {360, S_ALL_EVENTS, "evt.num>=2", NULL},
    {361, S_ALL_EVENTS, "evt.num in (1, 2, 3)", NULL},
    {362, S_ALL_EVENTS, "not evt.num=1", NULL},
    {363, S_ALL_EVENTS, "not evt.num in (1, 2)", NULL},
    {370, S_ALL_EVENTS, "evt.num=-1", NULL},
    {371, S_ALL_EVENTS, "evt.num=-100", NULL},
    {372, S_ALL_EVENTS, "evt.num<-5", NULL},
    {373, S_ALL_EVENTS, "evt.num<=-5", NULL},
    {374, S_ALL_EVENTS, "evt.num!=-1", NULL},
    {375, S_ALL_EVENTS, "evt.num>-5", NULL},
    {376, S_ALL_EVENTS, "evt.num=0x0", NULL},
    {378, S_ALL_EVENTS, "evt.num in (0, -1, -2)", NULL},
    {396, S_ALL_EVENTS, "not evt.num=0", NULL},
    {397, S_ALL_EVENTS, "not evt.num<1", NULL},
    {398, S_ALL_EVENTS, "not evt.num<=0", NULL},
    {399, S_ALL_EVENTS, "not evt.num in (0)", NULL},
    {402, S_NO_EVENTS, "not evt.num!=0", NULL},
    {403, S_NO_EVENTS, "not evt.num>0", NULL},
    {404, S_NO_EVENTS, "not evt.num>=1", NULL},
    {407, S_NO_EVENTS, "not not evt.num=0", NULL},
    {408, S_ALL_EVENTS, "not not evt.num!=0", NULL},
    {411, S_COND, "not evt.num=0", "evt.num!=0"},
    {412, S_COND, "not evt.num!=0", "evt.num=0"},
    {428, S_NO_EVENTS, "evt.type=openat and evt.num=0", NULL},
    {429, S_NO_EVENTS, "evt.num=0 and evt.type=openat", NULL},
    {430, S_NO_EVENTS, "evt.type=openat and evt.num<=0", NULL},
    {431, S_NO_EVENTS, "evt.type=openat and (evt.num=0)", NULL},
    {434, S_OPENAT_ONLY, "evt.type=openat or evt.num=0", NULL},
    {435, S_OPENAT_ONLY, "evt.num=0 or evt.type=openat", NULL},
    {438, S_OPENAT_ONLY, "evt.type=openat and evt.num!=0", NULL},
    {439, S_ALL_EVENTS, "evt.type=openat or evt.num!=0", NULL},
    {442, S_ALL_EVENTS, "not (evt.type=openat and evt.num=0)", NULL},
    {444, S_NOT_OPENAT, "not (evt.type=openat or evt.num=0)", NULL},
    {448, S_OPENAT_ONLY, "evt.type=openat and not (evt.num=0)", NULL},
    {449, S_ALL_EVENTS, "evt.type=openat or not (evt.num=0)", NULL},
    {452, S_OPENAT_ONLY, "evt.type=openat and evt.num=1", NULL},
    {453, S_OPENAT_ONLY, "evt.type=openat and not evt.num=1", NULL},
    };
    unsigned wrong = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct evtype_set got, want;
        if (!known_field(cases[i].cond))
            continue;
        if (!types_of(cases[i].cond, &got)) {
            print_error("filter_ppm_codes.ut.cpp:%u: %s: %s\n", cases[i].line, cases[i].cond, T.err);
            wrong++;
            continue;
        }
        if (cases[i].want == S_COND) {
            if (!types_of(cases[i].same_as, &want)) {
                print_error("filter_ppm_codes.ut.cpp:%u: %s: %s\n", cases[i].line, cases[i].same_as, T.err);
                wrong++;
                continue;
            }
        } else {
            named_set(cases[i].want, &want);
        }
        if (memcmp(&got, &want, sizeof(got)) != 0) {
            print_error("filter_ppm_codes.ut.cpp:%u: %s: not the expected event types\n", cases[i].line, cases[i].cond);
            wrong++;
        }
    }
    assert_int_equal(wrong, 0);
}

/* field_transformers: transformers leave the event types alone, except on
 * evt.type compared with =, != or in, which libs' event-code search
 * refuses (and so Falco, when it indexes the rule). */
static void test_ppm_codes_transformers(void **state)
{
    (void)state;
    static const struct {
        unsigned line;
        bool ok;
        const char *cond;
    } cases[] = {
        {461, true, "evt.type = close"},
        {462, true, "b64(proc.name) = cat"},
        {463, true, "proc.name = b64(fd.name)"},
        {464, true, "b64(proc.name) = b64(fd.name)"},
        {465, true, "evt.type != close"},
        {466, true, "b64(proc.name) != cat"},
        {467, true, "proc.name != b64(fd.name)"},
        {468, true, "b64(proc.name) != b64(fd.name)"},
        {469, true, "not evt.type = close"},
        {470, true, "not b64(proc.name) = cat"},
        {471, true, "not proc.name = b64(fd.name)"},
        {472, true, "not b64(proc.name) = b64(fd.name)"},
        {473, true, "not evt.type != close"},
        {474, true, "not b64(proc.name) != cat"},
        {475, true, "not proc.name != b64(fd.name)"},
        {476, true, "not b64(proc.name) != b64(fd.name)"},
        {478, false, "b64(evt.type) = close"},
        {479, false, "evt.type = b64(proc.name)"},
        {480, false, "evt.type = val(proc.name)"},
        {481, false, "b64(evt.type) = val(proc.name)"},
        {482, false, "b64(evt.type) != close"},
        {483, false, "evt.type != b64(proc.name)"},
        {484, false, "evt.type != val(proc.name)"},
        {485, false, "b64(evt.type) != val(proc.name)"},
        {486, false, "not b64(evt.type) = close"},
        {487, false, "not evt.type = b64(proc.name)"},
        {488, false, "not evt.type = val(proc.name)"},
        {489, false, "not b64(evt.type) = val(proc.name)"},
        {490, false, "not b64(evt.type) != close"},
        {491, false, "not evt.type != b64(proc.name)"},
        {492, false, "not evt.type != val(proc.name)"},
        {493, false, "not b64(evt.type) != val(proc.name)"},
    };
    unsigned wrong = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if ((compile(cases[i].cond) != NULL) != cases[i].ok) {
            print_error("filter_ppm_codes.ut.cpp:%u: %s: expected %s\n", cases[i].line, cases[i].cond,
                        cases[i].ok ? T.err : "an error");
            wrong++;
        }
    assert_int_equal(wrong, 0);
}

static int teardown_all(void **state)
{
    tenv_free();
    if (skipped)
        print_message("[ NOTE     ] %u cases skipped: their field (evt.buffer, fd.net, fd.ip, fd.type) is not defined yet\n",
                      skipped);
    return rules_group_teardown(state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parser_cases),          cmocka_unit_test(test_parser_depth),
        cmocka_unit_test(test_parser_messages),       cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_compiler_types),        cmocka_unit_test(test_compiler_boolean),
        cmocka_unit_test(test_compiler_str_escape),   cmocka_unit_test(test_compiler_complex),
        cmocka_unit_test(test_compiler_warnings),     cmocka_unit_test(test_compiler_messages),
        cmocka_unit_test(test_compiler_eval),         cmocka_unit_test(test_op_numeric),
        cmocka_unit_test(test_op_contains),           cmocka_unit_test(test_op_pmatch),
        cmocka_unit_test(test_op_net),                cmocka_unit_test(test_op_bytebuf),
        cmocka_unit_test(test_transformers_unit),     cmocka_unit_test(test_transformers_eval),
        cmocka_unit_test(test_modifiers),             cmocka_unit_test(test_modifiers_api),
        cmocka_unit_test(test_ppm_codes),             cmocka_unit_test(test_ppm_codes_transformers),
    };
    return cmocka_run_group_tests(tests, rules_group_setup, teardown_all);
}
