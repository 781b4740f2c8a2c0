/* Integration: the drops a sandbox reports in its headers' dropped_count,
 * through the daemon. A jump past what the sandbox could have dropped is a
 * regression (server/ingest.h), on both sides of the bound: right after
 * connecting, and after 25 s, when the allowance counts from the last time
 * the daemon read the socket empty (not from the connect). The counter
 * wraps at 2^32 into connections.sandbox_dropped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon.h"

/* An empty CONTAINER_START with the sandbox's running count. */
static void send_count(int fd, uint32_t dropped)
{
    uint8_t pkt[8] = {8, 0, 1, 0, (uint8_t)dropped, (uint8_t)(dropped >> 8), (uint8_t)(dropped >> 16),
                      (uint8_t)(dropped >> 24)};
    send_bytes(fd, pkt, sizeof(pkt));
}

/* The same count every 500 ms until ms have passed: the daemon reads the
 * socket empty each time. */
static void idle(int fd, uint32_t dropped, int ms)
{
    for (int t = 0; t < ms; t += 500) {
        send_count(fd, dropped);
        sleep_ms(500);
    }
}

static void test_drop_bound_and_wrap(void **state)
{
    struct daemon *d = *state;
    assert_true(daemon_start(d, SECCHECKD_BIN, NULL));
    int fd = replay_open(d->socket, 1);
    assert_true(fd >= 0);
    send_count(fd, 0);
    /* just under 2^31 at once, right after connecting: no sandbox drops
     * that many in 21 s, let alone now. (The half-range rule took it.) */
    send_count(fd, 0x7fffffffu);
    idle(fd, 0x7fffffffu, 12000);
    /* 12 s on, read empty every 0.5 s: about 1.05e9 allowed per header
     * (0.5 s + the 10 s a count may be stale); up to 2^32-1 and over */
    send_count(fd, 3000000000u);
    sleep_ms(100);
    send_count(fd, 3900000000u);
    sleep_ms(100);
    send_count(fd, 0xffffffffu);
    sleep_ms(100);
    send_count(fd, 5);   /* wrapped: 6 more */
    idle(fd, 5, 13000);
    /* 25 s after connecting: 2.1e9 would fit 25 s from the connect, not
     * the 10.5 s since the socket was last empty */
    send_count(fd, 2100000005u);
    sleep_ms(100);
    send_count(fd, 2600000005u);   /* 5e8: fits */
    close(fd);
    assert_true(daemon_wait_log(d, "connection 1 closed", 1, 10000));
    assert_int_equal(daemon_stop(d), 0);
    long long dropped = dbq(d, "SELECT sandbox_dropped FROM connections WHERE id = 1");
    long long regressions = dbq(d, "SELECT dropped_count_regressions FROM connections WHERE id = 1");
    printf("sandbox_dropped %lld, dropped_count_regressions %lld\n", dropped, regressions);
    assert_int_equal(regressions, 2);
    assert_int_equal(dropped, (3000000000LL - 0x7fffffffLL) + 900000000LL + (0xffffffffLL - 3900000000LL) + 6 +
                                  500000000LL);
    assert_int_equal(dbq(d, "SELECT last_dropped_count FROM connections WHERE id = 1"), 2600000005LL);
}

/* Issue 31 item 3: a sandbox's drops on the Falco path. As they happen, a
 * warning in the log (once, then at most every 10 s per connection); the
 * per-connection metric; and, whatever rules are loaded (here one that
 * never matches), Falco's "Falco internal: syscall event drop" alert
 * (userspace/falco/event_drops.cpp) once the second of its drops ends,
 * stored with the event that ended it; --syscall-event-drops ignore: none. */
static void test_drops_warned_counted_and_alerted(void **state)
{
    struct daemon *d = *state;
    char rules[400], metrics[400];
    snprintf(rules, sizeof(rules), "%s/r.yaml", d->dir);
    snprintf(metrics, sizeof(metrics), "%s/m.sock", d->dir);
    write_file(rules, "- rule: never\n  desc: d\n  condition: evt.type = kill and evt.num = 0\n  output: o\n"
                      "  priority: Notice\n");
    char listen[420];
    snprintf(listen, sizeof(listen), "unix:%s", metrics);
    const char *args[] = {"--rules", rules, "--metrics-listen", listen, "--alerts-out", "none", "--flush-ms", "20",
                          NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, args));
    int fd = replay_open(d->socket, 1);
    assert_true(fd >= 0);
    for (int i = 0; i < 9; i++)
        send_count(fd, 0);
    send_count(fd, 2930);
    assert_true(daemon_wait_log(d, "the sandbox dropped 2930 events (2930 in all): its socket buffer was full", 1,
                                10000));
    send_count(fd, 3000);   /* within 10 s of the warning: no other line */
    sleep_ms(1200);
    send_count(fd, 3000);   /* the second is over: the alert, with this event (or the one before, on a machine
                             * slow enough that the second ended there: then n_evts is 3011) */
    for (int i = 0; i < 100 && dbq(d, "SELECT count(*) FROM alerts") < 1; i++)
        sleep_ms(50);
    assert_int_equal(metric_scrape(metrics, "seccheckd_connection_sandbox_dropped_total{conn=\"1\"}"), 3000);
    close(fd);
    assert_true(daemon_wait_log(d, "connection 1 closed", 1, 10000));
    assert_int_equal(daemon_stop(d), 0);
    assert_int_equal(daemon_log_count(d, "the sandbox dropped"), 1);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts WHERE rule = 'Falco internal: syscall event drop' AND "
                            "priority = 'Debug' AND json_extract(output_fields, '$.n_drops') = '3000' AND "
                            "json_extract(output_fields, '$.n_evts') IN ('3011', '3012') AND output LIKE "
                            "'%%: Debug Falco internal: syscall event drop. 3000 system calls dropped in last second. "
                            "(%%n_drops=\"3000\"%%'"),
                     1);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts"), 1);
    assert_int_equal(dbq(d, "SELECT e.conn_id FROM alerts a JOIN events e ON e.id = a.event_id"), 1);

    /* off only by the option */
    const char *off[] = {"--rules", rules, "--alerts-out", "none", "--syscall-event-drops", "ignore", NULL};
    assert_true(daemon_start(d, SECCHECKD_BIN, off));
    fd = replay_open(d->socket, 1);
    assert_true(fd >= 0);
    send_count(fd, 0);
    send_count(fd, 500);
    sleep_ms(1200);
    send_count(fd, 500);
    close(fd);
    assert_true(daemon_wait_log(d, "closed", 1, 10000));
    assert_int_equal(daemon_stop(d), 0);
    assert_int_equal(daemon_log_count(d, "the sandbox dropped 500 events"), 1);
    assert_int_equal(dbq(d, "SELECT count(*) FROM alerts"), 1);   /* the first run's */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_drop_bound_and_wrap, daemon_setup, daemon_teardown),
        cmocka_unit_test_setup_teardown(test_drops_warned_counted_and_alerted, daemon_setup, daemon_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
