#include "linux_names.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/* ---- errno ---- */

/* The kernel's restart codes, which the C library does not name: a
 * syscall interrupted by a signal can exit with one. */
static const char *const restart_names[] = {"ERESTARTSYS", "ERESTARTNOINTR", "ERESTARTNOHAND", "ENOIOCTLCMD",
                                            "ERESTART_RESTARTBLOCK"};
#define RESTART_FIRST 512
#define RESTART_COUNT (sizeof(restart_names) / sizeof(restart_names[0]))
#define ERRNO_LAST 4095   /* the kernel's MAX_ERRNO: an exit's errno is never larger */

const char *linux_errno_name(int64_t errnum)
{
    if (errnum >= RESTART_FIRST && errnum < RESTART_FIRST + (int64_t)RESTART_COUNT)
        return restart_names[errnum - RESTART_FIRST];
    return errnum >= 1 && errnum <= ERRNO_LAST ? strerrorname_np((int)errnum) : NULL;
}

/* ---- socket families ---- */

struct named {
    int64_t number;
    const char *name;
};
#define NAMED(c) {c, #c}

static const struct named families[] = {
    NAMED(AF_UNSPEC), NAMED(AF_UNIX), NAMED(AF_INET), NAMED(AF_AX25), NAMED(AF_IPX), NAMED(AF_APPLETALK),
    NAMED(AF_NETROM), NAMED(AF_BRIDGE), NAMED(AF_ATMPVC), NAMED(AF_X25), NAMED(AF_INET6), NAMED(AF_ROSE),
    NAMED(AF_DECnet), NAMED(AF_NETBEUI), NAMED(AF_SECURITY), NAMED(AF_KEY), NAMED(AF_NETLINK), NAMED(AF_PACKET),
    NAMED(AF_ASH), NAMED(AF_ECONET), NAMED(AF_ATMSVC), NAMED(AF_RDS), NAMED(AF_SNA), NAMED(AF_IRDA),
    NAMED(AF_PPPOX), NAMED(AF_WANPIPE), NAMED(AF_LLC), NAMED(AF_IB), NAMED(AF_MPLS), NAMED(AF_CAN),
    NAMED(AF_TIPC), NAMED(AF_BLUETOOTH), NAMED(AF_IUCV), NAMED(AF_RXRPC), NAMED(AF_ISDN), NAMED(AF_PHONET),
    NAMED(AF_IEEE802154), NAMED(AF_CAIF), NAMED(AF_ALG), NAMED(AF_NFC), NAMED(AF_VSOCK), NAMED(AF_KCM),
    NAMED(AF_QIPCRTR), NAMED(AF_SMC), NAMED(AF_XDP),
#ifdef AF_MCTP
    NAMED(AF_MCTP),
#endif
};
#define NFAMILIES (sizeof(families) / sizeof(families[0]))

const char *linux_family_name(int64_t family)
{
    for (size_t i = 0; i < NFAMILIES; i++)
        if (families[i].number == family)
            return families[i].name;
    return NULL;
}

/* ---- open flags ---- */

/* glibc's O_LARGEFILE is 0 on 64-bit (it never needs to pass it); the
 * kernel's bit, which a program may still set, is this. */
#define KERNEL_O_LARGEFILE 0100000

/* A name shows when flags & mask == value. Masks of several bits group
 * values that are not single bits (the access mode, O_SYNC over O_DSYNC,
 * O_TMPFILE over O_DIRECTORY); groups never share a bit. */
struct open_flag {
    uint32_t value, mask;
    const char *name;
};

static const struct open_flag named_flags[] = {
    {O_RDONLY, O_ACCMODE, "O_RDONLY"}, {O_WRONLY, O_ACCMODE, "O_WRONLY"}, {O_RDWR, O_ACCMODE, "O_RDWR"},
    {O_ACCMODE, O_ACCMODE, "O_ACCMODE"},
    {O_CREAT, O_CREAT, "O_CREAT"}, {O_EXCL, O_EXCL, "O_EXCL"}, {O_NOCTTY, O_NOCTTY, "O_NOCTTY"},
    {O_TRUNC, O_TRUNC, "O_TRUNC"}, {O_APPEND, O_APPEND, "O_APPEND"}, {O_NONBLOCK, O_NONBLOCK, "O_NONBLOCK"},
    {O_DSYNC, O_SYNC, "O_DSYNC"}, {O_SYNC, O_SYNC, "O_SYNC"}, {O_ASYNC, O_ASYNC, "O_ASYNC"},
    {O_DIRECT, O_DIRECT, "O_DIRECT"}, {KERNEL_O_LARGEFILE, KERNEL_O_LARGEFILE, "O_LARGEFILE"},
    {O_DIRECTORY, O_TMPFILE, "O_DIRECTORY"}, {O_TMPFILE, O_TMPFILE, "O_TMPFILE"},
    {O_NOFOLLOW, O_NOFOLLOW, "O_NOFOLLOW"}, {O_NOATIME, O_NOATIME, "O_NOATIME"},
    {O_CLOEXEC, O_CLOEXEC, "O_CLOEXEC"}, {O_PATH, O_PATH, "O_PATH"},
};
#define NNAMED (sizeof(named_flags) / sizeof(named_flags[0]))

/* Every row, ordered by each mask's lowest bit: the named ones, a hex row
 * for each other non-zero value of a group's mask, and one per bit in no
 * mask, so every flags value shows whole. Names point into hex[]. */
struct flag_rows {
    struct open_flag row[96];
    char hex[96][12];
    size_t n;
};

static bool is_named(uint32_t value, uint32_t mask)
{
    for (size_t i = 0; i < NNAMED; i++)
        if (named_flags[i].value == value && named_flags[i].mask == mask)
            return true;
    return false;
}

static void add_row(struct flag_rows *r, uint32_t value, uint32_t mask, const char *name)
{
    if (!name) {
        snprintf(r->hex[r->n], sizeof(r->hex[r->n]), "0x%x", value);
        name = r->hex[r->n];
    }
    r->row[r->n++] = (struct open_flag){value, mask, name};
}

/* The named rows of mask in their order, then its other values as hex. */
static void add_group(struct flag_rows *r, uint32_t mask)
{
    for (size_t i = 0; i < NNAMED; i++)
        if (named_flags[i].mask == mask)
            add_row(r, named_flags[i].value, mask, named_flags[i].name);
    /* Each non-zero sub-value of mask (mask has at most a few bits). */
    for (uint32_t v = (mask - 1) & mask; v; v = (v - 1) & mask)
        if (!is_named(v, mask))
            add_row(r, v, mask, NULL);
    if (!is_named(mask, mask))
        add_row(r, mask, mask, NULL);
}

static void build_rows(struct flag_rows *r)
{
    r->n = 0;
    for (int bit = 0; bit < 32; bit++) {
        uint32_t b = 1u << bit, owner = 0;
        for (size_t i = 0; i < NNAMED && !owner; i++)
            if (named_flags[i].mask & b)
                owner = named_flags[i].mask;
        if (!owner)
            add_row(r, b, b, NULL);
        else if ((owner & -owner) == b)   /* the group's lowest bit: its place */
            add_group(r, owner);
    }
}

void linux_open_flags(struct strbuf *out, uint32_t flags)
{
    struct flag_rows r;
    build_rows(&r);
    bool first = true;
    for (size_t i = 0; i < r.n; i++)
        if ((flags & r.row[i].mask) == r.row[i].value) {
            if (!first)
                strbuf_putc(out, '|');
            strbuf_puts(out, r.row[i].name);
            first = false;
        }
}

/* ---- SQL ---- */

static void table_head(struct strbuf *sql, const char *table, const char *columns)
{
    strbuf_printf(sql, "CREATE TABLE IF NOT EXISTS %s(%s);\nDELETE FROM %s;\nINSERT INTO %s VALUES", table, columns,
                  table, table);
}

void linux_names_sql(struct strbuf *sql)
{
    table_head(sql, "errno_names", "errno integer PRIMARY KEY, name text NOT NULL");
    const char *sep = "";
    for (int64_t e = 1; e <= ERRNO_LAST; e++) {
        const char *name = linux_errno_name(e);
        if (name) {
            strbuf_printf(sql, "%s(%lld,'%s')", sep, (long long)e, name);
            sep = ",";
        }
    }
    strbuf_puts(sql, ";\n");
    table_head(sql, "socket_family_names", "family integer PRIMARY KEY, name text NOT NULL");
    for (size_t i = 0; i < NFAMILIES; i++)
        strbuf_printf(sql, "%s(%lld,'%s')", i ? "," : "", (long long)families[i].number, families[i].name);
    strbuf_puts(sql, ";\n");
    table_head(sql, "open_flag_names",
               "ord integer PRIMARY KEY, value bigint NOT NULL, mask bigint NOT NULL, name text NOT NULL");
    struct flag_rows r;
    build_rows(&r);
    for (size_t i = 0; i < r.n; i++)
        strbuf_printf(sql, "%s(%zu,%u,%u,'%s')", i ? "," : "", i + 1, r.row[i].value, r.row[i].mask, r.row[i].name);
    strbuf_puts(sql, ";\n");
}
