/* fuzz_seccheck.c - fuzz target over the decoder's pure path.
 *
 * One input is one of two things:
 *  - a packet as read from a socket (header + payload), the common case:
 *    wire_header_parse, then a copy into an arena sized for exactly this
 *    packet, decode_event, json_render_message of the decoded message, a
 *    protobuf pack/unpack round trip that must render the same JSON, and the
 *    same bytes through ingest_packet (a pipeline with the discard sink) whose
 *    accounting must agree with the direct decode;
 *  - a tracereplay file, when the input starts with "tracereplay file": it is
 *    read with the project's reader (through a memfd), every length is checked
 *    against the bytes, and every record goes through the packet path above.
 * Every decoded event is also evaluated by the rules engine (rules.h) with
 * rules that read every field and match every event, on a small process
 * table shared by four connections: every alert's output, output_fields and
 * JSON line must be valid UTF-8 and valid JSON.
 * Every input is also offered to wire_handshake_parse and (a prefix of it) to
 * json_render_string as arbitrary bytes.
 *
 * Invariants are checked with CHECK, which abort()s: libFuzzer reports it as
 * a crash, the replay program (fuzz_replay.c) as a failed test. JSON output is
 * validated by SQLite's json_valid (strict RFC 8259) and by a strict UTF-8
 * check of our own (json_valid does not look at UTF-8).
 */
#include "fuzz_harness.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <sqlite3.h>
#include <uv.h>

#include "decode.h"
#include "ingest.h"
#include "json.h"
#include "pipeline.h"
#include "rules.h"
#include "sink.h"
#include "strbuf.h"
#include "tracefile.h"
#include "wire.h"

#define CHECK(cond)                                                                                               \
    do {                                                                                                          \
        if (!(cond))                                                                                              \
            check_failed(#cond, __FILE__, __LINE__);                                                              \
    } while (0)

static void check_failed(const char *what, const char *file, int line)
{
    fprintf(stderr, "fuzz invariant violated: %s (%s:%d)\n", what, file, line);
    abort();
}

/* The ingest pipeline's batches: room for the largest packet the fuzzer
 * sends (-max_len 300000 needs decode_arena_need = 5.1 MB). */
#define FUZZ_BATCH_EVENTS 64
#define FUZZ_BATCH_BYTES (8u << 20)
/* Drops a header may add: below 2^31, so a growth the half-range rule
 * would take is refused by the bound, and some wraps are taken. */
#define FUZZ_DROP_ALLOWANCE (1u << 29)
/* json_render_string on raw input: a prefix is enough and keeps it fast. */
#define FUZZ_STRING_MAX 4096

static struct {
    bool ready;
    struct decoder dec;
    sqlite3 *db;
    sqlite3_stmt *valid;     /* SELECT json_valid(?1) */
    sqlite3_stmt *extract;   /* SELECT json_extract(?1, '$') */
    struct strbuf json;
    struct strbuf json2;
    int memfd;
    char memfd_path[64];
    uv_loop_t loop;
    struct sink *sink;
    struct pipeline pipeline;
    struct ingest ingest;
    struct conn_record rec;
    struct rules_engine *rules;
    struct alert_list alerts;
} g;

/* Rules that read every field of rules/README.md on every event (enter
 * points too: the macro tests evt.dir; an execve exit after its sentry/execve
 * too: it names gvisor.point), with operators of each kind. */
static const char fuzz_rules_yaml[] =
    "- list: shells\n"
    "  items: [sh, bash, '/bin/x y']\n"
    "- macro: anything\n"
    "  condition: evt.num > 0 and (evt.dir = < or evt.dir = >) and gvisor.point exists\n"
    "- rule: Every event\n"
    "  desc: reads everything\n"
    "  condition: anything\n"
    "  output: \"%evt.type %evt.dir %evt.time %evt.num %evt.res %evt.rawres %evt.failed %evt.is_open_read\n"
    "    %evt.is_open_write %evt.is_open_exec %evt.arg.pathname %evt.arg.address %evt.arg[0] %evt.arg[3]\n"
    "    %evt.dropped %gvisor.point %proc.name %proc.exepath %proc.cmdline %proc.args %proc.pid\n"
    "    %proc.tid %proc.cwd %proc.duration %proc.ppid %proc.pname %proc.pcmdline %proc.aname[2]\n"
    "    %proc.apid[3] %user.uid %group.gid %container.id %fd.num %fd.name %fd.directory\n"
    "    %fd.filename %fd.typechar %fd.sip %fd.sport %fd.cip %fd.cport %fd.rip %fd.rport %fd.lip %fd.lport\n"
    "    %proc.is_exe_upper_layer %proc.is_exe_lower_layer %proc.is_exe_from_memfd %proc.exe_ino\n"
    "    %proc.exe_ino.ctime %proc.exe_ino.ctime_duration_proc_start %proc.is_exe_writable %proc.tty\n"
    "    %proc.stdin.type %proc.stdin.name %proc.stdout.type %proc.stdout.name %proc.stderr.type\n"
    "    %proc.stderr.name %gvisor.stdin.lip %gvisor.stdin.lport %gvisor.stdin.rip %gvisor.stdin.rport\n"
    "    %gvisor.stdout.rip %gvisor.stderr.lport %gvisor.pipe_input.name %gvisor.pipe_input.exepath\n"
    "    %gvisor.pipe_input.pid %gvisor.pipe_output.name %gvisor.pipe_output.exepath %gvisor.pipe_output.pid\n"
    "    %gvisor.exec_session %fd.is_upper_layer %fd.is_lower_layer %fd.ino %evt.arg.request\"\n"
    "  priority: DEBUG\n"
    "- rule: Operators\n"
    "  desc: each kind of comparison\n"
    "  condition: evt.dir in (<, >) and (fd.name glob '/etc/*' or proc.aname in (shells) or\n"
    "    proc.cmdline icontains XY or fd.sip = 10.0.0.0/8 or fd.name pmatch (/tmp, /v*r) or\n"
    "    evt.arg.pathname endswith .so or proc.pname intersects (shells) or fd.num >= 3 or\n"
    "    evt.arg.argv contains '-c' or not proc.name exists or evt.arg.address startswith '0200' or evt.buffer bstartswith 0200)\n"
    "  output: \"%proc.aname[1] %fd.name\"\n"
    "  priority: info\n"
    "- rule: Falco fields\n"
    "  desc: the fields of Falco's own rules files (process, sockets, evt.arg by Falco's names)\n"
    "  condition: anything and (proc.aexe endswith sh or proc.env contains PATH or fd.net = 10.0.0.0/8 or\n"
    "    fd.l4proto = tcp or evt.arg.flags contains O_CREAT or evt.arg.mode contains S_ISUID or\n"
    "    proc.is_vpgid_leader = true or fd.nameraw glob '*../*')\n"
    "  output: \"%proc.exe %proc.pexe %proc.aexe[2] %proc.aexepath[1] %proc.vpid %proc.sid %proc.sname\n"
    "    %proc.vpgid.name %proc.is_vpgid_leader %proc.env %proc.env[PATH] %thread.cap_effective %fd.type\n"
    "    %fd.l4proto %fd.sockfamily %fd.ip %fd.port %fd.connected %fd.name_changed %fd.nameraw %evt.args\n"
    "    %evt.arg.flags %evt.arg.fd %evt.arg.mode %evt.arg.name %evt.arg.tuple %evt.arg.exe %evt.arg.env\n"
    "    %evt.arg.sig %evt.arg.pid %evt.buffer\"\n"
    "  priority: DEBUG\n";

static void rules_init(void)
{
    struct rules_diag diag = {0};
    rules_set_absent_mode(RULES_ABSENT_RUN);   /* rules reading evt.buffer, thread.cap_* still evaluate */
    struct rule_set *rs = rule_set_load_buffer("fuzz.yaml", fuzz_rules_yaml, sizeof(fuzz_rules_yaml) - 1, &diag);
    if (!rs)
        rules_diag_print(&diag, stderr);
    CHECK(rs != NULL);
    rules_diag_free(&diag);
    struct rules_engine_config cfg;
    rules_engine_config_defaults(&cfg);
    cfg.hostname = "fuzz";
    cfg.rate = 0;                /* every match an alert */
    cfg.max_processes = 64;      /* evictions, not just growth */
    cfg.output_field_max = 64;   /* cuts inside multi-byte characters */
    g.rules = rules_engine_new(&cfg);
    CHECK(g.rules != NULL);
    rules_engine_set_rules(g.rules, rs);
}

static void fuzz_init(void)
{
    decoder_init(&g.dec);
    CHECK(sqlite3_open(":memory:", &g.db) == SQLITE_OK);
    CHECK(sqlite3_prepare_v2(g.db, "SELECT json_valid(?1)", -1, &g.valid, NULL) == SQLITE_OK);
    CHECK(sqlite3_prepare_v2(g.db, "SELECT json_extract(?1, '$')", -1, &g.extract, NULL) == SQLITE_OK);
    g.memfd = memfd_create("seccheck-fuzz", MFD_CLOEXEC);
    CHECK(g.memfd >= 0);
    snprintf(g.memfd_path, sizeof(g.memfd_path), "/proc/self/fd/%d", g.memfd);

    CHECK(uv_loop_init(&g.loop) == 0);
    g.sink = sink_discard_open();
    CHECK(g.sink != NULL);
    struct pipeline_config cfg = {
        .limits = {.max_events = FUZZ_BATCH_EVENTS, .max_bytes = FUZZ_BATCH_BYTES}, .queue_max = 1};
    CHECK(pipeline_init(&g.pipeline, &g.loop, g.sink, &cfg, NULL, NULL, NULL) == 0);
    g.ingest = (struct ingest){.decoder = &g.dec, .pipeline = &g.pipeline};
    /* Connected FUZZ_DROP_ALLOWANCE x 10 ns before every packet (read at
     * 42, never emptied): each header may add that many drops (ingest.h). */
    g.rec = (struct conn_record){.id = 7, .client_version = 1,
                                 .connect_ns = 42 - (int64_t)FUZZ_DROP_ALLOWANCE * INGEST_DROP_NS_EACH};
    rules_init();
    g.ready = true;
}

/* ---- checks on rendered JSON ---- */

/* Strict UTF-8 (RFC 3629): no overlongs, surrogates or code points past
 * U+10FFFF. Independent of json.c's own validator on purpose. */
static bool strict_utf8_valid(const uint8_t *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        uint32_t cp, min;
        if ((c & 0xe0) == 0xc0) {
            n = 2, cp = c & 0x1f, min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            n = 3, cp = c & 0x0f, min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            n = 4, cp = c & 0x07, min = 0x10000;
        } else {
            return false;
        }
        if (len - i < n)
            return false;
        for (size_t k = 1; k < n; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += n;
    }
    return true;
}

static bool sqlite_json_valid(const char *json, size_t len)
{
    sqlite3_reset(g.valid);
    CHECK(sqlite3_bind_text(g.valid, 1, json, (int)len, SQLITE_STATIC) == SQLITE_OK);
    CHECK(sqlite3_step(g.valid) == SQLITE_ROW);
    bool ok = sqlite3_column_int(g.valid, 0) == 1;
    sqlite3_reset(g.valid);
    return ok;
}

/* A complete rendering: no embedded NUL, valid UTF-8, valid JSON, and the
 * expected kind of value ('{' object or '"' string). */
static void check_json(const struct strbuf *sb, char open)
{
    char close = open == '{' ? '}' : '"';
    CHECK(!sb->failed);
    CHECK(sb->len >= 2 && sb->len < (size_t)0x7fffffff);
    CHECK(sb->data[0] == open && sb->data[sb->len - 1] == close);
    CHECK(strlen(sb->data) == sb->len);
    CHECK(strict_utf8_valid((const uint8_t *)sb->data, sb->len));
    if (!sqlite_json_valid(sb->data, sb->len)) {
        fprintf(stderr, "invalid JSON (%zu bytes): %.*s\n", sb->len, (int)(sb->len < 2000 ? sb->len : 2000),
                sb->data);
        CHECK(!"json_valid");
    }
}

/* A string the rules rendered: valid UTF-8, and JSON when it is meant to be. */
static void check_rendered(const char *s, bool is_json)
{
    CHECK(s != NULL);
    size_t len = strlen(s);
    CHECK(strict_utf8_valid((const uint8_t *)s, len));
    CHECK(!is_json || sqlite_json_valid(s, len));
}

/* json_render_string over arbitrary bytes; when they are valid UTF-8 without
 * NUL, SQLite must read back exactly the same bytes. */
static void fuzz_string(const uint8_t *data, size_t size)
{
    size_t n = size < FUZZ_STRING_MAX ? size : FUZZ_STRING_MAX;
    strbuf_reset(&g.json);
    json_render_string(&g.json, (const char *)data, n);
    check_json(&g.json, '"');
    if (!strict_utf8_valid(data, n) || memchr(data, 0, n))
        return;
    sqlite3_reset(g.extract);
    CHECK(sqlite3_bind_text(g.extract, 1, g.json.data, (int)g.json.len, SQLITE_STATIC) == SQLITE_OK);
    CHECK(sqlite3_step(g.extract) == SQLITE_ROW);
    CHECK(sqlite3_column_type(g.extract, 0) == SQLITE_TEXT);
    const void *back = sqlite3_column_text(g.extract, 0);
    CHECK((size_t)sqlite3_column_bytes(g.extract, 0) == n);
    CHECK(n == 0 || memcmp(back, data, n) == 0);
    sqlite3_reset(g.extract);
}

/* ---- handshake ---- */

static void fuzz_handshake(const uint8_t *data, size_t size)
{
    uint32_t version = 0;
    int rc = wire_handshake_parse(data, size, &version);
    CHECK(rc == 0 || rc == -1);
    if (rc != 0)
        return;
    CHECK(version >= 1 && size > 0 && size <= WIRE_HANDSHAKE_MAX);
    /* Whatever the stack-bounded parser accepts, plain protobuf-c agrees on. */
    Gvisor__Common__Handshake *hs = gvisor__common__handshake__unpack(NULL, size, data);
    CHECK(hs != NULL && hs->version == version);
    gvisor__common__handshake__free_unpacked(hs, NULL);
    uint8_t out[8];
    size_t n = wire_handshake_encode(version, out);
    CHECK(n >= 2 && n <= 6);
    uint32_t again = 0;
    CHECK(wire_handshake_parse(out, n, &again) == 0 && again == version);
}

/* ---- ingest: the same packet through the daemon's batch accounting ---- */

struct totals {
    uint64_t received, events, rejected, decoded;
    uint64_t rejected_by[REJECT_REASON_COUNT];
    uint64_t decode_by[DECODE_STATUS_COUNT];
};

static struct totals pipeline_totals(const struct pipeline *p)
{
    const struct batch *cur = p->current;
    struct totals t = {0};
    t.received = p->counts.received + cur->counts.received;
    CHECK(p->counts.discarded == 0 && cur->counts.discarded == 0);   /* count_only is off */
    t.events = p->result.discarded + cur->count;                       /* discard sink */
    CHECK(p->result.stored == 0 && p->result.failed == 0);
    for (int r = 0; r < REJECT_REASON_COUNT; r++) {
        t.rejected_by[r] = p->counts.rejected[r] + cur->counts.rejected[r];
        t.rejected += t.rejected_by[r];
    }
    for (int s = 0; s < DECODE_STATUS_COUNT; s++) {
        t.decode_by[s] = p->counts.decode[s] + cur->counts.decode[s];
        t.decoded += t.decode_by[s];
    }
    /* Nothing lost silently: every packet is an event or a rejection. */
    CHECK(t.received == t.events + t.rejected);
    CHECK(t.decoded == t.events);
    return t;
}

static void fuzz_ingest(const uint8_t *data, size_t size, enum wire_status ws, const struct wire_header *h,
                        const struct event *direct)
{
    struct totals before = pipeline_totals(&g.pipeline);
    struct conn_record rec = g.rec;
    int rc = ingest_packet(&g.ingest, &g.rec, data, size, false, 42);
    struct totals after = pipeline_totals(&g.pipeline);

    CHECK(after.received == before.received + 1);
    CHECK(g.rec.messages == rec.messages + 1 && g.rec.bytes == rec.bytes + size);
    if (ws != WIRE_OK) {
        enum reject_reason why = ws == WIRE_SHORT_PACKET ? REJECT_SHORT_PACKET : REJECT_BAD_HEADER;
        CHECK(rc == 0);
        CHECK(after.rejected_by[why] == before.rejected_by[why] + 1 && after.rejected == before.rejected + 1);
        CHECK(g.rec.rejected == rec.rejected + 1 && g.rec.decode_errors == rec.decode_errors);
        CHECK(g.rec.last_dropped_count == rec.last_dropped_count && g.rec.sandbox_dropped == rec.sandbox_dropped);
        return;
    }
    CHECK(g.rec.last_dropped_count == h->dropped_count);
    /* A count that went back by less than 2^31, or grew by more than the
     * allowance, is a regression (not added, counted); anything else is
     * growth, wrap-safe. */
    uint32_t back = rec.last_dropped_count - h->dropped_count, growth = h->dropped_count - rec.last_dropped_count;
    if ((h->dropped_count < rec.last_dropped_count && back < (1u << 31)) || growth > FUZZ_DROP_ALLOWANCE)
        CHECK(g.rec.sandbox_dropped == rec.sandbox_dropped &&
              g.rec.dropped_count_regressions == rec.dropped_count_regressions + 1);
    else
        CHECK(g.rec.sandbox_dropped ==
              rec.sandbox_dropped + (uint32_t)(h->dropped_count - rec.last_dropped_count));
    if (decode_arena_need(size) > FUZZ_BATCH_BYTES) {
        /* No batch can ever hold it: rejected for memory, and said so. */
        CHECK(rc == -1);
        CHECK(after.rejected_by[REJECT_NO_MEMORY] == before.rejected_by[REJECT_NO_MEMORY] + 1);
        CHECK(after.events == before.events && g.rec.rejected == rec.rejected + 1);
        return;
    }
    CHECK(rc == 0);
    CHECK(after.events == before.events + 1 && after.rejected == before.rejected);
    CHECK(after.decode_by[direct->status] == before.decode_by[direct->status] + 1);
    CHECK(g.rec.rejected == rec.rejected);
    CHECK(g.rec.decode_errors == rec.decode_errors + (direct->status != DECODE_OK));

    /* The batch's event is the direct decode's twin. */
    const struct batch *cur = g.pipeline.current;
    CHECK(cur->count >= 1);
    const struct event *ev = &cur->events[cur->count - 1];
    CHECK(ev->conn_id == g.rec.id && ev->recv_ns == 42);
    CHECK(ev->raw_len == size && ev->raw != data && (size == 0 || memcmp(ev->raw, data, size) == 0));
    CHECK(ev->status == direct->status);
    CHECK((ev->msg != NULL) == (direct->msg != NULL));
    CHECK(ev->msg == NULL || ev->msg->descriptor == direct->msg->descriptor);
    CHECK((ev->context != NULL) == (direct->context != NULL));
    CHECK(ev->has_sysno == direct->has_sysno && ev->sysno == direct->sysno);
    CHECK(ev->is_exit == direct->is_exit && ev->result == direct->result && ev->errorno == direct->errorno);
    CHECK(memcmp(&ev->header, &direct->header, sizeof(ev->header)) == 0);
}

/* ---- the rules over a decoded event ---- */

static void fuzz_rules(const struct event *ev, const uint8_t *data, size_t size)
{
    struct event e = *ev;
    e.conn_id = 1 + (size ? data[size - 1] % 4 : 0);   /* four process tables */
    struct rules_engine_stats before, after;
    rules_engine_get_stats(g.rules, &before);
    alert_list_reset(&g.alerts);
    rules_engine_eval(g.rules, &e, 3, &g.alerts);
    rules_engine_get_stats(g.rules, &after);
    /* "Every event" matched: an alert, or one lost to memory, or one held
     * back by a limit (the connection's ceiling, on by default, empties
     * within a run: the fuzzer is faster than its refill). */
    uint64_t held = after.over_ceiling - before.over_ceiling + after.suppressed - before.suppressed;
    CHECK(g.alerts.count + g.alerts.dropped + held >= 1);
    CHECK(after.alerts - before.alerts == g.alerts.count);
    for (size_t i = 0; i < g.alerts.count; i++) {
        const struct alert *a = &g.alerts.items[i];
        CHECK(a->event_index == 3 && a->priority < RULES_PRIORITY_COUNT);
        CHECK(a->json_len == strlen(a->json) && a->json[0] == '{' && a->json[a->json_len - 1] == '}');
        check_rendered(a->json, true);
        check_rendered(a->output_fields, true);
        check_rendered(a->tags, true);
        check_rendered(a->output, false);
    }
}

/* ---- one packet ---- */

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

/* Unknown fields anywhere in the message tree? */
static bool has_unknown_fields(const ProtobufCMessage *msg)
{
    if (msg->n_unknown_fields)
        return true;
    const ProtobufCMessageDescriptor *desc = msg->descriptor;
    for (unsigned i = 0; i < desc->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &desc->fields[i];
        if (f->type != PROTOBUF_C_TYPE_MESSAGE)
            continue;
        const char *at = (const char *)msg + f->offset;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)((const char *)msg + f->quantifier_offset);
            ProtobufCMessage *const *items = *(ProtobufCMessage *const *const *)at;
            for (size_t k = 0; k < n; k++)
                if (has_unknown_fields(items[k]))
                    return true;
        } else {
            const ProtobufCMessage *sub = *(const ProtobufCMessage *const *)at;
            if (sub && has_unknown_fields(sub))
                return true;
        }
    }
    return false;
}

/* The decoded message packed again and unpacked by plain protobuf-c must
 * render the very same JSON: nothing the renderer shows depends on how the
 * sender encoded it. Only without unknown fields: protobuf-c keeps those as
 * received, and accepts some it would refuse once re-encoded canonically
 * (an overlong varint tag `80 80 00` is field number 0, kept as unknown;
 * packed again it is the byte 00, which unpack rejects). */
static void check_round_trip(const ProtobufCMessage *msg)
{
    if (has_unknown_fields(msg))
        return;
    size_t packed = protobuf_c_message_get_packed_size(msg);
    uint8_t *buf = malloc(packed ? packed : 1);
    CHECK(buf != NULL);
    CHECK(protobuf_c_message_pack(msg, buf) == packed);
    ProtobufCMessage *again = protobuf_c_message_unpack(msg->descriptor, NULL, packed, buf);
    CHECK(again != NULL);
    strbuf_reset(&g.json2);
    CHECK(json_render_message(&g.json2, again) == 0);
    if (g.json2.len != g.json.len || memcmp(g.json2.data, g.json.data, g.json.len) != 0) {
        fprintf(stderr, "first:  %.*s\nsecond: %.*s\n", (int)g.json.len, g.json.data, (int)g.json2.len,
                g.json2.data);
        CHECK(!"JSON differs after a pack/unpack round trip");
    }
    protobuf_c_message_free_unpacked(again, NULL);
    free(buf);
}

static void fuzz_packet(const uint8_t *data, size_t size)
{
    struct wire_header h;
    memset(&h, 0, sizeof(h));
    enum wire_status ws = wire_header_parse(data, size, &h);
    switch (ws) {
    case WIRE_OK:
        CHECK(size >= WIRE_HEADER_MIN && h.header_size >= WIRE_HEADER_MIN && h.header_size <= size);
        break;
    case WIRE_SHORT_PACKET:
        CHECK(size < WIRE_HEADER_MIN);
        break;
    case WIRE_BAD_HEADER_SIZE:
        CHECK(size >= WIRE_HEADER_MIN && (h.header_size < WIRE_HEADER_MIN || h.header_size > size));
        break;
    default:
        CHECK(!"wire_status out of range");
    }
    if (ws != WIRE_SHORT_PACKET)
        CHECK(h.header_size == le16(data) && h.message_type == le16(data + 2) && h.dropped_count == le32(data + 4));
    if (ws != WIRE_OK) {
        fuzz_ingest(data, size, ws, &h, NULL);
        return;
    }

    /* As ingest does: raw copied into an arena first, decoded there; the
     * arena allows exactly what decode.h promises a packet may need. */
    size_t need = decode_arena_need(size);
    struct arena arena;
    arena_init(&arena, 64 * 1024, need);
    const uint8_t *raw = arena_memdup(&arena, data, size);
    CHECK(raw != NULL);
    struct event ev;
    memset(&ev, 0x5a, sizeof(ev));   /* decode_event must set every field it owns */
    decode_event(&g.dec, &arena, &h, raw, size, &ev);
    CHECK(arena_used(&arena) <= need);
    CHECK(ev.raw == raw && ev.raw_len == size);
    CHECK(memcmp(&ev.header, &h, sizeof(h)) == 0);

    uint16_t type = h.message_type;
    bool known = type >= 1 && type <= DECODE_TYPE_MAX;
    CHECK((decode_type_name(type) != NULL) == known);
    switch (ev.status) {
    case DECODE_OK:
        CHECK(known && ev.msg != NULL && ev.msg->descriptor == g.dec.types[type].desc);
        break;
    case DECODE_UNKNOWN_TYPE:
        CHECK(!known && ev.msg == NULL);
        break;
    case DECODE_BAD_PAYLOAD:
        CHECK(known && ev.msg == NULL);
        break;
    default:
        CHECK(!"decode_status out of range");
    }

    if (ev.status != DECODE_OK) {
        CHECK(ev.context == NULL && !ev.has_sysno && !ev.is_exit && ev.sysno == 0 && ev.result == 0 &&
              ev.errorno == 0);
    } else {
        const struct decode_layout *l = &g.dec.types[type];
        CHECK(ev.has_sysno == (l->sysno != NULL));
        CHECK(l->context != NULL || ev.context == NULL);
        CHECK(l->exit != NULL || !ev.is_exit);
        CHECK(ev.context == NULL || ev.context->base.descriptor == &gvisor__common__context_data__descriptor);
        CHECK(ev.is_exit || (ev.result == 0 && ev.errorno == 0));
        CHECK(protobuf_c_message_check(ev.msg));

        strbuf_reset(&g.json);
        CHECK(json_render_message(&g.json, ev.msg) == 0);
        check_json(&g.json, '{');
        check_round_trip(ev.msg);
        fuzz_rules(&ev, data, size);
    }

    fuzz_ingest(data, size, ws, &h, &ev);
    arena_free(&arena);
}

/* ---- a tracereplay file ---- */

static void write_all(int fd, const uint8_t *data, size_t size)
{
    CHECK(ftruncate(fd, 0) == 0);
    size_t off = 0;
    while (off < size) {
        ssize_t n = pwrite(fd, data + off, size - off, (off_t)off);
        CHECK(n > 0);
        off += (size_t)n;
    }
}

static void fuzz_tracefile(const uint8_t *data, size_t size)
{
    write_all(g.memfd, data, size);
    struct tracefile tf;
    enum tracefile_status st = tracefile_open(&tf, g.memfd_path);
    if (st != TRACEFILE_OK) {
        CHECK(st == TRACEFILE_TRUNCATED || st == TRACEFILE_BAD_CONFIG || st == TRACEFILE_NOT_TRACE);
        CHECK(tf.fp == NULL);
        return;
    }
    /* The reader accepted magic + u64 length + config: the bytes agree. */
    CHECK(size >= TRACEFILE_MAGIC_LEN + 8 && memcmp(data, TRACEFILE_MAGIC, TRACEFILE_MAGIC_LEN) == 0);
    uint64_t config_len = le64(data + TRACEFILE_MAGIC_LEN);
    CHECK(config_len > 0 && config_len < TRACEFILE_CONFIG_MAX);
    CHECK(size - TRACEFILE_MAGIC_LEN - 8 >= config_len);
    CHECK(tf.version >= 1 && tf.record != NULL);

    size_t off = TRACEFILE_MAGIC_LEN + 8 + (size_t)config_len;
    uint64_t records = 0;
    const uint8_t *pkt;
    size_t len;
    while ((st = tracefile_next(&tf, &pkt, &len)) == TRACEFILE_OK) {
        CHECK(len <= TRACEFILE_RECORD_MAX);
        CHECK(size - off >= 8 && le64(data + off) == len && size - off - 8 >= len);
        CHECK(len == 0 || memcmp(pkt, data + off + 8, len) == 0);
        off += 8 + len;
        records++;
        CHECK(tf.records == records);
        fuzz_packet(pkt, len);
    }
    switch (st) {
    case TRACEFILE_END:
        CHECK(off == size);
        break;
    case TRACEFILE_TRUNCATED:
        CHECK(off < size && (size - off < 8 || le64(data + off) > size - off - 8));
        break;
    case TRACEFILE_RECORD_TOO_LARGE:
        CHECK(size - off >= 8 && le64(data + off) > TRACEFILE_RECORD_MAX);
        break;
    default:
        CHECK(!"unexpected tracefile_next status");
    }
    CHECK(tracefile_close(&tf) == TRACEFILE_OK);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g.ready)
        fuzz_init();
    fuzz_handshake(data, size);
    fuzz_string(data, size);
    if (size >= TRACEFILE_MAGIC_LEN && memcmp(data, TRACEFILE_MAGIC, TRACEFILE_MAGIC_LEN) == 0)
        fuzz_tracefile(data, size);
    else
        fuzz_packet(data, size);
    return 0;
}

int fuzz_harness_finish(void)
{
    if (!g.ready)
        return 0;
    pipeline_finish(&g.pipeline);
    const struct pipeline *p = &g.pipeline;
    CHECK(p->counts.received == p->result.stored + p->result.discarded + p->result.failed +
                                    batch_counts_rejected(&p->counts));
    CHECK(g.rec.messages == p->counts.received);
    uv_run(&g.loop, UV_RUN_DEFAULT);   /* let the pipeline's handle close */
    pipeline_free(&g.pipeline);
    CHECK(uv_loop_close(&g.loop) == 0);
    sink_close(g.sink);
    alert_list_free(&g.alerts);
    rules_engine_free(g.rules);
    sqlite3_finalize(g.valid);
    sqlite3_finalize(g.extract);
    CHECK(sqlite3_close(g.db) == SQLITE_OK);
    strbuf_free(&g.json);
    strbuf_free(&g.json2);
    close(g.memfd);
    memset(&g, 0, sizeof(g));
    return 0;
}
