/* Integration: the export features of the real binary. The NDJSON sink next
 * to SQLite (every line parses, same events in the same order as the
 * table), its rotation, the text sink, and `seccheckd export` back to
 * tracereplay files (byte-identical to what --sink record wrote) and to
 * NDJSON (identical to the live stream); bad usage. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "daemon.h"
#include "replay.h"

static const char *const trace_names[] = {"exec_loop", "mixed_syscalls", "redis_rw", "drops"};
#define NTRACES 4
#define COPIES 2   /* each trace over this many connections at once */

static int setup(void **state)
{
    return trace_fixture_setup(state, trace_names, NTRACES);
}

/* ---- replaying ---- */

/* Every trace over `copies` concurrent connections (handshake version 1,
 * but 2 for one of them); returns packets sent. */
static size_t replay_all(const struct daemon *d, const struct trace_fixture *f, int copies)
{
    const struct replay_trace *traces[NTRACES * COPIES];
    uint32_t versions[NTRACES * COPIES];
    size_t sent = 0;
    int n = NTRACES * copies;
    for (int i = 0; i < n; i++) {
        traces[i] = &f->traces[i % NTRACES];
        versions[i] = i == NTRACES - 1 ? 2 : 1;
        sent += traces[i]->count;
    }
    assert_int_equal(replay_concurrently(d->socket, traces, versions, n), 0);
    return sent;
}

/* ---- running `seccheckd export` ---- */

/* Runs argv with stdout into out_path and stderr into err_path (NULL: with
 * stdout); returns the exit status. */
static int run_split(const char *const *argv, const char *out_path, const char *err_path)
{
    pid_t pid = reaper_fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int efd = err_path ? open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600) : fd;
        dup2(fd, 1);
        dup2(efd, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return reaper_wait(pid);
}

static int run(const char *const *argv, const char *out_path) { return run_split(argv, out_path, NULL); }

static char *read_all(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        fail_msg("cannot open %s", path);
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    rewind(fp);
    char *buf = malloc((size_t)size + 1);
    assert_int_equal(fread(buf, 1, (size_t)size, fp), (size_t)size);
    buf[size] = '\0';
    fclose(fp);
    *len = (size_t)size;
    return buf;
}

static bool same_file(const char *a, const char *b)
{
    size_t la, lb;
    char *da = read_all(a, &la), *db = read_all(b, &lb);
    bool same = la == lb && memcmp(da, db, la) == 0;
    free(da);
    free(db);
    return same;
}

/* ---- NDJSON into SQLite for checking: nd(seq, line) in memory ---- */

static sqlite3 *lines_db(void)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE nd(seq INTEGER PRIMARY KEY, file TEXT, line TEXT)", NULL, NULL,
                                  NULL), SQLITE_OK);
    return db;
}

/* Loads every line of path into nd; returns the number of lines. Fails the
 * test if the file does not end with a newline. */
static size_t load_lines(sqlite3 *db, const char *path)
{
    size_t len;
    char *data = read_all(path, &len);
    if (len > 0 && data[len - 1] != '\n')
        fail_msg("%s ends inside a line", path);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO nd(file, line) VALUES(?1, ?2)", -1, &st, NULL), SQLITE_OK);
    size_t n = 0;
    for (char *p = data; p < data + len;) {
        char *nl = memchr(p, '\n', (size_t)(data + len - p));
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, path, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, p, (int)(nl - p), SQLITE_TRANSIENT);
        assert_int_equal(sqlite3_step(st), SQLITE_DONE);
        n++;
        p = nl + 1;
    }
    sqlite3_finalize(st);
    free(data);
    return n;
}

static void attach(sqlite3 *db, const char *path)
{
    char sql[512];
    snprintf(sql, sizeof(sql), "ATTACH '%s' AS ev", path);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
}

/* (a) + (e): SQLite and NDJSON at once; every line parses, one per event;
 * per connection the (msg_type, detail) sequence is the table's; then
 * `export --format ndjson` writes exactly the live stream. */
static void test_ndjson_next_to_sqlite(void **state)
{
    struct trace_fixture *f = *state;
    struct daemon d;
    daemon_prepare(&d);
    char nd_path[400];
    snprintf(nd_path, sizeof(nd_path), "%s/events.ndjson", d.dir);
    const char *args[] = {"--sink", "sqlite,ndjson", "--ndjson-path", nd_path, "--batch-size", "512", NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    char *log = daemon_read_log(&d);
    assert_non_null(strstr(log, "sink sqlite -> "));
    assert_non_null(strstr(log, ", ndjson -> "));
    free(log);
    size_t sent = replay_all(&d, f, COPIES);
    assert_int_equal(daemon_stop(&d), 0);

    sqlite3 *db = lines_db();
    size_t lines = load_lines(db, nd_path);
    attach(db, d.db);
    assert_int_equal(lines, sent);
    assert_int_equal(sqlq(db, "SELECT count(*) FROM ev.events"), (long long)sent);
    assert_int_equal(sqlq(db, "SELECT sum(messages) FROM ev.connections"), (long long)sent);
    assert_int_equal(sqlq(db, "SELECT count(*) FROM nd WHERE NOT json_valid(line)"), 0);
    assert_int_equal(sqlq(db, "SELECT count(DISTINCT json_extract(line, '$.conn_id')) FROM nd"),
                     NTRACES * COPIES);
    /* The k-th line of a connection is its k-th row. */
    assert_int_equal(sqlq(db, "WITH a AS (SELECT json_extract(line, '$.conn_id') AS c,"
                           "   row_number() OVER (PARTITION BY json_extract(line, '$.conn_id') ORDER BY seq) AS k,"
                           "   json_extract(line, '$.msg_type') AS t, json(json_extract(line, '$.detail')) AS dt"
                           "   FROM nd),"
                           " b AS (SELECT conn_id AS c, row_number() OVER (PARTITION BY conn_id ORDER BY id) AS k,"
                           "   msg_type AS t, json(detail) AS dt FROM ev.events)"
                           " SELECT count(*) FROM a JOIN b USING (c, k) WHERE a.t IS b.t AND a.dt IS b.dt"),
                     (long long)sent);
    assert_true(sqlq(db, "SELECT count(*) FROM nd WHERE json_extract(line, '$.container_id')"
                               " LIKE 'runsc-%'") > 0);
    /* Each value once: the context is at the top, not again in detail. */
    assert_int_equal(
        sqlq(db, "SELECT count(*) FROM nd WHERE json_type(line, '$.detail.context_data') IS NOT NULL"), 0);
    sqlite3_close(db);

    /* (e) The export of the database is the live stream, line for line. */
    char out_path[400], msg_path[400];
    snprintf(out_path, sizeof(out_path), "%s/export.ndjson", d.dir);
    snprintf(msg_path, sizeof(msg_path), "%s/export.log", d.dir);
    const char *exp[] = {SECCHECKD_BIN, "export", "--db", d.db, "--format", "ndjson", "--out", out_path, NULL};
    assert_int_equal(run(exp, msg_path), 0);
    assert_true(same_file(nd_path, out_path));

    /* --conn: that connection's lines of the stream, in order; to stdout. */
    const char *one[] = {SECCHECKD_BIN, "export", "--db", d.db, "--format", "ndjson", "--conn", "3", NULL};
    assert_int_equal(run_split(one, out_path, msg_path), 0);
    db = lines_db();
    load_lines(db, nd_path);
    load_lines(db, out_path);
    char sql[2048];
    long long conn3 = sqlq(db, "SELECT count(*) FROM nd WHERE json_extract(line, '$.conn_id') = 3") / 2;
    assert_true(conn3 > 0);
    snprintf(sql, sizeof(sql),
             "WITH a AS (SELECT line, row_number() OVER (ORDER BY seq) AS k FROM nd"
             "   WHERE file = '%s' AND json_extract(line, '$.conn_id') = 3),"
             " b AS (SELECT line, row_number() OVER (ORDER BY seq) AS k FROM nd WHERE file = '%s')"
             " SELECT count(*) FROM a JOIN b USING (k) WHERE a.line = b.line",
             nd_path, out_path);
    assert_int_equal(sqlq(db, sql), conn3);
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM nd WHERE file = '%s'", out_path);
    assert_int_equal(sqlq(db, sql), conn3);
    sqlite3_close(db);
    daemon_cleanup(&d);
}

/* (b) Rotation under a big replay: PATH, PATH.1, PATH.2, no PATH.3; each
 * within the limit (plus at most one line); every line valid JSON. */
static void test_ndjson_rotation(void **state)
{
    struct trace_fixture *f = *state;
    struct daemon d;
    daemon_prepare(&d);
    char nd_path[400], name[420];
    snprintf(nd_path, sizeof(nd_path), "%s/events.ndjson", d.dir);
    const char *args[] = {"--sink", "ndjson", "--ndjson-path", nd_path, "--ndjson-max-size", "64K",
                          "--ndjson-keep", "2", NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    replay_all(&d, f, 1);
    assert_int_equal(daemon_stop(&d), 0);

    sqlite3 *db = lines_db();
    for (int i = 0; i <= 3; i++) {
        if (i)
            snprintf(name, sizeof(name), "%s.%d", nd_path, i);
        else
            snprintf(name, sizeof(name), "%s", nd_path);
        if (i == 3) {
            assert_int_not_equal(access(name, F_OK), 0);
            break;
        }
        struct stat st;
        assert_int_equal(stat(name, &st), 0);
        assert_true(load_lines(db, name) > 0);
        char sql[600];
        snprintf(sql, sizeof(sql), "SELECT max(length(CAST(line AS BLOB)) + 1) FROM nd WHERE file = '%s'", name);
        long long longest = sqlq(db, sql);
        if (i > 0)   /* rotated files are complete; the current one may be short */
            assert_true(st.st_size > 64 * 1024 - longest);
        assert_true(st.st_size <= 64 * 1024 + longest);
    }
    assert_int_equal(sqlq(db, "SELECT count(*) FROM nd WHERE NOT json_valid(line)"), 0);
    /* Oldest first, the kept files continue each other: per connection the
     * receive times only grow. */
    assert_int_equal(sqlq(db, "SELECT count(*) FROM (SELECT json_extract(line, '$.recv_ns') AS t, lag("
                           " json_extract(line, '$.recv_ns')) OVER (PARTITION BY json_extract(line, '$.conn_id')"
                           " ORDER BY CASE WHEN file LIKE '%.2' THEN 0 WHEN file LIKE '%.1' THEN 1 ELSE 2 END, seq)"
                           " AS prev FROM nd) WHERE t < prev"),
                     0);
    sqlite3_close(db);
    char *log = daemon_read_log(&d);
    assert_null(strstr(log, "error"));
    free(log);
    daemon_cleanup(&d);
}

/* (c) The text sink: one line per event, with type names and containers. */
static void test_text_sink(void **state)
{
    struct trace_fixture *f = *state;
    struct daemon d;
    daemon_prepare(&d);
    char path[400];
    snprintf(path, sizeof(path), "%s/events.txt", d.dir);
    const char *args[] = {"--sink", "text", "--text-path", path, NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    size_t sent = replay_all(&d, f, 1);
    assert_int_equal(daemon_stop(&d), 0);
    size_t len;
    char *text = read_all(path, &len);
    size_t lines = 0;
    for (char *p = text; p < text + len; p = strchr(p, '\n') + 1) {
        if (strncmp(p, "[conn ", 6) != 0)
            fail_msg("line %zu does not start with [conn", lines + 1);
        lines++;
    }
    assert_int_equal(lines, sent);
    static const char *const wanted[] = {"] 20", " runsc-", " CONTAINER_START ", " SENTRY_EXEC ",
                                         " SYSCALL_OPEN exit ", " SYSCALL_READ enter ", " result=", " errno="};
    for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++)
        if (!strstr(text, wanted[i]))
            fail_msg("'%s' not in the text output", wanted[i]);
    for (size_t i = 0; i < len; i++)
        if (text[i] != '\n' && (text[i] < 0x20 || text[i] >= 0x7f))
            fail_msg("unescaped byte 0x%02x at %zu", (unsigned char)text[i], i);
    free(text);
    daemon_cleanup(&d);
}

/* A symbolic link planted at the output path (a shared, writable log
 * directory) would send sandbox events into the file it points to: the
 * daemon refuses to start, naming the link, and the target is untouched. */
static void test_line_sinks_refuse_a_symlink(void **state)
{
    (void)state;
    static const char *const sinks[][2] = {{"ndjson", "--ndjson-path"}, {"text", "--text-path"}};
    for (int i = 0; i < 2; i++) {
        struct daemon d;
        daemon_prepare(&d);
        char victim[400], link[400];
        snprintf(victim, sizeof(victim), "%s/victim", d.dir);
        snprintf(link, sizeof(link), "%s/events.out", d.dir);
        int fd = open(victim, O_WRONLY | O_CREAT | O_EXCL, 0600);
        bool ready = fd >= 0 && write(fd, "precious\n", 9) == 9 && symlink(victim, link) == 0;
        if (fd >= 0)
            close(fd);
        const char *args[] = {"--sink", sinks[i][0], sinks[i][1], link, NULL};
        bool started = ready && daemon_start(&d, SECCHECKD_BIN, args);
        int status = daemon_stop(&d);
        char *log = daemon_read_log(&d);
        bool named = strstr(log, "symbolic link") != NULL && strstr(log, link) != NULL;
        free(log);
        struct stat st;
        off_t victim_size = stat(victim, &st) == 0 ? st.st_size : -1;
        daemon_cleanup(&d);
        assert_true(ready);
        assert_false(started);
        assert_int_not_equal(status, 0);
        assert_true(named);
        assert_int_equal(victim_size, 9);
    }
}

/* Which trace a tracereplay file replays to, or -1. */
static int replays_to(const char *path, const struct trace_fixture *f)
{
    struct replay_trace got;
    char err[512];
    if (replay_trace_load(&got, path, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    int which = -1;
    for (int i = 0; i < NTRACES && which < 0; i++)
        if (traces_equal(&got, &f->traces[i]))
            which = i;
    replay_trace_free(&got);
    return which;
}

/* (d) Recorded and exported tracereplay files are the same bytes, and they
 * replay to the original traces. */
static void test_export_trace_round_trip(void **state)
{
    struct trace_fixture *f = *state;
    struct daemon d;
    daemon_prepare(&d);
    char rec[400], out[400], a[500], b[500], msg[400];
    snprintf(rec, sizeof(rec), "%s/recorded", d.dir);
    snprintf(out, sizeof(out), "%s/exported", d.dir);
    snprintf(msg, sizeof(msg), "%s/export.log", d.dir);
    const char *args[] = {"--sink", "sqlite,record", "--record-dir", rec, NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    replay_all(&d, f, COPIES);
    assert_int_equal(daemon_stop(&d), 0);

    const char *exp[] = {SECCHECKD_BIN, "export", "--db", d.db, "--format", "trace", "--out", out, NULL};
    assert_int_equal(run(exp, msg), 0);
    int matched[NTRACES] = {0};
    for (int n = 1; n <= NTRACES * COPIES; n++) {
        snprintf(a, sizeof(a), "%s/client-%04d", rec, n);
        snprintf(b, sizeof(b), "%s/client-%04d", out, n);
        if (!same_file(a, b))
            fail_msg("%s and %s differ", a, b);
        int which = replays_to(b, f);
        assert_true(which >= 0);
        matched[which]++;
    }
    for (int i = 0; i < NTRACES; i++)
        assert_int_equal(matched[i], COPIES);
    snprintf(b, sizeof(b), "%s/client-%04d", out, NTRACES * COPIES + 1);
    assert_int_not_equal(access(b, F_OK), 0);
    /* The handshake version went through: one connection said 2. */
    size_t len;
    int version2 = 0;
    for (int n = 1; n <= NTRACES * COPIES; n++) {
        snprintf(b, sizeof(b), "%s/client-%04d", out, n);
        char *bytes = read_all(b, &len);
        assert_true(len > 16 + 8 + 13);
        version2 += memcmp(bytes + 16, "\x0d\0\0\0\0\0\0\0{\"version\":2}", 8 + 13) == 0;
        free(bytes);
    }
    assert_int_equal(version2, 1);

    /* Exporting again into the same place never overwrites a file. */
    assert_int_equal(run(exp, msg), 1);
    char *text = read_all(msg, &len);
    assert_non_null(strstr(text, "client-0001"));
    assert_non_null(strstr(text, "empty directory"));
    free(text);

    /* --conn: just that connection. */
    snprintf(out, sizeof(out), "%s/one", d.dir);
    const char *one[] = {SECCHECKD_BIN, "export", "--db", d.db, "--format", "trace", "--out", out, "--conn", "5",
                         NULL};
    assert_int_equal(run(one, msg), 0);
    snprintf(a, sizeof(a), "%s/client-0005", rec);
    snprintf(b, sizeof(b), "%s/client-0005", out);
    assert_true(same_file(a, b));
    snprintf(b, sizeof(b), "%s/client-0001", out);
    assert_int_not_equal(access(b, F_OK), 0);
    daemon_cleanup(&d);
}

/* Runs export with args; checks its exit status and that its output names
 * the problem. */
static void expect_failure(const char *dir, const char *const *args, int status, const char *says)
{
    const char *argv[16] = {SECCHECKD_BIN, "export"};
    int n = 2;
    for (int i = 0; args[i]; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    char msg[400];
    snprintf(msg, sizeof(msg), "%s/usage.log", dir);
    assert_int_equal(run(argv, msg), status);
    size_t len;
    char *text = read_all(msg, &len);
    if (!strstr(text, says))
        fail_msg("expected '%s' in: %s", says, text);
    free(text);
}

/* (f) Bad usage and unreadable input: non-zero, with a clear message. */
static void test_export_bad_usage(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    char missing[400], junk[400];
    snprintf(missing, sizeof(missing), "%s/missing.db", d.dir);
    snprintf(junk, sizeof(junk), "%s/junk.db", d.dir);
    FILE *fp = fopen(junk, "w");
    fputs("not a database, not at all, not even close to one", fp);
    fclose(fp);
    expect_failure(d.dir, (const char *const[]){"--db", junk, "--format", "xml", NULL}, 2,
                   "--format: expected ndjson or trace, got 'xml'");
    expect_failure(d.dir, (const char *const[]){"--format", "ndjson", NULL}, 2, "--db PATH is required");
    expect_failure(d.dir, (const char *const[]){"--db", junk, NULL}, 2, "--format ndjson|trace is required");
    expect_failure(d.dir, (const char *const[]){"--db", junk, "--format", "trace", NULL}, 2, "needs --out DIR");
    expect_failure(d.dir, (const char *const[]){"--db", junk, "--format", "ndjson", "--conn", "x", NULL}, 2,
                   "--conn");
    expect_failure(d.dir, (const char *const[]){"--db", junk, "--format", "ndjson", "extra", NULL}, 2,
                   "unexpected argument 'extra'");
    expect_failure(d.dir, (const char *const[]){"--bogus", NULL}, 2, "--help");
    expect_failure(d.dir, (const char *const[]){"--db", missing, "--format", "ndjson", NULL}, 1,
                   "cannot open");
    assert_int_not_equal(access(missing, F_OK), 0);   /* read-only: not created */
    expect_failure(d.dir, (const char *const[]){"--db", junk, "--format", "ndjson", NULL}, 1, junk);
    /* The daemon names the sink it could not open, and starts nothing. */
    const char *argv[] = {SECCHECKD_BIN, "--socket", d.socket, "--db", d.db, "--sink", "sqlite,ndjson",
                          "--ndjson-path", "/nonexistent-dir/events.ndjson", NULL};
    char log[400];
    snprintf(log, sizeof(log), "%s/daemon.out", d.dir);
    assert_int_equal(run(argv, log), 1);
    size_t len;
    char *text = read_all(log, &len);
    assert_non_null(strstr(text, "ndjson sink: cannot open /nonexistent-dir/events.ndjson"));
    free(text);
    daemon_cleanup(&d);
}

/* Issue 19 item 11: a connection the database does not have is an error,
 * not an empty export, and no output is created for it; an existing file
 * is never overwritten by --format ndjson (as --format trace never
 * overwrites a client file), while a FIFO or device still takes the
 * stream; a new file is 0640 like the ndjson sink's. */
static void test_export_refuses_unknown_conn_and_existing_file(void **state)
{
    struct trace_fixture *f = *state;
    struct daemon d;
    daemon_prepare(&d);
    assert_true(daemon_start(&d, SECCHECKD_BIN, NULL));
    assert_int_equal(replay_connection(d.socket, &f->traces[0], f->traces[0].version), 0);
    assert_int_equal(replay_connection(d.socket, &f->traces[1], f->traces[1].version), 0);
    assert_int_equal(daemon_stop(&d), 0);

    char out[400], dir[400];
    snprintf(out, sizeof(out), "%s/conn99.ndjson", d.dir);
    snprintf(dir, sizeof(dir), "%s/conn99", d.dir);
    expect_failure(d.dir, (const char *const[]){"--db", d.db, "--format", "ndjson", "--conn", "99", "--out", out, NULL},
                   1, "--conn 99: ");
    expect_failure(d.dir, (const char *const[]){"--db", d.db, "--format", "ndjson", "--conn", "99", NULL}, 1,
                   "has no such connection (its 2 connections: ids 1 to 2)");
    expect_failure(d.dir, (const char *const[]){"--db", d.db, "--format", "trace", "--conn", "99", "--out", dir, NULL},
                   1, "has no such connection");
    assert_int_not_equal(access(out, F_OK), 0);
    assert_int_not_equal(access(dir, F_OK), 0);

    /* A new file: written, 0640 whatever the umask. */
    snprintf(out, sizeof(out), "%s/all.ndjson", d.dir);
    mode_t mask = umask(0);
    const char *exp[] = {SECCHECKD_BIN, "export", "--db", d.db, "--format", "ndjson", "--out", out, NULL};
    char msg[400];
    snprintf(msg, sizeof(msg), "%s/export.log", d.dir);
    int status = run(exp, msg);
    umask(mask);
    assert_int_equal(status, 0);
    struct stat st;
    assert_int_equal(stat(out, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    size_t len;
    char *first = read_all(out, &len);
    assert_true(len > 0);

    /* Existing: refused, untouched. */
    expect_failure(d.dir, (const char *const[]){"--db", d.db, "--format", "ndjson", "--conn", "1", "--out", out, NULL},
                   1, "never overwrites a file");
    size_t len2;
    char *second = read_all(out, &len2);
    assert_true(len2 == len && memcmp(first, second, len) == 0);
    free(first);
    free(second);

    /* A character device is a stream, not a file to keep. */
    const char *to_null[] = {SECCHECKD_BIN, "export", "--db", d.db, "--format", "ndjson", "--out", "/dev/null", NULL};
    assert_int_equal(run(to_null, msg), 0);
    daemon_cleanup(&d);
}

/* --conn of a connection whose events retention deleted, or none of whose
 * messages was stored, says so and exits 1, as for one that never existed
 * (before: an empty export, exit 0, like a quiet connection). */
static void test_export_conn_without_events(void **state)
{
    struct trace_fixture *f = *state;
    struct daemon d;
    daemon_prepare(&d);
    const char *args[] = {"--retain", "1", NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    assert_int_equal(replay_connection(d.socket, &f->traces[0], f->traces[0].version), 0);
    for (int i = 0; i < 200 && dbq(&d, "SELECT count(*) FROM events WHERE conn_id = 1") <= 0; i++)
        sleep_ms(20);   /* stored first */
    for (int i = 0; i < 30 && dbq(&d, "SELECT count(*) FROM events WHERE conn_id = 1") != 0; i++) {
        sleep_ms(400);   /* newer batches past the retention: connection 1's go */
        assert_int_equal(replay_connection(d.socket, &f->traces[1], f->traces[1].version), 0);
    }
    assert_int_equal(daemon_stop(&d), 0);
    if (dbq(&d, "SELECT count(*) FROM events WHERE conn_id = 1") != 0) {
        char *log = daemon_read_log(&d);
        fail_msg("retention kept connection 1's events: %s", log);
    }
    assert_true(dbq(&d, "SELECT messages FROM connections WHERE id = 1") > 0);
    char dir[400];
    snprintf(dir, sizeof(dir), "%s/conn1", d.dir);
    expect_failure(d.dir, (const char *const[]){"--db", d.db, "--format", "ndjson", "--conn", "1", NULL}, 1,
                   "--conn 1: retention deleted its events (");
    expect_failure(d.dir, (const char *const[]){"--db", d.db, "--format", "trace", "--conn", "1", "--out", dir, NULL},
                   1, "nothing to export");
    assert_int_not_equal(access(dir, F_OK), 0);
    daemon_cleanup(&d);
    /* Every message filtered out. */
    daemon_prepare(&d);
    const char *keep[] = {"--keep-types", "SYSCALL_PTRACE", NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, keep));
    assert_int_equal(replay_connection(d.socket, &f->traces[0], f->traces[0].version), 0);
    assert_int_equal(daemon_stop(&d), 0);
    expect_failure(d.dir, (const char *const[]){"--db", d.db, "--format", "ndjson", "--conn", "1", NULL}, 1,
                   "--conn 1: none of its ");
    daemon_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ndjson_next_to_sqlite),
        cmocka_unit_test(test_ndjson_rotation),
        cmocka_unit_test(test_text_sink),
        cmocka_unit_test(test_line_sinks_refuse_a_symlink),
        cmocka_unit_test(test_export_trace_round_trip),
        cmocka_unit_test(test_export_bad_usage),
        cmocka_unit_test(test_export_refuses_unknown_conn_and_existing_file),
        cmocka_unit_test(test_export_conn_without_events),
    };
    return cmocka_run_group_tests(tests, setup, trace_fixture_teardown);
}
