/* test_line_sinks.c - the sinks that write lines (storage/sink.h:
 * sink_ndjson_open, sink_text_open; storage/line_writer.h): what reaches
 * the file, rotation, accounting of failed writes, and the text format. */
#include "unit_util.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <openssl/evp.h>

#include "batch.h"
#include "decode.h"
#include "event_json.h"
#include "pipeline.h"
#include "sink.h"
#include "strbuf.h"
#include "gvisor/syscall.pb-c.h"

static struct decoder dec;

/* test_text_unchanged_on_traces */
#define EXEC_LOOP_TEXT_SHA256 "fc7a8c580dcc86704bed18ca82208d15a8e2acee31ad00d74480184e6b4b3f7d"
#define MIXED_SYSCALLS_TEXT_SHA256 "307d7c6cbcfe97f62687f8e6d77efc0184db2dbbd214407dc8e1d042001c4453"
#define REDIS_RW_TEXT_SHA256 "1a567fba6cb2fc24d65ccbf2c13e78e5f652a015648c01c54ad0fe1ba068a643"
#define DROPS_TEXT_SHA256 "efd0fc7f3b933e2186f8b203642abbb4f359dc2345f1f59d58a837eacfb48187"

static int setup(void **state)
{
    (void)state;
    decoder_init(&dec);
    return 0;
}

static struct batch *new_batch(size_t max_events)
{
    struct batch_limits lim = {.max_events = max_events, .max_bytes = 64u << 20};
    struct batch *b = batch_new(&lim);
    assert_non_null(b);
    return b;
}

static void push(struct batch *b, const uint8_t *pkt, size_t len, uint64_t conn_id)
{
    struct wire_header h;
    assert_int_equal(wire_header_parse(pkt, len, &h), WIRE_OK);
    struct event *ev = batch_push(b, pkt, len);
    assert_non_null(ev);
    decode_event(&dec, &b->arena, &h, ev->raw, len, ev);
    ev->conn_id = conn_id;
    ev->recv_ns = 1764469991123456789 + (int64_t)b->count;
}

/* Packets [from, to) of t as one batch. */
static void fill(struct batch *b, const struct trace_pkts *t, size_t from, size_t to)
{
    batch_reset(b);
    for (size_t i = from; i < to && i < t->n; i++)
        push(b, t->pkt[i], t->len[i], 7);
}

static size_t count_lines(const uint8_t *data, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += data[i] == '\n';
    return n;
}

static struct sink *open_ndjson(const char *path, uint64_t max_bytes, unsigned keep)
{
    struct sink_ndjson_options o = {.path = path, .max_bytes = max_bytes, .keep = keep};
    char err[512] = "";
    struct sink *s = sink_ndjson_open(&o, err, sizeof(err));
    if (!s)
        fail_msg("sink_ndjson_open(%s): %s", path, err);
    assert_string_equal(s->ops->name, "ndjson");
    assert_true(s->ops->needs_writer_thread);
    assert_int_equal(s->first_conn_id, 1);
    return s;
}

/* What the sink should have written for b: event_json.h's lines. */
static void expected_lines(struct strbuf *out, const struct batch *b)
{
    for (size_t i = 0; i < b->count; i++)
        assert_int_equal(event_json_render(out, &b->events[i]), 0);
}

static void test_ndjson_appends_batches(void **state)
{
    (void)state;
    struct trace_pkts t;
    trace_load("exec_loop.trace", &t);
    char dir[64], path[128];
    scratch_dir(dir);
    snprintf(path, sizeof(path), "%s/events.ndjson", dir);
    struct batch *b = new_batch(512);
    struct strbuf want = {0};

    struct sink *s = open_ndjson(path, 0, 5);
    fill(b, &t, 0, 300);
    sink_write_batch(s, b);
    assert_int_equal(b->result.stored, 300);
    assert_int_equal(b->result.failed, 0);
    expected_lines(&want, b);
    /* Written at the end of the batch, not at close. */
    size_t len;
    uint8_t *got = slurp(path, &len);
    assert_int_equal(len, want.len);
    assert_memory_equal(got, want.data, len);
    free(got);
    sink_close(s);

    /* A restart appends to the file. */
    s = open_ndjson(path, 0, 5);
    fill(b, &t, 300, 500);
    sink_write_batch(s, b);
    assert_int_equal(b->result.stored, 200);
    expected_lines(&want, b);
    sink_close(s);
    got = slurp(path, &len);
    assert_int_equal(len, want.len);
    assert_memory_equal(got, want.data, len);
    assert_int_equal(count_lines(got, len), 500);
    free(got);

    strbuf_free(&want);
    batch_free(b);
    trace_free(&t);
    scratch_dir_remove(dir);
}

/* Small files, two kept: PATH.2, PATH.1, PATH read in that order are the
 * tail of the stream, cut only between lines, each file within the limit. */
static void test_ndjson_rotates(void **state)
{
    (void)state;
    struct trace_pkts t;
    trace_load("mixed_syscalls.trace", &t);
    char dir[64], path[128], name[160];
    scratch_dir(dir);
    snprintf(path, sizeof(path), "%s/events.ndjson", dir);
    const uint64_t max = 16 * 1024;
    struct sink *s = open_ndjson(path, max, 2);
    struct batch *b = new_batch(256);
    struct strbuf want = {0};
    for (size_t from = 0; from < t.n; from += 100) {
        fill(b, &t, from, from + 100);
        sink_write_batch(s, b);
        assert_int_equal(b->result.stored, b->count);
        expected_lines(&want, b);
    }
    sink_close(s);
    assert_true(want.len > 4 * max);   /* enough to rotate several times */

    struct strbuf kept = {0};
    for (int i = 2; i >= 0; i--) {
        if (i)
            snprintf(name, sizeof(name), "%s.%d", path, i);
        else
            snprintf(name, sizeof(name), "%s", path);
        size_t len;
        uint8_t *data = slurp(name, &len);
        assert_true(len > 0);
        assert_true(len <= max);
        assert_int_equal(data[len - 1], '\n');
        strbuf_append(&kept, data, len);
        free(data);
    }
    snprintf(name, sizeof(name), "%s.3", path);
    assert_int_not_equal(access(name, F_OK), 0);
    assert_true(kept.len < want.len);
    assert_memory_equal(want.data + want.len - kept.len, kept.data, kept.len);
    assert_int_equal(want.data[want.len - kept.len - 1], '\n');

    strbuf_free(&kept);
    strbuf_free(&want);
    batch_free(b);
    trace_free(&t);
    scratch_dir_remove(dir);
}

/* A full disk: every event of the batch counted as failed, none stored. */
static void test_ndjson_write_failure_counted(void **state)
{
    (void)state;
    if (access("/dev/full", W_OK) != 0)
        skip();
    struct trace_pkts t;
    trace_load("exec_loop.trace", &t);
    struct sink *s = open_ndjson("/dev/full", 1024, 2);   /* not a regular file: never rotated */
    struct batch *b = new_batch(64);
    for (int round = 0; round < 2; round++) {
        fill(b, &t, 0, 50);
        sink_write_batch(s, b);
        assert_int_equal(b->result.stored, 0);
        assert_int_equal(b->result.failed, 50);
    }
    sink_close(s);
    batch_free(b);
    trace_free(&t);
}

static bool has_nul(const uint8_t *data, size_t len)
{
    return memchr(data, '\0', len) != NULL;
}

/* logrotate's copytruncate empties the file behind the sink's back; a write
 * that then fails part-way must be cut back to what the file really held
 * (nothing), not to the size the sink remembers, which would leave the
 * partial line there or pad the file with NUL bytes up to that size. The
 * write fails part-way through RLIMIT_FSIZE (EFBIG, SIGXFSZ ignored). */
static void test_ndjson_cut_back_after_outside_truncation(void **state)
{
    (void)state;
    struct trace_pkts t;
    trace_load("exec_loop.trace", &t);
    char dir[64], path[128];
    scratch_dir(dir);
    snprintf(path, sizeof(path), "%s/events.ndjson", dir);
    struct sink *s = open_ndjson(path, 0, 5);
    struct batch *b = new_batch(512);
    fill(b, &t, 0, 200);
    sink_write_batch(s, b);
    uint64_t first_stored = b->result.stored;
    struct stat st;
    stat(path, &st);
    off_t first_size = st.st_size;

    int truncated = truncate(path, 0);
    struct rlimit saved, small = {.rlim_cur = 1000, .rlim_max = RLIM_INFINITY};
    getrlimit(RLIMIT_FSIZE, &saved);
    small.rlim_max = saved.rlim_max;
    void (*old_xfsz)(int) = signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &small);
    fill(b, &t, 200, 400);
    sink_write_batch(s, b);
    setrlimit(RLIMIT_FSIZE, &saved);
    signal(SIGXFSZ, old_xfsz);
    uint64_t failed = b->result.failed, stored = b->result.stored;
    size_t after_len;
    uint8_t *after = slurp(path, &after_len);
    bool after_nul = has_nul(after, after_len);
    free(after);

    /* Writing works again: the file holds exactly the next batch. */
    fill(b, &t, 400, 500);
    struct strbuf want = {0};
    expected_lines(&want, b);
    sink_write_batch(s, b);
    sink_close(s);
    size_t len;
    uint8_t *got = slurp(path, &len);
    bool same = len == want.len && memcmp(got, want.data, len) == 0;
    free(got);
    strbuf_free(&want);
    batch_free(b);
    trace_free(&t);
    scratch_dir_remove(dir);

    assert_int_equal(first_stored, 200);
    assert_true(first_size > 1000);   /* more than the limit: the old size cannot be cut back to */
    assert_int_equal(truncated, 0);
    assert_int_equal(failed, 200);
    assert_int_equal(stored, 0);
    if (after_len != 0 || after_nul)
        fail_msg("after the failed write the emptied file holds %zu bytes%s, not 0", after_len,
                 after_nul ? " with NULs" : "");
    assert_true(same);
}

static void test_open_failures_name_the_path(void **state)
{
    (void)state;
    char err[512] = "";
    struct sink_ndjson_options o = {.path = "/nonexistent-dir/x.ndjson", .max_bytes = 0, .keep = 1};
    assert_null(sink_ndjson_open(&o, err, sizeof(err)));
    assert_non_null(strstr(err, "/nonexistent-dir/x.ndjson"));
    err[0] = '\0';
    assert_null(sink_text_open("/nonexistent-dir/x.txt", err, sizeof(err)));
    assert_non_null(strstr(err, "/nonexistent-dir/x.txt"));
}

/* ---- several sinks (tee) ---- */

/* Runs fn with stderr (the log) going to a scratch file; returns what was
 * logged, malloc'd. */
static char *capture_log(void (*fn)(void *), void *arg)
{
    char path[64];
    scratch_file(path, "", 0);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    int fd = open(path, O_WRONLY | O_APPEND);
    dup2(fd, STDERR_FILENO);
    close(fd);
    fn(arg);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    size_t len;
    uint8_t *data = slurp(path, &len);
    unlink(path);
    char *text = malloc(len + 1);
    memcpy(text, data, len);
    text[len] = '\0';
    free(data);
    return text;
}

static int count_substr(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

struct tee_run {
    const struct trace_pkts *t;
    int batches;
    uint64_t discarded;    /* the primary's result, summed */
};

/* discard + ndjson to a full disk, batch after batch, then finish. */
static void run_failing_tee(void *arg)
{
    struct tee_run *run = arg;
    struct sink *sinks[2] = {sink_discard_open(), open_ndjson("/dev/full", 0, 1)};
    char err[256];
    struct sink *tee = sink_tee_open(sinks, 2, err, sizeof(err));
    assert_non_null(tee);
    struct batch *b = new_batch(64);
    for (int i = 0; i < run->batches; i++) {
        fill(b, run->t, 0, 20);
        sink_write_batch(tee, b);
        run->discarded += b->result.discarded;
    }
    sink_finish(tee, 1);
    sink_close(tee);
    batch_free(b);
}

/* A secondary sink that fails every batch is logged at most every 10 s
 * (here: once, then the total at the end), not once per batch, and what it
 * lost is counted; the primary's result is the batch's. */
static void test_tee_failing_secondary_logged_rate_limited(void **state)
{
    (void)state;
    if (access("/dev/full", W_OK) != 0)
        skip();
    struct trace_pkts t;
    trace_load("exec_loop.trace", &t);
    struct tee_run run = {.t = &t, .batches = 100};
    char *log = capture_log(run_failing_tee, &run);
    int tee_lines = count_substr(log, "ndjson sink:");
    printf("%s", log);
    bool total = strstr(log, "(2000 in all;") != NULL;
    free(log);
    trace_free(&t);
    assert_int_equal(run.discarded, 100 * 20);
    if (tee_lines > 2)
        fail_msg("the failing ndjson sink was logged %d times for 100 batches (at most every 10 s wanted)",
                 tee_lines);
    assert_true(total);   /* the loss is counted: the end of the run says how many */
}

/* A later sink whose reader stopped reading (a FIFO held open, never read)
 * blocks the writer thread in write(). Shutdown must still end: the
 * pipeline cuts the tee off after its grace, the tee passes that on to the
 * blocked sink at once, and the first sink's counts are the result. */
static void test_tee_blocked_secondary_cut_off_at_finish(void **state)
{
    (void)state;
    struct trace_pkts t;
    trace_load("exec_loop.trace", &t);
    char dir[64], fifo[128];
    scratch_dir(dir);
    snprintf(fifo, sizeof(fifo), "%s/out.fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    int reader = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    assert_true(reader >= 0);
    struct sink *sinks[2] = {sink_discard_open(), open_ndjson(fifo, 0, 1)};
    char err[256];
    struct sink *tee = sink_tee_open(sinks, 2, err, sizeof(err));
    assert_non_null(tee);
    scratch_dir_remove(dir);   /* both ends are open: nothing is left behind even if the alarm fires */
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct pipeline p;
    struct pipeline_config cfg = {.limits = {.max_events = 512, .max_bytes = 64u << 20}, .queue_max = 4};
    assert_int_equal(pipeline_init(&p, &loop, tee, &cfg, NULL, NULL, NULL), 0);
    for (int i = 0; i < 3; i++) {   /* far more than the pipe's 64 KiB */
        fill(pipeline_current(&p), &t, 0, 300);
        pipeline_current(&p)->counts.received = 300;
        assert_int_equal(pipeline_seal(&p), 0);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    alarm(30);   /* without the cut-off this never returns */
    pipeline_finish(&p);
    alarm(0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    uv_run(&loop, UV_RUN_DEFAULT);
    pipeline_free(&p);
    uv_loop_close(&loop);
    sink_close(tee);
    close(reader);
    trace_free(&t);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("finish with a blocked secondary sink took %.3f s\n", took);
    assert_true(took < 5.0);   /* 2 s grace */
    assert_int_equal(p.result.discarded, 900);   /* the first sink's result */
    assert_int_equal(p.result.failed, 0);
}

/* ---- symbolic links ---- */

static size_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (size_t)st.st_size : 0;
}

/* A link planted at the path (a shared, writable log directory) must not
 * send events into the file it points to: opening refuses it, by name. */
static void test_symlink_refused_at_open(void **state)
{
    (void)state;
    char dir[64], victim[128], ndjson[128], text[128];
    scratch_dir(dir);
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    snprintf(ndjson, sizeof(ndjson), "%s/events.ndjson", dir);
    snprintf(text, sizeof(text), "%s/events.txt", dir);
    FILE *f = fopen(victim, "w");
    assert_non_null(f);
    fputs("precious\n", f);
    fclose(f);
    int linked = symlink(victim, ndjson) | symlink(victim, text);

    char nd_err[512] = "", tx_err[512] = "";
    struct sink_ndjson_options o = {.path = ndjson, .max_bytes = 0, .keep = 1};
    struct sink *nd = sink_ndjson_open(&o, nd_err, sizeof(nd_err));
    struct sink *tx = sink_text_open(text, tx_err, sizeof(tx_err));
    if (nd)
        sink_close(nd);
    if (tx)
        sink_close(tx);
    size_t victim_size = file_size(victim);
    scratch_dir_remove(dir);

    assert_int_equal(linked, 0);
    assert_null(nd);
    assert_null(tx);
    assert_non_null(strstr(nd_err, ndjson));
    assert_non_null(strstr(nd_err, "symbolic link"));
    assert_non_null(strstr(tx_err, text));
    assert_non_null(strstr(tx_err, "symbolic link"));
    assert_int_equal(victim_size, 9);
}

/* Rotation renames the file away and opens the path anew: a link planted
 * there meanwhile must be refused too. The race is made certain here: the
 * open right after the rename fails (no descriptors left), the link goes in,
 * and the next batch's reopen finds it. */
static void test_symlink_refused_after_rotation(void **state)
{
    (void)state;
    struct trace_pkts t;
    trace_load("exec_loop.trace", &t);
    char dir[64], path[128], victim[128];
    scratch_dir(dir);
    snprintf(path, sizeof(path), "%s/events.ndjson", dir);
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    int vfd = open(victim, O_WRONLY | O_CREAT | O_EXCL, 0600);
    close(vfd);
    struct sink *s = open_ndjson(path, 16 * 1024, 1);
    struct batch *b = new_batch(512);
    fill(b, &t, 0, 20);
    sink_write_batch(s, b);
    uint64_t stored_first = b->result.stored;

    /* Enough for a rotation; the reopen after the rename fails. */
    struct rlimit saved, none;
    getrlimit(RLIMIT_NOFILE, &saved);
    none = saved;
    none.rlim_cur = 3;
    setrlimit(RLIMIT_NOFILE, &none);
    fill(b, &t, 20, 200);
    sink_write_batch(s, b);
    setrlimit(RLIMIT_NOFILE, &saved);
    uint64_t failed_rotating = b->result.failed;
    char rotated[160];
    snprintf(rotated, sizeof(rotated), "%s.1", path);
    bool was_rotated = access(rotated, F_OK) == 0 && access(path, F_OK) != 0;

    int linked = symlink(victim, path);
    fill(b, &t, 200, 205);   /* less than max_bytes: no rotation in between */
    sink_write_batch(s, b);
    uint64_t failed_linked = b->result.failed, stored_linked = b->result.stored;
    sink_close(s);
    size_t victim_size = file_size(victim);
    batch_free(b);
    trace_free(&t);
    scratch_dir_remove(dir);

    assert_int_equal(stored_first, 20);
    assert_true(failed_rotating > 0);
    assert_true(was_rotated);
    assert_int_equal(linked, 0);
    assert_int_equal(stored_linked, 0);
    assert_int_equal(failed_linked, 5);   /* counted, not written through the link */
    assert_int_equal(victim_size, 0);
}

/* ---- text ---- */

static bool all_printable_lines(const uint8_t *data, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (data[i] != '\n' && (data[i] < 0x20 || data[i] >= 0x7f))
            return false;
    return true;
}

/* Packs msg as a packet of type into b. */
static void push_message(struct batch *b, uint16_t type, const ProtobufCMessage *msg)
{
    static uint8_t payload[8192], pkt[8300];
    size_t plen = protobuf_c_message_get_packed_size(msg);
    assert_true(plen <= sizeof(payload));
    protobuf_c_message_pack(msg, payload);
    push(b, pkt, make_packet(pkt, type, 0, payload, plen), 3);
}

static void test_text_lines(void **state)
{
    (void)state;
    struct trace_pkts t;
    trace_load("mixed_syscalls.trace", &t);
    char dir[64], path[128];
    scratch_dir(dir);
    snprintf(path, sizeof(path), "%s/events.txt", dir);
    char err[512];
    struct sink *s = sink_text_open(path, err, sizeof(err));
    if (!s)
        fail_msg("%s", err);
    assert_string_equal(s->ops->name, "text");
    assert_true(s->ops->needs_writer_thread);
    struct batch *b = new_batch(2048);
    fill(b, &t, 0, t.n);
    size_t n = b->count;
    sink_write_batch(s, b);
    assert_int_equal(b->result.stored, n);

    /* A hostile one: escape sequences, a long value, a time, an exit. */
    batch_reset(b);
    static char long_path[5000];
    memset(long_path, 'a', sizeof(long_path) - 1);
    Gvisor__Common__ContextData ctx = GVISOR__COMMON__CONTEXT_DATA__INIT;
    ctx.container_id = "evil\x1b[2J\r\xff";
    ctx.process_name = "sh";
    ctx.thread_id = 12;
    ctx.thread_group_id = 11;
    ctx.time_ns = 1764469991123456789;
    Gvisor__Syscall__Exit ex = GVISOR__SYSCALL__EXIT__INIT;
    ex.result = 3;
    Gvisor__Syscall__Open open = GVISOR__SYSCALL__OPEN__INIT;
    open.context_data = &ctx;
    open.exit = &ex;
    open.sysno = 2;
    open.pathname = long_path;
    push_message(b, 7, &open.base);
    uint8_t unknown[16];
    push(b, unknown, make_packet(unknown, 999, 0, "\x01\x02", 2), 4);
    sink_write_batch(s, b);
    assert_int_equal(b->result.stored, 2);
    sink_close(s);

    size_t len;
    uint8_t *data = slurp(path, &len);
    char *text = malloc(len + 1);
    memcpy(text, data, len);
    text[len] = '\0';
    assert_int_equal(count_lines(data, len), n + 2);
    assert_true(all_printable_lines(data, len));
    assert_memory_equal(text, "[conn 7] 20", 11);
    assert_non_null(strstr(text, " CONTAINER_START "));
    assert_non_null(strstr(text, " SYSCALL_OPEN exit "));
    assert_non_null(strstr(text, " SYSCALL_OPEN enter "));
    assert_non_null(strstr(text, " runsc-"));
    char *hostile = strstr(text, "[conn 3] 2025-11-30T02:33:11.123456Z evil\\x1b[2J\\r\\xff sh[12/11] SYSCALL_OPEN exit sysno=2 ");
    if (!hostile)
        fail_msg("hostile line not found in the expected form");
    char *end = strchr(hostile, '\n');
    assert_true(end - hostile < 4200);                   /* the long value was cut */
    assert_non_null(strstr(hostile, "...(4999 bytes)"));
    assert_non_null(strstr(hostile, " result=3 errno=0\n"));
    assert_non_null(strstr(text, "[conn 4] "));
    assert_non_null(strstr(text, " type=999 decode_error=unknown_type raw=08"));
    free(text);
    free(data);
    batch_free(b);
    trace_free(&t);
    scratch_dir_remove(dir);
}

/* The text sink's output of every recorded trace, byte for byte, as the
 * release before schema 2 wrote it: the SHA-256 of each file, taken with
 * this same test built on that release (commit e82976e). Storing each
 * event once changed the table and the NDJSON lines, not this. */
static void test_text_unchanged_on_traces(void **state)
{
    (void)state;
    static const struct {
        const char *trace;
        const char *sha256;
    } want[] = {
        {"exec_loop.trace", EXEC_LOOP_TEXT_SHA256},
        {"mixed_syscalls.trace", MIXED_SYSCALLS_TEXT_SHA256},
        {"redis_rw.trace", REDIS_RW_TEXT_SHA256},
        {"drops.trace", DROPS_TEXT_SHA256},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        struct trace_pkts t;
        trace_load(want[i].trace, &t);
        char dir[64], path[128], err[512];
        scratch_dir(dir);
        snprintf(path, sizeof(path), "%s/events.txt", dir);
        struct sink *s = sink_text_open(path, err, sizeof(err));
        if (!s)
            fail_msg("%s", err);
        struct batch *b = new_batch(t.n);
        fill(b, &t, 0, t.n);
        sink_write_batch(s, b);
        assert_int_equal(b->result.stored, t.n);
        sink_close(s);
        size_t len;
        uint8_t *data = slurp(path, &len);
        uint8_t md[EVP_MAX_MD_SIZE];
        unsigned mdlen = 0;
        assert_int_equal(EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL), 1);
        char hex[2 * EVP_MAX_MD_SIZE + 1];
        for (unsigned k = 0; k < mdlen; k++)
            snprintf(hex + 2 * k, 3, "%02x", md[k]);
        print_message("%s: %zu bytes of text, sha256 %s\n", want[i].trace, len, hex);
        if (strcmp(hex, want[i].sha256) != 0)
            fail_msg("%s: the text sink's output changed (sha256 %s, was %s)", want[i].trace, hex, want[i].sha256);
        free(data);
        batch_free(b);
        trace_free(&t);
        scratch_dir_remove(dir);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ndjson_appends_batches),
        cmocka_unit_test(test_ndjson_rotates),
        cmocka_unit_test(test_ndjson_write_failure_counted),
        cmocka_unit_test(test_ndjson_cut_back_after_outside_truncation),
        cmocka_unit_test(test_open_failures_name_the_path),
        cmocka_unit_test(test_tee_failing_secondary_logged_rate_limited),
        cmocka_unit_test(test_tee_blocked_secondary_cut_off_at_finish),
        cmocka_unit_test(test_symlink_refused_at_open),
        cmocka_unit_test(test_symlink_refused_after_rotation),
        cmocka_unit_test(test_text_lines),
        cmocka_unit_test(test_text_unchanged_on_traces),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
