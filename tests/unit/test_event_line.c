/* test_event_line.c - the bounds and escapes of `seccheckd events` lines
 * (query/event_line.h) that the integration test does not reach: a cut
 * never splits a character, quoting, and JSON kept JSON. */
#include "unit_util.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include "arena.h"
#include "decode.h"
#include "event_line.h"
#include "gvisor/common.pb-c.h"
#include "gvisor/sentry.pb-c.h"
#include "gvisor/syscall.pb-c.h"
#include "term_color.h"
#include "wire.h"

static const char *shown(const char *s, size_t len)
{
    static struct strbuf sb;
    strbuf_reset(&sb);
    event_line_text(&sb, s, len);
    assert_false(sb.failed);
    return sb.len ? sb.data : "";
}

static void test_quotes_and_escapes(void **state)
{
    (void)state;
    assert_string_equal(shown("/etc/passwd", 11), "/etc/passwd");
    assert_string_equal(shown("", 0), "\"\"");
    assert_string_equal(shown("a \"b\" \\c", 8), "\"a \\\"b\\\" \\\\c\"");
    assert_string_equal(shown("x\\y", 3), "x\\\\y");
    assert_string_equal(shown("\x1b[0m\x7f", 5), "\\x1b[0m\\x7f");
    assert_string_equal(shown("\0z", 2), "\\x00z");
    assert_string_equal(shown("caf\xc3\xa9", 5), "caf\xc3\xa9");              /* UTF-8 kept */
    assert_string_equal(shown("\xc0\xaf", 2), "\\xc0\\xaf");                   /* an overlong '/' */
    assert_string_equal(shown("\xed\xa0\x80", 3), "\\xed\\xa0\\x80");          /* a surrogate */
    assert_string_equal(shown("\xe2\x81\xa6x\xef\xbb\xbf", 7), "\\u{2066}x\\u{feff}");
}

/* The cut falls before a character that would straddle it. */
static void test_cut_on_a_character(void **state)
{
    (void)state;
    char s[EVENT_LINE_VALUE_MAX + 10];
    memset(s, 'a', EVENT_LINE_VALUE_MAX - 1);
    memcpy(s + EVENT_LINE_VALUE_MAX - 1, "\xc3\xa9zzzzzzzzz", 11);   /* é at bytes 255-256 */
    const char *out = shown(s, sizeof(s));
    size_t n = strlen(out);
    const char *tail = "a\"...[+11 bytes]";
    assert_true(n > strlen(tail));
    assert_string_equal(out + n - strlen(tail), tail);
    assert_int_equal(n, 1 + (EVENT_LINE_VALUE_MAX - 1) + strlen("\"...[+11 bytes]"));
}

static void test_json_for_a_terminal(void **state)
{
    (void)state;
    struct strbuf sb = {0};
    const char json[] = "{\"p\":\"\xe2\x80\xae" "exe\x7f\xc2\x9b\",\"n\":1,\"u\":\"\xc3\xa9\"}";
    event_line_json(&sb, json, sizeof(json) - 1);
    assert_string_equal(sb.data, "{\"p\":\"\\u202eexe\\u007f\\u009b\",\"n\":1,\"u\":\"\xc3\xa9\"}");
    strbuf_free(&sb);
}

/* The line of an openat exit by a process named name, coloured or not,
 * its container's names (NULL: none) beside the id. */
static void open_line_named(struct strbuf *out, const char *name, bool color, const char *names)
{
    Gvisor__Common__ContextData ctx = GVISOR__COMMON__CONTEXT_DATA__INIT;
    ctx.container_id = "c1";
    ctx.process_name = (char *)name;
    ctx.thread_group_id = 7;
    ctx.time_ns = 1;
    Gvisor__Syscall__Exit x = GVISOR__SYSCALL__EXIT__INIT;
    x.result = 3;
    Gvisor__Syscall__Open open = GVISOR__SYSCALL__OPEN__INIT;
    open.context_data = &ctx;
    open.exit = &x;
    open.sysno = 257;
    open.fd = -100;
    open.pathname = "/etc/passwd";
    static uint8_t pkt[512];
    size_t n = protobuf_c_message_get_packed_size(&open.base);
    assert_true(WIRE_HEADER_MIN + n <= sizeof(pkt));
    wire_header_write(pkt, 7, 0);
    protobuf_c_message_pack(&open.base, pkt + WIRE_HEADER_MIN);
    struct wire_header h;
    assert_int_equal(wire_header_parse(pkt, WIRE_HEADER_MIN + n, &h), WIRE_OK);
    struct decoder d;
    decoder_init(&d);
    struct arena arena;
    arena_init(&arena, 64 * 1024, 1 << 20);
    struct event ev = {.recv_ns = 1};
    decode_event(&d, &arena, &h, pkt, WIRE_HEADER_MIN + n, &ev);
    assert_int_equal(ev.status, DECODE_OK);
    event_line_render_named(out, &ev, color, names, names ? strlen(names) : 0);
    arena_free(&arena);
}

static void open_line(struct strbuf *out, const char *name, bool color)
{
    open_line_named(out, name, color, NULL);
}

/* The container's names beside its id, one word, escaped like every value
 * from a sandbox (container_info comes from runsc's state file, whose
 * annotations the pod's author writes). */
static void test_names_beside_the_id(void **state)
{
    (void)state;
    struct strbuf sb = {0};
    open_line_named(&sb, "cat", false, "shop/web-7f9c/web");
    assert_string_equal(sb.data, "1970-01-01T00:00:00.000Z c1(shop/web-7f9c/web) cat[7] openat /etc/passwd O_RDONLY = 3\n");
    strbuf_reset(&sb);
    open_line_named(&sb, "cat", false, "shop/x\x1b[2J\ny");
    assert_string_equal(sb.data, "1970-01-01T00:00:00.000Z c1(shop/x\\x1b[2J\\ny) cat[7] openat /etc/passwd O_RDONLY = 3\n");
    strbuf_reset(&sb);
    open_line_named(&sb, "cat", false, "");   /* no names: the plain line */
    assert_string_equal(sb.data, "1970-01-01T00:00:00.000Z c1 cat[7] openat /etc/passwd O_RDONLY = 3\n");
    strbuf_free(&sb);
}

/* Colour wraps the call's name only, in seccheckd's own sequence; a
 * process name's escape sequence stays escaped. */
static void test_color_marks_the_call(void **state)
{
    (void)state;
    struct strbuf plain = {0}, colored = {0};
    open_line(&plain, "\x1b[2Jcat", false);
    open_line(&colored, "\x1b[2Jcat", true);
    assert_string_equal(plain.data, "1970-01-01T00:00:00.000Z c1 \\x1b[2Jcat[7] openat /etc/passwd O_RDONLY = 3\n");
    assert_string_equal(colored.data, "1970-01-01T00:00:00.000Z c1 \\x1b[2Jcat[7] " TERM_COLOR_OPEN "openat"
                                      TERM_COLOR_RESET " /etc/passwd O_RDONLY = 3\n");
    strbuf_free(&plain);
    strbuf_free(&colored);
    assert_string_equal(term_color_priority("Critical"), "\x1b[1;31m");
    assert_string_equal(term_color_priority("Warning"), "\x1b[33m");
    assert_string_equal(term_color_priority("\x1b]0;x"), "");
    enum term_color_mode m;
    assert_int_equal(term_color_parse("always", &m), 0);
    assert_int_equal(m, TERM_COLOR_ALWAYS);
    assert_int_equal(term_color_parse("yes", &m), -1);
    assert_true(term_color_wanted(TERM_COLOR_ALWAYS, -1));
    assert_false(term_color_wanted(TERM_COLOR_NEVER, 1));
    assert_false(term_color_wanted(TERM_COLOR_AUTO, -1));   /* not a terminal */
}

/* m packed, framed and decoded as the daemon receives it; its line
 * without the time and the context's columns. */
static const char *line_of(uint16_t type, const ProtobufCMessage *m)
{
    static uint8_t payload[1 << 16], pkt[(1 << 16) + 8];
    static struct strbuf sb;
    struct decoder dec;
    struct arena a;
    decoder_init(&dec);
    arena_init(&a, 64 * 1024, 1 << 20);
    size_t len = protobuf_c_message_pack(m, payload);
    size_t plen = make_packet(pkt, type, 0, payload, len);
    struct wire_header h;
    assert_int_equal(wire_header_parse(pkt, plen, &h), WIRE_OK);
    struct event ev = {.recv_ns = 1};
    decode_event(&dec, &a, &h, pkt, plen, &ev);
    assert_int_equal(ev.status, DECODE_OK);
    ev.recv_ns = 1;
    strbuf_reset(&sb);
    event_line_render(&sb, &ev);
    arena_free(&a);
    assert_false(sb.failed);
    const char *what = strstr(sb.data, " - - ");   /* no context: time, then "- -" */
    assert_non_null(what);
    sb.data[sb.len - 1] = '\0';                   /* the newline */
    return what + 5;
}

/* gVisor 2026's messages: exec's layer, memfd and standard streams;
 * sentry/mmap's file; syscall mmap, listen and ptrace by name. */
static void test_2026_messages(void **state)
{
    (void)state;
    static Gvisor__Sentry__ExecveInfo e;
    static Gvisor__Common__FdInfo in, out;
    static Gvisor__Common__SocketInfo sock;
    static Gvisor__Common__SocketIp local, remote;
    static Gvisor__Sentry__PipeProcInfo peer;
    static Gvisor__Common__ContextData pctx;
    static uint8_t lip[4] = {10, 0, 0, 2}, rip[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 9};
    static char *argv[] = {(char *)"sh"};
    gvisor__sentry__execve_info__init(&e);
    gvisor__common__fd_info__init(&in);
    gvisor__common__fd_info__init(&out);
    gvisor__common__socket_info__init(&sock);
    gvisor__common__socket_ip__init(&local);
    gvisor__common__socket_ip__init(&remote);
    gvisor__sentry__pipe_proc_info__init(&peer);
    gvisor__common__context_data__init(&pctx);
    local.ip = (ProtobufCBinaryData){4, lip};
    local.port = 0x409c;   /* 40000, as gVisor sends it: network-order bytes read little-endian */
    remote.ip = (ProtobufCBinaryData){16, rip};
    remote.port = 0xbb01;  /* 443 */
    sock.family = 10;
    sock.local = &local;
    sock.remote = &remote;
    in.mode = S_IFSOCK;
    in.path = (char *)"socket:[5]";
    in.socket = &sock;
    pctx.thread_group_id = 3;
    pctx.process_name = (char *)"tee";
    peer.context_data = &pctx;
    e.binary_path = (char *)"/tmp/sh";
    e.argv = argv;
    e.n_argv = 1;
    e.binary_overlayfs_upper = true;
    e.binary_in_memfd = true;
    e.stdin = &in;
    e.stdout = &out;
    e.pipe_output_proc = &peer;
    assert_string_equal(line_of(3, &e.base),
                        "exec /tmp/sh sh [upper] [memfd] stdin=socket:10.0.0.2:40000->[2001:db8::9]:443 "
                        "stdout=pipe->tee[3]");
    /* a unix socket: its family and gVisor's name; a hostile port and address */
    sock.family = 1;
    assert_string_equal(line_of(3, &e.base), "exec /tmp/sh sh [upper] [memfd] stdin=AF_UNIX:socket:[5] "
                                             "stdout=pipe->tee[3]");
    sock.family = 2;
    local.port = 70000;
    remote.ip.len = 3;
    e.pipe_output_proc = NULL;
    assert_string_equal(line_of(3, &e.base), "exec /tmp/sh sh [upper] [memfd] stdin=socket:10.0.0.2:0->?");

    static Gvisor__Sentry__MmapInfo mi;
    gvisor__sentry__mmap_info__init(&mi);
    mi.mapped_path = (char *)"/tmp/lib x.so";
    mi.overlayfs_upper = true;
    mi.is_initial_mmap = true;
    assert_string_equal(line_of(35, &mi.base), "mmap exec \"/tmp/lib x.so\" [upper] [initial]");
    mi.mapped_path = NULL;
    mi.overlayfs_upper = false;
    mi.is_initial_mmap = false;
    assert_string_equal(line_of(35, &mi.base), "mmap exec (anonymous)");

    static Gvisor__Syscall__Mmap mm;
    static Gvisor__Syscall__Exit x;
    gvisor__syscall__mmap__init(&mm);
    gvisor__syscall__exit__init(&x);
    x.result = 0x7f0000001000;
    mm.exit = &x;
    mm.sysno = 9;
    mm.fd = 3;
    mm.fd_path = (char *)"/usr/lib/libc.so.6";
    mm.length = 4096;
    mm.prot = PROT_READ | PROT_EXEC;
    mm.flags = MAP_PRIVATE | MAP_DENYWRITE;
    mm.offset = 8192;
    assert_string_equal(line_of(36, &mm.base),
                        "mmap 3</usr/lib/libc.so.6> 4096 PROT_READ|PROT_EXEC MAP_PRIVATE|MAP_DENYWRITE @8192 = 0x7f0000001000");
    mm.flags = MAP_PRIVATE | MAP_ANONYMOUS | 0x40000000;   /* a bit without a name */
    mm.prot = 0;
    mm.offset = 0;
    assert_string_equal(line_of(36, &mm.base), "mmap anonymous 4096 PROT_NONE MAP_PRIVATE|MAP_ANONYMOUS|0x40000000 "
                                               "= 0x7f0000001000");

    static Gvisor__Syscall__Ptrace pt;
    gvisor__syscall__ptrace__init(&pt);
    pt.exit = &x;
    x.result = 0;
    pt.sysno = 101;
    pt.request = 0x4206;
    pt.pid = 42;
    assert_string_equal(line_of(38, &pt.base), "ptrace PTRACE_SEIZE pid=42 = 0");
    pt.request = 12345;
    pt.exit = NULL;
    assert_string_equal(line_of(38, &pt.base), "ptrace request=12345 pid=42");

    static Gvisor__Syscall__Listen ls;
    static uint8_t addr[28] = {10, 0, 0x1f, 0x90, [8] = 0, [23] = 1};   /* [::1]:8080 */
    gvisor__syscall__listen__init(&ls);
    ls.exit = &x;
    ls.sysno = 50;
    ls.fd = 4;
    ls.backlog = 511;
    ls.address = (ProtobufCBinaryData){sizeof(addr), addr};
    assert_string_equal(line_of(37, &ls.base), "listen [::1]:8080 backlog=511 = 0");
    ls.address.len = 0;
    assert_string_equal(line_of(37, &ls.base), "listen fd 4 backlog=511 = 0");
}

/* gVisor fills fd_path with "[err: FD not found]" when the descriptor has
 * no path (a close exit: gone already; gvisor
 * pkg/sentry/syscalls/linux/points.go): the line shows the fd alone,
 * "close 3 = 0", as for a descriptor sent without a path. 178 such events
 * in mixed_syscalls.trace (recorded with runsc 2022-12). */
static void test_fd_without_gvisors_error_string(void **state)
{
    (void)state;
    struct trace_pkts t;
    trace_load("mixed_syscalls.trace", &t);
    struct decoder dec;
    decoder_init(&dec);
    struct arena arena;
    arena_init(&arena, 64 * 1024, 16 << 20);
    struct strbuf sb = {0};
    int closes = 0;
    for (size_t i = 0; i < t.n; i++) {
        struct wire_header h;
        if (wire_header_parse(t.pkt[i], t.len[i], &h) != WIRE_OK)
            continue;
        if (!memmem(t.pkt[i], t.len[i], "[err: ", 6))
            continue;
        struct event ev = {.conn_id = 1, .recv_ns = 1};
        arena_reset(&arena);
        decode_event(&dec, &arena, &h, t.pkt[i], t.len[i], &ev);
        strbuf_reset(&sb);
        event_line_render(&sb, &ev);
        strbuf_putc(&sb, '\0');
        if (memmem(sb.data, sb.len, "err:", 4))
            fail_msg("gVisor's error string shown: %s", sb.data);
        const char *close = strstr(sb.data, " close ");
        if (close) {
            int fd = -1;
            char rest[8] = "";
            assert_int_equal(sscanf(close, " close %d %7s", &fd, rest), 2);
            assert_true(fd >= 0);
            assert_string_equal(rest, "=");
            closes++;
        }
    }
    assert_true(closes >= 100);
    strbuf_free(&sb);
    arena_free(&arena);
    trace_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_2026_messages),
        cmocka_unit_test(test_quotes_and_escapes),
        cmocka_unit_test(test_cut_on_a_character),
        cmocka_unit_test(test_json_for_a_terminal),
        cmocka_unit_test(test_fd_without_gvisors_error_string),
        cmocka_unit_test(test_color_marks_the_call),
        cmocka_unit_test(test_names_beside_the_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
