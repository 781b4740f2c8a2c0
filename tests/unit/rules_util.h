/* rules_util.h - helpers shared by the rules engine's unit tests: rules
 * from text, events built from protobuf-c messages (packed, framed and
 * decoded by the project's decoder, as the daemon receives them), and
 * evaluation of one event. */
#ifndef SECCHECKD_RULES_UTIL_H
#define SECCHECKD_RULES_UTIL_H

#include "unit_util.h"

#include "container.h"
#include "decode.h"
#include "gvisor/common.pb-c.h"
#include "gvisor/container.pb-c.h"
#include "gvisor/sentry.pb-c.h"
#include "gvisor/syscall.pb-c.h"
#include "rules.h"

/* Loads text as one rules file named "t.yaml"; fails the test on errors. */
static inline struct rule_set *rules_ok(const char *text)
{
    struct rules_diag d = {0};
    struct rule_set *rs = rule_set_load_buffer("t.yaml", text, strlen(text), &d);
    if (!rs) {
        rules_diag_print(&d, stderr);
        rules_diag_free(&d);
        fail_msg("rules did not load");
    }
    rules_diag_free(&d);
    return rs;
}

/* Loads text expecting errors; returns the diagnostics printed as lines. */
static inline void rules_errors(const char *text, char *out, size_t outlen)
{
    struct rules_diag d = {0};
    struct rule_set *rs = rule_set_load_buffer("t.yaml", text, strlen(text), &d);
    if (rs) {
        rule_set_free(rs);
        rules_diag_free(&d);
        fail_msg("rules loaded, errors expected:\n%s", text);
    }
    FILE *fp = fmemopen(out, outlen, "w");
    assert_non_null(fp);
    rules_diag_print(&d, fp);
    fclose(fp);
    out[outlen - 1] = '\0';
    rules_diag_free(&d);
}

/* An event decoded from a message, valid until the next build. */
struct evb {
    struct decoder dec;
    struct arena arena;
    uint8_t pkt[1 << 16];
    struct event ev;
};

static inline void evb_init(struct evb *b)
{
    decoder_init(&b->dec);
    arena_init(&b->arena, 64 * 1024, 16 << 20);
}

static inline void evb_free(struct evb *b) { arena_free(&b->arena); }

/* The group fixture of the test files that build events: one builder B and
 * one alert list L per file, set up once for its group
 * (cmocka_run_group_tests(tests, rules_group_setup, rules_group_teardown)).
 * Files that only load rules leave them unused. */
__attribute__((unused)) static struct evb B;
__attribute__((unused)) static struct alert_list L;

static inline int rules_group_setup(void **state)
{
    (void)state;
    evb_init(&B);
    return 0;
}

static inline int rules_group_teardown(void **state)
{
    (void)state;
    evb_free(&B);
    alert_list_free(&L);
    return 0;
}

static inline const struct event *evb_build(struct evb *b, uint64_t conn, uint16_t type, uint32_t dropped,
                                            const ProtobufCMessage *m)
{
    size_t len = protobuf_c_message_get_packed_size(m);
    assert_true(len + 8 <= sizeof(b->pkt));
    uint8_t payload[1 << 16];
    protobuf_c_message_pack(m, payload);
    size_t plen = make_packet(b->pkt, type, dropped, payload, len);
    arena_reset(&b->arena);
    struct wire_header h;
    assert_int_equal(wire_header_parse(b->pkt, plen, &h), WIRE_OK);
    const uint8_t *raw = arena_memdup(&b->arena, b->pkt, plen);
    memset(&b->ev, 0, sizeof(b->ev));
    decode_event(&b->dec, &b->arena, &h, raw, plen, &b->ev);
    assert_int_equal(b->ev.status, DECODE_OK);
    b->ev.conn_id = conn;
    b->ev.recv_ns = 1;
    return &b->ev;
}

/* A context for process tgid (tid = tgid), named name, in /root, uid 1000. */
struct ctx_parts {
    Gvisor__Common__ContextData ctx;
    Gvisor__Common__Credentials creds;
};

static inline Gvisor__Common__ContextData *mk_ctx(struct ctx_parts *p, int32_t tgid, const char *name, int64_t time_ns)
{
    gvisor__common__context_data__init(&p->ctx);
    gvisor__common__credentials__init(&p->creds);
    p->creds.effective_uid = 1000;
    p->creds.effective_gid = 100;
    p->ctx.time_ns = time_ns;
    p->ctx.thread_id = tgid;
    p->ctx.thread_group_id = tgid;
    p->ctx.thread_group_start_time_ns = 1000 + tgid;
    p->ctx.container_id = (char *)"c1";
    p->ctx.credentials = &p->creds;
    p->ctx.cwd = (char *)"/root";
    p->ctx.process_name = (char *)name;
    return &p->ctx;
}

/* Evaluates ev; returns the number of alerts (list reset first). */
static inline size_t eval_count(struct rules_engine *e, const struct event *ev, struct alert_list *l)
{
    alert_list_reset(l);
    rules_engine_eval(e, ev, 0, l);
    return l->count;
}

/* An engine for the field tests (rules_text NULL: none set yet) whose
 * container records come from view (NULL: none, as `rules test` has). */
static inline struct rules_engine *engine_with_containers(const char *rules_text, struct container_view *view)
{
    struct rules_engine_config cfg;
    rules_engine_config_defaults(&cfg);
    cfg.hostname = "h1";
    cfg.containers = view;
    /* The field tests count what each rule matches: every rule alerts
     * (rule_matching all), none is held back by a limit. */
    cfg.matching = RULES_MATCH_ALL;
    cfg.rate = 0;
    cfg.ceiling = 0;
    struct rules_engine *e = rules_engine_new(&cfg);
    assert_non_null(e);
    if (rules_text)
        rules_engine_set_rules(e, rules_ok(rules_text));
    return e;
}

static inline struct rules_engine *engine_with(const char *rules_text)
{
    return engine_with_containers(rules_text, NULL);
}

/* A container cache reading the runsc root dir, quick to give up on a
 * state file that is not there (2 attempts, 10 ms apart). */
static inline struct container_cache *cache_on_root(const char *root)
{
    const char *roots[] = {root};
    struct container_cache_config cfg = {.roots = roots, .nroots = 1, .attempts = 2, .retry_ns = 10000000};
    char err[128];
    struct container_cache *c = container_cache_open(&cfg, err, sizeof(err));
    if (!c)
        fail_msg("container_cache_open: %s", err);
    return c;
}

#endif
