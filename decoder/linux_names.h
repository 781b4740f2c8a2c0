/* linux_names.h - the Linux numbers a sandbox reports, as people write
 * them: errno values (ENOENT), open(2) flags (O_WRONLY|O_CREAT|O_CLOEXEC)
 * and socket address families (AF_INET).
 *
 * Taken from the C library's own constants (strerrorname_np, <fcntl.h>,
 * <sys/socket.h>), so they are the ABI gVisor implements on this host, as
 * the views' syscall numbers are (x86-64). The same tables feed the
 * lookup tables the SQL views join (linux_names_sql), locally and
 * centrally, and `seccheckd events`: a name reads the same everywhere.
 */
#ifndef SECCHECKD_LINUX_NAMES_H
#define SECCHECKD_LINUX_NAMES_H

#include <stdint.h>

#include "strbuf.h"

/* "ENOENT" for 2; NULL for 0 and numbers without a name. */
const char *linux_errno_name(int64_t errnum);

/* "AF_INET" for 2; NULL for numbers without a name. */
const char *linux_family_name(int64_t family);

/* Appends flags as names joined by '|', the access mode first
 * ("O_RDONLY" for 0); a bit without a name as hex ("0x8000000"), so
 * every bit set shows. */
void linux_open_flags(struct strbuf *out, uint32_t flags);

/* Appends the SQL that creates and fills the lookup tables, valid as it is
 * in SQLite and PostgreSQL (refilled whole, so a new build's names win):
 *   errno_names(errno, name)
 *   socket_family_names(family, name)
 *   open_flag_names(ord, value, mask, name): flags f show the names of
 *     the rows where f & mask = value, in ord order, joined by '|'
 *     (exactly linux_open_flags). */
void linux_names_sql(struct strbuf *sql);

/* ---- as Falco writes them ----
 *
 * The text libsinsp gives an event argument (evt.arg.flags, evt.args), from
 * the kernel's value: libs' name tables (falcosecurity/libs
 * driver/flags_table.c) in their order, joined by '|', with its rules for
 * which names show; the number as libs prints it when no name does. Each
 * appends to out. */

/* open(2) flags: "O_TRUNC|O_CREAT|O_WRONLY" (libs' table order, so not the
 * kernel's bit order), "O_RDONLY|O_CLOEXEC". Falco's driver names O_TMPFILE
 * for any O_DIRECTORY open and O_SYNC for any O_DSYNC one (it tests one bit
 * of those two-bit values); here a name shows only when its whole value is
 * set. */
void falco_open_flags(struct strbuf *out, uint32_t flags);
/* A file mode's permission and set-id bits (chmod, fchmod, fchmodat):
 * "S_IXOTH|S_IROTH|...|S_IRUSR"; "0" for none. */
void falco_mode(struct strbuf *out, uint32_t mode);
/* A socket domain: every name of its value ("AF_LOCAL|AF_UNIX", "AF_INET",
 * "AF_PACKET"), or the number when libs names none. */
void falco_socket_family(struct strbuf *out, int64_t family);
/* clone, unshare, setns flags: "CLONE_NEWNS|CLONE_NEWUSER"; the number when
 * none is named. */
void falco_clone_flags(struct strbuf *out, uint64_t flags);
/* bpf(2)'s command: "BPF_PROG_LOAD", or the number. */
void falco_bpf_command(struct strbuf *out, int64_t cmd);
/* "SIGKILL" for 9; NULL for numbers libs does not name. */
const char *falco_signal_name(int64_t sig);

#endif
