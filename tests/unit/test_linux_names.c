/* test_linux_names.c - errno, socket family and open flag names
 * (decoder/linux_names.h), and that the SQL lookup tables the views join
 * give the same text as the C functions. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "linux_names.h"

static void test_errno_names(void **state)
{
    (void)state;
    assert_string_equal(linux_errno_name(2), "ENOENT");
    assert_string_equal(linux_errno_name(13), "EACCES");
    assert_string_equal(linux_errno_name(111), "ECONNREFUSED");
    assert_string_equal(linux_errno_name(133), "EHWPOISON");
    assert_string_equal(linux_errno_name(512), "ERESTARTSYS");
    assert_string_equal(linux_errno_name(516), "ERESTART_RESTARTBLOCK");
    assert_null(linux_errno_name(0));
    assert_null(linux_errno_name(-2));
    assert_null(linux_errno_name(517));
    assert_null(linux_errno_name(4096));
    assert_null(linux_errno_name(INT64_MAX));
    assert_null(linux_errno_name((int64_t)1 << 32 | 2));   /* not 2 once truncated to int */
}

static void test_family_names(void **state)
{
    (void)state;
    assert_string_equal(linux_family_name(0), "AF_UNSPEC");
    assert_string_equal(linux_family_name(1), "AF_UNIX");
    assert_string_equal(linux_family_name(2), "AF_INET");
    assert_string_equal(linux_family_name(10), "AF_INET6");
    assert_string_equal(linux_family_name(16), "AF_NETLINK");
    assert_string_equal(linux_family_name(40), "AF_VSOCK");
    assert_null(linux_family_name(-1));
    assert_null(linux_family_name(9999));
}

static char *flags_text(uint32_t flags)
{
    static struct strbuf sb;
    strbuf_reset(&sb);
    linux_open_flags(&sb, flags);
    assert_false(sb.failed);
    return sb.len ? sb.data : "";
}

static void test_open_flags(void **state)
{
    (void)state;
    assert_string_equal(flags_text(0), "O_RDONLY");
    assert_string_equal(flags_text(O_WRONLY | O_CREAT | O_CLOEXEC), "O_WRONLY|O_CREAT|O_CLOEXEC");
    assert_string_equal(flags_text(O_RDWR | O_TRUNC | O_APPEND | O_NONBLOCK), "O_RDWR|O_TRUNC|O_APPEND|O_NONBLOCK");
    assert_string_equal(flags_text(O_ACCMODE), "O_ACCMODE");
    /* multi-bit values: one name, not their parts */
    assert_string_equal(flags_text(O_SYNC), "O_RDONLY|O_SYNC");
    assert_string_equal(flags_text(O_DSYNC), "O_RDONLY|O_DSYNC");
    assert_string_equal(flags_text(O_RDWR | O_TMPFILE), "O_RDWR|O_TMPFILE");
    assert_string_equal(flags_text(O_DIRECTORY | O_CLOEXEC), "O_RDONLY|O_DIRECTORY|O_CLOEXEC");
    /* the kernel's O_LARGEFILE (glibc's is 0 on 64-bit) */
    assert_string_equal(flags_text(0100000), "O_RDONLY|O_LARGEFILE");
    /* bits without a name show as hex: none is lost */
    assert_string_equal(flags_text(0x80000000u | O_WRONLY), "O_WRONLY|0x80000000");
    assert_string_equal(flags_text(04000000), "O_RDONLY|0x100000");   /* O_SYNC's own bit without O_DSYNC */
    assert_string_equal(flags_text(020000000), "O_RDONLY|0x400000");  /* O_TMPFILE's without O_DIRECTORY */
}

static char *falco_text(void (*fn)(struct strbuf *, uint32_t), uint32_t v)
{
    static struct strbuf sb;
    strbuf_reset(&sb);
    fn(&sb, v);
    assert_false(sb.failed);
    return sb.len ? sb.data : "";
}

static void clone_fn(struct strbuf *b, uint32_t v) { falco_clone_flags(b, v); }
static void family_fn(struct strbuf *b, uint32_t v) { falco_socket_family(b, (int32_t)v); }
static void bpf_fn(struct strbuf *b, uint32_t v) { falco_bpf_command(b, v); }

/* As libsinsp writes them (falcosecurity/libs driver/flags_table.c order,
 * userspace/libsinsp/event.cpp rules). */
static void test_falco_names(void **state)
{
    (void)state;
    /* libs userspace/libsinsp/test/events_param.ut.cpp:491 bitmaskparams */
    assert_string_equal(falco_text(falco_open_flags, O_RDONLY | O_CLOEXEC), "O_RDONLY|O_CLOEXEC");
    /* libs test/filter_op_contains.ut.cpp:24: PPM_O_RDWR | PPM_O_CREAT */
    assert_string_equal(falco_text(falco_open_flags, O_RDWR | O_CREAT), "O_CREAT|O_RDWR");
    assert_string_equal(falco_text(falco_open_flags, O_WRONLY | O_CREAT | O_TRUNC), "O_TRUNC|O_CREAT|O_WRONLY");
    assert_string_equal(falco_text(falco_open_flags, O_ACCMODE), "O_RDONLY");   /* libs maps 3 to read */
    assert_string_equal(falco_text(falco_open_flags, O_DIRECTORY | O_NONBLOCK), "O_DIRECTORY|O_NONBLOCK|O_RDONLY");
    assert_string_equal(falco_text(falco_open_flags, O_TMPFILE | O_RDWR), "O_DIRECTORY|O_RDWR|O_TMPFILE");
    assert_string_equal(falco_text(falco_open_flags, O_SYNC | O_WRONLY), "O_SYNC|O_DSYNC|O_WRONLY");
    assert_string_equal(falco_text(falco_open_flags, O_DSYNC), "O_DSYNC|O_RDONLY");
    assert_string_equal(falco_text(falco_open_flags, 0100000 | O_APPEND | O_EXCL | O_DIRECT | O_WRONLY),
                        "O_LARGEFILE|O_DIRECT|O_EXCL|O_APPEND|O_WRONLY");
    assert_string_equal(falco_text(falco_open_flags, 0x80000000u), "O_RDONLY");   /* no name: not shown */
    /* modes: PT_MODE */
    assert_string_equal(falco_text(falco_mode, 04755),
                        "S_IXOTH|S_IROTH|S_IXGRP|S_IRGRP|S_IXUSR|S_IWUSR|S_IRUSR|S_ISUID");
    assert_string_equal(falco_text(falco_mode, 02000), "S_ISGID");
    assert_string_equal(falco_text(falco_mode, 0), "0");
    assert_string_equal(falco_text(falco_mode, 0100644), "S_IROTH|S_IRGRP|S_IWUSR|S_IRUSR");
    /* enums: every name of the value */
    assert_string_equal(falco_text(family_fn, 1), "AF_LOCAL|AF_UNIX");
    assert_string_equal(falco_text(family_fn, 16), "AF_ROUTE|AF_NETLINK");
    assert_string_equal(falco_text(family_fn, 17), "AF_PACKET");
    assert_string_equal(falco_text(family_fn, 0), "AF_UNSPEC");
    assert_string_equal(falco_text(family_fn, 40), "40");   /* AF_VSOCK: not in libs' table */
    assert_string_equal(falco_text(bpf_fn, 5), "BPF_PROG_LOAD");
    assert_string_equal(falco_text(bpf_fn, 10), "BPF_PROG_TEST_RUN|BPF_PROG_RUN");
    assert_string_equal(falco_text(bpf_fn, 99), "99");
    assert_string_equal(falco_text(clone_fn, 0x20000 | 0x10000000), "CLONE_NEWNS|CLONE_NEWUSER");
    assert_string_equal(falco_text(clone_fn, 0x100 | 0x400 | 0x800 | 0x10000),
                        "CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_VM");
    assert_string_equal(falco_text(clone_fn, 0x02000000), "CLONE_NEWCGROUP");
    assert_string_equal(falco_text(clone_fn, 0), "0");
    assert_string_equal(falco_signal_name(9), "SIGKILL");
    assert_string_equal(falco_signal_name(31), "SIGSYS");
    assert_null(falco_signal_name(0));
    assert_null(falco_signal_name(34));
    assert_null(falco_signal_name(-9));
}

/* The names of any flags give the flags back: every bit shows once. */
static void test_open_flags_cover_every_bit(void **state)
{
    (void)state;
    struct strbuf sql = {0};
    linux_names_sql(&sql);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql.data, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT group_concat(name, '|'), sum(value) FROM open_flag_names"
                                            " WHERE (?1 & mask) = value", -1, &st, NULL), SQLITE_OK);
    uint32_t x = 12345;
    for (int i = 0; i < 20000; i++) {
        x = x * 1103515245u + 12345u;
        uint32_t flags = i < 32 ? 1u << i : x;
        sqlite3_bind_int64(st, 1, flags);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        /* the view's text (a scan in ord order) is the C text */
        assert_string_equal((const char *)sqlite3_column_text(st, 0), flags_text(flags));
        assert_int_equal((uint32_t)sqlite3_column_int64(st, 1), flags);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    /* the SQL refills: run twice, same rows; every errno and family of C */
    assert_int_equal(sqlite3_exec(db, sql.data, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT (SELECT count(*) FROM errno_names), (SELECT name FROM"
                                            " errno_names WHERE errno = 2), (SELECT name FROM socket_family_names"
                                            " WHERE family = 10)", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int named = 0;
    for (int e = 1; e <= 4095; e++)
        named += linux_errno_name(e) != NULL;
    assert_int_equal(sqlite3_column_int(st, 0), named);
    assert_true(named > 130);
    assert_string_equal((const char *)sqlite3_column_text(st, 1), "ENOENT");
    assert_string_equal((const char *)sqlite3_column_text(st, 2), "AF_INET6");
    sqlite3_finalize(st);
    sqlite3_close(db);
    strbuf_free(&sql);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errno_names),
        cmocka_unit_test(test_family_names),
        cmocka_unit_test(test_open_flags),
        cmocka_unit_test(test_open_flags_cover_every_bit),
        cmocka_unit_test(test_falco_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
