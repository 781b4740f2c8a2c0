/* test_container.c - container/: runsc state files, the container's passwd
 * and group, the cache and its lookup thread, the per-connection view. The
 * files are made here as runsc would write them (its layout checked against
 * a real `runsc --root DIR run` in tests/e2e/containers_e2e.sh), and as a
 * hostile party would. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "cache_int.h"
#include "container.h"
#include "internal.h"
#include "reaper.h"

static void write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        fail_msg("cannot write %s: %s", path, strerror(errno));
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static void write_text(const char *path, const char *text) { write_file(path, text, strlen(text)); }

static void mkdirs(const char *base, const char *rel)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", base, rel);
    for (char *p = path + strlen(base) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    mkdir(path, 0755);
}

struct fixture {
    char dir[64];
    char root[128];     /* the runsc root */
    char bundle[128];
    char rootfs[160];
};

static struct fixture *fixture_new(void)
{
    struct fixture *f = calloc(1, sizeof(*f));
    strcpy(f->dir, "/tmp/seccheckd-unit-XXXXXX");
    if (!reaper_mkdtemp(f->dir))
        fail_msg("mkdtemp");
    snprintf(f->root, sizeof(f->root), "%s/root", f->dir);
    snprintf(f->bundle, sizeof(f->bundle), "%s/bundle", f->dir);
    snprintf(f->rootfs, sizeof(f->rootfs), "%s/rootfs", f->bundle);
    mkdir(f->root, 0755);
    mkdirs(f->dir, "bundle/rootfs/etc");
    return f;
}

static void fixture_free(struct fixture *f)
{
    reaper_remove(f->dir);
    free(f);
}

/* A state file as runsc 2022-12 writes it (fields trimmed to those read and
 * a few around them), annotations as containerd's CRI sets them. */
static void write_state(const struct fixture *f, const char *id, const char *sandbox, const char *annotations,
                        const char *root_path)
{
    char path[512], json[8192];
    snprintf(path, sizeof(path), "%s/%s_sandbox:%s.state", f->root, id, sandbox);
    snprintf(json, sizeof(json),
             "{\"id\":\"%s\",\"spec\":{\"ociVersion\":\"1.0.2-dev\",\"process\":{\"terminal\":true,"
             "\"user\":{\"uid\":1000,\"gid\":1000},\"args\":[\"/bin/sh\"],\"env\":[\"PATH=/bin\"],\"cwd\":\"/\","
             "\"capabilities\":{\"bounding\":[\"CAP_CHOWN\",\"CAP_KILL\"]}},\"root\":{\"path\":\"%s\","
             "\"readonly\":true},\"annotations\":{%s}},\"bundleDir\":\"%s\",\"createdAt\":\"2026-12-01T19:56:01Z\","
             "\"owner\":\"\",\"status\":\"running\",\"goferPid\":27990,\"sandbox\":{\"id\":\"%s\",\"pid\":27989},"
             "\"saver\":{\"rootDir\":\"%s\",\"id\":{\"sandboxId\":\"%s\",\"containerId\":\"%s\"}}}",
             id, root_path, annotations, f->bundle, sandbox, f->root, sandbox, id);
    write_text(path, json);
}

#define CRI_ANNOTATIONS(kind, name, image)                                                                       \
    "\"io.kubernetes.cri.container-type\":\"" kind "\",\"io.kubernetes.cri.container-name\":\"" name "\","     \
    "\"io.kubernetes.cri.sandbox-name\":\"web-1\",\"io.kubernetes.cri.sandbox-namespace\":\"shop\","            \
    "\"io.kubernetes.cri.sandbox-uid\":\"8f1c-uid\",\"io.kubernetes.cri.image-name\":\"" image "\","           \
    "\"io.kubernetes.cri.sandbox-id\":\"pod1\""

static void write_etc(const struct fixture *f, const char *file, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/etc/%s", f->rootfs, file);
    write_text(path, text);
}

/* id read as the sandbox its state file names would read it (that id itself when none). */
static struct container_record *read_one(const struct fixture *f, const char *id)
{
    const char *roots[] = {f->root};
    char sandbox[CONTAINER_ID_MAX];
    if (container_sandbox_of(id, roots, 1, sandbox) != 1)
        snprintf(sandbox, sizeof(sandbox), "%s", id);
    struct container_record *r = container_read(sandbox, id, roots, 1);
    assert_non_null(r);
    return r;
}

/* A binding to sandbox (as a connection's first container binds it). */
#define SB(sb) (&(struct container_binding){.by = CONTAINER_BOUND_BY_CONTAINER, .sandbox = sb})

/* ---- image references ---- */

static void check_split(const char *image, const char *repo, const char *tag)
{
    size_t repo_len, tag_start, tag_len;
    container_image_split(image, strlen(image), &repo_len, &tag_start, &tag_len);
    char got_repo[256], got_tag[256];
    snprintf(got_repo, sizeof(got_repo), "%.*s", (int)repo_len, image);
    snprintf(got_tag, sizeof(got_tag), "%.*s", (int)tag_len, image + tag_start);
    assert_string_equal(got_repo, repo);
    assert_string_equal(got_tag, tag);
}

/* falcosecurity/plugins plugins/container/go-worker/pkg/container/engine_test.go:144 (TestParseImageRepoTag) */
static void test_image_split_as_falco(void **state)
{
    (void)state;
    check_split("registry.example.com:5000/foo/bar:latest", "registry.example.com:5000/foo/bar", "latest");
    check_split("registry.example.com:5000/foo/bar", "registry.example.com:5000/foo/bar", "");
    check_split("foo/bar:latest", "foo/bar", "latest");
    check_split("foo:latest", "foo", "latest");
    check_split("foo/bar", "foo/bar", "");
    check_split("", "", "");
    check_split("registry.example.com:5000/foo/bar@sha256:abc123", "registry.example.com:5000/foo/bar", "");
    check_split("registry.example.com:5000/foo/bar:latest@sha256:abc123", "registry.example.com:5000/foo/bar",
                "latest");
    check_split("registry.example.com:5000/org/project/image:v1.2.3", "registry.example.com:5000/org/project/image",
                "v1.2.3");
    check_split("localhost:5000/myimage:latest", "localhost:5000/myimage", "latest");
}

static void test_id_valid(void **state)
{
    (void)state;
    assert_true(container_id_valid("runsc-236711"));
    assert_true(container_id_valid("3ad7b26ded6d8e7b23da7d48fe889434573036c27ae5a74837233de441c3601e"));
    assert_true(container_id_valid("a_b+c.d-e"));
    assert_false(container_id_valid(""));
    assert_false(container_id_valid("."));
    assert_false(container_id_valid(".."));
    assert_false(container_id_valid("../etc"));
    assert_false(container_id_valid("a/b"));
    assert_false(container_id_valid("a*"));
    assert_false(container_id_valid("a\nb"));
    char longid[CONTAINER_ID_MAX + 1];
    memset(longid, 'a', CONTAINER_ID_MAX);
    longid[CONTAINER_ID_MAX] = '\0';
    assert_false(container_id_valid(longid));
}

/* ---- state files ---- */

static void test_state_file_found(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    write_state(f, "ctr1", "pod1", CRI_ANNOTATIONS("container", "nginx", "docker.io/library/nginx:1.25"), "rootfs");
    write_etc(f, "passwd", "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000:Alice:/home/alice:/bin/sh\n");
    write_etc(f, "group", "root:x:0:\nstaff:x:1000:alice\n");
    struct container_record *r = read_one(f, "ctr1");
    assert_int_equal(r->state, CONTAINER_FOUND);
    assert_string_equal(r->id, "ctr1");
    assert_string_equal(r->name, "nginx");
    assert_string_equal(r->image, "docker.io/library/nginx:1.25");
    assert_string_equal(r->image_repository, "docker.io/library/nginx");
    assert_string_equal(r->image_tag, "1.25");
    assert_string_equal(r->pod_name, "web-1");
    assert_string_equal(r->pod_namespace, "shop");
    assert_string_equal(r->pod_uid, "8f1c-uid");
    assert_string_equal(r->sandbox_id, "pod1");
    assert_false(r->is_sandbox);
    assert_false(r->privileged);
    assert_true(r->terminal);
    assert_true(r->has_user);
    assert_int_equal(r->user_uid, 1000);
    assert_int_equal(r->user_gid, 1000);
    assert_string_equal(r->rootfs, f->rootfs);   /* relative root.path joined to bundleDir */
    assert_string_equal(r->bundle, f->bundle);
    assert_non_null(strstr(r->state_file, "ctr1_sandbox:pod1.state"));
    assert_int_equal(r->created_ns, 1796154961LL * 1000000000);   /* createdAt 2026-12-01T19:56:01Z */
    assert_true(r->users_read);
    const struct container_user *u = container_user_by_uid(r, 1000);
    assert_non_null(u);
    assert_string_equal(u->name, "alice");
    assert_string_equal(u->home, "/home/alice");
    assert_string_equal(u->shell, "/bin/sh");
    assert_string_equal(container_user_by_uid(r, 0)->name, "root");
    assert_null(container_user_by_uid(r, 1001));
    assert_string_equal(container_group_by_gid(r, 1000)->name, "staff");
    assert_null(container_group_by_gid(r, 5));
    container_record_release(r);
    fixture_free(f);
}

static void test_state_file_sandbox_and_plain(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    /* the pod's pause container, absolute root path */
    char ann[1024];
    snprintf(ann, sizeof(ann), "%s", CRI_ANNOTATIONS("sandbox", "", "registry.k8s.io/pause:3.9"));
    write_state(f, "pod1", "pod1", ann, f->rootfs);
    struct container_record *r = read_one(f, "pod1");
    assert_int_equal(r->state, CONTAINER_FOUND);
    assert_true(r->is_sandbox);
    assert_string_equal(r->image_repository, "registry.k8s.io/pause");
    assert_string_equal(r->rootfs, f->rootfs);
    container_record_release(r);
    /* runsc without Kubernetes: no annotations, the sandbox id from the file name */
    write_state(f, "runsc-1234", "runsc-1234", "", "rootfs");
    r = read_one(f, "runsc-1234");
    assert_int_equal(r->state, CONTAINER_FOUND);
    assert_null(r->name);
    assert_null(r->image);
    assert_null(r->image_repository);
    assert_null(r->image_tag);
    assert_null(r->pod_name);
    assert_null(r->pod_namespace);
    assert_string_equal(r->sandbox_id, "runsc-1234");
    assert_false(r->users_read);   /* no passwd in this rootfs */
    assert_int_equal(r->nusers, 0);
    container_record_release(r);
    fixture_free(f);
}

/* createdAt as Go's time.Time marshals it (RFC 3339, nanoseconds, an offset). */
static void test_created_at(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    static const struct {
        const char *text;
        int64_t ns;
    } cases[] = {
        {"2026-12-01T19:56:01.123456789Z", 1796154961123456789LL},
        {"2026-12-01T20:56:01.5+01:00", 1796154961500000000LL},
        {"2026-12-01T19:56:01.1234567891Z", 1796154961123456789LL},   /* past ns: cut */
        {"2026-12-01 19:56:01", 0}, {"yesterday", 0}, {"1969-12-31T23:59:59Z", 0}, {"2026-12-01T19:56:01", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char path[512], json[512];
        snprintf(path, sizeof(path), "%s/t_sandbox:t.state", f->root);
        snprintf(json, sizeof(json), "{\"id\":\"t\",\"createdAt\":\"%s\",\"spec\":{}}", cases[i].text);
        write_text(path, json);
        struct container_record *r = read_one(f, "t");
        if (r->created_ns != cases[i].ns)
            fail_msg("%s: %lld, want %lld", cases[i].text, (long long)r->created_ns, (long long)cases[i].ns);
        container_record_release(r);
    }
    fixture_free(f);
}

static void test_privileged_needs_every_capability(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    char path[512], json[4096] = "{\"id\":\"p\",\"spec\":{\"process\":{\"capabilities\":{\"bounding\":[";
    static const char *const caps[] = {
        "CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "SETPCAP",
        "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER",
        "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE",
        "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP",
        "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF",
        "CHECKPOINT_RESTORE"};
    for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
        snprintf(json + strlen(json), sizeof(json) - strlen(json), "%s\"CAP_%s\"", i ? "," : "", caps[i]);
    snprintf(path, sizeof(path), "%s/p_sandbox:p.state", f->root);
    char full[4200];
    snprintf(full, sizeof(full), "%s]}}}}", json);
    write_text(path, full);
    struct container_record *r = read_one(f, "p");
    assert_int_equal(r->state, CONTAINER_FOUND);
    assert_true(r->privileged);
    container_record_release(r);
    fixture_free(f);
}

static void test_state_file_missing_is_unknown(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    write_state(f, "other", "pod1", "", "rootfs");
    struct container_record *r = read_one(f, "ctr1");
    assert_int_equal(r->state, CONTAINER_UNKNOWN);
    assert_null(r->name);
    container_record_release(r);
    /* a prefix of another id is not that container */
    r = read_one(f, "oth");
    assert_int_equal(r->state, CONTAINER_UNKNOWN);
    container_record_release(r);
    /* a root that does not exist, and none at all */
    const char *missing[] = {"/nonexistent-seccheckd-root"};
    r = container_read("ctr1", "ctr1", missing, 1);
    assert_int_equal(r->state, CONTAINER_UNKNOWN);
    container_record_release(r);
    r = container_read("ctr1", "ctr1", NULL, 0);
    assert_int_equal(r->state, CONTAINER_UNKNOWN);
    container_record_release(r);
    fixture_free(f);
}

static void expect_refused(const struct fixture *f, const char *id, const char *why_part)
{
    struct container_record *r = read_one(f, id);
    assert_int_equal(r->state, CONTAINER_REFUSED);
    assert_non_null(r->why);
    if (!strstr(r->why, why_part))
        fail_msg("why '%s' lacks '%s'", r->why, why_part);
    assert_null(r->name);
    container_record_release(r);
}

static void state_path(const struct fixture *f, const char *id, char *path, size_t len)
{
    snprintf(path, len, "%s/%s_sandbox:s1.state", f->root, id);
}

static void test_hostile_state_files(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    char path[512];

    /* huge: past 4 MiB, never read */
    state_path(f, "huge", path, sizeof(path));
    int fd = open(path, O_WRONLY | O_CREAT, 0640);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)CONTAINER_STATE_MAX_BYTES + 1), 0);
    close(fd);
    expect_refused(f, "huge", "larger than 4 MiB");

    /* deep: 100,000 nested arrays (jansson stops at its depth limit) */
    size_t depth = 100000;
    char *deep = malloc(2 * depth + 64);
    size_t n = (size_t)sprintf(deep, "{\"id\":\"deep\",\"spec\":");
    memset(deep + n, '[', depth);
    memset(deep + n + depth, ']', depth);
    strcpy(deep + n + 2 * depth, "}");
    state_path(f, "deep", path, sizeof(path));
    write_text(path, deep);
    free(deep);
    expect_refused(f, "deep", "not a JSON object");

    /* a NUL escape in a string, and a raw NUL byte */
    state_path(f, "nulesc", path, sizeof(path));
    write_text(path, "{\"id\":\"nulesc\",\"spec\":{\"annotations\":{\"io.kubernetes.cri.container-name\":\"a\\u0000b\"}}}");
    expect_refused(f, "nulesc", "not a JSON object");
    static const char raw[] = "{\"id\":\"nulraw\",\"spec\":{\"annotations\":{\"io.kubernetes.cri.container-name\":\"a\0b\"}}}";
    state_path(f, "nulraw", path, sizeof(path));
    write_file(path, raw, sizeof(raw) - 1);
    expect_refused(f, "nulraw", "not a JSON object");

    /* not JSON, a JSON array, an object without a spec, duplicate keys */
    state_path(f, "garbage", path, sizeof(path));
    write_text(path, "\x7f" "ELF not json");
    expect_refused(f, "garbage", "not a JSON object");
    state_path(f, "array", path, sizeof(path));
    write_text(path, "[1,2,3]");
    expect_refused(f, "array", "not a JSON object");
    state_path(f, "nospec", path, sizeof(path));
    write_text(path, "{\"id\":\"nospec\"}");
    expect_refused(f, "nospec", "no spec");
    state_path(f, "dup", path, sizeof(path));
    write_text(path, "{\"id\":\"dup\",\"id\":\"dup\",\"spec\":{}}");
    expect_refused(f, "dup", "not a JSON object");

    /* a file that names another container */
    state_path(f, "liar", path, sizeof(path));
    write_text(path, "{\"id\":\"victim\",\"spec\":{\"annotations\":{\"io.kubernetes.cri.container-name\":\"x\"}}}");
    expect_refused(f, "liar", "names another container");

    /* a symlink, to a good state file elsewhere: not followed */
    char target[512];
    snprintf(target, sizeof(target), "%s/elsewhere.state", f->dir);
    write_text(target, "{\"id\":\"link\",\"spec\":{}}");
    state_path(f, "link", path, sizeof(path));
    assert_int_equal(symlink(target, path), 0);
    expect_refused(f, "link", "symlink");

    /* a directory and a FIFO by that name: nothing blocks */
    state_path(f, "dir", path, sizeof(path));
    mkdir(path, 0755);
    expect_refused(f, "dir", "not a regular file");
    state_path(f, "fifo", path, sizeof(path));
    assert_int_equal(mkfifo(path, 0640), 0);
    expect_refused(f, "fifo", "not a regular file");

    /* wrong types are ignored, not trusted: a number for a name, a string uid, a huge uid */
    state_path(f, "types", path, sizeof(path));
    write_text(path, "{\"id\":\"types\",\"spec\":{\"process\":{\"user\":{\"uid\":\"0\",\"gid\":-1},\"terminal\":\"yes\"},"
                     "\"root\":{\"path\":7},\"annotations\":{\"io.kubernetes.cri.container-name\":5,"
                     "\"io.kubernetes.cri.image-name\":[\"a\"]}}}");
    struct container_record *r = read_one(f, "types");
    assert_int_equal(r->state, CONTAINER_FOUND);
    assert_null(r->name);
    assert_null(r->image);
    assert_null(r->rootfs);
    assert_false(r->has_user);
    assert_false(r->terminal);
    container_record_release(r);
    state_path(f, "bigid", path, sizeof(path));
    write_text(path, "{\"id\":\"bigid\",\"spec\":{\"process\":{\"user\":{\"uid\":4294967296,\"gid\":0}}}}");
    r = read_one(f, "bigid");
    assert_false(r->has_user);
    container_record_release(r);

    /* control characters and invalid UTF-8 escapes are kept as bytes (every output escapes them),
     * a long value is cut to CONTAINER_STRING_MAX */
    char *big = malloc(CONTAINER_STRING_MAX * 3 + 256);
    n = (size_t)sprintf(big, "{\"id\":\"ctl\",\"spec\":{\"annotations\":{\"io.kubernetes.cri.container-name\":"
                             "\"a\\u001b[31mb\\n\",\"io.kubernetes.cri.sandbox-name\":\"");
    memset(big + n, 'p', CONTAINER_STRING_MAX * 2);
    strcpy(big + n + CONTAINER_STRING_MAX * 2, "\"}}}");
    state_path(f, "ctl", path, sizeof(path));
    write_text(path, big);
    free(big);
    r = read_one(f, "ctl");
    assert_int_equal(r->state, CONTAINER_FOUND);
    assert_string_equal(r->name, "a\x1b[31mb\n");
    assert_int_equal(strlen(r->pod_name), CONTAINER_STRING_MAX);
    container_record_release(r);
    fixture_free(f);
}

/* ---- the spec's mounts ---- */

/* A state file whose spec holds spec_members (JSON members, no braces). */
static void write_spec(const struct fixture *f, const char *id, const char *spec_members)
{
    char path[512];
    state_path(f, id, path, sizeof(path));
    size_t len = strlen(spec_members) + 256;
    char *json = malloc(len);
    assert_non_null(json);
    snprintf(json, len, "{\"id\":\"%s\",\"spec\":{%s}}", id, spec_members);
    write_text(path, json);
    free(json);
}

static void expect_mount(const struct container_record *r, size_t i, const char *source, const char *dest,
                         const char *mode, bool rdwr, const char *propagation, const char *text)
{
    assert_true(i < r->nmounts);
    const struct container_mount *m = &r->mounts[i];
    assert_string_equal(m->source, source);
    assert_string_equal(m->dest, dest);
    assert_string_equal(m->mode, mode);
    assert_int_equal(m->rdwr, rdwr);
    assert_string_equal(m->propagation, propagation);
    assert_string_equal(m->text, text);
}

/* The mounts of an OCI spec as Falco's container plugin makes them from
 * one (falcosecurity/plugins plugins/container/go-worker/pkg/container/
 * containerd.go:91-111): rdwr false with an "ro" option (whatever follows:
 * gVisor release-20221219.0 runsc/boot/vfs.go:743-765), mode from
 * "mode=", propagation the mount's own option (the last), else the spec's
 * rootfsPropagation; the text container_info.h:42-46 writes. */
static void test_mounts_as_falco_makes_them(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    write_spec(f, "m1",
               "\"linux\":{\"rootfsPropagation\":\"rslave\"},\"mounts\":["
               "{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\"},"
               "{\"destination\":\"/dev\",\"type\":\"tmpfs\",\"source\":\"tmpfs\","
               "\"options\":[\"nosuid\",\"strictatime\",\"mode=755\",\"size=65536k\"]},"
               "{\"destination\":\"/host/etc\",\"type\":\"bind\",\"source\":\"/etc\",\"options\":[\"rbind\",\"ro\","
               "\"rprivate\"]},"
               "{\"destination\":\"/data\",\"type\":\"bind\",\"source\":\"/srv/data\",\"options\":[\"rbind\",\"rw\"]},"
               "{\"destination\":\"/sys\",\"type\":\"sysfs\"},"
               "{\"destination\":\"/x\",\"type\":\"bind\",\"source\":\"/x\",\"options\":[\"ro\",\"rw\",\"rslave\","
               "\"private\",\"mode=1\",\"mode=0700\"]}]");
    struct container_record *r = read_one(f, "m1");
    assert_int_equal(r->state, CONTAINER_FOUND);
    assert_int_equal(r->nmounts, 6);
    assert_int_equal(r->mounts_malformed, 0);
    expect_mount(r, 0, "proc", "/proc", "", true, "rslave", "proc:/proc::true:rslave");
    expect_mount(r, 1, "tmpfs", "/dev", "755", true, "rslave", "tmpfs:/dev:755:true:rslave");
    expect_mount(r, 2, "/etc", "/host/etc", "", false, "rprivate", "/etc:/host/etc::false:rprivate");
    expect_mount(r, 3, "/srv/data", "/data", "", true, "rslave", "/srv/data:/data::true:rslave");
    expect_mount(r, 4, "", "/sys", "", true, "rslave", ":/sys::true:rslave");
    expect_mount(r, 5, "/x", "/x", "0700", false, "private", "/x:/x:0700:false:private");
    /* extract.cpp:637-654: joined by ',' */
    assert_string_equal(r->mounts_text, "proc:/proc::true:rslave,tmpfs:/dev:755:true:rslave,"
                                        "/etc:/host/etc::false:rprivate,/srv/data:/data::true:rslave,"
                                        ":/sys::true:rslave,/x:/x:0700:false:private");
    container_record_release(r);

    /* no rootfsPropagation (or one that is no propagation): "" */
    write_spec(f, "m2", "\"linux\":{\"rootfsPropagation\":\"sideways\"},\"mounts\":[{\"destination\":\"/proc\","
                        "\"type\":\"proc\",\"source\":\"proc\"},{\"destination\":\"/s\",\"source\":\"/s\","
                        "\"options\":[\"rshared\"]}]");
    r = read_one(f, "m2");
    expect_mount(r, 0, "proc", "/proc", "", true, "", "proc:/proc::true:");
    expect_mount(r, 1, "/s", "/s", "", true, "rshared", "/s:/s::true:rshared");
    container_record_release(r);

    /* no mounts at all: none, container.mounts "" */
    write_spec(f, "m3", "\"annotations\":{}");
    r = read_one(f, "m3");
    assert_int_equal(r->nmounts, 0);
    assert_null(r->mounts);
    assert_string_equal(r->mounts_text, "");
    assert_int_equal(r->mounts_malformed, 0);
    container_record_release(r);
    fixture_free(f);
}

/* A spec's mounts are its author's: entries that are not mounts refused,
 * odd values kept as they are but counted, the joined texts unforgeable,
 * the counts and sizes bounded. */
static void test_mounts_hostile(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    /* not a list */
    write_spec(f, "h1", "\"mounts\":{\"destination\":\"/a\"}");
    struct container_record *r = read_one(f, "h1");
    assert_int_equal(r->state, CONTAINER_FOUND);
    assert_int_equal(r->nmounts, 0);
    assert_string_equal(r->mounts_text, "");
    assert_int_equal(r->mounts_malformed, 1);
    container_record_release(r);

    /* entries that are no mount; separators, a backslash, control characters, non-string options */
    write_spec(f, "h2", "\"mounts\":[5,null,{\"source\":\"/nodest\"},{\"destination\":7},{\"destination\":null},"
                        "{\"destination\":\"/b\",\"source\":[\"x\"]},"
                        "{\"destination\":\"/ok\",\"source\":\"/s:1,2\\\\x\",\"options\":[1,null,\"ro\",{\"a\":1}]},"
                        "{\"destination\":\"/ctl\\n\\u001b[2J\",\"source\":\"/c\"},"
                        "{\"destination\":\"/o\",\"options\":\"ro\"},"
                        "{\"destination\":\"/fine\",\"source\":\"/fine\",\"options\":[\"mode=a:b\"]}]");
    r = read_one(f, "h2");
    assert_int_equal(r->nmounts, 4);
    assert_int_equal(r->mounts_malformed, 6 + 3);   /* 6 refused; /ok, /ctl, /o kept but counted */
    expect_mount(r, 0, "/s:1,2\\x", "/ok", "", false, "", "/s\\x3a1\\x2c2\\x5cx:/ok::false:");
    expect_mount(r, 1, "/c", "/ctl\n\x1b[2J", "", true, "", "/c:/ctl\n\x1b[2J::true:");
    expect_mount(r, 2, "", "/o", "", true, "", ":/o::true:");   /* options not a list: ignored */
    expect_mount(r, 3, "/fine", "/fine", "a:b", true, "", "/fine:/fine:a\\x3ab:true:");
    /* one mount's path cannot make another appear in container.mounts */
    assert_string_equal(r->mounts_text, "/s\\x3a1\\x2c2\\x5cx:/ok::false:,/c:/ctl\n\x1b[2J::true:,:/o::true:,"
                                        "/fine:/fine:a\\x3ab:true:");
    container_record_release(r);

    /* a NUL escape in a mount: the whole file is refused, as any */
    write_spec(f, "h3", "\"mounts\":[{\"destination\":\"/a\\u0000/etc\",\"source\":\"/etc\"}]");
    expect_refused(f, "h3", "not a JSON object");

    /* 300 mounts: the first CONTAINER_MOUNTS_MAX kept, the rest counted */
    size_t cap = 300 * 64 + 64;
    char *many = malloc(cap);
    size_t n = (size_t)snprintf(many, cap, "\"mounts\":[");
    for (int i = 0; i < 300; i++)
        n += (size_t)snprintf(many + n, cap - n, "%s{\"destination\":\"/d%d\",\"source\":\"/s%d\"}", i ? "," : "",
                              i, i);
    snprintf(many + n, cap - n, "]");
    write_spec(f, "h4", many);
    free(many);
    r = read_one(f, "h4");
    assert_int_equal(r->nmounts, CONTAINER_MOUNTS_MAX);
    assert_int_equal(r->mounts_malformed, 300 - CONTAINER_MOUNTS_MAX);
    assert_string_equal(r->mounts[255].dest, "/d255");
    container_record_release(r);

    /* long paths: each cut at CONTAINER_STRING_MAX (counted); container.mounts stops short of
     * CONTAINER_MOUNTS_TEXT_MAX, the mounts past it not kept (counted) */
    size_t plen = 2000, count = 100;
    cap = count * (plen + 64) + 64;
    char *longs = malloc(cap);
    n = (size_t)snprintf(longs, cap, "\"mounts\":[");
    for (size_t i = 0; i < count; i++) {
        n += (size_t)snprintf(longs + n, cap - n, "%s{\"destination\":\"/d%zu\",\"source\":\"", i ? "," : "", i);
        memset(longs + n, 'a', plen);
        n += plen;
        n += (size_t)snprintf(longs + n, cap - n, "\"}");
    }
    snprintf(longs + n, cap - n, "]");
    write_spec(f, "h5", longs);
    free(longs);
    r = read_one(f, "h5");
    assert_true(r->nmounts > 10 && r->nmounts < count);
    assert_int_equal(strlen(r->mounts[0].source), CONTAINER_STRING_MAX);
    assert_true(strlen(r->mounts_text) <= CONTAINER_MOUNTS_TEXT_MAX);
    assert_true(strlen(r->mounts_text) > CONTAINER_MOUNTS_TEXT_MAX - 2 * (CONTAINER_STRING_MAX + 32));
    assert_int_equal(r->mounts_malformed, count);   /* every one cut or not kept */
    container_record_release(r);
    fixture_free(f);
}

/* Random specs' mounts (a fixed seed): whatever the entries hold, the
 * record keeps at most the limits, never a NULL value, and its joined text
 * is its mounts' texts joined by ','. */
static const char *random_json_value(unsigned *seed, char *buf, size_t len)
{
    static const char *const pieces[] = {
        "\"/etc\"", "\"/proc\"", "\"\"", "\"a:b,c\\\\d\"", "\"\\u001b[2J\\n\"", "7", "-1", "null", "true",
        "[\"ro\"]", "{}", "{\"x\":[1,2]}", "\"/var/run/docker.sock\"", "1e308", "\"\\ud83d\\ude00\"",
    };
    unsigned r = (unsigned)rand_r(seed);
    if (r % 7 == 0) {   /* a long string */
        size_t n = 1 + (size_t)rand_r(seed) % (len - 3);
        buf[0] = '"';
        memset(buf + 1, 'a' + (char)(r % 26), n);
        buf[n + 1] = '"';
        buf[n + 2] = '\0';
        return buf;
    }
    return pieces[r % (sizeof(pieces) / sizeof(pieces[0]))];
}

static void test_mounts_random_specs(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    unsigned seed = 20261202;
    static const char *const options[] = {"\"ro\"", "\"rw\"", "\"rslave\"", "\"shared\"", "\"mode=0755\"",
                                          "\"mode=\"", "\"mode=a:b\"", "5", "null", "[\"ro\"]", "\"\\u0007\""};
    size_t cap = 1 << 20;
    char *spec = malloc(cap), *value = malloc(3000);
    assert_non_null(spec);
    assert_non_null(value);
    for (int round = 0; round < 200; round++) {
        size_t n = (size_t)snprintf(spec, cap, "\"linux\":{\"rootfsPropagation\":%s},\"mounts\":[",
                                    round % 3 ? "\"rshared\"" : "[1]");
        int entries = rand_r(&seed) % 300;
        for (int i = 0; i < entries && n + 8000 < cap; i++) {
            n += (size_t)snprintf(spec + n, cap - n, "%s{\"destination\":%s", i ? "," : "",
                                  random_json_value(&seed, value, 3000));
            if (rand_r(&seed) % 2)
                n += (size_t)snprintf(spec + n, cap - n, ",\"source\":%s", random_json_value(&seed, value, 3000));
            n += (size_t)snprintf(spec + n, cap - n, ",\"options\":[");
            for (int k = rand_r(&seed) % 5; k > 0; k--)
                n += (size_t)snprintf(spec + n, cap - n, "%s%s", options[(size_t)rand_r(&seed) % 11], k > 1 ? "," : "");
            n += (size_t)snprintf(spec + n, cap - n, "]}");
        }
        snprintf(spec + n, cap - n, "]");
        write_spec(f, "rnd", spec);
        struct container_record *r = read_one(f, "rnd");
        assert_int_equal(r->state, CONTAINER_FOUND);
        assert_true(r->nmounts <= CONTAINER_MOUNTS_MAX && r->nmounts <= (size_t)entries);
        assert_true(r->nmounts + r->mounts_malformed >= (size_t)entries);
        assert_non_null(r->mounts_text);
        assert_true(strlen(r->mounts_text) <= CONTAINER_MOUNTS_TEXT_MAX);
        size_t at = 0;
        for (size_t i = 0; i < r->nmounts; i++) {
            const struct container_mount *m = &r->mounts[i];
            assert_non_null(m->source);
            assert_non_null(m->dest);
            assert_non_null(m->mode);
            assert_non_null(m->propagation);
            assert_true(strlen(m->source) <= CONTAINER_STRING_MAX && strlen(m->dest) <= CONTAINER_STRING_MAX);
            size_t len = strlen(m->text);
            assert_memory_equal(r->mounts_text + at, m->text, len);
            at += len;
            assert_int_equal(r->mounts_text[at], i + 1 < r->nmounts ? ',' : '\0');
            at++;
            /* five fields, whatever the values hold */
            size_t colons = 0;
            for (const char *c = m->text; *c; c++)
                colons += *c == ':';
            assert_int_equal(colons, 4);
            assert_null(strchr(m->text, ','));
        }
        container_record_release(r);
    }
    free(spec);
    free(value);
    fixture_free(f);
}

/* A record made again for its users keeps the mounts. */
static void test_mounts_kept_when_users_reread(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    char spec[1024];
    snprintf(spec, sizeof(spec), "\"root\":{\"path\":\"%s\"},\"mounts\":[{\"destination\":\"/host\","
             "\"source\":\"/\",\"options\":[\"ro\",\"rslave\"]},{\"destination\":7}]", f->rootfs);
    write_spec(f, "rr", spec);
    write_etc(f, "passwd", "a:x:1000:1000::/h:/s\n");
    struct container_record *r = read_one(f, "rr");
    write_etc(f, "passwd", "bee:x:1000:1000::/h:/s\n");
    struct container_record *r2 = container_reread_users(r);
    assert_non_null(r2);
    assert_string_equal(container_user_by_uid(r2, 1000)->name, "bee");
    assert_int_equal(r2->nmounts, 1);
    assert_ptr_not_equal(r2->mounts, r->mounts);
    container_record_release(r);   /* r2 owns its own copies */
    expect_mount(r2, 0, "/", "/host", "", false, "rslave", "/:/host::false:rslave");
    assert_string_equal(r2->mounts_text, "/:/host::false:rslave");
    assert_int_equal(r2->mounts_malformed, 1);
    container_record_release(r2);
    fixture_free(f);
}

/* ---- passwd and group ---- */

static struct container_record *read_with_passwd(struct fixture *f, const char *passwd)
{
    write_state(f, "u", "s1", "", "rootfs");
    if (passwd)
        write_etc(f, "passwd", passwd);
    return read_one(f, "u");
}

/* falcosecurity/libs userspace/libsinsp/user.cpp:110 (seven fields, whole
 * decimal ids) and its split_fields: a malformed line is skipped, not
 * coerced to uid 0. */
static void test_passwd_parsing(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    struct container_record *r = read_with_passwd(
        f, "root:x:0:0:root:/root:/bin/bash\r\n"
           "short:x:5:5\n"
           "badid:x:12a:5:g:/h:/s\n"
           "neg:x:-1:5:g:/h:/s\n"
           "over:x:4294967296:5:g:/h:/s\n"
           "empty:x::5:g:/h:/s\n"
           "first:x:700:7:g:/home/first:/bin/sh\n"
           "second:x:700:7:g:/home/second:/bin/sh\n"
           "colons:x:701:7:g:/h:/bin/sh:extra:fields\n"
           "esc\x1b[2J:x:702:7:g:/h:/bin/sh\n"
           "max:x:4294967295:1:g:/h:/s");   /* no final newline */
    assert_true(r->users_read);
    assert_string_equal(container_user_by_uid(r, 0)->name, "root");
    assert_string_equal(container_user_by_uid(r, 0)->shell, "/bin/bash");   /* the \r is not the shell's */
    assert_null(container_user_by_uid(r, 5));
    assert_null(container_user_by_uid(r, 12));
    assert_string_equal(container_user_by_uid(r, 700)->name, "first");
    assert_string_equal(container_user_by_uid(r, 701)->shell, "/bin/sh:extra:fields");
    assert_string_equal(container_user_by_uid(r, 702)->name, "esc\x1b[2J");
    assert_string_equal(container_user_by_uid(r, 4294967295u)->name, "max");
    assert_int_equal(r->nusers, 5);
    container_record_release(r);
    fixture_free(f);
}

static void test_passwd_hostile(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    char path[512], outside[512];

    /* a symlink out of the root resolves inside it (RESOLVE_IN_ROOT): the host's file is never read */
    snprintf(outside, sizeof(outside), "%s/host-passwd", f->dir);
    write_text(outside, "hostuser:x:1000:1000::/home/host:/bin/sh\n");
    snprintf(path, sizeof(path), "%s/etc/passwd", f->rootfs);
    assert_int_equal(symlink(outside, path), 0);
    struct container_record *r = read_with_passwd(f, NULL);
    assert_null(container_user_by_uid(r, 1000));
    assert_false(r->users_read);
    container_record_release(r);
    unlink(path);
    /* the same with ../ climbing out */
    assert_int_equal(symlink("../../../host-passwd", path), 0);
    r = read_with_passwd(f, NULL);
    assert_null(container_user_by_uid(r, 1000));
    container_record_release(r);
    unlink(path);
    /* a symlink inside the root is the container's own file */
    char inside[512];
    snprintf(inside, sizeof(inside), "%s/etc/passwd.real", f->rootfs);
    write_text(inside, "inner:x:1000:1000::/home/inner:/bin/sh\n");
    assert_int_equal(symlink("/etc/passwd.real", path), 0);
    r = read_with_passwd(f, NULL);
    assert_string_equal(container_user_by_uid(r, 1000)->name, "inner");
    container_record_release(r);
    unlink(path);

    /* a FIFO: refused at once, nothing blocks */
    assert_int_equal(mkfifo(path, 0644), 0);
    r = read_with_passwd(f, NULL);
    assert_false(r->users_read);
    container_record_release(r);
    unlink(path);
    /* a directory */
    mkdir(path, 0755);
    r = read_with_passwd(f, NULL);
    assert_false(r->users_read);
    container_record_release(r);
    rmdir(path);

    /* past 1 MiB: refused whole */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_true(write(fd, "big:x:1000:1000::/h:/s\n", 23) == 23);
    assert_int_equal(ftruncate(fd, (off_t)CONTAINER_USERS_MAX_BYTES + 1), 0);
    close(fd);
    r = read_with_passwd(f, NULL);
    assert_false(r->users_read);
    assert_null(container_user_by_uid(r, 1000));
    container_record_release(r);
    unlink(path);

    /* a NUL in a line: that line goes; fields past the limit: that line goes; more lines than kept */
    size_t biglen = (size_t)CONTAINER_USERS_MAX_ENTRIES * 24 + 4096;
    char *many = malloc(biglen);
    size_t n = 0;
    memcpy(many, "nul\0x:x:1:1::/h:/s\n", 19);
    n = 19;
    n += (size_t)sprintf(many + n, "long:x:2:2::/");
    memset(many + n, 'h', CONTAINER_USER_FIELD_MAX + 1);
    n += CONTAINER_USER_FIELD_MAX + 1;
    n += (size_t)sprintf(many + n, ":/s\n");
    for (unsigned i = 0; i < CONTAINER_USERS_MAX_ENTRIES + 5; i++)
        n += (size_t)sprintf(many + n, "u%u:x:%u:1::/h:/s\n", i, 10 + i);
    write_file(path, many, n);
    free(many);
    r = read_with_passwd(f, NULL);
    assert_true(r->users_read);
    assert_null(container_user_by_uid(r, 1));
    assert_null(container_user_by_uid(r, 2));
    assert_int_equal(r->nusers, CONTAINER_USERS_MAX_ENTRIES);
    assert_non_null(container_user_by_uid(r, 10));
    assert_null(container_user_by_uid(r, 10 + CONTAINER_USERS_MAX_ENTRIES));
    container_record_release(r);

    /* /etc itself a symlink out of the root */
    char etc[512], hostetc[400];
    snprintf(etc, sizeof(etc), "%s/etc", f->rootfs);
    snprintf(hostetc, sizeof(hostetc), "%s/hostetc", f->dir);
    mkdir(hostetc, 0755);
    snprintf(path, sizeof(path), "%s/passwd", hostetc);
    write_text(path, "hostuser:x:1000:1000::/home/host:/bin/sh\n");
    reaper_remove(etc);
    assert_int_equal(symlink(hostetc, etc), 0);
    r = read_with_passwd(f, NULL);
    assert_null(container_user_by_uid(r, 1000));
    container_record_release(r);
    fixture_free(f);
}

/* The record's users change only by a new record (container_reread_users). */
static void test_users_reread_on_change(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    struct container_record *r = read_with_passwd(f, "a:x:1000:1000::/h:/s\n");
    assert_string_equal(container_user_by_uid(r, 1000)->name, "a");
    assert_null(container_reread_users(r));   /* unchanged */
    write_etc(f, "passwd", "bee:x:1000:1000::/h:/s\n");   /* another size */
    struct container_record *r2 = container_reread_users(r);
    assert_non_null(r2);
    assert_string_equal(container_user_by_uid(r2, 1000)->name, "bee");
    assert_string_equal(container_user_by_uid(r, 1000)->name, "a");   /* the old record is as it was */
    assert_string_equal(r2->id, "u");
    assert_string_equal(r2->rootfs, r->rootfs);
    container_record_release(r);
    container_record_release(r2);
    fixture_free(f);
}

/* A connection's own container read from its bundle (its state file not
 * there yet, or gone): what runsc's state would say, runsc's normalization
 * of relative paths included (specutils ReadSpecFromFile: root.path and
 * mount sources joined to the bundle, as filepath.Join cleans them). */
static void test_bundle_reads_as_the_state_would(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    char path[600];
    snprintf(path, sizeof(path), "%s/config.json", f->bundle);
    write_text(path, "{\"ociVersion\":\"1.0.0\",\"process\":{\"user\":{\"uid\":1000,\"gid\":1000},\"terminal\":true},"
                     "\"root\":{\"path\":\"rootfs\"},\"mounts\":[{\"destination\":\"/proc\",\"source\":\"proc\"},"
                     "{\"destination\":\"/d\",\"source\":\"./a/../data\"},{\"destination\":\"/e\",\"source\":\"/etc\"}],"
                     "\"annotations\":{" CRI_ANNOTATIONS("container", "web", "reg/app:v1") "}}");
    write_etc(f, "passwd", "app:x:1000:1000::/home/app:/bin/sh\n");
    uint64_t refused = 0;
    struct container_record *r = container_read_bundle("pod1", "ctr9", f->bundle, &refused);
    assert_non_null(r);
    assert_int_equal(r->state, CONTAINER_FOUND);
    assert_string_equal(r->sandbox, "pod1");
    assert_string_equal(r->id, "ctr9");
    assert_string_equal(r->name, "web");
    assert_string_equal(r->pod_namespace, "shop");
    assert_string_equal(r->image_tag, "v1");
    assert_string_equal(r->bundle, f->bundle);
    assert_string_equal(r->rootfs, f->rootfs);
    assert_string_equal(container_user_by_uid(r, 1000)->name, "app");
    assert_true(r->terminal);
    char want[700];
    snprintf(want, sizeof(want), "%s/proc:/proc::true:,%s/data:/d::true:,/etc:/e::true:", f->bundle, f->bundle);
    assert_string_equal(r->mounts_text, want);
    snprintf(want, sizeof(want), "%s/config.json", f->bundle);
    assert_string_equal(r->state_file, want);
    container_record_release(r);
    /* no bundle, or no spec in it: unknown, never a record of something else */
    r = container_read_bundle("pod1", "ctr9", "/nonexistent-seccheckd-bundle", &refused);
    assert_int_equal(r->state, CONTAINER_UNKNOWN);
    assert_null(r->name);
    container_record_release(r);
    write_text(path, "[1,2]");
    r = container_read_bundle("pod1", "ctr9", f->bundle, &refused);
    assert_int_equal(r->state, CONTAINER_UNKNOWN);
    container_record_release(r);
    fixture_free(f);
}

/* ---- the cache ---- */

static struct container_cache *cache_for(const struct fixture *f, unsigned attempts, size_t max_records)
{
    const char *roots[] = {f->root};
    struct container_cache_config cfg = {.roots = roots, .nroots = 1, .attempts = attempts,
                                         .retry_ns = 20000000, .max_records = max_records};
    char err[128];
    struct container_cache *c = container_cache_open(&cfg, err, sizeof(err));
    if (!c)
        fail_msg("%s", err);
    return c;
}

static const struct container_record *wait_published(struct container_cache *c, const char *id, int ms)
{
    for (int i = 0; i < ms; i++) {
        const struct container_record *r = container_cache_get(c, SB("pod1"), id);
        if (r)
            return r;
        usleep(1000);
    }
    return NULL;
}

static void test_cache_looks_up_off_thread(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    write_state(f, "ctr1", "pod1", CRI_ANNOTATIONS("container", "nginx", "nginx:1"), "rootfs");
    struct container_cache *c = cache_for(f, 3, 0);
    assert_int_equal(container_cache_generation(c), 0);
    const struct container_record *r = container_cache_wait(c, SB("pod1"), "ctr1", 5000000000LL);
    assert_non_null(r);
    assert_string_equal(r->name, "nginx");
    assert_int_equal(container_cache_generation(c), 1);
    /* asked again: the same record, no new lookup */
    const struct container_record *again = container_cache_get(c, SB("pod1"), "ctr1");
    assert_ptr_equal(again, r);
    container_record_release(again);
    struct container_cache_stats st;
    container_cache_get_stats(c, &st);
    assert_int_equal(st.lookups, 1);
    assert_int_equal(st.found, 1);
    /* published once, for storage */
    const struct container_record *out[4];
    assert_int_equal(container_cache_take_published(c, out, 4), 1);
    assert_ptr_equal(out[0], r);
    container_record_release(out[0]);
    assert_int_equal(container_cache_take_published(c, out, 4), 0);
    /* ids that are not runsc's are never looked up */
    assert_null(container_cache_get(c, SB("pod1"), "../../etc"));
    container_cache_get_stats(c, &st);
    assert_int_equal(st.invalid_ids, 1);
    assert_int_equal(st.lookups, 1);
    container_cache_close(c);
    /* the record outlives the cache for its holder */
    assert_string_equal(r->name, "nginx");
    container_record_release(r);
    fixture_free(f);
}

/* No state file: looked for `attempts` times, then unknown (counted); a
 * state file that appears before that is found. */
static void test_cache_retries_then_unknown(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    struct container_cache *c = cache_for(f, 3, 0);
    int64_t t0 = (int64_t)time(NULL);
    assert_null(container_cache_get(c, SB("pod1"), "ghost"));
    assert_null(container_cache_get(c, SB("pod1"), "late"));
    usleep(5000);
    write_state(f, "late", "pod1", CRI_ANNOTATIONS("container", "late-one", "x:1"), "rootfs");
    const struct container_record *late = wait_published(c, "late", 3000);
    assert_non_null(late);
    assert_int_equal(late->state, CONTAINER_FOUND);
    assert_string_equal(late->name, "late-one");
    const struct container_record *ghost = wait_published(c, "ghost", 3000);
    assert_non_null(ghost);
    assert_int_equal(ghost->state, CONTAINER_UNKNOWN);
    assert_true((int64_t)time(NULL) - t0 < 5);   /* 20 + 40 ms of retries */
    struct container_cache_stats st;
    container_cache_get_stats(c, &st);
    assert_int_equal(st.unknown, 1);
    assert_int_equal(st.found, 1);
    assert_true(st.lookups >= 4 && st.lookups <= 6);   /* ghost 3, late 1 to 3 */
    /* given up on: asking again does not look again */
    uint64_t lookups = st.lookups;
    const struct container_record *g2 = container_cache_get(c, SB("pod1"), "ghost");
    assert_ptr_equal(g2, ghost);
    usleep(50000);
    container_cache_get_stats(c, &st);
    assert_int_equal(st.lookups, lookups);
    container_record_release(g2);
    container_record_release(ghost);
    container_record_release(late);
    container_cache_close(c);
    fixture_free(f);
}

static void test_cache_wait_times_out_and_bounds(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    struct container_cache *c = cache_for(f, 2, 4);
    /* the first lookup ends (unknown, retried later): wait returns at once with NULL */
    assert_null(container_cache_wait(c, SB("pod1"), "none", 2000000000LL));
    /* at most 4 records: the least recently asked goes */
    for (int i = 0; i < 6; i++) {
        char id[16];
        snprintf(id, sizeof(id), "c%d", i);
        write_state(f, id, "pod1", "", "rootfs");
        container_record_release(container_cache_wait(c, SB("pod1"), id, 2000000000LL));
    }
    struct container_cache_stats st;
    container_cache_get_stats(c, &st);
    assert_true(st.evicted >= 2);
    /* what is taken for storage is what the cache still holds */
    const struct container_record *out[16];
    size_t n = container_cache_take_published(c, out, 16);
    assert_true(n <= 4);
    for (size_t i = 0; i < n; i++)
        container_record_release(out[i]);
    assert_int_equal(container_cache_take_published(c, out, 16), 0);
    container_cache_close(c);
    fixture_free(f);
}

/* The passwd of a running container changes: noticed at most every 10 s
 * (CONTAINER_USERS_RECHECK_NS), not on each ask. */
static void test_cache_users_not_reread_each_ask(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    write_state(f, "u", "s1", "", "rootfs");
    write_etc(f, "passwd", "a:x:1000:1000::/h:/s\n");
    struct container_cache *c = cache_for(f, 2, 0);
    const struct container_record *r = container_cache_wait(c, SB("s1"), "u", 2000000000LL);
    assert_string_equal(container_user_by_uid(r, 1000)->name, "a");
    write_etc(f, "passwd", "bee:x:1000:1000::/h:/s\n");
    for (int i = 0; i < 20; i++) {
        const struct container_record *x = container_cache_get(c, SB("s1"), "u");
        assert_ptr_equal(x, r);
        container_record_release(x);
    }
    assert_int_equal(container_cache_generation(c), 1);
    container_record_release(r);
    container_cache_close(c);
    fixture_free(f);
}

/* A container rewriting its /etc/passwd (issue 32 item 6): each re-read
 * makes a new record, and the cache keeps none it replaced (the audit saw
 * 4,096 kept alive by the publication ring: up to 11 GiB). Memory is the
 * records in use: the cache's one, and what a holder holds. */
static void test_cache_passwd_rewrites_keep_no_old_tables(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    write_state(f, "u", "s1", "", "rootfs");
    const char *roots[] = {f->root};
    struct container_cache_config cfg = {.roots = roots, .nroots = 1, .attempts = 1, .users_recheck_ns = 1000000,
                                         .no_watch = true};
    char err[128];
    struct container_cache *c = container_cache_open(&cfg, err, sizeof(err));
    assert_non_null(c);
    uint64_t bytes0;
    uint64_t alive0 = container_records_alive(&bytes0);
    size_t size = 0;
    for (int round = 0; round < 50; round++) {
        /* a passwd of 2,000 users, one longer each round (a new size: a change) */
        size_t cap = 2000 * 64 + 64;
        char *text = malloc(cap);
        assert_non_null(text);
        size_t len = 0;
        for (int i = 0; i < 2000; i++)
            len += (size_t)snprintf(text + len, cap - len, "user%d:x:%d:%d::/home/u%d:/bin/sh\n", i, 1000 + i,
                                    1000 + i, round);
        write_etc(f, "passwd", text);
        free(text);
        uint64_t before = container_cache_generation(c);
        const struct container_record *r = NULL;
        for (int i = 0; i < 5000; i++) {   /* asked: re-read (1 ms apart), published */
            container_record_release(r);
            r = container_cache_get(c, SB("s1"), "u");
            if (r && container_cache_generation(c) > before && r->nusers == 2000 &&
                strstr(container_user_by_uid(r, 1000)->home, "/home/u") &&
                atoi(container_user_by_uid(r, 1000)->home + strlen("/home/u")) == round)
                break;
            usleep(1000);
        }
        assert_non_null(r);
        assert_int_equal(r->nusers, 2000);
        size = ((const struct record *)r)->bytes;
        container_record_release(r);
        /* storage takes what was published: once, the record as it is now */
        const struct container_record *out[8];
        size_t n = container_cache_take_published(c, out, 8);
        assert_true(n <= 1);
        for (size_t i = 0; i < n; i++)
            container_record_release(out[i]);
    }
    uint64_t bytes;
    uint64_t alive = container_records_alive(&bytes);
    /* the cache's one record (and, for a moment, one the thread is making) */
    assert_true(alive <= alive0 + 2);
    assert_true(bytes <= bytes0 + 2 * size);
    assert_true(size > 2000 * 3 * 10);   /* a real table: names, homes, shells */
    struct container_cache_stats st;
    container_cache_get_stats(c, &st);
    assert_int_equal(st.records, 1);
    assert_int_equal(st.record_bytes, size);
    container_cache_close(c);
    assert_int_equal(container_records_alive(NULL), alive0);
    fixture_free(f);
}

/* A container of a sandbox some connection is bound to is looked up when
 * runsc writes its state file (the watch), not only when it is named: one
 * given up on as unknown is found then. */
static void test_cache_watch_finds_a_new_state_file(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    struct container_cache *c = cache_for(f, 1, 0);
    container_cache_conn_restored(c, 7, "w1");   /* a connection bound to sandbox w1 */
    const struct container_record *r = container_cache_wait(c, SB("w1"), "app", 2000000000LL);
    assert_non_null(r);
    assert_int_equal(r->state, CONTAINER_UNKNOWN);   /* one attempt, given up on */
    container_record_release(r);
    write_state(f, "app", "w1", CRI_ANNOTATIONS("container", "late", "x:1"), "rootfs");
    write_state(f, "other", "w2", CRI_ANNOTATIONS("container", "not-bound", "x:1"), "rootfs");
    r = NULL;
    for (int i = 0; i < 2000 && (!r || r->state != CONTAINER_FOUND); i++) {
        container_record_release(r);
        usleep(1000);
        pthread_mutex_lock(&c->mu);   /* as the cache itself sees it: no ask, no lookup queued by asking */
        struct entry *e = cache_entry(c, 0, "w1", "app", 0);
        r = e && e->rec ? e->rec : NULL;
        if (r)
            container_record_ref(r);
        pthread_mutex_unlock(&c->mu);
    }
    assert_non_null(r);
    assert_int_equal(r->state, CONTAINER_FOUND);
    assert_string_equal(r->name, "late");
    container_record_release(r);
    /* a sandbox no connection is bound to: its files are not looked up */
    struct container_cache_stats st;
    container_cache_get_stats(c, &st);
    assert_int_equal(st.found, 1);
    container_cache_conn_closed(c, 7);
    container_cache_close(c);
    fixture_free(f);
}

/* ---- the view ---- */

static void test_view_binds_connection_to_sandbox(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    write_state(f, "podA", "podA", "\"io.kubernetes.cri.container-name\":\"a\"", "rootfs");
    write_state(f, "ctrA", "podA", "\"io.kubernetes.cri.container-name\":\"a2\"", "rootfs");
    write_state(f, "ctrB", "podB", "\"io.kubernetes.cri.container-name\":\"b\"", "rootfs");
    struct container_cache *c = cache_for(f, 2, 0);
    struct container_view *v = container_view_new(c);
    const int64_t s2 = 2000000000LL;
    /* the first container a connection names binds it (its peer, this test, is not runsc) */
    const struct container_record *r = container_view_wait(v, 1, "podA", s2);
    assert_non_null(r);
    assert_string_equal(r->name, "a");
    struct container_binding b;
    assert_true(container_view_binding(v, 1, &b));
    assert_string_equal(b.sandbox, "podA");
    assert_int_equal(b.by, CONTAINER_BOUND_BY_CONTAINER);
    assert_string_equal(container_view_wait(v, 1, "ctrA", s2)->name, "a2");   /* same sandbox */
    assert_null(container_view_wait(v, 1, "ctrB", s2));   /* another pod's container: withheld */
    assert_int_equal(container_view_foreign(v), 1);
    assert_string_equal(container_view_wait(v, 2, "ctrB", s2)->name, "b");   /* its own connection gets it */
    assert_ptr_equal(container_view_get(v, 1, "podA"), r);   /* the same record */
    container_view_conn_closed(v, 1);
    /* bound by an app container's state file: its pod's sandbox */
    assert_string_equal(container_view_wait(v, 3, "ctrA", s2)->name, "a2");
    assert_string_equal(container_view_wait(v, 3, "podA", s2)->name, "a");
    assert_null(container_view_get(v, 1, NULL));
    assert_null(container_view_get(NULL, 1, "podA"));
    container_view_free(v);
    container_cache_close(c);
    fixture_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_image_split_as_falco),
        cmocka_unit_test(test_id_valid),
        cmocka_unit_test(test_state_file_found),
        cmocka_unit_test(test_state_file_sandbox_and_plain),
        cmocka_unit_test(test_created_at),
        cmocka_unit_test(test_privileged_needs_every_capability),
        cmocka_unit_test(test_state_file_missing_is_unknown),
        cmocka_unit_test(test_hostile_state_files),
        cmocka_unit_test(test_mounts_as_falco_makes_them),
        cmocka_unit_test(test_mounts_hostile),
        cmocka_unit_test(test_mounts_random_specs),
        cmocka_unit_test(test_mounts_kept_when_users_reread),
        cmocka_unit_test(test_passwd_parsing),
        cmocka_unit_test(test_passwd_hostile),
        cmocka_unit_test(test_users_reread_on_change),
        cmocka_unit_test(test_cache_looks_up_off_thread),
        cmocka_unit_test(test_cache_retries_then_unknown),
        cmocka_unit_test(test_cache_wait_times_out_and_bounds),
        cmocka_unit_test(test_cache_users_not_reread_each_ask),
        cmocka_unit_test(test_bundle_reads_as_the_state_would),
        cmocka_unit_test(test_cache_passwd_rewrites_keep_no_old_tables),
        cmocka_unit_test(test_cache_watch_finds_a_new_state_file),
        cmocka_unit_test(test_view_binds_connection_to_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
