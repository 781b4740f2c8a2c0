/* fields_args.c - evt.arg.NAME under Falco's argument names: libsinsp's
 * parameters of each event (falcosecurity/libs driver/event_table.c, the
 * exit events) mapped onto the gVisor message that reports it, and their
 * text as libsinsp gives it (userspace/libsinsp/event.cpp
 * get_param_as_str: the resolved form when there is one, as
 * sinsp_filter_check_event's evt.arg does).
 *
 * A parameter gVisor never sends (a raw syscall's path, which is a pointer
 * to the sandbox's memory; a read's data) is listed with no source: the
 * name is known, its value absent, and a rule's condition on it cannot be
 * true (availability.c). evt.args renders every parameter that has a value,
 * "name=raw(resolved)" as libs does.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "fields_class.h"
#include "gvisor/container.pb-c.h"
#include "gvisor/sentry.pb-c.h"
#include "gvisor/syscall.pb-c.h"
#include "linux_names.h"

/* How libs writes a parameter (its PT_ type and PF_ format). */
enum render {
    R_DEC,        /* signed decimal */
    R_UDEC,       /* unsigned decimal */
    R_OCT,        /* "%#o" */
    R_HEX,        /* "%X" */
    R_ERRNO,      /* decimal; a negative one names its errno */
    R_FD,         /* decimal; resolved "<f>/path", "AT_FDCWD", an errno name */
    R_PID,        /* decimal; resolved the process's name when known */
    R_STR,        /* the string */
    R_PATH,       /* PT_FSPATH: resolved joined to the cwd when relative */
    R_OPENNAME,   /* an open's name: resolved as fd.name when relative */
    R_OPENFLAGS,  /* open(2) flags by name */
    R_MODE,       /* chmod mode bits by name */
    R_FAMILY,     /* socket domain by name */
    R_CLONE,      /* clone flags by name */
    R_BPF,        /* bpf command by name */
    R_SIG,        /* signal number; resolved its name */
    R_ADDR,       /* a sockaddr: "IP:PORT", a unix path */
    R_TUPLE,      /* the connection as fd.name has it */
    R_BUF,        /* strings, each followed by '.' (libs' byte buffer of NUL-ended strings) */
};

enum source {
    S_NONE,       /* gVisor does not report it */
    S_RES,        /* the syscall's return value (-errno on failure) */
    S_FIELD,      /* a field of the message ("new_limit.cur": of a sub-message) */
    S_RAW,        /* a raw point's argN */
    S_TID, S_PID, S_PTID, S_CWD, S_COMM, S_UID, S_GID,   /* the event's process */
    S_EXE,        /* argv[0] of the exec's own argv */
    S_ARGS,       /* argv[1..] of the exec's own argv */
    S_PEXE, S_PARGS, S_EXEPATH, S_VPGID,                   /* the process table */
    S_EXITSTATUS, S_EXITRET, S_EXITSIG, S_EXITCORE,       /* sentry/task_exit */
};

struct fparam {
    const char *name;
    uint8_t render, source, raw;   /* raw: argN for S_RAW */
    const char *field;             /* S_FIELD, and S_EXE/S_ARGS: the message's argv field */
};

struct flist {
    uint16_t msg;                  /* the message type carrying it */
    uint16_t type;                 /* evt.type (a sysno, or one of evtype.h's own) */
    const struct fparam *p;
    uint8_t n;
};

#define F(n, r, f) {n, r, S_FIELD, 0, f}
#define RAW(n, r, k) {n, r, S_RAW, k, NULL}
#define SRC(n, r, s) {n, r, s, 0, NULL}
#define NONE(n) {n, R_STR, S_NONE, 0, NULL}
#define RES(r) {"res", r, S_RES, 0, NULL}

/* ---- typed points ---- */
static const struct fparam p_open[] = {{"fd", R_FD, S_RES, 0, NULL}, F("name", R_OPENNAME, "pathname"),
                                       F("flags", R_OPENFLAGS, "flags"), F("mode", R_OCT, "mode"), NONE("dev"),
                                       NONE("ino")};
static const struct fparam p_openat[] = {{"fd", R_FD, S_RES, 0, NULL}, F("dirfd", R_FD, "fd"),
                                         F("name", R_OPENNAME, "pathname"), F("flags", R_OPENFLAGS, "flags"),
                                         F("mode", R_OCT, "mode"), NONE("dev"), NONE("ino")};
static const struct fparam p_creat[] = {{"fd", R_FD, S_RES, 0, NULL}, F("name", R_OPENNAME, "pathname"),
                                        F("mode", R_OCT, "mode"), NONE("dev"), NONE("ino"), NONE("creat_flags")};
static const struct fparam p_close[] = {RES(R_ERRNO), F("fd", R_FD, "fd")};
static const struct fparam p_read[] = {RES(R_ERRNO), NONE("data"), F("fd", R_FD, "fd"), F("size", R_UDEC, "count")};
static const struct fparam p_pread[] = {RES(R_ERRNO), NONE("data"), F("fd", R_FD, "fd"), F("size", R_UDEC, "count"),
                                        F("pos", R_UDEC, "offset")};
static const struct fparam p_readv[] = {RES(R_ERRNO), F("size", R_UDEC, "count"), NONE("data"), F("fd", R_FD, "fd")};
static const struct fparam p_preadv[] = {RES(R_ERRNO), F("size", R_UDEC, "count"), NONE("data"), F("fd", R_FD, "fd"),
                                         F("pos", R_UDEC, "offset")};
static const struct fparam p_write[] = {RES(R_ERRNO), NONE("data"), F("fd", R_FD, "fd"), F("size", R_UDEC, "count")};
static const struct fparam p_pwrite[] = {RES(R_ERRNO), NONE("data"), F("fd", R_FD, "fd"), F("size", R_UDEC, "count"),
                                         F("pos", R_UDEC, "offset")};
static const struct fparam p_connect[] = {RES(R_ERRNO), SRC("tuple", R_TUPLE, S_NONE), F("fd", R_FD, "fd"),
                                          F("addr", R_ADDR, "address")};
static const struct fparam p_execve[] = {
    RES(R_ERRNO), {"exe", R_STR, S_EXE, 0, "argv"}, {"args", R_BUF, S_ARGS, 0, "argv"}, SRC("tid", R_PID, S_TID),
    SRC("pid", R_PID, S_PID), SRC("ptid", R_PID, S_PTID), SRC("cwd", R_STR, S_CWD), SRC("comm", R_STR, S_COMM),
    F("env", R_BUF, "envv"), SRC("vpgid", R_PID, S_VPGID), NONE("tty"), NONE("loginuid"), NONE("flags"),
    NONE("cap_inheritable"), NONE("cap_permitted"), NONE("cap_effective"), SRC("uid", R_UDEC, S_UID),
    SRC("trusted_exepath", R_STR, S_EXEPATH), SRC("gid", R_UDEC, S_GID), F("filename", R_PATH, "pathname")};
static const struct fparam p_sentry_execve[] = {
    RES(R_ERRNO), {"exe", R_STR, S_EXE, 0, "argv"}, {"args", R_BUF, S_ARGS, 0, "argv"}, SRC("tid", R_PID, S_TID),
    SRC("pid", R_PID, S_PID), SRC("ptid", R_PID, S_PTID), SRC("cwd", R_STR, S_CWD), SRC("comm", R_STR, S_COMM),
    F("env", R_BUF, "env"), SRC("vpgid", R_PID, S_VPGID), NONE("tty"), NONE("loginuid"), NONE("flags"),
    NONE("cap_inheritable"), NONE("cap_permitted"), NONE("cap_effective"), SRC("uid", R_UDEC, S_UID),
    F("trusted_exepath", R_STR, "binary_path"), SRC("gid", R_UDEC, S_GID), F("filename", R_PATH, "execfn")};
static const struct fparam p_socket[] = {{"fd", R_FD, S_RES, 0, NULL}, F("domain", R_FAMILY, "domain"),
                                         F("type", R_UDEC, "type"), F("proto", R_UDEC, "protocol"), NONE("flags")};
static const struct fparam p_chdir[] = {RES(R_ERRNO), F("path", R_STR, "pathname")};
static const struct fparam p_fchdir[] = {RES(R_ERRNO), F("fd", R_FD, "fd")};
static const struct fparam p_setuid[] = {RES(R_ERRNO), F("uid", R_UDEC, "id")};
static const struct fparam p_setgid[] = {RES(R_ERRNO), F("gid", R_UDEC, "id")};
static const struct fparam p_setsid[] = {RES(R_PID)};
static const struct fparam p_setresuid[] = {RES(R_ERRNO), F("ruid", R_UDEC, "rid"), F("euid", R_UDEC, "eid"),
                                            F("suid", R_UDEC, "sid")};
static const struct fparam p_setresgid[] = {RES(R_ERRNO), F("rgid", R_UDEC, "rid"), F("egid", R_UDEC, "eid"),
                                            F("sgid", R_UDEC, "sid")};
static const struct fparam p_prlimit[] = {RES(R_ERRNO), F("newcur", R_DEC, "new_limit.cur"),
                                          F("newmax", R_DEC, "new_limit.max"), F("oldcur", R_DEC, "old_limit.cur"),
                                          F("oldmax", R_DEC, "old_limit.max"), F("pid", R_DEC, "pid"),
                                          F("resource", R_DEC, "resource")};
static const struct fparam p_pipe[] = {RES(R_ERRNO), F("fd1", R_FD, "reader"), F("fd2", R_FD, "writer"), NONE("ino")};
static const struct fparam p_pipe2[] = {RES(R_ERRNO), F("fd1", R_FD, "reader"), F("fd2", R_FD, "writer"),
                                        NONE("ino"), F("flags", R_OPENFLAGS, "flags")};
static const struct fparam p_fcntl[] = {RES(R_FD), F("fd", R_FD, "fd"), F("cmd", R_DEC, "cmd"), F("arg", R_HEX, "args")};
static const struct fparam p_dup[] = {RES(R_FD), F("oldfd", R_FD, "old_fd")};
static const struct fparam p_dup2[] = {RES(R_FD), F("oldfd", R_FD, "old_fd"), F("newfd", R_FD, "new_fd")};
static const struct fparam p_dup3[] = {RES(R_FD), F("oldfd", R_FD, "old_fd"), F("newfd", R_FD, "new_fd"),
                                       F("flags", R_OPENFLAGS, "flags")};
static const struct fparam p_signalfd[] = {RES(R_FD), F("fd", R_FD, "fd"), F("mask", R_HEX, "sigset"),
                                           F("flags", R_HEX, "flags")};
static const struct fparam p_signalfd4[] = {RES(R_FD), F("flags", R_OPENFLAGS, "flags"), F("fd", R_FD, "fd"),
                                            F("mask", R_HEX, "sigset")};
static const struct fparam p_chroot[] = {RES(R_ERRNO), F("path", R_PATH, "pathname")};
static const struct fparam p_eventfd[] = {RES(R_FD), F("initval", R_UDEC, "val"), F("flags", R_HEX, "flags")};
static const struct fparam p_eventfd2[] = {RES(R_FD), F("flags", R_OPENFLAGS, "flags"), F("initval", R_UDEC, "val")};
static const struct fparam p_clone[] = {
    RES(R_PID), SRC("exe", R_STR, S_PEXE), SRC("args", R_STR, S_PARGS), SRC("tid", R_PID, S_TID),
    SRC("pid", R_PID, S_PID), SRC("ptid", R_PID, S_PTID), SRC("cwd", R_STR, S_CWD), SRC("comm", R_STR, S_COMM),
    F("flags", R_CLONE, "flags"), SRC("uid", R_UDEC, S_UID), SRC("gid", R_UDEC, S_GID), SRC("vtid", R_PID, S_TID),
    SRC("vpid", R_PID, S_PID)};
static const struct fparam p_fork[] = {
    RES(R_PID), SRC("exe", R_STR, S_PEXE), SRC("args", R_STR, S_PARGS), SRC("tid", R_PID, S_TID),
    SRC("pid", R_PID, S_PID), SRC("ptid", R_PID, S_PTID), SRC("cwd", R_STR, S_CWD), SRC("comm", R_STR, S_COMM),
    NONE("flags"), SRC("uid", R_UDEC, S_UID), SRC("gid", R_UDEC, S_GID), SRC("vtid", R_PID, S_TID),
    SRC("vpid", R_PID, S_PID)};
static const struct fparam p_bind[] = {RES(R_ERRNO), F("addr", R_ADDR, "address"), F("fd", R_FD, "fd")};
static const struct fparam p_accept[] = {{"fd", R_FD, S_RES, 0, NULL}, SRC("tuple", R_TUPLE, S_NONE),
                                         NONE("queuepct"), NONE("queuelen"), NONE("queuemax")};
static const struct fparam p_accept4[] = {{"fd", R_FD, S_RES, 0, NULL}, SRC("tuple", R_TUPLE, S_NONE),
                                          NONE("queuepct"), NONE("queuelen"), NONE("queuemax"),
                                          F("flags", R_HEX, "flags")};
static const struct fparam p_timerfd[] = {RES(R_FD), F("clockid", R_UDEC, "clock_id"), F("flags", R_HEX, "flags")};
static const struct fparam p_inotify[] = {RES(R_FD), NONE("flags")};
static const struct fparam p_inotify1[] = {RES(R_FD), F("flags", R_OPENFLAGS, "flags")};
static const struct fparam p_socketpair[] = {RES(R_ERRNO), F("fd1", R_FD, "socket1"), F("fd2", R_FD, "socket2"),
                                             NONE("source"), NONE("peer"), F("domain", R_FAMILY, "domain"),
                                             F("type", R_UDEC, "type"), F("proto", R_UDEC, "protocol")};
static const struct fparam p_procexit[] = {SRC("status", R_ERRNO, S_EXITSTATUS), SRC("ret", R_ERRNO, S_EXITRET),
                                           SRC("sig", R_SIG, S_EXITSIG), SRC("core", R_UDEC, S_EXITCORE),
                                           NONE("reaper_tid")};

/* ---- raw points: argN when the argument is a number; a pointer's
 * contents (paths, buffers) never come ---- */
static const struct fparam p_mkdir[] = {RES(R_ERRNO), NONE("path"), RAW("mode", R_HEX, 2)};
static const struct fparam p_mkdirat[] = {RES(R_ERRNO), RAW("dirfd", R_FD, 1), NONE("path"), RAW("mode", R_HEX, 3)};
static const struct fparam p_path_only[] = {RES(R_ERRNO), NONE("path")};
static const struct fparam p_unlinkat[] = {RES(R_ERRNO), RAW("dirfd", R_FD, 1), NONE("name"), RAW("flags", R_HEX, 3)};
static const struct fparam p_rename[] = {RES(R_ERRNO), NONE("oldpath"), NONE("newpath")};
static const struct fparam p_renameat[] = {RES(R_ERRNO), RAW("olddirfd", R_FD, 1), NONE("oldpath"),
                                           RAW("newdirfd", R_FD, 3), NONE("newpath")};
static const struct fparam p_renameat2[] = {RES(R_ERRNO), RAW("olddirfd", R_FD, 1), NONE("oldpath"),
                                            RAW("newdirfd", R_FD, 3), NONE("newpath"), RAW("flags", R_HEX, 5)};
static const struct fparam p_linkat[] = {RES(R_ERRNO), RAW("olddir", R_FD, 1), NONE("oldpath"), RAW("newdir", R_FD, 3),
                                         NONE("newpath"), RAW("flags", R_HEX, 5)};
static const struct fparam p_symlink[] = {RES(R_ERRNO), NONE("target"), NONE("linkpath")};
static const struct fparam p_symlinkat[] = {RES(R_ERRNO), NONE("target"), RAW("linkdirfd", R_FD, 2),
                                            NONE("linkpath")};
static const struct fparam p_chmod[] = {RES(R_ERRNO), NONE("filename"), RAW("mode", R_MODE, 2)};
static const struct fparam p_fchmod[] = {RES(R_ERRNO), RAW("fd", R_FD, 1), RAW("mode", R_MODE, 2)};
static const struct fparam p_fchmodat[] = {RES(R_ERRNO), RAW("dirfd", R_FD, 1), NONE("filename"),
                                           RAW("mode", R_MODE, 3)};
static const struct fparam p_chown[] = {RES(R_ERRNO), NONE("path"), RAW("uid", R_UDEC, 2), RAW("gid", R_UDEC, 3)};
static const struct fparam p_fchown[] = {RES(R_ERRNO), RAW("fd", R_FD, 1), RAW("uid", R_UDEC, 2),
                                         RAW("gid", R_UDEC, 3)};
static const struct fparam p_fchownat[] = {RES(R_ERRNO), RAW("dirfd", R_FD, 1), NONE("pathname"),
                                           RAW("uid", R_UDEC, 3), RAW("gid", R_UDEC, 4), RAW("flags", R_HEX, 5)};
static const struct fparam p_unshare[] = {RES(R_ERRNO), RAW("flags", R_CLONE, 1)};
static const struct fparam p_setns[] = {RES(R_ERRNO), RAW("fd", R_FD, 1), RAW("nstype", R_CLONE, 2)};
static const struct fparam p_bpf[] = {{"fd", R_FD, S_RES, 0, NULL}, RAW("cmd", R_BPF, 1)};
static const struct fparam p_kill[] = {RES(R_ERRNO), RAW("pid", R_PID, 1), RAW("sig", R_SIG, 2)};
static const struct fparam p_tkill[] = {RES(R_ERRNO), RAW("tid", R_PID, 1), RAW("sig", R_SIG, 2)};
static const struct fparam p_tgkill[] = {RES(R_ERRNO), RAW("pid", R_PID, 1), RAW("tid", R_PID, 2),
                                         RAW("sig", R_SIG, 3)};
static const struct fparam p_setreuid[] = {RES(R_ERRNO), RAW("ruid", R_UDEC, 1), RAW("euid", R_UDEC, 2)};
static const struct fparam p_setregid[] = {RES(R_ERRNO), RAW("rgid", R_UDEC, 1), RAW("egid", R_UDEC, 2)};
static const struct fparam p_setpgid[] = {RES(R_ERRNO), RAW("pid", R_PID, 1), RAW("pgid", R_PID, 2)};
static const struct fparam p_memfd[] = {{"fd", R_FD, S_RES, 0, NULL}, NONE("name"), RAW("flags", R_HEX, 2)};
static const struct fparam p_mount[] = {RES(R_ERRNO), NONE("dev"), NONE("dir"), NONE("type"), RAW("flags", R_HEX, 4)};
static const struct fparam p_umount2[] = {RES(R_ERRNO), NONE("name"), RAW("flags", R_HEX, 2)};
static const struct fparam p_init_module[] = {RES(R_ERRNO), NONE("img"), RAW("length", R_UDEC, 2), NONE("uargs")};
static const struct fparam p_finit_module[] = {RES(R_ERRNO), RAW("fd", R_FD, 1), NONE("uargs"),
                                               RAW("flags", R_HEX, 3)};
static const struct fparam p_delete_module[] = {RES(R_ERRNO), NONE("name"), RAW("flags", R_HEX, 2)};
static const struct fparam p_prctl[] = {RES(R_ERRNO), RAW("option", R_DEC, 1), NONE("arg2_str"),
                                        RAW("arg2_int", R_DEC, 2)};
static const struct fparam p_userfaultfd[] = {RES(R_ERRNO), RAW("flags", R_HEX, 1)};
static const struct fparam p_ioctl[] = {RES(R_ERRNO), RAW("fd", R_FD, 1), RAW("request", R_HEX, 2),
                                        RAW("argument", R_HEX, 3)};
static const struct fparam p_sendto[] = {RES(R_ERRNO), NONE("data"), RAW("fd", R_FD, 1), RAW("size", R_UDEC, 3),
                                         NONE("tuple")};
static const struct fparam p_recvfrom[] = {RES(R_ERRNO), NONE("data"), NONE("tuple"), RAW("fd", R_FD, 1),
                                           RAW("size", R_UDEC, 3)};
static const struct fparam p_sendmsg[] = {RES(R_ERRNO), NONE("data"), RAW("fd", R_FD, 1), NONE("size"),
                                          NONE("tuple")};
static const struct fparam p_recvmsg[] = {RES(R_ERRNO), NONE("size"), NONE("data"), NONE("tuple"),
                                          NONE("msgcontrol"), RAW("fd", R_FD, 1)};
static const struct fparam p_pidfd_open[] = {{"fd", R_FD, S_RES, 0, NULL}, RAW("pid", R_PID, 1),
                                             RAW("flags", R_HEX, 2)};
static const struct fparam p_pidfd_getfd[] = {{"fd", R_FD, S_RES, 0, NULL}, RAW("pid_fd", R_FD, 1),
                                              RAW("target_fd", R_FD, 2), RAW("flags", R_UDEC, 3)};
static const struct fparam p_process_vm[] = {{"res", R_DEC, S_RES, 0, NULL}, RAW("pid", R_PID, 1), NONE("data")};
static const struct fparam p_seccomp[] = {RES(R_ERRNO), RAW("op", R_UDEC, 1), RAW("flags", R_UDEC, 2)};
static const struct fparam p_access[] = {RES(R_ERRNO), NONE("name"), RAW("mode", R_HEX, 2)};
static const struct fparam p_openat2[] = {{"fd", R_FD, S_RES, 0, NULL}, RAW("dirfd", R_FD, 1), NONE("name"),
                                          NONE("flags"), NONE("mode"), NONE("resolve"), NONE("dev"), NONE("ino")};

#define L(msg, type, arr) {msg, type, arr, (uint8_t)(sizeof(arr) / sizeof(arr[0]))}
static const struct flist lists[] = {
    L(7, 2, p_open), L(7, 257, p_openat), L(7, 85, p_creat), L(8, 3, p_close),
    L(9, 0, p_read), L(9, 17, p_pread), L(9, 19, p_readv), L(9, 295, p_preadv),
    L(34, 1, p_write), L(34, 18, p_pwrite), L(34, 20, p_write), L(34, 296, p_pwrite),
    L(10, 42, p_connect), L(11, 59, p_execve), L(11, 322, p_execve), L(3, SYS_EXECVE, p_sentry_execve),
    L(12, 41, p_socket), L(13, 80, p_chdir), L(13, 81, p_fchdir), L(14, 105, p_setuid), L(14, 106, p_setgid),
    L(14, 112, p_setsid), L(15, 117, p_setresuid), L(15, 119, p_setresgid), L(16, 302, p_prlimit),
    L(17, 22, p_pipe), L(17, 293, p_pipe2), L(18, 72, p_fcntl), L(19, 32, p_dup), L(19, 33, p_dup2),
    L(19, 292, p_dup3), L(20, 282, p_signalfd), L(20, 289, p_signalfd4), L(21, 161, p_chroot),
    L(22, 284, p_eventfd), L(22, 290, p_eventfd2), L(23, 56, p_clone), L(2, SYS_CLONE, p_clone),
    L(29, 57, p_fork), L(29, 58, p_fork), L(24, 49, p_bind), L(25, 43, p_accept), L(25, 288, p_accept4),
    L(26, 283, p_timerfd), L(30, 253, p_inotify), L(30, 294, p_inotify1), L(33, 53, p_socketpair),
    L(5, EVTYPE_PROCEXIT, p_procexit),
    L(6, 83, p_mkdir), L(6, 258, p_mkdirat), L(6, 84, p_path_only), L(6, 87, p_path_only), L(6, 263, p_unlinkat),
    L(6, 82, p_rename), L(6, 264, p_renameat), L(6, 316, p_renameat2), L(6, 86, p_rename), L(6, 265, p_linkat),
    L(6, 88, p_symlink), L(6, 266, p_symlinkat), L(6, 90, p_chmod), L(6, 91, p_fchmod), L(6, 268, p_fchmodat),
    L(6, 92, p_chown), L(6, 94, p_chown), L(6, 93, p_fchown), L(6, 260, p_fchownat), L(6, 272, p_unshare),
    L(6, 308, p_setns), L(6, 321, p_bpf), L(6, 62, p_kill), L(6, 200, p_tkill), L(6, 234, p_tgkill),
    L(6, 113, p_setreuid), L(6, 114, p_setregid), L(6, 109, p_setpgid), L(6, 319, p_memfd), L(6, 165, p_mount),
    L(6, 166, p_umount2), L(6, 175, p_init_module), L(6, 313, p_finit_module), L(6, 176, p_delete_module),
    L(6, 157, p_prctl), L(6, 323, p_userfaultfd), L(6, 16, p_ioctl), L(6, 44, p_sendto), L(6, 45, p_recvfrom),
    L(6, 46, p_sendmsg), L(6, 47, p_recvmsg), L(6, 434, p_pidfd_open), L(6, 438, p_pidfd_getfd),
    L(6, 310, p_process_vm), L(6, 311, p_process_vm), L(6, 317, p_seccomp), L(6, 21, p_access),
    L(6, 437, p_openat2),
};
#define NLISTS (sizeof(lists) / sizeof(lists[0]))
_Static_assert(NLISTS < 255, "list ids fit a byte");

/* ---- lookup ---- */

/* Raw points by sysno; typed ones by message type, then a short scan. */
static int16_t raw_list[EVTYPE_SYSCALL_LIMIT];
static int16_t first_list[DECODE_TYPE_MAX + 1], last_list[DECODE_TYPE_MAX + 1];
static pthread_once_t lists_once = PTHREAD_ONCE_INIT;

static void init_lists(void)
{
    for (size_t i = 0; i < EVTYPE_SYSCALL_LIMIT; i++)
        raw_list[i] = -1;
    for (size_t i = 0; i <= DECODE_TYPE_MAX; i++)
        first_list[i] = -1;
    for (size_t i = NLISTS; i-- > 0;) {
        if (lists[i].msg == 6) {
            raw_list[lists[i].type] = (int16_t)i;
        } else if (lists[i].msg <= DECODE_TYPE_MAX) {
            if (first_list[lists[i].msg] < 0)
                last_list[lists[i].msg] = (int16_t)i;
            first_list[lists[i].msg] = (int16_t)i;
        }
    }
}

size_t fields_args_lists(void) { return NLISTS; }

int fields_args_list(uint16_t msg, unsigned type)
{
    pthread_once(&lists_once, init_lists);
    if (msg == 6)
        return type < EVTYPE_SYSCALL_LIMIT ? raw_list[type] : -1;
    if (msg > DECODE_TYPE_MAX || first_list[msg] < 0)
        return -1;
    for (int i = first_list[msg]; i <= last_list[msg]; i++)
        if (lists[i].msg == msg && lists[i].type == type)
            return i;
    return -1;
}

int fields_args_find(int list, const char *name, size_t len)
{
    if (list < 0 || (size_t)list >= NLISTS)
        return -1;
    const struct flist *l = &lists[list];
    for (uint8_t i = 0; i < l->n; i++)
        if (strlen(l->p[i].name) == len && memcmp(l->p[i].name, name, len) == 0)
            return i;
    return -1;
}

bool fields_args_reported(int list, int param)
{
    return list >= 0 && (size_t)list < NLISTS && param >= 0 && param < lists[list].n &&
           (lists[list].p[param].source != S_NONE || lists[list].p[param].render == R_TUPLE);
}

bool fields_args_known_name(const char *name, size_t len)
{
    for (size_t i = 0; i < NLISTS; i++)
        if (fields_args_find((int)i, name, len) >= 0)
            return true;
    return false;
}

/* ---- values ---- */

static const ProtobufCFieldDescriptor *field_of(const ProtobufCMessage *m, const char *name)
{
    return protobuf_c_message_descriptor_get_field_by_name(m->descriptor, name);
}

/* A numeric field ("a" or "a.b": a field of a sub-message); false when the
 * message has no such field or the sub-message was not sent. */
static bool read_number(const ProtobufCMessage *m, const char *path, int64_t *out)
{
    const char *dot = strchr(path, '.');
    if (dot) {
        char head[32];
        size_t n = (size_t)(dot - path);
        if (n >= sizeof(head))
            return false;
        memcpy(head, path, n);
        head[n] = '\0';
        const ProtobufCFieldDescriptor *f = field_of(m, head);
        if (!f || f->type != PROTOBUF_C_TYPE_MESSAGE || f->label == PROTOBUF_C_LABEL_REPEATED)
            return false;
        const ProtobufCMessage *sub = *(const ProtobufCMessage *const *)((const char *)m + f->offset);
        return sub && fields_read_int(sub, field_of(sub, dot + 1), out);
    }
    const ProtobufCFieldDescriptor *f = field_of(m, path);
    if (f && f->type == PROTOBUF_C_TYPE_BOOL && f->label != PROTOBUF_C_LABEL_REPEATED) {
        *out = *(const protobuf_c_boolean *)((const char *)m + f->offset);
        return true;
    }
    return fields_read_int(m, f, out);
}

/* A repeated string field: its items. */
static bool read_strings(const ProtobufCMessage *m, const char *name, char *const **items, size_t *n)
{
    const ProtobufCFieldDescriptor *f = field_of(m, name);
    if (!f || f->type != PROTOBUF_C_TYPE_STRING || f->label != PROTOBUF_C_LABEL_REPEATED)
        return false;
    *n = *(const size_t *)((const char *)m + f->quantifier_offset);
    *items = *(char *const *const *)((const char *)m + f->offset);
    return true;
}

/* libs' byte buffer text of NUL-ended strings: printable bytes as they
 * are, every other one (and each NUL) as '.'. */
static void put_buffer(struct strbuf *out, char *const *items, size_t n, size_t from)
{
    for (size_t i = from; i < n; i++) {
        const unsigned char *s = (const unsigned char *)(items[i] ? items[i] : "");
        for (; *s; s++)
            strbuf_putc(out, *s >= 0x20 && *s < 0x7f ? (char)*s : '.');
        strbuf_putc(out, '.');
    }
}

/* Where a parameter's value comes from: a number, or text. */
struct pvalue {
    bool ok, is_text;
    int64_t num;
    const char *text;        /* NUL-terminated */
    char *const *items;      /* R_BUF */
    size_t nitems, from;
};

static const struct proc *parent_of(struct evctx *x)
{
    return x->proc ? proctab_parent(x->pt, x->proc) : NULL;
}

/* A raw point's argument is the whole register; the syscall's int
 * arguments (fds, pids, signals, modes, flags) are its low 32 bits, signed
 * where the type is (AT_FDCWD arrives as 0xffffff9c). */
static int64_t raw_number(const struct fparam *p, uint64_t reg)
{
    switch (p->render) {
    case R_FD:
    case R_PID:
    case R_SIG:
    case R_DEC:
    case R_BPF:
    case R_ERRNO: return (int32_t)(uint32_t)reg;
    case R_MODE:
    case R_OPENFLAGS:
    case R_CLONE: return (uint32_t)reg;
    default: return (int64_t)reg;
    }
}

static void source_value(struct evctx *x, const struct fparam *p, struct pvalue *v)
{
    const struct event *ev = x->ev;
    const Gvisor__Common__ContextData *ctx = ev->context;
    const struct proc *pr = x->proc;
    memset(v, 0, sizeof(*v));
    switch (p->source) {
    case S_RES:
        if (x->cls.has_result) {
            v->ok = true;
            v->num = fields_rawres(ev);
        }
        return;
    case S_FIELD: {
        const ProtobufCFieldDescriptor *f = strchr(p->field, '.') ? NULL : field_of(ev->msg, p->field);
        if (f && f->type == PROTOBUF_C_TYPE_STRING && f->label == PROTOBUF_C_LABEL_REPEATED) {
            v->ok = read_strings(ev->msg, p->field, &v->items, &v->nitems);
            v->is_text = true;
        } else if (f && f->type == PROTOBUF_C_TYPE_STRING) {
            v->text = fields_read_str(ev->msg, f);
            v->ok = v->text && v->text[0];   /* proto3 sends no empty string: not there */
            v->is_text = true;
        } else if (f && f->type == PROTOBUF_C_TYPE_BYTES) {
            v->ok = true;   /* R_ADDR reads the bytes itself */
        } else {
            v->ok = read_number(ev->msg, p->field, &v->num);
        }
        return;
    }
    case S_RAW: {
        const Gvisor__Syscall__Syscall *r = (const Gvisor__Syscall__Syscall *)ev->msg;
        const uint64_t a[7] = {0, r->arg1, r->arg2, r->arg3, r->arg4, r->arg5, r->arg6};
        v->ok = p->raw >= 1 && p->raw <= 6;
        v->num = v->ok ? raw_number(p, a[p->raw]) : 0;
        return;
    }
    case S_TID: v->ok = ctx && ctx->thread_id > 0; v->num = v->ok ? ctx->thread_id : 0; return;
    case S_PID: v->ok = ctx && ctx->thread_group_id > 0; v->num = v->ok ? ctx->thread_group_id : 0; return;
    case S_PTID: {
        const struct proc *pp = parent_of(x);
        v->ok = pp != NULL;
        v->num = pp ? pp->tgid : 0;
        return;
    }
    case S_CWD: v->text = ctx && ctx->cwd && ctx->cwd[0] ? ctx->cwd : NULL; break;
    case S_COMM: v->text = pr && pr->name[0] ? pr->name : NULL; break;
    case S_UID:
    case S_GID:
        v->ok = ctx && ctx->credentials;
        v->num = !v->ok ? 0 : p->source == S_UID ? ctx->credentials->effective_uid : ctx->credentials->effective_gid;
        return;
    case S_EXE:
    case S_ARGS:
        if (!read_strings(ev->msg, p->field, &v->items, &v->nitems))
            return;
        v->is_text = true;
        if (p->source == S_ARGS) {
            v->ok = true;
            v->from = 1;
            return;
        }
        v->text = v->nitems && v->items[0] ? v->items[0] : NULL;
        v->ok = v->text != NULL;
        return;
    case S_PEXE: v->text = pr && pr->exe.len ? pr->exe.data : NULL; break;
    case S_PARGS: v->text = pr ? (pr->args.len ? pr->args.data : "") : NULL; break;
    case S_EXEPATH: v->text = pr && pr->exepath.len ? pr->exepath.data : NULL; break;
    case S_VPGID: v->ok = pr && pr->pgid; v->num = pr ? pr->pgid : 0; return;
    case S_EXITSTATUS:
    case S_EXITRET:
    case S_EXITSIG:
    case S_EXITCORE: {
        int32_t st = ((const Gvisor__Sentry__TaskExit *)ev->msg)->exit_status;
        bool signalled = (st & 0x7f) != 0 && (st & 0x7f) != 0x7f;
        v->ok = true;
        v->num = p->source == S_EXITSTATUS ? st
                 : p->source == S_EXITRET  ? (st >> 8) & 0xff
                 : p->source == S_EXITSIG  ? (signalled ? st & 0x7f : 0)
                                           : (st & 0x80) != 0;
        return;
    }
    default:
        return;
    }
    v->ok = v->text != NULL;
    v->is_text = true;
}

static void put_fd_resolved(struct evctx *x, int64_t fd, struct strbuf *out)
{
    if (fd == -100) {
        strbuf_puts(out, "AT_FDCWD");
        return;
    }
    if (fd < 0) {
        const char *e = fd >= -4095 ? linux_errno_name(-fd) : NULL;
        if (e)
            strbuf_puts(out, e);
        return;
    }
    /* the fd the event works on, when its name is known: "<f>/etc/passwd",
     * a socket with its protocol letter ("<4t>1.2.3.4:80->...") */
    const struct fdinfo *fi = fields_fd_info(x);
    if (!fi->has_num || fi->num != fd || !fi->has_name || !fi->typechar)
        return;
    strbuf_putc(out, '<');
    strbuf_putc(out, fi->typechar);
    if (fi->typechar == '4' || fi->typechar == '6') {
        bool raw = fi->type == 3;
        char l4 = fi->protocol == 6 || (fi->protocol == 0 && fi->type == 1)   ? 't'
                  : fi->protocol == 17 || (fi->protocol == 0 && fi->type == 2) ? 'u'
                  : fi->protocol == 1                                          ? 'i'
                                                                               : 0;
        if (raw && l4)
            l4 = 'r';
        if (l4)
            strbuf_putc(out, l4);
    }
    strbuf_putc(out, '>');
    strbuf_append(out, fi->name, fi->name_len);
}

/* A path as libs resolves PT_FSPATH: relative ones joined to the cwd. */
static void put_path_resolved(struct evctx *x, const char *path, struct strbuf *out)
{
    if (!path[0] || path[0] == '/')
        return;
    const Gvisor__Common__ContextData *ctx = x->ev->context;
    const char *cwd = ctx && ctx->cwd && ctx->cwd[0] ? ctx->cwd : x->proc && x->proc->cwd.len ? x->proc->cwd.data
                                                                                                : NULL;
    if (!cwd)
        return;
    strbuf_puts(out, cwd);
    if (cwd[strlen(cwd) - 1] != '/')
        strbuf_putc(out, '/');
    strbuf_puts(out, path);
}

static void put_sockaddr(const ProtobufCBinaryData *a, struct strbuf *out)
{
    if (!a || a->len < 2)
        return;
    unsigned family = a->data[0] | a->data[1] << 8;
    if (family == 1) {
        size_t n = a->len - 2;
        const uint8_t *p = a->data + 2;
        if (n && p[0] == 0) {
            strbuf_putc(out, '@');
            p++;
            n--;
        }
        size_t len = 0;
        while (len < n && p[len])
            len++;
        strbuf_append(out, p, len);
    } else if ((family == 2 && a->len >= 8) || (family == 10 && a->len >= 24)) {
        fields_put_ip(out, family == 2 ? 4 : 6, family == 2 ? a->data + 4 : a->data + 8);
        strbuf_putc(out, ':');
        strbuf_put_u64(out, (uint16_t)(a->data[2] << 8 | a->data[3]));
    }
}

/* The raw text of a number as libs prints it for the render kind. */
static void put_raw_number(const struct fparam *p, int64_t n, struct strbuf *out)
{
    switch (p->render) {
    case R_OCT:
    case R_MODE: strbuf_printf(out, "%#" PRIo32, (uint32_t)n); return;
    case R_HEX: strbuf_printf(out, "%" PRIX64, (uint64_t)n); return;
    case R_UDEC:
    case R_OPENFLAGS:
    case R_CLONE: strbuf_put_u64(out, (uint64_t)n); return;
    default: strbuf_put_i64(out, n); return;
    }
}

/* The resolved text of a number (names), or nothing. */
static void put_resolved_number(struct evctx *x, const struct fparam *p, int64_t n, struct strbuf *out)
{
    switch (p->render) {
    case R_ERRNO: {
        const char *e = n < 0 && n >= -4095 ? linux_errno_name(-n) : NULL;
        if (e)
            strbuf_puts(out, e);
        return;
    }
    case R_FD: put_fd_resolved(x, n, out); return;
    case R_PID: {
        const struct proc *q = n > 0 && n <= INT32_MAX && x->proc ? proctab_find(x->pt, x->proc, (int32_t)n) : NULL;
        if (q && q->name[0])
            strbuf_puts(out, q->name);
        return;
    }
    case R_OPENFLAGS: falco_open_flags(out, (uint32_t)n); return;
    case R_MODE: {
        size_t at = out->len;
        falco_mode(out, (uint32_t)n);
        if (n == 0)
            out->len = at;   /* no name: the raw number stands */
        return;
    }
    case R_FAMILY: falco_socket_family(out, n); return;
    case R_CLONE:
        if (n)
            falco_clone_flags(out, (uint64_t)n);
        return;
    case R_BPF: falco_bpf_command(out, n); return;
    case R_SIG: {
        const char *s = falco_signal_name(n);
        if (s)
            strbuf_puts(out, s);
        return;
    }
    default: return;
    }
}

/* Writes the parameter: its resolved text when it has one, else the raw
 * (both: "raw(resolved)", evt.args' form). False when it has no value. */
static bool put_param(struct evctx *x, const struct fparam *p, struct strbuf *out, bool both)
{
    if (p->render == R_TUPLE) {
        const struct fdinfo *fi = fields_fd_info(x);
        if (!fi->has_name || !x->cls.has_result)
            return false;
        strbuf_append(out, fi->name, fi->name_len);
        return true;
    }
    struct pvalue v;
    source_value(x, p, &v);
    if (!v.ok)
        return false;
    if (p->render == R_ADDR) {
        const ProtobufCBinaryData *a = fields_read_bytes(x->ev->msg, field_of(x->ev->msg, p->field));
        size_t at = out->len;
        put_sockaddr(a, out);
        return out->len > at;
    }
    if (p->render == R_BUF) {
        if (!v.items && v.nitems)
            return false;
        put_buffer(out, v.items, v.nitems, v.from);
        return true;
    }
    if (v.is_text) {
        if (p->render == R_OPENNAME || p->render == R_PATH) {
            size_t at = out->len;
            if (both) {
                strbuf_puts(out, v.text);
                strbuf_putc(out, '(');
            }
            size_t rat = out->len;
            if (p->render == R_OPENNAME && v.text[0] && v.text[0] != '/') {
                const struct fdinfo *fi = fields_fd_info(x);
                if (fi->has_name && x->ev->header.message_type == 7)
                    strbuf_append(out, fi->name, fi->name_len);
            } else if (p->render == R_PATH) {
                put_path_resolved(x, v.text, out);
            }
            if (out->len == rat) {
                out->len = at;
                strbuf_puts(out, v.text);
            } else if (both) {
                strbuf_putc(out, ')');
            }
            return true;
        }
        strbuf_puts(out, v.text);
        return true;
    }
    size_t at = out->len;
    if (both) {
        put_raw_number(p, v.num, out);
        strbuf_putc(out, '(');
        size_t rat = out->len;
        put_resolved_number(x, p, v.num, out);
        if (out->len == rat)
            out->len = rat - 1;
        else
            strbuf_putc(out, ')');
        return true;
    }
    put_resolved_number(x, p, v.num, out);
    if (out->len == at)
        put_raw_number(p, v.num, out);
    return true;
}

void fields_args_value(struct evctx *x, int list, int param, struct fval *v, struct strbuf *buf)
{
    if (list < 0 || (size_t)list >= NLISTS || param < 0 || param >= lists[list].n)
        return;
    strbuf_reset(buf);
    if (put_param(x, &lists[list].p[param], buf, false))
        fv_buf(v, buf);
}

void fields_args_all(struct evctx *x, struct fval *v, struct strbuf *buf)
{
    int list = fields_args_list(x->ev->header.message_type, x->cls.type);
    strbuf_reset(buf);
    if (list >= 0) {
        const struct flist *l = &lists[list];
        for (uint8_t i = 0; i < l->n; i++) {
            size_t at = buf->len;
            if (at)
                strbuf_putc(buf, ' ');
            strbuf_puts(buf, l->p[i].name);
            strbuf_putc(buf, '=');
            if (!put_param(x, &l->p[i], buf, true))
                buf->len = at;
        }
    }
    fv_buf(v, buf);
}

unsigned fields_args_optional(int list, int param)
{
    if (list < 0 || (size_t)list >= NLISTS || param < 0 || param >= lists[list].n)
        return 0;
    const struct fparam *p = &lists[list].p[param];
    if (p->source == S_FIELD && strcmp(p->field, "envv") == 0)
        return RULES_OPT_ENVV;
    return p->render == R_FD || p->render == R_TUPLE ? RULES_OPT_FD_PATH : 0;
}
