/* test_rules_exec.c - the fields of gVisor's 2026 releases (filter/fields_exec.c
 * and the process table's exec facts, filter/proctab.c) on crafted events:
 * the binary's layer, memfd, inode and ctime, whether it is writable; the
 * standard streams and the terminal; the pipe peers; the exec session;
 * proc.ppid from the context; sentry/mmap's file; syscall/ptrace's request
 * by name; listen's address and backlog. Each present, absent where runsc
 * does not send it (runsc 2022-12), and hostile values refused. */
#include "rules_util.h"

#include <sys/socket.h>
#include <sys/stat.h>

static struct ctx_parts CP;

/* One rule matching every event; its alert's output_fields for tmpl. */
static struct rules_engine *engine_for(const char *tmpl)
{
    char text[4096];
    snprintf(text, sizeof(text),
             "- rule: r\n  desc: d\n  condition: evt.dir in ('<', '>')\n  output: '%s'\n  priority: Notice\n"
             "  warn_evttypes: false\n", tmpl);
    return engine_with(text);
}

static void expect_fields(struct rules_engine *e, const struct event *ev, const char *want)
{
    assert_int_equal(eval_count(e, ev, &L), 1);
    if (strcmp(L.items[0].output_fields, want) != 0)
        fail_msg("\n got  %s\n want %s", L.items[0].output_fields, want);
}

/* ---- event builders ---- */

static const struct event *start_ev(int32_t tgid)
{
    static Gvisor__Container__Start st;
    static char *args[] = {(char *)"/bin/sh"};
    gvisor__container__start__init(&st);
    st.context_data = mk_ctx(&CP, tgid, "sh", 100);
    st.id = (char *)"c1";
    st.args = args;
    st.n_args = 1;
    return evb_build(&B, 1, 1, 0, &st.base);
}

static const struct event *clone_ev(int32_t parent, const char *name, int32_t child)
{
    static Gvisor__Sentry__CloneInfo cl;
    gvisor__sentry__clone_info__init(&cl);
    cl.context_data = mk_ctx(&CP, parent, name, 200);
    cl.created_thread_id = child;
    cl.created_thread_group_id = child;
    cl.created_thread_start_time_ns = 1000 + child;
    return evb_build(&B, 1, 2, 0, &cl.base);
}

/* sentry/execve of tgid running path: m is filled by the caller first
 * (gvisor__sentry__execve_info__init then the facts), the rest here. */
static const struct event *exec_ev(Gvisor__Sentry__ExecveInfo *m, int32_t tgid, const char *path, int64_t time_ns)
{
    static char *argv[1];
    argv[0] = (char *)path;
    m->context_data = mk_ctx(&CP, tgid, "sh", time_ns);
    m->binary_path = (char *)path;
    m->argv = argv;
    m->n_argv = 1;
    return evb_build(&B, 1, 3, 0, &m->base);
}

static const struct event *close_ev(int32_t tgid, const char *name)
{
    static Gvisor__Syscall__Close c;
    static Gvisor__Syscall__Exit x;
    gvisor__syscall__close__init(&c);
    gvisor__syscall__exit__init(&x);
    c.context_data = mk_ctx(&CP, tgid, name, 9000);
    c.exit = &x;
    c.sysno = 3;
    c.fd = 3;
    return evb_build(&B, 1, 8, 0, &c.base);
}

/* ---- the binary ---- */

static const char *const BIN = "%proc.is_exe_upper_layer %proc.is_exe_lower_layer %proc.is_exe_from_memfd "
                               "%proc.exe_ino %proc.exe_ino.ctime %proc.exe_ino.ctime_duration_proc_start "
                               "%proc.is_exe_writable";

static void test_binary_facts(void **state)
{
    (void)state;
    struct rules_engine *e = engine_for(BIN);
    /* release-20260727.0: every fact; the binary changed 2 s before the process started */
    static Gvisor__Sentry__ExecveInfo m;
    static Gvisor__Common__Timespec ctime;
    gvisor__sentry__execve_info__init(&m);
    gvisor__common__timespec__init(&ctime);
    ctime.sec = 1;
    ctime.nsec = 5;   /* 1000000005 ns; the process started at 1000 + 7 (mk_ctx) */
    m.binary_mode = S_IFREG | 0755;
    m.binary_uid = 1000;   /* the process's own uid (mk_ctx: 1000) */
    m.binary_overlayfs_upper = true;
    m.binary_ino = 4242;
    m.binary_ctime = &ctime;
    m.binary_size = 1234;
    m.binary_nlink = 1;
    const struct event *ev = exec_ev(&m, 7, "/tmp/dropped", 5000);
    /* ctime after the process's start: no duration (libs' would wrap around) */
    expect_fields(e, ev, "{\"evt.time\":5000,\"proc.exe_ino\":4242,\"proc.exe_ino.ctime\":1000000005,"
                         "\"proc.exe_ino.ctime_duration_proc_start\":null,\"proc.is_exe_from_memfd\":false,"
                         "\"proc.is_exe_lower_layer\":false,\"proc.is_exe_upper_layer\":true,"
                         "\"proc.is_exe_writable\":true}");
    /* a ctime before the start: the duration (start 1000 + 8 = 1008 ns, ctime 3 ns) */
    ctime.sec = 0;
    ctime.nsec = 3;
    m.binary_overlayfs_upper = false;
    m.binary_overlayfs_lower = true;
    m.binary_in_memfd = true;
    m.binary_nlink = 0;   /* a memfd has no link; its size says the release */
    m.binary_mode = S_IFREG | 0755;
    m.binary_uid = 0;     /* root's, not writable by uid 1000 */
    ev = exec_ev(&m, 8, "/memfd:x (deleted)", 5001);
    expect_fields(e, ev, "{\"evt.time\":5001,\"proc.exe_ino\":4242,\"proc.exe_ino.ctime\":3,"
                         "\"proc.exe_ino.ctime_duration_proc_start\":1005,\"proc.is_exe_from_memfd\":true,"
                         "\"proc.is_exe_lower_layer\":true,\"proc.is_exe_upper_layer\":false,"
                         "\"proc.is_exe_writable\":false}");
    /* binary_in_memfd true with size and nlink 0 (issue 32, a smaller item):
     * a true value is sent only by a release that has the flag, so it is
     * true, not absent (it was <NA>) */
    m.binary_size = 0;
    m.binary_nlink = 0;
    m.binary_in_memfd = true;
    ev = exec_ev(&m, 11, "/memfd:y (deleted)", 5004);
    expect_fields(e, ev, "{\"evt.time\":5004,\"proc.exe_ino\":4242,\"proc.exe_ino.ctime\":3,"
                         "\"proc.exe_ino.ctime_duration_proc_start\":1008,\"proc.is_exe_from_memfd\":true,"
                         "\"proc.is_exe_lower_layer\":true,\"proc.is_exe_upper_layer\":false,"
                         "\"proc.is_exe_writable\":false}");
    /* runsc 2022-12's binary_info: mode and owner only; the flags it never
     * sends are absent, not false */
    gvisor__sentry__execve_info__init(&m);
    m.binary_mode = S_IFREG | 0775;
    m.binary_uid = 0;
    m.binary_gid = 100;   /* the process's group (mk_ctx: 100) may write */
    ev = exec_ev(&m, 9, "/usr/bin/id", 5002);
    expect_fields(e, ev, "{\"evt.time\":5002,\"proc.exe_ino\":null,\"proc.exe_ino.ctime\":null,"
                         "\"proc.exe_ino.ctime_duration_proc_start\":null,\"proc.is_exe_from_memfd\":null,"
                         "\"proc.is_exe_lower_layer\":null,\"proc.is_exe_upper_layer\":null,"
                         "\"proc.is_exe_writable\":true}");
    /* no binary_info at all: every one absent */
    gvisor__sentry__execve_info__init(&m);
    ev = exec_ev(&m, 10, "/usr/bin/id", 5003);
    expect_fields(e, ev, "{\"evt.time\":5003,\"proc.exe_ino\":null,\"proc.exe_ino.ctime\":null,"
                         "\"proc.exe_ino.ctime_duration_proc_start\":null,\"proc.is_exe_from_memfd\":null,"
                         "\"proc.is_exe_lower_layer\":null,\"proc.is_exe_upper_layer\":null,"
                         "\"proc.is_exe_writable\":null}");
    rules_engine_free(e);
}

static void test_writable(void **state)
{
    (void)state;
    struct rules_engine *e = engine_for("%proc.is_exe_writable");
    static Gvisor__Sentry__ExecveInfo m;
    static const struct {
        uint32_t mode, uid, gid, euid;
        bool want;
    } cases[] = {
        {0755, 1000, 0, 1000, true},    /* the owner, with its write bit */
        {0555, 1000, 100, 1000, false}, /* the owner, without: the group's bit does not count */
        {0575, 1000, 100, 1000, false},
        {0575, 0, 100, 1000, true},     /* the group's */
        {0757, 0, 0, 1000, true},       /* others' */
        {0750, 0, 0, 1000, false},
        {0500, 5, 5, 0, true},          /* root may */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        gvisor__sentry__execve_info__init(&m);
        m.binary_mode = S_IFREG | cases[i].mode;
        m.binary_uid = cases[i].uid;
        m.binary_gid = cases[i].gid;
        const struct event *ev = exec_ev(&m, 20 + (int32_t)i, "/bin/x", 7000);
        CP.creds.effective_uid = cases[i].euid;
        ev = evb_build(&B, 1, 3, 0, &m.base);
        assert_int_equal(eval_count(e, ev, &L), 1);
        char want[96];
        snprintf(want, sizeof(want), "{\"evt.time\":7000,\"proc.is_exe_writable\":%s}", cases[i].want ? "true" : "false");
        if (strcmp(L.items[0].output_fields, want) != 0)
            fail_msg("case %zu: got %s", i, L.items[0].output_fields);
    }
    rules_engine_free(e);
}

/* A child has its parent's image facts and streams until it executes; an
 * exec the table learns without sentry/execve forgets them. */
static void test_inherited_and_forgotten(void **state)
{
    (void)state;
    struct rules_engine *e = engine_for("%proc.is_exe_upper_layer %proc.exe_ino %proc.stdin.type");
    eval_count(e, start_ev(1), &L);
    static Gvisor__Sentry__ExecveInfo m;
    static Gvisor__Common__FdInfo in;
    gvisor__sentry__execve_info__init(&m);
    gvisor__common__fd_info__init(&in);
    in.mode = S_IFIFO | 0600;
    in.path = (char *)"pipe:[7]";
    m.stdin = &in;
    m.binary_ino = 77;
    m.binary_overlayfs_upper = true;
    eval_count(e, exec_ev(&m, 1, "/tmp/x", 300), &L);
    eval_count(e, clone_ev(1, "x", 2), &L);
    expect_fields(e, close_ev(2, "x"),
                  "{\"evt.time\":9000,\"proc.exe_ino\":77,\"proc.is_exe_upper_layer\":true,\"proc.stdin.type\":\"pipe\"}");
    /* the child execs, seen only as a syscall execve exit */
    static Gvisor__Syscall__Execve se;
    static Gvisor__Syscall__Exit x;
    static char *argv[] = {(char *)"ls"};
    gvisor__syscall__execve__init(&se);
    gvisor__syscall__exit__init(&x);
    se.context_data = mk_ctx(&CP, 2, "x", 400);
    se.exit = &x;
    se.sysno = 59;
    se.pathname = (char *)"/bin/ls";
    se.argv = argv;
    se.n_argv = 1;
    eval_count(e, evb_build(&B, 1, 11, 0, &se.base), &L);
    expect_fields(e, close_ev(2, "ls"),
                  "{\"evt.time\":9000,\"proc.exe_ino\":null,\"proc.is_exe_upper_layer\":null,\"proc.stdin.type\":null}");
    /* the parent keeps its own */
    expect_fields(e, close_ev(1, "x"),
                  "{\"evt.time\":9000,\"proc.exe_ino\":77,\"proc.is_exe_upper_layer\":true,\"proc.stdin.type\":\"pipe\"}");
    rules_engine_free(e);
}

/* ---- the standard streams ---- */

static Gvisor__Common__SocketIp sip(Gvisor__Common__SocketIp *s, const uint8_t *ip, size_t len, uint32_t port)
{
    gvisor__common__socket_ip__init(s);
    s->family = len == 4 ? AF_INET : AF_INET6;
    s->ip.data = (uint8_t *)ip;
    s->ip.len = len;
    s->port = port;
    return *s;
}

/* gVisor's SocketIp.port: the network-order bytes read as a little-endian
 * integer (pkg/sentry/kernel/task_exec.go:616 at 3c5eee17d, Port of
 * linux.SockAddrInet, socket.go:478's Htons). */
static uint32_t wire_port(uint16_t port) { return (uint32_t)((port & 0xff) << 8 | port >> 8); }

static const char *const STDIO = "%proc.stdin.type %proc.stdin.name %proc.stdout.type %proc.stdout.name "
                                 "%proc.stderr.type %proc.stderr.name %gvisor.stdin.lip %gvisor.stdin.lport "
                                 "%gvisor.stdin.rip %gvisor.stdin.rport %gvisor.stdout.rip %proc.tty";

static void test_standard_streams(void **state)
{
    (void)state;
    struct rules_engine *e = engine_for(STDIO);
    static Gvisor__Sentry__ExecveInfo m;
    static Gvisor__Common__FdInfo in, out, err;
    static Gvisor__Common__SocketInfo sock;
    static Gvisor__Common__SocketIp local, remote;
    static const uint8_t lip[4] = {10, 0, 0, 2}, rip[4] = {192, 0, 2, 9};
    gvisor__sentry__execve_info__init(&m);
    gvisor__common__fd_info__init(&in);
    gvisor__common__fd_info__init(&out);
    gvisor__common__fd_info__init(&err);
    gvisor__common__socket_info__init(&sock);
    /* a reverse shell: a TCP connection on stdin and stdout, the terminal on stderr */
    sip(&local, lip, 4, wire_port(40000));
    sip(&remote, rip, 4, wire_port(4444));
    sock.family = AF_INET;
    sock.local = &local;
    sock.remote = &remote;
    in.mode = S_IFSOCK | 0777;
    in.path = (char *)"socket:[5]";
    in.socket = &sock;
    out = in;
    err.mode = S_IFCHR | 0620;
    err.path = (char *)"/dev/pts/3";
    m.stdin = &in;
    m.stdout = &out;
    m.stderr = &err;
    expect_fields(e, exec_ev(&m, 30, "/bin/sh", 100),
                  "{\"evt.time\":100,\"gvisor.stdin.lip\":\"10.0.0.2\",\"gvisor.stdin.lport\":40000,"
                  "\"gvisor.stdin.rip\":\"192.0.2.9\",\"gvisor.stdin.rport\":4444,\"gvisor.stdout.rip\":\"192.0.2.9\","
                  "\"proc.stderr.name\":\"/dev/pts/3\",\"proc.stderr.type\":\"file\","
                  "\"proc.stdin.name\":\"10.0.0.2:40000->192.0.2.9:4444\",\"proc.stdin.type\":\"ipv4\","
                  "\"proc.stdout.name\":\"10.0.0.2:40000->192.0.2.9:4444\",\"proc.stdout.type\":\"ipv4\","
                  "\"proc.tty\":34819}");
    /* IPv6, a unix socket, a file; no terminal: proc.tty 0 */
    static const uint8_t six[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 1};
    static Gvisor__Common__SocketInfo sock6, unixs;
    static Gvisor__Common__SocketIp r6;
    gvisor__common__socket_info__init(&sock6);
    gvisor__common__socket_info__init(&unixs);
    sip(&r6, six, 16, wire_port(443));
    sock6.family = AF_INET6;
    sock6.remote = &r6;
    in.socket = &sock6;
    unixs.family = AF_UNIX;
    out.socket = &unixs;
    out.path = (char *)"socket:[6]";
    err.mode = S_IFREG | 0644;
    err.path = (char *)"/var/log/x.log";
    expect_fields(e, exec_ev(&m, 31, "/bin/sh", 101),
                  "{\"evt.time\":101,\"gvisor.stdin.lip\":null,\"gvisor.stdin.lport\":null,"
                  "\"gvisor.stdin.rip\":\"2001:db8::1\",\"gvisor.stdin.rport\":443,\"gvisor.stdout.rip\":null,"
                  "\"proc.stderr.name\":\"/var/log/x.log\",\"proc.stderr.type\":\"file\","
                  "\"proc.stdin.name\":\":::0->2001:db8::1:443\",\"proc.stdin.type\":\"ipv6\","
                  "\"proc.stdout.name\":\"socket:[6]\",\"proc.stdout.type\":\"unix\",\"proc.tty\":0}");
    /* a closed stdin (not sent), a pipe out, a host character device on
     * stderr: which device, gVisor does not say, so proc.tty is absent */
    m.stdin = NULL;
    out.mode = S_IFIFO | 0600;
    out.path = (char *)"pipe:[9]";
    out.socket = NULL;
    err.mode = S_IFCHR | 0600;
    err.path = (char *)"host:[3]";
    expect_fields(e, exec_ev(&m, 32, "/bin/sh", 102),
                  "{\"evt.time\":102,\"gvisor.stdin.lip\":null,\"gvisor.stdin.lport\":null,\"gvisor.stdin.rip\":null,"
                  "\"gvisor.stdin.rport\":null,\"gvisor.stdout.rip\":null,\"proc.stderr.name\":\"host:[3]\","
                  "\"proc.stderr.type\":\"file\",\"proc.stdin.name\":null,\"proc.stdin.type\":null,"
                  "\"proc.stdout.name\":\"pipe:[9]\",\"proc.stdout.type\":\"pipe\",\"proc.tty\":null}");
    /* no fd_info (runsc before release-20260721.0): all absent */
    gvisor__sentry__execve_info__init(&m);
    expect_fields(e, exec_ev(&m, 33, "/bin/sh", 103),
                  "{\"evt.time\":103,\"gvisor.stdin.lip\":null,\"gvisor.stdin.lport\":null,\"gvisor.stdin.rip\":null,"
                  "\"gvisor.stdin.rport\":null,\"gvisor.stdout.rip\":null,\"proc.stderr.name\":null,"
                  "\"proc.stderr.type\":null,\"proc.stdin.name\":null,\"proc.stdin.type\":null,"
                  "\"proc.stdout.name\":null,\"proc.stdout.type\":null,\"proc.tty\":null}");
    rules_engine_free(e);
}

/* The terminals Linux numbers (new_encode_dev), and hostile stream values. */
static void test_tty_and_hostile_streams(void **state)
{
    (void)state;
    struct rules_engine *e = engine_for("%proc.tty %proc.stdin.type %proc.stdin.name %gvisor.stdin.rport");
    static Gvisor__Sentry__ExecveInfo m;
    static Gvisor__Common__FdInfo in;
    static const struct {
        const char *path;
        const char *tty;
    } ttys[] = {
        {"/dev/pts/0", "34816"}, {"/dev/pts/300", "1083436"}, {"/dev/tty1", "1025"}, {"/dev/console", "1281"},
        {"/dev/tty", "1280"}, {"/dev/pts/", "0"}, {"/dev/pts/1x", "0"}, {"/dev/pts/99999999", "0"}, {"/dev/null", "0"},
    };
    for (size_t i = 0; i < sizeof(ttys) / sizeof(ttys[0]); i++) {
        gvisor__sentry__execve_info__init(&m);
        gvisor__common__fd_info__init(&in);
        in.mode = S_IFCHR | 0620;
        in.path = (char *)ttys[i].path;
        m.stdin = &in;
        assert_int_equal(eval_count(e, exec_ev(&m, 40, "/bin/sh", 1), &L), 1);
        char want[64];
        snprintf(want, sizeof(want), "\"proc.tty\":%s}", ttys[i].tty);
        if (!strstr(L.items[0].output_fields, want))
            fail_msg("%s: %s", ttys[i].path, L.items[0].output_fields);
    }
    /* a port past 16 bits, an address of 5 bytes, a socket of no known
     * family, a path longer than the table keeps (cut to 256 bytes) */
    static Gvisor__Common__SocketInfo sock;
    static Gvisor__Common__SocketIp remote;
    static const uint8_t five[5] = {1, 2, 3, 4, 5};
    gvisor__common__socket_info__init(&sock);
    gvisor__common__socket_ip__init(&remote);
    remote.ip.data = (uint8_t *)five;
    remote.ip.len = 5;
    remote.port = 70000;
    sock.family = 99;
    sock.remote = &remote;
    gvisor__common__fd_info__init(&in);
    in.mode = S_IFSOCK;
    static char longpath[2000];
    memset(longpath, 'a', sizeof(longpath) - 1);
    in.path = longpath;
    in.socket = &sock;
    m.stdin = &in;
    assert_int_equal(eval_count(e, exec_ev(&m, 41, "/bin/sh", 2), &L), 1);
    char want[512];
    snprintf(want, sizeof(want), "{\"evt.time\":2,\"gvisor.stdin.rport\":null,\"proc.stdin.name\":\"%.256s\","
             "\"proc.stdin.type\":null,\"proc.tty\":0}", longpath);
    assert_string_equal(L.items[0].output_fields, want);
    rules_engine_free(e);
}

/* ---- the pipe peers ---- */

static const struct event *exec_with_peers(int32_t tgid, const char *path, int32_t in_tgid, int32_t out_tgid)
{
    static Gvisor__Sentry__ExecveInfo m;
    static Gvisor__Sentry__PipeProcInfo pin, pout;
    static Gvisor__Common__ContextData cin, cout;
    gvisor__sentry__execve_info__init(&m);
    gvisor__sentry__pipe_proc_info__init(&pin);
    gvisor__sentry__pipe_proc_info__init(&pout);
    gvisor__common__context_data__init(&cin);
    gvisor__common__context_data__init(&cout);
    cin.thread_group_id = in_tgid;
    cin.thread_group_start_time_ns = 1000 + in_tgid;
    cin.process_name = (char *)"bash";   /* the context's name is not used: the table's is */
    cout.thread_group_id = out_tgid;
    cout.thread_group_start_time_ns = 1000 + out_tgid;
    pin.context_data = &cin;
    pout.context_data = &cout;
    m.pipe_input_proc = in_tgid ? &pin : NULL;
    m.pipe_output_proc = out_tgid ? &pout : NULL;
    return exec_ev(&m, tgid, path, 500 + tgid);
}

static void test_pipe_peers(void **state)
{
    (void)state;
    struct rules_engine *e = engine_for("%gvisor.pipe_input.name %gvisor.pipe_input.exepath %gvisor.pipe_input.pid "
                                        "%gvisor.pipe_output.name %gvisor.pipe_output.exepath %gvisor.pipe_output.pid");
    /* bash (1) forks 2 and 3 for `curl x | sh`; curl execs first, its
     * output's other end (3) not yet executed: named by nobody */
    eval_count(e, start_ev(1), &L);
    eval_count(e, clone_ev(1, "bash", 2), &L);
    eval_count(e, clone_ev(1, "bash", 3), &L);
    expect_fields(e, exec_with_peers(2, "/usr/bin/curl", 0, 3),
                  "{\"evt.time\":502,\"gvisor.pipe_input.exepath\":null,\"gvisor.pipe_input.name\":null,"
                  "\"gvisor.pipe_input.pid\":null,\"gvisor.pipe_output.exepath\":null,\"gvisor.pipe_output.name\":null,"
                  "\"gvisor.pipe_output.pid\":3}");
    /* then sh: its input comes from curl */
    expect_fields(e, exec_with_peers(3, "/bin/sh", 2, 0),
                  "{\"evt.time\":503,\"gvisor.pipe_input.exepath\":\"/usr/bin/curl\",\"gvisor.pipe_input.name\":\"curl\","
                  "\"gvisor.pipe_input.pid\":2,\"gvisor.pipe_output.exepath\":null,\"gvisor.pipe_output.name\":null,"
                  "\"gvisor.pipe_output.pid\":null}");
    /* a peer the table does not have (or another process by now: another start time) */
    expect_fields(e, exec_with_peers(4, "/bin/sh", 99, 0),
                  "{\"evt.time\":504,\"gvisor.pipe_input.exepath\":null,\"gvisor.pipe_input.name\":null,"
                  "\"gvisor.pipe_input.pid\":99,\"gvisor.pipe_output.exepath\":null,\"gvisor.pipe_output.name\":null,"
                  "\"gvisor.pipe_output.pid\":null}");
    rules_engine_free(e);
}

/* ---- the context: exec session, parent ---- */

static void test_context_fields(void **state)
{
    (void)state;
    struct rules_engine *e = engine_for("%gvisor.exec_session %proc.ppid");
    static Gvisor__Syscall__Close c;
    static Gvisor__Syscall__Exit x;
    gvisor__syscall__close__init(&c);
    gvisor__syscall__exit__init(&x);
    c.context_data = mk_ctx(&CP, 50, "sh", 10);
    c.exit = &x;
    c.sysno = 3;
    /* runsc release-20260721.0's is_exec_session; release-20260525.0's parent
     * id: proc.ppid without any table entry for the parent */
    CP.ctx.is_exec_session = true;
    CP.ctx.parent_thread_group_id = 49;
    expect_fields(e, evb_build(&B, 1, 8, 0, &c.base), "{\"evt.time\":10,\"gvisor.exec_session\":true,\"proc.ppid\":49}");
    /* neither sent: false (a proto3 false is not sent either), no parent known */
    c.context_data = mk_ctx(&CP, 51, "sh", 11);
    expect_fields(e, evb_build(&B, 1, 8, 0, &c.base),
                  "{\"evt.time\":11,\"gvisor.exec_session\":false,\"proc.ppid\":null}");
    /* no context at all: absent */
    c.context_data = NULL;
    expect_fields(e, evb_build(&B, 1, 8, 0, &c.base), "{\"evt.time\":1,\"gvisor.exec_session\":null,\"proc.ppid\":null}");
    rules_engine_free(e);
}

/* ---- mmap, ptrace, listen ---- */

static void test_mmap(void **state)
{
    (void)state;
    struct rules_engine *e = engine_for("%evt.type %fd.name %fd.typechar %fd.directory %fd.is_upper_layer "
                                        "%fd.is_lower_layer %fd.ino %evt.arg.is_initial_mmap %fd.num");
    static Gvisor__Sentry__MmapInfo m;
    gvisor__sentry__mmap_info__init(&m);
    m.context_data = mk_ctx(&CP, 60, "app", 20);
    m.mapped_path = (char *)"/tmp/evil.so";
    m.mapped_ino = 99;
    m.mapped_mode = S_IFREG | 0755;
    m.overlayfs_upper = true;
    expect_fields(e, evb_build(&B, 1, 35, 0, &m.base),
                  "{\"evt.arg.is_initial_mmap\":false,\"evt.time\":20,\"evt.type\":\"sentry_mmap\","
                  "\"fd.directory\":\"/tmp\",\"fd.ino\":99,\"fd.is_lower_layer\":false,\"fd.is_upper_layer\":true,"
                  "\"fd.name\":\"/tmp/evil.so\",\"fd.num\":null,\"fd.typechar\":\"f\"}");
    m.mapped_path = (char *)"/memfd:payload (deleted)";
    m.overlayfs_upper = false;
    expect_fields(e, evb_build(&B, 1, 35, 0, &m.base),
                  "{\"evt.arg.is_initial_mmap\":false,\"evt.time\":20,\"evt.type\":\"sentry_mmap\","
                  "\"fd.directory\":null,\"fd.ino\":99,\"fd.is_lower_layer\":false,\"fd.is_upper_layer\":false,"
                  "\"fd.name\":\"/memfd:payload (deleted)\",\"fd.num\":null,\"fd.typechar\":\"m\"}");
    /* an anonymous executable mapping: no file */
    m.mapped_path = NULL;
    expect_fields(e, evb_build(&B, 1, 35, 0, &m.base),
                  "{\"evt.arg.is_initial_mmap\":false,\"evt.time\":20,\"evt.type\":\"sentry_mmap\",\"fd.directory\":null,"
                  "\"fd.ino\":null,\"fd.is_lower_layer\":null,\"fd.is_upper_layer\":null,\"fd.name\":null,"
                  "\"fd.num\":null,\"fd.typechar\":null}");
    /* syscall/mmap: the descriptor's path; anonymous: fd -1, no name */
    static Gvisor__Syscall__Mmap s;
    static Gvisor__Syscall__Exit x;
    gvisor__syscall__mmap__init(&s);
    gvisor__syscall__exit__init(&x);
    s.context_data = mk_ctx(&CP, 60, "app", 21);
    s.exit = &x;
    s.sysno = 9;
    s.fd = 3;
    s.fd_path = (char *)"/memfd:jit (deleted)";
    s.prot = 5;
    expect_fields(e, evb_build(&B, 1, 36, 0, &s.base),
                  "{\"evt.arg.is_initial_mmap\":null,\"evt.time\":21,\"evt.type\":\"mmap\",\"fd.directory\":null,"
                  "\"fd.ino\":null,\"fd.is_lower_layer\":null,\"fd.is_upper_layer\":null,"
                  "\"fd.name\":\"/memfd:jit (deleted)\",\"fd.num\":3,\"fd.typechar\":\"m\"}");
    rules_engine_free(e);
}

static const struct event *ptrace_ev(int64_t request, int32_t pid)
{
    static Gvisor__Syscall__Ptrace m;
    static Gvisor__Syscall__Exit x;
    gvisor__syscall__ptrace__init(&m);
    gvisor__syscall__exit__init(&x);
    m.context_data = mk_ctx(&CP, 70, "gdb", 30);
    m.exit = &x;
    m.sysno = 101;
    m.request = request;
    m.pid = pid;
    return evb_build(&B, 1, 38, 0, &m.base);
}

static void test_ptrace_request_names(void **state)
{
    (void)state;
    struct rules_engine *e = engine_for("%evt.type %evt.arg.request %evt.arg.pid %evt.arg[0]");
    /* libs' names (driver/flags_table.c ptrace_requests) for Linux's numbers */
    expect_fields(e, ptrace_ev(16, 42),
                  "{\"evt.arg.pid\":42,\"evt.arg.request\":\"PTRACE_ATTACH\",\"evt.arg[0]\":\"PTRACE_ATTACH\","
                  "\"evt.time\":30,\"evt.type\":\"ptrace\"}");
    expect_fields(e, ptrace_ev(0x4206, 42),
                  "{\"evt.arg.pid\":42,\"evt.arg.request\":\"PTRACE_SEIZE\",\"evt.arg[0]\":\"PTRACE_SEIZE\","
                  "\"evt.time\":30,\"evt.type\":\"ptrace\"}");
    expect_fields(e, ptrace_ev(0, 0),
                  "{\"evt.arg.pid\":0,\"evt.arg.request\":\"PTRACE_TRACEME\",\"evt.arg[0]\":\"PTRACE_TRACEME\","
                  "\"evt.time\":30,\"evt.type\":\"ptrace\"}");
    expect_fields(e, ptrace_ev(INT64_MIN, 1),
                  "{\"evt.arg.pid\":1,\"evt.arg.request\":\"PTRACE_UNKNOWN\",\"evt.arg[0]\":\"PTRACE_UNKNOWN\","
                  "\"evt.time\":30,\"evt.type\":\"ptrace\"}");
    rules_engine_free(e);
    /* Falco's condition: falco_rules.yaml ptrace_attach_or_injection (evt.arg.request contains PTRACE_ATTACH) */
    e = engine_with("- rule: r\n  desc: d\n  condition: evt.type = ptrace and (evt.arg.request contains PTRACE_ATTACH "
                    "or evt.arg.request in (PTRACE_SEIZE))\n  output: x\n  priority: Notice\n");
    assert_int_equal(eval_count(e, ptrace_ev(16, 42), &L), 1);
    assert_int_equal(eval_count(e, ptrace_ev(0x4206, 42), &L), 1);
    assert_int_equal(eval_count(e, ptrace_ev(17, 42), &L), 0);   /* PTRACE_DETACH */
    rules_engine_free(e);
}

static void test_listen(void **state)
{
    (void)state;
    struct rules_engine *e = engine_for("%evt.type %fd.name %fd.num %fd.lip %fd.lport %fd.sip %fd.typechar "
                                        "%evt.arg.backlog");
    static Gvisor__Syscall__Listen m;
    static Gvisor__Syscall__Exit x;
    static uint8_t addr[16] = {2, 0, 0x11, 0x5c, 0, 0, 0, 0};   /* AF_INET, port 4444, 0.0.0.0 */
    gvisor__syscall__listen__init(&m);
    gvisor__syscall__exit__init(&x);
    m.context_data = mk_ctx(&CP, 80, "nc", 40);
    m.exit = &x;
    m.sysno = 50;
    m.fd = 3;
    m.fd_path = (char *)"socket:[8]";
    m.backlog = 128;
    m.address.data = addr;
    m.address.len = sizeof(addr);
    expect_fields(e, evb_build(&B, 1, 37, 0, &m.base),
                  "{\"evt.arg.backlog\":128,\"evt.time\":40,\"evt.type\":\"listen\",\"fd.lip\":\"0.0.0.0\","
                  "\"fd.lport\":4444,\"fd.name\":\"0.0.0.0:4444\",\"fd.num\":3,\"fd.sip\":\"0.0.0.0\","
                  "\"fd.typechar\":\"4\"}");
    /* no address (a unix socket without a name): the descriptor's path */
    m.address.len = 0;
    expect_fields(e, evb_build(&B, 1, 37, 0, &m.base),
                  "{\"evt.arg.backlog\":128,\"evt.time\":40,\"evt.type\":\"listen\",\"fd.lip\":null,\"fd.lport\":null,"
                  "\"fd.name\":\"socket:[8]\",\"fd.num\":3,\"fd.sip\":null,\"fd.typechar\":\"o\"}");
    rules_engine_free(e);
}

/* A hostile ctime: seconds past int64 as ns, negative, nsec out of range. */
static void test_hostile_ctime(void **state)
{
    (void)state;
    struct rules_engine *e = engine_for("%proc.exe_ino.ctime %proc.exe_ino.ctime_duration_proc_start "
                                        "%proc.is_exe_lower_layer");
    static Gvisor__Sentry__ExecveInfo m;
    static Gvisor__Common__Timespec t;
    static const struct {
        int64_t sec, nsec;
    } bad[] = {{INT64_MAX, 0}, {INT64_MAX / 1000000000, 999999999}, {-1, 0}, {0, -1}, {0, 1000000000}, {INT64_MIN, 0}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        gvisor__sentry__execve_info__init(&m);
        gvisor__common__timespec__init(&t);
        t.sec = bad[i].sec;
        t.nsec = bad[i].nsec;
        m.binary_ctime = &t;
        m.binary_overlayfs_lower = true;
        expect_fields(e, exec_ev(&m, 90, "/bin/x", 50),
                      "{\"evt.time\":50,\"proc.exe_ino.ctime\":null,\"proc.exe_ino.ctime_duration_proc_start\":null,"
                      "\"proc.is_exe_lower_layer\":true}");
    }
    rules_engine_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_binary_facts),
        cmocka_unit_test(test_writable),
        cmocka_unit_test(test_inherited_and_forgotten),
        cmocka_unit_test(test_standard_streams),
        cmocka_unit_test(test_tty_and_hostile_streams),
        cmocka_unit_test(test_pipe_peers),
        cmocka_unit_test(test_context_fields),
        cmocka_unit_test(test_mmap),
        cmocka_unit_test(test_ptrace_request_names),
        cmocka_unit_test(test_listen),
        cmocka_unit_test(test_hostile_ctime),
    };
    return cmocka_run_group_tests(tests, rules_group_setup, rules_group_teardown);
}
