/* test_listener.c - the listening socket's file (server/listener.h): it gets
 * exactly the --socket-mode asked for whatever the umask, and no call goes
 * by its path after bind, so a symlink planted there in between redirects
 * nothing. bind is wrapped (-Wl,--wrap=bind) to play the attacker who wins
 * that race: right after the real bind, the socket file is replaced by a
 * symlink to a file the daemon must not touch. */
#include "unit_util.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "listener.h"

int __real_bind(int fd, const struct sockaddr *addr, socklen_t len);

static const char *plant_target;   /* set: replace the bound file with a symlink here */

int __wrap_bind(int fd, const struct sockaddr *addr, socklen_t len);
int __wrap_bind(int fd, const struct sockaddr *addr, socklen_t len)
{
    int rc = __real_bind(fd, addr, len);
    if (rc == 0 && plant_target) {
        const char *path = ((const struct sockaddr_un *)addr)->sun_path;
        if (unlink(path) != 0 || symlink(plant_target, path) != 0)
            fail_msg("could not plant the symlink at %s", path);
    }
    return rc;
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    return st.st_mode & 07777;
}

/* Each test's scratch directory: removed by the teardown, a failed
 * assertion included. */
struct scratch {
    char dir[64];
    char sock[128];
    char target[128];
};

static int scratch_setup(void **state)
{
    static struct scratch s;
    scratch_dir(s.dir);
    snprintf(s.sock, sizeof(s.sock), "%s/s.sock", s.dir);
    snprintf(s.target, sizeof(s.target), "%s/secret", s.dir);
    *state = &s;
    return 0;
}

static int scratch_teardown(void **state)
{
    struct scratch *s = *state;
    plant_target = NULL;
    scratch_dir_remove(s->dir);   /* the socket, the link and the target are plain entries */
    return 0;
}

static void test_mode_is_exact_whatever_the_umask(void **state)
{
    struct scratch *s = *state;
    mode_t was = umask(077);
    struct listener l;
    char err[256];
    int rc = listener_open(&l, s->sock, 8, 0666, err, sizeof(err));
    mode_t during = umask(was);
    assert_int_equal(during, 077);   /* listener_open put the umask back */
    assert_int_equal(rc, 0);
    assert_int_equal(mode_of(s->sock), 0666);
    listener_close(&l);
    assert_int_equal(access(s->sock, F_OK), -1);   /* removed: it was ours */
}

static void test_symlink_planted_after_bind_is_not_followed(void **state)
{
    struct scratch *s = *state;
    int fd = open(s->target, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(chmod(s->target, 0600), 0);
    plant_target = s->target;
    struct listener l;
    char err[256];
    int rc = listener_open(&l, s->sock, 8, 0666, err, sizeof(err));
    plant_target = NULL;
    if (rc == 0)
        listener_close(&l);
    assert_int_equal(mode_of(s->target), 0600);   /* the mode change did not follow the link */
    assert_int_equal(rc, -1);                     /* and the replaced socket is refused */
    assert_non_null(strstr(err, "replaced"));
    struct stat st;
    assert_int_equal(lstat(s->sock, &st), 0);
    assert_true(S_ISLNK(st.st_mode));             /* not ours: left where it was */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_mode_is_exact_whatever_the_umask, scratch_setup, scratch_teardown),
        cmocka_unit_test_setup_teardown(test_symlink_planted_after_bind_is_not_followed, scratch_setup,
                                        scratch_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
