/* test_rules_fields.c - every field on crafted events (protobuf-c messages
 * packed, framed and decoded as the daemon receives them), and rules on the
 * recorded traces matching exactly the events the trace holds. */
#include "rules_util.h"

#include "tracefile.h"

static struct ctx_parts CP;

/* output_fields of an alert on ev for a rule whose output is tmpl (the
 * condition tests evt.dir, so enter points reach it too). */
static const char *fields_of(struct rules_engine **ep, const char *tmpl, const struct event *ev)
{
    static char text[4096];
    static char out[8192];
    if (!*ep) {
        snprintf(text, sizeof(text),
                 "- rule: r\n  desc: d\n  condition: evt.dir in ('<', '>')\n  output: '%s'\n  priority: Notice\n"
                 "  warn_evttypes: false\n", tmpl);
        *ep = engine_with(text);
    }
    assert_int_equal(eval_count(*ep, ev, &L), 1);
    snprintf(out, sizeof(out), "%s", L.items[0].output_fields);
    return out;
}

static void expect(const char *tmpl, const struct event *ev, const char *want)
{
    struct rules_engine *e = NULL;
    const char *got = fields_of(&e, tmpl, ev);
    rules_engine_free(e);
    if (strcmp(got, want) != 0)
        fail_msg("%s:\n got  %s\n want %s", tmpl, got, want);
}

static const struct event *open_ev(uint64_t sysno, int64_t dirfd, const char *fd_path, const char *path, uint32_t flags,
                                   uint32_t mode, bool exit, int64_t result, int64_t err)
{
    static Gvisor__Syscall__Open m;
    static Gvisor__Syscall__Exit x;
    gvisor__syscall__open__init(&m);
    gvisor__syscall__exit__init(&x);
    x.result = result;
    x.errorno = err;
    m.context_data = mk_ctx(&CP, 10, "cat", 1700000000000000001);
    CP.ctx.cwd = (char *)"/etc";
    m.exit = exit ? &x : NULL;
    m.sysno = sysno;
    m.fd = dirfd;
    m.fd_path = (char *)fd_path;
    m.pathname = (char *)path;
    m.flags = flags;
    m.mode = mode;
    return evb_build(&B, 1, 7, 7, &m.base);
}

static void test_open_fields(void **state)
{
    (void)state;
    const char *t = "%fd.name %fd.directory %fd.filename %fd.typechar %fd.num %evt.is_open_read %evt.is_open_write "
                    "%evt.is_open_exec %evt.res %evt.rawres %evt.failed %evt.type %evt.dir %gvisor.point %evt.dropped";
    expect(t, open_ev(257, -100, "", "passwd", 0, 0, true, 3, 0),
           "{\"evt.dir\":\"<\",\"evt.dropped\":7,\"evt.failed\":false,\"evt.is_open_exec\":false,"
           "\"evt.is_open_read\":true,\"evt.is_open_write\":false,\"evt.rawres\":3,\"evt.res\":\"SUCCESS\","
           "\"evt.time\":1700000000000000001,\"evt.type\":\"openat\",\"fd.directory\":\"/etc\","
           "\"fd.filename\":\"passwd\",\"fd.name\":\"/etc/passwd\",\"fd.num\":3,\"fd.typechar\":\"f\","
           "\"gvisor.point\":\"syscall/openat/exit\"}");
    /* relative to a directory fd, normalized; a failed open */
    expect("%fd.name %fd.num %evt.res %evt.rawres %evt.failed", open_ev(257, 5, "/var/log", "../lib/./x", 0, 0, true, 0, 2),
           "{\"evt.failed\":true,\"evt.rawres\":-2,\"evt.res\":\"ENOENT\",\"evt.time\":1700000000000000001,"
           "\"fd.name\":\"/var/lib/x\",\"fd.num\":-2}");
    /* open(O_WRONLY|O_CREAT, 0755): write and exec */
    expect("%evt.is_open_read %evt.is_open_write %evt.is_open_exec %evt.type",
           open_ev(2, 0, "", "/tmp/x", 01 | 0100, 0755, true, 4, 0),
           "{\"evt.is_open_exec\":true,\"evt.is_open_read\":false,\"evt.is_open_write\":true,"
           "\"evt.time\":1700000000000000001,\"evt.type\":\"open\"}");
    /* creat: exec from its mode; an O_DIRECTORY open is a directory */
    expect("%evt.is_open_exec %evt.is_open_write", open_ev(85, 0, "", "/tmp/x", 0, 0700, true, 4, 0),
           "{\"evt.is_open_exec\":true,\"evt.is_open_write\":false,\"evt.time\":1700000000000000001}");
    expect("%fd.typechar %fd.directory", open_ev(257, -100, "", "/usr/lib", 0200000, 0, true, 4, 0),
           "{\"evt.time\":1700000000000000001,\"fd.directory\":\"/usr/lib\",\"fd.typechar\":\"d\"}");
    /* the enter point: no result, no fd yet */
    expect("%evt.dir %evt.res %evt.rawres %evt.failed %fd.num %fd.name %gvisor.point %evt.is_open_read",
           open_ev(257, -100, "", "/etc/shadow", 0, 0, false, 0, 0),
           "{\"evt.dir\":\">\",\"evt.failed\":null,\"evt.is_open_read\":false,\"evt.rawres\":null,\"evt.res\":null,"
           "\"evt.time\":1700000000000000001,\"fd.name\":\"/etc/shadow\",\"fd.num\":null,"
           "\"gvisor.point\":\"syscall/openat/enter\"}");
}

static const struct event *sock_ev(uint16_t type, uint64_t sysno, const uint8_t *addr, size_t alen, int64_t result)
{
    static Gvisor__Syscall__Connect c;
    static Gvisor__Syscall__Accept a;
    static Gvisor__Syscall__Bind b;
    static Gvisor__Syscall__Exit x;
    static uint8_t abuf[128];
    gvisor__syscall__exit__init(&x);
    x.result = result;
    memcpy(abuf, addr, alen);
    ProtobufCBinaryData bin = {.len = alen, .data = abuf};
    Gvisor__Common__ContextData *ctx = mk_ctx(&CP, 10, "nc", 1700000000000000001);
    if (type == 10) {
        gvisor__syscall__connect__init(&c);
        c.context_data = ctx;
        c.exit = &x;
        c.sysno = sysno;
        c.fd = 5;
        c.fd_path = (char *)"socket:[3]";
        c.address = bin;
        return evb_build(&B, 1, type, 0, &c.base);
    }
    if (type == 25) {
        gvisor__syscall__accept__init(&a);
        a.context_data = ctx;
        a.exit = &x;
        a.sysno = sysno;
        a.fd = 4;
        a.fd_path = (char *)"socket:[3]";
        a.address = bin;
        return evb_build(&B, 1, type, 0, &a.base);
    }
    gvisor__syscall__bind__init(&b);
    b.context_data = ctx;
    b.exit = &x;
    b.sysno = sysno;
    b.fd = 4;
    b.fd_path = (char *)"socket:[3]";
    b.address = bin;
    return evb_build(&B, 1, type, 0, &b.base);
}

static void test_socket_fields(void **state)
{
    (void)state;
    const char *t = "%fd.name %fd.typechar %fd.num %fd.sip %fd.sport %fd.cip %fd.cport %fd.rip %fd.rport %fd.lip %fd.lport";
    static const uint8_t in4[] = {2, 0, 0x1f, 0x90, 10, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0};   /* 10.0.0.7:8080 */
    expect(t, sock_ev(10, 42, in4, sizeof(in4), 0),
           "{\"evt.time\":1700000000000000001,\"fd.cip\":null,\"fd.cport\":null,\"fd.lip\":null,\"fd.lport\":null,"
           "\"fd.name\":\"0.0.0.0:0->10.0.0.7:8080\",\"fd.num\":5,\"fd.rip\":\"10.0.0.7\",\"fd.rport\":8080,"
           "\"fd.sip\":\"10.0.0.7\",\"fd.sport\":8080,\"fd.typechar\":\"4\"}");
    /* accept: the peer is the client; fd.num is the new fd */
    expect(t, sock_ev(25, 288, in4, sizeof(in4), 6),
           "{\"evt.time\":1700000000000000001,\"fd.cip\":\"10.0.0.7\",\"fd.cport\":8080,\"fd.lip\":null,"
           "\"fd.lport\":null,\"fd.name\":\"10.0.0.7:8080->0.0.0.0:0\",\"fd.num\":6,\"fd.rip\":\"10.0.0.7\","
           "\"fd.rport\":8080,\"fd.sip\":null,\"fd.sport\":null,\"fd.typechar\":\"4\"}");
    /* bind: the local address */
    expect(t, sock_ev(24, 49, in4, sizeof(in4), 0),
           "{\"evt.time\":1700000000000000001,\"fd.cip\":null,\"fd.cport\":null,\"fd.lip\":\"10.0.0.7\","
           "\"fd.lport\":8080,\"fd.name\":\"10.0.0.7:8080\",\"fd.num\":4,\"fd.rip\":null,\"fd.rport\":null,"
           "\"fd.sip\":\"10.0.0.7\",\"fd.sport\":8080,\"fd.typechar\":\"4\"}");
    static const uint8_t in6[28] = {10, 0, 0, 9, 0, 0, 0, 0, [23] = 1};   /* [::1]:9 */
    expect("%fd.name %fd.sip %fd.typechar", sock_ev(10, 42, in6, sizeof(in6), 0),
           "{\"evt.time\":1700000000000000001,\"fd.name\":\":::0->::1:9\",\"fd.sip\":\"::1\",\"fd.typechar\":\"6\"}");
    static const uint8_t un[] = {1, 0, '/', 'r', 'u', 'n', '/', 's', 0};
    expect("%fd.name %fd.typechar %fd.sip", sock_ev(10, 42, un, sizeof(un), 0),
           "{\"evt.time\":1700000000000000001,\"fd.name\":\"/run/s\",\"fd.sip\":null,\"fd.typechar\":\"u\"}");
    /* a network and an address in conditions */
    struct rules_engine *e = engine_with(
        "- rule: r\n  desc: d\n  condition: evt.type = connect and fd.sip = 10.0.0.0/8 and fd.sip != 10.0.0.8 and "
        "fd.sip in (192.168.0.0/16, 10.0.0.7) and fd.sport = 8080\n  output: o\n  priority: Notice\n");
    assert_int_equal(eval_count(e, sock_ev(10, 42, in4, sizeof(in4), 0), &L), 1);
    rules_engine_free(e);
}

static void test_raw_and_args(void **state)
{
    (void)state;
    static Gvisor__Syscall__Syscall raw;
    gvisor__syscall__syscall__init(&raw);
    static Gvisor__Syscall__Exit x;
    gvisor__syscall__exit__init(&x);
    x.result = 42;
    raw.context_data = mk_ctx(&CP, 10, "sh", 1700000000000000001);
    raw.exit = &x;
    raw.sysno = 39;
    raw.arg1 = 7;
    raw.arg6 = UINT64_MAX;
    expect("%evt.type %evt.arg.arg1 %evt.arg.arg6 %gvisor.point %evt.rawres", evb_build(&B, 1, 6, 0, &raw.base),
           "{\"evt.arg.arg1\":7,\"evt.arg.arg6\":18446744073709551615,\"evt.rawres\":42,"
           "\"evt.time\":1700000000000000001,\"evt.type\":\"getpid\",\"gvisor.point\":\"syscall/sysno/39/exit\"}");
    raw.sysno = 400;   /* not in the table */
    expect("%evt.type %gvisor.point", evb_build(&B, 1, 6, 0, &raw.base),
           "{\"evt.time\":1700000000000000001,\"evt.type\":\"unknown\",\"gvisor.point\":\"syscall/sysno/400/exit\"}");
    static Gvisor__Syscall__Execve ex;
    gvisor__syscall__execve__init(&ex);
    static char *argv[] = {(char *)"ls", (char *)"-l", (char *)"/x"};
    ex.context_data = mk_ctx(&CP, 10, "sh", 1700000000000000001);
    ex.sysno = 59;
    ex.pathname = (char *)"/bin/ls";
    ex.argv = argv;
    ex.n_argv = 3;
    /* an enter point: its exit sub-message is absent */
    expect("%evt.arg.argv %evt.arg.pathname %evt.arg.envv %evt.arg[2] %evt.arg.exit", evb_build(&B, 1, 11, 0, &ex.base),
           "{\"evt.arg.argv\":\"ls -l /x\",\"evt.arg.envv\":\"\",\"evt.arg.exit\":null,\"evt.arg.pathname\":\"/bin/ls\","
           "\"evt.arg[2]\":\"/bin/ls\",\"evt.time\":1700000000000000001}");
}

static void test_process_fields(void **state)
{
    (void)state;
    struct rules_engine *e = NULL;
    const char *t = "%proc.name %proc.pid %proc.tid %proc.exepath %proc.args %proc.cmdline %proc.cwd %proc.duration "
                    "%proc.ppid %proc.pname %proc.pcmdline %proc.aname[0] %proc.aname[1] %proc.aname[2] %proc.apid[1] "
                    "%user.uid %group.gid %container.id %evt.num";
    /* container/start: init, 64-hex container id cut to Falco's 12 */
    static Gvisor__Container__Start st;
    gvisor__container__start__init(&st);
    static char *args[] = {(char *)"/bin/sh", (char *)"-c", (char *)"run"};
    static const char hex64[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    st.context_data = mk_ctx(&CP, 1, "sh", 1000 + 1 + 500);
    CP.ctx.container_id = (char *)hex64;
    st.id = (char *)hex64;
    st.cwd = (char *)"/srv";
    st.args = args;
    st.n_args = 3;
    const char *got = fields_of(&e, t, evb_build(&B, 1, 1, 0, &st.base));
    assert_string_equal(got, "{\"container.id\":\"0123456789ab\",\"evt.num\":1,\"evt.time\":1501,\"group.gid\":100,"
                             "\"proc.aname[0]\":\"sh\",\"proc.aname[1]\":null,\"proc.aname[2]\":null,\"proc.apid[1]\":null,"
                             "\"proc.args\":\"-c run\",\"proc.cmdline\":\"sh -c run\",\"proc.cwd\":\"/srv/\","
                             "\"proc.duration\":500,\"proc.exepath\":\"/bin/sh\",\"proc.name\":\"sh\",\"proc.pcmdline\":null,"
                             "\"proc.pid\":1,\"proc.pname\":null,\"proc.ppid\":null,\"proc.tid\":1,\"user.uid\":1000}");
    /* sentry/clone from init: child 2 */
    static Gvisor__Sentry__CloneInfo cl;
    gvisor__sentry__clone_info__init(&cl);
    cl.context_data = mk_ctx(&CP, 1, "sh", 2000);
    cl.created_thread_id = 2;
    cl.created_thread_group_id = 2;
    cl.created_thread_start_time_ns = 1002;
    fields_of(&e, t, evb_build(&B, 1, 2, 0, &cl.base));
    /* sentry/execve in the child: python3 via its enter point's path */
    static Gvisor__Syscall__Execve ee;
    gvisor__syscall__execve__init(&ee);
    static char *pargv[] = {(char *)"python3", (char *)"app.py"};
    ee.context_data = mk_ctx(&CP, 2, "sh", 3000);
    ee.sysno = 59;
    ee.pathname = (char *)"/usr/bin/python3";
    ee.argv = pargv;
    ee.n_argv = 2;
    fields_of(&e, t, evb_build(&B, 1, 11, 0, &ee.base));
    static Gvisor__Sentry__ExecveInfo se;
    gvisor__sentry__execve_info__init(&se);
    se.context_data = mk_ctx(&CP, 2, "sh", 3001);
    CP.ctx.thread_id = 3;   /* a thread of the group execs */
    se.binary_path = (char *)"/usr/bin/python3.11";
    se.argv = pargv;
    se.n_argv = 2;
    got = fields_of(&e, t, evb_build(&B, 1, 3, 0, &se.base));
    assert_string_equal(got, "{\"container.id\":\"c1\",\"evt.num\":4,\"evt.time\":3001,\"group.gid\":100,"
                             "\"proc.aname[0]\":\"python3\",\"proc.aname[1]\":\"sh\",\"proc.aname[2]\":null,"
                             "\"proc.apid[1]\":1,\"proc.args\":\"app.py\",\"proc.cmdline\":\"python3 app.py\","
                             "\"proc.cwd\":\"/root/\",\"proc.duration\":1999,\"proc.exepath\":\"/usr/bin/python3.11\","
                             "\"proc.name\":\"python3\",\"proc.pcmdline\":\"sh -c run\",\"proc.pid\":2,"
                             "\"proc.pname\":\"sh\",\"proc.ppid\":1,\"proc.tid\":3,\"user.uid\":1000}");
    rules_engine_free(e);
    /* no thread group in the context: every process field is absent */
    static Gvisor__Syscall__Close c;
    gvisor__syscall__close__init(&c);
    c.context_data = mk_ctx(&CP, 0, "x", 5);
    c.fd = 3;
    c.fd_path = (char *)"/etc/hosts";
    expect("%proc.name %proc.pid %user.uid %fd.name %fd.num %fd.typechar", evb_build(&B, 1, 8, 0, &c.base),
           "{\"evt.time\":5,\"fd.name\":\"/etc/hosts\",\"fd.num\":3,\"fd.typechar\":\"f\",\"proc.name\":null,"
           "\"proc.pid\":null,\"user.uid\":null}");
}

/* ---- the recorded traces ---- */

struct trace_count {
    uint64_t matched, expected;
};

/* Evaluates every packet of a trace as one connection; counts alerts. */
static uint64_t alerts_on_trace(struct rules_engine *e, const char *name)
{
    char path[512];
    trace_path(path, sizeof(path), name);
    struct tracefile tf;
    assert_int_equal(tracefile_open(&tf, path), TRACEFILE_OK);
    struct decoder d;
    decoder_init(&d);
    struct arena a;
    arena_init(&a, 64 * 1024, SIZE_MAX);
    const uint8_t *pkt;
    size_t len;
    uint64_t n = 0;
    while (tracefile_next(&tf, &pkt, &len) == TRACEFILE_OK) {
        struct wire_header h;
        assert_int_equal(wire_header_parse(pkt, len, &h), WIRE_OK);
        arena_reset(&a);
        struct event ev = {.conn_id = 1};
        decode_event(&d, &a, &h, arena_memdup(&a, pkt, len), len, &ev);
        ev.conn_id = 1;
        alert_list_reset(&L);
        rules_engine_eval(e, &ev, 0, &L);
        n += L.count;
    }
    tracefile_close(&tf);
    arena_free(&a);
    return n;
}

/* The same trace counted directly from the decoded messages. */
static uint64_t count_in_trace(const char *name, bool (*pred)(const struct event *))
{
    struct trace_pkts t;
    trace_load(name, &t);
    struct decoder d;
    decoder_init(&d);
    struct arena a;
    arena_init(&a, 64 * 1024, SIZE_MAX);
    uint64_t n = 0;
    for (size_t i = 0; i < t.n; i++) {
        struct wire_header h;
        wire_header_parse(t.pkt[i], t.len[i], &h);
        arena_reset(&a);
        struct event ev = {0};
        decode_event(&d, &a, &h, arena_memdup(&a, t.pkt[i], t.len[i]), t.len[i], &ev);
        n += pred(&ev);
    }
    arena_free(&a);
    trace_free(&t);
    return n;
}

static bool is_openat_exit(const struct event *ev)
{
    return ev->header.message_type == 7 && ev->sysno == 257 && ev->is_exit;
}

static bool is_python_openat_exit(const struct event *ev)
{
    return is_openat_exit(ev) && ev->context && strcmp(ev->context->process_name, "python3") == 0;
}

static bool is_failed_exit(const struct event *ev) { return ev->is_exit && ev->errorno != 0; }

static bool is_exec(const struct event *ev)
{
    return ev->header.message_type == 3 || (ev->header.message_type == 11 && ev->is_exit && ev->errorno != 0);
}

static void test_traces(void **state)
{
    (void)state;
    struct rules_engine *e = engine_with(
        "- rule: openat\n  desc: d\n  condition: evt.type = openat and evt.dir = <\n  output: o\n  priority: Notice\n"
        "- rule: python\n  desc: d\n  condition: evt.type = openat and evt.dir = < and proc.name = python3\n"
        "  output: o\n  priority: Notice\n");
    uint64_t want = count_in_trace("mixed_syscalls.trace", is_openat_exit);
    uint64_t want_py = count_in_trace("mixed_syscalls.trace", is_python_openat_exit);
    assert_int_equal(want, 175);
    assert_true(want_py > 0 && want_py < want);
    assert_int_equal(alerts_on_trace(e, "mixed_syscalls.trace"), want + want_py);
    rules_engine_free(e);
    /* failures: every exit with an errno, named */
    e = engine_with("- rule: f\n  desc: d\n  condition: evt.failed = true and evt.res startswith E\n  output: o\n"
                    "  priority: Notice\n  warn_evttypes: false\n");
    assert_int_equal(alerts_on_trace(e, "mixed_syscalls.trace"), count_in_trace("mixed_syscalls.trace", is_failed_exit));
    rules_engine_free(e);
    /* one exec reaches the rules once: sentry/execve, plus the failed execs */
    e = engine_with("- rule: x\n  desc: d\n  condition: evt.type in (execve, execveat) and evt.dir = <\n  output: o\n"
                    "  priority: Notice\n");
    uint64_t execs = count_in_trace("exec_loop.trace", is_exec);
    assert_int_equal(execs, 203);
    assert_int_equal(alerts_on_trace(e, "exec_loop.trace"), execs);
    rules_engine_free(e);
    /* a rule naming gvisor.point sees the syscall exit as well */
    e = engine_with("- rule: x\n  desc: d\n  condition: evt.type = execve and gvisor.point = syscall/execve/exit\n"
                    "  output: o\n  priority: Notice\n");
    assert_int_equal(alerts_on_trace(e, "exec_loop.trace"), 203);
    rules_engine_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_fields),    cmocka_unit_test(test_socket_fields),
        cmocka_unit_test(test_raw_and_args),   cmocka_unit_test(test_process_fields),
        cmocka_unit_test(test_traces),
    };
    return cmocka_run_group_tests(tests, rules_group_setup, rules_group_teardown);
}
