/* test_rules_falco_fields.c - the fields Falco's own rules files use, on
 * crafted events (issue 25 items 3 and 4): proc.exe and the ancestors'
 * exe, session and process group, the environment, the socket fields
 * (fd.type, fd.l4proto, fd.ip/net with CIDR, fd.connected, fd.name_changed,
 * fd.nameraw), evt.arg under Falco's argument names with Falco's flag and
 * mode names, evt.args, and what gVisor never reports: known, absent, and a
 * rule whose condition needs it loaded disabled. Each field present and
 * absent. */
#include "rules_util.h"

#include <ctype.h>

#include "filter.h"
#include "yaml_tree.h"

static struct ctx_parts CP;

/* ---- events ---- */

static Gvisor__Syscall__Exit *exit_of(int64_t result, int64_t err)
{
    static Gvisor__Syscall__Exit x[8];
    static int k;
    k = (k + 1) % 8;
    gvisor__syscall__exit__init(&x[k]);
    x[k].result = result;
    x[k].errorno = err;
    return &x[k];
}

static const struct event *start_ev(int32_t pid, char **args, size_t nargs, char **env, size_t nenv)
{
    static Gvisor__Container__Start m;
    gvisor__container__start__init(&m);
    m.context_data = mk_ctx(&CP, pid, "sh", 1000);
    m.id = (char *)"c1";
    m.cwd = (char *)"/";
    m.args = args;
    m.n_args = nargs;
    m.env = env;
    m.n_env = nenv;
    return evb_build(&B, 1, 1, 0, &m.base);
}

/* sentry/clone in the parent's context */
static const struct event *clone_ev(int32_t parent, const char *pname, int32_t child)
{
    static Gvisor__Sentry__CloneInfo m;
    gvisor__sentry__clone_info__init(&m);
    m.context_data = mk_ctx(&CP, parent, pname, 2000);
    m.created_thread_id = child;
    m.created_thread_group_id = child;
    m.created_thread_start_time_ns = 1000 + child;
    return evb_build(&B, 1, 2, 0, &m.base);
}

static const struct event *exec_ev(int32_t pid, const char *path, char **argv, size_t argc, char **env, size_t nenv)
{
    static Gvisor__Sentry__ExecveInfo m;
    gvisor__sentry__execve_info__init(&m);
    m.context_data = mk_ctx(&CP, pid, "sh", 3000);
    m.binary_path = (char *)path;
    m.argv = argv;
    m.n_argv = argc;
    m.env = env;
    m.n_env = nenv;
    return evb_build(&B, 1, 3, 0, &m.base);
}

static const struct event *raw_ev(int32_t pid, const char *name, uint64_t sysno, uint64_t a1, uint64_t a2,
                                  uint64_t a3, int64_t result, int64_t err)
{
    static Gvisor__Syscall__Syscall m;
    gvisor__syscall__syscall__init(&m);
    m.context_data = mk_ctx(&CP, pid, name, 4000);
    m.exit = exit_of(result, err);
    m.sysno = sysno;
    m.arg1 = a1;
    m.arg2 = a2;
    m.arg3 = a3;
    return evb_build(&B, 1, 6, 0, &m.base);
}

static const struct event *setsid_ev(int32_t pid)
{
    static Gvisor__Syscall__Setid m;
    gvisor__syscall__setid__init(&m);
    m.context_data = mk_ctx(&CP, pid, "sh", 4100);
    m.exit = exit_of(pid, 0);
    m.sysno = 112;
    return evb_build(&B, 1, 14, 0, &m.base);
}

static const struct event *setuid_ev(int32_t pid, uint32_t uid)
{
    static Gvisor__Syscall__Setid m;
    gvisor__syscall__setid__init(&m);
    m.context_data = mk_ctx(&CP, pid, "su", 4100);
    m.exit = exit_of(0, 0);
    m.sysno = 105;
    m.id = uid;
    return evb_build(&B, 1, 14, 0, &m.base);
}

static const struct event *open_ev(int32_t pid, uint64_t sysno, int64_t dirfd, const char *path, uint32_t flags,
                                   uint32_t mode, int64_t result, int64_t err)
{
    static Gvisor__Syscall__Open m;
    gvisor__syscall__open__init(&m);
    m.context_data = mk_ctx(&CP, pid, "cat", 5000);
    CP.ctx.cwd = (char *)"/etc";
    m.exit = exit_of(result, err);
    m.sysno = sysno;
    m.fd = dirfd;
    m.pathname = (char *)path;
    m.flags = flags;
    m.mode = mode;
    return evb_build(&B, 1, 7, 0, &m.base);
}

static const struct event *socket_ev(int32_t pid, int32_t domain, int32_t type, int32_t proto, int64_t fd)
{
    static Gvisor__Syscall__Socket m;
    gvisor__syscall__socket__init(&m);
    m.context_data = mk_ctx(&CP, pid, "nc", 6000);
    m.exit = exit_of(fd, 0);
    m.sysno = 41;
    m.domain = domain;
    m.type = type;
    m.protocol = proto;
    return evb_build(&B, 1, 12, 0, &m.base);
}

static uint8_t addr_buf[32];

static ProtobufCBinaryData in4(uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint16_t port)
{
    uint8_t v[16] = {2, 0, (uint8_t)(port >> 8), (uint8_t)port, a, b, c, d};
    memcpy(addr_buf, v, sizeof(v));
    return (ProtobufCBinaryData){.len = sizeof(v), .data = addr_buf};
}

static const struct event *connect_ev(int32_t pid, int32_t fd, ProtobufCBinaryData addr, int64_t err)
{
    static Gvisor__Syscall__Connect m;
    gvisor__syscall__connect__init(&m);
    m.context_data = mk_ctx(&CP, pid, "nc", 6100);
    m.exit = exit_of(0, err);
    m.sysno = 42;
    m.fd = fd;
    m.fd_path = (char *)"socket:[7]";
    m.address = addr;
    return evb_build(&B, 1, 10, 0, &m.base);
}

static const struct event *dup_ev(int32_t pid, uint64_t sysno, int32_t oldfd, int32_t newfd)
{
    static Gvisor__Syscall__Dup m;
    gvisor__syscall__dup__init(&m);
    m.context_data = mk_ctx(&CP, pid, "sh", 6200);
    m.exit = exit_of(newfd, 0);
    m.sysno = sysno;
    m.old_fd = oldfd;
    m.new_fd = newfd;
    m.fd_path = (char *)"socket:[7]";
    return evb_build(&B, 1, 19, 0, &m.base);
}

static const struct event *close_ev(int32_t pid, int32_t fd)
{
    static Gvisor__Syscall__Close m;
    gvisor__syscall__close__init(&m);
    m.context_data = mk_ctx(&CP, pid, "sh", 6300);
    m.exit = exit_of(0, 0);
    m.sysno = 3;
    m.fd = fd;
    m.fd_path = (char *)"[err: FD not found]";
    return evb_build(&B, 1, 8, 0, &m.base);
}

/* ---- rules ---- */

/* An engine with one rule printing tmpl for every event. */
static struct rules_engine *printer(const char *tmpl)
{
    char text[4096];
    snprintf(text, sizeof(text),
             "- rule: r\n  desc: d\n  condition: evt.dir in ('<', '>')\n  output: '%s'\n  priority: Notice\n"
             "  warn_evttypes: false\n", tmpl);
    return engine_with(text);
}

/* The output text of the alert ev raises (after "Notice "). */
static const char *text_of(struct rules_engine *e, const struct event *ev)
{
    static char out[8192];
    assert_int_equal(eval_count(e, ev, &L), 1);
    const char *o = strstr(L.items[0].output, "Notice ");
    assert_non_null(o);
    snprintf(out, sizeof(out), "%.*s", (int)(L.items[0].output_len - (size_t)(o + 7 - L.items[0].output)), o + 7);
    return out;
}

#define EXPECT_TEXT(e, ev, want)                                                  \
    do {                                                                          \
        const char *got_ = text_of(e, ev);                                        \
        if (strcmp(got_, want) != 0)                                              \
            fail_msg("line %d:\n got  %s\n want %s", __LINE__, got_, want);       \
    } while (0)

/* The output_fields JSON of the alert. */
static const char *fields_json(struct rules_engine *e, const struct event *ev)
{
    assert_int_equal(eval_count(e, ev, &L), 1);
    return L.items[0].output_fields;
}

static size_t matches(const char *condition, const struct event *ev)
{
    char text[4096];
    snprintf(text, sizeof(text), "- rule: r\n  desc: d\n  condition: %s\n  output: o\n  priority: Notice\n"
             "  warn_evttypes: false\n", condition);
    struct rules_engine *e = engine_with(text);
    size_t n = eval_count(e, ev, &L);
    rules_engine_free(e);
    return n;
}

#define YES(cond, ev) do { if (matches(cond, ev) != 1) fail_msg("line %d: expected a match: %s", __LINE__, cond); } while (0)
#define NO(cond, ev) do { if (matches(cond, ev) != 0) fail_msg("line %d: expected no match: %s", __LINE__, cond); } while (0)

/* ---- process fields ---- */

static char *sh_args[] = {(char *)"/bin/sh", (char *)"-c", (char *)"run"};
static char *env1[] = {(char *)"PATH=/usr/bin:/bin", (char *)"HTTP_PROXY=http://p:3128", (char *)"MSG=two words "};
static char *ssh_argv[] = {(char *)"ssh", (char *)"-p", (char *)"80", (char *)"host"};

static void test_exe_and_ancestors(void **state)
{
    (void)state;
    struct rules_engine *e = printer("%proc.exe|%proc.pexe|%proc.aexe[0]|%proc.aexe[1]|%proc.aexe[2]|%proc.pexepath|"
                                     "%proc.aexepath[2]|%proc.vpid|%proc.pvpid|%thread.tid|%thread.vtid");
    /* the init: argv[0] of container/start, no parent */
    EXPECT_TEXT(e, start_ev(1, sh_args, 3, NULL, 0), "/bin/sh|<NA>|/bin/sh|<NA>|<NA>|<NA>|<NA>|1|<NA>|1|1");
    /* a child is its parent's copy until it execs: argv[0] as given (ssh), not the path */
    EXPECT_TEXT(e, clone_ev(1, "sh", 2), "/bin/sh|<NA>|/bin/sh|<NA>|<NA>|<NA>|<NA>|1|<NA>|1|1");
    EXPECT_TEXT(e, exec_ev(2, "/usr/bin/ssh", ssh_argv, 4, NULL, 0),
                "ssh|/bin/sh|ssh|/bin/sh|<NA>|/bin/sh|<NA>|2|1|2|2");
    text_of(e, clone_ev(2, "ssh", 3));
    static char *cat_argv[] = {(char *)"cat"};
    EXPECT_TEXT(e, exec_ev(3, "/bin/cat", cat_argv, 1, NULL, 0),
                "cat|ssh|cat|ssh|/bin/sh|/usr/bin/ssh|/bin/sh|3|2|3|3");
    /* an exec with no argv: the path it ran */
    text_of(e, clone_ev(3, "cat", 4));
    EXPECT_TEXT(e, exec_ev(4, "/bin/true", NULL, 0, NULL, 0), "/bin/true|cat|/bin/true|cat|ssh|/bin/cat|/usr/bin/ssh|4|3|4|4");
    rules_engine_free(e);
    /* no process entry (no thread group in the context): all absent */
    e = printer("%proc.exe %proc.pexe %proc.aexe[1] %proc.vpid");
    EXPECT_TEXT(e, raw_ev(0, "x", 39, 0, 0, 0, 5, 0), "<NA> <NA> <NA> <NA>");
    rules_engine_free(e);
    /* proc.aexe without an index: some ancestor, parent upward (libs'
     * compare_full_aexe), never the process itself */
    e = engine_with("- rule: r\n  desc: d\n  condition: evt.type = execve and proc.aexe endswith ssh\n  output: o\n"
                    "  priority: Notice\n"
                    "- rule: self\n  desc: d\n  condition: evt.type = execve and proc.aexe = cat\n  output: o\n"
                    "  priority: Notice\n");
    eval_count(e, start_ev(1, sh_args, 3, NULL, 0), &L);
    eval_count(e, clone_ev(1, "sh", 2), &L);
    assert_int_equal(eval_count(e, exec_ev(2, "/usr/bin/ssh", ssh_argv, 4, NULL, 0), &L), 0);
    eval_count(e, clone_ev(2, "ssh", 3), &L);
    assert_int_equal(eval_count(e, exec_ev(3, "/bin/cat", cat_argv, 1, NULL, 0), &L), 1);
    assert_string_equal(L.items[0].rule, "r");
    rules_engine_free(e);
}

static void test_session_and_group(void **state)
{
    (void)state;
    struct rules_engine *e = printer("%proc.sid %proc.sname %proc.is_sid_leader %proc.vpgid %proc.vpgid.name "
                                     "%proc.is_vpgid_leader %proc.sid.exe %proc.vpgid.exe");
    /* the init leads a session and a process group (gVisor's
     * task_start.go: no parent's group, a new session) */
    EXPECT_TEXT(e, start_ev(1, sh_args, 3, NULL, 0), "1 sh true 1 sh true /bin/sh /bin/sh");
    text_of(e, clone_ev(1, "sh", 2));
    static char *bash_argv[] = {(char *)"bash", (char *)"-i"};
    EXPECT_TEXT(e, exec_ev(2, "/bin/bash", bash_argv, 2, NULL, 0), "1 sh false 1 sh false /bin/sh /bin/sh");
    /* setsid: its own session and group */
    EXPECT_TEXT(e, setsid_ev(2), "2 sh true 2 sh true bash bash");
    text_of(e, clone_ev(2, "bash", 3));
    /* setpgid(0, 0) in the child (a shell's job): group leader, same session */
    EXPECT_TEXT(e, raw_ev(3, "bash", 109, 0, 0, 0, 0, 0), "2 bash false 3 bash true bash bash");
    text_of(e, clone_ev(3, "bash", 4));
    /* setpgid(5, 3) by the parent for a child named by pid: 4 is not 5, nothing changes */
    EXPECT_TEXT(e, raw_ev(3, "bash", 109, 5, 3, 0, 0, 0), "2 bash false 3 bash true bash bash");
    /* the parent moves child 4 into group 3; a failed call changes nothing */
    text_of(e, raw_ev(2, "bash", 109, 4, 2, 0, 0, 1));
    EXPECT_TEXT(e, raw_ev(2, "bash", 109, 4, 3, 0, 0, 0), "2 bash true 2 bash true bash bash");
    rules_engine_free(e);
    /* a process never seen starting: no session known */
    e = printer("%proc.sid %proc.sname %proc.is_vpgid_leader %proc.vpgid.name");
    EXPECT_TEXT(e, raw_ev(9, "x", 39, 0, 0, 0, 9, 0), "<NA> <NA> <NA> <NA>");
    rules_engine_free(e);
    /* sandbox "Basic Interactive Reconnaissance" style: a group leader's exec */
    e = engine_with("- rule: r\n  desc: d\n  condition: evt.type = execve and proc.is_vpgid_leader = true\n"
                    "  output: o\n  priority: Notice\n");
    eval_count(e, start_ev(1, sh_args, 3, NULL, 0), &L);
    eval_count(e, clone_ev(1, "sh", 2), &L);
    assert_int_equal(eval_count(e, exec_ev(2, "/bin/id", ssh_argv, 1, NULL, 0), &L), 0);
    eval_count(e, raw_ev(2, "sh", 109, 0, 0, 0, 0, 0), &L);
    assert_int_equal(eval_count(e, exec_ev(2, "/bin/id", ssh_argv, 1, NULL, 0), &L), 1);
    rules_engine_free(e);
}

static void test_environment(void **state)
{
    (void)state;
    struct rules_engine *e = printer("[%proc.env] [%proc.env[HTTP_PROXY]] [%proc.env[MSG]] [%proc.env[NOPE]]");
    /* container/start's env (its optional field) */
    EXPECT_TEXT(e, start_ev(1, sh_args, 3, env1, 3),
                "[PATH=/usr/bin:/bin HTTP_PROXY=http://p:3128 MSG=two words ] [http://p:3128] [two words] []");
    /* a child inherits it; an exec replaces it (sentry/execve always sends env) */
    EXPECT_TEXT(e, clone_ev(1, "sh", 2),
                "[PATH=/usr/bin:/bin HTTP_PROXY=http://p:3128 MSG=two words ] [http://p:3128] [two words] []");
    static char *env2[] = {(char *)"GLIBC_TUNABLES=glibc.malloc.x=1"};
    EXPECT_TEXT(e, exec_ev(2, "/bin/su", ssh_argv, 1, env2, 1), "[GLIBC_TUNABLES=glibc.malloc.x=1] [] [] []");
    /* an exec that sent none (execve exit without the envv field): unknown */
    text_of(e, clone_ev(2, "su", 3));
    EXPECT_TEXT(e, exec_ev(3, "/bin/true", ssh_argv, 1, NULL, 0), "[<NA>] [<NA>] [<NA>] [<NA>]");
    rules_engine_free(e);
    /* upstream "Run shell untrusted"-style conditions on it */
    e = engine_with("- rule: r\n  desc: d\n  condition: evt.type = execve and proc.env icontains glibc_tunables\n"
                    "  output: o\n  priority: Notice\n");
    eval_count(e, start_ev(1, sh_args, 3, env1, 3), &L);
    eval_count(e, clone_ev(1, "sh", 2), &L);
    assert_int_equal(eval_count(e, exec_ev(2, "/bin/su", ssh_argv, 1, env2, 1), &L), 1);
    eval_count(e, clone_ev(2, "su", 3), &L);
    assert_int_equal(eval_count(e, exec_ev(3, "/bin/su", ssh_argv, 1, env1, 3), &L), 0);
    rules_engine_free(e);
    /* a rule set that does not read proc.env keeps none: a later set that
     * does sees it only from the next exec on */
    e = printer("%proc.name");
    text_of(e, start_ev(1, sh_args, 3, env1, 3));
    rules_engine_set_rules(e, rules_ok("- rule: r\n  desc: d\n  condition: evt.dir in ('<', '>')\n"
                                       "  output: '%proc.env'\n  priority: Notice\n  warn_evttypes: false\n"));
    EXPECT_TEXT(e, clone_ev(1, "sh", 2), "<NA>");
    EXPECT_TEXT(e, exec_ev(2, "/bin/su", ssh_argv, 1, env2, 1), "GLIBC_TUNABLES=glibc.malloc.x=1");
    rules_engine_free(e);
}

/* ---- fd fields ---- */

static void test_socket_fields(void **state)
{
    (void)state;
    struct rules_engine *e = printer("%fd.type|%fd.l4proto|%fd.sockfamily|%fd.ip|%fd.port|%fd.connected|"
                                     "%fd.name_changed|%fd.name|%fd.typechar");
    text_of(e, start_ev(1, sh_args, 3, NULL, 0));
    /* socket(AF_INET, SOCK_STREAM|SOCK_CLOEXEC, 0) = 3 */
    EXPECT_TEXT(e, socket_ev(1, 2, 1 | 02000000, 0, 3), "ipv4|tcp|ip|<NA>|<NA>|false|false|<NA>|4");
    /* connect(3, 93.184.216.34:443): the server side known */
    EXPECT_TEXT(e, connect_ev(1, 3, in4(93, 184, 216, 34, 443), 0),
                "ipv4|tcp|ip|93.184.216.34|443|true|true|0.0.0.0:0->93.184.216.34:443|4");
    /* dup2(3, 0): the new fd is that socket (upstream "Redirect STDOUT/STDIN to Network Connection") */
    EXPECT_TEXT(e, dup_ev(1, 33, 3, 0), "ipv4|tcp|ip|93.184.216.34|443|true|false|0.0.0.0:0->93.184.216.34:443|4");
    /* close(3): its rules still see the socket; then it is gone */
    EXPECT_TEXT(e, close_ev(1, 3), "ipv4|tcp|ip|93.184.216.34|443|true|false|0.0.0.0:0->93.184.216.34:443|4");
    EXPECT_TEXT(e, close_ev(1, 3), "<NA>|<NA>|<NA>|<NA>|<NA>|<NA>|false|[err: FD not found]|o");
    /* UDP, unconnected: EINPROGRESS still connects, ECONNREFUSED does not */
    EXPECT_TEXT(e, socket_ev(1, 10, 2, 17, 4), "ipv6|udp|ip|<NA>|<NA>|false|false|<NA>|6");
    EXPECT_TEXT(e, socket_ev(1, 2, 3, 1, 5), "ipv4|raw|ip|<NA>|<NA>|false|false|<NA>|4");
    EXPECT_TEXT(e, connect_ev(1, 5, in4(10, 0, 0, 1, 0), 111), "ipv4|raw|ip|10.0.0.1|0|false|false|"
                                                               "0.0.0.0:0->10.0.0.1:0|4");
    EXPECT_TEXT(e, connect_ev(1, 5, in4(10, 0, 0, 1, 0), 115), "ipv4|raw|ip|10.0.0.1|0|true|true|"
                                                               "0.0.0.0:0->10.0.0.1:0|4");
    /* unix: no l4 protocol (libs says "<NA>"), family unix */
    EXPECT_TEXT(e, socket_ev(1, 1, 1, 0, 6), "unix|<NA>|unix|<NA>|<NA>|false|false|<NA>|u");
    /* a file fd: not connected, no protocol */
    EXPECT_TEXT(e, open_ev(1, 257, -100, "/etc/hosts", 0, 0, 7, 0), "file|<NA>|<NA>|<NA>|<NA>|false|false|/etc/hosts|f");
    rules_engine_free(e);
    /* the fd table of a process nobody told about: the event's own facts only */
    e = printer("%fd.type|%fd.l4proto|%fd.ip|%fd.connected");
    EXPECT_TEXT(e, dup_ev(5, 33, 3, 1), "<NA>|<NA>|<NA>|<NA>");
    EXPECT_TEXT(e, connect_ev(5, 3, in4(1, 2, 3, 4, 22), 0), "ipv4|<NA>|1.2.3.4|true");
    rules_engine_free(e);
    /* a child inherits its parent's sockets; an exec closes the close-on-exec ones */
    e = printer("%fd.type");
    text_of(e, start_ev(1, sh_args, 3, NULL, 0));
    text_of(e, socket_ev(1, 2, 1, 0, 3));
    text_of(e, socket_ev(1, 2, 1 | 02000000, 0, 4));
    text_of(e, clone_ev(1, "sh", 2));
    EXPECT_TEXT(e, dup_ev(2, 33, 4, 1), "ipv4");
    text_of(e, exec_ev(2, "/bin/sh", sh_args, 1, NULL, 0));
    EXPECT_TEXT(e, dup_ev(2, 33, 3, 0), "ipv4");
    EXPECT_TEXT(e, dup_ev(2, 33, 4, 2), "<NA>");
    rules_engine_free(e);
}

static void test_networks(void **state)
{
    (void)state;
    struct rules_engine *e = engine_with("- rule: r\n  desc: d\n  condition: evt.type = socket\n  output: o\n"
                                         "  priority: Notice\n");
    eval_count(e, start_ev(1, sh_args, 3, NULL, 0), &L);
    eval_count(e, socket_ev(1, 2, 1, 0, 3), &L);
    rules_engine_free(e);
    const struct event *ev = connect_ev(1, 3, in4(93, 184, 216, 34, 443), 0);
    /* upstream's outbound macro: fd.ip != "0.0.0.0" and fd.net != "127.0.0.0/8" and not fd.snet in (rfc1918) */
    YES("fd.ip != \"0.0.0.0\" and fd.net != \"127.0.0.0/8\" and not fd.snet in (10.0.0.0/8, 172.16.0.0/12, "
        "192.168.0.0/16)", ev);
    YES("fd.net = 93.184.0.0/16 and fd.snet = 93.184.216.34 and fd.rnet = 93.0.0.0/8", ev);
    NO("fd.cnet = 0.0.0.0/0 or fd.lnet = 0.0.0.0/0", ev);   /* connect: gVisor reports the server side only */
    YES("fd.port = 443 and fd.sockfamily = ip", ev);
    const struct event *local = connect_ev(1, 3, in4(127, 0, 0, 1, 6379), 0);
    NO("fd.net != \"127.0.0.0/8\"", local);
    YES("fd.ip = 127.0.0.1 and fd.rnet = 127.0.0.0/8", local);
    /* no address: every comparison false, != included */
    NO("fd.ip != 1.2.3.4 or fd.net = 0.0.0.0/0 or fd.port != 1", socket_ev(1, 2, 1, 0, 3));
}

static void test_nameraw(void **state)
{
    (void)state;
    struct rules_engine *e = printer("[%fd.nameraw] [%fd.name]");
    /* upstream "Directory traversal monitored file read": the path as given, doubled slashes made one */
    EXPECT_TEXT(e, open_ev(1, 257, -100, "../..//etc/./shadow", 0, 0, 3, 0), "[../../etc/./shadow] [/etc/shadow]");
    EXPECT_TEXT(e, open_ev(1, 2, -100, "/tmp//x", 0, 0, 3, 0), "[/tmp/x] [/tmp/x]");
    /* a socket has an empty raw name; no fd at all: absent */
    EXPECT_TEXT(e, close_ev(1, 9), "[] [[err: FD not found]]");
    EXPECT_TEXT(e, exec_ev(1, "/bin/x", ssh_argv, 1, NULL, 0), "[<NA>] [<NA>]");
    rules_engine_free(e);
    YES("fd.nameraw contains '../' and fd.nameraw glob '*../*../*'", open_ev(1, 257, -100, "a/../../etc/shadow", 0,
                                                                                0, 3, 0));
    NO("fd.nameraw contains '../'", open_ev(1, 257, -100, "/etc/shadow", 0, 0, 3, 0));
}

/* ---- evt.arg under Falco's names ---- */

static void test_falco_arg_names(void **state)
{
    (void)state;
    struct rules_engine *e = printer("%evt.arg.fd|%evt.arg.dirfd|%evt.arg.name|%evt.arg.flags|%evt.arg.mode|"
                                     "%evt.arg.pathname|%evt.arg[0]");
    /* openat(AT_FDCWD, "x", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 3 in /etc:
     * libs renders the flags in its table's order */
    EXPECT_TEXT(e, open_ev(1, 257, -100, "x", 01 | 0100 | 01000, 0644, 3, 0),
                "<f>/etc/x|AT_FDCWD|/etc/x|O_TRUNC|O_CREAT|O_WRONLY|0644|x|-100");
    /* libs events_param.ut.cpp:491 bitmaskparams: O_RDONLY|O_CLOEXEC */
    EXPECT_TEXT(e, open_ev(1, 2, -100, "/tmp/foo", 02000000, 0, 4, 0),
                "<f>/tmp/foo|<NA>|/tmp/foo|O_RDONLY|O_CLOEXEC|0|/tmp/foo|-100");
    /* a failed open: fd is the errno's name */
    EXPECT_TEXT(e, open_ev(1, 257, 5, "/nope", 0, 0, 0, 2), "ENOENT|5|/nope|O_RDONLY|0|/nope|5");
    rules_engine_free(e);
    /* libs filter_op_contains.ut.cpp:24 contains_icontains */
    const struct event *ev = open_ev(1, 2, -100, "/opt/dir/SUBDIR/file.txt", 02 | 0100, 0, 1, 0);
    YES("evt.arg.flags contains O_CREAT", ev);
    NO("evt.arg.flags contains O_TMPFILE", ev);
    YES("evt.arg.flags icontains o_creat", ev);
    YES("evt.arg.flags = 'O_CREAT|O_RDWR'", ev);
    /* upstream "Create files below dev": open_write and evt.arg.flags contains O_CREAT */
    YES("evt.type in (open, openat) and evt.is_open_write = true and fd.directory = /dev and evt.arg.flags "
        "contains O_CREAT", open_ev(1, 2, -100, "/dev/x", 01 | 0100, 0600, 3, 0));
    NO("evt.arg.flags contains O_CREAT", open_ev(1, 2, -100, "/dev/null", 01, 0, 3, 0));
    /* upstream "Clear Log Activities": O_TRUNC */
    YES("evt.arg.flags contains O_TRUNC", open_ev(1, 257, -100, "/var/log/x", 01 | 01000, 0, 3, 0));
    /* protobuf names still work where Falco has no such name */
    YES("evt.arg.pathname = x and evt.arg.fd_path exists", open_ev(1, 257, -100, "x", 0, 0, 3, 0));
    YES("evt.arg.id = 0 and evt.arg.uid = 0", setuid_ev(1, 0));
}

static void test_raw_and_typed_args(void **state)
{
    (void)state;
    struct rules_engine *e = printer("%evt.arg.mode|%evt.arg.fd|%evt.arg.filename|%evt.arg.flags|%evt.arg.cmd|"
                                     "%evt.arg.sig|%evt.arg.pid");
    /* chmod("x", 04755): a raw point, the mode by name, the path never sent */
    EXPECT_TEXT(e, raw_ev(1, "chmod", 90, 0x7f00, 04755, 0, 0, 0),
                "S_IXOTH|S_IROTH|S_IXGRP|S_IRGRP|S_IXUSR|S_IWUSR|S_IRUSR|S_ISUID|<NA>|<NA>|<NA>|<NA>|<NA>|<NA>");
    /* fchmod(3, 0) */
    EXPECT_TEXT(e, raw_ev(1, "chmod", 91, 3, 0, 0, 0, 0), "0|3|<NA>|<NA>|<NA>|<NA>|<NA>");
    /* unshare(CLONE_NEWNS|CLONE_NEWUSER), bpf(BPF_PROG_LOAD) = -ENOSYS, kill(7, 9) */
    EXPECT_TEXT(e, raw_ev(1, "x", 272, 0x20000 | 0x10000000, 0, 0, 0, 0),
                "<NA>|<NA>|<NA>|CLONE_NEWNS|CLONE_NEWUSER|<NA>|<NA>|<NA>");
    EXPECT_TEXT(e, raw_ev(1, "x", 321, 5, 0, 0, 0, 38), "<NA>|ENOSYS|<NA>|<NA>|BPF_PROG_LOAD|<NA>|<NA>");
    EXPECT_TEXT(e, raw_ev(1, "x", 62, 7, 9, 0, 0, 0), "<NA>|<NA>|<NA>|<NA>|<NA>|SIGKILL|7");
    rules_engine_free(e);
    /* an int argument is the register's low 32 bits, signed: fchmodat(AT_FDCWD, ...) as runsc sends it
     * (0xffffff9c), kill(-1, SIGTERM) */
    e = printer("%evt.arg.dirfd|%evt.arg.pid|%evt.arg.sig");
    EXPECT_TEXT(e, raw_ev(1, "chmod", 268, 0xffffff9cu, 0x7f00, 04755, 0, 0), "AT_FDCWD|<NA>|<NA>");
    EXPECT_TEXT(e, raw_ev(1, "kill", 62, 0xffffffffu, 15, 0, 0, 0), "<NA>|-1|SIGTERM");
    rules_engine_free(e);
    /* incubating "Set Setuid or Setgid bit": chmod and evt.arg.mode contains S_ISUID */
    YES("evt.type in (chmod, fchmod, fchmodat) and evt.arg.mode contains S_ISUID", raw_ev(1, "c", 268, 0, 0, 06755,
                                                                                           0, 0));
    NO("evt.arg.mode contains S_ISUID", raw_ev(1, "c", 268, 0, 0, 0755, 0, 0));
    /* incubating "BPF Program Not Profiled": evt.arg.cmd=5 or evt.arg.cmd=BPF_PROG_LOAD */
    YES("evt.type = bpf and (evt.arg.cmd = 5 or evt.arg.cmd = BPF_PROG_LOAD)", raw_ev(1, "x", 321, 5, 0, 0, 3, 0));
    /* socket's domain, "Packet socket created in container" */
    YES("evt.type = socket and evt.arg.domain contains AF_PACKET", socket_ev(1, 17, 3, 0x300, 3));
    e = printer("%evt.arg.domain %evt.arg.type %evt.arg.proto %evt.arg.fd");
    EXPECT_TEXT(e, socket_ev(1, 1, 1, 0, 3), "AF_LOCAL|AF_UNIX 1 0 3");
    rules_engine_free(e);
    /* setuid: uid as a number (user names need the container's passwd) */
    e = printer("%evt.arg.uid %evt.arg.res %evt.arg.id");
    EXPECT_TEXT(e, setuid_ev(1, 65534), "65534 0 65534");
    rules_engine_free(e);
    /* connect: tuple, addr */
    e = printer("%evt.arg.tuple|%evt.arg.addr|%evt.arg.fd|%evt.arg.res");
    EXPECT_TEXT(e, connect_ev(1, 3, in4(1, 2, 3, 4, 80), 111), "0.0.0.0:0->1.2.3.4:80|1.2.3.4:80|<4>0.0.0.0:0->1.2.3.4:80|"
                                                              "ECONNREFUSED");
    rules_engine_free(e);
}

static void test_exec_args_and_evt_args(void **state)
{
    (void)state;
    struct rules_engine *e = printer("%evt.arg.exe|%evt.arg.args|%evt.arg.env|%evt.arg.filename|%evt.arg.ptid|"
                                     "%evt.arg.comm|%evt.arg.trusted_exepath|%evt.arg.flags");
    text_of(e, start_ev(1, sh_args, 3, NULL, 0));
    text_of(e, clone_ev(1, "sh", 2));
    static char *env2[] = {(char *)"A=1", (char *)"B=\x01x"};
    EXPECT_TEXT(e, exec_ev(2, "/usr/bin/ssh", ssh_argv, 4, env2, 2),
                "ssh|-p.80.host.|A=1.B=.x.|<NA>|sh|ssh|/usr/bin/ssh|<NA>");
    rules_engine_free(e);
    e = printer("%evt.args");
    EXPECT_TEXT(e, open_ev(1, 257, -100, "x", 01 | 0100, 0644, 3, 0),
                "fd=3(<f>/etc/x) dirfd=-100(AT_FDCWD) name=x(/etc/x) flags=65(O_CREAT|O_WRONLY) mode=0644");
    EXPECT_TEXT(e, raw_ev(1, "x", 90, 0, 0755, 0, -1, 1), "res=-1(EPERM) mode=0755(S_IXOTH|S_IROTH|S_IXGRP|S_IRGRP|"
                                                          "S_IXUSR|S_IWUSR|S_IRUSR)");
    EXPECT_TEXT(e, socket_ev(1, 2, 1, 6, 3), "fd=3 domain=2(AF_INET) type=1 proto=6");
    /* an event libs has no parameters for here: empty */
    EXPECT_TEXT(e, raw_ev(1, "x", 39, 0, 0, 0, 5, 0), "");
    rules_engine_free(e);
}

/* ---- what gVisor never reports ---- */

static const char *load_warnings(const char *text, struct rule_set **out)
{
    static char buf[8192];
    struct rules_diag d = {0};
    struct rule_set *rs = rule_set_load_buffer("t.yaml", text, strlen(text), &d);
    assert_non_null(rs);
    FILE *fp = fmemopen(buf, sizeof(buf), "w");
    rules_diag_print(&d, fp);
    fclose(fp);
    rules_diag_free(&d);
    *out = rs;
    return buf;
}

static const char *never_rules =
    "- macro: payload\n  condition: evt.buffer bcontains cafebabe\n"
    "- rule: java payload\n  desc: d\n  condition: evt.type = read and payload\n  output: '%proc.name'\n"
    "  priority: Critical\n"
    "- rule: caps\n  desc: d\n  condition: evt.type = execve and (thread.cap_effective contains CAP_SYS_ADMIN or "
    "thread.cap_permitted contains CAP_SYS_MODULE)\n  output: o\n  priority: Notice\n"
    "- rule: symlink\n  desc: d\n  condition: evt.type in (symlink, symlinkat) and evt.arg.target startswith /etc\n"
    "  output: '%evt.arg.linkpath'\n  priority: Notice\n"
    "- rule: output only\n  desc: d\n  condition: evt.type = execve\n  output: 'caps=%thread.cap_effective "
    "sip=%fd.sip.name buf=%evt.buffer'\n  priority: Notice\n"
    "- rule: mkdir mode\n  desc: d\n  condition: evt.type = mkdir and evt.arg.mode exists\n  output: o\n"
    "  priority: Notice\n"
    "- rule: off already\n  desc: d\n  condition: evt.type = read and evt.buffer contains x\n  output: o\n"
    "  priority: Notice\n  enabled: false\n";

static void test_never_reported(void **state)
{
    (void)state;
    struct rule_set *rs;
    const char *w = load_warnings(never_rules, &rs);
    /* one warning per rule, naming it and the fields (macros expanded) */
    assert_non_null(strstr(w, "t.yaml:3:9: warning: rule 'java payload' is disabled: its condition needs fields "
                              "gVisor never reports: evt.buffer (--rules-absent-fields run runs it anyway)"));
    assert_non_null(strstr(w, "rule 'caps' is disabled: its condition needs fields gVisor never reports: "
                              "thread.cap_effective, thread.cap_permitted"));
    assert_non_null(strstr(w, "rule 'symlink' is disabled: its condition needs fields gVisor never reports: "
                              "evt.arg.target"));
    assert_null(strstr(w, "output only"));
    assert_null(strstr(w, "mkdir mode"));   /* raw mkdir carries its mode */
    assert_null(strstr(w, "off already"));
    struct rule_set_stats st;
    rule_set_get_stats(rs, &st);
    assert_int_equal(st.rules, 6);
    assert_int_equal(st.rules_enabled, 2);
    assert_int_equal(st.rules_absent, 3);
    bool off;
    struct rule_info info;
    rule_set_rule_info(rs, 1, &info);
    assert_false(info.enabled);
    assert_string_equal(rule_set_rule_absent(rs, 1, &off), "thread.cap_effective, thread.cap_permitted");
    assert_true(off);
    assert_null(rule_set_rule_absent(rs, 3, &off));
    assert_false(off);
    assert_string_equal(rule_set_rule_absent(rs, 5, &off), "evt.buffer");
    assert_false(off);   /* disabled by its file, not for the field */
    /* disabled rules need nothing from runsc */
    struct rules_needs n = {0};
    assert_int_equal(rule_set_rule_needs(rs, 0, &n), 0);
    assert_int_equal(n.count, 0);
    rules_needs_free(&n);
    /* an output field gVisor never reports renders <NA>, null in output_fields */
    struct rules_engine *e = engine_with(NULL);
    rules_engine_set_rules(e, rs);
    const char *f = fields_json(e, exec_ev(1, "/bin/x", ssh_argv, 1, NULL, 0));
    assert_non_null(strstr(f, "\"evt.buffer\":null"));
    assert_non_null(strstr(f, "\"thread.cap_effective\":null"));
    assert_non_null(strstr(L.items[0].output, "caps=<NA> sip=<NA> buf=<NA>"));
    rules_engine_free(e);
    /* run mode: enabled, their comparisons false */
    rules_set_absent_mode(RULES_ABSENT_RUN);
    w = load_warnings(never_rules, &rs);
    rules_set_absent_mode(RULES_ABSENT_DISABLE);
    assert_non_null(strstr(w, "rule 'caps' needs fields gVisor never reports: thread.cap_effective, "
                              "thread.cap_permitted; it runs (--rules-absent-fields run)"));
    rule_set_get_stats(rs, &st);
    assert_int_equal(st.rules_enabled, 5);
    assert_int_equal(st.rules_absent, 0);
    assert_string_equal(rule_set_rule_absent(rs, 1, &off), "thread.cap_effective, thread.cap_permitted");
    assert_false(off);
    rule_set_free(rs);
    /* the modes' names */
    enum rules_absent_mode m;
    assert_int_equal(rules_absent_mode_parse("run", &m), 0);
    assert_int_equal(m, RULES_ABSENT_RUN);
    assert_int_equal(rules_absent_mode_parse("disable", &m), 0);
    assert_int_equal(m, RULES_ABSENT_DISABLE);
    assert_int_equal(rules_absent_mode_parse("Run", &m), -1);
}

static void test_absent_never_true(void **state)
{
    (void)state;
    /* known fields with no value: a comparison is false, != included; not inverts */
    const struct event *ev = exec_ev(1, "/bin/x", ssh_argv, 1, NULL, 0);
    rules_set_absent_mode(RULES_ABSENT_RUN);
    NO("thread.cap_effective contains CAP or thread.cap_effective != x or evt.buffer exists", ev);
    YES("not thread.cap_permitted contains CAP_SYS_ADMIN", ev);
    NO("fd.sip.name != x or fd.cip.name exists", connect_ev(1, 3, in4(1, 2, 3, 4, 80), 0));
    rules_set_absent_mode(RULES_ABSENT_DISABLE);
    /* unknown names stay errors */
    char out[2048];
    rules_errors("- rule: r\n  desc: d\n  condition: evt.type = open and evt.arg.nosuchname = 1\n  output: o\n"
                 "  priority: Notice\n", out, sizeof(out));
    assert_non_null(strstr(out, "no gVisor message has a field named 'nosuchname'"));
    rules_errors("- rule: r\n  desc: d\n  condition: evt.type = open and proc.env[] = 1\n  output: o\n"
                 "  priority: Notice\n", out, sizeof(out));
}

/* ---- the upstream rules files' fields ---- */

/* Fields of the upstream files that other work adds (container metadata
 * and user names: issue 27; newer runsc's exec facts and proc.tty: issue
 * 26). Each goes from this list when its branch is merged. */
static const char *const others_fields[] = {
    "container.image.repository", "container.privileged",
    "container.start_ts", "k8s.ns.name", "k8s.pod.name", "user.name", "user.loginuid", "user.loginname",
    "group.name",
};

static bool others_seen[sizeof(others_fields) / sizeof(others_fields[0])];

static bool is_others(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof(others_fields) / sizeof(others_fields[0]); i++)
        if (strlen(others_fields[i]) == len && memcmp(others_fields[i], name, len) == 0) {
            others_seen[i] = true;
            return true;
        }
    return false;
}

struct field_census {
    char names[256][80];
    size_t n, others, resolved;
    struct arena arena;
};

static bool field_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '.'; }

/* A field reference at s[i] (class.name..., with its [arg]): resolves it,
 * once per distinct spelling. Returns its length, 0 when none starts there. */
static size_t census_at(struct field_census *c, const char *s, size_t len, size_t i)
{
    static const char *const classes[] = {"evt.", "proc.", "fd.", "user.", "group.", "container.", "k8s.",
                                          "thread.", "fs."};
    bool start = false;
    for (size_t k = 0; k < sizeof(classes) / sizeof(classes[0]) && !start; k++)
        start = len - i > strlen(classes[k]) && memcmp(s + i, classes[k], strlen(classes[k])) == 0;
    if (!start)
        return 0;
    size_t n = 0;
    while (i + n < len && field_char(s[i + n]))
        n++;
    while (n && s[i + n - 1] == '.')
        n--;   /* a sentence's full stop */
    size_t full = n;
    const char *arg = NULL;
    size_t arglen = 0;
    if (i + n < len && s[i + n] == '[') {
        const char *close = memchr(s + i + n, ']', len - i - n);
        if (close) {
            arg = s + i + n + 1;
            arglen = (size_t)(close - arg);
            full = (size_t)(close - (s + i)) + 1;
        }
    }
    for (size_t k = 0; k < c->n; k++)
        if (strlen(c->names[k]) == full && memcmp(c->names[k], s + i, full) == 0)
            return full;
    assert_true(c->n < 256 && full < sizeof(c->names[0]));
    memcpy(c->names[c->n], s + i, full);
    c->names[c->n++][full] = '\0';
    if (is_others(s + i, n)) {
        c->others++;
        return full;
    }
    struct fieldref ref;
    char err[256];
    if (fields_resolve(s + i, n, arg, arglen, arg != NULL, &c->arena, &ref, err, sizeof(err)) != 0)
        fail_msg("upstream field '%.*s' unknown: %s", (int)full, s + i, err);
    c->resolved++;
    return full;
}

/* Every field a condition names (quoted values skipped), or an output's %fields. */
static void census_text(struct field_census *c, const char *s, size_t len, bool output)
{
    char quote = 0;
    for (size_t i = 0; i < len; i++) {
        if (!output && quote) {
            if (s[i] == quote)
                quote = 0;
            continue;
        }
        if (!output && (s[i] == '\'' || s[i] == '"')) {
            quote = s[i];
            continue;
        }
        if (output) {
            if (s[i] != '%')
                continue;
            i += i + 1 < len && s[i + 1] == '(' ? 2 : 1;
        } else if (i > 0 && (field_char(s[i - 1]) || s[i - 1] == '/' || s[i - 1] == '-')) {
            continue;
        }
        size_t n = census_at(c, s, len, i);
        if (n)
            i += n - 1;
    }
}

static void census_file(struct field_census *c, const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/../falco_rules/%s", TRACES_DIR, name);
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    static char buf[1 << 20];
    size_t len = fread(buf, 1, sizeof(buf), fp);
    fclose(fp);
    assert_true(len > 0 && len < sizeof(buf));
    struct ynode **docs;
    size_t ndocs;
    struct ytree_error err;
    assert_int_equal(ytree_parse(&c->arena, buf, len, &docs, &ndocs, &err), 0);
    assert_int_equal(ndocs, 1);
    const struct ynode *top = docs[0];
    assert_int_equal(top->kind, YN_SEQ);
    for (size_t i = 0; i < top->count; i++) {
        const struct ynode *it = top->items[i], *n;
        if (it->kind != YN_MAP)
            continue;
        if ((n = ytree_get(it, "condition")) && n->kind == YN_SCALAR)
            census_text(c, n->value, n->len, false);
        if ((n = ytree_get(it, "output")) && n->kind == YN_SCALAR)
            census_text(c, n->value, n->len, true);
        const struct ynode *ex = ytree_get(it, "exceptions");
        for (size_t k = 0; ex && ex->kind == YN_SEQ && k < ex->count; k++) {
            const struct ynode *f = ex->items[k]->kind == YN_MAP ? ytree_get(ex->items[k], "fields") : NULL;
            if (f && f->kind == YN_SCALAR)
                census_text(c, f->value, f->len, false);
            for (size_t j = 0; f && f->kind == YN_SEQ && j < f->count; j++)
                if (f->items[j]->kind == YN_SCALAR)
                    census_text(c, f->items[j]->value, f->items[j]->len, false);
        }
    }
}

/* Issue 25 item 3: every field falcosecurity/rules' three files name in a
 * condition, an output or an exception (tests/fixtures/falco_rules, taken
 * from them mechanically here) is a known field, but those other work adds;
 * the ones gVisor can never report are known as such (item 4). */
static void test_upstream_fields_known(void **state)
{
    (void)state;
    static struct field_census c;
    memset(&c, 0, sizeof(c));
    arena_init(&c.arena, 64 * 1024, 64u << 20);
    census_file(&c, "falco_rules.yaml");
    census_file(&c, "falco-incubating_rules.yaml");
    census_file(&c, "falco-sandbox_rules.yaml");
    printf("upstream rules files: %zu field spellings, %zu known here, %zu of other work\n", c.n, c.resolved,
           c.others);
    /* the census found what the files hold */
    assert_true(c.n >= 90);
    assert_int_equal(c.resolved + c.others, c.n);
    for (size_t i = 0; i < sizeof(others_fields) / sizeof(others_fields[0]); i++)
        if (!others_seen[i])
            fail_msg("%s is no longer in the upstream files: drop it from the list", others_fields[i]);
    static const char *const never[] = {"evt.buffer", "thread.cap_effective", "thread.cap_permitted", "fd.sip.name",
                                        "fd.cip.name", "fd.rip.name", "fd.lip.name", "proc.exe_ino.mtime"};
    for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
        struct fieldref ref;
        char err[256];
        assert_int_equal(fields_resolve(never[i], strlen(never[i]), NULL, 0, false, &c.arena, &ref, err, sizeof(err)),
                         0);
        assert_int_equal(fields_avail(&ref), FIELD_NEVER);
    }
    arena_free(&c.arena);
}


/* Issue 31 item 2: the rest of libs' thread class that the table gives
 * (libs 48dfd53cd userspace/libsinsp/sinsp_filtercheck_thread.cpp:
 * cmdnargs/cmdlenargs 1674-1684, exeline 1252-1266, acmdline 1337-1366 and
 * aargs 1152-1181 (no index: every ancestor's, joined), aenv 1196-1249,
 * loginshellid 1482-1515 (a name ending in "sh", the oldest), ppid.duration
 * 1526-1536); proc.pgid is the sandbox's process group, as proc.vpgid. */
static void test_more_thread_fields(void **state)
{
    (void)state;
    struct rules_engine *e = printer("%proc.cmdnargs|%proc.cmdlenargs|%proc.exeline|%proc.acmdline[0]|"
                                     "%proc.acmdline[1]|%proc.acmdline|%proc.aargs[1]|%proc.aenv[HTTP_PROXY]|"
                                     "%thread.ismain|%proc.pid.ts|%proc.ppid.ts|%proc.ppid.duration|"
                                     "%proc.loginshellid|%proc.pgid|%proc.is_pgid_leader|%proc.pgid.name");
    EXPECT_TEXT(e, start_ev(1, sh_args, 3, env1, 3),
                "2|5|/bin/sh -c run|sh -c run|<NA>|<NA>|<NA>||true|1001|<NA>|<NA>|1|1|true|sh");
    text_of(e, clone_ev(1, "sh", 2));
    /* an exec without an environment: the nearest ancestor's value */
    EXPECT_TEXT(e, exec_ev(2, "/usr/bin/ssh", ssh_argv, 4, NULL, 0),
                "3|8|ssh -p 80 host|ssh -p 80 host|sh -c run|sh -c run|-c run|http://p:3128|true|1002|1001|1999|"
                "1|1|false|sh");
    text_of(e, clone_ev(2, "ssh", 3));
    static char *cat_argv[] = {(char *)"cat", (char *)"a b"};
    EXPECT_TEXT(e, exec_ev(3, "/bin/cat", cat_argv, 2, NULL, 0),
                "1|3|cat a b|cat a b|ssh -p 80 host|ssh -p 80 host sh -c run|-p 80 host|http://p:3128|true|1003|"
                "1002|1998|1|1|false|sh");
    rules_engine_free(e);
    /* no process entry: all absent */
    e = printer("%proc.cmdnargs %proc.exeline %proc.acmdline %proc.loginshellid %proc.pid.ts");
    EXPECT_TEXT(e, raw_ev(0, "x", 39, 0, 0, 0, 5, 0), "<NA> <NA> <NA> <NA> <NA>");
    rules_engine_free(e);
}

/* More of libs' event class (sinsp_filtercheck_event.cpp: type.is
 * 964-974, syscall.type 975-1000, info 1131-1136 (evt.args), is_io and
 * io_dir 1214-1255 over libs' EF_READS_FROM_FD / EF_WRITES_TO_FD) and its
 * gen_event class (sinsp_filtercheck_gen_event.cpp:184-281, the times'
 * forms of utils.cpp:816-885; in output_fields every time form is
 * nanoseconds, lines 159-176); evt.rawarg, the message's own value. */
static void test_more_event_fields(void **state)
{
    (void)state;
    struct rules_engine *e = printer("%evt.type.is[execve]|%syscall.type|%evt.is_io|%evt.is_io_read|"
                                     "%evt.is_io_write|%evt.io_dir|%evt.source|%evt.is_async|%evt.hostname|"
                                     "%evt.pluginname");
    EXPECT_TEXT(e, start_ev(1, sh_args, 3, NULL, 0), "0|<NA>|false|false|false|<NA>|syscall|false|h1|<NA>");
    text_of(e, clone_ev(1, "sh", 2));
    EXPECT_TEXT(e, exec_ev(2, "/usr/bin/ssh", ssh_argv, 4, NULL, 0),
                "1|execve|false|false|false|<NA>|syscall|false|h1|<NA>");
    EXPECT_TEXT(e, raw_ev(2, "ssh", 0, 3, 0, 10, 10, 0), "0|read|true|true|false|read|syscall|false|h1|<NA>");
    EXPECT_TEXT(e, raw_ev(2, "ssh", 44, 3, 0, 10, 10, 0), "0|sendto|true|false|true|write|syscall|false|h1|<NA>");
    rules_engine_free(e);
    /* 1700000000.000000001 s: 2023-11-14 22:13:20 UTC */
    e = printer("%evt.time.s|%evt.time.iso8601|%evt.datetime|%evt.datetime.s|%evt.rawtime|%evt.rawtime.s|"
                "%evt.rawtime.ns");
    static Gvisor__Syscall__Syscall m;
    gvisor__syscall__syscall__init(&m);
    m.context_data = mk_ctx(&CP, 5, "x", 1700000000000000001);
    m.exit = exit_of(0, 0);
    m.sysno = 39;
    const struct event *ev = evb_build(&B, 1, 6, 0, &m.base);
    EXPECT_TEXT(e, ev, "22:13:20|2023-11-14T22:13:20.000000001+0000|2023-11-14 22:13:20.000000001|"
                       "2023-11-14 22:13:20|1700000000000000001|1700000000|1");
    const char *f = fields_json(e, ev);
    assert_non_null(strstr(f, "\"evt.datetime\":1700000000000000001,\"evt.datetime.s\":1700000000000000001,"
                              "\"evt.rawtime\":1700000000000000001,\"evt.rawtime.ns\":1,\"evt.rawtime.s\":1700000000,"
                              "\"evt.time\":1700000000000000001,\"evt.time.iso8601\":1700000000000000001,"
                              "\"evt.time.s\":1700000000000000001"));
    rules_engine_free(e);
    /* evt.info is evt.args; evt.rawarg the flags as sent, evt.arg Falco's names */
    e = printer("%evt.info#%evt.args#%evt.rawarg.flags#%evt.arg.flags");
    const char *t = text_of(e, open_ev(5, 257, -100, "/etc/passwd", 0101, 0644, 3, 0));
    const char *hash = strchr(t, '#');
    assert_non_null(hash);
    assert_true(hash > t && strncmp(t, hash + 1, (size_t)(hash - t)) == 0 && hash[1 + (hash - t)] == '#');
    assert_non_null(strstr(t, "#65#O_CREAT|O_WRONLY"));
    rules_engine_free(e);
    /* conditions: evt.type.is and syscall.type, as the upstream files' comments suggest */
    YES("evt.type.is[openat] = 1 and syscall.type = openat and not evt.is_io = true",
        open_ev(5, 257, -100, "/etc/passwd", 0, 0, 3, 0));
    NO("evt.type.is[open] = 1", open_ev(5, 257, -100, "/etc/passwd", 0, 0, 3, 0));
}

/* libs' fd class: fd.uid (sinsp_filtercheck_fd.cpp:1130-1137, the thread
 * id then the fd number), fd.containername and fd.containerdirectory
 * (492-553, container.id ':' the name or directory). */
static void test_more_fd_fields(void **state)
{
    (void)state;
    struct rules_engine *e = printer("%fd.uid|%fd.containername|%fd.containerdirectory|%fd.directory");
    EXPECT_TEXT(e, open_ev(5, 257, -100, "/etc/passwd", 0, 0, 3, 0), "53|c1:/etc/passwd|c1:/etc|/etc");
    EXPECT_TEXT(e, open_ev(5, 257, -100, "/passwd", 0, 0, 4, 0), "54|c1:/passwd|c1:/|/");
    /* a failed open: fd.num is -errno, as Falco's */
    EXPECT_TEXT(e, open_ev(5, 257, -100, "/etc/nope", 0, 0, -1, 2), "5-2|c1:/etc/nope|c1:/etc|/etc");
    rules_engine_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exe_and_ancestors), cmocka_unit_test(test_session_and_group),
        cmocka_unit_test(test_environment),       cmocka_unit_test(test_socket_fields),
        cmocka_unit_test(test_networks),          cmocka_unit_test(test_nameraw),
        cmocka_unit_test(test_falco_arg_names),   cmocka_unit_test(test_raw_and_typed_args),
        cmocka_unit_test(test_exec_args_and_evt_args), cmocka_unit_test(test_never_reported),
        cmocka_unit_test(test_absent_never_true), cmocka_unit_test(test_upstream_fields_known),
        cmocka_unit_test(test_more_thread_fields), cmocka_unit_test(test_more_event_fields),
        cmocka_unit_test(test_more_fd_fields),
    };
    return cmocka_run_group_tests(tests, rules_group_setup, rules_group_teardown);
}
