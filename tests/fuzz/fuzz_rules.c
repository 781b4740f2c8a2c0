/* fuzz_rules.c - the rules loader under libFuzzer (seccheck_fuzz_rules) and
 * its corpus replay (fuzz_rules_regression, ctest fuzz.rules_regression).
 *
 * An input is one rules file. Invariants (a violation abort()s): loading
 * never crashes, leaks or runs away; a refused file has at least one error
 * and every error has a message and a position no later than the file's
 * last line (+1); a loaded set has as many rules as it says, each rule's
 * (and each sequence step's) event types print, and evaluating it on a few
 * decoded events (a container/start, a sentry/clone, an openat exit for
 * writing, an exec of what it wrote), twice so that sequences of those
 * steps complete, raises at most one alert per rule and sequence, each a
 * JSON object line; a sequence's alert names its steps, and once its batch
 * is stored, every step has an id.
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

#define CHECK FUZZ_CHECK

static struct decoder dec;
static struct arena arena;
static bool ready;

static int64_t next_id = 1;

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
    rules_engine_batch_stored(e, &l, next_id++);
    CHECK(l.count <= nrules);
    for (size_t i = 0; i < l.count; i++) {
        const struct alert *a = &l.items[i];
        CHECK(a->json_len == strlen(a->json));
        CHECK(a->json[0] == '{' && a->json[a->json_len - 1] == '}');
        CHECK(!memchr(a->json, '\n', a->json_len));
        CHECK(a->nsteps <= RULES_SEQUENCE_MAX_STEPS);
        for (size_t k = 0; k < a->nsteps; k++)
            CHECK(a->steps[k].name && a->steps[k].event_id > 0 && a->steps[k].event_id < next_id);
        CHECK(!a->nsteps == !strstr(a->json, "\"" RULES_SEQUENCE_KEY "\":{\"steps\":["));
    }
    alert_list_free(&l);
}

static void evaluate(struct rule_set *rs)
{
    size_t n = rule_set_rule_count(rs) + rule_set_sequence_count(rs);
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
    /* a file written, then run: twice, so chains of these steps complete */
    Gvisor__Sentry__ExecveInfo ex2 = GVISOR__SENTRY__EXECVE_INFO__INIT;
    char *argv[] = {(char *)"/tmp/x", (char *)"-y"};
    ex2.context_data = &ctx;
    ex2.binary_path = (char *)"/tmp/x";
    ex2.argv = argv;
    ex2.n_argv = 2;
    for (int round = 0; round < 2; round++) {
        op.exit = &ex;
        op.pathname = (char *)"/tmp/x";
        op.flags = 01101;   /* O_WRONLY|O_CREAT|O_TRUNC */
        evaluate_one(e, &op.base, 7, n);
        evaluate_one(e, &ex2.base, 3, n);
    }
    CHECK(rules_engine_consistent(e));
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
        for (size_t i = 0; i < rule_set_sequence_count(rs); i++) {
            struct sequence_info si;
            rule_set_sequence_info(rs, i, &si);
            CHECK(si.name && si.nsteps >= 1 && si.nsteps <= RULES_SEQUENCE_MAX_STEPS && si.within_ns > 0);
            for (size_t k = 0; k <= si.nsteps; k++) {
                rule_set_sequence_step_types(rs, i, k, types, sizeof(types));
                CHECK(strlen(types) < sizeof(types) && (types[0] || (k == si.nsteps && !si.has_unless)));
            }
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
