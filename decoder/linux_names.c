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

/* ---- as Falco writes them ----
 *
 * libsinsp renders a flags argument from its own bit values (PPM_*) and a
 * table of names in a fixed order (falcosecurity/libs driver/flags_table.c;
 * the rules in userspace/libsinsp/event.cpp get_param_as_str). The tables
 * here hold the same names in the same order with the bit values of
 * libs' encoding, and each renderer first converts the kernel's value as
 * libs' driver does (driver/ppm_flag_helpers.h). */

struct falco_name {
    const char *name;
    uint32_t value;
};
#define FALCO_N(t) (sizeof(t) / sizeof(t[0]))

/* PT_FLAGS: each name whose bits are all still set, its bits then taken
 * out; a 0-valued name only for 0; stops at the name equal to the value. */
static bool falco_flags(struct strbuf *out, const struct falco_name *t, size_t n, uint32_t value)
{
    uint32_t left = value;
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        bool match = t[i].value == 0 ? value == 0 : left != 0 && (left & t[i].value) == t[i].value;
        if (!match)
            continue;
        left &= ~t[i].value;
        if (any)
            strbuf_putc(out, '|');
        strbuf_puts(out, t[i].name);
        any = true;
        if (t[i].value == value)
            break;
    }
    return any;
}

/* PT_ENUMFLAGS: every name of exactly this value. */
static bool falco_enum(struct strbuf *out, const struct falco_name *t, size_t n, uint32_t value)
{
    bool any = false;
    for (size_t i = 0; i < n; i++)
        if (t[i].value == value) {
            if (any)
                strbuf_putc(out, '|');
            strbuf_puts(out, t[i].name);
            any = true;
        }
    return any;
}

enum {
    PPM_O_RDONLY = 1 << 0, PPM_O_WRONLY = 1 << 1, PPM_O_RDWR = PPM_O_RDONLY | PPM_O_WRONLY, PPM_O_CREAT = 1 << 2,
    PPM_O_APPEND = 1 << 3, PPM_O_DSYNC = 1 << 4, PPM_O_EXCL = 1 << 5, PPM_O_NONBLOCK = 1 << 6, PPM_O_SYNC = 1 << 7,
    PPM_O_TRUNC = 1 << 8, PPM_O_DIRECT = 1 << 9, PPM_O_DIRECTORY = 1 << 10, PPM_O_LARGEFILE = 1 << 11,
    PPM_O_CLOEXEC = 1 << 12, PPM_O_TMPFILE = 1 << 13,
};

static const struct falco_name file_flags[] = {
    {"O_LARGEFILE", PPM_O_LARGEFILE}, {"O_DIRECTORY", PPM_O_DIRECTORY}, {"O_DIRECT", PPM_O_DIRECT},
    {"O_TRUNC", PPM_O_TRUNC}, {"O_SYNC", PPM_O_SYNC}, {"O_NONBLOCK", PPM_O_NONBLOCK}, {"O_EXCL", PPM_O_EXCL},
    {"O_DSYNC", PPM_O_DSYNC}, {"O_APPEND", PPM_O_APPEND}, {"O_CREAT", PPM_O_CREAT}, {"O_RDWR", PPM_O_RDWR},
    {"O_WRONLY", PPM_O_WRONLY}, {"O_RDONLY", PPM_O_RDONLY}, {"O_CLOEXEC", PPM_O_CLOEXEC}, {"O_NONE", 0},
    {"O_TMPFILE", PPM_O_TMPFILE},
};

static uint32_t open_flags_to_ppm(uint32_t f)
{
    static const struct {
        uint32_t kernel, ppm;
    } bits[] = {
        {O_CREAT, PPM_O_CREAT}, {O_TMPFILE, PPM_O_TMPFILE}, {O_APPEND, PPM_O_APPEND}, {O_DSYNC, PPM_O_DSYNC},
        {O_EXCL, PPM_O_EXCL}, {O_NONBLOCK, PPM_O_NONBLOCK}, {O_SYNC, PPM_O_SYNC}, {O_TRUNC, PPM_O_TRUNC},
        {O_DIRECT, PPM_O_DIRECT}, {O_DIRECTORY, PPM_O_DIRECTORY}, {KERNEL_O_LARGEFILE, PPM_O_LARGEFILE},
        {O_CLOEXEC, PPM_O_CLOEXEC},
    };
    uint32_t p = (f & O_ACCMODE) == O_WRONLY ? PPM_O_WRONLY : (f & O_ACCMODE) == O_RDWR ? PPM_O_RDWR : PPM_O_RDONLY;
    for (size_t i = 0; i < FALCO_N(bits); i++)
        if ((f & bits[i].kernel) == bits[i].kernel)
            p |= bits[i].ppm;
    return p;
}

void falco_open_flags(struct strbuf *out, uint32_t flags)
{
    uint32_t p = open_flags_to_ppm(flags);
    if (!falco_flags(out, file_flags, FALCO_N(file_flags), p))
        strbuf_put_u64(out, p);
}

/* libs' mode bits are the kernel's. */
static const struct falco_name chmod_mode[] = {
    {"S_IXOTH", 01}, {"S_IWOTH", 02}, {"S_IROTH", 04}, {"S_IXGRP", 010}, {"S_IWGRP", 020}, {"S_IRGRP", 040},
    {"S_IXUSR", 0100}, {"S_IWUSR", 0200}, {"S_IRUSR", 0400}, {"S_ISVTX", 01000}, {"S_ISGID", 02000},
    {"S_ISUID", 04000},
};

void falco_mode(struct strbuf *out, uint32_t mode)
{
    /* PT_MODE: each name whose bits are set, in table order (libs stops one
     * early on a name equal to the whole value, then writes it: the same
     * text). No name: the number in octal as "%#o" prints it. */
    uint32_t left = mode & 07777;
    bool any = false;
    for (size_t i = 0; i < FALCO_N(chmod_mode) && left; i++)
        if ((left & chmod_mode[i].value) == chmod_mode[i].value) {
            left &= ~chmod_mode[i].value;
            if (any)
                strbuf_putc(out, '|');
            strbuf_puts(out, chmod_mode[i].name);
            any = true;
        }
    if (!any)
        strbuf_printf(out, "%#o", mode);
}

static const struct falco_name socket_families[] = {
    {"AF_NFC", 39}, {"AF_ALG", 38}, {"AF_CAIF", 37}, {"AF_IEEE802154", 36}, {"AF_PHONET", 35}, {"AF_ISDN", 34},
    {"AF_RXRPC", 33}, {"AF_IUCV", 32}, {"AF_BLUETOOTH", 31}, {"AF_TIPC", 30}, {"AF_CAN", 29}, {"AF_LLC", 26},
    {"AF_WANPIPE", 25}, {"AF_PPPOX", 24}, {"AF_IRDA", 23}, {"AF_SNA", 22}, {"AF_RDS", 21}, {"AF_ATMSVC", 20},
    {"AF_ECONET", 19}, {"AF_ASH", 18}, {"AF_PACKET", 17}, {"AF_ROUTE", 16}, {"AF_NETLINK", 16}, {"AF_KEY", 15},
    {"AF_SECURITY", 14}, {"AF_NETBEUI", 13}, {"AF_DECnet", 12}, {"AF_ROSE", 11}, {"AF_INET6", 10}, {"AF_X25", 9},
    {"AF_ATMPVC", 8}, {"AF_BRIDGE", 7}, {"AF_NETROM", 6}, {"AF_APPLETALK", 5}, {"AF_IPX", 4}, {"AF_AX25", 3},
    {"AF_INET", 2}, {"AF_LOCAL", 1}, {"AF_UNIX", 1}, {"AF_UNSPEC", 0},
};

void falco_socket_family(struct strbuf *out, int64_t family)
{
    if (family < 0 || family > UINT32_MAX ||
        !falco_enum(out, socket_families, FALCO_N(socket_families), (uint32_t)family))
        strbuf_put_i64(out, family);
}

/* libs' clone names, in its table order (its bit order), with the kernel's
 * bits: each kernel bit converts to one of libs' bits. */
static const struct falco_name clone_flags[] = {
    {"CLONE_FILES", 0x400}, {"CLONE_FS", 0x200}, {"CLONE_IO", 0x80000000u}, {"CLONE_NEWIPC", 0x08000000},
    {"CLONE_NEWNET", 0x40000000}, {"CLONE_NEWNS", 0x20000}, {"CLONE_NEWPID", 0x20000000},
    {"CLONE_NEWUTS", 0x04000000}, {"CLONE_PARENT", 0x8000}, {"CLONE_PARENT_SETTID", 0x100000},
    {"CLONE_PTRACE", 0x2000}, {"CLONE_SIGHAND", 0x800}, {"CLONE_SYSVSEM", 0x40000}, {"CLONE_THREAD", 0x10000},
    {"CLONE_UNTRACED", 0x800000}, {"CLONE_VM", 0x100}, {"CLONE_NEWUSER", 0x10000000},
    {"CLONE_CHILD_CLEARTID", 0x200000}, {"CLONE_CHILD_SETTID", 0x01000000}, {"CLONE_SETTLS", 0x80000},
    {"CLONE_VFORK", 0x4000}, {"CLONE_NEWCGROUP", 0x02000000},
};

void falco_clone_flags(struct strbuf *out, uint64_t flags)
{
    /* Each name whose kernel bit is set: libs' driver converts bit by bit
     * (CLONE_STOPPED's old bit is CLONE_NEWCGROUP's now: the driver, built
     * on a current kernel, names only the latter). */
    bool any = false;
    for (size_t i = 0; i < FALCO_N(clone_flags); i++)
        if (flags & clone_flags[i].value) {
            if (any)
                strbuf_putc(out, '|');
            strbuf_puts(out, clone_flags[i].name);
            any = true;
        }
    if (!any)
        strbuf_put_u64(out, flags);
}

static const char *const bpf_commands[] = {
    "BPF_MAP_CREATE", "BPF_MAP_LOOKUP_ELEM", "BPF_MAP_UPDATE_ELEM", "BPF_MAP_DELETE_ELEM", "BPF_MAP_GET_NEXT_KEY",
    "BPF_PROG_LOAD", "BPF_OBJ_PIN", "BPF_OBJ_GET", "BPF_PROG_ATTACH", "BPF_PROG_DETACH", "BPF_PROG_TEST_RUN",
    "BPF_PROG_GET_NEXT_ID", "BPF_MAP_GET_NEXT_ID", "BPF_PROG_GET_FD_BY_ID", "BPF_MAP_GET_FD_BY_ID",
    "BPF_OBJ_GET_INFO_BY_FD", "BPF_PROG_QUERY", "BPF_RAW_TRACEPOINT_OPEN", "BPF_BTF_LOAD", "BPF_BTF_GET_FD_BY_ID",
    "BPF_TASK_FD_QUERY", "BPF_MAP_LOOKUP_AND_DELETE_ELEM", "BPF_MAP_FREEZE", "BPF_BTF_GET_NEXT_ID",
    "BPF_MAP_LOOKUP_BATCH", "BPF_MAP_LOOKUP_AND_DELETE_BATCH", "BPF_MAP_UPDATE_BATCH", "BPF_MAP_DELETE_BATCH",
    "BPF_LINK_CREATE", "BPF_LINK_UPDATE", "BPF_LINK_GET_FD_BY_ID", "BPF_LINK_GET_NEXT_ID", "BPF_ENABLE_STATS",
    "BPF_ITER_CREATE", "BPF_LINK_DETACH", "BPF_PROG_BIND_MAP",
};

void falco_bpf_command(struct strbuf *out, int64_t cmd)
{
    if (cmd >= 0 && cmd < (int64_t)FALCO_N(bpf_commands)) {
        strbuf_puts(out, bpf_commands[cmd]);
        if (cmd == 10)
            strbuf_puts(out, "|BPF_PROG_RUN");   /* libs' alias of the same value, an enum: both show */
    } else {
        strbuf_put_i64(out, cmd);
    }
}

const char *falco_signal_name(int64_t sig)
{
    static const char *const names[] = {
        NULL, "SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE", "SIGKILL",
        "SIGUSR1", "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGTERM", "SIGSTKFLT", "SIGCHLD", "SIGCONT",
        "SIGSTOP", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGURG", "SIGXCPU", "SIGXFSZ", "SIGVTALRM", "SIGPROF",
        "SIGWINCH", "SIGIO", "SIGPWR", "SIGSYS",
    };
    return sig > 0 && sig < (int64_t)FALCO_N(names) ? names[sig] : NULL;
}
