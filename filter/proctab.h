/* proctab.h - the process table's entries, for the field classes that
 * read them (fields_*.c) and the table itself (proctab.c); the table's
 * interface (proctab_new, proctab_apply, ...) is in filter.h, with what it
 * is and its bounds.
 */
#ifndef SECCHECKD_FILTER_PROCTAB_H
#define SECCHECKD_FILTER_PROCTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "filter.h"

#define PROC_NAME_MAX 15        /* the kernel's comm: TASK_COMM_LEN - 1 */
#define PROC_EXEPATH_MAX 1024
#define PROC_ARGS_MAX 1024      /* argv[1..] joined by spaces */
#define PROC_CWD_MAX 1024
#define PROC_EXE_MAX 1024       /* argv[0] */
#define PROC_ENV_MAX 4096       /* the environment, NAME=value joined by spaces (libs' limit too) */
#define PROC_SOCKETS_MAX 16     /* sockets remembered per process: the most recent */
#define PROC_ANCESTORS_MAX 64   /* proc.aname[N] and the any-ancestor walk stop there */

struct pstr {
    char *data;                 /* NUL-terminated when len > 0 */
    uint32_t len, cap;
};

/* ---- what an exec told of the new image (sentry/execve, gVisor 2026) ----
 * Kept per process and copied to its children, as fork copies the image and
 * the descriptors; an exec without them (a syscall execve exit alone)
 * forgets them. */

#define PROC_STREAM_PATH_MAX 256

/* Which of the binary's facts the exec sent: proto3 sends no false, so a
 * flag counts only where the message shows the release that has it. */
enum {
    PROC_IMAGE_MODE = 1u << 0,      /* mode, owner (binary_info, runsc 2022-12 on) */
    PROC_IMAGE_UPPER = 1u << 1,     /* the upper-layer flag: binary_ino sent (release-20260714.0) */
    PROC_IMAGE_LOWER = 1u << 2,     /* the lower-layer flag: binary_ctime sent (release-20260721.0) */
    PROC_IMAGE_MEMFD = 1u << 3,     /* the memfd flag: binary_size or nlink sent (release-20260727.0) */
    PROC_IMAGE_WRITABLE = 1u << 4,  /* writable computed: mode and the exec's credentials known */
};

struct proc_image {
    uint8_t known;              /* PROC_IMAGE_* */
    bool upper, lower, memfd, writable;
    uint64_t ino;               /* 0: not sent */
    int64_t ctime_ns;           /* 0: not sent, or not a time */
};

/* One standard stream as the exec's fd_info gave it. */
struct proc_stream {
    bool known;                 /* the descriptor was open */
    uint32_t mode;              /* st_mode; 0: not stat'ed */
    uint8_t family;             /* a socket's AF_*; 0 */
    uint8_t lip_len, rip_len;   /* 4 or 16 when the side has an IP address */
    uint16_t lport, rport;      /* host order */
    uint8_t lip[16], rip[16];
    struct pstr path;           /* as gVisor names it: /dev/pts/0, pipe:[12], socket:[3], host:[4] */
};

/* The process at the other end of a pipe on stdin or stdout. */
struct proc_peer {
    int32_t tgid;               /* 0: none */
    int64_t start_ns;
};

/* fd_info and pipe_proc_info of the exec: allocated for a process they
 * came for (or its parent's did), recycled with the entry. */
struct proc_exec_io {
    bool has_streams, has_pipes;
    struct proc_stream stream[3];   /* stdin, stdout, stderr */
    struct proc_peer pipe_in, pipe_out;
};

/* A socket the process holds, as its socket/accept/connect/bind exits told:
 * what fd.type, fd.l4proto and the addresses are on events that name only
 * the fd (dup, read, write, close). */
struct psock {
    int32_t fd;
    uint16_t protocol;          /* socket(2)'s protocol argument; 0: the type's default */
    uint8_t domain;             /* AF_UNIX 1, AF_INET 2, AF_INET6 10, ... */
    uint8_t type;               /* SOCK_STREAM 1, SOCK_DGRAM 2, SOCK_RAW 3, ... (0: unknown) */
    bool cloexec;               /* goes at the next exec */
    bool connected;             /* a connect that succeeded (or is in progress), or accepted */
    uint8_t role;               /* PSOCK_* : which side addr is */
    uint8_t family;             /* addr's: 4, 6, or 0 for none */
    uint16_t port;
    uint8_t ip[16];
};

enum { PSOCK_NONE, PSOCK_REMOTE_SERVER /* connect */, PSOCK_REMOTE_CLIENT /* accept */, PSOCK_LOCAL /* bind */ };

struct proc {
    uint64_t conn_id;
    int32_t tgid;
    int32_t parent_tgid;        /* 0: unknown */
    int64_t start_ns;           /* thread group start; 0: unknown */
    int64_t parent_start_ns;    /* 0: unknown (matches any start) */
    bool has_creds;
    uint32_t uid, gid;          /* effective */
    int32_t exec_tid;           /* thread whose sentry/execve awaits its syscall exit; 0: none */
    char name[PROC_NAME_MAX + 1];
    struct pstr exepath, args, cwd;
    uint32_t nargs, lenargs;    /* proc.cmdnargs, proc.cmdlenargs: argv[1..] before joining */
    struct pstr exe;            /* argv[0] (proc.exe) */
    struct pstr env;            /* kept only when the rules read it (proctab_keep) */
    bool has_env;               /* env holds what the last exec (or start) sent */
    int32_t sid, pgid;          /* session and process group; 0: unknown */
    struct psock *socks;        /* PROC_SOCKETS_MAX slots once the process has had one */
    uint8_t nsocks;
    struct pstr exec_file;      /* the pending execve's pathname (its enter point), for comm */
    bool own_image;             /* the image came from its own exec (or container/start), not from its parent */
    struct proc_image image;
    struct proc_exec_io *io;    /* NULL until an exec sends fd_info or pipe_proc_info */
    /* table bookkeeping */
    uint32_t self, hnext, lru_prev, lru_next, conn;
    bool live;
};

/* The parent of p when it is still in the table (the same process: its
 * start time matches when both are known), else NULL. */
struct proc *proctab_parent(struct proctab *pt, const struct proc *p);

/* Process tgid of conn_id's sandbox when it is in the table (its start time
 * start_ns when both are known), else NULL. */
struct proc *proctab_lookup(struct proctab *pt, uint64_t conn_id, int32_t tgid, int64_t start_ns);

/* The socket p holds as fd, or NULL when no event told of one. */
const struct psock *proctab_socket(const struct proc *p, int64_t fd);

/* The process of conn's sandbox whose thread group id is tgid, or NULL
 * (proc.sname: the session leader). */
struct proc *proctab_find(struct proctab *pt, const struct proc *of, int32_t tgid);

/* The most entries one bucket holds (a walk of the whole table: for tests
 * and benchmarks, not for every event). */
size_t proctab_longest_chain(const struct proctab *pt);

/* Cuts s to the kernel's comm length without splitting a UTF-8 sequence. */
size_t proc_comm_len(const char *s, size_t len);

#endif
