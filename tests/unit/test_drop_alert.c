/* Unit: Falco's "Falco internal: syscall event drop" for a sandbox that
 * drops events (issue 31 item 3), per connection, on the engine's own
 * clock: falcosecurity/falco 130747499b userspace/falco/event_drops.cpp
 * (the one-second window 53-125, the alert's fields 133-200), falco.yaml
 * syscall_event_drops (threshold .1, rate .03333, max_burst 1), the text
 * and JSON of an internal message (falco_outputs.cpp:170-235). */
#include "rules_util.h"
#include "strbuf.h"

static struct ctx_parts CP;
static int64_t now_ns;

static int64_t test_clock(void *data)
{
    (void)data;
    return now_ns;
}

static struct rules_engine *engine(bool on, const char *rules)
{
    struct rules_engine_config cfg;
    rules_engine_config_defaults(&cfg);
    cfg.hostname = "h1";
    cfg.clock_ns = test_clock;
    cfg.drop_alerts = on;
    struct rules_engine *e = rules_engine_new(&cfg);
    assert_non_null(e);
    if (rules)
        rules_engine_set_rules(e, rules_ok(rules));
    return e;
}

/* A getpid of conn whose header says the sandbox dropped `dropped` so far. */
static const struct event *ev(uint64_t conn, uint32_t dropped)
{
    static Gvisor__Syscall__Syscall m;
    static Gvisor__Syscall__Exit x;
    gvisor__syscall__syscall__init(&m);
    gvisor__syscall__exit__init(&x);
    m.context_data = mk_ctx(&CP, 5, "find", 1700000000000000001);
    m.exit = &x;
    m.sysno = 39;
    return evb_build(&B, conn, 6, dropped, &m.base);
}

/* The drop alerts an event raises (other alerts ignored). */
static size_t drop_alerts(struct rules_engine *e, const struct event *event)
{
    alert_list_reset(&L);
    rules_engine_eval(e, event, 0, &L);
    size_t n = 0;
    for (size_t i = 0; i < L.count; i++)
        n += strcmp(L.items[i].rule, RULES_DROP_RULE) == 0;
    return n;
}

static void test_alert_as_falco_raises_it(void **state)
{
    (void)state;
    now_ns = 1000;
    struct rules_engine *e = engine(true, NULL);
    /* the first second: 9 events, 2930 dropped before the last */
    for (int i = 0; i < 8; i++)
        assert_int_equal(drop_alerts(e, ev(1, 0)), 0);
    assert_int_equal(drop_alerts(e, ev(1, 2930)), 0);
    /* an event after the second ends it: 10 delivered + 2930 dropped */
    now_ns += 1000000001;
    assert_int_equal(drop_alerts(e, ev(1, 2930)), 1);
    const struct alert *a = &L.items[0];
    assert_string_equal(a->rule, "Falco internal: syscall event drop");
    assert_int_equal(a->priority, RULES_DEBUG);
    assert_string_equal(a->container_id, "c1");
    assert_string_equal(a->tags, "[]");
    assert_string_equal(a->output_fields,
                        "{\"container.id\":\"c1\",\"container.image.repository\":null,\"container.image.tag\":null,"
                        "\"container.name\":null,\"ebpf_enabled\":\"0\",\"k8s.ns.name\":null,\"k8s.pod.name\":null,"
                        "\"n_drops\":\"2930\",\"n_drops_bug\":\"0\",\"n_drops_buffer_clone_fork_exit\":\"0\","
                        "\"n_drops_buffer_close_exit\":\"0\",\"n_drops_buffer_connect_exit\":\"0\","
                        "\"n_drops_buffer_dir_file_exit\":\"0\",\"n_drops_buffer_execve_exit\":\"0\","
                        "\"n_drops_buffer_open_exit\":\"0\",\"n_drops_buffer_other_interest_exit\":\"0\","
                        "\"n_drops_buffer_proc_exit\":\"0\",\"n_drops_buffer_total\":\"2930\","
                        "\"n_drops_page_faults\":\"0\",\"n_drops_scratch_map\":\"0\",\"n_evts\":\"2940\"}");
    /* falco_outputs.cpp:216-230: the message, then the fields as k=JSON */
    assert_string_equal(a->output,
                        "22:13:20.000000001: Debug Falco internal: syscall event drop. 2930 system calls dropped in "
                        "last second. (container.id=\"c1\" container.image.repository=null container.image.tag=null "
                        "container.name=null ebpf_enabled=\"0\" k8s.ns.name=null k8s.pod.name=null n_drops=\"2930\" "
                        "n_drops_bug=\"0\" n_drops_buffer_clone_fork_exit=\"0\" n_drops_buffer_close_exit=\"0\" "
                        "n_drops_buffer_connect_exit=\"0\" n_drops_buffer_dir_file_exit=\"0\" "
                        "n_drops_buffer_execve_exit=\"0\" n_drops_buffer_open_exit=\"0\" "
                        "n_drops_buffer_other_interest_exit=\"0\" n_drops_buffer_proc_exit=\"0\" "
                        "n_drops_buffer_total=\"2930\" n_drops_page_faults=\"0\" n_drops_scratch_map=\"0\" "
                        "n_evts=\"2940\")");
    /* falco_outputs.cpp:186-210: source internal, the message alone, no tags */
    char want[4096];
    snprintf(want, sizeof(want),
             "{\"hostname\":\"h1\",\"output\":\"Falco internal: syscall event drop. 2930 system calls dropped in "
             "last second.\",\"output_fields\":%s,\"priority\":\"Debug\",\"rule\":\"Falco internal: syscall event "
             "drop\",\"source\":\"internal\",\"time\":\"2023-11-14T22:13:20.000000001Z\"}",
             a->output_fields);
    assert_string_equal(a->json, want);
    /* the same line from the stored row (delivery, alerts --json) */
    struct strbuf sb = {0};
    rules_alert_json(&sb, "h1", a->rule, "Debug", a->time_ns, a->output, a->output_len, a->output_fields, a->tags, 0);
    assert_string_equal(sb.data, want);
    strbuf_free(&sb);
    /* more drops in the next seconds: the bucket (one token, .03333 a
     * second: the next after 30.003 s of the clock) holds them */
    for (int s = 1; s <= 31; s++) {
        assert_int_equal(drop_alerts(e, ev(1, 2930 + 100 * (uint32_t)s)), 0);
        now_ns += 1000000001;
    }
    assert_int_equal(drop_alerts(e, ev(1, 9000)), 1);
    struct rules_engine_stats st;
    rules_engine_get_stats(e, &st);
    assert_int_equal(st.drop_alerts, 2);
    rules_engine_free(e);
}

/* Threshold .1: drops / (delivered + dropped) must be above it. */
static void test_threshold_and_windows(void **state)
{
    (void)state;
    now_ns = 5;
    struct rules_engine *e = engine(true, NULL);
    for (int i = 0; i < 90; i++)
        drop_alerts(e, ev(1, 0));
    assert_int_equal(drop_alerts(e, ev(1, 10)), 0);   /* 10 of 101: under .1 */
    now_ns += 1000000001;
    assert_int_equal(drop_alerts(e, ev(1, 10)), 0);
    /* no drops in a window: nothing, however long */
    now_ns += 5000000000LL;
    assert_int_equal(drop_alerts(e, ev(1, 10)), 0);
    /* one connection's drops are its own: conn 2 counts from its first event */
    assert_int_equal(drop_alerts(e, ev(2, 500)), 0);
    now_ns += 1000000001;
    assert_int_equal(drop_alerts(e, ev(2, 500)), 1);
    assert_int_equal(drop_alerts(e, ev(1, 10)), 0);
    /* a closed connection's window and bucket go with it */
    rules_engine_conn_closed(e, 2);
    assert_int_equal(drop_alerts(e, ev(2, 900)), 0);
    now_ns += 1000000001;
    assert_int_equal(drop_alerts(e, ev(2, 900)), 1);   /* a fresh bucket */
    rules_engine_free(e);
}

/* Off only by the option; on whatever rules are loaded, beside them. */
static void test_off_and_beside_rules(void **state)
{
    (void)state;
    now_ns = 5;
    struct rules_engine *e = engine(false, NULL);
    drop_alerts(e, ev(1, 100));
    now_ns += 1000000001;
    assert_int_equal(drop_alerts(e, ev(1, 100)), 0);
    rules_engine_free(e);
    e = engine(true, "- rule: getpid\n  desc: d\n  condition: evt.type = getpid\n  output: o\n  priority: Notice\n");
    drop_alerts(e, ev(1, 100));
    now_ns += 1000000001;
    assert_int_equal(drop_alerts(e, ev(1, 100)), 1);
    assert_int_equal(L.count, 2);   /* the drop's, then the rule's */
    assert_string_equal(L.items[1].rule, "getpid");
    rules_engine_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alert_as_falco_raises_it),
        cmocka_unit_test(test_threshold_and_windows),
        cmocka_unit_test(test_off_and_beside_rules),
    };
    return cmocka_run_group_tests(tests, rules_group_setup, rules_group_teardown);
}
