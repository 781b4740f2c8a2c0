/* runsc_fields.h - runsc's words for what a trace point sends: its
 * optional fields, its context fields, and the gVisor releases that added
 * them, as a pod-init config and `runsc trace metadata` name them.
 *
 * Shared by the two layers of detection: filter/'s field table says what
 * each field needs in these words (a field reads a context field, an
 * optional one, or only comes with a newer release), and rules/ turns a
 * rule's fields into the points and fields runsc must send (rules_needs,
 * rules.h). Constants only: no code, no other include.
 */
#ifndef SECCHECKD_FILTER_RUNSC_FIELDS_H
#define SECCHECKD_FILTER_RUNSC_FIELDS_H

/* runsc's optional fields, as bits. The last four came with gVisor's 2026
 * releases (sentry/execve; binary_info itself sends more there since
 * release-20260714.0). */
enum {
    RULES_OPT_FD_PATH = 1u << 0,
    RULES_OPT_ENVV = 1u << 1,
    RULES_OPT_ENV = 1u << 2,
    RULES_OPT_BINARY_INFO = 1u << 3,
    RULES_OPT_BINARY_SHA256 = 1u << 4,   /* part of binary_info before release-20260727.0 */
    RULES_OPT_BINARY_SHA1 = 1u << 5,
    RULES_OPT_FD_INFO = 1u << 6,         /* the standard streams */
    RULES_OPT_PIPE_PROC_INFO = 1u << 7,  /* the processes at the other end of stdin and stdout pipes */
};
#define RULES_OPT_COUNT 8
#define RULES_OPT_2022 (RULES_OPT_FD_PATH | RULES_OPT_ENVV | RULES_OPT_ENV | RULES_OPT_BINARY_INFO)

/* runsc's context fields, as bits, in `runsc trace metadata` order (the
 * last two since release-20260525.0 and release-20260721.0). */
enum {
    RULES_CTX_TIME = 1u << 0,
    RULES_CTX_THREAD_ID = 1u << 1,
    RULES_CTX_TASK_START_TIME = 1u << 2,
    RULES_CTX_GROUP_ID = 1u << 3,
    RULES_CTX_THREAD_GROUP_START_TIME = 1u << 4,
    RULES_CTX_CONTAINER_ID = 1u << 5,
    RULES_CTX_CREDENTIALS = 1u << 6,
    RULES_CTX_CWD = 1u << 7,
    RULES_CTX_PROCESS_NAME = 1u << 8,
    RULES_CTX_PARENT_THREAD_GROUP_ID = 1u << 9,
    RULES_CTX_IS_EXEC_SESSION = 1u << 10,
};
#define RULES_CTX_COUNT 11
#define RULES_CTX_ALL ((1u << RULES_CTX_COUNT) - 1)
/* What runsc 2022-12 has: every context field but the 2026 ones. */
#define RULES_CTX_2022 ((1u << 9) - 1)
/* Asked for where a runsc has it, never missed where it has not: the
 * process table knows the parent without it. */
#define RULES_CTX_BEST_EFFORT RULES_CTX_PARENT_THREAD_GROUP_ID

/* gVisor releases that added what rules read, oldest first: a rule needs
 * the newest of those its fields come from (rules/README.md lists which
 * field came with which). */
enum rules_runsc_release {
    RULES_RUNSC_2022_12 = 0,     /* 0.0~20221219 (Debian 12): the baseline */
    RULES_RUNSC_20260525,        /* context parent_thread_group_id */
    RULES_RUNSC_20260714,        /* sentry/mmap; exec: binary on the upper layer, its inode */
    RULES_RUNSC_20260721,        /* context is_exec_session; syscall/mmap; exec: fd_info, ctime, lower layer */
    RULES_RUNSC_20260727,        /* syscall/listen, syscall/ptrace; exec: memfd, size, execfn, hashes; mmap layers */
    RULES_RUNSC_20260817,        /* exec: pipe_proc_info */
    RULES_RUNSC_RELEASE_COUNT
};

#endif
