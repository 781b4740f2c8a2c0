/* Integration: what restarts cost the sandboxes. gVisor's client drops an
 * event when its socket buffer is full (seccheck-loadgen --mode sentry does
 * the same), so every millisecond nobody reads is events lost: at 8,000
 * events/s a sandbox's default buffer (~277 small events) lasts ~35 ms.
 * 20 restarts under 4 such sandboxes: each restart's drops are the
 * sandboxes' dropped_count it adds (the connections table, read after
 * each); leaving out the 4 worst restarts (on a loaded 2-core machine the
 * scheduler alone can stall one for 60-100 ms), they must drop at most 2%
 * of the events sent meanwhile. The build before the restart pause was cut
 * dropped in every restart: 7.7% (28% in all); this one 0.0-0.8% at load
 * 7-8, once 5.4% when `nice ctest` left the daemon a tenth of a core beside
 * other work (a rerun passes). Every event sent is stored, and each
 * restart logs its pause. Under sanitizers, which slow the new image's
 * start, the sandboxes send 3,000 events/s (~90 ms of buffer). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon.h"

#define RESTARTS 20
#define WORST_LEFT_OUT 4
#ifdef SECCHECKD_SANITIZED
#define RATE "3000"               /* events/s per connection */
#else
#define RATE "8000"
#endif
#define MAX_DROPPED_PERCENT 2.0

static pid_t start_sandboxes(const char *socket, const char *out)
{
    const char *argv[] = {LOADGEN_BIN, "--socket", socket, "--trace", TRACES_DIR "/redis_rw.trace", "--connections",
                          "4", "--mode", "sentry", "--rate", RATE, "--duration", "600", "--json", NULL};
    return spawn_program(argv, out, NULL);
}

/* The pauses the log reports ("reading again X ms after ..."), printed. */
static void print_pauses(const struct daemon *d)
{
    char *log = daemon_read_log(d);
    const char *needle = "restart: reading again ";
    printf("reading pause per restart (ms):");
    for (const char *p = log; (p = strstr(p, needle)) != NULL; p++)
        printf(" %.1f", strtod(p + strlen(needle), NULL));
    printf("\n");
    free(log);
}

/* What the sandboxes said they dropped so far (committed rows). */
static long long sandbox_drops(const struct daemon *d)
{
    return dbq(d, "SELECT coalesce(sum(sandbox_dropped), 0) FROM connections");
}

static int by_value(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

static void test_restarts_drop_under_two_percent(void **state)
{
    struct daemon *d = *state;
    assert_true(daemon_start(d, SECCHECKD_BIN, NULL));
    char out[400];
    snprintf(out, sizeof(out), "%s/loadgen.json", d->dir);
    pid_t lg = start_sandboxes(d->socket, out);
    assert_true(daemon_wait_log(d, "connection 4 opened", 1, 10000));
    sleep_ms(500);
    long long drops[RESTARTS], before = sandbox_drops(d);
    for (int i = 0; i < RESTARTS; i++) {
        kill(d->pid, SIGUSR2);
        if (!daemon_wait_log(d, "restart: adopted", i + 1, 30000))
            fail_msg("restart %d did not complete", i + 1);
        sleep_ms(300);   /* the next headers report the drops, a flush commits them */
        long long now = sandbox_drops(d);
        drops[i] = now - before;
        before = now;
    }
    kill(lg, SIGTERM);
    assert_int_equal(reaper_wait(lg), 0);
    assert_int_equal(daemon_stop(d), 0);
    long long sent = json_file_number(out, "sent"), dropped = json_file_number(out, "dropped");
    print_pauses(d);
    printf("drops per restart:");
    for (int i = 0; i < RESTARTS; i++)
        printf(" %lld", drops[i]);
    qsort(drops, RESTARTS, sizeof(drops[0]), by_value);
    long long kept = 0;
    for (int i = 0; i < RESTARTS - WORST_LEFT_OUT; i++)
        kept += drops[i];
    double percent = 100.0 * (double)kept / ((double)(sent + dropped) * (RESTARTS - WORST_LEFT_OUT) / RESTARTS);
    printf("\n%d restarts: sent %lld, dropped %lld by the sandboxes (%.3f%%); the %d best: %.3f%%\n", RESTARTS,
           sent, dropped, 100.0 * (double)dropped / (double)(sent + dropped), RESTARTS - WORST_LEFT_OUT, percent);
    assert_int_equal(dbq(d, "SELECT count(*) FROM events"), sent);
    if (percent > MAX_DROPPED_PERCENT)
        fail_msg("the %d best of %d restarts dropped %.3f%% of the events (at most %.1f%%)",
                 RESTARTS - WORST_LEFT_OUT, RESTARTS, percent, MAX_DROPPED_PERCENT);
    assert_int_equal(daemon_log_count(d, "restart: reading again"), RESTARTS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_restarts_drop_under_two_percent, daemon_setup, daemon_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
