/* Integration: the tamper-evident batch chain end to end. The real daemon
 * stores replayed traces in small batches (--batch-size 256), then
 * `seccheckd verify` checks the database: it verifies as written, and on
 * copies where one row was altered, one deleted, two batches swapped, it
 * names the first bad batch. Keyed chains (--key-file) need the right key;
 * chains span daemon restarts; alerts are sealed, a sequence's steps and
 * the evicted partial matches included. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <fcntl.h>
#include <sqlite3.h>

#include "daemon.h"
#include "replay.h"

#define BATCH_ARGS "--batch-size", "256", "--flush-ms", "20"

static const char *const trace_names[] = {"redis_rw", "exec_loop", "mixed_syscalls"};
#define NTRACES 3

static int setup(void **state)
{
    return trace_fixture_setup(state, trace_names, NTRACES);
}

/* ---- running `seccheckd verify` ---- */

struct verdict {
    int status;          /* exit code */
    char out[8192];      /* stdout and stderr */
};

static void run_verify(const char *db, const char *key_file, struct verdict *v)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "'%s' verify --db '%s'%s%s%s 2>&1", SECCHECKD_BIN, db,
             key_file ? " --key-file '" : "", key_file ? key_file : "", key_file ? "'" : "");
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(v->out, 1, sizeof(v->out) - 1, p);
    v->out[n] = '\0';
    int st = pclose(p);
    v->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    print_message("$ seccheckd verify --db %s%s\n%s", db, key_file ? " --key-file ..." : "", v->out);
}

/* Exit 0 and "ok: N batches, M events, A alerts verified" (singular for 1) with the database's counts. */
static void assert_verifies(const char *db, const char *key_file)
{
    struct verdict v;
    run_verify(db, key_file, &v);
    char want[160];
    long long batches = db_query_int(db, "SELECT count(*) FROM batches");
    long long events = db_query_int(db, "SELECT count(*) FROM events");
    long long alerts = db_query_int(db, "SELECT coalesce(sum(alerts), 0) FROM batches");
    snprintf(want, sizeof(want), "ok: %lld batch%s, %lld event%s, %lld alert%s verified\n", batches,
             batches == 1 ? "" : "es", events, events == 1 ? "" : "s", alerts, alerts == 1 ? "" : "s");
    if (v.status != 0 || !strstr(v.out, want))
        fail_msg("expected exit 0 and '%s', got exit %d: %s", want, v.status, v.out);
}

/* Exit 1, and the first line names batch `batch` and says `why`. */
static void assert_names_batch(const char *db, const char *key_file, long long batch, const char *why)
{
    struct verdict v;
    run_verify(db, key_file, &v);
    char want[64];
    snprintf(want, sizeof(want), "batch %lld", batch);
    size_t wl = strlen(want);
    bool named = strncmp(v.out, want, wl) == 0 && (v.out[wl] == ' ' || v.out[wl] == ':');
    if (v.status != 1 || !named || !strstr(v.out, why))
        fail_msg("expected exit 1 naming '%s' with '%s', got exit %d: %s", want, why, v.status, v.out);
}

/* ---- copies of a database to tamper with ---- */

static void db_copy(const char *from, const char *to)
{
    sqlite3 *src, *dst;
    unlink(to);
    assert_int_equal(sqlite3_open_v2(from, &src, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_open(to, &dst), SQLITE_OK);
    sqlite3_backup *b = sqlite3_backup_init(dst, "main", src, "main");
    assert_non_null(b);
    assert_int_equal(sqlite3_backup_step(b, -1), SQLITE_DONE);
    assert_int_equal(sqlite3_backup_finish(b), SQLITE_OK);
    sqlite3_close(src);
    assert_int_equal(sqlite3_close(dst), SQLITE_OK);
}

static void db_exec(const char *db, const char *sql)
{
    sqlite3 *h;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(h, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
    int changed = sqlite3_total_changes(h);
    sqlite3_close(h);
    if (changed == 0)
        fail_msg("changed nothing: %s", sql);
}

static long long batch_of(const char *db, long long event_id)
{
    char sql[200];
    snprintf(sql, sizeof(sql), "SELECT id FROM batches WHERE %lld BETWEEN first_event_id AND last_event_id",
             event_id);
    long long b = db_query_int(db, sql);
    assert_true(b > 0);
    return b;
}

static long long batch_field(const char *db, long long batch, const char *field)
{
    char sql[200];
    snprintf(sql, sizeof(sql), "SELECT %s FROM batches WHERE id=%lld", field, batch);
    return db_query_int(db, sql);
}

/* Runs a daemon with args on d's database, replays the traces, stops it. */
static void daemon_run(struct daemon *d, const char *const *args, const struct replay_trace *const *traces, int n)
{
    if (!daemon_start(d, SECCHECKD_BIN, args)) {
        char *log = daemon_read_log(d);
        fail_msg("daemon did not start: %s", log);
    }
    for (int i = 0; i < n; i++)
        assert_int_equal(replay_connection(d->socket, traces[i], traces[i]->version), 0);
    assert_int_equal(daemon_stop(d), 0);
}

static void test_plain_chain_names_the_tampered_batch(void **state)
{
    struct trace_fixture *f = *state;
    struct daemon d;
    daemon_prepare(&d);
    const char *args[] = {BATCH_ARGS, NULL};
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    size_t total = 0;
    for (int i = 0; i < NTRACES; i++) {
        assert_int_equal(replay_connection(d.socket, &f->traces[i], f->traces[i].version), 0);
        total += f->traces[i].count;
    }
    /* while the daemon runs: a consistent snapshot verifies */
    struct verdict v;
    run_verify(d.db, NULL, &v);
    assert_int_equal(v.status, 0);
    assert_non_null(strstr(v.out, "ok: "));
    assert_int_equal(daemon_stop(&d), 0);

    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM events"), (long long)total);
    long long nbatches = db_query_int(d.db, "SELECT count(*) FROM batches");
    assert_true(nbatches >= (long long)(total / 256));
    assert_int_equal(db_query_int(d.db, "SELECT sum(events) FROM batches"), (long long)total);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM batches WHERE keyed=0"), nbatches);
    assert_verifies(d.db, NULL);

    char copy[400];
    snprintf(copy, sizeof(copy), "%s/copy.db", d.dir);
    long long mid = (long long)total / 2, late = (long long)total - 300;

    /* one row's raw altered (same length) */
    db_copy(d.db, copy);
    assert_verifies(copy, NULL);   /* the copy itself is fine */
    char sql[600];
    snprintf(sql, sizeof(sql), "UPDATE events SET raw=zeroblob(length(raw)) WHERE id=%lld", mid);
    db_exec(copy, sql);
    assert_names_batch(copy, NULL, batch_of(copy, mid), "altered: hash mismatch");

    /* one row's connection altered; and a later alteration does not hide it */
    db_copy(d.db, copy);
    snprintf(sql, sizeof(sql), "UPDATE events SET conn_id=conn_id+1 WHERE id=%lld;"
             "UPDATE events SET msg_type=msg_type+1 WHERE id=%lld", mid, late);
    db_exec(copy, sql);
    assert_names_batch(copy, NULL, batch_of(copy, mid), "altered: hash mismatch");

    /* one row deleted */
    db_copy(d.db, copy);
    long long b = batch_of(copy, late);
    long long n = batch_field(copy, b, "events");
    snprintf(sql, sizeof(sql), "DELETE FROM events WHERE id=%lld", late);
    db_exec(copy, sql);
    char why[128];
    snprintf(why, sizeof(why), "deleted rows: %lld of %lld events present", n - 1, n);
    assert_names_batch(copy, NULL, b, why);

    /* two batches of equal size swap their rows' contents */
    db_copy(d.db, copy);
    long long p = db_query_int(copy, "SELECT a.id FROM batches a JOIN batches b ON b.events=a.events "
                                     "AND b.id > a.id + 1 AND a.id > 1 ORDER BY a.id LIMIT 1");
    assert_true(p > 1);
    snprintf(sql, sizeof(sql), "SELECT b.id FROM batches a JOIN batches b ON b.events=a.events AND b.id > a.id + 1 "
             "WHERE a.id=%lld ORDER BY b.id LIMIT 1", p);
    long long q = db_query_int(copy, sql);
    long long pf = batch_field(copy, p, "first_event_id"), pl = batch_field(copy, p, "last_event_id");
    long long qf = batch_field(copy, q, "first_event_id"), ql = batch_field(copy, q, "last_event_id");
    snprintf(sql, sizeof(sql),
             "CREATE TEMP TABLE a AS SELECT id-%lld AS k, conn_id, recv_ns, msg_type, raw FROM events WHERE id BETWEEN %lld AND %lld;"
             "CREATE TEMP TABLE b AS SELECT id-%lld AS k, conn_id, recv_ns, msg_type, raw FROM events WHERE id BETWEEN %lld AND %lld;"
             "UPDATE events SET (conn_id, recv_ns, msg_type, raw) = (SELECT conn_id, recv_ns, msg_type, raw FROM b "
             "WHERE k=events.id-%lld) WHERE id BETWEEN %lld AND %lld;"
             "UPDATE events SET (conn_id, recv_ns, msg_type, raw) = (SELECT conn_id, recv_ns, msg_type, raw FROM a "
             "WHERE k=events.id-%lld) WHERE id BETWEEN %lld AND %lld;",
             pf, pf, pl, qf, qf, ql, pf, pf, pl, qf, qf, ql);
    db_exec(copy, sql);
    assert_true(db_query_int(copy, "SELECT count(*) FROM events") == (long long)total);
    assert_names_batch(copy, NULL, p, "altered: hash mismatch");

    /* two batches rows swap their hashes (the chain reordered) */
    db_copy(d.db, copy);
    snprintf(sql, sizeof(sql),
             "CREATE TEMP TABLE s AS SELECT id, prev_hash, hash FROM batches WHERE id IN (%lld, %lld);"
             "UPDATE batches SET (prev_hash, hash) = (SELECT prev_hash, hash FROM s WHERE s.id != batches.id) "
             "WHERE id IN (%lld, %lld);", p, q, p, q);
    db_exec(copy, sql);
    snprintf(why, sizeof(why), "out of order: prev_hash does not match batch %lld", p - 1);
    assert_names_batch(copy, NULL, p, why);

    /* two whole batches rows swapped, events and all */
    db_copy(d.db, copy);
    snprintf(sql, sizeof(sql),
             "CREATE TEMP TABLE s AS SELECT * FROM batches WHERE id IN (%lld, %lld);"
             "UPDATE batches SET (run_id, first_event_id, last_event_id, events, committed_ns, prev_hash, hash, keyed)"
             " = (SELECT run_id, first_event_id, last_event_id, events, committed_ns, prev_hash, hash, keyed FROM s"
             " WHERE s.id != batches.id) WHERE id IN (%lld, %lld);", p, q, p, q);
    db_exec(copy, sql);
    assert_names_batch(copy, NULL, p, "out of order");

    /* a batches row deleted */
    db_copy(d.db, copy);
    snprintf(sql, sizeof(sql), "DELETE FROM batches WHERE id=%lld", p);
    db_exec(copy, sql);
    assert_names_batch(copy, NULL, p, "missing");

    /* a row appended after the last batch: reported, not a failure */
    db_copy(d.db, copy);
    db_exec(copy, "INSERT INTO events(conn_id, recv_ns, msg_type, dropped_count, raw)"
                  " SELECT conn_id, recv_ns, msg_type, dropped_count, raw FROM events ORDER BY id DESC LIMIT 1");
    run_verify(copy, NULL, &v);
    assert_int_equal(v.status, 0);
    snprintf(why, sizeof(why), "note: 1 events after id %lld are not yet sealed", (long long)total);
    assert_non_null(strstr(v.out, why));
    /* ... and moved into a batch in place of a deleted row, an alteration */
    db_exec(copy, "UPDATE events SET id=-1 WHERE id=(SELECT max(id) FROM events)");
    snprintf(sql, sizeof(sql), "DELETE FROM events WHERE id=%lld; UPDATE events SET id=%lld WHERE id=-1", mid, mid);
    db_exec(copy, sql);
    assert_names_batch(copy, NULL, batch_of(copy, mid), "altered: hash mismatch");

    daemon_cleanup(&d);
}

/* ---- the decoded columns against raw ---- */

/* Every column the daemon decodes from raw (storage/event_redecode.h);
 * type_name is computed from msg_type here, so it cannot be edited. */
static const char *const decoded_columns[] = {
    "dropped_count", "decode_error", "time_ns", "container_id", "thread_id", "thread_group_id", "process_name",
    "cwd", "real_uid", "effective_uid", "saved_uid", "real_gid", "effective_gid", "saved_gid", "sysno",
    "is_exit", "result", "errno", "detail", "thread_start_time_ns", "thread_group_start_time_ns",
    "parent_thread_group_id", "is_exec_session",
};
#define NDECODED (sizeof(decoded_columns) / sizeof(decoded_columns[0]))

/* The line verify prints for event id: "event ID (batch B): altered: COLUMNS ..." */
static bool names_event(const char *out, const char *db, long long id, const char *columns)
{
    char want[400];
    snprintf(want, sizeof(want), "event %lld (batch %lld): altered: %s %s not what its raw decodes to\n", id,
             batch_of(db, id), columns, strchr(columns, ',') ? "are" : "is");
    return strstr(out, want) != NULL;
}

/* Lines of out that start with prefix. */
static int count_lines(const char *out, const char *prefix)
{
    int n = 0;
    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        n += strncmp(p, prefix, strlen(prefix)) == 0;
    return n;
}

/* Issue 19 item 6: the hash covers raw, not the columns people query; an
 * edited column of a row whose raw is intact is named by id and column,
 * each decoded column, and the list is bounded. --hash-only does not look. */
static void test_decoded_columns_checked_against_raw(void **state)
{
    struct trace_fixture *f = *state;
    struct daemon d;
    daemon_prepare(&d);
    const char *args[] = {BATCH_ARGS, NULL};
    const struct replay_trace *set[] = {&f->traces[0], &f->traces[1], &f->traces[2]};
    daemon_run(&d, args, set, NTRACES);
    assert_verifies(d.db, NULL);
    char copy[400], sql[1200];
    snprintf(copy, sizeof(copy), "%s/copy.db", d.dir);

    /* The auditor's case: a process renamed. */
    long long id = db_query_int(d.db, "SELECT id FROM events WHERE process_name IS NOT NULL"
                                      " ORDER BY id LIMIT 1 OFFSET 500");
    db_copy(d.db, copy);
    snprintf(sql, sizeof(sql), "UPDATE events SET process_name = 'evil' WHERE id = %lld", id);
    db_exec(copy, sql);
    struct verdict v;
    run_verify(copy, NULL, &v);
    assert_int_equal(v.status, 1);
    if (!names_event(v.out, copy, id, "process_name") ||
        !strstr(v.out, "altered: 1 event with decoded columns that differ from the raw packet"))
        fail_msg("expected event %lld's process_name named: %s", id, v.out);

    /* Every decoded column, each in a row of its own (NULL to 1, a value
     * to another),
     * in two rounds of at most VERIFY_LIST_MAX (20) rows; detail also
     * edited to the same JSON written another way. */
    long long base = db_query_int(d.db, "SELECT id FROM events WHERE is_exit = 1 AND is_exec_session IS NOT NULL"
                                        " AND detail IS NOT NULL ORDER BY id LIMIT 1");
    assert_true(base > 0);
    for (size_t round = 0; round < 2; round++) {
        db_copy(d.db, copy);
        size_t from = round * 12, to = round ? NDECODED : 12;
        for (size_t i = from; i < to; i++) {
            long long row = db_query_int(d.db, "SELECT count(*) FROM events") / 2 + (long long)i * 37;
            const char *c = decoded_columns[i];
            snprintf(sql, sizeof(sql), "UPDATE events SET %s = CASE WHEN %s IS NULL THEN 1 WHEN typeof(%s) = 'text'"
                     " THEN %s || 'x' ELSE %s + 1 END WHERE id = %lld", c, c, c, c, c, row);
            if (i == 18)   /* detail: same JSON, not the same text */
                snprintf(sql, sizeof(sql), "UPDATE events SET detail = json_set(detail, '$.x', 1) WHERE id = %lld;"
                         "UPDATE events SET detail = ' ' || detail WHERE id = %lld", row, base);
            db_exec(copy, sql);
        }
        run_verify(copy, NULL, &v);
        assert_int_equal(v.status, 1);
        for (size_t i = from; i < to; i++) {
            long long row = db_query_int(d.db, "SELECT count(*) FROM events") / 2 + (long long)i * 37;
            if (!names_event(v.out, copy, row, decoded_columns[i]))
                fail_msg("column %s of event %lld not named: %s", decoded_columns[i], row, v.out);
        }
        if (round == 1 && !names_event(v.out, copy, base, "detail"))
            fail_msg("detail rewritten as equal JSON in event %lld not named: %s", base, v.out);
    }

    /* Many rows: 20 named, the rest counted; the chain itself is fine. */
    db_copy(d.db, copy);
    db_exec(copy, "UPDATE events SET cwd = '/elsewhere' WHERE cwd IS NOT NULL");
    long long edited = db_query_int(copy, "SELECT count(*) FROM events WHERE cwd = '/elsewhere'");
    assert_true(edited > 40);
    run_verify(copy, NULL, &v);
    assert_int_equal(v.status, 1);
    assert_int_equal(count_lines(v.out, "event "), 20);
    char want[200];
    snprintf(want, sizeof(want), "... and %lld more altered events\naltered: %lld events with decoded columns",
             edited - 20, edited);
    if (!strstr(v.out, want))
        fail_msg("expected '%s': %s", want, v.out);
    assert_null(strstr(v.out, "ok: "));

    /* --hash-only: today's quick check, and it says what it skipped. */
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "'%s' verify --db '%s' --hash-only 2>&1", SECCHECKD_BIN, copy);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(v.out, 1, sizeof(v.out) - 1, p);
    v.out[n] = '\0';
    assert_int_equal(pclose(p), 0);
    assert_non_null(strstr(v.out, "--hash-only: the decoded columns and detail were not compared"));
    assert_non_null(strstr(v.out, "ok: "));

    /* A row edited in a batch whose hash then fails: the batch is named,
     * not the row (its raw is in doubt). */
    db_copy(d.db, copy);
    snprintf(sql, sizeof(sql), "UPDATE events SET process_name = 'evil', recv_ns = recv_ns + 1 WHERE id = %lld", id);
    db_exec(copy, sql);
    assert_names_batch(copy, NULL, batch_of(copy, id), "altered: hash mismatch");
    daemon_cleanup(&d);
}

/* Issue 19 item 11: verify and export read a database without leaving a
 * -wal or -shm behind when there was none, and never touch those a running
 * daemon uses (its writes go on). */
static void test_readers_leave_no_wal_behind(void **state)
{
    struct trace_fixture *f = *state;
    struct daemon d;
    daemon_prepare(&d);
    const char *args[] = {BATCH_ARGS, NULL};
    const struct replay_trace *set[] = {&f->traces[1]};
    daemon_run(&d, args, set, 1);
    char wal[400], shm[400], out[400], dir[400];
    snprintf(wal, sizeof(wal), "%s-wal", d.db);
    snprintf(shm, sizeof(shm), "%s-shm", d.db);
    snprintf(out, sizeof(out), "%s/out.ndjson", d.dir);
    snprintf(dir, sizeof(dir), "%s/traces", d.dir);
    assert_int_not_equal(access(wal, F_OK), 0);
    assert_int_not_equal(access(shm, F_OK), 0);
    struct stat before, after;
    assert_int_equal(stat(d.db, &before), 0);

    struct verdict v;
    run_verify(d.db, NULL, &v);   /* not assert_verifies: its queries are read-only connections */
    assert_int_equal(v.status, 0);
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "'%s' verify --db '%s' --hash-only >/dev/null && '%s' export --db '%s' --format ndjson"
             " --out '%s' && '%s' export --db '%s' --format trace --out '%s'",
             SECCHECKD_BIN, d.db, SECCHECKD_BIN, d.db, out, SECCHECKD_BIN, d.db, dir);
    assert_int_equal(system(cmd), 0);
    assert_int_not_equal(access(wal, F_OK), 0);
    assert_int_not_equal(access(shm, F_OK), 0);
    assert_int_equal(stat(d.db, &after), 0);
    assert_true(after.st_size == before.st_size && after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
                after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);

    /* Beside a running daemon: its -wal stays, and it keeps storing. */
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    assert_int_equal(replay_connection(d.socket, &f->traces[0], f->traces[0].version), 0);
    assert_int_equal(access(wal, F_OK), 0);
    run_verify(d.db, NULL, &v);
    assert_int_equal(v.status, 0);
    snprintf(cmd, sizeof(cmd), "'%s' export --db '%s' --format ndjson > /dev/null 2>&1", SECCHECKD_BIN, d.db);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(access(wal, F_OK), 0);
    assert_int_equal(replay_connection(d.socket, &f->traces[2], f->traces[2].version), 0);
    assert_int_equal(daemon_stop(&d), 0);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM events"),
                     (long long)(f->traces[0].count + f->traces[1].count + f->traces[2].count));
    assert_verifies(d.db, NULL);
    daemon_cleanup(&d);
}

static void write_key(const char *path, const char *bytes)
{
    FILE *k = fopen(path, "wb");
    assert_non_null(k);
    assert_int_equal(fwrite(bytes, 1, strlen(bytes), k), strlen(bytes));
    fclose(k);
    chmod(path, 0600);
}

static void test_keyed_chain_needs_the_key(void **state)
{
    struct trace_fixture *f = *state;
    struct daemon d;
    daemon_prepare(&d);
    char key[400], wrong[400], shortk[400], copy[400];
    snprintf(key, sizeof(key), "%s/chain.key", d.dir);
    snprintf(wrong, sizeof(wrong), "%s/wrong.key", d.dir);
    snprintf(shortk, sizeof(shortk), "%s/short.key", d.dir);
    snprintf(copy, sizeof(copy), "%s/copy.db", d.dir);
    write_key(key, "k3y-of-the-seccheckd-chain-test!");
    write_key(wrong, "k3y-of-the-seccheckd-chain-test?");
    write_key(shortk, "short key");

    /* a short key file stops the daemon before it opens anything */
    const char *short_args[] = {BATCH_ARGS, "--key-file", shortk, NULL};
    assert_false(daemon_start(&d, SECCHECKD_BIN, short_args));
    assert_int_equal(d.exit_status, 2);   /* a usage error */
    char *log = daemon_read_log(&d);
    if (!strstr(log, shortk))
        fail_msg("the error should name the key file: %s", log);
    free(log);

    const char *args[] = {BATCH_ARGS, "--key-file", key, NULL};
    const struct replay_trace *set[] = {&f->traces[0]};
    daemon_run(&d, args, set, 1);
    long long nbatches = db_query_int(d.db, "SELECT count(*) FROM batches");
    assert_true(nbatches > 4);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM batches WHERE keyed=1"), nbatches);
    assert_verifies(d.db, key);

    struct verdict v;
    run_verify(d.db, wrong, &v);
    assert_int_equal(v.status, 1);
    assert_non_null(strstr(v.out, "wrong key"));
    run_verify(d.db, NULL, &v);
    assert_int_equal(v.status, 2);
    assert_non_null(strstr(v.out, "chain is keyed: pass --key-file"));

    /* without the key id in meta, a wrong key still fails, at the first batch */
    db_copy(d.db, copy);
    db_exec(copy, "DELETE FROM meta WHERE key='chain_key_id'");
    assert_verifies(copy, key);
    assert_names_batch(copy, wrong, 1, "altered: hash mismatch");

    /* tampering under a key */
    db_copy(d.db, copy);
    long long mid = db_query_int(d.db, "SELECT max(id) / 2 FROM events");
    char sql[200];
    snprintf(sql, sizeof(sql), "UPDATE events SET recv_ns=recv_ns+1 WHERE id=%lld", mid);
    db_exec(copy, sql);
    assert_names_batch(copy, key, batch_of(copy, mid), "altered: hash mismatch");

    /* the daemon refuses to extend the keyed chain without its key, or with another */
    const char *nokey_args[] = {BATCH_ARGS, NULL};
    assert_false(daemon_start(&d, SECCHECKD_BIN, nokey_args));
    log = daemon_read_log(&d);
    assert_non_null(strstr(log, "keyed: pass the --key-file"));
    free(log);
    const char *wrong_args[] = {BATCH_ARGS, "--key-file", wrong, NULL};
    assert_false(daemon_start(&d, SECCHECKD_BIN, wrong_args));
    log = daemon_read_log(&d);
    assert_non_null(strstr(log, "is not the key"));
    free(log);

    /* with it, a second run goes on and the whole chain verifies */
    const struct replay_trace *set2[] = {&f->traces[1]};
    daemon_run(&d, args, set2, 1);
    assert_true(db_query_int(d.db, "SELECT count(*) FROM batches") > nbatches);
    assert_verifies(d.db, key);
    daemon_cleanup(&d);
}

static void test_chain_spans_restarts(void **state)
{
    struct trace_fixture *f = *state;
    struct daemon d;
    daemon_prepare(&d);
    const char *args[] = {BATCH_ARGS, NULL};
    const struct replay_trace *first[] = {&f->traces[1]};
    const struct replay_trace *second[] = {&f->traces[2], &f->traces[1]};
    daemon_run(&d, args, first, 1);
    long long after_first = db_query_int(d.db, "SELECT max(id) FROM batches");
    assert_true(after_first > 1);
    assert_verifies(d.db, NULL);
    daemon_run(&d, args, second, 2);
    assert_verifies(d.db, NULL);
    assert_int_equal(db_query_int(d.db, "SELECT count(DISTINCT run_id) FROM batches"), 2);
    char sql[300];
    snprintf(sql, sizeof(sql), "SELECT b.prev_hash = p.hash AND b.run_id = p.run_id + 1 FROM batches b, batches p "
             "WHERE b.id=%lld AND p.id=%lld", after_first + 1, after_first);
    assert_int_equal(db_query_int(d.db, sql), 1);

    /* in place (SIGUSR2: a new image, the same connections) while streaming */
    assert_true(daemon_start(&d, SECCHECKD_BIN, args));
    pid_t lg = reaper_fork();
    assert_true(lg >= 0);
    if (lg == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execl(LOADGEN_BIN, LOADGEN_BIN, "--socket", d.socket, "--trace", TRACES_DIR "/redis_rw.trace",
              "--connections", "2", "--mode", "block", "--messages", "60000", "--rate", "40000", (char *)NULL);
        _exit(127);
    }
    usleep(400000);
    kill(d.pid, SIGUSR2);
    daemon_wait_log(&d, "restart: adopted", 1, 10000);
    assert_int_equal(reaper_wait(lg), 0);
    assert_int_equal(daemon_stop(&d), 0);
    assert_int_equal(db_query_int(d.db, "SELECT count(DISTINCT run_id) FROM batches"), 4);
    assert_verifies(d.db, NULL);
    daemon_cleanup(&d);
}

static void test_usage(void **state)
{
    (void)state;
    struct verdict v;
    FILE *p = popen("'" SECCHECKD_BIN "' verify --help", "r");
    assert_non_null(p);
    size_t n = fread(v.out, 1, sizeof(v.out) - 1, p);
    v.out[n] = '\0';
    assert_int_equal(pclose(p), 0);
    assert_non_null(strstr(v.out, "Usage: seccheckd verify --db PATH"));
    p = popen("'" SECCHECKD_BIN "' verify 2>&1", "r");
    n = fread(v.out, 1, sizeof(v.out) - 1, p);
    v.out[n] = '\0';
    int st = pclose(p);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 2);
    assert_non_null(strstr(v.out, "--db PATH is required"));
    run_verify("/nonexistent/seccheck.db", NULL, &v);
    assert_int_equal(v.status, 2);
}

/* Issue 31 item 7: the chain covers each batch's alerts (chain.h): in a
 * copy, alert 1 deleted and alert 2's output rewritten passed verify as
 * "ok". A deleted alert is named by its id, an altered one by its columns
 * (as an event's columns against its raw), an alert added to a batch's
 * events is named, a sealed record swapped breaks the hash; with a key too. */
static void test_alerts_are_chained(void **state)
{
    struct trace_fixture *f = *state;
    struct daemon d;
    daemon_prepare(&d);
    char rules[400], key[400], copy[400];
    snprintf(rules, sizeof(rules), "%s/r.yaml", d.dir);
    snprintf(key, sizeof(key), "%s/chain.key", d.dir);
    snprintf(copy, sizeof(copy), "%s/copy.db", d.dir);
    write_file(rules, "- rule: opens\n  desc: d\n  condition: evt.type in (open, openat)\n"
                      "  output: '%proc.name opened %fd.name'\n  priority: WARNING\n  tags: [t]\n");
    write_key(key, "k3y-of-the-seccheckd-chain-test!");
    const char *args[] = {BATCH_ARGS, "--rules", rules, "--alerts-out", "none", "--key-file", key, NULL};
    const struct replay_trace *set[] = {&f->traces[2]};   /* mixed_syscalls: its opens */
    daemon_run(&d, args, set, 1);
    long long alerts = db_query_int(d.db, "SELECT count(*) FROM alerts");
    assert_true(alerts > 10);
    assert_int_equal(db_query_int(d.db, "SELECT sum(alerts) FROM batches"), alerts);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM alerts WHERE sealed IS NULL"), 0);
    assert_verifies(d.db, key);
    long long b1 = db_query_int(d.db, "SELECT id FROM batches WHERE 1 BETWEEN first_alert_id AND "
                                      "first_alert_id + alerts - 1");
    char want[200];

    /* the copy: alert 1 deleted, alert 2's output rewritten */
    db_copy(d.db, copy);
    db_exec(copy, "DELETE FROM alerts WHERE id = 1; UPDATE alerts SET output = 'nothing to see' WHERE id = 2");
    snprintf(want, sizeof(want), "missing: alert 1\n");
    assert_names_batch(copy, key, b1, "deleted alerts: ");
    struct verdict v;
    run_verify(copy, key, &v);
    assert_non_null(strstr(v.out, want));

    /* an alert's columns rewritten: named, each column, the chain itself sound */
    db_copy(d.db, copy);
    db_exec(copy, "UPDATE alerts SET output = 'nothing to see', priority = 'Debug' WHERE id = 2;"
                  "UPDATE alerts SET tags = '[]' WHERE id = 3");
    run_verify(copy, key, &v);
    assert_int_equal(v.status, 1);
    snprintf(want, sizeof(want), "alert 2 (batch %lld): altered: priority, output are not what was sealed\n", b1);
    assert_non_null(strstr(v.out, want));
    assert_non_null(strstr(v.out, "altered: tags is not what was sealed\n"));
    assert_non_null(strstr(v.out, "altered: 2 alerts with columns that differ from what was sealed"));
    assert_null(strstr(v.out, "ok: "));

    /* the sealed record rewritten to match (another alert's): the hash fails */
    db_copy(d.db, copy);
    db_exec(copy, "UPDATE alerts SET sealed = (SELECT sealed FROM alerts WHERE id = 3) WHERE id = 2");
    assert_names_batch(copy, key, b1, "altered: hash mismatch");

    /* an alert added to a batch's events */
    db_copy(d.db, copy);
    db_exec(copy, "INSERT INTO alerts(event_id, rule, priority, time_ns, output, output_fields, tags, sealed)"
                  " SELECT event_id, rule, priority, time_ns, output, output_fields, tags, sealed FROM alerts"
                  " WHERE id = 1");
    long long b_last = db_query_int(copy, "SELECT id FROM batches WHERE (SELECT event_id FROM alerts WHERE id = 1)"
                                          " BETWEEN first_event_id AND last_event_id");
    assert_names_batch(copy, key, b_last, "inserted alerts: 1 alert of its events is not among");

    /* a batch's alert count lowered to hide the deletion: the hash */
    db_copy(d.db, copy);
    db_exec(copy, "DELETE FROM alerts WHERE id = (SELECT first_alert_id + alerts - 1 FROM batches WHERE alerts > 0"
                  " ORDER BY id LIMIT 1); UPDATE batches SET alerts = alerts - 1 WHERE id = (SELECT id FROM batches"
                  " WHERE alerts > 0 ORDER BY id LIMIT 1)");
    assert_names_batch(copy, key, b1, "altered: hash mismatch");
    daemon_cleanup(&d);
}

/* A sequence's steps (sequence) and the partial matches evicted before an
 * alert (evicted) are sealed with the rest of the alert: either column
 * rewritten after the write, or a sequence column given to a rule's alert
 * or taken from a sequence's, is named as altered. The alerts come from
 * packets tests/support/gvisor_packets.py makes (python3-protobuf). */
static void story_trace(const char *dir, const char *story, struct replay_trace *t)
{
    char out[512], err[512], path[512], why[256];
    const char *argv[] = {"/usr/bin/python3", SOURCE_DIR "/tests/support/gvisor_packets.py", "trace", dir, story,
                          NULL};
    if (run_command(argv, out, sizeof(out), err, sizeof(err)) != 0)
        fail_msg("gvisor_packets.py trace %s: %s%s", story, out, err);
    snprintf(path, sizeof(path), "%s/%s.trace", dir, story);
    if (replay_trace_load(t, path, why, sizeof(why)) != 0)
        fail_msg("%s: %s", path, why);
}

static void test_sequence_columns_are_sealed(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    char rules[400], copy[400];
    snprintf(rules, sizeof(rules), "%s/r.yaml", d.dir);
    snprintf(copy, sizeof(copy), "%s/copy.db", d.dir);
    write_file(rules, "- sequence: Written then run\n  desc: d\n  within: 1h\n  steps:\n    - name: write\n"
                      "      condition: evt.type in (open, openat) and evt.is_open_write = true\n    - name: run\n"
                      "      condition: evt.type = execve and evt.res = SUCCESS and proc.exepath = %write.fd.name\n"
                      "  output: '%write.fd.name run as %proc.cmdline'\n  priority: CRITICAL\n"
                      "- rule: Any exec\n  desc: d\n  condition: evt.type = execve and evt.res = SUCCESS\n"
                      "  output: 'ran %proc.exepath'\n  priority: NOTICE\n");
    struct replay_trace evicting, completing;
    story_trace(d.dir, "download_exec_benign", &evicting);   /* curl's second write evicts its first */
    story_trace(d.dir, "download_exec", &completing);
    const char *args[] = {BATCH_ARGS, "--rules", rules, "--sequence-partials", "1", "--alerts-out", "none", NULL};
    const struct replay_trace *set[] = {&evicting, &completing};
    daemon_run(&d, args, set, 2);
    replay_trace_free(&evicting);
    replay_trace_free(&completing);
    long long seq = db_query_int(d.db, "SELECT id FROM alerts WHERE sequence IS NOT NULL");
    long long evicted = db_query_int(d.db, "SELECT id FROM alerts WHERE evicted = 1");
    long long rule = db_query_int(d.db, "SELECT min(id) FROM alerts WHERE sequence IS NULL AND evicted = 0");
    assert_true(seq > 0 && evicted > 0 && rule > 0);
    assert_int_equal(db_query_int(d.db, "SELECT count(*) FROM alerts WHERE sealed IS NULL"), 0);
    assert_verifies(d.db, NULL);

    static const struct {
        const char *set;    /* UPDATE alerts SET this WHERE id = the alert's */
        const char *which;  /* seq, evicted or rule */
        const char *says;
    } cases[] = {
        /* a step's event pointed elsewhere */
        {"sequence = replace(sequence, '\"event_id\":', '\"event_id\":9')", "seq",
         "altered: sequence is not what was sealed\n"},
        {"sequence = NULL", "seq", "altered: sequence is not what was sealed\n"},
        {"sequence = '{\"steps\":[]}'", "rule", "altered: sequence is not what was sealed\n"},
        /* the evictions hidden, or made up */
        {"evicted = 0", "evicted", "altered: evicted is not what was sealed\n"},
        {"evicted = 1000", "rule", "altered: evicted is not what was sealed\n"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        long long id = strcmp(cases[i].which, "seq") == 0 ? seq : strcmp(cases[i].which, "evicted") == 0 ? evicted
                                                                                                           : rule;
        char sql[300], want[200];
        snprintf(sql, sizeof(sql), "UPDATE alerts SET %s WHERE id = %lld", cases[i].set, id);
        db_copy(d.db, copy);
        db_exec(copy, sql);
        struct verdict v;
        run_verify(copy, NULL, &v);
        snprintf(want, sizeof(want), "alert %lld (batch ", id);
        const char *line = strstr(v.out, want);
        if (v.status != 1 || !line || strncmp(strchr(line, ':'), ": altered: ", 11) != 0 ||
            !strstr(line, cases[i].says) || strstr(v.out, "ok: "))
            fail_msg("case %zu (%s): expected exit 1 and '%s...%s', got exit %d: %s", i, sql, want, cases[i].says,
                     v.status, v.out);
    }
    daemon_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage),
        cmocka_unit_test(test_plain_chain_names_the_tampered_batch),
        cmocka_unit_test(test_keyed_chain_needs_the_key),
        cmocka_unit_test(test_chain_spans_restarts),
        cmocka_unit_test(test_decoded_columns_checked_against_raw),
        cmocka_unit_test(test_readers_leave_no_wal_behind),
        cmocka_unit_test(test_alerts_are_chained),
        cmocka_unit_test(test_sequence_columns_are_sealed),
    };
    return cmocka_run_group_tests(tests, setup, trace_fixture_teardown);
}
