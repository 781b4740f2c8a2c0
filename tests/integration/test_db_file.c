/* Integration: the database file. Created 0640 whatever the umask (with
 * its -wal and -shm: it holds command lines and environments); a --db that
 * cannot be a database is refused with a message naming the real problem
 * (the directory hint only where the directory is the problem), an SQLite
 * database of another program is refused untouched, and verify, export
 * and forward say what is wrong with such a path too. */
#include <errno.h>
#include <grp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "daemon.h"
#include "replay.h"

#define NOBODY 65534

static struct replay_trace mixed;   /* the fixture's */

static unsigned mode_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (unsigned)(st.st_mode & 07777) : 0;
}

/* Runs argv (argv[0] the program) to completion, at most 10 s, as uid (0:
 * as this process), stdout and stderr into log. Its exit code. */
static int run_as(uid_t uid, const char *const *argv, const char *log)
{
    pid_t pid = reaper_fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(126);
        if (uid && (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(uid) != 0))
            _exit(126);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return reaper_wait_within(pid, 10000);
}

static void *read_whole(const char *path, size_t *len);

/* The line of the log that starts with prefix, without its newline. */
static void line_with(const char *log_path, const char *prefix, char *out, size_t outlen)
{
    size_t len;
    char *log = read_whole(log_path, &len);
    const char *p = strstr(log, prefix);
    out[0] = '\0';
    if (p)
        snprintf(out, outlen, "%.*s", (int)strcspn(p, "\n"), p);
    free(log);
}

/* Runs the daemon (as uid) with --db path: its exit code, and its line
 * about the sqlite sink into line. */
static int run_daemon(const struct daemon *d, uid_t uid, const char *path, char *line, size_t linelen)
{
    char log[400];
    snprintf(log, sizeof(log), "%s/refused.log", d->dir);
    const char *argv[] = {SECCHECKD_BIN, "--socket", d->socket, "--db", path, NULL};
    int code = run_as(uid, argv, log);
    line_with(log, "seccheckd: sqlite sink:", line, linelen);
    printf("%s\n", line);
    return code;
}

static void assert_refusal(int code, const char *line, const char *path, const char *why)
{
    char expected[2048];
    snprintf(expected, sizeof(expected), "seccheckd: sqlite sink: cannot use database %s: %s", path, why);
    assert_int_equal(code, 1);
    assert_string_equal(line, expected);
}

/* The daemon (as uid) refuses --db path, exit 1, with exactly this line. */
static void daemon_refuses(const struct daemon *d, uid_t uid, const char *path, const char *why)
{
    char line[2048];
    int code = run_daemon(d, uid, path, line, sizeof(line));
    assert_refusal(code, line, path, why);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

/* A whole file, malloc'd, with a NUL after its len bytes. */
static void *read_whole(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t cap = 1 << 20;
    char *buf = malloc(cap);
    *len = fread(buf, 1, cap - 1, f);
    assert_true(*len < cap - 1);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

/* An SQLite database of another program (rollback journal, as most are). */
static void make_foreign_db(const char *path)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE t(a); CREATE TABLE notes(x TEXT); INSERT INTO t VALUES(42);",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
}

static bool exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* ---- created 0640 ---- */

static void created_private_under(mode_t mask)
{
    struct daemon d;
    daemon_prepare(&d);
    mode_t old = umask(mask);
    bool started = daemon_start(&d, SECCHECKD_BIN, NULL);
    umask(old);
    assert_true(started);
    assert_int_equal(replay_connection(d.socket, &mixed, mixed.version), 0);
    char wal[400], shm[400];
    snprintf(wal, sizeof(wal), "%s-wal", d.db);
    snprintf(shm, sizeof(shm), "%s-shm", d.db);
    for (int i = 0; i < 100 && dbq(&d, "SELECT count(*) FROM events") != (long long)mixed.count; i++)
        sleep_ms(50);
    unsigned db_mode = mode_of(d.db), wal_mode = mode_of(wal), shm_mode = mode_of(shm);   /* while running */
    assert_int_equal(daemon_stop(&d), 0);
    daemon_cleanup(&d);
    printf("umask %04o: database %04o, -wal %04o, -shm %04o\n", (unsigned)mask, db_mode, wal_mode, shm_mode);
    assert_int_equal(db_mode, 0640);
    assert_int_equal(wal_mode, 0640);
    assert_int_equal(shm_mode, 0640);
}

static void test_created_0640_under_umask_0(void **state)
{
    (void)state;
    created_private_under(0);
}

static void test_created_0640_under_umask_022(void **state)
{
    (void)state;
    created_private_under(022);
}

static void test_created_0640_under_umask_077(void **state)
{
    (void)state;
    created_private_under(077);
}

/* ---- a --db that cannot be a database ---- */

static void test_refuses_a_directory(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    char path[400], why[1024];
    snprintf(path, sizeof(path), "%s/adir", d.dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(why, sizeof(why), "it is a directory, not a file (give a file path with --db, such as %s/seccheck.db)",
             path);
    daemon_refuses(&d, 0, path, why);
    daemon_cleanup(&d);
}

static void test_refuses_a_file_that_is_not_a_database(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    char path[400];
    snprintf(path, sizeof(path), "%s/notes.txt", d.dir);
    write_file(path, "these are notes, not a database; long enough to fill a header of one hundred bytes....\n",
               0600);
    daemon_refuses(&d, 0, path, "it is not an SQLite database (pick another path with --db)");
    daemon_cleanup(&d);
}

static void test_refuses_a_missing_directory(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    char path[400], why[1024];
    snprintf(path, sizeof(path), "%s/missing/events.db", d.dir);
    snprintf(why, sizeof(why), "directory %s/missing does not exist (check that its directory exists and is "
             "writable, or pick another path with --db)", d.dir);
    daemon_refuses(&d, 0, path, why);
    daemon_cleanup(&d);
}

/* Another program's database gains no table: byte for byte as it was,
 * no -wal or -shm left beside it. */
static void test_refuses_another_programs_database_untouched(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    char path[400], wal[420], shm[420];
    snprintf(path, sizeof(path), "%s/app.db", d.dir);
    snprintf(wal, sizeof(wal), "%s-wal", path);
    snprintf(shm, sizeof(shm), "%s-shm", path);
    make_foreign_db(path);
    size_t before_len, after_len;
    void *before = read_whole(path, &before_len);
    struct stat st0, st1;
    assert_int_equal(stat(path, &st0), 0);
    daemon_refuses(&d, 0, path,
                   "it is an SQLite database of another program (tables: notes, t; no seccheckd meta "
                   "schema_version); it is left untouched (pick another path with --db)");
    assert_int_equal(stat(path, &st1), 0);
    void *after = read_whole(path, &after_len);
    bool same = st0.st_size == st1.st_size && before_len == after_len && memcmp(before, after, before_len) == 0;
    free(before);
    free(after);
    assert_true(same);
    assert_false(exists(wal));
    assert_false(exists(shm));
    daemon_cleanup(&d);
}

/* Read-only: a file on a read-only file system (root writes anything
 * else), then as an unprivileged user a file and directories it may not
 * write. */
static void test_refuses_a_read_only_file_system(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    char mnt[300], path[400], fresh[400];
    snprintf(mnt, sizeof(mnt), "%s/rofs", d.dir);
    assert_int_equal(mkdir(mnt, 0700), 0);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=1m") != 0) {
        daemon_cleanup(&d);
        skip();   /* needs root */
    }
    snprintf(path, sizeof(path), "%s/events.db", mnt);
    snprintf(fresh, sizeof(fresh), "%s/new.db", mnt);
    FILE *f = fopen(path, "w");   /* not write_file: it asserts, and the tmpfs is mounted */
    if (f)
        fclose(f);
    int remounted = mount("tmpfs", mnt, "tmpfs", MS_REMOUNT | MS_RDONLY, "size=1m");
    char existing_line[2048], fresh_line[2048];
    int existing_code = run_daemon(&d, 0, path, existing_line, sizeof(existing_line));
    int fresh_code = run_daemon(&d, 0, fresh, fresh_line, sizeof(fresh_line));
    umount(mnt);   /* before any assertion: a failed one would leave it mounted */
    daemon_cleanup(&d);
    assert_int_equal(remounted, 0);
    assert_refusal(existing_code, existing_line, path, "it is on a read-only file system (pick another path with --db)");
    assert_refusal(fresh_code, fresh_line, fresh,
                   "cannot create it: the file system is read-only (pick another path with --db)");
}

static void test_refuses_what_the_user_may_not_write(void **state)
{
    (void)state;
    if (getuid() != 0)
        skip();   /* needs root to run the daemon as another user */
    struct daemon d;
    daemon_prepare(&d);
    assert_int_equal(chmod(d.dir, 0755), 0);
    char pub[300], locked[300], ro[400], missing[400], mine[400], why[1024];
    snprintf(pub, sizeof(pub), "%s/pub", d.dir);
    snprintf(locked, sizeof(locked), "%s/locked", d.dir);
    assert_int_equal(mkdir(pub, 0777), 0);
    assert_int_equal(chmod(pub, 0777), 0);
    assert_int_equal(mkdir(locked, 0755), 0);
    snprintf(d.socket, sizeof(d.socket), "%.250s/s.sock", pub);
    snprintf(ro, sizeof(ro), "%s/ro.db", pub);
    snprintf(missing, sizeof(missing), "%s/events.db", locked);
    snprintf(mine, sizeof(mine), "%s/mine.db", locked);
    write_file(ro, "", 0444);
    write_file(mine, "", 0666);   /* writable, but not its directory */

    daemon_refuses(&d, NOBODY, ro, "it is read-only for this user (Permission denied): make it writable by the "
                                   "user seccheckd runs as, or pick another path with --db");
    snprintf(why, sizeof(why), "cannot create it in directory %s: Permission denied (check that its directory "
             "exists and is writable by the user seccheckd runs as, or pick another path with --db)", locked);
    daemon_refuses(&d, NOBODY, missing, why);
    snprintf(why, sizeof(why), "its -wal and -shm files cannot be created in directory %s: Permission denied "
             "(check that its directory exists and is writable by the user seccheckd runs as, or pick another "
             "path with --db)", locked);
    daemon_refuses(&d, NOBODY, mine, why);
    daemon_cleanup(&d);
}

/* ---- verify, export and forward on such paths ---- */

/* `seccheckd SUBCOMMAND ARGS --db path` says expected (and fails). */
static void subcommand_says(const struct daemon *d, const char *const *sub, const char *path, const char *expected)
{
    const char *argv[16] = {"/usr/bin/timeout", "3", SECCHECKD_BIN};
    int n = 3;
    for (int i = 0; sub[i]; i++)
        argv[n++] = sub[i];
    argv[n++] = "--db";
    argv[n++] = path;
    argv[n] = NULL;
    char log[400];
    snprintf(log, sizeof(log), "%s/sub.log", d->dir);
    int code = run_as(0, argv, log);
    size_t len;
    char *text = read_whole(log, &len);
    bool said = strstr(text, expected) != NULL;
    if (!said)
        printf("%s %s --db %s said: %s\n", SECCHECKD_BIN, sub[0], path, text);
    free(text);
    assert_int_not_equal(code, 0);
    assert_true(said);
}

static void test_subcommands_name_the_problem(void **state)
{
    (void)state;
    struct daemon d;
    daemon_prepare(&d);
    char dir[400], missing[400], junk[400], app[400], expected[1024];
    snprintf(dir, sizeof(dir), "%s/adir", d.dir);
    snprintf(missing, sizeof(missing), "%s/missing.db", d.dir);
    snprintf(junk, sizeof(junk), "%s/notes.txt", d.dir);
    snprintf(app, sizeof(app), "%s/app.db", d.dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    write_file(junk, "these are notes, not a database; long enough to fill a header of one hundred bytes....\n",
               0600);
    make_foreign_db(app);
    size_t before_len, after_len;
    void *before = read_whole(app, &before_len);
    const char *verify[] = {"verify", NULL};
    const char *export[] = {"export", "--format", "ndjson", NULL};
    const char *forward[] = {"forward", "--to", "postgresql:///none?host=/nonexistent", "--host-id", "h", NULL};
    const char *const *subs[] = {verify, export, forward};
    for (int i = 0; i < 3; i++) {
        snprintf(expected, sizeof(expected), "%s is a directory, not a database file", dir);
        subcommand_says(&d, subs[i], dir, expected);
        snprintf(expected, sizeof(expected), "cannot open %s: No such file or directory", missing);
        subcommand_says(&d, subs[i], missing, expected);
        assert_false(exists(missing));
    }
    subcommand_says(&d, verify, junk, "not a seccheckd database");
    subcommand_says(&d, export, junk, "is not a seccheckd database");
    subcommand_says(&d, forward, junk, "file is not a database");
    subcommand_says(&d, verify, app, "not a seccheckd database");
    subcommand_says(&d, export, app, "is not a seccheckd database");
    subcommand_says(&d, forward, app, "not a seccheckd database");
    void *after = read_whole(app, &after_len);
    bool same = before_len == after_len && memcmp(before, after, before_len) == 0;
    free(before);
    free(after);
    assert_true(same);
    daemon_cleanup(&d);
}

static int setup(void **state)
{
    static const char *const names[] = {"mixed_syscalls"};
    if (trace_fixture_setup(state, names, 1) != 0)
        return -1;
    mixed = ((struct trace_fixture *)*state)->traces[0];
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_created_0640_under_umask_0),
        cmocka_unit_test(test_created_0640_under_umask_022),
        cmocka_unit_test(test_created_0640_under_umask_077),
        cmocka_unit_test(test_refuses_a_directory),
        cmocka_unit_test(test_refuses_a_file_that_is_not_a_database),
        cmocka_unit_test(test_refuses_a_missing_directory),
        cmocka_unit_test(test_refuses_another_programs_database_untouched),
        cmocka_unit_test(test_refuses_a_read_only_file_system),
        cmocka_unit_test(test_refuses_what_the_user_may_not_write),
        cmocka_unit_test(test_subcommands_name_the_problem),
    };
    return cmocka_run_group_tests(tests, setup, trace_fixture_teardown);
}
