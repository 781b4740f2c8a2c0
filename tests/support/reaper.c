#include "reaper.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REAPER_MAX_CHILDREN 64
#define REAPER_MAX_PATHS 64
#define REAPER_PATH_MAX 256
/* Every scratch path a test makes is named so; nothing else is ever removed. */
#define SCRATCH_PREFIX "/tmp/seccheckd-"

/* In a MAP_SHARED mapping: the janitor, a forked copy, reads it after this
 * process has died. Slots are 0 / "" when free. */
struct registry {
    pid_t children[REAPER_MAX_CHILDREN];
    char paths[REAPER_MAX_PATHS][REAPER_PATH_MAX];
};

static struct registry *reg;
static pid_t owner;   /* the test process: forked children must not clean up for it */

static void die(const char *what)
{
    fprintf(stderr, "reaper: %s: %s\n", what, strerror(errno));
    abort();
}

static void sleep_10ms(void)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 10 * 1000000};
    nanosleep(&ts, NULL);
}

/* True when pid no longer runs: gone, or a zombie (nobody we can make reap it). */
static bool process_gone(pid_t pid)
{
    char path[64], stat[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return true;
    ssize_t n = read(fd, stat, sizeof(stat) - 1);
    close(fd);
    if (n <= 0)
        return true;
    stat[n] = '\0';
    const char *paren = strrchr(stat, ')');   /* the command name may hold spaces */
    return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

static void kill_group(pid_t pid)
{
    kill(-pid, SIGKILL);   /* the child leads its group: what it forked goes too */
    kill(pid, SIGKILL);    /* in case it left the group */
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    if (remove(path) != 0 && errno != ENOENT)
        fprintf(stderr, "reaper: cannot remove %s: %s\n", path, strerror(errno));
    return 0;
}

static int remove_tree(const char *path)
{
    if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
        return -1;
    return access(path, F_OK) == 0 ? -1 : 0;
}

/* The janitor: blocks until the test process is gone (the pipe's only
 * writer closes it by dying), then undoes whatever it left registered. */
static _Noreturn void janitor(int wait_fd)
{
    signal(SIGINT, SIG_IGN);   /* a Ctrl-C meant for the test must not stop its cleanup */
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);   /* never hold the test runner's stdout open */
    }
    dup2(wait_fd, 3);
    close_range(4, ~0U, 0);   /* nothing else of the test's: stderr only, for the report */
    for (;;) {
        char byte;
        ssize_t n = read(3, &byte, 1);
        if (n == 0 || (n < 0 && errno != EINTR))
            break;
    }
    int left = 0;
    for (int i = 0; i < REAPER_MAX_CHILDREN; i++)
        if (reg->children[i] > 0) {
            kill_group(reg->children[i]);
            left++;
        }
    /* Up to 5 s in all for them to die, so nothing writes into what we remove. */
    for (int i = 0, waited = 0; i < REAPER_MAX_CHILDREN && waited < 5000; i++)
        for (; reg->children[i] > 0 && !process_gone(reg->children[i]) && waited < 5000; waited += 10)
            sleep_10ms();
    for (int i = 0; i < REAPER_MAX_PATHS; i++)
        if (reg->paths[i][0]) {
            remove_tree(reg->paths[i]);
            left++;
        }
    if (left > 0)
        fprintf(stderr, "reaper: test process %d died: killed its children and removed its scratch paths (%d)\n",
                (int)owner, left);
    _exit(0);
}

static void at_exit_clear(void)
{
    if (getpid() == owner)   /* not in a forked child that calls exit() */
        reaper_clear();
}

/* Once per test process, from its first registration. */
static void reaper_init(void)
{
    if (reg && owner == getpid())
        return;
    reg = mmap(NULL, sizeof(*reg), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (reg == MAP_FAILED)
        die("mmap");
    owner = getpid();
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        die("pipe2");
    pid_t pid = fork();
    if (pid < 0)
        die("fork (janitor)");
    if (pid == 0) {
        close(fds[1]);
        janitor(fds[0]);
    }
    close(fds[0]);
    /* fds[1] stays open, unused, until this process ends: then the janitor wakes. */
    atexit(at_exit_clear);
}

static void track_child(pid_t pid)
{
    for (int i = 0; i < REAPER_MAX_CHILDREN; i++)
        if (reg->children[i] == 0) {
            reg->children[i] = pid;
            return;
        }
    kill_group(pid);
    fprintf(stderr, "reaper: more than %d children running at once: killed %d\n", REAPER_MAX_CHILDREN, (int)pid);
    abort();
}

static void forget_child(pid_t pid)
{
    for (int i = 0; reg && i < REAPER_MAX_CHILDREN; i++)
        if (reg->children[i] == pid)
            reg->children[i] = 0;
}

pid_t reaper_fork(void)
{
    reaper_init();
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)   /* the parent died before prctl took effect */
            _exit(127);
        return 0;
    }
    if (pid < 0)
        return -1;
    setpgid(pid, pid);   /* also here: a kill of the group right after fork must reach it */
    track_child(pid);
    return pid;
}

/* A waitpid status as one number: the exit code, or 128 + the signal. */
static int exit_code(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int reaper_wait(pid_t pid)
{
    int status = 0;
    pid_t got;
    while ((got = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
        ;
    forget_child(pid);
    return got == pid ? exit_code(status) : 127;
}

int reaper_poll(pid_t pid)
{
    int status = 0;
    pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == 0)
        return -1;
    forget_child(pid);
    return got == pid ? exit_code(status) : 127;
}

int reaper_wait_within(pid_t pid, int timeout_ms)
{
    for (int waited = 0; waited < timeout_ms; waited += 10) {
        int code = reaper_poll(pid);
        if (code >= 0)
            return code;
        sleep_10ms();
    }
    kill_group(pid);
    reaper_wait(pid);
    return 124;
}

void reaper_track_path(const char *path)
{
    if (strncmp(path, SCRATCH_PREFIX, strlen(SCRATCH_PREFIX)) != 0 || strstr(path, "/..") ||
        strlen(path) >= REAPER_PATH_MAX) {
        fprintf(stderr, "reaper: refusing to track %s: scratch paths are " SCRATCH_PREFIX "*, under %d bytes\n", path,
                REAPER_PATH_MAX);
        abort();
    }
    reaper_init();
    for (int i = 0; i < REAPER_MAX_PATHS; i++)
        if (reg->paths[i][0] == '\0') {
            memcpy(reg->paths[i], path, strlen(path) + 1);
            return;
        }
    fprintf(stderr, "reaper: more than %d scratch paths at once\n", REAPER_MAX_PATHS);
    abort();
}

char *reaper_mkdtemp(char *template)
{
    if (!mkdtemp(template))
        return NULL;
    reaper_track_path(template);
    return template;
}

int reaper_remove(const char *path)
{
    for (int i = 0; reg && i < REAPER_MAX_PATHS; i++)
        if (strcmp(reg->paths[i], path) == 0)
            reg->paths[i][0] = '\0';
    return remove_tree(path);
}

int reaper_clear(void)
{
    if (!reg)
        return 0;
    int left = 0;
    for (int i = 0; i < REAPER_MAX_CHILDREN; i++) {
        pid_t pid = reg->children[i];
        if (pid > 0) {
            fprintf(stderr, "reaper: killing child %d the test left running\n", (int)pid);
            kill_group(pid);
            reaper_wait(pid);
            left++;
        }
    }
    for (int i = 0; i < REAPER_MAX_PATHS; i++)
        if (reg->paths[i][0]) {
            char path[REAPER_PATH_MAX];
            memcpy(path, reg->paths[i], sizeof(path));
            if (access(path, F_OK) != 0) {   /* the test removed it another way */
                reg->paths[i][0] = '\0';
                continue;
            }
            fprintf(stderr, "reaper: removing %s the test left behind\n", path);
            if (reaper_remove(path) != 0)
                fprintf(stderr, "reaper: could not remove %s: %s\n", path, strerror(errno));
            left++;
        }
    return left;
}

int reaper_teardown(void **state)
{
    (void)state;
    reaper_clear();
    return 0;
}

int reaper_run_group_tests(const char *group_name, const struct CMUnitTest *tests, size_t count,
                           CMFixtureFunction group_setup, CMFixtureFunction group_teardown)
{
    reaper_init();   /* the janitor is forked now, before any test thread exists */
    struct CMUnitTest *guarded = calloc(count, sizeof(*guarded));
    if (!guarded)
        die("calloc");
    for (size_t i = 0; i < count; i++) {
        guarded[i] = tests[i];
        if (!guarded[i].teardown_func)
            guarded[i].teardown_func = reaper_teardown;
    }
    int failed = _cmocka_run_group_tests(group_name, guarded, count, group_setup, group_teardown);
    free(guarded);
    reaper_clear();   /* what a group setup or teardown left */
    return failed;
}
