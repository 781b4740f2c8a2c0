/* test_event_line.c - the bounds and escapes of `seccheckd events` lines
 * (query/event_line.h) that the integration test does not reach: a cut
 * never splits a character, quoting, and JSON kept JSON. */
#include "unit_util.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include "decode.h"
#include "event_line.h"
#include "gvisor/sentry.pb-c.h"
#include "gvisor/syscall.pb-c.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_2026_messages),
        cmocka_unit_test(test_quotes_and_escapes),
        cmocka_unit_test(test_cut_on_a_character),
        cmocka_unit_test(test_json_for_a_terminal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
