/* attack.c - what an intruder does inside a sandbox, for the default rules'
 * end-to-end test (tests/e2e/default_rules_e2e.sh builds it static and runs
 * it in runsc): the system calls a container's userland has no tool for.
 * Each step is named on the command line and prints one line with its
 * result; a refused call is fine (gVisor refuses bpf and modules), the
 * sandbox reports the attempt either way.
 *
 * Usage: attack STEP...
 *   shell      fork, then exec /bin/sh -c true (a shell under a non-shell)
 *   unshare    unshare(CLONE_NEWUTS)
 *   setns      setns() on /proc/self/ns/uts
 *   mount      mount a tmpfs on /tmp/attack-mnt
 *   ptrace     PTRACE_ATTACH to a child
 *   bpf        bpf(BPF_PROG_LOAD) with no program
 *   module     init_module and finit_module with nothing to load
 *   setuid     drop to uid 1000 keeping 0 as the saved uid, then setuid(0)
 *   revshell   connect to a listener on 127.0.0.1, dup2/dup3 the socket onto
 *              0, 1 and 2 in a child (a reverse shell's plumbing)
 * and for the untrusted-code rules (sequences_e2e.sh):
 *   revshell-sh  the whole reverse shell: connect to a listener on 127.0.0.1,
 *              dup2 the socket onto 0, 1 and 2, exec /bin/sh -c true
 *   dup-file   dup2 a file onto 0, 1 and 2, exec /bin/sh -c true (its twin)
 *   listen     listen on 127.0.0.1
 *   vmwrite    process_vm_writev into a child
 *   peek       PTRACE_PEEKDATA on a child it does not trace (ptrace, not an
 *              attach: the default rules' attach rule does not take it)
 *   escape     perf_event_open, keyctl, add_key, request_key, kexec_load,
 *              kexec_file_load, open_by_handle_at, name_to_handle_at,
 *              userfaultfd, io_uring_setup (refused or not)
 *   forks N    N children, each exiting at once, as fast as it can
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int report(const char *step, long rc)
{
    printf("%s: %s\n", step, rc < 0 ? strerror(errno) : "ok");
    fflush(stdout);
    return rc < 0 ? 1 : 0;
}

static int run_shell(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", "true", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (pid > 0)
        waitpid(pid, &status, 0);
    return report("shell", pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) ? -1 : 0);
}

static int run_setns(void)
{
    int fd = open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);
    long rc = syscall(SYS_setns, fd, CLONE_NEWUTS);
    if (fd >= 0)
        close(fd);
    return report("setns", rc);
}

static int run_mount(void)
{
    mkdir("/tmp/attack-mnt", 0700);
    return report("mount", mount("none", "/tmp/attack-mnt", "tmpfs", 0, ""));
}

/* A child that waits to be killed: the target of the ptrace steps. */
static pid_t waiting_child(void)
{
    pid_t child = fork();
    if (child == 0) {
        pause();
        _exit(0);
    }
    return child;
}

/* Reports step's result rc (errno its error), the child killed and reaped first. */
static int report_after_child(const char *step, long rc, pid_t child)
{
    int saved = errno;
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    errno = saved;
    return report(step, rc);
}

static int run_peek(void)
{
    pid_t child = waiting_child();
    if (child < 0)
        return report("peek", -1);
    errno = 0;
    long word = ptrace(PTRACE_PEEKDATA, child, (void *)&run_peek, NULL);
    return report_after_child("peek", word == -1 && errno ? -1 : 0, child);
}

static int run_ptrace(void)
{
    pid_t child = waiting_child();
    if (child < 0)
        return report("ptrace", -1);
    return report_after_child("ptrace", ptrace(PTRACE_ATTACH, child, NULL, NULL), child);
}

static int run_module(void)
{
    static char image[16];
    long a = syscall(SYS_init_module, image, sizeof(image), "");
    report("init_module", a);
    long b = syscall(SYS_finit_module, -1, "", 0);
    return report("finit_module", b);
}

static int run_setuid(void)
{
    if (setresuid(1000, 1000, 0) != 0)
        return report("setuid", -1);
    return report("setuid", setuid(0));
}

/* A connected pair over 127.0.0.1: the listener's side plays the attacker. */
static int run_revshell(void)
{
    int lst = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    if (lst < 0 || bind(lst, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(lst, 1) != 0 ||
        getsockname(lst, (struct sockaddr *)&a, &alen) != 0)
        return report("revshell", -1);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)) != 0)
        return report("revshell", -1);
    int peer = accept(lst, NULL, NULL);
    pid_t pid = fork();
    if (pid == 0) {
        /* stdin, stdout and stderr to the socket: what `sh -i` would inherit */
        if (dup2(s, 0) < 0 || dup2(s, 1) < 0 || dup3(s, 2, 0) < 0)
            _exit(1);
        _exit(0);
    }
    int status = 0;
    if (pid > 0)
        waitpid(pid, &status, 0);
    close(peer);
    close(s);
    close(lst);
    return report("revshell", pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) ? -1 : 0);
}

/* A listener on 127.0.0.1 and a socket connected to it; 0, or -1. */
static int loopback_pair(int *lst, int *s)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    *lst = socket(AF_INET, SOCK_STREAM, 0);
    if (*lst < 0 || bind(*lst, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(*lst, 1) != 0 ||
        getsockname(*lst, (struct sockaddr *)&a, &alen) != 0)
        return -1;
    *s = socket(AF_INET, SOCK_STREAM, 0);
    return *s >= 0 && connect(*s, (struct sockaddr *)&a, sizeof(a)) == 0 ? 0 : -1;
}

/* fd onto 0, 1 and 2 in a child that then runs sh: the shell's streams are fd. */
static int shell_on(const char *step, int fd)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (dup2(fd, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(1);
        execl("/bin/sh", "sh", "-c", "true", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (pid > 0)
        waitpid(pid, &status, 0);
    return report(step, pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) ? -1 : 0);
}

static int run_revshell_sh(void)
{
    int lst, s;
    if (loopback_pair(&lst, &s) != 0)
        return report("revshell-sh", -1);
    int peer = accept(lst, NULL, NULL);
    int rc = shell_on("revshell-sh", s);
    close(peer);
    close(s);
    close(lst);
    return rc;
}

static int run_dup_file(void)
{
    int fd = open("/dev/null", O_RDWR);
    int rc = shell_on("dup-file", fd);
    close(fd);
    return rc;
}

static int run_listen(void)
{
    int lst, s;
    int rc = loopback_pair(&lst, &s);
    close(s);
    close(lst);
    return report("listen", rc);
}

static int run_vmwrite(void)
{
    static char target[16] = "before";
    pid_t child = fork();
    if (child == 0) {
        sleep(2);
        _exit(0);
    }
    char data[] = "after";
    struct iovec local = {data, sizeof(data)}, remote = {target, sizeof(data)};
    return report_after_child("vmwrite", syscall(SYS_process_vm_writev, child, &local, 1, &remote, 1, 0), child);
}

static int run_escape(void)
{
    static const struct {
        const char *name;
        long nr;
    } calls[] = {{"perf_event_open", SYS_perf_event_open}, {"keyctl", SYS_keyctl},
                 {"add_key", SYS_add_key},                 {"request_key", SYS_request_key},
                 {"kexec_load", SYS_kexec_load},           {"kexec_file_load", SYS_kexec_file_load},
                 {"open_by_handle_at", SYS_open_by_handle_at}, {"name_to_handle_at", SYS_name_to_handle_at},
                 {"userfaultfd", SYS_userfaultfd},         {"io_uring_setup", 425}};
    for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
        report(calls[i].name, syscall(calls[i].nr, 0, 0, 0, 0, 0, 0));
    return 0;
}

static int run_forks(const char *count)
{
    long n = atol(count), made = 0;
    for (long i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(0);
        made += pid > 0;
    }
    while (wait(NULL) > 0)
        ;
    return report("forks", made == n ? 0 : -1);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: attack STEP... (see attack.c)\n");
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "shell") == 0)
            run_shell();
        else if (strcmp(s, "unshare") == 0)
            report(s, unshare(CLONE_NEWUTS));
        else if (strcmp(s, "setns") == 0)
            run_setns();
        else if (strcmp(s, "mount") == 0)
            run_mount();
        else if (strcmp(s, "ptrace") == 0)
            run_ptrace();
        else if (strcmp(s, "bpf") == 0)
            report(s, syscall(SYS_bpf, 5 /* BPF_PROG_LOAD */, NULL, 0));
        else if (strcmp(s, "module") == 0)
            run_module();
        else if (strcmp(s, "setuid") == 0)
            run_setuid();
        else if (strcmp(s, "revshell") == 0)
            run_revshell();
        else if (strcmp(s, "revshell-sh") == 0)
            run_revshell_sh();
        else if (strcmp(s, "dup-file") == 0)
            run_dup_file();
        else if (strcmp(s, "listen") == 0)
            run_listen();
        else if (strcmp(s, "vmwrite") == 0)
            run_vmwrite();
        else if (strcmp(s, "peek") == 0)
            run_peek();
        else if (strcmp(s, "escape") == 0)
            run_escape();
        else if (strcmp(s, "forks") == 0 && i + 1 < argc)
            run_forks(argv[++i]);
        else {
            fprintf(stderr, "attack: unknown step '%s'\n", s);
            return 2;
        }
    }
    return 0;
}
