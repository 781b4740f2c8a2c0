/* Integration: `seccheckd --sink record` writes gVisor tracereplay files
 * whose packets are exactly what was sent, one file per connection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon.h"
#include "replay.h"
#include "tracefile.h"

static const char *const trace_names[] = {"exec_loop", "mixed_syscalls", "redis_rw", "drops"};
#define NTRACES 4

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    char *buf = malloc(*len + 1);
    assert_int_equal(fread(buf, 1, *len, f), *len);
    fclose(f);
    return buf;
}

/* The recorded file replays to exactly the trace's packets. */
static bool same_packets(const char *path, const struct replay_trace *t)
{
    struct replay_trace got;
    char err[512];
    if (replay_trace_load(&got, path, err, sizeof(err)) != 0)
        return false;
    bool same = traces_equal(&got, t);
    replay_trace_free(&got);
    return same;
}

static void test_record_round_trip(void **state)
{
    (void)state;
    struct replay_trace traces[NTRACES];
    assert_int_equal(traces_load(traces, trace_names, NTRACES), 0);
    struct daemon d;
    daemon_prepare(&d);
    char dir[400];
    snprintf(dir, sizeof(dir), "%s/rec", d.dir);
    const char *args[] = {"--sink", "record", "--record-dir", dir, NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    const struct replay_trace *set[NTRACES];
    uint32_t versions[NTRACES];
    for (int i = 0; i < NTRACES; i++) {
        set[i] = &traces[i];
        versions[i] = 1;
    }
    assert_int_equal(replay_concurrently(d.socket, set, versions, NTRACES), 0);
    assert_int_equal(daemon_stop(&d), 0);

    /* Each of client-0001..0004 is one trace, packet for packet. */
    int matched[NTRACES] = {0};
    for (int n = 1; n <= NTRACES; n++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/client-%04d", dir, n);
        size_t len;
        char *bytes = read_file(path, &len);
        /* gVisor's `tracereplay save` layout, byte for byte, up to the packets. */
        assert_memory_equal(bytes, "tracereplay file\x0d\0\0\0\0\0\0\0{\"version\":1}", 16 + 8 + 13);
        free(bytes);
        for (int i = 0; i < NTRACES; i++)
            if (same_packets(path, &traces[i]))
                matched[i]++;
    }
    for (int i = 0; i < NTRACES; i++)
        assert_int_equal(matched[i], 1);
    char fifth[512];
    snprintf(fifth, sizeof(fifth), "%s/client-0005", dir);
    assert_int_not_equal(access(fifth, F_OK), 0);

    /* A second run numbers on and records the client's own version. */
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    assert_int_equal(replay_connection(d.socket, &traces[0], 5), 0);
    assert_int_equal(daemon_stop(&d), 0);
    size_t len;
    char *bytes = read_file(fifth, &len);
    assert_memory_equal(bytes + 16, "\x0d\0\0\0\0\0\0\0{\"version\":5}", 8 + 13);
    free(bytes);
    assert_true(same_packets(fifth, &traces[0]));
    char first[512];
    snprintf(first, sizeof(first), "%s/client-0001", dir);
    assert_true(same_packets(first, &traces[0]) || same_packets(first, &traces[1]) ||
                same_packets(first, &traces[2]) || same_packets(first, &traces[3]));   /* not overwritten */

    daemon_cleanup(&d);
    traces_free(traces, NTRACES);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
