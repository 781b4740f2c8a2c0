/* test_tracefile.c - reading and writing tracereplay files (decoder/tracefile.h). */
#include "unit_util.h"

#include <errno.h>
#include <sys/stat.h>

#include "wire.h"

/* ---- the shared fixtures ---- */

static void check_trace(const char *name, uint64_t want_messages, uint32_t want_max_dropped)
{
    char path[4096];
    trace_path(path, sizeof(path), name);
    struct tracefile tf;
    assert_int_equal(tracefile_open(&tf, path), TRACEFILE_OK);
    assert_int_equal(tf.version, 1);
    const uint8_t *p;
    size_t len;
    enum tracefile_status st;
    uint64_t n = 0;
    uint32_t max_dropped = 0;
    while ((st = tracefile_next(&tf, &p, &len)) == TRACEFILE_OK) {
        struct wire_header h;
        assert_int_equal(wire_header_parse(p, len, &h), WIRE_OK);
        assert_int_equal(h.header_size, 8);
        if (h.dropped_count > max_dropped)
            max_dropped = h.dropped_count;
        n++;
    }
    assert_int_equal(st, TRACEFILE_END);
    assert_int_equal(n, want_messages);
    assert_int_equal(tf.records, want_messages);
    assert_int_equal(max_dropped, want_max_dropped);
    /* END is sticky: asking again does not invent records */
    assert_int_equal(tracefile_next(&tf, &p, &len), TRACEFILE_END);
    assert_int_equal(tracefile_close(&tf), TRACEFILE_OK);
}

static void test_exec_loop(void **state) { (void)state; check_trace("exec_loop.trace", 1219, 0); }
static void test_mixed_syscalls(void **state) { (void)state; check_trace("mixed_syscalls.trace", 1235, 0); }
static void test_redis_rw(void **state) { (void)state; check_trace("redis_rw.trace", 39388, 865); }
static void test_drops(void **state) { (void)state; check_trace("drops.trace", 1692, 18311); }

/* ---- crafted files ---- */

/* A growable byte buffer for building files. */
struct buf {
    uint8_t *data;
    size_t len, cap;
};

static void buf_add(struct buf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2;
        b->data = realloc(b->data, b->cap);
        assert_non_null(b->data);
    }
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void buf_le64(struct buf *b, uint64_t v)
{
    uint8_t le[8];
    store_le64(le, v);
    buf_add(b, le, 8);
}

/* magic + config record */
static void buf_header(struct buf *b, const char *config)
{
    buf_add(b, TRACEFILE_MAGIC, TRACEFILE_MAGIC_LEN);
    buf_le64(b, strlen(config));
    buf_add(b, config, strlen(config));
}

static void buf_record(struct buf *b, const void *p, size_t n)
{
    buf_le64(b, n);
    buf_add(b, p, n);
}

/* Opens the bytes as a trace file; returns the open status. On OK the
 * tracefile is left open in *tf and the path in path for the caller. */
static enum tracefile_status open_bytes(struct buf *b, struct tracefile *tf, char *path)
{
    scratch_file(path, b->data, b->len);
    enum tracefile_status st = tracefile_open(tf, path);
    if (st != TRACEFILE_OK) {
        assert_null(tf->fp);
        unlink(path);
    }
    return st;
}

static enum tracefile_status open_status(struct buf *b)
{
    char path[64];
    struct tracefile tf;
    enum tracefile_status st = open_bytes(b, &tf, path);
    if (st == TRACEFILE_OK) {
        tracefile_close(&tf);
        unlink(path);
    }
    return st;
}

static const uint8_t sample_pkt[] = {0x08, 0x00, 0x22, 0x00, 0x00, 0x00, 0x00, 0x00, 0x18, 0x01};

static void test_not_trace(void **state)
{
    (void)state;
    struct buf b = {0};
    buf_add(&b, "tracereplay filE", 16);
    buf_le64(&b, 13);
    buf_add(&b, "{\"version\":1}", 13);
    buf_record(&b, sample_pkt, sizeof(sample_pkt));
    assert_int_equal(open_status(&b), TRACEFILE_NOT_TRACE);

    b.len = 0;   /* empty file */
    assert_int_equal(open_status(&b), TRACEFILE_NOT_TRACE);

    b.len = 0;   /* shorter than the magic */
    buf_add(&b, "tracereplay", 11);
    assert_int_equal(open_status(&b), TRACEFILE_NOT_TRACE);

    b.len = 0;   /* a text file */
    const char *text = "this is certainly not a tracereplay file\n";
    buf_add(&b, text, strlen(text));
    assert_int_equal(open_status(&b), TRACEFILE_NOT_TRACE);
    free(b.data);

    struct tracefile tf;
    assert_int_equal(tracefile_open(&tf, "/nonexistent/dir/x.trace"), TRACEFILE_IO_ERROR);
    assert_non_null(tracefile_strerror(TRACEFILE_NOT_TRACE));
}

static void test_truncated(void **state)
{
    (void)state;
    struct tracefile tf;
    char path[64];
    const uint8_t *p;
    size_t len;

    /* inside a record length: one good record, then 3 of 8 length bytes */
    struct buf b = {0};
    buf_header(&b, "{\"version\":1}");
    buf_record(&b, sample_pkt, sizeof(sample_pkt));
    buf_add(&b, "\x0a\x00\x00", 3);
    assert_int_equal(open_bytes(&b, &tf, path), TRACEFILE_OK);
    assert_int_equal(tracefile_next(&tf, &p, &len), TRACEFILE_OK);
    assert_int_equal(len, sizeof(sample_pkt));
    assert_memory_equal(p, sample_pkt, len);
    assert_int_equal(tracefile_next(&tf, &p, &len), TRACEFILE_TRUNCATED);
    tracefile_close(&tf);
    unlink(path);

    /* inside a record: length says 10, only 4 bytes follow */
    b.len = 0;
    buf_header(&b, "{\"version\":1}");
    buf_le64(&b, sizeof(sample_pkt));
    buf_add(&b, sample_pkt, 4);
    assert_int_equal(open_bytes(&b, &tf, path), TRACEFILE_OK);
    assert_int_equal(tracefile_next(&tf, &p, &len), TRACEFILE_TRUNCATED);
    tracefile_close(&tf);
    unlink(path);

    /* a length with no record bytes at all */
    b.len = 0;
    buf_header(&b, "{\"version\":1}");
    buf_le64(&b, sizeof(sample_pkt));
    assert_int_equal(open_bytes(&b, &tf, path), TRACEFILE_OK);
    assert_int_equal(tracefile_next(&tf, &p, &len), TRACEFILE_TRUNCATED);
    tracefile_close(&tf);
    unlink(path);

    /* magic only, the config length missing */
    b.len = 0;
    buf_add(&b, TRACEFILE_MAGIC, TRACEFILE_MAGIC_LEN);
    enum tracefile_status st = open_status(&b);
    assert_true(st == TRACEFILE_TRUNCATED || st == TRACEFILE_BAD_CONFIG);
    free(b.data);
}

static void test_record_too_large(void **state)
{
    (void)state;
    struct tracefile tf;
    char path[64];
    const uint8_t *p;
    size_t len;
    struct buf b = {0};
    buf_header(&b, "{\"version\":1}");
    buf_le64(&b, (uint64_t)TRACEFILE_RECORD_MAX + 1);
    buf_add(&b, sample_pkt, sizeof(sample_pkt));
    assert_int_equal(open_bytes(&b, &tf, path), TRACEFILE_OK);
    assert_int_equal(tracefile_next(&tf, &p, &len), TRACEFILE_RECORD_TOO_LARGE);
    tracefile_close(&tf);
    unlink(path);

    /* an absurd length must not be trusted either */
    b.len = 0;
    buf_header(&b, "{\"version\":1}");
    buf_le64(&b, UINT64_MAX);
    assert_int_equal(open_bytes(&b, &tf, path), TRACEFILE_OK);
    assert_int_equal(tracefile_next(&tf, &p, &len), TRACEFILE_RECORD_TOO_LARGE);
    tracefile_close(&tf);
    unlink(path);

    /* exactly 1 MiB is allowed, as in gVisor */
    b.len = 0;
    buf_header(&b, "{\"version\":1}");
    uint8_t *big = calloc(1, TRACEFILE_RECORD_MAX);
    assert_non_null(big);
    memcpy(big, sample_pkt, sizeof(sample_pkt));
    big[TRACEFILE_RECORD_MAX - 1] = 0x5a;
    buf_record(&b, big, TRACEFILE_RECORD_MAX);
    assert_int_equal(open_bytes(&b, &tf, path), TRACEFILE_OK);
    assert_int_equal(tracefile_next(&tf, &p, &len), TRACEFILE_OK);
    assert_int_equal(len, TRACEFILE_RECORD_MAX);
    assert_memory_equal(p, big, len);
    assert_int_equal(tracefile_next(&tf, &p, &len), TRACEFILE_END);
    tracefile_close(&tf);
    unlink(path);

    /* and the writer refuses what the reader would refuse */
    scratch_dir(path);
    char out[128];
    snprintf(out, sizeof(out), "%s/w.trace", path);
    assert_int_equal(tracefile_create(&tf, out, 1), TRACEFILE_OK);
    uint8_t *bigger = calloc(1, TRACEFILE_RECORD_MAX + 1);
    assert_non_null(bigger);
    assert_int_equal(tracefile_append(&tf, bigger, TRACEFILE_RECORD_MAX + 1), TRACEFILE_RECORD_TOO_LARGE);
    assert_int_equal(tracefile_close(&tf), TRACEFILE_OK);
    scratch_dir_remove(path);
    free(bigger);
    free(big);
    free(b.data);
}

static void test_bad_config(void **state)
{
    (void)state;
    struct buf b = {0};
    const char *bad[] = {
        "{\"foo\":1}",          /* no version */
        "{\"version\":0}",      /* version 0 is not a wire version */
        "{\"version\":\"1\"}",  /* not a number */
        "{\"version\":}",
        "{\"version\"",
        "{}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        b.len = 0;
        buf_header(&b, bad[i]);
        buf_record(&b, sample_pkt, sizeof(sample_pkt));
        enum tracefile_status st = open_status(&b);
        if (st != TRACEFILE_BAD_CONFIG)
            fail_msg("config %s: got %s, want BAD_CONFIG", bad[i], tracefile_strerror(st));
    }

    /* length 0 */
    b.len = 0;
    buf_add(&b, TRACEFILE_MAGIC, TRACEFILE_MAGIC_LEN);
    buf_le64(&b, 0);
    buf_record(&b, sample_pkt, sizeof(sample_pkt));
    assert_int_equal(open_status(&b), TRACEFILE_BAD_CONFIG);

    /* huge lengths */
    const uint64_t huge[] = {TRACEFILE_CONFIG_MAX, (uint64_t)1 << 40, UINT64_MAX};
    for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
        b.len = 0;
        buf_add(&b, TRACEFILE_MAGIC, TRACEFILE_MAGIC_LEN);
        buf_le64(&b, huge[i]);
        buf_add(&b, "{\"version\":1}", 13);
        assert_int_equal(open_status(&b), TRACEFILE_BAD_CONFIG);
    }

    /* accepted spellings: gVisor writes a space after the colon */
    const char *good[] = {"{\"version\": 1}", "{\"version\":1}", " { \"version\" : 3 } "};
    const uint32_t want[] = {1, 1, 3};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        b.len = 0;
        buf_header(&b, good[i]);
        struct tracefile tf;
        char path[64];
        assert_int_equal(open_bytes(&b, &tf, path), TRACEFILE_OK);
        assert_int_equal(tf.version, want[i]);
        tracefile_close(&tf);
        unlink(path);
    }
    free(b.data);
}

/* Offset of the first record: after the magic and the config record. */
static size_t records_offset(const uint8_t *file, size_t len)
{
    assert_true(len >= TRACEFILE_MAGIC_LEN + 8);
    uint64_t clen = load_le64(file + TRACEFILE_MAGIC_LEN);
    assert_true(clen < len);
    return TRACEFILE_MAGIC_LEN + 8 + (size_t)clen;
}

static void test_writer_round_trip(void **state)
{
    (void)state;
    struct trace_pkts t;
    trace_load("exec_loop.trace", &t);
    assert_int_equal(t.n, 1219);

    char dir[64], out[128];
    scratch_dir(dir);
    snprintf(out, sizeof(out), "%s/copy.trace", dir);

    struct tracefile w;
    assert_int_equal(tracefile_create(&w, out, 1), TRACEFILE_OK);
    for (size_t i = 0; i < t.n; i++)
        assert_int_equal(tracefile_append(&w, t.pkt[i], t.len[i]), TRACEFILE_OK);
    assert_int_equal(w.records, t.n);
    assert_int_equal(tracefile_flush(&w), TRACEFILE_OK);
    assert_int_equal(tracefile_close(&w), TRACEFILE_OK);

    /* read back: the same packets in the same order */
    struct tracefile r;
    assert_int_equal(tracefile_open(&r, out), TRACEFILE_OK);
    assert_int_equal(r.version, 1);
    const uint8_t *p;
    size_t len;
    size_t i = 0;
    enum tracefile_status st;
    while ((st = tracefile_next(&r, &p, &len)) == TRACEFILE_OK) {
        assert_true(i < t.n);
        assert_int_equal(len, t.len[i]);
        assert_memory_equal(p, t.pkt[i], len);
        i++;
    }
    assert_int_equal(st, TRACEFILE_END);
    assert_int_equal(i, t.n);
    tracefile_close(&r);

    /* byte level: config is exactly {"version":1}; the records are identical */
    char orig_path[4096];
    trace_path(orig_path, sizeof(orig_path), "exec_loop.trace");
    size_t olen, nlen;
    uint8_t *orig = slurp(orig_path, &olen);
    uint8_t *copy = slurp(out, &nlen);
    assert_memory_equal(copy, TRACEFILE_MAGIC, TRACEFILE_MAGIC_LEN);
    assert_int_equal(load_le64(copy + TRACEFILE_MAGIC_LEN), 13);
    assert_memory_equal(copy + TRACEFILE_MAGIC_LEN + 8, "{\"version\":1}", 13);
    size_t ooff = records_offset(orig, olen), noff = records_offset(copy, nlen);
    assert_int_equal(olen - ooff, nlen - noff);
    assert_memory_equal(orig + ooff, copy + noff, olen - ooff);
    free(orig);
    free(copy);

    /* tracefile_create never clobbers an existing file */
    struct stat before, after;
    assert_int_equal(stat(out, &before), 0);
    assert_int_equal(tracefile_create(&w, out, 1), TRACEFILE_IO_ERROR);
    assert_null(w.fp);
    assert_int_equal(stat(out, &after), 0);
    assert_int_equal(after.st_size, before.st_size);
    assert_int_equal(tracefile_open(&r, out), TRACEFILE_OK);   /* still readable */
    tracefile_close(&r);

    scratch_dir_remove(dir);
    trace_free(&t);
}

static void test_writer_empty_and_version(void **state)
{
    (void)state;
    char dir[64], out[128];
    scratch_dir(dir);
    snprintf(out, sizeof(out), "%s/empty.trace", dir);
    struct tracefile w;
    assert_int_equal(tracefile_create(&w, out, 7), TRACEFILE_OK);
    assert_int_equal(tracefile_close(&w), TRACEFILE_OK);
    struct tracefile r;
    assert_int_equal(tracefile_open(&r, out), TRACEFILE_OK);
    assert_int_equal(r.version, 7);
    const uint8_t *p;
    size_t len;
    assert_int_equal(tracefile_next(&r, &p, &len), TRACEFILE_END);
    tracefile_close(&r);

    /* an existing file from mkstemp is not overwritten either */
    char tmp[64];
    scratch_file(tmp, "keep", 4);
    assert_int_equal(tracefile_create(&w, tmp, 1), TRACEFILE_IO_ERROR);
    size_t n;
    uint8_t *kept = slurp(tmp, &n);
    assert_int_equal(n, 4);
    assert_memory_equal(kept, "keep", 4);
    free(kept);
    unlink(tmp);
    scratch_dir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exec_loop),
        cmocka_unit_test(test_mixed_syscalls),
        cmocka_unit_test(test_redis_rw),
        cmocka_unit_test(test_drops),
        cmocka_unit_test(test_not_trace),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_record_too_large),
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_writer_round_trip),
        cmocka_unit_test(test_writer_empty_and_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
