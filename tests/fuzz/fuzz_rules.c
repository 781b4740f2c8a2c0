/* fuzz_rules.c - the rules loader under libFuzzer (seccheck_fuzz_rules) and
 * its corpus replay (fuzz_rules_regression, ctest fuzz.rules_regression).
 *
 * An input is one rules file. Invariants (a violation abort()s): loading
 * never crashes, leaks or runs away; a refused file has at least one error
 * and every error has a message and a position no later than the file's
 * last line (+1); a loaded set has as many rules as it says, each rule's
 * event types print, and evaluating it on a few decoded events (an openat
 * exit, a sentry/clone, a container/start) raises at most one alert per
 * rule, each a JSON object line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "fuzz_harness.h"
#include "gvisor/container.pb-c.h"
#include "gvisor/sentry.pb-c.h"
#include "gvisor/syscall.pb-c.h"
#include "rules.h"
#include "wire.h"

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "fuzz invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
            abort();                                                             \
        }                                                                        \
    } while (0)

static struct decoder dec;
static struct arena arena;
static bool ready;

static void evaluate_one(struct rules_engine *e, const ProtobufCMessage *m, uint16_t type, size_t nrules)
{
    uint8_t pkt[4096];
    size_t len = protobuf_c_message_get_packed_size(m);
    CHECK(len + 8 <= sizeof(pkt));
    wire_header_write(pkt, type, 0);
    protobuf_c_message_pack(m, pkt + 8);
    struct wire_header h;
    CHECK(wire_header_parse(pkt, len + 8, &h) == WIRE_OK);
    arena_reset(&arena);
    struct event ev = {.conn_id = 1, .recv_ns = 1};
    decode_event(&dec, &arena, &h, arena_memdup(&arena, pkt, len + 8), len + 8, &ev);
    ev.conn_id = 1;
    struct alert_list l = {0};
    rules_engine_eval(e, &ev, 0, &l);
    CHECK(l.count <= nrules);
    for (size_t i = 0; i < l.count; i++) {
        CHECK(l.items[i].json_len == strlen(l.items[i].json));
        CHECK(l.items[i].json[0] == '{' && l.items[i].json[l.items[i].json_len - 1] == '}');
        CHECK(!memchr(l.items[i].json, '\n', l.items[i].json_len));
    }
    alert_list_free(&l);
}

static void evaluate(struct rule_set *rs)
{
    size_t n = rule_set_rule_count(rs);
    struct rules_engine_config cfg;
    rules_engine_config_defaults(&cfg);
    struct rules_engine *e = rules_engine_new(&cfg);
    CHECK(e);
    rules_engine_set_rules(e, rs);
    Gvisor__Common__ContextData ctx = GVISOR__COMMON__CONTEXT_DATA__INIT;
    ctx.time_ns = 1700000000000000001;
    ctx.thread_id = ctx.thread_group_id = 2;
    ctx.container_id = (char *)"c1";
    ctx.cwd = (char *)"/root";
    ctx.process_name = (char *)"sh";
    Gvisor__Container__Start st = GVISOR__CONTAINER__START__INIT;
    char *args[] = {(char *)"/bin/sh", (char *)"-c", (char *)"x"};
    st.context_data = &ctx;
    st.id = (char *)"c1";
    st.args = args;
    st.n_args = 3;
    evaluate_one(e, &st.base, 1, n);
    Gvisor__Sentry__CloneInfo cl = GVISOR__SENTRY__CLONE_INFO__INIT;
    cl.context_data = &ctx;
    cl.created_thread_id = cl.created_thread_group_id = 3;
    evaluate_one(e, &cl.base, 2, n);
    Gvisor__Syscall__Open op = GVISOR__SYSCALL__OPEN__INIT;
    Gvisor__Syscall__Exit ex = GVISOR__SYSCALL__EXIT__INIT;
    ex.result = 3;
    op.context_data = &ctx;
    op.exit = &ex;
    op.sysno = 257;
    op.fd = -100;
    op.pathname = (char *)"../etc/passwd";
    evaluate_one(e, &op.base, 7, n);
    op.exit = NULL;
    evaluate_one(e, &op.base, 7, n);
    rules_engine_free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ready) {
        decoder_init(&dec);
        arena_init(&arena, 64 * 1024, 1 << 20);
        ready = true;
    }
    unsigned lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n' || data[i] == '\r';
    struct rules_diag diag = {0};
    struct rule_set *rs = rule_set_load_buffer("fuzz.yaml", (const char *)data, size, &diag);
    CHECK(diag.count <= diag.errors + diag.warnings);
    for (size_t i = 0; i < diag.count; i++) {
        CHECK(diag.items[i].message && diag.items[i].message[0]);
        CHECK(diag.items[i].line <= lines + 1);
    }
    if (!rs) {
        CHECK(diag.errors > 0);
    } else {
        CHECK(diag.errors == 0);
        struct rule_set_stats st;
        rule_set_get_stats(rs, &st);
        CHECK(st.rules == rule_set_rule_count(rs));
        CHECK(st.rules_enabled <= st.rules);
        char types[256];
        for (size_t i = 0; i < rule_set_rule_count(rs); i++) {
            rule_set_rule_types(rs, i, types, sizeof(types));
            CHECK(strlen(types) < sizeof(types) && types[0]);
        }
        evaluate(rs);   /* the engine owns and frees rs */
    }
    rules_diag_free(&diag);
    return 0;
}

int fuzz_harness_finish(void)
{
    if (ready)
        arena_free(&arena);
    return 0;
}
