/* peer.c - the sandbox a connection streams from, as the runsc command that
 * connected names it.
 *
 * runsc, not the sandbox, connects to the remote sink: it calls
 * seccheck.SetupSinks (gVisor pkg/sentry/seccheck/config.go) in `runsc
 * create`, `run`, `do` and `restore` (runsc/sandbox/sandbox.go, the pod init
 * config) and in `runsc trace create`, waits for the handshake's answer, and
 * hands the socket to the sandbox process it then starts. So a connection's
 * peer is a runsc command on the host, which no workload controls; the
 * sandbox process, whose memory (its command line included) a compromised
 * workload owns, is never asked.
 *
 * While it makes a container, runsc holds the container's lock file open
 * (runsc/container/container.go New: Saver.LockForNew until the state is
 * saved), `<root>/<id>_sandbox:<sandbox>.lock` (state_file.go buildPath):
 * read from the kernel's table of the peer's open files at the handshake
 * (peer_lock_path, on the loop thread: procfs only), its name gives the
 * sandbox and its directory the root runsc keeps the state in, `runsc do`'s
 * own $TMPDIR/runsc-doNNN included, with nothing to guess. Without it (a
 * `runsc trace create`, which makes no container) the command line names
 * the sandbox: `runsc [flags] create|run|restore [flags] ID`, `runsc [flags]
 * trace create [flags] SANDBOX`, the root being --root's (runsc's default:
 * /var/run/runsc, or $XDG_RUNTIME_DIR/runsc for another user).
 *
 * A root that is not one of the daemon's is used for this connection only,
 * and only when it is a directory of the peer's user that no one else may
 * write. The peer is read through /proc/PID opened while its pidfd (taken
 * at the handshake) says it lives: the directory then is that process's for
 * good, never a later one's that reused the pid.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cache_int.h"

#define PEER_ARGS_MAX (64u << 10)   /* bytes of a command line or environment read */

static bool alive(int pidfd)
{
    return pidfd >= 0 && syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0;
}

/* A whole (small) file under dirfd, NUL-terminated; *len its bytes. */
static char *slurp(int dirfd, const char *name, size_t *len)
{
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    char *buf = malloc(PEER_ARGS_MAX + 1);
    *len = 0;
    while (buf && *len < PEER_ARGS_MAX) {
        ssize_t n = read(fd, buf + *len, PEER_ARGS_MAX - *len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        *len += (size_t)n;
    }
    close(fd);
    if (buf)
        buf[*len] = '\0';
    return buf;
}

/* NUL-separated strings as an array (pointers into text); count in *n. */
static size_t split(char *text, size_t len, const char **out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < len && n < max; i += strlen(text + i) + 1)
        out[n++] = text + i;
    return n;
}

static const char *env_value(const char *const *env, size_t n, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < n; i++)
        if (strncmp(env[i], name, len) == 0 && env[i][len] == '=')
            return env[i] + len + 1;
    return NULL;
}

/* The value of --NAME (or -NAME; NAME=VALUE or NAME VALUE, as Go's flag
 * package takes it) among args[from..end), the last one given; NULL. */
static const char *flag_value(const char *const *args, size_t from, size_t end, const char *name)
{
    const char *value = NULL;
    size_t len = strlen(name);
    for (size_t i = from; i < end; i++) {
        const char *a = args[i];
        if (a[0] != '-')
            continue;
        a += a[1] == '-' ? 2 : 1;
        if (strncmp(a, name, len) == 0 && a[len] == '=')
            value = a + len + 1;
        else if (strcmp(a, name) == 0 && i + 1 < end)
            value = args[++i];
    }
    return value;
}

/* path made absolute against the peer's working directory (malloc'd);
 * "" or "." is that directory. */
static char *absolute(int procfd, const char *path)
{
    if (path[0] == '/')
        return strdup(path);
    if (!path[0] || strcmp(path, ".") == 0)
        path = "";
    char cwd[4096];
    ssize_t n = readlinkat(procfd, "cwd", cwd, sizeof(cwd) - 1);
    if (n <= 0 || cwd[0] != '/')
        return NULL;
    cwd[n] = '\0';
    char *out = NULL;
    return asprintf(&out, "%s%s%s", cwd, path[0] ? "/" : "", path) < 0 ? NULL : out;
}

/* A directory only uid may write (and uid owns). */
static bool own_directory(int dirfd, const char *name, uid_t uid, struct stat *st)
{
    return fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st->st_mode) && st->st_uid == uid &&
           (st->st_mode & 022) == 0;
}

/* Is root one of the daemon's roots (the same directory)? */
static bool configured(const char *root, const char *const *roots, size_t nroots)
{
    struct stat a, b;
    if (stat(root, &a) != 0)
        return false;
    for (size_t i = 0; i < nroots; i++)
        if (stat(roots[i], &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
            return true;
    return false;
}

/* The root a peer's state lives in: none (the daemon's roots: out->root
 * stays NULL) when it is one of them, else its own when only the peer's
 * user may write it; false when neither. */
static bool take_root(char *abs, const struct peer *p, const char *const *roots, size_t nroots,
                      struct peer_answer *out)
{
    struct stat st;
    if (!abs)
        return false;
    if (configured(abs, roots, nroots)) {
        free(abs);
        return true;
    }
    if (!own_directory(AT_FDCWD, abs, p->uid, &st)) {
        free(abs);
        return false;
    }
    out->root = abs;   /* this connection's own */
    return true;
}

/* create, run, restore, trace (create), without a lock file: the sandbox is
 * the last argument; the root is --root's, else runsc's default. */
static enum peer_outcome named_sandbox(int procfd, const char *const *args, size_t nargs, size_t sub,
                                       const char *const *env, size_t nenv, const struct peer *p,
                                       const char *const *roots, size_t nroots, struct peer_answer *out)
{
    const char *last = args[nargs - 1];
    out->why = "its command line ends in no container id";
    if (nargs <= sub + 1 || last[0] == '-' || !container_id_valid(last))
        return PEER_NONE;
    const char *root = flag_value(args, 1, sub, "root");
    char *fallback = NULL;
    if (!root) {
        const char *xdg = env_value(env, nenv, "XDG_RUNTIME_DIR");
        if (p->uid != 0 && xdg && xdg[0] == '/' && asprintf(&fallback, "%s/runsc", xdg) < 0)
            fallback = NULL;
        root = fallback ? fallback : "/var/run/runsc";
    }
    bool rooted = take_root(absolute(procfd, root), p, roots, nroots, out);
    free(fallback);
    out->why = "its --root is not the daemon's nor a directory only its user may write";
    if (!rooted)
        return PEER_NONE;
    snprintf(out->sandbox, sizeof(out->sandbox), "%s", last);
    return PEER_BOUND;
}

int peer_lock_path(int64_t pid, int pidfd, char *out, size_t len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%lld/fd", (long long)pid);
    int fd = pid > 0 ? open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    DIR *d = fd >= 0 && alive(pidfd) ? fdopendir(fd) : NULL;   /* alive after the open: the peer's own table */
    if (!d) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    int found = 0;
    struct dirent *e;
    for (unsigned n = 0; !found && n < PEER_FDS_MAX && (e = readdir(d)); n++) {
        if (e->d_name[0] == '.')
            continue;
        ssize_t got = readlinkat(fd, e->d_name, out, len - 1);
        if (got <= 0 || (size_t)got >= len - 1 || out[0] != '/')
            continue;
        out[got] = '\0';
        const char *base = strrchr(out, '/') + 1;
        size_t blen = strlen(base);
        found = blen > 5 && strcmp(base + blen - 5, ".lock") == 0 && strstr(base, "_sandbox:") != NULL;
    }
    closedir(d);
    return found;
}

/* `<root>/<id>_sandbox:<sandbox>.lock`: the sandbox and the root. */
static enum peer_outcome locked_sandbox(const char *lock, const struct peer *p, const char *const *roots,
                                        size_t nroots, struct peer_answer *out)
{
    const char *base = strrchr(lock, '/') + 1;
    const char *infix = strstr(base, "_sandbox:");
    size_t sblen = strlen(infix + 9) - 5;
    out->why = "its lock file names no valid sandbox id";
    if (sblen == 0 || sblen >= sizeof(out->sandbox))
        return PEER_NONE;
    memcpy(out->sandbox, infix + 9, sblen);
    out->sandbox[sblen] = '\0';
    char *dir = strndup(lock, (size_t)(base - 1 - lock));
    if (!container_id_valid(out->sandbox) || !dir || !dir[0])
        return free(dir), PEER_NONE;
    out->why = "its state's directory is not the daemon's nor one only its user may write";
    return take_root(dir, p, roots, nroots, out) ? PEER_BOUND : PEER_NONE;
}

/* --bundle's value among the subcommand's flags, else the peer's working
 * directory (runsc's default), absolute (malloc'd). */
static char *bundle_of(int procfd, const char *const *args, size_t nargs, size_t sub)
{
    const char *bundle = flag_value(args, sub + 1, nargs, "bundle");
    return absolute(procfd, bundle ? bundle : "");
}

enum peer_outcome peer_sandbox(const struct peer *p, const char *lock, const char *const *roots, size_t nroots,
                               struct peer_answer *out)
{
    memset(out, 0, sizeof(*out));
    bool locked = lock && lock[0] && locked_sandbox(lock, p, roots, nroots, out) == PEER_BOUND;
    if (!locked) {
        memset(out->sandbox, 0, sizeof(out->sandbox));
        out->why = "no pidfd of it (another pid namespace, or a kernel before 5.3)";
    }
    if (p->pidfd < 0 || p->pid <= 0)
        return locked ? PEER_BOUND : PEER_NONE;
    /* Its command line: the bundle (and the sandbox, when no lock file named it). */
    char path[64];
    snprintf(path, sizeof(path), "/proc/%lld", (long long)p->pid);
    int procfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (procfd < 0 || !alive(p->pidfd)) {   /* alive after the open: the directory is the peer's */
        if (procfd >= 0)
            close(procfd);
        if (!locked)
            out->why = "it exited";
        return locked ? PEER_BOUND : PEER_NONE;
    }
    if (!locked)
        out->why = "not a runsc create, run, restore or trace command (runsc do: its lock file was not open)";
    size_t alen = 0, elen = 0;
    char *argtext = slurp(procfd, "cmdline", &alen), *envtext = slurp(procfd, "environ", &elen);
    const char *args[512], *env[512];
    size_t nargs = argtext ? split(argtext, alen, args, 512) : 0;
    size_t nenv = envtext ? split(envtext, elen, env, 512) : 0;
    enum peer_outcome result = locked ? PEER_BOUND : PEER_NONE;
    const char *base = nargs ? strrchr(args[0], '/') : NULL;
    base = base ? base + 1 : nargs ? args[0] : "";
    for (size_t sub = 1; strstr(base, "runsc") && sub < nargs; sub++) {
        const char *a = args[sub];
        if (strcmp(a, "do") == 0) {   /* a random id; its spec in the directory its lock file is in */
            if (locked)
                out->bundle = strndup(lock, (size_t)(strrchr(lock, '/') - lock));
            break;
        }
        bool makes = strcmp(a, "create") == 0 || strcmp(a, "run") == 0 || strcmp(a, "restore") == 0;
        if (makes || strcmp(a, "trace") == 0) {
            if (!locked)
                result = named_sandbox(procfd, args, nargs, sub, env, nenv, p, roots, nroots, out);
            if (makes && result == PEER_BOUND)
                out->bundle = bundle_of(procfd, args, nargs, sub);
            break;
        }
    }
    free(argtext);
    free(envtext);
    close(procfd);
    if (!alive(p->pidfd)) {   /* gone meanwhile: what was read may not be its */
        free(out->bundle);
        out->bundle = NULL;
        if (!locked) {
            result = PEER_NONE;
            out->why = "it exited";
        }
    }
    if (result != PEER_BOUND) {
        free(out->root);
        out->root = NULL;
        out->sandbox[0] = '\0';
    }
    return result;
}
